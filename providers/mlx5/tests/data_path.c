/* data_path: the mlx5 queues on the first device, every result printed as
 * a line: the capabilities CQs, QPs and SRQs are created with, the errnos of
 * bad posts, and the completions of traffic between two QPs of one context
 * (RC, UC, UD, an SRQ, the ibv_wr_* interface, an error and its flushes).
 * Built twice, against our libibverbs + libmlx5 and against Debian's;
 * data_path.sh runs both on the emulated ConnectX and compares. Nothing
 * printed may depend on the run: QP numbers and keys are shown as
 * relations ("= local QP"), not values. */
#include <arpa/inet.h>
#include <unistd.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "twin_common.h"

struct env {
    struct ibv_context* ctx;
    struct ibv_pd* pd;
    struct ibv_cq* cq;
    struct ibv_cq_ex* cqx; /* set: cq is this extended CQ, read with ibv_start_poll */
    struct ibv_mr* mr;
    char* buf;
    size_t len;
    int eth;
    union ibv_gid gid;
    uint16_t lid;
};

/* ------------------------------------------------------------ creation */

static void cq_case(struct env* e, int cqe) {
    errno = 0;
    struct ibv_cq* cq = ibv_create_cq(e->ctx, cqe, NULL, NULL, 0);
    printf("  create_cq %-9d %s", cqe, err_name(cq ? 0 : errno));
    if (cq) {
        printf(" cqe %d", cq->cqe);
        ibv_destroy_cq(cq);
    }
    printf("\n");
}

static void cq_ex_case(struct env* e, const char* what, uint64_t wc_flags, uint32_t mask, uint32_t flags) {
    struct ibv_cq_init_attr_ex a = {.cqe = 10, .wc_flags = wc_flags, .comp_mask = mask, .flags = flags};
    errno = 0;
    struct ibv_cq_ex* cq = ibv_create_cq_ex(e->ctx, &a);
    printf("  create_cq_ex %-28s %s\n", what, err_name(cq ? 0 : errno));
    if (cq)
        ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
}

static void qp_case(struct env* e, enum ibv_qp_type type, struct ibv_srq* srq, uint32_t swr, uint32_t rwr,
                    uint32_t ssge, uint32_t rsge, uint32_t inl) {
    struct ibv_qp_init_attr a = {.send_cq = e->cq,
                                 .recv_cq = e->cq,
                                 .srq = srq,
                                 .qp_type = type,
                                 .cap = {.max_send_wr = swr,
                                         .max_recv_wr = rwr,
                                         .max_send_sge = ssge,
                                         .max_recv_sge = rsge,
                                         .max_inline_data = inl}};
    errno = 0;
    struct ibv_qp* qp = ibv_create_qp(e->pd, &a);
    printf("  %s%s wr %u/%u sge %u/%u inline %u: %s",
           type == IBV_QPT_RC       ? "RC"
               : type == IBV_QPT_UC ? "UC"
                                    : "UD",
           srq ? "+srq" : "", swr, rwr, ssge, rsge, inl, err_name(qp ? 0 : errno));
    if (qp) {
        printf(" -> wr %u/%u sge %u/%u inline %u", a.cap.max_send_wr, a.cap.max_recv_wr, a.cap.max_send_sge,
               a.cap.max_recv_sge, a.cap.max_inline_data);
        struct ibv_qp_attr qa;
        struct ibv_qp_init_attr qi;
        if (!ibv_query_qp(qp, &qa, IBV_QP_CAP, &qi))
            printf("; query wr %u/%u sge %u/%u inline %u", qi.cap.max_send_wr, qi.cap.max_recv_wr, qi.cap.max_send_sge,
                   qi.cap.max_recv_sge, qi.cap.max_inline_data);
        ibv_destroy_qp(qp);
    }
    printf("\n");
}

static void srq_case(struct env* e, uint32_t wr, uint32_t sge) {
    struct ibv_srq_init_attr a = {.attr = {.max_wr = wr, .max_sge = sge}};
    errno = 0;
    struct ibv_srq* srq = ibv_create_srq(e->pd, &a);
    printf("  srq wr %u sge %u: %s", wr, sge, err_name(srq ? 0 : errno));
    if (srq) {
        struct ibv_srq_attr q;
        printf(" -> wr %u sge %u", a.attr.max_wr, a.attr.max_sge);
        if (!ibv_query_srq(srq, &q))
            printf("; query wr %u sge %u limit %u", q.max_wr, q.max_sge, q.srq_limit);
        ibv_destroy_srq(srq);
    }
    printf("\n");
}

/* ------------------------------------------------------------- traffic */

/* An address of this port (with a GRH on RoCE), service level `sl`. */
static struct ibv_ah_attr self_ah_attr(const struct env* e, uint8_t sl) {
    struct ibv_ah_attr aa = {.dlid = e->lid, .port_num = 1, .sl = sl};
    if (e->eth) {
        aa.is_global = 1;
        aa.grh.dgid = e->gid;
        aa.grh.hop_limit = 1;
    }
    return aa;
}

static int to_state(struct ibv_qp* qp, enum ibv_qp_state s, struct env* e, uint32_t dest_qpn) {
    struct ibv_qp_attr a = {.qp_state = s, .port_num = 1, .pkey_index = 0};
    int mask = IBV_QP_STATE;
    switch (s) {
    case IBV_QPS_INIT:
        mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        if (qp->qp_type == IBV_QPT_UD) {
            a.qkey = 0x11111111;
            mask |= IBV_QP_QKEY;
        } else {
            a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
            mask |= IBV_QP_ACCESS_FLAGS;
        }
        break;
    case IBV_QPS_RTR:
        if (qp->qp_type == IBV_QPT_UD)
            break;
        a.path_mtu = IBV_MTU_1024;
        a.dest_qp_num = dest_qpn;
        a.rq_psn = 0;
        a.ah_attr = self_ah_attr(e, 0);
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        if (qp->qp_type == IBV_QPT_RC) {
            a.max_dest_rd_atomic = 1;
            a.min_rnr_timer = 1;
            mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        }
        break;
    case IBV_QPS_RTS:
        a.sq_psn = 0;
        mask |= IBV_QP_SQ_PSN;
        if (qp->qp_type == IBV_QPT_RC) {
            a.timeout = 10;
            a.retry_cnt = 2;
            a.rnr_retry = 2;
            a.max_rd_atomic = 1;
            mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
        }
        break;
    default: break;
    }
    return ibv_modify_qp(qp, &a, mask);
}

static struct ibv_qp* make_qp(struct env* e, enum ibv_qp_type type, struct ibv_srq* srq) {
    struct ibv_qp_init_attr a = {
        .send_cq = e->cq,
        .recv_cq = e->cq,
        .srq = srq,
        .qp_type = type,
        .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 2, .max_inline_data = 64}};
    return ibv_create_qp(e->pd, &a);
}

static int connect_pair(struct env* e, struct ibv_qp* a, struct ibv_qp* b) {
    int r = to_state(a, IBV_QPS_INIT, e, 0) || to_state(b, IBV_QPS_INIT, e, 0) ||
        to_state(a, IBV_QPS_RTR, e, b->qp_num) || to_state(b, IBV_QPS_RTR, e, a->qp_num) ||
        to_state(a, IBV_QPS_RTS, e, 0) || to_state(b, IBV_QPS_RTS, e, 0);
    if (r)
        printf("  connect: %s\n", err_name(r));
    return r;
}

static const char* opcode_name(enum ibv_wc_opcode o) {
    switch (o) {
    case IBV_WC_SEND: return "SEND";
    case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
    case IBV_WC_RDMA_READ: return "RDMA_READ";
    case IBV_WC_COMP_SWAP: return "COMP_SWAP";
    case IBV_WC_FETCH_ADD: return "FETCH_ADD";
    case IBV_WC_RECV: return "RECV";
    case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
    case IBV_WC_BIND_MW: return "BIND_MW";
    case IBV_WC_LOCAL_INV: return "LOCAL_INV";
    default: break;
    }
    static char num[16];
    snprintf(num, sizeof(num), "op%d", o);
    return num;
}

/* A completion as printed: the QP it belongs to (index into the caller's
 * list), the work completion itself. */
struct seen {
    int qp;
    struct ibv_wc wc;
};

static int by_qp_then_id(const void* x, const void* y) {
    const struct seen* a = x;
    const struct seen* b = y;
    if (a->qp != b->qp)
        return a->qp - b->qp;
    return a->wc.wr_id < b->wc.wr_id ? -1 : a->wc.wr_id > b->wc.wr_id;
}

/* One ibv_start_poll .. ibv_end_poll pass over an extended CQ, at most
 * `room` completions, each read field by field into a work completion as
 * ibv_poll_cq would have filled it. An error completion defines only its
 * wr_id, status and vendor error; the rest stays filler. The timestamp,
 * asked for at creation, must be there (its value is the device's). */
static int poll_ex(struct env* e, struct seen* out, int room) {
    struct ibv_poll_cq_attr attr = {0};
    int r = ibv_start_poll(e->cqx, &attr);
    if (r == ENOENT)
        return 0;
    if (r) {
        printf("    start_poll %s\n", err_name(r));
        return -1;
    }
    int n = 0;
    do {
        struct ibv_wc* wc = &out[n].wc;
        memset(wc, 0x5a, sizeof(*wc));
        wc->wr_id = e->cqx->wr_id;
        wc->status = e->cqx->status;
        wc->qp_num = ibv_wc_read_qp_num(e->cqx);
        if (wc->status != IBV_WC_SUCCESS) {
            wc->vendor_err = ibv_wc_read_vendor_err(e->cqx);
            wc->byte_len = 0;
            wc->wc_flags = 0;
        } else {
            wc->opcode = ibv_wc_read_opcode(e->cqx);
            wc->byte_len = ibv_wc_read_byte_len(e->cqx);
            wc->wc_flags = ibv_wc_read_wc_flags(e->cqx);
            if (wc->wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV))
                wc->imm_data = ibv_wc_read_imm_data(e->cqx);
            if (wc->opcode & IBV_WC_RECV) {
                wc->src_qp = ibv_wc_read_src_qp(e->cqx);
                wc->slid = (uint16_t)ibv_wc_read_slid(e->cqx);
                wc->sl = ibv_wc_read_sl(e->cqx);
                wc->dlid_path_bits = ibv_wc_read_dlid_path_bits(e->cqx);
                wc->pkey_index = 0; /* not readable through ibv_cq_ex */
            }
            /* the opcodes whose length ibv_poll_cq does not define */
            if (wc->opcode == IBV_WC_SEND || wc->opcode == IBV_WC_RDMA_WRITE)
                wc->byte_len = 0x5a5a5a5a;
        }
        /* A completion that succeeded carries its time: the device clock,
         * and as wall-clock time the device clock converted (the
         * emulator's counts CLOCK_MONOTONIC), which must land near now. */
        if (wc->status == IBV_WC_SUCCESS) {
            if (!ibv_wc_read_completion_ts(e->cqx))
                printf("    wr_id %llu: no completion timestamp\n", (unsigned long long)wc->wr_id);
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            const int64_t d =
                ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec) - (int64_t)ibv_wc_read_completion_wallclock_ns(e->cqx);
            if (d < -2000000000LL || d > 2000000000LL)
                printf("    wr_id %llu: wall-clock time not within 2 s of now\n", (unsigned long long)wc->wr_id);
        }
        n++;
    } while (n < room && (r = ibv_next_poll(e->cqx)) == 0);
    ibv_end_poll(e->cqx);
    if (r && r != ENOENT) {
        printf("    next_poll %s\n", err_name(r));
        return -1;
    }
    return n;
}

/* Waits (bounded) for `want` completions and prints them, per QP in wr_id
 * order (how a send's and its receive's completions interleave in a shared
 * CQ is the device's timing, not the provider's). Fields the provider
 * leaves alone keep the 0x5a filler, so both must leave the same. */
static void reap(struct env* e, int want, struct ibv_qp* const* qps, int nqps) {
    struct seen got[64];
    int n_got = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (n_got < want && n_got < 64) {
        struct ibv_wc* wc = &got[n_got].wc;
        memset(wc, 0x5a, sizeof(*wc));
        int n = e->cqx ? poll_ex(e, &got[n_got], (want < 64 ? want : 64) - n_got) : ibv_poll_cq(e->cq, 1, wc);
        if (n < 0) {
            printf("    poll_cq %d\n", n);
            return;
        }
        if (n == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (t.tv_sec - t0.tv_sec > 5) {
                printf("    timeout after %d of %d completions\n", n_got, want);
                break;
            }
            continue;
        }
        for (int k = 0; k < n; k++, n_got++) {
            got[n_got].qp = -1;
            for (int i = 0; i < nqps; i++)
                if (got[n_got].wc.qp_num == qps[i]->qp_num)
                    got[n_got].qp = i;
        }
    }
    qsort(got, (size_t)n_got, sizeof(got[0]), by_qp_then_id);
    for (int k = 0; k < n_got; k++) {
        const struct ibv_wc* wc = &got[k].wc;
        int si = -1;
        for (int i = 0; i < nqps; i++)
            if (wc->src_qp == qps[i]->qp_num)
                si = i;
        printf("    wr_id %llu %s %s len %u flags 0x%x qp %d", (unsigned long long)wc->wr_id,
               wc->status ? ibv_wc_status_str(wc->status) : "ok", wc->status ? "-" : opcode_name(wc->opcode),
               wc->byte_len, wc->wc_flags, got[k].qp);
        if (wc->status == IBV_WC_SUCCESS && (wc->opcode & IBV_WC_RECV)) {
            printf(" src %d sl %u pkey %u path_bits %u slid_ok %d", si, wc->sl, wc->pkey_index, wc->dlid_path_bits,
                   wc->slid == e->lid);
            if (wc->wc_flags & IBV_WC_WITH_IMM)
                printf(" imm 0x%08x", ntohl(wc->imm_data));
        }
        printf("\n");
    }
}

static void post(const char* what, int r) { printf("  %-40s %s\n", what, err_name(r)); }

static void rc_traffic(struct env* e, enum ibv_qp_type type) {
    printf("%s traffic\n", type == IBV_QPT_RC ? "RC" : "UC");
    struct ibv_qp* a = make_qp(e, type, NULL);
    struct ibv_qp* b = make_qp(e, type, NULL);
    struct ibv_qp* qps[2] = {a, b};
    if (!a || !b || connect_pair(e, a, b))
        goto out;
    char* src = e->buf;
    char* dst = e->buf + 4096;
    uint64_t* atom = (uint64_t*)(e->buf + 8192);
    memset(src, 'a', 4096);
    struct ibv_sge s = {.addr = (uintptr_t)src, .length = 100, .lkey = e->mr->lkey};
    struct ibv_sge r = {.addr = (uintptr_t)dst, .length = 4096, .lkey = e->mr->lkey};
    struct ibv_recv_wr rw = {.wr_id = 100, .sg_list = &r, .num_sge = 1}, *bad_r;
    struct ibv_send_wr sw = {.wr_id = 1,
                             .sg_list = &s,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bad_s;
    for (int i = 0; i < 4; i++) {
        rw.wr_id = 100 + i;
        post("post_recv", ibv_post_recv(b, &rw, &bad_r));
    }
    post("send", ibv_post_send(a, &sw, &bad_s));
    reap(e, 2, qps, 2);
    sw.wr_id = 2;
    sw.opcode = IBV_WR_SEND_WITH_IMM;
    sw.imm_data = htonl(0x12345678);
    sw.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE | IBV_SEND_SOLICITED;
    post("send imm inline", ibv_post_send(a, &sw, &bad_s));
    reap(e, 2, qps, 2);
    sw.wr_id = 3;
    sw.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    sw.wr.rdma.remote_addr = (uintptr_t)dst;
    sw.wr.rdma.rkey = e->mr->rkey;
    sw.send_flags = IBV_SEND_SIGNALED;
    post("write imm", ibv_post_send(a, &sw, &bad_s));
    reap(e, 2, qps, 2);
    /* Unsignaled write, then a signaled one: one completion retires both. */
    sw.opcode = IBV_WR_RDMA_WRITE;
    sw.wr_id = 4;
    sw.send_flags = 0;
    post("write unsignaled", ibv_post_send(a, &sw, &bad_s));
    sw.wr_id = 5;
    sw.send_flags = IBV_SEND_SIGNALED;
    post("write", ibv_post_send(a, &sw, &bad_s));
    reap(e, 1, qps, 2);
    if (type == IBV_QPT_RC) {
        sw.wr_id = 6;
        sw.opcode = IBV_WR_RDMA_READ;
        s.addr = (uintptr_t)(e->buf + 12288);
        s.length = 300;
        post("read", ibv_post_send(a, &sw, &bad_s));
        reap(e, 1, qps, 2);
        printf("  read data ok %d\n", memcmp(e->buf + 12288, dst, 300) == 0);
        atom[0] = 5;
        struct ibv_sge as = {.addr = (uintptr_t)(atom + 1), .length = 8, .lkey = e->mr->lkey};
        struct ibv_send_wr aw = {.wr_id = 7,
                                 .sg_list = &as,
                                 .num_sge = 1,
                                 .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
                                 .send_flags = IBV_SEND_SIGNALED};
        aw.wr.atomic.remote_addr = (uintptr_t)atom;
        aw.wr.atomic.rkey = e->mr->rkey;
        aw.wr.atomic.compare_add = 3;
        post("fetch_add", ibv_post_send(a, &aw, &bad_s));
        reap(e, 1, qps, 2);
        printf("  fetch_add old %llu now %llu\n", (unsigned long long)atom[1], (unsigned long long)atom[0]);
        aw.wr_id = 8;
        aw.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
        aw.wr.atomic.compare_add = 8;
        aw.wr.atomic.swap = 42;
        post("cmp_swp", ibv_post_send(a, &aw, &bad_s));
        reap(e, 1, qps, 2);
        printf("  cmp_swp old %llu now %llu\n", (unsigned long long)atom[1], (unsigned long long)atom[0]);
    }
    /* Bad posts: too many SGEs, an opcode past the table, inline too long,
     * a receive with too many SGEs. */
    struct ibv_sge many[8];
    for (int i = 0; i < 8; i++)
        many[i] = s;
    struct ibv_send_wr bw = {.wr_id = 9, .sg_list = many, .num_sge = 3, .opcode = IBV_WR_SEND};
    bad_s = NULL;
    post("send 3 sges (max 2)", ibv_post_send(a, &bw, &bad_s));
    printf("  bad_wr is it %d\n", bad_s == &bw);
    bw.num_sge = 1;
    bw.opcode = (enum ibv_wr_opcode)40;
    post("send opcode 40", ibv_post_send(a, &bw, &bad_s));
    bw.opcode = IBV_WR_SEND;
    bw.send_flags = IBV_SEND_INLINE;
    many[0].length = 2000;
    post("send inline 2000 bytes", ibv_post_send(a, &bw, &bad_s));
    struct ibv_recv_wr brw = {.wr_id = 10, .sg_list = many, .num_sge = 8};
    struct ibv_recv_wr* bad_rr = NULL;
    post("post_recv 8 sges", ibv_post_recv(b, &brw, &bad_rr));
    printf("  bad_wr is it %d\n", bad_rr == &brw);
    /* Overflow: more WRs than the queue holds, unsignaled (no CQE). */
    int full = 0, r2 = 0;
    struct ibv_send_wr fw = {.wr_id = 11, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE};
    s.length = 8;
    fw.wr.rdma.remote_addr = (uintptr_t)dst;
    fw.wr.rdma.rkey = e->mr->rkey;
    struct ibv_send_wr chain[40];
    for (int i = 0; i < 40; i++) {
        chain[i] = fw;
        chain[i].next = i < 39 ? &chain[i + 1] : NULL;
    }
    r2 = ibv_post_send(a, chain, &bad_s);
    for (int i = 0; i < 40; i++)
        if (bad_s == &chain[i])
            full = i;
    printf("  post 40 writes: %s, first refused #%d\n", err_name(r2), full);
out:
    if (a)
        ibv_destroy_qp(a);
    if (b)
        ibv_destroy_qp(b);
}

static void ud_traffic(struct env* e) {
    printf("UD traffic\n");
    struct ibv_qp* a = make_qp(e, IBV_QPT_UD, NULL);
    struct ibv_qp* b = make_qp(e, IBV_QPT_UD, NULL);
    struct ibv_qp* qps[2] = {a, b};
    struct ibv_ah* ah = NULL;
    if (!a || !b || to_state(a, IBV_QPS_INIT, e, 0) || to_state(b, IBV_QPS_INIT, e, 0) ||
        to_state(a, IBV_QPS_RTR, e, 0) || to_state(b, IBV_QPS_RTR, e, 0) || to_state(a, IBV_QPS_RTS, e, 0) ||
        to_state(b, IBV_QPS_RTS, e, 0)) {
        printf("  setup failed\n");
        goto out;
    }
    struct ibv_ah_attr aa = self_ah_attr(e, 3);
    errno = 0;
    ah = ibv_create_ah(e->pd, &aa);
    post("create_ah", ah ? 0 : errno);
    struct ibv_ah_attr bad = aa;
    bad.port_num = 7;
    errno = 0;
    struct ibv_ah* bah = ibv_create_ah(e->pd, &bad);
    post("create_ah port 7", bah ? 0 : errno);
    if (!ah)
        goto out;
    struct ibv_sge r = {.addr = (uintptr_t)(e->buf + 4096), .length = 2048, .lkey = e->mr->lkey};
    struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 200, .lkey = e->mr->lkey};
    struct ibv_recv_wr rw = {.wr_id = 200, .sg_list = &r, .num_sge = 1}, *bad_r;
    struct ibv_send_wr sw = {.wr_id = 20,
                             .sg_list = &s,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND_WITH_IMM,
                             .send_flags = IBV_SEND_SIGNALED,
                             .imm_data = htonl(0xabcdef01)},
                       *bad_s;
    sw.wr.ud.ah = ah;
    sw.wr.ud.remote_qpn = b->qp_num;
    sw.wr.ud.remote_qkey = 0x11111111;
    post("post_recv", ibv_post_recv(b, &rw, &bad_r));
    post("send imm", ibv_post_send(a, &sw, &bad_s));
    reap(e, 2, qps, 2);
    sw.wr.ud.ah = NULL;
out:
    if (ah)
        ibv_destroy_ah(ah);
    if (a)
        ibv_destroy_qp(a);
    if (b)
        ibv_destroy_qp(b);
}

static void srq_traffic(struct env* e) {
    printf("SRQ traffic\n");
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
    struct ibv_srq* srq = ibv_create_srq(e->pd, &sa);
    struct ibv_qp* a = make_qp(e, IBV_QPT_RC, NULL);
    struct ibv_qp* b = srq ? make_qp(e, IBV_QPT_RC, srq) : NULL;
    struct ibv_qp* qps[2] = {a, b};
    if (!srq || !a || !b || connect_pair(e, a, b))
        goto out;
    struct ibv_sge r = {.addr = (uintptr_t)(e->buf + 4096), .length = 512, .lkey = e->mr->lkey};
    struct ibv_recv_wr rw = {.sg_list = &r, .num_sge = 1}, *bad_r;
    for (int i = 0; i < 3; i++) {
        rw.wr_id = 300 + i;
        post("post_srq_recv", ibv_post_srq_recv(srq, &rw, &bad_r));
    }
    struct ibv_recv_wr many = {.wr_id = 399, .sg_list = &r, .num_sge = 2};
    post("post_srq_recv 2 sges (max 1)", ibv_post_srq_recv(srq, &many, &bad_r));
    struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 64, .lkey = e->mr->lkey};
    struct ibv_send_wr sw = {.sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED},
                       *bad_s;
    for (int i = 0; i < 3; i++) {
        sw.wr_id = 30 + i;
        post("send", ibv_post_send(a, &sw, &bad_s));
    }
    reap(e, 6, qps, 2);
    /* More receives than the SRQ takes. */
    int n = 0;
    rw.wr_id = 350;
    while (n < 100 && !ibv_post_srq_recv(srq, &rw, &bad_r))
        n++;
    printf("  srq took %d more receives\n", n);
out:
    if (b)
        ibv_destroy_qp(b);
    if (a)
        ibv_destroy_qp(a);
    if (srq)
        ibv_destroy_srq(srq);
}

/* ------------------------------------------------------ small payloads */

/* Messages and results small enough for the device to put them in the CQE
 * (scatter-to-CQE, when the QP asked for it and the device does it; the
 * provider copies them out when polling): each must land in the buffers
 * exactly, split over SGEs as posted, through an RQ and an SRQ, and a
 * QP that signals every WR gets its RDMA read and atomic results so too.
 * Sizes around the 32 and 64 bytes of the two CQE sizes. */
static void small_traffic(struct env* e) {
    printf("small payloads\n");
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 2}};
    struct ibv_srq* srq = ibv_create_srq(e->pd, &sa);
    struct ibv_qp_init_attr ia = {.send_cq = e->cq,
                                  .recv_cq = e->cq,
                                  .qp_type = IBV_QPT_RC,
                                  .sq_sig_all = 1,
                                  .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 2}};
    struct ibv_qp* a = ibv_create_qp(e->pd, &ia); /* signals every WR */
    struct ibv_qp* b = make_qp(e, IBV_QPT_RC, NULL);
    struct ibv_qp* c = make_qp(e, IBV_QPT_RC, NULL);
    struct ibv_qp* d = srq ? make_qp(e, IBV_QPT_RC, srq) : NULL;
    struct ibv_qp* qps[4] = {a, b, c, d};
    if (!srq || !a || !b || !c || !d || connect_pair(e, a, b) || connect_pair(e, c, d))
        goto out;
    char* src = e->buf + 16384;
    char* dst = e->buf + 20480;
    for (int i = 0; i < 128; i++)
        src[i] = (char)(0x40 + i);
    static const uint32_t sizes[] = {1, 8, 24, 32, 33, 48, 64, 65, 100};
    const int n = (int)(sizeof(sizes) / sizeof(sizes[0]));
    struct ibv_send_wr* bad_s;
    struct ibv_recv_wr* bad_r;
    /* sends into two receive SGEs of 16 bytes and the rest */
    for (int k = 0; k < 2; k++) {
        struct ibv_qp* from = k ? c : a;
        struct ibv_qp* to = k ? d : b;
        printf("  sends to %s\n", k ? "an SRQ" : "an RQ");
        for (int i = 0; i < n; i++) {
            memset(dst, 0, 256);
            struct ibv_sge rs[2] = {{.addr = (uintptr_t)dst, .length = 16, .lkey = e->mr->lkey},
                                    {.addr = (uintptr_t)(dst + 128), .length = 112, .lkey = e->mr->lkey}};
            struct ibv_recv_wr rw = {.wr_id = 600 + i, .sg_list = rs, .num_sge = 2};
            int r = k ? ibv_post_srq_recv(srq, &rw, &bad_r) : ibv_post_recv(to, &rw, &bad_r);
            struct ibv_sge ss = {.addr = (uintptr_t)src, .length = sizes[i], .lkey = e->mr->lkey};
            struct ibv_send_wr sw = {
                .wr_id = 60 + i, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
            if (!r)
                r = ibv_post_send(from, &sw, &bad_s);
            printf("    %3u bytes: post %s\n", sizes[i], err_name(r));
            reap(e, 2, qps, 4);
            const uint32_t first = sizes[i] < 16 ? sizes[i] : 16;
            const int same = !memcmp(dst, src, first) && !memcmp(dst + 128, src + 16, sizes[i] - first);
            int clean = 1; /* nothing written past the message */
            for (uint32_t j = first; j < 16; j++)
                clean &= dst[j] == 0;
            for (uint32_t j = 128 + sizes[i] - first; j < 256; j++)
                clean &= dst[j] == 0;
            printf("      data %s, beyond it %s\n", same ? "in place" : "WRONG", clean ? "untouched" : "WRITTEN");
        }
    }
    /* a receive buffer too small for the message */
    {
        struct ibv_sge rs = {.addr = (uintptr_t)dst, .length = 4, .lkey = e->mr->lkey};
        struct ibv_recv_wr rw = {.wr_id = 690, .sg_list = &rs, .num_sge = 1};
        struct ibv_sge ss = {.addr = (uintptr_t)src, .length = 20, .lkey = e->mr->lkey};
        struct ibv_send_wr sw = {
            .wr_id = 69, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
        int r = ibv_post_recv(b, &rw, &bad_r);
        if (!r)
            r = ibv_post_send(a, &sw, &bad_s);
        printf("  20 bytes into 4: post %s\n", err_name(r));
        reap(e, 2, qps, 4);
    }
    /* RDMA reads and atomics from a QP that signals every WR (c, d are
     * still connected) */
    {
        struct ibv_qp* x = ibv_create_qp(e->pd, &ia);
        struct ibv_qp* y = make_qp(e, IBV_QPT_RC, NULL);
        struct ibv_qp* pq[2] = {x, y};
        if (!x || !y || connect_pair(e, x, y)) {
            printf("  read pair: setup failed\n");
        } else {
            printf("  reads and atomics\n");
            /* libmlx5 44 copies a result scattered into a 128-byte CQE
             * (reads of up to 64 bytes there, atomics) from one byte too early
             * (fixed upstream: rdma-core pull request 1743): the twin run
             * leaves those out, small_reads.sh checks ours alone. */
            const char* cqe_size = getenv("MLX5_CQE_SIZE");
            const int skip64 = cqe_size && !strcmp(cqe_size, "128") && !getenv("DATA_PATH_ALL_READS");
            if (skip64)
                printf("    (reads of up to 64 bytes and atomic results not compared: 128-byte CQEs)\n");
            for (int i = 0; i < n; i++) {
                if (skip64 && sizes[i] <= 64)
                    continue;
                memset(dst, 0, 256);
                struct ibv_sge ls[2] = {
                    {.addr = (uintptr_t)dst, .length = 8, .lkey = e->mr->lkey},
                    {.addr = (uintptr_t)(dst + 128), .length = sizes[i] > 8 ? sizes[i] - 8 : 0, .lkey = e->mr->lkey}};
                if (sizes[i] < 8)
                    ls[0].length = sizes[i];
                struct ibv_send_wr w = {
                    .wr_id = 70 + i, .sg_list = ls, .num_sge = sizes[i] > 8 ? 2 : 1, .opcode = IBV_WR_RDMA_READ};
                w.wr.rdma.remote_addr = (uintptr_t)src;
                w.wr.rdma.rkey = e->mr->rkey;
                int r = ibv_post_send(x, &w, &bad_s);
                printf("    read %3u bytes: post %s\n", sizes[i], err_name(r));
                reap(e, 1, pq, 2);
                const uint32_t first = sizes[i] < 8 ? sizes[i] : 8;
                printf("      data %s\n",
                       !memcmp(dst, src, first) && !memcmp(dst + 128, src + 8, sizes[i] - first) ? "in place"
                                                                                                 : "WRONG");
            }
            uint64_t* target = (uint64_t*)(e->buf + 24576);
            *target = 41;
            memset(dst, 0, 16);
            struct ibv_sge as = {.addr = (uintptr_t)dst, .length = 8, .lkey = e->mr->lkey};
            struct ibv_send_wr aw = {.wr_id = 80, .sg_list = &as, .num_sge = 1, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD};
            aw.wr.atomic.remote_addr = (uintptr_t)target;
            aw.wr.atomic.rkey = e->mr->rkey;
            aw.wr.atomic.compare_add = 1;
            printf("    fetch and add: post %s\n", err_name(ibv_post_send(x, &aw, &bad_s)));
            reap(e, 1, pq, 2);
            uint64_t got;
            memcpy(&got, dst, 8);
            if (!skip64)
                printf("      old value %llu, now %llu\n", (unsigned long long)got, (unsigned long long)*target);
            aw.wr_id = 81;
            aw.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
            aw.wr.atomic.compare_add = 42;
            aw.wr.atomic.swap = 7;
            printf("    compare and swap: post %s\n", err_name(ibv_post_send(x, &aw, &bad_s)));
            reap(e, 1, pq, 2);
            memcpy(&got, dst, 8);
            if (!skip64)
                printf("      old value %llu, now %llu\n", (unsigned long long)got, (unsigned long long)*target);
        }
        if (x)
            ibv_destroy_qp(x);
        if (y)
            ibv_destroy_qp(y);
    }
out:
    for (int i = 0; i < 4; i++)
        if (qps[i])
            ibv_destroy_qp(qps[i]);
    if (srq)
        ibv_destroy_srq(srq);
}

static void error_traffic(struct env* e) {
    printf("RC error and flush\n");
    struct ibv_qp* a = make_qp(e, IBV_QPT_RC, NULL);
    struct ibv_qp* b = make_qp(e, IBV_QPT_RC, NULL);
    struct ibv_qp* qps[2] = {a, b};
    if (!a || !b || connect_pair(e, a, b))
        goto out;
    struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 64, .lkey = e->mr->lkey ^ 0x100000};
    struct ibv_send_wr sw = {.wr_id = 40,
                             .sg_list = &s,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED},
                       *bad_s;
    sw.wr.rdma.remote_addr = (uintptr_t)(e->buf + 4096);
    sw.wr.rdma.rkey = e->mr->rkey;
    post("write with a bad lkey", ibv_post_send(a, &sw, &bad_s));
    s.lkey = e->mr->lkey;
    sw.wr_id = 41;
    post("write after it", ibv_post_send(a, &sw, &bad_s));
    reap(e, 2, qps, 2);
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qi;
    ibv_query_qp(a, &qa, IBV_QP_STATE, &qi);
    printf("  state %d\n", qa.qp_state);
    /* Back through RESET: the queues start over. */
    post("to RESET", to_state(a, IBV_QPS_RESET, e, 0));
    post("to INIT", to_state(a, IBV_QPS_INIT, e, 0));
    post("to RTR", to_state(a, IBV_QPS_RTR, e, b->qp_num));
    post("to RTS", to_state(a, IBV_QPS_RTS, e, 0));
    struct ibv_recv_wr rw = {.wr_id = 400, .sg_list = &s, .num_sge = 1}, *bad_r;
    post("post_recv", ibv_post_recv(b, &rw, &bad_r));
    sw.wr_id = 42;
    sw.opcode = IBV_WR_SEND;
    post("send", ibv_post_send(a, &sw, &bad_s));
    reap(e, 1, qps, 2);
out:
    if (a)
        ibv_destroy_qp(a);
    if (b)
        ibv_destroy_qp(b);
}

/* What each way of posting answers in each state a UD QP passes through:
 * an empty ibv_wr_* batch, a batch of one send (SGE, inline), an
 * ibv_post_send without SGEs, an ibv_post_recv without SGEs. The queues
 * open on the moves to INIT (receive) and RTS (send) and close on the move
 * to RESET; a QP that went to ERR before RTS never opened its send queue.
 * (No SQD: whether the emulated device lets a QP with sends in flight
 * drain is timing, not the provider.)
 * Its own CQ keeps the sends that do go out away from the others. */
static void state_posts_line(struct env* e, struct ibv_qp* qp, struct ibv_ah* ah, const char* state) {
    struct ibv_qp_ex* q = ibv_qp_to_qp_ex(qp);
    struct ibv_sge s = {(uintptr_t)e->buf, 8, e->mr->lkey};
    int r[6];
    ibv_wr_start(q);
    r[0] = ibv_wr_complete(q);
    ibv_wr_start(q);
    ibv_wr_send(q);
    ibv_wr_set_ud_addr(q, ah, qp->qp_num, 0x11111111);
    ibv_wr_set_sge(q, e->mr->lkey, (uintptr_t)e->buf, 8);
    r[1] = ibv_wr_complete(q);
    ibv_wr_start(q);
    ibv_wr_send(q);
    ibv_wr_set_ud_addr(q, ah, qp->qp_num, 0x11111111);
    ibv_wr_set_inline_data(q, e->buf, 8);
    r[2] = ibv_wr_complete(q);
    struct ibv_send_wr w = {.wr_id = 1, .sg_list = &s, .num_sge = 0, .opcode = IBV_WR_SEND}, *bad;
    w.wr.ud.ah = ah;
    w.wr.ud.remote_qpn = qp->qp_num;
    w.wr.ud.remote_qkey = 0x11111111;
    r[3] = ibv_post_send(qp, &w, &bad);
    w.num_sge = 1;
    r[4] = ibv_post_send(qp, &w, &bad);
    struct ibv_recv_wr rw = {.wr_id = 2, .sg_list = &s, .num_sge = 0}, *rbad;
    r[5] = ibv_post_recv(qp, &rw, &rbad);
    printf("  %-14s wr empty %s, wr sge %s, wr inline %s, post 0 sge %s, post 1 sge %s, recv %s\n", state,
           err_name(r[0]), err_name(r[1]), err_name(r[2]), err_name(r[3]), err_name(r[4]), err_name(r[5]));
}

static void state_posts(struct env* e) {
    printf("posting by QP state\n");
    struct ibv_cq* cq = ibv_create_cq(e->ctx, 256, NULL, NULL, 0);
    struct ibv_ah_attr aa = self_ah_attr(e, 0);
    struct ibv_ah* ah = ibv_create_ah(e->pd, &aa);
    struct ibv_qp_init_attr_ex x = {
        .send_cq = cq,
        .recv_cq = cq,
        .qp_type = IBV_QPT_UD,
        .cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 16},
        .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        .pd = e->pd,
        .send_ops_flags = IBV_QP_EX_WITH_SEND};
    struct ibv_qp* qp = cq && ah ? ibv_create_qp_ex(e->ctx, &x) : NULL;
    if (!qp) {
        printf("  set-up failed\n");
        goto out;
    }
    static const struct {
        enum ibv_qp_state to;
        const char* name;
    } walk[] = {{IBV_QPS_RESET, "new (RESET)"}, {IBV_QPS_INIT, "INIT"},         {IBV_QPS_RTR, "RTR"},
                {IBV_QPS_RTS, "RTS"},           {IBV_QPS_ERR, "ERR"},           {IBV_QPS_RESET, "RESET"},
                {IBV_QPS_INIT, "INIT"},         {IBV_QPS_ERR, "ERR from INIT"}, {IBV_QPS_RESET, "RESET"},
                {IBV_QPS_INIT, "INIT"},         {IBV_QPS_RTR, "RTR"},           {IBV_QPS_ERR, "ERR from RTR"},
                {IBV_QPS_RESET, "RESET"}};
    for (size_t i = 0; i < sizeof(walk) / sizeof(walk[0]); i++) {
        if (i) {
            int r = to_state(qp, walk[i].to, e, 0);
            if (r) {
                printf("  to %s: %s\n", walk[i].name, err_name(r));
                break;
            }
        }
        state_posts_line(e, qp, ah, walk[i].name);
    }
out:
    if (qp)
        ibv_destroy_qp(qp);
    if (ah)
        ibv_destroy_ah(ah);
    if (cq)
        ibv_destroy_cq(cq);
}

/* The ibv_wr_* interface: a batch of three, an aborted one, a batch whose
 * inline data is too long. */
static void wr_api(struct env* e) {
    printf("ibv_wr_* interface\n");
    struct ibv_qp_init_attr_ex x = {
        .send_cq = e->cq,
        .recv_cq = e->cq,
        .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 2, .max_inline_data = 32},
        .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        .pd = e->pd,
        .send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE};
    errno = 0;
    struct ibv_qp* a = ibv_create_qp_ex(e->ctx, &x);
    printf("  create_qp_ex send+write: %s", err_name(a ? 0 : errno));
    if (a)
        printf(" -> wr %u sge %u inline %u", x.cap.max_send_wr, x.cap.max_send_sge, x.cap.max_inline_data);
    printf("\n");
    struct ibv_qp_init_attr_ex y = x;
    y.send_ops_flags = IBV_QP_EX_WITH_TSO;
    errno = 0;
    struct ibv_qp* t = ibv_create_qp_ex(e->ctx, &y);
    printf("  create_qp_ex tso on RC: %s\n", err_name(t ? 0 : errno));
    if (t)
        ibv_destroy_qp(t);
    struct ibv_qp* b = make_qp(e, IBV_QPT_RC, NULL);
    struct ibv_qp* qps[2] = {a, b};
    if (!a || !b || connect_pair(e, a, b))
        goto out;
    struct ibv_qp_ex* q = ibv_qp_to_qp_ex(a);
    struct ibv_sge r = {.addr = (uintptr_t)(e->buf + 4096), .length = 4096, .lkey = e->mr->lkey};
    struct ibv_recv_wr rw = {.wr_id = 500, .sg_list = &r, .num_sge = 1}, *bad_r;
    post("post_recv", ibv_post_recv(b, &rw, &bad_r));
    ibv_wr_start(q);
    q->wr_id = 50;
    q->wr_flags = 0;
    ibv_wr_rdma_write(q, e->mr->rkey, (uintptr_t)(e->buf + 8192));
    ibv_wr_set_sge(q, e->mr->lkey, (uintptr_t)e->buf, 128);
    q->wr_id = 51;
    q->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(q);
    ibv_wr_set_inline_data(q, e->buf, 20);
    q->wr_id = 52;
    ibv_wr_rdma_write(q, e->mr->rkey, (uintptr_t)(e->buf + 8192));
    struct ibv_sge two[2] = {{(uintptr_t)e->buf, 16, e->mr->lkey}, {(uintptr_t)e->buf + 16, 16, e->mr->lkey}};
    ibv_wr_set_sge_list(q, 2, two);
    post("wr_complete (write, send inline, write)", ibv_wr_complete(q));
    reap(e, 3, qps, 2);
    ibv_wr_start(q);
    q->wr_id = 53;
    ibv_wr_send(q);
    ibv_wr_set_sge(q, e->mr->lkey, (uintptr_t)e->buf, 8);
    ibv_wr_abort(q);
    ibv_wr_start(q);
    q->wr_id = 54;
    ibv_wr_send(q);
    ibv_wr_set_inline_data(q, e->buf, 2000);
    post("wr_complete (inline 2000)", ibv_wr_complete(q));
    ibv_wr_start(q);
    q->wr_id = 55;
    q->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(q);
    ibv_wr_set_sge(q, e->mr->lkey, (uintptr_t)e->buf, 8);
    post("wr_complete (send after the abort)", ibv_wr_complete(q));
    post("post_recv", ibv_post_recv(b, &rw, &bad_r));
    reap(e, 2, qps, 2);
out:
    if (a)
        ibv_destroy_qp(a);
    if (b)
        ibv_destroy_qp(b);
}

/* Inline sends of every size class the provider copies differently (0 to
 * 64 bytes, one SGE or split over two, the second pushing past the QP's
 * inline limit), through ibv_post_send and through ibv_wr_*: what arrives
 * must be what was sent, and the SQ (8 WRs) wraps several times on the
 * way. */
static void inline_sizes(struct env* e) {
    printf("inline sizes\n");
    struct ibv_qp_init_attr_ex x = {
        .send_cq = e->cq,
        .recv_cq = e->cq,
        .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 1, .max_inline_data = 64},
        .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        .pd = e->pd,
        .send_ops_flags = IBV_QP_EX_WITH_SEND};
    struct ibv_qp* a = ibv_create_qp_ex(e->ctx, &x);
    struct ibv_qp* b = make_qp(e, IBV_QPT_RC, NULL);
    if (!a || !b || connect_pair(e, a, b)) {
        printf("  setup failed\n");
        goto out;
    }
    printf("  max_inline %u\n", x.cap.max_inline_data);
    const unsigned sizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 47, 48, 63, 64};
    uint8_t* src = (uint8_t*)e->buf;
    uint8_t* dst = (uint8_t*)e->buf + 8192;
    struct ibv_qp_ex* q = ibv_qp_to_qp_ex(a);
    uint64_t id = 900;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (int how = 0; how < 3; how++) { /* post_send 1 SGE, post_send 2 SGEs, wr_* list of 2 */
            const unsigned len = sizes[i];
            const unsigned first = how ? len / 3 : len;
            for (unsigned k = 0; k < len; k++)
                src[k] = (uint8_t)(k * 7 + len + how);
            memset(dst, 0xee, 128);
            struct ibv_sge r = {.addr = (uintptr_t)dst, .length = 128, .lkey = e->mr->lkey};
            struct ibv_recv_wr rw = {.wr_id = id, .sg_list = &r, .num_sge = 1}, *bad_r;
            int pr = ibv_post_recv(b, &rw, &bad_r);
            struct ibv_sge two[2] = {{(uintptr_t)src, first, e->mr->lkey},
                                     {(uintptr_t)(src + first), len - first, e->mr->lkey}};
            int ps;
            if (how < 2) {
                struct ibv_send_wr sw = {.wr_id = id + 1,
                                         .sg_list = two,
                                         .num_sge = how ? 2 : 1,
                                         .opcode = IBV_WR_SEND,
                                         .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE},
                                   *bad_s;
                ps = ibv_post_send(a, &sw, &bad_s);
            } else {
                struct ibv_data_buf bufs[2] = {{two[0].addr ? (void*)(uintptr_t)two[0].addr : NULL, two[0].length},
                                               {(void*)(uintptr_t)two[1].addr, two[1].length}};
                ibv_wr_start(q);
                q->wr_id = id + 1;
                q->wr_flags = IBV_SEND_SIGNALED;
                ibv_wr_send(q);
                ibv_wr_set_inline_data_list(q, 2, bufs);
                ps = ibv_wr_complete(q);
            }
            int got = 0, ok = 0;
            unsigned rlen = 0;
            struct timespec t0, t;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            while (got < 2 && !pr && !ps) {
                struct ibv_wc wc;
                int n = ibv_poll_cq(e->cq, 1, &wc);
                if (n < 0)
                    break;
                if (n == 0) {
                    clock_gettime(CLOCK_MONOTONIC, &t);
                    if (t.tv_sec - t0.tv_sec > 5)
                        break;
                    continue;
                }
                got++;
                if (wc.wr_id == id && wc.status == IBV_WC_SUCCESS) {
                    rlen = wc.byte_len;
                    ok = memcmp(dst, src, len) == 0 && dst[len] == 0xee;
                }
            }
            printf("  %2u bytes %-9s recv %s send %s completions %d len %u data ok %d\n", len,
                   how == 0       ? "1 sge"
                       : how == 1 ? "2 sges"
                                  : "wr list",
                   err_name(pr), err_name(ps), got, rlen, ok);
            id += 2;
        }
    }
    /* Over the limit only once the second piece is counted. */
    const unsigned lim = x.cap.max_inline_data;
    struct ibv_sge over[2] = {{(uintptr_t)src, lim, e->mr->lkey}, {(uintptr_t)src, 1, e->mr->lkey}};
    struct ibv_send_wr ow = {.wr_id = 1,
                             .sg_list = over,
                             .num_sge = 2,
                             .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_INLINE},
                       *bad_o = NULL;
    post("inline limit + 1 in the 2nd sge", ibv_post_send(a, &ow, &bad_o));
    printf("  bad_wr is it %d\n", bad_o == &ow);
    struct ibv_data_buf obufs[2] = {{src, lim}, {src, 1}};
    ibv_wr_start(q);
    ibv_wr_send(q);
    ibv_wr_set_inline_data_list(q, 2, obufs);
    post("wr list limit + 1", ibv_wr_complete(q));
out:
    if (a)
        ibv_destroy_qp(a);
    if (b)
        ibv_destroy_qp(b);
}

/* ibv_resize_cq: the sizes and errnos, then a resize with completions
 * not yet polled (they must all come out, in order, from the new ring),
 * traffic on the new ring, and a shrink. */
static void cq_resize_traffic(struct env* e) {
    printf("CQ resize\n");
    struct ibv_cq* cq = ibv_create_cq(e->ctx, 4, NULL, NULL, 0);
    if (!cq) {
        printf("  create_cq: %s\n", err_name(errno));
        return;
    }
    printf("  created cqe %d\n", cq->cqe);
    const int sizes[] = {7, 4, 0, -1, 1 << 24, (1 << 24) + 1, 1 << 30, 16};
    /* With 128-byte CQEs Debian's libmlx5 overflows its ring size for the
     * 2^25-entry rings and crashes: those two sizes run at 64 bytes only. */
    const char* cqe_size = getenv("MLX5_CQE_SIZE");
    const int big_cqes = cqe_size && atoi(cqe_size) == 128;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        if (big_cqes && sizes[i] >= (1 << 24) && sizes[i] < (1 << 25))
            continue;
        int r = ibv_resize_cq(cq, sizes[i]);
        printf("  resize to %d: %s, cqe %d\n", sizes[i], err_name(r), cq->cqe);
    }
    struct ibv_qp_init_attr qa = {.send_cq = cq,
                                  .recv_cq = cq,
                                  .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1}};
    struct ibv_qp* a = ibv_create_qp(e->pd, &qa);
    struct ibv_qp* b = ibv_create_qp(e->pd, &qa);
    if (!a || !b || connect_pair(e, a, b))
        goto out;
    struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 8, .lkey = e->mr->lkey};
    struct ibv_send_wr w = {.sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    w.wr.rdma.remote_addr = (uintptr_t)(e->buf + 4096);
    w.wr.rdma.rkey = e->mr->rkey;
    /* rounds: CQEs left waiting, then the new size */
    const int plan[][2] = {{3, 100}, {5, 12}, {5, 3}, {2, 3}, {0, 40}};
    uint64_t id = 1;
    for (size_t p = 0; p < sizeof(plan) / sizeof(plan[0]); p++) {
        const int waiting = plan[p][0];
        for (int i = 0; i < waiting; i++) {
            w.wr_id = id++;
            if (ibv_post_send(a, &w, &bad))
                printf("  post failed\n");
        }
        usleep(50000); /* the device writes them (the emulator's engine) */
        int r = ibv_resize_cq(cq, plan[p][1]);
        printf("  %d waiting, resize to %d: %s, cqe %d; polled:", waiting, plan[p][1], err_name(r), cq->cqe);
        struct ibv_wc wc;
        int n, got = 0;
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
            n = ibv_poll_cq(cq, 1, &wc);
            if (n < 0) {
                printf(" poll error %d", n);
                break;
            }
            if (n == 1) {
                printf(" %llu/%s", (unsigned long long)wc.wr_id, wc.status ? ibv_wc_status_str(wc.status) : "ok");
                got++;
                continue;
            }
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (got >= waiting || t.tv_sec - t0.tv_sec > 2)
                break;
        }
        printf("\n");
        /* and the ring in use afterwards: a few more, polled as they come */
        for (int i = 0; i < 3; i++) {
            w.wr_id = id++;
            ibv_post_send(a, &w, &bad);
        }
        got = 0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        printf("    then:");
        while (got < 3) {
            n = ibv_poll_cq(cq, 1, &wc);
            if (n == 1) {
                printf(" %llu/%s", (unsigned long long)wc.wr_id, wc.status ? ibv_wc_status_str(wc.status) : "ok");
                got++;
                continue;
            }
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (n < 0 || t.tv_sec - t0.tv_sec > 2) {
                printf(" (stopped after %d)", got);
                break;
            }
        }
        printf("\n");
    }
out:
    if (a)
        ibv_destroy_qp(a);
    if (b)
        ibv_destroy_qp(b);
    ibv_destroy_cq(cq);
}

/* A CQ of two entries takes four completions: a plain one keeps the first
 * two and reports the overrun (IBV_EVENT_CQ_ERR); one created with
 * IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN is written over, and its consumer,
 * a whole pass behind, finds no CQE it owns. */
static const char* drain_async(struct env* e) {
    static char seen[128];
    seen[0] = 0;
    struct pollfd p = {.fd = e->ctx->async_fd, .events = POLLIN};
    while (poll(&p, 1, 0) == 1) {
        struct ibv_async_event ev;
        if (ibv_get_async_event(e->ctx, &ev))
            break;
        size_t n = strlen(seen);
        snprintf(seen + n, sizeof(seen) - n, " %s", ibv_event_type_str(ev.event_type));
        ibv_ack_async_event(&ev);
    }
    return seen[0] ? seen : " none";
}

static void overrun_traffic(struct env* e) {
    printf("CQ overrun\n");
    for (int ignore = 0; ignore < 2; ignore++) {
        struct ibv_cq_init_attr_ex ca = {.cqe = 1,
                                         .wc_flags = IBV_WC_STANDARD_FLAGS,
                                         .comp_mask = ignore ? IBV_CQ_INIT_ATTR_MASK_FLAGS : 0,
                                         .flags = ignore ? IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN : 0};
        drain_async(e);
        struct ibv_cq_ex* cqx = ibv_create_cq_ex(e->ctx, &ca);
        printf("  %s: create %s", ignore ? "ignore overrun" : "plain", err_name(cqx ? 0 : errno));
        if (!cqx) {
            printf("\n");
            continue;
        }
        struct ibv_cq* cq = ibv_cq_ex_to_cq(cqx);
        printf(", cqe %d\n", cq->cqe);
        struct ibv_qp_init_attr qa = {
            .send_cq = cq,
            .recv_cq = e->cq,
            .qp_type = IBV_QPT_RC,
            .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
        struct ibv_qp* a = ibv_create_qp(e->pd, &qa);
        struct ibv_qp* b = make_qp(e, IBV_QPT_RC, NULL);
        if (a && b && !connect_pair(e, a, b)) {
            struct ibv_sge s = {.addr = (uintptr_t)e->buf, .length = 8, .lkey = e->mr->lkey};
            struct ibv_send_wr w = {.sg_list = &s,
                                    .num_sge = 1,
                                    .opcode = IBV_WR_RDMA_WRITE,
                                    .send_flags = IBV_SEND_SIGNALED},
                               *bad;
            w.wr.rdma.remote_addr = (uintptr_t)(e->buf + 4096);
            w.wr.rdma.rkey = e->mr->rkey;
            for (int i = 0; i < 4; i++) {
                w.wr_id = 60 + i;
                ibv_post_send(a, &w, &bad);
            }
            usleep(100000);
            printf("    polled:");
            struct ibv_wc wc;
            for (int i = 0; i < 6; i++)
                if (ibv_poll_cq(cq, 1, &wc) == 1)
                    printf(" %llu/%s", (unsigned long long)wc.wr_id, wc.status ? ibv_wc_status_str(wc.status) : "ok");
            printf("\n    async events:%s\n", drain_async(e));
        }
        if (a)
            ibv_destroy_qp(a);
        if (b)
            ibv_destroy_qp(b);
        ibv_destroy_cq(cq);
    }
}

/* ibv_rereg_mr: access, translation (then an RDMA write through the same
 * rkey must land in the new range), PD, and the refusals. */
static void mr_rereg(struct env* e) {
    printf("MR rereg\n");
    char* a = (char*)e->buf + 16384;
    char* b = (char*)e->buf + 24576;
    struct ibv_mr* mr = ibv_reg_mr(e->pd, a, 4096, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_pd* pd2 = ibv_alloc_pd(e->ctx);
    if (!mr || !pd2) {
        printf("  setup failed\n");
        goto out;
    }
    const uint32_t lkey = mr->lkey, rkey = mr->rkey;
    struct {
        const char* what;
        int flags;
        struct ibv_pd* pd;
        void* addr;
        size_t len;
        int access;
    } steps[] = {
        {"no flag", 0, NULL, NULL, 0, 0},
        {"unknown flag", 1 << 6, NULL, NULL, 0, 0},
        {"access remote write", IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE},
        {"access remote write alone", IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_REMOTE_WRITE},
        {"translation without length", IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b, 0, 0},
        {"translation to b", IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b, 4096, 0},
        {"pd", IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0},
        {"pd back", IBV_REREG_MR_CHANGE_PD, e->pd, NULL, 0, 0},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        errno = 0;
        int r = ibv_rereg_mr(mr, steps[i].flags, steps[i].pd, steps[i].addr, steps[i].len, steps[i].access);
        printf("  %-28s %d (errno %s), keys %s, pd %s, addr %s\n", steps[i].what, r, r ? err_name(errno) : "-",
               mr->lkey == lkey && mr->rkey == rkey ? "kept" : "new", mr->pd == e->pd ? "first" : "second",
               mr->addr == b       ? "b"
                   : mr->addr == a ? "a"
                                   : "?");
    }
    printf("  dealloc the second pd: %s\n", err_name(ibv_dealloc_pd(pd2)));
    pd2 = NULL;
    /* an RDMA write through the MR's rkey now lands in b */
    struct ibv_qp* x = make_qp(e, IBV_QPT_RC, NULL);
    struct ibv_qp* y = make_qp(e, IBV_QPT_RC, NULL);
    if (x && y && !connect_pair(e, x, y)) {
        memset(a, 0, 64);
        memset(b, 0, 64);
        char* src = e->buf;
        memcpy(src, "to the new range", 17);
        struct ibv_sge s = {.addr = (uintptr_t)src, .length = 17, .lkey = e->mr->lkey};
        struct ibv_send_wr w = {.wr_id = 77,
                                .sg_list = &s,
                                .num_sge = 1,
                                .opcode = IBV_WR_RDMA_WRITE,
                                .send_flags = IBV_SEND_SIGNALED},
                           *bad;
        w.wr.rdma.remote_addr = (uintptr_t)b;
        w.wr.rdma.rkey = mr->rkey;
        int ps = ibv_post_send(x, &w, &bad);
        struct ibv_wc wc = {.status = IBV_WC_GENERAL_ERR};
        int n = 0;
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        while (!ps && (n = ibv_poll_cq(e->cq, 1, &wc)) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (t.tv_sec - t0.tv_sec > 5)
                break;
        }
        printf("  write through the rkey: post %s, %s, in b %s, a untouched %s\n", err_name(ps),
               n == 1 ? (wc.status ? ibv_wc_status_str(wc.status) : "ok") : "no completion",
               memcmp(b, src, 17) ? "no" : "yes", a[0] ? "no" : "yes");
    }
    if (x)
        ibv_destroy_qp(x);
    if (y)
        ibv_destroy_qp(y);
out:
    if (mr)
        ibv_dereg_mr(mr);
    if (pd2)
        ibv_dealloc_pd(pd2);
}

/* ------------------------------------------------------ memory windows */

/* A connected RC pair for one memory-window check: each remote access error
 * takes both QPs to the error state, so every check gets new ones. */
struct mw_pair {
    struct ibv_qp* x; /* requester */
    struct ibv_qp* y; /* responder: binds the windows */
};

static int mw_pair_open(struct env* e, struct mw_pair* p) {
    p->x = make_qp(e, IBV_QPT_RC, NULL);
    p->y = make_qp(e, IBV_QPT_RC, NULL);
    if (!p->x || !p->y || connect_pair(e, p->x, p->y)) {
        printf("  pair: setup failed\n");
        return 1;
    }
    return 0;
}

static void mw_pair_close(struct mw_pair* p) {
    if (p->x)
        ibv_destroy_qp(p->x);
    if (p->y)
        ibv_destroy_qp(p->y);
    p->x = p->y = NULL;
}

/* One completion, bounded wait; its status (or "no completion") printed
 * with the opcode of a success, the flags and, for an invalidating
 * receive, whether the invalidated key is `inv_rkey`. */
static void mw_reap(struct env* e, const char* what, uint32_t inv_rkey) {
    struct ibv_wc wc;
    memset(&wc, 0x5a, sizeof(wc));
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int n;
    while ((n = ibv_poll_cq(e->cq, 1, &wc)) == 0) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 5)
            break;
    }
    if (n != 1) {
        printf("    %-36s no completion\n", what);
        return;
    }
    printf("    %-36s wr_id %llu %s %s flags 0x%x", what, (unsigned long long)wc.wr_id,
           wc.status ? ibv_wc_status_str(wc.status) : "ok", wc.status ? "-" : opcode_name(wc.opcode),
           wc.status ? 0 : wc.wc_flags);
    if (!wc.status && (wc.wc_flags & IBV_WC_WITH_INV))
        printf(" invalidated %s", wc.invalidated_rkey == inv_rkey ? "the window" : "another key");
    printf("\n");
}

/* An RDMA write of 32 bytes from x through `rkey` to `dst`: the post, the
 * completion, whether the bytes arrived. */
static void mw_write(struct env* e, struct ibv_qp* x, uint32_t rkey, char* dst, const char* what) {
    static unsigned stamp;
    char* src = e->buf + 512;
    snprintf(src, 32, "window write %u", ++stamp);
    memset(dst, 0, 32);
    struct ibv_sge s = {.addr = (uintptr_t)src, .length = 32, .lkey = e->mr->lkey};
    struct ibv_send_wr w = {.wr_id = 900,
                            .sg_list = &s,
                            .num_sge = 1,
                            .opcode = IBV_WR_RDMA_WRITE,
                            .send_flags = IBV_SEND_SIGNALED},
                       *bad;
    w.wr.rdma.remote_addr = (uintptr_t)dst;
    w.wr.rdma.rkey = rkey;
    int r = ibv_post_send(x, &w, &bad);
    if (r) {
        printf("    %-36s post %s\n", what, err_name(r));
        return;
    }
    mw_reap(e, what, 0);
    printf("    %-36s arrived %s\n", "", memcmp(dst, src, 32) ? "no" : "yes");
}

/* A type 2 bind (or unbind: length 0) posted on qp; its rkey is the
 * window's key with the next variant byte. 0 or the post's errno. */
static int mw_post_bind(struct ibv_qp* qp, struct ibv_mw* mw, uint32_t rkey, struct ibv_mr* mr, void* addr, size_t len,
                        unsigned access, uint64_t wr_id) {
    struct ibv_send_wr w = {.wr_id = wr_id, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED}, *bad;
    w.bind_mw.mw = mw;
    w.bind_mw.rkey = rkey;
    w.bind_mw.bind_info.mr = mr;
    w.bind_mw.bind_info.addr = (uintptr_t)addr;
    w.bind_mw.bind_info.length = len;
    w.bind_mw.bind_info.mw_access_flags = access;
    return ibv_post_send(qp, &w, &bad);
}

/* A new type 2 window bound on p->y to [win, win + 4096) for remote
 * writes; its key in *key. Null, with the reason printed, on failure. */
static struct ibv_mw* mw2_bound(struct env* e, struct mw_pair* p, struct ibv_mr* mr, char* win, uint32_t* key) {
    struct ibv_mw* mw = ibv_alloc_mw(e->pd, IBV_MW_TYPE_2);
    if (!mw) {
        printf("    alloc type 2: %s\n", err_name(errno));
        return NULL;
    }
    *key = ibv_inc_rkey(mw->rkey);
    const uint32_t before = mw->rkey;
    int r = mw_post_bind(p->y, mw, *key, mr, win, 4096, IBV_ACCESS_REMOTE_WRITE, 920);
    printf("    %-36s %s\n", "post bind", err_name(r));
    mw_reap(e, "bind completion", 0);
    if (mw->rkey != before)
        printf("    mw->rkey changed by the post\n");
    return mw;
}

/* Two completions (a send and its receive) printed in wr_id order. */
static void mw_reap2(struct env* e, const char* what, uint32_t inv_rkey) {
    struct ibv_wc wc[2];
    int n = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (n < 2) {
        int k = ibv_poll_cq(e->cq, 2 - n, wc + n);
        if (k < 0)
            break;
        n += k;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 5)
            break;
    }
    if (n == 2 && wc[0].wr_id > wc[1].wr_id) {
        struct ibv_wc x = wc[0];
        wc[0] = wc[1];
        wc[1] = x;
    }
    printf("    %s: %d\n", what, n);
    for (int i = 0; i < n; i++) {
        printf("      wr_id %llu %s %s flags 0x%x", (unsigned long long)wc[i].wr_id,
               wc[i].status ? ibv_wc_status_str(wc[i].status) : "ok", wc[i].status ? "-" : opcode_name(wc[i].opcode),
               wc[i].status ? 0 : wc[i].wc_flags);
        if (!wc[i].status && (wc[i].wc_flags & IBV_WC_WITH_INV))
            printf(" invalidated %s", wc[i].invalidated_rkey == inv_rkey ? "the window" : "another key");
        printf("\n");
    }
}

static const char* key_change(uint32_t before, uint32_t after) {
    if (before == after)
        return "unchanged";
    if ((before >> 8) == (after >> 8) && (uint8_t)(before + 1) == (uint8_t)after)
        return "next variant";
    return "other";
}

/* Memory windows of both types: allocation, binds through ibv_bind_mw
 * (type 1) and IBV_WR_BIND_MW (type 2), remote writes inside and outside
 * the window and through stale keys, invalidation (local, remote,
 * deallocation), and binds the device refuses. */
static void mw_traffic(struct env* e) {
    printf("memory windows\n");
    struct ibv_mw* bad_type = ibv_alloc_mw(e->pd, (enum ibv_mw_type)3);
    printf("  alloc type 3: %s\n", bad_type ? "ok" : err_name(errno));
    if (bad_type)
        ibv_dealloc_mw(bad_type);
    char* win = e->buf + 32768; /* the MR the windows bind to: 8 KiB */
    struct ibv_mr* mr =
        ibv_reg_mr(e->pd, win, 8192,
                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
    struct ibv_mr* nobind = ibv_reg_mr(e->pd, win, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    struct ibv_mw* mw1 = ibv_alloc_mw(e->pd, IBV_MW_TYPE_1);
    struct ibv_mw* mw2 = ibv_alloc_mw(e->pd, IBV_MW_TYPE_2);
    printf("  alloc type 1: %s, type 2: %s\n", mw1 ? "ok" : err_name(errno), mw2 ? "ok" : err_name(errno));
    struct mw_pair p = {0};
    if (!mr || !nobind || !mw1 || !mw2) {
        printf("  setup failed\n");
        goto out;
    }
    printf("  type %d and %d, same pd %d, keys differ %d\n", mw1->type, mw2->type, mw1->pd == e->pd,
           mw1->rkey != mw2->rkey);

    printf("  type 1\n");
    if (mw_pair_open(e, &p))
        goto out;
    uint32_t k0 = mw1->rkey;
    struct ibv_mw_bind b = {.wr_id = 910, .send_flags = IBV_SEND_SIGNALED};
    b.bind_info.mr = mr;
    b.bind_info.addr = (uintptr_t)(win + 1024);
    b.bind_info.length = 2048;
    b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
    printf("    %-36s %s\n", "ibv_bind_mw", err_name(ibv_bind_mw(p.y, mw1, &b)));
    mw_reap(e, "bind completion", 0);
    uint32_t k1 = mw1->rkey;
    printf("    %-36s %s\n", "rkey", key_change(k0, k1));
    mw_write(e, p.x, k1, win + 1024, "write at the window's start");
    mw_write(e, p.x, k1, win + 3072 - 32, "write at the window's end");
    mw_write(e, p.x, k1, win + 3072 - 16, "write across the window's end");
    mw_pair_close(&p);
    /* a type 1 window serves every QP of its PD */
    if (mw_pair_open(e, &p))
        goto out;
    mw_write(e, p.x, k1, win + 2048, "write from another pair");
    mw_write(e, p.x, k0, win + 2048, "write through the old key");
    mw_pair_close(&p);
    if (mw_pair_open(e, &p))
        goto out;
    mw_write(e, p.x, mr->rkey, win, "write through the MR's own key");
    b.bind_info.length = 0;
    b.bind_info.addr = 0;
    b.bind_info.mr = NULL;
    b.wr_id = 911;
    printf("    %-36s %s\n", "ibv_bind_mw length 0", err_name(ibv_bind_mw(p.y, mw1, &b)));
    mw_reap(e, "unbind completion", 0);
    printf("    %-36s %s\n", "rkey", key_change(k1, mw1->rkey));
    mw_write(e, p.x, mw1->rkey, win + 1024, "write after the unbind");
    mw_pair_close(&p);
    if (mw_pair_open(e, &p))
        goto out;
    /* what the library refuses before posting, and what the device refuses */
    b.bind_info.mr = mr;
    b.bind_info.addr = (uintptr_t)win;
    b.bind_info.length = 4096;
    b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED;
    printf("    %-36s %s\n", "bind zero-based", err_name(ibv_bind_mw(p.y, mw1, &b)));
    b.bind_info.mr = NULL;
    b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
    printf("    %-36s %s\n", "bind with a length and no MR", err_name(ibv_bind_mw(p.y, mw1, &b)));
    b.bind_info.mr = nobind;
    b.wr_id = 912;
    printf("    %-36s %s\n", "bind to an MR without MW_BIND", err_name(ibv_bind_mw(p.y, mw1, &b)));
    mw_reap(e, "its completion", 0);
    mw_pair_close(&p);
    if (mw_pair_open(e, &p))
        goto out;
    b.bind_info.mr = mr;
    b.bind_info.addr = (uintptr_t)(win + 4096);
    b.bind_info.length = 8192;
    b.wr_id = 913;
    printf("    %-36s %s\n", "bind past the MR's end", err_name(ibv_bind_mw(p.y, mw1, &b)));
    mw_reap(e, "its completion", 0);
    mw_pair_close(&p);

    printf("  type 2\n");
    /* each check a new window bound on a new pair's responder */
    struct mw_pair q = {0};
    if (mw_pair_open(e, &p) || !(mw2 = mw2_bound(e, &p, mr, win, &k1)))
        goto out;
    mw_write(e, p.x, k1, win + 100, "write inside");
    mw_write(e, p.x, k1, win + 4096, "write past the window");
    mw_pair_close(&p);
    ibv_dealloc_mw(mw2);

    /* bound to p.y: no other QP may use it */
    if (mw_pair_open(e, &p) || mw_pair_open(e, &q) || !(mw2 = mw2_bound(e, &p, mr, win, &k1)))
        goto out2;
    mw_write(e, q.x, k1, win + 100, "write to another QP");
    mw_write(e, p.x, k1, win + 100, "write to its own QP");
    mw_pair_close(&q);
    mw_pair_close(&p);
    ibv_dealloc_mw(mw2);

    if (mw_pair_open(e, &p) || !(mw2 = mw2_bound(e, &p, mr, win, &k1)))
        goto out;
    printf("    %-36s %s\n", "rebind of the bound window",
           err_name(mw_post_bind(p.y, mw2, ibv_inc_rkey(k1), mr, win, 4096, IBV_ACCESS_REMOTE_WRITE, 922)));
    mw_reap(e, "its completion", 0);
    mw_pair_close(&p);
    ibv_dealloc_mw(mw2);

    /* invalidated locally: from its own QP, after that from another */
    if (mw_pair_open(e, &p) || !(mw2 = mw2_bound(e, &p, mr, win, &k1)))
        goto out;
    struct ibv_send_wr inv = {.wr_id = 924, .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED}, *badw;
    inv.invalidate_rkey = k1;
    printf("    %-36s %s\n", "post local invalidate", err_name(ibv_post_send(p.y, &inv, &badw)));
    mw_reap(e, "its completion", 0);
    mw_write(e, p.x, k1, win, "write after it");
    mw_pair_close(&p);
    ibv_dealloc_mw(mw2);
    if (mw_pair_open(e, &p) || !(mw2 = mw2_bound(e, &p, mr, win, &k1)))
        goto out;
    inv.wr_id = 925;
    printf("    %-36s %s\n", "local invalidate from another QP", err_name(ibv_post_send(p.x, &inv, &badw)));
    mw_reap(e, "its completion", 0);
    mw_pair_close(&p);
    ibv_dealloc_mw(mw2);

    /* invalidated by the peer's send */
    if (mw_pair_open(e, &p) || !(mw2 = mw2_bound(e, &p, mr, win, &k1)))
        goto out;
    struct ibv_sge rs = {.addr = (uintptr_t)(e->buf + 1024), .length = 64, .lkey = e->mr->lkey};
    struct ibv_recv_wr rw = {.wr_id = 926, .sg_list = &rs, .num_sge = 1}, *badr;
    printf("    %-36s %s\n", "post_recv", err_name(ibv_post_recv(p.y, &rw, &badr)));
    struct ibv_sge ss = {.addr = (uintptr_t)e->buf, .length = 16, .lkey = e->mr->lkey};
    struct ibv_send_wr sinv = {
        .wr_id = 927, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_INV, .send_flags = IBV_SEND_SIGNALED};
    sinv.invalidate_rkey = k1;
    printf("    %-36s %s\n", "post send with invalidate", err_name(ibv_post_send(p.x, &sinv, &badw)));
    mw_reap2(e, "completions", k1);
    mw_write(e, p.x, k1, win, "write after it");
    mw_pair_close(&p);
    ibv_dealloc_mw(mw2);

    if (mw_pair_open(e, &p) || !(mw2 = mw2_bound(e, &p, mr, win, &k1)))
        goto out;
    printf("    %-36s %s\n", "dealloc the bound window", err_name(ibv_dealloc_mw(mw2)));
    mw2 = NULL;
    mw_write(e, p.x, k1, win, "write after it");
    mw_pair_close(&p);

    /* through ibv_wr_*: a QP created with the bind and invalidate send
     * ops binds (type 2), the peer writes, the QP invalidates */
    printf("  ibv_wr_bind_mw, ibv_wr_local_inv\n");
    {
        struct ibv_qp_init_attr_ex xa = {
            .send_cq = e->cq,
            .recv_cq = e->cq,
            .qp_type = IBV_QPT_RC,
            .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
            .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
            .pd = e->pd,
            .send_ops_flags = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_RDMA_WRITE};
        errno = 0;
        p.y = ibv_create_qp_ex(e->ctx, &xa);
        printf("    %-36s %s", "create_qp_ex bind+inv+write", err_name(p.y ? 0 : errno));
        if (p.y)
            printf(" -> wr %u", xa.cap.max_send_wr);
        printf("\n");
        p.x = make_qp(e, IBV_QPT_RC, NULL);
        if (!p.y || !p.x || connect_pair(e, p.x, p.y))
            goto out;
        mw2 = ibv_alloc_mw(e->pd, IBV_MW_TYPE_2);
        if (!mw2)
            goto out;
        struct ibv_qp_ex* qx = ibv_qp_to_qp_ex(p.y);
        struct ibv_mw_bind_info bi = {
            .mr = mr, .addr = (uintptr_t)win, .length = 2048, .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
        k1 = ibv_inc_rkey(mw2->rkey);
        ibv_wr_start(qx);
        qx->wr_id = 930;
        qx->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_bind_mw(qx, mw2, k1, &bi);
        printf("    %-36s %s\n", "wr_complete (bind)", err_name(ibv_wr_complete(qx)));
        mw_reap(e, "bind completion", 0);
        mw_write(e, p.x, k1, win + 64, "write inside");
        ibv_wr_start(qx);
        qx->wr_id = 931;
        ibv_wr_local_inv(qx, k1);
        printf("    %-36s %s\n", "wr_complete (invalidate)", err_name(ibv_wr_complete(qx)));
        mw_reap(e, "invalidate completion", 0);
        mw_write(e, p.x, k1, win + 64, "write after it");
        mw_pair_close(&p);
        ibv_dealloc_mw(mw2);
        mw2 = NULL;
        /* a zero-based window: remote addresses are offsets into it */
        p.y = ibv_create_qp_ex(e->ctx, &xa);
        p.x = make_qp(e, IBV_QPT_RC, NULL);
        if (!p.y || !p.x || connect_pair(e, p.x, p.y) || !(mw2 = ibv_alloc_mw(e->pd, IBV_MW_TYPE_2)))
            goto out;
        qx = ibv_qp_to_qp_ex(p.y);
        bi.addr = (uintptr_t)(win + 4096);
        bi.mw_access_flags |= IBV_ACCESS_ZERO_BASED;
        k1 = ibv_inc_rkey(mw2->rkey);
        ibv_wr_start(qx);
        qx->wr_id = 932;
        qx->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_bind_mw(qx, mw2, k1, &bi);
        printf("    %-36s %s\n", "wr_complete (zero-based bind)", err_name(ibv_wr_complete(qx)));
        mw_reap(e, "bind completion", 0);
        char* src = e->buf + 512;
        memset(win + 4096, 0, 256);
        snprintf(src, 32, "at offset 64");
        struct ibv_sge zs = {.addr = (uintptr_t)src, .length = 32, .lkey = e->mr->lkey};
        struct ibv_send_wr zw = {
            .wr_id = 933, .sg_list = &zs, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED};
        zw.wr.rdma.remote_addr = 64;
        zw.wr.rdma.rkey = k1;
        printf("    %-36s %s\n", "write to offset 64", err_name(ibv_post_send(p.x, &zw, &badw)));
        mw_reap(e, "its completion", 0);
        printf("    %-36s landed at the window's byte 64: %s\n", "", memcmp(win + 4096 + 64, src, 32) ? "no" : "yes");
        mw_pair_close(&p);
    }

out2:
    mw_pair_close(&q);
out:
    mw_pair_close(&p);
    if (mw1)
        ibv_dealloc_mw(mw1);
    if (mw2)
        ibv_dealloc_mw(mw2);
    if (nobind)
        ibv_dereg_mr(nobind);
    if (mr)
        ibv_dereg_mr(mr);
}

int main(void) {
    int n = 0;
    struct ibv_device** list = ibv_get_device_list(&n);
    if (!list || n < 1) {
        printf("no device\n");
        return 1;
    }
    struct env e = {0};
    struct twin_port port;
    if (twin_open(list[0], &port))
        return 1;
    e.ctx = port.ctx;
    e.eth = port.eth;
    e.lid = port.lid;
    e.gid = port.gid;
    e.pd = ibv_alloc_pd(e.ctx);
    e.cq = ibv_create_cq(e.ctx, 64, NULL, NULL, 0);
    e.len = 1 << 16;
    e.buf = aligned_alloc(4096, e.len);
    memset(e.buf, 0, e.len);
    e.mr = ibv_reg_mr(e.pd, e.buf, e.len,
                      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                          IBV_ACCESS_REMOTE_ATOMIC);
    if (!e.pd || !e.cq || !e.mr) {
        printf("setup failed\n");
        return 1;
    }
    printf("%s (%s)\n", ibv_get_device_name(list[0]), e.eth ? "RoCE" : "InfiniBand");

    printf("CQ sizes\n");
    int cqes[] = {1, 2, 100, 4096, 65535, (1 << 24) - 1, 1 << 24, 0, -1};
    /* 2^24 - 1 entries: both libraries allocate and initialise the whole
       1 GiB ring before the kernel refuses it, some 5 s under emulation;
       once (the case list's first run sets DATA_PATH_HUGE_CQ) is enough. */
    const int huge = getenv("DATA_PATH_HUGE_CQ") != NULL;
    for (size_t i = 0; i < sizeof(cqes) / sizeof(cqes[0]); i++)
        if (huge || cqes[i] != (1 << 24) - 1)
            cq_case(&e, cqes[i]);
    cq_ex_case(&e, "standard", IBV_WC_STANDARD_FLAGS, 0, 0);
    cq_ex_case(&e, "timestamp", IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, 0, 0);
    cq_ex_case(&e, "wall-clock timestamp", IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, 0, 0);
    cq_ex_case(&e, "single threaded", IBV_WC_STANDARD_FLAGS, IBV_CQ_INIT_ATTR_MASK_FLAGS,
               IBV_CREATE_CQ_ATTR_SINGLE_THREADED);
    cq_ex_case(&e, "ignore overrun", IBV_WC_STANDARD_FLAGS, IBV_CQ_INIT_ATTR_MASK_FLAGS,
               IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN);
    cq_ex_case(&e, "unknown flag", IBV_WC_STANDARD_FLAGS, IBV_CQ_INIT_ATTR_MASK_FLAGS, 1 << 5);
    cq_ex_case(&e, "unknown comp_mask", IBV_WC_STANDARD_FLAGS, 1 << 6, 0);
    cq_ex_case(&e, "unknown wc flag", 1ull << 40, 0, 0);

    printf("QP sizes\n");
    enum ibv_qp_type types[] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD};
    for (int t = 0; t < 3; t++) {
        qp_case(&e, types[t], NULL, 1, 1, 1, 1, 0);
        qp_case(&e, types[t], NULL, 100, 100, 1, 1, 0);
        qp_case(&e, types[t], NULL, 64, 16, 4, 3, 64);
        qp_case(&e, types[t], NULL, 10, 10, 2, 2, 200);
        qp_case(&e, types[t], NULL, 1000, 1000, 16, 8, 0);
        qp_case(&e, types[t], NULL, 0, 8, 1, 1, 0);
        qp_case(&e, types[t], NULL, 8, 0, 1, 0, 0);
        qp_case(&e, types[t], NULL, 8, 8, 0, 0, 0);
        qp_case(&e, types[t], NULL, 8, 8, 31, 1, 0);
        qp_case(&e, types[t], NULL, 8, 8, 64, 1, 0);
        qp_case(&e, types[t], NULL, 8, 8, 1, 64, 0);
        qp_case(&e, types[t], NULL, 8, 8, 1, 1, 1000);
        qp_case(&e, types[t], NULL, 1 << 20, 8, 1, 1, 0);
    }
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
    struct ibv_srq* srq = ibv_create_srq(e.pd, &sa);
    if (srq) {
        qp_case(&e, IBV_QPT_RC, srq, 16, 16, 1, 1, 0);
        qp_case(&e, IBV_QPT_RC, srq, 16, 0, 1, 0, 0);
        ibv_destroy_srq(srq);
    }
    printf("SRQ sizes\n");
    srq_case(&e, 1, 1);
    srq_case(&e, 100, 1);
    srq_case(&e, 100, 2);
    srq_case(&e, 64, 0);
    srq_case(&e, 1000, 5);
    srq_case(&e, 0, 1);
    srq_case(&e, 1 << 20, 1);
    srq_case(&e, 16, 100);

    rc_traffic(&e, IBV_QPT_RC);
    rc_traffic(&e, IBV_QPT_UC);
    ud_traffic(&e);
    srq_traffic(&e);
    small_traffic(&e);
    error_traffic(&e);
    wr_api(&e);
    inline_sizes(&e);
    cq_resize_traffic(&e);
    overrun_traffic(&e);
    mr_rereg(&e);
    mw_traffic(&e);
    state_posts(&e);

    /* The same traffic once more, its completions read through an
     * extended CQ that asks for every field and both timestamps. */
    struct ibv_cq_init_attr_ex xa = {.cqe = 64,
                                     .wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                                         IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK};
    e.cqx = ibv_create_cq_ex(e.ctx, &xa);
    printf("extended CQ: %s\n", err_name(e.cqx ? 0 : errno));
    if (e.cqx) {
        struct ibv_cq* plain = e.cq;
        e.cq = ibv_cq_ex_to_cq(e.cqx);
        rc_traffic(&e, IBV_QPT_RC);
        rc_traffic(&e, IBV_QPT_UC);
        ud_traffic(&e);
        srq_traffic(&e);
        small_traffic(&e);
        error_traffic(&e);
        wr_api(&e);
        ibv_destroy_cq(e.cq);
        e.cq = plain;
    }

    ibv_dereg_mr(e.mr);
    ibv_destroy_cq(e.cq);
    ibv_dealloc_pd(e.pd);
    ibv_close_device(e.ctx);
    ibv_free_device_list(list);
    free(e.buf);
    return 0;
}
