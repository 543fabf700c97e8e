// Device discovery over RDMA netlink (NETLINK_RDMA, the NLDEV client):
// the device dump gives names, indexes and GUIDs; GET_CHARDEV per device
// gives its uverbs char device, ABI and driver id.
#include "libibverbs/ibverbs.h"

#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <rdma/rdma_netlink.h>

#include <cstring>
#include <exception>
#include <memory>

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif

namespace rdma::verbs {
namespace {

struct SockDeleter {
    void operator()(nl_sock* s) const { nl_socket_free(s); }
};
using Sock = std::unique_ptr<nl_sock, SockDeleter>;

Sock open_socket() {
    Sock s(nl_socket_alloc());
    if (!s)
        return nullptr;
    if (nl_connect(s.get(), NETLINK_RDMA) != 0)
        return nullptr;
    nl_socket_disable_auto_ack(s.get());
    return s;
}

uint64_t attr_uint(nlattr* a) {
    switch (nla_len(a)) {
    case 1: return nla_get_u8(a);
    case 2: return nla_get_u16(a);
    case 4: return nla_get_u32(a);
    case 8: return nla_get_u64(a);
    default: return 0;
    }
}

std::string attr_string(nlattr* a) {
    const char* p = static_cast<const char*>(nla_data(a));
    return std::string(p, strnlen(p, static_cast<size_t>(nla_len(a))));
}

// Discovery joins the names to /sys/class/... and /dev/infiniband/: a name
// that is not one path component ("", ".", "..", or with a '/') would
// point outside those directories, so it is taken as absent.
std::string attr_name(nlattr* a) {
    std::string n = attr_string(a);
    if (n == "." || n == ".." || n.find('/') != std::string::npos)
        n.clear();
    return n;
}

// libnl calls the parsers below from C: an exception (std::bad_alloc from
// a string or a push_back) must not unwind through it. The parser stops
// the receive loop instead and the caller rethrows once libnl returned.
struct DumpState {
    std::vector<SysfsDevice>* out;
    std::exception_ptr error;
};

struct ChardevState {
    SysfsDevice* dev;
    std::exception_ptr error;
};

template <class State, class Parse>
int guarded(void* arg, Parse parse) noexcept {
    auto* st = static_cast<State*>(arg);
    try {
        parse(*st);
        return NL_OK;
    } catch (...) {
        st->error = std::current_exception();
        return NL_STOP;
    }
}

}  // namespace

void netlink_parse_device(nl_msg* msg, std::vector<SysfsDevice>& out) {
    nlmsghdr* hdr = nlmsg_hdr(msg);
    SysfsDevice dev;
    bool have_index = false, have_name = false;
    nlattr* a;
    int rem;
    nlmsg_for_each_attr(a, hdr, 0, rem) {
        switch (nla_type(a)) {
        case RDMA_NLDEV_ATTR_DEV_INDEX:
            dev.ibdev_index = static_cast<uint32_t>(attr_uint(a));
            have_index = true;
            break;
        case RDMA_NLDEV_ATTR_DEV_NAME:
            dev.ibdev_name = attr_name(a);
            have_name = !dev.ibdev_name.empty();
            break;
        case RDMA_NLDEV_ATTR_NODE_GUID:
            dev.node_guid = attr_uint(a);
            dev.have_node_guid = true;
            break;
        default: break;
        }
    }
    if (have_index && have_name)
        out.push_back(std::move(dev));
}

void netlink_parse_chardev(nl_msg* msg, SysfsDevice& dev) {
    nlattr* a;
    int rem;
    nlmsg_for_each_attr(a, nlmsg_hdr(msg), 0, rem) {
        switch (nla_type(a)) {
        case RDMA_NLDEV_ATTR_CHARDEV_NAME: dev.sysfs_name = attr_name(a); break;
        case RDMA_NLDEV_ATTR_CHARDEV: dev.cdev = static_cast<dev_t>(attr_uint(a)); break;
        case RDMA_NLDEV_ATTR_CHARDEV_ABI: dev.abi_ver = static_cast<int>(attr_uint(a)); break;
        case RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID: dev.driver_id = static_cast<uint32_t>(attr_uint(a)); break;
        default: break;
        }
    }
}

void netlink_parse_sys(nl_msg* msg, std::optional<bool>& copy_on_fork) {
    nlattr* a;
    int rem;
    nlmsg_for_each_attr(a, nlmsg_hdr(msg), 0, rem) {
        if (nla_type(a) == RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK)
            copy_on_fork = attr_uint(a) != 0;
    }
}

namespace {

int on_device(nl_msg* msg, void* arg) {
    return guarded<DumpState>(arg, [msg](DumpState& st) { netlink_parse_device(msg, *st.out); });
}

int on_chardev(nl_msg* msg, void* arg) {
    return guarded<ChardevState>(arg, [msg](ChardevState& st) { netlink_parse_chardev(msg, *st.dev); });
}

bool query_chardev(nl_sock* sk, SysfsDevice& dev) {
    nl_msg* msg = nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV), 0);
    if (!msg)
        return false;
    bool ok = nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, dev.ibdev_index) == 0 &&
        nla_put_string(msg, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs") == 0 && nl_send_auto(sk, msg) >= 0;
    nlmsg_free(msg);
    if (!ok)
        return false;
    ChardevState st{&dev, nullptr};
    nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_chardev, &st);
    const int rc = nl_recvmsgs_default(sk);
    if (st.error)
        std::rethrow_exception(st.error);
    return rc >= 0 && !dev.sysfs_name.empty();
}

}  // namespace

bool netlink_discover(std::vector<SysfsDevice>& out) {
    Sock sk = open_socket();
    if (!sk)
        return false;
    std::vector<SysfsDevice> found;
    DumpState st{&found, nullptr};
    nl_socket_modify_cb(sk.get(), NL_CB_VALID, NL_CB_CUSTOM, on_device, &st);
    if (nl_send_simple(sk.get(), RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), NLM_F_DUMP, nullptr, 0) < 0)
        return false;
    const int rc = nl_recvmsgs_default(sk.get());
    if (st.error)
        std::rethrow_exception(st.error);
    if (rc < 0)
        return false;
    for (SysfsDevice& d : found) {
        // A device without a uverbs char device (no ib_uverbs, or a kernel
        // client only) is not usable from userspace: skip it.
        if (query_chardev(sk.get(), d))
            out.push_back(std::move(d));
    }
    return true;
}

namespace {
int on_sys(nl_msg* msg, void* arg) {
    netlink_parse_sys(msg, *static_cast<std::optional<bool>*>(arg));
    return NL_OK;
}
}  // namespace

std::optional<bool> netlink_copy_on_fork() {
    Sock sk = open_socket();
    if (!sk)
        return std::nullopt;
    std::optional<bool> v;
    nl_socket_modify_cb(sk.get(), NL_CB_VALID, NL_CB_CUSTOM, on_sys, &v);
    if (nl_send_simple(sk.get(), RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET), 0, nullptr, 0) < 0)
        return std::nullopt;
    if (nl_recvmsgs_default(sk.get()) < 0)
        return std::nullopt;
    return v;
}

}  // namespace rdma::verbs
