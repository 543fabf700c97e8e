// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// ibsysstat: the OpenIB "sysstat" vendor class. The server (-S) answers
// ping, host (host.domain) and cpu (/proc/cpuinfo summary) requests; the
// client asks one of them and prints the answer.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <unistd.h>

#include "common/ibdiag_common.h"

namespace {

using namespace ibdiag;

constexpr int kMaxCpus = 256;
enum Attr { kPing = 0x10, kHostInfo = 0x11, kCpuInfo = 0x12 };

struct ibmad_port* srcport;
int oui = IB_OPENIB_OUI;

struct CpuInfo {
    std::string model, mhz;
    bool has_model = false, has_mhz = false;
};
std::vector<CpuInfo> cpus;

// Big enough for an RMPP answer of many CPUs.
uint8_t buf[2048 * 32];

int server_respond(void* umad, int size) {
    ib_rpc_t rpc = {};
    ib_rmpp_hdr_t rmpp = {};
    ib_portid_t rport = {};
    auto* mad = static_cast<uint8_t*>(umad_get_mad(umad));
    ib_mad_addr_t* mad_addr = umad_get_mad_addr(umad);

    if (!mad_addr)
        return -1;
    rport.lid = ntohs(mad_addr->lid);
    rport.qp = int(ntohl(mad_addr->qpn));
    rport.qkey = ntohl(mad_addr->qkey);
    rport.sl = mad_addr->sl;
    if (!rport.qkey && rport.qp == 1)
        rport.qkey = IB_DEFAULT_QP1_QKEY;

    rpc.mgtclass = int(mad_get_field(mad, 0, IB_MAD_MGMTCLASS_F));
    rpc.method = IB_MAD_METHOD_GET | IB_MAD_RESPONSE;
    rpc.attr.id = mad_get_field(mad, 0, IB_MAD_ATTRID_F);
    rpc.attr.mod = mad_get_field(mad, 0, IB_MAD_ATTRMOD_F);
    rpc.oui = mad_get_field(mad, 0, IB_VEND2_OUI_F);
    rpc.trid = mad_get_field64(mad, 0, IB_MAD_TRID_F);
    if (size > IB_MAD_SIZE)
        rmpp.flags = IB_RMPP_FLAG_ACTIVE;

    IBDIAG_DEBUG("responding %d bytes to %s, attr 0x%x mod 0x%x qkey %x", size, portid2str(&rport), rpc.attr.id,
                 rpc.attr.mod, rport.qkey);
    if (mad_build_pkt(umad, &rpc, &rport, &rmpp, nullptr) < 0)
        return -1;
    if (ibdebug > 1)
        xdump(stderr, const_cast<char*>("mad respond pkt\n"), mad, IB_MAD_SIZE);
    if (umad_send(mad_rpc_portid(srcport), mad_rpc_class_agent(srcport, rpc.mgtclass), umad, size, rpc.timeout, 0) <
        0) {
        IBDIAG_DEBUG("send failed; %m");
        return -1;
    }
    return 0;
}

// Fills the answer's data for attr; returns its length.
int mk_reply(int attr, char* s, int sz) {
    int ret = 0;

    switch (attr) {
    case kPing: break;
    case kHostInfo: ret = get_host_and_domain(s, sz); break;
    case kCpuInfo:
        s[0] = '\0';
        for (size_t i = 0; i < cpus.size() && sz > 0; i++) {
            // a field /proc/cpuinfo lacked prints as glibc prints NULL
            int n = snprintf(s, size_t(sz), "cpu %zu: model %s MHZ %s\n", i,
                             cpus[i].has_model ? cpus[i].model.c_str() : "(null)",
                             cpus[i].has_mhz ? cpus[i].mhz.c_str() : "(null)");
            if (n >= sz) {
                IBWARN("cpuinfo truncated");
                ret = sz;
                break;
            }
            sz -= n;
            s += n;
            ret += n;
        }
        ret++;
        break;
    default: IBDIAG_DEBUG("unknown attr %d", attr);
    }
    return ret;
}

const char* ibsystat_serv() {
    void* umad;

    IBDIAG_DEBUG("starting to serve...");
    while ((umad = mad_receive_via(buf, -1, srcport))) {
        if (umad_status(buf)) {
            IBDIAG_DEBUG("drop mad with status %x: %s", umad_status(buf), strerror(umad_status(buf)));
            continue;
        }
        auto* mad = static_cast<uint8_t*>(umad_get_mad(umad));
        int attr = int(mad_get_field(mad, 0, IB_MAD_ATTRID_F));
        int mod = int(mad_get_field(mad, 0, IB_MAD_ATTRMOD_F));
        IBDIAG_DEBUG("got packet: attr 0x%x mod 0x%x", attr, mod);
        int size = mk_reply(attr, reinterpret_cast<char*>(mad) + IB_VENDOR_RANGE2_DATA_OFFS,
                            int(sizeof buf) - umad_size() - IB_VENDOR_RANGE2_DATA_OFFS);
        if (server_respond(umad, IB_VENDOR_RANGE2_DATA_OFFS + size) < 0)
            IBDIAG_DEBUG("respond failed");
    }
    IBDIAG_DEBUG("server out");
    return nullptr;
}

int match_attr(const char* str) {
    if (!strcmp(str, "ping"))
        return kPing;
    if (!strcmp(str, "host"))
        return kHostInfo;
    if (!strcmp(str, "cpu"))
        return kCpuInfo;
    return -1;
}

const char* ibsystat(ib_portid_t* portid, int attr) {
    ib_rpc_t rpc = {};
    char* data = static_cast<char*>(umad_get_mad(buf)) + IB_VENDOR_RANGE2_DATA_OFFS;

    IBDIAG_DEBUG("Sysstat ping..");
    rpc.mgtclass = IB_VENDOR_OPENIB_SYSSTAT_CLASS;
    rpc.method = IB_MAD_METHOD_GET;
    rpc.attr.id = unsigned(attr);
    rpc.attr.mod = 0;
    rpc.oui = unsigned(oui);
    rpc.timeout = 0;
    rpc.datasz = IB_VENDOR_RANGE2_DATA_SIZE;
    rpc.dataoffs = IB_VENDOR_RANGE2_DATA_OFFS;
    portid->qp = 1;
    if (!portid->qkey)
        portid->qkey = IB_DEFAULT_QP1_QKEY;

    int len = mad_build_pkt(buf, &rpc, portid, nullptr, nullptr);
    if (len < 0)
        IBPANIC("cannot build packet.");
    int fd = mad_rpc_portid(srcport);
    int agent = mad_rpc_class_agent(srcport, rpc.mgtclass);
    int timeout = cfg.timeout ? cfg.timeout : MAD_DEF_TIMEOUT_MS;
    if (umad_send(fd, agent, buf, len, timeout, 0) < 0)
        IBPANIC("umad_send failed.");
    len = int(sizeof buf) - umad_size();
    if (umad_recv(fd, buf, &len, timeout) < 0)
        IBPANIC("umad_recv failed.");
    if (umad_status(buf))
        return strerror(umad_status(buf));

    IBDIAG_DEBUG("Got sysstat pong..");
    // the answer is text; never read past what arrived
    buf[sizeof buf - 1] = 0;
    if (attr != kPing)
        puts(data);
    else
        printf("sysstat ping succeeded\n");
    return nullptr;
}

int build_cpuinfo() {
    FILE* f = fopen("/proc/cpuinfo", "r");
    if (!f) {
        IBWARN("couldn't open /proc/cpuinfo");
        return 0;
    }
    char line[1024] = {};
    while (fgets(line, sizeof line - 1, f)) {
        if (!strncmp(line, "processor\t", 10)) {
            if (int(cpus.size()) >= kMaxCpus)
                break;
            cpus.emplace_back();
            continue;
        }
        char* colon = strchr(line, ':');
        if (cpus.empty() || !colon)
            continue;
        if (char* nl = strchr(colon, '\n'))
            *nl = 0;
        if (!strncmp(line, "model name\t", 11)) {
            cpus.back().model = colon + 1;
            cpus.back().has_model = true;
        } else if (!strncmp(line, "cpu MHz\t", 8)) {
            cpus.back().mhz = colon + 1;
            cpus.back().has_mhz = true;
        }
    }
    fclose(f);
    IBDIAG_DEBUG("ncpu %zu", cpus.size());
    return int(cpus.size());
}

}  // namespace

int main(int argc, char** argv) {
    int mgmt_classes[3] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS};
    int sysstat_class = IB_VENDOR_OPENIB_SYSSTAT_CLASS;
    ib_portid_t portid = {};
    int attr = kPing;
    bool server = false;

    static const Option opts[] = {
        {"oui", 'o', 1, nullptr, "use specified OUI number"},
        {"Server", 'S', 0, nullptr, "start in server mode"},
    };
    int first = process_opts(
        argc, argv, "DKy", opts,
        [&](int ch, char* arg) -> int {
            switch (ch) {
            case 'o': oui = int(strtoul(arg, nullptr, 0)); break;
            case 'S': server = true; break;
            default: return -1;
            }
            return 0;
        },
        "<dest lid|guid> [<op>]");
    argc -= first;
    argv += first;

    if (!argc && !server)
        show_usage();
    if (argc > 1 && (attr = match_attr(argv[1])) < 0)
        show_usage();

    srcport = open_port(mgmt_classes, 3);

    if (server) {
        if (mad_register_server_via(sysstat_class, 1, nullptr, uint32_t(oui), srcport) < 0)
            IBEXIT("can't serve class %d", sysstat_class);
        build_cpuinfo();
        if (const char* err = ibsystat_serv())
            IBEXIT("ibssystat to %s: %s", portid2str(&portid), err);
        return 0;
    }

    if (mad_register_client_via(sysstat_class, 1, srcport) < 0)
        IBEXIT("can't register to sysstat class %d", sysstat_class);
    resolve_dest(&portid, argv[0], cfg.sm_id, srcport);
    if (const char* err = ibsystat(&portid, attr))
        IBEXIT("ibsystat to %s: %s", portid2str(&portid), err);

    mad_rpc_close_port(srcport);
    return 0;
}
