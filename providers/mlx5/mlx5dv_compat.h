// Shared by libmlx5.so.1's compatibility entry points (see README.md).
//
// Until the real mlx5 provider lands, no ibv_device or ibv_context in the
// process can belong to it, so every entry point answers the way the
// reference answers for a context of another provider: the dispatch to
// the device's mlx5 ops finds none and fails with EOPNOTSUPP.
#pragma once

// Every declaration of the public header is an exported entry point; the
// build hides everything else by default.
#pragma GCC visibility push(default)
#include <infiniband/mlx5dv.h>

// Entry points newer than the public header we install (Debian 44's ABI
// level). Their attribute structs come with the provider; nothing here
// reads them.
extern "C" {
struct mlx5dv_export_sizes;
struct mlx5_flow_action_attr_aux;

struct ibv_mr* mlx5dv_reg_dmabuf_mr(struct ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                                    int access, int mlx5_access);
int mlx5dv_get_data_direct_sysfs_path(struct ibv_context* context, char* buf, size_t buf_len);
struct ibv_flow* __mlx5dv_create_flow(struct mlx5dv_flow_matcher* matcher,
                                      struct mlx5dv_flow_match_parameters* match_value, size_t num_actions,
                                      struct mlx5dv_flow_action_attr actions_attr[],
                                      struct mlx5_flow_action_attr_aux actions_attr_aux[]);
int mlx5dv_devx_uar_export_dmabuf_fd(struct mlx5dv_devx_uar* devx_uar);
void _mlx5dv_get_export_sizes(struct mlx5dv_export_sizes* sizes, size_t sizes_len);
int mlx5dv_devx_obj_export(struct mlx5dv_devx_obj* obj, void* data);
struct mlx5dv_devx_obj* mlx5dv_devx_obj_import(struct ibv_context* context, void* data);
void mlx5dv_devx_obj_unimport(struct mlx5dv_devx_obj* obj);
int mlx5dv_devx_umem_export(struct mlx5dv_devx_umem* umem, void* data);
struct mlx5dv_devx_umem* mlx5dv_devx_umem_import(struct ibv_context* context, void* data);
void mlx5dv_devx_umem_unimport(struct mlx5dv_devx_umem* umem);
int mlx5dv_var_export(struct mlx5dv_var* dv_var, void* data);
struct mlx5dv_var* mlx5dv_var_import(struct ibv_context* context, void* data);
void mlx5dv_var_unimport(struct mlx5dv_var* dv_var);

// The two versions of mlx5dv_init_obj (MLX5_1.0 and the default MLX5_1.2)
// are defined under these names and bound to the versioned symbol with
// .symver; both are local to the library under their own names.
int mlx5dv_init_obj_1_0(struct mlx5dv_obj* obj, uint64_t obj_type);
int mlx5dv_init_obj_1_2(struct mlx5dv_obj* obj, uint64_t obj_type);
}
#pragma GCC visibility pop

#include <cerrno>

namespace rdma::mlx5 {

// Whether a device or context is the mlx5 provider's (mlx5.cpp).
bool is_mlx5_dev(const ibv_device* device);
bool is_mlx5_ctx(const ibv_context* context);

// Failure conventions of the entry points: a pointer-returning one sets
// errno and returns NULL; an int-returning one returns the errno value.
template <typename T = void>
inline T* fail_null(int err = EOPNOTSUPP) {
    errno = err;
    return nullptr;
}
constexpr int kNoProvider = EOPNOTSUPP;

}  // namespace rdma::mlx5
