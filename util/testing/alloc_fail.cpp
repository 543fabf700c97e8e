// Replacement global allocation functions with a failure switch; see
// alloc_fail.h.
#include "util/testing/alloc_fail.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

// -1: disarmed; otherwise the allocations still allowed before one fails.
std::atomic<long> g_budget{-1};
std::atomic<bool> g_injected{false};
std::atomic<std::size_t> g_count{0};

// True when this allocation is the one to fail.
bool should_fail() {
    g_count.fetch_add(1, std::memory_order_relaxed);
    long b = g_budget.load(std::memory_order_relaxed);
    while (b >= 0) {
        if (g_budget.compare_exchange_weak(b, b - 1, std::memory_order_relaxed)) {
            if (b == 0) {
                g_injected.store(true, std::memory_order_relaxed);
                return true;
            }
            return false;
        }
    }
    return false;
}

void* allocate(std::size_t n, std::size_t align) {
    if (n == 0)
        n = 1;
    void* p = nullptr;
    if (align <= alignof(std::max_align_t))
        p = std::malloc(n);
    else if (posix_memalign(&p, align, n) != 0)
        p = nullptr;
    return p;
}

void* allocate_or_throw(std::size_t n, std::size_t align = alignof(std::max_align_t)) {
    if (should_fail())
        throw std::bad_alloc();
    void* p = allocate(n, align);
    if (!p)
        throw std::bad_alloc();
    return p;
}

void* allocate_or_null(std::size_t n, std::size_t align = alignof(std::max_align_t)) noexcept {
    if (should_fail())
        return nullptr;
    return allocate(n, align);
}

}  // namespace

namespace rdma::allocfail {

void fail_after(std::size_t n) {
    g_injected.store(false);
    g_budget.store(static_cast<long>(n));
}

bool disarm() {
    g_budget.store(-1);
    return g_injected.exchange(false);
}

std::size_t allocations() { return g_count.load(); }

std::size_t sweep(const std::function<void(const std::function<bool()>& injected)>& attempt, std::size_t max_runs) {
    for (std::size_t n = 0; n < max_runs; n++) {
        bool hit = false;
        bool decided = false;
        auto injected = [&] {
            if (!decided) {
                hit = disarm();
                decided = true;
            }
            return hit;
        };
        fail_after(n);
        attempt(injected);
        if (!injected())
            return n + 1;
    }
    disarm();
    return 0;
}

}  // namespace rdma::allocfail

// The replacements. The sized/aligned deletes all come back to free().
void* operator new(std::size_t n) { return allocate_or_throw(n); }
void* operator new[](std::size_t n) { return allocate_or_throw(n); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate_or_null(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate_or_null(n); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return allocate_or_null(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return allocate_or_null(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
