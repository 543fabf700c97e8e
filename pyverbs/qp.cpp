// pyverbs.qp: QP capabilities and attributes, and queue pairs with their
// state transitions and posting.
#include "objects.h"
#include "wq.h"
#include "xrcd.h"

#include <pybind11/stl.h>

using namespace pyverbs;

namespace {

struct QPCap : Object {
    ibv_qp_cap cap{};
};

struct QPInitAttr : Object {
    ibv_qp_init_attr attr{};
    py::object scq, rcq, srq, qp_context;
};

struct QPAttr : Object {
    ibv_qp_attr attr{};
};

// ibv_qp_init_attr_ex: also the PD and the extended fields, for QPs
// created on a Context (and QPEx's work-request interface).
struct QPInitAttrEx : Object {
    ibv_qp_init_attr_ex attr{};
    py::object scq, rcq, srq, pd, xrcd, ind_table, hash_conf, qp_context;
};

struct ECE : CM {
    ibv_ece ece{};
};

// An inline piece for QPEx.wr_set_inline_data_list.
struct DataBuffer : CM {
    ibv_data_buf buf{};
};

struct QPRateLimitAttr : Object {
    ibv_qp_rate_limit_attr attr{};
};

struct QPAttachCompCntrAttr : Object {
    ibv_qp_attach_comp_cntr_attr attr{};
};

QP& qp_of(py::handle h) { return open_arg<QP>(h, "QP"); }

ibv_qp_ex* qpx_of(py::handle h) {
    QP& qp = qp_of(h);
    if (!qp.qpx)
        raise_user("The QP was created without send ops flags: no work-request interface");
    return qp.qpx;
}

// The QP's relations once created: parent, the objects it uses, and the
// state its attributes may move it to.
template <class A>
void bind_relations(QP& qp, A& ia) {
    for (py::object* dep : {&ia.scq, &ia.rcq, &ia.srq})
        if (*dep && !dep->is_none())
            qp.depend_on(*dep, dep->template cast<CM&>());
    qp.scq = ia.scq;
    qp.rcq = ia.rcq;
    qp.srq = ia.srq;
}

// The attributes each transition sets, per QP type (the usual connection
// recipe: INIT names the port and access, RTR the peer, RTS the timers).
int init_mask(int type) {
    switch (type) {
    case IBV_QPT_UD: return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
    case IBV_QPT_RAW_PACKET: return IBV_QP_STATE | IBV_QP_PORT;
    default: return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    }
}
int rtr_mask(int type) {
    switch (type) {
    case IBV_QPT_UD:
    case IBV_QPT_RAW_PACKET: return IBV_QP_STATE;
    case IBV_QPT_UC:
    case IBV_QPT_XRC_SEND: return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    default:
        return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
}
int rts_mask(int type) {
    switch (type) {
    case IBV_QPT_XRC_RECV: return IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN;
    case IBV_QPT_RC:
    case IBV_QPT_XRC_SEND:
        return IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
            IBV_QP_MAX_QP_RD_ATOMIC;
    case IBV_QPT_RAW_PACKET: return IBV_QP_STATE;
    default: return IBV_QP_STATE | IBV_QP_SQ_PSN;
    }
}

// Each step sets the state in the caller's QPAttr, as the reference does.
void modify(QP& qp, QPAttr& a, int state, int mask, const char* what) {
    a.attr.qp_state = ibv_qp_state(state);
    if (int rc = ibv_modify_qp(qp.qp, &a.attr, mask))
        raise_rdma(std::string("Failed to modify QP state to ") + what, rc);
}
void to_init(QP& qp, QPAttr& a) { modify(qp, a, IBV_QPS_INIT, init_mask(qp.qp->qp_type), "init"); }
void to_rtr(QP& qp, QPAttr& a) {
    if (qp.qp->state != IBV_QPS_INIT)
        to_init(qp, a);
    modify(qp, a, IBV_QPS_RTR, rtr_mask(qp.qp->qp_type), "RTR");
}
void to_rts(QP& qp, QPAttr& a) {
    if (qp.qp->state != IBV_QPS_RTR)
        to_rtr(qp, a);
    modify(qp, a, IBV_QPS_RTS, rts_mask(qp.qp->qp_type), "RTS");
}

template <class T>
void to_first_state(QP& qp, py::object qp_attr) {
    if (qp_attr.is_none())
        return;
    QPAttr& a = arg_as<QPAttr>(qp_attr, "QPAttr");
    int t = qp.qp->qp_type;
    if (t == IBV_QPT_UD || t == IBV_QPT_RAW_PACKET)
        to_rts(qp, a);
    else
        to_init(qp, a);
}

// QP(creator, init_attr, qp_attr=None): on a PD with a QPInitAttr
// (ibv_create_qp), or on a Context with a QPInitAttrEx (ibv_create_qp_ex).
template <class T>
std::shared_ptr<T> make_qp(py::object creator, py::object init_attr, py::object qp_attr) {
    auto qp = std::make_shared<T>();
    if (py::isinstance<Context>(creator)) {
        Context& ctx = open_arg<Context>(creator, "Context");
        QPInitAttrEx& ia = arg_as<QPInitAttrEx>(init_attr, "QPInitAttrEx");
        for (py::object* cq : {&ia.scq, &ia.rcq})
            if (*cq && !cq->is_none())
                any_cq(*cq);  // still open
        if (ia.pd && !ia.pd.is_none())
            ia.attr.pd = open_arg<PD>(ia.pd, "PD").pd;
        if (ia.srq && !ia.srq.is_none())
            ia.attr.srq = open_arg<SRQ>(ia.srq, "SRQ").srq;
        if (ia.xrcd && !ia.xrcd.is_none())
            ia.attr.xrcd = open_arg<XRCD>(ia.xrcd, "XRCD").xrcd;
        if (ia.ind_table && !ia.ind_table.is_none())
            ia.attr.rwq_ind_tbl = open_arg<RwqIndTable>(ia.ind_table, "RwqIndTable").table;
        ibv_qp_init_attr_ex attr = ia.attr;
        qp->qp = ibv_create_qp_ex(ctx.ctx, &attr);
        if (!qp->qp)
            raise_rdma_errno("Failed to create QP");
        ia.attr.cap = attr.cap;
        qp->context = creator;
        qp->adopt(creator, ctx);
        if (ia.pd && !ia.pd.is_none()) {
            qp->pd = ia.pd;
            qp->depend_on(ia.pd, ia.pd.cast<CM&>());
        }
        for (py::object* dep : {&ia.xrcd, &ia.ind_table})
            if (*dep && !dep->is_none())
                qp->depend_on(*dep, dep->cast<CM&>());
        qp->ind_table = ia.ind_table ? ia.ind_table : py::none();
        bind_relations(*qp, ia);
        if (attr.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
            qp->qpx = ibv_qp_to_qp_ex(qp->qp);
            if (!qp->qpx)
                raise_rdma_errno("Failed to create extended QP");
        }
    } else if (py::isinstance<PD>(creator)) {
        PD& pd = open_arg<PD>(creator, "PD");
        QPInitAttr& ia = arg_as<QPInitAttr>(init_attr, "QPInitAttr");
        for (py::object* cq : {&ia.scq, &ia.rcq})
            if (*cq && !cq->is_none())
                any_cq(*cq);
        if (ia.srq && !ia.srq.is_none())
            ia.attr.srq = open_arg<SRQ>(ia.srq, "SRQ").srq;
        ibv_qp_init_attr attr = ia.attr;
        qp->qp = ibv_create_qp(pd.pd, &attr);
        if (!qp->qp)
            raise_rdma_errno("Failed to create QP");
        // What the device granted is reported back, as ibv_create_qp does.
        ia.attr.cap = attr.cap;
        qp->pd = creator;
        qp->adopt(creator, pd);
        bind_relations(*qp, ia);
    } else {
        raise_user("A QP is created on a PD (QPInitAttr) or a Context (QPInitAttrEx), not on " +
                   py::str(py::type::handle_of(creator)).cast<std::string>());
    }
    to_first_state<T>(*qp, qp_attr);
    return qp;
}

// Copies a QPCap into any attribute holding an ibv_qp_cap (None: nothing).
void copy_caps(py::object src, ibv_qp_cap& dst) {
    if (!src.is_none())
        dst = arg_as<QPCap>(src, "QPCap").cap;
}

// QP.post_send(wr, bad_wr=None) and QP.post_recv(wr, bad_wr=None): fast
// methods. On failure the failing request's wr_id goes to bad_wr.
PyObject* qp_post_send(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return fast_call([&] {
        static const char* const names[] = {"wr", "bad_wr"};
        FastArgs<2> a("post_send", names, 1, args, nargs, kwnames);
        QP& qp = qp_of(self);
        ibv_send_wr* bad = nullptr;
        if (int rc = ibv_post_send(qp.qp, link_chain(arg_as<SendWR>(a.v[0], "SendWR")), &bad)) {
            if (bad && a.given(1))
                arg_as<SendWR>(a.v[1], "SendWR").wr.wr_id = bad->wr_id;
            raise_rdma("Failed to post send", rc);
        }
        return Py_NewRef(Py_None);
    });
}

PyObject* qp_post_recv(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return fast_call([&] {
        static const char* const names[] = {"wr", "bad_wr"};
        FastArgs<2> a("post_recv", names, 1, args, nargs, kwnames);
        QP& qp = qp_of(self);
        ibv_recv_wr* bad = nullptr;
        if (int rc = ibv_post_recv(qp.qp, link_chain(arg_as<RecvWR>(a.v[0], "RecvWR")), &bad)) {
            if (bad && a.given(1))
                arg_as<RecvWR>(a.v[1], "RecvWR").wr.wr_id = bad->wr_id;
            raise_rdma("Failed to post recv", rc);
        }
        return Py_NewRef(Py_None);
    });
}

}  // namespace

#define CAP_FIELD(name) \
    def_property(       \
        #name, [](const QPCap& o) { return o.cap.name; }, [](QPCap& o, uint32_t v) { o.cap.name = v; })
#define QPA_FIELD(name, type)                                          \
    def_property(                                                      \
        #name, [](const QPAttr& o) { return (long long)o.attr.name; }, \
        [](QPAttr& o, long long v) { o.attr.name = type(v); })

PYBIND11_MODULE(qp, m) {
    import_deps(
        {"pyverbs.base", "pyverbs.pd", "pyverbs.cq", "pyverbs.addr", "pyverbs.wr", "pyverbs.xrcd", "pyverbs.wq"});
    m.doc() = "Queue pairs, their capabilities and attributes";

    py::class_<QPCap, Object, std::shared_ptr<QPCap>>(m, "QPCap")
        .def(py::init([](uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t max_send_sge, uint32_t max_recv_sge,
                         uint32_t max_inline_data) {
                 auto c = std::make_shared<QPCap>();
                 c->cap = {max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data};
                 return c;
             }),
             py::arg("max_send_wr") = 1, py::arg("max_recv_wr") = 10, py::arg("max_send_sge") = 1,
             py::arg("max_recv_sge") = 1, py::arg("max_inline_data") = 0)
        .CAP_FIELD(max_send_wr)
        .CAP_FIELD(max_recv_wr)
        .CAP_FIELD(max_send_sge)
        .CAP_FIELD(max_recv_sge)
        .CAP_FIELD(max_inline_data)
        .def("__str__", [](const QPCap& o) {
            return str_line("max send wrs", o.cap.max_send_wr, 20) + str_line("max recv wrs", o.cap.max_recv_wr, 20) +
                str_line("max send sges", o.cap.max_send_sge, 20) + str_line("max recv sges", o.cap.max_recv_sge, 20) +
                str_line("max inline data", o.cap.max_inline_data, 20);
        });

    py::class_<QPInitAttr, Object, std::shared_ptr<QPInitAttr>>(m, "QPInitAttr")
        .def(py::init([](int qp_type, py::object qp_context, py::object scq, py::object rcq, py::object srq,
                         py::object cap, int sq_sig_all) {
                 auto a = std::make_shared<QPInitAttr>();
                 a->attr.qp_type = ibv_qp_type(qp_type);
                 a->attr.sq_sig_all = sq_sig_all;
                 if (!cap.is_none())
                     a->attr.cap = arg_as<QPCap>(cap, "QPCap").cap;
                 a->qp_context = qp_context;
                 a->scq = scq;
                 a->rcq = rcq;
                 a->srq = srq;
                 if (!scq.is_none())
                     a->attr.send_cq = any_cq(scq);
                 if (!rcq.is_none())
                     a->attr.recv_cq = any_cq(rcq);
                 return a;
             }),
             py::arg("qp_type") = int(IBV_QPT_UD), py::arg("qp_context") = py::none(), py::arg("scq") = py::none(),
             py::arg("rcq") = py::none(), py::arg("srq") = py::none(), py::arg("cap") = py::none(),
             py::arg("sq_sig_all") = 1)
        .def_property(
            "qp_type", [](const QPInitAttr& a) { return int(a.attr.qp_type); },
            [](QPInitAttr& a, int v) { a.attr.qp_type = ibv_qp_type(v); })
        .def_property(
            "sq_sig_all", [](const QPInitAttr& a) { return a.attr.sq_sig_all; },
            [](QPInitAttr& a, int v) { a.attr.sq_sig_all = v; })
        .def_property(
            "cap",
            [](const QPInitAttr& a) {
                auto c = std::make_shared<QPCap>();
                c->cap = a.attr.cap;
                return c;
            },
            [](QPInitAttr& a, const QPCap& c) { a.attr.cap = c.cap; })
        .def_property(
            "send_cq", [](const QPInitAttr& a) { return a.scq; },
            [](QPInitAttr& a, py::object cq) {
                a.attr.send_cq = cq.is_none() ? nullptr : any_cq(cq);
                a.scq = cq;
            })
        .def_property(
            "recv_cq", [](const QPInitAttr& a) { return a.rcq; },
            [](QPInitAttr& a, py::object cq) {
                a.attr.recv_cq = cq.is_none() ? nullptr : any_cq(cq);
                a.rcq = cq;
            })
        .def_property(
            "srq", [](const QPInitAttr& a) { return a.srq; }, [](QPInitAttr& a, py::object s) { a.srq = s; })
        .def_property_readonly("qp_context", [](const QPInitAttr& a) { return a.qp_context; })
        .def_property_readonly("max_send_wr", [](const QPInitAttr& a) { return a.attr.cap.max_send_wr; })
        .def_property_readonly("max_recv_wr", [](const QPInitAttr& a) { return a.attr.cap.max_recv_wr; })
        .def_property_readonly("max_send_sge", [](const QPInitAttr& a) { return a.attr.cap.max_send_sge; })
        .def_property_readonly("max_recv_sge", [](const QPInitAttr& a) { return a.attr.cap.max_recv_sge; })
        .def_property_readonly("max_inline_data", [](const QPInitAttr& a) { return a.attr.cap.max_inline_data; });

    py::class_<QPAttr, Object, std::shared_ptr<QPAttr>>(m, "QPAttr")
        .def(py::init([](int qp_state, int cur_qp_state, int port_num, int path_mtu) {
                 auto a = std::make_shared<QPAttr>();
                 a->attr.qp_state = ibv_qp_state(qp_state);
                 a->attr.cur_qp_state = ibv_qp_state(cur_qp_state);
                 a->attr.port_num = port_num;
                 a->attr.path_mtu = ibv_mtu(path_mtu);
                 return a;
             }),
             py::arg("qp_state") = int(IBV_QPS_INIT), py::arg("cur_qp_state") = int(IBV_QPS_RESET),
             py::arg("port_num") = 1, py::arg("path_mtu") = int(IBV_MTU_1024))
        .QPA_FIELD(qp_state, ibv_qp_state)
        .QPA_FIELD(cur_qp_state, ibv_qp_state)
        .QPA_FIELD(path_mtu, ibv_mtu)
        .QPA_FIELD(path_mig_state, ibv_mig_state)
        .QPA_FIELD(qkey, uint32_t)
        .QPA_FIELD(rq_psn, uint32_t)
        .QPA_FIELD(sq_psn, uint32_t)
        .QPA_FIELD(dest_qp_num, uint32_t)
        .QPA_FIELD(qp_access_flags, unsigned)
        .QPA_FIELD(pkey_index, uint16_t)
        .QPA_FIELD(alt_pkey_index, uint16_t)
        .QPA_FIELD(en_sqd_async_notify, uint8_t)
        .QPA_FIELD(sq_draining, uint8_t)
        .QPA_FIELD(max_rd_atomic, uint8_t)
        .QPA_FIELD(max_dest_rd_atomic, uint8_t)
        .QPA_FIELD(min_rnr_timer, uint8_t)
        .QPA_FIELD(port_num, uint8_t)
        .QPA_FIELD(timeout, uint8_t)
        .QPA_FIELD(retry_cnt, uint8_t)
        .QPA_FIELD(rnr_retry, uint8_t)
        .QPA_FIELD(alt_port_num, uint8_t)
        .QPA_FIELD(alt_timeout, uint8_t)
        .QPA_FIELD(rate_limit, uint32_t)
        .def_property(
            "cap",
            [](const QPAttr& a) {
                auto c = std::make_shared<QPCap>();
                c->cap = a.attr.cap;
                return c;
            },
            [](QPAttr& a, const QPCap& c) { a.attr.cap = c.cap; })
        .def_property(
            "ah_attr",
            [](const QPAttr& a) {
                AHAttr h;
                h.attr = a.attr.ah_attr;
                return h;
            },
            [](QPAttr& a, const AHAttr& h) { a.attr.ah_attr = h.attr; })
        .def_property(
            "alt_ah_attr",
            [](const QPAttr& a) {
                AHAttr h;
                h.attr = a.attr.alt_ah_attr;
                return h;
            },
            [](QPAttr& a, const AHAttr& h) { a.attr.alt_ah_attr = h.attr; });

    py::class_<QP, CM, std::shared_ptr<QP>>(m, "QP")
        .def(py::init(&make_qp<QP>), py::arg("creator"), py::arg("init_attr"), py::arg("qp_attr") = py::none())
        .def(
            "set_ece",
            [](py::handle self, const ECE& e) {
                // (a zero vendor id means no ECE: nothing to set)
                if (!e.ece.vendor_id)
                    return;
                ibv_ece ece = e.ece;
                if (int rc = ibv_set_ece(qp_of(self).qp, &ece))
                    raise_rdma("Failed to set ECE", rc);
            },
            py::arg("ece"))
        .def("query_ece",
             [](py::handle self) {
                 auto e = std::make_shared<ECE>();
                 if (int rc = ibv_query_ece(qp_of(self).qp, &e->ece))
                     raise_rdma("Failed to query ECE", rc);
                 return e;
             })
        .def(
            "query_data_in_order",
            [](py::handle self, int op, uint32_t flags) {
                return ibv_query_qp_data_in_order(qp_of(self).qp, ibv_wr_opcode(op), flags);
            },
            py::arg("op"), py::arg("flags") = 0)
        .def(
            "modify_rate_limit",
            [](py::handle self, const QPRateLimitAttr& a) {
                ibv_qp_rate_limit_attr attr = a.attr;
                if (int rc = ibv_modify_qp_rate_limit(qp_of(self).qp, &attr))
                    raise_rdma("Failed to modify QP rate limit", rc);
            },
            py::arg("attr"))
        .def(
            "to_init", [](py::handle self, QPAttr& a) { to_init(qp_of(self), a); }, py::arg("qp_attr"))
        .def(
            "to_rtr", [](py::handle self, QPAttr& a) { to_rtr(qp_of(self), a); }, py::arg("qp_attr"))
        .def(
            "to_rts", [](py::handle self, QPAttr& a) { to_rts(qp_of(self), a); }, py::arg("qp_attr"))
        .def(
            "modify",
            [](py::handle self, const QPAttr& a, int attr_mask) {
                ibv_qp_attr attr = a.attr;
                if (int rc = ibv_modify_qp(qp_of(self).qp, &attr, attr_mask))
                    raise_rdma("Failed to modify QP", rc);
            },
            py::arg("qp_attr"), py::arg("attr_mask"))
        .def(
            "query",
            [](py::handle self, int attr_mask) {
                QP& qp = qp_of(self);
                auto a = std::make_shared<QPAttr>();
                auto ia = std::make_shared<QPInitAttr>();
                if (int rc = ibv_query_qp(qp.qp, &a->attr, attr_mask, &ia->attr))
                    raise_rdma("Failed to query QP", rc);
                ia->scq = qp.scq;
                ia->rcq = qp.rcq;
                ia->srq = qp.srq;
                return py::make_tuple(a, ia);
            },
            py::arg("attr_mask"))
        .def_property_readonly("qp_type", [](py::handle self) { return int(qp_of(self).qp->qp_type); })
        .def_property_readonly("qp_state", [](py::handle self) { return int(qp_of(self).qp->state); })
        .def_property_readonly("qp_num", [](py::handle self) { return qp_of(self).qp->qp_num; })
        .def_property_readonly("pd", [](const QP& q) { return q.pd; })
        .def("__str__", [](py::handle self) {
            QP& qp = qp_of(self);
            py::object utils = py::module_::import("pyverbs.utils");
            return str_line("QP type", utils.attr("qp_type_to_str")(int(qp.qp->qp_type)).cast<std::string>()) +
                str_line("  number", qp.qp->qp_num) +
                str_line("  state", utils.attr("qp_state_to_str")(int(qp.qp->state)).cast<std::string>());
        });

    add_fast_method(m.attr("QP"), "post_send", qp_post_send, "Posts a send work request (or a chain of them)");
    add_fast_method(m.attr("QP"), "post_recv", qp_post_recv, "Posts a receive work request (or a chain of them)");

    py::class_<QPInitAttrEx, Object, std::shared_ptr<QPInitAttrEx>>(m, "QPInitAttrEx")
        .def(py::init([](int qp_type, py::object qp_context, py::object scq, py::object rcq, py::object srq,
                         py::object cap, int sq_sig_all, uint32_t comp_mask, py::object pd, py::object xrcd,
                         uint32_t create_flags, uint16_t max_tso_header, uint32_t source_qpn, py::object hash_conf,
                         py::object ind_table, uint64_t send_ops_flags) {
                 auto a = std::make_shared<QPInitAttrEx>();
                 copy_caps(cap, a->attr.cap);
                 if (!scq.is_none())
                     a->attr.send_cq = any_cq(scq);
                 if (!rcq.is_none())
                     a->attr.recv_cq = any_cq(rcq);
                 a->scq = scq;
                 a->rcq = rcq;
                 a->srq = srq;
                 if (!srq.is_none())
                     a->attr.srq = open_arg<SRQ>(srq, "SRQ").srq;
                 if (!xrcd.is_none())
                     a->attr.xrcd = open_arg<XRCD>(xrcd, "XRCD").xrcd;
                 a->xrcd = xrcd;
                 // (the key the configuration points to lives in its object,
                 // which the attributes keep)
                 if (!hash_conf.is_none())
                     a->attr.rx_hash_conf = arg_as<RxHashConf>(hash_conf, "RxHashConf").c_conf();
                 a->hash_conf = hash_conf;
                 if (!ind_table.is_none())
                     a->attr.rwq_ind_tbl = open_arg<RwqIndTable>(ind_table, "RwqIndTable").table;
                 a->ind_table = ind_table;
                 a->attr.qp_type = ibv_qp_type(qp_type);
                 a->attr.sq_sig_all = sq_sig_all;
                 a->attr.comp_mask = comp_mask;
                 if (!pd.is_none())
                     a->attr.pd = open_arg<PD>(pd, "PD").pd;
                 a->pd = pd;
                 a->attr.create_flags = create_flags;
                 a->attr.max_tso_header = max_tso_header;
                 a->attr.source_qpn = source_qpn;
                 a->attr.send_ops_flags = send_ops_flags;
                 a->qp_context = qp_context;
                 return a;
             }),
             py::arg("qp_type") = int(IBV_QPT_UD), py::arg("qp_context") = py::none(), py::arg("scq") = py::none(),
             py::arg("rcq") = py::none(), py::arg("srq") = py::none(), py::arg("cap") = py::none(),
             py::arg("sq_sig_all") = 0, py::arg("comp_mask") = 0, py::arg("pd") = py::none(),
             py::arg("xrcd") = py::none(), py::arg("create_flags") = 0, py::arg("max_tso_header") = 0,
             py::arg("source_qpn") = 0, py::arg("hash_conf") = py::none(), py::arg("ind_table") = py::none(),
             py::arg("send_ops_flags") = 0)
        .def_property(
            "send_cq", [](const QPInitAttrEx& a) { return a.scq; },
            [](QPInitAttrEx& a, py::object cq) {
                a.attr.send_cq = cq.is_none() ? nullptr : any_cq(cq);
                a.scq = cq;
            })
        .def_property(
            "recv_cq", [](const QPInitAttrEx& a) { return a.rcq; },
            [](QPInitAttrEx& a, py::object cq) {
                a.attr.recv_cq = cq.is_none() ? nullptr : any_cq(cq);
                a.rcq = cq;
            })
        .def_property(
            "cap",
            [](const QPInitAttrEx& a) {
                auto c = std::make_shared<QPCap>();
                c->cap = a.attr.cap;
                return c;
            },
            [](QPInitAttrEx& a, py::object c) { copy_caps(c, a.attr.cap); })
        .def_property(
            "qp_type", [](const QPInitAttrEx& a) { return int(a.attr.qp_type); },
            [](QPInitAttrEx& a, int v) { a.attr.qp_type = ibv_qp_type(v); })
        .def_property(
            "sq_sig_all", [](const QPInitAttrEx& a) { return a.attr.sq_sig_all; },
            [](QPInitAttrEx& a, int v) { a.attr.sq_sig_all = v; })
        .def_property(
            "comp_mask", [](const QPInitAttrEx& a) { return a.attr.comp_mask; },
            [](QPInitAttrEx& a, uint32_t v) { a.attr.comp_mask = v; })
        .def_property(
            "pd", [](const QPInitAttrEx& a) { return a.pd; },
            [](QPInitAttrEx& a, py::object pd) {
                a.attr.pd = open_arg<PD>(pd, "PD").pd;
                a.pd = pd;
            })
        .def_property(
            "srq", [](const QPInitAttrEx& a) { return a.srq; },
            [](QPInitAttrEx& a, py::object srq) {
                a.attr.srq = open_arg<SRQ>(srq, "SRQ").srq;
                a.srq = srq;
            })
        .def_property(
            "xrcd", [](const QPInitAttrEx& a) { return a.xrcd; },
            [](QPInitAttrEx& a, py::object x) {
                a.attr.xrcd = open_arg<XRCD>(x, "XRCD").xrcd;
                a.xrcd = x;
            })
        .def_property(
            "ind_table", [](const QPInitAttrEx& a) { return a.ind_table; },
            [](QPInitAttrEx& a, py::object t) {
                a.attr.rwq_ind_tbl = open_arg<RwqIndTable>(t, "RwqIndTable").table;
                a.ind_table = t;
            })
        .def_property(
            "create_flags", [](const QPInitAttrEx& a) { return a.attr.create_flags; },
            [](QPInitAttrEx& a, uint32_t v) { a.attr.create_flags = v; })
        .def_property(
            "max_tso_header", [](const QPInitAttrEx& a) { return a.attr.max_tso_header; },
            [](QPInitAttrEx& a, uint16_t v) { a.attr.max_tso_header = v; })
        .def_property(
            "source_qpn", [](const QPInitAttrEx& a) { return a.attr.source_qpn; },
            [](QPInitAttrEx& a, uint32_t v) { a.attr.source_qpn = v; })
        .def_property(
            "send_ops_flags", [](const QPInitAttrEx& a) { return a.attr.send_ops_flags; },
            [](QPInitAttrEx& a, uint64_t v) { a.attr.send_ops_flags = v; })
        .def_property_readonly("max_send_wr", [](const QPInitAttrEx& a) { return a.attr.cap.max_send_wr; })
        .def_property_readonly("max_recv_wr", [](const QPInitAttrEx& a) { return a.attr.cap.max_recv_wr; })
        .def_property_readonly("max_send_sge", [](const QPInitAttrEx& a) { return a.attr.cap.max_send_sge; })
        .def_property_readonly("max_recv_sge", [](const QPInitAttrEx& a) { return a.attr.cap.max_recv_sge; })
        .def_property_readonly("max_inline_data", [](const QPInitAttrEx& a) { return a.attr.cap.max_inline_data; });

    py::class_<ECE, CM, std::shared_ptr<ECE>>(m, "ECE")
        .def(py::init([](uint32_t vendor_id, uint32_t options, uint32_t comp_mask) {
                 auto e = std::make_shared<ECE>();
                 e->ece = {vendor_id, options, comp_mask};
                 return e;
             }),
             py::arg("vendor_id") = 0, py::arg("options") = 0, py::arg("comp_mask") = 0)
        .def_property(
            "vendor_id", [](const ECE& e) { return e.ece.vendor_id; }, [](ECE& e, uint32_t v) { e.ece.vendor_id = v; })
        .def_property(
            "options", [](const ECE& e) { return e.ece.options; }, [](ECE& e, uint32_t v) { e.ece.options = v; })
        .def_property(
            "comp_mask", [](const ECE& e) { return e.ece.comp_mask; }, [](ECE& e, uint32_t v) { e.ece.comp_mask = v; })
        .def("__str__", [](const ECE& e) {
            char buf[256];
            snprintf(buf, sizeof(buf), "ECE:\n%-22s: 0x%-20x\n%-22s: 0x%-20x\n%-22s: 0x%-20x\n", "Vendor ID",
                     e.ece.vendor_id, "Options", e.ece.options, "Comp Mask", e.ece.comp_mask);
            return std::string(buf);
        });

    py::class_<DataBuffer, CM, std::shared_ptr<DataBuffer>>(m, "DataBuffer")
        .def(py::init([](uintptr_t addr, size_t length) {
                 auto d = std::make_shared<DataBuffer>();
                 d->buf.addr = reinterpret_cast<void*>(addr);
                 d->buf.length = length;
                 return d;
             }),
             py::arg("addr"), py::arg("length"));

    py::class_<QPRateLimitAttr, Object, std::shared_ptr<QPRateLimitAttr>>(m, "QPRateLimitAttr")
        .def(py::init([](uint32_t rate_limit, uint32_t max_burst_sz, uint16_t typical_pkt_sz, uint32_t comp_mask) {
                 auto a = std::make_shared<QPRateLimitAttr>();
                 a->attr.rate_limit = rate_limit;
                 a->attr.max_burst_sz = max_burst_sz;
                 a->attr.typical_pkt_sz = typical_pkt_sz;
                 a->attr.comp_mask = comp_mask;
                 return a;
             }),
             py::arg("rate_limit") = 0, py::arg("max_burst_sz") = 0, py::arg("typical_pkt_sz") = 0,
             py::arg("comp_mask") = 0)
        .def_property(
            "rate_limit", [](const QPRateLimitAttr& a) { return a.attr.rate_limit; },
            [](QPRateLimitAttr& a, uint32_t v) { a.attr.rate_limit = v; })
        .def_property(
            "max_burst_sz", [](const QPRateLimitAttr& a) { return a.attr.max_burst_sz; },
            [](QPRateLimitAttr& a, uint32_t v) { a.attr.max_burst_sz = v; })
        .def_property(
            "typical_pkt_sz", [](const QPRateLimitAttr& a) { return a.attr.typical_pkt_sz; },
            [](QPRateLimitAttr& a, uint16_t v) { a.attr.typical_pkt_sz = v; })
        .def_property(
            "comp_mask", [](const QPRateLimitAttr& a) { return a.attr.comp_mask; },
            [](QPRateLimitAttr& a, uint32_t v) { a.attr.comp_mask = v; });

    py::class_<QPAttachCompCntrAttr, Object, std::shared_ptr<QPAttachCompCntrAttr>>(m, "QPAttachCompCntrAttr")
        .def(py::init([](uint32_t op_mask) {
                 auto a = std::make_shared<QPAttachCompCntrAttr>();
                 a->attr.op_mask = op_mask;
                 return a;
             }),
             py::arg("op_mask") = 0)
        .def_property_readonly("op_mask", [](const QPAttachCompCntrAttr& a) { return a.attr.op_mask; });

    // The ibv_wr_* interface of an extended QP; each builder acts on the
    // work request begun by wr_start and finished by wr_complete.
    py::class_<QPEx, QP, std::shared_ptr<QPEx>>(m, "QPEx")
        .def(py::init(&make_qp<QPEx>), py::arg("creator"), py::arg("init_attr"), py::arg("qp_attr") = py::none())
        .def_property(
            "comp_mask", [](py::handle self) { return qpx_of(self)->comp_mask; },
            [](py::handle self, uint64_t v) { qpx_of(self)->comp_mask = v; })
        .def_property(
            "wr_id", [](py::handle self) { return qpx_of(self)->wr_id; },
            [](py::handle self, uint64_t v) { qpx_of(self)->wr_id = v; })
        .def_property(
            "wr_flags", [](py::handle self) { return qpx_of(self)->wr_flags; },
            [](py::handle self, unsigned v) { qpx_of(self)->wr_flags = v; })
        .def_property_readonly(
            "ind_table", [](py::handle self) { return qp_of(self).ind_table ? qp_of(self).ind_table : py::none(); })
        .def("wr_start", [](py::handle self) { ibv_wr_start(qpx_of(self)); })
        .def("wr_complete",
             [](py::handle self) {
                 if (int rc = ibv_wr_complete(qpx_of(self)))
                     raise_rdma("ibv_wr_complete failed.", rc);
             })
        .def("wr_abort", [](py::handle self) { ibv_wr_abort(qpx_of(self)); })
        .def("wr_send", [](py::handle self) { ibv_wr_send(qpx_of(self)); })
        .def(
            "wr_send_imm", [](py::handle self, uint32_t data) { ibv_wr_send_imm(qpx_of(self), htobe32(data)); },
            py::arg("data"))
        .def(
            "wr_send_inv", [](py::handle self, uint32_t rkey) { ibv_wr_send_inv(qpx_of(self), rkey); },
            py::arg("invalidate_rkey"))
        .def(
            "wr_send_tso",
            [](py::handle self, uintptr_t hdr, uint16_t hdr_sz, uint16_t mss) {
                ibv_wr_send_tso(qpx_of(self), reinterpret_cast<void*>(hdr), hdr_sz, mss);
            },
            py::arg("hdr"), py::arg("hdr_sz"), py::arg("mss"))
        .def(
            "wr_rdma_write",
            [](py::handle self, uint32_t rkey, uint64_t addr) { ibv_wr_rdma_write(qpx_of(self), rkey, addr); },
            py::arg("rkey"), py::arg("remote_addr"))
        .def(
            "wr_rdma_write_imm",
            [](py::handle self, uint32_t rkey, uint64_t addr, uint32_t data) {
                ibv_wr_rdma_write_imm(qpx_of(self), rkey, addr, htobe32(data));
            },
            py::arg("rkey"), py::arg("remote_addr"), py::arg("data"))
        .def(
            "wr_rdma_read",
            [](py::handle self, uint32_t rkey, uint64_t addr) { ibv_wr_rdma_read(qpx_of(self), rkey, addr); },
            py::arg("rkey"), py::arg("remote_addr"))
        .def(
            "wr_atomic_cmp_swp",
            [](py::handle self, uint32_t rkey, uint64_t addr, uint64_t compare, uint64_t swap) {
                ibv_wr_atomic_cmp_swp(qpx_of(self), rkey, addr, compare, swap);
            },
            py::arg("rkey"), py::arg("remote_addr"), py::arg("compare"), py::arg("swap"))
        .def(
            "wr_atomic_fetch_add",
            [](py::handle self, uint32_t rkey, uint64_t addr, uint64_t add) {
                ibv_wr_atomic_fetch_add(qpx_of(self), rkey, addr, add);
            },
            py::arg("rkey"), py::arg("remote_addr"), py::arg("add"))
        .def(
            "wr_atomic_write",
            [](py::handle self, uint32_t rkey, uint64_t addr, py::bytes atomic_wr) {
                std::string v = atomic_wr;
                if (v.size() != 8)
                    raise_user("An atomic write carries 8 bytes");
                ibv_wr_atomic_write(qpx_of(self), rkey, addr, v.data());
            },
            py::arg("rkey"), py::arg("remote_addr"), py::arg("atomic_wr"))
        .def(
            "wr_flush",
            [](py::handle self, uint32_t rkey, uint64_t addr, size_t len, uint8_t type, uint8_t level) {
                ibv_wr_flush(qpx_of(self), rkey, addr, len, type, level);
            },
            py::arg("rkey"), py::arg("remote_addr"), py::arg("length"), py::arg("ptype"), py::arg("level"))
        .def(
            "wr_local_inv", [](py::handle self, uint32_t rkey) { ibv_wr_local_inv(qpx_of(self), rkey); },
            py::arg("invalidate_rkey"))
        .def(
            "wr_set_ud_addr",
            [](py::handle self, py::object ah, uint32_t qpn, uint32_t qkey) {
                ibv_wr_set_ud_addr(qpx_of(self), open_arg<AH>(ah, "AH").ah, qpn, qkey);
            },
            py::arg("ah"), py::arg("remote_qpn"), py::arg("remote_rkey"))
        .def(
            "wr_set_xrc_srqn", [](py::handle self, uint32_t srqn) { ibv_wr_set_xrc_srqn(qpx_of(self), srqn); },
            py::arg("remote_srqn"))
        .def(
            "wr_set_sge",
            [](py::handle self, py::object sge) {
                const ibv_sge& s = arg_as<SGE>(sge, "SGE").sge;
                ibv_wr_set_sge(qpx_of(self), s.lkey, s.addr, s.length);
            },
            py::arg("sge"))
        .def(
            "wr_set_sge_list",
            [](py::handle self, size_t num_sge, py::sequence sg_list) {
                if (num_sge > sg_list.size())
                    raise_user("num_sge is larger than the SGE list");
                std::vector<ibv_sge> v;
                for (size_t i = 0; i < num_sge; i++)
                    v.push_back(arg_as<SGE>(sg_list[i], "SGE").sge);
                ibv_wr_set_sge_list(qpx_of(self), v.size(), v.data());
            },
            py::arg("num_sge"), py::arg("sg_list"))
        .def(
            "wr_set_inline_data",
            [](py::handle self, uintptr_t addr, size_t length) {
                ibv_wr_set_inline_data(qpx_of(self), reinterpret_cast<void*>(addr), length);
            },
            py::arg("addr"), py::arg("length"))
        .def(
            "wr_set_inline_data_list",
            [](py::handle self, size_t num_buf, py::sequence buf_list) {
                if (num_buf > buf_list.size())
                    raise_user("num_buf is larger than the buffer list");
                std::vector<ibv_data_buf> v;
                for (size_t i = 0; i < num_buf; i++)
                    v.push_back(arg_as<DataBuffer>(buf_list[i], "DataBuffer").buf);
                ibv_wr_set_inline_data_list(qpx_of(self), v.size(), v.data());
            },
            py::arg("num_buf"), py::arg("buf_list"));

    // Copies a QPCap's five fields into QPInitAttr, QPInitAttrEx or QPAttr.
    m.def(
        "_copy_caps",
        [](py::object src, py::object dst) {
            if (src.is_none())
                return;
            if (py::isinstance<QPInitAttr>(dst))
                copy_caps(src, dst.cast<QPInitAttr&>().attr.cap);
            else if (py::isinstance<QPInitAttrEx>(dst))
                copy_caps(src, dst.cast<QPInitAttrEx&>().attr.cap);
            else
                copy_caps(src, arg_as<QPAttr>(dst, "QPAttr").attr.cap);
        },
        py::arg("src"), py::arg("dst"));
}
