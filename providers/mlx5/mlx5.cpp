// The mlx5 provider: matching, the context open against mlx5_ib (user
// context negotiation, UAR pages, core clock), device queries, PD and MR.
// See mlx5.h for the layout of the provider; tests/uverbs-sim/doc/
// mlx5-contract.md for the kernel contract this follows.
#include "providers/mlx5/mlx5.h"

#include "libibverbs/cmd_ioctl.h"
#include "util/immortal.h"

#include <rdma/mlx5_user_ioctl_cmds.h>
#include <rdma/mlx5_user_ioctl_verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace rdma::mlx5 {

using namespace rdma::verbs;

namespace {

// The kernel's UAR pages are 4 KiB whatever the system page size; each
// carries two doorbell registers usable by user space at 0x800 (and
// 0x800 + bf_reg_size). The library numbers four slots per UAR, the last
// two never handed out, and the kernel's bfreg_index uses that numbering.
constexpr long kUarSize = 4096;
constexpr uint32_t kBfregsPerUar = 2;
constexpr uint32_t kSlotsPerUar = 4;
constexpr uint32_t kBfOffset = 0x800;
constexpr uint32_t kCqDoorbellOffset = 0x20;
constexpr uint32_t kMaxBfregs = 512 * kBfregsPerUar;
// CQE layout version 1: every CQE carries the user index of its queue.
constexpr uint8_t kCqeVersion1 = 1;

// What the library can do with the answer (lib_caps): 4 KiB UARs, and
// UARs allocated one by one as objects (a kernel with the UAR object then
// gives no static UARs, and the context can be imported).
constexpr uint64_t kLibCaps = MLX5_LIB_CAP_4K_UAR | MLX5_LIB_CAP_DYN_UAR;

int env_int(const char* name, int fallback) {
    const char* v = getenv(name);
    return v ? atoi(v) : fallback;
}

// The mmap offset of one page of the uverbs file: command and index.

}  // namespace

Env read_env() {
    Env e;
    const long page = sysconf(_SC_PAGESIZE);
    // The bfreg count: at least one system page's worth of UARs, rounded
    // up to whole UARs, and no more than the kernel's table.
    int total = env_int("MLX5_TOTAL_UUARS", e.total_uuars);
    if (total < 1) {
        e.error = EINVAL;
        return e;
    }
    const int per_page = static_cast<int>(page / kUarSize * kBfregsPerUar);
    if (total < per_page)
        total = per_page;
    total = (total + kBfregsPerUar - 1) / kBfregsPerUar * kBfregsPerUar;
    if (total > static_cast<int>(kMaxBfregs)) {
        e.error = ENOMEM;
        return e;
    }
    e.total_uuars = total;
    // Dedicated (low-latency) registers: four unless set, never fewer than
    // those beyond the twelve shared medium ones; one must stay shared. A
    // negative setting is refused as invalid, too many as a lack of room.
    int low = env_int("MLX5_NUM_LOW_LAT_UUARS", 4);
    if (low < 0) {
        e.error = EINVAL;
        return e;
    }
    if (low < total - 12)
        low = total - 12;
    if (low > total - 1) {
        e.error = ENOMEM;
        return e;
    }
    e.low_lat_uuars = low;
    e.shut_up_bf = env_int("MLX5_SHUT_UP_BF", 0) != 0;
    e.single_threaded = env_int("MLX5_SINGLE_THREADED", 0) == 1;
    // BlueFlame for every lone WQE that fits unless set to "0".
    if (const char* v = getenv("MLX5_POST_SEND_PREFER_BF"))
        e.prefer_bf = strcmp(v, "0") != 0;
    e.cqe_size = env_int("MLX5_CQE_SIZE", 64);
    if (const char* v = getenv("MLX5_SCATTER_TO_CQE"))
        e.scatter_to_cqe = strcmp(v, "0") != 0;
    if (const char* v = getenv("MLX5_STALL_CQ_POLL"))
        e.stall = strcmp(v, "0") != 0;
    e.stall_loops = env_int("MLX5_STALL_NUM_LOOP", e.stall_loops);
    auto cycles = [](const char* name, uint32_t dflt) {
        return static_cast<uint32_t>(std::max(env_int(name, static_cast<int>(dflt)), 0));
    };
    e.stall_min = cycles("MLX5_STALL_CQ_POLL_MIN", e.stall_min);
    e.stall_max = std::max(cycles("MLX5_STALL_CQ_POLL_MAX", e.stall_max), e.stall_min);
    e.stall_inc = cycles("MLX5_STALL_CQ_INC_STEP", e.stall_inc);
    e.stall_dec = cycles("MLX5_STALL_CQ_DEC_STEP", e.stall_dec);
    if (const char* m = getenv("MLX5_DEBUG_MASK"))
        e.debug_mask = static_cast<uint32_t>(strtoul(m, nullptr, 0));
    return e;
}

void format_fw_ver(uint64_t raw, char* out, size_t len) {
    snprintf(out, len, "%d.%d.%04d", static_cast<int>((raw >> 32) & 0xffff), static_cast<int>((raw >> 16) & 0xffff),
             static_cast<int>(raw & 0xffff));
}

// ------------------------------------------------------------------ context

Mlx5Context::Mlx5Context(Device& device, int cmd_fd) : Context(device, cmd_fd) {}

Mlx5Context::~Mlx5Context() {
    release_uar_objects();
    for (void* p : uar_pages_)
        munmap(p, static_cast<size_t>(page_size_));
    if (clock_page_)
        munmap(clock_page_, static_cast<size_t>(page_size_));
    if (clock_info_)
        munmap(const_cast<mlx5_ib_clock_info*>(clock_info_), static_cast<size_t>(page_size_));
    for (auto& b : uidx_table_)
        delete b.load(std::memory_order_relaxed);
    if (debug_file_)
        fclose(debug_file_);
}

int64_t Mlx5Context::store_uidx(Mlx5Qp* qp) {
    std::lock_guard lk(uidx_mu_);
    for (uint32_t top = 0; top <= kUidxTopMask; ++top) {
        UidxBlock* b = uidx_table_[top].load(std::memory_order_relaxed);
        if (!b) {
            b = new (std::nothrow) UidxBlock;
            if (!b)
                return -1;
            uidx_table_[top].store(b, std::memory_order_release);
        }
        if (b->used == kUidxBlockMask + 1)
            continue;
        for (uint32_t i = 0; i <= kUidxBlockMask; ++i) {
            if (!b->qps[i]) {
                __atomic_store_n(&b->qps[i], qp, __ATOMIC_RELEASE);
                ++b->used;
                return static_cast<int64_t>(top << kUidxShift | i);
            }
        }
    }
    return -1;
}

void Mlx5Context::clear_uidx(uint32_t uidx) {
    std::lock_guard lk(uidx_mu_);
    UidxBlock* b = uidx_table_[(uidx >> kUidxShift) & kUidxTopMask].load(std::memory_order_relaxed);
    if (b && b->qps[uidx & kUidxBlockMask]) {
        b->qps[uidx & kUidxBlockMask] = nullptr;
        --b->used;
    }
}

// ------------------------------------------------------------- DMA memory

namespace {

enum class AllocType { Anon, Huge, Contig, PreferHuge, PreferContig, All };

// <component>_ALLOC_TYPE, read as the reference reads it (any case; an
// unknown value leaves the default).
AllocType alloc_type(const char* component) {
    if (!component)
        return AllocType::Anon;
    char name[64];
    std::snprintf(name, sizeof name, "%s_ALLOC_TYPE", component);
    const char* v = std::getenv(name);
    if (!v)
        return AllocType::Anon;
    static constexpr struct {
        const char* name;
        AllocType type;
    } kNames[] = {{"ANON", AllocType::Anon},
                  {"HUGE", AllocType::Huge},
                  {"CONTIG", AllocType::Contig},
                  {"PREFER_CONTIG", AllocType::PreferContig},
                  {"PREFER_HUGE", AllocType::PreferHuge},
                  {"ALL", AllocType::All}};
    for (const auto& n : kNames)
        if (!strcasecmp(v, n.name))
            return n.type;
    return AllocType::Anon;
}

constexpr size_t kHugePage = size_t(2) << 20;

// A System V segment of huge pages (removed at once: it lives while
// attached). Null when the host has none to give.
void* alloc_huge(size_t len) {
    const int id = shmget(IPC_PRIVATE, len, SHM_HUGETLB | IPC_CREAT | SHM_R | SHM_W);
    if (id < 0)
        return nullptr;
    void* p = shmat(id, nullptr, 0);
    shmctl(id, IPC_RMID, nullptr);
    return p == reinterpret_cast<void*>(-1) ? nullptr : p;
}

// Contiguous pages from the device file, the largest block that covers
// `len` first, then smaller ones; null with errno set when none.
void* alloc_contig(int cmd_fd, size_t len, size_t page) {
    int order = 0;
    while ((page << order) < len)
        ++order;
    errno = ENOSYS;
    for (; order >= 0 && cmd_fd >= 0; --order) {
        const off_t index = off_t(MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES) << 8 | order;
        void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, cmd_fd, index * static_cast<off_t>(page));
        if (p != MAP_FAILED)
            return p;
    }
    return nullptr;
}

}  // namespace

int DmaBuf::alloc(size_t size, const BufSource& from) {
    reset();
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t len = (size + page - 1) / page * page;
    void* p = nullptr;
    Kind kind = Kind::Heap;
    if (from.parent && from.parent->alloc) {
        // The parent domain's allocator, asked for page multiples on page
        // boundaries; it may hand the choice back to us.
        ibv_pd* pd = const_cast<ibv_pd*>(&from.parent->pd);
        p = from.parent->alloc(pd, from.parent->pd_context, len, page, from.res_type);
        if (p == IBV_ALLOCATOR_USE_DEFAULT) {
            p = nullptr;
        } else if (!p) {
            return ENOMEM;
        } else {
            kind = Kind::Parent;
            parent_pd_ = pd;
            parent_ctx_ = from.parent->pd_context;
            parent_free_ = from.parent->free;
            res_type_ = from.res_type;
        }
    }
    if (!p && from.ext) {
        // The application's memory, page-rounded as ours would be.
        p = from.ext->alloc(len, from.ext->data);
        if (!p)
            return ENOMEM;
        kind = Kind::Ext;
        ext_ = *from.ext;
    } else if (!p) {
        const AllocType type = alloc_type(from.component);
        if (type == AllocType::Huge || type == AllocType::PreferHuge || type == AllocType::All) {
            const size_t huge_len = (len + kHugePage - 1) / kHugePage * kHugePage;
            p = alloc_huge(huge_len);
            if (p) {
                len = huge_len;
                kind = Kind::HugeShm;
            }
        }
        if (!p && (type == AllocType::Contig || type == AllocType::PreferContig || type == AllocType::All)) {
            p = alloc_contig(from.cmd_fd, len, page);
            if (p)
                kind = Kind::DeviceMap;
            else if (type == AllocType::Contig)
                return errno;
        }
        if (!p && type == AllocType::Huge)
            return ENOMEM;
        if (!p && posix_memalign(&p, page, len))
            return ENOMEM;
    }
    std::memset(p, 0, len);
    addr_ = static_cast<uint8_t*>(p);
    size_ = len;
    kind_ = kind;
    if (ibv_dontfork_range(p, len)) {
        addr_ = nullptr;  // reset() would undo a dontfork that never was
        release(p);
        return ENOMEM;
    }
    return 0;
}

void DmaBuf::release(void* p) {
    switch (kind_) {
    case Kind::Ext: ext_.free(p, ext_.data); break;
    case Kind::Parent:
        if (parent_free_)
            parent_free_(parent_pd_, parent_ctx_, p, res_type_);
        break;
    case Kind::HugeShm: shmdt(p); break;
    case Kind::DeviceMap: munmap(p, size_); break;
    case Kind::Heap: free(p); break;
    }
    size_ = 0;
    kind_ = Kind::Heap;
    ext_ = {};
    parent_free_ = nullptr;
}

void DmaBuf::reset() {
    if (!addr_)
        return;
    ibv_dofork_range(addr_, size_);
    uint8_t* p = addr_;
    addr_ = nullptr;
    release(p);
}

void* Mlx5Context::cq_doorbell() const {
    return cq_uar_reg_ ? static_cast<char*>(cq_uar_reg_) + kCqDoorbellOffset : nullptr;
}

// The environment, the debug file and the data-path entry points: what
// every context sets up before it talks to the kernel.
void Mlx5Context::set_ops() {
    if (const char* path = getenv("MLX5_DEBUG_FILE"))
        debug_file_ = fopen(path, "a");
    gethostname(hostname_, sizeof(hostname_) - 1);
    ibv_context_ops& ops = ibv()->ops;
    ops.poll_cq = poll_cq;
    ops.req_notify_cq = arm_cq;
    ops.post_send = post_send;
    ops.post_recv = post_recv;
    ops.post_srq_recv = post_srq_recv;
    ops.bind_mw = bind_mw;
    vctx()->query_rt_values = query_rt_values;
    vctx()->alloc_parent_domain = alloc_parent_domain_entry;
    vctx()->alloc_td = alloc_td_entry;
    vctx()->dealloc_td = dealloc_td_entry;
    vctx()->advise_mr = advise_mr_entry;
    vctx()->alloc_dm = alloc_dm_entry;
    vctx()->free_dm = free_dm_entry;
    vctx()->reg_dm_mr = reg_dm_mr_entry;
    vctx()->modify_cq = modify_cq_entry;
    vctx()->create_counters = create_counters_entry;
    vctx()->destroy_counters = destroy_counters_entry;
    vctx()->attach_counters_point_flow = attach_counters_entry;
    vctx()->read_counters = read_counters_entry;
}

int Mlx5Context::open(const mlx5dv_context_attr* attr) {
    page_size_ = sysconf(_SC_PAGESIZE);
    // mlx5dv_open_device: no attribute beyond the flags is known, and of
    // the flags only DEVX (which then must be granted: no fallback).
    if (attr && (attr->comp_mask || (attr->flags & ~uint64_t(MLX5DV_CONTEXT_FLAGS_DEVX))))
        return EINVAL;
    const bool devx_only = attr && (attr->flags & MLX5DV_CONTEXT_FLAGS_DEVX);
    env_ = read_env();
    if (env_.error)
        return env_.error;
    set_ops();
    if (int e = get_context(devx_only))
        return e;
    if (int e = dyn_uar_ ? setup_dyn_uars() : map_uars(page_size_)) {
        release_uar_objects();
        return e;
    }
    probe_device();
    return 0;
}

int Mlx5Context::import() {
    page_size_ = sysconf(_SC_PAGESIZE);
    env_ = read_env();
    if (env_.error)
        return env_.error;
    set_ops();
    mlx5_ib_alloc_ucontext_resp resp{};
    if (int e = import_kernel_context(MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX, &resp, sizeof(resp)))
        return e;
    // Static UARs are the first context's: its registers cannot be shared.
    if (resp.tot_bfregs)
        return EINVAL;
    if (int e = take_context_answer(resp))
        return e;
    if (int e = setup_dyn_uars()) {
        release_uar_objects();
        return e;
    }
    probe_device();
    return 0;
}

// GET_CONTEXT with the mlx5 request. Kernels differ in how much of the
// request they know: the full struct is tried first, then without lib_caps,
// then without max_cqe_version's tail, and the whole ladder again without
// DEVX if the kernel refused every DEVX attempt (unless the application
// asked for DEVX, mlx5dv_open_device). The first accepted wins.
int Mlx5Context::get_context(bool devx_only) {
    mlx5_ib_alloc_ucontext_req_v2 req{};
    req.total_num_bfregs = static_cast<uint32_t>(env_.total_uuars);
    req.num_low_latency_bfregs = static_cast<uint32_t>(env_.low_lat_uuars);
    req.max_cqe_version = kCqeVersion1;
    req.lib_caps = kLibCaps;
    constexpr size_t kLengths[] = {
        sizeof(mlx5_ib_alloc_ucontext_req_v2),
        offsetof(mlx5_ib_alloc_ucontext_req_v2, lib_caps),
        offsetof(mlx5_ib_alloc_ucontext_req_v2, reserved0),
    };
    mlx5_ib_alloc_ucontext_resp resp{};
    int err = EINVAL;
    bool done = false;
    for (uint32_t flags : {uint32_t(MLX5_IB_ALLOC_UCTX_DEVX), uint32_t(0)}) {
        if (devx_only && !flags)
            break;
        req.flags = flags;
        devx_ = flags != 0;
        for (size_t len : kLengths) {
            std::memset(&resp, 0, sizeof(resp));
            err = init_kernel_context(&req, len, &resp, sizeof(resp));
            if (!err) {
                done = true;
                break;
            }
        }
        if (done)
            break;
    }
    if (!done)
        return err;
    return take_context_answer(resp);
}

int Mlx5Context::take_context_answer(const mlx5_ib_alloc_ucontext_resp& resp) {
    caps_.bf_reg_size = resp.bf_reg_size;
    caps_.tot_bfregs = resp.tot_bfregs;
    caps_.cache_line_size = resp.cache_line_size;
    caps_.max_sq_desc_sz = resp.max_sq_desc_sz;
    caps_.max_rq_desc_sz = resp.max_rq_desc_sz;
    caps_.max_send_wqebb = resp.max_send_wqebb;
    caps_.max_recv_wr = resp.max_recv_wr;
    caps_.max_srq_recv_wr = resp.max_srq_recv_wr;
    caps_.num_ports = resp.num_ports;
    caps_.cqe_version = resp.cqe_version;
    caps_.cmds_supp_uhw = resp.cmds_supp_uhw;
    caps_.eth_min_inline = resp.eth_min_inline;
    caps_.comp_mask = resp.comp_mask;
    caps_.dump_fill_mkey = resp.dump_fill_mkey;
    caps_.flow_action_flags = resp.flow_action_flags;
    caps_.num_dyn_bfregs = resp.num_dyn_bfregs;
    caps_.clock_info_versions = resp.clock_info_versions;
    // Completions are parsed in the version-1 layout (user index in every
    // CQE), which every ConnectX-4 and later kernel grants.
    if (caps_.cqe_version != kCqeVersion1) {
        fprintf(stderr, "mlx5: kernel granted CQE version %u, only version 1 is supported\n", caps_.cqe_version);
        return EINVAL;
    }
    if (resp.log_uar_size == 0 && resp.num_uars_per_page == 0) {
        // An old kernel: one UAR per system page.
        uar_size_log_ = 0;
        uars_per_page_ = 1;
    } else {
        uar_size_log_ = resp.log_uar_size;
        uars_per_page_ = resp.num_uars_per_page;
    }
    if (caps_.comp_mask & MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET)
        map_core_clock(page_size_, resp.hca_core_clock_offset);
    if (caps_.clock_info_versions & (1u << MLX5_IB_CLOCK_INFO_V1))
        map_clock_info(page_size_);
    // No static UARs: the kernel took the offer of dynamic ones.
    dyn_uar_ = caps_.tot_bfregs == 0;
    return 0;
}

// The kernel's clock-info page (version 1): what converts the device clock
// to nanoseconds (mlx5dv_get_clock_info). Without it the conversion is not
// offered; the open goes on.
void Mlx5Context::map_clock_info(long page) {
    void* p = mmap(nullptr, static_cast<size_t>(page), PROT_READ, MAP_SHARED, cmd_fd(),
                   mmap_offset(page, MLX5_IB_MMAP_CLOCK_INFO, MLX5_IB_CLOCK_INFO_V1));
    if (p != MAP_FAILED)
        clock_info_ = static_cast<const volatile mlx5_ib_clock_info*>(p);
}

// Static UARs: tot_bfregs registers, two per UAR, uars_per_page UARs per
// system page; each page mapped once. MLX5_SHUT_UP_BF asks for non-cached
// mappings first.
int Mlx5Context::map_uars(long page) {
    const uint32_t per_page = uars_per_page_ ? uars_per_page_ : 1;
    const uint32_t uar_bytes = uar_size_log_ ? (1u << uar_size_log_) : static_cast<uint32_t>(page);
    const uint32_t pages = caps_.tot_bfregs / (per_page * kBfregsPerUar);
    if (pages == 0)
        return EINVAL;
    uar_pages_.reserve(pages);
    nbfregs_ = pages * per_page * kSlotsPerUar;
    bfregs_.reset(new (std::nothrow) Bfreg[nbfregs_]);
    if (!bfregs_)
        return ENOMEM;
    // The kernel hands out the last low_lat_uuars registers one QP each
    // and shares the others (but register 0) between QPs.
    const uint32_t dedicated_from = caps_.tot_bfregs - static_cast<uint32_t>(env_.low_lat_uuars);
    for (uint32_t i = 0; i < pages; ++i) {
        void* p = MAP_FAILED;
        off_t offset = mmap_offset(page, MLX5_IB_MMAP_NC_PAGE, i);
        if (env_.shut_up_bf)
            p = mmap(nullptr, static_cast<size_t>(page), PROT_WRITE, MAP_SHARED, cmd_fd(), offset);
        if (p == MAP_FAILED) {
            offset = mmap_offset(page, MLX5_IB_MMAP_REGULAR_PAGE, i);
            p = mmap(nullptr, static_cast<size_t>(page), PROT_WRITE, MAP_SHARED, cmd_fd(), offset);
        }
        if (p == MAP_FAILED)
            return errno ? errno : ENOMEM;
        uar_pages_.push_back(p);
        if (i == 0)
            cq_uar_reg_ = p;
        for (uint32_t j = 0; j < per_page; ++j) {
            for (uint32_t k = 0; k < kBfregsPerUar; ++k) {
                const uint32_t index = (i * per_page + j) * kSlotsPerUar + k;
                Bfreg& b = bfregs_[index];
                b.reg = static_cast<char*>(p) + j * uar_bytes + kBfOffset + k * caps_.bf_reg_size;
                // Register 0 is shared by every QP without its own: never
                // BlueFlame. MLX5_SHUT_UP_BF turns BlueFlame off for all.
                b.buf_size = (index == 0 || env_.shut_up_bf) ? 0 : caps_.bf_reg_size / 2;
                b.dv_size = index == 0 ? 0 : caps_.bf_reg_size / 2;
                b.uar_mmap_offset = offset;
                const uint32_t usable = (i * per_page + j) * kBfregsPerUar + k;
                b.shared = index != 0 && usable < dedicated_from && !env_.single_threaded;
            }
        }
    }
    return 0;
}

// ------------------------------------------------------------ dynamic UARs

// One UAR object: MLX5_IB_METHOD_UAR_OBJ_ALLOC, then its page mapped
// write-only at the offset the kernel answered. Kept for the context's
// life (release_uar_objects).
int Mlx5Context::alloc_uar_page(uint32_t type, void*& page, uint32_t& page_id, off_t& offset) {
    uint64_t mmap_offset = 0;
    uint32_t length = 0;
    page_id = 0;
    Ioctl<5> cmd(MLX5_IB_OBJECT_UAR, MLX5_IB_METHOD_UAR_OBJ_ALLOC, driver_id());
    ib_uverbs_attr& handle = cmd.idr_out(MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE);
    cmd.const_in(MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, type);
    cmd.out(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, mmap_offset);
    cmd.out(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, length);
    cmd.out(MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, page_id);
    if (int e = cmd.execute(cmd_fd()))
        return e;
    const auto h = static_cast<uint32_t>(handle.data);
    auto destroy = [&] {
        Ioctl<1> d(MLX5_IB_OBJECT_UAR, MLX5_IB_METHOD_UAR_OBJ_DESTROY, driver_id());
        d.idr_in(MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE, h);
        (void)d.execute(cmd_fd());
    };
    try {
        uar_objects_.reserve(uar_objects_.size() + 1);
    } catch (const std::bad_alloc&) {
        destroy();
        return ENOMEM;
    }
    void* p = mmap(nullptr, length, PROT_WRITE, MAP_SHARED, cmd_fd(), static_cast<off_t>(mmap_offset));
    if (p == MAP_FAILED) {
        const int e = errno ? errno : ENOMEM;
        destroy();
        return e;
    }
    uar_objects_.push_back(UarObject{h, p});
    page = p;
    offset = static_cast<off_t>(mmap_offset);
    return 0;
}

void Mlx5Context::release_uar_objects() {
    for (const UarObject& u : uar_objects_) {
        munmap(u.page, static_cast<size_t>(page_size_));
        Ioctl<1> d(MLX5_IB_OBJECT_UAR, MLX5_IB_METHOD_UAR_OBJ_DESTROY, driver_id());
        d.idr_in(MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE, u.handle);
        (void)d.execute(cmd_fd());
    }
    uar_objects_.clear();
}

// The singleton non-cached page, at open: CQ arm doorbells go to its
// base, QPs without BlueFlame (MLX5_SHUT_UP_BF, a device that does not
// write-combine) share its register.
int Mlx5Context::setup_dyn_uars() {
    void* page;
    uint32_t page_id;
    off_t offset;
    if (int e = alloc_uar_page(MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC, page, page_id, offset))
        return e;
    cq_uar_reg_ = page;
    nc_bfreg_.base = page;
    nc_bfreg_.reg = static_cast<char*>(page) + kBfOffset;
    nc_bfreg_.uar_object = true;
    nc_bfreg_.page_id = page_id;
    nc_bfreg_.uar_mmap_offset = offset;
    nc_bfreg_.shared = !env_.single_threaded;
    return 0;
}

// A BlueFlame page as an object: its two registers, for `pool`.
int Mlx5Context::add_bf_page(Bfreg::Pool pool, std::unique_ptr<Bfreg> (&regs)[2]) {
    for (auto& r : regs) {
        r.reset(new (std::nothrow) Bfreg);
        if (!r)
            return ENOMEM;
    }
    void* page;
    uint32_t page_id;
    off_t offset;
    if (int e = alloc_uar_page(MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF, page, page_id, offset))
        return e;
    for (uint32_t k = 0; k < kBfregsPerUar; ++k) {
        Bfreg& b = *regs[k];
        b.base = page;
        b.reg = static_cast<char*>(page) + kBfOffset + k * caps_.bf_reg_size;
        b.buf_size = caps_.bf_reg_size / 2;
        b.dv_size = caps_.bf_reg_size / 2;
        b.uar_mmap_offset = offset;
        b.uar_object = true;
        b.page_id = page_id;
        b.pool = pool;
        b.shared = pool == Bfreg::Pool::Shared && !env_.single_threaded;
    }
    return 0;
}

// As the reference hands them out: the first low_lat_uuars QPs get a
// register of their own (a returned one first, oldest first); later QPs
// share the others, up to total_uuars - low_lat_uuars of them: an unused
// one first, else a new page while there is room, else the least used
// (the earliest of those).
Bfreg* Mlx5Context::acquire_qp_bfreg() {
    if (env_.shut_up_bf || !caps_.bf_reg_size)
        return &nc_bfreg_;
    std::lock_guard guard(uar_mu_);
    try {
        qp_bfregs_.reserve(qp_bfregs_.size() + kBfregsPerUar);
        // (every dedicated register may come back: release never grows it)
        free_dedicated_.reserve(dedicated_count_ + kBfregsPerUar);
        shared_.reserve(shared_.size() + kBfregsPerUar);
    } catch (const std::bad_alloc&) {
        errno = ENOMEM;
        return nullptr;
    }
    const uint32_t max_dedicated = static_cast<uint32_t>(env_.low_lat_uuars);
    const uint32_t max_shared = static_cast<uint32_t>(env_.total_uuars - env_.low_lat_uuars);
    const bool dedicated = !free_dedicated_.empty() || dedicated_count_ < max_dedicated;
    if (dedicated && free_dedicated_.empty()) {
        std::unique_ptr<Bfreg> regs[kBfregsPerUar];
        if (int e = add_bf_page(Bfreg::Pool::Dedicated, regs)) {
            errno = e;
            return nullptr;
        }
        for (auto& r : regs) {
            free_dedicated_.push_back(r.get());
            qp_bfregs_.push_back(std::move(r));
        }
        dedicated_count_ += kBfregsPerUar;
    }
    if (dedicated) {
        Bfreg* bf = free_dedicated_.front();
        free_dedicated_.erase(free_dedicated_.begin());
        return bf;
    }
    Bfreg* pick = nullptr;
    for (Bfreg* b : shared_)
        if (!b->users) {
            pick = b;
            break;
        }
    if (!pick && shared_.size() < max_shared) {
        std::unique_ptr<Bfreg> regs[kBfregsPerUar];
        if (int e = add_bf_page(Bfreg::Pool::Shared, regs)) {
            errno = e;
            return nullptr;
        }
        pick = regs[0].get();
        for (auto& r : regs) {
            shared_.push_back(r.get());
            qp_bfregs_.push_back(std::move(r));
        }
    }
    if (!pick)
        for (Bfreg* b : shared_)
            if (!pick || b->users < pick->users)
                pick = b;
    if (!pick) {  // no shared register allowed at all
        errno = ENOMEM;
        return nullptr;
    }
    ++pick->users;
    return pick;
}

void Mlx5Context::release_qp_bfreg(Bfreg* bf) {
    if (!bf || bf->pool == Bfreg::Pool::None)
        return;
    std::lock_guard guard(uar_mu_);
    if (bf->pool == Bfreg::Pool::Dedicated)
        free_dedicated_.push_back(bf);  // room reserved when it was made
    else if (bf->users)
        --bf->users;
}

// mlx5dv_devx_alloc_uar, as the reference answers it. BlueFlame: a
// register of the application's own from the thread domains' pages; on a
// kernel before UAR objects the page id comes from DEVX (QUERY_UAR), so
// without DEVX the kernel's refusal. Non-cached: the context's one NC
// register, shared (EOPNOTSUPP without UAR objects).
struct DevxUar {
    mlx5dv_devx_uar pub;
    Bfreg* bf;
    Mlx5Context* ctx;
};

mlx5dv_devx_uar* Mlx5Context::dv_alloc_uar(uint32_t flags) {
    if (flags != MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF && flags != MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    if (flags == MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC && !dyn_uar_) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    std::unique_ptr<DevxUar> u(new (std::nothrow) DevxUar{});
    if (!u) {
        errno = ENOMEM;
        return nullptr;
    }
    Bfreg* bf = flags == MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC ? &nc_bfreg_ : take_own_bfreg();
    if (!bf)
        return nullptr;
    uint32_t page_id = bf->page_id;
    if (!bf->uar_object) {
        Ioctl<2> cmd(MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_QUERY_UAR, driver_id());
        cmd.in(MLX5_IB_ATTR_DEVX_QUERY_UAR_USER_IDX, bf->dyn_index);
        cmd.out(MLX5_IB_ATTR_DEVX_QUERY_UAR_DEV_IDX, page_id);
        if (int e = cmd.execute(cmd_fd())) {
            release_own_bfreg(bf);
            errno = e;
            return nullptr;
        }
    }
    u->bf = bf;
    u->ctx = this;
    u->pub.reg_addr = bf->reg;
    u->pub.base_addr = bf->base;
    u->pub.page_id = page_id;
    u->pub.mmap_off = bf->uar_mmap_offset;
    u->pub.comp_mask = 0;
    return &u.release()->pub;
}

void Mlx5Context::free_devx_uar(mlx5dv_devx_uar* pub) { reinterpret_cast<DevxUar*>(pub)->ctx->dv_free_uar(pub); }

void Mlx5Context::dv_free_uar(mlx5dv_devx_uar* pub) {
    auto* u = reinterpret_cast<DevxUar*>(pub);
    Bfreg* bf = u->bf;
    delete u;
    if (bf != &nc_bfreg_)  // the shared NC register stays the context's
        release_own_bfreg(bf);
}

void Mlx5Context::release_own_bfreg(Bfreg* bf) {
    std::lock_guard guard(dyn_mu_);
    free_dyn_bfregs_.push_back(bf);  // room reserved when its page came
}

// The core clock page: read-only, the counter at `offset` inside it. A
// failure only costs the raw clock (completion timestamps, mlx5dv).
void Mlx5Context::map_core_clock(long page, uint64_t offset) {
    void* p = mmap(nullptr, static_cast<size_t>(page), PROT_READ, MAP_SHARED, cmd_fd(),
                   mmap_offset(page, MLX5_IB_MMAP_CORE_CLOCK, 0));
    if (p == MAP_FAILED) {
        fprintf(stderr, "mlx5: the device has a core clock, but its page could not be mapped\n");
        return;
    }
    clock_page_ = p;
    core_clock_ = reinterpret_cast<const volatile uint32_t*>(static_cast<char*>(p) + (offset % page));
}

// What objects need to know before the application asks: the atomic
// capability (QPs get atomics only when the device has them) and the link
// layer of each port. A failed query leaves the capability absent, as in
// the reference; it does not fail the open.
void Mlx5Context::probe_device() {
    ibv_device_attr_ex attr{};
    uint64_t raw_fw = 0;
    mlx5_ib_query_device_resp drv{};
    Udata u;
    if (caps_.cmds_supp_uhw & MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE) {
        u.out = &drv;
        u.out_len = sizeof(drv);
    }
    if (cmd_query_device_ex(nullptr, &attr, sizeof(attr), &raw_fw, u) == 0) {
        caps_.atomic_cap = attr.orig_attr.atomic_cap;
        caps_.max_cqe = static_cast<uint32_t>(attr.orig_attr.max_cqe);
        caps_.device_cap_flags_ex = attr.device_cap_flags_ex;
        caps_.max_dm_size = attr.max_dm_size;
        // The mlx5 capabilities mlx5dv reports (zero without driver data).
        if (drv.mlx5_ib_support_multi_pkt_send_wqes & MLX5_IB_ALLOW_MPW)
            caps_.vendor_flags |= MLX5DV_CONTEXT_FLAGS_MPW_ALLOWED;
        if (drv.mlx5_ib_support_multi_pkt_send_wqes & MLX5_IB_SUPPORT_EMPW)
            caps_.vendor_flags |= MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW;
        if (drv.flags & MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_COMP)
            caps_.vendor_flags |= MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP;
        if (drv.flags & MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_PAD)
            caps_.vendor_flags |= MLX5DV_CONTEXT_FLAGS_CQE_128B_PAD;
        if (drv.flags & MLX5_IB_QUERY_DEV_RESP_PACKET_BASED_CREDIT_MODE)
            caps_.vendor_flags |= MLX5DV_CONTEXT_FLAGS_PACKET_BASED_CREDIT_MODE;
        caps_.cqe_comp_caps.max_num = drv.cqe_comp_caps.max_num;
        caps_.cqe_comp_caps.supported_format = drv.cqe_comp_caps.supported_format;
        caps_.sw_parsing_caps.sw_parsing_offloads = drv.sw_parsing_caps.sw_parsing_offloads;
        caps_.sw_parsing_caps.supported_qpts = drv.sw_parsing_caps.supported_qpts;
        caps_.striding_rq_caps.min_single_stride_log_num_of_bytes =
            drv.striding_rq_caps.min_single_stride_log_num_of_bytes;
        caps_.striding_rq_caps.max_single_stride_log_num_of_bytes =
            drv.striding_rq_caps.max_single_stride_log_num_of_bytes;
        caps_.striding_rq_caps.min_single_wqe_log_num_of_strides =
            drv.striding_rq_caps.min_single_wqe_log_num_of_strides;
        caps_.striding_rq_caps.max_single_wqe_log_num_of_strides =
            drv.striding_rq_caps.max_single_wqe_log_num_of_strides;
        caps_.striding_rq_caps.supported_qpts = drv.striding_rq_caps.supported_qpts;
        caps_.tunnel_offloads_caps = drv.tunnel_offloads_caps;
        caps_.dci_streams_caps.max_log_num_concurent = drv.dci_streams_caps.max_log_num_concurent;
        caps_.dci_streams_caps.max_log_num_errored = drv.dci_streams_caps.max_log_num_errored;
    }
    const unsigned ports = caps_.num_ports < 2 ? caps_.num_ports : 2;
    for (unsigned p = 1; p <= ports; ++p) {
        ibv_port_attr pa{};
        if (query_port(static_cast<uint8_t>(p), &pa, sizeof(pa)) == 0)
            caps_.link_layer[p - 1] = pa.link_layer;
    }
}

int Mlx5Context::query_device_ex(const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr, size_t attr_size) {
    uint64_t raw_fw = 0;
    mlx5_ib_query_device_resp drv{};
    Udata u;
    if ((caps_.cmds_supp_uhw & MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE) && attr_size > sizeof(ibv_device_attr)) {
        u.out = &drv;
        u.out_len = sizeof(drv);
    }
    if (int e = cmd_query_device_ex(input, attr, attr_size, &raw_fw, u))
        return e;
    format_fw_ver(raw_fw, attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver));
    // The driver's part: offload capabilities the core response lacks.
    auto fits = [&](size_t end) { return attr_size >= end; };
    using A = ibv_device_attr_ex;
    if (u.out && fits(offsetof(A, tso_caps) + sizeof(attr->tso_caps))) {
        attr->tso_caps.max_tso = drv.tso_caps.max_tso;
        attr->tso_caps.supported_qpts = drv.tso_caps.supported_qpts;
    }
    if (u.out && fits(offsetof(A, rss_caps) + sizeof(attr->rss_caps))) {
        attr->rss_caps.rx_hash_fields_mask = drv.rss_caps.rx_hash_fields_mask;
        attr->rss_caps.rx_hash_function = drv.rss_caps.rx_hash_function;
    }
    if (u.out && fits(offsetof(A, packet_pacing_caps) + sizeof(attr->packet_pacing_caps))) {
        attr->packet_pacing_caps.qp_rate_limit_min = drv.packet_pacing_caps.qp_rate_limit_min;
        attr->packet_pacing_caps.qp_rate_limit_max = drv.packet_pacing_caps.qp_rate_limit_max;
        attr->packet_pacing_caps.supported_qpts = drv.packet_pacing_caps.supported_qpts;
    }
    return 0;
}

// ---------------------------------------------------------------------- PD

ibv_pd* Mlx5Context::alloc_pd() {
    Mlx5Pd* pd = create_object<Mlx5Pd>([&](Mlx5Pd& p) {
        mlx5_ib_alloc_pd_resp resp{};
        int e = cmd_alloc_pd(&p.pd, Udata{nullptr, 0, &resp, sizeof(resp)});
        p.pdn = resp.pdn;
        return e;
    });
    return pd ? &pd->pd : nullptr;
}

// ibv_import_pd: a PD of the command fd's user context by its handle,
// with its number from mlx5's PD query. The import owns nothing: unimport
// frees the library's side only (dealloc would free the PD for everyone).
ibv_pd* Mlx5Context::import_pd(uint32_t pd_handle) {
    Mlx5Pd* pd = create_object<Mlx5Pd>([&](Mlx5Pd& p) {
        uint32_t pdn = 0;
        Ioctl<2> cmd(UVERBS_OBJECT_PD, MLX5_IB_METHOD_PD_QUERY, driver_id());
        cmd.idr_in(MLX5_IB_ATTR_QUERY_PD_HANDLE, pd_handle);
        cmd.out(MLX5_IB_ATTR_QUERY_PD_RESP_PDN, pdn);
        if (int e = cmd.execute(cmd_fd()))
            return e;
        p.pd.context = ibv();
        p.pd.handle = pd_handle;
        p.pdn = pdn;
        return 0;
    });
    return pd ? &pd->pd : nullptr;
}

void Mlx5Context::unimport_pd(ibv_pd* pd) { delete reinterpret_cast<Mlx5Pd*>(pd); }

// ibv_import_mr: keys and length from the kernel's MR query.
ibv_mr* Mlx5Context::import_mr(ibv_pd* pd, uint32_t mr_handle) {
    VerbsMr* mr = create_object<VerbsMr>([&](VerbsMr& m) { return cmd_query_mr(pd, mr_handle, &m); });
    return mr ? &mr->mr : nullptr;
}

void Mlx5Context::unimport_mr(ibv_mr* mr) { delete reinterpret_cast<VerbsMr*>(mr); }

// EBUSY while objects still use it: the PD stays valid. A parent domain
// is ours alone: freeing it lets its protection domain go.
int Mlx5Context::dealloc_pd(ibv_pd* pd) {
    return destroy_object(reinterpret_cast<Mlx5Pd*>(pd), [&](Mlx5Pd& p) {
        if (p.users.load(std::memory_order_relaxed))
            return EBUSY;
        if (p.protection) {
            let_go(p.protection);
            if (p.td)
                p.td->users.fetch_sub(1, std::memory_order_relaxed);
            return 0;
        }
        return cmd_dealloc_pd(&p.pd);
    });
}

// A parent domain over `attr->pd` (ours, not itself a parent domain), with
// the application's allocators and their context when the mask says so (as
// the reference, an allocator without a free function is taken: its
// memory is then never given back).
// A thread domain given must be one of this context's; the parent domain
// holds it (ibv_dealloc_td answers EBUSY until the domain is gone).
ibv_pd* Mlx5Context::alloc_parent_domain(ibv_parent_domain_init_attr* attr) {
    constexpr uint32_t kKnown = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
    const bool with_alloc = attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
    if (!attr->pd || attr->pd->context != ibv() || parent_of(attr->pd) || (attr->comp_mask & ~kKnown) ||
        (attr->td && attr->td->context != ibv())) {
        errno = EINVAL;
        return nullptr;
    }
    Mlx5Td* td = reinterpret_cast<Mlx5Td*>(attr->td);
    Mlx5Pd* protection = reinterpret_cast<Mlx5Pd*>(attr->pd);
    Mlx5Pd* parent = create_object<Mlx5Pd>([&](Mlx5Pd& p) {
        p.pd.context = ibv();
        p.pd.handle = protection->pd.handle;
        p.pdn = protection->pdn;
        p.protection = protection;
        if (with_alloc) {
            p.alloc = attr->alloc;
            p.free = attr->free;
        }
        if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
            p.pd_context = attr->pd_context;
        p.td = td;
        return 0;
    });
    if (!parent)
        return nullptr;
    hold(protection);
    if (td)
        td->users.fetch_add(1, std::memory_order_relaxed);
    return &parent->pd;
}

// A thread domain: a register of a dynamic UAR page of its own. A page
// (a BF UAR object, or on a kernel before those the next page mapped with
// MLX5_IB_MMAP_ALLOC_WC) gives two; a register a freed domain held waits
// behind the other free ones. As the reference:
// comp_mask EINVAL, ENOSPC past the kernel's dynamic registers, and the
// kernel's answer to the map otherwise (EINVAL from a device without
// dynamic UARs).
Bfreg* Mlx5Context::take_own_bfreg() {
    std::lock_guard guard(dyn_mu_);
    if (free_dyn_bfregs_.empty() && dyn_uar_) {
        // A BlueFlame page as a UAR object: two registers for domains.
        dyn_bfregs_.reserve(dyn_bfregs_.size() + kBfregsPerUar);
        free_dyn_bfregs_.reserve(dyn_bfregs_.size() + kBfregsPerUar);
        std::unique_ptr<Bfreg> regs[kBfregsPerUar];
        if (int e = add_bf_page(Bfreg::Pool::None, regs)) {
            errno = e;
            return nullptr;
        }
        for (uint32_t k = 0; k < kBfregsPerUar; ++k) {
            regs[k]->buf_size = env_.shut_up_bf ? 0 : caps_.bf_reg_size / 2;
            free_dyn_bfregs_.push_back(regs[k].get());
            dyn_bfregs_.push_back(std::move(regs[k]));
        }
    } else if (free_dyn_bfregs_.empty()) {
        const uint32_t max_pages = caps_.num_dyn_bfregs / kBfregsPerUar;
        if (dyn_pages_ > max_pages) {
            errno = ENOSPC;
            return nullptr;
        }
        // Room first: once the page is mapped nothing may fail.
        dyn_bfregs_.reserve(dyn_bfregs_.size() + kBfregsPerUar);
        free_dyn_bfregs_.reserve(dyn_bfregs_.size() + kBfregsPerUar);
        uar_pages_.reserve(uar_pages_.size() + 1);
        std::unique_ptr<Bfreg> regs[kBfregsPerUar];
        for (auto& r : regs)
            r = std::make_unique<Bfreg>();
        const off_t offset = mmap_offset(page_size_, MLX5_IB_MMAP_ALLOC_WC, dyn_pages_);
        void* p = mmap(nullptr, static_cast<size_t>(page_size_), PROT_WRITE, MAP_SHARED, cmd_fd(), offset);
        if (p == MAP_FAILED)
            return nullptr;  // errno: the kernel's
        uar_pages_.push_back(p);
        for (uint32_t k = 0; k < kBfregsPerUar; ++k) {
            std::unique_ptr<Bfreg>& b = regs[k];
            b->base = p;
            b->reg = static_cast<char*>(p) + kBfOffset + k * caps_.bf_reg_size;
            b->buf_size = env_.shut_up_bf ? 0 : caps_.bf_reg_size / 2;
            b->dv_size = caps_.bf_reg_size / 2;
            // (mlx5dv reports no mmap offset for these pages, as the reference)
            b->dyn_index = dyn_pages_ * kBfregsPerUar + k;
            free_dyn_bfregs_.push_back(b.get());
            dyn_bfregs_.push_back(std::move(b));
        }
        ++dyn_pages_;
    }
    // the longest free first (a returned register waits behind the others)
    Bfreg* bf = free_dyn_bfregs_.front();
    free_dyn_bfregs_.erase(free_dyn_bfregs_.begin());
    return bf;
}

ibv_td* Mlx5Context::alloc_td(ibv_td_init_attr* attr) {
    if (attr->comp_mask) {
        errno = EINVAL;
        return nullptr;
    }
    Bfreg* bf = take_own_bfreg();
    if (!bf)
        return nullptr;
    Mlx5Td* td = create_object<Mlx5Td>([&](Mlx5Td& t) {
        t.td.context = ibv();
        t.bf = bf;
        return 0;
    });
    if (!td) {
        release_own_bfreg(bf);
        return nullptr;
    }
    return &td->td;
}

int Mlx5Context::dealloc_td(ibv_td* ibtd) {
    Mlx5Td* td = reinterpret_cast<Mlx5Td*>(ibtd);
    if (td->users.load(std::memory_order_relaxed))
        return EBUSY;
    Bfreg* bf = td->bf;
    return destroy_object(td, [&](Mlx5Td&) {
        release_own_bfreg(bf);
        return 0;
    });
}

// ---------------------------------------------------------------------- MR

ibv_mr* Mlx5Context::reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access) {
    VerbsMr* mr = create_object<VerbsMr>([&](VerbsMr& m) { return cmd_reg_mr(pd, addr, length, hca_va, access, &m); });
    return mr ? &mr->mr : nullptr;
}

int Mlx5Context::rereg_mr(VerbsMr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
    return cmd_rereg_mr(mr, flags, pd, addr, length, access);
}

int Mlx5Context::dereg_mr(VerbsMr* mr) {
    return destroy_object(mr, [&](VerbsMr& m) { return cmd_dereg_mr(&m); });
}

// ---------------------------------------------------------------------- MW

// mlx5_ib takes an optional request (struct mlx5_ib_alloc_mw); like the
// reference, this provider sends none: one translation entry, what a bind
// through a UMR WQE uses.
ibv_mw* Mlx5Context::alloc_mw(ibv_pd* pd, ibv_mw_type type) {
    return create_object<ibv_mw>([&](ibv_mw& mw) { return cmd_alloc_mw(pd, type, &mw); });
}

int Mlx5Context::dealloc_mw(ibv_mw* mw) {
    return destroy_object(mw, [&](ibv_mw& m) { return cmd_dealloc_mw(&m); });
}

// ------------------------------------------------------------ the provider

namespace {

// The devices this provider created. is_mlx5_dev() looks a device up here
// instead of reading our private part behind it: the mlx5dv_* entry points
// may be handed any ibv_device, also one no provider of ours made.
std::mutex g_devices_mu;
std::vector<const ibv_device*>& devices() { return immortal<std::vector<const ibv_device*>>(); }

class Mlx5Device final : public Device {
public:
    Mlx5Device(const Provider& p, const SysfsDevice& s) : Device(p, s) {
        std::lock_guard<std::mutex> lk(g_devices_mu);
        devices().push_back(ibv());
    }
    ~Mlx5Device() override {
        std::lock_guard<std::mutex> lk(g_devices_mu);
        auto& v = devices();
        std::erase(v, ibv());
    }

    // private_data: the mlx5dv_context_attr of mlx5dv_open_device, or null.
    Context* open_context(int cmd_fd, void* private_data) override {
        const auto* attr = static_cast<const mlx5dv_context_attr*>(private_data);
        return open_provider_context<Mlx5Context>(*this, cmd_fd, [attr](Mlx5Context& c) { return c.open(attr); });
    }
    Context* import_context(int cmd_fd) override {
        return open_provider_context<Mlx5Context>(*this, cmd_fd, [](Mlx5Context& c) { return c.import(); });
    }
};

constexpr uint16_t kMellanox = 0x15b3;

// The reference's table: Connect-IB and ConnectX-4 through ConnectX-8 with
// their virtual functions, BlueField 1 to 3, and the ids newer kernels added.
constexpr MatchEntry kMatch[] = {
    match_driver_id(RDMA_DRIVER_MLX5),  // a kernel that reports its driver
    match_pci(kMellanox, 0x1011),  // Connect-IB
    match_pci(kMellanox, 0x1012),  // Connect-IB VF
    match_pci(kMellanox, 0x1013),  // ConnectX-4
    match_pci(kMellanox, 0x1014),  // ConnectX-4 VF
    match_pci(kMellanox, 0x1015),  // ConnectX-4 Lx
    match_pci(kMellanox, 0x1016),  // ConnectX-4 Lx VF
    match_pci(kMellanox, 0x1017),  // ConnectX-5
    match_pci(kMellanox, 0x1018),  // ConnectX-5 VF
    match_pci(kMellanox, 0x1019),  // ConnectX-5 Ex
    match_pci(kMellanox, 0x101a),  // ConnectX-5 Ex VF
    match_pci(kMellanox, 0x101b),  // ConnectX-6
    match_pci(kMellanox, 0x101c),  // ConnectX-6 VF
    match_pci(kMellanox, 0x101d),  // ConnectX-6 Dx
    match_pci(kMellanox, 0x101e),  // ConnectX family VF
    match_pci(kMellanox, 0x101f),  // ConnectX-6 Lx
    match_pci(kMellanox, 0x1021),  // ConnectX-7
    match_pci(kMellanox, 0x1023),  // ConnectX-8
    match_pci(kMellanox, 0x1025),      match_pci(kMellanox, 0x1027),
    match_pci(kMellanox, 0x2101),      match_pci(kMellanox, 0xa2d2),  // BlueField
    match_pci(kMellanox, 0xa2d3),  // BlueField VF
    match_pci(kMellanox, 0xa2d6),  // BlueField-2
    match_pci(kMellanox, 0xa2dc),  // BlueField-3
    match_pci(kMellanox, 0xa2df),
};

const Provider kMlx5{
    "mlx5",
    1,
    1,
    kMatch,
    [](const SysfsDevice& sysfs, const MatchEntry*) -> Device* { return new Mlx5Device(kMlx5, sysfs); },
};

[[gnu::constructor]] void register_mlx5() { register_provider(kMlx5); }

}  // namespace

bool is_mlx5_dev(const ibv_device* device) {
    if (!device)
        return false;
    std::lock_guard<std::mutex> lk(g_devices_mu);
    const auto& v = devices();
    return std::find(v.begin(), v.end(), device) != v.end();
}

bool is_mlx5_ctx(const ibv_context* context) { return context && is_mlx5_dev(context->device); }

}  // namespace rdma::mlx5
