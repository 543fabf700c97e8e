// pyverbs.cq: completion channels, CQs and work completions.
#include "objects.h"

#include <pybind11/stl.h>

using namespace pyverbs;

namespace {

struct WC : Object {
    ibv_wc wc{};
};

std::string status_str(int s) {
    static const char* const names[] = {"success",
                                        "local length error",
                                        "local QP op error",
                                        "local EEC op error",
                                        "local protection error",
                                        "WR flush error",
                                        "memory window bind error",
                                        "bad response error",
                                        "local access error",
                                        "remote invalidate request error",
                                        "remote access error",
                                        "remote op error",
                                        "retry exceeded error",
                                        "RNR retry exceeded",
                                        "local RDD violation error",
                                        "remote invalidate RD request error",
                                        "remote abort error",
                                        "invalidate EECN error",
                                        "invalidate EEC state error",
                                        "WC fatal error",
                                        "response timeout error",
                                        "general error"};
    if (s >= 0 && size_t(s) < std::size(names))
        return names[s];
    return "Unknown CQE status";
}

std::string opcode_str(int op) {
    switch (op) {
    case IBV_WC_SEND: return "Send";
    case IBV_WC_RDMA_WRITE: return "RDMA write";
    case IBV_WC_RDMA_READ: return "RDMA read";
    case IBV_WC_COMP_SWAP: return "Compare and swap";
    case IBV_WC_FETCH_ADD: return "Fetch and add";
    case IBV_WC_BIND_MW: return "Bind Memory window";
    case IBV_WC_LOCAL_INV: return "Local invalidate";
    case IBV_WC_TSO: return "TSO";
    case IBV_WC_RECV: return "Receive";
    case IBV_WC_RECV_RDMA_WITH_IMM: return "Receive RDMA with immediate";
    case IBV_WC_TM_ADD: return "Tag matching - add";
    case IBV_WC_TM_DEL: return "Tag matching - delete";
    case IBV_WC_TM_SYNC: return "Tag matching - sync";
    case IBV_WC_TM_RECV: return "Tag matching - receive";
    case IBV_WC_TM_NO_TAG: return "Tag matching - no tag";
    default: return "Unknown CQE opcode " + std::to_string(op);
    }
}

std::string flags_str(unsigned flags) {
    static const std::pair<unsigned, const char*> names[] = {{IBV_WC_GRH, "GRH"},
                                                             {IBV_WC_WITH_IMM, "With immediate"},
                                                             {IBV_WC_IP_CSUM_OK, "IP csum OK"},
                                                             {IBV_WC_WITH_INV, "With invalidate"},
                                                             {IBV_WC_TM_SYNC_REQ, "TM sync request"},
                                                             {IBV_WC_TM_MATCH, "TM match"},
                                                             {IBV_WC_TM_DATA_VALID, "TM data valid"}};
    std::string out;
    for (auto& [bit, name] : names)
        if (flags & bit)
            out += std::string(name) + " ";
    return out;
}

std::string wc_str(const ibv_wc& w) {
    return str_line("WR ID", (unsigned long long)w.wr_id) + str_line("status", status_str(w.status)) +
        str_line("opcode", opcode_str(w.opcode)) + str_line("vendor error", w.vendor_err) +
        str_line("byte length", w.byte_len) + str_line("QP num", w.qp_num) + str_line("source QP", w.src_qp) +
        str_line("WC flags", flags_str(w.wc_flags)) + str_line("pkey index", w.pkey_index) + str_line("slid", w.slid) +
        str_line("sl", w.sl) + str_line("imm_data", w.imm_data) + str_line("dlid path bits", w.dlid_path_bits);
}

CQ& cq_of(py::handle h) { return open_arg<CQ>(h, "CQ"); }

}  // namespace

#define WC_FIELD(name, field) \
    def_property(             \
        name, [](const WC& o) { return o.wc.field; }, [](WC& o, decltype(ibv_wc::field) v) { o.wc.field = v; })

PYBIND11_MODULE(cq, m) {
    import_deps({"pyverbs.base", "pyverbs.device"});
    m.doc() = "Completion channels, completion queues and work completions";

    py::class_<CompChannel, CM, std::shared_ptr<CompChannel>>(m, "CompChannel")
        .def(py::init([](py::object context) {
                 Context& ctx = open_arg<Context>(context, "Context");
                 auto cc = std::make_shared<CompChannel>();
                 cc->cc = ibv_create_comp_channel(ctx.ctx);
                 if (!cc->cc)
                     raise_rdma_errno("Failed to create a completion channel");
                 cc->context = context;
                 cc->adopt(context, ctx);
                 return cc;
             }),
             py::arg("context"))
        .def(
            "get_cq_event",
            [](py::handle self, py::object expected_cq) {
                CompChannel& cc = open_arg<CompChannel>(self, "CompChannel");
                CQ& want = cq_of(expected_cq);
                ibv_cq* cq = nullptr;
                void* cq_ctx = nullptr;
                int rc;
                {
                    py::gil_scoped_release unlocked;
                    rc = ibv_get_cq_event(cc.cc, &cq, &cq_ctx);
                }
                if (rc)
                    raise_rdma_errno("Failed to get CQ event");
                if (cq != want.cq) {
                    ibv_ack_cq_events(cq, 1);
                    raise_rdma("Received event on an unexpected CQ", EINVAL);
                }
                want.events_unacked++;
            },
            py::arg("expected_cq"))
        .def_property_readonly("fd", [](py::handle self) { return open_arg<CompChannel>(self, "CompChannel").cc->fd; });

    py::class_<CQ, CM, std::shared_ptr<CQ>>(m, "CQ")
        .def(py::init([](py::object context, int cqe, py::object cq_context, py::object channel, int comp_vector) {
                 Context& ctx = open_arg<Context>(context, "Context");
                 ibv_comp_channel* cc = nullptr;
                 if (!channel.is_none())
                     cc = open_arg<CompChannel>(channel, "CompChannel").cc;
                 auto cq = std::make_shared<CQ>();
                 cq->cq = ibv_create_cq(ctx.ctx, cqe, nullptr, cc, comp_vector);
                 if (!cq->cq)
                     raise_rdma_errno("Failed to create a CQ");
                 cq->context = context;
                 cq->channel = channel;
                 cq->adopt(context, ctx);
                 // The channel cannot go while a CQ reports to it.
                 if (cc)
                     cq->depend_on(channel, arg_as<CompChannel>(channel, "CompChannel"));
                 return cq;
             }),
             py::arg("context"), py::arg("cqe"), py::arg("cq_context") = py::none(), py::arg("channel") = py::none(),
             py::arg("comp_vector") = 0)
        .def(
            "poll",
            [](py::handle self, int num_entries) {
                CQ& cq = cq_of(self);
                if (num_entries < 0)
                    raise_user("num_entries must not be negative");
                std::vector<ibv_wc> wcs(num_entries);
                int n = ibv_poll_cq(cq.cq, num_entries, wcs.data());
                if (n < 0)
                    raise_rdma("Failed to poll CQ", errno ? errno : -n);
                py::list out;
                for (int i = 0; i < n; i++) {
                    auto w = std::make_shared<WC>();
                    w->wc = wcs[i];
                    out.append(py::cast(w));
                }
                return py::make_tuple(n, out);
            },
            py::arg("num_entries") = 1)
        .def(
            "req_notify",
            [](py::handle self, bool solicited_only) {
                if (int rc = ibv_req_notify_cq(cq_of(self).cq, solicited_only))
                    raise_rdma("Request notify CQ returned " + std::to_string(rc), rc);
            },
            py::arg("solicited_only") = false)
        .def(
            "ack_events",
            [](py::handle self, unsigned num_events) {
                CQ& cq = cq_of(self);
                ibv_ack_cq_events(cq.cq, num_events);
                cq.events_unacked -= std::min(num_events, cq.events_unacked);
            },
            py::arg("num_events"))
        .def(
            "resize",
            [](py::handle self, int cqe) {
                if (int rc = ibv_resize_cq(cq_of(self).cq, cqe))
                    raise_rdma("Failed to resize CQ", rc);
            },
            py::arg("cqe"))
        .def_property_readonly("cqe", [](py::handle self) { return cq_of(self).cq->cqe; })
        .def_property_readonly("comp_channel", [](const CQ& c) { return c.channel; })
        .def_property_readonly("num_events", [](const CQ& c) { return c.events_unacked; })
        .def("__str__", [](py::handle self) {
            return "CQ\n" + str_line("Handle", cq_of(self).cq->handle) + str_line("CQEs", cq_of(self).cq->cqe);
        });

    py::class_<WC, Object, std::shared_ptr<WC>>(m, "WC")
        .def(py::init([](uint64_t wr_id, int status, int opcode, uint32_t vendor_err, uint32_t byte_len,
                         uint32_t qp_num, uint32_t src_qp, uint32_t imm_data, unsigned wc_flags, uint16_t pkey_index,
                         uint16_t slid, uint8_t sl, uint8_t dlid_path_bits) {
                 auto w = std::make_shared<WC>();
                 w->wc.wr_id = wr_id;
                 w->wc.status = ibv_wc_status(status);
                 w->wc.opcode = ibv_wc_opcode(opcode);
                 w->wc.vendor_err = vendor_err;
                 w->wc.byte_len = byte_len;
                 w->wc.qp_num = qp_num;
                 w->wc.src_qp = src_qp;
                 w->wc.imm_data = imm_data;
                 w->wc.wc_flags = wc_flags;
                 w->wc.pkey_index = pkey_index;
                 w->wc.slid = slid;
                 w->wc.sl = sl;
                 w->wc.dlid_path_bits = dlid_path_bits;
                 return w;
             }),
             py::arg("wr_id") = 0, py::arg("status") = 0, py::arg("opcode") = 0, py::arg("vendor_err") = 0,
             py::arg("byte_len") = 0, py::arg("qp_num") = 0, py::arg("src_qp") = 0, py::arg("imm_data") = 0,
             py::arg("wc_flags") = 0, py::arg("pkey_index") = 0, py::arg("slid") = 0, py::arg("sl") = 0,
             py::arg("dlid_path_bits") = 0)
        .WC_FIELD("wr_id", wr_id)
        .def_property(
            "status", [](const WC& o) { return int(o.wc.status); },
            [](WC& o, int v) { o.wc.status = ibv_wc_status(v); })
        .def_property(
            "opcode", [](const WC& o) { return int(o.wc.opcode); },
            [](WC& o, int v) { o.wc.opcode = ibv_wc_opcode(v); })
        .WC_FIELD("vendor_err", vendor_err)
        .WC_FIELD("byte_len", byte_len)
        .WC_FIELD("qp_num", qp_num)
        .WC_FIELD("src_qp", src_qp)
        .WC_FIELD("imm_data", imm_data)
        .WC_FIELD("wc_flags", wc_flags)
        .WC_FIELD("pkey_index", pkey_index)
        .WC_FIELD("slid", slid)
        .WC_FIELD("sl", sl)
        .WC_FIELD("dlid_path_bits", dlid_path_bits)
        .def("__str__", [](const WC& o) { return wc_str(o.wc); });

    m.def("cqe_status_to_str", &status_str, py::arg("status"));
    m.def("cqe_opcode_to_str", &opcode_str, py::arg("opcode"));
    m.def("cqe_flags_to_str", &flags_str, py::arg("flags"));
}
