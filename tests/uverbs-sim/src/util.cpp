// Application memory access that cannot crash the host process, and the
// trace log.
#include "sim.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

namespace uvsim {

namespace {
uint64_t g_arena_base = 0;
size_t g_arena_len = 0;
thread_local std::vector<std::pair<uint64_t, size_t>> t_kernel_buffers;

bool inside(uint64_t a, size_t len, uint64_t base, size_t blen) {
    return a >= base && len <= blen && a - base <= blen - len;
}

bool in_arena(uint64_t a, size_t len) {
    if (!g_arena_len)
        return true;
    if (inside(a, len, g_arena_base, g_arena_len))
        return true;
    for (const auto& [b, l] : t_kernel_buffers)
        if (inside(a, len, b, l))
            return true;
    return false;
}
}  // namespace

KernelBuffer::KernelBuffer(const void* p, size_t len) {
    t_kernel_buffers.emplace_back(reinterpret_cast<uint64_t>(p), len);
}

KernelBuffer::~KernelBuffer() { t_kernel_buffers.pop_back(); }

void set_app_arena(uint64_t base, size_t len) {
    g_arena_base = base;
    g_arena_len = len;
}

bool app_read(void* dst, uint64_t src, size_t len) {
    if (!len)
        return true;
    if (!in_arena(src, len))
        return false;
    if (src + len < src)
        return false;
    iovec local{dst, len};
    iovec remote{reinterpret_cast<void*>(src), len};
    ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    return n == static_cast<ssize_t>(len);
}

bool app_write(uint64_t dst, const void* src, size_t len) {
    if (!len)
        return true;
    if (!in_arena(dst, len))
        return false;
    if (dst + len < dst)
        return false;
    iovec local{const_cast<void*>(src), len};
    iovec remote{reinterpret_cast<void*>(dst), len};
    ssize_t n = process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
    return n == static_cast<ssize_t>(len);
}

bool app_range_ok(uint64_t addr, size_t len, bool) {
    if (!len)
        return true;
    if (!addr || addr + len < addr || !in_arena(addr, len))
        return false;
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t start = addr & ~(page - 1);
    const uint64_t end = (addr + len + page - 1) & ~(page - 1);
    const size_t pages = (end - start) / page;
    // mincore fails with ENOMEM when any page of the range is unmapped
    std::vector<unsigned char> vec(std::min<size_t>(pages, 1u << 20));
    for (uint64_t a = start; a < end;) {
        size_t n = std::min<uint64_t>((end - a) / page, vec.size());
        if (mincore(reinterpret_cast<void*>(a), n * page, vec.data()) != 0)
            return false;
        a += n * page;
    }
    return true;
}

bool g_trace_on = false;

namespace {

int trace_fd() {
    static const int fd = [] {
        const std::string& f = cfg().trace_file;
        if (f.empty())
            return -1;
        if (f == "-")
            return 2;
        return libc().open(f.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }();
    return fd;
}

struct TraceInit {
    TraceInit() { g_trace_on = !cfg().trace_file.empty() && trace_fd() >= 0; }
};

}  // namespace

void trace_line(const char* fmt, ...) {
    int fd = trace_fd();
    if (fd < 0)
        return;
    char buf[1024];
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int n = snprintf(buf, sizeof buf, "uverbs-sim[%d] %ld.%06ld ", getpid(), static_cast<long>(ts.tv_sec),
                     ts.tv_nsec / 1000);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
    va_end(ap);
    size_t len = std::min<size_t>(n + std::max(m, 0), sizeof buf - 2);
    buf[len++] = '\n';
    (void)libc().write(fd, buf, len);
}

// Runs when the library loads: decides whether tracing is on.
static TraceInit g_trace_init __attribute__((init_priority(65535)));

}  // namespace uvsim
