// Our mlx5dv.h inline encoders write the same bytes as the reference's.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>

extern "C" {
#define DECLARE_SIDE(side)                                                                                        \
    void side##set_ctrl_seg(void*, uint16_t, uint8_t, uint8_t, uint32_t, uint8_t, uint8_t, uint8_t, uint32_t);    \
    int side##x86_set_ctrl_seg(void*, uint16_t, uint8_t, uint8_t, uint32_t, uint8_t, uint8_t, uint8_t, uint32_t); \
    void side##set_data_seg(void*, uint32_t, uint32_t, uintptr_t);                                                \
    int side##x86_set_data_seg(void*, uint32_t, uint32_t, uintptr_t);                                             \
    void side##set_dgram_seg(void*, uint64_t, uint32_t, uint8_t, uint8_t, uint8_t, uint16_t, uint8_t*, uint8_t,   \
                             uint8_t, uint32_t, uint8_t*);                                                        \
    void side##set_eth_seg(void*, uint8_t, uint16_t, uint16_t, uint8_t*);                                         \
    uint32_t side##cqe_fields(void*, uint8_t);                                                                    \
    uint64_t side##ts_to_ns(const void*, uint64_t);                                                               \
    void side##devx_fields(void*, const uint32_t*, uint64_t, uint64_t*);
DECLARE_SIDE(ref_)
DECLARE_SIDE(ours_)
}

namespace {

class Inline : public ::testing::Test {
protected:
    std::mt19937_64 rng{20240611};
    uint64_t r() { return rng(); }
    // Both buffers start with the same random garbage, so fields an
    // encoder leaves alone must stay equal too.
    void garbage(uint8_t* a, uint8_t* b, size_t n) {
        for (size_t i = 0; i < n; i++)
            a[i] = b[i] = static_cast<uint8_t>(r());
    }
};

TEST_F(Inline, CtrlSeg) {
    for (int i = 0; i < 1000; i++) {
        alignas(16) uint8_t a[16], b[16];
        uint64_t x = r(), y = r();
        uint16_t pi = x;
        uint8_t op = x >> 16, opmod = x >> 24, fm = x >> 32, ds = x >> 40, sig = x >> 48;
        uint32_t qpn = y & 0xffffff, imm = y >> 32;
        garbage(a, b, sizeof(a));
        ref_set_ctrl_seg(a, pi, op, opmod, qpn, fm, ds, sig, imm);
        ours_set_ctrl_seg(b, pi, op, opmod, qpn, fm, ds, sig, imm);
        ASSERT_EQ(0, memcmp(a, b, sizeof(a)));
        garbage(a, b, sizeof(a));
        int ra = ref_x86_set_ctrl_seg(a, pi, op, opmod, qpn, fm, ds, sig, imm);
        int rb = ours_x86_set_ctrl_seg(b, pi, op, opmod, qpn, fm, ds, sig, imm);
        ASSERT_EQ(ra, rb);
        ASSERT_EQ(0, memcmp(a, b, sizeof(a)));
    }
}

TEST_F(Inline, DataSeg) {
    for (int i = 0; i < 1000; i++) {
        alignas(16) uint8_t a[16], b[16];
        uint32_t len = r(), lkey = r();
        uintptr_t addr = r();
        garbage(a, b, sizeof(a));
        ref_set_data_seg(a, len, lkey, addr);
        ours_set_data_seg(b, len, lkey, addr);
        ASSERT_EQ(0, memcmp(a, b, sizeof(a)));
        garbage(a, b, sizeof(a));
        ASSERT_EQ(ref_x86_set_data_seg(a, len, lkey, addr), ours_x86_set_data_seg(b, len, lkey, addr));
        ASSERT_EQ(0, memcmp(a, b, sizeof(a)));
    }
}

TEST_F(Inline, DgramAndEthSeg) {
    for (int i = 0; i < 200; i++) {
        uint8_t a[64], b[64], rmac[6], rgid[16], hdr[18];
        for (auto& c : rmac)
            c = r();
        for (auto& c : rgid)
            c = r();
        for (auto& c : hdr)
            c = r();
        uint64_t key = r(), x = r(), y = r();
        garbage(a, b, sizeof(a));
        ref_set_dgram_seg(a, key, x & 0xffffff, x >> 63, x >> 24, x >> 32, y, rmac, y >> 16, y >> 24, y >> 32, rgid);
        ours_set_dgram_seg(b, key, x & 0xffffff, x >> 63, x >> 24, x >> 32, y, rmac, y >> 16, y >> 24, y >> 32, rgid);
        ASSERT_EQ(0, memcmp(a, b, sizeof(a)));
        uint16_t sz = y % (sizeof(hdr) + 1);
        garbage(a, b, sizeof(a));
        ref_set_eth_seg(a, x, y, sz, hdr);
        ours_set_eth_seg(b, x, y, sz, hdr);
        ASSERT_EQ(0, memcmp(a, b, sizeof(a)));
    }
}

TEST_F(Inline, CqeFields) {
    for (int op_own = 0; op_own < 256; op_own++) {
        for (uint8_t val : {0, 1, 2, 3, 0xff}) {
            uint8_t a[64], b[64];
            garbage(a, b, sizeof(a));
            a[63] = b[63] = op_own;
            ASSERT_EQ(ref_cqe_fields(a, val), ours_cqe_fields(b, val));
            ASSERT_EQ(0, memcmp(a, b, sizeof(a)));
        }
    }
}

TEST_F(Inline, TimestampToNs) {
    for (int i = 0; i < 2000; i++) {
        uint64_t ci[5];  // nsec, last_cycles, frac, mult|shift, mask
        ci[0] = r();
        ci[1] = r();
        ci[2] = r() & 0xffff;
        uint32_t mult = r() & 0xffffff, shift = r() % 32;
        uint64_t mask = (i % 2) ? ~0ull : ((1ull << 48) - 1);
        uint8_t raw[40];
        memcpy(raw, ci, 24);
        memcpy(raw + 24, &mult, 4);
        memcpy(raw + 28, &shift, 4);
        memcpy(raw + 32, &mask, 8);
        uint64_t ts = ci[1] + (r() % 4096) - 2048;
        ASSERT_EQ(ref_ts_to_ns(raw, ts), ours_ts_to_ns(raw, ts));
        ts = r();
        ASSERT_EQ(ref_ts_to_ns(raw, ts), ours_ts_to_ns(raw, ts));
    }
}

TEST_F(Inline, DevxAccessors) {
    for (int i = 0; i < 500; i++) {
        uint8_t a[24], b[24];
        uint32_t v[4] = {uint32_t(r()), uint32_t(r()), uint32_t(r()), uint32_t(r())};
        uint64_t q = r(), oa[5], ob[5];
        garbage(a, b, sizeof(a));
        ref_devx_fields(a, v, q, oa);
        ours_devx_fields(b, v, q, ob);
        ASSERT_EQ(0, memcmp(a, b, sizeof(a)));
        ASSERT_EQ(0, memcmp(oa, ob, sizeof(oa)));
    }
}

}  // namespace
