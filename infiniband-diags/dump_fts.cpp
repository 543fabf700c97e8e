// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// dump_fts: the unicast or multicast forwarding tables of every switch,
// found by one libibnetdisc sweep (destinations resolved from the sweep
// rather than with more MADs).
#include "ibdiag_common.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <infiniband/ibnetdisc.h>
#include <memory>
#include <string>

namespace {

struct ibmad_port* srcport;
std::unique_ptr<ibdiag::NodeNameMap> name_map;
ibdiag::FwdDumpOpts fwd;
unsigned startlid, endlid;

// What is behind `lid` (nothing with -n), from the sweep.
std::string lid_info(int lid, bool valid, ibnd_fabric_t* fabric, ibdiag::LmcRange& r) {
    return ibdiag::lid_dest_info(lid, valid, fwd.brief, r, [&]() -> std::string {
        ibnd_port_t* port = ibnd_find_port_lid(fabric, (uint16_t)lid);
        if (!port)
            return ": (node info not available fabric scan)";
        r.portguid = port->guid;
        r.enter(port->base_lid, port->lmc);
        return ibdiag::port_dest_text(port->node->type, r.portguid,
                                      name_map->remap(port->node->guid, port->node->nodedesc));
    });
}

void process_switch(ibnd_node_t* node, void* fabric) {
    ibdiag::FwdSwitch sw{&node->path_portid, node->guid, (unsigned)node->numports, node->switchinfo,
                         name_map->remap(node->guid, node->nodedesc)};
    ibdiag::LmcRange range;
    ibdiag::dump_fwd_tables(
        sw, startlid, endlid, fwd, srcport,
        // reported, and the old contents shown, as the reference does
        [&](const char* table, int status, unsigned mod) {
            fprintf(stderr,
                    "SubnGet(%s) failed on switch '%s' %s "
                    "Node GUID 0x%" PRIx64 " SMA LID %d; MAD status "
                    "0x%x AM 0x%x\n",
                    table, sw.name.c_str(), portid2str(sw.portid), node->guid, node->smalid, status, mod);
            return true;
        },
        [&](int lid, bool valid) { return lid_info(lid, valid, static_cast<ibnd_fabric_t*>(fabric), range); });
}

}  // namespace

int main(int argc, char* argv[]) {
    const char* map_file = nullptr;
    int first =
        ibdiag::process_fwd_opts(argc, argv, "KGDLs", fwd, &map_file,
                                 {" -- Unicast examples:", "-a\t# same, but dump all lids, even with invalid out ports",
                                  "-n\t# simple dump format - no destination resolving",
                                  "10\t# dump lids starting from 10", "0x10 0x20\t# dump lid range",
                                  " -- Multicast examples:", "-M\t# dump all non empty mlids of switch with lid 4",
                                  "-M 0xc010 0xc020\t# same, but with range", "-M -n\t# simple dump format"});
    argc -= first;
    argv += first;
    auto& cfg = ibdiag::cfg;

    if (argc > 0)
        startlid = (unsigned)strtoul(argv[0], nullptr, 0);
    if (argc > 1)
        endlid = (unsigned)strtoul(argv[1], nullptr, 0);

    name_map = std::make_unique<ibdiag::NodeNameMap>(map_file);

    struct ibnd_config config {};
    if (cfg.timeout)
        config.timeout_ms = (unsigned)cfg.timeout;
    config.flags = cfg.ibnetdisc_flags;
    config.mkey = cfg.mkey;

    int rc = 0;
    ibnd_fabric_t* fabric = ibnd_discover_fabric(cfg.ca, cfg.ca_port, nullptr, &config);
    if (fabric) {
        int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS};
        srcport = mad_rpc_open_port(cfg.ca, cfg.ca_port, classes, 3);
        if (!srcport) {
            fprintf(stderr, "Failed to open '%s' port '%d'\n", cfg.ca, cfg.ca_port);
            rc = -1;
        } else {
            smp_mkey_set(srcport, cfg.mkey);
            if (cfg.timeout)
                mad_rpc_set_timeout(srcport, cfg.timeout);
            ibnd_iter_nodes_type(fabric, process_switch, IB_NODE_SWITCH, fabric);
            mad_rpc_close_port(srcport);
        }
    } else {
        fprintf(stderr, "Failed to discover fabric\n");
        rc = -1;
    }
    ibnd_destroy_fabric(fabric);
    return rc == 0 ? 0 : 255;
}
