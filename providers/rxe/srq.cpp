// Shared receive queues: one receive ring many QPs draw from. Posting is
// the receive path of qp.cpp; here the ring's life: create, resize through
// modify (the kernel reports the new ring's mminfo through a pointer we
// pass in the command), query, destroy.
#include "providers/rxe/rxe.h"

#include <memory>
#include <mutex>
#include <new>

namespace rdma::rxe {

ibv_srq* RxeContext::create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
    auto srq = std::unique_ptr<RxeSrq>(new (std::nothrow) RxeSrq{});
    if (!srq) {
        errno = ENOMEM;
        return nullptr;
    }
    rxe_create_srq_resp resp{};
    if (int e = cmd_create_srq(pd, attr, &srq->vsrq, Udata{nullptr, 0, &resp, sizeof(resp)})) {
        errno = e;
        return nullptr;
    }
    int e = srq->rq.queue.map(cmd_fd(), resp.mi);
    if (!e && !srq->rq.queue)
        e = EINVAL;
    if (e) {
        cmd_destroy_srq(&srq->vsrq.srq);
        errno = e;
        return nullptr;
    }
    srq->rq.max_sge = attr->attr.max_sge;  // as granted
    if (resp.srq_num)
        srq->vsrq.srq_num = resp.srq_num;
    return &srq.release()->vsrq.srq;
}

// A new max_wr makes the kernel build a new ring and copy the posted
// receives into it; posting is held off (the ring's lock) until we map it.
int RxeContext::modify_srq(ibv_srq* ibsrq, ibv_srq_attr* attr, int attr_mask) {
    RxeSrq* srq = to_srq(ibsrq);
    mminfo mi{};
    rxe_modify_srq_cmd drv{};
    drv.mmap_info_addr = reinterpret_cast<uintptr_t>(&mi);
    const Udata u{&drv, sizeof(drv), nullptr, 0};
    if (!(attr_mask & IBV_SRQ_MAX_WR))
        return cmd_modify_srq(ibsrq, attr, attr_mask, u);

    std::lock_guard guard(srq->rq.lock);
    if (int e = cmd_modify_srq(ibsrq, attr, attr_mask, u))
        return e;
    // The old ring is dead to the kernel now; without the new one, posts
    // fail with EINVAL rather than vanish.
    return srq->rq.queue.map(cmd_fd(), mi);
}

int RxeContext::query_srq(ibv_srq* srq, ibv_srq_attr* attr) { return cmd_query_srq(srq, attr); }

int RxeContext::destroy_srq(ibv_srq* srq) {
    if (int e = cmd_destroy_srq(srq))
        return e;
    delete to_srq(srq);
    return 0;
}

}  // namespace rdma::rxe
