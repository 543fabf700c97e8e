// The libibverbs 1.0 ABI (2006), for binaries linked against it: every
// object was a different, smaller struct. Each 1.0 object here wraps the
// real one; the symbols are bound to IBVERBS_1.0 with .symver, while
// current programs bind the IBVERBS_1.1 versions.
//
// The 1.0 struct layouts below are that ABI and must not change.
#include "libibverbs/ibverbs.h"
#include "util/c_entry.h"

#include <cstdlib>
#include <new>

#define RDMA_COMPAT_1_0(impl, name) __asm__(".symver " #impl "," #name "@IBVERBS_1.0")

extern "C" {

struct ibv_context_1_0;
struct ibv_cq_1_0;
struct ibv_srq_1_0;
struct ibv_qp_1_0;
struct ibv_ah_1_0;

struct ibv_device_1_0 {
    void* obsolete_sysfs_dev;
    void* obsolete_sysfs_ibdev;
    ibv_device* real_device;
    _ibv_device_ops _ops;
};

struct ibv_pd_1_0 {
    ibv_context_1_0* context;
    uint32_t handle;
    ibv_pd* real_pd;
};

struct ibv_mr_1_0 {
    ibv_context_1_0* context;
    ibv_pd_1_0* pd;
    uint32_t handle;
    uint32_t lkey;
    uint32_t rkey;
    ibv_mr* real_mr;
};

struct ibv_srq_1_0 {
    ibv_context_1_0* context;
    void* srq_context;
    ibv_pd_1_0* pd;
    uint32_t handle;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    uint32_t events_completed;
    ibv_srq* real_srq;
};

struct ibv_qp_init_attr_1_0 {
    void* qp_context;
    ibv_cq_1_0* send_cq;
    ibv_cq_1_0* recv_cq;
    ibv_srq_1_0* srq;
    ibv_qp_cap cap;
    ibv_qp_type qp_type;
    int sq_sig_all;
};

struct ibv_send_wr_1_0 {
    ibv_send_wr_1_0* next;
    uint64_t wr_id;
    ibv_sge* sg_list;
    int num_sge;
    ibv_wr_opcode opcode;
    int send_flags;
    uint32_t imm_data;
    union {
        struct {
            uint64_t remote_addr;
            uint32_t rkey;
        } rdma;
        struct {
            uint64_t remote_addr;
            uint64_t compare_add;
            uint64_t swap;
            uint32_t rkey;
        } atomic;
        struct {
            ibv_ah_1_0* ah;
            uint32_t remote_qpn;
            uint32_t remote_qkey;
        } ud;
    } wr;
};

struct ibv_recv_wr_1_0 {
    ibv_recv_wr_1_0* next;
    uint64_t wr_id;
    ibv_sge* sg_list;
    int num_sge;
};

struct ibv_qp_1_0 {
    ibv_context_1_0* context;
    void* qp_context;
    ibv_pd_1_0* pd;
    ibv_cq_1_0* send_cq;
    ibv_cq_1_0* recv_cq;
    ibv_srq_1_0* srq;
    uint32_t handle;
    uint32_t qp_num;
    ibv_qp_state state;
    ibv_qp_type qp_type;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    uint32_t events_completed;
    ibv_qp* real_qp;
};

struct ibv_cq_1_0 {
    ibv_context_1_0* context;
    void* cq_context;
    uint32_t handle;
    int cqe;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    uint32_t comp_events_completed;
    uint32_t async_events_completed;
    ibv_cq* real_cq;
};

struct ibv_ah_1_0 {
    ibv_context_1_0* context;
    ibv_pd_1_0* pd;
    uint32_t handle;
    ibv_ah* real_ah;
};

struct ibv_context_ops_1_0 {
    int (*query_device)(ibv_context*, ibv_device_attr*);
    int (*query_port)(ibv_context*, uint8_t, ibv_port_attr*);
    ibv_pd* (*alloc_pd)(ibv_context*);
    int (*dealloc_pd)(ibv_pd*);
    ibv_mr* (*reg_mr)(ibv_pd*, void*, size_t, int);
    int (*dereg_mr)(ibv_mr*);
    ibv_cq* (*create_cq)(ibv_context*, int, ibv_comp_channel*, int);
    int (*poll_cq)(ibv_cq_1_0*, int, ibv_wc*);
    int (*req_notify_cq)(ibv_cq_1_0*, int);
    void (*cq_event)(ibv_cq*);
    int (*resize_cq)(ibv_cq*, int);
    int (*destroy_cq)(ibv_cq*);
    ibv_srq* (*create_srq)(ibv_pd*, ibv_srq_init_attr*);
    int (*modify_srq)(ibv_srq*, ibv_srq_attr*, int);
    int (*query_srq)(ibv_srq*, ibv_srq_attr*);
    int (*destroy_srq)(ibv_srq*);
    int (*post_srq_recv)(ibv_srq_1_0*, ibv_recv_wr_1_0*, ibv_recv_wr_1_0**);
    ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*);
    int (*query_qp)(ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*);
    int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int);
    int (*destroy_qp)(ibv_qp*);
    int (*post_send)(ibv_qp_1_0*, ibv_send_wr_1_0*, ibv_send_wr_1_0**);
    int (*post_recv)(ibv_qp_1_0*, ibv_recv_wr_1_0*, ibv_recv_wr_1_0**);
    ibv_ah* (*create_ah)(ibv_pd*, ibv_ah_attr*);
    int (*destroy_ah)(ibv_ah*);
    int (*attach_mcast)(ibv_qp*, ibv_gid*, uint16_t);
    int (*detach_mcast)(ibv_qp*, ibv_gid*, uint16_t);
};

struct ibv_context_1_0 {
    ibv_device_1_0* device;
    ibv_context_ops_1_0 ops;
    int cmd_fd;
    int async_fd;
    int num_comp_vectors;
    ibv_context* real_context;
};

}  // extern "C"

namespace {

// Work requests are translated in batches on the stack (no allocation on
// the data path); a failure maps the real bad WR back to the caller's.
constexpr int kBatch = 16;

template <class Old, class New, class Convert, class Post>
int post_batched(Old* wr, Old** bad_wr, Convert convert, Post post) {
    New batch[kBatch];
    Old* sources[kBatch];
    while (wr) {
        int n = 0;
        for (; wr && n < kBatch; wr = wr->next, ++n) {
            convert(*wr, batch[n]);
            batch[n].next = nullptr;
            if (n)
                batch[n - 1].next = &batch[n];
            sources[n] = wr;
        }
        New* real_bad = nullptr;
        if (int ret = post(batch, &real_bad)) {
            *bad_wr = sources[0];
            for (int i = 0; i < n; ++i)
                if (real_bad == &batch[i])
                    *bad_wr = sources[i];
            return ret;
        }
    }
    return 0;
}

void convert_recv(const ibv_recv_wr_1_0& o, ibv_recv_wr& n) {
    n.wr_id = o.wr_id;
    n.sg_list = o.sg_list;
    n.num_sge = o.num_sge;
}

int poll_cq_1_0(ibv_cq_1_0* cq, int num_entries, ibv_wc* wc) {
    return cq->context->real_context->ops.poll_cq(cq->real_cq, num_entries, wc);
}

int req_notify_cq_1_0(ibv_cq_1_0* cq, int solicited_only) {
    return cq->context->real_context->ops.req_notify_cq(cq->real_cq, solicited_only);
}

int post_send_1_0(ibv_qp_1_0* qp, ibv_send_wr_1_0* wr, ibv_send_wr_1_0** bad_wr) {
    const bool ud = qp->qp_type == IBV_QPT_UD;
    ibv_context* real = qp->context->real_context;
    return post_batched<ibv_send_wr_1_0, ibv_send_wr>(
        wr, bad_wr,
        [ud](const ibv_send_wr_1_0& o, ibv_send_wr& n) {
            n = ibv_send_wr{};
            n.wr_id = o.wr_id;
            n.sg_list = o.sg_list;
            n.num_sge = o.num_sge;
            n.opcode = o.opcode;
            n.send_flags = static_cast<unsigned int>(o.send_flags);
            n.imm_data = o.imm_data;
            if (ud) {
                n.wr.ud.ah = o.wr.ud.ah->real_ah;
                n.wr.ud.remote_qpn = o.wr.ud.remote_qpn;
                n.wr.ud.remote_qkey = o.wr.ud.remote_qkey;
            } else {
                n.wr.atomic.remote_addr = o.wr.atomic.remote_addr;
                n.wr.atomic.compare_add = o.wr.atomic.compare_add;
                n.wr.atomic.swap = o.wr.atomic.swap;
                n.wr.atomic.rkey = o.wr.atomic.rkey;
                if (o.opcode != IBV_WR_ATOMIC_CMP_AND_SWP && o.opcode != IBV_WR_ATOMIC_FETCH_AND_ADD)
                    n.wr.rdma.rkey = o.wr.rdma.rkey;
            }
        },
        [real, qp](ibv_send_wr* first, ibv_send_wr** bad) { return real->ops.post_send(qp->real_qp, first, bad); });
}

int post_recv_1_0(ibv_qp_1_0* qp, ibv_recv_wr_1_0* wr, ibv_recv_wr_1_0** bad_wr) {
    ibv_context* real = qp->context->real_context;
    return post_batched<ibv_recv_wr_1_0, ibv_recv_wr>(
        wr, bad_wr, convert_recv,
        [real, qp](ibv_recv_wr* first, ibv_recv_wr** bad) { return real->ops.post_recv(qp->real_qp, first, bad); });
}

int post_srq_recv_1_0(ibv_srq_1_0* srq, ibv_recv_wr_1_0* wr, ibv_recv_wr_1_0** bad_wr) {
    ibv_context* real = srq->context->real_context;
    return post_batched<ibv_recv_wr_1_0, ibv_recv_wr>(wr, bad_wr, convert_recv,
                                                      [real, srq](ibv_recv_wr* first, ibv_recv_wr** bad) {
                                                          return real->ops.post_srq_recv(srq->real_srq, first, bad);
                                                      });
}

template <class T>
T* zalloc() {
    return static_cast<T*>(calloc(1, sizeof(T)));
}

// A new zeroed 1.0 wrapper whose real object make(wrapper) creates; make
// returns the real object (nullptr with errno set on failure, and then
// the wrapper is freed).
template <class T, class Make>
T* wrap_new(Make make) {
    T* w = zalloc<T>();
    if (!w) {
        errno = ENOMEM;
        return nullptr;
    }
    if (!make(w)) {
        free(w);
        return nullptr;
    }
    return w;
}

// Free the wrapper only when the real object went away.
template <class T, class F>
int destroy_wrapped(T* w, F destroy_real) {
    int ret = destroy_real();
    if (ret == 0)
        free(w);
    return ret;
}

// Bodies of the longer entry points below (which add the C-entry barrier).

// The 1.0 device list: a hidden slot before the array keeps the real list.
ibv_device_1_0** get_device_list(int* num) {
    int n = 0;
    ibv_device** real = ibv_get_device_list(&n);
    if (!real)
        return nullptr;
    auto** list = static_cast<ibv_device_1_0**>(calloc(static_cast<size_t>(n) + 2, sizeof(ibv_device_1_0*)));
    if (!list) {
        ibv_free_device_list(real);
        errno = ENOMEM;
        return nullptr;
    }
    list[0] = reinterpret_cast<ibv_device_1_0*>(real);
    for (int i = 0; i < n; ++i) {
        list[i + 1] = zalloc<ibv_device_1_0>();
        if (!list[i + 1]) {
            for (int j = 1; j <= i; ++j)
                free(list[j]);
            free(list);
            ibv_free_device_list(real);
            errno = ENOMEM;
            return nullptr;
        }
        list[i + 1]->real_device = real[i];
    }
    if (num)
        *num = n;
    return list + 1;
}

ibv_context_1_0* open_device(ibv_device_1_0* device) {
    auto* ctx = zalloc<ibv_context_1_0>();
    if (!ctx) {
        errno = ENOMEM;
        return nullptr;
    }
    ctx->real_context = ibv_open_device(device->real_device);
    if (!ctx->real_context) {
        free(ctx);
        return nullptr;
    }
    ctx->device = device;
    ctx->cmd_fd = ctx->real_context->cmd_fd;
    ctx->async_fd = ctx->real_context->async_fd;
    ctx->num_comp_vectors = ctx->real_context->num_comp_vectors;
    ctx->ops.poll_cq = poll_cq_1_0;
    ctx->ops.req_notify_cq = req_notify_cq_1_0;
    ctx->ops.post_send = post_send_1_0;
    ctx->ops.post_recv = post_recv_1_0;
    ctx->ops.post_srq_recv = post_srq_recv_1_0;
    return ctx;
}

ibv_qp_1_0* create_qp(ibv_pd_1_0* pd, ibv_qp_init_attr_1_0* attr) {
    auto* qp = zalloc<ibv_qp_1_0>();
    if (!qp) {
        errno = ENOMEM;
        return nullptr;
    }
    ibv_qp_init_attr real{};
    real.qp_context = attr->qp_context;
    real.send_cq = attr->send_cq->real_cq;
    real.recv_cq = attr->recv_cq->real_cq;
    real.srq = attr->srq ? attr->srq->real_srq : nullptr;
    real.cap = attr->cap;
    real.qp_type = attr->qp_type;
    real.sq_sig_all = attr->sq_sig_all;
    qp->real_qp = ibv_create_qp(pd->real_pd, &real);
    if (!qp->real_qp) {
        free(qp);
        return nullptr;
    }
    qp->context = pd->context;
    qp->qp_context = attr->qp_context;
    qp->pd = pd;
    qp->send_cq = attr->send_cq;
    qp->recv_cq = attr->recv_cq;
    qp->srq = attr->srq;
    qp->qp_type = attr->qp_type;
    qp->qp_num = qp->real_qp->qp_num;
    qp->handle = qp->real_qp->handle;
    qp->real_qp->qp_context = qp;
    attr->cap = real.cap;
    return qp;
}

int query_qp(ibv_qp_1_0* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr_1_0* init) {
    ibv_qp_init_attr real{};
    if (int ret = ibv_query_qp(qp->real_qp, attr, mask, &real))
        return ret;
    init->qp_context = qp->qp_context;
    init->send_cq = qp->send_cq;
    init->recv_cq = qp->recv_cq;
    init->srq = qp->srq;
    init->qp_type = real.qp_type;
    init->cap = real.cap;
    init->sq_sig_all = real.sq_sig_all;
    return 0;
}

}  // namespace

extern "C" {

RDMA_EXPORT ibv_device_1_0** ibv_get_device_list_1_0(int* num) {
    return rdma::entry_null([&] { return get_device_list(num); });
}
RDMA_COMPAT_1_0(ibv_get_device_list_1_0, ibv_get_device_list);

RDMA_EXPORT void ibv_free_device_list_1_0(ibv_device_1_0** list) {
    rdma::entry_void([&] {
        for (ibv_device_1_0** p = list; *p; ++p)
            free(*p);
        ibv_free_device_list(reinterpret_cast<ibv_device**>(list[-1]));
        free(list - 1);
    });
}
RDMA_COMPAT_1_0(ibv_free_device_list_1_0, ibv_free_device_list);

// A plain read through the wrapper: noexcept.
RDMA_EXPORT const char* ibv_get_device_name_1_0(ibv_device_1_0* d) noexcept {
    return ibv_get_device_name(d->real_device);
}
RDMA_COMPAT_1_0(ibv_get_device_name_1_0, ibv_get_device_name);

RDMA_EXPORT __be64 ibv_get_device_guid_1_0(ibv_device_1_0* d) {
    return rdma::entry_value(__be64{0}, [&] { return ibv_get_device_guid(d->real_device); });
}
RDMA_COMPAT_1_0(ibv_get_device_guid_1_0, ibv_get_device_guid);

RDMA_EXPORT ibv_context_1_0* ibv_open_device_1_0(ibv_device_1_0* device) {
    return rdma::entry_null([&] { return open_device(device); });
}
RDMA_COMPAT_1_0(ibv_open_device_1_0, ibv_open_device);

RDMA_EXPORT int ibv_close_device_1_0(ibv_context_1_0* ctx) {
    return rdma::entry_errno(
        [&] { return destroy_wrapped(ctx, [ctx] { return ibv_close_device(ctx->real_context); }); });
}
RDMA_COMPAT_1_0(ibv_close_device_1_0, ibv_close_device);

// Events name the 1.0 wrappers, which the real objects carry as their
// user context pointers. The event calls stay outside the barrier, as
// their 1.1 versions do (events.cpp, verbs.cpp): they cannot throw, and
// the reads they block in must let a cancellation's forced unwind pass.
// The acknowledgements are pointer swaps and pthread calls: noexcept.
RDMA_EXPORT int ibv_get_async_event_1_0(ibv_context_1_0* ctx, ibv_async_event* ev) {
    if (int ret = ibv_get_async_event(ctx->real_context, ev))
        return ret;
    switch (ev->event_type) {
    case IBV_EVENT_CQ_ERR: ev->element.cq = static_cast<ibv_cq*>(ev->element.cq->cq_context); break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: ev->element.qp = static_cast<ibv_qp*>(ev->element.qp->qp_context); break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: ev->element.srq = static_cast<ibv_srq*>(ev->element.srq->srq_context); break;
    default: break;
    }
    return 0;
}
RDMA_COMPAT_1_0(ibv_get_async_event_1_0, ibv_get_async_event);

RDMA_EXPORT void ibv_ack_async_event_1_0(ibv_async_event* ev) noexcept {
    ibv_async_event real = *ev;
    switch (ev->event_type) {
    case IBV_EVENT_CQ_ERR: real.element.cq = reinterpret_cast<ibv_cq_1_0*>(ev->element.cq)->real_cq; break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: real.element.qp = reinterpret_cast<ibv_qp_1_0*>(ev->element.qp)->real_qp; break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        real.element.srq = reinterpret_cast<ibv_srq_1_0*>(ev->element.srq)->real_srq;
        break;
    default: break;
    }
    ibv_ack_async_event(&real);
}
RDMA_COMPAT_1_0(ibv_ack_async_event_1_0, ibv_ack_async_event);

RDMA_EXPORT int ibv_query_device_1_0(ibv_context_1_0* ctx, ibv_device_attr* attr) {
    return rdma::entry_errno([&] { return ibv_query_device(ctx->real_context, attr); });
}
RDMA_COMPAT_1_0(ibv_query_device_1_0, ibv_query_device);

RDMA_EXPORT int ibv_query_port_1_0(ibv_context_1_0* ctx, uint8_t port, ibv_port_attr* attr) {
    return rdma::entry_errno([&] { return ibv_query_port(ctx->real_context, port, attr); });
}
RDMA_COMPAT_1_0(ibv_query_port_1_0, ibv_query_port);

RDMA_EXPORT int ibv_query_gid_1_0(ibv_context_1_0* ctx, uint8_t port, int index, ibv_gid* gid) {
    return rdma::entry_minus_one([&] { return ibv_query_gid(ctx->real_context, port, index, gid); });
}
RDMA_COMPAT_1_0(ibv_query_gid_1_0, ibv_query_gid);

RDMA_EXPORT int ibv_query_pkey_1_0(ibv_context_1_0* ctx, uint8_t port, int index, __be16* pkey) {
    return rdma::entry_minus_one([&] { return ibv_query_pkey(ctx->real_context, port, index, pkey); });
}
RDMA_COMPAT_1_0(ibv_query_pkey_1_0, ibv_query_pkey);

RDMA_EXPORT ibv_pd_1_0* ibv_alloc_pd_1_0(ibv_context_1_0* ctx) {
    return rdma::entry_null([&] {
        return wrap_new<ibv_pd_1_0>([ctx](ibv_pd_1_0* pd) {
            pd->real_pd = ibv_alloc_pd(ctx->real_context);
            if (pd->real_pd) {
                pd->context = ctx;
                pd->handle = pd->real_pd->handle;
            }
            return pd->real_pd;
        });
    });
}
RDMA_COMPAT_1_0(ibv_alloc_pd_1_0, ibv_alloc_pd);

RDMA_EXPORT int ibv_dealloc_pd_1_0(ibv_pd_1_0* pd) {
    return rdma::entry_errno([&] { return destroy_wrapped(pd, [pd] { return ibv_dealloc_pd(pd->real_pd); }); });
}
RDMA_COMPAT_1_0(ibv_dealloc_pd_1_0, ibv_dealloc_pd);

RDMA_EXPORT ibv_mr_1_0* ibv_reg_mr_1_0(ibv_pd_1_0* pd, void* addr, size_t length, int access) {
    return rdma::entry_null([&] {
        return wrap_new<ibv_mr_1_0>([=](ibv_mr_1_0* mr) {
            mr->real_mr = (ibv_reg_mr)(pd->real_pd, addr, length, access);
            if (mr->real_mr) {
                mr->context = pd->context;
                mr->pd = pd;
                mr->handle = mr->real_mr->handle;
                mr->lkey = mr->real_mr->lkey;
                mr->rkey = mr->real_mr->rkey;
            }
            return mr->real_mr;
        });
    });
}
RDMA_COMPAT_1_0(ibv_reg_mr_1_0, ibv_reg_mr);

RDMA_EXPORT int ibv_dereg_mr_1_0(ibv_mr_1_0* mr) {
    return rdma::entry_errno([&] { return destroy_wrapped(mr, [mr] { return ibv_dereg_mr(mr->real_mr); }); });
}
RDMA_COMPAT_1_0(ibv_dereg_mr_1_0, ibv_dereg_mr);

RDMA_EXPORT ibv_cq_1_0* ibv_create_cq_1_0(ibv_context_1_0* ctx, int cqe, void* cq_context, ibv_comp_channel* channel,
                                          int comp_vector) {
    return rdma::entry_null([&] {
        return wrap_new<ibv_cq_1_0>([=](ibv_cq_1_0* cq) {
            cq->real_cq = ibv_create_cq(ctx->real_context, cqe, cq_context, channel, comp_vector);
            if (cq->real_cq) {
                cq->context = ctx;
                cq->cq_context = cq_context;
                cq->cqe = cq->real_cq->cqe;
                cq->handle = cq->real_cq->handle;
                cq->real_cq->cq_context = cq;  // events find the wrapper
            }
            return cq->real_cq;
        });
    });
}
RDMA_COMPAT_1_0(ibv_create_cq_1_0, ibv_create_cq);

RDMA_EXPORT int ibv_resize_cq_1_0(ibv_cq_1_0* cq, int cqe) {
    return rdma::entry_errno([&] {
        int ret = ibv_resize_cq(cq->real_cq, cqe);
        if (ret == 0)
            cq->cqe = cq->real_cq->cqe;
        return ret;
    });
}
RDMA_COMPAT_1_0(ibv_resize_cq_1_0, ibv_resize_cq);

RDMA_EXPORT int ibv_destroy_cq_1_0(ibv_cq_1_0* cq) {
    return rdma::entry_errno([&] { return destroy_wrapped(cq, [cq] { return ibv_destroy_cq(cq->real_cq); }); });
}
RDMA_COMPAT_1_0(ibv_destroy_cq_1_0, ibv_destroy_cq);

RDMA_EXPORT int ibv_get_cq_event_1_0(ibv_comp_channel* channel, ibv_cq_1_0** cq, void** cq_context) {
    ibv_cq* real = nullptr;
    void* wrapper = nullptr;
    if (int ret = ibv_get_cq_event(channel, &real, &wrapper))
        return ret;
    *cq = static_cast<ibv_cq_1_0*>(wrapper);
    *cq_context = (*cq)->cq_context;
    return 0;
}
RDMA_COMPAT_1_0(ibv_get_cq_event_1_0, ibv_get_cq_event);

RDMA_EXPORT void ibv_ack_cq_events_1_0(ibv_cq_1_0* cq, unsigned int nevents) noexcept {
    ibv_ack_cq_events(cq->real_cq, nevents);
}
RDMA_COMPAT_1_0(ibv_ack_cq_events_1_0, ibv_ack_cq_events);

RDMA_EXPORT ibv_srq_1_0* ibv_create_srq_1_0(ibv_pd_1_0* pd, ibv_srq_init_attr* attr) {
    return rdma::entry_null([&] {
        return wrap_new<ibv_srq_1_0>([=](ibv_srq_1_0* srq) {
            srq->real_srq = ibv_create_srq(pd->real_pd, attr);
            if (srq->real_srq) {
                srq->context = pd->context;
                srq->srq_context = attr->srq_context;
                srq->pd = pd;
                srq->handle = srq->real_srq->handle;
                srq->real_srq->srq_context = srq;  // events find the wrapper
            }
            return srq->real_srq;
        });
    });
}
RDMA_COMPAT_1_0(ibv_create_srq_1_0, ibv_create_srq);

RDMA_EXPORT int ibv_modify_srq_1_0(ibv_srq_1_0* srq, ibv_srq_attr* attr, int mask) {
    return rdma::entry_errno([&] { return ibv_modify_srq(srq->real_srq, attr, mask); });
}
RDMA_COMPAT_1_0(ibv_modify_srq_1_0, ibv_modify_srq);

RDMA_EXPORT int ibv_query_srq_1_0(ibv_srq_1_0* srq, ibv_srq_attr* attr) {
    return rdma::entry_errno([&] { return ibv_query_srq(srq->real_srq, attr); });
}
RDMA_COMPAT_1_0(ibv_query_srq_1_0, ibv_query_srq);

RDMA_EXPORT int ibv_destroy_srq_1_0(ibv_srq_1_0* srq) {
    return rdma::entry_errno([&] { return destroy_wrapped(srq, [srq] { return ibv_destroy_srq(srq->real_srq); }); });
}
RDMA_COMPAT_1_0(ibv_destroy_srq_1_0, ibv_destroy_srq);

RDMA_EXPORT ibv_qp_1_0* ibv_create_qp_1_0(ibv_pd_1_0* pd, ibv_qp_init_attr_1_0* attr) {
    return rdma::entry_null([&] { return create_qp(pd, attr); });
}
RDMA_COMPAT_1_0(ibv_create_qp_1_0, ibv_create_qp);

RDMA_EXPORT int ibv_query_qp_1_0(ibv_qp_1_0* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr_1_0* init) {
    return rdma::entry_errno([&] { return query_qp(qp, attr, mask, init); });
}
RDMA_COMPAT_1_0(ibv_query_qp_1_0, ibv_query_qp);

RDMA_EXPORT int ibv_modify_qp_1_0(ibv_qp_1_0* qp, ibv_qp_attr* attr, int mask) {
    return rdma::entry_errno([&] {
        int ret = ibv_modify_qp(qp->real_qp, attr, mask);
        if (ret == 0 && (mask & IBV_QP_STATE))
            qp->state = attr->qp_state;
        return ret;
    });
}
RDMA_COMPAT_1_0(ibv_modify_qp_1_0, ibv_modify_qp);

RDMA_EXPORT int ibv_destroy_qp_1_0(ibv_qp_1_0* qp) {
    return rdma::entry_errno([&] { return destroy_wrapped(qp, [qp] { return ibv_destroy_qp(qp->real_qp); }); });
}
RDMA_COMPAT_1_0(ibv_destroy_qp_1_0, ibv_destroy_qp);

RDMA_EXPORT ibv_ah_1_0* ibv_create_ah_1_0(ibv_pd_1_0* pd, ibv_ah_attr* attr) {
    return rdma::entry_null([&] {
        return wrap_new<ibv_ah_1_0>([=](ibv_ah_1_0* ah) {
            ah->real_ah = ibv_create_ah(pd->real_pd, attr);
            if (ah->real_ah) {
                ah->context = pd->context;
                ah->pd = pd;
                ah->handle = ah->real_ah->handle;
            }
            return ah->real_ah;
        });
    });
}
RDMA_COMPAT_1_0(ibv_create_ah_1_0, ibv_create_ah);

RDMA_EXPORT int ibv_destroy_ah_1_0(ibv_ah_1_0* ah) {
    return rdma::entry_errno([&] { return destroy_wrapped(ah, [ah] { return ibv_destroy_ah(ah->real_ah); }); });
}
RDMA_COMPAT_1_0(ibv_destroy_ah_1_0, ibv_destroy_ah);

RDMA_EXPORT int ibv_attach_mcast_1_0(ibv_qp_1_0* qp, ibv_gid* gid, uint16_t lid) {
    return rdma::entry_errno([&] { return ibv_attach_mcast(qp->real_qp, gid, lid); });
}
RDMA_COMPAT_1_0(ibv_attach_mcast_1_0, ibv_attach_mcast);

RDMA_EXPORT int ibv_detach_mcast_1_0(ibv_qp_1_0* qp, ibv_gid* gid, uint16_t lid) {
    return rdma::entry_errno([&] { return ibv_detach_mcast(qp->real_qp, gid, lid); });
}
RDMA_COMPAT_1_0(ibv_detach_mcast_1_0, ibv_detach_mcast);

}  // extern "C"
