// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Reading the small attribute files of /sys/class/infiniband{,_mad}.
//
// Every access goes through open(2)/read(2)/close(2) of libc, never openat,
// fopen or iostreams: the fabric simulator's LD_PRELOAD shim (umad2sim)
// replaces exactly those calls on these paths (tests/fabric/README.md), and a
// real kernel is indifferent to the choice.
//
// A failure is a Status (util/result.h) carrying a positive errno; errno
// itself is left as the failed open(2) or read(2) left it (the reference's
// callers print it with %m), never set here.
#pragma once

#include "util/result.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace umad::sysfs {

// The file DIR/NAME with its trailing newline removed, at most max-1 bytes
// (an empty file reads as ""); a failure is the open's or read's errno.
rdma::Status read_string(const std::string& dir, const char* name, char* buf, size_t max);

// An unsigned number (strtoul base 0, so "0x10", "4: ACTIVE" and
// "40 Gb/sec (4X QDR)" all parse their leading number, as the kernel's
// formats are read by the reference).
rdma::Status read_uint(const std::string& dir, const char* name, unsigned* out);
rdma::Status read_ulong(const std::string& dir, const char* name, unsigned long* out);

// "xxxx:xxxx:xxxx:xxxx" -> the 64-bit value in network byte order; EINVAL
// for text that does not parse.
rdma::Status read_guid(const std::string& dir, const char* name, uint64_t* be_out);

// "xxxx:...:xxxx" (8 groups) -> 16 bytes in network order; EINVAL as above.
rdma::Status read_gid(const std::string& dir, const char* name, uint8_t raw[16]);

}  // namespace umad::sysfs
