// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// ibaddr: the GID and LID range of a port (the local one by default).
#include "ibdiag_common.h"

#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>

namespace {

struct ibmad_port* srcport;

// show_lid: >0 hexadecimal LIDs, <0 decimal, 0 none.
int print_address(ib_portid_t* portid, int portnum, int show_lid, bool show_gid) {
    uint8_t nodeinfo[IB_SMP_DATA_SIZE] = {};
    uint8_t portinfo[IB_SMP_DATA_SIZE] = {};
    if (!smp_query_via(nodeinfo, portid, IB_ATTR_NODE_INFO, 0, 0, srcport))
        return -1;
    if (!smp_query_via(portinfo, portid, IB_ATTR_PORT_INFO, portnum, 0, srcport))
        return -1;

    uint64_t prefix = 0, guid = 0;
    int lmc = 0;
    mad_decode_field(portinfo, IB_PORT_LID_F, &portid->lid);
    mad_decode_field(portinfo, IB_PORT_GID_PREFIX_F, &prefix);
    mad_decode_field(portinfo, IB_PORT_LMC_F, &lmc);
    mad_decode_field(nodeinfo, IB_NODE_PORT_GUID_F, &guid);

    ibmad_gid_t gid;
    mad_encode_field(gid, IB_GID_PREFIX_F, &prefix);
    mad_encode_field(gid, IB_GID_GUID_F, &guid);
    if (show_gid) {
        char text[INET6_ADDRSTRLEN];
        printf("GID %s ", inet_ntop(AF_INET6, gid, text, sizeof(text)));
    }
    int last = portid->lid + (1 << lmc) - 1;
    if (show_lid > 0)
        printf("LID start 0x%x end 0x%x", portid->lid, last);
    else if (show_lid < 0)
        printf("LID start %u end %u", portid->lid, last);
    printf("\n");
    return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
    int show_lid = 0;
    bool show_gid = false;
    static const ibdiag::Option opts[] = {
        {"gid_show", 'g', 0, nullptr, "show gid address only"},
        {"lid_show", 'l', 0, nullptr, "show lid range only"},
        {"Lid_show", 'L', 0, nullptr, "show lid range (in decimal) only"},
    };
    int first = ibdiag::process_opts(argc, argv, "KL", opts,
                                     [&](int ch, char*) {
                                         switch (ch) {
                                         case 'g': show_gid = true; return 0;
                                         case 'l': show_lid++; return 0;
                                         case 'L': show_lid = -100; return 0;
                                         default: return -1;
                                         }
                                     },
                                     "[<lid|dr_path|guid>]",
                                     {"\t\t# local port's address", "32\t\t# show lid range and gid of lid 32",
                                      "-G 0x8f1040023\t# same but using guid address", "-l 32\t\t# show lid range only",
                                      "-L 32\t\t# show decimal lid range only", "-g 32\t\t# show gid address only"});
    argc -= first;
    argv += first;
    auto& cfg = ibdiag::cfg;

    int port = 0;
    if (argc > 1)
        port = (int)strtoul(argv[1], nullptr, 0);
    if (!show_lid && !show_gid) {
        show_lid = 1;
        show_gid = true;
    }

    srcport = ibdiag::open_smp_port();

    ib_portid_t portid{};
    if (argc) {
        ibdiag::resolve_dest(&portid, argv[0], cfg.sm_id, srcport);
    } else if (ibdiag::resolve_self(cfg.ca, (uint8_t)cfg.ca_port, &portid, &port, nullptr) < 0) {
        IBEXIT("can't resolve self port %s", argv[0]);
    }

    if (print_address(&portid, port, show_lid, show_gid) < 0)
        IBEXIT("can't resolve requested address");
    mad_rpc_close_port(srcport);
    return 0;
}
