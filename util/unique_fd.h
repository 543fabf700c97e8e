// Owners of a file descriptor and of an open directory: closed exactly once,
// on every path out, errno left as it was (a close after a failure must not
// overwrite the errno being reported).
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace rdma {

class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& o) noexcept {
        if (this != &o)
            reset(std::exchange(o.fd_, -1));
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }

    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    // Hands the fd over to someone else who will close it.
    int release() { return std::exchange(fd_, -1); }
    void reset(int fd = -1) {
        if (fd_ >= 0) {
            const int e = errno;
            ::close(fd_);
            errno = e;
        }
        fd_ = fd;
    }

private:
    int fd_ = -1;
};

class UniqueDir {
public:
    explicit UniqueDir(DIR* d) : d_(d) {}
    UniqueDir(const UniqueDir&) = delete;
    UniqueDir& operator=(const UniqueDir&) = delete;
    ~UniqueDir() {
        if (d_) {
            const int e = errno;
            ::closedir(d_);
            errno = e;
        }
    }
    DIR* get() const { return d_; }
    explicit operator bool() const { return d_ != nullptr; }

private:
    DIR* d_;
};

}  // namespace rdma
