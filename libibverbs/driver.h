// The private interface between libibverbs and its provider plugins.
//
// This is ours, not upstream's: C++, versioned as a whole by the
// IBVERBS_PRIVATE_CXX_<N> node and by the plugin file suffix
// (lib<name>-rdmav<N>.so), so a plugin built for another revision is
// refused at dlopen time instead of misbehaving.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <sys/types.h>
#include <time.h>

#define RDMA_EXPORT __attribute__((visibility("default")))
// Bind an exported C function to a version node as its default version;
// needed where an older version of the same name also exists.
#define RDMA_DEFAULT_VERSION(name, node) __asm__(".symver " #name "," #name "@@@" #node)

namespace rdma::verbs {

// What discovery learned about one uverbs device before any provider saw it.
struct SysfsDevice {
    std::string ibdev_name;   // "rxe0"
    std::string sysfs_name;   // "uverbs0"
    std::string sysfs_path;   // <sysfs>/class/infiniband_verbs/uverbs0
    std::string ibdev_path;   // <sysfs>/class/infiniband/rxe0
    std::string modalias;     // device/modalias, may be empty
    uint32_t ibdev_index = UINT32_MAX;  // kernel device index, if known
    uint32_t driver_id = 0;   // RDMA_DRIVER_*, 0 (unknown) without netlink
    uint64_t node_guid = 0;   // host order
    bool have_node_guid = false;
    int abi_ver = 0;
    dev_t cdev = 0;
    struct timespec time_created = {};
};

enum class MatchKind : uint8_t { Sentinel, DriverId, Modalias, Pci };

struct MatchEntry {
    MatchKind kind;
    uint32_t driver_id;      // DriverId
    const char* modalias;    // Modalias (fnmatch pattern)
    uint16_t vendor, device; // Pci
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
struct VerbsMr {
    ibv_mr mr;
    int access;
};

// ibv_cq_ex starts with the same fields as ibv_cq, so one prefix serves
// both; ibv_cq_ex_to_cq() in verbs.h is a plain cast.
struct VerbsCq {
    ibv_cq_ex cq_ex;
    ibv_cq* cq() { return reinterpret_cast<ibv_cq*>(&cq_ex); }
};

struct VerbsQp {
    ibv_qp_ex qp_ex;    // qp_ex.qp_base is the ibv_qp applications see
    bool has_qp_ex;     // created with send ops: ibv_qp_to_qp_ex() answers
    ibv_qp* qp() { return &qp_ex.qp_base; }
};

struct VerbsSrq {
    ibv_srq srq;
    ibv_srq_type srq_type;
    uint32_t srq_num;
};

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
// embedded; every op libibverbs dispatches is a virtual here with a default
// that answers EOPNOTSUPP, so a provider overrides only what it supports.
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

    // Run the kernel's GET_CONTEXT (ioctl, write fallback) with optional
    // driver data; fills async_fd and num_comp_vectors.
    int init_kernel_context(const void* drv_in, size_t in_len, void* drv_out, size_t out_len);

    virtual int query_device_ex(const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr, size_t attr_size);
    virtual int query_port(uint8_t port_num, ibv_port_attr* attr, size_t attr_size);

    // Object control operations. Creators return nullptr with errno set;
    // the others return 0 or a positive errno. Defaults: EOPNOTSUPP.
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
    virtual int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask);
    virtual int query_srq(ibv_srq* srq, ibv_srq_attr* attr);
    virtual int destroy_srq(ibv_srq* srq);
    virtual ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr);
    virtual int destroy_ah(ibv_ah* ah);
    virtual int attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);
    virtual int detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);
    // Called for every async event before it reaches the application.
    virtual void async_event(ibv_async_event* event) {}

    // Kernel commands, for providers (0 or a positive errno).
    int cmd_alloc_pd(ibv_pd* pd, const Udata& u = {});
    int cmd_dealloc_pd(ibv_pd* pd);
    int cmd_reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access, VerbsMr* mr,
                   const Udata& u = {});
    int cmd_rereg_mr(VerbsMr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access,
                     const Udata& u = {});
    int cmd_dereg_mr(VerbsMr* mr);
    int cmd_alloc_mw(ibv_pd* pd, ibv_mw_type type, ibv_mw* mw, const Udata& u = {});
    int cmd_dealloc_mw(ibv_mw* mw);
    int cmd_create_cq(int cqe, ibv_comp_channel* channel, int comp_vector, VerbsCq* cq, const Udata& u = {});
    int cmd_resize_cq(ibv_cq* cq, int cqe, const Udata& u = {});
    int cmd_req_notify_cq(ibv_cq* cq, int solicited_only);
    int cmd_destroy_cq(ibv_cq* cq);  // waits until the app acked every event
    // attr->cap is updated with what the kernel granted.
    int cmd_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr, VerbsQp* qp, const Udata& u = {});
    int cmd_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr);
    int cmd_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask);
    int cmd_destroy_qp(ibv_qp* qp);  // waits until the app acked every event
    int cmd_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr, VerbsSrq* srq, const Udata& u = {});
    int cmd_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask, const Udata& u = {});
    int cmd_query_srq(ibv_srq* srq, ibv_srq_attr* attr);
    int cmd_destroy_srq(ibv_srq* srq);
    int cmd_create_ah(ibv_pd* pd, ibv_ah_attr* attr, ibv_ah* ah, const Udata& u = {});
    int cmd_destroy_ah(ibv_ah* ah);
    int cmd_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);
    int cmd_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);

    // Shared implementations providers call from their overrides.
    int cmd_query_device_ex(const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr, size_t attr_size,
                            uint64_t* raw_fw_ver);
    int cmd_query_port(uint8_t port_num, ibv_port_attr* attr, size_t attr_size);

private:
    struct Wrap {
        verbs_context vctx;  // must stay first; ibv_context is its last member
        Context* self;
    } wrap_{};
    Device& device_;
    uint32_t driver_id_ = 0;
    uint64_t core_support_ = 0;  // IB_UVERBS_CORE_SUPPORT_* from GET_CONTEXT
    void install_trampolines();
};

// "a.b.c" from the 64-bit firmware version the kernel reports.
RDMA_EXPORT void format_fw_ver(uint64_t raw, char* out, size_t len);

}  // namespace rdma::verbs
