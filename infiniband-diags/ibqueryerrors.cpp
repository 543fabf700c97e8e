// ibqueryerrors: scan the subnet (or load a cache), read every port's
// PerfMgt counters and report those above the thresholds; optionally the
// data counters, the link of a bad port, and clearing the counters.

#include <arpa/inet.h>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>

#include "ibdiag_common.h"
#include "netdisc_common.h"

namespace {

using netdisc::Fabric;
using netdisc::field;

// Facts of the IBA spec the reference takes from its ib_types.h:
// SA PathRecord
constexpr uint64_t PR_COMP_DGID = 1ull << 2;
constexpr uint64_t PR_COMP_SGID = 1ull << 3;
constexpr uint64_t PR_COMP_REVERSIBLE = 1ull << 11;
constexpr uint64_t PR_COMP_NUMBPATH = 1ull << 12;
constexpr int SA_PATH_RECORD = 0x35;
constexpr int PR_TIMEOUT_MS = 3000;  // the reference's "half world" timeout
constexpr int ALL_PORTS = 0xFF;
constexpr int MAX_SUPPRESSED = 64;

enum : unsigned { SHOW_SWITCH = 1, SHOW_CA = 2, SHOW_ROUTER = 4, SHOW_ALL = 0xFF };

struct Options {
    std::string name_map_file;
    std::string cache_in;
    std::string threshold_file = "/etc/infiniband-diags/error_thresholds";
    std::vector<enum MAD_FIELDS> suppressed;
    const char* guid_str = nullptr;
    uint64_t guid = 0;
    std::string dr_path;
    unsigned types = 0;
    bool obtain_sl = true;
    bool data_with_errors = false;
    bool counters_only = false;
    bool port_links = false;
    bool clear_errors = false;
    bool clear_counts = false;
    bool details = false;
};

struct Summary {
    int nodes_checked = 0;
    int bad_nodes = 0;
    int ports_checked = 0;
    int bad_ports = 0;
    int pma_failures = 0;
};

Options opts;
Summary summary;
struct ibmad_port* srcport;
std::unique_ptr<ibdiag::NodeNameMap> name_map;
std::map<unsigned, uint64_t> thresholds;  // by IB_PC_EXT_* field
// "Thresholds: [name = v]..." once a threshold file was read, else unset
bool thresholds_read = false;
std::string thresholds_text;
std::vector<uint16_t> lid_sl(48 * 1024);  // SL to each LID (PathRecords)
// The SL a query to `lid` uses: 0 beyond the unicast range, which a cache
// file may well name (a hostile one made the lookup read past the table).
uint8_t sl_to(int lid) {
    return lid >= 0 && static_cast<size_t>(lid) < lid_sl.size() ? static_cast<uint8_t>(lid_sl[lid]) : 0;
}

int timeout() { return ibdiag::cfg.timeout; }

bool suppressed(int f) {
    for (auto s : opts.suppressed)
        if (s == f)
            return true;
    return false;
}

void add_suppressed(enum MAD_FIELDS f) {
    if (opts.suppressed.size() >= MAX_SUPPRESSED) {
        IBWARN("Maximum (%d) fields have been suppressed; skipping %s", (int)opts.suppressed.size(), mad_field_name(f));
        return;
    }
    opts.suppressed.push_back(f);
}

void suppress_list(const char* list) {
    std::string all(list);
    size_t pos = 0;
    while (pos <= all.size()) {
        size_t comma = all.find(',', pos);
        std::string name = all.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        if (!name.empty())
            for (int f = IB_PC_FIRST_F; f <= IB_PC_LAST_F; f++)
                if (name == mad_field_name(static_cast<enum MAD_FIELDS>(f)))
                    add_suppressed(static_cast<enum MAD_FIELDS>(f));
        if (comma == std::string::npos)
            break;
        pos = comma + 1;
    }
}

// The threshold file: "Name=value" lines, '#' comments.
void read_thresholds() {
    FILE* f = fopen(opts.threshold_file.c_str(), "r");
    if (!f)
        return;
    thresholds_read = true;
    thresholds_text = "Thresholds: ";
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        char* nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (!*line || *line == '#')
            continue;
        char* eq = strchr(line, '=');
        const char* value = "";
        if (eq) {
            *eq = '\0';
            value = eq + 1;
        }
        // "=5" has no name in the reference's tokenizer: it takes "5"
        const char* name = line;
        if (!*name) {
            name = value;
            value = "";
        }
        uint64_t v = strtoul(value, nullptr, 0);
        for (int fld = IB_PC_EXT_ERR_SYM_F; fld <= IB_PC_EXT_XMT_WAIT_F; fld++) {
            if (strcmp(name, mad_field_name(static_cast<enum MAD_FIELDS>(fld))))
                continue;
            // stored the way a 64-bit PerfMgt field holds it
            uint8_t tmp[IB_MAD_SIZE] = {};
            mad_encode_field(tmp, static_cast<enum MAD_FIELDS>(fld), &v);
            uint64_t stored = 0;
            mad_decode_field(tmp, static_cast<enum MAD_FIELDS>(fld), &stored);
            thresholds[fld] = stored;
            // each part is cut at 254 bytes, as the reference prints it
            char part[256];
            if (snprintf(part, 255, "[%s = %" PRIu64 "]", name, v) < 0)
                continue;
            thresholds_text += part;
        }
    }
    fclose(f);
}

bool above_threshold(int ext_field, uint64_t value) {
    auto it = thresholds.find(ext_field);
    return value > (it == thresholds.end() ? 0 : it->second);
}

std::string mapped_name(const ibnd_node_t* node) { return name_map->remap(node->guid, node->nodedesc); }

// -r: the "Link info:" line of a bad port (iblinkinfo -l's link and peer)
void print_link(ibnd_node_t* node, int portnum) {
    ibnd_port_t* port = node->ports[portnum];
    if (!port)
        return;
    std::string link =
        netdisc::link_text(port, field(port->info, IB_PORT_STATE_F), field(port->info, IB_PORT_PHYS_STATE_F));
    std::string remote = port->remoteport ? netdisc::peer_text(port, true, *name_map) : "           [  ] \"\" ( )\n";
    printf("       Link info: %6d", node->type == IB_NODE_SWITCH ? node->smalid : port->base_lid);
    printf("%4d[%2s] ==%s==>  %s", port->portnum, netdisc::ext_num(port).c_str(), link.c_str(), remote.c_str());
}

// Appends " [Name == v]" to text; the snprintf-style bound of the
// reference's 2048-byte line buffer is kept.
struct Line {
    char buf[2048];
    int n = 0;
    void add(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
        if (n >= static_cast<int>(sizeof(buf)))
            return;
        va_list ap;
        va_start(ap, fmt);
        n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
        va_end(ap);
    }
    Line() { buf[0] = '\0'; }
};

// --details: the non-zero fields of a details attribute
void query_and_dump(Line& line, ib_portid_t* portid, const std::string& name, int portnum, const char* attr_name,
                    unsigned attr, int first, int end) {
    uint8_t pc[1024] = {};
    if (!pma_query_via(pc, portid, portnum, timeout(), attr, srcport)) {
        IBWARN("%s query failed on %s, %s port %d", attr_name, name.c_str(), portid2str(portid), portnum);
        summary.pma_failures++;
        return;
    }
    for (int f = first; f < end; f++) {
        uint32_t v = 0;
        mad_decode_field(pc, static_cast<enum MAD_FIELDS>(f), &v);
        if (v)
            line.add(" [%s == %u]", mad_field_name(static_cast<enum MAD_FIELDS>(f)), v);
    }
}

bool check_counter(const uint8_t* pc, const uint8_t* pce, uint32_t cap2, int f, int ext_f, Line& line) {
    if (cap2 & ibdiag::pm_cap::addl_port_counters_ext) {
        uint64_t v = 0;
        mad_decode_field(const_cast<uint8_t*>(pce), static_cast<enum MAD_FIELDS>(ext_f), &v);
        if (!above_threshold(ext_f, v))
            return false;
        float scaled = 0;
        const char* unit = ibdiag::conv_cnt_human_readable(v, &scaled, false);
        line.add(" [%s == %" PRIu64 " (%5.3f%s)]", mad_field_name(static_cast<enum MAD_FIELDS>(ext_f)), v, scaled,
                 unit);
        return true;
    }
    uint32_t v = 0;
    mad_decode_field(const_cast<uint8_t*>(pc), static_cast<enum MAD_FIELDS>(f), &v);
    if (!above_threshold(ext_f, v))
        return false;
    line.add(" [%s == %u]", mad_field_name(static_cast<enum MAD_FIELDS>(f)), v);
    return true;
}

bool is_data_field(int f) {
    return f == IB_PC_EXT_XMT_BYTES_F || f == IB_PC_EXT_RCV_BYTES_F || f == IB_PC_XMT_BYTES_F || f == IB_PC_RCV_BYTES_F;
}

// data counter range of a PortCounters(Extended) answer
void data_range(uint16_t cap, bool ext, int& first, int& last) {
    if (ext) {
        first = IB_PC_EXT_XMT_BYTES_F;
        last = (cap & ibdiag::pm_cap::ext_width) ? IB_PC_EXT_RCV_MPKTS_F : IB_PC_EXT_RCV_PKTS_F;
    } else {
        first = IB_PC_XMT_BYTES_F;
        last = IB_PC_RCV_PKTS_F;
    }
}

// Returns how much it reported (0: nothing above the thresholds).
int report(ib_portid_t* portid, const std::string& name, ibnd_node_t* node, uint8_t* pc, int portnum, bool& header,
           const uint8_t* pce, uint16_t cap, uint32_t cap2) {
    static const uint8_t no_ext[1024] = {};
    if (!pce && (cap2 & ibdiag::pm_cap::addl_port_counters_ext))
        pce = no_ext;  // extended counters announced but not read: all zero
    Line line;
    for (int f = IB_PC_ERR_SYM_F, ext_f = IB_PC_EXT_ERR_SYM_F; f <= IB_PC_VL15_DROPPED_F; f++, ext_f++) {
        if (suppressed(f))
            continue;
        if (f == IB_PC_COUNTER_SELECT2_F) {  // not a counter
            ext_f--;
            continue;
        }
        if (!check_counter(pc, pce, cap2, f, ext_f, line))
            continue;
        if (opts.details && f == IB_PC_XMT_DISCARDS_F)
            query_and_dump(line, portid, name, portnum, "PortXmitDiscardDetails", IB_GSI_PORT_XMIT_DISCARD_DETAILS,
                           IB_PC_RCV_LOCAL_PHY_ERR_F, IB_PC_RCV_ERR_LAST_F);
        else if (opts.details && f == IB_PC_ERR_RCV_F)
            query_and_dump(line, portid, name, portnum, "PortRcvErrorDetails", IB_GSI_PORT_RCV_ERROR_DETAILS,
                           IB_PC_XMT_INACT_DISC_F, IB_PC_XMT_DISC_LAST_F);
    }
    if (!suppressed(IB_PC_XMT_WAIT_F))
        check_counter(pc, pce, cap2, IB_PC_XMT_WAIT_F, IB_PC_EXT_XMT_WAIT_F, line);
    if (!line.n)
        return 0;

    if (opts.data_with_errors) {
        int first, last;
        data_range(cap, pce != nullptr, first, last);
        const uint8_t* pkt = pce ? pce : pc;
        for (int f = first; f <= last; f++) {
            uint64_t v = 0;
            mad_decode_field(const_cast<uint8_t*>(pkt), static_cast<enum MAD_FIELDS>(f), &v);
            if (!v)
                continue;
            float scaled = 0;
            const char* unit = ibdiag::conv_cnt_human_readable(v, &scaled, is_data_field(f));
            line.add(" [%s == %" PRIu64 " (%5.3f%s)]", mad_field_name(static_cast<enum MAD_FIELDS>(f)), v, scaled,
                     unit);
        }
    }

    if (!header) {
        if (node->type == IB_NODE_SWITCH)
            printf("Errors for 0x%" PRIx64 " \"%s\"\n", node->ports[0]->guid, name.c_str());
        else
            printf("Errors for \"%s\"\n", name.c_str());
        header = true;
        summary.bad_nodes++;
    }
    if (portnum == ALL_PORTS) {
        if (node->type == IB_NODE_SWITCH)
            printf("   GUID 0x%" PRIx64 " port ALL:%s\n", node->ports[0]->guid, line.buf);
    } else {
        printf("   GUID 0x%" PRIx64 " port %d:%s\n", node->ports[portnum]->guid, portnum, line.buf);
        if (opts.port_links)
            print_link(node, portnum);
        summary.bad_ports++;
    }
    return line.n;
}

// ClassPortInfo: the capability masks (host order; cap2 already shifted).
// (Functions that IBWARN carry the reference's names: __func__ is printed.)
bool query_cap_mask(ib_portid_t* portid, const std::string& name, int portnum, uint16_t& cap, uint32_t& cap2) {
    uint8_t pc[1024] = {};
    portid->sl = sl_to(portid->lid);
    if (!pma_query_via(pc, portid, portnum, timeout(), CLASS_PORT_INFO, srcport)) {
        IBWARN("classportinfo query failed on %s, %s port %d", name.c_str(), portid2str(portid), portnum);
        summary.pma_failures++;
        return false;
    }
    cap = static_cast<uint16_t>(pc[2] << 8 | pc[3]);
    cap2 = (static_cast<uint32_t>(pc[4]) << 24 | pc[5] << 16 | pc[6] << 8 | pc[7]) >> 5;
    return true;
}

// --counters: one line of data counters per port
void print_data_cnts(ib_portid_t* portid, uint16_t cap, const std::string& name, ibnd_node_t* node, int portnum,
                     bool& header) {
    uint8_t pc[1024] = {};
    portid->sl = sl_to(portid->lid);
    bool ext = cap & (ibdiag::pm_cap::ext_width | ibdiag::pm_cap::ext_width_noietf);
    const char* what = ext ? "IB_GSI_PORT_COUNTERS_EXT" : "IB_GSI_PORT_COUNTERS";
    if (!pma_query_via(pc, portid, portnum, timeout(), ext ? IB_GSI_PORT_COUNTERS_EXT : IB_GSI_PORT_COUNTERS,
                       srcport)) {
        IBWARN("%s query failed on %s, %s port %d", what, name.c_str(), portid2str(portid), portnum);
        summary.pma_failures++;
        return;
    }
    int first, last;
    data_range(cap, ext, first, last);
    if (!header) {
        printf("Data Counters for 0x%" PRIx64 " \"%s\"\n", node->guid, name.c_str());
        header = true;
    }
    if (portnum == ALL_PORTS)
        printf("   GUID 0x%" PRIx64 " port ALL:", node->guid);
    else
        printf("   GUID 0x%" PRIx64 " port %d:", node->guid, portnum);
    for (int f = first; f <= last; f++) {
        uint64_t v = 0;
        mad_decode_field(pc, static_cast<enum MAD_FIELDS>(f), &v);
        float scaled = 0;
        const char* unit = ibdiag::conv_cnt_human_readable(v, &scaled, is_data_field(f));
        printf(" [%s == %" PRIu64 " (%5.3f%s)]", mad_field_name(static_cast<enum MAD_FIELDS>(f)), v, scaled, unit);
    }
    putchar('\n');
    if (portnum != ALL_PORTS && opts.port_links)
        print_link(node, portnum);
}

// What report() printed; 0 also when a query failed (counted as a PMA failure).
int print_errors(ib_portid_t* portid, uint16_t cap, uint32_t cap2, const std::string& name, ibnd_node_t* node,
                 int portnum, bool& header) {
    uint8_t pc[1024] = {};
    uint8_t pce[1024] = {};
    const uint8_t* ext = nullptr;
    portid->sl = sl_to(portid->lid);
    if (!pma_query_via(pc, portid, portnum, timeout(), IB_GSI_PORT_COUNTERS, srcport)) {
        IBWARN("IB_GSI_PORT_COUNTERS query failed on %s, %s port %d", name.c_str(), portid2str(portid), portnum);
        summary.pma_failures++;
        return 0;
    }
    if (cap & (ibdiag::pm_cap::ext_width | ibdiag::pm_cap::ext_width_noietf)) {
        if (!pma_query_via(pce, portid, portnum, timeout(), IB_GSI_PORT_COUNTERS_EXT, srcport)) {
            IBWARN("IB_GSI_PORT_COUNTERS_EXT query failed on %s, %s port %d", name.c_str(), portid2str(portid),
                   portnum);
            summary.pma_failures++;
            return 0;
        }
        ext = pce;
    }
    if (!(cap & ibdiag::pm_cap::xmit_wait)) {
        uint32_t zero = 0;
        mad_encode_field(pc, IB_PC_XMT_WAIT_F, &zero);
    }
    return report(portid, name, node, pc, portnum, header, ext, cap, cap2);
}

// PortCountersExtended Set with a CounterSelect mask (LID-routed only)
bool reset_pc_ext(uint8_t* buf, ib_portid_t* dest, int port, unsigned mask) {
    IBDIAG_DEBUG("lid %u port %d mask 0x%x", dest->lid, port, mask);
    if (dest->lid == -1) {
        IBWARN("only lid routed is supported");
        return false;
    }
    if (!mask)
        mask = ~0u;
    ib_rpc_t rpc{};
    rpc.mgtclass = IB_PERFORMANCE_CLASS;
    rpc.method = IB_MAD_METHOD_SET;
    rpc.attr.id = IB_GSI_PORT_COUNTERS_EXT;
    memset(buf, 0, IB_MAD_SIZE);
    mad_set_field(buf, 0, IB_PC_EXT_PORT_SELECT_F, port);
    mad_set_field(buf, 0, IB_PC_EXT_COUNTER_SELECT_F, mask);
    mad_set_field(buf, 0, IB_PC_EXT_COUNTER_SELECT2_F, mask >> 16);
    rpc.timeout = timeout();
    rpc.datasz = IB_PC_DATA_SZ;
    rpc.dataoffs = IB_PC_DATA_OFFS;
    if (!dest->qp)
        dest->qp = 1;
    if (!dest->qkey)
        dest->qkey = IB_DEFAULT_QP1_QKEY;
    return mad_rpc(srcport, &rpc, dest, buf, buf) != nullptr;
}

void clear_port(ib_portid_t* portid, uint16_t cap, uint32_t cap2, const std::string& name, int port) {
    uint8_t pc[1024] = {};
    // CounterSelect bits of PortCounters: errors 0-11, XmitWait 16, data 12-15
    uint32_t mask = 0;
    if (opts.clear_errors) {
        mask |= 0xFFF;
        if (cap & ibdiag::pm_cap::xmit_wait)
            mask |= 0x10000;
    }
    if (opts.clear_counts)
        mask |= 0xF000;
    if (mask && !performance_reset_via(pc, portid, port, mask, timeout(), IB_GSI_PORT_COUNTERS, srcport))
        fprintf(stderr, "Failed to reset errors %s port %d\n", name.c_str(), port);

    if (opts.clear_errors && opts.details) {
        memset(pc, 0, sizeof(pc));
        performance_reset_via(pc, portid, port, 0xf, timeout(), IB_GSI_PORT_XMIT_DISCARD_DETAILS, srcport);
        memset(pc, 0, sizeof(pc));
        performance_reset_via(pc, portid, port, 0x3f, timeout(), IB_GSI_PORT_RCV_ERROR_DETAILS, srcport);
    }

    if (cap & (ibdiag::pm_cap::ext_width | ibdiag::pm_cap::ext_width_noietf)) {
        mask = 0;
        if (opts.clear_counts)
            mask = (cap & ibdiag::pm_cap::ext_width) ? 0xFF : 0x0F;
        if (opts.clear_errors && (cap2 & ibdiag::pm_cap::addl_port_counters_ext)) {
            mask |= 0xfff0000;
            if (cap & ibdiag::pm_cap::xmit_wait)
                mask |= 1u << 28;
        }
        if (mask && !reset_pc_ext(pc, portid, port, mask))
            fprintf(stderr, "Failed to reset extended data counters %s, %s port %d\n", name.c_str(), portid2str(portid),
                    port);
    }
}

void set_lid(ib_portid_t& portid, int lid) { ib_portid_set(&portid, lid, 0, 0); }

void check_node(ibnd_node_t* node, void*) {
    unsigned type = 0;
    switch (node->type) {
    case IB_NODE_SWITCH: type = SHOW_SWITCH; break;
    case IB_NODE_CA: type = SHOW_CA; break;
    case IB_NODE_ROUTER: type = SHOW_ROUTER; break;
    }
    if (!(type & opts.types))
        return;

    int first_port = (node->type == IB_NODE_SWITCH && node->smaenhsp0) ? 0 : 1;
    std::string name = mapped_name(node);
    ib_portid_t portid{};
    int p = 0;
    if (node->type == IB_NODE_SWITCH) {
        set_lid(portid, node->smalid);
    } else {
        for (p = 1; p <= node->numports; p++)
            if (node->ports[p]) {
                set_lid(portid, node->ports[p]->base_lid);
                break;
            }
    }

    uint16_t cap = 0;
    uint32_t cap2 = 0;
    bool all_ports = query_cap_mask(&portid, name, p, cap, cap2) && (cap & ibdiag::pm_cap::all_port_select);
    bool header = false;
    auto aim = [&](int port) {
        set_lid(portid, node->type == IB_NODE_SWITCH ? node->smalid : node->ports[port]->base_lid);
    };

    if (opts.counters_only) {
        for (p = first_port; p <= node->numports; p++) {
            if (!node->ports[p])
                continue;
            aim(p);
            print_data_cnts(&portid, cap, name, node, p, header);
            summary.ports_checked++;
            if (!all_ports)
                clear_port(&portid, cap, cap2, name, p);
        }
    } else if (all_ports && !print_errors(&portid, cap, cap2, name, node, ALL_PORTS, header)) {
        // AllPortSelect: one query said the whole node is clean (or
        // could not be read); errors found are looked at port by port
        summary.ports_checked += node->numports;
    } else {
        for (p = first_port; p <= node->numports; p++) {
            if (!node->ports[p])
                continue;
            aim(p);
            print_errors(&portid, cap, cap2, name, node, p, header);
            summary.ports_checked++;
            if (!all_ports)
                clear_port(&portid, cap, cap2, name, p);
        }
    }
    summary.nodes_checked++;
    if (all_ports)
        clear_port(&portid, cap, cap2, name, ALL_PORTS);
}

// One PathRecord per destination (all of them, or just dguid): the SL to
// use for each LID. Non-zero when the SA could not be asked.
int query_path_sls(const ibmad_gid_t& self_gid, uint64_t dguid) {
    auto h = ibdiag::sa_get_handle();
    if (!h)
        return -1;
    ibdiag::cfg.timeout = PR_TIMEOUT_MS;  // stays for the PMA queries, as in the reference

    uint8_t pr[64] = {};  // ib_path_rec_t
    uint64_t mask = 0;
    static const uint8_t zero_gid[16] = {};
    if (memcmp(self_gid, zero_gid, 16)) {
        memcpy(pr + 24, self_gid, 16);  // SGID
        mask |= PR_COMP_SGID;
        if (dguid) {
            uint8_t dgid[16];
            memcpy(dgid, self_gid, 16);
            mad_encode_field(dgid, IB_GID_GUID_F, &dguid);
            if (memcmp(dgid, zero_gid, 16)) {
                memcpy(pr + 8, dgid, 16);  // DGID
                mask |= PR_COMP_DGID;
            }
        }
    }
    pr[49] = 1 | 0x80;  // NumbPath 1, Reversible
    mask |= PR_COMP_NUMBPATH | PR_COMP_REVERSIBLE;

    ibdiag::SaResult result;
    int ret = ibdiag::sa_query(*h, IB_MAD_METHOD_GET_TABLE, SA_PATH_RECORD, 0, mask, ibdiag::cfg.sakey, pr, sizeof(pr),
                               result);
    if (ret) {
        fprintf(stderr, "Query SA failed: %s; sa call path_query failed\n", strerror(ret));
        return ret;
    }
    if (result.status) {
        ibdiag::sa_report_err(result.status);
        return EIO;
    }
    for (unsigned i = 0; i < result.result_cnt; i++) {
        const uint8_t* rec = static_cast<const uint8_t*>(result.record(i));
        if (rec + 64 > result.mad.data() + result.mad.size())
            break;
        unsigned dlid = rec[40] << 8 | rec[41];
        unsigned sl = (rec[52] << 8 | rec[53]) & 0xF;
        if (dlid < lid_sl.size())
            lid_sl[dlid] = sl;
    }
    return 0;
}

int print_summary() {
    printf("\n## Summary: %d nodes checked, %d bad nodes found\n", summary.nodes_checked, summary.bad_nodes);
    printf("##          %d ports checked, %d ports have errors beyond threshold\n", summary.ports_checked,
           summary.bad_ports);
    printf("## %s\n", thresholds_read ? thresholds_text.c_str() : "(null)");
    if (summary.pma_failures)
        printf("##          %d PMA query failures\n", summary.pma_failures);
    printf("## Suppressed:");
    for (auto f : opts.suppressed)
        printf(" %s", mad_field_name(f));
    putchar('\n');
    return summary.bad_ports;
}

int take_option(ibnd_config& cfg, int ch, char* arg) {
    switch (ch) {
    case 's': suppress_list(arg); break;
    case 'c': add_suppressed(IB_PC_ERR_SWITCH_REL_F); break;  // the "common" one
    case 1: opts.name_map_file = arg; break;
    case 2: opts.data_with_errors = true; break;
    case 3: opts.types |= SHOW_SWITCH; break;
    case 4: opts.types |= SHOW_CA; break;
    case 5: opts.types |= SHOW_ROUTER; break;
    case 6: opts.details = true; break;
    case 7: opts.cache_in = arg; break;
    case 8: opts.threshold_file = arg; break;
    case 9: opts.counters_only = true; break;
    case 10: opts.obtain_sl = false; break;
    case 'G':
    case 'S':
        opts.guid_str = arg;
        opts.guid = strtoull(arg, nullptr, 0);
        break;
    case 'D': opts.dr_path = arg; break;
    case 'r': opts.port_links = true; break;
    case 'R': break;  // obsolete, accepted
    case 'k': opts.clear_errors = true; break;
    case 'K': opts.clear_counts = true; break;
    case 'o': cfg.max_smps = strtoul(arg, nullptr, 0); break;
    default: return -1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    ibnd_config config{};
    static const ibdiag::Option options[] = {
        {"suppress", 's', 1, "<err1,err2,...>", "suppress errors listed"},
        {"suppress-common", 'c', 0, nullptr, "suppress some of the common counters"},
        {"node-name-map", 1, 1, "<file>", "node name map file"},
        {"port-guid", 'G', 1, "<port_guid>", "report the node containing the port specified by <port_guid>"},
        {"", 'S', 1, "<port_guid>", "Same as \"-G\" for backward compatibility"},
        {"Direct", 'D', 1, "<dr_path>", "report the node containing the port specified by <dr_path>"},
        {"skip-sl", 10, 0, nullptr, "don't obtain SL to all destinations"},
        {"report-port", 'r', 0, nullptr, "report port link information"},
        {"threshold-file", 8, 1, nullptr,
         "specify an alternate threshold file, default: /etc/infiniband-diags/error_thresholds"},
        {"GNDN", 'R', 0, nullptr, "(This option is obsolete and does nothing)"},
        {"data", 2, 0, nullptr, "include data counters for ports with errors"},
        {"switch", 3, 0, nullptr, "print data for switches only"},
        {"ca", 4, 0, nullptr, "print data for CA's only"},
        {"router", 5, 0, nullptr, "print data for routers only"},
        {"details", 6, 0, nullptr, "include transmit discard details"},
        {"counters", 9, 0, nullptr, "print data counters only"},
        {"clear-errors", 'k', 0, nullptr, "Clear error counters after read"},
        {"clear-counts", 'K', 0, nullptr, "Clear data counters after read"},
        {"load-cache", 7, 1, "<file>", "filename of ibnetdiscover cache to load"},
        {"outstanding_smps", 'o', 1, nullptr,
         "specify the number of outstanding SMP's which should be issued during the scan"},
    };
    int first = ibdiag::process_opts(
        argc, argv, "cDGKLnRrSs", options, [&config](int ch, char* arg) { return take_option(config, ch, arg); }, "");
    argv += first;
    if (!opts.types)
        opts.types = SHOW_ALL;

    ibdiag::Settings& cfg = ibdiag::cfg;
    int classes[4] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS, IB_PERFORMANCE_CLASS};
    srcport = mad_rpc_open_port(cfg.ca, cfg.ca_port, classes, 4);
    if (!srcport)
        IBEXIT("Failed to open port; %s:%d\n", cfg.ca ? cfg.ca : "(null)", cfg.ca_port);
    netdisc::setup_scan(srcport, config);

    netdisc::reject_cache_with_dr(opts.dr_path, opts.cache_in, srcport, 255);

    ib_portid_t self{};
    int self_port = 0;
    ibmad_gid_t self_gid{};
    if (ibdiag::resolve_self(cfg.ca, cfg.ca_port, &self, &self_port, &self_gid) < 0) {
        mad_rpc_close_port(srcport);
        // argv[0] here is the first operand, as in the reference
        IBEXIT("can't resolve self port %s", argv[0] ? argv[0] : "(null)");
    }

    name_map = std::make_unique<ibdiag::NodeNameMap>(opts.name_map_file.empty() ? nullptr : opts.name_map_file.c_str());

    ib_portid_t target{};
    int resolved = -1;
    if (!opts.dr_path.empty()) {
        resolved = ibdiag::resolve_portid_str(cfg.ca, cfg.ca_port, &target, opts.dr_path.c_str(), IB_DEST_DRPATH,
                                              nullptr, srcport);
        if (resolved < 0)
            IBWARN("Failed to resolve %s; attempting full scan", opts.dr_path.c_str());
    } else if (opts.guid_str) {
        resolved =
            ibdiag::resolve_portid_str(cfg.ca, cfg.ca_port, &target, opts.guid_str, IB_DEST_GUID, cfg.sm_id, srcport);
        if (resolved < 0)
            IBWARN("Failed to resolve %s; attempting full scan", opts.guid_str);
        if (opts.obtain_sl && target.lid >= 0 && static_cast<size_t>(target.lid) < lid_sl.size())
            lid_sl[target.lid] = target.sl;
    }
    mad_rpc_close_port(srcport);
    srcport = nullptr;

    Fabric fabric = netdisc::load_or_discover(opts.cache_in, resolved >= 0 ? &target : nullptr, config,
                                              "Single node discover failed; attempting full scan", 255);

    read_thresholds();

    srcport = mad_rpc_open_port(cfg.ca, cfg.ca_port, classes, 4);
    if (!srcport) {
        fabric.reset();
        IBEXIT("Failed to reopen port: %s:%d\n", cfg.ca ? cfg.ca : "(null)", cfg.ca_port);
    }
    smp_mkey_set(srcport, cfg.mkey);
    if (cfg.timeout)
        mad_rpc_set_timeout(srcport, cfg.timeout);

    int rc = 0;
    auto finish = [&](bool with_summary) {
        if (with_summary && print_summary())
            rc = 1;
        mad_rpc_close_port(srcport);
        return rc;
    };

    if (opts.guid_str) {
        ibnd_port_t* port = ibnd_find_port_guid(fabric.get(), opts.guid);
        if (port)
            check_node(port->node, nullptr);
        else
            fprintf(stderr, "Failed to find node: %s\n", opts.guid_str);
    } else if (!opts.dr_path.empty()) {
        uint8_t nodeinfo[IB_SMP_DATA_SIZE] = {};
        if (!smp_query_via(nodeinfo, &target, IB_ATTR_NODE_INFO, 0, cfg.timeout, srcport)) {
            fputs("Failed to query local Node Info\n", stderr);
            return finish(false);
        }
        uint64_t guid = 0;
        mad_decode_field(nodeinfo, IB_NODE_PORT_GUID_F, &guid);
        ibnd_port_t* port = ibnd_find_port_guid(fabric.get(), guid);
        if (port) {
            if (opts.obtain_sl && query_path_sls(self_gid, port->guid))
                return finish(false);
            check_node(port->node, nullptr);
        } else {
            fprintf(stderr, "Failed to find node: %s\n", opts.dr_path.c_str());
        }
    } else {
        if (opts.obtain_sl && query_path_sls(self_gid, 0))
            return finish(false);
        ibnd_iter_nodes(fabric.get(), check_node, nullptr);
    }
    return finish(true);
}
