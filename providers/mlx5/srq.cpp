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

Mlx5Srq::~Mlx5Srq() {
    delete[] wrid;
    delete xrc_rsc;
}

namespace {

constexpr uint32_t kSegSize = 16;

inline mlx5_wqe_srq_next_seg* srq_wqe(const Mlx5Srq& srq, uint32_t index) {
    return reinterpret_cast<mlx5_wqe_srq_next_seg*>(srq.buf.get() + (static_cast<size_t>(index) << srq.wqe_shift));
}

}  // namespace

ibv_srq* Mlx5Context::create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
    ibv_srq_init_attr_ex ex{};
    ex.srq_context = attr->srq_context;
    ex.attr = attr->attr;
    ex.comp_mask = IBV_SRQ_INIT_ATTR_PD;
    ex.pd = pd;
    Mlx5Srq* srq = new_srq(&ex);
    attr->attr = ex.attr;
    return srq ? &srq->vsrq.srq : nullptr;
}

// ibv_create_srq_ex for what is not a plain basic SRQ (verbs.h hands those
// to ibv_create_srq): XRC SRQs; tag matching is not offered (EOPNOTSUPP).
ibv_srq* Mlx5Context::create_srq_ex(ibv_srq_init_attr_ex* attr) {
    constexpr uint32_t kKnown = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ |
        IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_TM;
    const ibv_srq_type type = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? attr->srq_type : IBV_SRQT_BASIC;
    if ((attr->comp_mask & ~kKnown) || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
        errno = EINVAL;
        return nullptr;
    }
    if (type == IBV_SRQT_TM) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    if (type == IBV_SRQT_XRC &&
        (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ||
         !attr->cq)) {
        errno = EINVAL;
        return nullptr;
    }
    if (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC) {
        errno = EINVAL;
        return nullptr;
    }
    Mlx5Srq* srq = new_srq(attr);
    return srq ? &srq->vsrq.srq : nullptr;
}

Mlx5Srq* Mlx5Context::new_srq(ibv_srq_init_attr_ex* attr) {
    const bool xrc = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type == IBV_SRQT_XRC;
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
    ibv_pd* pd = attr->pd;
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
        if (xrc) {
            // The stand-in QP the SRQ's completions are found by.
            s.xrc_rsc = new (std::nothrow) Mlx5Qp{};
            if (!s.xrc_rsc)
                return ENOMEM;
            ibv_qp* q = s.xrc_rsc->vqp.qp();
            q->context = ibv();
            q->srq = &s.vsrq.srq;
            q->recv_cq = attr->cq;
            q->qp_type = IBV_QPT_XRC_RECV;
            const int64_t uidx = store_uidx(s.xrc_rsc);
            if (uidx < 0)
                return ENOMEM;
            s.xrc_rsc->uidx = static_cast<uint32_t>(uidx);
            s.xrc_rsc->uidx_stored = true;
            req.uidx = s.xrc_rsc->uidx;
        }
        mlx5_ib_create_srq_resp resp{};
        // The kernel sizes its view from every slot.
        attr->attr.max_wr = slots - 1;
        int e = cmd_create_srq_ex(attr, &s.vsrq, Udata{&req, sizeof(req), &resp, sizeof(resp)});
        attr->attr.max_wr = max_wr;
        if (e) {
            if (s.xrc_rsc && s.xrc_rsc->uidx_stored)
                clear_uidx(s.xrc_rsc->uidx);
            return e;
        }
        s.srqn = resp.srqn;
        return 0;
    });
    if (!srq)
        return nullptr;
    hold(srq->parent);
    attr->attr.max_wr = srq->tail;
    attr->attr.max_sge = srq->max_gs;
    return srq;
}

// XRC domains: the kernel's object and nothing of the provider's.
ibv_xrcd* Mlx5Context::open_xrcd(ibv_xrcd_init_attr* attr) {
    VerbsXrcd* x = create_object<VerbsXrcd>([&](VerbsXrcd& d) { return cmd_open_xrcd(attr, &d); });
    return x ? &x->xrcd : nullptr;
}

int Mlx5Context::close_xrcd(ibv_xrcd* xrcd) {
    return destroy_object(to_vxrcd(xrcd), [&](VerbsXrcd& d) { return cmd_close_xrcd(&d); });
}

int Mlx5Context::get_srq_num(ibv_srq* srq, uint32_t* srq_num) {
    *srq_num = to_msrq(srq)->srqn;
    return 0;
}

int Mlx5Context::modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask) {
    return cmd_modify_srq(srq, attr, attr_mask);
}

int Mlx5Context::query_srq(ibv_srq* srq, ibv_srq_attr* attr) { return cmd_query_srq(srq, attr); }

int Mlx5Context::destroy_srq(ibv_srq* ibsrq) {
    return destroy_object(to_msrq(ibsrq), [&](Mlx5Srq& s) {
        int e = cmd_destroy_srq(&s.vsrq.srq);
        if (e)
            return e;
        if (s.xrc_rsc) {
            // its completions still in the CQ go with it
            ibv_cq* cq = s.xrc_rsc->vqp.qp()->recv_cq;
            clean_cq(cq ? to_mcq(cq) : nullptr, s.xrc_rsc->uidx, nullptr);
            clear_uidx(s.xrc_rsc->uidx);
        }
        let_go(s.parent);
        return 0;
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
