// libibverbs against a real kernel device (rxe0 in the test VM): every
// query answers what sysfs and the kernel say, in each of its entry
// points, errors carry the documented errno, and nothing leaks an fd.
#include <infiniband/verbs.h>

#include "util/file_io.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace {

int count_fds() {
    int n = 0;
    DIR* d = opendir("/proc/self/fd");
    while (dirent* e = readdir(d))
        if (e->d_name[0] != '.')
            ++n;
    closedir(d);
    return n - 1;  // the DIR's own fd
}

class Rxe : public ::testing::Test {
protected:
    void SetUp() override {
        list_ = ibv_get_device_list(&num_);
        ASSERT_NE(list_, nullptr) << strerror(errno);
        for (int i = 0; i < num_; ++i)
            if (std::string(ibv_get_device_name(list_[i])) == "rxe0")
                dev_ = list_[i];
        ASSERT_NE(dev_, nullptr) << "rxe0 not found";
        ctx_ = ibv_open_device(dev_);
        ASSERT_NE(ctx_, nullptr) << strerror(errno);
    }
    void TearDown() override {
        if (ctx_) {
            EXPECT_EQ(ibv_close_device(ctx_), 0);
        }
        ibv_free_device_list(list_);
    }
    std::string sysfs(const std::string& rel) {
        return rdma::read_sysfs_attr(std::string(dev_->ibdev_path) + "/" + rel).value();
    }

    ibv_device** list_ = nullptr;
    int num_ = 0;
    ibv_device* dev_ = nullptr;
    ibv_context* ctx_ = nullptr;
};

TEST_F(Rxe, DeviceIdentity) {
    EXPECT_STREQ(dev_->dev_name, "uverbs0");
    EXPECT_EQ(dev_->node_type, IBV_NODE_CA);
    EXPECT_EQ(dev_->transport_type, IBV_TRANSPORT_IB);
    EXPECT_EQ(be64toh(ibv_get_device_guid(dev_)), rdma::parse_guid(sysfs("node_guid")).value());
    EXPECT_GE(ibv_get_device_index(dev_), 0);  // known through netlink
    EXPECT_GT(ctx_->num_comp_vectors, 0);
    EXPECT_GE(fcntl(ctx_->async_fd, F_GETFD), 0);
    EXPECT_GE(fcntl(ctx_->cmd_fd, F_GETFD), 0);
}

TEST_F(Rxe, QueryDeviceLegacyAndExtendedAgree) {
    ibv_device_attr a{};
    ASSERT_EQ(ibv_query_device(ctx_, &a), 0);
    ibv_device_attr_ex ex{};
    ASSERT_EQ(ibv_query_device_ex(ctx_, nullptr, &ex), 0);
    EXPECT_EQ(memcmp(&a, &ex.orig_attr, sizeof(a)), 0);
    // rxe's sysfs fw_ver is empty; the provider formats the kernel's raw 0.
    EXPECT_STREQ(a.fw_ver, "0.0.0");
    EXPECT_EQ(a.phys_port_cnt, 1);
    EXPECT_EQ(a.vendor_id, 0xffffffu);  // rxe's
    EXPECT_EQ(ex.phys_port_cnt_ex, 1u);
    EXPECT_NE(ex.device_cap_flags_ex & a.device_cap_flags, 0u);
    ibv_query_device_ex_input in{};
    in.comp_mask = 1;
    EXPECT_EQ(ibv_query_device_ex(ctx_, &in, &ex), EINVAL);
}

TEST_F(Rxe, QueryPortThroughBothEntryPoints) {
    ibv_port_attr p{};
    ASSERT_EQ(ibv_query_port(ctx_, 1, &p), 0);
    EXPECT_EQ(p.state, IBV_PORT_ACTIVE);
    EXPECT_EQ(p.link_layer, IBV_LINK_LAYER_ETHERNET);
    EXPECT_GT(p.gid_tbl_len, 0);
    // The exported (non-inline) symbol fills the older, shorter layout.
    ibv_port_attr old;
    memset(&old, 0xab, sizeof(old));
    ASSERT_EQ((ibv_query_port)(ctx_, 1, reinterpret_cast<_compat_ibv_port_attr*>(&old)), 0);
    EXPECT_EQ(memcmp(&old, &p, offsetof(ibv_port_attr, port_cap_flags2)), 0);
    EXPECT_EQ(reinterpret_cast<unsigned char*>(&old)[offsetof(ibv_port_attr, port_cap_flags2)], 0xab);
    EXPECT_EQ(ibv_query_port(ctx_, 2, &p), EINVAL);
    EXPECT_EQ(ibv_query_port(ctx_, 0, &p), EINVAL);
}

TEST_F(Rxe, GidsMatchSysfsInEveryEntryPoint) {
    ibv_port_attr p{};
    ASSERT_EQ(ibv_query_port(ctx_, 1, &p), 0);
    ibv_gid_entry table[64];
    ssize_t n = ibv_query_gid_table(ctx_, table, 64, 0);
    ASSERT_GE(n, 2) << "rxe0 has a link-local and an IPv4-mapped GID";
    for (ssize_t i = 0; i < n; ++i) {
        const ibv_gid_entry& e = table[i];
        ibv_gid g{};
        ASSERT_EQ(ibv_query_gid(ctx_, 1, static_cast<int>(e.gid_index), &g), 0);
        EXPECT_EQ(memcmp(&g, &e.gid, sizeof(g)), 0);
        ibv_gid_entry one{};
        ASSERT_EQ(ibv_query_gid_ex(ctx_, 1, e.gid_index, &one, 0), 0);
        EXPECT_EQ(memcmp(&one, &e, sizeof(one)), 0);
        EXPECT_EQ(e.port_num, 1u);
        EXPECT_GT(e.ndev_ifindex, 0u);
        char text[64];
        const std::string s = sysfs("ports/1/gids/" + std::to_string(e.gid_index));
        unsigned v[8];
        ASSERT_EQ(sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]),
                  8);
        snprintf(text, sizeof(text), "%04x", v[7]);
        EXPECT_EQ(e.gid.raw[14], v[7] >> 8) << text;
        const std::string type = sysfs("ports/1/gid_attrs/types/" + std::to_string(e.gid_index));
        EXPECT_EQ(e.gid_type, type == "RoCE v2" ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1);
    }
    // An unused entry reads as zeros (ibv_query_gid) or ENODATA (_ex).
    ibv_gid g;
    memset(&g, 0xff, sizeof(g));
    ASSERT_EQ(ibv_query_gid(ctx_, 1, p.gid_tbl_len - 1, &g), 0);
    EXPECT_EQ(g.global.interface_id, 0u);
    ibv_gid_entry e{};
    EXPECT_EQ(ibv_query_gid_ex(ctx_, 1, static_cast<uint32_t>(p.gid_tbl_len - 1), &e, 0), ENODATA);
    EXPECT_EQ(ibv_query_gid_ex(ctx_, 1, 0, &e, 1), EINVAL);  // no flags defined
    EXPECT_EQ(ibv_query_gid(ctx_, 1, p.gid_tbl_len + 5, &g), -1);
    EXPECT_EQ(ibv_query_gid_table(ctx_, table, 1, 0), -EINVAL);  // too small
}

TEST_F(Rxe, PkeyTable) {
    __be16 pkey = 0;
    ASSERT_EQ(ibv_query_pkey(ctx_, 1, 0, &pkey), 0);
    EXPECT_EQ(be16toh(pkey), 0xffff);
    EXPECT_EQ(ibv_get_pkey_index(ctx_, 1, htobe16(0xffff)), 0);
    EXPECT_EQ(ibv_get_pkey_index(ctx_, 1, htobe16(0x1234)), -1);
    EXPECT_EQ(ibv_query_pkey(ctx_, 1, 1000, &pkey), -1);
}

TEST_F(Rxe, ResolveEthL2FromOwnGids) {
    const std::string mac_text = rdma::read_sysfs_attr("/sys/class/net/dummy0/address").value();
    unsigned m[6];
    ASSERT_EQ(sscanf(mac_text.c_str(), "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]), 6);
    ibv_gid_entry table[16];
    ssize_t n = ibv_query_gid_table(ctx_, table, 16, 0);
    ASSERT_GE(n, 2);
    for (ssize_t i = 0; i < n; ++i) {
        ibv_ah_attr ah{};
        ah.is_global = 1;
        ah.port_num = 1;
        ah.grh.sgid_index = static_cast<uint8_t>(table[i].gid_index);
        ah.grh.dgid = table[i].gid;
        uint8_t mac[6] = {};
        uint16_t vid = 0;
        ASSERT_EQ(ibv_resolve_eth_l2_from_gid(ctx_, &ah, mac, &vid), 0) << i;
        for (int k = 0; k < 6; ++k)
            EXPECT_EQ(mac[k], m[k]) << i;
        EXPECT_EQ(vid, 0xffff);  // dummy0 is no VLAN device
    }
    // Multicast GIDs map arithmetically.
    ibv_ah_attr mc{};
    mc.is_global = 1;
    mc.port_num = 1;
    mc.grh.sgid_index = static_cast<uint8_t>(table[0].gid_index);
    const uint8_t v4mc[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 129, 2, 3};
    memcpy(mc.grh.dgid.raw, v4mc, 16);
    uint8_t mac[6];
    ASSERT_EQ(ibv_resolve_eth_l2_from_gid(ctx_, &mc, mac, nullptr), 0);
    const uint8_t want[6] = {0x01, 0x00, 0x5e, 0x01, 2, 3};
    EXPECT_EQ(memcmp(mac, want, 6), 0);
    mc.is_global = 0;
    EXPECT_EQ(ibv_resolve_eth_l2_from_gid(ctx_, &mc, mac, nullptr), -EINVAL);
}

TEST(RxeLifetime, OpenCloseLeaksNothing) {
    const int before = count_fds();
    for (int i = 0; i < 50; ++i) {
        int n = 0;
        ibv_device** l = ibv_get_device_list(&n);
        ASSERT_NE(l, nullptr);
        ASSERT_GE(n, 1);
        ibv_context* c = ibv_open_device(l[0]);
        ASSERT_NE(c, nullptr);
        ibv_free_device_list(l);  // an open context keeps its device alive
        ibv_device_attr a{};
        ASSERT_EQ(ibv_query_device(c, &a), 0);
        ASSERT_EQ(ibv_close_device(c), 0);
    }
    EXPECT_EQ(count_fds(), before);
}

TEST(RxeLifetime, ForkStatusOnThisKernel) {
    // Linux 5.13+ copies pinned pages on fork, so fork_init has nothing to do.
    EXPECT_EQ(ibv_fork_init(), 0);
    EXPECT_EQ(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
}

}  // namespace

// ------------------------------------------------------------------ 1.0 ABI
// Binaries linked against libibverbs 1.0 bind the IBVERBS_1.0 versions; we
// reach them the same way (dlvsym) and drive a device through them. Only
// the leading fields of the 1.0 structs that the test reads are declared.
#include <dlfcn.h>

#include <vector>

namespace {

struct Ctx10 {
    void* device;
    void* ops[27];  // ibv_context_ops_1_0: poll_cq is [7], post_recv is [22]
    int cmd_fd;
    int async_fd;
    int num_comp_vectors;
    ibv_context* real_context;
};
struct Pd10 {
    Ctx10* context;
    uint32_t handle;
    ibv_pd* real_pd;
};
struct Cq10 {
    Ctx10* context;
    void* cq_context;
    uint32_t handle;
    int cqe;
};
struct QpInit10 {
    void* qp_context;
    void* send_cq;
    void* recv_cq;
    void* srq;
    ibv_qp_cap cap;
    ibv_qp_type qp_type;
    int sq_sig_all;
};
struct RecvWr10 {
    RecvWr10* next;
    uint64_t wr_id;
    ibv_sge* sg_list;
    int num_sge;
};

template <class F>
F* v10(const char* name) {
    return reinterpret_cast<F*>(dlvsym(RTLD_DEFAULT, name, "IBVERBS_1.0"));
}

TEST(Compat10, DeviceObjectsAndDataPathThroughThe10Abi) {
    auto get_list = v10<void**(int*)>("ibv_get_device_list");
    auto free_list = v10<void(void**)>("ibv_free_device_list");
    auto name = v10<const char*(void*)>("ibv_get_device_name");
    auto open = v10<Ctx10*(void*)>("ibv_open_device");
    auto close = v10<int(Ctx10*)>("ibv_close_device");
    auto query_port = v10<int(Ctx10*, uint8_t, ibv_port_attr*)>("ibv_query_port");
    auto alloc_pd = v10<Pd10*(Ctx10*)>("ibv_alloc_pd");
    auto dealloc_pd = v10<int(Pd10*)>("ibv_dealloc_pd");
    auto create_cq = v10<Cq10*(Ctx10*, int, void*, ibv_comp_channel*, int)>("ibv_create_cq");
    auto destroy_cq = v10<int(Cq10*)>("ibv_destroy_cq");
    auto create_qp = v10<void*(Pd10*, QpInit10*)>("ibv_create_qp");
    auto modify_qp = v10<int(void*, ibv_qp_attr*, int)>("ibv_modify_qp");
    auto destroy_qp = v10<int(void*)>("ibv_destroy_qp");
    ASSERT_TRUE(get_list && free_list && name && open && close && query_port && alloc_pd && dealloc_pd && create_cq &&
                destroy_cq && create_qp && modify_qp && destroy_qp);
    // The 1.0 and 1.1 versions are distinct functions.
    EXPECT_NE(reinterpret_cast<void*>(get_list), dlvsym(RTLD_DEFAULT, "ibv_get_device_list", "IBVERBS_1.1"));

    const int fds = count_fds();
    int n = 0;
    void** list = get_list(&n);
    ASSERT_NE(list, nullptr);
    ASSERT_GE(n, 1);
    EXPECT_STREQ(name(list[0]), "rxe0");
    Ctx10* ctx = open(list[0]);
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(ctx->cmd_fd, ctx->real_context->cmd_fd);
    ibv_port_attr pa{};
    ASSERT_EQ(query_port(ctx, 1, &pa), 0);
    EXPECT_EQ(pa.state, IBV_PORT_ACTIVE);
    Pd10* pd = alloc_pd(ctx);
    ASSERT_NE(pd, nullptr);
    EXPECT_EQ(pd->context, ctx);
    int tag = 0;
    Cq10* cq = create_cq(ctx, 16, &tag, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    EXPECT_EQ(cq->cq_context, &tag);
    QpInit10 init{};
    init.send_cq = init.recv_cq = cq;
    init.cap.max_send_wr = 4;
    init.cap.max_recv_wr = 20;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    init.qp_type = IBV_QPT_RC;
    void* qp = create_qp(pd, &init);
    ASSERT_NE(qp, nullptr);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    ASSERT_EQ(modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
    // Receives posted through the 1.0 ops are translated to the real QP in
    // batches of 16: in a 20-WR list whose 18th WR is bad, the first 17 (a
    // whole batch and one more) are posted and the bad one is reported as
    // the caller's own (1.0) work request.
    using PostRecv = int(void*, RecvWr10*, RecvWr10**);
    auto* post_recv = reinterpret_cast<PostRecv*>(ctx->ops[22]);
    ASSERT_NE(post_recv, nullptr);
    auto chain = [](std::vector<RecvWr10>& v) {
        for (size_t i = 0; i < v.size(); ++i) {
            v[i].wr_id = i;
            v[i].next = i + 1 < v.size() ? &v[i + 1] : nullptr;
        }
    };
    RecvWr10* bad = nullptr;
    std::vector<RecvWr10> broken(2);
    chain(broken);
    broken[1].num_sge = 1000;  // beyond max_recv_sge
    EXPECT_EQ(post_recv(qp, broken.data(), &bad), EINVAL);
    EXPECT_EQ(bad, &broken[1]);
    std::vector<RecvWr10> later(20);
    chain(later);
    later[17].num_sge = 1000;
    bad = nullptr;
    EXPECT_NE(post_recv(qp, later.data(), &bad), 0);
    EXPECT_EQ(bad, &later[17]);
    using PollCq = int(Cq10*, int, ibv_wc*);
    auto* poll_cq = reinterpret_cast<PollCq*>(ctx->ops[7]);
    ibv_wc wc;
    EXPECT_EQ(poll_cq(cq, 1, &wc), 0);
    EXPECT_EQ(destroy_qp(qp), 0);
    EXPECT_EQ(destroy_cq(cq), 0);
    EXPECT_EQ(dealloc_pd(pd), 0);
    EXPECT_EQ(close(ctx), 0);
    free_list(list);
    EXPECT_EQ(count_fds(), fds);
}

}  // namespace
