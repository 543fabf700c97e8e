// Completion queues: the kernel writes ib_uverbs_wc entries into a shared
// ring; polling copies them out and hands the slots back.
#include "providers/rxe/rxe.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <new>

namespace rdma::rxe {

namespace {

// The work-completion fields rxe's kernel fills for a user CQ.
constexpr uint64_t kSupportedWcFlags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | IBV_WC_EX_WITH_DLID_PATH_BITS;

// A ring whose slots cannot hold a completion is not one we can read.
bool usable_cq_ring(const QueueMapping& q) { return ring::elem_size(q.buf()) >= sizeof(ib_uverbs_wc); }

}  // namespace

RxeCq* RxeContext::new_cq(int cqe, ibv_comp_channel* channel, int comp_vector) {
    auto cq = std::unique_ptr<RxeCq>(new (std::nothrow) RxeCq{});
    if (!cq) {
        errno = ENOMEM;
        return nullptr;
    }
    rxe_create_cq_resp resp{};
    if (int e = cmd_create_cq(cqe, channel, comp_vector, &cq->vcq, Udata{nullptr, 0, &resp, sizeof(resp)})) {
        errno = e;
        return nullptr;
    }
    int e = cq->queue.map(cmd_fd(), resp.mi);
    if (!e && !usable_cq_ring(cq->queue))
        e = EINVAL;
    if (e) {
        cq->queue.reset();
        cmd_destroy_cq(cq->vcq.cq());
        errno = e;
        return nullptr;
    }
    install_cq_ex_ops(cq->vcq.cq_ex);
    return cq.release();
}

ibv_cq* RxeContext::create_cq(int cqe, ibv_comp_channel* channel, int comp_vector) {
    RxeCq* cq = new_cq(cqe, channel, comp_vector);
    return cq ? cq->vcq.cq() : nullptr;
}

// Our command layer has no extended CREATE_CQ; rxe's kernel takes no CQ
// creation flags anyway, so the legacy command carries all it needs.
ibv_cq_ex* RxeContext::create_cq_ex(ibv_cq_init_attr_ex* attr) {
    if (attr->comp_mask & ~static_cast<uint32_t>(IBV_CQ_INIT_ATTR_MASK_FLAGS)) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    if (attr->wc_flags & ~kSupportedWcFlags) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    // Single-threaded is a promise to userspace only: the extended poll
    // functions of such a CQ take no lock.
    if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
        (attr->flags & ~static_cast<uint32_t>(IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    if (attr->cqe == 0 || attr->cqe > INT32_MAX) {
        errno = EINVAL;
        return nullptr;
    }
    RxeCq* cq = new_cq(static_cast<int>(attr->cqe), attr->channel, static_cast<int>(attr->comp_vector));
    if (!cq)
        return nullptr;
    cq->vcq.cq_ex.cq_context = attr->cq_context;
    if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && (attr->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED))
        install_cq_ex_ops(cq->vcq.cq_ex, true);
    return &cq->vcq.cq_ex;
}

// The kernel moves the queued completions into a new ring; we switch to
// its mapping under the lock so no poll sees a half-swapped queue. If the
// new ring cannot be mapped the old one is dropped all the same (it would
// show completions the kernel already moved) and polls report EIO.
int RxeContext::resize_cq(ibv_cq* ibcq, int cqe) {
    RxeCq* cq = to_cq(ibcq);
    std::lock_guard guard(cq->lock);
    rxe_resize_cq_resp resp{};
    if (int e = cmd_resize_cq(ibcq, cqe, Udata{nullptr, 0, &resp, sizeof(resp)}))
        return e;
    return cq->queue.map(cmd_fd(), resp.mi);
}

int RxeContext::destroy_cq(ibv_cq* ibcq) {
    if (int e = cmd_destroy_cq(ibcq))
        return e;
    delete to_cq(ibcq);
    return 0;
}

// ------------------------------------------------------------- data path

int poll_cq(ibv_cq* ibcq, int num_entries, ibv_wc* wc) noexcept {
    RxeCq* cq = to_cq(ibcq);
    std::lock_guard guard(cq->lock);
    rxe_queue_buf* q = cq->queue.buf();  // mapped for the CQ's whole life
    uint32_t index = ring::consumed(q);
    int n = 0;
    while (n < num_entries && !ring::empty_at(q, index)) {
        std::memcpy(&wc[n], ring::slot(q, index), sizeof(ibv_wc));
        index = ring::next(q, index);
        ++n;
    }
    if (n)
        ring::retire(q, index);
    return n;
}

// Cannot throw; not noexcept: the command may go out as a write(2) (rxe.h).
int req_notify_cq(ibv_cq* cq, int solicited_only) {
    return Context::from(cq->context)->cmd_req_notify_cq(cq, solicited_only);
}

// ------------------------------------------------ extended polling hooks

namespace {

void load_current(RxeCq* cq) noexcept {
    cq->poll_wc = static_cast<const ib_uverbs_wc*>(ring::slot(cq->queue.buf(), cq->poll_index));
    cq->vcq.cq_ex.status = static_cast<ibv_wc_status>(cq->poll_wc->status);
    cq->vcq.cq_ex.wr_id = cq->poll_wc->wr_id;
}

// The extended polling hooks touch only the ring: noexcept.
// The lock is held from a successful start_poll until end_poll. CQs
// created with IBV_CREATE_CQ_ATTR_SINGLE_THREADED get the Locked=false
// instances: the application promised one thread, so no lock at all.
template <bool Locked>
int start_poll(ibv_cq_ex* current, ibv_poll_cq_attr*) noexcept {
    RxeCq* cq = to_cq(current);
    if constexpr (Locked)
        cq->lock.lock();
    rxe_queue_buf* q = cq->queue.buf();
    if (!q) [[unlikely]] {
        if constexpr (Locked)
            cq->lock.unlock();
        return EIO;
    }
    cq->poll_index = ring::consumed(q);
    if (ring::empty_at(q, cq->poll_index)) {
        cq->poll_wc = nullptr;
        if constexpr (Locked)
            cq->lock.unlock();
        return ENOENT;
    }
    load_current(cq);
    return 0;
}

int next_poll(ibv_cq_ex* current) noexcept {
    RxeCq* cq = to_cq(current);
    rxe_queue_buf* q = cq->queue.buf();
    if (!cq->poll_wc)
        return ENOENT;
    cq->poll_index = ring::next(q, cq->poll_index);
    if (ring::empty_at(q, cq->poll_index)) {
        cq->poll_wc = nullptr;  // poll_index already points past the last one read
        ring::retire(q, cq->poll_index);
        return ENOENT;
    }
    load_current(cq);
    return 0;
}

template <bool Locked>
void end_poll(ibv_cq_ex* current) noexcept {
    RxeCq* cq = to_cq(current);
    rxe_queue_buf* q = cq->queue.buf();
    if (cq->poll_wc) {
        cq->poll_index = ring::next(q, cq->poll_index);
        cq->poll_wc = nullptr;
    }
    ring::retire(q, cq->poll_index);
    if constexpr (Locked)
        cq->lock.unlock();
}

const ib_uverbs_wc& cur(ibv_cq_ex* current) noexcept { return *to_cq(current)->poll_wc; }

ibv_wc_opcode read_opcode(ibv_cq_ex* c) noexcept { return static_cast<ibv_wc_opcode>(cur(c).opcode); }
uint32_t read_vendor_err(ibv_cq_ex* c) noexcept { return cur(c).vendor_err; }
uint32_t read_byte_len(ibv_cq_ex* c) noexcept { return cur(c).byte_len; }
__be32 read_imm_data(ibv_cq_ex* c) noexcept { return cur(c).ex.imm_data; }
uint32_t read_qp_num(ibv_cq_ex* c) noexcept { return cur(c).qp_num; }
uint32_t read_src_qp(ibv_cq_ex* c) noexcept { return cur(c).src_qp; }
// The kernel's flag bits, as ibv_poll_cq reports them too.
unsigned int read_wc_flags(ibv_cq_ex* c) noexcept { return cur(c).wc_flags; }
uint32_t read_slid(ibv_cq_ex* c) noexcept { return cur(c).slid; }
uint8_t read_sl(ibv_cq_ex* c) noexcept { return cur(c).sl; }
uint8_t read_dlid_path_bits(ibv_cq_ex* c) noexcept { return cur(c).dlid_path_bits; }

}  // namespace

void install_cq_ex_ops(ibv_cq_ex& cq, bool single_threaded) {
    cq.start_poll = single_threaded ? start_poll<false> : start_poll<true>;
    cq.next_poll = next_poll;
    cq.end_poll = single_threaded ? end_poll<false> : end_poll<true>;
    cq.read_opcode = read_opcode;
    cq.read_vendor_err = read_vendor_err;
    cq.read_byte_len = read_byte_len;
    cq.read_imm_data = read_imm_data;
    cq.read_qp_num = read_qp_num;
    cq.read_src_qp = read_src_qp;
    cq.read_wc_flags = read_wc_flags;
    cq.read_slid = read_slid;
    cq.read_sl = read_sl;
    cq.read_dlid_path_bits = read_dlid_path_bits;
}

}  // namespace rdma::rxe
