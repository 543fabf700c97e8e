// Kernel commands for verbs objects (PD, MR, MW, CQ, QP, SRQ, AH,
// multicast). Providers call these with their driver data; the common
// public fields of each object are filled here, once, for every provider.
//
// As the reference does, objects the kernel has ioctl methods for (CQ, QP
// and SRQ create/destroy, PD and MR destroy) go through them; the rest, and
// everything on a kernel without the method, through the write-ABI command
// (itself carried by INVOKE_WRITE where the kernel has it, cmd_write.h).
#include "libibverbs/cmd_ioctl.h"
#include "libibverbs/cmd_write.h"
#include "libibverbs/ibverbs.h"

#include <algorithm>
#include <cstring>

namespace rdma::verbs {

namespace {

// A command with a response: the kernel writes the core response followed
// by the driver's part; both live in one buffer here.
template <class Cmd, class Resp>
int exec(const CmdChannel& ch, uint32_t command, Cmd& cmd, Resp& resp, const Udata& u) {
    constexpr size_t kMaxDriverOut = 512;
    if (u.out_len > kMaxDriverOut)
        return EINVAL;
    alignas(8) unsigned char buf[sizeof(Resp) + kMaxDriverOut];
    std::memset(buf, 0, sizeof(Resp) + u.out_len);
    cmd.response = reinterpret_cast<uintptr_t>(buf);
    if (int e = write_cmd(ch, command, cmd, reinterpret_cast<Resp*>(buf), u.in, u.in_len, u.out_len))
        return e;
    std::memcpy(&resp, buf, sizeof(Resp));
    if (u.out_len)
        std::memcpy(u.out, buf + sizeof(Resp), u.out_len);
    return 0;
}

void init_sync(pthread_mutex_t& m, pthread_cond_t& c) {
    pthread_mutex_init(&m, nullptr);
    pthread_cond_init(&c, nullptr);
}

// After a destroy: block until the application acknowledged every event
// the kernel reported for the object, so its memory can go.
void wait_acks(pthread_mutex_t& m, pthread_cond_t& c, const uint32_t& acked, uint32_t reported) {
    pthread_mutex_lock(&m);
    while (acked != reported)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
}

void to_kern_ah(const ibv_ah_attr& a, ib_uverbs_ah_attr& k) {
    std::memcpy(k.grh.dgid, a.grh.dgid.raw, 16);
    k.grh.flow_label = a.grh.flow_label;
    k.grh.sgid_index = a.grh.sgid_index;
    k.grh.hop_limit = a.grh.hop_limit;
    k.grh.traffic_class = a.grh.traffic_class;
    k.dlid = a.dlid;
    k.sl = a.sl;
    k.src_path_bits = a.src_path_bits;
    k.static_rate = a.static_rate;
    k.is_global = a.is_global;
    k.port_num = a.port_num;
}

void to_kern_dest(const ibv_ah_attr& a, ib_uverbs_qp_dest& d) {
    std::memcpy(d.dgid, a.grh.dgid.raw, 16);
    d.flow_label = a.grh.flow_label;
    d.dlid = a.dlid;
    d.sgid_index = a.grh.sgid_index;
    d.hop_limit = a.grh.hop_limit;
    d.traffic_class = a.grh.traffic_class;
    d.sl = a.sl;
    d.src_path_bits = a.src_path_bits;
    d.static_rate = a.static_rate;
    d.is_global = a.is_global;
    d.port_num = a.port_num;
}

void from_kern_dest(const ib_uverbs_qp_dest& d, ibv_ah_attr& a) {
    std::memcpy(a.grh.dgid.raw, d.dgid, 16);
    a.grh.flow_label = d.flow_label;
    a.dlid = d.dlid;
    a.grh.sgid_index = d.sgid_index;
    a.grh.hop_limit = d.hop_limit;
    a.grh.traffic_class = d.traffic_class;
    a.sl = d.sl;
    a.src_path_bits = d.src_path_bits;
    a.static_rate = d.static_rate;
    a.is_global = d.is_global;
    a.port_num = d.port_num;
}

// A destroy method whose only attribute is the object's handle. -1: the
// kernel lacks it (remembered), else 0 or a positive errno.
int destroy_by_handle(Context& c, Context::IoctlMethod m, uint16_t object, uint16_t method, uint16_t attr,
                      uint32_t handle) {
    if (c.ioctl_missing(m))
        return -1;
    Ioctl<1> io(object, method, c.driver_id());
    io.idr_in(attr, handle);
    int e = io.execute(c.cmd_fd());
    return c.note_ioctl_result(m, e) ? -1 : e;
}

// A destroy's answer. Once the device is gone the kernel has
// disassociated this context: its objects are already destroyed, and every
// command answers EIO. With RDMAV_ALLOW_DISASSOC_DESTROY set that counts as
// success (the application frees its side and moves on), as the reference
// does; without it the EIO is returned.
int destroy_result(int e) { return e == EIO && allow_disassoc_destroy() ? 0 : e; }

// The async event file the kernel reports the object's events to: the
// context's (as the reference passes it), when there is one. The
// reference lets a kernel ignore it for CQs only.
void add_event_fd(Ioctl<16>& io, uint16_t attr, int async_fd, bool optional = false) {
    if (async_fd < 0)
        return;
    ib_uverbs_attr& a = io.fd_in(attr, async_fd);
    if (optional)
        Ioctl<16>::optional(a);
}

}  // namespace

// ---------------------------------------------------------------------- PD

int Context::cmd_alloc_pd(ibv_pd* pd, const Udata& u) {
    ib_uverbs_alloc_pd cmd{};
    ib_uverbs_alloc_pd_resp resp{};
    if (int e = exec(cmd_channel(), IB_USER_VERBS_CMD_ALLOC_PD, cmd, resp, u))
        return e;
    pd->context = ibv();
    pd->handle = resp.pd_handle;
    return 0;
}

int Context::cmd_dealloc_pd(ibv_pd* pd) {
    int e = destroy_by_handle(*this, kPdDestroy, UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY,
                              UVERBS_ATTR_DESTROY_PD_HANDLE, pd->handle);
    if (e >= 0)
        return destroy_result(e);
    ib_uverbs_dealloc_pd cmd{};
    cmd.pd_handle = pd->handle;
    return destroy_result(write_cmd_noresp(cmd_channel(), IB_USER_VERBS_CMD_DEALLOC_PD, cmd));
}

// ---------------------------------------------------------------------- MR

int Context::cmd_reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access, VerbsMr* mr,
                        const Udata& u) {
    ib_uverbs_reg_mr cmd{};
    cmd.start = reinterpret_cast<uintptr_t>(addr);
    cmd.length = length;
    cmd.hca_va = hca_va;
    cmd.pd_handle = pd->handle;
    cmd.access_flags = static_cast<uint32_t>(access);
    ib_uverbs_reg_mr_resp resp{};
    if (int e = exec(cmd_channel(), IB_USER_VERBS_CMD_REG_MR, cmd, resp, u))
        return e;
    mr->mr.context = ibv();
    mr->mr.pd = pd;
    mr->mr.addr = addr;
    mr->mr.length = length;
    mr->mr.handle = resp.mr_handle;
    mr->mr.lkey = resp.lkey;
    mr->mr.rkey = resp.rkey;
    mr->access = access;
    return 0;
}

int Context::cmd_query_mr(ibv_pd* pd, uint32_t mr_handle, VerbsMr* mr) {
    uint32_t lkey = 0, rkey = 0;
    uint64_t length = 0;
    Ioctl<4> cmd(UVERBS_OBJECT_MR, UVERBS_METHOD_QUERY_MR, driver_id());
    cmd.idr_in(UVERBS_ATTR_QUERY_MR_HANDLE, mr_handle);
    cmd.out(UVERBS_ATTR_QUERY_MR_RESP_LKEY, lkey);
    cmd.out(UVERBS_ATTR_QUERY_MR_RESP_RKEY, rkey);
    cmd.out(UVERBS_ATTR_QUERY_MR_RESP_LENGTH, length);
    if (int e = cmd.execute(cmd_fd()))
        return e;
    mr->mr.context = ibv();
    mr->mr.pd = pd;
    mr->mr.addr = nullptr;  // not the importer's to know (the reference asks no iova)
    mr->mr.length = length;
    mr->mr.handle = mr_handle;
    mr->mr.lkey = lkey;
    mr->mr.rkey = rkey;
    mr->access = 0;
    return 0;
}

int Context::cmd_alloc_dm(const ibv_alloc_dm_attr* attr, ibv_dm* dm, Ioctl<8>& io) {
    const uint64_t length = attr->length;
    const uint32_t align = attr->log_align_req;
    ib_uverbs_attr& h = io.idr_out(UVERBS_ATTR_ALLOC_DM_HANDLE);
    io.in(UVERBS_ATTR_ALLOC_DM_LENGTH, length);
    io.in(UVERBS_ATTR_ALLOC_DM_ALIGNMENT, align);
    if (int e = io.execute(cmd_fd()))
        return e;
    dm->context = ibv();
    dm->handle = static_cast<uint32_t>(h.data);
    dm->comp_mask = IBV_DM_MASK_HANDLE;
    return 0;
}

int Context::cmd_free_dm(ibv_dm* dm) {
    Ioctl<1> io(UVERBS_OBJECT_DM, UVERBS_METHOD_DM_FREE, driver_id());
    io.idr_in(UVERBS_ATTR_FREE_DM_HANDLE, dm->handle);
    return io.execute(cmd_fd());
}

int Context::cmd_reg_dm_mr(ibv_pd* pd, ibv_dm* dm, uint64_t offset, size_t length, unsigned int access, VerbsMr* mr) {
    const uint64_t len = length;
    uint32_t lkey = 0, rkey = 0;
    Ioctl<8> io(UVERBS_OBJECT_MR, UVERBS_METHOD_DM_MR_REG, driver_id());
    ib_uverbs_attr& h = io.idr_out(UVERBS_ATTR_REG_DM_MR_HANDLE);
    io.out(UVERBS_ATTR_REG_DM_MR_RESP_LKEY, lkey);
    io.out(UVERBS_ATTR_REG_DM_MR_RESP_RKEY, rkey);
    io.idr_in(UVERBS_ATTR_REG_DM_MR_PD_HANDLE, pd->handle);
    io.idr_in(UVERBS_ATTR_REG_DM_MR_DM_HANDLE, dm->handle);
    io.in(UVERBS_ATTR_REG_DM_MR_OFFSET, offset);
    io.in(UVERBS_ATTR_REG_DM_MR_LENGTH, len);
    io.in(UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS, access);
    if (int e = io.execute(cmd_fd()))
        return e;
    mr->mr.context = ibv();
    mr->mr.pd = pd;
    mr->mr.addr = nullptr;  // zero-based: SGEs name offsets into the MR
    mr->mr.length = length;
    mr->mr.handle = static_cast<uint32_t>(h.data);
    mr->mr.lkey = lkey;
    mr->mr.rkey = rkey;
    mr->access = static_cast<int>(access);
    return 0;
}

int Context::cmd_advise_mr(ibv_pd* pd, uint32_t advice, uint32_t flags, const ibv_sge* sg_list, uint32_t num_sge) {
    Ioctl<4> cmd(UVERBS_OBJECT_MR, UVERBS_METHOD_ADVISE_MR, driver_id());
    cmd.idr_in(UVERBS_ATTR_ADVISE_MR_PD_HANDLE, pd->handle);
    cmd.const_in(UVERBS_ATTR_ADVISE_MR_ADVICE, advice);
    cmd.in(UVERBS_ATTR_ADVISE_MR_FLAGS, flags);
    cmd.ptr_in(UVERBS_ATTR_ADVISE_MR_SGE_LIST, sg_list, size_t(num_sge) * sizeof(ibv_sge));
    return cmd.execute(cmd_fd());
}

int Context::cmd_rereg_mr(VerbsMr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access, const Udata& u) {
    ib_uverbs_rereg_mr cmd{};
    cmd.mr_handle = mr->mr.handle;
    cmd.flags = static_cast<uint32_t>(flags);
    cmd.start = reinterpret_cast<uintptr_t>(addr);
    cmd.length = length;
    cmd.hca_va = reinterpret_cast<uintptr_t>(addr);
    cmd.pd_handle = (flags & IBV_REREG_MR_CHANGE_PD) ? pd->handle : 0;
    cmd.access_flags = static_cast<uint32_t>(access);
    ib_uverbs_rereg_mr_resp resp{};
    if (int e = exec(cmd_channel(), IB_USER_VERBS_CMD_REREG_MR, cmd, resp, u))
        return e;
    mr->mr.lkey = resp.lkey;
    mr->mr.rkey = resp.rkey;
    if (flags & IBV_REREG_MR_CHANGE_ACCESS)
        mr->access = access;
    return 0;
}

int Context::cmd_dereg_mr(VerbsMr* mr) {
    int e = destroy_by_handle(*this, kMrDestroy, UVERBS_OBJECT_MR, UVERBS_METHOD_MR_DESTROY,
                              UVERBS_ATTR_DESTROY_MR_HANDLE, mr->mr.handle);
    if (e >= 0)
        return destroy_result(e);
    ib_uverbs_dereg_mr cmd{};
    cmd.mr_handle = mr->mr.handle;
    return destroy_result(write_cmd_noresp(cmd_channel(), IB_USER_VERBS_CMD_DEREG_MR, cmd));
}

// ---------------------------------------------------------------------- MW

int Context::cmd_alloc_mw(ibv_pd* pd, ibv_mw_type type, ibv_mw* mw, const Udata& u) {
    ib_uverbs_alloc_mw cmd{};
    cmd.pd_handle = pd->handle;
    cmd.mw_type = static_cast<uint8_t>(type);
    ib_uverbs_alloc_mw_resp resp{};
    if (int e = exec(cmd_channel(), IB_USER_VERBS_CMD_ALLOC_MW, cmd, resp, u))
        return e;
    mw->context = ibv();
    mw->pd = pd;
    mw->rkey = resp.rkey;
    mw->handle = resp.mw_handle;
    mw->type = type;
    return 0;
}

int Context::cmd_dealloc_mw(ibv_mw* mw) {
    ib_uverbs_dealloc_mw cmd{};
    cmd.mw_handle = mw->handle;
    return destroy_result(write_cmd_noresp(cmd_channel(), IB_USER_VERBS_CMD_DEALLOC_MW, cmd));
}

// ---------------------------------------------------------------------- CQ

int Context::cmd_create_cq(int cqe, ibv_comp_channel* channel, int comp_vector, VerbsCq* vcq, const Udata& u,
                           uint32_t flags) {
    ibv_cq* cq = vcq->cq();
    const uint64_t user_handle = reinterpret_cast<uintptr_t>(cq);
    uint32_t handle = 0, granted = 0;
    int e = -1;
    if (!ioctl_missing(kCqCreate)) {
        const uint32_t entries = static_cast<uint32_t>(cqe), vector = static_cast<uint32_t>(comp_vector);
        Ioctl<16> io(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, driver_id());
        ib_uverbs_attr& h = io.idr_out(UVERBS_ATTR_CREATE_CQ_HANDLE);
        io.in(UVERBS_ATTR_CREATE_CQ_CQE, entries);
        io.in(UVERBS_ATTR_CREATE_CQ_USER_HANDLE, user_handle);
        if (channel)
            io.fd_in(UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, channel->fd);
        io.in(UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, vector);
        if (flags)
            io.in(UVERBS_ATTR_CREATE_CQ_FLAGS, flags);
        io.out(UVERBS_ATTR_CREATE_CQ_RESP_CQE, granted);
        add_event_fd(io, UVERBS_ATTR_CREATE_CQ_EVENT_FD, ibv()->async_fd, true);
        io.udata(u.in, u.in_len, u.out, u.out_len);
        e = io.execute(cmd_fd());
        if (e == 0)
            handle = static_cast<uint32_t>(h.data);
        else if (note_ioctl_result(kCqCreate, e))
            e = -1;
    }
    if (e < 0 && flags) {
        ib_uverbs_ex_create_cq cmd{};
        cmd.user_handle = user_handle;
        cmd.cqe = static_cast<uint32_t>(cqe);
        cmd.comp_vector = static_cast<uint32_t>(comp_vector);
        cmd.comp_channel = channel ? channel->fd : -1;
        cmd.flags = flags;
        ib_uverbs_ex_create_cq_resp resp{};
        e = write_ex_cmd(cmd_channel(), IB_USER_VERBS_EX_CMD_CREATE_CQ, cmd, &resp, sizeof(resp), u.out, u.out_len,
                         u.in, u.in_len);
        handle = resp.base.cq_handle;
        granted = resp.base.cqe;
    } else if (e < 0) {
        ib_uverbs_create_cq cmd{};
        cmd.user_handle = user_handle;
        cmd.cqe = static_cast<uint32_t>(cqe);
        cmd.comp_vector = static_cast<uint32_t>(comp_vector);
        cmd.comp_channel = channel ? channel->fd : -1;
        ib_uverbs_create_cq_resp resp{};
        e = exec(cmd_channel(), IB_USER_VERBS_CMD_CREATE_CQ, cmd, resp, u);
        handle = resp.cq_handle;
        granted = resp.cqe;
    }
    if (e)
        return e;
    cq->context = ibv();
    cq->channel = channel;
    cq->handle = handle;
    cq->cqe = static_cast<int>(granted);
    cq->comp_events_completed = 0;
    cq->async_events_completed = 0;
    init_sync(cq->mutex, cq->cond);
    if (channel) {
        pthread_mutex_lock(&ibv()->mutex);
        ++channel->refcnt;
        pthread_mutex_unlock(&ibv()->mutex);
    }
    return 0;
}

int Context::cmd_resize_cq(ibv_cq* cq, int cqe, const Udata& u) {
    ib_uverbs_resize_cq cmd{};
    cmd.cq_handle = cq->handle;
    cmd.cqe = static_cast<uint32_t>(cqe);
    ib_uverbs_resize_cq_resp resp{};
    if (int e = exec(cmd_channel(), IB_USER_VERBS_CMD_RESIZE_CQ, cmd, resp, u))
        return e;
    cq->cqe = static_cast<int>(resp.cqe);
    return 0;
}

int Context::cmd_req_notify_cq(ibv_cq* cq, int solicited_only) {
    ib_uverbs_req_notify_cq cmd{};
    cmd.cq_handle = cq->handle;
    cmd.solicited_only = solicited_only ? 1 : 0;
    return write_cmd_noresp(cmd_channel(), IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, cmd);
}

int Context::cmd_destroy_cq(ibv_cq* cq) {
    ib_uverbs_destroy_cq_resp resp{};
    int e = -1;
    if (!ioctl_missing(kCqDestroy)) {
        Ioctl<2> io(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_DESTROY, driver_id());
        io.idr_in(UVERBS_ATTR_DESTROY_CQ_HANDLE, cq->handle);
        io.out(UVERBS_ATTR_DESTROY_CQ_RESP, resp);
        e = io.execute(cmd_fd());
        if (note_ioctl_result(kCqDestroy, e))
            e = -1;
    }
    if (e < 0) {
        ib_uverbs_destroy_cq cmd{};
        cmd.cq_handle = cq->handle;
        e = exec(cmd_channel(), IB_USER_VERBS_CMD_DESTROY_CQ, cmd, resp, Udata{});
    }
    // (a CQ the kernel already destroyed with its device reports no
    // events to wait for)
    const bool gone = e != 0 && destroy_result(e) == 0;
    if (e && !gone)
        return e;
    pthread_mutex_lock(&cq->mutex);
    while (!gone &&
           (cq->comp_events_completed != resp.comp_events_reported ||
            cq->async_events_completed != resp.async_events_reported))
        pthread_cond_wait(&cq->cond, &cq->mutex);
    pthread_mutex_unlock(&cq->mutex);
    if (ibv_comp_channel* ch = cq->channel) {
        pthread_mutex_lock(&ibv()->mutex);
        --ch->refcnt;
        pthread_mutex_unlock(&ibv()->mutex);
    }
    return 0;
}

// ---------------------------------------------------------------------- QP

int Context::cmd_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr, VerbsQp* vqp, const Udata& u) {
    ibv_qp_init_attr_ex ex{};
    ex.qp_context = attr->qp_context;
    ex.send_cq = attr->send_cq;
    ex.recv_cq = attr->recv_cq;
    ex.srq = attr->srq;
    ex.cap = attr->cap;
    ex.qp_type = attr->qp_type;
    ex.sq_sig_all = attr->sq_sig_all;
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    int e = cmd_create_qp_ex(&ex, vqp, u);
    attr->cap = ex.cap;
    return e;
}

int Context::cmd_create_qp_ex(ibv_qp_init_attr_ex* attr, VerbsQp* vqp, const Udata& u) {
    ibv_qp* qp = vqp->qp();
    const uint64_t user_handle = reinterpret_cast<uintptr_t>(qp);
    // An XRC target QP belongs to a domain, not to a PD; the write
    // command carries the domain's handle where the PD's would be.
    const bool target = attr->qp_type == IBV_QPT_XRC_RECV;
    ibv_pd* pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : nullptr;
    ibv_xrcd* xrcd = (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) ? attr->xrcd : nullptr;
    if (target ? !xrcd : !pd)
        return EINVAL;
    const uint32_t owner = target ? to_vxrcd(xrcd)->handle : pd->handle;
    // An RSS QP receives through an indirection table of WQs.
    ibv_rwq_ind_table* table = (attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) ? attr->rwq_ind_tbl : nullptr;
    ib_uverbs_qp_cap granted{};
    uint32_t handle = 0, qpn = 0;
    int e = -1;
    if (!ioctl_missing(kQpCreate)) {
        const ib_uverbs_qp_cap want{attr->cap.max_send_wr, attr->cap.max_recv_wr, attr->cap.max_send_sge,
                                    attr->cap.max_recv_sge, attr->cap.max_inline_data};
        const uint32_t flags = attr->sq_sig_all ? IB_UVERBS_QP_CREATE_SQ_SIG_ALL : 0;
        Ioctl<16> io(UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE, driver_id());
        ib_uverbs_attr& h = io.idr_out(UVERBS_ATTR_CREATE_QP_HANDLE);
        io.idr_in(target ? UVERBS_ATTR_CREATE_QP_XRCD_HANDLE : UVERBS_ATTR_CREATE_QP_PD_HANDLE, owner);
        if (attr->send_cq)
            io.idr_in(UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, attr->send_cq->handle);
        if (attr->recv_cq)
            io.idr_in(UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, attr->recv_cq->handle);
        if (attr->srq)
            io.idr_in(UVERBS_ATTR_CREATE_QP_SRQ_HANDLE, attr->srq->handle);
        if (table)
            io.idr_in(UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE, static_cast<uint32_t>(table->ind_tbl_handle));
        io.in(UVERBS_ATTR_CREATE_QP_USER_HANDLE, user_handle);
        io.in(UVERBS_ATTR_CREATE_QP_CAP, want);
        io.const_in(UVERBS_ATTR_CREATE_QP_TYPE, static_cast<uint64_t>(attr->qp_type));
        if (flags)
            io.in(UVERBS_ATTR_CREATE_QP_FLAGS, flags);
        add_event_fd(io, UVERBS_ATTR_CREATE_QP_EVENT_FD, ibv()->async_fd);
        io.out(UVERBS_ATTR_CREATE_QP_RESP_CAP, granted);
        io.out(UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, qpn);
        io.udata(u.in, u.in_len, u.out, u.out_len);
        e = io.execute(cmd_fd());
        if (e == 0)
            handle = static_cast<uint32_t>(h.data);
        else if (note_ioctl_result(kQpCreate, e))
            e = -1;
    }
    if (e < 0 && table) {
        // the table is only in the extended command
        ib_uverbs_ex_create_qp cmd{};
        cmd.user_handle = user_handle;
        cmd.pd_handle = owner;
        cmd.max_inline_data = attr->cap.max_inline_data;
        cmd.sq_sig_all = static_cast<uint8_t>(attr->sq_sig_all);
        cmd.qp_type = static_cast<uint8_t>(attr->qp_type);
        cmd.comp_mask = IB_UVERBS_CREATE_QP_MASK_IND_TABLE;
        cmd.rwq_ind_tbl_handle = static_cast<uint32_t>(table->ind_tbl_handle);
        ib_uverbs_ex_create_qp_resp resp{};
        e = write_ex_cmd(cmd_channel(), IB_USER_VERBS_EX_CMD_CREATE_QP, cmd, &resp, sizeof(resp), u.out, u.out_len,
                         u.in, u.in_len);
        granted = {resp.base.max_send_wr, resp.base.max_recv_wr, resp.base.max_send_sge, resp.base.max_recv_sge,
                   resp.base.max_inline_data};
        handle = resp.base.qp_handle;
        qpn = resp.base.qpn;
    } else if (e < 0) {
        ib_uverbs_create_qp cmd{};
        cmd.user_handle = user_handle;
        cmd.pd_handle = owner;
        cmd.send_cq_handle = attr->send_cq ? attr->send_cq->handle : 0;
        cmd.recv_cq_handle = attr->recv_cq ? attr->recv_cq->handle : 0;
        cmd.srq_handle = attr->srq ? attr->srq->handle : 0;
        cmd.max_send_wr = attr->cap.max_send_wr;
        cmd.max_recv_wr = attr->cap.max_recv_wr;
        cmd.max_send_sge = attr->cap.max_send_sge;
        cmd.max_recv_sge = attr->cap.max_recv_sge;
        cmd.max_inline_data = attr->cap.max_inline_data;
        cmd.sq_sig_all = static_cast<uint8_t>(attr->sq_sig_all);
        cmd.qp_type = static_cast<uint8_t>(attr->qp_type);
        cmd.is_srq = attr->srq != nullptr;
        ib_uverbs_create_qp_resp resp{};
        e = exec(cmd_channel(), IB_USER_VERBS_CMD_CREATE_QP, cmd, resp, u);
        granted = {resp.max_send_wr, resp.max_recv_wr, resp.max_send_sge, resp.max_recv_sge, resp.max_inline_data};
        handle = resp.qp_handle;
        qpn = resp.qpn;
    }
    if (e)
        return e;
    attr->cap.max_send_wr = granted.max_send_wr;
    attr->cap.max_recv_wr = granted.max_recv_wr;
    attr->cap.max_send_sge = granted.max_send_sge;
    attr->cap.max_recv_sge = granted.max_recv_sge;
    attr->cap.max_inline_data = granted.max_inline_data;
    qp->context = ibv();
    qp->qp_context = attr->qp_context;
    qp->pd = target ? nullptr : pd;
    qp->send_cq = attr->send_cq;
    qp->recv_cq = attr->recv_cq;
    qp->srq = attr->srq;
    qp->handle = handle;
    qp->qp_num = qpn;
    qp->state = IBV_QPS_RESET;
    qp->qp_type = attr->qp_type;
    qp->events_completed = 0;
    init_sync(qp->mutex, qp->cond);
    return 0;
}

int Context::cmd_open_qp(const ibv_qp_open_attr* attr, VerbsQp* vqp, const Udata& u) {
    ibv_qp* qp = vqp->qp();
    ib_uverbs_open_qp cmd{};
    cmd.user_handle = reinterpret_cast<uintptr_t>(qp);
    cmd.pd_handle = to_vxrcd(attr->xrcd)->handle;
    cmd.qpn = attr->qp_num;
    cmd.qp_type = static_cast<uint8_t>(attr->qp_type);
    ib_uverbs_create_qp_resp resp{};
    if (int e = exec(cmd_channel(), IB_USER_VERBS_CMD_OPEN_QP, cmd, resp, u))
        return e;
    qp->context = ibv();
    qp->qp_context = attr->qp_context;
    qp->pd = nullptr;
    qp->send_cq = qp->recv_cq = nullptr;
    qp->srq = nullptr;
    qp->handle = resp.qp_handle;
    qp->qp_num = resp.qpn;
    qp->state = IBV_QPS_UNKNOWN;  // another context drives it
    qp->qp_type = attr->qp_type;
    qp->events_completed = 0;
    init_sync(qp->mutex, qp->cond);
    return 0;
}

int Context::cmd_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
    ib_uverbs_modify_qp cmd{};
    cmd.qp_handle = qp->handle;
    cmd.attr_mask = static_cast<uint32_t>(mask);
    cmd.qkey = attr->qkey;
    cmd.rq_psn = attr->rq_psn;
    cmd.sq_psn = attr->sq_psn;
    cmd.dest_qp_num = attr->dest_qp_num;
    cmd.qp_access_flags = static_cast<uint32_t>(attr->qp_access_flags);
    cmd.pkey_index = attr->pkey_index;
    cmd.alt_pkey_index = attr->alt_pkey_index;
    cmd.qp_state = static_cast<uint8_t>(attr->qp_state);
    cmd.cur_qp_state = static_cast<uint8_t>(attr->cur_qp_state);
    cmd.path_mtu = static_cast<uint8_t>(attr->path_mtu);
    cmd.path_mig_state = static_cast<uint8_t>(attr->path_mig_state);
    cmd.en_sqd_async_notify = attr->en_sqd_async_notify;
    cmd.max_rd_atomic = attr->max_rd_atomic;
    cmd.max_dest_rd_atomic = attr->max_dest_rd_atomic;
    cmd.min_rnr_timer = attr->min_rnr_timer;
    cmd.port_num = attr->port_num;
    cmd.timeout = attr->timeout;
    cmd.retry_cnt = attr->retry_cnt;
    cmd.rnr_retry = attr->rnr_retry;
    cmd.alt_port_num = attr->alt_port_num;
    cmd.alt_timeout = attr->alt_timeout;
    to_kern_dest(attr->ah_attr, cmd.dest);
    to_kern_dest(attr->alt_ah_attr, cmd.alt_dest);
    if (int e = write_cmd_noresp(cmd_channel(), IB_USER_VERBS_CMD_MODIFY_QP, cmd))
        return e;
    if (mask & IBV_QP_STATE)
        qp->state = attr->qp_state;
    return 0;
}

int Context::cmd_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
    ib_uverbs_query_qp cmd{};
    cmd.qp_handle = qp->handle;
    cmd.attr_mask = static_cast<uint32_t>(mask);
    ib_uverbs_query_qp_resp r{};
    if (int e = exec(cmd_channel(), IB_USER_VERBS_CMD_QUERY_QP, cmd, r, Udata{}))
        return e;
    attr->qkey = r.qkey;
    attr->rq_psn = r.rq_psn;
    attr->sq_psn = r.sq_psn;
    attr->dest_qp_num = r.dest_qp_num;
    attr->qp_access_flags = static_cast<int>(r.qp_access_flags);
    attr->pkey_index = r.pkey_index;
    attr->alt_pkey_index = r.alt_pkey_index;
    attr->qp_state = static_cast<ibv_qp_state>(r.qp_state);
    attr->cur_qp_state = static_cast<ibv_qp_state>(r.cur_qp_state);
    attr->path_mtu = static_cast<ibv_mtu>(r.path_mtu);
    attr->path_mig_state = static_cast<ibv_mig_state>(r.path_mig_state);
    attr->sq_draining = r.sq_draining;
    attr->max_rd_atomic = r.max_rd_atomic;
    attr->max_dest_rd_atomic = r.max_dest_rd_atomic;
    attr->min_rnr_timer = r.min_rnr_timer;
    attr->port_num = r.port_num;
    attr->timeout = r.timeout;
    attr->retry_cnt = r.retry_cnt;
    attr->rnr_retry = r.rnr_retry;
    attr->alt_port_num = r.alt_port_num;
    attr->alt_timeout = r.alt_timeout;
    attr->cap.max_send_wr = r.max_send_wr;
    attr->cap.max_recv_wr = r.max_recv_wr;
    attr->cap.max_send_sge = r.max_send_sge;
    attr->cap.max_recv_sge = r.max_recv_sge;
    attr->cap.max_inline_data = r.max_inline_data;
    from_kern_dest(r.dest, attr->ah_attr);
    from_kern_dest(r.alt_dest, attr->alt_ah_attr);
    if (init) {
        init->qp_context = qp->qp_context;
        init->send_cq = qp->send_cq;
        init->recv_cq = qp->recv_cq;
        init->srq = qp->srq;
        init->qp_type = qp->qp_type;
        init->cap = attr->cap;
        init->sq_sig_all = r.sq_sig_all;
    }
    qp->state = attr->qp_state;
    return 0;
}

int Context::cmd_destroy_qp(ibv_qp* qp) {
    ib_uverbs_destroy_qp_resp resp{};
    int e = -1;
    if (!ioctl_missing(kQpDestroy)) {
        Ioctl<2> io(UVERBS_OBJECT_QP, UVERBS_METHOD_QP_DESTROY, driver_id());
        io.idr_in(UVERBS_ATTR_DESTROY_QP_HANDLE, qp->handle);
        io.out(UVERBS_ATTR_DESTROY_QP_RESP, resp);
        e = io.execute(cmd_fd());
        if (note_ioctl_result(kQpDestroy, e))
            e = -1;
    }
    if (e < 0) {
        ib_uverbs_destroy_qp cmd{};
        cmd.qp_handle = qp->handle;
        e = exec(cmd_channel(), IB_USER_VERBS_CMD_DESTROY_QP, cmd, resp, Udata{});
    }
    if (e)
        return destroy_result(e);  // (gone with its device: no events to wait for)
    wait_acks(qp->mutex, qp->cond, qp->events_completed, resp.events_reported);
    return 0;
}

// --------------------------------------------------------------------- SRQ

int Context::cmd_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr, VerbsSrq* vsrq, const Udata& u) {
    ibv_srq_init_attr_ex ex{};
    ex.srq_context = attr->srq_context;
    ex.attr = attr->attr;
    ex.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
    ex.srq_type = IBV_SRQT_BASIC;
    ex.pd = pd;
    int e = cmd_create_srq_ex(&ex, vsrq, u);
    attr->attr = ex.attr;
    return e;
}

int Context::cmd_create_srq_ex(ibv_srq_init_attr_ex* attr, VerbsSrq* vsrq, const Udata& u) {
    ibv_srq* srq = &vsrq->srq;
    const uint64_t user_handle = reinterpret_cast<uintptr_t>(srq);
    const ibv_srq_type type = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? attr->srq_type : IBV_SRQT_BASIC;
    ibv_pd* pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ? attr->pd : nullptr;
    ibv_xrcd* xrcd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) ? attr->xrcd : nullptr;
    ibv_cq* cq = (attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ? attr->cq : nullptr;
    const uint32_t tags = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TM) ? attr->tm_cap.max_num_tags : 0;
    // Every type has a PD; XRC also its domain and CQ, tag matching its CQ.
    if (!pd || (type == IBV_SRQT_XRC && (!xrcd || !cq)) || (type == IBV_SRQT_TM && !cq) || type > IBV_SRQT_TM)
        return EINVAL;
    const auto ktype = static_cast<uint32_t>(type);  // IB_UVERBS_SRQT_* has the same values
    uint32_t handle = 0, max_wr = 0, max_sge = 0, srqn = 0;
    int e = -1;
    if (!ioctl_missing(kSrqCreate)) {
        Ioctl<16> io(UVERBS_OBJECT_SRQ, UVERBS_METHOD_SRQ_CREATE, driver_id());
        ib_uverbs_attr& h = io.idr_out(UVERBS_ATTR_CREATE_SRQ_HANDLE);
        io.idr_in(UVERBS_ATTR_CREATE_SRQ_PD_HANDLE, pd->handle);
        if (type == IBV_SRQT_XRC)
            io.idr_in(UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE, to_vxrcd(xrcd)->handle);
        if (type != IBV_SRQT_BASIC)
            io.idr_in(UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE, cq->handle);
        io.in(UVERBS_ATTR_CREATE_SRQ_USER_HANDLE, user_handle);
        io.in(UVERBS_ATTR_CREATE_SRQ_MAX_WR, attr->attr.max_wr);
        io.in(UVERBS_ATTR_CREATE_SRQ_MAX_SGE, attr->attr.max_sge);
        io.in(UVERBS_ATTR_CREATE_SRQ_LIMIT, attr->attr.srq_limit);
        if (type == IBV_SRQT_TM)
            io.in(UVERBS_ATTR_CREATE_SRQ_MAX_NUM_TAGS, tags);
        io.const_in(UVERBS_ATTR_CREATE_SRQ_TYPE, ktype);
        add_event_fd(io, UVERBS_ATTR_CREATE_SRQ_EVENT_FD, ibv()->async_fd);
        io.out(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR, max_wr);
        io.out(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, max_sge);
        io.out(UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM, srqn);
        io.udata(u.in, u.in_len, u.out, u.out_len);
        e = io.execute(cmd_fd());
        if (e == 0)
            handle = static_cast<uint32_t>(h.data);
        else if (note_ioctl_result(kSrqCreate, e))
            e = -1;
    }
    if (e < 0) {
        ib_uverbs_create_srq_resp resp{};
        if (type == IBV_SRQT_BASIC) {
            ib_uverbs_create_srq cmd{};
            cmd.user_handle = user_handle;
            cmd.pd_handle = pd->handle;
            cmd.max_wr = attr->attr.max_wr;
            cmd.max_sge = attr->attr.max_sge;
            cmd.srq_limit = attr->attr.srq_limit;
            e = exec(cmd_channel(), IB_USER_VERBS_CMD_CREATE_SRQ, cmd, resp, u);
        } else {
            ib_uverbs_create_xsrq cmd{};
            cmd.user_handle = user_handle;
            cmd.srq_type = ktype;
            cmd.pd_handle = pd->handle;
            cmd.max_wr = attr->attr.max_wr;
            cmd.max_sge = attr->attr.max_sge;
            cmd.srq_limit = attr->attr.srq_limit;
            cmd.max_num_tags = tags;
            cmd.xrcd_handle = xrcd ? to_vxrcd(xrcd)->handle : 0;
            cmd.cq_handle = cq->handle;
            e = exec(cmd_channel(), IB_USER_VERBS_CMD_CREATE_XSRQ, cmd, resp, u);
        }
        handle = resp.srq_handle;
        max_wr = resp.max_wr;
        max_sge = resp.max_sge;
        srqn = resp.srqn;
    }
    if (e)
        return e;
    attr->attr.max_wr = max_wr;
    attr->attr.max_sge = max_sge;
    srq->context = ibv();
    srq->srq_context = attr->srq_context;
    srq->pd = pd;
    srq->handle = handle;
    srq->events_completed = 0;
    init_sync(srq->mutex, srq->cond);
    vsrq->srq_type = type;
    vsrq->srq_num = srqn;
    return 0;
}

int Context::cmd_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask, const Udata& u) {
    ib_uverbs_modify_srq cmd{};
    cmd.srq_handle = srq->handle;
    cmd.attr_mask = static_cast<uint32_t>(mask);
    cmd.max_wr = attr->max_wr;
    cmd.srq_limit = attr->srq_limit;
    return write_cmd_noresp(cmd_channel(), IB_USER_VERBS_CMD_MODIFY_SRQ, cmd, u.in, u.in_len);
}

int Context::cmd_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
    ib_uverbs_query_srq cmd{};
    cmd.srq_handle = srq->handle;
    ib_uverbs_query_srq_resp resp{};
    if (int e = exec(cmd_channel(), IB_USER_VERBS_CMD_QUERY_SRQ, cmd, resp, Udata{}))
        return e;
    attr->max_wr = resp.max_wr;
    attr->max_sge = resp.max_sge;
    attr->srq_limit = resp.srq_limit;
    return 0;
}

int Context::cmd_destroy_srq(ibv_srq* srq) {
    ib_uverbs_destroy_srq_resp resp{};
    int e = -1;
    if (!ioctl_missing(kSrqDestroy)) {
        Ioctl<2> io(UVERBS_OBJECT_SRQ, UVERBS_METHOD_SRQ_DESTROY, driver_id());
        io.idr_in(UVERBS_ATTR_DESTROY_SRQ_HANDLE, srq->handle);
        io.out(UVERBS_ATTR_DESTROY_SRQ_RESP, resp);
        e = io.execute(cmd_fd());
        if (note_ioctl_result(kSrqDestroy, e))
            e = -1;
    }
    if (e < 0) {
        ib_uverbs_destroy_srq cmd{};
        cmd.srq_handle = srq->handle;
        e = exec(cmd_channel(), IB_USER_VERBS_CMD_DESTROY_SRQ, cmd, resp, Udata{});
    }
    if (e)
        return destroy_result(e);  // (gone with its device: no events to wait for)
    wait_acks(srq->mutex, srq->cond, srq->events_completed, resp.events_reported);
    return 0;
}

// -------------------------------------------------------------------- XRCD

int Context::cmd_open_xrcd(const ibv_xrcd_init_attr* attr, VerbsXrcd* xrcd, const Udata& u) {
    // Both the file and its open flags are needed; bits past them are
    // from a newer header.
    if (attr->comp_mask & ~uint32_t(IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS))
        return EOPNOTSUPP;
    if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) || !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS))
        return EINVAL;
    ib_uverbs_open_xrcd cmd{};
    cmd.fd = static_cast<uint32_t>(attr->fd);
    cmd.oflags = static_cast<uint32_t>(attr->oflags);
    ib_uverbs_open_xrcd_resp resp{};
    if (int e = exec(cmd_channel(), IB_USER_VERBS_CMD_OPEN_XRCD, cmd, resp, u))
        return e;
    xrcd->xrcd.context = ibv();
    xrcd->handle = resp.xrcd_handle;
    return 0;
}

int Context::cmd_close_xrcd(VerbsXrcd* xrcd) {
    int e = destroy_by_handle(*this, kXrcdDestroy, UVERBS_OBJECT_XRCD, UVERBS_METHOD_XRCD_DESTROY,
                              UVERBS_ATTR_DESTROY_XRCD_HANDLE, xrcd->handle);
    if (e >= 0)
        return destroy_result(e);
    ib_uverbs_close_xrcd cmd{};
    cmd.xrcd_handle = xrcd->handle;
    return destroy_result(write_cmd_noresp(cmd_channel(), IB_USER_VERBS_CMD_CLOSE_XRCD, cmd));
}

// -------------------------------------------------- WQ, RWQ table, flow

int Context::cmd_create_wq(ibv_wq_init_attr* attr, ibv_wq* wq, const Udata& u) {
    const uint64_t user_handle = reinterpret_cast<uintptr_t>(wq);
    const uint32_t flags = (attr->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) ? attr->create_flags : 0;
    uint32_t handle = 0, max_wr = 0, max_sge = 0, wqn = 0;
    int e = -1;
    if (!ioctl_missing(kWqCreate)) {
        Ioctl<16> io(UVERBS_OBJECT_WQ, UVERBS_METHOD_WQ_CREATE, driver_id());
        ib_uverbs_attr& h = io.idr_out(UVERBS_ATTR_CREATE_WQ_HANDLE);
        io.idr_in(UVERBS_ATTR_CREATE_WQ_PD_HANDLE, attr->pd->handle);
        io.idr_in(UVERBS_ATTR_CREATE_WQ_CQ_HANDLE, attr->cq->handle);
        io.in(UVERBS_ATTR_CREATE_WQ_USER_HANDLE, user_handle);
        io.const_in(UVERBS_ATTR_CREATE_WQ_TYPE, static_cast<uint64_t>(attr->wq_type));
        add_event_fd(io, UVERBS_ATTR_CREATE_WQ_EVENT_FD, ibv()->async_fd);
        io.in(UVERBS_ATTR_CREATE_WQ_MAX_WR, attr->max_wr);
        io.in(UVERBS_ATTR_CREATE_WQ_MAX_SGE, attr->max_sge);
        io.in(UVERBS_ATTR_CREATE_WQ_FLAGS, flags);
        io.out(UVERBS_ATTR_CREATE_WQ_RESP_MAX_WR, max_wr);
        io.out(UVERBS_ATTR_CREATE_WQ_RESP_MAX_SGE, max_sge);
        io.out(UVERBS_ATTR_CREATE_WQ_RESP_WQ_NUM, wqn);
        io.udata(u.in, u.in_len, u.out, u.out_len);
        e = io.execute(cmd_fd());
        if (e == 0)
            handle = static_cast<uint32_t>(h.data);
        else if (note_ioctl_result(kWqCreate, e))
            e = -1;
    }
    if (e < 0) {
        ib_uverbs_ex_create_wq cmd{};
        cmd.wq_type = static_cast<uint32_t>(attr->wq_type);
        cmd.user_handle = user_handle;
        cmd.pd_handle = attr->pd->handle;
        cmd.cq_handle = attr->cq->handle;
        cmd.max_wr = attr->max_wr;
        cmd.max_sge = attr->max_sge;
        cmd.create_flags = flags;
        ib_uverbs_ex_create_wq_resp resp{};
        e = write_ex_cmd(cmd_channel(), IB_USER_VERBS_EX_CMD_CREATE_WQ, cmd, &resp, sizeof(resp), u.out, u.out_len,
                         u.in, u.in_len);
        handle = resp.wq_handle;
        max_wr = resp.max_wr;
        max_sge = resp.max_sge;
        wqn = resp.wqn;
    }
    if (e)
        return e;
    attr->max_wr = max_wr;
    attr->max_sge = max_sge;
    wq->context = ibv();
    wq->wq_context = attr->wq_context;
    wq->pd = attr->pd;
    wq->cq = attr->cq;
    wq->wq_num = wqn;
    wq->handle = handle;
    wq->state = IBV_WQS_RESET;
    wq->wq_type = attr->wq_type;
    wq->events_completed = 0;
    init_sync(wq->mutex, wq->cond);
    return 0;
}

int Context::cmd_modify_wq(ibv_wq* wq, const ibv_wq_attr* attr, const Udata& u) {
    ib_uverbs_ex_modify_wq cmd{};
    cmd.attr_mask = attr->attr_mask;
    cmd.wq_handle = wq->handle;
    cmd.wq_state = static_cast<uint32_t>(attr->wq_state);
    cmd.curr_wq_state = static_cast<uint32_t>(attr->curr_wq_state);
    cmd.flags = attr->flags;
    cmd.flags_mask = attr->flags_mask;
    struct None {};
    if (int e = write_ex_cmd(cmd_channel(), IB_USER_VERBS_EX_CMD_MODIFY_WQ, cmd, static_cast<None*>(nullptr), 0,
                             nullptr, 0, u.in, u.in_len))
        return e;
    if (attr->attr_mask & IBV_WQ_ATTR_STATE)
        wq->state = attr->wq_state;
    return 0;
}

int Context::cmd_modify_cq(ibv_cq* cq, const ibv_modify_cq_attr* attr) {
    if (attr->attr_mask >= IBV_CQ_ATTR_RESERVED)
        return EINVAL;
    ib_uverbs_ex_modify_cq cmd{};
    cmd.cq_handle = cq->handle;
    cmd.attr_mask = attr->attr_mask;
    cmd.attr.cq_count = attr->moderate.cq_count;
    cmd.attr.cq_period = attr->moderate.cq_period;
    struct None {};
    return write_ex_cmd(cmd_channel(), IB_USER_VERBS_EX_CMD_MODIFY_CQ, cmd, static_cast<None*>(nullptr), 0, nullptr, 0,
                        nullptr, 0);
}

int Context::cmd_destroy_wq(ibv_wq* wq) {
    ib_uverbs_ex_destroy_wq_resp resp{};
    int e = -1;
    if (!ioctl_missing(kWqDestroy)) {
        Ioctl<2> io(UVERBS_OBJECT_WQ, UVERBS_METHOD_WQ_DESTROY, driver_id());
        io.idr_in(UVERBS_ATTR_DESTROY_WQ_HANDLE, wq->handle);
        io.out(UVERBS_ATTR_DESTROY_WQ_RESP, resp.events_reported);
        e = io.execute(cmd_fd());
        if (note_ioctl_result(kWqDestroy, e))
            e = -1;
    }
    if (e < 0) {
        ib_uverbs_ex_destroy_wq cmd{};
        cmd.wq_handle = wq->handle;
        e = write_ex_cmd(cmd_channel(), IB_USER_VERBS_EX_CMD_DESTROY_WQ, cmd, &resp, sizeof(resp));
    }
    if (e)
        return destroy_result(e);  // (gone with its device: no events to wait for)
    wait_acks(wq->mutex, wq->cond, wq->events_completed, resp.events_reported);
    return 0;
}

int Context::cmd_create_rwq_ind_table(const ibv_rwq_ind_table_init_attr* attr, ibv_rwq_ind_table* table) {
    if (attr->log_ind_tbl_size > IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE)
        return EINVAL;
    const size_t n = size_t(1) << attr->log_ind_tbl_size;
    // the handles follow the command, padded to 8 bytes
    const size_t len = (sizeof(ib_uverbs_ex_create_rwq_ind_table) + n * sizeof(uint32_t) + 7) / 8 * 8;
    std::vector<uint8_t> cmd(len, 0);
    ib_uverbs_ex_create_rwq_ind_table head{};
    head.log_ind_tbl_size = attr->log_ind_tbl_size;
    std::memcpy(cmd.data(), &head, sizeof(head));
    for (size_t i = 0; i < n; ++i) {
        const uint32_t h = attr->ind_tbl[i]->handle;
        std::memcpy(cmd.data() + sizeof(head) + i * sizeof(h), &h, sizeof(h));
    }
    ib_uverbs_ex_create_rwq_ind_table_resp resp{};
    if (int e = write_ex_raw(cmd_channel(), IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL, cmd.data(), cmd.size(), &resp,
                             sizeof(resp)))
        return e;
    table->context = ibv();
    table->ind_tbl_handle = static_cast<int>(resp.ind_tbl_handle);
    table->ind_tbl_num = static_cast<int>(resp.ind_tbl_num);
    table->comp_mask = 0;
    return 0;
}

int Context::cmd_destroy_rwq_ind_table(ibv_rwq_ind_table* table) {
    const auto handle = static_cast<uint32_t>(table->ind_tbl_handle);
    int e = destroy_by_handle(*this, kIndTblDestroy, UVERBS_OBJECT_RWQ_IND_TBL, UVERBS_METHOD_RWQ_IND_TBL_DESTROY,
                              UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE, handle);
    if (e >= 0)
        return destroy_result(e);
    ib_uverbs_ex_destroy_rwq_ind_table cmd{};
    cmd.ind_tbl_handle = handle;
    struct None {};
    return destroy_result(
        write_ex_cmd(cmd_channel(), IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL, cmd, static_cast<None*>(nullptr), 0));
}

int Context::cmd_create_counters(VerbsCounters* c) {
    Ioctl<1> io(UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_CREATE, driver_id());
    ib_uverbs_attr& h = io.idr_out(UVERBS_ATTR_CREATE_COUNTERS_HANDLE);
    if (int e = io.execute(cmd_fd()))
        return e;
    c->counters.context = ibv();
    c->handle = static_cast<uint32_t>(h.data);
    return 0;
}

int Context::cmd_destroy_counters(VerbsCounters* c) {
    Ioctl<1> io(UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_DESTROY, driver_id());
    io.idr_in(UVERBS_ATTR_DESTROY_COUNTERS_HANDLE, c->handle);
    return io.execute(cmd_fd());
}

int Context::cmd_read_counters(VerbsCounters* c, uint64_t* values, uint32_t n, uint32_t flags) {
    Ioctl<3> io(UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_READ, driver_id());
    io.idr_in(UVERBS_ATTR_READ_COUNTERS_HANDLE, c->handle);
    io.ptr_out(UVERBS_ATTR_READ_COUNTERS_BUFF, values, size_t(n) * sizeof(uint64_t));
    io.in(UVERBS_ATTR_READ_COUNTERS_FLAGS, flags);
    return io.execute(cmd_fd());
}

int Context::cmd_create_flow(ibv_qp* qp, const ibv_flow_attr* attr, ibv_flow* flow, const Udata& u) {
    std::vector<uint8_t> kattr;
    if (int e = flow_attr_to_kern(*attr, kattr))
        return e;
    ib_uverbs_create_flow head{};
    head.qp_handle = qp->handle;
    std::vector<uint8_t> cmd(offsetof(ib_uverbs_create_flow, flow_attr) + kattr.size(), 0);
    std::memcpy(cmd.data(), &head, offsetof(ib_uverbs_create_flow, flow_attr));
    std::memcpy(cmd.data() + offsetof(ib_uverbs_create_flow, flow_attr), kattr.data(), kattr.size());
    ib_uverbs_create_flow_resp resp{};
    if (int e = write_ex_raw(cmd_channel(), IB_USER_VERBS_EX_CMD_CREATE_FLOW, cmd.data(), cmd.size(), &resp,
                             sizeof(resp), u.in, u.in_len))
        return e;
    flow->context = ibv();
    flow->handle = resp.flow_handle;
    flow->comp_mask = 0;
    return 0;
}

int Context::cmd_destroy_flow(ibv_flow* flow) {
    int e = destroy_by_handle(*this, kFlowDestroy, UVERBS_OBJECT_FLOW, UVERBS_METHOD_FLOW_DESTROY,
                              UVERBS_ATTR_DESTROY_FLOW_HANDLE, flow->handle);
    if (e >= 0)
        return destroy_result(e);
    ib_uverbs_destroy_flow cmd{};
    cmd.flow_handle = flow->handle;
    struct None {};
    return destroy_result(
        write_ex_cmd(cmd_channel(), IB_USER_VERBS_EX_CMD_DESTROY_FLOW, cmd, static_cast<None*>(nullptr), 0));
}

// ---------------------------------------------------------------------- AH

int Context::cmd_create_ah(ibv_pd* pd, ibv_ah_attr* attr, ibv_ah* ah, const Udata& u) {
    ib_uverbs_create_ah cmd{};
    cmd.user_handle = reinterpret_cast<uintptr_t>(ah);
    cmd.pd_handle = pd->handle;
    to_kern_ah(*attr, cmd.attr);
    ib_uverbs_create_ah_resp resp{};
    if (int e = exec(cmd_channel(), IB_USER_VERBS_CMD_CREATE_AH, cmd, resp, u))
        return e;
    ah->context = ibv();
    ah->pd = pd;
    ah->handle = resp.ah_handle;
    return 0;
}

int Context::cmd_destroy_ah(ibv_ah* ah) {
    ib_uverbs_destroy_ah cmd{};
    cmd.ah_handle = ah->handle;
    return destroy_result(write_cmd_noresp(cmd_channel(), IB_USER_VERBS_CMD_DESTROY_AH, cmd));
}

// --------------------------------------------------------------- multicast

int Context::cmd_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
    ib_uverbs_attach_mcast cmd{};
    std::memcpy(cmd.gid, gid->raw, 16);
    cmd.qp_handle = qp->handle;
    cmd.mlid = lid;
    return write_cmd_noresp(cmd_channel(), IB_USER_VERBS_CMD_ATTACH_MCAST, cmd);
}

int Context::cmd_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
    ib_uverbs_detach_mcast cmd{};
    std::memcpy(cmd.gid, gid->raw, 16);
    cmd.qp_handle = qp->handle;
    cmd.mlid = lid;
    return write_cmd_noresp(cmd_channel(), IB_USER_VERBS_CMD_DETACH_MCAST, cmd);
}

// ------------------- defaults: unsupported, but multicast runs the kernel's

// The macro body confuses the formatter:
// clang-format off
#define RDMA_UNSUPPORTED_PTR \
    {                        \
        errno = EOPNOTSUPP;  \
        return nullptr;      \
    }
ibv_pd* Context::alloc_pd() RDMA_UNSUPPORTED_PTR
int Context::dealloc_pd(ibv_pd*) { return EOPNOTSUPP; }
ibv_mr* Context::reg_mr(ibv_pd*, void*, size_t, uint64_t, int) RDMA_UNSUPPORTED_PTR
ibv_mr* Context::reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) RDMA_UNSUPPORTED_PTR
int Context::rereg_mr(VerbsMr*, int, ibv_pd*, void*, size_t, int) { return EOPNOTSUPP; }
int Context::dereg_mr(VerbsMr*) { return EOPNOTSUPP; }
ibv_mw* Context::alloc_mw(ibv_pd*, ibv_mw_type) RDMA_UNSUPPORTED_PTR
int Context::dealloc_mw(ibv_mw*) { return EOPNOTSUPP; }
ibv_cq* Context::create_cq(int, ibv_comp_channel*, int) RDMA_UNSUPPORTED_PTR
ibv_cq_ex* Context::create_cq_ex(ibv_cq_init_attr_ex*) RDMA_UNSUPPORTED_PTR
int Context::resize_cq(ibv_cq*, int) { return EOPNOTSUPP; }
int Context::destroy_cq(ibv_cq*) { return EOPNOTSUPP; }
ibv_qp* Context::create_qp(ibv_pd*, ibv_qp_init_attr*) RDMA_UNSUPPORTED_PTR
ibv_qp* Context::create_qp_ex(ibv_qp_init_attr_ex*) RDMA_UNSUPPORTED_PTR
int Context::query_qp(ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*) { return EOPNOTSUPP; }
int Context::modify_qp(ibv_qp*, ibv_qp_attr*, int) { return EOPNOTSUPP; }
int Context::destroy_qp(ibv_qp*) { return EOPNOTSUPP; }
ibv_srq* Context::create_srq(ibv_pd*, ibv_srq_init_attr*) RDMA_UNSUPPORTED_PTR
ibv_srq* Context::create_srq_ex(ibv_srq_init_attr_ex*) RDMA_UNSUPPORTED_PTR
ibv_xrcd* Context::open_xrcd(ibv_xrcd_init_attr*) RDMA_UNSUPPORTED_PTR
ibv_qp* Context::open_qp(ibv_qp_open_attr*) RDMA_UNSUPPORTED_PTR
ibv_wq* Context::create_wq(ibv_wq_init_attr*) RDMA_UNSUPPORTED_PTR
ibv_rwq_ind_table* Context::create_rwq_ind_table(ibv_rwq_ind_table_init_attr*) RDMA_UNSUPPORTED_PTR
ibv_flow* Context::create_flow(ibv_qp*, ibv_flow_attr*) RDMA_UNSUPPORTED_PTR
int Context::modify_srq(ibv_srq*, ibv_srq_attr*, int) { return EOPNOTSUPP; }
int Context::query_srq(ibv_srq*, ibv_srq_attr*) { return EOPNOTSUPP; }
int Context::destroy_srq(ibv_srq*) { return EOPNOTSUPP; }
ibv_ah* Context::create_ah(ibv_pd*, ibv_ah_attr*) RDMA_UNSUPPORTED_PTR
int Context::destroy_ah(ibv_ah*) { return EOPNOTSUPP; }
int Context::attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) { return cmd_attach_mcast(qp, gid, lid); }
int Context::detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) { return cmd_detach_mcast(qp, gid, lid); }
#undef RDMA_UNSUPPORTED_PTR
// clang-format on

}  // namespace rdma::verbs
