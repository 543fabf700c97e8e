// The mlx5 provider (ConnectX-4 and later, BlueField): libibverbs' plugin
// for devices of the kernel's mlx5_ib driver. It lives in libmlx5.so.1,
// the direct-verbs library, and libmlx5-rdmav65.so is a link to it, so the
// mlx5dv_* entry points and the plugin share one copy of every object.
//
// This file: the device, the context (what GET_CONTEXT negotiated, the UAR
// pages and their doorbell registers, the core clock page), the environment
// knobs, and the queue objects (CQ, QP, SRQ, AH) whose rings live in our
// memory and which the device reads and writes directly. mlx5.cpp
// implements the context; cq.cpp, qp.cpp, srq.cpp and ah.cpp the objects.
#pragma once

#include "libibverbs/driver.h"
#include "providers/mlx5/mlx5dv.h"
#include "util/spinlock.h"

#include <rdma/mlx5-abi.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace rdma::mlx5 {

// MLX5_* environment variables, read once per context open. Those that
// steer queues not implemented yet are read and kept so that README.md can
// say exactly which take effect (see there).
struct Env {
    int total_uuars = 16;  // MLX5_TOTAL_UUARS (bfregs asked of the kernel)
    int low_lat_uuars = 4;  // MLX5_NUM_LOW_LAT_UUARS
    bool shut_up_bf = false;  // MLX5_SHUT_UP_BF: map UARs non-cached, no BlueFlame
    bool single_threaded = false;  // MLX5_SINGLE_THREADED: no locks on queues
    bool prefer_bf = true;  // MLX5_POST_SEND_PREFER_BF
    int cqe_size = 64;  // MLX5_CQE_SIZE (64 or 128)
    bool scatter_to_cqe = true;  // MLX5_SCATTER_TO_CQE: off only when "0"
    // Polling back-off (MLX5_STALL_*): off unless MLX5_STALL_CQ_POLL is set
    // and not "0". A poll that follows one that found nothing first spins
    // stall_loops times; a negative MLX5_STALL_NUM_LOOP makes the back-off
    // adaptive instead: a wait of stall_cycles TSC cycles after a poll
    // that found less than it could take, the wait growing by inc_step
    // after a partial poll and shrinking by dec_step otherwise, kept
    // within [min, max].
    bool stall = false;
    int stall_loops = 60;
    // The adaptive wait's bounds and steps, as read (negatives as 0, a
    // maximum below the minimum as the minimum).
    uint32_t stall_min = 60, stall_max = 100000, stall_inc = 100, stall_dec = 10;
    uint32_t debug_mask = 0;  // MLX5_DEBUG_MASK
    // 0, or the positive errno the reference's context open fails with for
    // a value it refuses (a bfreg count that is not positive or too large).
    int error = 0;
};

// Reads the variables from the process environment.
Env read_env();

// The smallest power of two >= v (v <= 2^31).
inline uint32_t roundup_pow2(uint32_t v) {
    uint32_t n = 1;
    while (n < v)
        n <<= 1;
    return n;
}

// One doorbell register of a UAR page ("bfreg" in the kernel's words): the
// 8-byte doorbell, followed by buf_size bytes of BlueFlame buffer when the
// device writes-combine. Each BlueFlame write goes to one of two halves
// (offset toggles 0 / buf_size), so consecutive writes never merge; a
// register the kernel shares between QPs needs its lock around that.
struct Bfreg {
    void* base = nullptr;  // its UAR page
    void* reg = nullptr;
    uint32_t dyn_index = UINT32_MAX;  // a dynamic register's kernel index (MLX5_QP_FLAG_BFREG_INDEX)
    uint32_t buf_size = 0;
    uint32_t offset = 0;
    bool shared = false;  // medium-latency register: QPs take `lock`
    SpinLock lock;
    // What mlx5dv_init_obj reports: the BlueFlame size of the register
    // (also when MLX5_SHUT_UP_BF keeps this library from using it) and the
    // mmap offset of its UAR page.
    uint32_t dv_size = 0;
    off_t uar_mmap_offset = 0;
    // A register of a UAR object (dynamic UARs): QPs name its page by id
    // (MLX5_QP_FLAG_UAR_PAGE_INDEX). Which pool it belongs to, and for a
    // shared one how many QPs use it.
    enum class Pool : uint8_t { None, Dedicated, Shared } pool = Pool::None;
    bool uar_object = false;
    uint32_t page_id = 0;
    uint32_t users = 0;
};

// Kernel facts the context open learned and every object needs.
// The mmap offset of one of mlx5_ib's pages: the command in bits 8-15 of
// the page offset, the index in the bits around it.
inline off_t mmap_offset(long page, uint32_t cmd, uint32_t index) {
    return static_cast<off_t>(((cmd << 8) | (index & 0xff)) | ((index >> 8) << 16)) * page;
}

struct Caps {
    uint32_t bf_reg_size = 0;
    uint32_t tot_bfregs = 0;
    uint32_t cache_line_size = 64;
    uint16_t max_sq_desc_sz = 0;
    uint16_t max_rq_desc_sz = 0;
    uint32_t max_send_wqebb = 0;
    uint32_t max_recv_wr = 0;
    uint32_t max_srq_recv_wr = 0;
    uint16_t num_ports = 0;
    uint8_t cqe_version = 0;
    uint8_t cmds_supp_uhw = 0;
    uint8_t eth_min_inline = 0;
    uint32_t comp_mask = 0;  // MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_*
    uint32_t dump_fill_mkey = 0;
    ibv_atomic_cap atomic_cap = IBV_ATOMIC_NONE;
    uint32_t max_cqe = UINT32_MAX - 1;  // the device's, once queried (unknown: no limit here)
    uint64_t device_cap_flags_ex = 0;
    uint8_t link_layer[2] = {};  // ports 1 and 2, IBV_LINK_LAYER_*
    // What the mlx5 part of the device query reports, kept for mlx5dv
    // (mlx5dv_query_device, mlx5dv_create_cq's checks).
    uint64_t vendor_flags = 0;  // MLX5DV_CONTEXT_FLAGS_* the device has
    mlx5dv_cqe_comp_caps cqe_comp_caps{};
    mlx5dv_sw_parsing_caps sw_parsing_caps{};
    mlx5dv_striding_rq_caps striding_rq_caps{};
    uint32_t tunnel_offloads_caps = 0;
    mlx5dv_dci_streams_caps dci_streams_caps{};
    uint16_t flow_action_flags = 0;  // from the context answer
    uint32_t num_dyn_bfregs = 0;
    uint8_t clock_info_versions = 0;
    uint64_t max_dm_size = 0;  // device memory, from the device query
};

struct Mlx5Qp;
struct Mlx5Srq;

struct Mlx5Pd;

// Counters: the library's part, then what reads are to be told when the
// first rule binds them (mlx5's description pairs), and how many rules
// hold them.
struct Mlx5Counters {
    verbs::VerbsCounters vc{};
    std::mutex lock;
    std::vector<mlx5_ib_flow_counters_desc> descs;
    int refcount = 0;
};
inline Mlx5Counters* to_mcounters(ibv_counters* c) { return reinterpret_cast<Mlx5Counters*>(c); }

// Where a queue's memory comes from, first that applies: a parent domain's
// allocators (for resource `res_type`; IBV_ALLOCATOR_USE_DEFAULT passes
// on), the context's allocators, the `component`'s ALLOC_TYPE knob.
struct BufSource {
    const Mlx5Pd* parent = nullptr;
    uint64_t res_type = 0;
    const mlx5dv_ctx_allocators* ext = nullptr;
    const char* component = nullptr;
    int cmd_fd = -1;
};

class Mlx5Context final : public verbs::Context {
public:
    Mlx5Context(verbs::Device& device, int cmd_fd);
    ~Mlx5Context() override;

    // Negotiates the user context with the kernel and maps its pages.
    // `attr`: what mlx5dv_open_device was given (null for ibv_open_device).
    // 0 or a positive errno; on failure the destructor releases what was
    // set up, and the caller still owns cmd_fd.
    int open(const mlx5dv_context_attr* attr);
    // ibv_import_device: a context over a command fd whose user context
    // another context negotiated (QUERY_CONTEXT). Only a kernel that gave
    // that context dynamic UARs can share it (else EINVAL, as the
    // reference). 0 or a positive errno, as open().
    int import();

    int query_device_ex(const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr, size_t attr_size) override;

    ibv_pd* alloc_pd() override;
    int dealloc_pd(ibv_pd* pd) override;
    ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access) override;
    int rereg_mr(verbs::VerbsMr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) override;
    int dereg_mr(verbs::VerbsMr* mr) override;

    ibv_cq* create_cq(int cqe, ibv_comp_channel* channel, int comp_vector) override;
    ibv_cq_ex* create_cq_ex(ibv_cq_init_attr_ex* attr) override;
    int destroy_cq(ibv_cq* cq) override;
    int resize_cq(ibv_cq* cq, int cqe) override;
    void cq_event(ibv_cq* cq) override;

    ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) override;
    ibv_qp* create_qp_ex(ibv_qp_init_attr_ex* attr) override;
    int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) override;
    int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) override;
    int destroy_qp(ibv_qp* qp) override;

    ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) override;
    ibv_srq* create_srq_ex(ibv_srq_init_attr_ex* attr) override;
    int get_srq_num(ibv_srq* srq, uint32_t* srq_num) override;
    ibv_xrcd* open_xrcd(ibv_xrcd_init_attr* attr) override;
    int close_xrcd(ibv_xrcd* xrcd) override;
    ibv_qp* open_qp(ibv_qp_open_attr* attr) override;
    ibv_wq* create_wq(ibv_wq_init_attr* attr) override;
    int modify_wq(ibv_wq* wq, ibv_wq_attr* attr) override;
    int destroy_wq(ibv_wq* wq) override;
    ibv_rwq_ind_table* create_rwq_ind_table(ibv_rwq_ind_table_init_attr* attr) override;
    int destroy_rwq_ind_table(ibv_rwq_ind_table* table) override;
    ibv_flow* create_flow(ibv_qp* qp, ibv_flow_attr* attr) override;
    int destroy_flow(ibv_flow* flow) override;
    // Flow counters (steering.cpp), through their verbs_context slots.
    ibv_counters* create_counters(ibv_counters_init_attr* attr);
    int destroy_counters(ibv_counters* counters);
    int attach_counters(ibv_counters* counters, ibv_counter_attach_attr* attr, ibv_flow* flow);
    int read_counters(ibv_counters* counters, uint64_t* values, uint32_t n, uint32_t flags);
    int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask) override;
    int query_srq(ibv_srq* srq, ibv_srq_attr* attr) override;
    int destroy_srq(ibv_srq* srq) override;

    ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) override;
    int dealloc_mw(ibv_mw* mw) override;

    ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr) override;
    int destroy_ah(ibv_ah* ah) override;

    // mlx5dv (dv.cpp): the device's mlx5 capabilities, the creation of
    // queues with mlx5 attributes, the allocators, the clock page.
    int dv_query_device(mlx5dv_context* out);
    ibv_cq_ex* dv_create_cq(ibv_cq_init_attr_ex* attr, const mlx5dv_cq_init_attr* dv);
    ibv_qp* dv_create_qp(ibv_qp_init_attr_ex* attr, const mlx5dv_qp_init_attr* dv);
    int set_allocators(const mlx5dv_ctx_allocators& a);
    int clock_info(mlx5dv_clock_info* out) const;
    bool has_clock_info() const { return clock_info_ != nullptr; }
    // The free-running device clock now (ibv_query_rt_values_ex): 0, or
    // EOPNOTSUPP when the kernel mapped no core clock page.
    int read_core_clock(uint64_t& cycles) const;
    // The application's allocators if both are set, else null.
    const mlx5dv_ctx_allocators* allocators() const {
        return ext_alloc_.alloc && ext_alloc_.free ? &ext_alloc_ : nullptr;
    }
    // Where a ring (knob `component`) or a doorbell record of a queue on
    // `pd` (or created with it as parent domain) comes from.
    BufSource ring_source(const char* component, uint64_t res_type, const Mlx5Pd* parent) const {
        return BufSource{parent, res_type, allocators(), component, cmd_fd()};
    }
    BufSource dbrec_source(const Mlx5Pd* parent) const {
        return BufSource{parent, MLX5DV_RES_TYPE_DBR, allocators(), nullptr, -1};
    }
    ibv_pd* alloc_parent_domain(ibv_parent_domain_init_attr* attr);
    ibv_td* alloc_td(ibv_td_init_attr* attr);
    int dealloc_td(ibv_td* td);
    // Whether the kernel granted DEVX (the open asked for it first).
    bool devx() const { return devx_; }
    // Whether every UAR is an object (a kernel that took MLX5_LIB_CAP_DYN_UAR).
    bool dyn_uar() const { return dyn_uar_; }
    // The page id of the non-cached UAR object (CQs name it).
    uint32_t nc_page_id() const { return nc_bfreg_.page_id; }
    // Dynamic UARs (uar.cpp): the register a new QP rings, from the
    // dedicated registers while the low-latency count lasts, then the
    // shared ones (null + errno when a page cannot be had); its return.
    Bfreg* acquire_qp_bfreg();
    void release_qp_bfreg(Bfreg* bf);
    // A register no one else uses (thread domains, mlx5dv_devx_alloc_uar
    // of BlueFlame), null + errno when no page can be had.
    Bfreg* take_own_bfreg();
    void release_own_bfreg(Bfreg* bf);
    mlx5dv_devx_uar* dv_alloc_uar(uint32_t flags);
    void dv_free_uar(mlx5dv_devx_uar* uar);
    static void free_devx_uar(mlx5dv_devx_uar* uar);  // to the context it came from
    // The UAR page CQ arm doorbells go to, and where that is kept (what
    // the MLX5_1.0 mlx5dv_init_obj hands out instead).
    void* const* cq_uar_reg() const { return &cq_uar_reg_; }
    // The core clock counter's address (mlx5dv's hca_core_clock), or null.
    void* hca_core_clock() const { return const_cast<uint32_t*>(core_clock_); }

    const Env& env() const { return env_; }
    const Caps& caps() const { return caps_; }
    // Where diagnostics go: the file MLX5_DEBUG_FILE names, or nowhere.
    FILE* debug_file() const { return debug_file_; }
    const char* hostname() const { return hostname_; }
    // The register a QP with the kernel's bfreg index uses, or null.
    Bfreg* bfreg(uint32_t index) { return index < nbfregs_ ? &bfregs_[index] : nullptr; }

    // QPs by the user index their CQEs carry (CQE version 1). Lookups run
    // on the poll path without a lock: a QP is entered before the kernel
    // knows its index and removed only after the kernel destroyed it.
    Mlx5Qp* qp_by_uidx(uint32_t uidx) const {
        const auto* block = uidx_table_[(uidx >> kUidxShift) & kUidxTopMask].load(std::memory_order_acquire);
        return block ? block->qps[uidx & kUidxBlockMask] : nullptr;
    }
    // The lowest free index for qp, or -1 (ENOMEM) when none is left.
    int64_t store_uidx(Mlx5Qp* qp);
    void clear_uidx(uint32_t uidx);
    // Where completion-queue arm doorbells go (UAR page 0, offset 0x20).
    void* cq_doorbell() const;
    // The free-running device clock (big-endian halves), null if unmapped.
    const volatile uint32_t* core_clock() const { return core_clock_; }

    ibv_pd* import_pd(uint32_t pd_handle) override;
    void unimport_pd(ibv_pd* pd) override;
    ibv_mr* import_mr(ibv_pd* pd, uint32_t mr_handle) override;
    void unimport_mr(ibv_mr* mr) override;

    // Device memory (dm.cpp): MEMIC allocations mapped into the process
    // (ibv_alloc_dm, mlx5dv_alloc_dm with a type), their MRs, import.
    ibv_dm* alloc_dm(const ibv_alloc_dm_attr* attr, uint32_t type);
    int free_dm(ibv_dm* dm);
    ibv_mr* reg_dm_mr(ibv_pd* pd, ibv_dm* dm, uint64_t offset, size_t length, unsigned int access);
    ibv_dm* import_dm(uint32_t dm_handle) override;
    void unimport_dm(ibv_dm* dm) override;

private:
    int get_context(bool devx_only);
    // What the context answer (GET_CONTEXT or QUERY_CONTEXT) tells: the
    // capabilities, the UAR model, the clock pages.
    int take_context_answer(const mlx5_ib_alloc_ucontext_resp& resp);
    void set_ops();
    // Dynamic UARs (uar.cpp): one page as a UAR object, mapped; the
    // singleton non-cached page (CQ doorbells, QPs without BlueFlame); two
    // registers of a new BlueFlame page into `pool`; and the release of
    // every page at close.
    int alloc_uar_page(uint32_t type, void*& page, uint32_t& page_id, off_t& offset);
    int setup_dyn_uars();
    int add_bf_page(Bfreg::Pool pool, std::unique_ptr<Bfreg> (&regs)[2]);
    void release_uar_objects();
    void map_clock_info(long page);
    ibv_cq_ex* create_cq_common(ibv_cq_init_attr_ex* attr, const mlx5dv_cq_init_attr* dv);
    ibv_qp* create_qp_common(ibv_qp_init_attr_ex* attr, uint32_t drv_flags);
    int map_uars(long page);
    void map_core_clock(long page, uint64_t offset);
    void probe_device();
    // cqe_size: 64 or 128 (else EINVAL); drv_flags: MLX5_IB_CREATE_CQ_FLAGS_*.
    struct Mlx5Cq* new_cq(int cqe, ibv_comp_channel* channel, int comp_vector, uint64_t wc_flags, bool single_threaded,
                          int cqe_size, uint32_t drv_flags, Mlx5Pd* parent = nullptr, uint32_t core_flags = 0,
                          uint8_t comp_format = 0);
    // send_ops: the ibv_wr_* operations asked for, 0 for the default set;
    // drv_flags: MLX5_QP_FLAG_* for the kernel.
    Mlx5Qp* new_qp(ibv_pd* pd, ibv_qp_init_attr* attr, uint64_t send_ops, uint32_t drv_flags);
    // An XRC target QP: no queues of its own, in a domain.
    Mlx5Qp* new_xrc_target(ibv_qp_init_attr_ex* attr);
    // An RSS QP: receives through an indirection table's WQs, no queues.
    Mlx5Qp* new_rss_qp(ibv_qp_init_attr_ex* attr);
    int create_queueless(Mlx5Qp& q, ibv_qp_init_attr_ex* attr, uint32_t drop, const void* req, size_t req_len);
    // Basic and XRC SRQs (the attributes checked by the caller).
    struct Mlx5Srq* new_srq(ibv_srq_init_attr_ex* attr);
    // What every QP asks of the kernel unless mlx5dv says otherwise: that
    // the device may scatter small receives and results into the CQE
    // (MLX5_SCATTER_TO_CQE other than "0"), as the reference asks.
    uint32_t default_qp_flags() const { return env_.scatter_to_cqe ? MLX5_QP_FLAG_SCATTER_CQE : 0; }

    // 2^24 user indices: 4096 blocks of 4096, allocated when first used.
    static constexpr uint32_t kUidxShift = 12;
    static constexpr uint32_t kUidxBlockMask = (1u << kUidxShift) - 1;
    static constexpr uint32_t kUidxTopMask = (1u << (24 - kUidxShift)) - 1;
    struct UidxBlock {
        Mlx5Qp* qps[1u << kUidxShift] = {};
        uint32_t used = 0;
    };
    std::atomic<UidxBlock*> uidx_table_[kUidxTopMask + 1] = {};
    std::mutex uidx_mu_;

    Env env_;
    Caps caps_;
    FILE* debug_file_ = nullptr;
    char hostname_[64] = "";
    std::vector<void*> uar_pages_;  // mmapped system pages of static UARs
    std::unique_ptr<Bfreg[]> bfregs_;  // indexed like the kernel's bfreg_index
    uint32_t nbfregs_ = 0;
    // Dynamic UAR pages (thread domains): each mapped page gives two
    // registers, kept here for the context's life; those no TD holds wait
    // in free_dyn_bfregs_.
    std::vector<std::unique_ptr<Bfreg>> dyn_bfregs_;
    std::vector<Bfreg*> free_dyn_bfregs_;
    uint32_t dyn_pages_ = 0;
    std::mutex dyn_mu_;
    void* clock_page_ = nullptr;
    void* cq_uar_reg_ = nullptr;  // UAR page 0: where CQ doorbells go (mlx5dv)
    const volatile mlx5_ib_clock_info* clock_info_ = nullptr;  // null: not offered
    mlx5dv_ctx_allocators ext_alloc_{};
    bool devx_ = false;
    const volatile uint32_t* core_clock_ = nullptr;
    long page_size_ = 4096;
    uint32_t uar_size_log_ = 12;  // log2 of a UAR's size (0: one per page)
    uint32_t uars_per_page_ = 1;
    // Dynamic UARs: every page a UAR object of this context, destroyed at
    // close (an imported context's pages are its own).
    bool dyn_uar_ = false;
    struct UarObject {
        uint32_t handle;
        void* page;
    };
    std::vector<UarObject> uar_objects_;
    Bfreg nc_bfreg_;  // the non-cached page's register
    std::vector<std::unique_ptr<Bfreg>> qp_bfregs_;  // the pools' registers
    std::vector<Bfreg*> free_dedicated_;  // oldest returned first
    std::vector<Bfreg*> shared_;  // in the order their pages came
    uint32_t dedicated_count_ = 0;  // dedicated registers made so far
    std::mutex uar_mu_;
};

struct Mlx5Pd {
    ibv_pd pd;
    uint32_t pdn;
    // A parent domain (ibv_alloc_parent_domain) stands for `protection`:
    // its ibv_pd carries that PD's kernel handle (every command goes to the
    // real PD) and pdn; the queues created on it take their memory from
    // the application's allocators, when it gave them.
    Mlx5Pd* protection = nullptr;
    void* (*alloc)(ibv_pd*, void*, size_t, size_t, uint64_t) = nullptr;
    void (*free)(ibv_pd*, void*, void*, uint64_t) = nullptr;
    void* pd_context = nullptr;
    // What stands on this PD and keeps it from being freed (EBUSY): parent
    // domains on a PD; queues on a parent domain.
    std::atomic<uint32_t> users{0};
    // The thread domain of a parent domain, if any: its queues take no
    // locks and their doorbells go to the domain's own register.
    struct Mlx5Td* td = nullptr;
};

// A thread domain (ibv_alloc_td): the application promises one thread for
// what is created on it, so it gets a register of its own, used without a
// lock.
struct Mlx5Td {
    ibv_td td;
    Bfreg* bf;
    std::atomic<uint32_t> users{0};  // parent domains naming it
};

// Memory the device reads or writes: page aligned, zeroed, kept out of
// forked children (as every DMA buffer of libibverbs' providers).
// With the application's allocators (mlx5dv_set_context_attr) the memory
// comes from them instead, and goes back to them. A queue's ring names its
// kind (`component`: MLX_QP, MLX_CQ, MLX_SRQ) so that the reference's
// <component>_ALLOC_TYPE knob chooses where it lives: ANON (the default),
// HUGE (a huge page or failure), PREFER_HUGE, CONTIG, PREFER_CONTIG, ALL.
// Contiguous pages are asked of the device file (the mmap command
// MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES, largest block first) as the reference
// asks; mlx5_ib refuses that command (ENOSYS), so CONTIG fails with the
// kernel's errno and the PREFER/ALL kinds fall back past it.
class DmaBuf {
public:
    DmaBuf() = default;
    DmaBuf(const DmaBuf&) = delete;
    DmaBuf& operator=(const DmaBuf&) = delete;
    ~DmaBuf() { reset(); }
    // 0 or a positive errno. `ext`: the context's allocators, or null;
    // `component`: the knob's prefix, or null for memory it does not cover;
    // `cmd_fd`: the device file contiguous pages are mapped from.
    int alloc(size_t size, const BufSource& from);
    void reset();
    void swap(DmaBuf& o) noexcept {
        std::swap(addr_, o.addr_);
        std::swap(size_, o.size_);
        std::swap(kind_, o.kind_);
        std::swap(ext_, o.ext_);
        std::swap(parent_pd_, o.parent_pd_);
        std::swap(parent_ctx_, o.parent_ctx_);
        std::swap(parent_free_, o.parent_free_);
        std::swap(res_type_, o.res_type_);
    }
    uint8_t* get() const { return addr_; }
    size_t size() const { return size_; }

private:
    enum class Kind : uint8_t { Heap, Ext, Parent, HugeShm, DeviceMap };
    void release(void* p);  // gives the memory back to where it came from
    uint8_t* addr_ = nullptr;
    size_t size_ = 0;
    Kind kind_ = Kind::Heap;
    mlx5dv_ctx_allocators ext_{};  // set when the memory is the application's
    // Kind::Parent: whom to give it back to.
    ibv_pd* parent_pd_ = nullptr;
    void* parent_ctx_ = nullptr;
    void (*parent_free_)(ibv_pd*, void*, void*, uint64_t) = nullptr;
    uint64_t res_type_ = 0;
};

// A completion queue: ncqe entries of cqe_size bytes in a ring we own; the
// device writes CQEs and flips their owner bit once per pass.
struct Mlx5Cq {
    verbs::VerbsCq vcq;
    Mlx5Pd* parent = nullptr;  // the parent domain it was created on, if any
    OptionalSpinLock lock;
    DmaBuf buf;
    DmaBuf dbrec_buf;
    volatile __be32* dbrec;  // [0] consumer index, [1] last arm request
    uint32_t ncqe;  // a power of two
    uint32_t cqe_size;  // 64 or 128
    uint32_t cons_index;  // CQEs consumed so far (wraps at 2^32)
    uint32_t cqn;
    uint32_t arm_sn;  // completion events seen, for the arm doorbell
    void* uar_db;  // where the arm doorbell is written
    uint64_t wc_flags;  // what create_cq_ex asked to read
    bool dv_owned;  // handed to the application (mlx5dv_init_obj): never cleaned by us
    bool compressed;  // created with CQE compression: the device may write sessions
    // Extended polling (start_poll .. end_poll): the current CQE, read in
    // place by the read_* hooks (its slot stays ours until end_poll
    // publishes the consumer index), and for a requester CQE the opcode
    // its send WQE recorded.
    const mlx5_cqe64* ex_cqe;
    uint8_t ex_sq_opcode;
    // Wall-clock timestamps asked for: the clock-info conversion, read
    // afresh at each start_poll.
    bool wallclock;
    mlx5dv_clock_info ex_clock;
    // The polling back-off (Env::stall): 0 off, kStallFixed, kStallAdaptive.
    uint8_t stall_mode = 0;
    bool stall_next = false;  // fixed: the last poll found nothing
    uint32_t stall_cycles = 0;  // adaptive: the wait
    uint64_t stall_since = 0;  // adaptive: TSC of the last short poll (0: none)
    ~Mlx5Cq();
};

// One work queue of a QP (the send or the receive side).
struct Mlx5Wq {
    OptionalSpinLock lock;
    uint64_t* wrid = nullptr;  // per WQE slot (SQ: slot of the first WQEBB)
    uint32_t* wqe_head = nullptr;  // SQ: the value of head after this WR
    uint8_t* wc_opcode = nullptr;  // SQ: what the completion reports
    uint8_t* start = nullptr;  // first WQE
    uint32_t wqe_cnt = 0;  // power of two (SQ: WQEBBs, RQ: WQEs)
    uint32_t wqe_shift = 0;
    uint32_t max_post = 0;
    uint32_t max_gs = 0;
    // What one posted WR may carry: max_gs once the queue is open (the SQ
    // from the move to RTS, the RQ from the move to INIT), -1 before that
    // and again from a move to RESET, so that every post is refused (the
    // reference's errnos: ENOMEM for a send, EINVAL for a receive).
    int32_t post_gs = -1;
    uint32_t head = 0;  // WRs posted
    uint32_t tail = 0;  // WRs completed
    uint32_t cur_post = 0;  // SQ: WQEBBs posted
    ~Mlx5Wq();
};

// Where the next segment of a send WQE being written goes.
struct WqeCursor {
    uint8_t* ctrl = nullptr;
    uint8_t* seg = nullptr;
    uint32_t size = 0;  // in 16-byte units, the control segment included
    uint32_t idx = 0;  // the WQE's first basic block in the SQ
};

// An ibv_wr_* batch (between wr_start and wr_complete or wr_abort, under
// the SQ lock): the WQE being built and what the doorbell will need.
struct WrBatch {
    WqeCursor cur;
    uint32_t start_post = 0;  // cur_post at wr_start: abort goes back here
    uint32_t nreq = 0;
    int err = 0;  // the first failure; wr_complete returns it
    bool open = false;  // a WQE waits for its setters
    uint8_t pending = 0;  // setters it still needs (address, data)
    uint8_t opcode = 0;  // ibv_wr_opcode
    bool inl = false;
    uint8_t* last_ctrl = nullptr;
    uint32_t last_size = 0;
    bool last_inl = false;
    const uint8_t* start_fm = nullptr;  // the QP's fm_table at wr_start: abort restores it
};

struct Mlx5Qp {
    verbs::VerbsQp vqp;
    Mlx5Pd* parent = nullptr;  // the parent domain it was created on, if any
    Mlx5Wq sq;
    Mlx5Wq rq;
    DmaBuf buf;  // RQ, then SQ
    DmaBuf sq_buf;  // a raw packet QP's SQ, which the device takes apart
    DmaBuf dbrec_buf;
    volatile __be32* db;  // [0] receive counter, [1] send counter
    uint8_t* sq_end;
    Bfreg* bf;  // never null (register 0 when the kernel named none)
    // Which WQEs a doorbell copies through BlueFlame, [0] for others and
    // [1] for inline ones: those of 2 to bf_span 16-byte units, kept as
    // bf_span - 1 so that one unsigned compare tells (size - 2 < it).
    // 0: none (no BlueFlame buffer; [0] also when
    // MLX5_POST_SEND_PREFER_BF is 0).
    uint32_t bf_span[2];
    uint32_t uidx;
    uint32_t max_inline;
    uint32_t qpn8;  // the QP number as a control segment's qpn_ds has it
    // The control segment's fence/completion/solicited byte per send-flag
    // combination: fm_base for this QP (with CQ_UPDATE throughout when
    // every WR is signaled), fm_table the one the next WQE uses, which is
    // fm_base but right after a memory window operation: then the next
    // WQE waits for it (a small fence unless it asks for a full one).
    const uint8_t* fm_table;
    const uint8_t* fm_base;
    bool atomics;
    bool uidx_stored;
    WrBatch wr;
    // What mlx5dv_qp_ex_from_ibv_qp_ex hands out: the mlx5 send operations
    // asked for at creation (raw WQEs), the others null as the reference
    // leaves those not asked for.
    mlx5dv_qp_ex dv_qp;
};

// A shared receive queue: WQEs in a free list (next_wqe_index links), the
// device takes them in list order and names the one it used in the CQE.
struct Mlx5Srq {
    verbs::VerbsSrq vsrq;
    Mlx5Pd* parent = nullptr;  // the parent domain it was created on, if any
    OptionalSpinLock lock;
    DmaBuf buf;
    DmaBuf dbrec_buf;
    volatile __be32* db;
    uint64_t* wrid;
    uint32_t max;  // WQE slots (power of two)
    uint32_t max_gs;
    uint32_t wqe_shift;
    uint32_t head;
    uint32_t tail;
    uint32_t counter;  // WQEs posted (doorbell value)
    uint32_t srqn;
    // An XRC SRQ's receive completions name it by its own user index: the
    // index holds this stand-in QP, whose srq and recv_cq lead the poll
    // path to the SRQ and its CQ as any SRQ-attached QP's would (so the
    // path has no XRC case). Null for other SRQs.
    Mlx5Qp* xrc_rsc = nullptr;
    ~Mlx5Srq();
};

struct Mlx5Ah {
    ibv_ah ah;
    mlx5_wqe_av av;
    bool kernel;  // created by a kernel command (RoCE): destroy tells it
};

static_assert(std::is_standard_layout_v<Mlx5Cq> && std::is_standard_layout_v<Mlx5Qp> &&
              std::is_standard_layout_v<Mlx5Srq> && std::is_standard_layout_v<Mlx5Ah>);

inline Mlx5Cq* to_mcq(ibv_cq* cq) { return reinterpret_cast<Mlx5Cq*>(cq); }
inline Mlx5Cq* to_mcq(ibv_cq_ex* cq) { return reinterpret_cast<Mlx5Cq*>(cq); }
inline Mlx5Qp* to_mqp(ibv_qp* qp) { return reinterpret_cast<Mlx5Qp*>(qp); }
inline Mlx5Srq* to_msrq(ibv_srq* srq) { return reinterpret_cast<Mlx5Srq*>(srq); }
// The parent domain `pd` is, or null for a plain PD.
inline Mlx5Pd* parent_of(ibv_pd* pd) {
    Mlx5Pd* p = pd ? reinterpret_cast<Mlx5Pd*>(pd) : nullptr;
    return p && p->protection ? p : nullptr;
}
// A queue created on `parent` holds it; its destruction lets go.
inline void hold(Mlx5Pd* parent) {
    if (parent)
        parent->users.fetch_add(1, std::memory_order_relaxed);
}
inline void let_go(Mlx5Pd* parent) {
    if (parent)
        parent->users.fetch_sub(1, std::memory_order_relaxed);
}
inline Mlx5Ah* to_mah(ibv_ah* ah) { return reinterpret_cast<Mlx5Ah*>(ah); }

// Data path, stored in ibv_context::ops. Those that only touch our rings
// and the UAR page are noexcept (none allocates or blocks).
int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc) noexcept;
int arm_cq(ibv_cq* cq, int solicited_only) noexcept;
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) noexcept;
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;
int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind) noexcept;
void install_cq_ex_ops(Mlx5Cq& cq, bool single_threaded);
void install_dv_qp_ops(Mlx5Qp& qp, uint64_t dv_send_ops);
int query_rt_values(ibv_context* ctx, ibv_values_ex* values) noexcept;
ibv_pd* alloc_parent_domain_entry(ibv_context* ctx, ibv_parent_domain_init_attr* attr) noexcept;
ibv_td* alloc_td_entry(ibv_context* ctx, ibv_td_init_attr* attr) noexcept;
int dealloc_td_entry(ibv_td* td) noexcept;
ibv_dm* alloc_dm_entry(ibv_context* ctx, ibv_alloc_dm_attr* attr) noexcept;
ibv_counters* create_counters_entry(ibv_context* ctx, ibv_counters_init_attr* attr) noexcept;
int destroy_counters_entry(ibv_counters* counters) noexcept;
int attach_counters_entry(ibv_counters* counters, ibv_counter_attach_attr* attr, ibv_flow* flow) noexcept;
int read_counters_entry(ibv_counters* counters, uint64_t* values, uint32_t n, uint32_t flags) noexcept;
int modify_cq_entry(ibv_cq* cq, ibv_modify_cq_attr* attr) noexcept;
int free_dm_entry(ibv_dm* dm) noexcept;
ibv_mr* reg_dm_mr_entry(ibv_pd* pd, ibv_dm* dm, uint64_t offset, size_t length, unsigned int access) noexcept;
int advise_mr_entry(ibv_pd* pd, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge* sg_list,
                    uint32_t num_sge) noexcept;
void install_qp_ex_ops(ibv_qp_ex& qp);

// Removes the CQEs of the QP with user index `uidx` from cq (a QP reset or
// destroyed), handing back the SRQ WQEs they named.
void clean_cq(Mlx5Cq* cq, uint32_t uidx, Mlx5Srq* srq);
// An SRQ WQE the device used goes back to the free list.
void free_srq_wqe(Mlx5Srq& srq, uint32_t index) noexcept;

// Up to 32 bytes in at most four loads and stores: two copies that
// overlap in the middle (inline payloads are mostly this small, and a
// call to memcpy costs more than the copy).
[[gnu::always_inline]] inline void copy_small(uint8_t* dst, const uint8_t* src, size_t len) {
    auto pair = [&](auto word) {
        using W = decltype(word);
        W a;
        W b;
        std::memcpy(&a, src, sizeof(W));
        std::memcpy(&b, src + len - sizeof(W), sizeof(W));
        std::memcpy(dst, &a, sizeof(W));
        std::memcpy(dst + len - sizeof(W), &b, sizeof(W));
    };
    if (len >= 16) {
        struct W16 {
            uint64_t lo, hi;
        };
        pair(W16{});
    } else if (len >= 8) {
        pair(uint64_t{});
    } else if (len >= 4) {
        pair(uint32_t{});
    } else if (len) {
        dst[0] = src[0];
        dst[len / 2] = src[len / 2];
        dst[len - 1] = src[len - 1];
    }
}

// Memory barriers between our stores and the device's reads: the doorbell
// record after the WQEs; write-combined MMIO drained after a doorbell.
inline void to_device_barrier() { std::atomic_thread_fence(std::memory_order_release); }
inline void from_device_barrier() { std::atomic_thread_fence(std::memory_order_acquire); }
inline void flush_wc_writes() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_sfence();
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

inline Mlx5Context* to_mctx(ibv_context* c) { return static_cast<Mlx5Context*>(verbs::Context::from(c)); }

// Whether a device or context is one of this provider's (the mlx5dv_*
// entry points refuse others with EOPNOTSUPP, as the reference does).
bool is_mlx5_dev(const ibv_device* device);
bool is_mlx5_ctx(const ibv_context* context);

// The "%d.%d.%04d" rendering of mlx5 firmware versions.
void format_fw_ver(uint64_t raw, char* out, size_t len);

}  // namespace rdma::mlx5
