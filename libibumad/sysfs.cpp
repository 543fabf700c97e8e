// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "sysfs.h"
#include "util/file_io.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <endian.h>
#include <fcntl.h>
#include <unistd.h>

namespace umad::sysfs {

using rdma::Errno;
using rdma::Status;

Status read_string(const std::string& dir, const char* name, char* buf, size_t max) {
    const std::string path = dir + "/" + name;
    rdma::Result<size_t> n = rdma::read_file_into(path.c_str(), buf, max);
    if (!n)
        return Errno{n.error()};
    if (*n > 0 && buf[*n - 1] == '\n')
        buf[*n - 1] = '\0';
    return {};
}

Status read_ulong(const std::string& dir, const char* name, unsigned long* out) {
    char buf[64];
    if (Status s = read_string(dir, name, buf, sizeof(buf)); !s.ok())
        return s;
    *out = std::strtoul(buf, nullptr, 0);
    return {};
}

Status read_uint(const std::string& dir, const char* name, unsigned* out) {
    unsigned long v;
    if (Status s = read_ulong(dir, name, &v); !s.ok())
        return s;
    *out = static_cast<unsigned>(v);
    return {};
}

// Parses colon-separated 16-bit hex groups into raw bytes (big-endian);
// EINVAL for text that is not such groups. errno is left as the caller had
// it (callers report their own failures with %m, so a successful parse must
// not clear it).
static Status parse_groups(const char* s, uint8_t* raw, int groups) {
    const int saved = errno;
    for (int i = 0; i < groups; i++) {
        char* end;
        errno = 0;
        unsigned long v = std::strtoul(s, &end, 16);
        const bool overflow = errno != 0;
        errno = saved;
        if (end == s || v > 0xffff || overflow)
            return Errno{EINVAL};
        raw[2 * i] = static_cast<uint8_t>(v >> 8);
        raw[2 * i + 1] = static_cast<uint8_t>(v);
        if (i + 1 < groups) {
            if (*end != ':')
                return Errno{EINVAL};
            s = end + 1;
        }
    }
    return {};
}

Status read_guid(const std::string& dir, const char* name, uint64_t* be_out) {
    char buf[64];
    if (Status s = read_string(dir, name, buf, sizeof(buf)); !s.ok())
        return s;
    uint8_t raw[8];
    if (Status s = parse_groups(buf, raw, 4); !s.ok())
        return s;
    std::memcpy(be_out, raw, sizeof(raw));
    return {};
}

Status read_gid(const std::string& dir, const char* name, uint8_t raw[16]) {
    char buf[80];
    if (Status s = read_string(dir, name, buf, sizeof(buf)); !s.ok())
        return s;
    return parse_groups(buf, raw, 8);
}

}  // namespace umad::sysfs
