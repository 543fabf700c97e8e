// The simulated wire: packets between the model threads of the processes
// that share a run directory.
//
// Each process binds one UNIX datagram socket, <run_dir>/wire/s<slot>; its
// slot (1-255) is the upper byte of every QP number it hands out, so a
// packet for QPN q goes to the socket of slot q >> 16. A packet carries the
// fields of the IB headers that matter (BTH opcode/PSN/QPN, RETH, AtomicETH,
// AETH, DETH, immediate, the LRH/GRH addresses) and at most one MTU of
// payload. The receiver checks that the destination LID/GID is one of its
// ports, as a real port would drop a packet not addressed to it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace uvsim {

// IB BTH opcodes (transport in the upper 3 bits)
enum : uint8_t {
    OP_SEND_FIRST = 0x00,
    OP_SEND_MIDDLE = 0x01,
    OP_SEND_LAST = 0x02,
    OP_SEND_LAST_IMM = 0x03,
    OP_SEND_ONLY = 0x04,
    OP_SEND_ONLY_IMM = 0x05,
    OP_WRITE_FIRST = 0x06,
    OP_WRITE_MIDDLE = 0x07,
    OP_WRITE_LAST = 0x08,
    OP_WRITE_LAST_IMM = 0x09,
    OP_WRITE_ONLY = 0x0a,
    OP_WRITE_ONLY_IMM = 0x0b,
    OP_READ_REQUEST = 0x0c,
    OP_READ_RESP_FIRST = 0x0d,
    OP_READ_RESP_MIDDLE = 0x0e,
    OP_READ_RESP_LAST = 0x0f,
    OP_READ_RESP_ONLY = 0x10,
    OP_ACK = 0x11,
    OP_ATOMIC_ACK = 0x12,
    OP_CMP_SWAP = 0x13,
    OP_FETCH_ADD = 0x14,
    OP_SEND_LAST_INV = 0x16,
    OP_SEND_ONLY_INV = 0x17,
    TRANSPORT_RC = 0x00,
    TRANSPORT_UC = 0x20,
    TRANSPORT_UD = 0x60,
    TRANSPORT_XRC = 0xa0,
};

// AETH syndromes (upper 3 bits: 0 ACK, 1 RNR NAK, 3 NAK)
enum : uint8_t {
    AETH_ACK = 0x00,
    AETH_RNR_NAK = 0x20,  // | timer
    AETH_NAK_PSN_SEQ = 0x60,
    AETH_NAK_INV_REQ = 0x61,
    AETH_NAK_REM_ACCESS = 0x62,
    AETH_NAK_REM_OP = 0x63,
};

constexpr uint32_t kWireMagic = 0x55565357;  // "UVSW"
constexpr size_t kMaxPayload = 4096;

struct WireHdr {
    uint32_t magic;
    uint8_t opcode;  // BTH opcode incl. transport bits
    uint8_t flags;  // kFlag*
    uint16_t payload_len;
    uint32_t dest_qpn;
    uint32_t src_qpn;
    uint32_t psn;
    uint16_t slid, dlid;
    uint8_t sgid[16], dgid[16];
    uint8_t sl;
    uint8_t syndrome;  // AETH
    uint16_t pkey;
    uint32_t msn;  // AETH
    uint32_t imm;  // immediate data / invalidate rkey (network order, as in the WQE)
    uint32_t qkey;  // DETH
    uint64_t va;  // RETH / AtomicETH
    uint32_t rkey;
    uint32_t dma_len;
    uint64_t swap_add, compare;  // AtomicETH (host order)
    uint64_t orig;  // AtomicAckETH
    uint32_t flow_label;  // GRH (kFlagGrh)
    uint8_t tclass;
    uint8_t hop_limit;
    uint16_t reserved;
    uint32_t xrc_srqn;  // XRCETH: the XRC SRQ a request to an XRC target QP is for
    uint32_t xrc_tgt_qpn;  // kFlagXrcRelay: the target QP the request arrived at
};

enum : uint8_t {
    kFlagSolicited = 1,
    kFlagGrh = 2,
    kFlagAckReq = 4,  // BTH AckReq: the responder acknowledges this packet
    kFlagRoceV2 = 8,  // RoCE v2: UDP/IP encapsulation (the GRH is an IPv4/IPv6 header)
    kFlagMcast = 16,  // a copy of a multicast packet (dest_qpn: one member)
    // Not a packet on the wire: inside the device, a request that reached an
    // XRC target QP handed to the process owning the XRC SRQ it names
    // (dest_qpn: that SRQ's number, which carries the process's slot)
    kFlagXrcRelay = 32,
    // A whole Ethernet frame (the payload) sent by a raw packet QP, to every
    // process: all Ethernet ports of the simulated host share one segment.
    // sgid[0..5]: the MAC of the port it left (which loops it back to
    // other contexts); rkey and va: the sender's slot and context.
    kFlagEthFrame = 64,
    // A connection manager message (ucma.cpp) for the process's CM (its
    // GSI): dest_qpn is (slot << 16) | 1, the payload a CmMsg.
    kFlagCm = 128,
};

struct Packet {
    WireHdr h;
    uint8_t payload[kMaxPayload];
};

// Binds this process's socket (once); false when the run directory is unusable.
bool wire_attach();
int wire_fd();
// (Packets go through the model's queue, engine_xmit, which holds them
// while the peer's socket is full instead of losing them.)
// n bytes of a packet to the socket of process slot (non-blocking):
// 1 sent, 0 would block (try again later), -1 nobody there.
int wire_send_bytes(uint32_t slot, const void* buf, size_t n);
// The drop_every fault: true when this packet is to be lost (counts packets).
bool wire_fault_drop(const Packet& p);
// One packet if available (non-blocking): its size, 0 when none.
size_t wire_recv(Packet& p);
// True when packets wait in this process's socket (the model is behind).
bool wire_backlog();

}  // namespace uvsim
