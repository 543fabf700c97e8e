// Context-level kernel commands: GET_CONTEXT, the async event fd,
// QUERY_DEVICE(_EX), QUERY_PORT. ioctl first, write ABI as the fallback.
#include "libibverbs/cmd_ioctl.h"
#include "libibverbs/cmd_write.h"
#include "libibverbs/ibverbs.h"
#include "util/c_entry.h"

#include <rdma/ib_user_ioctl_verbs.h>

#include <algorithm>
#include <cstring>

namespace rdma::verbs {

namespace {

template <class T>
void copy_prefix(void* dst, const T& src, size_t dst_size) {
    std::memcpy(dst, &src, std::min(dst_size, sizeof(T)));
}

int alloc_async_fd(int cmd_fd, uint32_t driver_id) {
    Ioctl<1> cmd(UVERBS_OBJECT_ASYNC_EVENT, UVERBS_METHOD_ASYNC_EVENT_ALLOC, driver_id);
    ib_uverbs_attr& fd_attr = cmd.fd_out(UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE);
    if (int e = cmd.execute(cmd_fd)) {
        errno = e;
        return -1;
    }
    return static_cast<int>(fd_attr.data_s64);
}

// The public entry points all route here; each just forwards to the
// context's virtual so a provider override is honoured. verbs.h's inline
// functions call these slots directly, so they are C entry points too and
// go through the barrier.
int t_query_device_ex(ibv_context* c, const ibv_query_device_ex_input* in, ibv_device_attr_ex* attr, size_t size) {
    return rdma::entry_errno([&] { return Context::from(c)->query_device_ex(in, attr, size); });
}
int t_query_port(ibv_context* c, uint8_t port, ibv_port_attr* attr, size_t size) {
    return rdma::entry_errno([&] { return Context::from(c)->query_port(port, attr, size); });
}

// Data-path slots a provider has not filled: fail cleanly, never crash.
int no_post_send(ibv_qp*, ibv_send_wr* wr, ibv_send_wr** bad) {
    if (bad)
        *bad = wr;
    return EOPNOTSUPP;
}
int no_post_recv(ibv_qp*, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    if (bad)
        *bad = wr;
    return EOPNOTSUPP;
}
int no_post_srq_recv(ibv_srq*, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    if (bad)
        *bad = wr;
    return EOPNOTSUPP;
}
ibv_mw* t_alloc_mw(ibv_pd* pd, ibv_mw_type type) {
    return rdma::entry_null([&] { return Context::from(pd->context)->alloc_mw(pd, type); });
}
int t_dealloc_mw(ibv_mw* mw) {
    return rdma::entry_errno([&] { return Context::from(mw->context)->dealloc_mw(mw); });
}
ibv_cq_ex* t_create_cq_ex(ibv_context* c, ibv_cq_init_attr_ex* attr) {
    return rdma::entry_null([&] { return Context::from(c)->create_cq_ex(attr); });
}
ibv_qp* t_create_qp_ex(ibv_context* c, ibv_qp_init_attr_ex* attr) {
    return rdma::entry_null([&] { return Context::from(c)->create_qp_ex(attr); });
}
ibv_qp* t_open_qp(ibv_context* c, ibv_qp_open_attr* attr) {
    return rdma::entry_null([&] { return Context::from(c)->open_qp(attr); });
}
int t_get_srq_num(ibv_srq* srq, uint32_t* num) {
    return rdma::entry_errno([&] { return Context::from(srq->context)->get_srq_num(srq, num); });
}
ibv_srq* t_create_srq_ex(ibv_context* c, ibv_srq_init_attr_ex* attr) {
    return rdma::entry_null([&] { return Context::from(c)->create_srq_ex(attr); });
}
ibv_xrcd* t_open_xrcd(ibv_context* c, ibv_xrcd_init_attr* attr) {
    return rdma::entry_null([&] { return Context::from(c)->open_xrcd(attr); });
}
int t_close_xrcd(ibv_xrcd* xrcd) {
    return rdma::entry_errno([&] { return Context::from(xrcd->context)->close_xrcd(xrcd); });
}
ibv_wq* t_create_wq(ibv_context* c, ibv_wq_init_attr* attr) {
    return rdma::entry_null([&] { return Context::from(c)->create_wq(attr); });
}
int t_modify_wq(ibv_wq* wq, ibv_wq_attr* attr) {
    return rdma::entry_errno([&] { return Context::from(wq->context)->modify_wq(wq, attr); });
}
int t_destroy_wq(ibv_wq* wq) {
    return rdma::entry_errno([&] { return Context::from(wq->context)->destroy_wq(wq); });
}
ibv_rwq_ind_table* t_create_rwq_ind_table(ibv_context* c, ibv_rwq_ind_table_init_attr* attr) {
    return rdma::entry_null([&] { return Context::from(c)->create_rwq_ind_table(attr); });
}
int t_destroy_rwq_ind_table(ibv_rwq_ind_table* t) {
    return rdma::entry_errno([&] { return Context::from(t->context)->destroy_rwq_ind_table(t); });
}
ibv_flow* t_create_flow(ibv_qp* qp, ibv_flow_attr* attr) {
    return rdma::entry_null([&] { return Context::from(qp->context)->create_flow(qp, attr); });
}
int t_destroy_flow(ibv_flow* flow) {
    return rdma::entry_errno([&] { return Context::from(flow->context)->destroy_flow(flow); });
}
int no_bind_mw(ibv_qp*, ibv_mw*, ibv_mw_bind*) { return EOPNOTSUPP; }

int no_poll_cq(ibv_cq*, int, ibv_wc*) { return -EOPNOTSUPP; }
int no_req_notify_cq(ibv_cq*, int) { return EOPNOTSUPP; }

}  // namespace

// verbs_context grew at its front in the newest header: what a program
// built against rdma-core 44's header reaches behind ibv_context (the
// first slot, query_port, 320 bytes before it) must not move.
static_assert(offsetof(verbs_context, context) - offsetof(verbs_context, query_port) == 320);
static_assert(offsetof(verbs_context, context) - offsetof(verbs_context, sz) == sizeof(size_t));

void Context::install_trampolines() {
    verbs_context& v = wrap_.vctx;
    // The newest header's slots (no inline calls them): the exported verbs.
    v.free_buf = ibv_free_buf;
    v.alloc_buf = ibv_alloc_buf;
    v.dm_export_dmabuf_fd = ibv_dm_export_dmabuf_fd;
    v.reg_mr_ex = ibv_reg_mr_ex;
    v.dealloc_dmah = ibv_dealloc_dmah;
    v.alloc_dmah = ibv_alloc_dmah;
    v.query_device_ex = t_query_device_ex;
    v.query_port = t_query_port;
    v.create_cq_ex = t_create_cq_ex;
    v.create_qp_ex = t_create_qp_ex;
    v.open_qp = t_open_qp;
    v.get_srq_num = t_get_srq_num;
    v.create_srq_ex = t_create_srq_ex;
    v.open_xrcd = t_open_xrcd;
    v.close_xrcd = t_close_xrcd;
    v.create_wq = t_create_wq;
    v.modify_wq = t_modify_wq;
    v.destroy_wq = t_destroy_wq;
    v.create_rwq_ind_table = t_create_rwq_ind_table;
    v.destroy_rwq_ind_table = t_destroy_rwq_ind_table;
    v.ibv_create_flow = t_create_flow;
    v.ibv_destroy_flow = t_destroy_flow;
    ibv_context_ops& ops = v.context.ops;
    ops.post_send = no_post_send;
    ops.post_recv = no_post_recv;
    ops.post_srq_recv = no_post_srq_recv;
    ops.poll_cq = no_poll_cq;
    ops.req_notify_cq = no_req_notify_cq;
    ops.alloc_mw = t_alloc_mw;
    ops.dealloc_mw = t_dealloc_mw;
    ops.bind_mw = no_bind_mw;
}

int Context::init_kernel_context(const void* drv_in, size_t in_len, void* drv_out, size_t out_len) {
    ibv_context& c = *ibv();
    uint32_t num_comp_vectors = 0;
    uint64_t core_support = 0;
    Ioctl<4> cmd(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT, driver_id());
    cmd.out(UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, num_comp_vectors);
    cmd.out(UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, core_support);
    cmd.udata(drv_in, in_len, drv_out, out_len);
    int err = cmd.execute(c.cmd_fd);
    if (err == 0)
        return take_kernel_context(num_comp_vectors, core_support);
    // A driver refusing the request (DEVX, an unknown tail) answers so
    // through the ioctl; the legacy command would only repeat the refusal.
    if (!ioctl_method_absent(err))
        return err;

    alignas(8) unsigned char buf[sizeof(ib_uverbs_get_context_resp) + 256] = {};
    if (out_len > 256)
        return EINVAL;
    ib_uverbs_get_context req{};
    req.response = reinterpret_cast<uintptr_t>(buf);
    auto* resp = reinterpret_cast<ib_uverbs_get_context_resp*>(buf);
    if (int e = write_cmd(CmdChannel{c.cmd_fd, driver_id(), nullptr}, IB_USER_VERBS_CMD_GET_CONTEXT, req, resp, drv_in,
                          in_len, out_len))
        return e;
    c.async_fd = static_cast<int>(resp->async_fd);
    c.num_comp_vectors = static_cast<int>(resp->num_comp_vectors);
    if (out_len)
        std::memcpy(drv_out, buf + sizeof(ib_uverbs_get_context_resp), out_len);
    return 0;
}

int Context::import_kernel_context(uint16_t drv_attr, void* drv_out, size_t out_len) {
    ibv_context& c = *ibv();
    uint32_t num_comp_vectors = 0;
    uint64_t core_support = 0;
    Ioctl<3> cmd(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT, driver_id());
    cmd.out(UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, num_comp_vectors);
    cmd.out(UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT, core_support);
    if (out_len)
        cmd.ptr_out(drv_attr, drv_out, out_len);
    if (int e = cmd.execute(c.cmd_fd))
        return e;
    // (events of what this context creates come to an async file of its own)
    return take_kernel_context(num_comp_vectors, core_support);
}

// What both context ioctls answer, and the async fd the ioctl path
// allocates apart.
int Context::take_kernel_context(uint32_t num_comp_vectors, uint64_t core_support) {
    ibv_context& c = *ibv();
    c.num_comp_vectors = static_cast<int>(num_comp_vectors);
    core_support_ = core_support;
    c.async_fd = alloc_async_fd(c.cmd_fd, driver_id());
    return c.async_fd < 0 ? errno : 0;
}

// Translate the kernel's answers into the public structs.
static void fill_orig(ibv_device_attr& a, const ib_uverbs_query_device_resp& r) {
    a.node_guid = r.node_guid;
    a.sys_image_guid = r.sys_image_guid;
    a.max_mr_size = r.max_mr_size;
    a.page_size_cap = r.page_size_cap;
    a.vendor_id = r.vendor_id;
    a.vendor_part_id = r.vendor_part_id;
    a.hw_ver = r.hw_ver;
    a.max_qp = static_cast<int>(r.max_qp);
    a.max_qp_wr = static_cast<int>(r.max_qp_wr);
    a.device_cap_flags = static_cast<unsigned>(r.device_cap_flags);
    a.max_sge = static_cast<int>(r.max_sge);
    a.max_sge_rd = static_cast<int>(r.max_sge_rd);
    a.max_cq = static_cast<int>(r.max_cq);
    a.max_cqe = static_cast<int>(r.max_cqe);
    a.max_mr = static_cast<int>(r.max_mr);
    a.max_pd = static_cast<int>(r.max_pd);
    a.max_qp_rd_atom = static_cast<int>(r.max_qp_rd_atom);
    a.max_ee_rd_atom = static_cast<int>(r.max_ee_rd_atom);
    a.max_res_rd_atom = static_cast<int>(r.max_res_rd_atom);
    a.max_qp_init_rd_atom = static_cast<int>(r.max_qp_init_rd_atom);
    a.max_ee_init_rd_atom = static_cast<int>(r.max_ee_init_rd_atom);
    a.atomic_cap = static_cast<ibv_atomic_cap>(r.atomic_cap);
    a.max_ee = static_cast<int>(r.max_ee);
    a.max_rdd = static_cast<int>(r.max_rdd);
    a.max_mw = static_cast<int>(r.max_mw);
    a.max_raw_ipv6_qp = static_cast<int>(r.max_raw_ipv6_qp);
    a.max_raw_ethy_qp = static_cast<int>(r.max_raw_ethy_qp);
    a.max_mcast_grp = static_cast<int>(r.max_mcast_grp);
    a.max_mcast_qp_attach = static_cast<int>(r.max_mcast_qp_attach);
    a.max_total_mcast_qp_attach = static_cast<int>(r.max_total_mcast_qp_attach);
    a.max_ah = static_cast<int>(r.max_ah);
    a.max_fmr = static_cast<int>(r.max_fmr);
    a.max_map_per_fmr = static_cast<int>(r.max_map_per_fmr);
    a.max_srq = static_cast<int>(r.max_srq);
    a.max_srq_wr = static_cast<int>(r.max_srq_wr);
    a.max_srq_sge = static_cast<int>(r.max_srq_sge);
    a.max_pkeys = r.max_pkeys;
    a.local_ca_ack_delay = r.local_ca_ack_delay;
    a.phys_port_cnt = r.phys_port_cnt;
}

int Context::cmd_query_device_ex(const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr, size_t attr_size,
                                 uint64_t* raw_fw_ver, const Udata& u) {
    if (input && input->comp_mask)
        return EINVAL;
    if (!attr || attr_size < sizeof(ibv_device_attr))
        return EINVAL;
    ibv_device_attr_ex out{};
    if (attr_size == sizeof(ibv_device_attr)) {
        ib_uverbs_query_device_resp resp{};
        ib_uverbs_query_device req{};
        req.response = reinterpret_cast<uintptr_t>(&resp);
        if (int e = write_cmd(cmd_channel(), IB_USER_VERBS_CMD_QUERY_DEVICE, req, &resp))
            return e;
        fill_orig(out.orig_attr, resp);
        if (raw_fw_ver)
            *raw_fw_ver = resp.fw_ver;
        copy_prefix(attr, out, attr_size);
        return 0;
    }
    ib_uverbs_ex_query_device_resp resp{};
    ib_uverbs_ex_query_device req{};
    if (int e =
            write_ex_cmd(cmd_channel(), IB_USER_VERBS_EX_CMD_QUERY_DEVICE, req, &resp, sizeof(resp), u.out, u.out_len))
        return e;
    fill_orig(out.orig_attr, resp.base);
    if (raw_fw_ver)
        *raw_fw_ver = resp.base.fw_ver;
    // Fields past what the kernel wrote (response_length) stay zero.
    auto have = [&](size_t end) { return resp.response_length >= end; };
    using R = ib_uverbs_ex_query_device_resp;
    if (have(offsetof(R, odp_caps) + sizeof(resp.odp_caps))) {
        out.odp_caps.general_caps = resp.odp_caps.general_caps;
        out.odp_caps.per_transport_caps.rc_odp_caps = resp.odp_caps.per_transport_caps.rc_odp_caps;
        out.odp_caps.per_transport_caps.uc_odp_caps = resp.odp_caps.per_transport_caps.uc_odp_caps;
        out.odp_caps.per_transport_caps.ud_odp_caps = resp.odp_caps.per_transport_caps.ud_odp_caps;
    }
    if (have(offsetof(R, timestamp_mask) + 8))
        out.completion_timestamp_mask = resp.timestamp_mask;
    if (have(offsetof(R, hca_core_clock) + 8))
        out.hca_core_clock = resp.hca_core_clock;
    if (have(offsetof(R, device_cap_flags_ex) + 8))
        out.device_cap_flags_ex = resp.device_cap_flags_ex;
    if (have(offsetof(R, rss_caps) + sizeof(resp.rss_caps))) {
        out.rss_caps.supported_qpts = resp.rss_caps.supported_qpts;
        out.rss_caps.max_rwq_indirection_tables = resp.rss_caps.max_rwq_indirection_tables;
        out.rss_caps.max_rwq_indirection_table_size = resp.rss_caps.max_rwq_indirection_table_size;
    }
    if (have(offsetof(R, max_wq_type_rq) + 4))
        out.max_wq_type_rq = resp.max_wq_type_rq;
    if (have(offsetof(R, raw_packet_caps) + 4))
        out.raw_packet_caps = resp.raw_packet_caps;
    if (have(offsetof(R, tm_caps) + sizeof(resp.tm_caps))) {
        out.tm_caps.max_rndv_hdr_size = resp.tm_caps.max_rndv_hdr_size;
        out.tm_caps.max_num_tags = resp.tm_caps.max_num_tags;
        out.tm_caps.flags = resp.tm_caps.flags;
        out.tm_caps.max_ops = resp.tm_caps.max_ops;
        out.tm_caps.max_sge = resp.tm_caps.max_sge;
    }
    if (have(offsetof(R, cq_moderation_caps) + sizeof(resp.cq_moderation_caps))) {
        out.cq_mod_caps.max_cq_count = resp.cq_moderation_caps.max_cq_moderation_count;
        out.cq_mod_caps.max_cq_period = resp.cq_moderation_caps.max_cq_moderation_period;
    }
    if (have(offsetof(R, max_dm_size) + 8))
        out.max_dm_size = resp.max_dm_size;
    if (have(offsetof(R, xrc_odp_caps) + 4))
        out.xrc_odp_caps = resp.xrc_odp_caps;
    out.phys_port_cnt_ex = resp.base.phys_port_cnt;
    copy_prefix(attr, out, attr_size);
    return 0;
}

static void fill_port(ibv_port_attr& a, const ib_uverbs_query_port_resp& r) {
    a.state = static_cast<ibv_port_state>(r.state);
    a.max_mtu = static_cast<ibv_mtu>(r.max_mtu);
    a.active_mtu = static_cast<ibv_mtu>(r.active_mtu);
    a.gid_tbl_len = static_cast<int>(r.gid_tbl_len);
    a.port_cap_flags = r.port_cap_flags;
    a.max_msg_sz = r.max_msg_sz;
    a.bad_pkey_cntr = r.bad_pkey_cntr;
    a.qkey_viol_cntr = r.qkey_viol_cntr;
    a.pkey_tbl_len = r.pkey_tbl_len;
    a.lid = r.lid;
    a.sm_lid = r.sm_lid;
    a.lmc = r.lmc;
    a.max_vl_num = r.max_vl_num;
    a.sm_sl = r.sm_sl;
    a.subnet_timeout = r.subnet_timeout;
    a.init_type_reply = r.init_type_reply;
    a.active_width = r.active_width;
    a.active_speed = r.active_speed;
    a.phys_state = r.phys_state;
    a.link_layer = r.link_layer;
    a.flags = r.flags;
}

int Context::cmd_query_port(uint8_t port_num, ibv_port_attr* attr, size_t attr_size) {
    if (!attr)
        return EINVAL;
    ibv_port_attr out{};
    ib_uverbs_query_port_resp_ex resp{};
    Ioctl<2> cmd(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT, driver_id());
    cmd.const_in(UVERBS_ATTR_QUERY_PORT_PORT_NUM, port_num);
    cmd.out(UVERBS_ATTR_QUERY_PORT_RESP, resp);
    int err = cmd.execute(cmd_fd());
    if (err == 0) {
        fill_port(out, resp.legacy_resp);
        out.port_cap_flags2 = resp.port_cap_flags2;
    } else if (ioctl_unsupported(err)) {
        ib_uverbs_query_port_resp legacy{};
        ib_uverbs_query_port req{};
        req.response = reinterpret_cast<uintptr_t>(&legacy);
        req.port_num = port_num;
        if (int e = write_cmd(cmd_channel(), IB_USER_VERBS_CMD_QUERY_PORT, req, &legacy))
            return e;
        fill_port(out, legacy);
    } else {
        return err;
    }
    copy_prefix(attr, out, attr_size);
    return 0;
}

int Context::query_device_ex(const ibv_query_device_ex_input*, ibv_device_attr_ex*, size_t) { return EOPNOTSUPP; }

int Context::query_port(uint8_t port_num, ibv_port_attr* attr, size_t attr_size) {
    return cmd_query_port(port_num, attr, attr_size);
}

}  // namespace rdma::verbs
