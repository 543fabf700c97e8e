// pyverbs.wr: scatter/gather elements and send/receive work requests.
#include "objects.h"

#include <pybind11/stl.h>

using namespace pyverbs;

namespace {

// The SGE array of a work request: copies of the first num_sge entries of sg
// (later changes to those SGE objects do not reach the work request).
std::vector<ibv_sge> sge_list(int num_sge, const py::object& sg, bool required = true) {
    std::vector<ibv_sge> v;
    if (sg.is_none() || num_sge < 1) {
        if (required)
            raise_user("A WR needs at least one SGE");
        return v;
    }
    py::sequence seq = sg.cast<py::sequence>();
    if (size_t(num_sge) > seq.size())
        raise_user("num_sge is " + std::to_string(num_sge) + " but sg holds " + std::to_string(seq.size()) +
                   " elements");
    for (int i = 0; i < num_sge; i++)
        v.push_back(arg_as<SGE>(seq[i], "SGE").sge);
    return v;
}

std::string send_flags_str(unsigned flags) {
    static const std::pair<unsigned, const char*> names[] = {{IBV_SEND_FENCE, "IBV_SEND_FENCE"},
                                                             {IBV_SEND_SIGNALED, "IBV_SEND_SIGNALED"},
                                                             {IBV_SEND_SOLICITED, "IBV_SEND_SOLICITED"},
                                                             {IBV_SEND_INLINE, "IBV_SEND_INLINE"},
                                                             {IBV_SEND_IP_CSUM, "IBV_SEND_IP_CSUM"}};
    std::string out;
    for (auto& [bit, name] : names)
        if (flags & bit)
            out += std::string(name) + " ";
    return out;
}

template <class W>
void set_sg(W& w, py::object sg) {
    py::sequence seq = sg.cast<py::sequence>();
    w.sges = sge_list(int(seq.size()), sg, false);
    w.wr.num_sge = int(w.sges.size());
}

}  // namespace

PYBIND11_MODULE(wr, m) {
    import_deps({"pyverbs.base"});
    m.doc() = "Scatter/gather elements and work requests";

    py::class_<SGE, CM, std::shared_ptr<SGE>>(m, "SGE")
        .def(py::init([](uint64_t addr, uint32_t length, uint32_t lkey) {
                 auto s = std::make_shared<SGE>();
                 s->sge = {addr, length, lkey};
                 return s;
             }),
             py::arg("addr"), py::arg("length"), py::arg("lkey"))
        .def_property(
            "addr", [](const SGE& s) { return s.sge.addr; }, [](SGE& s, uint64_t v) { s.sge.addr = v; })
        .def_property(
            "length", [](const SGE& s) { return s.sge.length; }, [](SGE& s, uint32_t v) { s.sge.length = v; })
        .def_property(
            "lkey", [](const SGE& s) { return s.sge.lkey; }, [](SGE& s, uint32_t v) { s.sge.lkey = v; })
        // The bytes at the element's address (the caller vouches for it).
        .def(
            "read",
            [](const SGE& s, size_t length, size_t offset) {
                if (offset > s.sge.length || length > s.sge.length - offset)
                    raise_user("Reading past the SGE's length");
                return py::bytes(reinterpret_cast<const char*>(uintptr_t(s.sge.addr)) + offset, length);
            },
            py::arg("length"), py::arg("offset"))
        .def("__str__", [](const SGE& s) {
            return str_line("Address", hex_str(s.sge.addr)) + str_line("Length", s.sge.length) +
                str_line("Key", hex_str(s.sge.lkey));
        });

    py::class_<RecvWR, CM, std::shared_ptr<RecvWR>>(m, "RecvWR")
        .def(py::init([](uint64_t wr_id, int num_sge, py::object sg, py::object next_wr) {
                 auto w = std::make_shared<RecvWR>();
                 w->wr.wr_id = wr_id;
                 w->sges = sge_list(num_sge, sg);
                 w->wr.num_sge = int(w->sges.size());
                 if (!next_wr.is_none())
                     arg_as<RecvWR>(next_wr, "RecvWR");
                 w->next = next_wr;
                 return w;
             }),
             py::arg("wr_id") = 0, py::arg("num_sge") = 0, py::arg("sg") = py::none(), py::arg("next_wr") = py::none())
        .def_property(
            "wr_id", [](const RecvWR& w) { return w.wr.wr_id; }, [](RecvWR& w, uint64_t v) { w.wr.wr_id = v; })
        .def_property_readonly("num_sge", [](const RecvWR& w) { return w.wr.num_sge; })
        .def_property(
            "next_wr", [](const RecvWR& w) { return w.next; },
            [](RecvWR& w, py::object n) {
                if (!n.is_none())
                    arg_as<RecvWR>(n, "RecvWR");
                w.next = n;
            })
        .def("set_sg", &set_sg<RecvWR>, py::arg("sg"))
        .def("__str__", [](const RecvWR& w) {
            return str_line("WR ID", (unsigned long long)w.wr.wr_id) + str_line("Num SGE", w.wr.num_sge);
        });

    py::class_<SendWR, CM, std::shared_ptr<SendWR>>(m, "SendWR")
        .def(py::init([](uint64_t wr_id, int opcode, int num_sge, uint32_t imm_data, py::object sg, unsigned send_flags,
                         py::object next_wr) {
                 auto w = std::make_shared<SendWR>();
                 w->wr.wr_id = wr_id;
                 w->wr.opcode = ibv_wr_opcode(opcode);
                 // Only these operations carry no data.
                 bool dataless =
                     opcode == IBV_WR_LOCAL_INV || opcode == IBV_WR_BIND_MW || opcode == IBV_WR_SEND_WITH_INV;
                 w->sges = sge_list(num_sge, sg, !dataless);
                 w->wr.num_sge = int(w->sges.size());
                 w->wr.imm_data = imm_data;
                 w->wr.send_flags = send_flags;
                 if (!next_wr.is_none())
                     arg_as<SendWR>(next_wr, "SendWR");
                 w->next = next_wr;
                 return w;
             }),
             py::arg("wr_id") = 0, py::arg("opcode") = int(IBV_WR_SEND), py::arg("num_sge") = 0,
             py::arg("imm_data") = 0, py::arg("sg") = py::none(), py::arg("send_flags") = int(IBV_SEND_SIGNALED),
             py::arg("next_wr") = py::none())
        .def_property(
            "wr_id", [](const SendWR& w) { return w.wr.wr_id; }, [](SendWR& w, uint64_t v) { w.wr.wr_id = v; })
        .def_property_readonly("num_sge", [](const SendWR& w) { return w.wr.num_sge; })
        .def_property(
            "imm_data", [](const SendWR& w) { return w.wr.imm_data; }, [](SendWR& w, uint32_t v) { w.wr.imm_data = v; })
        .def_property(
            "opcode", [](const SendWR& w) { return int(w.wr.opcode); },
            [](SendWR& w, int v) { w.wr.opcode = ibv_wr_opcode(v); })
        .def_property(
            "send_flags", [](const SendWR& w) { return w.wr.send_flags; },
            [](SendWR& w, unsigned v) { w.wr.send_flags = v; })
        .def_property(
            "next_wr", [](const SendWR& w) { return w.next; },
            [](SendWR& w, py::object n) {
                if (!n.is_none())
                    arg_as<SendWR>(n, "SendWR");
                w.next = n;
            })
        .def("set_sg", &set_sg<SendWR>, py::arg("sg"))
        .def(
            "set_wr_ud",
            [](SendWR& w, py::object ah, uint32_t rqpn, uint32_t rqkey) {
                AH& a = open_arg<AH>(ah, "AH");
                w.ah = ah;
                w.wr.wr.ud.ah = a.ah;
                w.wr.wr.ud.remote_qpn = rqpn;
                w.wr.wr.ud.remote_qkey = rqkey;
            },
            py::arg("ah"), py::arg("rqpn"), py::arg("rqkey"))
        .def(
            "set_wr_rdma",
            [](SendWR& w, uint32_t rkey, uint64_t addr) {
                w.wr.wr.rdma.rkey = rkey;
                w.wr.wr.rdma.remote_addr = addr;
            },
            py::arg("rkey"), py::arg("addr"))
        .def(
            "set_wr_atomic",
            [](SendWR& w, uint32_t rkey, uint64_t addr, uint64_t compare_add, uint64_t swap) {
                w.wr.wr.atomic.rkey = rkey;
                w.wr.wr.atomic.remote_addr = addr;
                w.wr.wr.atomic.compare_add = compare_add;
                w.wr.wr.atomic.swap = swap;
            },
            py::arg("rkey"), py::arg("addr"), py::arg("compare_add"), py::arg("swap") = 0)
        .def(
            "set_qp_type_xrc", [](SendWR& w, uint32_t remote_srqn) { w.wr.qp_type.xrc.remote_srqn = remote_srqn; },
            py::arg("remote_srqn"))
        .def("__str__", [](const SendWR& w) {
            // (The reference nests the immediate's line inside the flags'
            // value; here each field has its own line.)
            return str_line("WR ID", (unsigned long long)w.wr.wr_id) + str_line("Num SGE", w.wr.num_sge) +
                str_line("Opcode", int(w.wr.opcode)) + str_line("Send flags", send_flags_str(w.wr.send_flags)) +
                str_line("Imm Data", w.wr.imm_data);
        });

    m.def("send_flags_to_str", &send_flags_str, py::arg("flags"));
}
