// pyverbs.addr: GIDs, global routes, address vectors and address handles.
#include "objects.h"

#include <arpa/inet.h>

using namespace pyverbs;

namespace {

std::string gid_to_str(const ibv_gid& g) {
    char buf[INET6_ADDRSTRLEN];
    std::string out;
    for (int i = 0; i < 16; i += 2) {
        snprintf(buf, sizeof(buf), "%02x%02x", g.raw[i], g.raw[i + 1]);
        out += (i ? ":" : "") + std::string(buf);
    }
    return out;
}

// The 8-group form ("fe80:0000:..."); anything else is refused with the
// reference's message (utils.gid_str_to_array's), and so is a bad digit.
ibv_gid gid_from_str(const std::string& s) {
    py::list bytes = py::module_::import("pyverbs.utils").attr("gid_str_to_array")(s);
    ibv_gid g{};
    for (size_t i = 0; i < 16; i++) {
        std::string two = bytes[i].cast<std::string>();
        char* end = nullptr;
        unsigned long v = strtoul(two.c_str(), &end, 16);
        if (two.size() != 2 || *end)
            raise_user("Invalid GID value (" + py::repr(py::str(s).attr("split")(":")).cast<std::string>() + ")");
        g.raw[i] = uint8_t(v);
    }
    return g;
}

AHAttr make_ah_attr(uint16_t dlid, uint8_t sl, uint8_t src_path_bits, uint8_t static_rate, uint8_t is_global,
                    uint8_t port_num, py::object gr) {
    AHAttr a;
    a.attr.dlid = dlid;
    a.attr.sl = sl;
    a.attr.src_path_bits = src_path_bits;
    a.attr.static_rate = static_rate;
    a.attr.is_global = is_global;
    a.attr.port_num = port_num;
    if (is_global && gr.is_none())
        raise_user("Global AH Attr is created but gr parameter is None");
    if (is_global)
        a.attr.grh = arg_as<GlobalRoute>(gr, "GlobalRoute").gr;
    return a;
}

// pyverbs.addr.GRH: a global routing header as it is on the wire (the
// multi-byte fields are kept as given, as the reference's).
struct GRH : Object {
    ibv_grh grh{};
};

// A GID argument: a GID object or its string.
ibv_gid gid_arg(py::handle v) {
    if (py::isinstance<GID>(v))
        return v.cast<const GID&>().gid;
    return gid_from_str(v.cast<std::string>());
}

std::string route_str(const ibv_global_route& gr) {
    return str_line("DGID", gid_to_str(gr.dgid)) + str_line("flow label", gr.flow_label) +
        str_line("sgid index", gr.sgid_index) + str_line("hop limit", gr.hop_limit) +
        str_line("traffic class", gr.traffic_class);
}

}  // namespace

#define AH_FIELD(name, field)                               \
    def_property(                                           \
        name, [](const AHAttr& o) { return o.attr.field; }, \
        [](AHAttr& o, decltype(ibv_ah_attr::field) v) { o.attr.field = v; })
#define GR_FIELD(name, field)                                  \
    def_property(                                              \
        name, [](const GlobalRoute& o) { return o.gr.field; }, \
        [](GlobalRoute& o, decltype(ibv_global_route::field) v) { o.gr.field = v; })

PYBIND11_MODULE(addr, m) {
    import_deps({"pyverbs.base", "pyverbs.pd"});
    m.doc() = "GIDs, routes, address vectors and address handles";

    py::class_<GID, Object, std::shared_ptr<GID>>(m, "GID")
        .def(py::init([](py::object val) {
                 auto g = std::make_shared<GID>();
                 if (!val.is_none())
                     g->gid = gid_from_str(val.cast<std::string>());
                 return g;
             }),
             py::arg("val") = py::none())
        .def_property(
            "gid", [](const GID& g) { return gid_to_str(g.gid); },
            [](GID& g, const std::string& s) { g.gid = gid_from_str(s); })
        .def(
            "_set_gid", [](GID& g, const GID& other) { g.gid = other.gid; }, py::arg("gid"))
        .def("__str__", [](const GID& g) { return gid_to_str(g.gid); })
        .def("__eq__", [](const GID& a, py::object b) {
            return py::isinstance<GID>(b) && memcmp(a.gid.raw, arg_as<GID>(b, "GID").gid.raw, 16) == 0;
        });

    py::class_<GRH, Object, std::shared_ptr<GRH>>(m, "GRH")
        .def(py::init([](py::object sgid, py::object dgid, uint32_t version_tclass_flow, uint16_t paylen,
                         uint8_t next_hdr, uint8_t hop_limit) {
                 auto g = std::make_shared<GRH>();
                 if (!sgid.is_none())
                     g->grh.sgid = arg_as<GID>(sgid, "GID").gid;
                 if (!dgid.is_none())
                     g->grh.dgid = arg_as<GID>(dgid, "GID").gid;
                 g->grh.version_tclass_flow = version_tclass_flow;
                 g->grh.paylen = paylen;
                 g->grh.next_hdr = next_hdr;
                 g->grh.hop_limit = hop_limit;
                 return g;
             }),
             py::arg("sgid") = py::none(), py::arg("dgid") = py::none(), py::arg("version_tclass_flow") = 0,
             py::arg("paylen") = 0, py::arg("next_hdr") = 0, py::arg("hop_limit") = 1)
        .def_property(
            "dgid", [](const GRH& g) { return gid_to_str(g.grh.dgid); },
            [](GRH& g, py::object v) { g.grh.dgid = gid_arg(v); })
        .def_property(
            "sgid", [](const GRH& g) { return gid_to_str(g.grh.sgid); },
            [](GRH& g, py::object v) { g.grh.sgid = gid_arg(v); })
        .def_property(
            "version_tclass_flow", [](const GRH& g) { return uint32_t(g.grh.version_tclass_flow); },
            [](GRH& g, uint32_t v) { g.grh.version_tclass_flow = v; })
        .def_property(
            "paylen", [](const GRH& g) { return uint16_t(g.grh.paylen); }, [](GRH& g, uint16_t v) { g.grh.paylen = v; })
        .def_property(
            "next_hdr", [](const GRH& g) { return g.grh.next_hdr; }, [](GRH& g, uint8_t v) { g.grh.next_hdr = v; })
        .def_property(
            "hop_limit", [](const GRH& g) { return g.grh.hop_limit; }, [](GRH& g, uint8_t v) { g.grh.hop_limit = v; })
        .def("__str__", [](const GRH& g) {
            return str_line("DGID", gid_to_str(g.grh.dgid)) + str_line("SGID", gid_to_str(g.grh.sgid)) +
                str_line("version tclass flow", uint32_t(g.grh.version_tclass_flow)) +
                str_line("paylen", uint16_t(g.grh.paylen)) + str_line("next header", g.grh.next_hdr) +
                str_line("hop limit", g.grh.hop_limit);
        });

    py::class_<GlobalRoute, Object, std::shared_ptr<GlobalRoute>>(m, "GlobalRoute")
        .def(py::init([](py::object dgid, uint32_t flow_label, uint8_t sgid_index, uint8_t hop_limit,
                         uint8_t traffic_class) {
                 auto r = std::make_shared<GlobalRoute>();
                 if (!dgid.is_none())
                     r->gr.dgid = arg_as<GID>(dgid, "GID").gid;
                 r->gr.flow_label = flow_label;
                 r->gr.sgid_index = sgid_index;
                 r->gr.hop_limit = hop_limit;
                 r->gr.traffic_class = traffic_class;
                 return r;
             }),
             py::arg("dgid") = py::none(), py::arg("flow_label") = 0, py::arg("sgid_index") = 0,
             py::arg("hop_limit") = 1, py::arg("traffic_class") = 0)
        .def_property(
            "dgid",
            [](const GlobalRoute& r) {
                GID g;
                g.gid = r.gr.dgid;
                return g;
            },
            [](GlobalRoute& r, const GID& g) { r.gr.dgid = g.gid; })
        .GR_FIELD("flow_label", flow_label)
        .GR_FIELD("sgid_index", sgid_index)
        .GR_FIELD("hop_limit", hop_limit)
        .GR_FIELD("traffic_class", traffic_class)
        .def("__str__", [](const GlobalRoute& r) { return route_str(r.gr); });

    py::class_<AHAttr, Object, std::shared_ptr<AHAttr>>(m, "AHAttr")
        .def(py::init([](uint16_t dlid, uint8_t sl, uint8_t src_path_bits, uint8_t static_rate, uint8_t is_global,
                         uint8_t port_num, py::object gr) {
                 return std::make_shared<AHAttr>(
                     make_ah_attr(dlid, sl, src_path_bits, static_rate, is_global, port_num, gr));
             }),
             py::arg("dlid") = 0, py::arg("sl") = 0, py::arg("src_path_bits") = 0, py::arg("static_rate") = 0,
             py::arg("is_global") = 0, py::arg("port_num") = 1, py::arg("gr") = py::none())
        .AH_FIELD("dlid", dlid)
        .AH_FIELD("sl", sl)
        .AH_FIELD("src_path_bits", src_path_bits)
        .AH_FIELD("static_rate", static_rate)
        .AH_FIELD("is_global", is_global)
        .AH_FIELD("port_num", port_num)
        .def_property(
            "gr",
            [](const AHAttr& a) {
                GlobalRoute r;
                r.gr = a.attr.grh;
                return r;
            },
            [](AHAttr& a, const GlobalRoute& r) { a.attr.grh = r.gr; })
        .def_property(
            "dgid",
            [](const AHAttr& a) {
                GID g;
                g.gid = a.attr.grh.dgid;
                return g;
            },
            [](AHAttr& a, const GID& g) { a.attr.grh.dgid = g.gid; })
        .def_property(
            "flow_label", [](const AHAttr& a) { return a.attr.grh.flow_label; },
            [](AHAttr& a, uint32_t v) { a.attr.grh.flow_label = v; })
        .def_property(
            "sgid_index", [](const AHAttr& a) { return a.attr.grh.sgid_index; },
            [](AHAttr& a, uint8_t v) { a.attr.grh.sgid_index = v; })
        .def_property(
            "hop_limit", [](const AHAttr& a) { return a.attr.grh.hop_limit; },
            [](AHAttr& a, uint8_t v) { a.attr.grh.hop_limit = v; })
        .def_property(
            "traffic_class", [](const AHAttr& a) { return a.attr.grh.traffic_class; },
            [](AHAttr& a, uint8_t v) { a.attr.grh.traffic_class = v; })
        .def("__str__", [](const AHAttr& a) {
            const char* in = "  ";
            std::string out = str_line("port num", a.attr.port_num, 22, in) + str_line("sl", a.attr.sl, 22, in) +
                str_line("source path bits", a.attr.src_path_bits, 22, in) + str_line("dlid", a.attr.dlid, 22, in) +
                str_line("static rate", a.attr.static_rate, 22, in) + str_line("is global", a.attr.is_global, 22, in);
            if (a.attr.is_global)
                out += str_line("dgid", gid_to_str(a.attr.grh.dgid), 22, in) +
                    str_line("flow label", a.attr.grh.flow_label, 22, in) +
                    str_line("sgid index", a.attr.grh.sgid_index, 22, in) +
                    str_line("hop limit", a.attr.grh.hop_limit, 22, in) +
                    str_line("traffic_class", a.attr.grh.traffic_class, 22, in);
            return out;
        });

    py::class_<AH, CM, std::shared_ptr<AH>>(m, "AH").def(
        py::init([](py::object pd_obj, py::kwargs kw) {
            PD& pd = open_arg<PD>(pd_obj, "PD");
            auto ah = std::make_shared<AH>();
            if (kw.contains("attr") && !kw["attr"].is_none()) {
                ibv_ah_attr attr = arg_as<AHAttr>(kw["attr"], "AHAttr").attr;
                ah->ah = ibv_create_ah(pd.pd, &attr);
                if (!ah->ah)
                    raise_rdma_errno("Failed to create AH");
            } else if (kw.contains("wc") && !kw["wc"].is_none()) {
                // The WC's struct is read through its own module's class.
                py::object wc = kw["wc"];
                ibv_wc w{};
                w.status = ibv_wc_status(wc.attr("status").cast<int>());
                w.wc_flags = wc.attr("wc_flags").cast<unsigned>();
                w.slid = wc.attr("slid").cast<uint16_t>();
                w.sl = wc.attr("sl").cast<uint8_t>();
                w.src_qp = wc.attr("src_qp").cast<uint32_t>();
                w.dlid_path_bits = wc.attr("dlid_path_bits").cast<uint8_t>();
                w.pkey_index = wc.attr("pkey_index").cast<uint16_t>();
                w.qp_num = wc.attr("qp_num").cast<uint32_t>();
                uint8_t port = kw.contains("port_num") ? kw["port_num"].cast<uint8_t>() : 1;
                // The GRH the packet came with: a GRH object, the address of
                // one (as the reference takes it) or its 40 bytes.
                ibv_grh* grh = nullptr;
                std::string grh_buf;
                py::object grh_obj = kw.contains("grh") ? py::object(kw["grh"]) : py::none();
                if (py::isinstance<GRH>(grh_obj)) {
                    grh = &grh_obj.cast<GRH&>().grh;
                } else if (py::isinstance<py::int_>(grh_obj)) {
                    grh = reinterpret_cast<ibv_grh*>(grh_obj.cast<uintptr_t>());
                } else if (!grh_obj.is_none()) {
                    grh_buf = grh_obj.cast<std::string>();
                    if (grh_buf.size() < sizeof(ibv_grh))
                        raise_user("A GRH is 40 bytes");
                    grh = reinterpret_cast<ibv_grh*>(grh_buf.data());
                }
                if (!grh && (w.wc_flags & IBV_WC_GRH))
                    raise_user("The WC has a GRH: an AH from it needs grh=");
                ah->ah = ibv_create_ah_from_wc(pd.pd, &w, grh, port);
                if (!ah->ah)
                    raise_rdma_errno("Failed to create AH from WC");
            } else {
                raise_user("An AH needs an AHAttr (attr=) or a WC (wc=)");
            }
            ah->pd = pd_obj;
            ah->adopt(pd_obj, pd);
            return ah;
        }),
        py::arg("pd"));

    m.def("gid_str",
          [](uint64_t sp, uint64_t iid) { return py::module_::import("pyverbs.utils").attr("gid_str")(sp, iid); });
}
