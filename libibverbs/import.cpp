// Object import (IBVERBS_1.10, 1.13): a context made from another
// context's command fd (ibv_import_device, device.cpp) reaches the PDs, MRs
// and device memory of that context by their kernel handles. Which objects
// can be shared is the provider's business: the Context defaults answer
// EOPNOTSUPP, as the reference does for a provider without import ops.
#include "libibverbs/ibverbs.h"
#include "util/c_entry.h"

using namespace rdma::verbs;

namespace rdma::verbs {

// clang-format off
ibv_pd* Context::import_pd(uint32_t) { errno = EOPNOTSUPP; return nullptr; }
ibv_mr* Context::import_mr(ibv_pd*, uint32_t) { errno = EOPNOTSUPP; return nullptr; }
ibv_dm* Context::import_dm(uint32_t) { errno = EOPNOTSUPP; return nullptr; }
// clang-format on

}  // namespace rdma::verbs

extern "C" {

RDMA_EXPORT ibv_pd* ibv_import_pd(ibv_context* context, uint32_t pd_handle) {
    return rdma::entry_null([&] { return Context::from(context)->import_pd(pd_handle); });
}

RDMA_EXPORT void ibv_unimport_pd(ibv_pd* pd) {
    rdma::entry_void([&] { Context::from(pd->context)->unimport_pd(pd); });
}

RDMA_EXPORT ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t mr_handle) {
    return rdma::entry_null([&] { return Context::from(pd->context)->import_mr(pd, mr_handle); });
}

RDMA_EXPORT void ibv_unimport_mr(ibv_mr* mr) {
    rdma::entry_void([&] { Context::from(mr->context)->unimport_mr(mr); });
}

RDMA_EXPORT ibv_dm* ibv_import_dm(ibv_context* context, uint32_t dm_handle) {
    return rdma::entry_null([&] { return Context::from(context)->import_dm(dm_handle); });
}

RDMA_EXPORT void ibv_unimport_dm(ibv_dm* dm) {
    rdma::entry_void([&] { Context::from(dm->context)->unimport_dm(dm); });
}

}  // extern "C"
