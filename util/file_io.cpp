#include "util/file_io.h"

#include <algorithm>
#include <cctype>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

namespace rdma {

Result<std::string> read_file(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return Errno{errno};
    std::string out;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            ::close(fd);
            return Errno{e};
        }
        if (n == 0)
            break;
        out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
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
    DIR* d = ::opendir(path.c_str());
    if (!d)
        return Errno{errno};
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
        std::string_view n = e->d_name;
        if (n == "." || n == "..")
            continue;
        names.emplace_back(n);
    }
    ::closedir(d);
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
    s = trim(s);
    uint64_t v = 0;
    int groups = 0;
    while (!s.empty()) {
        size_t colon = s.find(':');
        std::string_view part = s.substr(0, colon);
        if (part.empty() || part.size() > 4)
            return std::nullopt;
        auto g = parse_u64(part, 16);
        if (!g)
            return std::nullopt;
        v = (v << 16) | *g;
        ++groups;
        if (colon == std::string_view::npos)
            break;
        s.remove_prefix(colon + 1);
    }
    if (groups != 4)
        return std::nullopt;
    return v;
}

}  // namespace rdma
