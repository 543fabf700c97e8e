// pyverbs.flow: steering flows, rules that deliver the packets matching
// their specs (pyverbs.spec) to a QP.
#include "flow.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace pyverbs;

#define ATTR_FIELD(name, field, type)                                    \
    def_property(                                                        \
        name, [](const FlowAttr& a) { return (long long)a.attr.field; }, \
        [](FlowAttr& a, type v) { a.attr.field = decltype(a.attr.field)(v); })

PYBIND11_MODULE(flow, m) {
    import_deps({"pyverbs.base", "pyverbs.qp", "pyverbs.spec"});
    m.doc() = "Steering flows";

    py::class_<FlowAttr, Object, std::shared_ptr<FlowAttr>>(m, "FlowAttr")
        .def(py::init([](uint8_t num_of_specs, int flow_type, uint16_t priority, uint8_t port, uint32_t flags) {
                 auto a = std::make_shared<FlowAttr>();
                 a->attr.type = ibv_flow_attr_type(flow_type);
                 a->attr.size = sizeof(ibv_flow_attr);
                 a->attr.priority = priority;
                 a->attr.num_of_specs = num_of_specs;
                 a->attr.port = port;
                 a->attr.flags = flags;
                 return a;
             }),
             py::arg("num_of_specs") = 0, py::arg("flow_type") = int(IBV_FLOW_ATTR_NORMAL), py::arg("priority") = 0,
             py::arg("port") = 1, py::arg("flags") = 0)
        .ATTR_FIELD("type", type, int)
        .ATTR_FIELD("priority", priority, uint16_t)
        .ATTR_FIELD("num_of_specs", num_of_specs, uint8_t)
        .ATTR_FIELD("port", port, uint8_t)
        .ATTR_FIELD("flags", flags, uint32_t)
        .def_property_readonly("specs", [](const FlowAttr& a) { return a.specs; });

    py::class_<Flow, CM, std::shared_ptr<Flow>>(m, "Flow").def(
        py::init([](py::object qp, py::object flow_attr) {
            FlowAttr& fa = arg_as<FlowAttr>(flow_attr, "FlowAttr");
            QP& q = open_arg<QP>(qp, "QP");
            if (fa.attr.num_of_specs != py::len(fa.specs))
                py::module_::import("logging").attr("getLogger")("Flow").attr("warning")(
                    "The number of appended specs (" + std::to_string(py::len(fa.specs)) +
                    ") is not equal to the number of declared specs (" + std::to_string(fa.attr.num_of_specs) + ")");
            // The attribute, then each spec's C struct after it.
            size_t total = sizeof(ibv_flow_attr);
            std::vector<size_t> sizes;
            for (py::handle spec : fa.specs) {
                sizes.push_back(spec.attr("size").cast<size_t>());
                total += sizes.back();
            }
            // (8-byte aligned storage, zeroed: the specs' padding too)
            std::vector<uint64_t> buf((total + 7) / 8, 0);
            char* dst = reinterpret_cast<char*>(buf.data());
            std::memcpy(dst, &fa.attr, sizeof(ibv_flow_attr));
            // (the provider never reads past the specs there are)
            if (fa.attr.num_of_specs > sizes.size())
                reinterpret_cast<ibv_flow_attr*>(dst)->num_of_specs = uint8_t(sizes.size());
            dst += sizeof(ibv_flow_attr);
            size_t i = 0;
            for (py::handle spec : fa.specs) {
                spec.attr("_copy_data")(reinterpret_cast<uintptr_t>(dst));
                dst += sizes[i++];
            }
            q.check_open("QP");  // (a spec's code could have closed it)
            auto f = std::make_shared<Flow>();
            errno = 0;
            f->flow = ibv_create_flow(q.qp, reinterpret_cast<ibv_flow_attr*>(buf.data()));
            if (!f->flow)
                raise_rdma_errno("Flow creation failed");
            f->qp = qp;
            f->adopt(qp, q);
            return f;
        }),
        py::arg("qp"), py::arg("flow_attr"));

    py::class_<FlowAction, Object, std::shared_ptr<FlowAction>>(m, "FlowAction").def(py::init<>());
}
