// The connection manager against the kernel (rxe0 in the test VM, 10.78.0.1)
// or against the emulated rdma_cm of tests/uverbs-sim (CM_TEST_DEVICE and
// CM_TEST_ADDR name its device and port address).
// The same source is built twice: against our librdmacm and against
// Debian's. Both binaries must pass, so every expectation here is the
// reference's behaviour, observed, not assumed: events, statuses, errnos,
// private data, and no leaked fds or kernel ids.
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace {

const char* env_or(const char* name, const char* def) {
    const char* v = getenv(name);
    return v && *v ? v : def;
}

const char* const kLocal = env_or("CM_TEST_ADDR", "10.78.0.1");
const char* const kDevice = env_or("CM_TEST_DEVICE", "rxe0");
constexpr const char* kNoRoute = "10.99.99.99";

int count_fds() {
    int n = 0;
    DIR* d = opendir("/proc/self/fd");
    while (dirent* e = readdir(d))
        if (e->d_name[0] != '.')
            ++n;
    closedir(d);
    return n - 1;
}

// Kernel cm_ids of this process, from the rdma tool (iproute2); -1 when the
// tool is missing.
int kernel_cm_ids() {
    char cmd[128];
    std::snprintf(cmd, sizeof(cmd), "rdma resource show cm_id 2>/dev/null | grep -c 'pid %d '", getpid());
    FILE* f = popen(cmd, "r");
    if (!f)
        return -1;
    int n = -1;
    if (std::fscanf(f, "%d", &n) != 1)
        n = -1;
    pclose(f);
    return n;
}

sockaddr_in ip4(const char* a, uint16_t port) {
    sockaddr_in s{};
    s.sin_family = AF_INET;
    s.sin_port = htons(port);
    inet_pton(AF_INET, a, &s.sin_addr);
    return s;
}

sockaddr* sa(sockaddr_in& s) { return reinterpret_cast<sockaddr*>(&s); }

uint16_t next_port() {
    static uint16_t port = static_cast<uint16_t>(20000 + (getpid() % 1000) * 10);
    return port++;
}

// Waits for the next event on a channel, at most timeout_ms.
rdma_cm_event* next_event(rdma_event_channel* ch, int timeout_ms = 10000) {
    pollfd p{ch->fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) != 1)
        return nullptr;
    rdma_cm_event* e = nullptr;
    if (rdma_get_cm_event(ch, &e))
        return nullptr;
    return e;
}

// Expects an event of the given type; acks it unless keep is set.
#define EXPECT_EVENT(ch, type, out)                                                             \
    do {                                                                                        \
        out = next_event(ch);                                                                   \
        ASSERT_NE(out, nullptr) << "no event, expected " << rdma_event_str(type);               \
        ASSERT_EQ(out->event, type) << rdma_event_str(out->event) << " status " << out->status; \
    } while (0)

struct Channel {
    rdma_event_channel* ch = rdma_create_event_channel();
    ~Channel() {
        if (ch)
            rdma_destroy_event_channel(ch);
    }
};

ibv_qp_init_attr rc_attr() {
    ibv_qp_init_attr a{};
    a.cap.max_send_wr = a.cap.max_recv_wr = 4;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    a.qp_type = IBV_QPT_RC;
    a.sq_sig_all = 1;
    return a;
}

class Cm : public ::testing::Test {
protected:
    void SetUp() override {
        fds_ = count_fds();
        ids_ = kernel_cm_ids();
    }
    void TearDown() override {
        if (HasFailure())
            return;
        EXPECT_EQ(count_fds(), fds_) << "fd leak";
        if (ids_ >= 0) {
            EXPECT_EQ(kernel_cm_ids(), ids_) << "kernel cm_id leak";
        }
    }
    int fds_ = 0;
    int ids_ = 0;
};

// Devices are opened once per process and stay open; make that happen
// before any test counts fds.
class Warmup : public ::testing::Environment {
public:
    void SetUp() override {
        int n = 0;
        ibv_context** l = rdma_get_devices(&n);
        ASSERT_NE(l, nullptr);
        rdma_free_devices(l);
        Channel c;
        rdma_cm_id* id = nullptr;
        ASSERT_EQ(rdma_create_id(c.ch, &id, nullptr, RDMA_PS_TCP), 0);
        sockaddr_in a = ip4(kLocal, 0);
        ASSERT_EQ(rdma_bind_addr(id, sa(a)), 0);
        ibv_qp_init_attr attr = rc_attr();
        ASSERT_EQ(rdma_create_qp(id, nullptr, &attr), 0);
        rdma_destroy_qp(id);
        rdma_destroy_id(id);
    }
};
const auto* warmup = ::testing::AddGlobalTestEnvironment(new Warmup);

TEST_F(Cm, EventStrings) {
    EXPECT_STREQ(rdma_event_str(RDMA_CM_EVENT_ADDR_RESOLVED), "RDMA_CM_EVENT_ADDR_RESOLVED");
    EXPECT_STREQ(rdma_event_str(RDMA_CM_EVENT_TIMEWAIT_EXIT), "RDMA_CM_EVENT_TIMEWAIT_EXIT");
    EXPECT_STREQ(rdma_event_str(static_cast<rdma_cm_event_type>(99)), "UNKNOWN EVENT");
}

TEST_F(Cm, NonBlockingChannelSaysEagain) {
    Channel c;
    ASSERT_NE(c.ch, nullptr);
    int fl = fcntl(c.ch->fd, F_GETFL);
    ASSERT_EQ(fcntl(c.ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
    rdma_cm_event* e = nullptr;
    errno = 0;
    EXPECT_EQ(rdma_get_cm_event(c.ch, &e), -1);
    EXPECT_EQ(errno, EAGAIN);
}

TEST_F(Cm, BindReportsDevicePortAndAddress) {
    Channel c;
    rdma_cm_id* id = nullptr;
    ASSERT_EQ(rdma_create_id(c.ch, &id, nullptr, RDMA_PS_TCP), 0);
    EXPECT_EQ(id->verbs, nullptr);
    sockaddr_in a = ip4(kLocal, 0);
    ASSERT_EQ(rdma_bind_addr(id, sa(a)), 0);
    ASSERT_NE(id->verbs, nullptr);
    EXPECT_STREQ(ibv_get_device_name(id->verbs->device), kDevice);
    EXPECT_EQ(id->port_num, 1);
    EXPECT_NE(id->pd, nullptr);
    EXPECT_EQ(id->route.addr.src_sin.sin_addr.s_addr, a.sin_addr.s_addr);
    ASSERT_EQ(rdma_listen(id, 4), 0);
    EXPECT_NE(rdma_get_src_port(id), 0) << "listen on port 0 picks a port";
    EXPECT_EQ(rdma_get_dst_port(id), 0);
    EXPECT_EQ(rdma_destroy_id(id), 0);
}

// Port spaces are the host's: a port bound to an address cannot be bound
// to it again (EADDRINUSE), nor to "any" (EADDRNOTAVAIL); with
// RDMA_OPTION_ID_REUSEADDR on both ids it can.
TEST_F(Cm, PortInUse) {
    Channel c;
    rdma_cm_id *a = nullptr, *b = nullptr, *any = nullptr;
    ASSERT_EQ(rdma_create_id(c.ch, &a, nullptr, RDMA_PS_TCP), 0);
    ASSERT_EQ(rdma_create_id(c.ch, &b, nullptr, RDMA_PS_TCP), 0);
    ASSERT_EQ(rdma_create_id(c.ch, &any, nullptr, RDMA_PS_TCP), 0);
    const uint16_t port = next_port();
    sockaddr_in at = ip4(kLocal, port), wild = ip4("0.0.0.0", port);
    ASSERT_EQ(rdma_bind_addr(a, sa(at)), 0) << strerror(errno);
    errno = 0;
    EXPECT_EQ(rdma_bind_addr(b, sa(at)), -1);
    EXPECT_EQ(errno, EADDRINUSE);
    errno = 0;
    EXPECT_EQ(rdma_bind_addr(any, sa(wild)), -1);
    EXPECT_EQ(errno, EADDRNOTAVAIL);
    EXPECT_EQ(rdma_destroy_id(b), 0);
    EXPECT_EQ(rdma_destroy_id(any), 0);
    EXPECT_EQ(rdma_destroy_id(a), 0);

    // reuse on both: they share it
    int one = 1;
    const uint16_t port2 = next_port();
    sockaddr_in at2 = ip4(kLocal, port2);
    ASSERT_EQ(rdma_create_id(c.ch, &a, nullptr, RDMA_PS_TCP), 0);
    ASSERT_EQ(rdma_create_id(c.ch, &b, nullptr, RDMA_PS_TCP), 0);
    ASSERT_EQ(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof one), 0);
    ASSERT_EQ(rdma_set_option(b, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof one), 0);
    EXPECT_EQ(rdma_bind_addr(a, sa(at2)), 0) << strerror(errno);
    EXPECT_EQ(rdma_bind_addr(b, sa(at2)), 0) << strerror(errno);
    EXPECT_EQ(rdma_destroy_id(b), 0);
    EXPECT_EQ(rdma_destroy_id(a), 0);

    // once the owner is gone, the port is free again
    ASSERT_EQ(rdma_create_id(c.ch, &a, nullptr, RDMA_PS_TCP), 0);
    EXPECT_EQ(rdma_bind_addr(a, sa(at)), 0) << strerror(errno);
    EXPECT_EQ(rdma_destroy_id(a), 0);
}

// An address no interface has cannot be bound.
TEST_F(Cm, BindToForeignAddressIsEaddrnotavail) {
    Channel c;
    rdma_cm_id* id = nullptr;
    ASSERT_EQ(rdma_create_id(c.ch, &id, nullptr, RDMA_PS_TCP), 0);
    sockaddr_in a = ip4(kNoRoute, 0);
    errno = 0;
    EXPECT_EQ(rdma_bind_addr(id, sa(a)), -1);
    EXPECT_EQ(errno, EADDRNOTAVAIL);
    EXPECT_EQ(rdma_destroy_id(id), 0);
}

TEST_F(Cm, BadAddressFamilyIsEinval) {
    Channel c;
    rdma_cm_id* id = nullptr;
    ASSERT_EQ(rdma_create_id(c.ch, &id, nullptr, RDMA_PS_TCP), 0);
    sockaddr bad{};
    bad.sa_family = AF_UNIX;
    errno = 0;
    EXPECT_EQ(rdma_bind_addr(id, &bad), -1);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(rdma_resolve_addr(id, nullptr, &bad, 1000), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(rdma_destroy_id(id), 0);
}

TEST_F(Cm, ResolveWithoutRouteIsAddrError) {
    Channel c;
    rdma_cm_id* id = nullptr;
    ASSERT_EQ(rdma_create_id(c.ch, &id, nullptr, RDMA_PS_TCP), 0);
    sockaddr_in dst = ip4(kNoRoute, 7471);
    int ret = rdma_resolve_addr(id, nullptr, sa(dst), 1000);
    if (ret == 0) {
        rdma_cm_event* e = nullptr;
        EXPECT_EVENT(c.ch, RDMA_CM_EVENT_ADDR_ERROR, e);
        EXPECT_EQ(e->status, -ENETUNREACH);
        rdma_ack_cm_event(e);
    } else {
        EXPECT_EQ(errno, ENETUNREACH);
    }
    EXPECT_EQ(rdma_destroy_id(id), 0);
}

TEST_F(Cm, SynchronousResolveReportsErrno) {
    rdma_cm_id* id = nullptr;
    ASSERT_EQ(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP), 0);
    ASSERT_NE(id->channel, nullptr);
    sockaddr_in dst = ip4(kNoRoute, 7471);
    errno = 0;
    EXPECT_EQ(rdma_resolve_addr(id, nullptr, sa(dst), 1000), -1);
    EXPECT_EQ(errno, ENETUNREACH);
    EXPECT_EQ(rdma_destroy_id(id), 0);
}

TEST_F(Cm, SynchronousResolveAddrAndRoute) {
    rdma_cm_id* id = nullptr;
    ASSERT_EQ(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP), 0);
    sockaddr_in dst = ip4(kLocal, 7471);
    ASSERT_EQ(rdma_resolve_addr(id, nullptr, sa(dst), 2000), 0) << strerror(errno);
    ASSERT_NE(id->event, nullptr);
    EXPECT_EQ(id->event->event, RDMA_CM_EVENT_ADDR_RESOLVED);
    ASSERT_NE(id->verbs, nullptr);
    ASSERT_EQ(rdma_resolve_route(id, 2000), 0) << strerror(errno);
    EXPECT_EQ(id->event->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
    EXPECT_GE(id->route.num_paths, 1);
    ASSERT_NE(id->route.path_rec, nullptr);
    EXPECT_EQ(rdma_get_dst_port(id), htons(7471));
    EXPECT_EQ(rdma_destroy_id(id), 0);
}

// An active id resolved to rxe0 and a passive one listening there.
struct Pair {
    Channel cc, sc;
    rdma_cm_id* client = nullptr;
    rdma_cm_id* listener = nullptr;
    rdma_cm_id* server = nullptr;
    uint16_t port = next_port();

    void listen(rdma_port_space ps = RDMA_PS_TCP) {
        ASSERT_EQ(rdma_create_id(sc.ch, &listener, nullptr, ps), 0);
        sockaddr_in a = ip4(kLocal, port);
        ASSERT_EQ(rdma_bind_addr(listener, sa(a)), 0) << strerror(errno);
        ASSERT_EQ(rdma_listen(listener, 4), 0);
    }
    void resolve(rdma_port_space ps = RDMA_PS_TCP, uint16_t to = 0) {
        ASSERT_EQ(rdma_create_id(cc.ch, &client, nullptr, ps), 0);
        sockaddr_in dst = ip4(kLocal, to ? to : port);
        ASSERT_EQ(rdma_resolve_addr(client, nullptr, sa(dst), 2000), 0);
        rdma_cm_event* e;
        EXPECT_EVENT(cc.ch, RDMA_CM_EVENT_ADDR_RESOLVED, e);
        rdma_ack_cm_event(e);
        ASSERT_EQ(rdma_resolve_route(client, 2000), 0);
        EXPECT_EVENT(cc.ch, RDMA_CM_EVENT_ROUTE_RESOLVED, e);
        rdma_ack_cm_event(e);
    }
    ~Pair() {
        if (client) {
            if (client->qp)
                rdma_destroy_qp(client);
            rdma_destroy_id(client);
        }
        if (server) {
            if (server->qp)
                rdma_destroy_qp(server);
            rdma_destroy_id(server);
        }
        if (listener)
            rdma_destroy_id(listener);
    }
};

TEST_F(Cm, ConnectWithoutListenerIsRejected) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(p.resolve());
    ibv_qp_init_attr attr = rc_attr();
    ASSERT_EQ(rdma_create_qp(p.client, nullptr, &attr), 0);
    rdma_conn_param cp{};
    cp.retry_count = 1;
    ASSERT_EQ(rdma_connect(p.client, &cp), 0);
    rdma_cm_event* e;
    EXPECT_EVENT(p.cc.ch, RDMA_CM_EVENT_REJECTED, e);
    EXPECT_EQ(e->status, 8) << "IB_CM_REJ_INVALID_SERVICE_ID";
    rdma_ack_cm_event(e);
}

TEST_F(Cm, SynchronousConnectWithoutListenerIsEconnrefused) {
    rdma_cm_id* id = nullptr;
    ASSERT_EQ(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP), 0);
    sockaddr_in dst = ip4(kLocal, next_port());
    ASSERT_EQ(rdma_resolve_addr(id, nullptr, sa(dst), 2000), 0);
    ASSERT_EQ(rdma_resolve_route(id, 2000), 0);
    ibv_qp_init_attr attr = rc_attr();
    ASSERT_EQ(rdma_create_qp(id, nullptr, &attr), 0);
    errno = 0;
    EXPECT_EQ(rdma_connect(id, nullptr), -1);
    EXPECT_EQ(errno, ECONNREFUSED);
    rdma_destroy_qp(id);
    EXPECT_EQ(rdma_destroy_id(id), 0);
}

// A REQ has room for 56 bytes of the caller's private data (92 less the
// rdma_cm header); a connected id that never connected cannot disconnect.
TEST_F(Cm, ConnectPrivateDataLimitAndDisconnectWithoutConnection) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(p.listen());
    ASSERT_NO_FATAL_FAILURE(p.resolve());
    ibv_qp_init_attr attr = rc_attr();
    ASSERT_EQ(rdma_create_qp(p.client, nullptr, &attr), 0);
    errno = 0;
    EXPECT_EQ(rdma_disconnect(p.client), -1);
    EXPECT_EQ(errno, EINVAL);
    char big[57] = {};
    rdma_conn_param cp{};
    cp.private_data = big;
    cp.private_data_len = sizeof big;
    errno = 0;
    EXPECT_EQ(rdma_connect(p.client, &cp), -1);
    EXPECT_EQ(errno, EINVAL);
    cp.private_data_len = 56;
    ASSERT_EQ(rdma_connect(p.client, &cp), 0) << strerror(errno);
    rdma_cm_event* e;
    EXPECT_EVENT(p.sc.ch, RDMA_CM_EVENT_CONNECT_REQUEST, e);
    EXPECT_EQ(e->param.conn.private_data_len, 56);
    rdma_cm_id* req = e->id;
    rdma_ack_cm_event(e);
    EXPECT_EQ(rdma_reject(req, nullptr, 0), 0);
    EXPECT_EQ(rdma_destroy_id(req), 0);
    EXPECT_EVENT(p.cc.ch, RDMA_CM_EVENT_REJECTED, e);
    rdma_ack_cm_event(e);
}

TEST_F(Cm, RejectCarriesPrivateData) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(p.listen());
    ASSERT_NO_FATAL_FAILURE(p.resolve());
    ibv_qp_init_attr attr = rc_attr();
    ASSERT_EQ(rdma_create_qp(p.client, nullptr, &attr), 0);
    const char hello[] = "hello";
    rdma_conn_param cp{};
    cp.private_data = hello;
    cp.private_data_len = sizeof(hello);
    cp.responder_resources = cp.initiator_depth = 1;
    cp.retry_count = 7;
    ASSERT_EQ(rdma_connect(p.client, &cp), 0);
    rdma_cm_event* e;
    EXPECT_EVENT(p.sc.ch, RDMA_CM_EVENT_CONNECT_REQUEST, e);
    EXPECT_EQ(e->listen_id, p.listener);
    ASSERT_NE(e->id, nullptr);
    EXPECT_NE(e->id, p.listener);
    ASSERT_GE(e->param.conn.private_data_len, sizeof(hello));
    EXPECT_STREQ(static_cast<const char*>(e->param.conn.private_data), "hello");
    EXPECT_EQ(e->param.conn.initiator_depth, 1);
    EXPECT_EQ(rdma_get_dst_port(e->id), rdma_get_src_port(p.client));
    EXPECT_EQ(rdma_get_src_port(e->id), htons(p.port));
    rdma_cm_id* req = e->id;
    const char nope[] = "nope";
    ASSERT_EQ(rdma_reject(req, nope, sizeof(nope)), 0);
    rdma_ack_cm_event(e);
    EXPECT_EQ(rdma_destroy_id(req), 0);
    EXPECT_EVENT(p.cc.ch, RDMA_CM_EVENT_REJECTED, e);
    EXPECT_EQ(e->status, 28) << "IB_CM_REJ_CONSUMER_DEFINED";
    ASSERT_GE(e->param.conn.private_data_len, sizeof(nope));
    EXPECT_STREQ(static_cast<const char*>(e->param.conn.private_data), "nope");
    rdma_ack_cm_event(e);
}

// Connect, move data both ways, disconnect: the whole RC life cycle.
TEST_F(Cm, ConnectTransferDisconnect) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(p.listen());
    ASSERT_NO_FATAL_FAILURE(p.resolve());
    ibv_qp_init_attr attr = rc_attr();
    ASSERT_EQ(rdma_create_qp(p.client, nullptr, &attr), 0);
    EXPECT_NE(p.client->send_cq, nullptr);
    EXPECT_NE(p.client->recv_cq, nullptr);
    ASSERT_EQ(rdma_connect(p.client, nullptr), 0);

    rdma_cm_event* e;
    EXPECT_EVENT(p.sc.ch, RDMA_CM_EVENT_CONNECT_REQUEST, e);
    p.server = e->id;
    rdma_ack_cm_event(e);
    attr = rc_attr();
    ASSERT_EQ(rdma_create_qp(p.server, nullptr, &attr), 0);
    char sbuf[64] = {}, cbuf[64] = "ping from client";
    ibv_mr* smr = rdma_reg_msgs(p.server, sbuf, sizeof(sbuf));
    ibv_mr* cmr = rdma_reg_msgs(p.client, cbuf, sizeof(cbuf));
    ASSERT_NE(smr, nullptr);
    ASSERT_NE(cmr, nullptr);
    ASSERT_EQ(rdma_post_recv(p.server, nullptr, sbuf, sizeof(sbuf), smr), 0);
    const char ok[] = "welcome";
    rdma_conn_param acp{};
    acp.private_data = ok;
    acp.private_data_len = sizeof(ok);
    ASSERT_EQ(rdma_accept(p.server, &acp), 0);

    EXPECT_EVENT(p.cc.ch, RDMA_CM_EVENT_ESTABLISHED, e);
    ASSERT_GE(e->param.conn.private_data_len, sizeof(ok));
    EXPECT_STREQ(static_cast<const char*>(e->param.conn.private_data), "welcome");
    rdma_ack_cm_event(e);
    EXPECT_EVENT(p.sc.ch, RDMA_CM_EVENT_ESTABLISHED, e);
    rdma_ack_cm_event(e);

    ASSERT_EQ(rdma_post_send(p.client, nullptr, cbuf, sizeof(cbuf), cmr, 0), 0);
    ibv_wc wc{};
    ASSERT_EQ(rdma_get_send_comp(p.client, &wc), 1);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_EQ(rdma_get_recv_comp(p.server, &wc), 1);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.byte_len, sizeof(cbuf));
    EXPECT_STREQ(sbuf, "ping from client");

    // The side that disconnects first hears back once the other answers
    // with its own rdma_disconnect (the DREP).
    ASSERT_EQ(rdma_disconnect(p.client), 0);
    EXPECT_EVENT(p.sc.ch, RDMA_CM_EVENT_DISCONNECTED, e);
    rdma_ack_cm_event(e);
    ASSERT_EQ(rdma_disconnect(p.server), 0);
    EXPECT_EVENT(p.cc.ch, RDMA_CM_EVENT_DISCONNECTED, e);
    rdma_ack_cm_event(e);
    rdma_dereg_mr(smr);
    rdma_dereg_mr(cmr);
}

// The peer of PeerKilledMidConnection: this same binary started again with
// CM_TEST_PEER_PORT set (a fresh process, not a fork: a forked child would
// share the parent's verbs context). It accepts one connection, says "e" on
// stdout once established, and waits to be killed.
int run_peer(uint16_t port) {
    rdma_event_channel* ch = rdma_create_event_channel();
    rdma_cm_id* l = nullptr;
    if (!ch || rdma_create_id(ch, &l, nullptr, RDMA_PS_TCP))
        return 2;
    sockaddr_in a = ip4(kLocal, port);
    if (rdma_bind_addr(l, sa(a)) || rdma_listen(l, 1))
        return 3;
    if (write(1, "l", 1) != 1)
        return 4;
    rdma_cm_event* e = next_event(ch, 60000);
    if (!e || e->event != RDMA_CM_EVENT_CONNECT_REQUEST)
        return 5;
    rdma_cm_id* s = e->id;
    rdma_ack_cm_event(e);
    ibv_qp_init_attr attr = rc_attr();
    if (rdma_create_qp(s, nullptr, &attr))
        return 6;
    if (rdma_accept(s, nullptr))
        return 7;
    e = next_event(ch);
    if (!e || e->event != RDMA_CM_EVENT_ESTABLISHED)
        return 8;
    rdma_ack_cm_event(e);
    if (write(1, "e", 1) != 1)
        return 9;
    for (;;)
        pause();
}

[[maybe_unused]] const int peer_mode = [] {
    if (const char* p = getenv("CM_TEST_PEER_PORT"))
        _exit(run_peer(static_cast<uint16_t>(atoi(p))));
    return 0;
}();

// A peer process dies with the connection up: the survivor sees
// DISCONNECTED within the CM's timeouts, never hangs.
TEST_F(Cm, PeerKilledMidConnection) {
    uint16_t port = next_port();
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        std::string p = std::to_string(port);
        setenv("CM_TEST_PEER_PORT", p.c_str(), 1);
        execl("/proc/self/exe", "cm_peer", nullptr);
        _exit(127);
    }
    close(out[1]);
    auto reap = [&] {
        kill(child, SIGKILL);
        int st = 0;
        waitpid(child, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    };
    char c = 0;
    if (read(out[0], &c, 1) != 1 || c != 'l')
        FAIL() << "peer did not listen, exit " << reap();
    Pair p;
    p.port = port;
    ASSERT_NO_FATAL_FAILURE(p.resolve());
    ibv_qp_init_attr attr = rc_attr();
    ASSERT_EQ(rdma_create_qp(p.client, nullptr, &attr), 0);
    ASSERT_EQ(rdma_connect(p.client, nullptr), 0);
    rdma_cm_event* e = next_event(p.cc.ch);
    if (!e || e->event != RDMA_CM_EVENT_ESTABLISHED) {
        int st = reap();
        FAIL() << "connect: " << (e ? rdma_event_str(e->event) : "no event") << ", peer exit " << st;
    }
    rdma_ack_cm_event(e);
    ASSERT_EQ(read(out[0], &c, 1), 1);
    close(out[0]);
    reap();
    time_t t0 = time(nullptr);
    e = next_event(p.cc.ch, 60000);
    ASSERT_NE(e, nullptr) << "no event after the peer died";
    EXPECT_EQ(e->event, RDMA_CM_EVENT_DISCONNECTED) << rdma_event_str(e->event);
    rdma_ack_cm_event(e);
    EXPECT_LT(time(nullptr) - t0, 60);
}

TEST_F(Cm, MigrateMovesEventsToTheNewChannel) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(p.listen());
    Channel other;
    ASSERT_EQ(rdma_migrate_id(p.listener, other.ch), 0);
    EXPECT_EQ(p.listener->channel, other.ch);
    ASSERT_NO_FATAL_FAILURE(p.resolve());
    ibv_qp_init_attr attr = rc_attr();
    ASSERT_EQ(rdma_create_qp(p.client, nullptr, &attr), 0);
    ASSERT_EQ(rdma_connect(p.client, nullptr), 0);
    rdma_cm_event* e;
    EXPECT_EVENT(other.ch, RDMA_CM_EVENT_CONNECT_REQUEST, e);
    rdma_cm_id* req = e->id;
    rdma_ack_cm_event(e);
    EXPECT_EQ(rdma_reject(req, nullptr, 0), 0);
    EXPECT_EQ(rdma_destroy_id(req), 0);
    EXPECT_EVENT(p.cc.ch, RDMA_CM_EVENT_REJECTED, e);
    rdma_ack_cm_event(e);
    // the listener must go back before its channel does
    ASSERT_EQ(rdma_migrate_id(p.listener, p.sc.ch), 0);
}

// UD ids: service id resolution (SIDR) answers with the peer's QPN and the
// well-known qkey, and multicast joins report the caller's context.
TEST_F(Cm, UdSidrAndMulticast) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(p.listen(RDMA_PS_UDP));
    ASSERT_NO_FATAL_FAILURE(p.resolve(RDMA_PS_UDP));
    ibv_qp_init_attr attr = rc_attr();
    attr.qp_type = IBV_QPT_UD;
    ASSERT_EQ(rdma_create_qp(p.client, nullptr, &attr), 0);
    ASSERT_EQ(rdma_connect(p.client, nullptr), 0);
    rdma_cm_event* e;
    EXPECT_EVENT(p.sc.ch, RDMA_CM_EVENT_CONNECT_REQUEST, e);
    p.server = e->id;
    rdma_ack_cm_event(e);
    attr = rc_attr();
    attr.qp_type = IBV_QPT_UD;
    ASSERT_EQ(rdma_create_qp(p.server, nullptr, &attr), 0);
    ASSERT_EQ(rdma_accept(p.server, nullptr), 0);
    EXPECT_EVENT(p.cc.ch, RDMA_CM_EVENT_ESTABLISHED, e);
    EXPECT_EQ(e->param.ud.qp_num, p.server->qp->qp_num);
    EXPECT_EQ(e->param.ud.qkey, static_cast<uint32_t>(RDMA_UDP_QKEY));
    rdma_ack_cm_event(e);
}

// Multicast on a UD id resolved from the local address to the group, as
// mckey does: the join event hands back the caller's context.
TEST_F(Cm, MulticastJoinLeave) {
    Channel c;
    rdma_cm_id* id = nullptr;
    ASSERT_EQ(rdma_create_id(c.ch, &id, nullptr, RDMA_PS_UDP), 0);
    sockaddr_in src = ip4(kLocal, 0);
    sockaddr_in group = ip4("239.1.2.3", 0);
    ASSERT_EQ(rdma_resolve_addr(id, sa(src), sa(group), 2000), 0) << strerror(errno);
    rdma_cm_event* e;
    EXPECT_EVENT(c.ch, RDMA_CM_EVENT_ADDR_RESOLVED, e);
    rdma_ack_cm_event(e);
    ibv_qp_init_attr attr = rc_attr();
    attr.qp_type = IBV_QPT_UD;
    ASSERT_EQ(rdma_create_qp(id, nullptr, &attr), 0) << strerror(errno);
    int ctx = 42;
    ASSERT_EQ(rdma_join_multicast(id, sa(group), &ctx), 0) << strerror(errno);
    EXPECT_EVENT(c.ch, RDMA_CM_EVENT_MULTICAST_JOIN, e);
    EXPECT_EQ(e->status, 0);
    EXPECT_EQ(e->param.ud.private_data, &ctx);
    EXPECT_EQ(e->param.ud.qkey, static_cast<uint32_t>(RDMA_UDP_QKEY));
    EXPECT_NE(e->param.ud.qp_num, 0u);
    rdma_ack_cm_event(e);
    sockaddr_in other = ip4("239.1.2.4", 0);
    errno = 0;
    EXPECT_EQ(rdma_leave_multicast(id, sa(other)), -1);
    EXPECT_EQ(errno, EADDRNOTAVAIL);
    EXPECT_EQ(rdma_leave_multicast(id, sa(group)), 0) << strerror(errno);

    rdma_cm_join_mc_attr_ex mx{};
    mx.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS;
    mx.addr = sa(group);
    errno = 0;
    EXPECT_EQ(rdma_join_multicast_ex(id, &mx, nullptr), -1);
    EXPECT_EQ(errno, EINVAL);
    rdma_destroy_qp(id);
    EXPECT_EQ(rdma_destroy_id(id), 0);
}

// A join the kernel completes but whose QP cannot be attached to the group
// (the id's QP is an RC QP, which the kernel refuses to attach) reaches the
// application as MULTICAST_ERROR with a negative status: the library's own
// failures are reported as -1 (errno says why), never as the positive errno
// the verbs call returned.
TEST_F(Cm, MulticastAttachFailureHasNegativeStatus) {
    Channel c;
    rdma_cm_id* id = nullptr;
    ASSERT_EQ(rdma_create_id(c.ch, &id, nullptr, RDMA_PS_UDP), 0);
    sockaddr_in src = ip4(kLocal, 0);
    sockaddr_in group = ip4("239.1.2.5", 0);
    ASSERT_EQ(rdma_resolve_addr(id, sa(src), sa(group), 2000), 0) << strerror(errno);
    rdma_cm_event* e;
    EXPECT_EVENT(c.ch, RDMA_CM_EVENT_ADDR_RESOLVED, e);
    rdma_ack_cm_event(e);
    ASSERT_NE(id->pd, nullptr);
    ibv_cq* cq = ibv_create_cq(id->verbs, 4, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr) << strerror(errno);
    ibv_qp_init_attr attr = rc_attr();
    attr.send_cq = attr.recv_cq = cq;
    ibv_qp* rc = ibv_create_qp(id->pd, &attr);
    ASSERT_NE(rc, nullptr) << strerror(errno);
    id->qp = rc;
    int ctx = 7;
    ASSERT_EQ(rdma_join_multicast(id, sa(group), &ctx), 0) << strerror(errno);
    EXPECT_EVENT(c.ch, RDMA_CM_EVENT_MULTICAST_ERROR, e);
    EXPECT_LT(e->status, 0) << "status " << e->status;
    EXPECT_EQ(e->status, -1);
    EXPECT_EQ(e->param.ud.private_data, &ctx);
    rdma_ack_cm_event(e);
    EXPECT_EQ(rdma_leave_multicast(id, sa(group)), 0) << strerror(errno);
    id->qp = nullptr;
    EXPECT_EQ(ibv_destroy_qp(rc), 0);
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
    EXPECT_EQ(rdma_destroy_id(id), 0);
}

// rdma_getaddrinfo and endpoints: the synchronous, all-in-one API.
TEST_F(Cm, GetaddrinfoAndEndpoints) {
    rdma_addrinfo hints{}, *res = nullptr;
    hints.ai_flags = RAI_PASSIVE;
    hints.ai_port_space = RDMA_PS_TCP;
    uint16_t port = next_port();
    std::string ps = std::to_string(port);
    ASSERT_EQ(rdma_getaddrinfo(kLocal, ps.c_str(), &hints, &res), 0);
    EXPECT_EQ(res->ai_family, AF_INET);
    EXPECT_EQ(res->ai_qp_type, IBV_QPT_RC);
    EXPECT_EQ(res->ai_port_space, RDMA_PS_TCP);
    EXPECT_NE(res->ai_src_addr, nullptr);
    EXPECT_EQ(res->ai_dst_addr, nullptr);
    rdma_cm_id* listen = nullptr;
    ibv_qp_init_attr attr = rc_attr();
    ASSERT_EQ(rdma_create_ep(&listen, res, nullptr, &attr), 0) << strerror(errno);
    rdma_freeaddrinfo(res);
    ASSERT_EQ(rdma_listen(listen, 2), 0);

    hints = {};
    hints.ai_port_space = RDMA_PS_TCP;
    ASSERT_EQ(rdma_getaddrinfo(kLocal, ps.c_str(), &hints, &res), 0);
    EXPECT_EQ(res->ai_src_addr, nullptr);
    ASSERT_NE(res->ai_dst_addr, nullptr);
    rdma_cm_id* client = nullptr;
    attr = rc_attr();
    attr.qp_type = IBV_QPT_UD;  // overridden by the address info
    ASSERT_EQ(rdma_create_ep(&client, res, nullptr, &attr), 0) << strerror(errno);
    rdma_freeaddrinfo(res);
    ASSERT_NE(client->qp, nullptr);
    EXPECT_EQ(client->qp->qp_type, IBV_QPT_RC);

    int connect_ret = -1, connect_errno = 0;
    std::thread active([&] {
        connect_ret = rdma_connect(client, nullptr);
        connect_errno = errno;
    });
    rdma_cm_id* server = nullptr;
    ASSERT_EQ(rdma_get_request(listen, &server), 0) << strerror(errno);
    ASSERT_NE(server->qp, nullptr) << "passive endpoint's QP made per request";
    ASSERT_EQ(rdma_accept(server, nullptr), 0) << strerror(errno);
    active.join();
    EXPECT_EQ(connect_ret, 0) << strerror(connect_errno);
    // Tearing down without rdma_disconnect: destroying a connected id sends
    // the DREQ itself and does not wait for the answer.
    rdma_destroy_ep(client);
    rdma_destroy_ep(server);
    rdma_destroy_ep(listen);

    // A name that is not numeric with RAI_NUMERICHOST: getaddrinfo's
    // EAI_NONAME comes back as the return value.
    hints = {};
    hints.ai_flags = RAI_NUMERICHOST;
    EXPECT_EQ(rdma_getaddrinfo("not-an-address", "1", &hints, &res), EAI_NONAME);
}

TEST_F(Cm, ManyIdsLeaveNothingBehind) {
    Channel c;
    for (int i = 0; i < 50; i++) {
        rdma_cm_id* id = nullptr;
        ASSERT_EQ(rdma_create_id(c.ch, &id, nullptr, i % 2 ? RDMA_PS_UDP : RDMA_PS_TCP), 0);
        sockaddr_in a = ip4(kLocal, 0);
        ASSERT_EQ(rdma_bind_addr(id, sa(a)), 0);
        ASSERT_EQ(rdma_destroy_id(id), 0);
    }
}

}  // namespace
