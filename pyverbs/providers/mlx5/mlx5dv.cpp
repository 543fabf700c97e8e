// pyverbs.providers.mlx5.mlx5dv: mlx5 direct verbs. An mlx5 context opened
// with mlx5dv_open_device and what it reports (mlx5dv_query_device), QPs and
// CQs created with mlx5dv_create_qp/_cq, raw WQEs and CQEs, UARs, and the
// DevX, VAR, packet pacing, crypto and device-memory objects, which fail as
// libmlx5 answers for a device without them.
#include "mlx5_objects.h"

#include "dm.h"
#include "wq.h"
#include "xrcd.h"

#include <pybind11/stl.h>

#include <cstdlib>
#include <endian.h>
#include <sys/mman.h>

using namespace pyverbs;

namespace {

// ----------------------------------------------------------------------
// The *_to_str helpers: each names the bits of a value from a {bit: name}
// table, in the table's order, then the value itself in parentheses.

py::object steal_checked(PyObject* o) {
    if (!o)
        throw py::error_already_set();
    return py::reinterpret_steal<py::object>(o);
}

bool py_true(const py::object& o) {
    int r = PyObject_IsTrue(o.ptr());
    if (r < 0)
        throw py::error_already_set();
    return r;
}

bool is_zero(const py::object& o) {
    py::int_ zero(0);
    int r = PyObject_RichCompareBool(o.ptr(), zero.ptr(), Py_EQ);
    if (r < 0)
        throw py::error_already_set();
    return r;
}

// Python ints throughout, as the reference's: a table key with more than
// one bit of which some are set is subtracted whole.
std::string bitmask_to_str(py::object bits, py::dict values) {
    py::object numeric = bits;
    std::string res;
    for (auto [k, v] : values) {
        py::object t = py::reinterpret_borrow<py::object>(k);
        if (py_true(steal_checked(PyNumber_And(t.ptr(), bits.ptr())))) {
            res += py::str(v).cast<std::string>() + ", ";
            bits = steal_checked(PyNumber_Subtract(bits.ptr(), t.ptr()));
        }
        if (is_zero(bits))
            break;
    }
    res = res.size() >= 2 ? res.substr(0, res.size() - 2) : std::string();
    return res + " (" + py::str(numeric).cast<std::string>() + ")";
}

py::dict table(std::initializer_list<std::pair<long long, const char*>> entries) {
    py::dict d;
    for (auto& [k, v] : entries)
        d[py::int_(k)] = py::str(v);
    return d;
}

std::string context_comp_mask_to_str(py::object mask) {
    return bitmask_to_str(mask,
                          table({{MLX5DV_CONTEXT_MASK_CQE_COMPRESION, "CQE compression"},
                                 {MLX5DV_CONTEXT_MASK_SWP, "SW parsing"},
                                 {MLX5DV_CONTEXT_MASK_STRIDING_RQ, "Striding RQ"},
                                 {MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS, "Tunnel offloads"},
                                 {MLX5DV_CONTEXT_MASK_DYN_BFREGS, "Dynamic BF regs"},
                                 {MLX5DV_CONTEXT_MASK_CLOCK_INFO_UPDATE, "Clock info update"},
                                 {MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS, "Flow action flags"}}));
}

std::string context_flags_to_str(py::object flags) {
    return bitmask_to_str(
        flags,
        table({{MLX5DV_CONTEXT_FLAGS_CQE_V1, "CQE v1"},
               {MLX5DV_CONTEXT_FLAGS_MPW_ALLOWED, "Multi packet WQE allowed"},
               {MLX5DV_CONTEXT_FLAGS_ENHANCED_MPW, "Enhanced multi packet WQE"},
               {MLX5DV_CONTEXT_FLAGS_CQE_128B_COMP, "Support CQE 128B compression"},
               {MLX5DV_CONTEXT_FLAGS_CQE_128B_PAD, "Support CQE 128B padding"},
               {MLX5DV_CONTEXT_FLAGS_PACKET_BASED_CREDIT_MODE, "Support packet based credit mode (in RC QP)"}}));
}

std::string swp_to_str(py::object swps) {
    return bitmask_to_str(swps,
                          table({{MLX5DV_SW_PARSING, "SW Parsing"},
                                 {MLX5DV_SW_PARSING_CSUM, "SW Parsing CSUM"},
                                 {MLX5DV_SW_PARSING_LSO, "SW Parsing LSO"}}));
}

std::string cqe_comp_to_str(py::object cqe) {
    return bitmask_to_str(cqe,
                          table({{MLX5DV_CQE_RES_FORMAT_HASH, "with hash"},
                                 {MLX5DV_CQE_RES_FORMAT_CSUM, "with RX checksum CSUM"},
                                 {MLX5DV_CQE_RES_FORMAT_CSUM_STRIDX, "with stride index"}}));
}

std::string tunnel_offloads_to_str(py::object tun) {
    return bitmask_to_str(
        tun,
        table({{MLX5DV_RAW_PACKET_CAP_TUNNELED_OFFLOAD_VXLAN, "VXLAN"},
               {MLX5DV_RAW_PACKET_CAP_TUNNELED_OFFLOAD_GRE, "GRE"},
               {MLX5DV_RAW_PACKET_CAP_TUNNELED_OFFLOAD_GENEVE, "Geneve"},
               {MLX5DV_RAW_PACKET_CAP_TUNNELED_OFFLOAD_CW_MPLS_OVER_GRE, "Ctrl word + MPLS over GRE"},
               {MLX5DV_RAW_PACKET_CAP_TUNNELED_OFFLOAD_CW_MPLS_OVER_UDP, "Ctrl word + MPLS over UDP"}}));
}

std::string dc_type_to_str(py::object dctype) {
    py::dict names = table({{MLX5DV_DCTYPE_DCT, "DCT"}, {MLX5DV_DCTYPE_DCI, "DCI"}});
    if (names.contains(dctype))
        return names[dctype].cast<std::string>();
    return "Unknown DC type (" + py::str(dctype).cast<std::string>() + ")";
}

std::string qp_comp_mask_to_str(py::object flags) {
    return bitmask_to_str(flags,
                          table({{MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS, "Create flags"},
                                 {MLX5DV_QP_INIT_ATTR_MASK_DC, "DC"},
                                 {MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS, "Send ops flags"},
                                 {MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS, "DCI Stream"}}));
}

std::string qp_create_flags_to_str(py::object flags) {
    return bitmask_to_str(flags,
                          table({{MLX5DV_QP_CREATE_TUNNEL_OFFLOADS, "Tunnel offloads"},
                                 {MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_UC, "Allow UC self loopback"},
                                 {MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_MC, "Allow MC self loopback"},
                                 {MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE, "Disable scatter to CQE"},
                                 {MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE, "Allow scatter to CQE"},
                                 {MLX5DV_QP_CREATE_PACKET_BASED_CREDIT_MODE, "Packet based credit mode"},
                                 {MLX5DV_QP_CREATE_SIG_PIPELINING, "Support signature pipeline support"}}));
}

std::string send_ops_flags_to_str(py::object flags) {
    return bitmask_to_str(flags,
                          table({{MLX5DV_QP_EX_WITH_MR_INTERLEAVED, "With MR interleaved"},
                                 {MLX5DV_QP_EX_WITH_MR_LIST, "With MR list"},
                                 {MLX5DV_QP_EX_WITH_MKEY_CONFIGURE, "With Mkey configure"}}));
}

// A bit per QP type (1 << type); as in the reference, the type itself (not
// its bit) is taken off the remainder.
std::string qpts_to_str(py::object qp_types) {
    py::object numeric = qp_types;
    static const std::pair<int, const char*> qpts[] = {{IBV_QPT_RC, "RC"},
                                                       {IBV_QPT_UC, "UC"},
                                                       {IBV_QPT_UD, "UD"},
                                                       {IBV_QPT_RAW_PACKET, "Raw Packet"},
                                                       {IBV_QPT_XRC_SEND, "XRC Send"},
                                                       {IBV_QPT_XRC_RECV, "XRC Recv"},
                                                       {IBV_QPT_DRIVER, "Driver QPT"}};
    std::string out;
    for (auto& [t, name] : qpts) {
        py::int_ one(1), type(t);
        py::object bit = steal_checked(PyNumber_Lshift(one.ptr(), type.ptr()));
        if (py_true(steal_checked(PyNumber_And(bit.ptr(), qp_types.ptr())))) {
            out += std::string(name) + ", ";
            qp_types = steal_checked(PyNumber_Subtract(qp_types.ptr(), type.ptr()));
        }
        if (is_zero(qp_types))
            break;
    }
    out = out.size() >= 2 ? out.substr(0, out.size() - 2) : std::string();
    return out + " (" + py::str(numeric).cast<std::string>() + ")";
}

// '{:20}: {:<20}\n', the layout of these classes' __str__.
std::string fmt(const std::string& label, const std::string& value, int width = 20) {
    return str_line(label, value, width);
}
template <class T>
std::string fmt(const std::string& label, T value, int width = 20) {
    return str_line(label, std::to_string(value), width);
}

std::string py_hex(unsigned long long v) {
    char buf[24];
    snprintf(buf, sizeof(buf), "0x%llx", v);
    return buf;
}

// bytes(obj): a bytes object, or anything with __bytes__ (the PRM
// structures tests build), as a DevX mailbox.
std::string mailbox_of(py::handle obj) {
    py::object b = py::module_::import("builtins").attr("bytes")(obj);
    return std::string(py::reinterpret_borrow<py::bytes>(b));
}

// ----------------------------------------------------------------------
// Attribute classes.

struct DVContextAttr : Object {
    mlx5dv_context_attr attr{};
};

struct DVContext : Object {
    mlx5dv_context dv{};
};

struct DVPortAttr : Object {
    mlx5dv_port attr{};
};

struct DCIStreamInitAttr : Object {
    mlx5dv_dci_streams dci_streams{};
};

struct DVDCInitAttr : Object {
    mlx5dv_dc_init_attr attr{};
};

struct DVQPInitAttr : Object {
    mlx5dv_qp_init_attr attr{};
};

struct DVCQInitAttr : Object {
    mlx5dv_cq_init_attr attr{};
};

py::dict dci_streams_dict(const mlx5dv_dci_streams& s) {
    py::dict d;
    d["log_num_concurent"] = s.log_num_concurent;
    d["log_num_errored"] = s.log_num_errored;
    return d;
}

// A struct field given as a dict (as the reference's struct conversion
// takes it): every field must be there.
mlx5dv_dci_streams dci_streams_from(py::handle v) {
    if (py::isinstance<DCIStreamInitAttr>(v))
        return v.cast<DCIStreamInitAttr&>().dci_streams;
    py::dict d = py::reinterpret_borrow<py::dict>(v);
    mlx5dv_dci_streams s{};
    s.log_num_concurent = d["log_num_concurent"].cast<uint8_t>();
    s.log_num_errored = d["log_num_errored"].cast<uint8_t>();
    return s;
}

// ----------------------------------------------------------------------
// Objects.

class Mlx5QP : public QPEx {
public:
    uint32_t dc_type = 0;
};

class Mlx5CQ : public CQEX {};

// Mlx5UAR, Mlx5VAR, Mlx5PP: PyverbsObjects in the reference (closed with
// their context), resources here.
class Mlx5UAR : public CM {
public:
    ~Mlx5UAR() override { close_quietly(); }
    mlx5dv_devx_uar* uar = nullptr;

protected:
    void release() override {
        if (uar)
            mlx5dv_devx_free_uar(std::exchange(uar, nullptr));
    }
};

class Mlx5VAR : public CM {
public:
    ~Mlx5VAR() override { close_quietly(); }
    mlx5dv_var* var = nullptr;
    py::object context;

protected:
    void release() override {
        if (var)
            mlx5dv_free_var(std::exchange(var, nullptr));
    }
};

class Mlx5PP : public CM {
public:
    ~Mlx5PP() override { close_quietly(); }
    mlx5dv_pp* pp = nullptr;
    py::object context;

protected:
    void release() override {
        if (pp)
            mlx5dv_pp_free(std::exchange(pp, nullptr));
    }
};

class Mlx5UMEM : public CM {
public:
    ~Mlx5UMEM() override { close_quietly(); }
    mlx5dv_devx_umem* umem = nullptr;
    void* addr = nullptr;
    bool user_addr = false;
    py::object context;

protected:
    void release() override {
        if (umem) {
            mlx5dv_devx_umem* u = umem;
            umem = nullptr;
            int rc = mlx5dv_devx_umem_dereg(u);
            free_buffer();
            if (rc)
                raise_as("PyverbsError", "Failed to dereg UMEM.", rc);
        }
        free_buffer();
    }

public:
    void free_buffer() {
        if (addr && !user_addr)
            free(addr);
        addr = nullptr;
    }
};

class Mlx5DevxEq : public CM {
public:
    ~Mlx5DevxEq() override { close_quietly(); }
    mlx5dv_devx_eq* eq = nullptr;
    py::object out_view;
    py::object context;

protected:
    void release() override { destroy_once(eq, mlx5dv_devx_destroy_eq, "Failed to destroy a DevX EQ object"); }
};

class Mlx5DevxMsiVector : public CM {
public:
    ~Mlx5DevxMsiVector() override { close_quietly(); }
    mlx5dv_devx_msi_vector* msi = nullptr;
    py::object context;

protected:
    void release() override { destroy_once(msi, mlx5dv_devx_free_msi_vector, "Failed to free the msi_vector"); }
};

class Mlx5DevxCmdComp : public CM {
public:
    ~Mlx5DevxCmdComp() override { close_quietly(); }
    mlx5dv_devx_cmd_comp* comp = nullptr;
    py::object context;

protected:
    void release() override {
        if (comp)
            mlx5dv_devx_destroy_cmd_comp(std::exchange(comp, nullptr));
    }
};

// The mapping of a DM's operation address; the user unmaps it (unmap).
class Mlx5DmOpAddr : public CM {
public:
    void* addr = nullptr;
    py::object dm;

protected:
    void release() override { addr = nullptr; }
};

// A WQE segment in memory of its own (WqeSeg itself has none).
class WqeSeg : public CM {
public:
    ~WqeSeg() override { close_quietly(); }
    void* segment = nullptr;
    size_t size = 0;

protected:
    void release() override {
        free(segment);
        segment = nullptr;
    }
};
class WqeCtrlSeg : public WqeSeg {
public:
    mlx5_wqe_ctrl_seg* seg() const { return static_cast<mlx5_wqe_ctrl_seg*>(segment); }
};
class WqeDataSeg : public WqeSeg {
public:
    mlx5_wqe_data_seg* seg() const { return static_cast<mlx5_wqe_data_seg*>(segment); }
};

class Wqe : public CM {
public:
    ~Wqe() override { close_quietly(); }
    void* addr = nullptr;
    bool user_addr = false;
    py::object segments;

protected:
    void release() override {
        if (addr && !user_addr)
            free(addr);
        addr = nullptr;
    }
};

struct Cqe64 : Object {
    mlx5_cqe64* cqe = nullptr;
};

// ----------------------------------------------------------------------

Context& context_arg(py::handle obj) { return open_arg<Context>(obj, "Context"); }

template <class T>
T& self_of(py::handle self, const char* what) {
    return open_arg<T>(self, what);
}

std::shared_ptr<Mlx5Context> open_mlx5_context(py::object attr, py::object name_obj) {
    DVContextAttr& a = arg_as<DVContextAttr>(attr, "Mlx5DVContextAttr");
    if (name_obj.is_none())
        raise_user("Device name must be provided");
    std::string name = name_obj.cast<std::string>();
    DeviceByName found(name);
    if (!mlx5dv_is_supported(found.dev))
        raise_user("This is not an MLX5 device");
    auto c = std::make_shared<Mlx5Context>();
    c->name = name;
    mlx5dv_context_attr cattr = a.attr;
    c->ctx = mlx5dv_open_device(found.dev, &cattr);
    if (!c->ctx)
        raise_rdma_errno("Failed to open mlx5 context on " + name);
    return c;
}

// What query_mlx5_device asks for by default: every part our header names.
constexpr uint64_t kAllContextParts = MLX5DV_CONTEXT_MASK_CQE_COMPRESION | MLX5DV_CONTEXT_MASK_SWP |
    MLX5DV_CONTEXT_MASK_STRIDING_RQ | MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS | MLX5DV_CONTEXT_MASK_DYN_BFREGS |
    MLX5DV_CONTEXT_MASK_CLOCK_INFO_UPDATE | MLX5DV_CONTEXT_MASK_DC_ODP_CAPS | MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS |
    MLX5DV_CONTEXT_MASK_DCI_STREAMS | MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH | MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD;

std::string dv_context_str(const mlx5dv_context& dv) {
    auto ind = [](const std::string& label, const std::string& value) { return str_line(label, value, 20, "  "); };
    auto num = [](auto v) { return std::to_string(v); };
    std::string cqe = "CQE compression caps:\n" + ind("max num", num(dv.cqe_comp_caps.max_num)) +
        ind("supported formats", cqe_comp_to_str(py::int_(dv.cqe_comp_caps.supported_format)));
    std::string swp = "SW parsing caps:\n" +
        ind("SW parsing offloads", swp_to_str(py::int_(dv.sw_parsing_caps.sw_parsing_offloads))) +
        ind("supported QP types", qpts_to_str(py::int_(dv.sw_parsing_caps.supported_qpts)));
    const auto& s = dv.striding_rq_caps;
    std::string strd = "Striding RQ caps:\n" +
        ind("min single stride log num of bytes", num(s.min_single_stride_log_num_of_bytes)) +
        ind("max single stride log num of bytes", num(s.max_single_stride_log_num_of_bytes)) +
        ind("min single wqe log num of strides", num(s.min_single_wqe_log_num_of_strides)) +
        ind("max single wqe log num of strides", num(s.max_single_wqe_log_num_of_strides)) +
        ind("supported QP types", qpts_to_str(py::int_(s.supported_qpts)));
    std::string stream = "DCI stream caps:\n" +
        ind("max log num concurrent streams", num(dv.dci_streams_caps.max_log_num_concurent)) +
        ind("max log num errored streams", num(dv.dci_streams_caps.max_log_num_errored));
    return fmt("Version", dv.version) + fmt("Flags", context_flags_to_str(py::int_(dv.flags))) +
        fmt("comp mask", context_comp_mask_to_str(py::int_(dv.comp_mask))) + cqe + swp + strd + stream +
        fmt("Tunnel offloads caps", tunnel_offloads_to_str(py::int_(dv.tunnel_offloads_caps))) +
        fmt("Max dynamic BF registers", dv.max_dynamic_bfregs) +
        fmt("Max clock info update [nsec]", dv.max_clock_info_update_nsec) +
        fmt("Flow action flags", dv.flow_action_flags) + fmt("DC ODP caps", dv.dc_odp_caps) +
        fmt("Num LAG ports", dv.num_lag_ports) + fmt("Max WR memcpy length", dv.max_wr_memcpy_length);
}

// ibv_qp_init_attr_ex from a pyverbs.qp.QPInitAttrEx, read through its
// Python attributes (the objects it names must still be open).
ibv_qp_init_attr_ex qp_init_attr_of(py::handle ia) {
    // (kept for the process: a static py::object would be released after the
    // interpreter is gone)
    static py::handle cls = py::module_::import("pyverbs.qp").attr("QPInitAttrEx").cast<py::object>().release();
    if (!py::isinstance(ia, cls))
        throw py::type_error("Expected QPInitAttrEx, got " + py::str(py::type::handle_of(ia)).cast<std::string>());
    ibv_qp_init_attr_ex a{};
    a.qp_type = ibv_qp_type(ia.attr("qp_type").cast<int>());
    a.sq_sig_all = ia.attr("sq_sig_all").cast<int>();
    a.comp_mask = ia.attr("comp_mask").cast<uint32_t>();
    a.create_flags = ia.attr("create_flags").cast<uint32_t>();
    a.max_tso_header = ia.attr("max_tso_header").cast<uint16_t>();
    a.source_qpn = ia.attr("source_qpn").cast<uint32_t>();
    a.send_ops_flags = ia.attr("send_ops_flags").cast<uint64_t>();
    py::object cap = ia.attr("cap");
    a.cap.max_send_wr = cap.attr("max_send_wr").cast<uint32_t>();
    a.cap.max_recv_wr = cap.attr("max_recv_wr").cast<uint32_t>();
    a.cap.max_send_sge = cap.attr("max_send_sge").cast<uint32_t>();
    a.cap.max_recv_sge = cap.attr("max_recv_sge").cast<uint32_t>();
    a.cap.max_inline_data = cap.attr("max_inline_data").cast<uint32_t>();
    py::object scq = ia.attr("send_cq"), rcq = ia.attr("recv_cq");
    if (!scq.is_none())
        a.send_cq = any_cq(scq);
    if (!rcq.is_none())
        a.recv_cq = any_cq(rcq);
    py::object pd = ia.attr("pd"), srq = ia.attr("srq"), xrcd = ia.attr("xrcd"), ind = ia.attr("ind_table");
    if (!pd.is_none())
        a.pd = open_arg<PD>(pd, "PD").pd;
    if (!srq.is_none())
        a.srq = open_arg<SRQ>(srq, "SRQ").srq;
    if (!xrcd.is_none())
        a.xrcd = open_arg<XRCD>(xrcd, "XRCD").xrcd;
    if (!ind.is_none())
        a.rwq_ind_tbl = open_arg<RwqIndTable>(ind, "RwqIndTable").table;
    return a;
}

std::shared_ptr<Mlx5QP> make_mlx5_qp(py::object context, py::object init_attr, py::object dv_init_attr) {
    Context& ctx = context_arg(context);
    ibv_qp_init_attr_ex attr = qp_init_attr_of(init_attr);
    DVQPInitAttr* dv = dv_init_attr.is_none() ? nullptr : &arg_as<DVQPInitAttr>(dv_init_attr, "Mlx5DVQPInitAttr");
    mlx5dv_qp_init_attr dv_attr{};
    if (dv)
        dv_attr = dv->attr;
    auto qp = std::make_shared<Mlx5QP>();
    qp->dc_type = dv ? dv->attr.dc_init_attr.dc_type : 0;
    qp->qp = mlx5dv_create_qp(ctx.ctx, &attr, dv ? &dv_attr : nullptr);
    if (!qp->qp) {
        int e = errno;
        std::string msg = "Failed to create MLX5 QP.\nQPInitAttrEx attributes:\n" +
            py::str(init_attr).cast<std::string>() + "\nMLX5DVQPInitAttr:\n" +
            py::str(dv_init_attr).cast<std::string>();
        errno = e;
        raise_rdma_errno(msg);
    }
    // What the device granted goes back to the caller's attributes.
    init_attr.attr("cap") = py::module_::import("pyverbs.qp")
                                .attr("QPCap")(attr.cap.max_send_wr, attr.cap.max_recv_wr, attr.cap.max_send_sge,
                                               attr.cap.max_recv_sge, attr.cap.max_inline_data);
    if (dv)
        dv->attr = dv_attr;
    qp->context = context;
    qp->adopt(context, ctx);
    py::object pd = init_attr.attr("pd");
    if (!pd.is_none()) {
        qp->pd = pd;
        qp->depend_on(pd, pd.cast<CM&>());
    }
    for (const char* dep : {"xrcd", "ind_table"}) {
        py::object o = init_attr.attr(dep);
        if (!o.is_none())
            qp->depend_on(o, o.cast<CM&>());
    }
    qp->scq = init_attr.attr("send_cq");
    qp->rcq = init_attr.attr("recv_cq");
    qp->srq = init_attr.attr("srq");
    for (py::object* dep : {&qp->scq, &qp->rcq, &qp->srq})
        if (!dep->is_none())
            qp->depend_on(*dep, dep->cast<CM&>());
    if (attr.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
        qp->qpx = ibv_qp_to_qp_ex(qp->qp);
        if (!qp->qpx)
            raise_rdma_errno("Failed to create extended QP");
    }
    return qp;
}

// The mlx5 work-request interface of an Mlx5QP created with send ops.
mlx5dv_qp_ex* dvqp_of(py::handle self) {
    QP& qp = self_of<QP>(self, "Mlx5QP");
    if (!qp.qpx)
        raise_user("The QP was created without send ops flags: no work-request interface");
    mlx5dv_qp_ex* m = mlx5dv_qp_ex_from_ibv_qp_ex(qp.qpx);
    if (!m)
        raise_rdma_errno("Failed to get the mlx5 work-request interface");
    return m;
}

// An mlx5 send operation the QP was not created with has no builder: the
// reference would call through a null pointer, this one refuses.
template <class Hook>
void require_op(Hook hook, const char* what) {
    if (!hook)
        raise_rdma(std::string("Failed to post ") + what + ": the QP was not created with this send operation",
                   EOPNOTSUPP);
}

std::vector<ibv_sge> sge_array(py::handle list) {
    std::vector<ibv_sge> out;
    for (py::handle s : list)
        out.push_back(arg_as<SGE>(s, "SGE").sge);
    return out;
}

std::shared_ptr<Mlx5CQ> make_mlx5_cq(py::object context, py::object init_attr, py::object dv_init_attr) {
    Mlx5Context& ctx = open_arg<Mlx5Context>(context, "Mlx5Context");
    static py::handle cls = py::module_::import("pyverbs.cq").attr("CqInitAttrEx").cast<py::object>().release();
    ibv_cq_init_attr_ex attr{};
    py::object channel = py::none(), parent = py::none();
    if (init_attr.is_none()) {
        attr.cqe = 100;
    } else {
        if (!py::isinstance(init_attr, cls))
            throw py::type_error("Expected CqInitAttrEx, got " +
                                 py::str(py::type::handle_of(init_attr)).cast<std::string>());
        attr.cqe = init_attr.attr("cqe").cast<uint32_t>();
        attr.comp_vector = init_attr.attr("comp_vector").cast<uint32_t>();
        attr.wc_flags = init_attr.attr("wc_flags").cast<uint64_t>();
        attr.comp_mask = init_attr.attr("comp_mask").cast<uint32_t>();
        attr.flags = init_attr.attr("flags").cast<uint32_t>();
        channel = init_attr.attr("comp_channel");
        parent = init_attr.attr("parent_domain");
    }
    if (!channel.is_none())
        attr.channel = open_arg<CompChannel>(channel, "CompChannel").cc;
    if (!parent.is_none()) {
        attr.parent_domain = open_arg<PD>(parent, "PD").pd;
        attr.comp_mask |= IBV_CQ_INIT_ATTR_MASK_PD;
    }
    DVCQInitAttr* dv = dv_init_attr.is_none() ? nullptr : &arg_as<DVCQInitAttr>(dv_init_attr, "Mlx5DVCQInitAttr");
    mlx5dv_cq_init_attr dv_attr{};
    if (dv)
        dv_attr = dv->attr;
    auto cq = std::make_shared<Mlx5CQ>();
    cq->cq = mlx5dv_create_cq(ctx.ctx, &attr, dv ? &dv_attr : nullptr);
    if (!cq->cq) {
        int e = errno;
        std::string msg = "Failed to create MLX5 CQ.\nCQInitAttrEx:\n" + py::str(init_attr).cast<std::string>() +
            "\nMLX5DVCQInitAttr:\n" + py::str(dv_init_attr).cast<std::string>();
        errno = e;
        raise_rdma_errno(msg);
    }
    cq->context = context;
    cq->channel = channel;
    cq->adopt(context, ctx);
    if (!channel.is_none())
        cq->depend_on(channel, channel.cast<CM&>());
    if (!parent.is_none())
        cq->depend_on(parent, parent.cast<CM&>());
    return cq;
}

// A DevX command's mailboxes: the input as given, the output of outlen
// bytes.
struct Mailboxes {
    std::string in;
    std::string out;
    Mailboxes(py::handle in_obj, size_t outlen) : in(mailbox_of(in_obj)), out(outlen, '\0') {}
};

// The status byte and syndrome of a DevX creation's output, as the
// reference checks them.
void check_devx_status(const std::string& out, const char* what) {
    if (out.size() < 8 || out[0] == 0)
        return;
    char syndrome[16];
    snprintf(syndrome, sizeof(syndrome), "%02x%02x%02x%02x", uint8_t(out[4]), uint8_t(out[5]), uint8_t(out[6]),
             uint8_t(out[7]));
    raise_as("PyverbsRDMAError",
             std::string("Failed to create ") + what + " with status(" + py_hex(uint8_t(out[0])) +
                 ") and syndrome (0x" + syndrome + ")");
}

py::object memview_of(const std::string& bytes) { return py::memoryview(py::bytes(bytes)); }

// Atomic copies of 1, 2, 4 or 8 bytes to or from device memory.
void dm_copy(void* dst, const void* src, size_t length) {
    switch (length) {
    case 1: *static_cast<volatile uint8_t*>(dst) = *static_cast<const volatile uint8_t*>(src); break;
    case 2: *static_cast<volatile uint16_t*>(dst) = *static_cast<const volatile uint16_t*>(src); break;
    case 4: *static_cast<volatile uint32_t*>(dst) = *static_cast<const volatile uint32_t*>(src); break;
    case 8: *static_cast<volatile uint64_t*>(dst) = *static_cast<const volatile uint64_t*>(src); break;
    case 16: raise_user("Currently PyVerbs does not support 16 bytes Memic Atomic operations");
    default: raise_user("Memic Atomic operations do not support with length: " + std::to_string(length));
    }
}

uint32_t be32(uint32_t v) { return be32toh(v); }

// A number as C sees it when the reference's Cython passes it on: int()
// of it, so that a float length (mr.length / 2) is taken, as there.
uint64_t as_int(py::handle v) {
    py::object i = steal_checked(PyNumber_Long(v.ptr()));
    return i.cast<uint64_t>();
}

}  // namespace

#define RW(cls, name, field, type) \
    def_property(                  \
        name, [](const cls& o) { return o.field; }, [](cls& o, type v) { o.field = v; })
#define RO(cls, name, expr) def_property_readonly(name, [](const cls& o) { return expr; })

PYBIND11_MODULE(mlx5dv, m) {
    import_deps({"pyverbs.base", "pyverbs.device", "pyverbs.pd", "pyverbs.cq", "pyverbs.addr", "pyverbs.wr",
                 "pyverbs.qp", "pyverbs.srq", "pyverbs.xrcd", "pyverbs.wq", "pyverbs.providers.mlx5.mlx5_enums"});
    m.doc() = "mlx5 direct verbs: mlx5 contexts, QPs and CQs, WQE segments, UARs and the DevX objects";

    m.def("bitmask_to_str", &bitmask_to_str, py::arg("bits"), py::arg("values"));
    m.def("context_comp_mask_to_str", &context_comp_mask_to_str, py::arg("mask"));
    m.def("context_flags_to_str", &context_flags_to_str, py::arg("flags"));
    m.def("swp_to_str", &swp_to_str, py::arg("swps"));
    m.def("cqe_comp_to_str", &cqe_comp_to_str, py::arg("cqe"));
    m.def("tunnel_offloads_to_str", &tunnel_offloads_to_str, py::arg("tun"));
    m.def("dc_type_to_str", &dc_type_to_str, py::arg("dctype"));
    m.def("qp_comp_mask_to_str", &qp_comp_mask_to_str, py::arg("flags"));
    m.def("qp_create_flags_to_str", &qp_create_flags_to_str, py::arg("flags"));
    m.def("send_ops_flags_to_str", &send_ops_flags_to_str, py::arg("flags"));
    m.def("qpts_to_str", &qpts_to_str, py::arg("qp_types"));

    py::class_<DVPortAttr, Object, std::shared_ptr<DVPortAttr>>(m, "Mlx5DVPortAttr",
                                                                "mlx5dv_port: what mlx5dv_query_port() reports")
        .def(py::init<>())
        .RO(DVPortAttr, "flags", o.attr.flags)
        .RO(DVPortAttr, "vport", o.attr.vport)
        .RO(DVPortAttr, "vport_vhca_id", o.attr.vport_vhca_id)
        .RO(DVPortAttr, "esw_owner_vhca_id", o.attr.esw_owner_vhca_id)
        .RO(DVPortAttr, "vport_steering_icm_rx", o.attr.vport_steering_icm_rx)
        .RO(DVPortAttr, "vport_steering_icm_tx", o.attr.vport_steering_icm_tx)
        .RO(DVPortAttr, "reg_c0_value", o.attr.reg_c0.value)
        .RO(DVPortAttr, "reg_c0_mask", o.attr.reg_c0.mask)
        .def("__str__", [](const DVPortAttr& o) { return fmt("flags", py_hex(o.attr.flags)); });

    py::class_<DVContextAttr, Object, std::shared_ptr<DVContextAttr>>(
        m, "Mlx5DVContextAttr", "mlx5dv_context_attr: how an mlx5 device is opened")
        .def(py::init([](uint32_t flags, uint64_t comp_mask) {
                 auto a = std::make_shared<DVContextAttr>();
                 a->attr.flags = flags;
                 a->attr.comp_mask = comp_mask;
                 return a;
             }),
             py::arg("flags") = 0, py::arg("comp_mask") = 0)
        .RW(DVContextAttr, "flags", attr.flags, uint32_t)
        .RW(DVContextAttr, "comp_mask", attr.comp_mask, uint64_t)
        .def("__str__",
             [](const DVContextAttr& o) { return fmt("flags", o.attr.flags) + fmt("comp_mask", o.attr.comp_mask); });

    py::class_<Mlx5DevxObj, CM, std::shared_ptr<Mlx5DevxObj>>(m, "Mlx5DevxObj", "A DevX object")
        .def(py::init([](py::object context, py::object in_, size_t outlen) {
                 Context& ctx = context_arg(context);
                 Mailboxes mb(in_, outlen);
                 auto o = std::make_shared<Mlx5DevxObj>();
                 o->obj = mlx5dv_devx_obj_create(ctx.ctx, mb.in.data(), mb.in.size(), mb.out.data(), outlen);
                 if (!o->obj)
                     raise_rdma_errno("Failed to create DevX object");
                 o->out_view = memview_of(mb.out);
                 o->context = context;
                 o->adopt(context, ctx);
                 check_devx_status(mb.out, "DevX object");
                 return o;
             }),
             py::arg("context"), py::arg("in_"), py::arg("outlen"))
        .def(
            "query",
            [](py::handle self, py::object in_, size_t outlen) {
                Mailboxes mb(in_, outlen);
                if (int rc = mlx5dv_devx_obj_query(self_of<Mlx5DevxObj>(self, "Mlx5DevxObj").obj, mb.in.data(),
                                                   mb.in.size(), mb.out.data(), outlen))
                    raise_rdma("Failed to query DevX object", rc);
                return py::bytes(mb.out);
            },
            py::arg("in_"), py::arg("outlen"))
        .def(
            "modify",
            [](py::handle self, py::object in_, size_t outlen) {
                Mailboxes mb(in_, outlen);
                if (int rc = mlx5dv_devx_obj_modify(self_of<Mlx5DevxObj>(self, "Mlx5DevxObj").obj, mb.in.data(),
                                                    mb.in.size(), mb.out.data(), outlen))
                    raise_rdma("Failed to modify DevX object", rc);
                return py::bytes(mb.out);
            },
            py::arg("in_"), py::arg("outlen"))
        .def(
            "query_async",
            [](py::handle self, py::object in_, size_t outlen, uint64_t wr_id, py::object cmd_comp) {
                Mailboxes mb(in_, outlen);
                mlx5dv_devx_cmd_comp* comp = open_arg<Mlx5DevxCmdComp>(cmd_comp, "Mlx5DevxCmdComp").comp;
                if (int rc = mlx5dv_devx_obj_query_async(self_of<Mlx5DevxObj>(self, "Mlx5DevxObj").obj, mb.in.data(),
                                                         mb.in.size(), outlen, wr_id, comp))
                    raise_rdma("Failed to query DevX object asynchronously", rc);
            },
            py::arg("in_"), py::arg("outlen"), py::arg("wr_id"), py::arg("cmd_comp"))
        .def_property_readonly("out_view", [](const Mlx5DevxObj& o) { return o.out_view; })
        .def_property_readonly("obj", [](const Mlx5DevxObj& o) { return reinterpret_cast<uintptr_t>(o.obj); });

    py::class_<Mlx5DevxCmdComp, CM, std::shared_ptr<Mlx5DevxCmdComp>>(
        m, "Mlx5DevxCmdComp", "A DevX command completion, for asynchronous DevX commands")
        .def(py::init([](py::object context) {
                 Context& ctx = context_arg(context);
                 auto c = std::make_shared<Mlx5DevxCmdComp>();
                 c->comp = mlx5dv_devx_create_cmd_comp(ctx.ctx);
                 if (!c->comp)
                     raise_rdma_errno("Failed to create a DevX command completion");
                 c->context = context;
                 c->adopt(context, ctx);
                 return c;
             }),
             py::arg("context"))
        .def(
            "get_async_cmd_comp",
            [](py::handle self, size_t outlen) {
                Mlx5DevxCmdComp& c = self_of<Mlx5DevxCmdComp>(self, "Mlx5DevxCmdComp");
                std::vector<uint8_t> buf(sizeof(mlx5dv_devx_async_cmd_hdr) + outlen);
                auto* hdr = reinterpret_cast<mlx5dv_devx_async_cmd_hdr*>(buf.data());
                int rc;
                {
                    py::gil_scoped_release unlocked;  // (it waits for the completion)
                    rc = mlx5dv_devx_get_async_cmd_comp(c.comp, hdr, buf.size());
                }
                if (rc)
                    raise_rdma("Failed to get the asynchronous command completion", rc);
                return py::make_tuple(hdr->wr_id,
                                      py::bytes(reinterpret_cast<const char*>(buf.data() + sizeof(*hdr)), outlen));
            },
            py::arg("outlen") = 1024)
        .def_property_readonly(
            "fd", [](py::handle self) { return self_of<Mlx5DevxCmdComp>(self, "Mlx5DevxCmdComp").comp->fd; });

    py::class_<DVContext, Object, std::shared_ptr<DVContext>>(
        m, "Mlx5DVContext", "mlx5dv_context: the mlx5 capabilities mlx5dv_query_device reports")
        .def(py::init<>())
        .RO(DVContext, "version", o.dv.version)
        .RO(DVContext, "flags", o.dv.flags)
        .RW(DVContext, "comp_mask", dv.comp_mask, uint64_t)
        .def_property_readonly("cqe_comp_caps",
                               [](const DVContext& o) {
                                   py::dict d;
                                   d["max_num"] = o.dv.cqe_comp_caps.max_num;
                                   d["supported_format"] = o.dv.cqe_comp_caps.supported_format;
                                   return d;
                               })
        .def_property_readonly("sw_parsing_caps",
                               [](const DVContext& o) {
                                   py::dict d;
                                   d["sw_parsing_offloads"] = o.dv.sw_parsing_caps.sw_parsing_offloads;
                                   d["supported_qpts"] = o.dv.sw_parsing_caps.supported_qpts;
                                   return d;
                               })
        .def_property_readonly("striding_rq_caps",
                               [](const DVContext& o) {
                                   const auto& s = o.dv.striding_rq_caps;
                                   py::dict d;
                                   d["min_single_stride_log_num_of_bytes"] = s.min_single_stride_log_num_of_bytes;
                                   d["max_single_stride_log_num_of_bytes"] = s.max_single_stride_log_num_of_bytes;
                                   d["min_single_wqe_log_num_of_strides"] = s.min_single_wqe_log_num_of_strides;
                                   d["max_single_wqe_log_num_of_strides"] = s.max_single_wqe_log_num_of_strides;
                                   d["supported_qpts"] = s.supported_qpts;
                                   return d;
                               })
        .RO(DVContext, "tunnel_offload_caps", o.dv.tunnel_offloads_caps)
        .RO(DVContext, "max_dynamic_bfregs", o.dv.max_dynamic_bfregs)
        .RO(DVContext, "max_clock_info_update_nsec", o.dv.max_clock_info_update_nsec)
        .RO(DVContext, "flow_action_flags", o.dv.flow_action_flags)
        .RO(DVContext, "dc_odp_caps", o.dv.dc_odp_caps)
        .def_property_readonly("crypto_caps",
                               [](const DVContext& o) {
                                   const auto& c = o.dv.crypto_caps;
                                   py::dict d;
                                   d["failed_selftests"] = c.failed_selftests;
                                   d["crypto_engines"] = c.crypto_engines;
                                   d["wrapped_import_method"] = c.wrapped_import_method;
                                   d["log_max_num_deks"] = c.log_max_num_deks;
                                   d["flags"] = c.flags;
                                   return d;
                               })
        .RO(DVContext, "num_lag_ports", o.dv.num_lag_ports)
        .def_property_readonly("dci_streams_caps",
                               [](const DVContext& o) {
                                   py::dict d;
                                   d["max_log_num_concurent"] = o.dv.dci_streams_caps.max_log_num_concurent;
                                   d["max_log_num_errored"] = o.dv.dci_streams_caps.max_log_num_errored;
                                   return d;
                               })
        .RO(DVContext, "max_wr_memcpy_length", o.dv.max_wr_memcpy_length)
        .def("__str__", [](const DVContext& o) { return dv_context_str(o.dv); });

    py::class_<Mlx5Context, Context, std::shared_ptr<Mlx5Context>>(
        m, "Mlx5Context", "An mlx5 device context, opened with mlx5dv_open_device")
        .def(py::init(&open_mlx5_context), py::arg("attr"), py::arg("name") = "")
        .def(
            "query_mlx5_device",
            [](py::handle self, long long comp_mask) {
                Mlx5Context& c = self_of<Mlx5Context>(self, "Mlx5Context");
                auto d = std::make_shared<DVContext>();
                d->dv.comp_mask = comp_mask == -1 ? kAllContextParts : uint64_t(comp_mask);
                if (int rc = mlx5dv_query_device(c.ctx, &d->dv))
                    raise_rdma("Failed to query mlx5 device " + c.name + ".", rc);
                return d;
            },
            py::arg("comp_mask") = -1)
        .def_static(
            "query_mlx5_port",
            [](py::object ctx, uint32_t port_num) {
                Context& c = context_arg(ctx);
                auto p = std::make_shared<DVPortAttr>();
                if (int rc = mlx5dv_query_port(c.ctx, port_num, &p->attr))
                    raise_rdma("Failed to query dv port mlx5 " + c.name + " port " + std::to_string(port_num) + ".",
                               rc);
                return p;
            },
            py::arg("ctx"), py::arg("port_num"))
        .def_static(
            "reserved_qpn_alloc",
            [](py::object ctx) {
                uint32_t qpn = 0;
                if (int rc = mlx5dv_reserved_qpn_alloc(context_arg(ctx).ctx, &qpn))
                    raise_rdma("Failed to alloc reserved QP number.", rc);
                return qpn;
            },
            py::arg("ctx"))
        .def_static(
            "reserved_qpn_dealloc",
            [](py::object ctx, uint32_t qpn) {
                if (int rc = mlx5dv_reserved_qpn_dealloc(context_arg(ctx).ctx, qpn))
                    raise_rdma("Failed to dealloc QP number " + std::to_string(qpn) + ".", rc);
            },
            py::arg("ctx"), py::arg("qpn"))
        .def_static(
            "crypto_login",
            [](py::object ctx, py::object login_attr) {
                // (pyverbs.providers.mlx5.mlx5dv_crypto, whose
                // Mlx5CryptoLoginAttr this takes, is not built: its fields are
                // read by name from whatever object is given)
                mlx5dv_crypto_login_attr a{};
                if (!login_attr.is_none()) {
                    a.credential_id = py::getattr(login_attr, "credential_id", py::int_(0)).cast<uint32_t>();
                    a.import_kek_id = py::getattr(login_attr, "import_kek_id", py::int_(0)).cast<uint32_t>();
                    a.comp_mask = py::getattr(login_attr, "comp_mask", py::int_(0)).cast<uint64_t>();
                    py::object cred = py::getattr(login_attr, "credential", py::none());
                    if (!cred.is_none()) {
                        std::string b = mailbox_of(cred);
                        memcpy(a.credential, b.data(), std::min(b.size(), sizeof(a.credential)));
                    }
                }
                if (int rc = mlx5dv_crypto_login(context_arg(ctx).ctx, &a))
                    raise_rdma("Failed to create crypto login session.", rc);
            },
            py::arg("ctx"), py::arg("login_attr"))
        .def_static(
            "query_login_state",
            [](py::object ctx) {
                mlx5dv_crypto_login_state state{};
                if (int rc = mlx5dv_crypto_login_query_state(context_arg(ctx).ctx, &state))
                    raise_rdma("Failed to query the crypto login session state.", rc);
                return int(state);
            },
            py::arg("ctx"))
        .def_static(
            "crypto_logout",
            [](py::object ctx) {
                if (int rc = mlx5dv_crypto_logout(context_arg(ctx).ctx))
                    raise_rdma("Failed to logout from crypto login session.", rc);
            },
            py::arg("ctx"))
        .def(
            "devx_general_cmd",
            [](py::handle self, py::object in_, size_t outlen) {
                Mailboxes mb(in_, outlen);
                if (int rc = mlx5dv_devx_general_cmd(self_of<Mlx5Context>(self, "Mlx5Context").ctx, mb.in.data(),
                                                     mb.in.size(), mb.out.data(), outlen))
                    raise_rdma("DevX general command failed", rc);
                return py::bytes(mb.out);
            },
            py::arg("in_"), py::arg("outlen"))
        .def_static(
            "device_timestamp_to_ns",
            [](py::object ctx, uint64_t device_timestamp) {
                mlx5dv_clock_info info{};
                if (int rc = mlx5dv_get_clock_info(context_arg(ctx).ctx, &info))
                    raise_rdma("Failed to get the clock info", rc);
                return mlx5dv_ts_to_ns(&info, device_timestamp);
            },
            py::arg("ctx"), py::arg("device_timestamp"))
        .def(
            "devx_query_eqn",
            [](py::handle self, uint32_t vector) {
                uint32_t eqn = 0;
                if (int rc = mlx5dv_devx_query_eqn(self_of<Mlx5Context>(self, "Mlx5Context").ctx, vector, &eqn))
                    raise_rdma("Failed to query EQN", rc);
                return eqn;
            },
            py::arg("vector"));

    py::class_<DCIStreamInitAttr, Object, std::shared_ptr<DCIStreamInitAttr>>(
        m, "Mlx5DCIStreamInitAttr", "mlx5dv_dci_streams: a DCI's stream channels")
        .def(py::init([](uint8_t log_num_concurent, uint8_t log_num_errored) {
                 auto a = std::make_shared<DCIStreamInitAttr>();
                 a->dci_streams.log_num_concurent = log_num_concurent;
                 a->dci_streams.log_num_errored = log_num_errored;
                 return a;
             }),
             py::arg("log_num_concurent") = 0, py::arg("log_num_errored") = 0)
        .RW(DCIStreamInitAttr, "log_num_concurent", dci_streams.log_num_concurent, uint8_t)
        .RW(DCIStreamInitAttr, "log_num_errored", dci_streams.log_num_errored, uint8_t)
        .def("__str__", [](const DCIStreamInitAttr& o) {
            return fmt("DCI Stream log_num_concurent", o.dci_streams.log_num_concurent) +
                fmt("DCI Stream log_num_errored", o.dci_streams.log_num_errored);
        });

    py::class_<DVDCInitAttr, Object, std::shared_ptr<DVDCInitAttr>>(
        m, "Mlx5DVDCInitAttr", "mlx5dv_dc_init_attr: the DC type and key of a DC QP")
        .def(py::init([](int dc_type, uint64_t dct_access_key, py::object dci_streams) {
                 auto a = std::make_shared<DVDCInitAttr>();
                 a->attr.dc_type = mlx5dv_dc_type(dc_type);
                 a->attr.dct_access_key = dct_access_key;
                 if (!dci_streams.is_none()) {
                     a->attr.dci_streams.log_num_concurent = dci_streams.attr("log_num_concurent").cast<uint8_t>();
                     a->attr.dci_streams.log_num_errored = dci_streams.attr("log_num_errored").cast<uint8_t>();
                 }
                 return a;
             }),
             py::arg("dc_type") = int(MLX5DV_DCTYPE_DCI), py::arg("dct_access_key") = 0,
             py::arg("dci_streams") = py::none())
        .def_property(
            "dc_type", [](const DVDCInitAttr& o) { return int(o.attr.dc_type); },
            [](DVDCInitAttr& o, int v) { o.attr.dc_type = mlx5dv_dc_type(v); })
        .RW(DVDCInitAttr, "dct_access_key", attr.dct_access_key, uint64_t)
        .def_property(
            "dci_streams", [](const DVDCInitAttr& o) { return dci_streams_dict(o.attr.dci_streams); },
            [](DVDCInitAttr& o, py::object v) { o.attr.dci_streams = dci_streams_from(v); })
        .def("__str__", [](const DVDCInitAttr& o) {
            return fmt("DC type", dc_type_to_str(py::int_(int(o.attr.dc_type)))) +
                fmt("DCT access key", o.attr.dct_access_key) +
                fmt("DCI Stream log_num_concurent", o.attr.dci_streams.log_num_concurent) +
                fmt("DCI Stream log_num_errored", o.attr.dci_streams.log_num_errored);
        });

    py::class_<DVQPInitAttr, Object, std::shared_ptr<DVQPInitAttr>>(
        m, "Mlx5DVQPInitAttr", "mlx5dv_qp_init_attr: the mlx5 attributes of a QP's creation")
        .def(py::init([](uint64_t comp_mask, uint32_t create_flags, py::object dc_init_attr, uint64_t send_ops_flags) {
                 auto a = std::make_shared<DVQPInitAttr>();
                 a->attr.comp_mask = comp_mask;
                 a->attr.create_flags = create_flags;
                 a->attr.send_ops_flags = send_ops_flags;
                 if (!dc_init_attr.is_none()) {
                     const DVDCInitAttr& dc = arg_as<DVDCInitAttr>(dc_init_attr, "Mlx5DVDCInitAttr");
                     a->attr.dc_init_attr.dc_type = dc.attr.dc_type;
                     if (comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS)
                         a->attr.dc_init_attr.dci_streams = dc.attr.dci_streams;
                     else
                         a->attr.dc_init_attr.dct_access_key = dc.attr.dct_access_key;
                 }
                 return a;
             }),
             py::arg("comp_mask") = 0, py::arg("create_flags") = 0, py::arg("dc_init_attr") = py::none(),
             py::arg("send_ops_flags") = 0)
        .RW(DVQPInitAttr, "comp_mask", attr.comp_mask, uint64_t)
        .RW(DVQPInitAttr, "create_flags", attr.create_flags, uint32_t)
        .RW(DVQPInitAttr, "send_ops_flags", attr.send_ops_flags, uint64_t)
        .def_property(
            "dc_type", [](const DVQPInitAttr& o) { return int(o.attr.dc_init_attr.dc_type); },
            [](DVQPInitAttr& o, int v) { o.attr.dc_init_attr.dc_type = mlx5dv_dc_type(v); })
        .RW(DVQPInitAttr, "dct_access_key", attr.dc_init_attr.dct_access_key, uint64_t)
        .def_property(
            "dci_streams", [](const DVQPInitAttr& o) { return dci_streams_dict(o.attr.dc_init_attr.dci_streams); },
            [](DVQPInitAttr& o, py::object v) { o.attr.dc_init_attr.dci_streams = dci_streams_from(v); })
        .def("__str__", [](const DVQPInitAttr& o) {
            const auto& dc = o.attr.dc_init_attr;
            return fmt("Comp mask", qp_comp_mask_to_str(py::int_(o.attr.comp_mask))) +
                fmt("Create flags", qp_create_flags_to_str(py::int_(o.attr.create_flags))) + "DC init attr:\n" +
                fmt("  DC type", dc_type_to_str(py::int_(int(dc.dc_type)))) +
                fmt("  DCI Stream log_num_concurent", dc.dci_streams.log_num_concurent) +
                fmt("  DCI Stream log_num_errored", dc.dci_streams.log_num_errored) +
                fmt("  DCT access key", dc.dct_access_key) +
                fmt("Send ops flags", send_ops_flags_to_str(py::int_(o.attr.send_ops_flags)));
        });

    py::class_<Mlx5QP, QPEx, std::shared_ptr<Mlx5QP>>(m, "Mlx5QP", "A QP created with mlx5dv_create_qp")
        .def(py::init(&make_mlx5_qp), py::arg("context"), py::arg("init_attr"), py::arg("dv_init_attr"))
        .def(
            "wr_set_dc_addr",
            [](py::handle self, py::object ah, uint32_t remote_dctn, uint64_t remote_dc_key) {
                mlx5dv_qp_ex* q = dvqp_of(self);
                require_op(q->wr_set_dc_addr, "a DC address");
                mlx5dv_wr_set_dc_addr(q, open_arg<AH>(ah, "AH").ah, remote_dctn, remote_dc_key);
            },
            py::arg("ah"), py::arg("remote_dctn"), py::arg("remote_dc_key"))
        .def(
            "wr_raw_wqe",
            [](py::handle self, py::object wqe) {
                mlx5dv_qp_ex* q = dvqp_of(self);
                require_op(q->wr_raw_wqe, "a raw WQE");
                auto addr = wqe.attr("address").cast<uintptr_t>();
                mlx5dv_wr_raw_wqe(q, reinterpret_cast<const void*>(addr));
            },
            py::arg("wqe"))
        .def(
            "wr_mr_interleaved",
            [](py::handle self, py::object, uint32_t, uint32_t, py::object) {
                require_op(dvqp_of(self)->wr_mr_interleaved, "an interleaved MR");
                // (unreachable: no QP of this library has the builder; the
                // mkeys it takes come from pyverbs.providers.mlx5.mlx5dv_mkey)
                raise_rdma("Failed to post an interleaved MR", EOPNOTSUPP);
            },
            py::arg("mkey"), py::arg("access_flags"), py::arg("repeat_count"), py::arg("mr_interleaved_lst"))
        .def(
            "wr_mr_list",
            [](py::handle self, py::object, uint32_t, py::object) {
                require_op(dvqp_of(self)->wr_mr_list, "an MR list");
                raise_rdma("Failed to post an MR list", EOPNOTSUPP);
            },
            py::arg("mkey"), py::arg("access_flags"), py::arg("sge_list"))
        .def(
            "wr_mkey_configure",
            [](py::handle self, py::object, uint8_t, py::object) {
                require_op(dvqp_of(self)->wr_mkey_configure, "an mkey configuration");
                raise_rdma("Failed to post an mkey configuration", EOPNOTSUPP);
            },
            py::arg("mkey"), py::arg("num_setters"), py::arg("mkey_config"))
        .def(
            "wr_set_mkey_access_flags",
            [](py::handle self, uint32_t access_flags) {
                mlx5dv_qp_ex* q = dvqp_of(self);
                require_op(q->wr_set_mkey_access_flags, "mkey access flags");
                mlx5dv_wr_set_mkey_access_flags(q, access_flags);
            },
            py::arg("access_flags"))
        .def(
            "wr_set_mkey_layout_list",
            [](py::handle self, py::object sge_list) {
                mlx5dv_qp_ex* q = dvqp_of(self);
                require_op(q->wr_set_mkey_layout_list, "an mkey layout");
                std::vector<ibv_sge> sges = sge_array(sge_list);
                mlx5dv_wr_set_mkey_layout_list(q, uint16_t(sges.size()), sges.data());
            },
            py::arg("sge_list"))
        .def(
            "wr_set_mkey_layout_interleaved",
            [](py::handle self, uint32_t, py::object) {
                require_op(dvqp_of(self)->wr_set_mkey_layout_interleaved, "an interleaved mkey layout");
                raise_rdma("Failed to post an interleaved mkey layout", EOPNOTSUPP);
            },
            py::arg("repeat_count"), py::arg("mr_interleaved_lst"))
        .def(
            "wr_set_mkey_crypto",
            [](py::handle self, py::object) {
                require_op(dvqp_of(self)->wr_set_mkey_crypto, "mkey crypto attributes");
                raise_rdma("Failed to post mkey crypto attributes", EOPNOTSUPP);
            },
            py::arg("attr"))
        .def(
            "wr_set_mkey_sig_block",
            [](py::handle self, py::object) {
                require_op(dvqp_of(self)->wr_set_mkey_sig_block, "mkey signature attributes");
                raise_rdma("Failed to post mkey signature attributes", EOPNOTSUPP);
            },
            py::arg("block_attr"))
        .def(
            "wr_memcpy",
            [](py::handle self, uint32_t dest_lkey, uint64_t dest_addr, uint32_t src_lkey, uint64_t src_addr,
               size_t length) {
                mlx5dv_qp_ex* q = dvqp_of(self);
                require_op(q->wr_memcpy, "a DMA memcpy");
                mlx5dv_wr_memcpy(q, dest_lkey, dest_addr, src_lkey, src_addr, length);
            },
            py::arg("dest_lkey"), py::arg("dest_addr"), py::arg("src_lkey"), py::arg("src_addr"), py::arg("length"))
        .def(
            "cancel_posted_send_wrs",
            [](py::handle self, uint64_t wr_id) {
                int rc = mlx5dv_qp_cancel_posted_send_wrs(dvqp_of(self), wr_id);
                if (rc < 0)
                    raise_rdma("Failed to cancel send WRs", -rc);
                return rc;
            },
            py::arg("wr_id"))
        .def(
            "wr_set_dc_addr_stream",
            [](py::handle self, py::object ah, uint32_t remote_dctn, uint64_t remote_dc_key, uint16_t stream_id) {
                mlx5dv_qp_ex* q = dvqp_of(self);
                require_op(q->wr_set_dc_addr_stream, "a DC stream address");
                mlx5dv_wr_set_dc_addr_stream(q, open_arg<AH>(ah, "AH").ah, remote_dctn, remote_dc_key, stream_id);
            },
            py::arg("ah"), py::arg("remote_dctn"), py::arg("remote_dc_key"), py::arg("stream_id"))
        .def_static(
            "query_lag_port",
            [](py::object qp) {
                QP& q = open_arg<QP>(qp, "QP");
                uint8_t port = 0, active = 0;
                if (int rc = mlx5dv_query_qp_lag_port(q.qp, &port, &active))
                    raise_rdma("Failed to query QP #" + std::to_string(q.qp->qp_num), rc);
                return py::make_tuple(port, active);
            },
            py::arg("qp"))
        .def_static(
            "modify_lag_port",
            [](py::object qp, uint8_t port_num) {
                QP& q = open_arg<QP>(qp, "QP");
                if (int rc = mlx5dv_modify_qp_lag_port(q.qp, port_num))
                    raise_rdma("Failed to modify lag of QP #" + std::to_string(q.qp->qp_num), rc);
            },
            py::arg("qp"), py::arg("port_num"))
        .def_static(
            "modify_qp_sched_elem",
            [](py::object qp, py::object req, py::object resp) {
                QP& q = open_arg<QP>(qp, "QP");
                // (scheduling leaves come from pyverbs.providers.mlx5.mlx5dv_sched,
                // which is not built: only None can be given)
                for (py::object* leaf : {&req, &resp})
                    if (!leaf->is_none())
                        throw py::type_error("Expected Mlx5dvSchedLeaf, got " +
                                             py::str(py::type::handle_of(*leaf)).cast<std::string>());
                if (int rc = mlx5dv_modify_qp_sched_elem(q.qp, nullptr, nullptr))
                    raise_rdma("Failed to modify QP #" + std::to_string(q.qp->qp_num) + " sched element", rc);
            },
            py::arg("qp"), py::arg("req_sched_leaf") = py::none(), py::arg("resp_sched_leaf") = py::none())
        .def_static(
            "modify_udp_sport",
            [](py::object qp, uint16_t udp_sport) {
                QP& q = open_arg<QP>(qp, "QP");
                if (int rc = mlx5dv_modify_qp_udp_sport(q.qp, udp_sport))
                    raise_rdma("Failed to modify UDP source port of QP #" + std::to_string(q.qp->qp_num), rc);
            },
            py::arg("qp"), py::arg("udp_sport"))
        .def_static(
            "map_ah_to_qp",
            [](py::object ah, uint32_t qp_num) {
                if (int rc = mlx5dv_map_ah_to_qp(open_arg<AH>(ah, "AH").ah, qp_num))
                    raise_rdma("Failed to map AH to QP #" + std::to_string(qp_num), rc);
            },
            py::arg("ah"), py::arg("qp_num"))
        .def_static(
            "modify_dci_stream_channel_id",
            [](py::object qp, uint16_t stream_id) {
                QP& q = open_arg<QP>(qp, "QP");
                if (int rc = mlx5dv_dci_stream_id_reset(q.qp, stream_id))
                    raise_rdma("Failed to reset stream_id #" + std::to_string(stream_id) + " for DCI QP#" +
                                   std::to_string(q.qp->qp_num),
                               rc);
            },
            py::arg("qp"), py::arg("stream_id"));

    py::class_<DVCQInitAttr, Object, std::shared_ptr<DVCQInitAttr>>(
        m, "Mlx5DVCQInitAttr", "mlx5dv_cq_init_attr: the mlx5 attributes of a CQ's creation")
        .def(py::init([](uint64_t comp_mask, uint8_t cqe_comp_res_format, uint32_t flags, uint16_t cqe_size) {
                 auto a = std::make_shared<DVCQInitAttr>();
                 a->attr.comp_mask = comp_mask;
                 a->attr.cqe_comp_res_format = cqe_comp_res_format;
                 a->attr.flags = flags;
                 a->attr.cqe_size = cqe_size;
                 return a;
             }),
             py::arg("comp_mask") = 0, py::arg("cqe_comp_res_format") = 0, py::arg("flags") = 0,
             py::arg("cqe_size") = 0)
        .RW(DVCQInitAttr, "comp_mask", attr.comp_mask, uint64_t)
        .RW(DVCQInitAttr, "cqe_comp_res_format", attr.cqe_comp_res_format, uint8_t)
        .RW(DVCQInitAttr, "flags", attr.flags, uint32_t)
        .RW(DVCQInitAttr, "cqe_size", attr.cqe_size, uint16_t)
        .def("__str__", [](const DVCQInitAttr& o) {
            // (the flag's name with a stray '}' is the reference's)
            py::dict flags = table({{MLX5DV_CQ_INIT_ATTR_FLAGS_CQE_PAD, "MLX5DV_CQ_INIT_ATTR_FLAGS_CQE_PAD}"}});
            py::dict mask = table({{MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE, "MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE"},
                                   {MLX5DV_CQ_INIT_ATTR_MASK_FLAGS, "MLX5DV_CQ_INIT_ATTR_MASK_FLAGS"},
                                   {MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE, "MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE"}});
            py::dict formats = table({{MLX5DV_CQE_RES_FORMAT_HASH, "MLX5DV_CQE_RES_FORMAT_HASH"},
                                      {MLX5DV_CQE_RES_FORMAT_CSUM, "MLX5DV_CQE_RES_FORMAT_CSUM"},
                                      {MLX5DV_CQE_RES_FORMAT_CSUM_STRIDX, "MLX5DV_CQE_RES_FORMAT_CSUM_STRIDX"}});
            return "Mlx5DVCQInitAttr:\n" + fmt("comp_mask", bitmask_to_str(py::int_(o.attr.comp_mask), mask), 22) +
                fmt("CQE compression format", bitmask_to_str(py::int_(o.attr.cqe_comp_res_format), formats), 22) +
                fmt("flags", bitmask_to_str(py::int_(o.attr.flags), flags), 22) + fmt("CQE size", o.attr.cqe_size, 22);
        });

    py::class_<Mlx5CQ, CQEX, std::shared_ptr<Mlx5CQ>>(m, "Mlx5CQ", "An extended CQ created with mlx5dv_create_cq")
        .def(py::init(&make_mlx5_cq), py::arg("context"), py::arg("init_attr"), py::arg("dv_init_attr"))
        .def("__str__", [](py::handle self) {
            ibv_cq_ex* cq = self_of<CQEX>(self, "Mlx5CQ").cq;
            return "Mlx5 CQ:\n" + fmt("Handle", cq->handle, 22) + fmt("CQEs", cq->cqe, 22);
        });

    py::class_<Mlx5VAR, Object, std::shared_ptr<Mlx5VAR>>(m, "Mlx5VAR", "A virtio access region (mlx5dv_alloc_var)")
        .def(py::init([](py::object context, uint32_t flags) {
                 Context& ctx = context_arg(context);
                 auto v = std::make_shared<Mlx5VAR>();
                 v->var = mlx5dv_alloc_var(ctx.ctx, flags);
                 if (!v->var)
                     raise_rdma_errno("Failed to allocate VAR");
                 v->context = context;
                 v->adopt(context, ctx);
                 return v;
             }),
             py::arg("context"), py::arg("flags") = 0)
        .def("close", [](Mlx5VAR& v) { v.close(); })
        .def("__str__",
             [](py::handle self) {
                 mlx5dv_var* v = self_of<Mlx5VAR>(self, "Mlx5VAR").var;
                 return fmt("page id", v->page_id) + fmt("length", v->length) + fmt("mmap offset", v->mmap_off) +
                     fmt("compatibility mask", v->comp_mask);
             })
        .def_property_readonly("page_id",
                               [](py::handle self) { return self_of<Mlx5VAR>(self, "Mlx5VAR").var->page_id; })
        .def_property_readonly("length", [](py::handle self) { return self_of<Mlx5VAR>(self, "Mlx5VAR").var->length; })
        .def_property_readonly("mmap_off",
                               [](py::handle self) { return self_of<Mlx5VAR>(self, "Mlx5VAR").var->mmap_off; })
        .def_property_readonly("comp_mask",
                               [](py::handle self) { return self_of<Mlx5VAR>(self, "Mlx5VAR").var->comp_mask; });

    py::class_<Mlx5PP, Object, std::shared_ptr<Mlx5PP>>(m, "Mlx5PP", "A packet pacing entry (mlx5dv_pp_alloc)")
        .def(py::init([](py::object context, py::object pp_context, uint32_t flags) {
                 Context& ctx = context_arg(context);
                 std::string pp = mailbox_of(pp_context);
                 auto p = std::make_shared<Mlx5PP>();
                 p->pp = mlx5dv_pp_alloc(ctx.ctx, pp.size(), pp.data(), flags);
                 if (!p->pp)
                     raise_rdma_errno("Failed to allocate packet pacing entry");
                 p->context = context;
                 p->adopt(context, ctx);
                 return p;
             }),
             py::arg("context"), py::arg("pp_context"), py::arg("flags") = 0)
        .def("close", [](Mlx5PP& p) { p.close(); })
        .def_property_readonly("index", [](py::handle self) { return self_of<Mlx5PP>(self, "Mlx5PP").pp->index; });

    py::class_<Mlx5UAR, Object, std::shared_ptr<Mlx5UAR>>(m, "Mlx5UAR", "A UAR of the application's (DevX)")
        .def(py::init([](py::object context, uint32_t flags) {
                 Context& ctx = context_arg(context);
                 auto u = std::make_shared<Mlx5UAR>();
                 u->uar = mlx5dv_devx_alloc_uar(ctx.ctx, flags);
                 if (!u->uar)
                     raise_rdma_errno("Failed to allocate UAR");
                 u->adopt(context, ctx);
                 return u;
             }),
             py::arg("context"), py::arg("flags") = 0)
        .def("close", [](Mlx5UAR& u) { u.close(); })
        .def("__str__",
             [](py::handle self) {
                 mlx5dv_devx_uar* u = self_of<Mlx5UAR>(self, "Mlx5UAR").uar;
                 return fmt("reg addr", reinterpret_cast<uintptr_t>(u->reg_addr)) +
                     fmt("base addr", reinterpret_cast<uintptr_t>(u->base_addr)) + fmt("page id", u->page_id) +
                     fmt("mmap off", (long long)u->mmap_off) + fmt("comp mask", u->comp_mask);
             })
        .def_property_readonly("reg_addr",
                               [](py::handle self) {
                                   return reinterpret_cast<uintptr_t>(self_of<Mlx5UAR>(self, "Mlx5UAR").uar->reg_addr);
                               })
        .def_property_readonly("base_addr",
                               [](py::handle self) {
                                   return reinterpret_cast<uintptr_t>(self_of<Mlx5UAR>(self, "Mlx5UAR").uar->base_addr);
                               })
        .def_property_readonly("page_id",
                               [](py::handle self) { return self_of<Mlx5UAR>(self, "Mlx5UAR").uar->page_id; })
        .def_property_readonly(
            "mmap_off", [](py::handle self) { return (long long)self_of<Mlx5UAR>(self, "Mlx5UAR").uar->mmap_off; })
        .def_property_readonly("comp_mask",
                               [](py::handle self) { return self_of<Mlx5UAR>(self, "Mlx5UAR").uar->comp_mask; })
        .def_property_readonly(
            "uar", [](py::handle self) { return reinterpret_cast<uintptr_t>(self_of<Mlx5UAR>(self, "Mlx5UAR").uar); });

    py::class_<Mlx5DmOpAddr, CM, std::shared_ptr<Mlx5DmOpAddr>>(m, "Mlx5DmOpAddr",
                                                                "The mapped address of a DM operation")
        .def(py::init([](py::object dm, uint8_t op) {
                 DM& d = open_arg<DM>(dm, "DM");
                 auto a = std::make_shared<Mlx5DmOpAddr>();
                 a->addr = mlx5dv_dm_map_op_addr(d.dm, op);
                 if (!a->addr)
                     raise_rdma_errno("Failed to get DM operation address");
                 a->dm = dm;
                 return a;
             }),
             py::arg("dm"), py::arg("op") = 0)
        .def(
            "unmap", [](Mlx5DmOpAddr& a, size_t length) { munmap(a.addr, length); }, py::arg("length"))
        .def(
            "write",
            [](Mlx5DmOpAddr& a, py::bytes data) {
                std::string d = data;
                dm_copy(a.addr, d.data(), d.size());
            },
            py::arg("data"))
        .def(
            "read",
            [](Mlx5DmOpAddr& a, size_t length) {
                std::string out(length, '\0');
                dm_copy(out.data(), a.addr, length);
                return py::bytes(out);
            },
            py::arg("length"))
        .def_property_readonly("addr", [](const Mlx5DmOpAddr& a) { return reinterpret_cast<uintptr_t>(a.addr); });

    py::class_<WqeSeg, CM, std::shared_ptr<WqeSeg>>(m, "WqeSeg", "A WQE segment; its subclasses are the segment kinds")
        .def(py::init<>())
        .def_static("sizeof", []() { return 0; })
        .def(
            "_copy_to_buffer",
            [](py::handle self, uintptr_t addr) {
                WqeSeg& s = self.cast<WqeSeg&>();
                size_t n = self.attr("sizeof")().cast<size_t>();
                if (n && s.segment)
                    memcpy(reinterpret_cast<void*>(addr), s.segment, n);
            },
            py::arg("addr"));

    py::class_<WqeCtrlSeg, WqeSeg, std::shared_ptr<WqeCtrlSeg>>(m, "WqeCtrlSeg", "mlx5_wqe_ctrl_seg")
        .def(py::init([](uint16_t pi, uint8_t opcode, uint8_t opmod, uint32_t qp_num, uint8_t fm_ce_se, uint8_t ds,
                         uint8_t signature, uint32_t imm) {
                 auto s = std::make_shared<WqeCtrlSeg>();
                 s->segment = calloc(sizeof(mlx5_wqe_ctrl_seg), 1);
                 if (!s->segment)
                     throw std::bad_alloc();
                 mlx5dv_set_ctrl_seg(s->seg(), pi, opcode, opmod, qp_num, fm_ce_se, ds, signature, imm);
                 return s;
             }),
             py::arg("pi") = 0, py::arg("opcode") = 0, py::arg("opmod") = 0, py::arg("qp_num") = 0,
             py::arg("fm_ce_se") = 0, py::arg("ds") = 0, py::arg("signature") = 0, py::arg("imm") = 0)
        .def(
            "set_ctrl_seg",
            [](WqeCtrlSeg& s, uint16_t pi, uint8_t opcode, uint8_t opmod, uint32_t qp_num, uint8_t fm_ce_se, uint8_t ds,
               uint8_t signature,
               uint32_t imm) { mlx5dv_set_ctrl_seg(s.seg(), pi, opcode, opmod, qp_num, fm_ce_se, ds, signature, imm); },
            py::arg("pi"), py::arg("opcode"), py::arg("opmod"), py::arg("qp_num"), py::arg("fm_ce_se"), py::arg("ds"),
            py::arg("signature"), py::arg("imm"))
        .def_static("sizeof", []() { return sizeof(mlx5_wqe_ctrl_seg); })
        .def("__str__",
             [](const WqeCtrlSeg& s) {
                 return fmt("opcode", s.seg()->opmod_idx_opcode) + fmt("qpn_ds", s.seg()->qpn_ds) +
                     fmt("signature", s.seg()->signature) + fmt("fm_ce_se", s.seg()->fm_ce_se) +
                     fmt("imm", s.seg()->imm);
             })
        .def_property_readonly("addr", [](const WqeCtrlSeg& s) { return reinterpret_cast<uintptr_t>(s.segment); })
        .def_property(
            "opmod_idx_opcode", [](const WqeCtrlSeg& s) { return be32(s.seg()->opmod_idx_opcode); },
            [](WqeCtrlSeg& s, uint32_t v) { s.seg()->opmod_idx_opcode = htobe32(v); })
        .def_property(
            "qpn_ds", [](const WqeCtrlSeg& s) { return be32(s.seg()->qpn_ds); },
            [](WqeCtrlSeg& s, uint32_t v) { s.seg()->qpn_ds = htobe32(v); })
        .def_property(
            "signature", [](const WqeCtrlSeg& s) { return s.seg()->signature; },
            [](WqeCtrlSeg& s, uint8_t v) { s.seg()->signature = v; })
        .def_property(
            "fm_ce_se", [](const WqeCtrlSeg& s) { return s.seg()->fm_ce_se; },
            [](WqeCtrlSeg& s, uint8_t v) { s.seg()->fm_ce_se = v; })
        .def_property(
            "imm", [](const WqeCtrlSeg& s) { return be32(s.seg()->imm); },
            [](WqeCtrlSeg& s, uint32_t v) { s.seg()->imm = htobe32(v); });

    py::class_<WqeDataSeg, WqeSeg, std::shared_ptr<WqeDataSeg>>(m, "WqeDataSeg", "mlx5_wqe_data_seg")
        .def(py::init([](py::object length, py::object lkey, py::object addr) {
                 auto s = std::make_shared<WqeDataSeg>();
                 s->segment = calloc(sizeof(mlx5_wqe_data_seg), 1);
                 if (!s->segment)
                     throw std::bad_alloc();
                 mlx5dv_set_data_seg(s->seg(), uint32_t(as_int(length)), uint32_t(as_int(lkey)), as_int(addr));
                 return s;
             }),
             py::arg("length") = 0, py::arg("lkey") = 0, py::arg("addr") = 0)
        .def_static("sizeof", []() { return sizeof(mlx5_wqe_data_seg); })
        .def("__str__",
             [](const WqeDataSeg& s) {
                 return fmt("byte_count", s.seg()->byte_count) + fmt("lkey", s.seg()->lkey) +
                     fmt("addr", (unsigned long long)s.seg()->addr);
             })
        .def(
            "set_data_seg",
            [](WqeDataSeg& s, py::object length, py::object lkey, py::object addr) {
                mlx5dv_set_data_seg(s.seg(), uint32_t(as_int(length)), uint32_t(as_int(lkey)), as_int(addr));
            },
            py::arg("length"), py::arg("lkey"), py::arg("addr"))
        .def_property(
            "byte_count", [](const WqeDataSeg& s) { return be32(s.seg()->byte_count); },
            [](WqeDataSeg& s, uint32_t v) { s.seg()->byte_count = htobe32(v); })
        .def_property(
            "lkey", [](const WqeDataSeg& s) { return be32(s.seg()->lkey); },
            [](WqeDataSeg& s, uint32_t v) { s.seg()->lkey = htobe32(v); })
        .def_property(
            "addr", [](const WqeDataSeg& s) { return (unsigned long long)be64toh(s.seg()->addr); },
            [](WqeDataSeg& s, uint64_t v) { s.seg()->addr = htobe64(v); });

    py::class_<Wqe, CM, std::shared_ptr<Wqe>>(m, "Wqe", "A WQE: one or more segments, in memory of its own or at addr")
        .def(py::init([](py::object segments, uintptr_t addr) {
                 auto w = std::make_shared<Wqe>();
                 w->segments = segments;
                 py::object seg_cls = py::module_::import("pyverbs.providers.mlx5.mlx5dv").attr("WqeSeg");
                 if (addr) {
                     w->user_addr = true;
                     w->addr = reinterpret_cast<void*>(addr);
                 } else {
                     size_t size = 0;
                     for (py::handle s : segments)
                         size += py::isinstance(s, seg_cls) ? s.attr("sizeof")().cast<size_t>() : py::len(s);
                     w->addr = calloc(size ? size : 1, 1);
                     if (!w->addr)
                         throw std::bad_alloc();
                 }
                 uintptr_t at = reinterpret_cast<uintptr_t>(w->addr);
                 for (py::handle s : segments) {
                     if (py::isinstance(s, seg_cls)) {
                         s.attr("_copy_to_buffer")(at);
                         at += s.attr("sizeof")().cast<size_t>();
                     } else {
                         std::string b = mailbox_of(s);
                         memcpy(reinterpret_cast<void*>(at), b.data(), b.size());
                         at += b.size();
                     }
                 }
                 return w;
             }),
             py::arg("segments"), py::arg("addr") = 0)
        .def_property_readonly("address", [](const Wqe& w) { return reinterpret_cast<uintptr_t>(w.addr); })
        .def("__str__", [](const Wqe& w) {
            std::string out;
            int i = 0;
            for (py::handle s : w.segments) {
                out += "Segment type " + py::str(py::type::handle_of(s)).cast<std::string>() + " #" +
                    std::to_string(i++) + ":\n" + py::str(s).cast<std::string>();
            }
            return out;
        });

    py::class_<Mlx5UMEM, CM, std::shared_ptr<Mlx5UMEM>>(m, "Mlx5UMEM", "User memory registered for DevX")
        .def(py::init([](py::object context, size_t size, py::object addr, size_t alignment, uint32_t access,
                         uint64_t pgsz_bitmap, uint64_t comp_mask, int dmabuf_fd) {
                 Context& ctx = context_arg(context);
                 auto u = std::make_shared<Mlx5UMEM>();
                 if (!addr.is_none()) {
                     u->addr = reinterpret_cast<void*>(addr.cast<uintptr_t>());
                     u->user_addr = true;
                 } else {
                     if (int rc = posix_memalign(&u->addr, alignment, size))
                         raise_rdma("Failed to allocate memory", rc);
                     memset(u->addr, 0, size);
                 }
                 if (pgsz_bitmap || comp_mask) {
                     mlx5dv_devx_umem_in in{};
                     in.addr = u->addr;
                     in.size = size;
                     in.access = access;
                     in.pgsz_bitmap = pgsz_bitmap;
                     in.comp_mask = comp_mask;
                     in.dmabuf_fd = dmabuf_fd;
                     u->umem = mlx5dv_devx_umem_reg_ex(ctx.ctx, &in);
                 } else {
                     u->umem = mlx5dv_devx_umem_reg(ctx.ctx, u->addr, size, access);
                 }
                 if (!u->umem) {
                     int e = errno;
                     u->free_buffer();
                     errno = e;
                     raise_rdma_errno("Failed to register a UMEM.");
                 }
                 u->context = context;
                 u->adopt(context, ctx);
                 return u;
             }),
             py::arg("context"), py::arg("size"), py::arg("addr") = py::none(), py::arg("alignment") = 64,
             py::arg("access") = 0, py::arg("pgsz_bitmap") = 0, py::arg("comp_mask") = 0, py::arg("dmabuf_fd") = 0)
        .def("__str__",
             [](py::handle self) {
                 Mlx5UMEM& u = self_of<Mlx5UMEM>(self, "Mlx5UMEM");
                 return fmt("umem id", u.umem->umem_id) + fmt("reg addr", reinterpret_cast<uintptr_t>(u.addr));
             })
        .def_property_readonly("umem_id",
                               [](py::handle self) { return self_of<Mlx5UMEM>(self, "Mlx5UMEM").umem->umem_id; })
        .def_property_readonly("umem_addr", [](const Mlx5UMEM& u) -> py::object {
            if (!u.addr)
                return py::none();
            return py::int_(reinterpret_cast<uintptr_t>(u.addr));
        });

    py::class_<Cqe64, Object, std::shared_ptr<Cqe64>>(m, "Mlx5Cqe64", "A 64-byte CQE at an address")
        .def(py::init([](uintptr_t addr) {
                 auto c = std::make_shared<Cqe64>();
                 c->cqe = reinterpret_cast<mlx5_cqe64*>(addr);
                 return c;
             }),
             py::arg("addr"))
        .def("dump",
             [](const Cqe64& c) {
                 const uint32_t* w = reinterpret_cast<const uint32_t*>(c.cqe);
                 std::string out;
                 char line[48];
                 for (int i = 0; i < 16; i += 4) {
                     snprintf(line, sizeof(line), "%08x %08x %08x %08x\n", be32(w[i]), be32(w[i + 1]), be32(w[i + 2]),
                              be32(w[i + 3]));
                     out += line;
                 }
                 return out;
             })
        .def("is_empty",
             [](const Cqe64& c) {
                 const uint32_t* w = reinterpret_cast<const uint32_t*>(c.cqe);
                 for (int i = 0; i < 16; i++)
                     if (w[i])
                         return false;
                 return true;
             })
        .def_property(
            "owner", [](const Cqe64& c) { return mlx5dv_get_cqe_owner(c.cqe); },
            [](Cqe64& c, uint8_t v) { mlx5dv_set_cqe_owner(c.cqe, v); })
        .RO(Cqe64, "se", mlx5dv_get_cqe_se(o.cqe))
        .RO(Cqe64, "format", mlx5dv_get_cqe_format(o.cqe))
        .RO(Cqe64, "opcode", mlx5dv_get_cqe_opcode(o.cqe))
        .RO(Cqe64, "imm_inval_pkey", be32(o.cqe->imm_inval_pkey))
        .RO(Cqe64, "wqe_id", be16toh(o.cqe->wqe_id))
        .RO(Cqe64, "byte_cnt", be32(o.cqe->byte_cnt))
        .RO(Cqe64, "timestamp", (unsigned long long)be64toh(o.cqe->timestamp))
        .RO(Cqe64, "wqe_counter", be16toh(o.cqe->wqe_counter))
        .RO(Cqe64, "signature", o.cqe->signature)
        .RO(Cqe64, "op_own", o.cqe->op_own)
        .def("__str__", [](const Cqe64& c) {
            // The CQE's fields as they lie in memory (not byte-swapped), as
            // a dict, which is how the reference prints them.
            py::dict d;
            d["wqe_id"] = c.cqe->wqe_id;
            d["imm_inval_pkey"] = c.cqe->imm_inval_pkey;
            d["byte_cnt"] = c.cqe->byte_cnt;
            d["timestamp"] = (unsigned long long)c.cqe->timestamp;
            d["wqe_counter"] = c.cqe->wqe_counter;
            d["signature"] = c.cqe->signature;
            d["op_own"] = c.cqe->op_own;
            return py::str(d);
        });

    py::class_<Mlx5DevxMsiVector, CM, std::shared_ptr<Mlx5DevxMsiVector>>(m, "Mlx5DevxMsiVector",
                                                                          "An MSI-X vector of the application's")
        .def(py::init([](py::object context) {
                 Context& ctx = context_arg(context);
                 auto v = std::make_shared<Mlx5DevxMsiVector>();
                 v->msi = mlx5dv_devx_alloc_msi_vector(ctx.ctx);
                 if (!v->msi)
                     raise_rdma_errno("Failed to allocate an msi_vector");
                 v->context = context;
                 v->adopt(context, ctx);
                 return v;
             }),
             py::arg("context"))
        .def_property_readonly(
            "vector", [](py::handle self) { return self_of<Mlx5DevxMsiVector>(self, "Mlx5DevxMsiVector").msi->vector; })
        .def_property_readonly(
            "fd", [](py::handle self) { return self_of<Mlx5DevxMsiVector>(self, "Mlx5DevxMsiVector").msi->fd; });

    py::class_<Mlx5DevxEq, CM, std::shared_ptr<Mlx5DevxEq>>(m, "Mlx5DevxEq", "An event queue of the application's")
        .def(py::init([](py::object context, py::object in_, size_t outlen) {
                 Context& ctx = context_arg(context);
                 Mailboxes mb(in_, outlen);
                 auto q = std::make_shared<Mlx5DevxEq>();
                 q->eq = mlx5dv_devx_create_eq(ctx.ctx, mb.in.data(), mb.in.size(), mb.out.data(), outlen);
                 if (!q->eq)
                     raise_rdma_errno("Failed to create async EQ object");
                 q->out_view = memview_of(mb.out);
                 q->context = context;
                 q->adopt(context, ctx);
                 check_devx_status(mb.out, "async EQ object");
                 return q;
             }),
             py::arg("context"), py::arg("in_"), py::arg("outlen"))
        .def_property_readonly("out_view", [](const Mlx5DevxEq& q) { return q.out_view; })
        .def_property_readonly("vaddr", [](py::handle self) {
            return reinterpret_cast<uintptr_t>(self_of<Mlx5DevxEq>(self, "Mlx5DevxEq").eq->vaddr);
        });
}
