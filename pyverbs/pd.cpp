// pyverbs.pd: protection domains.
#include "objects.h"

using namespace pyverbs;

namespace {

std::shared_ptr<PD> make_pd(py::object creator, py::kwargs kw) {
    Context& ctx = open_arg<Context>(creator, "Context");
    auto pd = std::make_shared<PD>();
    if (kw.contains("handle") && !kw["handle"].is_none()) {
        uint32_t handle = kw["handle"].cast<uint32_t>();
        pd->pd = ibv_import_pd(ctx.ctx, handle);
        if (!pd->pd)
            raise_rdma_errno("Failed to import PD");
        pd->imported = true;
    } else {
        pd->pd = ibv_alloc_pd(ctx.ctx);
        if (!pd->pd)
            raise_rdma_errno("Failed to allocate PD");
    }
    pd->context = creator;
    pd->adopt(creator, ctx);
    return pd;
}

}  // namespace

PYBIND11_MODULE(pd, m) {
    import_deps({"pyverbs.base", "pyverbs.device"});
    m.doc() = "Protection domains";

    py::class_<PD, CM, std::shared_ptr<PD>>(m, "PD")
        .def(py::init(&make_pd), py::arg("creator"))
        .def_property_readonly("handle", [](py::handle self) { return open_arg<PD>(self, "PD").pd->handle; })
        .def_property_readonly("ctx", [](const PD& p) { return p.context; })
        .def("unimport", [](PD& p) { p.close(); });
}
