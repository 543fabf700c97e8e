// rsockets on the wire: what two rsocket endpoints exchange, independent of
// how either side is implemented. Everything here is a fact of the protocol
// (field order, sizes, byte order, bit positions) and must stay bit-exact
// with librdmacm's rsockets so that our endpoints talk to the reference's.
//
// Stream sockets (RC QPs):
//  * Connection setup carries a ConnData as rdma_cm private data (after a
//    36-byte ib_connect_hdr for AF_IB addressing) in the request and in the
//    reply. Multi-byte fields are big endian.
//  * Every later message is an RDMA WRITE WITH IMMEDIATE whose 32-bit
//    immediate (big endian on the wire) holds an opcode in bits 31:29 and an
//    argument in bits 28:0 (Message below). Application data is written
//    into the peer's receive buffer; receive-buffer and iomap announcements
//    are written into the peer's "target" table.
//  * Keepalives are zero-length RDMA WRITEs without immediate data.
//
// Datagram sockets (UD QPs): the first datagram to a destination travels
// over UDP behind a DsUdpHeader carrying the sender's UD QPN; once both
// sides know each other's QPN, datagrams go over UD behind a DsHeader naming
// the sender's IP address and port.
#pragma once

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

namespace rdma::rs::wire {

// ---------------------------------------------------------------- messages

enum class Op : uint32_t {
    Data = 0,  // argument: bytes written into the receive buffer
    DataMore = 1,  // reserved
    Write = 2,  // never sent: tags local completions of riowrite
    DirectMore = 3,  // reserved
    Sgl = 4,  // argument: new send-credit limit (sequence number)
    Reserved = 5,
    IomapSgl = 6,  // argument: index of the iomap entry just written
    Ctrl = 7,  // argument: a Ctrl code
};

enum Ctrl : uint32_t {
    kCtrlDisconnect = 0,
    kCtrlKeepalive = 1,
    kCtrlShutdown = 2,
};

constexpr uint32_t kMsgDataMask = 0x1fffffff;

constexpr uint32_t make_msg(Op op, uint32_t arg) { return (static_cast<uint32_t>(op) << 29) | (arg & kMsgDataMask); }
constexpr Op msg_op(uint32_t msg) { return static_cast<Op>(msg >> 29); }
constexpr uint32_t msg_arg(uint32_t msg) { return msg & kMsgDataMask; }

// ------------------------------------------------------------- connection

constexpr uint8_t kProtocolVersion = 1;
constexpr uint8_t kConnFlagNet = 1 << 0;  // sender is big endian
constexpr uint8_t kConnFlagIomap = 1 << 1;  // target_iomap_size is valid
// Receive-buffer announcements alternate between two halves of the receive
// buffer; the target table starts with this many Sge slots.
constexpr uint32_t kTargetSglEntries = 2;
// AF_IB connections carry a struct ib_connect_hdr (36 bytes) first.
constexpr size_t kIbConnectHdrSize = 36;

// An RDMA-writable region. Inside ConnData it is big endian; in the target
// table it is in the byte order of the host owning the table (writers swap
// when the kConnFlagNet flags of both sides differ).
struct Sge {
    uint64_t addr;
    uint32_t key;
    uint32_t length;
};
static_assert(sizeof(Sge) == 16);

// One remotely announced iomapped buffer: data written at `offset` of the
// peer's iomap space lands at sge.addr.
struct Iomap {
    uint64_t offset;
    Sge sge;
};
static_assert(sizeof(Iomap) == 24);

struct ConnData {
    uint8_t version;
    uint8_t flags;
    uint16_t credits;  // big endian: receive queue depth
    uint8_t reserved[3];
    uint8_t target_iomap_size;  // scale-encoded (encode_scale)
    Sge target_sgl;  // big endian: the target table
    Sge data_buf;  // big endian: first half of the receive buffer
};
static_assert(sizeof(ConnData) == 40);
static_assert(offsetof(ConnData, target_sgl) == 8);
static_assert(offsetof(ConnData, data_buf) == 24);

// Small counts squeezed into `bits` bits: values up to 2^(bits-1) are sent
// as is; larger ones set the top bit and carry value >> bits.
constexpr int encode_scale(int value, int bits) {
    return value <= (1 << (bits - 1)) ? value : (1 << (bits - 1)) | (value >> bits);
}
constexpr int decode_scale(int value, int bits) {
    return value <= (1 << (bits - 1)) ? value : (value & ~(1 << (bits - 1))) << bits;
}

constexpr bool host_is_big_endian() { return __BYTE_ORDER == __BIG_ENDIAN; }

// What one side tells the other at connection time, in host terms.
struct ConnParams {
    uint16_t credits = 0;  // our receive queue depth
    uint32_t target_iomap_entries = 0;
    uint64_t target_table_addr = 0;
    uint32_t target_table_rkey = 0;
    uint64_t recv_buf_addr = 0;  // first half of our receive buffer
    uint32_t recv_buf_rkey = 0;
    uint32_t recv_buf_half = 0;  // bytes in that half
};

inline ConnData encode_conn_data(const ConnParams& p) {
    ConnData c{};
    c.version = kProtocolVersion;
    c.flags = kConnFlagIomap | (host_is_big_endian() ? kConnFlagNet : 0);
    c.credits = htobe16(p.credits);
    c.target_iomap_size = static_cast<uint8_t>(encode_scale(static_cast<int>(p.target_iomap_entries), 8));
    c.target_sgl.addr = htobe64(p.target_table_addr);
    c.target_sgl.key = htobe32(p.target_table_rkey);
    c.target_sgl.length = htobe32(kTargetSglEntries);
    c.data_buf.addr = htobe64(p.recv_buf_addr);
    c.data_buf.key = htobe32(p.recv_buf_rkey);
    c.data_buf.length = htobe32(p.recv_buf_half);
    return c;
}

// The peer's side of the connection as we use it.
struct PeerInfo {
    uint16_t credits = 0;
    bool swap_sgl = false;  // peer's byte order differs from ours
    Sge target_table{};  // where our announcements go (host order)
    bool has_iomap = false;
    Sge iomap_table{};  // where our iomap announcements go
    Sge first_buffer{};  // where our first data goes
};

// Decodes a peer's ConnData (nullopt if too short or of another version).
inline std::optional<PeerInfo> decode_conn_data(const void* data, size_t len) {
    if (!data || len < sizeof(ConnData))
        return std::nullopt;
    ConnData c;
    std::memcpy(&c, data, sizeof c);
    if (c.version != kProtocolVersion)
        return std::nullopt;
    PeerInfo p;
    p.credits = be16toh(c.credits);
    p.swap_sgl = ((c.flags & kConnFlagNet) != 0) != host_is_big_endian();
    p.target_table.addr = be64toh(c.target_sgl.addr);
    p.target_table.key = be32toh(c.target_sgl.key);
    p.target_table.length = be32toh(c.target_sgl.length);
    if (c.flags & kConnFlagIomap) {
        p.has_iomap = true;
        p.iomap_table.addr = p.target_table.addr + sizeof(Sge) * p.target_table.length;
        p.iomap_table.length = static_cast<uint32_t>(decode_scale(c.target_iomap_size, 8));
        p.iomap_table.key = p.target_table.key;
    }
    p.first_buffer.addr = be64toh(c.data_buf.addr);
    p.first_buffer.key = be32toh(c.data_buf.key);
    p.first_buffer.length = be32toh(c.data_buf.length);
    return p;
}

// An Sge or Iomap as the peer expects to find it in its target table.
inline Sge sge_for_peer(Sge s, bool swap) {
    if (swap) {
        s.addr = __builtin_bswap64(s.addr);
        s.key = __builtin_bswap32(s.key);
        s.length = __builtin_bswap32(s.length);
    }
    return s;
}
inline Iomap iomap_for_peer(Iomap m, bool swap) {
    if (swap)
        m.offset = __builtin_bswap64(m.offset);
    m.sge = sge_for_peer(m.sge, swap);
    return m;
}

// ---------------------------------------------------------------- datagram

// In front of every datagram sent over a UD QP: who sent it.
struct DsHeader {
    uint8_t version;  // 4 or 6
    uint8_t length;  // kDsIpv4HeaderLen or kDsIpv6HeaderLen
    uint16_t port;  // network order, as in sin_port
    union {
        uint32_t ipv4;  // network order
        struct {
            uint32_t flowinfo;
            uint8_t addr[16];
        } ipv6;
    } addr;
};
static_assert(sizeof(DsHeader) == 24);
constexpr uint8_t kDsIpv4HeaderLen = 8;
constexpr uint8_t kDsIpv6HeaderLen = 24;

// In front of a datagram sent over the UDP socket: the sender's UD QP.
struct DsUdpHeader {
    uint32_t tag;  // big endian kDsUdpTag
    uint8_t version;  // 4 or 6
    uint8_t op;  // Op::Data (carries data) or Op::Ctrl (QPN reply)
    uint8_t length;  // kDsUdpIpv4HeaderLen or kDsUdpIpv6HeaderLen
    uint8_t reserved;
    uint32_t qpn;  // big endian, low 24 bits
    union {
        uint32_t ipv4;
        uint8_t ipv6[16];
    } addr;  // the sender's IP address for this destination
};
static_assert(sizeof(DsUdpHeader) == 28);
constexpr uint32_t kDsUdpTag = 0x55555555;
constexpr uint8_t kDsUdpIpv4HeaderLen = 16;
constexpr uint8_t kDsUdpIpv6HeaderLen = 28;

// Fills `h` for a datagram sent from `src`; returns the header length
// (0 for an unsupported family).
inline uint8_t format_ds_header(DsHeader& h, const sockaddr* src) {
    std::memset(&h, 0, sizeof h);
    if (src->sa_family == AF_INET) {
        const auto* sin = reinterpret_cast<const sockaddr_in*>(src);
        h.version = 4;
        h.length = kDsIpv4HeaderLen;
        h.port = sin->sin_port;
        h.addr.ipv4 = sin->sin_addr.s_addr;
    } else if (src->sa_family == AF_INET6) {
        const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(src);
        h.version = 6;
        h.length = kDsIpv6HeaderLen;
        h.port = sin6->sin6_port;
        h.addr.ipv6.flowinfo = sin6->sin6_flowinfo;
        std::memcpy(h.addr.ipv6.addr, &sin6->sin6_addr, 16);
    }
    return h.length;
}

// Whether a received UD payload (after the GRH) starts with a valid header.
inline bool valid_ds_header(const void* payload, size_t len) {
    if (len < kDsIpv4HeaderLen)
        return false;
    const auto* h = static_cast<const DsHeader*>(payload);
    return (h->version == 4 && h->length == kDsIpv4HeaderLen) ||
        (h->version == 6 && h->length == kDsIpv6HeaderLen && len >= kDsIpv6HeaderLen);
}

// The source address a DsHeader names; returns its length.
inline socklen_t ds_header_source(const DsHeader& h, sockaddr_storage& out) {
    std::memset(&out, 0, sizeof out);
    if (h.version == 4) {
        auto* sin = reinterpret_cast<sockaddr_in*>(&out);
        sin->sin_family = AF_INET;
        sin->sin_port = h.port;
        sin->sin_addr.s_addr = h.addr.ipv4;
        return sizeof(sockaddr_in);
    }
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&out);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = h.port;
    sin6->sin6_flowinfo = h.addr.ipv6.flowinfo;
    std::memcpy(&sin6->sin6_addr, h.addr.ipv6.addr, 16);
    return sizeof(sockaddr_in6);
}

// Builds the UDP header announcing `qpn` for the local address `src`.
inline uint8_t format_udp_header(DsUdpHeader& h, Op op, uint32_t qpn, const sockaddr* src) {
    std::memset(&h, 0, sizeof h);
    h.tag = htobe32(kDsUdpTag);
    h.op = static_cast<uint8_t>(op);
    h.qpn = htobe32(qpn & 0xffffff);
    if (src->sa_family == AF_INET) {
        h.version = 4;
        h.length = kDsUdpIpv4HeaderLen;
        h.addr.ipv4 = reinterpret_cast<const sockaddr_in*>(src)->sin_addr.s_addr;
    } else if (src->sa_family == AF_INET6) {
        h.version = 6;
        h.length = kDsUdpIpv6HeaderLen;
        std::memcpy(h.addr.ipv6, &reinterpret_cast<const sockaddr_in6*>(src)->sin6_addr, 16);
    }
    return h.length;
}

// A received UDP datagram's header, if valid for a sender of family `from`.
struct UdpHeaderInfo {
    Op op;
    uint32_t qpn;
    uint8_t length;
};
inline std::optional<UdpHeaderInfo> parse_udp_header(const void* data, size_t len, sa_family_t from) {
    if (len < kDsUdpIpv4HeaderLen)
        return std::nullopt;
    DsUdpHeader h{};
    std::memcpy(&h, data, len < sizeof h ? len : sizeof h);
    if (be32toh(h.tag) != kDsUdpTag)
        return std::nullopt;
    bool ok = (h.version == 4 && from == AF_INET && h.length == kDsUdpIpv4HeaderLen) ||
        (h.version == 6 && from == AF_INET6 && h.length == kDsUdpIpv6HeaderLen && len >= kDsUdpIpv6HeaderLen);
    if (!ok)
        return std::nullopt;
    return UdpHeaderInfo{static_cast<Op>(h.op), be32toh(h.qpn) & 0xffffff, h.length};
}

}  // namespace rdma::rs::wire
