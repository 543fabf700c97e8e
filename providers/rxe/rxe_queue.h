// The rings rdma_rxe shares with userspace. The kernel allocates each ring
// and hands back an mminfo (offset and size to mmap on the command fd); the
// ring header (struct rxe_queue_buf) holds the element size, the index mask
// and, on separate cache lines, the producer and consumer indices. Both
// sides keep the indices masked; one slot always stays empty so that
// "equal" means "empty".
//
// Whoever produces writes the element, then publishes the producer index
// with release order; the consumer reads the producer index with acquire
// order before it looks at the element, and publishes its own index with
// release order so the producer never reuses a slot still being read.
#pragma once

// glibc's <netinet/in.h> must come before the uapi header's <linux/in.h>,
// which then leaves out the structs both define.
#include <netinet/in.h>
#include <rdma/rdma_user_rxe.h>

#include "util/spinlock.h"

#include <pthread.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace rdma::rxe {

using rdma::SpinLock;

// Index arithmetic on a mapped ring. Callers hold the lock of their side.
namespace ring {

inline std::atomic_ref<uint32_t> producer(rxe_queue_buf* q) { return std::atomic_ref<uint32_t>(q->producer_index); }
inline std::atomic_ref<uint32_t> consumer(rxe_queue_buf* q) { return std::atomic_ref<uint32_t>(q->consumer_index); }

inline uint32_t next(const rxe_queue_buf* q, uint32_t index) { return (index + 1) & q->index_mask; }

inline void* slot(rxe_queue_buf* q, uint32_t index) {
    return q->data + (static_cast<size_t>(index & q->index_mask) << q->log2_elem_size);
}

inline size_t elem_size(const rxe_queue_buf* q) { return size_t{1} << q->log2_elem_size; }

// Producer side (send and receive queues: we produce, the kernel consumes).
inline uint32_t produced(rxe_queue_buf* q) { return producer(q).load(std::memory_order_relaxed); }

// Would a new element at `index` (not yet published) fill the ring?
inline bool full_at(rxe_queue_buf* q, uint32_t index) {
    const uint32_t cons = consumer(q).load(std::memory_order_acquire);
    return ((index + 1 - cons) & q->index_mask) == 0;
}

inline void publish(rxe_queue_buf* q, uint32_t new_producer) {
    producer(q).store(new_producer, std::memory_order_release);
}

// Consumer side (completion queues: the kernel produces, we consume).
inline uint32_t consumed(rxe_queue_buf* q) { return consumer(q).load(std::memory_order_relaxed); }

inline bool empty_at(rxe_queue_buf* q, uint32_t index) {
    const uint32_t prod = producer(q).load(std::memory_order_acquire);
    return ((prod - index) & q->index_mask) == 0;
}

inline void retire(rxe_queue_buf* q, uint32_t new_consumer) {
    consumer(q).store(new_consumer, std::memory_order_release);
}

}  // namespace ring

// The SGE list or inline data after a WQE's rxe_dma_info header. The uapi
// declares it with __DECLARE_FLEX_ARRAY, which in C++ puts a one-byte empty
// struct before the array and so moves it 8 bytes past where the kernel
// (C) has it; we address it by the C layout instead of through the member.
inline constexpr size_t kDmaHeaderSize = offsetof(rxe_dma_info, reserved) + sizeof(uint32_t);
static_assert(kDmaHeaderSize == 24 && kDmaHeaderSize % alignof(rxe_sge) == 0);

inline rxe_sge* dma_sges(rxe_dma_info& dma) {
    return reinterpret_cast<rxe_sge*>(reinterpret_cast<uint8_t*>(&dma) + kDmaHeaderSize);
}
inline uint8_t* dma_inline(rxe_dma_info& dma) { return reinterpret_cast<uint8_t*>(&dma) + kDmaHeaderSize; }

// Bytes of a WQE before its payload, as the kernel lays it out.
inline constexpr size_t kSendWqeHeader = offsetof(rxe_send_wqe, dma) + kDmaHeaderSize;
inline constexpr size_t kRecvWqeHeader = offsetof(rxe_recv_wqe, dma) + kDmaHeaderSize;

// Owns one mapping of a kernel ring; unmaps exactly once.
class QueueMapping {
public:
    QueueMapping() = default;
    ~QueueMapping() { reset(); }
    QueueMapping(const QueueMapping&) = delete;
    QueueMapping& operator=(const QueueMapping&) = delete;
    QueueMapping(QueueMapping&& o) noexcept : buf_(std::exchange(o.buf_, nullptr)), size_(std::exchange(o.size_, 0)) {}
    QueueMapping& operator=(QueueMapping&& o) noexcept {
        if (this != &o) {
            reset();
            buf_ = std::exchange(o.buf_, nullptr);
            size_ = std::exchange(o.size_, 0);
        }
        return *this;
    }

    // 0 or the errno of mmap. A zero-sized mminfo means "no ring" (a QP
    // whose receives go to an SRQ) and maps nothing.
    int map(int cmd_fd, const mminfo& mi) {
        reset();
        if (mi.size == 0)
            return 0;
        void* p = ::mmap(nullptr, mi.size, PROT_READ | PROT_WRITE, MAP_SHARED, cmd_fd, static_cast<off_t>(mi.offset));
        if (p == MAP_FAILED)
            return errno;
        buf_ = static_cast<rxe_queue_buf*>(p);
        size_ = mi.size;
        return 0;
    }

    void reset() {
        if (buf_)
            ::munmap(buf_, size_);
        buf_ = nullptr;
        size_ = 0;
    }

    rxe_queue_buf* buf() const { return buf_; }
    explicit operator bool() const { return buf_ != nullptr; }

private:
    rxe_queue_buf* buf_ = nullptr;
    size_t size_ = 0;
};

}  // namespace rdma::rxe
