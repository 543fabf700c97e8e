// Asynchronous events: read from the context's async fd and acknowledged
// per object so that destroy can wait for every event it handed out.
#include "libibverbs/ibverbs.h"

#include <rdma/ib_user_verbs.h>
#include <unistd.h>

#include <cstdint>

using namespace rdma::verbs;

namespace {

template <class Obj>
void ack_one(Obj* o, unsigned int Obj::*counter) {
    pthread_mutex_lock(&o->mutex);
    ++(o->*counter);
    pthread_cond_signal(&o->cond);
    pthread_mutex_unlock(&o->mutex);
}

}  // namespace

extern "C" {

// Neither entry point can throw (read(2), pthread calls and pointer
// casts), so neither needs the C-entry barrier. ibv_get_async_event is a
// blocking read, the usual place a thread gets cancelled: glibc's forced
// unwind must pass through, which a noexcept or catch(...) would stop.
// (noexcept cannot be spelled anyway: verbs.h declares both without it.)
RDMA_EXPORT int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
    ib_uverbs_async_event_desc desc;
    ssize_t n;
    do {
        n = ::read(context->async_fd, &desc, sizeof(desc));
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof(desc)))
        return -1;
    event->event_type = static_cast<ibv_event_type>(desc.event_type);
    // The element is the user handle given at creation: our object pointer
    // for CQ/QP/SRQ/WQ, the port number for port events.
    void* obj = reinterpret_cast<void*>(static_cast<uintptr_t>(desc.element));
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR: event->element.cq = static_cast<ibv_cq*>(obj); break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: event->element.qp = static_cast<ibv_qp*>(obj); break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: event->element.srq = static_cast<ibv_srq*>(obj); break;
    case IBV_EVENT_WQ_FATAL: event->element.wq = static_cast<ibv_wq*>(obj); break;
    default: event->element.port_num = static_cast<int>(desc.element); break;
    }
    return 0;
}

RDMA_EXPORT void ibv_ack_async_event(ibv_async_event* event) {
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR: ack_one(event->element.cq, &ibv_cq::async_events_completed); break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: ack_one(event->element.qp, &ibv_qp::events_completed); break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: ack_one(event->element.srq, &ibv_srq::events_completed); break;
    case IBV_EVENT_WQ_FATAL: ack_one(event->element.wq, &ibv_wq::events_completed); break;
    default: break;
    }
}

}  // extern "C"

// These names also have a 1.0 ABI version (compat_1_0.cpp): the
// definitions here are bound to IBVERBS_1.1 as the default version.
RDMA_DEFAULT_VERSION(ibv_get_async_event, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_ack_async_event, IBVERBS_1.1);
