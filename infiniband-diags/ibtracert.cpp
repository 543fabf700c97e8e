// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// ibtracert: trace the unicast route between two ports by following the
// switches' linear forwarding tables over directed routes, or (with -m) a
// multicast route by a breadth-first walk of the multicast forwarding
// tables. --ports-file traces many pairs.
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include <arpa/inet.h>

#include "common/ibdiag_common.h"

namespace {

using namespace ibdiag;

constexpr int kMaxHops = 63;
const char* const kNodeTypeStr[] = {"???", "ca", "switch", "router", "iwarp rnic"};

struct ibmad_port* srcport;
int timeout;  // ms
int force;
FILE* out = stdout;
std::optional<NodeNameMap> node_names;

struct Port {
    Port* remoteport = nullptr;
    uint64_t portguid = 0;
    int portnum = 0;
    int lid = 0;
    int lmc = 0;
    int state = 0;
    int physstate = 0;
    uint8_t portinfo[64] = {};
};

struct Switch {
    int linearcap = 0;
    int mccap = 0;
    int linearFDBtop = 0;
    int enhsp0 = 0;
    uint8_t fdb[64] = {};
    uint8_t switchinfo[64] = {};
};

struct Node {
    Port* ports = nullptr;  // the port we came in by
    ib_portid_t path = {};
    int type = 0;
    int dist = 0;
    int numports = 0;
    int upport = 0;
    Node* upnode = nullptr;
    uint64_t nodeguid = 0;
    char nodedesc[64] = {};
    uint8_t nodeinfo[64] = {};
};

const char* type_str(int type) { return type >= 0 && type <= IB_NODE_MAX ? kNodeTypeStr[type] : "???"; }

std::string remap(const Node& n) {
    char desc[65] = {};
    memcpy(desc, n.nodedesc, 64);
    return node_names->remap(n.nodeguid, desc);
}

// Switch port 0 counts as active unless it is an enhanced port 0.
bool is_port_inactive(const Node& node, const Port& port, const Switch& sw) {
    return port.state != 4 && (node.type != IB_NODE_SWITCH || sw.enhsp0);
}

int get_node(Node* node, Port* port, ib_portid_t* portid) {
    memset(node->nodeinfo, 0, sizeof node->nodeinfo);
    if (!smp_query_via(node->nodeinfo, portid, IB_ATTR_NODE_INFO, 0, unsigned(timeout), srcport))
        return -1;
    memset(node->nodedesc, 0, sizeof node->nodedesc);
    if (!smp_query_via(node->nodedesc, portid, IB_ATTR_NODE_DESC, 0, unsigned(timeout), srcport))
        return -1;
    for (char& c : node->nodedesc) {
        if (!c)
            break;
        if (!isprint(static_cast<unsigned char>(c)))
            c = ' ';
    }
    memset(port->portinfo, 0, sizeof port->portinfo);
    if (!smp_query_via(port->portinfo, portid, IB_ATTR_PORT_INFO, 0, unsigned(timeout), srcport))
        return -1;

    mad_decode_field(node->nodeinfo, IB_NODE_GUID_F, &node->nodeguid);
    mad_decode_field(node->nodeinfo, IB_NODE_TYPE_F, &node->type);
    mad_decode_field(node->nodeinfo, IB_NODE_NPORTS_F, &node->numports);
    mad_decode_field(node->nodeinfo, IB_NODE_PORT_GUID_F, &port->portguid);
    mad_decode_field(node->nodeinfo, IB_NODE_LOCAL_PORT_F, &port->portnum);
    mad_decode_field(port->portinfo, IB_PORT_LID_F, &port->lid);
    mad_decode_field(port->portinfo, IB_PORT_LMC_F, &port->lmc);
    mad_decode_field(port->portinfo, IB_PORT_STATE_F, &port->state);

    char desc[65] = {};
    memcpy(desc, node->nodedesc, 64);
    IBDIAG_DEBUG("portid %s: got node %" PRIx64 " '%s'", portid2str(portid), node->nodeguid, desc);
    return 0;
}

// The out port of the switch at portid for lid, < 0 when unknown.
int switch_lookup(Switch* sw, ib_portid_t* portid, int lid) {
    memset(sw->switchinfo, 0, sizeof sw->switchinfo);
    if (!smp_query_via(sw->switchinfo, portid, IB_ATTR_SWITCH_INFO, 0, unsigned(timeout), srcport))
        return -1;
    mad_decode_field(sw->switchinfo, IB_SW_LINEAR_FDB_CAP_F, &sw->linearcap);
    mad_decode_field(sw->switchinfo, IB_SW_LINEAR_FDB_TOP_F, &sw->linearFDBtop);
    mad_decode_field(sw->switchinfo, IB_SW_ENHANCED_PORT0_F, &sw->enhsp0);
    if (lid >= sw->linearcap && lid > sw->linearFDBtop)
        return -1;
    memset(sw->fdb, 0, sizeof sw->fdb);
    if (!smp_query_via(sw->fdb, portid, IB_ATTR_LINEARFORWTBL, unsigned(lid / 64), unsigned(timeout), srcport))
        return -1;
    IBDIAG_DEBUG("portid %s: forward lid %d to port %d", portid2str(portid), lid, sw->fdb[lid % 64]);
    return sw->fdb[lid % 64];
}

bool sameport(const Port& a, const Port& b) { return a.portguid == b.portguid || (force && a.lid == b.lid); }

int extend_dpath(ib_dr_path_t* path, int nextport) {
    if (path->cnt + 2 >= int(sizeof path->p))
        return -1;
    ++path->cnt;
    path->p[path->cnt] = uint8_t(nextport);
    return path->cnt;
}

void dump_endnode(int dump, const char* prompt, Node* node, Port* port) {
    if (!dump)
        return;
    if (dump == 1) {
        fprintf(out, "%s {0x%016" PRIx64 "}[%d]\n", prompt, node->nodeguid,
                node->type == IB_NODE_SWITCH ? 0 : port->portnum);
        return;
    }
    std::string name = remap(*node);
    fprintf(out, "%s %s {0x%016" PRIx64 "} portnum %d lid %u-%u \"%s\"\n", prompt, type_str(node->type), node->nodeguid,
            node->type == IB_NODE_SWITCH ? 0 : port->portnum, unsigned(port->lid),
            unsigned(port->lid + (1 << port->lmc) - 1), name.c_str());
}

void dump_route(int dump, Node* node, int outport, Port* port) {
    if (!dump && !cfg.verbose)
        return;
    std::string name = remap(*node);
    if (dump == 1)
        fprintf(out, "[%d] -> {0x%016" PRIx64 "}[%d]\n", outport, port->portguid, port->portnum);
    else
        fprintf(out, "[%d] -> %s port {0x%016" PRIx64 "}[%d] lid %u-%u \"%s\"\n", outport, type_str(node->type),
                port->portguid, port->portnum, unsigned(port->lid), unsigned(port->lid + (1 << port->lmc) - 1),
                name.c_str());
}

std::string clean_desc(const Node& node) {
    char desc[65] = {};
    memcpy(desc, node.nodedesc, 64);
    return clean_nodedesc(desc);
}

int find_route(ib_portid_t* from, ib_portid_t* to, int dump) {
    Node fromnode, tonode, nextnode;
    Port fromport, toport, nextport;
    Switch sw;
    int maxhops = kMaxHops;
    int outport = 255, next_sw_outport = 255;

    IBDIAG_DEBUG("from %s", portid2str(from));
    if (get_node(&fromnode, &fromport, from) < 0 || get_node(&tonode, &toport, to) < 0) {
        IBWARN("can't reach to/from ports");
        if (!force)
            return -1;
        if (to->lid > 0)
            toport.lid = to->lid;
        IBWARN("Force: look for lid %d", to->lid);
    }

    Node* node = &fromnode;
    Port* port = &fromport;
    int portnum = port->portnum;

    dump_endnode(dump, "From", node, port);
    if (node->type == IB_NODE_SWITCH) {
        next_sw_outport = switch_lookup(&sw, from, to->lid);
        if (next_sw_outport < 0 || next_sw_outport > node->numports) {
            outport = next_sw_outport;
            goto badtbl;
        }
    }

    while (maxhops--) {
        if (is_port_inactive(*node, *port, sw))
            goto badport;
        if (sameport(*port, toport))
            break;  // found
        if (node->type == IB_NODE_SWITCH) {
            IBDIAG_DEBUG("switch node");
            outport = next_sw_outport;
            if (extend_dpath(&from->drpath, outport) < 0)
                goto badpath;
            if (get_node(&nextnode, &nextport, from) < 0) {
                IBWARN("can't reach port at %s", portid2str(from));
                return -1;
            }
            if (outport == 0) {
                if (!sameport(nextport, toport))
                    goto badtbl;
                break;  // the switch's own port
            }
        } else if (node->type == IB_NODE_CA || node->type == IB_NODE_ROUTER) {
            bool ca_src = false;

            outport = portnum;
            IBDIAG_DEBUG("ca or router node");
            if (!sameport(*port, fromport)) {
                IBWARN("can't continue: reached CA or router port %" PRIx64 ", lid %d", port->portguid, port->lid);
                return -1;
            }
            // from a CA or router: step back one hop, to a switch
            if (from->drpath.cnt > 0) {
                IBDIAG_DEBUG("ca or router node - return back 1 hop");
                from->drpath.cnt--;
            } else {
                ca_src = true;
                if (portnum && extend_dpath(&from->drpath, portnum) < 0)
                    goto badpath;
            }
            if (get_node(&nextnode, &nextport, from) < 0) {
                IBWARN("can't reach port at %s", portid2str(from));
                return -1;
            }
            // the port number as seen from the CA's side
            if (!ca_src)
                nextport.portnum = from->drpath.p[from->drpath.cnt + 1];
        }
        if (nextnode.type == IB_NODE_SWITCH) {
            next_sw_outport = switch_lookup(&sw, from, to->lid);
            if (next_sw_outport < 0 || next_sw_outport > nextnode.numports) {
                outport = next_sw_outport;
                goto badtbl;
            }
        }
        port = &nextport;
        if (is_port_inactive(nextnode, *port, sw))
            goto badoutport;
        node = &nextnode;
        portnum = port->portnum;
        dump_route(dump, node, outport, port);
    }

    if (maxhops <= 0) {
        IBWARN("no route found after %d hops", kMaxHops);
        return -1;
    }
    dump_endnode(dump, "To", node, port);
    return 0;

badport:
    IBWARN("Bad port state found: node \"%s\" port %d state %d", clean_desc(*node).c_str(), portnum, port->state);
    return -1;
badoutport:
    IBWARN("Bad out port state found: node \"%s\" outport %d state %d", clean_desc(*node).c_str(), outport,
           port->state);
    return -1;
badtbl:
    IBWARN("Bad forwarding table entry found at: node \"%s\" lid entry %d is %d (top %d)", clean_desc(*node).c_str(),
           to->lid, outport, sw.linearFDBtop);
    return -1;
badpath:
    IBWARN("Direct path too long!");
    return -1;
}

// ---- multicast ----

// Every node and port of the walks lives here until the program ends (the
// reference keeps its visited-switch table across --ports-file lines too).
std::vector<std::unique_ptr<Node>> node_arena;
std::vector<std::unique_ptr<Port>> port_arena;
std::unordered_set<uint64_t> known_guids;
std::vector<Node*> nodesdist[kMaxHops];  // newest first when walked
uint64_t target_portguid;

Node* new_node_obj() {
    node_arena.push_back(std::make_unique<Node>());
    return node_arena.back().get();
}
Port* new_port_obj() {
    port_arena.push_back(std::make_unique<Port>());
    return port_arena.back().get();
}

int insert_node(Node* n) {
    if (!known_guids.insert(n->nodeguid).second) {
        IBDIAG_DEBUG("node %" PRIx64 " already exists", n->nodeguid);
        return -1;
    }
    return 0;
}

int get_port(Port* port, int portnum, ib_portid_t* portid) {
    uint8_t pi[64] = {};

    port->portnum = portnum;
    if (!smp_query_via(pi, portid, IB_ATTR_PORT_INFO, unsigned(portnum), unsigned(timeout), srcport))
        return -1;
    mad_decode_field(pi, IB_PORT_LID_F, &port->lid);
    mad_decode_field(pi, IB_PORT_LMC_F, &port->lmc);
    mad_decode_field(pi, IB_PORT_STATE_F, &port->state);
    mad_decode_field(pi, IB_PORT_PHYS_STATE_F, &port->physstate);
    IBDIAG_VERBOSE("portid %s portnum %d: lid %d state %d physstate %d", portid2str(portid), portnum, port->lid,
                   port->state, port->physstate);
    return 1;
}

// 1: node is the target; 0: a new node at dist; -1: seen before.
int new_node(Node* node, Port* port, ib_portid_t* path, int dist) {
    if (port->portguid == target_portguid) {
        node->dist = -1;  // the target
        node->ports = port;
        dump_endnode(cfg.verbose, "found target", node, port);
        return 1;
    }
    if (insert_node(node) < 0)
        return -1;
    IBDIAG_VERBOSE("insert dist %d node %p port %d lid %d", dist, static_cast<void*>(node), port->portnum, port->lid);
    node->ports = port;
    node->dist = dist;
    node->path = *path;
    nodesdist[dist].push_back(node);
    return 0;
}

// map[p] = 1 for every port the switch forwards mlid to.
int switch_mclookup(Node* node, ib_portid_t* portid, int mlid, char* map) {
    Switch sw;
    uint8_t mdb[64];

    memset(map, 0, 256);
    if (!smp_query_via(sw.switchinfo, portid, IB_ATTR_SWITCH_INFO, 0, unsigned(timeout), srcport))
        return -1;
    mlid -= 0xc000;
    mad_decode_field(sw.switchinfo, IB_SW_MCAST_FDB_CAP_F, &sw.mccap);
    if (mlid >= sw.mccap)
        return -1;
    int block = mlid / 32;
    int maxsets = (node->numports + 15) / 16;
    if (maxsets > 16)
        maxsets = 16;  // 256 ports at most
    for (int set = 0; set < maxsets; set++) {
        memset(mdb, 0, sizeof mdb);
        if (!smp_query_via(mdb, portid, IB_ATTR_MULTICASTFORWTBL, unsigned(block | (set << 28)), unsigned(timeout),
                           srcport))
            return -1;
        // An MLID below 0xc000 gets this far as the reference lets it;
        // its entry is then outside the block: no ports.
        int idx = mlid % 32;
        uint16_t mask = idx < 0 ? 0 : uint16_t(mdb[idx * 2] << 8 | mdb[idx * 2 + 1]);
        for (int i = 0; i < 16; i++, map++) {
            if (!(mask & (1 << i)))
                continue;
            *map = 1;
            IBDIAG_VERBOSE("Switch guid 0x%" PRIx64 ": mlid 0x%x is forwarded to port %d", node->nodeguid,
                           mlid + 0xc000, i + set * 16);
        }
    }
    return 0;
}

Node* find_mcpath(ib_portid_t* from, int mlid) {
    char map[256];
    int leafport = 0;

    IBDIAG_DEBUG("from %s", portid2str(from));
    Node* node = new_node_obj();
    Port* port = new_port_obj();
    if (get_node(node, port, from) < 0) {
        IBWARN("can't reach node %s", portid2str(from));
        return nullptr;
    }
    node->upnode = nullptr;  // the root
    if (new_node(node, port, from, 0) > 0) {
        if (node->type != IB_NODE_SWITCH) {
            IBWARN("ibtracert from CA to CA is unsupported");
            return nullptr;
        }
        if (switch_mclookup(node, from, mlid, map) < 0 || !map[0])
            return nullptr;
        return node;
    }

    for (int dist = 0; dist < kMaxHops; dist++) {
        // newest first, as the reference's list heads
        std::vector<Node*> level = nodesdist[dist];
        for (auto it = level.rbegin(); it != level.rend(); ++it) {
            node = *it;
            ib_portid_t* path = &node->path;

            IBDIAG_VERBOSE("dist %d node %p", dist, static_cast<void*>(node));
            dump_endnode(cfg.verbose, "processing", node, node->ports);
            memset(map, 0, sizeof map);

            if (node->type != IB_NODE_SWITCH) {
                if (dist)
                    continue;
                leafport = path->drpath.p[path->drpath.cnt];
                if (port->portnum >= 0 && port->portnum < 256)
                    map[port->portnum] = 1;
                node->upport = 0;  // starting here
                IBDIAG_DEBUG("Starting from CA 0x%" PRIx64 " lid %d port %d (leafport %d)", node->nodeguid, port->lid,
                             port->portnum, leafport);
            } else {
                // from a leaf port: the up port is known
                if (dist == 1 && leafport)
                    node->upport = leafport;
                if (switch_mclookup(node, path, mlid, map) < 0) {
                    IBWARN("skipping bad Switch 0x%" PRIx64 "", node->nodeguid);
                    continue;
                }
            }

            for (int i = 1; i <= node->numports && i < 256; i++) {
                if (!map[i] || i == node->upport)
                    continue;
                if (dist == 0 && leafport) {
                    if (from->drpath.cnt > 0)
                        path->drpath.cnt--;
                } else {
                    port = new_port_obj();
                    if (get_port(port, i, path) < 0) {
                        IBWARN("can't reach node %s port %d", portid2str(path), i);
                        return nullptr;
                    }
                    if (port->physstate != 5)  // LinkUp
                        continue;
                    if (extend_dpath(&path->drpath, i) < 0)
                        return nullptr;
                }

                Node* remotenode = new_node_obj();
                Port* remoteport = new_port_obj();
                if (get_node(remotenode, remoteport, path) < 0) {
                    IBWARN("NodeInfo on %s port %d failed, skipping port", portid2str(path), i);
                    path->drpath.cnt--;
                    continue;
                }
                remotenode->upnode = node;
                remotenode->upport = remoteport->portnum;
                remoteport->remoteport = port;

                int r = new_node(remotenode, remoteport, path, dist + 1);
                if (r > 0)
                    return remotenode;
                if (r == 0)
                    dump_endnode(cfg.verbose, "new remote", remotenode, remoteport);
                else if (remotenode->type == IB_NODE_SWITCH)
                    dump_endnode(2, "ERR: circle discovered at", remotenode, remoteport);
                path->drpath.cnt--;
            }
        }
    }
    return nullptr;  // not found
}

uint64_t find_target_portguid(ib_portid_t* to) {
    Node tonode;
    Port toport;

    if (get_node(&tonode, &toport, to) < 0) {
        IBWARN("can't find to port\n");
        return ~0ull;
    }
    return toport.portguid;
}

void dump_mcpath(Node* node, int dumplevel) {
    if (node->upnode)
        dump_mcpath(node->upnode, dumplevel);
    std::string name = remap(*node);
    Port* p = node->ports;
    if (!node->dist) {
        printf("From %s 0x%" PRIx64 " port %d lid %u-%u \"%s\"\n", type_str(node->type), node->nodeguid, p->portnum,
               unsigned(p->lid), unsigned(p->lid + (1 << p->lmc) - 1), name.c_str());
        return;
    }
    int upnum = p->remoteport ? p->remoteport->portnum : 0;
    if (dumplevel == 1)
        printf("[%d] -> %s {0x%016" PRIx64 "}[%d]\n", upnum, type_str(node->type), node->nodeguid, node->upport);
    else
        printf("[%d] -> %s 0x%" PRIx64 "[%d] lid %u \"%s\"\n", upnum, type_str(node->type), node->nodeguid,
               node->upport, unsigned(p->lid), name.c_str());
    if (node->dist < 0)
        printf("To %s 0x%" PRIx64 " port %d lid %u-%u \"%s\"\n", type_str(node->type), node->nodeguid, p->portnum,
               unsigned(p->lid), unsigned(p->lid + (1 << p->lmc) - 1), name.c_str());
}

int resolve_lid(ib_portid_t* portid) {
    uint8_t portinfo[64] = {};
    uint32_t lid = 0;  // mad_decode_field stores a uint32_t

    if (!smp_query_via(portinfo, portid, IB_ATTR_PORT_INFO, 0, 0, nullptr))
        return -1;
    mad_decode_field(portinfo, IB_PORT_LID_F, &lid);
    ib_portid_set(portid, lid, 0, 0);
    return 0;
}

int dumplevel = 2, multicast, mlid;

int get_route(const char* srcid, const char* dstid) {
    ib_portid_t my_portid = {};
    ib_portid_t src_portid = {};
    ib_portid_t dest_portid = {};

    if (resolve_portid_str(cfg.ca, cfg.ca_port, &src_portid, srcid, cfg.dest_type, cfg.sm_id, srcport) < 0) {
        IBWARN("can't resolve source port %s", srcid);
        return -1;
    }
    if (resolve_portid_str(cfg.ca, cfg.ca_port, &dest_portid, dstid, cfg.dest_type, cfg.sm_id, srcport) < 0) {
        IBWARN("can't resolve destination port %s", dstid);
        return -1;
    }
    if (cfg.dest_type == IB_DEST_DRPATH) {
        if (resolve_lid(&src_portid) < 0) {
            IBWARN("cannot resolve lid for port '%s'", portid2str(&src_portid));
            return -1;
        }
        if (resolve_lid(&dest_portid) < 0) {
            IBWARN("cannot resolve lid for port '%s'", portid2str(&dest_portid));
            return -1;
        }
    }
    if (dest_portid.lid == 0 || src_portid.lid == 0) {
        IBWARN("bad src/dest lid");
        show_usage();
    }
    if (cfg.dest_type != IB_DEST_DRPATH) {
        // a directed route to the source first
        if (find_route(&my_portid, &src_portid, 0) < 0) {
            IBWARN("can't find a route to the src port");
            return -1;
        }
        src_portid = my_portid;
    }
    if (!multicast) {
        if (find_route(&src_portid, &dest_portid, dumplevel) < 0) {
            IBWARN("can't find a route from src to dest");
            return -1;
        }
        return 0;
    }
    if (mlid < 0xc000)
        IBWARN("invalid MLID; must be 0xc000 or larger");
    if (!(target_portguid = find_target_portguid(&dest_portid))) {
        IBWARN("can't reach target lid %d", dest_portid.lid);
        return -1;
    }
    Node* endnode = find_mcpath(&src_portid, mlid);
    if (!endnode) {
        IBWARN("can't find a multicast route from src to dest");
        return -1;
    }
    dump_mcpath(endnode, dumplevel);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int mgmt_classes[3] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS};
    const char* node_name_map_file = nullptr;
    const char* ports_file = nullptr;
    std::string nnm_arg, ports_arg;

    static const Option opts[] = {
        {"force", 'f', 0, nullptr, "force"},
        {"no_info", 'n', 0, nullptr, "simple format"},
        {"mlid", 'm', 1, "<mlid>", "multicast trace of the mlid"},
        {"node-name-map", 1, 1, "<file>", "node name map file"},
        {"ports-file", 2, 1, "<file>", "port pairs file"},
    };
    int first = process_opts(argc, argv, "DK", opts,
                             [&](int ch, char* arg) -> int {
                                 switch (ch) {
                                 case 1:
                                     nnm_arg = arg;
                                     node_name_map_file = nnm_arg.c_str();
                                     break;
                                 case 2:
                                     ports_arg = arg;
                                     ports_file = ports_arg.c_str();
                                     break;
                                 case 'm':
                                     multicast++;
                                     mlid = int(strtoul(arg, nullptr, 0));
                                     break;
                                 case 'f': force++; break;
                                 case 'n': dumplevel = 1; break;
                                 default: return -1;
                                 }
                                 return 0;
                             },
                             "<src-addr> <dest-addr>",
                             {"- Unicast examples:", "4 16\t\t\t# show path between lids 4 and 16",
                              "-n 4 16\t\t# same, but using simple output format",
                              "-G 0x8f1040396522d 0x002c9000100d051\t# use guid addresses", " - Multicast examples:",
                              "-m 0xc000 4 16\t# show multicast path of mlid 0xc000 between lids 4 and 16"});
    argc -= first;
    argv += first;

    if (argc < 2 && !ports_file)
        show_usage();
    if (cfg.timeout)
        timeout = cfg.timeout;

    srcport = open_port(mgmt_classes, 3);
    smp_mkey_set(srcport, cfg.mkey);
    node_names.emplace(node_name_map_file);

    if (!ports_file) {
        if (get_route(argv[0], argv[1]) != 0)
            IBEXIT("Failed to get route information");
    } else {
        FILE* pf = fopen(ports_file, "r");
        if (!pf)
            IBEXIT("cannot open ports-file %s", ports_file);
        char line[80];
        int line_count = 0, pairs = 0;
        while (fgets(line, sizeof line, pf)) {
            line_count++;
            char* p = strtok(line, "\n");
            if (!p)
                continue;  // blank
            while (*p && isspace(static_cast<unsigned char>(*p)))
                p++;
            if (!*p || *p == '#')
                continue;  // spaces only, or a comment
            char src[21], dst[21];
            if (sscanf(line, "%20s %20s", src, dst) != 2)
                IBEXIT("ports-file, %s, at line %i contains bad data", ports_file, line_count);
            pairs++;
            if (get_route(src, dst) != 0)
                IBEXIT("Failed to get route information at line %i", line_count);
        }
        fclose(pf);
        printf("%i lid/guid pairs processed from %s\n", pairs, ports_file);
    }
    mad_rpc_close_port(srcport);
    return 0;
}
