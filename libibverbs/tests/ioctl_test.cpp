// The ioctl builder lays attributes out exactly as the kernel reads them.
#include "libibverbs/cmd_ioctl.h"

#include <gtest/gtest.h>

#include <rdma/ib_user_ioctl_verbs.h>
#include <sys/socket.h>
#include <unistd.h>

using rdma::verbs::Ioctl;

namespace {

// A test double that exposes the marshalled buffer without a kernel.
template <unsigned N>
struct Inspect : Ioctl<N> {
    using Ioctl<N>::Ioctl;
    const ib_uverbs_ioctl_hdr* header() { return reinterpret_cast<const ib_uverbs_ioctl_hdr*>(this); }
};

}  // namespace

TEST(Ioctl, SmallInputsTravelInline) {
    Ioctl<4> cmd(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT, 14);
    uint32_t four = 0x11223344;
    auto& a = cmd.in(7, four);
    EXPECT_EQ(a.attr_id, 7);
    EXPECT_EQ(a.len, 4);
    EXPECT_EQ(a.data & 0xffffffffu, 0x11223344u);
    uint8_t big[16] = {};
    auto& b = cmd.ptr_in(8, big, sizeof(big));
    EXPECT_EQ(b.len, 16);
    EXPECT_EQ(b.data, reinterpret_cast<uintptr_t>(big));
}

TEST(Ioctl, ConstInputsAreAlwaysEightBytes) {
    Ioctl<2> cmd(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
    auto& a = cmd.const_in(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
    EXPECT_EQ(a.len, 8);
    EXPECT_EQ(a.data, 1u);
}

TEST(Ioctl, OutputsPointAtCallerMemory) {
    Ioctl<3> cmd(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT);
    uint64_t out = 0;
    auto& a = cmd.out(1, out);
    EXPECT_EQ(a.len, 8);
    EXPECT_EQ(a.data, reinterpret_cast<uintptr_t>(&out));
    auto& fd = cmd.fd_out(2);
    EXPECT_EQ(fd.len, 0);
    EXPECT_EQ(fd.data, 0u);
    EXPECT_EQ(cmd.idr_in(3, 99).data, 99u);
}

TEST(Ioctl, AttributesAreMandatoryUnlessMarkedOptional) {
    Ioctl<3> cmd(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE);
    uint32_t cqe = 16;
    EXPECT_EQ(cmd.in(UVERBS_ATTR_CREATE_CQ_CQE, cqe).flags, UVERBS_ATTR_F_MANDATORY);
    EXPECT_EQ(cmd.idr_out(UVERBS_ATTR_CREATE_CQ_HANDLE).flags, UVERBS_ATTR_F_MANDATORY);
    auto& fd = Ioctl<3>::optional(cmd.fd_in(UVERBS_ATTR_CREATE_CQ_EVENT_FD, 3));
    EXPECT_EQ(fd.flags, 0);
    EXPECT_EQ(fd.data_s64, 3);
}

TEST(Ioctl, AnAttributeLongerThanItsLengthFieldFailsWithEinval) {
    Ioctl<2> cmd(UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_READ);
    static uint64_t big[8192];  // 64 KiB: one byte past what 16 bits say
    cmd.ptr_out(UVERBS_ATTR_READ_COUNTERS_BUFF, big, sizeof(big));
    EXPECT_TRUE(cmd.overflowed());
    EXPECT_EQ(cmd.execute(-1), EINVAL);
    Ioctl<2> fits(UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_READ);
    EXPECT_EQ(fits.ptr_out(UVERBS_ATTR_READ_COUNTERS_BUFF, big, UINT16_MAX).len, UINT16_MAX);
    EXPECT_FALSE(fits.overflowed());
}

TEST(Ioctl, TooManyAttributesFailWithEinvalNotOverflow) {
    Ioctl<1> cmd(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
    cmd.const_in(0, 1);
    cmd.const_in(1, 2);  // beyond capacity: recorded, not written
    EXPECT_TRUE(cmd.overflowed());
    EXPECT_EQ(cmd.execute(-1), EINVAL);
}

TEST(Ioctl, KernelErrnoIsReturned) {
    Ioctl<1> cmd(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
    cmd.const_in(0, 1);
    EXPECT_EQ(cmd.execute(-1), EBADF);
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    EXPECT_EQ(cmd.execute(sv[0]), ENOTTY);  // not a uverbs fd
    EXPECT_TRUE(rdma::verbs::ioctl_unsupported(ENOTTY));
    EXPECT_FALSE(rdma::verbs::ioctl_unsupported(EINVAL));
    // Commands with a write() twin fall back only where the reference does.
    EXPECT_TRUE(rdma::verbs::ioctl_method_absent(ENOTTY));
    EXPECT_TRUE(rdma::verbs::ioctl_method_absent(EPROTONOSUPPORT));
    EXPECT_FALSE(rdma::verbs::ioctl_method_absent(EOPNOTSUPP));
    close(sv[0]);
    close(sv[1]);
}
