// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// The text dumps of libibmad: value formatters (numbers, link widths and
// speeds, port states, capability masks, ...) used through the field table,
// and attribute dumps that print a run of fields one "Name:....value" line
// each.  The texts are what smpquery, perfquery, saquery & co print, so
// they follow the reference byte for byte, including the way a too small
// buffer cuts them (snprintf-style); where the reference writes past the
// buffer it was given, these stop at its end instead.
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <unistd.h>

#include "fields_internal.h"
#include "util/ibwarn.h"

namespace {

// snprintf that treats a size <= 0 as "no room" (the reference would pass a
// negative size through as a huge size_t).
__attribute__((format(printf, 3, 4))) int put(char* buf, int bufsz, const char* fmt, ...) noexcept {
    va_list ap;
    va_start(ap, fmt);
    char scratch[1];
    const int n = bufsz > 0 ? vsnprintf(buf, bufsz, fmt, ap) : vsnprintf(scratch, 0, fmt, ap);
    va_end(ap);
    return n;
}

void warn_size(const char* fn, int valsz, bool as_unsigned) {
    if (as_unsigned)
        rdma::ibwarn(fn, "bad int sz %u", (unsigned)valsz);
    else
        rdma::ibwarn(fn, "bad int sz %d", valsz);
}

uint32_t u32(const void* val) noexcept {
    uint32_t v;
    memcpy(&v, val, sizeof(v));
    return v;
}

uint64_t u64(const void* val) noexcept {
    uint64_t v;
    memcpy(&v, val, sizeof(v));
    return v;
}

int i32(const void* val) noexcept {
    int v;
    memcpy(&v, val, sizeof(v));
    return v;
}

void clear(char* buf, int bufsz) noexcept {
    if (bufsz > 0)
        buf[0] = 0;
}

// One bit of a mask and the words it stands for.
struct bit_name {
    int bit;
    const char* name;
};

// A set of flags joined by " or ": the pieces that fit, the trailing " or "
// dropped; a value outside the known bits (or 0 when `zero_is_undefined`)
// ends in "undefined (N)".  Returns the length written, or -1 once the
// buffer is full (the caller then stops).
// With `cut_on_overflow`, a list cut by the buffer's end also loses its
// last four bytes (the reference's extended speed lists do so).
int or_list(char* buf, int bufsz, int value, std::initializer_list<bit_name> bits, int known_bits,
            bool zero_is_undefined, bool cut_on_overflow = false) noexcept {
    int n = 0;
    bool first = true;
    for (const bit_name& b : bits) {
        if (!first && n >= bufsz)
            break;
        first = false;
        if (value & (1 << b.bit))
            n += put(buf + n, bufsz - n, "%s or ", b.name);
    }
    if (n >= bufsz) {
        if (cut_on_overflow && bufsz > 3 && n - 4 < bufsz)
            buf[n - 4] = 0;
        return -1;
    }
    if ((zero_is_undefined && value == 0) || (value >> known_bits)) {
        n += put(buf + n, bufsz - n, "undefined (%d)", value);
        return n >= bufsz ? -1 : n;
    }
    if (bufsz > 3) {
        buf[n - 4] = 0;
        n -= 4;
    }
    return n;
}

void dump_width_list(char* buf, int bufsz, int width) noexcept {
    or_list(buf, bufsz, width, {{0, "1X"}, {1, "4X"}, {2, "8X"}, {3, "12X"}, {4, "2X"}}, 5, true);
}

void dump_speed_list(char* buf, int bufsz, int speed) noexcept {
    const int n = or_list(buf, bufsz, speed, {{0, "2.5 Gbps"}, {1, "5.0 Gbps"}, {2, "10.0 Gbps"}}, 3, true);
    if (n < 0)
        return;
    switch (speed) {
    case 1:
    case 3:
    case 5:
    case 7: break;
    default:
        if (!(speed >> 3))
            put(buf + n, bufsz - n, " (IBA extension)");
    }
}

void dump_ext_speed_list(char* buf, int bufsz, int speed) noexcept {
    if (speed == 0) {
        put(buf, bufsz, "%d", speed);
        return;
    }
    or_list(buf, bufsz, speed, {{0, "14.0625 Gbps"}, {1, "25.78125 Gbps"}, {2, "53.125 Gbps"}, {3, "106.25 Gbps"}}, 4,
            false, true);
}

// The second extended set has one speed so far (bit 0, XDR).  Upstream
// writes any other bit as " undefined (N)" over the start of the text.
void dump_ext2_speed_list(char* buf, int bufsz, int speed) noexcept {
    if (speed == 0) {
        put(buf, bufsz, "%d", speed);
        return;
    }
    if (speed & 1)
        put(buf, bufsz, "212.5 Gbps");
    if (speed >> 1)
        put(buf, bufsz, " undefined (%d)", speed);
}

// Name lookups of small enumerations; unknown values read "?(N)".
void dump_named(char* buf, int bufsz, int value, std::initializer_list<const char*> names,
                int first_value = 0) noexcept {
    // In 64 bits: value may be any int (INT_MIN - 1 would overflow).
    const long long i = static_cast<long long>(value) - first_value;
    if (i >= 0 && i < static_cast<long long>(names.size()) && names.begin()[i])
        put(buf, bufsz, "%s", names.begin()[i]);
    else
        put(buf, bufsz, "?(%d)", value);
}

// Capability mask bits: the hex value, then one tab-indented line per bit.
void dump_mask_bits(char* buf, int bufsz, unsigned mask, std::initializer_list<bit_name> bits) noexcept {
    int n = put(buf, bufsz, "0x%x", mask);
    for (const bit_name& b : bits) {
        if (n >= bufsz)
            return;
        if (mask & (1u << b.bit))
            n += put(buf + n, bufsz - n, "\n\t\t\t\t%s", b.name);
    }
}

// Fields [start, end) one line each: "Name:.....value\n".  Returns the
// length written, or -1 when a line could not be formatted (no room for
// its label).
int dump_range(char* buf, int bufsz, void* val, int start, int end) {
    char value[256];
    char* s = buf;
    for (int field = start; field < end && bufsz > 0; field++) {
        mad_decode_field(static_cast<uint8_t*>(val), static_cast<enum MAD_FIELDS>(field), value);
        if (!mad_dump_field(static_cast<enum MAD_FIELDS>(field), s, bufsz - 1, value))
            return -1;
        const int n = strlen(s);
        s[n] = '\n';
        s[n + 1] = 0;
        s += n + 1;
        bufsz -= n + 1;
    }
    return s - buf;
}

// Several runs of fields back to back; a failed run ends the dump.
struct range {
    int start, end;
};

void dump_ranges(char* buf, int bufsz, void* val, std::initializer_list<range> ranges) {
    int used = 0;
    for (const range& r : ranges) {
        const int n = dump_range(buf + used, bufsz - used, val, r.start, r.end);
        if (n < 0)
            return;
        used += n;
    }
}

// The counter attributes of the PMA start with PortSelect/CounterSelect.
void dump_counters(char* buf, int bufsz, void* val, int start, int end) {
    dump_ranges(buf, bufsz, val, {{IB_PC_EXT_PORT_SELECT_F, IB_PC_EXT_XMT_BYTES_F}, {start, end}});
}

}  // namespace

// The exported entry points (the version script picks the names).
//
// None goes through the C-entry barrier: every formatter writes into the
// caller's buffer with snprintf (the text helpers above are noexcept) or,
// for xdump and the "bad int sz" warnings, to a stdio stream. Nothing
// allocates or throws (symbols.libibmad_nothrow checks the library's
// imports). The helpers that print are not marked noexcept, and neither are
// these definitions (mad.h declares them without it): a thread cancelled
// in stdio must still unwind.
#pragma GCC visibility push(default)
extern "C" {

// ---- numbers ----

void mad_dump_int(char* buf, int bufsz, void* val, int valsz) {
    switch (valsz) {
    case 1: put(buf, bufsz, "%d", u32(val) & 0xff); break;
    case 2: put(buf, bufsz, "%d", u32(val) & 0xffff); break;
    case 3:
    case 4: put(buf, bufsz, "%d", i32(val)); break;
    case 5:
    case 6:
    case 7:
    case 8: put(buf, bufsz, "%" PRIu64, u64(val)); break;
    default: warn_size("mad_dump_int", valsz, false); clear(buf, bufsz);
    }
}

void mad_dump_uint(char* buf, int bufsz, void* val, int valsz) {
    switch (valsz) {
    case 1: put(buf, bufsz, "%u", u32(val) & 0xff); break;
    case 2: put(buf, bufsz, "%u", u32(val) & 0xffff); break;
    case 3:
    case 4: put(buf, bufsz, "%u", u32(val)); break;
    case 5:
    case 6:
    case 7:
    case 8: put(buf, bufsz, "%" PRIu64, u64(val)); break;
    default: warn_size("mad_dump_uint", valsz, true); clear(buf, bufsz);
    }
}

static void dump_hex_digits(const char* fn, bool prefix, char* buf, int bufsz, void* val, int valsz) {
    if (valsz < 1 || valsz > 8) {
        warn_size(fn, valsz, false);
        clear(buf, bufsz);
        return;
    }
    uint64_t v = u64(val);
    if (valsz < 8)
        v &= (UINT64_C(1) << (8 * valsz)) - 1;
    put(buf, bufsz, prefix ? "0x%0*" PRIx64 : "%0*" PRIx64, 2 * valsz, v);
}

void mad_dump_hex(char* buf, int bufsz, void* val, int valsz) {
    dump_hex_digits("mad_dump_hex", true, buf, bufsz, val, valsz);
}

void mad_dump_rhex(char* buf, int bufsz, void* val, int valsz) {
    dump_hex_digits("mad_dump_rhex", false, buf, bufsz, val, valsz);
}

void mad_dump_bitfield(char* buf, int bufsz, void* val, int valsz) { put(buf, bufsz, "0x%x", u32(val)); }

// Bytes as hex digit pairs, as many as fit.
void mad_dump_array(char* buf, int bufsz, void* val, int valsz) {
    if (bufsz < valsz * 2)
        valsz = bufsz / 2;
    const uint8_t* p = static_cast<const uint8_t*>(val);
    char* s = buf;
    for (int i = 0; i < valsz; i++, s += 2)
        put(s, bufsz - 2 * i, "%02x", p[i]);
}

// A quoted string, cut to the field's size.
void mad_dump_string(char* buf, int bufsz, void* val, int valsz) {
    if (bufsz < valsz)
        valsz = bufsz;
    put(buf, valsz, "'%s'", static_cast<const char*>(val));
}

void mad_dump_nodedesc(char* buf, int bufsz, void* val, int valsz) {
    if (bufsz <= 0)
        return;
    strncpy(buf, static_cast<const char*>(val), bufsz);
    if (valsz >= 0 && valsz < bufsz)
        buf[valsz] = 0;
}

// ---- links ----

void mad_dump_linkwidth(char* buf, int bufsz, void* val, int valsz) {
    const int width = i32(val);
    switch (width) {
    case 1: put(buf, bufsz, "1X"); break;
    case 2: put(buf, bufsz, "4X"); break;
    case 4: put(buf, bufsz, "8X"); break;
    case 8: put(buf, bufsz, "12X"); break;
    case 16: put(buf, bufsz, "2X"); break;
    default: rdma::ibwarn("mad_dump_linkwidth", "bad width %d", width); put(buf, bufsz, "undefined (%d)", width);
    }
}

void mad_dump_linkwidthsup(char* buf, int bufsz, void* val, int valsz) {
    const int width = i32(val);
    dump_width_list(buf, bufsz, width);
    switch (width) {
    case 1:
    case 3:
    case 7:
    case 11:
    case 15:
    case 17:
    case 19:
    case 23:
    case 27:
    case 31: break;
    default:
        if (!(width >> 5) && bufsz > 0) {
            const int l = strlen(buf);
            put(buf + l, bufsz - l, " (IBA extension)");
        }
    }
}

void mad_dump_linkwidthen(char* buf, int bufsz, void* val, int valsz) { dump_width_list(buf, bufsz, i32(val)); }

void mad_dump_linkspeed(char* buf, int bufsz, void* val, int valsz) {
    const int speed = i32(val);
    switch (speed) {
    case 0: put(buf, bufsz, "Extended speed"); break;
    case 1: put(buf, bufsz, "2.5 Gbps"); break;
    case 2: put(buf, bufsz, "5.0 Gbps"); break;
    case 4: put(buf, bufsz, "10.0 Gbps"); break;
    default: put(buf, bufsz, "undefined (%d)", speed);
    }
}

void mad_dump_linkspeedsup(char* buf, int bufsz, void* val, int valsz) { dump_speed_list(buf, bufsz, i32(val)); }

void mad_dump_linkspeeden(char* buf, int bufsz, void* val, int valsz) { dump_speed_list(buf, bufsz, i32(val)); }

void mad_dump_linkspeedext(char* buf, int bufsz, void* val, int valsz) {
    const int speed = i32(val);
    switch (speed) {
    case 0: put(buf, bufsz, "No Extended Speed"); break;
    case 1: put(buf, bufsz, "14.0625 Gbps"); break;
    case 2: put(buf, bufsz, "25.78125 Gbps"); break;
    case 4: put(buf, bufsz, "53.125 Gbps"); break;
    case 8: put(buf, bufsz, "106.25 Gbps"); break;
    default: put(buf, bufsz, "undefined (%d)", speed);
    }
}

void mad_dump_linkspeedextsup(char* buf, int bufsz, void* val, int valsz) { dump_ext_speed_list(buf, bufsz, i32(val)); }

void mad_dump_linkspeedexten(char* buf, int bufsz, void* val, int valsz) {
    const int speed = i32(val);
    if (speed == 30) {
        put(buf, bufsz, "%s", "Extended link speeds disabled");
        return;
    }
    dump_ext_speed_list(buf, bufsz, speed);
}

// The second extended speed set (XDR), IBMAD_1.4.
void mad_dump_linkspeedext2(char* buf, int bufsz, void* val, int valsz) {
    const int speed = i32(val);
    switch (speed) {
    case 0: put(buf, bufsz, "No Extended Speed 2"); break;
    case 1: put(buf, bufsz, "212.5 Gbps"); break;
    default: put(buf, bufsz, "undefined (%d)", speed);
    }
}

void mad_dump_linkspeedextsup2(char* buf, int bufsz, void* val, int valsz) {
    dump_ext2_speed_list(buf, bufsz, i32(val));
}

void mad_dump_linkspeedexten2(char* buf, int bufsz, void* val, int valsz) {
    dump_ext2_speed_list(buf, bufsz, i32(val));
}

// ---- port states and capabilities ----

void mad_dump_portstate(char* buf, int bufsz, void* val, int valsz) {
    dump_named(buf, bufsz, i32(val), {"NoChange", "Down", "Initialize", "Armed", "Active"});
}

void mad_dump_linkdowndefstate(char* buf, int bufsz, void* val, int valsz) {
    dump_named(buf, bufsz, i32(val), {"NoChange", "Sleep", "Polling"});
}

void mad_dump_physportstate(char* buf, int bufsz, void* val, int valsz) {
    dump_named(buf, bufsz, i32(val),
               {"NoChange", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery",
                "PhyTest"});
}

void mad_dump_mtu(char* buf, int bufsz, void* val, int valsz) {
    dump_named(buf, bufsz, i32(val), {"256", "512", "1024", "2048", "4096"}, 1);
}

void mad_dump_vlcap(char* buf, int bufsz, void* val, int valsz) {
    dump_named(buf, bufsz, i32(val), {"VL0", "VL0-1", "VL0-3", "VL0-7", "VL0-14"}, 1);
}

void mad_dump_opervls(char* buf, int bufsz, void* val, int valsz) {
    dump_named(buf, bufsz, i32(val), {"No change", "VL0", "VL0-1", "VL0-3", "VL0-7", "VL0-14"});
}

void mad_dump_node_type(char* buf, int bufsz, void* val, int valsz) {
    const int type = i32(val);
    switch (type) {
    case 1: put(buf, bufsz, "Channel Adapter"); break;
    case 2: put(buf, bufsz, "Switch"); break;
    case 3: put(buf, bufsz, "Router"); break;
    default: put(buf, bufsz, "?(%d)?", type);
    }
}

void mad_dump_portcapmask(char* buf, int bufsz, void* val, int valsz) {
    dump_mask_bits(buf, bufsz, u32(val),
                   {
                       {1, "IsSM"},
                       {2, "IsNoticeSupported"},
                       {3, "IsTrapSupported"},
                       {4, "IsOptionalIPDSupported"},
                       {5, "IsAutomaticMigrationSupported"},
                       {6, "IsSLMappingSupported"},
                       {7, "IsMKeyNVRAM"},
                       {8, "IsPKeyNVRAM"},
                       {9, "IsLedInfoSupported"},
                       {10, "IsSMdisabled"},
                       {11, "IsSystemImageGUIDsupported"},
                       {12, "IsPkeySwitchExternalPortTrapSupported"},
                       {14, "IsExtendedSpeedsSupported"},
                       {15, "IsCapabilityMask2Supported"},
                       {16, "IsCommunicatonManagementSupported"},
                       {17, "IsSNMPTunnelingSupported"},
                       {18, "IsReinitSupported"},
                       {19, "IsDeviceManagementSupported"},
                       {20, "IsVendorClassSupported"},
                       {21, "IsDRNoticeSupported"},
                       {22, "IsCapabilityMaskNoticeSupported"},
                       {23, "IsBootManagementSupported"},
                       {24, "IsLinkRoundTripLatencySupported"},
                       {25, "IsClientRegistrationSupported"},
                       {26, "IsOtherLocalChangesNoticeSupported"},
                       {27, "IsLinkSpeedWidthPairsTableSupported"},
                       {28, "IsVendorSpecificMadsTableSupported"},
                       {29, "IsMcastPkeyTrapSuppressionSupported"},
                       {30, "IsMulticastFDBTopSupported"},
                       {31, "IsHierarchyInfoSupported"},
                   });
}

void mad_dump_portcapmask2(char* buf, int bufsz, void* val, int valsz) {
    dump_mask_bits(buf, bufsz, u32(val),
                   {
                       {0, "IsSetNodeDescriptionSupported"},
                       {1, "IsPortInfoExtendedSupported"},
                       {2, "IsVirtualizationSupported"},
                       {3, "IsSwitchPortStateTableSupported"},
                       {4, "IsLinkWidth2xSupported"},
                       {5, "IsLinkSpeedHDRSupported"},
                       {6, "IsMKeyProtectBitsExtSupported"},
                       {7, "IsEnhancedTrap128Supported"},
                       {8, "IsPartitionTopSupported"},
                       {9, "IsEnhancedQoSArbiterSupported"},
                       {10, "IsLinkSpeedNDRSupported"},
                   });
}

// SL to VL table: 16 four-bit entries, high nibble first.
void mad_dump_sltovl(char* buf, int bufsz, void* val, int valsz) {
    const uint8_t* p = static_cast<const uint8_t*>(val);
    int n = put(buf, bufsz, "|");
    for (int sl = 0; sl < 16; sl++) {
        const unsigned vl = sl & 1 ? p[sl / 2] & 0xf : p[sl / 2] >> 4;
        n += put(buf + n, bufsz - n, "%2u|", vl);
    }
    put(buf + n, bufsz - n, "\n");
}

// VL arbitration entries: (VL, weight) byte pairs, `num` bytes in all.
void mad_dump_vlarbitration(char* buf, int bufsz, void* val, int num) {
    const uint8_t* p = static_cast<const uint8_t*>(val);
    const int entries = num / 2;
    int n = put(buf, bufsz, "\nVL    : |");
    for (int i = 0; i < entries; i++)
        n += put(buf + n, bufsz - n, "0x%-2X|", p[2 * i] & 0xf);
    n += put(buf + n, bufsz - n, "\nWEIGHT: |");
    for (int i = 0; i < entries; i++)
        n += put(buf + n, bufsz - n, "0x%-2X|", p[2 * i + 1]);
    put(buf + n, bufsz - n, "\n");
}

// ---- whole attributes ----

void mad_dump_fields(char* buf, int bufsz, void* val, int valsz, int start, int end) {
    dump_range(buf, bufsz, val, start, end);
}

void mad_dump_nodeinfo(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_NODE_FIRST_F, IB_NODE_LAST_F);
}

void mad_dump_portinfo(char* buf, int bufsz, void* val, int valsz) {
    dump_ranges(buf, bufsz, val,
                {{IB_PORT_FIRST_F, IB_PORT_LAST_F}, {IB_PORT_CAPMASK2_F, IB_PORT_LINK_SPEED_EXT_LAST_F}});
}

void mad_dump_portstates(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_PORT_STATE_F, IB_PORT_LINK_DOWN_DEF_F);
}

void mad_dump_switchinfo(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_SW_FIRST_F, IB_SW_LAST_F);
}

void mad_dump_perfcounters(char* buf, int bufsz, void* val, int valsz) {
    dump_ranges(buf, bufsz, val,
                {{IB_PC_FIRST_F, IB_PC_VL15_DROPPED_F},
                 {IB_PC_QP1_DROP_F, IB_PC_QP1_DROP_F + 1},
                 {IB_PC_VL15_DROPPED_F, IB_PC_LAST_F}});
}

void mad_dump_perfcounters_ext(char* buf, int bufsz, void* val, int valsz) {
    dump_ranges(buf, bufsz, val,
                {{IB_PC_EXT_FIRST_F, IB_PC_EXT_LAST_F}, {IB_PC_EXT_COUNTER_SELECT2_F, IB_PC_EXT_ERR_LAST_F}});
}

void mad_dump_perfcounters_xmt_sl(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_XMT_DATA_SL_FIRST_F, IB_PC_XMT_DATA_SL_LAST_F);
}

void mad_dump_perfcounters_rcv_sl(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_RCV_DATA_SL_FIRST_F, IB_PC_RCV_DATA_SL_LAST_F);
}

void mad_dump_perfcounters_xmt_disc(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_XMT_INACT_DISC_F, IB_PC_XMT_DISC_LAST_F);
}

void mad_dump_perfcounters_rcv_err(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_RCV_LOCAL_PHY_ERR_F, IB_PC_RCV_ERR_LAST_F);
}

void mad_dump_portsamples_control(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_PSC_OPCODE_F, IB_PSC_LAST_F);
}

void mad_dump_portsamples_result(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_PSR_TAG_F, IB_PSR_LAST_F);
}

void mad_dump_port_ext_speeds_counters(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_PESC_PORT_SELECT_F, IB_PESC_LAST_F);
}

void mad_dump_port_ext_speeds_counters_rsfec_active(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_PESC_RSFEC_FIRST_F, IB_PESC_RSFEC_LAST_F);
}

void mad_dump_perfcounters_port_op_rcv_counters(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_PORT_OP_RCV_COUNTERS_FIRST_F, IB_PC_PORT_OP_RCV_COUNTERS_LAST_F);
}

void mad_dump_perfcounters_port_flow_ctl_counters(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_PORT_FLOW_CTL_COUNTERS_FIRST_F, IB_PC_PORT_FLOW_CTL_COUNTERS_LAST_F);
}

void mad_dump_perfcounters_port_vl_op_packet(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_PORT_VL_OP_PACKETS_FIRST_F, IB_PC_PORT_VL_OP_PACKETS_LAST_F);
}

void mad_dump_perfcounters_port_vl_op_data(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_PORT_VL_OP_DATA_FIRST_F, IB_PC_PORT_VL_OP_DATA_LAST_F);
}

void mad_dump_perfcounters_port_vl_xmit_flow_ctl_update_errors(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS_FIRST_F,
                  IB_PC_PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS_LAST_F);
}

void mad_dump_perfcounters_port_vl_xmit_wait_counters(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_PORT_VL_XMIT_WAIT_COUNTERS_FIRST_F, IB_PC_PORT_VL_XMIT_WAIT_COUNTERS_LAST_F);
}

void mad_dump_perfcounters_sw_port_vl_congestion(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_SW_PORT_VL_CONGESTION_FIRST_F, IB_PC_SW_PORT_VL_CONGESTION_LAST_F);
}

void mad_dump_perfcounters_rcv_con_ctrl(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_RCV_CON_CTRL_FIRST_F, IB_PC_RCV_CON_CTRL_LAST_F);
}

void mad_dump_perfcounters_sl_rcv_fecn(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_SL_RCV_FECN_FIRST_F, IB_PC_SL_RCV_FECN_LAST_F);
}

void mad_dump_perfcounters_sl_rcv_becn(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_SL_RCV_BECN_FIRST_F, IB_PC_SL_RCV_BECN_LAST_F);
}

void mad_dump_perfcounters_xmit_con_ctrl(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_XMIT_CON_CTRL_FIRST_F, IB_PC_XMIT_CON_CTRL_LAST_F);
}

void mad_dump_perfcounters_vl_xmit_time_cong(char* buf, int bufsz, void* val, int valsz) {
    dump_counters(buf, bufsz, val, IB_PC_VL_XMIT_TIME_CONG_FIRST_F, IB_PC_VL_XMIT_TIME_CONG_LAST_F);
}

void mad_dump_mlnx_ext_port_info(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_MLNX_EXT_PORT_STATE_CHG_ENABLE_F, IB_MLNX_EXT_PORT_LAST_F);
}

void mad_dump_cc_congestioninfo(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CC_CONGESTION_INFO_FIRST_F, IB_CC_CONGESTION_INFO_LAST_F);
}

void mad_dump_cc_congestionkeyinfo(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CC_CONGESTION_KEY_INFO_FIRST_F, IB_CC_CONGESTION_KEY_INFO_LAST_F);
}

void mad_dump_cc_congestionlog(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CC_CONGESTION_LOG_FIRST_F, IB_CC_CONGESTION_LOG_LAST_F);
}

void mad_dump_cc_congestionlogswitch(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CC_CONGESTION_LOG_SWITCH_FIRST_F, IB_CC_CONGESTION_LOG_SWITCH_LAST_F);
}

void mad_dump_cc_congestionlogentryswitch(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CC_CONGESTION_LOG_ENTRY_SWITCH_FIRST_F, IB_CC_CONGESTION_LOG_ENTRY_SWITCH_LAST_F);
}

void mad_dump_cc_congestionlogca(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CC_CONGESTION_LOG_CA_FIRST_F, IB_CC_CONGESTION_LOG_CA_LAST_F);
}

void mad_dump_cc_congestionlogentryca(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CC_CONGESTION_LOG_ENTRY_CA_FIRST_F, IB_CC_CONGESTION_LOG_ENTRY_CA_LAST_F);
}

void mad_dump_cc_switchcongestionsetting(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CC_SWITCH_CONGESTION_SETTING_FIRST_F, IB_CC_SWITCH_CONGESTION_SETTING_LAST_F);
}

void mad_dump_cc_switchportcongestionsettingelement(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_FIRST_F,
               IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_LAST_F);
}

void mad_dump_cc_cacongestionsetting(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CC_CA_CONGESTION_SETTING_FIRST_F, IB_CC_CA_CONGESTION_SETTING_LAST_F);
}

void mad_dump_cc_cacongestionentry(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CC_CA_CONGESTION_ENTRY_FIRST_F, IB_CC_CA_CONGESTION_ENTRY_LAST_F);
}

void mad_dump_cc_congestioncontroltable(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CC_CONGESTION_CONTROL_TABLE_FIRST_F, IB_CC_CONGESTION_CONTROL_TABLE_LAST_F);
}

void mad_dump_cc_congestioncontroltableentry(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CC_CONGESTION_CONTROL_TABLE_ENTRY_FIRST_F,
               IB_CC_CONGESTION_CONTROL_TABLE_ENTRY_LAST_F);
}

void mad_dump_cc_timestamp(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CC_TIMESTAMP_FIRST_F, IB_CC_TIMESTAMP_LAST_F);
}

void mad_dump_classportinfo(char* buf, int bufsz, void* val, int valsz) {
    dump_range(buf, bufsz, val, IB_CPI_BASEVER_F, IB_CPI_TRAP_QKEY_F + 1);
}

void mad_dump_portinfo_ext(char* buf, int bufsz, void* val, int valsz) {
    dump_ranges(buf, bufsz, val,
                {{IB_PORT_EXT_FIRST_F, IB_PORT_EXT_LAST_F},
                 {IB_PORT_EXT_HDR_FEC_MODE_SUPPORTED_F, IB_PORT_EXT_HDR_FEC_MODE_LAST_F},
                 {IB_PORT_EXT_NDR_FEC_MODE_SUPPORTED_F, IB_PORT_EXT_NDR_FEC_MODE_LAST_F}});
}

// ---- raw bytes ----

// Hex bytes, 2-byte groups separated by a space, 16 bytes per line.
void xdump(FILE* file, const char* msg, void* p, int size) {
    static const char digits[] = "0123456789abcdef";
    const uint8_t* cp = static_cast<const uint8_t*>(p);
    if (!file)
        return;
    if (msg)
        fputs(msg, file);
    int i = 0;
    while (i < size) {
        fputc(digits[cp[0] >> 4], file);
        fputc(digits[cp[0] & 0xf], file);
        if (++i >= size)
            break;
        fputc(digits[cp[1] >> 4], file);
        fputc(digits[cp[1] & 0xf], file);
        fputc(++i % 16 ? ' ' : '\n', file);
        cp += 2;
    }
    if (i % 16)
        fputc('\n', file);
}

}  // extern "C"
#pragma GCC visibility pop
