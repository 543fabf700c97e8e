// The private interface between libibverbs and its provider plugins.
//
// This is ours, not upstream's: C++, versioned as a whole by the
// IBVERBS_PRIVATE_CXX_<N> node and by the plugin file suffix
// (lib<name>-rdmav<N>.so), so a plugin built for another revision is
// refused at dlopen time instead of misbehaving.
#pragma once

#include "libibverbs/cmd_ioctl.h"
#include "libibverbs/cmd_write.h"

#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>
#include <sys/types.h>
#include <time.h>

#define RDMA_EXPORT __attribute__((visibility("default")))
// Bind an exported C function to a version node as its default version;
// needed where an older version of the same name also exists.
#define RDMA_DEFAULT_VERSION(name, node) __asm__(".symver " #name "," #name "@@@" #node)

namespace rdma::verbs {

// What discovery learned about one uverbs device before any provider saw it.
struct SysfsDevice {
    std::string ibdev_name;  // "rxe0"
    std::string sysfs_name;  // "uverbs0"
    std::string sysfs_path;  // <sysfs>/class/infiniband_verbs/uverbs0
    std::string ibdev_path;  // <sysfs>/class/infiniband/rxe0
    std::string modalias;  // device/modalias, may be empty
    uint32_t ibdev_index = UINT32_MAX;  // kernel device index, if known
    uint32_t driver_id = 0;  // RDMA_DRIVER_*, 0 (unknown) without netlink
    uint64_t node_guid = 0;  // host order
    bool have_node_guid = false;
    int abi_ver = 0;
    dev_t cdev = 0;
    struct timespec time_created = {};
};

enum class MatchKind : uint8_t { Sentinel, DriverId, Modalias, Pci };

struct MatchEntry {
    MatchKind kind;
    uint32_t driver_id;  // DriverId
    const char* modalias;  // Modalias (fnmatch pattern)
    uint16_t vendor, device;  // Pci
    const void* driver_data;
};

constexpr MatchEntry match_driver_id(uint32_t id) { return {MatchKind::DriverId, id, nullptr, 0, 0, nullptr}; }
constexpr MatchEntry match_modalias(const char* pattern) { return {MatchKind::Modalias, 0, pattern, 0, 0, nullptr}; }
constexpr MatchEntry match_pci(uint16_t v, uint16_t d, const void* data = nullptr) {
    return {MatchKind::Pci, 0, nullptr, v, d, data};
}

class Context;
class Device;

// Provider object prefixes. A provider's own object struct begins with one
// of these (standard layout), so libibverbs and the provider agree on the
// public part and on the few library-private fields after it.
// A counters object (ibv_create_counters): the public part, then the
// kernel handle flow rules and reads name.
struct VerbsCounters {
    ibv_counters counters;
    uint32_t handle;
};

struct VerbsMr {
    ibv_mr mr;
    int access;
    // ibv_reg_mr kept the range from fork (ibv_dontfork_range): the
    // deregistration gives it back. Not for ODP, device-memory or
    // imported MRs, which pin nothing.
    bool fork_pinned;
};

// ibv_cq_ex starts with the same fields as ibv_cq, so one prefix serves
// both; ibv_cq_ex_to_cq() in verbs.h is a plain cast.
struct VerbsCq {
    ibv_cq_ex cq_ex;
    ibv_cq* cq() { return reinterpret_cast<ibv_cq*>(&cq_ex); }
};

struct VerbsQp {
    ibv_qp_ex qp_ex;  // qp_ex.qp_base is the ibv_qp applications see
    bool has_qp_ex;  // created with send ops: ibv_qp_to_qp_ex() answers
    ibv_qp* qp() { return &qp_ex.qp_base; }
};

struct VerbsSrq {
    ibv_srq srq;
    ibv_srq_type srq_type;
    uint32_t srq_num;
};

// An XRC domain: the public part, and the kernel's handle for it.
struct VerbsXrcd {
    ibv_xrcd xrcd;
    uint32_t handle;
};
inline VerbsXrcd* to_vxrcd(ibv_xrcd* x) { return reinterpret_cast<VerbsXrcd*>(x); }

// The legacy POST_SEND command with no work requests, prepared once per QP
// so that ringing it is a single write(2): the doorbell of software
// providers whose kernel reads the shared send queue (rxe). The response
// (the kernel always writes bad_wr) lands in this object.
class PreparedDoorbell {
public:
    void prepare(int cmd_fd, uint32_t qp_handle) {
        fd_ = cmd_fd;
        ib_uverbs_cmd_hdr hdr{};
        hdr.command = IB_USER_VERBS_CMD_POST_SEND;
        hdr.in_words = static_cast<uint16_t>(sizeof(msg_) / 4);
        hdr.out_words = static_cast<uint16_t>(sizeof(resp_) / 4);
        ib_uverbs_post_send cmd{};
        cmd.response = reinterpret_cast<uintptr_t>(&resp_);
        cmd.qp_handle = qp_handle;
        cmd.wqe_size = sizeof(ibv_send_wr);
        __builtin_memcpy(msg_, &hdr, sizeof(hdr));
        __builtin_memcpy(msg_ + sizeof(hdr), &cmd, sizeof(cmd));
    }
    // 0 or the errno of the write.
    int ring() {
        ssize_t n = ::write(fd_, msg_, sizeof(msg_));
        return n == static_cast<ssize_t>(sizeof(msg_)) ? 0 : (n < 0 ? errno : EIO);
    }

private:
    alignas(8) unsigned char msg_[sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_post_send)] = {};
    ib_uverbs_post_send_resp resp_{};
    int fd_ = -1;
};

// Driver-specific command and response data (the kernel's "udata").
struct Udata {
    const void* in = nullptr;
    size_t in_len = 0;
    void* out = nullptr;
    size_t out_len = 0;
};

// A provider plugin registers one of these from a static constructor.
struct Provider {
    const char* name;
    int min_abi;
    int max_abi;
    std::span<const MatchEntry> match_table;
    // Called for every matched device; returns a new Device or nullptr.
    Device* (*alloc_device)(const SysfsDevice& sysfs, const MatchEntry* match);
};

RDMA_EXPORT void register_provider(const Provider& provider);

// One RDMA device known to the library. The public struct ibv_device is
// embedded; applications only ever see a pointer to it.
class RDMA_EXPORT Device {
public:
    Device(const Provider& provider, const SysfsDevice& sysfs);
    virtual ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    // Open a context on an already opened command fd (ownership of cmd_fd
    // passes to the returned context; on failure, errno is set and the
    // caller closes the fd).
    virtual Context* open_context(int cmd_fd, void* private_data) = 0;
    // A context over a command fd that another context (maybe of another
    // process) set up: ibv_import_device. Same ownership rules. Default:
    // not supported (EOPNOTSUPP), as for providers without object sharing.
    virtual Context* import_context(int cmd_fd);

    ibv_device* ibv() { return &wrap_.dev; }
    static Device* from(ibv_device* d) { return reinterpret_cast<Wrap*>(d)->self; }

    const Provider& provider() const { return provider_; }
    const SysfsDevice& sysfs() const { return sysfs_; }
    void set_sysfs(const SysfsDevice& s) { sysfs_ = s; }

    void get() { refs_.fetch_add(1, std::memory_order_relaxed); }
    bool put() { return refs_.fetch_sub(1, std::memory_order_acq_rel) == 1; }

private:
    struct Wrap {
        ibv_device dev;  // must stay first
        Device* self;
    } wrap_{};
    const Provider& provider_;
    SysfsDevice sysfs_;
    std::atomic<int> refs_{1};
};

// An open device context. verbs_context (and inside it ibv_context) is
// embedded; every op libibverbs dispatches is a virtual here, so a provider
// overrides only what it supports. The defaults answer EOPNOTSUPP, except
// those with a generic implementation: query_port (the kernel command),
// attach/detach_mcast (the kernel commands), query_qp_data_in_order (0) and
// async_event (nothing to do).
// Data-path ops (post_send, poll_cq, ...) are plain C function pointers the
// provider stores in ibv()->ops directly: no virtual call on the fast path.
class RDMA_EXPORT Context {
public:
    Context(Device& device, int cmd_fd);
    virtual ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    ibv_context* ibv() { return &wrap_.vctx.context; }
    verbs_context* vctx() { return &wrap_.vctx; }
    Device& device() { return device_; }
    int cmd_fd() const { return wrap_.vctx.context.cmd_fd; }
    // The kernel refuses an ioctl whose header names another driver.
    uint32_t driver_id() const { return driver_id_; }
    uint64_t core_support() const { return core_support_; }
    static Context* from(ibv_context* c);
    // Where this context's write-ABI commands go (see cmd_write.h).
    CmdChannel cmd_channel() { return CmdChannel{cmd_fd(), driver_id_, &no_invoke_write_}; }

    // Run the kernel's GET_CONTEXT (ioctl, write fallback) with optional
    // driver data; fills async_fd and num_comp_vectors.
    int init_kernel_context(const void* drv_in, size_t in_len, void* drv_out, size_t out_len);
    // The same for a context over a command fd whose user context exists
    // already (ibv_import_device): QUERY_CONTEXT, the driver's answer in
    // its attribute drv_attr, and an async fd of this context's own.
    int import_kernel_context(uint16_t drv_attr, void* drv_out, size_t out_len);

private:
    int take_kernel_context(uint32_t num_comp_vectors, uint64_t core_support);

public:
    virtual int query_device_ex(const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr, size_t attr_size);
    virtual int query_port(uint8_t port_num, ibv_port_attr* attr, size_t attr_size);

    // Object control operations. Creators return nullptr with errno set;
    // the others return 0 or a positive errno. Defaults: EOPNOTSUPP
    // (see the class comment for the exceptions).
    // libibverbs fills the public fields common to every provider (context,
    // pd, user context pointers, mutex/cond, event counters) in the cmd_*
    // helpers below, so a provider only allocates, calls the cmd_* helper
    // with its driver data, and sets up its queues.
    virtual ibv_pd* alloc_pd();
    virtual int dealloc_pd(ibv_pd* pd);
    virtual ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access);
    virtual ibv_mr* reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access);
    virtual int rereg_mr(VerbsMr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access);
    virtual int dereg_mr(VerbsMr* mr);
    virtual ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type);
    virtual int dealloc_mw(ibv_mw* mw);
    virtual ibv_cq* create_cq(int cqe, ibv_comp_channel* channel, int comp_vector);
    virtual ibv_cq_ex* create_cq_ex(ibv_cq_init_attr_ex* attr);
    virtual int resize_cq(ibv_cq* cq, int cqe);
    virtual int destroy_cq(ibv_cq* cq);
    virtual ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
    virtual ibv_qp* create_qp_ex(ibv_qp_init_attr_ex* attr);
    virtual int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr);
    virtual int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask);
    virtual int destroy_qp(ibv_qp* qp);
    virtual int query_ece(ibv_qp* qp, ibv_ece* ece) { return EOPNOTSUPP; }
    virtual int set_ece(ibv_qp* qp, ibv_ece* ece) { return EOPNOTSUPP; }
    virtual int query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags) { return 0; }
    virtual ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr);
    // XRC: domains, SRQs of a type (ibv_create_srq_ex), the SRQ number a
    // sender names, opening a domain's target QP by number. Defaults:
    // EOPNOTSUPP, as verbs.h answers for a provider without them.
    virtual ibv_xrcd* open_xrcd(ibv_xrcd_init_attr* attr);
    virtual int close_xrcd(ibv_xrcd* xrcd) { return EOPNOTSUPP; }
    virtual ibv_srq* create_srq_ex(ibv_srq_init_attr_ex* attr);
    virtual int get_srq_num(ibv_srq* srq, uint32_t* srq_num) { return EOPNOTSUPP; }
    virtual ibv_qp* open_qp(ibv_qp_open_attr* attr);
    // Receive steering: WQs, their indirection tables (RSS), flow rules.
    // Defaults: EOPNOTSUPP, as verbs.h answers without them.
    virtual ibv_wq* create_wq(ibv_wq_init_attr* attr);
    virtual int modify_wq(ibv_wq* wq, ibv_wq_attr* attr) { return EOPNOTSUPP; }
    virtual int destroy_wq(ibv_wq* wq) { return EOPNOTSUPP; }
    virtual ibv_rwq_ind_table* create_rwq_ind_table(ibv_rwq_ind_table_init_attr* attr);
    virtual int destroy_rwq_ind_table(ibv_rwq_ind_table* table) { return EOPNOTSUPP; }
    virtual ibv_flow* create_flow(ibv_qp* qp, ibv_flow_attr* attr);
    virtual int destroy_flow(ibv_flow* flow) { return EOPNOTSUPP; }
    virtual int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask);
    virtual int query_srq(ibv_srq* srq, ibv_srq_attr* attr);
    virtual int destroy_srq(ibv_srq* srq);
    virtual ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr);
    virtual int destroy_ah(ibv_ah* ah);
    virtual int attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);
    virtual int detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);
    // Called for every async event before it reaches the application.
    virtual void async_event(ibv_async_event* event) {}
    // Called by ibv_get_cq_event for every completion event read (hardware
    // providers count them for their arm doorbells). Must not throw.
    virtual void cq_event(ibv_cq* cq) {}

    // Objects another context created, found by their kernel handle
    // (ibv_import_pd/mr/dm; nullptr + errno, EOPNOTSUPP by default), and
    // their release without destroying them.
    virtual ibv_pd* import_pd(uint32_t pd_handle);
    virtual void unimport_pd(ibv_pd* pd) {}
    virtual ibv_mr* import_mr(ibv_pd* pd, uint32_t mr_handle);
    virtual void unimport_mr(ibv_mr* mr) {}
    virtual ibv_dm* import_dm(uint32_t dm_handle);
    virtual void unimport_dm(ibv_dm* dm) {}

    // IBVERBS_1.15 to 1.18. Creators: nullptr + errno; dm_export_dmabuf_fd:
    // an fd or -1 + errno; the others 0 or a positive errno. Defaults:
    // EOPNOTSUPP. reg_mr_ex gets the attributes after the library's own
    // checks (buffers resolved to an address or a dma-buf).
    virtual int query_port_speed(uint32_t port_num, uint64_t* speed) { return EOPNOTSUPP; }
    virtual ibv_mr* reg_mr_ex(ibv_pd* pd, ibv_mr_init_attr* attr);
    virtual ibv_dmah* alloc_dmah(ibv_dmah_init_attr* attr);
    virtual int dealloc_dmah(ibv_dmah* dmah) { return EOPNOTSUPP; }
    virtual int dm_export_dmabuf_fd(ibv_dm* dm);
    // A buffer of at least size bytes for MRs of pd; sets *buf (an ibv_buf
    // the provider owns, see struct ibv_buf below) and returns its address.
    virtual void* alloc_buf(ibv_pd* pd, size_t size, ibv_buf** buf);
    virtual void free_buf(ibv_buf* buf) {}
    virtual int query_comp_cntr_caps(ibv_comp_cntr_caps* caps, size_t caps_size) { return EOPNOTSUPP; }
    virtual ibv_comp_cntr* create_comp_cntr(ibv_comp_cntr_init_attr* attr);
    virtual int destroy_comp_cntr(ibv_comp_cntr* cntr) { return EOPNOTSUPP; }
    // One kernel method sets or adds to either value of a counter: the
    // completion count or the error count.
    enum class CntrEntry : uint8_t { Comp, Err };
    enum class CntrOp : uint8_t { Set, Inc };
    virtual int modify_comp_cntr(ibv_comp_cntr* cntr, CntrEntry entry, CntrOp op, uint64_t value) { return EOPNOTSUPP; }
    virtual int read_comp_cntr(ibv_comp_cntr* cntr, CntrEntry entry, uint64_t* value) { return EOPNOTSUPP; }
    virtual int qp_attach_comp_cntr(ibv_qp* qp, ibv_comp_cntr* cntr, ibv_qp_attach_comp_cntr_attr* attr) {
        return EOPNOTSUPP;
    }

    // Kernel commands, for providers (0 or a positive errno).
    int cmd_alloc_pd(ibv_pd* pd, const Udata& u = {});
    int cmd_dealloc_pd(ibv_pd* pd);
    int cmd_reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access, VerbsMr* mr,
                   const Udata& u = {});
    int cmd_rereg_mr(VerbsMr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access, const Udata& u = {});
    int cmd_dereg_mr(VerbsMr* mr);
    // An MR of this command fd's user context by its handle (ibv_import_mr):
    // keys and length from QUERY_MR; its address stays null, as the
    // reference leaves it.
    int cmd_query_mr(ibv_pd* pd, uint32_t mr_handle, VerbsMr* mr);
    // Device memory: DM_ALLOC with the driver attributes the provider put
    // in `io` (made for UVERBS_OBJECT_DM / UVERBS_METHOD_DM_ALLOC; the
    // library adds the handle, length and alignment and fills dm's
    // context and handle), DM_FREE, and DM_MR_REG (a zero-based MR over
    // [offset, offset + length) of the DM; its address stays null).
    int cmd_alloc_dm(const ibv_alloc_dm_attr* attr, ibv_dm* dm, Ioctl<8>& io);
    int cmd_free_dm(ibv_dm* dm);
    int cmd_reg_dm_mr(ibv_pd* pd, ibv_dm* dm, uint64_t offset, size_t length, unsigned int access, VerbsMr* mr);
    // ADVISE_MR (ibv_advise_mr through a provider's verbs_context slot):
    // prefetch the pages of on-demand-paging MRs that the SGEs name.
    int cmd_advise_mr(ibv_pd* pd, uint32_t advice, uint32_t flags, const ibv_sge* sg_list, uint32_t num_sge);
    int cmd_alloc_mw(ibv_pd* pd, ibv_mw_type type, ibv_mw* mw, const Udata& u = {});
    int cmd_dealloc_mw(ibv_mw* mw);
    // flags: IB_UVERBS_CQ_FLAGS_* for the kernel (0 for none; with flags
    // the write fallback is the extended command).
    int cmd_create_cq(int cqe, ibv_comp_channel* channel, int comp_vector, VerbsCq* cq, const Udata& u = {},
                      uint32_t flags = 0);
    int cmd_resize_cq(ibv_cq* cq, int cqe, const Udata& u = {});
    int cmd_req_notify_cq(ibv_cq* cq, int solicited_only);
    int cmd_destroy_cq(ibv_cq* cq);  // waits until the app acked every event
    // attr->cap is updated with what the kernel granted.
    int cmd_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr, VerbsQp* qp, const Udata& u = {});
    int cmd_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr);
    int cmd_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask);
    int cmd_destroy_qp(ibv_qp* qp);  // waits until the app acked every event
    int cmd_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr, VerbsSrq* srq, const Udata& u = {});
    // Any SRQ type (basic, XRC with its domain and CQ); attr->attr gets
    // what the kernel granted, srq->srq_num the SRQ number.
    int cmd_create_srq_ex(ibv_srq_init_attr_ex* attr, VerbsSrq* srq, const Udata& u = {});
    // The extended creation: a PD, or for an XRC target QP its domain;
    // attr->cap gets what the kernel granted.
    int cmd_create_qp_ex(ibv_qp_init_attr_ex* attr, VerbsQp* qp, const Udata& u = {});
    // OPEN_QP: a handle in this context on a domain's existing target QP.
    int cmd_open_qp(const ibv_qp_open_attr* attr, VerbsQp* qp, const Udata& u = {});
    // attr->fd: -1 for a domain of this context only, else a file whose
    // inode names a domain processes share (oflags O_CREAT/O_EXCL).
    int cmd_open_xrcd(const ibv_xrcd_init_attr* attr, VerbsXrcd* xrcd, const Udata& u = {});
    int cmd_close_xrcd(VerbsXrcd* xrcd);
    // WQ_CREATE (EX_CREATE_WQ fallback): wq's public fields filled, attr's
    // max_wr/max_sge updated with what the kernel granted.
    int cmd_create_wq(ibv_wq_init_attr* attr, ibv_wq* wq, const Udata& u = {});
    int cmd_modify_wq(ibv_wq* wq, const ibv_wq_attr* attr, const Udata& u = {});
    // EX_MODIFY_CQ (ibv_modify_cq: event moderation); a mask bit beyond
    // the known ones is EINVAL before the kernel is asked.
    int cmd_modify_cq(ibv_cq* cq, const ibv_modify_cq_attr* attr);
    int cmd_destroy_wq(ibv_wq* wq);  // waits until the app acked every event
    int cmd_create_rwq_ind_table(const ibv_rwq_ind_table_init_attr* attr, ibv_rwq_ind_table* table);
    int cmd_destroy_rwq_ind_table(ibv_rwq_ind_table* table);
    // CREATE_FLOW with the specs in the kernel's layout (flow_attr_to_kern).
    int cmd_create_flow(ibv_qp* qp, const ibv_flow_attr* attr, ibv_flow* flow, const Udata& u = {});
    // Counters: COUNTERS_CREATE/DESTROY, and COUNTERS_READ of n values.
    int cmd_create_counters(VerbsCounters* c);
    int cmd_destroy_counters(VerbsCounters* c);
    int cmd_read_counters(VerbsCounters* c, uint64_t* values, uint32_t n, uint32_t flags);
    int cmd_destroy_flow(ibv_flow* flow);
    int cmd_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask, const Udata& u = {});
    int cmd_query_srq(ibv_srq* srq, ibv_srq_attr* attr);
    int cmd_destroy_srq(ibv_srq* srq);
    int cmd_create_ah(ibv_pd* pd, ibv_ah_attr* attr, ibv_ah* ah, const Udata& u = {});
    int cmd_destroy_ah(ibv_ah* ah);
    int cmd_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);
    int cmd_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);

    // Shared implementations providers call from their overrides.
    // u.out/out_len: the driver's part of the extended response (sent only
    // when attr_size asks for more than ibv_device_attr).
    int cmd_query_device_ex(const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr, size_t attr_size,
                            uint64_t* raw_fw_ver, const Udata& u = {});
    int cmd_query_port(uint8_t port_num, ibv_port_attr* attr, size_t attr_size);

private:
    struct Wrap {
        verbs_context vctx;  // must stay first; ibv_context is its last member
        Context* self;
    } wrap_{};
    Device& device_;
    uint32_t driver_id_ = 0;
    uint64_t core_support_ = 0;  // IB_UVERBS_CORE_SUPPORT_* from GET_CONTEXT
    // The kernel showed it lacks INVOKE_WRITE / these ioctl methods
    // (IoctlMethod bits): their commands go straight to the fallback.
    std::atomic<bool> no_invoke_write_{false};
    std::atomic<uint32_t> no_ioctl_{0};

public:
    // Native ioctl methods whose absence is remembered per context.
    enum IoctlMethod : uint32_t {
        kCqCreate = 1u << 0,
        kCqDestroy = 1u << 1,
        kQpCreate = 1u << 2,
        kQpDestroy = 1u << 3,
        kSrqCreate = 1u << 4,
        kSrqDestroy = 1u << 5,
        kPdDestroy = 1u << 6,
        kMrDestroy = 1u << 7,
        kXrcdDestroy = 1u << 8,
        kWqCreate = 1u << 9,
        kWqDestroy = 1u << 10,
        kIndTblDestroy = 1u << 11,
        kFlowDestroy = 1u << 12,
    };
    bool ioctl_missing(IoctlMethod m) const { return no_ioctl_.load(std::memory_order_relaxed) & m; }
    // After an ioctl: true (and remembered) when the kernel lacks the method.
    bool note_ioctl_result(IoctlMethod m, int err) {
        if (err != ENOTTY && err != EPROTONOSUPPORT)
            return false;
        no_ioctl_.fetch_or(m, std::memory_order_relaxed);
        return true;
    }

private:
    void install_trampolines();
};

// The life cycle every provider object shares. create_object: a
// value-initialised T allocated without throwing, handed to `create` (0 or a
// positive errno); nullptr with errno set when either fails, nothing left.
template <class T, class Create>
T* create_object(Create&& create) {
    std::unique_ptr<T> obj(new (std::nothrow) T{});
    if (!obj) {
        errno = ENOMEM;
        return nullptr;
    }
    if (int e = create(*obj)) {
        errno = e;
        return nullptr;
    }
    return obj.release();
}

// destroy_object: `destroy` (0 or a positive errno) first; the object is
// freed only once the kernel let it go (EBUSY leaves it valid).
template <class T, class Destroy>
int destroy_object(T* obj, Destroy&& destroy) {
    if (int e = destroy(*obj))
        return e;
    delete obj;
    return 0;
}

// A flow rule as the kernel reads it (ib_uverbs_flow_attr and its specs)
// from the application's ibv_flow_attr and the specs after it: 0, EINVAL
// (a spec of unknown type or too small for its type), or EOPNOTSUPP (specs naming flow actions or counters,
// which this library has no objects for yet).
int flow_attr_to_kern(const ibv_flow_attr& attr, std::vector<uint8_t>& out);

// For providers whose QPs go through the legacy CREATE_QP command: what
// they accept of ibv_create_qp_ex's attributes (a PD, else EINVAL; no
// creation flags and nothing beyond them, else EOPNOTSUPP; ibv_wr_* send
// ops within `send_ops`, else EOPNOTSUPP), 0 when all of it fits.
inline int check_legacy_qp_attr(const ibv_qp_init_attr_ex& a, uint64_t send_ops) {
    constexpr uint32_t kKnown = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    if (!(a.comp_mask & IBV_QP_INIT_ATTR_PD) || !a.pd)
        return EINVAL;
    if ((a.comp_mask & ~kKnown) || ((a.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a.create_flags))
        return EOPNOTSUPP;
    if ((a.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && (a.send_ops_flags & ~send_ops))
        return EOPNOTSUPP;
    return 0;
}

// The legacy attributes of an extended request (check_legacy_qp_attr
// passed); the caller copies .cap back after the command.
inline ibv_qp_init_attr legacy_qp_attr(const ibv_qp_init_attr_ex& a) {
    ibv_qp_init_attr l{};
    l.qp_context = a.qp_context;
    l.send_cq = a.send_cq;
    l.recv_cq = a.recv_cq;
    l.srq = a.srq;
    l.cap = a.cap;
    l.qp_type = a.qp_type;
    l.sq_sig_all = a.sq_sig_all;
    return l;
}

// ibv_bind_mw for providers that bind windows with a work request (the
// inline wrapper checked the window's type, the MR and its PD): a type 1
// window bound by a BIND_MW work request posted through `post_send`, with
// the window's next key, which it carries once posted (a failed bind
// completes with an error and the application keeps the old key). Zero-
// based windows only through the work request interfaces: EINVAL.
template <class PostSend>
int bind_mw_through(ibv_qp* qp, ibv_mw* mw, const ibv_mw_bind* bind, PostSend&& post_send) {
    if (bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
        return EINVAL;
    ibv_send_wr wr{};
    wr.wr_id = bind->wr_id;
    wr.opcode = IBV_WR_BIND_MW;
    wr.send_flags = bind->send_flags;
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
    wr.bind_mw.bind_info = bind->bind_info;
    ibv_send_wr* bad = nullptr;
    if (int e = post_send(qp, &wr, &bad))
        return e;
    mw->rkey = wr.bind_mw.rkey;
    return 0;
}

// A provider's Device::open_context: a Ctx over cmd_fd set up by `open`
// (0 or a positive errno); on failure nullptr + errno, and cmd_fd is still
// the caller's to close.
template <class Ctx, class Open>
Context* open_provider_context(Device& device, int cmd_fd, Open&& open) {
    auto* ctx = new (std::nothrow) Ctx(device, cmd_fd);
    if (!ctx) {
        errno = ENOMEM;
        return nullptr;
    }
    if (int e = open(*ctx)) {
        ctx->ibv()->cmd_fd = -1;
        delete ctx;
        errno = e;
        return nullptr;
    }
    return ctx;
}

// Keep provider-allocated DMA memory (queue rings, doorbell records) out
// of forked children once ibv_fork_init was called (libibverbs exports).
extern "C" int ibv_dontfork_range(void* base, size_t size);
extern "C" int ibv_dofork_range(void* base, size_t size);

// ibv_open_device with data for the provider's open_context (what a
// direct-verbs open such as mlx5dv_open_device passes); NULL and errno on
// failure.
RDMA_EXPORT ibv_context* open_device_with(ibv_device* device, void* private_data);

// "a.b.c" from the 64-bit firmware version the kernel reports.
RDMA_EXPORT void format_fw_ver(uint64_t raw, char* out, size_t len);

}  // namespace rdma::verbs

// The struct ibv_buf that verbs.h leaves opaque, as libibverbs and the
// providers see it: a provider puts it first in its own buffer object and
// fills it in Context::alloc_buf. Its layout is private to this tree.
struct ibv_buf {
    ibv_pd* pd;
    void* addr;
    size_t size;
    int dmabuf_fd;  // a dma-buf behind the memory, or -1 for plain memory
};
