// Device, port, GID and P_Key queries: the exported entry points.
#include "libibverbs/cmd_ioctl.h"
#include "libibverbs/ibverbs.h"
#include "util/c_entry.h"
#include "util/file_io.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include <cstring>
#include <endian.h>
#include <string>

namespace rdma::verbs {
namespace {

std::string port_attr_path(ibv_context* ctx, uint32_t port, const char* what, uint32_t index) {
    return std::string(ctx->device->ibdev_path) + "/ports/" + std::to_string(port) + "/" + what + "/" +
        std::to_string(index);
}

// "fe80:0000:0000:0000:a8ee:47ff:fef3:e393" -> raw bytes.
bool parse_sysfs_gid(const std::string& s, ibv_gid& gid) {
    unsigned v[8];
    if (sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
        return false;
    for (int i = 0; i < 8; ++i) {
        gid.raw[2 * i] = static_cast<uint8_t>(v[i] >> 8);
        gid.raw[2 * i + 1] = static_cast<uint8_t>(v[i]);
    }
    return true;
}

bool gid_is_zero(const ibv_gid& g) {
    static const ibv_gid zero{};
    return std::memcmp(&g, &zero, sizeof(g)) == 0;
}

// Older kernels: sysfs holds the GID table.
int query_gid_sysfs(ibv_context* ctx, uint32_t port, uint32_t index, ibv_gid_entry& e) {
    auto g = read_sysfs_attr(port_attr_path(ctx, port, "gids", index));
    if (!g)
        return g.error() == ENOENT ? EINVAL : g.error();
    if (!parse_sysfs_gid(g.value(), e.gid))
        return EINVAL;
    if (gid_is_zero(e.gid))
        return ENODATA;
    e.gid_index = index;
    e.port_num = port;
    e.gid_type = IBV_GID_TYPE_IB;
    if (auto t = read_sysfs_attr(port_attr_path(ctx, port, "gid_attrs/types", index))) {
        if (t.value() == "RoCE v2")
            e.gid_type = IBV_GID_TYPE_ROCE_V2;
        else if (t.value() == "IB/RoCE v1") {
            ibv_port_attr pa{};
            if (Context::from(ctx)->query_port(static_cast<uint8_t>(port), &pa, sizeof(pa)) == 0 &&
                pa.link_layer == IBV_LINK_LAYER_ETHERNET)
                e.gid_type = IBV_GID_TYPE_ROCE_V1;
        }
    }
    if (auto n = read_sysfs_attr(port_attr_path(ctx, port, "gid_attrs/ndevs", index)))
        e.ndev_ifindex = if_nametoindex(n.value().c_str());
    return 0;
}

int query_gid_entry(ibv_context* ctx, uint32_t port, uint32_t index, ibv_gid_entry& out) {
    ib_uverbs_gid_entry kentry{};
    Ioctl<4> cmd(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_ENTRY, Context::from(ctx)->driver_id());
    cmd.const_in(UVERBS_ATTR_QUERY_GID_ENTRY_PORT, port);
    cmd.const_in(UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, index);
    cmd.const_in(UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, 0);
    cmd.out(UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, kentry);
    int err = cmd.execute(ctx->cmd_fd);
    if (err == 0) {
        std::memcpy(out.gid.raw, kentry.gid, sizeof(out.gid.raw));
        out.gid_index = kentry.gid_index;
        out.port_num = kentry.port_num;
        out.gid_type = kentry.gid_type;
        out.ndev_ifindex = kentry.netdev_ifindex;
        return 0;
    }
    if (ioctl_unsupported(err))
        return query_gid_sysfs(ctx, port, index, out);
    return err;
}

// Copy our entry into a caller's array element of possibly another size.
void store_entry(void* dst, size_t entry_size, const ibv_gid_entry& e) {
    std::memset(dst, 0, entry_size);
    std::memcpy(dst, &e, std::min(entry_size, sizeof(e)));
}

}  // namespace
}  // namespace rdma::verbs

using namespace rdma::verbs;

// rdma-core's private GID type enum used by ibv_query_gid_type.
enum ibv_gid_type_sysfs { IBV_GID_TYPE_SYSFS_IB_ROCE_V1, IBV_GID_TYPE_SYSFS_ROCE_V2 };

namespace {

ssize_t query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries, uint32_t flags,
                        size_t entry_size) {
    if (flags || (!entries && max_entries) || entry_size < offsetof(ibv_gid_entry, ndev_ifindex))
        return -EINVAL;
    // The kernel's table query, when it exists, answers in one call.
    if (entry_size == sizeof(ib_uverbs_gid_entry) && max_entries) {
        uint64_t num = 0;

        Ioctl<4> cmd(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_TABLE, Context::from(context)->driver_id());
        cmd.const_in(UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, entry_size);
        cmd.const_in(UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, 0);
        cmd.ptr_out(UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, entries, max_entries * entry_size);
        cmd.out(UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, num);
        int err = cmd.execute(context->cmd_fd);
        if (err == 0)
            return static_cast<ssize_t>(num);
        if (!ioctl_unsupported(err))
            return -err;
    }
    ibv_device_attr dattr{};
    if (int err = ibv_query_device(context, &dattr))
        return -err;
    size_t n = 0;
    for (uint32_t port = 1; port <= dattr.phys_port_cnt; ++port) {
        ibv_port_attr pattr{};
        if (int err = Context::from(context)->query_port(static_cast<uint8_t>(port), &pattr, sizeof(pattr)))
            return -err;
        for (uint32_t i = 0; i < static_cast<uint32_t>(pattr.gid_tbl_len); ++i) {
            ibv_gid_entry e{};
            int err = query_gid_entry(context, port, i, e);
            if (err == ENODATA)
                continue;
            if (err)
                return -err;
            if (n == max_entries)
                return -EINVAL;
            store_entry(reinterpret_cast<char*>(entries) + n * entry_size, entry_size, e);
            ++n;
        }
    }
    return static_cast<ssize_t>(n);
}

int query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
    if (index < 0 || !gid) {
        errno = EINVAL;
        return -1;
    }
    ibv_gid_entry e{};
    int err = query_gid_entry(context, port_num, static_cast<uint32_t>(index), e);
    if (err == ENODATA) {
        std::memset(gid, 0, sizeof(*gid));
        return 0;
    }
    if (err) {
        errno = err;
        return -1;
    }
    *gid = e.gid;
    return 0;
}

int query_gid_type(ibv_context* context, uint8_t port_num, unsigned int index, ibv_gid_type_sysfs* type) {
    ibv_gid_entry e{};
    int err = query_gid_entry(context, port_num, index, e);
    if (err == ENODATA || err == EINVAL) {
        // Unused entries and IB ports report the historical default.
        *type = IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
        return 0;
    }
    if (err) {
        errno = err;
        return -1;
    }
    *type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? IBV_GID_TYPE_SYSFS_ROCE_V2 : IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
    return 0;
}

int query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
    if (index < 0 || !pkey) {
        errno = EINVAL;
        return -1;
    }
    auto v = rdma::read_sysfs_attr(port_attr_path(context, port_num, "pkeys", static_cast<uint32_t>(index)));
    if (!v) {
        errno = v.error();
        return -1;
    }
    auto n = rdma::parse_u64(v.value(), 16);
    if (!n || *n > 0xffff) {
        errno = EINVAL;
        return -1;
    }
    *pkey = htobe16(static_cast<uint16_t>(*n));
    return 0;
}

}  // namespace

extern "C" {

RDMA_EXPORT int ibv_query_device(ibv_context* context, ibv_device_attr* device_attr) {
    return rdma::entry_errno([&] {
        return Context::from(context)->query_device_ex(nullptr, reinterpret_cast<ibv_device_attr_ex*>(device_attr),
                                                       sizeof(*device_attr));
    });
}

// The exported symbol behind the header's inline wrapper: the old, shorter
// port_attr layout, which ends just before port_cap_flags2.
RDMA_EXPORT int(ibv_query_port)(ibv_context* context, uint8_t port_num, struct _compat_ibv_port_attr* port_attr) {
    return rdma::entry_errno([&] {
        return Context::from(context)->query_port(port_num, reinterpret_cast<ibv_port_attr*>(port_attr),
                                                  offsetof(ibv_port_attr, port_cap_flags2));
    });
}

RDMA_EXPORT int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index, ibv_gid_entry* entry,
                                  uint32_t flags, size_t entry_size) {
    return rdma::entry_errno([&] {
        if (flags || !entry || entry_size < offsetof(ibv_gid_entry, ndev_ifindex))
            return EINVAL;
        ibv_gid_entry e{};
        if (int err = query_gid_entry(context, port_num, gid_index, e))
            return err;
        store_entry(entry, entry_size, e);
        return 0;
    });
}

RDMA_EXPORT ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                                         uint32_t flags, size_t entry_size) {
    // A count or -errno; a GID table never holds 2^31 entries.
    return rdma::entry_neg_errno(
        [&] { return static_cast<int>(query_gid_table(context, entries, max_entries, flags, entry_size)); });
}

RDMA_EXPORT int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
    return rdma::entry_minus_one([&] { return query_gid(context, port_num, index, gid); });
}

RDMA_EXPORT int ibv_query_gid_type(ibv_context* context, uint8_t port_num, unsigned int index,
                                   ibv_gid_type_sysfs* type) {
    return rdma::entry_minus_one([&] { return query_gid_type(context, port_num, index, type); });
}

RDMA_EXPORT int ibv_query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
    return rdma::entry_minus_one([&] { return query_pkey(context, port_num, index, pkey); });
}

RDMA_EXPORT int ibv_get_pkey_index(ibv_context* context, uint8_t port_num, __be16 pkey) {
    return rdma::entry_minus_one([&] {
        __be16 cur;
        for (int i = 0; ibv_query_pkey(context, port_num, i, &cur) == 0; ++i)
            if (cur == pkey)
                return i;
        return -1;
    });
}

}  // extern "C"

// These names also have a 1.0 ABI version (compat_1_0.cpp): the
// definitions here are bound to IBVERBS_1.1 as the default version.
RDMA_DEFAULT_VERSION(ibv_query_device, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_query_port, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_query_gid, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_query_pkey, IBVERBS_1.1);
