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

// pyverbs.cq.CqInitAttrEx: an ibv_cq_init_attr_ex and the objects its
// pointers come from (looked up again, open, when a CQEX is created).
struct CqInitAttrEx : Object {
    ibv_cq_init_attr_ex attr{};
    py::object channel;
    py::object parent_domain;
    py::object cq_context;  // kept alive: attr.cq_context is its address
};

struct PollCqAttr : Object {
    ibv_poll_cq_attr attr{};
};

struct WcTmInfo : Object {
    ibv_wc_tm_info info{};
};

// The names of the bits of `flags` a {bit: name} dict has, each followed by
// a space (any common bit counts).
std::string names_of_flags(uint64_t flags, const py::dict& names) {
    std::string out;
    for (auto [k, v] : names)
        if (flags & k.cast<uint64_t>())
            out += v.cast<std::string>() + " ";
    return out;
}

std::string create_wc_flags_str(uint64_t flags) {
    static const std::pair<uint64_t, const char*> names[] = {
        {IBV_WC_EX_WITH_BYTE_LEN, "IBV_WC_EX_WITH_BYTE_LEN"},
        {IBV_WC_EX_WITH_IMM, "IBV_WC_EX_WITH_IMM"},
        {IBV_WC_EX_WITH_QP_NUM, "IBV_WC_EX_WITH_QP_NUM"},
        {IBV_WC_EX_WITH_SRC_QP, "IBV_WC_EX_WITH_SRC_QP"},
        {IBV_WC_EX_WITH_SLID, "IBV_WC_EX_WITH_SLID"},
        {IBV_WC_EX_WITH_SL, "IBV_WC_EX_WITH_SL"},
        {IBV_WC_EX_WITH_DLID_PATH_BITS, "IBV_WC_EX_WITH_DLID_PATH_BITS"},
        {IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP"},
        {IBV_WC_EX_WITH_CVLAN, "IBV_WC_EX_WITH_CVLAN"},
        {IBV_WC_EX_WITH_FLOW_TAG, "IBV_WC_EX_WITH_FLOW_TAG"},
        {IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK"}};
    std::string out;
    for (auto& [bit, name] : names)
        if (flags & bit)
            out += std::string(name) + " ";
    return out;
}

CQEX& cqex_of(py::handle h) { return open_arg<CQEX>(h, "CQEX"); }

// The CQEX of a read_*: open, and holding a completion (between a
// successful start_poll and end_poll), else the read would touch no CQE.
ibv_cq_ex* polled(py::handle h, const char* what) {
    CQEX& cq = cqex_of(h);
    if (!cq.polling)
        raise_user(std::string("Cannot ") + what + ": no polled completion (call start_poll first)");
    return cq.cq;
}

// A read hook the provider may leave out (it reads no such field).
template <class Hook>
void require_hook(Hook hook, const char* what) {
    if (!hook)
        raise_rdma(std::string("Failed to ") + what + ": the provider does not report it", EOPNOTSUPP);
}

std::shared_ptr<CQEX> make_cqex(py::object context, py::object init_attr) {
    Context& ctx = open_arg<Context>(context, "Context");
    CqInitAttrEx dflt;
    dflt.attr.cqe = 100;
    const CqInitAttrEx& init = init_attr.is_none() ? dflt : arg_as<CqInitAttrEx>(init_attr, "CqInitAttrEx");
    ibv_cq_init_attr_ex attr = init.attr;
    CompChannel* cc = nullptr;
    if (init.channel && !init.channel.is_none()) {
        cc = &open_arg<CompChannel>(init.channel, "CompChannel");
        attr.channel = cc->cc;
    }
    PD* pd = nullptr;
    if (init.parent_domain && !init.parent_domain.is_none()) {
        pd = &open_arg<PD>(init.parent_domain, "PD");
        attr.parent_domain = pd->pd;
        attr.comp_mask |= IBV_CQ_INIT_ATTR_MASK_PD;
    }
    auto cq = std::make_shared<CQEX>();
    cq->cq = ibv_create_cq_ex(ctx.ctx, &attr);
    if (!cq->cq)
        raise_rdma_errno("Failed to create extended CQ");
    cq->context = context;
    cq->channel = cc ? init.channel : py::none();
    cq->adopt(context, ctx);
    // The channel and the parent domain cannot go while the CQ uses them.
    if (cc)
        cq->depend_on(init.channel, *cc);
    if (pd)
        cq->depend_on(init.parent_domain, *pd);
    return cq;
}

// CQ.poll(num_entries=1) -> (npolled, [WC...]): a fast method.
PyObject* cq_poll(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return fast_call([&]() -> PyObject* {
        static const char* const names[] = {"num_entries"};
        FastArgs<1> a("poll", names, 0, args, nargs, kwnames);
        CQ& cq = cq_of(self);
        long long want = a.i64(0, 1);
        if (want < 0)
            raise_user("num_entries must not be negative");
        // (the usual small polls need no allocation)
        ibv_wc small[16];
        std::vector<ibv_wc> large;
        ibv_wc* wcs = small;
        if (want > 16) {
            large.resize(size_t(want));
            wcs = large.data();
        }
        int n = ibv_poll_cq(cq.cq, int(want), wcs);
        if (n < 0)
            raise_rdma("Failed to poll CQ", errno ? errno : -n);
        py::list out(n);
        for (int i = 0; i < n; i++) {
            auto w = std::make_shared<WC>();
            w->wc = wcs[i];
            out[i] = py::cast(std::move(w));
        }
        return py::make_tuple(n, std::move(out)).release().ptr();
    });
}

}  // namespace

#define WC_FIELD(name, field) \
    def_property(             \
        name, [](const WC& o) { return o.wc.field; }, [](WC& o, decltype(ibv_wc::field) v) { o.wc.field = v; })

PYBIND11_MODULE(cq, m) {
    import_deps({"pyverbs.base", "pyverbs.device", "pyverbs.pd"});
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
                // A CQ or an extended CQ, whose events are counted alike.
                ibv_cq* want = any_cq(expected_cq);
                unsigned& unacked = py::isinstance<CQEX>(expected_cq) ? cqex_of(expected_cq).events_unacked
                                                                      : cq_of(expected_cq).events_unacked;
                ibv_cq* cq = nullptr;
                void* cq_ctx = nullptr;
                int rc;
                {
                    py::gil_scoped_release unlocked;
                    rc = ibv_get_cq_event(cc.cc, &cq, &cq_ctx);
                }
                if (rc)
                    raise_rdma_errno("Failed to get CQ event");
                if (cq != want) {
                    ibv_ack_cq_events(cq, 1);
                    raise_rdma("Received event on an unexpected CQ", EINVAL);
                }
                unacked++;
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

    py::class_<CqInitAttrEx, Object, std::shared_ptr<CqInitAttrEx>>(m, "CqInitAttrEx")
        .def(py::init([](uint32_t cqe, py::object channel, uint32_t comp_vector, uint64_t wc_flags, uint32_t comp_mask,
                         uint32_t flags, py::object parent_domain) {
                 auto a = std::make_shared<CqInitAttrEx>();
                 a->attr.cqe = cqe;
                 if (!channel.is_none())
                     a->attr.channel = arg_as<CompChannel>(channel, "CompChannel").cc;
                 a->channel = channel;
                 a->attr.comp_vector = comp_vector;
                 a->attr.wc_flags = wc_flags;
                 a->attr.comp_mask = comp_mask;
                 a->attr.flags = flags;
                 if (!parent_domain.is_none())
                     a->attr.parent_domain = arg_as<PD>(parent_domain, "PD").pd;
                 a->parent_domain = parent_domain;
                 return a;
             }),
             py::arg("cqe") = 100, py::arg("channel") = py::none(), py::arg("comp_vector") = 0, py::arg("wc_flags") = 0,
             py::arg("comp_mask") = 0, py::arg("flags") = 0, py::arg("parent_domain") = py::none())
        .def_property(
            "cqe", [](const CqInitAttrEx& a) { return a.attr.cqe; },
            [](CqInitAttrEx& a, uint32_t v) { a.attr.cqe = v; })
        .def_property("cq_context", nullptr,
                      [](CqInitAttrEx& a, py::object v) {
                          a.cq_context = v;
                          a.attr.cq_context = v.ptr();
                      })
        .def_property(
            "comp_channel", [](const CqInitAttrEx& a) { return a.channel ? a.channel : py::none(); },
            [](CqInitAttrEx& a, py::object v) {
                a.attr.channel = arg_as<CompChannel>(v, "CompChannel").cc;
                a.channel = v;
            })
        .def_property(
            "comp_vector", [](const CqInitAttrEx& a) { return a.attr.comp_vector; },
            [](CqInitAttrEx& a, uint32_t v) { a.attr.comp_vector = v; })
        .def_property(
            "wc_flags", [](const CqInitAttrEx& a) { return a.attr.wc_flags; },
            [](CqInitAttrEx& a, uint64_t v) { a.attr.wc_flags = v; })
        .def_property(
            "comp_mask", [](const CqInitAttrEx& a) { return a.attr.comp_mask; },
            [](CqInitAttrEx& a, uint32_t v) { a.attr.comp_mask = v; })
        .def_property(
            "flags", [](const CqInitAttrEx& a) { return a.attr.flags; },
            [](CqInitAttrEx& a, uint32_t v) { a.attr.flags = v; })
        .def_property(
            "parent_domain", [](const CqInitAttrEx& a) { return a.parent_domain ? a.parent_domain : py::none(); },
            [](CqInitAttrEx& a, py::object v) {
                a.attr.parent_domain = v.is_none() ? nullptr : arg_as<PD>(v, "PD").pd;
                a.parent_domain = v;
            })
        .def("__str__", [](const CqInitAttrEx& a) {
            return str_line("Number of CQEs", a.attr.cqe) + str_line("WC flags", create_wc_flags_str(a.attr.wc_flags)) +
                str_line("comp mask", a.attr.comp_mask) + str_line("flags", a.attr.flags);
        });

    py::class_<PollCqAttr, Object, std::shared_ptr<PollCqAttr>>(m, "PollCqAttr")
        .def(py::init<>())
        .def_property(
            "comp_mask", [](const PollCqAttr& a) { return a.attr.comp_mask; },
            [](PollCqAttr& a, uint32_t v) { a.attr.comp_mask = v; });

    py::class_<WcTmInfo, Object, std::shared_ptr<WcTmInfo>>(m, "WcTmInfo")
        .def(py::init<>())
        .def_property(
            "tag", [](const WcTmInfo& i) { return i.info.tag; }, [](WcTmInfo& i, uint64_t v) { i.info.tag = v; })
        .def_property(
            "priv", [](const WcTmInfo& i) { return i.info.priv; }, [](WcTmInfo& i, uint32_t v) { i.info.priv = v; });

#define CQEX_READ(name, hook, fn)           \
    def(name, [](py::handle self) {         \
        ibv_cq_ex* cq = polled(self, name); \
        require_hook(cq->hook, name);       \
        return fn(cq);                      \
    })

    py::class_<CQEX, CM, std::shared_ptr<CQEX>>(m, "CQEX")
        .def(py::init(&make_cqex), py::arg("context"), py::arg("init_attr") = py::none())
        .def(
            "start_poll",
            [](py::handle self, py::object attr) {
                CQEX& cq = cqex_of(self);
                if (cq.polling)
                    raise_user("start_poll while a poll is in progress: call end_poll first");
                ibv_poll_cq_attr a{};
                if (!attr.is_none())
                    a = arg_as<PollCqAttr>(attr, "PollCqAttr").attr;
                int rc = ibv_start_poll(cq.cq, &a);
                if (rc == 0)
                    cq.polling = true;
                else if (rc != ENOENT)
                    raise_rdma("Failed to poll CQEX", rc);
                return rc;
            },
            py::arg("attr") = py::none())
        .def("poll_next",
             [](py::handle self) {
                 CQEX& cq = cqex_of(self);
                 if (!cq.polling)
                     raise_user("poll_next without a successful start_poll");
                 int rc = ibv_next_poll(cq.cq);
                 if (rc != 0 && rc != ENOENT)
                     raise_rdma("Failed to poll CQEX", rc);
                 return rc;
             })
        .def("end_poll",
             [](py::handle self) {
                 CQEX& cq = cqex_of(self);
                 if (!cq.polling)
                     raise_user("end_poll without a successful start_poll");
                 ibv_end_poll(cq.cq);
                 cq.polling = false;
             })
        .CQEX_READ("read_opcode", read_opcode, [](ibv_cq_ex* c) { return int(ibv_wc_read_opcode(c)); })
        .CQEX_READ("read_vendor_err", read_vendor_err, ibv_wc_read_vendor_err)
        .CQEX_READ("read_byte_len", read_byte_len, ibv_wc_read_byte_len)
        .CQEX_READ("read_imm_data", read_imm_data, ibv_wc_read_imm_data)
        .CQEX_READ("read_qp_num", read_qp_num, ibv_wc_read_qp_num)
        .CQEX_READ("read_src_qp", read_src_qp, ibv_wc_read_src_qp)
        .CQEX_READ("read_wc_flags", read_wc_flags, ibv_wc_read_wc_flags)
        .CQEX_READ("read_slid", read_slid, ibv_wc_read_slid)
        .CQEX_READ("read_sl", read_sl, ibv_wc_read_sl)
        .CQEX_READ("read_dlid_path_bits", read_dlid_path_bits, ibv_wc_read_dlid_path_bits)
        .CQEX_READ("read_timestamp", read_completion_ts, ibv_wc_read_completion_ts)
        .CQEX_READ("read_cvlan", read_cvlan, ibv_wc_read_cvlan)
        .CQEX_READ("read_flow_tag", read_flow_tag, ibv_wc_read_flow_tag)
        .CQEX_READ("read_tm_info", read_tm_info,
                   [](ibv_cq_ex* c) {
                       auto info = std::make_shared<WcTmInfo>();
                       ibv_wc_read_tm_info(c, &info->info);
                       return info;
                   })
        .CQEX_READ("read_completion_wallclock_ns", read_completion_wallclock_ns, ibv_wc_read_completion_wallclock_ns)
        .def_property(
            "status", [](py::handle self) { return int(cqex_of(self).cq->status); },
            [](py::handle self, int v) { cqex_of(self).cq->status = ibv_wc_status(v); })
        .def_property(
            "wr_id", [](py::handle self) { return cqex_of(self).cq->wr_id; },
            [](py::handle self, uint64_t v) { cqex_of(self).cq->wr_id = v; })
        // Beyond the reference: completion events of a CQEX on a channel.
        .def(
            "req_notify",
            [](py::handle self, bool solicited_only) {
                if (int rc = ibv_req_notify_cq(cqex_of(self).ibv_cq_of(), solicited_only))
                    raise_rdma("Request notify CQ returned " + std::to_string(rc), rc);
            },
            py::arg("solicited_only") = false)
        .def(
            "ack_events",
            [](py::handle self, unsigned num_events) {
                CQEX& cq = cqex_of(self);
                ibv_ack_cq_events(cq.ibv_cq_of(), num_events);
                cq.events_unacked -= std::min(num_events, cq.events_unacked);
            },
            py::arg("num_events"))
        .def("__str__", [](py::handle self) {
            ibv_cq_ex* cq = cqex_of(self).cq;
            return "Extended CQ:\n" + str_line("Handle", cq->handle) + str_line("CQEs", cq->cqe);
        });
#undef CQEX_READ

    add_fast_method(m.attr("CQ"), "poll", cq_poll, "Polls up to num_entries completions: (npolled, [WC])");

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
    m.def("flags_to_str", &names_of_flags, py::arg("flags"), py::arg("dictionary"));
    m.def("create_wc_flags_to_str", &create_wc_flags_str, py::arg("flags"));
}
