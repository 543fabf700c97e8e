// pyverbs.srq: shared receive queues.
#include "objects.h"
#include "xrcd.h"

#include <vector>

using namespace pyverbs;

namespace {

struct SrqAttr : Object {
    ibv_srq_attr attr{};
};
struct SrqInitAttr : Object {
    ibv_srq_init_attr attr{};
};

struct SrqInitAttrEx : Object {
    ibv_srq_init_attr_ex attr{};
    py::object pd, xrcd, cq;
};

// A tag-matching list operation; its SGEs and the next operation are kept.
struct OpsWr : CM {
    ibv_ops_wr wr{};
    std::vector<ibv_sge> sges;
    py::object next;
};

SRQ& srq_of(py::handle h) { return open_arg<SRQ>(h, "SRQ"); }

// The C chain of an OpsWr list (the Python objects own the memory).
ibv_ops_wr* link_ops(OpsWr& head) {
    OpsWr* cur = &head;
    for (;;) {
        cur->wr.tm.add.sg_list = cur->sges.empty() ? nullptr : cur->sges.data();
        cur->wr.tm.add.num_sge = int(cur->sges.size());
        if (!cur->next || cur->next.is_none()) {
            cur->wr.next = nullptr;
            return &head.wr;
        }
        OpsWr& nxt = arg_as<OpsWr>(cur->next, "OpsWr");
        cur->wr.next = &nxt.wr;
        cur = &nxt;
    }
}

}  // namespace

PYBIND11_MODULE(srq, m) {
    import_deps({"pyverbs.base", "pyverbs.pd", "pyverbs.wr", "pyverbs.xrcd"});
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
                 if (!attr.is_none())
                     a->attr.attr = arg_as<SrqAttr>(attr, "SrqAttr").attr;
                 return a;
             }),
             py::arg("attr") = py::none())
        .def_property_readonly("max_wr", [](const SrqInitAttr& a) { return a.attr.attr.max_wr; })
        .def_property_readonly("max_sge", [](const SrqInitAttr& a) { return a.attr.attr.max_sge; })
        .def_property_readonly("srq_limit", [](const SrqInitAttr& a) { return a.attr.attr.srq_limit; });

    py::class_<SRQ, CM, std::shared_ptr<SRQ>>(m, "SRQ")
        .def(py::init([](py::object creator, py::object attr) {
                 auto s = std::make_shared<SRQ>();
                 if (py::isinstance<PD>(creator)) {
                     PD& pd = open_arg<PD>(creator, "PD");
                     SrqInitAttr& a = arg_as<SrqInitAttr>(attr, "SrqInitAttr");
                     ibv_srq_init_attr ia = a.attr;
                     s->srq = ibv_create_srq(pd.pd, &ia);
                     if (!s->srq)
                         raise_rdma_errno("Failed to create SRQ (errno is " + std::to_string(errno) + ")");
                     a.attr.attr = ia.attr;  // what the device granted
                     s->pd = creator;
                     s->adopt(creator, pd);
                 } else if (py::isinstance<Context>(creator)) {
                     Context& ctx = open_arg<Context>(creator, "Context");
                     SrqInitAttrEx& a = arg_as<SrqInitAttrEx>(attr, "SrqInitAttrEx");
                     if (a.pd && !a.pd.is_none())
                         a.attr.pd = open_arg<PD>(a.pd, "PD").pd;
                     if (a.cq && !a.cq.is_none())
                         a.attr.cq = any_cq(a.cq);
                     if (a.xrcd && !a.xrcd.is_none())
                         a.attr.xrcd = open_arg<XRCD>(a.xrcd, "XRCD").xrcd;
                     ibv_srq_init_attr_ex ia = a.attr;
                     s->srq = ibv_create_srq_ex(ctx.ctx, &ia);
                     if (!s->srq)
                         raise_rdma_errno("Failed to create SRQ (errno is " + std::to_string(errno) + ")");
                     a.attr.attr = ia.attr;
                     s->adopt(creator, ctx);
                     for (py::object* dep : {&a.pd, &a.cq, &a.xrcd})
                         if (*dep && !dep->is_none())
                             s->depend_on(*dep, dep->cast<CM&>());
                     s->pd = a.pd;
                 } else {
                     raise_rdma("Srq needs either Context or PD for creation", -1);
                 }
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
                    raise_rdma("Failed to post receive to SRQ.", rc);
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
        .def(
            "post_srq_ops",
            [](py::handle self, py::object wr, py::object bad_wr) {
                ibv_ops_wr* bad = nullptr;
                if (int rc = ibv_post_srq_ops(srq_of(self).srq, link_ops(arg_as<OpsWr>(wr, "OpsWr")), &bad)) {
                    if (bad && !bad_wr.is_none())
                        arg_as<OpsWr>(bad_wr, "OpsWr").wr.wr_id = bad->wr_id;
                    raise_rdma("post SRQ ops failed.", rc);
                }
            },
            py::arg("wr"), py::arg("bad_wr") = py::none())
        .def("get_srq_num", [](py::handle self) {
            uint32_t num = 0;
            if (int rc = ibv_get_srq_num(srq_of(self).srq, &num))
                raise_rdma("Failed to retrieve SRQ number", rc);
            return num;
        });

    py::class_<SrqInitAttrEx, Object, std::shared_ptr<SrqInitAttrEx>>(m, "SrqInitAttrEx")
        .def(py::init([](uint32_t max_wr, uint32_t max_sge, uint32_t srq_limit) {
                 auto a = std::make_shared<SrqInitAttrEx>();
                 a->attr.attr = {max_wr, max_sge, srq_limit};
                 return a;
             }),
             py::arg("max_wr") = 100, py::arg("max_sge") = 1, py::arg("srq_limit") = 0)
        .def_property_readonly("max_wr", [](const SrqInitAttrEx& a) { return a.attr.attr.max_wr; })
        .def_property_readonly("max_sge", [](const SrqInitAttrEx& a) { return a.attr.attr.max_sge; })
        .def_property_readonly("srq_limit", [](const SrqInitAttrEx& a) { return a.attr.attr.srq_limit; })
        .def_property(
            "comp_mask", [](const SrqInitAttrEx& a) { return a.attr.comp_mask; },
            [](SrqInitAttrEx& a, uint32_t v) { a.attr.comp_mask = v; })
        .def_property(
            "srq_type", [](const SrqInitAttrEx& a) { return int(a.attr.srq_type); },
            [](SrqInitAttrEx& a, int v) { a.attr.srq_type = ibv_srq_type(v); })
        .def_property(
            "pd", [](const SrqInitAttrEx& a) { return a.pd; },
            [](SrqInitAttrEx& a, py::object pd) {
                a.attr.pd = open_arg<PD>(pd, "PD").pd;
                a.pd = pd;
            })
        .def_property(
            "xrcd", [](const SrqInitAttrEx& a) { return a.xrcd; },
            [](SrqInitAttrEx& a, py::object xrcd) {
                a.attr.xrcd = open_arg<XRCD>(xrcd, "XRCD").xrcd;
                a.xrcd = xrcd;
            })
        .def_property(
            "cq", [](const SrqInitAttrEx& a) { return a.cq; },
            [](SrqInitAttrEx& a, py::object cq) {
                a.attr.cq = any_cq(cq);
                a.cq = cq;
            })
        .def_property(
            "max_num_tags", [](const SrqInitAttrEx& a) { return a.attr.tm_cap.max_num_tags; },
            [](SrqInitAttrEx& a, uint32_t v) { a.attr.tm_cap.max_num_tags = v; })
        .def_property(
            "max_ops", [](const SrqInitAttrEx& a) { return a.attr.tm_cap.max_ops; },
            [](SrqInitAttrEx& a, uint32_t v) { a.attr.tm_cap.max_ops = v; });

    py::class_<OpsWr, CM, std::shared_ptr<OpsWr>>(m, "OpsWr")
        .def(py::init([](uint64_t wr_id, int opcode, int flags, py::object next_wr, uint32_t unexpected_cnt,
                         uint64_t recv_wr_id, py::object num_sge, uint64_t tag, uint64_t mask, py::object sg_list) {
                 auto w = std::make_shared<OpsWr>();
                 w->wr.wr_id = wr_id;
                 w->wr.opcode = ibv_ops_wr_opcode(opcode);
                 w->wr.flags = flags;
                 if (!next_wr.is_none())
                     arg_as<OpsWr>(next_wr, "OpsWr");
                 w->next = next_wr;
                 w->wr.tm.unexpected_cnt = unexpected_cnt;
                 w->wr.tm.add.recv_wr_id = recv_wr_id;
                 w->wr.tm.add.tag = tag;
                 w->wr.tm.add.mask = mask;
                 if (!sg_list.is_none()) {
                     py::sequence seq = sg_list.cast<py::sequence>();
                     size_t n = num_sge.is_none() ? seq.size() : num_sge.cast<size_t>();
                     if (n > seq.size())
                         raise_user("num_sge is larger than sg_list");
                     for (size_t i = 0; i < n; i++)
                         w->sges.push_back(arg_as<SGE>(seq[i], "SGE").sge);
                 }
                 return w;
             }),
             py::arg("wr_id") = 0, py::arg("opcode") = int(IBV_WR_TAG_ADD), py::arg("flags") = int(IBV_OPS_SIGNALED),
             py::arg("next_wr") = py::none(), py::arg("unexpected_cnt") = 0, py::arg("recv_wr_id") = 0,
             py::arg("num_sge") = py::none(), py::arg("tag") = 0, py::arg("mask") = 0, py::arg("sg_list") = py::none())
        .def_property(
            "wr_id", [](const OpsWr& w) { return w.wr.wr_id; }, [](OpsWr& w, uint64_t v) { w.wr.wr_id = v; })
        .def_property(
            "next_wr", [](const OpsWr& w) { return w.next; },
            [](OpsWr& w, py::object n) {
                if (!n.is_none())
                    arg_as<OpsWr>(n, "OpsWr");
                w.next = n;
            })
        .def_property(
            "opcode", [](const OpsWr& w) { return int(w.wr.opcode); },
            [](OpsWr& w, int v) { w.wr.opcode = ibv_ops_wr_opcode(v); })
        .def_property(
            "flags", [](const OpsWr& w) { return w.wr.flags; }, [](OpsWr& w, int v) { w.wr.flags = v; })
        .def_property(
            "unexpected_cnt", [](const OpsWr& w) { return w.wr.tm.unexpected_cnt; },
            [](OpsWr& w, uint32_t v) { w.wr.tm.unexpected_cnt = v; })
        .def_property(
            "recv_wr_id", [](const OpsWr& w) { return w.wr.tm.add.recv_wr_id; },
            [](OpsWr& w, uint64_t v) { w.wr.tm.add.recv_wr_id = v; })
        .def_property(
            "tag", [](const OpsWr& w) { return w.wr.tm.add.tag; }, [](OpsWr& w, uint64_t v) { w.wr.tm.add.tag = v; })
        .def_property(
            "handle", [](const OpsWr& w) { return w.wr.tm.handle; }, [](OpsWr& w, uint32_t v) { w.wr.tm.handle = v; })
        .def_property(
            "mask", [](const OpsWr& w) { return w.wr.tm.add.mask; },
            [](OpsWr& w, uint64_t v) { w.wr.tm.add.mask = v; });
}
