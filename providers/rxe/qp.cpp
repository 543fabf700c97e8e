// Queue pairs: the send and receive rings we fill and the kernel drains.
// Receive WQEs need no doorbell (the kernel looks at the ring when a packet
// arrives); send WQEs are followed by an empty POST_SEND command, which
// makes the kernel run the QP's requester.
#include "providers/rxe/rxe.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <new>

namespace rdma::rxe {

static_assert(sizeof(rxe_sge) == sizeof(ibv_sge));
static_assert(offsetof(rxe_sge, addr) == offsetof(ibv_sge, addr) &&
              offsetof(rxe_sge, length) == offsetof(ibv_sge, length) &&
              offsetof(rxe_sge, lkey) == offsetof(ibv_sge, lkey));

namespace {

// What the ibv_wr_* interface offers per transport: the operations rxe's
// kernel carries out for that QP type.
constexpr uint64_t kRcSendOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
    IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW |
    IBV_QP_EX_WITH_SEND_WITH_INV;
constexpr uint64_t kUcSendOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
    IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV;
constexpr uint64_t kUdSendOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

uint64_t supported_send_ops(ibv_qp_type type) {
    switch (type) {
    case IBV_QPT_RC: return kRcSendOps;
    case IBV_QPT_UC: return kUcSendOps;
    case IBV_QPT_UD: return kUdSendOps;
    default: return 0;
    }
}

bool is_atomic(ibv_wr_opcode op) { return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD; }

bool is_rdma(ibv_wr_opcode op) {
    return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_RDMA_READ;
}

// A fresh WQE in `slot`: everything the kernel reads starts from zero
// (state 0 is "posted"), then the common work-request header.
rxe_send_wqe* start_wqe(void* slot, uint64_t wr_id, uint32_t opcode, uint32_t send_flags) {
    auto* wqe = static_cast<rxe_send_wqe*>(slot);
    std::memset(wqe, 0, kSendWqeHeader);
    wqe->wr.wr_id = wr_id;
    wqe->wr.opcode = opcode;
    wqe->wr.send_flags = send_flags;
    return wqe;
}

void set_ud_dest(rxe_send_wqe& wqe, ibv_ah* ibah, uint32_t remote_qpn, uint32_t remote_qkey) {
    RxeAh* ah = to_ah(ibah);
    wqe.wr.wr.ud.remote_qpn = remote_qpn;
    wqe.wr.wr.ud.remote_qkey = remote_qkey;
    wqe.wr.wr.ud.ah_num = ah->ah_num;
    if (!ah->ah_num)
        wqe.wr.wr.ud.av = ah->av;
}

void set_bind(rxe_send_wqe& wqe, const ibv_mw* mw, uint32_t new_rkey, const ibv_mw_bind_info& info) {
    wqe.wr.wr.mw.addr = info.addr;
    wqe.wr.wr.mw.length = info.length;
    wqe.wr.wr.mw.mr_lkey = info.mr ? info.mr->lkey : 0;
    wqe.wr.wr.mw.mw_rkey = mw->rkey;
    wqe.wr.wr.mw.rkey = new_rkey;
    wqe.wr.wr.mw.access = info.mw_access_flags;
}

void set_payload_length(rxe_send_wqe& wqe, uint32_t num_sge, uint32_t length) {
    wqe.dma.length = length;
    wqe.dma.resid = length;
    wqe.dma.num_sge = num_sge;
}

// Checks one work request, writes it at `index` and advances `index`; the
// caller publishes the producer index once for the whole list.
int fill_send(RxeQp& qp, rxe_queue_buf* q, const ibv_send_wr& wr, uint32_t& index) {
    const WorkQueue& sq = qp.sq;
    const ibv_qp_type type = qp.vqp.qp()->qp_type;
    if (wr.num_sge < 0 || static_cast<uint32_t>(wr.num_sge) > sq.max_sge)
        return EINVAL;
    uint32_t length = 0;
    for (int i = 0; i < wr.num_sge; ++i)
        length += wr.sg_list[i].length;
    if (is_atomic(wr.opcode) && (length < 8 || (wr.wr.atomic.remote_addr & 7)))
        return EINVAL;
    if ((wr.send_flags & IBV_SEND_INLINE) && length > sq.max_inline)
        return EINVAL;
    if (wr.opcode == IBV_WR_BIND_MW && (!wr.bind_mw.mw || wr.num_sge || (type != IBV_QPT_RC && type != IBV_QPT_UC)))
        return EINVAL;
    const bool ud_send = type == IBV_QPT_UD && (wr.opcode == IBV_WR_SEND || wr.opcode == IBV_WR_SEND_WITH_IMM);
    if (ud_send && !wr.wr.ud.ah)
        return EINVAL;
    if (ring::full_at(q, index))
        return ENOMEM;

    rxe_send_wqe* wqe = start_wqe(ring::slot(q, index), wr.wr_id, wr.opcode, wr.send_flags);
    wqe->wr.ex.imm_data = wr.imm_data;  // shares its word with invalidate_rkey
    if (is_rdma(wr.opcode)) {
        wqe->wr.wr.rdma.remote_addr = wr.wr.rdma.remote_addr;
        wqe->wr.wr.rdma.rkey = wr.wr.rdma.rkey;
        wqe->iova = wr.wr.rdma.remote_addr;
    } else if (is_atomic(wr.opcode)) {
        wqe->wr.wr.atomic.remote_addr = wr.wr.atomic.remote_addr;
        wqe->wr.wr.atomic.compare_add = wr.wr.atomic.compare_add;
        wqe->wr.wr.atomic.swap = wr.wr.atomic.swap;
        wqe->wr.wr.atomic.rkey = wr.wr.atomic.rkey;
        wqe->iova = wr.wr.atomic.remote_addr;
    } else if (wr.opcode == IBV_WR_BIND_MW) {
        set_bind(*wqe, wr.bind_mw.mw, wr.bind_mw.rkey, wr.bind_mw.bind_info);
    } else if (ud_send) {
        set_ud_dest(*wqe, wr.wr.ud.ah, wr.wr.ud.remote_qpn, wr.wr.ud.remote_qkey);
    }

    if (wr.send_flags & IBV_SEND_INLINE) {
        uint8_t* dst = dma_inline(wqe->dma);
        for (int i = 0; i < wr.num_sge; ++i) {
            std::memcpy(dst, reinterpret_cast<const void*>(static_cast<uintptr_t>(wr.sg_list[i].addr)),
                        wr.sg_list[i].length);
            dst += wr.sg_list[i].length;
        }
    } else if (wr.num_sge) {
        std::memcpy(dma_sges(wqe->dma), wr.sg_list, static_cast<size_t>(wr.num_sge) * sizeof(ibv_sge));
    }
    set_payload_length(*wqe, static_cast<uint32_t>(wr.num_sge), length);
    index = ring::next(q, index);
    return 0;
}

int fill_recv(const WorkQueue& wq, rxe_queue_buf* q, const ibv_recv_wr& wr, uint32_t& index) {
    if (ring::full_at(q, index))
        return ENOMEM;
    if (wr.num_sge < 0 || static_cast<uint32_t>(wr.num_sge) > wq.max_sge)
        return EINVAL;
    auto* wqe = static_cast<rxe_recv_wqe*>(ring::slot(q, index));
    std::memset(wqe, 0, kRecvWqeHeader);
    wqe->wr_id = wr.wr_id;
    uint32_t length = 0;
    for (int i = 0; i < wr.num_sge; ++i)
        length += wr.sg_list[i].length;
    if (wr.num_sge)
        std::memcpy(dma_sges(wqe->dma), wr.sg_list, static_cast<size_t>(wr.num_sge) * sizeof(ibv_sge));
    wqe->dma.length = length;
    wqe->dma.resid = length;
    wqe->dma.num_sge = static_cast<uint32_t>(wr.num_sge);
    index = ring::next(q, index);
    return 0;
}

}  // namespace

// ---------------------------------------------------------------- control

RxeQp* RxeContext::new_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
    auto qp = std::unique_ptr<RxeQp>(new (std::nothrow) RxeQp{});
    if (!qp) {
        errno = ENOMEM;
        return nullptr;
    }
    rxe_create_qp_resp resp{};
    if (int e = cmd_create_qp(pd, attr, &qp->vqp, Udata{nullptr, 0, &resp, sizeof(resp)})) {
        errno = e;
        return nullptr;
    }
    int e = qp->sq.queue.map(cmd_fd(), resp.sq_mi);
    if (!e && !qp->sq.queue)
        e = EINVAL;  // a QP always has a send ring
    if (!e && !attr->srq)
        e = qp->rq.queue.map(cmd_fd(), resp.rq_mi);
    if (e) {
        qp->sq.queue.reset();
        qp->rq.queue.reset();
        cmd_destroy_qp(qp->vqp.qp());
        errno = e;
        return nullptr;
    }
    // What the kernel granted (cmd_create_qp wrote it back into attr->cap).
    qp->sq.max_sge = attr->cap.max_send_sge;
    qp->sq.max_inline = attr->cap.max_inline_data;
    qp->rq.max_sge = attr->srq ? 0 : attr->cap.max_recv_sge;
    qp->doorbell.prepare(cmd_fd(), qp->vqp.qp()->handle);
    return qp.release();
}

ibv_qp* RxeContext::create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
    RxeQp* qp = new_qp(pd, attr);
    return qp ? qp->vqp.qp() : nullptr;
}

// Our command layer has no extended CREATE_QP; what rxe accepts from the
// extended attributes (a PD, no creation flags, send ops) fits the legacy
// command, and the send ops are userspace's business alone.
ibv_qp* RxeContext::create_qp_ex(ibv_qp_init_attr_ex* attr) {
    if (int e = verbs::check_legacy_qp_attr(*attr, supported_send_ops(attr->qp_type))) {
        errno = e;
        return nullptr;
    }
    ibv_qp_init_attr legacy = verbs::legacy_qp_attr(*attr);
    RxeQp* qp = new_qp(attr->pd, &legacy);
    if (!qp)
        return nullptr;
    attr->cap = legacy.cap;
    install_qp_ex_ops(qp->vqp.qp_ex);
    qp->vqp.has_qp_ex = true;
    return qp->vqp.qp();
}

int RxeContext::query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) {
    return cmd_query_qp(qp, attr, attr_mask, init_attr);
}

int RxeContext::modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) { return cmd_modify_qp(qp, attr, attr_mask); }

int RxeContext::destroy_qp(ibv_qp* qp) {
    if (int e = cmd_destroy_qp(qp))
        return e;
    delete to_qp(qp);  // unmaps both rings
    return 0;
}

// ------------------------------------------------------------- data path

// Cannot throw; not noexcept because of the doorbell's write(2) (rxe.h).
int post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
    if (!bad_wr)
        return EINVAL;
    *bad_wr = nullptr;
    if (!wr)
        return EINVAL;
    RxeQp* qp = to_qp(ibqp);
    int err = 0;
    bool posted = false;
    {
        std::lock_guard guard(qp->sq.lock);
        rxe_queue_buf* q = qp->sq.queue.buf();
        const uint32_t first = ring::produced(q);
        uint32_t index = first;
        for (; wr; wr = wr->next) {
            if ((err = fill_send(*qp, q, *wr, index))) {
                *bad_wr = wr;
                break;
            }
        }
        if (index != first) {
            ring::publish(q, index);
            posted = true;
        }
    }
    // The kernel only looks at the ring when told to; nothing new, no call.
    const int db = posted ? qp->doorbell.ring() : 0;
    return err ? err : db;
}

namespace {

// Receives need no doorbell: the kernel reads the ring as packets arrive.
int post_receives(WorkQueue& wq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    if (!bad_wr)
        return EINVAL;
    *bad_wr = nullptr;
    if (!wr)
        return EINVAL;
    std::lock_guard guard(wq.lock);
    rxe_queue_buf* q = wq.queue.buf();
    if (!q) {  // a QP whose receives go to an SRQ, or an SRQ a resize broke
        *bad_wr = wr;
        return EINVAL;
    }
    int err = 0;
    const uint32_t first = ring::produced(q);
    uint32_t index = first;
    for (; wr; wr = wr->next) {
        if ((err = fill_recv(wq, q, *wr, index))) {
            *bad_wr = wr;
            break;
        }
    }
    if (index != first)
        ring::publish(q, index);
    return err;
}

}  // namespace

int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    // A QP in RESET takes no receives (IBA C10-97.2.1); the reference's
    // rxe refuses them before looking at the list, *bad_wr left NULL.
    if (qp->state == IBV_QPS_RESET && bad_wr && wr) {
        *bad_wr = nullptr;
        return EINVAL;
    }
    return post_receives(to_qp(qp)->rq, wr, bad_wr);
}

int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    return post_receives(to_srq(srq)->rq, wr, bad_wr);
}

// Type 1 windows: a BIND_MW work request (libibverbs' shared form).
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind) { return verbs::bind_mw_through(qp, mw, bind, post_send); }

// ------------------------------------------------ ibv_wr_* (ibv_qp_ex)

namespace {

// Everything here but wr_complete (its doorbell is a write(2), a
// cancellation point; see rxe.h) only fills the ring: noexcept.
//
// Starts the next WQE of the batch, or nullptr once the batch has failed;
// the setters below then apply to nothing and wr_complete reports it.
rxe_send_wqe* next_wqe(ibv_qp_ex* qpx, ibv_wr_opcode opcode) noexcept {
    RxeQp* qp = to_qp(qpx);
    if (qp->wr_err)
        return nullptr;
    rxe_queue_buf* q = qp->sq.queue.buf();
    if (ring::full_at(q, qp->wr_index)) {
        qp->wr_err = ENOMEM;
        qp->wr_cur = nullptr;
        return nullptr;
    }
    rxe_send_wqe* wqe = start_wqe(ring::slot(q, qp->wr_index), qpx->wr_id, opcode, qpx->wr_flags);
    qp->wr_index = ring::next(q, qp->wr_index);
    qp->wr_cur = wqe;
    return wqe;
}

void fail_batch(RxeQp* qp, int err) noexcept {
    if (!qp->wr_err)
        qp->wr_err = err;
    qp->wr_cur = nullptr;
}

void wr_start(ibv_qp_ex* qpx) noexcept {
    RxeQp* qp = to_qp(qpx);
    qp->sq.lock.lock();
    qp->wr_index = ring::produced(qp->sq.queue.buf());
    qp->wr_cur = nullptr;
    qp->wr_err = 0;
}

int wr_complete(ibv_qp_ex* qpx) {
    RxeQp* qp = to_qp(qpx);
    rxe_queue_buf* q = qp->sq.queue.buf();
    const int err = qp->wr_err;
    const bool posted = !err && qp->wr_index != ring::produced(q);
    if (posted)
        ring::publish(q, qp->wr_index);
    qp->wr_cur = nullptr;
    qp->sq.lock.unlock();
    if (err)
        return err;
    return posted ? qp->doorbell.ring() : 0;
}

void wr_abort(ibv_qp_ex* qpx) noexcept {
    RxeQp* qp = to_qp(qpx);
    qp->wr_cur = nullptr;
    qp->sq.lock.unlock();
}

void wr_send(ibv_qp_ex* qpx) noexcept { next_wqe(qpx, IBV_WR_SEND); }

void wr_send_imm(ibv_qp_ex* qpx, __be32 imm) noexcept {
    if (rxe_send_wqe* wqe = next_wqe(qpx, IBV_WR_SEND_WITH_IMM))
        wqe->wr.ex.imm_data = imm;
}

void wr_send_inv(ibv_qp_ex* qpx, uint32_t rkey) noexcept {
    if (rxe_send_wqe* wqe = next_wqe(qpx, IBV_WR_SEND_WITH_INV))
        wqe->wr.ex.invalidate_rkey = rkey;
}

void set_rdma(rxe_send_wqe* wqe, uint32_t rkey, uint64_t remote_addr) noexcept {
    wqe->wr.wr.rdma.remote_addr = remote_addr;
    wqe->wr.wr.rdma.rkey = rkey;
    wqe->iova = remote_addr;
}

void wr_rdma_write(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr) noexcept {
    if (rxe_send_wqe* wqe = next_wqe(qpx, IBV_WR_RDMA_WRITE))
        set_rdma(wqe, rkey, remote_addr);
}

void wr_rdma_write_imm(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr, __be32 imm) noexcept {
    if (rxe_send_wqe* wqe = next_wqe(qpx, IBV_WR_RDMA_WRITE_WITH_IMM)) {
        set_rdma(wqe, rkey, remote_addr);
        wqe->wr.ex.imm_data = imm;
    }
}

void wr_rdma_read(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr) noexcept {
    if (rxe_send_wqe* wqe = next_wqe(qpx, IBV_WR_RDMA_READ))
        set_rdma(wqe, rkey, remote_addr);
}

void set_atomic(rxe_send_wqe* wqe, uint32_t rkey, uint64_t remote_addr, uint64_t compare_add, uint64_t swap) noexcept {
    wqe->wr.wr.atomic.remote_addr = remote_addr;
    wqe->wr.wr.atomic.compare_add = compare_add;
    wqe->wr.wr.atomic.swap = swap;
    wqe->wr.wr.atomic.rkey = rkey;
    wqe->iova = remote_addr;
}

void wr_atomic_cmp_swp(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr, uint64_t compare, uint64_t swap) noexcept {
    if (remote_addr & 7)
        return fail_batch(to_qp(qpx), EINVAL);
    if (rxe_send_wqe* wqe = next_wqe(qpx, IBV_WR_ATOMIC_CMP_AND_SWP))
        set_atomic(wqe, rkey, remote_addr, compare, swap);
}

void wr_atomic_fetch_add(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr, uint64_t add) noexcept {
    if (remote_addr & 7)
        return fail_batch(to_qp(qpx), EINVAL);
    if (rxe_send_wqe* wqe = next_wqe(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD))
        set_atomic(wqe, rkey, remote_addr, add, 0);
}

void wr_bind_mw(ibv_qp_ex* qpx, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info* info) noexcept {
    if (info->mw_access_flags & IBV_ACCESS_ZERO_BASED)
        return fail_batch(to_qp(qpx), EINVAL);
    if (rxe_send_wqe* wqe = next_wqe(qpx, IBV_WR_BIND_MW))
        set_bind(*wqe, mw, rkey, *info);
}

void wr_local_inv(ibv_qp_ex* qpx, uint32_t rkey) noexcept {
    if (rxe_send_wqe* wqe = next_wqe(qpx, IBV_WR_LOCAL_INV))
        wqe->wr.ex.invalidate_rkey = rkey;
}

void wr_set_ud_addr(ibv_qp_ex* qpx, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) noexcept {
    if (rxe_send_wqe* wqe = to_qp(qpx)->wr_cur)
        set_ud_dest(*wqe, ah, remote_qpn, remote_qkey);
}

void wr_set_sge(ibv_qp_ex* qpx, uint32_t lkey, uint64_t addr, uint32_t length) noexcept {
    rxe_send_wqe* wqe = to_qp(qpx)->wr_cur;
    if (!wqe)
        return;
    rxe_sge& sge = dma_sges(wqe->dma)[0];
    sge.addr = addr;
    sge.length = length;
    sge.lkey = lkey;
    set_payload_length(*wqe, 1, length);
}

void wr_set_sge_list(ibv_qp_ex* qpx, size_t num_sge, const ibv_sge* sg_list) noexcept {
    RxeQp* qp = to_qp(qpx);
    rxe_send_wqe* wqe = qp->wr_cur;
    if (!wqe)
        return;
    if (num_sge > qp->sq.max_sge)
        return fail_batch(qp, EINVAL);
    uint32_t length = 0;
    for (size_t i = 0; i < num_sge; ++i)
        length += sg_list[i].length;
    if (num_sge)
        std::memcpy(dma_sges(wqe->dma), sg_list, num_sge * sizeof(ibv_sge));
    set_payload_length(*wqe, static_cast<uint32_t>(num_sge), length);
}

// Inline data lives in the WQE; the kernel knows it by the INLINE flag.
void wr_set_inline_data_list(ibv_qp_ex* qpx, size_t num_buf, const ibv_data_buf* bufs) noexcept {
    RxeQp* qp = to_qp(qpx);
    rxe_send_wqe* wqe = qp->wr_cur;
    if (!wqe)
        return;
    size_t total = 0;
    for (size_t i = 0; i < num_buf; ++i)
        total += bufs[i].length;
    if (total > qp->sq.max_inline)
        return fail_batch(qp, EINVAL);
    uint8_t* dst = dma_inline(wqe->dma);
    for (size_t i = 0; i < num_buf; ++i) {
        std::memcpy(dst, bufs[i].addr, bufs[i].length);
        dst += bufs[i].length;
    }
    wqe->wr.send_flags |= IBV_SEND_INLINE;
    set_payload_length(*wqe, 0, static_cast<uint32_t>(total));
}

void wr_set_inline_data(ibv_qp_ex* qpx, void* addr, size_t length) noexcept {
    const ibv_data_buf buf{addr, length};
    wr_set_inline_data_list(qpx, 1, &buf);
}

}  // namespace

void install_qp_ex_ops(ibv_qp_ex& qp) {
    qp.wr_start = wr_start;
    qp.wr_complete = wr_complete;
    qp.wr_abort = wr_abort;
    qp.wr_send = wr_send;
    qp.wr_send_imm = wr_send_imm;
    qp.wr_send_inv = wr_send_inv;
    qp.wr_rdma_write = wr_rdma_write;
    qp.wr_rdma_write_imm = wr_rdma_write_imm;
    qp.wr_rdma_read = wr_rdma_read;
    qp.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
    qp.wr_atomic_fetch_add = wr_atomic_fetch_add;
    qp.wr_bind_mw = wr_bind_mw;
    qp.wr_local_inv = wr_local_inv;
    qp.wr_set_ud_addr = wr_set_ud_addr;
    qp.wr_set_sge = wr_set_sge;
    qp.wr_set_sge_list = wr_set_sge_list;
    qp.wr_set_inline_data = wr_set_inline_data;
    qp.wr_set_inline_data_list = wr_set_inline_data_list;
}

}  // namespace rdma::rxe
