// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// ibping: ping a port with the OpenIB vendor "ping" class. The server (-S)
// answers every ping with its host and domain name; the client sends one
// ping a second (or back to back with -f) and prints the round trips and,
// at the end or on SIGINT/SIGTERM, ping-style statistics.
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <unistd.h>

#include "common/ibdiag_common.h"

namespace {

using namespace ibdiag;

struct ibmad_port* srcport;
char host_and_domain[IB_VENDOR_RANGE2_DATA_SIZE];
char last_host[IB_VENDOR_RANGE2_DATA_SIZE];
int oui = IB_OPENIB_OUI;

// Microseconds on the monotonic clock.
uint64_t time_stamp() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000ull + uint64_t(ts.tv_nsec) / 1000ull;
}

// Answers pings until the port goes away.
const char* ibping_serv() {
    void* umad;

    IBDIAG_DEBUG("starting to serve...");
    while ((umad = mad_receive_via(nullptr, -1, srcport))) {
        if (umad_status(umad) == 0) {
            auto* mad = static_cast<uint8_t*>(umad_get_mad(umad));
            char* data = reinterpret_cast<char*>(mad) + IB_VENDOR_RANGE2_DATA_OFFS;
            memcpy(data, host_and_domain, IB_VENDOR_RANGE2_DATA_SIZE);
            IBDIAG_DEBUG("Pong: %s", data);
            if (mad_respond_via(umad, nullptr, 0, srcport) < 0)
                IBDIAG_DEBUG("respond failed");
        }
        mad_free(umad);
    }
    IBDIAG_DEBUG("server out");
    return nullptr;
}

// One ping; the round trip in microseconds, ~0 when it got no answer.
uint64_t ibping(ib_portid_t* portid, bool quiet) {
    char data[IB_VENDOR_RANGE2_DATA_SIZE] = {};
    ib_vendor_call_t call;

    IBDIAG_DEBUG("Ping..");
    uint64_t start = time_stamp();
    memset(&call, 0, sizeof call);
    call.method = IB_MAD_METHOD_GET;
    call.mgmt_class = IB_VENDOR_OPENIB_PING_CLASS;
    call.attrid = 0;
    call.mod = 0;
    call.oui = unsigned(oui);
    call.timeout = 0;
    if (!ib_vendor_call_via(data, portid, &call, srcport))
        return ~0ull;
    uint64_t rtt = time_stamp() - start;
    data[sizeof data - 1] = 0;  // a peer's name need not be terminated
    if (!last_host[0])
        memcpy(last_host, data, sizeof last_host);
    if (!quiet)
        printf("Pong from %s (%s): time %" PRIu64 ".%03" PRIu64 " ms\n", data, portid2str(portid), rtt / 1000,
               rtt % 1000);
    return rtt;
}

uint64_t minrtt = ~0ull, maxrtt, total_rtt;
uint64_t start, replied, lost, ntrans;
ib_portid_t dest_portid;

void report(int sig) {
    uint64_t total_time = time_stamp() - start;

    IBDIAG_DEBUG("out due signal %d", sig);
    printf("\n--- %s (%s) ibping statistics ---\n", last_host, portid2str(&dest_portid));
    printf("%" PRIu64 " packets transmitted, %" PRIu64 " received, %" PRIu64 "%% packet loss, time %" PRIu64 " ms\n",
           ntrans, replied, lost ? lost * 100 / ntrans : 0, total_time / 1000);
    uint64_t avg = replied ? total_rtt / replied : 0;
    printf("rtt min/avg/max = %" PRIu64 ".%03" PRIu64 "/%" PRIu64 ".%03" PRIu64 "/%" PRIu64 ".%03" PRIu64 " ms\n",
           minrtt == ~0ull ? 0 : minrtt / 1000, minrtt == ~0ull ? 0 : minrtt % 1000, avg / 1000, avg % 1000,
           maxrtt / 1000, maxrtt % 1000);
    exit(0);
}

}  // namespace

int main(int argc, char** argv) {
    int mgmt_classes[1] = {IB_SA_CLASS};
    int ping_class = IB_VENDOR_OPENIB_PING_CLASS;
    bool server = false, flood = false;
    unsigned count = ~0u;

    static const Option opts[] = {
        {"count", 'c', 1, "<num>", "stop after count packets"},
        {"flood", 'f', 0, nullptr, "flood destination"},
        {"oui", 'o', 1, nullptr, "use specified OUI number"},
        {"Server", 'S', 0, nullptr, "start in server mode"},
    };
    int first = process_opts(
        argc, argv, "DKy", opts,
        [&](int ch, char* arg) -> int {
            switch (ch) {
            case 'c': count = unsigned(strtoul(arg, nullptr, 0)); break;
            case 'f': flood = true; break;
            case 'o': oui = int(strtoul(arg, nullptr, 0)); break;
            case 'S': server = true; break;
            default: return -1;
            }
            return 0;
        },
        "<dest lid|guid>");
    argc -= first;
    argv += first;

    if (!argc && !server)
        show_usage();

    srcport = open_port(mgmt_classes, 1);

    if (server) {
        if (mad_register_server_via(ping_class, 0, nullptr, uint32_t(oui), srcport) < 0)
            IBEXIT("can't serve class %d on this port", ping_class);
        get_host_and_domain(host_and_domain, sizeof host_and_domain);
        if (const char* err = ibping_serv())
            IBEXIT("ibping to %s: %s", portid2str(&dest_portid), err);
        return 0;
    }

    if (mad_register_client_via(ping_class, 0, srcport) < 0)
        IBEXIT("can't register ping class %d on this port", ping_class);
    resolve_dest(&dest_portid, argv[0], cfg.sm_id, srcport);

    signal(SIGINT, report);
    signal(SIGTERM, report);
    start = time_stamp();
    while (count-- > 0) {
        ntrans++;
        uint64_t rtt = ibping(&dest_portid, flood);
        if (rtt == ~0ull) {
            IBDIAG_DEBUG("ibping to %s failed", portid2str(&dest_portid));
            lost++;
        } else {
            if (rtt < minrtt)
                minrtt = rtt;
            if (rtt > maxrtt)
                maxrtt = rtt;
            total_rtt += rtt;
            replied++;
        }
        if (!flood)
            sleep(1);
    }
    report(0);
}
