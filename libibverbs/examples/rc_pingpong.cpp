// ibv_rc_pingpong: bounce a message back and forth over a reliable
// connected (RC) queue pair between a server and a client, then report the
// throughput and latency.
//
// Options, messages, exit statuses and the TCP handshake are those of
// ibverbs-utils 44 (see pingpong_common.h). Beyond the common options this
// one can register the buffer on demand (-o, -O implicit, -P prefetch), put
// it in device memory (-j), read completion timestamps (-t) and post with
// the ibv_wr_* API (-N). Only the public <infiniband/verbs.h> API is used.

#include "pingpong_common.h"

#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <memory>

namespace {

using namespace pingpong;

constexpr const char* kUsageLines[] = {
    "  -p, --port=<port>      listen on/connect to port <port> (default 18515)",
    "  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)",
    "  -i, --ib-port=<port>   use port <port> of IB device (default 1)",
    "  -s, --size=<size>      size of message to exchange (default 4096)",
    "  -m, --mtu=<size>       path MTU (default 1024)",
    "  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)",
    "  -n, --iters=<iters>    number of exchanges (default 1000)",
    "  -l, --sl=<sl>          service level value",
    "  -e, --events           sleep on CQ events (default poll)",
    "  -g, --gid-idx=<gid index> local port gid index",
    "  -o, --odp\t\t    use on demand paging",
    "  -O, --iodp\t\t    use implicit on demand paging",
    "  -P, --prefetch\t    prefetch an ODP MR",
    "  -t, --ts\t            get CQE with timestamp",
    "  -c, --chk\t            validate received buffer",
    "  -j, --dm\t            use device memory",
    "  -N, --new_send            use new post send WR API",
};

constexpr option kLongOptions[] = {
    {"port", required_argument, nullptr, 'p'},    {"ib-dev", required_argument, nullptr, 'd'},
    {"ib-port", required_argument, nullptr, 'i'}, {"size", required_argument, nullptr, 's'},
    {"mtu", required_argument, nullptr, 'm'},     {"rx-depth", required_argument, nullptr, 'r'},
    {"iters", required_argument, nullptr, 'n'},   {"sl", required_argument, nullptr, 'l'},
    {"events", no_argument, nullptr, 'e'},        {"gid-idx", required_argument, nullptr, 'g'},
    {"odp", no_argument, nullptr, 'o'},           {"iodp", no_argument, nullptr, 'O'},
    {"prefetch", no_argument, nullptr, 'P'},      {"ts", no_argument, nullptr, 't'},
    {"chk", no_argument, nullptr, 'c'},           {"dm", no_argument, nullptr, 'j'},
    {"new_send", no_argument, nullptr, 'N'},      {nullptr, 0, nullptr, 0},
};

struct RcFlags {
    bool use_odp = false;
    bool implicit_odp = false;
    bool prefetch_mr = false;
    bool use_ts = false;
    bool use_dm = false;
    bool new_send = false;
};

// Spacing of receive completion timestamps (-t).
struct TimestampStats {
    uint64_t max_delta = 0;
    uint64_t min_delta = 0xffffffff;
    uint64_t total_delta = 0;
    uint64_t prev = 0;
    bool prev_valid = false;
    unsigned int samples = 0;
};

class RcPingpong {
public:
    RcPingpong(const Options& opts, const RcFlags& flags, long page_size)
        : opts_(opts), flags_(flags), page_size_(page_size), size_(static_cast<int>(opts.size)),
          rx_depth_(static_cast<int>(opts.rx_depth)) {}

    bool init(ibv_device* dev);
    int run();

private:
    bool query_features(int& access);
    bool connect(const Dest& remote);
    int post_recv(int count);
    int post_send();
    // Accounts for one completion and posts the next send when both halves
    // of the previous exchange are done. Nonzero on error (reported).
    int complete(uint64_t wr_id, ibv_wc_status status, uint64_t timestamp);
    int poll_once();
    int poll_once_ex();

    ibv_cq* cq() const { return res_.cq; }
    uint64_t buf_addr() const {
        // A device memory MR is zero based.
        return flags_.use_dm ? 0 : reinterpret_cast<uintptr_t>(res_.buf.get());
    }

    const Options& opts_;
    const RcFlags& flags_;
    long page_size_;
    int size_;
    int rx_depth_;
    Resources res_;
    ibv_cq_ex* cq_ex_ = nullptr;
    ibv_qp_ex* qpx_ = nullptr;
    unsigned int send_flags_ = IBV_SEND_SIGNALED;
    uint64_t timestamp_mask_ = 0;
    TimestampStats ts_;
    Dest mine_;
    std::optional<Dest> remote_;
    int pending_ = 0;
    int routs_ = 0;
    int rcnt_ = 0;
    int scnt_ = 0;
};

bool RcPingpong::query_features(int& access) {
    ibv_device_attr_ex attrx{};
    if (ibv_query_device_ex(res_.context, nullptr, &attrx)) {
        std::fprintf(stderr, "Couldn't query device for its features\n");
        return false;
    }

    if (flags_.use_odp) {
        constexpr uint32_t kRcCaps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV;
        if (!(attrx.odp_caps.general_caps & IBV_ODP_SUPPORT) ||
            (attrx.odp_caps.per_transport_caps.rc_odp_caps & kRcCaps) != kRcCaps) {
            std::fprintf(stderr, "The device isn't ODP capable or does not support RC send and receive with ODP\n");
            return false;
        }
        if (flags_.implicit_odp && !(attrx.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT)) {
            std::fprintf(stderr, "The device doesn't support implicit ODP\n");
            return false;
        }
        access |= IBV_ACCESS_ON_DEMAND;
    }

    if (flags_.use_ts) {
        if (!attrx.completion_timestamp_mask) {
            std::fprintf(stderr, "The device isn't completion timestamp capable\n");
            return false;
        }
        timestamp_mask_ = attrx.completion_timestamp_mask;
    }

    if (flags_.use_dm) {
        if (!attrx.max_dm_size) {
            std::fprintf(stderr, "Device doesn't support dm allocation\n");
            return false;
        }
        if (attrx.max_dm_size < static_cast<uint64_t>(static_cast<int64_t>(size_))) {
            std::fprintf(stderr, "Device memory is insufficient\n");
            return false;
        }
        ibv_alloc_dm_attr dm_attr{};
        dm_attr.length = static_cast<std::size_t>(size_);
        res_.dm = ibv_alloc_dm(res_.context, &dm_attr);
        if (!res_.dm) {
            std::fprintf(stderr, "Dev mem allocation failed\n");
            return false;
        }
        access |= IBV_ACCESS_ZERO_BASED;
    }
    return true;
}

bool RcPingpong::init(ibv_device* dev) {
    res_.buf = alloc_page_aligned(static_cast<std::size_t>(size_), page_size_, 0x7b);
    if (!res_.buf)
        return false;

    res_.context = open_device(dev);
    if (!res_.context)
        return false;

    if (!open_channel_and_pd(res_, opts_.use_event))
        return false;

    int access = IBV_ACCESS_LOCAL_WRITE;
    if ((flags_.use_odp || flags_.use_ts || flags_.use_dm) && !query_features(access))
        return false;

    if (flags_.implicit_odp)
        res_.mr = ibv_reg_mr(res_.pd, nullptr, SIZE_MAX, access);
    else if (flags_.use_dm)
        res_.mr = ibv_reg_dm_mr(res_.pd, res_.dm, 0, static_cast<std::size_t>(size_), access);
    else
        res_.mr = ibv_reg_mr(res_.pd, res_.buf.get(), static_cast<std::size_t>(size_), access);
    if (!res_.mr) {
        std::fprintf(stderr, "Couldn't register MR\n");
        return false;
    }

    if (flags_.prefetch_mr) {
        ibv_sge sge{};
        sge.addr = reinterpret_cast<uintptr_t>(res_.buf.get());
        sge.length = static_cast<uint32_t>(size_);
        sge.lkey = res_.mr->lkey;
        int ret = ibv_advise_mr(res_.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IB_UVERBS_ADVISE_MR_FLAG_FLUSH, &sge, 1);
        if (ret)
            std::fprintf(stderr, "Couldn't prefetch MR(%d). Continue anyway\n", ret);
    }

    if (flags_.use_ts) {
        ibv_cq_init_attr_ex cq_attr{};
        cq_attr.cqe = static_cast<uint32_t>(rx_depth_ + 1);
        cq_attr.channel = res_.channel;
        cq_attr.comp_vector = 0;
        cq_attr.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
        cq_ex_ = ibv_create_cq_ex(res_.context, &cq_attr);
        res_.cq = cq_ex_ ? ibv_cq_ex_to_cq(cq_ex_) : nullptr;
    } else {
        res_.cq = ibv_create_cq(res_.context, rx_depth_ + 1, nullptr, res_.channel, 0);
    }
    if (!res_.cq) {
        std::fprintf(stderr, "Couldn't create CQ\n");
        return false;
    }

    ibv_qp_init_attr init_attr{};
    init_attr.send_cq = res_.cq;
    init_attr.recv_cq = res_.cq;
    init_attr.cap.max_send_wr = 1;
    init_attr.cap.max_recv_wr = static_cast<uint32_t>(rx_depth_);
    init_attr.cap.max_send_sge = 1;
    init_attr.cap.max_recv_sge = 1;
    init_attr.qp_type = IBV_QPT_RC;

    ibv_qp* qp;
    if (flags_.new_send) {
        ibv_qp_init_attr_ex attr_ex{};
        attr_ex.send_cq = res_.cq;
        attr_ex.recv_cq = res_.cq;
        attr_ex.cap = init_attr.cap;
        attr_ex.qp_type = IBV_QPT_RC;
        attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        attr_ex.pd = res_.pd;
        attr_ex.send_ops_flags = IBV_QP_EX_WITH_SEND;
        qp = ibv_create_qp_ex(res_.context, &attr_ex);
    } else {
        qp = ibv_create_qp(res_.pd, &init_attr);
    }
    if (!qp) {
        std::fprintf(stderr, "Couldn't create QP\n");
        return false;
    }
    res_.qps.push_back(qp);
    if (flags_.new_send)
        qpx_ = ibv_qp_to_qp_ex(qp);

    // Small messages go inline when the QP allows it (never from device
    // memory, which the CPU would have to read).
    ibv_qp_attr query_attr{};
    ibv_query_qp(qp, &query_attr, IBV_QP_CAP, &init_attr);
    if (init_attr.cap.max_inline_data >= static_cast<uint32_t>(size_) && !flags_.use_dm)
        send_flags_ |= IBV_SEND_INLINE;

    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = static_cast<uint8_t>(opts_.ib_port);
    attr.qp_access_flags = 0;
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        std::fprintf(stderr, "Failed to modify QP to INIT\n");
        return false;
    }
    return true;
}

bool RcPingpong::connect(const Dest& remote) {
    ibv_qp* qp = res_.qps.front();
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = opts_.mtu;
    attr.dest_qp_num = static_cast<uint32_t>(remote.qpn);
    attr.rq_psn = static_cast<uint32_t>(remote.psn);
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer = 12;
    attr.ah_attr.dlid = static_cast<uint16_t>(remote.lid);
    attr.ah_attr.sl = static_cast<uint8_t>(opts_.sl);
    attr.ah_attr.port_num = static_cast<uint8_t>(opts_.ib_port);
    // A GID from the peer means a routed (RoCE) path: add a GRH.
    if (remote.gid.global.interface_id) {
        attr.ah_attr.is_global = 1;
        attr.ah_attr.grh.hop_limit = 1;
        attr.ah_attr.grh.dgid = remote.gid;
        attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(opts_.gid_index);
    }
    if (ibv_modify_qp(qp, &attr,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
        std::fprintf(stderr, "Failed to modify QP to RTR\n");
        return false;
    }

    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = 14;
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;
    attr.sq_psn = static_cast<uint32_t>(mine_.psn);
    attr.max_rd_atomic = 1;
    if (ibv_modify_qp(qp, &attr,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                          IBV_QP_MAX_QP_RD_ATOMIC)) {
        std::fprintf(stderr, "Failed to modify QP to RTS\n");
        return false;
    }
    return true;
}

int RcPingpong::post_recv(int count) {
    ibv_sge sge{};
    sge.addr = buf_addr();
    sge.length = static_cast<uint32_t>(size_);
    sge.lkey = res_.mr->lkey;
    ibv_recv_wr wr{};
    wr.wr_id = kRecvWrid;
    wr.sg_list = &sge;
    wr.num_sge = 1;

    int posted = 0;
    for (ibv_recv_wr* bad; posted < count; ++posted)
        if (ibv_post_recv(res_.qps.front(), &wr, &bad))
            break;
    return posted;
}

int RcPingpong::post_send() {
    ibv_sge sge{};
    sge.addr = buf_addr();
    sge.length = static_cast<uint32_t>(size_);
    sge.lkey = res_.mr->lkey;

    if (qpx_) {
        ibv_wr_start(qpx_);
        qpx_->wr_id = kSendWrid;
        qpx_->wr_flags = send_flags_;
        ibv_wr_send(qpx_);
        ibv_wr_set_sge(qpx_, sge.lkey, sge.addr, sge.length);
        return ibv_wr_complete(qpx_);
    }

    ibv_send_wr wr{};
    wr.wr_id = kSendWrid;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = send_flags_;
    ibv_send_wr* bad;
    return ibv_post_send(res_.qps.front(), &wr, &bad);
}

int RcPingpong::complete(uint64_t wr_id, ibv_wc_status status, uint64_t timestamp) {
    int id = static_cast<int>(wr_id);
    if (status != IBV_WC_SUCCESS) {
        std::fprintf(stderr, "Failed status %s (%d) for wr_id %d\n", ibv_wc_status_str(status), status, id);
        return 1;
    }

    switch (id) {
    case kSendWrid: ++scnt_; break;
    case kRecvWrid:
        // Refill the receive queue before it runs dry.
        if (--routs_ <= 1) {
            routs_ += post_recv(rx_depth_ - routs_);
            if (routs_ < rx_depth_) {
                std::fprintf(stderr, "Couldn't post receive (%d)\n", routs_);
                return 1;
            }
        }
        ++rcnt_;
        if (flags_.use_ts) {
            if (ts_.prev_valid) {
                // The timestamp counter may have wrapped at its mask.
                uint64_t delta =
                    timestamp >= ts_.prev ? timestamp - ts_.prev : timestamp_mask_ - ts_.prev + timestamp + 1;
                ts_.max_delta = std::max(ts_.max_delta, delta);
                ts_.min_delta = std::min(ts_.min_delta, delta);
                ts_.total_delta += delta;
                ++ts_.samples;
            }
            ts_.prev = timestamp;
            ts_.prev_valid = true;
        } else {
            ts_.prev_valid = false;
        }
        break;
    default: std::fprintf(stderr, "Completion for unknown wr_id %d\n", id); return 1;
    }

    pending_ &= ~id;
    if (scnt_ < static_cast<int>(opts_.iters) && !pending_) {
        if (post_send()) {
            std::fprintf(stderr, "Couldn't post send\n");
            return 1;
        }
        pending_ = kRecvWrid | kSendWrid;
    }
    return 0;
}

// One round of ibv_poll_cq (busy until something arrives unless -e).
// Returns the exit status to stop with, or -1 to go on.
int RcPingpong::poll_once() {
    ibv_wc wc[2];
    int ne;
    do {
        ne = ibv_poll_cq(cq(), 2, wc);
        if (ne < 0) {
            std::fprintf(stderr, "poll CQ failed %d\n", ne);
            return 1;
        }
    } while (!opts_.use_event && ne < 1);

    for (int i = 0; i < ne; ++i) {
        if (complete(wc[i].wr_id, wc[i].status, 0)) {
            std::fprintf(stderr, "parse WC failed %d\n", ne);
            return 1;
        }
    }
    return -1;
}

// The same with the extended CQ (-t): at most two completions per round.
// The exit statuses are the raw poll/parse results, as in the reference.
int RcPingpong::poll_once_ex() {
    ibv_poll_cq_attr attr{};
    int ret;
    do {
        ret = ibv_start_poll(cq_ex_, &attr);
    } while (!opts_.use_event && ret == ENOENT);
    if (ret) {
        std::fprintf(stderr, "poll CQ failed %d\n", ret);
        return ret;
    }

    ret = complete(cq_ex_->wr_id, cq_ex_->status, ibv_wc_read_completion_ts(cq_ex_));
    if (ret) {
        ibv_end_poll(cq_ex_);
        return ret;
    }
    ret = ibv_next_poll(cq_ex_);
    if (!ret)
        ret = complete(cq_ex_->wr_id, cq_ex_->status, ibv_wc_read_completion_ts(cq_ex_));
    ibv_end_poll(cq_ex_);
    if (ret && ret != ENOENT) {
        std::fprintf(stderr, "poll CQ failed %d\n", ret);
        return ret;
    }
    return -1;
}

int RcPingpong::run() {
    routs_ = post_recv(rx_depth_);
    if (routs_ < rx_depth_) {
        std::fprintf(stderr, "Couldn't post receive (%d)\n", routs_);
        return 1;
    }

    if (opts_.use_event && ibv_req_notify_cq(cq(), 0)) {
        std::fprintf(stderr, "Couldn't request CQ notification\n");
        return 1;
    }

    if (!query_local_address(res_.context, opts_, mine_, true, "can't read sgid of index %d\n"))
        return 1;
    mine_.qpn = static_cast<int>(res_.qps.front()->qp_num);
    mine_.psn = random_psn();
    print_address("local address: ", mine_);

    const bool client = opts_.servername != nullptr;
    if (client)
        remote_ = client_exchange(opts_.servername, opts_.port, mine_);
    else
        remote_ = server_exchange(opts_.port, mine_, [this](const Dest& remote) { return connect(remote); });
    if (!remote_)
        return 1;
    print_address("remote address:", *remote_);

    if (client && !connect(*remote_))
        return 1;

    pending_ = kRecvWrid;
    if (client) {
        if (opts_.validate_buf)
            mark_pages(res_.buf.get(), opts_.size, page_size_);
        if (flags_.use_dm && ibv_memcpy_to_dm(res_.dm, 0, res_.buf.get(), static_cast<std::size_t>(size_))) {
            std::fprintf(stderr, "Copy to dm buffer failed\n");
            return 1;
        }
        if (post_send()) {
            std::fprintf(stderr, "Couldn't post send\n");
            return 1;
        }
        pending_ |= kSendWrid;
    }

    timeval start{}, end{};
    if (gettimeofday(&start, nullptr)) {
        std::perror("gettimeofday");
        return 1;
    }

    rcnt_ = scnt_ = 0;
    while (static_cast<unsigned int>(rcnt_) < opts_.iters || static_cast<unsigned int>(scnt_) < opts_.iters) {
        if (opts_.use_event && !wait_cq_event(res_))
            return 1;
        int status = flags_.use_ts ? poll_once_ex() : poll_once();
        if (status >= 0)
            return status;
    }

    if (gettimeofday(&end, nullptr)) {
        std::perror("gettimeofday");
        return 1;
    }

    print_throughput(start, end, opts_.size, opts_.iters);
    if (flags_.use_ts && ts_.samples) {
        std::printf("Max receive completion clock cycles = %" PRIu64 "\n", ts_.max_delta);
        std::printf("Min receive completion clock cycles = %" PRIu64 "\n", ts_.min_delta);
        std::printf("Average receive completion clock cycles = %f\n",
                    static_cast<double>(ts_.total_delta) / ts_.samples);
    }

    if (!client && opts_.validate_buf) {
        if (flags_.use_dm && ibv_memcpy_from_dm(res_.buf.get(), res_.dm, 0, static_cast<std::size_t>(size_))) {
            std::fprintf(stderr, "Copy from DM buffer failed\n");
            return 1;
        }
        check_pages(res_.buf.get(), opts_.size, page_size_);
    }

    return res_.close() ? 0 : 1;
}

}  // namespace

int main(int argc, char* argv[]) {
    seed_psn();

    Options opts;
    RcFlags flags;
    const ProgramSpec spec{"p:d:i:s:m:r:n:l:eg:oOPtcjN", kLongOptions, kUsageLines};
    auto extra = [&flags](int c, const char*) {
        switch (c) {
        case 'o': flags.use_odp = true; return true;
        case 'O':
            flags.use_odp = true;
            flags.implicit_odp = true;
            return true;
        case 'P': flags.prefetch_mr = true; return true;
        case 't': flags.use_ts = true; return true;
        case 'j': flags.use_dm = true; return true;
        case 'N': flags.new_send = true; return true;
        default: return false;
        }
    };
    if (auto status = parse_options(argc, argv, spec, opts, extra))
        return *status;

    if (flags.use_odp && flags.use_dm) {
        std::fprintf(stderr, "DM memory region can't be on demand\n");
        return 1;
    }
    if (!flags.use_odp && flags.prefetch_mr) {
        std::fprintf(stderr, "prefetch is valid only with on-demand memory region\n");
        return 1;
    }

    long page_size = sysconf(_SC_PAGESIZE);

    DeviceList dev_list = get_device_list();
    if (!dev_list)
        return 1;
    ibv_device* dev = select_device(dev_list.get(), opts.ib_devname);
    if (!dev)
        return 1;

    RcPingpong pingpong(opts, flags, page_size);
    if (!pingpong.init(dev))
        return 1;
    return pingpong.run();
}
