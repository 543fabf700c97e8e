// Fuzzer: the sysfs attribute parsers of util/file_io.h. On any text,
// parse_u64 and parse_i64 (base 10 and 16) must agree with a model of
// their contract (surrounding blanks, an optional sign - none for u64 -,
// "0x" in base 16, digits only, in range), and parse_guid with the sysfs
// GUID format (four groups of one to four hex digits joined by ':', with
// surrounding blanks). Numbers and GUIDs made from the input's bytes, in
// every format the kernel or a person writes them, must parse back to
// themselves.
#include "util/file_io.h"

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace {

void check(bool ok) {
    if (!ok)
        abort();
}

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s;
}

int digit(char c, int base) {
    int d = -1;
    if (c >= '0' && c <= '9')
        d = c - '0';
    else if (c >= 'a' && c <= 'f')
        d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
        d = c - 'A' + 10;
    return d < base ? d : -1;
}

// Magnitude and sign of s, if it is a well-formed number of base.
struct Num {
    bool neg;
    uint64_t mag;
    bool overflow;
};
std::optional<Num> model(std::string_view s, int base) {
    s = trimmed(s);
    Num n{false, 0, false};
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        n.neg = s[0] == '-';
        s.remove_prefix(1);
    }
    if (base == 16 && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && digit(s[2], 16) >= 0)
        s.remove_prefix(2);
    if (s.empty())
        return std::nullopt;
    for (char c : s) {
        const int d = digit(c, base);
        if (d < 0)
            return std::nullopt;
        if (n.mag > (UINT64_MAX - static_cast<unsigned>(d)) / static_cast<unsigned>(base))
            n.overflow = true;
        n.mag = n.mag * static_cast<unsigned>(base) + static_cast<unsigned>(d);
    }
    return n;
}

std::optional<uint64_t> model_u64(std::string_view s, int base) {
    auto n = model(s, base);
    if (!n || n->neg || n->overflow)
        return std::nullopt;
    return n->mag;
}

std::optional<int64_t> model_i64(std::string_view s, int base) {
    auto n = model(s, base);
    if (!n || n->overflow)
        return std::nullopt;
    if (!n->neg)
        return n->mag <= INT64_MAX ? std::optional<int64_t>(static_cast<int64_t>(n->mag)) : std::nullopt;
    if (n->mag > static_cast<uint64_t>(INT64_MAX) + 1)
        return std::nullopt;
    return static_cast<int64_t>(0 - n->mag);
}

std::optional<uint64_t> model_guid(std::string_view s) {
    s = trimmed(s);
    uint64_t v = 0;
    for (int g = 0; g < 4; g++) {
        size_t n = 0;
        unsigned group = 0;
        while (n < s.size() && digit(s[n], 16) >= 0)
            group = group << 4 | static_cast<unsigned>(digit(s[n++], 16));
        if (n == 0 || n > 4)
            return std::nullopt;
        v = v << 16 | group;
        s.remove_prefix(n);
        if (g < 3) {
            if (s.empty() || s[0] != ':')
                return std::nullopt;
            s.remove_prefix(1);
        }
    }
    if (!s.empty())
        return std::nullopt;
    return v;
}

uint64_t u64_of(const uint8_t* p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

std::string fmt(const char* f, uint64_t v) {
    char buf[64];
    snprintf(buf, sizeof(buf), f, static_cast<unsigned>(v >> 48), static_cast<unsigned>(v >> 32 & 0xffff),
             static_cast<unsigned>(v >> 16 & 0xffff), static_cast<unsigned>(v & 0xffff));
    return buf;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view s(reinterpret_cast<const char*>(data), size);
    for (int base : {10, 16}) {
        check(rdma::parse_u64(s, base) == model_u64(s, base));
        check(rdma::parse_i64(s, base) == model_i64(s, base));
    }
    check(rdma::parse_guid(s) == model_guid(s));

    if (size < 8)
        return 0;
    const uint64_t v = u64_of(data);
    const auto i = static_cast<int64_t>(v);
    check(rdma::parse_u64(std::to_string(v)) == v);
    check(rdma::parse_u64(" " + std::to_string(v) + "\n") == v);
    char hex[32];
    snprintf(hex, sizeof(hex), "0x%" PRIx64, v);
    check(rdma::parse_u64(hex, 16) == v && rdma::parse_u64(hex + 2, 16) == v);
    check(rdma::parse_i64(std::to_string(i)) == i);
    check(rdma::parse_i64(std::to_string(i) + "\n") == i);
    // sysfs writes %04x groups; people write them in upper case or short.
    check(rdma::parse_guid(fmt("%04x:%04x:%04x:%04x\n", v)) == v);
    check(rdma::parse_guid(fmt("%04X:%04X:%04X:%04X", v)) == v);
    check(rdma::parse_guid(fmt(" %x:%x:%x:%x ", v)) == v);
    // and nothing else: a fifth group, a missing one, or a trailing ':'.
    check(!rdma::parse_guid(fmt("%04x:%04x:%04x:%04x:", v)));
    check(!rdma::parse_guid(fmt("%04x:%04x:%04x:%04x:0", v)));
    check(!rdma::parse_guid(fmt("%04x:%04x:%04x", v)));
    return 0;
}
