// pyverbs.mr: memory regions over a buffer pyverbs allocates (or the
// caller's address), and memory windows.
#include "objects.h"

#include <sys/mman.h>
#include <unistd.h>

using namespace pyverbs;

namespace {

constexpr size_t kHugePageSize = 2 * 1024 * 1024;

class MR : public CM {
public:
    ~MR() override { close_quietly(); }
    ibv_mr* mr = nullptr;
    void* buf = nullptr;  // what read/write use
    void* owned = nullptr;  // the allocation this object frees
    size_t owned_len = 0;
    bool mmapped = false;
    bool imported = false;
    size_t length = 0;
    py::object pd;

    void check_range(size_t len, size_t off, const char* op) const {
        if (!buf)
            raise_user(std::string("Cannot ") + op + " an MR without a buffer");
        if (off > length || len > length - off)
            raise_user(std::string("Attempted to ") + op + " " + std::to_string(len) + " bytes at offset " +
                       std::to_string(off) + " of an MR of " + std::to_string(length) + " bytes");
    }

protected:
    void release() override {
        if (mr) {
            ibv_mr* r = mr;
            mr = nullptr;
            if (imported) {
                ibv_unimport_mr(r);
            } else if (int rc = ibv_dereg_mr(r)) {
                mr = r;
                raise_rdma("Failed to dereg MR", rc);
            }
        }
        if (owned) {
            if (mmapped)
                munmap(owned, owned_len);
            else
                free(owned);
            owned = nullptr;
        }
        buf = nullptr;
    }
};

std::shared_ptr<MR> make_mr(py::object creator, size_t length, int access, py::object address, bool implicit,
                            py::kwargs kw) {
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
        if (!address.is_none()) {
            mr->buf = reinterpret_cast<void*>(address.cast<uintptr_t>());
        } else if (access & IBV_ACCESS_HUGETLB) {
            size_t len = (length + kHugePageSize - 1) / kHugePageSize * kHugePageSize;
            void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
            if (p == MAP_FAILED)
                raise_rdma_errno("Failed to allocate MR buffer of size " + std::to_string(length));
            mr->owned = mr->buf = p;
            mr->owned_len = len;
            mr->mmapped = true;
        } else {
            // Page-aligned, as registrations of whole pages are what devices map.
            long page = sysconf(_SC_PAGESIZE);
            if (posix_memalign(&mr->owned, page, length ? length : 1))
                raise_rdma("Failed to allocate MR buffer of size " + std::to_string(length), ENOMEM);
            mr->buf = mr->owned;
            memset(mr->buf, 0, length);
        }
        mr->mr = ibv_reg_mr(pd.pd, mr->buf, length, access);
        if (!mr->mr) {
            int e = errno;
            if (mr->owned && !mr->mmapped)
                free(mr->owned);
            else if (mr->owned)
                munmap(mr->owned, mr->owned_len);
            mr->owned = nullptr;
            raise_rdma("Failed to register a MR. length: " + std::to_string(length) +
                           ", access flags: " + std::to_string(access),
                       e);
        }
    }
    mr->pd = creator;
    mr->adopt(creator, pd);
    return mr;
}

class MW : public CM {
public:
    ~MW() override { close_quietly(); }
    ibv_mw* mw = nullptr;
    py::object pd;

protected:
    void release() override {
        if (!mw)
            return;
        ibv_mw* w = mw;
        mw = nullptr;
        if (int rc = ibv_dealloc_mw(w)) {
            mw = w;
            raise_rdma("Failed to dealloc MW", rc);
        }
    }
};

std::string mwtype2str(int t) {
    return t == IBV_MW_TYPE_1 ? "IBV_MW_TYPE_1"
        : t == IBV_MW_TYPE_2  ? "IBV_MW_TYPE_2"
                              : "Unknown MW type (" + std::to_string(t) + ")";
}

MR& mr_of(py::handle h) { return open_arg<MR>(h, "MR"); }

}  // namespace

PYBIND11_MODULE(mr, m) {
    import_deps({"pyverbs.base", "pyverbs.pd"});
    m.doc() = "Memory regions and memory windows";
    m.attr("HUGE_PAGE_SIZE") = kHugePageSize;

    py::class_<MR, CM, std::shared_ptr<MR>>(m, "MR")
        .def(py::init(&make_mr), py::arg("creator"), py::arg("length"), py::arg("access"),
             py::arg("address") = py::none(), py::arg("implicit") = false)
        .def(
            "write",
            [](py::handle self, py::object data, size_t length, size_t offset) {
                MR& mr = mr_of(self);
                std::string bytes =
                    py::isinstance<py::str>(data) ? data.cast<std::string>() : std::string(data.cast<py::bytes>());
                mr.check_range(length, offset, "write");
                memcpy(static_cast<char*>(mr.buf) + offset, bytes.data(), std::min(length, bytes.size()));
            },
            py::arg("data"), py::arg("length"), py::arg("offset") = 0)
        .def(
            "read",
            [](py::handle self, size_t length, size_t offset) {
                MR& mr = mr_of(self);
                mr.check_range(length, offset, "read");
                return py::bytes(static_cast<const char*>(mr.buf) + offset, length);
            },
            py::arg("length"), py::arg("offset"))
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
        .def("__str__", [](py::handle self) {
            MR& mr = mr_of(self);
            return "MR:\n" + str_line("lkey", mr.mr->lkey) + str_line("rkey", mr.mr->rkey) +
                str_line("length", mr.mr->length) + str_line("buf", (unsigned long long)(uintptr_t)mr.buf) +
                str_line("handle", mr.mr->handle);
        });

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

    m.def("mwtype2str", &mwtype2str, py::arg("mw_type"));
    m.def(
        "rereg_error_to_str", [](int e) { return py::module_::import("pyverbs.utils").attr("rereg_error_to_str")(e); },
        py::arg("error"));
}
