// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The pure parts of the RPC half against Debian's libibmad.so.5, loaded in
// its own link namespace: mad_encode / mad_build_pkt byte for byte over many
// generated requests, str2drpath / drpath2str / portid2str / portid2portnum
// over many strings and addresses.
#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <dlfcn.h>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr const char* reference_lib = "/usr/lib/x86_64-linux-gnu/libibmad.so.5";

struct Reference {
    void* handle = nullptr;
    decltype(&mad_encode) encode = nullptr;
    decltype(&mad_build_pkt) build_pkt = nullptr;
    decltype(&str2drpath) str2drpath_ = nullptr;
    decltype(&drpath2str) drpath2str_ = nullptr;
    decltype(&portid2str) portid2str_ = nullptr;
    decltype(&portid2portnum) portid2portnum_ = nullptr;
    decltype(&umad_size) umad_size_ = nullptr;

    Reference() {
        handle = dlmopen(LM_ID_NEWLM, reference_lib, RTLD_NOW | RTLD_LOCAL);
        if (!handle)
            return;
        encode = sym<decltype(encode)>("mad_encode");
        build_pkt = sym<decltype(build_pkt)>("mad_build_pkt");
        str2drpath_ = sym<decltype(str2drpath_)>("str2drpath");
        drpath2str_ = sym<decltype(drpath2str_)>("drpath2str");
        portid2str_ = sym<decltype(portid2str_)>("portid2str");
        portid2portnum_ = sym<decltype(portid2portnum_)>("portid2portnum");
        umad_size_ = sym<decltype(umad_size_)>("umad_size");
        // Debian's umad_size() depends on the ABI umad_init() finds
        auto init = sym<decltype(&umad_init)>("umad_init");
        if (init)
            init();
    }
    template <typename T>
    T sym(const char* name) {
        return reinterpret_cast<T>(dlsym(handle, name));
    }
};

Reference& ref() {
    static Reference r;
    return r;
}

#define NEED_REFERENCE()                            \
    do {                                            \
        if (!ref().handle)                          \
            GTEST_SKIP() << "no " << reference_lib; \
    } while (0)

const int classes[] = {0x01, 0x81, 0x03, 0x04, 0x05, 0x06, 0x07,  0x09,  0x0a,  0x0f, 0x10,
                       0x21, 0x30, 0x32, 0x33, 0x4f, 0x50, 0x104, 0x109, 0x130, 0x181};
const int methods[] = {0x01, 0x02, 0x03, 0x05, 0x06, 0x07, 0x12, 0x13, 0x14, 0x15, 0x81, 0x86, 0x92, 0x7f, 0xff};

struct Case {
    ib_rpc_cc_t rpc;  // a superset of ib_rpc_t, as the CC class needs
    ib_portid_t port;
    ib_rmpp_hdr_t rmpp;
    bool with_rmpp;
    bool with_data;
    std::array<uint8_t, IB_MAD_SIZE> data;
};

Case make_case(std::mt19937_64& rng) {
    Case c{};
    auto pick = [&](auto& arr) { return arr[rng() % (sizeof(arr) / sizeof(arr[0]))]; };
    c.rpc.mgtclass = (rng() % 8) ? pick(classes) : int(rng() % 256);
    c.rpc.method = pick(methods);
    c.rpc.attr.id = unsigned(rng());
    c.rpc.attr.mod = unsigned(rng());
    c.rpc.rstatus = unsigned(rng() % 3 ? 0 : rng());
    c.rpc.dataoffs = int(rng() % 200);
    c.rpc.datasz = int(rng() % (IB_MAD_SIZE - c.rpc.dataoffs + 1));
    c.rpc.mkey = rng();
    c.rpc.trid = rng() | 1;
    c.rpc.mask = rng();
    c.rpc.recsz = unsigned(rng());
    c.rpc.timeout = int(rng() % 5000);
    c.rpc.oui = uint32_t(rng());
    c.rpc.cckey = rng();

    c.port.lid = int(rng() % 4) == 0 ? 0 : int(rng() % 0x10000) - 2;
    c.port.drpath.cnt = int(rng() % 64);
    for (auto& h : c.port.drpath.p)
        h = uint8_t(rng());
    c.port.drpath.drslid = uint16_t(rng() % 3 ? 0xffff : rng());
    c.port.drpath.drdlid = uint16_t(rng() % 3 ? 0xffff : rng());
    if (rng() % 4 == 0)
        c.port.drpath.drslid = 0;
    c.port.grh_present = int(rng() % 2);
    for (auto& g : c.port.gid)
        g = uint8_t(rng());
    c.port.qp = uint32_t(rng() % 3 ? rng() % 2 : rng());
    c.port.qkey = uint32_t(rng());
    c.port.sl = uint8_t(rng() % 16);
    c.port.pkey_idx = unsigned(rng() % 128);

    c.with_rmpp = rng() % 2;
    c.rmpp.type = int(rng() % 6);
    c.rmpp.flags = int(rng() % 16);
    c.rmpp.status = int(rng() % 256);
    c.rmpp.d1.u = uint32_t(rng());
    c.rmpp.d2.u = uint32_t(rng());
    c.with_data = rng() % 4;
    for (auto& d : c.data)
        d = uint8_t(rng());
    return c;
}

std::string hexdiff(const uint8_t* a, const uint8_t* b, size_t n) {
    std::string s;
    char tmp[64];
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) {
            snprintf(tmp, sizeof(tmp), " [%zu] ours %02x ref %02x", i, a[i], b[i]);
            s += tmp;
        }
    return s;
}

TEST(RpcEncode, MadEncodeMatchesReference) {
    NEED_REFERENCE();
    std::mt19937_64 rng(5);
    for (int i = 0; i < 20000; i++) {
        Case c = make_case(rng);
        Case d = c;
        std::array<uint8_t, 512> ours{}, theirs{};
        bool dr = (c.rpc.mgtclass & 0xff) == IB_SMI_DIRECT_CLASS;
        ib_dr_path_t* path = dr ? &c.port.drpath : nullptr;
        ib_dr_path_t* dpath = dr ? &d.port.drpath : nullptr;
        void* r1 =
            mad_encode(ours.data(), reinterpret_cast<ib_rpc_t*>(&c.rpc), path, c.with_data ? c.data.data() : nullptr);
        void* r2 = ref().encode(theirs.data(), reinterpret_cast<ib_rpc_t*>(&d.rpc), dpath,
                                d.with_data ? d.data.data() : nullptr);
        ASSERT_EQ(r1 ? (uint8_t*)r1 - ours.data() : -1, r2 ? (uint8_t*)r2 - theirs.data() : -1) << "case " << i;
        ASSERT_EQ(0, memcmp(ours.data(), theirs.data(), ours.size()))
            << "case " << i << " class 0x" << std::hex << c.rpc.mgtclass
            << hexdiff(ours.data(), theirs.data(), ours.size());
        ASSERT_EQ(c.rpc.trid, d.rpc.trid);
    }
}

TEST(RpcEncode, MadBuildPktMatchesReference) {
    NEED_REFERENCE();
    umad_init();
    // Without a umad device Debian's libibumad keeps its old ABI: a 56-byte
    // umad header without the P_Key index. Then the header's common 56
    // bytes and the MADs behind the headers are compared.
    const size_t ours_hdr = umad_size(), ref_hdr = ref().umad_size_();
    const size_t common_hdr = std::min(ours_hdr, ref_hdr);
    std::mt19937_64 rng(55);
    for (int i = 0; i < 20000; i++) {
        Case c = make_case(rng);
        Case d = c;
        std::array<uint8_t, 1024> ours{}, theirs{};
        int l1 = mad_build_pkt(ours.data(), reinterpret_cast<ib_rpc_t*>(&c.rpc), &c.port,
                               c.with_rmpp ? &c.rmpp : nullptr, c.with_data ? c.data.data() : nullptr);
        int l2 = ref().build_pkt(theirs.data(), reinterpret_cast<ib_rpc_t*>(&d.rpc), &d.port,
                                 d.with_rmpp ? &d.rmpp : nullptr, d.with_data ? d.data.data() : nullptr);
        ASSERT_EQ(l1, l2) << "case " << i;
        ASSERT_EQ(0, memcmp(ours.data(), theirs.data(), common_hdr))
            << "case " << i << " umad header" << hexdiff(ours.data(), theirs.data(), common_hdr);
        ASSERT_EQ(0, memcmp(ours.data() + ours_hdr, theirs.data() + ref_hdr, IB_MAD_SIZE))
            << "case " << i << " class 0x" << std::hex << c.rpc.mgtclass
            << hexdiff(ours.data() + ours_hdr, theirs.data() + ref_hdr, IB_MAD_SIZE);
        ASSERT_EQ(0, memcmp(&c.port, &d.port, sizeof(c.port)));
    }
}

TEST(RpcEncode, DirectedRouteErrors) {
    NEED_REFERENCE();
    for (int cnt : {63, 64, 65, 200, -1}) {
        ib_rpc_t rpc{};
        rpc.mgtclass = IB_SMI_DIRECT_CLASS;
        rpc.method = 1;
        rpc.trid = 7;
        ib_dr_path_t path{};
        path.cnt = cnt;
        std::array<uint8_t, 256> a{}, b{};
        testing::internal::CaptureStderr();
        void* r1 = mad_encode(a.data(), &rpc, &path, nullptr);
        std::string e1 = testing::internal::GetCapturedStderr();
        testing::internal::CaptureStderr();
        void* r2 = ref().encode(b.data(), &rpc, &path, nullptr);
        std::string e2 = testing::internal::GetCapturedStderr();
        EXPECT_EQ(r1 == nullptr, r2 == nullptr) << cnt;
        EXPECT_EQ(e1, e2) << cnt;
    }
    ib_rpc_t rpc{};
    rpc.mgtclass = IB_SMI_DIRECT_CLASS;
    rpc.trid = 9;
    std::array<uint8_t, 256> a{};
    testing::internal::CaptureStderr();
    errno = 0;
    EXPECT_EQ(nullptr, mad_encode(a.data(), &rpc, nullptr, nullptr));
    EXPECT_EQ(EINVAL, errno);
    std::string e1 = testing::internal::GetCapturedStderr();
    testing::internal::CaptureStderr();
    EXPECT_EQ(nullptr, ref().encode(a.data(), &rpc, nullptr, nullptr));
    std::string e2 = testing::internal::GetCapturedStderr();
    EXPECT_EQ(e1, e2);
}

TEST(RpcEncode, TridsAreUniqueAndNonZero) {
    uint64_t prev = mad_trid();
    for (int i = 0; i < 100000; i++) {
        uint64_t t = mad_trid();
        ASSERT_NE(0u, t);
        ASSERT_LE(t, 0xffffffffu);
        ASSERT_NE(prev, t);
        prev = t;
    }
}

const char* drpaths[] = {"",
                         "0",
                         "0,",
                         ",",
                         ",,",
                         "0,1",
                         "0,1,2,3",
                         "1",
                         "1,2",
                         " 1, 2",
                         "0,1,,2",
                         "0,256",
                         "0,-1",
                         "0,abc",
                         "abc",
                         "0,1x,2y",
                         "0,0x10",
                         "0,99999999999",
                         "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,"
                         "20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,"
                         "43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63",
                         "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,"
                         "20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,"
                         "43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62",
                         "0,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
                         "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1",
                         "\t3,\n4",
                         "+5,+6",
                         "0,1 ,2"};

TEST(RpcPortid, Str2drpathMatchesReference) {
    NEED_REFERENCE();
    for (const char* s : drpaths) {
        for (int slid : {0, 1, 0xffff, 77}) {
            for (int dlid : {0, 5, 0xffff}) {
                ib_dr_path_t a{}, b{};
                std::string s1(s), s2(s);
                int r1 = str2drpath(&a, s1.data(), slid, dlid);
                int r2 = ref().str2drpath_(&b, s2.data(), slid, dlid);
                ASSERT_EQ(r1, r2) << '"' << s << '"';
                ASSERT_EQ(0, memcmp(&a, &b, sizeof(a))) << '"' << s << '"';
                char t1[256], t2[256];
                ASSERT_STREQ(drpath2str(&a, t1, sizeof(t1)), ref().drpath2str_(&b, t2, sizeof(t2)));
            }
        }
    }
    ib_dr_path_t a{}, b{};
    EXPECT_EQ(str2drpath(&a, nullptr, 3, 4), ref().str2drpath_(&b, nullptr, 3, 4));
    EXPECT_EQ(0, memcmp(&a, &b, sizeof(a)));
}

TEST(RpcPortid, TextFormsMatchReference) {
    NEED_REFERENCE();
    std::mt19937_64 rng(9);
    for (int i = 0; i < 5000; i++) {
        ib_portid_t p{};
        p.lid = int(rng() % 3) == 0 ? 0 : int(rng() % 70000) - 10;
        p.drpath.cnt = int(rng() % 64);
        for (auto& h : p.drpath.p)
            h = uint8_t(rng());
        p.drpath.drslid = uint16_t(rng());
        p.drpath.drdlid = uint16_t(rng());
        p.grh_present = int(rng() % 2);
        for (auto& g : p.gid)
            g = uint8_t(rng() % 4 ? 0 : rng());
        ib_portid_t q = p;
        ASSERT_STREQ(portid2str(&p), ref().portid2str_(&q));
        ASSERT_EQ(portid2portnum(&p), ref().portid2portnum_(&q));
        for (size_t sz : {1, 5, 17, 20, 30, 64}) {
            char a[64], b[64];
            memset(a, 'x', sizeof(a));
            memset(b, 'x', sizeof(b));
            drpath2str(&p.drpath, a, sz);
            ref().drpath2str_(&q.drpath, b, sz);
            ASSERT_EQ(0, memcmp(a, b, sz)) << sz;
        }
    }
}

}  // namespace
