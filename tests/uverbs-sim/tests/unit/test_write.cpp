// The write-ABI decoder (cmd_write.cpp) and the object rules behind it
// (verbs.cpp): framing, errnos, each command's good path and checks.
#include "write_fixture.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace uvsim_test;

UVSIM_TEST_ENV("write", uvsim_test::kTwoDevices)

namespace {

class Write : public WriteTest {};
class WriteRoce : public WriteTest {
    int dev_index() const override { return 1; }
};

int open_fds() {
    int n = 0;
    if (DIR* d = opendir("/proc/self/fd")) {
        while (readdir(d))
            ++n;
        closedir(d);
    }
    return n;
}

constexpr uint32_t kRW = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

}  // namespace

// ------------------------------------------------------------------ framing

TEST_F(Write, ShorterThanTheHeader) {
    context();
    for (size_t len : {0, 1, 4, 7})
        EXPECT_EQ(file_->write(P(kCmd), len), -EINVAL) << len;
}

TEST_F(Write, InWordsMustMatchTheLength) {
    context();
    Bytes b = alloc_pd(A(kResp));
    Bytes more = b;
    reinterpret_cast<ib_uverbs_cmd_hdr*>(more.data())->in_words += 1;
    EXPECT_EQ(run(more), -EINVAL);
    Bytes less = b;
    reinterpret_cast<ib_uverbs_cmd_hdr*>(less.data())->in_words -= 1;
    EXPECT_EQ(run(less), -EINVAL);
    Bytes odd = b;
    odd.push_back(0);  // 4-byte words only
    EXPECT_EQ(run(odd), -EINVAL);
    EXPECT_EQ(run(b), static_cast<ssize_t>(b.size()));
}

TEST_F(Write, CoreStructTooShort) {
    context();
    // DEALLOC_PD needs its 4-byte core; a header alone is too short
    ib_uverbs_cmd_hdr h{IB_USER_VERBS_CMD_DEALLOC_PD, 2, 0};
    Bytes b;
    append(b, &h, sizeof h);
    EXPECT_EQ(run(b), -EINVAL);
}

TEST_F(Write, ReservedCommandBits) {
    context();
    Bytes b = alloc_pd(A(kResp));
    reinterpret_cast<ib_uverbs_cmd_hdr*>(b.data())->command |= 0x100;
    EXPECT_EQ(run(b), -EINVAL);
    b = alloc_pd(A(kResp));
    reinterpret_cast<ib_uverbs_cmd_hdr*>(b.data())->command |= 0x40000000;
    EXPECT_EQ(run(b), -EINVAL);
}

TEST_F(Write, UnknownCommands) {
    context();
    // MODIFY_AH and QUERY_AH (no kernel implements them), a number past the table
    for (uint32_t op : {uint32_t(IB_USER_VERBS_CMD_MODIFY_AH), uint32_t(IB_USER_VERBS_CMD_QUERY_AH), 0x7fu}) {
        ib_uverbs_cmd_hdr h{op, 4, 0};
        Bytes b;
        append(b, &h, sizeof h);
        b.resize(16);
        EXPECT_EQ(run(b), -EOPNOTSUPP) << op;
    }
    // extended: a number no kernel has
    uint64_t core[2] = {};
    EXPECT_EQ(run(ex_cmd(0x70u, core, sizeof core, A(kResp), 16, nullptr, 0, 0)), -EOPNOTSUPP);
}

TEST_F(Write, NothingBeforeGetContext) {
    EXPECT_EQ(run(alloc_pd(A(kResp))), -EINVAL);
    EXPECT_EQ(run(query_device(A(kResp))), -EINVAL);
    EXPECT_EQ(run(ex_query_device(A(kResp))), -EINVAL);
    ib_uverbs_cmd_hdr h{0x7f, 2, 0};
    Bytes b;
    append(b, &h, sizeof h);
    EXPECT_EQ(run(b), -EINVAL);
    context();
    EXPECT_GT(run(alloc_pd(A(kResp))), 0);
}

TEST_F(Write, ExtendedHeader) {
    context();
    const Bytes good = ex_query_device(A(kResp));
    EXPECT_EQ(run(good), static_cast<ssize_t>(good.size()));
    // shorter than both headers
    Bytes b(good.begin(), good.begin() + 16);
    EXPECT_EQ(run(b), -EINVAL);
    // reserved word of the extended header
    b = good;
    reinterpret_cast<ib_uverbs_ex_cmd_hdr*>(b.data() + 8)->cmd_hdr_reserved = 1;
    EXPECT_EQ(run(b), -EINVAL);
    // in_words (8-byte words) that disagree with the length
    b = good;
    reinterpret_cast<ib_uverbs_cmd_hdr*>(b.data())->in_words += 1;
    EXPECT_EQ(run(b), -EINVAL);
    b = good;
    reinterpret_cast<ib_uverbs_ex_cmd_hdr*>(b.data() + 8)->provider_in_words = 1;
    EXPECT_EQ(run(b), -EINVAL);
    // a response wanted but no address for it
    b = good;
    reinterpret_cast<ib_uverbs_ex_cmd_hdr*>(b.data() + 8)->response = 0;
    EXPECT_EQ(run(b), -EFAULT);
    // ex QUERY_DEVICE: comp_mask and reserved must be 0
    ib_uverbs_ex_query_device q{};
    q.comp_mask = 1;
    EXPECT_EQ(run(ex_cmd(IB_USER_VERBS_EX_CMD_QUERY_DEVICE, &q, sizeof q, A(kResp),
                         sizeof(ib_uverbs_ex_query_device_resp), nullptr, 0, 0)),
              -EINVAL);
}

TEST_F(Write, ResponseBufferTooSmall) {
    context();
    ib_uverbs_alloc_pd q{};
    EXPECT_EQ(run(legacy(IB_USER_VERBS_CMD_ALLOC_PD, q, A(kResp), 0)), -ENOSPC);
    ib_uverbs_query_device qd{};
    EXPECT_EQ(run(legacy(IB_USER_VERBS_CMD_QUERY_DEVICE, qd, A(kResp), sizeof(ib_uverbs_query_device_resp) - 4)),
              -ENOSPC);
    ib_uverbs_ex_query_device xq{};
    EXPECT_EQ(run(ex_cmd(IB_USER_VERBS_EX_CMD_QUERY_DEVICE, &xq, sizeof xq, A(kResp), 8, nullptr, 0, 0)), -ENOSPC);
    const uint32_t p = pd(), c = cq();
    QpSpec s;
    s.pd = p;
    s.scq = s.rcq = c;
    Bytes b = create_qp(A(kResp), s, qp_drv(A(buf(0x2000)), A(db()), 16, 16, 6));
    reinterpret_cast<ib_uverbs_cmd_hdr*>(b.data())->out_words = 2;
    EXPECT_EQ(run(b), -ENOSPC);
}

TEST_F(Write, CommandOutsideTheArena) {
    context();
    // the command itself in memory the application does not own
    Bytes b = alloc_pd(A(kResp));
    EXPECT_EQ(file_->write(b.data(), b.size()), -EFAULT);
}

TEST_F(Write, ResponseOutsideTheArena) {
    context();
    uint8_t outside[64];
    memset(outside, 0xa5, sizeof outside);
    EXPECT_EQ(run(alloc_pd(reinterpret_cast<uint64_t>(outside))), -EFAULT);
    EXPECT_EQ(run(query_device(reinterpret_cast<uint64_t>(outside))), -EFAULT);
    EXPECT_EQ(run(alloc_pd(A(kArenaLen - 4))), -EFAULT);  // straddles the end
    EXPECT_EQ(run(alloc_pd(0)), -EFAULT);
    for (uint8_t c : outside)
        ASSERT_EQ(c, 0xa5) << "the emulator wrote outside the arena";
    // the PD of the failed ALLOC_PD is not left behind: the next one is handle 0
    EXPECT_EQ(pd(), 0u);
}

TEST_F(Write, BadFileIsEbadf) {
    context();
    uvsim::fd_mark(file_->fd(), uvsim::FdKind::None);
    EXPECT_EQ(run(alloc_pd(A(kResp))), -EBADF);
    uvsim::fd_mark(file_->fd(), uvsim::FdKind::Uverbs);
}

TEST_F(Write, FatalDeviceOnlyCleansUp) {
    context();
    const uint32_t p = pd();
    {
        std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
        file_->ctx().dev->fatal = true;
    }
    EXPECT_EQ(run(alloc_pd(A(kResp))), -EIO);
    EXPECT_EQ(run(query_device(A(kResp))), -EIO);
    EXPECT_EQ(run(dealloc_pd(p)), static_cast<ssize_t>(dealloc_pd(p).size()));
    std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
    file_->ctx().dev->fatal = false;
}

// -------------------------------------------------------------- GET_CONTEXT

TEST_F(Write, GetContextRequestSizes) {
    // v1 (8 bytes), up to comp_mask (16), up to reserved2 (24), the whole
    // v2 (32) and a longer one with zero trailing bytes (40)
    for (size_t len : {8, 16, 24, 32, 40}) {
        file_ = std::make_unique<File>(0);
        memset(P(kResp), 0xee, 512);
        ASSERT_EQ(run(get_context(A(kResp), len)), static_cast<ssize_t>(get_context(A(kResp), len).size())) << len;
        auto r = resp<ib_uverbs_get_context_resp>();
        EXPECT_EQ(r.num_comp_vectors, 1u);
        EXPECT_GE(fcntl(static_cast<int>(r.async_fd), F_GETFD), 0) << "async fd " << r.async_fd;
        EXPECT_TRUE(fcntl(static_cast<int>(r.async_fd), F_GETFD) & FD_CLOEXEC);
        auto d = resp<mlx5_ib_alloc_ucontext_resp>(kResp + sizeof r);
        EXPECT_EQ(d.tot_bfregs, 4u);
        EXPECT_EQ(d.bf_reg_size, 512u);
        EXPECT_EQ(d.cache_line_size, 64u);
        EXPECT_EQ(d.num_ports, 2u);
        EXPECT_EQ(d.log_uar_size, 12u);
        EXPECT_EQ(d.num_uars_per_page, 1u);
        EXPECT_EQ(d.response_length, sizeof d);
        // max_cqe_version sits at byte 16: shorter requests get version 0
        EXPECT_EQ(d.cqe_version, len > 16 ? 1 : 0) << len;
    }
}

TEST_F(Write, GetContextErrors) {
    EXPECT_EQ(run(get_context(A(kResp), 4)), -EINVAL);  // not even v1
    EXPECT_EQ(run(get_context(A(kResp), 0)), -EINVAL);
    EXPECT_EQ(run(get_context(A(kResp), 32, MLX5_IB_ALLOC_UCTX_DEVX)), -EOPNOTSUPP);
    EXPECT_EQ(run(get_context(A(kResp), 32, 1u << 7)), -EINVAL);  // unknown flag
    EXPECT_EQ(run(get_context(A(kResp), 32, 0, 2000)), -ENOMEM);  // too many bfregs
    Bytes b = get_context(A(kResp), 40);
    b.back() = 1;  // a non-zero byte the emulator does not know
    EXPECT_EQ(run(b), -EOPNOTSUPP);
    b = get_context(A(kResp), 32);
    reinterpret_cast<mlx5_ib_alloc_ucontext_req_v2*>(b.data() + 8 + sizeof(ib_uverbs_get_context))
        ->num_low_latency_bfregs = 4;  // all of them
    EXPECT_EQ(run(b), -EINVAL);
    b = get_context(A(kResp), 32);
    reinterpret_cast<mlx5_ib_alloc_ucontext_req_v2*>(b.data() + 8 + sizeof(ib_uverbs_get_context))->comp_mask = 1;
    EXPECT_EQ(run(b), -EOPNOTSUPP);
    // none of these made a context
    EXPECT_EQ(run(alloc_pd(A(kResp))), -EINVAL);
    context();
    EXPECT_EQ(run(get_context(A(kResp))), -EINVAL);  // one per file
}

TEST_F(Write, GetContextResponseFaultLeavesNothing) {
    context();  // the process's wire socket and model thread exist from here on
    file_ = std::make_unique<File>(0);
    const int fds = open_fds();
    EXPECT_EQ(run(get_context(A(kArenaLen - 4))), -EFAULT);
    EXPECT_EQ(open_fds(), fds) << "the async fd of a failed GET_CONTEXT stayed open";
    EXPECT_EQ(run(alloc_pd(A(kResp))), -EINVAL) << "a context exists after a failed GET_CONTEXT";
    context();
}

TEST_F(Write, CompChannelResponseFaultLeavesNothing) {
    context();
    const int fds = open_fds();
    EXPECT_EQ(run(create_comp_channel(A(kArenaLen))), -EFAULT);
    EXPECT_EQ(open_fds(), fds) << "the channel fds of a failed CREATE_COMP_CHANNEL stayed open";
    std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
    EXPECT_TRUE(uvsim::sim().channels.empty());
}

TEST_F(Write, GetContextCoreResponseOnly) {
    ib_uverbs_get_context q{};
    uint8_t drv[32] = {};
    ASSERT_GT(
        run(legacy(IB_USER_VERBS_CMD_GET_CONTEXT, q, A(kResp), sizeof(ib_uverbs_get_context_resp), drv, sizeof drv)),
        0);
    EXPECT_EQ(resp<ib_uverbs_get_context_resp>().num_comp_vectors, 1u);
    EXPECT_EQ(*P(kResp + sizeof(ib_uverbs_get_context_resp)), 0) << "wrote past the response";
}

// ------------------------------------------------------------- queries

TEST_F(Write, QueryDeviceAndPort) {
    context();
    ok(query_device(A(kResp)));
    auto d = resp<ib_uverbs_query_device_resp>();
    EXPECT_EQ(d.vendor_part_id, 4123u);
    EXPECT_EQ(d.vendor_id, 0x02c9u);
    EXPECT_EQ(d.phys_port_cnt, 2);
    EXPECT_EQ(be64toh(d.node_guid), 0xb8cef60300a0b000ull);
    ok(ex_query_device(A(kResp)));
    auto x = resp<ib_uverbs_ex_query_device_resp>();
    EXPECT_EQ(x.base.vendor_part_id, 4123u);
    EXPECT_EQ(x.response_length, sizeof x);
    ok(query_port(A(kResp), 1));
    auto p1 = resp<ib_uverbs_query_port_resp>();
    EXPECT_EQ(p1.lid, 1);
    EXPECT_EQ(p1.state, IBV_PORT_ACTIVE);
    EXPECT_EQ(p1.link_layer, IBV_LINK_LAYER_INFINIBAND);
    ok(query_port(A(kResp), 2));
    EXPECT_EQ(resp<ib_uverbs_query_port_resp>().lid, 0x20);
    EXPECT_EQ(run(query_port(A(kResp), 0)), -EINVAL);
    EXPECT_EQ(run(query_port(A(kResp), 3)), -EINVAL);
    EXPECT_EQ(run(query_port(A(kResp), 255)), -EINVAL);
}

TEST_F(WriteRoce, QueryPortEthernet) {
    context();
    ok(query_port(A(kResp), 1));
    auto p = resp<ib_uverbs_query_port_resp>();
    EXPECT_EQ(p.link_layer, IBV_LINK_LAYER_ETHERNET);
    EXPECT_EQ(p.lid, 0);
}

// ------------------------------------------------------------------ PD, MR

TEST_F(Write, PdLifeCycle) {
    context();
    ok(alloc_pd(A(kResp)));
    auto r = resp<ib_uverbs_alloc_pd_resp>();
    EXPECT_EQ(r.pd_handle, 0u);
    auto d = resp<mlx5_ib_alloc_pd_resp>(kResp + sizeof r);
    EXPECT_NE(d.pdn, 0u);
    EXPECT_EQ(pd(), 1u);
    ok(dealloc_pd(0));
    EXPECT_EQ(run(dealloc_pd(0)), -EINVAL);  // already gone
    EXPECT_EQ(run(dealloc_pd(7)), -EINVAL);  // never was
    EXPECT_EQ(pd(), 0u);  // lowest free handle again
}

TEST_F(Write, RegMr) {
    context();
    const uint32_t p = pd();
    const size_t m = buf(0x4000);
    ok(reg_mr(A(kResp), p, A(m), 0x4000, kRW));
    auto r = resp<ib_uverbs_reg_mr_resp>();
    EXPECT_EQ(r.lkey, r.rkey);
    EXPECT_NE(r.lkey, 0u);
    // a second one has another key
    ok(reg_mr(A(kResp), p, A(m + 0x100), 0x100, IBV_ACCESS_LOCAL_WRITE, 0x1234100));
    EXPECT_NE(resp<ib_uverbs_reg_mr_resp>().lkey, r.lkey);
    ok(dereg_mr(r.mr_handle));
    EXPECT_EQ(run(dereg_mr(r.mr_handle)), -EINVAL);
}

// REREG_MR: translation, PD and access, the keys kept; the core's checks.
TEST_F(Write, ReregMr) {
    context();
    const uint32_t p = pd(), p2 = pd();
    const size_t m = buf(0x4000);
    ok(reg_mr(A(kResp), p, A(m), 0x1000, IBV_ACCESS_LOCAL_WRITE));
    const auto r = resp<ib_uverbs_reg_mr_resp>();
    auto rereg = [&](uint32_t handle, uint32_t flags, uint64_t start, uint64_t len, uint32_t pdh, uint32_t access) {
        ib_uverbs_rereg_mr q{};
        q.mr_handle = handle;
        q.flags = flags;
        q.start = start;
        q.length = len;
        q.hca_va = start;
        q.pd_handle = pdh;
        q.access_flags = access;
        return run(legacy(IB_USER_VERBS_CMD_REREG_MR, q, A(kResp), sizeof(ib_uverbs_rereg_mr_resp)));
    };
    const uint32_t kTrans = IBV_REREG_MR_CHANGE_TRANSLATION, kPd = IBV_REREG_MR_CHANGE_PD,
                   kAccess = IBV_REREG_MR_CHANGE_ACCESS;
    // refusals: no flag, unknown flags, no such MR, bad access, no such
    // PD, a range the application does not have, a different page offset
    EXPECT_EQ(rereg(r.mr_handle, 0, 0, 0, 0, 0), -EINVAL);
    EXPECT_EQ(rereg(r.mr_handle, 8, 0, 0, 0, 0), -EINVAL);
    EXPECT_EQ(rereg(r.mr_handle + 50, kAccess, 0, 0, 0, IBV_ACCESS_LOCAL_WRITE), -EINVAL);
    EXPECT_EQ(rereg(r.mr_handle, kAccess, 0, 0, 0, IBV_ACCESS_REMOTE_WRITE), -EINVAL);
    EXPECT_EQ(rereg(r.mr_handle, kAccess, 0, 0, 0, 1u << 30), -EINVAL);
    EXPECT_EQ(rereg(r.mr_handle, kPd, 0, 0, 99, 0), -EINVAL);
    EXPECT_EQ(rereg(r.mr_handle, kTrans, A(kArenaLen - 0x1000), 0x2000, 0, 0), -EFAULT);
    EXPECT_EQ(rereg(r.mr_handle, kTrans, A(m), 0, 0, 0), -EINVAL);
    {
        ib_uverbs_rereg_mr q{};
        q.mr_handle = r.mr_handle;
        q.flags = kTrans;
        q.start = A(m);
        q.length = 0x100;
        q.hca_va = 0x10008;
        EXPECT_EQ(run(legacy(IB_USER_VERBS_CMD_REREG_MR, q, A(kResp), sizeof(ib_uverbs_rereg_mr_resp))), -EINVAL);
    }
    // all three at once: the MR moves to the second PD, the first can go
    EXPECT_GT(rereg(r.mr_handle, kTrans | kPd | kAccess, A(m + 0x2000), 0x2000, p2, kRW), 0);
    const auto rr = resp<ib_uverbs_rereg_mr_resp>();
    EXPECT_EQ(rr.lkey, r.lkey);
    EXPECT_EQ(rr.rkey, r.rkey);
    {
        std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
        const uvsim::Mr* mr = uvsim::sim().mrs_by_lkey.at(r.lkey);
        EXPECT_EQ(mr->addr, A(m + 0x2000));
        EXPECT_EQ(mr->length, 0x2000u);
        EXPECT_EQ(mr->access, kRW);
    }
    ok(dealloc_pd(p));
    EXPECT_EQ(run(dealloc_pd(p2)), -EBUSY);
    ok(dereg_mr(r.mr_handle));
    ok(dealloc_pd(p2));
}

// ALLOC_MW: the core's type check, mlx5_ib's driver request (comp_mask
// and reserved fields zero, nothing known past it), keys of their own
// index, the PD held; DEALLOC_MW.
TEST_F(Write, AllocMw) {
    context();
    const uint32_t p = pd();
    auto alloc = [&](uint32_t pdh, uint8_t type, const void* drv = nullptr, size_t drv_len = 0) {
        ib_uverbs_alloc_mw q{};
        q.pd_handle = pdh;
        q.mw_type = type;
        return run(legacy(IB_USER_VERBS_CMD_ALLOC_MW, q, A(kResp), sizeof(ib_uverbs_alloc_mw_resp), drv, drv_len));
    };
    EXPECT_EQ(alloc(p, 0), -EINVAL);
    EXPECT_EQ(alloc(p, 3), -EINVAL);
    EXPECT_EQ(alloc(p + 40, IBV_MW_TYPE_1), -EINVAL);
    mlx5_ib_alloc_mw d{};
    d.comp_mask = 1;
    EXPECT_EQ(alloc(p, IBV_MW_TYPE_1, &d, sizeof d), -EOPNOTSUPP);
    d = {};
    d.reserved2 = 1;
    EXPECT_EQ(alloc(p, IBV_MW_TYPE_1, &d, sizeof d), -EOPNOTSUPP);
    uint8_t longer[16] = {};
    longer[12] = 1;
    EXPECT_EQ(alloc(p, IBV_MW_TYPE_1, longer, sizeof longer), -EOPNOTSUPP);
    longer[12] = 0;
    longer[4] = 4;  // num_klms
    EXPECT_GT(alloc(p, IBV_MW_TYPE_1, longer, sizeof longer), 0);
    const auto m1 = resp<ib_uverbs_alloc_mw_resp>();
    EXPECT_GT(alloc(p, IBV_MW_TYPE_2), 0);
    const auto m2 = resp<ib_uverbs_alloc_mw_resp>();
    EXPECT_NE(m1.rkey >> 8, m2.rkey >> 8);
    EXPECT_NE(m1.rkey & 0xff, m2.rkey & 0xff);
    {
        std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
        const uvsim::Mw* w1 = uvsim::sim().mws_by_index.at(m1.rkey >> 8);
        EXPECT_EQ(w1->mw_type, IBV_MW_TYPE_1);
        EXPECT_EQ(w1->num_klms, 4);
        EXPECT_FALSE(w1->bound);  // free until a UMR binds it
        EXPECT_EQ(uvsim::sim().mws_by_index.at(m2.rkey >> 8)->mw_type, IBV_MW_TYPE_2);
    }
    EXPECT_EQ(run(dealloc_pd(p)), -EBUSY);
    ib_uverbs_dealloc_mw q{};
    q.mw_handle = m1.mw_handle;
    ok(legacy_noresp(IB_USER_VERBS_CMD_DEALLOC_MW, q));
    EXPECT_EQ(run(legacy_noresp(IB_USER_VERBS_CMD_DEALLOC_MW, q)), -EINVAL);
    q.mw_handle = m2.mw_handle;
    ok(legacy_noresp(IB_USER_VERBS_CMD_DEALLOC_MW, q));
    {
        std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
        EXPECT_EQ(uvsim::sim().mws_by_index.count(m1.rkey >> 8), 0u);
    }
    ok(dealloc_pd(p));
}

TEST_F(Write, RegMrChecks) {
    context();
    const uint32_t p = pd();
    const size_t m = buf(0x4000);
    // remote write / atomic without local write
    EXPECT_EQ(run(reg_mr(A(kResp), p, A(m), 0x1000, IBV_ACCESS_REMOTE_WRITE)), -EINVAL);
    EXPECT_EQ(run(reg_mr(A(kResp), p, A(m), 0x1000, IBV_ACCESS_REMOTE_ATOMIC)), -EINVAL);
    // unknown access bits (on-demand paging, which the default device has,
    // is uvsim.verify.odp's, with its refusal on a device without it)
    EXPECT_EQ(run(reg_mr(A(kResp), p, A(m), 0x1000, 1u << 30)), -EINVAL);
    // length 0, a range that wraps, offsets in the page that differ
    EXPECT_EQ(run(reg_mr(A(kResp), p, A(m), 0, 0)), -EINVAL);
    EXPECT_EQ(run(reg_mr(A(kResp), p, A(m), ~0ull - 0x10, 0)), -EINVAL);
    EXPECT_EQ(run(reg_mr(A(kResp), p, A(m), 0x100, 0, 0x10008)), -EINVAL);
    // PD handles that are not PDs
    EXPECT_EQ(run(reg_mr(A(kResp), 9, A(m), 0x1000, 0)), -EINVAL);
    const uint32_t c = cq();
    EXPECT_EQ(run(reg_mr(A(kResp), c, A(m), 0x1000, 0)), -EINVAL);
    // memory the application does not have
    EXPECT_EQ(run(reg_mr(A(kResp), p, A(kArenaLen - 0x1000), 0x2000, 0)), -EFAULT);
    uint8_t local[64];
    EXPECT_EQ(
        run(reg_mr(A(kResp), p, reinterpret_cast<uint64_t>(local), sizeof local, 0, reinterpret_cast<uint64_t>(local))),
        -EFAULT);
    // a response it cannot write: no MR stays behind
    EXPECT_EQ(run(reg_mr(A(kArenaLen), p, A(m), 0x1000, 0)), -EFAULT);
    std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
    EXPECT_TRUE(uvsim::sim().mrs_by_lkey.empty());
}

// ---------------------------------------------------------------------- CQ

TEST_F(Write, CreateCqSizes) {
    context();
    const std::pair<uint32_t, uint32_t> sizes[] = {{1, 1}, {15, 15}, {16, 31}, {100, 127}, {1023, 1023}};
    for (auto [asked, got] : sizes) {
        ok(create_cq(A(kResp), asked, cq_drv(A(buf(64 * 2048)), A(db()))));
        auto r = resp<ib_uverbs_create_cq_resp>();
        EXPECT_EQ(r.cqe, got) << asked;
        auto d = resp<mlx5_ib_create_cq_resp>(kResp + sizeof r);
        EXPECT_NE(d.cqn, 0u);
    }
    // 128-byte CQEs
    ok(create_cq(A(kResp), 15, cq_drv(A(buf(128 * 16)), A(db()), 128)));
    // the extended command with its flags
    ok(ex_create_cq(A(kResp), 15, cq_drv(A(buf(64 * 16)), A(db())), IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN));
    auto x = resp<ib_uverbs_ex_create_cq_resp>();
    EXPECT_EQ(x.base.cqe, 15u);
    EXPECT_EQ(x.response_length, sizeof x);
    // compressed, in each mini-CQE format and both CQE sizes
    for (uint8_t f : {MLX5_IB_CQE_RES_FORMAT_HASH, MLX5_IB_CQE_RES_FORMAT_CSUM, MLX5_IB_CQE_RES_FORMAT_CSUM_STRIDX})
        for (uint32_t size : {64u, 128u}) {
            auto comp = cq_drv(A(buf(size * 16)), A(db()), size);
            comp.cqe_comp_en = 1;
            comp.cqe_comp_res_format = f;
            ok(create_cq(A(kResp), 15, comp));
        }
}

TEST_F(Write, CreateCqChecks) {
    context();
    const uint64_t b = A(buf(64 * 1024)), d = A(db());
    EXPECT_EQ(run(create_cq(A(kResp), 0, cq_drv(b, d))), -EINVAL);
    EXPECT_EQ(run(create_cq(A(kResp), (1u << 22), cq_drv(b, d))), -EINVAL);  // > max_cqe
    EXPECT_EQ(run(create_cq(A(kResp), 15, cq_drv(b, d, 32))), -EINVAL);  // cqe_size
    EXPECT_EQ(run(create_cq(A(kResp), 15, cq_drv(b, d, 0))), -EINVAL);
    EXPECT_EQ(run(create_cq(A(kResp), 15, cq_drv(b, d + 4))), -EINVAL);  // unaligned record
    EXPECT_EQ(run(create_cq(A(kResp), 15, cq_drv(b + 8, d))), -EINVAL);  // ring not in 64-byte quanta
    // compression: exactly one known mini-CQE format
    auto comp = cq_drv(b, d);
    comp.cqe_comp_en = 1;
    for (uint8_t f : {0, 3, 5, 8}) {
        comp.cqe_comp_res_format = f;
        EXPECT_EQ(run(create_cq(A(kResp), 15, comp)), -EINVAL) << int(f);
    }
    auto flags = cq_drv(b, d);
    flags.flags = 0x80;
    EXPECT_EQ(run(create_cq(A(kResp), 15, flags)), -EOPNOTSUPP);
    // the ring or the record outside application memory
    EXPECT_EQ(run(create_cq(A(kResp), 15, cq_drv(A(kArenaLen - 512), d))), -EFAULT);
    EXPECT_EQ(run(create_cq(A(kResp), 15, cq_drv(b, A(kArenaLen)))), -EFAULT);
    EXPECT_EQ(run(create_cq(A(kResp), 15, cq_drv(0, d))), -EFAULT);
    // a completion vector that does not exist, a channel fd that is none
    ib_uverbs_create_cq q{};
    q.cqe = 15;
    q.comp_vector = 1;
    q.comp_channel = -1;
    auto drv = cq_drv(b, d);
    EXPECT_EQ(run(legacy(IB_USER_VERBS_CMD_CREATE_CQ, q, A(kResp), 32, &drv, sizeof drv)), -EINVAL);
    EXPECT_EQ(run(create_cq(A(kResp), 15, cq_drv(b, d), 0)), -EINVAL);  // fd 0 is no channel
    EXPECT_EQ(run(create_cq(A(kResp), 15, cq_drv(b, d), 9999)), -EINVAL);
    // without the mlx5 driver data
    q.comp_vector = 0;
    EXPECT_EQ(run(legacy(IB_USER_VERBS_CMD_CREATE_CQ, q, A(kResp), 32)), -EINVAL);
    // extended: comp_mask, unknown flags
    ib_uverbs_ex_create_cq xq{};
    xq.cqe = 15;
    xq.comp_channel = -1;
    xq.comp_mask = 1;
    EXPECT_EQ(run(ex_cmd(IB_USER_VERBS_EX_CMD_CREATE_CQ, &xq, sizeof xq, A(kResp), 32, &drv, sizeof drv, 8)), -EINVAL);
    EXPECT_EQ(run(ex_create_cq(A(kResp), 15, drv, 1u << 5)), -EINVAL);
    std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
    EXPECT_TRUE(uvsim::sim().cqs.empty());
}

// RESIZE_CQ: the marker in the old ring, the producer count carried on in
// the new one, the same size a no-op, and the kernel's and the device's
// refusals.
TEST_F(Write, ResizeCq) {
    context();
    const size_t old_ring = buf(64 * 16), rec = db();
    ok(create_cq(A(kResp), 15, cq_drv(A(old_ring), A(rec))));
    const uint32_t h = resp<ib_uverbs_create_cq_resp>().cq_handle;
    auto resize = [&](uint32_t handle, uint32_t cqe, uint64_t ring, uint16_t cqe_size = 64, uint16_t res0 = 0,
                      size_t drv_len = sizeof(mlx5_ib_resize_cq)) {
        ib_uverbs_resize_cq q{};
        q.cq_handle = handle;
        q.cqe = cqe;
        mlx5_ib_resize_cq d{};
        d.buf_addr = ring;
        d.cqe_size = cqe_size;
        d.reserved0 = res0;
        return run(legacy(IB_USER_VERBS_CMD_RESIZE_CQ, q, A(kResp), sizeof(ib_uverbs_resize_cq_resp), &d, drv_len));
    };
    const size_t ring = buf(64 * 64);
    const mlx5_ib_resize_cq any{};
    const ssize_t whole = static_cast<ssize_t>(legacy(IB_USER_VERBS_CMD_RESIZE_CQ, ib_uverbs_resize_cq{}, 0,
                                                      sizeof(ib_uverbs_resize_cq_resp), &any, sizeof any)
                                                   .size());
    // the same ring size: nothing happens, not even a look at the request
    EXPECT_EQ(resize(h, 8, 0, 0), whole);
    EXPECT_EQ(resp<ib_uverbs_resize_cq_resp>().cqe, 15u);
    EXPECT_EQ(P(old_ring)[63], 0);
    // refusals
    EXPECT_EQ(resize(h + 100, 31, A(ring)), -EINVAL);
    EXPECT_EQ(resize(h, 0, A(ring)), -EINVAL);
    EXPECT_EQ(resize(h, 1u << 22, A(ring)), -EINVAL);  // > max_cqe
    EXPECT_EQ(resize(h, 31, A(ring), 32), -EINVAL);  // CQE size
    EXPECT_EQ(resize(h, 31, A(ring), 64, 1), -EINVAL);  // reserved
    EXPECT_EQ(resize(h, 31, A(ring) + 8), -EINVAL);  // not in 64-byte quanta
    EXPECT_EQ(resize(h, 31, A(kArenaLen - 512)), -EFAULT);
    EXPECT_EQ(resize(h, 31, A(ring), 64, 0, 8), -EFAULT);  // driver data cut short
    {
        // 10 CQEs written, none consumed: a ring of 8 cannot take them
        std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
        uvsim::sim().cqs.at(0)->pi = 10;
    }
    EXPECT_EQ(resize(h, 7, A(ring)), -EINVAL);
    EXPECT_EQ(resize(h, 31, A(ring)), whole);
    EXPECT_EQ(resp<ib_uverbs_resize_cq_resp>().cqe, 31u);
    // the marker at count 10 of the old ring (slot 10, first pass: owner 0),
    // then the new ring from count 11 on
    constexpr uint8_t kCqeResize = 5;  // MLX5_CQE_RESIZE_CQ (mlx5dv.h)
    EXPECT_EQ(P(old_ring)[10 * 64 + 63], kCqeResize << 4);
    std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
    const uvsim::Cq* c = uvsim::sim().cqs.at(0);
    EXPECT_EQ(c->buf, A(ring));
    EXPECT_EQ(c->ncqe, 32u);
    EXPECT_EQ(c->pi, 11u);
}

TEST_F(Write, CqWithCompletionChannel) {
    context();
    ok(create_comp_channel(A(kResp)));
    const int fd = static_cast<int>(resp<ib_uverbs_create_comp_channel_resp>().fd);
    EXPECT_GE(fcntl(fd, F_GETFD), 0);
    ok(create_cq(A(kResp), 15, cq_drv(A(buf(1024)), A(db())), fd));
    const uint32_t h = resp<ib_uverbs_create_cq_resp>().cq_handle;
    ok(destroy_cq(A(kResp), h));
    auto r = resp<ib_uverbs_destroy_cq_resp>();
    EXPECT_EQ(r.comp_events_reported, 0u);
    EXPECT_EQ(r.async_events_reported, 0u);
    EXPECT_EQ(run(destroy_cq(A(kResp), h)), -EINVAL);
}

// ---------------------------------------------------------------------- QP

TEST_F(Write, CreateQpEachType) {
    context();
    const uint32_t p = pd(), c = cq();
    for (uint8_t t : {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD}) {
        QpSpec s;
        s.pd = p;
        s.scq = s.rcq = c;
        s.type = t;
        s.send_wr = 16;
        s.recv_wr = 8;
        s.send_sge = 2;
        s.recv_sge = 3;
        s.inline_data = 64;
        ok(create_qp(A(kResp), s, qp_drv(A(buf(0x2000)), A(db()), 32, 8, 6)));
        auto r = resp<ib_uverbs_create_qp_resp>();
        EXPECT_NE(r.qpn & 0xffff, 0u);
        EXPECT_EQ(r.max_send_wr, 16u);
        EXPECT_EQ(r.max_recv_wr, 8u);
        EXPECT_EQ(r.max_send_sge, 2u);
        EXPECT_EQ(r.max_recv_sge, 3u);
        EXPECT_EQ(r.max_inline_data, 64u);
        auto d = resp<mlx5_ib_create_qp_resp>(kResp + sizeof r);
        EXPECT_EQ(d.bfreg_index, 1u);
        auto q = query(r.qp_handle);
        EXPECT_EQ(q.qp_state, IBV_QPS_RESET);
        // mlx5_ib reports a user QP's receive ring (WQEs, and SGEs from
        // the stride of 64 bytes) and leaves the send side to the library
        EXPECT_EQ(q.max_send_wr, 0u);
        EXPECT_EQ(q.max_recv_wr, 8u);
        EXPECT_EQ(q.max_recv_sge, 4u);
    }
    // extended
    QpSpec s;
    s.pd = p;
    s.scq = s.rcq = c;
    ok(ex_create_qp(A(kResp), s, qp_drv(A(buf(0x2000)), A(db()), 16, 16, 4)));
    auto x = resp<ib_uverbs_ex_create_qp_resp>();
    EXPECT_EQ(x.response_length, sizeof x);
    EXPECT_NE(x.base.qpn, 0u);
}

TEST_F(Write, CreateQpChecks) {
    context();
    const uint32_t p = pd(), c = cq();
    QpSpec s;
    s.pd = p;
    s.scq = s.rcq = c;
    const uint64_t b = A(buf(0x8000)), d = A(db());
    auto bad = [&](const QpSpec& spec, const mlx5_ib_create_qp& drv) { return run(create_qp(A(kResp), spec, drv)); };
    // handles
    QpSpec t = s;
    t.pd = c;
    EXPECT_EQ(bad(t, qp_drv(b, d, 16, 16)), -EINVAL);
    t = s;
    t.scq = p;
    EXPECT_EQ(bad(t, qp_drv(b, d, 16, 16)), -EINVAL);
    t = s;
    t.rcq = 77;
    EXPECT_EQ(bad(t, qp_drv(b, d, 16, 16)), -EINVAL);
    t = s;
    t.has_srq = true;
    t.srq = 77;
    EXPECT_EQ(bad(t, qp_drv(b, d, 16, 0)), -EINVAL);
    // types the model does not have
    for (uint8_t type : {uint8_t(IBV_QPT_RAW_PACKET), uint8_t(IBV_QPT_DRIVER), uint8_t(0), uint8_t(200)}) {
        t = s;
        t.type = type;
        EXPECT_EQ(bad(t, qp_drv(b, d, 16, 16)), -EOPNOTSUPP) << int(type);
    }
    // capabilities beyond the device
    t = s;
    t.send_wr = 1u << 16;
    EXPECT_EQ(bad(t, qp_drv(b, d, 16, 16)), -EINVAL);
    t = s;
    t.send_sge = 31;
    EXPECT_EQ(bad(t, qp_drv(b, d, 16, 16)), -EINVAL);
    t = s;
    t.inline_data = 1025;  // past the device's 1024 (the WQE size)
    EXPECT_EQ(bad(t, qp_drv(b, d, 16, 16)), -EINVAL);
    // rings: powers of two, a sane RQ stride, something to hold
    EXPECT_EQ(bad(s, qp_drv(b, d, 24, 16)), -EINVAL);
    EXPECT_EQ(bad(s, qp_drv(b, d, 16, 12)), -EINVAL);
    EXPECT_EQ(bad(s, qp_drv(b, d, 16, 16, 3)), -EINVAL);
    EXPECT_EQ(bad(s, qp_drv(b, d, 16, 16, 13)), -EINVAL);
    EXPECT_EQ(bad(s, qp_drv(b, d, 0, 0)), -EINVAL);
    EXPECT_EQ(bad(s, qp_drv(b, d, 1u << 16, 16)), -EINVAL);
    // buffers outside application memory, an unaligned record
    EXPECT_EQ(bad(s, qp_drv(A(kArenaLen - 0x400), d, 16, 16)), -EFAULT);
    EXPECT_EQ(bad(s, qp_drv(b, A(kArenaLen - 4), 16, 16)), -EFAULT);
    EXPECT_EQ(bad(s, qp_drv(0, d, 16, 16)), -EFAULT);
    EXPECT_EQ(bad(s, qp_drv(b, d + 2, 16, 16)), -EINVAL);
    EXPECT_EQ(bad(s, qp_drv(b + 32, d, 16, 16)), -EINVAL);  // ring not in 64-byte quanta
    // mlx5 flags: unknown ones; a dynamic bfreg whose UAR page is not
    // mapped, past the context's pages, and one of a mapped page
    auto f = qp_drv(b, d, 16, 16);
    f.flags = 1u << 20;
    EXPECT_EQ(bad(s, f), -EOPNOTSUPP);
    f = qp_drv(b, d, 16, 16);
    f.flags = MLX5_QP_FLAG_BFREG_INDEX;
    f.bfreg_index = 3;
    EXPECT_EQ(bad(s, f), -EINVAL);
    f.bfreg_index = 2 * 32;  // the default device has 32 dynamic pages
    EXPECT_EQ(bad(s, f), -EINVAL);
    {
        std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
        ASSERT_EQ(file_->ctx().num_dyn_uars, 32u);
        file_->ctx().dyn_uar_mapped[1] = true;
    }
    f.bfreg_index = 3;
    EXPECT_GT(bad(s, f), 0);
    EXPECT_EQ(resp<mlx5_ib_create_qp_resp>(kResp + sizeof(ib_uverbs_create_qp_resp)).bfreg_index, 3u);
    // no driver data
    ib_uverbs_create_qp q{};
    q.pd_handle = p;
    q.send_cq_handle = q.recv_cq_handle = c;
    q.qp_type = IBV_QPT_RC;
    EXPECT_EQ(run(legacy(IB_USER_VERBS_CMD_CREATE_QP, q, A(kResp), 32)), -EINVAL);
    // extended: an indirection table (RSS) and unknown comp_mask bits
    ib_uverbs_ex_create_qp x{};
    x.pd_handle = p;
    x.send_cq_handle = x.recv_cq_handle = c;
    x.qp_type = IBV_QPT_RC;
    x.comp_mask = IB_UVERBS_CREATE_QP_MASK_IND_TABLE;
    EXPECT_EQ(run(ex_cmd(IB_USER_VERBS_EX_CMD_CREATE_QP, &x, sizeof x, A(kResp), 32, nullptr, 0, 0)), -EOPNOTSUPP);
    x.comp_mask = 2;
    EXPECT_EQ(run(ex_cmd(IB_USER_VERBS_EX_CMD_CREATE_QP, &x, sizeof x, A(kResp), 32, nullptr, 0, 0)), -EINVAL);
    x.comp_mask = 0;
    x.create_flags = IBV_QP_CREATE_SCATTER_FCS;
    uint8_t drv[(sizeof(mlx5_ib_create_qp) + 7) / 8 * 8] = {};
    auto good = qp_drv(b, d, 16, 16);
    memcpy(drv, &good, sizeof good);
    EXPECT_EQ(run(ex_cmd(IB_USER_VERBS_EX_CMD_CREATE_QP, &x, sizeof x, A(kResp), 32, drv, sizeof drv, 8)), -EOPNOTSUPP);
    // one QP was made (the bfreg one)
    std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
    EXPECT_EQ(uvsim::sim().qps.size(), 1u);
}

TEST_F(Write, QpOnSrq) {
    context();
    const uint32_t p = pd(), c = cq(), s = srq(p);
    QpSpec q;
    q.pd = p;
    q.scq = q.rcq = c;
    q.has_srq = true;
    q.srq = s;
    q.recv_wr = 0;
    // an SRQ QP has no receive ring of its own
    EXPECT_EQ(run(create_qp(A(kResp), q, qp_drv(A(buf(0x2000)), A(db()), 16, 16))), -EINVAL);
    ok(create_qp(A(kResp), q, qp_drv(A(buf(0x2000)), A(db()), 16, 0)));
    const uint32_t h = resp<ib_uverbs_create_qp_resp>().qp_handle;
    auto r = query(h);
    EXPECT_EQ(r.max_recv_wr, 0u);
    EXPECT_EQ(run(destroy_srq(A(kResp), s)), -EBUSY);
    ok(destroy_qp(A(kResp), h));
    ok(destroy_srq(A(kResp), s));
}

// --------------------------------------------------------------------- SRQ

TEST_F(Write, SrqLifeCycle) {
    context();
    const uint32_t p = pd();
    ok(create_srq(A(kResp), p, 63, 2, A(buf(0x10000)), A(db()), 0));
    auto r = resp<ib_uverbs_create_srq_resp>();
    EXPECT_EQ(r.max_wr, 63u);
    EXPECT_EQ(r.max_sge, 3u);  // 16 + 2*16 bytes rounded up to 64: room for 3
    EXPECT_NE(r.srqn, 0u);
    EXPECT_EQ(resp<mlx5_ib_create_srq_resp>(kResp + sizeof r).srqn, r.srqn);
    ok(modify_srq(r.srq_handle, IBV_SRQ_LIMIT, 0, 10));
    ok(query_srq(A(kResp), r.srq_handle));
    auto q = resp<ib_uverbs_query_srq_resp>();
    EXPECT_EQ(q.srq_limit, 10u);
    EXPECT_EQ(q.max_wr, 63u);
    EXPECT_EQ(q.max_sge, 3u);
    EXPECT_EQ(run(modify_srq(r.srq_handle, IBV_SRQ_LIMIT, 0, 64)), -EINVAL);  // past the ring
    EXPECT_EQ(run(modify_srq(r.srq_handle, IBV_SRQ_MAX_WR, 128, 0)), -EINVAL);  // no resize on mlx5
    EXPECT_EQ(run(modify_srq(r.srq_handle, 1u << 5, 0, 0)), -EINVAL);
    EXPECT_EQ(run(dealloc_pd(p)), -EBUSY);
    ok(destroy_srq(A(kResp), r.srq_handle));
    EXPECT_EQ(resp<ib_uverbs_destroy_srq_resp>().events_reported, 0u);
    EXPECT_EQ(run(destroy_srq(A(kResp), r.srq_handle)), -EINVAL);
    EXPECT_EQ(run(query_srq(A(kResp), r.srq_handle)), -EINVAL);
    EXPECT_EQ(run(modify_srq(r.srq_handle, IBV_SRQ_LIMIT, 0, 1)), -EINVAL);
    ok(dealloc_pd(p));
}

TEST_F(Write, SrqChecks) {
    context();
    const uint32_t p = pd();
    const uint64_t b = A(buf(0x10000)), d = A(db());
    // max_wr 0 is no error for mlx5_ib: a ring of one WQE, none usable
    ok(create_srq(A(kResp), p, 0, 1, b, d));
    EXPECT_EQ(resp<ib_uverbs_create_srq_resp>().max_wr, 0u);
    EXPECT_EQ(run(create_srq(A(kResp), p, 1u << 15, 1, b, d)), -EINVAL);  // > max_srq_wr
    EXPECT_EQ(run(create_srq(A(kResp), p, 63, 32, b, d)), -EINVAL);  // > max_srq_sge
    EXPECT_EQ(run(create_srq(A(kResp), p + 1, 63, 1, b, d)), -EINVAL);
    EXPECT_EQ(run(create_srq(A(kResp), p, 63, 1, A(kArenaLen - 0x100), d)), -EFAULT);
    EXPECT_EQ(run(create_srq(A(kResp), p, 63, 1, b, A(kArenaLen))), -EFAULT);
    EXPECT_EQ(run(create_srq(A(kResp), p, 63, 1, b + 16, d)), -EINVAL);  // ring not in 64-byte quanta
    EXPECT_EQ(run(create_srq(A(kResp), p, 63, 1, b, d + 2)), -EINVAL);  // unaligned record
    ib_uverbs_create_srq q{};
    q.pd_handle = p;
    q.max_wr = 63;
    EXPECT_EQ(run(legacy(IB_USER_VERBS_CMD_CREATE_SRQ, q, A(kResp), 16)), -EINVAL);  // no driver data
}

// ---------------------------------------------------------------------- AH

TEST_F(Write, AhInfiniBand) {
    context();
    const uint32_t p = pd();
    ib_uverbs_ah_attr a{};
    a.port_num = 1;
    a.dlid = 5;
    a.sl = 3;
    ok(create_ah(A(kResp), p, a));
    const uint32_t h = resp<ib_uverbs_create_ah_resp>().ah_handle;
    EXPECT_EQ(run(dealloc_pd(p)), -EBUSY);
    ok(destroy_ah(h));
    EXPECT_EQ(run(destroy_ah(h)), -EINVAL);
    // checks: port, SL, GID index, PD
    a.port_num = 3;
    EXPECT_EQ(run(create_ah(A(kResp), p, a)), -EINVAL);
    a.port_num = 0;
    EXPECT_EQ(run(create_ah(A(kResp), p, a)), -EINVAL);
    a.port_num = 1;
    a.sl = 16;
    EXPECT_EQ(run(create_ah(A(kResp), p, a)), -EINVAL);
    a.sl = 0;
    a.is_global = 1;
    a.grh.sgid_index = 1;  // an IB port has one GID
    EXPECT_EQ(run(create_ah(A(kResp), p, a)), -EINVAL);
    a.grh.sgid_index = 0;
    ok(create_ah(A(kResp), p, a));
    EXPECT_EQ(run(create_ah(A(kResp), p + 5, a)), -EINVAL);
}

TEST_F(WriteRoce, AhNeedsAGrhAndGetsAMac) {
    context();
    const uint32_t p = pd();
    ib_uverbs_ah_attr a{};
    a.port_num = 1;
    EXPECT_EQ(run(create_ah(A(kResp), p, a)), -EINVAL);  // RoCE: GRH required
    a.is_global = 1;
    a.grh.sgid_index = 4;  // link-local v1/v2, IPv4 v1/v2: 4 entries
    EXPECT_EQ(run(create_ah(A(kResp), p, a)), -EINVAL);
    a.grh.sgid_index = 1;
    // a link-local GID carries its MAC (EUI-64)
    const uint8_t gid[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55};
    memcpy(a.grh.dgid, gid, 16);
    ok(create_ah(A(kResp), p, a));
    auto d = resp<mlx5_ib_create_ah_resp>(kResp + sizeof(ib_uverbs_create_ah_resp));
    const uint8_t mac[6] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55};
    EXPECT_EQ(memcmp(d.dmac, mac, 6), 0);
    EXPECT_EQ(d.response_length, sizeof d);
    // an IPv4-mapped GID of a configured port: that port's MAC
    const uint8_t gid4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 7, 9};
    memcpy(a.grh.dgid, gid4, 16);
    ok(create_ah(A(kResp), p, a));
    d = resp<mlx5_ib_create_ah_resp>(kResp + sizeof(ib_uverbs_create_ah_resp));
    const uint8_t mac4[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
    EXPECT_EQ(memcmp(d.dmac, mac4, 6), 0);
}

// ------------------------------------------------------- destroy order

TEST_F(Write, ObjectsInUseAreBusy) {
    context();
    const uint32_t p = pd(), c = cq();
    ok(reg_mr(A(kResp), p, A(buf(0x1000)), 0x1000, IBV_ACCESS_LOCAL_WRITE));
    const uint32_t m = resp<ib_uverbs_reg_mr_resp>().mr_handle;
    const uint32_t q = qp(p, c);
    EXPECT_EQ(run(dealloc_pd(p)), -EBUSY);
    EXPECT_EQ(run(destroy_cq(A(kResp), c)), -EBUSY);
    ok(destroy_qp(A(kResp), q));
    EXPECT_EQ(resp<ib_uverbs_destroy_qp_resp>().events_reported, 0u);
    ok(destroy_cq(A(kResp), c));
    EXPECT_EQ(run(dealloc_pd(p)), -EBUSY);  // the MR still
    ok(dereg_mr(m));
    ok(dealloc_pd(p));
}

TEST_F(Write, SendAndRecvCqBothCounted) {
    context();
    const uint32_t p = pd(), sc = cq(), rc = cq();
    QpSpec s;
    s.pd = p;
    s.scq = sc;
    s.rcq = rc;
    ok(create_qp(A(kResp), s, qp_drv(A(buf(0x2000)), A(db()), 16, 16)));
    const uint32_t q = resp<ib_uverbs_create_qp_resp>().qp_handle;
    EXPECT_EQ(run(destroy_cq(A(kResp), sc)), -EBUSY);
    EXPECT_EQ(run(destroy_cq(A(kResp), rc)), -EBUSY);
    ok(destroy_qp(A(kResp), q));
    ok(destroy_cq(A(kResp), sc));
    ok(destroy_cq(A(kResp), rc));
}

TEST_F(Write, DestroyedHandlesAreInvalid) {
    context();
    const uint32_t p = pd(), c = cq(), q = qp(p, c);
    ok(destroy_qp(A(kResp), q));
    EXPECT_EQ(run(destroy_qp(A(kResp), q)), -EINVAL);
    EXPECT_EQ(run(query_qp(A(kResp), q)), -EINVAL);
    EXPECT_EQ(modify(to_init(q, IBV_QPT_RC)), -EINVAL);
    // a handle of another type
    EXPECT_EQ(run(destroy_qp(A(kResp), c)), -EINVAL);
    EXPECT_EQ(run(destroy_cq(A(kResp), p)), -EINVAL);
    EXPECT_EQ(run(dealloc_pd(c)), -EINVAL);
    EXPECT_EQ(run(destroy_ah(p)), -EINVAL);
    // far out of range
    EXPECT_EQ(run(destroy_qp(A(kResp), 0xffffffffu)), -EINVAL);
    EXPECT_EQ(run(dereg_mr(0x80000000u)), -EINVAL);
}

TEST_F(Write, DestroyResponseOutsideTheArenaKeepsTheObjectGoneOrThere) {
    context();
    const uint32_t p = pd(), c = cq();
    // the kernel destroys, then fails to copy the response: EFAULT; the
    // object is gone either way, never half-destroyed
    ssize_t r = run(destroy_cq(A(kArenaLen), c));
    EXPECT_EQ(r, -EFAULT);
    r = run(destroy_cq(A(kResp), c));
    EXPECT_TRUE(r == -EINVAL || r > 0);
    ok(dealloc_pd(p));
}

TEST_F(Write, CloseFreesEverything) {
    context();
    const uint32_t p = pd(), c = cq(), s = srq(p);
    ok(reg_mr(A(kResp), p, A(buf(0x1000)), 0x1000, IBV_ACCESS_LOCAL_WRITE));
    const uint32_t q = qp(p, c);
    ok(modify_qp(to_init(q, IBV_QPT_RC)));
    ib_uverbs_ah_attr a{};
    a.port_num = 1;
    a.dlid = 2;
    ok(create_ah(A(kResp), p, a));
    ok(create_comp_channel(A(kResp)));
    (void)s;
    // TearDown closes the file and checks nothing is left
}

// ---------------------------------------------------------------- mmap

TEST_F(Write, MmapUarPages) {
    const long page = sysconf(_SC_PAGESIZE);
    auto map = [&](off_t off, size_t len, int prot, int flags, int& err) {
        std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
        err = 0;
        return uvsim::uverbs_mmap(file_->ctx(), nullptr, len, prot, flags, off, err);
    };
    int err;
    EXPECT_EQ(map(0, page, PROT_WRITE, MAP_SHARED, err), MAP_FAILED);  // no context yet
    EXPECT_EQ(err, EINVAL);
    context();  // 4 bfregs: 2 UAR pages
    // UAR pages 0 and 1, regular (cmd 0), write-combining (2), non-cached (3)
    for (off_t cmd : {0, 2, 3})
        for (off_t idx : {0, 1}) {
            void* p = map((cmd << 8 | idx) * page, page, PROT_WRITE, MAP_SHARED, err);
            ASSERT_NE(p, MAP_FAILED) << cmd << "/" << idx << " errno " << err;
            static_cast<volatile uint32_t*>(p)[0x800 / 4] = 1;  // a doorbell write lands in plain memory
            munmap(p, page);
        }
    EXPECT_EQ(map(2 * page, page, PROT_WRITE, MAP_SHARED, err), MAP_FAILED);  // UAR 2 of 2
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(map(0, 2 * page, PROT_WRITE, MAP_SHARED, err), MAP_FAILED);  // one page at a time
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(map(100, page, PROT_WRITE, MAP_SHARED, err), MAP_FAILED);  // not page aligned
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(map(0, page, PROT_WRITE, MAP_PRIVATE, err), MAP_FAILED);  // private
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(map((9 << 8) * page, page, PROT_WRITE, MAP_SHARED, err), MAP_FAILED);  // unknown command
    EXPECT_EQ(err, EINVAL);
    // contiguous pages (cmd 1), which mlx5_ib refuses as unimplemented
    EXPECT_EQ(map((1 << 8 | 4) * page, 16 * page, PROT_READ | PROT_WRITE, MAP_SHARED, err), MAP_FAILED);
    EXPECT_EQ(err, ENOSYS);
    // dynamic UAR pages (cmd 6, MLX5_IB_MMAP_ALLOC_WC): 32 on the default
    // device, one page each, each mapped once
    void* d0 = map((6 << 8) * page, page, PROT_WRITE, MAP_SHARED, err);
    ASSERT_NE(d0, MAP_FAILED) << "errno " << err;
    EXPECT_EQ(map((6 << 8) * page, page, PROT_WRITE, MAP_SHARED, err), MAP_FAILED);
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(map((6 << 8 | 1) * page, 2 * page, PROT_WRITE, MAP_SHARED, err), MAP_FAILED);
    EXPECT_EQ(err, EINVAL);
    void* d31 = map((6 << 8 | 31) * page, page, PROT_WRITE, MAP_SHARED, err);
    ASSERT_NE(d31, MAP_FAILED) << "errno " << err;
    EXPECT_EQ(map((6 << 8 | 32) * page, page, PROT_WRITE, MAP_SHARED, err), MAP_FAILED);
    EXPECT_EQ(err, EINVAL);
    munmap(d0, page);
    munmap(d31, page);
    // clock info (cmd 7): version 1 only, and read-only
    EXPECT_EQ(map((7 << 8 | 1) * page, page, PROT_READ, MAP_SHARED, err), MAP_FAILED);
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(map((7 << 8) * page, page, PROT_WRITE, MAP_SHARED, err), MAP_FAILED);
    EXPECT_EQ(err, EPERM);
    void* ci = map((7 << 8) * page, page, PROT_READ, MAP_SHARED, err);
    ASSERT_NE(ci, MAP_FAILED) << "errno " << err;
    munmap(ci, page);
    // the core clock page (cmd 5) is read-only
    EXPECT_EQ(map((5 << 8) * page, page, PROT_READ | PROT_WRITE, MAP_SHARED, err), MAP_FAILED);
    EXPECT_EQ(err, EPERM);
    void* c = map((5 << 8) * page, page, PROT_READ, MAP_SHARED, err);
    ASSERT_NE(c, MAP_FAILED);
    munmap(c, page);
}

// ------------------------------------------------------------------ XRC

namespace {

Bytes open_xrcd_cmd(uint64_t resp, uint32_t fd, uint32_t oflags) {
    ib_uverbs_open_xrcd q{};
    q.fd = fd;
    q.oflags = oflags;
    return legacy(IB_USER_VERBS_CMD_OPEN_XRCD, q, resp, sizeof(ib_uverbs_open_xrcd_resp));
}

Bytes close_xrcd_cmd(uint32_t h) {
    ib_uverbs_close_xrcd q{};
    q.xrcd_handle = h;
    return legacy_noresp(IB_USER_VERBS_CMD_CLOSE_XRCD, q);
}

Bytes create_xsrq_cmd(uint64_t resp, uint32_t pd, uint32_t xrcd, uint32_t cq, uint64_t buf, uint64_t db, uint32_t uidx,
                      size_t drv_len = sizeof(mlx5_ib_create_srq)) {
    ib_uverbs_create_xsrq q{};
    q.user_handle = 0x7777;
    q.srq_type = IBV_SRQT_XRC;
    q.pd_handle = pd;
    q.max_wr = 15;
    q.max_sge = 1;
    q.xrcd_handle = xrcd;
    q.cq_handle = cq;
    mlx5_ib_create_srq d{};
    d.buf_addr = buf;
    d.db_addr = db;
    d.uidx = uidx;
    return legacy(IB_USER_VERBS_CMD_CREATE_XSRQ, q, resp,
                  sizeof(ib_uverbs_create_srq_resp) + sizeof(mlx5_ib_create_srq_resp), &d, drv_len);
}

Bytes open_qp_cmd(uint64_t resp, uint32_t xrcd, uint32_t qpn, uint8_t type = IBV_QPT_XRC_RECV) {
    ib_uverbs_open_qp q{};
    q.user_handle = 0x8888;
    q.pd_handle = xrcd;
    q.qpn = qpn;
    q.qp_type = type;
    return legacy(IB_USER_VERBS_CMD_OPEN_QP, q, resp, sizeof(ib_uverbs_create_qp_resp));
}

}  // namespace

TEST_F(Write, XrcdOpenClose) {
    context();
    // a private domain
    ok(open_xrcd_cmd(A(kResp), 0xffffffff, 0));
    const uint32_t priv = resp<ib_uverbs_open_xrcd_resp>().xrcd_handle;
    // a domain of a file: O_CREAT makes it, without it EAGAIN; O_EXCL on an
    // existing one EINVAL; a second open shares it
    char path[] = "/tmp/uvsim-xrcd-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    unlink(path);
    EXPECT_EQ(run(open_xrcd_cmd(A(kResp), uint32_t(fd), 0)), -EAGAIN);
    ok(open_xrcd_cmd(A(kResp), uint32_t(fd), O_CREAT));
    const uint32_t x1 = resp<ib_uverbs_open_xrcd_resp>().xrcd_handle;
    EXPECT_EQ(run(open_xrcd_cmd(A(kResp), uint32_t(fd), O_CREAT | O_EXCL)), -EINVAL);
    ok(open_xrcd_cmd(A(kResp), uint32_t(fd), 0));
    const uint32_t x2 = resp<ib_uverbs_open_xrcd_resp>().xrcd_handle;
    EXPECT_NE(x1, x2);
    {
        std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
        auto* a = file_->ctx().get<uvsim::Xrcd>(x1, uvsim::ObjType::Xrcd);
        auto* b = file_->ctx().get<uvsim::Xrcd>(x2, uvsim::ObjType::Xrcd);
        ASSERT_TRUE(a && b);
        EXPECT_EQ(a->dom, b->dom);
        EXPECT_EQ(a->dom->opens, 2);
    }
    // an fd that is no file
    EXPECT_EQ(run(open_xrcd_cmd(A(kResp), 9999, O_CREAT)), -EBADF);
    // closing: unknown handle, a PD's handle, then each
    EXPECT_EQ(run(close_xrcd_cmd(77)), -EINVAL);
    const uint32_t p = pd();
    EXPECT_EQ(run(close_xrcd_cmd(p)), -EINVAL);
    ok(close_xrcd_cmd(x1));
    ok(close_xrcd_cmd(x2));
    ok(close_xrcd_cmd(priv));
    // the inode's domain went with its last handle: O_CREAT needed again
    EXPECT_EQ(run(open_xrcd_cmd(A(kResp), uint32_t(fd), 0)), -EAGAIN);
    close(fd);
}

TEST_F(Write, XrcSrqAndQps) {
    context();
    const uint32_t p = pd(), c = cq();
    ok(open_xrcd_cmd(A(kResp), 0xffffffff, 0));
    const uint32_t x = resp<ib_uverbs_open_xrcd_resp>().xrcd_handle;
    const uint64_t sb = A(buf(0x1000)), sd = A(db());
    // the XRC SRQ: domain, CQ, PD checked; mlx5_ib's user index (CQE
    // version 1: present, not 0xffffff, 24 bits)
    EXPECT_EQ(run(create_xsrq_cmd(A(kResp), p, 77, c, sb, sd, 5)), -EINVAL);
    EXPECT_EQ(run(create_xsrq_cmd(A(kResp), p, x, p, sb, sd, 5)), -EINVAL);
    EXPECT_EQ(run(create_xsrq_cmd(A(kResp), c, x, c, sb, sd, 5)), -EINVAL);
    EXPECT_EQ(run(create_xsrq_cmd(A(kResp), p, x, c, sb, sd, 0xffffff)), -EINVAL);
    EXPECT_EQ(run(create_xsrq_cmd(A(kResp), p, x, c, sb, sd, 0x1000000)), -EINVAL);
    EXPECT_EQ(run(create_xsrq_cmd(A(kResp), p, x, c, sb, sd, 5, offsetof(mlx5_ib_create_srq, uidx))), -EINVAL);
    ok(create_xsrq_cmd(A(kResp), p, x, c, sb, sd, 5));
    const auto sr = resp<ib_uverbs_create_srq_resp>();
    EXPECT_NE(sr.srqn, 0u);
    EXPECT_EQ(resp<mlx5_ib_create_srq_resp>(kResp + sizeof sr).srqn, sr.srqn);
    {
        std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
        auto* s = file_->ctx().get<uvsim::Srq>(sr.srq_handle, uvsim::ObjType::Srq);
        ASSERT_TRUE(s);
        EXPECT_EQ(s->uidx, 5u);
        EXPECT_TRUE(s->xrc != nullptr);
    }
    // an XRC SRQ does not serve an RC QP
    QpSpec rc;
    rc.pd = p;
    rc.scq = rc.rcq = c;
    rc.has_srq = true;
    rc.srq = sr.srq_handle;
    EXPECT_EQ(run(create_qp(A(kResp), rc, qp_drv(A(buf(0x2000)), A(db()), 16, 0))), -EINVAL);
    // the target QP: the domain in pd_handle (a PD there is EINVAL); its
    // user index as mlx5_ib checks it
    QpSpec t;
    t.type = IBV_QPT_XRC_RECV;
    t.pd = p;
    auto drv = qp_drv(0, 0, 0, 0);
    drv.uidx = 0;
    EXPECT_EQ(run(create_qp(A(kResp), t, drv)), -EINVAL);
    t.pd = x;
    drv.uidx = 0xffffff;
    EXPECT_EQ(run(create_qp(A(kResp), t, drv)), -EINVAL);
    drv.uidx = 0;
    ok(create_qp(A(kResp), t, drv));
    const auto tr = resp<ib_uverbs_create_qp_resp>();
    EXPECT_EQ(tr.max_send_wr, 0u);
    EXPECT_EQ(tr.max_recv_wr, 0u);
    // the initiator: PD and send CQ, no receive queue whatever it asks
    QpSpec i;
    i.type = IBV_QPT_XRC_SEND;
    i.pd = p;
    i.scq = c;
    i.rcq = 0;
    auto idrv = qp_drv(A(buf(0x2000)), A(db()), 16, 16);
    idrv.uidx = 6;
    ok(create_qp(A(kResp), i, idrv));
    const auto ir = resp<ib_uverbs_create_qp_resp>();
    EXPECT_EQ(ir.max_recv_wr, 0u);
    EXPECT_EQ(query(ir.qp_handle).max_recv_wr, 0u);
    // OPEN_QP: by number in the domain, XRC_RECV only
    EXPECT_EQ(run(open_qp_cmd(A(kResp), x, ir.qpn)), -EINVAL);
    EXPECT_EQ(run(open_qp_cmd(A(kResp), x, tr.qpn, IBV_QPT_RC)), -EINVAL);
    EXPECT_EQ(run(open_qp_cmd(A(kResp), p, tr.qpn)), -EINVAL);
    ok(open_qp_cmd(A(kResp), x, tr.qpn));
    const auto orr = resp<ib_uverbs_create_qp_resp>();
    EXPECT_EQ(orr.qpn, tr.qpn);
    EXPECT_NE(orr.qp_handle, tr.qp_handle);
    // modify through the opened handle, seen through the creator's
    ib_uverbs_modify_qp m{};
    m.qp_handle = orr.qp_handle;
    m.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    m.qp_state = IBV_QPS_INIT;
    m.port_num = 1;
    EXPECT_EQ(modify(m), 0);
    EXPECT_EQ(query(tr.qp_handle).qp_state, IBV_QPS_INIT);
    // destroy order: the domain, the CQ, the PD while used
    EXPECT_EQ(run(close_xrcd_cmd(x)), -EBUSY);
    EXPECT_EQ(run(destroy_cq(A(kResp), c)), -EBUSY);
    EXPECT_EQ(run(dealloc_pd(p)), -EBUSY);
    // the creator's handle first: the QP stays for the opened one
    EXPECT_GT(run(destroy_qp(A(kResp), tr.qp_handle)), 0);
    EXPECT_EQ(query(orr.qp_handle).qp_state, IBV_QPS_INIT);
    {
        std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
        EXPECT_EQ(uvsim::sim().qps.count(tr.qpn), 1u);
    }
    EXPECT_GT(run(destroy_qp(A(kResp), orr.qp_handle)), 0);
    {
        std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
        EXPECT_EQ(uvsim::sim().qps.count(tr.qpn), 0u);
    }
    EXPECT_EQ(run(open_qp_cmd(A(kResp), x, tr.qpn)), -EINVAL);
    EXPECT_EQ(run(close_xrcd_cmd(x)), -EBUSY);  // the SRQ
    EXPECT_GT(run(destroy_srq(A(kResp), sr.srq_handle)), 0);
    ok(close_xrcd_cmd(x));
    // an opened QP and its domain still open at close: the file's end
    // releases them (TearDown checks nothing is left)
    ok(open_xrcd_cmd(A(kResp), 0xffffffff, 0));
    const uint32_t y = resp<ib_uverbs_open_xrcd_resp>().xrcd_handle;
    t.pd = y;
    ok(create_qp(A(kResp), t, drv));
    const uint32_t tq = resp<ib_uverbs_create_qp_resp>().qpn;
    ok(open_qp_cmd(A(kResp), y, tq));
}

// ------------------------------------------------- receive-side steering

namespace {

// The Microsoft RSS verification suite: its key, IPv4 flows with the hash
// over the addresses and over addresses and TCP ports.
const uint8_t kRssKey[40] = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
                             0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
                             0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

// A minimal Ethernet + IPv4 + TCP/UDP frame.
Bytes tcp_frame(const uint8_t src[4], const uint8_t dst[4], uint16_t sp, uint16_t dp, uint8_t proto = 6,
                const uint8_t* dmac = nullptr) {
    Bytes f(14 + 20 + 20, 0);
    if (dmac)
        memcpy(f.data(), dmac, 6);
    f[12] = 0x08;
    f[14] = 0x45;
    f[14 + 8] = 64;
    f[14 + 9] = proto;
    memcpy(&f[14 + 12], src, 4);
    memcpy(&f[14 + 16], dst, 4);
    f[34] = uint8_t(sp >> 8), f[35] = uint8_t(sp);
    f[36] = uint8_t(dp >> 8), f[37] = uint8_t(dp);
    return f;
}

// A kernel flow spec: header, then value and mask of the filter.
template <class F>
void add_spec(Bytes& b, uint32_t type, const F& val, const F& mask, size_t filter_len = sizeof(F)) {
    ib_uverbs_flow_spec_hdr h{type, static_cast<uint16_t>(sizeof h + 2 * filter_len), 0};
    append(b, &h, sizeof h);
    Bytes v(filter_len, 0), m(filter_len, 0);
    memcpy(v.data(), &val, std::min(filter_len, sizeof(F)));
    memcpy(m.data(), &mask, std::min(filter_len, sizeof(F)));
    append(b, v.data(), v.size());
    append(b, m.data(), m.size());
}

}  // namespace

TEST(Steering, ToeplitzMatchesTheVerificationSuite) {
    struct V {
        uint8_t src[4], dst[4];
        uint16_t sp, dp;
        uint32_t ip, tcp;
    };
    const V v[] = {
        {{66, 9, 149, 187}, {161, 142, 100, 80}, 2794, 1766, 0x323e8fc2, 0x51ccc178},
        {{199, 92, 111, 2}, {65, 69, 140, 83}, 14230, 4739, 0xd718262a, 0xc626b0ea},
        {{24, 19, 198, 95}, {12, 22, 207, 184}, 12898, 38024, 0xd2d0a5de, 0x5c2b394a},
        {{38, 27, 205, 30}, {209, 142, 163, 6}, 48228, 2217, 0x82989176, 0xafc7327f},
        {{153, 39, 163, 191}, {202, 188, 127, 2}, 44251, 1303, 0x5d1809c5, 0x10e828a2},
    };
    for (const V& x : v) {
        uint8_t in[12];
        memcpy(in, x.src, 4);
        memcpy(in + 4, x.dst, 4);
        in[8] = uint8_t(x.sp >> 8), in[9] = uint8_t(x.sp), in[10] = uint8_t(x.dp >> 8), in[11] = uint8_t(x.dp);
        EXPECT_EQ(uvsim::toeplitz(kRssKey, 40, in, 8), x.ip);
        EXPECT_EQ(uvsim::toeplitz(kRssKey, 40, in, 12), x.tcp);
        // the same through a frame and the QP's field selection
        const Bytes f = tcp_frame(x.src, x.dst, x.sp, x.dp);
        EXPECT_EQ(uvsim::rss_hash(f.data(), f.size(), MLX5_RX_HASH_SRC_IPV4 | MLX5_RX_HASH_DST_IPV4, kRssKey), x.ip);
        EXPECT_EQ(uvsim::rss_hash(f.data(), f.size(),
                                  MLX5_RX_HASH_SRC_IPV4 | MLX5_RX_HASH_DST_IPV4 | MLX5_RX_HASH_SRC_PORT_TCP |
                                      MLX5_RX_HASH_DST_PORT_TCP,
                                  kRssKey),
                  x.tcp);
        // UDP port fields do not apply to a TCP frame
        EXPECT_EQ(uvsim::rss_hash(f.data(), f.size(),
                                  MLX5_RX_HASH_SRC_IPV4 | MLX5_RX_HASH_DST_IPV4 | MLX5_RX_HASH_SRC_PORT_UDP, kRssKey),
                  x.ip);
    }
}

TEST(Steering, FlowSpecDecoding) {
    std::vector<uvsim::FlowSpec> out;
    uvsim::FlowActions act;
    ib_uverbs_flow_eth_filter ev{}, em{};
    memset(em.dst_mac, 0xff, 6);
    ev.dst_mac[0] = 2;
    Bytes b;
    add_spec(b, 0x20, ev, em);
    ib_uverbs_flow_ipv4_filter iv{}, im{};
    iv.dst_ip = htobe32(0x0a000001);
    im.dst_ip = 0xffffffff;
    add_spec(b, 0x30, iv, im, 8);  // the basic IPv4 filter: addresses only
    ib_uverbs_flow_tcp_udp_filter tv{}, tm{};
    tv.dst_port = htobe16(80);
    tm.dst_port = 0xffff;
    add_spec(b, 0x40, tv, tm);
    EXPECT_EQ(uvsim::decode_flow_specs(b.data(), b.size(), 3, out, act), 0);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_FALSE(act.drop);
    EXPECT_EQ(out[1].type, 0x30u);
    EXPECT_EQ(out[1].mask[8], 0);  // proto etc.: not masked
    // fewer bytes than the specs announce, more specs than bytes, bytes left
    EXPECT_EQ(uvsim::decode_flow_specs(b.data(), b.size() - 4, 3, out, act), -EINVAL);
    EXPECT_EQ(uvsim::decode_flow_specs(b.data(), b.size(), 4, out, act), -EINVAL);
    EXPECT_EQ(uvsim::decode_flow_specs(b.data(), b.size(), 2, out, act), -EINVAL);
    // a filter longer than the kernel's: zero beyond it, else EINVAL
    Bytes l;
    add_spec(l, 0x40, tv, tm, 8);
    EXPECT_EQ(uvsim::decode_flow_specs(l.data(), l.size(), 1, out, act), 0);
    l[8 + 6] = 1;  // a byte past the 4-byte value
    EXPECT_EQ(uvsim::decode_flow_specs(l.data(), l.size(), 1, out, act), -EINVAL);
    // reserved header bits; unknown types; types this device does not offer
    Bytes r = b;
    r[6] = 1;
    EXPECT_EQ(uvsim::decode_flow_specs(r.data(), r.size(), 3, out, act), -EINVAL);
    Bytes u;
    add_spec(u, 0x77, tv, tm);
    EXPECT_EQ(uvsim::decode_flow_specs(u.data(), u.size(), 1, out, act), -EINVAL);
    Bytes t;
    add_spec(t, 0x50, tv, tm);  // VXLAN
    EXPECT_EQ(uvsim::decode_flow_specs(t.data(), t.size(), 1, out, act), -EOPNOTSUPP);
    Bytes inner;
    add_spec(inner, 0x120, ev, em);  // an inner ETH spec
    EXPECT_EQ(uvsim::decode_flow_specs(inner.data(), inner.size(), 1, out, act), -EOPNOTSUPP);
    // the drop action: a header alone
    Bytes d;
    ib_uverbs_flow_spec_hdr h{0x1001, 8, 0};
    append(d, &h, sizeof h);
    out.clear();
    EXPECT_EQ(uvsim::decode_flow_specs(d.data(), d.size(), 1, out, act), 0);
    EXPECT_TRUE(act.drop);
    EXPECT_TRUE(out.empty());
    // the count action: the counters' handle, once per rule
    Bytes c;
    ib_uverbs_flow_spec_action_count k{};
    k.type = 0x1003;
    k.size = sizeof k;
    k.handle = 42;
    append(c, &k, sizeof k);
    EXPECT_EQ(uvsim::decode_flow_specs(c.data(), c.size(), 1, out, act), 0);
    EXPECT_TRUE(act.count);
    EXPECT_EQ(act.counters_handle, 42u);
    EXPECT_FALSE(act.drop);
    append(c, &k, sizeof k);
    EXPECT_EQ(uvsim::decode_flow_specs(c.data(), c.size(), 2, out, act), -EINVAL);
    k.size = 8;  // a header alone
    Bytes c8;
    append(c8, &k, 8);
    EXPECT_EQ(uvsim::decode_flow_specs(c8.data(), c8.size(), 1, out, act), -EINVAL);
}

TEST(Steering, MatchingAndPriorities) {
    const uint8_t mac[6] = {2, 0, 0, 0, 0, 7};
    const uint8_t s[4] = {1, 2, 3, 4}, dd[4] = {10, 0, 0, 1};
    std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
    uvsim::Qp qa, qb, qc;
    auto rule = [&](uvsim::Qp* qp, uint16_t prio, uint32_t l4, uint16_t dport) {
        auto f = std::make_unique<uvsim::Flow>();
        f->qp = qp;
        f->dev_index = 5;
        f->port = 1;
        f->priority = prio;
        f->seq = uvsim::sim().next_flow_seq++;
        uvsim::FlowSpec e;
        e.type = 0x20;
        memcpy(e.val, mac, 6);
        memset(e.mask, 0xff, 6);
        f->specs.push_back(e);
        if (l4) {
            uvsim::FlowSpec ip;
            ip.type = 0x30;
            f->specs.push_back(ip);
            uvsim::FlowSpec p;
            p.type = l4;
            p.val[0] = uint8_t(dport >> 8), p.val[1] = uint8_t(dport);
            p.mask[0] = p.mask[1] = 0xff;
            f->specs.push_back(p);
        }
        uvsim::sim().flows.push_back(f.get());
        return f;
    };
    auto a = rule(&qa, 2, 0, 0);  // any frame to the MAC
    auto b = rule(&qb, 1, 0x41, 4791);  // UDP to 4791
    auto who = [&](const Bytes& f) {
        std::vector<uvsim::Qp*> v;
        for (uvsim::Flow* x : uvsim::steer_frame(5, 1, f.data(), f.size()))
            v.push_back(x->qp);
        return v;
    };
    using V = std::vector<uvsim::Qp*>;
    EXPECT_EQ(who(tcp_frame(s, dd, 1, 4791, 17, mac)), V{&qb});
    EXPECT_EQ(who(tcp_frame(s, dd, 1, 4791, 6, mac)), V{&qa});
    EXPECT_EQ(who(tcp_frame(s, dd, 1, 4792, 17, mac)), V{&qa});
    EXPECT_EQ(who(tcp_frame(s, dd, 1, 4791, 17)), V{});  // another MAC
    EXPECT_EQ(uvsim::steer_frame(5, 2, tcp_frame(s, dd, 1, 4791, 17, mac).data(), 54).size(), 0u);  // other port
    // the same specs at one priority: both; DONT_TRAP passes the frame on
    auto c = rule(&qc, 1, 0x41, 4791);
    EXPECT_EQ(who(tcp_frame(s, dd, 1, 4791, 17, mac)), (V{&qb, &qc}));
    b->flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
    c->flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
    EXPECT_EQ(who(tcp_frame(s, dd, 1, 4791, 17, mac)), (V{&qb, &qc, &qa}));
    // a drop rule first takes the frame to nowhere; defaults and sniffers
    b->flags = c->flags = 0;
    b->drop = c->drop = true;
    EXPECT_EQ(who(tcp_frame(s, dd, 1, 4791, 17, mac)), V{});
    auto sn = rule(&qc, 0, 0, 0);
    sn->specs.clear();
    sn->type = IBV_FLOW_ATTR_SNIFFER;
    auto def = rule(&qb, 0, 0, 0);
    def->specs.clear();
    def->type = IBV_FLOW_ATTR_ALL_DEFAULT;
    EXPECT_EQ(who(tcp_frame(s, dd, 1, 4791, 17, mac)), V{&qc});  // dropped, seen by the sniffer
    EXPECT_EQ(who(tcp_frame(s, dd, 1, 4791, 17)), (V{&qc, &qb}));  // no rule took it: the default
    uvsim::sim().flows.clear();
}

TEST_F(Write, NoSteeringWithoutEthernet) {
    context();
    // an InfiniBand-only device: no raw packet QPs, WQs or tables
    const uint32_t p = pd(), c = cq();
    ib_uverbs_ex_create_wq w{};
    w.wq_type = IBV_WQT_RQ;
    w.pd_handle = p;
    w.cq_handle = c;
    w.max_wr = 16;
    w.max_sge = 1;
    mlx5_ib_create_wq d{};
    d.buf_addr = A(buf(0x1000));
    d.db_addr = A(db());
    d.rq_wqe_count = 16;
    d.rq_wqe_shift = 4;
    uint8_t drv[(sizeof d + 7) / 8 * 8] = {};
    memcpy(drv, &d, sizeof d);
    EXPECT_EQ(run(ex_cmd(IB_USER_VERBS_EX_CMD_CREATE_WQ, &w, sizeof w, A(kResp), sizeof(ib_uverbs_ex_create_wq_resp),
                         drv, sizeof drv, 8)),
              -EOPNOTSUPP);
}

TEST_F(WriteRoce, WqTableRssQpAndFlowLifeCycle) {
    context();
    const uint32_t p = pd(), c = cq();
    // two WQs
    uint32_t wq[2];
    for (uint32_t& h : wq) {
        ib_uverbs_ex_create_wq w{};
        w.wq_type = IBV_WQT_RQ;
        w.pd_handle = p;
        w.cq_handle = c;
        w.max_wr = 16;
        w.max_sge = 1;
        mlx5_ib_create_wq d{};
        d.buf_addr = A(buf(0x1000));
        d.db_addr = A(db());
        d.rq_wqe_count = 16;
        d.rq_wqe_shift = 4;
        uint8_t drv[(sizeof d + 7) / 8 * 8] = {};
        memcpy(drv, &d, sizeof d);
        auto mk = [&](const void* dp) {
            return ex_cmd(IB_USER_VERBS_EX_CMD_CREATE_WQ, &w, sizeof w, A(kResp), sizeof(ib_uverbs_ex_create_wq_resp),
                          dp, sizeof drv, 8);
        };
        // a count that is no power of two; striding RQs
        mlx5_ib_create_wq bad = d;
        bad.rq_wqe_count = 12;
        uint8_t bd[sizeof drv] = {};
        memcpy(bd, &bad, sizeof bad);
        EXPECT_EQ(run(mk(bd)), -EINVAL);
        bad = d;
        bad.comp_mask = MLX5_IB_CREATE_WQ_STRIDING_RQ;
        memcpy(bd, &bad, sizeof bad);
        EXPECT_EQ(run(mk(bd)), -EOPNOTSUPP);
        ok(mk(drv));
        auto r = resp<ib_uverbs_ex_create_wq_resp>();
        EXPECT_EQ(r.max_wr, 16u);
        EXPECT_NE(r.wqn, 0u);
        h = r.wq_handle;
    }
    // RESET -> ERR is no transition; RESET -> RDY is
    ib_uverbs_ex_modify_wq m{};
    m.attr_mask = IBV_WQ_ATTR_STATE;
    m.wq_handle = wq[0];
    m.wq_state = IBV_WQS_ERR;
    EXPECT_EQ(run(ex_cmd(IB_USER_VERBS_EX_CMD_MODIFY_WQ, &m, sizeof m, 0, 0, nullptr, 0, 0)), -EINVAL);
    m.wq_state = IBV_WQS_RDY;
    ok(ex_cmd(IB_USER_VERBS_EX_CMD_MODIFY_WQ, &m, sizeof m, 0, 0, nullptr, 0, 0));
    // a table of the two (8-byte aligned handles), then one too large
    uint32_t tb[4] = {0, 1, wq[0], wq[1]};  // comp_mask, log_ind_tbl_size, the handles
    ok(ex_cmd(IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL, tb, sizeof tb, A(kResp),
              sizeof(ib_uverbs_ex_create_rwq_ind_table_resp), nullptr, 0, 0));
    const uint32_t tbl = resp<ib_uverbs_ex_create_rwq_ind_table_resp>().ind_tbl_handle;
    tb[1] = 14;
    EXPECT_EQ(run(ex_cmd(IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL, tb, sizeof tb, A(kResp),
                         sizeof(ib_uverbs_ex_create_rwq_ind_table_resp), nullptr, 0, 0)),
              -EINVAL);
    // an RSS QP over it: the key must be 40 bytes, the fields of one L3
    // and one L4 protocol
    ib_uverbs_ex_create_qp x{};
    x.pd_handle = p;
    x.qp_type = IBV_QPT_RAW_PACKET;
    x.comp_mask = IB_UVERBS_CREATE_QP_MASK_IND_TABLE;
    x.rwq_ind_tbl_handle = tbl;
    mlx5_ib_create_qp_rss rss{};
    rss.rx_hash_function = MLX5_RX_HASH_FUNC_TOEPLITZ;
    rss.rx_key_len = 40;
    memcpy(rss.rx_hash_key, kRssKey, 40);
    rss.rx_hash_fields_mask = MLX5_RX_HASH_SRC_IPV4 | MLX5_RX_HASH_DST_IPV4;
    auto mkqp = [&](const mlx5_ib_create_qp_rss& r) {
        uint8_t drv[(sizeof r + 7) / 8 * 8] = {};
        memcpy(drv, &r, sizeof r);
        return ex_cmd(IB_USER_VERBS_EX_CMD_CREATE_QP, &x, sizeof x, A(kResp), sizeof(ib_uverbs_ex_create_qp_resp), drv,
                      sizeof drv, sizeof(mlx5_ib_create_qp_resp));
    };
    mlx5_ib_create_qp_rss bad = rss;
    bad.rx_key_len = 32;
    EXPECT_EQ(run(mkqp(bad)), -EINVAL);
    bad = rss;
    bad.rx_hash_fields_mask |= MLX5_RX_HASH_SRC_IPV6;
    EXPECT_EQ(run(mkqp(bad)), -EINVAL);
    bad = rss;
    bad.rx_hash_fields_mask |= MLX5_RX_HASH_SRC_PORT_TCP | MLX5_RX_HASH_DST_PORT_UDP;
    EXPECT_EQ(run(mkqp(bad)), -EINVAL);
    bad = rss;
    bad.comp_mask = 1;
    EXPECT_EQ(run(mkqp(bad)), -EOPNOTSUPP);
    ok(mkqp(rss));
    const uint32_t rq = resp<ib_uverbs_ex_create_qp_resp>().base.qp_handle;
    // a flow rule on it: ETH to a MAC
    Bytes fl;
    ib_uverbs_create_flow cf{};
    cf.qp_handle = rq;
    cf.flow_attr.num_of_specs = 1;
    cf.flow_attr.port = 1;
    cf.flow_attr.size = 40;
    append(fl, &cf, sizeof cf);
    ib_uverbs_flow_eth_filter ev{}, em{};
    memset(em.dst_mac, 0xff, 6);
    add_spec(fl, 0x20, ev, em);
    ok(ex_cmd(IB_USER_VERBS_EX_CMD_CREATE_FLOW, fl.data(), fl.size(), A(kResp), sizeof(ib_uverbs_create_flow_resp),
              nullptr, 0, 0));
    const uint32_t flow = resp<ib_uverbs_create_flow_resp>().flow_handle;
    // a rule on a port that is not there; on an RC QP
    Bytes badport = fl;
    reinterpret_cast<ib_uverbs_create_flow*>(badport.data())->flow_attr.port = 3;
    EXPECT_EQ(run(ex_cmd(IB_USER_VERBS_EX_CMD_CREATE_FLOW, badport.data(), badport.size(), A(kResp), 8, nullptr, 0, 0)),
              -EINVAL);
    Bytes rc = fl;
    reinterpret_cast<ib_uverbs_create_flow*>(rc.data())->qp_handle = qp(p, c);
    EXPECT_EQ(run(ex_cmd(IB_USER_VERBS_EX_CMD_CREATE_FLOW, rc.data(), rc.size(), A(kResp), 8, nullptr, 0, 0)), -EINVAL);
    // destroy order: each is held by the one above it
    ib_uverbs_ex_destroy_rwq_ind_table dt{0, tbl};
    ib_uverbs_ex_destroy_wq dw{0, wq[1]};
    ib_uverbs_destroy_flow df{0, flow};
    auto destroy_tbl = [&] {
        return run(ex_cmd(IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL, &dt, sizeof dt, 0, 0, nullptr, 0, 0));
    };
    auto destroy_wq = [&] {
        return run(ex_cmd(IB_USER_VERBS_EX_CMD_DESTROY_WQ, &dw, sizeof dw, A(kResp),
                          sizeof(ib_uverbs_ex_destroy_wq_resp), nullptr, 0, 0));
    };
    EXPECT_EQ(run(destroy_qp(A(kResp), rq)), -EBUSY);
    EXPECT_EQ(destroy_tbl(), -EBUSY);
    EXPECT_EQ(destroy_wq(), -EBUSY);
    ok(ex_cmd(IB_USER_VERBS_EX_CMD_DESTROY_FLOW, &df, sizeof df, 0, 0, nullptr, 0, 0));
    ok(destroy_qp(A(kResp), rq));
    EXPECT_EQ(destroy_wq(), -EBUSY);
    EXPECT_GT(destroy_tbl(), 0);
    EXPECT_GT(destroy_wq(), 0);
    EXPECT_EQ(destroy_tbl(), -EINVAL);
}
