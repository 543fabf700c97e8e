// Library start-up: where sysfs is, which providers exist (driver files,
// RDMAV_DRIVERS), and which kernel devices there are (netlink, else sysfs).
#include "libibverbs/ibverbs.h"
#include "util/file_io.h"

#include <dlfcn.h>
#include <fnmatch.h>
#include <limits.h>
#include <rdma/ib_user_verbs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace rdma::verbs {

const std::string& sysfs_root() {
    static const std::string root = [] {
        std::string r = "/sys";
        if (getuid() == geteuid()) {
            if (const char* env = getenv("SYSFS_PATH"); env && *env)
                r = env;
        }
        while (r.size() > 1 && r.back() == '/')
            r.pop_back();
        return r;
    }();
    return root;
}

bool kernel_copy_on_fork() {
    static const bool cof = netlink_copy_on_fork().value_or(false);
    return cof;
}

// ---------------------------------------------------------------- discovery

static void fill_from_sysfs(SysfsDevice& d) {
    const std::string& sys = sysfs_root();
    d.sysfs_path = sys + "/class/infiniband_verbs/" + d.sysfs_name;
    d.ibdev_path = sys + "/class/infiniband/" + d.ibdev_name;
    if (auto m = read_sysfs_attr(d.sysfs_path + "/device/modalias"))
        d.modalias = m.value();
    if (!d.abi_ver)
        if (auto v = read_sysfs_attr(d.sysfs_path + "/abi_version"))
            d.abi_ver = static_cast<int>(parse_i64(v.value()).value_or(0));
    if (!d.have_node_guid)
        if (auto g = read_sysfs_attr(d.ibdev_path + "/node_guid"))
            if (auto v = parse_guid(g.value())) {
                d.node_guid = *v;
                d.have_node_guid = true;
            }
    struct stat st;
    if (stat(d.ibdev_path.c_str(), &st) == 0)
        d.time_created = st.st_mtim;
}

// The char device must exist for the device to be usable.
static bool cdev_present(const SysfsDevice& d) {
    struct stat st;
    return stat(("/dev/infiniband/" + d.sysfs_name).c_str(), &st) == 0;
}

static int sysfs_discover(std::vector<SysfsDevice>& out) {
    const std::string cls = sysfs_root() + "/class/infiniband_verbs";
    auto names = list_dir(cls);
    if (!names)
        return ENOSYS;
    for (const std::string& n : names.value()) {
        const std::string path = cls + "/" + n;
        struct stat st;
        if (stat(path.c_str(), &st) != 0) {
            fprintf(stderr, "%sWarning: couldn't stat '%s'.\n", kLogPrefix, path.c_str());
            continue;
        }
        if (!S_ISDIR(st.st_mode))
            continue;
        auto ibdev = read_sysfs_attr(path + "/ibdev");
        if (!ibdev) {
            fprintf(stderr, "%sWarning: no ibdev class attr for '%s'.\n", kLogPrefix, n.c_str());
            continue;
        }
        SysfsDevice d;
        d.sysfs_name = n;
        d.ibdev_name = ibdev.value();
        out.push_back(std::move(d));
    }
    return 0;
}

static int check_kernel_abi() {
    auto v = read_sysfs_attr(sysfs_root() + "/class/infiniband_verbs/abi_version");
    if (!v)
        return ENOSYS;
    int abi = static_cast<int>(parse_i64(v.value()).value_or(-1));
    // uverbs ABI 6 (Linux 2.6.20 on) is the oldest this library speaks.
    constexpr int kMinKernelAbi = 6;
    if (abi < kMinKernelAbi || abi > IB_USER_VERBS_ABI_VERSION) {
        fprintf(stderr, "%sFatal: kernel ABI version %d doesn't match library version %d.\n", kLogPrefix, abi,
                IB_USER_VERBS_ABI_VERSION);
        return ENOSYS;
    }
    return 0;
}

int discover_devices(std::vector<SysfsDevice>& out) {
    if (int e = check_kernel_abi())
        return e;
    std::vector<SysfsDevice> found;
    // A test-provided sysfs tree (SYSFS_PATH) is never mixed with the live
    // kernel's netlink view.
    const bool live_sysfs = sysfs_root() == "/sys";
    if (!live_sysfs || !netlink_discover(found)) {
        found.clear();
        if (int e = sysfs_discover(found))
            return e;
    }
    for (SysfsDevice& d : found) {
        fill_from_sysfs(d);
        if (live_sysfs && !cdev_present(d))
            continue;
        out.push_back(std::move(d));
    }
    return 0;
}

// ------------------------------------------------------------------ plugins

namespace {

// Plugins register from their static constructors, that is inside
// dlopen(): nothing may allocate or throw there, so a fixed table (the
// reference ships about twenty providers).
constexpr size_t kMaxProviders = 64;
const Provider* g_providers[kMaxProviders];
size_t g_provider_count = 0;

// The directory this library was loaded from.
std::string self_dir() {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&self_dir), &info) || !info.dli_fname)
        return {};
    char buf[PATH_MAX];
    if (!realpath(info.dli_fname, buf))
        return {};
    std::string p = buf;
    return p.substr(0, p.rfind('/'));
}

std::string real(const char* p) {
    char buf[PATH_MAX];
    return realpath(p, buf) ? std::string(buf) : std::string();
}

// A library running from the build tree uses the build tree's driver files
// and plugins; an installed one uses the configured directories.
struct Dirs {
    std::string config;
    std::string plugins;
};
const Dirs& dirs() {
    static const Dirs d = [] {
        const std::string self = self_dir();
        if (!self.empty() && self == real(RDMA_BUILD_LIB_DIR))
            return Dirs{RDMA_BUILD_CONFIG_DIR, RDMA_BUILD_LIB_DIR};
        return Dirs{RDMA_IBV_CONFIG_DIR, RDMA_PROVIDER_DIR};
    }();
    return d;
}

constexpr const char* kSuffix = "-rdmav" RDMA_PABI_VERSION ".so";

void load_one(const std::string& name) {
    if (name.empty())
        return;
    std::string so;
    if (name[0] == '/') {
        so = name + kSuffix;
        if (!dlopen(so.c_str(), RTLD_NOW))
            fprintf(stderr, "%sWarning: couldn't load driver '%s': %s\n", kLogPrefix, so.c_str(), dlerror());
        return;
    }
    so = dirs().plugins + "/lib" + name + kSuffix;
    if (dlopen(so.c_str(), RTLD_NOW))
        return;
    so = "lib" + name + kSuffix;
    if (!dlopen(so.c_str(), RTLD_NOW))
        fprintf(stderr, "%sWarning: couldn't load driver '%s': %s\n", kLogPrefix, so.c_str(), dlerror());
}

}  // namespace

void register_provider(const Provider& provider) {
    if (g_provider_count == kMaxProviders) {
        fprintf(stderr, "%sWarning: too many providers, %s ignored\n", kLogPrefix, provider.name);
        return;
    }
    g_providers[g_provider_count++] = &provider;
}

std::span<const Provider* const> providers() { return {g_providers, g_provider_count}; }

void load_providers() {
    std::vector<std::string> names;
    if (getuid() == geteuid()) {
        const char* env = getenv("RDMAV_DRIVERS");
        if (!env)
            env = getenv("IBV_DRIVERS");
        if (env) {
            std::string_view s = env;
            while (!s.empty()) {
                size_t sep = s.find_first_of(":;");
                load_one(std::string(s.substr(0, sep)));
                if (sep == std::string_view::npos)
                    break;
                s.remove_prefix(sep + 1);
            }
        }
    }
    const std::string& cfg = dirs().config;
    auto entries = list_dir(cfg);
    if (!entries) {
        fprintf(stderr, "%sWarning: couldn't open config directory '%s'.\n", kLogPrefix, cfg.c_str());
        return;
    }
    for (const std::string& e : entries.value()) {
        const std::string path = cfg + "/" + e;
        struct stat st;
        if (stat(path.c_str(), &st) != 0) {
            fprintf(stderr, "%sWarning: couldn't stat config file '%s'.\n", kLogPrefix, path.c_str());
            continue;
        }
        if (S_ISREG(st.st_mode))
            read_driver_file(path, names);
    }
    for (const std::string& n : names)
        load_one(n);
}

}  // namespace rdma::verbs
