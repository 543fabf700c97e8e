// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Congestion control class: Get and Set with the CC_Key in the header.
#include "rpc_internal.h"

using namespace ibmad;

namespace {

void* cc_call(int method, void* payload, void* rcvbuf, ib_portid_t* portid, unsigned attrid, unsigned mod,
              unsigned timeout, int* rstatus, const struct ibmad_port* srcport, uint64_t cckey) {
    ib_rpc_cc_t rpc{};
    rpc.method = method;
    rpc.attr.id = attrid;
    rpc.attr.mod = mod;
    rpc.timeout = static_cast<int>(timeout);
    // the congestion log starts right after the CC_Key
    if (attrid == IB_CC_ATTR_CONGESTION_LOG) {
        rpc.datasz = IB_CC_LOG_DATA_SZ;
        rpc.dataoffs = IB_CC_LOG_DATA_OFFS;
    } else {
        rpc.datasz = IB_CC_DATA_SZ;
        rpc.dataoffs = IB_CC_DATA_OFFS;
    }
    rpc.mgtclass = IB_CC_CLASS;
    rpc.cckey = cckey;

    portid->qp = 1;
    if (!portid->qkey)
        portid->qkey = IB_DEFAULT_QP1_QKEY;

    void* res = mad_rpc(srcport, reinterpret_cast<ib_rpc_t*>(&rpc), portid, payload, rcvbuf);
    if (rstatus)
        *rstatus = static_cast<int>(rpc.rstatus);
    return res;
}

}  // namespace

IBMAD_EXPORT void* cc_query_status_via(void* rcvbuf, ib_portid_t* portid, unsigned attrid, unsigned mod,
                                       unsigned timeout, int* rstatus, const struct ibmad_port* srcport,
                                       uint64_t cckey) {
    return cc_call(IB_MAD_METHOD_GET, rcvbuf, rcvbuf, portid, attrid, mod, timeout, rstatus, srcport, cckey);
}

IBMAD_EXPORT void* cc_config_status_via(void* payload, void* rcvbuf, ib_portid_t* portid, unsigned attrid, unsigned mod,
                                        unsigned timeout, int* rstatus, const struct ibmad_port* srcport,
                                        uint64_t cckey) {
    return cc_call(IB_MAD_METHOD_SET, payload, rcvbuf, portid, attrid, mod, timeout, rstatus, srcport, cckey);
}
