// libmlx5.so.1 compatibility entry points: device, context, queue and
// memory-key objects, crypto, flow steering through verbs, QoS.
// Each answers as the reference does for a device that is not an mlx5
// device (README.md lists them all).
#include "providers/mlx5/mlx5dv_compat.h"

using rdma::mlx5::fail_null;
using rdma::mlx5::is_mlx5_dev;
using rdma::mlx5::kNoProvider;

// ---- device and context ----

extern "C" bool mlx5dv_is_supported(struct ibv_device* device) { return is_mlx5_dev(device); }

extern "C" int _mlx5dv_query_port(struct ibv_context*, uint32_t, struct mlx5dv_port*, size_t) { return kNoProvider; }

extern "C" int mlx5dv_get_data_direct_sysfs_path(struct ibv_context*, char*, size_t) { return kNoProvider; }

extern "C" int mlx5dv_reserved_qpn_alloc(struct ibv_context*, uint32_t*) { return kNoProvider; }
extern "C" int mlx5dv_reserved_qpn_dealloc(struct ibv_context*, uint32_t) { return kNoProvider; }

// ---- VFIO (user-space driven PCI function) ----

extern "C" struct ibv_device** mlx5dv_get_vfio_device_list(struct mlx5dv_vfio_context_attr*) {
    return fail_null<ibv_device*>();
}

extern "C" int mlx5dv_vfio_get_events_fd(struct ibv_context*) {
    errno = EOPNOTSUPP;
    return -1;
}

extern "C" int mlx5dv_vfio_process_events(struct ibv_context*) { return kNoProvider; }

// ---- queues ----

extern "C" struct ibv_wq* mlx5dv_create_wq(struct ibv_context*, struct ibv_wq_init_attr*, struct mlx5dv_wq_init_attr*) {
    return fail_null<ibv_wq>();
}

// Its convention is a count of canceled requests or -errno: a positive
// EOPNOTSUPP would read as "95 canceled". The reference needs DEVX for it
// (a QP created with MLX5DV_QP_CREATE_SIG_PIPELINING), which no context of
// ours has, so it always fails here.
extern "C" int mlx5dv_qp_cancel_posted_send_wrs(struct mlx5dv_qp_ex*, uint64_t) { return -kNoProvider; }

extern "C" int mlx5dv_map_ah_to_qp(struct ibv_ah*, uint32_t) { return kNoProvider; }

extern "C" int mlx5dv_query_qp_lag_port(struct ibv_qp*, uint8_t*, uint8_t*) { return kNoProvider; }
extern "C" int mlx5dv_modify_qp_lag_port(struct ibv_qp*, uint8_t) { return kNoProvider; }
extern "C" int mlx5dv_modify_qp_udp_sport(struct ibv_qp*, uint16_t) { return kNoProvider; }
extern "C" int mlx5dv_dci_stream_id_reset(struct ibv_qp*, uint16_t) { return kNoProvider; }

// ---- memory: device memory, memory keys, dma-buf ----

// (device memory: dm.cpp)

extern "C" struct mlx5dv_mkey* mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr*) { return fail_null<mlx5dv_mkey>(); }

extern "C" int mlx5dv_destroy_mkey(struct mlx5dv_mkey*) { return kNoProvider; }

extern "C" int _mlx5dv_mkey_check(struct mlx5dv_mkey*, struct mlx5dv_mkey_err*, size_t) { return kNoProvider; }

extern "C" struct ibv_mr* mlx5dv_reg_dmabuf_mr(struct ibv_pd*, uint64_t, size_t, uint64_t, int, int, int) {
    return fail_null<ibv_mr>();
}

// ---- crypto ----

extern "C" int mlx5dv_crypto_login(struct ibv_context*, struct mlx5dv_crypto_login_attr*) { return kNoProvider; }
extern "C" int mlx5dv_crypto_login_query_state(struct ibv_context*, enum mlx5dv_crypto_login_state*) {
    return kNoProvider;
}
extern "C" int mlx5dv_crypto_logout(struct ibv_context*) { return kNoProvider; }

extern "C" struct mlx5dv_crypto_login_obj* mlx5dv_crypto_login_create(struct ibv_context*,
                                                                      struct mlx5dv_crypto_login_attr_ex*) {
    return fail_null<mlx5dv_crypto_login_obj>();
}
extern "C" int mlx5dv_crypto_login_query(struct mlx5dv_crypto_login_obj*, struct mlx5dv_crypto_login_query_attr*) {
    return kNoProvider;
}
extern "C" int mlx5dv_crypto_login_destroy(struct mlx5dv_crypto_login_obj*) { return kNoProvider; }

extern "C" struct mlx5dv_dek* mlx5dv_dek_create(struct ibv_context*, struct mlx5dv_dek_init_attr*) {
    return fail_null<mlx5dv_dek>();
}
extern "C" int mlx5dv_dek_query(struct mlx5dv_dek*, struct mlx5dv_dek_attr*) { return kNoProvider; }
extern "C" int mlx5dv_dek_destroy(struct mlx5dv_dek*) { return kNoProvider; }

// ---- flow steering through verbs ----

extern "C" struct mlx5dv_flow_matcher* mlx5dv_create_flow_matcher(struct ibv_context*,
                                                                  struct mlx5dv_flow_matcher_attr*) {
    return fail_null<mlx5dv_flow_matcher>();
}
extern "C" int mlx5dv_destroy_flow_matcher(struct mlx5dv_flow_matcher*) { return kNoProvider; }

extern "C" struct ibv_flow* mlx5dv_create_flow(struct mlx5dv_flow_matcher*, struct mlx5dv_flow_match_parameters*,
                                               size_t, struct mlx5dv_flow_action_attr[]) {
    return fail_null<ibv_flow>();
}

extern "C" struct ibv_flow* __mlx5dv_create_flow(struct mlx5dv_flow_matcher*, struct mlx5dv_flow_match_parameters*,
                                                 size_t, struct mlx5dv_flow_action_attr[],
                                                 struct mlx5_flow_action_attr_aux[]) {
    return fail_null<ibv_flow>();
}

extern "C" struct ibv_flow_action* mlx5dv_create_flow_action_esp(struct ibv_context*, struct ibv_flow_action_esp_attr*,
                                                                 struct mlx5dv_flow_action_esp*) {
    return fail_null<ibv_flow_action>();
}

extern "C" struct ibv_flow_action* mlx5dv_create_flow_action_modify_header(struct ibv_context*, size_t, uint64_t[],
                                                                           enum mlx5dv_flow_table_type) {
    return fail_null<ibv_flow_action>();
}

extern "C" struct ibv_flow_action*
mlx5dv_create_flow_action_packet_reformat(struct ibv_context*, size_t, void*,
                                          enum mlx5dv_flow_action_packet_reformat_type, enum mlx5dv_flow_table_type) {
    return fail_null<ibv_flow_action>();
}

extern "C" struct mlx5dv_steering_anchor* mlx5dv_create_steering_anchor(struct ibv_context*,
                                                                        struct mlx5dv_steering_anchor_attr*) {
    return fail_null<mlx5dv_steering_anchor>();
}
extern "C" int mlx5dv_destroy_steering_anchor(struct mlx5dv_steering_anchor*) { return kNoProvider; }

// ---- packet pacing and QoS scheduling ----

extern "C" struct mlx5dv_pp* mlx5dv_pp_alloc(struct ibv_context*, size_t, const void*, uint32_t) {
    return fail_null<mlx5dv_pp>();
}
// Only a pacing entry this library allocated could be freed; there are none.
extern "C" void mlx5dv_pp_free(struct mlx5dv_pp*) {}

extern "C" struct mlx5dv_sched_node* mlx5dv_sched_node_create(struct ibv_context*, const struct mlx5dv_sched_attr*) {
    return fail_null<mlx5dv_sched_node>();
}
extern "C" struct mlx5dv_sched_leaf* mlx5dv_sched_leaf_create(struct ibv_context*, const struct mlx5dv_sched_attr*) {
    return fail_null<mlx5dv_sched_leaf>();
}
extern "C" int mlx5dv_sched_node_modify(struct mlx5dv_sched_node*, const struct mlx5dv_sched_attr*) {
    return kNoProvider;
}
extern "C" int mlx5dv_sched_leaf_modify(struct mlx5dv_sched_leaf*, const struct mlx5dv_sched_attr*) {
    return kNoProvider;
}
extern "C" int mlx5dv_sched_node_destroy(struct mlx5dv_sched_node*) { return kNoProvider; }
extern "C" int mlx5dv_sched_leaf_destroy(struct mlx5dv_sched_leaf*) { return kNoProvider; }
extern "C" int mlx5dv_modify_qp_sched_elem(struct ibv_qp*, const struct mlx5dv_sched_leaf*,
                                           const struct mlx5dv_sched_leaf*) {
    return kNoProvider;
}

// ---- cross-process export/import (VAR) ----

extern "C" int mlx5dv_var_export(struct mlx5dv_var*, void*) { return kNoProvider; }
extern "C" struct mlx5dv_var* mlx5dv_var_import(struct ibv_context*, void*) { return fail_null<mlx5dv_var>(); }
extern "C" void mlx5dv_var_unimport(struct mlx5dv_var*) {}
