// The libc functions the emulator interposes (LD_PRELOAD). Each one asks a
// cheap question first (is this one of our fds? does the path start with
// /sys/class/infiniband or /dev/infiniband?) and otherwise calls libc as is.
#include "sim.h"
#include "ucma.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace uvsim {

namespace {

template <class F>
F next(const char* name) {
    return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

namespace {

constexpr int kRdmaCmNode = -2;  // cdev_index_of: /dev/infiniband/rdma_cm

// Opens /dev/infiniband/uverbsN: a real fd (on /dev/null, so poll/fcntl/dup
// behave) that the emulator answers for.
int open_uverbs(int index, int flags) {
    int fd = libc().open("/dev/null", O_RDWR | (flags & O_CLOEXEC));
    if (fd < 0)
        return -1;
    if (fd >= kMaxFd) {
        libc().close(fd);
        errno = EMFILE;
        return -1;
    }
    {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        auto ctx = std::make_unique<Context>();
        ctx->fd = fd;
        ctx->dev = &sim().devices.at(index);
        sim().files[fd] = std::move(ctx);
    }
    fd_mark(fd, FdKind::Uverbs);
    UVSIM_TRACE("open uverbs%d -> fd %d", index, fd);
    return fd;
}

void fake_cdev_stat(struct stat* st, int index) {
    memset(st, 0, sizeof *st);
    st->st_mode = S_IFCHR | 0666;
    st->st_rdev = index == kRdmaCmNode ? makedev(10, 58) : makedev(231, 192 + index);
    st->st_dev = makedev(0, 5);
    st->st_nlink = 1;
    st->st_blksize = 4096;
}

bool is_rdma_cm_path(const char* path) {
    if (!path)
        return false;
    if (strcmp(path, "/dev/infiniband/rdma_cm") == 0)
        return true;
    // the node's path in the tree (realpath of the node gives it)
    constexpr size_t kLen = sizeof("/dev/infiniband/rdma_cm") - 1;
    const size_t n = strlen(path);
    if (n <= kLen || strcmp(path + n - kLen, "/dev/infiniband/rdma_cm") != 0)
        return false;
    const std::string& root = tree_root();
    return !root.empty() && strncmp(path, root.c_str(), root.size()) == 0 &&
        strcmp(path + root.size(), "/dev/infiniband/rdma_cm") == 0;
}

// For stat-like calls: the path of a uverbs node gets a character device
// (its index), the rdma_cm node kRdmaCmNode.
int cdev_index_of(const char* path) {
    if (!path)
        return -1;
    if (is_rdma_cm_path(path))
        return kRdmaCmNode;
    if (strncmp(path, "/dev/infiniband/", 16) != 0)
        return -1;
    return uverbs_index_for_path(path);
}

bool is_cdev(int idx) { return idx >= 0 || idx == kRdmaCmNode; }

// stat/lstat of a path: uverbs nodes are character devices, the tree is
// mapped, the rest is libc's.
int path_stat(int (*real)(const char*, struct stat*), const char* path, struct stat* st) {
    if (int idx = cdev_index_of(path); is_cdev(idx)) {
        fake_cdev_stat(st, idx);
        return 0;
    }
    std::string m = map_path(path);
    return real(m.empty() ? path : m.c_str(), st);
}

// The end of every dup-like call: an emulated file's new fd is its file
// too, or the call fails (EMFILE) when the registry cannot hold the fd.
int dup_result(int oldfd, int newfd) {
    if (newfd < 0 || fd_kind(oldfd) == FdKind::None)
        return newfd;
    if (newfd >= kMaxFd) {
        libc().close(newfd);
        errno = EMFILE;
        return -1;
    }
    uverbs_dup(oldfd, newfd);
    return newfd;
}

// dup2/dup3 onto an emulated fd close it (when oldfd is open, so that the
// call will succeed).
void replaced(int oldfd, int newfd) {
    if (oldfd != newfd && fd_kind(newfd) != FdKind::None && libc().fcntl(oldfd, F_GETFD) >= 0)
        uverbs_close(newfd);
}

int do_open(const char* path, int flags, mode_t mode) {
    if (path && path[0] == '/') {
        int idx = cdev_index_of(path);
        if (idx == kRdmaCmNode)
            return ucma_open(flags);
        if (idx >= 0)
            return open_uverbs(idx, flags);
        std::string m = map_path(path);
        if (!m.empty())
            return libc().open(m.c_str(), flags, mode);
    }
    return libc().open(path, flags, mode);
}

int do_openat(int dirfd, const char* path, int flags, mode_t mode) {
    if (path && path[0] == '/')
        return do_open(path, flags, mode);
    return libc().openat(dirfd, path, flags, mode);
}

}  // namespace
}  // namespace uvsim

using namespace uvsim;

extern "C" {

__attribute__((visibility("default"))) int open(const char* path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    return do_open(path, flags, mode);
}

// The 64-bit names are the same functions on LP64.
__attribute__((visibility("default"), alias("open"))) int open64(const char* path, int flags, ...);
__attribute__((visibility("default"), alias("openat"))) int openat64(int dirfd, const char* path, int flags, ...);

__attribute__((visibility("default"))) int __open_2(const char* path, int flags) { return do_open(path, flags, 0); }
__attribute__((visibility("default"), alias("__open_2"))) int __open64_2(const char* path, int flags);

__attribute__((visibility("default"))) int openat(int dirfd, const char* path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    return do_openat(dirfd, path, flags, mode);
}

__attribute__((visibility("default"))) int __openat_2(int dirfd, const char* path, int flags) {
    return do_openat(dirfd, path, flags, 0);
}
__attribute__((visibility("default"), alias("__openat_2"))) int __openat64_2(int dirfd, const char* path, int flags);

__attribute__((visibility("default"))) FILE* fopen(const char* path, const char* mode) {
    static auto real = next<FILE* (*)(const char*, const char*)>("fopen");
    std::string m = map_path(path);
    return real(m.empty() ? path : m.c_str(), mode);
}
__attribute__((visibility("default"))) FILE* fopen64(const char* path, const char* mode) {
    static auto real = next<FILE* (*)(const char*, const char*)>("fopen64");
    std::string m = map_path(path);
    return real(m.empty() ? path : m.c_str(), mode);
}

__attribute__((visibility("default"))) DIR* opendir(const char* path) {
    static auto real = next<DIR* (*)(const char*)>("opendir");
    std::string m = map_path(path);
    return real(m.empty() ? path : m.c_str());
}

__attribute__((visibility("default"))) int scandir(const char* path, struct dirent*** list,
                                                   int (*sel)(const struct dirent*),
                                                   int (*cmp)(const struct dirent**, const struct dirent**)) {
    static auto real = next<int (*)(const char*, struct dirent***, int (*)(const struct dirent*),
                                    int (*)(const struct dirent**, const struct dirent**))>("scandir");
    std::string m = map_path(path);
    return real(m.empty() ? path : m.c_str(), list, sel, cmp);
}

__attribute__((visibility("default"))) ssize_t readlink(const char* path, char* buf, size_t len) {
    static auto real = next<ssize_t (*)(const char*, char*, size_t)>("readlink");
    std::string m = map_path(path);
    return real(m.empty() ? path : m.c_str(), buf, len);
}

__attribute__((visibility("default"))) char* realpath(const char* path, char* resolved) {
    static auto real = next<char* (*)(const char*, char*)>("realpath");
    std::string m = map_path(path);
    return real(m.empty() ? path : m.c_str(), resolved);
}

// The fortified and GNU spellings of the same calls (a program built with
// _FORTIFY_SOURCE calls __realpath_chk and __readlink_chk; UCX does).
__attribute__((visibility("default"))) char* __realpath_chk(const char* path, char* resolved, size_t) {
    return realpath(path, resolved);
}
__attribute__((visibility("default"))) char* canonicalize_file_name(const char* path) {
    return realpath(path, nullptr);
}
__attribute__((visibility("default"))) ssize_t __readlink_chk(const char* path, char* buf, size_t len, size_t) {
    return readlink(path, buf, len);
}

__attribute__((visibility("default"))) int access(const char* path, int mode) {
    static auto real = next<int (*)(const char*, int)>("access");
    if (is_cdev(cdev_index_of(path)))
        return 0;
    std::string m = map_path(path);
    return real(m.empty() ? path : m.c_str(), mode);
}

__attribute__((visibility("default"))) int stat(const char* path, struct stat* st) {
    static auto real = next<int (*)(const char*, struct stat*)>("stat");
    return path_stat(real, path, st);
}
__attribute__((visibility("default"))) int stat64(const char* path, struct stat64* st) {
    return stat(path, reinterpret_cast<struct stat*>(st));
}

__attribute__((visibility("default"))) int lstat(const char* path, struct stat* st) {
    static auto real = next<int (*)(const char*, struct stat*)>("lstat");
    return path_stat(real, path, st);
}
__attribute__((visibility("default"))) int lstat64(const char* path, struct stat64* st) {
    return lstat(path, reinterpret_cast<struct stat*>(st));
}

__attribute__((visibility("default"))) int fstat(int fd, struct stat* st) {
    static auto real = next<int (*)(int, struct stat*)>("fstat");
    if (fd_kind(fd) == FdKind::Cm) {
        fake_cdev_stat(st, kRdmaCmNode);
        return 0;
    }
    if (fd_kind(fd) == FdKind::Uverbs) {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        auto it = sim().files.find(fd);
        if (it != sim().files.end()) {
            fake_cdev_stat(st, it->second->dev->index);
            return 0;
        }
    }
    return real(fd, st);
}
__attribute__((visibility("default"))) int fstat64(int fd, struct stat64* st) {
    return fstat(fd, reinterpret_cast<struct stat*>(st));
}

__attribute__((visibility("default"))) int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
    static auto real = next<int (*)(int, const char*, struct stat*, int)>("fstatat");
    // glibc declares path nonnull, but a NULL from a caller must reach libc
    // (EFAULT), not crash here: hide the pointer from that assumption
    const char* p = path;
    asm("" : "+r"(p));
    if (p && p[0] == 0 && (flags & AT_EMPTY_PATH))
        return fstat(dirfd, st);
    if (int idx = cdev_index_of(path); is_cdev(idx)) {
        fake_cdev_stat(st, idx);
        return 0;
    }
    std::string m = map_path(path);
    return real(dirfd, m.empty() ? path : m.c_str(), st, flags);
}
__attribute__((visibility("default"))) int fstatat64(int dirfd, const char* path, struct stat64* st, int flags) {
    return fstatat(dirfd, path, reinterpret_cast<struct stat*>(st), flags);
}

// RDMA netlink is refused, as by a kernel without it: libibverbs then finds
// devices through sysfs.
__attribute__((visibility("default"))) int socket(int domain, int type, int protocol) {
    if (domain == AF_NETLINK && protocol == NETLINK_RDMA) {
        errno = EPROTONOSUPPORT;
        return -1;
    }
    return libc().socket(domain, type, protocol);
}

__attribute__((visibility("default"))) int ioctl(int fd, unsigned long request, ...) {
    va_list ap;
    va_start(ap, request);
    void* arg = va_arg(ap, void*);
    va_end(ap);
    if (fd_kind(fd) == FdKind::Uverbs) {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        auto it = sim().files.find(fd);
        if (it != sim().files.end()) {
            int r = uverbs_ioctl(*it->second, request, arg, fd);
            if (r < 0) {
                errno = -r;
                return -1;
            }
            return r;
        }
    }
    return libc().ioctl(fd, request, arg);
}

__attribute__((visibility("default"))) ssize_t write(int fd, const void* buf, size_t len) {
    if (fd_kind(fd) == FdKind::Cm) {
        ssize_t r = ucma_write(fd, buf, len);
        if (r < 0) {
            errno = static_cast<int>(-r);
            return -1;
        }
        return r;
    }
    if (fd_kind(fd) == FdKind::Uverbs) {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        auto it = sim().files.find(fd);
        if (it != sim().files.end()) {
            ssize_t r = uverbs_write(*it->second, buf, len);
            if (r < 0) {
                errno = static_cast<int>(-r);
                return -1;
            }
            return r;
        }
    }
    return libc().write(fd, buf, len);
}

__attribute__((visibility("default"))) void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
    if (fd_kind(fd) == FdKind::Uverbs) {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        auto it = sim().files.find(fd);
        if (it != sim().files.end()) {
            int err = 0;
            void* p = uverbs_mmap(*it->second, addr, len, prot, flags, off, err);
            if (p == MAP_FAILED)
                errno = err;
            return p;
        }
    }
    return libc().mmap(addr, len, prot, flags, fd, off);
}
__attribute__((visibility("default"))) void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
    return mmap(addr, len, prot, flags, fd, off);
}

// dup and its kin: the new fd is the same file, so it reaches the same
// context, as ibv_import_device expects of a dup'd cmd fd. An emulated fd
// that dup2/dup3 replace is closed first, as the kernel closes it.
__attribute__((visibility("default"))) int dup(int fd) {
    static auto real = next<int (*)(int)>("dup");
    return dup_result(fd, real(fd));
}

__attribute__((visibility("default"))) int dup2(int oldfd, int newfd) {
    static auto real = next<int (*)(int, int)>("dup2");
    replaced(oldfd, newfd);
    const int r = real(oldfd, newfd);
    return oldfd == newfd ? r : dup_result(oldfd, r);
}

__attribute__((visibility("default"))) int dup3(int oldfd, int newfd, int flags) {
    static auto real = next<int (*)(int, int, int)>("dup3");
    replaced(oldfd, newfd);
    return dup_result(oldfd, real(oldfd, newfd, flags));
}

// glibc 2.28 and later bind fcntl calls to fcntl64; older binaries to fcntl.
__attribute__((visibility("default"))) int fcntl64(int fd, int cmd, ...) {
    static auto real = next<int (*)(int, int, ...)>("fcntl64");
    va_list ap;
    va_start(ap, cmd);
    // every fcntl argument is an int or a pointer: one register either way
    long arg = va_arg(ap, long);
    va_end(ap);
    const int r = real(fd, cmd, arg);
    return cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC ? dup_result(fd, r) : r;
}

__attribute__((visibility("default"))) int fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    long arg = va_arg(ap, long);
    va_end(ap);
    const int r = libc().fcntl(fd, cmd, arg);
    return cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC ? dup_result(fd, r) : r;
}

__attribute__((visibility("default"))) int close(int fd) {
    if (fd_kind(fd) != FdKind::None)
        uverbs_close(fd);
    return libc().close(fd);
}

}  // extern "C"
