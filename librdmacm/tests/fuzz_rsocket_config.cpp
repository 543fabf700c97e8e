// Fuzzer: the rsocket configuration files (rsocket_config.cpp).
// parse_config_value must read any text exactly as glibc's sscanf("%u")
// does (the reference reads the files with fscanf). read_config on a
// directory made from the input must take each file's value as that
// parse of its first 63 bytes, apply the reference's clamps, and be a
// fixed point: the values it returns, written back out, read back the
// same. Input: byte 0 says which of the eight files exist; the rest is
// their texts, separated by 0xff bytes.
#include "librdmacm/rsocket_internal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

using rdma::rs::Config;

constexpr const char* kFiles[] = {"polling_time",   "wake_up_interval", "inline_default", "sqsize_default",
                                  "rqsize_default", "mem_default",      "wmem_default",   "iomap_size"};

void check(bool ok) {
    if (!ok)
        abort();
}

// What scanf("%u") stores, if it converts anything.
bool scanf_u(const std::string& text, uint32_t& v) {
    unsigned u = 0;
    if (sscanf(text.c_str(), "%u", &u) != 1)
        return false;
    v = u;
    return true;
}

// One scratch directory per process (in memory when /dev/shm is there:
// every input writes up to sixteen files), removed at exit.
class ScratchDir {
public:
    ScratchDir() {
        char shm[] = "/dev/shm/fuzz-rsocket-XXXXXX";
        char tmp[] = "/tmp/fuzz-rsocket-XXXXXX";
        const char* p = mkdtemp(shm);
        if (!p)
            p = mkdtemp(tmp);
        if (!p)
            abort();
        path_ = p;
    }
    ~ScratchDir() {
        for (const char* f : kFiles)
            unlink((path_ + "/" + f).c_str());
        rmdir(path_.c_str());
    }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

const std::string& dir() {
    static const ScratchDir d;
    return d.path();
}

void put(const char* name, std::string_view text) {
    const std::string path = dir() + "/" + name;
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        abort();
    close(fd);
}

void write_back(const Config& c) {
    const uint32_t v[] = {c.polling_time,   c.wake_up_interval, c.inline_default, c.sqsize_default,
                          c.rqsize_default, c.mem_default,      c.wmem_default,   c.iomap_size};
    for (size_t i = 0; i < 8; i++)
        put(kFiles[i], std::to_string(v[i]) + "\n");
}

bool same(const Config& a, const Config& b) {
    return a.polling_time == b.polling_time && a.wake_up_interval == b.wake_up_interval &&
        a.inline_default == b.inline_default && a.sqsize_default == b.sqsize_default &&
        a.rqsize_default == b.rqsize_default && a.mem_default == b.mem_default && a.wmem_default == b.wmem_default &&
        a.iomap_size == b.iomap_size;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string all(reinterpret_cast<const char*>(data), size);
    uint32_t got = 0, want = 0;
    const bool ok = rdma::rs::parse_config_value(all, got);
    check(ok == scanf_u(all, want) && (!ok || got == want));
    if (size == 0)
        return 0;

    // The directory: files present per the mask, texts split at 0xff.
    const uint8_t mask = data[0];
    std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    bool have[8] = {};
    uint32_t value[8] = {};
    for (size_t i = 0; i < 8; i++) {
        const size_t sep = rest.find('\xff');
        const std::string_view text = rest.substr(0, sep);
        rest = sep == std::string_view::npos ? std::string_view() : rest.substr(sep + 1);
        const std::string path = dir() + "/" + kFiles[i];
        if (!(mask & (1u << i))) {
            unlink(path.c_str());
            continue;
        }
        put(kFiles[i], text);
        have[i] = scanf_u(std::string(text.substr(0, 63)), value[i]);
    }
    const Config def;
    const Config c = rdma::rs::read_config(dir());
    check(c.polling_time == (have[0] ? value[0] : def.polling_time));
    check(c.wake_up_interval == (have[1] ? value[1] : def.wake_up_interval));
    check(c.inline_default == (have[2] ? static_cast<uint16_t>(value[2]) : def.inline_default));
    check(c.sqsize_default == (have[3] ? static_cast<uint16_t>(value[3]) : def.sqsize_default));
    check(c.rqsize_default == (have[4] ? static_cast<uint16_t>(value[4]) : def.rqsize_default));
    const uint32_t mem = have[5] ? value[5] : def.mem_default;
    check(c.mem_default == (mem < 1 ? 1 : mem));
    const uint32_t wmem = have[6] ? value[6] : def.wmem_default;
    check(c.wmem_default == (wmem < rdma::rs::kSendLowWater ? rdma::rs::kSendLowWater << 1 : wmem));
    if (!have[7])
        check(c.iomap_size == def.iomap_size);
    write_back(c);
    check(same(rdma::rs::read_config(dir()), c));
    return 0;
}
