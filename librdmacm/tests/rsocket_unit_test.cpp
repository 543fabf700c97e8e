// rsockets pieces that need no kernel: the wire encodings (immediate-data
// messages, connection data, datagram headers) byte for byte, the iomap size
// scaling, option validation, the configuration files, and the index table.
#include "librdmacm/rsocket_internal.h"
#include "librdmacm/rsocket_options.h"
#include "librdmacm/rsocket_wire.h"

#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace {

using namespace rdma::rs;
using wire::Op;

std::vector<uint8_t> bytes_of(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    return {b, b + n};
}

TEST(RsocketWire, MessageLayout) {
    // Opcode in bits 31:29, argument in 28:0.
    EXPECT_EQ(wire::make_msg(Op::Data, 4096), 0x00001000u);
    EXPECT_EQ(wire::make_msg(Op::Sgl, 0x1ffff), 0x8001ffffu);
    EXPECT_EQ(wire::make_msg(Op::IomapSgl, 3), 0xc0000003u);
    EXPECT_EQ(wire::make_msg(Op::Ctrl, wire::kCtrlDisconnect), 0xe0000000u);
    EXPECT_EQ(wire::make_msg(Op::Ctrl, wire::kCtrlKeepalive), 0xe0000001u);
    EXPECT_EQ(wire::make_msg(Op::Ctrl, wire::kCtrlShutdown), 0xe0000002u);
    EXPECT_EQ(wire::make_msg(Op::Write, 12), 0x4000000cu);
    // The argument never spills into the opcode.
    EXPECT_EQ(wire::make_msg(Op::Data, 0xffffffff), 0x1fffffffu);
    for (uint32_t op = 0; op < 8; op++) {
        uint32_t m = wire::make_msg(static_cast<Op>(op), 12345);
        EXPECT_EQ(static_cast<uint32_t>(wire::msg_op(m)), op);
        EXPECT_EQ(wire::msg_arg(m), 12345u);
    }
}

TEST(RsocketWire, IomapSizeScaling) {
    for (int v = 0; v <= 128; v++) {
        EXPECT_EQ(wire::encode_scale(v, 8), v);
        EXPECT_EQ(wire::decode_scale(v, 8), v);
    }
    EXPECT_EQ(wire::encode_scale(256, 8), 129);
    EXPECT_EQ(wire::decode_scale(129, 8), 256);
    EXPECT_EQ(wire::encode_scale(300, 8), 129);  // rounds down to 256
    EXPECT_EQ(wire::decode_scale(255, 8), 127 << 8);
    EXPECT_EQ(wire::encode_scale(1000, 8), 131);
    EXPECT_EQ(wire::decode_scale(131, 8), 768);
}

TEST(RsocketWire, ConnDataBytes) {
    wire::ConnParams p;
    p.credits = 384;
    p.target_iomap_entries = 256;
    p.target_table_addr = 0x1122334455667788ull;
    p.target_table_rkey = 0xa1b2c3d4;
    p.recv_buf_addr = 0x0000700000001000ull;
    p.recv_buf_rkey = 0x01020304;
    p.recv_buf_half = 65536;
    wire::ConnData c = wire::encode_conn_data(p);
    std::vector<uint8_t> expect = {
        1,  // version
        wire::host_is_big_endian() ? uint8_t(3) : uint8_t(2),  // IOMAP (| NET)
        0x01,
        0x80,  // credits 384, big endian
        0,
        0,
        0,  // reserved
        129,  // 256 iomap entries, scaled
        0x11,
        0x22,
        0x33,
        0x44,
        0x55,
        0x66,
        0x77,
        0x88,  // target table address
        0xa1,
        0xb2,
        0xc3,
        0xd4,  // its rkey
        0,
        0,
        0,
        2,  // two SGE slots
        0,
        0,
        0x70,
        0,
        0,
        0,
        0x10,
        0,  // receive buffer
        1,
        2,
        3,
        4,  // its rkey
        0,
        1,
        0,
        0,  // half of it: 64 KiB
    };
    EXPECT_EQ(bytes_of(&c, sizeof c), expect);
}

TEST(RsocketWire, ConnDataDecode) {
    wire::ConnParams p;
    p.credits = 16;
    p.target_iomap_entries = 8;
    p.target_table_addr = 0x5000;
    p.target_table_rkey = 77;
    p.recv_buf_addr = 0x9000;
    p.recv_buf_rkey = 88;
    p.recv_buf_half = 4096;
    wire::ConnData c = wire::encode_conn_data(p);
    auto peer = wire::decode_conn_data(&c, sizeof c);
    ASSERT_TRUE(peer);
    EXPECT_EQ(peer->credits, 16);
    EXPECT_FALSE(peer->swap_sgl);
    EXPECT_EQ(peer->target_table.addr, 0x5000u);
    EXPECT_EQ(peer->target_table.key, 77u);
    EXPECT_EQ(peer->target_table.length, 2u);
    ASSERT_TRUE(peer->has_iomap);
    EXPECT_EQ(peer->iomap_table.addr, 0x5000u + 2 * sizeof(wire::Sge));
    EXPECT_EQ(peer->iomap_table.length, 8u);
    EXPECT_EQ(peer->iomap_table.key, 77u);
    EXPECT_EQ(peer->first_buffer.addr, 0x9000u);
    EXPECT_EQ(peer->first_buffer.key, 88u);
    EXPECT_EQ(peer->first_buffer.length, 4096u);

    // A peer of the other byte order; an old peer without iomap support.
    c.flags = static_cast<uint8_t>(wire::host_is_big_endian() ? 0 : wire::kConnFlagNet);
    peer = wire::decode_conn_data(&c, sizeof c);
    ASSERT_TRUE(peer);
    EXPECT_TRUE(peer->swap_sgl);
    EXPECT_FALSE(peer->has_iomap);

    // Refused: short private data, another protocol version.
    EXPECT_FALSE(wire::decode_conn_data(&c, sizeof c - 1));
    EXPECT_FALSE(wire::decode_conn_data(nullptr, 40));
    c.version = 2;
    EXPECT_FALSE(wire::decode_conn_data(&c, sizeof c));
}

TEST(RsocketWire, TargetTableEntriesInThePeersByteOrder) {
    wire::Sge s{0x0102030405060708ull, 0x0a0b0c0d, 0x11223344};
    wire::Sge same = wire::sge_for_peer(s, false);
    EXPECT_EQ(bytes_of(&same, sizeof same), bytes_of(&s, sizeof s));
    wire::Sge sw = wire::sge_for_peer(s, true);
    EXPECT_EQ(sw.addr, 0x0807060504030201ull);
    EXPECT_EQ(sw.key, 0x0d0c0b0au);
    EXPECT_EQ(sw.length, 0x44332211u);
    wire::Iomap m{0x10, s};
    wire::Iomap mw = wire::iomap_for_peer(m, true);
    EXPECT_EQ(mw.offset, 0x1000000000000000ull);
    EXPECT_EQ(mw.sge.key, 0x0d0c0b0au);
}

TEST(RsocketWire, DatagramHeaders) {
    // Addresses live in sockaddr_storage, as they do in the library.
    sockaddr_storage ss{};
    sockaddr_in& sin = reinterpret_cast<sockaddr_in&>(ss);
    sin.sin_family = AF_INET;
    sin.sin_port = htons(7174);
    inet_pton(AF_INET, "10.78.0.1", &sin.sin_addr);
    wire::DsHeader h;
    ASSERT_EQ(wire::format_ds_header(h, reinterpret_cast<sockaddr*>(&sin)), 8);
    EXPECT_EQ(bytes_of(&h, 8), (std::vector<uint8_t>{4, 8, 0x1c, 0x06, 10, 78, 0, 1}));
    EXPECT_TRUE(wire::valid_ds_header(&h, 8));
    EXPECT_FALSE(wire::valid_ds_header(&h, 7));
    sockaddr_storage back;
    ASSERT_EQ(wire::ds_header_source(h, back), sizeof(sockaddr_in));
    EXPECT_EQ(std::memcmp(&back, &sin, sizeof sin), 0);

    sockaddr_in6 sin6{};
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = htons(9);
    sin6.sin6_flowinfo = htonl(5);
    inet_pton(AF_INET6, "fe80::1", &sin6.sin6_addr);
    ASSERT_EQ(wire::format_ds_header(h, reinterpret_cast<sockaddr*>(&sin6)), 24);
    EXPECT_EQ(h.version, 6);
    EXPECT_EQ(h.length, 24);
    EXPECT_TRUE(wire::valid_ds_header(&h, 24));
    EXPECT_FALSE(wire::valid_ds_header(&h, 20));
    ASSERT_EQ(wire::ds_header_source(h, back), sizeof(sockaddr_in6));
    auto* b6 = reinterpret_cast<sockaddr_in6*>(&back);
    EXPECT_EQ(b6->sin6_port, sin6.sin6_port);
    EXPECT_EQ(b6->sin6_flowinfo, sin6.sin6_flowinfo);
    EXPECT_EQ(std::memcmp(&b6->sin6_addr, &sin6.sin6_addr, 16), 0);
    h.version = 5;
    EXPECT_FALSE(wire::valid_ds_header(&h, 24));
}

TEST(RsocketWire, UdpResolutionHeader) {
    sockaddr_storage ss{};
    sockaddr_in& sin = reinterpret_cast<sockaddr_in&>(ss);
    sin.sin_family = AF_INET;
    inet_pton(AF_INET, "10.78.0.1", &sin.sin_addr);
    wire::DsUdpHeader h;
    ASSERT_EQ(wire::format_udp_header(h, Op::Data, 0xabcdef12, reinterpret_cast<sockaddr*>(&sin)), 16);
    EXPECT_EQ(bytes_of(&h, 16),
              (std::vector<uint8_t>{0x55, 0x55, 0x55, 0x55, 4, 0, 16, 0, 0, 0xcd, 0xef, 0x12, 10, 78, 0, 1}));
    auto info = wire::parse_udp_header(&h, 16, AF_INET);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->op, Op::Data);
    EXPECT_EQ(info->qpn, 0xcdef12u);
    EXPECT_EQ(info->length, 16);
    // A datagram from an IPv6 sender cannot carry an IPv4 header.
    EXPECT_FALSE(wire::parse_udp_header(&h, 16, AF_INET6));
    EXPECT_FALSE(wire::parse_udp_header(&h, 15, AF_INET));
    h.tag = 0;
    EXPECT_FALSE(wire::parse_udp_header(&h, 16, AF_INET));

    sockaddr_in6 sin6{};
    sin6.sin6_family = AF_INET6;
    ASSERT_EQ(wire::format_udp_header(h, Op::Ctrl, 7, reinterpret_cast<sockaddr*>(&sin6)), 28);
    EXPECT_EQ(h.op, static_cast<uint8_t>(Op::Ctrl));
    EXPECT_TRUE(wire::parse_udp_header(&h, 28, AF_INET6));
    EXPECT_FALSE(wire::parse_udp_header(&h, 27, AF_INET6));
}

TEST(RsocketOptions, WhatRsetsockoptAccepts) {
    int one = 1, zero = 0, neg = -3;
    linger l{1, 0};
    // Supported, well-formed.
    for (int name : {SO_REUSEADDR, SO_RCVBUF, SO_SNDBUF, SO_KEEPALIVE, SO_OOBINLINE})
        EXPECT_EQ(opts::check_set(SOL_SOCKET, name, &one, sizeof one), 0) << name;
    EXPECT_EQ(opts::check_set(SOL_SOCKET, SO_LINGER, &l, sizeof l), 0);
    EXPECT_EQ(opts::check_set(IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), 0);
    EXPECT_EQ(opts::check_set(IPPROTO_TCP, TCP_KEEPIDLE, &one, sizeof one), 0);
    EXPECT_EQ(opts::check_set(IPPROTO_TCP, TCP_MAXSEG, &one, 1), 0);  // ignored
    EXPECT_EQ(opts::check_set(IPPROTO_TCP, TCP_KEEPCNT, &one, sizeof one), 0);
    EXPECT_EQ(opts::check_set(IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one), 0);
    for (int name : {RDMA_SQSIZE, RDMA_RQSIZE, RDMA_INLINE, RDMA_IOMAPSIZE})
        EXPECT_EQ(opts::check_set(SOL_RDMA, name, &one, sizeof one), 0) << name;
    ibv_path_data paths[2] = {};
    EXPECT_EQ(opts::check_set(SOL_RDMA, RDMA_ROUTE, paths, sizeof paths), 0);
    // Not supported: ENOTSUP, whatever the value.
    EXPECT_EQ(opts::check_set(SOL_SOCKET, SO_BROADCAST, &one, sizeof one), -ENOTSUP);
    EXPECT_EQ(opts::check_set(SOL_SOCKET, SO_RCVTIMEO, nullptr, 0), -ENOTSUP);
    EXPECT_EQ(opts::check_set(IPPROTO_IP, IP_TOS, &one, sizeof one), -ENOTSUP);
    EXPECT_EQ(opts::check_set(IPPROTO_TCP, TCP_CORK, &one, sizeof one), -ENOTSUP);
    EXPECT_EQ(opts::check_set(IPPROTO_IPV6, IPV6_UNICAST_HOPS, &one, sizeof one), -ENOTSUP);
    EXPECT_EQ(opts::check_set(SOL_RDMA, 99, &one, sizeof one), -ENOTSUP);
    EXPECT_EQ(opts::check_set(12345, 1, &one, sizeof one), -ENOTSUP);
    // Malformed values.
    EXPECT_EQ(opts::check_set(SOL_SOCKET, SO_RCVBUF, nullptr, sizeof one), -EFAULT);
    EXPECT_EQ(opts::check_set(SOL_SOCKET, SO_RCVBUF, &one, 2), -EINVAL);
    EXPECT_EQ(opts::check_set(SOL_SOCKET, SO_LINGER, &l, sizeof l - 1), -EINVAL);
    EXPECT_EQ(opts::check_set(IPPROTO_TCP, TCP_KEEPIDLE, &zero, sizeof zero), -EINVAL);
    EXPECT_EQ(opts::check_set(IPPROTO_TCP, TCP_KEEPIDLE, &neg, sizeof neg), -EINVAL);
    EXPECT_EQ(opts::check_set(SOL_RDMA, RDMA_ROUTE, paths, sizeof paths[0] + 1), -EINVAL);
    EXPECT_EQ(opts::check_set(SOL_RDMA, RDMA_ROUTE, paths, 0), -EINVAL);
}

TEST(RsocketOptions, ValuesBecomeSettings) {
    EXPECT_EQ(opts::rcvbuf(65536), 131072u);
    EXPECT_EQ(opts::rcvbuf(1), 2u);
    EXPECT_EQ(opts::sndbuf(65536), 131072u);
    EXPECT_EQ(opts::sndbuf(100), 4096u);  // never below two low-water marks
    EXPECT_EQ(opts::sndbuf(1024), 2048u);
    EXPECT_EQ(opts::sndbuf(1023), 4096u);
    EXPECT_EQ(opts::queue_value(64), 64);
    EXPECT_EQ(opts::queue_value(0x10000), 0xfffe);
    EXPECT_EQ(opts::queue_value(-1), 0xfffe);
    EXPECT_EQ(opts::iomap_entries(8), 8u);
    EXPECT_EQ(opts::iomap_entries(128), 128u);
    EXPECT_EQ(opts::iomap_entries(300), 256u);
    EXPECT_EQ(opts::iomap_entries(1000), 768u);
}

TEST(RsocketConfig, ValuesParseLikeScanfUnsigned) {
    uint32_t v = 0;
    EXPECT_TRUE(parse_config_value("42\n", v));
    EXPECT_EQ(v, 42u);
    EXPECT_TRUE(parse_config_value("  \t 1000000 trailing", v));
    EXPECT_EQ(v, 1000000u);
    EXPECT_TRUE(parse_config_value("+7", v));
    EXPECT_EQ(v, 7u);
    EXPECT_TRUE(parse_config_value("-1", v));
    EXPECT_EQ(v, 0xffffffffu);
    // Past 32 bits the unsigned long is cut, as glibc's scanf stores it.
    EXPECT_TRUE(parse_config_value("99999999999", v));
    EXPECT_EQ(v, 1215752191u);
    EXPECT_TRUE(parse_config_value("-4294967297", v));
    EXPECT_EQ(v, 0xffffffffu);
    // Past ULONG_MAX strtoul saturates, whatever the sign.
    EXPECT_TRUE(parse_config_value("-99999999999999999999999", v));
    EXPECT_EQ(v, 0xffffffffu);
    EXPECT_FALSE(parse_config_value("", v));
    EXPECT_FALSE(parse_config_value("abc", v));
    EXPECT_FALSE(parse_config_value("-", v));
}

class RsocketConfigDir : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/rsocket-conf-XXXXXX";
        ASSERT_TRUE(mkdtemp(tmpl));
        dir_ = tmpl;
    }
    void TearDown() override {
        for (const auto& f : files_)
            unlink((dir_ + "/" + f).c_str());
        rmdir(dir_.c_str());
    }
    void put(const std::string& name, const std::string& text) {
        std::ofstream(dir_ + "/" + name) << text;
        files_.push_back(name);
    }
    std::string dir_;
    std::vector<std::string> files_;
};

TEST_F(RsocketConfigDir, DefaultsWithoutFiles) {
    Config c = read_config(dir_ + "/absent");
    EXPECT_EQ(c.polling_time, 10u);
    EXPECT_EQ(c.wake_up_interval, 5000u);
    EXPECT_EQ(c.inline_default, 64);
    EXPECT_EQ(c.sqsize_default, 384);
    EXPECT_EQ(c.rqsize_default, 384);
    EXPECT_EQ(c.mem_default, 1u << 17);
    EXPECT_EQ(c.wmem_default, 1u << 17);
    EXPECT_EQ(c.iomap_size, 0);
}

TEST_F(RsocketConfigDir, FilesOverrideAndAreClamped) {
    put("polling_time", "0\n");
    put("wake_up_interval", "250\n");
    put("inline_default", "128\n");
    put("sqsize_default", "100\n");
    put("rqsize_default", "70000\n");  // 16 bits, as the reference reads it
    put("mem_default", "0\n");
    put("wmem_default", "100\n");
    put("iomap_size", "64\n");
    Config c = read_config(dir_);
    EXPECT_EQ(c.polling_time, 0u);
    EXPECT_EQ(c.wake_up_interval, 250u);
    EXPECT_EQ(c.inline_default, 128);
    EXPECT_EQ(c.sqsize_default, 100);
    EXPECT_EQ(c.rqsize_default, static_cast<uint16_t>(70000));
    EXPECT_EQ(c.mem_default, 1u);  // at least one byte
    EXPECT_EQ(c.wmem_default, 4096u);  // at least twice the low-water mark
    EXPECT_EQ(c.iomap_size, 64);
    put("iomap_size", "200\n");
    EXPECT_EQ(read_config(dir_).iomap_size, 200);
    put("mem_default", "garbage\n");
    EXPECT_EQ(read_config(dir_).mem_default, 1u << 17);
}

TEST(RsocketFdTable, InsertLookupErase) {
    FdTable<int> t;
    int a = 1, b = 2;
    EXPECT_EQ(t.get(3), nullptr);
    EXPECT_TRUE(t.insert(3, &a));
    EXPECT_FALSE(t.insert(3, &b));  // taken
    EXPECT_EQ(t.get(3), &a);
    EXPECT_TRUE(t.insert(FdTable<int>::kMaxIndex, &b));
    EXPECT_EQ(t.get(FdTable<int>::kMaxIndex), &b);
    EXPECT_FALSE(t.insert(FdTable<int>::kMaxIndex + 1, &b));
    EXPECT_FALSE(t.insert(-1, &b));
    EXPECT_FALSE(t.insert(5, nullptr));
    EXPECT_EQ(t.get(-7), nullptr);
    EXPECT_EQ(t.get(FdTable<int>::kMaxIndex + 1), nullptr);
    EXPECT_EQ(t.erase(3), &a);
    EXPECT_EQ(t.erase(3), nullptr);
    EXPECT_EQ(t.get(3), nullptr);
    EXPECT_TRUE(t.insert(3, &b));
    EXPECT_EQ(t.get(3), &b);
}

TEST(RsocketFdTable, ConcurrentReadersSeeWholeEntries) {
    FdTable<int> t;
    std::vector<int> vals(5000);
    std::atomic<bool> done{false};
    std::atomic<long> bad{0};
    std::thread reader([&] {
        while (!done) {
            for (int i = 0; i < 5000; i += 37) {
                int* p = t.get(i * 3);
                if (p && p != &vals[static_cast<size_t>(i)])
                    bad++;
            }
        }
    });
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 5000; i++)
            t.insert(i * 3, &vals[static_cast<size_t>(i)]);
        for (int i = 0; i < 5000; i++)
            t.erase(i * 3);
    }
    done = true;
    reader.join();
    EXPECT_EQ(bad.load(), 0);
}

}  // namespace
