// The device model: one thread per process that plays the ConnectX.
//
// How it finds work: the provider writes WQEs into the QP's send ring and
// then the send doorbell record (dbrec[1], a 16-bit WQE-basic-block
// counter) before ringing the UAR; the model polls the doorbell records of
// every QP in RTS (and of every CQ arm record), and reads the wire socket.
// While there is work it loops without sleeping; after 50 idle rounds it
// sleeps in ppoll() on the wire socket (a packet wakes it at once), starting
// at 5 us and doubling up to 50 us while the last work is less than 50 ms
// old, then up to idle_poll_us (1 ms by default). So a doorbell is seen
// within ~50 us on a busy device and within 1 ms on one idle for longer; no
// sched_yield spinning, which on a loaded host gives away whole time slices.
//
// Transport: RC with PSNs, ACK/NAK (RNR, sequence, remote access, invalid
// request), go-back-N retransmission on timeout (4.096 us << timeout,
// retry_cnt) and RNR retry (min_rnr_timer, rnr_retry, 7 = forever), RDMA
// read responses and atomics (host-order values, 8-byte aligned); UC
// without acknowledgements; UD with Q_Key checks and the 40-byte GRH area.
// Completions are mlx5 CQE64s with the owner bit of the ring pass.
#include "ucma.h"
#include "verbs.h"
#include "wire.h"

#include <algorithm>
#include <cerrno>
#include <dirent.h>
#include <ctime>
#include <deque>
#include <fcntl.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <thread>

namespace uvsim {

namespace {

uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

constexpr uint32_t kArmSentinel = 0xffffffffu;

// 24-bit PSN arithmetic
uint32_t psn_add(uint32_t a, uint32_t b) { return (a + b) & 0xffffff; }
int32_t psn_diff(uint32_t a, uint32_t b) {  // a - b in [-2^23, 2^23)
    int32_t d = static_cast<int32_t>((a - b) & 0xffffff);
    return d >= 0x800000 ? d - 0x1000000 : d;
}

// Packets a peer's socket could not take yet, one FIFO per destination
// process so that a slow (or stopped) peer does not hold up the others;
// stored at their wire size. Never destroyed: the model thread may still
// run during exit().
struct PendingWire {
    std::map<uint32_t, std::deque<std::vector<uint8_t>>> by_slot;
    size_t total = 0;
};
PendingWire& g_pend = *new PendingWire;
constexpr size_t kPendingHardMax = 32768;  // beyond this the link drops (RC retransmits)
uint64_t g_completions = 0;  // for the cqe_error_at fault
uint64_t g_first_ctx_ns = 0;
bool g_overrun = false;  // a CQ overran: its QPs go to error at the next step
bool g_started = false;

size_t pending_count() { return g_pend.total; }

// Packets queued for other processes (ours are drained by our model thread).
size_t pending_remote() {
    size_t n = 0;
    for (auto& [slot, q] : g_pend.by_slot)
        if (slot != sim().slot)
            n += q.size();
    return n;
}

void xmit(Packet& p);

// UD to QPN 0xffffff: a copy to every QP attached to the destination GID on
// the simulated host (the sender's own included, as mlx5 loops multicast
// back unless told not to).
void xmit_mcast(Packet& p) {
    const std::vector<uint32_t> members = mcast_members(p.h.dgid);
    UVSIM_TRACE("multicast from qpn 0x%x to %zu member(s)", p.h.src_qpn, members.size());
    for (uint32_t q : members) {
        p.h.dest_qpn = q;
        p.h.flags |= kFlagMcast;
        xmit(p);
    }
    p.h.dest_qpn = 0xffffff;
}

void xmit(Packet& p) {
    if (p.h.dest_qpn == 0xffffff && (p.h.opcode & 0xe0) == TRANSPORT_UD) {
        xmit_mcast(p);
        return;
    }
    p.h.magic = kWireMagic;
    if (!(p.h.flags & kFlagXrcRelay) && wire_fault_drop(p))
        return;  // (a relay is no packet on the wire: never lost)
    const uint32_t slot = p.h.dest_qpn >> 16;
    const size_t n = sizeof p.h + p.h.payload_len;
    auto& q = g_pend.by_slot[slot];
    if (q.empty()) {
        const int r = wire_send_bytes(slot, &p, n);
        if (r > 0)
            return;
        if (r < 0) {
            UVSIM_TRACE("wire: qpn 0x%x unreachable: packet lost", p.h.dest_qpn);
            return;
        }
    }
    if (g_pend.total >= kPendingHardMax) {
        UVSIM_TRACE("wire: %zu packets queued: packet to qpn 0x%x lost", g_pend.total, p.h.dest_qpn);
        return;
    }
    const uint8_t* b = reinterpret_cast<const uint8_t*>(&p);
    q.emplace_back(b, b + n);
    ++g_pend.total;
}

bool flush_pending() {
    bool moved = false;
    for (auto& [slot, q] : g_pend.by_slot) {
        while (!q.empty()) {
            const int r = wire_send_bytes(slot, q.front().data(), q.front().size());
            if (r == 0)
                break;
            q.pop_front();
            --g_pend.total;
            moved = true;
        }
    }
    return moved;
}

// ------------------------------------------------------------------ CQEs

struct CqeInfo {
    uint8_t opcode;  // MLX5_CQE_*
    uint8_t wqe_opcode = 0;  // requester: MLX5_OPCODE_*
    uint16_t wqe_counter = 0;
    uint32_t byte_cnt = 0;
    uint32_t imm = 0;  // network order as received
    uint32_t src_qpn = 0;
    bool grh = false;
    uint16_t slid = 0;
    uint8_t sl = 0;
    uint8_t syndrome = 0;  // error CQEs
    bool solicited = false;
    Srq* srq = nullptr;
    // scatter-to-CQE: the data the CQE carries instead of the buffers
    // (scat_size 32: the CQE64's first 32 bytes; 64: a 128-byte CQE's
    // first half)
    const uint8_t* scat = nullptr;
    uint32_t scat_len = 0;
    uint8_t scat_size = 0;
    // a receive through an RSS QP: the WQ it landed in (its number and user
    // index go into the CQE) and the hash that chose it
    const Wq* wq = nullptr;
    uint32_t rss_hash = 0;
    uint8_t rss_hash_type = 0;
};

// "00112233 44556677 ..." of a buffer, for the trace
std::string hex(const uint8_t* b, size_t n) {
    std::string s;
    char t[4];
    for (size_t i = 0; i < n; ++i) {
        if (i && (i % 4) == 0)
            s += ' ';
        snprintf(t, sizeof t, "%02x", b[i]);
        s += t;
    }
    return s;
}

// A full CQ: the CQ error, reported once.
void cq_overrun(Cq& cq, const char* what) {
    if (cq.overrun)
        return;
    cq.overrun = true;
    g_overrun = true;
    ++cq.async_events;
    if (cq.ctx)
        cq.ctx->async_event(cq.user_handle, IBV_EVENT_CQ_ERR);
    UVSIM_TRACE("cq 0x%x overrun: %s", cq.cqn, what);
}

// ------------------------------------------------------ CQE compression
//
// A CQ created with compression gathers CQEs that differ only in their
// byte count into a session, written when it closes: when a CQE that
// cannot join comes, when it holds cqe_comp_max_num, and at the end of
// each pass of the device over its queues and the wire (zip_flush_all).
// A session of one is written as a plain CQE. A longer one is its title,
// the first CQE with op_own format 3 (MLX5_COMPRESSED) and the session's
// length as its byte count, in its own place, followed by the mini-CQE
// arrays in the next places, eight 8-byte mini-CQEs each ({hash, or
// checksum and stride index; byte count}, big-endian); the places after
// the arrays are left as they were, and every place of the session counts
// as one CQE. Only what the consumer can rebuild from the title joins: a
// successful send to the same QP's receive queue (no immediate, no
// invalidation, not solicited, no data in the CQE), the WQE counters in
// a row, every other field equal. Requester and error CQEs, SRQ receives
// and IGNORE_OVERRUN CQs are never compressed in the model. IB traffic has
// no L4 checksum, RSS hash or strides: the first word of a mini-CQE is 0.

bool zip_eligible(const Cq& cq, const CqeInfo& ci, bool err, uint8_t format) {
    return !err && ci.opcode == MLX5_CQE_RESP_SEND && !ci.srq && !ci.solicited && !format && !cq.ignore_overrun;
}

bool zip_joins(const Cq& cq, const Qp& qp, const CqeInfo& ci, const uint8_t* cqe) {
    if (cq.zip_bytes.empty() || cq.zip_bytes.size() >= cq.zip_max || qp.qpn != cq.zip_qpn ||
        ci.wqe_counter != cq.zip_next_counter)
        return false;
    // equal but for the byte count (44), the timestamp (48) and the WQE
    // counter (60)
    return !memcmp(cqe, cq.zip_title, 44) && !memcmp(cqe + 56, cq.zip_title + 56, 4) && cqe[62] == cq.zip_title[62];
}

// The CQE64 of place `index` (with 128-byte CQEs their second half).
uint8_t* cqe_slot(Cq& cq, uint32_t index) {
    uint8_t* slot = reinterpret_cast<uint8_t*>(cq.buf) + size_t(index & (cq.ncqe - 1)) * cq.cqe_size;
    return cq.cqe_size == 128 ? slot + 64 : slot;
}

void zip_flush(Cq& cq) {
    const uint32_t n = static_cast<uint32_t>(cq.zip_bytes.size());
    if (!n)
        return;
    uint8_t* title = cqe_slot(cq, cq.pi);
    uint8_t format = 0;
    memcpy(title, cq.zip_title, 63);
    if (n > 1) {
        for (uint32_t a = 0; a * 8 < n; ++a) {
            uint8_t arr[64] = {};
            for (uint32_t i = 0; i < 8 && a * 8 + i < n; ++i) {
                const uint32_t bc = htobe32(cq.zip_bytes[a * 8 + i]);
                memcpy(arr + i * 8 + 4, &bc, 4);
            }
            memcpy(cqe_slot(cq, cq.pi + 1 + a), arr, 64);
        }
        const uint32_t count = htobe32(n);
        memcpy(title + 44, &count, 4);
        format = 3 << 2;  // MLX5_COMPRESSED
    }
    const uint8_t owner = (cq.pi / cq.ncqe) & 1;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(title + 63, static_cast<uint8_t>((MLX5_CQE_RESP_SEND << 4) | format | owner), __ATOMIC_RELEASE);
    UVSIM_TRACE("CQE cq 0x%x idx %u: %u compressed CQE(s) of qpn 0x%x: %s", cq.cqn, cq.pi & (cq.ncqe - 1), n,
                cq.zip_qpn, g_trace_on ? hex(title, 64).c_str() : "");
    cq.pi = (cq.pi + n) & 0xffffff;
    cq.zip_bytes.clear();
    if (cq.armed && !cq.armed_solicited)
        cq.arm_ci = (cq.pi - 1) & 0xffffff;  // fires on the next check
}

void zip_flush_all() {
    for (Cq* cq : sim().cqs)
        zip_flush(*cq);
}

bool cqe_write(Cq& cq, Qp& qp, const CqeInfo& ci) {
    if (cq_unconsumed(cq) >= cq.ncqe && !cq.ignore_overrun) {
        cq_overrun(cq, "CQE dropped");
        return false;
    }
    const bool err = ci.opcode == MLX5_CQE_REQ_ERR || ci.opcode == MLX5_CQE_RESP_ERR;
    uint8_t tmp[64] = {};
    if (err) {
        auto* e = reinterpret_cast<mlx5_err_cqe*>(tmp);
        e->srqn = htobe32(ci.srq ? ci.srq->srqn : 0);
        e->vendor_err_synd = ci.syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR ? 0xf9 : 0x81;
        e->syndrome = ci.syndrome;
        e->s_wqe_opcode_qpn = htobe32((uint32_t(ci.wqe_opcode) << 24) | (ci.wq ? ci.wq->wqn : qp.qpn));
        e->wqe_counter = htobe16(ci.wqe_counter);
    } else {
        auto* e = reinterpret_cast<mlx5_cqe64*>(tmp);
        e->imm_inval_pkey = ci.imm;
        e->byte_cnt = htobe32(ci.byte_cnt);
        e->sop_drop_qpn = htobe32((uint32_t(ci.wqe_opcode) << 24) | (ci.wq ? ci.wq->wqn : qp.qpn));
        e->wqe_counter = htobe16(ci.wqe_counter);
        e->slid = htobe16(ci.slid);
        if (ci.wq) {
            // the RSS result: the hash at byte 12, its type at byte 16
            const uint32_t hv = htobe32(ci.rss_hash);
            memcpy(tmp + 12, &hv, 4);
            tmp[16] = ci.rss_hash_type;
        }
        e->flags_rqpn = htobe32((ci.src_qpn & 0xffffff) | (ci.grh ? (1u << 28) : 0) | (uint32_t(ci.sl & 0xf) << 24));
        // in device clock cycles: hca_core_clock is 156250 kHz (5/32 per ns)
        e->timestamp = htobe64(now_ns() / 32 * 5);
    }
    auto* e64 = reinterpret_cast<mlx5_cqe64*>(tmp);
    if (cq.ctx && cq.ctx->cqe_version == 1)
        // the user index of the QP, or of the XRC SRQ a receive went to
        e64->srqn_uidx = htobe32((ci.wq ? ci.wq->uidx : ci.srq && ci.srq->xrc ? ci.srq->uidx : qp.uidx) & 0xffffff);
    else if (ci.srq)
        e64->srqn_uidx = htobe32(ci.srq->srqn & 0xffffff);
    uint8_t format = 0;  // op_own bits 3:2
    uint8_t half[64];  // MLX5_INLINE_SCATTER_64: the 128-byte CQE's first half
    if (ci.scat && !err) {
        if (ci.scat_size == 64 && cq.cqe_size == 128) {
            memset(half, 0, sizeof half);
            memcpy(half, ci.scat, std::min<uint32_t>(ci.scat_len, 64));
            format = MLX5_INLINE_SCATTER_64;
        } else {
            // the data takes the place of the fields in the first 32 bytes
            memset(tmp, 0, 32);
            memcpy(tmp, ci.scat, std::min<uint32_t>(ci.scat_len, 32));
            format = MLX5_INLINE_SCATTER_32;
        }
    }
    if (cq.zip_format) {
        if (zip_eligible(cq, ci, err, format)) {
            if (!zip_joins(cq, qp, ci, tmp)) {
                zip_flush(cq);  // a new session, this CQE its title
                memcpy(cq.zip_title, tmp, 64);
                cq.zip_qpn = qp.qpn;
            }
            cq.zip_bytes.push_back(ci.byte_cnt);
            cq.zip_next_counter = static_cast<uint16_t>(ci.wqe_counter + 1);
            return true;
        }
        zip_flush(cq);  // what was gathered goes before this CQE
    }
    // the place is taken only now: a session written above moved pi on
    const uint32_t idx = cq.pi & (cq.ncqe - 1);
    uint8_t* slot = cqe_slot(cq, cq.pi);
    auto* c = reinterpret_cast<mlx5_cqe64*>(slot);
    if (format == MLX5_INLINE_SCATTER_64)
        memcpy(slot - 64, half, 64);
    memcpy(slot, tmp, 63);
    const uint8_t owner = (cq.pi / cq.ncqe) & 1;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&c->op_own, static_cast<uint8_t>((ci.opcode << 4) | format | owner), __ATOMIC_RELEASE);
    cq.pi = (cq.pi + 1) & 0xffffff;
    if (cq.armed && (!cq.armed_solicited || ci.solicited || err))
        cq.arm_ci = (cq.pi - 1) & 0xffffff, cq.armed_solicited = false;  // fires on the next check
    UVSIM_TRACE("CQE cq 0x%x idx %u op %u qpn 0x%x wqe_counter %u byte_cnt %u%s syndrome 0x%x: %s", cq.cqn, idx,
                ci.opcode, qp.qpn, ci.wqe_counter, ci.byte_cnt, err ? " ERR" : "", ci.syndrome,
                g_trace_on ? hex(slot, 64).c_str() : "");
    return true;
}

bool fire_events() {
    bool any = false;
    for (Cq* cq : sim().cqs) {
        if (!cq->channel)
            continue;
        uint32_t v = __atomic_load_n(&cq->dbrec[1], __ATOMIC_ACQUIRE);
        while (v != kArmSentinel) {
            if (__atomic_compare_exchange_n(&cq->dbrec[1], &v, kArmSentinel, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                const uint32_t h = be32toh(v);
                cq->armed = true;
                cq->armed_solicited = (h & MLX5_CQ_DB_REQ_NOT_SOL) != 0;
                cq->arm_ci = h & 0xffffff;
                cq->mod_base = cq->arm_ci;
                cq->pending_since_ns = 0;
                UVSIM_TRACE("cq 0x%x armed%s at ci %u", cq->cqn, cq->armed_solicited ? " (solicited)" : "", cq->arm_ci);
                break;
            }
        }
        if (cq->armed && !cq->armed_solicited && cq->pi != cq->arm_ci) {
            if (cq->mod_count || cq->mod_period) {
                const uint64_t now = now_ns();
                if (!cq->pending_since_ns)
                    cq->pending_since_ns = now;
                const uint32_t pending = (cq->pi - cq->mod_base) & 0xffffff;
                const bool due = (cq->mod_count && pending >= cq->mod_count) ||
                    (cq->mod_period && now - cq->pending_since_ns >= uint64_t(cq->mod_period) * 1000);
                if (!due)
                    continue;
                cq->pending_since_ns = 0;
            }
            cq->armed = false;
            ++cq->comp_events;
            ib_uverbs_comp_event_desc d{cq->user_handle};
            cq->channel->post(&d, sizeof d);
            UVSIM_TRACE("completion event cq 0x%x", cq->cqn);
            any = true;
        }
    }
    return any;
}

// ------------------------------------------------------------------ memory

struct Sge {
    uint32_t lkey;
    uint64_t addr;
    uint32_t len;
};

// Resolves a local SGE to process memory; syndrome on failure.
uint8_t resolve_local(Qp& qp, const Sge& s, bool write, uint64_t& proc) {
    auto it = sim().mrs_by_lkey.find(s.lkey);
    if (it == sim().mrs_by_lkey.end())
        return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
    Mr* mr = it->second;
    if (mr->pd != qp.pd)
        return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
    if (write && !(mr->access & IBV_ACCESS_LOCAL_WRITE))
        return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
    if (s.addr < mr->iova || s.addr + s.len > mr->iova + mr->length || s.addr + s.len < s.addr)
        return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
    proc = mr->addr + (s.addr - mr->iova);
    return 0;
}

// The window an rkey names, if it is one (whatever its variant byte).
Mw* window_of(uint32_t key) {
    auto it = sim().mws_by_index.find(key >> 8);
    return it == sim().mws_by_index.end() ? nullptr : it->second;
}

// Remote access through a memory window: bound, this very key (variant
// included), the QP's PD, a type 2 window only on the QP it serves, the
// access it grants, inside it; then through the MR it is bound to.
uint8_t resolve_window(Qp& qp, uint32_t rkey, uint64_t va, uint64_t len, uint32_t need, uint64_t& proc) {
    Mw* mw = window_of(rkey);
    if (!mw || mw->key != rkey || !mw->bound || !mw->mr || mw->pd != qp.pd)
        return AETH_NAK_REM_ACCESS;
    if (mw->mw_type == IBV_MW_TYPE_2 && mw->qpn != qp.qpn)
        return AETH_NAK_REM_ACCESS;
    if (!(mw->access & need) || !(qp.access & need))
        return AETH_NAK_REM_ACCESS;
    if (va < mw->addr || va + len > mw->addr + mw->length || va + len < va)
        return AETH_NAK_REM_ACCESS;
    const Mr& mr = *mw->mr;
    proc = mr.addr + (mw->mr_va + (va - mw->addr) - mr.iova);
    return 0;
}

// A send with invalidate for `key` arrived at qp: a window's key must
// name a bound type 2 window that serves this QP, which is then free
// again. Keys of no window pass (the model does not invalidate MRs).
bool remote_invalidate(Qp& qp, uint32_t key) {
    Mw* mw = window_of(key);
    if (!mw)
        return true;
    if (mw->key != key || mw->mw_type != IBV_MW_TYPE_2 || !mw->bound || mw->qpn != qp.qpn || mw->pd != qp.pd)
        return false;
    mw->bound = false;
    mw->mr = nullptr;
    UVSIM_TRACE("qpn 0x%x: window key 0x%x invalidated by the peer", qp.qpn, key);
    return true;
}

// Remote access check (responder): NAK syndrome or 0.
uint8_t resolve_remote(Qp& qp, uint32_t rkey, uint64_t va, uint64_t len, uint32_t need, uint64_t& proc) {
    auto it = sim().mrs_by_lkey.find(rkey);
    if (it == sim().mrs_by_lkey.end())
        return resolve_window(qp, rkey, va, len, need, proc);
    Mr* mr = it->second;
    if (mr->pd != qp.pd || !(mr->access & need) || !(qp.access & need))
        return AETH_NAK_REM_ACCESS;
    if (va < mr->iova || va + len > mr->iova + mr->length || va + len < va)
        return AETH_NAK_REM_ACCESS;
    proc = mr->addr + (va - mr->iova);
    return 0;
}

// Appends what an SGE points at to out; syndrome on failure.
uint8_t gather(Qp& qp, const Sge& s, std::vector<uint8_t>& out) {
    uint64_t p;
    if (uint8_t e = resolve_local(qp, s, false, p))
        return e;
    size_t o = out.size();
    out.resize(o + s.len);
    if (!app_read(out.data() + o, p, s.len))
        return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
    return 0;
}

// One data segment of a send WQE at off (which it advances past it):
// inline bytes or a pointer; padding pointers (all zero) are skipped.
struct DataSeg {
    enum Kind { End, Inline, Pointer, Bad } kind = End;
    const uint8_t* bytes = nullptr;  // Inline
    uint32_t len = 0;  // Inline
    Sge sge{};  // Pointer
};
DataSeg next_data_seg(const uint8_t* w, size_t size, size_t& off) {
    DataSeg d;
    while (off + 4 <= size) {
        uint32_t bc;
        memcpy(&bc, w + off, 4);
        bc = be32toh(bc);
        if (bc & MLX5_INLINE_SEG) {
            const uint32_t n = bc & ~MLX5_INLINE_SEG;
            if (off + 4 + n > size) {
                d.kind = DataSeg::Bad;
                return d;
            }
            d.kind = DataSeg::Inline;
            d.bytes = w + off + 4;
            d.len = n;
            off += (4 + n + 15) & ~size_t(15);
            return d;
        }
        if (off + 16 > size)
            break;
        mlx5_wqe_data_seg ds;
        memcpy(&ds, w + off, sizeof ds);
        off += 16;
        d.sge = Sge{be32toh(ds.lkey), be64toh(ds.addr), be32toh(ds.byte_count)};
        if (d.sge.len == 0 && d.sge.lkey == 0 && d.sge.addr == 0)
            continue;  // padding
        d.kind = DataSeg::Pointer;
        return d;
    }
    return d;
}

// Scatters data at byte offset `off` of an SGE list; syndrome on failure.
uint8_t scatter(Qp& qp, const std::vector<Sge>& sges, uint64_t off, const uint8_t* data, size_t len) {
    for (const Sge& s : sges) {
        if (!len)
            break;
        if (off >= s.len) {
            off -= s.len;
            continue;
        }
        size_t n = std::min<uint64_t>(len, s.len - off);
        uint64_t p;
        if (uint8_t e = resolve_local(qp, s, true, p))
            return e;
        if (!app_write(p + off, data, n))
            return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
        data += n;
        len -= n;
        off = 0;
    }
    return len ? MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR : 0;
}

uint64_t sge_total(const std::vector<Sge>& v) {
    uint64_t t = 0;
    for (const Sge& s : v)
        t += s.len;
    return t;
}

}  // namespace

// --------------------------------------------------------------- QP state

struct SendOp {
    uint16_t wqe_idx = 0;  // WQE counter (first basic block)
    uint8_t opcode = 0;  // MLX5_OPCODE_*
    bool signaled = false, solicited = false;
    uint32_t imm = 0;  // network order
    std::vector<Sge> sges;
    std::vector<uint8_t> data;  // gathered payload (send/write), or inline
    uint32_t len = 0;
    uint64_t raddr = 0;
    uint32_t rkey = 0;
    uint64_t swap = 0, cmp = 0;
    // UD
    Av av;
    uint32_t rqpn = 0, rqkey = 0;
    uint32_t xrc_srqn = 0;  // XRC initiator: the XRC segment's SRQ number
    // RC progress
    uint32_t first_psn = 0, npkts = 1;
    uint32_t read_got = 0;  // RDMA read: bytes scattered so far
    uint32_t gap_at = ~0u;  // RDMA read: read_got when a gap was last re-requested
    uint32_t gap_seen = 0;  // RDMA read: out-of-order responses since then
    bool need_req = true;  // RDMA read / atomic: the request is to be (re)sent
    bool ooo_asked = false;  // re-requested after a later response overtook it
    uint8_t local_err = 0;  // a bad WQE: completes with this syndrome in its turn
    bool done = false;
    bool in_cqe = false;  // scatter-to-CQE: the read/atomic result is in data, for the CQE
    // UMR (memory window bind and invalidation): the segments as posted
    uint8_t umr_flags = 0;
    uint64_t umr_mask = 0;
    mlx5_wqe_mkey_context_seg mkc{};
    bool has_klm = false;
    mlx5_wqe_umr_klm_seg klm{};
};

struct RecvState {
    bool active = false;  // a receive WQE is being filled (multi-packet send)
    bool held = false;  // UC: taken, its message lost; the next message uses it
    bool from_srq = false;
    Srq* srq = nullptr;  // the SRQ it came from (for an XRC target QP, the request's)
    uint16_t wqe_index = 0;
    std::vector<Sge> sges;
    uint64_t got = 0;
    uint8_t error = 0;
    // scatter-to-CQE: the message, when it goes into the CQE
    uint8_t cqe_data[64];
    uint32_t cqe_len = 0;
};

struct QpEngine {
    bool comm_est = false;  // COMM_EST reported (RTR received a packet)
    uint16_t sq_ci = 0;  // basic blocks consumed
    uint16_t rq_ci = 0;  // receive WQEs consumed
    // requester (RC): operations in PSN order; packets up to snd_nxt were
    // sent, everything before una is acknowledged
    std::deque<SendOp> outstanding;
    uint32_t next_psn = 0;  // PSN of the next new operation
    uint32_t snd_nxt = 0;
    uint32_t una = 0;
    uint64_t deadline = 0;
    int retries = 0, rnr_retries = 0;
    uint64_t rnr_until = 0;
    uint32_t rnr_psn = 0;
    bool sq_stalled = false;  // a bad WQE is queued: read no further
    bool dup_head = false;  // send the next retransmitted packet twice (see timers)
    // responder
    uint32_t epsn = 0;
    uint32_t msn = 0;
    bool nak_sent = false;
    RecvState recv;
    bool w_active = false;  // RDMA write in progress
    uint64_t w_proc = 0, w_left = 0, w_total = 0;
    uint64_t w_va = 0;  // next remote address (re-checked per packet)
    uint32_t w_rkey = 0;
    // the last atomics executed, for replaying a duplicate request
    struct AtomicDone {
        uint32_t psn = 0xffffffff;
        uint64_t orig = 0;
    };
    AtomicDone atomics[16];
    unsigned atomic_next = 0;
    // RDMA read responses still to send: generated as the wire takes them,
    // as a device's read response engine does, not all at once
    struct ReadJob {
        uint32_t psn = 0;  // of response packet 0
        uint64_t proc = 0;  // process address of the data
        uint64_t va = 0;  // remote address and key (re-checked per packet)
        uint32_t rkey = 0;
        uint32_t len = 0;
        uint32_t n = 1, i = 0;  // packets, next packet
        uint32_t msn = 0;
        bool hdr_only = false;  // an ACK/NAK/atomic ACK queued behind read responses
        WireHdr hdr{};
    };
    std::deque<ReadJob> reads;
};

Qp::Qp() : Object(ObjType::Qp) {}
Qp::~Qp() = default;

namespace {

uint8_t port_of(const Qp& qp) { return qp.port ? qp.port : 1; }

// Reliable connected service: RC and the two halves of XRC.
bool rc_like(const Qp& qp) {
    return qp.qp_type == IBV_QPT_RC || qp.qp_type == IBV_QPT_XRC_SEND || qp.qp_type == IBV_QPT_XRC_RECV;
}

// The BTH transport bits of the QP's packets.
uint8_t transport_of(const Qp& qp) {
    switch (qp.qp_type) {
    case IBV_QPT_RC: return TRANSPORT_RC;
    case IBV_QPT_UC: return TRANSPORT_UC;
    case IBV_QPT_XRC_SEND:
    case IBV_QPT_XRC_RECV: return TRANSPORT_XRC;
    default: return TRANSPORT_UD;
    }
}

// Where a receive completes: an XRC SRQ's own CQ, else the QP's.
Cq* recv_cq_of(Qp& qp, const Srq* srq) { return srq && srq->cq ? srq->cq : qp.recv_cq; }

const PortCfg& pcfg(const Qp& qp) {
    const Device& d = *qp.ctx->dev;
    return d.cfg->ports[std::min<size_t>(port_of(qp) - 1, d.cfg->ports.size() - 1)];
}

void fill_addr(Qp& qp, const Av& av, Packet& p) {
    const PortCfg& pc = pcfg(qp);
    p.h.slid = pc.lid;
    p.h.dlid = av.dlid;
    p.h.sl = av.sl;
    if (av.grh || pc.ethernet) {
        p.h.flags |= kFlagGrh;
        const auto& gids = port_gids(pc);
        if (av.sgid_index < gids.size()) {
            memcpy(p.h.sgid, gids[av.sgid_index].gid, 16);
            if (pc.ethernet && gids[av.sgid_index].type == 1)
                p.h.flags |= kFlagRoceV2;
        }
        memcpy(p.h.dgid, av.dgid, 16);
        p.h.tclass = av.traffic_class;
        p.h.flow_label = av.flow_label & 0xfffff;
        p.h.hop_limit = av.hop_limit;
    }
}

// Is the packet addressed to this QP's port?
bool addressed_to(Qp& qp, const Packet& p) {
    const PortCfg& pc = pcfg(qp);
    if (p.h.flags & kFlagMcast) {
        // a member of the group: the multicast GID (and on IB the MLID)
        for (const Qp::McastGroup& g : qp.mcast)
            if (!memcmp(g.gid, p.h.dgid, 16) && (pc.ethernet || g.mlid == p.h.dlid))
                return true;
        return false;
    }
    if (pc.ethernet) {
        if (!(p.h.flags & kFlagGrh))
            return false;
        for (const GidEntry& g : port_gids(pc))
            if (!memcmp(g.gid, p.h.dgid, 16))
                return true;
        return false;
    }
    if (p.h.dlid < pc.lid || p.h.dlid >= pc.lid + (1u << pc.lmc))
        return false;
    if (p.h.flags & kFlagGrh) {
        for (const GidEntry& g : port_gids(pc))
            if (!memcmp(g.gid, p.h.dgid, 16))
                return true;
        return false;
    }
    return true;
}

void set_error(Qp& qp);

bool complete(Qp& qp, Cq& cq, CqeInfo ci) {
    const uint64_t at = cfg().faults.cqe_error_at;
    if (at && ci.opcode != MLX5_CQE_REQ_ERR && ci.opcode != MLX5_CQE_RESP_ERR && ++g_completions == at) {
        ci.syndrome = cfg().faults.cqe_error_syndrome;
        ci.opcode = (ci.opcode == MLX5_CQE_REQ) ? MLX5_CQE_REQ_ERR : MLX5_CQE_RESP_ERR;
        UVSIM_TRACE("fault: completion %llu of qpn 0x%x turned into syndrome 0x%x", (unsigned long long)at, qp.qpn,
                    ci.syndrome);
        bool r = cqe_write(cq, qp, ci);
        set_error(qp);
        return r;
    }
    return cqe_write(cq, qp, ci);
}

void req_complete(Qp& qp, const SendOp& op, uint8_t syndrome = 0) {
    CqeInfo ci{};
    ci.wqe_opcode = op.opcode;
    ci.wqe_counter = op.wqe_idx;
    if (syndrome) {
        ci.opcode = MLX5_CQE_REQ_ERR;
        ci.syndrome = syndrome;
        cqe_write(*qp.send_cq, qp, ci);
        return;
    }
    if (!op.signaled)
        return;
    ci.opcode = MLX5_CQE_REQ;
    if (op.in_cqe) {
        ci.scat = op.data.data();
        ci.scat_len = static_cast<uint32_t>(op.data.size());
        ci.scat_size = qp.cs_req;
    }
    if (op.opcode == MLX5_OPCODE_RDMA_READ)
        ci.byte_cnt = op.len;
    else if (op.opcode == MLX5_OPCODE_ATOMIC_CS || op.opcode == MLX5_OPCODE_ATOMIC_FA)
        ci.byte_cnt = 8;
    else
        ci.byte_cnt = op.len;
    complete(qp, *qp.send_cq, ci);
}

// Flushes everything: outstanding and posted send WQEs, posted receives.
void flush_all(Qp& qp);
// A raw packet QP's frame onto the segment (see the raw Ethernet part).
void send_frame(Qp& qp, const SendOp& op);

void set_error(Qp& qp) {
    if (qp.state == IBV_QPS_ERR)
        return;
    const uint8_t old = qp.state;
    qp.state = IBV_QPS_ERR;
    UVSIM_TRACE("qpn 0x%x: %u -> ERR", qp.qpn, old);
    flush_all(qp);
    if (qp.srq && qp.ctx)
        qp.ctx->async_event(qp.user_handle, IBV_EVENT_QP_LAST_WQE_REACHED), ++qp.events_reported;
}

// ------------------------------------------------------------ WQE parsing

// Copies the WQE at basic-block counter idx out of the ring (it may wrap).
bool read_wqe(Qp& qp, uint16_t idx, uint8_t* out, size_t& size, uint32_t& nbb) {
    const uint32_t cnt = qp.sq_wqe_cnt;
    const uint8_t* ring = reinterpret_cast<const uint8_t*>(qp.sq_buf);
    const uint32_t first = idx & (cnt - 1);
    memcpy(out, ring + size_t(first) * 64, 64);  // the control segment, also for a bad WQE's trace
    mlx5_wqe_ctrl_seg ctrl;
    memcpy(&ctrl, out, sizeof ctrl);
    const uint32_t ds = be32toh(ctrl.qpn_ds) & 0x3f;
    size = 16;
    nbb = 1;
    if (ds == 0)
        return false;
    size = ds * 16;
    nbb = (size + 63) / 64;
    if (nbb > cnt) {
        nbb = 1;
        return false;
    }
    for (uint32_t b = 0; b < nbb; ++b)
        memcpy(out + b * 64, ring + size_t((first + b) & (cnt - 1)) * 64, 64);
    return true;
}

// A UMR WQE as libmlx5 builds a window bind or invalidation: the UMR
// control segment, the mkey context, and (a bind with a length) one
// inline KLM entry padded to 64 bytes. Only RC and UC QPs carry them.
uint8_t parse_umr(Qp& qp, const uint8_t* w, size_t size, SendOp& op) {
    if (qp.qp_type != IBV_QPT_RC && qp.qp_type != IBV_QPT_UC)
        return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
    constexpr size_t kCtrl = 16, kUmr = sizeof(mlx5_wqe_umr_ctrl_seg), kMkc = sizeof(mlx5_wqe_mkey_context_seg);
    static_assert(kUmr == 48 && kMkc == 64);
    if (size < kCtrl + kUmr + kMkc)
        return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
    mlx5_wqe_umr_ctrl_seg u;
    memcpy(&u, w + kCtrl, kUmr);
    memcpy(&op.mkc, w + kCtrl + kUmr, kMkc);
    op.umr_flags = u.flags;
    op.umr_mask = be64toh(u.mkey_mask);
    const uint16_t octo = be16toh(u.klm_octowords);
    if (octo) {
        // translations inline only, at most the one entry a window has
        if (!(u.flags & MLX5_WQE_UMR_CTRL_FLAG_INLINE) || octo > 4 || size < kCtrl + kUmr + kMkc + octo * 16u)
            return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        memcpy(&op.klm, w + kCtrl + kUmr + kMkc, sizeof op.klm);
        op.has_klm = true;
    }
    return 0;
}

// Executes a parsed UMR on the window its control segment's immediate
// names (by mkey index: the variant byte is what the UMR may change).
// A bind that the window or the MR refuses: MW_BIND_ERR.
uint8_t execute_umr(Qp& qp, const SendOp& op) {
    constexpr uint8_t kErr = MLX5_CQE_SYNDROME_MW_BIND_ERR;
    Mw* mw = window_of(be32toh(op.imm));
    if (!mw || mw->pd != qp.pd)
        return kErr;
    const uint64_t m = op.umr_mask;
    if ((op.umr_flags & MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE) && mw->bound)
        return kErr;  // a type 2 window is bound afresh only when free
    if ((op.umr_flags & MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN) && (!mw->bound || mw->qpn != qp.qpn))
        return kErr;  // invalidated only through the QP it serves
    const bool free = (m & MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE) && (op.mkc.free & MLX5_WQE_MKEY_CONTEXT_FREE);
    const uint32_t qpn_mkey = be32toh(op.mkc.qpn_mkey);
    if (free) {
        mw->bound = false;
        mw->mr = nullptr;
    } else {
        // a bind: the translation entry must lie in an MR of this PD that
        // allows binds, and cover the window
        if (!op.has_klm || !(m & MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN) || !(m & MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR))
            return kErr;
        auto it = sim().mrs_by_lkey.find(be32toh(op.klm.mkey));
        if (it == sim().mrs_by_lkey.end())
            return kErr;
        Mr* mr = it->second;
        const uint64_t kva = be64toh(op.klm.address), klen = be32toh(op.klm.byte_count);
        const uint64_t len = be64toh(op.mkc.len);
        if (mr->pd != qp.pd || !(mr->access & IBV_ACCESS_MW_BIND))
            return kErr;
        if (kva < mr->iova || kva + klen > mr->iova + mr->length || kva + klen < kva || len > klen)
            return kErr;
        uint32_t access = 0;
        const uint8_t af = op.mkc.access_flags;
        if (af & MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ)
            access |= IBV_ACCESS_REMOTE_READ;
        if (af & MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE)
            access |= IBV_ACCESS_REMOTE_WRITE;
        if (af & MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC)
            access |= IBV_ACCESS_REMOTE_ATOMIC;
        // remote writes and atomics through it need the MR's local write
        if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(mr->access & IBV_ACCESS_LOCAL_WRITE))
            return kErr;
        mw->bound = true;
        mw->mr = mr;
        mw->mr_va = kva;
        mw->addr = be64toh(op.mkc.start_addr);
        mw->length = len;
        mw->access = access;
    }
    if (m & MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN)
        mw->qpn = qpn_mkey >> 8;
    if (m & MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY)
        mw->key = (mw->key & ~0xffu) | (qpn_mkey & 0xff);
    UVSIM_TRACE("UMR qpn 0x%x: window -> key 0x%x %s 0x%llx+%llu access 0x%x qpn 0x%x", qp.qpn, mw->key,
                mw->bound ? "bound" : "free", (unsigned long long)mw->addr, (unsigned long long)mw->length, mw->access,
                mw->qpn);
    return 0;
}

// Parses an SQ WQE into op. Returns 0 or a syndrome.
uint8_t parse_send(Qp& qp, const uint8_t* w, size_t size, SendOp& op) {
    mlx5_wqe_ctrl_seg ctrl;
    memcpy(&ctrl, w, sizeof ctrl);
    const uint32_t oio = be32toh(ctrl.opmod_idx_opcode);
    op.opcode = oio & 0xff;
    op.wqe_idx = static_cast<uint16_t>(oio >> 8);
    if ((be32toh(ctrl.qpn_ds) >> 8) != qp.qpn)
        return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
    op.signaled = (ctrl.fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) != 0;
    op.solicited = (ctrl.fm_ce_se & MLX5_WQE_CTRL_SOLICITED) != 0;
    op.imm = ctrl.imm;
    size_t off = 16;
    switch (op.opcode) {
    case MLX5_OPCODE_NOP: return 0;
    case MLX5_OPCODE_UMR: return parse_umr(qp, w, size, op);
    case MLX5_OPCODE_SEND:
    case MLX5_OPCODE_SEND_IMM:
    case MLX5_OPCODE_SEND_INVAL: break;
    case MLX5_OPCODE_RDMA_WRITE:
    case MLX5_OPCODE_RDMA_WRITE_IMM:
    case MLX5_OPCODE_RDMA_READ:
    case MLX5_OPCODE_ATOMIC_CS:
    case MLX5_OPCODE_ATOMIC_FA:
        if (qp.qp_type == IBV_QPT_UD)
            return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        if (qp.qp_type == IBV_QPT_UC && op.opcode != MLX5_OPCODE_RDMA_WRITE && op.opcode != MLX5_OPCODE_RDMA_WRITE_IMM)
            return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        break;
    default: return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;  // UMR, LSO, local invalidate... not modelled
    }
    if (qp.qp_type == IBV_QPT_RAW_PACKET) {
        // the Ethernet segment: the frame's first inline_hdr_sz bytes start
        // in its last two bytes and run on into the next 16-byte units;
        // checksum and LSO requests (cs_flags, mss) are not acted on
        if (op.opcode != MLX5_OPCODE_SEND || off + 16 > size)
            return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        uint16_t hsz;
        memcpy(&hsz, w + off + 12, 2);
        hsz = be16toh(hsz);
        if (off + 14 + hsz > size)
            return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        op.data.assign(w + off + 14, w + off + 14 + hsz);
        off = (off + 14 + hsz + 15) & ~size_t(15);
    }
    if (qp.qp_type == IBV_QPT_XRC_SEND) {
        // the XRC segment: the SRQ at the target, then the segments of RC
        if (off + 16 > size)
            return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        uint32_t srqn;
        memcpy(&srqn, w + off, 4);
        op.xrc_srqn = be32toh(srqn) & 0xffffff;
        off += 16;
    }
    if (qp.qp_type == IBV_QPT_UD) {
        if (off + sizeof(mlx5_wqe_datagram_seg) > size)
            return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        mlx5_wqe_av av;
        memcpy(&av, w + off, sizeof av);
        off += sizeof(mlx5_wqe_datagram_seg);
        op.rqkey = be32toh(av.key.qkey.qkey);
        op.rqpn = be32toh(av.dqp_dct) & 0xffffff;
        op.av.dlid = be16toh(av.rlid);
        op.av.sl = av.stat_rate_sl & 0xf;
        op.av.grh = (be32toh(av.dqp_dct) & MLX5_EXTENDED_UD_AV) && (av.grh_gid_fl & htobe32(1u << 30));
        memcpy(op.av.dgid, av.rgid, 16);
        op.av.sgid_index = static_cast<uint8_t>(be32toh(av.grh_gid_fl) >> 20 & 0xff);
        op.av.hop_limit = av.hop_limit;
        op.av.traffic_class = av.tclass;
        op.av.flow_label = be32toh(av.grh_gid_fl) & 0xfffff;
        op.av.port = port_of(qp);
        if (pcfg(qp).ethernet)
            op.av.grh = true;
    }
    if (op.opcode >= MLX5_OPCODE_RDMA_WRITE && op.opcode != MLX5_OPCODE_SEND && op.opcode != MLX5_OPCODE_SEND_IMM) {
        if (off + 16 > size)
            return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        mlx5_wqe_raddr_seg r;
        memcpy(&r, w + off, sizeof r);
        op.raddr = be64toh(r.raddr);
        op.rkey = be32toh(r.rkey);
        off += 16;
        if (op.opcode == MLX5_OPCODE_ATOMIC_CS || op.opcode == MLX5_OPCODE_ATOMIC_FA) {
            if (off + 16 > size)
                return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
            mlx5_wqe_atomic_seg a;
            memcpy(&a, w + off, sizeof a);
            op.swap = be64toh(a.swap_add);
            op.cmp = be64toh(a.compare);
            off += 16;
        }
    }
    // data: pointer and inline segments, in their order (a WQE may mix
    // them: UCX puts its header inline and the payload behind a pointer)
    const size_t data_off = off;
    size_t inline_bytes = 0;
    bool inl = false;
    for (DataSeg d; (d = next_data_seg(w, size, off)).kind != DataSeg::End;) {
        if (d.kind == DataSeg::Bad)
            return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        if (d.kind == DataSeg::Pointer) {
            op.sges.push_back(d.sge);
            continue;
        }
        inl = true;
        inline_bytes += d.len;
        if (inline_bytes > cfg().devices[qp.ctx->dev->index].max_inline + 64)
            return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
    }
    if (qp.qp_type == IBV_QPT_RAW_PACKET) {
        uint64_t total = op.data.size() + inline_bytes + sge_total(op.sges);
        if (total > kMaxPayload)
            return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;  // longer than any frame the port takes
    }
    if (op.opcode == MLX5_OPCODE_RDMA_READ || op.opcode == MLX5_OPCODE_ATOMIC_CS ||
        op.opcode == MLX5_OPCODE_ATOMIC_FA) {
        if (inl)
            return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
        op.len = static_cast<uint32_t>(sge_total(op.sges));
        if ((op.opcode != MLX5_OPCODE_RDMA_READ) && op.len != 8)
            return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
        // the local buffer must be writable now (checked again on arrival)
        for (const Sge& s : op.sges) {
            uint64_t p;
            if (uint8_t e = resolve_local(qp, s, true, p))
                return e;
        }
        return 0;
    }
    // the message, segment by segment in the WQE's order (appended: after a
    // raw packet's inline L2 header)
    off = data_off;
    for (DataSeg d; (d = next_data_seg(w, size, off)).kind != DataSeg::End;) {
        if (d.kind == DataSeg::Inline)
            op.data.insert(op.data.end(), d.bytes, d.bytes + d.len);
        else if (uint8_t e = gather(qp, d.sge, op.data))
            return e;
    }
    op.len = static_cast<uint32_t>(op.data.size());
    if (op.len > (1u << 30))
        return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
    return 0;
}

// ------------------------------------------------------------- requester

constexpr uint32_t kWindow = 128;  // RC: unacknowledged PSNs in flight
constexpr uint32_t kAckEvery = 32;  // RC: AckReq at least this often
constexpr size_t kPendingMax = 2048;  // wire back-pressure: stop taking WQEs

bool is_read_or_atomic(uint8_t opcode) {
    return opcode == MLX5_OPCODE_RDMA_READ || opcode == MLX5_OPCODE_ATOMIC_CS || opcode == MLX5_OPCODE_ATOMIC_FA;
}

uint32_t qp_mtu(const Qp& qp) { return qp.qp_type == IBV_QPT_UD ? 4096 : mtu_bytes(qp.path_mtu); }

Packet& scratch_packet() {
    static Packet* p = new Packet;  // model thread only (under sim().mu)
    return *p;
}

void packet_base(Qp& qp, const SendOp& op, Packet& p) {
    memset(&p.h, 0, sizeof p.h);
    p.h.src_qpn = qp.qpn;
    p.h.dest_qpn = qp.qp_type == IBV_QPT_UD ? op.rqpn : qp.dest_qpn;
    fill_addr(qp, qp.qp_type == IBV_QPT_UD ? op.av : qp.av, p);
}

// The request of an RDMA read (for what is still missing) or an atomic.
void send_request(Qp& qp, SendOp& op) {
    Packet& p = scratch_packet();
    packet_base(qp, op, p);
    p.h.flags |= kFlagAckReq;
    if (op.opcode == MLX5_OPCODE_RDMA_READ) {
        const uint32_t mtu = qp_mtu(qp);
        const uint32_t skip = op.read_got / mtu;  // whole packets already scattered
        p.h.opcode = transport_of(qp) | OP_READ_REQUEST;
        p.h.psn = psn_add(op.first_psn, skip);
        p.h.va = op.raddr + uint64_t(skip) * mtu;
        p.h.rkey = op.rkey;
        p.h.dma_len = op.len - skip * mtu;
        op.read_got = skip * mtu;
    } else {
        p.h.opcode = transport_of(qp) | (op.opcode == MLX5_OPCODE_ATOMIC_CS ? OP_CMP_SWAP : OP_FETCH_ADD);
        p.h.psn = op.first_psn;
        p.h.va = op.raddr;
        p.h.rkey = op.rkey;
        p.h.dma_len = 8;
        p.h.swap_add = op.swap;
        p.h.compare = op.cmp;
    }
    p.h.xrc_srqn = op.xrc_srqn;
    op.need_req = false;
    UVSIM_TRACE("qpn 0x%x: %s request psn %u len %u (una %u)", qp.qpn,
                op.opcode == MLX5_OPCODE_RDMA_READ ? "read" : "atomic", p.h.psn, p.h.dma_len, qp.eng->una);
    xmit(p);
}

// Packet i of a send or RDMA write.
void send_packet(Qp& qp, const SendOp& op, uint32_t i, bool ack_req) {
    const uint32_t mtu = qp_mtu(qp);
    const uint8_t tr = transport_of(qp);
    const bool write = op.opcode == MLX5_OPCODE_RDMA_WRITE || op.opcode == MLX5_OPCODE_RDMA_WRITE_IMM;
    const bool imm = op.opcode == MLX5_OPCODE_RDMA_WRITE_IMM || op.opcode == MLX5_OPCODE_SEND_IMM;
    const bool inv = op.opcode == MLX5_OPCODE_SEND_INVAL;
    const uint32_t n = op.npkts;
    const bool first = i == 0, last = i == n - 1;
    Packet& p = scratch_packet();
    packet_base(qp, op, p);
    uint8_t o;
    if (write)
        o = n == 1  ? (imm ? OP_WRITE_ONLY_IMM : OP_WRITE_ONLY)
            : first ? OP_WRITE_FIRST
            : last  ? (imm ? OP_WRITE_LAST_IMM : OP_WRITE_LAST)
                    : OP_WRITE_MIDDLE;
    else
        o = n == 1  ? (imm       ? OP_SEND_ONLY_IMM
                           : inv ? OP_SEND_ONLY_INV
                                 : OP_SEND_ONLY)
            : first ? OP_SEND_FIRST
            : last  ? (imm       ? OP_SEND_LAST_IMM
                           : inv ? OP_SEND_LAST_INV
                                 : OP_SEND_LAST)
                    : OP_SEND_MIDDLE;
    p.h.opcode = tr | o;
    p.h.psn = psn_add(op.first_psn, i);
    if (last && op.solicited)
        p.h.flags |= kFlagSolicited;
    if (ack_req || last)
        p.h.flags |= kFlagAckReq;
    if (first && write) {
        p.h.va = op.raddr;
        p.h.rkey = op.rkey;
        p.h.dma_len = op.len;
    }
    p.h.imm = op.imm;
    p.h.qkey = op.rqkey;
    p.h.xrc_srqn = op.xrc_srqn;
    if (qp.qp_type == IBV_QPT_UD && (op.rqkey & 0x80000000u))
        p.h.qkey = qp.qkey;  // the high bit means: use the QP's Q_Key
    const uint32_t off = i * mtu;
    const uint32_t len = std::min(mtu, op.len - std::min(op.len, off));
    p.h.payload_len = static_cast<uint16_t>(len);
    if (len)
        memcpy(p.payload, op.data.data() + off, len);
    xmit(p);
}

uint64_t timeout_ns(const Qp& qp) {
    if (qp.timeout == 0)
        return 0;  // infinite
    uint64_t ns = 4096ull << qp.timeout;
    return std::max<uint64_t>(ns, 1000000ull);
}

uint64_t rnr_ns(uint8_t t) {
    static const uint32_t us[32] = {655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
                                    480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
                                    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
    return uint64_t(us[t & 31]) * 1000;
}

void arm_timer(Qp& qp) {
    uint64_t t = timeout_ns(qp);
    qp.eng->deadline = qp.eng->outstanding.empty() || !t ? 0 : now_ns() + t;
}

// RC: transmits what the window allows, in PSN order. True when it sent.
bool pump(Qp& qp) {
    QpEngine& e = *qp.eng;
    if (!rc_like(qp) || (qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) || e.rnr_until)
        return false;
    bool sent = false;
    // at most max_rd_atomic reads/atomics outstanding (the responder keeps
    // that many results for replaying duplicates)
    const int rd_max = std::max<int>(1, qp.max_rd_atomic);
    int rd_inflight = 0;
    for (SendOp& op : e.outstanding) {
        if (op.done || op.opcode == MLX5_OPCODE_NOP || op.local_err)
            continue;
        const uint32_t end = psn_add(op.first_psn, op.npkts);
        if (is_read_or_atomic(op.opcode)) {
            if (rd_inflight++ >= rd_max)
                break;
            if (op.need_req) {
                if (psn_diff(op.first_psn, e.una) >= static_cast<int32_t>(kWindow) || pending_count() > kPendingMax)
                    break;
                send_request(qp, op);
                if (e.dup_head) {
                    e.dup_head = false;
                    op.need_req = true;
                    send_request(qp, op);
                }
                sent = true;
            }
            if (psn_diff(e.snd_nxt, end) < 0)
                e.snd_nxt = end;
            continue;
        }
        if (psn_diff(e.snd_nxt, end) >= 0)
            continue;  // all of it sent
        int32_t k = psn_diff(e.snd_nxt, op.first_psn);
        if (k < 0) {
            k = 0;
            e.snd_nxt = op.first_psn;
        }
        for (uint32_t i = static_cast<uint32_t>(k); i < op.npkts; ++i) {
            const int32_t inflight = psn_diff(e.snd_nxt, e.una);
            if (inflight >= static_cast<int32_t>(kWindow) || pending_count() > kPendingMax)
                goto out;
            send_packet(qp, op, i, inflight + 1 == static_cast<int32_t>(kWindow) || (e.snd_nxt % kAckEvery) == 0);
            if (e.dup_head) {
                e.dup_head = false;
                send_packet(qp, op, i, true);
            }
            e.snd_nxt = psn_add(e.snd_nxt, 1);
            sent = true;
        }
    }
out:
    if (sent && !e.deadline)
        arm_timer(qp);
    return sent;
}

// Go-back-N: transmit again from psn; reads and atomics not finished that
// start at or after from_psn (all of them when all_reads) are requested again.
void go_back(Qp& qp, uint32_t psn, bool all_reads) {
    QpEngine& e = *qp.eng;
    e.snd_nxt = psn;
    for (SendOp& op : e.outstanding)
        if (!op.done && is_read_or_atomic(op.opcode) && (all_reads || psn_diff(op.first_psn, psn) >= 0)) {
            op.need_req = true;
            op.gap_at = ~0u;
            if (all_reads)
                op.ooo_asked = false;
        }
    arm_timer(qp);
}

// Everything before psn is acknowledged: progress resets the retry counters.
void advance_una(Qp& qp, uint32_t psn) {
    QpEngine& e = *qp.eng;
    if (psn_diff(psn, e.una) <= 0)
        return;
    e.una = psn;
    if (psn_diff(e.snd_nxt, e.una) < 0)
        e.snd_nxt = e.una;
    e.retries = qp.retry_cnt;
    e.rnr_retries = qp.rnr_retry;
    arm_timer(qp);
}

// Completes finished operations at the head of the queue, in order.
void retire(Qp& qp) {
    QpEngine& e = *qp.eng;
    while (!e.outstanding.empty() && e.outstanding.front().done && qp.state != IBV_QPS_ERR) {
        SendOp op = std::move(e.outstanding.front());
        e.outstanding.pop_front();
        if (op.local_err) {
            req_complete(qp, op, op.local_err);
            set_error(qp);
            return;
        }
        req_complete(qp, op);  // may turn into an error (fault injection): the rest flushes
    }
    if (e.outstanding.empty())
        e.deadline = 0, e.sq_stalled = false;
}

// The operation at the head fails: those before it that finished complete
// first, then the error, then the QP is in error and the rest flushes.
void fail_head(Qp& qp, uint8_t syndrome) {
    QpEngine& e = *qp.eng;
    retire(qp);
    if (qp.state == IBV_QPS_ERR)
        return;
    if (!e.outstanding.empty()) {
        SendOp op = std::move(e.outstanding.front());
        e.outstanding.pop_front();
        req_complete(qp, op, op.local_err ? op.local_err : syndrome);
    }
    set_error(qp);
}

// Sends and writes whose last packet is before psn are complete (reads and
// atomics complete with their responses only).
void ack_through(Qp& qp, uint32_t psn) {
    QpEngine& e = *qp.eng;
    for (SendOp& op : e.outstanding) {
        if (op.done)
            continue;
        if (psn_diff(psn_add(op.first_psn, op.npkts), psn) > 0)
            break;
        if (is_read_or_atomic(op.opcode))
            break;  // must not complete anything after it first
        op.done = true;
    }
}

void handle_ack(Qp& qp, const Packet& p) {
    QpEngine& e = *qp.eng;
    const uint8_t syn = p.h.syndrome;
    const uint32_t psn = p.h.psn;
    // an ACK acknowledges psn itself; a NAK everything before psn
    const uint32_t upto = (syn & 0xe0) == AETH_ACK ? psn_add(psn, 1) : psn;
    if (psn_diff(upto, e.next_psn) > 0 || psn_diff(upto, e.una) < 0)
        return;  // acknowledges something never sent, or stale
    ack_through(qp, upto);
    advance_una(qp, upto);
    retire(qp);
    if (qp.state == IBV_QPS_ERR || (syn & 0xe0) == AETH_ACK)
        return;
    if ((syn & 0xe0) == AETH_RNR_NAK) {
        if (e.rnr_retries == 0) {
            fail_head(qp, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
            return;
        }
        if (qp.rnr_retry != 7)
            --e.rnr_retries;
        UVSIM_TRACE("qpn 0x%x: RNR NAK psn %u, %d RNR retries left", qp.qpn, psn, e.rnr_retries);
        e.rnr_until = now_ns() + rnr_ns(syn & 0x1f);
        e.rnr_psn = psn;
        e.deadline = 0;
        return;
    }
    switch (syn) {
    case AETH_NAK_PSN_SEQ:
        // the responder misses psn: send again from there (a NAK repeated for
        // the same PSN while the resend is under way is ignored)
        if (psn_diff(e.snd_nxt, psn) > 0) {
            UVSIM_TRACE("qpn 0x%x: sequence NAK psn %u: going back", qp.qpn, psn);
            go_back(qp, psn, false);
        }
        return;
    case AETH_NAK_INV_REQ: fail_head(qp, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR); return;
    case AETH_NAK_REM_ACCESS: fail_head(qp, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR); return;
    default: fail_head(qp, MLX5_CQE_SYNDROME_REMOTE_OP_ERR); return;
    }
}

// A read response or atomic acknowledgement completes its operation and
// implicitly acknowledges the sends and writes before it.
void implicit_ack_before(Qp& qp, const SendOp& op) {
    for (SendOp& o2 : qp.eng->outstanding) {
        if (&o2 == &op)
            break;
        if (!is_read_or_atomic(o2.opcode))
            o2.done = true;
    }
}

// Responses come back in request order. One for a later read/atomic while an
// earlier one is unanswered means the earlier response was lost: ask again
// from it (once until the next timeout) and drop this one. True when op is
// the oldest unanswered read/atomic and the response may be used.
bool response_in_order(Qp& qp, const SendOp& op) {
    QpEngine& e = *qp.eng;
    for (SendOp& first : e.outstanding) {
        if (first.done || !is_read_or_atomic(first.opcode))
            continue;
        if (&first == &op)
            return true;
        if (!first.ooo_asked) {
            first.ooo_asked = true;
            UVSIM_TRACE("qpn 0x%x: response psn overtook the one of psn %u: asking again", qp.qpn, first.first_psn);
            go_back(qp, first.first_psn, false);
        }
        return false;
    }
    return false;
}

// Scatter-to-CQE on the requester side: a signaled read or atomic whose
// result fits the CQE puts it there instead of the local buffers.
bool result_to_cqe(const Qp& qp, const SendOp& op) { return qp.cs_req && op.signaled && op.len && op.len <= qp.cs_req; }

void handle_read_resp(Qp& qp, const Packet& p) {
    QpEngine& e = *qp.eng;
    for (SendOp& op : e.outstanding) {
        if (op.done || op.opcode != MLX5_OPCODE_RDMA_READ)
            continue;
        const int32_t d = psn_diff(p.h.psn, op.first_psn);
        if (d < 0 || d >= static_cast<int32_t>(op.npkts))
            continue;
        if (!response_in_order(qp, op))
            return;
        const uint32_t mtu = qp_mtu(qp);
        if (static_cast<uint32_t>(d) * mtu != op.read_got) {
            // a response was lost (or this one repeats): ask once for the rest
            // (again every 64 of them: the repeated request may be lost too)
            if (static_cast<uint32_t>(d) * mtu > op.read_got && (op.gap_at != op.read_got || ++op.gap_seen % 64 == 0)) {
                op.gap_at = op.read_got;
                op.gap_seen = 0;
                UVSIM_TRACE("qpn 0x%x: read response psn %u missing: requesting again", qp.qpn,
                            psn_add(op.first_psn, op.read_got / mtu));
                send_request(qp, op);
            }
            return;
        }
        const uint8_t o = p.h.opcode & 0x1f;
        const bool last = o == OP_READ_RESP_LAST || o == OP_READ_RESP_ONLY;
        if (p.h.payload_len != (last ? op.len - op.read_got : mtu) || (!last && d + 1 == int32_t(op.npkts))) {
            fail_head(qp, MLX5_CQE_SYNDROME_BAD_RESP_ERR);
            return;
        }
        if (result_to_cqe(qp, op)) {
            op.data.assign(p.payload, p.payload + p.h.payload_len);  // the one response
            op.in_cqe = true;
        } else if (uint8_t syn = scatter(qp, op.sges, op.read_got, p.payload, p.h.payload_len)) {
            implicit_ack_before(qp, op);
            fail_head(qp, syn);
            return;
        }
        op.read_got += p.h.payload_len;
        advance_una(qp, psn_add(p.h.psn, 1));
        // data arriving is progress even when a later ACK moved una already
        e.retries = qp.retry_cnt;
        arm_timer(qp);
        if (last) {
            op.done = true;
            implicit_ack_before(qp, op);
            ack_through(qp, e.una);
            retire(qp);
        }
        return;
    }
}

void handle_atomic_ack(Qp& qp, const Packet& p) {
    QpEngine& e = *qp.eng;
    for (SendOp& op : e.outstanding) {
        if (op.done || op.first_psn != p.h.psn)
            continue;
        if (op.opcode != MLX5_OPCODE_ATOMIC_CS && op.opcode != MLX5_OPCODE_ATOMIC_FA)
            return;
        if (!response_in_order(qp, op))
            return;
        implicit_ack_before(qp, op);
        const auto* orig = reinterpret_cast<const uint8_t*>(&p.h.orig);
        if (result_to_cqe(qp, op)) {
            op.data.assign(orig, orig + 8);
            op.in_cqe = true;
        } else if (uint8_t syn = scatter(qp, op.sges, 0, orig, 8)) {
            fail_head(qp, syn);
            return;
        }
        op.done = true;
        advance_una(qp, psn_add(p.h.psn, 1));
        ack_through(qp, e.una);
        retire(qp);
        return;
    }
}

bool timers(Qp& qp) {
    QpEngine& e = *qp.eng;
    if (!rc_like(qp) || qp.state != IBV_QPS_RTS || e.outstanding.empty())
        return false;
    const uint64_t t = now_ns();
    if (e.rnr_until) {
        if (t < e.rnr_until)
            return false;
        e.rnr_until = 0;
        go_back(qp, e.rnr_psn, false);
        return true;
    }
    if (!e.deadline || t < e.deadline)
        return false;
    // A timeout means the peer did not answer in time, not that this model
    // thread was descheduled: with packets still waiting in our socket or in
    // the outgoing queue, those come first (they may be the answer).
    if ((pending_count() || wire_backlog()) && t - e.deadline < 4 * timeout_ns(qp))
        return false;
    if (e.retries <= 0) {
        UVSIM_TRACE("qpn 0x%x: transport retries exhausted", qp.qpn);
        fail_head(qp, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
        return true;
    }
    --e.retries;
    UVSIM_TRACE("qpn 0x%x: timeout, retransmitting from psn %u (%d retries left)", qp.qpn, e.una, e.retries);
    go_back(qp, e.una, true);
    // A second timeout in a row: the first packet goes out twice. A lossy
    // link that drops packets periodically (the drop_every fault) could
    // otherwise hit the same retransmission round after round.
    e.dup_head = e.retries < qp.retry_cnt - 1;
    return true;
}

bool poll_sq(Qp& qp) {
    QpEngine& e = *qp.eng;
    if (!qp.dbrec || !qp.sq_wqe_cnt)
        return false;
    const uint16_t pi = static_cast<uint16_t>(be32toh(__atomic_load_n(&qp.dbrec[1], __ATOMIC_ACQUIRE)) & 0xffff);
    bool work = false;
    uint8_t w[64 * 64];
    const bool rc = rc_like(qp);
    while (e.sq_ci != pi) {
        if (qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_ERR)
            break;
        if (qp.state != IBV_QPS_ERR) {
            if (e.sq_stalled || pending_count() > kPendingMax)
                break;  // a bad WQE waits for its turn, or the wire is backed up
            if (rc && (e.outstanding.size() >= 512 || psn_diff(e.next_psn, e.una) > (1 << 22)))
                break;  // window full: wait for acknowledgements
        }
        size_t size = 0;
        uint32_t nbb = 1;
        SendOp op;
        uint8_t syn = 0;
        if (!read_wqe(qp, e.sq_ci, w, size, nbb) || nbb > static_cast<uint16_t>(pi - e.sq_ci)) {
            // ds 0, larger than the ring, or reaching past what the doorbell
            // record says was posted: a malformed WQE
            op.wqe_idx = e.sq_ci;
            mlx5_wqe_ctrl_seg ctrl;
            memcpy(&ctrl, w, sizeof ctrl);
            op.opcode = be32toh(ctrl.opmod_idx_opcode) & 0xff;
            syn = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
            size = 16;
            nbb = 1;
        } else {
            syn = parse_send(qp, w, size, op);
        }
        e.sq_ci = static_cast<uint16_t>(e.sq_ci + nbb);
        work = true;
        UVSIM_TRACE("WQE qpn 0x%x idx %u opcode 0x%02x ds %zu len %u%s%s: %s", qp.qpn, op.wqe_idx, op.opcode, size / 16,
                    op.len, op.signaled ? " signaled" : "", syn ? " (bad)" : "",
                    g_trace_on ? hex(w, size).c_str() : "");
        if (qp.state == IBV_QPS_ERR) {
            req_complete(qp, op, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
            continue;
        }
        if (!syn && qp.qp_type == IBV_QPT_UD && op.len > mtu_bytes(pcfg(qp).active_mtu))
            syn = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
        if (!syn && op.opcode == MLX5_OPCODE_UMR)
            syn = execute_umr(qp, op);  // in its turn: the WQEs before it are under way
        if (syn) {
            if (rc && !e.outstanding.empty()) {
                // completions stay in order: it fails when those before it finished
                op.local_err = syn;
                op.done = true;
                e.sq_stalled = true;
                e.outstanding.push_back(std::move(op));
                retire(qp);
                return true;
            }
            req_complete(qp, op, syn);
            set_error(qp);
            return true;
        }
        if (op.opcode == MLX5_OPCODE_NOP || op.opcode == MLX5_OPCODE_UMR) {
            if (rc && !e.outstanding.empty()) {
                op.done = true;
                e.outstanding.push_back(std::move(op));
            } else {
                req_complete(qp, op);
            }
            continue;
        }
        const uint32_t mtu = qp_mtu(qp);
        op.npkts = op.opcode == MLX5_OPCODE_ATOMIC_CS || op.opcode == MLX5_OPCODE_ATOMIC_FA
            ? 1
            : std::max<uint32_t>(1, (op.len + mtu - 1) / mtu);
        op.first_psn = e.next_psn;
        e.next_psn = psn_add(e.next_psn, op.npkts);
        if (rc) {
            if (e.outstanding.empty()) {
                e.retries = qp.retry_cnt;
                e.rnr_retries = qp.rnr_retry;
            }
            e.outstanding.push_back(std::move(op));
        } else if (qp.qp_type == IBV_QPT_RAW_PACKET) {
            send_frame(qp, op);
            req_complete(qp, op);
        } else {
            for (uint32_t i = 0; i < op.npkts; ++i)
                send_packet(qp, op, i, false);
            req_complete(qp, op);
        }
    }
    if (rc)
        work |= pump(qp);
    return work;
}

// ------------------------------------------------------------- responder

// Takes the next receive WQE (RQ or SRQ). False when none is posted.
// Takes the next WQE of an SRQ. False when none is posted.
bool take_srq(Srq& s, RecvState& r) {
    r = RecvState{};
    r.srq = &s;
    const uint16_t posted = static_cast<uint16_t>(be32toh(__atomic_load_n(&s.dbrec[0], __ATOMIC_ACQUIRE)) & 0xffff);
    if (posted == s.consumed)
        return false;
    const uint8_t* w = reinterpret_cast<const uint8_t*>(s.buf) + (size_t(s.head) << s.wqe_shift);
    mlx5_wqe_srq_next_seg nx;
    memcpy(&nx, w, sizeof nx);
    r.wqe_index = s.head;
    for (uint32_t i = 0; i < s.max_sge; ++i) {
        mlx5_wqe_data_seg d;
        memcpy(&d, w + 16 + 16 * i, sizeof d);
        if (be32toh(d.lkey) == MLX5_INVALID_LKEY)
            break;
        r.sges.push_back({be32toh(d.lkey), be64toh(d.addr), be32toh(d.byte_count)});
    }
    s.head = be16toh(nx.next_wqe_index) & static_cast<uint16_t>(s.wqe_cnt - 1);
    ++s.consumed;
    r.from_srq = true;
    r.active = true;
    const uint16_t left = static_cast<uint16_t>(posted - s.consumed);
    if (s.limit_armed && left < s.limit) {
        s.limit_armed = false;
        s.limit = 0;  // one-shot: query_srq shows it disarmed
        ++s.events_reported;
        if (s.ctx)
            s.ctx->async_event(s.user_handle, IBV_EVENT_SRQ_LIMIT_REACHED);
    }
    return true;
}

// Takes the next receive WQE (RQ or SRQ; for an XRC target QP, of the XRC
// SRQ the request names). False when none is posted.
bool take_recv(Qp& qp, RecvState& r, Srq* xsrq = nullptr) {
    if (Srq* sp = xsrq ? xsrq : qp.srq)
        return take_srq(*sp, r);
    r = RecvState{};
    QpEngine& e = *qp.eng;
    if (!qp.rq_wqe_cnt)
        return false;
    const uint16_t posted = static_cast<uint16_t>(be32toh(__atomic_load_n(&qp.dbrec[0], __ATOMIC_ACQUIRE)) & 0xffff);
    if (posted == e.rq_ci)
        return false;
    const uint32_t idx = e.rq_ci & (qp.rq_wqe_cnt - 1);
    const uint8_t* w = reinterpret_cast<const uint8_t*>(qp.buf) + (size_t(idx) << qp.rq_wqe_shift);
    const uint32_t nseg = (1u << qp.rq_wqe_shift) / 16;
    for (uint32_t i = 0; i < nseg; ++i) {
        mlx5_wqe_data_seg d;
        memcpy(&d, w + 16 * i, sizeof d);
        if (be32toh(d.lkey) == MLX5_INVALID_LKEY)
            break;
        r.sges.push_back({be32toh(d.lkey), be64toh(d.addr), be32toh(d.byte_count)});
    }
    r.wqe_index = static_cast<uint16_t>(idx);
    ++e.rq_ci;
    r.active = true;
    return true;
}

void recv_error(Qp& qp, RecvState& r, uint8_t syndrome) {
    CqeInfo ci{};
    ci.opcode = MLX5_CQE_RESP_ERR;
    ci.syndrome = syndrome;
    ci.wqe_counter = r.wqe_index;
    ci.srq = r.srq;
    cqe_write(*recv_cq_of(qp, r.srq), qp, ci);
    r.active = false;
}

// Responses leave in request order: an acknowledgement waits behind the read
// responses still queued.
void respond(Qp& qp, Packet& a) {
    QpEngine& e = *qp.eng;
    if (e.reads.empty()) {
        xmit(a);
        return;
    }
    QpEngine::ReadJob j;
    j.hdr_only = true;
    j.hdr = a.h;
    j.hdr.payload_len = 0;
    e.reads.push_back(j);
}

void send_ack(Qp& qp, const Packet& req, uint8_t syndrome, uint32_t psn) {
    Packet a{};
    a.h.opcode = transport_of(qp) | OP_ACK;
    a.h.src_qpn = qp.qpn;
    a.h.dest_qpn = qp.dest_qpn;
    a.h.psn = psn;
    a.h.syndrome = syndrome;
    a.h.msn = qp.eng->msn;
    fill_addr(qp, qp.av, a);
    (void)req;
    respond(qp, a);
}

// The 40 bytes a UD receive gets ahead of the payload when the packet had a
// GRH: the network header as it travelled. IB and RoCE v1: the GRH
// (IPv6-like: version 6, traffic class, flow label, PayLen = BTH + DETH
// [+ ImmDt] + payload + pad + ICRC, next header 0x1b, hop limit, SGID,
// DGID). RoCE v2: the IP header of the UDP datagram; for IPv4-mapped GIDs an
// IPv4 header in the last 20 bytes (the first 20 left as they were), else an
// IPv6 header with next header 17 (UDP).
void grh_area(const Packet& p, uint8_t grh[40], bool& ipv4_only) {
    memset(grh, 0, 40);
    ipv4_only = false;
    const bool imm = (p.h.opcode & 0x1f) == OP_SEND_ONLY_IMM;
    const uint32_t ib_len = 12 + 8 + (imm ? 4 : 0) + ((p.h.payload_len + 3u) & ~3u) + 4;
    const bool v2 = p.h.flags & kFlagRoceV2;
    static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (v2 && !memcmp(p.h.sgid, v4_prefix, 12) && !memcmp(p.h.dgid, v4_prefix, 12)) {
        uint8_t* h = grh + 20;
        const uint16_t total = static_cast<uint16_t>(20 + 8 + ib_len);
        h[0] = 0x45;
        h[1] = p.h.tclass;
        h[2] = static_cast<uint8_t>(total >> 8);
        h[3] = static_cast<uint8_t>(total);
        h[6] = 0x40;  // don't fragment
        h[8] = p.h.hop_limit;
        h[9] = 17;  // UDP
        memcpy(h + 12, p.h.sgid + 12, 4);
        memcpy(h + 16, p.h.dgid + 12, 4);
        uint32_t sum = 0;
        for (int i = 0; i < 20; i += 2)
            sum += uint32_t(h[i]) << 8 | h[i + 1];
        while (sum >> 16)
            sum = (sum & 0xffff) + (sum >> 16);
        const uint16_t csum = static_cast<uint16_t>(~sum);
        h[10] = static_cast<uint8_t>(csum >> 8);
        h[11] = static_cast<uint8_t>(csum);
        ipv4_only = true;
        return;
    }
    const uint32_t w0 = htobe32((6u << 28) | (uint32_t(p.h.tclass) << 20) | (p.h.flow_label & 0xfffff));
    memcpy(grh, &w0, 4);
    const uint16_t plen = htobe16(static_cast<uint16_t>(v2 ? ib_len + 8 : ib_len));
    memcpy(grh + 4, &plen, 2);
    grh[6] = v2 ? 17 : 0x1b;
    grh[7] = p.h.hop_limit;
    memcpy(grh + 8, p.h.sgid, 16);
    memcpy(grh + 24, p.h.dgid, 16);
}

void ud_receive(Qp& qp, const Packet& p) {
    if (qp.state != IBV_QPS_RTR && qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD)
        return;
    if (p.h.qkey != qp.qkey) {
        UVSIM_TRACE("qpn 0x%x: Q_Key 0x%x != 0x%x: dropped", qp.qpn, p.h.qkey, qp.qkey);
        return;
    }
    RecvState r;
    if (!take_recv(qp, r)) {
        UVSIM_TRACE("qpn 0x%x: no receive WQE: UD packet dropped", qp.qpn);
        return;
    }
    const bool grh = p.h.flags & kFlagGrh;
    if (sge_total(r.sges) < 40u + p.h.payload_len) {
        recv_error(qp, r, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
        set_error(qp);
        return;
    }
    if (grh) {
        uint8_t g[40];
        bool ipv4_only;
        grh_area(p, g, ipv4_only);
        if (uint8_t syn = ipv4_only ? scatter(qp, r.sges, 20, g + 20, 20) : scatter(qp, r.sges, 0, g, 40)) {
            recv_error(qp, r, syn);
            set_error(qp);
            return;
        }
    }
    if (uint8_t syn = scatter(qp, r.sges, 40, p.payload, p.h.payload_len)) {
        recv_error(qp, r, syn);
        set_error(qp);
        return;
    }
    CqeInfo ci{};
    const uint8_t o = p.h.opcode & 0x1f;
    ci.opcode = o == OP_SEND_ONLY_IMM ? MLX5_CQE_RESP_SEND_IMM : MLX5_CQE_RESP_SEND;
    ci.imm = p.h.imm;
    ci.byte_cnt = 40 + p.h.payload_len;
    ci.wqe_counter = r.wqe_index;
    ci.src_qpn = p.h.src_qpn;
    ci.grh = grh;
    ci.slid = p.h.slid;
    ci.sl = p.h.sl;
    ci.solicited = p.h.flags & kFlagSolicited;
    ci.srq = r.srq;
    complete(qp, *qp.recv_cq, ci);
}

void responder_fatal(Qp& qp, const Packet& p, uint8_t nak, uint32_t event) {
    qp.eng->reads.clear();  // the QP stops answering; the NAK goes out now
    if (rc_like(qp))
        send_ack(qp, p, nak, p.h.psn);
    if (qp.eng->recv.active)
        recv_error(qp, qp.eng->recv,
                   nak == AETH_NAK_INV_REQ ? MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR : MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
    if (qp.ctx && event) {
        qp.ctx->async_event(qp.user_handle, event);
        ++qp.events_reported;
    }
    set_error(qp);
}

// RC/UC request packets
// The XRC SRQ a request to an XRC target QP names: one of the QP's domain
// (on this host's process; null otherwise).
Srq* xrc_srq_of(const Qp& qp, uint32_t srqn) {
    for (Srq* s : sim().srqs)
        if (s->srqn == srqn && s->xrc)
            return s->xrc == qp.xrc ? s : nullptr;
    return nullptr;
}

// An XRC SRQ of another process on the simulated host in the target QP's
// domain (one backed by a file: <run_dir>/xsrq/<srqn> holds its key).
bool xrc_remote_srq(const Qp& qp, uint32_t srqn) {
    if ((srqn >> 16) == sim().slot || !qp.xrc)
        return false;
    const std::string key = xrc_domain_key(*qp.xrc);
    if (key.empty())
        return false;
    char path[16];
    snprintf(path, sizeof path, "/xsrq/%06x", srqn);
    const int fd = libc().open((cfg().run_dir + path).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char b[128];
    const ssize_t n = libc().read(fd, b, sizeof b);
    libc().close(fd);
    return n > 0 && std::string(b, static_cast<size_t>(n)) == key;
}

// Hands a request for another process's XRC SRQ to that process (inside
// the device: never lost, never reordered between two processes).
void xrc_relay_out(Qp& qp, const Packet& p) {
    Packet& r = scratch_packet();
    r.h = p.h;
    if (p.h.payload_len)
        memcpy(r.payload, p.payload, p.h.payload_len);
    r.h.flags |= kFlagXrcRelay;
    r.h.xrc_tgt_qpn = qp.qpn;
    r.h.dest_qpn = p.h.xrc_srqn;
    UVSIM_TRACE("qpn 0x%x: request psn %u for XRC SRQ 0x%x handed to its process", qp.qpn, p.h.psn, p.h.xrc_srqn);
    xmit(r);
}

void responder(Qp& qp, const Packet& p) {
    QpEngine& e = *qp.eng;
    const bool rc = rc_like(qp);
    if (qp.state != IBV_QPS_RTR && qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD)
        return;
    if (p.h.src_qpn != qp.dest_qpn)
        return;  // not our connection
    if (qp.state == IBV_QPS_RTR && !e.comm_est) {
        // the first packet of the connection while still in RTR:
        // Communication Established, once per connection
        e.comm_est = true;
        if (qp.ctx) {
            qp.ctx->async_event(qp.user_handle, IBV_EVENT_COMM_EST);
            ++qp.events_reported;
        }
    }
    const uint8_t o = p.h.opcode & 0x1f;
    const int32_t d = psn_diff(p.h.psn, e.epsn);
    if (rc && d < 0) {
        // duplicate: acknowledge again, re-read, or replay the atomic
        if (o == OP_READ_REQUEST) {
            // re-execute below with the old PSN (idempotent)
        } else if (o == OP_CMP_SWAP || o == OP_FETCH_ADD) {
            // executed already: answer with the saved result, never twice
            for (const QpEngine::AtomicDone& a : e.atomics)
                if (a.psn == p.h.psn) {
                    Packet& r = scratch_packet();
                    memset(&r.h, 0, sizeof r.h);
                    r.h.opcode = transport_of(qp) | OP_ATOMIC_ACK;
                    r.h.src_qpn = qp.qpn;
                    r.h.dest_qpn = qp.dest_qpn;
                    r.h.psn = p.h.psn;
                    r.h.msn = e.msn;
                    r.h.orig = a.orig;
                    fill_addr(qp, qp.av, r);
                    respond(qp, r);
                    break;
                }
            return;
        } else {
            // a send or write seen before: acknowledge what arrived (once per
            // requested acknowledgement, not per packet)
            if (p.h.flags & kFlagAckReq)
                send_ack(qp, p, AETH_ACK, psn_add(e.epsn, 0xffffff));
            return;
        }
    } else if (d > 0) {
        if (rc && !e.nak_sent) {
            e.nak_sent = true;
            send_ack(qp, p, AETH_NAK_PSN_SEQ, e.epsn);
        }
        if (!rc) {
            // UC: a lost packet ends the message being received; its receive
            // WQE stays taken and the next message goes into it
            if (e.recv.active) {
                e.recv.active = false;
                e.recv.held = true;
                e.recv.got = 0;
            }
            e.w_active = false;
            e.epsn = p.h.psn;
        } else {
            return;
        }
    }
    Srq* xsrq = nullptr;
    bool relay = false;
    if (qp.qp_type == IBV_QPT_XRC_RECV) {
        // XRCETH: an XRC SRQ of the target QP's domain, whose PD guards the
        // keys of the request (a target QP has no PD of its own); in a
        // domain shared through a file it may be another process's
        xsrq = xrc_srq_of(qp, p.h.xrc_srqn);
        relay = !xsrq && xrc_remote_srq(qp, p.h.xrc_srqn);
        if (!xsrq && !relay) {
            UVSIM_TRACE("qpn 0x%x: XRC SRQ 0x%x is not in the QP's domain: NAK invalid request", qp.qpn, p.h.xrc_srqn);
            responder_fatal(qp, p, AETH_NAK_INV_REQ, IBV_EVENT_QP_REQ_ERR);
            return;
        }
        if (xsrq)
            qp.pd = xsrq->pd;
    }
    const bool first = o == OP_SEND_FIRST || o == OP_SEND_ONLY || o == OP_SEND_ONLY_IMM || o == OP_SEND_ONLY_INV ||
        o == OP_WRITE_FIRST || o == OP_WRITE_ONLY || o == OP_WRITE_ONLY_IMM;
    const bool last = o == OP_SEND_LAST || o == OP_SEND_LAST_IMM || o == OP_SEND_ONLY || o == OP_SEND_ONLY_IMM ||
        o == OP_SEND_LAST_INV || o == OP_SEND_ONLY_INV || o == OP_WRITE_LAST || o == OP_WRITE_LAST_IMM ||
        o == OP_WRITE_ONLY || o == OP_WRITE_ONLY_IMM;
    const bool is_send = o <= OP_SEND_ONLY_IMM || o == OP_SEND_LAST_INV || o == OP_SEND_ONLY_INV;
    const bool is_write = o >= OP_WRITE_FIRST && o <= OP_WRITE_ONLY_IMM;
    const bool with_imm =
        o == OP_SEND_LAST_IMM || o == OP_SEND_ONLY_IMM || o == OP_WRITE_LAST_IMM || o == OP_WRITE_ONLY_IMM;
    if (relay) {
        // the SRQ's process takes the receive WQE and completes it (see
        // xrc_relay_in); the transport stays here: the sequence and the
        // acknowledgement. RDMA through another process's SRQ is not
        // modelled.
        if (!is_send) {
            UVSIM_TRACE("qpn 0x%x: RDMA via XRC SRQ 0x%x of another process: not modelled", qp.qpn, p.h.xrc_srqn);
            responder_fatal(qp, p, AETH_NAK_INV_REQ, IBV_EVENT_QP_REQ_ERR);
            return;
        }
        xrc_relay_out(qp, p);
        e.nak_sent = false;
        e.epsn = psn_add(p.h.psn, 1);
        if (last)
            ++e.msn;
        if (last || (p.h.flags & kFlagAckReq))
            send_ack(qp, p, AETH_ACK, p.h.psn);
        return;
    }
    if (is_send) {
        if (first) {
            if (e.recv.held) {
                e.recv.held = false;
                e.recv.active = true;
                e.recv.got = 0;
            } else if (!take_recv(qp, e.recv, xsrq)) {
                if (rc) {
                    // every attempt at the expected PSN gets its RNR NAK; what
                    // follows it is dropped silently
                    e.nak_sent = true;
                    send_ack(qp, p, static_cast<uint8_t>(AETH_RNR_NAK | (qp.min_rnr_timer & 0x1f)), p.h.psn);
                    UVSIM_TRACE("qpn 0x%x: no receive WQE: RNR NAK psn %u", qp.qpn, p.h.psn);
                }
                return;
            }
        } else if (!e.recv.active) {
            if (rc)
                responder_fatal(qp, p, AETH_NAK_INV_REQ, IBV_EVENT_QP_REQ_ERR);
            return;
        }
        e.nak_sent = false;
        e.recv.cqe_len = 0;
        // a whole message small enough goes into the CQE (the provider
        // copies it out); it must still fit the receive WQE
        const bool to_cqe = first && last && qp.cs_res && p.h.payload_len && p.h.payload_len <= qp.cs_res;
        uint8_t syn = 0;
        if (!to_cqe) {
            syn = scatter(qp, e.recv.sges, e.recv.got, p.payload, p.h.payload_len);
        } else if (sge_total(e.recv.sges) < p.h.payload_len) {
            syn = MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
        } else {
            memcpy(e.recv.cqe_data, p.payload, p.h.payload_len);
            e.recv.cqe_len = p.h.payload_len;
        }
        if (syn) {
            // too long for the receive buffer: NAK invalid request (the
            // requester sees REM_INV_REQ); a bad receive SGE: NAK remote
            // operational error (REM_OP)
            if (rc)
                send_ack(qp, p, syn == MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR ? AETH_NAK_INV_REQ : AETH_NAK_REM_OP,
                         p.h.psn);
            recv_error(qp, e.recv, syn);
            set_error(qp);
            return;
        }
        e.recv.got += p.h.payload_len;
        e.epsn = psn_add(p.h.psn, 1);
        if (rc && !last && (p.h.flags & kFlagAckReq))
            send_ack(qp, p, AETH_ACK, p.h.psn);
        if (last && (o == OP_SEND_LAST_INV || o == OP_SEND_ONLY_INV) && !remote_invalidate(qp, be32toh(p.h.imm))) {
            UVSIM_TRACE("qpn 0x%x: send with invalidate of key 0x%x refused", qp.qpn, be32toh(p.h.imm));
            responder_fatal(qp, p, AETH_NAK_INV_REQ, IBV_EVENT_QP_REQ_ERR);
            return;
        }
        if (last) {
            CqeInfo ci{};
            ci.opcode = with_imm                                   ? MLX5_CQE_RESP_SEND_IMM
                : (o == OP_SEND_LAST_INV || o == OP_SEND_ONLY_INV) ? MLX5_CQE_RESP_SEND_INV
                                                                   : MLX5_CQE_RESP_SEND;
            ci.imm = p.h.imm;
            ci.byte_cnt = static_cast<uint32_t>(e.recv.got);
            ci.wqe_counter = e.recv.wqe_index;
            ci.src_qpn = p.h.src_qpn;
            ci.slid = p.h.slid;
            ci.sl = p.h.sl;
            ci.grh = p.h.flags & kFlagGrh;
            ci.solicited = p.h.flags & kFlagSolicited;
            ci.srq = e.recv.srq;
            if (e.recv.cqe_len) {
                ci.scat = e.recv.cqe_data;
                ci.scat_len = e.recv.cqe_len;
                ci.scat_size = qp.cs_res;
            }
            e.recv.active = false;
            ++e.msn;
            // the ACK leaves before the CQE is visible: an application that
            // exits right after polling it must not strand its peer
            if (rc)
                send_ack(qp, p, AETH_ACK, p.h.psn);
            complete(qp, *recv_cq_of(qp, ci.srq), ci);
        }
        return;
    }
    if (is_write) {
        if (first) {
            uint64_t proc = 0;
            if (uint8_t nak = p.h.dma_len
                    ? resolve_remote(qp, p.h.rkey, p.h.va, p.h.dma_len, IBV_ACCESS_REMOTE_WRITE, proc)
                    : 0) {
                UVSIM_TRACE("qpn 0x%x: RDMA write rkey 0x%x va 0x%llx len %u refused", qp.qpn, p.h.rkey,
                            (unsigned long long)p.h.va, p.h.dma_len);
                if (rc)
                    responder_fatal(qp, p, nak, IBV_EVENT_QP_ACCESS_ERR);
                return;
            }
            e.w_active = true;
            e.w_proc = proc;
            e.w_va = p.h.va;
            e.w_rkey = p.h.rkey;
            e.w_left = p.h.dma_len;
            e.w_total = p.h.dma_len;
        } else if (!e.w_active) {
            if (rc)
                responder_fatal(qp, p, AETH_NAK_INV_REQ, IBV_EVENT_QP_REQ_ERR);
            return;
        }
        if (p.h.payload_len > e.w_left) {
            if (rc)
                responder_fatal(qp, p, AETH_NAK_INV_REQ, IBV_EVENT_QP_REQ_ERR);
            return;
        }
        if (with_imm) {
            if (e.recv.held) {
                e.recv.held = false;
                e.recv.active = true;
            } else if (!take_recv(qp, e.recv, xsrq)) {
                if (rc) {
                    e.nak_sent = true;
                    send_ack(qp, p, static_cast<uint8_t>(AETH_RNR_NAK | (qp.min_rnr_timer & 0x1f)), p.h.psn);
                }
                return;
            }
        }
        e.nak_sent = false;
        // the MR is looked up again for every packet: one deregistered while
        // the write is under way must stop it, not let it land in memory the
        // application may have freed
        uint64_t wproc = e.w_proc;
        if (p.h.payload_len && !first &&
            resolve_remote(qp, e.w_rkey, e.w_va, p.h.payload_len, IBV_ACCESS_REMOTE_WRITE, wproc)) {
            if (rc)
                responder_fatal(qp, p, AETH_NAK_REM_ACCESS, IBV_EVENT_QP_ACCESS_ERR);
            return;
        }
        e.w_proc = wproc;
        if (p.h.payload_len && !app_write(e.w_proc, p.payload, p.h.payload_len)) {
            if (rc)
                responder_fatal(qp, p, AETH_NAK_REM_ACCESS, IBV_EVENT_QP_ACCESS_ERR);
            return;
        }
        e.w_proc += p.h.payload_len;
        e.w_va += p.h.payload_len;
        e.w_left -= p.h.payload_len;
        e.epsn = psn_add(p.h.psn, 1);
        if (rc && !last && (p.h.flags & kFlagAckReq))
            send_ack(qp, p, AETH_ACK, p.h.psn);
        if (last) {
            e.w_active = false;
            ++e.msn;
            if (rc)
                send_ack(qp, p, AETH_ACK, p.h.psn);  // before the CQE, as for sends
            if (with_imm) {
                CqeInfo ci{};
                ci.opcode = MLX5_CQE_RESP_WR_IMM;
                ci.imm = p.h.imm;
                ci.byte_cnt = static_cast<uint32_t>(e.w_total);
                ci.wqe_counter = e.recv.wqe_index;
                ci.src_qpn = p.h.src_qpn;
                ci.slid = p.h.slid;
                ci.grh = p.h.flags & kFlagGrh;
                ci.solicited = p.h.flags & kFlagSolicited;
                ci.srq = e.recv.srq;
                e.recv.active = false;
                complete(qp, *recv_cq_of(qp, ci.srq), ci);
            }
        }
        return;
    }
    if (!rc)
        return;
    if (o == OP_READ_REQUEST) {
        uint64_t proc = 0;
        if (uint8_t nak =
                p.h.dma_len ? resolve_remote(qp, p.h.rkey, p.h.va, p.h.dma_len, IBV_ACCESS_REMOTE_READ, proc) : 0) {
            responder_fatal(qp, p, nak, IBV_EVENT_QP_ACCESS_ERR);
            return;
        }
        const uint32_t mtu = mtu_bytes(qp.path_mtu);
        const uint32_t n = std::max<uint32_t>(1, (p.h.dma_len + mtu - 1) / mtu);
        if (d < 0) {
            // asked again (responses were lost): what was queued from this
            // PSN on is replaced by the new request
            while (!e.reads.empty() && !e.reads.back().hdr_only &&
                   psn_diff(psn_add(e.reads.back().psn, e.reads.back().n), p.h.psn) > 0)
                e.reads.pop_back();
        }
        QpEngine::ReadJob j;
        j.psn = p.h.psn;
        j.proc = proc;
        j.va = p.h.va;
        j.rkey = p.h.rkey;
        j.len = p.h.dma_len;
        j.n = n;
        j.msn = d >= 0 ? e.msn + 1 : e.msn;
        e.reads.push_back(j);
        if (d >= 0) {
            e.epsn = psn_add(p.h.psn, n);
            ++e.msn;
        }
        e.nak_sent = false;
        return;
    }
    if (o == OP_CMP_SWAP || o == OP_FETCH_ADD) {
        uint64_t proc = 0;
        if ((p.h.va & 7) != 0) {
            responder_fatal(qp, p, AETH_NAK_INV_REQ, IBV_EVENT_QP_REQ_ERR);
            return;
        }
        if (uint8_t nak = resolve_remote(qp, p.h.rkey, p.h.va, 8, IBV_ACCESS_REMOTE_ATOMIC, proc)) {
            responder_fatal(qp, p, nak, IBV_EVENT_QP_ACCESS_ERR);
            return;
        }
        uint64_t orig;
        if (!app_read(&orig, proc, 8)) {
            responder_fatal(qp, p, AETH_NAK_REM_ACCESS, IBV_EVENT_QP_ACCESS_ERR);
            return;
        }
        uint64_t nv = orig;
        if (o == OP_CMP_SWAP) {
            if (orig == p.h.compare)
                nv = p.h.swap_add;
        } else {
            nv = orig + p.h.swap_add;
        }
        if (nv != orig && !app_write(proc, &nv, 8)) {
            responder_fatal(qp, p, AETH_NAK_REM_ACCESS, IBV_EVENT_QP_ACCESS_ERR);
            return;
        }
        e.atomics[e.atomic_next++ % 16] = {p.h.psn, orig};
        e.epsn = psn_add(p.h.psn, 1);
        ++e.msn;
        e.nak_sent = false;
        Packet a{};
        a.h.opcode = transport_of(qp) | OP_ATOMIC_ACK;
        a.h.src_qpn = qp.qpn;
        a.h.dest_qpn = qp.dest_qpn;
        a.h.psn = p.h.psn;
        a.h.msn = e.msn;
        a.h.orig = orig;
        fill_addr(qp, qp.av, a);
        respond(qp, a);
        return;
    }
    responder_fatal(qp, p, AETH_NAK_INV_REQ, IBV_EVENT_QP_REQ_ERR);
}

// Sends queued read responses while the wire takes them.
bool pump_reads(Qp& qp) {
    QpEngine& e = *qp.eng;
    if (e.reads.empty())
        return false;
    if (qp.state != IBV_QPS_RTR && qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) {
        e.reads.clear();
        return false;
    }
    const uint32_t mtu = mtu_bytes(qp.path_mtu);
    Packet& r = scratch_packet();
    bool sent = false;
    for (int budget = 256; budget > 0 && !e.reads.empty() && pending_count() < kPendingMax; --budget) {
        QpEngine::ReadJob& j = e.reads.front();
        if (j.hdr_only) {
            r.h = j.hdr;
            e.reads.pop_front();
            xmit(r);
            sent = true;
            continue;
        }
        memset(&r.h, 0, sizeof r.h);
        r.h.src_qpn = qp.qpn;
        r.h.dest_qpn = qp.dest_qpn;
        fill_addr(qp, qp.av, r);
        const uint32_t i = j.i;
        r.h.opcode = transport_of(qp) |
            (j.n == 1           ? OP_READ_RESP_ONLY
                 : i == 0       ? OP_READ_RESP_FIRST
                 : i == j.n - 1 ? OP_READ_RESP_LAST
                                : OP_READ_RESP_MIDDLE);
        r.h.psn = psn_add(j.psn, i);
        r.h.payload_len = static_cast<uint16_t>(j.len ? std::min(mtu, j.len - i * mtu) : 0);
        r.h.msn = j.msn;
        uint64_t src = j.proc + uint64_t(i) * mtu;
        if (r.h.payload_len &&
            (resolve_remote(qp, j.rkey, j.va + uint64_t(i) * mtu, r.h.payload_len, IBV_ACCESS_REMOTE_READ, src) ||
             !app_read(r.payload, src, r.h.payload_len))) {
            // the memory went away under a registered MR
            e.reads.clear();
            r.h.psn = j.psn;
            responder_fatal(qp, r, AETH_NAK_REM_ACCESS, IBV_EVENT_QP_ACCESS_ERR);
            return true;
        }
        xmit(r);
        sent = true;
        if (++j.i == j.n)
            e.reads.pop_front();
    }
    return sent;
}

// ------------------------------------------------- XRC across processes
//
// A request that reached an XRC target QP of another process, for an XRC
// SRQ of this one (a domain shared through a file): this side takes the
// SRQ's WQEs, scatters and writes the CQE to the SRQ's CQ, as the target
// QP would. Requests wait in arrival order while the SRQ is empty (the
// target acknowledged them: no RNR across processes).

struct XrcRelay {
    std::deque<std::vector<uint8_t>> q;  // the requests waiting (header and payload)
    std::map<uint32_t, RecvState> streams;  // per target QP: the WQE being filled
    std::unique_ptr<Qp> proxy;  // the target QP as this side sees it (number, the SRQ's PD)
};

std::map<Srq*, XrcRelay>& relays() {
    static auto* m = new std::map<Srq*, XrcRelay>;
    return *m;
}

// False: the SRQ has no WQE for the message's start yet.
bool relay_one(Srq& s, XrcRelay& x, const Packet& p) {
    Qp& pq = *x.proxy;
    pq.qpn = p.h.xrc_tgt_qpn;
    const uint8_t o = p.h.opcode & 0x1f;
    const bool first = o == OP_SEND_FIRST || o == OP_SEND_ONLY || o == OP_SEND_ONLY_IMM || o == OP_SEND_ONLY_INV;
    const bool last = o == OP_SEND_LAST || o == OP_SEND_LAST_IMM || o == OP_SEND_ONLY || o == OP_SEND_ONLY_IMM ||
        o == OP_SEND_LAST_INV || o == OP_SEND_ONLY_INV;
    RecvState& st = x.streams[p.h.xrc_tgt_qpn];
    if (first && !take_srq(s, st))
        return false;
    if (!st.active)
        return true;  // the rest of a message that failed
    if (uint8_t syn = scatter(pq, st.sges, st.got, p.payload, p.h.payload_len)) {
        recv_error(pq, st, syn);
        return true;
    }
    st.got += p.h.payload_len;
    if (last) {
        CqeInfo ci{};
        ci.opcode = (o == OP_SEND_LAST_IMM || o == OP_SEND_ONLY_IMM) ? MLX5_CQE_RESP_SEND_IMM
            : (o == OP_SEND_LAST_INV || o == OP_SEND_ONLY_INV)       ? MLX5_CQE_RESP_SEND_INV
                                                                     : MLX5_CQE_RESP_SEND;
        ci.imm = p.h.imm;
        ci.byte_cnt = static_cast<uint32_t>(st.got);
        ci.wqe_counter = st.wqe_index;
        ci.src_qpn = p.h.src_qpn;
        ci.slid = p.h.slid;
        ci.sl = p.h.sl;
        ci.grh = p.h.flags & kFlagGrh;
        ci.solicited = p.h.flags & kFlagSolicited;
        ci.srq = &s;
        st.active = false;
        complete(pq, *s.cq, ci);
    }
    return true;
}

bool relay_pump(Srq& s, XrcRelay& x) {
    static Packet* p = new Packet;  // model thread only (under sim().mu)
    bool any = false;
    while (!x.q.empty()) {
        memcpy(p, x.q.front().data(), x.q.front().size());
        if (!relay_one(s, x, *p))
            break;
        x.q.pop_front();
        any = true;
    }
    return any;
}

void xrc_relay_in(const Packet& p) {
    Srq* s = nullptr;
    for (Srq* c : sim().srqs)
        if (c->srqn == p.h.dest_qpn && c->xrc && c->cq)
            s = c;
    if (!s) {
        UVSIM_TRACE("XRC request for SRQ 0x%x (via qpn 0x%x): no such SRQ here, dropped", p.h.dest_qpn,
                    p.h.xrc_tgt_qpn);
        return;
    }
    XrcRelay& x = relays()[s];
    if (!x.proxy) {
        x.proxy = std::make_unique<Qp>();
        x.proxy->qp_type = IBV_QPT_XRC_RECV;
        x.proxy->pd = s->pd;
        x.proxy->ctx = s->ctx;
    }
    const uint8_t* b = reinterpret_cast<const uint8_t*>(&p);
    x.q.emplace_back(b, b + sizeof p.h + p.h.payload_len);
    relay_pump(*s, x);
}

// ------------------------------------------------------- raw Ethernet

// The wire slots of every process on the simulated host (the sockets in
// <run_dir>/wire), re-read at most every 20 ms.
const std::vector<uint32_t>& wire_slots() {
    static std::vector<uint32_t>& slots = *new std::vector<uint32_t>;
    static uint64_t read_at = 0;
    const uint64_t now = now_ns();
    if (read_at && now - read_at < 20000000ull)
        return slots;
    read_at = now;
    slots.clear();
    if (DIR* d = opendir((cfg().run_dir + "/wire").c_str())) {
        while (dirent* e = readdir(d)) {
            char* end = nullptr;
            if (e->d_name[0] != 's')
                continue;
            const unsigned long v = strtoul(e->d_name + 1, &end, 10);
            if (end && !*end && v >= 1 && v <= 255)
                slots.push_back(static_cast<uint32_t>(v));
        }
        closedir(d);
    }
    return slots;
}

// A raw packet QP's send: the frame leaves its port for every process
// (each one's model decides whether any of its ports and rules want it).
void send_frame(Qp& qp, const SendOp& op) {
    if (op.data.size() < 14) {
        UVSIM_TRACE("qpn 0x%x: %zu-byte frame (no Ethernet header): not sent", qp.qpn, op.data.size());
        return;
    }
    Packet& p = scratch_packet();
    memset(&p.h, 0, sizeof p.h);
    p.h.flags = kFlagEthFrame;
    p.h.src_qpn = qp.qpn;
    memcpy(p.h.sgid, pcfg(qp).mac, 6);
    // the sender's transport domain (its context): the port loops the frame
    // back to the rules of every other one
    p.h.rkey = sim().slot;
    p.h.va = reinterpret_cast<uintptr_t>(qp.ctx);
    p.h.payload_len = static_cast<uint16_t>(op.data.size());
    memcpy(p.payload, op.data.data(), op.data.size());
    UVSIM_TRACE("qpn 0x%x: frame of %zu bytes out of port %u: %s", qp.qpn, op.data.size(), port_of(qp),
                g_trace_on ? hex(op.data.data(), std::min<size_t>(op.data.size(), 64)).c_str() : "");
    for (uint32_t slot : wire_slots()) {
        p.h.dest_qpn = slot << 16;
        xmit(p);
    }
}

// The hash type the CQE reports: IPv4/IPv6 in bits 3:2, TCP/UDP in 7:6,
// for the fields the QP hashes and the frame has.
uint8_t rss_hash_type(const Qp& rss, const uint8_t* f, size_t len) {
    uint16_t et = len >= 14 ? uint16_t(f[12] << 8 | f[13]) : 0;
    size_t off = 14;
    if (et == 0x8100 && len >= 18)
        et = uint16_t(f[16] << 8 | f[17]), off = 18;
    uint8_t t = 0, proto = 0;
    if (et == 0x0800 && len >= off + 20 && (rss.rx_hash_fields & (MLX5_RX_HASH_SRC_IPV4 | MLX5_RX_HASH_DST_IPV4)))
        t |= 1 << 2, proto = f[off + 9];
    else if (et == 0x86dd && len >= off + 40 && (rss.rx_hash_fields & (MLX5_RX_HASH_SRC_IPV6 | MLX5_RX_HASH_DST_IPV6)))
        t |= 2 << 2, proto = f[off + 6];
    if (proto == 6 && (rss.rx_hash_fields & (MLX5_RX_HASH_SRC_PORT_TCP | MLX5_RX_HASH_DST_PORT_TCP)))
        t |= 1 << 6;
    if (proto == 17 && (rss.rx_hash_fields & (MLX5_RX_HASH_SRC_PORT_UDP | MLX5_RX_HASH_DST_PORT_UDP)))
        t |= 2 << 6;
    return t;
}

// A frame steered to an RSS QP: into the WQ the hash picks, completing on
// that WQ's CQ (WQE index, byte count, the WQ's number and user index).
void rss_receive(Qp& rss, const uint8_t* f, size_t len) {
    RwqIndTbl& t = *rss.ind_tbl;
    const uint32_t h = rss_hash(f, len, rss.rx_hash_fields, rss.rx_key);
    Wq& w = *t.wqs[h & (t.wqs.size() - 1)];
    if (w.state != IBV_WQS_RDY) {
        UVSIM_TRACE("RSS qpn 0x%x: hash 0x%08x -> wqn 0x%x, not ready: frame dropped", rss.qpn, h, w.wqn);
        return;
    }
    const uint16_t posted = static_cast<uint16_t>(be32toh(__atomic_load_n(&w.dbrec[0], __ATOMIC_ACQUIRE)) & 0xffff);
    if (posted == w.ci) {
        UVSIM_TRACE("RSS qpn 0x%x: hash 0x%08x -> wqn 0x%x, no receive WQE: frame dropped", rss.qpn, h, w.wqn);
        return;
    }
    const uint32_t idx = w.ci & (w.wqe_cnt - 1);
    const uint8_t* wqe = reinterpret_cast<const uint8_t*>(w.buf) + (size_t(idx) << w.wqe_shift);
    std::vector<Sge> sges;
    for (uint32_t i = 0; i < (1u << w.wqe_shift) / 16; ++i) {
        mlx5_wqe_data_seg d;
        memcpy(&d, wqe + 16 * i, sizeof d);
        if (be32toh(d.lkey) == MLX5_INVALID_LKEY)
            break;
        sges.push_back({be32toh(d.lkey), be64toh(d.addr), be32toh(d.byte_count)});
    }
    ++w.ci;
    CqeInfo ci{};
    ci.wqe_counter = static_cast<uint16_t>(idx);
    ci.wq = &w;
    uint8_t syn = sge_total(sges) < len ? MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR : 0;
    if (!syn) {
        // the WQ's buffers belong to its PD
        Pd* keep = rss.pd;
        rss.pd = w.pd;
        syn = scatter(rss, sges, 0, f, len);
        rss.pd = keep;
    }
    if (syn) {
        ci.opcode = MLX5_CQE_RESP_ERR;
        ci.syndrome = syn;
        cqe_write(*w.cq, rss, ci);
        w.state = IBV_WQS_ERR;
        UVSIM_TRACE("wqn 0x%x: receive error 0x%x: WQ to ERR", w.wqn, syn);
        return;
    }
    ci.opcode = MLX5_CQE_RESP_SEND;
    ci.byte_cnt = static_cast<uint32_t>(len);
    ci.rss_hash = h;
    ci.rss_hash_type = rss_hash_type(rss, f, len);
    UVSIM_TRACE("RSS qpn 0x%x: hash 0x%08x -> entry %u of %zu, wqn 0x%x", rss.qpn, h, h & unsigned(t.wqs.size() - 1),
                t.wqs.size(), w.wqn);
    complete(rss, *w.cq, ci);
}

// A frame steered to a raw packet QP: into its next receive WQE (RQ or
// SRQ), a RESP_SEND CQE with the frame's length.
void raw_receive(Qp& qp, const uint8_t* f, size_t len) {
    if (!qp.eng || (qp.state != IBV_QPS_RTR && qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD)) {
        UVSIM_TRACE("qpn 0x%x: not ready to receive: frame dropped", qp.qpn);
        return;
    }
    RecvState r;
    if (!take_recv(qp, r)) {
        UVSIM_TRACE("qpn 0x%x: no receive WQE: frame dropped", qp.qpn);
        return;
    }
    if (sge_total(r.sges) < len) {
        recv_error(qp, r, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
        set_error(qp);
        return;
    }
    if (uint8_t syn = scatter(qp, r.sges, 0, f, len)) {
        recv_error(qp, r, syn);
        set_error(qp);
        return;
    }
    CqeInfo ci{};
    ci.opcode = MLX5_CQE_RESP_SEND;
    ci.byte_cnt = static_cast<uint32_t>(len);
    ci.wqe_counter = r.wqe_index;
    ci.srq = r.srq;
    complete(qp, *qp.recv_cq, ci);
}

// A frame on the segment: every Ethernet port of this process's devices
// takes it; the port's flow rules pick the QPs. The port it left loops it
// back inside the NIC, to the QPs of other transport domains (contexts)
// only: a context's own frames do not come back to it (the TIR's
// self-loopback block).
void eth_receive(const Packet& p) {
    const uint8_t* f = p.payload;
    const size_t len = p.h.payload_len;
    for (Device& d : sim().devices) {
        for (size_t i = 0; i < d.cfg->ports.size(); ++i) {
            const PortCfg& pc = d.cfg->ports[i];
            if (!pc.ethernet || d.fatal || (i < d.port_state.size() && d.port_state[i] != IBV_PORT_ACTIVE))
                continue;
            const bool loopback = !memcmp(pc.mac, p.h.sgid, 6);
            std::vector<Flow*> to = steer_frame(d.index, static_cast<uint8_t>(i + 1), f, len);
            if (loopback && p.h.rkey == sim().slot)
                to.erase(
                    std::remove_if(to.begin(), to.end(),
                                   [&](const Flow* fl) { return reinterpret_cast<uintptr_t>(fl->qp->ctx) == p.h.va; }),
                    to.end());
            UVSIM_TRACE("frame of %zu bytes from qpn 0x%x at %s port %zu%s: %zu rule(s) take it", len, p.h.src_qpn,
                        d.cfg->name.c_str(), i + 1, loopback ? " (loopback)" : "", to.size());
            for (Flow* fl : to) {
                if (fl->qp->ind_tbl)
                    rss_receive(*fl->qp, f, len);
                else
                    raw_receive(*fl->qp, f, len);
            }
        }
    }
}

void dispatch(const Packet& p) {
    if (p.h.flags & kFlagCm) {
        ucma_receive(p);
        return;
    }
    if (p.h.flags & kFlagEthFrame) {
        eth_receive(p);
        return;
    }
    if (p.h.flags & kFlagXrcRelay) {
        xrc_relay_in(p);
        return;
    }
    auto it = sim().qps.find(p.h.dest_qpn);
    if (it == sim().qps.end())
        return;  // no such QP: dropped (the requester times out)
    Qp& qp = *it->second;
    if (!qp.eng)
        return;  // still in RESET
    if (!addressed_to(qp, p)) {
        UVSIM_TRACE("qpn 0x%x: packet for another port (dlid %u): dropped", qp.qpn, p.h.dlid);
        return;
    }
    const uint8_t tr = p.h.opcode & 0xe0;
    const uint8_t o = p.h.opcode & 0x1f;
    if (tr != transport_of(qp))
        return;
    if (tr == TRANSPORT_UD) {
        ud_receive(qp, p);
        return;
    }
    const bool response = o == OP_ACK || o == OP_ATOMIC_ACK || (o >= OP_READ_RESP_FIRST && o <= OP_READ_RESP_ONLY);
    // XRC: the initiator only requests, the target only responds
    if ((qp.qp_type == IBV_QPT_XRC_SEND && !response) || (qp.qp_type == IBV_QPT_XRC_RECV && response))
        return;
    if ((tr == TRANSPORT_RC || tr == TRANSPORT_XRC) && response) {
        if (qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD)
            return;
        if (p.h.src_qpn != qp.dest_qpn)
            return;
        if (o == OP_ACK)
            handle_ack(qp, p);
        else if (o == OP_ATOMIC_ACK)
            handle_atomic_ack(qp, p);
        else
            handle_read_resp(qp, p);
        return;
    }
    responder(qp, p);
}

void flush_all(Qp& qp) {
    if (!qp.eng)
        qp.eng = std::make_unique<QpEngine>();
    QpEngine& e = *qp.eng;
    while (!e.outstanding.empty()) {
        SendOp op = std::move(e.outstanding.front());
        e.outstanding.pop_front();
        req_complete(qp, op, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
    }
    e.deadline = 0;
    e.rnr_until = 0;
    e.sq_stalled = false;
    // posted but not yet taken send WQEs are flushed by poll_sq (ERR state)
    poll_sq(qp);
    if ((e.recv.active || e.recv.held) && !e.recv.from_srq)
        recv_error(qp, e.recv, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
    e.recv.active = e.recv.held = false;
    if (!qp.srq && qp.rq_wqe_cnt && qp.dbrec) {
        const uint16_t posted =
            static_cast<uint16_t>(be32toh(__atomic_load_n(&qp.dbrec[0], __ATOMIC_ACQUIRE)) & 0xffff);
        while (e.rq_ci != posted) {
            RecvState r{};
            r.wqe_index = static_cast<uint16_t>(e.rq_ci & (qp.rq_wqe_cnt - 1));
            ++e.rq_ci;
            recv_error(qp, r, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
        }
    }
}

bool poll_rq_error(Qp& qp) {
    // receives posted to a QP in the error state complete with flush errors
    if (qp.state != IBV_QPS_ERR || qp.srq || !qp.rq_wqe_cnt || !qp.dbrec)
        return false;
    QpEngine& e = *qp.eng;
    const uint16_t posted = static_cast<uint16_t>(be32toh(__atomic_load_n(&qp.dbrec[0], __ATOMIC_ACQUIRE)) & 0xffff);
    bool any = false;
    while (e.rq_ci != posted) {
        RecvState r{};
        r.wqe_index = static_cast<uint16_t>(e.rq_ci & (qp.rq_wqe_cnt - 1));
        ++e.rq_ci;
        recv_error(qp, r, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
        any = true;
    }
    return any;
}

void device_fatal() {
    for (Device& d : sim().devices)
        d.fatal = true;
    for (auto& [qpn, qp] : sim().qps)
        set_error(*qp);
    for (auto& [fd, c] : sim().files)
        if (c->fd == fd)  // once per file, not per dup of it
            c->async_event(0, IBV_EVENT_DEVICE_FATAL);
    UVSIM_TRACE("fault: device fatal");
}

// Hot-unplug: as a fatal error (every QP to error, DEVICE_FATAL to every
// context), then the kernel's disassociation: no command works any more
// and the device leaves sysfs and /dev.
void device_removed() {
    device_fatal();
    for (Device& d : sim().devices) {
        d.removed = true;
        sysfs_remove_device(d.index, d.cfg->name);
    }
    UVSIM_TRACE("fault: devices removed");
}

bool step() {
    bool work = false;
    // a snapshot (work may destroy QPs), kept between rounds: no allocation
    // once it has grown
    static std::vector<Qp*>& qps = *new std::vector<Qp*>;
    qps.clear();
    for (auto& [n, qp] : sim().qps)
        qps.push_back(qp);
    for (Qp* qp : qps) {
        if (!sim().qps.count(qp->qpn) || !qp->eng)
            continue;  // gone, or never modified (RESET: the device ignores it)
        work |= poll_sq(*qp);
        work |= pump_reads(*qp);
        work |= poll_rq_error(*qp);
        work |= timers(*qp);
    }
    for (auto& [s, x] : relays())
        work |= relay_pump(*s, x);
    if (g_overrun) {
        g_overrun = false;
        for (Qp* qp : qps)
            if (sim().qps.count(qp->qpn) && qp->eng &&
                ((qp->send_cq && qp->send_cq->overrun) || (qp->recv_cq && qp->recv_cq->overrun))) {
                UVSIM_TRACE("qpn 0x%x: its CQ overran", qp->qpn);
                set_error(*qp);
            }
    }
    zip_flush_all();
    work |= flush_pending();
    work |= ucma_tick();
    clock_pages_tick();
    const uint64_t fatal = cfg().faults.fatal_after_ms;
    if (fatal && g_first_ctx_ns && !sim().devices.empty() && !sim().devices[0].fatal &&
        now_ns() - g_first_ctx_ns >= fatal * 1000000ull)
        device_fatal();
    const uint64_t remove = cfg().faults.remove_after_ms;
    if (remove && g_first_ctx_ns && !sim().devices.empty() && !sim().devices[0].removed &&
        now_ns() - g_first_ctx_ns >= remove * 1000000ull)
        device_removed();
    return work;
}

void thread_main() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    Packet* p = new Packet;
    unsigned idle = 0;
    uint64_t sleep_ns = 5000, last_work = 0;
    for (;;) {
        bool work;
        {
            std::lock_guard<std::recursive_mutex> g(sim().mu);
            work = step();
        }
        for (int i = 0; i < 256; ++i) {
            if (!wire_recv(*p))
                break;
            std::lock_guard<std::recursive_mutex> g(sim().mu);
            dispatch(*p);
            work = true;
        }
        {
            std::lock_guard<std::recursive_mutex> g(sim().mu);
            zip_flush_all();  // what the wire brought, before any event
            work |= fire_events();
        }
        const uint64_t t = now_ns();
        if (work) {
            idle = 0;
            last_work = t;
            sleep_ns = 5000;
            continue;
        }
        if (++idle < 50)
            continue;  // a short busy spin: doorbells often follow completions
        // Sleep on the wire socket. Within 50 ms of the last work the sleep
        // stays at most 50 us (a ping-pong's doorbell is seen quickly); after
        // that it doubles up to idle_poll_us.
        pollfd pf{wire_fd(), POLLIN, 0};
        timespec ts{0, static_cast<long>(sleep_ns)};
        ppoll(&pf, 1, &ts, nullptr);
        const uint64_t cap = t - last_work < 50000000ull ? 50000ull : uint64_t(cfg().idle_poll_us) * 1000;
        sleep_ns = std::min<uint64_t>(sleep_ns * 2, cap);
    }
}

}  // namespace

void engine_start() {
    if (g_started)
        return;
    g_started = true;
    g_first_ctx_ns = now_ns();
    std::thread(thread_main).detach();
}

void engine_qp_state_changed(Qp& qp, uint8_t old) {
    if (!qp.eng)
        qp.eng = std::make_unique<QpEngine>();
    QpEngine& e = *qp.eng;
    switch (qp.state) {
    case IBV_QPS_RESET: e = QpEngine{}; break;
    case IBV_QPS_RTR:
        if (old == IBV_QPS_INIT)
            e.epsn = qp.rq_psn;
        break;
    case IBV_QPS_RTS:
        if (old == IBV_QPS_RTR)
            e.next_psn = e.snd_nxt = e.una = qp.sq_psn & 0xffffff;
        break;
    case IBV_QPS_ERR:
        qp.state = old;  // set_error does the transition and the flush
        set_error(qp);
        break;
    default: break;
    }
}

void engine_qp_destroy(Qp& qp) {
    // A device takes a doorbell within microseconds, long before a destroy
    // command gets through its firmware: what was posted and rung before
    // the destroy leaves (the model may not have polled since; a sender
    // that posts unsignaled datagrams and destroys its QP at once, as
    // mckey does, expects them sent).
    if (qp.eng && (qp.state == IBV_QPS_RTS || qp.state == IBV_QPS_SQD) && qp.qp_type != IBV_QPT_RC &&
        qp.qp_type != IBV_QPT_XRC_SEND) {
        for (int i = 0; i < 64 && poll_sq(qp); ++i) {}
    }
    // What this QP already answered (ACKs, read responses) left the port on
    // a real device; here it may still sit in the outgoing queue because a
    // peer socket was full. Give it a moment to go before the process
    // (often about to exit) loses it; the peer drains its own socket.
    if (qp.eng && pending_remote()) {
        const uint64_t end = now_ns() + 200000000ull;
        while (pending_remote() && now_ns() < end)
            if (!flush_pending()) {
                timespec ts{0, 200000};
                nanosleep(&ts, nullptr);
            }
    }
    qp.eng.reset();
}

void engine_cq_destroy(Cq&) {}

void engine_srq_destroy(Srq& s) { relays().erase(&s); }

void engine_wq_destroy(Wq&) {}  // (the model holds nothing of a WQ between frames)

void engine_flush_qp(Qp& qp) { set_error(qp); }

// As the device does it: the CQE that marks the switch (opcode RESIZE_CQ)
// goes after every CQE already written, in the old ring; the producer
// count carries on in the new ring, so the provider copies what it has
// not polled yet one place on and drops the marker. An armed CQ is not
// woken by the marker.
void engine_cq_resize(Cq& cq, uint64_t buf, uint32_t ncqe, uint32_t cqe_size) {
    zip_flush(cq);
    if (cq_unconsumed(cq) < cq.ncqe || cq.ignore_overrun) {
        const uint32_t idx = cq.pi & (cq.ncqe - 1);
        uint8_t* slot = cqe_slot(cq, cq.pi);
        auto* c = reinterpret_cast<mlx5_cqe64*>(slot);
        memset(slot, 0, 63);
        const uint8_t owner = (cq.pi / cq.ncqe) & 1;
        __atomic_thread_fence(__ATOMIC_RELEASE);
        __atomic_store_n(&c->op_own, static_cast<uint8_t>((MLX5_CQE_RESIZE_CQ << 4) | owner), __ATOMIC_RELEASE);
        const bool was_idle = cq.arm_ci == cq.pi;
        cq.pi = (cq.pi + 1) & 0xffffff;
        if (cq.armed && was_idle)
            cq.arm_ci = cq.pi;
        UVSIM_TRACE("CQE cq 0x%x idx %u RESIZE_CQ", cq.cqn, idx);
    } else {
        cq_overrun(cq, "no room for the resize CQE");
    }
    cq.buf = buf;
    cq.ncqe = ncqe;
    cq.cqe_size = cqe_size;
}

void engine_xmit(Packet& p) { xmit(p); }

void engine_cq_created(Cq& cq) { __atomic_store_n(&cq.dbrec[1], kArmSentinel, __ATOMIC_RELEASE); }

}  // namespace uvsim
