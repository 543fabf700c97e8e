// pyverbs.cmid: librdmacm's connection manager. An AddrInfo names the two
// ends (rdma_getaddrinfo), a CMID is an rdma_cm_id with its QP, used
// synchronously (made from an AddrInfo: rdma_create_ep, get_request) or
// through the events of a CMEventChannel (CMEvent); ConnParam, UDParam and
// JoinMCAttrEx are the parameters of connecting, of a UD peer and of a
// multicast join.
//
// The calls that may wait (resolution, connect, accept, requests, events,
// completions, destruction) leave the GIL to other threads, so both ends of
// a connection can run in one process.
#include "cmid.h"
#include "mr.h"

#include <algorithm>
#include <vector>

using namespace pyverbs;

namespace {

// PyverbsRDMAErrno(msg): the errno as the call left it, even 0 (as
// rdma_getaddrinfo's name-service failures leave it).
[[noreturn]] void raise_errno(const std::string& msg) { raise_rdma(msg, errno); }

// Runs `f` (a C call returning an int) with the GIL released; errno stays
// what the call set.
template <class F>
int unlocked(F&& f) {
    int rc, err;
    {
        py::gil_scoped_release nogil;
        rc = f();
        err = errno;
    }
    errno = err;
    return rc;
}

// The same on a CMID, which a close from another thread then refuses.
template <class F>
int unlocked(CMID& c, F&& f) {
    c.blocking++;
    int rc = unlocked(f);
    c.blocking--;
    return rc;
}

// The reference's typed arguments: TypeError with Cython's wording.
[[noreturn]] void bad_arg(const char* arg, const char* expected, py::handle got) {
    throw py::type_error(std::string("Argument '") + arg + "' has incorrect type (expected " + expected + ", got " +
                         Py_TYPE(got.ptr())->tp_name + ")");
}
template <class T>
T* typed_or_none(py::handle obj, const char* arg, const char* expected) {
    if (obj.is_none())
        return nullptr;
    T* t = cpp_ptr<T>(obj);
    if (!t)
        bad_arg(arg, expected, obj);
    return t;
}
template <class T>
T& typed(py::handle obj, const char* arg, const char* expected) {
    T* t = typed_or_none<T>(obj, arg, expected);
    if (!t)
        bad_arg(arg, expected, obj);
    return *t;
}
// A class of another module known here by its Python side only.
void check_instance(py::handle obj, const char* mod, const char* cls, const char* arg, bool none_ok) {
    if (none_ok && obj.is_none())
        return;
    if (!py::isinstance(obj, py::module_::import(mod).attr(cls)))
        bad_arg(arg, (std::string(mod) + "." + cls).c_str(), obj);
}

// Integers as Cython converts them to C fields (OverflowError as its).
unsigned long long as_unsigned(py::handle v, unsigned long long max, const char* ctype) {
    py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()));
    if (!i)
        throw py::error_already_set();
    int neg = PyObject_RichCompareBool(i.ptr(), py::int_(0).ptr(), Py_LT);
    if (neg < 0)
        throw py::error_already_set();
    if (neg) {
        PyErr_Format(PyExc_OverflowError, "can't convert negative value to %s", ctype);
        throw py::error_already_set();
    }
    unsigned long long u = PyLong_AsUnsignedLongLong(i.ptr());
    if ((u == ~0ULL && PyErr_Occurred()) || u > max) {
        PyErr_Clear();
        PyErr_Format(PyExc_OverflowError, "value too large to convert to %s", ctype);
        throw py::error_already_set();
    }
    return u;
}
uint8_t as_u8(py::handle v) { return uint8_t(as_unsigned(v, 0xff, "uint8_t")); }
uint32_t as_u32(py::handle v) { return uint32_t(as_unsigned(v, 0xffffffffu, "uint32_t")); }

// A node or service argument: str (as UTF-8), bytes or bytearray.
std::string c_string(py::handle v) {
    if (PyUnicode_Check(v.ptr()))
        return py::reinterpret_borrow<py::str>(v).cast<std::string>();
    if (PyBytes_Check(v.ptr()) || PyByteArray_Check(v.ptr())) {
        std::string_view b = byte_view(v);
        return std::string(b);
    }
    throw py::type_error(std::string("expected bytes, ") + Py_TYPE(v.ptr())->tp_name + " found");
}

// pyverbs.cmid.AddrInfo: an rdma_addrinfo list.
struct AddrInfo : Object {
    rdma_addrinfo* ai = nullptr;

    ~AddrInfo() override { close(); }
    void close() {
        if (ai)
            rdma_freeaddrinfo(std::exchange(ai, nullptr));
    }
    rdma_addrinfo* open() const {
        if (!ai)
            raise_user("AddrInfo is closed");
        return ai;
    }
};

struct CMEvent;

// pyverbs.cmid.CMEventChannel. It closes the CMIDs made on it and
// acknowledges its events before it goes (librdmacm frees the channel
// under them otherwise).
struct CMEventChannel : Object {
    rdma_event_channel* ch = nullptr;
    std::vector<std::weak_ptr<CMID>> ids;
    std::vector<std::weak_ptr<CMEvent>> events;
    int blocking = 0;  // rdma_get_cm_event calls in progress

    ~CMEventChannel() override {
        try {
            close();
        } catch (py::error_already_set& e) {
            e.discard_as_unraisable("CMEventChannel.__del__");
        } catch (...) {}
    }
    void close();
    // Acknowledges the events still held about `id` (rdma_destroy_id waits
    // for them).
    void ack_events_of(rdma_cm_id* id);
    rdma_event_channel* open() const {
        if (!ch)
            raise_user("CMEventChannel is closed");
        return ch;
    }
};

// pyverbs.cmid.CMEvent: an event got from a channel, until acknowledged.
struct CMEvent : Object {
    rdma_cm_event* event = nullptr;
    py::object channel;  // the channel outlives its unacknowledged events

    ~CMEvent() override {
        if (event)
            rdma_ack_cm_event(std::exchange(event, nullptr));
    }
    std::string str() const { return event ? rdma_event_str(event->event) : ""; }
    void ack() {
        std::string what = str();
        if (rdma_ack_cm_event(event))
            raise_errno("Failed to Acknowledge Event - " + what);
        event = nullptr;
    }
    rdma_cm_event* open() const {
        if (!event)
            raise_user("CMEvent is closed (acknowledged)");
        return event;
    }
};

void CMEventChannel::close() {
    if (!ch)
        return;
    if (blocking)
        raise_user("CMEventChannel is in use by a call of another thread");
    auto mine = std::move(ids);
    ids.clear();
    for (auto it = mine.rbegin(); it != mine.rend(); ++it)
        if (auto c = it->lock())
            c->close();
    for (auto& w : events)
        if (auto e = w.lock(); e && e->event)
            rdma_ack_cm_event(std::exchange(e->event, nullptr));
    events.clear();
    rdma_destroy_event_channel(std::exchange(ch, nullptr));
}

void CMEventChannel::ack_events_of(rdma_cm_id* id) {
    for (auto& w : events)
        if (auto e = w.lock(); e && e->event && (e->event->id == id || e->event->listen_id == id))
            rdma_ack_cm_event(std::exchange(e->event, nullptr));
}

// Frees a CMID's id: its views first (with what was made on them), then
// the id (with its QP and CQs).
void destroy_cmid(CMID& c) {
    if (!c.id)
        return;
    if (c.blocking)
        raise_user("The CMID is in use by a call of another thread");
    if (auto* v = dynamic_cast<CMPD*>(c.pd.get()))
        v->close();
    if (auto* v = dynamic_cast<CMContext*>(c.ctx.get()))
        v->close();
    rdma_cm_id* id = c.id;
    if (c.event_channel.is_none()) {
        unlocked([&] {
            rdma_destroy_ep(id);
            return 0;
        });
    } else {
        if (auto* ch = cpp_ptr<CMEventChannel>(c.event_channel))
            ch->ack_events_of(id);
        if (id->qp)
            rdma_destroy_qp(id);
        if (unlocked([&] { return rdma_destroy_id(id); }))
            raise_errno("Failed to close CMID");
    }
    c.id = nullptr;
}

// pyverbs.cmid.ConnParam: rdma_conn_param with a private data buffer of
// data_len bytes, of which set_private_data fills the first ones.
struct ConnParam : Object {
    rdma_conn_param param{};
    std::vector<uint8_t> data;
    size_t data_set = 0;

    rdma_conn_param get() const {
        rdma_conn_param p = param;
        p.private_data = data_set ? data.data() : nullptr;
        p.private_data_len = uint8_t(data_set);
        return p;
    }
};

// pyverbs.cmid.JoinMCAttrEx: the group is the AddrInfo's source address,
// looked up when joining (a closed AddrInfo is refused then).
struct JoinMCAttrEx : Object {
    rdma_cm_join_mc_attr_ex attr{};
    py::object addr;
};

// pyverbs.cmid.UDParam: a UD peer as an event gave it.
struct UDParam : Object {
    rdma_ud_param ud{};
};

// An address of an AddrInfo, which must have it (EINVAL from the call
// otherwise, as librdmacm gives for a missing address).
sockaddr* addr_of(sockaddr* a, const char* what) {
    if (!a)
        raise_rdma(what, EINVAL);
    return a;
}

py::object qp_module() { return py::module_::import("pyverbs.qp"); }

// A QPInitAttr (pyverbs.qp's) as ibv_qp_init_attr.
ibv_qp_init_attr qp_init_of(py::handle a) {
    ibv_qp_init_attr r{};
    r.qp_type = ibv_qp_type(a.attr("qp_type").cast<int>());
    r.sq_sig_all = a.attr("sq_sig_all").cast<int>();
    py::object cap = a.attr("cap");
    r.cap.max_send_wr = cap.attr("max_send_wr").cast<uint32_t>();
    r.cap.max_recv_wr = cap.attr("max_recv_wr").cast<uint32_t>();
    r.cap.max_send_sge = cap.attr("max_send_sge").cast<uint32_t>();
    r.cap.max_recv_sge = cap.attr("max_recv_sge").cast<uint32_t>();
    r.cap.max_inline_data = cap.attr("max_inline_data").cast<uint32_t>();
    if (py::object cq = a.attr("send_cq"); !cq.is_none())
        r.send_cq = any_cq(cq);
    if (py::object cq = a.attr("recv_cq"); !cq.is_none())
        r.recv_cq = any_cq(cq);
    if (py::object srq = a.attr("srq"); !srq.is_none())
        r.srq = open_arg<SRQ>(srq, "SRQ").srq;
    return r;
}

py::object qp_cap_object(const ibv_qp_cap& c) {
    return qp_module().attr("QPCap")(py::arg("max_send_wr") = c.max_send_wr, py::arg("max_recv_wr") = c.max_recv_wr,
                                     py::arg("max_send_sge") = c.max_send_sge, py::arg("max_recv_sge") = c.max_recv_sge,
                                     py::arg("max_inline_data") = c.max_inline_data);
}

// A QP the CMID makes with the caller's CQs and SRQ: they stay open while
// it does.
void depend_on_queues(CMID& c, py::handle init) {
    for (const char* name : {"send_cq", "recv_cq", "srq"}) {
        py::object q = init.attr(name);
        if (!q.is_none())
            if (CM* dep = cpp_ptr<CM>(q))
                c.depend_on(q, *dep);
    }
}

py::object ah_attr_object(const ibv_ah_attr& a) {
    auto h = std::make_shared<AHAttr>();
    h->attr = a;
    return py::cast(h);
}

py::object qp_attr_object(const ibv_qp_attr& q) {
    py::object a = qp_module().attr("QPAttr")();
#define SET(f) a.attr(#f) = (long long)q.f
    SET(qp_state);
    SET(cur_qp_state);
    SET(path_mtu);
    SET(path_mig_state);
    SET(qkey);
    SET(rq_psn);
    SET(sq_psn);
    SET(dest_qp_num);
    SET(qp_access_flags);
    SET(pkey_index);
    SET(alt_pkey_index);
    SET(en_sqd_async_notify);
    SET(sq_draining);
    SET(max_rd_atomic);
    SET(max_dest_rd_atomic);
    SET(min_rnr_timer);
    SET(port_num);
    SET(timeout);
    SET(retry_cnt);
    SET(rnr_retry);
    SET(alt_port_num);
    SET(alt_timeout);
    SET(rate_limit);
#undef SET
    a.attr("cap") = qp_cap_object(q.cap);
    a.attr("ah_attr") = ah_attr_object(q.ah_attr);
    a.attr("alt_ah_attr") = ah_attr_object(q.alt_ah_attr);
    return a;
}

py::object wc_object(const ibv_wc& wc) {
    return py::module_::import("pyverbs.cq")
        .attr("WC")(py::arg("wr_id") = wc.wr_id, py::arg("status") = int(wc.status), py::arg("opcode") = int(wc.opcode),
                    py::arg("vendor_err") = wc.vendor_err, py::arg("byte_len") = wc.byte_len,
                    py::arg("qp_num") = wc.qp_num, py::arg("src_qp") = wc.src_qp, py::arg("imm_data") = wc.imm_data,
                    py::arg("wc_flags") = wc.wc_flags, py::arg("pkey_index") = wc.pkey_index, py::arg("slid") = wc.slid,
                    py::arg("sl") = wc.sl, py::arg("dlid_path_bits") = wc.dlid_path_bits);
}

CMID& self_of(py::handle self) {
    CMID& c = arg_as<CMID>(self, "CMID");
    c.open_id();
    return c;
}

// The CMID's Context and PD once it has a device (as the reference makes
// them after binding or resolving).
void make_views(CMID& c) {
    if (!c.id->verbs)
        return;
    if (!c.ctx)
        context_of_cmid(c);
    if (!c.pd && c.id->pd)
        pd_of_cmid(c);
}

void register_on_channel(const std::shared_ptr<CMID>& c) {
    if (auto* ch = cpp_ptr<CMEventChannel>(c->event_channel))
        ch->ids.push_back(c);
}

std::shared_ptr<CMID> make_cmid(py::object creator, py::object qp_init_attr, py::object pd, int port_space,
                                py::object listen_id) {
    check_instance(qp_init_attr, "pyverbs.qp", "QPInitAttr", "qp_init_attr", true);
    PD* user_pd = typed_or_none<PD>(pd, "pd", "pyverbs.pd.PD");
    CMID* listen = typed_or_none<CMID>(listen_id, "listen_id", "pyverbs.cmid.CMID");
    auto c = std::make_shared<CMID>();
    if (creator.is_none())
        return c;
    if (auto* ai = cpp_ptr<AddrInfo>(creator)) {
        rdma_addrinfo* info = ai->open();
        bool has_init = !qp_init_attr.is_none();
        ibv_qp_init_attr init{};
        if (has_init)
            init = qp_init_of(qp_init_attr);
        ibv_pd* in_pd = nullptr;
        if (user_pd) {
            user_pd->check_open("PD");
            in_pd = user_pd->pd;
        }
        rdma_cm_id* id = nullptr;
        if (unlocked([&] { return rdma_create_ep(&id, info, in_pd, has_init ? &init : nullptr); }))
            raise_errno("Failed to create CM ID");
        c->id = id;
        c->destroy = destroy_cmid;
        if (user_pd) {
            c->pd = pd.cast<std::shared_ptr<PD>>();
            c->depend_on(pd, *user_pd);
        }
        if (has_init)
            depend_on_queues(*c, qp_init_attr);
        if (!(info->ai_flags & RAI_PASSIVE))
            make_views(*c);
        return c;
    }
    if (auto* ch = cpp_ptr<CMEventChannel>(creator)) {
        rdma_event_channel* channel = ch->open();
        rdma_cm_id* id = nullptr;
        if (rdma_create_id(channel, &id, nullptr, rdma_port_space(port_space)))
            raise_errno("Failed to create CM ID");
        c->id = id;
        c->destroy = destroy_cmid;
        c->event_channel = creator;
        register_on_channel(c);
        return c;
    }
    if (auto* ev = cpp_ptr<CMEvent>(creator)) {
        if (!listen)
            raise_user("listen ID not provided");
        rdma_cm_id* id = ev->open()->id;
        // (an id that already has its CMID, as the id of any event but a
        // connection request does, would be freed twice)
        if (auto* ch = cpp_ptr<CMEventChannel>(listen->event_channel))
            for (auto& w : ch->ids)
                if (auto other = w.lock(); other && other->id == id)
                    raise_user("The event's CM ID already has its CMID");
        if (id == listen->id)
            raise_user("The event's CM ID already has its CMID");
        c->id = id;
        c->destroy = destroy_cmid;
        c->event_channel = listen->event_channel;
        c->ctx = listen->ctx;
        c->pd = listen->pd;
        register_on_channel(c);
        return c;
    }
    raise_rdma("Cannot create CM ID from " + py::str(py::type::handle_of(creator)).cast<std::string>(), errno);
}

std::shared_ptr<AddrInfo> make_addr_info(py::object src, py::object dst, py::object src_service, py::object dst_service,
                                         int port_space, int flags) {
    // (None and "" both stand for no value, as the reference tests them)
    auto arg = [](py::handle v, std::string& keep) -> const char* {
        if (v.is_none())
            return nullptr;
        keep = c_string(v);
        return keep.c_str();
    };
    std::string s, d, ss, ds;
    const char* src_addr = arg(src, s);
    const char* dst_addr = arg(dst, d);
    const char* src_srvc = arg(src_service, ss);
    const char* dst_srvc = arg(dst_service, ds);
    bool have_src = src_addr && *src_addr;

    auto a = std::make_shared<AddrInfo>();
    rdma_addrinfo hints{};
    hints.ai_port_space = port_space;
    hints.ai_flags = flags;
    int rc;
    if (flags & RAI_PASSIVE) {
        rc = unlocked([&] { return rdma_getaddrinfo(src_addr, src_srvc, &hints, &a->ai); });
    } else {
        // The source is resolved alone (as a passive address) and given as
        // the hint's source.
        rdma_addrinfo* res = nullptr;
        if (have_src) {
            hints.ai_flags |= RAI_PASSIVE;
            if (unlocked([&] { return rdma_getaddrinfo(src_addr, src_srvc, &hints, &res); }))
                raise_errno("Failed to get Address Info");
            hints.ai_src_addr = res->ai_src_addr;
            hints.ai_src_len = res->ai_src_len;
            hints.ai_flags &= ~RAI_PASSIVE;
        }
        rc = unlocked([&] { return rdma_getaddrinfo(dst_addr, dst_srvc, &hints, &a->ai); });
        if (res) {
            int e = errno;
            rdma_freeaddrinfo(res);
            errno = e;
        }
    }
    if (rc)
        raise_errno("Failed to get Address Info");
    return a;
}

// ConnParam.set_private_data: a fresh zeroed buffer of data_len bytes, the
// first min(len(data), data_len) of them set from `data` (bytes, or items
// that are ints or single bytes); on a bad item the buffer stays zeroed and
// the length set before.
void set_private_data(ConnParam& p, py::handle data) {
    Py_ssize_t len = PyObject_Length(data.ptr());
    if (len < 0)
        throw py::error_already_set();
    size_t n = std::min(size_t(len), p.data.size());
    std::fill(p.data.begin(), p.data.end(), 0);
    if (PyBytes_Check(data.ptr()) || PyByteArray_Check(data.ptr())) {
        std::string_view b = byte_view(data);
        std::copy_n(b.data(), n, p.data.begin());
    } else {
        for (size_t i = 0; i < n; i++) {
            py::object item = py::reinterpret_borrow<py::object>(data)[py::int_(i)];
            long v = -1;
            if (PyLong_Check(item.ptr()))
                v = PyLong_AsLong(item.ptr());
            else if (PyBytes_Check(item.ptr()) && PyBytes_GET_SIZE(item.ptr()) == 1)
                v = (unsigned char)PyBytes_AS_STRING(item.ptr())[0];
            if (v < 0 || v > 255) {
                PyErr_Clear();
                std::fill(p.data.begin(), p.data.end(), 0);
                throw py::type_error("one character bytes, bytearray or integer expected");
            }
            p.data[i] = uint8_t(v);
        }
    }
    p.data_set = n;
}

py::bytes private_data_of(const void* data, uint8_t len) {
    if (!data || !len)
        return py::bytes("");
    return py::bytes(static_cast<const char*>(data), len);
}

// post_send/post_recv's length: the MR's whole length when not given (or 0).
size_t length_or_mr(py::handle length, const MR& mr) {
    if (length.is_none() || !PyObject_IsTrue(length.ptr()))
        return mr.mr->length;
    return length.cast<size_t>();
}

MR& mr_arg(py::handle mr) {
    MR& m = typed<MR>(mr, "mr", "pyverbs.mr.MR");
    m.check_open("MR");
    return m;
}

// The id's QP, for posting (EINVAL as from the verb when there is none).
rdma_cm_id* qp_id(CMID& c, const char* what) {
    rdma_cm_id* id = c.open_id();
    if (!id->qp)
        raise_rdma(what, EINVAL);
    return id;
}

// rdma_get_send_comp/rdma_get_recv_comp: wait for one completion.
py::object get_comp(CMID& c, bool send) {
    const char* what = send ? "Failed to retrieve send completion" : "Failed to retrieve receive completion";
    rdma_cm_id* id = c.open_id();
    if (!(send ? id->send_cq : id->recv_cq))
        raise_rdma(what, EINVAL);
    ibv_wc wc{};
    int ret = unlocked(c, [&] { return send ? rdma_get_send_comp(id, &wc) : rdma_get_recv_comp(id, &wc); });
    if (ret < 0)
        raise_errno(what);
    if (ret == 0)
        return py::none();
    return wc_object(wc);
}

py::object make_mr(py::handle self, py::handle size, int access) {
    return py::module_::import("pyverbs.mr").attr("MR")(self, size, access);
}

std::string conn_param_str(const ConnParam& p) {
    auto line = [](const char* label, unsigned v) {
        char buf[64];
        snprintf(buf, sizeof(buf), "%-4s: %-4u\n", label, v);
        return std::string(buf);
    };
    const rdma_conn_param& c = p.param;
    return std::string("Connection parameters: \n") + line("responder resources", c.responder_resources) +
        line("initiator depth", c.initiator_depth) + line("flow control", c.flow_control) +
        line("retry count", c.retry_count) + line("rnr retry count", c.rnr_retry_count) + line("srq", c.srq) +
        line("qp number", c.qp_num);
}

}  // namespace

PYBIND11_MODULE(cmid, m) {
    import_deps(
        {"pyverbs.base", "pyverbs.device", "pyverbs.pd", "pyverbs.mr", "pyverbs.cq", "pyverbs.addr", "pyverbs.qp"});
    m.doc() = "librdmacm's connection manager: addresses, CM IDs, events and connection parameters";
    m.attr("PyverbsRDMAErrno") = py::module_::import("pyverbs.base").attr("PyverbsRDMAErrno");

    py::class_<ConnParam, Object, std::shared_ptr<ConnParam>>(m, "ConnParam")
        .def(py::init([](py::object resources, py::object depth, py::object flow_control, py::object retry,
                         py::object rnr_retry, py::object srq, py::object qp_num, long long data_len) {
                 auto p = std::make_shared<ConnParam>();
                 p->param.responder_resources = as_u8(resources);
                 p->param.initiator_depth = as_u8(depth);
                 p->param.flow_control = as_u8(flow_control);
                 p->param.retry_count = as_u8(retry);
                 p->param.rnr_retry_count = as_u8(rnr_retry);
                 p->param.srq = as_u8(srq);
                 p->param.qp_num = as_u32(qp_num);
                 if (data_len < 0)
                     throw py::value_error("Array length must be >= 0, not " + std::to_string(data_len));
                 p->data.assign(size_t(data_len), 0);
                 return p;
             }),
             "Connection parameters (rdma_conn_param), with room for data_len bytes of private data",
             py::arg("resources") = 1, py::arg("depth") = 1, py::arg("flow_control") = 0, py::arg("retry") = 5,
             py::arg("rnr_retry") = 5, py::arg("srq") = 0, py::arg("qp_num") = 0, py::arg("data_len") = 0)
        .def_property(
            "qpn", [](const ConnParam& p) { return p.param.qp_num; },
            [](ConnParam& p, py::object v) { p.param.qp_num = as_u32(v); })
        .def_property_readonly(
            "private_data",
            [](const ConnParam& p) { return py::bytes(reinterpret_cast<const char*>(p.data.data()), p.data_set); })
        .def("set_private_data", &set_private_data, "Sets the private data (cut to data_len bytes)", py::arg("data"))
        .def("__str__", &conn_param_str);

    py::class_<JoinMCAttrEx, Object, std::shared_ptr<JoinMCAttrEx>>(m, "JoinMCAttrEx")
        .def(py::init([](py::object addr, py::object comp_mask, py::object join_flags) {
                 typed<AddrInfo>(addr, "addr", "pyverbs.cmid.AddrInfo");
                 auto a = std::make_shared<JoinMCAttrEx>();
                 a->addr = addr;
                 a->attr.comp_mask = as_u32(comp_mask);
                 a->attr.join_flags = as_u32(join_flags);
                 return a;
             }),
             "Extended multicast join attributes: the group (an AddrInfo's source address), comp_mask and "
             "join_flags",
             py::arg("addr"), py::arg("comp_mask") = 0, py::arg("join_flags") = 0)
        .def_property(
            "join_flags", [](const JoinMCAttrEx& a) { return a.attr.join_flags; },
            [](JoinMCAttrEx& a, py::object v) { a.attr.join_flags = as_u32(v); })
        .def_property(
            "comp_mask", [](const JoinMCAttrEx& a) { return a.attr.comp_mask; },
            [](JoinMCAttrEx& a, py::object v) { a.attr.comp_mask = as_u32(v); });

    py::class_<UDParam, Object, std::shared_ptr<UDParam>>(m, "UDParam")
        .def(py::init([](py::object cm_event) {
                 CMEvent& ev = typed<CMEvent>(cm_event, "cm_event", "pyverbs.cmid.CMEvent");
                 auto u = std::make_shared<UDParam>();
                 u->ud = ev.open()->param.ud;
                 return u;
             }),
             "The UD peer an event names (its QP number, qkey and address)", py::arg("cm_event"))
        .def_property_readonly("qp_num", [](const UDParam& u) { return u.ud.qp_num; })
        .def_property_readonly("qkey", [](const UDParam& u) { return u.ud.qkey; })
        .def_property_readonly("ah_attr", [](const UDParam& u) { return ah_attr_object(u.ud.ah_attr); });

    py::class_<AddrInfo, Object, std::shared_ptr<AddrInfo>>(m, "AddrInfo")
        .def(py::init(&make_addr_info),
             "Addresses of a connection (rdma_getaddrinfo): with RAI_PASSIVE in flags the local src to bind to, "
             "else the dst to reach (from src when given)",
             py::arg("src") = py::none(), py::arg("dst") = py::none(), py::arg("src_service") = py::none(),
             py::arg("dst_service") = py::none(), py::arg("port_space") = 0, py::arg("flags") = 0)
        .def("close", &AddrInfo::close, "Frees the address information");

    py::class_<CMEvent, Object, std::shared_ptr<CMEvent>>(m, "CMEvent")
        .def(py::init([](py::object channel) {
                 CMEventChannel* ch = typed_or_none<CMEventChannel>(channel, "channel", "pyverbs.cmid.CMEventChannel");
                 rdma_event_channel* c = ch ? ch->open() : nullptr;
                 auto e = std::make_shared<CMEvent>();
                 int rc;
                 if (ch) {
                     ch->blocking++;
                     rc = unlocked([&] { return rdma_get_cm_event(c, &e->event); });
                     ch->blocking--;
                 } else {
                     rc = rdma_get_cm_event(nullptr, &e->event);
                 }
                 if (rc)
                     raise_errno("Failed to create CMEvent");
                 e->channel = channel;
                 if (!ch)
                     return e;
                 ch->events.erase(std::remove_if(ch->events.begin(), ch->events.end(),
                                                 [](const std::weak_ptr<CMEvent>& w) { return w.expired(); }),
                                  ch->events.end());
                 ch->events.push_back(e);
                 return e;
             }),
             "The next event of the channel (waits for one)", py::arg("channel"))
        .def_property_readonly("event_type", [](const CMEvent& e) { return int(e.open()->event); })
        .def("ack_cm_event", &CMEvent::ack, "Acknowledges (frees) the event")
        .def("event_str", &CMEvent::str, "The event's name ('' once acknowledged)")
        .def("close",
             [](CMEvent& e) {
                 if (e.event)
                     e.ack();
             })
        .def_property_readonly("private_data", [](const CMEvent& e) {
            const rdma_conn_param& c = e.open()->param.conn;
            return private_data_of(c.private_data, c.private_data_len);
        });

    py::class_<CMEventChannel, Object, std::shared_ptr<CMEventChannel>>(m, "CMEventChannel")
        .def(py::init([]() {
                 auto c = std::make_shared<CMEventChannel>();
                 c->ch = rdma_create_event_channel();
                 if (!c->ch)
                     raise_errno("Failed to create CMEventChannel");
                 return c;
             }),
             "An event channel (rdma_create_event_channel) for asynchronous CMIDs")
        .def("close", &CMEventChannel::close,
             "Closes the CMIDs made on the channel, acknowledges its events and destroys it");

    py::class_<CMID, CM, std::shared_ptr<CMID>>(m, "CMID")
        .def(py::init(&make_cmid),
             "An RDMA CM ID: from an AddrInfo a synchronous endpoint (rdma_create_ep), from a CMEventChannel an "
             "asynchronous one, from a connect request CMEvent the new connection of listen_id",
             py::arg("creator") = py::none(), py::arg("qp_init_attr") = py::none(), py::arg("pd") = py::none(),
             py::arg("port_space") = int(RDMA_PS_TCP), py::arg("listen_id") = py::none())
        .def("close", &CM::close, "Closes what was made from the CMID, then the CMID")
        .def_property_readonly("event_channel", [](const CMID& c) { return c.event_channel; })
        .def_property_readonly("context", [](const CMID& c) { return object_of(c.ctx); })
        .def_property_readonly("pd", [](const CMID& c) { return object_of(c.pd); })
        .def_property_readonly("qpn",
                               [](py::handle self) -> py::object {
                                   rdma_cm_id* id = self_of(self).id;
                                   return id->qp ? py::object(py::int_(id->qp->qp_num)) : py::none();
                               })
        .def_property_readonly("port_num", [](py::handle self) { return self_of(self).id->port_num; })
        .def_property_readonly("dev_name",
                               [](py::handle self) {
                                   rdma_cm_id* id = self_of(self).id;
                                   if (!id->verbs)
                                       raise_user("The CMID is not bound to a device yet");
                                   return std::string(ibv_get_device_name(id->verbs->device));
                               })
        .def(
            "get_request",
            [](py::handle self) {
                CMID& c = self_of(self);
                auto to_conn = std::make_shared<CMID>();
                rdma_cm_id* listen = c.id;
                if (unlocked(c, [&] { return rdma_get_request(listen, &to_conn->id); }))
                    raise_errno("Failed to get request, no connection established");
                to_conn->destroy = destroy_cmid;
                // (the listener's Context and PD become the new connection's,
                // as the reference's)
                if (to_conn->id->verbs) {
                    c.ctx = context_of_cmid(*to_conn);
                    if (to_conn->id->pd)
                        c.pd = pd_of_cmid(*to_conn);
                }
                return to_conn;
            },
            "Waits for the next connection request of a listening synchronous CMID: the CMID of the new "
            "connection")
        .def(
            "bind_addr",
            [](py::handle self, py::object lai) {
                AddrInfo& ai = typed<AddrInfo>(lai, "lai", "pyverbs.cmid.AddrInfo");
                CMID& c = self_of(self);
                if (rdma_bind_addr(c.id, addr_of(ai.open()->ai_src_addr, "Failed to Bind ID")))
                    raise_errno("Failed to Bind ID");
                make_views(c);
            },
            "Binds the CMID to the AddrInfo's source address (and so to its device)", py::arg("lai"))
        .def(
            "resolve_addr",
            [](py::handle self, py::object rai, int timeout_ms) {
                AddrInfo& ai = typed<AddrInfo>(rai, "rai", "pyverbs.cmid.AddrInfo");
                CMID& c = self_of(self);
                rdma_addrinfo* info = ai.open();
                sockaddr* dst = addr_of(info->ai_dst_addr, "Failed to Resolve Address");
                rdma_cm_id* id = c.id;
                if (unlocked(c, [&] { return rdma_resolve_addr(id, info->ai_src_addr, dst, timeout_ms); }))
                    raise_errno("Failed to Resolve Address");
            },
            "Resolves the AddrInfo's destination (and source) to RDMA addresses", py::arg("rai"),
            py::arg("timeout_ms") = 2000)
        .def(
            "resolve_route",
            [](py::handle self, int timeout_ms) {
                CMID& c = self_of(self);
                rdma_cm_id* id = c.id;
                if (unlocked(c, [&] { return rdma_resolve_route(id, timeout_ms); }))
                    raise_errno("Failed to Resolve Route");
                make_views(c);
            },
            "Resolves the route to the resolved destination", py::arg("timeout_ms") = 2000)
        .def(
            "join_multicast",
            [](py::handle self, py::object addr, py::object mc_attr, uintptr_t context) {
                AddrInfo* ai = typed_or_none<AddrInfo>(addr, "addr", "pyverbs.cmid.AddrInfo");
                JoinMCAttrEx* mc = typed_or_none<JoinMCAttrEx>(mc_attr, "mc_attr", "pyverbs.cmid.JoinMCAttrEx");
                if (!ai && !mc)
                    raise_user("Join to multicast must have AddrInfo or JoinMCAttrEx arguments");
                CMID& c = self_of(self);
                rdma_cm_id* id = c.id;
                void* ctx = reinterpret_cast<void*>(context);
                int rc;
                if (!mc) {
                    sockaddr* group = addr_of(ai->open()->ai_src_addr, "Failed to Join multicast");
                    rc = unlocked(c, [&] { return rdma_join_multicast(id, group, ctx); });
                } else {
                    rdma_cm_join_mc_attr_ex attr = mc->attr;
                    attr.addr =
                        addr_of(arg_as<AddrInfo>(mc->addr, "AddrInfo").open()->ai_src_addr, "Failed to Join multicast");
                    rc = unlocked(c, [&] { return rdma_join_multicast_ex(id, &attr, ctx); });
                }
                if (rc)
                    raise_errno("Failed to Join multicast");
            },
            "Joins a multicast group (the AddrInfo's source address, or JoinMCAttrEx's) and attaches the QP",
            py::arg("addr") = py::none(), py::arg("mc_attr") = py::none(), py::arg("context") = 0)
        .def(
            "leave_multicast",
            [](py::handle self, py::object addr) {
                AddrInfo& ai = typed<AddrInfo>(addr, "addr", "pyverbs.cmid.AddrInfo");
                CMID& c = self_of(self);
                sockaddr* group = addr_of(ai.open()->ai_src_addr, "Failed to leave multicast");
                rdma_cm_id* id = c.id;
                if (unlocked(c, [&] { return rdma_leave_multicast(id, group); }))
                    raise_errno("Failed to leave multicast");
            },
            "Leaves a multicast group and detaches the QP from it", py::arg("addr"))
        .def(
            "listen",
            [](py::handle self, int backlog) {
                if (rdma_listen(self_of(self).id, backlog))
                    raise_errno("Listen Failed");
            },
            "Listens for connection requests on the bound address", py::arg("backlog") = 0)
        .def(
            "connect",
            [](py::handle self, py::object param) {
                ConnParam* p = typed_or_none<ConnParam>(param, "param", "pyverbs.cmid.ConnParam");
                CMID& c = self_of(self);
                rdma_conn_param conn{};
                if (p)
                    conn = p->get();
                rdma_cm_id* id = c.id;
                if (unlocked(c, [&] { return rdma_connect(id, p ? &conn : nullptr); }))
                    raise_errno("Failed to Connect");
            },
            "Connects to the resolved destination (a synchronous CMID waits until connected)",
            py::arg("param") = py::none())
        .def(
            "disconnect",
            [](py::handle self) {
                CMID& c = self_of(self);
                rdma_cm_id* id = c.id;
                if (unlocked(c, [&] { return rdma_disconnect(id); }))
                    raise_errno("Failed to Disconnect");
            },
            "Disconnects (the QP goes to the error state)")
        .def(
            "accept",
            [](py::handle self, py::object param) {
                ConnParam* p = typed_or_none<ConnParam>(param, "param", "pyverbs.cmid.ConnParam");
                CMID& c = self_of(self);
                rdma_conn_param conn{};
                if (p)
                    conn = p->get();
                rdma_cm_id* id = c.id;
                if (unlocked(c, [&] { return rdma_accept(id, p ? &conn : nullptr); }))
                    raise_errno("Failed to Accept Connection");
            },
            "Accepts a connection request", py::arg("param") = py::none())
        .def(
            "establish",
            [](py::handle self) {
                CMID& c = self_of(self);
                rdma_cm_id* id = c.id;
                if (unlocked(c, [&] { return rdma_establish(id); }))
                    raise_errno("Failed to Complete an active connection request");
            },
            "Completes an active connection of a CMID without a QP of its own, after the connect response")
        .def(
            "set_local_ece",
            [](py::handle self, py::object ece) {
                check_instance(ece, "pyverbs.qp", "ECE", "ece", false);
                ibv_ece e{ece.attr("vendor_id").cast<uint32_t>(), ece.attr("options").cast<uint32_t>(),
                          ece.attr("comp_mask").cast<uint32_t>()};
                if (rdma_set_local_ece(self_of(self).id, &e))
                    raise_errno("Failed to set local ECE");
            },
            "Sets the ECE options to offer in the connection's REQ/REP", py::arg("ece"))
        .def(
            "get_remote_ece",
            [](py::handle self) {
                ibv_ece e{};
                if (rdma_get_remote_ece(self_of(self).id, &e))
                    raise_errno("Failed to get remote ECE");
                return qp_module().attr("ECE")(py::arg("vendor_id") = e.vendor_id, py::arg("options") = e.options,
                                               py::arg("comp_mask") = e.comp_mask);
            },
            "The ECE options the peer sent (an ECE)")
        .def(
            "create_qp",
            [](py::handle self, py::object qp_init) {
                check_instance(qp_init, "pyverbs.qp", "QPInitAttr", "qp_init", false);
                CMID& c = self_of(self);
                ibv_qp_init_attr init = qp_init_of(qp_init);
                ibv_pd* pd = nullptr;
                if (c.pd) {
                    c.pd->check_open("PD");
                    pd = c.pd->pd;
                }
                if (rdma_create_qp(c.id, pd, &init))
                    raise_errno("Failed to Create QP");
                depend_on_queues(c, qp_init);
                // (as librdmacm reports the capabilities it got)
                qp_init.attr("cap") = qp_cap_object(init.cap);
            },
            "Creates the CMID's QP (with CQs of its own unless qp_init gives them)", py::arg("qp_init"))
        .def(
            "query_qp",
            [](py::handle self, int attr_mask) {
                rdma_cm_id* id = qp_id(self_of(self), "Failed to query QP");
                ibv_qp_attr attr{};
                ibv_qp_init_attr init{};
                if (int rc = ibv_query_qp(id->qp, &attr, attr_mask, &init))
                    raise_rdma("Failed to query QP", rc);
                py::object ia = qp_module().attr("QPInitAttr")(py::arg("qp_type") = int(init.qp_type),
                                                               py::arg("sq_sig_all") = init.sq_sig_all,
                                                               py::arg("cap") = qp_cap_object(init.cap));
                return py::make_tuple(qp_attr_object(attr), ia);
            },
            "Queries the CMID's QP: (QPAttr, QPInitAttr)", py::arg("attr_mask"))
        .def(
            "init_qp_attr",
            [](py::handle self, int qp_state) {
                ibv_qp_attr attr{};
                attr.qp_state = ibv_qp_state(qp_state);
                int mask = 0;
                if (rdma_init_qp_attr(self_of(self).id, &attr, &mask))
                    raise_errno("Failed to get QP attributes");
                return py::make_tuple(qp_attr_object(attr), mask);
            },
            "The attributes to move an external QP to qp_state on this connection: (QPAttr, attr_mask)",
            py::arg("qp_state"))
        .def(
            "reg_msgs", [](py::handle self, py::object size) { return make_mr(self, size, IBV_ACCESS_LOCAL_WRITE); },
            "An MR of size bytes for messages (rdma_reg_msgs)", py::arg("size"))
        .def(
            "reg_read", [](py::handle self, py::object size) { return make_mr(self, size, IBV_ACCESS_REMOTE_READ); },
            "An MR of size bytes the peer may read (rdma_reg_read)", py::arg("size") = 0)
        .def(
            "reg_write", [](py::handle self, py::object size) { return make_mr(self, size, IBV_ACCESS_REMOTE_WRITE); },
            "An MR of size bytes the peer may write (rdma_reg_write)", py::arg("size") = 0)
        .def(
            "post_recv",
            [](py::handle self, py::object mr, py::object length) {
                MR& m = mr_arg(mr);
                rdma_cm_id* id = qp_id(self_of(self), "Failed to Post Receive");
                size_t len = length_or_mr(length, m);
                if (len > m.mr->length)
                    raise_rdma("Failed to Post Receive", EINVAL);
                if (rdma_post_recv(id, nullptr, m.buf, len, m.mr))
                    raise_errno("Failed to Post Receive");
            },
            "Posts a receive of the MR's buffer (length bytes; default the whole MR)", py::arg("mr"),
            py::arg("length") = py::none())
        .def(
            "post_send",
            [](py::handle self, py::object mr, int flags, py::object length) {
                MR& m = mr_arg(mr);
                rdma_cm_id* id = qp_id(self_of(self), "Failed to Post Send");
                if (rdma_post_send(id, nullptr, m.buf, length_or_mr(length, m), m.mr, flags))
                    raise_errno("Failed to Post Send");
            },
            "Posts a send of the MR's buffer (length bytes; default the whole MR)", py::arg("mr"),
            py::arg("flags") = int(IBV_SEND_SIGNALED), py::arg("length") = py::none())
        .def(
            "post_read",
            [](py::handle self, py::object mr, size_t length, uint64_t remote_addr, uint32_t rkey, int flags) {
                MR& m = mr_arg(mr);
                rdma_cm_id* id = qp_id(self_of(self), "Failed to Post Read");
                if (rdma_post_read(id, nullptr, m.buf, length, m.mr, flags, remote_addr, rkey))
                    raise_errno("Failed to Post Read");
            },
            "Posts an RDMA read of the peer's remote_addr/rkey into the MR", py::arg("mr"), py::arg("length"),
            py::arg("remote_addr"), py::arg("rkey"), py::arg("flags") = 0)
        .def(
            "post_write",
            [](py::handle self, py::object mr, size_t length, uint64_t remote_addr, uint32_t rkey, int flags) {
                MR& m = mr_arg(mr);
                rdma_cm_id* id = qp_id(self_of(self), "Failed to Post Write");
                if (rdma_post_write(id, nullptr, m.buf, length, m.mr, flags, remote_addr, rkey))
                    raise_errno("Failed to Post Write");
            },
            "Posts an RDMA write of the MR to the peer's remote_addr/rkey", py::arg("mr"), py::arg("length"),
            py::arg("remote_addr"), py::arg("rkey"), py::arg("flags") = 0)
        .def(
            "post_ud_send",
            [](py::handle self, py::object mr, py::object ah, uint32_t rqpn, int flags, py::object length) {
                MR& m = mr_arg(mr);
                AH& a = typed<AH>(ah, "ah", "pyverbs.addr.AH");
                a.check_open("AH");
                rdma_cm_id* id = qp_id(self_of(self), "Failed to Post Send");
                if (rdma_post_ud_send(id, nullptr, m.buf, length_or_mr(length, m), m.mr, flags, a.ah, rqpn))
                    raise_errno("Failed to Post Send");
            },
            "Posts a UD send of the MR to the QP rqpn through the AH", py::arg("mr"), py::arg("ah"),
            py::arg("rqpn") = 0, py::arg("flags") = int(IBV_SEND_SIGNALED), py::arg("length") = py::none())
        .def(
            "get_recv_comp", [](py::handle self) { return get_comp(self_of(self), false); },
            "Waits for a completion of the receive CQ: a WC (None if there was none)")
        .def(
            "get_send_comp", [](py::handle self) { return get_comp(self_of(self), true); },
            "Waits for a completion of the send CQ: a WC (None if there was none)")
        .def(
            "set_option",
            [](py::handle self, int level, int optname, py::object optval, size_t optlen) {
                if (optname != RDMA_OPTION_ID_ACK_TIMEOUT)
                    raise_user("Currently only RDMA_OPTION_ID_ACK_TIMEOUT is supported in Pyverbs.");
                uint8_t value = as_u8(optval);
                if (rdma_set_option(self_of(self).id, level, optname, &value, optlen))
                    raise_errno("Failed to set option");
            },
            "Sets an option of the CMID (RDMA_OPTION_ID_ACK_TIMEOUT only)", py::arg("level"), py::arg("optname"),
            py::arg("optval"), py::arg("optlen"))
        .def(
            "reject",
            [](py::handle self, py::object private_data, uint8_t private_data_len) {
                std::string data;
                if (!private_data.is_none())
                    data = std::string(byte_view(private_data));
                data.resize(std::max<size_t>(data.size(), private_data_len));
                if (rdma_reject(self_of(self).id, private_data.is_none() ? nullptr : data.data(), private_data_len))
                    raise_errno("Failed to Reject Connection");
            },
            "Rejects a connection request, with optional private data", py::arg("private_data") = py::none(),
            py::arg("private_data_len") = 0);
}
