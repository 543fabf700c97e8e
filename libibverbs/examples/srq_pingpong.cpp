// ibv_srq_pingpong: the RC ping-pong test with several queue pairs that
// all take their receive buffers from one shared receive queue (SRQ), and
// complete into one CQ. Every QP runs its own exchange; -n counts the
// exchanges of all of them together.
//
// The handshake always carries kMaxQp records per side, used or not (the
// unused ones are all zero), so that both sides agree on its length
// whatever -q each was given. Options, messages, exit statuses and the
// handshake are those of ibverbs-utils 44 (see pingpong_common.h).

#include "pingpong_common.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

namespace {

using namespace pingpong;

constexpr int kMaxQp = 256;

constexpr const char* kUsageLines[] = {
    "  -p, --port=<port>      listen on/connect to port <port> (default 18515)",
    "  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)",
    "  -i, --ib-port=<port>   use port <port> of IB device (default 1)",
    "  -s, --size=<size>      size of message to exchange (default 4096)",
    "  -m, --mtu=<size>       path MTU (default 1024)",
    "  -q, --num-qp=<num>     number of QPs to use (default 16)",
    "  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)",
    "  -n, --iters=<iters>    number of exchanges per QP(default 1000)",
    "  -l, --sl=<sl>          service level value",
    "  -e, --events           sleep on CQ events (default poll)",
    "  -g, --gid-idx=<gid index> local port gid index",
    "  -o, --odp\t\t    use on demand paging",
    "  -c, --chk              validate received buffer",
};

constexpr option kLongOptions[] = {
    {"port", required_argument, nullptr, 'p'},
    {"ib-dev", required_argument, nullptr, 'd'},
    {"ib-port", required_argument, nullptr, 'i'},
    {"size", required_argument, nullptr, 's'},
    {"mtu", required_argument, nullptr, 'm'},
    {"num-qp", required_argument, nullptr, 'q'},
    {"rx-depth", required_argument, nullptr, 'r'},
    {"iters", required_argument, nullptr, 'n'},
    {"sl", required_argument, nullptr, 'l'},
    {"events", no_argument, nullptr, 'e'},
    {"odp", no_argument, nullptr, 'o'},
    {"gid-idx", required_argument, nullptr, 'g'},
    {"chk", no_argument, nullptr, 'c'},
    {nullptr, 0, nullptr, 0},
};

using DestTable = std::vector<Dest>;  // always kMaxQp entries

// Sends all records of `mine`. False after reporting.
bool send_table(int fd, const DestTable& mine) {
    for (const Dest& dest : mine) {
        WireRecord record = encode_dest(dest);
        if (write_full(fd, record.data(), record.size()) != static_cast<long>(record.size())) {
            std::fprintf(stderr, "Couldn't send local address\n");
            return false;
        }
    }
    return true;
}

// Reads kMaxQp records; `who` names the side in the perror line.
std::optional<DestTable> receive_table(int fd, const char* who) {
    DestTable table(kMaxQp);
    for (int i = 0; i < kMaxQp; ++i) {
        WireRecord record{};
        long n = read_full(fd, record.data(), record.size());
        if (n != static_cast<long>(record.size())) {
            std::perror(who);
            std::fprintf(stderr, "%d/%d: Couldn't read remote address [%d]\n", n < 0 ? 0 : static_cast<int>(n),
                         static_cast<int>(record.size()), i);
            return std::nullopt;
        }
        table[static_cast<std::size_t>(i)] = decode_dest(record);
    }
    return table;
}

constexpr char kDone[] = "done";

std::optional<DestTable> client_exchange_table(const char* host, unsigned int port, const DestTable& mine) {
    Socket sock = connect_to_server(host, port);
    if (!sock.valid() || !send_table(sock.get(), mine))
        return std::nullopt;

    std::optional<DestTable> remote = receive_table(sock.get(), "client read");
    if (!remote)
        return std::nullopt;

    if (write_full(sock.get(), kDone, sizeof(kDone)) != static_cast<long>(sizeof(kDone))) {
        std::perror("client write");
        return std::nullopt;
    }
    return remote;
}

std::optional<DestTable> server_exchange_table(unsigned int port, const DestTable& mine,
                                               const std::function<bool(const DestTable&)>& connect) {
    Socket conn = accept_one_client(port);
    if (!conn.valid())
        return std::nullopt;

    std::optional<DestTable> remote = receive_table(conn.get(), "server read");
    if (!remote)
        return std::nullopt;

    if (!connect(*remote)) {
        std::fprintf(stderr, "Couldn't connect to remote QP\n");
        return std::nullopt;
    }

    if (!send_table(conn.get(), mine))
        return std::nullopt;

    WireRecord reply{};
    if (read(conn.get(), reply.data(), reply.size()) != static_cast<ssize_t>(sizeof(kDone))) {
        // The reference words it this way although the server is reading.
        std::perror("client write");
        return std::nullopt;
    }
    return remote;
}

class SrqPingpong {
public:
    SrqPingpong(const Options& opts, int num_qp, bool use_odp, long page_size)
        : opts_(opts), num_qp_(num_qp), use_odp_(use_odp), page_size_(page_size), size_(static_cast<int>(opts.size)),
          rx_depth_(static_cast<int>(opts.rx_depth)), mine_(kMaxQp), pending_(static_cast<std::size_t>(num_qp), 0) {
        res_.indexed_qp_names = true;
    }

    bool init(ibv_device* dev);
    int run();

private:
    bool connect(const DestTable& remote);
    int post_recv(int count);
    int post_send(int qp_index);
    int find_qp(uint32_t qpn) const;

    const Options& opts_;
    int num_qp_;
    bool use_odp_;
    long page_size_;
    int size_;
    int rx_depth_;
    Resources res_;
    unsigned int send_flags_ = IBV_SEND_SIGNALED;
    DestTable mine_;
    std::vector<int> pending_;
};

bool SrqPingpong::init(ibv_device* dev) {
    res_.buf = alloc_page_aligned(static_cast<std::size_t>(size_), page_size_, 0);
    if (!res_.buf)
        return false;

    res_.context = open_device(dev);
    if (!res_.context)
        return false;

    int access = IBV_ACCESS_LOCAL_WRITE;
    if (use_odp_) {
        ibv_device_attr_ex attrx{};
        if (ibv_query_device_ex(res_.context, nullptr, &attrx)) {
            std::fprintf(stderr, "Couldn't query device for its features\n");
            return false;
        }
        constexpr uint32_t kRcCaps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_SRQ_RECV;
        if (!(attrx.odp_caps.general_caps & IBV_ODP_SUPPORT) ||
            (attrx.odp_caps.per_transport_caps.rc_odp_caps & kRcCaps) != kRcCaps) {
            std::fprintf(stderr,
                         "The device isn't ODP capable or does not support RC send, receive and srq with ODP\n");
            return false;
        }
        access |= IBV_ACCESS_ON_DEMAND;
    }

    if (!open_channel_and_pd(res_, opts_.use_event))
        return false;

    res_.mr = ibv_reg_mr(res_.pd, res_.buf.get(), static_cast<std::size_t>(size_), access);
    if (!res_.mr) {
        std::fprintf(stderr, "Couldn't register MR\n");
        return false;
    }

    // Room for every receive plus one send completion per QP.
    res_.cq = ibv_create_cq(res_.context, rx_depth_ + num_qp_, nullptr, res_.channel, 0);
    if (!res_.cq) {
        std::fprintf(stderr, "Couldn't create CQ\n");
        return false;
    }

    ibv_srq_init_attr srq_attr{};
    srq_attr.attr.max_wr = static_cast<uint32_t>(rx_depth_);
    srq_attr.attr.max_sge = 1;
    res_.srq = ibv_create_srq(res_.pd, &srq_attr);
    if (!res_.srq) {
        std::fprintf(stderr, "Couldn't create SRQ\n");
        return false;
    }

    for (int i = 0; i < num_qp_; ++i) {
        ibv_qp_init_attr init_attr{};
        init_attr.send_cq = res_.cq;
        init_attr.recv_cq = res_.cq;
        init_attr.srq = res_.srq;
        init_attr.cap.max_send_wr = 1;
        init_attr.cap.max_send_sge = 1;
        init_attr.qp_type = IBV_QPT_RC;
        ibv_qp* qp = ibv_create_qp(res_.pd, &init_attr);
        if (!qp) {
            std::fprintf(stderr, "Couldn't create QP[%d]\n", i);
            return false;
        }
        res_.qps.push_back(qp);

        ibv_qp_attr query_attr{};
        ibv_query_qp(qp, &query_attr, IBV_QP_CAP, &init_attr);
        if (init_attr.cap.max_inline_data >= static_cast<uint32_t>(size_))
            send_flags_ |= IBV_SEND_INLINE;
    }

    for (int i = 0; i < num_qp_; ++i) {
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_INIT;
        attr.pkey_index = 0;
        attr.port_num = static_cast<uint8_t>(opts_.ib_port);
        attr.qp_access_flags = 0;
        if (ibv_modify_qp(res_.qps[static_cast<std::size_t>(i)], &attr,
                          IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
            std::fprintf(stderr, "Failed to modify QP[%d] to INIT\n", i);
            return false;
        }
    }
    return true;
}

bool SrqPingpong::connect(const DestTable& remote) {
    for (int i = 0; i < num_qp_; ++i) {
        const Dest& peer = remote[static_cast<std::size_t>(i)];
        ibv_qp* qp = res_.qps[static_cast<std::size_t>(i)];

        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_RTR;
        attr.path_mtu = opts_.mtu;
        attr.dest_qp_num = static_cast<uint32_t>(peer.qpn);
        attr.rq_psn = static_cast<uint32_t>(peer.psn);
        attr.max_dest_rd_atomic = 1;
        attr.min_rnr_timer = 12;
        attr.ah_attr.dlid = static_cast<uint16_t>(peer.lid);
        attr.ah_attr.sl = static_cast<uint8_t>(opts_.sl);
        attr.ah_attr.port_num = static_cast<uint8_t>(opts_.ib_port);
        // All the peer's QPs share its port, so its first GID serves all
        // (the reference looks at the first record only).
        const ibv_gid& gid = remote.front().gid;
        if (gid.global.interface_id) {
            attr.ah_attr.is_global = 1;
            attr.ah_attr.grh.hop_limit = 1;
            attr.ah_attr.grh.dgid = gid;
            attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(opts_.gid_index);
        }
        if (ibv_modify_qp(qp, &attr,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
            std::fprintf(stderr, "Failed to modify QP[%d] to RTR\n", i);
            return false;
        }

        attr.qp_state = IBV_QPS_RTS;
        attr.timeout = 14;
        attr.retry_cnt = 7;
        attr.rnr_retry = 7;
        attr.sq_psn = static_cast<uint32_t>(mine_[static_cast<std::size_t>(i)].psn);
        attr.max_rd_atomic = 1;
        if (ibv_modify_qp(qp, &attr,
                          IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                              IBV_QP_MAX_QP_RD_ATOMIC)) {
            std::fprintf(stderr, "Failed to modify QP[%d] to RTS\n", i);
            return false;
        }
    }
    return true;
}

int SrqPingpong::post_recv(int count) {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(res_.buf.get());
    sge.length = static_cast<uint32_t>(size_);
    sge.lkey = res_.mr->lkey;
    ibv_recv_wr wr{};
    wr.wr_id = kRecvWrid;
    wr.sg_list = &sge;
    wr.num_sge = 1;

    int posted = 0;
    for (ibv_recv_wr* bad; posted < count; ++posted)
        if (ibv_post_srq_recv(res_.srq, &wr, &bad))
            break;
    return posted;
}

int SrqPingpong::post_send(int qp_index) {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(res_.buf.get());
    sge.length = static_cast<uint32_t>(size_);
    sge.lkey = res_.mr->lkey;
    ibv_send_wr wr{};
    wr.wr_id = kSendWrid;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = send_flags_;
    ibv_send_wr* bad;
    return ibv_post_send(res_.qps[static_cast<std::size_t>(qp_index)], &wr, &bad);
}

int SrqPingpong::find_qp(uint32_t qpn) const {
    for (int i = 0; i < num_qp_; ++i)
        if (res_.qps[static_cast<std::size_t>(i)]->qp_num == qpn)
            return i;
    return -1;
}

int SrqPingpong::run() {
    int routs = post_recv(rx_depth_);
    if (routs < rx_depth_) {
        std::fprintf(stderr, "Couldn't post receive (%d)\n", routs);
        return 1;
    }

    if (opts_.use_event && ibv_req_notify_cq(res_.cq, 0)) {
        std::fprintf(stderr, "Couldn't request CQ notification\n");
        return 1;
    }

    Dest port_dest;
    if (!query_local_address(res_.context, opts_, port_dest, true, "Could not get local gid for gid index %d\n"))
        return 1;
    for (int i = 0; i < num_qp_; ++i) {
        Dest& dest = mine_[static_cast<std::size_t>(i)];
        dest = port_dest;
        dest.qpn = static_cast<int>(res_.qps[static_cast<std::size_t>(i)]->qp_num);
        dest.psn = random_psn();
        print_address("local address: ", dest);
    }

    const bool client = opts_.servername != nullptr;
    std::optional<DestTable> remote = client
        ? client_exchange_table(opts_.servername, opts_.port, mine_)
        : server_exchange_table(opts_.port, mine_, [this](const DestTable& peer) { return connect(peer); });
    if (!remote)
        return 1;
    for (int i = 0; i < num_qp_; ++i)
        print_address("remote address:", (*remote)[static_cast<std::size_t>(i)]);

    if (client && !connect(*remote))
        return 1;

    if (client) {
        if (opts_.validate_buf)
            mark_pages(res_.buf.get(), opts_.size, page_size_);
        for (int i = 0; i < num_qp_; ++i) {
            if (post_send(i)) {
                std::fprintf(stderr, "Couldn't post send\n");
                return 1;
            }
            pending_[static_cast<std::size_t>(i)] = kSendWrid | kRecvWrid;
        }
    } else {
        for (int& p : pending_)
            p = kRecvWrid;
    }

    timeval start{}, end{};
    if (gettimeofday(&start, nullptr)) {
        std::perror("gettimeofday");
        return 1;
    }

    // One poll may return a completion for every receive and every QP's send.
    std::vector<ibv_wc> wc(static_cast<std::size_t>(num_qp_ + rx_depth_));
    const unsigned int iters = opts_.iters;
    int rcnt = 0, scnt = 0;
    while (static_cast<unsigned int>(rcnt) < iters || static_cast<unsigned int>(scnt) < iters) {
        if (opts_.use_event && !wait_cq_event(res_))
            return 1;

        int ne;
        do {
            ne = ibv_poll_cq(res_.cq, static_cast<int>(wc.size()), wc.data());
            if (ne < 0) {
                std::fprintf(stderr, "poll CQ failed %d\n", ne);
                return 1;
            }
        } while (!opts_.use_event && ne < 1);

        for (int i = 0; i < ne; ++i) {
            const ibv_wc& c = wc[static_cast<std::size_t>(i)];
            int id = static_cast<int>(c.wr_id);
            if (c.status != IBV_WC_SUCCESS) {
                std::fprintf(stderr, "Failed status %s (%d) for wr_id %d\n", ibv_wc_status_str(c.status), c.status, id);
                return 1;
            }

            int qp_index = find_qp(c.qp_num);
            if (qp_index < 0) {
                std::fprintf(stderr, "Couldn't find QPN %06x\n", c.qp_num);
                return 1;
            }

            switch (id) {
            case kSendWrid: ++scnt; break;
            case kRecvWrid:
                // Keep at least one receive per QP in the SRQ.
                if (--routs <= num_qp_) {
                    routs += post_recv(rx_depth_ - routs);
                    if (routs < rx_depth_) {
                        std::fprintf(stderr, "Couldn't post receive (%d)\n", routs);
                        return 1;
                    }
                }
                ++rcnt;
                break;
            default: std::fprintf(stderr, "Completion for unknown wr_id %d\n", id); return 1;
            }

            int& pending = pending_[static_cast<std::size_t>(qp_index)];
            pending &= ~id;
            if (static_cast<unsigned int>(scnt) < iters && !pending) {
                if (post_send(qp_index)) {
                    std::fprintf(stderr, "Couldn't post send\n");
                    return 1;
                }
                pending = kRecvWrid | kSendWrid;
            }
        }
    }

    if (gettimeofday(&end, nullptr)) {
        std::perror("gettimeofday");
        return 1;
    }

    print_throughput(start, end, opts_.size, opts_.iters);
    if (!client && opts_.validate_buf)
        check_pages(res_.buf.get(), opts_.size, page_size_);

    return res_.close() ? 0 : 1;
}

}  // namespace

int main(int argc, char* argv[]) {
    seed_psn();

    Options opts;
    unsigned int num_qp = 16;
    bool use_odp = false;
    ProgramSpec spec{"p:d:i:s:m:q:r:n:l:eog:c", kLongOptions, kUsageLines};
    spec.size_must_be_positive = true;
    auto extra = [&](int c, const char* arg) {
        switch (c) {
        case 'q': num_qp = static_cast<unsigned int>(std::strtoul(arg, nullptr, 0)); return true;
        case 'o': use_odp = true; return true;
        default: return false;
        }
    };
    if (auto status = parse_options(argc, argv, spec, opts, extra))
        return *status;

    if (num_qp > opts.rx_depth) {
        std::fprintf(stderr, "rx_depth %d is too small for %d QPs -- must have at least one receive per QP.\n",
                     static_cast<int>(opts.rx_depth), static_cast<int>(num_qp));
        return 1;
    }
    if (num_qp >= kMaxQp) {
        std::fprintf(stderr, "num_qp %d must be less than %d\n", static_cast<int>(num_qp), kMaxQp - 1);
        return 1;
    }

    long page_size = sysconf(_SC_PAGESIZE);

    DeviceList dev_list = get_device_list();
    if (!dev_list)
        return 1;
    ibv_device* dev = select_device(dev_list.get(), opts.ib_devname);
    if (!dev)
        return 1;

    SrqPingpong pingpong(opts, static_cast<int>(num_qp), use_odp, page_size);
    if (!pingpong.init(dev))
        return 1;
    return pingpong.run();
}
