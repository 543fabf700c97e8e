// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Baseboard management class: the B_Key travels in front of the data.
#include "rpc_internal.h"

#include <cstring>

using namespace ibmad;

IBMAD_EXPORT uint8_t* bm_call_via(void* data, ib_portid_t* portid, ib_bm_call_t* call, struct ibmad_port* srcport) {
    ib_rpc_t rpc{};
    // what goes at the B_Key offset: key, 32 reserved bytes, data
    uint8_t payload[IB_BM_BKEY_AND_DATA_SZ] = {};
    constexpr std::size_t data_at = IB_BM_DATA_OFFS - IB_BM_BKEY_OFFS;

    IBMAD_DEBUG("bm_call_via", "route %s data %p", portid2str(portid), data);
    if (portid->lid <= 0) {
        warn("bm_call_via", "only lid routes are supported");
        return nullptr;
    }

    bool resp =
        call->method == IB_MAD_METHOD_GET || call->method == IB_MAD_METHOD_SET || call->method == IB_MAD_METHOD_TRAP;

    rpc.mgtclass = IB_BOARD_MGMT_CLASS;
    rpc.method = static_cast<int>(call->method);
    rpc.attr.id = call->attrid;
    rpc.attr.mod = call->mod;
    rpc.timeout = resp ? static_cast<int>(call->timeout) : 0;
    rpc.datasz = IB_BM_BKEY_AND_DATA_SZ;
    rpc.dataoffs = IB_BM_BKEY_OFFS;

    put_be64(payload, 0, call->bkey);
    std::memcpy(payload + data_at, data, IB_BM_DATA_SZ);

    IBMAD_DEBUG("bm_call_via", "method 0x%x attr 0x%x mod 0x%x datasz %d off %d res_ex %d bkey 0x%08x%08x", rpc.method,
                rpc.attr.id, rpc.attr.mod, rpc.datasz, rpc.dataoffs, resp, static_cast<int>(call->bkey >> 32),
                static_cast<int>(call->bkey));

    portid->qp = 1;
    if (!portid->qkey)
        portid->qkey = IB_DEFAULT_QP1_QKEY;

    if (resp) {
        if (!mad_rpc(srcport, &rpc, portid, payload, payload))
            return nullptr;
    } else if (mad_send_via(&rpc, portid, nullptr, payload, srcport) < 0) {
        return nullptr;
    }
    std::memcpy(data, payload + data_at, IB_BM_DATA_SZ);
    return static_cast<uint8_t*>(data);
}
