// The emulated kernel (ib_uverbs core + mlx5_ib): object life cycles,
// argument checks, the QP state machine. No data moves here; the model
// (engine.cpp) does that.
#include "verbs.h"

#include "ucma.h"

#include <algorithm>
#include <ctime>
#include <endian.h>
#include <dirent.h>
#include <sys/stat.h>
#include <cerrno>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <rdma/mlx5_user_ioctl_verbs.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

namespace uvsim {

// The access flags the core knows (ib_access_flags).
constexpr uint32_t kMrAccessKnown = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB |
    IBV_ACCESS_RELAXED_ORDERING;

namespace {

// The destroy of an object others may refer to: EINVAL when the handle is
// no such object, EBUSY while something uses it, else it is gone.
int erase_unused(Context& c, uint32_t handle, ObjType t) {
    const Object* o = c.get<Object>(handle, t);
    if (!o)
        return -EINVAL;
    if (o->usecnt)
        return -EBUSY;
    c.objects.erase(handle);
    return 0;
}

}  // namespace

// ------------------------------------------------------------------ basics

EventFile::~EventFile() {
    if (our_fd >= 0)
        libc().close(our_fd);
}

void EventFile::post(const void* ev, size_t len) const {
    if (our_fd >= 0)
        (void)send(our_fd, ev, len, MSG_DONTWAIT | MSG_NOSIGNAL);
}

uint32_t Context::add(std::unique_ptr<Object> o) {
    // handles are small integers, reused lowest-first like the kernel's xarray
    uint32_t h = 0;
    for (const auto& [k, v] : objects) {
        if (k != h)
            break;
        ++h;
    }
    o->handle = h;
    o->ctx = this;
    objects[h] = std::move(o);
    return h;
}

void Context::async_event(uint64_t element, uint32_t event_type) {
    if (!async)
        return;
    ib_uverbs_async_event_desc d{};
    d.element = element;
    d.event_type = event_type;
    async->post(&d, sizeof d);
    if (event_type == IBV_EVENT_DEVICE_FATAL || event_type == IBV_EVENT_PORT_ACTIVE ||
        event_type == IBV_EVENT_PORT_ERR || event_type == IBV_EVENT_LID_CHANGE || event_type == IBV_EVENT_PKEY_CHANGE ||
        event_type == IBV_EVENT_SM_CHANGE || event_type == IBV_EVENT_CLIENT_REREGISTER ||
        event_type == IBV_EVENT_GID_CHANGE)
        for (const auto& f : more_async)  // a device event: every async file
            f->post(&d, sizeof d);
    UVSIM_TRACE("async event %u element 0x%llx", event_type, (unsigned long long)element);
}

Sim& sim() {
    static Sim* s = [] {
        auto* x = new Sim;  // never destroyed: the model thread may outlive static destructors
        const Config& c = cfg();
        x->devices.resize(c.devices.size());
        for (size_t i = 0; i < c.devices.size(); ++i) {
            x->devices[i].index = static_cast<int>(i);
            x->devices[i].cfg = &c.devices[i];
            for (const PortCfg& p : c.devices[i].ports)
                x->devices[i].port_state.push_back(p.state);
        }
        return x;
    }();
    return *s;
}

namespace {

// Event files: a datagram socket pair; the application gets one end.
std::shared_ptr<EventFile> new_event_file(int& app_fd) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0)
        return nullptr;
    (void)libc().fcntl(sv[1], F_SETFL, O_NONBLOCK);
    auto f = std::make_shared<EventFile>();
    f->app_fd = sv[0];
    f->our_fd = sv[1];
    app_fd = sv[0];
    return f;
}

// Events the application never read are dropped when their object is
// destroyed, and only read ones count as reported (libibverbs waits for
// that many acknowledgements). Returns how many were dropped; events of
// other objects go back in the queue in their order.
template <class Ev, class Match>
uint32_t drop_unread(EventFile& f, Match match) {
    std::vector<Ev> keep;
    uint32_t dropped = 0;
    Ev ev;
    while (recv(f.app_fd, &ev, sizeof ev, MSG_DONTWAIT) == static_cast<ssize_t>(sizeof ev)) {
        if (match(ev))
            ++dropped;
        else
            keep.push_back(ev);
    }
    for (const Ev& k : keep)
        f.post(&k, sizeof k);
    return dropped;
}

uint32_t drop_unread_async(Context& c, uint64_t element) {
    if (!c.async)
        return 0;
    return drop_unread<ib_uverbs_async_event_desc>(
        *c.async, [&](const ib_uverbs_async_event_desc& e) { return e.element == element; });
}

uint32_t roundup_pow2(uint32_t v) {
    uint32_t r = 1;
    while (r < v && r < (1u << 31))
        r <<= 1;
    return r;
}

bool is_pow2(uint32_t v) { return v && !(v & (v - 1)); }

const PortCfg* port_cfg(const Device& d, uint32_t port) {
    if (port < 1 || port > d.cfg->ports.size())
        return nullptr;
    return &d.cfg->ports[port - 1];
}

}  // namespace

// ------------------------------------------------------------------ device

// Raw packet QPs and receive steering: a device with an Ethernet port
// (and the feature not switched off).
bool raw_eth_dev(const Device& d) {
    if (!d.cfg->raw_eth)
        return false;
    for (const PortCfg& p : d.cfg->ports)
        if (p.ethernet)
            return true;
    return false;
}

void fill_query_device(const Device& d, ib_uverbs_query_device_resp& r) {
    const DevCfg& c = *d.cfg;
    memset(&r, 0, sizeof r);
    unsigned a = 0, b = 0, e = 0;
    sscanf(c.fw_ver.c_str(), "%u.%u.%u", &a, &b, &e);
    r.fw_ver = (uint64_t(a) << 32) | (uint64_t(b) << 16) | e;
    r.node_guid = htobe64(c.node_guid);
    r.sys_image_guid = htobe64(c.sys_image_guid);
    r.max_mr_size = c.max_mr_size;
    r.page_size_cap = ~uint64_t(0xfff);
    r.vendor_id = c.vendor_id;
    r.vendor_part_id = c.part_id;
    r.hw_ver = c.hw_ver;
    r.max_qp = c.max_qp;
    r.max_qp_wr = c.max_qp_wr;
    r.device_cap_flags = IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR | IBV_DEVICE_CHANGE_PHY_PORT |
        IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_MEM_WINDOW |
        IBV_DEVICE_UD_IP_CSUM | IBV_DEVICE_XRC | IBV_DEVICE_MEM_MGT_EXTENSIONS | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
    if (raw_eth_dev(d))
        r.device_cap_flags |= IBV_DEVICE_MANAGED_FLOW_STEERING;
    r.max_sge = c.max_sge;
    r.max_sge_rd = c.max_sge;
    r.max_cq = c.max_cq;
    r.max_cqe = c.max_cqe;
    r.max_mr = c.max_mr;
    r.max_pd = c.max_pd;
    r.max_qp_rd_atom = c.max_qp_rd_atom;
    r.max_res_rd_atom = c.max_qp_rd_atom * c.max_qp;
    r.max_qp_init_rd_atom = c.max_qp_rd_atom;
    r.atomic_cap = c.atomics ? IBV_ATOMIC_HCA : IBV_ATOMIC_NONE;
    r.max_mw = c.max_mr;
    r.max_mcast_grp = 1 << 21;
    r.max_mcast_qp_attach = 240;
    r.max_total_mcast_qp_attach = 240u << 21;
    r.max_ah = c.max_ah;
    r.max_srq = c.max_srq;
    r.max_srq_wr = c.max_srq_wr;
    r.max_srq_sge = c.max_srq_sge;
    r.max_pkeys = c.ports.empty() || c.ports[0].ethernet ? 1 : 128;
    r.local_ca_ack_delay = 16;
    r.phys_port_cnt = static_cast<uint8_t>(c.ports.size());
}

void fill_query_device_ex(const Device& d, ib_uverbs_ex_query_device_resp& r) {
    memset(&r, 0, sizeof r);
    fill_query_device(d, r.base);
    r.response_length = sizeof r;
    r.timestamp_mask = (1ull << 63) - 1;
    r.hca_core_clock = 156250;  // kHz
    r.device_cap_flags_ex = r.base.device_cap_flags;
    r.rss_caps.supported_qpts = 0;
    r.max_wq_type_rq = 0;
    if (raw_eth_dev(d)) {
        // receive WQs, indirection tables of up to 2^13 WQs (the uverbs
        // limit), RSS on raw packet QPs; no offloads (checksums, VLAN
        // stripping, FCS scatter)
        r.rss_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
        r.rss_caps.max_rwq_indirection_tables = 1u << 16;
        r.rss_caps.max_rwq_indirection_table_size = 1u << IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE;
        r.max_wq_type_rq = d.cfg->max_qp;
    }
    if (d.cfg->odp) {
        // mlx5_ib's page-fault capabilities of a ConnectX-5 and later
        constexpr uint32_t kAll = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
            IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
        r.odp_caps.general_caps = IBV_ODP_SUPPORT | (d.cfg->odp_implicit ? IBV_ODP_SUPPORT_IMPLICIT : 0);
        r.odp_caps.per_transport_caps.rc_odp_caps = kAll;
        r.odp_caps.per_transport_caps.ud_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_SRQ_RECV;
        r.xrc_odp_caps = kAll;
    }
    r.max_dm_size = d.cfg->dm_size;
    r.cq_moderation_caps.max_cq_moderation_count = 0xffff;
    r.cq_moderation_caps.max_cq_moderation_period = 0xfff;
}

void fill_mlx5_query_device(const Device& d, mlx5_ib_query_device_resp& r) {
    memset(&r, 0, sizeof r);
    r.response_length = sizeof r;
    // CQE compression in every mini-CQE format, for 64- and 128-byte CQEs
    // (the stride index format needs mini_cqe_resp_stride_index, which a
    // ConnectX-5 and later has); 128-byte CQEs padded on request (the
    // model writes 64-byte CQEs in 128-byte places either way).
    if (d.cfg->cqe_comp_max_num) {
        r.cqe_comp_caps.max_num = d.cfg->cqe_comp_max_num;
        r.cqe_comp_caps.supported_format =
            MLX5_IB_CQE_RES_FORMAT_HASH | MLX5_IB_CQE_RES_FORMAT_CSUM | MLX5_IB_CQE_RES_FORMAT_CSUM_STRIDX;
        r.flags |= MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_COMP;
    }
    r.flags |= MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_PAD;
    if (raw_eth_dev(d)) {
        r.rss_caps.rx_hash_function = MLX5_RX_HASH_FUNC_TOEPLITZ;
        r.rss_caps.rx_hash_fields_mask = MLX5_RX_HASH_SRC_IPV4 | MLX5_RX_HASH_DST_IPV4 | MLX5_RX_HASH_SRC_IPV6 |
            MLX5_RX_HASH_DST_IPV6 | MLX5_RX_HASH_SRC_PORT_TCP | MLX5_RX_HASH_DST_PORT_TCP | MLX5_RX_HASH_SRC_PORT_UDP |
            MLX5_RX_HASH_DST_PORT_UDP;
    }
    // No TSO, RSS, packet pacing, striding RQ, tunnel offloads, DCI
    // streams: the model implements none of them.
}

int fill_query_port(const Device& d, uint32_t port, ib_uverbs_query_port_resp& r) {
    const PortCfg* p = port_cfg(d, port);
    if (!p)
        return -EINVAL;
    memset(&r, 0, sizeof r);
    r.port_cap_flags = p->ethernet ? 0x04010000u : 0x2651e84au;
    r.max_msg_sz = 1u << 30;
    r.gid_tbl_len = p->ethernet ? 256 : 8;
    r.pkey_tbl_len = p->ethernet ? 1 : 128;
    r.lid = p->lid;
    r.sm_lid = p->sm_lid;
    r.state = d.port_state[port - 1];
    r.max_mtu = p->max_mtu;
    r.active_mtu = p->active_mtu;
    r.lmc = p->lmc;
    r.max_vl_num = p->ethernet ? 0 : 3;  // 4 data VLs
    r.sm_sl = 0;
    r.subnet_timeout = p->ethernet ? 0 : 18;
    r.active_width = p->width;
    r.active_speed = p->speed;
    r.phys_state = r.state >= 2 ? 5 : 3;
    r.link_layer = p->ethernet ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
    r.flags = p->ethernet ? 0 : 0;
    return 0;
}

// ----------------------------------------------------------------- context

int get_context(Context& c, const void* in, size_t in_len, mlx5_ib_alloc_ucontext_resp& resp) {
    if (c.have_ucontext)
        return -EINVAL;  // the kernel allows one ucontext per open file
    mlx5_ib_alloc_ucontext_req_v2 req{};
    if (in_len < 8)  // the v1 request: two u32s
        return -EINVAL;
    memcpy(&req, in, std::min(in_len, sizeof req));
    if (in_len > sizeof req) {
        // the kernel refuses unknown non-zero trailing bytes
        const auto* b = static_cast<const uint8_t*>(in);
        for (size_t i = sizeof req; i < in_len; ++i)
            if (b[i])
                return -EOPNOTSUPP;
    }
    if (req.flags & ~uint32_t(MLX5_IB_ALLOC_UCTX_DEVX))
        return -EINVAL;
    if (req.flags & MLX5_IB_ALLOC_UCTX_DEVX)
        return -EOPNOTSUPP;  // DEVX (PRM commands) is not emulated
    if (req.comp_mask || req.reserved0 || req.reserved1 || req.reserved2)
        return -EOPNOTSUPP;
    const DevCfg& d = *c.dev->cfg;
    // A library that offers dynamic UARs gets them (a kernel with the UAR
    // object): no static pages, and the bfreg counts it asked are not looked at.
    const bool dyn = d.uar_objects && (req.lib_caps & MLX5_LIB_CAP_DYN_UAR);
    // Static UARs: each 4 KiB UAR page carries two usable bfregs.
    constexpr uint32_t kBfregsPerPage = 2;
    constexpr uint32_t kMaxBfregs = 512 * kBfregsPerPage;
    uint32_t total = req.total_num_bfregs ? req.total_num_bfregs : kBfregsPerPage;
    total = (total + kBfregsPerPage - 1) / kBfregsPerPage * kBfregsPerPage;
    if (dyn)
        total = 0;
    else if (total > kMaxBfregs)
        return -ENOMEM;
    else if (req.num_low_latency_bfregs > total - 1)
        return -EINVAL;
    if (!wire_attach())
        return -EIO;
    memset(&resp, 0, sizeof resp);
    resp.qp_tab_size = 1u << 18;
    resp.bf_reg_size = 512;
    resp.tot_bfregs = total;
    resp.cache_line_size = 64;
    resp.max_sq_desc_sz = 1024;  // max_wqe_sz_sq: 16 WQEBBs
    resp.max_rq_desc_sz = 512;
    resp.max_send_wqebb = d.max_qp_wr;
    resp.max_recv_wr = d.max_qp_wr;
    resp.max_srq_recv_wr = d.max_srq_wr + 1;
    resp.num_ports = static_cast<uint16_t>(d.ports.size());
    resp.comp_mask = MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET;
    resp.response_length = sizeof resp;
    resp.cqe_version = std::min<uint8_t>(req.max_cqe_version, 1);
    resp.cmds_supp_uhw = MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE | MLX5_USER_CMDS_SUPP_UHW_CREATE_AH;
    resp.eth_min_inline = 0;
    resp.clock_info_versions = 1u << MLX5_IB_CLOCK_INFO_V1;
    resp.hca_core_clock_offset = 0;
    resp.log_uar_size = 12;
    resp.num_uars_per_page = 1;
    // Dynamic UARs: pages of two bfregs each, mapped on demand (the
    // reference's thread domains take one).
    // (the kernel counts none when the library takes UAR objects)
    const uint32_t legacy_dyn = dyn ? 0 : d.dyn_uars;
    resp.num_dyn_bfregs = legacy_dyn * kBfregsPerPage;
    c.have_ucontext = true;
    c.lib_uar_dyn = dyn;
    c.tot_bfregs = total;
    c.num_uars = total / kBfregsPerPage;
    c.num_dyn_uars = legacy_dyn;
    c.dyn_uar_mapped.assign(legacy_dyn, false);
    c.cqe_version = resp.cqe_version;
    c.uctx_resp.assign(reinterpret_cast<const uint8_t*>(&resp), reinterpret_cast<const uint8_t*>(&resp + 1));
    UVSIM_TRACE("get_context: bfregs %u (low latency %u) lib_caps 0x%llx cqe_version %u", total,
                req.num_low_latency_bfregs, (unsigned long long)req.lib_caps, c.cqe_version);
    engine_start();
    return 0;
}

int make_async_fd(Context& c) {
    int fd;
    auto f = new_event_file(fd);
    if (!f)
        return -errno;
    if (c.async)
        c.more_async.push_back(std::move(f));
    else
        c.async = std::move(f);
    return fd;
}

void drop_async_fd(Context& c, int fd) {
    if (c.async && c.async->app_fd == fd)
        c.async.reset();
    std::erase_if(c.more_async, [&](const auto& f) { return f->app_fd == fd; });
    libc().close(fd);
}

// ------------------------------------------------------------- clocks

namespace {

// The device clock (hca_core_clock 156250 kHz, 5 cycles per 32 ns) counts
// CLOCK_MONOTONIC, as the CQE timestamps do. Page 0 of the clock memory is
// the core clock page (the timer's big-endian halves at offset 0, the
// hca_core_clock_offset the context answer names); page 1 the kernel's
// clock-info page, which converts cycles to nanoseconds.
constexpr uint32_t kClockShift = 24;
constexpr uint32_t kClockMult = 107374182;  // 32/5 * 2^24, rounded down
constexpr uint64_t kClockMask = (1ull << 41) - 1;  // the kernel's counter width
constexpr uint64_t kClockInfoEveryNs = 100000000;  // the engine rewrites it every 100 ms

struct ClockMem {
    int fd = -1;
    uint8_t* base = nullptr;  // our own mapping of both pages, never unmapped
    long page = 0;
    uint64_t info_ns = 0;  // when the clock-info page was last rewritten
};

ClockMem& clock_mem() {
    static ClockMem m;
    return m;
}

uint64_t mono_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

void write_clock_info(ClockMem& m, uint64_t now) {
    auto* ci = reinterpret_cast<mlx5_ib_clock_info*>(m.base + m.page);
    const uint64_t cycles = now / 32 * 5;
    const uint32_t seq = __atomic_load_n(&ci->sign, __ATOMIC_RELAXED);
    __atomic_store_n(&ci->sign, seq | MLX5_IB_CLOCK_INFO_KERNEL_UPDATING, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    ci->cycles = cycles;
    ci->nsec = cycles * 32 / 5;
    ci->frac = 0;
    ci->mult = kClockMult;
    ci->shift = kClockShift;
    ci->mask = kClockMask;
    // As the kernel: a third of the span whose product cannot overflow.
    ci->overflow_period = ((~0ull >> 1) / kClockMult) * 32 / 5 / 3;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&ci->sign, (seq + 2) & ~uint32_t(MLX5_IB_CLOCK_INFO_KERNEL_UPDATING), __ATOMIC_RELEASE);
    m.info_ns = now;
}

void write_core_clock(ClockMem& m, uint64_t now) {
    auto* timer = reinterpret_cast<uint32_t*>(m.base);
    const uint64_t cycles = now / 32 * 5;
    // Readers take the high half, the low half, then the high half again.
    __atomic_store_n(&timer[1], htobe32(static_cast<uint32_t>(cycles)), __ATOMIC_RELAXED);
    __atomic_store_n(&timer[0], htobe32(static_cast<uint32_t>(cycles >> 32)), __ATOMIC_RELEASE);
}

}  // namespace

void* map_clock_page(int which, void* addr, int flags, int& err) {
    ClockMem& m = clock_mem();
    if (m.fd < 0) {
        m.page = sysconf(_SC_PAGESIZE);
        int fd = memfd_create("uverbs-sim-clock", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, 2 * m.page) != 0) {
            err = errno;
            if (fd >= 0)
                close(fd);
            return MAP_FAILED;
        }
        void* b = libc().mmap(nullptr, 2 * m.page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (b == MAP_FAILED) {
            err = errno;
            close(fd);
            return MAP_FAILED;
        }
        m.fd = fd;
        m.base = static_cast<uint8_t*>(b);
        const uint64_t now = mono_ns();
        write_core_clock(m, now);
        write_clock_info(m, now);
    }
    void* p = libc().mmap(addr, m.page, PROT_READ, (flags & ~MAP_TYPE) | MAP_SHARED, m.fd, which * m.page);
    if (p == MAP_FAILED)
        err = errno;
    return p;
}

void clock_pages_tick() {
    ClockMem& m = clock_mem();
    if (!m.base)
        return;
    const uint64_t now = mono_ns();
    write_core_clock(m, now);
    if (now - m.info_ns >= kClockInfoEveryNs)
        write_clock_info(m, now);
}

namespace {

// mlx5_ib's mmap entries (UAR objects) start at this command number; the
// entry index is encoded as the kernel encodes it (8 bits beside the
// command, the rest above it).
constexpr uint32_t kUarEntryCmd = 9;
// mlx5_ib's "no bfreg" (a QP on a UAR object has none)
constexpr uint32_t kInvalidBfreg = 1u << 31;

}  // namespace

int alloc_uar(Context& c, uint32_t type, uint32_t& handle, uint64_t& mmap_offset, uint32_t& length, uint32_t& page_id) {
    if (type != MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF && type != MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC)
        return -EOPNOTSUPP;
    if (c.next_uar_entry > 0xffff)
        return -ENOMEM;
    auto u = std::make_unique<Uar>();
    u->alloc_type = type;
    // (the device's UAR indexes are 24 bits)
    u->page_id = sim().next_uar_page++ & 0xffffff;
    u->entry = c.next_uar_entry++;
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    mmap_offset = (((u->entry >> 8) << 16) | (kUarEntryCmd << 8) | (u->entry & 0xff)) * page;
    length = static_cast<uint32_t>(page);
    page_id = u->page_id;
    handle = c.add(std::move(u));
    UVSIM_TRACE("alloc_uar %s page %u mmap 0x%llx", type == MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF ? "bf" : "nc", page_id,
                (unsigned long long)mmap_offset);
    return 0;
}

int destroy_uar(Context& c, uint32_t handle) {
    if (!c.get<Uar>(handle, ObjType::Uar))
        return -ENOENT;
    c.objects.erase(handle);
    return 0;
}

// ------------------------------------------------------------ device memory

namespace {
int mr_access_error(const Context& c, uint32_t access);
}

Dm::~Dm() {
    if (view)
        libc().munmap(view, map_len);
    if (fd >= 0)
        libc().close(fd);
    sim().dm_used -= size;
}

// mlx5_ib's MEMIC allocation: sizes in 64-byte units, the device's bytes
// (ENOMEM when they run out), an alignment request up to a page (the
// model's limit: EINVAL beyond), other DM types EOPNOTSUPP (the SW ICM
// types need DEVX steering).
int alloc_dm(Context& c, uint64_t length, uint32_t log_align, uint64_t type, uint32_t& handle, uint64_t& start_offset,
             uint16_t& page_idx) {
    const DevCfg& d = *c.dev->cfg;
    if (!d.dm_size || type != MLX5_IB_UAPI_DM_TYPE_MEMIC)
        return -EOPNOTSUPP;
    if (length == 0 || log_align > 12)
        return -EINVAL;
    const uint64_t size = (length + 63) & ~uint64_t(63);
    if (size < length || size > d.dm_size || sim().dm_used + size > d.dm_size)
        return -ENOMEM;
    if (sim().next_dm_page > 0xffff)
        return -ENOMEM;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    auto dm = std::make_unique<Dm>();
    dm->map_len = (size + page - 1) & ~(page - 1);
    dm->fd = memfd_create("uverbs-sim-dm", MFD_CLOEXEC);
    if (dm->fd < 0 || ftruncate(dm->fd, static_cast<off_t>(dm->map_len)) != 0)
        return -ENOMEM;
    void* v = libc().mmap(nullptr, dm->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, dm->fd, 0);
    if (v == MAP_FAILED)
        return -ENOMEM;
    dm->view = static_cast<uint8_t*>(v);
    dm->length = length;
    dm->size = size;
    sim().dm_used += size;
    dm->page_idx = sim().next_dm_page++;
    start_offset = 0;  // each allocation starts a page of its own
    page_idx = static_cast<uint16_t>(dm->page_idx);
    UVSIM_TRACE("alloc_dm %llu bytes (log align %u) page %u", (unsigned long long)size, log_align, dm->page_idx);
    handle = c.add(std::move(dm));
    return 0;
}

int free_dm(Context& c, uint32_t handle) { return erase_unused(c, handle, ObjType::Dm); }  // (its MRs first)

// The core's checks (access, ZERO_BASED required, the range inside the
// DM), then mlx5_ib's: MEMIC MRs allow local and remote access only.
int reg_dm_mr(Context& c, uint32_t pdh, uint32_t dmh, uint64_t offset, uint64_t length, uint32_t access,
              uint32_t& handle, uint32_t& lkey, uint32_t& rkey) {
    Pd* pd = c.get<Pd>(pdh, ObjType::Pd);
    Dm* dm = c.get<Dm>(dmh, ObjType::Dm);
    if (!pd || !dm)
        return -EINVAL;
    if (int e = mr_access_error(c, access))
        return e;
    if (!(access & IBV_ACCESS_ZERO_BASED))
        return -EINVAL;
    if (offset > dm->length || length > dm->length || length > dm->length - offset)
        return -EINVAL;
    constexpr uint32_t kMemicAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
        IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED;
    if (access & ~kMemicAccess)
        return -EINVAL;
    auto mr = std::make_unique<Mr>();
    mr->pd = pd;
    mr->dm = dm;
    mr->addr = reinterpret_cast<uint64_t>(dm->view) + offset;
    mr->length = length;
    mr->iova = 0;
    mr->access = access;
    const uint32_t idx = (sim().slot << 16) | (sim().next_key++ & 0xffff);
    mr->lkey = mr->rkey = (idx << 8) | 0x35;
    lkey = mr->lkey;
    rkey = mr->rkey;
    sim().mrs_by_lkey[mr->lkey] = mr.get();
    ++pd->usecnt;
    ++dm->usecnt;
    handle = c.add(std::move(mr));
    UVSIM_TRACE("reg_dm_mr page %u +%llu len %llu access 0x%x -> key 0x%x", dm->page_idx, (unsigned long long)offset,
                (unsigned long long)length, access, lkey);
    return 0;
}

const Uar* uar_by_page(const Context& c, uint32_t page_id) {
    for (const auto& [h, o] : c.objects)
        if (o->type == ObjType::Uar && static_cast<const Uar&>(*o).page_id == page_id)
            return static_cast<const Uar*>(o.get());
    return nullptr;
}

void* uverbs_mmap(Context& c, void* addr, size_t len, int prot, int flags, off_t off, int& err) {
    const long page = sysconf(_SC_PAGESIZE);
    if (!c.have_ucontext || (off % page) != 0 || len == 0 || (flags & MAP_SHARED) == 0) {
        err = EINVAL;
        return MAP_FAILED;
    }
    const uint64_t pgoff = static_cast<uint64_t>(off) / page;
    const uint32_t cmd = static_cast<uint32_t>(pgoff >> 8) & 0xff;
    const uint32_t index = static_cast<uint32_t>(pgoff & 0xff) | static_cast<uint32_t>((pgoff >> 16) << 8);
    switch (cmd) {
    case 0:  // MLX5_IB_MMAP_REGULAR_PAGE
    case 2:  // MLX5_IB_MMAP_WC_PAGE
    case 3:  // MLX5_IB_MMAP_NC_PAGE
        if (len != static_cast<size_t>(page) || index >= c.num_uars) {
            err = EINVAL;
            return MAP_FAILED;
        }
        break;
    case 5:  // MLX5_IB_MMAP_CORE_CLOCK: read-only
    case 7:  // MLX5_IB_MMAP_CLOCK_INFO (version 1 only): read-only
        if (cmd == 7 && index != MLX5_IB_CLOCK_INFO_V1) {
            err = EINVAL;
            return MAP_FAILED;
        }
        if (len != static_cast<size_t>(page) || (prot & PROT_WRITE)) {
            err = EPERM;
            return MAP_FAILED;
        }
        {
            // The device's clock pages: one copy per process, which the
            // engine keeps current (clock_pages_tick); the application's
            // mapping is a view of it, so unmapping it harms nothing.
            void* p = map_clock_page(cmd == 5 ? 0 : 1, addr, flags, err);
            if (p != MAP_FAILED)
                UVSIM_TRACE("mmap cmd %u index %u -> %p", cmd, index, p);
            return p;
        }
    case 6:  // MLX5_IB_MMAP_ALLOC_WC: a dynamic UAR page, allocated by the map
        if (len != static_cast<size_t>(page) || index >= c.num_dyn_uars || c.dyn_uar_mapped[index]) {
            err = EINVAL;
            return MAP_FAILED;
        }
        c.dyn_uar_mapped[index] = true;
        break;
    case 8: {  // MLX5_IB_MMAP_DEVICE_MEM: a device memory allocation, by its page index
        const Dm* dm = nullptr;
        for (const auto& [h, o] : c.objects)
            if (o->type == ObjType::Dm && static_cast<const Dm&>(*o).page_idx == index)
                dm = static_cast<const Dm*>(o.get());
        if (!dm || len > dm->map_len) {
            err = EINVAL;
            return MAP_FAILED;
        }
        void* p = libc().mmap(addr, len, prot, (flags & ~MAP_TYPE) | MAP_SHARED, dm->fd, 0);
        if (p == MAP_FAILED) {
            err = errno;
            return p;
        }
        UVSIM_TRACE("mmap cmd %u index %u -> %p (device memory)", cmd, index, p);
        return p;
    }
    case 1:  // MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES: mlx5_ib has none to give
        err = ENOSYS;
        return MAP_FAILED;
    case kUarEntryCmd: {
        // the entry of a UAR object: its one page
        const bool found = std::any_of(c.objects.begin(), c.objects.end(), [&](const auto& o) {
            return o.second->type == ObjType::Uar && static_cast<const Uar&>(*o.second).entry == index;
        });
        if (!found || len != static_cast<size_t>(page)) {
            err = EINVAL;
            return MAP_FAILED;
        }
        break;
    }
    default: err = EINVAL; return MAP_FAILED;
    }
    // A UAR page: ordinary shared memory. Doorbells and BlueFlame copies
    // land here and are ignored: the model reads the doorbell records.
    void* p = libc().mmap(addr, len, prot | PROT_READ, (flags & ~MAP_TYPE) | MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        err = errno;
        return p;
    }
    c.mappings.emplace_back(reinterpret_cast<uint64_t>(p), len);
    UVSIM_TRACE("mmap cmd %u index %u -> %p", cmd, index, p);
    return p;
}

// ----------------------------------------------------------------- PD / MR

int alloc_pd(Context& c, uint32_t& handle, uint32_t& pdn) {
    auto pd = std::make_unique<Pd>();
    pd->pdn = sim().next_pd++ & 0xffffff;
    pdn = pd->pdn;
    handle = c.add(std::move(pd));
    return 0;
}

int dealloc_pd(Context& c, uint32_t handle) { return erase_unused(c, handle, ObjType::Pd); }

// -------------------------------------------------------------- XRC domain

int open_xrcd(Context& c, int fd, uint32_t oflags, uint32_t& handle) {
    std::shared_ptr<XrcDomain> dom;
    struct stat st {};
    const bool by_file = fd != -1;
    auto& reg = sim().xrc_domains;
    reg.erase(std::remove_if(reg.begin(), reg.end(), [](const auto& w) { return w.expired(); }), reg.end());
    if (by_file) {
        if (fd < 0 || fstat(fd, &st) != 0)
            return -EBADF;
        for (const auto& w : reg)
            if (auto d = w.lock())
                if (d->dev_index == c.dev->index && d->st_dev == st.st_dev && d->st_ino == st.st_ino)
                    dom = d;
        if (!dom && !(oflags & O_CREAT))
            return -EAGAIN;  // no domain for the inode yet, and not asked to make one
        if (dom && (oflags & O_EXCL))
            return -EINVAL;
    }
    if (!dom) {
        dom = std::make_shared<XrcDomain>();
        dom->xrcdn = sim().next_xrcd++ & 0xffffff;
        dom->dev_index = c.dev->index;
        if (by_file) {
            dom->has_inode = true;
            dom->st_dev = st.st_dev;
            dom->st_ino = st.st_ino;
            reg.push_back(dom);
        }
    }
    if (by_file)
        ++dom->opens;
    auto x = std::make_unique<Xrcd>();
    x->dom = dom;
    handle = c.add(std::move(x));
    UVSIM_TRACE("open_xrcd xrcdn 0x%x%s (handles on it %d)", dom->xrcdn, by_file ? " by inode" : " private",
                dom->opens);
    return 0;
}

std::string xrc_domain_key(const XrcDomain& d) {
    if (!d.has_inode)
        return "";
    char b[80];
    snprintf(b, sizeof b, "dev%d inode %llu:%llu\n", d.dev_index, (unsigned long long)d.st_dev,
             (unsigned long long)d.st_ino);
    return b;
}

namespace {
std::string xsrq_entry(uint32_t srqn) {
    char b[16];
    snprintf(b, sizeof b, "/%06x", srqn);
    return cfg().run_dir + "/xsrq" + b;
}
}  // namespace

// <run_dir>/xsrq/<srqn>: the key of the SRQ's domain, for the target QPs
// of other processes (written under a temporary name, then renamed)
void xrc_srq_register(const Srq& s) {
    const std::string key = xrc_domain_key(*s.xrc);
    if (key.empty())
        return;
    mkdir(cfg().run_dir.c_str(), 0755);
    mkdir((cfg().run_dir + "/xsrq").c_str(), 0755);
    const std::string path = xsrq_entry(s.srqn), tmp = path + ".tmp";
    const int fd = libc().open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    const bool ok = libc().write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size());
    libc().close(fd);
    if (!ok || rename(tmp.c_str(), path.c_str()) != 0)
        unlink(tmp.c_str());
}

void xrc_srq_unregister(const Srq& s) {
    if (s.xrc && s.xrc->has_inode)
        unlink(xsrq_entry(s.srqn).c_str());
}

// ib_uverbs' close: EBUSY while SRQs or QPs made through this handle live;
// a domain of an inode goes with its last handle, and then only when
// nothing uses it any more (EBUSY, the handle stays).
int close_xrcd(Context& c, uint32_t handle) {
    Xrcd* x = c.get<Xrcd>(handle, ObjType::Xrcd);
    if (!x)
        return -EINVAL;
    if (x->usecnt)
        return -EBUSY;
    XrcDomain& d = *x->dom;
    if (d.has_inode && d.opens > 1) {
        --d.opens;
        c.objects.erase(handle);
        return 0;
    }
    if (d.users)
        return -EBUSY;
    if (d.has_inode)
        --d.opens;
    UVSIM_TRACE("close_xrcd xrcdn 0x%x", d.xrcdn);
    c.objects.erase(handle);
    return 0;
}

namespace {

// The core's access check (ib_check_mr_access).
int mr_access_error(const Context& c, uint32_t access) {
    if (access & ~kMrAccessKnown)
        return -EINVAL;
    // remote write/atomic need local write (IB spec, enforced by the core)
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE))
        return -EINVAL;
    if ((access & IBV_ACCESS_ON_DEMAND) && !c.dev->cfg->odp)
        return -EOPNOTSUPP;  // the core refuses it for a device without page faults
    return 0;
}

bool implicit_range(uint64_t start, uint64_t length) { return start == 0 && length == UINT64_MAX; }

// The range an MR covers: not empty, not wrapping, within the device's
// limit, and mapped (the kernel pins the pages: EFAULT otherwise). An
// on-demand-paging MR pins nothing: its pages are checked when touched.
// The implicit one (mlx5_ib: the whole address space) needs the
// capability and an iova of 0 (EINVAL otherwise).
int mr_range_error(const Context& c, uint64_t start, uint64_t length, uint64_t iova, uint32_t access) {
    if ((access & IBV_ACCESS_ON_DEMAND) && implicit_range(start, length))
        return iova == 0 && c.dev->cfg->odp_implicit ? 0 : -EINVAL;
    if (length == 0 || start + length < start)
        return -EINVAL;
    if (length > c.dev->cfg->max_mr_size)
        return -EINVAL;
    if (access & IBV_ACCESS_ON_DEMAND)
        return 0;
    if (!app_range_ok(start, length, (access & IBV_ACCESS_LOCAL_WRITE) != 0))
        return -EFAULT;
    return 0;
}

}  // namespace

int reg_mr(Context& c, uint32_t pdh, uint64_t start, uint64_t length, uint64_t iova, uint32_t access, uint32_t& handle,
           uint32_t& lkey, uint32_t& rkey) {
    Pd* pd = c.get<Pd>(pdh, ObjType::Pd);
    if (!pd)
        return -EINVAL;
    if (int e = mr_access_error(c, access))
        return e;
    if (int e = mr_range_error(c, start, length, iova, access))
        return e;
    auto mr = std::make_unique<Mr>();
    mr->pd = pd;
    mr->addr = start;
    mr->length = length;
    mr->iova = iova;
    mr->access = access;
    // mkey: index in the upper 24 bits, variant byte below; the process slot
    // makes keys unique host-wide.
    uint32_t idx = (sim().slot << 16) | (sim().next_key++ & 0xffff);
    mr->lkey = mr->rkey = (idx << 8) | 0x35;
    lkey = mr->lkey;
    rkey = mr->rkey;
    sim().mrs_by_lkey[mr->lkey] = mr.get();
    ++pd->usecnt;
    handle = c.add(std::move(mr));
    UVSIM_TRACE("reg_mr 0x%llx+%llu iova 0x%llx access 0x%x -> key 0x%x", (unsigned long long)start,
                (unsigned long long)length, (unsigned long long)iova, access, lkey);
    return 0;
}

int rereg_mr(Context& c, uint32_t handle, uint32_t flags, uint64_t start, uint64_t length, uint64_t iova, uint32_t pdh,
             uint32_t access, uint32_t& lkey, uint32_t& rkey) {
    constexpr uint32_t kKnown = IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS;
    if (!flags || (flags & ~kKnown))
        return -EINVAL;
    Mr* mr = c.get<Mr>(handle, ObjType::Mr);
    if (!mr || mr->dm)
        return -EINVAL;  // (mlx5_ib re-registers no device-memory MR)
    const uint32_t new_access = (flags & IBV_REREG_MR_CHANGE_ACCESS) ? access : mr->access;
    if (flags & IBV_REREG_MR_CHANGE_ACCESS)
        if (int e = mr_access_error(c, access))
            return e;
    Pd* pd = mr->pd;
    if (flags & IBV_REREG_MR_CHANGE_PD) {
        pd = c.get<Pd>(pdh, ObjType::Pd);
        if (!pd)
            return -EINVAL;
    }
    // the range is checked with the access it will have (pinned for write)
    const uint64_t new_start = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? start : mr->addr;
    const uint64_t new_length = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? length : mr->length;
    const uint64_t new_iova = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? iova : mr->iova;
    if (int e = mr_range_error(c, new_start, new_length, new_iova, new_access))
        return e;
    if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
        mr->addr = start;
        mr->length = length;
        mr->iova = iova;
    }
    mr->access = new_access;
    if (pd != mr->pd) {
        --mr->pd->usecnt;
        ++pd->usecnt;
        mr->pd = pd;
    }
    lkey = mr->lkey;
    rkey = mr->rkey;
    UVSIM_TRACE("rereg_mr key 0x%x flags 0x%x: 0x%llx+%llu iova 0x%llx access 0x%x", lkey, flags,
                (unsigned long long)mr->addr, (unsigned long long)mr->length, (unsigned long long)mr->iova, mr->access);
    return 0;
}

// ADVISE_MR (mlx5_ib's prefetch). Each SGE must name, by its lkey, an
// on-demand-paging MR of this PD (writable for PREFETCH_WRITE). With FLUSH
// the pages are faulted in before the answer: a missing MR is ENOENT, a
// range outside the MR or unmapped memory EFAULT (PREFETCH_NO_FAULT takes
// only what is present, so it never faults). Without FLUSH the work is
// queued: a missing MR is EINVAL, the faults themselves are not reported.
int advise_mr(Context& c, uint32_t pdh, uint64_t advice, uint32_t flags, const ibv_sge* sges, size_t n) {
    if (!c.dev->cfg->odp)
        return -EOPNOTSUPP;  // mlx5_ib has the method only with page faults
    Pd* pd = c.get<Pd>(pdh, ObjType::Pd);
    if (!pd)
        return -EINVAL;
    if (advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH && advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
        advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
        return -EOPNOTSUPP;
    const bool sync = flags & IB_UVERBS_ADVISE_MR_FLAG_FLUSH;
    for (size_t i = 0; i < n; ++i) {
        const ibv_sge& s = sges[i];
        auto it = sim().mrs_by_lkey.find(s.lkey);
        const Mr* mr = it == sim().mrs_by_lkey.end() ? nullptr : it->second;
        if (!mr || !(mr->access & IBV_ACCESS_ON_DEMAND) || mr->pd != pd ||
            (advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE && !(mr->access & IBV_ACCESS_LOCAL_WRITE)))
            return sync ? -ENOENT : -EINVAL;
        if (!sync)
            continue;
        if (s.addr < mr->iova || s.addr + s.length < s.addr || s.addr + s.length > mr->iova + mr->length)
            return -EFAULT;
        if (advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT &&
            !app_range_ok(mr->addr + (s.addr - mr->iova), s.length, advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH))
            return -EFAULT;
    }
    UVSIM_TRACE("advise_mr advice %llu flags 0x%x: %zu SGEs", (unsigned long long)advice, flags, n);
    return 0;
}

int dereg_mr(Context& c, uint32_t handle) {
    Mr* mr = c.get<Mr>(handle, ObjType::Mr);
    if (!mr)
        return -EINVAL;
    if (mr->dm)
        --mr->dm->usecnt;
    sim().mrs_by_lkey.erase(mr->lkey);
    // windows bound to it lose their translation (remote access through them fails)
    for (auto& [idx, mw] : sim().mws_by_index)
        if (mw->mr == mr) {
            mw->bound = false;
            mw->mr = nullptr;
        }
    --mr->pd->usecnt;
    c.objects.erase(handle);
    return 0;
}

// --------------------------------------------------------------------- MW

int alloc_mw(Context& c, uint32_t pdh, uint32_t type, const void* drv, size_t drv_len, uint32_t& handle,
             uint32_t& rkey) {
    Pd* pd = c.get<Pd>(pdh, ObjType::Pd);
    if (!pd)
        return -EINVAL;
    if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
        return -EINVAL;  // the core knows two types
    // mlx5_ib: no comp_mask bit or reserved field is known, nor anything
    // past the structure
    mlx5_ib_alloc_mw req{};
    memcpy(&req, drv, std::min(drv_len, sizeof req));
    if (req.comp_mask || req.reserved1 || req.reserved2)
        return -EOPNOTSUPP;
    const auto* tail = static_cast<const uint8_t*>(drv);
    for (size_t i = sizeof req; i < drv_len; ++i)
        if (tail[i])
            return -EOPNOTSUPP;
    auto mw = std::make_unique<Mw>();
    mw->pd = pd;
    mw->mw_type = static_cast<uint8_t>(type);
    mw->num_klms = std::max<uint8_t>(1, req.num_klms);
    const uint32_t idx = (sim().slot << 16) | (sim().next_key++ & 0xffff);
    // each new mkey gets the next variant byte, as mlx5_ib hands them out
    mw->key = (idx << 8) | ++sim().mkey_variant;
    rkey = mw->key;
    sim().mws_by_index[idx] = mw.get();
    ++pd->usecnt;
    handle = c.add(std::move(mw));
    UVSIM_TRACE("alloc_mw type %u -> key 0x%x", type, rkey);
    return 0;
}

int dealloc_mw(Context& c, uint32_t handle) {
    Mw* mw = c.get<Mw>(handle, ObjType::Mw);
    if (!mw)
        return -EINVAL;
    sim().mws_by_index.erase(mw->key >> 8);
    --mw->pd->usecnt;
    c.objects.erase(handle);
    return 0;
}

int create_comp_channel(Context&) {
    int fd;
    auto f = new_event_file(fd);
    if (!f)
        return -errno;
    // alive while the application holds the fd (close() drops it) or a CQ uses it
    sim().channels[fd] = f;
    fd_mark(fd, FdKind::Event);
    return fd;
}

// ---------------------------------------------------------------------- AH

static int check_av(const Device& d, const ib_uverbs_ah_attr& a) {
    const PortCfg* p = port_cfg(d, a.port_num);
    if (!p)
        return -EINVAL;
    if (p->ethernet && !a.is_global)
        return -EINVAL;
    if (a.is_global) {
        const auto& gids = port_gids(*p);
        if (a.grh.sgid_index >= gids.size())
            return -EINVAL;
    }
    if (a.sl > 15)
        return -EINVAL;
    return 0;
}

static void av_from(const ib_uverbs_ah_attr& a, Av& av) {
    av = Av{};
    av.dlid = a.dlid;
    av.sl = a.sl;
    av.src_path_bits = a.src_path_bits;
    av.static_rate = a.static_rate;
    av.grh = a.is_global;
    memcpy(av.dgid, a.grh.dgid, 16);
    av.flow_label = a.grh.flow_label;
    av.sgid_index = a.grh.sgid_index;
    av.hop_limit = a.grh.hop_limit;
    av.traffic_class = a.grh.traffic_class;
    av.port = a.port_num;
}

// RoCE: the "neighbour" MAC of a GID (IPv4-mapped or link-local EUI-64),
// resolved without a network: the emulated peers derive MACs from GIDs.
static void gid_to_mac(const uint8_t g[16], uint8_t mac[6]) {
    if (g[0] == 0xfe && g[1] == 0x80 && g[11] == 0xff && g[12] == 0xfe) {
        mac[0] = g[8] ^ 2;
        mac[1] = g[9];
        mac[2] = g[10];
        mac[3] = g[13];
        mac[4] = g[14];
        mac[5] = g[15];
        return;
    }
    // look the GID up among the configured ports; else a locally
    // administered MAC from its low bytes
    for (const DevCfg& d : cfg().devices)
        for (const PortCfg& p : d.ports)
            if (p.ethernet)
                for (const GidEntry& e : port_gids(p))
                    if (!memcmp(e.gid, g, 16)) {
                        memcpy(mac, p.mac, 6);
                        return;
                    }
    mac[0] = 0x02;
    memcpy(mac + 1, g + 11, 5);
}

int create_ah(Context& c, uint32_t pdh, uint64_t user_handle, const ib_uverbs_ah_attr& attr, uint32_t& handle,
              mlx5_ib_create_ah_resp* drv) {
    Pd* pd = c.get<Pd>(pdh, ObjType::Pd);
    if (!pd)
        return -EINVAL;
    if (int e = check_av(*c.dev, attr))
        return e;
    auto ah = std::make_unique<Ah>();
    ah->pd = pd;
    ah->user_handle = user_handle;
    av_from(attr, ah->av);
    const PortCfg* p = port_cfg(*c.dev, attr.port_num);
    if (p->ethernet)
        gid_to_mac(attr.grh.dgid, ah->av.dmac);
    if (drv) {
        memset(drv, 0, sizeof *drv);
        drv->response_length = sizeof *drv;
        memcpy(drv->dmac, ah->av.dmac, 6);
    }
    ++pd->usecnt;
    handle = c.add(std::move(ah));
    return 0;
}

int destroy_ah(Context& c, uint32_t handle) {
    Ah* ah = c.get<Ah>(handle, ObjType::Ah);
    if (!ah)
        return -EINVAL;
    --ah->pd->usecnt;
    c.objects.erase(handle);
    return 0;
}

// ---------------------------------------------------------------------- CQ

namespace {

// The ring mlx5_ib makes for `cqe` entries: the next power of two above
// it, or 0 when that passes 2^31 or the device's limit. (64-bit: max_cqe
// may be configured up to 2^32-1.)
uint32_t cq_ring_entries(uint32_t cqe, uint32_t max_cqe) {
    uint64_t n = 1;
    while (n < uint64_t(cqe) + 1)
        n <<= 1;
    if (n > (1ull << 31) || n - 1 > uint64_t(max_cqe) + 1)
        return 0;
    return static_cast<uint32_t>(n);
}

}  // namespace

int create_cq(Context& c, const CqArgs& a, uint32_t& handle, uint32_t& cqe_out, uint32_t& cqn) {
    const DevCfg& d = *c.dev->cfg;
    UVSIM_TRACE("create_cq: cqe %u vector %u cqe_size %u flags 0x%x comp %u format %u drv %zu", a.cqe, a.comp_vector,
                a.drv.cqe_size, a.drv.flags, a.drv.cqe_comp_en, a.drv.cqe_comp_res_format, a.drv_len);
    if (a.cqe < 1 || a.cqe > d.max_cqe)
        return -EINVAL;
    if (a.drv_len < offsetof(mlx5_ib_create_cq, cqe_comp_en))
        return -EINVAL;
    if (a.comp_vector >= 1)
        return -EINVAL;  // one completion vector
    if (a.drv.cqe_size != 64 && a.drv.cqe_size != 128)
        return -EINVAL;
    // mlx5_ib: compression needs the capability for this CQE size (the
    // model compresses both sizes or neither), then one known mini-CQE
    // format
    uint8_t zip_format = 0;
    if (a.drv.cqe_comp_en) {
        if (!d.cqe_comp_max_num)
            return -EOPNOTSUPP;
        switch (a.drv.cqe_comp_res_format) {
        case MLX5_IB_CQE_RES_FORMAT_HASH:
        case MLX5_IB_CQE_RES_FORMAT_CSUM:
        case MLX5_IB_CQE_RES_FORMAT_CSUM_STRIDX: zip_format = a.drv.cqe_comp_res_format; break;
        default: return -EINVAL;
        }
    }
    if (a.drv.flags & ~uint16_t(MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD | MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX))
        return -EOPNOTSUPP;
    // The CQ's doorbell UAR: a UAR object by page id, else the first static
    // page, which a context with UAR objects does not have.
    if (a.drv.flags & MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX ? !uar_by_page(c, a.drv.uar_page_index) : c.lib_uar_dyn)
        return -EINVAL;
    const uint32_t n = cq_ring_entries(a.cqe, d.max_cqe);
    if (!n)
        return -EINVAL;
    if (!app_range_ok(a.drv.buf_addr, uint64_t(n) * a.drv.cqe_size, true) || !app_range_ok(a.drv.db_addr, 8, true))
        return -EFAULT;
    if (a.drv.db_addr & 7)
        return -EINVAL;
    // mlx5 gives the device the buffer's offset in its page in 64-byte
    // quanta: anything else is "bad offset" (EINVAL) in the kernel
    if (a.drv.buf_addr & 63)
        return -EINVAL;
    std::shared_ptr<EventFile> ch;
    if (a.comp_channel >= 0) {
        auto it = sim().channels.find(a.comp_channel);
        if (it == sim().channels.end())
            return -EINVAL;
        ch = it->second;
    }
    auto cq = std::make_unique<Cq>();
    cq->cqn = (sim().slot << 16) | (sim().next_cq++ & 0xffff);
    cq->buf = a.drv.buf_addr;
    cq->dbrec = reinterpret_cast<uint32_t*>(a.drv.db_addr);
    cq->ncqe = n;
    cq->cqe_size = a.drv.cqe_size;
    cq->channel = ch;
    cq->comp_vector = a.comp_vector;
    cq->user_handle = a.user_handle;
    cq->ignore_overrun = a.flags & IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN;
    cq->zip_format = zip_format;
    cq->zip_max = d.cqe_comp_max_num;
    engine_cq_created(*cq);
    cqn = cq->cqn;
    cqe_out = n - 1;
    Cq* raw = cq.get();
    handle = c.add(std::move(cq));
    sim().cqs.push_back(raw);
    UVSIM_TRACE("create_cq cqn 0x%x entries %u cqe_size %u buf 0x%llx db 0x%llx", cqn, n, raw->cqe_size,
                (unsigned long long)raw->buf, (unsigned long long)a.drv.db_addr);
    return 0;
}

// mlx5_ib's order: the size against the device's limit, the same ring
// size is nothing to do (the driver data is not even read), then the
// driver's request, the new ring, and the device's switch.
int resize_cq(Context& c, uint32_t handle, uint32_t cqe, const mlx5_ib_resize_cq& drv, size_t drv_len,
              uint32_t& cqe_out) {
    const DevCfg& d = *c.dev->cfg;
    Cq* cq = c.get<Cq>(handle, ObjType::Cq);
    if (!cq)
        return -EINVAL;
    if (cqe < 1 || cqe > d.max_cqe)
        return -EINVAL;
    const uint32_t n = cq_ring_entries(cqe, d.max_cqe);
    if (!n)
        return -EINVAL;
    if (n == cq->ncqe) {
        cqe_out = n - 1;
        return 0;
    }
    if (drv_len < sizeof drv)
        return -EFAULT;
    if (drv.reserved0 || drv.reserved1)
        return -EINVAL;
    if (drv.cqe_size != 64 && drv.cqe_size != 128)
        return -EINVAL;
    if (!app_range_ok(drv.buf_addr, uint64_t(n) * drv.cqe_size, true))
        return -EFAULT;
    if (drv.buf_addr & 63)
        return -EINVAL;
    // The device refuses a ring that cannot hold what the consumer has not
    // taken yet (as the consumer index record says) and the resize CQE.
    if (cq_unconsumed(*cq) + 1 > n)
        return -EINVAL;
    UVSIM_TRACE("resize_cq cqn 0x%x entries %u -> %u cqe_size %u buf 0x%llx", cq->cqn, cq->ncqe, n, drv.cqe_size,
                (unsigned long long)drv.buf_addr);
    engine_cq_resize(*cq, drv.buf_addr, n, drv.cqe_size);
    cqe_out = n - 1;
    return 0;
}

int moderate_cq(Context& c, uint32_t handle, uint16_t count, uint16_t period) {
    Cq* cq = c.get<Cq>(handle, ObjType::Cq);
    if (!cq)
        return -EINVAL;
    if (period > 0xfff)
        return -EINVAL;
    cq->mod_count = count;
    cq->mod_period = period;
    UVSIM_TRACE("cq 0x%x moderation: %u CQEs or %u us", cq->cqn, count, period);
    return 0;
}

int destroy_cq(Context& c, uint32_t handle, ib_uverbs_destroy_cq_resp& r) {
    Cq* cq = c.get<Cq>(handle, ObjType::Cq);
    if (!cq)
        return -EINVAL;
    if (cq->usecnt)
        return -EBUSY;
    engine_cq_destroy(*cq);
    uint32_t unread = 0;
    if (cq->channel)
        unread = drop_unread<ib_uverbs_comp_event_desc>(
            *cq->channel, [&](const ib_uverbs_comp_event_desc& e) { return e.cq_handle == cq->user_handle; });
    r.comp_events_reported = cq->comp_events - unread;
    r.async_events_reported = cq->async_events - drop_unread_async(c, cq->user_handle);
    auto& v = sim().cqs;
    v.erase(std::remove(v.begin(), v.end(), cq), v.end());
    c.objects.erase(handle);
    return 0;
}

// --------------------------------------------------------------------- SRQ

// mlx5_ib's user index of an SRQ or QP: with CQE version 1 the driver data
// must carry one (EINVAL without), neither the default 0xffffff nor wider
// than 24 bits; with version 0 it is absent or the default.
static int check_uidx(const Context& c, bool present, uint32_t uidx) {
    if (present && !c.cqe_version && uidx == 0xffffff)
        return 0;
    if (present != (c.cqe_version != 0))
        return -EINVAL;
    if (c.cqe_version && (uidx == 0xffffff || (uidx & ~0xffffffu)))
        return -EINVAL;
    return 0;
}

int create_srq(Context& c, const SrqArgs& a, uint32_t& handle, uint32_t& max_wr, uint32_t& max_sge, uint32_t& srqn) {
    const DevCfg& d = *c.dev->cfg;
    // the core: an XRC SRQ's domain and CQ, then the PD
    Xrcd* x = nullptr;
    Cq* xcq = nullptr;
    if (a.srq_type == IBV_SRQT_XRC) {
        x = c.get<Xrcd>(a.xrcd, ObjType::Xrcd);
        xcq = c.get<Cq>(a.cq, ObjType::Cq);
        if (!x || !xcq)
            return -EINVAL;
    }
    Pd* pd = c.get<Pd>(a.pd, ObjType::Pd);
    if (!pd)
        return -EINVAL;
    if (a.srq_type != IBV_SRQT_BASIC && a.srq_type != IBV_SRQT_XRC)
        return -EOPNOTSUPP;  // tag matching SRQs are not emulated
    // mlx5_ib checks the size against the device's limit only: max_wr 0
    // is a ring of one WQE (the one the free list keeps back).
    if (a.max_wr > d.max_srq_wr || a.max_wr >= (1u << 30) || a.max_sge > d.max_srq_sge)
        return -EINVAL;
    if (a.drv_len < offsetof(mlx5_ib_create_srq, flags))
        return -EINVAL;
    // mlx5: WQE = 16-byte next segment + max_sge data segments, rounded to a
    // power of two; the provider sized the buffer for max_wr+1 such WQEs.
    uint32_t desc = 16 + 16 * std::max<uint32_t>(a.max_sge, 1);
    desc = roundup_pow2(desc);
    const uint32_t cnt = roundup_pow2(a.max_wr + 1);
    if (!app_range_ok(a.drv.buf_addr, uint64_t(cnt) * desc, false) || !app_range_ok(a.drv.db_addr, 4, true))
        return -EFAULT;
    if ((a.drv.buf_addr & 63) || (a.drv.db_addr & 3))
        return -EINVAL;  // 64-byte page-offset quanta, as for CQs and QPs
    // mlx5_ib takes a user index for every SRQ but a basic one
    if (a.srq_type != IBV_SRQT_BASIC)
        if (int e = check_uidx(c, a.drv_len >= offsetof(mlx5_ib_create_srq, uidx) + 4, a.drv.uidx))
            return e;
    auto s = std::make_unique<Srq>();
    s->srqn = (sim().slot << 16) | (sim().next_srq++ & 0xffff);
    s->pd = pd;
    s->buf = a.drv.buf_addr;
    s->dbrec = reinterpret_cast<uint32_t*>(a.drv.db_addr);
    s->wqe_cnt = cnt;
    s->wqe_shift = static_cast<uint32_t>(__builtin_ctz(desc));
    s->max_sge = (desc - 16) / 16;
    s->limit = a.limit;
    s->limit_armed = a.limit != 0;
    s->uidx = a.drv.uidx;
    s->user_handle = a.user_handle;
    if (x) {
        s->xrc = x->dom;
        s->uxrcd = x;
        s->cq = xcq;
        ++x->usecnt;
        ++x->dom->users;
        ++xcq->usecnt;
        xrc_srq_register(*s);
    }
    max_wr = cnt - 1;
    max_sge = s->max_sge;
    srqn = s->srqn;
    ++pd->usecnt;
    Srq* raw = s.get();
    handle = c.add(std::move(s));
    sim().srqs.push_back(raw);
    UVSIM_TRACE("create_srq srqn 0x%x wqes %u stride %u%s: driver data %zu bytes: flags 0x%x uidx 0x%x", srqn, cnt,
                desc, x ? " xrc" : "", a.drv_len, a.drv.flags, raw->uidx);
    return 0;
}

int modify_srq(Context& c, uint32_t handle, uint32_t mask, uint32_t max_wr, uint32_t limit) {
    Srq* s = c.get<Srq>(handle, ObjType::Srq);
    if (!s)
        return -EINVAL;
    if (mask & ~uint32_t(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
        return -EINVAL;
    if (mask & IBV_SRQ_MAX_WR)
        return -EINVAL;  // mlx5 cannot resize an SRQ
    if (mask & IBV_SRQ_LIMIT) {
        if (limit >= s->wqe_cnt)
            return -EINVAL;
        s->limit = limit;
        s->limit_armed = limit != 0;
    }
    (void)max_wr;
    return 0;
}

int query_srq(Context& c, uint32_t handle, ib_uverbs_query_srq_resp& r) {
    Srq* s = c.get<Srq>(handle, ObjType::Srq);
    if (!s)
        return -EINVAL;
    memset(&r, 0, sizeof r);
    r.max_wr = s->wqe_cnt - 1;
    r.max_sge = s->max_sge;
    r.srq_limit = s->limit;
    return 0;
}

int destroy_srq(Context& c, uint32_t handle, uint32_t& events) {
    Srq* s = c.get<Srq>(handle, ObjType::Srq);
    if (!s)
        return -EINVAL;
    if (s->usecnt)
        return -EBUSY;
    events = s->events_reported - drop_unread_async(c, s->user_handle);
    --s->pd->usecnt;
    engine_srq_destroy(*s);
    if (s->xrc) {
        xrc_srq_unregister(*s);
        --s->uxrcd->usecnt;
        --s->xrc->users;
        --s->cq->usecnt;
    }
    auto& v = sim().srqs;
    v.erase(std::remove(v.begin(), v.end(), s), v.end());
    c.objects.erase(handle);
    return 0;
}

// ---------------------------------------------------------------------- QP

// An XRC target QP: no PD, CQs, SRQ or queues of its own; it receives into
// the XRC SRQs of its domain that requests name. The handle made here is,
// as in the kernel, one of possibly several on the shared QP.
static int create_xrc_tgt(Context& c, const QpArgs& a, uint32_t& handle, QpCaps& caps, mlx5_ib_create_qp_resp& drv) {
    Xrcd* x = c.get<Xrcd>(a.xrcd, ObjType::Xrcd);
    if (!x)
        return -EINVAL;
    if (a.create_flags)
        return -EOPNOTSUPP;
    if (a.drv_len < offsetof(mlx5_ib_create_qp, uidx))
        return -EINVAL;
    const uint32_t known_flags = MLX5_QP_FLAG_SIGNATURE | MLX5_QP_FLAG_SCATTER_CQE | MLX5_QP_FLAG_BFREG_INDEX |
        MLX5_QP_FLAG_ALLOW_SCATTER_CQE | MLX5_QP_FLAG_UAR_PAGE_INDEX;
    if (a.drv.flags & ~known_flags)
        return -EOPNOTSUPP;
    if (int e = check_uidx(c, a.drv_len >= offsetof(mlx5_ib_create_qp, uidx) + 4, a.drv.uidx))
        return e;
    auto qp = std::make_unique<Qp>();
    qp->qpn = (sim().slot << 16) | (sim().next_qp++ & 0xffff);
    while (sim().qps.count(qp->qpn) || (qp->qpn & 0xffff) == 0)
        qp->qpn = (sim().slot << 16) | (sim().next_qp++ & 0xffff);
    qp->qp_type = IBV_QPT_XRC_RECV;
    qp->state = IBV_QPS_RESET;
    qp->uidx = a.drv.uidx;
    qp->create_flags = a.drv.flags;
    qp->user_handle = a.user_handle;
    qp->xrc = x->dom;
    qp->uxrcd = x;
    ++x->usecnt;
    ++x->dom->users;
    caps = {qp->qpn, 0, 0, 0, 0, 0};
    memset(&drv, 0, sizeof drv);  // mlx5_ib answers nothing for it
    Qp* raw = qp.get();
    handle = c.add(std::move(qp));
    sim().qps[raw->qpn] = raw;
    x->dom->tgt_qps.push_back(raw);
    UVSIM_TRACE("create_qp qpn 0x%x type %u (XRC target) xrcdn 0x%x: driver data %zu bytes: buf 0x%llx db 0x%llx "
                "sq %u rq %u shift %u flags 0x%x uidx 0x%x bfreg %u",
                raw->qpn, raw->qp_type, x->dom->xrcdn, a.drv_len, (unsigned long long)a.drv.buf_addr,
                (unsigned long long)a.drv.db_addr, a.drv.sq_wqe_count, a.drv.rq_wqe_count, a.drv.rq_wqe_shift,
                a.drv.flags, a.drv.uidx, a.drv.bfreg_index);
    return 0;
}

static int create_rss_qp(Context& c, const QpArgs& a, uint32_t& handle, QpCaps& caps, mlx5_ib_create_qp_resp& drv);

int create_qp(Context& c, const QpArgs& a, uint32_t& handle, QpCaps& caps, mlx5_ib_create_qp_resp& drv) {
    const DevCfg& d = *c.dev->cfg;
    if (a.qp_type == IBV_QPT_XRC_RECV)
        return create_xrc_tgt(c, a, handle, caps, drv);
    if (a.has_ind_tbl)
        return create_rss_qp(c, a, handle, caps, drv);
    const bool ini = a.qp_type == IBV_QPT_XRC_SEND;
    Pd* pd = c.get<Pd>(a.pd, ObjType::Pd);
    Cq* scq = c.get<Cq>(a.send_cq, ObjType::Cq);
    Cq* rcq = a.has_recv_cq && !ini ? c.get<Cq>(a.recv_cq, ObjType::Cq) : nullptr;
    if (!pd || !scq || (!rcq && !ini))
        return -EINVAL;
    Srq* srq = nullptr;
    if (a.has_srq && !ini) {
        srq = c.get<Srq>(a.srq, ObjType::Srq);
        if (!srq || srq->xrc)
            return -EINVAL;  // an XRC SRQ serves XRC target QPs only
    }
    const bool is_raw = a.qp_type == IBV_QPT_RAW_PACKET;
    if (is_raw && !raw_eth_dev(*c.dev))
        return -EOPNOTSUPP;  // no Ethernet port (or steering off): no raw packet QPs
    if (a.qp_type != IBV_QPT_RC && a.qp_type != IBV_QPT_UC && a.qp_type != IBV_QPT_UD && !ini && !is_raw)
        return -EOPNOTSUPP;  // DC is not emulated
    if (a.create_flags)
        return -EOPNOTSUPP;
    if (a.max_send_wr > d.max_qp_wr || a.max_recv_wr > d.max_qp_wr || a.max_send_sge > d.max_sge ||
        a.max_recv_sge > d.max_sge || a.max_inline > d.max_inline)
        return -EINVAL;
    if (a.drv_len < offsetof(mlx5_ib_create_qp, uidx))
        return -EINVAL;
    const mlx5_ib_create_qp& u = a.drv;
    const uint32_t known_flags = MLX5_QP_FLAG_SIGNATURE | MLX5_QP_FLAG_SCATTER_CQE | MLX5_QP_FLAG_BFREG_INDEX |
        MLX5_QP_FLAG_ALLOW_SCATTER_CQE | MLX5_QP_FLAG_UAR_PAGE_INDEX;
    if (u.flags & ~known_flags)
        return -EOPNOTSUPP;
    if (u.sq_wqe_count && !is_pow2(u.sq_wqe_count))
        return -EINVAL;
    if (u.rq_wqe_count && !is_pow2(u.rq_wqe_count))
        return -EINVAL;
    if (u.sq_wqe_count > d.max_qp_wr || u.rq_wqe_count > d.max_qp_wr)
        return -EINVAL;
    if (u.rq_wqe_count && (u.rq_wqe_shift < 4 || u.rq_wqe_shift > 12))
        return -EINVAL;
    if (srq && u.rq_wqe_count)
        return -EINVAL;
    if (ini)
        if (int e = check_uidx(c, a.drv_len >= offsetof(mlx5_ib_create_qp, uidx) + 4, u.uidx))
            return e;
    // the shift means nothing without a receive queue (and may be anything);
    // an XRC initiator has none whatever the driver data says
    const uint32_t rq_cnt = ini ? 0 : u.rq_wqe_count;
    const uint32_t rq_shift = rq_cnt ? u.rq_wqe_shift : 0;
    const uint64_t rq_size = uint64_t(rq_cnt) << rq_shift;
    const uint64_t sq_size = uint64_t(u.sq_wqe_count) * 64;
    if (rq_size + sq_size == 0)
        return -EINVAL;
    // mlx5_ib: a raw packet QP's SQ is an object of its own, in a buffer of
    // its own (sq_buf_addr); the RQ is at buf_addr
    if (is_raw && sq_size && (a.drv_len < offsetof(mlx5_ib_create_qp, sq_buf_addr) + 8 || !u.sq_buf_addr))
        return -EINVAL;
    if (is_raw
            ? (!app_range_ok(u.buf_addr, rq_size, false) || (sq_size && !app_range_ok(u.sq_buf_addr, sq_size, false)))
            : !app_range_ok(u.buf_addr, rq_size + sq_size, false))
        return -EFAULT;
    if (!app_range_ok(u.db_addr, 8, true))
        return -EFAULT;
    if (is_raw && (u.sq_buf_addr & 63))
        return -EINVAL;
    if ((u.db_addr & 3) || (u.buf_addr & 63))
        return -EINVAL;  // (64-byte page-offset quanta, as for CQs)
    // MLX5_QP_FLAG_BFREG_INDEX names a dynamic bfreg (two per dynamic UAR
    // page), whose page this context must have mapped.
    // MLX5_QP_FLAG_UAR_PAGE_INDEX names a UAR object of this context by its
    // page id. Without either flag the kernel picks a static bfreg, which a
    // context with UAR objects does not have.
    if (u.flags & MLX5_QP_FLAG_UAR_PAGE_INDEX) {
        if (!uar_by_page(c, u.bfreg_index))
            return -EINVAL;
    } else if (u.flags & MLX5_QP_FLAG_BFREG_INDEX) {
        const uint32_t page = u.bfreg_index / 2;
        if (c.lib_uar_dyn || page >= c.num_dyn_uars || !c.dyn_uar_mapped[page])
            return -EINVAL;
    } else if (c.lib_uar_dyn) {
        return -EINVAL;
    }
    auto qp = std::make_unique<Qp>();
    qp->qpn = (sim().slot << 16) | (sim().next_qp++ & 0xffff);
    while (sim().qps.count(qp->qpn) || (qp->qpn & 0xffff) == 0)
        qp->qpn = (sim().slot << 16) | (sim().next_qp++ & 0xffff);
    qp->qp_type = a.qp_type;
    qp->state = IBV_QPS_RESET;
    qp->pd = pd;
    qp->send_cq = scq;
    qp->recv_cq = rcq;
    qp->srq = srq;
    qp->sq_sig_all = a.sq_sig_all;
    qp->buf = u.buf_addr;
    qp->dbrec = reinterpret_cast<uint32_t*>(u.db_addr);
    qp->sq_wqe_cnt = u.sq_wqe_count;
    qp->rq_wqe_cnt = rq_cnt;
    qp->rq_wqe_shift = rq_shift;
    qp->sq_buf = is_raw ? u.sq_buf_addr : u.buf_addr + rq_size;
    qp->uidx = u.uidx;
    qp->create_flags = u.flags;
    // mlx5_ib's scatter-to-CQE for a QP that asks: 32 bytes in a 64-byte
    // CQE, 64 in a 128-byte one (the CQ's first half); the requester side
    // only for RC QPs that signal every WR or allow it explicitly
    if ((u.flags & MLX5_QP_FLAG_SCATTER_CQE) && c.dev->cfg->scatter_to_cqe) {
        if (a.qp_type == IBV_QPT_RC || a.qp_type == IBV_QPT_UC)
            qp->cs_res = rcq->cqe_size == 128 ? 64 : 32;
        if (a.qp_type == IBV_QPT_RC && ((u.flags & MLX5_QP_FLAG_ALLOW_SCATTER_CQE) || a.sq_sig_all))
            qp->cs_req = scq->cqe_size == 128 ? 64 : 32;
    }
    qp->user_handle = a.user_handle;
    qp->max_send_wr = a.max_send_wr;
    qp->max_recv_wr = a.max_recv_wr;
    qp->max_send_sge = a.max_send_sge;
    qp->max_recv_sge = a.max_recv_sge;
    qp->max_inline = a.max_inline;
    if (ini)
        qp->max_recv_wr = qp->max_recv_sge = 0;
    caps = {qp->qpn, a.max_send_wr, qp->max_recv_wr, a.max_send_sge, qp->max_recv_sge, a.max_inline};
    memset(&drv, 0, sizeof drv);
    // bfreg numbering is 4 per UAR page (2 used): 0 = no BlueFlame, 1 = the
    // first medium-latency register
    // (none for a UAR object: the kernel answers MLX5_IB_INVALID_BFREG)
    drv.bfreg_index = (u.flags & MLX5_QP_FLAG_UAR_PAGE_INDEX) ? kInvalidBfreg
        : (u.flags & MLX5_QP_FLAG_BFREG_INDEX)                ? u.bfreg_index
                                                              : 1;
    ++pd->usecnt;
    ++scq->usecnt;
    if (rcq)
        ++rcq->usecnt;
    if (srq)
        ++srq->usecnt;
    Qp* raw = qp.get();
    handle = c.add(std::move(qp));
    sim().qps[raw->qpn] = raw;
    UVSIM_TRACE("create_qp qpn 0x%x type %u sq %u wqebb rq %u x %u buf 0x%llx db 0x%llx flags 0x%x bfreg %u%s "
                "scatter %u/%u uidx 0x%x (driver data rq %u shift %u)",
                raw->qpn, raw->qp_type, raw->sq_wqe_cnt, raw->rq_wqe_cnt, 1u << raw->rq_wqe_shift,
                (unsigned long long)raw->buf, (unsigned long long)u.db_addr, u.flags, u.bfreg_index, srq ? " srq" : "",
                raw->cs_res, raw->cs_req, u.uidx, u.rq_wqe_count, u.rq_wqe_shift);
    return 0;
}

namespace {

// ib_modify_qp_is_ok: required and optional attributes per transition,
// per transport: RC, UC, UD, XRC initiator, XRC target.
struct Trans {
    bool valid;
    uint32_t req[5];
    uint32_t opt[5];
};

int tidx(uint8_t t) {
    switch (t) {
    case IBV_QPT_RC: return 0;
    case IBV_QPT_UC: return 1;
    case IBV_QPT_XRC_SEND: return 3;
    case IBV_QPT_XRC_RECV: return 4;
    default: return 2;
    }
}

Trans transition(uint8_t cur, uint8_t next) {
    constexpr uint32_t S = IBV_QP_STATE, CS = IBV_QP_CUR_STATE, AF = IBV_QP_ACCESS_FLAGS, PK = IBV_QP_PKEY_INDEX,
                       PO = IBV_QP_PORT, QK = IBV_QP_QKEY, AV = IBV_QP_AV, MTU = IBV_QP_PATH_MTU, TO = IBV_QP_TIMEOUT,
                       RC_ = IBV_QP_RETRY_CNT, RNR = IBV_QP_RNR_RETRY, RQP = IBV_QP_RQ_PSN,
                       MRA = IBV_QP_MAX_QP_RD_ATOMIC, ALT = IBV_QP_ALT_PATH, MRT = IBV_QP_MIN_RNR_TIMER,
                       SQP = IBV_QP_SQ_PSN, MDRA = IBV_QP_MAX_DEST_RD_ATOMIC, PMS = IBV_QP_PATH_MIG_STATE,
                       DQ = IBV_QP_DEST_QPN, SQD_N = IBV_QP_EN_SQD_ASYNC_NOTIFY;
    (void)S;
    if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
        return {cur != IBV_QPS_RESET || next == IBV_QPS_RESET, {}, {}};
    switch (cur) {
    case IBV_QPS_RESET:
        if (next == IBV_QPS_INIT)
            return {true, {PK | PO | AF, PK | PO | AF, PK | PO | QK, PK | PO | AF, PK | PO | AF}, {}};
        break;
    case IBV_QPS_INIT:
        if (next == IBV_QPS_INIT)
            return {true, {}, {PK | PO | AF, PK | PO | AF, PK | PO | QK, PK | PO | AF, PK | PO | AF}};
        if (next == IBV_QPS_RTR)
            return {true,
                    {AV | MTU | DQ | RQP | MDRA | MRT, AV | MTU | DQ | RQP, 0, AV | MTU | DQ | RQP,
                     AV | MTU | DQ | RQP | MDRA | MRT},
                    {ALT | AF | PK, ALT | AF | PK, PK | QK, ALT | AF | PK, ALT | AF | PK}};
        break;
    case IBV_QPS_RTR:
        if (next == IBV_QPS_RTS)
            return {true,
                    {TO | RC_ | RNR | SQP | MRA, SQP, SQP, TO | RC_ | RNR | SQP | MRA, TO | SQP},
                    {CS | ALT | AF | MRT | PMS, CS | ALT | AF | PMS, CS | QK, CS | ALT | AF | MRT | PMS,
                     CS | ALT | AF | MRT | PMS}};
        break;
    case IBV_QPS_RTS:
        if (next == IBV_QPS_RTS)
            return {true,
                    {},
                    {CS | AF | ALT | PMS | MRT, CS | AF | ALT | PMS, CS | QK, CS | AF | ALT | PMS,
                     CS | AF | ALT | PMS | MRT}};
        if (next == IBV_QPS_SQD)
            return {true, {}, {SQD_N, SQD_N, SQD_N, SQD_N, SQD_N}};
        break;
    case IBV_QPS_SQD:
        if (next == IBV_QPS_RTS)
            return {true,
                    {},
                    {CS | ALT | AF | MRT | PMS, CS | ALT | AF | PMS, CS | QK, CS | ALT | AF | PMS,
                     CS | ALT | AF | MRT | PMS}};
        if (next == IBV_QPS_SQD)
            return {true,
                    {},
                    {PO | AV | TO | RC_ | RNR | MRA | MDRA | ALT | AF | PK | MRT | PMS, AV | ALT | AF | PK | PMS,
                     PK | QK, PO | AV | TO | RC_ | RNR | MRA | ALT | AF | PK | PMS,
                     PO | AV | TO | MDRA | ALT | AF | PK | MRT | PMS}};
        break;
    case IBV_QPS_SQE:
        if (next == IBV_QPS_RTS)
            return {true, {}, {CS, CS | AF, CS | QK, 0, 0}};
        break;
    }
    return {false, {}, {}};
}

void dest_to_av(const ib_uverbs_qp_dest& d, Av& av) {
    av = Av{};
    memcpy(av.dgid, d.dgid, 16);
    av.flow_label = d.flow_label;
    av.dlid = d.dlid;
    av.sgid_index = d.sgid_index;
    av.hop_limit = d.hop_limit;
    av.traffic_class = d.traffic_class;
    av.sl = d.sl;
    av.src_path_bits = d.src_path_bits;
    av.static_rate = d.static_rate;
    av.grh = d.is_global;
    av.port = d.port_num;
}

void av_to_dest(const Av& av, ib_uverbs_qp_dest& d) {
    memset(&d, 0, sizeof d);
    memcpy(d.dgid, av.dgid, 16);
    d.flow_label = av.flow_label;
    d.dlid = av.dlid;
    d.sgid_index = av.sgid_index;
    d.hop_limit = av.hop_limit;
    d.traffic_class = av.traffic_class;
    d.sl = av.sl;
    d.src_path_bits = av.src_path_bits;
    d.static_rate = av.static_rate;
    d.is_global = av.grh;
    d.port_num = av.port;
}

}  // namespace

int modify_qp(Context& c, const ib_uverbs_modify_qp& m) {
    Qp* qp = c.get<Qp>(m.qp_handle, ObjType::Qp);
    if (!qp)
        return -EINVAL;
    if (qp->real)
        qp = qp->real;  // a handle opened on an XRC target QP: the QP itself
    const uint32_t mask = m.attr_mask;
    const uint8_t cur = (mask & IBV_QP_CUR_STATE) ? m.cur_qp_state : qp->state;
    const uint8_t next = (mask & IBV_QP_STATE) ? m.qp_state : cur;
    if (cur > IBV_QPS_ERR || next > IBV_QPS_ERR)
        return -EINVAL;
    if ((mask & IBV_QP_CUR_STATE) && cur != qp->state && !(cur == IBV_QPS_SQE || qp->state == IBV_QPS_SQE))
        return -EINVAL;
    Trans t = transition(cur, next);
    if (!t.valid)
        return -EINVAL;
    if (qp->ind_tbl)
        return -ENOSYS;  // an RSS QP is its TIR: nothing to modify (mlx5_ib)
    const int ti = tidx(qp->qp_type);
    uint32_t req = t.req[ti], opt = t.opt[ti];
    if (qp->qp_type == IBV_QPT_RAW_PACKET) {
        // the kernel's table for raw packet QPs: the port to go to INIT,
        // nothing else (no paths, PSNs or keys)
        req = cur == IBV_QPS_RESET && next == IBV_QPS_INIT ? uint32_t(IBV_QP_PORT) : 0;
        opt = cur == IBV_QPS_INIT && next == IBV_QPS_INIT ? uint32_t(IBV_QP_PORT) : 0;
    }
    const uint32_t allowed = IBV_QP_STATE | req | opt;
    if ((mask & req) != req || (mask & ~allowed))
        return -EINVAL;
    const DevCfg& d = *c.dev->cfg;
    if (qp->qp_type == IBV_QPT_RAW_PACKET && (mask & IBV_QP_PORT) && m.port_num >= 1 && m.port_num <= d.ports.size() &&
        !d.ports[m.port_num - 1].ethernet)
        return -EINVAL;  // raw Ethernet frames on an InfiniBand port
    // value checks
    if (mask & IBV_QP_PORT)
        if (m.port_num < 1 || m.port_num > d.ports.size())
            return -EINVAL;
    const uint8_t port = (mask & IBV_QP_PORT) ? m.port_num : qp->port;
    const PortCfg& pc = d.ports[std::min<size_t>(port ? port - 1 : 0, d.ports.size() - 1)];
    if (mask & IBV_QP_PKEY_INDEX)
        if (m.pkey_index >= (pc.ethernet ? 1 : 128))
            return -EINVAL;
    if (mask & IBV_QP_PATH_MTU)
        if (m.path_mtu < IBV_MTU_256 || m.path_mtu > pc.max_mtu)
            return -EINVAL;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
        if (m.max_rd_atomic > d.max_qp_rd_atom)
            return -EINVAL;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
        if (m.max_dest_rd_atomic > d.max_qp_rd_atom)
            return -EINVAL;
    // mlx5_ib takes the remote bits; the other access flags an MR may
    // have pass (rdma-core's ODP tests give a QP the MR's flags, ON_DEMAND
    // included), bits no access flag has do not.
    if (mask & IBV_QP_ACCESS_FLAGS)
        if (m.qp_access_flags & ~kMrAccessKnown)
            return -EINVAL;
    if (mask & IBV_QP_AV) {
        ib_uverbs_ah_attr a{};
        memcpy(a.grh.dgid, m.dest.dgid, 16);
        a.grh.sgid_index = m.dest.sgid_index;
        a.dlid = m.dest.dlid;
        a.sl = m.dest.sl;
        a.is_global = m.dest.is_global;
        a.port_num = m.dest.port_num ? m.dest.port_num : port;
        if (int e = check_av(*c.dev, a))
            return e;
    }
    if (mask & IBV_QP_ALT_PATH) {
        // the alternate path is checked like the primary one
        if (m.alt_port_num < 1 || m.alt_port_num > d.ports.size() || m.alt_timeout > 31)
            return -EINVAL;
        if (m.alt_pkey_index >= (d.ports[m.alt_port_num - 1].ethernet ? 1 : 128))
            return -EINVAL;
        ib_uverbs_ah_attr a{};
        memcpy(a.grh.dgid, m.alt_dest.dgid, 16);
        a.grh.sgid_index = m.alt_dest.sgid_index;
        a.dlid = m.alt_dest.dlid;
        a.sl = m.alt_dest.sl;
        a.is_global = m.alt_dest.is_global;
        a.port_num = m.alt_dest.port_num ? m.alt_dest.port_num : m.alt_port_num;
        if (int e = check_av(*c.dev, a))
            return e;
    }
    if (mask & IBV_QP_PATH_MIG_STATE)
        if (m.path_mig_state > IBV_MIG_ARMED)
            return -EINVAL;
    if (mask & IBV_QP_TIMEOUT)
        if (m.timeout > 31)
            return -EINVAL;
    if (mask & IBV_QP_RETRY_CNT)
        if (m.retry_cnt > 7)
            return -EINVAL;
    if (mask & IBV_QP_RNR_RETRY)
        if (m.rnr_retry > 7)
            return -EINVAL;
    if (mask & IBV_QP_MIN_RNR_TIMER)
        if (m.min_rnr_timer > 31)
            return -EINVAL;
    if (mask & IBV_QP_DEST_QPN)
        if (m.dest_qp_num > 0xffffff)
            return -EINVAL;
    // apply
    if (mask & IBV_QP_PORT)
        qp->port = m.port_num;
    if (mask & IBV_QP_PKEY_INDEX)
        qp->pkey_index = m.pkey_index;
    if (mask & IBV_QP_QKEY)
        qp->qkey = m.qkey;
    if (mask & IBV_QP_ACCESS_FLAGS)
        qp->access = m.qp_access_flags;
    if (mask & IBV_QP_PATH_MTU)
        qp->path_mtu = m.path_mtu;
    if (mask & IBV_QP_DEST_QPN)
        qp->dest_qpn = m.dest_qp_num;
    if (mask & IBV_QP_RQ_PSN)
        qp->rq_psn = m.rq_psn & 0xffffff;
    if (mask & IBV_QP_SQ_PSN)
        qp->sq_psn = m.sq_psn & 0xffffff;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
        qp->max_rd_atomic = m.max_rd_atomic;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
        qp->max_dest_rd_atomic = m.max_dest_rd_atomic;
    if (mask & IBV_QP_MIN_RNR_TIMER)
        qp->min_rnr_timer = m.min_rnr_timer;
    if (mask & IBV_QP_TIMEOUT)
        qp->timeout = m.timeout;
    if (mask & IBV_QP_RETRY_CNT)
        qp->retry_cnt = m.retry_cnt;
    if (mask & IBV_QP_RNR_RETRY)
        qp->rnr_retry = m.rnr_retry;
    if (mask & IBV_QP_AV) {
        dest_to_av(m.dest, qp->av);
        if (!qp->av.port)
            qp->av.port = port;
        if (pc.ethernet)
            gid_to_mac(qp->av.dgid, qp->av.dmac);
    }
    if (mask & IBV_QP_ALT_PATH) {
        dest_to_av(m.alt_dest, qp->alt_av);
        qp->alt_port = m.alt_port_num;
        qp->alt_timeout = m.alt_timeout;
        qp->alt_pkey_index = m.alt_pkey_index;
    }
    if (mask & IBV_QP_PATH_MIG_STATE)
        qp->path_mig_state = m.path_mig_state;
    const uint8_t old = qp->state;
    qp->state = next;
    if (old != next || next == IBV_QPS_RESET)
        engine_qp_state_changed(*qp, old);
    UVSIM_TRACE("modify_qp qpn 0x%x %u -> %u mask 0x%x", qp->qpn, old, next, mask);
    return 0;
}

int query_qp(Context& c, uint32_t handle, uint32_t mask, ib_uverbs_query_qp_resp& r) {
    Qp* qp = c.get<Qp>(handle, ObjType::Qp);
    if (!qp)
        return -EINVAL;
    if (qp->real)
        qp = qp->real;
    (void)mask;
    memset(&r, 0, sizeof r);
    av_to_dest(qp->av, r.dest);
    av_to_dest(qp->alt_av, r.alt_dest);
    // As mlx5_ib answers for a user QP: the receive queue as the library
    // laid it out (WQEs of the ring, SGEs a WQE holds, one less with WQE
    // signatures); the send side is the library's to report (zero).
    r.max_send_wr = 0;
    r.max_send_sge = 0;
    r.max_recv_wr = qp->rq_wqe_cnt;
    r.max_recv_sge =
        qp->rq_wqe_cnt ? (1u << qp->rq_wqe_shift) / 16 - ((qp->create_flags & MLX5_QP_FLAG_SIGNATURE) ? 1 : 0) : 0;
    r.max_inline_data = qp->max_inline;
    r.qkey = qp->qkey;
    r.rq_psn = qp->rq_psn;
    r.sq_psn = qp->sq_psn;
    r.dest_qp_num = qp->dest_qpn;
    r.qp_access_flags = qp->access;
    r.pkey_index = qp->pkey_index;
    r.alt_pkey_index = qp->alt_pkey_index;
    r.qp_state = qp->state;
    r.cur_qp_state = qp->state;
    r.path_mtu = qp->path_mtu;
    r.path_mig_state = qp->path_mig_state;
    r.sq_draining = qp->sq_draining;
    r.max_rd_atomic = qp->max_rd_atomic;
    r.max_dest_rd_atomic = qp->max_dest_rd_atomic;
    r.min_rnr_timer = qp->min_rnr_timer;
    r.port_num = qp->port;
    r.timeout = qp->timeout;
    r.retry_cnt = qp->retry_cnt;
    r.rnr_retry = qp->rnr_retry;
    r.alt_port_num = qp->alt_port;
    r.alt_timeout = qp->alt_timeout;
    r.sq_sig_all = qp->sq_sig_all;
    return 0;
}

namespace {
void mcast_unregister(const uint8_t gid[16], uint32_t qpn);  // below, with attach_mcast
}  // namespace

namespace {

// The end of an XRC target QP, when its last handle went.
void destroy_xrc_tgt(Qp& qp) {
    engine_qp_destroy(qp);
    auto& v = qp.xrc->tgt_qps;
    v.erase(std::remove(v.begin(), v.end(), &qp), v.end());
    --qp.xrc->users;
    sim().qps.erase(qp.qpn);
    UVSIM_TRACE("destroy_qp qpn 0x%x (XRC target)", qp.qpn);
}

// A handle on an XRC target QP goes (the creator's or an OPEN_QP one): the
// QP goes with the last; while others remain it stays, its events going
// to one of them.
int close_xrc_tgt_handle(Context& c, uint32_t handle, Qp* h, uint32_t& events) {
    events = h->events_reported - drop_unread_async(c, h->user_handle);
    --h->uxrcd->usecnt;
    if (h->real) {
        Qp* real = h->real;
        auto& o = real->opened;
        o.erase(std::remove(o.begin(), o.end(), h), o.end());
        c.objects.erase(handle);
        if (real->orphan && o.empty()) {
            destroy_xrc_tgt(*real);
            auto& orph = sim().orphan_qps;
            orph.erase(std::remove_if(orph.begin(), orph.end(), [&](const auto& p) { return p.get() == real; }),
                       orph.end());
        } else if (real->orphan && real->ctx == &c) {
            real->ctx = o.front()->ctx;
            real->user_handle = o.front()->user_handle;
        }
        return 0;
    }
    if (h->opened.empty()) {
        destroy_xrc_tgt(*h);
        c.objects.erase(handle);
        return 0;
    }
    // others hold it: the QP outlives this handle
    auto it = c.objects.find(handle);
    std::unique_ptr<Object> obj = std::move(it->second);
    c.objects.erase(it);
    h->orphan = true;
    h->uxrcd = nullptr;
    h->ctx = h->opened.front()->ctx;
    h->user_handle = h->opened.front()->user_handle;
    h->events_reported = 0;
    sim().orphan_qps.push_back(std::move(obj));
    UVSIM_TRACE("qpn 0x%x: creator's handle closed, %zu opened handle(s) keep it", h->qpn, h->opened.size());
    return 0;
}

}  // namespace

int destroy_qp(Context& c, uint32_t handle, uint32_t& events) {
    Qp* qp = c.get<Qp>(handle, ObjType::Qp);
    if (!qp)
        return -EINVAL;
    if (qp->qp_type == IBV_QPT_XRC_RECV)
        return close_xrc_tgt_handle(c, handle, qp, events);
    if (qp->usecnt)
        return -EBUSY;  // flow rules point at it
    engine_qp_destroy(*qp);
    events = qp->events_reported - drop_unread_async(c, qp->user_handle);
    --qp->pd->usecnt;
    if (qp->ind_tbl)
        --qp->ind_tbl->usecnt;
    if (qp->send_cq)
        --qp->send_cq->usecnt;
    if (qp->recv_cq)
        --qp->recv_cq->usecnt;
    if (qp->srq)
        --qp->srq->usecnt;
    for (const Qp::McastGroup& g : qp->mcast)
        mcast_unregister(g.gid, qp->qpn);
    sim().qps.erase(qp->qpn);
    c.objects.erase(handle);
    return 0;
}

int open_qp(Context& c, uint32_t xrcd, uint32_t qpn, uint8_t qp_type, uint64_t user_handle, uint32_t& handle) {
    Xrcd* x = c.get<Xrcd>(xrcd, ObjType::Xrcd);
    if (!x)
        return -EINVAL;
    if (qp_type != IBV_QPT_XRC_RECV)
        return -EINVAL;
    Qp* real = nullptr;
    for (Qp* q : x->dom->tgt_qps)
        if (q->qpn == qpn)
            real = q;
    if (!real)
        return -EINVAL;
    auto h = std::make_unique<Qp>();
    h->qpn = real->qpn;
    h->qp_type = IBV_QPT_XRC_RECV;
    h->real = real;
    h->xrc = real->xrc;
    h->uxrcd = x;
    h->user_handle = user_handle;
    ++x->usecnt;
    Qp* raw = h.get();
    handle = c.add(std::move(h));
    real->opened.push_back(raw);
    UVSIM_TRACE("open_qp qpn 0x%x (handles on it: %zu more)", qpn, real->opened.size());
    return 0;
}

namespace {

std::string mcast_dir(const uint8_t gid[16]) {
    std::string d = cfg().run_dir + "/mcast/";
    char b[3];
    for (int i = 0; i < 16; ++i) {
        snprintf(b, sizeof b, "%02x", gid[i]);
        d += b;
    }
    return d;
}

std::string mcast_entry(const uint8_t gid[16], uint32_t qpn) {
    char b[16];
    snprintf(b, sizeof b, "/%06x", qpn);
    return mcast_dir(gid) + b;
}

bool mcast_register(const uint8_t gid[16], uint32_t qpn) {
    mkdir(cfg().run_dir.c_str(), 0755);
    mkdir((cfg().run_dir + "/mcast").c_str(), 0755);
    mkdir(mcast_dir(gid).c_str(), 0755);
    int fd = libc().open(mcast_entry(gid, qpn).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return false;
    libc().close(fd);
    return true;
}

void mcast_unregister(const uint8_t gid[16], uint32_t qpn) {
    unlink(mcast_entry(gid, qpn).c_str());
    rmdir(mcast_dir(gid).c_str());  // fails while others are attached
}

}  // namespace

std::vector<uint32_t> mcast_members(const uint8_t gid[16]) {
    std::vector<uint32_t> v;
    DIR* d = opendir(mcast_dir(gid).c_str());
    if (!d)
        return v;
    while (dirent* e = readdir(d)) {
        char* end;
        unsigned long q = strtoul(e->d_name, &end, 16);
        if (e->d_name[0] != '.' && *end == 0 && q > 0 && q < 0xffffff)
            v.push_back(static_cast<uint32_t>(q));
    }
    closedir(d);
    return v;
}

// The kernel's rdma_is_multicast_addr: an IPv6 multicast address (ff..) or
// an IPv4 one mapped into IPv6 (::ffff:224.0.0.0/4, what rdma_cm joins on
// RoCE).
static bool multicast_gid(const uint8_t* gid) {
    if (gid_v4mapped(gid))
        return (gid[12] & 0xf0) == 0xe0;
    return gid[0] == 0xff;
}

// ib_attach_mcast: UD QPs only, a multicast GID, and on InfiniBand a
// multicast LID; attaching twice is not an error, detaching a group the QP
// is not in is EINVAL.
int attach_mcast(Context& c, uint32_t qph, const uint8_t* gid, uint16_t mlid) {
    Qp* qp = c.get<Qp>(qph, ObjType::Qp);
    if (!qp)
        return -EINVAL;
    if (qp->qp_type != IBV_QPT_UD || !multicast_gid(gid))
        return -EINVAL;
    const PortCfg* pc = port_cfg(*c.dev, qp->port ? qp->port : 1);
    if (pc && !pc->ethernet && (mlid < 0xc000 || mlid == 0xffff))
        return -EINVAL;
    for (const Qp::McastGroup& g : qp->mcast)
        if (g.mlid == mlid && !memcmp(g.gid, gid, 16))
            return 0;
    if (!mcast_register(gid, qp->qpn))
        return -ENOMEM;
    Qp::McastGroup g{};
    memcpy(g.gid, gid, 16);
    g.mlid = mlid;
    qp->mcast.push_back(g);
    UVSIM_TRACE("qpn 0x%x attached to multicast group (mlid 0x%x)", qp->qpn, mlid);
    return 0;
}

int detach_mcast(Context& c, uint32_t qph, const uint8_t* gid, uint16_t mlid) {
    Qp* qp = c.get<Qp>(qph, ObjType::Qp);
    if (!qp)
        return -EINVAL;
    for (auto it = qp->mcast.begin(); it != qp->mcast.end(); ++it)
        if (it->mlid == mlid && !memcmp(it->gid, gid, 16)) {
            const uint8_t* g = it->gid;
            bool others = false;  // the same GID under another MLID keeps the entry
            for (const Qp::McastGroup& o : qp->mcast)
                if (&o != &*it && !memcmp(o.gid, g, 16))
                    others = true;
            if (!others)
                mcast_unregister(g, qp->qpn);
            qp->mcast.erase(it);
            return 0;
        }
    return -EINVAL;
}

void destroy_context(Context& c) {
    // children first: QPs, then SRQs, AHs, MRs, CQs, PDs
    static const ObjType order[] = {ObjType::Flow, ObjType::Qp, ObjType::RwqIndTbl, ObjType::Wq,
                                    ObjType::Srq,  ObjType::Ah, ObjType::Mw,        ObjType::Mr,
                                    ObjType::Cq,   ObjType::Pd, ObjType::Xrcd};
    for (ObjType t : order) {
        std::vector<uint32_t> hs;
        for (const auto& [h, o] : c.objects)
            if (o->type == t)
                hs.push_back(h);
        for (uint32_t h : hs) {
            uint32_t ev;
            ib_uverbs_destroy_cq_resp cr;
            switch (t) {
            case ObjType::Flow: destroy_flow(c, h); break;
            case ObjType::Qp:
                c.get<Qp>(h, t)->usecnt = 0;
                destroy_qp(c, h, ev);
                break;
            case ObjType::RwqIndTbl:
                c.get<RwqIndTbl>(h, t)->usecnt = 0;
                destroy_rwq_ind_tbl(c, h);
                break;
            case ObjType::Wq:
                c.get<Wq>(h, t)->usecnt = 0;
                destroy_wq(c, h, ev);
                break;
            case ObjType::Srq:
                c.get<Srq>(h, t)->usecnt = 0;
                destroy_srq(c, h, ev);
                break;
            case ObjType::Ah: destroy_ah(c, h); break;
            case ObjType::Mr: dereg_mr(c, h); break;
            case ObjType::Mw: dealloc_mw(c, h); break;
            case ObjType::Cq:
                c.get<Cq>(h, t)->usecnt = 0;
                destroy_cq(c, h, cr);
                break;
            case ObjType::Pd:
                c.get<Pd>(h, t)->usecnt = 0;
                dealloc_pd(c, h);
                break;
            case ObjType::Xrcd: {
                Xrcd* x = c.get<Xrcd>(h, t);
                if (x->dom->has_inode)
                    --x->dom->opens;
                c.objects.erase(h);
                break;
            }
            default: c.objects.erase(h); break;
            }
        }
    }
    c.objects.clear();
}

void uverbs_close(int fd) {
    if (fd_kind(fd) == FdKind::Cm) {
        ucma_close(fd);
        return;
    }
    std::lock_guard<std::recursive_mutex> g(sim().mu);
    const bool event = fd_kind(fd) == FdKind::Event;
    fd_mark(fd, FdKind::None);
    if (event) {
        sim().channels.erase(fd);
        return;
    }
    auto it = sim().files.find(fd);
    if (it == sim().files.end())
        return;
    std::shared_ptr<Context> c = std::move(it->second);
    sim().files.erase(it);
    if (c.use_count() > 1) {
        // another fd is open on the file: the context stays, known by one
        // of the fds left
        if (c->fd == fd)
            for (const auto& [f, o] : sim().files)
                if (o == c) {
                    c->fd = f;
                    break;
                }
        UVSIM_TRACE("close uverbs fd %d (the file stays open as fd %d)", fd, c->fd);
        return;
    }
    destroy_context(*c);
    UVSIM_TRACE("close uverbs fd %d", fd);
}

void uverbs_dup(int oldfd, int newfd) {
    if (fd_kind(oldfd) == FdKind::Cm) {
        ucma_dup(oldfd, newfd);
        return;
    }
    std::lock_guard<std::recursive_mutex> g(sim().mu);
    const FdKind k = fd_kind(oldfd);
    if (k == FdKind::Uverbs) {
        auto it = sim().files.find(oldfd);
        if (it == sim().files.end())
            return;
        sim().files[newfd] = it->second;
    } else if (k == FdKind::Event) {
        auto it = sim().channels.find(oldfd);
        if (it == sim().channels.end())
            return;
        sim().channels[newfd] = it->second;
    } else {
        return;
    }
    fd_mark(newfd, k);
    UVSIM_TRACE("dup fd %d -> fd %d", oldfd, newfd);
}

// ------------------------------------------------- receive-side steering

// An RSS QP: a raw packet QP made of a TIR over an indirection table (no
// queues, no CQs of its own; it is never modified). mlx5_ib's checks of
// mlx5_ib_create_qp_rss come first, then the core's.
static int create_rss_qp(Context& c, const QpArgs& a, uint32_t& handle, QpCaps& caps, mlx5_ib_create_qp_resp& drv) {
    if (a.qp_type != IBV_QPT_RAW_PACKET || !raw_eth_dev(*c.dev))
        return -EOPNOTSUPP;
    Pd* pd = c.get<Pd>(a.pd, ObjType::Pd);
    RwqIndTbl* t = c.get<RwqIndTbl>(a.ind_tbl, ObjType::RwqIndTbl);
    if (!pd || !t)
        return -EINVAL;
    // the core: no receive side and no send queue beside the table
    if (a.max_recv_wr || a.max_recv_sge || a.has_srq || a.max_send_wr || a.create_flags)
        return -EINVAL;
    const mlx5_ib_create_qp_rss& u = a.rss;
    if (a.drv_len < offsetof(mlx5_ib_create_qp_rss, comp_mask))
        return -EINVAL;
    if (a.drv_len >= offsetof(mlx5_ib_create_qp_rss, flags) && u.comp_mask)
        return -EOPNOTSUPP;
    for (uint8_t b : u.reserved)
        if (b)
            return -EOPNOTSUPP;
    if (u.flags & ~uint32_t(MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_UC | MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_MC))
        return -EOPNOTSUPP;  // tunnel offloads are not offered
    if (u.rx_hash_fields_mask & (MLX5_RX_HASH_INNER | MLX5_RX_HASH_IPSEC_SPI))
        return -EOPNOTSUPP;
    if (u.rx_hash_function != MLX5_RX_HASH_FUNC_TOEPLITZ)
        return -EOPNOTSUPP;
    if (u.rx_key_len != 40)
        return -EINVAL;  // the TIR's Toeplitz key is 40 bytes
    const uint64_t f = u.rx_hash_fields_mask;
    if (f & ~uint64_t(0xff))
        return -EOPNOTSUPP;
    if (!f && t->log_size)
        return -EINVAL;  // no hashing: a table of one WQ only
    const bool v4 = f & (MLX5_RX_HASH_SRC_IPV4 | MLX5_RX_HASH_DST_IPV4);
    const bool v6 = f & (MLX5_RX_HASH_SRC_IPV6 | MLX5_RX_HASH_DST_IPV6);
    const bool tcp = f & (MLX5_RX_HASH_SRC_PORT_TCP | MLX5_RX_HASH_DST_PORT_TCP);
    const bool udp = f & (MLX5_RX_HASH_SRC_PORT_UDP | MLX5_RX_HASH_DST_PORT_UDP);
    if ((v4 && v6) || (tcp && udp))
        return -EINVAL;
    auto qp = std::make_unique<Qp>();
    qp->qpn = (sim().slot << 16) | (sim().next_qp++ & 0xffff);
    while (sim().qps.count(qp->qpn) || (qp->qpn & 0xffff) == 0)
        qp->qpn = (sim().slot << 16) | (sim().next_qp++ & 0xffff);
    qp->qp_type = IBV_QPT_RAW_PACKET;
    qp->state = IBV_QPS_RESET;  // (it receives all the same: the TIR is ready)
    qp->pd = pd;
    qp->ind_tbl = t;
    qp->rx_hash_fields = f;
    memcpy(qp->rx_key, u.rx_hash_key, 40);
    qp->user_handle = a.user_handle;
    caps = {qp->qpn, 0, 0, 0, 0, 0};
    // without DEVX (refused here) mlx5_ib reports no TIR number
    memset(&drv, 0, sizeof drv);
    drv.bfreg_index = kInvalidBfreg;
    ++pd->usecnt;
    ++t->usecnt;
    Qp* raw = qp.get();
    handle = c.add(std::move(qp));
    sim().qps[raw->qpn] = raw;
    UVSIM_TRACE("create_qp qpn 0x%x RSS over ind table %u (%u WQs) fields 0x%llx", raw->qpn, t->num,
                unsigned(t->wqs.size()), (unsigned long long)f);
    return 0;
}

int create_wq(Context& c, const WqArgs& a, uint32_t& handle, uint32_t& max_wr, uint32_t& max_sge, uint32_t& wqn) {
    const DevCfg& d = *c.dev->cfg;
    if (!raw_eth_dev(*c.dev))
        return -EOPNOTSUPP;
    if (a.wq_type != IBV_WQT_RQ)
        return -EINVAL;
    Pd* pd = c.get<Pd>(a.pd, ObjType::Pd);
    Cq* cq = c.get<Cq>(a.cq, ObjType::Cq);
    if (!pd || !cq)
        return -EINVAL;
    if (a.max_wr > d.max_qp_wr || a.max_sge > d.max_sge)
        return -EINVAL;
    if (a.create_flags)
        return -EOPNOTSUPP;  // VLAN stripping, FCS scatter, delay drop, end padding: not offered
    const mlx5_ib_create_wq& u = a.drv;
    if (a.drv_len < offsetof(mlx5_ib_create_wq, single_stride_log_num_of_bytes))
        return -EINVAL;
    if (u.comp_mask)
        return -EOPNOTSUPP;  // striding RQs are not offered
    if (u.flags)
        return -EOPNOTSUPP;  // (MLX5_WQ_FLAG_SIGNATURE: not modelled)
    if (!is_pow2(u.rq_wqe_count) || u.rq_wqe_count > d.max_qp_wr || u.rq_wqe_shift < 4 || u.rq_wqe_shift > 12)
        return -EINVAL;
    if (int e = check_uidx(c, true, u.user_index))
        return e;
    const uint64_t size = uint64_t(u.rq_wqe_count) << u.rq_wqe_shift;
    if (!app_range_ok(u.buf_addr, size, false) || !app_range_ok(u.db_addr, 8, true))
        return -EFAULT;
    if ((u.db_addr & 3) || (u.buf_addr & 63))
        return -EINVAL;
    auto w = std::make_unique<Wq>();
    w->wqn = (sim().slot << 16) | 0x8000 | (sim().next_wq++ & 0x7fff);
    while (sim().wqs.count(w->wqn))
        w->wqn = (sim().slot << 16) | 0x8000 | (sim().next_wq++ & 0x7fff);
    w->pd = pd;
    w->cq = cq;
    w->state = IBV_WQS_RESET;
    w->buf = u.buf_addr;
    w->dbrec = reinterpret_cast<uint32_t*>(u.db_addr);
    w->wqe_cnt = u.rq_wqe_count;
    w->wqe_shift = u.rq_wqe_shift;
    w->uidx = u.user_index;
    w->max_wr = a.max_wr;
    w->max_sge = a.max_sge;
    w->user_handle = a.user_handle;
    max_wr = a.max_wr;
    max_sge = a.max_sge;
    wqn = w->wqn;
    ++pd->usecnt;
    ++cq->usecnt;
    Wq* raw = w.get();
    handle = c.add(std::move(w));
    sim().wqs[raw->wqn] = raw;
    UVSIM_TRACE("create_wq wqn 0x%x %u x %u buf 0x%llx db 0x%llx uidx 0x%x cq 0x%x", raw->wqn, raw->wqe_cnt,
                1u << raw->wqe_shift, (unsigned long long)raw->buf, (unsigned long long)u.db_addr, raw->uidx, cq->cqn);
    return 0;
}

int modify_wq(Context& c, const ib_uverbs_ex_modify_wq& m, size_t drv_len, const uint8_t* drv) {
    Wq* w = c.get<Wq>(m.wq_handle, ObjType::Wq);
    if (!w)
        return -EINVAL;
    if (!m.attr_mask || (m.attr_mask & ~uint32_t(IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE | IBV_WQ_ATTR_FLAGS)))
        return -EINVAL;
    // mlx5_ib_modify_wq: comp_mask and reserved zero
    for (size_t i = 0; i < drv_len; ++i)
        if (drv[i])
            return -EOPNOTSUPP;
    const uint32_t cur = (m.attr_mask & IBV_WQ_ATTR_CURR_STATE) ? m.curr_wq_state : w->state;
    const uint32_t next = (m.attr_mask & IBV_WQ_ATTR_STATE) ? m.wq_state : cur;
    if (cur > IBV_WQS_ERR || next > IBV_WQS_ERR)
        return -EINVAL;
    if ((m.attr_mask & IBV_WQ_ATTR_FLAGS) && (m.flags_mask & m.flags))
        return -EOPNOTSUPP;  // no flag can be switched on
    // the RQ state machine: RST -> RDY, RDY -> RDY/RST/ERR, ERR -> RST
    if ((cur == IBV_WQS_RESET && next == IBV_WQS_ERR) || (cur == IBV_WQS_ERR && next == IBV_WQS_RDY))
        return -EINVAL;
    const uint8_t old = w->state;
    w->state = static_cast<uint8_t>(next);
    if (next == IBV_WQS_RESET)
        w->ci = 0;  // the provider restarts its counter
    if (next != IBV_WQS_RDY)
        engine_wq_destroy(*w);
    UVSIM_TRACE("modify_wq wqn 0x%x %u -> %u", w->wqn, old, w->state);
    return 0;
}

int destroy_wq(Context& c, uint32_t handle, uint32_t& events) {
    Wq* w = c.get<Wq>(handle, ObjType::Wq);
    if (!w)
        return -EINVAL;
    if (w->usecnt)
        return -EBUSY;  // in an indirection table
    engine_wq_destroy(*w);
    events = w->events_reported - drop_unread_async(c, w->user_handle);
    --w->pd->usecnt;
    --w->cq->usecnt;
    sim().wqs.erase(w->wqn);
    UVSIM_TRACE("destroy_wq wqn 0x%x", w->wqn);
    c.objects.erase(handle);
    return 0;
}

int create_rwq_ind_tbl(Context& c, uint32_t log_size, const uint32_t* wq_handles, uint32_t& handle, uint32_t& num) {
    if (!raw_eth_dev(*c.dev))
        return -EOPNOTSUPP;
    if (log_size > IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE)
        return -EINVAL;
    auto t = std::make_unique<RwqIndTbl>();
    t->log_size = log_size;
    for (uint32_t i = 0; i < (1u << log_size); ++i) {
        Wq* w = c.get<Wq>(wq_handles[i], ObjType::Wq);
        if (!w)
            return -EINVAL;
        t->wqs.push_back(w);
    }
    for (Wq* w : t->wqs)
        ++w->usecnt;
    t->num = (sim().slot << 16) | (sim().next_ind_tbl++ & 0xffff);
    num = t->num;
    RwqIndTbl* raw = t.get();
    handle = c.add(std::move(t));
    UVSIM_TRACE("create_rwq_ind_tbl %u: %u WQs", raw->num, 1u << log_size);
    return 0;
}

int destroy_rwq_ind_tbl(Context& c, uint32_t handle) {
    RwqIndTbl* t = c.get<RwqIndTbl>(handle, ObjType::RwqIndTbl);
    if (!t)
        return -EINVAL;
    if (t->usecnt)
        return -EBUSY;  // an RSS QP uses it
    for (Wq* w : t->wqs)
        --w->usecnt;
    c.objects.erase(handle);
    return 0;
}

namespace {

// mlx5_ib's driver data of CREATE_FLOW: at most one counters entry, whose
// (description, index) pairs the kernel copies from the application.
// 0, or the kernel's errno; `descs` stays empty without an entry.
int flow_counter_descs(const uint8_t* drv, size_t drv_len, bool& given,
                       std::vector<std::pair<uint32_t, uint32_t>>& descs) {
    given = false;
    if (!drv_len)
        return 0;
    mlx5_ib_create_flow hdr{};
    if (drv_len < sizeof hdr)
        return -EOPNOTSUPP;
    memcpy(&hdr, drv, sizeof hdr);
    if (hdr.ncounters_data > 1)
        return -EINVAL;
    const size_t need = sizeof hdr + hdr.ncounters_data * sizeof(mlx5_ib_flow_counters_data);
    for (size_t k = need; k < drv_len; ++k)
        if (drv[k])
            return -EOPNOTSUPP;
    if (drv_len < need)
        return -EFAULT;
    if (!hdr.ncounters_data)
        return 0;
    mlx5_ib_flow_counters_data d;
    memcpy(&d, drv + sizeof hdr, sizeof d);
    constexpr uint32_t kMaxCounters = 0xffff / 8;  // mlx5_ib's MAX_COUNTERS_NUM
    if (d.ncounters > kMaxCounters)
        return -EINVAL;
    std::vector<mlx5_ib_flow_counters_desc> v(d.ncounters);
    if (!app_read(v.data(), reinterpret_cast<uintptr_t>(d.counters_data),
                  v.size() * sizeof(mlx5_ib_flow_counters_desc)))
        return -EFAULT;
    given = true;
    for (const auto& x : v)
        descs.emplace_back(x.description, x.index);
    return 0;
}

}  // namespace

int create_counters(Context& c, uint32_t& handle) {
    if (!raw_eth_dev(*c.dev))
        return -EOPNOTSUPP;  // flow counters go with flow steering
    handle = c.add(std::make_unique<Counters>());
    return 0;
}

// (EBUSY while a flow rule counts into them)
int destroy_counters(Context& c, uint32_t handle) { return erase_unused(c, handle, ObjType::Counters); }

// The core: counters no rule uses are EINVAL. mlx5_ib: the buffer must
// reach the highest index described; each description's count is added
// at its index, the rest is zero.
int read_counters(Context& c, uint32_t handle, std::vector<uint64_t>& out) {
    Counters* k = c.get<Counters>(handle, ObjType::Counters);
    if (!k)
        return -EINVAL;
    if (!k->usecnt)
        return -EINVAL;
    if (k->max_index > out.size())
        return -EINVAL;
    std::fill(out.begin(), out.end(), 0);
    for (const auto& [desc, idx] : k->descs)
        out[idx] += desc == IBV_COUNTER_PACKETS ? k->packets : k->bytes;
    return 0;
}

int create_flow(Context& c, uint32_t qph, const uint8_t* attr, size_t attr_len, const uint8_t* drv, size_t drv_len,
                uint32_t& handle) {
    ib_uverbs_flow_attr fa;
    if (attr_len < sizeof fa)
        return -EINVAL;
    memcpy(&fa, attr, sizeof fa);
    if (fa.reserved[0] || fa.reserved[1])
        return -EINVAL;
    if (fa.flags & ~uint32_t(IBV_FLOW_ATTR_FLAGS_DONT_TRAP | IBV_FLOW_ATTR_FLAGS_EGRESS))
        return -EINVAL;
    // size: the bytes of the specs after the attribute
    if (fa.size > attr_len - sizeof fa)
        return -EINVAL;
    Qp* qp = c.get<Qp>(qph, ObjType::Qp);
    if (!qp)
        return -EINVAL;
    if (qp->qp_type != IBV_QPT_UD && qp->qp_type != IBV_QPT_RAW_PACKET)
        return -EINVAL;
    std::vector<FlowSpec> specs;
    FlowActions act;
    if (int e = decode_flow_specs(attr + sizeof fa, fa.size, fa.num_of_specs, specs, act))
        return e;
    const bool drop = act.drop;
    Counters* counters = nullptr;
    if (act.count && !(counters = c.get<Counters>(act.counters_handle, ObjType::Counters)))
        return -EINVAL;
    // mlx5_ib: rules on raw packet QPs (UD underlay steering is IPoIB's),
    // ingress only, priorities 0..15 of the NIC's user range
    if (qp->qp_type != IBV_QPT_RAW_PACKET || (fa.flags & IBV_FLOW_ATTR_FLAGS_EGRESS))
        return -EOPNOTSUPP;
    const DevCfg& d = *c.dev->cfg;
    if (fa.port < 1 || fa.port > d.ports.size())
        return -EINVAL;
    if (!d.ports[fa.port - 1].ethernet)
        return -EOPNOTSUPP;
    if (fa.type > IBV_FLOW_ATTR_SNIFFER)
        return -EINVAL;
    if (fa.priority > 15 && fa.type == IBV_FLOW_ATTR_NORMAL)
        return -ENOSPC;
    if (fa.type != IBV_FLOW_ATTR_NORMAL && (!specs.empty() || drop || fa.flags))
        return -EINVAL;  // the default and sniffer rules match everything they get
    bool given = false;
    std::vector<std::pair<uint32_t, uint32_t>> descs;
    if (int e = flow_counter_descs(drv, drv_len, given, descs))
        return e;
    if (counters && !counters->bound) {
        // the first rule binds the counters, with the descriptions it brings
        uint32_t max_index = 0;
        for (const auto& [desc, idx] : descs) {
            if (desc > IBV_COUNTER_BYTES)
                return -EINVAL;
            max_index = std::max(max_index, idx + 1);
        }
        counters->descs = std::move(descs);
        counters->max_index = max_index;
        counters->bound = true;
    }
    auto f = std::make_unique<Flow>();
    f->qp = qp;
    f->dev_index = c.dev->index;
    f->type = fa.type;
    f->priority = fa.priority;
    f->port = fa.port;
    f->flags = fa.flags;
    f->drop = drop;
    f->counters = counters;
    if (counters)
        ++counters->usecnt;
    f->specs = std::move(specs);
    f->seq = sim().next_flow_seq++;
    ++qp->usecnt;
    Flow* raw = f.get();
    handle = c.add(std::move(f));
    sim().flows.push_back(raw);
    UVSIM_TRACE("create_flow %u: qpn 0x%x port %u type %u priority %u specs %zu%s", handle, qp->qpn, raw->port,
                raw->type, raw->priority, raw->specs.size(), drop ? " drop" : "");
    return 0;
}

int destroy_flow(Context& c, uint32_t handle) {
    Flow* f = c.get<Flow>(handle, ObjType::Flow);
    if (!f)
        return -EINVAL;
    --f->qp->usecnt;
    if (f->counters)
        --f->counters->usecnt;
    auto& v = sim().flows;
    v.erase(std::remove(v.begin(), v.end(), f), v.end());
    c.objects.erase(handle);
    return 0;
}

}  // namespace uvsim
