// Object import and the newest verbs on a device without them (rxe0 in the
// test VM). Built twice: against our headers and library, and against
// Debian's (the reference run, without the IBVERBS_1.15+ cases, which
// rdma-core 44 does not have). Both must pass: the same errno from the
// same call.
#include <infiniband/verbs.h>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace {

class Rxe : public ::testing::Test {
protected:
    void SetUp() override {
        int n = 0;
        list_ = ibv_get_device_list(&n);
        ASSERT_NE(list_, nullptr) << strerror(errno);
        for (int i = 0; i < n; ++i)
            if (std::string(ibv_get_device_name(list_[i])) == "rxe0")
                ctx_ = ibv_open_device(list_[i]);
        ASSERT_NE(ctx_, nullptr) << "rxe0 cannot be opened";
        pd_ = ibv_alloc_pd(ctx_);
        ASSERT_NE(pd_, nullptr);
    }
    void TearDown() override {
        if (pd_)
            EXPECT_EQ(0, ibv_dealloc_pd(pd_));
        if (ctx_)
            ibv_close_device(ctx_);
        if (list_)
            ibv_free_device_list(list_);
    }
    ibv_device** list_ = nullptr;
    ibv_context* ctx_ = nullptr;
    ibv_pd* pd_ = nullptr;
};

TEST_F(Rxe, ImportDeviceFromACopyOfTheCommandFdIsEOPNOTSUPP) {
    int fd = dup(ctx_->cmd_fd);
    ASSERT_GE(fd, 0);
    errno = 0;
    EXPECT_EQ(nullptr, ibv_import_device(fd));
    EXPECT_EQ(EOPNOTSUPP, errno);
    EXPECT_EQ(0, fcntl(fd, F_GETFD) & ~FD_CLOEXEC) << "the fd stays the caller's";
    close(fd);
}

TEST_F(Rxe, ImportDeviceOfNoRdmaDeviceIsENODEVOrEINVAL) {
    int null_fd = open("/dev/null", O_RDWR);
    errno = 0;
    EXPECT_EQ(nullptr, ibv_import_device(null_fd));
    EXPECT_EQ(ENODEV, errno);
    close(null_fd);
    char path[] = "/tmp/import-XXXXXX";
    int file_fd = mkstemp(path);
    unlink(path);
    errno = 0;
    EXPECT_EQ(nullptr, ibv_import_device(file_fd));
    EXPECT_EQ(EINVAL, errno);
    close(file_fd);
}

TEST_F(Rxe, ImportOfPdMrDmIsEOPNOTSUPPAndUnimportLeavesTheObject) {
    static char buf[4096];
    ibv_mr* mr = ibv_reg_mr(pd_, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(mr, nullptr);
    errno = 0;
    EXPECT_EQ(nullptr, ibv_import_pd(ctx_, pd_->handle));
    EXPECT_EQ(EOPNOTSUPP, errno);
    errno = 0;
    EXPECT_EQ(nullptr, ibv_import_mr(pd_, mr->handle));
    EXPECT_EQ(EOPNOTSUPP, errno);
    errno = 0;
    EXPECT_EQ(nullptr, ibv_import_dm(ctx_, 1));
    EXPECT_EQ(EOPNOTSUPP, errno);
    // Without import support, unimport does nothing: the objects are
    // still there and are destroyed as usual.
    ibv_unimport_mr(mr);
    ibv_unimport_pd(pd_);
    EXPECT_EQ(0, ibv_dereg_mr(mr));
}

#ifdef RDMA_TEST_NEWEST_VERBS
TEST_F(Rxe, NewestVerbsAnswerEOPNOTSUPP) {
    uint64_t speed = 12345;
    EXPECT_EQ(EOPNOTSUPP, ibv_query_port_speed(ctx_, 1, &speed));
    EXPECT_EQ(12345u, speed) << "written only on success";

    static char buf[4096];
    ibv_mr_init_attr mr_attr{};
    mr_attr.length = sizeof(buf);
    mr_attr.access = IBV_ACCESS_LOCAL_WRITE;
    mr_attr.comp_mask = IBV_REG_MR_MASK_ADDR;
    mr_attr.addr = buf;
    errno = 0;
    EXPECT_EQ(nullptr, ibv_reg_mr_ex(pd_, &mr_attr));
    EXPECT_EQ(EOPNOTSUPP, errno);
    // The range is not left marked do-not-fork: a plain registration of
    // it still works and deregisters.
    ibv_mr* mr = ibv_reg_mr(pd_, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(mr, nullptr);
    EXPECT_EQ(0, ibv_dereg_mr(mr));

    ibv_dmah_init_attr dmah_attr{};
    errno = 0;
    EXPECT_EQ(nullptr, ibv_alloc_dmah(ctx_, &dmah_attr));
    EXPECT_EQ(EOPNOTSUPP, errno);

    ibv_buf* b = nullptr;
    errno = 0;
    EXPECT_EQ(nullptr, ibv_alloc_buf(pd_, 4096, &b));
    EXPECT_EQ(EOPNOTSUPP, errno);
    errno = 0;
    EXPECT_EQ(-1, ibv_export_buf_dmabuf_fd(nullptr));
    EXPECT_EQ(EINVAL, errno);

    ibv_comp_cntr_caps caps;
    memset(&caps, 0xff, sizeof(caps));
    EXPECT_EQ(EOPNOTSUPP, ibv_query_comp_cntr_caps(ctx_, &caps));
    EXPECT_EQ(0u, caps.max_value) << "cleared before the provider is asked";
    EXPECT_EQ(0u, caps.max_counters);
    ibv_comp_cntr_init_attr cc_attr{};
    errno = 0;
    EXPECT_EQ(nullptr, ibv_create_comp_cntr(ctx_, &cc_attr));
    EXPECT_EQ(EOPNOTSUPP, errno);
}
#endif

}  // namespace
