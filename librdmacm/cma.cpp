// The RDMA connection manager: rdma_cm ids and their events over the
// kernel's ucma write ABI (/dev/infiniband/rdma_cm).
//
// Every command is one write(2) of a header + body; responses come back
// through a user pointer inside the body. Events are read the same way
// (GET_EVENT blocks unless the channel's fd is non-blocking). Some events
// need work in userspace before the application sees them: the address and
// route are queried into rdma_cm_id, a connect response moves our QP to RTS
// and sends the RTU, a multicast join attaches the QP to the group.
//
// Every exported function runs its body through the util/c_entry.h barrier
// with the convention its man page names (-1 and errno for almost all, NULL
// and errno for the constructors, nothing for the destroy calls). Inside,
// failures are values: Status or Result<T> carrying a positive errno, read
// from errno right after the system or libibverbs call that failed; an
// allocation failure is a std::bad_alloc that the barrier turns into ENOMEM.
// Where one exported function calls another (rdma_create_ep, the synchronous
// mode, rdma_get_request) it goes through that one's barrier and reports the
// errno that one left. A failure an exported call absorbs (an error event,
// a best-effort query) leaves its errno behind, set there by absorb().
// The few that can throw nothing say so ("No barrier"); the public header's
// declarations leave no room to mark them noexcept.
#include "librdmacm/cma_internal.h"
#include "util/c_entry.h"
#include "util/file_io.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <new>
#include <unistd.h>
#include <vector>

#include <rdma/rdma_cma_abi.h>
#include <rdma/rdma_verbs.h>

// libibverbs exports these kernel-struct converters (IBVERBS_1.0); Debian
// does not install the header that declares them.
extern "C" {
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr* dst, struct ib_uverbs_qp_attr* src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr* dst, struct ib_uverbs_ah_attr* src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec* dst, struct ib_user_path_rec* src);
}

namespace rdma::cm {
namespace {

// Commands newer than the installed ABI header.
constexpr uint32_t kCmdResolveIbService = 23;
constexpr uint32_t kCmdWriteCmEvent = 24;
constexpr uint8_t kRejectVendorOptionNotSupported = 35;

struct WriteCmEvent {
    uint32_t cmd;
    uint16_t in;
    uint16_t out;
    uint32_t id;
    uint32_t reserved;
    uint32_t event;
    uint32_t status;
    union {
        ucma_abi_conn_param conn;
        ucma_abi_ud_param ud;
        uint64_t arg;
    } param;
};

std::mutex g_mut;
bool g_initialized = false;
int g_abi_version = RDMA_USER_CM_MAX_ABI_VERSION;
ibv_device** g_device_list = nullptr;
std::vector<CmDevice>* g_devices = nullptr;

// Reads a small decimal sysfs value (its first 31 bytes), -1 when there is
// none.
int read_abi_file(const char* path) {
    Result<std::string> text = read_file(path);
    if (!text || text->empty())
        return -1;
    return std::atoi(text->substr(0, 31).c_str());
}

// Fills the header of a ucma command struct (header fields inline) and
// writes it; a failure is the write's errno, or ENODATA for a short write.
template <class Cmd>
Status execute(int fd, uint32_t cmd_no, Cmd& cmd, size_t out_len = 0) {
    cmd.cmd = cmd_no;
    cmd.in = sizeof(Cmd) - sizeof(ucma_abi_cmd_hdr);
    cmd.out = static_cast<uint16_t>(out_len);
    ssize_t ret = ::write(fd, &cmd, sizeof(cmd));
    if (ret == static_cast<ssize_t>(sizeof(cmd)))
        return {};
    return ret >= 0 ? Errno{ENODATA} : last_errno();
}

int cm_fd(IdPriv* p) { return p->id.channel->fd; }

Status open_device(CmDevice& d) {
    if (d.verbs)
        return {};
    ibv_context* ctx = ibv_open_device(d.device);
    if (!ctx)
        return Errno{errno ? errno : ENODEV};
    ibv_device_attr attr{};
    if (int r = ibv_query_device(ctx, &attr)) {
        ibv_close_device(ctx);
        return Errno{r};
    }
    d.max_responder_resources = static_cast<uint8_t>(std::min(attr.max_qp_rd_atom, 255));
    d.max_initiator_depth = static_cast<uint8_t>(std::min(attr.max_qp_init_rd_atom, 255));
    d.verbs = ctx;
    return {};
}

// Binds an id to the device the kernel reported (by index when the kernel
// gives one, else by node GUID) and to that device's shared PD.
Status attach_device(IdPriv* p, uint64_t guid_be, uint32_t index) {
    if (p->dev && (p->dev->guid == guid_be))
        return {};
    std::lock_guard lock(g_mut);
    CmDevice* found = nullptr;
    for (auto& d : *g_devices) {
        if (index != UINT32_MAX && d.index >= 0) {
            if (static_cast<uint32_t>(d.index) == index) {
                found = &d;
                break;
            }
        } else if (d.guid == guid_be) {
            found = &d;
            break;
        }
    }
    if (!found) {
        for (auto& d : *g_devices)
            if (d.guid == guid_be) {
                found = &d;
                break;
            }
    }
    if (!found)
        return Errno{ENODEV};
    if (Status s = open_device(*found); !s.ok())
        return s;
    if (!found->pd) {
        found->pd = ibv_alloc_pd(found->verbs);
        if (!found->pd)
            return Errno{errno ? errno : ENOMEM};
    }
    found->refcnt++;
    p->dev = found;
    p->id.verbs = found->verbs;
    p->id.pd = found->pd;
    p->initiator_depth = found->max_initiator_depth;
    p->responder_resources = found->max_responder_resources;
    return {};
}

Status query_addr(IdPriv* p) {
    ucma_abi_query_addr_resp resp{};
    resp.ibdev_index = UINT32_MAX;
    ucma_abi_query cmd{};
    cmd.response = reinterpret_cast<uintptr_t>(&resp);
    cmd.id = p->handle;
    cmd.option = UCMA_QUERY_ADDR;
    if (Status s = execute(cm_fd(p), UCMA_CMD_QUERY, cmd, sizeof(resp)); !s.ok())
        return s;
    std::memcpy(&p->id.route.addr.src_storage, &resp.src_addr,
                std::min<size_t>(resp.src_size, sizeof(sockaddr_storage)));
    std::memcpy(&p->id.route.addr.dst_storage, &resp.dst_addr,
                std::min<size_t>(resp.dst_size, sizeof(sockaddr_storage)));
    if (!p->dev && resp.node_guid) {
        if (Status s = attach_device(p, resp.node_guid, resp.ibdev_index); !s.ok())
            return s;
    }
    if (resp.port_num)
        p->id.port_num = resp.port_num;
    p->id.route.addr.addr.ibaddr.pkey = resp.pkey;
    return {};
}

// The GIDs behind the id's addresses, reported as AF_IB socket addresses.
Status query_gid(IdPriv* p) {
    ucma_abi_query_addr_resp resp{};
    ucma_abi_query cmd{};
    cmd.response = reinterpret_cast<uintptr_t>(&resp);
    cmd.id = p->handle;
    cmd.option = UCMA_QUERY_GID;
    if (Status s = execute(cm_fd(p), UCMA_CMD_QUERY, cmd, sizeof(resp)); !s.ok())
        return s;
    auto* src = reinterpret_cast<sockaddr_ib*>(&resp.src_addr);
    auto* dst = reinterpret_cast<sockaddr_ib*>(&resp.dst_addr);
    std::memcpy(&p->id.route.addr.addr.ibaddr.sgid, &src->sib_addr, sizeof(ibv_gid));
    std::memcpy(&p->id.route.addr.addr.ibaddr.dgid, &dst->sib_addr, sizeof(ibv_gid));
    return {};
}

// Path records of the resolved route (IB) or the RoCE equivalent.
Status query_route(IdPriv* p) {
    ucma_abi_query_route_resp resp{};
    resp.ibdev_index = UINT32_MAX;
    // QUERY_ROUTE has the QUERY layout without the option word.
    struct {
        uint32_t cmd;
        uint16_t in;
        uint16_t out;
        uint64_t response;
        uint32_t id;
        uint32_t reserved;
    } route{};
    route.response = reinterpret_cast<uintptr_t>(&resp);
    route.id = p->handle;
    if (Status s = execute(cm_fd(p), UCMA_CMD_QUERY_ROUTE, route, sizeof(resp)); !s.ok())
        return s;
    auto& r = p->id.route;
    std::free(r.path_rec);
    r.path_rec = nullptr;
    r.num_paths = 0;
    if (resp.num_paths) {
        uint32_t n = std::min<uint32_t>(resp.num_paths, 2);
        r.path_rec = static_cast<ibv_sa_path_rec*>(std::calloc(n, sizeof(ibv_sa_path_rec)));
        if (!r.path_rec)
            return Errno{ENOMEM};
        for (uint32_t i = 0; i < n; i++)
            ibv_copy_path_rec_from_kern(&r.path_rec[i], &resp.ib_route[i]);
        r.num_paths = static_cast<int>(n);
    }
    if (!p->dev && resp.node_guid) {
        if (Status s = attach_device(p, resp.node_guid, resp.ibdev_index); !s.ok())
            return s;
    }
    if (resp.port_num)
        p->id.port_num = resp.port_num;
    return {};
}

Status create_kern_id(int fd, IdPriv* p, rdma_port_space ps, ibv_qp_type qpt) {
    ucma_abi_create_id_resp resp{};
    ucma_abi_create_id cmd{};
    cmd.uid = reinterpret_cast<uintptr_t>(p);
    cmd.response = reinterpret_cast<uintptr_t>(&resp);
    cmd.ps = static_cast<uint16_t>(ps);
    cmd.qp_type = static_cast<uint8_t>(qpt);
    if (Status s = execute(fd, UCMA_CMD_CREATE_ID, cmd, sizeof(resp)); !s.ok())
        return s;
    p->handle = resp.id;
    return {};
}

// The number of events the kernel reported for the id.
Result<uint32_t> destroy_kern_id(int fd, uint32_t handle) {
    ucma_abi_destroy_id_resp resp{};
    ucma_abi_destroy_id cmd{};
    cmd.response = reinterpret_cast<uintptr_t>(&resp);
    cmd.id = handle;
    if (Status s = execute(fd, UCMA_CMD_DESTROY_ID, cmd, sizeof(resp)); !s.ok())
        return Errno{s.error()};
    return resp.events_reported;
}

void release_device(IdPriv* p) {
    if (!p->dev)
        return;
    std::lock_guard lock(g_mut);
    p->dev->refcnt--;
    p->dev = nullptr;
}

void free_id(IdPriv* p) {
    release_device(p);
    std::free(p->id.route.path_rec);
    std::free(p->connect);
    std::free(p->qp_init_attr);
    if (p->resolved)
        rdma_freeaddrinfo(p->resolved);
    while (p->mc_list) {
        Multicast* m = p->mc_list;
        p->mc_list = m->next;
        delete m;
    }
    if (p->sync)
        rdma_destroy_event_channel(p->id.channel);
    delete p;
}

bool is_ud(ibv_qp_type t) { return t == IBV_QPT_UD; }

// Creates the userspace half of an id (and, in synchronous mode, its own
// event channel). Never an exception: it also runs for a connection request
// already taken from the kernel, whose failure must be handled there (the
// kernel id destroyed, the event completed).
Result<IdPriv*> new_id(rdma_event_channel* channel, void* context, rdma_port_space ps, ibv_qp_type qpt) {
    auto* p = new (std::nothrow) IdPriv;
    if (!p)
        return Errno{ENOMEM};
    p->id.context = context;
    p->id.ps = ps;
    p->id.qp_type = qpt;
    p->handle = UINT32_MAX;
    if (!channel) {
        channel = rdma_create_event_channel();
        if (!channel) {
            Errno err = last_errno();
            delete p;
            return err;
        }
        p->sync = true;
    }
    p->id.channel = channel;
    return p;
}

// In synchronous mode, wait for the event that ends the call just made;
// its status becomes the call's result.
Status complete(IdPriv* p) {
    if (!p->sync)
        return {};
    if (p->id.event) {
        rdma_ack_cm_event(p->id.event);
        p->id.event = nullptr;
    }
    if (rdma_get_cm_event(p->id.channel, &p->id.event))
        return last_errno();
    rdma_cm_event* e = p->id.event;
    if (!e->status)
        return {};
    if (e->event == RDMA_CM_EVENT_REJECTED)
        return Errno{ECONNREFUSED};
    return Errno{e->status < 0 ? -e->status : e->status};
}

// The QP attributes and mask the kernel's CM gives for qp_attr->qp_state.
Status init_qp_attr(IdPriv* p, ibv_qp_attr* qp_attr, int* qp_attr_mask) {
    ib_uverbs_qp_attr resp{};
    ucma_abi_init_qp_attr cmd{};
    cmd.response = reinterpret_cast<uintptr_t>(&resp);
    cmd.id = p->handle;
    cmd.qp_state = qp_attr->qp_state;
    if (Status s = execute(cm_fd(p), UCMA_CMD_INIT_QP_ATTR, cmd, sizeof(resp)); !s.ok())
        return s;
    ibv_copy_qp_attr_from_kern(qp_attr, &resp);
    *qp_attr_mask = static_cast<int>(resp.qp_attr_mask);
    return {};
}

Status modify_qp_state(rdma_cm_id* id, ibv_qp_state state, ibv_qp_attr& attr, int& mask) {
    attr.qp_state = state;
    return init_qp_attr(IdPriv::of(id), &attr, &mask);
}

Status modify_qp_rtr(IdPriv* p, uint8_t resp_res) {
    rdma_cm_id* id = &p->id;
    if (!id->qp)
        return {};
    ibv_qp_attr attr{};
    int mask = 0;
    // Refresh INIT first: the kernel may have learnt the port/pkey since.
    if (Status s = modify_qp_state(id, IBV_QPS_INIT, attr, mask); !s.ok())
        return s;
    if (int r = ibv_modify_qp(id->qp, &attr, mask))
        return Errno{r};
    attr = {};
    if (Status s = modify_qp_state(id, IBV_QPS_RTR, attr, mask); !s.ok())
        return s;
    if (resp_res != RDMA_MAX_RESP_RES)
        attr.max_dest_rd_atomic = resp_res;
    if (p->remote_ece.vendor_id) {
        int r = ibv_set_ece(id->qp, &p->remote_ece);
        if (r && r != EOPNOTSUPP)
            return Errno{r};
    }
    if (int r = ibv_modify_qp(id->qp, &attr, mask))
        return Errno{r};
    return {};
}

Status modify_qp_rts(IdPriv* p, uint8_t init_depth) {
    rdma_cm_id* id = &p->id;
    if (!id->qp)
        return {};
    ibv_qp_attr attr{};
    int mask = 0;
    if (Status s = modify_qp_state(id, IBV_QPS_RTS, attr, mask); !s.ok())
        return s;
    if (init_depth != RDMA_MAX_INIT_DEPTH)
        attr.max_rd_atomic = init_depth;
    if (int r = ibv_modify_qp(id->qp, &attr, mask))
        return Errno{r};
    return {};
}

// RTR then RTS: a connected QP brought up with the given read depths.
Status modify_qp_rtr_rts(IdPriv* p, uint8_t resp_res, uint8_t init_depth) {
    if (Status s = modify_qp_rtr(p, resp_res); !s.ok())
        return s;
    return modify_qp_rts(p, init_depth);
}

Status modify_qp_simple(rdma_cm_id* id, ibv_qp_state state) {
    if (!id->qp)
        return {};
    ibv_qp_attr attr{};
    attr.qp_state = state;
    if (int r = ibv_modify_qp(id->qp, &attr, IBV_QP_STATE))
        return Errno{r};
    return {};
}

Status modify_qp_err(rdma_cm_id* id) { return modify_qp_simple(id, IBV_QPS_ERR); }

Status init_ud_qp(IdPriv* p, ibv_qp* qp) {
    ibv_qp_attr attr{};
    int mask = 0;
    if (Status s = modify_qp_state(&p->id, IBV_QPS_INIT, attr, mask); !s.ok())
        return s;
    if (int r = ibv_modify_qp(qp, &attr, mask))
        return Errno{r};
    attr = {};
    attr.qp_state = IBV_QPS_RTR;
    if (int r = ibv_modify_qp(qp, &attr, IBV_QP_STATE))
        return Errno{r};
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = 0;
    if (int r = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN))
        return Errno{r};
    return {};
}

Status init_conn_qp(IdPriv* p, ibv_qp* qp) {
    ibv_qp_attr attr{};
    int mask = 0;
    if (Status s = modify_qp_state(&p->id, IBV_QPS_INIT, attr, mask); !s.ok())
        return s;
    if (int r = ibv_modify_qp(qp, &attr, mask))
        return Errno{r};
    return {};
}

// Completion channels and CQs made for an id whose QP/SRQ attributes name
// none. Sizes follow the queue depths.
Status create_cqs(rdma_cm_id* id, uint32_t send_size, uint32_t recv_size) {
    if (recv_size) {
        id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
        if (!id->recv_cq_channel)
            goto err;
        id->recv_cq = ibv_create_cq(id->verbs, static_cast<int>(recv_size), id, id->recv_cq_channel, 0);
        if (!id->recv_cq)
            goto err;
    }
    if (send_size) {
        id->send_cq_channel = ibv_create_comp_channel(id->verbs);
        if (!id->send_cq_channel)
            goto err;
        id->send_cq = ibv_create_cq(id->verbs, static_cast<int>(send_size), id, id->send_cq_channel, 0);
        if (!id->send_cq)
            goto err;
    }
    return {};
err : {
    Errno err{errno ? errno : ENOMEM};
    destroy_cqs(id);
    return err;
}
}

}  // namespace

void destroy_cqs(rdma_cm_id* id) {
    if (id->recv_cq) {
        ibv_destroy_cq(id->recv_cq);
        if (id->send_cq == id->recv_cq)
            id->send_cq = nullptr;
        id->recv_cq = nullptr;
    }
    if (id->recv_cq_channel) {
        ibv_destroy_comp_channel(id->recv_cq_channel);
        if (id->send_cq_channel == id->recv_cq_channel)
            id->send_cq_channel = nullptr;
        id->recv_cq_channel = nullptr;
    }
    if (id->send_cq) {
        ibv_destroy_cq(id->send_cq);
        id->send_cq = nullptr;
    }
    if (id->send_cq_channel) {
        ibv_destroy_comp_channel(id->send_cq_channel);
        id->send_cq_channel = nullptr;
    }
}

socklen_t addr_len(const sockaddr* addr) noexcept {
    if (!addr)
        return 0;
    switch (addr->sa_family) {
    case AF_INET: return sizeof(sockaddr_in);
    case AF_INET6: return sizeof(sockaddr_in6);
    case AF_IB: return sizeof(sockaddr_ib);
    default: return 0;
    }
}

Status init() {
    std::lock_guard lock(g_mut);
    if (g_initialized)
        return {};
    int abi = read_abi_file("/sys/class/misc/rdma_cm/abi_version");
    if (abi < 0)
        abi = read_abi_file("/sys/class/infiniband_ucma/abi_version");
    if (abi >= 0) {
        if (abi < RDMA_USER_CM_MIN_ABI_VERSION || abi > RDMA_USER_CM_MAX_ABI_VERSION) {
            std::fprintf(stderr, "librdmacm: kernel ABI version %d doesn't match library version %d.\n", abi,
                         RDMA_USER_CM_MAX_ABI_VERSION);
            return Errno{ENOSYS};
        }
        g_abi_version = abi;
    }
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    // However the device list failed (no uverbs at all: ENOSYS), the CM
    // reports that there is no device, as the reference does.
    if (!list)
        return Errno{ENODEV};
    if (n == 0) {
        ibv_free_device_list(list);
        return Errno{ENODEV};
    }
    // Runs inside the callers' barrier: a failed allocation throws, and the
    // list is given back on the way out.
    std::unique_ptr<ibv_device*, void (*)(ibv_device**)> owned(list, ibv_free_device_list);
    auto devs = std::make_unique<std::vector<CmDevice>>(static_cast<size_t>(n));
    for (int i = 0; i < n; i++) {
        (*devs)[i].device = list[i];
        (*devs)[i].guid = ibv_get_device_guid(list[i]);
        (*devs)[i].index = ibv_get_device_index(list[i]);
    }
    g_device_list = owned.release();
    g_devices = devs.release();
    g_initialized = true;
    return {};
}

}  // namespace rdma::cm

using namespace rdma::cm;
using rdma::Errno;
using rdma::Result;
using rdma::Status;

namespace {

// Fills the kernel's connection parameters from the caller's (or the
// defaults when it passed none), prefixing any ai_connect bytes.
Status copy_conn_param(IdPriv* p, ucma_abi_conn_param& dst, const rdma_conn_param* src, uint32_t qp_num, uint8_t srq) {
    dst.qp_num = qp_num;
    dst.srq = srq;
    dst.responder_resources = p->responder_resources;
    dst.initiator_depth = p->initiator_depth;
    dst.valid = 1;
    if (p->connect_len) {
        std::memcpy(dst.private_data, p->connect, p->connect_len);
        dst.private_data_len = static_cast<uint8_t>(p->connect_len);
    }
    if (src) {
        dst.flow_control = src->flow_control;
        dst.retry_count = src->retry_count;
        dst.rnr_retry_count = src->rnr_retry_count;
        if (src->private_data && src->private_data_len) {
            if (p->connect_len + src->private_data_len > RDMA_MAX_PRIVATE_DATA)
                return Errno{EINVAL};
            std::memcpy(dst.private_data + dst.private_data_len, src->private_data, src->private_data_len);
            dst.private_data_len = static_cast<uint8_t>(dst.private_data_len + src->private_data_len);
        }
    } else {
        dst.retry_count = 7;
        dst.rnr_retry_count = 7;
    }
    return {};
}

// Connected ids need either a QP or the caller's parameters, and the
// requested RDMA read depths must be ones the device has.
Status valid_param(IdPriv* p, const rdma_conn_param* param) {
    if (p->id.ps != RDMA_PS_TCP)
        return {};
    if (!p->id.qp && !param)
        return Errno{EINVAL};
    if (!param)
        return {};
    if (!p->dev)
        return {};
    if (param->responder_resources != RDMA_MAX_RESP_RES && param->responder_resources > p->dev->max_responder_resources)
        return Errno{EINVAL};
    if (param->initiator_depth != RDMA_MAX_INIT_DEPTH && param->initiator_depth > p->dev->max_initiator_depth)
        return Errno{EINVAL};
    return {};
}

void copy_conn_event(Event* e, const ucma_abi_conn_param& src) {
    auto& c = e->event.param.conn;
    c.private_data_len = src.private_data_len;
    if (src.private_data_len) {
        std::memcpy(e->private_data, src.private_data, src.private_data_len);
        c.private_data = e->private_data;
    }
    c.responder_resources = src.responder_resources;
    c.initiator_depth = src.initiator_depth;
    c.flow_control = src.flow_control;
    c.retry_count = src.retry_count;
    c.rnr_retry_count = src.rnr_retry_count;
    c.srq = src.srq;
    c.qp_num = src.qp_num;
}

void copy_ud_event(Event* e, ucma_abi_ud_param& src) {
    auto& u = e->event.param.ud;
    u.private_data_len = src.private_data_len;
    if (src.private_data_len) {
        std::memcpy(e->private_data, src.private_data, src.private_data_len);
        u.private_data = e->private_data;
    }
    ibv_copy_ah_attr_from_kern(&u.ah_attr, &src.ah_attr);
    u.qp_num = src.qp_num;
    u.qkey = src.qkey;
}

// For exported functions only: a failure the call absorbs (it still
// returns success, reporting the failure in an event or not at all) leaves
// its errno behind, as it always has; a MULTICAST_ERROR's status -1 says
// "see errno", as the reference's does.
void absorb(Status s) noexcept {
    if (!s.ok())
        errno = s.error();
}

void complete_event(IdPriv* p) {
    std::lock_guard lock(p->mut);
    p->events_completed++;
    p->cond.notify_all();
}

// A new connection request: the kernel has made an id for it; we make ours
// and learn its addresses and route.
Status process_conn_req(Event* e, uint32_t handle, const ucma_abi_ece& ece) {
    IdPriv* listen = e->id_priv;
    Result<IdPriv*> made = new_id(listen->id.channel, listen->id.context, listen->id.ps, listen->id.qp_type);
    if (!made.ok()) {
        (void)destroy_kern_id(cm_fd(listen), handle);
        return Errno{made.error()};
    }
    IdPriv* p = *made;
    p->handle = handle;
    e->event.listen_id = &listen->id;
    e->event.id = &p->id;
    p->remote_ece.vendor_id = ece.vendor_id;
    p->remote_ece.options = ece.attr_mod;
    Status s;
    // A synchronous listener's new ids are synchronous too.
    if (listen->sync && rdma_migrate_id(&p->id, nullptr))
        s = last_errno();
    if (s.ok())
        s = query_addr(p);
    if (s.ok())
        s = query_gid(p);
    if (s.ok())
        s = query_route(p);
    if (!s.ok()) {
        (void)destroy_kern_id(cm_fd(p), handle);
        free_id(p);
    }
    return s;
}

// CONNECT_RESPONSE on an id with a QP: bring the QP up and send the RTU;
// the application then sees ESTABLISHED. On a failure the caller rejects.
Status process_conn_resp(IdPriv* p) {
    if (Status s = modify_qp_rtr_rts(p, RDMA_MAX_RESP_RES, RDMA_MAX_INIT_DEPTH); !s.ok())
        return s;
    ucma_abi_accept cmd{};
    cmd.id = p->handle;
    return execute(cm_fd(p), UCMA_CMD_ACCEPT, cmd);
}

// Fails when the QP cannot be attached to the group.
Status process_join(Event* e) {
    Multicast* mc = e->mc;
    auto& ah = e->event.param.ud.ah_attr;
    mc->mgid = ah.grh.dgid;
    mc->mlid = ah.dlid;
    rdma_cm_id* id = &mc->id_priv->id;
    if (!id->qp)
        return {};
    if (mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
        return {};
    if (int r = ibv_attach_mcast(id->qp, &mc->mgid, mc->mlid))
        return Errno{r};
    return {};
}

}  // namespace

// ------------------------------------------------------------ channels ---

RDMACM_EXPORT rdma_event_channel* rdma_create_event_channel(void) {
    return rdma::entry_null([&]() -> Result<rdma_event_channel*> {
        if (Status s = rdma::cm::init(); !s.ok())
            return Errno{s.error()};
        auto* ch = static_cast<rdma_event_channel*>(std::malloc(sizeof(rdma_event_channel)));
        if (!ch)
            return Errno{ENOMEM};
        ch->fd = ::open("/dev/infiniband/rdma_cm", O_RDWR | O_CLOEXEC);
        if (ch->fd < 0) {
            Errno err = last_errno();
            std::free(ch);
            return err;
        }
        return ch;
    });
}

RDMACM_EXPORT void rdma_destroy_event_channel(rdma_event_channel* channel) {
    rdma::entry_void([&] {
        if (!channel)
            return;
        ::close(channel->fd);
        std::free(channel);
    });
}

// ----------------------------------------------------------------- ids ---

namespace {
Status create_id_ps(rdma_event_channel* channel, rdma_cm_id** id, void* context, rdma_port_space ps, ibv_qp_type qpt) {
    if (!id)
        return Errno{EINVAL};
    if (Status s = rdma::cm::init(); !s.ok())
        return s;
    Result<IdPriv*> made = new_id(channel, context, ps, qpt);
    if (!made.ok())
        return Errno{made.error()};
    IdPriv* p = *made;
    if (Status s = create_kern_id(cm_fd(p), p, ps, qpt); !s.ok()) {
        free_id(p);
        return s;
    }
    *id = &p->id;
    return {};
}

ibv_qp_type qp_type_of(rdma_port_space ps) {
    return (ps == RDMA_PS_IPOIB || ps == RDMA_PS_UDP) ? IBV_QPT_UD : IBV_QPT_RC;
}
}  // namespace

RDMACM_EXPORT int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context, rdma_port_space ps) {
    return rdma::entry_minus_one([&] { return create_id_ps(channel, id, context, ps, qp_type_of(ps)); });
}

RDMACM_EXPORT int rdma_destroy_id(rdma_cm_id* id) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        Result<uint32_t> reported = destroy_kern_id(cm_fd(p), p->handle);
        if (!reported.ok())
            return Errno{reported.error()};
        if (id->event) {
            rdma_ack_cm_event(id->event);
            id->event = nullptr;
        }
        {
            std::unique_lock lock(p->mut);
            p->cond.wait(lock, [&] { return p->events_completed >= *reported; });
        }
        free_id(p);
        return {};
    });
}

RDMACM_EXPORT int rdma_bind_addr(rdma_cm_id* id, sockaddr* addr) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id)
            return Errno{EINVAL};
        socklen_t len = addr_len(addr);
        if (!len)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        ucma_abi_bind cmd{};
        cmd.id = p->handle;
        cmd.addr_size = static_cast<uint16_t>(len);
        std::memcpy(&cmd.addr, addr, len);
        if (Status s = execute(cm_fd(p), UCMA_CMD_BIND, cmd); !s.ok())
            return s;
        if (Status s = query_addr(p); !s.ok())
            return s;
        // Best effort: the GIDs are informative, the bind stands without them.
        absorb(query_gid(p));
        return {};
    });
}

RDMACM_EXPORT int rdma_resolve_addr(rdma_cm_id* id, sockaddr* src_addr, sockaddr* dst_addr, int timeout_ms) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id)
            return Errno{EINVAL};
        socklen_t dst_len = addr_len(dst_addr);
        if (!dst_len)
            return Errno{EINVAL};
        socklen_t src_len = addr_len(src_addr);
        if (src_addr && !src_len)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        ucma_abi_resolve_addr cmd{};
        cmd.id = p->handle;
        cmd.timeout_ms = static_cast<uint32_t>(timeout_ms);
        cmd.src_size = static_cast<uint16_t>(src_len);
        cmd.dst_size = static_cast<uint16_t>(dst_len);
        if (src_len)
            std::memcpy(&cmd.src_addr, src_addr, src_len);
        std::memcpy(&cmd.dst_addr, dst_addr, dst_len);
        if (Status s = execute(cm_fd(p), UCMA_CMD_RESOLVE_ADDR, cmd); !s.ok())
            return s;
        std::memset(&id->route.addr.dst_storage, 0, sizeof(id->route.addr.dst_storage));
        std::memcpy(&id->route.addr.dst_storage, dst_addr, dst_len);
        return complete(p);
    });
}

RDMACM_EXPORT int rdma_resolve_route(rdma_cm_id* id, int timeout_ms) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        ucma_abi_resolve_route cmd{};
        cmd.id = p->handle;
        cmd.timeout_ms = static_cast<uint32_t>(timeout_ms);
        if (Status s = execute(cm_fd(p), UCMA_CMD_RESOLVE_ROUTE, cmd); !s.ok())
            return s;
        return complete(p);
    });
}

RDMACM_EXPORT int rdma_init_qp_attr(rdma_cm_id* id, ibv_qp_attr* qp_attr, int* qp_attr_mask) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id || !qp_attr || !qp_attr_mask)
            return Errno{EINVAL};
        return init_qp_attr(IdPriv::of(id), qp_attr, qp_attr_mask);
    });
}

// ------------------------------------------------------------------ QPs ---

RDMACM_EXPORT int rdma_create_qp_ex(rdma_cm_id* id, ibv_qp_init_attr_ex* attr) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id || !attr)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        if (id->qp)
            return Errno{EINVAL};
        if (!id->verbs)
            return Errno{EINVAL};
        if ((attr->comp_mask & IBV_QP_INIT_ATTR_PD) && attr->pd && attr->pd->context != id->verbs)
            return Errno{EINVAL};
        if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
            attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
            attr->pd = id->pd;
        }
        if (!attr->srq && id->srq)
            attr->srq = id->srq;
        if (attr->qp_type == IBV_QPT_XRC_RECV) {
            // no send queue, no CQs of our own
        } else {
            uint32_t send = attr->send_cq ? 0 : attr->cap.max_send_wr;
            uint32_t recv = (attr->recv_cq || attr->srq) ? 0 : attr->cap.max_recv_wr;
            if (!attr->recv_cq && attr->srq && id->recv_cq)
                attr->recv_cq = id->recv_cq;
            if (!attr->recv_cq && !recv && !attr->srq)
                recv = 1;
            if (send || recv) {
                if (Status s = create_cqs(id, send, recv); !s.ok())
                    return s;
            }
            if (!attr->send_cq)
                attr->send_cq = id->send_cq;
            if (!attr->recv_cq)
                attr->recv_cq = id->recv_cq ? id->recv_cq : attr->send_cq;
        }
        ibv_qp* qp = ibv_create_qp_ex(id->verbs, attr);
        if (!qp) {
            Errno err{errno ? errno : ENOMEM};
            destroy_cqs(id);
            return err;
        }
        if (Status s = is_ud(id->qp_type) ? init_ud_qp(p, qp) : init_conn_qp(p, qp); !s.ok()) {
            ibv_destroy_qp(qp);
            destroy_cqs(id);
            return s;
        }
        if (!p->local_ece.vendor_id) {
            ibv_ece ece{};
            if (!ibv_query_ece(qp, &ece))
                p->local_ece = ece;
        }
        id->qp = qp;
        return {};
    });
}

RDMACM_EXPORT int rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id || !qp_init_attr)
            return Errno{EINVAL};
        if (pd && id->verbs && pd->context != id->verbs)
            return Errno{EINVAL};
        ibv_qp_init_attr_ex ex{};
        std::memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
        ex.comp_mask = IBV_QP_INIT_ATTR_PD;
        ex.pd = pd ? pd : id->pd;
        if (rdma_create_qp_ex(id, &ex))
            return last_errno();
        std::memcpy(qp_init_attr, &ex, sizeof(*qp_init_attr));
        return {};
    });
}

RDMACM_EXPORT void rdma_destroy_qp(rdma_cm_id* id) {
    rdma::entry_void([&] {
        if (!id || !id->qp)
            return;
        ibv_destroy_qp(id->qp);
        id->qp = nullptr;
        // CQs shared with an SRQ stay until the SRQ goes.
        if (id->srq) {
            if (id->send_cq && id->send_cq != id->recv_cq) {
                ibv_destroy_cq(id->send_cq);
                id->send_cq = nullptr;
            }
            if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel) {
                ibv_destroy_comp_channel(id->send_cq_channel);
                id->send_cq_channel = nullptr;
            }
            return;
        }
        destroy_cqs(id);
    });
}

RDMACM_EXPORT int rdma_create_srq_ex(rdma_cm_id* id, ibv_srq_init_attr_ex* attr) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id || !attr || !id->verbs)
            return Errno{EINVAL};
        if (id->srq)
            return Errno{EINVAL};
        if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)) {
            attr->comp_mask |= IBV_SRQ_INIT_ATTR_TYPE;
            attr->srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
        }
        if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
            attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
            attr->pd = id->pd;
        }
        if (attr->srq_type == IBV_SRQT_XRC) {
            if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq) {
                if (Status s = create_cqs(id, 0, attr->attr.max_wr); !s.ok())
                    return s;
                attr->comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
                attr->cq = id->recv_cq;
            }
        }
        ibv_srq* srq = ibv_create_srq_ex(id->verbs, attr);
        if (!srq) {
            Errno err{errno ? errno : ENOMEM};
            if (attr->srq_type == IBV_SRQT_XRC)
                destroy_cqs(id);
            return err;
        }
        id->srq = srq;
        return {};
    });
}

RDMACM_EXPORT int rdma_create_srq(rdma_cm_id* id, ibv_pd* pd, ibv_srq_init_attr* attr) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id || !attr)
            return Errno{EINVAL};
        ibv_srq_init_attr_ex ex{};
        ex.srq_context = attr->srq_context;
        ex.attr = attr->attr;
        ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
        ex.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
        ex.pd = pd ? pd : id->pd;
        if (rdma_create_srq_ex(id, &ex))
            return last_errno();
        attr->attr = ex.attr;
        return {};
    });
}

RDMACM_EXPORT void rdma_destroy_srq(rdma_cm_id* id) {
    rdma::entry_void([&] {
        if (!id || !id->srq)
            return;
        ibv_destroy_srq(id->srq);
        id->srq = nullptr;
        if (!id->qp)
            destroy_cqs(id);
    });
}

// ---------------------------------------------------------- connection ---

RDMACM_EXPORT int rdma_connect(rdma_cm_id* id, rdma_conn_param* conn_param) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        if (Status s = valid_param(p, conn_param); !s.ok())
            return s;
        if (conn_param && p->dev) {
            if (conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH)
                p->initiator_depth = conn_param->initiator_depth;
            if (conn_param->responder_resources != RDMA_MAX_RESP_RES)
                p->responder_resources = conn_param->responder_resources;
        }
        ucma_abi_connect cmd{};
        cmd.id = p->handle;
        uint32_t qp_num = id->qp ? id->qp->qp_num : (conn_param ? conn_param->qp_num : 0);
        uint8_t srq = id->qp ? (id->qp->srq ? 1 : 0) : (conn_param ? conn_param->srq : 0);
        if (Status s = copy_conn_param(p, cmd.conn_param, conn_param, qp_num, srq); !s.ok())
            return s;
        cmd.ece.vendor_id = p->local_ece.vendor_id;
        cmd.ece.attr_mod = p->local_ece.options;
        if (Status s = execute(cm_fd(p), UCMA_CMD_CONNECT, cmd); !s.ok())
            return s;
        if (p->connect_len) {
            std::free(p->connect);
            p->connect = nullptr;
            p->connect_len = 0;
        }
        return complete(p);
    });
}

RDMACM_EXPORT int rdma_establish(rdma_cm_id* id) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        if (id->qp)
            return Errno{EINVAL};
        ucma_abi_accept cmd{};
        cmd.id = p->handle;
        if (Status s = execute(cm_fd(p), UCMA_CMD_ACCEPT, cmd); !s.ok())
            return s;
        return {};
    });
}

RDMACM_EXPORT int rdma_listen(rdma_cm_id* id, int backlog) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        ucma_abi_listen cmd{};
        cmd.id = p->handle;
        cmd.backlog = static_cast<uint32_t>(backlog);
        if (Status s = execute(cm_fd(p), UCMA_CMD_LISTEN, cmd); !s.ok())
            return s;
        return query_addr(p);
    });
}

RDMACM_EXPORT int rdma_get_request(rdma_cm_id* listen, rdma_cm_id** id) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!listen || !id)
            return Errno{EINVAL};
        IdPriv* lp = IdPriv::of(listen);
        if (!lp->sync)
            return Errno{EINVAL};
        if (listen->event) {
            rdma_ack_cm_event(listen->event);
            listen->event = nullptr;
        }
        rdma_cm_event* event = nullptr;
        if (rdma_get_cm_event(listen->channel, &event))
            return last_errno();
        Status s;
        if (event->status) {
            s = Errno{event->status < 0 ? -event->status : event->status};
        } else if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
            s = Errno{EINVAL};
        } else if (lp->qp_init_attr) {
            ibv_qp_init_attr_ex attr = *lp->qp_init_attr;
            rdma_cm_id* nid = event->id;
            if (attr.pd && attr.pd->context != nid->verbs)
                attr.pd = nullptr;
            if (rdma_create_qp_ex(nid, &attr))
                s = last_errno();
        }
        if (!s.ok()) {
            if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
                rdma_cm_id* nid = event->id;
                rdma_ack_cm_event(event);
                rdma_destroy_id(nid);
            } else {
                rdma_ack_cm_event(event);
            }
            return s;
        }
        *id = event->id;
        (*id)->event = event;
        return {};
    });
}

RDMACM_EXPORT int rdma_accept(rdma_cm_id* id, rdma_conn_param* conn_param) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        uint8_t init_depth = p->initiator_depth, resp_res = p->responder_resources;
        if (!is_ud(id->qp_type)) {
            if (Status s = valid_param(p, conn_param); !s.ok())
                return s;
            uint8_t dev_init = p->dev ? p->dev->max_initiator_depth : 0;
            uint8_t dev_resp = p->dev ? p->dev->max_responder_resources : 0;
            if (!conn_param || conn_param->initiator_depth == RDMA_MAX_INIT_DEPTH)
                init_depth = std::min(p->initiator_depth, dev_init);
            else
                init_depth = conn_param->initiator_depth;
            if (!conn_param || conn_param->responder_resources == RDMA_MAX_RESP_RES)
                resp_res = std::min(p->responder_resources, dev_resp);
            else
                resp_res = conn_param->responder_resources;
            p->initiator_depth = init_depth;
            p->responder_resources = resp_res;
            if (Status s = modify_qp_rtr_rts(p, resp_res, init_depth); !s.ok())
                return s;
        }
        ucma_abi_accept cmd{};
        cmd.id = p->handle;
        cmd.uid = reinterpret_cast<uintptr_t>(p);
        uint32_t qp_num = id->qp ? id->qp->qp_num : (conn_param ? conn_param->qp_num : 0);
        uint8_t srq = id->qp ? (id->qp->srq ? 1 : 0) : (conn_param ? conn_param->srq : 0);
        if (Status s = copy_conn_param(p, cmd.conn_param, conn_param, qp_num, srq); !s.ok())
            return s;
        cmd.ece.vendor_id = p->local_ece.vendor_id;
        cmd.ece.attr_mod = p->local_ece.options;
        if (Status s = execute(cm_fd(p), UCMA_CMD_ACCEPT, cmd); !s.ok()) {
            (void)modify_qp_err(id);
            return s;
        }
        if (is_ud(id->qp_type))
            return {};
        return complete(p);
    });
}

namespace {
Status reject(rdma_cm_id* id, const void* data, uint8_t len, uint8_t reason) {
    if (!id)
        return Errno{EINVAL};
    IdPriv* p = IdPriv::of(id);
    ucma_abi_reject cmd{};
    cmd.id = p->handle;
    cmd.reason = reason;
    if (data && len) {
        std::memcpy(cmd.private_data, data, len);
        cmd.private_data_len = len;
    }
    return execute(cm_fd(p), UCMA_CMD_REJECT, cmd);
}
}  // namespace

RDMACM_EXPORT int rdma_reject(rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
    return rdma::entry_minus_one([&] { return reject(id, private_data, private_data_len, 0); });
}

RDMACM_EXPORT int rdma_reject_ece(rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
    return rdma::entry_minus_one(
        [&] { return reject(id, private_data, private_data_len, kRejectVendorOptionNotSupported); });
}

RDMACM_EXPORT int rdma_notify(rdma_cm_id* id, ibv_event_type event) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        ucma_abi_notify cmd{};
        cmd.id = p->handle;
        cmd.event = static_cast<uint32_t>(event);
        return execute(cm_fd(p), UCMA_CMD_NOTIFY, cmd);
    });
}

RDMACM_EXPORT int rdma_disconnect(rdma_cm_id* id) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        if (id->verbs && id->qp) {
            Status s = id->verbs->device->transport_type == IBV_TRANSPORT_IWARP ? modify_qp_simple(id, IBV_QPS_SQD)
                                                                                : modify_qp_err(id);
            if (!s.ok())
                return s;
        }
        ucma_abi_disconnect cmd{};
        cmd.id = p->handle;
        if (Status s = execute(cm_fd(p), UCMA_CMD_DISCONNECT, cmd); !s.ok())
            return s;
        return complete(p);
    });
}

// No barrier: checks and copies a struct; nothing here can throw. Its one
// failure is set here, the C API's -1 and errno.
RDMACM_EXPORT int rdma_set_local_ece(rdma_cm_id* id, ibv_ece* ece) {
    if (!id || id->qp || !ece || !ece->vendor_id || ece->comp_mask) {
        errno = EINVAL;
        return -1;
    }
    IdPriv::of(id)->local_ece = *ece;
    return 0;
}

// No barrier: checks and copies a struct; nothing here can throw. Its one
// failure is set here, the C API's -1 and errno.
RDMACM_EXPORT int rdma_get_remote_ece(rdma_cm_id* id, ibv_ece* ece) {
    if (!id || id->qp || !ece) {
        errno = EINVAL;
        return -1;
    }
    *ece = IdPriv::of(id)->remote_ece;
    return 0;
}

// ----------------------------------------------------------- multicast ---

namespace {
Status join_multicast(rdma_cm_id* id, sockaddr* addr, socklen_t len, uint16_t flags, void* context) {
    IdPriv* p = IdPriv::of(id);
    auto* mc = new Multicast;
    mc->context = context;
    mc->id_priv = p;
    mc->join_flags = static_cast<uint8_t>(flags);
    std::memcpy(&mc->addr, addr, len);
    {
        std::lock_guard lock(p->mut);
        mc->next = p->mc_list;
        p->mc_list = mc;
    }
    ucma_abi_create_id_resp resp{};
    ucma_abi_join_mcast cmd{};
    cmd.response = reinterpret_cast<uintptr_t>(&resp);
    cmd.uid = reinterpret_cast<uintptr_t>(mc);
    cmd.id = p->handle;
    cmd.addr_size = static_cast<uint16_t>(len);
    cmd.join_flags = flags;
    std::memcpy(&cmd.addr, addr, len);
    if (Status s = execute(cm_fd(p), UCMA_CMD_JOIN_MCAST, cmd, sizeof(resp)); !s.ok()) {
        std::lock_guard lock(p->mut);
        for (Multicast** pp = &p->mc_list; *pp; pp = &(*pp)->next)
            if (*pp == mc) {
                *pp = mc->next;
                break;
            }
        delete mc;
        return s;
    }
    mc->handle = resp.id;
    return complete(p);
}
}  // namespace

RDMACM_EXPORT int rdma_join_multicast(rdma_cm_id* id, sockaddr* addr, void* context) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id)
            return Errno{EINVAL};
        socklen_t len = addr_len(addr);
        if (!len)
            return Errno{EINVAL};
        return join_multicast(id, addr, len, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
    });
}

RDMACM_EXPORT int rdma_join_multicast_ex(rdma_cm_id* id, rdma_cm_join_mc_attr_ex* attr, void* context) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id || !attr)
            return Errno{EINVAL};
        if (attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
            return Errno{ENOTSUP};
        if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) || !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS))
            return Errno{EINVAL};
        if (attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
            return Errno{EINVAL};
        socklen_t len = addr_len(attr->addr);
        if (!len)
            return Errno{EINVAL};
        return join_multicast(id, attr->addr, len, static_cast<uint16_t>(attr->join_flags), context);
    });
}

RDMACM_EXPORT int rdma_leave_multicast(rdma_cm_id* id, sockaddr* addr) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id)
            return Errno{EINVAL};
        socklen_t len = addr_len(addr);
        if (!len)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        Multicast* mc = nullptr;
        {
            std::lock_guard lock(p->mut);
            for (Multicast** pp = &p->mc_list; *pp; pp = &(*pp)->next)
                if (!std::memcmp(&(*pp)->addr, addr, len)) {
                    mc = *pp;
                    *pp = mc->next;
                    break;
                }
        }
        if (!mc)
            return Errno{EADDRNOTAVAIL};
        if (id->qp && mc->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
            ibv_detach_mcast(id->qp, &mc->mgid, mc->mlid);
        uint32_t reported = 0;
        {
            ucma_abi_destroy_id_resp resp{};
            ucma_abi_destroy_id cmd{};
            cmd.response = reinterpret_cast<uintptr_t>(&resp);
            cmd.id = mc->handle;
            if (Status s = execute(cm_fd(p), UCMA_CMD_LEAVE_MCAST, cmd, sizeof(resp)); !s.ok()) {
                delete mc;
                return s;
            }
            reported = resp.events_reported;
        }
        {
            std::unique_lock lock(p->mut);
            mc->cond.wait(lock, [&] { return mc->events_completed >= reported; });
        }
        delete mc;
        return {};
    });
}

// -------------------------------------------------------------- events ---

RDMACM_EXPORT int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!channel || !event)
            return Errno{EINVAL};
        if (Status s = rdma::cm::init(); !s.ok())
            return s;
        for (;;) {
            // Once GET_EVENT has returned, the event is ours: nothing below
            // may throw (failures become error events or a consumed event).
            auto* e = new Event;
            ucma_abi_event_resp resp{};
            ucma_abi_get_event cmd{};
            cmd.response = reinterpret_cast<uintptr_t>(&resp);
            if (Status s = execute(channel->fd, UCMA_CMD_GET_EVENT, cmd, sizeof(resp)); !s.ok()) {
                delete e;
                return s;
            }
            e->event.event = static_cast<rdma_cm_event_type>(resp.event);
            e->event.status = static_cast<int>(resp.status);
            if (resp.event == RDMA_CM_EVENT_MULTICAST_JOIN || resp.event == RDMA_CM_EVENT_MULTICAST_ERROR) {
                e->mc = reinterpret_cast<Multicast*>(static_cast<uintptr_t>(resp.uid));
                e->id_priv = e->mc->id_priv;
            } else {
                e->id_priv = reinterpret_cast<IdPriv*>(static_cast<uintptr_t>(resp.uid));
            }
            IdPriv* p = e->id_priv;
            e->event.id = &p->id;
            switch (resp.event) {
            case RDMA_CM_EVENT_ADDR_RESOLVED: {
                Status s = query_addr(p);
                if (s.ok())
                    s = query_gid(p);
                if (!s.ok()) {
                    absorb(s);
                    e->event.event = RDMA_CM_EVENT_ADDR_ERROR;
                    e->event.status = -s.error();
                }
                if (p->addrinfo_pending) {
                    p->addrinfo_pending = false;
                    e->event.event = e->event.event == RDMA_CM_EVENT_ADDR_RESOLVED ? RDMA_CM_EVENT_ADDRINFO_RESOLVED
                                                                                   : RDMA_CM_EVENT_ADDRINFO_ERROR;
                }
                break;
            }
            case RDMA_CM_EVENT_ADDR_ERROR:
                if (p->addrinfo_pending) {
                    p->addrinfo_pending = false;
                    e->event.event = RDMA_CM_EVENT_ADDRINFO_ERROR;
                }
                break;
            case RDMA_CM_EVENT_ROUTE_RESOLVED:
                if (Status s = query_route(p); !s.ok()) {
                    absorb(s);
                    e->event.event = RDMA_CM_EVENT_ROUTE_ERROR;
                    e->event.status = -s.error();
                }
                break;
            case RDMA_CM_EVENT_CONNECT_REQUEST:
                if (Status s = process_conn_req(e, resp.id, resp.ece); !s.ok()) {
                    // Our half could not be built: the kernel id is gone, the
                    // peer sees a reject; the listener's event is consumed.
                    absorb(s);
                    complete_event(p);
                    delete e;
                    continue;
                }
                if (is_ud(p->id.qp_type))
                    copy_ud_event(e, resp.param.ud);
                else
                    copy_conn_event(e, resp.param.conn);
                {
                    IdPriv* np = IdPriv::of(e->event.id);
                    if (!is_ud(p->id.qp_type)) {
                        np->initiator_depth = resp.param.conn.initiator_depth;
                        np->responder_resources = resp.param.conn.responder_resources;
                    }
                }
                break;
            case RDMA_CM_EVENT_CONNECT_RESPONSE:
                copy_conn_event(e, resp.param.conn);
                p->remote_ece.vendor_id = resp.ece.vendor_id;
                p->remote_ece.options = resp.ece.attr_mod;
                if (!p->id.qp)
                    break;
                if (Status s = process_conn_resp(p); !s.ok()) {
                    absorb(s);
                    e->event.event = RDMA_CM_EVENT_CONNECT_ERROR;
                    e->event.status = -s.error();
                    // Our side failed: the QP goes to ERR and the peer is
                    // rejected (each leaving its errno should it fail too).
                    absorb(modify_qp_err(&p->id));
                    p->connect_error = true;
                    rdma_reject(&p->id, nullptr, 0);
                } else {
                    e->event.event = RDMA_CM_EVENT_ESTABLISHED;
                }
                break;
            case RDMA_CM_EVENT_ESTABLISHED:
                if (is_ud(p->id.qp_type))
                    copy_ud_event(e, resp.param.ud);
                else
                    copy_conn_event(e, resp.param.conn);
                break;
            case RDMA_CM_EVENT_REJECTED:
                if (!p->connect_error)
                    absorb(modify_qp_err(&p->id));
                copy_conn_event(e, resp.param.conn);
                break;
            case RDMA_CM_EVENT_DISCONNECTED:
                if (p->connect_error) {
                    complete_event(p);
                    delete e;
                    continue;
                }
                copy_conn_event(e, resp.param.conn);
                break;
            case RDMA_CM_EVENT_MULTICAST_JOIN:
            case RDMA_CM_EVENT_MULTICAST_ERROR:
                copy_ud_event(e, resp.param.ud);
                e->event.param.ud.private_data = e->mc->context;
                e->event.param.ud.private_data_len = 0;
                // A join the kernel completed but our QP could not attach
                // to becomes MULTICAST_ERROR with the reference's status,
                // -1 (errno says why), never the verbs call's positive errno.
                if (resp.event == RDMA_CM_EVENT_MULTICAST_JOIN) {
                    if (Status s = process_join(e); !s.ok()) {
                        absorb(s);
                        e->event.event = RDMA_CM_EVENT_MULTICAST_ERROR;
                        e->event.status = -1;
                    }
                }
                break;
            case RDMA_CM_EVENT_USER:
            case RDMA_CM_EVENT_INTERNAL: std::memcpy(&e->event.param.arg, &resp.param, sizeof(uint64_t)); break;
            default:
                if (is_ud(p->id.qp_type) && resp.event == RDMA_CM_EVENT_UNREACHABLE)
                    copy_ud_event(e, resp.param.ud);
                else
                    copy_conn_event(e, resp.param.conn);
                break;
            }
            *event = &e->event;
            return {};
        }
    });
}

RDMACM_EXPORT int rdma_ack_cm_event(rdma_cm_event* event) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!event)
            return Errno{EINVAL};
        Event* e = Event::of(event);
        if (e->mc) {
            IdPriv* p = e->id_priv;
            std::lock_guard lock(p->mut);
            e->mc->events_completed++;
            e->mc->cond.notify_all();
        }
        complete_event(e->id_priv);
        delete e;
        return {};
    });
}

RDMACM_EXPORT int rdma_write_cm_event(rdma_cm_id* id, rdma_cm_event_type event, int status, uint64_t arg) {
    return rdma::entry_minus_one([&]() -> Status {
        // Only user events may be written; INTERNAL belongs to the library.
        if (!id || event != RDMA_CM_EVENT_USER)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        WriteCmEvent cmd{};
        cmd.id = p->handle;
        cmd.event = static_cast<uint32_t>(event);
        cmd.status = static_cast<uint32_t>(status);
        cmd.param.arg = arg;
        return execute(cm_fd(p), kCmdWriteCmEvent, cmd);
    });
}

// No barrier: returns string literals; nothing here can throw.
RDMACM_EXPORT const char* rdma_event_str(rdma_cm_event_type event) {
    switch (event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: return "RDMA_CM_EVENT_ADDR_RESOLVED";
    case RDMA_CM_EVENT_ADDR_ERROR: return "RDMA_CM_EVENT_ADDR_ERROR";
    case RDMA_CM_EVENT_ROUTE_RESOLVED: return "RDMA_CM_EVENT_ROUTE_RESOLVED";
    case RDMA_CM_EVENT_ROUTE_ERROR: return "RDMA_CM_EVENT_ROUTE_ERROR";
    case RDMA_CM_EVENT_CONNECT_REQUEST: return "RDMA_CM_EVENT_CONNECT_REQUEST";
    case RDMA_CM_EVENT_CONNECT_RESPONSE: return "RDMA_CM_EVENT_CONNECT_RESPONSE";
    case RDMA_CM_EVENT_CONNECT_ERROR: return "RDMA_CM_EVENT_CONNECT_ERROR";
    case RDMA_CM_EVENT_UNREACHABLE: return "RDMA_CM_EVENT_UNREACHABLE";
    case RDMA_CM_EVENT_REJECTED: return "RDMA_CM_EVENT_REJECTED";
    case RDMA_CM_EVENT_ESTABLISHED: return "RDMA_CM_EVENT_ESTABLISHED";
    case RDMA_CM_EVENT_DISCONNECTED: return "RDMA_CM_EVENT_DISCONNECTED";
    case RDMA_CM_EVENT_DEVICE_REMOVAL: return "RDMA_CM_EVENT_DEVICE_REMOVAL";
    case RDMA_CM_EVENT_MULTICAST_JOIN: return "RDMA_CM_EVENT_MULTICAST_JOIN";
    case RDMA_CM_EVENT_MULTICAST_ERROR: return "RDMA_CM_EVENT_MULTICAST_ERROR";
    case RDMA_CM_EVENT_ADDR_CHANGE: return "RDMA_CM_EVENT_ADDR_CHANGE";
    case RDMA_CM_EVENT_TIMEWAIT_EXIT: return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
    case RDMA_CM_EVENT_ADDRINFO_RESOLVED: return "RDMA_CM_EVENT_ADDRINFO_RESOLVED";
    case RDMA_CM_EVENT_ADDRINFO_ERROR: return "RDMA_CM_EVENT_ADDRINFO_ERROR";
    case RDMA_CM_EVENT_USER: return "RDMA_CM_EVENT_USER";
    case RDMA_CM_EVENT_INTERNAL: return "RDMA_CM_EVENT_INTERNAL";
    }
    return "UNKNOWN EVENT";
}

// ---------------------------------------------------------------- misc ---

RDMACM_EXPORT int rdma_set_option(rdma_cm_id* id, int level, int optname, void* optval, size_t optlen) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        ucma_abi_set_option cmd{};
        cmd.optval = reinterpret_cast<uintptr_t>(optval);
        cmd.id = p->handle;
        cmd.level = static_cast<uint32_t>(level);
        cmd.optname = static_cast<uint32_t>(optname);
        cmd.optlen = static_cast<uint32_t>(optlen);
        return execute(cm_fd(p), UCMA_CMD_SET_OPTION, cmd);
    });
}

RDMACM_EXPORT int rdma_migrate_id(rdma_cm_id* id, rdma_event_channel* channel) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id)
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        rdma_event_channel* sync_channel = nullptr;
        if (!channel) {
            sync_channel = rdma_create_event_channel();
            if (!sync_channel)
                return last_errno();
            channel = sync_channel;
        }
        ucma_abi_migrate_resp resp{};
        ucma_abi_migrate_id cmd{};
        cmd.response = reinterpret_cast<uintptr_t>(&resp);
        cmd.id = p->handle;
        // Written to the new channel, naming the channel the id lives on now.
        cmd.fd = static_cast<uint32_t>(id->channel->fd);
        if (Status s = execute(channel->fd, UCMA_CMD_MIGRATE_ID, cmd, sizeof(resp)); !s.ok()) {
            rdma_destroy_event_channel(sync_channel);
            return s;
        }
        if (p->sync) {
            if (id->event) {
                rdma_ack_cm_event(id->event);
                id->event = nullptr;
            }
            rdma_destroy_event_channel(id->channel);
        }
        std::unique_lock lock(p->mut);
        p->sync = sync_channel != nullptr;
        id->channel = channel;
        p->cond.wait(lock, [&] { return p->events_completed >= resp.events_reported; });
        return {};
    });
}

namespace {
__be16 port_of(const sockaddr* a) noexcept {
    switch (a->sa_family) {
    case AF_INET: return reinterpret_cast<const sockaddr_in*>(a)->sin_port;
    case AF_INET6: return reinterpret_cast<const sockaddr_in6*>(a)->sin6_port;
    case AF_IB:
        return htobe16(
            static_cast<uint16_t>(be64toh(reinterpret_cast<const sockaddr_ib*>(a)->sib_sid) & RDMA_IB_IP_PORT_MASK));
    default: return 0;
    }
}
}  // namespace

// No barrier: reads the id's address (port_of is noexcept).
RDMACM_EXPORT __be16 rdma_get_src_port(rdma_cm_id* id) { return port_of(&id->route.addr.src_addr); }

// No barrier: reads the id's address (port_of is noexcept).
RDMACM_EXPORT __be16 rdma_get_dst_port(rdma_cm_id* id) { return port_of(&id->route.addr.dst_addr); }

RDMACM_EXPORT ibv_context** rdma_get_devices(int* num_devices) {
    return rdma::entry_null([&]() -> Result<ibv_context**> {
        if (num_devices)
            *num_devices = 0;
        if (Status s = rdma::cm::init(); !s.ok())
            return Errno{s.error()};
        std::lock_guard lock(g_mut);
        size_t n = g_devices->size();
        auto** list = static_cast<ibv_context**>(std::calloc(n + 1, sizeof(ibv_context*)));
        if (!list)
            return Errno{ENOMEM};
        size_t k = 0;
        // A device that cannot be opened is left out.
        for (auto& d : *g_devices) {
            Status s = open_device(d);
            if (s.ok())
                list[k++] = d.verbs;
            else
                absorb(s);
        }
        if (num_devices)
            *num_devices = static_cast<int>(k);
        return list;
    });
}

// No barrier: free() cannot throw.
RDMACM_EXPORT void rdma_free_devices(ibv_context** list) { std::free(list); }

// --------------------------------------------------------- endpoints ---

RDMACM_EXPORT int rdma_create_ep(rdma_cm_id** id, rdma_addrinfo* res, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
    return rdma::entry_minus_one([&]() -> Status {
        if (!id || !res)
            return Errno{EINVAL};
        rdma_cm_id* cm_id = nullptr;
        auto ps = static_cast<rdma_port_space>(res->ai_port_space);
        if (Status s = create_id_ps(nullptr, &cm_id, nullptr, ps, static_cast<ibv_qp_type>(res->ai_qp_type)); !s.ok())
            return s;
        IdPriv* p = IdPriv::of(cm_id);
        // A failure after the id exists: the id goes, the failure stays.
        auto cleanup = [&](Status s) {
            rdma_destroy_id(cm_id);
            return s;
        };
        if (res->ai_flags & RAI_PASSIVE) {
            if (rdma_bind_addr(cm_id, res->ai_src_addr))
                return cleanup(last_errno());
            if (qp_init_attr) {
                p->qp_init_attr = static_cast<ibv_qp_init_attr_ex*>(std::calloc(1, sizeof(ibv_qp_init_attr_ex)));
                if (!p->qp_init_attr)
                    return cleanup(Errno{ENOMEM});
                std::memcpy(p->qp_init_attr, qp_init_attr, sizeof(*qp_init_attr));
                p->qp_init_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
                p->qp_init_attr->comp_mask = IBV_QP_INIT_ATTR_PD;
                p->qp_init_attr->pd = pd;
            }
            *id = cm_id;
            return {};
        }
        if (rdma_resolve_addr(cm_id, res->ai_src_len ? res->ai_src_addr : nullptr, res->ai_dst_addr, 2000))
            return cleanup(last_errno());
        if (res->ai_route_len && res->ai_route) {
            if (rdma_set_option(cm_id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, res->ai_route, res->ai_route_len))
                return cleanup(last_errno());
        }
        if (rdma_resolve_route(cm_id, 2000))
            return cleanup(last_errno());
        if (res->ai_connect_len && res->ai_connect) {
            p->connect = std::malloc(res->ai_connect_len);
            if (!p->connect)
                return cleanup(Errno{ENOMEM});
            std::memcpy(p->connect, res->ai_connect, res->ai_connect_len);
            p->connect_len = res->ai_connect_len;
        }
        if (qp_init_attr) {
            // The endpoint's transport comes from the address info.
            qp_init_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
            if (rdma_create_qp(cm_id, pd, qp_init_attr))
                return cleanup(last_errno());
        }
        *id = cm_id;
        return {};
    });
}

RDMACM_EXPORT void rdma_destroy_ep(rdma_cm_id* id) {
    rdma::entry_void([&] {
        if (!id)
            return;
        if (id->qp)
            rdma_destroy_qp(id);
        if (id->srq)
            rdma_destroy_srq(id);
        rdma_destroy_id(id);
    });
}

// ------------------------------------------------ asynchronous addrinfo ---

RDMACM_EXPORT int rdma_resolve_addrinfo(rdma_cm_id* id, const char* node, const char* service,
                                        const rdma_addrinfo* hints) {
    // Result<int>: a failed rdma_getaddrinfo is passed on as it is (below).
    return rdma::entry_minus_one([&]() -> Result<int> {
        if (!id || (!node && !service))
            return Errno{EINVAL};
        IdPriv* p = IdPriv::of(id);
        int flags = hints ? hints->ai_flags : 0;
        if ((flags & RAI_SA) && (flags & RAI_DNS))
            return Errno{EOPNOTSUPP};
        if (flags & RAI_SA) {
            // IB service resolution through the SA, done by the kernel (6.17+).
            if (node)
                return Errno{EOPNOTSUPP};
            struct {
                uint32_t cmd;
                uint16_t in;
                uint16_t out;
                uint32_t id;
                uint32_t reserved;
                uint64_t service_id;
                uint8_t service_name[64];
                uint32_t flags;
                uint32_t reserved2;
            } cmd{};
            cmd.id = p->handle;
            char* end = nullptr;
            errno = 0;
            unsigned long long sid = std::strtoull(service, &end, 0);
            if (!errno && end && *end == '\0') {
                cmd.service_id = htobe64(sid);
                cmd.flags = 1;
            } else {
                std::strncpy(reinterpret_cast<char*>(cmd.service_name), service, sizeof(cmd.service_name) - 1);
                cmd.flags = 2;
            }
            Status s = execute(cm_fd(p), kCmdResolveIbService, cmd);
            if (s.ok())
                s = complete(p);
            if (!s.ok())
                return Errno{s.error()};
            return 0;
        }
        // DNS (the default): name lookup here, then address resolution of the
        // first answer; its outcome is reported as ADDRINFO_RESOLVED/ERROR.
        rdma_addrinfo h{};
        if (hints)
            h = *hints;
        h.ai_flags &= ~(RAI_SA | RAI_DNS);
        h.ai_port_space = id->ps;
        rdma_addrinfo* res = nullptr;
        // Its failure is ours with the same errno, including a failed name
        // lookup (an EAI_* code), where errno is whatever getaddrinfo(3)
        // left, possibly 0: that -1 goes out untouched.
        if (rdma_getaddrinfo(node, service, &h, &res))
            return -1;
        if (!res->ai_dst_addr) {
            rdma_freeaddrinfo(res);
            return Errno{EINVAL};
        }
        if (p->resolved)
            rdma_freeaddrinfo(p->resolved);
        p->resolved = res;
        p->addrinfo_pending = true;
        if (rdma_resolve_addr(id, res->ai_src_len ? res->ai_src_addr : nullptr, res->ai_dst_addr, 2000)) {
            Errno err = last_errno();
            p->addrinfo_pending = false;
            return err;
        }
        return 0;
    });
}

// No barrier: hands over a pointer; nothing here can throw. Its failures
// are set here, the C API's -1 and errno.
RDMACM_EXPORT int rdma_query_addrinfo(rdma_cm_id* id, rdma_addrinfo** info) {
    if (!id || !info) {
        errno = EINVAL;
        return -1;
    }
    IdPriv* p = IdPriv::of(id);
    if (!p->resolved) {
        errno = ENOENT;
        return -1;
    }
    *info = p->resolved;
    p->resolved = nullptr;
    return 0;
}
