/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* LD_PRELOAD shim that makes the fabric lie: it wraps libibumad's umad_recv
 * and rewrites SMP replies before libibnetdisc sees them.  IBND_HOSTILE
 * picks the lie:
 *   same-guid   every NodeInfo claims one GUID (a node seen everywhere)
 *   fresh-guid  every NodeInfo claims a new GUID (an endless fabric)
 *   many-ports  NodeInfo claims 255 ports, local port 254
 *   bad-local   NodeInfo's local port is past its port count
 *   no-ports    NodeInfo claims 0 ports
 *   status      every PortInfo reply carries an error status
 *   drop        every 5th reply is lost
 *   wrong-attr  every 3rd reply answers another attribute
 *   garbage     every reply's data is random (IBND_HOSTILE_SEED)
 * The first IBND_HOSTILE_SKIP replies (default 2: the self resolution
 * libibmad does before the walk) are left alone.
 * The walk must end, without crashing, whatever the lie. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/umad.h>

enum { DATA = 64, ATTR_NODE_INFO = 0x11, ATTR_PORT_INFO = 0x15 };

static uint64_t rng_state;

static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void put64(uint8_t* p, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

int umad_recv(int fd, void* umad, int* length, int timeout_ms) {
    static int (*real)(int, void*, int*, int);
    static unsigned long count, fresh = 0x100, skip = 2;
    if (!real) {
        real = (int (*)(int, void*, int*, int))dlsym(RTLD_NEXT, "umad_recv");
        const char* seed = getenv("IBND_HOSTILE_SEED");
        rng_state = seed ? strtoull(seed, NULL, 0) | 1 : 0x9e3779b97f4a7c15ULL;
        const char* sk = getenv("IBND_HOSTILE_SKIP");
        if (sk)
            skip = strtoul(sk, NULL, 0);
    }
    int rc = real(fd, umad, length, timeout_ms);
    const char* mode = getenv("IBND_HOSTILE");
    if (rc < 0 || !mode)
        return rc;
    uint8_t* mad = umad_get_mad(umad);
    unsigned attr = (unsigned)mad[16] << 8 | mad[17];
    uint8_t* d = mad + DATA;
    if (++count <= skip)
        return rc;

    if (!strcmp(mode, "drop") && count % 5 == 0)
        return -ETIMEDOUT;
    if (!strcmp(mode, "wrong-attr") && count % 3 == 0) {
        mad[17] ^= 0x04;
        return rc;
    }
    if (!strcmp(mode, "garbage")) {
        for (int i = 0; i < 64; i += 8)
            put64(d + i, rng());
        return rc;
    }
    if (!strcmp(mode, "status") && attr == ATTR_PORT_INFO) {
        mad[4] |= 0x00;
        mad[5] |= 0x1c; /* invalid attribute value */
        return rc;
    }
    if (attr != ATTR_NODE_INFO)
        return rc;
    if (!strcmp(mode, "same-guid")) {
        put64(d + 12, 0x0002c90000000042ULL);
    } else if (!strcmp(mode, "fresh-guid")) {
        put64(d + 12, ++fresh);
        put64(d + 20, fresh << 8);
    } else if (!strcmp(mode, "many-ports")) {
        d[3] = 255;
        d[36] = 254;
    } else if (!strcmp(mode, "bad-local")) {
        d[36] = (uint8_t)(d[3] + 1);
    } else if (!strcmp(mode, "no-ports")) {
        d[3] = 0;
    }
    return rc;
}
