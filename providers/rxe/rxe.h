// Soft-RoCE (rdma_rxe) provider internals: the context, the objects whose
// queues the kernel shares with us, and the data-path entry points stored
// in ibv_context::ops.
//
// Every object struct begins with the libibverbs prefix (VerbsCq, VerbsQp,
// ...) whose first member is the public struct, so the public pointer and
// ours are the same address; the structs stay standard layout for that.
#pragma once

#include "libibverbs/driver.h"
#include "providers/rxe/rxe_queue.h"

#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_rxe.h>

#include <type_traits>

namespace rdma::rxe {

using verbs::Context;
using verbs::Udata;
using verbs::VerbsCq;
using verbs::VerbsMr;
using verbs::VerbsQp;
using verbs::VerbsSrq;

struct RxeCq {
    VerbsCq vcq;
    SpinLock lock;
    QueueMapping queue;
    // Extended polling (start_poll .. end_poll), under `lock`: the index of
    // the entry being read and the entry itself (nullptr once next_poll
    // ran past the last one).
    uint32_t poll_index;
    const ib_uverbs_wc* poll_wc;
};

// A ring we produce into (send queue, receive queue, SRQ).
struct WorkQueue {
    SpinLock lock;
    QueueMapping queue;
    uint32_t max_sge;
    uint32_t max_inline;
};

struct RxeQp {
    VerbsQp vqp;
    WorkQueue sq;
    WorkQueue rq;  // unmapped when receives go to an SRQ
    verbs::PreparedDoorbell doorbell;  // the empty POST_SEND after new send WQEs
    // ibv_wr_* batches (between wr_start and wr_complete/wr_abort, under
    // sq.lock): next free slot, the WQE the setters apply to, first error.
    uint32_t wr_index;
    rxe_send_wqe* wr_cur;
    int wr_err;
};

struct RxeSrq {
    VerbsSrq vsrq;
    WorkQueue rq;
};

struct RxeAh {
    ibv_ah ah;
    // The kernel's index of its own copy of the address vector; WQEs name
    // it. Kernels before ah_num existed report 0 and read the av instead.
    uint32_t ah_num;
    rxe_av av;
};

static_assert(std::is_standard_layout_v<RxeCq> && std::is_standard_layout_v<RxeQp> &&
              std::is_standard_layout_v<RxeSrq> && std::is_standard_layout_v<RxeAh>);
// The kernel writes ib_uverbs_wc; applications read ibv_wc: same layout.
static_assert(sizeof(ib_uverbs_wc) == sizeof(ibv_wc));

inline RxeCq* to_cq(ibv_cq* cq) { return reinterpret_cast<RxeCq*>(cq); }
inline RxeCq* to_cq(ibv_cq_ex* cq) { return reinterpret_cast<RxeCq*>(cq); }
inline RxeQp* to_qp(ibv_qp* qp) { return reinterpret_cast<RxeQp*>(qp); }
inline RxeQp* to_qp(ibv_qp_ex* qp) { return reinterpret_cast<RxeQp*>(qp); }
inline RxeSrq* to_srq(ibv_srq* srq) { return reinterpret_cast<RxeSrq*>(srq); }
inline RxeAh* to_ah(ibv_ah* ah) { return reinterpret_cast<RxeAh*>(ah); }

class RxeContext final : public Context {
public:
    RxeContext(verbs::Device& device, int cmd_fd);

    int query_device_ex(const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr, size_t attr_size) override;

    ibv_pd* alloc_pd() override;
    int dealloc_pd(ibv_pd* pd) override;
    ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access) override;
    int rereg_mr(VerbsMr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) override;
    int dereg_mr(VerbsMr* mr) override;
    ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) override;
    int dealloc_mw(ibv_mw* mw) override;

    ibv_cq* create_cq(int cqe, ibv_comp_channel* channel, int comp_vector) override;
    ibv_cq_ex* create_cq_ex(ibv_cq_init_attr_ex* attr) override;
    int resize_cq(ibv_cq* cq, int cqe) override;
    int destroy_cq(ibv_cq* cq) override;

    ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) override;
    ibv_qp* create_qp_ex(ibv_qp_init_attr_ex* attr) override;
    int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) override;
    int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) override;
    int destroy_qp(ibv_qp* qp) override;

    ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) override;
    int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask) override;
    int query_srq(ibv_srq* srq, ibv_srq_attr* attr) override;
    int destroy_srq(ibv_srq* srq) override;

    ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr) override;
    int destroy_ah(ibv_ah* ah) override;
    int attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) override;
    int detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) override;

private:
    // Shared by create_cq and create_cq_ex: the kernel command, the ring.
    RxeCq* new_cq(int cqe, ibv_comp_channel* channel, int comp_vector);
    // Shared by create_qp and create_qp_ex.
    RxeQp* new_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
};

// Data path (ibv_context::ops and the ibv_cq_ex / ibv_qp_ex hooks).
// Applications call these through verbs.h's inline functions, past every
// exported function and so past the C-entry barrier: none may throw, and
// none allocates. Those that only touch the shared rings are noexcept.
// The ones that ring the kernel (the doorbell and REQ_NOTIFY_CQ are a
// write(2)) are not: write is a cancellation point, and glibc's forced
// unwind through a noexcept frame would be std::terminate instead of the
// thread exit pthread_cancel means.
int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc) noexcept;
int req_notify_cq(ibv_cq* cq, int solicited_only);
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;
int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind);

void install_cq_ex_ops(ibv_cq_ex& cq, bool single_threaded = false);
void install_qp_ex_ops(ibv_qp_ex& qp);

// The inline address vector for kernels that do not report an ah_num.
int fill_av(ibv_context* context, const ibv_ah_attr& attr, rxe_av& av);

}  // namespace rdma::rxe
