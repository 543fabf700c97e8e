// What a test or fuzz program linking uverbs_sim_core (without the
// LD_PRELOAD interposers of interpose.cpp) needs from the host side: the
// real libc entry points and the fd registry. Weak, so that a definition
// the core library may carry itself one day takes precedence.
#include "sim.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace uvsim {

namespace {
constexpr int kShimMaxFd = 1 << 16;
std::atomic<uint8_t> g_shim_fd_kind[kShimMaxFd];
}  // namespace

__attribute__((weak)) const Libc& libc() {
    // Not interposed here: the plain libc functions are the real ones.
    static const Libc l = [] {
        Libc x{};
        x.open = &::open;
        x.openat = &::openat;
        x.close = &::close;
        x.read = &::read;
        x.write = &::write;
        x.ioctl = reinterpret_cast<int (*)(int, unsigned long, ...)>(&::ioctl);
        x.mmap = &::mmap;
        x.munmap = &::munmap;
        x.socket = &::socket;
        x.fcntl = &::fcntl;
        return x;
    }();
    return l;
}

__attribute__((weak)) void fd_mark(int fd, FdKind k) {
    if (fd >= 0 && fd < kShimMaxFd)
        g_shim_fd_kind[fd].store(static_cast<uint8_t>(k), std::memory_order_release);
}

__attribute__((weak)) FdKind fd_kind(int fd) {
    if (fd < 0 || fd >= kShimMaxFd)
        return FdKind::None;
    return static_cast<FdKind>(g_shim_fd_kind[fd].load(std::memory_order_acquire));
}

}  // namespace uvsim
