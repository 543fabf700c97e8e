// A fixture for the write-decoder tests: an arena that is the only
// application memory, a fresh uverbs file per test (closed at the end, when
// nothing of it may be left), and helpers that run commands.
#pragma once

#include "cmd_builder.h"
#include "harness.h"

#include <gtest/gtest.h>

namespace uvsim_test {

class WriteTest : public ::testing::Test {
protected:
    // arena layout
    static constexpr size_t kArenaLen = 1u << 20;
    static constexpr size_t kCmd = 0;  // commands
    static constexpr size_t kResp = 0x10000;  // responses
    static constexpr size_t kDb = 0x11000;  // doorbell records (64 bytes apart)
    static constexpr size_t kBufs = 0x20000;  // queue buffers and MRs from here

    static void SetUpTestSuite() { arena_ = new Arena(kArenaLen); }
    static void TearDownTestSuite() {
        delete arena_;
        arena_ = nullptr;
    }

    void SetUp() override {
        memset(arena_->data(), 0, arena_->size());
        arena_->activate();
        file_ = std::make_unique<File>(dev_index());
        next_buf_ = kBufs;
        next_db_ = kDb;
    }

    void TearDown() override {
        file_.reset();
        close_all_channels();
        std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
        EXPECT_TRUE(uvsim::sim().files.empty());
        EXPECT_TRUE(uvsim::sim().qps.empty()) << "a QP outlived its file";
        EXPECT_TRUE(uvsim::sim().cqs.empty()) << "a CQ outlived its file";
        EXPECT_TRUE(uvsim::sim().srqs.empty()) << "an SRQ outlived its file";
        EXPECT_TRUE(uvsim::sim().mrs_by_lkey.empty()) << "an MR outlived its file";
        EXPECT_TRUE(uvsim::sim().channels.empty());
    }

    virtual int dev_index() const { return 0; }

    static uint64_t A(size_t off) { return arena_->addr(off); }
    static uint8_t* P(size_t off) { return arena_->data() + off; }

    // Runs a command from the arena: its length, or a negative errno.
    ssize_t run(const Bytes& b) {
        memcpy(P(kCmd), b.data(), b.size());
        return file_->write(P(kCmd), b.size());
    }
    // Runs a command that must succeed.
    void ok(const Bytes& b) { ASSERT_EQ(run(b), static_cast<ssize_t>(b.size())); }

    template <class T>
    T resp(size_t off = kResp) const {
        T t;
        memcpy(&t, P(off), sizeof t);
        return t;
    }

    // Arena space for a buffer (page aligned) or a doorbell record.
    size_t buf(size_t len) {
        size_t at = next_buf_;
        next_buf_ = (next_buf_ + len + 4095) & ~size_t(4095);
        return at;
    }
    size_t db() {
        size_t at = next_db_;
        next_db_ += 64;
        return at;
    }

    // ---- objects the usual way; each returns its handle
    void context() { ok(get_context(A(kResp))); }
    uint32_t pd() {
        ok(alloc_pd(A(kResp)));
        return resp<ib_uverbs_alloc_pd_resp>().pd_handle;
    }
    uint32_t cq(uint32_t cqe = 15) {
        ok(create_cq(A(kResp), cqe, cq_drv(A(buf(64 * 64 * 16)), A(db()))));
        return resp<ib_uverbs_create_cq_resp>().cq_handle;
    }
    uint32_t qp(uint32_t pdh, uint32_t cqh, uint8_t type = IBV_QPT_RC) {
        QpSpec s;
        s.pd = pdh;
        s.scq = s.rcq = cqh;
        s.type = type;
        ok(create_qp(A(kResp), s, qp_drv(A(buf(0x2000)), A(db()), 16, 16, 6)));
        return resp<ib_uverbs_create_qp_resp>().qp_handle;
    }
    uint32_t srq(uint32_t pdh, uint32_t max_wr = 63, uint32_t max_sge = 2) {
        ok(create_srq(A(kResp), pdh, max_wr, max_sge, A(buf(0x10000)), A(db())));
        return resp<ib_uverbs_create_srq_resp>().srq_handle;
    }
    int modify(const ib_uverbs_modify_qp& m) {
        ssize_t r = run(modify_qp(m));
        return r < 0 ? static_cast<int>(r) : 0;
    }
    ib_uverbs_query_qp_resp query(uint32_t qph) {
        ib_uverbs_query_qp_resp r{};
        EXPECT_GT(run(query_qp(A(kResp), qph)), 0);
        memcpy(&r, P(kResp), sizeof r);
        return r;
    }

    static Arena* arena_;
    std::unique_ptr<File> file_;
    size_t next_buf_ = kBufs, next_db_ = kDb;
};

inline Arena* WriteTest::arena_ = nullptr;

}  // namespace uvsim_test
