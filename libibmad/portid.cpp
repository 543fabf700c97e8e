// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Text forms of port addresses: "Lid N [Gid G] [DR path ...]" and the
// directed-route "slid S; dlid D; p0,p1,..." form, and the parser of the
// comma-separated hop lists that the tools accept.
#include "rpc_internal.h"

#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace ibmad;

namespace {

// snprintf that tolerates a full buffer: returns the new write position,
// never beyond size.
std::size_t append(char* buf, std::size_t size, std::size_t pos, const char* fmt, ...) noexcept
    __attribute__((format(printf, 4, 5)));
std::size_t append(char* buf, std::size_t size, std::size_t pos, const char* fmt, ...) noexcept {
    if (pos >= size)
        return pos;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + pos, size - pos, fmt, ap);
    va_end(ap);
    if (n < 0)
        return pos;
    return pos + static_cast<std::size_t>(n);
}

}  // namespace

IBMAD_EXPORT int portid2portnum(ib_portid_t* portid) {
    if (portid->lid > 0)
        return -1;
    if (portid->drpath.cnt == 0)
        return 0;
    int last = portid->drpath.cnt - 1;
    if (last < 0 || last >= IB_SUBNET_PATH_HOPS_MAX)
        return -1;
    return portid->drpath.p[last];
}

IBMAD_EXPORT char* drpath2str(ib_dr_path_t* path, char* dstr, size_t dstr_size) {
    if (!dstr || !dstr_size)
        return dstr;
    std::size_t pos = append(dstr, dstr_size, 0, "slid %u; dlid %u; %d", path->drslid, path->drdlid, path->p[0]);
    int last = path->cnt < IB_SUBNET_PATH_HOPS_MAX ? path->cnt : IB_SUBNET_PATH_HOPS_MAX - 1;
    for (int i = 1; i <= last && pos < dstr_size; i++)
        pos = append(dstr, dstr_size, pos, ",%d", path->p[i]);
    return dstr;
}

IBMAD_EXPORT char* portid2str(ib_portid_t* portid) {
    // the reference hands out one static buffer as well
    static thread_local char buf[1024];
    std::size_t pos = 0;

    if (portid->lid > 0) {
        pos = append(buf, sizeof(buf), pos, "Lid %d", portid->lid);
        if (portid->grh_present) {
            char gid[INET6_ADDRSTRLEN];
            if (inet_ntop(AF_INET6, portid->gid, gid, sizeof(gid)))
                pos = append(buf, sizeof(buf), pos, " Gid %s", gid);
        }
        if (!portid->drpath.cnt)
            return buf;
        pos = append(buf, sizeof(buf), pos, " ");
    }
    pos = append(buf, sizeof(buf), pos, "DR path ");
    if (pos < sizeof(buf))
        drpath2str(&portid->drpath, buf + pos, sizeof(buf) - pos);
    return buf;
}

// "0,1,3" -> p[0]=0, p[1]=1, p[2]=3, cnt=2. Each comma-separated element
// is read like atoi() (so an empty one is hop 0); one trailing comma ends the
// list; an empty string is no path (-1). Hops beyond the 64 a path can hold
// are counted (so the caller sees the too-long path and the encoder refuses
// it) but not stored.
IBMAD_EXPORT int str2drpath(ib_dr_path_t* path, char* routepath, int drslid, int drdlid) {
    path->cnt = -1;
    if (routepath) {
        IBMAD_DEBUG("str2drpath", "DR str: %s", routepath);
        const char* s = routepath;
        while (*s) {
            ++path->cnt;
            // strtol stops at the comma: the atoi() of the element
            if (path->cnt < IB_SUBNET_PATH_HOPS_MAX)
                path->p[path->cnt] = static_cast<uint8_t>(static_cast<int>(std::strtol(s, nullptr, 10)));
            const char* comma = std::strchr(s, ',');
            if (!comma)
                break;
            s = comma + 1;
        }
    }
    path->drdlid = static_cast<uint16_t>(drdlid ? drdlid : 0xffff);
    path->drslid = static_cast<uint16_t>(drslid ? drslid : 0xffff);
    return path->cnt;
}
