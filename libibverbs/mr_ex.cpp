// Registration by attributes and what feeds it (IBVERBS_1.15 to 1.18):
// ibv_reg_mr_ex, provider-allocated buffers (ibv_alloc_buf & co) and DMA
// handles, and the dma-buf export of device memory. The library resolves a
// buffer into an address or a dma-buf range and keeps the fork bookkeeping;
// the registration itself is the provider's (Context::reg_mr_ex).
#include "libibverbs/ibverbs.h"
#include "util/c_entry.h"

#include <fcntl.h>

using namespace rdma::verbs;

namespace rdma::verbs {

// clang-format off
ibv_mr* Context::reg_mr_ex(ibv_pd*, ibv_mr_init_attr*) { errno = EOPNOTSUPP; return nullptr; }
ibv_dmah* Context::alloc_dmah(ibv_dmah_init_attr*) { errno = EOPNOTSUPP; return nullptr; }
int Context::dm_export_dmabuf_fd(ibv_dm*) { errno = EOPNOTSUPP; return -1; }
void* Context::alloc_buf(ibv_pd*, size_t, ibv_buf**) { errno = EOPNOTSUPP; return nullptr; }
// clang-format on

}  // namespace rdma::verbs

namespace {

constexpr uint64_t kMaskIova = IBV_REG_MR_MASK_IOVA;
constexpr uint64_t kMaskAddr = IBV_REG_MR_MASK_ADDR;
constexpr uint64_t kMaskFd = IBV_REG_MR_MASK_FD;
constexpr uint64_t kMaskFdOffset = IBV_REG_MR_MASK_FD_OFFSET;
constexpr uint64_t kMaskDmah = IBV_REG_MR_MASK_DMAH;
constexpr uint64_t kMaskBuf = IBV_REG_MR_MASK_BUF;

ibv_mr* fail(int e) {
    errno = e;
    return nullptr;
}

// The caller's attributes, reduced to what its mask says is valid.
ibv_mr_init_attr masked_copy(const ibv_mr_init_attr& in) {
    ibv_mr_init_attr a{};
    a.length = in.length;
    a.access = in.access;
    a.comp_mask = in.comp_mask;
    if (in.comp_mask & kMaskIova)
        a.iova = in.iova;
    if (in.comp_mask & kMaskAddr)
        a.addr = in.addr;
    if (in.comp_mask & kMaskFd)
        a.fd = in.fd;
    if (in.comp_mask & kMaskFdOffset)
        a.fd_offset = in.fd_offset;
    if (in.comp_mask & kMaskDmah)
        a.dmah = in.dmah;
    if (in.comp_mask & kMaskBuf)
        a.buf = in.buf;
    return a;
}

// A buffer range becomes what the provider registers: the same address
// for plain memory, or the buffer's dma-buf at the range's offset (with the
// address as IOVA). 0 or EINVAL: the range must lie inside a buffer of the
// same PD, be given by address, and not also name a dma-buf itself.
int resolve_buffer(ibv_pd* pd, ibv_mr_init_attr& a) {
    const ibv_buf* buf = a.buf;
    if (!buf || buf->pd != pd || !(a.comp_mask & kMaskAddr))
        return EINVAL;
    const auto start = reinterpret_cast<uintptr_t>(buf->addr);
    const auto addr = reinterpret_cast<uintptr_t>(a.addr);
    if (addr < start)
        return EINVAL;
    const size_t off = addr - start;
    if (off > buf->size || a.length > buf->size - off)
        return EINVAL;
    if (a.comp_mask & (kMaskFd | kMaskFdOffset))
        return EINVAL;
    a.comp_mask &= ~kMaskBuf;
    a.buf = nullptr;
    if (buf->dmabuf_fd >= 0) {
        if (a.comp_mask & kMaskIova)
            return EINVAL;  // the address is the IOVA of a buffer range
        a.comp_mask = (a.comp_mask & ~kMaskAddr) | kMaskFd | kMaskFdOffset | kMaskIova;
        a.fd = buf->dmabuf_fd;
        a.fd_offset = off;
        a.iova = addr;
        a.addr = nullptr;
    }
    return 0;
}

ibv_mr* reg_mr_ex(ibv_pd* pd, const ibv_mr_init_attr* attr) {
    if (!pd || !attr)
        return fail(EINVAL);
    ibv_mr_init_attr a = masked_copy(*attr);
    void* const addr = a.addr;  // the application's view of the range
    if (a.comp_mask & kMaskBuf)
        if (int e = resolve_buffer(pd, a))
            return fail(e);
    Context* c = Context::from(pd->context);
    // Memory the device reaches by address must not be copied on write
    // into a forked child; a dma-buf or on-demand paging needs no pinning.
    const bool pin = !(a.access & IBV_ACCESS_ON_DEMAND) && !(a.comp_mask & kMaskFd);
    if (pin)
        if (int e = ibv_dontfork_range(addr, a.length))
            return fail(e);
    ForkRangeUndo undo{addr, a.length, pin};
    if (!(c->core_support() & IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS))
        a.access &= ~IBV_ACCESS_OPTIONAL_RANGE;
    ibv_mr* mr = c->reg_mr_ex(pd, &a);
    if (!mr)
        return nullptr;
    undo.armed = false;
    reinterpret_cast<VerbsMr*>(mr)->fork_pinned = pin;  // what ibv_dereg_mr gives back
    mr->context = pd->context;
    mr->pd = pd;
    mr->length = a.length;
    mr->addr = (attr->comp_mask & kMaskAddr) ? addr : reinterpret_cast<void*>(static_cast<uintptr_t>(a.fd_offset));
    return mr;
}

}  // namespace

extern "C" {

RDMA_EXPORT ibv_mr* ibv_reg_mr_ex(ibv_pd* pd, ibv_mr_init_attr* mr_init_attr) {
    return rdma::entry_null([&] { return reg_mr_ex(pd, mr_init_attr); });
}

RDMA_EXPORT ibv_mr* ibv_reg_buf_mr(ibv_pd* pd, ibv_buf* buf, void* addr, size_t length, int access) {
    return rdma::entry_null([&] {
        ibv_mr_init_attr a{};
        a.length = length;
        a.access = access;
        a.comp_mask = kMaskBuf | kMaskAddr;
        a.addr = addr;
        a.buf = buf;
        return reg_mr_ex(pd, &a);
    });
}

RDMA_EXPORT ibv_dmah* ibv_alloc_dmah(ibv_context* context, ibv_dmah_init_attr* attr) {
    return rdma::entry_null([&] { return Context::from(context)->alloc_dmah(attr); });
}

RDMA_EXPORT int ibv_dealloc_dmah(ibv_dmah* dmah) {
    return rdma::entry_errno([&] { return Context::from(dmah->context)->dealloc_dmah(dmah); });
}

RDMA_EXPORT int ibv_dm_export_dmabuf_fd(ibv_dm* dm) {
    return rdma::entry_minus_one([&] { return Context::from(dm->context)->dm_export_dmabuf_fd(dm); });
}

RDMA_EXPORT void* ibv_alloc_buf(ibv_pd* pd, size_t size, ibv_buf** buf) {
    return rdma::entry_null([&]() -> void* {
        if (!pd || !buf) {
            errno = EINVAL;
            return nullptr;
        }
        return Context::from(pd->context)->alloc_buf(pd, size, buf);
    });
}

RDMA_EXPORT void ibv_free_buf(ibv_buf* buf) {
    rdma::entry_void([&] {
        if (buf)
            Context::from(buf->pd->context)->free_buf(buf);
    });
}

// A new descriptor of the buffer's dma-buf, the caller's to close; a
// buffer of plain memory has none (EOPNOTSUPP).
RDMA_EXPORT int ibv_export_buf_dmabuf_fd(ibv_buf* buf) {
    return rdma::entry_minus_one([&]() -> int {
        if (!buf) {
            errno = EINVAL;
            return -1;
        }
        if (buf->dmabuf_fd < 0) {
            errno = EOPNOTSUPP;
            return -1;
        }
        return fcntl(buf->dmabuf_fd, F_DUPFD_CLOEXEC, 0);
    });
}

}  // extern "C"
