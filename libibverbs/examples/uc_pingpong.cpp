// ibv_uc_pingpong: the ping-pong test over an unreliable connected (UC)
// queue pair. A UC QP is connected like RC but has no acknowledgements or
// retries, so its RTR/RTS transitions take no timeout, retry or atomic
// attributes.
//
// Options, messages, exit statuses and the TCP handshake are those of
// ibverbs-utils 44 (see pingpong_common.h).

#include "pingpong_common.h"

#include <unistd.h>

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
    "  -c, --chk              validate received buffer",
};

constexpr option kLongOptions[] = {
    {"port", required_argument, nullptr, 'p'},    {"ib-dev", required_argument, nullptr, 'd'},
    {"ib-port", required_argument, nullptr, 'i'}, {"size", required_argument, nullptr, 's'},
    {"mtu", required_argument, nullptr, 'm'},     {"rx-depth", required_argument, nullptr, 'r'},
    {"iters", required_argument, nullptr, 'n'},   {"sl", required_argument, nullptr, 'l'},
    {"events", no_argument, nullptr, 'e'},        {"gid-idx", required_argument, nullptr, 'g'},
    {"chk", no_argument, nullptr, 'c'},           {nullptr, 0, nullptr, 0},
};

class UcPingpong {
public:
    UcPingpong(const Options& opts, long page_size)
        : opts_(opts), page_size_(page_size), size_(static_cast<int>(opts.size)),
          rx_depth_(static_cast<int>(opts.rx_depth)) {}

    bool init(ibv_device* dev);
    int run();

private:
    bool connect(const Dest& remote);
    int post_recv(int count);
    int post_send();
    ibv_qp* qp() const { return res_.qps.front(); }

    const Options& opts_;
    long page_size_;
    int size_;
    int rx_depth_;
    Resources res_;
    unsigned int send_flags_ = IBV_SEND_SIGNALED;
    Dest mine_;
};

bool UcPingpong::init(ibv_device* dev) {
    res_.buf = alloc_page_aligned(static_cast<std::size_t>(size_), page_size_, 0x7b);
    if (!res_.buf)
        return false;

    res_.context = open_device(dev);
    if (!res_.context)
        return false;

    if (!open_channel_and_pd(res_, opts_.use_event))
        return false;

    res_.mr = ibv_reg_mr(res_.pd, res_.buf.get(), static_cast<std::size_t>(size_), IBV_ACCESS_LOCAL_WRITE);
    if (!res_.mr) {
        std::fprintf(stderr, "Couldn't register MR\n");
        return false;
    }

    res_.cq = ibv_create_cq(res_.context, rx_depth_ + 1, nullptr, res_.channel, 0);
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
    init_attr.qp_type = IBV_QPT_UC;
    ibv_qp* new_qp = ibv_create_qp(res_.pd, &init_attr);
    if (!new_qp) {
        std::fprintf(stderr, "Couldn't create QP\n");
        return false;
    }
    res_.qps.push_back(new_qp);

    ibv_qp_attr query_attr{};
    ibv_query_qp(new_qp, &query_attr, IBV_QP_CAP, &init_attr);
    if (init_attr.cap.max_inline_data >= static_cast<uint32_t>(size_))
        send_flags_ |= IBV_SEND_INLINE;

    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = static_cast<uint8_t>(opts_.ib_port);
    attr.qp_access_flags = 0;
    if (ibv_modify_qp(new_qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        std::fprintf(stderr, "Failed to modify QP to INIT\n");
        return false;
    }
    return true;
}

bool UcPingpong::connect(const Dest& remote) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = opts_.mtu;
    attr.dest_qp_num = static_cast<uint32_t>(remote.qpn);
    attr.rq_psn = static_cast<uint32_t>(remote.psn);
    attr.ah_attr.dlid = static_cast<uint16_t>(remote.lid);
    attr.ah_attr.sl = static_cast<uint8_t>(opts_.sl);
    attr.ah_attr.port_num = static_cast<uint8_t>(opts_.ib_port);
    if (remote.gid.global.interface_id) {
        attr.ah_attr.is_global = 1;
        attr.ah_attr.grh.hop_limit = 1;
        attr.ah_attr.grh.dgid = remote.gid;
        attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(opts_.gid_index);
    }
    if (ibv_modify_qp(qp(), &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)) {
        std::fprintf(stderr, "Failed to modify QP to RTR\n");
        return false;
    }

    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = static_cast<uint32_t>(mine_.psn);
    if (ibv_modify_qp(qp(), &attr, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
        std::fprintf(stderr, "Failed to modify QP to RTS\n");
        return false;
    }
    return true;
}

int UcPingpong::post_recv(int count) {
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
        if (ibv_post_recv(qp(), &wr, &bad))
            break;
    return posted;
}

int UcPingpong::post_send() {
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
    return ibv_post_send(qp(), &wr, &bad);
}

int UcPingpong::run() {
    ExchangeState state;
    state.routs = post_recv(rx_depth_);
    if (state.routs < rx_depth_) {
        std::fprintf(stderr, "Couldn't post receive (%d)\n", state.routs);
        return 1;
    }

    if (opts_.use_event && ibv_req_notify_cq(res_.cq, 0)) {
        std::fprintf(stderr, "Couldn't request CQ notification\n");
        return 1;
    }

    if (!query_local_address(res_.context, opts_, mine_, true, "can't read sgid of index %d\n"))
        return 1;
    mine_.qpn = static_cast<int>(qp()->qp_num);
    mine_.psn = random_psn();
    print_address("local address: ", mine_);

    const bool client = opts_.servername != nullptr;
    std::optional<Dest> remote = client
        ? client_exchange(opts_.servername, opts_.port, mine_)
        : server_exchange(opts_.port, mine_, [this](const Dest& peer) { return connect(peer); });
    if (!remote)
        return 1;
    print_address("remote address:", *remote);

    if (client && !connect(*remote))
        return 1;

    state.pending = kRecvWrid;
    if (client) {
        if (opts_.validate_buf)
            mark_pages(res_.buf.get(), opts_.size, page_size_);
        if (post_send()) {
            std::fprintf(stderr, "Couldn't post send\n");
            return 1;
        }
        state.pending |= kSendWrid;
    }

    timeval start{}, end{};
    if (gettimeofday(&start, nullptr)) {
        std::perror("gettimeofday");
        return 1;
    }

    if (int status = run_exchanges(
            res_, opts_, rx_depth_, state, [this](int n) { return post_recv(n); }, [this] { return post_send(); }))
        return status;

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
    const ProgramSpec spec{"p:d:i:s:m:r:n:l:eg:c", kLongOptions, kUsageLines};
    if (auto status = parse_options(argc, argv, spec, opts))
        return *status;

    long page_size = sysconf(_SC_PAGESIZE);

    DeviceList dev_list = get_device_list();
    if (!dev_list)
        return 1;
    ibv_device* dev = select_device(dev_list.get(), opts.ib_devname);
    if (!dev)
        return 1;

    UcPingpong pingpong(opts, page_size);
    if (!pingpong.init(dev))
        return 1;
    return pingpong.run();
}
