// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// ibroute: a switch's unicast (linear) or multicast forwarding table, with
// each destination LID resolved to the node behind it.
#include "ibdiag_common.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace {

struct ibmad_port* srcport;
std::unique_ptr<ibdiag::NodeNameMap> name_map;
ibdiag::FwdDumpOpts fwd;

const char* check_switch(ib_portid_t* portid, unsigned* nports, uint64_t* guid, uint8_t* sw, char* nd) {
    uint8_t ni[IB_SMP_DATA_SIZE] = {};
    IBDIAG_DEBUG("checking node type");
    if (!smp_query_via(ni, portid, IB_ATTR_NODE_INFO, 0, 0, srcport)) {
        xdump(stderr, "nodeinfo\n", ni, sizeof(ni));
        return "node info failed: valid addr?";
    }
    if (!smp_query_via(nd, portid, IB_ATTR_NODE_DESC, 0, 0, srcport))
        return "node desc failed";
    int type = 0;
    mad_decode_field(ni, IB_NODE_TYPE_F, &type);
    if (type != IB_NODE_SWITCH)
        return "not a switch";
    IBDIAG_DEBUG("Gathering information about switch");
    mad_decode_field(ni, IB_NODE_NPORTS_F, nports);
    mad_decode_field(ni, IB_NODE_GUID_F, guid);
    if (!smp_query_via(sw, portid, IB_ATTR_SWITCH_INFO, 0, 0, srcport))
        return "switch info failed: is a switch node?";
    return nullptr;
}

// What is behind `lid` (nothing in brief mode), asked of its port. LIDs
// of an LMC range after the first are described by their path number, as
// the reference does.
std::string lid_info(int lid, bool valid) {
    static ibdiag::LmcRange range;
    return ibdiag::lid_dest_info(lid, valid, fwd.brief, range, [lid]() -> std::string {
        ib_portid_t lidport{};
        lidport.lid = lid;
        char nd[IB_SMP_DATA_SIZE] = {};
        uint8_t pi[IB_SMP_DATA_SIZE] = {};
        uint8_t ni[IB_SMP_DATA_SIZE] = {};
        if (!smp_query_via(nd, &lidport, IB_ATTR_NODE_DESC, 0, 100, srcport) ||
            !smp_query_via(pi, &lidport, IB_ATTR_PORT_INFO, 0, 100, srcport) ||
            !smp_query_via(ni, &lidport, IB_ATTR_NODE_INFO, 0, 100, srcport))
            return ": (unknown node and type)";

        uint64_t nodeguid = 0;
        int type = 0, baselid = 0, lmc = 0;
        mad_decode_field(ni, IB_NODE_GUID_F, &nodeguid);
        mad_decode_field(ni, IB_NODE_PORT_GUID_F, &range.portguid);
        mad_decode_field(ni, IB_NODE_TYPE_F, &type);
        mad_decode_field(pi, IB_PORT_LID_F, &baselid);
        mad_decode_field(pi, IB_PORT_LMC_F, &lmc);
        range.enter(baselid, lmc);
        return ibdiag::port_dest_text(type, range.portguid, name_map->remap(nodeguid, nd));
    });
}

// The switch's multicast (-M) or unicast table; the reason when the
// destination is no switch or can't be asked.
const char* dump_tables(ib_portid_t* portid, unsigned startlid, unsigned endlid) {
    char nd[IB_SMP_DATA_SIZE] = {};
    uint8_t sw[IB_SMP_DATA_SIZE] = {};
    uint64_t nodeguid = 0;
    unsigned nports = 0;
    if (const char* err = check_switch(portid, &nports, &nodeguid, sw, nd))
        return err;
    ibdiag::FwdSwitch fs{portid, nodeguid, nports, sw, name_map->remap(nodeguid, nd)};

    // A block that can't be read ends the dump, without its count line.
    ibdiag::dump_fwd_tables(
        fs, startlid, endlid, fwd, srcport,
        [](const char*, int status, unsigned mod) {
            fprintf(stderr,
                    "SubnGet() failed"
                    "; MAD status 0x%x AM 0x%x\n",
                    status, mod);
            return false;
        },
        lid_info);
    return nullptr;
}

}  // namespace

int main(int argc, char* argv[]) {
    const char* map_file = nullptr;
    int first = ibdiag::process_fwd_opts(
        argc, argv, "K", fwd, &map_file,
        {" -- Unicast examples:", "4\t# dump all lids with valid out ports of switch with lid 4",
         "-a 4\t# same, but dump all lids, even with invalid out ports",
         "-n 4\t# simple dump format - no destination resolving", "4 10\t# dump lids starting from 10",
         "4 0x10 0x20\t# dump lid range", "-G 0x08f1040023\t# resolve switch by GUID",
         "-D 0,1\t# resolve switch by direct path",
         " -- Multicast examples:", "-M 4\t# dump all non empty mlids of switch with lid 4",
         "-M 4 0xc010 0xc020\t# same, but with range", "-M -n 4\t# simple dump format"});
    argc -= first;
    argv += first;
    auto& cfg = ibdiag::cfg;

    if (!argc)
        ibdiag::show_usage();
    unsigned startlid = 0, endlid = 0;
    if (argc > 1)
        startlid = (unsigned)strtoul(argv[1], nullptr, 0);
    if (argc > 2)
        endlid = (unsigned)strtoul(argv[2], nullptr, 0);

    name_map = std::make_unique<ibdiag::NodeNameMap>(map_file);

    srcport = ibdiag::open_smp_port();

    ib_portid_t portid{};
    ibdiag::resolve_dest(&portid, argv[0], cfg.sm_id, srcport);

    if (const char* err = dump_tables(&portid, startlid, endlid))
        IBEXIT("dump tables: %s", err);
    mad_rpc_close_port(srcport);
    return 0;
}
