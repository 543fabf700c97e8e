// pyverbs.spec: the header specifications a steering flow matches on
// (Ethernet, IPv4, IPv6, TCP/UDP), each a value and a mask in the C layout
// of its ibv_flow_spec_* struct, copied after the ibv_flow_attr by Flow.
#include "pyverbs.h"

#include <cstring>
#include <string>

using namespace pyverbs;

namespace {

// The abstract spec: its type (with IBV_FLOW_SPEC_INNER or-ed in) and the
// size of its C struct.
struct Spec : Object {
    long long spec_type = 0;
    uint16_t size = 0;
};

struct EthSpec : Spec {
    ibv_flow_eth_filter val{}, mask{};
};
struct Ipv4ExtSpec : Spec {
    ibv_flow_ipv4_ext_filter val{}, mask{};
};
struct TcpUdpSpec : Spec {
    ibv_flow_tcp_udp_filter val{}, mask{};
};
struct Ipv6Spec : Spec {
    ibv_flow_ipv6_filter val{}, mask{};
};

constexpr unsigned long long U32_MASK = 0xffffffffull;

[[noreturn]] void raise_py(PyObject* type, const std::string& msg) {
    PyErr_SetString(type, msg.c_str());
    throw py::error_already_set();
}

py::object sock(const char* fn) { return py::module_::import("socket").attr(fn); }

// Python's socket.htons & co: their errors for values out of range too.
uint16_t htons_(py::handle v) { return sock("htons")(v).cast<uint16_t>(); }
uint16_t ntohs_(uint16_t v) { return sock("ntohs")(v).cast<uint16_t>(); }
uint32_t htonl_(py::handle v) { return sock("htonl")(v).cast<uint32_t>(); }
uint32_t ntohl_(uint32_t v) { return sock("ntohl")(v).cast<uint32_t>(); }

// A Python int stored in a C uint8_t (Cython's errors when it does not fit).
uint8_t u8(py::handle v) {
    long long b = py::int_(py::reinterpret_borrow<py::object>(v)).cast<long long>();
    if (b < 0)
        raise_py(PyExc_OverflowError, "can't convert negative value to uint8_t");
    if (b > 0xff)
        raise_py(PyExc_OverflowError, "value too large to convert to uint8_t");
    return uint8_t(b);
}

// Python's f"{x:<n}".
std::string left(const std::string& s, size_t n) { return s.size() < n ? s + std::string(n - s.size(), ' ') : s; }
std::string left(py::handle v, size_t n) { return left(py::str(v).cast<std::string>(), n); }
std::string line(const char* label, py::handle val, py::handle mask) {
    return left(label, 16) + ": " + left(val, 20) + " " + left(mask, 20) + "\n";
}

// Spec._set_val_mask: (0, 0) without a value; the default mask with a value
// but no mask.
py::tuple set_val_mask(py::object default_mask, py::object val, py::object val_mask) {
    if (val.is_none())
        return py::make_tuple(0, 0);
    return py::make_tuple(val, val_mask.is_none() ? default_mask : val_mask);
}

std::string type_to_str(long long spec_type) {
    std::string res;
    if (spec_type & IBV_FLOW_SPEC_INNER)
        res += "IBV_FLOW_SPEC_INNER ";
    long long t = spec_type & ~(long long)IBV_FLOW_SPEC_INNER;
    switch (t) {
    case IBV_FLOW_SPEC_ETH: return res + "IBV_FLOW_SPEC_ETH";
    case IBV_FLOW_SPEC_IPV4_EXT: return res + "IBV_FLOW_SPEC_IPV4_EXT";
    case IBV_FLOW_SPEC_IPV6: return res + "IBV_FLOW_SPEC_IPV6";
    case IBV_FLOW_SPEC_TCP: return res + "IBV_FLOW_SPEC_TCP";
    case IBV_FLOW_SPEC_UDP: return res + "IBV_FLOW_SPEC_UDP";
    }
    // An unknown type is a missing key of the reference's table.
    PyErr_SetObject(PyExc_KeyError, py::int_(t).ptr());
    throw py::error_already_set();
}

std::string spec_str(const Spec& s) {
    return left("Spec type", 16) + ": " + left(type_to_str(s.spec_type), 20) + "\n" + left("Size", 16) + ": " +
        left(std::to_string(s.size), 20) + "\n";
}

// Writes the C struct {type, size, val, mask} at `ptr`.
template <class C, class S>
void copy_spec(const S& s, uintptr_t ptr) {
    C c{};
    c.type = ibv_flow_spec_type(s.spec_type);
    c.size = s.size;
    c.val = s.val;
    c.mask = s.mask;
    std::memcpy(reinterpret_cast<void*>(ptr), &c, s.size < sizeof(c) ? s.size : sizeof(c));
}

long long with_inner(long long type, py::handle is_inner) {
    return py::bool_(py::reinterpret_borrow<py::object>(is_inner)) ? type | IBV_FLOW_SPEC_INNER : type;
}

// MAC addresses: 'aa:bb:cc:dd:ee:ff' <-> 6 bytes; an all-zero MAC reads ''
// (nothing to match on), as in the reference's output.
void set_mac(uint8_t (&mac)[6], py::object val) {
    uint8_t out[6] = {};
    if (py::bool_(val)) {
        py::object parts = val.attr("split")(":");
        py::object to_int = py::module_::import("builtins").attr("int");
        for (int i = 0; i < 6; i++)
            out[i] = u8(to_int(parts[py::int_(i)], 16));
    }
    std::memcpy(mac, out, 6);
}
std::string mac_str(const uint8_t (&mac)[6]) {
    static const uint8_t zero[6] = {};
    if (!std::memcmp(mac, zero, 6))
        return "";
    char buf[18];
    snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
    return buf;
}

// IPv4 addresses: 'a.b.c.d' <-> the host-order integer (None stays None).
py::object str_to_ip(py::object ip) {
    if (ip.is_none())
        return py::none();
    std::string b = sock("inet_aton")(ip).cast<std::string>();
    uint32_t v = 0;
    for (unsigned char c : b)
        v = (v << 8) | c;
    return py::int_(v);
}
std::string ip_to_str(py::object ip) {
    uint32_t v = ip.cast<uint32_t>();
    char raw[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
    return sock("inet_ntoa")(py::bytes(raw, 4)).cast<std::string>();
}

// IPv6 addresses: the text form <-> 16 bytes.
void set_ip6(uint8_t (&dst)[16], py::object val) {
    py::object af = sock("AF_INET6");
    std::string b = sock("inet_pton")(af, val).cast<std::string>();
    std::memcpy(dst, b.data(), 16);
}
std::string ip6_str(const uint8_t (&ip)[16]) {
    return sock("inet_ntop")(sock("AF_INET6"), py::bytes(reinterpret_cast<const char*>(ip), 16)).cast<std::string>();
}

}  // namespace

// A property over one field of val (or mask), read and written through
// conversion functions.
#define U8_FIELD(cls, name, part, field) \
    def_property(                        \
        name, [](const cls& s) { return int(s.part.field); }, [](cls& s, py::object v) { s.part.field = u8(v); })
#define BE16_FIELD(cls, name, part, field)                       \
    def_property(                                                \
        name, [](const cls& s) { return ntohs_(s.part.field); }, \
        [](cls& s, py::object v) { s.part.field = htons_(v); })

PYBIND11_MODULE(spec, m) {
    import_deps({"pyverbs.base"});
    m.doc() = "Flow steering specifications";
    m.attr("U32_MASK") = py::int_(U32_MASK);

    py::class_<Spec, Object, std::shared_ptr<Spec>>(m, "Spec")
        .def(
            py::init([]() -> std::shared_ptr<Spec> { raise_py(PyExc_NotImplementedError, "This class is abstract."); }))
        .def_property_readonly("size", [](const Spec& s) { return s.size; })
        .def(
            "_copy_data",
            [](const Spec&, unsigned long) { raise_py(PyExc_NotImplementedError, "Must be implemented in subclass."); },
            py::arg("ptr"))
        .def("__str__", &spec_str)
        .def_static("type_to_str", &type_to_str, py::arg("spec_type"))
        .def_static("_set_val_mask", &set_val_mask, py::arg("default_mask"), py::arg("val") = py::none(),
                    py::arg("val_mask") = py::none());

    auto eth = py::class_<EthSpec, Spec, std::shared_ptr<EthSpec>>(m, "EthSpec");
    eth.attr("MAC_LEN") = 6;
    eth.attr("MAC_MASK") = "ff:ff:ff:ff:ff:ff";
    eth.attr("ZERO_MAC") = py::list(py::make_tuple(0, 0, 0, 0, 0, 0));
    eth.def(py::init([](py::object dst_mac, py::object dst_mac_mask, py::object src_mac, py::object src_mac_mask,
                        py::object ether_type, py::object ether_type_mask, py::object vlan_tag,
                        py::object vlan_tag_mask, py::object is_inner) {
                auto s = std::make_shared<EthSpec>();
                s->spec_type = with_inner(IBV_FLOW_SPEC_ETH, is_inner);
                s->size = sizeof(ibv_flow_spec_eth);
                py::str mac_mask("ff:ff:ff:ff:ff:ff");
                py::tuple d = set_val_mask(mac_mask, dst_mac, dst_mac_mask);
                set_mac(s->val.dst_mac, d[0]);
                set_mac(s->mask.dst_mac, d[1]);
                py::tuple sm = set_val_mask(mac_mask, src_mac, src_mac_mask);
                set_mac(s->val.src_mac, sm[0]);
                set_mac(s->mask.src_mac, sm[1]);
                py::tuple et = set_val_mask(py::int_(0xffff), ether_type, ether_type_mask);
                s->val.ether_type = htons_(et[0]);
                s->mask.ether_type = htons_(et[1]);
                py::tuple vt = set_val_mask(py::int_(0xffff), vlan_tag, vlan_tag_mask);
                s->val.vlan_tag = htons_(vt[0]);
                s->mask.vlan_tag = htons_(vt[1]);
                return s;
            }),
            py::arg("dst_mac") = py::none(), py::arg("dst_mac_mask") = py::none(), py::arg("src_mac") = py::none(),
            py::arg("src_mac_mask") = py::none(), py::arg("ether_type") = py::none(),
            py::arg("ether_type_mask") = py::none(), py::arg("vlan_tag") = py::none(),
            py::arg("vlan_tag_mask") = py::none(), py::arg("is_inner") = 0)
        .def(
            "_set_mac",
            [](const EthSpec&, py::object val) {
                uint8_t mac[6];
                set_mac(mac, val);
                py::list l;
                for (uint8_t b : mac)
                    l.append(int(b));
                return l;
            },
            py::arg("val"))
        .def_property(
            "dst_mac", [](const EthSpec& s) { return mac_str(s.val.dst_mac); },
            [](EthSpec& s, py::object v) { set_mac(s.val.dst_mac, v); })
        .def_property(
            "dst_mac_mask", [](const EthSpec& s) { return mac_str(s.mask.dst_mac); },
            [](EthSpec& s, py::object v) { set_mac(s.mask.dst_mac, v); })
        .def_property(
            "src_mac", [](const EthSpec& s) { return mac_str(s.val.src_mac); },
            [](EthSpec& s, py::object v) { set_mac(s.val.src_mac, v); })
        .def_property(
            "src_mac_mask", [](const EthSpec& s) { return mac_str(s.mask.src_mac); },
            [](EthSpec& s, py::object v) { set_mac(s.mask.src_mac, v); })
        .BE16_FIELD(EthSpec, "ether_type", val, ether_type)
        .BE16_FIELD(EthSpec, "ether_type_mask", mask, ether_type)
        .BE16_FIELD(EthSpec, "vlan_tag", val, vlan_tag)
        .BE16_FIELD(EthSpec, "vlan_tag_mask", mask, vlan_tag)
        // (the ether type and VLAN tag are shown as stored, in network order)
        .def("__str__",
             [](const EthSpec& s) {
                 return spec_str(s) +
                     line("Src mac", py::str(mac_str(s.val.src_mac)), py::str(mac_str(s.mask.src_mac))) +
                     line("Dst mac", py::str(mac_str(s.val.dst_mac)), py::str(mac_str(s.mask.dst_mac))) +
                     line("Ether type", py::int_(s.val.ether_type), py::int_(s.mask.ether_type)) +
                     line("Vlan tag", py::int_(s.val.vlan_tag), py::int_(s.mask.vlan_tag));
             })
        .def(
            "_copy_data", [](const EthSpec& s, uintptr_t ptr) { copy_spec<ibv_flow_spec_eth>(s, ptr); },
            py::arg("ptr"));

    py::class_<Ipv4ExtSpec, Spec, std::shared_ptr<Ipv4ExtSpec>>(m, "Ipv4ExtSpec")
        .def(py::init([](py::object dst_ip, py::object dst_ip_mask, py::object src_ip, py::object src_ip_mask,
                         py::object proto, py::object proto_mask, py::object tos, py::object tos_mask, py::object ttl,
                         py::object ttl_mask, py::object flags, py::object flags_mask, py::object is_inner) {
                 auto s = std::make_shared<Ipv4ExtSpec>();
                 s->spec_type = with_inner(IBV_FLOW_SPEC_IPV4_EXT, is_inner);
                 s->size = sizeof(ibv_flow_spec_ipv4_ext);
                 py::int_ all(U32_MASK), byte(0xff);
                 py::tuple d = set_val_mask(all, str_to_ip(dst_ip), str_to_ip(dst_ip_mask));
                 s->val.dst_ip = htonl_(d[0]);
                 s->mask.dst_ip = htonl_(d[1]);
                 py::tuple sr = set_val_mask(all, str_to_ip(src_ip), str_to_ip(src_ip_mask));
                 s->val.src_ip = htonl_(sr[0]);
                 s->mask.src_ip = htonl_(sr[1]);
                 py::tuple t = set_val_mask(byte, proto, proto_mask);
                 s->val.proto = u8(t[0]);
                 s->mask.proto = u8(t[1]);
                 t = set_val_mask(byte, tos, tos_mask);
                 s->val.tos = u8(t[0]);
                 s->mask.tos = u8(t[1]);
                 t = set_val_mask(byte, ttl, ttl_mask);
                 s->val.ttl = u8(t[0]);
                 s->mask.ttl = u8(t[1]);
                 t = set_val_mask(byte, flags, flags_mask);
                 s->val.flags = u8(t[0]);
                 s->mask.flags = u8(t[1]);
                 return s;
             }),
             py::arg("dst_ip") = py::none(), py::arg("dst_ip_mask") = py::none(), py::arg("src_ip") = py::none(),
             py::arg("src_ip_mask") = py::none(), py::arg("proto") = py::none(), py::arg("proto_mask") = py::none(),
             py::arg("tos") = py::none(), py::arg("tos_mask") = py::none(), py::arg("ttl") = py::none(),
             py::arg("ttl_mask") = py::none(), py::arg("flags") = py::none(), py::arg("flags_mask") = py::none(),
             py::arg("is_inner") = false)
        .def_static("_str_to_ip", &str_to_ip, py::arg("ip_str"))
        .def_static("_ip_to_str", &ip_to_str, py::arg("ip"))
        .def_property(
            "dst_ip", [](const Ipv4ExtSpec& s) { return ip_to_str(py::int_(ntohl_(s.val.dst_ip))); },
            [](Ipv4ExtSpec& s, py::object v) { s.val.dst_ip = htonl_(str_to_ip(v)); })
        .def_property(
            "dst_ip_mask", [](const Ipv4ExtSpec& s) { return ip_to_str(py::int_(ntohl_(s.mask.dst_ip))); },
            [](Ipv4ExtSpec& s, py::object v) { s.mask.dst_ip = htonl_(str_to_ip(v)); })
        .def_property(
            "src_ip", [](const Ipv4ExtSpec& s) { return ip_to_str(py::int_(ntohl_(s.val.src_ip))); },
            [](Ipv4ExtSpec& s, py::object v) { s.val.src_ip = htonl_(str_to_ip(v)); })
        .def_property(
            "src_ip_mask", [](const Ipv4ExtSpec& s) { return ip_to_str(py::int_(ntohl_(s.mask.src_ip))); },
            [](Ipv4ExtSpec& s, py::object v) { s.mask.src_ip = htonl_(str_to_ip(v)); })
        .U8_FIELD(Ipv4ExtSpec, "proto", val, proto)
        .U8_FIELD(Ipv4ExtSpec, "proto_mask", mask, proto)
        .U8_FIELD(Ipv4ExtSpec, "tos", val, tos)
        .U8_FIELD(Ipv4ExtSpec, "tos_mask", mask, tos)
        .U8_FIELD(Ipv4ExtSpec, "ttl", val, ttl)
        .U8_FIELD(Ipv4ExtSpec, "ttl_mask", mask, ttl)
        .U8_FIELD(Ipv4ExtSpec, "flags", val, flags)
        .U8_FIELD(Ipv4ExtSpec, "flags_mask", mask, flags)
        .def("__str__",
             [](const Ipv4ExtSpec& s) {
                 auto ip = [](uint32_t be) { return py::str(ip_to_str(py::int_(ntohl_(be)))); };
                 return spec_str(s) + line("Src IP", ip(s.val.src_ip), ip(s.mask.src_ip)) +
                     line("Dst IP", ip(s.val.dst_ip), ip(s.mask.dst_ip)) +
                     line("Proto", py::int_(s.val.proto), py::int_(s.mask.proto)) +
                     line("ToS", py::int_(s.val.tos), py::int_(s.mask.tos)) +
                     line("TTL", py::int_(s.val.ttl), py::int_(s.mask.ttl)) +
                     line("Flags", py::int_(s.val.flags), py::int_(s.mask.flags));
             })
        .def(
            "_copy_data", [](const Ipv4ExtSpec& s, uintptr_t ptr) { copy_spec<ibv_flow_spec_ipv4_ext>(s, ptr); },
            py::arg("ptr"));

    py::class_<TcpUdpSpec, Spec, std::shared_ptr<TcpUdpSpec>>(m, "TcpUdpSpec")
        .def(py::init([](long long spec_type, py::object dst_port, py::object dst_port_mask, py::object src_port,
                         py::object src_port_mask, py::object is_inner) {
                 if (spec_type != IBV_FLOW_SPEC_TCP && spec_type != IBV_FLOW_SPEC_UDP)
                     raise_error("Spec type must be IBV_FLOW_SPEC_TCP or IBV_FLOW_SPEC_UDP");
                 auto s = std::make_shared<TcpUdpSpec>();
                 s->spec_type = with_inner(spec_type, is_inner);
                 s->size = sizeof(ibv_flow_spec_tcp_udp);
                 py::int_ all(0xffff);
                 py::tuple d = set_val_mask(all, dst_port, dst_port_mask);
                 s->val.dst_port = htons_(d[0]);
                 s->mask.dst_port = htons_(d[1]);
                 py::tuple sr = set_val_mask(all, src_port, src_port_mask);
                 s->val.src_port = htons_(sr[0]);
                 s->mask.src_port = htons_(sr[1]);
                 return s;
             }),
             py::arg("spec_type"), py::arg("dst_port") = py::none(), py::arg("dst_port_mask") = py::none(),
             py::arg("src_port") = py::none(), py::arg("src_port_mask") = py::none(), py::arg("is_inner") = false)
        .BE16_FIELD(TcpUdpSpec, "dst_port", val, dst_port)
        .BE16_FIELD(TcpUdpSpec, "dst_port_mask", mask, dst_port)
        .BE16_FIELD(TcpUdpSpec, "src_port", val, src_port)
        .BE16_FIELD(TcpUdpSpec, "src_port_mask", mask, src_port)
        .def("__str__",
             [](const TcpUdpSpec& s) {
                 return spec_str(s) +
                     line("Src port", py::int_(ntohs_(s.val.src_port)), py::int_(ntohs_(s.mask.src_port))) +
                     line("Dst port", py::int_(ntohs_(s.val.dst_port)), py::int_(ntohs_(s.mask.dst_port)));
             })
        .def(
            "_copy_data", [](const TcpUdpSpec& s, uintptr_t ptr) { copy_spec<ibv_flow_spec_tcp_udp>(s, ptr); },
            py::arg("ptr"));

    auto ip6 = py::class_<Ipv6Spec, Spec, std::shared_ptr<Ipv6Spec>>(m, "Ipv6Spec");
    ip6.attr("EMPTY_IPV6") = py::list(py::module_::import("builtins").attr("list")(py::bytes(std::string(16, '\0'))));
    ip6.attr("IPV6_MASK") = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
    ip6.attr("FLOW_LABEL_MASK") = 0xfffff;
    ip6.def(py::init([](py::object dst_ip, py::object dst_ip_mask, py::object src_ip, py::object src_ip_mask,
                        py::object flow_label, py::object flow_label_mask, py::object next_hdr,
                        py::object next_hdr_mask, py::object traffic_class, py::object traffic_class_mask,
                        py::object hop_limit, py::object hop_limit_mask, py::object is_inner) {
                auto s = std::make_shared<Ipv6Spec>();
                s->spec_type = with_inner(IBV_FLOW_SPEC_IPV6, is_inner);
                s->size = sizeof(ibv_flow_spec_ipv6);
                // An address not given matches anything: zero value and mask
                // (where the reference fails on it).
                py::str all("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
                if (!dst_ip.is_none()) {
                    set_ip6(s->val.dst_ip, dst_ip);
                    set_ip6(s->mask.dst_ip, dst_ip_mask.is_none() ? py::object(all) : dst_ip_mask);
                }
                if (!src_ip.is_none()) {
                    set_ip6(s->val.src_ip, src_ip);
                    set_ip6(s->mask.src_ip, src_ip_mask.is_none() ? py::object(all) : src_ip_mask);
                }
                py::tuple fl = set_val_mask(py::int_(0xfffff), flow_label, flow_label_mask);
                s->val.flow_label = htonl_(fl[0]);
                s->mask.flow_label = htonl_(fl[1]);
                py::int_ byte(0xff);
                py::tuple t = set_val_mask(byte, next_hdr, next_hdr_mask);
                s->val.next_hdr = u8(t[0]);
                s->mask.next_hdr = u8(t[1]);
                t = set_val_mask(byte, traffic_class, traffic_class_mask);
                s->val.traffic_class = u8(t[0]);
                s->mask.traffic_class = u8(t[1]);
                t = set_val_mask(byte, hop_limit, hop_limit_mask);
                s->val.hop_limit = u8(t[0]);
                s->mask.hop_limit = u8(t[1]);
                return s;
            }),
            py::arg("dst_ip") = py::none(), py::arg("dst_ip_mask") = py::none(), py::arg("src_ip") = py::none(),
            py::arg("src_ip_mask") = py::none(), py::arg("flow_label") = py::none(),
            py::arg("flow_label_mask") = py::none(), py::arg("next_hdr") = py::none(),
            py::arg("next_hdr_mask") = py::none(), py::arg("traffic_class") = py::none(),
            py::arg("traffic_class_mask") = py::none(), py::arg("hop_limit") = py::none(),
            py::arg("hop_limit_mask") = py::none(), py::arg("is_inner") = false)
        .def_property(
            "dst_ip", [](const Ipv6Spec& s) { return ip6_str(s.val.dst_ip); },
            [](Ipv6Spec& s, py::object v) { set_ip6(s.val.dst_ip, v); })
        .def_property(
            "dst_ip_mask", [](const Ipv6Spec& s) { return ip6_str(s.mask.dst_ip); },
            [](Ipv6Spec& s, py::object v) { set_ip6(s.mask.dst_ip, v); })
        .def_property(
            "src_ip", [](const Ipv6Spec& s) { return ip6_str(s.val.src_ip); },
            [](Ipv6Spec& s, py::object v) { set_ip6(s.val.src_ip, v); })
        .def_property(
            "src_ip_mask", [](const Ipv6Spec& s) { return ip6_str(s.mask.src_ip); },
            [](Ipv6Spec& s, py::object v) { set_ip6(s.mask.src_ip, v); })
        .def_property(
            "flow_label", [](const Ipv6Spec& s) { return ntohl_(s.val.flow_label); },
            [](Ipv6Spec& s, py::object v) { s.val.flow_label = htonl_(v); })
        .def_property(
            "flow_label_mask", [](const Ipv6Spec& s) { return ntohl_(s.mask.flow_label); },
            [](Ipv6Spec& s, py::object v) { s.mask.flow_label = htonl_(v); })
        .U8_FIELD(Ipv6Spec, "next_hdr", val, next_hdr)
        .U8_FIELD(Ipv6Spec, "next_hdr_mask", mask, next_hdr)
        .U8_FIELD(Ipv6Spec, "traffic_class", val, traffic_class)
        .U8_FIELD(Ipv6Spec, "traffic_class_mask", mask, traffic_class)
        .U8_FIELD(Ipv6Spec, "hop_limit", val, hop_limit)
        .U8_FIELD(Ipv6Spec, "hop_limit_mask", mask, hop_limit)
        .def("__str__",
             [](const Ipv6Spec& s) {
                 return spec_str(s) + line("Src IP", py::str(ip6_str(s.val.src_ip)), py::str(ip6_str(s.mask.src_ip))) +
                     line("Dst IP", py::str(ip6_str(s.val.dst_ip)), py::str(ip6_str(s.mask.dst_ip))) +
                     line("Flow label", py::int_(ntohl_(s.val.flow_label)), py::int_(ntohl_(s.mask.flow_label))) +
                     line("Next header", py::int_(s.val.next_hdr), py::int_(s.mask.next_hdr)) +
                     line("Traffic class", py::int_(s.val.traffic_class), py::int_(s.mask.traffic_class)) +
                     line("Hop limit", py::int_(s.val.hop_limit), py::int_(s.mask.hop_limit));
             })
        .def(
            "_copy_data", [](const Ipv6Spec& s, uintptr_t ptr) { copy_spec<ibv_flow_spec_ipv6>(s, ptr); },
            py::arg("ptr"));
}
