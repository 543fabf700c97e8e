// pyverbs.comp_cntr: completion counters, which count the completions (and
// the errors) of the QPs attached to them.
#include "comp_cntr.h"

using namespace pyverbs;

namespace {

CompCntr& cntr_of(py::handle h) { return open_arg<CompCntr>(h, "CompCntr"); }

// set/set_err/inc/inc_err: one C call each, its errno raised.
template <int (*Fn)(ibv_comp_cntr*, uint64_t)>
void modify(py::handle self, uint64_t value, const char* what) {
    if (int rc = Fn(cntr_of(self).cntr, value))
        raise_rdma(std::string("Failed to ") + what + " comp_cntr", rc);
}

template <int (*Fn)(ibv_comp_cntr*, uint64_t*)>
uint64_t read(py::handle self, const char* what) {
    uint64_t value = 0;
    if (int rc = Fn(cntr_of(self).cntr, &value))
        raise_rdma(std::string("Failed to ") + what + " comp_cntr", rc);
    return value;
}

}  // namespace

PYBIND11_MODULE(comp_cntr, m) {
    import_deps({"pyverbs.base", "pyverbs.device", "pyverbs.qp"});
    m.doc() = "Completion counters";

    py::class_<CompCntrInitAttr, Object, std::shared_ptr<CompCntrInitAttr>>(m, "CompCntrInitAttr")
        .def(py::init([](uint32_t comp_mask, int cntr_type, uint32_t flags) {
                 auto a = std::make_shared<CompCntrInitAttr>();
                 a->attr.comp_mask = comp_mask;
                 a->attr.type = ibv_comp_cntr_type(cntr_type);
                 a->attr.flags = flags;
                 return a;
             }),
             py::arg("comp_mask") = 0, py::arg("cntr_type") = 0, py::arg("flags") = 0)
        .def_property_readonly("comp_mask", [](const CompCntrInitAttr& a) { return a.attr.comp_mask; })
        .def_property_readonly("cntr_type", [](const CompCntrInitAttr& a) { return int(a.attr.type); })
        .def_property_readonly("flags", [](const CompCntrInitAttr& a) { return a.attr.flags; });

    py::class_<CompCntr, CM, std::shared_ptr<CompCntr>>(m, "CompCntr")
        .def(py::init([](py::object ctx_obj, py::object attr_obj) {
                 Context& ctx = open_arg<Context>(ctx_obj, "Context");
                 ibv_comp_cntr_init_attr attr = arg_as<CompCntrInitAttr>(attr_obj, "CompCntrInitAttr").attr;
                 auto c = std::make_shared<CompCntr>();
                 errno = 0;
                 c->cntr = ibv_create_comp_cntr(ctx.ctx, &attr);
                 if (!c->cntr)
                     raise_rdma_errno("Failed to create comp_cntr");
                 c->context = ctx_obj;
                 c->adopt(ctx_obj, ctx);
                 return c;
             }),
             py::arg("ctx"), py::arg("attr"))
        .def(
            "set", [](py::handle self, uint64_t value) { modify<ibv_set_comp_cntr>(self, value, "set"); },
            py::arg("value"))
        .def(
            "set_err", [](py::handle self, uint64_t value) { modify<ibv_set_err_comp_cntr>(self, value, "set_err"); },
            py::arg("value"))
        .def(
            "inc", [](py::handle self, uint64_t amount) { modify<ibv_inc_comp_cntr>(self, amount, "inc"); },
            py::arg("amount"))
        .def(
            "inc_err", [](py::handle self, uint64_t amount) { modify<ibv_inc_err_comp_cntr>(self, amount, "inc_err"); },
            py::arg("amount"))
        .def("read", [](py::handle self) { return read<ibv_read_comp_cntr>(self, "read"); })
        .def("read_err", [](py::handle self) { return read<ibv_read_err_comp_cntr>(self, "read_err"); });

    // The attach attribute is pyverbs.qp's class, under this module's name
    // too.
    m.attr("QPAttachCompCntrAttr") = py::module_::import("pyverbs.qp").attr("QPAttachCompCntrAttr");
}
