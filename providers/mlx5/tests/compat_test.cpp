// Every libmlx5.so.1 entry point, called for a device and context that
// belong to another provider, fails as the reference does for such a
// device (see ../README.md). check_symbols.sh verifies this file names
// every exported symbol.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cerrno>
#include <cstring>

#include "providers/mlx5/mlx5dv_compat.h"

namespace {

// A device and context of some other provider, with objects on them.
struct Foreign {
    ibv_device dev{};
    ibv_context ctx{};
    ibv_pd pd{};
    ibv_cq cq{};
    ibv_cq_ex cq_ex{};
    ibv_qp qp{};
    ibv_qp_ex qp_ex{};
    ibv_srq srq{};
    ibv_wq wq{};
    ibv_ah ah{};
    ibv_dm dm{};
    ibv_rwq_ind_table ind_tbl{};
    Foreign() {
        std::strcpy(dev.name, "other0");
        std::strcpy(dev.dev_name, "uverbs0");
        dev.node_type = IBV_NODE_CA;
        dev.transport_type = IBV_TRANSPORT_IB;
        ctx.device = &dev;
        ctx.cmd_fd = -1;
        ctx.async_fd = -1;
        pd.context = cq.context = cq_ex.context = qp.context = srq.context = wq.context = ah.context = &ctx;
        qp_ex.qp_base.context = &ctx;
        dm.context = ind_tbl.context = &ctx;
    }
};

// Objects of this library's own types: none could have been created, so
// these stand for whatever pointer an application might pass.
struct Handles {
    alignas(16) unsigned char storage[256] = {};
    template <typename T>
    T* as() {
        return reinterpret_cast<T*>(storage);
    }
};

#define EXPECT_NULL_ERRNO(err, call)                      \
    do {                                                  \
        errno = 0;                                        \
        EXPECT_EQ(nullptr, (const void*)(call)) << #call; \
        EXPECT_EQ(err, errno) << #call;                   \
    } while (0)
#define EXPECT_NULL_EOPNOTSUPP(call) EXPECT_NULL_ERRNO(EOPNOTSUPP, call)
#define EXPECT_RET(value, call)            \
    do {                                   \
        errno = 0;                         \
        EXPECT_EQ(value, (call)) << #call; \
    } while (0)
#define EXPECT_RET_ERRNO(value, err, call) \
    do {                                   \
        errno = 0;                         \
        EXPECT_EQ(value, (call)) << #call; \
        EXPECT_EQ(err, errno) << #call;    \
    } while (0)
// Void entry points: nothing to free or change; errno is left alone.
#define EXPECT_VOID_NOOP(call)        \
    do {                              \
        errno = 0;                    \
        call;                         \
        EXPECT_EQ(0, errno) << #call; \
    } while (0)

class Mlx5Compat : public ::testing::Test {
protected:
    Foreign f;
    Handles h;
    char buf[512] = {};
    uint32_t u32 = 0;
};

TEST_F(Mlx5Compat, DeviceAndContext) {
    EXPECT_FALSE(mlx5dv_is_supported(&f.dev));
    mlx5dv_context_attr cattr{};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_open_device(&f.dev, &cattr));
    mlx5dv_context dvctx{};
    EXPECT_RET(EOPNOTSUPP, mlx5dv_query_device(&f.ctx, &dvctx));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_set_context_attr(&f.ctx, MLX5DV_CTX_ATTR_BUF_ALLOCATORS, buf));
    mlx5dv_clock_info ci{};
    EXPECT_RET(EOPNOTSUPP, mlx5dv_get_clock_info(&f.ctx, &ci));
    mlx5dv_port port{};
    EXPECT_RET(EOPNOTSUPP, _mlx5dv_query_port(&f.ctx, 1, &port, sizeof(port)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_query_port(&f.ctx, 1, &port));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_get_data_direct_sysfs_path(&f.ctx, buf, sizeof(buf)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_reserved_qpn_alloc(&f.ctx, &u32));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_reserved_qpn_dealloc(&f.ctx, 5));
}

TEST_F(Mlx5Compat, InitObjBothVersions) {
    mlx5dv_qp dvqp{};
    mlx5dv_cq dvcq{};
    mlx5dv_obj obj{};
    obj.qp.in = &f.qp;
    obj.qp.out = &dvqp;
    obj.cq.in = &f.cq;
    obj.cq.out = &dvcq;
    EXPECT_RET(EOPNOTSUPP, mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ));

    // Binaries linked against MLX5_1.0 reach the compatibility version.
    using InitObj = int (*)(mlx5dv_obj*, uint64_t);
    void* lib = dlopen("libmlx5.so.1", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(nullptr, lib);
    auto v10 = reinterpret_cast<InitObj>(dlvsym(lib, "mlx5dv_init_obj", "MLX5_1.0"));
    auto v12 = reinterpret_cast<InitObj>(dlvsym(lib, "mlx5dv_init_obj", "MLX5_1.2"));
    ASSERT_NE(nullptr, v10);
    ASSERT_NE(nullptr, v12);
    EXPECT_NE(v10, v12);
    EXPECT_RET(EOPNOTSUPP, v10(&obj, MLX5DV_OBJ_QP));
    EXPECT_RET(EOPNOTSUPP, v12(&obj, MLX5DV_OBJ_CQ));
    dlclose(lib);
}

TEST_F(Mlx5Compat, Vfio) {
    mlx5dv_vfio_context_attr vattr{};
    vattr.pci_name = "0000:00:00.0";
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_get_vfio_device_list(&vattr));
    EXPECT_RET_ERRNO(-1, EOPNOTSUPP, mlx5dv_vfio_get_events_fd(&f.ctx));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_vfio_process_events(&f.ctx));
}

TEST_F(Mlx5Compat, Queues) {
    ibv_cq_init_attr_ex cq_attr{};
    mlx5dv_cq_init_attr dv_cq_attr{};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_create_cq(&f.ctx, &cq_attr, &dv_cq_attr));
    ibv_qp_init_attr_ex qp_attr{};
    mlx5dv_qp_init_attr dv_qp_attr{};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_create_qp(&f.ctx, &qp_attr, &dv_qp_attr));
    ibv_wq_init_attr wq_attr{};
    mlx5dv_wq_init_attr dv_wq_attr{};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_create_wq(&f.ctx, &wq_attr, &dv_wq_attr));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_qp_ex_from_ibv_qp_ex(&f.qp_ex));
    // (a count of canceled requests or -errno)
    EXPECT_RET(-EOPNOTSUPP, mlx5dv_qp_cancel_posted_send_wrs(h.as<mlx5dv_qp_ex>(), 1));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_map_ah_to_qp(&f.ah, 7));
    uint8_t p = 0, ap = 0;
    EXPECT_RET(EOPNOTSUPP, mlx5dv_query_qp_lag_port(&f.qp, &p, &ap));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_modify_qp_lag_port(&f.qp, 1));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_modify_qp_udp_sport(&f.qp, 4791));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dci_stream_id_reset(&f.qp, 0));
}

TEST_F(Mlx5Compat, Memory) {
    ibv_alloc_dm_attr dm_attr{};
    mlx5dv_alloc_dm_attr dv_dm_attr{};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_alloc_dm(&f.ctx, &dm_attr, &dv_dm_attr));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dm_map_op_addr(&f.dm, 0));
    mlx5dv_mkey_init_attr mk{};
    mk.pd = &f.pd;
    mk.max_entries = 1;
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_create_mkey(&mk));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_destroy_mkey(h.as<mlx5dv_mkey>()));
    mlx5dv_mkey_err err{};
    EXPECT_RET(EOPNOTSUPP, _mlx5dv_mkey_check(h.as<mlx5dv_mkey>(), &err, sizeof(err)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_mkey_check(h.as<mlx5dv_mkey>(), &err));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_reg_dmabuf_mr(&f.pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE, 0));
}

TEST_F(Mlx5Compat, Crypto) {
    mlx5dv_crypto_login_attr la{};
    EXPECT_RET(EOPNOTSUPP, mlx5dv_crypto_login(&f.ctx, &la));
    mlx5dv_crypto_login_state st{};
    EXPECT_RET(EOPNOTSUPP, mlx5dv_crypto_login_query_state(&f.ctx, &st));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_crypto_logout(&f.ctx));
    mlx5dv_crypto_login_attr_ex lax{};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_crypto_login_create(&f.ctx, &lax));
    mlx5dv_crypto_login_query_attr lq{};
    EXPECT_RET(EOPNOTSUPP, mlx5dv_crypto_login_query(h.as<mlx5dv_crypto_login_obj>(), &lq));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_crypto_login_destroy(h.as<mlx5dv_crypto_login_obj>()));
    mlx5dv_dek_init_attr di{};
    di.pd = &f.pd;
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dek_create(&f.ctx, &di));
    mlx5dv_dek_attr da{};
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dek_query(h.as<mlx5dv_dek>(), &da));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dek_destroy(h.as<mlx5dv_dek>()));
}

TEST_F(Mlx5Compat, FlowSteering) {
    mlx5dv_flow_matcher_attr ma{};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_create_flow_matcher(&f.ctx, &ma));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_destroy_flow_matcher(h.as<mlx5dv_flow_matcher>()));
    auto* mv = h.as<mlx5dv_flow_match_parameters>();
    mlx5dv_flow_action_attr act[1]{};
    act[0].type = MLX5DV_FLOW_ACTION_DROP;
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_create_flow(h.as<mlx5dv_flow_matcher>(), mv, 1, act));
    EXPECT_NULL_EOPNOTSUPP(__mlx5dv_create_flow(h.as<mlx5dv_flow_matcher>(), mv, 1, act, nullptr));
    ibv_flow_action_esp_attr esp{};
    mlx5dv_flow_action_esp dv_esp{};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_create_flow_action_esp(&f.ctx, &esp, &dv_esp));
    uint64_t actions[2] = {};
    EXPECT_NULL_EOPNOTSUPP(
        mlx5dv_create_flow_action_modify_header(&f.ctx, sizeof(actions), actions, MLX5DV_FLOW_TABLE_TYPE_NIC_RX));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_create_flow_action_packet_reformat(
        &f.ctx, 0, nullptr, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2, MLX5DV_FLOW_TABLE_TYPE_NIC_RX));
    mlx5dv_steering_anchor_attr sa{};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_create_steering_anchor(&f.ctx, &sa));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_destroy_steering_anchor(h.as<mlx5dv_steering_anchor>()));
}

TEST_F(Mlx5Compat, PacingAndScheduling) {
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_pp_alloc(&f.ctx, sizeof(buf), buf, 0));
    EXPECT_VOID_NOOP(mlx5dv_pp_free(h.as<mlx5dv_pp>()));
    mlx5dv_sched_attr sa{};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_sched_node_create(&f.ctx, &sa));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_sched_leaf_create(&f.ctx, &sa));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_sched_node_modify(h.as<mlx5dv_sched_node>(), &sa));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_sched_leaf_modify(h.as<mlx5dv_sched_leaf>(), &sa));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_sched_node_destroy(h.as<mlx5dv_sched_node>()));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_sched_leaf_destroy(h.as<mlx5dv_sched_leaf>()));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_modify_qp_sched_elem(&f.qp, h.as<mlx5dv_sched_leaf>(), h.as<mlx5dv_sched_leaf>()));
}

TEST_F(Mlx5Compat, Devx) {
    char out[64];
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_general_cmd(&f.ctx, buf, 16, out, sizeof(out)));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_devx_obj_create(&f.ctx, buf, 16, out, sizeof(out)));
    auto* obj = h.as<mlx5dv_devx_obj>();
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_obj_query(obj, buf, 16, out, sizeof(out)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_obj_modify(obj, buf, 16, out, sizeof(out)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_obj_destroy(obj));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_obj_query_async(obj, buf, 16, 64, 1, h.as<mlx5dv_devx_cmd_comp>()));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_cq_query(&f.cq, buf, 16, out, sizeof(out)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_cq_modify(&f.cq, buf, 16, out, sizeof(out)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_qp_query(&f.qp, buf, 16, out, sizeof(out)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_qp_modify(&f.qp, buf, 16, out, sizeof(out)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_srq_query(&f.srq, buf, 16, out, sizeof(out)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_srq_modify(&f.srq, buf, 16, out, sizeof(out)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_wq_query(&f.wq, buf, 16, out, sizeof(out)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_wq_modify(&f.wq, buf, 16, out, sizeof(out)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_ind_tbl_query(&f.ind_tbl, buf, 16, out, sizeof(out)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_ind_tbl_modify(&f.ind_tbl, buf, 16, out, sizeof(out)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_query_eqn(&f.ctx, 0, &u32));

    EXPECT_NULL_EOPNOTSUPP(mlx5dv_devx_umem_reg(&f.ctx, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE));
    mlx5dv_devx_umem_in uin{};
    uin.addr = buf;
    uin.size = sizeof(buf);
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_devx_umem_reg_ex(&f.ctx, &uin));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_umem_dereg(h.as<mlx5dv_devx_umem>()));

    EXPECT_NULL_EOPNOTSUPP(mlx5dv_devx_alloc_uar(&f.ctx, MLX5DV_UAR_ALLOC_TYPE_NC));
    EXPECT_VOID_NOOP(mlx5dv_devx_free_uar(nullptr));
    EXPECT_RET_ERRNO(-1, EOPNOTSUPP, mlx5dv_devx_uar_export_dmabuf_fd(h.as<mlx5dv_devx_uar>()));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_alloc_var(&f.ctx, 0));
    EXPECT_VOID_NOOP(mlx5dv_free_var(h.as<mlx5dv_var>()));

    EXPECT_NULL_EOPNOTSUPP(mlx5dv_devx_create_cmd_comp(&f.ctx));
    EXPECT_VOID_NOOP(mlx5dv_devx_destroy_cmd_comp(h.as<mlx5dv_devx_cmd_comp>()));
    EXPECT_RET(EOPNOTSUPP,
               mlx5dv_devx_get_async_cmd_comp(h.as<mlx5dv_devx_cmd_comp>(),
                                              reinterpret_cast<mlx5dv_devx_async_cmd_hdr*>(buf), sizeof(buf)));

    EXPECT_NULL_EOPNOTSUPP(
        mlx5dv_devx_create_event_channel(&f.ctx, MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA));
    auto* ch = h.as<mlx5dv_devx_event_channel>();
    EXPECT_VOID_NOOP(mlx5dv_devx_destroy_event_channel(ch));
    uint16_t events[1] = {0};
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_subscribe_devx_event(ch, obj, sizeof(events), events, 1));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_subscribe_devx_event_fd(ch, 0, obj, 0));
    EXPECT_RET_ERRNO(-1, EOPNOTSUPP,
                     mlx5dv_devx_get_event(ch, reinterpret_cast<mlx5dv_devx_async_event_hdr*>(buf), sizeof(buf)));

    EXPECT_NULL_EOPNOTSUPP(mlx5dv_devx_alloc_msi_vector(&f.ctx));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_free_msi_vector(h.as<mlx5dv_devx_msi_vector>()));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_devx_create_eq(&f.ctx, buf, 16, out, sizeof(out)));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_destroy_eq(h.as<mlx5dv_devx_eq>()));
}

TEST_F(Mlx5Compat, ExportImport) {
    // Three 32-bit sizes, all 0: there is nothing this library can export.
    uint32_t sizes[3] = {1, 2, 3};
    EXPECT_VOID_NOOP(_mlx5dv_get_export_sizes(reinterpret_cast<mlx5dv_export_sizes*>(sizes), sizeof(sizes)));
    EXPECT_EQ(0u, sizes[0] | sizes[1] | sizes[2]);
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_obj_export(h.as<mlx5dv_devx_obj>(), buf));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_devx_obj_import(&f.ctx, buf));
    EXPECT_VOID_NOOP(mlx5dv_devx_obj_unimport(h.as<mlx5dv_devx_obj>()));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_devx_umem_export(h.as<mlx5dv_devx_umem>(), buf));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_devx_umem_import(&f.ctx, buf));
    EXPECT_VOID_NOOP(mlx5dv_devx_umem_unimport(h.as<mlx5dv_devx_umem>()));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_var_export(h.as<mlx5dv_var>(), buf));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_var_import(&f.ctx, buf));
    EXPECT_VOID_NOOP(mlx5dv_var_unimport(h.as<mlx5dv_var>()));
}

TEST_F(Mlx5Compat, DirectRule) {
    EXPECT_NULL_ERRNO(EINVAL, mlx5dv_dr_domain_create(&f.ctx, static_cast<mlx5dv_dr_domain_type>(3)));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_domain_create(&f.ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_domain_create(&f.ctx, MLX5DV_DR_DOMAIN_TYPE_FDB));
    auto* dmn = h.as<mlx5dv_dr_domain>();
    auto* tbl = h.as<mlx5dv_dr_table>();
    auto* matcher = h.as<mlx5dv_dr_matcher>();
    auto* rule = h.as<mlx5dv_dr_rule>();
    auto* action = h.as<mlx5dv_dr_action>();
    auto* devx = h.as<mlx5dv_devx_obj>();
    auto* params = h.as<mlx5dv_flow_match_parameters>();
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dr_domain_destroy(dmn));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dr_domain_sync(dmn, MLX5DV_DR_DOMAIN_SYNC_FLAGS_SW));
    EXPECT_VOID_NOOP(mlx5dv_dr_domain_set_reclaim_device_memory(dmn, true));
    EXPECT_VOID_NOOP(mlx5dv_dr_domain_allow_duplicate_rules(dmn, false));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_table_create(dmn, 0));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dr_table_destroy(tbl));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_matcher_create(tbl, 0, 1, params));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dr_matcher_destroy(matcher));
    mlx5dv_dr_matcher_layout layout{};
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dr_matcher_set_layout(matcher, &layout));
    mlx5dv_dr_action* actions[1] = {action};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_rule_create(matcher, params, 1, actions));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dr_rule_destroy(rule));

    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_dest_ibv_qp(&f.qp));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_dest_table(tbl));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_dest_root_table(tbl, 0));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_dest_vport(dmn, 1));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_dest_ib_port(dmn, 1));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_dest_devx_tir(devx));
    mlx5dv_dr_action_dest_attr dest{};
    mlx5dv_dr_action_dest_attr* dests[1] = {&dest};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_dest_array(dmn, 1, dests));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_drop());
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_default_miss());
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_tag(7));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_flow_counter(devx, 0));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_aso(dmn, devx, 0, MLX5DV_DR_ACTION_FLAGS_ASO_FIRST_HIT_SET, 0));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dr_action_modify_aso(action, 0, 0, 0));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_packet_reformat(
        dmn, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2, 0, nullptr));
    __be64 mh[1] = {0};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_modify_header(dmn, 0, sizeof(mh), mh));
    mlx5dv_dr_flow_meter_attr fm{};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_flow_meter(&fm));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dr_action_modify_flow_meter(action, &fm, 0));
    mlx5dv_dr_flow_sampler_attr fs{};
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_flow_sampler(&fs));
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_pop_vlan());
    EXPECT_NULL_EOPNOTSUPP(mlx5dv_dr_action_create_push_vlan(dmn, 0));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dr_action_destroy(action));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dr_aso_other_domain_link(devx, dmn, dmn, 0, 0));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dr_aso_other_domain_unlink(devx, dmn));

    FILE* out = tmpfile();
    ASSERT_NE(nullptr, out);
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dump_dr_domain(out, dmn));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dump_dr_table(out, tbl));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dump_dr_matcher(out, matcher));
    EXPECT_RET(EOPNOTSUPP, mlx5dv_dump_dr_rule(out, rule));
    EXPECT_EQ(0, ftell(out));  // nothing written
    fclose(out);
}

}  // namespace
