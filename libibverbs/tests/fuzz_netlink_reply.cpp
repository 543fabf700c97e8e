// Fuzzer: the RDMA netlink reply parsers (netlink.cpp) on one message as
// libnl would hand it over: the input is the message, its nlmsg_len set
// to the input's size. Every parser runs on it, and what each produced
// must be what an independent walk of the attributes gives: the last
// attribute of a type wins, a number is read by its length (1, 2, 4 or 8
// bytes, else 0), a string ends at its first NUL, and a device or char
// device name that is not one path component counts as absent.
#include "libibverbs/ibverbs.h"

#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

using rdma::verbs::SysfsDevice;

struct Attr {
    uint16_t type;
    const uint8_t* data;
    size_t len;
};

// The attributes after the 16-byte header, as the kernel lays them out.
std::vector<Attr> walk(const uint8_t* msg, size_t size) {
    std::vector<Attr> out;
    size_t off = sizeof(nlmsghdr);
    while (off + 4 <= size) {
        uint16_t len, type;
        memcpy(&len, msg + off, 2);
        memcpy(&type, msg + off + 2, 2);
        if (len < 4 || len > size - off)
            break;
        out.push_back({static_cast<uint16_t>(type & 0x3fff), msg + off + 4, static_cast<size_t>(len - 4)});
        off += (len + 3u) & ~3u;
    }
    return out;
}

uint64_t number(const Attr& a) {
    uint64_t v = 0;
    switch (a.len) {
    case 1: return a.data[0];
    case 2: return static_cast<uint64_t>(a.data[0]) | static_cast<uint64_t>(a.data[1]) << 8;
    case 4:
    case 8:
        for (size_t i = a.len; i-- > 0;)
            v = v << 8 | a.data[i];
        return v;
    default: return 0;
    }
}

std::string name(const Attr& a) {
    std::string s;
    for (size_t i = 0; i < a.len && a.data[i]; i++)
        s += static_cast<char>(a.data[i]);
    if (s == "." || s == ".." || s.find('/') != std::string::npos)
        return {};
    return s;
}

void check(bool ok) {
    if (!ok)
        abort();
}

void check_device(nl_msg* msg, const std::vector<Attr>& attrs) {
    std::optional<uint32_t> index;
    std::string dev_name;
    std::optional<uint64_t> guid;
    for (const Attr& a : attrs) {
        if (a.type == RDMA_NLDEV_ATTR_DEV_INDEX)
            index = static_cast<uint32_t>(number(a));
        else if (a.type == RDMA_NLDEV_ATTR_DEV_NAME)
            dev_name = name(a);
        else if (a.type == RDMA_NLDEV_ATTR_NODE_GUID)
            guid = number(a);
    }
    std::vector<SysfsDevice> out(1);  // appended to, never replaced
    out[0].ibdev_name = "earlier";
    rdma::verbs::netlink_parse_device(msg, out);
    check(out[0].ibdev_name == "earlier");
    if (!index || dev_name.empty()) {
        check(out.size() == 1);
        return;
    }
    check(out.size() == 2);
    const SysfsDevice& d = out[1];
    check(d.ibdev_index == *index && d.ibdev_name == dev_name);
    check(d.have_node_guid == guid.has_value() && d.node_guid == guid.value_or(0));
    check(d.sysfs_name.empty() && d.cdev == 0 && d.abi_ver == 0 && d.driver_id == 0);
}

void check_chardev(nl_msg* msg, const std::vector<Attr>& attrs) {
    SysfsDevice d;  // fields the reply does not carry keep these values
    d.ibdev_name = "mlx5_0";
    d.sysfs_name = "before";
    d.cdev = 12345;
    d.abi_ver = 6;
    d.driver_id = 77;
    SysfsDevice want = d;
    for (const Attr& a : attrs) {
        switch (a.type) {
        case RDMA_NLDEV_ATTR_CHARDEV_NAME: want.sysfs_name = name(a); break;
        case RDMA_NLDEV_ATTR_CHARDEV: want.cdev = static_cast<dev_t>(number(a)); break;
        case RDMA_NLDEV_ATTR_CHARDEV_ABI: want.abi_ver = static_cast<int>(number(a)); break;
        case RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID: want.driver_id = static_cast<uint32_t>(number(a)); break;
        default: break;
        }
    }
    rdma::verbs::netlink_parse_chardev(msg, d);
    check(d.sysfs_name == want.sysfs_name && d.cdev == want.cdev && d.abi_ver == want.abi_ver &&
          d.driver_id == want.driver_id);
    check(d.ibdev_name == "mlx5_0" && d.ibdev_index == UINT32_MAX && !d.have_node_guid);
}

void check_sys(nl_msg* msg, const std::vector<Attr>& attrs) {
    std::optional<bool> want;
    for (const Attr& a : attrs)
        if (a.type == RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK)
            want = number(a) != 0;
    std::optional<bool> got;
    rdma::verbs::netlink_parse_sys(msg, got);
    check(got == want);
    // A reply without the attribute leaves an earlier answer alone.
    std::optional<bool> kept = true;
    rdma::verbs::netlink_parse_sys(msg, kept);
    check(kept == (want ? want : std::optional<bool>(true)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // libnl never delivers a message shorter than its header.
    if (size < sizeof(nlmsghdr) || size > 65536)
        return 0;
    std::vector<uint8_t> buf(data, data + size);
    nlmsghdr hdr;
    memcpy(&hdr, buf.data(), sizeof(hdr));
    hdr.nlmsg_len = static_cast<uint32_t>(size);
    memcpy(buf.data(), &hdr, sizeof(hdr));
    nl_msg* msg = nlmsg_convert(reinterpret_cast<nlmsghdr*>(buf.data()));
    if (!msg)
        return 0;
    const std::vector<Attr> attrs = walk(buf.data(), size);
    check_device(msg, attrs);
    check_chardev(msg, attrs);
    check_sys(msg, attrs);
    nlmsg_free(msg);
    return 0;
}
