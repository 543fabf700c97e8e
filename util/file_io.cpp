#include "util/file_io.h"
#include "util/unique_fd.h"

#include <algorithm>
#include <cctype>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

namespace rdma {

Result<std::string> read_file(const std::string& path) {
    // The fd is closed on every way out, including a std::string that
    // cannot grow (the caller's barrier turns that into ENOMEM).
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
        return Errno{errno};
    std::string out;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof(buf));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return Errno{errno};
        }
        if (n == 0)
            break;
        out.append(buf, static_cast<size_t>(n));
    }
    return out;
}

Result<size_t> read_file_into(const char* path, char* buf, size_t max) {
    if (!max)
        return Errno{EINVAL};
    UniqueFd fd(::open(path, O_RDONLY));
    if (!fd)
        return Errno{errno};
    ssize_t n;
    do {
        n = ::read(fd.get(), buf, max - 1);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return Errno{errno};
    buf[n] = '\0';
    return static_cast<size_t>(n);
}

Result<std::string> read_sysfs_attr(const std::string& path) {
    auto r = read_file(path);
    if (!r)
        return r;
    std::string& s = r.value();
    while (!s.empty() && (s.back() == '\n' || s.back() == '\0'))
        s.pop_back();
    return r;
}

Result<std::vector<std::string>> list_dir(const std::string& path) {
    UniqueDir d(::opendir(path.c_str()));
    if (!d)
        return Errno{errno};
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d.get())) {
        std::string_view n = e->d_name;
        if (n == "." || n == "..")
            continue;
        names.emplace_back(n);
    }
    std::sort(names.begin(), names.end());
    return names;
}

static std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s;
}

std::optional<uint64_t> parse_u64(std::string_view s, int base) {
    s = trim(s);
    if (s.empty() || s.front() == '-')
        return std::nullopt;
    std::string tmp(s);
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(tmp.c_str(), &end, base);
    if (errno || end != tmp.c_str() + tmp.size())
        return std::nullopt;
    return v;
}

std::optional<int64_t> parse_i64(std::string_view s, int base) {
    s = trim(s);
    if (s.empty())
        return std::nullopt;
    std::string tmp(s);
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(tmp.c_str(), &end, base);
    if (errno || end != tmp.c_str() + tmp.size())
        return std::nullopt;
    return v;
}

std::optional<uint64_t> parse_guid(std::string_view s) {
    // Exactly four groups of one to four hex digits: no sign, "0x" or
    // blank inside a group (parse_u64 would take those), and no ':' after
    // the last group.
    s = trim(s);
    uint64_t v = 0;
    for (int group = 0; group < 4; ++group) {
        size_t n = 0;
        unsigned g = 0;
        for (; n < s.size() && std::isxdigit(static_cast<unsigned char>(s[n])); ++n) {
            const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[n])));
            g = g << 4 | static_cast<unsigned>(c <= '9' ? c - '0' : c - 'a' + 10);
        }
        if (n == 0 || n > 4)
            return std::nullopt;
        v = (v << 16) | g;
        s.remove_prefix(n);
        if (group < 3) {
            if (s.empty() || s.front() != ':')
                return std::nullopt;
            s.remove_prefix(1);
        }
    }
    if (!s.empty())
        return std::nullopt;
    return v;
}

}  // namespace rdma
