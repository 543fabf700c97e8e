// Device list, device and context objects, and the entry points that open,
// close and name devices.
#include "libibverbs/ibverbs.h"
#include "util/c_entry.h"
#include "util/file_io.h"
#include "util/unique_fd.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <endian.h>
#include <memory>
#include <mutex>

namespace rdma::verbs {

// ------------------------------------------------------------------ Device

Device::Device(const Provider& provider, const SysfsDevice& sysfs) : provider_(provider), sysfs_(sysfs) {
    wrap_.self = this;
    ibv_device& d = wrap_.dev;
    int nt = IBV_NODE_UNKNOWN;
    if (auto v = read_sysfs_attr(sysfs.ibdev_path + "/node_type")) {
        nt = static_cast<int>(std::strtol(v.value().c_str(), nullptr, 10));
        if (nt < IBV_NODE_CA || nt > IBV_NODE_USNIC_UDP)
            nt = IBV_NODE_UNKNOWN;
    } else {
        fprintf(stderr, "%sWarning: no node_type attr under %s.\n", kLogPrefix, sysfs.ibdev_path.c_str());
    }
    d.node_type = static_cast<ibv_node_type>(nt);
    switch (d.node_type) {
    case IBV_NODE_CA:
    case IBV_NODE_SWITCH:
    case IBV_NODE_ROUTER: d.transport_type = IBV_TRANSPORT_IB; break;
    case IBV_NODE_RNIC: d.transport_type = IBV_TRANSPORT_IWARP; break;
    case IBV_NODE_USNIC: d.transport_type = IBV_TRANSPORT_USNIC; break;
    case IBV_NODE_USNIC_UDP: d.transport_type = IBV_TRANSPORT_USNIC_UDP; break;
    default: d.transport_type = IBV_TRANSPORT_UNKNOWN; break;
    }
    auto put = [](char* dst, size_t n, const std::string& s) { snprintf(dst, n, "%s", s.c_str()); };
    put(d.dev_name, sizeof(d.dev_name), sysfs.sysfs_name);
    put(d.dev_path, sizeof(d.dev_path), sysfs.sysfs_path);
    put(d.name, sizeof(d.name), sysfs.ibdev_name);
    put(d.ibdev_path, sizeof(d.ibdev_path), sysfs.ibdev_path);
}

Device::~Device() = default;

// ------------------------------------------------------------- device list

namespace {

std::mutex g_list_mutex;
std::vector<Device*> g_devices;  // each entry holds one reference
bool g_initialized = false;

void drop(Device* d) {
    if (d->put())
        delete d;
}

bool same_device(const SysfsDevice& a, const SysfsDevice& b) {
    return a.sysfs_name == b.sysfs_name && a.ibdev_name == b.ibdev_name &&
        a.time_created.tv_sec == b.time_created.tv_sec && a.time_created.tv_nsec == b.time_created.tv_nsec;
}

const MatchEntry* match(const Provider& p, const SysfsDevice& d) {
    const std::string alias = "rdma_device:N" + d.ibdev_name;
    for (const MatchEntry& m : p.match_table)
        if (m.kind == MatchKind::DriverId && d.driver_id && m.driver_id == d.driver_id)
            return &m;
    for (const MatchEntry& m : p.match_table)
        if (m.kind == MatchKind::Modalias && fnmatch(m.modalias, alias.c_str(), 0) == 0)
            return &m;
    if (d.modalias.empty())
        return nullptr;
    for (const MatchEntry& m : p.match_table) {
        if (m.kind == MatchKind::Modalias && fnmatch(m.modalias, d.modalias.c_str(), 0) == 0)
            return &m;
        if (m.kind == MatchKind::Pci) {
            char pat[64];
            snprintf(pat, sizeof(pat), "pci:v%08Xd%08Xsv*", m.vendor, m.device);
            if (fnmatch(pat, d.modalias.c_str(), 0) == 0)
                return &m;
        }
    }
    return nullptr;
}

Device* try_providers(const SysfsDevice& d) {
    for (const Provider* p : providers()) {
        const MatchEntry* m = match(*p, d);
        if (!m)
            continue;
        if (d.abi_ver < p->min_abi || d.abi_ver > p->max_abi) {
            fprintf(stderr,
                    "%sWarning: Driver %s does not support the kernel ABI of %d (supports %d to %d) for device %s\n",
                    kLogPrefix, p->name, d.abi_ver, p->min_abi, p->max_abi, d.ibdev_path.c_str());
            continue;
        }
        Device* dev = nullptr;
        try {
            dev = p->alloc_device(d, m);
        } catch (...) {
            dev = nullptr;
        }
        if (!dev)
            fprintf(stderr, "%sFatal: couldn't allocate device for %s\n", kLogPrefix, d.ibdev_path.c_str());
        return dev;
    }
    if (getenv("IBV_SHOW_WARNINGS"))
        fprintf(stderr, "%sWarning: no userspace device-specific driver found for %s\n", kLogPrefix,
                d.sysfs_path.c_str());
    return nullptr;
}

// Bring g_devices in line with the kernel. Caller holds g_list_mutex.
// The new list is built aside and replaces g_devices only once nothing
// can fail any more: an allocation failing half way (std::bad_alloc)
// leaves g_devices as it was and drops the devices made so far.
std::atomic<bool> g_allow_disassoc_destroy{false};

int refresh_locked() {
    if (!g_initialized) {
        if (getenv("RDMAV_FORK_SAFE") || getenv("IBV_FORK_SAFE"))
            ibv_fork_init();
        g_allow_disassoc_destroy.store(getenv("RDMAV_ALLOW_DISASSOC_DESTROY") != nullptr, std::memory_order_relaxed);
        load_providers();
        g_initialized = true;
    }
    std::vector<SysfsDevice> found;
    if (int e = discover_devices(found))
        return e;
    std::vector<Device*> next;
    next.reserve(found.size());  // push_back below cannot throw
    std::vector<bool> kept(g_devices.size(), false);
    try {
        for (const SysfsDevice& s : found) {
            Device* dev = nullptr;
            for (size_t i = 0; i < g_devices.size() && !dev; ++i)
                if (!kept[i] && same_device(g_devices[i]->sysfs(), s)) {
                    kept[i] = true;
                    dev = g_devices[i];
                }
            if (!dev)
                dev = try_providers(s);
            if (dev)
                next.push_back(dev);
        }
    } catch (...) {
        for (Device* d : next)
            if (std::find(g_devices.begin(), g_devices.end(), d) == g_devices.end())
                drop(d);
        throw;
    }
    for (size_t i = 0; i < g_devices.size(); ++i)
        if (!kept[i])
            drop(g_devices[i]);
    g_devices.swap(next);
    return 0;
}

ibv_device** get_device_list(int* num_devices) {
    const int saved_errno = errno;  // a success leaves errno as it was
    if (num_devices)
        *num_devices = 0;
    std::lock_guard lock(g_list_mutex);
    if (int e = refresh_locked()) {
        errno = e;
        return nullptr;
    }
    auto** list = static_cast<ibv_device**>(calloc(g_devices.size() + 1, sizeof(ibv_device*)));
    if (!list) {
        errno = ENOMEM;
        return nullptr;
    }
    size_t n = 0;
    for (Device* d : g_devices) {
        d->get();
        list[n++] = d->ibv();
    }
    if (num_devices)
        *num_devices = static_cast<int>(n);
    errno = saved_errno;
    return list;
}

// Gives back a list's references and the list.
void free_device_list(ibv_device** list) {
    std::lock_guard lock(g_list_mutex);
    for (ibv_device** p = list; *p; ++p)
        drop(Device::from(*p));
    free(list);
}

// The uverbs char device's number: from netlink when discovery used it,
// else the "MAJOR:MINOR" of the uverbs sysfs directory's dev file; 0 when
// neither is known (such a device matches no fd).
dev_t uverbs_cdev(const SysfsDevice& s) {
    if (s.cdev)
        return s.cdev;
    unsigned int major = 0, minor = 0;
    if (auto v = read_sysfs_attr(s.sysfs_path + "/dev"))
        if (std::sscanf(v.value().c_str(), "%u:%u", &major, &minor) == 2)
            return makedev(major, minor);
    return 0;
}

// The device whose char device cmd_fd is open on, as the reference finds
// it: EINVAL for an fd that is no char device, ENODEV when no device of
// the list has its number; then the provider's import_context (EOPNOTSUPP
// by default), whose errno stands.
ibv_context* import_device(int cmd_fd) {
    struct stat st;
    if (fstat(cmd_fd, &st) != 0 || !S_ISCHR(st.st_mode)) {
        errno = EINVAL;
        return nullptr;
    }
    ibv_device** list = get_device_list(nullptr);
    if (!list) {
        errno = ENODEV;
        return nullptr;
    }
    // The list's references go back whatever happens; a context keeps its
    // own reference on its device.
    std::unique_ptr<ibv_device*, void (*)(ibv_device**)> hold(list, free_device_list);
    Device* found = nullptr;
    for (ibv_device** p = list; *p && !found; ++p)
        if (uverbs_cdev(Device::from(*p)->sysfs()) == st.st_rdev)
            found = Device::from(*p);
    if (!found) {
        errno = ENODEV;
        return nullptr;
    }
    const int saved_errno = errno;
    Context* ctx = found->import_context(cmd_fd);
    if (!ctx) {
        if (!errno)
            errno = EIO;
        return nullptr;
    }
    errno = saved_errno;
    return ctx->ibv();
}

ibv_context* open_device(ibv_device* device, void* private_data) {
    const int saved_errno = errno;
    Device* d = Device::from(device);
    const std::string path = "/dev/infiniband/" + d->sysfs().sysfs_name;
    // The fd is ours to close until a context owns it, also when the
    // provider throws (the barrier then reports the exception's errno).
    rdma::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (!fd)
        return nullptr;
    Context* ctx = d->open_context(fd.get(), private_data);
    if (!ctx) {
        if (!errno)
            errno = EIO;
        return nullptr;
    }
    fd.release();
    errno = saved_errno;
    return ctx->ibv();
}

}  // namespace

bool allow_disassoc_destroy() { return g_allow_disassoc_destroy.load(std::memory_order_relaxed); }

// For direct-verbs libraries whose open takes attributes of their own
// (mlx5dv_open_device): as ibv_open_device, with private_data handed to
// the provider's open_context. The caller is an exported entry point and
// provides the barrier.
ibv_context* open_device_with(ibv_device* device, void* private_data) { return open_device(device, private_data); }

// ---------------------------------------------------------------- Context

Context::Context(Device& device, int cmd_fd) : device_(device) {
    wrap_.self = this;
    ibv_context& c = wrap_.vctx.context;
    c.device = device.ibv();
    c.cmd_fd = cmd_fd;
    c.async_fd = -1;
    c.abi_compat = __VERBS_ABI_IS_EXTENDED;
    pthread_mutex_init(&c.mutex, nullptr);
    wrap_.vctx.sz = sizeof(verbs_context);
    driver_id_ = device.sysfs().driver_id;
    for (const MatchEntry& m : device.provider().match_table)
        if (!driver_id_ && m.kind == MatchKind::DriverId)
            driver_id_ = m.driver_id;
    install_trampolines();
    device.get();
}

Context::~Context() {
    ibv_context& c = wrap_.vctx.context;
    if (c.async_fd >= 0)
        ::close(c.async_fd);
    if (c.cmd_fd >= 0)
        ::close(c.cmd_fd);
    pthread_mutex_destroy(&c.mutex);
    if (device_.put())
        delete &device_;
}

Context* Device::import_context(int) {
    errno = EOPNOTSUPP;
    return nullptr;
}

Context* Context::from(ibv_context* c) {
    auto* v = reinterpret_cast<verbs_context*>(reinterpret_cast<char*>(c) - offsetof(verbs_context, context));
    return reinterpret_cast<Wrap*>(v)->self;
}

void format_fw_ver(uint64_t raw, char* out, size_t len) {
    snprintf(out, len, "%d.%d.%d", static_cast<int>((raw >> 32) & 0xffff), static_cast<int>((raw >> 16) & 0xffff),
             static_cast<int>(raw & 0xffff));
}

}  // namespace rdma::verbs

using namespace rdma::verbs;

// ------------------------------------------------------------ C entry points

extern "C" {

RDMA_EXPORT ibv_device** ibv_get_device_list(int* num_devices) {
    return rdma::entry_null([&] { return get_device_list(num_devices); });
}

RDMA_EXPORT void ibv_free_device_list(ibv_device** list) {
    rdma::entry_void([&] {
        if (list)
            free_device_list(list);
    });
}

// Plain reads of the device object: they cannot throw. (noexcept cannot
// be spelled: verbs.h declares them without it.)
RDMA_EXPORT const char* ibv_get_device_name(ibv_device* device) { return device ? device->name : nullptr; }

RDMA_EXPORT int ibv_get_device_index(ibv_device* device) {
    const SysfsDevice& s = Device::from(device)->sysfs();
    return s.ibdev_index == UINT32_MAX ? -1 : static_cast<int>(s.ibdev_index);
}

// 0 is the man page's answer for "no GUID", so also when reading fails.
RDMA_EXPORT __be64 ibv_get_device_guid(ibv_device* device) {
    return rdma::entry_value(__be64{0}, [&] {
        Device* d = Device::from(device);
        uint64_t guid = 0;
        if (auto g = rdma::read_sysfs_attr(d->sysfs().ibdev_path + "/node_guid")) {
            if (auto v = rdma::parse_guid(g.value()))
                guid = *v;
        } else if (d->sysfs().have_node_guid) {
            guid = d->sysfs().node_guid;
        }
        return static_cast<__be64>(htobe64(guid));
    });
}

RDMA_EXPORT ibv_context* ibv_open_device(ibv_device* device) {
    return rdma::entry_null([&] { return open_device(device, nullptr); });
}

RDMA_EXPORT ibv_context* ibv_import_device(int cmd_fd) {
    return rdma::entry_null([&] { return import_device(cmd_fd); });
}

RDMA_EXPORT int ibv_close_device(ibv_context* context) {
    return rdma::entry_errno([&] {
        delete Context::from(context);
        return 0;
    });
}

}  // extern "C"

// These names also have a 1.0 ABI version (compat_1_0.cpp): the
// definitions here are bound to IBVERBS_1.1 as the default version.
RDMA_DEFAULT_VERSION(ibv_get_device_list, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_free_device_list, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_get_device_name, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_get_device_guid, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_open_device, IBVERBS_1.1);
RDMA_DEFAULT_VERSION(ibv_close_device, IBVERBS_1.1);
