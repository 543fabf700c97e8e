// libmlx5.so.1 compatibility entry points: DEVX (firmware commands and
// objects driven by the application), UAR/VAR pages, async completions,
// events, MSI vectors and EQs. See README.md.
#include "providers/mlx5/mlx5dv_compat.h"

#include <cstring>

using rdma::mlx5::fail_null;
using rdma::mlx5::kNoProvider;

extern "C" int mlx5dv_devx_general_cmd(struct ibv_context*, const void*, size_t, void*, size_t) { return kNoProvider; }

extern "C" struct mlx5dv_devx_obj* mlx5dv_devx_obj_create(struct ibv_context*, const void*, size_t, void*, size_t) {
    return fail_null<mlx5dv_devx_obj>();
}
extern "C" int mlx5dv_devx_obj_query(struct mlx5dv_devx_obj*, const void*, size_t, void*, size_t) {
    return kNoProvider;
}
extern "C" int mlx5dv_devx_obj_modify(struct mlx5dv_devx_obj*, const void*, size_t, void*, size_t) {
    return kNoProvider;
}
extern "C" int mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj*) { return kNoProvider; }

extern "C" int mlx5dv_devx_obj_query_async(struct mlx5dv_devx_obj*, const void*, size_t, size_t, uint64_t,
                                           struct mlx5dv_devx_cmd_comp*) {
    return kNoProvider;
}

// DEVX access to verbs objects created by another provider.
extern "C" int mlx5dv_devx_cq_query(struct ibv_cq*, const void*, size_t, void*, size_t) { return kNoProvider; }
extern "C" int mlx5dv_devx_cq_modify(struct ibv_cq*, const void*, size_t, void*, size_t) { return kNoProvider; }
extern "C" int mlx5dv_devx_qp_query(struct ibv_qp*, const void*, size_t, void*, size_t) { return kNoProvider; }
extern "C" int mlx5dv_devx_qp_modify(struct ibv_qp*, const void*, size_t, void*, size_t) { return kNoProvider; }
extern "C" int mlx5dv_devx_srq_query(struct ibv_srq*, const void*, size_t, void*, size_t) { return kNoProvider; }
extern "C" int mlx5dv_devx_srq_modify(struct ibv_srq*, const void*, size_t, void*, size_t) { return kNoProvider; }
extern "C" int mlx5dv_devx_wq_query(struct ibv_wq*, const void*, size_t, void*, size_t) { return kNoProvider; }
extern "C" int mlx5dv_devx_wq_modify(struct ibv_wq*, const void*, size_t, void*, size_t) { return kNoProvider; }
extern "C" int mlx5dv_devx_ind_tbl_query(struct ibv_rwq_ind_table*, const void*, size_t, void*, size_t) {
    return kNoProvider;
}
extern "C" int mlx5dv_devx_ind_tbl_modify(struct ibv_rwq_ind_table*, const void*, size_t, void*, size_t) {
    return kNoProvider;
}

extern "C" int mlx5dv_devx_query_eqn(struct ibv_context*, uint32_t, uint32_t*) { return kNoProvider; }

// ---- user memory ----

extern "C" struct mlx5dv_devx_umem* mlx5dv_devx_umem_reg(struct ibv_context*, void*, size_t, uint32_t) {
    return fail_null<mlx5dv_devx_umem>();
}
extern "C" struct mlx5dv_devx_umem* mlx5dv_devx_umem_reg_ex(struct ibv_context*, struct mlx5dv_devx_umem_in*) {
    return fail_null<mlx5dv_devx_umem>();
}
extern "C" int mlx5dv_devx_umem_dereg(struct mlx5dv_devx_umem*) { return kNoProvider; }

// ---- UAR and VAR pages ----

// (mlx5dv_devx_alloc_uar and mlx5dv_devx_free_uar: dv.cpp)
extern "C" int mlx5dv_devx_uar_export_dmabuf_fd(struct mlx5dv_devx_uar*) {
    errno = EOPNOTSUPP;
    return -1;
}

extern "C" struct mlx5dv_var* mlx5dv_alloc_var(struct ibv_context*, uint32_t) { return fail_null<mlx5dv_var>(); }
extern "C" void mlx5dv_free_var(struct mlx5dv_var*) {}

// ---- asynchronous command completion ----

extern "C" struct mlx5dv_devx_cmd_comp* mlx5dv_devx_create_cmd_comp(struct ibv_context*) {
    return fail_null<mlx5dv_devx_cmd_comp>();
}
extern "C" void mlx5dv_devx_destroy_cmd_comp(struct mlx5dv_devx_cmd_comp*) {}
extern "C" int mlx5dv_devx_get_async_cmd_comp(struct mlx5dv_devx_cmd_comp*, struct mlx5dv_devx_async_cmd_hdr*, size_t) {
    return kNoProvider;
}

// ---- events ----

extern "C" struct mlx5dv_devx_event_channel*
mlx5dv_devx_create_event_channel(struct ibv_context*, enum mlx5dv_devx_create_event_channel_flags) {
    return fail_null<mlx5dv_devx_event_channel>();
}
extern "C" void mlx5dv_devx_destroy_event_channel(struct mlx5dv_devx_event_channel*) {}

extern "C" int mlx5dv_devx_subscribe_devx_event(struct mlx5dv_devx_event_channel*, struct mlx5dv_devx_obj*, uint16_t,
                                                uint16_t[], uint64_t) {
    return kNoProvider;
}
extern "C" int mlx5dv_devx_subscribe_devx_event_fd(struct mlx5dv_devx_event_channel*, int, struct mlx5dv_devx_obj*,
                                                   uint16_t) {
    return kNoProvider;
}

extern "C" ssize_t mlx5dv_devx_get_event(struct mlx5dv_devx_event_channel*, struct mlx5dv_devx_async_event_hdr*,
                                         size_t) {
    errno = EOPNOTSUPP;
    return -1;
}

// ---- MSI vectors and event queues ----

extern "C" struct mlx5dv_devx_msi_vector* mlx5dv_devx_alloc_msi_vector(struct ibv_context*) {
    return fail_null<mlx5dv_devx_msi_vector>();
}
extern "C" int mlx5dv_devx_free_msi_vector(struct mlx5dv_devx_msi_vector*) { return kNoProvider; }

extern "C" struct mlx5dv_devx_eq* mlx5dv_devx_create_eq(struct ibv_context*, const void*, size_t, void*, size_t) {
    return fail_null<mlx5dv_devx_eq>();
}
extern "C" int mlx5dv_devx_destroy_eq(struct mlx5dv_devx_eq*) { return kNoProvider; }

// ---- cross-process export/import ----

// The sizes describe the provider's export records; without the provider
// there is nothing to export, so every size is 0.
extern "C" void _mlx5dv_get_export_sizes(struct mlx5dv_export_sizes* sizes, size_t sizes_len) {
    if (sizes)
        std::memset(sizes, 0, sizes_len);
}

extern "C" int mlx5dv_devx_obj_export(struct mlx5dv_devx_obj*, void*) { return kNoProvider; }
extern "C" struct mlx5dv_devx_obj* mlx5dv_devx_obj_import(struct ibv_context*, void*) {
    return fail_null<mlx5dv_devx_obj>();
}
extern "C" void mlx5dv_devx_obj_unimport(struct mlx5dv_devx_obj*) {}

extern "C" int mlx5dv_devx_umem_export(struct mlx5dv_devx_umem*, void*) { return kNoProvider; }
extern "C" struct mlx5dv_devx_umem* mlx5dv_devx_umem_import(struct ibv_context*, void*) {
    return fail_null<mlx5dv_devx_umem>();
}
extern "C" void mlx5dv_devx_umem_unimport(struct mlx5dv_devx_umem*) {}
