// Shared receive queues: WQEs of a power-of-two stride linked into a free
// list through their next segments. Posting fills the head WQE and moves
// the head along the list; the device takes posted WQEs in list order and
// names the one it used in the CQE, which then goes back to the tail.
// See tests/uverbs-sim/doc/mlx5-contract.md §3.6 and §4.5.
#include "providers/mlx5/mlx5.h"

#include <endian.h>

#include <cstring>
#include <mutex>
#include <new>

namespace rdma::mlx5 {

using namespace rdma::verbs;

Mlx5Srq::~Mlx5Srq() { delete[] wrid; }

namespace {

constexpr uint32_t kSegSize = 16;

inline mlx5_wqe_srq_next_seg* srq_wqe(const Mlx5Srq& srq, uint32_t index) {
    return reinterpret_cast<mlx5_wqe_srq_next_seg*>(srq.buf.get() + (static_cast<size_t>(index) << srq.wqe_shift));
}

}  // namespace

ibv_srq* Mlx5Context::create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
    const uint32_t max_wr = attr->attr.max_wr;
    const uint32_t max_sge = attr->attr.max_sge;
    if (max_wr > caps_.max_srq_recv_wr || max_sge > caps_.max_rq_desc_sz / kSegSize) {
        errno = EINVAL;
        return nullptr;
    }
    uint32_t stride = kSegSize + kSegSize * max_sge;
    if (stride < 32)
        stride = 32;
    stride = roundup_pow2(stride);
    // (The reference compares the stride in bytes with the largest receive
    // queue in WQEs here; kept, it never refuses a sane request.)
    if (stride > caps_.max_recv_wr) {
        errno = EINVAL;
        return nullptr;
    }
    // The list holds max_wr + 1 WQEs (a full list keeps one); as the
    // reference, twice as many slots when the device allows, the second
    // half reserved for WQEs parked by on-demand paging.
    const uint32_t list = roundup_pow2(max_wr + 1);
    const uint32_t slots = 2 * max_wr + 1 <= caps_.max_srq_recv_wr ? roundup_pow2(2 * max_wr + 1) : list;
    Mlx5Srq* srq = create_object<Mlx5Srq>([&](Mlx5Srq& s) {
        s.max = slots;
        s.wqe_shift = 31 - static_cast<uint32_t>(__builtin_clz(stride));
        s.max_gs = (stride - kSegSize) / kSegSize;
        s.head = 0;
        s.tail = list - 1;
        s.wrid = new (std::nothrow) uint64_t[slots];
        if (!s.wrid)
            return ENOMEM;
        s.parent = parent_of(pd);
        if (env_.single_threaded || (s.parent && s.parent->td))
            s.lock.disable();
        if (int e = s.buf.alloc(static_cast<size_t>(slots) << s.wqe_shift,
                                ring_source("MLX_SRQ", MLX5DV_RES_TYPE_SRQ, s.parent)))
            return e;
        if (int e = s.dbrec_buf.alloc(64, dbrec_source(s.parent)))
            return e;
        s.db = reinterpret_cast<volatile __be32*>(s.dbrec_buf.get());
        for (uint32_t i = 0; i < slots; ++i)
            srq_wqe(s, i)->next_wqe_index = htobe16(static_cast<uint16_t>((i + 1) & (slots - 1)));
        mlx5_ib_create_srq req{};
        req.buf_addr = reinterpret_cast<uintptr_t>(s.buf.get());
        req.db_addr = reinterpret_cast<uintptr_t>(s.dbrec_buf.get());
        mlx5_ib_create_srq_resp resp{};
        // The kernel sizes its view from every slot.
        attr->attr.max_wr = slots - 1;
        int e = cmd_create_srq(pd, attr, &s.vsrq, Udata{&req, sizeof(req), &resp, sizeof(resp)});
        attr->attr.max_wr = max_wr;
        if (e)
            return e;
        s.srqn = resp.srqn;
        return 0;
    });
    if (!srq)
        return nullptr;
    hold(srq->parent);
    attr->attr.max_wr = srq->tail;
    attr->attr.max_sge = srq->max_gs;
    return &srq->vsrq.srq;
}

int Mlx5Context::modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask) {
    return cmd_modify_srq(srq, attr, attr_mask);
}

int Mlx5Context::query_srq(ibv_srq* srq, ibv_srq_attr* attr) { return cmd_query_srq(srq, attr); }

int Mlx5Context::destroy_srq(ibv_srq* ibsrq) {
    return destroy_object(to_msrq(ibsrq), [&](Mlx5Srq& s) {
        int e = cmd_destroy_srq(&s.vsrq.srq);
        if (!e)
            let_go(s.parent);
        return e;
    });
}

void free_srq_wqe(Mlx5Srq& srq, uint32_t index) noexcept {
    std::lock_guard guard(srq.lock);
    index &= srq.max - 1;
    srq_wqe(srq, srq.tail)->next_wqe_index = htobe16(static_cast<uint16_t>(index));
    srq.tail = index;
}

int post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    Mlx5Srq* srq = to_msrq(ibsrq);
    std::lock_guard guard(srq->lock);
    int err = 0;
    uint32_t nreq = 0;
    for (; wr; wr = wr->next, ++nreq) {
        if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > srq->max_gs) [[unlikely]] {
            err = EINVAL;
            break;
        }
        if (srq->head == srq->tail) [[unlikely]] {
            err = ENOMEM;  // the list's last WQE stays free
            break;
        }
        mlx5_wqe_srq_next_seg* next = srq_wqe(*srq, srq->head);
        srq->wrid[srq->head] = wr->wr_id;
        auto* d = reinterpret_cast<mlx5_wqe_data_seg*>(next + 1);
        int i = 0;
        for (; i < wr->num_sge; ++i) {
            d[i].byte_count = htobe32(wr->sg_list[i].length);
            d[i].lkey = htobe32(wr->sg_list[i].lkey);
            d[i].addr = htobe64(wr->sg_list[i].addr);
        }
        if (static_cast<uint32_t>(i) < srq->max_gs) {
            d[i].byte_count = 0;
            d[i].lkey = htobe32(MLX5_INVALID_LKEY);
            d[i].addr = 0;
        }
        srq->head = be16toh(next->next_wqe_index);
    }
    if (err)
        *bad_wr = wr;
    if (nreq) {
        srq->counter += nreq;
        to_device_barrier();
        *srq->db = htobe32(srq->counter);
    }
    return err;
}

}  // namespace rdma::mlx5
