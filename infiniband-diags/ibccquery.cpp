// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// ibccquery: read the Congestion Control class attributes of a port
// (ClassPortInfo, CongestionInfo, CongestionKeyInfo, CongestionLog, the
// switch and CA settings, the congestion control table, Timestamp),
// authenticated with the CC key given by -c.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/ibdiag_common.h"

namespace {

using namespace ibdiag;

struct ibmad_port* srcport;
uint64_t cckey;

// Queries one CC attribute into data (IB_CC_DATA_SZ or the log's size).
bool cc_get(void* data, ib_portid_t* dest, unsigned attr, unsigned mod) {
    return cc_query_status_via(data, dest, attr, mod, 0, nullptr, srcport, cckey) != nullptr;
}

// The attributes that are one query and one dump.
template <unsigned Attr>
const char* simple_dump(ib_portid_t* dest, const char* title, void (*dump)(char*, int, void*, int),
                        const char* failure) {
    char buf[2048];
    char data[IB_CC_DATA_SZ] = {};

    if (!cc_get(data, dest, Attr, 0))
        return failure;
    dump(buf, sizeof buf, data, sizeof data);
    printf("# %s: %s\n%s", title, portid2str(dest), buf);
    return nullptr;
}

const char* class_port_info(ib_portid_t* dest, char**, int) {
    return simple_dump<CLASS_PORT_INFO>(dest, "ClassPortInfo", mad_dump_classportinfo, "class port info query failed");
}

const char* congestion_info(ib_portid_t* dest, char**, int) {
    return simple_dump<IB_CC_ATTR_CONGESTION_INFO>(dest, "CongestionInfo", mad_dump_cc_congestioninfo,
                                                   "congestion info query failed");
}

const char* congestion_key_info(ib_portid_t* dest, char**, int) {
    return simple_dump<IB_CC_ATTR_CONGESTION_KEY_INFO>(dest, "CongestionKeyInfo", mad_dump_cc_congestionkeyinfo,
                                                       "congestion key info query failed");
}

const char* switch_congestion_setting(ib_portid_t* dest, char**, int) {
    return simple_dump<IB_CC_ATTR_SWITCH_CONGESTION_SETTING>(
        dest, "SwitchCongestionSetting", mad_dump_cc_switchcongestionsetting, "switch congestion setting query failed");
}

const char* timestamp_dump(ib_portid_t* dest, char**, int) {
    return simple_dump<IB_CC_ATTR_TIMESTAMP>(dest, "Timestamp", mad_dump_cc_timestamp, "timestamp query failed");
}

bool all_zero(const char* p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

const char* congestion_log(ib_portid_t* dest, char**, int) {
    char buf[2048];
    char data[IB_CC_LOG_DATA_SZ] = {};
    int type = 0;

    if (!cc_get(data, dest, IB_CC_ATTR_CONGESTION_LOG, 0))
        return "congestion log query failed";
    mad_decode_field(reinterpret_cast<uint8_t*>(data), IB_CC_CONGESTION_LOG_LOGTYPE_F, &type);
    if (type != 1 && type != 2)
        return "unrecognized log type";

    mad_dump_cc_congestionlog(buf, sizeof buf, data, sizeof data);
    printf("# CongestionLog: %s\n%s", portid2str(dest), buf);
    if (type == 1) {
        // switch log: 15 events of 12 bytes from offset 40
        mad_dump_cc_congestionlogswitch(buf, sizeof buf, data, sizeof data);
        printf("%s\n", buf);
        for (int i = 0; i < 15; i++) {
            char* ev = data + 40 + i * 12;
            if (all_zero(ev, 12))
                continue;
            mad_dump_cc_congestionlogentryswitch(buf, sizeof buf, ev, 12);
            printf("%s\n", buf);
        }
    } else {
        // CA log: 13 events of 16 bytes from offset 12
        mad_dump_cc_congestionlogca(buf, sizeof buf, data, sizeof data);
        printf("%s\n", buf);
        for (int i = 0; i < 13; i++) {
            char* ev = data + 12 + i * 16;
            if (all_zero(ev, 16))
                continue;
            mad_dump_cc_congestionlogentryca(buf, sizeof buf, ev, 16);
            printf("%s\n", buf);
        }
    }
    return nullptr;
}

const char* switch_port_congestion_setting(ib_portid_t* dest, char** argv, int argc) {
    char buf[2048];
    char data[IB_CC_DATA_SZ] = {};
    int type = 0, numports = 0, portnum = 0;

    if (argc > 0)
        portnum = int(strtol(argv[0], nullptr, 0));

    // the number of ports tells how many blocks of 48 there are
    if (!smp_query_via(data, dest, IB_ATTR_NODE_INFO, 0, 0, srcport))
        return "node info query failed";
    mad_decode_field(reinterpret_cast<uint8_t*>(data), IB_NODE_TYPE_F, &type);
    mad_decode_field(reinterpret_cast<uint8_t*>(data), IB_NODE_NPORTS_F, &numports);
    if (type != IB_NODE_SWITCH)
        return "destination not a switch";

    printf("# SwitchPortCongestionSetting: %s\n", portid2str(dest));
    if (portnum) {
        if (portnum > numports)
            return "invalid port number specified";
        memset(data, 0, sizeof data);
        if (!cc_get(data, dest, IB_CC_ATTR_SWITCH_PORT_CONGESTION_SETTING, unsigned(portnum / 48)))
            return "switch port congestion setting query failed";
        // a negative port (strtol) stays out of the block
        if (portnum < 0)
            return "invalid port number specified";
        mad_dump_cc_switchportcongestionsettingelement(buf, sizeof buf, data + (portnum % 48) * 4, 4);
        printf("%s", buf);
        return nullptr;
    }

    int blocks = numports / 48 + 1, shown = 0;
    for (int i = 0; i < blocks; i++) {
        memset(data, 0, sizeof data);
        if (!cc_get(data, dest, IB_CC_ATTR_SWITCH_PORT_CONGESTION_SETTING, unsigned(i)))
            return "switch port congestion setting query failed";
        for (int j = 0; j < 48 && shown <= numports; j++, shown++) {
            printf("Port:............................%u\n", unsigned(i * 48 + j));
            mad_dump_cc_switchportcongestionsettingelement(buf, sizeof buf, data + j * 4, 4);
            printf("%s\n", buf);
        }
    }
    return nullptr;
}

const char* ca_congestion_setting(ib_portid_t* dest, char**, int) {
    char buf[2048];
    char data[IB_CC_DATA_SZ] = {};

    if (!cc_get(data, dest, IB_CC_ATTR_CA_CONGESTION_SETTING, 0))
        return "ca congestion setting query failed";
    mad_dump_cc_cacongestionsetting(buf, sizeof buf, data, sizeof data);
    printf("# CACongestionSetting: %s\n%s\n", portid2str(dest), buf);
    for (unsigned sl = 0; sl < 16; sl++) {
        printf("SL:..............................%u\n", sl);
        mad_dump_cc_cacongestionentry(buf, sizeof buf, data + 4 + sl * 8, 8);
        printf("%s\n", buf);
    }
    return nullptr;
}

const char* congestion_control_table(ib_portid_t* dest, char**, int) {
    char buf[2048];
    char data[IB_CC_DATA_SZ] = {};
    int limit = 0, shown = 0;

    if (!cc_get(data, dest, IB_CC_ATTR_CONGESTION_CONTROL_TABLE, 0))
        return "congestion control table query failed";
    mad_decode_field(reinterpret_cast<uint8_t*>(data), IB_CC_CONGESTION_CONTROL_TABLE_CCTI_LIMIT_F, &limit);
    mad_dump_cc_congestioncontroltable(buf, sizeof buf, data, sizeof data);
    printf("# CongestionControlTable: %s\n%s\n", portid2str(dest), buf);
    if (!limit)
        return nullptr;

    // 64 entries per block; the first block is already here
    for (int i = 0; i < limit / 64 + 1; i++) {
        if (i && !cc_get(data, dest, IB_CC_ATTR_CONGESTION_CONTROL_TABLE, unsigned(i)))
            return "congestion control table query failed";
        for (int j = 0; j < 64 && shown <= limit; j++, shown++) {
            printf("Entry:...........................%u\n", unsigned(i * 64 + j));
            mad_dump_cc_congestioncontroltableentry(buf, sizeof buf, data + 4 + j * 2, int(sizeof data) - 4 - j * 2);
            printf("%s\n", buf);
        }
    }
    return nullptr;
}

const MatchRec match_tbl[] = {
    {"ClassPortInfo", "CP", class_port_info, false, ""},
    {"CongestionInfo", "CI", congestion_info, false, ""},
    {"CongestionKeyInfo", "CK", congestion_key_info, false, ""},
    {"CongestionLog", "CL", congestion_log, false, ""},
    {"SwitchCongestionSetting", "SS", switch_congestion_setting, false, ""},
    {"SwitchPortCongestionSetting", "SP", switch_port_congestion_setting, true, ""},
    {"CACongestionSetting", "CS", ca_congestion_setting, false, ""},
    {"CongestionControlTable", "CT", congestion_control_table, false, ""},
    {"Timestamp", "TI", timestamp_dump, false, ""},
};

}  // namespace

int main(int argc, char** argv) {
    int mgmt_classes[3] = {IB_SMI_CLASS, IB_SA_CLASS, IB_CC_CLASS};

    std::string usage = "[-c key] <op> <lid|guid>\n"
                        "\nSupported ops (and aliases, case insensitive):\n";
    for (const MatchRec& r : match_tbl)
        usage +=
            std::string("  ") + r.name + " (" + r.alias + ") <lid|guid>" + (r.opt_portnum ? " [<portnum>]" : "") + "\n";

    int first = process_cc_opts(argc, argv, usage.c_str(), &cckey,
                                {"CongestionInfo 3\t\t\t# Congestion Info by lid",
                                 "SwitchPortCongestionSetting 3\t# Query all Switch Port Congestion Settings",
                                 "SwitchPortCongestionSetting 3 1\t# Query Switch Port Congestion Setting for port 1"});
    argc -= first;
    argv += first;

    run_op(match_tbl, mgmt_classes, srcport, argc, argv);
    return 0;
}
