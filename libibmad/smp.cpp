// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Subnet management packets: Get/Set of an SMP attribute, LID-routed when
// the destination has a LID and no directed-route part, directed otherwise.
#include "rpc_internal.h"

#include <cerrno>

using namespace ibmad;

namespace {

uint8_t* smp_call(const char* func, int method, void* payload, void* rcvbuf, ib_portid_t* portid, unsigned attrid,
                  unsigned mod, unsigned timeout, int* rstatus, const struct ibmad_port* srcport) {
    ib_rpc_t rpc{};

    if (!srcport || !portid) {
        errno = EINVAL;
        return nullptr;
    }
    IBMAD_DEBUG(func, "attr 0x%x mod 0x%x route %s", attrid, mod, portid2str(portid));
    rpc.method = method;
    rpc.attr.id = attrid;
    rpc.attr.mod = mod;
    rpc.timeout = static_cast<int>(timeout);
    rpc.datasz = IB_SMP_DATA_SIZE;
    rpc.dataoffs = IB_SMP_DATA_OFFS;
    rpc.mkey = srcport->smp_mkey;
    if (portid->lid <= 0 || portid->drpath.drslid == 0xffff || portid->drpath.drdlid == 0xffff)
        rpc.mgtclass = IB_SMI_DIRECT_CLASS;
    else
        rpc.mgtclass = IB_SMI_CLASS;

    portid->sl = 0;
    portid->qp = 0;

    auto* res = static_cast<uint8_t*>(mad_rpc(srcport, &rpc, portid, payload, rcvbuf));
    if (rstatus)
        *rstatus = static_cast<int>(rpc.rstatus);
    return res;
}

}  // namespace

IBMAD_EXPORT void smp_mkey_set(struct ibmad_port* srcport, uint64_t mkey) { srcport->smp_mkey = mkey; }

IBMAD_EXPORT uint64_t smp_mkey_get(const struct ibmad_port* srcport) { return srcport->smp_mkey; }

IBMAD_EXPORT uint8_t* smp_set_status_via(void* data, ib_portid_t* portid, unsigned attrid, unsigned mod,
                                         unsigned timeout, int* rstatus, const struct ibmad_port* srcport) {
    return smp_call("smp_set_status_via", IB_MAD_METHOD_SET, data, data, portid, attrid, mod, timeout, rstatus,
                    srcport);
}

IBMAD_EXPORT uint8_t* smp_set_via(void* data, ib_portid_t* portid, unsigned attrid, unsigned mod, unsigned timeout,
                                  const struct ibmad_port* srcport) {
    return smp_set_status_via(data, portid, attrid, mod, timeout, nullptr, srcport);
}

IBMAD_EXPORT uint8_t* smp_set(void* data, ib_portid_t* portid, unsigned attrid, unsigned mod, unsigned timeout) {
    return smp_set_via(data, portid, attrid, mod, timeout, default_port());
}

// The query sends rcvbuf's contents as the request payload, as the
// reference does (some attributes take input in a Get).
IBMAD_EXPORT uint8_t* smp_query_status_via(void* rcvbuf, ib_portid_t* portid, unsigned attrid, unsigned mod,
                                           unsigned timeout, int* rstatus, const struct ibmad_port* srcport) {
    return smp_call("smp_query_status_via", IB_MAD_METHOD_GET, rcvbuf, rcvbuf, portid, attrid, mod, timeout, rstatus,
                    srcport);
}

IBMAD_EXPORT uint8_t* smp_query_via(void* rcvbuf, ib_portid_t* portid, unsigned attrid, unsigned mod, unsigned timeout,
                                    const struct ibmad_port* srcport) {
    return smp_query_status_via(rcvbuf, portid, attrid, mod, timeout, nullptr, srcport);
}

IBMAD_EXPORT uint8_t* smp_query(void* rcvbuf, ib_portid_t* portid, unsigned attrid, unsigned mod, unsigned timeout) {
    return smp_query_via(rcvbuf, portid, attrid, mod, timeout, default_port());
}
