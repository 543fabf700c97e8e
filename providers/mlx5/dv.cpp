// libmlx5's direct verbs for this provider's devices: the device's mlx5
// capabilities (mlx5dv_query_device), the queues' memory and registers for
// applications that drive the device themselves (mlx5dv_init_obj), queues
// created with mlx5 attributes, the application's buffer allocators, the
// clock page, and mlx5dv_open_device. Any other provider's device or
// object gets EOPNOTSUPP, as the reference's dispatch answers.
// First: it gives the public declarations default visibility.
#include "providers/mlx5/mlx5dv_compat.h"

#include "providers/mlx5/mlx5.h"
#include "util/c_entry.h"

#include <atomic>

namespace rdma::mlx5 {

namespace {

constexpr uint64_t kQueryMask = MLX5DV_CONTEXT_MASK_CQE_COMPRESION | MLX5DV_CONTEXT_MASK_SWP |
    MLX5DV_CONTEXT_MASK_STRIDING_RQ | MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS | MLX5DV_CONTEXT_MASK_DYN_BFREGS |
    MLX5DV_CONTEXT_MASK_CLOCK_INFO_UPDATE | MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS | MLX5DV_CONTEXT_MASK_DC_ODP_CAPS |
    MLX5DV_CONTEXT_MASK_HCA_CORE_CLOCK | MLX5DV_CONTEXT_MASK_NUM_LAG_PORTS | MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD |
    MLX5DV_CONTEXT_MASK_DCI_STREAMS | MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH | MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD;

int get_qp(ibv_qp* in, mlx5dv_qp* out) {
    const Mlx5Qp* qp = to_mqp(in);
    uint64_t mask = 0;
    out->dbrec = const_cast<__be32*>(qp->db);
    out->sq.buf = qp->sq.start;
    out->sq.wqe_cnt = qp->sq.wqe_cnt;
    out->sq.stride = 1u << qp->sq.wqe_shift;
    out->rq.buf = qp->rq.start;
    out->rq.wqe_cnt = qp->rq.wqe_cnt;
    out->rq.stride = 1u << qp->rq.wqe_shift;
    out->bf.reg = qp->bf->reg;
    out->bf.size = qp->bf->dv_size;
    if (out->comp_mask & MLX5DV_QP_MASK_UAR_MMAP_OFFSET) {
        out->uar_mmap_offset = qp->bf->uar_mmap_offset;
        mask |= MLX5DV_QP_MASK_UAR_MMAP_OFFSET;
    }
    // Raw packet QPs (with their TIR, TIS, RQ and SQ numbers) are not
    // offered: an RC, UC or UD QP has none of them, as the kernel says.
    if (out->comp_mask & MLX5DV_QP_MASK_RAW_QP_HANDLES) {
        out->tirn = out->tisn = out->rqn = out->sqn = 0;
        mask |= MLX5DV_QP_MASK_RAW_QP_HANDLES;
    }
    if (out->comp_mask & MLX5DV_QP_MASK_RAW_QP_TIR_ADDR) {
        out->tir_icm_addr = 0;
        mask |= MLX5DV_QP_MASK_RAW_QP_TIR_ADDR;
    }
    out->comp_mask = mask;
    return 0;
}

int get_cq(ibv_cq* in, mlx5dv_cq* out) {
    Mlx5Cq* cq = to_mcq(in);
    out->comp_mask = 0;
    out->cqn = cq->cqn;
    out->cqe_cnt = cq->ncqe;
    out->cqe_size = cq->cqe_size;
    out->buf = cq->buf.get();
    out->dbrec = const_cast<__be32*>(cq->dbrec);
    out->cq_uar = *to_mctx(in->context)->cq_uar_reg();
    // From now on the application consumes the CQEs; a QP reset or
    // destroyed leaves them to it.
    cq->dv_owned = true;
    return 0;
}

int get_srq(ibv_srq* in, mlx5dv_srq* out) {
    const Mlx5Srq* srq = to_msrq(in);
    uint64_t mask = 0;
    out->buf = srq->buf.get();
    out->dbrec = const_cast<__be32*>(srq->db);
    out->stride = 1u << srq->wqe_shift;
    out->head = srq->head;
    out->tail = srq->tail;
    if (out->comp_mask & MLX5DV_SRQ_MASK_SRQN) {
        out->srqn = srq->srqn;
        mask |= MLX5DV_SRQ_MASK_SRQN;
    }
    out->comp_mask = mask;
    return 0;
}

int get_ah(ibv_ah* in, mlx5dv_ah* out) {
    out->comp_mask = 0;
    out->av = &to_mah(in)->av;
    return 0;
}

int get_pd(ibv_pd* in, mlx5dv_pd* out) {
    out->comp_mask = 0;
    out->pdn = reinterpret_cast<Mlx5Pd*>(in)->pdn;
    return 0;
}

// The context the reference dispatches on: the first object asked for.
ibv_context* context_of(const mlx5dv_obj* obj, uint64_t type) {
    if (type & MLX5DV_OBJ_QP)
        return obj->qp.in->context;
    if (type & MLX5DV_OBJ_CQ)
        return obj->cq.in->context;
    if (type & MLX5DV_OBJ_SRQ)
        return obj->srq.in->context;
    if (type & MLX5DV_OBJ_RWQ)
        return obj->rwq.in->context;
    if (type & MLX5DV_OBJ_DM)
        return obj->dm.in->context;
    if (type & MLX5DV_OBJ_AH)
        return obj->ah.in->context;
    if (type & MLX5DV_OBJ_PD)
        return obj->pd.in->context;
    return nullptr;
}

int init_obj(mlx5dv_obj* obj, uint64_t type) {
    ibv_context* ctx = context_of(obj, type);
    if (!ctx)
        return EINVAL;
    if (!is_mlx5_ctx(ctx))
        return EOPNOTSUPP;
    // Each object must be ours too: this library reads its private part.
    auto ours = [](ibv_context* c) { return is_mlx5_ctx(c); };
    int ret = 0;
    if (type & MLX5DV_OBJ_QP)
        ret = ours(obj->qp.in->context) ? get_qp(obj->qp.in, obj->qp.out) : EOPNOTSUPP;
    if (!ret && (type & MLX5DV_OBJ_CQ))
        ret = ours(obj->cq.in->context) ? get_cq(obj->cq.in, obj->cq.out) : EOPNOTSUPP;
    if (!ret && (type & MLX5DV_OBJ_SRQ))
        ret = ours(obj->srq.in->context) ? get_srq(obj->srq.in, obj->srq.out) : EOPNOTSUPP;
    // Work queues and device memory cannot be created on this provider
    // yet (ibv_create_wq, ibv_alloc_dm: EOPNOTSUPP), so none is ours.
    if (!ret && (type & (MLX5DV_OBJ_RWQ | MLX5DV_OBJ_DM)))
        ret = EOPNOTSUPP;
    if (!ret && (type & MLX5DV_OBJ_AH))
        ret = ours(obj->ah.in->context) ? get_ah(obj->ah.in, obj->ah.out) : EOPNOTSUPP;
    if (!ret && (type & MLX5DV_OBJ_PD))
        ret = ours(obj->pd.in->context) ? get_pd(obj->pd.in, obj->pd.out) : EOPNOTSUPP;
    return ret;
}

}  // namespace

// The capabilities: the flags always, each optional part when asked for
// (comp_mask in) and known; comp_mask out says which were filled. Parts
// the kernel reports only through DEVX (signature, crypto, DMA copy
// lengths, LAG ports, DC ODP) are filled as a device without DEVX reports
// them to the reference: zero.
int Mlx5Context::dv_query_device(mlx5dv_context* out) {
    const uint64_t asked = out->comp_mask & kQueryMask;
    uint64_t filled = 0;
    out->version = 0;
    out->flags = caps_.vendor_flags;
    if (caps_.cqe_version == 1)
        out->flags |= MLX5DV_CONTEXT_FLAGS_CQE_V1;
    if (asked & MLX5DV_CONTEXT_MASK_CQE_COMPRESION) {
        out->cqe_comp_caps = caps_.cqe_comp_caps;
        filled |= MLX5DV_CONTEXT_MASK_CQE_COMPRESION;
    }
    if (asked & MLX5DV_CONTEXT_MASK_SWP) {
        out->sw_parsing_caps = caps_.sw_parsing_caps;
        filled |= MLX5DV_CONTEXT_MASK_SWP;
    }
    if (asked & MLX5DV_CONTEXT_MASK_STRIDING_RQ) {
        out->striding_rq_caps = caps_.striding_rq_caps;
        filled |= MLX5DV_CONTEXT_MASK_STRIDING_RQ;
    }
    if (asked & MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS) {
        out->tunnel_offloads_caps = caps_.tunnel_offloads_caps;
        filled |= MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS;
    }
    if (asked & MLX5DV_CONTEXT_MASK_DCI_STREAMS) {
        out->dci_streams_caps = caps_.dci_streams_caps;
        filled |= MLX5DV_CONTEXT_MASK_DCI_STREAMS;
    }
    if (asked & MLX5DV_CONTEXT_MASK_DYN_BFREGS) {
        // The kernel's dynamic registers; this library does not use them
        // (see README), but the count is the device's.
        out->max_dynamic_bfregs = caps_.num_dyn_bfregs;
        filled |= MLX5DV_CONTEXT_MASK_DYN_BFREGS;
    }
    if ((asked & MLX5DV_CONTEXT_MASK_CLOCK_INFO_UPDATE) && clock_info_) {
        out->max_clock_info_update_nsec = clock_info_->overflow_period;
        filled |= MLX5DV_CONTEXT_MASK_CLOCK_INFO_UPDATE;
    }
    if (asked & MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS) {
        out->flow_action_flags = caps_.flow_action_flags;
        filled |= MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS;
    }
    if (asked & MLX5DV_CONTEXT_MASK_DC_ODP_CAPS) {
        out->dc_odp_caps = 0;
        filled |= MLX5DV_CONTEXT_MASK_DC_ODP_CAPS;
    }
    if ((asked & MLX5DV_CONTEXT_MASK_HCA_CORE_CLOCK) && core_clock_) {
        out->hca_core_clock = hca_core_clock();
        filled |= MLX5DV_CONTEXT_MASK_HCA_CORE_CLOCK;
    }
    if (asked & MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD) {
        out->sig_caps = {};
        filled |= MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD;
    }
    if (asked & MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH) {
        out->max_wr_memcpy_length = 0;
        filled |= MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH;
    }
    if (asked & MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD) {
        out->crypto_caps = {};
        filled |= MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD;
    }
    out->comp_mask = filled;
    return 0;
}

int Mlx5Context::set_allocators(const mlx5dv_ctx_allocators& a) {
    ext_alloc_ = a;
    return 0;
}

// The kernel's clock page is rewritten under a sequence count: the copy
// is good when the count is even (no update running) and unchanged after.
int Mlx5Context::clock_info(mlx5dv_clock_info* out) const {
    if (!clock_info_)
        return EINVAL;
    const auto* sign = reinterpret_cast<const volatile uint32_t*>(&clock_info_->sign);
    uint32_t before;
    do {
        int tries = 10;
        for (;;) {
            before = __atomic_load_n(sign, __ATOMIC_ACQUIRE);
            if (!(before & MLX5_IB_CLOCK_INFO_KERNEL_UPDATING))
                break;
            if (--tries == 0)
                return EBUSY;
        }
        out->nsec = clock_info_->nsec;
        out->last_cycles = clock_info_->cycles;
        out->frac = clock_info_->frac;
        out->mult = clock_info_->mult;
        out->shift = clock_info_->shift;
        out->mask = clock_info_->mask;
        std::atomic_thread_fence(std::memory_order_acquire);
    } while (before != __atomic_load_n(sign, __ATOMIC_ACQUIRE));
    return 0;
}

int Mlx5Context::read_core_clock(uint64_t& cycles) const {
    if (!core_clock_)
        return EOPNOTSUPP;
    // Two big-endian words, high first; the high word read again tells
    // whether the low one wrapped in between.
    uint32_t hi, lo;
    do {
        hi = be32toh(core_clock_[0]);
        lo = be32toh(core_clock_[1]);
        std::atomic_thread_fence(std::memory_order_acquire);
    } while (hi != be32toh(core_clock_[0]));
    cycles = uint64_t(hi) << 32 | lo;
    return 0;
}

// verbs_context's query_rt_values slot (ibv_query_rt_values_ex): the raw
// device clock is all this device reports.
int query_rt_values(ibv_context* ctx, ibv_values_ex* values) noexcept {
    return rdma::entry_errno([&] {
        if (values->comp_mask & ~uint32_t(IBV_VALUES_MASK_RAW_CLOCK))
            return EINVAL;
        uint32_t got = 0;
        int err = 0;
        if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
            uint64_t cycles = 0;
            err = to_mctx(ctx)->read_core_clock(cycles);
            if (!err) {
                values->raw_clock.tv_sec = 0;
                values->raw_clock.tv_nsec = static_cast<long>(cycles);
                got |= IBV_VALUES_MASK_RAW_CLOCK;
            }
        }
        values->comp_mask = got;
        return err;
    });
}

// verbs_context's alloc_parent_domain slot (ibv_alloc_parent_domain).
ibv_pd* alloc_parent_domain_entry(ibv_context* ctx, ibv_parent_domain_init_attr* attr) noexcept {
    return rdma::entry_null([&] { return to_mctx(ctx)->alloc_parent_domain(attr); });
}

// verbs_context's alloc_td / dealloc_td slots (ibv_alloc_td, ibv_dealloc_td).
ibv_td* alloc_td_entry(ibv_context* ctx, ibv_td_init_attr* attr) noexcept {
    return rdma::entry_null([&] { return to_mctx(ctx)->alloc_td(attr); });
}
int dealloc_td_entry(ibv_td* td) noexcept {
    return rdma::entry_errno([&] { return to_mctx(td->context)->dealloc_td(td); });
}

// verbs_context's modify_cq slot (ibv_modify_cq): the kernel's moderation.
int modify_cq_entry(ibv_cq* cq, ibv_modify_cq_attr* attr) noexcept {
    return rdma::entry_errno([&] { return to_mctx(cq->context)->cmd_modify_cq(cq, attr); });
}

// verbs_context's counters slots.
ibv_counters* create_counters_entry(ibv_context* ctx, ibv_counters_init_attr* attr) noexcept {
    return rdma::entry_null([&] { return to_mctx(ctx)->create_counters(attr); });
}
int destroy_counters_entry(ibv_counters* counters) noexcept {
    return rdma::entry_errno([&] { return to_mctx(counters->context)->destroy_counters(counters); });
}
int attach_counters_entry(ibv_counters* counters, ibv_counter_attach_attr* attr, ibv_flow* flow) noexcept {
    return rdma::entry_errno([&] { return to_mctx(counters->context)->attach_counters(counters, attr, flow); });
}
int read_counters_entry(ibv_counters* counters, uint64_t* values, uint32_t n, uint32_t flags) noexcept {
    return rdma::entry_errno([&] { return to_mctx(counters->context)->read_counters(counters, values, n, flags); });
}

// verbs_context's advise_mr slot (ibv_advise_mr): the kernel prefetches the
// pages of on-demand-paging MRs; a parent domain stands for its PD.
int advise_mr_entry(ibv_pd* pd, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge* sg_list,
                    uint32_t num_sge) noexcept {
    return rdma::entry_errno([&] {
        return to_mctx(pd->context)->cmd_advise_mr(pd, static_cast<uint32_t>(advice), flags, sg_list, num_sge);
    });
}

}  // namespace rdma::mlx5

using rdma::mlx5::fail_null;
using rdma::mlx5::is_mlx5_ctx;
using rdma::mlx5::is_mlx5_dev;
using rdma::mlx5::to_mctx;

extern "C" struct ibv_context* mlx5dv_open_device(struct ibv_device* device, struct mlx5dv_context_attr* attr) {
    return rdma::entry_null([&]() -> ibv_context* {
        if (!is_mlx5_dev(device))
            return fail_null<ibv_context>();
        return rdma::verbs::open_device_with(device, attr);
    });
}

extern "C" int mlx5dv_query_device(struct ibv_context* ctx, struct mlx5dv_context* out) {
    return rdma::entry_errno([&] { return is_mlx5_ctx(ctx) ? to_mctx(ctx)->dv_query_device(out) : EOPNOTSUPP; });
}

extern "C" int mlx5dv_set_context_attr(struct ibv_context* ctx, enum mlx5dv_set_ctx_attr_type type, void* attr) {
    return rdma::entry_errno([&] {
        if (!is_mlx5_ctx(ctx))
            return EOPNOTSUPP;
        if (type != MLX5DV_CTX_ATTR_BUF_ALLOCATORS)
            return ENOTSUP;
        return to_mctx(ctx)->set_allocators(*static_cast<const mlx5dv_ctx_allocators*>(attr));
    });
}

extern "C" struct mlx5dv_devx_uar* mlx5dv_devx_alloc_uar(struct ibv_context* ctx, uint32_t flags) {
    return rdma::entry_null([&]() -> mlx5dv_devx_uar* {
        if (!is_mlx5_ctx(ctx))
            return fail_null<mlx5dv_devx_uar>();
        return to_mctx(ctx)->dv_alloc_uar(flags);
    });
}

// The register goes back to its context's pool (a NULL is ignored).
extern "C" void mlx5dv_devx_free_uar(struct mlx5dv_devx_uar* uar) {
    rdma::entry_void([&] {
        if (uar)
            rdma::mlx5::Mlx5Context::free_devx_uar(uar);
    });
}

extern "C" int mlx5dv_get_clock_info(struct ibv_context* ctx, struct mlx5dv_clock_info* out) {
    return rdma::entry_errno([&] { return is_mlx5_ctx(ctx) ? to_mctx(ctx)->clock_info(out) : EOPNOTSUPP; });
}

extern "C" int mlx5dv_init_obj_1_2(struct mlx5dv_obj* obj, uint64_t obj_type) {
    return rdma::entry_errno([&] { return rdma::mlx5::init_obj(obj, obj_type); });
}

// MLX5_1.0 handed out where the CQ's UAR address is kept, not the address.
extern "C" int mlx5dv_init_obj_1_0(struct mlx5dv_obj* obj, uint64_t obj_type) {
    return rdma::entry_errno([&] {
        int ret = rdma::mlx5::init_obj(obj, obj_type);
        if (!ret && (obj_type & MLX5DV_OBJ_CQ))
            obj->cq.out->cq_uar = const_cast<void**>(to_mctx(obj->cq.in->context)->cq_uar_reg());
        return ret;
    });
}
__asm__(".symver mlx5dv_init_obj_1_0, mlx5dv_init_obj@MLX5_1.0");
__asm__(".symver mlx5dv_init_obj_1_2, mlx5dv_init_obj@@MLX5_1.2");

extern "C" struct ibv_cq_ex* mlx5dv_create_cq(struct ibv_context* ctx, struct ibv_cq_init_attr_ex* attr,
                                              struct mlx5dv_cq_init_attr* dv) {
    return rdma::entry_null([&]() -> ibv_cq_ex* {
        if (!is_mlx5_ctx(ctx))
            return fail_null<ibv_cq_ex>();
        return to_mctx(ctx)->dv_create_cq(attr, dv);
    });
}

extern "C" struct ibv_qp* mlx5dv_create_qp(struct ibv_context* ctx, struct ibv_qp_init_attr_ex* attr,
                                           struct mlx5dv_qp_init_attr* dv) {
    return rdma::entry_null([&]() -> ibv_qp* {
        if (!is_mlx5_ctx(ctx))
            return fail_null<ibv_qp>();
        return to_mctx(ctx)->dv_create_qp(attr, dv);
    });
}

// The reference converts by pointer arithmetic without looking; here the
// QP's context is looked at, and only our QPs are converted.
extern "C" struct mlx5dv_qp_ex* mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex* qp) {
    if (!qp || !is_mlx5_ctx(qp->qp_base.context))
        return fail_null<mlx5dv_qp_ex>();
    return &rdma::mlx5::to_mqp(&qp->qp_base)->dv_qp;
}
