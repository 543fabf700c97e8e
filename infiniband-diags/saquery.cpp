// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// saquery: ask the subnet administrator for its records (NodeRecord by
// default; PortInfo, SL2VL, P_Key, VLArb, LFT/MFT, GUIDInfo, InformInfo,
// Link, Service, Path, MCMember, SwitchInfo, SMInfo, ClassPortInfo) and
// print them, with shortcuts for the common questions (-L/-l/-G/-O/-U
// about node names, -D the CAs, -s the SM ports, -g/-m multicast, -x links,
// --src-to-dst / --sgid-to-dgid path records).
//
// Records are read straight from the SA's big-endian wire layout; the
// offsets below are those of the IBA attribute formats.
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/ibdiag_common.h"

namespace {

using namespace ibdiag;

constexpr int kDefaultSaTimeoutMs = 1000;
constexpr uint32_t kSaCapMask2IsMcastTopSup = 1u << 3;

// SA attribute ids
enum : uint16_t {
    kAttrClassPortInfo = 0x0001,
    kAttrNodeRecord = 0x0011,
    kAttrPortInfoRecord = 0x0012,
    kAttrSL2VLTableRecord = 0x0013,
    kAttrSwitchInfoRecord = 0x0014,
    kAttrLFTRecord = 0x0015,
    kAttrMFTRecord = 0x0017,
    kAttrSMInfoRecord = 0x0018,
    kAttrLinkRecord = 0x0020,
    kAttrGUIDInfoRecord = 0x0030,
    kAttrServiceRecord = 0x0031,
    kAttrPKeyTableRecord = 0x0033,
    kAttrPathRecord = 0x0035,
    kAttrVLArbTableRecord = 0x0036,
    kAttrMCMemberRecord = 0x0038,
    kAttrInformInfoRecord = 0x00F3,
};

constexpr uint64_t bit(unsigned n) { return 1ull << n; }

// ---- big-endian access to records ----
uint16_t be16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
uint64_t be64(const uint8_t* p) { return uint64_t(be32(p)) << 32 | be32(p + 4); }
void put16(uint8_t* p, uint16_t v) {
    p[0] = uint8_t(v >> 8);
    p[1] = uint8_t(v);
}
void put32(uint8_t* p, uint32_t v) {
    p[0] = uint8_t(v >> 24);
    p[1] = uint8_t(v >> 16);
    p[2] = uint8_t(v >> 8);
    p[3] = uint8_t(v);
}
void put64(uint8_t* p, uint64_t v) {
    put32(p, uint32_t(v >> 32));
    put32(p + 4, uint32_t(v));
}

// A copy of record i, zero-padded: an SA answer with an absurd attribute
// offset or count can't make a dump read past what arrived.
struct RecBuf {
    uint8_t b[256] = {};
    const uint8_t* data() const { return b; }
};
RecBuf fetch(SaResult& r, unsigned i) {
    RecBuf rb;
    const auto* p = static_cast<const uint8_t*>(r.record(i));
    size_t off = size_t(p - r.mad.data());
    if (off < r.mad.size())
        memcpy(rb.b, p, std::min(sizeof rb.b, r.mad.size() - off));
    return rb;
}

struct GidStr {
    char s[INET6_ADDRSTRLEN];
    explicit GidStr(const uint8_t* gid) { inet_ntop(AF_INET6, gid, s, sizeof s); }
};

using Gid = uint8_t[16];
bool valid_gid(const Gid g) {
    for (int i = 0; i < 16; i++)
        if (g[i])
            return true;
    return false;
}

// What the options ask the SA for. -1 (or 0) means "not given", as in the
// reference; values are narrowed to the field sizes when they go out.
struct QueryParams {
    uint64_t service_id = 0;
    Gid sgid = {}, dgid = {}, gid = {}, mgid = {};
    uint16_t slid = 0, dlid = 0, mlid = 0;
    uint32_t flow_label = 0;
    int hop_limit = -1;
    uint8_t tclass = 0;
    int reversible = -1, numb_path = -1;
    uint16_t pkey = 0;
    int qos_class = -1, sl = -1;
    uint8_t mtu = 0, rate = 0, pkt_life = 0;
    uint32_t qkey = 0;
    uint8_t scope = 0, join_state = 0;
    int proxy_join = -1;
    uint8_t cpi[72] = {};  // the SA's ClassPortInfo when it was asked for
};

enum class NodePrint { All, LidOnly, UniqueLidOnly, GuidOnly, AllDesc, NameOfLid, NameOfGuid };
NodePrint node_print_desc = NodePrint::All;
const char* requested_name;
uint16_t requested_lid;
bool requested_lid_flag;
uint64_t requested_guid;
bool requested_guid_flag;

std::optional<NodeNameMap> node_names;
SaHandle* sa;

// ---- NodeRecord: lid@0 resv@2 NodeInfo@4 NodeDescription@44 ----
constexpr size_t kNrSize = 108;
struct NodeRec {
    const uint8_t* p;
    uint16_t lid() const { return be16(p); }
    const uint8_t* ni() const { return p + 4; }
    uint64_t node_guid() const { return be64(ni() + 12); }
    uint64_t port_guid() const { return be64(ni() + 20); }
    uint8_t node_type() const { return ni()[2]; }
    // the description, at most 64 chars (it need not be terminated)
    std::string desc() const {
        const char* d = reinterpret_cast<const char*>(p + 44);
        return std::string(d, strnlen(d, 64));
    }
    std::string name() const { return node_names->remap(node_guid(), desc().c_str()); }
};

const char* node_type_str(uint8_t t) {
    static const char* const names[] = {"UNKNOWN", "Channel Adapter", "Switch", "Router"};
    return t <= 3 ? names[t] : names[0];
}

void dump_node_record(const uint8_t* rec) {
    NodeRec nr{rec};
    const uint8_t* ni = nr.ni();
    std::string name = nr.name();
    printf("NodeRecord dump:\n"
           "\t\tlid.....................%u\n"
           "\t\treserved................0x%X\n"
           "\t\tbase_version............0x%X\n"
           "\t\tclass_version...........0x%X\n"
           "\t\tnode_type...............%s\n"
           "\t\tnum_ports...............%u\n"
           "\t\tsys_guid................0x%016" PRIx64 "\n"
           "\t\tnode_guid...............0x%016" PRIx64 "\n"
           "\t\tport_guid...............0x%016" PRIx64 "\n"
           "\t\tpartition_cap...........0x%X\n"
           "\t\tdevice_id...............0x%X\n"
           "\t\trevision................0x%X\n"
           "\t\tport_num................%u\n"
           "\t\tvendor_id...............0x%X\n"
           "\t\tNodeDescription.........%s\n",
           nr.lid(), be16(rec + 2), ni[0], ni[1], node_type_str(ni[2]), ni[3], be64(ni + 4), be64(ni + 12),
           be64(ni + 20), be16(ni + 28), be16(ni + 30), be32(ni + 32), ni[36], be32(ni + 36) & 0xffffff, name.c_str());
}

void print_node_desc(const uint8_t* rec) {
    NodeRec nr{rec};
    if (nr.node_type() == 1) {  // CA
        std::string name = nr.name();
        printf("%6d  \"%s\"\n", nr.lid(), name.c_str());
    }
}

void print_node_record(const uint8_t* rec) {
    NodeRec nr{rec};
    switch (node_print_desc) {
    case NodePrint::LidOnly:
    case NodePrint::UniqueLidOnly: printf("%u\n", nr.lid()); return;
    case NodePrint::GuidOnly: printf("0x%016" PRIx64 "\n", nr.port_guid()); return;
    case NodePrint::NameOfLid:
    case NodePrint::NameOfGuid: printf("%s\n", nr.name().c_str()); return;
    default: break;
    }
    dump_node_record(rec);
}

// ---- PathRecord (64 bytes) ----
void dump_path_record(const uint8_t* p, QueryParams&) {
    uint16_t qsl = be16(p + 52);
    printf("PathRecord dump:\n"
           "\t\tservice_id..............0x%016" PRIx64 "\n"
           "\t\tdgid....................%s\n"
           "\t\tsgid....................%s\n"
           "\t\tdlid....................%u\n"
           "\t\tslid....................%u\n"
           "\t\thop_flow_raw............0x%X\n"
           "\t\ttclass..................0x%X\n"
           "\t\tnum_path_revers.........0x%X\n"
           "\t\tpkey....................0x%X\n"
           "\t\tqos_class...............0x%X\n"
           "\t\tsl......................0x%X\n"
           "\t\tmtu.....................0x%X\n"
           "\t\trate....................0x%X\n"
           "\t\tpkt_life................0x%X\n"
           "\t\tpreference..............0x%X\n"
           "\t\tresv2...................0x%02X%02X%02X%02X%02X%02X\n",
           be64(p), GidStr(p + 8).s, GidStr(p + 24).s, be16(p + 40), be16(p + 42), be32(p + 44), p[48], p[49],
           be16(p + 50), qsl >> 4, qsl & 0xf, p[54], p[55], p[56], p[57], p[58], p[59], p[60], p[61], p[62], p[63]);
}

// ---- ClassPortInfo (72 bytes) ----
void dump_class_port_info(const uint8_t* c) {
    printf("SA ClassPortInfo:\n"
           "\t\tBase version.............%d\n"
           "\t\tClass version............%d\n"
           "\t\tCapability mask..........0x%04X\n"
           "\t\tCapability mask 2........0x%08X\n"
           "\t\tResponse time value......0x%02X\n"
           "\t\tRedirect GID.............%s\n"
           "\t\tRedirect TC/SL/FL........0x%08X\n"
           "\t\tRedirect LID.............%u\n"
           "\t\tRedirect PKey............0x%04X\n"
           "\t\tRedirect QP..............0x%08X\n"
           "\t\tRedirect QKey............0x%08X\n"
           "\t\tTrap GID.................%s\n"
           "\t\tTrap TC/SL/FL............0x%08X\n"
           "\t\tTrap LID.................%u\n"
           "\t\tTrap PKey................0x%04X\n"
           "\t\tTrap HL/QP...............0x%08X\n"
           "\t\tTrap QKey................0x%08X\n",
           c[0], c[1], be16(c + 2), be32(c + 4) >> 5, be32(c + 4) & 0x1f, GidStr(c + 8).s, be32(c + 24), be16(c + 28),
           be16(c + 30), be32(c + 32), be32(c + 36), GidStr(c + 40).s, be32(c + 56), be16(c + 60), be16(c + 62),
           be32(c + 64), be32(c + 68));
}

// ---- PortInfoRecord: lid@0 port@2 options@3 PortInfo@4 ----
void dump_portinfo_record(const uint8_t* p, QueryParams&) {
    const uint8_t* pi = p + 4;
    printf("PortInfoRecord dump:\n"
           "\t\tEndPortLid..............%u\n"
           "\t\tPortNum.................%u\n"
           "\t\tbase_lid................%u\n"
           "\t\tmaster_sm_base_lid......%u\n"
           "\t\tcapability_mask.........0x%X\n",
           be16(p), p[2], be16(pi + 16), be16(pi + 18), be32(pi + 20));
}

void dump_one_portinfo_record(const uint8_t* p, QueryParams&) {
    printf("PortInfoRecord dump:\n"
           "\tRID\n"
           "\t\tEndPortLid..............%u\n"
           "\t\tPortNum.................%u\n"
           "\t\tOptions.................0x%x\n"
           "\tPortInfo dump:\n",
           be16(p), p[2], p[3]);
    dump_portinfo(p + 4, 2);
}

// ---- MCMemberRecord ----
// mgid@0 port_gid@16 qkey@32 mlid@36 mtu@38 tclass@39 pkey@40 rate@42
// pkt_life@43 sl_flow_hop@44 scope_state@48 proxy_join(bit 0)@49
void dump_one_mcmember_record(const uint8_t* m, QueryParams&) {
    uint32_t sfh = be32(m + 44);
    printf("MCMember Record dump:\n"
           "\t\tMGID....................%s\n"
           "\t\tPortGid.................%s\n"
           "\t\tqkey....................0x%x\n"
           "\t\tmlid....................0x%x\n"
           "\t\tmtu.....................0x%x\n"
           "\t\tTClass..................0x%x\n"
           "\t\tpkey....................0x%x\n"
           "\t\trate....................0x%x\n"
           "\t\tpkt_life................0x%x\n"
           "\t\tSL......................0x%x\n"
           "\t\tFlowLabel...............0x%x\n"
           "\t\tHopLimit................0x%x\n"
           "\t\tScope...................0x%x\n"
           "\t\tJoinState...............0x%x\n"
           "\t\tProxyJoin...............0x%x\n",
           GidStr(m).s, GidStr(m + 16).s, be32(m + 32), be16(m + 36), m[38], m[39], be16(m + 40), m[42], m[43],
           (sfh >> 28) & 0xff, (sfh >> 8) & 0xfffff, sfh & 0xff, m[48] >> 4, m[48] & 0xf, m[49] & 1);
}

void dump_multicast_group_record(const uint8_t* m, QueryParams&) {
    printf("MCMemberRecord group dump:\n"
           "\t\tMGID....................%s\n"
           "\t\tMlid....................0x%X\n"
           "\t\tMtu.....................0x%X\n"
           "\t\tpkey....................0x%X\n"
           "\t\tRate....................0x%X\n"
           "\t\tSL......................0x%X\n",
           GidStr(m).s, be16(m + 36), m[38], be16(m + 40), m[42], (be32(m + 44) >> 28) & 0xff);
}

void dump_multicast_member_record(const uint8_t* m, SaResult& nodes) {
    uint16_t mlid = be16(m + 36);
    std::string node_name = "<unknown>";

    // The member's port GUID (its GID's interface id) names its node.
    for (unsigned i = 0; i < nodes.result_cnt; i++) {
        RecBuf rb = fetch(nodes, i);
        NodeRec nr{rb.data()};
        if (!memcmp(nr.ni() + 20, m + 24, 8)) {
            node_name = nr.name();
            break;
        }
    }
    if (requested_name) {
        if (strtol(requested_name, nullptr, 0) == mlid)
            printf("\t\tPortGid.................%s (%s)\n", GidStr(m + 16).s, node_name.c_str());
    } else {
        printf("MCMemberRecord member dump:\n"
               "\t\tMGID....................%s\n"
               "\t\tMlid....................0x%X\n"
               "\t\tPortGid.................%s\n"
               "\t\tScopeState..............0x%X\n"
               "\t\tProxyJoin...............0x%X\n"
               "\t\tNodeDescription.........%s\n",
               GidStr(m).s, mlid, GidStr(m + 16).s, m[48], m[49] & 1, node_name.c_str());
    }
}

// ---- ServiceRecord ----
// id@0 gid@8 pkey@24 lease@28 key@32 name@48 data8@112 data16@128
// data32@144 data64@160
void dump_service_record(const uint8_t* s, QueryParams&) {
    char key[35];
    snprintf(key, sizeof key, "0x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x", s[32], s[33], s[34],
             s[35], s[36], s[37], s[38], s[39], s[40], s[41], s[42], s[43], s[44], s[45], s[46], s[47]);
    char name[65] = {};
    memcpy(name, s + 48, 64);
    name[strnlen(name, 64)] = 0;

    printf("ServiceRecord dump:\n"
           "\t\tServiceID...............0x%016" PRIx64 "\n"
           "\t\tServiceGID..............%s\n"
           "\t\tServiceP_Key............0x%X\n"
           "\t\tServiceLease............0x%X\n"
           "\t\tServiceKey..............%s\n"
           "\t\tServiceName.............%s\n",
           be64(s), GidStr(s + 8).s, be16(s + 24), be32(s + 28), cfg.show_keys ? key : kNotDisplayed, name);
    for (int i = 0; i < 16; i++) {
        char label[32];
        snprintf(label, sizeof label, "ServiceData8.%d", i + 1);
        printf("\t\t%s%.*s0x%X\n", label, int(24 - strlen(label)), "........................", s[112 + i]);
    }
    for (int i = 0; i < 8; i++) {
        char label[32];
        snprintf(label, sizeof label, "ServiceData16.%d", i + 1);
        printf("\t\t%s%.*s0x%X\n", label, int(24 - strlen(label)), "........................", be16(s + 128 + i * 2));
    }
    for (int i = 0; i < 4; i++) {
        char label[32];
        snprintf(label, sizeof label, "ServiceData32.%d", i + 1);
        printf("\t\t%s%.*s0x%X\n", label, int(24 - strlen(label)), "........................", be32(s + 144 + i * 4));
    }
    for (int i = 0; i < 2; i++) {
        char label[32];
        snprintf(label, sizeof label, "ServiceData64.%d", i + 1);
        printf("\t\t%s%.*s0x%016" PRIx64 "\n", label, int(24 - strlen(label)), "........................",
               be64(s + 160 + i * 8));
    }
}

// ---- SMInfoRecord: lid@0 SMInfo@4 {guid, sm_key, act_count, pri_state} ----
void dump_sm_info_record(const uint8_t* r, QueryParams&) {
    printf("SMInfoRecord dump:\n"
           "\t\tRID\n"
           "\t\tLID...................%u\n"
           "\t\tSMInfo dump:\n"
           "\t\tGUID..................0x%016" PRIx64 "\n"
           "\t\tSM_Key................0x%016" PRIx64 "\n"
           "\t\tActCount..............%u\n"
           "\t\tPriority..............%u\n"
           "\t\tSMState...............%u\n",
           be16(r), be64(r + 4), be64(r + 12), be32(r + 20), r[24] >> 4, r[24] & 0xf);
}

// ---- SwitchInfoRecord: lid@0 SwitchInfo@4 ----
void dump_switch_info_record(const uint8_t* r, QueryParams& p) {
    const uint8_t* si = r + 4;
    printf("SwitchInfoRecord dump:\n"
           "\t\tRID\n"
           "\t\tLID.....................................%u\n"
           "\t\tSwitchInfo dump:\n"
           "\t\tLinearFDBCap............................0x%X\n"
           "\t\tRandomFDBCap............................0x%X\n"
           "\t\tMulticastFDBCap.........................0x%X\n"
           "\t\tLinearFDBTop............................0x%X\n"
           "\t\tDefaultPort.............................%u\n"
           "\t\tDefaultMulticastPrimaryPort.............%u\n"
           "\t\tDefaultMulticastNotPrimaryPort..........%u\n"
           "\t\tLifeTimeValue/PortStateChange/OpSL2VL...0x%X\n"
           "\t\tLIDsPerPort.............................0x%X\n"
           "\t\tPartitionEnforcementCap.................0x%X\n"
           "\t\tflags...................................0x%X\n",
           be16(r), be16(si), be16(si + 2), be16(si + 4), be16(si + 6), si[8], si[9], si[10], si[11], be16(si + 12),
           be16(si + 14), si[16]);
    if ((be32(p.cpi + 4) >> 5) & kSaCapMask2IsMcastTopSup)
        printf("\t\tMulticastFDBTop.........................0x%X\n", be16(si + 18));
}

// ---- InformInfoRecord: subscriber_gid@0 enum@16 InformInfo@24 ----
// InformInfo: gid@0 lid_begin@16 lid_end@18 is_generic@22 subscribe@23
// type@24 trap_num/dev_id@26 qpn_resp@28 type_msb@33 type_lsb@34
void dump_inform_info_record(const uint8_t* r, QueryParams&) {
    const uint8_t* ii = r + 24;
    uint32_t qr = be32(ii + 28);
    uint32_t qpn = (qr >> 8) & 0xffffff;
    unsigned resp_time_val = qr & 0x1f;
    uint32_t prod_type = uint32_t(ii[33]) << 16 | be16(ii + 34);
    bool generic = ii[22] != 0;

    printf("InformInfoRecord dump:\n"
           "\t\tRID\n"
           "\t\tSubscriberGID...........%s\n"
           "\t\tSubscriberEnum..........0x%X\n"
           "\t\tInformInfo dump:\n"
           "\t\tgid.....................%s\n"
           "\t\tlid_range_begin.........%u\n"
           "\t\tlid_range_end...........%u\n"
           "\t\tis_generic..............0x%X\n"
           "\t\tsubscribe...............0x%X\n"
           "\t\ttrap_type...............0x%X\n",
           GidStr(r).s, be16(r + 16), GidStr(ii).s, be16(ii + 16), be16(ii + 18), ii[22], ii[23], be16(ii + 24));
    if (generic)
        printf("\t\ttrap_num................%u\n", be16(ii + 26));
    else
        printf("\t\tdev_id..................0x%X\n", be16(ii + 26));
    if (cfg.show_keys)
        printf("\t\tqpn.....................0x%06X\n", qpn);
    else
        printf("\t\tqpn.....................%s\n", kNotDisplayed);
    printf("\t\tresp_time_val...........0x%X\n", resp_time_val);
    if (generic)
        printf("\t\tnode_type...............0x%06X\n", prod_type);
    else
        printf("\t\tvendor_id...............0x%06X\n", prod_type);
}

// ---- LinkRecord: from_lid@0 from_port@2 to_port@3 to_lid@4 ----
void dump_one_link_record(const uint8_t* r, QueryParams&) {
    printf("LinkRecord dump:\n"
           "\t\tFromLID....................%u\n"
           "\t\tFromPort...................%u\n"
           "\t\tToPort.....................%u\n"
           "\t\tToLID......................%u\n",
           be16(r), r[2], r[3], be16(r + 4));
}

// ---- SL2VLTableRecord: lid@0 in@2 out@3 table@8 (a nibble per SL) ----
void dump_one_slvl_record(const uint8_t* r, QueryParams&) {
    const uint8_t* t = r + 8;
    auto vl = [t](int sl) { return sl % 2 ? t[sl / 2] & 0xf : (t[sl / 2] >> 4) & 0xf; };
    printf("SL2VLTableRecord dump:\n"
           "\t\tLID........................%u\n"
           "\t\tInPort.....................%u\n"
           "\t\tOutPort....................%u\n"
           "\t\tSL: 0| 1| 2| 3| 4| 5| 6| 7| 8| 9|10|11|12|13|14|15|\n"
           "\t\tVL:",
           be16(r), r[2], r[3]);
    for (int sl = 0; sl < 16; sl++)
        printf("%2u|", vl(sl));
    printf("\n");
}

// ---- VLArbitrationTableRecord: lid@0 port@2 block@3 {vl,weight}x32@8 ----
void dump_one_vlarb_record(const uint8_t* r, QueryParams&) {
    const uint8_t* e = r + 8;
    printf("VLArbTableRecord dump:\n"
           "\t\tLID........................%u\n"
           "\t\tPort.......................%u\n"
           "\t\tBlock......................%u\n",
           be16(r), r[2], r[3]);
    for (int i = 0; i < 32; i += 16) {
        printf("\t\tVL    :");
        for (int j = 0; j < 16; j++)
            printf("%2u|", e[(i + j) * 2]);
        printf("\n\t\tWeight:");
        for (int j = 0; j < 16; j++)
            printf("%2u|", e[(i + j) * 2 + 1]);
        printf("\n");
    }
}

// ---- PKeyTableRecord: lid@0 block@2 port@4 pkeys@8 ----
void dump_one_pkey_tbl_record(const uint8_t* r, QueryParams&) {
    // The reference prints the block number as it sits in memory (its
    // big-endian bytes read as a little-endian number).
    unsigned block_raw = unsigned(r[2]) | unsigned(r[3]) << 8;
    printf("PKeyTableRecord dump:\n"
           "\t\tLID........................%u\n"
           "\t\tPort.......................%u\n"
           "\t\tBlock......................%u\n"
           "\t\tPKey Table:\n",
           be16(r), r[4], block_raw);
    for (int i = 0; i < 32; i += 8) {
        printf("\t\t");
        for (int j = 0; j < 8; j++)
            printf(j ? " 0x%04x" : "0x%04x", be16(r + 8 + (i + j) * 2));
        printf("\n");
    }
    printf("\n");
}

// ---- LFTRecord: lid@0 block@2 ports@8 ----
void dump_one_lft_record(const uint8_t* r, QueryParams&) {
    unsigned block = be16(r + 2);
    printf("LFT Record dump:\n"
           "\t\tLID........................%u\n"
           "\t\tBlock......................%u\n"
           "\t\tLFT:\n\t\tLID\tPort Number\n",
           be16(r), block);
    for (unsigned i = 0; i < 64; i++)
        printf("\t\t%u\t%u\n", block * 64 + i, r[8 + i]);
    printf("\n");
}

// ---- GUIDInfoRecord: lid@0 block@2 guids@8 ----
void dump_one_guidinfo_record(const uint8_t* r, QueryParams&) {
    printf("GUIDInfo Record dump:\n"
           "\t\tLID........................%u\n"
           "\t\tBlock......................%u\n",
           be16(r), r[2]);
    for (int i = 0; i < 8; i++)
        printf("\t\tGUID %d.....................0x%016" PRIx64 "\n", i, be64(r + 8 + i * 8));
}

// ---- MFTRecord: lid@0 position(4 bits)|block(12 bits)@2 masks@8 ----
void dump_one_mft_record(const uint8_t* r, QueryParams&) {
    unsigned pb = be16(r + 2);
    unsigned position = pb >> 12, block = pb & 0x1ff;
    printf("MFT Record dump:\n"
           "\t\tLID........................%u\n"
           "\t\tPosition...................%u\n"
           "\t\tBlock......................%u\n"
           "\t\tMFT:\n\t\tMLID\tPort Mask\n",
           be16(r), position, block);
    unsigned offset = 0xC000 + block * 32;
    for (unsigned i = 0; i < 32; i++)
        printf("\t\t0x%04x\t0x%04x\n", offset + i, be16(r + 8 + i * 2));
    printf("\n");
}

using DumpFn = void(const uint8_t*, QueryParams&);

void dump_results(SaResult& r, DumpFn* dump, QueryParams& p) {
    for (unsigned i = 0; i < r.result_cnt; i++) {
        RecBuf rb = fetch(r, i);
        dump(rb.data(), p);
    }
}

// An SA query; prints the reference's complaints on failure.
int sa_get(uint8_t method, uint16_t attr, uint32_t mod, uint64_t comp_mask, const void* data, size_t size,
           SaResult& result) {
    int ret = sa_query(*sa, method, attr, mod, comp_mask, cfg.sakey, data, size, result);
    if (ret) {
        fprintf(stderr, "Query SA failed: %s\n", strerror(ret));
        return ret;
    }
    if (result.status != 0) {
        sa_report_err(int(result.status));
        return EIO;
    }
    return 0;
}

// A GetTable query.
int get_any_records(uint16_t attr, uint32_t mod, uint64_t comp_mask, const void* data, size_t size, SaResult& result) {
    return sa_get(IB_MAD_METHOD_GET_TABLE, attr, mod, comp_mask, data, size, result);
}

int get_and_dump_any_records(uint16_t attr, uint32_t mod, uint64_t comp_mask, const void* data, size_t size,
                             DumpFn* dump, QueryParams& p) {
    SaResult result;
    int ret = get_any_records(attr, mod, comp_mask, data, size, result);
    if (ret)
        return ret;
    dump_results(result, dump, p);
    return 0;
}

int get_all_records(uint16_t attr, SaResult& result) { return get_any_records(attr, 0, 0, nullptr, 0, result); }

int get_lid_from_name(const char* name, uint16_t* lid) {
    SaResult result;
    int ret = get_all_records(kAttrNodeRecord, result);
    if (ret)
        return ret;
    for (unsigned i = 0; i < result.result_cnt; i++) {
        RecBuf rb = fetch(result, i);
        NodeRec nr{rb.data()};
        if (name && !strncmp(name, reinterpret_cast<const char*>(nr.p + 44), 64)) {
            *lid = nr.lid();
            return 0;
        }
    }
    return ENONET;
}

// A node description (starting with a letter) or a LID number.
uint16_t get_lid(const char* name) {
    uint16_t lid = 0;

    if (!name)
        return 0;
    if (isalpha(static_cast<unsigned char>(name[0]))) {
        if (int rc = get_lid_from_name(name, &lid)) {
            fprintf(stderr, "Failed to find lid for \"%s\": %s\n", name, strerror(rc));
            exit(rc);
        }
        return lid;
    }
    errno = 0;
    long val = strtol(name, nullptr, 0);
    if (errno != 0 || val <= 0 || val > UINT16_MAX) {
        fprintf(stderr, "Invalid lid specified: \"%s\"\n", name);
        exit(EINVAL);
    }
    return uint16_t(val);
}

// "lid/port1/port2" with every part optional; -1 for a missing port.
void parse_lid_and_ports(char* str, int* lid, int* port1, int* port2) {
    if (port1)
        *port1 = -1;
    if (port2)
        *port2 = -1;
    char* p = strchr(str, '/');
    if (p)
        *p = '\0';
    if (lid)
        *lid = get_lid(str);
    if (!p)
        return;
    str = p + 1;
    p = strchr(str, '/');
    if (p)
        *p = '\0';
    if (port1) {
        char* e;
        *port1 = int(strtoul(str, &e, 0));
        if (e == str)
            *port1 = -1;
    }
    if (!p)
        return;
    str = p + 1;
    if (port2) {
        char* e;
        *port2 = int(strtoul(str, &e, 0));
        if (e == str)
            *port2 = -1;
    }
}

// The reference's "set a field when the value differs from its 'unset'
// marker", with the comparison done at the field's width.
template <typename T, typename V, typename U>
bool differs(V val, U unset) {
    return T(val) != T(unset);
}

// Sets a LID field at `off` (and component bit `b`) unless it is 0.
void key_lid(uint8_t* rec, size_t off, int lid, unsigned b, uint64_t& mask) {
    if (differs<int16_t>(lid, 0)) {
        put16(rec + off, uint16_t(lid));
        mask |= bit(b);
    }
}

// Sets an 8-bit field at `off` (and component bit `b`) unless it is -1.
void key_u8(uint8_t* rec, size_t off, int v, unsigned b, uint64_t& mask) {
    if (differs<int8_t>(v, -1)) {
        rec[off] = uint8_t(v);
        mask |= bit(b);
    }
}

// Sets a 16-bit field at `off` (and component bit `b`) unless it is -1.
void key_u16(uint8_t* rec, size_t off, int v, unsigned b, uint64_t& mask) {
    if (differs<int16_t>(v, -1)) {
        put16(rec + off, uint16_t(v));
        mask |= bit(b);
    }
}

// Field setters for the options: value v at `off` (big-endian at its own
// width) and `bits` in the component mask, when v is given (non-zero).
void put_be(uint8_t* p, uint8_t v) { p[0] = v; }
void put_be(uint8_t* p, uint16_t v) { put16(p, v); }
void put_be(uint8_t* p, uint32_t v) { put32(p, v); }
void put_be(uint8_t* p, uint64_t v) { put64(p, v); }
template <typename T>
void key_given(uint8_t* rec, size_t off, T v, uint64_t bits, uint64_t& mask) {
    if (v) {
        put_be(rec + off, v);
        mask |= bits;
    }
}

// The same for a GID (given when not all zero).
void key_gid(uint8_t* rec, size_t off, const Gid g, uint64_t bits, uint64_t& mask) {
    if (valid_gid(g)) {
        memcpy(rec + off, g, 16);
        mask |= bits;
    }
}

// A query keyed by argv[0] = "lid[/a[/b]]" (all optional): the record with
// the LID set (component bit 0) when given; a and b (-1 when not given) for
// the caller's fields.
struct LidKey {
    uint8_t rec[kNrSize] = {};
    uint64_t mask = 0;
    int lid = 0, a = -1, b = -1;

    LidKey(int argc, char** argv) {
        if (argc > 0)
            parse_lid_and_ports(argv[0], &lid, &a, &b);
        key_lid(rec, 0, lid, 0, mask);
    }
    int query(uint16_t attr, size_t size, DumpFn* dump, QueryParams& p) {
        return get_and_dump_any_records(attr, 0, mask, rec, size, dump, p);
    }
};

int print_node_records() {
    SaResult result;
    int ret = get_all_records(kAttrNodeRecord, result);
    if (ret)
        return ret;

    if (node_print_desc == NodePrint::AllDesc) {
        printf("   LID \"name\"\n");
        printf("================\n");
    }
    for (unsigned i = 0; i < result.result_cnt; i++) {
        RecBuf rb = fetch(result, i);
        const uint8_t* rec = rb.data();
        NodeRec nr{rec};
        if (node_print_desc == NodePrint::AllDesc) {
            print_node_desc(rec);
        } else if (node_print_desc == NodePrint::NameOfLid) {
            if (requested_lid == nr.lid())
                print_node_record(rec);
        } else if (node_print_desc == NodePrint::NameOfGuid) {
            if (requested_guid == nr.port_guid())
                print_node_record(rec);
        } else {
            std::string name = nr.name();
            if (!requested_name || !strncmp(requested_name, reinterpret_cast<const char*>(rec + 44), 64) ||
                !strncmp(requested_name, name.c_str(), 64)) {
                print_node_record(rec);
                if (node_print_desc == NodePrint::UniqueLidOnly)
                    exit(0);
            }
        }
    }
    return 0;
}

struct QueryCmd;
using Handler = int(const QueryCmd&, QueryParams&, int, char**);
struct QueryCmd {
    const char *name, *alias;
    uint16_t query_type;
    const char* usage;
    Handler* handler;
};

int query_path_records(const QueryCmd&, QueryParams& p, int, char**) {
    uint8_t pr[64] = {};
    uint64_t comp_mask = 0;

    key_given(pr, 0, p.service_id, bit(0) | bit(1), comp_mask);
    key_gid(pr, 24, p.sgid, bit(3), comp_mask);
    key_gid(pr, 8, p.dgid, bit(2), comp_mask);
    key_given(pr, 42, p.slid, bit(5), comp_mask);
    key_given(pr, 40, p.dlid, bit(4), comp_mask);
    uint32_t hop_flow = 0;
    if (p.hop_limit != -1) {
        hop_flow = uint32_t(p.hop_limit);
        comp_mask |= bit(9);
    }
    uint8_t flow = 0;
    if (differs<int8_t>(p.flow_label, 0)) {
        flow = uint8_t(p.flow_label);
        comp_mask |= bit(8);
    }
    hop_flow |= uint32_t(flow) << 8;
    put32(pr + 44, hop_flow);
    key_given(pr, 48, p.tclass, bit(10), comp_mask);
    uint8_t reversible = 0;
    if (differs<int8_t>(p.reversible, -1)) {
        reversible = uint8_t(p.reversible);
        comp_mask |= bit(11);
    }
    if (differs<int8_t>(p.numb_path, -1)) {
        pr[49] = uint8_t(p.numb_path);
        comp_mask |= bit(12);
    }
    pr[49] |= uint8_t(reversible << 7);
    key_given(pr, 50, p.pkey, bit(13), comp_mask);
    uint16_t qos_sl = 0;
    if (differs<int16_t>(p.sl, -1)) {
        qos_sl = uint16_t(p.sl);
        comp_mask |= bit(15);
    }
    int qos_class = 0;
    if (p.qos_class != -1) {
        qos_class = p.qos_class;
        comp_mask |= bit(14);
    }
    qos_sl = uint16_t((qos_sl & 0x000f) | uint16_t(qos_class << 4));
    put16(pr + 52, qos_sl);
    key_given(pr, 54, p.mtu, bit(16) | bit(17), comp_mask);
    key_given(pr, 55, p.rate, bit(18) | bit(19), comp_mask);
    key_given(pr, 56, p.pkt_life, bit(20) | bit(21), comp_mask);
    return get_and_dump_any_records(kAttrPathRecord, 0, comp_mask, pr, sizeof pr, dump_path_record, p);
}

int print_issm_records(QueryParams& p) {
    // PortInfoRecords whose capability mask has IsSM, then IsSMdisabled
    for (int pass = 0; pass < 2; pass++) {
        uint8_t pir[68] = {};
        put32(pir + 4 + 20, pass == 0 ? 0x00000002u : 0x00000400u);
        SaResult result;
        int ret = get_any_records(kAttrPortInfoRecord, 1u << 31, bit(7), pir, sizeof pir, result);
        if (ret)
            return ret;
        printf(pass == 0 ? "IsSM ports\n" : "\nIsSMdisabled ports\n");
        dump_results(result, dump_portinfo_record, p);
    }
    return 0;
}

int print_multicast_member_records() {
    SaResult groups, nodes;
    int ret = get_all_records(kAttrMCMemberRecord, groups);
    if (ret)
        return ret;
    ret = get_all_records(kAttrNodeRecord, nodes);
    if (ret)
        return ret;
    for (unsigned i = 0; i < groups.result_cnt; i++) {
        RecBuf rb = fetch(groups, i);
        dump_multicast_member_record(rb.data(), nodes);
    }
    return 0;
}

int query_class_port_info(const QueryCmd&, QueryParams& p, int, char**) {
    dump_class_port_info(p.cpi);
    return 0;
}

int query_lid_keyed(uint16_t attr, size_t size, DumpFn* dump, QueryParams& p, int argc, char** argv);
int query_lid_two_bytes(uint16_t attr, size_t size, DumpFn* dump, QueryParams& p, int argc, char** argv);

int query_node_records(const QueryCmd&, QueryParams& p, int argc, char** argv) {
    return query_lid_keyed(
        kAttrNodeRecord, kNrSize, [](const uint8_t* r, QueryParams&) { dump_node_record(r); }, p, argc, argv);
}

int query_portinfo_records(const QueryCmd&, QueryParams& p, int argc, char** argv) {
    return query_lid_two_bytes(kAttrPortInfoRecord, 68, dump_one_portinfo_record, p, argc, argv);
}

int query_mcmember_records(const QueryCmd&, QueryParams& p, int, char**) {
    uint8_t mr[56] = {};
    uint64_t comp_mask = 0;

    key_gid(mr, 0, p.mgid, bit(0), comp_mask);
    key_gid(mr, 16, p.gid, bit(1), comp_mask);
    key_given(mr, 36, p.mlid, bit(3), comp_mask);
    key_given(mr, 32, p.qkey, bit(2), comp_mask);
    key_given(mr, 38, p.mtu, bit(4) | bit(5), comp_mask);
    key_given(mr, 42, p.rate, bit(8) | bit(9), comp_mask);
    key_given(mr, 43, p.pkt_life, bit(10) | bit(11), comp_mask);
    key_given(mr, 39, p.tclass, bit(6), comp_mask);
    key_given(mr, 40, p.pkey, bit(7), comp_mask);
    uint8_t sl = 0, hop = 0, scope = 0;
    uint32_t flow = 0;
    if (differs<int8_t>(p.sl, -1)) {
        sl = uint8_t(p.sl);
        comp_mask |= bit(12);
    }
    if (differs<int8_t>(p.flow_label, 0)) {
        flow = uint8_t(p.flow_label);
        comp_mask |= bit(13);
    }
    if (differs<int8_t>(p.hop_limit, -1)) {
        hop = uint8_t(p.hop_limit);
        comp_mask |= bit(14);
    }
    put32(mr + 44, uint32_t(sl) << 28 | (flow & 0xfffff) << 8 | hop);
    if (p.scope) {
        scope = p.scope;
        comp_mask |= bit(15);
    }
    key_given(mr, 48, p.join_state, bit(16), comp_mask);
    mr[48] |= uint8_t(scope << 4);
    if (differs<int8_t>(p.proxy_join, -1)) {
        // a one-bit field: only bit 0 of the value lands
        mr[49] = uint8_t((mr[49] & ~1u) | (uint8_t(p.proxy_join) & 1u));
        comp_mask |= bit(17);
    }
    return get_and_dump_any_records(kAttrMCMemberRecord, 0, comp_mask, mr, sizeof mr, dump_one_mcmember_record, p);
}

int query_service_records(const QueryCmd&, QueryParams& p, int, char**) {
    SaResult result;
    int ret = get_all_records(kAttrServiceRecord, result);
    if (ret)
        return ret;
    dump_results(result, dump_service_record, p);
    return 0;
}

// Queries keyed by a LID only: NodeRecord-like SMInfo and SwitchInfo.
int query_lid_keyed(uint16_t attr, size_t size, DumpFn* dump, QueryParams& p, int argc, char** argv) {
    return LidKey(argc, argv).query(attr, size, dump, p);
}

int query_sm_info_records(const QueryCmd&, QueryParams& p, int argc, char** argv) {
    return query_lid_keyed(kAttrSMInfoRecord, 28, dump_sm_info_record, p, argc, argv);
}

int query_switchinfo_records(const QueryCmd&, QueryParams& p, int argc, char** argv) {
    return query_lid_keyed(kAttrSwitchInfoRecord, 24, dump_switch_info_record, p, argc, argv);
}

int query_inform_info_records(const QueryCmd&, QueryParams& p, int argc, char** argv) {
    uint8_t ir[60] = {};
    uint64_t comp_mask = 0;

    if (argc > 0) {
        comp_mask = bit(0);
        if (inet_pton(AF_INET6, argv[0], ir) < 1) {
            fprintf(stderr, "Invalid SubscriberGID specified: \"%s\"\n", argv[0]);
            exit(EINVAL);
        }
    }
    return get_and_dump_any_records(kAttrInformInfoRecord, 0, comp_mask, ir, sizeof ir, dump_inform_info_record, p);
}

int query_link_records(const QueryCmd&, QueryParams& p, int argc, char** argv) {
    uint8_t lr[8] = {};
    uint64_t comp_mask = 0;
    int from_lid = 0, to_lid = 0, from_port = -1, to_port = -1;

    if (argc > 0)
        parse_lid_and_ports(argv[0], &from_lid, &from_port, nullptr);
    if (argc > 1)
        parse_lid_and_ports(argv[1], &to_lid, &to_port, nullptr);
    key_lid(lr, 0, from_lid, 0, comp_mask);
    key_u8(lr, 2, from_port, 1, comp_mask);
    key_lid(lr, 4, to_lid, 3, comp_mask);
    key_u8(lr, 3, to_port, 2, comp_mask);
    return get_and_dump_any_records(kAttrLinkRecord, 0, comp_mask, lr, sizeof lr, dump_one_link_record, p);
}

// lid/a/b records whose a and b are 8-bit fields at offsets 2 and 3
// (PortInfo: port/options; SL2VL: in/out port; VLArb: port/block).
int query_lid_two_bytes(uint16_t attr, size_t size, DumpFn* dump, QueryParams& p, int argc, char** argv) {
    LidKey k(argc, argv);
    key_u8(k.rec, 2, k.a, 1, k.mask);
    key_u8(k.rec, 3, k.b, 2, k.mask);
    return k.query(attr, size, dump, p);
}

int query_sl2vl_records(const QueryCmd&, QueryParams& p, int argc, char** argv) {
    return query_lid_two_bytes(kAttrSL2VLTableRecord, 16, dump_one_slvl_record, p, argc, argv);
}

int query_vlarb_records(const QueryCmd&, QueryParams& p, int argc, char** argv) {
    return query_lid_two_bytes(kAttrVLArbTableRecord, 72, dump_one_vlarb_record, p, argc, argv);
}

int query_pkey_tbl_records(const QueryCmd&, QueryParams& p, int argc, char** argv) {
    LidKey k(argc, argv);  // lid/port/block
    key_u8(k.rec, 4, k.a, 2, k.mask);
    key_u16(k.rec, 2, k.b, 1, k.mask);
    return k.query(kAttrPKeyTableRecord, 72, dump_one_pkey_tbl_record, p);
}

int query_lft_records(const QueryCmd&, QueryParams& p, int argc, char** argv) {
    LidKey k(argc, argv);  // lid/block
    key_u16(k.rec, 2, k.a, 1, k.mask);
    return k.query(kAttrLFTRecord, 72, dump_one_lft_record, p);
}

int query_guidinfo_records(const QueryCmd&, QueryParams& p, int argc, char** argv) {
    LidKey k(argc, argv);  // lid/block
    key_u8(k.rec, 2, k.a, 1, k.mask);
    return k.query(kAttrGUIDInfoRecord, 72, dump_one_guidinfo_record, p);
}

int query_mft_records(const QueryCmd&, QueryParams& p, int argc, char** argv) {
    LidKey k(argc, argv);  // mlid/position/block
    int position = k.a, block = k.b;
    uint16_t pb = 0;
    if (differs<int16_t>(block, -1)) {
        pb = uint16_t(block);
        k.mask |= bit(3);
    }
    pb &= 0x01ff;
    uint16_t pos = 0;
    if (differs<int8_t>(position, -1)) {
        pos = uint8_t(position);
        k.mask |= bit(1);
    }
    pb |= uint16_t(pos << 12);
    put16(k.rec + 2, pb);
    return k.query(kAttrMFTRecord, 72, dump_one_mft_record, p);
}

int query_sa_cpi(QueryParams& p) {
    SaResult result;
    if (int ret = sa_get(IB_MAD_METHOD_GET, kAttrClassPortInfo, 0, 0, nullptr, 0, result))
        return ret;
    RecBuf rb = fetch(result, 0);
    memcpy(p.cpi, rb.data(), sizeof p.cpi);
    return 0;
}

const QueryCmd query_cmds[] = {
    {"ClassPortInfo", "CPI", kAttrClassPortInfo, nullptr, query_class_port_info},
    {"NodeRecord", "NR", kAttrNodeRecord, "[lid]", query_node_records},
    {"PortInfoRecord", "PIR", kAttrPortInfoRecord, "[[lid]/[port]/[options]]", query_portinfo_records},
    {"SL2VLTableRecord", "SL2VL", kAttrSL2VLTableRecord, "[[lid]/[in_port]/[out_port]]", query_sl2vl_records},
    {"PKeyTableRecord", "PKTR", kAttrPKeyTableRecord, "[[lid]/[port]/[block]]", query_pkey_tbl_records},
    {"VLArbitrationTableRecord", "VLAR", kAttrVLArbTableRecord, "[[lid]/[port]/[block]]", query_vlarb_records},
    {"InformInfoRecord", "IIR", kAttrInformInfoRecord, "[subscriber_gid]", query_inform_info_records},
    {"LinkRecord", "LR", kAttrLinkRecord, "[[from_lid]/[from_port]] [[to_lid]/[to_port]]", query_link_records},
    {"ServiceRecord", "SR", kAttrServiceRecord, nullptr, query_service_records},
    {"PathRecord", "PR", kAttrPathRecord, nullptr, query_path_records},
    {"MCMemberRecord", "MCMR", kAttrMCMemberRecord, nullptr, query_mcmember_records},
    {"LFTRecord", "LFTR", kAttrLFTRecord, "[[lid]/[block]]", query_lft_records},
    {"MFTRecord", "MFTR", kAttrMFTRecord, "[[mlid]/[position]/[block]]", query_mft_records},
    {"GUIDInfoRecord", "GIR", kAttrGUIDInfoRecord, "[[lid]/[block]]", query_guidinfo_records},
    {"SwitchInfoRecord", "SWIR", kAttrSwitchInfoRecord, "[lid]", query_switchinfo_records},
    {"SMInfoRecord", "SMIR", kAttrSMInfoRecord, "[lid]", query_sm_info_records},
};

const QueryCmd* find_query(const char* name) {
    for (const QueryCmd& q : query_cmds)
        if (!strcasecmp(name, q.name) || (q.alias && !strcasecmp(name, q.alias)))
            return &q;
    return nullptr;
}

const QueryCmd* find_query_by_type(uint16_t type) {
    for (const QueryCmd& q : query_cmds)
        if (q.query_type == type)
            return &q;
    return nullptr;
}

enum class Command { Query, NodeRecord, ClassPortInfo, IsSM, McGroups, McMembers };

// Asks for a key on the terminal when the option's value is not a number.
const char* key_value(char* arg, const char* prompt, const char* what) {
    if (isxdigit(static_cast<unsigned char>(*arg)))
        return arg;
    const char* typed = getpass(prompt);
    if (!typed) {
        fprintf(stderr, "cannot get %s\n", what);
        show_usage();
    }
    return typed;
}

}  // namespace

int main(int argc, char** argv) {
    QueryParams params;
    Command command = Command::Query;
    uint16_t query_type = 0;
    std::string src_dst;
    const char *src_lid = nullptr, *dst_lid = nullptr;
    std::string nnm_arg;
    const char* node_name_map_file = nullptr;

    static const Option opts[] = {
        {"p", 'p', 0, nullptr, "get PathRecord info"},
        {"N", 'N', 0, nullptr, "get NodeRecord info"},
        {"L", 'L', 0, nullptr, "return the Lids of the name specified"},
        {"l", 'l', 0, nullptr, "return the unique Lid of the name specified"},
        {"G", 'G', 0, nullptr, "return the Guids of the name specified"},
        {"O", 'O', 0, nullptr, "return name for the Lid specified"},
        {"U", 'U', 0, nullptr, "return name for the Guid specified"},
        {"s", 's', 0, nullptr,
         "return the PortInfoRecords with isSM or"
         " isSMdisabled capability mask bit on"},
        {"g", 'g', 0, nullptr, "get multicast group info"},
        {"m", 'm', 0, nullptr,
         "get multicast member info (if multicast"
         " group specified, list member GIDs only for group specified,"
         " for example 'saquery -m 0xC000')"},
        {"x", 'x', 0, nullptr, "get LinkRecord info"},
        {"c", 'c', 0, nullptr, "get the SA's class port info"},
        {"S", 'S', 0, nullptr, "get ServiceRecord info"},
        {"I", 'I', 0, nullptr, "get InformInfoRecord (subscription) info"},
        {"list", 'D', 0, nullptr, "the node desc of the CA's"},
        {"src-to-dst", 1, 1, "<src:dst>",
         "get a PathRecord for"
         " <src:dst> where src and dst are either node names or LIDs"},
        {"sgid-to-dgid", 2, 1, "<sgid-dgid>",
         "get a PathRecord for"
         " <sgid-dgid> where sgid and dgid are addresses in IPv6 format"},
        {"node-name-map", 3, 1, "<file>", "specify a node name map file"},
        {"smkey", 4, 1, "<val>",
         "SA SM_Key value for the query."
         " If non-numeric value (like 'x') is specified then"
         " saquery will prompt for a value. "
         " Default (when not specified here or in ibdiag.conf) is to "
         " use SM_Key == 0 (or \"untrusted\")"},
        {"slid", 5, 1, "<lid>", "Source LID (PathRecord)"},
        {"dlid", 6, 1, "<lid>", "Destination LID (PathRecord)"},
        {"mlid", 7, 1, "<lid>", "Multicast LID (MCMemberRecord)"},
        {"sgid", 14, 1, "<gid>", "Source GID (IPv6 format) (PathRecord)"},
        {"dgid", 15, 1, "<gid>", "Destination GID (IPv6 format) (PathRecord)"},
        {"gid", 16, 1, "<gid>", "Port GID (MCMemberRecord)"},
        {"mgid", 17, 1, "<gid>", "Multicast GID (MCMemberRecord)"},
        {"reversible", 'r', 1, nullptr, "Reversible path (PathRecord)"},
        {"numb_path", 'n', 1, nullptr, "Number of paths (PathRecord)"},
        {"pkey", 18, 1, nullptr,
         "P_Key (PathRecord, MCMemberRecord)."
         " If non-numeric value (like 'x') is specified then"
         " saquery will prompt for a value"},
        {"qos_class", 'Q', 1, nullptr, "QoS Class (PathRecord)"},
        {"sl", 19, 1, nullptr, "Service level (PathRecord, MCMemberRecord)"},
        {"mtu", 'M', 1, nullptr, "MTU and selector (PathRecord, MCMemberRecord)"},
        {"rate", 'R', 1, nullptr, "Rate and selector (PathRecord, MCMemberRecord)"},
        {"pkt_lifetime", 20, 1, nullptr, "Packet lifetime and selector (PathRecord, MCMemberRecord)"},
        {"qkey", 'q', 1, nullptr,
         "Q_Key (MCMemberRecord)."
         " If non-numeric value (like 'x') is specified then"
         " saquery will prompt for a value"},
        {"tclass", 'T', 1, nullptr, "Traffic Class (PathRecord, MCMemberRecord)"},
        {"flow_label", 'F', 1, nullptr, "Flow Label (PathRecord, MCMemberRecord)"},
        {"hop_limit", 'H', 1, nullptr, "Hop limit (PathRecord, MCMemberRecord)"},
        {"scope", 21, 1, nullptr, "Scope (MCMemberRecord)"},
        {"join_state", 'J', 1, nullptr, "Join state (MCMemberRecord)"},
        {"proxy_join", 'X', 1, nullptr, "Proxy join (MCMemberRecord)"},
        {"service_id", 22, 1, nullptr, "ServiceID (PathRecord)"},
    };

    // -D/-L/-l/-G/-O/-U: NodeRecords, printed as `how` says.
    auto node_records = [&](NodePrint how) {
        node_print_desc = how;
        command = Command::NodeRecord;
    };
    // A GID option's value (IPv6 notation); anything else is a usage error.
    auto gid_arg = [](const char* arg, Gid gid) {
        if (inet_pton(AF_INET6, arg, gid) <= 0)
            show_usage();
    };
    auto handler = [&](int ch, char* arg) -> int {
        QueryParams& p = params;
        switch (ch) {
        case 1: {
            src_dst = arg;
            size_t colon = src_dst.find(':');
            if (colon == std::string::npos)
                show_usage();
            src_dst[colon] = '\0';
            src_lid = src_dst.c_str();
            dst_lid = src_dst.c_str() + colon + 1;
            p.numb_path = 0x7f;
            query_type = kAttrPathRecord;
            break;
        }
        case 2: {
            std::string s = arg;
            size_t dash = s.find('-');
            if (dash == std::string::npos)
                show_usage();
            s[dash] = '\0';
            gid_arg(s.c_str(), p.sgid);
            gid_arg(s.c_str() + dash + 1, p.dgid);
            p.numb_path = 0x7f;
            query_type = kAttrPathRecord;
            break;
        }
        case 3:
            nnm_arg = arg;
            node_name_map_file = nnm_arg.c_str();
            break;
        case 4: cfg.sakey = strtoull(key_value(arg, "SM_Key: ", "SM_Key"), nullptr, 0); break;
        case 'p': query_type = kAttrPathRecord; break;
        case 'D': node_records(NodePrint::AllDesc); break;
        case 'c': command = Command::ClassPortInfo; break;
        case 'S': query_type = kAttrServiceRecord; break;
        case 'I': query_type = kAttrInformInfoRecord; break;
        case 'N': command = Command::NodeRecord; break;
        case 'L': node_records(NodePrint::LidOnly); break;
        case 'l': node_records(NodePrint::UniqueLidOnly); break;
        case 'G': node_records(NodePrint::GuidOnly); break;
        case 'O': node_records(NodePrint::NameOfLid); break;
        case 'U': node_records(NodePrint::NameOfGuid); break;
        case 's': command = Command::IsSM; break;
        case 'g': command = Command::McGroups; break;
        case 'm': command = Command::McMembers; break;
        case 'x': query_type = kAttrLinkRecord; break;
        case 5: p.slid = uint16_t(strtoul(arg, nullptr, 0)); break;
        case 6: p.dlid = uint16_t(strtoul(arg, nullptr, 0)); break;
        case 7: p.mlid = uint16_t(strtoul(arg, nullptr, 0)); break;
        case 14: gid_arg(arg, p.sgid); break;
        case 15: gid_arg(arg, p.dgid); break;
        case 16: gid_arg(arg, p.gid); break;
        case 17: gid_arg(arg, p.mgid); break;
        case 'r': p.reversible = int(strtoul(arg, nullptr, 0)); break;
        case 'n': p.numb_path = int(strtoul(arg, nullptr, 0)); break;
        case 18: p.pkey = uint16_t(strtoul(key_value(arg, "P_Key: ", "P_Key"), nullptr, 0)); break;
        case 'Q': p.qos_class = int(strtoul(arg, nullptr, 0)); break;
        case 19: p.sl = int(strtoul(arg, nullptr, 0)); break;
        case 'M': p.mtu = uint8_t(strtoul(arg, nullptr, 0)); break;
        case 'R': p.rate = uint8_t(strtoul(arg, nullptr, 0)); break;
        case 20: p.pkt_life = uint8_t(strtoul(arg, nullptr, 0)); break;
        case 'q': p.qkey = uint32_t(strtoul(key_value(arg, "Q_Key: ", "Q_Key"), nullptr, 0)); break;
        case 'T': p.tclass = uint8_t(strtoul(arg, nullptr, 0)); break;
        case 'F': p.flow_label = uint32_t(strtoul(arg, nullptr, 0)); break;
        case 'H': p.hop_limit = int(strtoul(arg, nullptr, 0)); break;
        case 21: p.scope = uint8_t(strtoul(arg, nullptr, 0)); break;
        case 'J': p.join_state = uint8_t(strtoul(arg, nullptr, 0)); break;
        case 'X': p.proxy_join = int(strtoul(arg, nullptr, 0)); break;
        case 22: p.service_id = strtoull(arg, nullptr, 0); break;
        default: return -1;
        }
        return 0;
    };

    std::string usage = "[query-name] [<name> | <lid> | <guid>]\n"
                        "\nSupported query names (and aliases):\n";
    for (const QueryCmd& q : query_cmds)
        usage += std::string("  ") + q.name + " (" + q.alias + ") " + (q.usage ? q.usage : "") + "\n";
    usage += "\n  Queries node records by default.";

    cfg.timeout = kDefaultSaTimeoutMs;
    int first = process_opts(argc, argv, "DGLsy", opts, handler, usage.c_str());
    argc -= first;
    argv += first;

    const QueryCmd* q = nullptr;
    if (!query_type && command == Command::Query) {
        if (!argc || !(q = find_query(argv[0])))
            query_type = kAttrNodeRecord;
        else {
            query_type = q->query_type;
            argc--;
            argv++;
        }
    }

    if (argc) {
        if (node_print_desc == NodePrint::NameOfLid) {
            requested_lid = uint16_t(strtoul(argv[0], nullptr, 0));
            requested_lid_flag = true;
        } else if (node_print_desc == NodePrint::NameOfGuid) {
            requested_guid = strtoul(argv[0], nullptr, 0);
            requested_guid_flag = true;
        } else
            requested_name = argv[0];
    }
    if ((node_print_desc == NodePrint::LidOnly || node_print_desc == NodePrint::UniqueLidOnly ||
         node_print_desc == NodePrint::GuidOnly) &&
        !requested_name) {
        fprintf(stderr, "ERROR: name not specified\n");
        show_usage();
    }
    if (node_print_desc == NodePrint::NameOfLid && !requested_lid_flag) {
        fprintf(stderr, "ERROR: lid not specified\n");
        show_usage();
    }
    if (node_print_desc == NodePrint::NameOfGuid && !requested_guid_flag) {
        fprintf(stderr, "ERROR: guid not specified\n");
        show_usage();
    }
    // LID 0 is not a LID (IBA 4.1.3)
    if (node_print_desc == NodePrint::NameOfLid && !requested_lid) {
        fprintf(stderr, "ERROR: lid invalid\n");
        show_usage();
    }

    if (umad_init())
        IBEXIT("Failed to initialized umad library");
    std::unique_ptr<SaHandle> handle = sa_get_handle();
    if (!handle)
        IBPANIC("Failed to bind to the SA");
    sa = handle.get();
    node_names.emplace(node_name_map_file);

    if (src_lid && *src_lid)
        params.slid = get_lid(src_lid);
    if (dst_lid && *dst_lid)
        params.dlid = get_lid(dst_lid);

    int status = 0;
    bool cpi_required =
        command == Command::ClassPortInfo || query_type == kAttrClassPortInfo || query_type == kAttrSwitchInfoRecord;
    if (cpi_required && (status = query_sa_cpi(params)) != 0) {
        fprintf(stderr, "Failed to query SA:ClassPortInfo\n");
    } else {
        switch (command) {
        case Command::NodeRecord: status = print_node_records(); break;
        case Command::ClassPortInfo:
            dump_class_port_info(params.cpi);
            status = 0;
            break;
        case Command::IsSM: status = print_issm_records(params); break;
        case Command::McGroups: {
            SaResult result;
            status = get_all_records(kAttrMCMemberRecord, result);
            if (!status)
                dump_results(result, dump_multicast_group_record, params);
            break;
        }
        case Command::McMembers: status = print_multicast_member_records(); break;
        default:
            if ((!q && !(q = find_query_by_type(query_type))) || !q->handler) {
                fprintf(stderr, "Unknown query type %d\n", query_type);
                status = EINVAL;
            } else
                status = q->handler(*q, params, argc, argv);
            break;
        }
    }

    handle.reset();
    umad_done();
    return status;
}
