// pyverbs.qp: QP capabilities and attributes, and queue pairs with their
// state transitions and posting.
#include "objects.h"

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

class QP : public CM {
public:
    ~QP() override { close_quietly(); }
    ibv_qp* qp = nullptr;
    py::object pd, scq, rcq, srq;

protected:
    void release() override {
        if (!qp)
            return;
        ibv_qp* q = qp;
        qp = nullptr;
        if (int rc = ibv_destroy_qp(q)) {
            qp = q;
            raise_rdma("Failed to destroy QP", rc);
        }
    }
};

QP& qp_of(py::handle h) { return open_arg<QP>(h, "QP"); }

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

std::shared_ptr<QP> make_qp(py::object creator, py::object init_attr, py::object qp_attr) {
    PD& pd = open_arg<PD>(creator, "PD");
    QPInitAttr& ia = arg_as<QPInitAttr>(init_attr, "QPInitAttr");
    ibv_qp_init_attr attr = ia.attr;
    for (py::object* cq : {&ia.scq, &ia.rcq})
        if (*cq && !cq->is_none())
            any_cq(*cq);  // still open
    if (ia.srq && !ia.srq.is_none())
        attr.srq = open_arg<SRQ>(ia.srq, "SRQ").srq;
    auto qp = std::make_shared<QP>();
    qp->qp = ibv_create_qp(pd.pd, &attr);
    if (!qp->qp)
        raise_rdma_errno("Failed to create QP");
    // What the device granted is reported back, as ibv_create_qp does.
    ia.attr.cap = attr.cap;
    qp->pd = creator;
    qp->adopt(creator, pd);
    // The CQs (and SRQ) close after the QP that reports to them.
    for (py::object* dep : {&ia.scq, &ia.rcq, &ia.srq})
        if (*dep && !dep->is_none())
            qp->depend_on(*dep, dep->cast<CM&>());
    qp->scq = ia.scq;
    qp->rcq = ia.rcq;
    qp->srq = ia.srq;
    if (!qp_attr.is_none()) {
        QPAttr& a = arg_as<QPAttr>(qp_attr, "QPAttr");
        if (attr.qp_type == IBV_QPT_UD || attr.qp_type == IBV_QPT_RAW_PACKET)
            to_rts(*qp, a);
        else
            to_init(*qp, a);
    }
    return qp;
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
    import_deps({"pyverbs.base", "pyverbs.pd", "pyverbs.cq", "pyverbs.addr", "pyverbs.wr"});
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
        .def(py::init(&make_qp), py::arg("creator"), py::arg("init_attr"), py::arg("qp_attr") = py::none())
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
        .def(
            "post_recv",
            [](py::handle self, py::object wr, py::object bad_wr) {
                QP& qp = qp_of(self);
                ibv_recv_wr* bad = nullptr;
                if (int rc = ibv_post_recv(qp.qp, link_chain(arg_as<RecvWR>(wr, "RecvWR")), &bad)) {
                    if (bad && !bad_wr.is_none())
                        arg_as<RecvWR>(bad_wr, "RecvWR").wr.wr_id = bad->wr_id;
                    raise_rdma("Failed to post recv", rc);
                }
            },
            py::arg("wr"), py::arg("bad_wr") = py::none())
        .def(
            "post_send",
            [](py::handle self, py::object wr, py::object bad_wr) {
                QP& qp = qp_of(self);
                ibv_send_wr* bad = nullptr;
                if (int rc = ibv_post_send(qp.qp, link_chain(arg_as<SendWR>(wr, "SendWR")), &bad)) {
                    if (bad && !bad_wr.is_none())
                        arg_as<SendWR>(bad_wr, "SendWR").wr.wr_id = bad->wr_id;
                    raise_rdma("Failed to post send", rc);
                }
            },
            py::arg("wr"), py::arg("bad_wr") = py::none())
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
}
