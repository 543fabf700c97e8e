// uvsim_verify: checks the data path and the error semantics of the emulated
// mlx5 device with Debian's own libibverbs + libmlx5 (it is linked against
// /usr/lib/x86_64-linux-gnu/libibverbs.so.1, not ours).
//
//   uverbs-sim-run --dir D uvsim_verify CASE      one case; 0 = pass
//   uvsim_verify list                              the case names
//
// Every case builds what it needs (QPs in this process talking through the
// simulated wire, on mlx5_0, or mlx5_0 <-> mlx5_1 with UVERBS_SIM_DEVICES=2),
// checks memory contents and every ibv_wc field that the operation defines,
// and exits 1 with a message naming the line on the first mismatch.
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <endian.h>
#include <fcntl.h>
#include <functional>
#include <map>
#include <poll.h>
#include <sys/mman.h>
#include <string>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <vector>

namespace {

const char* g_case = "?";

[[noreturn]] void die(int line, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "uvsim_verify %s: FAIL (line %d): ", g_case, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    _exit(1);
}

#define CHECK(c)                     \
    do {                             \
        if (!(c))                    \
            die(__LINE__, "%s", #c); \
    } while (0)
#define CHECK_EQ(a, b)                                                                                    \
    do {                                                                                                  \
        const unsigned long long va_ = (unsigned long long)(a), vb_ = (unsigned long long)(b);            \
        if (va_ != vb_)                                                                                   \
            die(__LINE__, "%s == %s: got 0x%llx (%llu), want 0x%llx (%llu)", #a, #b, va_, va_, vb_, vb_); \
    } while (0)
#define CHECK_OK(e)                                                                                                \
    do {                                                                                                           \
        const int r_ = (e);                                                                                        \
        if (r_)                                                                                                    \
            die(__LINE__, "%s: returned %d (%s, errno %s)", #e, r_, strerror(r_ > 0 ? r_ : -r_), strerror(errno)); \
    } while (0)

uint64_t ms_now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

constexpr int kAll =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

// ------------------------------------------------------------ fixtures

struct Dev {
    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;
    ibv_port_attr pa{};
    ibv_gid gid{};
    uint8_t port = 1;
};

Dev open_dev(const char* name) {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list)
        die(__LINE__, "ibv_get_device_list: %s", strerror(errno));
    Dev d;
    for (int i = 0; i < n; ++i)
        if (!strcmp(ibv_get_device_name(list[i]), name))
            d.ctx = ibv_open_device(list[i]);
    ibv_free_device_list(list);
    if (!d.ctx)
        die(__LINE__, "device %s not found or not openable (%d devices)", name, n);
    d.pd = ibv_alloc_pd(d.ctx);
    CHECK(d.pd);
    CHECK_OK(ibv_query_port(d.ctx, d.port, &d.pa));
    CHECK_OK(ibv_query_gid(d.ctx, d.port, 0, &d.gid));
    CHECK_EQ(d.pa.state, IBV_PORT_ACTIVE);
    return d;
}

bool is_eth(const Dev& d) { return d.pa.link_layer == IBV_LINK_LAYER_ETHERNET; }

struct Buf {
    uint8_t* p = nullptr;
    size_t n = 0;
    ibv_mr* mr = nullptr;
    uint32_t lkey() const { return mr->lkey; }
    uint32_t rkey() const { return mr->rkey; }
    uint64_t addr(size_t off = 0) const { return reinterpret_cast<uint64_t>(p + off); }
};

Buf mkbuf(ibv_pd* pd, size_t n, int access = kAll) {
    Buf b;
    b.n = n;
    b.p = static_cast<uint8_t*>(aligned_alloc(4096, (n + 4095) & ~size_t(4095)));
    CHECK(b.p);
    memset(b.p, 0, n);
    b.mr = ibv_reg_mr(pd, b.p, n, access);
    if (!b.mr)
        die(__LINE__, "ibv_reg_mr(%zu, 0x%x): %s", n, access, strerror(errno));
    return b;
}

void fill(Buf& b, size_t off, size_t n, uint32_t seed) {
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1103515245u + 12345u;
        b.p[off + i] = static_cast<uint8_t>(x >> 16);
    }
}

// Compares n bytes of two buffers; names the first difference.
void same(int line, const uint8_t* got, const uint8_t* want, size_t n, const char* what) {
    for (size_t i = 0; i < n; ++i)
        if (got[i] != want[i])
            die(line, "%s: byte %zu of %zu is 0x%02x, want 0x%02x", what, i, n, got[i], want[i]);
}
#define SAME(g, w, n, what) same(__LINE__, (g), (w), (n), (what))

struct QpOpts {
    ibv_qp_type type = IBV_QPT_RC;
    uint32_t max_send_wr = 128, max_recv_wr = 128, max_sge = 4, max_inline = 64;
    ibv_srq* srq = nullptr;
    ibv_cq* scq = nullptr;
    ibv_cq* rcq = nullptr;
    int cqe = 1024;
    ibv_comp_channel* ch = nullptr;
    bool sig_all = false;
    ibv_mtu mtu = IBV_MTU_1024;
    uint8_t timeout = 14, retry = 7, rnr_retry = 7, min_rnr = 1;
    uint32_t access =
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    uint32_t qkey = 0x11111111;
    uint32_t psn = 0x100;
    int32_t dest_qpn_delta = 0;  // connect to a wrong QPN on purpose
};

struct Q {
    Dev* d = nullptr;
    ibv_qp* qp = nullptr;
    ibv_cq* scq = nullptr;
    ibv_cq* rcq = nullptr;
    QpOpts o;
    uint32_t qpn() const { return qp->qp_num; }
};

ibv_cq* mkcq(Dev& d, int cqe, ibv_comp_channel* ch = nullptr) {
    ibv_cq* cq = ibv_create_cq(d.ctx, cqe, nullptr, ch, 0);
    if (!cq)
        die(__LINE__, "ibv_create_cq(%d): %s", cqe, strerror(errno));
    return cq;
}

Q mkqp(Dev& d, const QpOpts& o) {
    Q q;
    q.d = &d;
    q.o = o;
    q.scq = o.scq ? o.scq : mkcq(d, o.cqe, o.ch);
    q.rcq = o.rcq ? o.rcq : mkcq(d, o.cqe, o.ch);
    ibv_qp_init_attr a{};
    a.send_cq = q.scq;
    a.recv_cq = q.rcq;
    a.srq = o.srq;
    a.qp_type = o.type;
    a.sq_sig_all = o.sig_all;
    a.cap.max_send_wr = o.max_send_wr;
    a.cap.max_recv_wr = o.srq ? 0 : o.max_recv_wr;
    a.cap.max_send_sge = o.max_sge;
    a.cap.max_recv_sge = o.srq ? 0 : o.max_sge;
    a.cap.max_inline_data = o.max_inline;
    q.qp = ibv_create_qp(d.pd, &a);
    if (!q.qp)
        die(__LINE__, "ibv_create_qp: %s", strerror(errno));
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.pkey_index = 0;
    m.port_num = d.port;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (o.type == IBV_QPT_UD) {
        m.qkey = o.qkey;
        mask |= IBV_QP_QKEY;
    } else {
        m.qp_access_flags = o.access;
        mask |= IBV_QP_ACCESS_FLAGS;
    }
    CHECK_OK(ibv_modify_qp(q.qp, &m, mask));
    return q;
}

ibv_ah_attr ah_to(const Dev& from, const Dev& to, bool grh = false) {
    ibv_ah_attr ah{};
    ah.dlid = to.pa.lid;
    ah.port_num = from.port;
    if (grh || is_eth(from)) {
        ah.is_global = 1;
        ah.grh.dgid = to.gid;
        ah.grh.sgid_index = 0;
        ah.grh.hop_limit = 64;
    }
    return ah;
}

void to_rtr_rts(Q& q, const Q& peer) {
    const QpOpts& o = q.o;
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_RTR;
    int mask = IBV_QP_STATE;
    if (o.type != IBV_QPT_UD) {
        m.path_mtu = o.mtu;
        m.dest_qp_num = static_cast<uint32_t>(peer.qpn() + o.dest_qpn_delta);
        m.rq_psn = peer.o.psn;
        m.ah_attr = ah_to(*q.d, *peer.d);
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        if (o.type == IBV_QPT_RC) {
            m.max_dest_rd_atomic = 4;
            m.min_rnr_timer = o.min_rnr;
            mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        }
    }
    CHECK_OK(ibv_modify_qp(q.qp, &m, mask));
    m = {};
    m.qp_state = IBV_QPS_RTS;
    m.sq_psn = o.psn;
    mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (o.type == IBV_QPT_RC) {
        m.timeout = o.timeout;
        m.retry_cnt = o.retry;
        m.rnr_retry = o.rnr_retry;
        m.max_rd_atomic = 4;
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
    CHECK_OK(ibv_modify_qp(q.qp, &m, mask));
}

void connect(Q& a, Q& b) {
    to_rtr_rts(a, b);
    to_rtr_rts(b, a);
}

std::pair<Q, Q> pair(Dev& da, Dev& db, const QpOpts& oa, const QpOpts& ob) {
    Q a = mkqp(da, oa), b = mkqp(db, ob);
    connect(a, b);
    return {a, b};
}

std::pair<Q, Q> pair(Dev& d, const QpOpts& o = {}) { return pair(d, d, o, o); }

ibv_sge sge(const Buf& b, size_t off, uint32_t len) { return ibv_sge{b.addr(off), len, b.lkey()}; }

void post_recv(const Q& q, uint64_t wr_id, std::vector<ibv_sge> s) {
    ibv_recv_wr wr{}, *bad = nullptr;
    wr.wr_id = wr_id;
    wr.sg_list = s.data();
    wr.num_sge = static_cast<int>(s.size());
    CHECK_OK(ibv_post_recv(q.qp, &wr, &bad));
}

void post_srq_recv(ibv_srq* srq, uint64_t wr_id, std::vector<ibv_sge> s) {
    ibv_recv_wr wr{}, *bad = nullptr;
    wr.wr_id = wr_id;
    wr.sg_list = s.data();
    wr.num_sge = static_cast<int>(s.size());
    CHECK_OK(ibv_post_srq_recv(srq, &wr, &bad));
}

struct Send {
    ibv_wr_opcode op = IBV_WR_SEND;
    uint64_t wr_id = 0;
    std::vector<ibv_sge> sges;
    unsigned flags = IBV_SEND_SIGNALED;
    uint32_t imm = 0;  // network order, as ibv_send_wr carries it
    uint64_t raddr = 0;
    uint32_t rkey = 0;
    uint64_t cmp = 0, swap = 0;
    ibv_ah* ah = nullptr;
    uint32_t rqpn = 0, rqkey = 0;
};

int try_post(const Q& q, const Send& s) {
    ibv_send_wr wr{}, *bad = nullptr;
    std::vector<ibv_sge> sg = s.sges;
    wr.wr_id = s.wr_id;
    wr.opcode = s.op;
    wr.sg_list = sg.data();
    wr.num_sge = static_cast<int>(sg.size());
    wr.send_flags = s.flags;
    wr.imm_data = s.imm;
    if (s.op == IBV_WR_ATOMIC_CMP_AND_SWP || s.op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
        wr.wr.atomic.remote_addr = s.raddr;
        wr.wr.atomic.rkey = s.rkey;
        wr.wr.atomic.compare_add = s.op == IBV_WR_ATOMIC_CMP_AND_SWP ? s.cmp : s.swap;
        wr.wr.atomic.swap = s.swap;
    } else if (s.ah) {
        wr.wr.ud.ah = s.ah;
        wr.wr.ud.remote_qpn = s.rqpn;
        wr.wr.ud.remote_qkey = s.rqkey;
    } else {
        wr.wr.rdma.remote_addr = s.raddr;
        wr.wr.rdma.rkey = s.rkey;
    }
    return ibv_post_send(q.qp, &wr, &bad);
}

void post(const Q& q, const Send& s) { CHECK_OK(try_post(q, s)); }

ibv_wc poll1(int line, ibv_cq* cq, int ms = 10000) {
    ibv_wc wc;
    const uint64_t end = ms_now() + ms;
    for (;;) {
        memset(&wc, 0xa5, sizeof wc);  // fields the provider does not set show up
        int n = ibv_poll_cq(cq, 1, &wc);
        if (n < 0)
            die(line, "ibv_poll_cq returned %d", n);
        if (n == 1)
            return wc;
        if (ms_now() > end)
            die(line, "no completion within %d ms", ms);
        usleep(50);
    }
}
#define POLL1(cq) poll1(__LINE__, (cq))
#define POLL1T(cq, ms) poll1(__LINE__, (cq), (ms))

void poll_none(int line, ibv_cq* cq, int ms) {
    ibv_wc wc;
    const uint64_t end = ms_now() + ms;
    while (ms_now() < end) {
        int n = ibv_poll_cq(cq, 1, &wc);
        if (n != 0)
            die(line, "unexpected completion: n %d status %d (%s) opcode %d wr_id 0x%llx", n, wc.status,
                ibv_wc_status_str(wc.status), wc.opcode, (unsigned long long)wc.wr_id);
        usleep(1000);
    }
}
#define POLL_NONE(cq, ms) poll_none(__LINE__, (cq), (ms))

// What a completion must say. Fields left at -1 are not defined for it.
struct Want {
    int status = IBV_WC_SUCCESS;
    int opcode = -1;
    int64_t byte_len = -1;
    uint64_t wr_id = 0;
    uint32_t qp_num = 0;
    int64_t imm = -1;  // network order value; implies IBV_WC_WITH_IMM
    bool grh = false;
    int64_t src_qp = -1;  // receive completions
    int slid = -1;
    // a connected QP's receive small enough for scatter-to-CQE: the
    // address fields (defined for UD only, ibv_poll_cq(3)) may be the
    // message's bytes, as libmlx5 decodes them from the CQE it fills
    bool address_undefined = false;
};

void check_wc(int line, const ibv_wc& wc, const Want& w) {
    auto bad = [&](const char* f, unsigned long long got, unsigned long long want) {
        die(line, "wc.%s = 0x%llx (%llu), want 0x%llx (%llu) [status %d %s opcode %d wr_id 0x%llx vendor_err 0x%x]", f,
            got, got, want, want, wc.status, ibv_wc_status_str(wc.status), wc.opcode, (unsigned long long)wc.wr_id,
            wc.vendor_err);
    };
    if (wc.status != w.status)
        bad("status", wc.status, w.status);
    if (wc.wr_id != w.wr_id)
        bad("wr_id", wc.wr_id, w.wr_id);
    if (wc.qp_num != w.qp_num)
        bad("qp_num", wc.qp_num, w.qp_num);
    if (w.status != IBV_WC_SUCCESS)
        return;  // only status, wr_id, qp_num (and vendor_err) are defined
    if (w.opcode >= 0 && wc.opcode != w.opcode)
        bad("opcode", wc.opcode, w.opcode);
    if (w.byte_len >= 0 && wc.byte_len != w.byte_len)
        bad("byte_len", wc.byte_len, w.byte_len);
    // (the requester's completion of an operation with immediate carries
    // IBV_WC_WITH_IMM too, but no imm_data)
    const bool recv = w.opcode >= 0 && (w.opcode & IBV_WC_RECV);
    unsigned flags = (w.imm >= 0 ? IBV_WC_WITH_IMM : 0) | (w.grh ? IBV_WC_GRH : 0);
    const unsigned got_flags = w.address_undefined ? wc.wc_flags & ~unsigned(IBV_WC_GRH) : wc.wc_flags;
    if (w.address_undefined)
        flags &= ~unsigned(IBV_WC_GRH);
    if (got_flags != flags)
        bad("wc_flags", wc.wc_flags, flags);
    if (recv && w.imm >= 0 && wc.imm_data != static_cast<uint32_t>(w.imm))
        bad("imm_data", wc.imm_data, w.imm);
    if (recv && !w.address_undefined) {
        if (w.src_qp >= 0 && wc.src_qp != w.src_qp)
            bad("src_qp", wc.src_qp, w.src_qp);
        if (w.slid >= 0 && wc.slid != w.slid)
            bad("slid", wc.slid, w.slid);
        if (wc.sl != 0)
            bad("sl", wc.sl, 0);
        // libmlx5 takes pkey_index from the CQE word that also holds the
        // immediate, so it is defined only without one
        if (w.imm < 0 && wc.pkey_index != 0)
            bad("pkey_index", wc.pkey_index, 0);
        if (wc.dlid_path_bits != 0)
            bad("dlid_path_bits", wc.dlid_path_bits, 0);
    }
}
#define CHECK_WC(wc, ...) check_wc(__LINE__, (wc), Want __VA_ARGS__)

// The receive completion of a message from q_from arriving at q_to.
Want recv_want(const Q& to, const Q& from, uint64_t wr_id, uint32_t len, int opcode = IBV_WC_RECV) {
    Want w;
    w.opcode = opcode;
    w.byte_len = len;
    w.wr_id = wr_id;
    w.qp_num = to.qpn();
    w.src_qp = from.qpn();
    w.slid = is_eth(*from.d) ? 0 : from.d->pa.lid;
    w.grh = is_eth(*from.d);
    w.address_undefined = to.qp->qp_type != IBV_QPT_UD && len <= 64 && opcode == IBV_WC_RECV;
    return w;
}

Want send_want(const Q& q, uint64_t wr_id, int opcode, int64_t byte_len = -1, bool imm = false) {
    Want w;
    if (imm)
        w.imm = 0;  // IBV_WC_WITH_IMM expected
    w.opcode = opcode;
    w.wr_id = wr_id;
    w.qp_num = q.qpn();
    w.byte_len = byte_len;
    return w;
}

Want err_want(const Q& q, uint64_t wr_id, int status) {
    Want w;
    w.status = status;
    w.wr_id = wr_id;
    w.qp_num = q.qpn();
    return w;
}

ibv_qp_state qp_state(const Q& q) {
    ibv_qp_attr a{};
    ibv_qp_init_attr ia{};
    CHECK_OK(ibv_query_qp(q.qp, &a, IBV_QP_STATE, &ia));
    return a.qp_state;
}

// Waits for one async event (acked); dies after ms.
ibv_async_event async_wait(int line, Dev& d, int ms = 5000) {
    pollfd pf{d.ctx->async_fd, POLLIN, 0};
    int r = poll(&pf, 1, ms);
    if (r != 1)
        die(line, "no async event within %d ms", ms);
    ibv_async_event ev;
    if (ibv_get_async_event(d.ctx, &ev))
        die(line, "ibv_get_async_event: %s", strerror(errno));
    ibv_ack_async_event(&ev);
    return ev;
}
#define ASYNC_WAIT(d, ...) async_wait(__LINE__, (d), ##__VA_ARGS__)

void async_none(int line, Dev& d, int ms) {
    pollfd pf{d.ctx->async_fd, POLLIN, 0};
    if (poll(&pf, 1, ms) != 0) {
        ibv_async_event ev;
        ibv_get_async_event(d.ctx, &ev);
        die(line, "unexpected async event %d (%s)", ev.event_type, ibv_event_type_str(ev.event_type));
    }
}

// ------------------------------------------------------------------ cases

std::map<std::string, std::function<void()>>& cases() {
    static std::map<std::string, std::function<void()>> m;
    return m;
}
struct Reg {
    Reg(const char* n, std::function<void()> f) { cases()[n] = std::move(f); }
};
#define CASE(name)                      \
    void case_##name();                 \
    Reg reg_##name(#name, case_##name); \
    void case_##name()

// One send of len bytes from a to b: data and both completions checked.
void send_one(Q& a, Q& b, Buf& sb, Buf& rb, uint32_t len, uint64_t id) {
    fill(sb, 0, len, static_cast<uint32_t>(id));
    memset(rb.p, 0xee, std::min(rb.n, size_t(len) + 64));
    post_recv(b, id + 1000, {sge(rb, 0, static_cast<uint32_t>(rb.n))});
    post(a, {.wr_id = id, .sges = {sge(sb, 0, len)}});
    ibv_wc wc = POLL1(b.rcq);
    check_wc(__LINE__, wc, recv_want(b, a, id + 1000, len));
    wc = POLL1(a.scq);
    check_wc(__LINE__, wc, send_want(a, id, IBV_WC_SEND));
    SAME(rb.p, sb.p, len, "received data");
    if (rb.n > len)
        CHECK_EQ(rb.p[len], 0xee);  // nothing written past the message
}

CASE(rc_send_sizes) {
    Dev d = open_dev("mlx5_0");
    auto [a, b] = pair(d);
    Buf sb = mkbuf(d.pd, 1 << 20), rb = mkbuf(d.pd, (1 << 20) + 64);
    const uint32_t sizes[] = {1, 4096, 1 << 20, 1024, 1025, 0};
    uint64_t id = 1;
    for (uint32_t n : sizes)
        send_one(a, b, sb, rb, n, id++);
}

CASE(rc_send_sge) {
    Dev d = open_dev("mlx5_0");
    auto [a, b] = pair(d);
    Buf sb = mkbuf(d.pd, 16384), rb = mkbuf(d.pd, 16384);
    fill(sb, 0, sb.n, 7);
    memset(rb.p, 0xee, rb.n);
    // receive: 4 SGEs of 10, 1, 2000, 5000 bytes at scattered offsets
    post_recv(b, 77, {sge(rb, 100, 10), sge(rb, 300, 1), sge(rb, 1000, 2000), sge(rb, 8000, 5000)});
    // send: 3 SGEs of 7, 2500, 3 bytes (2510 total)
    post(a, {.wr_id = 5, .sges = {sge(sb, 0, 7), sge(sb, 4096, 2500), sge(sb, 9000, 3)}});
    ibv_wc wc = POLL1(b.rcq);
    check_wc(__LINE__, wc, recv_want(b, a, 77, 2510));
    wc = POLL1(a.scq);
    check_wc(__LINE__, wc, send_want(a, 5, IBV_WC_SEND));
    std::vector<uint8_t> msg;
    msg.insert(msg.end(), sb.p, sb.p + 7);
    msg.insert(msg.end(), sb.p + 4096, sb.p + 4096 + 2500);
    msg.insert(msg.end(), sb.p + 9000, sb.p + 9003);
    SAME(rb.p + 100, msg.data(), 10, "sge 0");
    SAME(rb.p + 300, msg.data() + 10, 1, "sge 1");
    SAME(rb.p + 1000, msg.data() + 11, 2000, "sge 2");
    SAME(rb.p + 8000, msg.data() + 2011, 499, "sge 3");
    CHECK_EQ(rb.p[110], 0xee);
    CHECK_EQ(rb.p[301], 0xee);
    CHECK_EQ(rb.p[3000], 0xee);
    CHECK_EQ(rb.p[8499], 0xee);
    CHECK_EQ(rb.p[99], 0xee);
}

CASE(rc_send_inline) {
    Dev d = open_dev("mlx5_0");
    auto [a, b] = pair(d);
    Buf rb = mkbuf(d.pd, 4096);
    // inline data comes from unregistered memory
    std::vector<uint8_t> m1(60), m2(3);
    for (size_t i = 0; i < m1.size(); ++i)
        m1[i] = static_cast<uint8_t>(i * 7 + 1);
    m2 = {0xde, 0xad, 0x42};
    post_recv(b, 1, {sge(rb, 0, 2048)});
    post_recv(b, 2, {sge(rb, 2048, 2048)});
    ibv_sge s1{reinterpret_cast<uint64_t>(m1.data()), 30, 0xdeadbeef};
    ibv_sge s2{reinterpret_cast<uint64_t>(m1.data() + 30), 30, 0};
    post(a, {.wr_id = 10, .sges = {s1, s2}, .flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE});
    ibv_sge s3{reinterpret_cast<uint64_t>(m2.data()), 3, 0};
    post(a,
         {.op = IBV_WR_SEND_WITH_IMM,
          .wr_id = 11,
          .sges = {s3},
          .flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
          .imm = htobe32(0x01020304)});
    memset(m1.data(), 0, m1.size());  // the provider copied it at post time
    ibv_wc wc = POLL1(b.rcq);
    check_wc(__LINE__, wc, recv_want(b, a, 1, 60));
    wc = POLL1(b.rcq);
    Want w = recv_want(b, a, 2, 3);
    w.imm = htobe32(0x01020304);
    check_wc(__LINE__, wc, w);
    for (size_t i = 0; i < 60; ++i)
        CHECK_EQ(rb.p[i], static_cast<uint8_t>(i * 7 + 1));
    CHECK_EQ(rb.p[2048], 0xde);
    CHECK_EQ(rb.p[2050], 0x42);
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 10, IBV_WC_SEND));
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 11, IBV_WC_SEND, -1, true));
}

CASE(rc_send_imm) {
    Dev d = open_dev("mlx5_0");
    auto [a, b] = pair(d);
    Buf sb = mkbuf(d.pd, 8192), rb = mkbuf(d.pd, 8192);
    fill(sb, 0, 5000, 3);
    post_recv(b, 9, {sge(rb, 0, 8192)});
    post_recv(b, 10, {sge(rb, 0, 8192)});
    post(a, {.op = IBV_WR_SEND_WITH_IMM, .wr_id = 1, .sges = {sge(sb, 0, 5000)}, .imm = htobe32(0xcafe0001)});
    post(a, {.op = IBV_WR_SEND_WITH_IMM, .wr_id = 2, .sges = {}, .imm = htobe32(0xcafe0002)});
    Want w = recv_want(b, a, 9, 5000);
    w.imm = htobe32(0xcafe0001);
    check_wc(__LINE__, POLL1(b.rcq), w);
    SAME(rb.p, sb.p, 5000, "data");
    w = recv_want(b, a, 10, 0);
    w.imm = htobe32(0xcafe0002);
    check_wc(__LINE__, POLL1(b.rcq), w);
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 1, IBV_WC_SEND, -1, true));
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 2, IBV_WC_SEND, -1, true));
}

CASE(rc_unsignaled) {
    Dev d = open_dev("mlx5_0");
    auto [a, b] = pair(d);
    Buf sb = mkbuf(d.pd, 64 * 1024), rb = mkbuf(d.pd, 64 * 1024);
    fill(sb, 0, sb.n, 9);
    for (int round = 0; round < 20; ++round) {
        for (int i = 0; i < 6; ++i)
            post_recv(b, 100 * round + i, {sge(rb, i * 8192, 8192)});
        for (int i = 0; i < 6; ++i)
            post(a,
                 {.wr_id = uint64_t(100 * round + i),
                  .sges = {sge(sb, i * 8192, 1000 + i * 1000)},
                  .flags = i == 5 ? unsigned(IBV_SEND_SIGNALED) : 0u});
        for (int i = 0; i < 6; ++i) {
            check_wc(__LINE__, POLL1(b.rcq), recv_want(b, a, 100 * round + i, 1000 + i * 1000));
            SAME(rb.p + i * 8192, sb.p + i * 8192, 1000 + i * 1000, "data");
        }
        check_wc(__LINE__, POLL1(a.scq), send_want(a, 100 * round + 5, IBV_WC_SEND));
        POLL_NONE(a.scq, round == 0 ? 50 : 0);
    }
}

CASE(rc_two_devices) {
    Dev d0 = open_dev("mlx5_0"), d1 = open_dev("mlx5_1");
    CHECK(d0.pa.lid != d1.pa.lid || is_eth(d0));
    auto [a, b] = pair(d0, d1, QpOpts{}, QpOpts{});
    Buf sb = mkbuf(d0.pd, 1 << 18), rb = mkbuf(d1.pd, (1 << 18) + 64);
    send_one(a, b, sb, rb, 1 << 18, 1);
    send_one(a, b, sb, rb, 17, 2);
    Buf wb = mkbuf(d1.pd, 65536);
    fill(sb, 0, 65536, 5);
    post(a, {.op = IBV_WR_RDMA_WRITE, .wr_id = 3, .sges = {sge(sb, 0, 65536)}, .raddr = wb.addr(), .rkey = wb.rkey()});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 3, IBV_WC_RDMA_WRITE));
    SAME(wb.p, sb.p, 65536, "written");
    // and back from mlx5_1 to mlx5_0
    Buf sb1 = mkbuf(d1.pd, 4096), rb0 = mkbuf(d0.pd, 4096 + 64);
    send_one(b, a, sb1, rb0, 4096, 4);
}

CASE(rc_write) {
    Dev d = open_dev("mlx5_0");
    auto [a, b] = pair(d);
    Buf sb = mkbuf(d.pd, 1 << 20), tb = mkbuf(d.pd, (1 << 20) + 8192);
    const uint32_t sizes[] = {1, 4096, 1 << 20, 3000};
    uint64_t id = 1;
    for (uint32_t n : sizes) {
        fill(sb, 0, n, static_cast<uint32_t>(id));
        memset(tb.p, 0xee, tb.n);
        post(a,
             {.op = IBV_WR_RDMA_WRITE, .wr_id = id, .sges = {sge(sb, 0, n)}, .raddr = tb.addr(100), .rkey = tb.rkey()});
        check_wc(__LINE__, POLL1(a.scq), send_want(a, id, IBV_WC_RDMA_WRITE));
        SAME(tb.p + 100, sb.p, n, "written data");
        CHECK_EQ(tb.p[99], 0xee);
        CHECK_EQ(tb.p[100 + n], 0xee);
        ++id;
    }
    // a zero-length write completes too
    post(a, {.op = IBV_WR_RDMA_WRITE, .wr_id = 50, .sges = {}, .raddr = tb.addr(), .rkey = tb.rkey()});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 50, IBV_WC_RDMA_WRITE));
    POLL_NONE(b.rcq, 50);  // writes consume no receive and make no completion
}

CASE(rc_write_imm) {
    Dev d = open_dev("mlx5_0");
    auto [a, b] = pair(d);
    Buf sb = mkbuf(d.pd, 1 << 18), tb = mkbuf(d.pd, 1 << 18), rb = mkbuf(d.pd, 64);
    fill(sb, 0, sb.n, 11);
    memset(rb.p, 0xee, 64);
    post_recv(b, 31, {sge(rb, 0, 64)});
    post_recv(b, 32, {sge(rb, 0, 64)});
    post(a,
         {.op = IBV_WR_RDMA_WRITE_WITH_IMM,
          .wr_id = 1,
          .sges = {sge(sb, 0, 200000)},
          .imm = htobe32(0xabcd),
          .raddr = tb.addr(),
          .rkey = tb.rkey()});
    Want w = recv_want(b, a, 31, 200000, IBV_WC_RECV_RDMA_WITH_IMM);
    w.imm = htobe32(0xabcd);
    check_wc(__LINE__, POLL1(b.rcq), w);
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 1, IBV_WC_RDMA_WRITE, -1, true));
    SAME(tb.p, sb.p, 200000, "written data");
    CHECK_EQ(rb.p[0], 0xee);  // the receive buffer is not touched
    // zero-length write with immediate
    post(a, {.op = IBV_WR_RDMA_WRITE_WITH_IMM, .wr_id = 2, .sges = {}, .imm = htobe32(7), .raddr = 0, .rkey = 0});
    w = recv_want(b, a, 32, 0, IBV_WC_RECV_RDMA_WITH_IMM);
    w.imm = htobe32(7);
    check_wc(__LINE__, POLL1(b.rcq), w);
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 2, IBV_WC_RDMA_WRITE, -1, true));
}

CASE(rc_read) {
    Dev d = open_dev("mlx5_0");
    auto [a, b] = pair(d);
    Buf src = mkbuf(d.pd, (1 << 20) + 4096), dst = mkbuf(d.pd, (1 << 20) + 4096);
    fill(src, 0, src.n, 13);
    const uint32_t sizes[] = {5, 1 << 20, 1024, 4097};
    uint64_t id = 1;
    for (uint32_t n : sizes) {
        memset(dst.p, 0xee, dst.n);
        post(a,
             {.op = IBV_WR_RDMA_READ, .wr_id = id, .sges = {sge(dst, 8, n)}, .raddr = src.addr(3), .rkey = src.rkey()});
        check_wc(__LINE__, POLL1(a.scq), send_want(a, id, IBV_WC_RDMA_READ, n));
        SAME(dst.p + 8, src.p + 3, n, "read data");
        CHECK_EQ(dst.p[7], 0xee);
        CHECK_EQ(dst.p[8 + n], 0xee);
        ++id;
    }
    // a read scattered into two SGEs, mixed with sends, completes in order
    Buf rb = mkbuf(d.pd, 4096);
    post_recv(b, 99, {sge(rb, 0, 4096)});
    memset(dst.p, 0xee, dst.n);
    post(a,
         {.op = IBV_WR_RDMA_READ,
          .wr_id = 20,
          .sges = {sge(dst, 0, 3000), sge(dst, 10000, 3000)},
          .raddr = src.addr(),
          .rkey = src.rkey()});
    post(a, {.wr_id = 21, .sges = {sge(src, 0, 100)}});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 20, IBV_WC_RDMA_READ, 6000));
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 21, IBV_WC_SEND));
    check_wc(__LINE__, POLL1(b.rcq), recv_want(b, a, 99, 100));
    SAME(dst.p, src.p, 3000, "read sge 0");
    SAME(dst.p + 10000, src.p + 3000, 3000, "read sge 1");
}

CASE(rc_atomic) {
    Dev d = open_dev("mlx5_0");
    auto [a, b] = pair(d);
    Buf tgt = mkbuf(d.pd, 64), res = mkbuf(d.pd, 64);
    uint64_t* t = reinterpret_cast<uint64_t*>(tgt.p);
    uint64_t* r = reinterpret_cast<uint64_t*>(res.p);
    t[1] = 0x1122334455667788ull;
    // compare & swap that matches
    post(a,
         {.op = IBV_WR_ATOMIC_CMP_AND_SWP,
          .wr_id = 1,
          .sges = {sge(res, 0, 8)},
          .raddr = tgt.addr(8),
          .rkey = tgt.rkey(),
          .cmp = 0x1122334455667788ull,
          .swap = 0xaaaabbbbccccddddull});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 1, IBV_WC_COMP_SWAP, 8));
    CHECK_EQ(r[0], 0x1122334455667788ull);
    CHECK_EQ(t[1], 0xaaaabbbbccccddddull);
    // compare & swap that fails: memory unchanged, the current value returned
    post(a,
         {.op = IBV_WR_ATOMIC_CMP_AND_SWP,
          .wr_id = 2,
          .sges = {sge(res, 8, 8)},
          .raddr = tgt.addr(8),
          .rkey = tgt.rkey(),
          .cmp = 0x1234,
          .swap = 0x5678});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 2, IBV_WC_COMP_SWAP, 8));
    CHECK_EQ(r[1], 0xaaaabbbbccccddddull);
    CHECK_EQ(t[1], 0xaaaabbbbccccddddull);
    // fetch & add, twice, with wrap-around
    t[2] = 0xfffffffffffffff0ull;
    post(a,
         {.op = IBV_WR_ATOMIC_FETCH_AND_ADD,
          .wr_id = 3,
          .sges = {sge(res, 16, 8)},
          .raddr = tgt.addr(16),
          .rkey = tgt.rkey(),
          .swap = 0x20});
    post(a,
         {.op = IBV_WR_ATOMIC_FETCH_AND_ADD,
          .wr_id = 4,
          .sges = {sge(res, 24, 8)},
          .raddr = tgt.addr(16),
          .rkey = tgt.rkey(),
          .swap = 1});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 3, IBV_WC_FETCH_ADD, 8));
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 4, IBV_WC_FETCH_ADD, 8));
    CHECK_EQ(r[2], 0xfffffffffffffff0ull);
    CHECK_EQ(r[3], 0x10ull);
    CHECK_EQ(t[2], 0x11ull);
    CHECK_EQ(t[0], 0);
    CHECK_EQ(t[3], 0);
    // many atomics in flight: the sum is exact
    t[4] = 0;
    for (int i = 0; i < 100; ++i)
        post(a,
             {.op = IBV_WR_ATOMIC_FETCH_AND_ADD,
              .wr_id = uint64_t(100 + i),
              .sges = {sge(res, 32, 8)},
              .flags = i == 99 ? unsigned(IBV_SEND_SIGNALED) : 0u,
              .raddr = tgt.addr(32),
              .rkey = tgt.rkey(),
              .swap = uint64_t(i)});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 199, IBV_WC_FETCH_ADD, 8));
    CHECK_EQ(t[4], 4950);
    CHECK_EQ(r[4], 4950 - 99);
}

CASE(uc_send_write) {
    Dev d = open_dev("mlx5_0");
    QpOpts o;
    o.type = IBV_QPT_UC;
    auto [a, b] = pair(d, o);
    Buf sb = mkbuf(d.pd, 1 << 16), rb = mkbuf(d.pd, (1 << 16) + 64), tb = mkbuf(d.pd, 1 << 16);
    send_one(a, b, sb, rb, 1, 1);
    send_one(a, b, sb, rb, 10000, 2);
    fill(sb, 0, 20000, 3);
    post(a, {.op = IBV_WR_RDMA_WRITE, .wr_id = 3, .sges = {sge(sb, 0, 20000)}, .raddr = tb.addr(), .rkey = tb.rkey()});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 3, IBV_WC_RDMA_WRITE));
    // UC completes at transmission; wait for the data to land
    const uint64_t end = ms_now() + 5000;
    while (memcmp(tb.p, sb.p, 20000) && ms_now() < end)
        usleep(1000);
    SAME(tb.p, sb.p, 20000, "written data");
    post_recv(b, 4, {sge(rb, 0, 64)});
    post(a,
         {.op = IBV_WR_RDMA_WRITE_WITH_IMM,
          .wr_id = 5,
          .sges = {sge(sb, 0, 3000)},
          .imm = htobe32(0x55),
          .raddr = tb.addr(30000),
          .rkey = tb.rkey()});
    Want w = recv_want(b, a, 4, 3000, IBV_WC_RECV_RDMA_WITH_IMM);
    w.imm = htobe32(0x55);
    check_wc(__LINE__, POLL1(b.rcq), w);
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 5, IBV_WC_RDMA_WRITE, -1, true));
    SAME(tb.p + 30000, sb.p, 3000, "write-imm data");
    // UC has no reads or atomics: the provider or device refuses them
    if (try_post(
            a, {.op = IBV_WR_RDMA_READ, .wr_id = 6, .sges = {sge(sb, 0, 8)}, .raddr = tb.addr(), .rkey = tb.rkey()}) ==
        0) {
        ibv_wc wc = POLL1(a.scq);
        CHECK(wc.status != IBV_WC_SUCCESS);
    }
}

struct UdPair {
    Q a, b;
    ibv_ah* ah_ab = nullptr;
};

void ud_check(const Q& a, const Q& b, ibv_ah* ah, Buf& sb, Buf& rb, uint32_t len, uint64_t id, bool grh,
              uint32_t imm = 0) {
    fill(sb, 0, len, static_cast<uint32_t>(id));
    memset(rb.p, 0xee, rb.n);
    post_recv(b, id + 500, {sge(rb, 0, static_cast<uint32_t>(rb.n))});
    post(a,
         {.op = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
          .wr_id = id,
          .sges = {sge(sb, 0, len)},
          .imm = imm,
          .ah = ah,
          .rqpn = b.qpn(),
          .rqkey = b.o.qkey});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, id, IBV_WC_SEND, -1, imm != 0));
    Want w = recv_want(b, a, id + 500, 40 + len);
    w.grh = grh;
    if (imm)
        w.imm = imm;
    check_wc(__LINE__, POLL1(b.rcq), w);
    SAME(rb.p + 40, sb.p, len, "UD payload");
    if (!grh)
        for (int i = 0; i < 40; ++i)
            CHECK_EQ(rb.p[i], 0xee);  // no GRH: the first 40 bytes are not written
}

CASE(ud_send) {
    Dev d = open_dev("mlx5_0");
    QpOpts o;
    o.type = IBV_QPT_UD;
    o.sig_all = true;
    auto [a, b] = pair(d, o);
    ibv_ah_attr aa = ah_to(d, d);
    ibv_ah* ah = ibv_create_ah(d.pd, &aa);
    CHECK(ah);
    Buf sb = mkbuf(d.pd, 4096), rb = mkbuf(d.pd, 4096 + 40);
    ud_check(a, b, ah, sb, rb, 1, 1, is_eth(d));
    ud_check(a, b, ah, sb, rb, 4096, 2, is_eth(d));
    ud_check(a, b, ah, sb, rb, 100, 3, is_eth(d), htobe32(0x99887766));
    // with a GRH: the first 40 bytes are the GRH as sent
    ibv_ah_attr ga = ah_to(d, d, true);
    ga.grh.hop_limit = 7;
    ga.grh.traffic_class = 0x20;
    ga.grh.flow_label = 0x12345;
    ibv_ah* gah = ibv_create_ah(d.pd, &ga);
    CHECK(gah);
    for (uint32_t len : {33u, 1000u}) {
        ud_check(a, b, gah, sb, rb, len, 10 + len, true);
        const uint8_t* g = rb.p;
        const uint32_t w0 = be32toh(*reinterpret_cast<const uint32_t*>(g));
        CHECK_EQ(w0 >> 28, 6);  // IP version 6
        CHECK_EQ((w0 >> 20) & 0xff, 0x20);  // traffic class
        CHECK_EQ(w0 & 0xfffff, 0x12345);  // flow label
        const uint16_t paylen = be16toh(*reinterpret_cast<const uint16_t*>(g + 4));
        CHECK_EQ(paylen, 12 + 8 + ((len + 3) & ~3u) + 4);  // BTH + DETH + payload + pad + ICRC
        CHECK_EQ(g[6], 0x1b);  // next header: IBA transport
        CHECK_EQ(g[7], 7);  // hop limit
        SAME(g + 8, d.gid.raw, 16, "GRH sgid");
        SAME(g + 24, d.gid.raw, 16, "GRH dgid");
    }
    if (!is_eth(d))
        return;
    // RoCE v2: the 40 bytes hold the IP header of the UDP datagram. Each GID
    // of the port in turn; the receiver builds the reply AH from it with
    // Debian's ibv_init_ah_from_wc, which must find the sender's GID again.
    for (int idx = 0; idx < 8; ++idx) {
        ibv_gid gid;
        if (ibv_query_gid(d.ctx, d.port, idx, &gid) || !memcmp(gid.raw, ibv_gid{}.raw, 16))
            break;
        ibv_ah_attr va = ah_to(d, d, true);
        va.grh.sgid_index = static_cast<uint8_t>(idx);
        va.grh.dgid = gid;
        va.grh.hop_limit = 9;
        va.grh.traffic_class = 0x10;
        ibv_ah* vah = ibv_create_ah(d.pd, &va);
        CHECK(vah);
        const uint32_t len = 50;
        fill(sb, 0, len, 77 + idx);
        memset(rb.p, 0xee, rb.n);
        post_recv(b, 700 + idx, {sge(rb, 0, static_cast<uint32_t>(rb.n))});
        post(a, {.wr_id = uint64_t(600 + idx), .sges = {sge(sb, 0, len)}, .ah = vah, .rqpn = b.qpn(), .rqkey = o.qkey});
        check_wc(__LINE__, POLL1(a.scq), send_want(a, 600 + idx, IBV_WC_SEND));
        ibv_wc wc = POLL1(b.rcq);
        Want w = recv_want(b, a, 700 + idx, 40 + len);
        w.grh = true;
        check_wc(__LINE__, wc, w);
        SAME(rb.p + 40, sb.p, len, "payload");
        const uint8_t* g = rb.p;
        static const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        ibv_gid_entry ge{};
        CHECK_OK(ibv_query_gid_ex(d.ctx, d.port, idx, &ge, 0));
        const bool v2 = ge.gid_type == IBV_GID_TYPE_ROCE_V2;
        const bool ipv4 = v2 && !memcmp(gid.raw, v4, 12);
        if (ipv4) {
            for (int i = 0; i < 20; ++i)
                CHECK_EQ(g[i], 0xee);  // only the IPv4 header is written
            const uint8_t* h = g + 20;
            CHECK_EQ(h[0], 0x45);
            CHECK_EQ(h[1], 0x10);
            CHECK_EQ((h[2] << 8 | h[3]), 20 + 8 + 12 + 8 + 52 + 4);
            CHECK_EQ(h[8], 9);
            CHECK_EQ(h[9], 17);
            uint32_t sum = 0;
            for (int i = 0; i < 20; i += 2)
                sum += uint32_t(h[i]) << 8 | h[i + 1];
            while (sum >> 16)
                sum = (sum & 0xffff) + (sum >> 16);
            CHECK_EQ(sum, 0xffff);  // header checksum
            SAME(h + 12, gid.raw + 12, 4, "IPv4 source");
            SAME(h + 16, gid.raw + 12, 4, "IPv4 destination");
        } else {
            CHECK_EQ(g[0] >> 4, 6);
            CHECK_EQ(g[6], v2 ? 17 : 0x1b);  // next header: UDP (v2) or IBA transport (v1)
            SAME(g + 8, gid.raw, 16, "GRH sgid");
        }
        ibv_ah_attr back{};
        CHECK_OK(ibv_init_ah_from_wc(d.ctx, d.port, &wc, reinterpret_cast<ibv_grh*>(rb.p), &back));
        CHECK_EQ(back.is_global, 1);
        SAME(back.grh.dgid.raw, gid.raw, 16, "reply AH dgid");
        CHECK_EQ(back.grh.sgid_index, idx);
    }
}

CASE(ud_qkey) {
    Dev d = open_dev("mlx5_0");
    QpOpts o;
    o.type = IBV_QPT_UD;
    o.sig_all = true;
    auto [a, b] = pair(d, o);
    ibv_ah_attr aa = ah_to(d, d);
    ibv_ah* ah = ibv_create_ah(d.pd, &aa);
    Buf sb = mkbuf(d.pd, 4096), rb = mkbuf(d.pd, 4096 + 40);
    fill(sb, 0, 64, 1);
    post_recv(b, 1, {sge(rb, 0, 4096 + 40)});
    post(a, {.wr_id = 5, .sges = {sge(sb, 0, 64)}, .ah = ah, .rqpn = b.qpn(), .rqkey = o.qkey + 1});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 5, IBV_WC_SEND));  // UD sends complete anyway
    POLL_NONE(b.rcq, 200);  // dropped at the receiver
    // to a QPN nobody has: lost as well
    post(a, {.wr_id = 6, .sges = {sge(sb, 0, 64)}, .ah = ah, .rqpn = b.qpn() + 77, .rqkey = o.qkey});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 6, IBV_WC_SEND));
    POLL_NONE(b.rcq, 100);
    // the right Q_Key: the receive posted before is used
    fill(sb, 0, 64, 2);
    post(a, {.wr_id = 7, .sges = {sge(sb, 0, 64)}, .ah = ah, .rqpn = b.qpn(), .rqkey = o.qkey});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 7, IBV_WC_SEND));
    Want w = recv_want(b, a, 1, 104);
    w.grh = is_eth(d);
    check_wc(__LINE__, POLL1(b.rcq), w);
    SAME(rb.p + 40, sb.p, 64, "payload");
    // too long for the receive buffer: local length error at the receiver
    post_recv(b, 2, {sge(rb, 0, 50)});
    post(a, {.wr_id = 8, .sges = {sge(sb, 0, 64)}, .ah = ah, .rqpn = b.qpn(), .rqkey = o.qkey});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 8, IBV_WC_SEND));
    check_wc(__LINE__, POLL1(b.rcq), err_want(b, 2, IBV_WC_LOC_LEN_ERR));
}

// UD multicast: ibv_attach_mcast checks, every attached QP gets a copy (and
// no one else), detach stops delivery.
CASE(ud_mcast) {
    Dev d = open_dev("mlx5_0");
    QpOpts o;
    o.type = IBV_QPT_UD;
    o.sig_all = true;
    auto [a, b] = pair(d, o);
    auto [c, x] = pair(d, o);
    (void)x;
    ibv_gid mgid{};
    mgid.raw[0] = 0xff;
    mgid.raw[1] = 0x12;
    mgid.raw[2] = 0x40;
    mgid.raw[3] = 0x1b;
    mgid.raw[15] = 0x31;
    const uint16_t mlid = 0xc007;
    // not a multicast GID; on InfiniBand not a multicast LID; an RC QP
    CHECK_EQ(ibv_attach_mcast(b.qp, &d.gid, mlid), EINVAL);
    if (!is_eth(d))
        CHECK_EQ(ibv_attach_mcast(b.qp, &mgid, 0x0001), EINVAL);
    auto [r1, r2] = pair(d);
    (void)r2;
    CHECK_EQ(ibv_attach_mcast(r1.qp, &mgid, mlid), EINVAL);
    CHECK_EQ(ibv_detach_mcast(b.qp, &mgid, mlid), EINVAL);  // not attached
    CHECK_OK(ibv_attach_mcast(b.qp, &mgid, mlid));
    CHECK_OK(ibv_attach_mcast(b.qp, &mgid, mlid));  // twice: fine
    CHECK_OK(ibv_attach_mcast(c.qp, &mgid, mlid));
    ibv_ah_attr ma = ah_to(d, d, true);
    ma.dlid = mlid;
    ma.grh.dgid = mgid;
    ibv_ah* mah = ibv_create_ah(d.pd, &ma);
    CHECK(mah);
    Buf sb = mkbuf(d.pd, 4096), rb = mkbuf(d.pd, 4096 + 40), rc = mkbuf(d.pd, 4096 + 40), ra = mkbuf(d.pd, 4096 + 40);
    fill(sb, 0, 300, 9);
    post_recv(a, 90, {sge(ra, 0, 4096 + 40)});  // the sender is not a member
    post_recv(b, 91, {sge(rb, 0, 4096 + 40)});
    post_recv(c, 92, {sge(rc, 0, 4096 + 40)});
    post(a, {.wr_id = 1, .sges = {sge(sb, 0, 300)}, .ah = mah, .rqpn = 0xffffff, .rqkey = o.qkey});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 1, IBV_WC_SEND));
    for (auto [q, id, buf] : {std::tuple<Q*, uint64_t, Buf*>{&b, 91, &rb}, {&c, 92, &rc}}) {
        Want w = recv_want(*q, a, id, 40 + 300);
        w.grh = true;
        check_wc(__LINE__, POLL1(q->rcq), w);
        SAME(buf->p + 40, sb.p, 300, "multicast payload");
        SAME(buf->p + 24, mgid.raw, 16, "GRH destination: the group");
    }
    POLL_NONE(a.rcq, 100);
    // c leaves: only b gets the next one; c's posted receive stays unused
    CHECK_OK(ibv_detach_mcast(c.qp, &mgid, mlid));
    CHECK_EQ(ibv_detach_mcast(c.qp, &mgid, mlid), EINVAL);
    post_recv(b, 93, {sge(rb, 0, 4096 + 40)});
    post_recv(c, 94, {sge(rc, 0, 4096 + 40)});
    fill(sb, 0, 64, 10);
    post(a, {.wr_id = 2, .sges = {sge(sb, 0, 64)}, .ah = mah, .rqpn = 0xffffff, .rqkey = o.qkey});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 2, IBV_WC_SEND));
    Want w = recv_want(b, a, 93, 40 + 64);
    w.grh = true;
    check_wc(__LINE__, POLL1(b.rcq), w);
    SAME(rb.p + 40, sb.p, 64, "multicast payload");
    POLL_NONE(c.rcq, 200);
    // a destroyed member leaves the group: the sender still works
    CHECK_OK(ibv_destroy_qp(b.qp));
    post(a, {.wr_id = 3, .sges = {sge(sb, 0, 64)}, .ah = mah, .rqpn = 0xffffff, .rqkey = o.qkey});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 3, IBV_WC_SEND));
    POLL_NONE(c.rcq, 100);
}

// A packet reaching a QP still in RTR: IBV_EVENT_COMM_EST once; the data is
// received all the same.
CASE(comm_est) {
    Dev d = open_dev("mlx5_0");
    for (ibv_qp_type t : {IBV_QPT_RC, IBV_QPT_UC}) {
        QpOpts o;
        o.type = t;
        Q a = mkqp(d, o), b = mkqp(d, o);
        to_rtr_rts(a, b);
        ibv_qp_attr m{};
        m.qp_state = IBV_QPS_RTR;
        m.path_mtu = o.mtu;
        m.dest_qp_num = a.qpn();
        m.rq_psn = a.o.psn;
        m.ah_attr = ah_to(d, d);
        int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        if (t == IBV_QPT_RC) {
            m.max_dest_rd_atomic = 4;
            m.min_rnr_timer = o.min_rnr;
            mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        }
        CHECK_OK(ibv_modify_qp(b.qp, &m, mask));
        Buf sb = mkbuf(d.pd, 4096), rb = mkbuf(d.pd, 4096);
        async_none(__LINE__, d, 50);
        send_one(a, b, sb, rb, 100, 1);
        ibv_async_event ev = ASYNC_WAIT(d);
        CHECK_EQ(ev.event_type, IBV_EVENT_COMM_EST);
        CHECK(ev.element.qp == b.qp);
        send_one(a, b, sb, rb, 100, 2);  // once per connection
        async_none(__LINE__, d, 100);
        CHECK_OK(ibv_destroy_qp(a.qp));
        CHECK_OK(ibv_destroy_qp(b.qp));
    }
}

CASE(srq) {
    Dev d = open_dev("mlx5_0");
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 128;
    sa.attr.max_sge = 2;
    ibv_srq* srq = ibv_create_srq(d.pd, &sa);
    CHECK(srq);
    ibv_cq* rcq = mkcq(d, 512);
    constexpr int kQps = 8, kMsgs = 4, kPosted = 40;
    std::vector<Q> snd, rcv;
    for (int i = 0; i < kQps; ++i) {
        QpOpts ro;
        ro.srq = srq;
        ro.rcq = rcq;
        Q s = mkqp(d, QpOpts{}), r = mkqp(d, ro);
        connect(s, r);
        snd.push_back(s);
        rcv.push_back(r);
    }
    Buf sb = mkbuf(d.pd, kQps * kMsgs * 256), rb = mkbuf(d.pd, kPosted * 256);
    for (int i = 0; i < kPosted; ++i)
        post_srq_recv(srq, 1000 + i, {sge(rb, i * 256, 128), sge(rb, i * 256 + 128, 128)});
    ibv_srq_attr lim{};
    lim.srq_limit = 10;
    CHECK_OK(ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT));
    async_none(__LINE__, d, 50);
    for (int m = 0; m < kMsgs; ++m)
        for (int i = 0; i < kQps; ++i) {
            uint8_t* p = sb.p + (m * kQps + i) * 256;
            memset(p, 0, 200);
            p[0] = static_cast<uint8_t>(i);
            p[1] = static_cast<uint8_t>(m);
            p[199] = 0x77;
            post(snd[i], {.wr_id = uint64_t(m), .sges = {sge(sb, (m * kQps + i) * 256, 200)}});
        }
    int seen[kQps] = {};
    std::vector<bool> used(kPosted);
    for (int k = 0; k < kQps * kMsgs; ++k) {
        ibv_wc wc = POLL1(rcq);
        int qi = -1;
        for (int i = 0; i < kQps; ++i)
            if (rcv[i].qpn() == wc.qp_num)
                qi = i;
        CHECK(qi >= 0);
        CHECK(wc.wr_id >= 1000 && wc.wr_id < 1000 + kPosted);
        const int slot = static_cast<int>(wc.wr_id - 1000);
        CHECK(!used[slot]);
        used[slot] = true;
        check_wc(__LINE__, wc, recv_want(rcv[qi], snd[qi], wc.wr_id, 200));
        const uint8_t* got = rb.p + slot * 256;
        CHECK_EQ(got[0], qi);
        CHECK_EQ(got[1], seen[qi]);  // in order per QP
        CHECK_EQ(got[128 + 71], 0x77);
        ++seen[qi];
    }
    for (int i = 0; i < kQps; ++i)
        for (int m = 0; m < kMsgs; ++m)
            check_wc(__LINE__, POLL1(snd[i].scq), send_want(snd[i], m, IBV_WC_SEND));
    // 40 posted, 32 taken: 8 left < limit 10
    ibv_async_event ev = ASYNC_WAIT(d);
    CHECK_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
    CHECK(ev.element.srq == srq);
    async_none(__LINE__, d, 50);  // one-shot
    ibv_srq_attr qa{};
    CHECK_OK(ibv_query_srq(srq, &qa));
    CHECK_EQ(qa.srq_limit, 0);  // disarmed by the event
    // a receive QP on the SRQ that goes to error: LAST_WQE_REACHED, SRQ WQEs not flushed
    ibv_qp_attr ea{};
    ea.qp_state = IBV_QPS_ERR;
    CHECK_OK(ibv_modify_qp(rcv[0].qp, &ea, IBV_QP_STATE));
    ev = ASYNC_WAIT(d);
    CHECK_EQ(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
    CHECK(ev.element.qp == rcv[0].qp);
    POLL_NONE(rcq, 50);
    // the SRQ still serves the others
    post(snd[1], {.wr_id = 9, .sges = {sge(sb, 0, 10)}});
    ibv_wc wc = POLL1(rcq);
    CHECK_EQ(wc.status, IBV_WC_SUCCESS);
    CHECK_EQ(wc.qp_num, rcv[1].qpn());
}

// waits for a completion event on ch; false after ms
bool chan_wait(ibv_comp_channel* ch, int ms, ibv_cq** cq_out) {
    pollfd pf{ch->fd, POLLIN, 0};
    if (poll(&pf, 1, ms) != 1)
        return false;
    void* ctx;
    ibv_cq* cq;
    CHECK_OK(ibv_get_cq_event(ch, &cq, &ctx));
    ibv_ack_cq_events(cq, 1);
    *cq_out = cq;
    return true;
}

// A connected pair whose receiver's CQs report to a completion channel,
// with `recvs` receives posted there (ids 0 on).
struct EventPair {
    ibv_comp_channel* ch;
    Q a, b;
    Buf sb, rb;
};

EventPair event_pair(Dev& d, int recvs) {
    ibv_comp_channel* ch = ibv_create_comp_channel(d.ctx);
    CHECK(ch);
    QpOpts ob;
    ob.ch = ch;
    EventPair p{ch, mkqp(d, QpOpts{}), mkqp(d, ob), mkbuf(d.pd, 4096), mkbuf(d.pd, 4096)};
    connect(p.a, p.b);
    for (int i = 0; i < recvs; ++i)
        post_recv(p.b, i, {sge(p.rb, 0, 4096)});
    return p;
}

CASE(comp_channel) {
    Dev d = open_dev("mlx5_0");
    auto [ch, a, b, sb, rb] = event_pair(d, 8);
    ibv_cq* got = nullptr;
    // not armed: no event
    post(a, {.wr_id = 0, .sges = {sge(sb, 0, 10)}});
    check_wc(__LINE__, POLL1(b.rcq), recv_want(b, a, 0, 10));
    CHECK(!chan_wait(ch, 100, &got));
    // armed for any completion
    CHECK_OK(ibv_req_notify_cq(b.rcq, 0));
    post(a, {.wr_id = 1, .sges = {sge(sb, 0, 11)}});
    CHECK(chan_wait(ch, 5000, &got));
    CHECK(got == b.rcq);
    check_wc(__LINE__, POLL1(b.rcq), recv_want(b, a, 1, 11));
    // one event per arm
    post(a, {.wr_id = 2, .sges = {sge(sb, 0, 12)}});
    check_wc(__LINE__, POLL1(b.rcq), recv_want(b, a, 2, 12));
    CHECK(!chan_wait(ch, 100, &got));
    // solicited only: an unsolicited message does not fire, a solicited one does
    CHECK_OK(ibv_req_notify_cq(b.rcq, 1));
    post(a, {.wr_id = 3, .sges = {sge(sb, 0, 13)}});
    CHECK(!chan_wait(ch, 200, &got));
    post(a, {.wr_id = 4, .sges = {sge(sb, 0, 14)}, .flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED});
    CHECK(chan_wait(ch, 5000, &got));
    CHECK(got == b.rcq);
    check_wc(__LINE__, POLL1(b.rcq), recv_want(b, a, 3, 13));
    check_wc(__LINE__, POLL1(b.rcq), recv_want(b, a, 4, 14));
    // armed while a completion is already waiting: fires at once
    post(a, {.wr_id = 5, .sges = {sge(sb, 0, 15)}});
    usleep(100000);
    CHECK_OK(ibv_req_notify_cq(b.rcq, 0));
    CHECK(chan_wait(ch, 5000, &got));
    check_wc(__LINE__, POLL1(b.rcq), recv_want(b, a, 5, 15));
    for (int i = 0; i < 5; ++i)
        check_wc(__LINE__, POLL1(a.scq), send_want(a, i, IBV_WC_SEND));
    CHECK_OK(ibv_destroy_qp(b.qp));
    CHECK_OK(ibv_destroy_cq(b.rcq));  // returns: every event was acknowledged
}

// Event moderation (ibv_modify_cq): an armed CQ's event waits for the
// count of CQEs, or for the period after the first of them; the refusals.
CASE(cq_moderation) {
    Dev d = open_dev("mlx5_0");
    ibv_device_attr_ex ax{};
    CHECK_OK(ibv_query_device_ex(d.ctx, nullptr, &ax));
    CHECK_EQ(ax.cq_mod_caps.max_cq_count, 0xffffu);
    CHECK_EQ(ax.cq_mod_caps.max_cq_period, 0xfffu);
    auto [ch, a, b, sb, rb] = event_pair(d, 16);
    ibv_modify_cq_attr m{};
    m.attr_mask = IBV_CQ_ATTR_MODERATE;
    m.moderate.cq_period = 0x1000;  // beyond the device's period
    CHECK_EQ(ibv_modify_cq(b.rcq, &m), EINVAL);
    m.attr_mask = IBV_CQ_ATTR_RESERVED;
    CHECK_EQ(ibv_modify_cq(b.rcq, &m), EINVAL);
    m.attr_mask = 0;
    CHECK_EQ(ibv_modify_cq(b.rcq, &m), EINVAL);
    ibv_cq* got = nullptr;
    // three CQEs per event, whatever the time
    m.attr_mask = IBV_CQ_ATTR_MODERATE;
    m.moderate.cq_count = 3;
    m.moderate.cq_period = 0;
    CHECK_OK(ibv_modify_cq(b.rcq, &m));
    CHECK_OK(ibv_req_notify_cq(b.rcq, 0));
    uint64_t id = 0;
    for (int i = 0; i < 2; ++i, ++id)
        post(a, {.wr_id = id, .sges = {sge(sb, 0, 8)}});
    for (int i = 0; i < 2; ++i)
        POLL1(a.scq);
    CHECK(!chan_wait(ch, 200, &got));  // two are not enough
    post(a, {.wr_id = id++, .sges = {sge(sb, 0, 8)}});
    CHECK(chan_wait(ch, 5000, &got));
    CHECK(got == b.rcq);
    for (int i = 0; i < 3; ++i)
        POLL1(b.rcq);
    POLL1(a.scq);
    // one message under the given moderation, armed first; how long its
    // event took
    const auto one_event = [&](uint16_t count, uint16_t period) {
        m.moderate.cq_count = count;
        m.moderate.cq_period = period;
        CHECK_OK(ibv_modify_cq(b.rcq, &m));
        CHECK_OK(ibv_req_notify_cq(b.rcq, 0));
        const uint64_t t0 = ms_now();
        post(a, {.wr_id = id++, .sges = {sge(sb, 0, 8)}});
        CHECK(chan_wait(ch, 5000, &got));
        const uint64_t took = ms_now() - t0;
        POLL1(b.rcq);
        POLL1(a.scq);
        return took;
    };
    CHECK(one_event(100, 4000) >= 4);  // a period of 4 ms: one CQE waits for it
    one_event(0, 0);  // moderation off: the next CQE fires
    CHECK_OK(ibv_destroy_qp(b.qp));
    CHECK_OK(ibv_destroy_cq(b.rcq));  // every event was acknowledged
}

// after an error: everything posted later flushes, sends and receives, in order
void check_flush_after(Q& a, Buf& b, uint64_t base) {
    CHECK_EQ(qp_state(a), IBV_QPS_ERR);
    for (int i = 0; i < 3; ++i)
        post(a, {.wr_id = base + i, .sges = {sge(b, 0, 8)}, .flags = i == 1 ? 0u : unsigned(IBV_SEND_SIGNALED)});
    for (int i = 0; i < 3; ++i)
        post_recv(a, base + 10 + i, {sge(b, 0, 8)});
    for (int i = 0; i < 3; ++i) {
        ibv_wc wc = POLL1(a.scq);
        if (i == 1 && wc.wr_id == base + 2) {  // unsignaled WQEs need not produce a flush CQE
            check_wc(__LINE__, wc, err_want(a, base + 2, IBV_WC_WR_FLUSH_ERR));
            break;
        }
        check_wc(__LINE__, wc, err_want(a, base + i, IBV_WC_WR_FLUSH_ERR));
    }
    for (int i = 0; i < 3; ++i)
        check_wc(__LINE__, POLL1(a.rcq), err_want(a, base + 10 + i, IBV_WC_WR_FLUSH_ERR));
    POLL_NONE(a.scq, 20);
    POLL_NONE(a.rcq, 20);
}

void rnr_case(uint8_t rnr_retry) {
    Dev d = open_dev("mlx5_0");
    QpOpts oa, ob;
    oa.rnr_retry = rnr_retry;
    ob.min_rnr = 1;  // 0.01 ms
    auto [a, b] = pair(d, d, oa, ob);
    Buf sb = mkbuf(d.pd, 4096);
    post_recv(a, 900, {sge(sb, 0, 64)});  // posted before the error: flushed
    const uint64_t t0 = ms_now();
    post(a, {.wr_id = 1, .sges = {sge(sb, 0, 100)}});
    post(a, {.wr_id = 2, .sges = {sge(sb, 0, 100)}});
    check_wc(__LINE__, POLL1(a.scq), err_want(a, 1, IBV_WC_RNR_RETRY_EXC_ERR));
    check_wc(__LINE__, POLL1(a.scq), err_want(a, 2, IBV_WC_WR_FLUSH_ERR));
    check_wc(__LINE__, POLL1(a.rcq), err_want(a, 900, IBV_WC_WR_FLUSH_ERR));
    CHECK(ms_now() - t0 < 3000);
    check_flush_after(a, sb, 100);
    // the responder saw no error
    CHECK_EQ(qp_state(b), IBV_QPS_RTS);
    POLL_NONE(b.rcq, 20);
}

CASE(rnr_retry0) { rnr_case(0); }
CASE(rnr_retry1) { rnr_case(1); }

CASE(rnr_recover) {
    Dev d = open_dev("mlx5_0");
    QpOpts oa, ob;
    oa.rnr_retry = 7;  // forever
    ob.min_rnr = 12;  // 0.64 ms
    auto [a, b] = pair(d, d, oa, ob);
    Buf sb = mkbuf(d.pd, 8192), rb = mkbuf(d.pd, 8192);
    fill(sb, 0, 8192, 4);
    post(a, {.wr_id = 1, .sges = {sge(sb, 0, 5000)}});
    post(a, {.wr_id = 2, .sges = {sge(sb, 100, 10)}});
    usleep(100000);
    POLL_NONE(a.scq, 10);
    post_recv(b, 11, {sge(rb, 0, 8192)});
    check_wc(__LINE__, POLL1(b.rcq), recv_want(b, a, 11, 5000));
    SAME(rb.p, sb.p, 5000, "data after RNR");
    usleep(20000);
    post_recv(b, 12, {sge(rb, 0, 8192)});
    check_wc(__LINE__, POLL1(b.rcq), recv_want(b, a, 12, 10));
    SAME(rb.p, sb.p + 100, 10, "second message");
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 1, IBV_WC_SEND));
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 2, IBV_WC_SEND));
}

CASE(retry_exceeded) {
    Dev d = open_dev("mlx5_0");
    // (1) the peer QP is destroyed
    {
        QpOpts o;
        o.timeout = 8;  // ~1 ms
        o.retry = 2;
        auto [a, b] = pair(d, o);
        CHECK_OK(ibv_destroy_qp(b.qp));
        Buf sb = mkbuf(d.pd, 4096);
        const uint64_t t0 = ms_now();
        post(a, {.wr_id = 1, .sges = {sge(sb, 0, 100)}});
        post(a,
             {.op = IBV_WR_RDMA_WRITE, .wr_id = 2, .sges = {sge(sb, 0, 100)}, .raddr = sb.addr(), .rkey = sb.rkey()});
        check_wc(__LINE__, POLL1(a.scq), err_want(a, 1, IBV_WC_RETRY_EXC_ERR));
        check_wc(__LINE__, POLL1(a.scq), err_want(a, 2, IBV_WC_WR_FLUSH_ERR));
        CHECK(ms_now() - t0 < 5000);
        check_flush_after(a, sb, 10);
    }
    // (2) a wrong destination QPN
    {
        QpOpts o;
        o.timeout = 8;
        o.retry = 1;
        o.dest_qpn_delta = 0x33;
        auto [a, b] = pair(d, o);
        Buf sb = mkbuf(d.pd, 4096);
        post(a, {.op = IBV_WR_RDMA_READ, .wr_id = 3, .sges = {sge(sb, 0, 100)}, .raddr = sb.addr(), .rkey = sb.rkey()});
        check_wc(__LINE__, POLL1(a.scq), err_want(a, 3, IBV_WC_RETRY_EXC_ERR));
        CHECK_EQ(qp_state(a), IBV_QPS_ERR);
    }
}

CASE(rem_access) {
    Dev d = open_dev("mlx5_0");
    // (1) RDMA write with a bad rkey
    {
        auto [a, b] = pair(d);
        Buf sb = mkbuf(d.pd, 4096), tb = mkbuf(d.pd, 4096);
        post_recv(b, 55, {sge(tb, 0, 64)});
        post(a,
             {.op = IBV_WR_RDMA_WRITE,
              .wr_id = 1,
              .sges = {sge(sb, 0, 100)},
              .raddr = tb.addr(),
              .rkey = tb.rkey() ^ 0x100});
        post(a, {.wr_id = 2, .sges = {sge(sb, 0, 10)}});
        check_wc(__LINE__, POLL1(a.scq), err_want(a, 1, IBV_WC_REM_ACCESS_ERR));
        check_wc(__LINE__, POLL1(a.scq), err_want(a, 2, IBV_WC_WR_FLUSH_ERR));
        // the responder: QP_ACCESS_ERR, to error, its receive flushed
        ibv_async_event ev = ASYNC_WAIT(d);
        CHECK_EQ(ev.event_type, IBV_EVENT_QP_ACCESS_ERR);
        CHECK(ev.element.qp == b.qp);
        CHECK_EQ(qp_state(b), IBV_QPS_ERR);
        check_wc(__LINE__, POLL1(b.rcq), err_want(b, 55, IBV_WC_WR_FLUSH_ERR));
        check_flush_after(a, sb, 10);
    }
    // (2) RDMA read of an MR without REMOTE_READ
    {
        auto [a, b] = pair(d);
        Buf sb = mkbuf(d.pd, 4096), tb = mkbuf(d.pd, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        post(a, {.op = IBV_WR_RDMA_READ, .wr_id = 3, .sges = {sge(sb, 0, 100)}, .raddr = tb.addr(), .rkey = tb.rkey()});
        check_wc(__LINE__, POLL1(a.scq), err_want(a, 3, IBV_WC_REM_ACCESS_ERR));
        ibv_async_event ev = ASYNC_WAIT(d);
        CHECK_EQ(ev.event_type, IBV_EVENT_QP_ACCESS_ERR);
        CHECK(ev.element.qp == b.qp);
    }
    // (3) a write beyond the end of the remote MR; an atomic on a QP without REMOTE_ATOMIC
    {
        auto [a, b] = pair(d);
        Buf sb = mkbuf(d.pd, 8192), tb = mkbuf(d.pd, 4096);
        post(a,
             {.op = IBV_WR_RDMA_WRITE,
              .wr_id = 4,
              .sges = {sge(sb, 0, 200)},
              .raddr = tb.addr(4000),
              .rkey = tb.rkey()});
        check_wc(__LINE__, POLL1(a.scq), err_want(a, 4, IBV_WC_REM_ACCESS_ERR));
        CHECK_EQ(ASYNC_WAIT(d).event_type, IBV_EVENT_QP_ACCESS_ERR);
        CHECK_EQ(tb.p[4000], 0);
    }
    {
        QpOpts ob;
        ob.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
        auto [a, b] = pair(d, d, QpOpts{}, ob);
        Buf sb = mkbuf(d.pd, 64), tb = mkbuf(d.pd, 64);
        post(a,
             {.op = IBV_WR_ATOMIC_FETCH_AND_ADD,
              .wr_id = 5,
              .sges = {sge(sb, 0, 8)},
              .raddr = tb.addr(),
              .rkey = tb.rkey(),
              .swap = 1});
        check_wc(__LINE__, POLL1(a.scq), err_want(a, 5, IBV_WC_REM_ACCESS_ERR));
        CHECK_EQ(ASYNC_WAIT(d).event_type, IBV_EVENT_QP_ACCESS_ERR);
        CHECK_EQ(tb.p[0], 0);
    }
    // (4) an atomic on an address that is not 8-byte aligned: invalid request
    {
        auto [a, b] = pair(d);
        Buf sb = mkbuf(d.pd, 64), tb = mkbuf(d.pd, 64);
        post(a,
             {.op = IBV_WR_ATOMIC_FETCH_AND_ADD,
              .wr_id = 6,
              .sges = {sge(sb, 0, 8)},
              .raddr = tb.addr(4),
              .rkey = tb.rkey(),
              .swap = 1});
        check_wc(__LINE__, POLL1(a.scq), err_want(a, 6, IBV_WC_REM_INV_REQ_ERR));
        ibv_async_event ev = ASYNC_WAIT(d);
        CHECK_EQ(ev.event_type, IBV_EVENT_QP_REQ_ERR);
        CHECK(ev.element.qp == b.qp);
    }
}

CASE(loc_prot) {
    Dev d = open_dev("mlx5_0");
    ibv_pd* other = ibv_alloc_pd(d.ctx);
    CHECK(other);
    // (1) send from an MR of another PD
    {
        auto [a, b] = pair(d);
        Buf ob = mkbuf(other, 4096), rb = mkbuf(d.pd, 4096);
        post_recv(b, 1, {sge(rb, 0, 4096)});
        post(a, {.wr_id = 1, .sges = {sge(ob, 0, 100)}});
        check_wc(__LINE__, POLL1(a.scq), err_want(a, 1, IBV_WC_LOC_PROT_ERR));
        POLL_NONE(b.rcq, 50);  // nothing went out
        check_flush_after(a, rb, 10);
    }
    // (2) an SGE reaching beyond its MR; (3) an unknown lkey
    for (int v = 0; v < 2; ++v) {
        auto [a, b] = pair(d);
        Buf sb = mkbuf(d.pd, 4096);
        ibv_sge s = v == 0 ? sge(sb, 4000, 200) : ibv_sge{sb.addr(), 10, sb.lkey() + 0x1000};
        post(a, {.wr_id = 7, .sges = {s}});
        check_wc(__LINE__, POLL1(a.scq), err_want(a, 7, IBV_WC_LOC_PROT_ERR));
    }
    // (4) an RDMA read into memory without LOCAL_WRITE
    {
        auto [a, b] = pair(d);
        Buf src = mkbuf(d.pd, 4096), ro = mkbuf(d.pd, 4096, 0);
        post(a,
             {.op = IBV_WR_RDMA_READ, .wr_id = 8, .sges = {sge(ro, 0, 64)}, .raddr = src.addr(), .rkey = src.rkey()});
        check_wc(__LINE__, POLL1(a.scq), err_want(a, 8, IBV_WC_LOC_PROT_ERR));
    }
    // (5) a receive SGE of another PD: the responder reports it, the requester gets a NAK
    {
        auto [a, b] = pair(d);
        Buf sb = mkbuf(d.pd, 4096), ob = mkbuf(other, 4096);
        post_recv(b, 9, {sge(ob, 0, 4096)});
        post(a, {.wr_id = 9, .sges = {sge(sb, 0, 100)}});
        check_wc(__LINE__, POLL1(b.rcq), err_want(b, 9, IBV_WC_LOC_PROT_ERR));
        check_wc(__LINE__, POLL1(a.scq), err_want(a, 9, IBV_WC_REM_OP_ERR));
        CHECK_EQ(qp_state(b), IBV_QPS_ERR);
        CHECK_EQ(qp_state(a), IBV_QPS_ERR);
    }
}

// On-demand paging: the capabilities, MRs that pin nothing (memory mapped
// after the registration), the implicit MR over the whole address space,
// and ibv_advise_mr's answers.
CASE(odp) {
    Dev d = open_dev("mlx5_0");
    ibv_device_attr_ex ax{};
    CHECK_OK(ibv_query_device_ex(d.ctx, nullptr, &ax));
    constexpr uint32_t kEvery = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
        IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
    const ibv_odp_caps& oc = ax.odp_caps;
    const bool odp = oc.general_caps != 0;
    const char* cfgfile = getenv("UVERBS_SIM_CONFIG");
    const bool want_odp = !cfgfile || !strstr(cfgfile, "odp-off");
    CHECK_EQ(odp, want_odp);
    constexpr int kOdp = kAll | IBV_ACCESS_ON_DEMAND;
    if (!odp) {
        // a device without page faults: the MR and the advice are refused
        CHECK_EQ(oc.per_transport_caps.rc_odp_caps, 0u);
        CHECK_EQ(ax.xrc_odp_caps, 0u);
        std::vector<uint8_t> mem(4096);
        errno = 0;
        CHECK(!ibv_reg_mr(d.pd, mem.data(), mem.size(), kOdp));
        CHECK_EQ(errno, EOPNOTSUPP);
        Buf b = mkbuf(d.pd, 4096);
        ibv_sge s = sge(b, 0, 64);
        CHECK_EQ(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &s, 1), EOPNOTSUPP);
        return;
    }
    CHECK_EQ(oc.general_caps, uint64_t(IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT));
    CHECK_EQ(oc.per_transport_caps.rc_odp_caps, kEvery);
    CHECK_EQ(oc.per_transport_caps.uc_odp_caps, 0u);
    CHECK_EQ(oc.per_transport_caps.ud_odp_caps, uint32_t(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_SRQ_RECV));
    CHECK_EQ(ax.xrc_odp_caps, kEvery);

    // (1) an MR over memory that is not there yet: nothing is pinned, the
    // pages are looked up when the device touches them
    const size_t len = 1 << 16;
    void* area = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(area != MAP_FAILED);
    CHECK_OK(munmap(area, len));
    errno = 0;
    CHECK(!ibv_reg_mr(d.pd, area, len, kAll));  // a pinned MR needs the pages
    CHECK_EQ(errno, EFAULT);
    ibv_mr* lazy = ibv_reg_mr(d.pd, area, len, kOdp);
    CHECK(lazy);
    ibv_sge ls{reinterpret_cast<uint64_t>(area), 4096, lazy->lkey};
    // prefetching absent pages: EFAULT with a fault, nothing without
    CHECK_EQ(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, &ls, 1), EFAULT);
    CHECK_EQ(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, IBV_ADVISE_MR_FLAG_FLUSH, &ls, 1), 0);
    CHECK_EQ(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, &ls, 1), 0);  // queued: not reported
    void* back = mmap(area, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    CHECK(back == area);
    uint8_t* mem = static_cast<uint8_t*>(area);
    CHECK_EQ(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, &ls, 1), 0);
    {
        auto [a, b] = pair(d);
        Buf rb = mkbuf(d.pd, len);
        for (size_t i = 0; i < 3000; ++i)
            mem[i] = static_cast<uint8_t>(i * 7);
        post_recv(b, 1, {sge(rb, 0, 4096)});
        post(a, {.wr_id = 1, .sges = {ibv_sge{reinterpret_cast<uint64_t>(mem), 3000, lazy->lkey}}});
        check_wc(__LINE__, POLL1(a.scq), send_want(a, 1, IBV_WC_SEND));
        check_wc(__LINE__, POLL1(b.rcq), recv_want(b, a, 1, 3000));
        SAME(rb.p, mem, 3000, "sent from an on-demand MR");
        // the peer writes into it, reads it, and adds to it
        fill(rb, 0, 2048, 5);
        post(b,
             {.op = IBV_WR_RDMA_WRITE,
              .wr_id = 2,
              .sges = {sge(rb, 0, 2048)},
              .raddr = reinterpret_cast<uint64_t>(mem + 8192),
              .rkey = lazy->rkey});
        check_wc(__LINE__, POLL1(b.scq), send_want(b, 2, IBV_WC_RDMA_WRITE));
        SAME(mem + 8192, rb.p, 2048, "written into an on-demand MR");
        post(b,
             {.op = IBV_WR_RDMA_READ,
              .wr_id = 3,
              .sges = {sge(rb, 4096, 100)},
              .raddr = reinterpret_cast<uint64_t>(mem + 50),
              .rkey = lazy->rkey});
        check_wc(__LINE__, POLL1(b.scq), send_want(b, 3, IBV_WC_RDMA_READ, 100));
        SAME(rb.p + 4096, mem + 50, 100, "read from an on-demand MR");
        uint64_t* t = reinterpret_cast<uint64_t*>(mem + 16384);
        *t = 40;
        post(b,
             {.op = IBV_WR_ATOMIC_FETCH_AND_ADD,
              .wr_id = 4,
              .sges = {sge(rb, 8192, 8)},
              .raddr = reinterpret_cast<uint64_t>(t),
              .rkey = lazy->rkey,
              .swap = 2});
        check_wc(__LINE__, POLL1(b.scq), send_want(b, 4, IBV_WC_FETCH_ADD, 8));
        CHECK_EQ(*t, 42u);
    }

    // (2) advice the device refuses
    Buf plain = mkbuf(d.pd, 4096);
    ibv_sge ps = sge(plain, 0, 64);
    CHECK_EQ(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &ps, 1), ENOENT);
    CHECK_EQ(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &ps, 1), EINVAL);
    ibv_pd* other = ibv_alloc_pd(d.ctx);
    CHECK(other);
    CHECK_EQ(ibv_advise_mr(other, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &ls, 1), ENOENT);
    ibv_sge beyond{reinterpret_cast<uint64_t>(mem) + len - 10, 20, lazy->lkey};
    CHECK_EQ(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &beyond, 1), EFAULT);
    CHECK_EQ(ibv_advise_mr(d.pd, static_cast<ibv_advise_mr_advice>(7), IBV_ADVISE_MR_FLAG_FLUSH, &ls, 1), EOPNOTSUPP);
    CHECK_EQ(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 2, &ls, 1), EINVAL);
    CHECK_EQ(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &ls, 0), EINVAL);
    std::vector<uint8_t> ro_mem(4096);
    ibv_mr* ro = ibv_reg_mr(d.pd, ro_mem.data(), ro_mem.size(), IBV_ACCESS_ON_DEMAND);
    CHECK(ro);
    ibv_sge rs{reinterpret_cast<uint64_t>(ro_mem.data()), 64, ro->lkey};
    CHECK_EQ(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, &rs, 1), ENOENT);
    CHECK_EQ(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &rs, 1), 0);
    CHECK_OK(ibv_dereg_mr(ro));

    // (3) the implicit MR: every address of the process, at its own address
    errno = 0;
    CHECK(!ibv_reg_mr_iova(d.pd, nullptr, SIZE_MAX, 4096, kOdp));
    CHECK_EQ(errno, EINVAL);
    ibv_mr* all = ibv_reg_mr(d.pd, nullptr, SIZE_MAX, kOdp);
    CHECK(all);
    CHECK_EQ(all->length, SIZE_MAX);
    {
        auto [a, b] = pair(d);
        std::vector<uint8_t> src(5000), dst(5000, 0xee), far(600, 0);
        for (size_t i = 0; i < src.size(); ++i)
            src[i] = static_cast<uint8_t>(i * 13 + 1);
        post_recv(b, 5, {ibv_sge{reinterpret_cast<uint64_t>(dst.data()), 5000, all->lkey}});
        post(a, {.wr_id = 5, .sges = {ibv_sge{reinterpret_cast<uint64_t>(src.data()), 5000, all->lkey}}});
        check_wc(__LINE__, POLL1(a.scq), send_want(a, 5, IBV_WC_SEND));
        check_wc(__LINE__, POLL1(b.rcq), recv_want(b, a, 5, 5000));
        SAME(dst.data(), src.data(), 5000, "sent through the implicit MR");
        post(a,
             {.op = IBV_WR_RDMA_WRITE,
              .wr_id = 6,
              .sges = {ibv_sge{reinterpret_cast<uint64_t>(src.data()), 600, all->lkey}},
              .raddr = reinterpret_cast<uint64_t>(far.data()),
              .rkey = all->rkey});
        check_wc(__LINE__, POLL1(a.scq), send_want(a, 6, IBV_WC_RDMA_WRITE));
        SAME(far.data(), src.data(), 600, "written through the implicit MR");
        ibv_sge is{reinterpret_cast<uint64_t>(src.data()), 5000, all->lkey};
        CHECK_EQ(ibv_advise_mr(d.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &is, 1), 0);
    }
    CHECK_OK(ibv_dereg_mr(all));
    CHECK_OK(ibv_dereg_mr(lazy));
    CHECK_OK(munmap(area, len));
}

// Device memory (MEMIC): allocation, the 4-byte copies and their refusals,
// zero-based DM MRs as send, receive and RDMA targets, EBUSY while an MR
// uses it, exhaustion, and mlx5dv_alloc_dm's types.
CASE(dm) {
    Dev d = open_dev("mlx5_0");
    ibv_device_attr_ex ax{};
    CHECK_OK(ibv_query_device_ex(d.ctx, nullptr, &ax));
    const char* cfgfile = getenv("UVERBS_SIM_CONFIG");
    if (cfgfile && strstr(cfgfile, "dm-off")) {
        // a device without device memory
        CHECK_EQ(ax.max_dm_size, 0u);
        ibv_alloc_dm_attr a{.length = 64, .log_align_req = 0, .comp_mask = 0};
        errno = 0;
        CHECK(!ibv_alloc_dm(d.ctx, &a));
        CHECK_EQ(errno, EINVAL);  // more than the device has
        return;
    }
    CHECK_EQ(ax.max_dm_size, 131072u);
    ibv_alloc_dm_attr a{.length = 4096, .log_align_req = 3, .comp_mask = 0};
    ibv_dm* dm = ibv_alloc_dm(d.ctx, &a);
    CHECK(dm);
    // copies: 4-byte units inside what was asked for
    uint8_t src[256], back[256];
    for (int i = 0; i < 256; ++i)
        src[i] = static_cast<uint8_t>(i * 3 + 1);
    CHECK_EQ(ibv_memcpy_to_dm(dm, 0, src, 256), 0);
    CHECK_EQ(ibv_memcpy_from_dm(back, dm, 0, 256), 0);
    SAME(back, src, 256, "device memory copied back");
    CHECK_EQ(ibv_memcpy_to_dm(dm, 1, src, 16), EINVAL);
    CHECK_EQ(ibv_memcpy_to_dm(dm, 0, src, 15), EINVAL);
    CHECK_EQ(ibv_memcpy_from_dm(back, dm, 2, 16), EINVAL);
    CHECK_EQ(ibv_memcpy_to_dm(dm, 4088, src, 16), EFAULT);
    CHECK_EQ(ibv_memcpy_from_dm(back, dm, 4096, 4), EFAULT);
    // allocations refused
    ibv_alloc_dm_attr big{.length = ax.max_dm_size + 1, .log_align_req = 0, .comp_mask = 0};
    ibv_alloc_dm_attr mask{.length = 64, .log_align_req = 0, .comp_mask = 1};
    ibv_alloc_dm_attr zero{.length = 0, .log_align_req = 0, .comp_mask = 0};
    for (ibv_alloc_dm_attr* bad : {&big, &mask, &zero}) {
        errno = 0;
        CHECK(!ibv_alloc_dm(d.ctx, bad));
        CHECK_EQ(errno, EINVAL);
    }
    // MRs: zero-based, local and remote access only, inside the memory
    const unsigned kAcc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
        IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED;
    errno = 0;
    CHECK(!ibv_reg_dm_mr(d.pd, dm, 0, 4096, IBV_ACCESS_LOCAL_WRITE));
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK(!ibv_reg_dm_mr(d.pd, dm, 0, 4096, kAcc | IBV_ACCESS_MW_BIND));
    CHECK_EQ(errno, EINVAL);
    errno = 0;
    CHECK(!ibv_reg_dm_mr(d.pd, dm, 64, 4096, kAcc));
    CHECK_EQ(errno, EINVAL);
    {
        // the bound is the length asked for, not the 64-byte units allocated
        ibv_alloc_dm_attr small{.length = 100, .log_align_req = 0, .comp_mask = 0};
        ibv_dm* s100 = ibv_alloc_dm(d.ctx, &small);
        CHECK(s100);
        errno = 0;
        CHECK(!ibv_reg_dm_mr(d.pd, s100, 0, 104, kAcc));
        CHECK_EQ(errno, EINVAL);
        CHECK_EQ(ibv_memcpy_to_dm(s100, 100, src, 4), EFAULT);
        CHECK_OK(ibv_free_dm(s100));
    }
    ibv_mr* mr = ibv_reg_dm_mr(d.pd, dm, 1024, 2048, kAcc);
    CHECK(mr);
    CHECK(mr->addr == nullptr);
    CHECK_EQ(mr->length, 2048u);
    CHECK_EQ(ibv_free_dm(dm), EBUSY);  // its MR first
    {
        auto [qa, qb] = pair(d);
        Buf rb = mkbuf(d.pd, 8192), sb = mkbuf(d.pd, 8192);
        // a send from device memory (SGE addresses are offsets in the MR,
        // which starts at DM offset 1024)
        CHECK_EQ(ibv_memcpy_to_dm(dm, 1024 + 16, src, 200), 0);
        post_recv(qb, 1, {sge(rb, 0, 4096)});
        post(qa, {.wr_id = 1, .sges = {ibv_sge{16, 200, mr->lkey}}});
        check_wc(__LINE__, POLL1(qa.scq), send_want(qa, 1, IBV_WC_SEND));
        check_wc(__LINE__, POLL1(qb.rcq), recv_want(qb, qa, 1, 200));
        SAME(rb.p, src, 200, "sent from device memory");
        // a receive into device memory
        fill(sb, 0, 512, 9);
        post_recv(qb, 2, {ibv_sge{512, 512, mr->lkey}});
        post(qa, {.wr_id = 2, .sges = {sge(sb, 0, 512)}});
        check_wc(__LINE__, POLL1(qa.scq), send_want(qa, 2, IBV_WC_SEND));
        check_wc(__LINE__, POLL1(qb.rcq), recv_want(qb, qa, 2, 512));
        CHECK_EQ(ibv_memcpy_from_dm(back, dm, 1024 + 512, 256), 0);
        SAME(back, sb.p, 256, "received into device memory");
        // the peer writes into it and reads it through the rkey
        fill(sb, 1024, 300, 11);
        post(qa, {.op = IBV_WR_RDMA_WRITE, .wr_id = 3, .sges = {sge(sb, 1024, 300)}, .raddr = 1200, .rkey = mr->rkey});
        check_wc(__LINE__, POLL1(qa.scq), send_want(qa, 3, IBV_WC_RDMA_WRITE));
        uint8_t w[300];
        CHECK_EQ(ibv_memcpy_from_dm(w, dm, 1024 + 1200, 298), EINVAL);  // no multiple of 4
        CHECK_EQ(ibv_memcpy_from_dm(w, dm, 1024 + 1200, 300), 0);
        SAME(w, sb.p + 1024, 300, "written into device memory by the peer");
        post(qa, {.op = IBV_WR_RDMA_READ, .wr_id = 4, .sges = {sge(sb, 4096, 100)}, .raddr = 1200, .rkey = mr->rkey});
        check_wc(__LINE__, POLL1(qa.scq), send_want(qa, 4, IBV_WC_RDMA_READ, 100));
        SAME(sb.p + 4096, sb.p + 1024, 100, "read from device memory by the peer");
        // beyond the MR: a remote access error
        post(qa, {.op = IBV_WR_RDMA_WRITE, .wr_id = 5, .sges = {sge(sb, 0, 64)}, .raddr = 2048 - 32, .rkey = mr->rkey});
        check_wc(__LINE__, POLL1(qa.scq), err_want(qa, 5, IBV_WC_REM_ACCESS_ERR));
    }
    CHECK_OK(ibv_dereg_mr(mr));
    CHECK_OK(ibv_free_dm(dm));
    // the device's 128 KiB run out (the kernel's ENOMEM)
    std::vector<ibv_dm*> all;
    ibv_alloc_dm_attr q{.length = 16384, .log_align_req = 0, .comp_mask = 0};
    for (ibv_dm* x; (x = ibv_alloc_dm(d.ctx, &q));)
        all.push_back(x);
    CHECK_EQ(errno, ENOMEM);
    CHECK_EQ(all.size(), 8u);
    for (ibv_dm* x : all)
        CHECK_OK(ibv_free_dm(x));
    // mlx5dv_alloc_dm: MEMIC as ibv_alloc_dm; the steering memory types
    // need what this device lacks
    mlx5dv_alloc_dm_attr t{.type = MLX5DV_DM_TYPE_MEMIC, .comp_mask = 0};
    ibv_alloc_dm_attr s{.length = 256, .log_align_req = 0, .comp_mask = 0};
    ibv_dm* dv = mlx5dv_alloc_dm(d.ctx, &s, &t);
    CHECK(dv);
    CHECK_EQ(ibv_memcpy_to_dm(dv, 0, src, 256), 0);
    errno = 0;
    CHECK(!mlx5dv_dm_map_op_addr(dv, 0));
    CHECK(errno != 0);
    CHECK_OK(ibv_free_dm(dv));
    t.type = MLX5DV_DM_TYPE_STEERING_SW_ICM;
    errno = 0;
    CHECK(!mlx5dv_alloc_dm(d.ctx, &s, &t));
    CHECK_EQ(errno, EOPNOTSUPP);
}

CASE(loc_len) {
    Dev d = open_dev("mlx5_0");
    auto [a, b] = pair(d);
    Buf sb = mkbuf(d.pd, 8192), rb = mkbuf(d.pd, 8192);
    post_recv(b, 1, {sge(rb, 0, 1000), sge(rb, 2000, 1000)});
    post_recv(b, 2, {sge(rb, 0, 8192)});
    post(a, {.wr_id = 1, .sges = {sge(sb, 0, 2001)}});  // one byte too many (multi-packet)
    check_wc(__LINE__, POLL1(b.rcq), err_want(b, 1, IBV_WC_LOC_LEN_ERR));
    check_wc(__LINE__, POLL1(b.rcq), err_want(b, 2, IBV_WC_WR_FLUSH_ERR));
    check_wc(__LINE__, POLL1(a.scq), err_want(a, 1, IBV_WC_REM_INV_REQ_ERR));
    CHECK_EQ(qp_state(b), IBV_QPS_ERR);
    check_flush_after(a, sb, 10);
    check_flush_after(b, sb, 20);
}

CASE(flush) {
    Dev d = open_dev("mlx5_0");
    auto [a, b] = pair(d);
    Buf sb = mkbuf(d.pd, 4096);
    for (int i = 0; i < 5; ++i)
        post_recv(a, 50 + i, {sge(sb, 0, 64)});
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_ERR;
    CHECK_OK(ibv_modify_qp(a.qp, &m, IBV_QP_STATE));
    for (int i = 0; i < 5; ++i)
        check_wc(__LINE__, POLL1(a.rcq), err_want(a, 50 + i, IBV_WC_WR_FLUSH_ERR));
    check_flush_after(a, sb, 100);
    // back to RESET and up again: it works like new
    m.qp_state = IBV_QPS_RESET;
    CHECK_OK(ibv_modify_qp(a.qp, &m, IBV_QP_STATE));
    m = {};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = 1;
    m.qp_access_flags = kAll;
    CHECK_OK(ibv_modify_qp(a.qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    // the peer must restart too: it is also reset
    m = {};
    m.qp_state = IBV_QPS_RESET;
    CHECK_OK(ibv_modify_qp(b.qp, &m, IBV_QP_STATE));
    m.qp_state = IBV_QPS_INIT;
    m.port_num = 1;
    m.qp_access_flags = kAll;
    CHECK_OK(ibv_modify_qp(b.qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    a.o.psn = 0x777;
    b.o.psn = 0x999;
    connect(a, b);
    Buf rb = mkbuf(d.pd, 8192);
    send_one(a, b, sb, rb, 3000, 7);
}

CASE(modify_bad) {
    Dev d = open_dev("mlx5_0");
    ibv_cq* cq = mkcq(d, 16);
    ibv_qp_init_attr ia{};
    ia.send_cq = ia.recv_cq = cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    ibv_qp* qp = ibv_create_qp(d.pd, &ia);
    CHECK(qp);
    ibv_qp_attr m{};
    // RESET -> RTR / RTS: not allowed
    m.qp_state = IBV_QPS_RTR;
    CHECK_EQ(ibv_modify_qp(qp, &m, IBV_QP_STATE), EINVAL);
    m.qp_state = IBV_QPS_RTS;
    CHECK_EQ(ibv_modify_qp(qp, &m, IBV_QP_STATE), EINVAL);
    // RESET -> INIT without the required attributes
    m.qp_state = IBV_QPS_INIT;
    CHECK_EQ(ibv_modify_qp(qp, &m, IBV_QP_STATE), EINVAL);
    // with an attribute that does not belong to the transition (QKEY on RC)
    m.port_num = 1;
    m.qp_access_flags = 0;
    CHECK_EQ(ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | IBV_QP_QKEY),
             EINVAL);
    // a bad port
    m.port_num = 9;
    CHECK_EQ(ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), EINVAL);
    m.port_num = 1;
    CHECK_OK(ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    // INIT -> RTR missing DEST_QPN
    ibv_qp_attr r{};
    r.qp_state = IBV_QPS_RTR;
    r.path_mtu = IBV_MTU_1024;
    r.rq_psn = 0;
    r.ah_attr = ah_to(d, d);
    r.max_dest_rd_atomic = 1;
    r.min_rnr_timer = 1;
    r.dest_qp_num = qp->qp_num;
    const int rtr =
        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    CHECK_EQ(ibv_modify_qp(qp, &r, rtr), EINVAL);
    // INIT -> RTS: not allowed
    m.qp_state = IBV_QPS_RTS;
    CHECK_EQ(ibv_modify_qp(qp, &m, IBV_QP_STATE), EINVAL);
    CHECK_EQ(qp_state(Q{&d, qp}), IBV_QPS_INIT);
    CHECK_OK(ibv_modify_qp(qp, &r, rtr | IBV_QP_DEST_QPN));
    // RTR -> RTS without TIMEOUT
    ibv_qp_attr s{};
    s.qp_state = IBV_QPS_RTS;
    s.retry_cnt = 7;
    s.rnr_retry = 7;
    s.max_rd_atomic = 1;
    CHECK_EQ(ibv_modify_qp(
                 qp, &s, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC),
             EINVAL);
    CHECK_EQ(qp_state(Q{&d, qp}), IBV_QPS_RTR);
    // to ERR is always allowed; ERR -> RTS is not
    m.qp_state = IBV_QPS_ERR;
    CHECK_OK(ibv_modify_qp(qp, &m, IBV_QP_STATE));
    m.qp_state = IBV_QPS_RTS;
    CHECK_EQ(ibv_modify_qp(qp, &m, IBV_QP_STATE), EINVAL);
    m.qp_state = IBV_QPS_INIT;
    CHECK_EQ(ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), EINVAL);
    m.qp_state = IBV_QPS_RESET;
    CHECK_OK(ibv_modify_qp(qp, &m, IBV_QP_STATE));
    CHECK_EQ(qp_state(Q{&d, qp}), IBV_QPS_RESET);
    CHECK_OK(ibv_destroy_qp(qp));
}

// UVERBS_SIM_FAULTS=cqe_error_at=2,syndrome=4: the second completion of the process fails
CASE(fault_cqe) {
    Dev d = open_dev("mlx5_0");
    auto [a, b] = pair(d);
    Buf sb = mkbuf(d.pd, 4096), rb = mkbuf(d.pd, 4096);
    post_recv(b, 1, {sge(rb, 0, 4096)});
    post(a, {.wr_id = 2, .sges = {sge(sb, 0, 10)}});
    check_wc(__LINE__, POLL1(b.rcq), recv_want(b, a, 1, 10));  // completion 1
    check_wc(__LINE__, POLL1(a.scq), err_want(a, 2, IBV_WC_LOC_PROT_ERR));  // completion 2
    check_flush_after(a, sb, 10);
}

// UVERBS_SIM_FAULTS=fatal_after_ms=300
CASE(fault_fatal) {
    Dev d = open_dev("mlx5_0");
    auto [a, b] = pair(d);
    Buf sb = mkbuf(d.pd, 4096);
    post_recv(b, 1, {sge(sb, 0, 64)});
    ibv_async_event ev = ASYNC_WAIT(d, 5000);
    CHECK_EQ(ev.event_type, IBV_EVENT_DEVICE_FATAL);
    // every QP went to error: the posted receive is flushed
    check_wc(__LINE__, POLL1(b.rcq), err_want(b, 1, IBV_WC_WR_FLUSH_ERR));
    // commands fail now
    errno = 0;
    CHECK(ibv_alloc_pd(d.ctx) == nullptr);
    CHECK(ibv_reg_mr(d.pd, sb.p, 64, IBV_ACCESS_LOCAL_WRITE) == nullptr);
    CHECK(ibv_create_cq(d.ctx, 4, nullptr, nullptr, 0) == nullptr);
    ibv_device_attr da;
    CHECK(ibv_query_device(d.ctx, &da) != 0);
}

// The device hot-unplugged under the program (UVERBS_SIM_FAULTS=
// remove_after_ms=300; the kernel disassociates its contexts): the
// DEVICE_FATAL event, every command failing with EIO, the device gone from
// the list, and clean-up answering as RDMAV_ALLOW_DISASSOC_DESTROY says
// (set: success; not set: EIO, the objects left as they were).
CASE(device_removed) {
    const bool allow = getenv("RDMAV_ALLOW_DISASSOC_DESTROY") != nullptr;
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    CHECK(list != nullptr);
    CHECK_EQ(n, 1);
    ibv_context* ctx = ibv_open_device(list[0]);
    CHECK(ctx != nullptr);
    ibv_pd* pd = ibv_alloc_pd(ctx);
    ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
    CHECK(pd && cq);
    static uint8_t mem[4096];
    ibv_mr* mr = ibv_reg_mr(pd, mem, sizeof mem, IBV_ACCESS_LOCAL_WRITE);
    ibv_qp_init_attr qa{};
    qa.send_cq = qa.recv_cq = cq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap = {4, 4, 1, 1, 0};
    ibv_qp* qp = ibv_create_qp(pd, &qa);
    CHECK(mr && qp);
    pollfd pf{ctx->async_fd, POLLIN, 0};
    CHECK_EQ(poll(&pf, 1, 5000), 1);
    ibv_async_event ev;
    CHECK_OK(ibv_get_async_event(ctx, &ev));
    CHECK_EQ(ev.event_type, IBV_EVENT_DEVICE_FATAL);
    ibv_ack_async_event(&ev);
    // nothing reaches the device any more
    errno = 0;
    CHECK(ibv_alloc_pd(ctx) == nullptr);
    CHECK_EQ(errno, EIO);
    ibv_port_attr pa;
    CHECK_EQ(ibv_query_port(ctx, 1, &pa), EIO);
    ibv_qp_attr ma{};
    ma.qp_state = IBV_QPS_INIT;
    ma.port_num = 1;
    CHECK_EQ(ibv_modify_qp(qp, &ma, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), EIO);
    // and the device has left the list
    int m = -1;
    ibv_device** now = ibv_get_device_list(&m);
    CHECK(now != nullptr);
    CHECK_EQ(m, 0);
    ibv_free_device_list(now);
    // clean-up
    const int want = allow ? 0 : EIO;
    CHECK_EQ(ibv_destroy_qp(qp), want);
    CHECK_EQ(ibv_dereg_mr(mr), want);
    CHECK_EQ(ibv_destroy_cq(cq), want);
    CHECK_EQ(ibv_dealloc_pd(pd), want);
    CHECK_EQ(ibv_close_device(ctx), 0);
    ibv_free_device_list(list);
}

CASE(cq_overrun) {
    Dev d = open_dev("mlx5_0");
    QpOpts o;
    o.cqe = 4;
    o.sig_all = true;
    Q a = mkqp(d, o), b = mkqp(d, QpOpts{});
    connect(a, b);
    const int n = a.scq->cqe + 3;  // more completions than the CQ holds
    Buf sb = mkbuf(d.pd, 4096);
    for (int i = 0; i < n; ++i)
        post_recv(b, i, {sge(sb, 0, 64)});
    for (int i = 0; i < n; ++i)
        post(a, {.wr_id = uint64_t(i), .sges = {sge(sb, 0, 8)}});
    ibv_async_event ev = ASYNC_WAIT(d);
    CHECK_EQ(ev.event_type, IBV_EVENT_CQ_ERR);
    CHECK(ev.element.cq == a.scq);
    for (int i = 0; i < n; ++i)
        CHECK_EQ(POLL1(b.rcq).status, IBV_WC_SUCCESS);
    // the CQ held what fitted, in order
    for (int i = 0; i < a.scq->cqe; ++i)
        check_wc(__LINE__, POLL1(a.scq), send_want(a, i, IBV_WC_SEND));
    // a QP completing to the broken CQ is in error
    CHECK_EQ(qp_state(a), IBV_QPS_ERR);
}

// RC, UC and atomics while every 7th packet on the wire is lost
// (UVERBS_SIM_FAULTS=drop_every=7)
CASE(drop_every) {
    Dev d = open_dev("mlx5_0");
    QpOpts o;
    o.timeout = 12;  // 16 ms: a loaded CI host must not look like a dead peer
    o.retry = 7;
    auto [a, b] = pair(d, o);
    Buf sb = mkbuf(d.pd, 1 << 20), rb = mkbuf(d.pd, 1 << 20), tb = mkbuf(d.pd, 1 << 20), at = mkbuf(d.pd, 64),
        res = mkbuf(d.pd, 64);
    fill(sb, 0, sb.n, 21);
    // sends of 1..64 KiB, many in flight
    for (int i = 0; i < 16; ++i)
        post_recv(b, i, {sge(rb, i * 65536, 65536)});
    for (int i = 0; i < 16; ++i)
        post(a, {.wr_id = uint64_t(i), .sges = {sge(sb, i * 65536, 1024u * (i + 1) * 4 - 3)}});
    for (int i = 0; i < 16; ++i) {
        check_wc(__LINE__, POLL1(b.rcq), recv_want(b, a, i, 1024u * (i + 1) * 4 - 3));
        SAME(rb.p + i * 65536, sb.p + i * 65536, 1024u * (i + 1) * 4 - 3, "sent data");
    }
    for (int i = 0; i < 16; ++i)
        check_wc(__LINE__, POLL1(a.scq), send_want(a, i, IBV_WC_SEND));
    // a 1 MiB write, a 1 MiB read, atomics, interleaved
    post(a,
         {.op = IBV_WR_RDMA_WRITE, .wr_id = 100, .sges = {sge(sb, 0, 1 << 20)}, .raddr = tb.addr(), .rkey = tb.rkey()});
    memset(rb.p, 0, rb.n);
    post(a,
         {.op = IBV_WR_RDMA_READ, .wr_id = 101, .sges = {sge(rb, 0, 1 << 20)}, .raddr = tb.addr(), .rkey = tb.rkey()});
    for (int i = 0; i < 30; ++i)
        post(a,
             {.op = IBV_WR_ATOMIC_FETCH_AND_ADD,
              .wr_id = uint64_t(200 + i),
              .sges = {sge(res, 0, 8)},
              .flags = 0,
              .raddr = at.addr(),
              .rkey = at.rkey(),
              .swap = 1});
    post(a, {.op = IBV_WR_RDMA_READ, .wr_id = 102, .sges = {sge(at, 8, 8)}, .raddr = at.addr(), .rkey = at.rkey()});
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 100, IBV_WC_RDMA_WRITE));
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 101, IBV_WC_RDMA_READ, 1 << 20));
    check_wc(__LINE__, POLL1(a.scq), send_want(a, 102, IBV_WC_RDMA_READ, 8));
    SAME(tb.p, sb.p, 1 << 20, "written data");
    SAME(rb.p, sb.p, 1 << 20, "read data");
    CHECK_EQ(*reinterpret_cast<uint64_t*>(at.p), 30);  // each add exactly once
    CHECK_EQ(*reinterpret_cast<uint64_t*>(at.p + 8), 30);
    // UC: lost packets lose whole messages, never corrupt one or skip a receive
    QpOpts u;
    u.type = IBV_QPT_UC;
    auto [ua, ub] = pair(d, u);
    for (int i = 0; i < 40; ++i)
        post_recv(ub, 1000 + i, {sge(rb, i * 4096, 4096)});
    for (int i = 0; i < 40; ++i) {
        fill(sb, i * 4096, 3000, 500 + i);
        sb.p[i * 4096] = static_cast<uint8_t>(i);
        post(ua, {.wr_id = uint64_t(i), .sges = {sge(sb, i * 4096, 3000)}});
        check_wc(__LINE__, POLL1(ua.scq), send_want(ua, i, IBV_WC_SEND));
    }
    usleep(200000);
    int got = 0;
    ibv_wc wc;
    while (ibv_poll_cq(ub.rcq, 1, &wc) == 1) {
        // receives complete in posting order, each with one whole message
        check_wc(__LINE__, wc, recv_want(ub, ua, 1000 + got, 3000));
        const uint8_t* p = rb.p + got * 4096;
        const int msg = p[0];
        CHECK(msg < 40);
        SAME(p, sb.p + msg * 4096, 3000, "UC message");
        ++got;
    }
    CHECK(got > 10 && got < 40);
    fprintf(stderr, "UC: %d of 40 messages arrived\n", got);
}

// Objects torn down while traffic is in flight: the process lives on and
// the device keeps working.
CASE(destroy_busy) {
    Dev d = open_dev("mlx5_0");
    // (1) a requester destroyed while it retries RNR forever
    {
        QpOpts o;
        o.rnr_retry = 7;
        auto [a, b] = pair(d, o);
        Buf sb = mkbuf(d.pd, 1 << 16);
        for (int i = 0; i < 20; ++i)
            post(a, {.wr_id = uint64_t(i), .sges = {sge(sb, 0, 1 << 16)}});
        usleep(20000);
        CHECK_OK(ibv_destroy_qp(a.qp));
        CHECK_OK(ibv_destroy_qp(b.qp));
    }
    // (2) the target MR of RDMA writes deregistered and unmapped under them
    {
        QpOpts o;
        o.timeout = 8;
        o.retry = 1;
        auto [a, b] = pair(d, o);
        Buf sb = mkbuf(d.pd, 1 << 20);
        const size_t n = 1 << 20;
        void* m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(m != MAP_FAILED);
        ibv_mr* mr = ibv_reg_mr(d.pd, m, n, kAll);
        CHECK(mr);
        for (int i = 0; i < 8; ++i)
            post(a,
                 {.op = IBV_WR_RDMA_WRITE,
                  .wr_id = uint64_t(i),
                  .sges = {sge(sb, 0, n)},
                  .raddr = reinterpret_cast<uint64_t>(m),
                  .rkey = mr->rkey});
        // the first write lands; the MR goes while the next ones are on the wire
        check_wc(__LINE__, POLL1(a.scq), send_want(a, 0, IBV_WC_RDMA_WRITE));
        CHECK_OK(ibv_dereg_mr(mr));
        CHECK_OK(munmap(m, n));
        bool failed = false;
        for (int i = 1; i < 8; ++i) {
            ibv_wc wc = POLL1(a.scq);
            CHECK_EQ(wc.wr_id, i);
            if (!failed && wc.status == IBV_WC_SUCCESS)
                continue;
            if (!failed) {
                CHECK(wc.status == IBV_WC_REM_ACCESS_ERR);
                failed = true;
                continue;
            }
            CHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
        }
    }
    // (3) the responder of a 1 MiB read destroyed right after the request
    {
        QpOpts o;
        o.timeout = 8;
        o.retry = 1;
        auto [a, b] = pair(d, o);
        Buf src = mkbuf(d.pd, 1 << 20), dst = mkbuf(d.pd, 1 << 20);
        post(a,
             {.op = IBV_WR_RDMA_READ,
              .wr_id = 1,
              .sges = {sge(dst, 0, 1 << 20)},
              .raddr = src.addr(),
              .rkey = src.rkey()});
        CHECK_OK(ibv_destroy_qp(b.qp));
        ibv_wc wc = POLL1(a.scq);
        CHECK(wc.status == IBV_WC_SUCCESS || wc.status == IBV_WC_RETRY_EXC_ERR);
    }
    // the device still works
    auto [a, b] = pair(d);
    Buf sb = mkbuf(d.pd, 4096), rb = mkbuf(d.pd, 4096 + 64);
    send_one(a, b, sb, rb, 4096, 1);
}

// ------------------------------------------------------------------ XRC

ibv_xrcd* xrcd_open(ibv_context* ctx, int fd, int oflags) {
    ibv_xrcd_init_attr a{};
    a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    a.fd = fd;
    a.oflags = oflags;
    return ibv_open_xrcd(ctx, &a);
}

ibv_srq* mk_xsrq(Dev& d, ibv_xrcd* x, ibv_cq* cq, ibv_pd* pd = nullptr) {
    ibv_srq_init_attr_ex a{};
    a.attr.max_wr = 64;
    a.attr.max_sge = 2;
    a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
    a.srq_type = IBV_SRQT_XRC;
    a.xrcd = x;
    a.cq = cq;
    a.pd = pd ? pd : d.pd;
    ibv_srq* s = ibv_create_srq_ex(d.ctx, &a);
    if (!s)
        die(__LINE__, "ibv_create_srq_ex(XRC): %s", strerror(errno));
    return s;
}

uint32_t srq_num(ibv_srq* s) {
    uint32_t n = 0;
    CHECK_OK(ibv_get_srq_num(s, &n));
    return n;
}

ibv_qp* mk_ini(Dev& d, ibv_cq* scq) {
    ibv_qp_init_attr_ex a{};
    a.qp_type = IBV_QPT_XRC_SEND;
    a.send_cq = scq;
    a.cap.max_send_wr = 64;
    a.cap.max_send_sge = 2;
    a.cap.max_inline_data = 64;
    a.comp_mask = IBV_QP_INIT_ATTR_PD;
    a.pd = d.pd;
    ibv_qp* q = ibv_create_qp_ex(d.ctx, &a);
    if (!q)
        die(__LINE__, "ibv_create_qp_ex(XRC_SEND): %s", strerror(errno));
    return q;
}

ibv_qp* mk_tgt(Dev& d, ibv_xrcd* x) {
    ibv_qp_init_attr_ex a{};
    a.qp_type = IBV_QPT_XRC_RECV;
    a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
    a.xrcd = x;
    ibv_qp* q = ibv_create_qp_ex(d.ctx, &a);
    if (!q)
        die(__LINE__, "ibv_create_qp_ex(XRC_RECV): %s", strerror(errno));
    return q;
}

// RESET -> INIT -> RTR -> RTS with the attributes each XRC half requires
// (an initiator takes no responder attributes, a target no retry counts)
void xrc_connect(Dev& d, ibv_qp* qp, uint32_t dest, bool tgt) {
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = d.port;
    m.qp_access_flags = kAll;
    CHECK_OK(ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    m = {};
    m.qp_state = IBV_QPS_RTR;
    m.path_mtu = IBV_MTU_1024;
    m.dest_qp_num = dest;
    m.rq_psn = 0x200;
    m.ah_attr = ah_to(d, d);
    m.max_dest_rd_atomic = 4;
    m.min_rnr_timer = 1;
    int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    CHECK_OK(ibv_modify_qp(qp, &m, mask | (tgt ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0)));
    m = {};
    m.qp_state = IBV_QPS_RTS;
    m.sq_psn = 0x200;
    m.timeout = 14;
    m.retry_cnt = 7;
    m.rnr_retry = 7;
    m.max_rd_atomic = 4;
    mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT;
    CHECK_OK(ibv_modify_qp(qp, &m, mask | (tgt ? 0 : IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)));
}

int xpost(ibv_qp* qp, uint32_t srqn, uint64_t wr_id, ibv_sge sg, ibv_wr_opcode op = IBV_WR_SEND, uint64_t raddr = 0,
          uint32_t rkey = 0) {
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.sg_list = &sg;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.qp_type.xrc.remote_srqn = srqn;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    return ibv_post_send(qp, &wr, &bad);
}

// The receive completion of an XRC message: the target QP's number, the
// initiator as source, the SRQ's WQE.
Want xrc_recv_want(const Dev& d, ibv_qp* tgt, ibv_qp* ini, uint64_t wr_id, uint32_t len) {
    Want w;
    w.opcode = IBV_WC_RECV;
    w.byte_len = len;
    w.wr_id = wr_id;
    w.qp_num = tgt->qp_num;
    w.src_qp = ini->qp_num;
    w.slid = is_eth(d) ? 0 : d.pa.lid;
    w.grh = is_eth(d);
    return w;
}

Want xsend_want(ibv_qp* qp, uint64_t wr_id, int opcode) {
    Want w;
    w.opcode = opcode;
    w.wr_id = wr_id;
    w.qp_num = qp->qp_num;
    return w;
}

// A file for the shared domain: the run directory's, or /tmp's.
std::string xrc_file(const char* name) {
    const char* dir = getenv("UVERBS_SIM_DIR");
    std::string p = std::string(dir && *dir ? dir : "/tmp") + "/" + name + "." + std::to_string(getpid());
    return p;
}

CASE(xrc_objects) {
    Dev d = open_dev("mlx5_0");
    ibv_device_attr da{};
    CHECK_OK(ibv_query_device(d.ctx, &da));
    CHECK(da.device_cap_flags & IBV_DEVICE_XRC);
    // a private domain
    ibv_xrcd* priv = xrcd_open(d.ctx, -1, 0);
    CHECK(priv);
    CHECK_OK(ibv_close_xrcd(priv));
    // a domain of a file: made with O_CREAT only, O_EXCL refuses an existing one
    const std::string path = xrc_file("xrcd");
    const int fd = open(path.c_str(), O_RDONLY | O_CREAT, 0600);
    CHECK(fd >= 0);
    errno = 0;
    CHECK(!xrcd_open(d.ctx, fd, 0));
    CHECK_EQ(errno, EAGAIN);
    ibv_xrcd* x = xrcd_open(d.ctx, fd, O_CREAT);
    CHECK(x);
    errno = 0;
    CHECK(!xrcd_open(d.ctx, fd, O_CREAT | O_EXCL));
    CHECK_EQ(errno, EINVAL);
    // a second context (a second open of the device) shares it by the inode
    Dev d2 = open_dev("mlx5_0");
    const int fd2 = open(path.c_str(), O_RDONLY);
    CHECK(fd2 >= 0);
    ibv_xrcd* x2 = xrcd_open(d2.ctx, fd2, 0);
    CHECK(x2);
    // XRC SRQs: their numbers, distinct
    ibv_cq* cq = mkcq(d, 64);
    ibv_srq* s1 = mk_xsrq(d, x, cq);
    ibv_srq* s2 = mk_xsrq(d, x, cq);
    const uint32_t n1 = srq_num(s1), n2 = srq_num(s2);
    CHECK(n1 != 0 && n1 <= 0xffffff);
    CHECK(n2 != n1);
    // an XRC SRQ needs its CQ and domain; a basic SRQ has no XRC number
    {
        ibv_srq_init_attr_ex a{};
        a.attr.max_wr = 4;
        a.attr.max_sge = 1;
        a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_PD;
        a.srq_type = IBV_SRQT_XRC;
        a.xrcd = x;
        a.pd = d.pd;
        CHECK(!ibv_create_srq_ex(d.ctx, &a));
    }
    // the two halves of an XRC connection
    ibv_qp* ini = mk_ini(d, cq);
    ibv_qp* tgt = mk_tgt(d, x);
    CHECK_EQ(ini->qp_type, IBV_QPT_XRC_SEND);
    CHECK_EQ(tgt->qp_type, IBV_QPT_XRC_RECV);
    CHECK(ini->qp_num != tgt->qp_num);
    // ibv_open_qp from the second context, through its handle on the domain
    ibv_qp_open_attr oa{};
    oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
    oa.qp_num = tgt->qp_num;
    oa.xrcd = x2;
    oa.qp_type = IBV_QPT_XRC_RECV;
    ibv_qp* opened = ibv_open_qp(d2.ctx, &oa);
    CHECK(opened);
    CHECK_EQ(opened->qp_num, tgt->qp_num);
    // a number the domain has no target QP for, and a type other than XRC_RECV
    oa.qp_num = ini->qp_num;
    errno = 0;
    CHECK(!ibv_open_qp(d2.ctx, &oa));
    CHECK_EQ(errno, EINVAL);
    oa.qp_num = tgt->qp_num;
    oa.qp_type = IBV_QPT_RC;
    CHECK(!ibv_open_qp(d2.ctx, &oa));
    // the opened handle moves the QP; the creator's handle sees it
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = 1;
    m.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    CHECK_OK(ibv_modify_qp(opened, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    ibv_qp_attr qa{};
    ibv_qp_init_attr qi{};
    CHECK_OK(ibv_query_qp(tgt, &qa, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, &qi));
    CHECK_EQ(qa.qp_state, IBV_QPS_INIT);
    CHECK_EQ(qa.qp_access_flags, IBV_ACCESS_REMOTE_WRITE);
    // the kernel's attribute table for each half: an initiator takes no
    // responder attributes at RTR, a target needs them
    m = {};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = 1;
    m.qp_access_flags = kAll;
    CHECK_OK(ibv_modify_qp(ini, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
    m = {};
    m.qp_state = IBV_QPS_RTR;
    m.path_mtu = IBV_MTU_1024;
    m.dest_qp_num = tgt->qp_num;
    m.ah_attr = ah_to(d, d);
    m.max_dest_rd_atomic = 1;
    m.min_rnr_timer = 1;
    const int base = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    CHECK_EQ(ibv_modify_qp(ini, &m, base | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), EINVAL);
    CHECK_EQ(ibv_modify_qp(tgt, &m, base), EINVAL);
    CHECK_OK(ibv_modify_qp(ini, &m, base));
    CHECK_OK(ibv_modify_qp(tgt, &m, base | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
    // destroy ordering: the domain while SRQs and QPs use it, their CQ
    CHECK_EQ(ibv_close_xrcd(x), EBUSY);
    CHECK_EQ(ibv_close_xrcd(x2), EBUSY);  // the opened QP uses this handle
    CHECK_EQ(ibv_destroy_cq(cq), EBUSY);
    // the creator's handle goes; the QP lives on through the opened one
    const uint32_t tgt_num = tgt->qp_num;
    CHECK_OK(ibv_destroy_qp(tgt));
    CHECK_OK(ibv_query_qp(opened, &qa, IBV_QP_STATE, &qi));
    CHECK_EQ(qa.qp_state, IBV_QPS_RTR);
    oa.qp_type = IBV_QPT_XRC_RECV;
    ibv_qp* again = ibv_open_qp(d2.ctx, &oa);  // still in the domain
    CHECK(again);
    CHECK_EQ(again->qp_num, tgt_num);
    // Debian's libmlx5 44 crashes in ibv_destroy_qp of a QP it opened (it
    // frees a doorbell record such a QP never had), so the handles go with
    // their context, as the kernel releases them when the file closes
    CHECK_OK(ibv_close_device(d2.ctx));
    // the last handle gone, the QP is gone from the domain
    oa.xrcd = x;
    errno = 0;
    CHECK(!ibv_open_qp(d.ctx, &oa));
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(ibv_close_xrcd(x), EBUSY);  // the SRQs
    CHECK_OK(ibv_destroy_srq(s1));
    CHECK_OK(ibv_destroy_srq(s2));
    CHECK_OK(ibv_destroy_qp(ini));
    CHECK_OK(ibv_close_xrcd(x));
    CHECK_OK(ibv_destroy_cq(cq));
    close(fd);
    close(fd2);
    unlink(path.c_str());
}

CASE(xrc_send) {
    Dev d = open_dev("mlx5_0");
    ibv_xrcd* x = xrcd_open(d.ctx, -1, 0);
    CHECK(x);
    ibv_cq* cqa = mkcq(d, 64);
    ibv_cq* cqb = mkcq(d, 64);
    ibv_cq* scq = mkcq(d, 64);
    ibv_srq* sa = mk_xsrq(d, x, cqa);
    ibv_srq* sb = mk_xsrq(d, x, cqb);
    ibv_qp* ini = mk_ini(d, scq);
    ibv_qp* tgt = mk_tgt(d, x);
    xrc_connect(d, ini, tgt->qp_num, false);
    xrc_connect(d, tgt, ini->qp_num, true);
    Buf src = mkbuf(d.pd, 1 << 14), dst = mkbuf(d.pd, 1 << 16);
    fill(src, 0, src.n, 7);
    for (int i = 0; i < 4; ++i) {
        post_srq_recv(sa, 100 + i, {sge(dst, i * 8192, 8192)});
        post_srq_recv(sb, 200 + i, {sge(dst, 32768 + i * 8192, 8192)});
    }
    // an XRC SRQ's limit event, as a basic SRQ's: fewer than 3 left in a
    ibv_srq_attr lim{};
    lim.srq_limit = 3;
    CHECK_OK(ibv_modify_srq(sa, &lim, IBV_SRQ_LIMIT));
    // each message lands in the SRQ it names and completes on that SRQ's CQ
    const uint32_t na = srq_num(sa), nb = srq_num(sb);
    const uint32_t lens[4] = {100, 1024, 5000, 4097};
    for (int i = 0; i < 4; ++i) {
        CHECK_OK(xpost(ini, (i & 1) ? nb : na, i, sge(src, i * 16, lens[i])));
        check_wc(__LINE__, POLL1(scq), xsend_want(ini, i, IBV_WC_SEND));
    }
    ibv_wc wc = POLL1(cqa);
    check_wc(__LINE__, wc, xrc_recv_want(d, tgt, ini, 100, lens[0]));
    SAME(dst.p, src.p, lens[0], "to SRQ a");
    wc = POLL1(cqa);
    check_wc(__LINE__, wc, xrc_recv_want(d, tgt, ini, 101, lens[2]));
    SAME(dst.p + 8192, src.p + 32, lens[2], "to SRQ a (multi-packet)");
    wc = POLL1(cqb);
    check_wc(__LINE__, wc, xrc_recv_want(d, tgt, ini, 200, lens[1]));
    SAME(dst.p + 32768, src.p + 16, lens[1], "to SRQ b");
    wc = POLL1(cqb);
    check_wc(__LINE__, wc, xrc_recv_want(d, tgt, ini, 201, lens[3]));
    SAME(dst.p + 32768 + 8192, src.p + 48, lens[3], "to SRQ b (multi-packet)");
    POLL_NONE(cqa, 20);
    POLL_NONE(cqb, 20);
    ibv_async_event lev = ASYNC_WAIT(d);
    CHECK_EQ(lev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
    CHECK(lev.element.srq == sa);
    // an RDMA write through the target QP: the key of the SRQ's PD
    CHECK_OK(xpost(ini, na, 50, sge(src, 0, 3000), IBV_WR_RDMA_WRITE, dst.addr(60000), dst.rkey()));
    check_wc(__LINE__, POLL1(scq), xsend_want(ini, 50, IBV_WC_RDMA_WRITE));
    SAME(dst.p + 60000, src.p, 3000, "RDMA write to the target");
    POLL_NONE(cqa, 20);
    // an SRQ of another domain: the requester fails (remote invalid
    // request), that SRQ gives nothing, the target QP goes to error
    ibv_xrcd* other = xrcd_open(d.ctx, -1, 0);
    CHECK(other);
    ibv_cq* cqc = mkcq(d, 16);
    ibv_srq* sc = mk_xsrq(d, other, cqc);
    post_srq_recv(sc, 300, {sge(dst, 0, 8192)});
    CHECK_OK(xpost(ini, srq_num(sc), 60, sge(src, 0, 64)));
    wc = POLL1(scq);
    CHECK_EQ(wc.wr_id, 60);
    CHECK_EQ(wc.status, IBV_WC_REM_INV_REQ_ERR);
    CHECK_EQ(wc.qp_num, ini->qp_num);
    POLL_NONE(cqc, 50);
    POLL_NONE(cqa, 1);
    ibv_async_event ev = ASYNC_WAIT(d);
    CHECK_EQ(ev.event_type, IBV_EVENT_QP_REQ_ERR);
    CHECK(ev.element.qp == tgt);
    ibv_qp_attr qa{};
    ibv_qp_init_attr qi{};
    CHECK_OK(ibv_query_qp(tgt, &qa, IBV_QP_STATE, &qi));
    CHECK_EQ(qa.qp_state, IBV_QPS_ERR);
    // the SRQ's receive is still there for a good connection
    ibv_qp* ini2 = mk_ini(d, scq);
    ibv_qp* tgt2 = mk_tgt(d, other);
    xrc_connect(d, ini2, tgt2->qp_num, false);
    xrc_connect(d, tgt2, ini2->qp_num, true);
    CHECK_OK(xpost(ini2, srq_num(sc), 61, sge(src, 0, 200)));
    check_wc(__LINE__, POLL1(scq), xsend_want(ini2, 61, IBV_WC_SEND));
    wc = POLL1(cqc);
    check_wc(__LINE__, wc, xrc_recv_want(d, tgt2, ini2, 300, 200));
}

// ---------------------------------------------------- forged (bad) WQEs

struct Raw {
    Q q;
    mlx5dv_qp dv{};
    uint32_t pi = 0;  // basic blocks posted
};

Raw raw_qp(Dev& d) {
    Raw r;
    QpOpts o;
    o.max_send_wr = 16;
    auto [a, b] = pair(d, o);
    r.q = a;
    mlx5dv_obj obj{};
    obj.qp.in = a.qp;
    obj.qp.out = &r.dv;
    CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP));
    CHECK(r.dv.sq.wqe_cnt >= 8);
    CHECK_EQ(r.dv.sq.stride, 64);
    return r;
}

// Writes nbb basic blocks at the producer index and rings the doorbell record.
void raw_post(Raw& r, const void* wqe, uint32_t nbb) {
    for (uint32_t i = 0; i < nbb; ++i) {
        uint8_t* slot = static_cast<uint8_t*>(r.dv.sq.buf) + ((r.pi + i) & (r.dv.sq.wqe_cnt - 1)) * 64;
        memcpy(slot, static_cast<const uint8_t*>(wqe) + i * 64, 64);
    }
    r.pi += nbb;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    r.dv.dbrec[MLX5_SND_DBR] = htobe32(r.pi & 0xffff);
}

void raw_ctrl(uint8_t* w, const Raw& r, uint8_t opcode, uint32_t ds) {
    auto* c = reinterpret_cast<mlx5_wqe_ctrl_seg*>(w);
    c->opmod_idx_opcode = htobe32(((r.pi & 0xffff) << 8) | opcode);
    c->qpn_ds = htobe32((r.q.qpn() << 8) | (ds & 0x3f));
    c->fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
}

// The error CQE of a forged WQE: its status, the QP in error, nothing more.
void raw_expect(Raw& r, int status) {
    ibv_wc wc = POLL1(r.q.scq);
    CHECK_EQ(wc.status, status);
    CHECK_EQ(wc.qp_num, r.q.qpn());
    CHECK_EQ(qp_state(r.q), IBV_QPS_ERR);
}

CASE(bad_wqe) {
    Dev d = open_dev("mlx5_0");
    Buf mb = mkbuf(d.pd, 4096);
    // a good forged send first: the forging itself is right
    {
        Raw r = raw_qp(d);
        uint8_t w[64] = {};
        raw_ctrl(w, r, MLX5_OPCODE_NOP, 1);
        raw_post(r, w, 1);
        ibv_wc wc = POLL1(r.q.scq);
        CHECK_EQ(wc.status, IBV_WC_SUCCESS);
        CHECK_EQ(qp_state(r.q), IBV_QPS_RTS);
    }
    // ds 0
    {
        Raw r = raw_qp(d);
        uint8_t w[64] = {};
        raw_ctrl(w, r, MLX5_OPCODE_SEND, 0);
        raw_post(r, w, 1);
        raw_expect(r, IBV_WC_LOC_QP_OP_ERR);
    }
    // ds larger than what the doorbell says was posted (63 segments = 16
    // basic blocks, one block rung)
    {
        Raw r = raw_qp(d);
        uint8_t w[64] = {};
        raw_ctrl(w, r, MLX5_OPCODE_SEND, 63);
        raw_post(r, w, 1);
        raw_expect(r, IBV_WC_LOC_QP_OP_ERR);
    }
    // unknown opcode
    {
        Raw r = raw_qp(d);
        uint8_t w[64] = {};
        raw_ctrl(w, r, 0x1f, 1);
        raw_post(r, w, 1);
        raw_expect(r, IBV_WC_LOC_QP_OP_ERR);
    }
    // a WQE naming another QP
    {
        Raw r = raw_qp(d);
        uint8_t w[64] = {};
        raw_ctrl(w, r, MLX5_OPCODE_NOP, 1);
        reinterpret_cast<mlx5_wqe_ctrl_seg*>(w)->qpn_ds = htobe32(((r.q.qpn() ^ 1) << 8) | 1);
        raw_post(r, w, 1);
        raw_expect(r, IBV_WC_LOC_QP_OP_ERR);
    }
    // data segments outside any MR: unknown lkey, address outside, unmapped memory inside a forged range
    const uint64_t addrs[] = {mb.addr() + 4090, 0x10, mb.addr()};
    const uint32_t keys[] = {mb.lkey(), mb.lkey(), 0x7fffff00};
    for (int v = 0; v < 3; ++v) {
        Raw r = raw_qp(d);
        uint8_t w[64] = {};
        raw_ctrl(w, r, MLX5_OPCODE_SEND, 2);
        auto* ds = reinterpret_cast<mlx5_wqe_data_seg*>(w + 16);
        ds->byte_count = htobe32(64);
        ds->lkey = htobe32(keys[v]);
        ds->addr = htobe64(addrs[v]);
        raw_post(r, w, 1);
        raw_expect(r, IBV_WC_LOC_PROT_ERR);
    }
    // an inline segment longer than the WQE
    {
        Raw r = raw_qp(d);
        uint8_t w[64] = {};
        raw_ctrl(w, r, MLX5_OPCODE_SEND, 2);
        const uint32_t bc = htobe32(MLX5_INLINE_SEG | 1000);
        memcpy(w + 16, &bc, 4);
        raw_post(r, w, 1);
        raw_expect(r, IBV_WC_LOC_QP_OP_ERR);
    }
    // an RDMA read carrying inline data instead of a scatter list
    {
        Raw r = raw_qp(d);
        uint8_t w[64] = {};
        raw_ctrl(w, r, MLX5_OPCODE_RDMA_READ, 3);
        auto* ra = reinterpret_cast<mlx5_wqe_raddr_seg*>(w + 16);
        ra->raddr = htobe64(mb.addr());
        ra->rkey = htobe32(mb.rkey());
        const uint32_t bc = htobe32(MLX5_INLINE_SEG | 8);
        memcpy(w + 32, &bc, 4);
        raw_post(r, w, 1);
        raw_expect(r, IBV_WC_LOC_QP_OP_ERR);
    }
    // a bad WQE behind a good one still in flight completes after it, in order
    {
        Raw r = raw_qp(d);
        uint8_t w[64] = {};
        raw_ctrl(w, r, MLX5_OPCODE_RDMA_WRITE, 3);
        auto* ra = reinterpret_cast<mlx5_wqe_raddr_seg*>(w + 16);
        ra->raddr = htobe64(mb.addr());
        ra->rkey = htobe32(mb.rkey());
        auto* ds = reinterpret_cast<mlx5_wqe_data_seg*>(w + 32);
        ds->byte_count = htobe32(64);
        ds->lkey = htobe32(mb.lkey());
        ds->addr = htobe64(mb.addr() + 100);
        raw_post(r, w, 1);
        uint8_t bad[64] = {};
        raw_ctrl(bad, r, 0x1e, 1);
        raw_post(r, bad, 1);
        ibv_wc wc = POLL1(r.q.scq);
        CHECK_EQ(wc.status, IBV_WC_SUCCESS);
        CHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
        raw_expect(r, IBV_WC_LOC_QP_OP_ERR);
    }
    // the process is fine and the device still works
    auto [a, b] = pair(d);
    Buf sb = mkbuf(d.pd, 4096), rb = mkbuf(d.pd, 4096 + 64);
    send_one(a, b, sb, rb, 4096, 1);
}

// A send WQE may mix inline and pointer data segments, gathered in their
// order (UCX puts its header inline and the payload behind a pointer):
// inline, pointer, inline arrive as one message in that order.
CASE(wqe_inline_and_pointer) {
    Dev d = open_dev("mlx5_0");
    QpOpts o;
    o.max_send_wr = 16;
    auto [a, b] = pair(d, o);
    Raw r;
    r.q = a;
    mlx5dv_obj obj{};
    obj.qp.in = a.qp;
    obj.qp.out = &r.dv;
    CHECK_OK(mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP));
    Buf sb = mkbuf(d.pd, 4096), rb = mkbuf(d.pd, 4096);
    fill(sb, 0, 100, 7);
    memset(rb.p, 0xee, 256);
    post_recv(b, 77, {sge(rb, 0, 256)});
    // ctrl, inline 12 bytes (one 16-byte segment), pointer 100 bytes,
    // inline 3 bytes: 4 segments
    uint8_t w[64] = {};
    raw_ctrl(w, r, MLX5_OPCODE_SEND, 4);
    const char head[12] = {'h', 'e', 'a', 'd', 'e', 'r', '-', 'b', 'y', 't', 'e', 's'};
    uint32_t bc = htobe32(MLX5_INLINE_SEG | sizeof head);
    memcpy(w + 16, &bc, 4);
    memcpy(w + 20, head, sizeof head);
    auto* ds = reinterpret_cast<mlx5_wqe_data_seg*>(w + 32);
    ds->byte_count = htobe32(100);
    ds->lkey = htobe32(sb.lkey());
    ds->addr = htobe64(sb.addr());
    bc = htobe32(MLX5_INLINE_SEG | 3);
    memcpy(w + 48, &bc, 4);
    memcpy(w + 52, "END", 3);
    raw_post(r, w, 1);
    ibv_wc wc = POLL1(a.scq);
    CHECK_EQ(wc.status, IBV_WC_SUCCESS);
    wc = POLL1(b.rcq);
    CHECK_EQ(wc.status, IBV_WC_SUCCESS);
    CHECK_EQ(wc.byte_len, 12u + 100u + 3u);
    SAME(rb.p, reinterpret_cast<const uint8_t*>(head), sizeof head, "inline header");
    SAME(rb.p + 12, sb.p, 100, "pointer payload");
    SAME(rb.p + 112, reinterpret_cast<const uint8_t*>("END"), 3, "inline trailer");
    CHECK_EQ(rb.p[115], 0xee);
}

// ------------------------------------------------- raw Ethernet, RSS, flows
//
// Two devices with one Ethernet port each (UVERBS_SIM_DEVICES=2,
// UVERBS_SIM_LINK=eth): raw packet QPs on mlx5_0 send whole frames, which
// arrive at mlx5_1's port, where flow rules pick raw QPs or RSS QPs.

// The Toeplitz hash, written independently of the emulator's: for each set
// input bit, XOR the 32 key bits starting at that bit's position.
uint32_t toeplitz_ref(const uint8_t* key, size_t klen, const uint8_t* in, size_t n) {
    uint32_t h = 0;
    for (size_t byte = 0; byte < n; ++byte)
        for (int bit = 0; bit < 8; ++bit) {
            if (!(in[byte] & (0x80 >> bit)))
                continue;
            uint64_t k = 0;  // key bytes byte..byte+4 as one number
            for (size_t j = 0; j < 5; ++j)
                k = k << 8 | (byte + j < klen ? key[byte + j] : 0);
            h ^= static_cast<uint32_t>(k >> (8 - bit));
        }
    return h;
}

// The RSS key of Microsoft's verification suite.
const uint8_t kMsKey[40] = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
                            0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
                            0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

// The hash input of an IPv4 TCP/UDP flow: source address, destination
// address, source port, destination port, in network order.
uint32_t flow_hash(uint32_t sip, uint32_t dip, uint16_t sp, uint16_t dp, bool ports) {
    uint8_t in[12] = {uint8_t(sip >> 24), uint8_t(sip >> 16), uint8_t(sip >> 8), uint8_t(sip),
                      uint8_t(dip >> 24), uint8_t(dip >> 16), uint8_t(dip >> 8), uint8_t(dip),
                      uint8_t(sp >> 8),   uint8_t(sp),        uint8_t(dp >> 8),  uint8_t(dp)};
    return toeplitz_ref(kMsKey, 40, in, ports ? 12 : 8);
}

uint32_t ip4(int a, int b, int c, int d) { return uint32_t(a) << 24 | uint32_t(b) << 16 | uint32_t(c) << 8 | d; }

// The reference itself against the published vectors (IPv4, and IPv4
// with TCP ports).
void check_toeplitz_vectors() {
    struct V {
        uint32_t src, dst;
        uint16_t sp, dp;
        uint32_t ip_only, with_tcp;
    };
    const V v[] = {
        {ip4(66, 9, 149, 187), ip4(161, 142, 100, 80), 2794, 1766, 0x323e8fc2, 0x51ccc178},
        {ip4(199, 92, 111, 2), ip4(65, 69, 140, 83), 14230, 4739, 0xd718262a, 0xc626b0ea},
        {ip4(24, 19, 198, 95), ip4(12, 22, 207, 184), 12898, 38024, 0xd2d0a5de, 0x5c2b394a},
        {ip4(38, 27, 205, 30), ip4(209, 142, 163, 6), 48228, 2217, 0x82989176, 0xafc7327f},
        {ip4(153, 39, 163, 191), ip4(202, 188, 127, 2), 44251, 1303, 0x5d1809c5, 0x10e828a2},
    };
    for (const V& x : v) {
        CHECK_EQ(flow_hash(x.src, x.dst, x.sp, x.dp, false), x.ip_only);
        CHECK_EQ(flow_hash(x.src, x.dst, x.sp, x.dp, true), x.with_tcp);
    }
}

struct Mac {
    uint8_t b[6];
};
const Mac kMacA{{0x02, 0x00, 0x00, 0x00, 0x0a, 0x01}};
const Mac kMacB{{0x02, 0x00, 0x00, 0x00, 0x0b, 0x02}};
const Mac kMacC{{0x02, 0x00, 0x00, 0x00, 0x0c, 0x03}};
const Mac kMacSrc{{0x02, 0x00, 0x00, 0x00, 0x00, 0x99}};

// An Ethernet frame: IPv4 + TCP/UDP when proto is 6/17, else ethertype
// 0x88b5 (local experimental); the 4-byte id after the headers, then
// filler up to len bytes.
std::vector<uint8_t> frame(const Mac& dst, uint8_t proto, uint32_t sip, uint32_t dip, uint16_t sp, uint16_t dp,
                           uint32_t id, size_t len) {
    std::vector<uint8_t> f;
    f.insert(f.end(), dst.b, dst.b + 6);
    f.insert(f.end(), kMacSrc.b, kMacSrc.b + 6);
    auto u16 = [&](uint16_t v) {
        f.push_back(uint8_t(v >> 8));
        f.push_back(uint8_t(v));
    };
    auto u32 = [&](uint32_t v) {
        u16(uint16_t(v >> 16));
        u16(uint16_t(v));
    };
    if (proto == 6 || proto == 17) {
        u16(0x0800);
        const size_t l4 = proto == 6 ? 20 : 8;
        const size_t total = std::max(len, 14 + 20 + l4 + 4) - 14;
        f.push_back(0x45);
        f.push_back(0);
        u16(uint16_t(total));
        u16(uint16_t(id));
        u16(0x4000);  // DF
        f.push_back(64);
        f.push_back(proto);
        u16(0);  // checksum (not looked at)
        u32(sip);
        u32(dip);
        u16(sp);
        u16(dp);
        if (proto == 6) {
            u32(id);  // seq
            u32(0);
            u16(0x5010);
            u16(0xffff);
            u32(0);
        } else {
            u16(uint16_t(total - 20));
            u16(0);
        }
    } else {
        u16(0x88b5);
    }
    u32(id);
    while (f.size() < len)
        f.push_back(uint8_t(f.size() * 7 + id));
    return f;
}

ibv_qp* mkraw(Dev& d, ibv_cq* scq, ibv_cq* rcq, uint32_t rwr = 64) {
    ibv_qp_init_attr a{};
    a.send_cq = scq;
    a.recv_cq = rcq;
    a.qp_type = IBV_QPT_RAW_PACKET;
    a.cap.max_send_wr = 64;
    a.cap.max_recv_wr = rwr;
    a.cap.max_send_sge = 2;
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = 64;
    ibv_qp* qp = ibv_create_qp(d.pd, &a);
    if (!qp)
        die(__LINE__, "ibv_create_qp(RAW_PACKET): %s", strerror(errno));
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = d.port;
    CHECK_OK(ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PORT));
    m.qp_state = IBV_QPS_RTR;
    CHECK_OK(ibv_modify_qp(qp, &m, IBV_QP_STATE));
    m.qp_state = IBV_QPS_RTS;
    CHECK_OK(ibv_modify_qp(qp, &m, IBV_QP_STATE));
    return qp;
}

// A flow rule: ETH (dst MAC, optional ethertype), then optional IPv4 (dst
// address) and TCP/UDP (dst port) specs.
struct Rule {
    const Mac* dmac = nullptr;
    uint16_t priority = 0;
    uint32_t dip = 0;  // 0: no IPv4 spec
    bool ipv4_any = false;  // an IPv4 spec with nothing masked
    uint8_t l4 = 0;  // 6 TCP, 17 UDP, 0 none
    uint16_t dport = 0;  // 0: L4 spec with nothing masked
    uint32_t type = IBV_FLOW_ATTR_NORMAL;
    uint32_t flags = 0;
};

ibv_flow* mkflow(ibv_qp* qp, const Rule& r, uint8_t port = 1) {
    struct {
        ibv_flow_attr attr;
        ibv_flow_spec_eth eth;
        ibv_flow_spec_ipv4 ip;
        ibv_flow_spec_tcp_udp l4;
    } a;
    memset(&a, 0, sizeof a);
    a.attr.type = static_cast<ibv_flow_attr_type>(r.type);
    a.attr.priority = r.priority;
    a.attr.port = port;
    a.attr.flags = r.flags;
    size_t size = sizeof a.attr;
    if (r.dmac) {
        a.attr.num_of_specs = 1;
        a.eth.type = IBV_FLOW_SPEC_ETH;
        a.eth.size = sizeof a.eth;
        memcpy(a.eth.val.dst_mac, r.dmac->b, 6);
        memset(a.eth.mask.dst_mac, 0xff, 6);
        size += sizeof a.eth;
        if (r.dip || r.ipv4_any) {
            ++a.attr.num_of_specs;
            a.ip.type = IBV_FLOW_SPEC_IPV4;
            a.ip.size = sizeof a.ip;
            a.ip.val.dst_ip = htobe32(r.dip);
            a.ip.mask.dst_ip = r.dip ? 0xffffffffu : 0;
            size += sizeof a.ip;
            if (r.l4) {
                ++a.attr.num_of_specs;
                a.l4.type = r.l4 == 6 ? IBV_FLOW_SPEC_TCP : IBV_FLOW_SPEC_UDP;
                a.l4.size = sizeof a.l4;
                a.l4.val.dst_port = htobe16(r.dport);
                a.l4.mask.dst_port = r.dport ? 0xffff : 0;
                size += sizeof a.l4;
            }
        }
    }
    a.attr.size = static_cast<uint16_t>(size);
    ibv_flow* f = ibv_create_flow(qp, &a.attr);
    if (!f)
        die(__LINE__, "ibv_create_flow: %s", strerror(errno));
    return f;
}

struct RawEnds {
    Dev d0, d1;
    ibv_cq* tx_cq;
    ibv_qp* tx;
    Buf tb;
};

RawEnds raw_ends() {
    RawEnds e{open_dev("mlx5_0"), open_dev("mlx5_1"), nullptr, nullptr, {}};
    if (!is_eth(e.d0) || !is_eth(e.d1))
        die(__LINE__, "needs Ethernet ports (UVERBS_SIM_LINK=eth)");
    e.tx_cq = mkcq(e.d0, 256);
    e.tx = mkraw(e.d0, e.tx_cq, e.tx_cq, 1);
    e.tb = mkbuf(e.d0.pd, 1 << 16);
    return e;
}

// Sends one frame from the transmitting QP (split over two SGEs when it is
// long enough, inline when asked) and checks its completion.
void send_frame(RawEnds& e, const std::vector<uint8_t>& f, uint64_t id, bool inl = false) {
    memcpy(e.tb.p, f.data(), f.size());
    std::vector<ibv_sge> sg;
    const uint32_t n = static_cast<uint32_t>(f.size());
    if (n > 100 && !inl)
        sg = {sge(e.tb, 0, 60), sge(e.tb, 60, n - 60)};
    else
        sg = {sge(e.tb, 0, n)};
    Q q;
    q.qp = e.tx;
    post(q, {.wr_id = id, .sges = sg, .flags = IBV_SEND_SIGNALED | (inl ? unsigned(IBV_SEND_INLINE) : 0u)});
    ibv_wc wc = POLL1(e.tx_cq);
    CHECK_EQ(wc.status, IBV_WC_SUCCESS);
    CHECK_EQ(wc.opcode, IBV_WC_SEND);
    CHECK_EQ(wc.wr_id, id);
    CHECK_EQ(wc.qp_num, e.tx->qp_num);
}

void raw_recv(ibv_qp* qp, Buf& b, size_t off, uint32_t len, uint64_t id) {
    Q q;
    q.qp = qp;
    post_recv(q, id, {sge(b, off, len)});
}

// The next frame on cq: what it says and its bytes.
void expect_frame(int line, ibv_cq* cq, uint32_t qpn, Buf& b, size_t slot, const std::vector<uint8_t>& f,
                  uint64_t wr_id) {
    ibv_wc wc = poll1(line, cq);
    if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV || wc.byte_len != f.size() || wc.wr_id != wr_id ||
        wc.qp_num != qpn)
        die(line, "receive: status %d opcode %d byte_len %u wr_id 0x%llx qp_num 0x%x; want 0 128 %zu 0x%llx 0x%x",
            wc.status, wc.opcode, wc.byte_len, (unsigned long long)wc.wr_id, wc.qp_num, f.size(),
            (unsigned long long)wr_id, qpn);
    same(line, b.p + slot, f.data(), f.size(), "received frame");
}

// Raw frames through the ibv_wr_* interface: an extended raw packet QP
// sending with an SGE, an SGE list, inline data and an inline list, each
// frame arriving whole; a frame shorter than its L2 header fails the batch.
CASE(raw_wr) {
    RawEnds e = raw_ends();
    ibv_qp_init_attr_ex a{};
    a.send_cq = e.tx_cq;
    a.recv_cq = e.tx_cq;
    a.qp_type = IBV_QPT_RAW_PACKET;
    a.cap.max_send_wr = 64;
    a.cap.max_recv_wr = 1;
    a.cap.max_send_sge = 4;
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = 256;
    a.pd = e.d0.pd;
    a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    a.send_ops_flags = IBV_QP_EX_WITH_SEND;
    ibv_qp* tx = ibv_create_qp_ex(e.d0.ctx, &a);
    if (!tx)
        die(__LINE__, "ibv_create_qp_ex(RAW_PACKET, wr API): %s", strerror(errno));
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = e.d0.port;
    CHECK_OK(ibv_modify_qp(tx, &m, IBV_QP_STATE | IBV_QP_PORT));
    m.qp_state = IBV_QPS_RTR;
    CHECK_OK(ibv_modify_qp(tx, &m, IBV_QP_STATE));
    m.qp_state = IBV_QPS_RTS;
    CHECK_OK(ibv_modify_qp(tx, &m, IBV_QP_STATE));
    ibv_qp_ex* qx = ibv_qp_to_qp_ex(tx);
    CHECK(qx);
    ibv_cq* rcq = mkcq(e.d1, 64);
    ibv_qp* b = mkraw(e.d1, rcq, rcq);
    Buf rb = mkbuf(e.d1.pd, 16 * 2048);
    for (int i = 0; i < 16; ++i)
        raw_recv(b, rb, size_t(i) * 2048, 2048, 100 + i);
    ibv_flow* fb = mkflow(b, {.dmac = &kMacB});
    Buf tb = mkbuf(e.d0.pd, 1 << 14);
    uint64_t slot = 0;
    for (int k = 0; k < 4; ++k) {
        const size_t len = k < 2 ? 700 + 100 * k : 90 + k;
        const std::vector<uint8_t> f = frame(kMacB, 17, ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 7, 9, 300 + k, len);
        memcpy(tb.p, f.data(), f.size());
        ibv_wr_start(qx);
        qx->wr_id = 40 + k;
        qx->wr_flags = IBV_SEND_SIGNALED | (k >= 2 ? unsigned(IBV_SEND_INLINE) : 0u);
        ibv_wr_send(qx);
        if (k == 0) {
            ibv_wr_set_sge(qx, tb.lkey(), tb.addr(), static_cast<uint32_t>(len));
        } else if (k == 1) {
            // the header split over the first two SGEs
            const ibv_sge sg[3] = {sge(tb, 0, 10), sge(tb, 10, 30), sge(tb, 40, static_cast<uint32_t>(len - 40))};
            ibv_wr_set_sge_list(qx, 3, sg);
        } else if (k == 2) {
            ibv_wr_set_inline_data(qx, tb.p, len);
        } else {
            const ibv_data_buf bufs[2] = {{tb.p, 14}, {tb.p + 14, len - 14}};
            ibv_wr_set_inline_data_list(qx, 2, bufs);
        }
        CHECK_OK(ibv_wr_complete(qx));
        ibv_wc wc = POLL1(e.tx_cq);
        CHECK_EQ(wc.status, IBV_WC_SUCCESS);
        CHECK_EQ(wc.wr_id, uint64_t(40 + k));
        expect_frame(__LINE__, rcq, b->qp_num, rb, size_t(slot) * 2048, f, 100 + slot);
        ++slot;
    }
    // shorter than the L2 header: nothing goes out
    ibv_wr_start(qx);
    qx->wr_id = 60;
    qx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(qx);
    ibv_wr_set_sge(qx, tb.lkey(), tb.addr(), 10);
    CHECK(ibv_wr_complete(qx) != 0);
    POLL_NONE(e.tx_cq, 50);
    POLL_NONE(rcq, 1);
    CHECK_OK(ibv_destroy_flow(fb));
}

// A flow rule with a COUNT action and its spec (dmac), on `qp`; the specs
// are packed one after the other, as their sizes say.
ibv_flow* mkcounted(ibv_qp* qp, const Mac& dmac, ibv_counters* c, bool drop = false) {
    alignas(8) uint8_t buf[256] = {};
    ibv_flow_attr attr{};
    attr.type = IBV_FLOW_ATTR_NORMAL;
    attr.port = 1;
    attr.num_of_specs = drop ? 3 : 2;
    ibv_flow_spec_eth eth{};
    eth.type = IBV_FLOW_SPEC_ETH;
    eth.size = sizeof eth;
    memcpy(eth.val.dst_mac, dmac.b, 6);
    memset(eth.mask.dst_mac, 0xff, 6);
    ibv_flow_spec_counter_action count{};
    count.type = IBV_FLOW_SPEC_ACTION_COUNT;
    count.size = sizeof count;
    count.counters = c;
    ibv_flow_spec_action_drop dr{};
    dr.type = IBV_FLOW_SPEC_ACTION_DROP;
    dr.size = sizeof dr;
    size_t off = sizeof attr;
    memcpy(buf + off, &eth, sizeof eth);
    off += sizeof eth;
    memcpy(buf + off, &count, sizeof count);
    off += sizeof count;
    if (drop) {
        memcpy(buf + off, &dr, sizeof dr);
        off += sizeof dr;
    }
    attr.size = static_cast<uint16_t>(off);
    memcpy(buf, &attr, sizeof attr);
    return ibv_create_flow(qp, reinterpret_cast<ibv_flow_attr*>(buf));
}

// Flow counters: created, described (which count at which index) before
// the rule that binds them, counting the frames their rules take (dropped
// ones too), read as the descriptions say; the refusals around them.
CASE(flow_counters) {
    RawEnds e = raw_ends();
    ibv_cq* rcq = mkcq(e.d1, 256);
    ibv_cq* scq = mkcq(e.d1, 16);
    ibv_qp* b = mkraw(e.d1, scq, rcq);
    Buf rb = mkbuf(e.d1.pd, 64 * 2048);
    for (int i = 0; i < 32; ++i)
        raw_recv(b, rb, size_t(i) * 2048, 2048, 100 + i);
    ibv_counters_init_attr ia{};
    ia.comp_mask = 1;
    errno = 0;
    CHECK(!ibv_create_counters(e.d1.ctx, &ia));
    CHECK_EQ(errno, EOPNOTSUPP);
    ia.comp_mask = 0;
    ibv_counters* c = ibv_create_counters(e.d1.ctx, &ia);
    CHECK(c);
    uint64_t v[4] = {};
    CHECK_EQ(ibv_read_counters(c, v, 2, 0), EINVAL);  // bound to no rule yet
    ibv_counter_attach_attr at{};
    at.counter_desc = IBV_COUNTER_PACKETS;
    at.index = 0;
    CHECK_OK(ibv_attach_counters_point_flow(c, &at, nullptr));
    at.counter_desc = IBV_COUNTER_BYTES;
    at.index = 1;
    CHECK_OK(ibv_attach_counters_point_flow(c, &at, nullptr));
    at.counter_desc = static_cast<ibv_counter_description>(7);
    CHECK_EQ(ibv_attach_counters_point_flow(c, &at, nullptr), EOPNOTSUPP);
    at.counter_desc = IBV_COUNTER_BYTES;
    at.comp_mask = 1;
    CHECK_EQ(ibv_attach_counters_point_flow(c, &at, nullptr), EOPNOTSUPP);
    at.comp_mask = 0;
    ibv_flow* fb = mkcounted(b, kMacB, c);
    CHECK(fb);
    CHECK_EQ(ibv_attach_counters_point_flow(c, &at, fb), EOPNOTSUPP);  // a rule that exists
    CHECK_EQ(ibv_attach_counters_point_flow(c, &at, nullptr), EBUSY);  // bound already
    uint64_t packets = 0, bytes = 0;
    const size_t lens[] = {60, 64, 128, 1000, 1514, 61};
    for (int i = 0; i < 12; ++i) {
        const Mac& to = i % 2 ? kMacB : kMacA;
        const size_t len = lens[i % 6];
        const std::vector<uint8_t> f = frame(to, 17, ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1, 2, 1000 + i, len);
        send_frame(e, f, 10 + i);
        if (&to == &kMacB) {
            expect_frame(__LINE__, rcq, b->qp_num, rb, size_t(packets) * 2048, f, 100 + packets);
            ++packets;
            bytes += len;
        }
    }
    CHECK_OK(ibv_read_counters(c, v, 2, 0));
    CHECK_EQ(v[0], packets);
    CHECK_EQ(v[1], bytes);
    v[0] = v[1] = v[2] = 99;
    CHECK_OK(ibv_read_counters(c, v, 3, IBV_READ_COUNTERS_ATTR_PREFER_CACHED));
    CHECK_EQ(v[0], packets);
    CHECK_EQ(v[1], bytes);
    CHECK_EQ(v[2], 0u);  // no description names it
    CHECK_EQ(ibv_read_counters(c, v, 1, 0), EINVAL);  // too short for index 1
    CHECK_EQ(ibv_read_counters(c, v, 2, 2), EINVAL);  // an unknown flag
    CHECK_EQ(ibv_destroy_counters(c), EBUSY);  // a rule counts into it
    // a DROP rule with its own counters: nothing arrives, everything counts
    ibv_counters* dc = ibv_create_counters(e.d1.ctx, &ia);
    CHECK(dc);
    at.counter_desc = IBV_COUNTER_BYTES;
    at.index = 0;
    CHECK_OK(ibv_attach_counters_point_flow(dc, &at, nullptr));
    at.counter_desc = IBV_COUNTER_PACKETS;
    at.index = 2;
    CHECK_OK(ibv_attach_counters_point_flow(dc, &at, nullptr));
    ibv_flow* fd = mkcounted(b, kMacC, dc, true);
    CHECK(fd);
    for (int i = 0; i < 3; ++i)
        send_frame(e, frame(kMacC, 6, ip4(10, 0, 0, 1), ip4(10, 0, 0, 3), 1, 2, 50 + i, 100), 50 + i);
    POLL_NONE(rcq, 100);
    CHECK_OK(ibv_read_counters(dc, v, 3, 0));
    CHECK_EQ(v[0], 300u);
    CHECK_EQ(v[1], 0u);
    CHECK_EQ(v[2], 3u);
    CHECK_OK(ibv_read_counters(c, v, 2, 0));  // the other rule's counts did not move
    CHECK_EQ(v[0], packets);
    CHECK_OK(ibv_destroy_flow(fd));
    CHECK_OK(ibv_destroy_flow(fb));
    CHECK_EQ(ibv_read_counters(c, v, 2, 0), EINVAL);  // no rule uses it any more
    CHECK_OK(ibv_destroy_counters(c));
    CHECK_OK(ibv_destroy_counters(dc));
}

CASE(raw_mac_rule) {
    RawEnds e = raw_ends();
    ibv_cq* rcq_b = mkcq(e.d1, 256);
    ibv_cq* rcq_c = mkcq(e.d1, 256);
    ibv_cq* scq = mkcq(e.d1, 16);
    ibv_qp* b = mkraw(e.d1, scq, rcq_b);
    ibv_qp* c = mkraw(e.d1, scq, rcq_c);
    Buf rb = mkbuf(e.d1.pd, 64 * 2048), rc = mkbuf(e.d1.pd, 64 * 2048);
    for (int i = 0; i < 32; ++i) {
        raw_recv(b, rb, size_t(i) * 2048, 2048, 100 + i);
        raw_recv(c, rc, size_t(i) * 2048, 2048, 200 + i);
    }
    // no rule: a raw QP receives nothing
    send_frame(e, frame(kMacB, 17, ip4(10, 0, 0, 1), ip4(10, 0, 0, 2), 1, 2, 1, 64), 1);
    POLL_NONE(rcq_b, 100);
    POLL_NONE(rcq_c, 1);
    ibv_flow* fb = mkflow(b, {.dmac = &kMacB});
    ibv_flow* fc = mkflow(c, {.dmac = &kMacC});
    // a QP with a rule on it stays (the rule holds it)
    CHECK_EQ(ibv_destroy_qp(b), EBUSY);
    int nb = 0, nc = 0;
    const size_t lens[] = {60, 64, 128, 1000, 1514, 61, 2048};
    for (int i = 0; i < 21; ++i) {
        const Mac& to = i % 3 == 0 ? kMacB : i % 3 == 1 ? kMacC : kMacA;
        const size_t len = lens[i % 7];
        const std::vector<uint8_t> f = i % 2
            ? frame(to, 6, ip4(10, 1, 0, uint8_t(i)), ip4(10, 2, 0, 1), 1000 + i, 80, 1000 + i, len)
            : frame(to, 0, 0, 0, 0, 0, 1000 + i, len);
        send_frame(e, f, 10 + i, len <= 64);  // the small ones inline
        if (&to == &kMacB) {
            expect_frame(__LINE__, rcq_b, b->qp_num, rb, size_t(nb) * 2048, f, 100 + nb);
            ++nb;
        } else if (&to == &kMacC) {
            expect_frame(__LINE__, rcq_c, c->qp_num, rc, size_t(nc) * 2048, f, 200 + nc);
            ++nc;
        }
    }
    POLL_NONE(rcq_b, 100);  // the frames to kMacA went nowhere
    POLL_NONE(rcq_c, 1);
    CHECK_EQ(nb, 7);
    CHECK_EQ(nc, 7);
    // the port a frame leaves loops it back to the rules of other contexts
    // (transport domains), never to the sender's own
    Dev d2 = open_dev("mlx5_0");
    ibv_cq* lcq = mkcq(d2, 16);
    ibv_cq* own_cq = mkcq(e.d0, 16);
    ibv_qp* l = mkraw(d2, lcq, lcq);
    ibv_qp* own = mkraw(e.d0, own_cq, own_cq);
    Buf lb = mkbuf(d2.pd, 4096), ob = mkbuf(e.d0.pd, 4096);
    raw_recv(l, lb, 0, 2048, 300);
    raw_recv(own, ob, 0, 2048, 400);
    ibv_flow* fl = mkflow(l, {.dmac = &kMacA});
    ibv_flow* fo = mkflow(own, {.dmac = &kMacA});
    const std::vector<uint8_t> lf = frame(kMacA, 17, ip4(10, 0, 0, 1), ip4(10, 0, 0, 3), 5, 6, 55, 300);
    send_frame(e, lf, 55);
    expect_frame(__LINE__, lcq, l->qp_num, lb, 0, lf, 300);
    POLL_NONE(own_cq, 100);
    POLL_NONE(rcq_b, 1);
    CHECK_OK(ibv_destroy_flow(fl));
    CHECK_OK(ibv_destroy_flow(fo));
    CHECK_OK(ibv_destroy_flow(fc));
    send_frame(e, frame(kMacC, 0, 0, 0, 0, 0, 77, 200), 77);
    POLL_NONE(rcq_c, 100);  // its rule is gone
    CHECK_OK(ibv_destroy_flow(fb));
    send_frame(e, frame(kMacB, 0, 0, 0, 0, 0, 78, 200), 78);
    POLL_NONE(rcq_b, 100);
    CHECK_OK(ibv_destroy_qp(b));
    CHECK_OK(ibv_destroy_qp(c));
}

struct Rss {
    std::vector<ibv_cq*> cqs;
    std::vector<ibv_wq*> wqs;
    std::vector<Buf> bufs;
    ibv_rwq_ind_table* tbl = nullptr;
    ibv_qp* qp = nullptr;
};

Rss mkrss(Dev& d, int log_n, uint64_t fields) {
    Rss r;
    const int n = 1 << log_n;
    for (int i = 0; i < n; ++i) {
        r.cqs.push_back(mkcq(d, 256));
        ibv_wq_init_attr wa{};
        wa.wq_type = IBV_WQT_RQ;
        wa.max_wr = 128;
        wa.max_sge = 1;
        wa.pd = d.pd;
        wa.cq = r.cqs.back();
        wa.wq_context = reinterpret_cast<void*>(uintptr_t(i));
        ibv_wq* w = ibv_create_wq(d.ctx, &wa);
        if (!w)
            die(__LINE__, "ibv_create_wq: %s", strerror(errno));
        ibv_wq_attr m{};
        m.attr_mask = IBV_WQ_ATTR_STATE;
        m.wq_state = IBV_WQS_RDY;
        CHECK_OK(ibv_modify_wq(w, &m));
        r.wqs.push_back(w);
        r.bufs.push_back(mkbuf(d.pd, 128 * 2048));
        for (int k = 0; k < 128; ++k) {
            ibv_sge s = sge(r.bufs.back(), size_t(k) * 2048, 2048);
            ibv_recv_wr wr{}, *bad = nullptr;
            wr.wr_id = uint64_t(i) << 16 | k;
            wr.sg_list = &s;
            wr.num_sge = 1;
            CHECK_OK(ibv_post_wq_recv(w, &wr, &bad));
        }
    }
    ibv_rwq_ind_table_init_attr ta{};
    ta.log_ind_tbl_size = static_cast<uint32_t>(log_n);
    ta.ind_tbl = r.wqs.data();
    r.tbl = ibv_create_rwq_ind_table(d.ctx, &ta);
    if (!r.tbl)
        die(__LINE__, "ibv_create_rwq_ind_table: %s", strerror(errno));
    ibv_qp_init_attr_ex qa{};
    qa.qp_type = IBV_QPT_RAW_PACKET;
    qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
    qa.pd = d.pd;
    qa.rwq_ind_tbl = r.tbl;
    qa.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
    qa.rx_hash_conf.rx_hash_key_len = 40;
    qa.rx_hash_conf.rx_hash_key = const_cast<uint8_t*>(kMsKey);
    qa.rx_hash_conf.rx_hash_fields_mask = fields;
    r.qp = ibv_create_qp_ex(d.ctx, &qa);
    if (!r.qp)
        die(__LINE__, "ibv_create_qp_ex(RSS): %s", strerror(errno));
    return r;
}

CASE(rss_toeplitz) {
    check_toeplitz_vectors();
    RawEnds e = raw_ends();
    constexpr int kLog = 3, kN = 1 << kLog;
    Rss r = mkrss(e.d1, kLog,
                  IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP);
    // the rule: TCP to 10.9.0.1 port 80 at kMacB goes to the RSS QP; the rest
    // to kMacB (UDP, other ports) to a raw QP at a lower priority
    ibv_flow* f1 = mkflow(r.qp, {.dmac = &kMacB, .priority = 0, .dip = ip4(10, 9, 0, 1), .l4 = 6, .dport = 80});
    ibv_cq* ocq = mkcq(e.d1, 256);
    ibv_qp* other = mkraw(e.d1, ocq, ocq, 128);
    Buf ob = mkbuf(e.d1.pd, 128 * 2048);
    for (int k = 0; k < 100; ++k)
        raw_recv(other, ob, size_t(k) * 2048, 2048, 5000 + k);
    ibv_flow* f2 = mkflow(other, {.dmac = &kMacB, .priority = 1});
    std::vector<int> got(kN, 0);
    int n_other = 0;
    std::vector<int> per_wq(kN, 0);
    for (int i = 0; i < 96; ++i) {
        const uint32_t sip = ip4(192, 168, uint8_t(i / 7), uint8_t(i * 37));
        const uint16_t sp = uint16_t(1024 + i * 611);
        const bool match = i % 4 != 3;
        const uint8_t proto = i % 8 == 3 ? 17 : 6;
        const uint16_t dport = match ? 80 : (proto == 6 ? 443 : 80);
        const std::vector<uint8_t> f =
            frame(kMacB, proto, sip, ip4(10, 9, 0, 1), sp, dport, 7000 + i, 64 + size_t(i) * 13);
        send_frame(e, f, 7000 + i);
        if (!match) {
            expect_frame(__LINE__, ocq, other->qp_num, ob, size_t(n_other) * 2048, f, 5000 + n_other);
            ++n_other;
            continue;
        }
        const int want = static_cast<int>(flow_hash(sip, ip4(10, 9, 0, 1), sp, dport, true) & (kN - 1));
        ++per_wq[want];
        // exactly that WQ's CQ has it
        uint64_t end = ms_now() + 5000;
        int at = -1;
        ibv_wc wc{};
        while (at < 0 && ms_now() < end) {
            for (int w = 0; w < kN && at < 0; ++w)
                if (ibv_poll_cq(r.cqs[w], 1, &wc) == 1)
                    at = w;
        }
        if (at < 0)
            die(__LINE__, "frame %d (want WQ %d) never arrived", i, want);
        if (at != want)
            die(__LINE__, "frame %d landed in WQ %d, the hash says %d", i, at, want);
        CHECK_EQ(wc.status, IBV_WC_SUCCESS);
        CHECK_EQ(wc.opcode, IBV_WC_RECV);
        CHECK_EQ(wc.byte_len, f.size());
        CHECK_EQ(wc.wr_id, (uint64_t(at) << 16) | got[at]);
        same(__LINE__, r.bufs[at].p + size_t(got[at]) * 2048, f.data(), f.size(), "frame in its WQ");
        ++got[at];
    }
    for (int w = 0; w < kN; ++w)
        POLL_NONE(r.cqs[w], w ? 1 : 100);
    POLL_NONE(ocq, 1);
    CHECK_EQ(n_other, 24);
    int used = 0;
    for (int w = 0; w < kN; ++w)
        used += per_wq[w] > 0;
    CHECK(used >= kN / 2);  // the flows really spread
    // destroy order: the rule holds the QP, the QP the table, the table its WQs
    CHECK_EQ(ibv_destroy_rwq_ind_table(r.tbl), EBUSY);
    CHECK_EQ(ibv_destroy_wq(r.wqs[0]), EBUSY);
    CHECK_EQ(ibv_destroy_qp(r.qp), EBUSY);
    CHECK_OK(ibv_destroy_flow(f1));
    CHECK_OK(ibv_destroy_qp(r.qp));
    CHECK_EQ(ibv_destroy_wq(r.wqs[0]), EBUSY);
    CHECK_OK(ibv_destroy_rwq_ind_table(r.tbl));
    for (ibv_wq* w : r.wqs)
        CHECK_OK(ibv_destroy_wq(w));
    CHECK_OK(ibv_destroy_flow(f2));
    CHECK_OK(ibv_destroy_qp(other));
}

CASE(flow_priority) {
    RawEnds e = raw_ends();
    ibv_cq* cx = mkcq(e.d1, 256);
    ibv_cq* cy = mkcq(e.d1, 256);
    ibv_cq* cz = mkcq(e.d1, 256);
    ibv_qp* x = mkraw(e.d1, cx, cx);
    ibv_qp* y = mkraw(e.d1, cy, cy);
    ibv_qp* z = mkraw(e.d1, cz, cz);
    Buf bx = mkbuf(e.d1.pd, 64 * 2048), by = mkbuf(e.d1.pd, 64 * 2048), bz = mkbuf(e.d1.pd, 64 * 2048);
    for (int i = 0; i < 32; ++i) {
        raw_recv(x, bx, size_t(i) * 2048, 2048, 100 + i);
        raw_recv(y, by, size_t(i) * 2048, 2048, 200 + i);
        raw_recv(z, bz, size_t(i) * 2048, 2048, 300 + i);
    }
    int nx = 0, ny = 0, nz = 0;
    auto only = [&](int line, ibv_qp* who, const std::vector<uint8_t>& f) {
        if (who == x)
            expect_frame(line, cx, x->qp_num, bx, size_t(nx) * 2048, f, 100 + nx), ++nx;
        if (who == y)
            expect_frame(line, cy, y->qp_num, by, size_t(ny) * 2048, f, 200 + ny), ++ny;
        if (who == z)
            expect_frame(line, cz, z->qp_num, bz, size_t(nz) * 2048, f, 300 + nz), ++nz;
        poll_none(line, cx, who == x ? 20 : 50);
        poll_none(line, cy, 1);
        poll_none(line, cz, 1);
    };
    // X: any frame to kMacB (priority 2); Y: UDP to port 4791 (priority 1)
    ibv_flow* fx = mkflow(x, {.dmac = &kMacB, .priority = 2});
    ibv_flow* fy = mkflow(y, {.dmac = &kMacB, .priority = 1, .ipv4_any = true, .l4 = 17, .dport = 4791});
    auto udp = [&](uint16_t dport, uint32_t id) {
        return frame(kMacB, 17, ip4(1, 2, 3, 4), ip4(5, 6, 7, 8), 999, dport, id, 100);
    };
    std::vector<uint8_t> f = udp(4791, 1);
    send_frame(e, f, 1);
    only(__LINE__, y, f);  // both match: the lower number wins
    f = udp(4792, 2);
    send_frame(e, f, 2);
    only(__LINE__, x, f);  // only X's matches
    f = frame(kMacB, 6, ip4(1, 2, 3, 4), ip4(5, 6, 7, 8), 999, 4791, 3, 100);
    send_frame(e, f, 3);
    only(__LINE__, x, f);  // TCP, not UDP
    // Z at priority 0 for IPv4 to 5.6.7.8: takes both
    ibv_flow* fz = mkflow(z, {.dmac = &kMacB, .priority = 0, .dip = ip4(5, 6, 7, 8)});
    f = udp(4791, 4);
    send_frame(e, f, 4);
    only(__LINE__, z, f);
    f = frame(kMacB, 0, 0, 0, 0, 0, 5, 80);  // not IPv4: Z's rule does not match
    send_frame(e, f, 5);
    only(__LINE__, x, f);
    CHECK_OK(ibv_destroy_flow(fz));
    f = udp(4791, 6);
    send_frame(e, f, 6);
    only(__LINE__, y, f);  // Y again
    // two rules with the same specs at one priority: one steering entry,
    // both QPs get the frame
    ibv_flow* fz2 = mkflow(z, {.dmac = &kMacB, .priority = 1, .ipv4_any = true, .l4 = 17, .dport = 4791});
    f = udp(4791, 7);
    send_frame(e, f, 7);
    expect_frame(__LINE__, cy, y->qp_num, by, size_t(ny) * 2048, f, 200 + ny), ++ny;
    expect_frame(__LINE__, cz, z->qp_num, bz, size_t(nz) * 2048, f, 300 + nz), ++nz;
    POLL_NONE(cx, 50);
    CHECK_OK(ibv_destroy_flow(fz2));
    CHECK_OK(ibv_destroy_flow(fy));
    CHECK_OK(ibv_destroy_flow(fx));
    f = udp(4791, 8);
    send_frame(e, f, 8);
    POLL_NONE(cx, 100);
    POLL_NONE(cy, 1);
    POLL_NONE(cz, 1);
    CHECK_EQ(nx, 3);
    CHECK_EQ(ny, 3);
    CHECK_EQ(nz, 2);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: uvsim_verify CASE | list\n");
        return 2;
    }
    setvbuf(stdout, nullptr, _IOLBF, 0);
    if (!strcmp(argv[1], "list")) {
        for (auto& [n, f] : cases())
            printf("%s\n", n.c_str());
        return 0;
    }
    auto it = cases().find(argv[1]);
    if (it == cases().end()) {
        fprintf(stderr, "uvsim_verify: no case %s\n", argv[1]);
        return 2;
    }
    g_case = argv[1];
    const uint64_t t0 = ms_now();
    it->second();
    printf("uvsim_verify %s: PASS (%llu ms)\n", g_case, (unsigned long long)(ms_now() - t0));
    fflush(stdout);
    _exit(0);  // the model thread lives on; no destructors race it
}
