// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The RPC layer against scripted, hostile replies. This executable defines
// umad_init/open_port/close_port/register/send/recv itself (exported, so
// libibmad's calls land here instead of in libibumad) and answers each
// request from a script: wrong transaction ids, truncated MADs, requests
// echoed back, error statuses, endless redirects, floods and random bytes.
// Every call must return (within its timeout) and never crash.
#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <algorithm>
#include <deque>
#include <functional>
#include <random>
#include <vector>

namespace {

struct Reply {
    std::vector<uint8_t> umad;  // umad header + MAD
    int length;  // what umad_recv reports
};

// Builds replies for the request just sent; called on each umad_recv.
using Responder = std::function<bool(const uint8_t* req, Reply& out)>;

struct FakeUmad {
    std::vector<std::vector<uint8_t>> sent;  // MADs sent
    Responder responder;
    int recv_calls = 0;
    int send_timeout = -1;
} fake;

std::vector<uint8_t> reply_to(const uint8_t* req, uint16_t status = 0) {
    std::vector<uint8_t> u(umad_size() + IB_MAD_SIZE, 0);
    uint8_t* mad = u.data() + umad_size();
    std::memcpy(mad, req, IB_MAD_SIZE);
    mad[3] |= 0x80;  // response
    mad[4] = uint8_t(status >> 8);
    mad[5] = uint8_t(status);
    if (mad[1] == IB_SMI_DIRECT_CLASS)
        mad[4] |= 0x80;  // direction bit
    return u;
}

}  // namespace

extern "C" {
__attribute__((visibility("default"))) int umad_init(void) { return 0; }
__attribute__((visibility("default"))) int umad_open_port(const char*, int) { return 7; }
__attribute__((visibility("default"))) int umad_close_port(int) { return 0; }
__attribute__((visibility("default"))) int umad_register(int, int mgmt_class, int, uint8_t, long[16 / sizeof(long)]) {
    return mgmt_class;  // agent id: the class number
}
__attribute__((visibility("default"))) int umad_send(int, int, void* umad, int length, int timeout_ms, int) {
    auto* mad = static_cast<uint8_t*>(umad) + umad_size();
    fake.sent.emplace_back(mad, mad + (length < IB_MAD_SIZE ? length : IB_MAD_SIZE));
    fake.send_timeout = timeout_ms;
    return 0;
}
__attribute__((visibility("default"))) int umad_recv(int, void* umad, int* length, int) {
    fake.recv_calls++;
    Reply r;
    if (!fake.responder || fake.sent.empty() || !fake.responder(fake.sent.back().data(), r)) {
        errno = ETIMEDOUT;
        return -ETIMEDOUT;
    }
    size_t n = std::min<size_t>(r.umad.size(), umad_size() + *length);
    std::memcpy(umad, r.umad.data(), n);
    *length = r.length;
    return 1;
}
}

namespace {

class Hostile : public testing::Test {
protected:
    struct ibmad_port* port = nullptr;
    void SetUp() override {
        fake = FakeUmad{};
        int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS, IB_PERFORMANCE_CLASS, 0x09, IB_CC_CLASS};
        port = mad_rpc_open_port(nullptr, 0, classes, 6);
        ASSERT_NE(nullptr, port);
        mad_rpc_set_timeout(port, 50);
        mad_rpc_set_retries(port, 2);
        madrpc_show_errors(0);
    }
    void TearDown() override { mad_rpc_close_port(port); }

    uint8_t* query(ib_portid_t* id, int* status = nullptr) {
        static uint8_t buf[IB_SMP_DATA_SIZE];
        return smp_query_status_via(buf, id, IB_ATTR_NODE_INFO, 0, 0, status, port);
    }
    double timed(const std::function<void()>& f) {
        auto t0 = std::chrono::steady_clock::now();
        f();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
};

TEST_F(Hostile, WrongTridIsDiscarded) {
    int n = 0;
    fake.responder = [&](const uint8_t* req, Reply& r) {
        r.umad = reply_to(req);
        r.length = IB_MAD_SIZE;
        uint8_t* mad = r.umad.data() + umad_size();
        if (n++ < 3)
            mad[15] ^= 0x5a;  // low 32 bits differ
        else
            mad[IB_SMP_DATA_OFFS] = 0x42;
        return true;
    };
    ib_portid_t id{};
    testing::internal::CaptureStderr();
    uint8_t* r = query(&id);
    testing::internal::GetCapturedStderr();
    ASSERT_NE(nullptr, r);
    EXPECT_EQ(0x42, r[0]);
    EXPECT_EQ(4, n);
}

TEST_F(Hostile, HighTridBitsAreIgnored) {
    fake.responder = [&](const uint8_t* req, Reply& r) {
        r.umad = reply_to(req);
        r.length = IB_MAD_SIZE;
        r.umad[umad_size() + 8] ^= 0xff;  // upper 32 bits differ
        return true;
    };
    ib_portid_t id{};
    EXPECT_NE(nullptr, query(&id));
}

TEST_F(Hostile, FloodOfStrangersTimesOut) {
    fake.responder = [&](const uint8_t* req, Reply& r) {
        r.umad = reply_to(req);
        r.length = IB_MAD_SIZE;
        r.umad[umad_size() + 12] ^= 1;
        return true;
    };
    ib_portid_t id{};
    uint8_t* r = nullptr;
    testing::internal::CaptureStderr();
    double t = timed([&] { r = query(&id); });
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(nullptr, r);
    EXPECT_LT(t, 2.0);
    EXPECT_NE(std::string::npos, err.find("recv failed: Connection timed out")) << err;
}

// A zero or negative timeout must not mean "wait forever".
TEST_F(Hostile, NonPositiveTimeoutStillEnds) {
    fake.responder = [&](const uint8_t* req, Reply& r) {
        r.umad = reply_to(req);
        r.length = IB_MAD_SIZE;
        r.umad[umad_size() + 12] ^= 1;  // never the right TID
        return true;
    };
    mad_rpc_set_timeout(port, -5);
    mad_rpc_set_retries(port, 1);
    ib_portid_t id{};
    testing::internal::CaptureStderr();
    double t = timed([&] { EXPECT_EQ(nullptr, query(&id)); });
    testing::internal::GetCapturedStderr();
    EXPECT_LT(t, 5.0);
    EXPECT_EQ(-5, fake.send_timeout);
}

TEST_F(Hostile, TruncatedAndEchoedRepliesAreRejected) {
    int n = 0;
    fake.responder = [&](const uint8_t* req, Reply& r) {
        r.umad = reply_to(req);
        r.length = IB_MAD_SIZE;
        switch (n++) {
        case 0: r.length = 10; break;  // truncated
        case 1: r.length = 0; break;  // empty
        case 2: r.umad[umad_size() + 3] &= 0x7f; break;  // not a response
        case 3: r.umad[umad_size() + 1] = 0x03; break;  // other class
        case 4: return false;  // silence
        }
        return true;
    };
    ib_portid_t id{};
    testing::internal::CaptureStderr();
    EXPECT_EQ(nullptr, query(&id));
    testing::internal::GetCapturedStderr();
    EXPECT_EQ(5, n);
}

TEST_F(Hostile, ErrorStatusIsReported) {
    fake.responder = [&](const uint8_t* req, Reply& r) {
        r.umad = reply_to(req, 0x1c);
        r.length = IB_MAD_SIZE;
        return true;
    };
    ib_portid_t id{};
    int status = -1;
    EXPECT_EQ(nullptr, query(&id, &status));
    EXPECT_EQ(0x1c, status);
    EXPECT_EQ(EIO, errno);
}

TEST_F(Hostile, TimedOutSendsAreRetried) {
    fake.responder = [&](const uint8_t* req, Reply& r) {
        r.umad = std::vector<uint8_t>(umad_size() + IB_MAD_SIZE, 0);
        std::memcpy(r.umad.data() + umad_size(), req, IB_MAD_SIZE);
        uint32_t st = ETIMEDOUT;  // the umad status: request timed out
        std::memcpy(r.umad.data() + 4, &st, 4);
        r.length = IB_MAD_SIZE;
        return true;
    };
    ib_portid_t id{};
    madrpc_show_errors(1);
    testing::internal::CaptureStderr();
    EXPECT_EQ(nullptr, query(&id));
    std::string err = testing::internal::GetCapturedStderr();
    madrpc_show_errors(0);
    EXPECT_EQ(2u, fake.sent.size());
    EXPECT_EQ(fake.sent[0], fake.sent[1]);  // same request, same trid
    EXPECT_NE(std::string::npos, err.find("_do_madrpc: timeout after 2 retries, 100 ms")) << err;
}

TEST_F(Hostile, EndlessRedirectsStop) {
    fake.responder = [&](const uint8_t* req, Reply& r) {
        r.umad = reply_to(req, IB_MAD_STS_REDIRECT);
        uint8_t* cpi = r.umad.data() + umad_size() + 64;
        cpi[28] = 0;
        cpi[29] = 9;  // redirect LID 9
        cpi[35] = 1;  // QP 1
        r.length = IB_MAD_SIZE;
        return true;
    };
    ib_portid_t id{};
    ib_portid_set(&id, 3, 1, IB_DEFAULT_QP1_QKEY);
    uint8_t buf[IB_MAD_SIZE] = {};
    testing::internal::CaptureStderr();
    EXPECT_EQ(nullptr, pma_query_via(buf, &id, 1, 0, IB_GSI_PORT_COUNTERS, port));
    testing::internal::GetCapturedStderr();
    EXPECT_EQ(9, id.lid);
    EXPECT_LT(fake.sent.size(), 40u);
}

TEST_F(Hostile, GidRedirectIsRefused) {
    fake.responder = [&](const uint8_t* req, Reply& r) {
        r.umad = reply_to(req, IB_MAD_STS_REDIRECT);
        r.length = IB_MAD_SIZE;
        return true;
    };
    ib_portid_t id{};
    ib_portid_set(&id, 3, 1, IB_DEFAULT_QP1_QKEY);
    uint8_t buf[IB_MAD_SIZE] = {};
    testing::internal::CaptureStderr();
    EXPECT_EQ(nullptr, pma_query_via(buf, &id, 1, 0, IB_GSI_PORT_COUNTERS, port));
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(std::string::npos, err.find("redirect_port: GID-based redirection is not supported"));
    EXPECT_EQ(1u, fake.sent.size());
}

TEST_F(Hostile, BadRmppVersion) {
    fake.responder = [&](const uint8_t* req, Reply& r) {
        r.umad = reply_to(req);
        uint8_t* mad = r.umad.data() + umad_size();
        mad[24] = 7;  // rmpp version
        mad[26] = 0x03;  // active, first
        r.length = IB_MAD_SIZE;
        return true;
    };
    ib_rpc_t rpc{};
    rpc.mgtclass = IB_SA_CLASS;
    rpc.method = IB_MAD_METHOD_GET_TABLE;
    rpc.datasz = IB_SA_DATA_SIZE;
    rpc.dataoffs = IB_SA_DATA_OFFS;
    ib_portid_t id{};
    ib_portid_set(&id, 1, 1, IB_DEFAULT_QP1_QKEY);
    ib_rmpp_hdr_t rmpp{};
    uint8_t buf[IB_SA_DATA_SIZE] = {};
    testing::internal::CaptureStderr();
    EXPECT_EQ(nullptr, mad_rpc_rmpp(port, &rpc, &id, &rmpp, buf));
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(std::string::npos, err.find("mad_rpc_rmpp: bad rmpp version"));
}

TEST_F(Hostile, BadRequestsAreRefused) {
    fake.responder = [&](const uint8_t* req, Reply& r) {
        r.umad = reply_to(req);
        r.length = IB_MAD_SIZE;
        return true;
    };
    ib_rpc_t rpc{};
    rpc.mgtclass = IB_PERFORMANCE_CLASS;
    rpc.method = 1;
    rpc.dataoffs = 200;
    rpc.datasz = 100;  // beyond the MAD
    ib_portid_t id{};
    ib_portid_set(&id, 1, 1, IB_DEFAULT_QP1_QKEY);
    uint8_t buf[512] = {};
    errno = 0;
    EXPECT_EQ(nullptr, mad_rpc(port, &rpc, &id, buf, buf));
    EXPECT_EQ(EINVAL, errno);
    rpc.dataoffs = -4;
    rpc.datasz = 8;
    EXPECT_EQ(nullptr, mad_rpc_rmpp(port, &rpc, &id, nullptr, buf));
    EXPECT_TRUE(fake.sent.empty());

    // a DR path longer than a MAD holds
    ib_portid_t dr{};
    dr.drpath.cnt = 64;
    testing::internal::CaptureStderr();
    EXPECT_EQ(nullptr, query(&dr));
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(std::string::npos, err.find("mad_encode: dr path with hop count 64"));

    // retries <= 0 on the port
    mad_rpc_set_retries(port, -1);
    ib_portid_t ok{};
    madrpc_show_errors(1);
    testing::internal::CaptureStderr();
    EXPECT_EQ(nullptr, query(&ok));
    err = testing::internal::GetCapturedStderr();
    madrpc_show_errors(0);
    EXPECT_NE(std::string::npos, err.find("_do_madrpc: max_retries -1 <= 0"));
}

// A class the port has no agent for: refused like the kernel refuses it
// (umad2sim crashes when handed agent -1).
TEST_F(Hostile, ClassWithoutAgent) {
    ib_vendor_call_t call{};
    call.method = IB_MAD_METHOD_GET;
    call.mgmt_class = 0x0b;
    call.timeout = 10;
    ib_portid_t id{};
    ib_portid_set(&id, 2, 1, IB_DEFAULT_QP1_QKEY);
    uint8_t buf[IB_MAD_SIZE] = {};
    testing::internal::CaptureStderr();
    EXPECT_EQ(nullptr, ib_vendor_call_via(buf, &id, &call, port));
    call.method = IB_MAD_METHOD_SEND;  // one-way
    EXPECT_EQ(nullptr, ib_vendor_call_via(buf, &id, &call, port));
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_TRUE(fake.sent.empty());
    EXPECT_NE(std::string::npos, err.find("_do_madrpc: send failed; Invalid argument")) << err;
    EXPECT_NE(std::string::npos, err.find("mad_send_via: send failed; Invalid argument")) << err;
}

TEST_F(Hostile, TridsDifferPerRequest) {
    fake.responder = [&](const uint8_t* req, Reply& r) {
        r.umad = reply_to(req);
        r.length = IB_MAD_SIZE;
        return true;
    };
    ib_portid_t id{};
    for (int i = 0; i < 50; i++)
        ASSERT_NE(nullptr, query(&id));
    std::vector<uint32_t> trids;
    for (auto& m : fake.sent)
        trids.push_back(uint32_t(m[12]) << 24 | m[13] << 16 | m[14] << 8 | m[15]);
    std::sort(trids.begin(), trids.end());
    EXPECT_EQ(trids.end(), std::adjacent_find(trids.begin(), trids.end()));
    EXPECT_EQ(trids.end(), std::find(trids.begin(), trids.end(), 0u));
}

// Random bytes with the right transaction id into every caller that parses
// a reply: no crash, whatever comes back.
TEST_F(Hostile, RandomRepliesDoNotCrash) {
    std::mt19937_64 rng(1);
    fake.responder = [&](const uint8_t* req, Reply& r) {
        if (rng() % 10 == 0)
            return false;
        r.umad.assign(umad_size() + IB_MAD_SIZE, 0);
        for (size_t i = umad_size(); i < r.umad.size(); i++)
            r.umad[i] = uint8_t(rng());
        if (rng() % 4)
            std::memcpy(r.umad.data() + umad_size() + 8, req + 8, 8);
        if (rng() % 2) {
            r.umad[umad_size() + 1] = req[1];
            r.umad[umad_size() + 3] |= 0x80;
        }
        if (rng() % 3 == 0) {
            uint32_t st = uint32_t(rng() % 130);
            std::memcpy(r.umad.data() + 4, &st, 4);
        }
        r.length = int(rng() % (IB_MAD_SIZE + 1));
        return true;
    };
    testing::internal::CaptureStderr();
    for (int i = 0; i < 3000; i++) {
        ib_portid_t id{}, sm{}, self{};
        uint8_t buf[IB_MAD_SIZE] = {};
        ibmad_gid_t gid{};
        int pn;
        char guid[] = "0x1234", lid[] = "5", gidstr[] = "fe80::1", drslid[] = "1,1,2";
        switch (i % 9) {
        case 0: query(&id); break;
        case 1: ib_resolve_self_via(&self, &pn, &gid, port); break;
        case 2: ib_resolve_smlid_via(&sm, 0, port); break;
        case 3: ib_resolve_portid_str_via(&id, guid, IB_DEST_GUID, nullptr, port); break;
        case 4: ib_resolve_portid_str_via(&id, gidstr, IB_DEST_GID, nullptr, port); break;
        case 5: ib_resolve_portid_str_via(&id, drslid, IB_DEST_DRSLID, nullptr, port); break;
        case 6:
            ib_portid_set(&id, 4, 1, IB_DEFAULT_QP1_QKEY);
            pma_query_via(buf, &id, 1, 0, IB_GSI_PORT_COUNTERS, port);
            break;
        case 7:
            ib_resolve_portid_str_via(&id, lid, IB_DEST_LID, &sm, port);
            ib_node_query_via(port, 0x55, &id, buf);
            break;
        case 8: {
            int st;
            ib_portid_set(&id, 4, 1, 0);
            cc_query_status_via(buf, &id, IB_CC_ATTR_CONGESTION_LOG, 0, 0, &st, port, 1);
            break;
        }
        }
    }
    testing::internal::GetCapturedStderr();
    SUCCEED();
}

}  // namespace
