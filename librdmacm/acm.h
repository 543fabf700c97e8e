// Client side of the ibacm address/route resolution service.
#pragma once

#include <cstdint>
#include <rdma/rdma_cma.h>

namespace rdma::cm {

// Asks a running ibacm for path records between rai's addresses and stores
// them in rai->ai_route (an array of ibv_path_data). Silent no-op when
// ibacm is not running or cannot answer, as the reference behaves.
void acm_resolve(rdma_addrinfo* rai, const rdma_addrinfo& hints);

// Wire format of an ibacm message. Every field of the header and of the
// endpoint entries is in host byte order; path records are in IB wire order.
namespace acm {
constexpr uint8_t kVersion = 1;
constexpr uint8_t kOpResolve = 0x01;
constexpr uint8_t kOpAck = 0x80;
constexpr uint16_t kTypeName = 0x0001;
constexpr uint16_t kTypeIp = 0x0002;
constexpr uint16_t kTypeIp6 = 0x0003;
constexpr uint16_t kTypePath = 0x0010;
constexpr uint32_t kFlagSource = 1u << 0;
constexpr uint32_t kFlagDest = 1u << 1;
constexpr size_t kHdrLen = 16;
constexpr size_t kEpLen = 72;
constexpr size_t kMaxEps = 8;

struct Hdr {
    uint8_t version;
    uint8_t opcode;
    uint8_t status;
    uint8_t data[3];
    uint16_t length;  // host order (as ibacm and the reference use it), header included
    uint64_t tid;
};
struct EpAddr {
    uint32_t flags;
    uint16_t type;
    uint16_t reserved;
    uint8_t info[64];  // address bytes, a name, or an ibv_path_record
};
struct Msg {
    Hdr hdr;
    EpAddr ep[kMaxEps];
};
static_assert(sizeof(Hdr) == kHdrLen);
static_assert(sizeof(EpAddr) == kEpLen);

// Encodes a resolve request for rai's source/destination; returns the
// message length or 0 when there is nothing ibacm could resolve.
size_t encode_resolve(Msg& msg, const rdma_addrinfo& rai);
// Decodes a response's path records into rai->ai_route; false when the
// response is malformed or carries no path.
bool decode_paths(const Msg& msg, size_t len, rdma_addrinfo* rai);
}  // namespace acm

}  // namespace rdma::cm
