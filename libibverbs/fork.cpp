// fork() safety: with ibv_fork_init (or RDMAV_FORK_SAFE), registered ranges
// are marked MADV_DONTFORK so a child never shares pages the HCA may DMA
// into; ranges registered twice are reference counted page by page.
// Kernels with copy-on-fork support for pinned pages need none of this.
#include "libibverbs/ibverbs.h"
#include "util/c_entry.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

using namespace rdma::verbs;

namespace {

std::mutex g_fork_mutex;
bool g_fork_enabled = false;
bool g_too_late = false;  // memory was registered before ibv_fork_init
long g_page_size = 0;

// Disjoint page-aligned intervals [start, end) with their reference count.
struct Span {
    uintptr_t end;
    int refs;
};
std::map<uintptr_t, Span> g_spans;

void split_at(uintptr_t at) {
    auto it = g_spans.upper_bound(at);
    if (it == g_spans.begin())
        return;
    --it;
    if (it->first < at && at < it->second.end) {
        // Insert first: if that cannot allocate, nothing has changed.
        g_spans.emplace(at, Span{it->second.end, it->second.refs});
        it->second.end = at;
    }
}

int adjust(void* base, size_t size, int delta) {
    if (!size)
        return 0;
    const uintptr_t ps = static_cast<uintptr_t>(g_page_size);
    const uintptr_t start = reinterpret_cast<uintptr_t>(base) & ~(ps - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(base) + size + ps - 1) & ~(ps - 1);
    split_at(start);
    split_at(end);
    // Fill holes with zero-count spans so every page has an entry.
    std::vector<std::pair<uintptr_t, uintptr_t>> holes;
    uintptr_t cur = start;
    for (auto it = g_spans.lower_bound(start); it != g_spans.end() && it->first < end; ++it) {
        if (it->first > cur)
            holes.emplace_back(cur, it->first);
        cur = it->second.end;
    }
    if (cur < end)
        holes.emplace_back(cur, end);
    for (auto [b, e] : holes)
        g_spans.emplace(b, Span{e, 0});
    int err = 0;
    for (auto it = g_spans.lower_bound(start); it != g_spans.end() && it->first < end;) {
        Span& s = it->second;
        const int before = s.refs;
        const int after = before + delta;
        if (after < 0) {  // undoing more than was done: ignore quietly
            ++it;
            continue;
        }
        int advice = -1;
        if (before == 0 && after > 0)
            advice = MADV_DONTFORK;
        else if (before > 0 && after == 0)
            advice = MADV_DOFORK;
        if (advice >= 0 && madvise(reinterpret_cast<void*>(it->first), s.end - it->first, advice) != 0) {
            err = errno;
            break;
        }
        s.refs = after;
        if (after == 0)
            it = g_spans.erase(it);
        else
            ++it;
    }
    return err;
}

}  // namespace

extern "C" {

// An allocation failing in adjust() (std::bad_alloc, ENOMEM at the
// barrier) happens before any reference count changes: at most some spans
// were split or zero-count spans added, which describe the same pages.

RDMA_EXPORT int ibv_fork_init(void) {
    return rdma::entry_errno([]() -> int {
        std::lock_guard lock(g_fork_mutex);
        if (g_fork_enabled)
            return 0;
        if (kernel_copy_on_fork())
            return 0;
        // Ranges registered earlier were never marked: protection can no
        // longer be complete, so refuse rather than pretend.
        if (g_too_late)
            return EINVAL;
        g_page_size = sysconf(_SC_PAGESIZE);
        if (g_page_size <= 0)
            return errno;
        // Probe that this kernel honours MADV_DONTFORK at all.
        void* probe = nullptr;
        if (posix_memalign(&probe, static_cast<size_t>(g_page_size), static_cast<size_t>(g_page_size)))
            return ENOMEM;
        int rc = madvise(probe, static_cast<size_t>(g_page_size), MADV_DONTFORK);
        if (rc == 0)
            rc = madvise(probe, static_cast<size_t>(g_page_size), MADV_DOFORK);
        free(probe);
        if (rc)
            return ENOSYS;
        g_fork_enabled = true;
        return 0;
    });
}

// Undecidable (the netlink probe failed to allocate): not protected.
RDMA_EXPORT ibv_fork_status ibv_is_fork_initialized(void) {
    return rdma::entry_value(IBV_FORK_DISABLED, [] {
        if (kernel_copy_on_fork())
            return IBV_FORK_UNNEEDED;
        std::lock_guard lock(g_fork_mutex);
        return g_fork_enabled ? IBV_FORK_ENABLED : IBV_FORK_DISABLED;
    });
}

RDMA_EXPORT int ibv_dontfork_range(void* base, size_t size) {
    return rdma::entry_errno([&] {
        std::lock_guard lock(g_fork_mutex);
        if (!g_fork_enabled) {
            g_too_late = true;
            return 0;
        }
        return adjust(base, size, +1);
    });
}

RDMA_EXPORT int ibv_dofork_range(void* base, size_t size) {
    return rdma::entry_errno([&] {
        std::lock_guard lock(g_fork_mutex);
        return g_fork_enabled ? adjust(base, size, -1) : 0;
    });
}

}  // extern "C"
