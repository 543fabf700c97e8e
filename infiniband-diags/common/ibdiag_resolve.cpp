// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Turning a tool's address argument into an ib_portid_t.
#include "ibdiag_common.h"

#include <arpa/inet.h>
#include <cstdlib>
#include <cstring>
#include <endian.h>

namespace ibdiag {

namespace {

// umad's cached view of the local port (no MAD sent).
struct LocalPort {
    umad_port_t port{};
    bool ok = false;
    LocalPort(const char* ca, int portnum) { ok = umad_get_port(ca, portnum, &port) >= 0; }
    ~LocalPort() {
        if (ok)
            umad_release_port(&port);
    }
    LocalPort(const LocalPort&) = delete;
    LocalPort& operator=(const LocalPort&) = delete;
};

int resolve_by_gid(const char* ca, uint8_t port, ib_portid_t* portid, ibmad_gid_t gid, ib_portid_t* sm_id,
                   const struct ibmad_port* srcport) {
    ib_portid_t own_sm{};
    uint8_t answer[IB_SA_DATA_SIZE] = {};
    if (!sm_id) {
        sm_id = &own_sm;
        if (resolve_sm_portid(ca, port, sm_id) < 0)
            return -1;
    }
    portid->lid = ib_path_query_via(srcport, gid, gid, sm_id, answer);
    return portid->lid < 0 ? -1 : 0;
}

int resolve_by_guid(const char* ca, uint8_t port, ib_portid_t* portid, uint64_t guid, ib_portid_t* sm_id,
                    const struct ibmad_port* srcport) {
    ib_portid_t own_sm{};
    uint8_t answer[IB_SA_DATA_SIZE] = {};
    ibmad_gid_t self_gid;
    if (!sm_id) {
        sm_id = &own_sm;
        if (resolve_sm_portid(ca, port, sm_id) < 0)
            return -1;
    }
    if (resolve_self(ca, port, nullptr, nullptr, &self_gid) < 0)
        return -1;
    uint64_t prefix_be;
    memcpy(&prefix_be, self_gid, sizeof(prefix_be));
    mad_set_field64(portid->gid, 0, IB_GID_PREFIX_F, prefix_be ? be64toh(prefix_be) : IB_DEFAULT_SUBN_PREFIX);
    mad_set_field64(portid->gid, 0, IB_GID_GUID_F, guid);
    portid->lid = ib_path_query_via(srcport, self_gid, portid->gid, sm_id, answer);
    if (portid->lid < 0)
        return -1;
    mad_decode_field(answer, IB_SA_PR_SL_F, &portid->sl);
    return 0;
}

}  // namespace

int resolve_sm_portid(const char* ca, uint8_t port, ib_portid_t* sm_id) {
    if (!sm_id)
        return -1;
    LocalPort lp(ca, port);
    if (!lp.ok)
        return -1;
    memset(sm_id, 0, sizeof(*sm_id));
    sm_id->lid = lp.port.sm_lid;
    sm_id->sl = lp.port.sm_sl;
    return 0;
}

int resolve_self(const char* ca, uint8_t port, ib_portid_t* portid, int* portnum, ibmad_gid_t* gid) {
    if (!portid && !portnum && !gid)
        return -1;
    LocalPort lp(ca, port);
    if (!lp.ok)
        return -1;
    if (portid) {
        memset(portid, 0, sizeof(*portid));
        portid->lid = lp.port.base_lid;
        portid->sl = lp.port.sm_sl;
    }
    if (portnum)
        *portnum = lp.port.portnum;
    if (gid) {
        memset(gid, 0, sizeof(*gid));
        uint64_t prefix = be64toh(lp.port.gid_prefix);
        uint64_t guid = be64toh(lp.port.port_guid);
        mad_encode_field(*gid, IB_GID_PREFIX_F, &prefix);
        mad_encode_field(*gid, IB_GID_GUID_F, &guid);
    }
    return 0;
}

int resolve_portid_str(const char* ca, uint8_t port, ib_portid_t* portid, const char* addr_str, enum MAD_DEST dest_type,
                       ib_portid_t* sm_id, const struct ibmad_port* srcport) {
    memset(portid, 0, sizeof(*portid));
    // str2drpath writes into its argument: work on a copy.
    std::string addr(addr_str ? addr_str : "");

    switch (dest_type) {
    case IB_DEST_LID: {
        int lid = (int)strtol(addr.c_str(), nullptr, 0);
        if (!IB_LID_VALID(lid))
            return -1;
        return ib_portid_set(portid, lid, 0, 0);
    }
    case IB_DEST_DRPATH: return str2drpath(&portid->drpath, addr.data(), 0, 0) < 0 ? -1 : 0;
    case IB_DEST_GUID: {
        uint64_t guid = strtoull(addr.c_str(), nullptr, 0);
        if (!guid)
            return -1;
        return resolve_by_guid(ca, port, portid, guid, sm_id, srcport);
    }
    case IB_DEST_DRSLID: {
        char* rest = nullptr;
        int lid = (int)strtol(addr.c_str(), &rest, 0);
        if (!IB_LID_VALID(lid))
            return -1;
        if (*rest)
            rest++;
        ib_portid_set(portid, lid, 0, 0);
        ib_portid_t self{};
        int self_port = 0;
        if (resolve_self(ca, port, &self, &self_port, nullptr) < 0)
            return -1;
        return str2drpath(&portid->drpath, rest, self.lid, 0) < 0 ? -1 : 0;
    }
    case IB_DEST_GID: {
        ibmad_gid_t gid;
        if (inet_pton(AF_INET6, addr.c_str(), &gid) <= 0)
            return -1;
        return resolve_by_gid(ca, port, portid, gid, sm_id, srcport);
    }
    default: IBWARN("bad dest_type %d", dest_type); return -1;
    }
}

}  // namespace ibdiag
