// iblinkinfo: every link of the subnet (or of one node with -G/-S/-D), one
// line per port, from a libibnetdisc scan or a cache file; --diff shows
// what changed against an earlier cache.

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>

#include "ibdiag_common.h"
#include "netdisc_common.h"

namespace {

enum : unsigned {
    CHECK_PORT = 1u << 0,
    CHECK_STATE = 1u << 1,
    CHECK_LID = 1u << 2,
    CHECK_NODEDESC = 1u << 3,
    CHECK_DEFAULT = CHECK_PORT | CHECK_STATE,
};

using netdisc::desc_differs;
using netdisc::ext_num;
using netdisc::Fabric;
using netdisc::field;
using netdisc::IB_LINK_DOWN;

struct Options {
    std::string name_map_file;
    std::string cache_in;
    std::string diff_against;
    std::string filter_cache;
    unsigned checks = CHECK_DEFAULT;
    const char* guid_str = nullptr;  // -G/-S as typed
    uint64_t guid = 0;
    std::string dr_path;  // -D
    bool all = false;
    bool down_only = false;
    bool line_mode = false;
    bool hoq_settings = false;
    int only_type = 0;  // 0: every type
};

Options opts;
Fabric filter_fabric;
std::unique_ptr<ibdiag::NodeNameMap> name_map;

std::string mapped_name(const ibnd_node_t* node) { return name_map->remap(node->guid, node->nodedesc); }

const char* pre(const char* prefix) { return prefix ? prefix : ""; }

// --filterdownports: a port that was already down in that cache is not shown
bool down_in_filter(const ibnd_node_t* node, const ibnd_port_t* port) {
    ibnd_node_t* old = ibnd_find_node_guid(filter_fabric.get(), node->guid);
    if (!old || port->portnum > old->numports)
        return false;
    ibnd_port_t* old_port = old->ports[port->portnum];
    return old_port && field(old_port->info, IB_PORT_STATE_F) == IB_LINK_DOWN;
}

// "(4X  2.5 Gbps Active/  LinkUp)" and the optional HOQ part
std::string link_text(const ibnd_port_t* port, int state, int phys) {
    std::string text = netdisc::link_text(port, state, phys);
    if (state != static_cast<int>(IB_LINK_DOWN) && opts.hoq_settings) {
        char buf[256];
        snprintf(buf, sizeof(buf), " (HOQ:%d VL_Stall:%d)", field(port->info, IB_PORT_HOQ_LIFE_F),
                 field(port->info, IB_PORT_VL_STALL_COUNT_F));
        text += buf;
        text.resize(std::min<size_t>(text.size(), 255));
    }
    return text;
}

void print_port(ibnd_node_t* node, ibnd_port_t* port, const char* prefix) {
    if (!port)
        return;
    int state = field(port->info, IB_PORT_STATE_F);
    int phys = field(port->info, IB_PORT_PHYS_STATE_F);
    if (state == IB_LINK_DOWN && filter_fabric && down_in_filter(node, port))
        return;

    std::string link = link_text(port, state, phys);

    std::string remote;
    if (port->remoteport)
        remote = netdisc::peer_text(port, opts.line_mode, *name_map);
    else if (state == IB_LINK_DOWN)
        remote = "           [  ] \"\" ( )\n";
    else
        remote = "    \"Port not available\"\n";

    if (opts.line_mode)
        printf("%s0x%016" PRIx64 " \"%30s\" ", pre(prefix), port->guid, mapped_name(node).c_str());
    else
        printf("%s      ", pre(prefix));

    int lid = node->smalid;
    if (port->node->type != IB_NODE_SWITCH) {
        if (!opts.line_mode)
            printf("0x%016" PRIx64 " ", port->guid);
        lid = port->base_lid;
    }
    printf("%6d %4d[%2s] ==%s==>  %s", lid, port->portnum, ext_num(port).c_str(), link.c_str(), remote.c_str());
}

const char* type_word(const ibnd_node_t* node) {
    switch (node->type) {
    case IB_NODE_SWITCH: return "Switch";
    case IB_NODE_CA: return "CA";
    case IB_NODE_ROUTER: return "Router";
    default: return "??";
    }
}

// The "Switch: 0x... name:" line, once per node (shown is the once-flag;
// nullptr prints unconditionally). Line mode has no headers.
void print_header(ibnd_node_t* node, int* shown, const char* prefix) {
    if ((shown && *shown) || opts.line_mode)
        return;
    std::string name = mapped_name(node);
    if (node->type == IB_NODE_SWITCH) {
        uint64_t guid = node->ports[0] ? node->ports[0]->guid : mad_get_field64(node->info, 0, IB_NODE_PORT_GUID_F);
        printf("%s%s: 0x%016" PRIx64 " %s:\n", pre(prefix), type_word(node), guid, name.c_str());
    } else {
        printf("%s%s: %s:\n", pre(prefix), type_word(node), name.c_str());
    }
    if (shown)
        ++*shown;
}

void print_node(ibnd_node_t* node, const char* prefix) {
    int shown = 0;
    for (int i = 1; i <= node->numports; i++) {
        ibnd_port_t* port = node->ports[i];
        if (!port)
            continue;
        if (opts.down_only && field(port->info, IB_PORT_STATE_F) != IB_LINK_DOWN)
            continue;
        print_header(node, &shown, prefix);
        print_port(node, port, prefix);
    }
}

void print_node_cb(ibnd_node_t* node, void* prefix) { print_node(node, static_cast<const char*>(prefix)); }

void iterate(ibnd_fabric_t* fabric, ibnd_iter_node_func_t fn, void* data) {
    if (opts.only_type)
        ibnd_iter_nodes_type(fabric, fn, opts.only_type, data);
    else
        ibnd_iter_nodes(fabric, fn, data);
}

// --diff --------------------------------------------------------------------

struct DiffSide {
    unsigned checks;
    ibnd_fabric_t* other;
    const char* mine;
    const char* theirs;
};

void diff_ports(ibnd_node_t* a_node, ibnd_node_t* b_node, int* shown, const DiffSide& d) {
    for (int i = 1; i <= a_node->numports; i++) {
        ibnd_port_t* a = a_node->ports[i];
        ibnd_port_t* b = b_node->ports[i];
        if (!a && !b)
            continue;
        bool differs = false;
        bool both = a && b;
        bool both_linked = both && a->remoteport && b->remoteport;
        if (d.checks & CHECK_PORT) {
            if (!both || !a->remoteport != !b->remoteport ||
                (both_linked && a->remoteport->guid != b->remoteport->guid))
                differs = true;
        }
        if ((d.checks & CHECK_STATE) && both && field(a->info, IB_PORT_STATE_F) != field(b->info, IB_PORT_STATE_F))
            differs = true;
        if ((d.checks & CHECK_PORT) && (d.checks & CHECK_LID) && both_linked &&
            a->remoteport->base_lid != b->remoteport->base_lid)
            differs = true;
        if ((d.checks & CHECK_PORT) && (d.checks & CHECK_NODEDESC) && both_linked &&
            desc_differs(a->remoteport->node, b->remoteport->node))
            differs = true;
        if (!differs)
            continue;
        if (a) {
            print_header(a_node, shown, nullptr);
            print_port(a_node, a, d.mine);
        }
        if (b) {
            print_header(a_node, shown, nullptr);
            print_port(b_node, b, d.theirs);
        }
    }
}

void diff_one(ibnd_node_t* a_node, void* ctx) {
    const DiffSide& d = *static_cast<const DiffSide*>(ctx);
    ibnd_node_t* b_node = ibnd_find_node_guid(d.other, a_node->guid);
    if (!b_node) {
        print_node(a_node, d.mine);
        return;
    }
    if (!(d.checks & (CHECK_PORT | CHECK_STATE | CHECK_LID | CHECK_NODEDESC)))
        return;
    int shown = 0;
    if ((a_node->type == IB_NODE_SWITCH && (d.checks & CHECK_LID) && a_node->smalid != b_node->smalid) ||
        ((d.checks & CHECK_NODEDESC) && desc_differs(a_node, b_node))) {
        print_header(a_node, nullptr, d.mine);
        print_header(b_node, nullptr, d.theirs);
        shown++;
    }
    if (a_node->numports != b_node->numports) {
        print_header(a_node, &shown, nullptr);
        printf("%snumports = %d\n", d.mine, a_node->numports);
        printf("%snumports = %d\n", d.theirs, b_node->numports);
        return;
    }
    diff_ports(a_node, b_node, &shown, d);
}

void print_diff(ibnd_node_t* node, ibnd_fabric_t* orig, ibnd_fabric_t* now) {
    DiffSide forward{opts.checks, now, "< ", "> "};
    if (node)
        diff_one(node, &forward);
    else
        iterate(orig, diff_one, &forward);
    // backwards only finds nodes missing from the original
    DiffSide backward{opts.checks & ~(CHECK_PORT | CHECK_STATE | CHECK_LID | CHECK_NODEDESC), orig, "> ", "< "};
    if (node)
        diff_one(node, &backward);
    else
        iterate(now, diff_one, &backward);
}

int parse_checks(const char* arg) {
    static const netdisc::CheckKey keys[] = {
        {"port", CHECK_PORT},
        {"state", CHECK_STATE},
        {"lid", CHECK_LID},
        {"nodedesc", CHECK_NODEDESC},
    };
    return netdisc::parse_check_keys(arg, keys, opts.checks);
}

int take_option(ibnd_config& cfg, int ch, char* arg) {
    switch (ch) {
    case 1: opts.name_map_file = arg; break;
    case 2: opts.cache_in = arg; break;
    case 3: opts.diff_against = arg; break;
    case 4: return parse_checks(arg);
    case 5: opts.filter_cache = arg; break;
    case 6: opts.only_type = IB_NODE_SWITCH; break;
    case 7: opts.only_type = IB_NODE_CA; break;
    case 'S':
    case 'G':
        opts.guid_str = arg;
        opts.guid = strtoull(arg, nullptr, 0);
        break;
    case 'D': opts.dr_path = arg; break;
    case 'a': opts.all = true; break;
    case 'n': cfg.max_hops = strtoul(arg, nullptr, 0); break;
    case 'd': opts.down_only = true; break;
    case 'l': opts.line_mode = true; break;
    case 'p': opts.hoq_settings = true; break;
    case 'R': break;  // accepted and ignored, as always
    case 'o': cfg.max_smps = strtoul(arg, nullptr, 0); break;
    default: return -1;
    }
    return 0;
}

// The one node -G/-D asked for (and only of the -switches/cas-only type).
void print_selected(ibnd_fabric_t* fabric, ibnd_fabric_t* earlier, uint64_t guid, const char* as_typed) {
    ibnd_port_t* p = ibnd_find_port_guid(fabric, guid);
    if (!p || (opts.only_type && p->node->type != opts.only_type)) {
        fprintf(stderr, "Failed to find port: %s\n", as_typed);
        return;
    }
    if (earlier)
        print_diff(p->node, earlier, fabric);
    else
        print_node(p->node, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
    ibnd_config config{};
    static const ibdiag::Option options[] = {
        {"node-name-map", 1, 1, "<file>", "node name map file"},
        {"switch", 'S', 1, "<port_guid>", "start partial scan at the port specified by <port_guid> (hex format)"},
        {"port-guid", 'G', 1, "<port_guid>", "(same as -S)"},
        {"Direct", 'D', 1, "<dr_path>", "start partial scan at the port specified by <dr_path>"},
        {"all", 'a', 0, nullptr, "print all nodes found in a partial fabric scan"},
        {"hops", 'n', 1, "<hops>", "Number of hops to include away from specified node"},
        {"down", 'd', 0, nullptr, "print only down links"},
        {"line", 'l', 0, nullptr, "(line mode) print all information for each link on a single line"},
        {"additional", 'p', 0, nullptr, "print additional port settings (PktLifeTime, HoqLife, VLStallCount)"},
        {"load-cache", 2, 1, "<file>", "filename of ibnetdiscover cache to load"},
        {"diff", 3, 1, "<file>", "filename of ibnetdiscover cache to diff"},
        {"diffcheck", 4, 1, "<key(s)>", "specify checks to execute for --diff"},
        {"filterdownports", 5, 1, "<file>", "filename of ibnetdiscover cache to filter downports"},
        {"outstanding_smps", 'o', 1, nullptr,
         "specify the number of outstanding SMP's which should be issued during the scan"},
        {"switches-only", 6, 0, nullptr, "Output only switches"},
        {"cas-only", 7, 0, nullptr, "Output only CAs"},
    };
    ibdiag::process_opts(
        argc, argv, "aDdGgKLlnpRS", options, [&config](int ch, char* arg) { return take_option(config, ch, arg); }, "");

    const ibdiag::Settings& cfg = ibdiag::cfg;
    int classes[3] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS};
    struct ibmad_port* srcport = mad_rpc_open_port(cfg.ca, cfg.ca_port, classes, 3);
    if (!srcport) {
        fprintf(stderr, "Failed to open %s port %d\n", cfg.ca ? cfg.ca : "(null)", cfg.ca_port);
        exit(1);
    }
    netdisc::setup_scan(srcport, config);

    name_map = std::make_unique<ibdiag::NodeNameMap>(opts.name_map_file.empty() ? nullptr : opts.name_map_file.c_str());

    netdisc::reject_cache_with_dr(opts.dr_path, opts.cache_in, srcport, 1);

    ib_portid_t start{};
    int resolved = -1;
    if (!opts.dr_path.empty()) {
        resolved = ibdiag::resolve_portid_str(cfg.ca, cfg.ca_port, &start, opts.dr_path.c_str(), IB_DEST_DRPATH,
                                              nullptr, srcport);
        if (resolved < 0)
            IBWARN("Failed to resolve %s; attempting full scan", opts.dr_path.c_str());
    } else if (opts.guid_str) {
        resolved =
            ibdiag::resolve_portid_str(cfg.ca, cfg.ca_port, &start, opts.guid_str, IB_DEST_GUID, nullptr, srcport);
        if (resolved < 0)
            IBWARN("Failed to resolve %s; attempting full scan\n", opts.guid_str);
    }

    uint8_t nodeinfo[IB_SMP_DATA_SIZE] = {};
    if (!opts.all && !opts.dr_path.empty() &&
        !smp_query_via(nodeinfo, &start, IB_ATTR_NODE_INFO, 0, cfg.timeout, srcport)) {
        mad_rpc_close_port(srcport);
        fputs("Failed to get local Node Info\n", stderr);
        exit(1);
    }
    mad_rpc_close_port(srcport);

    Fabric earlier;
    if (!opts.diff_against.empty() && !(earlier = Fabric(ibnd_load_fabric(opts.diff_against.c_str(), 0))))
        IBEXIT("loading cached fabric for diff failed\n");
    if (!opts.filter_cache.empty() && !(filter_fabric = Fabric(ibnd_load_fabric(opts.filter_cache.c_str(), 0))))
        IBEXIT("loading cached fabric for filterdownports failed\n");

    Fabric fabric = netdisc::load_or_discover(opts.cache_in, resolved >= 0 ? &start : nullptr, config,
                                              "Partial fabric scan failed; attempting full scan\n", 1);

    if (!opts.all && opts.guid_str) {
        print_selected(fabric.get(), earlier.get(), opts.guid, opts.guid_str);
    } else if (!opts.all && !opts.dr_path.empty()) {
        uint64_t guid = 0;
        mad_decode_field(nodeinfo, IB_NODE_PORT_GUID_F, &guid);
        print_selected(fabric.get(), earlier.get(), guid, opts.dr_path.c_str());
    } else if (earlier) {
        print_diff(nullptr, earlier.get(), fabric.get());
    } else {
        iterate(fabric.get(), print_node_cb, nullptr);
    }
    return 0;
}
