// Small file helpers that go through plain open/read/close, so that
// LD_PRELOAD shims wrapping those calls (ibsim's umad2sim) see every access.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace rdma {

// Read a whole (small) file. Errors carry errno.
Result<std::string> read_file(const std::string& path);

// Read at most max-1 bytes of a small file into buf, NUL-terminated, with
// one read(2) and no allocation (a sysfs attribute gives its whole text at
// once). The byte count, or errno; max 0 is EINVAL.
Result<size_t> read_file_into(const char* path, char* buf, size_t max);

// Read a sysfs attribute: the file's text with trailing newlines removed.
Result<std::string> read_sysfs_attr(const std::string& path);

// Names of the entries of a directory, "." and ".." excluded, sorted.
Result<std::vector<std::string>> list_dir(const std::string& path);

// Parse helpers: whole string must be consumed (surrounding space allowed).
std::optional<uint64_t> parse_u64(std::string_view s, int base = 10);
std::optional<int64_t> parse_i64(std::string_view s, int base = 10);

// "a8ee:47ff:fef3:e393" (sysfs GUID format) -> host-order value.
std::optional<uint64_t> parse_guid(std::string_view s);

}  // namespace rdma
