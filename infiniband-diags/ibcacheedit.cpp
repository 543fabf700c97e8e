// ibcacheedit: rewrite GUIDs in an ibnetdiscover cache file (a replaced
// switch or HCA keeps its place in a cached topology).

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>

#include "ibdiag_common.h"
#include "netdisc_common.h"

namespace {

struct Edit {
    uint64_t node = 0;  // --portguid only: the node holding the port
    uint64_t before = 0;
    uint64_t after = 0;
};

std::optional<Edit> switch_edit, ca_edit, sysimg_edit, port_edit;

// "A:B" (and "N:A:B" with with_node). Each part after a colon must be
// non-empty; the numbers are strtoull's (base prefix allowed, junk is 0).
bool parse_edit(const char* arg, bool with_node, Edit& e) {
    std::string text(arg);
    size_t c1 = text.find(':');
    if (c1 == std::string::npos || c1 + 1 == text.size()) {
        fprintf(stderr, "invalid input '%s'\n", arg);
        return false;
    }
    auto num = [&](size_t from, size_t to) { return strtoull(text.substr(from, to - from).c_str(), nullptr, 0); };
    if (!with_node) {
        e.before = num(0, c1);
        e.after = num(c1 + 1, text.size());
        return true;
    }
    size_t c2 = text.find(':', c1 + 1);
    if (c2 == std::string::npos || c2 + 1 == text.size()) {
        fprintf(stderr, "invalid input '%s'\n", arg);
        return false;
    }
    e.node = num(0, c1);
    e.before = num(c1 + 1, c2);
    e.after = num(c2 + 1, text.size());
    return true;
}

int take_option(int ch, char* arg) {
    Edit e;
    switch (ch) {
    case 1:
        if (!parse_edit(arg, false, e))
            return -1;
        switch_edit = e;
        break;
    case 2:
        if (!parse_edit(arg, false, e))
            return -1;
        ca_edit = e;
        break;
    case 3:
        if (!parse_edit(arg, false, e))
            return -1;
        sysimg_edit = e;
        break;
    case 4:
        if (!parse_edit(arg, true, e))
            return -1;
        port_edit = e;
        break;
    default: return -1;
    }
    return 0;
}

// A switch's ports all carry the switch's GUID.
void switch_ports_follow(ibnd_node_t* node) {
    for (int p = 0; p <= node->numports; p++)
        if (node->ports[p])
            node->ports[p]->guid = node->guid;
}

template <typename Fn>
void each_node(ibnd_fabric_t* fabric, int type, Fn fn) {
    // the list, not the hash table: GUIDs change while walking
    for (ibnd_node_t* n = fabric->nodes; n; n = n->next)
        if (!type || n->type == type)
            fn(n);
}

int rename_nodes(ibnd_fabric_t* fabric, int type, const Edit& e) {
    int found = 0;
    each_node(fabric, type, [&](ibnd_node_t* n) {
        if (n->guid != e.before)
            return;
        n->guid = e.after;
        if (n->type == IB_NODE_SWITCH)
            switch_ports_follow(n);
        found++;
    });
    return found;
}

}  // namespace

int main(int argc, char** argv) {
    static const ibdiag::Option options[] = {
        {"switchguid", 1, 1, "BEFOREGUID:AFTERGUID", "Specify before and after switchguid to edit"},
        {"caguid", 2, 1, "BEFOREGUID:AFTERGUID", "Specify before and after caguid to edit"},
        {"sysimgguid", 3, 1, "BEFOREGUID:AFTERGUID", "Specify before and after sysimgguid to edit"},
        {"portguid", 4, 1, "NODEGUID:BEFOREGUID:AFTERGUID", "Specify before and after port guid to edit"},
    };
    int first = ibdiag::process_opts(argc, argv, "CDdeGKLPstvy", options, take_option, "<orig.cache> <new.cache>");
    argc -= first;
    argv += first;
    const char* orig = argc > 0 ? argv[0] : nullptr;
    const char* updated = argc > 1 ? argv[1] : nullptr;
    if (!orig)
        IBEXIT("original cache file not specified");
    if (!updated)
        IBEXIT("new cache file not specified");

    netdisc::Fabric fabric(ibnd_load_fabric(orig, 0));
    if (!fabric)
        IBEXIT("loading original cached fabric failed");

    if (switch_edit && !rename_nodes(fabric.get(), IB_NODE_SWITCH, *switch_edit))
        IBEXIT("switchguid = %" PRIx64 " not found", switch_edit->before);
    if (ca_edit && !rename_nodes(fabric.get(), IB_NODE_CA, *ca_edit))
        IBEXIT("caguid = %" PRIx64 " not found", ca_edit->before);
    if (sysimg_edit) {
        int found = 0;
        each_node(fabric.get(), 0, [&](ibnd_node_t* n) {
            if (mad_get_field64(n->info, 0, IB_NODE_SYSTEM_GUID_F) != sysimg_edit->before)
                return;
            mad_set_field64(n->info, 0, IB_NODE_SYSTEM_GUID_F, sysimg_edit->after);
            found++;
        });
        if (!found)
            IBEXIT("sysimgguid = %" PRIx64 " not found", sysimg_edit->before);
    }
    if (port_edit) {
        int nodes = 0, found = 0;
        each_node(fabric.get(), 0, [&](ibnd_node_t* n) {
            if (n->guid != port_edit->node)
                return;
            nodes++;
            if (n->type == IB_NODE_SWITCH) {
                // the port GUID is the switch GUID
                if (n->guid == port_edit->before) {
                    n->guid = port_edit->after;
                    switch_ports_follow(n);
                    found++;
                }
                return;
            }
            for (int p = 1; p <= n->numports; p++) {
                ibnd_port_t* port = n->ports[p];
                if (port && port->guid == port_edit->before) {
                    port->guid = port_edit->after;
                    found++;
                    break;
                }
            }
        });
        if (!nodes)
            IBEXIT("nodeguid = %" PRIx64 " not found", port_edit->node);
        if (!found)
            IBEXIT("portguid = %" PRIx64 " not found", port_edit->before);
    }

    if (ibnd_cache_fabric(fabric.get(), updated, 0) < 0)
        IBEXIT("caching new cache data failed");
    return 0;
}
