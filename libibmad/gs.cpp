// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Performance management (PMA) queries and counter resets.
#include "rpc_internal.h"

#include <cerrno>
#include <cstring>

using namespace ibmad;

namespace {

uint8_t* pma_call(int method, void* rcvbuf, ib_portid_t* dest, unsigned id, unsigned timeout,
                  const struct ibmad_port* srcport) {
    ib_rpc_v1_t rpc{};
    rpc.mgtclass = IB_PERFORMANCE_CLASS | IB_MAD_RPC_VERSION1;
    rpc.method = method;
    rpc.attr.id = id;
    rpc.attr.mod = 0;
    rpc.timeout = static_cast<int>(timeout);
    rpc.datasz = IB_PC_DATA_SZ;
    rpc.dataoffs = IB_PC_DATA_OFFS;
    if (!dest->qp)
        dest->qp = 1;
    if (!dest->qkey)
        dest->qkey = IB_DEFAULT_QP1_QKEY;

    auto* res = static_cast<uint8_t*>(mad_rpc(srcport, reinterpret_cast<ib_rpc_t*>(&rpc), dest, rcvbuf, rcvbuf));
    errno = rpc.error;
    return res;
}

}  // namespace

IBMAD_EXPORT uint8_t* pma_query_via(void* rcvbuf, ib_portid_t* dest, int port, unsigned timeout, unsigned id,
                                    const struct ibmad_port* srcport) {
    IBMAD_DEBUG("pma_query_via", "lid %u port %d", dest->lid, port);
    if (dest->lid == -1) {
        warn("pma_query_via", "only lid routed is supported");
        return nullptr;
    }
    static_cast<uint8_t*>(rcvbuf)[off::pc_port_select] = static_cast<uint8_t>(port);
    return pma_call(IB_MAD_METHOD_GET, rcvbuf, dest, id, timeout, srcport);
}

IBMAD_EXPORT uint8_t* performance_reset_via(void* rcvbuf, ib_portid_t* dest, int port, unsigned mask, unsigned timeout,
                                            unsigned id, const struct ibmad_port* srcport) {
    IBMAD_DEBUG("performance_reset_via", "lid %u port %d mask 0x%x", dest->lid, port, mask);
    if (dest->lid == -1) {
        warn("performance_reset_via", "only lid routed is supported");
        return nullptr;
    }
    // the low 16 bits select counters in CounterSelect, the bits above
    // go to CounterSelect2 (PortCounters: 8 bits, PortCountersExtended:
    // 32 bits); no mask at all means every counter
    uint32_t mask2 = mask ? mask >> 16 : 0xffff;
    if (!mask)
        mask = ~0u;
    std::memset(rcvbuf, 0, IB_MAD_SIZE);
    static_cast<uint8_t*>(rcvbuf)[off::pc_port_select] = static_cast<uint8_t>(port);
    put_be16(rcvbuf, off::pc_counter_select, mask & 0xffff);
    if (id == IB_GSI_PORT_COUNTERS_EXT)
        put_be32(rcvbuf, off::pc_ext_counter_select2, mask2);
    else
        static_cast<uint8_t*>(rcvbuf)[off::pc_counter_select2] = static_cast<uint8_t>(mask2);
    return pma_call(IB_MAD_METHOD_SET, rcvbuf, dest, id, timeout, srcport);
}
