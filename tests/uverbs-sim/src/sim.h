// uverbs-sim: an emulated ConnectX (mlx5) device at the kernel ABI.
//
// The library is LD_PRELOADed into a process. It shows the process
// ConnectX-class devices the way the kernel's mlx5_ib driver does (sysfs,
// /dev/infiniband/uverbsN, the uverbs write and ioctl ABI, mmap of UAR
// pages) and runs a device model behind them. See ../README.md for the
// architecture; this header holds the types every part shares.
#pragma once

#include <endian.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

namespace uvsim {

// ------------------------------------------------------------------ config

// An IPv4 address mapped into a GID / IPv6 address (::ffff:a.b.c.d), as
// RoCE v2 GIDs and rdma_cm carry them.
inline bool gid_v4mapped(const uint8_t g[16]) {
    static constexpr uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(g, prefix, sizeof prefix) == 0;
}

// One GID table entry of a port.
struct GidEntry {
    uint8_t gid[16];
    int type;  // 0: IB or RoCE v1, 1: RoCE v2
};

struct PortCfg {
    bool ethernet = false;  // link layer: InfiniBand or Ethernet (RoCE v2)
    uint16_t lid = 0;  // IB only
    uint8_t lmc = 0;
    uint16_t sm_lid = 0;
    uint8_t state = 4;  // IBV_PORT_ACTIVE
    uint8_t max_mtu = 5;  // IBV_MTU_4096
    uint8_t active_mtu = 5;
    uint8_t width = 2;  // 4x
    uint8_t speed = 32;  // EDR (IBV_SPEED... as in query_port)
    uint64_t gid_prefix = 0xfe80000000000000ull;
    uint64_t port_guid = 0;  // IB GID[0] interface id
    uint8_t mac[6] = {};  // Ethernet
    uint32_t ipv4 = 0;  // Ethernet: host order; 0 = none
    std::string netdev;  // Ethernet: interface name shown in gid_attrs
    std::vector<GidEntry> gids;  // the GID table, derived by finish_config
};

struct DevCfg {
    std::string name;  // mlx5_0
    uint32_t vendor_id = 0x02c9;
    uint32_t part_id = 4119;  // ConnectX-5 (4121 CX-5 Ex, 4123 CX-6, 4125 CX-6 Dx, 4129 CX-7)
    uint32_t hw_ver = 0;
    uint64_t node_guid = 0;
    uint64_t sys_image_guid = 0;
    std::string fw_ver = "16.35.2000";
    std::string board_id = "MT_0000000008";
    std::string pci_addr;  // 0000:08:00.0
    std::vector<PortCfg> ports;
    // capabilities
    uint32_t max_qp = 1u << 18;
    uint32_t max_qp_wr = 1u << 15;
    uint32_t max_sge = 30;
    uint32_t max_cq = 1u << 24;
    uint32_t max_cqe = (1u << 22) - 1;
    uint32_t max_mr = 1u << 24;
    uint64_t max_mr_size = ~0ull;
    uint32_t max_pd = 1u << 24;
    uint32_t max_srq = 1u << 23;
    uint32_t max_srq_wr = (1u << 15) - 1;
    uint32_t max_srq_sge = 31;
    uint32_t max_qp_rd_atom = 16;
    uint32_t max_ah = 0x7fffffff;
    uint32_t max_inline = 1024;  // inline data a QP may ask for (mlx5_ib: bounded by the WQE size only)
    uint32_t dyn_uars = 32;  // dynamic UAR pages a ucontext may map (0: none)
    // The UAR object of mlx5_ib since Linux 5.8: a library that offers
    // MLX5_LIB_CAP_DYN_UAR gets no static UARs and allocates each UAR as an
    // object. Off: an older kernel, which keeps static UARs for everyone.
    bool uar_objects = true;
    bool atomics = true;
    // Scatter-to-CQE as mlx5_ib configures it for QPs that ask: small
    // receives (RC, UC) and read/atomic results (RC signaling every WR)
    // written into the CQE instead of the buffers.
    bool scatter_to_cqe = true;
    // CQE compression (mlx5dv_create_cq's COMPRESSED_CQE, 64- and 128-byte
    // CQEs, mini-CQE formats hash, checksum and checksum + stride index):
    // the most CQEs one compressed session holds, 0 for a device that does
    // not compress.
    uint32_t cqe_comp_max_num = 64;
    // Ethernet receive-side steering (raw packet QPs, receive WQs, RWQ
    // indirection tables, RSS QPs, flow rules) on Ethernet ports; off: a
    // device without them (EOPNOTSUPP, as before the model had them).
    bool raw_eth = true;
    // On-demand paging as mlx5_ib reports it for a device with page faults
    // (RC and XRC: every operation; UD: send and SRQ receive; UC: none):
    // MRs with IBV_ACCESS_ON_DEMAND pin nothing, so their pages are checked
    // when the device touches them; ADVISE_MR prefetches. odp_implicit: the
    // whole address space as one MR (start 0, length U64_MAX).
    bool odp = true;
    bool odp_implicit = true;
    // Device memory (MEMIC: ibv_alloc_dm), bytes the device has; 0: none.
    uint64_t dm_size = 128 * 1024;
};

// Fault injection (config file "fault" lines or UVERBS_SIM_FAULTS).
struct FaultCfg {
    // The Nth completion (1-based, counted per process over every QP) is an
    // error CQE with this syndrome; 0 = off.
    uint64_t cqe_error_at = 0;
    uint8_t cqe_error_syndrome = 0x04;  // MLX5_CQE_SYNDROME_LOCAL_PROT_ERR
    // Device fatal after this many milliseconds from the first context; 0 = off.
    uint64_t fatal_after_ms = 0;
    // Drop every Nth packet the wire sends (RC retransmits recover); 0 = off.
    uint64_t drop_every = 0;
    // The devices are removed (hot-unplugged) this many milliseconds after
    // the first context; 0 = off.
    uint64_t remove_after_ms = 0;
};

struct Config {
    std::vector<DevCfg> devices;
    FaultCfg faults;
    std::string run_dir;  // shared by the processes of one simulated host
    std::string trace_file;  // "" = no trace, "-" = stderr
    uint32_t idle_poll_us = 1000;  // model thread's sleep when idle
};

// Parses the config text (see README). On error returns nullopt and sets err
// to "line N: message".
std::optional<Config> parse_config(std::string_view text, std::string& err);
// Fills defaults (GUIDs, LIDs, MACs, names) for devices the text left open.
void finish_config(Config& c);
// The process's configuration (UVERBS_SIM_CONFIG file, else defaults).
const Config& cfg();

// ------------------------------------------------------------------ tracing

extern bool g_trace_on;
void trace_line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
#define UVSIM_TRACE(...)                      \
    do {                                      \
        if (::uvsim::g_trace_on)              \
            ::uvsim::trace_line(__VA_ARGS__); \
    } while (0)

// ----------------------------------------------------- application memory

// Copies that survive unmapped application memory (process_vm_readv/
// writev on ourselves): false when any byte is not accessible.
bool app_read(void* dst, uint64_t src, size_t len);
bool app_write(uint64_t dst, const void* src, size_t len);
// True when [addr, addr+len) is mapped readable (and writable if asked).
bool app_range_ok(uint64_t addr, size_t len, bool writable);
// Tests and fuzzers: restrict every application-memory access to one arena
// (anything outside fails as unmapped memory would); len 0 lifts it.
void set_app_arena(uint64_t base, size_t len);
// While alive, [p, p+len) of the emulator's own memory counts as
// application memory for this thread (INVOKE_WRITE stages a write command
// and its response in our heap; under a test arena they stay reachable).
class KernelBuffer {
public:
    KernelBuffer(const void* p, size_t len);
    ~KernelBuffer();
    KernelBuffer(const KernelBuffer&) = delete;
    KernelBuffer& operator=(const KernelBuffer&) = delete;
};

// ------------------------------------------------------------------ libc

// The real libc functions (resolved with dlsym(RTLD_NEXT)).
struct Libc {
    int (*open)(const char*, int, ...);
    int (*openat)(int, const char*, int, ...);
    int (*close)(int);
    ssize_t (*read)(int, void*, size_t);
    ssize_t (*write)(int, const void*, size_t);
    int (*ioctl)(int, unsigned long, ...);
    void* (*mmap)(void*, size_t, int, int, int, off_t);
    int (*munmap)(void*, size_t);
    int (*socket)(int, int, int);
    int (*fcntl)(int, int, ...);
};
const Libc& libc();

// ------------------------------------------------------------------ objects

struct Context;
struct Device;

enum class ObjType : uint8_t {
    Pd,
    Mr,
    Mw,
    Cq,
    Qp,
    Srq,
    Ah,
    CompChannel,
    AsyncFd,
    Xrcd,
    Uar,
    Wq,
    RwqIndTbl,
    Flow,
    Dm,
    Counters
};

struct Object {
    ObjType type;
    uint32_t handle = 0;
    uint64_t user_handle = 0;
    Context* ctx = nullptr;
    int usecnt = 0;  // other objects referring to this one
    explicit Object(ObjType t) : type(t) {}
    virtual ~Object() = default;
};

// An event file: the application reads it, the model writes to our end.
struct EventFile {
    int app_fd = -1;  // handed to the application
    int our_fd = -1;  // the model writes events here (non-blocking)
    ~EventFile();
    void post(const void* ev, size_t len) const;
};

struct Pd : Object {
    uint32_t pdn = 0;
    Pd() : Object(ObjType::Pd) {}
};

struct Mr : Object {
    Pd* pd = nullptr;
    uint64_t addr = 0;  // process virtual address
    uint64_t length = 0;
    uint64_t iova = 0;  // the address remote peers and SGEs use
    uint32_t access = 0;  // IBV_ACCESS_*
    uint32_t lkey = 0, rkey = 0;
    struct Dm* dm = nullptr;  // a DM MR: the device memory it covers
    Mr() : Object(ObjType::Mr) {}
};

// A memory window: an mkey with no translation of its own until a UMR WQE
// binds it to a range of an MR (mlx5 keeps both kinds free until then).
struct Mw : Object {
    Pd* pd = nullptr;
    uint8_t mw_type = 1;  // IBV_MW_TYPE_1 or _2
    uint8_t num_klms = 1;  // translation entries the mkey has room for
    uint32_t key = 0;  // current rkey: index in the upper 24 bits, variant byte below
    bool bound = false;  // valid: the bind below is in effect
    Mr* mr = nullptr;  // what it is bound to
    uint64_t addr = 0, length = 0;  // the window's addresses (what remote peers use)
    uint64_t mr_va = 0;  // where addr lands in the MR's address space
    uint32_t access = 0;  // IBV_ACCESS_* granted through it
    uint32_t qpn = 0;  // type 2: the only QP it serves
    Mw() : Object(ObjType::Mw) {}
};

struct CompChannel : Object {
    std::shared_ptr<EventFile> file;
    CompChannel() : Object(ObjType::CompChannel) {}
};

struct Cq : Object {
    uint32_t cqn = 0;
    uint64_t buf = 0;  // provider's CQE ring
    uint32_t* dbrec = nullptr;  // [0] consumer index, [1] arm
    uint32_t ncqe = 0;  // entries (power of two)
    uint32_t cqe_size = 64;
    uint32_t pi = 0;  // producer index (model)
    std::shared_ptr<EventFile> channel;
    uint32_t comp_vector = 0;
    // Arm state as seen in the arm doorbell record.
    uint32_t last_arm = 0;
    bool armed = false, armed_solicited = false;
    uint32_t arm_ci = 0;
    // Event moderation (ibv_modify_cq): an armed CQ's event waits for
    // mod_count CQEs or mod_period microseconds after the first of them
    // (0: that bound is off; both 0: no moderation).
    uint16_t mod_count = 0, mod_period = 0;
    uint64_t pending_since_ns = 0;
    uint32_t mod_base = 0;  // the consumer index the CQ was armed at
    uint32_t comp_events = 0;  // delivered (reported in destroy response)
    uint32_t async_events = 0;
    bool overrun = false;
    // IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN: a full ring is written over (no
    // CQ error), the owner bits telling the consumer it fell behind.
    bool ignore_overrun = false;
    // CQE compression: the mini-CQE format the CQ was created with
    // (MLX5DV_CQE_RES_FORMAT_*), 0 for none. The session being gathered:
    // its first CQE as it would be written (the title), the QP and next
    // WQE counter a CQE must have to join, and each member's byte count.
    uint8_t zip_format = 0;
    uint32_t zip_max = 0;  // the device's cqe_comp_max_num
    uint8_t zip_title[64] = {};
    uint32_t zip_qpn = 0;
    uint16_t zip_next_counter = 0;
    std::vector<uint32_t> zip_bytes;
    Cq() : Object(ObjType::Cq) {}
};

// CQEs written and not yet consumed, as the consumer index record says,
// and those a compression session holds (they have their places).
inline uint32_t cq_unconsumed(const Cq& cq) {
    const uint32_t cons = be32toh(__atomic_load_n(&cq.dbrec[0], __ATOMIC_ACQUIRE)) & 0xffffff;
    return ((cq.pi - cons) & 0xffffff) + static_cast<uint32_t>(cq.zip_bytes.size());
}

// The kernel's ib_xrcd: one per XRC domain of a device. A domain opened
// through a file is shared by every handle that names the same inode (the
// kernel's per-device inode table); a private one (fd -1) has one handle.
struct Qp;
struct XrcDomain {
    uint32_t xrcdn = 0;
    int dev_index = 0;
    bool has_inode = false;
    dev_t st_dev = 0;
    ino_t st_ino = 0;
    int opens = 0;  // handles on an inode-backed domain (the kernel's usecnt share of them)
    int users = 0;  // XRC SRQs and target QPs in the domain
    std::vector<Qp*> tgt_qps;  // its target QPs (what OPEN_QP finds by number)
};

// One XRCD handle. Object::usecnt counts the SRQs and QPs created or opened
// through this handle (the kernel's uxrcd refcnt: closing it is EBUSY then).
struct Xrcd : Object {
    std::shared_ptr<XrcDomain> dom;
    Xrcd() : Object(ObjType::Xrcd) {}
};

struct Srq : Object {
    uint32_t srqn = 0;
    Pd* pd = nullptr;
    // XRC SRQs: the domain, the handle they were made through and the CQ
    // their receive completions go to
    std::shared_ptr<XrcDomain> xrc;
    Xrcd* uxrcd = nullptr;
    Cq* cq = nullptr;
    uint64_t buf = 0;
    uint32_t* dbrec = nullptr;  // [0] = counter of posted WQEs
    uint32_t wqe_cnt = 0, wqe_shift = 0, max_sge = 0;
    uint32_t limit = 0;
    bool limit_armed = false;
    uint16_t consumed = 0;  // WQEs taken by the model
    uint16_t head = 0;  // index of the next WQE in the linked list
    uint32_t uidx = 0;
    uint32_t events_reported = 0;
    bool error = false;
    Srq() : Object(ObjType::Srq) {}
};

// Address vector in model terms (from ibv_ah_attr / ib_uverbs_ah_attr or the
// mlx5 AV of a UD WQE).
struct Av {
    uint16_t dlid = 0;
    uint8_t sl = 0;
    uint8_t src_path_bits = 0;
    uint8_t static_rate = 0;
    bool grh = false;
    uint8_t dgid[16] = {};
    uint32_t flow_label = 0;
    uint8_t sgid_index = 0;
    uint8_t hop_limit = 0;
    uint8_t traffic_class = 0;
    uint8_t port = 1;
    uint8_t dmac[6] = {};
};

struct Ah : Object {
    Pd* pd = nullptr;
    Av av;
    Ah() : Object(ObjType::Ah) {}
};

// A UAR allocated as an object (MLX5_IB_METHOD_UAR_OBJ_ALLOC): one page
// of doorbell registers, mapped at the offset of its mmap entry.
struct Uar : Object {
    uint32_t alloc_type = 0;  // MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF or _NC
    uint32_t page_id = 0;  // the device's UAR index (what QPs and CQs name)
    uint32_t entry = 0;  // the mmap entry's index
    Uar() : Object(ObjType::Uar) {}
};

// Device memory (MEMIC): bytes of the device the application maps
// (MLX5_IB_MMAP_DEVICE_MEM with the page index) and MRs reach (zero-based
// DM MRs). Here a memory file: the model's own view of it is `view`, the
// application maps the same file.
struct Dm : Object {
    uint64_t length = 0;  // as asked for (the core's bound for DM MRs)
    uint64_t size = 0;  // as allocated: rounded up to 64 bytes
    uint32_t page_idx = 0;  // the mmap entry's index
    int fd = -1;
    uint8_t* view = nullptr;
    size_t map_len = 0;  // the file's size: whole pages
    Dm() : Object(ObjType::Dm) {}
    ~Dm() override;
};

// A receive work queue (ibv_create_wq, IBV_WQT_RQ): the provider's ring of
// receive WQEs and its doorbell record; what an RSS QP's indirection table
// spreads frames over. Its receives complete on its CQ with its user index.
struct Wq : Object {
    uint32_t wqn = 0;
    Pd* pd = nullptr;
    Cq* cq = nullptr;
    uint8_t state = 0;  // IBV_WQS_*
    uint64_t buf = 0;
    uint32_t* dbrec = nullptr;  // [0] = counter of posted WQEs
    uint32_t wqe_cnt = 0, wqe_shift = 0;
    uint32_t uidx = 0;
    uint32_t max_wr = 0, max_sge = 0;
    uint32_t flags = 0;  // IBV_WQ_FLAGS_* in effect
    uint16_t ci = 0;  // WQEs taken by the model
    uint32_t events_reported = 0;
    Wq() : Object(ObjType::Wq) {}
};

// An RWQ indirection table: 2^log_size WQs (a WQ may appear more than once).
struct RwqIndTbl : Object {
    uint32_t num = 0;  // ind_tbl_num
    uint32_t log_size = 0;
    std::vector<Wq*> wqs;
    RwqIndTbl() : Object(ObjType::RwqIndTbl) {}
};

// One spec of a flow rule, decoded: what a frame's field must equal under
// the mask (bytes as on the wire). Kinds: the IB_FLOW_SPEC_* values.
struct FlowSpec {
    uint32_t type = 0;  // 0x20 ETH, 0x30 IPV4, 0x31 IPV6, 0x40 TCP, 0x41 UDP, 0x1001 DROP
    uint8_t val[40] = {}, mask[40] = {};  // the kernel filter struct of the type
};

// A counters object (ibv_create_counters): bound to the hardware flow
// counter by the first flow rule that names it, with the library's
// (description, index) pairs saying which count goes where on a read.
struct Counters : Object {
    bool bound = false;
    std::vector<std::pair<uint32_t, uint32_t>> descs;  // IBV_COUNTER_PACKETS/BYTES, index
    uint32_t max_index = 0;  // the entries a read must have room for
    uint64_t packets = 0, bytes = 0;  // what the rules naming it took
    Counters() : Object(ObjType::Counters) {}
};

struct Qp;
// A flow rule (CREATE_FLOW): which frames arriving at a port reach the QP.
struct Flow : Object {
    Qp* qp = nullptr;
    int dev_index = 0;
    uint32_t type = 0;  // IB_FLOW_ATTR_NORMAL, ALL_DEFAULT, MC_DEFAULT, SNIFFER
    uint16_t priority = 0;
    uint8_t port = 1;
    uint32_t flags = 0;  // IB_FLOW_ATTR_FLAGS_DONT_TRAP
    bool drop = false;  // a DROP action: matching frames go nowhere
    Counters* counters = nullptr;  // a COUNT action: what it takes is counted there
    uint64_t seq = 0;  // creation order
    std::vector<FlowSpec> specs;
    Flow() : Object(ObjType::Flow) {}
};

struct QpEngine;  // engine.cpp

struct Qp : Object {
    uint32_t qpn = 0;
    uint8_t qp_type = 0;  // IBV_QPT_*
    uint8_t state = 0;  // IBV_QPS_*
    Pd* pd = nullptr;
    Cq* send_cq = nullptr;
    Cq* recv_cq = nullptr;
    Srq* srq = nullptr;
    bool sq_sig_all = false;
    // provider memory
    uint64_t buf = 0;
    uint32_t* dbrec = nullptr;  // [0] RQ counter, [1] SQ counter
    uint32_t sq_wqe_cnt = 0, rq_wqe_cnt = 0, rq_wqe_shift = 0;
    uint64_t sq_buf = 0;  // = buf + rq size (unless given)
    uint32_t uidx = 0;
    uint32_t create_flags = 0;  // mlx5 create flags
    // scatter-to-CQE: the largest message (responder) and read/atomic
    // result (requester) a CQE takes instead of the buffers; 0: none
    uint8_t cs_res = 0, cs_req = 0;
    // capabilities granted
    uint32_t max_send_wr = 0, max_recv_wr = 0, max_send_sge = 0, max_recv_sge = 0, max_inline = 0;
    // attributes (modify_qp)
    uint8_t port = 1;
    uint16_t pkey_index = 0;
    uint32_t qkey = 0;
    uint32_t access = 0;
    uint8_t path_mtu = 1;
    uint32_t dest_qpn = 0;
    uint32_t rq_psn = 0, sq_psn = 0;
    uint8_t max_rd_atomic = 0, max_dest_rd_atomic = 0;
    uint8_t min_rnr_timer = 0, timeout = 0, retry_cnt = 0, rnr_retry = 0;
    bool sq_draining = false;
    Av av, alt_av;
    struct McastGroup {
        uint8_t gid[16];
        uint16_t mlid;
    };
    std::vector<McastGroup> mcast;  // attached groups (UD)
    uint8_t alt_port = 0, alt_timeout = 0;
    uint16_t alt_pkey_index = 0;
    uint8_t path_mig_state = 0;
    uint32_t events_reported = 0;
    // XRC: the domain of a target QP, the XRCD handle a target QP was made
    // or opened through. A handle made by OPEN_QP (and any handle of a
    // target QP) stands for the shared QP `real`; the QP itself lives while
    // any handle does (`opens` counts the handles of a real target QP; when
    // its creator's handle goes first the QP is kept, `orphan`, by the
    // domain's registry in Sim).
    std::shared_ptr<XrcDomain> xrc;
    Xrcd* uxrcd = nullptr;
    Qp* real = nullptr;
    std::vector<Qp*> opened;  // real target QP: the OPEN_QP handles on it
    bool orphan = false;
    // RSS QP (a raw packet QP over an indirection table: no queues of its
    // own): the table, the Toeplitz key and the hashed fields
    // (MLX5_RX_HASH_*); tirn stands in for the TIR the kernel makes.
    RwqIndTbl* ind_tbl = nullptr;
    uint64_t rx_hash_fields = 0;
    uint8_t rx_key[40] = {};
    std::unique_ptr<QpEngine> eng;
    Qp();
    ~Qp() override;
};

// One ib_ucontext: an open /dev/infiniband/uverbsN file after GET_CONTEXT.
struct Context {
    int fd = -1;  // one of the application's fds open on the file
    Device* dev = nullptr;
    bool have_ucontext = false;
    std::shared_ptr<EventFile> async;  // the first async event file: object events go here
    // Further async files (ASYNC_EVENT_ALLOC again, as an imported context
    // does): the device-wide events reach them too.
    std::vector<std::shared_ptr<EventFile>> more_async;
    uint32_t next_handle = 1;
    std::map<uint32_t, std::unique_ptr<Object>> objects;
    uint32_t tot_bfregs = 0, num_uars = 0;
    // Dynamic UAR pages (MLX5_IB_MMAP_ALLOC_WC), each mapped once.
    uint32_t num_dyn_uars = 0;
    std::vector<bool> dyn_uar_mapped;
    uint8_t cqe_version = 0;
    // The library offered dynamic UARs and the kernel took the offer: no
    // static UAR pages; QPs and CQs name UAR objects by their page id.
    bool lib_uar_dyn = false;
    uint32_t next_uar_entry = 0;
    // The mlx5 ucontext response GET_CONTEXT gave (QUERY_CONTEXT answers it
    // again: what the file's context was granted)
    std::vector<uint8_t> uctx_resp;
    std::vector<std::pair<uint64_t, size_t>> mappings;  // mmaps of this file

    template <class T>
    T* get(uint32_t h, ObjType t) {
        auto it = objects.find(h);
        if (it == objects.end() || it->second->type != t)
            return nullptr;
        return static_cast<T*>(it->second.get());
    }
    uint32_t add(std::unique_ptr<Object> o);
    void async_event(uint64_t element, uint32_t event_type);
};

// The simulated device (one per configured device, shared by the contexts
// of this process; what is host-wide, like QP numbers, lives in the run
// directory).
struct Device {
    int index = 0;
    const DevCfg* cfg = nullptr;
    bool fatal = false;
    // Hot-unplugged: the kernel disassociated every context of it, so every
    // command answers EIO (clean-up too: its objects are already gone), and
    // it left sysfs and /dev.
    bool removed = false;
    std::vector<uint8_t> port_state;  // current state per port (1-based index - 1)
};

// Global state of the emulator in this process. One mutex protects every
// object and the model; the model thread takes it for each step.
struct Sim {
    std::recursive_mutex mu;
    std::vector<Device> devices;
    // cmd fd -> the context of its file; fds made by dup() share it, as
    // they share the kernel's file (ibv_import_device relies on that)
    std::map<int, std::shared_ptr<Context>> files;
    std::map<uint32_t, Qp*> qps;  // qpn -> QP (this process)
    std::map<uint32_t, Mr*> mrs_by_lkey;  // lkey (== rkey) -> MR
    std::map<uint32_t, Mw*> mws_by_index;  // mkey index (key >> 8) -> MW
    std::vector<Cq*> cqs;
    std::vector<Srq*> srqs;
    std::vector<Flow*> flows;  // every flow rule of the process, in creation order
    std::map<uint32_t, Wq*> wqs;  // wqn -> WQ
    uint64_t next_flow_seq = 1;
    uint32_t next_wq = 1, next_ind_tbl = 1;
    // XRC domains backed by a file (by device and inode), and target QPs
    // whose creating handle is gone while OPEN_QP handles remain
    std::vector<std::weak_ptr<XrcDomain>> xrc_domains;
    std::vector<std::unique_ptr<Object>> orphan_qps;
    uint32_t next_xrcd = 1;
    std::map<int, std::shared_ptr<EventFile>> channels;  // comp channel fd -> file
    uint32_t slot = 0;  // host-wide process slot (QPN/CQN high bits)
    uint32_t next_qp = 1, next_cq = 1, next_srq = 1, next_pd = 1, next_key = 1;
    uint8_t mkey_variant = 0;  // variant byte of the next window's key
    uint64_t dm_used = 0;  // device memory allocated (MEMIC)
    uint32_t next_dm_page = 1;  // mmap entry indexes of device memory
    uint32_t next_uar_page = 16;  // device UAR indexes of UAR objects (below: the kernel's own)
};
Sim& sim();

// ------------------------------------------------------------ fd registry

// Marks fds the emulator owns so interposed calls route them cheaply.
enum class FdKind : uint8_t { None, Uverbs, Event, Cm };
constexpr int kMaxFd = 1 << 16;  // fds at or above are never the emulator's
void fd_mark(int fd, FdKind k);
FdKind fd_kind(int fd);

// ------------------------------------------------------------ kernel layer

// The command decoders (cmd_write.cpp, cmd_ioctl.cpp). Both return 0 or a
// negative errno; write returns the byte count on success.
ssize_t uverbs_write(Context& c, const void* buf, size_t len);
// fd: the fd the call came through (the VFS's own ioctls act on it); -1:
// the context's.
int uverbs_ioctl(Context& c, unsigned long request, void* arg, int fd = -1);
void* uverbs_mmap(Context& c, void* addr, size_t len, int prot, int flags, off_t off, int& err);
// close() of an fd the emulator marked (uverbs file or comp channel): the
// file goes with the last fd open on it
void uverbs_close(int fd);
// newfd (just made by dup, dup2, dup3 or fcntl F_DUPFD) is oldfd's file
void uverbs_dup(int oldfd, int newfd);

// Sysfs/dev view (sysfs.cpp): the tree root and path mapping.
const std::string& tree_root();
// A removed device leaves the tree: its class/infiniband entry, its
// uverbs class entry and its /dev node (for every process of the run
// directory, as a removal is the host's).
void sysfs_remove_device(int index, const std::string& name);
// If path names something the emulator provides, the real path in the
// tree; else empty.
std::string map_path(const char* path);
// The uverbs device index for "/dev/infiniband/uverbsN" (or -1).
int uverbs_index_for_path(const char* path);

// Host-wide slot (wire.cpp): binds the process's wire socket.
bool wire_attach();

// The model (engine.cpp).
void engine_start();
void engine_qp_state_changed(Qp& qp, uint8_t old_state);
void engine_qp_destroy(Qp& qp);
void engine_cq_destroy(Cq& cq);
// An SRQ goes: what the model holds for it (XRC requests waiting) goes too.
void engine_srq_destroy(Srq& srq);
// XRC SRQs of a domain backed by a file are known host-wide (the run
// directory), so a target QP of another process on the domain reaches them.
void xrc_srq_register(const Srq& srq);
void xrc_srq_unregister(const Srq& srq);
// The host-wide name of a domain backed by a file ("" for a private one).
std::string xrc_domain_key(const XrcDomain& d);
// A new CQ: the model marks its arm record so any arm request is seen.
void engine_cq_created(Cq& cq);
// RESIZE_CQ: the resize CQE into the old ring, then CQEs go to the new one.
void engine_cq_resize(Cq& cq, uint64_t buf, uint32_t ncqe, uint32_t cqe_size);
// A raw frame that arrived at the process (every Ethernet port on the
// simulated host shares one segment): steering picks the QPs and WQs.
// Also the unit tests' entry point (steering.cpp).
struct FrameFields;
// Toeplitz hash of the RSS key over the input bytes (as a ConnectX
// computes it: key bits from the most significant of byte 0 on).
uint32_t toeplitz(const uint8_t* key, size_t key_len, const uint8_t* in, size_t n);
// The RSS hash input (src/dst address, src/dst port, in that order, the
// ones the MLX5_RX_HASH_* mask selects and the frame has) and its hash.
uint32_t rss_hash(const uint8_t* frame, size_t len, uint64_t fields, const uint8_t key[40]);
// Does the frame match every spec of the rule?
bool flow_matches(const Flow& f, const uint8_t* frame, size_t len);
// The flow rules a frame arriving at (device, port) reaches, by the rules'
// priorities and types (see steering.cpp).
std::vector<Flow*> steer_frame(int dev_index, uint8_t port, const uint8_t* frame, size_t len);
// Decodes the specs of a CREATE_FLOW command (after ib_uverbs_flow_attr):
// 0 or the kernel's errno.
// The actions a rule's specs name besides its match.
struct FlowActions {
    bool drop = false;
    bool count = false;
    uint32_t counters_handle = 0;
};
int decode_flow_specs(const uint8_t* p, size_t len, unsigned num, std::vector<FlowSpec>& out, FlowActions& act);

// Sends a packet as the model's own go: held in the model's queue while the
// peer's socket is full (a datagram socket's queue is short), never lost
// but to faults or a peer that is gone. sim().mu held.
struct Packet;
void engine_xmit(Packet& p);

// Writes a flush/error CQE etc.: used by the verbs layer when a QP goes to
// the error state through modify_qp.
void engine_flush_qp(Qp& qp);
// A WQ goes (or leaves RDY): nothing more lands in it.
void engine_wq_destroy(Wq& wq);

}  // namespace uvsim
