// The rxe provider against rxe0 in the test VM: every object verb, data
// moving between two QPs of this process through the kernel's loopback,
// the error answers the reference gives, and no fd or mapping left behind.
#include <infiniband/verbs.h>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <endian.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

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

int count_maps() {
    std::ifstream in("/proc/self/maps");
    std::string line;
    int n = 0;
    while (std::getline(in, line))
        ++n;
    return n;
}

constexpr int kPort = 1;
constexpr uint32_t kQkey = 0x11111111;
constexpr int kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND;

// A registered buffer.
struct Buffer {
    std::vector<uint8_t> bytes;
    ibv_mr* mr = nullptr;
    uint64_t addr(size_t off = 0) { return reinterpret_cast<uintptr_t>(bytes.data() + off); }
};

class RxeVerbs : public ::testing::Test {
protected:
    // The first open loads the provider plugin and lets libc set up its
    // arenas; leaks are counted against the state after that.
    static void SetUpTestSuite() {
        int n = 0;
        ibv_device** list = ibv_get_device_list(&n);
        for (int i = 0; list && i < n; ++i) {
            if (ibv_context* c = ibv_open_device(list[i])) {
                if (ibv_pd* pd = ibv_alloc_pd(c))
                    ibv_dealloc_pd(pd);
                ibv_close_device(c);
            }
        }
        ibv_free_device_list(list);
    }

    void SetUp() override {
        fds_before_ = count_fds();
        maps_before_ = count_maps();
        int n = 0;
        ibv_device** list = ibv_get_device_list(&n);
        ASSERT_NE(list, nullptr);
        for (int i = 0; i < n; ++i)
            if (std::string(ibv_get_device_name(list[i])) == "rxe0")
                ctx_ = ibv_open_device(list[i]);
        ibv_free_device_list(list);
        ASSERT_NE(ctx_, nullptr) << "rxe0 not found or not openable";
        ibv_port_attr pa{};
        ASSERT_EQ(ibv_query_port(ctx_, kPort, &pa), 0);
        // The IPv4 (v4-mapped) RoCE GID: the one the kernel routes over dummy0.
        for (int i = 0; i < pa.gid_tbl_len; ++i) {
            ibv_gid g{};
            if (ibv_query_gid(ctx_, kPort, i, &g))
                continue;
            static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
            if (!memcmp(g.raw, prefix, 12)) {
                gid_ = g;
                gid_index_ = i;
                break;
            }
        }
        ASSERT_GE(gid_index_, 0) << "no IPv4 GID on rxe0";
        pd_ = ibv_alloc_pd(ctx_);
        ASSERT_NE(pd_, nullptr) << strerror(errno);
        cq_ = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
        ASSERT_NE(cq_, nullptr) << strerror(errno);
    }

    void TearDown() override {
        for (auto it = qps_.rbegin(); it != qps_.rend(); ++it)
            EXPECT_EQ(ibv_destroy_qp(*it), 0);
        for (Buffer* b : bufs_) {
            if (b->mr) {
                EXPECT_EQ(ibv_dereg_mr(b->mr), 0);
            }
        }
        if (cq_) {
            EXPECT_EQ(ibv_destroy_cq(cq_), 0);
        }
        if (pd_) {
            EXPECT_EQ(ibv_dealloc_pd(pd_), 0);
        }
        if (ctx_) {
            EXPECT_EQ(ibv_close_device(ctx_), 0);
        }
        EXPECT_EQ(count_fds(), fds_before_) << "fd leak";
        EXPECT_EQ(count_maps(), maps_before_) << "mapping leak";
    }

    Buffer& buffer(size_t size, int access = kAllAccess, uint8_t fill = 0) {
        auto* b = new Buffer;
        b->bytes.assign(size, fill);
        owned_.emplace_back(b);
        b->mr = ibv_reg_mr(pd_, b->bytes.data(), size, access);
        EXPECT_NE(b->mr, nullptr) << strerror(errno);
        bufs_.push_back(b);
        return *b;
    }

    ibv_qp* make_qp(ibv_qp_type type, ibv_srq* srq = nullptr, uint32_t max_send_wr = 16, uint32_t max_inline = 64,
                    ibv_cq* cq = nullptr) {
        ibv_qp_init_attr a{};
        a.send_cq = cq ? cq : cq_;
        a.recv_cq = cq ? cq : cq_;
        a.srq = srq;
        a.qp_type = type;
        a.cap.max_send_wr = max_send_wr;
        a.cap.max_recv_wr = 16;
        a.cap.max_send_sge = 4;
        a.cap.max_recv_sge = 4;
        a.cap.max_inline_data = max_inline;
        ibv_qp* qp = ibv_create_qp(pd_, &a);
        EXPECT_NE(qp, nullptr) << strerror(errno);
        if (qp)
            qps_.push_back(qp);
        return qp;
    }

    ibv_ah_attr ah_attr() {
        ibv_ah_attr ah{};
        ah.is_global = 1;
        ah.grh.dgid = gid_;
        ah.grh.sgid_index = static_cast<uint8_t>(gid_index_);
        ah.grh.hop_limit = 1;
        ah.port_num = kPort;
        return ah;
    }

    // RESET -> INIT -> RTR -> RTS towards `remote` (RC/UC), or alone (UD).
    void bring_up(ibv_qp* qp, uint32_t remote_qpn) {
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.pkey_index = 0;
        a.port_num = kPort;
        int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        if (qp->qp_type == IBV_QPT_UD) {
            a.qkey = kQkey;
            mask |= IBV_QP_QKEY;
        } else {
            a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                (qp->qp_type == IBV_QPT_RC ? IBV_ACCESS_REMOTE_ATOMIC : 0);
            mask |= IBV_QP_ACCESS_FLAGS;
        }
        ASSERT_EQ(ibv_modify_qp(qp, &a, mask), 0);

        a = {};
        a.qp_state = IBV_QPS_RTR;
        mask = IBV_QP_STATE;
        if (qp->qp_type != IBV_QPT_UD) {
            a.path_mtu = IBV_MTU_1024;
            a.dest_qp_num = remote_qpn;
            a.rq_psn = 0;
            a.ah_attr = ah_attr();
            mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
            if (qp->qp_type == IBV_QPT_RC) {
                a.max_dest_rd_atomic = 4;
                a.min_rnr_timer = 1;
                mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
            }
        }
        ASSERT_EQ(ibv_modify_qp(qp, &a, mask), 0);

        a = {};
        a.qp_state = IBV_QPS_RTS;
        a.sq_psn = 0;
        mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
        if (qp->qp_type == IBV_QPT_RC) {
            a.timeout = 14;
            a.retry_cnt = 7;
            a.rnr_retry = 7;
            a.max_rd_atomic = 4;
            mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
        }
        ASSERT_EQ(ibv_modify_qp(qp, &a, mask), 0);
    }

    void connect(ibv_qp* a, ibv_qp* b) {
        bring_up(a, b->qp_num);
        bring_up(b, a->qp_num);
    }

    // Polls `cq` until `n` completions arrived (or two seconds passed).
    std::vector<ibv_wc> wait(size_t n, ibv_cq* cq = nullptr) {
        std::vector<ibv_wc> out;
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
            ibv_wc wc[8];
            int got = ibv_poll_cq(cq ? cq : cq_, 8, wc);
            EXPECT_GE(got, 0);
            if (got <= 0) {
                std::this_thread::sleep_for(std::chrono::microseconds(100));
                continue;
            }
            out.insert(out.end(), wc, wc + got);
        }
        EXPECT_EQ(out.size(), n) << "timed out waiting for completions";
        return out;
    }

    static const ibv_wc* find(const std::vector<ibv_wc>& wcs, uint64_t wr_id) {
        for (const ibv_wc& w : wcs)
            if (w.wr_id == wr_id)
                return &w;
        return nullptr;
    }

    int post_recv(ibv_qp* qp, uint64_t wr_id, std::vector<ibv_sge> sges) {
        ibv_recv_wr wr{};
        wr.wr_id = wr_id;
        wr.sg_list = sges.data();
        wr.num_sge = static_cast<int>(sges.size());
        ibv_recv_wr* bad = nullptr;
        return ibv_post_recv(qp, &wr, &bad);
    }

    int post_send(ibv_qp* qp, ibv_send_wr& wr) {
        ibv_send_wr* bad = nullptr;
        return ibv_post_send(qp, &wr, &bad);
    }

    int fds_before_ = 0;
    int maps_before_ = 0;
    ibv_context* ctx_ = nullptr;
    ibv_gid gid_{};
    int gid_index_ = -1;
    ibv_pd* pd_ = nullptr;
    ibv_cq* cq_ = nullptr;
    std::vector<ibv_qp*> qps_;
    std::vector<Buffer*> bufs_;
    std::vector<std::unique_ptr<Buffer>> owned_;
};

ibv_sge sge(Buffer& b, size_t off, uint32_t len) { return ibv_sge{b.addr(off), len, b.mr->lkey}; }

// ------------------------------------------------------------------ RC

TEST_F(RxeVerbs, RcSendRecvSeveralSges) {
    ibv_qp* a = make_qp(IBV_QPT_RC);
    ibv_qp* b = make_qp(IBV_QPT_RC);
    ASSERT_TRUE(a && b);
    connect(a, b);
    Buffer& src = buffer(256);
    Buffer& dst = buffer(256, kAllAccess, 0xee);
    for (int i = 0; i < 256; ++i)
        src.bytes[i] = static_cast<uint8_t>(i);
    // 100 bytes land in three pieces of the receive buffer.
    ASSERT_EQ(post_recv(b, 7, {sge(dst, 0, 10), sge(dst, 50, 40), sge(dst, 120, 60)}), 0);
    std::vector<ibv_sge> s{sge(src, 0, 30), sge(src, 100, 30), sge(src, 200, 40)};
    ibv_send_wr wr{};
    wr.wr_id = 1;
    wr.sg_list = s.data();
    wr.num_sge = 3;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ASSERT_EQ(post_send(a, wr), 0);
    auto wcs = wait(2);
    const ibv_wc* sw = find(wcs, 1);
    const ibv_wc* rw = find(wcs, 7);
    ASSERT_TRUE(sw && rw);
    EXPECT_EQ(sw->status, IBV_WC_SUCCESS);
    EXPECT_EQ(sw->opcode, IBV_WC_SEND);
    EXPECT_EQ(sw->qp_num, a->qp_num);
    EXPECT_EQ(rw->status, IBV_WC_SUCCESS);
    EXPECT_EQ(rw->opcode, IBV_WC_RECV);
    EXPECT_EQ(rw->byte_len, 100u);
    EXPECT_EQ(rw->qp_num, b->qp_num);
    std::vector<uint8_t> sent;
    for (auto& g : s)
        sent.insert(sent.end(), reinterpret_cast<uint8_t*>(g.addr), reinterpret_cast<uint8_t*>(g.addr) + g.length);
    std::vector<uint8_t> got;
    got.insert(got.end(), dst.bytes.begin(), dst.bytes.begin() + 10);
    got.insert(got.end(), dst.bytes.begin() + 50, dst.bytes.begin() + 90);
    got.insert(got.end(), dst.bytes.begin() + 120, dst.bytes.begin() + 170);
    EXPECT_EQ(got, sent);
    EXPECT_EQ(dst.bytes[10], 0xee);
    EXPECT_EQ(dst.bytes[170], 0xee);
}

TEST_F(RxeVerbs, RcInlineSendCopiesAtPostTime) {
    ibv_qp* a = make_qp(IBV_QPT_RC);
    ibv_qp* b = make_qp(IBV_QPT_RC);
    ASSERT_TRUE(a && b);
    connect(a, b);
    Buffer& dst = buffer(64);
    ASSERT_EQ(post_recv(b, 9, {sge(dst, 0, 64)}), 0);
    char one[] = "inline-";
    char two[] = "data";
    // lkeys are not looked at for inline data: the bytes are in the WQE.
    ibv_sge s[2] = {{reinterpret_cast<uintptr_t>(one), 7, 0}, {reinterpret_cast<uintptr_t>(two), 4, 0}};
    ibv_send_wr wr{};
    wr.wr_id = 2;
    wr.sg_list = s;
    wr.num_sge = 2;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
    ASSERT_EQ(post_send(a, wr), 0);
    memset(one, 'X', 7);
    auto wcs = wait(2);
    const ibv_wc* rw = find(wcs, 9);
    ASSERT_TRUE(rw);
    EXPECT_EQ(rw->status, IBV_WC_SUCCESS);
    EXPECT_EQ(rw->byte_len, 11u);
    EXPECT_EQ(std::string(reinterpret_cast<char*>(dst.bytes.data()), 11), "inline-data");
}

TEST_F(RxeVerbs, RcSendWithImmediateAndSolicited) {
    ibv_qp* a = make_qp(IBV_QPT_RC);
    ibv_qp* b = make_qp(IBV_QPT_RC);
    ASSERT_TRUE(a && b);
    connect(a, b);
    Buffer& src = buffer(32, kAllAccess, 0x5a);
    Buffer& dst = buffer(32);
    ASSERT_EQ(post_recv(b, 11, {sge(dst, 0, 32)}), 0);
    ibv_sge s = sge(src, 0, 32);
    ibv_send_wr wr{};
    wr.wr_id = 3;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(0xdeadbeef);
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
    ASSERT_EQ(post_send(a, wr), 0);
    auto wcs = wait(2);
    const ibv_wc* rw = find(wcs, 11);
    ASSERT_TRUE(rw);
    EXPECT_EQ(rw->status, IBV_WC_SUCCESS);
    EXPECT_EQ(rw->opcode, IBV_WC_RECV);
    EXPECT_TRUE(rw->wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(ntohl(rw->imm_data), 0xdeadbeefu);
    EXPECT_EQ(dst.bytes, src.bytes);
}

TEST_F(RxeVerbs, RcUnsignaledSendsCompleteSilently) {
    ibv_qp_init_attr ia{};
    ibv_qp* a = make_qp(IBV_QPT_RC);
    ibv_qp* b = make_qp(IBV_QPT_RC);
    ASSERT_TRUE(a && b);
    (void)ia;
    connect(a, b);
    Buffer& src = buffer(16, kAllAccess, 1);
    Buffer& dst = buffer(64);
    for (int i = 0; i < 3; ++i)
        ASSERT_EQ(post_recv(b, 100 + i, {sge(dst, i * 16, 16)}), 0);
    ibv_sge s = sge(src, 0, 16);
    ibv_send_wr wr[3]{};
    for (int i = 0; i < 3; ++i) {
        wr[i].wr_id = 20 + i;
        wr[i].sg_list = &s;
        wr[i].num_sge = 1;
        wr[i].opcode = IBV_WR_SEND;
        wr[i].next = i < 2 ? &wr[i + 1] : nullptr;
    }
    wr[2].send_flags = IBV_SEND_SIGNALED;  // only the last reports
    ASSERT_EQ(post_send(a, wr[0]), 0);
    auto wcs = wait(4);
    EXPECT_EQ(find(wcs, 20), nullptr);
    EXPECT_EQ(find(wcs, 21), nullptr);
    ASSERT_NE(find(wcs, 22), nullptr);
    for (int i = 0; i < 3; ++i)
        EXPECT_NE(find(wcs, 100 + i), nullptr);
}

TEST_F(RxeVerbs, RdmaWriteThenRead) {
    ibv_qp* a = make_qp(IBV_QPT_RC);
    ibv_qp* b = make_qp(IBV_QPT_RC);
    ASSERT_TRUE(a && b);
    connect(a, b);
    Buffer& local = buffer(4096);
    Buffer& remote = buffer(4096);
    Buffer& back = buffer(4096);
    for (size_t i = 0; i < 4096; ++i)
        local.bytes[i] = static_cast<uint8_t>(i * 7);
    ibv_sge s = sge(local, 0, 4096);  // several MTU-sized packets
    ibv_send_wr wr{};
    wr.wr_id = 30;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote.addr();
    wr.wr.rdma.rkey = remote.mr->rkey;
    ASSERT_EQ(post_send(a, wr), 0);
    auto wcs = wait(1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wcs[0].opcode, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(remote.bytes, local.bytes);

    ibv_sge r = sge(back, 0, 4096);
    wr.wr_id = 31;
    wr.sg_list = &r;
    wr.opcode = IBV_WR_RDMA_READ;
    ASSERT_EQ(post_send(a, wr), 0);
    wcs = wait(1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wcs[0].opcode, IBV_WC_RDMA_READ);
    EXPECT_EQ(wcs[0].byte_len, 4096u);
    EXPECT_EQ(back.bytes, local.bytes);
}

TEST_F(RxeVerbs, RdmaWriteWithImmediateConsumesAReceive) {
    ibv_qp* a = make_qp(IBV_QPT_RC);
    ibv_qp* b = make_qp(IBV_QPT_RC);
    ASSERT_TRUE(a && b);
    connect(a, b);
    Buffer& local = buffer(64, kAllAccess, 0x42);
    Buffer& remote = buffer(64);
    ASSERT_EQ(post_recv(b, 40, {}), 0);
    ibv_sge s = sge(local, 0, 64);
    ibv_send_wr wr{};
    wr.wr_id = 41;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(77);
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote.addr();
    wr.wr.rdma.rkey = remote.mr->rkey;
    ASSERT_EQ(post_send(a, wr), 0);
    auto wcs = wait(2);
    const ibv_wc* rw = find(wcs, 40);
    ASSERT_TRUE(rw);
    EXPECT_EQ(rw->status, IBV_WC_SUCCESS);
    EXPECT_EQ(rw->opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(rw->byte_len, 64u);
    EXPECT_EQ(ntohl(rw->imm_data), 77u);
    EXPECT_EQ(remote.bytes, local.bytes);
}

TEST_F(RxeVerbs, AtomicsFetchAddAndCompareSwap) {
    ibv_qp* a = make_qp(IBV_QPT_RC);
    ibv_qp* b = make_qp(IBV_QPT_RC);
    ASSERT_TRUE(a && b);
    connect(a, b);
    Buffer& remote = buffer(64);
    Buffer& result = buffer(64);
    uint64_t start = 1000;
    memcpy(remote.bytes.data() + 8, &start, 8);

    ibv_sge s = sge(result, 0, 8);
    ibv_send_wr wr{};
    wr.wr_id = 50;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.atomic.remote_addr = remote.addr(8);
    wr.wr.atomic.rkey = remote.mr->rkey;
    wr.wr.atomic.compare_add = 234;
    ASSERT_EQ(post_send(a, wr), 0);
    auto wcs = wait(1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wcs[0].opcode, IBV_WC_FETCH_ADD);
    uint64_t v = 0;
    memcpy(&v, result.bytes.data(), 8);
    EXPECT_EQ(v, 1000u);  // the old value comes back
    memcpy(&v, remote.bytes.data() + 8, 8);
    EXPECT_EQ(v, 1234u);

    // A compare that fails leaves memory alone, one that matches swaps.
    s = sge(result, 8, 8);
    wr.wr_id = 51;
    wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
    wr.wr.atomic.compare_add = 1;
    wr.wr.atomic.swap = 5;
    ASSERT_EQ(post_send(a, wr), 0);
    wcs = wait(1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wcs[0].opcode, IBV_WC_COMP_SWAP);
    memcpy(&v, result.bytes.data() + 8, 8);
    EXPECT_EQ(v, 1234u);
    memcpy(&v, remote.bytes.data() + 8, 8);
    EXPECT_EQ(v, 1234u);

    s = sge(result, 16, 8);
    wr.wr_id = 52;
    wr.wr.atomic.compare_add = 1234;
    wr.wr.atomic.swap = 99;
    ASSERT_EQ(post_send(a, wr), 0);
    wcs = wait(1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    memcpy(&v, result.bytes.data() + 16, 8);
    EXPECT_EQ(v, 1234u);
    memcpy(&v, remote.bytes.data() + 8, 8);
    EXPECT_EQ(v, 99u);
}

// ----------------------------------------------------------- UD and UC

TEST_F(RxeVerbs, UdSendCarriesGrh) {
    ibv_qp* a = make_qp(IBV_QPT_UD);
    ibv_qp* b = make_qp(IBV_QPT_UD);
    ASSERT_TRUE(a && b);
    bring_up(a, 0);
    bring_up(b, 0);
    ibv_ah_attr aa = ah_attr();
    ibv_ah* ah = ibv_create_ah(pd_, &aa);
    ASSERT_NE(ah, nullptr) << strerror(errno);
    Buffer& src = buffer(100, kAllAccess, 0x33);
    Buffer& dst = buffer(40 + 100);
    ASSERT_EQ(post_recv(b, 60, {sge(dst, 0, 140)}), 0);
    ibv_sge s = sge(src, 0, 100);
    ibv_send_wr wr{};
    wr.wr_id = 61;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(5);
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = b->qp_num;
    wr.wr.ud.remote_qkey = kQkey;
    ASSERT_EQ(post_send(a, wr), 0);
    auto wcs = wait(2);
    const ibv_wc* rw = find(wcs, 60);
    ASSERT_TRUE(rw);
    EXPECT_EQ(rw->status, IBV_WC_SUCCESS);
    EXPECT_TRUE(rw->wc_flags & IBV_WC_GRH);
    EXPECT_TRUE(rw->wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(rw->byte_len, 140u);  // GRH included
    EXPECT_EQ(rw->src_qp, a->qp_num);
    EXPECT_EQ(0, memcmp(dst.bytes.data() + 40, src.bytes.data(), 100));
    // RoCEv2 over IPv4: the IPv4 header sits in the GRH's last 20 bytes.
    EXPECT_EQ(dst.bytes[20] >> 4, 4);
    EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

// The reply path: an AH built by libibverbs from the completion and its
// GRH (RoCEv2/IPv4 here), used by the receiver to answer.
TEST_F(RxeVerbs, UdReplyThroughAhFromCompletion) {
    ibv_qp* a = make_qp(IBV_QPT_UD);
    ibv_qp* b = make_qp(IBV_QPT_UD);
    ASSERT_TRUE(a && b);
    bring_up(a, 0);
    bring_up(b, 0);
    ibv_ah_attr aa = ah_attr();
    ibv_ah* ah = ibv_create_ah(pd_, &aa);
    ASSERT_NE(ah, nullptr) << strerror(errno);
    Buffer& buf = buffer(4096);
    auto send = [&](ibv_qp* from, ibv_ah* to, uint32_t qpn, uint64_t id) {
        ibv_sge s = sge(buf, 2048, 16);
        ibv_send_wr wr{};
        wr.wr_id = id;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.ud.ah = to;
        wr.wr.ud.remote_qpn = qpn;
        wr.wr.ud.remote_qkey = kQkey;
        return post_send(from, wr);
    };
    ASSERT_EQ(post_recv(b, 1, {sge(buf, 0, 40 + 16)}), 0);
    ASSERT_EQ(post_recv(a, 2, {sge(buf, 1024, 40 + 16)}), 0);
    ASSERT_EQ(send(a, ah, b->qp_num, 3), 0);
    auto wcs = wait(2);
    const ibv_wc* rw = find(wcs, 1);
    ASSERT_TRUE(rw);
    ibv_wc first = *rw;
    ibv_ah* back = ibv_create_ah_from_wc(pd_, &first, reinterpret_cast<ibv_grh*>(buf.bytes.data()), kPort);
    EXPECT_NE(back, nullptr) << strerror(errno);
    if (back) {
        ASSERT_EQ(send(b, back, first.src_qp, 4), 0);
        wcs = wait(2);
        ASSERT_TRUE(find(wcs, 2));
        EXPECT_EQ(find(wcs, 2)->src_qp, b->qp_num);
        EXPECT_EQ(ibv_destroy_ah(back), 0);
    }
    EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

TEST_F(RxeVerbs, UcSend) {
    ibv_qp* a = make_qp(IBV_QPT_UC);
    ibv_qp* b = make_qp(IBV_QPT_UC);
    ASSERT_TRUE(a && b);
    connect(a, b);
    Buffer& src = buffer(2000, kAllAccess, 0x77);
    Buffer& dst = buffer(2000);
    ASSERT_EQ(post_recv(b, 70, {sge(dst, 0, 2000)}), 0);
    ibv_sge s = sge(src, 0, 2000);
    ibv_send_wr wr{};
    wr.wr_id = 71;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ASSERT_EQ(post_send(a, wr), 0);
    auto wcs = wait(2);
    const ibv_wc* rw = find(wcs, 70);
    ASSERT_TRUE(rw);
    EXPECT_EQ(rw->status, IBV_WC_SUCCESS);
    EXPECT_EQ(rw->byte_len, 2000u);
    EXPECT_EQ(dst.bytes, src.bytes);
}

TEST_F(RxeVerbs, MulticastAttachDetach) {
    ibv_qp* q = make_qp(IBV_QPT_UD);
    ASSERT_TRUE(q);
    bring_up(q, 0);
    ibv_gid mgid{};
    mgid.raw[0] = 0xff;
    mgid.raw[1] = 0x0e;
    mgid.raw[15] = 0x42;
    EXPECT_EQ(ibv_attach_mcast(q, &mgid, 0), 0);
    EXPECT_EQ(ibv_detach_mcast(q, &mgid, 0), 0);
}

// ------------------------------------------------------------------ SRQ

TEST_F(RxeVerbs, SrqFeedsTwoQpsAndResizes) {
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 4;
    sa.attr.max_sge = 2;
    ibv_srq* srq = ibv_create_srq(pd_, &sa);
    ASSERT_NE(srq, nullptr) << strerror(errno);
    EXPECT_GE(sa.attr.max_wr, 4u);
    ibv_qp* a = make_qp(IBV_QPT_RC);
    ibv_qp* b = make_qp(IBV_QPT_RC, srq);
    ASSERT_TRUE(a && b);
    connect(a, b);
    // A QP bound to an SRQ takes no receives of its own.
    Buffer& dst = buffer(1024);
    EXPECT_EQ(post_recv(b, 1, {sge(dst, 0, 8)}), EINVAL);

    auto srq_recv = [&](uint64_t id, size_t off) {
        ibv_sge g = sge(dst, off, 64);
        ibv_recv_wr wr{};
        wr.wr_id = id;
        wr.sg_list = &g;
        wr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        return ibv_post_srq_recv(srq, &wr, &bad);
    };
    ASSERT_EQ(srq_recv(80, 0), 0);
    ASSERT_EQ(srq_recv(81, 64), 0);

    // Grow the ring with receives still queued: they survive the move.
    ibv_srq_attr mod{};
    mod.max_wr = 32;
    ASSERT_EQ(ibv_modify_srq(srq, &mod, IBV_SRQ_MAX_WR), 0);
    ibv_srq_attr q{};
    ASSERT_EQ(ibv_query_srq(srq, &q), 0);
    EXPECT_GE(q.max_wr, 32u);
    for (int i = 0; i < 8; ++i)
        ASSERT_EQ(srq_recv(82 + i, 128 + 64 * i), 0);
    mod.srq_limit = 2;
    EXPECT_EQ(ibv_modify_srq(srq, &mod, IBV_SRQ_LIMIT), 0);

    Buffer& src = buffer(64, kAllAccess, 0x99);
    ibv_sge s = sge(src, 0, 64);
    for (int i = 0; i < 3; ++i) {
        ibv_send_wr wr{};
        wr.wr_id = 90 + i;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        ASSERT_EQ(post_send(a, wr), 0);
    }
    auto wcs = wait(6);
    // Receives are taken in posting order, across the resize.
    ASSERT_TRUE(find(wcs, 80) && find(wcs, 81) && find(wcs, 82));
    EXPECT_EQ(find(wcs, 80)->status, IBV_WC_SUCCESS);
    EXPECT_EQ(find(wcs, 82)->byte_len, 64u);
    EXPECT_EQ(0, memcmp(dst.bytes.data() + 128, src.bytes.data(), 64));

    ASSERT_EQ(ibv_destroy_qp(b), 0);
    qps_.pop_back();
    EXPECT_EQ(ibv_destroy_srq(srq), 0);
}

// -------------------------------------------------------- memory windows

TEST_F(RxeVerbs, MemoryWindowType1BindAndRemoteWrite) {
    ibv_qp* a = make_qp(IBV_QPT_RC);
    ibv_qp* b = make_qp(IBV_QPT_RC);
    ASSERT_TRUE(a && b);
    connect(a, b);
    Buffer& target = buffer(256);
    Buffer& src = buffer(32, kAllAccess, 0xab);
    ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_1);
    ASSERT_NE(mw, nullptr) << strerror(errno);
    const uint32_t old_rkey = mw->rkey;
    ibv_mw_bind bind{};
    bind.wr_id = 100;
    bind.send_flags = IBV_SEND_SIGNALED;
    bind.bind_info.mr = target.mr;
    bind.bind_info.addr = target.addr(64);
    bind.bind_info.length = 64;
    bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
    ASSERT_EQ(ibv_bind_mw(b, mw, &bind), 0);
    EXPECT_NE(mw->rkey, old_rkey);
    auto wcs = wait(1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wcs[0].opcode, IBV_WC_BIND_MW);

    ibv_sge s = sge(src, 0, 32);
    ibv_send_wr wr{};
    wr.wr_id = 101;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = target.addr(64);
    wr.wr.rdma.rkey = mw->rkey;
    ASSERT_EQ(post_send(a, wr), 0);
    wcs = wait(1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(0, memcmp(target.bytes.data() + 64, src.bytes.data(), 32));
    EXPECT_EQ(target.bytes[63], 0);
    EXPECT_EQ(ibv_dealloc_mw(mw), 0);
}

TEST_F(RxeVerbs, MemoryWindowType2BindInvalidateAndRemoteInvalidate) {
    ibv_qp* a = make_qp(IBV_QPT_RC);
    ibv_qp* b = make_qp(IBV_QPT_RC);
    ASSERT_TRUE(a && b);
    connect(a, b);
    Buffer& target = buffer(256);
    Buffer& src = buffer(32, kAllAccess, 0xcd);
    Buffer& rbuf = buffer(64);
    ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
    ASSERT_NE(mw, nullptr) << strerror(errno);

    auto bind2 = [&](uint64_t id) {
        ibv_send_wr wr{};
        wr.wr_id = id;
        wr.opcode = IBV_WR_BIND_MW;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.bind_mw.mw = mw;
        wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
        wr.bind_mw.bind_info.mr = target.mr;
        wr.bind_mw.bind_info.addr = target.addr();
        wr.bind_mw.bind_info.length = 128;
        wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        EXPECT_EQ(post_send(b, wr), 0);
        auto wcs = wait(1);
        EXPECT_EQ(wcs.size(), 1u);
        if (wcs.size() == 1) {
            EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wcs[0].status);
            EXPECT_EQ(wcs[0].opcode, IBV_WC_BIND_MW);
        }
        mw->rkey = wr.bind_mw.rkey;  // type 2: the application keeps the key
    };
    auto remote_write = [&](uint64_t id) {
        ibv_sge s = sge(src, 0, 32);
        ibv_send_wr wr{};
        wr.wr_id = id;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = target.addr();
        wr.wr.rdma.rkey = mw->rkey;
        EXPECT_EQ(post_send(a, wr), 0);
        auto wcs = wait(1);
        return wcs.empty() ? IBV_WC_GENERAL_ERR : wcs[0].status;
    };

    bind2(110);
    EXPECT_EQ(remote_write(111), IBV_WC_SUCCESS);
    EXPECT_EQ(0, memcmp(target.bytes.data(), src.bytes.data(), 32));

    // Local invalidate through the owner's send queue.
    ibv_send_wr inv{};
    inv.wr_id = 112;
    inv.opcode = IBV_WR_LOCAL_INV;
    inv.send_flags = IBV_SEND_SIGNALED;
    inv.invalidate_rkey = mw->rkey;
    ASSERT_EQ(post_send(b, inv), 0);
    auto wcs = wait(1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wcs[0].opcode, IBV_WC_LOCAL_INV);
    EXPECT_EQ(remote_write(113), IBV_WC_REM_ACCESS_ERR);
    // The failed access moved both QPs to the error state; start over.
    for (ibv_qp* q : {a, b}) {
        ibv_qp_attr r{};
        r.qp_state = IBV_QPS_RESET;
        ASSERT_EQ(ibv_modify_qp(q, &r, IBV_QP_STATE), 0);
    }
    while (true) {  // drop flushed completions
        ibv_wc wc;
        if (ibv_poll_cq(cq_, 1, &wc) <= 0)
            break;
    }
    connect(a, b);

    // Rebind, then the peer invalidates it with a send.
    bind2(114);
    ASSERT_EQ(post_recv(b, 115, {sge(rbuf, 0, 64)}), 0);
    ibv_sge s = sge(src, 0, 8);
    ibv_send_wr si{};
    si.wr_id = 116;
    si.sg_list = &s;
    si.num_sge = 1;
    si.opcode = IBV_WR_SEND_WITH_INV;
    si.send_flags = IBV_SEND_SIGNALED;
    si.invalidate_rkey = mw->rkey;
    ASSERT_EQ(post_send(a, si), 0);
    wcs = wait(2);
    const ibv_wc* rw = find(wcs, 115);
    ASSERT_TRUE(rw);
    EXPECT_EQ(rw->status, IBV_WC_SUCCESS);
    EXPECT_EQ(rw->invalidated_rkey, mw->rkey);
    // The kernel reports its own "with invalidate" bit (1 << 2) here, which
    // is IBV_WC_IP_CSUM_OK's value in verbs.h; the reference passes it on.
    EXPECT_TRUE(rw->wc_flags & (IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK));
    EXPECT_EQ(remote_write(117), IBV_WC_REM_ACCESS_ERR);
    EXPECT_EQ(ibv_dealloc_mw(mw), 0);
}

// ------------------------------------------------------------------- CQ

TEST_F(RxeVerbs, CqResizeKeepsQueuedCompletions) {
    ibv_cq* cq = ibv_create_cq(ctx_, 4, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    EXPECT_GE(cq->cqe, 4);
    ibv_qp* a = make_qp(IBV_QPT_RC, nullptr, 16, 64, cq);
    ibv_qp* b = make_qp(IBV_QPT_RC, nullptr, 16, 64, cq);
    ASSERT_TRUE(a && b);
    connect(a, b);
    Buffer& src = buffer(8, kAllAccess, 1);
    Buffer& remote = buffer(8);
    auto write = [&](uint64_t id) {
        ibv_sge s = sge(src, 0, 8);
        ibv_send_wr wr{};
        wr.wr_id = id;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = remote.addr();
        wr.wr.rdma.rkey = remote.mr->rkey;
        return post_send(a, wr);
    };
    for (int i = 0; i < 3; ++i)
        ASSERT_EQ(write(200 + i), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // Smaller than what is queued: refused.
    EXPECT_EQ(ibv_resize_cq(cq, 1), EINVAL);
    ASSERT_EQ(ibv_resize_cq(cq, 64), 0);
    EXPECT_GE(cq->cqe, 64);
    for (int i = 0; i < 20; ++i)
        ASSERT_EQ(write(203 + i), 0);
    auto wcs = wait(23, cq);
    ASSERT_EQ(wcs.size(), 23u);
    for (int i = 0; i < 23; ++i) {
        EXPECT_EQ(wcs[i].wr_id, 200u + i);  // in order, none lost
        EXPECT_EQ(wcs[i].status, IBV_WC_SUCCESS);
    }
    for (ibv_qp* q : {b, a}) {
        EXPECT_EQ(ibv_destroy_qp(q), 0);
        qps_.pop_back();
    }
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(RxeVerbs, CqOverflowRaisesAsyncEvent) {
    ibv_cq* cq = ibv_create_cq(ctx_, 2, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    ibv_qp* a = make_qp(IBV_QPT_RC, nullptr, 32, 64, cq);
    ibv_qp* b = make_qp(IBV_QPT_RC, nullptr, 32, 64, cq);
    ASSERT_TRUE(a && b);
    connect(a, b);
    Buffer& src = buffer(8, kAllAccess, 1);
    Buffer& remote = buffer(8);
    for (int i = 0; i < cq->cqe + 4; ++i) {
        ibv_sge s = sge(src, 0, 8);
        ibv_send_wr wr{};
        wr.wr_id = i;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = remote.addr();
        wr.wr.rdma.rkey = remote.mr->rkey;
        ASSERT_EQ(post_send(a, wr), 0);
    }
    pollfd p{ctx_->async_fd, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 2000), 1) << "no async event";
    ibv_async_event ev{};
    ASSERT_EQ(ibv_get_async_event(ctx_, &ev), 0);
    EXPECT_EQ(ev.event_type, IBV_EVENT_CQ_ERR);
    if (ev.event_type == IBV_EVENT_CQ_ERR) {
        EXPECT_EQ(ev.element.cq, cq);
    }
    ibv_ack_async_event(&ev);
    // Drain any further events (the QP may report it went to error too).
    while (poll(&p, 1, 100) == 1) {
        ASSERT_EQ(ibv_get_async_event(ctx_, &ev), 0);
        ibv_ack_async_event(&ev);
    }
    for (ibv_qp* q : {b, a}) {
        EXPECT_EQ(ibv_destroy_qp(q), 0);
        qps_.pop_back();
    }
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(RxeVerbs, CompletionChannelEvent) {
    ibv_comp_channel* ch = ibv_create_comp_channel(ctx_);
    ASSERT_NE(ch, nullptr);
    int tag = 0;
    ibv_cq* cq = ibv_create_cq(ctx_, 16, &tag, ch, 0);
    ASSERT_NE(cq, nullptr);
    EXPECT_EQ(ibv_destroy_comp_channel(ch), EBUSY);
    ibv_qp* a = make_qp(IBV_QPT_RC, nullptr, 16, 64, cq);
    ibv_qp* b = make_qp(IBV_QPT_RC, nullptr, 16, 64, cq);
    ASSERT_TRUE(a && b);
    connect(a, b);
    ASSERT_EQ(ibv_req_notify_cq(cq, 0), 0);
    Buffer& src = buffer(8, kAllAccess, 1);
    Buffer& dst = buffer(8);
    ASSERT_EQ(post_recv(b, 300, {sge(dst, 0, 8)}), 0);
    ibv_sge s = sge(src, 0, 8);
    ibv_send_wr wr{};
    wr.wr_id = 301;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ASSERT_EQ(post_send(a, wr), 0);
    pollfd p{ch->fd, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 2000), 1) << "no completion event";
    ibv_cq* ev_cq = nullptr;
    void* ev_ctx = nullptr;
    ASSERT_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
    EXPECT_EQ(ev_cq, cq);
    EXPECT_EQ(ev_ctx, &tag);
    ibv_ack_cq_events(cq, 1);
    auto wcs = wait(2, cq);
    EXPECT_EQ(wcs.size(), 2u);
    for (ibv_qp* q : {b, a}) {
        EXPECT_EQ(ibv_destroy_qp(q), 0);
        qps_.pop_back();
    }
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
    EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
}

TEST_F(RxeVerbs, ExtendedCqPolling) {
    for (bool single : {false, true}) {
        SCOPED_TRACE(single ? "single-threaded CQ" : "default CQ");
        [&] {
            ibv_cq_init_attr_ex ca{};
            ca.cqe = 16;
            ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM;
            if (single) {
                ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
                ca.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
            }
            ibv_cq_ex* cqx = ibv_create_cq_ex(ctx_, &ca);
            ASSERT_NE(cqx, nullptr) << strerror(errno);
            // Single-threaded CQs poll through the lock-free variants.
            static void* locked_start = nullptr;
            if (!single)
                locked_start = reinterpret_cast<void*>(cqx->start_poll);
            else
                EXPECT_NE(reinterpret_cast<void*>(cqx->start_poll), locked_start);
            ibv_cq_init_attr_ex bad = ca;
            bad.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
            EXPECT_EQ(ibv_create_cq_ex(ctx_, &bad), nullptr);
            EXPECT_EQ(errno, EOPNOTSUPP);
            ibv_cq* cq = ibv_cq_ex_to_cq(cqx);
            ibv_qp* a = make_qp(IBV_QPT_RC, nullptr, 16, 64, cq);
            ibv_qp* b = make_qp(IBV_QPT_RC, nullptr, 16, 64, cq);
            ASSERT_TRUE(a && b);
            connect(a, b);
            ibv_poll_cq_attr pa{};
            EXPECT_EQ(ibv_start_poll(cqx, &pa), ENOENT);
            Buffer& src = buffer(48, kAllAccess, 2);
            Buffer& dst = buffer(48);
            ASSERT_EQ(post_recv(b, 400, {sge(dst, 0, 48)}), 0);
            ibv_sge s = sge(src, 0, 48);
            ibv_send_wr wr{};
            wr.wr_id = 401;
            wr.sg_list = &s;
            wr.num_sge = 1;
            wr.opcode = IBV_WR_SEND_WITH_IMM;
            wr.imm_data = htonl(123);
            wr.send_flags = IBV_SEND_SIGNALED;
            ASSERT_EQ(post_send(a, wr), 0);
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            int seen = 0;
            int rc = ibv_start_poll(cqx, &pa);
            ASSERT_EQ(rc, 0);
            do {
                ++seen;
                EXPECT_EQ(cqx->status, IBV_WC_SUCCESS);
                if (cqx->wr_id == 400) {
                    EXPECT_EQ(ibv_wc_read_opcode(cqx), IBV_WC_RECV);
                    EXPECT_EQ(ibv_wc_read_byte_len(cqx), 48u);
                    EXPECT_EQ(ntohl(ibv_wc_read_imm_data(cqx)), 123u);
                    EXPECT_TRUE(ibv_wc_read_wc_flags(cqx) & IBV_WC_WITH_IMM);
                    EXPECT_EQ(ibv_wc_read_qp_num(cqx), b->qp_num);
                } else {
                    EXPECT_EQ(cqx->wr_id, 401u);
                    EXPECT_EQ(ibv_wc_read_opcode(cqx), IBV_WC_SEND);
                }
            } while ((rc = ibv_next_poll(cqx)) == 0);
            EXPECT_EQ(rc, ENOENT);
            ibv_end_poll(cqx);
            EXPECT_EQ(seen, 2);
            EXPECT_EQ(ibv_start_poll(cqx, &pa), ENOENT);  // both consumed, nothing more
            ibv_wc w;
            EXPECT_EQ(ibv_poll_cq(cq, 1, &w), 0);
            for (ibv_qp* q : {b, a}) {
                EXPECT_EQ(ibv_destroy_qp(q), 0);
                qps_.pop_back();
            }
            EXPECT_EQ(ibv_destroy_cq(cq), 0);
        }();
    }
}

// ------------------------------------------------------------ ibv_wr_*

TEST_F(RxeVerbs, ExtendedQpSendOps) {
    ibv_qp_init_attr_ex xa{};
    xa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    xa.pd = pd_;
    xa.send_cq = cq_;
    xa.recv_cq = cq_;
    xa.qp_type = IBV_QPT_RC;
    xa.cap.max_send_wr = 16;
    xa.cap.max_recv_wr = 16;
    xa.cap.max_send_sge = 2;
    xa.cap.max_recv_sge = 2;
    xa.cap.max_inline_data = 32;
    xa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
        IBV_QP_EX_WITH_SEND_WITH_IMM;
    ibv_qp* a = ibv_create_qp_ex(ctx_, &xa);
    ASSERT_NE(a, nullptr) << strerror(errno);
    qps_.push_back(a);
    ibv_qp_ex* qx = ibv_qp_to_qp_ex(a);
    ASSERT_NE(qx, nullptr);
    // UD offers no RDMA: asking for it is refused.
    ibv_qp_init_attr_ex ud = xa;
    ud.qp_type = IBV_QPT_UD;
    EXPECT_EQ(ibv_create_qp_ex(ctx_, &ud), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP);

    ibv_qp* b = make_qp(IBV_QPT_RC);
    ASSERT_TRUE(b);
    EXPECT_EQ(ibv_qp_to_qp_ex(b), nullptr);
    connect(a, b);
    Buffer& src = buffer(64, kAllAccess, 0x61);
    Buffer& dst = buffer(64);
    Buffer& remote = buffer(64);
    ASSERT_EQ(post_recv(b, 500, {sge(dst, 0, 64)}), 0);

    ibv_wr_start(qx);
    qx->wr_id = 501;
    qx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send_imm(qx, htonl(9));
    ibv_wr_set_sge(qx, src.mr->lkey, src.addr(), 16);
    qx->wr_id = 502;
    ibv_wr_rdma_write(qx, remote.mr->rkey, remote.addr());
    ibv_wr_set_inline_data(qx, const_cast<char*>("written inline"), 14);
    qx->wr_id = 503;
    ibv_wr_atomic_fetch_add(qx, remote.mr->rkey, remote.addr(32), 5);
    ibv_wr_set_sge(qx, src.mr->lkey, src.addr(48), 8);
    ASSERT_EQ(ibv_wr_complete(qx), 0);
    auto wcs = wait(4);
    for (uint64_t id : {500, 501, 502, 503}) {
        const ibv_wc* w = find(wcs, id);
        ASSERT_TRUE(w) << id;
        EXPECT_EQ(w->status, IBV_WC_SUCCESS) << id;
    }
    EXPECT_EQ(ntohl(find(wcs, 500)->imm_data), 9u);
    EXPECT_EQ(0, memcmp(dst.bytes.data(), src.bytes.data(), 16));
    EXPECT_EQ(std::string(reinterpret_cast<char*>(remote.bytes.data()), 14), "written inline");
    uint64_t v = 0;
    memcpy(&v, remote.bytes.data() + 32, 8);
    EXPECT_EQ(v, 5u);

    // A batch with an error posts nothing; an aborted one neither.
    ibv_wr_start(qx);
    qx->wr_id = 510;
    ibv_wr_send(qx);
    ibv_wr_set_inline_data(qx, src.bytes.data(), 64);  // over max_inline
    EXPECT_EQ(ibv_wr_complete(qx), EINVAL);
    ibv_wr_start(qx);
    ibv_wr_send(qx);
    ibv_wr_set_sge(qx, src.mr->lkey, src.addr(), 8);
    ibv_wr_abort(qx);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ibv_wc w;
    EXPECT_EQ(ibv_poll_cq(cq_, 1, &w), 0);
}

TEST_F(RxeVerbs, ExtendedQpUdSendWithInlineData) {
    ibv_qp_init_attr_ex xa{};
    xa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    xa.pd = pd_;
    xa.send_cq = cq_;
    xa.recv_cq = cq_;
    xa.qp_type = IBV_QPT_UD;
    xa.cap.max_send_wr = 8;
    xa.cap.max_recv_wr = 8;
    xa.cap.max_send_sge = 1;
    xa.cap.max_recv_sge = 1;
    xa.cap.max_inline_data = 64;
    xa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
    ibv_qp* a = ibv_create_qp_ex(ctx_, &xa);
    ASSERT_NE(a, nullptr) << strerror(errno);
    qps_.push_back(a);
    EXPECT_GE(xa.cap.max_inline_data, 64u);
    ibv_qp* b = make_qp(IBV_QPT_UD);
    ASSERT_TRUE(b);
    bring_up(a, 0);
    bring_up(b, 0);
    ibv_ah_attr aa = ah_attr();
    ibv_ah* ah = ibv_create_ah(pd_, &aa);
    ASSERT_NE(ah, nullptr);
    Buffer& dst = buffer(40 + 64);
    ASSERT_EQ(post_recv(b, 900, {sge(dst, 0, 40 + 64)}), 0);
    ibv_qp_ex* qx = ibv_qp_to_qp_ex(a);
    ASSERT_NE(qx, nullptr);
    ibv_wr_start(qx);
    qx->wr_id = 901;
    qx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send_imm(qx, htonl(42));
    ibv_wr_set_ud_addr(qx, ah, b->qp_num, kQkey);
    const ibv_data_buf parts[2] = {{const_cast<char*>("two "), 4}, {const_cast<char*>("pieces"), 6}};
    ibv_wr_set_inline_data_list(qx, 2, parts);
    ASSERT_EQ(ibv_wr_complete(qx), 0);
    auto wcs = wait(2);
    const ibv_wc* rw = find(wcs, 900);
    ASSERT_TRUE(rw);
    EXPECT_EQ(rw->status, IBV_WC_SUCCESS);
    EXPECT_EQ(rw->byte_len, 40u + 10u);
    EXPECT_EQ(rw->src_qp, a->qp_num);
    EXPECT_EQ(ntohl(rw->imm_data), 42u);
    EXPECT_EQ(std::string(reinterpret_cast<char*>(dst.bytes.data()) + 40, 10), "two pieces");
    EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

// ---------------------------------------------------------------- errors

TEST_F(RxeVerbs, InvalidLkeyFailsInTheCompletion) {
    ibv_qp* a = make_qp(IBV_QPT_RC);
    ibv_qp* b = make_qp(IBV_QPT_RC);
    ASSERT_TRUE(a && b);
    connect(a, b);
    Buffer& remote = buffer(64);
    Buffer& src = buffer(64);
    ibv_sge s{src.addr(), 64, src.mr->lkey ^ 0x5500};
    ibv_send_wr wr{};
    wr.wr_id = 600;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote.addr();
    wr.wr.rdma.rkey = remote.mr->rkey;
    ASSERT_EQ(post_send(a, wr), 0);  // accepted: the kernel finds out
    auto wcs = wait(1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].wr_id, 600u);
    // The kernel's MR lookup fails with EINVAL, which rxe reports as a local
    // QP operation error (a key that exists but does not cover the range
    // would be a protection error).
    EXPECT_EQ(wcs[0].status, IBV_WC_LOC_QP_OP_ERR) << ibv_wc_status_str(wcs[0].status);
}

TEST_F(RxeVerbs, PostingChecks) {
    ibv_qp* a = make_qp(IBV_QPT_RC, nullptr, 4, 16);
    ibv_qp* b = make_qp(IBV_QPT_RC);
    ASSERT_TRUE(a && b);
    connect(a, b);
    ibv_qp_attr qa{};
    ibv_qp_init_attr qi{};
    ASSERT_EQ(ibv_query_qp(a, &qa, IBV_QP_STATE | IBV_QP_CAP, &qi), 0);
    EXPECT_EQ(qa.qp_state, IBV_QPS_RTS);
    const uint32_t max_sge = qa.cap.max_send_sge;
    const uint32_t max_inline = qa.cap.max_inline_data;
    Buffer& buf = buffer(4096);

    // Too many SGEs: EINVAL, and bad_wr names the culprit.
    std::vector<ibv_sge> many(max_sge + 1, sge(buf, 0, 8));
    ibv_send_wr ok{};
    ok.wr_id = 700;
    ok.opcode = IBV_WR_RDMA_WRITE;
    ok.sg_list = many.data();
    ok.num_sge = 1;
    ok.wr.rdma.remote_addr = buf.addr(1024);
    ok.wr.rdma.rkey = buf.mr->rkey;
    ok.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr over = ok;
    over.wr_id = 701;
    over.num_sge = static_cast<int>(max_sge + 1);
    ok.next = &over;
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(ibv_post_send(a, &ok, &bad), EINVAL);
    EXPECT_EQ(bad, &over);
    auto wcs = wait(1);  // the first one went out
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].wr_id, 700u);

    // Inline data beyond what the QP was granted.
    std::vector<uint8_t> big(max_inline + 1, 1);
    ibv_sge is{reinterpret_cast<uintptr_t>(big.data()), static_cast<uint32_t>(big.size()), 0};
    ibv_send_wr inl{};
    inl.opcode = IBV_WR_SEND;
    inl.sg_list = &is;
    inl.num_sge = 1;
    inl.send_flags = IBV_SEND_INLINE;
    EXPECT_EQ(post_send(a, inl), EINVAL);

    // Atomics need 8 bytes at an 8-byte aligned remote address.
    ibv_sge as = sge(buf, 0, 8);
    ibv_send_wr at{};
    at.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    at.sg_list = &as;
    at.num_sge = 1;
    at.wr.atomic.remote_addr = buf.addr(1028);
    at.wr.atomic.rkey = buf.mr->rkey;
    EXPECT_EQ(post_send(a, at), EINVAL);
    as.length = 4;
    at.wr.atomic.remote_addr = buf.addr(1024);
    EXPECT_EQ(post_send(a, at), EINVAL);

    // Receive side: too many SGEs, then a full ring.
    ASSERT_EQ(ibv_query_qp(b, &qa, IBV_QP_CAP, &qi), 0);
    std::vector<ibv_sge> rs(qa.cap.max_recv_sge + 1, sge(buf, 0, 8));
    ibv_recv_wr rw{};
    rw.sg_list = rs.data();
    rw.num_sge = static_cast<int>(rs.size());
    ibv_recv_wr* rbad = nullptr;
    EXPECT_EQ(ibv_post_recv(b, &rw, &rbad), EINVAL);
    EXPECT_EQ(rbad, &rw);
    rw.num_sge = 1;
    int posted = 0;
    int rc = 0;
    while ((rc = ibv_post_recv(b, &rw, &rbad)) == 0 && posted < 100000)
        ++posted;
    EXPECT_EQ(rc, ENOMEM);
    EXPECT_GE(static_cast<uint32_t>(posted), qa.cap.max_recv_wr);

    // Send ring full: unsignaled writes to a QP with nobody draining... the
    // kernel drains fast, so fill with a single long list instead.
    std::vector<ibv_send_wr> chain(64);
    ibv_sge one = sge(buf, 0, 8);
    for (size_t i = 0; i < chain.size(); ++i) {
        chain[i] = ok;
        chain[i].sg_list = &one;
        chain[i].num_sge = 1;
        chain[i].send_flags = 0;
        chain[i].wr_id = 800 + i;
        chain[i].next = i + 1 < chain.size() ? &chain[i + 1] : nullptr;
    }
    bad = nullptr;
    EXPECT_EQ(ibv_post_send(a, chain.data(), &bad), ENOMEM);
    ASSERT_NE(bad, nullptr);
    EXPECT_GE(bad - chain.data(), 4);  // at least the granted depth went in
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

TEST_F(RxeVerbs, DestroyOrderAndBusyPd) {
    ibv_pd* pd = ibv_alloc_pd(ctx_);
    ASSERT_NE(pd, nullptr);
    std::vector<uint8_t> mem(4096);
    ibv_mr* mr = ibv_reg_mr(pd, mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(mr, nullptr);
    EXPECT_EQ(ibv_dealloc_pd(pd), EBUSY);

    // rereg goes to the kernel as is: newer rxe kernels change the PD and
    // the access flags, older ones (6.1) answer EOPNOTSUPP for everything.
    ibv_pd* pd2 = ibv_alloc_pd(ctx_);
    ASSERT_NE(pd2, nullptr);
    errno = 0;
    const int rr = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0);
    if (rr == IBV_REREG_MR_ERR_CMD) {
        EXPECT_EQ(errno, EOPNOTSUPP);
        EXPECT_EQ(mr->pd, pd);
        // Our MR still works: move it by deregistering and registering again.
        EXPECT_EQ(ibv_dereg_mr(mr), 0);
        mr = ibv_reg_mr(pd2, mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
        ASSERT_NE(mr, nullptr);
    } else {
        ASSERT_EQ(rr, 0);
        EXPECT_EQ(mr->pd, pd2);
        EXPECT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                               IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ),
                  0);
    }
    EXPECT_EQ(ibv_dealloc_pd(pd), 0);
    EXPECT_EQ(ibv_dealloc_pd(pd2), EBUSY);

    ibv_mw* mw = ibv_alloc_mw(pd2, IBV_MW_TYPE_2);
    ASSERT_NE(mw, nullptr);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    EXPECT_EQ(ibv_dealloc_pd(pd2), EBUSY);  // the window still holds it
    EXPECT_EQ(ibv_dealloc_mw(mw), 0);

    ibv_ah_attr aa = ah_attr();
    ibv_ah* ah = ibv_create_ah(pd2, &aa);
    ASSERT_NE(ah, nullptr) << strerror(errno);
    EXPECT_EQ(ibv_dealloc_pd(pd2), EBUSY);
    EXPECT_EQ(ibv_destroy_ah(ah), 0);
    EXPECT_EQ(ibv_dealloc_pd(pd2), 0);

    // A CQ in use by a QP cannot go first.
    ibv_cq* cq = ibv_create_cq(ctx_, 8, nullptr, nullptr, 0);
    ASSERT_NE(cq, nullptr);
    ibv_qp* qp = make_qp(IBV_QPT_RC, nullptr, 4, 0, cq);
    ASSERT_TRUE(qp);
    EXPECT_EQ(ibv_destroy_cq(cq), EBUSY);
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
    qps_.pop_back();
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(RxeVerbs, UnsupportedQpTypeAndCreateErrors) {
    ibv_qp_init_attr a{};
    a.send_cq = cq_;
    a.recv_cq = cq_;
    a.qp_type = IBV_QPT_RAW_PACKET;
    a.cap.max_send_wr = 1;
    a.cap.max_recv_wr = 1;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    EXPECT_EQ(ibv_create_qp(pd_, &a), nullptr);
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = 1u << 30;  // beyond the device's limit
    EXPECT_EQ(ibv_create_qp(pd_, &a), nullptr);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(ibv_create_cq(ctx_, 1 << 30, nullptr, nullptr, 0), nullptr);
    EXPECT_EQ(errno, EINVAL);
}

}  // namespace
