#include "kernel-boot/rename_policy.h"

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <vector>

#include "util/file_io.h"

namespace rdma::rename {
namespace {

namespace fs = std::filesystem;

// The last component of the target of the symbolic link at path.
std::optional<std::string> link_base(const std::string& path) {
    std::error_code ec;
    fs::path target = fs::read_symlink(path, ec);
    if (ec)
        return std::nullopt;
    std::string s = target.string();
    while (s.size() > 1 && s.back() == '/')
        s.pop_back();
    const size_t slash = s.rfind('/');
    return slash == std::string::npos ? s : s.substr(slash + 1);
}

// scanf("%d")-like: leading white space, an optional sign, at least one
// decimal digit; what follows the digits is ignored.
std::optional<long> leading_int(std::string_view s) {
    size_t i = 0;
    while (i < s.size() && isspace(static_cast<unsigned char>(s[i])))
        ++i;
    bool neg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (i >= s.size() || !isdigit(static_cast<unsigned char>(s[i])))
        return std::nullopt;
    long v = 0;
    for (; i < s.size() && isdigit(static_cast<unsigned char>(s[i])); ++i) {
        v = v * 10 + (s[i] - '0');
        if (v > 1000000000L)  // far past any index: no overflow
            v = 1000000000L;
    }
    return neg ? -v : v;
}

struct PciAddress {
    unsigned domain = 0, bus = 0, slot = 0, func = 0;
};

// One hex field of "dddd:bb:ss.f", up to the separator.
bool hex_field(std::string_view& s, char sep, unsigned& out) {
    const size_t end = s.find(sep);
    if (end == 0 || end == std::string_view::npos)
        return false;
    auto v = parse_u64(s.substr(0, end), 16);
    if (!v || *v > 0xffffffffu)
        return false;
    out = static_cast<unsigned>(*v);
    s.remove_prefix(end + 1);
    return true;
}

std::optional<PciAddress> parse_pci_address(std::string_view s) {
    PciAddress a;
    if (!hex_field(s, ':', a.domain) || !hex_field(s, ':', a.bus) || !hex_field(s, '.', a.slot))
        return std::nullopt;
    auto f = parse_u64(s, 10);
    if (!f || *f > 0xffffffffu)
        return std::nullopt;
    a.func = static_cast<unsigned>(*f);
    return a;
}

bool multifunction(const std::string& pci_dir) {
    char buf[65];
    auto n = read_file_into((pci_dir + "/config").c_str(), buf, sizeof buf);
    constexpr size_t kHeaderType = 0x0e;
    return n && *n > kHeaderType && (static_cast<unsigned char>(buf[kHeaderType]) & 0x80);
}

bool ari_enabled(const std::string& pci_dir) {
    auto v = read_sysfs_attr(pci_dir + "/ari_enabled");
    return v && !v->empty() && (*v)[0] == '1';
}

// The PF's virtfn<N> link that points to the function named vf.
std::optional<unsigned> vf_number(const std::string& pf_dir, const std::string& vf) {
    auto entries = list_dir(pf_dir);
    if (!entries)
        return std::nullopt;
    for (const std::string& e : *entries) {
        if (e.rfind("virtfn", 0) != 0)
            continue;
        auto n = parse_u64(std::string_view(e).substr(6), 10);
        if (n && *n <= 0xffffffffu && link_base(pf_dir + "/" + e) == vf)
            return static_cast<unsigned>(*n);
    }
    return std::nullopt;
}

}  // namespace

std::optional<Policy> parse_policy(std::string_view s) {
    static constexpr std::pair<std::string_view, Policy> kNames[] = {
        {"NAME_KERNEL", Policy::Kernel},   {"NAME_PCI", Policy::Pci},           {"NAME_GUID", Policy::Guid},
        {"NAME_ONBOARD", Policy::Onboard}, {"NAME_FALLBACK", Policy::Fallback}, {"NAME_FIXED", Policy::Fixed},
    };
    for (const auto& [name, p] : kNames)
        if (s == name)
            return p;
    return std::nullopt;
}

std::string name_prefix(std::string_view protocol) {
    bool word = !protocol.empty() && protocol.size() <= 8;
    for (char c : protocol)
        word = word && c >= 'a' && c <= 'z';
    return word ? std::string(protocol) : std::string("rdma");
}

std::optional<std::string> onboard_name(const std::string& class_dir) {
    // The first attribute that exists decides, readable number or not.
    auto text = read_file(class_dir + "/device/acpi_index");
    if (!text)
        text = read_file(class_dir + "/device/index");
    if (!text)
        return std::nullopt;
    auto v = leading_int(*text);
    if (!v || *v < 0 || *v > kOnboardIndexMax)
        return std::nullopt;
    return "o" + std::to_string(*v);
}

std::optional<std::string> pci_name(const std::string& class_dir) {
    const std::string dev_dir = class_dir + "/device";
    if (link_base(dev_dir + "/subsystem") != "pci")
        return std::nullopt;
    auto self = link_base(dev_dir);
    if (!self)
        return std::nullopt;
    // A VF is placed by its PF; the PF's own directory holds the attributes.
    std::string fn_dir = dev_dir;
    std::optional<std::string> fn_name = self;
    std::optional<unsigned> vf;
    if (auto pf = link_base(dev_dir + "/physfn")) {
        fn_dir = dev_dir + "/physfn";
        fn_name = pf;
        vf = vf_number(fn_dir, *self);
    }
    auto a = parse_pci_address(*fn_name);
    if (!a)
        return std::nullopt;
    unsigned func = a->func;
    if (ari_enabled(fn_dir))
        func += a->slot * 8;
    std::string name;
    if (a->domain > 0)
        name = "P" + std::to_string(a->domain);
    name += "p" + std::to_string(a->bus) + "s" + std::to_string(a->slot);
    if (func > 0 || multifunction(fn_dir)) {
        name += "f" + std::to_string(func);
        if (vf)
            name += "v" + std::to_string(*vf);
    }
    return name;
}

std::string guid_name(uint64_t node_guid) {
    char buf[20];
    snprintf(buf, sizeof buf, "x%016" PRIx64, node_guid);
    return buf;
}

std::optional<std::string> wanted_name(Policy p, const Device& dev, const std::string& class_dir,
                                       std::string_view fixed) {
    std::optional<std::string> suffix;
    switch (p) {
    case Policy::Kernel: return dev.name;
    case Policy::Fixed:
        if (fixed.empty())
            return std::nullopt;
        return std::string(fixed);
    case Policy::Guid:
        if (dev.node_guid)
            suffix = guid_name(*dev.node_guid);
        break;
    case Policy::Onboard: suffix = onboard_name(class_dir); break;
    case Policy::Pci: suffix = pci_name(class_dir); break;
    case Policy::Fallback:
        suffix = onboard_name(class_dir);
        if (!suffix)
            suffix = pci_name(class_dir);
        break;
    }
    if (!suffix)
        return std::nullopt;
    return name_prefix(dev.protocol) + *suffix;
}

}  // namespace rdma::rename
