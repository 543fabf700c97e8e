// The uverbs ioctl ABI: ioctl(fd, RDMA_VERBS_IOCTL, hdr) where hdr is
// struct ib_uverbs_ioctl_hdr followed by an array of struct ib_uverbs_attr.
//
// The decoder works like the kernel's method framework: every method has a
// table of attribute specifications (id, kind, size range, mandatory, the
// object an IDR/FD attribute names and how it is accessed). The attributes
// the caller sent are checked against it in their order, the mandatory ones
// must all be there, and then the method's handler runs with the decoded
// bundle. The errnos are the kernel's:
//   wrong ioctl number                         ENOTTY
//   header unreadable                          EFAULT
//   length != header + num_attrs * 16, > page  EINVAL
//   reserved header fields non-zero            EPROTONOSUPPORT
//   unknown object or method                   EPROTONOSUPPORT (libibverbs
//                                              then uses the write command)
//   unknown attribute marked mandatory         EPROTONOSUPPORT; unmarked:
//                                              ignored
//   the same attribute twice                   EINVAL
//   bad size / reserved bits of an attribute   EINVAL
//   non-zero bytes past a known struct         EOPNOTSUPP
//   a mandatory attribute missing              EINVAL
//   IDR handle negative or of another type     EINVAL; unknown: ENOENT
//   FD attribute not such a file               EBADF
// Output attributes get UVERBS_ATTR_F_VALID_OUTPUT set in the caller's
// array once they were written; new object handles and file descriptors are
// written back into the data field of their attribute.
//
// The objects live in Context::objects, shared with the write ABI: an object
// made by one is seen (and destroyed) by the other.
#include "verbs.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <net/if.h>
#include <sys/ioctl.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/mlx5_user_ioctl_cmds.h>
#include <rdma/mlx5_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

namespace uvsim {

namespace {

constexpr size_t kMaxHdrLen = 4096;  // the kernel refuses more than a page

// ------------------------------------------------------------ attribute specs

enum class Kind : uint8_t { PtrIn, PtrOut, Idr, Fd, EnumIn };
enum class Access : uint8_t { Read, New, Destroy };

struct Spec {
    uint16_t id;
    Kind kind;
    bool mandatory;
    uint16_t min_len = 0;  // pointer attributes: accepted lengths
    uint16_t max_len = 0;
    bool zero_trailing = false;  // a struct: longer is fine if the tail is zero
    uint16_t obj = 0;  // IDR/FD: the object type it names
    Access access = Access::Read;
    uint8_t enum_elems = 0;  // EnumIn: number of valid elem_id values
};

constexpr Spec in_sized(uint16_t id, uint16_t len, bool mand) { return {id, Kind::PtrIn, mand, len, len}; }
constexpr Spec out_sized(uint16_t id, uint16_t len, bool mand) { return {id, Kind::PtrOut, mand, len, len}; }
constexpr Spec in_struct(uint16_t id, uint16_t min, uint16_t len, bool mand) {
    return {id, Kind::PtrIn, mand, min, len, true};
}
constexpr Spec out_struct(uint16_t id, uint16_t min, uint16_t len, bool mand) {
    return {id, Kind::PtrOut, mand, min, len, true};
}
constexpr Spec in_min(uint16_t id, uint16_t min, bool mand) { return {id, Kind::PtrIn, mand, min, 0xffff}; }
constexpr Spec out_min(uint16_t id, uint16_t min, bool mand) { return {id, Kind::PtrOut, mand, min, 0xffff}; }
// a constant: always a u64 carried inline
constexpr Spec const_in(uint16_t id, bool mand) { return in_sized(id, 8, mand); }
// flags: a u32 or a u64 inline
constexpr Spec flags_in(uint16_t id, bool mand) { return {id, Kind::PtrIn, mand, 4, 8}; }
constexpr Spec idr(uint16_t id, uint16_t obj, Access acc, bool mand) {
    return {id, Kind::Idr, mand, 0, 0, false, obj, acc};
}
constexpr Spec fd_attr(uint16_t id, uint16_t obj, Access acc, bool mand) {
    return {id, Kind::Fd, mand, 0, 0, false, obj, acc};
}

// ------------------------------------------------------------------ bundle

struct Attr {
    const Spec* spec = nullptr;
    size_t idx = 0;  // position in the caller's array
    ib_uverbs_attr u{};
    std::vector<uint8_t> in;  // input bytes (inline or copied in)
};

struct Method;

struct Bundle {
    Context& c;
    uint64_t uattrs;  // address of the caller's attribute array
    const Method& m;
    std::map<uint16_t, Attr> attrs;

    const Attr* get(uint16_t id) const {
        auto it = attrs.find(id);
        return it == attrs.end() ? nullptr : &it->second;
    }
    bool has(uint16_t id) const { return get(id) != nullptr; }

    uint64_t attr_addr(const Attr& a) const { return uattrs + a.idx * sizeof(ib_uverbs_attr); }

    // The kernel's uverbs_set_output: flags | VALID_OUTPUT back to the caller.
    int set_output(const Attr& a) const {
        const uint16_t f = a.u.flags | UVERBS_ATTR_F_VALID_OUTPUT;
        return app_write(attr_addr(a) + offsetof(ib_uverbs_attr, flags), &f, sizeof f) ? 0 : -EFAULT;
    }

    // min(len, n) bytes to the attribute's buffer; ENOENT when absent.
    int copy_to(uint16_t id, const void* p, size_t n) const {
        const Attr* a = get(id);
        if (!a)
            return -ENOENT;
        if (!app_write(a->u.data, p, std::min<size_t>(a->u.len, n)))
            return -EFAULT;
        return set_output(*a);
    }

    // As copy_to, and a longer buffer gets its tail zeroed.
    int copy_to_struct_or_zero(uint16_t id, const void* p, size_t n) const {
        const Attr* a = get(id);
        if (!a)
            return -ENOENT;
        if (a->u.len > n) {
            std::vector<uint8_t> z(a->u.len - n, 0);
            if (!app_write(a->u.data + n, z.data(), z.size()))
                return -EFAULT;
        }
        return copy_to(id, p, n);
    }

    // The attribute's input bytes into p (at most n of them).
    int copy_from(uint16_t id, void* p, size_t n) const {
        const Attr* a = get(id);
        if (!a)
            return -ENOENT;
        if (a->in.size() > n)
            return -EINVAL;
        memset(p, 0, n);
        memcpy(p, a->in.data(), a->in.size());
        return 0;
    }
    // As copy_from, a longer input (zero tail checked) is cut to n bytes.
    int copy_from_or_zero(uint16_t id, void* p, size_t n) const {
        const Attr* a = get(id);
        memset(p, 0, n);
        if (!a)
            return -ENOENT;
        if (!a->in.empty())
            memcpy(p, a->in.data(), std::min(n, a->in.size()));
        return 0;
    }

    // A constant attribute; EINVAL above max. Absent: ENOENT, or def.
    int get_const(uint16_t id, uint64_t& v, uint64_t max, const uint64_t* def = nullptr) const {
        const Attr* a = get(id);
        if (!a) {
            if (!def)
                return -ENOENT;
            v = *def;
        } else {
            v = a->u.data;
        }
        return v > max ? -EINVAL : 0;
    }

    // A flags attribute (u32 or u64); absent means 0.
    int get_flags(uint16_t id, uint64_t& v, uint64_t allowed, bool u32_only = true) const {
        v = 0;
        const Attr* a = get(id);
        if (!a)
            return 0;
        if (a->u.len == 8)
            v = a->u.data;
        else if (a->u.len == 4)
            v = static_cast<uint32_t>(a->u.data);
        else
            return -EINVAL;
        if (v & ~allowed)
            return -EINVAL;
        if (u32_only && v > 0xffffffffull)
            return -EINVAL;
        return 0;
    }

    // The handle of an IDR attribute (validated during decoding).
    uint32_t handle(uint16_t id) const { return static_cast<uint32_t>(get(id)->u.data); }

    // A new object's id or fd, written into the attribute's data field.
    int put_new_id(uint16_t id, int64_t v) const {
        const Attr* a = get(id);
        return app_write(attr_addr(*a) + offsetof(ib_uverbs_attr, data), &v, sizeof v) ? 0 : -EFAULT;
    }

    // Driver data (UHW_IN / UHW_OUT).
    std::vector<uint8_t> uhw_in() const {
        const Attr* a = get(UVERBS_ATTR_UHW_IN);
        return a ? a->in : std::vector<uint8_t>{};
    }
    size_t uhw_out_len() const {
        const Attr* a = get(UVERBS_ATTR_UHW_OUT);
        return a ? a->u.len : 0;
    }
    // The driver writes what fits; VALID_OUTPUT is set after the method.
    int uhw_out(const void* p, size_t n) const {
        const Attr* a = get(UVERBS_ATTR_UHW_OUT);
        if (!a)
            return 0;
        return app_write(a->u.data, p, std::min<size_t>(a->u.len, n)) ? 0 : -EFAULT;
    }
};

using Handler = int (*)(Bundle&);

struct Method {
    uint16_t obj;
    uint16_t id;
    std::vector<Spec> specs;
    bool udata;  // UVERBS_ATTR_UHW_IN/OUT are accepted
    Handler fn;

    const Spec* spec(uint16_t attr) const {
        for (const Spec& s : specs)
            if (s.id == attr)
                return &s;
        return nullptr;
    }
    bool destroys() const {
        for (const Spec& s : specs)
            if (s.kind == Kind::Idr && s.access == Access::Destroy)
                return true;
        return false;
    }
};

// ------------------------------------------------------------ object types

// The kernel object type behind a uverbs object id (IDR objects only).
std::optional<ObjType> idr_type(uint16_t obj) {
    switch (obj) {
    case UVERBS_OBJECT_PD: return ObjType::Pd;
    case UVERBS_OBJECT_CQ: return ObjType::Cq;
    case UVERBS_OBJECT_QP: return ObjType::Qp;
    case UVERBS_OBJECT_SRQ: return ObjType::Srq;
    case UVERBS_OBJECT_AH: return ObjType::Ah;
    case UVERBS_OBJECT_MR: return ObjType::Mr;
    case UVERBS_OBJECT_MW: return ObjType::Mw;
    case UVERBS_OBJECT_XRCD: return ObjType::Xrcd;
    case MLX5_IB_OBJECT_UAR: return ObjType::Uar;
    case UVERBS_OBJECT_WQ: return ObjType::Wq;
    case UVERBS_OBJECT_RWQ_IND_TBL: return ObjType::RwqIndTbl;
    case UVERBS_OBJECT_FLOW: return ObjType::Flow;
    case UVERBS_OBJECT_DM: return ObjType::Dm;
    case UVERBS_OBJECT_COUNTERS: return ObjType::Counters;
    default: return std::nullopt;
    }
}

// Objects this emulated device registers (an object with no method here,
// like the completion channel made by the write command, still exists).
bool object_exists(uint16_t obj) {
    switch (obj) {
    case UVERBS_OBJECT_DEVICE:
    case UVERBS_OBJECT_PD:
    case UVERBS_OBJECT_COMP_CHANNEL:
    case UVERBS_OBJECT_CQ:
    case UVERBS_OBJECT_QP:
    case UVERBS_OBJECT_SRQ:
    case UVERBS_OBJECT_AH:
    case UVERBS_OBJECT_MR:
    case UVERBS_OBJECT_MW:
    case UVERBS_OBJECT_ASYNC_EVENT:
    case UVERBS_OBJECT_XRCD:
    case UVERBS_OBJECT_WQ:
    case UVERBS_OBJECT_RWQ_IND_TBL:
    case UVERBS_OBJECT_FLOW:
    case UVERBS_OBJECT_DM:
    case UVERBS_OBJECT_COUNTERS:
    case MLX5_IB_OBJECT_UAR: return true;
    default: return false;
    }
}

bool is_async_fd(int fd) {
    for (const auto& [k, ctx] : sim().files)
        if ((ctx->async && ctx->async->app_fd == fd) ||
            std::any_of(ctx->more_async.begin(), ctx->more_async.end(), [&](const auto& f) { return f->app_fd == fd; }))
            return true;
    return false;
}

// ------------------------------------------------------------ attr decoding

// Bytes [from, len) of a pointer attribute are all zero (false also when
// they cannot be read, as the kernel's check does).
bool tail_is_zero(const ib_uverbs_attr& u, size_t from) {
    std::vector<uint8_t> b(u.len);
    if (u.len <= sizeof(u.data))
        memcpy(b.data(), &u.data, u.len);
    else if (!app_read(b.data(), u.data, u.len))
        return false;
    return std::all_of(b.begin() + static_cast<long>(from), b.end(), [](uint8_t x) { return x == 0; });
}

int lookup_object(const Bundle& b, const Spec& s, const ib_uverbs_attr& u) {
    Context& c = b.c;
    if (s.access == Access::New)
        return c.have_ucontext ? 0 : -EINVAL;  // a new object needs a ucontext
    if (s.kind == Kind::Idr) {
        if (u.data_s64 < 0)
            return -EINVAL;
        if (u.data > 0xffffffffull)
            return -ENOENT;
        auto it = c.objects.find(static_cast<uint32_t>(u.data));
        if (it == c.objects.end())
            return -ENOENT;
        const auto t = idr_type(s.obj);
        if (!t || it->second->type != *t)
            return -EINVAL;
        return 0;
    }
    // FD objects: the number must be an int and name such a file
    if (u.data_s64 != static_cast<int32_t>(u.data_s64))
        return -EINVAL;
    const int fd = static_cast<int>(u.data_s64);
    if (fd < 0)
        return -EBADF;
    if (s.obj == UVERBS_OBJECT_COMP_CHANNEL)
        return sim().channels.count(fd) ? 0 : -EBADF;
    if (s.obj == UVERBS_OBJECT_ASYNC_EVENT)
        return is_async_fd(fd) ? 0 : -EBADF;
    return -EBADF;
}

int decode_attr(Bundle& b, const ib_uverbs_attr& u, size_t idx) {
    const Spec* s = b.m.spec(u.attr_id);
    if (!s)  // unknown here: fatal only when the caller insists
        return (u.flags & UVERBS_ATTR_F_MANDATORY) ? -EPROTONOSUPPORT : 0;
    if (b.attrs.count(u.attr_id))
        return -EINVAL;
    Attr a;
    a.spec = s;
    a.idx = idx;
    a.u = u;
    switch (s->kind) {
    case Kind::EnumIn:
        if (u.attr_data.enum_data.elem_id >= s->enum_elems)
            return -EOPNOTSUPP;
        if (u.attr_data.enum_data.reserved)
            return -EINVAL;
        [[fallthrough]];
    case Kind::PtrIn:
        if (u.len > s->max_len && s->zero_trailing && !tail_is_zero(u, s->max_len))
            return -EOPNOTSUPP;
        [[fallthrough]];
    case Kind::PtrOut:
        if (u.len < s->min_len || (!s->zero_trailing && u.len > s->max_len))
            return -EINVAL;
        if (s->kind != Kind::EnumIn && u.attr_data.reserved)
            return -EINVAL;
        if (s->kind != Kind::PtrOut) {
            // up to 8 bytes travel inline in data, more by pointer
            a.in.resize(u.len);
            if (u.len == 0)
                ;  // nothing to copy (and no buffer to copy into)
            else if (u.len <= sizeof(u.data))
                memcpy(a.in.data(), &u.data, u.len);
            else if (!app_read(a.in.data(), u.data, u.len))
                return -EFAULT;
        }
        break;
    case Kind::Idr:
    case Kind::Fd:
        if (u.attr_data.reserved || u.len != 0)
            return -EINVAL;
        if (int e = lookup_object(b, *s, u))
            return e;
        break;
    }
    b.attrs.emplace(u.attr_id, std::move(a));
    return 0;
}

// IS_UVERBS_COPY_ERR: an absent optional output is not an error
bool copy_err(int r) { return r && r != -ENOENT; }

// ----------------------------------------------------------- DEVICE methods

int m_get_context(Bundle& b) {
    const uint32_t ncomp = 1;
    const uint64_t core_support = IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS;
    int r = b.copy_to(UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, &ncomp, sizeof ncomp);
    if (copy_err(r))
        return r;
    r = b.copy_to(UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, &core_support, sizeof core_support);
    if (copy_err(r))
        return r;
    const std::vector<uint8_t> in = b.uhw_in();
    mlx5_ib_alloc_ucontext_resp resp;
    if (int e = get_context(b.c, in.data(), in.size(), resp))
        return e;
    // no async fd here: the ioctl path allocates it with ASYNC_EVENT_ALLOC
    resp.response_length = static_cast<uint32_t>(std::min(b.uhw_out_len(), sizeof resp));
    if (int e = b.uhw_out(&resp, sizeof resp)) {
        b.c.have_ucontext = false;
        return e;
    }
    return 0;
}

int m_query_context(Bundle& b) {
    const uint32_t ncomp = 1;
    const uint64_t core_support = IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS;
    int r = b.copy_to(UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, &ncomp, sizeof ncomp);
    if (copy_err(r))
        return r;
    r = b.copy_to(UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT, &core_support, sizeof core_support);
    if (copy_err(r))
        return r;
    // mlx5: the ucontext response again, as GET_CONTEXT granted it (the
    // bfregs, UAR size and dynamic UARs the first context asked for)
    mlx5_ib_alloc_ucontext_resp resp{};
    memcpy(&resp, b.c.uctx_resp.data(), std::min(sizeof resp, b.c.uctx_resp.size()));
    return b.copy_to_struct_or_zero(MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX, &resp, sizeof resp);
}

int m_query_port(Bundle& b) {
    uint64_t port;
    if (int e = b.get_const(UVERBS_ATTR_QUERY_PORT_PORT_NUM, port, 0xff))
        return e;
    ib_uverbs_query_port_resp_ex r{};
    if (int e = fill_query_port(*b.c.dev, static_cast<uint32_t>(port), r.legacy_resp))
        return e;
    r.port_cap_flags2 = 0;
    return b.copy_to_struct_or_zero(UVERBS_ATTR_QUERY_PORT_RESP, &r, sizeof r);
}

int m_info_handles(Bundle& b) {
    const Attr* list = b.get(UVERBS_ATTR_INFO_HANDLES_LIST);
    if (!list || list->u.len == 0 || list->u.len % 4)
        return -EINVAL;
    uint64_t obj;
    if (int e = b.get_const(UVERBS_ATTR_INFO_OBJECT_ID, obj, 0xffff))
        return e;
    if (!object_exists(static_cast<uint16_t>(obj)))
        return -ENOMSG;
    const size_t max = list->u.len / 4;
    std::vector<uint32_t> hs;
    const auto t = idr_type(static_cast<uint16_t>(obj));
    if (t)
        for (const auto& [h, o] : b.c.objects) {
            if (hs.size() >= max)
                break;
            if (o->type == *t)
                hs.push_back(h);
        }
    if (int e = b.copy_to(UVERBS_ATTR_INFO_HANDLES_LIST, hs.data(), hs.size() * 4))
        return e;
    const uint64_t total = hs.size();
    return b.copy_to(UVERBS_ATTR_INFO_TOTAL_HANDLES, &total, sizeof total);
}

// The GID table of a port as the kernel's cache holds it.
void gid_entries(const Device& d, uint32_t port, std::vector<ib_uverbs_gid_entry>& out) {
    const PortCfg& p = d.cfg->ports[port - 1];
    const unsigned ifindex = p.ethernet && !p.netdev.empty() ? if_nametoindex(p.netdev.c_str()) : 0;
    const auto& gids = port_gids(p);
    for (size_t i = 0; i < gids.size(); ++i) {
        ib_uverbs_gid_entry e{};
        memcpy(e.gid, gids[i].gid, 16);
        e.gid_index = static_cast<uint32_t>(i);
        e.port_num = port;
        e.gid_type = !p.ethernet ? IB_UVERBS_GID_TYPE_IB
            : gids[i].type == 1  ? IB_UVERBS_GID_TYPE_ROCE_V2
                                 : IB_UVERBS_GID_TYPE_ROCE_V1;
        e.netdev_ifindex = ifindex;
        out.push_back(e);
    }
}

int m_query_gid_table(Bundle& b) {
    uint64_t flags, esize;
    if (int e = b.get_flags(UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, flags, 0))
        return e;
    if (int e = b.get_const(UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, esize, ~0ull))
        return e;
    const Attr* out = b.get(UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES);
    if (!esize || out->u.len % esize)
        return -EINVAL;
    const size_t max = out->u.len / esize;
    if (max == 0)
        return -EINVAL;
    std::vector<ib_uverbs_gid_entry> es;
    for (uint32_t port = 1; port <= b.c.dev->cfg->ports.size(); ++port)
        gid_entries(*b.c.dev, port, es);
    if (es.size() > max)
        return -EINVAL;  // the kernel refuses a buffer that cannot hold them all
    if (esize == sizeof(ib_uverbs_gid_entry)) {
        if (int e = b.copy_to(UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, es.data(), es.size() * esize))
            return e;
    } else {
        // a shorter or longer entry of another ABI version: entry by entry
        std::vector<uint8_t> buf(es.size() * esize, 0);
        for (size_t i = 0; i < es.size(); ++i)
            memcpy(buf.data() + i * esize, &es[i], std::min<size_t>(esize, sizeof es[i]));
        if (!app_write(out->u.data, buf.data(), buf.size()))
            return -EFAULT;
        if (int e = b.set_output(*out))
            return e;
    }
    const uint64_t n = es.size();
    return b.copy_to(UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, &n, sizeof n);
}

int m_query_gid_entry(Bundle& b) {
    uint64_t flags, port, index;
    if (int e = b.get_flags(UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, flags, 0))
        return e;
    if (int e = b.get_const(UVERBS_ATTR_QUERY_GID_ENTRY_PORT, port, 0xffffffffull))
        return e;
    if (int e = b.get_const(UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, index, 0xffffffffull))
        return e;
    const Device& d = *b.c.dev;
    if (port < 1 || port > d.cfg->ports.size())
        return -EINVAL;
    ib_uverbs_query_port_resp pr;
    fill_query_port(d, static_cast<uint32_t>(port), pr);
    if (index >= pr.gid_tbl_len)
        return -EINVAL;
    std::vector<ib_uverbs_gid_entry> es;
    gid_entries(d, static_cast<uint32_t>(port), es);
    if (index >= es.size())
        return -ENODATA;  // an empty slot of the table
    return b.copy_to_struct_or_zero(UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, &es[index], sizeof es[index]);
}

// INVOKE_WRITE: a write command carried in attributes. The core request is
// CORE_IN, the core response goes to CORE_OUT, driver data is UHW_IN/OUT.
// It runs through the write decoder on a staging copy laid out as a write()
// would carry it.
struct WriteCmd {
    uint32_t cmd;
    uint16_t req, resp;  // core request / response sizes
};
constexpr WriteCmd kWriteCmds[] = {
    {IB_USER_VERBS_CMD_GET_CONTEXT, sizeof(ib_uverbs_get_context), sizeof(ib_uverbs_get_context_resp)},
    {IB_USER_VERBS_CMD_QUERY_DEVICE, sizeof(ib_uverbs_query_device), sizeof(ib_uverbs_query_device_resp)},
    {IB_USER_VERBS_CMD_QUERY_PORT, sizeof(ib_uverbs_query_port), sizeof(ib_uverbs_query_port_resp)},
    {IB_USER_VERBS_CMD_ALLOC_PD, sizeof(ib_uverbs_alloc_pd), sizeof(ib_uverbs_alloc_pd_resp)},
    {IB_USER_VERBS_CMD_DEALLOC_PD, sizeof(ib_uverbs_dealloc_pd), 0},
    {IB_USER_VERBS_CMD_CREATE_AH, sizeof(ib_uverbs_create_ah), sizeof(ib_uverbs_create_ah_resp)},
    {IB_USER_VERBS_CMD_DESTROY_AH, sizeof(ib_uverbs_destroy_ah), 0},
    {IB_USER_VERBS_CMD_REG_MR, sizeof(ib_uverbs_reg_mr), sizeof(ib_uverbs_reg_mr_resp)},
    {IB_USER_VERBS_CMD_REREG_MR, sizeof(ib_uverbs_rereg_mr), sizeof(ib_uverbs_rereg_mr_resp)},
    {IB_USER_VERBS_CMD_DEREG_MR, sizeof(ib_uverbs_dereg_mr), 0},
    {IB_USER_VERBS_CMD_ALLOC_MW, sizeof(ib_uverbs_alloc_mw), sizeof(ib_uverbs_alloc_mw_resp)},
    {IB_USER_VERBS_CMD_DEALLOC_MW, sizeof(ib_uverbs_dealloc_mw), 0},
    {IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, sizeof(ib_uverbs_create_comp_channel),
     sizeof(ib_uverbs_create_comp_channel_resp)},
    {IB_USER_VERBS_CMD_CREATE_CQ, sizeof(ib_uverbs_create_cq), sizeof(ib_uverbs_create_cq_resp)},
    {IB_USER_VERBS_CMD_RESIZE_CQ, sizeof(ib_uverbs_resize_cq), sizeof(ib_uverbs_resize_cq_resp)},
    {IB_USER_VERBS_CMD_DESTROY_CQ, sizeof(ib_uverbs_destroy_cq), sizeof(ib_uverbs_destroy_cq_resp)},
    {IB_USER_VERBS_CMD_CREATE_QP, sizeof(ib_uverbs_create_qp), sizeof(ib_uverbs_create_qp_resp)},
    {IB_USER_VERBS_CMD_QUERY_QP, sizeof(ib_uverbs_query_qp), sizeof(ib_uverbs_query_qp_resp)},
    {IB_USER_VERBS_CMD_MODIFY_QP, sizeof(ib_uverbs_modify_qp), 0},
    {IB_USER_VERBS_CMD_DESTROY_QP, sizeof(ib_uverbs_destroy_qp), sizeof(ib_uverbs_destroy_qp_resp)},
    {IB_USER_VERBS_CMD_ATTACH_MCAST, sizeof(ib_uverbs_attach_mcast), 0},
    {IB_USER_VERBS_CMD_DETACH_MCAST, sizeof(ib_uverbs_detach_mcast), 0},
    {IB_USER_VERBS_CMD_CREATE_SRQ, sizeof(ib_uverbs_create_srq), sizeof(ib_uverbs_create_srq_resp)},
    {IB_USER_VERBS_CMD_MODIFY_SRQ, sizeof(ib_uverbs_modify_srq), 0},
    {IB_USER_VERBS_CMD_QUERY_SRQ, sizeof(ib_uverbs_query_srq), sizeof(ib_uverbs_query_srq_resp)},
    {IB_USER_VERBS_CMD_DESTROY_SRQ, sizeof(ib_uverbs_destroy_srq), sizeof(ib_uverbs_destroy_srq_resp)},
    {IB_USER_VERBS_CMD_OPEN_XRCD, sizeof(ib_uverbs_open_xrcd), sizeof(ib_uverbs_open_xrcd_resp)},
    {IB_USER_VERBS_CMD_CLOSE_XRCD, sizeof(ib_uverbs_close_xrcd), 0},
    {IB_USER_VERBS_CMD_CREATE_XSRQ, sizeof(ib_uverbs_create_xsrq), sizeof(ib_uverbs_create_srq_resp)},
    {IB_USER_VERBS_CMD_OPEN_QP, sizeof(ib_uverbs_open_qp), sizeof(ib_uverbs_create_qp_resp)},
};

// Extended commands: the kernel's minimum request (up to the last field it
// requires) and response (up to response_length).
constexpr WriteCmd kWriteExCmds[] = {
    {IB_USER_VERBS_EX_CMD_QUERY_DEVICE, sizeof(ib_uverbs_ex_query_device),
     offsetof(ib_uverbs_ex_query_device_resp, response_length) + 4},
    {IB_USER_VERBS_EX_CMD_CREATE_CQ, offsetof(ib_uverbs_ex_create_cq, flags) + 4,
     offsetof(ib_uverbs_ex_create_cq_resp, response_length) + 4},
    {IB_USER_VERBS_EX_CMD_CREATE_QP, offsetof(ib_uverbs_ex_create_qp, comp_mask) + 4,
     offsetof(ib_uverbs_ex_create_qp_resp, response_length) + 4},
    {IB_USER_VERBS_EX_CMD_MODIFY_QP, sizeof(ib_uverbs_modify_qp),
     offsetof(ib_uverbs_ex_modify_qp_resp, response_length) + 4},
    {IB_USER_VERBS_EX_CMD_CREATE_FLOW, sizeof(ib_uverbs_create_flow), sizeof(ib_uverbs_create_flow_resp)},
    {IB_USER_VERBS_EX_CMD_DESTROY_FLOW, sizeof(ib_uverbs_destroy_flow), 0},
    {IB_USER_VERBS_EX_CMD_CREATE_WQ, offsetof(ib_uverbs_ex_create_wq, create_flags),
     offsetof(ib_uverbs_ex_create_wq_resp, wqn) + 4},
    {IB_USER_VERBS_EX_CMD_MODIFY_WQ, offsetof(ib_uverbs_ex_modify_wq, flags), 0},
    {IB_USER_VERBS_EX_CMD_MODIFY_CQ, sizeof(ib_uverbs_ex_modify_cq), 0},
    {IB_USER_VERBS_EX_CMD_DESTROY_WQ, sizeof(ib_uverbs_ex_destroy_wq),
     offsetof(ib_uverbs_ex_destroy_wq_resp, events_reported) + 4},
    {IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL, sizeof(ib_uverbs_ex_create_rwq_ind_table),
     offsetof(ib_uverbs_ex_create_rwq_ind_table_resp, ind_tbl_num) + 4},
    {IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL, sizeof(ib_uverbs_ex_destroy_rwq_ind_table), 0},
};

template <size_t N>
const WriteCmd* find_cmd(const WriteCmd (&t)[N], uint32_t op) {
    for (const WriteCmd& x : t)
        if (x.cmd == op)
            return &x;
    return nullptr;
}

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

int m_invoke_write(Bundle& b) {
    uint64_t cmd;
    if (int e = b.get_const(UVERBS_ATTR_WRITE_CMD, cmd, 0xffffffffull))
        return e;
    if (cmd & ~uint64_t(IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_CMD_COMMAND_MASK))
        return -EINVAL;
    const bool ex = cmd & IB_USER_VERBS_CMD_FLAG_EXTENDED;
    const uint32_t op = static_cast<uint32_t>(cmd & IB_USER_VERBS_CMD_COMMAND_MASK);
    const WriteCmd* w = ex ? find_cmd(kWriteExCmds, op) : find_cmd(kWriteCmds, op);
    if (!w)
        return -EOPNOTSUPP;  // not a write command this device implements
    const Attr* core_in = b.get(UVERBS_ATTR_CORE_IN);
    const Attr* core_out = b.get(UVERBS_ATTR_CORE_OUT);
    const size_t in_len = core_in ? core_in->in.size() : 0;
    const size_t out_len = core_out ? core_out->u.len : 0;
    if (in_len < w->req || out_len < w->resp)
        return -ENOSPC;
    const std::vector<uint8_t> drv_in = b.uhw_in();
    const size_t drv_out = b.uhw_out_len();
    ib_uverbs_cmd_hdr h{};
    h.command = static_cast<uint32_t>(cmd);
    std::vector<uint8_t> req, resp;
    size_t core_resp;  // where the driver's response starts in resp
    if (!ex) {
        // legacy framing: header, core request, driver request, in 4-byte
        // words; the response address first in the core request; the
        // driver's response right after the core response
        core_resp = w->resp;
        resp.assign(round_up(core_resp + drv_out, 4), 0);
        req.assign(sizeof h + round_up(in_len + drv_in.size(), 4), 0);
        if (req.size() / 4 > 0xffff || resp.size() / 4 > 0xffff)
            return -EINVAL;
        h.in_words = static_cast<uint16_t>(req.size() / 4);
        h.out_words = static_cast<uint16_t>(resp.size() / 4);
        memcpy(req.data(), &h, sizeof h);
        memcpy(req.data() + sizeof h, core_in->in.data(), in_len);
        if (!drv_in.empty())
            memcpy(req.data() + sizeof h + in_len, drv_in.data(), drv_in.size());
        if (w->resp) {
            const uint64_t ra = reinterpret_cast<uint64_t>(resp.data());
            memcpy(req.data() + sizeof h, &ra, sizeof ra);
        }
    } else {
        // extended framing: both headers, then core and driver requests in
        // 8-byte words; the core response (whole CORE_OUT) then the driver's
        ib_uverbs_ex_cmd_hdr xh{};
        const size_t in8 = round_up(in_len, 8), din8 = round_up(drv_in.size(), 8);
        core_resp = round_up(out_len, 8);
        const size_t dout8 = round_up(drv_out, 8);
        if (in8 / 8 > 0xffff || din8 / 8 > 0xffff || core_resp / 8 > 0xffff || dout8 / 8 > 0xffff)
            return -EINVAL;
        resp.assign(core_resp + dout8, 0);
        req.assign(sizeof h + sizeof xh + in8 + din8, 0);
        h.in_words = static_cast<uint16_t>(in8 / 8);
        h.out_words = static_cast<uint16_t>(core_resp / 8);
        xh.response = reinterpret_cast<uint64_t>(resp.data());
        xh.provider_in_words = static_cast<uint16_t>(din8 / 8);
        xh.provider_out_words = static_cast<uint16_t>(dout8 / 8);
        memcpy(req.data(), &h, sizeof h);
        memcpy(req.data() + sizeof h, &xh, sizeof xh);
        memcpy(req.data() + sizeof h + sizeof xh, core_in->in.data(), in_len);
        if (!drv_in.empty())
            memcpy(req.data() + sizeof h + sizeof xh + in8, drv_in.data(), drv_in.size());
    }
    // the staged command and response live in our memory, not the
    // application's: let the write decoder reach them even under a test arena
    const KernelBuffer kreq(req.data(), req.size()), kresp(resp.data(), resp.size());
    const ssize_t r = uverbs_write(b.c, req.data(), req.size());
    if (r < 0)
        return static_cast<int>(r);
    if (core_out)
        if (int e = b.copy_to_struct_or_zero(UVERBS_ATTR_CORE_OUT, resp.data(), ex ? out_len : w->resp))
            return e;
    if (drv_out)
        return b.uhw_out(resp.data() + core_resp, drv_out);
    return 0;
}

// ------------------------------------------------------ ASYNC_EVENT methods

int m_async_event_alloc(Bundle& b) {
    // the first async file of a context receives the events of its
    // objects; every one of them the device-wide events
    const int fd = make_async_fd(b.c);
    if (fd < 0)
        return fd;
    if (int e = b.put_new_id(UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, fd)) {
        drop_async_fd(b.c, fd);
        return e;
    }
    return 0;
}

// ------------------------------------------------------------------ CQ

int m_cq_create(Bundle& b) {
    CqArgs a;
    if (int e = b.copy_from(UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, &a.comp_vector, sizeof a.comp_vector))
        return e;
    if (int e = b.copy_from(UVERBS_ATTR_CREATE_CQ_CQE, &a.cqe, sizeof a.cqe))
        return e;
    if (int e = b.copy_from(UVERBS_ATTR_CREATE_CQ_USER_HANDLE, &a.user_handle, sizeof a.user_handle))
        return e;
    uint64_t flags;
    if (int e = b.get_flags(UVERBS_ATTR_CREATE_CQ_FLAGS, flags,
                            IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION | IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN))
        return e;
    a.flags = static_cast<uint32_t>(flags);
    if (const Attr* ch = b.get(UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL))
        a.comp_channel = static_cast<int32_t>(ch->u.data_s64);
    const std::vector<uint8_t> drv = b.uhw_in();
    if (!drv.empty())
        memcpy(&a.drv, drv.data(), std::min(drv.size(), sizeof a.drv));
    a.drv_len = drv.size();
    uint32_t h, cqe, cqn;
    if (int e = create_cq(b.c, a, h, cqe, cqn))
        return e;
    mlx5_ib_create_cq_resp d{};
    d.cqn = cqn;
    int e = b.copy_to(UVERBS_ATTR_CREATE_CQ_RESP_CQE, &cqe, sizeof cqe);
    if (!e)
        e = b.uhw_out(&d, sizeof d);
    if (!e)
        e = b.put_new_id(UVERBS_ATTR_CREATE_CQ_HANDLE, h);
    if (e) {
        ib_uverbs_destroy_cq_resp dr;
        destroy_cq(b.c, h, dr);
    }
    return e;
}

int m_cq_destroy(Bundle& b) {
    ib_uverbs_destroy_cq_resp r{};
    if (int e = destroy_cq(b.c, b.handle(UVERBS_ATTR_DESTROY_CQ_HANDLE), r))
        return e;
    return b.copy_to(UVERBS_ATTR_DESTROY_CQ_RESP, &r, sizeof r);
}

// ------------------------------------------------------------------ QP

int m_qp_create(Bundle& b) {
    ib_uverbs_qp_cap cap{};
    QpArgs a;
    int e = b.copy_from_or_zero(UVERBS_ATTR_CREATE_QP_CAP, &cap, sizeof cap);
    if (e == -ENOENT)
        e = 0;
    if (!e)
        e = b.copy_from(UVERBS_ATTR_CREATE_QP_USER_HANDLE, &a.user_handle, sizeof a.user_handle);
    uint64_t type = 0;
    if (!e)
        e = b.get_const(UVERBS_ATTR_CREATE_QP_TYPE, type, 0x7fffffff);
    if (e)
        return e;
    switch (type) {
    case IB_UVERBS_QPT_RC:
    case IB_UVERBS_QPT_UC:
    case IB_UVERBS_QPT_UD:
    case IB_UVERBS_QPT_RAW_PACKET:
    case IB_UVERBS_QPT_XRC_INI:
    case IB_UVERBS_QPT_XRC_TGT:
    case IB_UVERBS_QPT_DRIVER: break;
    default: return -EINVAL;
    }
    if (type == IB_UVERBS_QPT_XRC_TGT) {
        if (!b.has(UVERBS_ATTR_CREATE_QP_XRCD_HANDLE))
            return -ENOENT;
        // a target QP has nothing but its domain
        if (b.has(UVERBS_ATTR_CREATE_QP_PD_HANDLE) || b.has(UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE) ||
            b.has(UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE) || b.has(UVERBS_ATTR_CREATE_QP_SRQ_HANDLE) ||
            b.has(UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE))
            return -EINVAL;
    } else {
        if (b.has(UVERBS_ATTR_CREATE_QP_XRCD_HANDLE))
            return -EINVAL;
        if (!b.has(UVERBS_ATTR_CREATE_QP_PD_HANDLE))
            return -ENOENT;
        if (b.has(UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE)) {
            // an RSS QP: its receives go through the table
            if (b.has(UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE) || b.has(UVERBS_ATTR_CREATE_QP_SRQ_HANDLE) ||
                cap.max_recv_wr || cap.max_recv_sge)
                return -EINVAL;
        } else {
            if (!b.has(UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE))
                return -ENOENT;
            if (type != IB_UVERBS_QPT_XRC_INI && !b.has(UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE))
                return -ENOENT;
        }
    }
    uint64_t flags;
    const uint64_t known = IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK | IB_UVERBS_QP_CREATE_SCATTER_FCS |
        IB_UVERBS_QP_CREATE_CVLAN_STRIPPING | IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING |
        IB_UVERBS_QP_CREATE_SQ_SIG_ALL;
    if (int err = b.get_flags(UVERBS_ATTR_CREATE_QP_FLAGS, flags, known))
        return err;
    if (b.has(UVERBS_ATTR_CREATE_QP_SOURCE_QPN))
        return -EINVAL;  // only with IB_UVERBS_QP_CREATE_SOURCE_QPN, which is not offered
    a.pd = b.has(UVERBS_ATTR_CREATE_QP_PD_HANDLE) ? b.handle(UVERBS_ATTR_CREATE_QP_PD_HANDLE) : 0;
    a.send_cq = b.has(UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE) ? b.handle(UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE) : 0;
    a.recv_cq =
        b.has(UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE) ? b.handle(UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE) : a.send_cq;
    if (type == IB_UVERBS_QPT_XRC_INI) {
        // no receive side: the core zeroes it and takes no receive CQ or SRQ
        a.has_recv_cq = false;
        cap.max_recv_wr = cap.max_recv_sge = 0;
    }
    if (type == IB_UVERBS_QPT_XRC_TGT)
        a.xrcd = b.handle(UVERBS_ATTR_CREATE_QP_XRCD_HANDLE);
    if (b.has(UVERBS_ATTR_CREATE_QP_SRQ_HANDLE) && type != IB_UVERBS_QPT_XRC_INI) {
        a.has_srq = true;
        a.srq = b.handle(UVERBS_ATTR_CREATE_QP_SRQ_HANDLE);
    }
    a.max_send_wr = cap.max_send_wr;
    a.max_recv_wr = cap.max_recv_wr;
    a.max_send_sge = cap.max_send_sge;
    a.max_recv_sge = cap.max_recv_sge;
    a.max_inline = cap.max_inline_data;
    a.sq_sig_all = (flags & IB_UVERBS_QP_CREATE_SQ_SIG_ALL) ? 1 : 0;
    a.qp_type = static_cast<uint8_t>(type);
    a.create_flags = static_cast<uint32_t>(flags & ~uint64_t(IB_UVERBS_QP_CREATE_SQ_SIG_ALL));
    const std::vector<uint8_t> drv = b.uhw_in();
    if (!drv.empty())
        memcpy(&a.drv, drv.data(), std::min(drv.size(), sizeof a.drv));
    a.drv_len = drv.size();
    if (b.has(UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE)) {
        a.has_ind_tbl = true;
        a.ind_tbl = b.handle(UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE);
        a.has_recv_cq = false;
        a.recv_cq = 0;
        if (!drv.empty())
            memcpy(&a.rss, drv.data(), std::min(drv.size(), sizeof a.rss));
    }
    uint32_t h;
    QpCaps caps;
    mlx5_ib_create_qp_resp d;
    if (int err = create_qp(b.c, a, h, caps, d))
        return err;
    ib_uverbs_qp_cap rc{};
    rc.max_send_wr = caps.max_send_wr;
    rc.max_recv_wr = caps.max_recv_wr;
    rc.max_send_sge = caps.max_send_sge;
    rc.max_recv_sge = caps.max_recv_sge;
    rc.max_inline_data = caps.max_inline;
    e = b.copy_to_struct_or_zero(UVERBS_ATTR_CREATE_QP_RESP_CAP, &rc, sizeof rc);
    if (!e)
        e = b.copy_to(UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, &caps.qpn, sizeof caps.qpn);
    if (!e)
        e = b.uhw_out(&d, sizeof d);
    if (!e)
        e = b.put_new_id(UVERBS_ATTR_CREATE_QP_HANDLE, h);
    if (e) {
        uint32_t ev;
        destroy_qp(b.c, h, ev);
    }
    return e;
}

int m_qp_destroy(Bundle& b) {
    ib_uverbs_destroy_qp_resp r{};
    if (int e = destroy_qp(b.c, b.handle(UVERBS_ATTR_DESTROY_QP_HANDLE), r.events_reported))
        return e;
    return b.copy_to(UVERBS_ATTR_DESTROY_QP_RESP, &r, sizeof r);
}

// ------------------------------------------------------------------ SRQ

int m_srq_create(Bundle& b) {
    SrqArgs a;
    uint64_t type;
    if (int e = b.get_const(UVERBS_ATTR_CREATE_SRQ_TYPE, type, 0x7fffffff))
        return e;
    int e = b.copy_from(UVERBS_ATTR_CREATE_SRQ_USER_HANDLE, &a.user_handle, sizeof a.user_handle);
    if (!e)
        e = b.copy_from(UVERBS_ATTR_CREATE_SRQ_MAX_WR, &a.max_wr, sizeof a.max_wr);
    if (!e)
        e = b.copy_from(UVERBS_ATTR_CREATE_SRQ_MAX_SGE, &a.max_sge, sizeof a.max_sge);
    if (!e)
        e = b.copy_from(UVERBS_ATTR_CREATE_SRQ_LIMIT, &a.limit, sizeof a.limit);
    if (e)
        return e;
    if (type == IB_UVERBS_SRQT_XRC &&
        (!b.has(UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE) || !b.has(UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE)))
        return -ENOENT;
    if (type == IB_UVERBS_SRQT_TM && !b.has(UVERBS_ATTR_CREATE_SRQ_MAX_NUM_TAGS))
        return -ENOENT;
    if (type > IB_UVERBS_SRQT_TM)
        return -EINVAL;
    a.srq_type = static_cast<uint32_t>(type);
    a.pd = b.handle(UVERBS_ATTR_CREATE_SRQ_PD_HANDLE);
    if (type == IB_UVERBS_SRQT_XRC) {
        a.xrcd = b.handle(UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE);
        a.cq = b.handle(UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE);
    }
    const std::vector<uint8_t> drv = b.uhw_in();
    if (!drv.empty())
        memcpy(&a.drv, drv.data(), std::min(drv.size(), sizeof a.drv));
    a.drv_len = drv.size();
    uint32_t h, max_wr, max_sge, srqn;
    if (int err = create_srq(b.c, a, h, max_wr, max_sge, srqn))
        return err;
    mlx5_ib_create_srq_resp d{};
    d.srqn = srqn;
    e = b.copy_to(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR, &max_wr, sizeof max_wr);
    if (!e)
        e = b.copy_to(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, &max_sge, sizeof max_sge);
    if (!e) {
        e = b.copy_to(UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM, &srqn, sizeof srqn);
        if (e == -ENOENT)
            e = 0;
    }
    if (!e)
        e = b.uhw_out(&d, sizeof d);
    if (!e)
        e = b.put_new_id(UVERBS_ATTR_CREATE_SRQ_HANDLE, h);
    if (e) {
        uint32_t ev;
        destroy_srq(b.c, h, ev);
    }
    return e;
}

int m_srq_destroy(Bundle& b) {
    ib_uverbs_destroy_srq_resp r{};
    if (int e = destroy_srq(b.c, b.handle(UVERBS_ATTR_DESTROY_SRQ_HANDLE), r.events_reported))
        return e;
    return b.copy_to(UVERBS_ATTR_DESTROY_SRQ_RESP, &r, sizeof r);
}

// ------------------------------------------------------- PD / MR / AH

int m_pd_destroy(Bundle& b) { return dealloc_pd(b.c, b.handle(UVERBS_ATTR_DESTROY_PD_HANDLE)); }
int m_mr_destroy(Bundle& b) { return dereg_mr(b.c, b.handle(UVERBS_ATTR_DESTROY_MR_HANDLE)); }
int m_ah_destroy(Bundle& b) { return destroy_ah(b.c, b.handle(UVERBS_ATTR_DESTROY_AH_HANDLE)); }
int m_mw_destroy(Bundle& b) { return dealloc_mw(b.c, b.handle(UVERBS_ATTR_DESTROY_MW_HANDLE)); }
int m_xrcd_destroy(Bundle& b) { return close_xrcd(b.c, b.handle(UVERBS_ATTR_DESTROY_XRCD_HANDLE)); }

// ------------------------------------------------- WQ, RWQ table, flow

int m_wq_create(Bundle& b) {
    WqArgs a;
    uint64_t type, flags;
    if (int e = b.get_const(UVERBS_ATTR_CREATE_WQ_TYPE, type, 0x7fffffff))
        return e;
    if (int e = b.get_flags(UVERBS_ATTR_CREATE_WQ_FLAGS, flags,
                            IB_UVERBS_WQ_FLAGS_CVLAN_STRIPPING | IB_UVERBS_WQ_FLAGS_SCATTER_FCS |
                                IB_UVERBS_WQ_FLAGS_DELAY_DROP | IB_UVERBS_WQ_FLAGS_PCI_WRITE_END_PADDING))
        return e;
    int e = b.copy_from(UVERBS_ATTR_CREATE_WQ_USER_HANDLE, &a.user_handle, sizeof a.user_handle);
    if (!e)
        e = b.copy_from(UVERBS_ATTR_CREATE_WQ_MAX_WR, &a.max_wr, sizeof a.max_wr);
    if (!e)
        e = b.copy_from(UVERBS_ATTR_CREATE_WQ_MAX_SGE, &a.max_sge, sizeof a.max_sge);
    if (e)
        return e;
    a.wq_type = static_cast<uint32_t>(type);
    a.create_flags = static_cast<uint32_t>(flags);
    a.pd = b.handle(UVERBS_ATTR_CREATE_WQ_PD_HANDLE);
    a.cq = b.handle(UVERBS_ATTR_CREATE_WQ_CQ_HANDLE);
    const std::vector<uint8_t> drv = b.uhw_in();
    memcpy(&a.drv, drv.data(), std::min(drv.size(), sizeof a.drv));
    a.drv_len = drv.size();
    uint32_t h, max_wr, max_sge, wqn;
    if (int err = create_wq(b.c, a, h, max_wr, max_sge, wqn))
        return err;
    mlx5_ib_create_wq_resp d{};
    e = b.copy_to(UVERBS_ATTR_CREATE_WQ_RESP_MAX_WR, &max_wr, sizeof max_wr);
    if (!e)
        e = b.copy_to(UVERBS_ATTR_CREATE_WQ_RESP_MAX_SGE, &max_sge, sizeof max_sge);
    if (!e)
        e = b.copy_to(UVERBS_ATTR_CREATE_WQ_RESP_WQ_NUM, &wqn, sizeof wqn);
    if (!e) {
        d.response_length = static_cast<uint32_t>(std::min(b.uhw_out_len(), sizeof d));
        e = b.uhw_out(&d, sizeof d);
    }
    if (!e)
        e = b.put_new_id(UVERBS_ATTR_CREATE_WQ_HANDLE, h);
    if (e) {
        uint32_t ev;
        destroy_wq(b.c, h, ev);
    }
    return e;
}

int m_wq_destroy(Bundle& b) {
    uint32_t ev = 0;  // events_reported
    if (int e = destroy_wq(b.c, b.handle(UVERBS_ATTR_DESTROY_WQ_HANDLE), ev))
        return e;
    return b.copy_to(UVERBS_ATTR_DESTROY_WQ_RESP, &ev, sizeof ev);
}

int m_rwq_ind_tbl_destroy(Bundle& b) {
    return destroy_rwq_ind_tbl(b.c, b.handle(UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE));
}

int m_flow_destroy(Bundle& b) { return destroy_flow(b.c, b.handle(UVERBS_ATTR_DESTROY_FLOW_HANDLE)); }

// ADVISE_MR: the core's checks (flags, the SGE list a whole number of
// struct ib_sge), then the driver's (verbs.cpp).
int m_advise_mr(Bundle& b) {
    uint64_t advice, flags;
    if (int e = b.get_const(UVERBS_ATTR_ADVISE_MR_ADVICE, advice, UINT32_MAX))
        return e;
    if (int e = b.get_flags(UVERBS_ATTR_ADVISE_MR_FLAGS, flags, IB_UVERBS_ADVISE_MR_FLAG_FLUSH))
        return e;
    const std::vector<uint8_t>& list = b.get(UVERBS_ATTR_ADVISE_MR_SGE_LIST)->in;
    if (list.size() % sizeof(ibv_sge))
        return -EINVAL;
    std::vector<ibv_sge> sges(list.size() / sizeof(ibv_sge));
    memcpy(sges.data(), list.data(), list.size());
    return advise_mr(b.c, b.handle(UVERBS_ATTR_ADVISE_MR_PD_HANDLE), advice, static_cast<uint32_t>(flags), sges.data(),
                     sges.size());
}

// DM_ALLOC with mlx5's driver attributes: the type (MEMIC when absent), and
// the answer's start offset and page index for the mapping.
int m_dm_alloc(Bundle& b) {
    uint64_t length = 0;
    uint32_t align = 0;
    if (int e = b.copy_from(UVERBS_ATTR_ALLOC_DM_LENGTH, &length, sizeof length))
        return e;
    if (int e = b.copy_from(UVERBS_ATTR_ALLOC_DM_ALIGNMENT, &align, sizeof align))
        return e;
    const uint64_t memic = MLX5_IB_UAPI_DM_TYPE_MEMIC;
    uint64_t type;
    if (int e = b.get_const(MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE, type, UINT8_MAX, &memic))
        return e;
    uint32_t h;
    uint64_t start;
    uint16_t page;
    if (int e = alloc_dm(b.c, length, align, type, h, start, page))
        return e;
    int e = b.copy_to(MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET, &start, sizeof start);
    if (!e)
        e = b.copy_to(MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX, &page, sizeof page);
    if (!e)
        e = b.put_new_id(UVERBS_ATTR_ALLOC_DM_HANDLE, h);
    if (e)
        free_dm(b.c, h);
    return e;
}

int m_dm_free(Bundle& b) { return free_dm(b.c, b.handle(UVERBS_ATTR_FREE_DM_HANDLE)); }

// mlx5's DM_QUERY (ibv_import_dm): where the memory is mapped, and its size.
int m_mlx5_dm_query(Bundle& b) {
    const Dm* dm = b.c.get<Dm>(b.handle(MLX5_IB_ATTR_QUERY_DM_REQ_HANDLE), ObjType::Dm);
    const uint64_t start = 0, length = dm->size;
    const uint16_t page = static_cast<uint16_t>(dm->page_idx);
    int e = b.copy_to(MLX5_IB_ATTR_QUERY_DM_RESP_START_OFFSET, &start, sizeof start);
    if (!e)
        e = b.copy_to(MLX5_IB_ATTR_QUERY_DM_RESP_PAGE_INDEX, &page, sizeof page);
    if (!e)
        e = b.copy_to(MLX5_IB_ATTR_QUERY_DM_RESP_LENGTH, &length, sizeof length);
    return e;
}

int m_dm_mr_reg(Bundle& b) {
    uint64_t offset = 0, length = 0;
    uint32_t access = 0;
    if (int e = b.copy_from(UVERBS_ATTR_REG_DM_MR_OFFSET, &offset, sizeof offset))
        return e;
    if (int e = b.copy_from(UVERBS_ATTR_REG_DM_MR_LENGTH, &length, sizeof length))
        return e;
    if (int e = b.copy_from(UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS, &access, sizeof access))
        return e;
    uint32_t h, lkey, rkey;
    if (int e = reg_dm_mr(b.c, b.handle(UVERBS_ATTR_REG_DM_MR_PD_HANDLE), b.handle(UVERBS_ATTR_REG_DM_MR_DM_HANDLE),
                          offset, length, access, h, lkey, rkey))
        return e;
    int e = b.copy_to(UVERBS_ATTR_REG_DM_MR_RESP_LKEY, &lkey, sizeof lkey);
    if (!e)
        e = b.copy_to(UVERBS_ATTR_REG_DM_MR_RESP_RKEY, &rkey, sizeof rkey);
    if (!e)
        e = b.put_new_id(UVERBS_ATTR_REG_DM_MR_HANDLE, h);
    if (e)
        dereg_mr(b.c, h);
    return e;
}

int m_counters_create(Bundle& b) {
    uint32_t h;
    if (int e = create_counters(b.c, h))
        return e;
    if (int e = b.put_new_id(UVERBS_ATTR_CREATE_COUNTERS_HANDLE, h)) {
        destroy_counters(b.c, h);
        return e;
    }
    return 0;
}

int m_counters_destroy(Bundle& b) { return destroy_counters(b.c, b.handle(UVERBS_ATTR_DESTROY_COUNTERS_HANDLE)); }

// The buffer's length says how many u64 entries the caller has.
int m_counters_read(Bundle& b) {
    uint64_t flags;
    if (int e = b.get_flags(UVERBS_ATTR_READ_COUNTERS_FLAGS, flags, IB_UVERBS_READ_COUNTERS_PREFER_CACHED))
        return e;
    std::vector<uint64_t> v(b.get(UVERBS_ATTR_READ_COUNTERS_BUFF)->u.len / sizeof(uint64_t));
    if (int e = read_counters(b.c, b.handle(UVERBS_ATTR_READ_COUNTERS_HANDLE), v))
        return e;
    return b.copy_to(UVERBS_ATTR_READ_COUNTERS_BUFF, v.data(), v.size() * sizeof(uint64_t));
}

// QUERY_MR (ibv_import_mr): the keys, the length and the iova of an MR of
// this file, whichever context of it registered the MR.
int m_query_mr(Bundle& b) {
    const Mr* mr = b.c.get<Mr>(b.handle(UVERBS_ATTR_QUERY_MR_HANDLE), ObjType::Mr);
    const uint64_t length = mr->length, iova = mr->iova;
    if (int e = b.copy_to(UVERBS_ATTR_QUERY_MR_RESP_LKEY, &mr->lkey, sizeof mr->lkey))
        return e;
    if (int e = b.copy_to(UVERBS_ATTR_QUERY_MR_RESP_RKEY, &mr->rkey, sizeof mr->rkey))
        return e;
    if (int e = b.copy_to(UVERBS_ATTR_QUERY_MR_RESP_LENGTH, &length, sizeof length))
        return e;
    const int e = b.copy_to(UVERBS_ATTR_QUERY_MR_RESP_IOVA, &iova, sizeof iova);
    return e == -ENOENT ? 0 : e;  // the iova is optional
}

// ------------------------------------------------------------------ UAR

// mlx5's UAR object: a doorbell page for the library's dynamic UARs.
int m_uar_alloc(Bundle& b) {
    if (!b.c.dev->cfg->uar_objects)
        return -EPROTONOSUPPORT;  // a kernel before the object: no such method
    uint64_t type;
    if (int e = b.get_const(MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, type, UINT32_MAX))
        return e;
    uint32_t h, length;
    uint64_t offset;
    uint32_t page_id;
    if (int e = alloc_uar(b.c, static_cast<uint32_t>(type), h, offset, length, page_id))
        return e;
    int e = b.copy_to(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, &offset, sizeof offset);
    if (!e)
        e = b.copy_to(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, &length, sizeof length);
    if (!e)
        e = b.copy_to(MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, &page_id, sizeof page_id);
    if (!e)
        e = b.put_new_id(MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE, h);
    if (e)
        destroy_uar(b.c, h);
    return e;
}

int m_uar_destroy(Bundle& b) { return destroy_uar(b.c, b.handle(MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE)); }

// mlx5 driver method on the PD object (mlx5dv_init_obj): the PD number.
int m_mlx5_pd_query(Bundle& b) {
    Pd* pd = b.c.get<Pd>(b.handle(MLX5_IB_ATTR_QUERY_PD_HANDLE), ObjType::Pd);
    const uint32_t pdn = pd->pdn;
    return b.copy_to(MLX5_IB_ATTR_QUERY_PD_RESP_PDN, &pdn, sizeof pdn);
}

// ------------------------------------------------------------ method table

constexpr Spec kUhwIn = in_min(UVERBS_ATTR_UHW_IN, 0, false);
constexpr Spec kUhwOut = out_min(UVERBS_ATTR_UHW_OUT, 0, false);

const std::vector<Method>& methods() {
    static const std::vector<Method> t = [] {
        std::vector<Method> v;
        auto add = [&](uint16_t obj, uint16_t id, std::vector<Spec> specs, bool udata, Handler fn) {
            if (udata) {
                specs.push_back(kUhwIn);
                specs.push_back(kUhwOut);
            }
            v.push_back(Method{obj, id, std::move(specs), udata, fn});
        };
        constexpr uint16_t u32s = sizeof(uint32_t), u64s = sizeof(uint64_t);
        // DEVICE
        add(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT,
            {out_sized(UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, u32s, false),
             out_sized(UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, u64s, false)},
            true, m_get_context);
        add(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT,
            {out_sized(UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, u32s, false),
             out_sized(UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT, u64s, false),
             out_struct(MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX,
                        offsetof(mlx5_ib_alloc_ucontext_resp, dump_fill_mkey) + sizeof(uint32_t),
                        sizeof(mlx5_ib_alloc_ucontext_resp), true)},
            false, m_query_context);
        add(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE,
            {const_in(UVERBS_ATTR_WRITE_CMD, true), in_min(UVERBS_ATTR_CORE_IN, u32s, false),
             out_min(UVERBS_ATTR_CORE_OUT, 0, false)},
            true, m_invoke_write);
        add(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INFO_HANDLES,
            {const_in(UVERBS_ATTR_INFO_OBJECT_ID, true), out_sized(UVERBS_ATTR_INFO_TOTAL_HANDLES, u32s, false),
             out_min(UVERBS_ATTR_INFO_HANDLES_LIST, u32s, false)},
            false, m_info_handles);
        add(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT,
            {const_in(UVERBS_ATTR_QUERY_PORT_PORT_NUM, true),
             out_struct(UVERBS_ATTR_QUERY_PORT_RESP, offsetof(ib_uverbs_query_port_resp_ex, reserved) + 6,
                        sizeof(ib_uverbs_query_port_resp_ex), true)},
            false, m_query_port);
        add(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_TABLE,
            {const_in(UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, true), flags_in(UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, false),
             out_min(UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, 0, true),
             out_sized(UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, u64s, true)},
            false, m_query_gid_table);
        add(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_ENTRY,
            {const_in(UVERBS_ATTR_QUERY_GID_ENTRY_PORT, true), const_in(UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, true),
             flags_in(UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, true),
             out_struct(UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, sizeof(ib_uverbs_gid_entry),
                        sizeof(ib_uverbs_gid_entry), true)},
            false, m_query_gid_entry);
        // ASYNC_EVENT
        add(UVERBS_OBJECT_ASYNC_EVENT, UVERBS_METHOD_ASYNC_EVENT_ALLOC,
            {fd_attr(UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, UVERBS_OBJECT_ASYNC_EVENT, Access::New, true)}, false,
            m_async_event_alloc);
        // CQ
        add(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE,
            {idr(UVERBS_ATTR_CREATE_CQ_HANDLE, UVERBS_OBJECT_CQ, Access::New, true),
             in_sized(UVERBS_ATTR_CREATE_CQ_CQE, u32s, true), in_sized(UVERBS_ATTR_CREATE_CQ_USER_HANDLE, u64s, true),
             fd_attr(UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, UVERBS_OBJECT_COMP_CHANNEL, Access::Read, false),
             in_sized(UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, u32s, true), flags_in(UVERBS_ATTR_CREATE_CQ_FLAGS, false),
             out_sized(UVERBS_ATTR_CREATE_CQ_RESP_CQE, u32s, true),
             fd_attr(UVERBS_ATTR_CREATE_CQ_EVENT_FD, UVERBS_OBJECT_ASYNC_EVENT, Access::Read, false)},
            true, m_cq_create);
        add(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_DESTROY,
            {idr(UVERBS_ATTR_DESTROY_CQ_HANDLE, UVERBS_OBJECT_CQ, Access::Destroy, true),
             out_sized(UVERBS_ATTR_DESTROY_CQ_RESP, sizeof(ib_uverbs_destroy_cq_resp), true)},
            false, m_cq_destroy);
        // QP
        add(UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE,
            {idr(UVERBS_ATTR_CREATE_QP_HANDLE, UVERBS_OBJECT_QP, Access::New, true),
             idr(UVERBS_ATTR_CREATE_QP_XRCD_HANDLE, UVERBS_OBJECT_XRCD, Access::Read, false),
             idr(UVERBS_ATTR_CREATE_QP_PD_HANDLE, UVERBS_OBJECT_PD, Access::Read, false),
             idr(UVERBS_ATTR_CREATE_QP_SRQ_HANDLE, UVERBS_OBJECT_SRQ, Access::Read, false),
             idr(UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, UVERBS_OBJECT_CQ, Access::Read, false),
             idr(UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, UVERBS_OBJECT_CQ, Access::Read, false),
             idr(UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE, UVERBS_OBJECT_RWQ_IND_TBL, Access::Read, false),
             in_sized(UVERBS_ATTR_CREATE_QP_USER_HANDLE, u64s, true),
             in_struct(UVERBS_ATTR_CREATE_QP_CAP, sizeof(ib_uverbs_qp_cap), sizeof(ib_uverbs_qp_cap), true),
             const_in(UVERBS_ATTR_CREATE_QP_TYPE, true), flags_in(UVERBS_ATTR_CREATE_QP_FLAGS, false),
             in_sized(UVERBS_ATTR_CREATE_QP_SOURCE_QPN, u32s, false),
             fd_attr(UVERBS_ATTR_CREATE_QP_EVENT_FD, UVERBS_OBJECT_ASYNC_EVENT, Access::Read, false),
             out_struct(UVERBS_ATTR_CREATE_QP_RESP_CAP, sizeof(ib_uverbs_qp_cap), sizeof(ib_uverbs_qp_cap), true),
             out_sized(UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, u32s, true)},
            true, m_qp_create);
        add(UVERBS_OBJECT_QP, UVERBS_METHOD_QP_DESTROY,
            {idr(UVERBS_ATTR_DESTROY_QP_HANDLE, UVERBS_OBJECT_QP, Access::Destroy, true),
             out_sized(UVERBS_ATTR_DESTROY_QP_RESP, sizeof(ib_uverbs_destroy_qp_resp), true)},
            false, m_qp_destroy);
        // SRQ
        add(UVERBS_OBJECT_SRQ, UVERBS_METHOD_SRQ_CREATE,
            {idr(UVERBS_ATTR_CREATE_SRQ_HANDLE, UVERBS_OBJECT_SRQ, Access::New, true),
             idr(UVERBS_ATTR_CREATE_SRQ_PD_HANDLE, UVERBS_OBJECT_PD, Access::Read, true),
             const_in(UVERBS_ATTR_CREATE_SRQ_TYPE, true),
             idr(UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE, UVERBS_OBJECT_XRCD, Access::Read, false),
             idr(UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE, UVERBS_OBJECT_CQ, Access::Read, false),
             in_sized(UVERBS_ATTR_CREATE_SRQ_USER_HANDLE, u64s, true),
             in_sized(UVERBS_ATTR_CREATE_SRQ_MAX_WR, u32s, true), in_sized(UVERBS_ATTR_CREATE_SRQ_MAX_SGE, u32s, true),
             in_sized(UVERBS_ATTR_CREATE_SRQ_LIMIT, u32s, true),
             in_sized(UVERBS_ATTR_CREATE_SRQ_MAX_NUM_TAGS, u32s, false),
             fd_attr(UVERBS_ATTR_CREATE_SRQ_EVENT_FD, UVERBS_OBJECT_ASYNC_EVENT, Access::Read, false),
             out_sized(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR, u32s, true),
             out_sized(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, u32s, true),
             out_sized(UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM, u32s, false)},
            true, m_srq_create);
        add(UVERBS_OBJECT_SRQ, UVERBS_METHOD_SRQ_DESTROY,
            {idr(UVERBS_ATTR_DESTROY_SRQ_HANDLE, UVERBS_OBJECT_SRQ, Access::Destroy, true),
             out_sized(UVERBS_ATTR_DESTROY_SRQ_RESP, sizeof(ib_uverbs_destroy_srq_resp), true)},
            false, m_srq_destroy);
        // PD, MR, MW, AH: destroy, and the queries of PDs and MRs
        add(UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY,
            {idr(UVERBS_ATTR_DESTROY_PD_HANDLE, UVERBS_OBJECT_PD, Access::Destroy, true)}, false, m_pd_destroy);
        add(UVERBS_OBJECT_PD, MLX5_IB_METHOD_PD_QUERY,
            {idr(MLX5_IB_ATTR_QUERY_PD_HANDLE, UVERBS_OBJECT_PD, Access::Read, true),
             out_sized(MLX5_IB_ATTR_QUERY_PD_RESP_PDN, u32s, true)},
            false, m_mlx5_pd_query);
        add(MLX5_IB_OBJECT_UAR, MLX5_IB_METHOD_UAR_OBJ_ALLOC,
            {idr(MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE, MLX5_IB_OBJECT_UAR, Access::New, true),
             const_in(MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, true),
             out_sized(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, u64s, true),
             out_sized(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, u32s, true),
             out_sized(MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, u32s, true)},
            false, m_uar_alloc);
        add(MLX5_IB_OBJECT_UAR, MLX5_IB_METHOD_UAR_OBJ_DESTROY,
            {idr(MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE, MLX5_IB_OBJECT_UAR, Access::Destroy, true)}, false,
            m_uar_destroy);
        add(UVERBS_OBJECT_MR, UVERBS_METHOD_ADVISE_MR,
            {idr(UVERBS_ATTR_ADVISE_MR_PD_HANDLE, UVERBS_OBJECT_PD, Access::Read, true),
             const_in(UVERBS_ATTR_ADVISE_MR_ADVICE, true), in_sized(UVERBS_ATTR_ADVISE_MR_FLAGS, u32s, true),
             in_min(UVERBS_ATTR_ADVISE_MR_SGE_LIST, sizeof(ibv_sge), true)},
            false, m_advise_mr);
        add(UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC,
            {idr(UVERBS_ATTR_ALLOC_DM_HANDLE, UVERBS_OBJECT_DM, Access::New, true),
             in_sized(UVERBS_ATTR_ALLOC_DM_LENGTH, u64s, true), in_sized(UVERBS_ATTR_ALLOC_DM_ALIGNMENT, u32s, true),
             out_sized(MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET, u64s, true),
             out_sized(MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX, sizeof(uint16_t), false),
             const_in(MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE, false)},
            false, m_dm_alloc);
        add(UVERBS_OBJECT_DM, UVERBS_METHOD_DM_FREE,
            {idr(UVERBS_ATTR_FREE_DM_HANDLE, UVERBS_OBJECT_DM, Access::Destroy, true)}, false, m_dm_free);
        add(UVERBS_OBJECT_DM, MLX5_IB_METHOD_DM_QUERY,
            {idr(MLX5_IB_ATTR_QUERY_DM_REQ_HANDLE, UVERBS_OBJECT_DM, Access::Read, true),
             out_sized(MLX5_IB_ATTR_QUERY_DM_RESP_START_OFFSET, u64s, true),
             out_sized(MLX5_IB_ATTR_QUERY_DM_RESP_PAGE_INDEX, sizeof(uint16_t), true),
             out_sized(MLX5_IB_ATTR_QUERY_DM_RESP_LENGTH, u64s, true)},
            false, m_mlx5_dm_query);
        add(UVERBS_OBJECT_MR, UVERBS_METHOD_DM_MR_REG,
            {idr(UVERBS_ATTR_REG_DM_MR_HANDLE, UVERBS_OBJECT_MR, Access::New, true),
             in_sized(UVERBS_ATTR_REG_DM_MR_OFFSET, u64s, true), in_sized(UVERBS_ATTR_REG_DM_MR_LENGTH, u64s, true),
             idr(UVERBS_ATTR_REG_DM_MR_PD_HANDLE, UVERBS_OBJECT_PD, Access::Read, true),
             in_sized(UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS, u32s, true),
             idr(UVERBS_ATTR_REG_DM_MR_DM_HANDLE, UVERBS_OBJECT_DM, Access::Read, true),
             out_sized(UVERBS_ATTR_REG_DM_MR_RESP_LKEY, u32s, true),
             out_sized(UVERBS_ATTR_REG_DM_MR_RESP_RKEY, u32s, true)},
            false, m_dm_mr_reg);
        add(UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_CREATE,
            {idr(UVERBS_ATTR_CREATE_COUNTERS_HANDLE, UVERBS_OBJECT_COUNTERS, Access::New, true)}, false,
            m_counters_create);
        add(UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_DESTROY,
            {idr(UVERBS_ATTR_DESTROY_COUNTERS_HANDLE, UVERBS_OBJECT_COUNTERS, Access::Destroy, true)}, false,
            m_counters_destroy);
        add(UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_READ,
            {idr(UVERBS_ATTR_READ_COUNTERS_HANDLE, UVERBS_OBJECT_COUNTERS, Access::Read, true),
             out_min(UVERBS_ATTR_READ_COUNTERS_BUFF, 0, true), flags_in(UVERBS_ATTR_READ_COUNTERS_FLAGS, true)},
            false, m_counters_read);
        add(UVERBS_OBJECT_MR, UVERBS_METHOD_QUERY_MR,
            {idr(UVERBS_ATTR_QUERY_MR_HANDLE, UVERBS_OBJECT_MR, Access::Read, true),
             out_sized(UVERBS_ATTR_QUERY_MR_RESP_LKEY, u32s, true),
             out_sized(UVERBS_ATTR_QUERY_MR_RESP_RKEY, u32s, true),
             out_sized(UVERBS_ATTR_QUERY_MR_RESP_LENGTH, u64s, true),
             out_sized(UVERBS_ATTR_QUERY_MR_RESP_IOVA, u64s, false)},
            false, m_query_mr);
        add(UVERBS_OBJECT_MR, UVERBS_METHOD_MR_DESTROY,
            {idr(UVERBS_ATTR_DESTROY_MR_HANDLE, UVERBS_OBJECT_MR, Access::Destroy, true)}, false, m_mr_destroy);
        add(UVERBS_OBJECT_AH, UVERBS_METHOD_AH_DESTROY,
            {idr(UVERBS_ATTR_DESTROY_AH_HANDLE, UVERBS_OBJECT_AH, Access::Destroy, true)}, false, m_ah_destroy);
        add(UVERBS_OBJECT_MW, UVERBS_METHOD_MW_DESTROY,
            {idr(UVERBS_ATTR_DESTROY_MW_HANDLE, UVERBS_OBJECT_MW, Access::Destroy, true)}, false, m_mw_destroy);
        add(UVERBS_OBJECT_WQ, UVERBS_METHOD_WQ_CREATE,
            {idr(UVERBS_ATTR_CREATE_WQ_HANDLE, UVERBS_OBJECT_WQ, Access::New, true),
             idr(UVERBS_ATTR_CREATE_WQ_PD_HANDLE, UVERBS_OBJECT_PD, Access::Read, true),
             idr(UVERBS_ATTR_CREATE_WQ_CQ_HANDLE, UVERBS_OBJECT_CQ, Access::Read, true),
             in_sized(UVERBS_ATTR_CREATE_WQ_USER_HANDLE, u64s, true), const_in(UVERBS_ATTR_CREATE_WQ_TYPE, true),
             fd_attr(UVERBS_ATTR_CREATE_WQ_EVENT_FD, UVERBS_OBJECT_ASYNC_EVENT, Access::Read, false),
             in_sized(UVERBS_ATTR_CREATE_WQ_MAX_WR, u32s, true), in_sized(UVERBS_ATTR_CREATE_WQ_MAX_SGE, u32s, true),
             flags_in(UVERBS_ATTR_CREATE_WQ_FLAGS, false), out_sized(UVERBS_ATTR_CREATE_WQ_RESP_MAX_WR, u32s, true),
             out_sized(UVERBS_ATTR_CREATE_WQ_RESP_MAX_SGE, u32s, true),
             out_sized(UVERBS_ATTR_CREATE_WQ_RESP_WQ_NUM, u32s, false)},
            true, m_wq_create);
        add(UVERBS_OBJECT_WQ, UVERBS_METHOD_WQ_DESTROY,
            {idr(UVERBS_ATTR_DESTROY_WQ_HANDLE, UVERBS_OBJECT_WQ, Access::Destroy, true),
             out_sized(UVERBS_ATTR_DESTROY_WQ_RESP, u32s, true)},
            false, m_wq_destroy);
        add(UVERBS_OBJECT_RWQ_IND_TBL, UVERBS_METHOD_RWQ_IND_TBL_DESTROY,
            {idr(UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE, UVERBS_OBJECT_RWQ_IND_TBL, Access::Destroy, true)}, false,
            m_rwq_ind_tbl_destroy);
        add(UVERBS_OBJECT_FLOW, UVERBS_METHOD_FLOW_DESTROY,
            {idr(UVERBS_ATTR_DESTROY_FLOW_HANDLE, UVERBS_OBJECT_FLOW, Access::Destroy, true)}, false, m_flow_destroy);
        add(UVERBS_OBJECT_XRCD, UVERBS_METHOD_XRCD_DESTROY,
            {idr(UVERBS_ATTR_DESTROY_XRCD_HANDLE, UVERBS_OBJECT_XRCD, Access::Destroy, true)}, false, m_xrcd_destroy);
        return v;
    }();
    return t;
}

const Method* find_method(uint16_t obj, uint16_t id) {
    for (const Method& m : methods())
        if (m.obj == obj && m.id == id)
            return &m;
    return nullptr;
}

int run(Context& c, uint64_t arg) {
    ib_uverbs_ioctl_hdr hdr;
    if (!app_read(&hdr, arg, sizeof hdr))
        return -EFAULT;
    if (hdr.length > kMaxHdrLen || hdr.length != sizeof hdr + size_t(hdr.num_attrs) * sizeof(ib_uverbs_attr))
        return -EINVAL;
    if (hdr.reserved1 || hdr.reserved2)
        return -EPROTONOSUPPORT;
    // hdr.driver_id is not looked at (the kernel ignores it too)
    const Method* m = find_method(hdr.object_id, hdr.method_id);
    if (!m)
        return -EPROTONOSUPPORT;
    const uint64_t uattrs = arg + sizeof hdr;
    std::vector<ib_uverbs_attr> ua(hdr.num_attrs);
    if (!ua.empty() && !app_read(ua.data(), uattrs, ua.size() * sizeof ua[0]))
        return -EFAULT;
    if (c.dev->removed || (c.dev->fatal && !m->destroys()))
        return -EIO;  // as on the write path: after a fatal error only clean-up works; once removed, nothing
    Bundle b{c, uattrs, *m, {}};
    for (size_t i = 0; i < ua.size(); ++i)
        if (int e = decode_attr(b, ua[i], i))
            return e;
    for (const Spec& s : m->specs)
        if (s.mandatory && !b.has(s.id))
            return -EINVAL;
    // everything but context creation and the write wrapper needs a ucontext
    if (!c.have_ucontext &&
        !(m->obj == UVERBS_OBJECT_DEVICE &&
          (m->id == UVERBS_METHOD_GET_CONTEXT || m->id == UVERBS_METHOD_INVOKE_WRITE ||
           m->id == UVERBS_METHOD_INFO_HANDLES)))
        return -EINVAL;
    int r = m->fn(b);
    if (!r && m->udata)
        if (const Attr* out = b.get(UVERBS_ATTR_UHW_OUT))
            r = b.set_output(*out);
    // EPROTONOSUPPORT means "no such method" only
    if (r == -EPROTONOSUPPORT)
        r = -EINVAL;
    return r;
}

}  // namespace

int uverbs_ioctl(Context& c, unsigned long request, void* arg, int fd) {
    switch (request) {
    case FIOCLEX:
    case FIONCLEX:
    case FIONBIO:
    case FIOASYNC:
        // handled by the VFS for every file, before any driver sees them
        return libc().ioctl(fd < 0 ? c.fd : fd, request, arg) < 0 ? -errno : 0;
    case RDMA_VERBS_IOCTL: break;
    default: return -ENOTTY;
    }
    const int r = run(c, reinterpret_cast<uint64_t>(arg));
    if (g_trace_on) {
        // object, method and the attribute ids (with the command number of
        // INVOKE_WRITE, the one inline constant worth seeing)
        ib_uverbs_ioctl_hdr hdr{};
        const uint64_t a = reinterpret_cast<uint64_t>(arg);
        if (!app_read(&hdr, a, sizeof hdr)) {
            UVSIM_TRACE("ioctl (unreadable header) -> %d", r);
            return r;
        }
        std::string ids;
        const size_t n = std::min<size_t>(hdr.num_attrs, 24);
        std::vector<ib_uverbs_attr> ua(n);
        if (n && app_read(ua.data(), a + sizeof hdr, n * sizeof ua[0]))
            for (const ib_uverbs_attr& x : ua) {
                char b[48];
                if (hdr.object_id == UVERBS_OBJECT_DEVICE && hdr.method_id == UVERBS_METHOD_INVOKE_WRITE &&
                    x.attr_id == UVERBS_ATTR_WRITE_CMD)
                    snprintf(b, sizeof b, " cmd=0x%llx", static_cast<unsigned long long>(x.data));
                else
                    snprintf(b, sizeof b, " %x%s", x.attr_id, (x.flags & UVERBS_ATTR_F_MANDATORY) ? "!" : "");
                ids += b;
            }
        UVSIM_TRACE("ioctl object 0x%x method 0x%x driver %u attrs [%s ] -> %d", hdr.object_id, hdr.method_id,
                    hdr.driver_id, ids.c_str(), r);
    }
    return r;
}

}  // namespace uvsim
