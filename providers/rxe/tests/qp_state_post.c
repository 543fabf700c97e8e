/* qp_state_post: what posting work requests does in every QP state, on
 * rxe0, printed as a table to compare libraries (built twice: on our
 * headers and library, and on Debian's). For RC and UD QPs it walks
 * RESET, INIT, RTR, RTS, SQD, ERR and back to RESET (RC: connected to
 * itself), and in each state posts one receive, one send and one SRQ-less
 * empty receive list, printing each verb's return value, then the
 * completions that arrive (opcode, status). Nothing is judged here: the
 * two tables must be identical (qp_state_post.sh). */
#include <infiniband/verbs.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char* state_name(enum ibv_qp_state s) {
    static const char* names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
    return s <= IBV_QPS_ERR ? names[s] : "?";
}

struct fixture {
    struct ibv_context* ctx;
    struct ibv_pd* pd;
    struct ibv_cq* cq;
    struct ibv_mr* mr;
    char buf[256];
    int gid_index;
    union ibv_gid gid;
};

static int modify(struct fixture* f, struct ibv_qp* qp, enum ibv_qp_state to) {
    struct ibv_qp_attr a;
    int mask = IBV_QP_STATE;

    memset(&a, 0, sizeof(a));
    a.qp_state = to;
    if (to == IBV_QPS_INIT) {
        a.pkey_index = 0;
        a.port_num = 1;
        mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        if (qp->qp_type == IBV_QPT_UD) {
            a.qkey = 0x11111111;
            mask |= IBV_QP_QKEY;
        } else {
            a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
            mask |= IBV_QP_ACCESS_FLAGS;
        }
    } else if (to == IBV_QPS_RTR && qp->qp_type == IBV_QPT_RC) {
        a.path_mtu = IBV_MTU_1024;
        a.dest_qp_num = qp->qp_num;
        a.rq_psn = 1;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 1;
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = f->gid;
        a.ah_attr.grh.sgid_index = f->gid_index;
        a.ah_attr.grh.hop_limit = 1;
        a.ah_attr.port_num = 1;
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
            IBV_QP_MIN_RNR_TIMER;
    } else if (to == IBV_QPS_RTS) {
        a.sq_psn = 1;
        mask |= IBV_QP_SQ_PSN;
        if (qp->qp_type == IBV_QPT_RC) {
            a.timeout = 14;
            a.retry_cnt = 7;
            a.rnr_retry = 7;
            a.max_rd_atomic = 1;
            mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
        }
    }
    return ibv_modify_qp(qp, &a, mask);
}

/* Completions that arrive within a moment, in a stable order: polled until
 * none has come for 300 ms (rxe flushes a QP's WQEs from a kernel work item,
 * which a loaded VM runs late; a fixed 100 ms once missed the last one). */
static void drain(struct fixture* f) {
    struct ibv_wc wc[8];
    int total = 0, n, quiet;

    for (quiet = 0; quiet < 100;) {
        n = ibv_poll_cq(f->cq, 8, wc);
        if (n < 0) {
            printf("    poll_cq=%d\n", n);
            return;
        }
        for (int i = 0; i < n; i++)
            printf("    wc opcode=%d status=%s\n", wc[i].opcode, ibv_wc_status_str(wc[i].status));
        total += n;
        if (n) {
            quiet = 0;
        } else {
            quiet++;
            usleep(3000);
        }
    }
    printf("    %d completion(s)\n", total);
}

static void post_all(struct fixture* f, struct ibv_qp* qp, struct ibv_ah* ah) {
    struct ibv_sge sge = {.addr = (uintptr_t)f->buf, .length = 64, .lkey = f->mr->lkey};
    struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1};
    struct ibv_send_wr swr = {
        .wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
    struct ibv_recv_wr* bad_r = NULL;
    struct ibv_send_wr* bad_s = NULL;
    int rr, rs;

    rr = ibv_post_recv(qp, &rwr, &bad_r);
    if (qp->qp_type == IBV_QPT_UD) {
        swr.wr.ud.ah = ah;
        swr.wr.ud.remote_qpn = qp->qp_num;
        swr.wr.ud.remote_qkey = 0x11111111;
    }
    rs = ibv_post_send(qp, &swr, &bad_s);
    printf("  post_recv=%d%s post_send=%d%s\n", rr, rr ? (bad_r == &rwr ? " (bad_wr=wr)" : " (bad_wr other)") : "", rs,
           rs ? (bad_s == &swr ? " (bad_wr=wr)" : " (bad_wr other)") : "");
    drain(f);
}

static void walk(struct fixture* f, enum ibv_qp_type type) {
    static const enum ibv_qp_state path[] = {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
                                             IBV_QPS_SQD,   IBV_QPS_RTS,  IBV_QPS_ERR, IBV_QPS_RESET};
    struct ibv_qp_init_attr init = {
        .send_cq = f->cq,
        .recv_cq = f->cq,
        .qp_type = type,
        .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1}};
    struct ibv_ah_attr aa = {
        .is_global = 1, .port_num = 1, .grh = {.dgid = f->gid, .sgid_index = (uint8_t)f->gid_index, .hop_limit = 1}};
    struct ibv_ah* ah = NULL;
    struct ibv_qp* qp = ibv_create_qp(f->pd, &init);

    printf("%s QP\n", type == IBV_QPT_RC ? "RC" : "UD");
    if (!qp) {
        printf("  create_qp failed: errno %d\n", errno);
        return;
    }
    if (type == IBV_QPT_UD)
        ah = ibv_create_ah(f->pd, &aa);
    for (size_t i = 0; i < sizeof(path) / sizeof(path[0]); i++) {
        int r = i ? modify(f, qp, path[i]) : 0;
        struct ibv_qp_attr qa;
        struct ibv_qp_init_attr qi;

        ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi);
        printf(" -> %s: modify=%d, now %s (qp->state %s)\n", state_name(path[i]), r, state_name(qa.qp_state),
               state_name(qp->state));
        /* What the transition itself completed (a move to ERR flushes the
         * WQEs queued so far) before the posts of this state: the kernel
         * flushes from a work item, which may or may not run before the
         * next post, and the counts would depend on it. */
        drain(f);
        post_all(f, qp, ah);
    }
    if (ah)
        ibv_destroy_ah(ah);
    printf("  destroy_qp=%d\n", ibv_destroy_qp(qp));
}

int main(int argc, char** argv) {
    struct fixture f = {0};
    struct ibv_device** list = ibv_get_device_list(NULL);
    const char* want = argc > 1 ? argv[1] : "rxe0";

    for (int i = 0; list && list[i]; i++)
        if (!strcmp(ibv_get_device_name(list[i]), want))
            f.ctx = ibv_open_device(list[i]);
    if (!f.ctx) {
        fprintf(stderr, "qp_state_post: cannot open %s\n", want);
        return 2;
    }
    f.gid_index = argc > 2 ? atoi(argv[2]) : 1;
    if (ibv_query_gid(f.ctx, 1, f.gid_index, &f.gid)) {
        fprintf(stderr, "qp_state_post: no GID %d\n", f.gid_index);
        return 2;
    }
    f.pd = ibv_alloc_pd(f.ctx);
    f.cq = ibv_create_cq(f.ctx, 64, NULL, NULL, 0);
    f.mr = ibv_reg_mr(f.pd, f.buf, sizeof(f.buf), IBV_ACCESS_LOCAL_WRITE);
    if (!f.pd || !f.cq || !f.mr) {
        fprintf(stderr, "qp_state_post: setup failed: %s\n", strerror(errno));
        return 2;
    }
    walk(&f, IBV_QPT_RC);
    walk(&f, IBV_QPT_UD);
    ibv_dereg_mr(f.mr);
    ibv_destroy_cq(f.cq);
    ibv_dealloc_pd(f.pd);
    ibv_close_device(f.ctx);
    ibv_free_device_list(list);
    return 0;
}
