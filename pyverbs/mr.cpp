// pyverbs.mr: memory regions over a buffer pyverbs allocates (or the
// caller's address, device memory, a provider buffer or a dma-buf), memory
// windows and what binds them, and DMA handles.
#include "dm.h"
#include "mr.h"
// pyverbs.cmid: MR(creator=cmid, ...)
#include "cmid.h"

#include <sys/mman.h>
#include <unistd.h>

using namespace pyverbs;

namespace {

constexpr size_t kHugePageSize = 2 * 1024 * 1024;

// raise_rdma_errno with the errno `e` saved before building the message.
[[noreturn]] void raise_saved_errno(int e, const std::string& msg) {
    errno = e;
    raise_rdma_errno(msg);
}

// Gives `mr` a zeroed buffer of `length` bytes that it owns: huge pages for
// IBV_ACCESS_HUGETLB, else page-aligned memory.
void alloc_buffer(MR& mr, size_t length, int access) {
    if (access & IBV_ACCESS_HUGETLB) {
        size_t len = (length + kHugePageSize - 1) / kHugePageSize * kHugePageSize;
        void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            raise_saved_errno(e, "Failed to allocate MR buffer of size " + std::to_string(length));
        }
        mr.owned = mr.buf = p;
        mr.owned_len = len;
        mr.mmapped = true;
        return;
    }
    // Page-aligned, as registrations of whole pages are what devices map.
    long page = sysconf(_SC_PAGESIZE);
    if (posix_memalign(&mr.owned, page, length ? length : 1))
        raise_rdma("Failed to allocate MR buffer of size " + std::to_string(length), ENOMEM);
    mr.buf = mr.owned;
    memset(mr.buf, 0, length);
}

// Frees what alloc_buffer gave (a registration that failed).
void free_buffer(MR& mr) {
    if (mr.owned && mr.mmapped)
        munmap(mr.owned, mr.owned_len);
    else if (mr.owned)
        free(mr.owned);
    mr.owned = mr.buf = nullptr;
}

// --- pyverbs.cmid: MR(creator=cmid, length, access) registers through the
// CMID (rdma_reg_msgs, rdma_reg_write or rdma_reg_read as access is
// IBV_ACCESS_LOCAL_WRITE, _REMOTE_WRITE or _REMOTE_READ; cmid.h); the CMID
// closes it first.
// The caller's address or a buffer of our own, registered by `reg`; a
// failed registration frees the buffer and raises the reference's message.
template <class Reg>
void register_buffer(MR& mr, const py::object& address, size_t length, int access, Reg reg) {
    mr.length = length;
    if (!address.is_none())
        mr.buf = reinterpret_cast<void*>(address.cast<uintptr_t>());
    else
        alloc_buffer(mr, length, access);
    mr.mr = reg(mr.buf);
    if (!mr.mr) {
        int e = errno;
        free_buffer(mr);
        raise_rdma("Failed to register a MR. length: " + std::to_string(length) +
                       ", access flags: " + std::to_string(access),
                   e);
    }
}

std::shared_ptr<MR> make_cmid_mr(py::object creator, size_t length, int access, py::object address) {
    CMID& cmid = cmid_arg(creator);
    auto mr = std::make_shared<MR>();
    register_buffer(*mr, address, length, access, [&](void* buf) { return reg_mr_on_cmid(cmid, buf, length, access); });
    mr->pd = creator;
    mr->adopt(creator, cmid);
    return mr;
}
// --- end pyverbs.cmid

std::shared_ptr<MR> make_mr(py::object creator, size_t length, int access, py::object address, bool implicit,
                            py::kwargs kw) {
    if (is_cmid(creator))
        return make_cmid_mr(creator, length, access, address);
    PD& pd = open_arg<PD>(creator, "PD");
    auto mr = std::make_shared<MR>();
    mr->length = length;
    if (kw.contains("handle") && !kw["handle"].is_none()) {
        mr->mr = ibv_import_mr(pd.pd, kw["handle"].cast<uint32_t>());
        if (!mr->mr)
            raise_rdma_errno("Failed to import MR");
        mr->imported = true;
        mr->length = mr->mr->length;
        mr->buf = mr->mr->addr;
    } else if (implicit) {
        // An implicit ODP MR covers the whole address space.
        mr->mr = ibv_reg_mr(pd.pd, nullptr, SIZE_MAX, access);
        if (!mr->mr)
            raise_rdma_errno("Failed to register an implicit MR");
    } else {
        register_buffer(*mr, address, length, access,
                        [&](void* buf) { return ibv_reg_mr(pd.pd, buf, length, access); });
    }
    mr->pd = creator;
    mr->adopt(creator, pd);
    return mr;
}

std::string mwtype2str(int t) {
    return t == IBV_MW_TYPE_1 ? "IBV_MW_TYPE_1"
        : t == IBV_MW_TYPE_2  ? "IBV_MW_TYPE_2"
                              : "Unknown MW type (" + std::to_string(t) + ")";
}

MR& mr_of(py::handle h) { return open_arg<MR>(h, "MR"); }

// "<msg>. length: <length>, access flags: <access>", the reference's
// wording of a failed registration.
std::string reg_failed(const char* what, size_t length, int access) {
    return std::string(what) + ". length: " + std::to_string(length) + ", access flags: " + std::to_string(access);
}

// pyverbs.mr.DMMR: an MR over device memory; reads and writes go through
// the DM (at offsets of the DM, as the reference's).
class DMMR : public MR {
public:
    py::object dm;
};

// pyverbs.mr.DmaHandleInitAttr
struct DmaHandleInitAttr : Object {
    ibv_dmah_init_attr attr{};
};

// pyverbs.mr.DMAHandle: TPH steering hints an MREx can carry.
class DMAHandle : public CM {
public:
    ~DMAHandle() override { close_quietly(); }
    ibv_dmah* dmah = nullptr;
    py::object ctx;

protected:
    void release() override {
        if (!dmah)
            return;
        ibv_dmah* d = dmah;
        dmah = nullptr;
        if (int rc = ibv_dealloc_dmah(d)) {
            dmah = d;
            raise_rdma("Failed to dealloc DMA Handle", rc);
        }
    }
};

// pyverbs.mr.MREx: an MR registered by attributes (ibv_reg_mr_ex).
class MREx : public MR {
public:
    py::object dmah;
};

// pyverbs.mr.Buf: memory the provider allocates for a PD (ibv_alloc_buf).
class Buf : public CM {
public:
    ~Buf() override { close_quietly(); }
    ibv_buf* bufh = nullptr;
    void* addr = nullptr;
    size_t size = 0;
    py::object pd;

protected:
    void release() override {
        if (!bufh)
            return;
        ibv_free_buf(bufh);
        bufh = nullptr;
        addr = nullptr;
    }
};

// pyverbs.mr.BufMR: an MR over (part of) a Buf, which owns the memory.
class BufMR : public MR {
public:
    py::object cocobuf;
};

// pyverbs.mr.DmaBufMR: an MR over a dma-buf (a pyverbs.dmabuf.DmaBuf or the
// file descriptor of one).
class DmaBufMR : public MR {
public:
    ~DmaBufMR() override { close_quietly(); }
    py::object dmabuf;
    uint64_t offset = 0;
    bool internal = false;  // the DmaBuf is this object's own

    // The fd to map and the offset of the buffer in that mapping.
    std::pair<int, off_t> mapping() const {
        if (py::isinstance<py::int_>(dmabuf))
            return {dmabuf.cast<int>(), 0};
        return {dmabuf.attr("drm_fd").cast<int>(), dmabuf.attr("map_offset").cast<off_t>()};
    }

protected:
    void release() override {
        MR::release();
        if (internal && dmabuf && !dmabuf.is_none())
            dmabuf.attr("close")();
        dmabuf = py::none();
    }
};

// Maps the dma-buf of `mr` for `length` bytes past `off` of the buffer and
// runs `fn` on the address of byte `off`.
template <class F>
void with_dmabuf_map(DmaBufMR& mr, size_t length, uint64_t off, F fn) {
    auto [fd, map_offset] = mr.mapping();
    size_t span = length + off;
    void* p = mmap(nullptr, span ? span : 1, PROT_READ | PROT_WRITE, MAP_SHARED, fd, map_offset);
    if (p == MAP_FAILED)
        raise_error("Failed to map dma-buf of size " + std::to_string(length));
    fn(static_cast<char*>(p) + off);
    munmap(p, span ? span : 1);
}

std::string bytes_of(py::handle data) {
    return py::isinstance<py::str>(data) ? data.cast<std::string>()
                                         : std::string(py::reinterpret_borrow<py::bytes>(data));
}

std::string mr_str(const char* title, const MR& mr) {
    return std::string(title) + str_line("lkey", mr.mr->lkey) + str_line("rkey", mr.mr->rkey) +
        str_line("length", mr.mr->length) + str_line("buf", (unsigned long long)(uintptr_t)mr.buf) +
        str_line("handle", mr.mr->handle);
}

// MR.write(data, length, offset=0) and MR.read(length, offset): fast methods.
PyObject* mr_write(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return fast_call([&] {
        static const char* const names[] = {"data", "length", "offset"};
        FastArgs<3> a("write", names, 2, args, nargs, kwnames);
        MR& mr = mr_of(self);
        std::string_view bytes = byte_view(a.v[0]);
        size_t length = a.u64(1), offset = a.u64(2);
        mr.check_range(length, offset, "write");
        memcpy(static_cast<char*>(mr.buf) + offset, bytes.data(), std::min(length, bytes.size()));
        return Py_NewRef(Py_None);
    });
}

PyObject* mr_read(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return fast_call([&] {
        static const char* const names[] = {"length", "offset"};
        FastArgs<2> a("read", names, 2, args, nargs, kwnames);
        MR& mr = mr_of(self);
        size_t length = a.u64(0), offset = a.u64(1);
        mr.check_range(length, offset, "read");
        return PyBytes_FromStringAndSize(static_cast<const char*>(mr.buf) + offset, Py_ssize_t(length));
    });
}

}  // namespace

PYBIND11_MODULE(mr, m) {
    import_deps({"pyverbs.base", "pyverbs.device", "pyverbs.pd"});
    m.doc() = "Memory regions and memory windows";
    m.attr("HUGE_PAGE_SIZE") = kHugePageSize;

    py::class_<MR, CM, std::shared_ptr<MR>>(m, "MR")
        .def(py::init(&make_mr), py::arg("creator"), py::arg("length"), py::arg("access"),
             py::arg("address") = py::none(), py::arg("implicit") = false)
        .def(
            "rereg",
            [](py::handle self, int flags, py::object pd, uintptr_t addr, size_t length, int access) {
                MR& mr = mr_of(self);
                ibv_pd* new_pd = pd.is_none() ? nullptr : open_arg<PD>(pd, "PD").pd;
                int rc = ibv_rereg_mr(mr.mr, flags, new_pd, reinterpret_cast<void*>(addr), length, access);
                if (rc)
                    raise_rdma(
                        "Failed to rereg MR: " +
                            py::module_::import("pyverbs.utils").attr("rereg_error_to_str")(rc).cast<std::string>(),
                        errno);
                if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
                    mr.buf = reinterpret_cast<void*>(addr);
                    mr.length = length;
                }
            },
            py::arg("flags"), py::arg("pd") = py::none(), py::arg("addr") = 0, py::arg("length") = 0,
            py::arg("access") = 0)
        .def("unimport", [](MR& mr) { mr.close(); })
        .def_property_readonly("buf", [](py::handle self) { return reinterpret_cast<uintptr_t>(mr_of(self).buf); })
        .def_property_readonly("lkey", [](py::handle self) { return mr_of(self).mr->lkey; })
        .def_property_readonly("rkey", [](py::handle self) { return mr_of(self).mr->rkey; })
        .def_property_readonly("length", [](py::handle self) { return mr_of(self).mr->length; })
        .def_property_readonly("handle", [](py::handle self) { return mr_of(self).mr->handle; })
        .def("__str__", [](py::handle self) { return mr_str("MR:\n", mr_of(self)); });

    py::class_<MW, CM, std::shared_ptr<MW>>(m, "MW")
        .def(py::init([](py::object pd_obj, int mw_type) {
                 PD& pd = open_arg<PD>(pd_obj, "PD");
                 auto mw = std::make_shared<MW>();
                 mw->mw = ibv_alloc_mw(pd.pd, ibv_mw_type(mw_type));
                 if (!mw->mw)
                     raise_rdma_errno("Failed to allocate MW");
                 mw->pd = pd_obj;
                 mw->adopt(pd_obj, pd);
                 return mw;
             }),
             py::arg("pd"), py::arg("mw_type"))
        .def_property_readonly("rkey", [](py::handle self) { return open_arg<MW>(self, "MW").mw->rkey; })
        .def_property_readonly("handle", [](py::handle self) { return open_arg<MW>(self, "MW").mw->handle; })
        .def_property_readonly("type", [](py::handle self) { return int(open_arg<MW>(self, "MW").mw->type); })
        .def("__str__", [](py::handle self) {
            MW& w = open_arg<MW>(self, "MW");
            return "MW:\n" + str_line("Rkey", w.mw->rkey) + str_line("Handle", w.mw->handle) +
                str_line("MW Type", mwtype2str(w.mw->type));
        });

    py::class_<MWBindInfo, CM, std::shared_ptr<MWBindInfo>>(m, "MWBindInfo")
        .def(py::init([](py::object mr, uint64_t addr, uint64_t length, unsigned mw_access_flags) {
                 open_arg<MR>(mr, "MR");
                 auto i = std::make_shared<MWBindInfo>();
                 i->mr = mr;
                 i->info.addr = addr;
                 i->info.length = length;
                 i->info.mw_access_flags = mw_access_flags;
                 return i;
             }),
             py::arg("mr"), py::arg("addr"), py::arg("length"), py::arg("mw_access_flags"))
        .def_property_readonly("mw_access_flags", [](const MWBindInfo& i) { return i.info.mw_access_flags; })
        .def_property_readonly("length", [](const MWBindInfo& i) { return i.info.length; })
        .def_property_readonly("addr", [](const MWBindInfo& i) { return i.info.addr; })
        .def("__str__", [](const MWBindInfo& i) {
            return "MWBindInfo:\n" + str_line("Addr", i.info.addr) + str_line("Length", i.info.length) +
                str_line("MW access flags", i.info.mw_access_flags);
        });

    py::class_<MWBind, CM, std::shared_ptr<MWBind>>(m, "MWBind")
        .def(py::init([](py::object info, unsigned send_flags, uint64_t wr_id) {
                 arg_as<MWBindInfo>(info, "MWBindInfo");
                 auto b = std::make_shared<MWBind>();
                 b->info = info;
                 b->mw_bind.wr_id = wr_id;
                 b->mw_bind.send_flags = send_flags;
                 return b;
             }),
             py::arg("info"), py::arg("send_flags"), py::arg("wr_id") = 0)
        .def("__str__", [](const MWBind& b) {
            return "MWBind:\n" + str_line("WR id", b.mw_bind.wr_id) + str_line("Send flags", b.mw_bind.send_flags);
        });

    py::class_<DMMR, MR, std::shared_ptr<DMMR>>(m, "DMMR")
        .def(py::init([](py::object pd_obj, size_t length, unsigned access, py::object dm_obj, uint64_t offset) {
                 PD& pd = open_arg<PD>(pd_obj, "PD");
                 DM& dm = open_arg<DM>(dm_obj, "DM");
                 auto mr = std::make_shared<DMMR>();
                 mr->mr = ibv_reg_dm_mr(pd.pd, dm.dm, offset, length, access);
                 if (!mr->mr) {
                     int e = errno;
                     raise_saved_errno(e, reg_failed("Failed to register a device MR", length, int(access)));
                 }
                 mr->length = length;
                 mr->pd = pd_obj;
                 mr->dm = dm_obj;
                 mr->adopt(pd_obj, pd);
                 mr->depend_on(dm_obj, dm);
                 return mr;
             }),
             py::arg("pd"), py::arg("length"), py::arg("access"), py::arg("dm"), py::arg("offset"))
        .def(
            "write",
            [](py::handle self, py::object data, size_t length, uint64_t offset) {
                auto& mr = open_arg<DMMR>(self, "DMMR");
                open_arg<DM>(mr.dm, "DM").copy_to(offset, data, length);
            },
            py::arg("data"), py::arg("length"), py::arg("offset") = 0)
        .def(
            "read",
            [](py::handle self, size_t length, uint64_t offset) {
                auto& mr = open_arg<DMMR>(self, "DMMR");
                return open_arg<DM>(mr.dm, "DM").copy_from(offset, length);
            },
            py::arg("length"), py::arg("offset"));

    py::class_<DmaBufMR, MR, std::shared_ptr<DmaBufMR>>(m, "DmaBufMR")
        .def(py::init([](py::object pd_obj, size_t length, int access, py::object dmabuf, uint64_t offset, int gpu,
                         int gtt) {
                 PD& pd = open_arg<PD>(pd_obj, "PD");
                 auto mr = std::make_shared<DmaBufMR>();
                 if (dmabuf.is_none()) {
                     // The reference allocates a GPU buffer (pyverbs.dmabuf).
                     py::object cls;
                     try {
                         cls = py::module_::import("pyverbs.dmabuf").attr("DmaBuf");
                     } catch (py::error_already_set&) {
                         raise_user("DmaBufMR needs dmabuf= (a DmaBuf or a dma-buf fd): pyverbs.dmabuf is not "
                                    "available to allocate one");
                     }
                     dmabuf = cls(length + offset, gpu, gtt);
                     mr->internal = true;
                 }
                 mr->dmabuf = dmabuf;
                 int fd = py::isinstance<py::int_>(dmabuf) ? dmabuf.cast<int>() : dmabuf.attr("fd").cast<int>();
                 mr->mr = ibv_reg_dmabuf_mr(pd.pd, offset, length, offset, fd, access);
                 if (!mr->mr) {
                     int e = errno;
                     if (mr->internal)
                         dmabuf.attr("close")();
                     raise_rdma(reg_failed("Failed to register a dma-buf MR", length, access), e);
                 }
                 mr->dereg_error = "Failed to dereg dma-buf MR";
                 mr->length = length;
                 mr->offset = offset;
                 mr->pd = pd_obj;
                 mr->adopt(pd_obj, pd);
                 return mr;
             }),
             py::arg("pd"), py::arg("length"), py::arg("access"), py::arg("dmabuf") = py::none(), py::arg("offset") = 0,
             py::arg("gpu") = 0, py::arg("gtt") = 0)
        .def_property_readonly("offset", [](py::handle self) { return open_arg<DmaBufMR>(self, "DmaBufMR").offset; })
        .def_property_readonly("dmabuf", [](const DmaBufMR& mr) { return mr.dmabuf; })
        .def(
            "write",
            [](py::handle self, py::object data, size_t length, uint64_t offset) {
                auto& mr = open_arg<DmaBufMR>(self, "DmaBufMR");
                std::string bytes = bytes_of(data);
                bytes.resize(std::max(bytes.size(), length), '\0');
                with_dmabuf_map(mr, length, offset + mr.offset, [&](char* p) { memcpy(p, bytes.data(), length); });
            },
            py::arg("data"), py::arg("length"), py::arg("offset") = 0)
        .def(
            "read",
            [](py::handle self, size_t length, uint64_t offset) {
                auto& mr = open_arg<DmaBufMR>(self, "DmaBufMR");
                std::string out(length, '\0');
                with_dmabuf_map(mr, length, offset + mr.offset, [&](char* p) { memcpy(out.data(), p, length); });
                return py::bytes(out);
            },
            py::arg("length"), py::arg("offset"));

    py::class_<DmaHandleInitAttr, Object, std::shared_ptr<DmaHandleInitAttr>>(m, "DmaHandleInitAttr")
        .def(py::init([](uint32_t comp_mask, uint32_t cpu_id, uint8_t ph, uint8_t tph_mem_type) {
                 auto a = std::make_shared<DmaHandleInitAttr>();
                 a->attr.comp_mask = comp_mask;
                 a->attr.cpu_id = cpu_id;
                 a->attr.ph = ph;
                 a->attr.tph_mem_type = tph_mem_type;
                 return a;
             }),
             py::arg("comp_mask") = 0, py::arg("cpu_id") = 0, py::arg("ph") = 0, py::arg("tph_mem_type") = 0)
        .def_property(
            "comp_mask", [](const DmaHandleInitAttr& a) { return a.attr.comp_mask; },
            [](DmaHandleInitAttr& a, uint32_t v) { a.attr.comp_mask = v; })
        .def_property(
            "cpu_id", [](const DmaHandleInitAttr& a) { return a.attr.cpu_id; },
            [](DmaHandleInitAttr& a, uint32_t v) { a.attr.cpu_id = v; })
        .def_property(
            "ph", [](const DmaHandleInitAttr& a) { return a.attr.ph; },
            [](DmaHandleInitAttr& a, uint8_t v) { a.attr.ph = v; })
        .def_property(
            "tph_mem_type", [](const DmaHandleInitAttr& a) { return a.attr.tph_mem_type; },
            [](DmaHandleInitAttr& a, uint8_t v) { a.attr.tph_mem_type = v; })
        .def("__str__", [](const DmaHandleInitAttr& a) {
            return "DmaHandleInitAttr:\n" + str_line("comp_mask", a.attr.comp_mask) +
                str_line("cpu_id", a.attr.cpu_id) + str_line("ph", a.attr.ph) +
                str_line("tph_mem_type", a.attr.tph_mem_type);
        });

    py::class_<DMAHandle, CM, std::shared_ptr<DMAHandle>>(m, "DMAHandle")
        .def(py::init([](py::object ctx_obj, py::object init_attr) {
                 Context& ctx = open_arg<Context>(ctx_obj, "Context");
                 ibv_dmah_init_attr attr = arg_as<DmaHandleInitAttr>(init_attr, "DmaHandleInitAttr").attr;
                 auto h = std::make_shared<DMAHandle>();
                 h->dmah = ibv_alloc_dmah(ctx.ctx, &attr);
                 if (!h->dmah)
                     raise_rdma_errno("Failed to create DMA Handle");
                 h->ctx = ctx_obj;
                 h->adopt(ctx_obj, ctx);
                 return h;
             }),
             py::arg("ctx"), py::arg("init_attr"));

    py::class_<MREx, MR, std::shared_ptr<MREx>>(m, "MREx")
        .def(py::init([](py::object pd_obj, size_t length, int access, py::object address, py::object iova,
                         py::object fd, uint64_t fd_offset, py::object dmah, bool implicit, py::kwargs) {
                 PD& pd = open_arg<PD>(pd_obj, "PD");
                 DMAHandle* handle = dmah.is_none() ? nullptr : &open_arg<DMAHandle>(dmah, "DMAHandle");
                 auto mr = std::make_shared<MREx>();
                 uintptr_t user_addr = address.is_none() ? 0 : address.cast<uintptr_t>();
                 if (user_addr)
                     mr->buf = reinterpret_cast<void*>(user_addr);
                 else if (length > 0 && fd.is_none())
                     alloc_buffer(*mr, length, access);
                 ibv_mr_init_attr in{};
                 if (implicit) {
                     in.length = SIZE_MAX;
                     in.comp_mask |= IBV_REG_MR_MASK_ADDR;
                 } else {
                     in.length = length;
                     if (mr->buf) {
                         in.comp_mask |= IBV_REG_MR_MASK_ADDR;
                         in.addr = mr->buf;
                     }
                 }
                 in.access = access;
                 if (!iova.is_none()) {
                     in.comp_mask |= IBV_REG_MR_MASK_IOVA;
                     in.iova = iova.cast<uint64_t>();
                 }
                 if (!fd.is_none()) {
                     in.comp_mask |= IBV_REG_MR_MASK_FD | IBV_REG_MR_MASK_FD_OFFSET;
                     in.fd = fd.cast<int>();
                     in.fd_offset = fd_offset;
                 }
                 if (handle) {
                     in.comp_mask |= IBV_REG_MR_MASK_DMAH;
                     in.dmah = handle->dmah;
                 }
                 mr->mr = ibv_reg_mr_ex(pd.pd, &in);
                 if (!mr->mr) {
                     int e = errno;
                     free_buffer(*mr);
                     raise_rdma("Failed to register MR using extended API", e);
                 }
                 mr->length = mr->mr->length;
                 mr->pd = pd_obj;
                 mr->adopt(pd_obj, pd);
                 if (handle) {
                     mr->dmah = dmah;
                     mr->depend_on(dmah, *handle);
                 }
                 return mr;
             }),
             py::arg("pd"), py::arg("length") = 0, py::arg("access") = 0, py::arg("address") = py::none(),
             py::arg("iova") = py::none(), py::arg("fd") = py::none(), py::arg("fd_offset") = 0,
             py::arg("dmah") = py::none(), py::arg("implicit") = false)
        .def("__str__", [](py::handle self) { return mr_str("MREx:\n", open_arg<MREx>(self, "MREx")); });

    py::class_<Buf, CM, std::shared_ptr<Buf>>(m, "Buf")
        .def(py::init([](py::object pd_obj, size_t size) {
                 PD& pd = open_arg<PD>(pd_obj, "PD");
                 auto b = std::make_shared<Buf>();
                 b->addr = ibv_alloc_buf(pd.pd, size, &b->bufh);
                 if (!b->addr) {
                     int e = errno;
                     b->bufh = nullptr;
                     raise_saved_errno(e, "Failed to allocate ibv_buf of size " + std::to_string(size));
                 }
                 b->size = size;
                 b->pd = pd_obj;
                 b->adopt(pd_obj, pd);
                 return b;
             }),
             py::arg("pd"), py::arg("size"))
        .def_property_readonly(
            "buf", [](py::handle self) { return reinterpret_cast<uintptr_t>(open_arg<Buf>(self, "Buf").addr); })
        .def_property_readonly("size", [](py::handle self) { return open_arg<Buf>(self, "Buf").size; })
        .def("export_dmabuf_fd",
             [](py::handle self) {
                 int fd = ibv_export_buf_dmabuf_fd(open_arg<Buf>(self, "Buf").bufh);
                 if (fd < 0)
                     raise_rdma_errno("Failed to export dmabuf FD for Buf");
                 return fd;
             })
        .def("__str__", [](py::handle self) {
            Buf& b = open_arg<Buf>(self, "Buf");
            return "Buf:\n" + str_line("addr", (unsigned long long)(uintptr_t)b.addr) + str_line("size", b.size);
        });

    py::class_<BufMR, MR, std::shared_ptr<BufMR>>(m, "BufMR")
        .def(py::init([](py::object pd_obj, py::object buf_obj, size_t length, int access, size_t offset) {
                 PD& pd = open_arg<PD>(pd_obj, "PD");
                 Buf& buf = open_arg<Buf>(buf_obj, "Buf");
                 void* addr = static_cast<char*>(buf.addr) + offset;
                 auto mr = std::make_shared<BufMR>();
                 mr->mr = ibv_reg_buf_mr(pd.pd, buf.bufh, addr, length, access);
                 if (!mr->mr) {
                     int e = errno;
                     raise_saved_errno(e, reg_failed("Failed to register a buf MR", length, access));
                 }
                 mr->dereg_error = "Failed to dereg buf MR";
                 mr->buf = addr;
                 mr->length = length;
                 mr->pd = pd_obj;
                 mr->cocobuf = buf_obj;
                 mr->adopt(pd_obj, pd);
                 mr->depend_on(buf_obj, buf);
                 return mr;
             }),
             py::arg("pd"), py::arg("buf"), py::arg("length") = 0, py::arg("access") = 0, py::arg("offset") = 0)
        .def("rereg", [](py::handle, py::args, py::kwargs) {
            raise_user("rereg is not supported for a buffer MR; its memory is owned by the Buf");
        });

    m.def("mwtype2str", &mwtype2str, py::arg("mw_type"));
    m.def(
        "rereg_error_to_str", [](int e) { return py::module_::import("pyverbs.utils").attr("rereg_error_to_str")(e); },
        py::arg("error"));

    // (after the subclasses, whose own read/write pybind11 would otherwise
    // refuse to define over a method it did not make)
    add_fast_method(m.attr("MR"), "write", mr_write, "Writes `length` bytes of data at `offset` of the MR's buffer");
    add_fast_method(m.attr("MR"), "read", mr_read, "The `length` bytes at `offset` of the MR's buffer");
}
