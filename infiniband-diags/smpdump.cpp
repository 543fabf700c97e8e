// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// smpdump: send one SMP Get straight through libibumad and hex-dump (or
// print as text) the 64 data bytes of the answer.
#include "ibdiag_common.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <endian.h>
#include <string>
#include <vector>

namespace {

// The directed-route SMP as it is on the wire (LID-routed SMPs use the
// same layout and leave the DR fields zero).
struct __attribute__((packed)) WireSmp {
    uint8_t base_version;
    uint8_t mgmt_class;
    uint8_t class_version;
    uint8_t method;
    uint16_t status;  // big endian
    uint8_t hop_ptr;
    uint8_t hop_cnt;
    uint64_t tid;  // big endian
    uint16_t attr_id;  // big endian
    uint16_t reserved1;
    uint32_t attr_mod;  // big endian
    uint64_t mkey;
    uint16_t dr_slid;  // big endian
    uint16_t dr_dlid;  // big endian
    uint8_t reserved2[28];
    uint8_t data[64];
    uint8_t initial_path[64];
    uint8_t return_path[64];
};
static_assert(sizeof(WireSmp) == 256, "an SMP is 256 bytes");

int next_tid = 0x123;

// "0,1,3" -> hops {0,1,3}; hop count = number of entries - 1 (atoi per
// entry as the reference, so junk reads as 0).
struct DrPath {
    uint8_t hops[64] = {};
    int hop_cnt = -1;
};

int str2DRPath(const std::string& text, DrPath& path) {
    IBDIAG_DEBUG("DR str: %s", text.c_str());
    path.hop_cnt = -1;
    size_t at = 0;
    while (at < text.size()) {
        size_t comma = text.find(',', at);
        std::string hop = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        if (path.hop_cnt + 1 >= 64)
            return -1;  // longer than a DR path can be
        path.hops[++path.hop_cnt] = (uint8_t)atoi(hop.c_str());
        if (comma == std::string::npos)
            break;
        at = comma + 1;
    }
    return path.hop_cnt;
}

void init_smp(WireSmp& smp, uint8_t mgmt_class, int attr, int mod) {
    memset(&smp, 0, sizeof(smp));
    smp.base_version = 1;
    smp.mgmt_class = mgmt_class;
    smp.class_version = 1;
    smp.method = 1;  // Get
    smp.attr_id = htons((uint16_t)attr);
    smp.attr_mod = htonl((uint32_t)mod);
    smp.tid = htobe64((uint64_t)next_tid++);
}

}  // namespace

int main(int argc, char* argv[]) {
    bool as_text = false;
    int mgmt_class = IB_SMI_CLASS;
    static const ibdiag::Option opts[] = {
        {"string", 's', 0, nullptr, ""},
    };
    ibdiag::cfg.timeout = 1000;
    int first = ibdiag::process_opts(
        argc, argv, "GKs", opts,
        [&](int ch, char*) {
            switch (ch) {
            case 's': as_text = true; return 0;
            case 'D': mgmt_class = IB_SMI_DIRECT_CLASS; return 0;
            case 'L': mgmt_class = IB_SMI_CLASS; return 0;
            default: return -1;
            }
        },
        "<dlid|dr_path> <attr> [mod]",
        {" -- DR routed examples:", "-D 0,1,2,3,5 16\t# NODE DESC", "-D 0,1,2 0x15 2\t# PORT INFO, port 2",
         " -- LID routed examples:", "3 0x15 2\t# PORT INFO, lid 3 port 2", "0xa0 0x11\t# NODE INFO, lid 0xa0"});
    argc -= first;
    argv += first;
    auto& cfg = ibdiag::cfg;

    if (argc < 2)
        ibdiag::show_usage();

    DrPath path;
    int dlid = 0;
    if (mgmt_class == IB_SMI_DIRECT_CLASS) {
        if (str2DRPath(argv[0], path) < 0)
            IBPANIC("bad path str '%s'", argv[0]);
    } else {
        dlid = (int)strtoul(argv[0], nullptr, 0);
    }
    int attr = (int)strtoul(argv[1], nullptr, 0);
    int mod = argc > 2 ? (int)strtoul(argv[2], nullptr, 0) : 0;

    if (umad_init() < 0)
        IBPANIC("can't init UMAD library");
    int fd = umad_open_port(cfg.ca, cfg.ca_port);
    if (fd < 0)
        IBPANIC("can't open UMAD port (%s:%d)", cfg.ca, cfg.ca_port);
    int agent = umad_register(fd, mgmt_class, 1, 0, nullptr);
    if (agent < 0)
        IBPANIC("Couldn't register agent for SMPs");

    std::vector<uint8_t> umad((size_t)umad_size() + IB_MAD_SIZE);
    auto& smp = *static_cast<WireSmp*>(umad_get_mad(umad.data()));
    init_smp(smp, (uint8_t)mgmt_class, attr, mod);
    if (mgmt_class == IB_SMI_DIRECT_CLASS) {
        smp.dr_slid = htobe16(0xffff);
        smp.dr_dlid = htobe16(0xffff);
        umad_set_addr(umad.data(), 0xffff, 0, 0, 0);
        memcpy(smp.initial_path, path.hops, (size_t)path.hop_cnt + 1);
        smp.hop_cnt = (uint8_t)path.hop_cnt;
    } else {
        umad_set_addr(umad.data(), dlid, 0, 0, 0);
    }

    if (ibdebug > 1)
        xdump(stderr, "before send:\n", &smp, 256);

    int length = IB_MAD_SIZE;
    if (umad_send(fd, agent, umad.data(), length, cfg.timeout, 0) < 0)
        IBPANIC("send failed");
    // The reference waits without limit for the answer (a kernel always
    // completes the send, with a timeout status at worst); bound the
    // wait so an answer that never comes ends as a receive error.
    int wait_ms = cfg.timeout > 0 ? cfg.timeout * 8 : 8000;
    if (umad_recv(fd, umad.data(), &length, wait_ms) != agent)
        IBPANIC("recv error: %s", strerror(errno));
    if (ibdebug)
        fprintf(stderr, "%d bytes received\n", length);

    if (!as_text) {
        xdump(stdout, nullptr, smp.data, 64);
    } else {
        for (int i = 0; i < 64 && smp.data[i]; i++)
            putchar(smp.data[i]);
        putchar('\n');
    }
    if (smp.status)
        fprintf(stdout, "SMP status: 0x%x\n", ntohs(smp.status));
    return 0;
}
