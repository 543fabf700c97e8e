// Fuzzers of file parsers hand the parser a real file: the input goes into
// a memfd, named through /proc/self/fd, so the library's own open/read
// path runs as it does on a real file.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace rdma::fuzz {

class MemFile {
public:
    MemFile(const void* data, size_t size) {
        fd_ = memfd_create("fuzz-input", MFD_CLOEXEC);
        if (fd_ >= 0 && size && write(fd_, data, size) != static_cast<ssize_t>(size)) {
            close(fd_);
            fd_ = -1;
        }
        path_ = "/proc/self/fd/" + std::to_string(fd_);
    }
    ~MemFile() {
        if (fd_ >= 0)
            close(fd_);
    }
    MemFile(const MemFile&) = delete;
    MemFile& operator=(const MemFile&) = delete;
    bool ok() const { return fd_ >= 0; }
    const std::string& path() const { return path_; }

private:
    int fd_ = -1;
    std::string path_;
};

}  // namespace rdma::fuzz
