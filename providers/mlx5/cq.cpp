// Completion queues: a ring of CQEs in our memory that the device fills.
// A CQE at consumer count n is ours when its opcode is valid and its owner
// bit equals the parity of the ring pass n / ncqe. Polling parses it into
// an ibv_wc, retires the WQE it names, and publishes the consumer index in
// the doorbell record; arming writes the record and the UAR doorbell.
// See tests/uverbs-sim/doc/mlx5-contract.md §4.3, §4.4 and §6.
#include "providers/mlx5/mlx5.h"

#include <endian.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <new>

namespace rdma::mlx5 {

using namespace rdma::verbs;

Mlx5Cq::~Mlx5Cq() = default;

namespace {

// The fields ibv_cq_ex can read back from our CQEs.
constexpr uint64_t kSupportedWcFlags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
    IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | IBV_WC_EX_WITH_DLID_PATH_BITS |
    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | IBV_WC_EX_WITH_CVLAN | IBV_WC_EX_WITH_FLOW_TAG | IBV_WC_EX_WITH_TM_INFO;
constexpr uint32_t kMaxCqe = 1u << 24;
// Mlx5Cq::stall_mode
constexpr uint8_t kStallFixed = 1;
constexpr uint8_t kStallAdaptive = 2;

// The CQE proper of slot `index`: with 128-byte entries the second half.
// The same in any ring of `n` slots of `size` bytes at `base`.
inline mlx5_cqe64* ring_cqe(uint8_t* base, uint32_t n, uint32_t size, uint32_t index) {
    uint8_t* slot = base + static_cast<size_t>(index & (n - 1)) * size;
    return reinterpret_cast<mlx5_cqe64*>(slot + size - sizeof(mlx5_cqe64));
}
inline mlx5_cqe64* cqe_at(const Mlx5Cq* cq, uint32_t index) {
    return ring_cqe(cq->buf.get(), cq->ncqe, cq->cqe_size, index);
}

// A new ring: every entry invalid and owned by the device's first pass.
void init_ring(uint8_t* base, uint32_t n, uint32_t size) {
    for (uint32_t i = 0; i < n; ++i)
        ring_cqe(base, n, size, i)->op_own = MLX5_CQE_INVALID << 4;
}

inline uint8_t load_op_own(const mlx5_cqe64* cqe) { return __atomic_load_n(&cqe->op_own, __ATOMIC_ACQUIRE); }

// The CQE at consumer count n if the device has written it, else null.
inline mlx5_cqe64* sw_cqe(const Mlx5Cq* cq, uint32_t n) {
    mlx5_cqe64* cqe = cqe_at(cq, n);
    const uint8_t op_own = load_op_own(cqe);
    const bool owner = op_own & MLX5_CQE_OWNER_MASK;
    if ((op_own >> 4) == MLX5_CQE_INVALID || owner != static_cast<bool>(n & cq->ncqe))
        return nullptr;
    return cqe;
}

inline void publish_ci(Mlx5Cq* cq) {
    to_device_barrier();
    cq->dbrec[0] = htobe32(cq->cons_index & 0xffffff);
}

ibv_wc_status syndrome_status(uint8_t syndrome) {
    switch (syndrome) {
    case MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR: return IBV_WC_LOC_LEN_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR: return IBV_WC_LOC_QP_OP_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_PROT_ERR: return IBV_WC_LOC_PROT_ERR;
    case MLX5_CQE_SYNDROME_WR_FLUSH_ERR: return IBV_WC_WR_FLUSH_ERR;
    case MLX5_CQE_SYNDROME_MW_BIND_ERR: return IBV_WC_MW_BIND_ERR;
    case MLX5_CQE_SYNDROME_BAD_RESP_ERR: return IBV_WC_BAD_RESP_ERR;
    case MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR: return IBV_WC_LOC_ACCESS_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR: return IBV_WC_REM_INV_REQ_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR: return IBV_WC_REM_ACCESS_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_OP_ERR: return IBV_WC_REM_OP_ERR;
    case MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR: return IBV_WC_RETRY_EXC_ERR;
    case MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR: return IBV_WC_RNR_RETRY_EXC_ERR;
    case MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR: return IBV_WC_REM_ABORT_ERR;
    default: return IBV_WC_GENERAL_ERR;
    }
}

// An error CQE other than a flush or an exhausted retry is worth a look:
// with MLX5_DEBUG_FILE set it goes there with the CQE's 64 bytes, 16 bytes
// a line (without it, as in the reference's default build, nowhere).
void report_error_cqe(Mlx5Context& ctx, const mlx5_cqe64* cqe) {
    FILE* out = ctx.debug_file();
    if (!out)
        return;
    const auto* w = reinterpret_cast<const uint32_t*>(cqe);
    fprintf(out, "mlx5: %s: got completion with error:\n", ctx.hostname());
    for (int i = 0; i < 16; i += 4)
        fprintf(out, "%08x %08x %08x %08x\n", be32toh(w[i]), be32toh(w[i + 1]), be32toh(w[i + 2]), be32toh(w[i + 3]));
}

// The send WQE a requester CQE names: its wr_id, and everything posted
// before it is retired with it (unsignaled WRs complete silently).
inline uint32_t retire_send(Mlx5Qp* qp, const mlx5_cqe64* cqe) {
    const uint32_t idx = be16toh(cqe->wqe_counter) & (qp->sq.wqe_cnt - 1);
    qp->sq.tail = qp->sq.wqe_head[idx] + 1;
    return idx;
}

// ------------------------------------------------------ scatter-to-CQE

constexpr uint8_t kScatterBits = MLX5_INLINE_SCATTER_32 | MLX5_INLINE_SCATTER_64;

// Where the device put a CQE's data: the CQE64's first 32 bytes, or the
// first half of a 128-byte CQE (the 64 bytes before the CQE64).
inline const uint8_t* scattered_data(const mlx5_cqe64* cqe) {
    const auto* p = reinterpret_cast<const uint8_t*>(cqe);
    return (cqe->op_own & MLX5_INLINE_SCATTER_64) ? p - 64 : p;
}

// Data scattered into a CQE (at most 64 bytes, unless the device says
// otherwise) to dst.
inline void copy_scattered(uint8_t* dst, const uint8_t* src, uint32_t len) {
    if (len <= 32) {
        copy_small(dst, src, len);
    } else if (len <= 64) {
        copy_small(dst, src, 32);
        copy_small(dst + 32, src + 32, len - 32);
    } else {
        std::memcpy(dst, src, len);
    }
}

// Copies len bytes into the data segments from `seg` on (at most n, an
// invalid-lkey entry ends the list; past `end` they continue at `wrap`).
// IBV_WC_SUCCESS, or IBV_WC_LOC_LEN_ERR when the segments hold less.
int copy_to_segments(const uint8_t* seg, uint32_t n, const uint8_t* end, const uint8_t* wrap, const uint8_t* data,
                     uint32_t len) {
    for (uint32_t i = 0; i < n && len; ++i, seg += sizeof(mlx5_wqe_data_seg)) {
        if (seg == end)
            seg = wrap;
        const auto* d = reinterpret_cast<const mlx5_wqe_data_seg*>(seg);
        if (be32toh(d->lkey) == MLX5_INVALID_LKEY)
            break;
        const uint32_t take = std::min(len, be32toh(d->byte_count));
        copy_scattered(reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(be64toh(d->addr))), data, take);
        data += take;
        len -= take;
    }
    return len ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
}

// A receive's data from the CQE into the buffers of its WQE (RQ slot or
// SRQ WQE `idx`); mostly all of it goes into the first one.
[[gnu::noinline]] int scatter_recv(Mlx5Qp* qp, Mlx5Srq* srq, uint32_t idx, const mlx5_cqe64* cqe) {
    const uint32_t len = be32toh(cqe->byte_cnt);
    const uint8_t* segs;
    uint32_t n;
    if (srq) {
        segs = srq->buf.get() + (static_cast<size_t>(idx & (srq->max - 1)) << srq->wqe_shift) +
            sizeof(mlx5_wqe_srq_next_seg);
        n = srq->max_gs;
    } else {
        segs = qp->rq.start + (static_cast<size_t>(idx) << qp->rq.wqe_shift);
        n = qp->rq.max_gs;
    }
    const auto* d = reinterpret_cast<const mlx5_wqe_data_seg*>(segs);
    if (len <= be32toh(d->byte_count) && d->lkey != htobe32(MLX5_INVALID_LKEY)) [[likely]] {
        copy_scattered(reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(be64toh(d->addr))), scattered_data(cqe), len);
        return IBV_WC_SUCCESS;
    }
    return copy_to_segments(segs, n, nullptr, nullptr, scattered_data(cqe), len);
}

// A read or atomic result from the CQE into the buffers its send WQE
// (SQ slot idx) names: past the control, remote address and, for an
// atomic, the atomic segment, around the SQ's end.
[[gnu::noinline]] int scatter_send(Mlx5Qp* qp, uint32_t idx, const mlx5_cqe64* cqe) {
    const uint8_t* ctrl = qp->sq.start + (static_cast<size_t>(idx) << MLX5_SEND_WQE_SHIFT);
    const auto* c = reinterpret_cast<const mlx5_wqe_ctrl_seg*>(ctrl);
    const uint32_t ds = be32toh(c->qpn_ds) & 0x3f;
    const uint8_t op = be32toh(c->opmod_idx_opcode) & 0xff;
    const uint32_t skip = op == MLX5_OPCODE_RDMA_READ ? 2 : 3;  // 16-byte units
    if (ds <= skip)
        return IBV_WC_LOC_LEN_ERR;
    const uint8_t* seg = ctrl + skip * sizeof(mlx5_wqe_data_seg);
    if (seg >= qp->sq_end)
        seg = qp->sq.start + (seg - qp->sq_end);
    const uint32_t len = op == MLX5_OPCODE_RDMA_READ ? be32toh(cqe->byte_cnt) : 8;
    return copy_to_segments(seg, ds - skip, qp->sq_end, qp->sq.start, scattered_data(cqe), len);
}

// The receive WQE a responder CQE consumed: the RQ's next one in order, or
// the SRQ WQE the CQE names. kScatter: the device put the message in the
// CQE; it is copied to the WQE's buffers first (*status: whether it fit).
template <bool kScatter = false>
[[gnu::always_inline]] inline uint64_t take_recv(Mlx5Qp* qp, const mlx5_cqe64* cqe, int* status = nullptr) {
    if (ibv_srq* s = qp->vqp.qp()->srq) {
        Mlx5Srq* srq = to_msrq(s);
        const uint32_t idx = be16toh(cqe->wqe_counter);
        const uint64_t id = srq->wrid[idx & (srq->max - 1)];
        if constexpr (kScatter)
            *status = scatter_recv(qp, srq, idx, cqe);
        free_srq_wqe(*srq, idx);
        return id;
    }
    const uint32_t idx = qp->rq.tail & (qp->rq.wqe_cnt - 1);
    const uint64_t id = qp->rq.wrid[idx];
    if constexpr (kScatter)
        *status = scatter_recv(qp, nullptr, idx, cqe);
    ++qp->rq.tail;
    return id;
}

// The opcode a requester CQE reports, from the opcode of its WQE (the
// CQE's top byte); what the device does not name, the WQE's record does.
inline ibv_wc_opcode requester_opcode(const mlx5_cqe64* cqe, uint8_t recorded) {
    if (recorded == IBV_WC_DRIVER2) [[unlikely]]
        return IBV_WC_DRIVER2;  // a raw WQE: whatever its opcode
    switch (be32toh(cqe->sop_drop_qpn) >> 24) {
    case MLX5_OPCODE_RDMA_WRITE_IMM:
    case MLX5_OPCODE_RDMA_WRITE: return IBV_WC_RDMA_WRITE;
    case MLX5_OPCODE_SEND_IMM:
    case MLX5_OPCODE_SEND:
    case MLX5_OPCODE_SEND_INVAL: return IBV_WC_SEND;
    case MLX5_OPCODE_RDMA_READ: return IBV_WC_RDMA_READ;
    case MLX5_OPCODE_ATOMIC_CS: return IBV_WC_COMP_SWAP;
    case MLX5_OPCODE_ATOMIC_FA: return IBV_WC_FETCH_ADD;
    default: return static_cast<ibv_wc_opcode>(recorded);
    }
}

// (always inline: the poll and the rebuilt-session path both decode, and
// an out-of-line copy would cost the common path a call and its registers)
template <bool kScatter = false>
[[gnu::always_inline]] inline void fill_requester(ibv_wc* wc, Mlx5Qp* qp, const mlx5_cqe64* cqe) {
    const uint32_t idx = retire_send(qp, cqe);
    wc->wr_id = qp->sq.wrid[idx];
    wc->status = IBV_WC_SUCCESS;
    wc->opcode = requester_opcode(cqe, qp->sq.wc_opcode[idx]);
    switch (be32toh(cqe->sop_drop_qpn) >> 24) {
    case MLX5_OPCODE_RDMA_WRITE_IMM:
    case MLX5_OPCODE_SEND_IMM: wc->wc_flags |= IBV_WC_WITH_IMM; break;
    case MLX5_OPCODE_RDMA_READ: wc->byte_len = be32toh(cqe->byte_cnt); goto result;
    case MLX5_OPCODE_ATOMIC_CS:
    case MLX5_OPCODE_ATOMIC_FA: wc->byte_len = 8; goto result;
    default: break;
    }
    return;
result:
    // a read or atomic result the device put in the CQE
    if constexpr (kScatter)
        wc->status = static_cast<ibv_wc_status>(scatter_send(qp, idx, cqe));
}

template <bool kScatter = false>
[[gnu::always_inline]] inline void fill_responder(ibv_wc* wc, Mlx5Qp* qp, const mlx5_cqe64* cqe, uint8_t opcode) {
    int status = IBV_WC_SUCCESS;
    wc->wr_id = take_recv<kScatter>(qp, cqe, &status);
    wc->status = static_cast<ibv_wc_status>(status);
    wc->byte_len = be32toh(cqe->byte_cnt);
    switch (opcode) {
    case MLX5_CQE_RESP_WR_IMM:
        wc->opcode = IBV_WC_RECV_RDMA_WITH_IMM;
        wc->wc_flags |= IBV_WC_WITH_IMM;
        wc->imm_data = cqe->imm_inval_pkey;
        break;
    case MLX5_CQE_RESP_SEND: wc->opcode = IBV_WC_RECV; break;
    case MLX5_CQE_RESP_SEND_IMM:
        wc->opcode = IBV_WC_RECV;
        wc->wc_flags |= IBV_WC_WITH_IMM;
        wc->imm_data = cqe->imm_inval_pkey;
        break;
    case MLX5_CQE_RESP_SEND_INV:
        wc->opcode = IBV_WC_RECV;
        wc->wc_flags |= IBV_WC_WITH_INV;
        wc->invalidated_rkey = be32toh(cqe->imm_inval_pkey);
        break;
    }
    const uint32_t flags_rqpn = be32toh(cqe->flags_rqpn);
    wc->slid = be16toh(cqe->slid);
    wc->sl = (flags_rqpn >> 24) & 0xf;
    wc->src_qp = flags_rqpn & 0xffffff;
    wc->dlid_path_bits = cqe->ml_path & 0x7f;
    if ((flags_rqpn >> 28) & 3)
        wc->wc_flags |= IBV_WC_GRH;
    wc->pkey_index = be32toh(cqe->imm_inval_pkey) & 0xffff;
}

void fill_error(Mlx5Context& ctx, ibv_wc* wc, Mlx5Qp* qp, const mlx5_cqe64* cqe, uint8_t opcode) {
    const auto* ecqe = reinterpret_cast<const mlx5_err_cqe*>(cqe);
    wc->status = syndrome_status(ecqe->syndrome);
    wc->vendor_err = ecqe->vendor_err_synd;
    const bool odp_fault = ecqe->syndrome == MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR &&
        ecqe->vendor_err_synd == MLX5_CQE_VENDOR_SYNDROME_ODP_PFAULT;
    if (ecqe->syndrome != MLX5_CQE_SYNDROME_WR_FLUSH_ERR &&
        ecqe->syndrome != MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR && !odp_fault) [[unlikely]]
        report_error_cqe(ctx, cqe);
    if (opcode == MLX5_CQE_REQ_ERR) {
        const uint32_t idx = retire_send(qp, cqe);
        wc->wr_id = qp->sq.wrid[idx];
    } else {
        wc->wr_id = take_recv(qp, cqe);
    }
}

enum class Polled { Ok, Empty, Error };

// One CQE into *wc. Caller holds the CQ lock.
// The next CQE the device has handed over, consumed (nullptr: none).
inline mlx5_cqe64* take_cqe(Mlx5Cq* cq) {
    mlx5_cqe64* cqe = sw_cqe(cq, cq->cons_index);
    if (!cqe)
        return nullptr;
    ++cq->cons_index;
    // The CQE's other bytes were written before its owner byte.
    from_device_barrier();
    return cqe;
}

// A plain CQE (no data in it, not compressed) into *wc.
[[gnu::always_inline]] inline Polled decode_one(Mlx5Context& ctx, ibv_wc* wc, Mlx5Qp* qp, const mlx5_cqe64* cqe,
                                                uint8_t opcode) {
    switch (opcode) {
    case MLX5_CQE_REQ: fill_requester(wc, qp, cqe); break;
    case MLX5_CQE_RESP_WR_IMM:
    case MLX5_CQE_RESP_SEND:
    case MLX5_CQE_RESP_SEND_IMM:
    case MLX5_CQE_RESP_SEND_INV: fill_responder(wc, qp, cqe, opcode); break;
    case MLX5_CQE_REQ_ERR:
    case MLX5_CQE_RESP_ERR: fill_error(ctx, wc, qp, cqe, opcode); break;
    default: return Polled::Error;
    }
    return Polled::Ok;
}

// ------------------------------------------------------ CQE compression
//
// On a CQ created with compression the device may write a session of n
// CQEs that differ only in their byte counts (and WQE counters, in a row):
// in the first place the title, a CQE whose op_own format is 3 and whose
// byte count is n; in the next places the mini-CQE arrays, eight 8-byte
// {hash or checksum, byte count} entries each; n places in all. The poll
// rebuilds the n CQEs in their places when it meets the title, and then
// reads them as any others. It goes from the last to the first: each
// array is read before its place is written, and the first array and the
// title are kept aside. False: a title whose length cannot be.
constexpr uint8_t kCompressed = MLX5_INLINE_SCATTER_32 | MLX5_INLINE_SCATTER_64;
inline bool is_title(const mlx5_cqe64* cqe) { return (cqe->op_own & kScatterBits) == kCompressed; }

struct MiniCqe {
    uint32_t info;  // RSS hash, or checksum and stride index
    __be32 byte_cnt;
};

[[gnu::noinline]] bool expand_session(Mlx5Cq* cq, uint32_t first) {
    mlx5_cqe64 title;
    std::memcpy(&title, cqe_at(cq, first), sizeof title);
    const uint32_t n = be32toh(title.byte_cnt);
    if (n < 2 || n > cq->ncqe)
        return false;
    MiniCqe head[8];
    std::memcpy(head, cqe_at(cq, first + 1), sizeof head);
    const uint16_t counter = be16toh(title.wqe_counter);
    for (uint32_t j = n; j-- > 0;) {
        MiniCqe m;
        if (j < 8)
            m = head[j];
        else
            std::memcpy(&m, reinterpret_cast<const uint8_t*>(cqe_at(cq, first + 1 + j / 8)) + (j % 8) * sizeof m,
                        sizeof m);
        mlx5_cqe64 c = title;
        c.byte_cnt = m.byte_cnt;
        c.wqe_counter = htobe16(static_cast<uint16_t>(counter + j));
        c.op_own = static_cast<uint8_t>((title.op_own & 0xf0) | (((first + j) & cq->ncqe) ? 1 : 0));
        std::memcpy(cqe_at(cq, first + j), &c, sizeof c);
    }
    return true;
}

// Before a walk over what the device has written (clean, resize): every
// session in it rebuilt, so that each place holds one CQE.
void expand_sessions(Mlx5Cq* cq) {
    if (!cq->compressed)
        return;
    uint32_t i = cq->cons_index;
    for (uint32_t k = 0; k < cq->ncqe;) {
        const mlx5_cqe64* cqe = sw_cqe(cq, i);
        if (!cqe)
            return;
        from_device_barrier();
        uint32_t step = 1;
        if (is_title(cqe)) {
            step = be32toh(cqe->byte_cnt);
            if (!expand_session(cq, i))
                return;
        }
        i += step;
        k += step;
    }
}

// A completion whose data the device put in the CQE: decoded as any
// other, the data copied out first; or the title of a compressed session,
// rebuilt and decoded. Out of line, reached by a tail call: the common
// paths keep their registers.
[[gnu::noinline]] Polled poll_scattered(ibv_wc* wc, Mlx5Qp* qp, const mlx5_cqe64* cqe, uint8_t opcode) {
    if (is_title(cqe)) {
        // the CQ this CQE is in: the one the QP reports this side to (not
        // passed down, to keep the common path's registers)
        ibv_qp* q = qp->vqp.qp();
        Mlx5Cq* cq = to_mcq(opcode == MLX5_CQE_REQ ? q->send_cq : q->recv_cq);
        if (!expand_session(cq, cq->cons_index - 1))
            return Polled::Error;
        return decode_one(*to_mctx(cq->vcq.cq()->context), wc, qp, cqe, opcode);
    }
    if (opcode == MLX5_CQE_REQ)
        fill_requester<true>(wc, qp, cqe);
    else
        fill_responder<true>(wc, qp, cqe, opcode);
    return Polled::Ok;
}

Polled poll_one(Mlx5Cq* cq, ibv_wc* wc) {
    const mlx5_cqe64* cqe = take_cqe(cq);
    if (!cqe)
        return Polled::Empty;
    const uint8_t opcode = cqe->op_own >> 4;
    Mlx5Context& ctx = *to_mctx(cq->vcq.cq()->context);
    Mlx5Qp* qp = ctx.qp_by_uidx(be32toh(cqe->srqn_uidx) & 0xffffff);
    if (!qp) [[unlikely]]
        return Polled::Error;
    wc->wc_flags = 0;
    wc->qp_num = be32toh(cqe->sop_drop_qpn) & 0xffffff;
    if (cqe->op_own & kScatterBits) [[unlikely]]  // success CQEs only
        return poll_scattered(wc, qp, cqe, opcode);
    return decode_one(ctx, wc, qp, cqe, opcode);
}

}  // namespace

// ------------------------------------------------------------- control

namespace {

// The size checks of a new CQ, in the reference's order: 0, EINVAL or
// ENOMEM (the reference sizes the ring in an int: 2 GiB or more is a failed
// allocation there, and here too).
int cq_size_error(int cqe, int cqe_size) {
    if (cqe <= 0)
        return EINVAL;
    const uint32_t ncqe = roundup_pow2(static_cast<uint32_t>(cqe) + 1);
    if (ncqe > kMaxCqe)
        return EINVAL;
    if (cqe_size != 64 && cqe_size != 128)
        return EINVAL;
    if (static_cast<uint64_t>(ncqe) * static_cast<uint32_t>(cqe_size) > INT32_MAX)
        return ENOMEM;
    return 0;
}

}  // namespace

Mlx5Cq* Mlx5Context::new_cq(int cqe, ibv_comp_channel* channel, int comp_vector, uint64_t wc_flags,
                            bool single_threaded, int cqe_size, uint32_t drv_flags, Mlx5Pd* parent, uint32_t core_flags,
                            uint8_t comp_format) {
    if (int e = cq_size_error(cqe, cqe_size)) {
        errno = e;
        return nullptr;
    }
    const uint32_t ncqe = roundup_pow2(static_cast<uint32_t>(cqe) + 1);
    return create_object<Mlx5Cq>([&](Mlx5Cq& cq) {
        cq.ncqe = ncqe;
        cq.cqe_size = static_cast<uint32_t>(cqe_size);
        cq.wc_flags = wc_flags;
        cq.wallclock = (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) != 0;
        if (env_.stall) {
            cq.stall_mode = env_.stall_loops < 0 ? kStallAdaptive : kStallFixed;
            cq.stall_cycles = env_.stall_min;
        }
        if (single_threaded || env_.single_threaded)
            cq.lock.disable();
        if (int e = cq.buf.alloc(static_cast<size_t>(cq.ncqe) * cq.cqe_size,
                                 ring_source("MLX_CQ", MLX5DV_RES_TYPE_CQ, parent)))
            return e;
        if (int e = cq.dbrec_buf.alloc(64, dbrec_source(parent)))
            return e;
        cq.dbrec = reinterpret_cast<volatile __be32*>(cq.dbrec_buf.get());
        init_ring(cq.buf.get(), cq.ncqe, cq.cqe_size);
        cq.uar_db = cq_doorbell();
        mlx5_ib_create_cq req{};
        req.buf_addr = reinterpret_cast<uintptr_t>(cq.buf.get());
        req.db_addr = reinterpret_cast<uintptr_t>(cq.dbrec_buf.get());
        req.cqe_size = cq.cqe_size;
        req.flags = static_cast<uint16_t>(drv_flags);
        if (dyn_uar()) {  // the doorbell page: the non-cached UAR object
            req.flags |= MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX;
            req.uar_page_index = static_cast<uint16_t>(nc_page_id());
        }
        if (comp_format) {
            req.cqe_comp_en = 1;
            req.cqe_comp_res_format = comp_format;
            cq.compressed = true;
        }
        mlx5_ib_create_cq_resp resp{};
        if (int e = cmd_create_cq(static_cast<int>(cq.ncqe - 1), channel, comp_vector, &cq.vcq,
                                  Udata{&req, sizeof(req), &resp, sizeof(resp)}, core_flags))
            return e;
        cq.cqn = resp.cqn;
        install_cq_ex_ops(cq, single_threaded || env_.single_threaded);
        return 0;
    });
}

ibv_cq* Mlx5Context::create_cq(int cqe, ibv_comp_channel* channel, int comp_vector) {
    Mlx5Cq* cq = new_cq(cqe, channel, comp_vector, IBV_WC_STANDARD_FLAGS, false, env_.cqe_size, 0);
    return cq ? cq->vcq.cq() : nullptr;
}

ibv_cq_ex* Mlx5Context::create_cq_ex(ibv_cq_init_attr_ex* attr) { return create_cq_common(attr, nullptr); }

// mlx5dv_create_cq: the extended CQ with the mlx5 attributes.
ibv_cq_ex* Mlx5Context::dv_create_cq(ibv_cq_init_attr_ex* attr, const mlx5dv_cq_init_attr* dv) {
    return create_cq_common(attr, dv);
}

// What the reference refuses, in its order: unknown attributes or flags
// (EINVAL), completion fields it cannot read (EOPNOTSUPP), unknown mlx5
// attributes (EINVAL), then the size, the CQE size, and what the mlx5
// attributes ask of the device (EINVAL when it lacks it).
ibv_cq_ex* Mlx5Context::create_cq_common(ibv_cq_init_attr_ex* attr, const mlx5dv_cq_init_attr* dv) {
    constexpr uint32_t kKnownMask = IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD;
    constexpr uint32_t kKnownFlags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
    const uint32_t flags = (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) ? attr->flags : 0;
    if ((attr->comp_mask & ~kKnownMask) || (flags & ~kKnownFlags)) {
        errno = EINVAL;
        return nullptr;
    }
    // Wall-clock time is the device clock converted through the kernel's
    // clock-info page (the device has no real-time clock mode here).
    const uint64_t wallclock = attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
    if ((attr->wc_flags & ~(kSupportedWcFlags | wallclock)) || (wallclock && !has_clock_info())) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    constexpr uint64_t kDvMask =
        MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE | MLX5DV_CQ_INIT_ATTR_MASK_FLAGS | MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
    if (dv && (dv->comp_mask & ~kDvMask)) {
        errno = EINVAL;
        return nullptr;
    }
    if (attr->cqe > static_cast<uint32_t>(INT32_MAX)) {
        errno = EINVAL;
        return nullptr;
    }
    // The CQE size: the mlx5 attribute, else MLX5_CQE_SIZE. The size is
    // checked before what the attributes ask for, as in the reference.
    const int cqe_size =
        dv && (dv->comp_mask & MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE) ? static_cast<int>(dv->cqe_size) : env_.cqe_size;
    uint32_t drv_flags = 0;
    uint8_t comp_format = 0;
    if (dv) {
        if (int e = cq_size_error(static_cast<int>(attr->cqe), cqe_size)) {
            errno = e;
            return nullptr;
        }
        // Compression needs a device that compresses, in a format asked
        // for (as in the reference, more than one format goes to the
        // kernel, which refuses it).
        if (dv->comp_mask & MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE) {
            if (!caps_.cqe_comp_caps.max_num || !(dv->cqe_comp_res_format & caps_.cqe_comp_caps.supported_format)) {
                errno = EINVAL;
                return nullptr;
            }
            comp_format = dv->cqe_comp_res_format;
        }
        if (dv->comp_mask & MLX5DV_CQ_INIT_ATTR_MASK_FLAGS) {
            if (dv->flags & ~uint64_t(MLX5DV_CQ_INIT_ATTR_FLAGS_CQE_PAD)) {
                errno = EINVAL;
                return nullptr;
            }
            if (dv->flags & MLX5DV_CQ_INIT_ATTR_FLAGS_CQE_PAD) {
                if (!(caps_.vendor_flags & MLX5DV_CONTEXT_FLAGS_CQE_128B_PAD) || cqe_size != 128) {
                    errno = EINVAL;
                    return nullptr;
                }
                drv_flags |= MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD;
            }
        }
    }
    // A CQ of a parent domain (IBV_CQ_INIT_ATTR_MASK_PD) takes its memory
    // from the domain's allocators; a plain PD is no parent domain.
    Mlx5Pd* parent = nullptr;
    if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
        parent = parent_of(attr->parent_domain);
        if (!parent) {
            errno = EINVAL;
            return nullptr;
        }
    }
    // A CQ that may overrun: the device writes over a full ring instead
    // of reporting a CQ error (a core flag of the create command).
    const uint32_t core_flags = (flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN) ? IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN : 0;
    // A parent domain with a thread domain: one thread, no lock.
    const bool one_thread = (flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED) || (parent && parent->td);
    Mlx5Cq* cq = new_cq(static_cast<int>(attr->cqe), attr->channel, static_cast<int>(attr->comp_vector), attr->wc_flags,
                        one_thread, cqe_size, drv_flags, parent, core_flags, comp_format);
    if (!cq)
        return nullptr;
    cq->parent = parent;
    hold(parent);
    cq->vcq.cq_ex.cq_context = attr->cq_context;
    return &cq->vcq.cq_ex;
}

// ibv_resize_cq: a new ring, the device told to switch to it (it marks
// the switch with a RESIZE_CQ CQE in the old ring, after what it had
// written), and the CQEs not polled yet carried over, each one place on
// (the marker took a count), in the new ring's owner parity. The CQE size
// stays. The reference's answers: EINVAL for a size whose ring would pass
// 2 GiB of 64-byte CQEs, nothing to do for the same ring size, -1 (errno
// ENOMEM) for a ring of 2 GiB or more at this CQE size; a size the device
// cannot have is refused before the ring is allocated (the reference
// allocates it first, and the kernel then says EINVAL).
int Mlx5Context::resize_cq(ibv_cq* ibcq, int cqe) {
    Mlx5Cq* cq = to_mcq(ibcq);
    if (cqe < 0 || static_cast<int64_t>(cqe) * 64 > INT32_MAX)
        return EINVAL;
    std::lock_guard guard(cq->lock);
    const uint32_t ncqe = roundup_pow2(static_cast<uint32_t>(cqe) + 1);
    if (ncqe == cq->ncqe)
        return 0;
    if (static_cast<uint64_t>(ncqe) * cq->cqe_size > INT32_MAX) {
        errno = ENOMEM;
        return -1;
    }
    if (static_cast<uint64_t>(ncqe) - 1 > static_cast<uint64_t>(caps_.max_cqe) + 1)
        return EINVAL;
    DmaBuf ring;
    if (int e =
            ring.alloc(static_cast<size_t>(ncqe) * cq->cqe_size, ring_source("MLX_CQ", MLX5DV_RES_TYPE_CQ, cq->parent)))
        return e;
    init_ring(ring.get(), ncqe, cq->cqe_size);
    mlx5_ib_resize_cq req{};
    req.buf_addr = reinterpret_cast<uintptr_t>(ring.get());
    req.cqe_size = static_cast<uint16_t>(cq->cqe_size);
    if (int e = cmd_resize_cq(ibcq, static_cast<int>(ncqe - 1), Udata{&req, sizeof(req), nullptr, 0}))
        return e;
    // Carry over up to the marker; at most one pass of the old ring.
    expand_sessions(cq);
    uint32_t i = cq->cons_index;
    bool marked = false;
    for (uint32_t k = 0; k < cq->ncqe; ++k, ++i) {
        const mlx5_cqe64* old = sw_cqe(cq, i);
        if (!old)
            break;
        from_device_barrier();
        if ((old->op_own >> 4) == MLX5_CQE_RESIZE_CQ) {
            marked = true;
            break;
        }
        // The whole slot (with 128-byte CQEs the CQE is its second half).
        mlx5_cqe64* c = ring_cqe(ring.get(), ncqe, cq->cqe_size, i + 1);
        const size_t lead = cq->cqe_size - sizeof(mlx5_cqe64);
        std::memcpy(reinterpret_cast<uint8_t*>(c) - lead, reinterpret_cast<const uint8_t*>(old) - lead, cq->cqe_size);
        c->op_own = static_cast<uint8_t>((c->op_own & ~MLX5_CQE_OWNER_MASK) | (((i + 1) & ncqe) ? 1 : 0));
    }
    if (marked)
        ++cq->cons_index;
    else if (FILE* out = debug_file())
        fprintf(out, "mlx5: %s: cq 0x%x resized without the device's resize CQE\n", hostname(), cq->cqn);
    cq->buf.swap(ring);
    cq->ncqe = ncqe;
    return 0;
}

int Mlx5Context::destroy_cq(ibv_cq* ibcq) {
    return destroy_object(to_mcq(ibcq), [&](Mlx5Cq& cq) {
        int e = cmd_destroy_cq(cq.vcq.cq());
        if (!e)
            let_go(cq.parent);
        return e;
    });
}

void Mlx5Context::cq_event(ibv_cq* cq) { ++to_mcq(cq)->arm_sn; }

void clean_cq(Mlx5Cq* cq, uint32_t uidx, Mlx5Srq* srq) {
    // A CQ the application reads itself (mlx5dv) is its to clean.
    if (!cq || cq->dv_owned)
        return;
    std::lock_guard guard(cq->lock);
    expand_sessions(cq);
    // The CQEs the device has written and we have not consumed.
    uint32_t prod = cq->cons_index;
    while (prod - cq->cons_index < cq->ncqe && sw_cqe(cq, prod))
        ++prod;
    from_device_barrier();
    // Walk back from the newest, sliding the CQEs of other QPs over the
    // ones removed; each slot keeps the owner bit of its own pass.
    uint32_t freed = 0;
    for (uint32_t i = prod; i-- != cq->cons_index;) {
        mlx5_cqe64* cqe = cqe_at(cq, i);
        if ((be32toh(cqe->srqn_uidx) & 0xffffff) == uidx) {
            const uint8_t op = cqe->op_own >> 4;
            if (srq &&
                (op == MLX5_CQE_RESP_WR_IMM || op == MLX5_CQE_RESP_SEND || op == MLX5_CQE_RESP_SEND_IMM ||
                 op == MLX5_CQE_RESP_SEND_INV || op == MLX5_CQE_RESP_ERR))
                free_srq_wqe(*srq, be16toh(cqe->wqe_counter));
            ++freed;
        } else if (freed) {
            uint8_t* dst = reinterpret_cast<uint8_t*>(cqe_at(cq, i + freed)) + sizeof(mlx5_cqe64) - cq->cqe_size;
            const uint8_t owner = dst[cq->cqe_size - 1] & MLX5_CQE_OWNER_MASK;
            std::memcpy(dst, reinterpret_cast<uint8_t*>(cqe) + sizeof(mlx5_cqe64) - cq->cqe_size, cq->cqe_size);
            dst[cq->cqe_size - 1] = static_cast<uint8_t>((dst[cq->cqe_size - 1] & ~MLX5_CQE_OWNER_MASK) | owner);
        }
    }
    if (freed) {
        cq->cons_index += freed;
        publish_ci(cq);
    }
}

// ------------------------------------------------------------- data path

namespace {

uint64_t cycles_now() {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
#endif
}

// The back-off before a poll (MLX5_STALL_*; see Env::stall).
[[gnu::noinline]] void stall_before(Mlx5Cq* cq) {
    const Env& env = to_mctx(cq->vcq.cq()->context)->env();
    if (cq->stall_mode == kStallFixed) {
        if (!cq->stall_next)
            return;
        cq->stall_next = false;
        for (int i = 0; i < env.stall_loops; ++i)
            cpu_relax();
        return;
    }
    if (!cq->stall_since)
        return;
    const uint64_t until = cq->stall_since + cq->stall_cycles;
    while (cycles_now() < until)
        cpu_relax();
}

// And after it: `found` of the `room` the caller offered.
[[gnu::noinline]] void stall_after(Mlx5Cq* cq, int found, int room) {
    const Env& env = to_mctx(cq->vcq.cq()->context)->env();
    if (cq->stall_mode == kStallFixed) {
        cq->stall_next = found == 0;
        return;
    }
    if (found > 0 && found < room) {
        cq->stall_cycles = std::min(cq->stall_cycles + env.stall_inc, env.stall_max);
        cq->stall_since = cycles_now();
        return;
    }
    cq->stall_cycles =
        cq->stall_cycles > env.stall_min + env.stall_dec ? cq->stall_cycles - env.stall_dec : env.stall_min;
    cq->stall_since = found == 0 ? cycles_now() : 0;
}

}  // namespace

int poll_cq(ibv_cq* ibcq, int num_entries, ibv_wc* wc) noexcept {
    Mlx5Cq* cq = to_mcq(ibcq);
    std::lock_guard guard(cq->lock);
    if (cq->stall_mode) [[unlikely]]
        stall_before(cq);
    int n = 0;
    bool error = false;
    while (n < num_entries) {
        const Polled p = poll_one(cq, &wc[n]);
        if (p == Polled::Empty)
            break;
        if (p == Polled::Error) {
            error = true;
            break;
        }
        ++n;
    }
    if (n || error)
        publish_ci(cq);
    if (cq->stall_mode) [[unlikely]]
        stall_after(cq, n, num_entries);
    return error ? -2 : n;
}

int arm_cq(ibv_cq* ibcq, int solicited_only) noexcept {
    Mlx5Cq* cq = to_mcq(ibcq);
    const uint32_t sn = cq->arm_sn & 3;
    const uint32_t ci = cq->cons_index & 0xffffff;
    const uint32_t cmd = solicited_only ? MLX5_CQ_DB_REQ_NOT_SOL : MLX5_CQ_DB_REQ_NOT;
    const uint32_t request = sn << 28 | cmd | ci;
    cq->dbrec[1] = htobe32(request);
    // The record must be visible before the doorbell reaches the device.
    to_device_barrier();
    const uint64_t doorbell = htobe64(static_cast<uint64_t>(request) << 32 | cq->cqn);
    *static_cast<volatile uint64_t*>(cq->uar_db) = doorbell;
    flush_wc_writes();
    return 0;
}

// -------------------------------------------------- extended polling hooks

namespace {

// The extended interface: start_poll and next_poll consume a CQE and
// retire its work request (wr_id and status are fields of ibv_cq_ex); the
// read_* hooks decode the rest from the CQE itself, only what the
// application asks for. An error CQE defines wr_id, status and the vendor
// syndrome; its other fields read as the bytes the device left.
// A plain CQE (no data in it, not compressed) as the current one.
[[gnu::always_inline]] inline int decode_ex(Mlx5Cq* cq, Mlx5Context& ctx, Mlx5Qp* qp, const mlx5_cqe64* cqe,
                                            uint8_t opcode) noexcept {
    ibv_cq_ex& x = cq->vcq.cq_ex;
    switch (opcode) {
    case MLX5_CQE_REQ: {
        const uint32_t idx = retire_send(qp, cqe);
        x.wr_id = qp->sq.wrid[idx];
        cq->ex_sq_opcode = qp->sq.wc_opcode[idx];
        x.status = IBV_WC_SUCCESS;
        break;
    }
    case MLX5_CQE_RESP_WR_IMM:
    case MLX5_CQE_RESP_SEND:
    case MLX5_CQE_RESP_SEND_IMM:
    case MLX5_CQE_RESP_SEND_INV:
        x.wr_id = take_recv(qp, cqe);
        x.status = IBV_WC_SUCCESS;
        break;
    case MLX5_CQE_REQ_ERR:
    case MLX5_CQE_RESP_ERR:
        [[unlikely]] {
            ibv_wc wc;
            fill_error(ctx, &wc, qp, cqe, opcode);
            x.wr_id = wc.wr_id;
            x.status = wc.status;
            break;
        }
    default: return EINVAL;
    }
    cq->ex_cqe = cqe;
    return 0;
}

// load_next for the title of a compressed session (rebuilt, then read as
// any other CQE), and for a CQE whose data the device put in the CQE (the
// work request retired as any other, the data copied out to its buffers;
// its status says whether they held it). Out of line, reached by tail
// calls.
[[gnu::noinline]] int load_compressed(Mlx5Cq* cq, Mlx5Qp* qp, const mlx5_cqe64* cqe, uint8_t opcode) noexcept {
    if (!expand_session(cq, cq->cons_index - 1))
        return EINVAL;
    return decode_ex(cq, *to_mctx(cq->vcq.cq()->context), qp, cqe, opcode);
}

[[gnu::noinline]] int load_scattered(Mlx5Cq* cq, Mlx5Qp* qp, const mlx5_cqe64* cqe, uint8_t opcode) noexcept {
    ibv_cq_ex& x = cq->vcq.cq_ex;
    if (opcode == MLX5_CQE_REQ) {
        const uint32_t idx = retire_send(qp, cqe);
        x.wr_id = qp->sq.wrid[idx];
        cq->ex_sq_opcode = qp->sq.wc_opcode[idx];
        x.status = static_cast<ibv_wc_status>(scatter_send(qp, idx, cqe));
    } else {
        int status = IBV_WC_SUCCESS;
        x.wr_id = take_recv<true>(qp, cqe, &status);
        x.status = static_cast<ibv_wc_status>(status);
    }
    cq->ex_cqe = cqe;
    return 0;
}

inline int load_next(Mlx5Cq* cq) noexcept {
    const mlx5_cqe64* cqe = take_cqe(cq);
    if (!cqe)
        return ENOENT;
    const uint8_t opcode = cqe->op_own >> 4;
    Mlx5Context& ctx = *to_mctx(cq->vcq.cq()->context);
    Mlx5Qp* qp = ctx.qp_by_uidx(be32toh(cqe->srqn_uidx) & 0xffffff);
    if (!qp) [[unlikely]]
        return EINVAL;
    if (const uint8_t format = cqe->op_own & kScatterBits) [[unlikely]]  // success CQEs only
        return format == kCompressed ? load_compressed(cq, qp, cqe, opcode) : load_scattered(cq, qp, cqe, opcode);
    return decode_ex(cq, ctx, qp, cqe, opcode);
}

// The lock is held from a successful start_poll until end_poll.
int start_poll(ibv_cq_ex* current, ibv_poll_cq_attr* attr) noexcept {
    Mlx5Cq* cq = to_mcq(current);
    if (attr->comp_mask)
        return EINVAL;
    cq->lock.lock();
    if (cq->wallclock) [[unlikely]]
        to_mctx(current->context)->clock_info(&cq->ex_clock);  // EBUSY keeps the last conversion
    if (cq->stall_mode) [[unlikely]]
        stall_before(cq);
    const uint32_t before = cq->cons_index;
    if (int e = load_next(cq)) {
        if (cq->cons_index != before)
            publish_ci(cq);
        if (cq->stall_mode) [[unlikely]]
            stall_after(cq, 0, 1);
        cq->lock.unlock();
        return e;
    }
    if (cq->stall_mode) [[unlikely]]
        stall_after(cq, 1, 1);
    return 0;
}

int next_poll(ibv_cq_ex* current) noexcept { return load_next(to_mcq(current)); }

void end_poll(ibv_cq_ex* current) noexcept {
    Mlx5Cq* cq = to_mcq(current);
    publish_ci(cq);
    cq->lock.unlock();
}

inline const mlx5_cqe64& cur(ibv_cq_ex* c) noexcept { return *to_mcq(c)->ex_cqe; }
inline uint8_t cur_opcode(ibv_cq_ex* c) noexcept { return cur(c).op_own >> 4; }

ibv_wc_opcode read_opcode(ibv_cq_ex* c) noexcept {
    switch (cur_opcode(c)) {
    case MLX5_CQE_REQ: return requester_opcode(&cur(c), to_mcq(c)->ex_sq_opcode);
    case MLX5_CQE_RESP_WR_IMM: return IBV_WC_RECV_RDMA_WITH_IMM;
    case MLX5_CQE_RESP_SEND:
    case MLX5_CQE_RESP_SEND_IMM:
    case MLX5_CQE_RESP_SEND_INV: return IBV_WC_RECV;
    default: return static_cast<ibv_wc_opcode>(0);
    }
}
uint32_t read_vendor_err(ibv_cq_ex* c) noexcept {
    const uint8_t op = cur_opcode(c);
    if (op != MLX5_CQE_REQ_ERR && op != MLX5_CQE_RESP_ERR)
        return 0;
    return reinterpret_cast<const mlx5_err_cqe&>(cur(c)).vendor_err_synd;
}
uint32_t read_byte_len(ibv_cq_ex* c) noexcept { return be32toh(cur(c).byte_cnt); }
// The immediate as sent, or the invalidated rkey (big-endian both ways).
__be32 read_imm_data(ibv_cq_ex* c) noexcept { return cur(c).imm_inval_pkey; }
uint32_t read_qp_num(ibv_cq_ex* c) noexcept { return be32toh(cur(c).sop_drop_qpn) & 0xffffff; }
uint32_t read_src_qp(ibv_cq_ex* c) noexcept { return be32toh(cur(c).flags_rqpn) & 0xffffff; }
// What the receive side says of the message; a requester CQE carries no
// immediate flag here (only ibv_poll_cq derives one from the WQE).
unsigned int read_wc_flags(ibv_cq_ex* c) noexcept {
    unsigned int flags = 0;
    switch (cur_opcode(c)) {
    case MLX5_CQE_RESP_WR_IMM:
    case MLX5_CQE_RESP_SEND_IMM: flags = IBV_WC_WITH_IMM; break;
    case MLX5_CQE_RESP_SEND_INV: flags = IBV_WC_WITH_INV; break;
    default: break;
    }
    if ((be32toh(cur(c).flags_rqpn) >> 28) & 3)
        flags |= IBV_WC_GRH;
    return flags;
}
uint32_t read_slid(ibv_cq_ex* c) noexcept { return be16toh(cur(c).slid); }
uint8_t read_sl(ibv_cq_ex* c) noexcept { return (be32toh(cur(c).flags_rqpn) >> 24) & 0xf; }
uint8_t read_dlid_path_bits(ibv_cq_ex* c) noexcept { return cur(c).ml_path & 0x7f; }
uint64_t read_completion_ts(ibv_cq_ex* c) noexcept { return be64toh(cur(c).timestamp); }
uint64_t read_completion_wallclock_ns(ibv_cq_ex* c) noexcept {
    return mlx5dv_ts_to_ns(&to_mcq(c)->ex_clock, be64toh(cur(c).timestamp));
}
// The stripped VLAN tag, the flow tag a steering rule set (it shares the
// word of the QP number), and the tag-matching header of a tagged message.
uint16_t read_cvlan(ibv_cq_ex* c) noexcept { return be16toh(cur(c).vlan_info); }
uint32_t read_flow_tag(ibv_cq_ex* c) noexcept { return be32toh(cur(c).sop_drop_qpn) & 0xffffff; }
void read_tm_info(ibv_cq_ex* c, ibv_wc_tm_info* info) noexcept {
    info->tag = be64toh(cur(c).tmh.tag);
    info->priv = be32toh(cur(c).tmh.app_ctx);
}

}  // namespace

void install_cq_ex_ops(Mlx5Cq& cq, bool) {
    ibv_cq_ex& c = cq.vcq.cq_ex;
    c.start_poll = start_poll;
    c.next_poll = next_poll;
    c.end_poll = end_poll;
    c.read_opcode = read_opcode;
    c.read_vendor_err = read_vendor_err;
    c.read_byte_len = read_byte_len;
    c.read_imm_data = read_imm_data;
    c.read_qp_num = read_qp_num;
    c.read_src_qp = read_src_qp;
    c.read_wc_flags = read_wc_flags;
    c.read_slid = read_slid;
    c.read_sl = read_sl;
    c.read_dlid_path_bits = read_dlid_path_bits;
    c.read_completion_ts = read_completion_ts;
    c.read_completion_wallclock_ns = read_completion_wallclock_ns;
    c.read_cvlan = read_cvlan;
    c.read_flow_tag = read_flow_tag;
    c.read_tm_info = read_tm_info;
}

}  // namespace rdma::mlx5
