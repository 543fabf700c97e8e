// pyverbs.xrcd: XRC domains, shared by the XRC QPs and SRQs opened in them.
#include "xrcd.h"

using namespace pyverbs;

PYBIND11_MODULE(xrcd, m) {
    import_deps({"pyverbs.base", "pyverbs.device"});
    m.doc() = "XRC domains";

    py::class_<XRCDInitAttr, Object, std::shared_ptr<XRCDInitAttr>>(m, "XRCDInitAttr")
        .def(py::init([](uint32_t comp_mask, int oflags, int fd) {
                 auto a = std::make_shared<XRCDInitAttr>();
                 a->attr.comp_mask = comp_mask;
                 a->attr.oflags = oflags;
                 a->attr.fd = fd;
                 return a;
             }),
             py::arg("comp_mask"), py::arg("oflags"), py::arg("fd"))
        .def_property(
            "fd", [](const XRCDInitAttr& a) { return a.attr.fd; }, [](XRCDInitAttr& a, int v) { a.attr.fd = v; })
        .def_property(
            "comp_mask", [](const XRCDInitAttr& a) { return a.attr.comp_mask; },
            [](XRCDInitAttr& a, uint32_t v) { a.attr.comp_mask = v; })
        .def_property(
            "oflags", [](const XRCDInitAttr& a) { return a.attr.oflags; },
            [](XRCDInitAttr& a, int v) { a.attr.oflags = v; });

    py::class_<XRCD, CM, std::shared_ptr<XRCD>>(m, "XRCD").def(
        py::init([](py::object context, py::object init_attr) {
            Context& ctx = open_arg<Context>(context, "Context");
            ibv_xrcd_init_attr attr = arg_as<XRCDInitAttr>(init_attr, "XRCDInitAttr").attr;
            auto x = std::make_shared<XRCD>();
            errno = 0;
            x->xrcd = ibv_open_xrcd(ctx.ctx, &attr);
            if (!x->xrcd)
                raise_rdma_errno("Failed to allocate XRCD");
            x->context = context;
            x->adopt(context, ctx);
            return x;
        }),
        py::arg("context"), py::arg("init_attr"));
}
