// Kernel test (rxe0 in the VM): objects created and used by a forked child
// on its parent's context, and the write() fallback.
//
// The kernel refuses write() on a uverbs file from a process other than the
// one that opened it (EACCES), but not the ioctl path. A library that sends
// its commands through the ioctl methods (INVOKE_WRITE for the write-ABI
// commands) therefore works in a forked child, as the reference does. The
// same source is built against Debian's libibverbs (the _reference test),
// so both libraries must give the same answers.
//
// FORK_TEST_MODE=fallback: run with libno_verbs_ioctl.so preloaded, which
// answers every uverbs ioctl ENOTTY as a kernel without the ioctl ABI
// would. Then everything must still work in the parent through write(),
// and the child must get the kernel's EACCES.
#include <infiniband/verbs.h>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool fallback_mode() {
    const char* m = getenv("FORK_TEST_MODE");
    return m && std::string(m) == "fallback";
}

struct Device {
    ibv_context* ctx = nullptr;
    Device() {
        int n = 0;
        ibv_device** list = ibv_get_device_list(&n);
        for (int i = 0; list && i < n; i++)
            if (std::string(ibv_get_device_name(list[i])) == "rxe0")
                ctx = ibv_open_device(list[i]);
        if (list)
            ibv_free_device_list(list);
    }
    ~Device() {
        if (ctx)
            ibv_close_device(ctx);
    }
};

// Every object kind, created, used where that needs no doorbell, destroyed.
// Returns "" or the first step that failed with its errno.
std::string exercise(ibv_context* ctx, bool send_data) {
    auto fail = [](const char* step, int e) { return std::string(step) + ": " + strerror(e); };
    ibv_pd* pd = ibv_alloc_pd(ctx);
    if (!pd)
        return fail("ibv_alloc_pd", errno);
    std::vector<char> buf(8192, 0);
    ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    if (!mr)
        return fail("ibv_reg_mr", errno);
    ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
    if (!ch)
        return fail("ibv_create_comp_channel", errno);
    ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, ch, 0);
    if (!cq)
        return fail("ibv_create_cq", errno);
    ibv_cq_init_attr_ex cqa{};
    cqa.cqe = 8;
    cqa.wc_flags = IBV_WC_STANDARD_FLAGS;
    ibv_cq_ex* cqx = ibv_create_cq_ex(ctx, &cqa);
    if (!cqx)
        return fail("ibv_create_cq_ex", errno);
    if (int e = ibv_req_notify_cq(cq, 0))
        return fail("ibv_req_notify_cq", e);
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 8;
    sa.attr.max_sge = 1;
    ibv_srq* srq = ibv_create_srq(pd, &sa);
    if (!srq)
        return fail("ibv_create_srq", errno);
    ibv_qp_init_attr qa{};
    qa.send_cq = cq;
    qa.recv_cq = cq;
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    ibv_qp* qp = ibv_create_qp(pd, &qa);
    if (!qp)
        return fail("ibv_create_qp", errno);
    ibv_qp_init_attr_ex qx{};
    qx.send_cq = ibv_cq_ex_to_cq(cqx);
    qx.recv_cq = ibv_cq_ex_to_cq(cqx);
    qx.srq = srq;
    qx.qp_type = IBV_QPT_RC;
    qx.cap.max_send_wr = 4;
    qx.cap.max_send_sge = 1;
    qx.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    qx.pd = pd;
    qx.send_ops_flags = IBV_QP_EX_WITH_SEND;
    qx.sq_sig_all = 1;
    ibv_qp* qp2 = ibv_create_qp_ex(ctx, &qx);
    if (!qp2)
        return fail("ibv_create_qp_ex", errno);

    // The first QP, connected to itself, to RTS.
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
    if (int e = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        return fail("ibv_modify_qp INIT", e);
    ibv_gid gid{};
    if (ibv_query_gid(ctx, 1, 1, &gid))
        return fail("ibv_query_gid", errno);
    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = qp->qp_num;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = gid;
    a.ah_attr.grh.sgid_index = 1;
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.port_num = 1;
    if (int e = ibv_modify_qp(qp, &a,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        return fail("ibv_modify_qp RTR", e);
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    if (int e = ibv_modify_qp(qp, &a,
                              IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                  IBV_QP_MAX_QP_RD_ATOMIC))
        return fail("ibv_modify_qp RTS", e);
    ibv_qp_attr got{};
    ibv_qp_init_attr init{};
    if (int e = ibv_query_qp(qp, &got, IBV_QP_STATE, &init))
        return fail("ibv_query_qp", e);
    if (got.qp_state != IBV_QPS_RTS)
        return "ibv_query_qp: state " + std::to_string(got.qp_state);
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf.data()), 64, mr->lkey};
    ibv_recv_wr rwr{};
    rwr.wr_id = 1;
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    ibv_recv_wr* bad_r = nullptr;
    if (int e = ibv_post_recv(qp, &rwr, &bad_r))
        return fail("ibv_post_recv", e);
    if (send_data) {
        // A message to itself: rxe's send doorbell is a write() (in the
        // reference as here), so only the process that opened the device
        // can ring it.
        std::memcpy(buf.data() + 4096, "fork-test", 10);
        ibv_sge ssge{reinterpret_cast<uintptr_t>(buf.data() + 4096), 64, mr->lkey};
        ibv_send_wr swr{};
        swr.wr_id = 2;
        swr.sg_list = &ssge;
        swr.num_sge = 1;
        swr.opcode = IBV_WR_SEND;
        swr.send_flags = IBV_SEND_SIGNALED;
        ibv_send_wr* bad_s = nullptr;
        if (int e = ibv_post_send(qp, &swr, &bad_s))
            return fail("ibv_post_send", e);
        int seen = 0;
        for (int spins = 0; seen < 2 && spins < 2000000; spins++) {
            ibv_wc wc{};
            int n = ibv_poll_cq(cq, 1, &wc);
            if (n < 0)
                return fail("ibv_poll_cq", EIO);
            if (n == 1) {
                if (wc.status != IBV_WC_SUCCESS)
                    return std::string("completion: ") + ibv_wc_status_str(wc.status);
                seen++;
            }
            if (!n)
                usleep(10);
        }
        if (seen != 2)
            return "ibv_poll_cq: " + std::to_string(seen) + " of 2 completions";
        if (std::strcmp(buf.data(), "fork-test") != 0)
            return "received data differs";
    }

    if (int e = ibv_destroy_qp(qp2))
        return fail("ibv_destroy_qp (ex)", e);
    if (int e = ibv_destroy_qp(qp))
        return fail("ibv_destroy_qp", e);
    if (int e = ibv_destroy_srq(srq))
        return fail("ibv_destroy_srq", e);
    if (int e = ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)))
        return fail("ibv_destroy_cq (ex)", e);
    // The armed CQ may have an unacknowledged event: none was generated
    // (nothing completed on it without send_data); ack what came.
    if (int e = ibv_destroy_cq(cq))
        return fail("ibv_destroy_cq", e);
    if (int e = ibv_destroy_comp_channel(ch))
        return fail("ibv_destroy_comp_channel", e);
    if (int e = ibv_dereg_mr(mr))
        return fail("ibv_dereg_mr", e);
    if (int e = ibv_dealloc_pd(pd))
        return fail("ibv_dealloc_pd", e);
    return "";
}

// Runs `exercise` in a forked child; its result comes back through a pipe.
std::string in_child(ibv_context* ctx) {
    int p[2];
    if (pipe(p) != 0)
        return "pipe failed";
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        std::string r = exercise(ctx, false);
        if (write(p[1], r.data(), r.size()) < 0)
            _exit(2);
        _exit(0);
    }
    close(p[1]);
    std::string r;
    char b[256];
    ssize_t n;
    while ((n = read(p[0], b, sizeof b)) > 0)
        r.append(b, static_cast<size_t>(n));
    close(p[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return "child died (status " + std::to_string(status) + ")";
    return r;
}

TEST(ForkChild, ParentCreatesUsesAndDestroysEveryObject) {
    Device d;
    ASSERT_NE(d.ctx, nullptr) << "no rxe0";
    EXPECT_EQ(exercise(d.ctx, true), "");
}

TEST(ForkChild, ChildOnParentsContext) {
    Device d;
    ASSERT_NE(d.ctx, nullptr) << "no rxe0";
    const std::string r = in_child(d.ctx);
    if (fallback_mode()) {
        // Without the ioctl ABI every command is a write(), which the
        // kernel refuses to the child.
        EXPECT_EQ(r, std::string("ibv_alloc_pd: ") + strerror(EACCES));
    } else {
        EXPECT_EQ(r, "");
    }
    // The parent's context is unharmed by what the child did.
    EXPECT_EQ(exercise(d.ctx, true), "");
}

}  // namespace
