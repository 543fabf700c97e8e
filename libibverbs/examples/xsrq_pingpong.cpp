// ibv_xsrq_pingpong: the ping-pong test over the XRC transport. Every
// process opens the XRC domain named by the file /tmp/xrc_domain, creates
// one XRC SRQ in it and, per peer, an XRC receive (target, TGT) QP and an
// XRC send (initiator, INI) QP. A sender addresses the peer's SRQ by its
// number in each work request; the INI QP only picks the path. The server
// takes -c clients one after the other on its TCP port and answers every
// message of a client, using the client's SRQ number but the clients' INI
// QPs in turn: processes on one host that share the domain file share the
// domain, so any of their TGT QPs can deliver into any of their SRQs.
//
// The address record, the messages, the order of the verbs calls and the
// exit statuses are those of ibverbs-utils 44 (see pingpong_common.h);
// so are its quirks: -m defaults to 1024 although the usage text says
// 2048, -i accepts 0, -c is ignored by a client, only the last send to each
// peer is signaled, and the send QP for the k-th message to peer i is the
// one of peer (i + k) mod clients. One deviation: a peer that closes its
// connection in the middle of a record ends the run with the read error
// message, where the reference retries the read forever.

#include "pingpong_common.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace {

using namespace pingpong;

constexpr const char* kUsageLines[] = {
    "  -p, --port=<port>      listen on/connect to port <port> (default 18515)",
    "  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)",
    "  -i, --ib-port=<port>   use port <port> of IB device (default 1)",
    "  -s, --size=<size>      size of message to exchange (default 4096)",
    "  -m, --mtu=<size>       path MTU (default 2048)",
    "  -c, --clients=<n>      number of clients (on server only, default 1)",
    "  -n, --num_tests=<n>    number of tests per client (default 5)",
    "  -l, --sl=<sl>          service level value",
    "  -e, --events           sleep on CQ events (default poll)",
    "  -o, --odp\t\t    use on demand paging",
    "  -g, --gid-idx=<gid index> local port gid index",
};

// The order matters: getopt lists ambiguous abbreviations in table order.
// One option a line:
// clang-format off
constexpr option kLongOptions[] = {
    {"port", required_argument, nullptr, 'p'},
    {"ib-dev", required_argument, nullptr, 'd'},
    {"ib-port", required_argument, nullptr, 'i'},
    {"size", required_argument, nullptr, 's'},
    {"mtu", required_argument, nullptr, 'm'},
    {"clients", required_argument, nullptr, 'c'},
    {"num_tests", required_argument, nullptr, 'n'},
    {"sl", required_argument, nullptr, 'l'},
    {"events", no_argument, nullptr, 'e'},
    {"odp", no_argument, nullptr, 'o'},
    {"gid-idx", required_argument, nullptr, 'g'},
    {nullptr, 0, nullptr, 0},
};
// clang-format on

constexpr char kDomainFile[] = "/tmp/xrc_domain";

// One address record: "LLLL:RRRRRR:SSSSSS:PPPPPP:QQQQQQ:<32 hex digits>"
// (LID, receive QPN, send QPN, PSN, SRQ number, GID) and its NUL.
constexpr std::size_t kRecordSize = 66;
// What each side sends when it is done with the data exchange.
constexpr char kEndMark[] = "END";
constexpr std::size_t kEndMarkSize = sizeof(kEndMark);

struct Settings {
    int port = 18515;
    const char* ib_devname = nullptr;
    int ib_port = 1;
    int size = 4096;
    // The reference's usage text says 2048, its binary starts with 1024.
    ibv_mtu mtu = IBV_MTU_1024;
    int num_clients = 1;
    int num_tests = 5;
    int sl = 0;
    bool use_event = false;
    bool use_odp = false;
    int gid_index = -1;
    const char* servername = nullptr;
};

// What a process knows of one peer. my_psn goes out in the record sent to
// that peer; the other fields come from the peer's record.
struct Peer {
    ibv_gid gid{};
    int lid = 0;
    int recv_qpn = 0;
    int send_qpn = 0;
    int my_psn = 0;
    int peer_psn = 0;
    int srqn = 0;
    int sent = 0;  // messages posted to this peer so far
    Socket conn;
};

// The GID as the address lines print it: IPv6 notation, or, when that
// would not fit the reference's 33-byte buffer, the wire digits (which is
// what the reference's buffer still holds for a peer's GID).
std::string printable_gid(const ibv_gid& gid) {
    char text[33];
    if (inet_ntop(AF_INET6, gid.raw, text, sizeof(text)))
        return text;
    return gid_to_wire(gid);
}

void print_address_line(const char* who, int lid, int recv_qpn, int send_qpn, int psn, int srqn, const ibv_gid& gid) {
    std::printf("%8s: LID %04x, QPN RECV %06x SEND %06x, PSN %06x, SRQN %06x, GID %s\n", who, lid, recv_qpn, send_qpn,
                psn, srqn, printable_gid(gid).c_str());
}

// read() until `len` bytes have come. False after printing the reference's
// perror line and "got/len: Couldn't read remote <what>".
bool read_exact(int fd, char* buf, std::size_t len, const char* what) {
    std::size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            std::perror("client read");
            std::fprintf(stderr, "%d/%d: Couldn't read remote %s\n", static_cast<int>(got), static_cast<int>(len),
                         what);
            return false;
        }
        got += static_cast<std::size_t>(n);
    }
    return true;
}

class XsrqPingpong {
public:
    XsrqPingpong(const Settings& opts, long page_size) : opts_(opts), page_size_(page_size) {}
    XsrqPingpong(const XsrqPingpong&) = delete;
    XsrqPingpong& operator=(const XsrqPingpong&) = delete;
    ~XsrqPingpong() { release_silently(); }

    int run();

private:
    bool allocate_tables();
    bool open_device();
    bool init();
    bool create_qps();
    bool post_recv(int count);
    int post_send(int index);
    bool send_local(int fd, int index);
    bool receive_remote(int fd, int index);
    bool connect_qps(int index);
    bool client_connect();
    bool server_connect();
    int find_qp(uint32_t qpn) const;
    bool wait_cq_event();
    int exchange();
    bool send_end_mark(int index);
    bool receive_end_mark(int index);
    bool terminate();
    bool close();
    void release_silently();

    const Settings& opts_;
    long page_size_;

    std::unique_ptr<char, FreeDeleter> buf_;
    ibv_context* context_ = nullptr;
    ibv_comp_channel* channel_ = nullptr;
    ibv_pd* pd_ = nullptr;
    ibv_mr* mr_ = nullptr;
    int domain_fd_ = -1;
    ibv_xrcd* xrcd_ = nullptr;
    ibv_cq* recv_cq_ = nullptr;
    ibv_cq* send_cq_ = nullptr;
    ibv_srq* srq_ = nullptr;
    std::vector<ibv_qp*> recv_qps_;
    std::vector<ibv_qp*> send_qps_;
    std::vector<Peer> peers_;
    int lid_ = 0;
    unsigned int unacked_events_ = 0;
};

bool XsrqPingpong::allocate_tables() {
    // The reference callocs its tables and stops without a word when that
    // fails, as it does for a negative -c.
    if (opts_.num_clients < 0)
        return false;
    try {
        auto n = static_cast<std::size_t>(opts_.num_clients);
        recv_qps_.assign(n, nullptr);
        send_qps_.assign(n, nullptr);
        peers_ = std::vector<Peer>(n);
    } catch (const std::bad_alloc&) {
        return false;
    } catch (const std::length_error&) {
        return false;
    }
    return true;
}

bool XsrqPingpong::open_device() {
    ibv_device** list = ibv_get_device_list(nullptr);
    if (!list) {
        // No newline: the next message continues the line, as in the reference.
        std::fprintf(stderr, "Failed to get IB devices list");
        std::fprintf(stderr, "Failed to open device\n");
        return false;
    }
    DeviceList owned(list);

    ibv_device* dev = list[0];
    if (opts_.ib_devname) {
        dev = nullptr;
        for (ibv_device** d = list; *d; ++d)
            if (std::strcmp(ibv_get_device_name(*d), opts_.ib_devname) == 0) {
                dev = *d;
                break;
            }
    }
    if (!dev) {
        std::fprintf(stderr, "IB device %s not found\n", opts_.ib_devname ? opts_.ib_devname : "");
        std::fprintf(stderr, "Failed to open device\n");
        return false;
    }

    context_ = pingpong::open_device(dev);
    if (!context_) {
        std::fprintf(stderr, "Failed to open device\n");
        return false;
    }
    return true;
}

bool XsrqPingpong::init() {
    if (!allocate_tables() || !open_device())
        return false;

    int access = IBV_ACCESS_LOCAL_WRITE;
    if (opts_.use_odp) {
        ibv_device_attr_ex attrx{};
        if (ibv_query_device_ex(context_, nullptr, &attrx)) {
            std::fprintf(stderr, "Couldn't query device for its features\n");
            return false;
        }
        constexpr uint32_t kXrcCaps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_SRQ_RECV;
        if (!(attrx.odp_caps.general_caps & IBV_ODP_SUPPORT) || (attrx.xrc_odp_caps & kXrcCaps) != kXrcCaps) {
            std::fprintf(stderr,
                         "The device isn't ODP capable or does not support XRC send, receive and srq with ODP\n");
            return false;
        }
        access |= IBV_ACCESS_ON_DEMAND;
    }

    ibv_port_attr port_attr{};
    if (ibv_query_port(context_, static_cast<uint8_t>(opts_.ib_port), &port_attr)) {
        std::fprintf(stderr, "Failed to get port info\n");
        return false;
    }
    lid_ = port_attr.lid;
    if (port_attr.link_layer != IBV_LINK_LAYER_ETHERNET && !lid_) {
        std::fprintf(stderr, "Couldn't get local LID\n");
        return false;
    }

    // memalign semantics: a negative size is a huge one, and fails.
    void* p = nullptr;
    if (posix_memalign(&p, static_cast<std::size_t>(page_size_), static_cast<std::size_t>(opts_.size)) != 0 || !p) {
        std::fprintf(stderr, "Couldn't allocate work buf.\n");
        return false;
    }
    buf_.reset(static_cast<char*>(p));
    std::memset(buf_.get(), 0, static_cast<std::size_t>(opts_.size));

    if (opts_.use_event) {
        channel_ = ibv_create_comp_channel(context_);
        if (!channel_) {
            std::fprintf(stderr, "Couldn't create completion channel\n");
            return false;
        }
    }

    pd_ = ibv_alloc_pd(context_);
    if (!pd_) {
        std::fprintf(stderr, "Couldn't allocate PD\n");
        return false;
    }

    mr_ = ibv_reg_mr(pd_, buf_.get(), static_cast<std::size_t>(opts_.size), access);
    if (!mr_) {
        std::fprintf(stderr, "Couldn't register MR\n");
        return false;
    }

    // The file names the domain: every process that opens it shares one.
    domain_fd_ = ::open(kDomainFile, O_RDONLY | O_CREAT, S_IRUSR | S_IRGRP);
    if (domain_fd_ < 0) {
        std::fprintf(stderr, "Couldn't create the file for the XRC Domain but not stopping %d\n", errno);
        domain_fd_ = -1;
    }

    ibv_xrcd_init_attr xrcd_attr{};
    xrcd_attr.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    xrcd_attr.fd = domain_fd_;
    xrcd_attr.oflags = O_CREAT;
    xrcd_ = ibv_open_xrcd(context_, &xrcd_attr);
    if (!xrcd_) {
        std::fprintf(stderr, "Couldn't Open the XRC Domain %d\n", errno);
        return false;
    }

    const int n = opts_.num_clients;
    recv_cq_ = ibv_create_cq(context_, n, &recv_cq_, channel_, 0);
    if (!recv_cq_) {
        std::fprintf(stderr, "Couldn't create recv CQ\n");
        return false;
    }
    if (opts_.use_event && ibv_req_notify_cq(recv_cq_, 0)) {
        std::fprintf(stderr, "Couldn't request CQ notification\n");
        return false;
    }

    send_cq_ = ibv_create_cq(context_, n, nullptr, nullptr, 0);
    if (!send_cq_) {
        std::fprintf(stderr, "Couldn't create send CQ\n");
        return false;
    }

    ibv_srq_init_attr_ex srq_attr{};
    srq_attr.attr.max_wr = static_cast<uint32_t>(n);
    srq_attr.attr.max_sge = 1;
    srq_attr.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
    srq_attr.srq_type = IBV_SRQT_XRC;
    srq_attr.pd = pd_;
    srq_attr.xrcd = xrcd_;
    srq_attr.cq = recv_cq_;
    srq_ = ibv_create_srq_ex(context_, &srq_attr);
    if (!srq_) {
        std::fprintf(stderr, "Couldn't create SRQ\n");
        return false;
    }

    return create_qps();
}

bool XsrqPingpong::create_qps() {
    auto to_init = [this](ibv_qp* qp, int access) {
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_INIT;
        attr.pkey_index = 0;
        attr.port_num = static_cast<uint8_t>(opts_.ib_port);
        attr.qp_access_flags = static_cast<unsigned int>(access);
        return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0;
    };

    for (int i = 0; i < opts_.num_clients; ++i) {
        auto idx = static_cast<std::size_t>(i);

        ibv_qp_init_attr_ex recv_attr{};
        recv_attr.qp_type = IBV_QPT_XRC_RECV;
        recv_attr.comp_mask = IBV_QP_INIT_ATTR_XRCD;
        recv_attr.xrcd = xrcd_;
        recv_qps_[idx] = ibv_create_qp_ex(context_, &recv_attr);
        if (!recv_qps_[idx]) {
            std::fprintf(stderr, "Couldn't create recv QP[%d] errno %d\n", i, errno);
            return false;
        }
        if (!to_init(recv_qps_[idx], IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)) {
            std::fprintf(stderr, "Failed to modify recv QP[%d] to INIT\n", i);
            return false;
        }

        ibv_qp_init_attr_ex send_attr{};
        send_attr.qp_type = IBV_QPT_XRC_SEND;
        send_attr.send_cq = send_cq_;
        send_attr.cap.max_send_wr = static_cast<uint32_t>(opts_.num_clients * opts_.num_tests);
        send_attr.cap.max_send_sge = 1;
        send_attr.comp_mask = IBV_QP_INIT_ATTR_PD;
        send_attr.pd = pd_;
        send_qps_[idx] = ibv_create_qp_ex(context_, &send_attr);
        if (!send_qps_[idx]) {
            std::fprintf(stderr, "Couldn't create send QP[%d] errno %d\n", i, errno);
            return false;
        }
        if (!to_init(send_qps_[idx], 0)) {
            std::fprintf(stderr, "Failed to modify send QP[%d] to INIT\n", i);
            return false;
        }
    }
    return true;
}

bool XsrqPingpong::post_recv(int count) {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(buf_.get());
    sge.length = static_cast<uint32_t>(opts_.size);
    sge.lkey = mr_->lkey;
    ibv_recv_wr wr{};
    wr.wr_id = reinterpret_cast<uintptr_t>(this);
    wr.sg_list = &sge;
    wr.num_sge = 1;

    for (ibv_recv_wr* bad; count > 0; --count)
        if (ibv_post_srq_recv(srq_, &wr, &bad)) {
            std::fprintf(stderr, "Failed to post receive to SRQ\n");
            return false;
        }
    return true;
}

int XsrqPingpong::post_send(int index) {
    Peer& peer = peers_[static_cast<std::size_t>(index)];
    // The path rotates over the INI QPs; the peer's SRQ number picks the
    // destination. Only the last message to a peer asks for a completion,
    // so the send CQ (one entry per peer) cannot overflow.
    int path = (index + peer.sent) % opts_.num_clients;
    ++peer.sent;

    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(buf_.get());
    sge.length = static_cast<uint32_t>(opts_.size);
    sge.lkey = mr_->lkey;
    ibv_send_wr wr{};
    wr.wr_id = static_cast<uint64_t>(index);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = peer.sent >= opts_.num_tests ? IBV_SEND_SIGNALED : 0;
    wr.qp_type.xrc.remote_srqn = static_cast<uint32_t>(peer.srqn);
    ibv_send_wr* bad;
    return ibv_post_send(send_qps_[static_cast<std::size_t>(path)], &wr, &bad);
}

bool XsrqPingpong::send_local(int fd, int index) {
    Peer& peer = peers_[static_cast<std::size_t>(index)];

    ibv_gid gid{};
    if (opts_.gid_index >= 0 && ibv_query_gid(context_, static_cast<uint8_t>(opts_.ib_port), opts_.gid_index, &gid)) {
        std::fprintf(stderr, "can't read sgid of index %d\n", opts_.gid_index);
        return false;
    }

    peer.my_psn = random_psn();
    uint32_t srqn = 0;
    if (ibv_get_srq_num(srq_, &srqn)) {
        std::fprintf(stderr, "Couldn't get SRQ num\n");
        return false;
    }

    const int recv_qpn = static_cast<int>(recv_qps_[static_cast<std::size_t>(index)]->qp_num);
    const int send_qpn = static_cast<int>(send_qps_[static_cast<std::size_t>(index)]->qp_num);
    print_address_line("local", lid_, recv_qpn, send_qpn, peer.my_psn, static_cast<int>(srqn), gid);

    std::array<char, kRecordSize> record{};
    std::snprintf(record.data(), record.size(), "%04x:%06x:%06x:%06x:%06x:%32s", lid_, recv_qpn, send_qpn, peer.my_psn,
                  static_cast<int>(srqn), gid_to_wire(gid).c_str());
    if (write(fd, record.data(), record.size()) != static_cast<ssize_t>(record.size())) {
        std::fprintf(stderr, "Couldn't send local address\n");
        return false;
    }
    return true;
}

bool XsrqPingpong::receive_remote(int fd, int index) {
    std::array<char, kRecordSize + 1> record{};
    std::string what = "address [" + std::to_string(index) + "]";
    if (!read_exact(fd, record.data(), kRecordSize, what.c_str()))
        return false;

    Peer& peer = peers_[static_cast<std::size_t>(index)];
    unsigned int lid = 0, recv_qpn = 0, send_qpn = 0, psn = 0, srqn = 0;
    char wire_gid[kRecordSize + 1] = {};
    std::sscanf(record.data(), "%x:%x:%x:%x:%x:%66s", &lid, &recv_qpn, &send_qpn, &psn, &srqn, wire_gid);
    peer.lid = static_cast<int>(lid);
    peer.recv_qpn = static_cast<int>(recv_qpn);
    peer.send_qpn = static_cast<int>(send_qpn);
    peer.peer_psn = static_cast<int>(psn);
    peer.srqn = static_cast<int>(srqn);
    peer.gid = gid_from_wire(wire_gid);

    print_address_line("remote", peer.lid, peer.recv_qpn, peer.send_qpn, peer.peer_psn, peer.srqn, peer.gid);
    return true;
}

bool XsrqPingpong::connect_qps(int index) {
    const Peer& peer = peers_[static_cast<std::size_t>(index)];
    ibv_qp* recv_qp = recv_qps_[static_cast<std::size_t>(index)];
    ibv_qp* send_qp = send_qps_[static_cast<std::size_t>(index)];

    auto path_to_peer = [&](ibv_qp_attr& attr) {
        attr.path_mtu = opts_.mtu;
        attr.rq_psn = static_cast<uint32_t>(peer.peer_psn);
        attr.ah_attr.dlid = static_cast<uint16_t>(peer.lid);
        attr.ah_attr.sl = static_cast<uint8_t>(opts_.sl);
        attr.ah_attr.port_num = static_cast<uint8_t>(opts_.ib_port);
        if (peer.gid.global.interface_id) {
            attr.ah_attr.is_global = 1;
            attr.ah_attr.grh.hop_limit = 5;
            attr.ah_attr.grh.dgid = peer.gid;
            attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(opts_.gid_index);
        }
    };

    // The TGT QP answers the peer's INI QP.
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.dest_qp_num = static_cast<uint32_t>(peer.send_qpn);
    attr.min_rnr_timer = 12;
    path_to_peer(attr);
    if (ibv_modify_qp(recv_qp, &attr,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
        std::fprintf(stderr, "Failed to modify recv QP[%d] to RTR\n", index);
        return false;
    }

    attr = ibv_qp_attr{};
    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = 14;
    attr.sq_psn = static_cast<uint32_t>(peer.my_psn);
    if (ibv_modify_qp(recv_qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN)) {
        std::fprintf(stderr, "Failed to modify recv QP[%d] to RTS\n", index);
        return false;
    }

    // The INI QP talks to the peer's TGT QP.
    attr = ibv_qp_attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.dest_qp_num = static_cast<uint32_t>(peer.recv_qpn);
    path_to_peer(attr);
    if (ibv_modify_qp(send_qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)) {
        std::fprintf(stderr, "Failed to modify send QP[%d] to RTR\n", index);
        return false;
    }

    attr = ibv_qp_attr{};
    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = 14;
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;
    attr.sq_psn = static_cast<uint32_t>(peer.my_psn);
    if (ibv_modify_qp(send_qp, &attr,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                          IBV_QP_MAX_QP_RD_ATOMIC)) {
        std::fprintf(stderr, "Failed to modify send QP[%d] to RTS\n", index);
        return false;
    }
    return true;
}

bool XsrqPingpong::client_connect() {
    Socket sock = connect_to_server(opts_.servername, static_cast<unsigned int>(opts_.port));
    if (!sock.valid())
        return false;
    if (!send_local(sock.get(), 0))
        return false;  // the socket closes here, as in the reference
    int fd = sock.get();
    peers_[0].conn = std::move(sock);
    return receive_remote(fd, 0) && connect_qps(0);
}

bool XsrqPingpong::server_connect() {
    Socket listener = listen_on_port(static_cast<unsigned int>(opts_.port), opts_.num_clients);
    if (!listener.valid())
        return false;

    for (int i = 0; i < opts_.num_clients; ++i) {
        Socket conn(accept(listener.get(), nullptr, nullptr));
        if (!conn.valid()) {
            std::fprintf(stderr, "accept() failed for client %d\n", i);
            return false;
        }
        int fd = conn.get();
        peers_[static_cast<std::size_t>(i)].conn = std::move(conn);
        if (!receive_remote(fd, i) || !send_local(fd, i) || !connect_qps(i))
            return false;
    }
    listener = Socket();

    // The server speaks first, to every client.
    for (int i = 0; i < opts_.num_clients; ++i)
        post_send(i);
    return true;
}

int XsrqPingpong::find_qp(uint32_t qpn) const {
    if (opts_.num_clients == 1)
        return 0;
    for (int i = 0; i < opts_.num_clients; ++i)
        if (recv_qps_[static_cast<std::size_t>(i)]->qp_num == qpn)
            return i;
    // Reported, then treated as the first client's, like the reference.
    std::fprintf(stderr, "Unable to find qp %x\n", qpn);
    return 0;
}

bool XsrqPingpong::wait_cq_event() {
    ibv_cq* ev_cq = nullptr;
    void* ev_ctx = nullptr;
    if (ibv_get_cq_event(channel_, &ev_cq, &ev_ctx)) {
        std::fprintf(stderr, "Failed to get cq_event\n");
        return false;
    }
    if (ev_cq != recv_cq_) {
        std::fprintf(stderr, "CQ event for unknown CQ %p\n", static_cast<void*>(ev_cq));
        return false;
    }
    if (ibv_req_notify_cq(recv_cq_, 0)) {
        std::fprintf(stderr, "Couldn't request CQ notification\n");
        return false;
    }
    ++unacked_events_;
    return true;
}

// Every receive is answered until the peer has had num_tests messages;
// then the one signaled send per peer is collected.
int XsrqPingpong::exchange() {
    const int total = opts_.num_clients * opts_.num_tests;
    int done = 0;
    ibv_wc wc{};
    while (done < total) {
        if (opts_.use_event && !wait_cq_event())
            return 1;

        for (;;) {
            int ne = ibv_poll_cq(recv_cq_, 1, &wc);
            if (ne < 0) {
                std::fprintf(stderr, "Error polling cq %d\n", ne);
                return 1;
            }
            if (ne == 0)
                break;
            if (wc.status != IBV_WC_SUCCESS) {
                std::fprintf(stderr, "Work completion error %d\n", wc.status);
                return 1;
            }

            post_recv(ne);
            int index = find_qp(wc.qp_num);
            if (peers_[static_cast<std::size_t>(index)].sent < opts_.num_tests)
                post_send(index);
            done += ne;
        }
    }

    for (int completed = 0; completed < opts_.num_clients;) {
        int ne = ibv_poll_cq(send_cq_, 1, &wc);
        if (ne < 0) {
            std::fprintf(stderr, "Error polling cq %d\n", ne);
            return 1;
        }
        completed += ne;
    }

    if (opts_.use_event) {
        ibv_ack_cq_events(recv_cq_, unacked_events_);
        unacked_events_ = 0;
    }
    return 0;
}

bool XsrqPingpong::send_end_mark(int index) {
    if (write(peers_[static_cast<std::size_t>(index)].conn.get(), kEndMark, kEndMarkSize) !=
        static_cast<ssize_t>(kEndMarkSize)) {
        std::fprintf(stderr, "Couldn't send termination ack\n");
        return false;
    }
    return true;
}

bool XsrqPingpong::receive_end_mark(int index) {
    char mark[kEndMarkSize + 1] = {};
    if (!read_exact(peers_[static_cast<std::size_t>(index)].conn.get(), mark, kEndMarkSize, "termination ack"))
        return false;
    if (std::strcmp(mark, kEndMark) != 0) {
        std::fprintf(stderr, "Invalid termination ack was accepted\n");
        return false;
    }
    return true;
}

// Nobody tears down before every peer is done: a server's last answer to
// one client may travel through another client's TGT QP.
bool XsrqPingpong::terminate() {
    if (opts_.servername)
        return send_end_mark(0) && receive_end_mark(0);
    for (int i = 0; i < opts_.num_clients; ++i)
        if (!receive_end_mark(i))
            return false;
    for (int i = 0; i < opts_.num_clients; ++i)
        if (!send_end_mark(i))
            return false;
    return true;
}

// The reference's teardown order and messages; stops at the first failure.
bool XsrqPingpong::close() {
    for (int i = 0; i < opts_.num_clients; ++i) {
        auto idx = static_cast<std::size_t>(i);
        if (ibv_destroy_qp(send_qps_[idx])) {
            std::fprintf(stderr, "Couldn't destroy INI QP[%d]\n", i);
            return false;
        }
        send_qps_[idx] = nullptr;
        if (ibv_destroy_qp(recv_qps_[idx])) {
            std::fprintf(stderr, "Couldn't destroy TGT QP[%d]\n", i);
            return false;
        }
        recv_qps_[idx] = nullptr;
        peers_[idx].conn = Socket();
    }

    if (ibv_destroy_srq(srq_)) {
        std::fprintf(stderr, "Couldn't destroy SRQ\n");
        return false;
    }
    srq_ = nullptr;
    if (xrcd_ && ibv_close_xrcd(xrcd_)) {
        std::fprintf(stderr, "Couldn't close the XRC Domain\n");
        return false;
    }
    xrcd_ = nullptr;
    if (domain_fd_ >= 0 && ::close(domain_fd_)) {
        std::fprintf(stderr, "Couldn't close the file for the XRC Domain\n");
        return false;
    }
    domain_fd_ = -1;
    if (ibv_destroy_cq(send_cq_)) {
        std::fprintf(stderr, "Couldn't destroy send CQ\n");
        return false;
    }
    send_cq_ = nullptr;
    if (ibv_destroy_cq(recv_cq_)) {
        std::fprintf(stderr, "Couldn't destroy recv CQ\n");
        return false;
    }
    recv_cq_ = nullptr;
    if (ibv_dereg_mr(mr_)) {
        std::fprintf(stderr, "Couldn't deregister MR\n");
        return false;
    }
    mr_ = nullptr;
    if (ibv_dealloc_pd(pd_)) {
        std::fprintf(stderr, "Couldn't deallocate PD\n");
        return false;
    }
    pd_ = nullptr;
    if (channel_ && ibv_destroy_comp_channel(channel_)) {
        std::fprintf(stderr, "Couldn't destroy completion channel\n");
        return false;
    }
    channel_ = nullptr;
    if (ibv_close_device(context_)) {
        std::fprintf(stderr, "Couldn't release context\n");
        return false;
    }
    context_ = nullptr;
    buf_.reset();
    return true;
}

// Error paths: whatever is left goes away without a word. (Unacknowledged
// CQ events would make ibv_destroy_cq wait forever.)
void XsrqPingpong::release_silently() {
    if (recv_cq_ && unacked_events_)
        ibv_ack_cq_events(recv_cq_, unacked_events_);
    unacked_events_ = 0;
    for (std::size_t i = 0; i < send_qps_.size(); ++i) {
        if (send_qps_[i])
            ibv_destroy_qp(send_qps_[i]);
        if (recv_qps_[i])
            ibv_destroy_qp(recv_qps_[i]);
    }
    send_qps_.clear();
    recv_qps_.clear();
    if (srq_)
        ibv_destroy_srq(srq_);
    if (xrcd_)
        ibv_close_xrcd(xrcd_);
    if (domain_fd_ >= 0)
        ::close(domain_fd_);
    if (send_cq_)
        ibv_destroy_cq(send_cq_);
    if (recv_cq_)
        ibv_destroy_cq(recv_cq_);
    if (mr_)
        ibv_dereg_mr(mr_);
    if (pd_)
        ibv_dealloc_pd(pd_);
    if (channel_)
        ibv_destroy_comp_channel(channel_);
    if (context_)
        ibv_close_device(context_);
    srq_ = nullptr;
    xrcd_ = nullptr;
    domain_fd_ = -1;
    send_cq_ = recv_cq_ = nullptr;
    mr_ = nullptr;
    pd_ = nullptr;
    channel_ = nullptr;
    context_ = nullptr;
}

int XsrqPingpong::run() {
    if (!init())
        return 1;

    if (!post_recv(opts_.num_clients)) {
        std::fprintf(stderr, "Couldn't post receives\n");
        return 1;
    }

    if (!(opts_.servername ? client_connect() : server_connect()))
        return 1;

    if (exchange() || !terminate() || !close())
        return 1;

    std::printf("success\n");
    return 0;
}

// Numeric options go through strtol and land in an int, as in the
// reference (so out-of-range values wrap the same way).
int parse_int(const char* text) { return static_cast<int>(std::strtol(text, nullptr, 0)); }

// Returns an exit status when the program must stop, nullopt otherwise.
std::optional<int> parse_settings(int argc, char* argv[], Settings& opts) {
    auto reject = [&]() -> std::optional<int> {
        print_usage(argv[0], kUsageLines);
        return 1;
    };

    for (;;) {
        int c = getopt_long(argc, argv, "p:d:i:s:m:n:l:eog:c:", kLongOptions, nullptr);
        if (c == -1)
            break;
        switch (c) {
        case 'p':
            opts.port = parse_int(optarg);
            if (opts.port < 0 || opts.port > 65535)
                return reject();
            break;
        case 'd': opts.ib_devname = optarg; break;
        case 'i':
            opts.ib_port = parse_int(optarg);
            if (opts.ib_port < 0)
                return reject();
            break;
        case 's': opts.size = parse_int(optarg); break;
        case 'm':
            opts.mtu = mtu_from_bytes(parse_int(optarg));
            if (opts.mtu == 0)
                return reject();
            break;
        case 'c': opts.num_clients = parse_int(optarg); break;
        case 'n': opts.num_tests = parse_int(optarg); break;
        case 'l': opts.sl = parse_int(optarg); break;
        case 'e': opts.use_event = true; break;
        case 'o': opts.use_odp = true; break;
        case 'g': opts.gid_index = parse_int(optarg); break;
        default: return reject();
        }
    }

    if (optind == argc - 1) {
        opts.servername = argv[optind];
        // -c is the server's: a client always has exactly one peer.
        opts.num_clients = 1;
    } else if (optind < argc) {
        return reject();
    }
    return std::nullopt;
}

}  // namespace

int main(int argc, char* argv[]) {
    seed_psn();

    Settings opts;
    if (auto status = parse_settings(argc, argv, opts))
        return *status;

    XsrqPingpong pingpong(opts, sysconf(_SC_PAGESIZE));
    return pingpong.run();
}
