// The ibacm client's messages without a daemon: the request is the
// reference's byte for byte (captured from Debian's librdmacm talking to a
// stand-in ibacm), and answers that are short, lying about their length,
// failed or pathless are refused without reading past what arrived.
#include "librdmacm/acm.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cstdlib>
#include <cstring>
#include <infiniband/sa.h>
#include <string>

using namespace rdma::cm;

namespace {

std::string hex(const void* p, size_t n) {
    static const char* d = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = static_cast<const uint8_t*>(p)[i];
        s += d[b >> 4];
        s += d[b & 15];
    }
    return s;
}

TEST(Acm, ResolveRequestMatchesTheReference) {
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(7471);
    inet_pton(AF_INET, "10.78.0.1", &dst.sin_addr);
    rdma_addrinfo rai{};
    rai.ai_dst_addr = reinterpret_cast<sockaddr*>(&dst);
    rai.ai_dst_len = sizeof(dst);
    acm::Msg msg;
    size_t len = acm::encode_resolve(msg, rai);
    ASSERT_EQ(len, 88u);
    EXPECT_EQ(hex(&msg, len), "0101000000005800000000000000000002000000020000000a4e0001" + std::string(120, '0'));
}

TEST(Acm, NothingToAskWithoutDestination) {
    sockaddr_in src{};
    src.sin_family = AF_INET;
    rdma_addrinfo rai{};
    rai.ai_src_addr = reinterpret_cast<sockaddr*>(&src);
    acm::Msg msg;
    EXPECT_EQ(acm::encode_resolve(msg, rai), 0u);
}

acm::Msg answer(uint16_t length, uint8_t status = 0) {
    acm::Msg m{};
    m.hdr.version = acm::kVersion;
    m.hdr.opcode = acm::kOpResolve | acm::kOpAck;
    m.hdr.status = status;
    m.hdr.length = length;
    m.ep[0].type = acm::kTypePath;
    m.ep[0].flags = 0x2b;
    return m;
}

TEST(Acm, DecodesOnePath) {
    acm::Msg m = answer(acm::kHdrLen + acm::kEpLen);
    rdma_addrinfo rai{};
    ASSERT_TRUE(acm::decode_paths(m, acm::kHdrLen + acm::kEpLen, &rai));
    ASSERT_EQ(rai.ai_route_len, sizeof(ibv_path_data));
    EXPECT_EQ(static_cast<ibv_path_data*>(rai.ai_route)->flags, 0x2bu);
    std::free(rai.ai_route);
}

TEST(Acm, RefusesMalformedAnswers) {
    rdma_addrinfo rai{};
    acm::Msg m = answer(acm::kHdrLen + acm::kEpLen);
    EXPECT_FALSE(acm::decode_paths(m, acm::kHdrLen - 1, &rai)) << "truncated header";
    EXPECT_FALSE(acm::decode_paths(m, acm::kHdrLen + 10, &rai)) << "length beyond what arrived";
    m = answer(0xffff);
    EXPECT_FALSE(acm::decode_paths(m, sizeof(m), &rai)) << "length beyond the message";
    m = answer(acm::kHdrLen + acm::kEpLen, 1);
    EXPECT_FALSE(acm::decode_paths(m, sizeof(m), &rai)) << "failed status";
    m = answer(acm::kHdrLen + acm::kEpLen);
    m.ep[0].type = acm::kTypeIp;
    EXPECT_FALSE(acm::decode_paths(m, sizeof(m), &rai)) << "no path entry";
    m = answer(acm::kHdrLen + acm::kEpLen);
    m.hdr.opcode = acm::kOpResolve;
    EXPECT_FALSE(acm::decode_paths(m, sizeof(m), &rai)) << "a request, not an answer";
    EXPECT_EQ(rai.ai_route, nullptr);
}

}  // namespace
