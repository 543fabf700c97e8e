// The uvsim_cmd fuzz input format, shared by the fuzzer and the seed
// generator.
//
//   byte 0        flags: bit 0 = device (0: mlx5_0, InfiniBand; 1: mlx5_1,
//                 Ethernet/RoCE); other bits reserved (ignored)
//   then records  u8 kind, u16 length (little endian), `length` bytes:
//     kind % 4 == 0   a write() command: the bytes are copied to the arena's
//                     command area and written to the uverbs file
//     kind % 4 == 1   an ioctl(RDMA_VERBS_IOCTL): the bytes (a struct
//                     ib_uverbs_ioctl_hdr and its attributes) are copied to
//                     the command area and passed as the argument
//     kind % 4 == 2   poke: u32 arena offset, then bytes stored there (data
//                     that commands point at: ioctl attribute buffers...)
//     kind % 4 == 3   an ioctl with another request: u32 request, then the
//                     argument bytes as for kind 1
//
// The arena is the only application memory the emulator may touch; it is
// mapped at kArenaAddr when that address is free, so inputs can carry
// literal pointers (responses, queue buffers, doorbell records, MRs).
#pragma once

#include <cstddef>
#include <cstdint>

namespace uvsim_fuzz {

constexpr uint64_t kArenaAddr = 0x2a5a00000000ull;
constexpr size_t kArenaLen = 1u << 20;
constexpr size_t kCmdOff = 0;  // commands are copied here
constexpr size_t kCmdMax = 1u << 16;  // (a record's length is a u16)
constexpr size_t kFreeOff = kCmdMax;  // the rest is for the input's use
constexpr size_t kMaxRecords = 64;

enum : uint8_t { kWrite = 0, kIoctl = 1, kPoke = 2, kIoctlOther = 3 };

}  // namespace uvsim_fuzz
