// The queue lock of the providers' data paths. The reference keeps one
// spinlock per queue side; ours is inline (an exchange to take, a release
// store to drop) instead of a call into libpthread through the PLT, so the
// fast path saves the two calls and the registers they force it to keep.
// Lockable, for std::lock_guard. `enabled = false` makes it a no-op, for
// queues the application promised to use from one thread only.
#pragma once

#include <atomic>

namespace rdma {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

class SpinLock {
public:
    SpinLock() = default;
    SpinLock(const SpinLock&) = delete;
    SpinLock& operator=(const SpinLock&) = delete;
    void lock() {
        while (held_.exchange(true, std::memory_order_acquire)) {
            while (held_.load(std::memory_order_relaxed))
                cpu_relax();
        }
    }
    void unlock() { held_.store(false, std::memory_order_release); }

private:
    std::atomic<bool> held_{false};
};

// A SpinLock that may be switched off once, before the queue is used.
class OptionalSpinLock {
public:
    void disable() { enabled_ = false; }
    void lock() {
        if (enabled_)
            lock_.lock();
    }
    void unlock() {
        if (enabled_)
            lock_.unlock();
    }

private:
    SpinLock lock_;
    bool enabled_ = true;
};

}  // namespace rdma
