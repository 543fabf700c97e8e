// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// smpquery: one SMP attribute of a node or port, formatted by libibmad's
// dump functions.
#include "ibdiag_common.h"

#include <arpa/inet.h>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <endian.h>
#include <memory>
#include <string>

namespace {

struct ibmad_port* srcport;
std::unique_ptr<ibdiag::NodeNameMap> name_map;
bool extended_speeds;

int port_arg(char** argv, int argc) { return argc > 0 ? (int)strtol(argv[0], nullptr, 0) : 0; }

bool query(void* buf, ib_portid_t* dest, unsigned attr, unsigned mod) {
    return smp_query_via(buf, dest, attr, mod, 0, srcport) != nullptr;
}

const char* node_desc(ib_portid_t* dest, char**, int) {
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    if (!query(data, dest, IB_ATTR_NODE_INFO, 0))
        return "node info query failed";
    uint64_t guid = 0;
    mad_decode_field(data, IB_NODE_GUID_F, &guid);
    char nd[IB_SMP_DATA_SIZE + 1] = {};
    if (!query(nd, dest, IB_ATTR_NODE_DESC, 0))
        return "node desc query failed";
    std::string name = name_map->remap(guid, nd);
    // Dots pad the label to 32 columns; at least one.
    std::string dots(name.size() < 32 ? 32 - name.size() : 1, '.');
    printf("Node Description:%s%s\n", dots.c_str(), name.c_str());
    return nullptr;
}

const char* node_info(ib_portid_t* dest, char**, int) {
    char out[2048];
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    if (!query(data, dest, IB_ATTR_NODE_INFO, 0))
        return "node info query failed";
    mad_dump_nodeinfo(out, sizeof(out), data, sizeof(data));
    printf("# Node info: %s\n%s", portid2str(dest), out);
    return nullptr;
}

const char* port_info_extended(ib_portid_t* dest, char** argv, int argc) {
    char out[2048];
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    int portnum = port_arg(argv, argc);
    if (!ibdiag::is_port_info_extended_supported(dest, portnum, srcport))
        return "port info extended not supported";
    if (!query(data, dest, IB_ATTR_PORT_INFO_EXT, (unsigned)portnum))
        return "port info extended query failed";
    mad_dump_portinfo_ext(out, sizeof(out), data, sizeof(data));
    printf("# Port info Extended: %s port %d\n%s", portid2str(dest), portnum, out);
    return nullptr;
}

const char* port_info(ib_portid_t* dest, char** argv, int argc) {
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    int portnum = port_arg(argv, argc);
    unsigned mod = (unsigned)portnum;
    if (extended_speeds)
        mod |= 1u << 31;
    if (!query(data, dest, IB_ATTR_PORT_INFO, mod))
        return "port info query failed";
    printf("# Port info: %s port %d\n", portid2str(dest), portnum);
    ibdiag::dump_portinfo(data, 0);
    return nullptr;
}

const char* mlnx_ext_port_info(ib_portid_t* dest, char** argv, int argc) {
    char out[2300];
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    int portnum = port_arg(argv, argc);
    if (!query(data, dest, IB_ATTR_MLNX_EXT_PORT_INFO, (unsigned)portnum))
        return "Mellanox ext port info query failed";
    mad_dump_mlnx_ext_port_info(out, sizeof(out), data, sizeof(data));
    printf("# MLNX ext Port info: %s port %d\n%s", portid2str(dest), portnum, out);
    return nullptr;
}

const char* switch_info(ib_portid_t* dest, char**, int) {
    char out[2048];
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    if (!query(data, dest, IB_ATTR_SWITCH_INFO, 0))
        return "switch info query failed";
    mad_dump_switchinfo(out, sizeof(out), data, sizeof(data));
    printf("# Switch info: %s\n%s", portid2str(dest), out);
    return nullptr;
}

const char* pkey_table(ib_portid_t* dest, char** argv, int argc) {
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    int portnum = port_arg(argv, argc);
    if (!query(data, dest, IB_ATTR_NODE_INFO, 0))
        return "node info query failed";
    int type = 0, nports = 0, cap = 0;
    mad_decode_field(data, IB_NODE_TYPE_F, &type);
    mad_decode_field(data, IB_NODE_NPORTS_F, &nports);
    if (portnum > nports)
        return "invalid port number";
    // A switch's external ports have their own (enforcement) capacity.
    if (type == IB_NODE_SWITCH && portnum != 0) {
        if (!query(data, dest, IB_ATTR_SWITCH_INFO, 0))
            return "switch info failed";
        mad_decode_field(data, IB_SW_PARTITION_ENFORCE_CAP_F, &cap);
    } else {
        mad_decode_field(data, IB_NODE_PARTITION_CAP_F, &cap);
    }
    const int blocks = (cap + 31) / 32;  // 32 P_Keys per block
    for (int b = 0; b < blocks; b++) {
        unsigned mod = (unsigned)b | ((unsigned)portnum << 16);
        if (!query(data, dest, IB_ATTR_PKEY_TBL, mod))
            return "pkey table query failed";
        int shown = b + 1 == blocks ? ((cap + 7 - b * 32) / 8) * 8 : 32;
        for (int j = 0; j < shown; j += 8) {
            uint16_t k[8];
            for (int i = 0; i < 8; i++)
                k[i] = (uint16_t)(data[(j + i) * 2] << 8 | data[(j + i) * 2 + 1]);
            printf("%4u: 0x%04x 0x%04x 0x%04x 0x%04x 0x%04x 0x%04x "
                   "0x%04x 0x%04x\n",
                   (unsigned)(b * 32 + j), k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7]);
        }
    }
    printf("%d pkeys capacity for this port\n", cap);
    return nullptr;
}

const char* sl2vl_entry(ib_portid_t* dest, int in, int out_port) {
    char out[2048];
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    if (!query(data, dest, IB_ATTR_SLVL_TABLE, (unsigned)((in << 8) | out_port)))
        return "slvl query failed";
    mad_dump_sltovl(out, sizeof(out), data, sizeof(data));
    printf("ports: in %2d, out %2d: ", in, out_port);
    printf("%s", out);
    return nullptr;
}

const char* sl2vl_table(ib_portid_t* dest, char** argv, int argc) {
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    int portnum = port_arg(argv, argc);
    if (!query(data, dest, IB_ATTR_NODE_INFO, 0))
        return "node info query failed";
    int type = 0, nports = 0;
    mad_decode_field(data, IB_NODE_TYPE_F, &type);
    mad_decode_field(data, IB_NODE_NPORTS_F, &nports);
    if (portnum > nports)
        return "invalid port number";
    printf("# SL2VL table: %s\n", portid2str(dest));
    printf("#                 SL: |");
    for (int sl = 0; sl < 16; sl++)
        printf("%2d|", sl);
    printf("\n");
    if (type != IB_NODE_SWITCH)
        return sl2vl_entry(dest, 0, 0);
    for (int in = 0; in <= nports; in++)
        if (const char* err = sl2vl_entry(dest, in, portnum))
            return err;
    return nullptr;
}

const char* vlarb_block(ib_portid_t* dest, int portnum, int block, unsigned cap) {
    char out[2048];
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    if (!query(data, dest, IB_ATTR_VL_ARBITRATION, ((unsigned)block << 16) | (unsigned)portnum))
        return "vl arb query failed";
    mad_dump_vlarbitration(out, sizeof(out), data, (int)cap * 2);
    printf("%s", out);
    return nullptr;
}

// Low priority tables are blocks 1-2, high priority 3-4 (32 entries each).
const char* vlarb_dump(ib_portid_t* dest, int portnum, const char* which, int block, int cap) {
    printf("# %s priority VL Arbitration Table:", which);
    const char* err = vlarb_block(dest, portnum, block, cap < 32 ? cap : 32);
    if (!err && cap > 32)
        err = vlarb_block(dest, portnum, block + 1, (unsigned)(cap - 32));
    return err;
}

const char* vlarb_table(ib_portid_t* dest, char** argv, int argc) {
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    int portnum = port_arg(argv, argc);
    // Port 0 of a switch has tables only if it is an enhanced port 0.
    if (portnum == 0) {
        if (!query(data, dest, IB_ATTR_NODE_INFO, 0))
            return "node info query failed";
        int type = 0;
        mad_decode_field(data, IB_NODE_TYPE_F, &type);
        if (type == IB_NODE_SWITCH) {
            memset(data, 0, sizeof(data));
            if (!query(data, dest, IB_ATTR_SWITCH_INFO, 0))
                return "switch info query failed";
            int enhanced = 0;
            mad_decode_field(data, IB_SW_ENHANCED_PORT0_F, &enhanced);
            if (!enhanced) {
                printf("# No VLArbitration tables (BSP0): %s port %d\n", portid2str(dest), 0);
                return nullptr;
            }
            memset(data, 0, sizeof(data));
        }
    }
    if (!query(data, dest, IB_ATTR_PORT_INFO, (unsigned)portnum))
        return "port info query failed";
    int lowcap = 0, highcap = 0;
    mad_decode_field(data, IB_PORT_VL_ARBITRATION_LOW_CAP_F, &lowcap);
    mad_decode_field(data, IB_PORT_VL_ARBITRATION_HIGH_CAP_F, &highcap);
    printf("# VLArbitration tables: %s port %d LowCap %d HighCap %d\n", portid2str(dest), portnum, lowcap, highcap);
    const char* err = nullptr;
    if (lowcap > 0)
        err = vlarb_dump(dest, portnum, "Low", 1, lowcap);
    if (!err && highcap > 0)
        err = vlarb_dump(dest, portnum, "High", 3, highcap);
    return err;
}

const char* guid_info(ib_portid_t* dest, char**, int) {
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    if (!query(data, dest, IB_ATTR_PORT_INFO, 0))
        return "port info failed";
    int cap = 0;
    mad_decode_field(data, IB_PORT_GUID_CAP_F, &cap);
    const int blocks = (cap + 7) / 8;  // 8 GUIDs per block
    for (int b = 0; b < blocks; b++) {
        if (!query(data, dest, IB_ATTR_GUID_INFO, (unsigned)b))
            return "guid info query failed";
        int shown = b + 1 == blocks ? ((cap + 1 - b * 8) / 2) * 2 : 8;
        for (int j = 0; j < shown; j += 2) {
            uint64_t g0, g1;
            memcpy(&g0, data + j * 8, 8);
            memcpy(&g1, data + (j + 1) * 8, 8);
            printf("%4u: 0x%016" PRIx64 " 0x%016" PRIx64 "\n", (unsigned)(b * 8 + j), be64toh(g0), be64toh(g1));
        }
    }
    printf("%d guids capacity for this port\n", cap);
    return nullptr;
}

const ibdiag::MatchRec ops[] = {
    {"NodeInfo", "NI", node_info, false, ""},       {"NodeDesc", "ND", node_desc, false, ""},
    {"PortInfo", "PI", port_info, true, ""},        {"PortInfoExtended", "PIE", port_info_extended, true, ""},
    {"SwitchInfo", "SI", switch_info, false, ""},   {"PKeyTable", "PKeys", pkey_table, true, ""},
    {"SL2VLTable", "SL2VL", sl2vl_table, true, ""}, {"VLArbitration", "VLArb", vlarb_table, true, ""},
    {"GUIDInfo", "GI", guid_info, false, ""},       {"MlnxExtPortInfo", "MEPI", mlnx_ext_port_info, true, ""},
};

}  // namespace

int main(int argc, char* argv[]) {
    const char* map_file = nullptr;
    std::string usage = "<op> <dest dr_path|lid|guid> [op params]\n"
                        "\nSupported ops (and aliases, case insensitive):\n";
    for (const auto& r : ops)
        usage +=
            std::string("  ") + r.name + " (" + r.alias + ") <addr>" + (r.opt_portnum ? " [<portnum>]" : "") + "\n";

    static const ibdiag::Option opts[] = {
        {"combined", 'c', 0, nullptr, "use Combined route address argument"},
        {"node-name-map", 1, 1, "<file>", "node name map file"},
        {"extended", 'x', 0, nullptr, "use extended speeds"},
    };
    auto& cfg = ibdiag::cfg;
    int first = ibdiag::process_opts(argc, argv, nullptr, opts,
                                     [&](int ch, char* arg) {
                                         switch (ch) {
                                         case 1: map_file = arg; return 0;
                                         case 'c': cfg.dest_type = IB_DEST_DRSLID; return 0;
                                         case 'x': extended_speeds = true; return 0;
                                         default: return -1;
                                         }
                                     },
                                     usage.c_str(),
                                     {"portinfo 3 1\t\t\t\t# portinfo by lid, with port modifier",
                                      "-G switchinfo 0x2C9000100D051 1\t# switchinfo by guid",
                                      "-D nodeinfo 0\t\t\t\t# nodeinfo by direct route",
                                      "-c nodeinfo 6 0,12\t\t\t# nodeinfo by combined route"});
    argc -= first;
    argv += first;

    if (argc < 2)
        ibdiag::show_usage();
    ibdiag::OpFn* fn = ibdiag::match_op(ops, argv[0]);
    if (!fn)
        IBEXIT("operation '%s' not supported", argv[0]);

    srcport = ibdiag::open_smp_port();
    name_map = std::make_unique<ibdiag::NodeNameMap>(map_file);

    ib_portid_t portid{};
    if (cfg.dest_type != IB_DEST_DRSLID) {
        ibdiag::resolve_dest(&portid, argv[1], cfg.sm_id, srcport);
        if (const char* err = fn(&portid, argv + 2, argc - 2))
            IBEXIT("operation %s: %s", argv[0], err);
    } else {
        // "-c <lid> <path>": the two arguments joined by a space.
        char joined[64] = {};
        snprintf(joined, sizeof(joined), "%s %s", argv[1], argc > 2 ? argv[2] : "(null)");
        ibdiag::resolve_dest(&portid, joined, cfg.sm_id, srcport);
        if (const char* err = fn(&portid, argv + 3, argc - 3))
            IBEXIT("operation %s: %s", argv[0], err);
    }
    mad_rpc_close_port(srcport);
    return 0;
}
