// The real libc functions behind the interposers, and the registry of the
// fds the emulator owns. In the core (not interpose.cpp) so that unit tests
// and fuzzers, which link the core without LD_PRELOAD, use the same code:
// dlsym(RTLD_NEXT) then simply finds libc's own functions.
#include "sim.h"

#include <dlfcn.h>

namespace uvsim {

namespace {

template <class F>
F next(const char* name) {
    return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

std::atomic<uint8_t> g_fd_kind[kMaxFd];

}  // namespace

const Libc& libc() {
    static const Libc l = [] {
        Libc x{};
        x.open = next<decltype(x.open)>("open");
        x.openat = next<decltype(x.openat)>("openat");
        x.close = next<decltype(x.close)>("close");
        x.read = next<decltype(x.read)>("read");
        x.write = next<decltype(x.write)>("write");
        x.ioctl = next<decltype(x.ioctl)>("ioctl");
        x.mmap = next<decltype(x.mmap)>("mmap");
        x.munmap = next<decltype(x.munmap)>("munmap");
        x.socket = next<decltype(x.socket)>("socket");
        x.fcntl = next<decltype(x.fcntl)>("fcntl");
        return x;
    }();
    return l;
}

void fd_mark(int fd, FdKind k) {
    if (fd >= 0 && fd < kMaxFd)
        g_fd_kind[fd].store(static_cast<uint8_t>(k), std::memory_order_release);
}

FdKind fd_kind(int fd) {
    if (fd < 0 || fd >= kMaxFd)
        return FdKind::None;
    return static_cast<FdKind>(g_fd_kind[fd].load(std::memory_order_acquire));
}

}  // namespace uvsim
