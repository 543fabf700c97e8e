// Configuration: a small line-oriented file (UVERBS_SIM_CONFIG) plus
// environment overrides. Format in ../README.md.
#include "sim.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace uvsim {

namespace {

std::vector<std::string> split_words(std::string_view line) {
    std::vector<std::string> w;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
            ++i;
        if (i >= line.size() || line[i] == '#')
            break;
        size_t j = i;
        while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '#')
            ++j;
        w.emplace_back(line.substr(i, j - i));
        i = j;
    }
    return w;
}

bool parse_u64(const std::string& s, uint64_t& v) {
    if (s.empty())
        return false;
    const char* b = s.data();
    const char* e = b + s.size();
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        b += 2;
        base = 16;
    }
    auto r = std::from_chars(b, e, v, base);
    return r.ec == std::errc() && r.ptr == e;
}

bool parse_mac(const std::string& s, uint8_t mac[6]) {
    unsigned m[6];
    char tail;
    if (sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &tail) != 6)
        return false;
    for (int i = 0; i < 6; ++i) {
        if (m[i] > 255)
            return false;
        mac[i] = static_cast<uint8_t>(m[i]);
    }
    return true;
}

bool parse_ipv4(const std::string& s, uint32_t& ip) {
    unsigned a, b, c, d;
    char tail;
    if (sscanf(s.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4 || a > 255 || b > 255 || c > 255 || d > 255)
        return false;
    ip = a << 24 | b << 16 | c << 8 | d;
    return true;
}

// Port-level keys; returns "" or an error message.
std::string set_port_key(PortCfg& p, const std::string& k, const std::string& v) {
    uint64_t n = 0;
    const bool num = parse_u64(v, n);
    if (k == "link_layer") {
        if (v == "ib" || v == "infiniband")
            p.ethernet = false;
        else if (v == "eth" || v == "ethernet" || v == "roce")
            p.ethernet = true;
        else
            return "link_layer must be ib or eth";
    } else if (k == "lid") {
        if (!num || n == 0 || n >= 0xc000)
            return "lid must be a unicast LID (1-0xbfff)";
        p.lid = static_cast<uint16_t>(n);
    } else if (k == "lmc") {
        if (!num || n > 7)
            return "lmc must be 0-7";
        p.lmc = static_cast<uint8_t>(n);
    } else if (k == "sm_lid") {
        if (!num || n >= 0xc000)
            return "bad sm_lid";
        p.sm_lid = static_cast<uint16_t>(n);
    } else if (k == "state") {
        if (v == "down")
            p.state = 1;
        else if (v == "init")
            p.state = 2;
        else if (v == "armed")
            p.state = 3;
        else if (v == "active")
            p.state = 4;
        else
            return "state must be down, init, armed or active";
    } else if (k == "mtu") {
        static const int sizes[] = {256, 512, 1024, 2048, 4096};
        int found = 0;
        for (int i = 0; i < 5; ++i)
            if (num && n == static_cast<uint64_t>(sizes[i]))
                found = i + 1;
        if (!found)
            return "mtu must be 256, 512, 1024, 2048 or 4096";
        p.active_mtu = static_cast<uint8_t>(found);
    } else if (k == "width") {
        if (!num || (n != 1 && n != 2 && n != 4 && n != 8 && n != 16))
            return "width is an ibv width code (1, 2, 4, 8, 16)";
        p.width = static_cast<uint8_t>(n);
    } else if (k == "speed") {
        if (!num || n == 0 || n > 255)
            return "speed is an ibv speed code (1 SDR ... 32 EDR, 64 HDR, 128 NDR)";
        p.speed = static_cast<uint8_t>(n);
    } else if (k == "port_guid") {
        if (!num)
            return "bad port_guid";
        p.port_guid = n;
    } else if (k == "gid_prefix") {
        if (!num)
            return "bad gid_prefix";
        p.gid_prefix = n;
    } else if (k == "mac") {
        if (!parse_mac(v, p.mac))
            return "mac must be xx:xx:xx:xx:xx:xx";
    } else if (k == "ipv4") {
        if (!parse_ipv4(v, p.ipv4))
            return "ipv4 must be a dotted quad";
    } else if (k == "netdev") {
        if (v.empty() || v.size() > 15)
            return "netdev must be 1-15 characters";
        p.netdev = v;
    } else {
        return "unknown port key '" + k + "'";
    }
    return "";
}

std::string set_dev_key(DevCfg& d, const std::string& k, const std::string& v) {
    uint64_t n = 0;
    const bool num = parse_u64(v, n);
    struct Cap {
        const char* name;
        uint32_t DevCfg::*field;
    };
    static const Cap caps[] = {
        {"max_qp", &DevCfg::max_qp},
        {"max_qp_wr", &DevCfg::max_qp_wr},
        {"max_sge", &DevCfg::max_sge},
        {"max_cq", &DevCfg::max_cq},
        {"max_cqe", &DevCfg::max_cqe},
        {"max_mr", &DevCfg::max_mr},
        {"max_pd", &DevCfg::max_pd},
        {"max_srq", &DevCfg::max_srq},
        {"max_srq_wr", &DevCfg::max_srq_wr},
        {"max_srq_sge", &DevCfg::max_srq_sge},
        {"max_qp_rd_atom", &DevCfg::max_qp_rd_atom},
        {"max_ah", &DevCfg::max_ah},
        {"max_inline", &DevCfg::max_inline},
        {"vendor_id", &DevCfg::vendor_id},
        {"part_id", &DevCfg::part_id},
        {"hw_ver", &DevCfg::hw_ver},
        {"dyn_uars", &DevCfg::dyn_uars},
    };
    for (const Cap& c : caps)
        if (k == c.name) {
            if (!num || n > 0xffffffffull || (n == 0 && k != "hw_ver" && k != "dyn_uars"))
                return k + " must be a positive 32-bit number";
            d.*c.field = static_cast<uint32_t>(n);
            return "";
        }
    if (k == "ports") {
        if (!num || n == 0 || n > 2)
            return "ports must be 1 or 2";
        d.ports.resize(n, d.ports.empty() ? PortCfg{} : d.ports.front());
    } else if (k == "node_guid") {
        if (!num)
            return "bad node_guid";
        d.node_guid = n;
    } else if (k == "sys_image_guid") {
        if (!num)
            return "bad sys_image_guid";
        d.sys_image_guid = n;
    } else if (k == "fw_ver") {
        d.fw_ver = v;
    } else if (k == "board_id") {
        d.board_id = v;
    } else if (k == "pci") {
        // exactly DDDD:BB:DD.F in hex (it names a directory of the tree;
        // sysfs spells it in lower case)
        std::string a = v;
        bool ok = a.size() == 12 && a[4] == ':' && a[7] == ':' && a[10] == '.' && a[11] >= '0' && a[11] <= '7';
        for (size_t i = 0; ok && i < a.size(); ++i) {
            if (i == 4 || i == 7 || i == 10)
                continue;
            a[i] = static_cast<char>(tolower(static_cast<unsigned char>(a[i])));
            ok = isxdigit(static_cast<unsigned char>(a[i])) != 0;
        }
        if (!ok)
            return "pci must be DDDD:BB:DD.F";
        d.pci_addr = a;
    } else if (k == "uar_objects") {
        if (v != "on" && v != "off")
            return "uar_objects must be on or off";
        d.uar_objects = v == "on";
    } else if (k == "atomics") {
        if (v != "on" && v != "off")
            return "atomics must be on or off";
        d.atomics = v == "on";
    } else if (k == "scatter_to_cqe") {
        if (v != "on" && v != "off")
            return "scatter_to_cqe must be on or off";
        d.scatter_to_cqe = v == "on";
    } else if (k == "raw_eth") {
        if (v != "on" && v != "off")
            return "raw_eth must be on or off";
        d.raw_eth = v == "on";
    } else if (k == "odp") {
        // on (explicit and implicit MRs), explicit (no implicit MR), off
        if (v != "on" && v != "off" && v != "explicit")
            return "odp must be on, explicit or off";
        d.odp = v != "off";
        d.odp_implicit = v == "on";
    } else if (k == "dm_size") {
        // bytes of device memory, a multiple of 64 (0: none)
        if (!num || (n & 63) || n > (1ull << 30))
            return "dm_size must be a multiple of 64 up to 1 GiB (0: no device memory)";
        d.dm_size = n;
    } else if (k == "cqe_compression") {
        // off, or the most CQEs in one session
        if (v != "off" && (!num || n < 2 || n > 0xffff))
            return "cqe_compression must be off or a session size from 2 to 65535";
        d.cqe_comp_max_num = v == "off" ? 0 : static_cast<uint32_t>(n);
    } else {
        // a port key given at device level applies to every port
        for (PortCfg& p : d.ports) {
            std::string e = set_port_key(p, k, v);
            if (!e.empty())
                return e == "unknown port key '" + k + "'" ? "unknown device key '" + k + "'" : e;
        }
    }
    return "";
}

std::string set_fault_key(FaultCfg& f, const std::string& k, const std::string& v) {
    uint64_t n = 0;
    if (!parse_u64(v, n))
        return "fault " + k + " needs a number";
    if (k == "cqe_error_at")
        f.cqe_error_at = n;
    else if (k == "syndrome") {
        if (n == 0 || n > 0xff)
            return "syndrome is one byte";
        f.cqe_error_syndrome = static_cast<uint8_t>(n);
    } else if (k == "fatal_after_ms")
        f.fatal_after_ms = n;
    else if (k == "drop_every")
        f.drop_every = n;
    else if (k == "remove_after_ms")
        f.remove_after_ms = n;
    else
        return "unknown fault '" + k + "'";
    return "";
}

// GIDs of a port, as the kernel's GID cache lists them (also answered by
// the QUERY_GID ioctls).
std::vector<GidEntry> make_gids(const PortCfg& p) {
    std::vector<GidEntry> v;
    if (!p.ethernet) {
        GidEntry e{};
        for (int i = 0; i < 8; ++i) {
            e.gid[i] = static_cast<uint8_t>(p.gid_prefix >> (56 - 8 * i));
            e.gid[8 + i] = static_cast<uint8_t>(p.port_guid >> (56 - 8 * i));
        }
        e.type = 0;
        v.push_back(e);
        return v;
    }
    // link-local from the MAC (EUI-64), as v1 then v2; then the IPv4 address
    GidEntry ll{};
    ll.gid[0] = 0xfe;
    ll.gid[1] = 0x80;
    ll.gid[8] = p.mac[0] ^ 2;
    ll.gid[9] = p.mac[1];
    ll.gid[10] = p.mac[2];
    ll.gid[11] = 0xff;
    ll.gid[12] = 0xfe;
    ll.gid[13] = p.mac[3];
    ll.gid[14] = p.mac[4];
    ll.gid[15] = p.mac[5];
    ll.type = 0;
    v.push_back(ll);
    ll.type = 1;
    v.push_back(ll);
    if (p.ipv4) {
        GidEntry g4{};
        g4.gid[10] = 0xff;
        g4.gid[11] = 0xff;
        g4.gid[12] = static_cast<uint8_t>(p.ipv4 >> 24);
        g4.gid[13] = static_cast<uint8_t>(p.ipv4 >> 16);
        g4.gid[14] = static_cast<uint8_t>(p.ipv4 >> 8);
        g4.gid[15] = static_cast<uint8_t>(p.ipv4);
        g4.type = 0;
        v.push_back(g4);
        g4.type = 1;
        v.push_back(g4);
    }
    return v;
}

}  // namespace

std::optional<Config> parse_config(std::string_view text, std::string& err) {
    Config c;
    DevCfg* dev = nullptr;
    int lineno = 0;
    auto fail = [&](const std::string& m) {
        err = "line " + std::to_string(lineno) + ": " + m;
        return std::nullopt;
    };
    while (!text.empty()) {
        size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        ++lineno;
        auto w = split_words(line);
        if (w.empty())
            continue;
        const std::string& key = w[0];
        if (key == "device") {
            if (w.size() != 2)
                return fail("device takes one name");
            if (w[1].empty() || w[1].size() > 63)
                return fail("bad device name");
            for (const DevCfg& d : c.devices)
                if (d.name == w[1])
                    return fail("device " + w[1] + " given twice");
            if (c.devices.size() >= 16)
                return fail("at most 16 devices");
            c.devices.emplace_back();
            dev = &c.devices.back();
            dev->name = w[1];
            dev->ports.resize(1);
        } else if (key == "port") {
            // port N key value [key value...]
            if (!dev)
                return fail("port before any device");
            uint64_t n;
            if (w.size() < 4 || (w.size() % 2) != 0 || !parse_u64(w[1], n) || n == 0 || n > dev->ports.size())
                return fail("port N key value...: N must be an existing port");
            for (size_t i = 2; i + 1 < w.size(); i += 2) {
                std::string e = set_port_key(dev->ports[n - 1], w[i], w[i + 1]);
                if (!e.empty())
                    return fail(e);
            }
        } else if (key == "fault") {
            if (w.size() < 3 || (w.size() % 2) != 1)
                return fail("fault key value...");
            for (size_t i = 1; i + 1 < w.size(); i += 2) {
                std::string e = set_fault_key(c.faults, w[i], w[i + 1]);
                if (!e.empty())
                    return fail(e);
            }
        } else if (key == "run_dir") {
            if (w.size() != 2)
                return fail("run_dir takes a path");
            c.run_dir = w[1];
        } else if (key == "trace") {
            if (w.size() != 2)
                return fail("trace takes a path or -");
            c.trace_file = w[1];
        } else if (key == "idle_poll_us") {
            uint64_t n;
            if (w.size() != 2 || !parse_u64(w[1], n) || n == 0 || n > 1000000)
                return fail("idle_poll_us takes 1-1000000");
            c.idle_poll_us = static_cast<uint32_t>(n);
        } else {
            if (!dev)
                return fail("unknown key '" + key + "' (device keys follow a device line)");
            if (w.size() != 2)
                return fail(key + " takes one value");
            std::string e = set_dev_key(*dev, key, w[1]);
            if (!e.empty())
                return fail(e);
        }
    }
    return c;
}

void finish_config(Config& c) {
    if (c.devices.empty()) {
        c.devices.emplace_back();
        c.devices.back().name = "mlx5_0";
        c.devices.back().ports.resize(1);
    }
    // LIDs the file gives are taken: automatic ones go around them
    std::vector<std::pair<unsigned, unsigned>> taken;  // first, last
    for (const DevCfg& d : c.devices)
        for (const PortCfg& p : d.ports)
            if (!p.ethernet && p.lid)
                taken.emplace_back(p.lid, p.lid + (1u << p.lmc) - 1);
    auto lid_taken = [&](unsigned first, unsigned last) {
        for (const auto& [a, b] : taken)
            if (first <= b && a <= last)
                return true;
        return false;
    };
    uint16_t next_lid = 1;
    for (size_t i = 0; i < c.devices.size(); ++i) {
        DevCfg& d = c.devices[i];
        if (d.ports.empty())
            d.ports.resize(1);
        if (!d.node_guid)
            d.node_guid = 0xb8cef60300a0b000ull + (i << 4);
        if (!d.sys_image_guid)
            d.sys_image_guid = d.node_guid;
        if (d.pci_addr.empty()) {
            char b[32];
            snprintf(b, sizeof b, "0000:%02zx:00.0", 8 + i);
            d.pci_addr = b;
        }
        for (size_t p = 0; p < d.ports.size(); ++p) {
            PortCfg& pc = d.ports[p];
            if (!pc.ethernet) {
                if (!pc.lid) {
                    while (lid_taken(next_lid, next_lid + (1u << pc.lmc) - 1))
                        ++next_lid;
                    pc.lid = next_lid;
                }
                next_lid = static_cast<uint16_t>(std::max<unsigned>(next_lid, pc.lid + (1u << pc.lmc)));
                if (!pc.sm_lid)
                    pc.sm_lid = 1;
                if (!pc.port_guid)
                    pc.port_guid = d.node_guid + p;
                // the IPoIB address rdma_cm resolves (not in the GID table)
                if (!pc.ipv4)
                    pc.ipv4 = (10u << 24) | (80u << 16) | static_cast<uint32_t>((i * 2 + p + 1) & 0xffff);
            } else {
                pc.lid = 0;
                pc.sm_lid = 0;
                pc.lmc = 0;
                static const uint8_t zero[6] = {};
                if (!memcmp(pc.mac, zero, 6)) {
                    const uint8_t mac[6] = {0xb8, 0xce, 0xf6, 0x00, static_cast<uint8_t>(i), static_cast<uint8_t>(p)};
                    memcpy(pc.mac, mac, 6);
                }
                if (!pc.ipv4)
                    pc.ipv4 = (10u << 24) | (79u << 16) | static_cast<uint32_t>((i * 2 + p + 1) & 0xffff);
                if (pc.netdev.empty())
                    pc.netdev = "uvsim" + std::to_string(i * 2 + p);
                // IB speeds do not apply to Ethernet: 100GbE shows as 4x EDR-like.
            }
        }
    }
    for (DevCfg& d : c.devices)
        for (PortCfg& pc : d.ports)
            pc.gids = make_gids(pc);
    if (c.run_dir.empty()) {
        const char* t = getenv("TMPDIR");
        c.run_dir = std::string(t && *t ? t : "/tmp") + "/uverbs-sim-" + std::to_string(getuid());
    }
}

namespace {

std::string read_whole(const char* path, bool& ok) {
    std::ifstream f(path);
    ok = static_cast<bool>(f);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

Config load() {
    Config c;
    std::string err;
    if (const char* path = getenv("UVERBS_SIM_CONFIG"); path && *path) {
        bool ok;
        std::string text = read_whole(path, ok);
        if (!ok) {
            fprintf(stderr, "uverbs-sim: cannot read config %s: %s; using defaults\n", path, strerror(errno));
        } else if (auto p = parse_config(text, err)) {
            c = std::move(*p);
        } else {
            fprintf(stderr, "uverbs-sim: %s: %s; using defaults\n", path, err.c_str());
        }
    }
    // UVERBS_SIM_DEVICES=N (when the file named none) and UVERBS_SIM_LINK=eth
    if (const char* n = getenv("UVERBS_SIM_DEVICES"); n && *n && c.devices.empty()) {
        int cnt = atoi(n);
        if (cnt < 1 || cnt > 16) {
            fprintf(stderr, "uverbs-sim: UVERBS_SIM_DEVICES must be 1-16; using 1\n");
            cnt = 1;
        }
        for (int i = 0; i < cnt; ++i) {
            c.devices.emplace_back();
            c.devices.back().name = "mlx5_" + std::to_string(i);
            c.devices.back().ports.resize(1);
        }
    }
    if (const char* l = getenv("UVERBS_SIM_LINK"); l && *l) {
        if (c.devices.empty()) {
            c.devices.emplace_back();
            c.devices.back().name = "mlx5_0";
            c.devices.back().ports.resize(1);
        }
        for (DevCfg& d : c.devices)
            for (PortCfg& p : d.ports) {
                std::string e = set_port_key(p, "link_layer", l);
                if (!e.empty())
                    fprintf(stderr, "uverbs-sim: UVERBS_SIM_LINK: %s\n", e.c_str());
            }
    }
    if (const char* f = getenv("UVERBS_SIM_FAULTS"); f && *f) {
        // key=value,key=value
        std::string s = f;
        size_t i = 0;
        while (i < s.size()) {
            size_t j = s.find(',', i);
            std::string kv = s.substr(i, j == std::string::npos ? std::string::npos : j - i);
            size_t eq = kv.find('=');
            std::string e = eq == std::string::npos ? "needs key=value"
                                                    : set_fault_key(c.faults, kv.substr(0, eq), kv.substr(eq + 1));
            if (!e.empty())
                fprintf(stderr, "uverbs-sim: UVERBS_SIM_FAULTS '%s': %s\n", kv.c_str(), e.c_str());
            if (j == std::string::npos)
                break;
            i = j + 1;
        }
    }
    if (const char* d = getenv("UVERBS_SIM_DIR"); d && *d)
        c.run_dir = d;
    if (const char* t = getenv("UVERBS_SIM_TRACE"); t && *t)
        c.trace_file = t;
    finish_config(c);
    return c;
}

}  // namespace

const Config& cfg() {
    // never destroyed: the model thread may still run during exit()
    static const Config* c = new Config(load());
    return *c;
}

}  // namespace uvsim
