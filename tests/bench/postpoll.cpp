// A deterministic post/poll loop for instruction counting (callgrind).
// One RC QP connected to itself on the first device: a batch of signalled
// 8-byte RDMA writes is posted, the program waits until all completed,
// then reaps them one poll at a time. do_post and do_poll are the only
// functions callgrind collects, so "instructions per call" is exact and
// independent of timing. Runs on any libibverbs (ours or the reference).
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

int die(const char* what) {
    perror(what);
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    const int batch = 64;
    const int rounds = argc > 1 ? atoi(argv[1]) : 20;
    const int gid_index = argc > 2 ? atoi(argv[2]) : 1;
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list || !n)
        return die("no device");
    ibv_context* ctx = ibv_open_device(list[0]);
    if (!ctx)
        return die("open");
    ibv_pd* pd = ibv_alloc_pd(ctx);
    static char buf[2][4096];
    ibv_mr* mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : nullptr;
    ibv_cq* cq = ibv_create_cq(ctx, 2 * batch, nullptr, nullptr, 0);
    if (!pd || !mr || !cq)
        return die("pd/mr/cq");
    // Two RC QPs on the same port, connected to each other; only the first
    // one sends.
    ibv_qp* qps[2];
    for (ibv_qp*& q : qps) {
        ibv_qp_init_attr ia{};
        ia.send_cq = ia.recv_cq = cq;
        ia.qp_type = IBV_QPT_RC;
        ia.cap.max_send_wr = batch;
        ia.cap.max_recv_wr = 1;
        ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
        q = ibv_create_qp(pd, &ia);
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
    for (int k = 0; k < 2; ++k) {
        ibv_qp* q = qps[k];
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.port_num = 1;
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        if (ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
            return die("init");
        a = {};
        a.qp_state = IBV_QPS_RTR;
        a.path_mtu = IBV_MTU_1024;
        a.dest_qp_num = qps[1 - k]->qp_num;
        a.rq_psn = 0;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 12;
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = gid;
        a.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index);
        a.ah_attr.grh.hop_limit = 64;
        a.ah_attr.port_num = 1;
        a.ah_attr.dlid = port.lid;
        if (ibv_modify_qp(q, &a,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
            return die("rtr");
        a = {};
        a.qp_state = IBV_QPS_RTS;
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = 1;
        if (ibv_modify_qp(q, &a,
                          IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                              IBV_QP_MAX_QP_RD_ATOMIC))
            return die("rts");
    }
    ibv_qp* qp = qps[0];

    ibv_sge sge{reinterpret_cast<uintptr_t>(buf[0]), 8, mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(buf[1]);
    wr.wr.rdma.rkey = mr->rkey;
    long posted = 0, polled = 0;
    for (int r = 0; r < rounds; ++r) {
        for (int i = 0; i < batch; ++i) {
            wr.wr_id = static_cast<uint64_t>(i);
            if (do_post(qp, &wr))
                return die("post");
            ++posted;
        }
        // Let the (software) device finish without touching the CQ, so
        // that nearly every do_poll call reaps exactly one completion.
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        int got = 0;
        ibv_wc wc;
        for (int spins = 0; got < batch && spins < 10000000; ++spins) {
            int k = do_poll(cq, &wc);
            if (k < 0)
                return die("poll");
            if (k == 1) {
                if (wc.status != IBV_WC_SUCCESS) {
                    fprintf(stderr, "completion error: %s\n", ibv_wc_status_str(wc.status));
                    return 1;
                }
                ++got;
            } else {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            ++polled;
        }
        if (got != batch) {
            fprintf(stderr, "only %d of %d completions\n", got, batch);
            return 1;
        }
    }
    printf("posted %ld polled %ld\n", posted, polled);
    ibv_destroy_qp(qps[0]);
    ibv_destroy_qp(qps[1]);
    ibv_destroy_cq(cq);
    ibv_dereg_mr(mr);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    return 0;
}
