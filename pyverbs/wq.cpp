// pyverbs.wq: receive work queues, RSS indirection tables over them and the
// hash configuration of an RSS QP.
#include "wq.h"

#include <algorithm>
#include <vector>

using namespace pyverbs;

namespace {

// ibv_wq_init_attr, with the Python objects its pointers come from.
struct WQInitAttr : Object {
    ibv_wq_init_attr attr{};
    py::object context, pd, cq;
};

struct WQAttr : Object {
    ibv_wq_attr attr{};
};

// The WQs of a table to be; the C array is built when the table is.
struct RwqIndTableInitAttr : Object {
    uint32_t log_size = 0;
    uint32_t comp_mask = 0;
    py::object wqs;
};

WQ& wq_of(py::handle h) { return open_arg<WQ>(h, "WQ"); }

void set_wq_pd(WQInitAttr& a, py::object pd) {
    a.attr.pd = pd.is_none() ? nullptr : open_arg<PD>(pd, "PD").pd;
    a.pd = pd;
}

void set_wq_cq(WQInitAttr& a, py::object cq) {
    if (cq.is_none())
        a.attr.cq = nullptr;
    else if (py::isinstance<CQ>(cq) || py::isinstance<CQEX>(cq))
        a.attr.cq = any_cq(cq);
    else
        arg_as<CQ>(cq, "CQ");  // the TypeError
    a.cq = cq;
}

[[noreturn]] void overflow(const char* msg) {
    PyErr_SetString(PyExc_OverflowError, msg);
    throw py::error_already_set();
}

// A byte of a hash key: Python int semantics, as a C uint8_t takes it.
uint8_t key_byte(py::handle v) {
    long long b = py::int_(py::reinterpret_borrow<py::object>(v)).cast<long long>();
    if (b < 0)
        overflow("can't convert negative value to uint8_t");
    if (b > 0xff)
        overflow("value too large to convert to uint8_t");
    return uint8_t(b);
}

void set_hash_key(RxHashConf& c, py::handle vals) {
    std::vector<uint8_t> key;
    for (py::handle v : vals)
        key.push_back(key_byte(v));
    if (key.size() > 0xff)
        raise_user("The RX hash key is longer than 255 bytes");
    c.key = std::move(key);
    c.key_len = uint8_t(c.key.size());
}

// `obj` (a pyverbs `cls_name` object) is closed before `self` is: what the
// reference's add_ref does for a table on its WQs and a QP on its table.
void add_ref(py::handle self, py::handle obj, bool ok) {
    if (!ok)
        raise_error("Unrecognized object type");
    CM& me = self.cast<CM&>();
    obj.cast<CM&>().depend_on(self, me);
}

}  // namespace

PYBIND11_MODULE(wq, m) {
    import_deps({"pyverbs.base", "pyverbs.device", "pyverbs.pd", "pyverbs.cq", "pyverbs.wr"});
    m.doc() = "Receive work queues and RSS indirection tables";

    py::class_<WQInitAttr, Object, std::shared_ptr<WQInitAttr>>(m, "WQInitAttr")
        .def(py::init([](py::object wq_context, py::object wq_pd, py::object wq_cq, int wq_type, uint32_t max_wr,
                         uint32_t max_sge, uint32_t comp_mask, uint32_t create_flags) {
                 auto a = std::make_shared<WQInitAttr>();
                 // The context is an opaque pointer for C: the object's own
                 // address, kept alive by the attribute (None: NULL).
                 a->context = wq_context;
                 a->attr.wq_context = wq_context.is_none() ? nullptr : wq_context.ptr();
                 a->attr.wq_type = ibv_wq_type(wq_type);
                 a->attr.max_wr = max_wr;
                 a->attr.max_sge = max_sge;
                 set_wq_pd(*a, wq_pd);
                 set_wq_cq(*a, wq_cq);
                 a->attr.comp_mask = comp_mask;
                 a->attr.create_flags = create_flags;
                 return a;
             }),
             py::arg("wq_context") = py::none(), py::arg("wq_pd") = py::none(), py::arg("wq_cq") = py::none(),
             py::arg("wq_type") = int(IBV_WQT_RQ), py::arg("max_wr") = 100, py::arg("max_sge") = 1,
             py::arg("comp_mask") = 0, py::arg("create_flags") = 0)
        .def_property(
            "wq_type", [](const WQInitAttr& a) { return int(a.attr.wq_type); },
            [](WQInitAttr& a, int v) { a.attr.wq_type = ibv_wq_type(v); })
        .def_property(
            "pd", [](const WQInitAttr& a) { return a.pd; },
            [](WQInitAttr& a, py::object pd) {
                open_arg<PD>(pd, "PD");
                set_wq_pd(a, pd);
            })
        .def_property(
            "cq", [](const WQInitAttr& a) { return a.cq; },
            [](WQInitAttr& a, py::object cq) {
                if (cq.is_none())
                    arg_as<CQ>(cq, "CQ");
                set_wq_cq(a, cq);
            });

    py::class_<WQAttr, Object, std::shared_ptr<WQAttr>>(m, "WQAttr")
        .def(py::init([](uint32_t attr_mask, int wq_state, int curr_wq_state, uint32_t flags, uint32_t flags_mask) {
                 auto a = std::make_shared<WQAttr>();
                 a->attr.attr_mask = attr_mask;
                 a->attr.wq_state = ibv_wq_state(wq_state);
                 a->attr.curr_wq_state = ibv_wq_state(curr_wq_state);
                 a->attr.flags = flags;
                 a->attr.flags_mask = flags_mask;
                 return a;
             }),
             py::arg("attr_mask") = 0, py::arg("wq_state") = 0, py::arg("curr_wq_state") = 0, py::arg("flags") = 0,
             py::arg("flags_mask") = 0)
        .def_property(
            "wq_state", [](const WQAttr& a) { return int(a.attr.wq_state); },
            [](WQAttr& a, int v) { a.attr.wq_state = ibv_wq_state(v); })
        .def_property(
            "attr_mask", [](const WQAttr& a) { return a.attr.attr_mask; },
            [](WQAttr& a, uint32_t v) { a.attr.attr_mask = v; })
        .def_property(
            "curr_wq_state", [](const WQAttr& a) { return int(a.attr.curr_wq_state); },
            [](WQAttr& a, int v) { a.attr.curr_wq_state = ibv_wq_state(v); })
        .def_property(
            "flags", [](const WQAttr& a) { return a.attr.flags; }, [](WQAttr& a, uint32_t v) { a.attr.flags = v; })
        .def_property(
            "flags_mask", [](const WQAttr& a) { return a.attr.flags_mask; },
            [](WQAttr& a, uint32_t v) { a.attr.flags_mask = v; });

    py::class_<WQ, CM, std::shared_ptr<WQ>>(m, "WQ")
        .def(py::init([](py::object ctx_obj, py::object attr_obj) {
                 Context& ctx = open_arg<Context>(ctx_obj, "Context");
                 WQInitAttr& a = arg_as<WQInitAttr>(attr_obj, "WQInitAttr");
                 // (a WQ without either would make the provider follow a
                 // NULL pointer)
                 if (!a.pd || a.pd.is_none() || !a.cq || a.cq.is_none())
                     raise_user("A WQ needs a PD and a CQ (WQInitAttr's wq_pd and wq_cq)");
                 // Both may have been closed since they were given.
                 set_wq_pd(a, a.pd);
                 set_wq_cq(a, a.cq);
                 ibv_wq_init_attr attr = a.attr;
                 auto wq = std::make_shared<WQ>();
                 errno = 0;
                 wq->wq = ibv_create_wq(ctx.ctx, &attr);
                 if (!wq->wq)
                     raise_rdma_errno("Failed to create WQ");
                 // What the device granted, as ibv_create_wq reports it.
                 a.attr.max_wr = attr.max_wr;
                 a.attr.max_sge = attr.max_sge;
                 wq->context = ctx_obj;
                 wq->pd = a.pd;
                 wq->cq = a.cq;
                 wq->adopt(ctx_obj, ctx);
                 wq->depend_on(a.pd, a.pd.cast<CM&>());
                 wq->depend_on(a.cq, a.cq.cast<CM&>());
                 return wq;
             }),
             py::arg("ctx"), py::arg("attr"))
        .def(
            "add_ref",
            [](py::handle self, py::handle obj) {
                wq_of(self);
                add_ref(self, obj, py::isinstance<RwqIndTable>(obj));
            },
            py::arg("obj"))
        .def(
            "modify",
            [](py::handle self, py::object wq_attr) {
                ibv_wq_attr attr = arg_as<WQAttr>(wq_attr, "WQAttr").attr;
                if (int rc = ibv_modify_wq(wq_of(self).wq, &attr))
                    raise_rdma("Failed to modify WQ", rc);
            },
            py::arg("wq_attr"))
        .def(
            "post_recv",
            [](py::handle self, py::object wr, py::object bad_wr) {
                ibv_recv_wr* bad = nullptr;
                WQ& wq = wq_of(self);
                if (int rc = ibv_post_wq_recv(wq.wq, link_chain(arg_as<RecvWR>(wr, "RecvWR")), &bad)) {
                    if (bad && !bad_wr.is_none())
                        arg_as<RecvWR>(bad_wr, "RecvWR").wr.wr_id = bad->wr_id;
                    raise_rdma("Failed to post recv", rc);
                }
            },
            py::arg("wr"), py::arg("bad_wr") = py::none())
        .def_property_readonly("wqn", [](py::handle self) { return wq_of(self).wq->wq_num; });

    py::class_<RwqIndTableInitAttr, Object, std::shared_ptr<RwqIndTableInitAttr>>(m, "RwqIndTableInitAttr")
        .def(py::init([](long long log_ind_tbl_size, py::object wqs_list, uint32_t comp_mask) {
                 if (log_ind_tbl_size <= 0)
                     raise_user("Invalid indirection table size. Log size must be > 0");
                 size_t n = py::len(wqs_list);
                 if (log_ind_tbl_size < 63 && (1ull << log_ind_tbl_size) < n)
                     raise_user("Requested table size (" + std::to_string(1ull << log_ind_tbl_size) +
                                ") is smaller than the number of wqs (" + std::to_string(n) + ")");
                 if (log_ind_tbl_size > 0xffffffffll)
                     throw py::value_error("log_ind_tbl_size does not fit in 32 bits");
                 for (py::handle w : wqs_list)
                     arg_as<WQ>(w, "WQ");
                 auto a = std::make_shared<RwqIndTableInitAttr>();
                 a->log_size = uint32_t(log_ind_tbl_size);
                 a->wqs = wqs_list;
                 a->comp_mask = comp_mask;
                 return a;
             }),
             py::arg("log_ind_tbl_size") = 5, py::arg("wqs_list") = py::none(), py::arg("comp_mask") = 0);

    py::class_<RwqIndTable, CM, std::shared_ptr<RwqIndTable>>(m, "RwqIndTable")
        .def(py::init([](py::object ctx_obj, py::object attr_obj) {
                 Context& ctx = open_arg<Context>(ctx_obj, "Context");
                 RwqIndTableInitAttr& a = arg_as<RwqIndTableInitAttr>(attr_obj, "RwqIndTableInitAttr");
                 std::vector<py::object> wqs;
                 for (py::handle w : a.wqs)
                     wqs.push_back(py::reinterpret_borrow<py::object>(w));
                 if (wqs.empty())
                     raise_user("An indirection table needs at least one WQ");
                 // The provider reads 1 << log_ind_tbl_size entries: the
                 // WQs given fill them in turn.
                 if (a.log_size > 24)
                     raise_user("Requested table size (2^" + std::to_string(a.log_size) + ") is too large");
                 std::vector<ibv_wq*> tbl(size_t(1) << a.log_size);
                 for (size_t i = 0; i < tbl.size(); i++)
                     tbl[i] = wq_of(wqs[i % wqs.size()]).wq;
                 ibv_rwq_ind_table_init_attr attr{};
                 attr.log_ind_tbl_size = a.log_size;
                 attr.ind_tbl = tbl.data();
                 attr.comp_mask = a.comp_mask;
                 auto t = std::make_shared<RwqIndTable>();
                 errno = 0;
                 t->table = ibv_create_rwq_ind_table(ctx.ctx, &attr);
                 if (!t->table)
                     raise_rdma_errno("Failed to create RwqIndTable");
                 t->context = ctx_obj;
                 t->wqs = py::list(a.wqs);
                 t->adopt(ctx_obj, ctx);
                 std::vector<PyObject*> seen;
                 for (auto& w : wqs) {
                     if (std::find(seen.begin(), seen.end(), w.ptr()) != seen.end())
                         continue;
                     seen.push_back(w.ptr());
                     t->depend_on(w, w.cast<CM&>());
                 }
                 return t;
             }),
             py::arg("ctx"), py::arg("attr"))
        .def(
            "add_ref",
            [](py::handle self, py::handle obj) {
                open_arg<RwqIndTable>(self, "RwqIndTable");
                py::object qp_cls = py::module_::import("pyverbs.qp").attr("QP");
                add_ref(self, obj, py::isinstance(obj, qp_cls));
            },
            py::arg("obj"))
        .def_property_readonly("wqs", [](const RwqIndTable& t) { return t.wqs; });

    py::class_<RxHashConf, Object, std::shared_ptr<RxHashConf>>(m, "RxHashConf")
        .def(py::init([](uint8_t rx_hash_function, uint8_t rx_hash_key_len, py::object rx_hash_key,
                         uint64_t rx_hash_fields_mask) {
                 auto c = std::make_shared<RxHashConf>();
                 if (py::bool_(rx_hash_key)) {
                     if (size_t(rx_hash_key_len) != py::len(rx_hash_key))
                         raise_user("Length of rx_hash_key not equal to rx_hash_key_len");
                     set_hash_key(*c, rx_hash_key);
                 }
                 c->function = rx_hash_function;
                 c->key_len = rx_hash_key_len;
                 c->fields_mask = rx_hash_fields_mask;
                 return c;
             }),
             py::arg("rx_hash_function") = 0, py::arg("rx_hash_key_len") = 0, py::arg("rx_hash_key") = py::none(),
             py::arg("rx_hash_fields_mask") = 0)
        .def_property(
            "rx_hash_function", [](const RxHashConf& c) { return c.function; },
            [](RxHashConf& c, uint8_t v) { c.function = v; })
        .def_property(
            "rx_hash_key_len", [](const RxHashConf& c) { return c.key_len; },
            [](RxHashConf& c, long long v) {
                if (v <= 0)
                    raise_user("Invalid rx_hash_key_len. Must be greater then 0");
                if (v > 0xff)
                    overflow("value too large to convert to uint8_t");
                c.key_len = uint8_t(v);
            })
        .def_property(
            "rx_hash_fields_mask", [](const RxHashConf& c) { return c.fields_mask; },
            [](RxHashConf& c, uint64_t v) { c.fields_mask = v; })
        // The key's bytes (the reference's getter answers the fields mask
        // instead, a slip this one does not copy).
        .def_property(
            "rx_hash_key",
            [](const RxHashConf& c) {
                py::list l;
                for (uint8_t b : c.key)
                    l.append(int(b));
                return l;
            },
            [](RxHashConf& c, py::object vals) { set_hash_key(c, vals); });
}
