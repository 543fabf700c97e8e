// ibnetdiscover: walk the subnet with libibnetdisc (or load a cache file)
// and print its topology, a node list, a ports report, or the differences
// against an earlier cache.
//
// The topology text is a file format other programs parse (ibhosts,
// ibswitches, ibidsverify, opensm's topology readers...): every field, tab
// and blank below is part of it.

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <unistd.h>

#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include "ibdiag_common.h"
#include "netdisc_common.h"

namespace {

using netdisc::desc_differs;
using netdisc::Fabric;
using netdisc::field;

// --diffcheck keys
enum : unsigned {
    CHECK_SWITCH = 1u << 0,
    CHECK_CA = 1u << 1,
    CHECK_ROUTER = 1u << 2,
    CHECK_PORT = 1u << 3,
    CHECK_LID = 1u << 4,
    CHECK_NODEDESC = 1u << 5,
    CHECK_DEFAULT = CHECK_SWITCH | CHECK_CA | CHECK_ROUTER | CHECK_PORT,
};

struct Options {
    std::string name_map_file;
    std::string cache_out;
    std::string cache_in;
    std::string diff_against;
    unsigned checks = CHECK_DEFAULT;
    unsigned list_types = 0;  // bit per IB_NODE_* type
    bool group = false;
    bool ports_report = false;
    bool max_hops = false;
    bool full = false;
};

Options opts;
FILE* out = stdout;
std::unique_ptr<ibdiag::NodeNameMap> name_map;

// The names ibnetdiscover has always printed (not libibmad's dump helpers).
const char* speed_name(unsigned speed) {
    switch (speed) {
    case 1: return "SDR";
    case 2: return "DDR";
    case 4: return "QDR";
    default: return "???";
    }
}

const char* ext_speed_name(unsigned espeed) {
    switch (espeed) {
    case 1: return "FDR";
    case 2: return "EDR";
    case 4: return "HDR";
    case 8: return "NDR";
    default: return "???";
    }
}

const char* width_name(unsigned width) {
    switch (width) {
    case 1: return "1x";
    case 2: return "4x";
    case 4: return "8x";
    case 8: return "12x";
    case 16: return "2x";
    default: return "??";
    }
}

const char* link_speed(unsigned speed, unsigned espeed) { return espeed ? ext_speed_name(espeed) : speed_name(speed); }

const char* short_type(const ibnd_node_t* node) {
    switch (node->type) {
    case IB_NODE_SWITCH: return "SW";
    case IB_NODE_CA: return "CA";
    case IB_NODE_ROUTER: return "RT";
    default: return "??";
    }
}

// "S-<guid>" with its quotes: the node's name in the topology file.
std::string quoted_id(const ibnd_node_t* node) {
    char letter = '?';
    switch (node->type) {
    case IB_NODE_SWITCH: letter = 'S'; break;
    case IB_NODE_CA: letter = 'H'; break;
    case IB_NODE_ROUTER: letter = 'R'; break;
    }
    char buf[32];
    snprintf(buf, sizeof(buf), "\"%c-%016" PRIx64 "\"", letter, node->guid);
    return buf;
}

// -d: the reference's debug lines, under its function names (they are part
// of what users see with -d; the pointers differ from run to run anyway).
void trace(const char* fn, const char* what, const void* p) {
    if (ibdebug)
        printf("ibdebug: [%d] %s: %s %p\n\n", (int)getpid(), fn, what, p);
}

std::string mapped_name(const ibnd_node_t* node) { return name_map->remap(node->guid, node->nodedesc); }

std::string cleaned(const char* desc) { return ibdiag::clean_nodedesc(desc); }

const char* prefix_or_empty(const char* p) { return p ? p : ""; }

uint64_t field64(const uint8_t* buf, enum MAD_FIELDS f) { return mad_get_field64(const_cast<uint8_t*>(buf), 0, f); }

bool has_ext_speeds(const uint8_t* portinfo) {
    // CapabilityMask bit 14: IsExtendedSpeedsSupported
    return field(portinfo, IB_PORT_CAPMASK_F) & (1u << 14);
}

bool in_numbered_chassis(const ibnd_node_t* node) { return node->chassis && node->chassis->chassisnum; }

void print_ids(ibnd_node_t* node, bool group, const char* chname, const char* prefix) {
    const char* pre = prefix_or_empty(prefix);
    uint64_t sysimg = field64(node->info, IB_NODE_SYSTEM_GUID_F);
    fprintf(out, "\n%svendid=0x%x\n", pre, field(node->info, IB_NODE_VENDORID_F));
    fprintf(out, "%sdevid=0x%x\n", pre, field(node->info, IB_NODE_DEVID_F));
    if (sysimg)
        fprintf(out, "%ssysimgguid=0x%" PRIx64, pre, sysimg);
    bool chassis_note = group && in_numbered_chassis(node);
    if (chassis_note) {
        fprintf(out, "\t\t# Chassis %d", node->chassis->chassisnum);
        if (chname)
            fprintf(out, " (%s)", cleaned(chname).c_str());
        if (ibnd_is_xsigo_tca(node->guid) && node->ports[1] && node->ports[1]->remoteport)
            fprintf(out, " slot %d", node->ports[1]->remoteport->portnum);
    }
    if (sysimg || chassis_note)
        fputc('\n', out);
}

// The printers below share one signature per role so that the diff can
// use the switch or the CA flavour.
using HeaderFn = void (*)(ibnd_node_t*, bool, const char*, const char*, const char*);
using DetailFn = void (*)(ibnd_node_t*, const char*);
using PortFn = void (*)(ibnd_port_t*, bool, const char*);

void switch_detail(ibnd_node_t* node, const char* prefix) {
    std::string name = mapped_name(node);
    fprintf(out, "%sSwitch\t%d %s\t\t# \"%s\" %s port 0 lid %d lmc %d", prefix_or_empty(prefix), node->numports,
            quoted_id(node).c_str(), name.c_str(), node->smaenhsp0 ? "enhanced" : "base", node->smalid, node->smalmc);
}

void switch_header(ibnd_node_t* node, bool group, const char* chname, const char* id_prefix, const char* prefix) {
    print_ids(node, group, chname, id_prefix);
    fprintf(out, "%sswitchguid=0x%" PRIx64, prefix_or_empty(id_prefix), node->guid);
    fprintf(out, "(%" PRIx64 ")", field64(node->info, IB_NODE_PORT_GUID_F));
    if (group) {
        fputs("\t# ", out);
        if (const char* type = ibnd_get_chassis_type(node))
            fprintf(out, "%s ", type);
        char slot[256];
        if (const char* s = ibnd_get_chassis_slot_str(node, slot, sizeof(slot)))
            fputs(s, out);
    }
    fputc('\n', out);
    switch_detail(node, prefix);
    fputc('\n', out);
}

void ca_detail(ibnd_node_t* node, const char* prefix) {
    const char* kind = node->type == IB_NODE_CA ? "Ca" : node->type == IB_NODE_ROUTER ? "Rt" : "???";
    fprintf(out, "%s%s\t%d %s\t\t# \"%s\"", prefix_or_empty(prefix), kind, node->numports, quoted_id(node).c_str(),
            cleaned(node->nodedesc).c_str());
}

void ca_header(ibnd_node_t* node, bool group, const char* chname, const char* id_prefix, const char* prefix) {
    print_ids(node, group, chname, id_prefix);
    const char* kind = node->type == IB_NODE_CA ? "ca" : node->type == IB_NODE_ROUTER ? "rt" : "???";
    fprintf(out, "%s%sguid=0x%" PRIx64 "\n", prefix_or_empty(id_prefix), kind, node->guid);
    ca_detail(node, prefix);
    if (group && ibnd_is_xsigo_hca(node->guid))
        fputs(" (scp)", out);
    fputc('\n', out);
}

// "[ext N]" of a chassis port, shown only when grouping
std::string ext_port(const ibnd_port_t* port, bool group) {
    if (!group || !port->ext_portnum)
        return {};
    return "[ext " + std::to_string(port->ext_portnum) + "]";
}

void switch_port(ibnd_port_t* port, bool group, const char* prefix) {
    unsigned width = field(port->info, IB_PORT_LINK_WIDTH_ACTIVE_F);
    unsigned speed = field(port->info, IB_PORT_LINK_SPEED_ACTIVE_F);
    unsigned vlcap = field(port->info, IB_PORT_VL_CAP_F);
    unsigned espeed = 0;
    ibnd_port_t* peer = port->remoteport;
    ibnd_node_t* peer_node = peer->node;

    if (ibdebug)
        printf("ibdebug: [%d] out_switch_port: port %p:%d remoteport %p\n\n", (int)getpid(), (void*)port, port->portnum,
               (void*)peer);
    fprintf(out, "%s[%d]%s", prefix_or_empty(prefix), port->portnum, ext_port(port, group).c_str());
    std::string peer_name = mapped_name(peer_node);

    // a switch's capabilities live in its port 0
    if (ibnd_port_t* p0 = port->node->ports[0]) {
        if (has_ext_speeds(p0->info))
            espeed = field(port->info, IB_PORT_LINK_SPEED_EXT_ACTIVE_F);
    } else {
        speed = 0;
    }
    fprintf(out, "\t%s[%d]%s", quoted_id(peer_node).c_str(), peer->portnum, ext_port(peer, group).c_str());
    if (peer_node->type != IB_NODE_SWITCH)
        fprintf(out, "(%" PRIx64 ") ", peer->guid);
    fprintf(out, "\t\t# \"%s\" lid %d %s%s", peer_name.c_str(),
            peer_node->type == IB_NODE_SWITCH ? peer_node->smalid : peer->base_lid, width_name(width),
            link_speed(speed, espeed));
    if (opts.full)
        fprintf(out, " s=%d w=%d v=%d", speed, width, vlcap);
    if (ibnd_is_xsigo_tca(peer->guid))
        fprintf(out, " slot %d", port->portnum);
    else if (ibnd_is_xsigo_hca(peer->guid))
        fputs(" (scp)", out);
    fputc('\n', out);
}

void ca_port(ibnd_port_t* port, bool group, const char* prefix) {
    unsigned width = field(port->info, IB_PORT_LINK_WIDTH_ACTIVE_F);
    unsigned speed = field(port->info, IB_PORT_LINK_SPEED_ACTIVE_F);
    unsigned vlcap = field(port->info, IB_PORT_VL_CAP_F);
    ibnd_port_t* peer = port->remoteport;
    ibnd_node_t* peer_node = peer->node;

    fprintf(out, "%s[%d]", prefix_or_empty(prefix), port->portnum);
    if (port->node->type != IB_NODE_SWITCH)
        fprintf(out, "(%" PRIx64 ") ", port->guid);
    fprintf(out, "\t%s[%d]%s", quoted_id(peer_node).c_str(), peer->portnum, ext_port(peer, group).c_str());
    if (peer_node->type != IB_NODE_SWITCH)
        fprintf(out, " (%" PRIx64 ") ", peer->guid);
    std::string peer_name = mapped_name(peer_node);
    unsigned espeed = has_ext_speeds(port->info) ? field(port->info, IB_PORT_LINK_SPEED_EXT_ACTIVE_F) : 0;
    fprintf(out, "\t\t# lid %d lmc %d \"%s\" lid %d %s%s", port->base_lid, port->lmc, peer_name.c_str(),
            peer_node->type == IB_NODE_SWITCH ? peer_node->smalid : peer->base_lid, width_name(width),
            link_speed(speed, espeed));
    if (opts.full)
        fprintf(out, " s=%d w=%d v=%d", speed, width, vlcap);
    fputc('\n', out);
}

template <typename Fn>
void each_linked_port(ibnd_node_t* node, Fn fn) {
    for (int p = 1; p <= node->numports; p++) {
        ibnd_port_t* port = node->ports[p];
        if (port && port->remoteport)
            fn(port);
    }
}

void print_switch(ibnd_node_t* node, bool group, const char* chname) {
    switch_header(node, group, chname, nullptr, nullptr);
    each_linked_port(node, [&](ibnd_port_t* p) { switch_port(p, group, nullptr); });
}

void print_ca(ibnd_node_t* node, bool group, const char* chname) {
    ca_header(node, group, chname, nullptr, nullptr);
    each_linked_port(node, [&](ibnd_port_t* p) { ca_port(p, group, nullptr); });
}

// ibnd_iter_nodes_type with a lambda
template <typename Fn>
void for_each_node(ibnd_fabric_t* fabric, int type, Fn fn) {
    ibnd_iter_nodes_type(
        fabric, [](ibnd_node_t* node, void* ctx) { (*static_cast<Fn*>(ctx))(node); }, type, &fn);
}

void print_chassis(ibnd_fabric_t* fabric, ibnd_chassis_t* ch) {
    fprintf(out, "\nChassis %u", ch->chassisnum);
    uint64_t chguid = ibnd_get_chassis_guid(fabric, ch->chassisnum);
    if (chguid)
        fprintf(out, " (guid 0x%" PRIx64 ")", chguid);
    fputc('\n', out);

    const char* chname = nullptr;
    if (ibnd_is_xsigo_guid(chguid)) {
        for (ibnd_node_t* n = ch->nodes; n; n = n->next_chassis_node) {
            if (ibnd_is_xsigo_hca(n->guid)) {
                chname = n->nodedesc;
                fprintf(out, "Hostname: %s\n", cleaned(n->nodedesc).c_str());
            }
        }
    }
    fputs("\n# Spine Nodes", out);
    for (int i = 1; i <= SPINES_MAX_NUM; i++)
        if (ch->spinenode[i])
            print_switch(ch->spinenode[i], true, chname);
    fputs("\n# Line Nodes", out);
    for (int i = 1; i <= LINES_MAX_NUM; i++)
        if (ch->linenode[i])
            print_switch(ch->linenode[i], true, chname);
    fputs("\n# Chassis Switches", out);
    for (ibnd_node_t* n = ch->nodes; n; n = n->next_chassis_node)
        if (n->type == IB_NODE_SWITCH)
            print_switch(n, true, chname);
    fputs("\n# Chassis CAs", out);
    for (ibnd_node_t* n = ch->nodes; n; n = n->next_chassis_node)
        if (n->type == IB_NODE_CA)
            print_ca(n, true, chname);
}

void print_topology(ibnd_fabric_t* fabric, bool group) {
    time_t now = time(nullptr);
    fprintf(out, "#\n# Topology file: generated on %s#\n", ctime(&now));
    if (opts.max_hops)
        fprintf(out, "# Reported max hops discovered: %u\n# Total MADs used: %u\n", fabric->maxhops_discovered,
                fabric->total_mads_used);
    fprintf(out, "# Initiated from node %016" PRIx64 " port %016" PRIx64 "\n", fabric->from_node->guid,
            field64(fabric->from_node->info, IB_NODE_PORT_GUID_F));

    if (group) {
        for (ibnd_chassis_t* ch = fabric->chassis; ch; ch = ch->next)
            if (ch->chassisnum)
                print_chassis(fabric, ch);
        fputs("\nNon-Chassis Nodes\n", out);
        for_each_node(fabric, IB_NODE_SWITCH, [](ibnd_node_t* n) {
            trace("switch_iter_func", "SWITCH: node", n);
            if (!in_numbered_chassis(n))
                print_switch(n, true, nullptr);
        });
    } else {
        for_each_node(fabric, IB_NODE_SWITCH, [](ibnd_node_t* n) {
            trace("switch_iter_func", "SWITCH: node", n);
            print_switch(n, false, nullptr);
        });
    }
    for (int type : {IB_NODE_CA, IB_NODE_ROUTER}) {
        for_each_node(fabric, type, [group, type](ibnd_node_t* n) {
            if (type == IB_NODE_CA)
                trace("ca_iter_func", "CA: node", n);
            else
                trace("router_iter_func", "RT: node", n);
            if (group && in_numbered_chassis(n))
                return;
            print_ca(n, group, nullptr);
        });
    }
}

void list_nodes(ibnd_fabric_t* fabric) {
    auto one = [](ibnd_node_t* node) {
        const char* kind = node->type == IB_NODE_SWITCH ? "Switch"
            : node->type == IB_NODE_CA                  ? "Ca"
            : node->type == IB_NODE_ROUTER              ? "Router"
                                                        : "???";
        std::string name = mapped_name(node);
        fprintf(out, "%s\t : 0x%016" PRIx64 " ports %d devid 0x%x vendid 0x%x \"%s\"\n", kind, node->guid,
                node->numports, field(node->info, IB_NODE_DEVID_F), field(node->info, IB_NODE_VENDORID_F),
                name.c_str());
    };
    for (int type : {IB_NODE_CA, IB_NODE_SWITCH, IB_NODE_ROUTER})
        if (opts.list_types & (1u << type))
            for_each_node(fabric, type, one);
}

// -p: one line per port, always on stdout (even with an output file)
void ports_report(ibnd_node_t* node, void*) {
    for (int p = node->numports; p > 0; p--) {
        ibnd_port_t* port = node->ports[p];
        if (!port)
            continue;
        netdisc::ActiveLink l = netdisc::active_link(port);
        std::string name = mapped_name(node);
        printf("%2s %5d %2d 0x%016" PRIx64 " %s %s", short_type(node),
               node->type == IB_NODE_SWITCH ? node->smalid : port->base_lid, port->portnum, port->guid,
               width_name(l.width), link_speed(l.speed, l.espeed));
        if (ibnd_port_t* peer = port->remoteport) {
            std::string peer_name = mapped_name(peer->node);
            printf(" - %2s %5d %2d 0x%016" PRIx64 " ( '%s' - '%s' )\n", short_type(peer->node),
                   peer->node->type == IB_NODE_SWITCH ? peer->node->smalid : peer->base_lid, peer->portnum, peer->guid,
                   name.c_str(), peer_name.c_str());
        } else {
            printf("%36s'%s'\n", "", name.c_str());
        }
    }
}

// --diff ------------------------------------------------------------------

struct DiffSide {
    unsigned checks;
    ibnd_fabric_t* other;
    const char* mine;  // prefix of this fabric's lines
    const char* theirs;  // prefix of the other fabric's lines
    HeaderFn header;
    DetailFn detail;
    PortFn port;
};

void diff_ports(ibnd_node_t* a_node, ibnd_node_t* b_node, bool& header_done, const DiffSide& d) {
    auto header_once = [&] {
        if (!header_done) {
            d.header(a_node, false, nullptr, nullptr, nullptr);
            header_done = true;
        }
    };
    for (int p = 1; p <= a_node->numports; p++) {
        ibnd_port_t* a = a_node->ports[p];
        ibnd_port_t* b = b_node->ports[p];
        int a_out = 0, b_out = 0;
        bool both = a && b;
        bool both_linked = both && a->remoteport && b->remoteport;

        if (d.checks & CHECK_PORT) {
            if ((a && !b) || (both && a->remoteport && !b->remoteport)) {
                a_out++;
            } else if ((!a && b) || (both && !a->remoteport && b->remoteport)) {
                b_out++;
            } else if (both && (a->guid != b->guid || (both_linked && a->remoteport->guid != b->remoteport->guid))) {
                a_out++;
                b_out++;
            }
        }
        if ((d.checks & CHECK_LID) && both && a->base_lid != b->base_lid) {
            a_out++;
            b_out++;
        }
        if ((d.checks & CHECK_PORT) && (d.checks & CHECK_NODEDESC) && both_linked &&
            desc_differs(a->remoteport->node, b->remoteport->node)) {
            // counted twice by the reference too; only "non-zero" matters
            a_out += 2;
            b_out += 2;
        }
        if ((d.checks & CHECK_PORT) && (d.checks & CHECK_LID) && both_linked &&
            a->remoteport->base_lid != b->remoteport->base_lid) {
            a_out++;
            b_out++;
        }
        if (a_out) {
            header_once();
            d.port(a, false, d.mine);
        }
        if (b_out) {
            header_once();
            d.port(b, false, d.theirs);
        }
    }
}

void diff_node(ibnd_node_t* a_node, const DiffSide& d) {
    trace("diff_iter_func", "DEBUG: fabric1_node", a_node);
    ibnd_node_t* b_node = ibnd_find_node_guid(d.other, a_node->guid);
    if (!b_node) {
        d.header(a_node, false, nullptr, d.mine, d.mine);
        each_linked_port(a_node, [&](ibnd_port_t* p) { d.port(p, false, d.mine); });
        return;
    }
    if (!(d.checks & (CHECK_PORT | CHECK_LID | CHECK_NODEDESC)))
        return;

    bool header_done = false;
    if (((d.checks & CHECK_LID) && a_node->smalid != b_node->smalid) ||
        ((d.checks & CHECK_NODEDESC) && desc_differs(a_node, b_node))) {
        d.header(a_node, false, nullptr, nullptr, d.mine);
        d.detail(b_node, d.theirs);
        fputc('\n', out);
        header_done = true;
    }
    if (a_node->numports != b_node->numports) {
        if (!header_done)
            d.header(a_node, false, nullptr, nullptr, nullptr);
        fprintf(out, "%snumports = %d\n", d.mine, a_node->numports);
        fprintf(out, "%snumports = %d\n", d.theirs, b_node->numports);
        return;
    }
    if (d.checks & (CHECK_PORT | CHECK_LID))
        diff_ports(a_node, b_node, header_done, d);
}

void diff_type(ibnd_fabric_t* orig, ibnd_fabric_t* now, int type, HeaderFn h, DetailFn det, PortFn p) {
    DiffSide forward{opts.checks, now, "< ", "> ", h, det, p};
    for_each_node(orig, type, [&](ibnd_node_t* n) { diff_node(n, forward); });
    // the other way round only finds nodes that are new: the per-port
    // checks already ran on every node both fabrics hold
    DiffSide backward{opts.checks & ~(CHECK_PORT | CHECK_LID | CHECK_NODEDESC), orig, "> ", "< ", h, det, p};
    for_each_node(now, type, [&](ibnd_node_t* n) { diff_node(n, backward); });
}

void print_diff(ibnd_fabric_t* orig, ibnd_fabric_t* now) {
    if (opts.checks & CHECK_SWITCH)
        diff_type(orig, now, IB_NODE_SWITCH, switch_header, switch_detail, switch_port);
    if (opts.checks & CHECK_CA)
        diff_type(orig, now, IB_NODE_CA, ca_header, ca_detail, ca_port);
    if (opts.checks & CHECK_ROUTER)
        diff_type(orig, now, IB_NODE_ROUTER, ca_header, ca_detail, ca_port);
}

int parse_checks(const char* arg) {
    static const netdisc::CheckKey keys[] = {
        {"sw", CHECK_SWITCH}, {"ca", CHECK_CA},   {"router", CHECK_ROUTER},
        {"port", CHECK_PORT}, {"lid", CHECK_LID}, {"nodedesc", CHECK_NODEDESC},
    };
    return netdisc::parse_check_keys(arg, keys, opts.checks);
}

int take_option(ibnd_config& cfg, int ch, char* arg) {
    switch (ch) {
    case 1: opts.name_map_file = arg; break;
    case 2: opts.cache_out = arg; break;
    case 3: opts.cache_in = arg; break;
    case 4: opts.diff_against = arg; break;
    case 5: return parse_checks(arg);
    case 's': cfg.show_progress = 1; break;
    case 'f': opts.full = true; break;
    case 'l': opts.list_types = (1u << IB_NODE_CA) | (1u << IB_NODE_SWITCH) | (1u << IB_NODE_ROUTER); break;
    case 'g': opts.group = true; break;
    case 'S': opts.list_types = 1u << IB_NODE_SWITCH; break;
    case 'H': opts.list_types = 1u << IB_NODE_CA; break;
    case 'R': opts.list_types = 1u << IB_NODE_ROUTER; break;
    case 'p': opts.ports_report = true; break;
    case 'm': opts.max_hops = true; break;
    case 'o': cfg.max_smps = strtoul(arg, nullptr, 0); break;
    default: return -1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    ibnd_config config{};
    static const ibdiag::Option options[] = {
        {"full", 'f', 0, nullptr, "show full information (ports' speed and width, vlcap)"},
        {"show", 's', 0, nullptr, "show more information"},
        {"list", 'l', 0, nullptr, "list of connected nodes"},
        {"grouping", 'g', 0, nullptr, "show grouping"},
        {"Hca_list", 'H', 0, nullptr, "list of connected CAs"},
        {"Switch_list", 'S', 0, nullptr, "list of connected switches"},
        {"Router_list", 'R', 0, nullptr, "list of connected routers"},
        {"node-name-map", 1, 1, "<file>", "node name map file"},
        {"cache", 2, 1, "<file>", "filename to cache ibnetdiscover data to"},
        {"load-cache", 3, 1, "<file>", "filename of ibnetdiscover cache to load"},
        {"diff", 4, 1, "<file>", "filename of ibnetdiscover cache to diff"},
        {"diffcheck", 5, 1, "<key(s)>", "specify checks to execute for --diff"},
        {"ports", 'p', 0, nullptr, "obtain a ports report"},
        {"max_hops", 'm', 0, nullptr, "report max hops discovered by the library"},
        {"outstanding_smps", 'o', 1, nullptr,
         "specify the number of outstanding SMP's which should be issued during the scan"},
    };
    int first = ibdiag::process_opts(
        argc, argv, "DGKLs", options, [&config](int ch, char* arg) { return take_option(config, ch, arg); },
        "[topology-file]");
    argc -= first;
    argv += first;

    const ibdiag::Settings& cfg = ibdiag::cfg;
    if (cfg.timeout)
        config.timeout_ms = cfg.timeout;
    config.flags = cfg.ibnetdisc_flags;
    if (argc && !(out = fopen(argv[0], "w")))
        IBEXIT("can't open file %s for writing", argv[0]);
    config.mkey = cfg.mkey;

    name_map = std::make_unique<ibdiag::NodeNameMap>(opts.name_map_file.empty() ? nullptr : opts.name_map_file.c_str());

    Fabric earlier;
    if (!opts.diff_against.empty() && !(earlier = Fabric(ibnd_load_fabric(opts.diff_against.c_str(), 0))))
        IBEXIT("loading cached fabric for diff failed\n");

    Fabric fabric;
    if (!opts.cache_in.empty()) {
        fabric.reset(ibnd_load_fabric(opts.cache_in.c_str(), 0));
        if (!fabric)
            IBEXIT("loading cached fabric failed\n");
    } else {
        fabric.reset(ibnd_discover_fabric(cfg.ca, cfg.ca_port, nullptr, &config));
        if (!fabric)
            IBEXIT("discover failed\n");
    }

    if (opts.ports_report)
        ibnd_iter_nodes(fabric.get(), ports_report, nullptr);
    else if (opts.list_types)
        list_nodes(fabric.get());
    else if (earlier)
        print_diff(earlier.get(), fabric.get());
    else
        print_topology(fabric.get(), opts.group);

    if (!opts.cache_out.empty() && ibnd_cache_fabric(fabric.get(), opts.cache_out.c_str(), 0) < 0)
        IBEXIT("caching ibnetdiscover data failed\n");

    if (out != stdout)
        fclose(out);
    return 0;
}
