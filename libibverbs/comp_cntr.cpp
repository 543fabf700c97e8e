// Completion counters (IBVERBS_1.18) and the effective port speed (1.16):
// entry points over the provider's Context ops, which answer EOPNOTSUPP
// where the device has no such feature (every device of this tree today).
#include "libibverbs/ibverbs.h"
#include "util/c_entry.h"

#include <cstring>

using namespace rdma::verbs;

namespace rdma::verbs {

ibv_comp_cntr* Context::create_comp_cntr(ibv_comp_cntr_init_attr*) {
    errno = EOPNOTSUPP;
    return nullptr;
}

}  // namespace rdma::verbs

namespace {

Context* ctx_of(ibv_comp_cntr* c) { return Context::from(c->context); }

// ibv_set/inc(_err)_comp_cntr: one op, as the kernel has one method.
int modify(ibv_comp_cntr* c, Context::CntrEntry entry, Context::CntrOp op, uint64_t value) {
    return rdma::entry_errno([&] { return ctx_of(c)->modify_comp_cntr(c, entry, op, value); });
}

}  // namespace

extern "C" {

// The caps are cleared first, so a caller of an older or newer layout sees
// zeros for whatever the provider does not fill.
RDMA_EXPORT int _ibv_query_comp_cntr_caps(ibv_context* context, ibv_comp_cntr_caps* caps, size_t caps_size) {
    return rdma::entry_errno([&] {
        if (!caps)
            return EINVAL;
        std::memset(caps, 0, caps_size);
        return Context::from(context)->query_comp_cntr_caps(caps, caps_size);
    });
}

RDMA_EXPORT ibv_comp_cntr* ibv_create_comp_cntr(ibv_context* context, ibv_comp_cntr_init_attr* cc_attr) {
    return rdma::entry_null([&] { return Context::from(context)->create_comp_cntr(cc_attr); });
}

RDMA_EXPORT int ibv_destroy_comp_cntr(ibv_comp_cntr* comp_cntr) {
    return rdma::entry_errno([&] { return ctx_of(comp_cntr)->destroy_comp_cntr(comp_cntr); });
}

RDMA_EXPORT int ibv_set_comp_cntr(ibv_comp_cntr* comp_cntr, uint64_t value) {
    return modify(comp_cntr, Context::CntrEntry::Comp, Context::CntrOp::Set, value);
}

RDMA_EXPORT int ibv_set_err_comp_cntr(ibv_comp_cntr* comp_cntr, uint64_t value) {
    return modify(comp_cntr, Context::CntrEntry::Err, Context::CntrOp::Set, value);
}

RDMA_EXPORT int ibv_inc_comp_cntr(ibv_comp_cntr* comp_cntr, uint64_t amount) {
    return modify(comp_cntr, Context::CntrEntry::Comp, Context::CntrOp::Inc, amount);
}

RDMA_EXPORT int ibv_inc_err_comp_cntr(ibv_comp_cntr* comp_cntr, uint64_t amount) {
    return modify(comp_cntr, Context::CntrEntry::Err, Context::CntrOp::Inc, amount);
}

RDMA_EXPORT int ibv_read_comp_cntr(ibv_comp_cntr* comp_cntr, uint64_t* value) {
    return rdma::entry_errno(
        [&] { return ctx_of(comp_cntr)->read_comp_cntr(comp_cntr, Context::CntrEntry::Comp, value); });
}

RDMA_EXPORT int ibv_read_err_comp_cntr(ibv_comp_cntr* comp_cntr, uint64_t* value) {
    return rdma::entry_errno(
        [&] { return ctx_of(comp_cntr)->read_comp_cntr(comp_cntr, Context::CntrEntry::Err, value); });
}

RDMA_EXPORT int ibv_qp_attach_comp_cntr(ibv_qp* qp, ibv_comp_cntr* comp_cntr, ibv_qp_attach_comp_cntr_attr* attr) {
    return rdma::entry_errno([&] { return Context::from(qp->context)->qp_attach_comp_cntr(qp, comp_cntr, attr); });
}

// In units of 100 Mb/s; *port_speed is written only on success.
RDMA_EXPORT int ibv_query_port_speed(ibv_context* context, uint32_t port_num, uint64_t* port_speed) {
    return rdma::entry_errno([&] {
        if (!port_speed)
            return EINVAL;
        return Context::from(context)->query_port_speed(port_num, port_speed);
    });
}

}  // extern "C"
