// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "netdisc_common.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <strings.h>
#include <unistd.h>

namespace netdisc {

namespace {
constexpr unsigned FDR10 = 0x01;  // Mellanox LinkSpeedActive/Supported bit
constexpr unsigned CAP_EXT_SPEEDS = 1u << 14;  // IsExtendedSpeedsSupported

// The PortInfo whose CapabilityMask applies to a port: a switch's is on its
// port 0 (null when the switch has none), anyone else's is the port's own.
const uint8_t* caps_info(const ibnd_port_t* port) {
    if (port->node->type != IB_NODE_SWITCH)
        return port->info;
    return port->node->ports && port->node->ports[0] ? port->node->ports[0]->info : nullptr;
}

// Widest width both ends support, as a LinkWidthActive value.
unsigned widest(unsigned supported) {
    unsigned shift = 0;  // 1x
    if (supported & 8)
        shift = 3;  // 12x
    else if (supported & 4)
        shift = 2;  // 8x
    else if (supported & 2)
        shift = 1;  // 4x
    else if (supported & 0x10)
        shift = 4;  // 2x
    return 1u << shift;
}

// Highest bit set (1 for 0).
unsigned top_bit(unsigned v) {
    unsigned r = 0;
    while (v >>= 1)
        r++;
    return 1u << r;
}

}  // namespace

unsigned field(const uint8_t* buf, enum MAD_FIELDS f) { return mad_get_field(const_cast<uint8_t*>(buf), 0, f); }

std::string dumped(enum MAD_FIELDS f, int value) {
    char buf[64];
    mad_dump_val(f, buf, sizeof(buf), &value);
    return buf;
}

bool desc_differs(const ibnd_node_t* a, const ibnd_node_t* b) {
    return memcmp(a->nodedesc, b->nodedesc, IB_SMP_DATA_SIZE) != 0;
}

ActiveLink active_link(const ibnd_port_t* port) {
    ActiveLink l;
    l.width = field(port->info, IB_PORT_LINK_WIDTH_ACTIVE_F);
    l.speed = field(port->info, IB_PORT_LINK_SPEED_ACTIVE_F);
    const uint8_t* caps = caps_info(port);
    if (!caps)
        l.width = l.speed = 0;
    else if (field(caps, IB_PORT_CAPMASK_F) & CAP_EXT_SPEEDS)
        l.espeed = field(port->info, IB_PORT_LINK_SPEED_EXT_ACTIVE_F);
    return l;
}

void could_be(char* width_msg, char* speed_msg, int msg_size, const ibnd_port_t* port) {
    char buf[64];
    const ibnd_port_t* rem = port->remoteport;
    unsigned max_width =
        widest(field(port->info, IB_PORT_LINK_WIDTH_SUPPORTED_F) & field(rem->info, IB_PORT_LINK_WIDTH_SUPPORTED_F));
    if (!(max_width & field(port->info, IB_PORT_LINK_WIDTH_ACTIVE_F)))
        snprintf(width_msg, msg_size, "Could be %s", mad_dump_val(IB_PORT_LINK_WIDTH_ACTIVE_F, buf, 64, &max_width));

    auto caps = [](const ibnd_port_t* p) {
        const uint8_t* info = caps_info(p);
        return info ? field(info, IB_PORT_CAPMASK_F) : 0u;
    };
    if ((caps(port) & CAP_EXT_SPEEDS) && (caps(rem) & CAP_EXT_SPEEDS)) {
        unsigned ours = field(port->info, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F);
        unsigned theirs = field(rem->info, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F);
        if (ours && theirs) {
            unsigned max_speed = top_bit(ours & theirs);
            if (!(max_speed & field(port->info, IB_PORT_LINK_SPEED_EXT_ACTIVE_F)))
                snprintf(speed_msg, msg_size, "Could be %s",
                         mad_dump_val(IB_PORT_LINK_SPEED_EXT_ACTIVE_F, buf, 64, &max_speed));
            return;
        }
    }

    bool fdr10 = (field(port->ext_info, IB_MLNX_EXT_PORT_LINK_SPEED_SUPPORTED_F) & FDR10) &&
        (field(rem->ext_info, IB_MLNX_EXT_PORT_LINK_SPEED_SUPPORTED_F) & FDR10);
    if (fdr10) {
        if (!(field(port->ext_info, IB_MLNX_EXT_PORT_LINK_SPEED_ACTIVE_F) & FDR10)) {
            // QDR and FDR10 share a signalling rate: say so.
            if (field(port->info, IB_PORT_LINK_SPEED_ACTIVE_F) == 4)
                snprintf(speed_msg, msg_size, "Could be FDR10 (Found link at QDR but expected speed is FDR10)");
            else
                snprintf(speed_msg, msg_size, "Could be FDR10");
        }
        return;
    }

    unsigned max_speed =
        top_bit(field(port->info, IB_PORT_LINK_SPEED_SUPPORTED_F) & field(rem->info, IB_PORT_LINK_SPEED_SUPPORTED_F));
    if (!(max_speed & field(port->info, IB_PORT_LINK_SPEED_ACTIVE_F)))
        snprintf(speed_msg, msg_size, "Could be %s", mad_dump_val(IB_PORT_LINK_SPEED_ACTIVE_F, buf, 64, &max_speed));
}

std::string link_text(const ibnd_port_t* port, int state, int phys) {
    char buf[256];
    int n;
    if (state == static_cast<int>(IB_LINK_DOWN)) {
        // a down port's other PortInfo fields carry no meaning (C14-24.2.1)
        n = snprintf(buf, sizeof(buf), "(              %6s/%8s)", dumped(IB_PORT_STATE_F, state).c_str(),
                     dumped(IB_PORT_PHYS_STATE_F, phys).c_str());
    } else {
        ActiveLink l = active_link(port);
        bool fdr10 = field(port->ext_info, IB_MLNX_EXT_PORT_LINK_SPEED_ACTIVE_F) & FDR10;
        std::string speed_str;
        if (l.espeed)
            speed_str = dumped(IB_PORT_LINK_SPEED_EXT_ACTIVE_F, l.espeed);
        else if (fdr10)
            speed_str = "10.0 Gbps (FDR10)";
        else
            speed_str = dumped(IB_PORT_LINK_SPEED_ACTIVE_F, l.speed);
        n = snprintf(buf, sizeof(buf), "(%3s %18s %6s/%8s)", dumped(IB_PORT_LINK_WIDTH_ACTIVE_F, l.width).c_str(),
                     speed_str.c_str(), dumped(IB_PORT_STATE_F, state).c_str(),
                     dumped(IB_PORT_PHYS_STATE_F, phys).c_str());
    }
    return std::string(buf, std::min<size_t>(n, sizeof(buf) - 1));
}

std::string ext_num(const ibnd_port_t* port) {
    return port->ext_portnum ? std::to_string(port->ext_portnum) : std::string();
}

std::string peer_text(ibnd_port_t* port, bool with_guid, const ibdiag::NodeNameMap& map) {
    ibnd_port_t* peer = port->remoteport;
    char width_msg[256] = "", speed_msg[256] = "";
    could_be(width_msg, speed_msg, sizeof(width_msg), port);
    char peer_guid[32] = "";
    if (with_guid)
        snprintf(peer_guid, sizeof(peer_guid), "0x%016" PRIx64 " ", peer->guid);
    char buf[256];
    int n = snprintf(buf, sizeof(buf), "%s%6d %4d[%2s] \"%s\" (%s %s)\n", peer_guid,
                     peer->base_lid ? peer->base_lid : peer->node->smalid, peer->portnum, ext_num(peer).c_str(),
                     map.remap(peer->node->guid, peer->node->nodedesc).c_str(), width_msg, speed_msg);
    if (n > static_cast<int>(sizeof(buf)))
        fputs("WARN: string buffer overflow\n", stderr);
    return std::string(buf, std::min<size_t>(n, sizeof(buf) - 1));
}

void setup_scan(struct ibmad_port* srcport, ibnd_config& config) {
    const ibdiag::Settings& cfg = ibdiag::cfg;
    smp_mkey_set(srcport, cfg.mkey);
    if (cfg.timeout) {
        mad_rpc_set_timeout(srcport, cfg.timeout);
        config.timeout_ms = cfg.timeout;
    }
    config.flags = cfg.ibnetdisc_flags;
    config.mkey = cfg.mkey;
}

void reject_cache_with_dr(const std::string& dr_path, const std::string& cache, struct ibmad_port* srcport,
                          int status) {
    if (dr_path.empty() || cache.empty())
        return;
    mad_rpc_close_port(srcport);
    fputs("Cannot specify cache and direct route path\n", stderr);
    exit(status);
}

Fabric load_or_discover(const std::string& cache, ib_portid_t* start, ibnd_config& config, const char* partial_failed,
                        int status) {
    Fabric fabric;
    if (!cache.empty()) {
        fabric.reset(ibnd_load_fabric(cache.c_str(), 0));
        if (!fabric) {
            fputs("loading cached fabric failed\n", stderr);
            exit(status);
        }
        return fabric;
    }
    const ibdiag::Settings& cfg = ibdiag::cfg;
    if (start) {
        if (!config.max_hops)
            config.max_hops = 1;
        fabric.reset(ibnd_discover_fabric(cfg.ca, cfg.ca_port, start, &config));
        if (!fabric)  // IBWARN's format, under the name it always had
            fprintf(stderr, "ibwarn: [%d] main: %s\n", (int)getpid(), partial_failed);
    }
    if (!fabric)
        fabric.reset(ibnd_discover_fabric(cfg.ca, cfg.ca_port, nullptr, &config));
    if (!fabric) {
        fputs("discover failed\n", stderr);
        exit(status);
    }
    return fabric;
}

int parse_check_keys(const char* arg, std::span<const CheckKey> keys, unsigned& checks) {
    checks = 0;
    std::string_view rest(arg);
    while (!rest.empty()) {
        size_t comma = rest.find(',');
        std::string key(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        if (key.empty())  // strtok skips empty fields
            continue;
        bool known = false;
        for (const auto& k : keys) {
            if (!strcasecmp(key.c_str(), k.key)) {
                checks |= k.bit;
                known = true;
            }
        }
        if (!known) {
            fprintf(stderr, "invalid diff check key: %s\n", key.c_str());
            return -1;
        }
    }
    return 0;
}

}  // namespace netdisc
