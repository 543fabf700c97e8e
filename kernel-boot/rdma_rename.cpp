// rdma_rename DEVICE POLICY [NAME]: gives an RDMA device the stable name a
// policy makes for it (rename_policy.h), through the kernel's RDMA netlink.
// udev runs it as the device appears (60-rdma-persistent-naming.rules).
// Exit status 0 when the device has the wanted name (renamed, or already
// so named, or NAME_KERNEL), 1 otherwise. A rename prints the name given
// on standard output (udev's %c). Messages go to syslog; -v adds the steps.
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "kernel-boot/rename_policy.h"
#include "util/unique_fd.h"

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif

namespace {

using rdma::rename::Device;
using rdma::rename::Policy;

bool verbose = false;

void say(int priority, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void say(int priority, const char* fmt, ...) {
    if (priority > LOG_ERR && !verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsyslog(priority, fmt, ap);
    va_end(ap);
}

// A minimal RDMA netlink client: one request, its replies parsed in place.
class Nldev {
public:
    bool open() {
        fd_ = rdma::UniqueFd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA));
        if (!fd_)
            return false;
        sockaddr_nl sa{};
        sa.nl_family = AF_NETLINK;
        return bind(fd_.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    }

    // Every device's index, name, node GUID and protocol; false when the
    // dump fails.
    bool find(const std::string& name, uint32_t& index, Device& dev) {
        if (!send(RDMA_NLDEV_CMD_GET, NLM_F_REQUEST | NLM_F_DUMP, {}))
            return false;
        bool found = false;
        int err = receive([&](const nlmsghdr* h) {
            Device d;
            uint32_t idx = 0;
            bool have_idx = false;
            for_each_attr(h, [&](const nlattr* a, const void* data, size_t len) {
                switch (a->nla_type & NLA_TYPE_MASK) {
                case RDMA_NLDEV_ATTR_DEV_INDEX:
                    if (len >= 4) {
                        memcpy(&idx, data, 4);
                        have_idx = true;
                    }
                    break;
                case RDMA_NLDEV_ATTR_DEV_NAME: d.name = string_attr(data, len); break;
                case RDMA_NLDEV_ATTR_DEV_PROTOCOL: d.protocol = string_attr(data, len); break;
                case RDMA_NLDEV_ATTR_NODE_GUID:
                    if (len >= 8) {
                        uint64_t g;
                        memcpy(&g, data, 8);
                        d.node_guid = g;
                    }
                    break;
                default: break;
                }
            });
            if (have_idx && d.name == name) {
                index = idx;
                dev = std::move(d);
                found = true;
            }
        });
        return err == 0 && found;
    }

    // 0 or the kernel's errno.
    int rename(uint32_t index, const std::string& name) {
        std::vector<char> attrs;
        put_attr(attrs, RDMA_NLDEV_ATTR_DEV_INDEX, &index, sizeof index);
        put_attr(attrs, RDMA_NLDEV_ATTR_DEV_NAME, name.c_str(), name.size() + 1);
        if (!send(RDMA_NLDEV_CMD_SET, NLM_F_REQUEST | NLM_F_ACK, attrs))
            return errno ? errno : EIO;
        return receive([](const nlmsghdr*) {});
    }

private:
    static std::string string_attr(const void* data, size_t len) {
        const char* p = static_cast<const char*>(data);
        return std::string(p, strnlen(p, len));
    }

    static void put_attr(std::vector<char>& out, uint16_t type, const void* data, size_t len) {
        nlattr a{};
        a.nla_type = type;
        a.nla_len = static_cast<uint16_t>(NLA_HDRLEN + len);
        const size_t at = out.size();
        out.resize(at + NLA_ALIGN(a.nla_len), 0);
        memcpy(&out[at], &a, sizeof a);
        memcpy(&out[at + NLA_HDRLEN], data, len);
    }

    template <class F>
    static void for_each_attr(const nlmsghdr* h, F f) {
        const char* p = reinterpret_cast<const char*>(NLMSG_DATA(h));
        size_t left = h->nlmsg_len - NLMSG_HDRLEN;
        while (left >= sizeof(nlattr)) {
            nlattr a;
            memcpy(&a, p, sizeof a);
            if (a.nla_len < NLA_HDRLEN || a.nla_len > left)
                return;
            f(&a, p + NLA_HDRLEN, a.nla_len - NLA_HDRLEN);
            const size_t step = NLA_ALIGN(a.nla_len);
            if (step >= left)
                return;
            p += step;
            left -= step;
        }
    }

    bool send(int cmd, uint16_t flags, const std::vector<char>& attrs) {
        std::vector<char> msg(NLMSG_HDRLEN + attrs.size());
        nlmsghdr h{};
        h.nlmsg_len = static_cast<uint32_t>(msg.size());
        h.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
        h.nlmsg_flags = flags;
        h.nlmsg_seq = ++seq_;
        memcpy(msg.data(), &h, sizeof h);
        if (!attrs.empty())
            memcpy(msg.data() + NLMSG_HDRLEN, attrs.data(), attrs.size());
        sockaddr_nl kernel{};
        kernel.nl_family = AF_NETLINK;
        return sendto(fd_.get(), msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) ==
            static_cast<ssize_t>(msg.size());
    }

    // Reads replies to the last request until DONE or an ack/error; each
    // data message goes to f. 0 or an errno.
    template <class F>
    int receive(F f) {
        std::vector<char> buf(32768);
        for (;;) {
            const ssize_t n = recv(fd_.get(), buf.data(), buf.size(), 0);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                return errno;
            }
            size_t left = static_cast<size_t>(n);
            const char* p = buf.data();
            while (left >= NLMSG_HDRLEN) {
                nlmsghdr h;
                memcpy(&h, p, sizeof h);
                if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > left)
                    return EIO;
                if (h.nlmsg_seq == seq_) {
                    if (h.nlmsg_type == NLMSG_DONE)
                        return 0;
                    if (h.nlmsg_type == NLMSG_ERROR) {
                        nlmsgerr e{};
                        if (h.nlmsg_len >= NLMSG_HDRLEN + sizeof e)
                            memcpy(&e, p + NLMSG_HDRLEN, sizeof e);
                        return -e.error;
                    }
                    f(reinterpret_cast<const nlmsghdr*>(p));
                }
                const size_t step = NLMSG_ALIGN(h.nlmsg_len);
                if (step >= left)
                    break;
                p += step;
                left -= step;
            }
        }
    }

    rdma::UniqueFd fd_;
    uint32_t seq_ = 0;
};

int run(int argc, char** argv) {
    int c;
    while ((c = getopt(argc, argv, "v")) != -1) {
        if (c != 'v')
            return 1;
        verbose = true;
    }
    if (argc - optind < 2)
        return 1;
    const std::string devname = argv[optind];
    const char* policy_name = argv[optind + 1];
    const char* fixed = argc - optind > 2 ? argv[optind + 2] : "";
    openlog("rdma_rename", 0, LOG_USER);

    auto policy = rdma::rename::parse_policy(policy_name);
    if (!policy) {
        say(LOG_ERR, "%s: no such naming policy: %s", devname.c_str(), policy_name);
        return 1;
    }
    say(LOG_INFO, "%s: naming policy %s", devname.c_str(), policy_name);
    if (*policy == Policy::Kernel) {
        say(LOG_INFO, "%s: the kernel's name stays", devname.c_str());
        return 0;
    }
    if (*policy == Policy::Fixed && !*fixed) {
        say(LOG_ERR, "%s: NAME_FIXED needs the name to give", devname.c_str());
        return 1;
    }

    Nldev nl;
    if (!nl.open()) {
        say(LOG_ERR, "%s: cannot open RDMA netlink: %s", devname.c_str(), strerror(errno));
        return 1;
    }
    uint32_t index = 0;
    Device dev;
    if (!nl.find(devname, index, dev)) {
        say(LOG_ERR, "%s: the kernel knows no such RDMA device", devname.c_str());
        return 1;
    }
    // (devname is now a device the kernel named: one sysfs path component.)
    auto name = rdma::rename::wanted_name(*policy, dev, "/sys/class/infiniband/" + devname, fixed);
    if (!name) {
        say(LOG_ERR, "%s: %s gives this device no name", devname.c_str(), policy_name);
        return 1;
    }
    const int err = nl.rename(index, *name);
    if (err) {
        say(LOG_ERR, "%s: renaming to %s failed: %s", devname.c_str(), name->c_str(), strerror(err));
        return 1;
    }
    say(LOG_INFO, "%s: now named %s", devname.c_str(), name->c_str());
    printf("%s\n", name->c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        syslog(LOG_ERR, "%s", e.what());
        return 1;
    }
}
