// Queue pairs: one buffer holds the receive queue (WQEs of 1 << wqe_shift
// bytes) followed by the send queue (64-byte basic blocks); the doorbell
// record publishes both producer counters, and a send is announced through
// the QP's UAR register, by BlueFlame (the whole WQE written to the
// device) when it is small and alone. The device consumes WQEs in order
// and names the completed send WQE in its CQE (cq.cpp).
// See tests/uverbs-sim/doc/mlx5-contract.md §3.5, §4.1, §4.2, §5.
#include "providers/mlx5/mlx5.h"

#include <endian.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <array>
#include <cstring>
#include <mutex>
#include <new>

namespace rdma::mlx5 {

using namespace rdma::verbs;

Mlx5Wq::~Mlx5Wq() {
    delete[] wrid;
    delete[] wqe_head;
    delete[] wc_opcode;
}

namespace {

constexpr uint32_t kSegSize = 16;  // control, address, atomic and data segments
constexpr uint32_t kAvSize = sizeof(mlx5_wqe_av);
constexpr uint32_t kInlineHdr = sizeof(mlx5_wqe_inl_data_seg);
// The XRC segment of an XRC send WQE, right after the control segment: the
// SRQ (of the target's domain) the message is for.
struct XrcSeg {
    __be32 xrc_srqn;
    uint8_t reserved[12];
};
constexpr uint32_t kXrcSize = sizeof(XrcSeg);
// A raw packet send's Ethernet segment, which carries the frame's first
// kEthInlineHdr bytes (the L2 header) for the device to parse.
constexpr uint32_t kEthSegSize = sizeof(mlx5_wqe_eth_seg);
constexpr uint32_t kEthInlineHdr = 18;
static_assert(kEthSegSize == 32 && offsetof(mlx5_wqe_eth_seg, inline_hdr_start) + kEthInlineHdr == kEthSegSize);
static_assert(kXrcSize == 16);
// Legacy ibv_post_send knows the opcodes up to IBV_WR_DRIVER1.
constexpr int kOpcodeCount = IBV_WR_DRIVER1 + 1;

uint32_t align_up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

uint32_t ilog2(uint32_t v) { return 31 - static_cast<uint32_t>(__builtin_clz(v)); }

// The room a send WQE needs before its data, for the operations the
// reference allows by default: RC and UC carry everything up to a memory
// window bind (control, UMR control, mkey context and a 64-byte entry),
// UD a control segment and its address vector.
// With ibv_wr_* send ops given at creation, the room follows the largest
// of the operations asked for instead.
constexpr uint64_t kRcSendOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
    IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV;
constexpr uint64_t kUcSendOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
    IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_SEND_WITH_INV;
constexpr uint64_t kUdSendOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
constexpr uint64_t kBindOps = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
constexpr uint64_t kAtomicOps = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
constexpr uint64_t kRdmaOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ;

uint64_t supported_send_ops(ibv_qp_type type) {
    switch (type) {
    case IBV_QPT_RC: return kRcSendOps | kBindOps;
    case IBV_QPT_XRC_SEND: return kRcSendOps | kBindOps;
    case IBV_QPT_UC: return kUcSendOps | kBindOps;
    case IBV_QPT_UD: return kUdSendOps;
    case IBV_QPT_RAW_PACKET: return IBV_QP_EX_WITH_SEND;  // (TSO: not yet)
    default: return 0;
    }
}

uint32_t sq_overhead(ibv_qp_type type, uint64_t ops) {
    uint32_t op = kSegSize;
    if (ops & kBindOps)
        op = kSegSize + 48 + 64 + 64;
    else if (ops & kAtomicOps)
        op = 3 * kSegSize;
    else if (ops & kRdmaOps)
        op = 2 * kSegSize;
    if (type == IBV_QPT_XRC_SEND) {
        // the XRC segment goes before the remote address (and atomic)
        const uint32_t xrc = kSegSize + kXrcSize + ((ops & kAtomicOps) ? 2 : 1) * kSegSize;
        return op > xrc ? op : xrc;
    }
    if (type == IBV_QPT_RAW_PACKET)
        return kSegSize + kEthSegSize;
    return type == IBV_QPT_UD ? op + kAvSize : op;
}

// The reference's default set: RC and UC everything up to a memory window
// bind, UD sends (and TSO).
uint64_t default_send_ops(ibv_qp_type type) {
    return type == IBV_QPT_UD || type == IBV_QPT_RAW_PACKET ? uint64_t(IBV_QP_EX_WITH_SEND) : kRcSendOps | kBindOps;
}

struct Sizes {
    uint32_t sq_bytes = 0;
    uint32_t sq_wqe_cnt = 0;
    uint32_t sq_max_post = 0;
    uint32_t max_inline = 0;
    bool has_sq = false;
    uint32_t rq_bytes = 0;
    uint32_t rq_wqe_cnt = 0;
    uint32_t rq_wqe_shift = 0;
    uint32_t rq_max_gs = 0;
};

// The send queue: each WQE sized for max_send_sge data segments or
// max_inline_data bytes inline (whichever is larger), in whole basic
// blocks; the queue holds max_send_wr of them, rounded to a power of two.
// 0 or EINVAL.
int size_sq(const Caps& caps, const ibv_qp_init_attr& a, uint64_t ops, Sizes& s) {
    if (a.cap.max_send_wr == 0)
        return 0;
    const uint32_t overhead = sq_overhead(a.qp_type, ops);
    uint32_t inl = 0;
    if (a.cap.max_inline_data)
        inl = overhead + align_up(kInlineHdr + a.cap.max_inline_data, kSegSize);
    if (caps.max_sq_desc_sz < overhead || a.cap.max_send_sge > (caps.max_sq_desc_sz - overhead) / kSegSize)
        return EINVAL;
    const uint32_t gather = overhead + a.cap.max_send_sge * kSegSize;
    const uint32_t total = gather > inl ? gather : inl;
    if (total > caps.max_sq_desc_sz)
        return EINVAL;
    const uint32_t wqe = align_up(total, MLX5_SEND_WQE_BB);
    if (wqe > caps.max_sq_desc_sz)
        return EINVAL;
    s.max_inline = wqe - overhead - kInlineHdr;
    if (a.cap.max_send_wr > 0x7fffffffu / caps.max_sq_desc_sz)
        return EINVAL;
    const uint32_t bytes = roundup_pow2(a.cap.max_send_wr * wqe);
    if (bytes / MLX5_SEND_WQE_BB > caps.max_send_wqebb)
        return EINVAL;
    s.has_sq = true;
    s.sq_bytes = bytes;
    s.sq_wqe_cnt = bytes / MLX5_SEND_WQE_BB;
    s.sq_max_post = bytes / wqe;
    return 0;
}

// The receive queue: WQEs of a power-of-two stride with room for
// max_recv_sge data segments; none with an SRQ. 0 or EINVAL.
int size_rq(const Caps& caps, const ibv_qp_init_attr& a, Sizes& s) {
    if (a.cap.max_recv_wr == 0)
        return 0;
    if (a.cap.max_recv_wr > caps.max_recv_wr)
        return EINVAL;
    if (a.srq)
        return 0;
    const uint32_t want = kSegSize * (a.cap.max_recv_sge ? a.cap.max_recv_sge : 1);
    if (want > caps.max_rq_desc_sz)
        return EINVAL;
    const uint32_t stride = roundup_pow2(want);
    uint32_t bytes = roundup_pow2(a.cap.max_recv_wr) * stride;
    if (bytes < MLX5_SEND_WQE_BB)
        bytes = MLX5_SEND_WQE_BB;
    s.rq_bytes = bytes;
    s.rq_wqe_cnt = bytes / stride;
    s.rq_wqe_shift = ilog2(stride);
    s.rq_max_gs = stride / kSegSize;
    return 0;
}

bool is_atomic(ibv_wr_opcode op) { return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD; }

// The device opcode of a legacy work request, and what its completion
// reports; 0xff for the operations this provider does not carry (TSO,
// driver opcodes). The memory window operations are UMR WQEs; their entry
// says kUmrOp, which the send loop's fast path treats like 0xff, so that
// they cost the ordinary operations no test.
struct OpInfo {
    uint8_t mlx5;
    uint8_t wc;
};
constexpr uint8_t kUmrOp = 0xfe;
constexpr OpInfo kOps[kOpcodeCount] = {
    {MLX5_OPCODE_RDMA_WRITE, IBV_WC_RDMA_WRITE},  // IBV_WR_RDMA_WRITE
    {MLX5_OPCODE_RDMA_WRITE_IMM, IBV_WC_RDMA_WRITE},  // IBV_WR_RDMA_WRITE_WITH_IMM
    {MLX5_OPCODE_SEND, IBV_WC_SEND},  // IBV_WR_SEND
    {MLX5_OPCODE_SEND_IMM, IBV_WC_SEND},  // IBV_WR_SEND_WITH_IMM
    {MLX5_OPCODE_RDMA_READ, IBV_WC_RDMA_READ},  // IBV_WR_RDMA_READ
    {MLX5_OPCODE_ATOMIC_CS, IBV_WC_COMP_SWAP},  // IBV_WR_ATOMIC_CMP_AND_SWP
    {MLX5_OPCODE_ATOMIC_FA, IBV_WC_FETCH_ADD},  // IBV_WR_ATOMIC_FETCH_AND_ADD
    {kUmrOp, IBV_WC_LOCAL_INV},  // IBV_WR_LOCAL_INV
    {kUmrOp, IBV_WC_BIND_MW},  // IBV_WR_BIND_MW
    {MLX5_OPCODE_SEND_INVAL, IBV_WC_SEND},  // IBV_WR_SEND_WITH_INV
    {0xff, IBV_WC_TSO},  // IBV_WR_TSO
    {0xff, IBV_WC_DRIVER1},  // IBV_WR_DRIVER1
};

// The control segment's fence/completion/solicited bits for each
// combination of the three send flags that set them (one load instead of
// three tests), in four tables: with CQ_UPDATE on every entry or not (the
// QP signals every WR), and after a memory window operation or not (the
// WQE that follows one waits for it with a small fence, unless it asks
// for the full fence itself). A QP points at the table its next WQE uses.
static_assert(IBV_SEND_FENCE == 1 && IBV_SEND_SIGNALED == 2 && IBV_SEND_SOLICITED == 4);
constexpr unsigned int kFmCeSeFlags = IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
constexpr size_t kFmEntries = kFmCeSeFlags + 1;
alignas(64) constexpr auto kFmTables = [] {
    std::array<uint8_t, 4 * kFmEntries> t{};
    for (unsigned int sig_all = 0; sig_all < 2; ++sig_all)
        for (unsigned int after_umr = 0; after_umr < 2; ++after_umr)
            for (unsigned int f = 0; f <= kFmCeSeFlags; ++f) {
                const uint8_t fence = (f & IBV_SEND_FENCE) ? MLX5_WQE_CTRL_FENCE
                    : after_umr                            ? MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE
                                                           : 0;
                t[(sig_all * 2 + after_umr) * kFmEntries + f] =
                    static_cast<uint8_t>(fence | ((sig_all || (f & IBV_SEND_SIGNALED)) ? MLX5_WQE_CTRL_CQ_UPDATE : 0) |
                                         ((f & IBV_SEND_SOLICITED) ? MLX5_WQE_CTRL_SOLICITED : 0));
            }
    return t;
}();
// The table of a QP that signals every WR (or not); + kFmEntries: the
// one after a memory window operation.
inline const uint8_t* fm_base_table(bool sig_all) { return kFmTables.data() + (sig_all ? 2 * kFmEntries : 0); }

// Would nreq more WRs overflow the queue? The tail moves under the CQ's
// lock (poll), so a full-looking queue is looked at again under it.
inline bool wq_full_under_cq_lock(Mlx5Wq& wq, uint32_t nreq, ibv_cq* cq) {
    Mlx5Cq* mcq = to_mcq(cq);
    std::lock_guard guard(mcq->lock);
    return wq.head - wq.tail + nreq >= wq.max_post;
}

// Out of line for the send paths, whose loops keep fewer registers so;
// post_recv takes the inline form and stays a leaf function.
[[gnu::noinline]] bool wq_overflow_locked(Mlx5Wq& wq, uint32_t nreq, ibv_cq* cq) {
    return wq_full_under_cq_lock(wq, nreq, cq);
}

inline bool wq_overflow(Mlx5Wq& wq, uint32_t nreq, ibv_cq* cq) {
    const uint32_t cur = wq.head - __atomic_load_n(&wq.tail, __ATOMIC_RELAXED);
    if (cur + nreq < wq.max_post) [[likely]]
        return false;
    return wq_overflow_locked(wq, nreq, cq);
}

inline void set_data_seg(void* p, uint32_t length, uint32_t lkey, uint64_t addr) {
    auto* d = static_cast<mlx5_wqe_data_seg*>(p);
    d->byte_count = htobe32(length);
    d->lkey = htobe32(lkey);
    d->addr = htobe64(addr);
}

// One 64-byte block into the BlueFlame buffer: 16-byte stores where the
// CPU has them (the register is write-combining memory).
inline void bf_copy_block(uint8_t* dst, const uint8_t* src) {
#if defined(__SSE2__)
    const auto* s = reinterpret_cast<const __m128i*>(src);
    auto* d = reinterpret_cast<__m128i*>(dst);
    _mm_store_si128(d, _mm_load_si128(s));
    _mm_store_si128(d + 1, _mm_load_si128(s + 1));
    _mm_store_si128(d + 2, _mm_load_si128(s + 2));
    _mm_store_si128(d + 3, _mm_load_si128(s + 3));
#else
    auto* d = reinterpret_cast<volatile uint64_t*>(dst);
    const auto* s = reinterpret_cast<const uint64_t*>(src);
    for (int i = 0; i < 8; ++i)
        d[i] = s[i];
#endif
}

// The last WQE posted, written whole into the BlueFlame buffer: the
// device starts on it without reading host memory. `bytes` is a whole
// number of blocks, at least one, following the WQE around the end of the
// SQ; a WQE that does not reach the end (nearly all) is copied without
// looking for it.
inline void bf_copy(const Mlx5Qp& qp, uint8_t* dst, const uint8_t* wqe, uint32_t bytes) {
    const uint8_t* src = wqe;
    const uint8_t* end = wqe + bytes;
    if (end <= qp.sq_end) [[likely]] {
        do {
            bf_copy_block(dst, src);
            dst += MLX5_SEND_WQE_BB;
            src += MLX5_SEND_WQE_BB;
        } while (src != end);
        return;
    }
    while (bytes) {
        bf_copy_block(dst, src);
        dst += MLX5_SEND_WQE_BB;
        src += MLX5_SEND_WQE_BB;
        bytes -= MLX5_SEND_WQE_BB;
        if (src == qp.sq_end)
            src = qp.sq.start;
    }
}

[[gnu::always_inline]] inline void ring_send_doorbell(Mlx5Qp& qp, const uint8_t* ctrl, uint32_t size, uint32_t nreq,
                                                      bool inl) {
    qp.sq.head += nreq;
    to_device_barrier();
    qp.db[MLX5_SND_DBR] = htobe32(qp.sq.cur_post & 0xffff);
    Bfreg* bf = qp.bf;
    if (bf->shared)
        bf->lock.lock();
    uint8_t* reg = static_cast<uint8_t*>(bf->reg) + bf->offset;
    if (nreq == 1 && size - 2 < qp.bf_span[inl])
        bf_copy(qp, reg, ctrl, align_up(size * kSegSize, MLX5_SEND_WQE_BB));
    else
        *reinterpret_cast<volatile uint64_t*>(reg) = *reinterpret_cast<const uint64_t*>(ctrl);
    flush_wc_writes();
    bf->offset ^= bf->buf_size;
    if (bf->shared)
        bf->lock.unlock();
}

}  // namespace

// ------------------------------------------------------------- control

Mlx5Qp* Mlx5Context::new_qp(ibv_pd* pd, ibv_qp_init_attr* attr, uint64_t send_ops, uint32_t drv_flags) {
    if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC && attr->qp_type != IBV_QPT_UD &&
        attr->qp_type != IBV_QPT_XRC_SEND && attr->qp_type != IBV_QPT_RAW_PACKET) {
        errno = EOPNOTSUPP;  // DC QPs come later
        return nullptr;
    }
    const bool raw = attr->qp_type == IBV_QPT_RAW_PACKET;
    // An XRC initiator sends only: its receives land in SRQs at the target.
    if (attr->qp_type == IBV_QPT_XRC_SEND)
        attr->cap.max_recv_wr = attr->cap.max_recv_sge = 0;
    Sizes sz;
    if (int e = size_sq(caps_, *attr, send_ops ? send_ops : default_send_ops(attr->qp_type), sz)) {
        errno = e;
        return nullptr;
    }
    if (sz.has_sq)
        attr->cap.max_inline_data = sz.max_inline;
    if (int e = size_rq(caps_, *attr, sz)) {
        errno = e;
        return nullptr;
    }
    Mlx5Qp* qp = create_object<Mlx5Qp>([&](Mlx5Qp& q) {
        if (sz.has_sq) {
            q.sq.wqe_cnt = sz.sq_wqe_cnt;
            q.sq.wqe_shift = 6;
            q.sq.max_post = sz.sq_max_post;
            q.sq.max_gs = attr->cap.max_send_sge;
            q.sq.wrid = new (std::nothrow) uint64_t[sz.sq_wqe_cnt];
            q.sq.wqe_head = new (std::nothrow) uint32_t[sz.sq_wqe_cnt];
            q.sq.wc_opcode = new (std::nothrow) uint8_t[sz.sq_wqe_cnt];
            if (!q.sq.wrid || !q.sq.wqe_head || !q.sq.wc_opcode)
                return ENOMEM;
        }
        if (sz.rq_wqe_cnt) {
            q.rq.wqe_cnt = sz.rq_wqe_cnt;
            q.rq.wqe_shift = sz.rq_wqe_shift;
            q.rq.max_post = sz.rq_wqe_cnt;
            q.rq.max_gs = sz.rq_max_gs;
            q.rq.wrid = new (std::nothrow) uint64_t[sz.rq_wqe_cnt];
            if (!q.rq.wrid)
                return ENOMEM;
        }
        if (env_.single_threaded) {
            q.sq.lock.disable();
            q.rq.lock.disable();
        }
        q.parent = parent_of(pd);
        const Mlx5Td* td = q.parent ? q.parent->td : nullptr;
        if (td) {  // one thread only, by the application's word
            q.sq.lock.disable();
            q.rq.lock.disable();
        }
        // (a raw packet QP's SQ is a buffer of its own: the kernel makes it
        // a separate send queue object of the device)
        const size_t own = raw ? sz.rq_bytes : sz.rq_bytes + sz.sq_bytes;
        if (int e =
                q.buf.alloc(own ? own : size_t{MLX5_SEND_WQE_BB}, ring_source("MLX_QP", MLX5DV_RES_TYPE_QP, q.parent)))
            return e;
        if (raw && sz.sq_bytes)
            if (int e = q.sq_buf.alloc(sz.sq_bytes, ring_source("MLX_QP", MLX5DV_RES_TYPE_QP, q.parent)))
                return e;
        if (int e = q.dbrec_buf.alloc(64, dbrec_source(q.parent)))
            return e;
        q.db = reinterpret_cast<volatile __be32*>(q.dbrec_buf.get());
        q.rq.start = q.buf.get();
        q.sq.start = raw ? q.sq_buf.get() : q.buf.get() + sz.rq_bytes;
        q.sq_end = q.sq.start + sz.sq_bytes;
        q.max_inline = sz.has_sq ? sz.max_inline : 0;
        q.fm_base = q.fm_table = fm_base_table(attr->sq_sig_all);
        q.atomics = caps_.atomic_cap != IBV_ATOMIC_NONE;
        const int64_t uidx = store_uidx(&q);
        if (uidx < 0)
            return ENOMEM;
        q.uidx = static_cast<uint32_t>(uidx);
        q.uidx_stored = true;

        mlx5_ib_create_qp req{};
        req.buf_addr = reinterpret_cast<uintptr_t>(q.buf.get());
        req.db_addr = reinterpret_cast<uintptr_t>(q.dbrec_buf.get());
        req.sq_wqe_count = sz.sq_wqe_cnt;
        req.rq_wqe_count = sz.rq_wqe_cnt;
        req.rq_wqe_shift = sz.rq_wqe_cnt ? sz.rq_wqe_shift : 0;
        req.uidx = q.uidx;
        req.flags = drv_flags;
        if (raw)
            req.sq_buf_addr = reinterpret_cast<uintptr_t>(q.sq_buf.get());
        // Doorbells go to the thread domain's own register; with dynamic
        // UARs, to one of the context's pools; else to the static register
        // the kernel picks.
        Bfreg* bf = td ? td->bf : nullptr;
        if (!bf && dyn_uar_ && !(bf = acquire_qp_bfreg()))
            return errno;
        if (bf && bf->uar_object) {
            req.flags |= MLX5_QP_FLAG_UAR_PAGE_INDEX;
            req.bfreg_index = bf->page_id;
        } else if (bf) {
            req.flags |= MLX5_QP_FLAG_BFREG_INDEX;
            req.bfreg_index = bf->dyn_index;
        }
        mlx5_ib_create_qp_resp resp{};
        int e = cmd_create_qp(pd, attr, &q.vqp, Udata{&req, sizeof(req), &resp, sizeof(resp)});
        if (e) {
            release_qp_bfreg(bf);  // (a domain's or the NC register: no pool)
            clear_uidx(q.uidx);
            q.uidx_stored = false;
            return e;
        }
        q.bf = bf ? bf : bfreg(resp.bfreg_index);
        if (!q.bf)
            q.bf = bfreg(0);
        const uint32_t bf_max = q.bf->buf_size / kSegSize;
        q.bf_span[1] = bf_max > 1 ? bf_max - 1 : 0;
        q.bf_span[0] = env_.prefer_bf ? q.bf_span[1] : 0;
        q.qpn8 = q.vqp.qp()->qp_num << 8;
        return 0;
    });
    if (!qp)
        return nullptr;
    hold(qp->parent);
    // What the application may post, as the queues were sized (the
    // kernel's echo of the request says less).
    attr->cap.max_send_wr = qp->sq.max_post;
    attr->cap.max_recv_wr = qp->rq.max_post;
    attr->cap.max_recv_sge = qp->rq.max_gs;
    return qp;
}

ibv_qp* Mlx5Context::create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
    Mlx5Qp* qp = new_qp(pd, attr, 0, default_qp_flags());
    return qp ? qp->vqp.qp() : nullptr;
}

ibv_qp* Mlx5Context::create_qp_ex(ibv_qp_init_attr_ex* attr) { return create_qp_common(attr, default_qp_flags()); }

// mlx5dv_create_qp without DC: the creation flags the kernel takes for RC,
// UC and UD QPs, checked as the reference checks them (unknown masks and
// flags EINVAL, contradicting scatter-to-CQE flags EINVAL, signature
// pipelining EOPNOTSUPP without the device's SQD-to-RTS support, which only
// DEVX would tell). Scatter-to-CQE is never requested by this provider, so
// both of its flags leave the QP as it is (the device writes the buffers).
// DC QPs (IBV_QPT_DRIVER) and mlx5 send operations belong to later issues:
// EOPNOTSUPP.
ibv_qp* Mlx5Context::dv_create_qp(ibv_qp_init_attr_ex* attr, const mlx5dv_qp_init_attr* dv) {
    constexpr uint64_t kDvMask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS | MLX5DV_QP_INIT_ATTR_MASK_DC |
        MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS | MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS;
    constexpr uint32_t kDvFlags = MLX5DV_QP_CREATE_TUNNEL_OFFLOADS | MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_UC |
        MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_MC | MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE |
        MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE | MLX5DV_QP_CREATE_PACKET_BASED_CREDIT_MODE |
        MLX5DV_QP_CREATE_SIG_PIPELINING;
    uint32_t drv_flags = default_qp_flags();
    if (!dv)
        return create_qp_common(attr, drv_flags);
    if (dv->comp_mask & ~kDvMask) {
        errno = EINVAL;
        return nullptr;
    }
    if ((dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DC) && attr->qp_type != IBV_QPT_DRIVER) {
        errno = EINVAL;
        return nullptr;
    }
    if (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS) {
        const uint32_t f = dv->create_flags;
        if (f & ~kDvFlags) {
            errno = EINVAL;
            return nullptr;
        }
        if (f & MLX5DV_QP_CREATE_TUNNEL_OFFLOADS)
            drv_flags |= MLX5_QP_FLAG_TUNNEL_OFFLOADS;
        if (f & MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_UC)
            drv_flags |= MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_UC;
        if (f & MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_MC)
            drv_flags |= MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_MC;
        if ((f & MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE) && (f & MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE)) {
            errno = EINVAL;
            return nullptr;
        }
        if (f & MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE)
            drv_flags &= ~uint32_t(MLX5_QP_FLAG_SCATTER_CQE);
        if (f & MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE)
            drv_flags |= MLX5_QP_FLAG_ALLOW_SCATTER_CQE;
        if (f & MLX5DV_QP_CREATE_PACKET_BASED_CREDIT_MODE)
            drv_flags |= MLX5_QP_FLAG_PACKET_BASED_CREDIT_MODE;
        if (f & MLX5DV_QP_CREATE_SIG_PIPELINING) {
            errno = EOPNOTSUPP;
            return nullptr;
        }
    }
    if (attr->qp_type == IBV_QPT_DRIVER) {
        // A DC QP needs its DC attributes (EINVAL without, as the
        // reference); DC itself is not offered yet.
        errno = (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DC) ? EOPNOTSUPP : EINVAL;
        return nullptr;
    }
    // Of the mlx5 send operations, raw WQEs; the others need features this
    // provider has not got. Without the ibv_wr_* interface they are of no
    // use, and (as the reference) no error.
    const uint64_t dv_ops = (dv->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS) ? dv->send_ops_flags : 0;
    if (dv_ops & ~uint64_t(MLX5DV_QP_EX_WITH_RAW_WQE)) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    ibv_qp* q = create_qp_common(attr, drv_flags);
    if (q && dv_ops)
        install_dv_qp_ops(*to_mqp(q), dv_ops);
    return q;
}

// The extended attributes this provider takes so far: a PD, no creation
// flags, and the ibv_wr_* send operations of the QP's transport.
ibv_qp* Mlx5Context::create_qp_common(ibv_qp_init_attr_ex* attr, uint32_t drv_flags) {
    if (attr->qp_type == IBV_QPT_XRC_RECV || (attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE)) {
        Mlx5Qp* qp = attr->qp_type == IBV_QPT_XRC_RECV ? new_xrc_target(attr) : new_rss_qp(attr);
        return qp ? qp->vqp.qp() : nullptr;
    }
    if (int e = check_legacy_qp_attr(*attr, supported_send_ops(attr->qp_type))) {
        errno = e;
        return nullptr;
    }
    const bool wr_api = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    ibv_qp_init_attr a = legacy_qp_attr(*attr);
    Mlx5Qp* qp = new_qp(attr->pd, &a, wr_api ? attr->send_ops_flags : 0, drv_flags);
    attr->cap = a.cap;
    if (!qp)
        return nullptr;
    if (wr_api) {
        install_qp_ex_ops(qp->vqp.qp_ex);
        qp->vqp.has_qp_ex = true;
    }
    return qp->vqp.qp();
}

// An XRC target QP: created in a domain (no PD, no CQs, no queues; what
// it receives goes to the SRQ each message names). It gets a user index
// like any QP, though no CQE carries it.
Mlx5Qp* Mlx5Context::new_xrc_target(ibv_qp_init_attr_ex* attr) {
    constexpr uint32_t kKnown = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd) {
        errno = EINVAL;
        return nullptr;
    }
    if ((attr->comp_mask & ~kKnown) || ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    return create_object<Mlx5Qp>([&](Mlx5Qp& q) {
        const int64_t uidx = store_uidx(&q);
        if (uidx < 0)
            return ENOMEM;
        q.uidx = static_cast<uint32_t>(uidx);
        q.uidx_stored = true;
        mlx5_ib_create_qp req{};
        req.uidx = q.uidx;
        if (int e = create_queueless(q, attr, IBV_QP_INIT_ATTR_PD, &req, sizeof(req))) {
            clear_uidx(q.uidx);
            q.uidx_stored = false;
            return e;
        }
        return 0;
    });
}

// A QP without queues of its own (an XRC target, an RSS QP): the kernel's
// object with the driver's request `req`, without CQs, SRQ, capacities or
// the comp_mask bits `drop`; attr->cap answers none. 0 or a positive errno.
int Mlx5Context::create_queueless(Mlx5Qp& q, ibv_qp_init_attr_ex* attr, uint32_t drop, const void* req,
                                  size_t req_len) {
    q.sq.post_gs = q.rq.post_gs = -1;  // nothing to post on
    mlx5_ib_create_qp_resp resp{};
    ibv_qp_init_attr_ex a = *attr;
    a.comp_mask &= ~drop;
    a.send_cq = a.recv_cq = nullptr;
    a.srq = nullptr;
    a.cap = {};
    if (int e = cmd_create_qp_ex(&a, &q.vqp, Udata{req, req_len, &resp, sizeof(resp)}))
        return e;
    q.qpn8 = q.vqp.qp()->qp_num << 8;
    attr->cap = {};
    return 0;
}

// ibv_open_qp: this context's handle on a target QP of a domain that
// another context (or process) created. No queues, no user index.
ibv_qp* Mlx5Context::open_qp(ibv_qp_open_attr* attr) {
    constexpr uint32_t kNeeded = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
    if ((attr->comp_mask & kNeeded) != kNeeded || !attr->xrcd) {
        errno = EINVAL;
        return nullptr;
    }
    Mlx5Qp* qp = create_object<Mlx5Qp>([&](Mlx5Qp& q) {
        q.sq.post_gs = q.rq.post_gs = -1;
        mlx5_ib_create_qp_resp resp{};
        if (int e = cmd_open_qp(attr, &q.vqp, Udata{nullptr, 0, &resp, 0}))
            return e;
        q.qpn8 = q.vqp.qp()->qp_num << 8;
        return 0;
    });
    return qp ? qp->vqp.qp() : nullptr;
}

int Mlx5Context::query_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) {
    if (int e = cmd_query_qp(ibqp, attr, attr_mask, init_attr))
        return e;
    Mlx5Qp* qp = to_mqp(ibqp);
    if (init_attr) {
        init_attr->cap.max_send_wr = qp->sq.max_post;
        init_attr->cap.max_send_sge = qp->sq.max_gs;
        init_attr->cap.max_inline_data = qp->max_inline;
        attr->cap = init_attr->cap;
    }
    return 0;
}

int Mlx5Context::modify_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int attr_mask) {
    if (int e = cmd_modify_qp(ibqp, attr, attr_mask))
        return e;
    if (!(attr_mask & IBV_QP_STATE))
        return 0;
    Mlx5Qp* qp = to_mqp(ibqp);
    if (attr->qp_state == IBV_QPS_INIT)
        qp->rq.post_gs = static_cast<int32_t>(qp->rq.max_gs);
    else if (attr->qp_state == IBV_QPS_RTS)
        qp->sq.post_gs = static_cast<int32_t>(qp->sq.max_gs);
    if (!qp->db)
        return 0;  // an XRC target or an opened QP: no queues here
    if (attr->qp_state == IBV_QPS_RESET) {
        // The device forgot the queues: so do we, and the CQEs still
        // waiting for this QP go too; nothing can be posted until the
        // queues are opened again.
        qp->sq.post_gs = qp->rq.post_gs = -1;
        Mlx5Srq* srq = ibqp->srq ? to_msrq(ibqp->srq) : nullptr;
        clean_cq(ibqp->recv_cq ? to_mcq(ibqp->recv_cq) : nullptr, qp->uidx, srq);
        if (ibqp->send_cq != ibqp->recv_cq)
            clean_cq(ibqp->send_cq ? to_mcq(ibqp->send_cq) : nullptr, qp->uidx, nullptr);
        qp->sq.head = qp->sq.tail = qp->sq.cur_post = 0;
        qp->fm_table = qp->fm_base;
        qp->rq.head = qp->rq.tail = 0;
        qp->db[MLX5_RCV_DBR] = 0;
        qp->db[MLX5_SND_DBR] = 0;
    }
    return 0;
}

int Mlx5Context::destroy_qp(ibv_qp* ibqp) {
    return destroy_object(to_mqp(ibqp), [&](Mlx5Qp& qp) {
        if (int e = cmd_destroy_qp(ibqp))
            return e;
        Mlx5Srq* srq = ibqp->srq ? to_msrq(ibqp->srq) : nullptr;
        clean_cq(ibqp->recv_cq ? to_mcq(ibqp->recv_cq) : nullptr, qp.uidx, srq);
        if (ibqp->send_cq != ibqp->recv_cq)
            clean_cq(ibqp->send_cq ? to_mcq(ibqp->send_cq) : nullptr, qp.uidx, nullptr);
        if (qp.uidx_stored)
            clear_uidx(qp.uidx);
        release_qp_bfreg(qp.bf);
        let_go(qp.parent);
        return 0;
    });
}

// ------------------------------------------------------------- data path

namespace {

// Copies `len` bytes into the send queue from `dst` on, around the ring's
// end; returns where the copy ended. Small copies short of the end are
// done in line; the rest, out of line, so that the caller's loop holds no
// call on its usual path.
[[gnu::noinline]] uint8_t* copy_to_sq_long(const Mlx5Qp& qp, uint8_t* dst, const uint8_t* src, size_t len) {
    while (len) {
        if (dst == qp.sq_end)
            dst = qp.sq.start;
        const size_t k = std::min(len, static_cast<size_t>(qp.sq_end - dst));
        std::memcpy(dst, src, k);
        dst += k;
        src += k;
        len -= k;
    }
    return dst;
}

[[gnu::always_inline]] inline uint8_t* copy_to_sq(const Mlx5Qp& qp, uint8_t* dst, const uint8_t* src, size_t len) {
    if (len <= 32 && static_cast<size_t>(qp.sq_end - dst) >= len) [[likely]] {
        copy_small(dst, src, len);
        return dst + len;
    }
    return copy_to_sq_long(qp, dst, src, len);
}

// One send WQE being written at the SQ's producer position: the control
// segment first, then what the opcode and transport need, then the data.
// Both send interfaces (ibv_post_send and ibv_wr_*) build through it.
struct WqeBuilder {
    Mlx5Qp& qp;
    WqeCursor& cur;
    uint8_t*& seg;
    uint32_t& size;

    // Continues the WQE at `c`; `start` begins a new one at the SQ's
    // producer position.
    WqeBuilder(Mlx5Qp& q, WqeCursor& c, bool start) : qp(q), cur(c), seg(c.seg), size(c.size) {
        if (!start)
            return;
        c.idx = q.sq.cur_post & (q.sq.wqe_cnt - 1);
        c.ctrl = q.sq.start + (static_cast<size_t>(c.idx) << MLX5_SEND_WQE_SHIFT);
        c.seg = c.ctrl + kSegSize;
        c.size = 1;
    }
    void wrap() {
        if (seg == qp.sq_end)
            seg = qp.sq.start;
    }
    // The UD address vector (always right after the control segment).
    mlx5_wqe_av* av() {
        auto* a = reinterpret_cast<mlx5_wqe_av*>(seg);
        seg += kAvSize;
        size += kAvSize / kSegSize;
        wrap();
        return a;
    }
    // The XRC segment (always right after the control segment).
    void xrc(uint32_t srqn) {
        auto* x = reinterpret_cast<XrcSeg*>(seg);
        x->xrc_srqn = htobe32(srqn);
        std::memset(x->reserved, 0, sizeof(x->reserved));
        seg += kXrcSize;
        ++size;
    }
    void raddr(uint64_t addr, uint32_t rkey) {
        auto* r = reinterpret_cast<mlx5_wqe_raddr_seg*>(seg);
        r->raddr = htobe64(addr);
        r->rkey = htobe32(rkey);
        r->reserved = 0;
        seg += kSegSize;
        ++size;
    }
    void atomic(uint64_t swap_add, uint64_t compare, bool cmp) {
        auto* a = reinterpret_cast<mlx5_wqe_atomic_seg*>(seg);
        a->swap_add = htobe64(swap_add);
        if (cmp)
            a->compare = htobe64(compare);
        seg += kSegSize;
        ++size;
    }
    // Zero-length entries take no segment; an atomic's result buffer is
    // always 8 bytes.
    void data(uint32_t lkey, uint64_t addr, uint32_t length, bool atomic) {
        if (!length)
            return;
        wrap();
        set_data_seg(seg, atomic ? 8 : length, lkey, addr);
        seg += kSegSize;
        ++size;
    }
    // Inline data: the header, then the bytes of the n pieces piece(i)
    // returns ({address, length}), around the end of the SQ. False, with
    // the WQE left unfinished, when they add up to more than max_inline:
    // each piece is counted before it is copied, so the copy never runs
    // past the room the WQE has.
    template <class Piece>
    bool inline_data(size_t n, Piece piece) {
        wrap();
        uint8_t* dst = seg + kInlineHdr;
        size_t total = 0;
        for (size_t i = 0; i < n; ++i) {
            const ibv_data_buf p = piece(i);
            total += p.length;
            if (total > qp.max_inline) [[unlikely]]
                return false;
            dst = copy_to_sq(qp, dst, static_cast<const uint8_t*>(p.addr), p.length);
        }
        if (total)  // else no segment at all
            end_inline(static_cast<uint32_t>(total));
        return true;
    }
    // The inline segment's header once its `total` bytes are in.
    void end_inline(uint32_t total) {
        reinterpret_cast<mlx5_wqe_inl_data_seg*>(seg)->byte_count = htobe32(total | MLX5_INLINE_SEG);
        const uint32_t units = align_up(total + kInlineHdr, kSegSize) / kSegSize;
        size += units;
        seg += units * kSegSize;
        if (seg >= qp.sq_end)
            seg = qp.sq.start + (seg - qp.sq_end);
    }
    // A memory window operation's segments after the control segment (whose
    // immediate names the window): the UMR control segment, the mkey
    // context, and for a bind with a length one translation entry (in a
    // 64-byte block, the four entries the segment holds). A bind gives the
    // window `key`'s variant byte, the range of `bind` (from 0 when it is
    // zero-based) and its access; a type 2 window also the QP number, and
    // it must be free. Without a length the window is made free (a type 2
    // one only through the QP it serves): an unbind, a local invalidate.
    void umr(const ibv_mw_bind_info* bind, uint32_t key, bool type2) {
        const uint64_t length = bind ? bind->length : 0;
        auto* u = reinterpret_cast<mlx5_wqe_umr_ctrl_seg*>(seg);
        std::memset(u, 0, sizeof(*u));
        uint8_t flags = MLX5_WQE_UMR_CTRL_FLAG_INLINE | MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET;
        uint64_t mask = MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE | MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY;
        if (type2) {
            flags |= length ? MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE : MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN;
            mask |= MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN;
        }
        if (length) {
            mask |= MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN | MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR |
                MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_LOCAL_WRITE | MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_READ |
                MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_WRITE | MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_ATOMIC;
            u->klm_octowords = htobe16(4);
        }
        u->flags = flags;
        u->mkey_mask = htobe64(mask);
        seg += sizeof(*u);
        size += sizeof(*u) / kSegSize;
        wrap();
        auto* mk = reinterpret_cast<mlx5_wqe_mkey_context_seg*>(seg);
        std::memset(mk, 0, sizeof(*mk));
        uint32_t qpn = 0xffffff;  // any QP
        if (length) {
            const unsigned int a = bind->mw_access_flags;
            mk->access_flags = static_cast<uint8_t>(
                ((a & IBV_ACCESS_LOCAL_WRITE) ? MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE : 0) |
                ((a & IBV_ACCESS_REMOTE_READ) ? MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ : 0) |
                ((a & IBV_ACCESS_REMOTE_WRITE) ? MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE : 0) |
                ((a & IBV_ACCESS_REMOTE_ATOMIC) ? MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC : 0));
            mk->start_addr = htobe64((a & IBV_ACCESS_ZERO_BASED) ? 0 : bind->addr);
            mk->len = htobe64(length);
            if (type2)
                qpn = qp.vqp.qp()->qp_num;
        } else {
            mk->free = MLX5_WQE_MKEY_CONTEXT_FREE;
        }
        mk->qpn_mkey = htobe32((qpn << 8) | (key & 0xff));
        seg += sizeof(*mk);
        size += sizeof(*mk) / kSegSize;
        wrap();
        if (!length)
            return;
        auto* klm = reinterpret_cast<mlx5_wqe_umr_klm_seg*>(seg);
        std::memset(klm, 0, 4 * sizeof(*klm));
        klm->byte_count = htobe32(static_cast<uint32_t>(length));
        klm->mkey = htobe32(bind->mr->lkey);
        klm->address = htobe64(bind->addr);
        seg += 4 * sizeof(*klm);
        size += 4 * sizeof(*klm) / kSegSize;
        wrap();
    }
    // The control segment but its DS count, and the bookkeeping the
    // completion needs: all known when the WQE begins, so the ibv_wr_*
    // builders write it then and keep nothing of it for later.
    void head(const OpInfo& op, unsigned int send_flags, __be32 imm, uint64_t wr_id, uint32_t nreq) {
        Mlx5Wq& sq = qp.sq;
        auto* ctrl = reinterpret_cast<mlx5_wqe_ctrl_seg*>(cur.ctrl);
        ctrl->opmod_idx_opcode = htobe32(((sq.cur_post & 0xffff) << 8) | op.mlx5);
        ctrl->signature = 0;
        ctrl->dci_stream_channel_id = 0;
        ctrl->fm_ce_se = qp.fm_table[send_flags & kFmCeSeFlags];
        qp.fm_table = qp.fm_base;
        ctrl->imm = imm;
        // the index read once: the stores below could alias it
        const uint32_t idx = cur.idx;
        sq.wrid[idx] = wr_id;
        sq.wqe_head[idx] = sq.head + nreq;
        sq.wc_opcode[idx] = op.wc;
    }
    // The DS count, once every segment is in; the WQE then belongs to the
    // device once the doorbell says so.
    void close() {
        auto* ctrl = reinterpret_cast<mlx5_wqe_ctrl_seg*>(cur.ctrl);
        ctrl->qpn_ds = htobe32((size & 0x3f) | qp.qpn8);
        qp.sq.cur_post += (size * kSegSize + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB;
    }
    void finish(const OpInfo& op, unsigned int send_flags, __be32 imm, uint64_t wr_id, uint32_t nreq) {
        head(op, send_flags, imm, wr_id, nreq);
        close();
    }
};

// A window bind or local invalidate as a UMR WQE (RC and UC). Its
// control segment names the window (the window's current key, or the key
// to invalidate); the WQE after it waits for it. 0 or EINVAL (a bind with
// no window, or a length and no MR). Out of line: the ordinary
// operations' loop stays as it is.
[[gnu::noinline]] int post_umr(Mlx5Qp& qp, const ibv_send_wr& wr, uint32_t nreq, WqeCursor& cur) {
    const bool bind = wr.opcode == IBV_WR_BIND_MW;
    const ibv_mw* mw = wr.bind_mw.mw;
    if (bind && (!mw || (!wr.bind_mw.bind_info.mr && wr.bind_mw.bind_info.length)))
        return EINVAL;
    WqeBuilder b(qp, cur, true);
    if (bind)
        b.umr(&wr.bind_mw.bind_info, wr.bind_mw.rkey, mw->type == IBV_MW_TYPE_2);
    else
        b.umr(nullptr, 0, true);
    const __be32 imm = htobe32(bind ? mw->rkey : wr.invalidate_rkey);
    b.finish(OpInfo{MLX5_OPCODE_UMR, kOps[wr.opcode].wc}, wr.send_flags, imm, wr.wr_id, nreq);
    qp.fm_table = qp.fm_base + kFmEntries;
    return 0;
}

// A raw packet send after its control segment: the Ethernet segment with
// the frame's first kEthInlineHdr bytes (gathered from the SGEs), then the
// rest of the frame, inline or as data segments that start where the
// header ended. 0, EINVAL (not a send, or a frame shorter than an L2
// header) or ENOMEM (more inline data than the QP takes).
[[gnu::noinline]] int post_raw(WqeBuilder& b, const ibv_send_wr& wr, bool inl) {
    if (wr.opcode != IBV_WR_SEND)
        return EINVAL;
    auto* eth = reinterpret_cast<mlx5_wqe_eth_seg*>(b.seg);
    std::memset(eth, 0, sizeof(*eth));
    eth->inline_hdr_sz = htobe16(kEthInlineHdr);
    uint8_t* hdr = eth->inline_hdr_start;
    uint32_t need = kEthInlineHdr;
    int i = 0;
    uint32_t off = 0;  // into sg_list[i], once the header is taken
    for (; i < wr.num_sge && need; ++i) {
        const ibv_sge& s = wr.sg_list[i];
        const uint32_t k = std::min(need, s.length);
        std::memcpy(hdr, reinterpret_cast<const void*>(static_cast<uintptr_t>(s.addr)), k);
        hdr += k;
        need -= k;
        if (k < s.length) {
            off = k;
            break;
        }
    }
    if (need)
        return EINVAL;
    b.seg += kEthSegSize;
    b.size += kEthSegSize / kSegSize;
    const int first = i;
    const auto rest = [&](int j) {
        const ibv_sge& s = wr.sg_list[j];
        const uint32_t skip = j == first ? off : 0;
        return ibv_data_buf{reinterpret_cast<void*>(static_cast<uintptr_t>(s.addr + skip)), s.length - skip};
    };
    if (inl)
        return b.inline_data(static_cast<size_t>(wr.num_sge - first),
                             [&](size_t k) { return rest(first + static_cast<int>(k)); })
            ? 0
            : ENOMEM;
    for (int j = first; j < wr.num_sge; ++j) {
        const ibv_data_buf p = rest(j);
        b.data(wr.sg_list[j].lkey, reinterpret_cast<uintptr_t>(p.addr), static_cast<uint32_t>(p.length), false);
    }
    return 0;
}

__be32 imm_of(const ibv_send_wr& wr) {
    if (wr.opcode == IBV_WR_SEND_WITH_IMM || wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
        return wr.imm_data;
    if (wr.opcode == IBV_WR_SEND_WITH_INV)
        return htobe32(wr.invalidate_rkey);
    return 0;
}

}  // namespace

namespace {

// What a list posted so far leaves for the doorbell.
struct Posted {
    uint32_t nreq = 0;
    uint8_t* last_ctrl = nullptr;
    uint32_t last_size = 0;
    bool last_inline = false;
};

template <bool kUmr>
int post_list(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr, Posted done);

// Why a send WR cannot go in as the nreq-th of its list, as the reference
// checks in this order: an opcode legacy posting does not know (EINVAL), a
// full SQ, more SGEs than the QP takes or a queue not open (ENOMEM); 0
// when it can.
[[gnu::always_inline]] inline int send_wr_unfit(Mlx5Wq& sq, const ibv_send_wr& wr, uint32_t nreq, ibv_cq* cq) {
    if (wr.opcode < 0 || wr.opcode >= kOpcodeCount) [[unlikely]]
        return EINVAL;
    if (wq_overflow(sq, nreq, cq)) [[unlikely]]
        return ENOMEM;
    if (wr.num_sge < 0 || wr.num_sge > sq.post_gs) [[unlikely]]
        return ENOMEM;
    return 0;
}

// A raw packet QP's list, from `wr` on (`done`: what is posted of it
// already): sends only, each an Ethernet segment and the rest of its frame
// (post_raw). The ordinary loop hands over on its first raw WR, under the
// test it makes for XRC anyway, so that it carries none of this.
[[gnu::noinline, gnu::cold]] int post_raw_rest(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr, Posted done) {
    Mlx5Qp* qp = to_mqp(ibqp);
    Mlx5Wq& sq = qp->sq;
    int err = 0;
    uint32_t nreq = done.nreq;
    uint8_t* last_ctrl = done.last_ctrl;
    uint32_t last_size = done.last_size;
    bool last_inline = done.last_inline;
    for (; wr; wr = wr->next, ++nreq) {
        if ((err = send_wr_unfit(sq, *wr, nreq, ibqp->send_cq)))
            break;
        const bool inl = (wr->send_flags & IBV_SEND_INLINE) && wr->num_sge;
        WqeCursor cur;
        WqeBuilder b(*qp, cur, true);
        if ((err = post_raw(b, *wr, inl)))
            break;
        b.finish(kOps[wr->opcode], wr->send_flags, 0, wr->wr_id, nreq);
        last_ctrl = cur.ctrl;
        last_size = cur.size;
        last_inline = inl;
    }
    if (err)
        *bad_wr = wr;
    if (nreq)
        ring_send_doorbell(*qp, last_ctrl, last_size, nreq, last_inline);
    return err;
}

// A list that reached a memory window operation carries on here with what
// it posted so far: the ordinary loop never builds a UMR WQE.
[[gnu::noinline, gnu::cold]] int post_list_with_umr(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr, Posted done) {
    return post_list<true>(ibqp, wr, bad_wr, done);
}

// Posts a list under the SQ lock; `done`: what is posted of it already.
template <bool kUmr>
[[gnu::always_inline]] inline int post_list(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr, Posted done) {
    Mlx5Qp* qp = to_mqp(ibqp);
    Mlx5Wq& sq = qp->sq;
    const ibv_qp_type type = ibqp->qp_type;
    int err = 0;
    uint32_t nreq = done.nreq;
    uint8_t* last_ctrl = done.last_ctrl;
    uint32_t last_size = done.last_size;
    bool last_inline = done.last_inline;
    for (; wr; wr = wr->next, ++nreq) {
        // (send_wr_unfit's checks, spelled out: through the helper the
        // compiler keeps the errno in a register, 1-3 more instructions)
        if (wr->opcode < 0 || wr->opcode >= kOpcodeCount) [[unlikely]] {
            err = EINVAL;
            break;
        }
        if (wq_overflow(sq, nreq, ibqp->send_cq)) [[unlikely]] {
            err = ENOMEM;
            break;
        }
        if (wr->num_sge < 0 || wr->num_sge > sq.post_gs) [[unlikely]] {
            err = ENOMEM;
            break;
        }
        const bool atomic = is_atomic(wr->opcode);
        if (atomic && !qp->atomics) [[unlikely]] {
            err = EOPNOTSUPP;
            break;
        }
        const OpInfo op = kOps[wr->opcode];
        if (op.mlx5 >= kUmrOp || (type == IBV_QPT_UD && !wr->wr.ud.ah)) [[unlikely]] {
            // a memory window operation (RC, UC: see below), or what this
            // QP cannot send
            err = EINVAL;
            if constexpr (kUmr) {
                if (op.mlx5 == kUmrOp && type != IBV_QPT_UD) {
                    WqeCursor cur;
                    if ((err = post_umr(*qp, *wr, nreq, cur)))
                        break;
                    last_ctrl = cur.ctrl;
                    last_size = cur.size;
                    last_inline = false;
                    continue;
                }
            }
            break;
        }
        const bool inl = (wr->send_flags & IBV_SEND_INLINE) && wr->num_sge;
        WqeCursor cur;
        WqeBuilder b(*qp, cur, true);
        if (type == IBV_QPT_UD) {
            mlx5_wqe_av* av = b.av();
            std::memcpy(av, &to_mah(wr->wr.ud.ah)->av, sizeof(*av));
            av->dqp_dct = htobe32(wr->wr.ud.remote_qpn | MLX5_EXTENDED_UD_AV);
            av->key.qkey.qkey = htobe32(wr->wr.ud.remote_qkey);
        } else if (type > IBV_QPT_UD) [[unlikely]] {  // XRC initiator or raw packet
            if (type == IBV_QPT_RAW_PACKET)
                return post_raw_rest(ibqp, wr, bad_wr, Posted{nreq, last_ctrl, last_size, last_inline});
            b.xrc(wr->qp_type.xrc.remote_srqn);
            if (atomic) {
                b.raddr(wr->wr.atomic.remote_addr, wr->wr.atomic.rkey);
                b.atomic(wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? wr->wr.atomic.swap : wr->wr.atomic.compare_add,
                         wr->wr.atomic.compare_add, wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP);
            } else if (wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
                       wr->opcode == IBV_WR_RDMA_READ) {
                b.raddr(wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
            }
        } else if (atomic && type == IBV_QPT_RC) {
            b.raddr(wr->wr.atomic.remote_addr, wr->wr.atomic.rkey);
            b.atomic(wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? wr->wr.atomic.swap : wr->wr.atomic.compare_add,
                     wr->wr.atomic.compare_add, wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP);
        } else if (wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
                   (type == IBV_QPT_RC && wr->opcode == IBV_WR_RDMA_READ)) {
            b.raddr(wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
        }
        if (inl) {
            const auto piece = [&](size_t i) {
                return ibv_data_buf{reinterpret_cast<void*>(static_cast<uintptr_t>(wr->sg_list[i].addr)),
                                    wr->sg_list[i].length};
            };
            // one piece, the common case, without the loop (and the
            // registers it needs)
            const bool fits =
                wr->num_sge == 1 ? b.inline_data(1, piece) : b.inline_data(static_cast<size_t>(wr->num_sge), piece);
            if (!fits) [[unlikely]] {
                err = ENOMEM;  // this WQE is never finished: nothing of it is posted
                break;
            }
        } else {
            for (int i = 0; i < wr->num_sge; ++i)
                b.data(wr->sg_list[i].lkey, wr->sg_list[i].addr, wr->sg_list[i].length, atomic);
        }
        b.finish(op, wr->send_flags, imm_of(*wr), wr->wr_id, nreq);
        last_ctrl = cur.ctrl;
        last_size = cur.size;
        last_inline = inl;
    }
    if (err) [[unlikely]] {
        if (!kUmr && kOps[wr->opcode].mlx5 == kUmrOp && type != IBV_QPT_UD && err == EINVAL)
            return post_list_with_umr(ibqp, wr, bad_wr, Posted{nreq, last_ctrl, last_size, last_inline});
        *bad_wr = wr;
    }
    if (nreq)
        ring_send_doorbell(*qp, last_ctrl, last_size, nreq, last_inline);
    return err;
}

}  // namespace

int post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr) noexcept {
    std::lock_guard guard(to_mqp(ibqp)->sq.lock);
    return post_list<false>(ibqp, wr, bad_wr, Posted{});
}

int post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    Mlx5Qp* qp = to_mqp(ibqp);
    Mlx5Wq& rq = qp->rq;
    std::lock_guard guard(rq.lock);
    // What stays put while the list is posted is read once: the head, and
    // how many WRs fit before the tail must be looked at again under the
    // CQ's lock. post_gs + 1 is 0 while the queue is closed, so one
    // unsigned compare refuses a closed queue, a negative num_sge and too
    // many SGEs alike.
    const uint32_t head = rq.head;
    const uint32_t room = rq.max_post - (head - __atomic_load_n(&rq.tail, __ATOMIC_RELAXED));
    const auto sge_limit = static_cast<uint32_t>(rq.post_gs + 1);
    int err = 0;
    uint32_t nreq = 0;
    for (; wr; wr = wr->next, ++nreq) {
        if (nreq >= room && wq_full_under_cq_lock(rq, nreq, ibqp->recv_cq)) [[unlikely]] {
            err = ENOMEM;
            break;
        }
        if (static_cast<uint32_t>(wr->num_sge) >= sge_limit) [[unlikely]] {
            err = EINVAL;
            break;
        }
        const uint32_t ind = (head + nreq) & (rq.wqe_cnt - 1);
        auto* seg = reinterpret_cast<mlx5_wqe_data_seg*>(rq.start + (static_cast<size_t>(ind) << rq.wqe_shift));
        auto* const first = seg;
        for (const ibv_sge *s = wr->sg_list, *end = s + wr->num_sge; s != end; ++s) {
            if (!s->length)
                continue;
            set_data_seg(seg++, s->length, s->lkey, s->addr);
        }
        if (static_cast<uint32_t>(seg - first) < rq.max_gs)
            set_data_seg(seg, 0, MLX5_INVALID_LKEY, 0);
        rq.wrid[ind] = wr->wr_id;
    }
    if (err)
        *bad_wr = wr;
    if (nreq) {
        rq.head = head + nreq;
        to_device_barrier();
        qp->db[MLX5_RCV_DBR] = htobe32(rq.head & 0xffff);
    }
    return err;
}

// ibv_bind_mw (type 1 windows): a BIND_MW work request, libibverbs'
// shared form, as the reference binds them.
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind) noexcept {
    return verbs::bind_mw_through(qp, mw, bind, post_send);
}

// ------------------------------------------------- ibv_wr_* send interface

namespace {

inline Mlx5Qp* to_mqp(ibv_qp_ex* qpx) { return reinterpret_cast<Mlx5Qp*>(qpx); }

// A batch's first error; it also closes the WQE being built, so that an
// open WQE always means a batch without error.
void fail(WrBatch& b, int err) {
    b.err = err;
    b.open = false;
}

// Whether the batch can take one more WQE (else its error is set).
[[gnu::always_inline]] inline bool wr_room(Mlx5Qp* qp) {
    WrBatch& b = qp->wr;
    if (b.err)
        return false;
    if (b.open) {
        fail(b, EINVAL);  // the previous WQE never got its data
        return false;
    }
    if (wq_overflow(qp->sq, b.nreq, qp->vqp.qp()->send_cq)) {
        b.err = ENOMEM;
        return false;
    }
    return true;
}

// Which transport a builder is for: the sends are installed per QP type,
// the other builders look at the QP.
enum class Xport { any, ud, xrc, connected };

// Starts the WQE of one work request; false (and the batch's error set)
// when it cannot be posted.
template <Xport X = Xport::any>
[[gnu::always_inline]] inline bool wr_begin(ibv_qp_ex* qpx, ibv_wr_opcode opcode, __be32 imm, const OpInfo& info) {
    Mlx5Qp* qp = to_mqp(qpx);
    WrBatch& b = qp->wr;
    if (!wr_room(qp))
        return false;
    if (is_atomic(opcode) && !qp->atomics) {
        b.err = EOPNOTSUPP;
        return false;
    }
    WqeBuilder w(*qp, b.cur, true);
    // the address vector's room first (filled by wr_set_ud_addr): the
    // cursor is then complete before head()'s stores, which could alias it
    // (and an XRC send's segment, filled by wr_set_xrc_srqn)
    const ibv_qp_type type = X == Xport::any ? qp->vqp.qp()->qp_type : IBV_QPT_RC;
    const bool ud = X == Xport::ud || (X == Xport::any && type == IBV_QPT_UD);
    const bool xrc = X == Xport::xrc || (X == Xport::any && type == IBV_QPT_XRC_SEND);
    if (ud)
        w.av();
    else if (xrc)
        w.xrc(0);
    w.head(info, qpx->wr_flags, imm, qpx->wr_id, b.nreq);
    b.open = true;
    b.pending = (ud || xrc) ? 2 : 1;
    b.opcode = static_cast<uint8_t>(opcode);
    b.inl = false;
    return true;
}

template <Xport X = Xport::any>
[[gnu::always_inline]] inline bool wr_begin(ibv_qp_ex* qpx, ibv_wr_opcode opcode, __be32 imm) {
    return wr_begin<X>(qpx, opcode, imm, kOps[opcode]);
}

// One setter done; the last one completes the WQE.
[[gnu::always_inline]] inline void wr_setter_done(Mlx5Qp* qp) {
    WrBatch& b = qp->wr;
    if (--b.pending)
        return;
    WqeBuilder(*qp, b.cur, false).close();
    b.last_ctrl = b.cur.ctrl;
    b.last_size = b.cur.size;
    b.last_inl = b.inl;
    ++b.nreq;
    b.open = false;
}

template <Xport X>
void wr_send(ibv_qp_ex* qpx) {
    wr_begin<X>(qpx, IBV_WR_SEND, 0);
}
template <Xport X>
void wr_send_imm(ibv_qp_ex* qpx, __be32 imm) {
    wr_begin<X>(qpx, IBV_WR_SEND_WITH_IMM, imm);
}
void wr_send_inv(ibv_qp_ex* qpx, uint32_t rkey) { wr_begin(qpx, IBV_WR_SEND_WITH_INV, htobe32(rkey)); }

void wr_rdma(ibv_qp_ex* qpx, ibv_wr_opcode op, uint32_t rkey, uint64_t raddr, __be32 imm) {
    if (!wr_begin(qpx, op, imm))
        return;
    Mlx5Qp* qp = to_mqp(qpx);
    WqeBuilder(*qp, qp->wr.cur, false).raddr(raddr, rkey);
}
void wr_rdma_write(ibv_qp_ex* qpx, uint32_t rkey, uint64_t raddr) { wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, raddr, 0); }
void wr_rdma_write_imm(ibv_qp_ex* qpx, uint32_t rkey, uint64_t raddr, __be32 imm) {
    wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, raddr, imm);
}
void wr_rdma_read(ibv_qp_ex* qpx, uint32_t rkey, uint64_t raddr) { wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, raddr, 0); }

void wr_atomic(ibv_qp_ex* qpx, ibv_wr_opcode op, uint32_t rkey, uint64_t raddr, uint64_t swap_add, uint64_t compare) {
    if (!wr_begin(qpx, op, 0))
        return;
    Mlx5Qp* qp = to_mqp(qpx);
    WqeBuilder w(*qp, qp->wr.cur, false);
    w.raddr(raddr, rkey);
    w.atomic(swap_add, compare, op == IBV_WR_ATOMIC_CMP_AND_SWP);
}
void wr_atomic_cmp_swp(ibv_qp_ex* qpx, uint32_t rkey, uint64_t raddr, uint64_t compare, uint64_t swap) {
    wr_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, raddr, swap, compare);
}
void wr_atomic_fetch_add(ibv_qp_ex* qpx, uint32_t rkey, uint64_t raddr, uint64_t add) {
    wr_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, raddr, add, 0);
}

// The memory window operations: the WQE is whole once begun (no setter
// follows), and the next one waits for it.
void wr_umr(ibv_qp_ex* qpx, ibv_wr_opcode op, __be32 imm, const ibv_mw_bind_info* bind, uint32_t key, bool type2) {
    if (!wr_begin<Xport::connected>(qpx, op, imm, OpInfo{MLX5_OPCODE_UMR, kOps[op].wc}))
        return;
    Mlx5Qp* qp = to_mqp(qpx);
    WqeBuilder(*qp, qp->wr.cur, false).umr(bind, key, type2);
    wr_setter_done(qp);
    qp->fm_table = qp->fm_base + kFmEntries;
}
void wr_bind_mw(ibv_qp_ex* qpx, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info* bind) {
    if (!mw || (!bind->mr && bind->length)) {
        Mlx5Qp* qp = to_mqp(qpx);
        if (!qp->wr.err)
            fail(qp->wr, EINVAL);
        return;
    }
    wr_umr(qpx, IBV_WR_BIND_MW, htobe32(mw->rkey), bind, rkey, mw->type == IBV_MW_TYPE_2);
}
void wr_local_inv(ibv_qp_ex* qpx, uint32_t invalidate_rkey) {
    wr_umr(qpx, IBV_WR_LOCAL_INV, htobe32(invalidate_rkey), nullptr, 0, true);
}

// Installed on UD QPs only; the others get wr_no_ud_addr.
void wr_set_ud_addr(ibv_qp_ex* qpx, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
    Mlx5Qp* qp = to_mqp(qpx);
    WrBatch& b = qp->wr;
    if (!b.open)
        return;
    if (!ah) {
        fail(b, EINVAL);
        return;
    }
    auto* av = reinterpret_cast<mlx5_wqe_av*>(b.cur.ctrl + kSegSize);
    std::memcpy(av, &to_mah(ah)->av, sizeof(*av));
    av->dqp_dct = htobe32(remote_qpn | MLX5_EXTENDED_UD_AV);
    av->key.qkey.qkey = htobe32(remote_qkey);
    wr_setter_done(qp);
}

// A connected QP has no address to set: the call changes nothing.
void wr_no_ud_addr(ibv_qp_ex*, ibv_ah*, uint32_t, uint32_t) {}

// Installed on XRC initiator QPs: the SRQ the open WQE's message is for.
void wr_set_xrc_srqn(ibv_qp_ex* qpx, uint32_t remote_srqn) {
    Mlx5Qp* qp = to_mqp(qpx);
    WrBatch& b = qp->wr;
    if (!b.open)
        return;
    reinterpret_cast<XrcSeg*>(b.cur.ctrl + kSegSize)->xrc_srqn = htobe32(remote_srqn);
    wr_setter_done(qp);
}

// Other QPs name no SRQ: the call changes nothing.
void wr_no_xrc_srqn(ibv_qp_ex*, uint32_t) {}

bool data_open(Mlx5Qp* qp) { return qp->wr.open; }

void wr_set_sge(ibv_qp_ex* qpx, uint32_t lkey, uint64_t addr, uint32_t length) {
    Mlx5Qp* qp = to_mqp(qpx);
    if (!data_open(qp))
        return;
    WqeBuilder(*qp, qp->wr.cur, false).data(lkey, addr, length, is_atomic(static_cast<ibv_wr_opcode>(qp->wr.opcode)));
    wr_setter_done(qp);
}

// An SGE list can go into the open WQE: one is open and the list is not
// longer than the QP takes (ENOMEM then, as the reference).
bool sge_list_fits(Mlx5Qp* qp, size_t num) {
    if (!data_open(qp))
        return false;
    if (num > qp->sq.max_gs) {
        fail(qp->wr, ENOMEM);
        return false;
    }
    return true;
}

void wr_set_sge_list(ibv_qp_ex* qpx, size_t num, const ibv_sge* list) {
    Mlx5Qp* qp = to_mqp(qpx);
    if (!sge_list_fits(qp, num))
        return;
    WqeBuilder w(*qp, qp->wr.cur, false);
    const bool atomic = is_atomic(static_cast<ibv_wr_opcode>(qp->wr.opcode));
    for (size_t i = 0; i < num; ++i)
        w.data(list[i].lkey, list[i].addr, list[i].length, atomic);
    wr_setter_done(qp);
}

// The inline data setters: `put` writes the data into the open WQE, false
// when it is more than the QP's inline limit.
template <class Put>
[[gnu::always_inline]] inline void wr_inline(ibv_qp_ex* qpx, Put put) {
    Mlx5Qp* qp = to_mqp(qpx);
    if (!data_open(qp))
        return;
    if (!put(WqeBuilder(*qp, qp->wr.cur, false))) {
        fail(qp->wr, ENOMEM);
        return;
    }
    qp->wr.inl = true;
    wr_setter_done(qp);
}

void wr_set_inline_data_list(ibv_qp_ex* qpx, size_t num, const ibv_data_buf* bufs) {
    wr_inline(qpx, [&](WqeBuilder&& w) { return w.inline_data(num, [&](size_t i) { return bufs[i]; }); });
}

void wr_set_inline_data(ibv_qp_ex* qpx, void* addr, size_t length) {
    wr_inline(qpx, [&](WqeBuilder&& w) {
        return w.inline_data(1, [&](size_t) { return ibv_data_buf{addr, length}; });
    });
}

// A raw packet QP's data setters: the frame's first bytes go into the
// Ethernet segment, the rest follows as data segments or inline, as
// ibv_post_send lays it out (post_raw).
void wr_raw_sge_list(ibv_qp_ex* qpx, size_t num, const ibv_sge* list) {
    Mlx5Qp* qp = to_mqp(qpx);
    if (!sge_list_fits(qp, num))
        return;
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND;
    wr.sg_list = const_cast<ibv_sge*>(list);
    wr.num_sge = static_cast<int>(num);
    WqeBuilder w(*qp, qp->wr.cur, false);
    if (int e = post_raw(w, wr, false)) {
        fail(qp->wr, e);
        return;
    }
    wr_setter_done(qp);
}

void wr_raw_sge(ibv_qp_ex* qpx, uint32_t lkey, uint64_t addr, uint32_t length) {
    const ibv_sge s{addr, length, lkey};
    wr_raw_sge_list(qpx, 1, &s);
}

// (inline: at most kRawInlineBufs buffers, a frame's worth; more is
// ENOMEM, as more data than the QP's inline limit is)
constexpr size_t kRawInlineBufs = 16;

void wr_raw_inline_data_list(ibv_qp_ex* qpx, size_t num, const ibv_data_buf* bufs) {
    Mlx5Qp* qp = to_mqp(qpx);
    if (!data_open(qp))
        return;
    ibv_sge sg[kRawInlineBufs];
    if (num > kRawInlineBufs || !num) {
        fail(qp->wr, num ? ENOMEM : EINVAL);
        return;
    }
    for (size_t i = 0; i < num; ++i)
        sg[i] = ibv_sge{reinterpret_cast<uintptr_t>(bufs[i].addr), static_cast<uint32_t>(bufs[i].length), 0};
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND;
    wr.sg_list = sg;
    wr.num_sge = static_cast<int>(num);
    WqeBuilder w(*qp, qp->wr.cur, false);
    if (int e = post_raw(w, wr, true)) {
        fail(qp->wr, e);
        return;
    }
    qp->wr.inl = true;
    wr_setter_done(qp);
}

void wr_raw_inline_data(ibv_qp_ex* qpx, void* addr, size_t length) {
    const ibv_data_buf b{addr, length};
    wr_raw_inline_data_list(qpx, 1, &b);
}

void wr_start(ibv_qp_ex* qpx) {
    Mlx5Qp* qp = to_mqp(qpx);
    qp->sq.lock.lock();
    // Only what a batch reads before writing it starts afresh; the cursor
    // and the last WQE's figures are written before they are read.
    WrBatch& b = qp->wr;
    b.nreq = 0;
    b.err = 0;
    b.open = false;
    b.start_post = qp->sq.cur_post;
    b.start_fm = qp->fm_table;
    // A send queue not open yet (or reset) takes no batch, not even an
    // empty one.
    if (qp->sq.post_gs < 0) [[unlikely]]
        b.err = EINVAL;
}

// A batch with an error posts nothing: the WQEs written stay invisible to
// the device (the doorbell record never named them).
int wr_complete(ibv_qp_ex* qpx) {
    Mlx5Qp* qp = to_mqp(qpx);
    WrBatch& b = qp->wr;
    int err = b.err ? b.err : (b.open ? EINVAL : 0);
    if (err) {
        qp->sq.cur_post = b.start_post;
        qp->fm_table = b.start_fm;
    } else if (b.nreq)
        ring_send_doorbell(*qp, b.last_ctrl, b.last_size, b.nreq, b.last_inl);
    qp->sq.lock.unlock();
    return err;
}

void wr_abort(ibv_qp_ex* qpx) {
    Mlx5Qp* qp = to_mqp(qpx);
    qp->sq.cur_post = qp->wr.start_post;
    qp->fm_table = qp->wr.start_fm;
    qp->sq.lock.unlock();
}

// mlx5dv_wr_raw_wqe: a WQE the application wrote whole (control segment
// first, its DS count saying how long) goes into the SQ as it is, around
// the ring's end, with the producer index put in its control segment. Its
// completion reports IBV_WC_DRIVER2.
void wr_raw_wqe(mlx5dv_qp_ex* dvq, const void* wqe) {
    Mlx5Qp* qp = reinterpret_cast<Mlx5Qp*>(reinterpret_cast<char*>(dvq) - offsetof(Mlx5Qp, dv_qp));
    WrBatch& b = qp->wr;
    if (!wr_room(qp))
        return;
    Mlx5Wq& sq = qp->sq;
    const auto* src_ctrl = static_cast<const mlx5_wqe_ctrl_seg*>(wqe);
    const uint32_t ds = be32toh(src_ctrl->qpn_ds) & 0x3f;
    const uint32_t bbs = (ds * kSegSize + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB;
    if (!ds || bbs > sq.wqe_cnt) {
        b.err = EINVAL;
        return;
    }
    const uint32_t idx = sq.cur_post & (sq.wqe_cnt - 1);
    uint8_t* dst = sq.start + (static_cast<size_t>(idx) << MLX5_SEND_WQE_SHIFT);
    auto* ctrl = reinterpret_cast<mlx5_wqe_ctrl_seg*>(dst);
    copy_to_sq(*qp, dst, static_cast<const uint8_t*>(wqe), size_t(ds) * kSegSize);
    // Opcode and opmod stay the application's; the index is the ring's.
    const uint32_t word = be32toh(src_ctrl->opmod_idx_opcode);
    ctrl->opmod_idx_opcode = htobe32((word & 0xff0000ffu) | ((sq.cur_post & 0xffff) << 8));
    sq.wrid[idx] = qp->vqp.qp_ex.wr_id;
    sq.wqe_head[idx] = sq.head + b.nreq;
    sq.wc_opcode[idx] = IBV_WC_DRIVER2;
    sq.cur_post += bbs;
    b.last_ctrl = reinterpret_cast<uint8_t*>(ctrl);
    b.last_size = ds;
    b.last_inl = false;
    ++b.nreq;
}

}  // namespace

void install_dv_qp_ops(Mlx5Qp& qp, uint64_t dv_send_ops) {
    if (dv_send_ops & MLX5DV_QP_EX_WITH_RAW_WQE)
        qp.dv_qp.wr_raw_wqe = wr_raw_wqe;
}

void install_qp_ex_ops(ibv_qp_ex& q) {
    q.wr_start = wr_start;
    q.wr_complete = wr_complete;
    q.wr_abort = wr_abort;
    const bool ud = q.qp_base.qp_type == IBV_QPT_UD;
    const bool xrc = q.qp_base.qp_type == IBV_QPT_XRC_SEND;
    q.wr_send = ud ? wr_send<Xport::ud> : xrc ? wr_send<Xport::xrc> : wr_send<Xport::connected>;
    q.wr_send_imm = ud ? wr_send_imm<Xport::ud> : xrc ? wr_send_imm<Xport::xrc> : wr_send_imm<Xport::connected>;
    q.wr_set_xrc_srqn = xrc ? wr_set_xrc_srqn : wr_no_xrc_srqn;
    q.wr_send_inv = wr_send_inv;
    q.wr_rdma_write = wr_rdma_write;
    q.wr_rdma_write_imm = wr_rdma_write_imm;
    q.wr_rdma_read = wr_rdma_read;
    q.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
    q.wr_atomic_fetch_add = wr_atomic_fetch_add;
    if (!ud) {
        q.wr_bind_mw = wr_bind_mw;
        q.wr_local_inv = wr_local_inv;
    }
    q.wr_set_ud_addr = ud ? wr_set_ud_addr : wr_no_ud_addr;
    q.wr_set_sge = wr_set_sge;
    q.wr_set_sge_list = wr_set_sge_list;
    q.wr_set_inline_data = wr_set_inline_data;
    q.wr_set_inline_data_list = wr_set_inline_data_list;
    if (q.qp_base.qp_type == IBV_QPT_RAW_PACKET) {
        // sends only (the send ops allowed say so), each a whole frame
        q.wr_set_sge = wr_raw_sge;
        q.wr_set_sge_list = wr_raw_sge_list;
        q.wr_set_inline_data = wr_raw_inline_data;
        q.wr_set_inline_data_list = wr_raw_inline_data_list;
    }
}

}  // namespace rdma::mlx5
