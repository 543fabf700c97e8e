// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Address resolution: the local port (LID, port number, GID), the SM's LID
// from the local PortInfo, GUIDs and GIDs to LIDs through SA PathRecords,
// and the address strings the diagnostics accept.
#include "rpc_internal.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>

using namespace ibmad;

namespace {

// Local NodeInfo or PortInfo through the empty directed route.
bool query_self(void* buf, unsigned attr, const struct ibmad_port* srcport) {
    ib_portid_t self{};
    std::memset(buf, 0, IB_SMP_DATA_SIZE);
    return smp_query_via(buf, &self, attr, 0, 0, srcport) != nullptr;
}

void make_gid(uint8_t* gid, uint64_t prefix, uint64_t guid) {
    put_be64(gid, 0, prefix);
    put_be64(gid, 8, guid);
}

}  // namespace

IBMAD_EXPORT int ib_resolve_smlid_via(ib_portid_t* sm_id, int timeout, const struct ibmad_port* srcport) {
    (void)timeout;  // the reference queries with the port's timeout
    uint8_t portinfo[IB_SMP_DATA_SIZE];

    std::memset(sm_id, 0, sizeof(*sm_id));
    if (!query_self(portinfo, IB_ATTR_PORT_INFO, srcport))
        return -1;

    int lid = get_be16(portinfo, off::pi_sm_lid);
    if (!IB_LID_VALID(lid)) {
        errno = ENXIO;
        return -1;
    }
    sm_id->sl = portinfo[off::pi_sm_sl] & 0xf;
    return ib_portid_set(sm_id, lid, 0, 0);
}

IBMAD_EXPORT int ib_resolve_smlid(ib_portid_t* sm_id, int timeout) {
    return ib_resolve_smlid_via(sm_id, timeout, default_port());
}

IBMAD_EXPORT int ib_resolve_guid_via(ib_portid_t* portid, uint64_t* guid, ib_portid_t* sm_id, int timeout,
                                     const struct ibmad_port* srcport) {
    ib_portid_t sm_portid{};
    uint8_t buf[IB_SA_DATA_SIZE] = {};
    uint8_t nodeinfo[IB_SMP_DATA_SIZE];
    ibmad_gid_t selfgid;

    if (!sm_id)
        sm_id = &sm_portid;
    if (!sm_id->lid && ib_resolve_smlid_via(sm_id, timeout, srcport) < 0)
        return -1;

    if (!query_self(nodeinfo, IB_ATTR_NODE_INFO, srcport))
        return -1;
    make_gid(selfgid, IB_DEFAULT_SUBN_PREFIX, get_be64(nodeinfo, off::ni_port_guid));

    if (!get_be64(portid->gid, 0))
        put_be64(portid->gid, 0, IB_DEFAULT_SUBN_PREFIX);
    if (guid)
        put_be64(portid->gid, 8, *guid);

    portid->lid = ib_path_query_via(srcport, selfgid, portid->gid, sm_id, buf);
    if (portid->lid < 0)
        return -1;
    portid->sl = buf[off::pr_sl] & 0xf;
    return 0;
}

IBMAD_EXPORT int ib_resolve_gid_via(ib_portid_t* portid, ibmad_gid_t gid, ib_portid_t* sm_id, int timeout,
                                    const struct ibmad_port* srcport) {
    ib_portid_t sm_portid{};
    uint8_t buf[IB_SA_DATA_SIZE] = {};

    if (!sm_id)
        sm_id = &sm_portid;
    if (!sm_id->lid && ib_resolve_smlid_via(sm_id, timeout, srcport) < 0)
        return -1;

    portid->lid = ib_path_query_via(srcport, gid, gid, sm_id, buf);
    if (portid->lid < 0)
        return -1;
    return 0;
}

IBMAD_EXPORT int ib_resolve_self_via(ib_portid_t* portid, int* portnum, ibmad_gid_t* gid,
                                     const struct ibmad_port* srcport) {
    uint8_t nodeinfo[IB_SMP_DATA_SIZE];
    uint8_t portinfo[IB_SMP_DATA_SIZE];

    if (!query_self(nodeinfo, IB_ATTR_NODE_INFO, srcport))
        return -1;
    if (!query_self(portinfo, IB_ATTR_PORT_INFO, srcport))
        return -1;

    portid->lid = get_be16(portinfo, off::pi_lid);
    if (portnum)
        *portnum = nodeinfo[off::ni_local_port];
    if (gid)
        make_gid(*gid, get_be64(portinfo, off::pi_gid_prefix), get_be64(nodeinfo, off::ni_port_guid));
    return 0;
}

IBMAD_EXPORT int ib_resolve_self(ib_portid_t* portid, int* portnum, ibmad_gid_t* gid) {
    return ib_resolve_self_via(portid, portnum, gid, default_port());
}

IBMAD_EXPORT int ib_resolve_portid_str_via(ib_portid_t* portid, char* addr_str, enum MAD_DEST dest_type,
                                           ib_portid_t* sm_id, const struct ibmad_port* srcport) {
    std::memset(portid, 0, sizeof(*portid));
    if (!addr_str) {
        errno = EINVAL;
        return -1;
    }

    switch (dest_type) {
    case IB_DEST_LID: {
        int lid = static_cast<int>(std::strtol(addr_str, nullptr, 0));
        if (!IB_LID_VALID(lid)) {
            errno = EINVAL;
            return -1;
        }
        return ib_portid_set(portid, lid, 0, 0);
    }
    case IB_DEST_DRPATH:
        if (str2drpath(&portid->drpath, addr_str, 0, 0) < 0) {
            errno = EINVAL;
            return -1;
        }
        return 0;
    case IB_DEST_GUID: {
        uint64_t guid = std::strtoull(addr_str, nullptr, 0);
        if (!guid) {
            errno = EINVAL;
            return -1;
        }
        return ib_resolve_guid_via(portid, &guid, sm_id, 0, srcport);
    }
    case IB_DEST_DRSLID: {
        // "LID,hop,hop...": LID-routed to LID, then directed from there
        char* routepath = nullptr;
        int lid = static_cast<int>(std::strtol(addr_str, &routepath, 0));
        if (!IB_LID_VALID(lid)) {
            errno = EINVAL;
            return -1;
        }
        // skip the separator; a bare LID has no route (the reference
        // reads past the string's end there)
        if (*routepath)
            routepath++;
        ib_portid_set(portid, lid, 0, 0);

        ib_portid_t self{};
        int selfport = 0;
        if (ib_resolve_self_via(&self, &selfport, nullptr, srcport) < 0)
            return -1;
        if (str2drpath(&portid->drpath, routepath, self.lid, 0) < 0) {
            errno = EINVAL;
            return -1;
        }
        return 0;
    }
    case IB_DEST_GID: {
        ibmad_gid_t gid;
        if (inet_pton(AF_INET6, addr_str, &gid) <= 0)
            return -1;
        return ib_resolve_gid_via(portid, gid, sm_id, 0, srcport);
    }
    default:
        warn("ib_resolve_portid_str_via", "bad dest_type %d", static_cast<int>(dest_type));
        errno = EINVAL;
        return -1;
    }
}

IBMAD_EXPORT int ib_resolve_portid_str(ib_portid_t* portid, char* addr_str, enum MAD_DEST dest_type,
                                       ib_portid_t* sm_id) {
    return ib_resolve_portid_str_via(portid, addr_str, dest_type, sm_id, default_port());
}
