// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// libibumad: InfiniBand management datagrams through /dev/infiniband/umadN.
//
// The CA/port view comes from /sys/class/infiniband/<ca>/{node_type,...,
// ports/<n>/...} and the umad device <-> (ca, port) map from
// /sys/class/infiniband_mad/umad<id>/{ibdev,port}. A "portid" handed to
// callers is the umad device's file descriptor, as in the reference.
//
// Only libc's open/close/read/write/poll/ioctl/opendir/scandir touch the
// devices and sysfs (see sysfs.h): the fabric simulator interposes exactly
// those.
//
// Failure at the C ABI: the entry points that build C++ objects (the CA and
// port view, the device lists, the SMI/GSI pairs) run through the
// util/c_entry.h barrier, so an allocation failure anywhere below them
// returns the man page's error (-ENOMEM, NULL with errno ENOMEM, or -1)
// instead of unwinding into C. Internally such code may throw; it keeps
// everything it owns in RAII holders and calls the internal functions, never
// a barrier-wrapped entry point (which would turn the failure into an
// ordinary "not found" and make the caller carry on). The remaining entry
// points (MAD I/O, agents, header accessors, traces) allocate nothing and
// call only libc: they cannot throw, so there is nothing for a barrier to
// catch.
//
// Inside, failures are values: Status or Result<T> (util/result.h) carrying
// a positive errno, and no internal function sets errno to report one. The
// exported function translates once. Those documented to return -errno do
// it through neg_errno_entry() (or, without a barrier, neg_errno()), which
// leaves errno alone: these functions have never set errno to their error,
// as the reference's do not, and what a caller finds in errno is what the
// system calls below left (the %m of the traces prints it too). The few
// places that set errno on purpose are exported functions (umad_send,
// umad_recv, umad_get_ca_device_list) and resolve_ca's walk of the device
// list, which leaves errno as the reference's list building always has.
#include <infiniband/umad.h>

#include <algorithm>
#include <cstddef>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <poll.h>
#include <string>
#include <sys/ioctl.h>
#include <unistd.h>
#include <vector>

#include "sysfs.h"
#include "util/c_entry.h"
#include "util/ibwarn.h"
#include "util/result.h"
#include "util/unique_fd.h"

// The kernel's registration requests (include/uapi/rdma/ib_user_mad.h).
struct ib_user_mad_reg_req {
    uint32_t id;
    uint32_t method_mask[4];
    uint8_t qpn;
    uint8_t mgmt_class;
    uint8_t mgmt_class_version;
    uint8_t oui[3];
    uint8_t rmpp_version;
};

struct ib_user_mad_reg_req2 {
    uint32_t id;
    uint32_t qpn;
    uint8_t mgmt_class;
    uint8_t mgmt_class_version;
    uint16_t res;
    uint32_t flags;
    uint64_t method_mask[2];
    uint32_t oui;
    uint8_t rmpp_version;
    uint8_t reserved[3];
};

#define UMAD_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" {
void umad_free_ca_device_list(struct umad_device_node* head);
}

namespace {

using rdma::Errno;
using rdma::Result;
using rdma::Status;

constexpr const char* kDevDir = "/dev/infiniband";
constexpr const char* kDefaultCa = "mthca0";
constexpr unsigned kPortActive = 4;
constexpr unsigned kPhysLinkUp = 5;
constexpr unsigned kPhysDisabled = 3;
constexpr uint32_t kCapIsSmDisabled = 1u << 10;

int g_debug;
// Set by umad_open_port: whether the kernel's MADs carry a P_Key index
// (ABI 6, or ABI 5 after IB_USER_MAD_ENABLE_PKEY). Process-wide, as in the
// reference: umad_set_pkey/umad_get_pkey consult it.
bool g_pkey_api;

// The reference prints its diagnostics as "ibwarn: [pid] function: text";
// callers pass the reference's function name so the text matches.
using rdma::ibwarn;

#define UDEBUG(fn, ...)              \
    do {                             \
        if (g_debug)                 \
            ibwarn(fn, __VA_ARGS__); \
    } while (0)
// The reference's trace and debug lines both appear from level 1 on.
#define UTRACE UDEBUG

std::string ca_dir(const char* ca) { return std::string(SYS_INFINIBAND) + "/" + ca; }

// The kernel umad ABI version, 0 when it cannot be used. Read once.
unsigned abi_version() {
    static unsigned cached;
    static bool known;
    if (known)
        return cached;
    unsigned v = 0;
    if (!umad::sysfs::read_uint(IB_UMAD_ABI_DIR, IB_UMAD_ABI_FILE, &v).ok()) {
        ibwarn("get_abi_version", "can't read ABI version from %s/%s (%m): is ib_umad module loaded?", IB_UMAD_ABI_DIR,
               IB_UMAD_ABI_FILE);
        v = 0;
    } else if (v < IB_UMAD_ABI_VERSION) {
        v = 0;
    }
    cached = v;
    known = true;
    return v;
}

// A device name listed by /sys/class/infiniband is an InfiniBand-type node
// (CA, switch or router; not iWARP RNICs or usNICs) when node_type says so.
bool is_ib_node(const char* name) {
    unsigned type;
    if (!umad::sysfs::read_uint(ca_dir(name), SYS_NODE_TYPE, &type).ok())
        return false;
    return type >= 1 && type <= 3;
}

bool is_dot(const char* n) { return !strcmp(n, ".") || !strcmp(n, ".."); }

// scandir(3) wrapped so its list is always freed.
struct DirList {
    struct dirent** names = nullptr;
    int n = -1;
    explicit DirList(const std::string& dir) { n = scandir(dir.c_str(), &names, nullptr, alphasort); }
    ~DirList() {
        for (int i = 0; i < n; i++)
            free(names[i]);
        free(names);
    }
    DirList(const DirList&) = delete;
    DirList& operator=(const DirList&) = delete;
};

// malloc'ed buffers released on every path (exceptions included).
struct FreeDeleter {
    void operator()(void* p) const { free(p); }
};

// The P_Key table of a port: ports/<n>/pkeys/<index>, one file per entry.
// EIO when there is none or one cannot be read, ENOMEM when the table
// cannot be allocated.
Status read_pkeys(const char* ca_name, int portnum, const std::string& dir, umad_port_t* port) {
    DirList list(dir);
    if (list.n <= 0) {
        ibwarn("get_port", "no pkeys found for %s:%u (at dir %s)...", ca_name, portnum, dir.c_str());
        return Errno{EIO};
    }
    std::vector<unsigned> indexes;
    for (int i = 0; i < list.n; i++) {
        const char* n = list.names[i]->d_name;
        if (is_dot(n))
            continue;
        char* end;
        unsigned long idx = strtoul(n, &end, 10);
        if (*end || end == n || idx > 0xffff)
            continue;
        indexes.push_back(static_cast<unsigned>(idx));
    }
    if (indexes.empty()) {
        ibwarn("get_port", "no pkeys found for %s:%u (at dir %s)...", ca_name, portnum, dir.c_str());
        return Errno{EIO};
    }
    unsigned size = *std::max_element(indexes.begin(), indexes.end()) + 1;
    std::unique_ptr<uint16_t, FreeDeleter> pkeys(static_cast<uint16_t*>(calloc(size, sizeof(uint16_t))));
    if (!pkeys) {
        ibwarn("get_port", "get_port: calloc failed: %s", strerror(errno));
        return Errno{ENOMEM};
    }
    for (unsigned idx : indexes) {
        unsigned v;
        char name[16];
        snprintf(name, sizeof(name), "%u", idx);
        if (!umad::sysfs::read_uint(dir, name, &v).ok())
            return Errno{EIO};
        pkeys.get()[idx] = static_cast<uint16_t>(v);
    }
    port->pkeys = pkeys.release();
    port->pkeys_size = size;
    return {};
}

// Fills *port from ports_dir/<portnum>: EIO when an attribute the port must
// have cannot be read, or read_pkeys()'s failure.
Status get_port(const char* ca_name, const std::string& ports_dir, int portnum, umad_port_t* port) {
    using namespace umad::sysfs;
    memset(port, 0, sizeof(*port));
    strncpy(port->ca_name, ca_name, sizeof(port->ca_name) - 1);
    port->portnum = portnum;
    std::string dir = ports_dir + "/" + std::to_string(portnum);
    unsigned capmask;
    uint8_t gid[16];
    if (!read_uint(dir, SYS_PORT_LMC, &port->lmc).ok() || !read_uint(dir, SYS_PORT_SMLID, &port->sm_lid).ok() ||
        !read_uint(dir, SYS_PORT_SMSL, &port->sm_sl).ok() || !read_uint(dir, SYS_PORT_LID, &port->base_lid).ok() ||
        !read_uint(dir, SYS_PORT_STATE, &port->state).ok() ||
        !read_uint(dir, SYS_PORT_PHY_STATE, &port->phys_state).ok())
        return Errno{EIO};
    (void)read_uint(dir, SYS_PORT_RATE, &port->rate);  // optional
    if (!read_uint(dir, SYS_PORT_CAPMASK, &capmask).ok())
        return Errno{EIO};
    port->capmask = htobe32(capmask);
    if (!read_string(dir, SYS_PORT_LINK_LAYER, port->link_layer, sizeof(port->link_layer)).ok())
        strncpy(port->link_layer, "IB", sizeof(port->link_layer) - 1);
    if (!read_gid(dir, SYS_PORT_GID, gid).ok())
        return Errno{EIO};
    memcpy(&port->gid_prefix, gid, 8);
    memcpy(&port->port_guid, gid + 8, 8);
    return read_pkeys(ca_name, portnum, dir + "/pkeys", port);
}

void release_port(umad_port_t* port) {
    free(port->pkeys);
    port->pkeys = nullptr;
    port->pkeys_size = 0;
}

void release_ca(umad_ca_t* ca) {
    for (auto& p : ca->ports) {
        if (!p)
            continue;
        release_port(p);
        free(p);
        p = nullptr;
    }
}

// Fills *ca from /sys/class/infiniband/<name>: the failure of a CA
// attribute's reading as it is, ENOENT without a ports directory, EIO for a
// port that cannot be read, ENOMEM when one cannot be allocated.
Status get_ca(const char* name, umad_ca_t* ca) {
    using namespace umad::sysfs;
    memset(ca, 0, sizeof(*ca));
    strncpy(ca->ca_name, name, sizeof(ca->ca_name) - 1);
    std::string dir = ca_dir(name);
    Status s;
    if (!(s = read_uint(dir, SYS_NODE_TYPE, &ca->node_type)).ok() ||
        !(s = read_string(dir, SYS_CA_FW_VERS, ca->fw_ver, sizeof(ca->fw_ver))).ok() ||
        !(s = read_string(dir, SYS_CA_HW_VERS, ca->hw_ver, sizeof(ca->hw_ver))).ok() ||
        !(s = read_string(dir, SYS_CA_TYPE, ca->ca_type, sizeof(ca->ca_type))).ok() ||
        !(s = read_guid(dir, SYS_CA_NODE_GUID, reinterpret_cast<uint64_t*>(&ca->node_guid))).ok() ||
        !(s = read_guid(dir, SYS_CA_SYS_GUID, reinterpret_cast<uint64_t*>(&ca->system_guid))).ok())
        return s;

    std::string ports_dir = dir + "/" + SYS_CA_PORTS_DIR;
    DIR* d = opendir(ports_dir.c_str());
    if (!d)
        return Errno{ENOENT};
    closedir(d);
    DirList list(ports_dir);
    if (list.n < 0)
        return Errno{EIO};
    // Unless the whole CA was read, the ports read so far are released
    // (early returns and exceptions alike): a failed umad_get_ca() leaves
    // nothing to release.
    struct Release {
        umad_ca_t* ca;
        ~Release() {
            if (ca)
                release_ca(ca);
        }
    } unless_done{ca};
    for (int i = 0; i < list.n; i++) {
        const char* n = list.names[i]->d_name;
        if (is_dot(n))
            continue;
        char* end;
        long portnum = strtol(n, &end, 10);
        if (*end || end == n || portnum < 0 || portnum >= UMAD_CA_MAX_PORTS || (portnum == 0 && strcmp(n, "0")))
            return Errno{EIO};
        auto* port = static_cast<umad_port_t*>(calloc(1, sizeof(umad_port_t)));
        if (!port)
            return Errno{ENOMEM};
        ca->ports[portnum] = port;
        if (!get_port(name, ports_dir, static_cast<int>(portnum), port).ok())
            return Errno{EIO};
        if (ca->numports < portnum)
            ca->numports = static_cast<int>(portnum);
    }
    unless_done.ca = nullptr;
    return {};
}

bool port_is_ib(const umad_port_t* p) { return !strcmp(p->link_layer, "InfiniBand") || !strcmp(p->link_layer, "IB"); }

// The bodies of umad_get_ca(), umad_get_port() and umad_get_ca_device_list()
// (their traces included), for the library's own use: they throw where the
// entry points return their allocation error.
Status get_ca_traced(const char* ca_name, umad_ca_t* ca);
Status get_port_traced(const char* ca_name, int portnum, umad_port_t* port);
Result<umad_device_node*> ca_device_list();

// Frees a device list when it goes out of scope.
struct DeviceList {
    umad_device_node* head = nullptr;
    ~DeviceList() { umad_free_ca_device_list(head); }
};

// Picks the port of CA `name` to use. With *port > 0, checks that port.
// 1 for an active port, 0 for a usable one that is not active; a failure is
// get_ca()'s, or ENODEV when the CA has no usable port.
Result<int> pick_port(const char* name, int* port) {
    umad_ca_t ca;
    UTRACE("resolve_ca_port", "checking ca '%s'", name);
    if (Status s = get_ca_traced(name, &ca); !s.ok())
        return Errno{s.error()};
    int ret = -1;
    if (ca.node_type == 2) {
        *port = 0;  // a switch is managed through port 0
        ret = 1;
    } else if (*port > 0) {
        umad_port_t* p = *port <= ca.numports ? ca.ports[*port] : nullptr;
        if (!p)
            ret = -1;
        else if (p->state == kPortActive)
            ret = 1;
        else
            ret = p->phys_state == kPhysDisabled ? -1 : 0;
    } else {
        int active = -1, up = -1;
        for (int i = 0; i <= ca.numports; i++) {
            umad_port_t* p = ca.ports[i];
            UDEBUG("resolve_ca_port", "checking port %d", i);
            // The first pass looks at InfiniBand ports only; the
            // fallback pass below takes any port that is not disabled.
            if (!p || !port_is_ib(p))
                continue;
            if (up < 0 && p->phys_state == kPhysLinkUp)
                up = *port = i;
            if (p->state == kPortActive) {
                active = *port = i;
                UDEBUG("resolve_ca_port", "found active port %d", i);
                break;
            }
        }
        if (active < 0 && up < 0) {
            for (int i = 0; i <= ca.numports; i++) {
                umad_port_t* p = ca.ports[i];
                UDEBUG("resolve_ca_port", "checking port %d", i);
                if (p && p->phys_state != kPhysDisabled) {
                    up = *port = i;
                    break;
                }
            }
        }
        ret = active >= 0 ? 1 : up >= 0 ? 0 : -1;
    }
    release_ca(&ca);
    if (ret < 0)
        return Errno{ENODEV};
    return ret;
}

// The names of the InfiniBand-type devices, in directory order or sorted; a
// failure (opendir's errno) when /sys/class/infiniband cannot be read at all.
Status ib_device_names(std::vector<std::string>& out, bool sorted = true) {
    out.clear();
    rdma::UniqueDir d(opendir(SYS_INFINIBAND));
    if (!d)
        return Errno{errno};
    while (struct dirent* e = readdir(d.get())) {
        if (is_dot(e->d_name) || !is_ib_node(e->d_name))
            continue;
        out.emplace_back(e->d_name);
    }
    if (sorted)
        std::sort(out.begin(), out.end());
    return {};
}

// Resolves the CA to use: `name` if given (checking *best_port when asked to
// pick one), else the first CA with an active port, else the first with a
// usable one. The pointer is `name` or static storage; ENODEV when there is
// no such CA.
Result<const char*> resolve_ca(const char* name, int* best_port) {
    static char chosen[UMAD_CA_NAME_LEN];
    if (name && (!best_port || *best_port))
        return name;
    if (name) {
        if (!pick_port(name, best_port).ok())
            return Errno{ENODEV};
        return name;
    }
    // The reference walks umad_get_ca_device_list() here, in directory
    // order (umad_get_cas_names sorts); with several usable CAs that order
    // decides which is picked. A list that cannot be made reads as empty.
    std::vector<std::string> names;
    {
        Result<umad_device_node*> made = ca_device_list();
        // Not a failure report: the list's making leaves errno 0, or the
        // failure's errno, as it always has, and what our callers leave in
        // errno later depends on it.
        errno = made.error();
        DeviceList list{made.ok() ? *made : nullptr};
        for (umad_device_node* n = list.head; n; n = n->next)
            names.emplace_back(n->ca_name);
    }
    int fallback = -1, fallback_port = 0;
    for (size_t i = 0; i < names.size(); i++) {
        int port = best_port ? *best_port : 0;
        UTRACE("resolve_ca_name", "checking ca '%s'", names[i].c_str());
        Result<int> picked = pick_port(names[i].c_str(), &port);
        if (!picked.ok())
            continue;
        int type = *picked;
        UDEBUG("resolve_ca_name", "found ca %s with port %d type %d", names[i].c_str(), port, type);
        if (type > 0) {
            if (best_port)
                *best_port = port;
            UDEBUG("resolve_ca_name", "found ca %s with active port %d", names[i].c_str(), port);
            snprintf(chosen, sizeof(chosen), "%s", names[i].c_str());
            return chosen;
        }
        if (fallback < 0) {
            fallback = static_cast<int>(i);
            fallback_port = port;
        }
    }
    if (fallback >= 0) {
        // (the reference reports this twice)
        for (int k = 0; k < 2; k++)
            UDEBUG("resolve_ca_name", "phys found on %s port %d", names[fallback].c_str(), fallback_port);
        if (best_port)
            *best_port = fallback_port;
        snprintf(chosen, sizeof(chosen), "%s", names[fallback].c_str());
        return chosen;
    }
    return Errno{ENODEV};
}

// The umadN id of (ca, port); EINVAL (the man pages' "no such port") when
// no umad device serves it.
Result<int> umad_id_of(const char* ca, int port) {
    for (int id = 0; id < UMAD_MAX_PORTS; id++) {
        std::string dir = std::string(SYS_INFINIBAND_MAD) + "/umad" + std::to_string(id);
        char dev[UMAD_CA_NAME_LEN * 2];
        unsigned p;
        if (!umad::sysfs::read_string(dir, SYS_IB_MAD_DEV, dev, sizeof(dev)).ok())
            continue;
        if (strcmp(dev, ca))
            continue;
        if (!umad::sysfs::read_uint(dir, SYS_IB_MAD_PORT, &p).ok())
            continue;
        if (static_cast<int>(p) != port)
            continue;
        UDEBUG("dev_to_umad_id", "mapped %s %d to %d", ca, port, id);
        return id;
    }
    return Errno{EINVAL};
}

// Waits for a MAD: ETIMEDOUT when none comes in time, EIO when poll(2)
// fails (errno is left as poll left it).
Status dev_poll(int fd, int timeout_ms) {
    struct pollfd pfd = {fd, POLLIN, 0};
    int n = poll(&pfd, 1, timeout_ms);
    if (n == 1)
        return {};
    if (n == 0)
        return Errno{ETIMEDOUT};
    return Errno{EIO};
}

// Opens the umad device of (ca_name, portnum); with smi_only, the port must
// carry the subnet-management interface. The fd, or the man page's errors:
// EOPNOTSUPP (no usable umad ABI), ENODEV (no such CA or port, or no SMI),
// EINVAL (no umad device for it), EIO (the device does not open).
Result<int> open_port(const char* fn, const char* ca_name, int portnum, bool smi_only) {
    unsigned abi = abi_version();
    UTRACE(fn, "ca %s port %d", ca_name, portnum);
    if (!abi)
        return Errno{EOPNOTSUPP};
    Result<const char*> resolved = resolve_ca(ca_name, &portnum);
    if (!resolved.ok())
        return Errno{resolved.error()};
    const char* name = *resolved;
    if (smi_only) {
        umad_port_t port;
        if (!get_port_traced(name, portnum, &port).ok())
            return Errno{ENODEV};
        bool smi = !(be32toh(port.capmask) & kCapIsSmDisabled);
        release_port(&port);
        if (!smi)
            return Errno{ENODEV};
    }
    UDEBUG(fn, "opening %s port %d", name, portnum);
    Result<int> id = umad_id_of(name, portnum);
    if (!id.ok())
        return id;
    char path[256];
    snprintf(path, sizeof(path), "%s/umad%d", kDevDir, *id);
    int fd = open(path, O_RDWR | O_NONBLOCK);
    if (fd < 0) {
        UDEBUG(fn, "open %s failed: %s", path, strerror(errno));
        return Errno{EIO};
    }
    g_pkey_api = abi > 5 || !ioctl(fd, IB_USER_MAD_ENABLE_PKEY, nullptr);
    UDEBUG(fn, "opened %s fd %d portid %d", path, fd, *id);
    return fd;
}

Status get_ca_traced(const char* ca_name, umad_ca_t* ca) {
    UTRACE("umad_get_ca", "ca_name %s", ca_name);
    Result<const char*> name = resolve_ca(ca_name, nullptr);
    if (!name.ok())
        return Errno{name.error()};
    if (Status s = get_ca(*name, ca); !s.ok())
        return s;
    UDEBUG("umad_get_ca", "opened %s", ca->ca_name);
    return {};
}

Status get_port_traced(const char* ca_name, int portnum, umad_port_t* port) {
    UTRACE("umad_get_port", "ca_name %s portnum %d", ca_name, portnum);
    Result<const char*> name = resolve_ca(ca_name, &portnum);
    if (!name.ok())
        return Errno{name.error()};
    std::string ports_dir = ca_dir(*name) + "/" + SYS_CA_PORTS_DIR;
    return get_port(*name, ports_dir, portnum, port);
}

// In directory order; NULL when there is no device (or no
// /sys/class/infiniband). A failure is opendir's errno, or ENOMEM when a
// node could not be made. errno is not set here: the callers set what the
// reference's list building always left (0 after a success).
Result<umad_device_node*> ca_device_list() {
    rdma::UniqueDir d(opendir(SYS_INFINIBAND));
    if (!d) {
        if (errno == ENOENT)
            return static_cast<umad_device_node*>(nullptr);
        return Errno{errno};
    }
    DeviceList list;
    umad_device_node* tail = nullptr;
    size_t count = 0;
    while (struct dirent* e = readdir(d.get())) {
        if (is_dot(e->d_name) || !is_ib_node(e->d_name))
            continue;
        size_t len = strlen(e->d_name) + 1;
        // One allocation per node, its name stored right behind it.
        auto* node = static_cast<umad_device_node*>(calloc(1, sizeof(umad_device_node) + len));
        if (!node)
            return Errno{ENOMEM};  // `list` frees the nodes made so far
        char* name = reinterpret_cast<char*>(node + 1);
        memcpy(name, e->d_name, len);
        node->ca_name = name;
        if (tail)
            tail->next = node;
        else
            list.head = node;
        tail = node;
        count++;
    }
    UDEBUG("umad_get_ca_device_list", "return %zu cas", count);
    umad_device_node* head = list.head;
    list.head = nullptr;
    return head;
}

// The C ABI's -errno (or the value) of an internal result. errno is not
// touched: see the top of the file.
int neg_errno(Status s) noexcept { return -s.error(); }
int neg_errno(const Result<int>& r) noexcept { return r.ok() ? r.value() : -r.error(); }

// The barrier of the umad_* functions whose man page gives -errno: the
// body returns Status (0 or -errno out) or Result<int> (a value, an fd, a
// count, or -errno out); an exception becomes -errno with errno set, as
// entry_neg_errno does for every body.
template <class F>
int neg_errno_entry(F&& body) {
    return rdma::entry_neg_errno([&]() -> int { return neg_errno(body()); });
}

}  // namespace

// Entry points without the barrier: they allocate nothing and call only libc
// (traces are vsnprintf/fprintf), so nothing in them can throw.

UMAD_EXPORT int umad_init(void) {
    UTRACE("umad_init", "umad_init");
    return 0;
}

UMAD_EXPORT int umad_done(void) {
    UTRACE("umad_done", "umad_done");
    return 0;
}

// ---- CA and port view: through the barrier (they allocate) ----------------

UMAD_EXPORT int umad_get_cas_names(char cas[][UMAD_CA_NAME_LEN], int max) {
    return rdma::entry_neg_errno([&] {
        UTRACE("umad_get_cas_names", "max %d", max);
        std::vector<std::string> names;
        const bool fallback_name = !ib_device_names(names).ok();
        if (fallback_name)
            names.emplace_back(kDefaultCa);
        int n = 0;
        for (const auto& name : names) {
            if (n >= max)
                break;
            strncpy(cas[n], name.c_str(), UMAD_CA_NAME_LEN);
            n++;
        }
        if (fallback_name)
            UDEBUG("umad_get_cas_names", "return 1 ca");
        else
            UDEBUG("umad_get_cas_names", "return %d cas", n);
        return n;
    });
}

// A CA that cannot be read gives -1, not an errno, as the reference's does:
// the body translates that failure itself.
UMAD_EXPORT int umad_get_ca_portguids(const char* ca_name, __be64* portguids, int max) {
    return rdma::entry_neg_errno([&] {
        umad_ca_t ca;
        UTRACE("umad_get_ca_portguids", "ca name %s max port guids %d", ca_name, max);
        Result<const char*> resolved = resolve_ca(ca_name, nullptr);
        if (!resolved.ok())
            return -resolved.error();
        const char* name = *resolved;
        if (!get_ca_traced(name, &ca).ok())
            return -1;
        int ports = 0;
        if (portguids) {
            if (ca.numports + 1 > max) {
                release_ca(&ca);
                return -ENOMEM;
            }
            for (int i = 0; i <= ca.numports; i++)
                portguids[ports++] = ca.ports[i] ? ca.ports[i]->port_guid : htobe64(0);
        }
        release_ca(&ca);
        UDEBUG("umad_get_ca_portguids", "%s: %d ports", name, ports);
        return ports;
    });
}

UMAD_EXPORT int umad_get_issm_path(const char* ca_name, int portnum, char path[], int max) {
    return neg_errno_entry([&]() -> Status {
        UTRACE("umad_get_issm_path", "ca %s port %d", ca_name, portnum);
        Result<const char*> name = resolve_ca(ca_name, &portnum);
        if (!name.ok())
            return Errno{name.error()};
        Result<int> id = umad_id_of(*name, portnum);
        if (!id.ok())
            return Errno{id.error()};
        snprintf(path, max, "%s/issm%u", kDevDir, *id);
        return {};
    });
}

UMAD_EXPORT int umad_open_port(const char* ca_name, int portnum) {
    return neg_errno_entry([&] { return open_port("umad_open_port", ca_name, portnum, false); });
}

UMAD_EXPORT int umad_open_smi_port(const char* ca_name, int portnum) {
    return neg_errno_entry([&] { return open_port("umad_open_smi_port", ca_name, portnum, true); });
}

UMAD_EXPORT int umad_get_ca(const char* ca_name, umad_ca_t* ca) {
    return neg_errno_entry([&] { return get_ca_traced(ca_name, ca); });
}

// Frees only: cannot throw, no barrier.
UMAD_EXPORT int umad_release_ca(umad_ca_t* ca) {
    UTRACE("umad_release_ca", "ca_name %s", ca->ca_name);
    UDEBUG("umad_release_ca", "releasing %s", ca->ca_name);
    release_ca(ca);
    return 0;
}

UMAD_EXPORT int umad_get_port(const char* ca_name, int portnum, umad_port_t* port) {
    return neg_errno_entry([&] { return get_port_traced(ca_name, portnum, port); });
}

// Frees only: cannot throw, no barrier.
UMAD_EXPORT int umad_release_port(umad_port_t* port) {
    UTRACE("umad_release_port", "port %s:%d", port->ca_name, port->portnum);
    UDEBUG("umad_release_port", "releasing %s:%d", port->ca_name, port->portnum);
    release_port(port);
    return 0;
}

// close(2) and a trace: cannot throw, no barrier.
UMAD_EXPORT int umad_close_port(int fd) {
    close(fd);
    UDEBUG("umad_close_port", "closed fd %d", fd);
    return 0;
}

// ---- MAD buffers, I/O, agents and dumps: no barrier ------------------------
// None of these allocates or calls anything but libc, so none can throw.
// (Not noexcept either: a thread cancelled while blocked in umad_recv() or
// umad_poll() must be able to unwind through them.)

// Without the P_Key-index ABI (before a port is opened, or on a kernel
// refusing IB_USER_MAD_ENABLE_PKEY) the kernel's header ends 8 bytes
// earlier, where pkey_index and the reserved bytes would start; the MAD
// follows it there.
constexpr size_t kOldHeaderSize = offsetof(ib_user_mad, addr) + offsetof(ib_mad_addr_t, pkey_index);
static_assert(kOldHeaderSize + 8 == sizeof(ib_user_mad), "umad header layout");

UMAD_EXPORT void* umad_get_mad(void* umad) {
    auto* mad = static_cast<ib_user_mad*>(umad);
    return g_pkey_api ? static_cast<void*>(mad->data) : static_cast<void*>(&mad->addr.pkey_index);
}

UMAD_EXPORT size_t umad_size(void) { return g_pkey_api ? sizeof(struct ib_user_mad) : kOldHeaderSize; }

UMAD_EXPORT int umad_status(void* umad) { return static_cast<int>(static_cast<ib_user_mad*>(umad)->status); }

UMAD_EXPORT ib_mad_addr_t* umad_get_mad_addr(void* umad) { return &static_cast<ib_user_mad*>(umad)->addr; }

UMAD_EXPORT int umad_set_grh(void* umad, void* mad_addr) {
    auto* mad = static_cast<ib_user_mad*>(umad);
    auto* addr = static_cast<ib_mad_addr_t*>(mad_addr);
    if (!addr) {
        mad->addr.grh_present = 0;
        return 0;
    }
    mad->addr.grh_present = 1;
    memcpy(mad->addr.gid, addr->gid, sizeof(mad->addr.gid));
    // The caller's flow label is in host order here (the _net variant
    // takes it in network order).
    mad->addr.flow_label = htobe32(static_cast<uint32_t>(addr->flow_label));
    mad->addr.hop_limit = addr->hop_limit;
    mad->addr.traffic_class = addr->traffic_class;
    return 0;
}

// Declared by umad.h; like the reference, not exported by the library.
extern "C" int umad_set_grh_net(void* umad, void* mad_addr) {
    auto* mad = static_cast<ib_user_mad*>(umad);
    auto* addr = static_cast<ib_mad_addr_t*>(mad_addr);
    if (!addr) {
        mad->addr.grh_present = 0;
        return 0;
    }
    mad->addr.grh_present = 1;
    memcpy(mad->addr.gid, addr->gid, sizeof(mad->addr.gid));
    mad->addr.flow_label = addr->flow_label;
    mad->addr.hop_limit = addr->hop_limit;
    mad->addr.traffic_class = addr->traffic_class;
    return 0;
}

UMAD_EXPORT int umad_set_pkey(void* umad, int pkey_index) {
    if (g_pkey_api)
        static_cast<ib_user_mad*>(umad)->addr.pkey_index = static_cast<uint16_t>(pkey_index);
    return 0;
}

UMAD_EXPORT int umad_get_pkey(void* umad) { return g_pkey_api ? static_cast<ib_user_mad*>(umad)->addr.pkey_index : 0; }

UMAD_EXPORT int umad_set_addr(void* umad, int dlid, int dqp, int sl, int qkey) {
    auto* mad = static_cast<ib_user_mad*>(umad);
    UTRACE("umad_set_addr", "umad %p dlid %u dqp %d sl %d, qkey %x", umad, dlid, dqp, sl, qkey);
    mad->addr.qpn = htobe32(static_cast<uint32_t>(dqp));
    mad->addr.lid = htobe16(static_cast<uint16_t>(dlid));
    mad->addr.qkey = htobe32(static_cast<uint32_t>(qkey));
    mad->addr.sl = static_cast<uint8_t>(sl);
    return 0;
}

UMAD_EXPORT int umad_set_addr_net(void* umad, __be16 dlid, __be32 dqp, int sl, __be32 qkey) {
    auto* mad = static_cast<ib_user_mad*>(umad);
    UTRACE("umad_set_addr_net", "umad %p dlid %u dqp %d sl %d qkey %x", umad, be16toh(dlid), be32toh(dqp), sl,
           be32toh(qkey));
    mad->addr.qpn = dqp;
    mad->addr.lid = dlid;
    mad->addr.qkey = qkey;
    mad->addr.sl = static_cast<uint8_t>(sl);
    return 0;
}

UMAD_EXPORT int umad_send(int fd, int agentid, void* umad, int length, int timeout_ms, int retries) {
    auto* mad = static_cast<ib_user_mad*>(umad);
    UTRACE("umad_send", "fd %d agentid %d umad %p timeout %u", fd, agentid, umad, timeout_ms);
    errno = 0;
    mad->timeout_ms = static_cast<uint32_t>(timeout_ms);
    mad->retries = static_cast<uint32_t>(retries);
    mad->agent_id = static_cast<uint32_t>(agentid);
    if (g_debug > 1)
        umad_dump(mad);
    ssize_t want = static_cast<ssize_t>(length + umad_size());
    ssize_t n = write(fd, mad, want);
    if (n == want)
        return 0;
    UDEBUG("umad_send", "write returned %d != sizeof umad %zu + length %d (%m)", static_cast<int>(n), umad_size(),
           length);
    if (!errno)
        errno = EIO;
    return -EIO;
}

UMAD_EXPORT int umad_recv(int fd, void* umad, int* length, int timeout_ms) {
    auto* mad = static_cast<ib_user_mad*>(umad);
    errno = 0;
    UTRACE("umad_recv", "fd %d umad %p timeout %u", fd, umad, timeout_ms);
    if (!umad || !length) {
        errno = EINVAL;
        return -EINVAL;
    }
    if (timeout_ms) {
        if (Status s = dev_poll(fd, timeout_ms); !s.ok()) {
            if (!errno)
                errno = s.error();
            return neg_errno(s);
        }
    }
    size_t room = umad_size() + static_cast<size_t>(*length);
    ssize_t n = read(fd, umad, room);
    if (n >= 0 && static_cast<size_t>(n) <= room) {
        UDEBUG("umad_recv", "mad received by agent %d length %d", mad->agent_id, static_cast<int>(n));
        *length = static_cast<size_t>(n) > umad_size() ? static_cast<int>(n - umad_size()) : 0;
        return static_cast<int>(mad->agent_id);
    }
    // umad2sim's read() returns -EWOULDBLOCK itself when nothing is queued;
    // the reference accepts that form.
    if (n == -EWOULDBLOCK) {
        if (!errno)
            errno = EWOULDBLOCK;
        return -EWOULDBLOCK;
    }
    // ENOSPC: the MAD (an RMPP reassembly) is longer than the buffer; the
    // kernel reports its length in the header so the caller can retry. On
    // other errors (EAGAIN from a real non-blocking fd) *length is set from
    // the same header all the same, as the reference does.
    UDEBUG("umad_recv", "read returned %zu > sizeof umad %zu + length %d (%m)",
           static_cast<size_t>(mad->length) - umad_size(), umad_size(), *length);
    *length = static_cast<int>(mad->length - umad_size());
    if (!errno)
        errno = EIO;
    return -errno;
}

// -errno with errno as poll(2) left it, like the functions behind
// neg_errno_entry().
UMAD_EXPORT int umad_poll(int fd, int timeout_ms) {
    UTRACE("umad_poll", "fd %d timeout %u", fd, timeout_ms);
    return neg_errno(dev_poll(fd, timeout_ms));
}

UMAD_EXPORT int umad_get_fd(int fd) {
    UTRACE("umad_get_fd", "fd %d", fd);
    return fd;
}

UMAD_EXPORT int umad_register_oui(int fd, int mgmt_class, uint8_t rmpp_version, uint8_t oui[3],
                                  long method_mask[16 / sizeof(long)]) {
    UTRACE("umad_register_oui", "fd %d mgmt_class %u rmpp_version %d oui 0x%x%x%x method_mask %p", fd, mgmt_class,
           rmpp_version, oui[0], oui[1], oui[2], (void*)method_mask);
    if (mgmt_class < 0x30 || mgmt_class > 0x4f) {
        UDEBUG("umad_register_oui", "mgmt class %d not in vendor range 2", mgmt_class);
        return -EINVAL;
    }
    ib_user_mad_reg_req req;
    memset(&req, 0, sizeof(req));
    req.qpn = 1;
    req.mgmt_class = static_cast<uint8_t>(mgmt_class);
    req.mgmt_class_version = 1;
    memcpy(req.oui, oui, sizeof(req.oui));
    req.rmpp_version = rmpp_version;
    if (method_mask)
        memcpy(req.method_mask, method_mask, sizeof(req.method_mask));
    if (!ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req)) {
        UDEBUG("umad_register_oui", "fd %d registered to use agent %d qp %d class 0x%x oui %p", fd, req.id, req.qpn,
               req.mgmt_class, (void*)oui);
        return static_cast<int>(req.id);
    }
    UDEBUG("umad_register_oui", "fd %d registering qp %d class 0x%x version %d oui %p failed: %m", fd, req.qpn,
           req.mgmt_class, req.mgmt_class_version, (void*)oui);
    return -EPERM;
}

UMAD_EXPORT int umad_register(int fd, int mgmt_class, int mgmt_version, uint8_t rmpp_version,
                              long method_mask[16 / sizeof(long)]) {
    UTRACE("umad_register", "fd %d mgmt_class %u mgmt_version %u rmpp_version %d method_mask %p", fd, mgmt_class,
           mgmt_version, rmpp_version, (void*)method_mask);
    ib_user_mad_reg_req req;
    memset(&req, 0, sizeof(req));
    // SMPs (LID-routed and directed-route) go to QP0, everything else QP1.
    req.qpn = (mgmt_class == 0x1 || mgmt_class == 0x81) ? 0 : 1;
    req.mgmt_class = static_cast<uint8_t>(mgmt_class);
    req.mgmt_class_version = static_cast<uint8_t>(mgmt_version);
    req.rmpp_version = rmpp_version;
    if (method_mask)
        memcpy(req.method_mask, method_mask, sizeof(req.method_mask));
    if (!ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req)) {
        UDEBUG("umad_register", "fd %d registered to use agent %d qp %d", fd, req.id, req.qpn);
        return static_cast<int>(req.id);
    }
    UDEBUG("umad_register", "fd %d registering qp %d class 0x%x version %d failed: %m", fd, req.qpn, req.mgmt_class,
           req.mgmt_class_version);
    return -EPERM;
}

UMAD_EXPORT int umad_register2(int fd, struct umad_reg_attr* attr, uint32_t* agent_id) {
    if (!attr || !agent_id)
        return EINVAL;
    UTRACE("umad_register2",
           "fd %d mgmt_class %u mgmt_class_version %u flags 0x%08x method_mask 0x%016lx %016lx"
           "oui 0x%06x rmpp_version %u ",
           fd, attr->mgmt_class, attr->mgmt_class_version, attr->flags, (unsigned long)attr->method_mask[0],
           (unsigned long)attr->method_mask[1], attr->oui, attr->rmpp_version);
    ib_user_mad_reg_req2 req;
    memset(&req, 0, sizeof(req));
    if (attr->mgmt_class >= 0x30 && attr->mgmt_class <= 0x4f) {
        if (attr->oui & 0xff000000u) {
            UDEBUG("umad_register2", "mgmt class %d is in vendor range 2 but oui (0x%08x) is invalid", attr->mgmt_class,
                   attr->oui);
            return EINVAL;
        }
        req.oui = attr->oui;
    }
    req.qpn = (attr->mgmt_class == 0x1 || attr->mgmt_class == 0x81) ? 0 : 1;
    req.mgmt_class = attr->mgmt_class;
    req.mgmt_class_version = attr->mgmt_class_version;
    req.method_mask[0] = attr->method_mask[0];
    req.method_mask[1] = attr->method_mask[1];
    req.flags = attr->flags;
    req.rmpp_version = attr->rmpp_version;
    if (!ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &req)) {
        UDEBUG("umad_register2", "fd %d registered to use agent %d qp %d class 0x%x oui 0x%06x", fd, req.id, req.qpn,
               req.mgmt_class, attr->oui);
        *agent_id = req.id;
        return 0;
    }
    if (errno == ENOTTY || errno == EINVAL) {
        // A kernel without REGISTER_AGENT2: the original request can
        // express everything but flags.
        UTRACE("umad_register2", "no kernel support for registration flags");
        req.flags = 0;
        if (attr->flags == 0) {
            ib_user_mad_reg_req old;
            memset(&old, 0, sizeof(old));
            UTRACE("umad_register2", "attempting original register ioctl");
            old.qpn = static_cast<uint8_t>(req.qpn);
            old.mgmt_class = req.mgmt_class;
            old.mgmt_class_version = req.mgmt_class_version;
            memcpy(old.method_mask, req.method_mask, sizeof(old.method_mask));
            old.rmpp_version = req.rmpp_version;
            old.oui[0] = static_cast<uint8_t>(req.oui >> 16);
            old.oui[1] = static_cast<uint8_t>(req.oui >> 8);
            old.oui[2] = static_cast<uint8_t>(req.oui);
            if (!ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &old)) {
                UDEBUG("umad_register2", "fd %d registered to use agent %d qp %d class 0x%x oui 0x%06x", fd, old.id,
                       old.qpn, old.mgmt_class, attr->oui);
                *agent_id = old.id;
                return 0;
            }
        }
    }
    int rc = errno;
    attr->flags = req.flags;
    UDEBUG("umad_register2", "fd %d registering qp %d class 0x%x version %d oui 0x%06x failed flags returned 0x%x : %m",
           fd, req.qpn, req.mgmt_class, req.mgmt_class_version, attr->oui, req.flags);
    return rc;
}

UMAD_EXPORT int umad_unregister(int fd, int agentid) {
    UTRACE("umad_unregister", "fd %d unregistering agent %d", fd, agentid);
    uint32_t id = static_cast<uint32_t>(agentid);
    return ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id);
}

UMAD_EXPORT int umad_debug(int level) {
    if (level >= 0)
        g_debug = level;
    return g_debug;
}

UMAD_EXPORT void umad_addr_dump(ib_mad_addr_t* addr) {
    char gid[2 * sizeof(addr->gid) + 1];
    for (size_t i = 0; i < sizeof(addr->gid); i++)
        snprintf(gid + 2 * i, 3, "%02x", addr->gid[i]);
    ibwarn("umad_addr_dump", "qpn %d qkey 0x%x lid %u sl %d", be32toh(addr->qpn), be32toh(addr->qkey),
           be16toh(addr->lid), addr->sl);
    fprintf(stderr, "grh_present %d gid_index %d hop_limit %d traffic_class %d flow_label 0x%x pkey_index 0x%x\n",
            addr->grh_present, addr->gid_index, addr->hop_limit, addr->traffic_class,
            addr->flow_label /* as stored, network order */, addr->pkey_index);
    fprintf(stderr, "Gid 0x%s\n", gid);
}

UMAD_EXPORT void umad_dump(void* umad) {
    auto* mad = static_cast<ib_user_mad*>(umad);
    ibwarn("umad_dump", "agent id %d status %x timeout %d", mad->agent_id, mad->status, mad->timeout_ms);
    umad_addr_dump(&mad->addr);
}

// ---- device lists: the list is built through the barrier ------------------

// NULL with errno 0 when there is no device: a success leaves errno 0, as
// it always has; a failure is NULL with its errno.
UMAD_EXPORT struct umad_device_node* umad_get_ca_device_list(void) {
    return rdma::entry_null([] {
        Result<umad_device_node*> list = ca_device_list();
        if (list.ok())
            errno = 0;
        return list;
    });
}

// Frees only: cannot throw, no barrier.
UMAD_EXPORT void umad_free_ca_device_list(struct umad_device_node* head) {
    while (head) {
        umad_device_node* next = head->next;
        free(head);
        head = next;
    }
}

// Relinks the list only once the sorted order is known: a failure (no room
// for the index, or for stable_sort's buffer, which falls back to sorting in
// place) leaves it as it was.
UMAD_EXPORT int umad_sort_ca_device_list(struct umad_device_node** head, size_t size) {
    return rdma::entry_neg_errno([&] {
        if (!head || !*head)
            return 0;
        if (!size)
            for (auto* n = *head; n; n = n->next)
                size++;
        std::vector<umad_device_node*> nodes;
        nodes.reserve(size);
        for (auto* n = *head; n && nodes.size() < size; n = n->next)
            nodes.push_back(n);
        umad_device_node* rest = nodes.back()->next;
        std::stable_sort(nodes.begin(), nodes.end(), [](const umad_device_node* a, const umad_device_node* b) {
            return strcmp(a->ca_name, b->ca_name) < 0;
        });
        for (size_t i = 0; i + 1 < nodes.size(); i++)
            nodes[i]->next = nodes[i + 1];
        nodes.back()->next = rest;
        *head = nodes.front();
        return 0;
    });
}

// ---- SMI/GSI pairs ---------------------------------------------------------

namespace {

struct PortView {
    int num;
    bool active;
    bool smi;  // not IsSMDisabled
    uint64_t guid;
};

struct DevView {
    std::string name;
    std::vector<PortView> ports;
    bool any_smi() const {
        return std::any_of(ports.begin(), ports.end(), [](const PortView& p) { return p.smi; });
    }
    bool all_gsi_only() const {
        return !ports.empty() && std::none_of(ports.begin(), ports.end(), [](const PortView& p) { return p.smi; });
    }
    uint32_t preferred() const {
        for (const auto& p : ports)
            if (p.active)
                return static_cast<uint32_t>(p.num);
        return ports.empty() ? 0 : static_cast<uint32_t>(ports.front().num);
    }
    bool shares_guid(const DevView& o) const {
        for (const auto& a : ports)
            for (const auto& b : o.ports)
                if (a.guid && a.guid == b.guid)
                    return true;
        return false;
    }
};

// The InfiniBand ports of every InfiniBand-type device (Ethernet ports have
// no SMI/GSI to pair).
std::vector<DevView> device_views() {
    std::vector<DevView> out;
    std::vector<std::string> names;
    // No /sys/class/infiniband: no devices, so no pairs.
    (void)ib_device_names(names);
    for (const auto& name : names) {
        struct OwnedCa {
            umad_ca_t ca;
            ~OwnedCa() { release_ca(&ca); }
        } owned{};
        umad_ca_t& ca = owned.ca;
        if (!get_ca(name.c_str(), &ca).ok())
            continue;
        DevView dev{name, {}};
        for (int i = 0; i <= ca.numports; i++) {
            umad_port_t* p = ca.ports[i];
            if (!p || !port_is_ib(p))
                continue;
            dev.ports.push_back({i, p->state == kPortActive, !(be32toh(p->capmask) & kCapIsSmDisabled), p->port_guid});
        }
        if (!dev.ports.empty())
            out.push_back(std::move(dev));
    }
    return out;
}

void fill_pair(umad_ca_pair* out, const DevView& smi, const DevView& gsi) {
    memset(out, 0, sizeof(*out));
    snprintf(out->smi_name, sizeof(out->smi_name), "%s", smi.name.c_str());
    out->smi_preferred_port = smi.preferred();
    snprintf(out->gsi_name, sizeof(out->gsi_name), "%s", gsi.name.c_str());
    out->gsi_preferred_port = gsi.preferred();
}

// Pairs: a device with SMI ports pairs with the GSI-only device that shares
// its port GUIDs (planarized), or with itself (legacy). A GSI-only device
// without an SMI partner forms a pair with an empty SMI name.
std::vector<umad_ca_pair> build_pairs() {
    std::vector<DevView> devs = device_views();
    std::vector<umad_ca_pair> pairs;
    std::vector<bool> used(devs.size(), false);
    for (size_t i = 0; i < devs.size(); i++) {
        if (used[i] || !devs[i].any_smi())
            continue;
        size_t partner = i;
        for (size_t j = 0; j < devs.size(); j++)
            if (j != i && !used[j] && devs[j].all_gsi_only() && devs[i].shares_guid(devs[j])) {
                partner = j;
                break;
            }
        used[i] = used[partner] = true;
        umad_ca_pair p;
        fill_pair(&p, devs[i], devs[partner]);
        pairs.push_back(p);
    }
    for (size_t i = 0; i < devs.size(); i++) {
        if (used[i])
            continue;
        umad_ca_pair p;
        fill_pair(&p, devs[i], devs[i]);
        p.smi_name[0] = '\0';
        p.smi_preferred_port = 0;
        pairs.push_back(p);
    }
    return pairs;
}

}  // namespace

// Out of memory: -1 (with errno ENOMEM), as the man page says.
UMAD_EXPORT int umad_get_smi_gsi_pairs(struct umad_ca_pair cas[], size_t max) {
    return rdma::entry_value(-1, [&] {
        if (!cas && max)
            return -1;
        std::vector<umad_ca_pair> pairs = build_pairs();
        size_t n = std::min(max, pairs.size());
        for (size_t i = 0; i < n; i++)
            cas[i] = pairs[i];
        return static_cast<int>(n);
    });
}

UMAD_EXPORT int umad_get_smi_gsi_pair_by_ca_name(const char* devname, uint8_t portnum, struct umad_ca_pair* ca,
                                                 unsigned enforce_smi) {
    return neg_errno_entry([&]() -> Status {
        if (!devname || !ca)
            return Errno{EINVAL};
        for (const auto& p : build_pairs()) {
            if (strcmp(p.smi_name, devname) && strcmp(p.gsi_name, devname))
                continue;
            if (enforce_smi && !p.smi_name[0])
                continue;
            // A named port must exist on the device it was named for.
            if (portnum) {
                umad_port_t port;
                if (!get_port_traced(devname, portnum, &port).ok())
                    return Errno{ENODEV};
                release_port(&port);
            }
            *ca = p;
            if (portnum) {
                if (!strcmp(p.smi_name, devname))
                    ca->smi_preferred_port = portnum;
                if (!strcmp(p.gsi_name, devname))
                    ca->gsi_preferred_port = portnum;
            }
            return {};
        }
        return Errno{ENODEV};
    });
}
