// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The fabric graph: allocation, GUID hash chains, the LID index, lookups
// by GUID / LID / directed route, and iteration.  The hash chains and the
// node lists are part of the ABI (applications walk them), so their order
// follows the reference: every insertion goes to the head.
#include "internal.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ibnd {

namespace {
const char* src_file(Src s) {
    switch (s) {
    case Src::chassis: return "./libibnetdisc/chassis.c";
    case Src::discover: return "./libibnetdisc/ibnetdisc.c";
    case Src::cache: return "./libibnetdisc/ibnetdisc_cache.c";
    case Src::smp: return "./libibnetdisc/query_smp.c";
    }
    return "";
}
}  // namespace

bool debugging() { return ibdebug != 0; }

void error_at(Src src, unsigned line, const char* fmt, ...) {
    std::fprintf(stderr, "%s:%u; ", src_file(src), line);
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
}

void debug_at(Src src, unsigned line, const char* fmt, ...) {
    std::printf("%s:%u; ", src_file(src), line);
    va_list ap;
    va_start(ap, fmt);
    std::vprintf(fmt, ap);
    va_end(ap);
}

uint32_t guid_hash(uint64_t guid) {
    auto lo = static_cast<uint32_t>(guid);
    auto hi = static_cast<uint32_t>(guid >> 32);
    return ((lo * 101u) ^ (hi * 103u)) % HTSZ;
}

FabricPtr new_fabric() {
    auto extra = std::make_unique<FabricExtra>();
    FabricPtr f(new Fabric{});
    std::memset(&f->pub, 0, sizeof(f->pub));
    f->extra = extra.release();
    return f;
}

void free_node(ibnd_node_t* node) {
    if (!node)
        return;
    if (node->ports) {
        for (int p = 0; p <= node->numports; ++p)
            std::free(node->ports[p]);
        std::free(node->ports);
    }
    std::free(node);
}

void free_fabric(Fabric* fabric) {
    std::unique_ptr<Fabric> f(fabric);
    if (!f)
        return;
    for (ibnd_chassis_t* ch = f->pub.chassis; ch;) {
        ibnd_chassis_t* next = ch->next;
        std::free(ch);
        ch = next;
    }
    for (ibnd_node_t* n = f->pub.nodes; n;) {
        ibnd_node_t* next = n->next;
        free_node(n);
        n = next;
    }
    std::unique_ptr<FabricExtra> extra(f->extra);
    if (extra)
        for (ibnd_port_t* p : extra->orphans)
            std::free(p);
}

bool hash_add_node(ibnd_fabric_t* f, ibnd_node_t* node) {
    if (!impl(f)->extra->hashed.insert(node).second) {
        IBND_ERR(discover, 648, "Duplicate Node: Node with guid 0x%016lx already exists in nodes DB\n", node->guid);
        return false;
    }
    uint32_t h = guid_hash(node->guid);
    node->htnext = f->nodestbl[h];
    f->nodestbl[h] = node;
    return true;
}

bool hash_add_port(ibnd_fabric_t* f, ibnd_port_t* port) {
    if (!impl(f)->extra->hashed.insert(port).second) {
        IBND_ERR(discover, 667, "Duplicate Port: Port with guid 0x%016lx already exists in ports DB\n", port->guid);
        return false;
    }
    uint32_t h = guid_hash(port->guid);
    port->htnext = f->portstbl[h];
    f->portstbl[h] = port;
    return true;
}

void lid_add_port(Fabric* f, ibnd_port_t* port) {
    unsigned base = port->base_lid;
    if (base == 0 || base > 0xbfff)
        return;
    unsigned count = 1u << (port->lmc & 7);
    for (unsigned lid = base; lid < base + count && lid <= 0xffff; ++lid)
        f->extra->lids.emplace(static_cast<uint16_t>(lid), port);
}

void type_list_add(ibnd_fabric_t* f, ibnd_node_t* node) {
    ibnd_node_t** head = nullptr;
    switch (node->type) {
    case IB_NODE_CA: head = &f->ch_adapters; break;
    case IB_NODE_SWITCH: head = &f->switches; break;
    case IB_NODE_ROUTER: head = &f->routers; break;
    default: return;
    }
    node->type_next = *head;
    *head = node;
}

}  // namespace ibnd

using namespace ibnd;

// exported: the version script decides what leaves the library
//
// None of these goes through the C-entry barrier (util/c_entry.h): they free,
// look up and walk what the fabric already holds (std::map::find included),
// allocate nothing and print through stdio only, so they cannot throw. The
// iterators also leave an exception thrown by a C++ callback to its caller.
#pragma GCC visibility push(default)
extern "C" {

void ibnd_destroy_fabric(ibnd_fabric_t* fabric) {
    if (!fabric)
        return;
    free_fabric(impl(fabric));
}

ibnd_node_t* ibnd_find_node_guid(ibnd_fabric_t* fabric, uint64_t guid) {
    if (!fabric) {
        IBND_DBG(discover, 623, "fabric parameter NULL\n");
        return nullptr;
    }
    for (ibnd_node_t* n = fabric->nodestbl[guid_hash(guid)]; n; n = n->htnext)
        if (n->guid == guid)
            return n;
    return nullptr;
}

ibnd_port_t* ibnd_find_port_guid(ibnd_fabric_t* fabric, uint64_t guid) {
    if (!fabric) {
        IBND_DBG(discover, 955, "fabric parameter NULL\n");
        return nullptr;
    }
    for (ibnd_port_t* p = fabric->portstbl[guid_hash(guid)]; p; p = p->htnext)
        if (p->guid == guid)
            return p;
    return nullptr;
}

ibnd_port_t* ibnd_find_port_lid(ibnd_fabric_t* fabric, uint16_t lid) {
    if (!fabric)
        return nullptr;
    auto& lids = impl(fabric)->extra->lids;
    auto it = lids.find(lid);
    return it == lids.end() ? nullptr : it->second;
}

ibnd_port_t* ibnd_find_port_dr(ibnd_fabric_t* fabric, char* dr_str) {
    if (!fabric) {
        IBND_DBG(discover, 974, "fabric parameter NULL\n");
        return nullptr;
    }
    if (!dr_str) {
        IBND_DBG(discover, 979, "dr_str parameter NULL\n");
        return nullptr;
    }
    ib_dr_path_t path;
    std::memset(&path, 0, sizeof(path));
    if (str2drpath(&path, dr_str, 0, 0) == -1)
        return nullptr;

    ibnd_node_t* cur = fabric->from_node;
    ibnd_port_t* found = nullptr;
    int hops = path.cnt;
    if (hops < 0 || hops >= static_cast<int>(sizeof(path.p)))
        return nullptr;
    for (int i = 0; i <= hops; ++i) {
        unsigned pn = path.p[i];
        if (pn == 0)
            continue;
        if (!cur || !cur->ports || static_cast<int>(pn) > cur->numports || !cur->ports[pn])
            return nullptr;
        ibnd_port_t* remote = cur->ports[pn]->remoteport;
        if (!remote)
            return nullptr;
        found = remote;
        cur = remote->node;
    }
    return found;
}

ibnd_node_t* ibnd_find_node_dr(ibnd_fabric_t* fabric, char* dr_str) {
    ibnd_port_t* p = ibnd_find_port_dr(fabric, dr_str);
    return p ? p->node : nullptr;
}

void ibnd_iter_nodes(ibnd_fabric_t* fabric, ibnd_iter_node_func_t func, void* user_data) {
    if (!fabric) {
        IBND_DBG(discover, 886, "fabric parameter NULL\n");
        return;
    }
    if (!func) {
        IBND_DBG(discover, 891, "func parameter NULL\n");
        return;
    }
    for (ibnd_node_t* n = fabric->nodes; n;) {
        ibnd_node_t* next = n->next;  // the callback may not free, but be safe
        func(n, user_data);
        n = next;
    }
}

void ibnd_iter_nodes_type(ibnd_fabric_t* fabric, ibnd_iter_node_func_t func, int node_type, void* user_data) {
    if (!fabric) {
        IBND_DBG(discover, 906, "fabric parameter NULL\n");
        return;
    }
    if (!func) {
        IBND_DBG(discover, 911, "func parameter NULL\n");
        return;
    }
    ibnd_node_t* list = nullptr;
    switch (node_type) {
    case IB_NODE_SWITCH: list = fabric->switches; break;
    case IB_NODE_CA: list = fabric->ch_adapters; break;
    case IB_NODE_ROUTER: list = fabric->routers; break;
    default: IBND_DBG(discover, 926, "Invalid node_type specified %d\n", node_type); break;
    }
    for (ibnd_node_t* n = list; n;) {
        ibnd_node_t* next = n->type_next;
        func(n, user_data);
        n = next;
    }
}

void ibnd_iter_ports(ibnd_fabric_t* fabric, ibnd_iter_port_func_t func, void* user_data) {
    if (!fabric) {
        IBND_DBG(discover, 1013, "fabric parameter NULL\n");
        return;
    }
    if (!func) {
        IBND_DBG(discover, 1018, "func parameter NULL\n");
        return;
    }
    for (int i = 0; i < HTSZ; ++i)
        for (ibnd_port_t* p = fabric->portstbl[i]; p;) {
            ibnd_port_t* next = p->htnext;
            func(p, user_data);
            p = next;
        }
}

}  // extern "C"
#pragma GCC visibility pop
