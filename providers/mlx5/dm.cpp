// Device memory (MEMIC): bytes on the adapter that the application maps and
// reaches with 4-byte loads and stores (ibv_memcpy_to_dm/from_dm), and that
// queues reach through zero-based MRs (ibv_reg_dm_mr). The kernel allocates
// it (DM_ALLOC with mlx5's type, answering where it starts in its page and
// the page's mmap index); the library maps the page range.
// First: it gives the public declarations default visibility.
#include "providers/mlx5/mlx5dv_compat.h"

#include "providers/mlx5/mlx5.h"
#include "util/c_entry.h"

#include <rdma/mlx5_user_ioctl_cmds.h>
#include <rdma/mlx5_user_ioctl_verbs.h>
#include <sys/mman.h>

namespace rdma::mlx5 {

using verbs::create_object;
using verbs::destroy_object;
using verbs::Ioctl;
using verbs::VerbsMr;

namespace {

// The access a MEMIC MR may have: local and remote, always zero-based.
constexpr unsigned int kDmMrAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED;

// One allocation: the public part first (ibv_dm is what callers hold).
struct Mlx5Dm {
    ibv_dm dm{};
    void* map = MAP_FAILED;  // the mapped pages
    size_t map_len = 0;
    uint8_t* start = nullptr;  // the allocation's first byte in the mapping
    uint64_t length = 0;  // as the caller asked (the bound of the copies)
};

Mlx5Dm* to_mdm(ibv_dm* dm) { return reinterpret_cast<Mlx5Dm*>(dm); }

// The device takes 4-byte accesses only: offset and length multiples of 4,
// inside what was asked for (EFAULT beyond it, EINVAL when misaligned).
int dm_range_error(const Mlx5Dm& m, uint64_t offset, size_t length) {
    if (offset > m.length || length > m.length - offset)
        return EFAULT;
    if ((offset | length) & 3)
        return EINVAL;
    return 0;
}

int copy_to_dm(ibv_dm* dm, uint64_t offset, const void* src, size_t length) noexcept {
    Mlx5Dm& m = *to_mdm(dm);
    if (int e = dm_range_error(m, offset, length))
        return e;
    auto* to = reinterpret_cast<volatile uint32_t*>(m.start + offset);
    const auto* from = static_cast<const uint8_t*>(src);
    for (size_t i = 0; i < length / 4; ++i) {
        uint32_t w;
        memcpy(&w, from + 4 * i, 4);
        to[i] = w;
    }
    return 0;
}

int copy_from_dm(void* dst, ibv_dm* dm, uint64_t offset, size_t length) noexcept {
    Mlx5Dm& m = *to_mdm(dm);
    if (int e = dm_range_error(m, offset, length))
        return e;
    const auto* from = reinterpret_cast<const volatile uint32_t*>(m.start + offset);
    auto* to = static_cast<uint8_t*>(dst);
    for (size_t i = 0; i < length / 4; ++i) {
        const uint32_t w = from[i];
        memcpy(to + 4 * i, &w, 4);
    }
    return 0;
}

// Maps `length` bytes of device memory that start at `start_offset` into
// the pages of mmap index `page_idx` (what DM_ALLOC, DM_QUERY and
// DM_MAP_OP_ADDR answer): the first byte's address, or null with errno
// set; the whole mapping in map/map_len.
uint8_t* map_device_mem(int cmd_fd, uint64_t start_offset, uint16_t page_idx, uint64_t length, void*& map,
                        size_t& map_len) {
    const long page = sysconf(_SC_PAGESIZE);
    const uint64_t in_page = start_offset & static_cast<uint64_t>(page - 1);
    map_len = static_cast<size_t>((in_page + length + page - 1) & ~static_cast<uint64_t>(page - 1));
    map = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, cmd_fd,
               mmap_offset(page, MLX5_IB_MMAP_DEVICE_MEM, page_idx));
    return map == MAP_FAILED ? nullptr : static_cast<uint8_t*>(map) + in_page;
}

int map_dm(Mlx5Dm& m, int cmd_fd, uint64_t start_offset, uint16_t page_idx, uint64_t length) {
    m.start = map_device_mem(cmd_fd, start_offset, page_idx, length, m.map, m.map_len);
    if (!m.start)
        return errno ? errno : ENOMEM;
    m.length = length;
    m.dm.memcpy_to_dm = copy_to_dm;
    m.dm.memcpy_from_dm = copy_from_dm;
    return 0;
}

void unmap_dm(Mlx5Dm& m) {
    if (m.map != MAP_FAILED)
        munmap(m.map, m.map_len);
    m.map = MAP_FAILED;
}

}  // namespace

// As the reference: attributes it does not know and sizes beyond what the
// device has are EINVAL before the kernel is asked; the kernel answers the
// rest (ENOMEM when the device memory is used up, EOPNOTSUPP for a type
// the device lacks).
ibv_dm* Mlx5Context::alloc_dm(const ibv_alloc_dm_attr* attr, uint32_t type) {
    if (attr->comp_mask || attr->length > caps_.max_dm_size) {
        errno = EINVAL;
        return nullptr;
    }
    const bool memic = type == MLX5_IB_UAPI_DM_TYPE_MEMIC;
    Mlx5Dm* dm = create_object<Mlx5Dm>([&](Mlx5Dm& m) {
        uint64_t start_offset = 0;
        uint16_t page_idx = 0;
        Ioctl<8> io(UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC, driver_id());
        // (as the reference: a kernel may ignore the type only when it is
        // the default, MEMIC, the one type that has a page to map)
        ib_uverbs_attr& t = io.const_in(MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE, type);
        if (memic)
            Ioctl<8>::optional(t);
        io.out(MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET, start_offset);
        if (memic)
            io.out(MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX, page_idx);
        if (int e = cmd_alloc_dm(attr, &m.dm, io))
            return e;
        if (!memic)
            return 0;  // the steering memory types are not mapped
        if (int e = map_dm(m, cmd_fd(), start_offset, page_idx, attr->length)) {
            cmd_free_dm(&m.dm);
            return e;
        }
        return 0;
    });
    return dm ? &dm->dm : nullptr;
}

// The kernel first (EBUSY while MRs use it: the allocation stays usable),
// then the mapping.
int Mlx5Context::free_dm(ibv_dm* dm) {
    return destroy_object(to_mdm(dm), [&](Mlx5Dm& m) {
        if (int e = cmd_free_dm(&m.dm))
            return e;
        unmap_dm(m);
        return 0;
    });
}

ibv_mr* Mlx5Context::reg_dm_mr(ibv_pd* pd, ibv_dm* dm, uint64_t offset, size_t length, unsigned int access) {
    if ((access & ~kDmMrAccess) || !(access & IBV_ACCESS_ZERO_BASED)) {
        errno = EINVAL;
        return nullptr;
    }
    VerbsMr* mr = create_object<VerbsMr>([&](VerbsMr& m) { return cmd_reg_dm_mr(pd, dm, offset, length, access, &m); });
    return mr ? &mr->mr : nullptr;
}

// ibv_import_dm: where another context's allocation is (mlx5's DM query),
// mapped again here; unimport unmaps it and leaves the memory allocated.
ibv_dm* Mlx5Context::import_dm(uint32_t dm_handle) {
    Mlx5Dm* dm = create_object<Mlx5Dm>([&](Mlx5Dm& m) {
        uint64_t start_offset = 0, length = 0;
        uint16_t page_idx = 0;
        Ioctl<4> io(UVERBS_OBJECT_DM, MLX5_IB_METHOD_DM_QUERY, driver_id());
        io.idr_in(MLX5_IB_ATTR_QUERY_DM_REQ_HANDLE, dm_handle);
        io.out(MLX5_IB_ATTR_QUERY_DM_RESP_START_OFFSET, start_offset);
        io.out(MLX5_IB_ATTR_QUERY_DM_RESP_PAGE_INDEX, page_idx);
        io.out(MLX5_IB_ATTR_QUERY_DM_RESP_LENGTH, length);
        if (int e = io.execute(cmd_fd()))
            return e;
        m.dm.context = ibv();
        m.dm.handle = dm_handle;
        m.dm.comp_mask = IBV_DM_MASK_HANDLE;
        return map_dm(m, cmd_fd(), start_offset, page_idx, length);
    });
    return dm ? &dm->dm : nullptr;
}

void Mlx5Context::unimport_dm(ibv_dm* dm) {
    unmap_dm(*to_mdm(dm));
    delete to_mdm(dm);
}

// verbs_context's device-memory slots.
ibv_dm* alloc_dm_entry(ibv_context* ctx, ibv_alloc_dm_attr* attr) noexcept {
    return rdma::entry_null([&] { return to_mctx(ctx)->alloc_dm(attr, MLX5_IB_UAPI_DM_TYPE_MEMIC); });
}

int free_dm_entry(ibv_dm* dm) noexcept {
    return rdma::entry_errno([&] { return to_mctx(dm->context)->free_dm(dm); });
}

ibv_mr* reg_dm_mr_entry(ibv_pd* pd, ibv_dm* dm, uint64_t offset, size_t length, unsigned int access) noexcept {
    return rdma::entry_null([&] { return to_mctx(pd->context)->reg_dm_mr(pd, dm, offset, length, access); });
}

}  // namespace rdma::mlx5

using rdma::mlx5::to_mctx;

// The mlx5 attributes name the type; none of their mask bits is known.
extern "C" struct ibv_dm* mlx5dv_alloc_dm(struct ibv_context* ctx, struct ibv_alloc_dm_attr* attr,
                                          struct mlx5dv_alloc_dm_attr* dv) {
    return rdma::entry_null([&]() -> ibv_dm* {
        if (!rdma::mlx5::is_mlx5_ctx(ctx))
            return rdma::mlx5::fail_null<ibv_dm>();
        if (dv->comp_mask) {
            errno = EINVAL;
            return nullptr;
        }
        return to_mctx(ctx)->alloc_dm(attr, static_cast<uint32_t>(dv->type));
    });
}

// The address through which the device applies operation `op` to the
// memory (mlx5_ib's DM_MAP_OP_ADDR), mapped like the memory itself.
extern "C" void* mlx5dv_dm_map_op_addr(struct ibv_dm* dm, uint8_t op) {
    return rdma::entry_null([&]() -> void* {
        if (!rdma::mlx5::is_mlx5_ctx(dm->context))
            return rdma::mlx5::fail_null<void>();
        rdma::mlx5::Mlx5Context* c = to_mctx(dm->context);
        uint64_t start_offset = 0;
        uint16_t page_idx = 0;
        rdma::verbs::Ioctl<4> io(UVERBS_OBJECT_DM, MLX5_IB_METHOD_DM_MAP_OP_ADDR, c->driver_id());
        io.idr_in(MLX5_IB_ATTR_DM_MAP_OP_ADDR_REQ_HANDLE, dm->handle);
        io.in(MLX5_IB_ATTR_DM_MAP_OP_ADDR_REQ_OP, op);
        io.out(MLX5_IB_ATTR_DM_MAP_OP_ADDR_RESP_START_OFFSET, start_offset);
        io.out(MLX5_IB_ATTR_DM_MAP_OP_ADDR_RESP_PAGE_INDEX, page_idx);
        if (int e = io.execute(c->cmd_fd())) {
            errno = e;
            return nullptr;
        }
        void* map;
        size_t map_len;
        return rdma::mlx5::map_device_mem(c->cmd_fd(), start_offset, page_idx, 1, map, map_len);
    });
}
