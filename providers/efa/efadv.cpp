// libefa.so.1 compatibility entry points. Until the efa provider lands no
// device of this process is an EFA device, so each entry point answers as
// the reference does for another provider's device: EOPNOTSUPP (README.md
// lists them all).
#include <cerrno>

// Every declaration of the public header is an exported entry point.
#pragma GCC visibility push(default)
#include <infiniband/efadv.h>

// Entry points newer than the public header we install (Debian 44's ABI
// level); their attribute structs come with the provider and are not read.
extern "C" {
struct efadv_mr_attr;
struct efadv_cq_attr;
struct efadv_wq_attr;
struct efadv_sq_depth_attr;
struct efadv_rq_depth_attr;
struct efadv_qp;
struct ibv_comp_cntr;
struct ibv_comp_cntr_init_attr;
struct efadv_comp_cntr_init_attr;

int efadv_query_mr(struct ibv_mr* ibvmr, struct efadv_mr_attr* attr, uint32_t inlen);
int efadv_query_cq(struct ibv_cq* ibvcq, struct efadv_cq_attr* attr, uint32_t inlen);
int efadv_query_qp_wqs(struct ibv_qp* ibvqp, struct efadv_wq_attr* sq_attr, struct efadv_wq_attr* rq_attr,
                       uint32_t inlen);
int efadv_get_max_sq_depth(struct ibv_context* ibvctx, struct efadv_sq_depth_attr* attr, uint32_t inlen);
int efadv_get_max_rq_depth(struct ibv_context* ibvctx, struct efadv_rq_depth_attr* attr, uint32_t inlen);
struct efadv_qp* efadv_qp_from_ibv_qp_ex(struct ibv_qp_ex* ibvqpx);
struct ibv_comp_cntr* efadv_create_comp_cntr(struct ibv_context* context, struct ibv_comp_cntr_init_attr* attr,
                                             struct efadv_comp_cntr_init_attr* efa_attr, uint32_t inlen);
}
#pragma GCC visibility pop

namespace {

template <typename T>
T* no_efa_device() {
    errno = EOPNOTSUPP;
    return nullptr;
}

constexpr int kNoProvider = EOPNOTSUPP;

}  // namespace

extern "C" struct ibv_qp* efadv_create_driver_qp(struct ibv_pd*, struct ibv_qp_init_attr*, uint32_t) {
    return no_efa_device<ibv_qp>();
}

extern "C" struct ibv_qp* efadv_create_qp_ex(struct ibv_context*, struct ibv_qp_init_attr_ex*,
                                             struct efadv_qp_init_attr*, uint32_t) {
    return no_efa_device<ibv_qp>();
}

extern "C" int efadv_query_device(struct ibv_context*, struct efadv_device_attr*, uint32_t) { return kNoProvider; }

extern "C" int efadv_query_ah(struct ibv_ah*, struct efadv_ah_attr*, uint32_t) { return kNoProvider; }

extern "C" struct ibv_cq_ex* efadv_create_cq(struct ibv_context*, struct ibv_cq_init_attr_ex*,
                                             struct efadv_cq_init_attr*, uint32_t) {
    return no_efa_device<ibv_cq_ex>();
}

// The reference converts by pointer arithmetic without looking; a CQ or
// QP here can only belong to another provider, so refuse.
extern "C" struct efadv_cq* efadv_cq_from_ibv_cq_ex(struct ibv_cq_ex*) { return no_efa_device<efadv_cq>(); }
extern "C" struct efadv_qp* efadv_qp_from_ibv_qp_ex(struct ibv_qp_ex*) { return no_efa_device<efadv_qp>(); }

extern "C" int efadv_query_mr(struct ibv_mr*, struct efadv_mr_attr*, uint32_t) { return kNoProvider; }
extern "C" int efadv_query_cq(struct ibv_cq*, struct efadv_cq_attr*, uint32_t) { return kNoProvider; }
extern "C" int efadv_query_qp_wqs(struct ibv_qp*, struct efadv_wq_attr*, struct efadv_wq_attr*, uint32_t) {
    return kNoProvider;
}

// These two return a depth, or a negative errno.
extern "C" int efadv_get_max_sq_depth(struct ibv_context*, struct efadv_sq_depth_attr*, uint32_t) {
    return -kNoProvider;
}
extern "C" int efadv_get_max_rq_depth(struct ibv_context*, struct efadv_rq_depth_attr*, uint32_t) {
    return -kNoProvider;
}

extern "C" struct ibv_comp_cntr* efadv_create_comp_cntr(struct ibv_context*, struct ibv_comp_cntr_init_attr*,
                                                        struct efadv_comp_cntr_init_attr*, uint32_t) {
    return no_efa_device<ibv_comp_cntr>();
}
