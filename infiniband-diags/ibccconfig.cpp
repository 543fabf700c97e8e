// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// ibccconfig: set the Congestion Control class attributes of a port
// (CongestionKeyInfo, the switch and switch-port settings, the CA setting,
// a block of the congestion control table), authenticated with -c's CC key.
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/ibdiag_common.h"

namespace {

using namespace ibdiag;

struct ibmad_port* srcport;
uint64_t cckey;

// Whole-string numbers, with the reference's two complaints.
const char* parse_u64(const char* arg, uint64_t* val) {
    char* end = nullptr;
    errno = 0;
    *val = strtoull(arg, &end, 0);
    if ((end && *end) || errno) {
        if (errno == ERANGE)
            return "value out of range";
        return "invalid integer input";
    }
    return nullptr;
}

const char* parse_u32(const char* arg, uint32_t* val, bool hex_only = false) {
    char* end = nullptr;
    errno = 0;
    unsigned long v = strtoul(arg, &end, hex_only ? 16 : 0);
    *val = uint32_t(v);
    if ((end && *end) || errno) {
        if (errno == ERANGE)
            return "value out of range";
        return "invalid integer input";
    }
    return nullptr;
}

// A hex number of up to 256 bits, stored big-endian in buf[32].
const char* parse256(const char* arg, uint8_t* buf) {
    if (!strncmp(arg, "0x", 2) || !strncmp(arg, "0X", 2))
        arg += 2;
    size_t digits = 0;
    for (const char* p = arg; *p; p++) {
        if (!isxdigit(static_cast<unsigned char>(*p)))
            return "invalid hex digit read";
        digits++;
    }
    if (digits > 64)
        return "hex code too long";
    // An empty string still fills the last byte, from "" (0).
    int start = 32 - (int(digits) - 1) / 2 - 1;
    if (digits == 0)
        start = 31;
    for (int i = start; i <= 31; i++) {
        char pair[3] = {};
        size_t take = (i == start && digits % 2) ? 1 : 2;
        size_t avail = strlen(arg);
        if (take > avail)
            take = avail;
        memcpy(pair, arg, take);
        arg += take;
        uint32_t v = 0;
        if (const char* err = parse_u32(pair, &v, true))
            return err;
        buf[i] = uint8_t(v);
    }
    return nullptr;
}

// "shift:multiplier"
const char* parsecct(const char* arg, uint32_t* shift, uint32_t* mult) {
    std::string s = arg;
    size_t colon = s.find(':');
    if (colon == std::string::npos)
        return "ccts are formatted shift:multiplier";
    if (const char* err = parse_u32(s.substr(0, colon).c_str(), shift))
        return err;
    return parse_u32(s.c_str() + colon + 1, mult);
}

bool cc_set(uint8_t* payload, ib_portid_t* dest, unsigned attr, unsigned mod) {
    uint8_t rcv[IB_CC_DATA_SZ] = {};
    return cc_config_status_via(payload, rcv, dest, attr, mod, 0, nullptr, srcport, cckey) != nullptr;
}

const char* congestion_key_info(ib_portid_t* dest, char** argv, int argc) {
    uint8_t payload[IB_CC_DATA_SZ] = {};
    uint64_t key = 0;
    uint32_t protect = 0, lease = 0, violations = 0;
    const char* err;

    if (argc != 4)
        return "invalid number of parameters for CongestionKeyInfo";
    if ((err = parse_u64(argv[0], &key)) || (err = parse_u32(argv[1], &protect)) ||
        (err = parse_u32(argv[2], &lease)) || (err = parse_u32(argv[3], &violations)))
        return err;
    if (protect != 0 && protect != 1)
        return "invalid cc_keyprotectbit value";
    if (lease > USHRT_MAX)
        return "invalid cc_keyleaseperiod value";
    if (violations > USHRT_MAX)
        return "invalid cc_keyviolations value";

    mad_set_field64(payload, 0, IB_CC_CONGESTION_KEY_INFO_CC_KEY_F, key);
    mad_encode_field(payload, IB_CC_CONGESTION_KEY_INFO_CC_KEY_PROTECT_BIT_F, &protect);
    mad_encode_field(payload, IB_CC_CONGESTION_KEY_INFO_CC_KEY_LEASE_PERIOD_F, &lease);
    // a non-zero violations value leaves the agent's counter unchanged
    mad_encode_field(payload, IB_CC_CONGESTION_KEY_INFO_CC_KEY_VIOLATIONS_F, &violations);
    if (!cc_set(payload, dest, IB_CC_ATTR_CONGESTION_KEY_INFO, 0))
        return "congestion key info config failed";
    return nullptr;
}

const char* switch_congestion_setting(ib_portid_t* dest, char** argv, int argc) {
    uint8_t payload[IB_CC_DATA_SZ] = {};
    uint32_t control_map = 0, threshold = 0, packet_size = 0;
    uint32_t cs_threshold = 0, delay_shift = 0, delay_mult = 0;
    uint32_t marking_rate = 0;
    uint8_t victim[32] = {}, credit[32] = {};
    const char* err;

    if (argc != 8)
        return "invalid number of parameters for SwitchCongestionSetting";
    if ((err = parse_u32(argv[0], &control_map)) || (err = parse256(argv[1], victim)) ||
        (err = parse256(argv[2], credit)) || (err = parse_u32(argv[3], &threshold)) ||
        (err = parse_u32(argv[4], &packet_size)) || (err = parse_u32(argv[5], &cs_threshold)) ||
        (err = parsecct(argv[6], &delay_shift, &delay_mult)) || (err = parse_u32(argv[7], &marking_rate)))
        return err;
    uint32_t return_delay = delay_mult | (delay_shift << 14);

    mad_encode_field(payload, IB_CC_SWITCH_CONGESTION_SETTING_CONTROL_MAP_F, &control_map);
    mad_set_array(payload, 0, IB_CC_SWITCH_CONGESTION_SETTING_VICTIM_MASK_F, victim);
    mad_set_array(payload, 0, IB_CC_SWITCH_CONGESTION_SETTING_CREDIT_MASK_F, credit);
    mad_encode_field(payload, IB_CC_SWITCH_CONGESTION_SETTING_THRESHOLD_F, &threshold);
    mad_encode_field(payload, IB_CC_SWITCH_CONGESTION_SETTING_PACKET_SIZE_F, &packet_size);
    mad_encode_field(payload, IB_CC_SWITCH_CONGESTION_SETTING_CS_THRESHOLD_F, &cs_threshold);
    mad_encode_field(payload, IB_CC_SWITCH_CONGESTION_SETTING_CS_RETURN_DELAY_F, &return_delay);
    mad_encode_field(payload, IB_CC_SWITCH_CONGESTION_SETTING_MARKING_RATE_F, &marking_rate);
    if (!cc_set(payload, dest, IB_CC_ATTR_SWITCH_CONGESTION_SETTING, 0))
        return "switch congestion setting config failed";
    return nullptr;
}

const char* switch_port_congestion_setting(ib_portid_t* dest, char** argv, int argc) {
    uint8_t payload[IB_CC_DATA_SZ] = {};
    uint8_t data[IB_CC_DATA_SZ] = {};
    uint32_t portnum = 0, valid = 0, control_type = 0, threshold = 0;
    uint32_t packet_size = 0, marking_rate = 0, type = 0, numports = 0;
    const char* err;

    if (argc != 6)
        return "invalid number of parameters for SwitchPortCongestion";
    if ((err = parse_u32(argv[0], &portnum)) || (err = parse_u32(argv[1], &valid)) ||
        (err = parse_u32(argv[2], &control_type)) || (err = parse_u32(argv[3], &threshold)) ||
        (err = parse_u32(argv[4], &packet_size)) || (err = parse_u32(argv[5], &marking_rate)))
        return err;

    if (!smp_query_via(data, dest, IB_ATTR_NODE_INFO, 0, 0, srcport))
        return "node info config failed";
    mad_decode_field(data, IB_NODE_TYPE_F, &type);
    mad_decode_field(data, IB_NODE_NPORTS_F, &numports);
    if (type != IB_NODE_SWITCH)
        return "destination not a switch";
    if (portnum > numports)
        return "invalid port number specified";

    // Only one port changes: read its block first. (The reference reads
    // block portnum/32 and writes block portnum/48, element portnum%32.)
    if (!cc_query_status_via(payload, dest, IB_CC_ATTR_SWITCH_PORT_CONGESTION_SETTING, portnum / 32, 0, nullptr,
                             srcport, cckey))
        return "switch port congestion setting query failed";
    uint8_t* el = payload + (portnum % 32) * 4;
    mad_encode_field(el, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_VALID_F, &valid);
    mad_encode_field(el, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_CONTROL_TYPE_F, &control_type);
    mad_encode_field(el, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_THRESHOLD_F, &threshold);
    mad_encode_field(el, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_PACKET_SIZE_F, &packet_size);
    mad_encode_field(el, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_CONG_PARM_MARKING_RATE_F, &marking_rate);
    if (!cc_set(payload, dest, IB_CC_ATTR_SWITCH_PORT_CONGESTION_SETTING, portnum / 48))
        return "switch port congestion setting config failed";
    return nullptr;
}

const char* ca_congestion_setting(ib_portid_t* dest, char** argv, int argc) {
    uint8_t payload[IB_CC_DATA_SZ] = {};
    uint32_t port_control = 0, control_map = 0, timer = 0, increase = 0;
    uint32_t trigger = 0, ccti_min = 0;
    const char* err;

    if (argc != 6)
        return "invalid number of parameters for CACongestionSetting";
    if ((err = parse_u32(argv[0], &port_control)) || (err = parse_u32(argv[1], &control_map)) ||
        (err = parse_u32(argv[2], &timer)) || (err = parse_u32(argv[3], &increase)) ||
        (err = parse_u32(argv[4], &trigger)) || (err = parse_u32(argv[5], &ccti_min)))
        return err;

    mad_encode_field(payload, IB_CC_CA_CONGESTION_SETTING_PORT_CONTROL_F, &port_control);
    mad_encode_field(payload, IB_CC_CA_CONGESTION_SETTING_CONTROL_MAP_F, &control_map);
    // the same entry for every SL the control map selects
    for (int sl = 0; sl < 16; sl++) {
        if (!(control_map & (1u << sl)))
            continue;
        uint8_t* e = payload + 4 + sl * 8;
        mad_encode_field(e, IB_CC_CA_CONGESTION_ENTRY_CCTI_TIMER_F, &timer);
        mad_encode_field(e, IB_CC_CA_CONGESTION_ENTRY_CCTI_INCREASE_F, &increase);
        mad_encode_field(e, IB_CC_CA_CONGESTION_ENTRY_TRIGGER_THRESHOLD_F, &trigger);
        mad_encode_field(e, IB_CC_CA_CONGESTION_ENTRY_CCTI_MIN_F, &ccti_min);
    }
    if (!cc_set(payload, dest, IB_CC_ATTR_CA_CONGESTION_SETTING, 0))
        return "ca congestion setting config failed";
    return nullptr;
}

const char* congestion_control_table(ib_portid_t* dest, char** argv, int argc) {
    uint8_t payload[IB_CC_DATA_SZ] = {};
    uint32_t limit = 0, index = 0, shifts[64] = {}, mults[64] = {};
    const char* err;

    if (argc < 2 || argc > 66)
        return "invalid number of parameters for CongestionControlTable";
    if ((err = parse_u32(argv[0], &limit)) || (err = parse_u32(argv[1], &index)))
        return err;
    int entries = argc - 2;
    if (limit && (limit + 1) != (index * 64 + uint32_t(entries)))
        return "invalid number of cct entries input given ccti_limit and index";
    for (int i = 0; i < entries; i++)
        if ((err = parsecct(argv[i + 2], &shifts[i], &mults[i])))
            return err;

    mad_encode_field(payload, IB_CC_CONGESTION_CONTROL_TABLE_CCTI_LIMIT_F, &limit);
    for (int i = 0; i < entries; i++) {
        mad_encode_field(payload + 4 + i * 2, IB_CC_CONGESTION_CONTROL_TABLE_ENTRY_CCT_SHIFT_F, &shifts[i]);
        mad_encode_field(payload + 4 + i * 2, IB_CC_CONGESTION_CONTROL_TABLE_ENTRY_CCT_MULTIPLIER_F, &mults[i]);
    }
    if (!cc_set(payload, dest, IB_CC_ATTR_CONGESTION_CONTROL_TABLE, index))
        return "congestion control table config failed";
    return nullptr;
}

const MatchRec match_tbl[] = {
    {"CongestionKeyInfo", "CK", congestion_key_info, false,
     "<cckey> <cckeyprotectbit> <cckeyleaseperiod> <cckeyviolations>"},
    {"SwitchCongestionSetting", "SS", switch_congestion_setting, false,
     "<controlmap> <victimmask> <creditmask> <threshold> <packetsize> "
     "<csthreshold> <csreturndelay> <markingrate>"},
    {"SwitchPortCongestionSetting", "SP", switch_port_congestion_setting, true,
     "<valid> <control_type> <threshold> <packet_size> <cong_parm_marking_rate>"},
    {"CACongestionSetting", "CS", ca_congestion_setting, false,
     "<port_control> <control_map> <ccti_timer> <ccti_increase> "
     "<trigger_threshold> <ccti_min>"},
    {"CongestionControlTable", "CT", congestion_control_table, false, "<cctilimit> <index> <cctentry> <cctentry> ..."},
};

}  // namespace

int main(int argc, char** argv) {
    int mgmt_classes[3] = {IB_SMI_CLASS, IB_SA_CLASS, IB_CC_CLASS};

    std::string usage = "[-c key] <op> <lid|guid>\n"
                        "\nWARNING -- You should understand what you are doing before "
                        "using this tool.  Misuse of this tool could result in a broken "
                        "fabric.\n"
                        "\nSupported ops (and aliases, case insensitive):\n";
    for (const MatchRec& r : match_tbl)
        usage += std::string("  ") + r.name + " (" + r.alias + ") <lid|guid>" + (r.opt_portnum ? " <portnum>" : "") +
            (r.ops_extra ? " " : "") + (r.ops_extra ? r.ops_extra : "") + "\n";

    int first = process_cc_opts(
        argc, argv, usage.c_str(), &cckey,
        {"SwitchCongestionSetting 2 0x1F 0x1FFFFFFFFF 0x0 0xF 8 0 0:0 1\t# Configure Switch Congestion Settings",
         "CACongestionSetting 1 0 0x3 150 1 0 0\t\t# Configure CA Congestion Settings to SL 0 and SL 1",
         "CACongestionSetting 1 0 0x4 200 1 0 0\t\t# Configure CA Congestion Settings to SL 2",
         "CongestionControlTable 1 63 0 0:0 0:1 ...\t# Configure first block of Congestion Control Table",
         "CongestionControlTable 1 127 0 0:64 0:65 ...\t# Configure second block of Congestion Control Table"});
    argc -= first;
    argv += first;

    run_op(match_tbl, mgmt_classes, srcport, argc, argv);
    return 0;
}
