// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Vendor-specific classes: range 1 (0x09-0x0f) and range 2 (0x30-0x4f,
// with the vendor OUI in the header).
#include "rpc_internal.h"

#include <cerrno>

using namespace ibmad;

namespace {

bool response_expected(unsigned method) {
    return method == IB_MAD_METHOD_GET || method == IB_MAD_METHOD_SET || method == IB_MAD_METHOD_TRAP;
}

}  // namespace

IBMAD_EXPORT uint8_t* ib_vendor_call_via(void* data, ib_portid_t* portid, ib_vendor_call_t* call,
                                         struct ibmad_port* srcport) {
    ib_rpc_v1_t rpc{};

    IBMAD_DEBUG("ib_vendor_call_via", "route %s data %p", portid2str(portid), data);
    if (portid->lid <= 0)
        return nullptr;  // vendor MADs are never directed-route

    int mgmt = static_cast<int>(call->mgmt_class);
    bool range1 = mad_is_vendor_range1(mgmt);
    if (!range1 && !mad_is_vendor_range2(mgmt))
        return nullptr;

    bool resp = response_expected(call->method);

    rpc.mgtclass = mgmt | IB_MAD_RPC_VERSION1;
    rpc.method = static_cast<int>(call->method);
    rpc.attr.id = call->attrid;
    rpc.attr.mod = call->mod;
    rpc.timeout = resp ? static_cast<int>(call->timeout) : 0;
    rpc.datasz = range1 ? IB_VENDOR_RANGE1_DATA_SIZE : IB_VENDOR_RANGE2_DATA_SIZE;
    rpc.dataoffs = range1 ? IB_VENDOR_RANGE1_DATA_OFFS : IB_VENDOR_RANGE2_DATA_OFFS;
    if (!range1)
        rpc.oui = call->oui;

    IBMAD_DEBUG("ib_vendor_call_via", "class 0x%x method 0x%x attr 0x%x mod 0x%x datasz %d off %d res_ex %d",
                rpc.mgtclass, rpc.method, rpc.attr.id, rpc.attr.mod, rpc.datasz, rpc.dataoffs, resp);

    portid->qp = 1;
    if (!portid->qkey)
        portid->qkey = IB_DEFAULT_QP1_QKEY;

    auto* old = reinterpret_cast<ib_rpc_t*>(&rpc);
    if (resp) {
        auto* res = static_cast<uint8_t*>(mad_rpc_rmpp(srcport, old, portid, nullptr, data));
        errno = rpc.error;
        return res;
    }
    return mad_send_via(old, portid, nullptr, data, srcport) < 0 ? nullptr : static_cast<uint8_t*>(data);
}

IBMAD_EXPORT uint8_t* ib_vendor_call(void* data, ib_portid_t* portid, ib_vendor_call_t* call) {
    return ib_vendor_call_via(data, portid, call, default_port());
}
