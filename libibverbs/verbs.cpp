// Exported object verbs: each validates, dispatches to the provider's
// context, and keeps the library-side bookkeeping (fork ranges, channel
// reference counts, event acknowledgements).
#include "libibverbs/cmd_write.h"
#include "libibverbs/ibverbs.h"
#include "util/c_entry.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>

using namespace rdma::verbs;

namespace {

Context* ctx_of(ibv_context* c) { return Context::from(c); }

void* fail(int e) {
    errno = e;
    return nullptr;
}

ibv_mr* register_mr(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
    if (!pd)
        return static_cast<ibv_mr*>(fail(EINVAL));
    Context* c = ctx_of(pd->context);
    // Kernels without optional-access support reject unknown bits: the
    // optional ones are dropped for them, as their name promises.
    if (!(c->core_support() & IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS))
        access &= ~static_cast<unsigned int>(IBV_ACCESS_OPTIONAL_RANGE);
    // On-demand paging pins nothing, so there is nothing to keep from a
    // fork (and an implicit MR's range is the whole address space).
    const bool odp = access & IBV_ACCESS_ON_DEMAND;
    if (!odp)
        if (int e = ibv_dontfork_range(addr, length))
            return static_cast<ibv_mr*>(fail(e));
    ForkRangeUndo undo{addr, length, !odp};
    ibv_mr* mr = c->reg_mr(pd, addr, length, iova, static_cast<int>(access));
    if (mr) {
        reinterpret_cast<VerbsMr*>(mr)->fork_pinned = !odp;
        undo.armed = false;
    }
    return mr;
}

int rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
    if (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) {
        errno = EINVAL;
        return IBV_REREG_MR_ERR_INPUT;
    }
    const bool translate = flags & IBV_REREG_MR_CHANGE_TRANSLATION;
    if ((translate && (!addr || !length)) || (!translate && (addr || length)) ||
        ((flags & IBV_REREG_MR_CHANGE_PD) && !pd)) {
        errno = EINVAL;
        return IBV_REREG_MR_ERR_INPUT;
    }
    // No flags at all still goes to the kernel, which refuses it (EINVAL):
    // the reference does not answer for it either.
    if (translate && ibv_dontfork_range(addr, length)) {
        return IBV_REREG_MR_ERR_DONT_FORK_NEW;
    }
    ForkRangeUndo undo{addr, length, translate};
    void* old_addr = mr->addr;
    size_t old_len = mr->length;
    int e = ctx_of(mr->context)->rereg_mr(reinterpret_cast<VerbsMr*>(mr), flags, pd, addr, length, access);
    if (e) {
        errno = e;
        return IBV_REREG_MR_ERR_CMD;
    }
    undo.armed = false;
    if (flags & IBV_REREG_MR_CHANGE_PD)
        mr->pd = pd;
    if (translate) {
        mr->addr = addr;
        mr->length = length;
        if (ibv_dofork_range(old_addr, old_len))
            return IBV_REREG_MR_ERR_DO_FORK_OLD;
    }
    return 0;
}

}  // namespace

extern "C" {

// ---------------------------------------------------------------------- PD

RDMA_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* context) {
    return rdma::entry_null([&] { return ctx_of(context)->alloc_pd(); });
}

RDMA_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
    return rdma::entry_errno([&] { return ctx_of(pd->context)->dealloc_pd(pd); });
}

// ---------------------------------------------------------------------- MR

// The plain symbols; verbs.h wraps them in macros that route optional
// access flags to ibv_reg_mr_iova2, so the names are parenthesised here.
RDMA_EXPORT ibv_mr*(ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) {
    return rdma::entry_null([&] {
        return register_mr(pd, addr, length, reinterpret_cast<uintptr_t>(addr), static_cast<unsigned int>(access));
    });
}

RDMA_EXPORT ibv_mr*(ibv_reg_mr_iova)(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
    return rdma::entry_null([&] { return register_mr(pd, addr, length, iova, static_cast<unsigned int>(access)); });
}

RDMA_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
    return rdma::entry_null([&] { return register_mr(pd, addr, length, iova, access); });
}

RDMA_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) {
    return rdma::entry_null([&] { return ctx_of(pd->context)->reg_dmabuf_mr(pd, offset, length, iova, fd, access); });
}

// A failure the provider throws is a failed command.
RDMA_EXPORT int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
    return rdma::entry_value(static_cast<int>(IBV_REREG_MR_ERR_CMD),
                             [&] { return rereg_mr(mr, flags, pd, addr, length, access); });
}

RDMA_EXPORT int ibv_dereg_mr(ibv_mr* mr) {
    return rdma::entry_errno([&] {
        void* addr = mr->addr;
        size_t length = mr->length;
        const bool pinned = reinterpret_cast<VerbsMr*>(mr)->fork_pinned;
        int e = ctx_of(mr->context)->dereg_mr(reinterpret_cast<VerbsMr*>(mr));
        if (e == 0 && pinned)
            ibv_dofork_range(addr, length);
        return e;
    });
}

// ------------------------------------------------------ completion channel

static ibv_comp_channel* create_comp_channel(ibv_context* context) {
    auto* ch = static_cast<ibv_comp_channel*>(calloc(1, sizeof(ibv_comp_channel)));
    if (!ch)
        return static_cast<ibv_comp_channel*>(fail(ENOMEM));
    ib_uverbs_create_comp_channel cmd{};
    ib_uverbs_create_comp_channel_resp resp{};
    cmd.response = reinterpret_cast<uintptr_t>(&resp);
    if (int e = write_cmd(Context::from(context)->cmd_channel(), IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, cmd, &resp)) {
        free(ch);
        return static_cast<ibv_comp_channel*>(fail(e));
    }
    ch->context = context;
    ch->fd = static_cast<int>(resp.fd);
    ch->refcnt = 0;
    return ch;
}

static int destroy_comp_channel(ibv_comp_channel* channel) {
    ibv_context* c = channel->context;
    pthread_mutex_lock(&c->mutex);
    const bool busy = channel->refcnt != 0;
    pthread_mutex_unlock(&c->mutex);
    if (busy)
        return EBUSY;
    close(channel->fd);
    free(channel);
    return 0;
}

RDMA_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
    return rdma::entry_null([&] { return create_comp_channel(context); });
}

RDMA_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
    return rdma::entry_errno([&] { return destroy_comp_channel(channel); });
}

// The event pair stays outside the barrier: neither can throw (read(2),
// pthread calls, pointer copies), and ibv_get_cq_event blocks in a read,
// where event threads get cancelled; glibc's forced unwind must pass
// there, which a catch(...) or noexcept would stop. (noexcept cannot be
// spelled anyway: verbs.h declares both without it.)
RDMA_EXPORT int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
    ib_uverbs_comp_event_desc ev;
    ssize_t n;
    do {
        n = read(channel->fd, &ev, sizeof(ev));
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof(ev)))
        return -1;
    *cq = reinterpret_cast<ibv_cq*>(static_cast<uintptr_t>(ev.cq_handle));
    *cq_context = (*cq)->cq_context;
    Context::from((*cq)->context)->cq_event(*cq);
    return 0;
}

RDMA_EXPORT void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

// ---------------------------------------------------------------------- CQ

RDMA_EXPORT ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                                  int comp_vector) {
    return rdma::entry_null([&] {
        if (cqe <= 0 || comp_vector < 0 || (channel && channel->context != context))
            return static_cast<ibv_cq*>(fail(EINVAL));
        ibv_cq* cq = ctx_of(context)->create_cq(cqe, channel, comp_vector);
        if (cq)
            cq->cq_context = cq_context;
        return cq;
    });
}

RDMA_EXPORT int ibv_resize_cq(ibv_cq* cq, int cqe) {
    return rdma::entry_errno([&] {
        if (cqe <= 0)
            return EINVAL;
        return ctx_of(cq->context)->resize_cq(cq, cqe);
    });
}

RDMA_EXPORT int ibv_destroy_cq(ibv_cq* cq) {
    return rdma::entry_errno([&] { return ctx_of(cq->context)->destroy_cq(cq); });
}

// ---------------------------------------------------------------------- QP

RDMA_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
    return rdma::entry_null([&] {
        if (!pd || !attr)
            return static_cast<ibv_qp*>(fail(EINVAL));
        return ctx_of(pd->context)->create_qp(pd, attr);
    });
}

RDMA_EXPORT int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) {
    return rdma::entry_errno([&] { return ctx_of(qp->context)->query_qp(qp, attr, attr_mask, init_attr); });
}

RDMA_EXPORT int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
    return rdma::entry_errno([&] { return ctx_of(qp->context)->modify_qp(qp, attr, attr_mask); });
}

RDMA_EXPORT int ibv_destroy_qp(ibv_qp* qp) {
    return rdma::entry_errno([&] { return ctx_of(qp->context)->destroy_qp(qp); });
}

// A field read: cannot throw. (noexcept cannot be spelled: verbs.h
// declares it without.)
RDMA_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
    auto* v = reinterpret_cast<VerbsQp*>(qp);
    return v->has_qp_ex ? &v->qp_ex : nullptr;
}

// Providers that say nothing about data placement order answer 0 ("no
// guarantee"), as the reference does for them; so does a provider that
// throws.
RDMA_EXPORT int ibv_query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags) {
    return rdma::entry_value(0, [&] { return ctx_of(qp->context)->query_qp_data_in_order(qp, op, flags); });
}

// --------------------------------------------------------------------- SRQ

RDMA_EXPORT ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
    return rdma::entry_null([&] {
        if (!pd || !attr)
            return static_cast<ibv_srq*>(fail(EINVAL));
        return ctx_of(pd->context)->create_srq(pd, attr);
    });
}

RDMA_EXPORT int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask) {
    return rdma::entry_errno([&] { return ctx_of(srq->context)->modify_srq(srq, attr, attr_mask); });
}

RDMA_EXPORT int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
    return rdma::entry_errno([&] { return ctx_of(srq->context)->query_srq(srq, attr); });
}

RDMA_EXPORT int ibv_destroy_srq(ibv_srq* srq) {
    return rdma::entry_errno([&] { return ctx_of(srq->context)->destroy_srq(srq); });
}

// ---------------------------------------------------------------------- AH

RDMA_EXPORT ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
    return rdma::entry_null([&] {
        if (!pd || !attr)
            return static_cast<ibv_ah*>(fail(EINVAL));
        return ctx_of(pd->context)->create_ah(pd, attr);
    });
}

RDMA_EXPORT int ibv_destroy_ah(ibv_ah* ah) {
    return rdma::entry_errno([&] { return ctx_of(ah->context)->destroy_ah(ah); });
}

// --------------------------------------------------------------- multicast

RDMA_EXPORT int ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
    return rdma::entry_errno([&] { return ctx_of(qp->context)->attach_mcast(qp, gid, lid); });
}

RDMA_EXPORT int ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
    return rdma::entry_errno([&] { return ctx_of(qp->context)->detach_mcast(qp, gid, lid); });
}

}  // extern "C"

// These names also have a 1.0 ABI version (compat_1_0.cpp): the
// definitions here are bound to IBVERBS_1.1 as the default version.
RDMA_DEFAULT_VERSION(ibv_alloc_pd, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_dealloc_pd, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_reg_mr, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_dereg_mr, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_create_cq, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_resize_cq, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_destroy_cq, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_get_cq_event, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_ack_cq_events, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_create_srq, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_modify_srq, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_query_srq, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_destroy_srq, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_create_qp, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_query_qp, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_modify_qp, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_destroy_qp, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_create_ah, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_destroy_ah, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_attach_mcast, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_detach_mcast, IBVERBS_1.1);
