// pyverbs.srq: shared receive queues.
#include "objects.h"

using namespace pyverbs;

namespace {

struct SrqAttr : Object {
    ibv_srq_attr attr{};
};
struct SrqInitAttr : Object {
    ibv_srq_init_attr attr{};
};

SRQ& srq_of(py::handle h) { return open_arg<SRQ>(h, "SRQ"); }

}  // namespace

PYBIND11_MODULE(srq, m) {
    import_deps({"pyverbs.base", "pyverbs.pd", "pyverbs.wr"});
    m.doc() = "Shared receive queues";

    py::class_<SrqAttr, Object, std::shared_ptr<SrqAttr>>(m, "SrqAttr")
        .def(py::init([](uint32_t max_wr, uint32_t max_sge, uint32_t srq_limit) {
                 auto a = std::make_shared<SrqAttr>();
                 a->attr = {max_wr, max_sge, srq_limit};
                 return a;
             }),
             py::arg("max_wr") = 100, py::arg("max_sge") = 1, py::arg("srq_limit") = 0)
        .def_property(
            "max_wr", [](const SrqAttr& a) { return a.attr.max_wr; }, [](SrqAttr& a, uint32_t v) { a.attr.max_wr = v; })
        .def_property(
            "max_sge", [](const SrqAttr& a) { return a.attr.max_sge; },
            [](SrqAttr& a, uint32_t v) { a.attr.max_sge = v; })
        .def_property(
            "srq_limit", [](const SrqAttr& a) { return a.attr.srq_limit; },
            [](SrqAttr& a, uint32_t v) { a.attr.srq_limit = v; });

    py::class_<SrqInitAttr, Object, std::shared_ptr<SrqInitAttr>>(m, "SrqInitAttr")
        .def(py::init([](py::object attr) {
                 auto a = std::make_shared<SrqInitAttr>();
                 a->attr.attr = attr.is_none() ? ibv_srq_attr{100, 1, 0} : arg_as<SrqAttr>(attr, "SrqAttr").attr;
                 return a;
             }),
             py::arg("attr") = py::none())
        .def_property_readonly("max_wr", [](const SrqInitAttr& a) { return a.attr.attr.max_wr; })
        .def_property_readonly("max_sge", [](const SrqInitAttr& a) { return a.attr.attr.max_sge; })
        .def_property_readonly("srq_limit", [](const SrqInitAttr& a) { return a.attr.attr.srq_limit; });

    py::class_<SRQ, CM, std::shared_ptr<SRQ>>(m, "SRQ")
        .def(py::init([](py::object creator, py::object attr) {
                 PD& pd = open_arg<PD>(creator, "PD");
                 ibv_srq_init_attr ia = arg_as<SrqInitAttr>(attr, "SrqInitAttr").attr;
                 auto s = std::make_shared<SRQ>();
                 s->srq = ibv_create_srq(pd.pd, &ia);
                 if (!s->srq)
                     raise_rdma_errno("Failed to create SRQ");
                 s->pd = creator;
                 s->adopt(creator, pd);
                 return s;
             }),
             py::arg("creator"), py::arg("attr"))
        .def(
            "post_recv",
            [](py::handle self, py::object wr, py::object bad_wr) {
                ibv_recv_wr* bad = nullptr;
                if (int rc = ibv_post_srq_recv(srq_of(self).srq, link_chain(arg_as<RecvWR>(wr, "RecvWR")), &bad)) {
                    if (bad && !bad_wr.is_none())
                        arg_as<RecvWR>(bad_wr, "RecvWR").wr.wr_id = bad->wr_id;
                    raise_rdma("Failed to post receive to SRQ", rc);
                }
            },
            py::arg("wr"), py::arg("bad_wr") = py::none())
        .def("query",
             [](py::handle self) {
                 auto a = std::make_shared<SrqAttr>();
                 if (int rc = ibv_query_srq(srq_of(self).srq, &a->attr))
                     raise_rdma("Failed to query SRQ", rc);
                 return a;
             })
        .def(
            "modify",
            [](py::handle self, const SrqAttr& a, int comp_mask) {
                ibv_srq_attr attr = a.attr;
                if (int rc = ibv_modify_srq(srq_of(self).srq, &attr, comp_mask))
                    raise_rdma("Failed to modify SRQ", rc);
            },
            py::arg("attr"), py::arg("comp_mask"))
        .def("get_srq_num", [](py::handle self) {
            uint32_t num = 0;
            if (int rc = ibv_get_srq_num(srq_of(self).srq, &num))
                raise_rdma("Failed to retrieve SRQ number", rc);
            return num;
        });
}
