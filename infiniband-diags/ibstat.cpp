// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// ibstat: the local CAs and their ports as libibumad sees them (sysfs; no
// MAD is sent).
#include "ibdiag_common.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <endian.h>
#include <fcntl.h>
#include <getopt.h>
#include <unistd.h>

namespace {

const char* node_type_name(int t) {
    static const char* const names[] = {"???", "CA", "Switch", "Router", "iWARP RNIC"};
    return (unsigned)t <= IB_NODE_MAX ? names[t] : "???";
}

const char* state_name(unsigned s) {
    static const char* const names[] = {"???", "Down", "Initializing", "Armed", "Active"};
    return s <= 4 ? names[s] : "???";
}

const char* phys_state_name(unsigned s) {
    static const char* const names[] = {"No state change",           "Sleep",  "Polling",           "Disabled",
                                        "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "PhyTest"};
    return s <= 7 ? names[s] : "???";
}

// FDR10 runs at QDR's signalling rate: only the rate file's text, e.g.
// "40 Gb/sec (4X FDR10)", tells them apart. Read with open/read so that the
// fabric simulator's sysfs is seen too.
bool is_fdr10(const umad_port_t* port) {
    char path[256];
    int n = snprintf(path, sizeof(path), "%s/%s/ports/%d/rate", SYS_INFINIBAND, port->ca_name, port->portnum);
    if (n < 0 || (size_t)n >= sizeof(path))
        return false;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return false;
    char rate[32];
    ssize_t r = read(fd, rate, sizeof(rate));
    close(fd);
    if (r < 0)
        return false;
    rate[r < (ssize_t)sizeof(rate) ? r : (ssize_t)sizeof(rate) - 1] = '\0';
    const char* paren = strchr(rate, ')');
    return paren && paren - rate >= 5 && !strncasecmp(paren - 5, "fdr10", 5);
}

void port_dump(const umad_port_t* port, bool alone) {
    const char* hdr = alone ? "" : "\t";
    const char* in = alone ? "" : "\t\t";
    printf("%sPort %d:\n", hdr, port->portnum);
    printf("%sState: %s\n", in, state_name(port->state));
    printf("%sPhysical state: %s\n", in, phys_state_name(port->phys_state));
    if (is_fdr10(port))
        printf("%sRate: %d (FDR10)\n", in, port->rate);
    else if (port->rate != 2)
        printf("%sRate: %d\n", in, port->rate);
    else
        printf("%sRate: 2.5\n", in);  // 1x SDR
    printf("%sBase lid: %d\n", in, port->base_lid);
    printf("%sLMC: %d\n", in, port->lmc);
    printf("%sSM lid: %d\n", in, port->sm_lid);
    printf("%sCapability mask: 0x%08x\n", in, be32toh(port->capmask));
    printf("%sPort GUID: 0x%016" PRIx64 "\n", in, be64toh(port->port_guid));
    printf("%sLink layer: %s\n", in, port->link_layer);
}

void ca_dump(const umad_ca_t& ca) {
    const char* type = node_type_name(ca.node_type);
    printf("%s '%s'\n", type, ca.ca_name);
    printf("\t%s type: %s\n", type, ca.ca_type);
    printf("\tNumber of ports: %d\n", ca.numports);
    printf("\tFirmware version: %s\n", ca.fw_ver);
    printf("\tHardware version: %s\n", ca.hw_ver);
    printf("\tNode GUID: 0x%016" PRIx64 "\n", be64toh(ca.node_guid));
    printf("\tSystem image GUID: 0x%016" PRIx64 "\n", be64toh(ca.system_guid));
}

// One CA (umad_get_ca fills ports[] that umad_release_ca frees).
struct Ca {
    umad_ca_t ca{};
    int rc;
    explicit Ca(const char* name) { rc = umad_get_ca(name, &ca); }
    ~Ca() {
        if (rc >= 0)
            umad_release_ca(&ca);
    }
    Ca(const Ca&) = delete;
    Ca& operator=(const Ca&) = delete;
};

int ca_stat(const char* ca_name, int portnum, bool no_ports) {
    Ca c(ca_name);
    if (c.rc < 0)
        return c.rc;
    const umad_ca_t& ca = c.ca;
    if (!ca.node_type)
        return 0;
    if (!no_ports && portnum >= 0) {
        if (portnum > ca.numports || portnum >= UMAD_CA_MAX_PORTS || !ca.ports[portnum]) {
            IBWARN("%s: '%s' has no port number %d - max (%d)", node_type_name(ca.node_type), ca_name, portnum,
                   ca.numports);
            return -1;
        }
        printf("%s: '%s'\n", node_type_name(ca.node_type), ca.ca_name);
        port_dump(ca.ports[portnum], true);
        return 0;
    }
    ca_dump(ca);
    if (no_ports)
        return 0;
    for (int p = 0; p <= ca.numports && p < UMAD_CA_MAX_PORTS; p++)
        if (ca.ports[p])
            port_dump(ca.ports[p], false);
    return 0;
}

int ports_list(umad_device_node* first, umad_device_node* last) {
    for (umad_device_node* n = first; n && n != last; n = n->next) {
        __be64 guids[64];
        int count = umad_get_ca_portguids(n->ca_name, guids, 64);
        if (count < 0)
            return -1;
        for (int i = 0; i < count && i < 64; i++)
            if (guids[i])
                printf("0x%016" PRIx64 "\n", be64toh(guids[i]));
    }
    return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
    bool list_only = false, short_format = false, list_ports = false;
    static const ibdiag::Option opts[] = {
        {"list_of_cas", 'l', 0, nullptr, "list all IB devices"},
        {"short", 's', 0, nullptr, "short output"},
        {"port_list", 'p', 0, nullptr, "show port list"},
    };
    int first = ibdiag::process_opts(argc, argv, "CDeGKLPsty", opts,
                                     [&](int ch, char*) {
                                         switch (ch) {
                                         case 'l': list_only = true; return 0;
                                         case 's': short_format = true; return 0;
                                         case 'p': list_ports = true; return 0;
                                         default: return -1;
                                         }
                                     },
                                     "<ca_name> [portnum]",
                                     {"-l       # list all IB devices", "mthca0 2 # stat port 2 of 'mthca0'"});
    argc -= first;
    argv += first;

    int dev_port = -1;
    if (argc > 1)
        dev_port = (int)strtol(argv[1], nullptr, 0);

    if (umad_init() < 0)
        IBPANIC("can't init UMAD library");

    errno = 0;
    umad_device_node* devices = umad_get_ca_device_list();
    if (!devices && errno)
        IBPANIC("can't list IB device names");
    if (umad_sort_ca_device_list(&devices, 0))
        IBWARN("can't sort list IB device names");

    umad_device_node *from = devices, *to = nullptr;
    if (argc) {
        // The reference compares only the listed name's length.
        umad_device_node* n = devices;
        for (; n; n = n->next)
            if (!strncmp(n->ca_name, argv[0], strlen(n->ca_name)))
                break;
        if (!n)
            IBPANIC("'%s' IB device can't be found", argv[0]);
        from = n;
        to = n->next;
    }

    if (list_ports) {
        if (ports_list(from, to) < 0)
            IBPANIC("can't list ports");
        umad_free_ca_device_list(devices);
        return 0;
    }
    for (umad_device_node* n = from; n != to; n = n->next) {
        if (list_only)
            printf("%s\n", n->ca_name);
        else if (ca_stat(n->ca_name, dev_port, short_format) < 0)
            IBPANIC("stat of IB device '%s' failed", n->ca_name);
    }
    umad_free_ca_device_list(devices);
    return 0;
}
