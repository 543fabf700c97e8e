// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// Fuzz entry for libibmad's decoders and text dumps: arbitrary bytes as a
// MAD (or attribute) buffer, with the first bytes choosing what to do with
// it.  Built as a libFuzzer target by clang (-fsanitize=fuzzer) and, for the
// corpus replay test, linked with fuzz_replay.cpp by the normal compiler.
//
// Input layout: [0] selector, [1..2] text buffer size (little endian, up to
// 8191), [3] value size, [4..5] field id, [6..] the MAD bytes (copied into a
// zeroed 2 KiB buffer, so short inputs are fine).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <infiniband/mad.h>

namespace {

using dump_fn = void(char*, int, void*, int);

dump_fn* const formatters[] = {
    mad_dump_int,
    mad_dump_uint,
    mad_dump_hex,
    mad_dump_rhex,
    mad_dump_bitfield,
    mad_dump_array,
    mad_dump_string,
    mad_dump_linkwidth,
    mad_dump_linkwidthsup,
    mad_dump_linkwidthen,
    mad_dump_linkdowndefstate,
    mad_dump_linkspeed,
    mad_dump_linkspeedsup,
    mad_dump_linkspeeden,
    mad_dump_linkspeedext,
    mad_dump_linkspeedextsup,
    mad_dump_linkspeedexten,
    mad_dump_linkspeedext2,
    mad_dump_linkspeedextsup2,
    mad_dump_linkspeedexten2,
    mad_dump_portstate,
    mad_dump_portstates,
    mad_dump_physportstate,
    mad_dump_portcapmask,
    mad_dump_portcapmask2,
    mad_dump_mtu,
    mad_dump_vlcap,
    mad_dump_opervls,
    mad_dump_node_type,
    mad_dump_sltovl,
    mad_dump_vlarbitration,
    mad_dump_nodedesc,
    mad_dump_nodeinfo,
    mad_dump_portinfo,
    mad_dump_switchinfo,
    mad_dump_perfcounters,
    mad_dump_perfcounters_ext,
    mad_dump_perfcounters_xmt_sl,
    mad_dump_perfcounters_rcv_sl,
    mad_dump_perfcounters_xmt_disc,
    mad_dump_perfcounters_rcv_err,
    mad_dump_portsamples_control,
    mad_dump_port_ext_speeds_counters,
    mad_dump_perfcounters_port_op_rcv_counters,
    mad_dump_perfcounters_port_flow_ctl_counters,
    mad_dump_perfcounters_port_vl_op_packet,
    mad_dump_perfcounters_port_vl_op_data,
    mad_dump_perfcounters_port_vl_xmit_flow_ctl_update_errors,
    mad_dump_perfcounters_port_vl_xmit_wait_counters,
    mad_dump_perfcounters_sw_port_vl_congestion,
    mad_dump_perfcounters_rcv_con_ctrl,
    mad_dump_perfcounters_sl_rcv_fecn,
    mad_dump_perfcounters_sl_rcv_becn,
    mad_dump_perfcounters_xmit_con_ctrl,
    mad_dump_perfcounters_vl_xmit_time_cong,
    mad_dump_mlnx_ext_port_info,
    mad_dump_cc_congestioninfo,
    mad_dump_cc_congestionkeyinfo,
    mad_dump_cc_congestionlog,
    mad_dump_cc_congestionlogswitch,
    mad_dump_cc_congestionlogentryswitch,
    mad_dump_cc_congestionlogca,
    mad_dump_cc_congestionlogentryca,
    mad_dump_cc_switchcongestionsetting,
    mad_dump_cc_switchportcongestionsettingelement,
    mad_dump_cc_cacongestionsetting,
    mad_dump_cc_cacongestionentry,
    mad_dump_cc_congestioncontroltable,
    mad_dump_cc_congestioncontroltableentry,
    mad_dump_cc_timestamp,
    mad_dump_classportinfo,
    mad_dump_portsamples_result,
    mad_dump_portinfo_ext,
    mad_dump_port_ext_speeds_counters_rsfec_active,
};
constexpr size_t n_formatters = sizeof(formatters) / sizeof(formatters[0]);

// Nothing may be written past the size given, and a text that was written
// must end inside it -- except where the reference leaves it open too:
// mad_dump_array (hex pairs up to the end) and mad_dump_nodedesc (strncpy).
void check_text(const std::vector<char>& text, int bufsz, bool may_be_open = false) {
    const size_t room = bufsz > 0 ? bufsz : 0;
    for (size_t i = room; i < text.size(); i++)
        if (text[i] != '\x7f')
            abort();
    if (room && text[0] != '\x7f' && !may_be_open && !memchr(text.data(), 0, room))
        abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 6)
        return 0;
    const unsigned selector = data[0];
    const int bufsz = (data[1] | data[2] << 8) & 0x1fff;
    const int valsz = data[3];
    const int field = static_cast<int16_t>(data[4] | data[5] << 8);

    // The MAD, zero padded; its last byte stays 0 so strings end inside.
    std::vector<uint8_t> mad(2048, 0);
    memcpy(mad.data(), data + 6, size - 6 < mad.size() - 1 ? size - 6 : mad.size() - 1);

    std::vector<char> text(8192 + 64, '\x7f');
    const auto f = static_cast<enum MAD_FIELDS>(field);
    switch (selector % 4) {
    case 0: {
        // A formatter or attribute dump on the whole buffer.
        dump_fn* fn = formatters[(selector / 4) % n_formatters];
        fn(text.data(), bufsz, mad.data(), valsz);
        check_text(text, bufsz, fn == mad_dump_array || fn == mad_dump_nodedesc);
        break;
    }
    case 1: {
        // One field: decode it, then format it as a line and as a value.
        std::vector<uint8_t> val(512, 0);
        mad_decode_field(mad.data(), f, val.data());
        val.back() = 0;
        if (mad_dump_field(f, text.data(), bufsz, val.data()))
            check_text(text, bufsz);
        std::fill(text.begin(), text.end(), '\x7f');
        if (mad_dump_val(f, text.data(), bufsz, val.data()))
            check_text(text, bufsz);
        break;
    }
    case 2: {
        // A run of fields starting at the given id.
        mad_dump_fields(text.data(), bufsz, mad.data(), static_cast<int>(mad.size()), field, field + (selector >> 2));
        check_text(text, bufsz);
        break;
    }
    case 3: {
        // Accessors at an offset inside the buffer.
        const int base = valsz % 64;
        std::vector<uint8_t> val(512, 0);
        (void)mad_get_field(mad.data(), base, f);
        (void)mad_get_field64(mad.data(), base, f);
        mad_get_array(mad.data(), base, f, val.data());
        mad_set_field(mad.data(), base, f, 0xa5a5a5a5u);
        mad_set_array(mad.data(), base, f, val.data());
        mad_encode_field(mad.data(), f, val.data());
        (void)mad_field_name(f);
        break;
    }
    }
    return 0;
}
