// A deterministic post/poll loop for instruction counting (callgrind).
// Two QPs of the first device connected to each other: a batch of
// signalled 8-byte operations is posted by the first (the second posts
// the receives first when the operation needs them), the program waits
// until all completed, then reaps them one CQE per call. Only the do_*
// functions are what callgrind collects (--toggle-collect), so
// "instructions per call" is exact and independent of timing. Runs on any
// libibverbs (ours or the reference).
//
//   bench_postpoll [ROUNDS [GID_INDEX [MODE]]], MODE one of
//     rc_write        RDMA write, one SGE (ibv_post_send / ibv_poll_cq)
//     rc_send_inline  send of 8 inline bytes; the peer's ibv_post_recv
//     ud_send         UD send, one SGE, through an AH; ibv_post_recv
//     rc_wr_send      ibv_wr_start/ibv_wr_send/ibv_wr_set_sge/ibv_wr_complete,
//                     and the CQ read by ibv_start_poll/ibv_end_poll
//     ud_wr_send      the same for UD (ibv_wr_set_ud_addr)
//     rc_wr_inline    rc_wr_send with ibv_wr_set_inline_data (8 bytes)
// It prints the number of calls of each do_* function.
#include <infiniband/verbs.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unistd.h>

namespace {

[[gnu::noinline]] int do_post(ibv_qp* qp, ibv_send_wr* wr) {
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, wr, &bad);
}

[[gnu::noinline]] int do_poll(ibv_cq* cq, ibv_wc* wc) { return ibv_poll_cq(cq, 1, wc); }

[[gnu::noinline]] int do_recv(ibv_qp* qp, ibv_recv_wr* wr) {
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(qp, wr, &bad);
}

// One send through the work-request interface: the four calls a user
// makes for it.
[[gnu::noinline]] int do_wr(ibv_qp_ex* qpx, const ibv_sge& sge, uint64_t id, ibv_ah* ah, uint32_t rqpn, bool inl) {
    ibv_wr_start(qpx);
    qpx->wr_id = id;
    qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(qpx);
    if (ah)
        ibv_wr_set_ud_addr(qpx, ah, rqpn, 0x11111111);
    if (inl)
        ibv_wr_set_inline_data(qpx, reinterpret_cast<void*>(sge.addr), sge.length);
    else
        ibv_wr_set_sge(qpx, sge.lkey, sge.addr, sge.length);
    return ibv_wr_complete(qpx);
}

// One CQE through the extended interface: start, read, end. 1 when one
// was read, 0 when the CQ was empty, -1 on an error.
[[gnu::noinline]] int do_expoll(ibv_cq_ex* cq, ibv_wc_status* status) {
    ibv_poll_cq_attr attr{};
    int r = ibv_start_poll(cq, &attr);
    if (r == ENOENT)
        return 0;
    if (r)
        return -1;
    *status = cq->status;
    (void)cq->wr_id;
    (void)ibv_wc_read_byte_len(cq);
    ibv_end_poll(cq);
    return 1;
}

int die(const char* what) {
    perror(what);
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    const int batch = 64;
    const int rounds = argc > 1 ? atoi(argv[1]) : 20;
    const int gid_index = argc > 2 ? atoi(argv[2]) : 1;
    const char* mode = argc > 3 ? argv[3] : "rc_write";
    const bool ud = !strncmp(mode, "ud_", 3);
    const bool wr_api = strstr(mode, "_wr_") != nullptr;
    const bool wr_inl = !strcmp(mode, "rc_wr_inline");
    const bool inl = !strcmp(mode, "rc_send_inline") || wr_inl;
    const bool send = strcmp(mode, "rc_write") != 0;
    if (strcmp(mode, "rc_write") && strcmp(mode, "rc_send_inline") && strcmp(mode, "ud_send") &&
        strcmp(mode, "rc_wr_send") && strcmp(mode, "ud_wr_send") && !wr_inl) {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list || !n)
        return die("no device");
    ibv_context* ctx = ibv_open_device(list[0]);
    if (!ctx)
        return die("open");
    ibv_pd* pd = ibv_alloc_pd(ctx);
    static char buf[2][1 << 16];
    ibv_mr* mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : nullptr;
    // Sends and their receives complete on one CQ: room for both.
    ibv_cq_ex* cqx = nullptr;
    ibv_cq* cq = nullptr;
    if (wr_api) {
        ibv_cq_init_attr_ex ca{};
        ca.cqe = 2 * batch;
        ca.wc_flags = IBV_WC_STANDARD_FLAGS;
        cqx = ibv_create_cq_ex(ctx, &ca);
        cq = cqx ? ibv_cq_ex_to_cq(cqx) : nullptr;
    } else {
        cq = ibv_create_cq(ctx, 2 * batch, nullptr, nullptr, 0);
    }
    if (!pd || !mr || !cq)
        return die("pd/mr/cq");
    ibv_qp* qps[2];
    for (ibv_qp*& q : qps) {
        ibv_qp_init_attr_ex ia{};
        ia.send_cq = ia.recv_cq = cq;
        ia.qp_type = ud ? IBV_QPT_UD : IBV_QPT_RC;
        ia.cap.max_send_wr = batch;
        ia.cap.max_recv_wr = batch;
        ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
        ia.cap.max_inline_data = inl ? 64 : 0;
        ia.comp_mask = IBV_QP_INIT_ATTR_PD;
        ia.pd = pd;
        if (wr_api) {
            ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
            ia.send_ops_flags = IBV_QP_EX_WITH_SEND;
        }
        q = ibv_create_qp_ex(ctx, &ia);
        if (!q)
            return die("qp");
    }
    ibv_gid gid;
    if (ibv_query_gid(ctx, 1, gid_index, &gid))
        return die("gid");
    // The port's own LID: InfiniBand routes by it (0 on RoCE, e.g. rxe).
    ibv_port_attr port{};
    if (ibv_query_port(ctx, 1, &port))
        return die("port");
    ibv_ah_attr aa{};
    aa.is_global = 1;
    aa.grh.dgid = gid;
    aa.grh.sgid_index = static_cast<uint8_t>(gid_index);
    aa.grh.hop_limit = 64;
    aa.port_num = 1;
    aa.dlid = port.lid;
    for (int k = 0; k < 2; ++k) {
        ibv_qp* q = qps[k];
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        if (ud) {
            a.qkey = 0x11111111;
            mask |= IBV_QP_QKEY;
        } else {
            a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
            mask |= IBV_QP_ACCESS_FLAGS;
        }
        if (ibv_modify_qp(q, &a, mask))
            return die("init");
        a = {};
        a.qp_state = IBV_QPS_RTR;
        mask = IBV_QP_STATE;
        if (!ud) {
            a.path_mtu = IBV_MTU_1024;
            a.dest_qp_num = qps[1 - k]->qp_num;
            a.rq_psn = 0;
            a.max_dest_rd_atomic = 1;
            a.min_rnr_timer = 12;
            a.ah_attr = aa;
            mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                IBV_QP_MIN_RNR_TIMER;
        }
        if (ibv_modify_qp(q, &a, mask))
            return die("rtr");
        a = {};
        a.qp_state = IBV_QPS_RTS;
        mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
        if (!ud) {
            a.timeout = 14;
            a.retry_cnt = 7;
            a.rnr_retry = 7;
            a.max_rd_atomic = 1;
            mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
        }
        if (ibv_modify_qp(q, &a, mask))
            return die("rts");
    }
    ibv_ah* ah = ud ? ibv_create_ah(pd, &aa) : nullptr;
    if (ud && !ah)
        return die("ah");
    ibv_qp* qp = qps[0];
    ibv_qp_ex* qpx = wr_api ? ibv_qp_to_qp_ex(qp) : nullptr;

    ibv_sge sge{reinterpret_cast<uintptr_t>(buf[0]), 8, mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0);
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(buf[1]);
    wr.wr.rdma.rkey = mr->rkey;
    if (ud) {
        wr.wr.ud.ah = ah;
        wr.wr.ud.remote_qpn = qps[1]->qp_num;
        wr.wr.ud.remote_qkey = 0x11111111;
    }
    // Receives of the peer: UD ones carry the 40-byte GRH area first.
    ibv_sge rsge{reinterpret_cast<uintptr_t>(buf[1]), 64, mr->lkey};
    ibv_recv_wr rwr{};
    rwr.sg_list = &rsge;
    rwr.num_sge = 1;
    long posted = 0, polled = 0, recvs = 0, wrs = 0, expolls = 0;
    const int per_round = send ? 2 * batch : batch;  // CQEs: sends (and receives)
    for (int r = 0; r < rounds; ++r) {
        for (int i = 0; send && i < batch; ++i) {
            rwr.wr_id = static_cast<uint64_t>(1000 + i);
            if (do_recv(qps[1], &rwr))
                return die("post_recv");
            ++recvs;
        }
        for (int i = 0; i < batch; ++i) {
            if (wr_api) {
                if (do_wr(qpx, sge, static_cast<uint64_t>(i), ah, qps[1]->qp_num, wr_inl))
                    return die("wr_complete");
                ++wrs;
            } else {
                wr.wr_id = static_cast<uint64_t>(i);
                if (do_post(qp, &wr))
                    return die("post");
                ++posted;
            }
        }
        // Let the (software) device finish without touching the CQ, so
        // that nearly every poll reaps exactly one completion.
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        int got = 0;
        for (int spins = 0; got < per_round && spins < 10000000; ++spins) {
            int k;
            ibv_wc_status st = IBV_WC_SUCCESS;
            if (wr_api) {
                k = do_expoll(cqx, &st);
                ++expolls;
            } else {
                ibv_wc wc;
                k = do_poll(cq, &wc);
                st = wc.status;
                ++polled;
            }
            if (k < 0)
                return die("poll");
            if (k == 1) {
                if (st != IBV_WC_SUCCESS) {
                    fprintf(stderr, "completion error: %s\n", ibv_wc_status_str(st));
                    return 1;
                }
                ++got;
            } else {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        }
        if (got != per_round) {
            fprintf(stderr, "only %d of %d completions\n", got, per_round);
            return 1;
        }
    }
    printf("posted %ld polled %ld recvs %ld wrs %ld expolls %ld\n", posted, polled, recvs, wrs, expolls);
    if (ah)
        ibv_destroy_ah(ah);
    ibv_destroy_qp(qps[0]);
    ibv_destroy_qp(qps[1]);
    ibv_destroy_cq(cq);
    ibv_dereg_mr(mr);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    return 0;
}
