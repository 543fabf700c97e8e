// The emulated kernel's verbs layer: what ib_uverbs + mlx5_ib do for each
// command, independent of how the command arrived (write or ioctl ABI).
// Every function returns 0 or a negative errno and validates everything
// it is given: handles, sizes, addresses, attribute masks.
#pragma once

#include "sim.h"

#include <infiniband/verbs.h>  // first: it defines RDMA_UAPI_PTR for the uapi headers
#include <rdma/ib_user_verbs.h>
#include <rdma/mlx5-abi.h>

namespace uvsim {

// ---- device / port
// Raw packet QPs and receive steering are offered (an Ethernet port).
bool raw_eth_dev(const Device& d);
void fill_query_device(const Device& d, ib_uverbs_query_device_resp& r);
void fill_query_device_ex(const Device& d, ib_uverbs_ex_query_device_resp& r);
void fill_mlx5_query_device(const Device& d, mlx5_ib_query_device_resp& r);
int fill_query_port(const Device& d, uint32_t port, ib_uverbs_query_port_resp& r);
// The port's GID table (computed once by finish_config: a function of the
// configuration, which never changes after loading).
inline const std::vector<GidEntry>& port_gids(const PortCfg& p) { return p.gids; }

// ---- context
// driver_in/len: mlx5_ib_alloc_ucontext_req(_v2) bytes; fills resp (whole
// struct; the caller copies what fits).
int get_context(Context& c, const void* driver_in, size_t in_len, mlx5_ib_alloc_ucontext_resp& resp);
int make_async_fd(Context& c);  // returns the application's fd or -errno
void drop_async_fd(Context& c, int fd);  // undoes make_async_fd (and closes fd)

// ---- simple objects
// MLX5_IB_OBJECT_UAR: a UAR page and the mmap offset that maps it.
int alloc_uar(Context& c, uint32_t type, uint32_t& handle, uint64_t& mmap_offset, uint32_t& length, uint32_t& page_id);
int destroy_uar(Context& c, uint32_t handle);
// Device memory: MEMIC allocation (DM_ALLOC with mlx5's type, start offset
// and page index), DM_FREE, DM MRs (DM_MR_REG), and mlx5's DM_QUERY.
int alloc_dm(Context& c, uint64_t length, uint32_t log_align, uint64_t type, uint32_t& handle, uint64_t& start_offset,
             uint16_t& page_idx);
int free_dm(Context& c, uint32_t handle);
int reg_dm_mr(Context& c, uint32_t pdh, uint32_t dmh, uint64_t offset, uint64_t length, uint32_t access,
              uint32_t& handle, uint32_t& lkey, uint32_t& rkey);
// The UAR object of this context with that page id (QP/CQ creation), or null.
const Uar* uar_by_page(const Context& c, uint32_t page_id);

int alloc_pd(Context& c, uint32_t& handle, uint32_t& pdn);
int dealloc_pd(Context& c, uint32_t handle);
int reg_mr(Context& c, uint32_t pd, uint64_t start, uint64_t length, uint64_t iova, uint32_t access, uint32_t& handle,
           uint32_t& lkey, uint32_t& rkey);
// REREG_MR; flags as the kernel's IB_MR_REREG_TRANS/_PD/_ACCESS, which have
// the values of IBV_REREG_MR_CHANGE_*. The keys stay (mlx5_ib changes such
// an mkey in place).
int rereg_mr(Context& c, uint32_t handle, uint32_t flags, uint64_t start, uint64_t length, uint64_t iova, uint32_t pdh,
             uint32_t access, uint32_t& lkey, uint32_t& rkey);
int dereg_mr(Context& c, uint32_t handle);
int advise_mr(Context& c, uint32_t pd, uint64_t advice, uint32_t flags, const ibv_sge* sges, size_t n);
// ALLOC_MW / DEALLOC_MW (mlx5 driver data: struct mlx5_ib_alloc_mw).
int alloc_mw(Context& c, uint32_t pd, uint32_t type, const void* drv, size_t drv_len, uint32_t& handle, uint32_t& rkey);
int dealloc_mw(Context& c, uint32_t handle);
int create_comp_channel(Context& c);  // returns fd or -errno
int create_ah(Context& c, uint32_t pd, uint64_t user_handle, const ib_uverbs_ah_attr& attr, uint32_t& handle,
              mlx5_ib_create_ah_resp* drv);
int destroy_ah(Context& c, uint32_t handle);

// ---- XRC domains (OPEN_XRCD / CLOSE_XRCD)
// fd -1: a private domain; else the domain of the file's inode on this
// device, made when oflags has O_CREAT (EAGAIN without, EINVAL when it
// exists and oflags has O_EXCL).
int open_xrcd(Context& c, int fd, uint32_t oflags, uint32_t& handle);
int close_xrcd(Context& c, uint32_t handle);

// ---- CQ
struct CqArgs {
    uint64_t user_handle = 0;
    uint32_t cqe = 0;
    uint32_t comp_vector = 0;
    int32_t comp_channel = -1;  // fd
    uint32_t flags = 0;
    mlx5_ib_create_cq drv{};
    size_t drv_len = 0;
};
int create_cq(Context& c, const CqArgs& a, uint32_t& handle, uint32_t& cqe_out, uint32_t& cqn);
int destroy_cq(Context& c, uint32_t handle, ib_uverbs_destroy_cq_resp& r);
// EX_MODIFY_CQ's moderation (mlx5_ib: a period beyond 0xfff is EINVAL).
int moderate_cq(Context& c, uint32_t handle, uint16_t count, uint16_t period);
int resize_cq(Context& c, uint32_t handle, uint32_t cqe, const mlx5_ib_resize_cq& drv, size_t drv_len,
              uint32_t& cqe_out);

// ---- SRQ
struct SrqArgs {
    uint64_t user_handle = 0;
    uint32_t pd = 0, max_wr = 0, max_sge = 0, limit = 0;
    uint32_t srq_type = 0;  // IBV_SRQT_BASIC or IBV_SRQT_XRC (tag matching: EOPNOTSUPP)
    uint32_t xrcd = 0, cq = 0;  // XRC: the domain and the CQ of its receives
    mlx5_ib_create_srq drv{};
    size_t drv_len = 0;
};
int create_srq(Context& c, const SrqArgs& a, uint32_t& handle, uint32_t& max_wr, uint32_t& max_sge, uint32_t& srqn);
int modify_srq(Context& c, uint32_t handle, uint32_t mask, uint32_t max_wr, uint32_t limit);
int query_srq(Context& c, uint32_t handle, ib_uverbs_query_srq_resp& r);
int destroy_srq(Context& c, uint32_t handle, uint32_t& events);

// ---- QP
struct QpArgs {
    uint64_t user_handle = 0;
    uint32_t pd = 0, send_cq = 0, recv_cq = 0, srq = 0;
    bool has_srq = false;
    // XRC target QPs: the domain (no PD, CQs, SRQ or queues)
    uint32_t xrcd = 0;
    // XRC initiators: no receive CQ (the core leaves it out)
    bool has_recv_cq = true;
    uint32_t max_send_wr = 0, max_recv_wr = 0, max_send_sge = 0, max_recv_sge = 0, max_inline = 0;
    uint8_t sq_sig_all = 0, qp_type = 0;
    uint32_t create_flags = 0;
    mlx5_ib_create_qp drv{};
    size_t drv_len = 0;
    // RSS QPs (raw packet over an RWQ indirection table): the table's handle
    // and mlx5_ib_create_qp_rss, the driver data such a QP carries instead
    bool has_ind_tbl = false;
    uint32_t ind_tbl = 0;
    mlx5_ib_create_qp_rss rss{};
};
struct QpCaps {
    uint32_t qpn, max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline;
};
int create_qp(Context& c, const QpArgs& a, uint32_t& handle, QpCaps& caps, mlx5_ib_create_qp_resp& drv);
int modify_qp(Context& c, const ib_uverbs_modify_qp& m);
int query_qp(Context& c, uint32_t handle, uint32_t mask, ib_uverbs_query_qp_resp& r);
int destroy_qp(Context& c, uint32_t handle, uint32_t& events);
// OPEN_QP: a new handle on the XRC target QP `qpn` of the domain of handle
// `xrcd` (EINVAL when the domain has no such QP or the type is not XRC_RECV).
int open_qp(Context& c, uint32_t xrcd, uint32_t qpn, uint8_t qp_type, uint64_t user_handle, uint32_t& handle);

// ---- receive WQs, RWQ indirection tables, flow rules (steering)
struct WqArgs {
    uint64_t user_handle = 0;
    uint32_t wq_type = 0;  // IB_WQT_RQ only
    uint32_t pd = 0, cq = 0, max_wr = 0, max_sge = 0, create_flags = 0;
    mlx5_ib_create_wq drv{};
    size_t drv_len = 0;
};
int create_wq(Context& c, const WqArgs& a, uint32_t& handle, uint32_t& max_wr, uint32_t& max_sge, uint32_t& wqn);
// attr_mask: IB_WQ_STATE, IB_WQ_CUR_STATE, IB_WQ_FLAGS
int modify_wq(Context& c, const ib_uverbs_ex_modify_wq& m, size_t drv_len, const uint8_t* drv);
int destroy_wq(Context& c, uint32_t handle, uint32_t& events);
int create_rwq_ind_tbl(Context& c, uint32_t log_size, const uint32_t* wq_handles, uint32_t& handle, uint32_t& num);
int destroy_rwq_ind_tbl(Context& c, uint32_t handle);
// attr: the command's ib_uverbs_flow_attr followed by its specs (attr_len
// bytes in all)
int create_flow(Context& c, uint32_t qp, const uint8_t* attr, size_t attr_len, const uint8_t* drv, size_t drv_len,
                uint32_t& handle);
int destroy_flow(Context& c, uint32_t handle);
// Flow counters (COUNTERS_CREATE/DESTROY/READ); bound by a rule's COUNT
// action with mlx5's descriptions.
int create_counters(Context& c, uint32_t& handle);
int destroy_counters(Context& c, uint32_t handle);
int read_counters(Context& c, uint32_t handle, std::vector<uint64_t>& out);

// ---- multicast (UD)
int attach_mcast(Context& c, uint32_t qp, const uint8_t gid[16], uint16_t mlid);
int detach_mcast(Context& c, uint32_t qp, const uint8_t gid[16], uint16_t mlid);

// QPNs attached to a multicast GID anywhere on the simulated host (the
// registry lives in the run directory: mcast/<gid hex>/<qpn hex>).
std::vector<uint32_t> mcast_members(const uint8_t gid[16]);

// The device's clock pages (0: core clock, 1: clock info), mapped
// read-only for the application; MAP_FAILED with err on failure.
void* map_clock_page(int which, void* addr, int flags, int& err);
// Keeps them current: called by the engine on every pass.
void clock_pages_tick();

// Releases everything of a context (close of the file).
void destroy_context(Context& c);

// IB path MTU enum -> bytes
inline uint32_t mtu_bytes(uint8_t mtu) { return mtu >= 1 && mtu <= 5 ? 128u << mtu : 256; }

}  // namespace uvsim
