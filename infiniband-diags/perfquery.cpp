// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// perfquery: read (and optionally reset) the PerfMgt counters of a port:
// PortCounters, PortCountersExtended, the per-SL/VL/op-code attributes and
// PortSamplesControl. With -a the counters of all ports are summed (or the
// switch's AllPortSelect is used); with -l each port is shown in turn.
//
// Function names matter here: the library's IBWARN/DEBUG lines print
// __func__, and they must read as the reference's do.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "common/ibdiag_common.h"

namespace {

using namespace ibdiag;

constexpr int kAllPorts = 0xFF;
constexpr int kMaxPorts = 255;

struct ibmad_port* srcport;
uint8_t pc[1024];

// What the options asked for.
struct Request {
    int reset = 0, reset_only = 0, all_ports = 0, loop_ports = 0;
    int port = 0, extended = 0;
    int xmt_sl = 0, rcv_sl = 0, xmt_disc = 0, rcv_err = 0;
    int extended_speeds = 0, smpl_ctl = 0;
    // the long-only counter attributes, indexed by their option value 1..12
    bool special[13] = {};
    std::vector<int> ports;
} info;

// Counters saturate instead of wrapping, as the IB spec wants.
template <unsigned Bits>
void add_capped(uint32_t& dst, uint32_t val) {
    constexpr uint64_t max = Bits >= 32 ? 0xffffffffull : ((1ull << Bits) - 1);
    uint64_t sum = uint64_t(dst) + val;
    dst = sum > max ? uint32_t(max) : uint32_t(sum);
}
void add_capped64(uint64_t& dst, uint64_t val) { dst = (dst + val < dst) ? ~0ull : dst + val; }

// Summed PortCounters: field -> running total and its width.
struct SumField {
    enum MAD_FIELDS f;
    unsigned bits;
};
const SumField kSumFields[] = {
    {IB_PC_ERR_SYM_F, 16},      {IB_PC_LINK_RECOVERS_F, 8},   {IB_PC_LINK_DOWNED_F, 8},    {IB_PC_ERR_RCV_F, 16},
    {IB_PC_ERR_PHYSRCV_F, 16},  {IB_PC_ERR_SWITCH_REL_F, 16}, {IB_PC_XMT_DISCARDS_F, 16},  {IB_PC_ERR_XMTCONSTR_F, 8},
    {IB_PC_ERR_RCVCONSTR_F, 8}, {IB_PC_ERR_LOCALINTEG_F, 4},  {IB_PC_ERR_EXCESS_OVR_F, 4}, {IB_PC_QP1_DROP_F, 16},
    {IB_PC_VL15_DROPPED_F, 16}, {IB_PC_XMT_BYTES_F, 32},      {IB_PC_RCV_BYTES_F, 32},     {IB_PC_XMT_PKTS_F, 32},
    {IB_PC_RCV_PKTS_F, 32},     {IB_PC_XMT_WAIT_F, 32},
};
struct {
    uint32_t counterselect = 0;
    uint32_t val[std::size(kSumFields)] = {};
} sum;

const enum MAD_FIELDS kSumExtBase[] = {IB_PC_EXT_XMT_BYTES_F, IB_PC_EXT_RCV_BYTES_F, IB_PC_EXT_XMT_PKTS_F,
                                       IB_PC_EXT_RCV_PKTS_F};
const enum MAD_FIELDS kSumExtWidth[] = {IB_PC_EXT_XMT_UPKTS_F, IB_PC_EXT_RCV_UPKTS_F, IB_PC_EXT_XMT_MPKTS_F,
                                        IB_PC_EXT_RCV_MPKTS_F};
const enum MAD_FIELDS kSumExtAddl[] = {
    IB_PC_EXT_ERR_SYM_F,       IB_PC_EXT_LINK_RECOVERS_F,  IB_PC_EXT_LINK_DOWNED_F,    IB_PC_EXT_ERR_RCV_F,
    IB_PC_EXT_ERR_PHYSRCV_F,   IB_PC_EXT_ERR_SWITCH_REL_F, IB_PC_EXT_XMT_DISCARDS_F,   IB_PC_EXT_ERR_XMTCONSTR_F,
    IB_PC_EXT_ERR_RCVCONSTR_F, IB_PC_EXT_ERR_LOCALINTEG_F, IB_PC_EXT_ERR_EXCESS_OVR_F, IB_PC_EXT_VL15_DROPPED_F,
    IB_PC_EXT_XMT_WAIT_F,      IB_PC_EXT_QP1_DROP_F};
struct {
    uint32_t counterselect = 0, counterselect2 = 0;
    uint64_t base[4] = {}, width[4] = {}, addl[14] = {};
} sum_ext;

void aggregate_perfcounters() {
    uint32_t v = 0;
    mad_decode_field(pc, IB_PC_COUNTER_SELECT_F, &v);
    sum.counterselect = v;
    for (size_t i = 0; i < std::size(kSumFields); i++) {
        v = 0;
        mad_decode_field(pc, kSumFields[i].f, &v);
        switch (kSumFields[i].bits) {
        case 4: add_capped<4>(sum.val[i], v); break;
        case 8: add_capped<8>(sum.val[i], v); break;
        case 16: add_capped<16>(sum.val[i], v); break;
        default: add_capped<32>(sum.val[i], v); break;
        }
    }
}

void output_aggregate_perfcounters(ib_portid_t* portid, uint16_t cap_mask) {
    char buf[1024];
    uint32_t all = kAllPorts;

    mad_encode_field(pc, IB_PC_PORT_SELECT_F, &all);
    mad_encode_field(pc, IB_PC_COUNTER_SELECT_F, &sum.counterselect);
    for (size_t i = 0; i < std::size(kSumFields); i++)
        mad_encode_field(pc, kSumFields[i].f, &sum.val[i]);
    mad_dump_perfcounters(buf, sizeof buf, pc, sizeof pc);
    printf("# Port counters: %s port %d (CapMask: 0x%02X)\n%s", portid2str(portid), kAllPorts, cap_mask, buf);
}

void aggregate_perfcounters_ext(uint16_t cap_mask, uint32_t cap_mask2) {
    uint32_t v = 0;
    uint64_t v64 = 0;

    mad_decode_field(pc, IB_PC_EXT_COUNTER_SELECT_F, &v);
    sum_ext.counterselect = v;
    for (size_t i = 0; i < 4; i++) {
        v64 = 0;
        mad_decode_field(pc, kSumExtBase[i], &v64);
        add_capped64(sum_ext.base[i], v64);
    }
    if (cap_mask & ibdiag::pm_cap::ext_width)
        for (size_t i = 0; i < 4; i++) {
            v64 = 0;
            mad_decode_field(pc, kSumExtWidth[i], &v64);
            add_capped64(sum_ext.width[i], v64);
        }
    if (cap_mask2 & ibdiag::pm_cap::addl_port_counters_ext) {
        v = 0;
        mad_decode_field(pc, IB_PC_EXT_COUNTER_SELECT2_F, &v);
        sum_ext.counterselect2 = v;
        for (size_t i = 0; i < std::size(kSumExtAddl); i++) {
            v64 = 0;
            mad_decode_field(pc, kSumExtAddl[i], &v64);
            add_capped64(sum_ext.addl[i], v64);
        }
    }
}

// PortCountersExtended as text: the base fields, the 1.2 width fields when
// the CapMask says so, and the additional error counters when CapMask2 does.
void dump_perfcounters_ext(char* buf, int size, uint16_t cap_mask, uint32_t cap_mask2) {
    buf[0] = '\0';
    mad_dump_fields(buf, size, pc, sizeof pc, IB_PC_EXT_FIRST_F, IB_PC_EXT_XMT_UPKTS_F);
    size_t off = strlen(buf);
    if (cap_mask & ibdiag::pm_cap::ext_width) {
        mad_dump_fields(buf + off, size - int(off), pc, sizeof pc, IB_PC_EXT_XMT_UPKTS_F, IB_PC_EXT_LAST_F);
        off += strlen(buf + off);
    }
    if (cap_mask2 & ibdiag::pm_cap::addl_port_counters_ext)
        mad_dump_fields(buf + off, size - int(off), pc, sizeof pc, IB_PC_EXT_COUNTER_SELECT2_F, IB_PC_EXT_ERR_LAST_F);
}

void output_aggregate_perfcounters_ext(ib_portid_t* portid, uint16_t cap_mask, uint32_t cap_mask2) {
    char buf[1536] = {};
    uint32_t all = kAllPorts;

    mad_encode_field(pc, IB_PC_EXT_PORT_SELECT_F, &all);
    mad_encode_field(pc, IB_PC_EXT_COUNTER_SELECT_F, &sum_ext.counterselect);
    for (size_t i = 0; i < 4; i++)
        mad_encode_field(pc, kSumExtBase[i], &sum_ext.base[i]);
    if (cap_mask & ibdiag::pm_cap::ext_width)
        for (size_t i = 0; i < 4; i++)
            mad_encode_field(pc, kSumExtWidth[i], &sum_ext.width[i]);
    if (cap_mask2 & ibdiag::pm_cap::addl_port_counters_ext) {
        mad_encode_field(pc, IB_PC_EXT_COUNTER_SELECT2_F, &sum_ext.counterselect2);
        for (size_t i = 0; i < std::size(kSumExtAddl); i++)
            mad_encode_field(pc, kSumExtAddl[i], &sum_ext.addl[i]);
    }
    dump_perfcounters_ext(buf, sizeof buf, cap_mask, cap_mask2);
    printf("# Port extended counters: %s port %d (CapMask: 0x%02X CapMask2: 0x%07X)\n%s", portid2str(portid), kAllPorts,
           cap_mask, cap_mask2, buf);
}

void dump_perfcounters(int extended, int timeout, uint16_t cap_mask, uint32_t cap_mask2, ib_portid_t* portid, int port,
                       bool aggregate) {
    char buf[1536];

    if (extended != 1) {
        memset(pc, 0, sizeof pc);
        if (!pma_query_via(pc, portid, port, timeout, IB_GSI_PORT_COUNTERS, srcport))
            ibexit("dump_perfcounters", "perfquery");
        if (!(cap_mask & ibdiag::pm_cap::xmit_wait)) {
            IBDIAG_VERBOSE("PortXmitWait not indicated so ignore this counter");
            uint32_t zero = 0;
            mad_encode_field(pc, IB_PC_XMT_WAIT_F, &zero);
        }
        if (aggregate)
            aggregate_perfcounters();
        else
            mad_dump_perfcounters(buf, sizeof buf, pc, sizeof pc);
    } else {
        if (!(cap_mask & ibdiag::pm_cap::ext_width) && !(cap_mask & ibdiag::pm_cap::ext_width_noietf))
            IBWARN("PerfMgt ClassPortInfo CapMask 0x%02X; No extended counter support indicated\n", cap_mask);
        memset(pc, 0, sizeof pc);
        if (!pma_query_via(pc, portid, port, timeout, IB_GSI_PORT_COUNTERS_EXT, srcport))
            ibexit("dump_perfcounters", "perfextquery");
        if (aggregate)
            aggregate_perfcounters_ext(cap_mask, cap_mask2);
        else
            dump_perfcounters_ext(buf, sizeof buf, cap_mask, cap_mask2);
    }

    if (aggregate)
        return;
    if (extended)
        printf("# Port extended counters: %s port %d (CapMask: 0x%02X CapMask2: 0x%07X)\n%s", portid2str(portid), port,
               cap_mask, cap_mask2, buf);
    else
        printf("# Port counters: %s port %d (CapMask: 0x%02X)\n%s", portid2str(portid), port, cap_mask, buf);
}

void reset_counters(int extended, int timeout, int mask, ib_portid_t* portid, int port) {
    memset(pc, 0, sizeof pc);
    if (extended != 1) {
        if (!performance_reset_via(pc, portid, port, mask, timeout, IB_GSI_PORT_COUNTERS, srcport))
            ibexit("reset_counters", "perf reset");
    } else {
        if (!performance_reset_via(pc, portid, port, mask, timeout, IB_GSI_PORT_COUNTERS_EXT, srcport))
            ibexit("reset_counters", "perf ext reset");
    }
}

using DumpFn = void(char*, int, void*, int);

// One of the "other" counter attributes: query and print, then reset when
// asked (the reset goes to the port the options named, as the reference's).
void common_func(ib_portid_t* portid, int port_num, int mask, bool query, bool reset, const char* name, uint16_t attr,
                 DumpFn* dump) {
    char buf[1536];

    if (query) {
        memset(pc, 0, sizeof pc);
        if (!pma_query_via(pc, portid, port_num, cfg.timeout, attr, srcport))
            ibexit("common_func", "cannot query %s", name);
        dump(buf, sizeof buf, pc, sizeof pc);
        printf("# %s counters: %s port %d\n%s", name, portid2str(portid), port_num, buf);
    }
    memset(pc, 0, sizeof pc);
    if (reset && !performance_reset_via(pc, portid, info.port, mask, cfg.timeout, attr, srcport))
        ibexit("common_func", "cannot reset %s", name);
}

// PortExtendedSpeedsCounters has a 64-bit counter select: a Set of its own.
uint8_t* ext_speeds_reset_via(void* rcvbuf, ib_portid_t* dest, int port, uint64_t mask, unsigned timeout) {
    ib_rpc_t rpc = {};
    int lid = dest->lid;

    IBDIAG_DEBUG("lid %u port %d mask 0x%" PRIx64, lid, port, mask);
    if (lid == -1) {
        IBWARN("only lid routed is supported");
        return nullptr;
    }
    if (!mask)
        mask = ~0ull;
    rpc.mgtclass = IB_PERFORMANCE_CLASS;
    rpc.method = IB_MAD_METHOD_SET;
    rpc.attr.id = IB_GSI_PORT_EXT_SPEEDS_COUNTERS;
    memset(rcvbuf, 0, IB_MAD_SIZE);
    mad_set_field(rcvbuf, 0, IB_PESC_PORT_SELECT_F, port);
    mad_set_field64(rcvbuf, 0, IB_PESC_COUNTER_SELECT_F, mask);
    rpc.attr.mod = 0;
    rpc.timeout = timeout;
    rpc.datasz = IB_PC_DATA_SZ;
    rpc.dataoffs = IB_PC_DATA_OFFS;
    if (!dest->qp)
        dest->qp = 1;
    if (!dest->qkey)
        dest->qkey = IB_DEFAULT_QP1_QKEY;
    return static_cast<uint8_t*>(mad_rpc(srcport, &rpc, dest, rcvbuf, rcvbuf));
}

bool is_rsfec_mode_active(ib_portid_t* portid, int port, uint16_t cap_mask) {
    uint8_t data[IB_SMP_DATA_SIZE] = {};
    uint32_t fec_mode_active = 0, pie_capmask = 0;

    if (!(cap_mask & ibdiag::pm_cap::rsfec_counters))
        return false;
    if (!is_port_info_extended_supported(portid, port, srcport)) {
        IBWARN("Port Info Extended not supported");
        return false;
    }
    if (!smp_query_via(data, portid, IB_ATTR_PORT_INFO_EXT, port, 0, srcport))
        ibexit("is_rsfec_mode_active", "smp query portinfo extended failed");
    mad_decode_field(data, IB_PORT_EXT_CAPMASK_F, &pie_capmask);
    mad_decode_field(data, IB_PORT_EXT_FEC_MODE_ACTIVE_F, &fec_mode_active);
    // FEC mode supported is bit 0 of the decoded mask; RS-FEC is mode 2,
    // RS-FEC2 mode 4.
    uint16_t fec = fec_mode_active & 0xffff;
    return (pie_capmask & 1u) && (fec == 2 || fec == 4);
}

void extended_speeds_query(ib_portid_t* portid, int port, uint64_t ext_mask, uint16_t cap_mask) {
    int mask = int(ext_mask);

    if (!info.reset_only) {
        if (is_rsfec_mode_active(portid, port, cap_mask))
            common_func(portid, port, mask, true, false, "PortExtendedSpeedsCounters with RS-FEC Active",
                        IB_GSI_PORT_EXT_SPEEDS_COUNTERS, mad_dump_port_ext_speeds_counters_rsfec_active);
        else
            common_func(portid, port, mask, true, false, "PortExtendedSpeedsCounters", IB_GSI_PORT_EXT_SPEEDS_COUNTERS,
                        mad_dump_port_ext_speeds_counters);
    }
    if ((info.reset_only || info.reset) && !ext_speeds_reset_via(pc, portid, port, ext_mask, cfg.timeout))
        ibexit("extended_speeds_query", "cannot reset PortExtendedSpeedsCounters");
}

void dump_portsamples_control(ib_portid_t* portid, int port) {
    char buf[1280];

    memset(pc, 0, sizeof pc);
    if (!pma_query_via(pc, portid, port, cfg.timeout, IB_GSI_PORT_SAMPLES_CONTROL, srcport))
        ibexit("dump_portsamples_control", "sampctlquery");
    mad_dump_portsamples_control(buf, sizeof buf, pc, sizeof pc);
    printf("# PortSamplesControl: %s port %d\n%s", portid2str(portid), port, buf);
}

// The attributes that are simply queried/reset as a whole, in the order
// the reference checks them (the first one asked for wins).
struct Simple {
    int* flag;
    const char* name;
    uint16_t attr;
    DumpFn* dump;
};

}  // namespace

int main(int argc, char** argv) {
    int mgmt_classes[3] = {IB_SMI_CLASS, IB_SA_CLASS, IB_PERFORMANCE_CLASS};
    ib_portid_t portid = {};
    int mask = 0xffff;
    uint64_t ext_mask = 0xffffffffffffffffull;
    int special_flag[13] = {};

    static const Option opts[] = {
        {"extended", 'x', 0, nullptr, "show extended port counters"},
        {"xmtsl", 'X', 0, nullptr, "show Xmt SL port counters"},
        {"rcvsl", 'S', 0, nullptr, "show Rcv SL port counters"},
        {"xmtdisc", 'D', 0, nullptr, "show Xmt Discard Details"},
        {"rcverr", 'E', 0, nullptr, "show Rcv Error Details"},
        {"extended_speeds", 'T', 0, nullptr, "show port extended speeds counters"},
        {"oprcvcounters", 1, 0, nullptr, "show Rcv Counters per Op code"},
        {"flowctlcounters", 2, 0, nullptr, "show flow control counters"},
        {"vloppackets", 3, 0, nullptr, "show packets received per Op code per VL"},
        {"vlopdata", 4, 0, nullptr, "show data received per Op code per VL"},
        {"vlxmitflowctlerrors", 5, 0, nullptr, "show flow control update errors per VL"},
        {"vlxmitcounters", 6, 0, nullptr, "show ticks waiting to transmit counters per VL"},
        {"swportvlcong", 7, 0, nullptr, "show sw port VL congestion"},
        {"rcvcc", 8, 0, nullptr, "show Rcv congestion control counters"},
        {"slrcvfecn", 9, 0, nullptr, "show SL Rcv FECN counters"},
        {"slrcvbecn", 10, 0, nullptr, "show SL Rcv BECN counters"},
        {"xmitcc", 11, 0, nullptr, "show Xmit congestion control counters"},
        {"vlxmittimecc", 12, 0, nullptr, "show VL Xmit Time congestion control counters"},
        {"smplctl", 'c', 0, nullptr, "show samples control"},
        {"all_ports", 'a', 0, nullptr, "show aggregated counters"},
        {"loop_ports", 'l', 0, nullptr, "iterate through each port"},
        {"reset_after_read", 'r', 0, nullptr, "reset counters after read"},
        {"Reset_only", 'R', 0, nullptr, "only reset counters"},
    };

    auto handler = [&](int ch, char*) -> int {
        if (ch >= 1 && ch <= 12) {
            special_flag[ch] = 1;
            return 0;
        }
        switch (ch) {
        case 'x': info.extended = 1; break;
        case 'X': info.xmt_sl = 1; break;
        case 'S': info.rcv_sl = 1; break;
        case 'D': info.xmt_disc = 1; break;
        case 'E': info.rcv_err = 1; break;
        case 'T': info.extended_speeds = 1; break;
        case 'c': info.smpl_ctl = 1; break;
        case 'a':
            info.all_ports++;
            info.port = kAllPorts;
            break;
        case 'l': info.loop_ports++; break;
        case 'r': info.reset++; break;
        case 'R': info.reset_only++; break;
        default: return -1;
        }
        return 0;
    };

    int first = process_opts(
        argc, argv, "DK", opts, handler, " [<lid|guid> [[port(s)] [reset_mask]]]",
        {"\t\t# read local port's performance counters", "32 1\t\t# read performance counters from lid 32, port 1",
         "-x 32 1\t# read extended performance counters from lid 32, port 1",
         "-a 32\t\t# read performance counters from lid 32, all ports",
         "-r 32 1\t# read performance counters and reset", "-x -r 32 1\t# read extended performance counters and reset",
         "-R 0x20 1\t# reset performance counters of port 1 only",
         "-x -R 0x20 1\t# reset extended performance counters of port 1 only",
         "-R -a 32\t# reset performance counters of all ports", "-R 32 2 0x0fff\t# reset only error counters of port 2",
         "-R 32 2 0xf000\t# reset only non-error counters of port 2",
         "-a 32 1-10\t# read performance counters from lid 32, port 1-10, aggregate output",
         "-l 32 1-10\t# read performance counters from lid 32, port 1-10, output each port",
         "-a 32 1,4,8\t# read performance counters from lid 32, port 1, 4, and 8, aggregate output",
         "-l 32 1,4,8\t# read performance counters from lid 32, port 1, 4, and 8, output each port"});
    argc -= first;
    argv += first;

    if (argc > 1) {
        std::string spec = argv[1];
        if (spec.find(',') != std::string::npos) {
            // strtok semantics: empty items are skipped
            size_t pos = 0;
            while (pos <= spec.size()) {
                size_t end = spec.find(',', pos);
                if (end == std::string::npos)
                    end = spec.size();
                if (end > pos && int(info.ports.size()) < kMaxPorts)
                    info.ports.push_back(int(strtoul(spec.substr(pos, end - pos).c_str(), nullptr, 0)));
                pos = end + 1;
            }
            if (!info.ports.empty())
                info.port = info.ports[0];
        } else if (size_t dash = spec.find('-'); dash != std::string::npos) {
            int pmin = int(strtoul(spec.substr(0, dash).c_str(), nullptr, 0));
            int pmax = int(strtoul(spec.c_str() + dash + 1, nullptr, 0));
            if (pmin >= pmax)
                IBEXIT("max port must be greater than min port in range");
            // a range can't name more ports than a node can have
            while (pmin <= pmax && int(info.ports.size()) < kMaxPorts)
                info.ports.push_back(pmin++);
            info.port = info.ports[0];
        } else
            info.port = int(strtoul(argv[1], nullptr, 0));
    }
    if (argc > 2) {
        ext_mask = strtoull(argv[2], nullptr, 0);
        mask = int(ext_mask);
    }

    srcport = open_port(mgmt_classes, 3);
    smp_mkey_set(srcport, cfg.mkey);

    if (argc) {
        resolve_dest(&portid, argv[0], cfg.sm_id, srcport);
    } else {
        if (resolve_self(cfg.ca, cfg.ca_port, &portid, &info.port, nullptr) < 0)
            IBEXIT("can't resolve self port %s", argv[0]);
    }

    // PerfMgt ClassPortInfo is mandatory: it tells what the agent can do.
    memset(pc, 0, sizeof pc);
    if (!pma_query_via(pc, &portid, info.port, cfg.timeout, CLASS_PORT_INFO, srcport))
        IBEXIT("classportinfo query");
    uint16_t cap_mask = uint16_t(pc[2] << 8 | pc[3]);
    uint32_t cap_mask2 = (uint32_t(pc[4]) << 24 | uint32_t(pc[5]) << 16 | uint32_t(pc[6]) << 8 | pc[7]) >> 5;

    bool all_ports_loop = false;
    if (!(cap_mask & ibdiag::pm_cap::all_port_select)) {
        if (!info.all_ports && info.port == kAllPorts)
            IBEXIT("AllPortSelect not supported");
        if (info.all_ports && info.port == kAllPorts)
            all_ports_loop = true;
    }

    bool query = !info.reset_only;
    bool reset = info.reset_only || info.reset;
    // The first of a group's counters asked for is the only one shown.
    auto simple_query = [&](std::span<const Simple> group) {
        for (const Simple& s : group)
            if (*s.flag) {
                common_func(&portid, info.port, mask, query, reset, s.name, s.attr, s.dump);
                return true;
            }
        return false;
    };
    const Simple first_group[] = {
        {&info.xmt_sl, "PortXmitDataSL", IB_GSI_PORT_XMIT_DATA_SL, mad_dump_perfcounters_xmt_sl},
        {&info.rcv_sl, "PortRcvDataSL", IB_GSI_PORT_RCV_DATA_SL, mad_dump_perfcounters_rcv_sl},
        {&info.xmt_disc, "PortXmitDiscardDetails", IB_GSI_PORT_XMIT_DISCARD_DETAILS, mad_dump_perfcounters_xmt_disc},
        {&info.rcv_err, "PortRcvErrorDetails", IB_GSI_PORT_RCV_ERROR_DETAILS, mad_dump_perfcounters_rcv_err},
    };
    if (simple_query(first_group)) {
        mad_rpc_close_port(srcport);
        return 0;
    }
    if (info.extended_speeds) {
        extended_speeds_query(&portid, info.port, ext_mask, cap_mask);
        mad_rpc_close_port(srcport);
        return 0;
    }
    const Simple second_group[] = {
        {&special_flag[1], "PortOpRcvCounters", IB_GSI_PORT_PORT_OP_RCV_COUNTERS,
         mad_dump_perfcounters_port_op_rcv_counters},
        {&special_flag[2], "PortFlowCtlCounters", IB_GSI_PORT_PORT_FLOW_CTL_COUNTERS,
         mad_dump_perfcounters_port_flow_ctl_counters},
        {&special_flag[3], "PortVLOpPackets", IB_GSI_PORT_PORT_VL_OP_PACKETS, mad_dump_perfcounters_port_vl_op_packet},
        {&special_flag[4], "PortVLOpData", IB_GSI_PORT_PORT_VL_OP_DATA, mad_dump_perfcounters_port_vl_op_data},
        {&special_flag[5], "PortVLXmitFlowCtlUpdateErrors", IB_GSI_PORT_PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS,
         mad_dump_perfcounters_port_vl_xmit_flow_ctl_update_errors},
        {&special_flag[6], "PortVLXmitWaitCounters", IB_GSI_PORT_PORT_VL_XMIT_WAIT_COUNTERS,
         mad_dump_perfcounters_port_vl_xmit_wait_counters},
        {&special_flag[7], "SwPortVLCongestion", IB_GSI_SW_PORT_VL_CONGESTION,
         mad_dump_perfcounters_sw_port_vl_congestion},
        {&special_flag[8], "PortRcvConCtrl", IB_GSI_PORT_RCV_CON_CTRL, mad_dump_perfcounters_rcv_con_ctrl},
        {&special_flag[9], "PortSLRcvFECN", IB_GSI_PORT_SL_RCV_FECN, mad_dump_perfcounters_sl_rcv_fecn},
        {&special_flag[10], "PortSLRcvBECN", IB_GSI_PORT_SL_RCV_BECN, mad_dump_perfcounters_sl_rcv_becn},
        {&special_flag[11], "PortXmitConCtrl", IB_GSI_PORT_XMIT_CON_CTRL, mad_dump_perfcounters_xmit_con_ctrl},
        {&special_flag[12], "PortVLXmitTimeCong", IB_GSI_PORT_VL_XMIT_TIME_CONG,
         mad_dump_perfcounters_vl_xmit_time_cong},
    };
    if (simple_query(second_group)) {
        mad_rpc_close_port(srcport);
        return 0;
    }
    if (info.smpl_ctl) {
        dump_portsamples_control(&portid, info.port);
        mad_rpc_close_port(srcport);
        return 0;
    }

    // Walking the node's ports ourselves: learn how many it has.
    int num_ports = 0, start_port = 1;
    bool walk = all_ports_loop || (info.loop_ports && (info.all_ports || info.port == kAllPorts));
    if (walk) {
        uint8_t data[IB_SMP_DATA_SIZE] = {};
        if (!smp_query_via(data, &portid, IB_ATTR_NODE_INFO, 0, 0, srcport))
            IBEXIT("smp query nodeinfo failed");
        int node_type = mad_get_field(data, 0, IB_NODE_TYPE_F);
        mad_decode_field(data, IB_NODE_NPORTS_F, &num_ports);
        if (!num_ports)
            IBEXIT("smp query nodeinfo: num ports invalid");
        if (node_type == IB_NODE_SWITCH) {
            if (!smp_query_via(data, &portid, IB_ATTR_SWITCH_INFO, 0, 0, srcport))
                IBEXIT("smp query nodeinfo failed");
            if (mad_get_field(data, 0, IB_SW_ENHANCED_PORT0_F))
                start_port = 0;
        }
        if (all_ports_loop && !info.loop_ports)
            IBWARN("Emulating AllPortSelect by iterating through all ports");
    }

    // The ports asked (all of the node's when walking them, a list, or the
    // one port), and whether their counters are summed into one dump.
    std::vector<int> targets;
    bool agg = false;
    if (walk) {
        for (int i = start_port; i <= num_ports; i++)
            targets.push_back(i);
        agg = all_ports_loop && !info.loop_ports;
    } else if (info.ports.size() > 1) {
        targets = info.ports;
        agg = info.all_ports && !info.loop_ports;
    } else
        targets.push_back(info.port);

    if (!info.reset_only) {
        for (int p : targets)
            dump_perfcounters(info.extended, cfg.timeout, cap_mask, cap_mask2, &portid, p, agg);
        if (agg) {
            if (info.extended != 1)
                output_aggregate_perfcounters(&portid, cap_mask);
            else
                output_aggregate_perfcounters_ext(&portid, cap_mask, cap_mask2);
        }
        if (!info.reset) {
            mad_rpc_close_port(srcport);
            return 0;
        }
    }

    // Reset: PortXmitWait and QP1Dropped only when the agent has them and
    // no explicit mask was given.
    if (argc <= 2 && !info.extended) {
        if (cap_mask & ibdiag::pm_cap::xmit_wait)
            mask |= 1 << 16;
        if (cap_mask & ibdiag::pm_cap::qp1_drop)
            mask |= 1 << 17;
    }
    if (info.extended) {
        mask |= 0xfff0000;
        if (cap_mask & ibdiag::pm_cap::xmit_wait)
            mask |= 1 << 28;
        if (cap_mask & ibdiag::pm_cap::qp1_drop)
            mask |= 1 << 29;
    }
    for (int p : targets)
        reset_counters(info.extended, cfg.timeout, mask, &portid, p);

    mad_rpc_close_port(srcport);
    return 0;
}
