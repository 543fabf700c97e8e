// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// IBNETDISC_1.1: extended link speeds joined across PortInfo's
// LinkSpeedExt* fields (bits 0-4: 14.0625 to 106.25 Gb/s per lane) and the
// newer LinkSpeedExt*2 fields (212.5 Gb/s and up, shifted to bit 5).
#include "internal.h"

#include <cstdio>

namespace {

constexpr uint32_t kCapHasExtSpeeds = 1u << 14;  // CapabilityMask.IsExtendedSpeedsSupported
constexpr uint32_t kCapHasCapMask2 = 1u << 15;  // CapabilityMask.IsCapabilityMask2Supported
constexpr uint32_t kCap2ExtSpeeds2 = 1u << 10;  // CapabilityMask2.IsExtendedSpeeds2Supported
constexpr int kEnabledAllOnes = 30;  // LinkSpeedExtEnabled "all supported"

struct SpeedName {
    int bit;
    const char* text;
};
constexpr SpeedName kSpeeds[] = {
    {0x01, "14.0625 Gbps"}, {0x02, "25.78125 Gbps"}, {0x04, "53.125 Gbps"}, {0x08, "106.25 Gbps"}, {0x20, "212.5 Gbps"},
};

}  // namespace

// exported: the version script decides what leaves the library
//
// Every function of this file is pure: field reads (libibmad's
// mad_get_field, itself pure) and snprintf into the caller's buffer. Nothing
// allocates or throws, so none goes through the C-entry barrier. (The
// definitions cannot say noexcept: the C header declares them without it,
// and C++ requires every declaration to agree.)
#pragma GCC visibility push(default)
extern "C" {

int ibnd_get_agg_linkspeedext_field(void* cap_info, void* info, enum MAD_FIELDS efield, enum MAD_FIELDS e2field) {
    if (!info)
        return 0;
    uint32_t cap = cap_info ? mad_get_field(cap_info, 0, IB_PORT_CAPMASK_F) : 0;
    int ext = 0, ext2 = 0;
    if (cap & kCapHasExtSpeeds) {
        ext = static_cast<int>(mad_get_field(info, 0, efield));
        if (efield == IB_PORT_LINK_SPEED_EXT_ENABLED_F && ext == kEnabledAllOnes)
            ext = 0;
        uint32_t cap2 = (cap & kCapHasCapMask2) ? mad_get_field(cap_info, 0, IB_PORT_CAPMASK2_F) : 0;
        if ((cap2 & kCap2ExtSpeeds2) && e2field > IB_NO_FIELD)
            ext2 = static_cast<int>(mad_get_field(info, 0, e2field)) << 5;
    }
    // The active speed is one value; enabled and supported are bit sets.
    if (efield == IB_PORT_LINK_SPEED_EXT_ACTIVE_F)
        return ext2 ? ext2 : ext;
    return ext | ext2;
}

}  // extern "C"
#pragma GCC visibility pop

// The LinkSpeedExt*2 fields exist only in newer libibmad field tables; with
// an older mad.h they are not decoded (reported as 0).
#ifdef IBND_HAVE_EXT_SPEEDS_2
#define IBND_E2(f) f
#else
#define IBND_E2(f) IB_NO_FIELD
#endif

// exported: the version script decides what leaves the library (pure, as
// above)
#pragma GCC visibility push(default)
extern "C" {

int ibnd_get_agg_linkspeedext(void* cap_info, void* info) {
    return ibnd_get_agg_linkspeedext_field(cap_info, info, IB_PORT_LINK_SPEED_EXT_ACTIVE_F,
                                           IBND_E2(IB_PORT_LINK_SPEED_EXT_ACTIVE_2_F));
}

int ibnd_get_agg_linkspeedexten(void* cap_info, void* info) {
    return ibnd_get_agg_linkspeedext_field(cap_info, info, IB_PORT_LINK_SPEED_EXT_ENABLED_F,
                                           IBND_E2(IB_PORT_LINK_SPEED_EXT_ENABLED_2_F));
}

int ibnd_get_agg_linkspeedextsup(void* cap_info, void* info) {
    return ibnd_get_agg_linkspeedext_field(cap_info, info, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F,
                                           IBND_E2(IB_PORT_LINK_SPEED_EXT_SUPPORTED_2_F));
}

char* ibnd_dump_agg_linkspeedext(char* buf, int bufsz, int speed) {
    if (!buf || bufsz <= 0)
        return buf;
    const char* text = nullptr;
    if (speed == 0)
        text = "No Extended Speed";
    for (const SpeedName& s : kSpeeds)
        if (speed == s.bit)
            text = s.text;
    if (text)
        std::snprintf(buf, static_cast<size_t>(bufsz), "%s", text);
    else
        std::snprintf(buf, static_cast<size_t>(bufsz), "undefined (%d)", speed);
    return buf;
}

char* ibnd_dump_agg_linkspeedext_bits(char* buf, int bufsz, int speed) {
    if (!buf || bufsz <= 0)
        return buf;
    if (speed == 0) {
        std::snprintf(buf, static_cast<size_t>(bufsz), "%d", speed);
        return buf;
    }
    // "A or B or C"; bits above 5 make it "... or undefined (N)".
    int n = 0;
    buf[0] = '\0';
    for (const SpeedName& s : kSpeeds) {
        if (!(speed & s.bit) || n >= bufsz)
            continue;
        n += std::snprintf(buf + n, static_cast<size_t>(bufsz - n), "%s or ", s.text);
    }
    if (speed >> 6) {
        if (n < bufsz)
            std::snprintf(buf + n, static_cast<size_t>(bufsz - n), "undefined (%d)", speed);
        return buf;
    }
    // drop the trailing " or " (it may have been cut short already)
    int len = n < bufsz ? n : bufsz - 1;
    if (len >= 4 && n < bufsz)
        buf[len - 4] = '\0';
    return buf;
}

char* ibnd_dump_agg_linkspeedexten(char* buf, int bufsz, int speed) {
    return ibnd_dump_agg_linkspeedext_bits(buf, bufsz, speed);
}

char* ibnd_dump_agg_linkspeedextsup(char* buf, int bufsz, int speed) {
    return ibnd_dump_agg_linkspeedext_bits(buf, bufsz, speed);
}

}  // extern "C"
#pragma GCC visibility pop
