// The sysfs and /dev view of the emulated devices.
//
// The tree is real files in <run_dir>/tree-<hash of the configuration>, made
// once (atomically: built under a temporary name, then renamed) and shared
// by every process that runs with the same configuration. Interposed path
// calls map /sys/class/infiniband, /sys/class/infiniband_verbs and
// /dev/infiniband onto it; symlinks inside are relative, so realpath() and
// readlink() give consistent answers inside the tree.
#include "verbs.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <ftw.h>
#include <functional>
#include <sys/stat.h>
#include <unistd.h>

namespace uvsim {

namespace {

bool mkdirs(const std::string& path) {
    std::string cur;
    size_t i = 0;
    while (i <= path.size()) {
        size_t j = path.find('/', i);
        if (j == std::string::npos)
            j = path.size();
        cur = path.substr(0, j);
        if (!cur.empty() && mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
            return false;
        i = j + 1;
    }
    return true;
}

bool put(const std::string& path, const std::string& text) {
    size_t slash = path.rfind('/');
    if (slash != std::string::npos && !mkdirs(path.substr(0, slash)))
        return false;
    int fd = libc().open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
    if (fd < 0)
        return false;
    std::string t = text + "\n";
    bool ok = libc().write(fd, t.data(), t.size()) == static_cast<ssize_t>(t.size());
    libc().close(fd);
    return ok;
}

bool link_to(const std::string& target, const std::string& path) {
    size_t slash = path.rfind('/');
    if (slash != std::string::npos && !mkdirs(path.substr(0, slash)))
        return false;
    return symlink(target.c_str(), path.c_str()) == 0 || errno == EEXIST;
}

std::string hex16(uint64_t v) {
    char b[24];
    snprintf(b, sizeof b, "%04x:%04x:%04x:%04x", unsigned(v >> 48 & 0xffff), unsigned(v >> 32 & 0xffff),
             unsigned(v >> 16 & 0xffff), unsigned(v & 0xffff));
    return b;
}

std::string gid_text(const uint8_t g[16]) {
    char b[48];
    snprintf(b, sizeof b, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0], g[1], g[2],
             g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]);
    return b;
}

const char* width_text(uint8_t w) {
    switch (w) {
    case 1: return "1X";
    case 2: return "4X";
    case 4: return "8X";
    case 8: return "12X";
    case 16: return "2X";
    }
    return "4X";
}

// rate text like the kernel's ports/N/rate
std::string rate_text(uint8_t width, uint8_t speed) {
    double lane;
    const char* name;
    switch (speed) {
    case 1:
        lane = 2.5;
        name = " SDR";
        break;
    case 2:
        lane = 5;
        name = " DDR";
        break;
    case 4:
        lane = 10;
        name = " QDR";
        break;
    case 8:
        lane = 10;
        name = " FDR10";
        break;
    case 16:
        lane = 14;
        name = " FDR";
        break;
    case 32:
        lane = 25;
        name = " EDR";
        break;
    case 64:
        lane = 50;
        name = " HDR";
        break;
    case 128:
        lane = 100;
        name = " NDR";
        break;
    default:
        lane = 25;
        name = " EDR";
        break;
    }
    int lanes = width == 1 ? 1 : width == 2 ? 4 : width == 4 ? 8 : width == 8 ? 12 : 2;
    double r = lane * lanes;
    char b[64];
    if (r == static_cast<int>(r))
        snprintf(b, sizeof b, "%d Gb/sec (%s%s)", static_cast<int>(r), width_text(width), name);
    else
        snprintf(b, sizeof b, "%.1f Gb/sec (%s%s)", r, width_text(width), name);
    return b;
}

const char* state_text(uint8_t s) {
    switch (s) {
    case 1: return "1: DOWN";
    case 2: return "2: INIT";
    case 3: return "3: ARMED";
    case 4: return "4: ACTIVE";
    case 5: return "5: ACTIVE_DEFER";
    }
    return "0: NOP";
}

uint64_t fnv(const std::string& s) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

// Everything that shapes the tree, as text (for the hash).
std::string describe(const Config& c) {
    std::string s = "v6";
    for (const DevCfg& d : c.devices) {
        char b[256];
        snprintf(b, sizeof b, "|%s %x %u %u %llx %llx %s %s %s", d.name.c_str(), d.vendor_id, d.part_id, d.hw_ver,
                 (unsigned long long)d.node_guid, (unsigned long long)d.sys_image_guid, d.fw_ver.c_str(),
                 d.board_id.c_str(), d.pci_addr.c_str());
        s += b;
        for (const PortCfg& p : d.ports) {
            snprintf(b, sizeof b, "/%d %u %u %u %u %u %u %u %llx %llx %02x%02x%02x%02x%02x%02x %x %s", p.ethernet,
                     p.lid, p.lmc, p.sm_lid, p.state, p.active_mtu, p.width, p.speed, (unsigned long long)p.gid_prefix,
                     (unsigned long long)p.port_guid, p.mac[0], p.mac[1], p.mac[2], p.mac[3], p.mac[4], p.mac[5],
                     p.ipv4, p.netdev.c_str());
            s += b;
        }
    }
    return s;
}

}  // namespace

namespace {

bool build_tree(const Config& c, const std::string& root) {
    bool ok = put(root + "/sys/class/infiniband_verbs/abi_version", "6");
    // the rdma_cm misc device (ucma.cpp) and its ABI version
    ok &= put(root + "/sys/class/misc/rdma_cm/abi_version", "4");
    ok &= put(root + "/sys/class/misc/rdma_cm/dev", "10:58");
    ok &= put(root + "/dev/infiniband/rdma_cm", "");
    for (size_t i = 0; i < c.devices.size() && ok; ++i) {
        const DevCfg& d = c.devices[i];
        const std::string pci_rel = "devices/pci0000:00/" + d.pci_addr;
        const std::string pci = root + "/sys/" + pci_rel;
        char b[160];
        // PCI function (Mellanox vendor 0x15b3, device id = part number)
        snprintf(b, sizeof b, "pci:v000015B3d%08Xsv000015B3sd%08Xbc02sc07i00", d.part_id, 0x0008u);
        ok &= put(pci + "/modalias", b);
        ok &= put(pci + "/vendor", "0x15b3");
        snprintf(b, sizeof b, "0x%04x", d.part_id);
        ok &= put(pci + "/device", b);
        ok &= put(pci + "/subsystem_vendor", "0x15b3");
        ok &= put(pci + "/subsystem_device", "0x0008");
        ok &= put(pci + "/class", "0x020700");
        ok &= put(pci + "/numa_node", "-1");
        ok &= put(pci + "/local_cpulist", "0-" + std::to_string(std::max(0L, sysconf(_SC_NPROCESSORS_ONLN) - 1)));
        {
            // the same CPUs as a mask (32-bit words, most significant first)
            const long ncpu = std::max(1L, std::min(sysconf(_SC_NPROCESSORS_ONLN), 32L));
            snprintf(b, sizeof b, "%08lx", ncpu == 32 ? 0xffffffffUL : (1UL << ncpu) - 1);
            ok &= put(pci + "/local_cpus", b);
        }
        ok &= put(pci + "/uevent", "DRIVER=mlx5_core\nPCI_SLOT_NAME=" + d.pci_addr);

        const std::string uv = root + "/sys/class/infiniband_verbs/uverbs" + std::to_string(i);
        ok &= put(uv + "/ibdev", d.name);
        ok &= put(uv + "/abi_version", "1");
        ok &= put(uv + "/dev", "231:" + std::to_string(192 + i));
        ok &= link_to("../../../" + pci_rel, uv + "/device");
        ok &= put(root + "/dev/infiniband/uverbs" + std::to_string(i), "");

        // As Linux has it: the device's directory under its PCI function,
        // and /sys/class/infiniband/<name> a link to it (UCX finds the PCI
        // function by walking up from the link's real path).
        const std::string ib = pci + "/infiniband/" + d.name;
        ok &= link_to("../..", ib + "/device");
        ok &= mkdirs(root + "/sys/class/infiniband");
        ok &= link_to("../../" + pci_rel + "/infiniband/" + d.name, root + "/sys/class/infiniband/" + d.name);
        ok &= put(ib + "/node_type", "1: CA");
        ok &= put(ib + "/node_guid", hex16(d.node_guid));
        ok &= put(ib + "/sys_image_guid", hex16(d.sys_image_guid));
        ok &= put(ib + "/fw_ver", d.fw_ver);
        snprintf(b, sizeof b, "0x%x", d.hw_ver);
        ok &= put(ib + "/hw_rev", b);
        ok &= put(ib + "/hca_type", "MT" + std::to_string(d.part_id));
        ok &= put(ib + "/board_id", d.board_id);
        ok &= put(ib + "/node_desc", "uverbs-sim " + d.name);
        for (size_t p = 0; p < d.ports.size(); ++p) {
            const PortCfg& pc = d.ports[p];
            const std::string pd = ib + "/ports/" + std::to_string(p + 1);
            snprintf(b, sizeof b, "0x%x", pc.lid);
            ok &= put(pd + "/lid", b);
            snprintf(b, sizeof b, "0x%x", pc.sm_lid);
            ok &= put(pd + "/sm_lid", b);
            ok &= put(pd + "/lid_mask_count", std::to_string(pc.lmc));
            ok &= put(pd + "/sm_sl", "0");
            ok &= put(pd + "/state", state_text(pc.state));
            ok &= put(pd + "/phys_state", pc.state >= 2 ? "5: LinkUp" : "3: Disabled");
            ok &= put(pd + "/rate", rate_text(pc.width, pc.speed));
            ok &= put(pd + "/cap_mask", pc.ethernet ? "0x04010000" : "0x2651e84a");
            ok &= put(pd + "/link_layer", pc.ethernet ? "Ethernet" : "InfiniBand");
            const auto& gids = port_gids(pc);
            const size_t ngid = pc.ethernet ? 256 : 8;  // as query_port's gid_tbl_len
            static const uint8_t zero_gid[16] = {};
            for (size_t g = 0; g < ngid; ++g)
                ok &= put(pd + "/gids/" + std::to_string(g), gid_text(g < gids.size() ? gids[g].gid : zero_gid));
            for (size_t g = 0; g < gids.size(); ++g) {
                ok &= put(pd + "/gid_attrs/types/" + std::to_string(g),
                          gids[g].type ? "RoCE v2" : (pc.ethernet ? "IB/RoCE v1" : "IB/RoCE v1"));
                if (pc.ethernet)
                    ok &= put(pd + "/gid_attrs/ndevs/" + std::to_string(g), pc.netdev);
            }
            const size_t npkey = pc.ethernet ? 1 : 128;
            for (size_t k = 0; k < npkey; ++k)
                ok &= put(pd + "/pkeys/" + std::to_string(k), k == 0 ? "0xffff" : "0x0000");
        }
    }
    return ok;
}

int rm_one(const char* path, const struct stat*, int flag, struct FTW*) {
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

std::string make_tree() {
    const Config& c = cfg();
    char h[32];
    snprintf(h, sizeof h, "%016llx", (unsigned long long)fnv(describe(c)));
    const std::string final_path = c.run_dir + "/tree-" + h;
    struct stat st;
    if (stat((final_path + "/sys/class/infiniband_verbs/abi_version").c_str(), &st) == 0)
        return final_path;
    if (!mkdirs(c.run_dir)) {
        fprintf(stderr, "uverbs-sim: cannot create %s: %s\n", c.run_dir.c_str(), strerror(errno));
        return {};
    }
    std::string tmpl = c.run_dir + "/tree.XXXXXX";
    std::vector<char> t(tmpl.begin(), tmpl.end());
    t.push_back(0);
    if (!mkdtemp(t.data())) {
        fprintf(stderr, "uverbs-sim: cannot create a tree in %s: %s\n", c.run_dir.c_str(), strerror(errno));
        return {};
    }
    chmod(t.data(), 0755);
    const std::string tmp = t.data();
    if (!build_tree(c, tmp)) {
        fprintf(stderr, "uverbs-sim: cannot write the sysfs tree in %s: %s\n", tmp.c_str(), strerror(errno));
        nftw(tmp.c_str(), rm_one, 16, FTW_DEPTH | FTW_PHYS);
        return {};
    }
    if (rename(tmp.c_str(), final_path.c_str()) != 0)  // another process won the race
        nftw(tmp.c_str(), rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return final_path;
}

bool has_prefix(const char* path, const char* prefix, size_t& plen) {
    plen = strlen(prefix);
    return strncmp(path, prefix, plen) == 0 && (path[plen] == 0 || path[plen] == '/');
}

}  // namespace

void sysfs_remove_device(int index, const std::string& name) {
    const std::string& root = tree_root();
    if (root.empty())
        return;
    const std::string uv = "uverbs" + std::to_string(index);
    const std::string pci = root + "/sys/devices/pci0000:00/" + cfg().devices[index].pci_addr;
    for (const std::string& dir : {root + "/sys/class/infiniband/" + name, pci + "/infiniband/" + name,
                                   root + "/sys/class/infiniband_verbs/" + uv})
        nftw(dir.c_str(), rm_one, 16, FTW_DEPTH | FTW_PHYS);
    unlink((root + "/dev/infiniband/" + uv).c_str());
}

const std::string& tree_root() {
    static const std::string* root = new std::string(make_tree());  // outlives exit()
    return *root;
}

std::string map_path(const char* path) {
    if (!path || path[0] != '/')
        return {};
    // Quick reject: everything not under /sys/class/infiniband*, /dev/infiniband
    // or the rdma_cm misc device.
    if (strncmp(path, "/sys/class/infiniband", 21) != 0 && strncmp(path, "/dev/infiniband", 15) != 0 &&
        strncmp(path, "/sys/class/misc/rdma_cm", 23) != 0)
        return {};
    static const char* const prefixes[] = {"/sys/class/infiniband_verbs", "/sys/class/infiniband", "/dev/infiniband",
                                           "/sys/class/misc/rdma_cm"};
    for (const char* p : prefixes) {
        size_t n;
        if (has_prefix(path, p, n)) {
            const std::string& root = tree_root();
            if (root.empty())
                return {};
            return root + path;
        }
    }
    return {};
}

int uverbs_index_for_path(const char* path) {
    if (!path)
        return -1;
    const char* name = nullptr;
    if (strncmp(path, "/dev/infiniband/uverbs", 22) == 0)
        name = path + 22;
    else {
        const std::string& root = tree_root();
        if (root.empty() || strncmp(path, root.c_str(), root.size()) != 0)
            return -1;
        if (strncmp(path + root.size(), "/dev/infiniband/uverbs", 22) != 0)
            return -1;
        name = path + root.size() + 22;
    }
    // decimal digits only, no sign, blank or leading zero: the kernel's
    // node names are uverbs0, uverbs1... ("uverbs+1" or "uverbs01" is no node)
    if (name[0] < '0' || name[0] > '9' || (name[0] == '0' && name[1]))
        return -1;
    size_t n = 0;
    for (const char* p = name; *p; ++p) {
        if (*p < '0' || *p > '9')
            return -1;
        n = n * 10 + static_cast<size_t>(*p - '0');
        if (n >= cfg().devices.size())
            return -1;
    }
    return static_cast<int>(n);
}

}  // namespace uvsim
