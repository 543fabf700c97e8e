// Write-ABI commands: carried by the INVOKE_WRITE ioctl byte for byte as the
// kernel reads it (ib_user_ioctl_cmds.h), and sent with write(2) when the
// kernel has no such method, which is then remembered.
#include "libibverbs/cmd_write.h"

#include <gtest/gtest.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include <dlfcn.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

using namespace rdma::verbs;

namespace {

// What the interposed ioctl saw, and what it answers, for one fd.
struct Capture {
    int fd = -100;  // no fd (not -1, which other tests pass on purpose)
    int answer = 0;  // errno to fail with, 0 = success
    int calls = 0;
    // The header's fields (it ends in a flexible array, so not nested).
    struct {
        uint16_t length, object_id, method_id, num_attrs;
        uint32_t driver_id;
    } hdr{};
    std::vector<ib_uverbs_attr> attrs;
} g_cap;

const ib_uverbs_attr* find_attr(uint16_t id) {
    for (const ib_uverbs_attr& a : g_cap.attrs)
        if (a.attr_id == id)
            return &a;
    return nullptr;
}

}  // namespace

// The test program's ioctl: RDMA_VERBS_IOCTL on the captured fd is recorded
// and answered here; everything else goes to libc.
extern "C" __attribute__((visibility("default"))) int ioctl(int fd, unsigned long request, ...) {
    va_list ap;
    va_start(ap, request);
    void* arg = va_arg(ap, void*);
    va_end(ap);
    if (fd == g_cap.fd && request == RDMA_VERBS_IOCTL) {
        g_cap.calls++;
        auto* h = static_cast<ib_uverbs_ioctl_hdr*>(arg);
        g_cap.hdr = {h->length, h->object_id, h->method_id, h->num_attrs, h->driver_id};
        auto* a = reinterpret_cast<ib_uverbs_attr*>(h + 1);
        g_cap.attrs.assign(a, a + h->num_attrs);
        if (g_cap.answer) {
            errno = g_cap.answer;
            return -1;
        }
        return 0;
    }
    using Fn = int (*)(int, unsigned long, ...);
    static Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "ioctl"));
    return real(fd, request, arg);
}

namespace {

struct Fds {
    int s[2];
    Fds() {
        EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, s), 0);
        g_cap = Capture{};
        g_cap.fd = s[0];
    }
    ~Fds() {
        close(s[0]);
        close(s[1]);
        g_cap = Capture{};
    }
};

TEST(CmdWrite, InvokeWriteCarriesCoreAndDriverData) {
    Fds f;
    std::atomic<bool> no_invoke{false};
    const CmdChannel ch{f.s[0], 14, &no_invoke};
    ib_uverbs_alloc_pd cmd{};
    alignas(8) unsigned char out[sizeof(ib_uverbs_alloc_pd_resp) + 16] = {};
    cmd.response = reinterpret_cast<uintptr_t>(out);
    const uint64_t drv_in[3] = {1, 2, 3};
    auto* resp = reinterpret_cast<ib_uverbs_alloc_pd_resp*>(out);
    EXPECT_EQ(write_cmd(ch, IB_USER_VERBS_CMD_ALLOC_PD, cmd, resp, drv_in, sizeof drv_in, 16), 0);
    ASSERT_EQ(g_cap.calls, 1);
    EXPECT_EQ(g_cap.hdr.object_id, UVERBS_OBJECT_DEVICE);
    EXPECT_EQ(g_cap.hdr.method_id, UVERBS_METHOD_INVOKE_WRITE);
    EXPECT_EQ(g_cap.hdr.driver_id, 14u);
    EXPECT_EQ(g_cap.hdr.num_attrs, 5);
    EXPECT_EQ(g_cap.hdr.length, sizeof(ib_uverbs_ioctl_hdr) + 5 * sizeof(ib_uverbs_attr));
    const ib_uverbs_attr* w = find_attr(UVERBS_ATTR_WRITE_CMD);
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->len, 8);
    EXPECT_EQ(w->data, uint64_t(IB_USER_VERBS_CMD_ALLOC_PD));
    const ib_uverbs_attr* in = find_attr(UVERBS_ATTR_CORE_IN);
    ASSERT_NE(in, nullptr);
    EXPECT_EQ(in->len, sizeof(ib_uverbs_alloc_pd));
    // 8 bytes or less travel inline: the command struct itself.
    EXPECT_EQ(std::memcmp(&in->data, &cmd, sizeof cmd), 0);
    const ib_uverbs_attr* o = find_attr(UVERBS_ATTR_CORE_OUT);
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(o->len, sizeof(ib_uverbs_alloc_pd_resp));
    EXPECT_EQ(o->data, reinterpret_cast<uintptr_t>(out));
    const ib_uverbs_attr* uin = find_attr(UVERBS_ATTR_UHW_IN);
    ASSERT_NE(uin, nullptr);
    EXPECT_EQ(uin->len, sizeof drv_in);
    EXPECT_EQ(uin->data, reinterpret_cast<uintptr_t>(drv_in));
    const ib_uverbs_attr* uout = find_attr(UVERBS_ATTR_UHW_OUT);
    ASSERT_NE(uout, nullptr);
    EXPECT_EQ(uout->len, 16);
    // The driver's response follows the core response, as with write().
    EXPECT_EQ(uout->data, reinterpret_cast<uintptr_t>(out + sizeof(ib_uverbs_alloc_pd_resp)));
    EXPECT_FALSE(no_invoke.load());
}

TEST(CmdWrite, CommandsWithoutResponseSendNoCoreOut) {
    Fds f;
    std::atomic<bool> no_invoke{false};
    ib_uverbs_dealloc_pd cmd{};
    cmd.pd_handle = 7;
    EXPECT_EQ(write_cmd_noresp(CmdChannel{f.s[0], 0, &no_invoke}, IB_USER_VERBS_CMD_DEALLOC_PD, cmd), 0);
    ASSERT_EQ(g_cap.calls, 1);
    EXPECT_EQ(g_cap.hdr.num_attrs, 2);
    EXPECT_EQ(find_attr(UVERBS_ATTR_CORE_OUT), nullptr);
    ASSERT_NE(find_attr(UVERBS_ATTR_CORE_IN), nullptr);
    EXPECT_EQ(find_attr(UVERBS_ATTR_CORE_IN)->data & 0xffffffffu, 7u);
}

TEST(CmdWrite, ExtendedCommandsCarryTheFlag) {
    Fds f;
    std::atomic<bool> no_invoke{false};
    ib_uverbs_ex_query_device cmd{};
    ib_uverbs_ex_query_device_resp resp{};
    EXPECT_EQ(
        write_ex_cmd(CmdChannel{f.s[0], 0, &no_invoke}, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, cmd, &resp, sizeof resp), 0);
    const ib_uverbs_attr* w = find_attr(UVERBS_ATTR_WRITE_CMD);
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->data, uint64_t(IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_EX_CMD_QUERY_DEVICE));
    ASSERT_NE(find_attr(UVERBS_ATTR_CORE_OUT), nullptr);
    EXPECT_EQ(find_attr(UVERBS_ATTR_CORE_OUT)->len, sizeof resp);
}

TEST(CmdWrite, KernelErrorsAreReturnedWithoutFallback) {
    Fds f;
    std::atomic<bool> no_invoke{false};
    g_cap.answer = EINVAL;
    ib_uverbs_dealloc_pd cmd{};
    EXPECT_EQ(write_cmd_noresp(CmdChannel{f.s[0], 0, &no_invoke}, IB_USER_VERBS_CMD_DEALLOC_PD, cmd), EINVAL);
    EXPECT_FALSE(no_invoke.load());
    char b[64];
    EXPECT_EQ(recv(f.s[1], b, sizeof b, MSG_DONTWAIT), -1);  // nothing written
}

// A kernel without the method: the write() framing goes out instead, and
// the channel remembers not to ask again.
TEST(CmdWrite, MissingInvokeWriteFallsBackToWriteOnce) {
    for (int missing : {EPROTONOSUPPORT, ENOTTY}) {
        Fds f;
        std::atomic<bool> no_invoke{false};
        const CmdChannel ch{f.s[0], 0, &no_invoke};
        g_cap.answer = missing;
        ib_uverbs_dealloc_pd cmd{};
        cmd.pd_handle = 0x55;
        EXPECT_EQ(write_cmd_noresp(ch, IB_USER_VERBS_CMD_DEALLOC_PD, cmd), 0);
        EXPECT_TRUE(no_invoke.load());
        unsigned char b[64];
        ssize_t n = recv(f.s[1], b, sizeof b, 0);
        ASSERT_EQ(n, ssize_t(sizeof(ib_uverbs_cmd_hdr) + sizeof cmd));
        ib_uverbs_cmd_hdr h;
        std::memcpy(&h, b, sizeof h);
        EXPECT_EQ(h.command, uint32_t(IB_USER_VERBS_CMD_DEALLOC_PD));
        EXPECT_EQ(h.in_words, n / 4);
        EXPECT_EQ(h.out_words, 0);
        EXPECT_EQ(std::memcmp(b + sizeof h, &cmd, sizeof cmd), 0);
        EXPECT_EQ(write_cmd_noresp(ch, IB_USER_VERBS_CMD_DEALLOC_PD, cmd), 0);
        EXPECT_EQ(g_cap.calls, 1);  // not asked again
    }
}

TEST(CmdWrite, ChannelWithoutFlagIsWriteOnly) {
    Fds f;
    ib_uverbs_dealloc_pd cmd{};
    EXPECT_EQ(write_cmd_noresp(CmdChannel{f.s[0], 0, nullptr}, IB_USER_VERBS_CMD_DEALLOC_PD, cmd), 0);
    EXPECT_EQ(g_cap.calls, 0);
}

}  // namespace
