// Every libefa.so.1 entry point, called for a device and context that
// belong to another provider, fails as the reference does for such a
// device (see ../README.md). check_symbols.sh verifies this file names
// every exported symbol.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include <infiniband/efadv.h>

// Entry points newer than the installed header; the attribute structs
// are never read, so the test passes zeroed storage.
extern "C" {
struct efadv_qp;
struct ibv_comp_cntr;
int efadv_query_mr(struct ibv_mr*, void*, uint32_t);
int efadv_query_cq(struct ibv_cq*, void*, uint32_t);
int efadv_query_qp_wqs(struct ibv_qp*, void*, void*, uint32_t);
int efadv_get_max_sq_depth(struct ibv_context*, void*, uint32_t);
int efadv_get_max_rq_depth(struct ibv_context*, void*, uint32_t);
struct efadv_qp* efadv_qp_from_ibv_qp_ex(struct ibv_qp_ex*);
struct ibv_comp_cntr* efadv_create_comp_cntr(struct ibv_context*, void*, void*, uint32_t);
}

namespace {

#define EXPECT_NULL_EOPNOTSUPP(call)                      \
    do {                                                  \
        errno = 0;                                        \
        EXPECT_EQ(nullptr, (const void*)(call)) << #call; \
        EXPECT_EQ(EOPNOTSUPP, errno) << #call;            \
    } while (0)
#define EXPECT_RET(value, call)            \
    do {                                   \
        errno = 0;                         \
        EXPECT_EQ(value, (call)) << #call; \
    } while (0)

class EfaCompat : public ::testing::Test {
protected:
    ibv_device dev{};
    ibv_context ctx{};
    ibv_pd pd{};
    ibv_ah ah{};
    ibv_mr mr{};
    ibv_cq cq{};
    ibv_cq_ex cq_ex{};
    ibv_qp qp{};
    ibv_qp_ex qp_ex{};
    alignas(8) unsigned char attr[128] = {};
    alignas(8) unsigned char attr2[128] = {};

    void SetUp() override {
        std::strcpy(dev.name, "other0");
        dev.node_type = IBV_NODE_CA;
        ctx.device = &dev;
        ctx.cmd_fd = ctx.async_fd = -1;
        pd.context = ah.context = mr.context = cq.context = cq_ex.context = qp.context = &ctx;
        ah.pd = mr.pd = qp.pd = &pd;
        qp_ex.qp_base.context = &ctx;
    }
};

TEST_F(EfaCompat, QueuePairs) {
    ibv_qp_init_attr qa{};
    qa.qp_type = IBV_QPT_DRIVER;
    qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    EXPECT_NULL_EOPNOTSUPP(efadv_create_driver_qp(&pd, &qa, EFADV_QP_DRIVER_TYPE_SRD));
    ibv_qp_init_attr_ex qax{};
    efadv_qp_init_attr efa_qa{};
    efa_qa.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD;
    EXPECT_NULL_EOPNOTSUPP(efadv_create_qp_ex(&ctx, &qax, &efa_qa, sizeof(efa_qa)));
    EXPECT_NULL_EOPNOTSUPP(efadv_qp_from_ibv_qp_ex(&qp_ex));
    EXPECT_RET(EOPNOTSUPP, efadv_query_qp_wqs(&qp, attr, attr2, 32));
    EXPECT_RET(-EOPNOTSUPP, efadv_get_max_sq_depth(&ctx, attr, 24));
    EXPECT_RET(-EOPNOTSUPP, efadv_get_max_rq_depth(&ctx, attr, 24));
}

TEST_F(EfaCompat, Queries) {
    efadv_device_attr da{};
    EXPECT_RET(EOPNOTSUPP, efadv_query_device(&ctx, &da, sizeof(da)));
    efadv_ah_attr aa{};
    EXPECT_RET(EOPNOTSUPP, efadv_query_ah(&ah, &aa, sizeof(aa)));
    EXPECT_RET(EOPNOTSUPP, efadv_query_mr(&mr, attr, 16));
    EXPECT_RET(EOPNOTSUPP, efadv_query_cq(&cq, attr, 24));
}

TEST_F(EfaCompat, CompletionQueuesAndCounters) {
    ibv_cq_init_attr_ex ca{};
    ca.cqe = 16;
    efadv_cq_init_attr efa_ca{};
    efa_ca.wc_flags = EFADV_WC_EX_WITH_SGID;
    EXPECT_NULL_EOPNOTSUPP(efadv_create_cq(&ctx, &ca, &efa_ca, sizeof(efa_ca)));
    EXPECT_NULL_EOPNOTSUPP(efadv_cq_from_ibv_cq_ex(&cq_ex));
    EXPECT_NULL_EOPNOTSUPP(efadv_create_comp_cntr(&ctx, attr, attr2, 64));
}

}  // namespace
