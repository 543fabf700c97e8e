// The rsocket configuration files (rsocket(7)): one integer per file in
// the configuration directory. Kept apart from the library's other parts so
// that the unit tests can exercise it without a device.
#include "rsocket_internal.h"
#include "util/file_io.h"

#include <cctype>
#include <climits>
#include <cstdio>

namespace rdma::rs {

namespace {

// The first 63 bytes of a value file count (as the reference reads them).
template <class T>
void read_value(const std::string& dir, const char* name, T& field) {
    Result<std::string> text = read_file(dir + "/" + name);
    uint32_t v;
    if (text && parse_config_value(text->substr(0, 63), v))
        field = static_cast<T>(v);
}

}  // namespace

bool parse_config_value(const std::string& text, uint32_t& out) {
    size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
        i++;
    bool neg = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-'))
        neg = text[i++] == '-';
    if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i])))
        return false;
    // scanf("%u") converts with strtoul and stores the unsigned long in
    // an unsigned int: a value past ULONG_MAX is ULONG_MAX (whatever the
    // sign), a smaller one is negated if signed, then cut to 32 bits.
    unsigned long v = 0;
    bool overflow = false;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); i++) {
        const unsigned d = static_cast<unsigned>(text[i] - '0');
        if (v > (ULONG_MAX - d) / 10)
            overflow = true;
        v = v * 10 + d;
    }
    if (overflow)
        v = ULONG_MAX;
    else if (neg)
        v = 0ul - v;
    out = static_cast<uint32_t>(v);
    return true;
}

Config read_config(const std::string& dir) {
    Config c;
    read_value(dir, "polling_time", c.polling_time);
    read_value(dir, "wake_up_interval", c.wake_up_interval);
    read_value(dir, "inline_default", c.inline_default);
    read_value(dir, "sqsize_default", c.sqsize_default);
    read_value(dir, "rqsize_default", c.rqsize_default);
    read_value(dir, "mem_default", c.mem_default);
    if (c.mem_default < 1)
        c.mem_default = 1;
    read_value(dir, "wmem_default", c.wmem_default);
    if (c.wmem_default < kSendLowWater)
        c.wmem_default = kSendLowWater << 1;
    uint16_t iomap = c.iomap_size;
    read_value(dir, "iomap_size", iomap);
    // Only sizes the connection data can carry survive (the file value is
    // read as an encoded size first, as the reference does).
    auto encode = [](int value) { return value <= 128 ? value : 128 | (value >> 8); };
    auto decode = [](int value) { return value <= 128 ? value : (value & ~128) << 8; };
    c.iomap_size = static_cast<uint8_t>(encode(static_cast<uint16_t>(decode(iomap))));
    return c;
}

}  // namespace rdma::rs
