// libmlx5.so.1 compatibility entry points: direct rule (software
// steering) domains, tables, matchers, rules, actions and dumps.
// See README.md.
//
// Every DR object hangs off a domain, and a domain can only be opened on
// an mlx5 context, so each call fails the way domain creation does for
// another provider's context: EOPNOTSUPP.
#include "providers/mlx5/mlx5dv_compat.h"

using rdma::mlx5::fail_null;
using rdma::mlx5::kNoProvider;

extern "C" struct mlx5dv_dr_domain* mlx5dv_dr_domain_create(struct ibv_context*, enum mlx5dv_dr_domain_type type) {
    // The reference validates the domain type before touching the device.
    if (type > MLX5DV_DR_DOMAIN_TYPE_FDB)
        return fail_null<mlx5dv_dr_domain>(EINVAL);
    return fail_null<mlx5dv_dr_domain>();
}
extern "C" int mlx5dv_dr_domain_destroy(struct mlx5dv_dr_domain*) { return kNoProvider; }
extern "C" int mlx5dv_dr_domain_sync(struct mlx5dv_dr_domain*, uint32_t) { return kNoProvider; }
extern "C" void mlx5dv_dr_domain_set_reclaim_device_memory(struct mlx5dv_dr_domain*, bool) {}
extern "C" void mlx5dv_dr_domain_allow_duplicate_rules(struct mlx5dv_dr_domain*, bool) {}

extern "C" struct mlx5dv_dr_table* mlx5dv_dr_table_create(struct mlx5dv_dr_domain*, uint32_t) {
    return fail_null<mlx5dv_dr_table>();
}
extern "C" int mlx5dv_dr_table_destroy(struct mlx5dv_dr_table*) { return kNoProvider; }

extern "C" struct mlx5dv_dr_matcher* mlx5dv_dr_matcher_create(struct mlx5dv_dr_table*, uint16_t, uint8_t,
                                                              struct mlx5dv_flow_match_parameters*) {
    return fail_null<mlx5dv_dr_matcher>();
}
extern "C" int mlx5dv_dr_matcher_destroy(struct mlx5dv_dr_matcher*) { return kNoProvider; }
extern "C" int mlx5dv_dr_matcher_set_layout(struct mlx5dv_dr_matcher*, struct mlx5dv_dr_matcher_layout*) {
    return kNoProvider;
}

extern "C" struct mlx5dv_dr_rule* mlx5dv_dr_rule_create(struct mlx5dv_dr_matcher*, struct mlx5dv_flow_match_parameters*,
                                                        size_t, struct mlx5dv_dr_action*[]) {
    return fail_null<mlx5dv_dr_rule>();
}
extern "C" int mlx5dv_dr_rule_destroy(struct mlx5dv_dr_rule*) { return kNoProvider; }

// ---- actions ----
// The reference builds drop, tag, default-miss and pop-VLAN actions in
// memory without a domain; they are only usable in rules of a domain,
// which cannot exist here, so they are refused too.

extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_dest_ibv_qp(struct ibv_qp*) {
    return fail_null<mlx5dv_dr_action>();
}
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_dest_table(struct mlx5dv_dr_table*) {
    return fail_null<mlx5dv_dr_action>();
}
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_dest_root_table(struct mlx5dv_dr_table*, uint16_t) {
    return fail_null<mlx5dv_dr_action>();
}
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_dest_vport(struct mlx5dv_dr_domain*, uint32_t) {
    return fail_null<mlx5dv_dr_action>();
}
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_dest_ib_port(struct mlx5dv_dr_domain*, uint32_t) {
    return fail_null<mlx5dv_dr_action>();
}
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_dest_devx_tir(struct mlx5dv_devx_obj*) {
    return fail_null<mlx5dv_dr_action>();
}
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_dest_array(struct mlx5dv_dr_domain*, size_t,
                                                                       struct mlx5dv_dr_action_dest_attr*[]) {
    return fail_null<mlx5dv_dr_action>();
}
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_drop(void) { return fail_null<mlx5dv_dr_action>(); }
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_default_miss(void) { return fail_null<mlx5dv_dr_action>(); }
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_tag(uint32_t) { return fail_null<mlx5dv_dr_action>(); }
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_flow_counter(struct mlx5dv_devx_obj*, uint32_t) {
    return fail_null<mlx5dv_dr_action>();
}
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_aso(struct mlx5dv_dr_domain*, struct mlx5dv_devx_obj*,
                                                                uint32_t, uint32_t, uint8_t) {
    return fail_null<mlx5dv_dr_action>();
}
extern "C" int mlx5dv_dr_action_modify_aso(struct mlx5dv_dr_action*, uint32_t, uint32_t, uint8_t) {
    return kNoProvider;
}
extern "C" struct mlx5dv_dr_action*
mlx5dv_dr_action_create_packet_reformat(struct mlx5dv_dr_domain*, uint32_t,
                                        enum mlx5dv_flow_action_packet_reformat_type, size_t, void*) {
    return fail_null<mlx5dv_dr_action>();
}
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_modify_header(struct mlx5dv_dr_domain*, uint32_t, size_t,
                                                                          __be64[]) {
    return fail_null<mlx5dv_dr_action>();
}
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_flow_meter(struct mlx5dv_dr_flow_meter_attr*) {
    return fail_null<mlx5dv_dr_action>();
}
extern "C" int mlx5dv_dr_action_modify_flow_meter(struct mlx5dv_dr_action*, struct mlx5dv_dr_flow_meter_attr*, __be64) {
    return kNoProvider;
}
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_flow_sampler(struct mlx5dv_dr_flow_sampler_attr*) {
    return fail_null<mlx5dv_dr_action>();
}
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_pop_vlan(void) { return fail_null<mlx5dv_dr_action>(); }
extern "C" struct mlx5dv_dr_action* mlx5dv_dr_action_create_push_vlan(struct mlx5dv_dr_domain*, __be32) {
    return fail_null<mlx5dv_dr_action>();
}
extern "C" int mlx5dv_dr_action_destroy(struct mlx5dv_dr_action*) { return kNoProvider; }

extern "C" int mlx5dv_dr_aso_other_domain_link(struct mlx5dv_devx_obj*, struct mlx5dv_dr_domain*,
                                               struct mlx5dv_dr_domain*, uint32_t, uint8_t) {
    return kNoProvider;
}
extern "C" int mlx5dv_dr_aso_other_domain_unlink(struct mlx5dv_devx_obj*, struct mlx5dv_dr_domain*) {
    return kNoProvider;
}

// ---- dumps ----

extern "C" int mlx5dv_dump_dr_domain(FILE*, struct mlx5dv_dr_domain*) { return kNoProvider; }
extern "C" int mlx5dv_dump_dr_table(FILE*, struct mlx5dv_dr_table*) { return kNoProvider; }
extern "C" int mlx5dv_dump_dr_matcher(FILE*, struct mlx5dv_dr_matcher*) { return kNoProvider; }
extern "C" int mlx5dv_dump_dr_rule(FILE*, struct mlx5dv_dr_rule*) { return kNoProvider; }
