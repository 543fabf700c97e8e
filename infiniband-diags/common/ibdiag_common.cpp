// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Small helpers several tools share: counter units, capability checks,
// field printing, the host name the vendor-class servers answer with, and
// the forwarding-table dumps of ibroute and dump_fts.
#include "ibdiag_common.h"

#include <arpa/inet.h>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <endian.h>
#include <unistd.h>

namespace ibdiag {

namespace {
// PortInfo:CapabilityMask bit 15 (CapabilityMask2 is valid) and
// CapabilityMask2 bit 1 (PortInfoExtended supported), host order.
constexpr uint32_t kCapHasCapMask2 = 1u << 15;
constexpr uint16_t kCap2PortInfoExt = 1u << 1;
}  // namespace

const char* conv_cnt_human_readable(uint64_t val64, float* val, bool data) {
    static const char* const plain[] = {"", "K", "M", "G", "T", "P", "E"};
    static const char* const bytes[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
    // Scale by powers of 1024 while the value has at least one more unit.
    unsigned unit = 0;
    uint64_t divisor = 1;
    for (uint64_t rest = val64 / 1024; rest; rest /= 1024) {
        unit++;
        divisor *= 1024;
    }
    *val = (float)val64;
    if (data) {
        *val *= 4;  // data counters count 4-byte words
        if (*val / divisor > 1024) {
            unit++;
            divisor *= 1024;
        }
    }
    *val /= divisor;
    const char* const* names = data ? bytes : plain;
    return unit < 7 ? names[unit] : "";
}

bool is_mlnx_ext_port_info_supported(uint32_t vendorid, uint16_t devid) {
    if (!(cfg.ibnetdisc_flags & kNetdiscMlxEpi))
        return false;
    const bool bull = vendorid == 0x119f;
    // Switches: SwitchX, Switch-IB(2), Quantum and Bull's OEM parts.
    if ((devid >= 0xc738 && devid <= 0xc73b) || devid == 0xc839 || devid == 0xcb20 || devid == 0xcf08 ||
        devid == 0xcf09 || devid == 0xd2f0 ||
        (bull &&
         (devid == 0x1b02 || devid == 0x1b50 || devid == 0x1ba0 || (devid >= 0x1bd0 && devid <= 0x1bd5) ||
          devid == 0x1bf0)))
        return true;
    // Adapters: ConnectX-3 onwards, Connect-IB, BlueField; Bull's OEM ones.
    if ((devid >= 0x1003 && devid <= 0x101b) || devid == 0xa2d2 ||
        (bull &&
         (devid == 0x1b33 || devid == 0x1b73 || devid == 0x1b40 || devid == 0x1b41 || devid == 0x1b60 ||
          devid == 0x1b61 || devid == 0x1b83 || devid == 0x1b93 || devid == 0x1b94 || devid == 0x1bb4 ||
          devid == 0x1bb5 || (devid >= 0x1bc4 && devid <= 0x1bc6))))
        return true;
    return false;
}

bool is_port_info_extended_supported(ib_portid_t* dest, int port, struct ibmad_port* srcport) {
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    if (!smp_query_via(data, dest, IB_ATTR_NODE_INFO, 0, 0, srcport))
        IBEXIT("node info query failed");
    int type = 0;
    mad_decode_field(data, IB_NODE_TYPE_F, &type);
    int portnum = type == IB_NODE_SWITCH ? 0 : port;
    if (!smp_query_via(data, dest, IB_ATTR_PORT_INFO, portnum, 0, srcport))
        IBEXIT("port info query failed");
    uint32_t cap_mask = 0;
    mad_decode_field(data, IB_PORT_CAPMASK_F, &cap_mask);
    if (!(cap_mask & kCapHasCapMask2)) {
        IBWARN("port info capability mask2 not supported");
        return false;
    }
    // mad_decode_field stores every field of up to 32 bits as a uint32_t.
    uint32_t cap_mask2 = 0;
    mad_decode_field(data, IB_PORT_CAPMASK2_F, &cap_mask2);
    if (!(cap_mask2 & kCap2PortInfoExt)) {
        IBWARN("port info capability mask2 = 0x%x doesn't"
               " indicate PortInfoExtended support",
               cap_mask2);
        return false;
    }
    return true;
}

int snprint_field(char* buf, size_t n, enum MAD_FIELDS f, int spacing, const char* fmt, ...) {
    const char* name = mad_field_name(f);
    size_t len = strlen(name);
    if (len + 2 > n || (size_t)spacing + 1 > n)
        return 0;
    // "Name:" then dots up to column `spacing`, the value after.
    memcpy(buf, name, len);
    buf[len] = ':';
    for (size_t i = len + 1; i < (size_t)spacing + 1; i++)
        buf[i] = '.';
    va_list ap;
    va_start(ap, fmt);
    size_t at = (size_t)spacing + 1 > len + 1 ? (size_t)spacing + 1 : len + 1;
    int ret = vsnprintf(buf + at, n - at, fmt, ap);
    va_end(ap);
    return ret + spacing;
}

void dump_portinfo(const void* pi, int tabs) {
    char val[64];
    char line[1024];
    auto emit = [&](int field) {
        for (int i = 0; i < tabs; i++)
            putchar('\t');
        if (field == IB_PORT_MKEY_F && !cfg.show_keys) {
            snprint_field(line, sizeof(line), (enum MAD_FIELDS)field, 32, "%s", kNotDisplayed);
        } else {
            mad_decode_field((uint8_t*)pi, (enum MAD_FIELDS)field, val);
            if (!mad_dump_field((enum MAD_FIELDS)field, line, sizeof(line), val))
                return false;
        }
        printf("%s\n", line);
        return true;
    };
    for (int f = IB_PORT_FIRST_F; f < IB_PORT_LAST_F; f++)
        if (!emit(f))
            return;
    for (int f = IB_PORT_CAPMASK2_F; f < IB_PORT_LINK_SPEED_EXT_LAST_F; f++)
        if (!emit(f))
            return;
}

int get_host_and_domain(char* s, int sz) {
    if (gethostname(s, size_t(sz)) < 0)
        snprintf(s, size_t(sz), "?hostname?");
    s[sz - 1] = 0;
    int n = int(strlen(s));
    if (n >= sz - 1)
        return sz;
    s[n] = '.';
    s += n + 1;
    sz -= n + 1;
    int len = n + 1;
    if (getdomainname(s, size_t(sz)) < 0)
        snprintf(s, size_t(sz), "?domainname?");
    s[sz - 1] = 0;
    if ((n = int(strlen(s))) == 0)
        s[-1] = 0;
    else
        len += n;
    return len;
}

// ---- forwarding tables (ibroute, dump_fts) ----
namespace {
constexpr unsigned kMlidsPerBlock = IB_SMP_DATA_SIZE / 2;
constexpr unsigned kLidsPerBlock = IB_SMP_DATA_SIZE;

unsigned round_up(unsigned v, unsigned to) { return (v + to - 1) / to * to; }

// Port masks of one block of MLIDs, 16 ports per chunk.
uint16_t mft[16][kMlidsPerBlock];

// The row of one MLID; empty when no port is set and not dump_all.
std::string mlid_row(unsigned mlid, unsigned nports, bool brief, bool dump_all) {
    std::string row;
    bool any = false;
    if (brief) {
        unsigned chunks = round_up(nports + 1, 16) / 16;
        for (unsigned c = 0; c < chunks && c < 16; c++) {
            uint16_t mask = ntohs(mft[c][mlid % kMlidsPerBlock]);
            any |= mask != 0;
            char hex[8];
            snprintf(hex, sizeof(hex), "%04hx", mask);
            row += hex;
        }
    } else {
        for (unsigned p = 0; p <= nports && p / 16 < 16; p++) {
            uint16_t mask = ntohs(mft[p / 16][mlid % kMlidsPerBlock]);
            any |= mask != 0;
            row += (mask & (1u << (p % 16))) ? 'x' : ' ';
            row += ' ';
        }
    }
    if (!any && !dump_all)
        return {};
    return row;
}
}  // namespace

namespace {
void dump_multicast_tables(const FwdSwitch& sw, unsigned startl, unsigned endl, bool brief, bool dump_all,
                           struct ibmad_port* srcport, const FwdReadFailed& failed) {
    unsigned nports = sw.nports;
    unsigned cap = 0, top = 0;
    mad_decode_field((uint8_t*)sw.switchinfo, IB_SW_MCAST_FDB_CAP_F, &cap);
    mad_decode_field((uint8_t*)sw.switchinfo, IB_SW_MCAST_FDB_TOP_F, &top);

    if (!endl || endl > IB_MIN_MCAST_LID + cap - 1)
        endl = IB_MIN_MCAST_LID + cap - 1;
    if (!dump_all && top && top < endl) {
        if (top < IB_MIN_MCAST_LID - 1)
            IBWARN("illegal top mlid %x", top);
        else
            endl = top;
    }
    if (!startl) {
        startl = IB_MIN_MCAST_LID;
    } else if (startl < IB_MIN_MCAST_LID) {
        IBWARN("illegal start mlid %x, set to %x", startl, IB_MIN_MCAST_LID);
        startl = IB_MIN_MCAST_LID;
    }
    if (endl > IB_MAX_MCAST_LID) {
        IBWARN("illegal end mlid %x, truncate to %x", endl, IB_MAX_MCAST_LID);
        endl = IB_MAX_MCAST_LID;
    }

    printf("Multicast mlids [0x%x-0x%x] of switch %s guid 0x%016" PRIx64 " (%s):\n", startl, endl,
           portid2str(sw.portid), sw.guid, sw.name.c_str());
    if (brief) {
        printf(" MLid       Port Mask\n");
    } else {
        std::string tens, units;
        for (unsigned p = 0; p <= nports; p++) {
            tens += (p % 10) ? ' ' : (char)('0' + p / 10);
            tens += ' ';
            units += std::to_string(p % 10) + " ";
        }
        if (nports > 9)
            printf("            %s\n", tens.c_str());
        printf("     Ports: %s\n", units.c_str());
        printf(" MLid\n");
    }
    if (cfg.verbose)
        printf("Switch multicast mlid capability is %d top is 0x%x\n", cap, top);

    unsigned chunks = round_up(nports + 1, 16) / 16;
    if (chunks > 16)
        chunks = 16;
    int shown = 0;
    for (unsigned block = startl / kMlidsPerBlock; block <= endl / kMlidsPerBlock; block++) {
        for (unsigned c = 0; c < chunks; c++) {
            unsigned mod = (block - IB_MIN_MCAST_LID / kMlidsPerBlock) | (c << 28);
            IBDIAG_DEBUG("reading block %x chunk %d mod %x", block, c, mod);
            int status = 0;
            if (!smp_query_status_via(mft[c], sw.portid, IB_ATTR_MULTICASTFORWTBL, mod, 0, &status, srcport) &&
                !failed("MFT", status, mod))
                return;
        }
        unsigned i = block * kMlidsPerBlock;
        unsigned end = i + kMlidsPerBlock;
        if (i < startl)
            i = startl;
        if (end > endl + 1)
            end = endl + 1;
        for (; i < end; i++) {
            std::string row = mlid_row(i, nports, brief, dump_all);
            if (row.empty())
                continue;
            printf("0x%04x      %s\n", i, row.c_str());
            shown++;
        }
    }
    printf("%d %smlids dumped \n", shown, dump_all ? "" : "valid ");
}

void dump_unicast_tables(const FwdSwitch& sw, int startl, int endl, bool dump_all, struct ibmad_port* srcport,
                         const FwdReadFailed& failed, const LidInfoFn& lid_info) {
    uint8_t lft[IB_SMP_DATA_SIZE] = {};
    int top = 0;
    mad_decode_field((uint8_t*)sw.switchinfo, IB_SW_LINEAR_FDB_TOP_F, &top);

    if (!endl || endl > top)
        endl = top;
    if (endl > IB_MAX_UCAST_LID) {
        IBWARN("illegal lft top %d, truncate to %d", endl, IB_MAX_UCAST_LID);
        endl = IB_MAX_UCAST_LID;
    }
    printf("Unicast lids [0x%x-0x%x] of switch %s guid 0x%016" PRIx64 " (%s):\n", startl, endl, portid2str(sw.portid),
           sw.guid, sw.name.c_str());
    IBDIAG_DEBUG("Switch top is 0x%x\n", top);
    printf("  Lid  Out   Destination\n");
    printf("       Port     Info \n");

    int shown = 0;
    int endblock = (int)(round_up((unsigned)endl, kLidsPerBlock) / kLidsPerBlock);
    for (int block = startl / (int)kLidsPerBlock; block < endblock; block++) {
        IBDIAG_DEBUG("reading block %d", block);
        int status = 0;
        if (!smp_query_status_via(lft, sw.portid, IB_ATTR_LINEARFORWTBL, (unsigned)block, 0, &status, srcport) &&
            !failed("LFT", status, (unsigned)block))
            return;
        int i = block * (int)kLidsPerBlock;
        int end = i + (int)kLidsPerBlock;
        if (i < startl)
            i = startl;
        if (end > endl + 1)
            end = endl + 1;
        for (; i < end; i++) {
            unsigned outport = lft[i % kLidsPerBlock];
            bool valid = outport <= sw.nports;
            if (!valid && !dump_all)
                continue;
            std::string info = lid_info(i, valid);
            printf("0x%04x %03u %s\n", i, outport & 0xff, info.c_str());
            shown++;
        }
    }
    printf("%d %slids dumped \n", shown, dump_all ? "" : "valid ");
}
}  // namespace

void dump_fwd_tables(const FwdSwitch& sw, unsigned startl, unsigned endl, const FwdDumpOpts& opts,
                     struct ibmad_port* srcport, const FwdReadFailed& failed, const LidInfoFn& lid_info) {
    if (opts.multicast)
        dump_multicast_tables(sw, startl, endl, opts.brief, opts.dump_all, srcport, failed);
    else
        dump_unicast_tables(sw, (int)startl, (int)endl, opts.dump_all, srcport, failed, lid_info);
}

std::optional<std::string> LmcRange::path_text(int lid, bool valid) const {
    if (lid > last_port_lid)
        return std::nullopt;
    char text[200];
    char guidstr[30];
    if (!valid)
        snprintf(text, sizeof(text), ": (path #%d - illegal port)", lid - base_port_lid);
    else if (!portguid)
        snprintf(text, sizeof(text), ": (path #%d out of %d)", lid - base_port_lid + 1,
                 last_port_lid - base_port_lid + 1);
    else
        snprintf(text, sizeof(text), ": (path #%d out of %d: portguid %s)", lid - base_port_lid + 1,
                 last_port_lid - base_port_lid + 1,
                 mad_dump_val(IB_NODE_PORT_GUID_F, guidstr, sizeof(guidstr), (void*)&portguid));
    return std::string(text);
}

void LmcRange::enter(int base_lid, int lmc) {
    if (lmc > 0) {
        base_port_lid = base_lid;
        last_port_lid = base_lid + (1 << lmc) - 1;
    }
}

std::string lid_dest_info(int lid, bool valid, bool brief, LmcRange& range,
                          const std::function<std::string()>& describe) {
    if (brief)
        return {};
    if (auto text = range.path_text(lid, valid))
        return *text;
    if (!valid)
        return ": (illegal port)";
    range.portguid = 0;
    return describe();
}

std::string port_dest_text(int type, uint64_t portguid, const std::string& name) {
    char text[200];
    char guidstr[30];
    char typestr[50];
    snprintf(text, sizeof(text), ": (%s portguid %s: '%s')",
             mad_dump_val(IB_NODE_TYPE_F, typestr, sizeof(typestr), &type),
             mad_dump_val(IB_NODE_PORT_GUID_F, guidstr, sizeof(guidstr), &portguid), name.c_str());
    return text;
}

}  // namespace ibdiag
