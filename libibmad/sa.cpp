// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Subnet administration: one SA request/response, and the PathRecord and
// NodeRecord lookups the resolvers use.
#include "rpc_internal.h"

#include <cstring>

using namespace ibmad;

namespace {

// PathRecord component mask bits: DGID and SGID
constexpr uint64_t pr_mask_dgid = 1ull << 2;
constexpr uint64_t pr_mask_sgid = 1ull << 3;
// NodeRecord component mask bit: NodeInfo's PortGUID
constexpr uint64_t nr_mask_port_guid = 1ull << 8;

}  // namespace

IBMAD_EXPORT uint8_t* sa_rpc_call(const struct ibmad_port* srcport, void* rcvbuf, ib_portid_t* portid, ib_sa_call_t* sa,
                                  unsigned timeout) {
    ib_rpc_t rpc{};

    IBMAD_DEBUG("sa_rpc_call", "attr 0x%x mod 0x%x route %s", sa->attrid, sa->mod, portid2str(portid));
    if (portid->lid <= 0) {
        warn("sa_rpc_call", "only lid routes are supported");
        return nullptr;
    }

    rpc.mgtclass = IB_SA_CLASS;
    rpc.method = static_cast<int>(sa->method);
    rpc.attr.id = sa->attrid;
    rpc.attr.mod = sa->mod;
    rpc.mask = sa->mask;
    rpc.timeout = static_cast<int>(timeout);
    rpc.datasz = IB_SA_DATA_SIZE;
    rpc.dataoffs = IB_SA_DATA_OFFS;
    rpc.trid = sa->trid;

    portid->qp = 1;
    if (!portid->qkey)
        portid->qkey = IB_DEFAULT_QP1_QKEY;

    // single-MAD replies only, as in the reference (no RMPP reassembly)
    auto* p = static_cast<uint8_t*>(mad_rpc_rmpp(srcport, &rpc, portid, nullptr, rcvbuf));
    sa->recsz = rpc.recsz;
    return p;
}

IBMAD_EXPORT uint8_t* sa_call(void* rcvbuf, ib_portid_t* portid, ib_sa_call_t* sa, unsigned timeout) {
    return sa_rpc_call(default_port(), rcvbuf, portid, sa, timeout);
}

IBMAD_EXPORT int ib_path_query_via(const struct ibmad_port* srcport, ibmad_gid_t srcgid, ibmad_gid_t destgid,
                                   ib_portid_t* sm_id, void* buf) {
    ib_sa_call_t sa{};
    sa.method = IB_MAD_METHOD_GET;
    sa.attrid = IB_SA_ATTR_PATHRECORD;
    sa.mask = pr_mask_dgid | pr_mask_sgid;
    sa.trid = mad_trid();

    std::memset(buf, 0, IB_SA_PR_RECSZ);
    std::memcpy(static_cast<uint8_t*>(buf) + off::pr_dgid, destgid, 16);
    std::memcpy(static_cast<uint8_t*>(buf) + off::pr_sgid, srcgid, 16);

    auto* p = sa_rpc_call(srcport, buf, sm_id, &sa, 0);
    if (!p) {
        warn("ib_path_query_via", "sa call path_query failed");
        return -1;
    }
    return get_be16(p, off::pr_dlid);
}

IBMAD_EXPORT int ib_path_query(ibmad_gid_t srcgid, ibmad_gid_t destgid, ib_portid_t* sm_id, void* buf) {
    return ib_path_query_via(default_port(), srcgid, destgid, sm_id, buf);
}

IBMAD_EXPORT int ib_node_query_via(const struct ibmad_port* srcport, uint64_t guid, ib_portid_t* sm_id, void* buf) {
    ib_sa_call_t sa{};
    sa.method = IB_MAD_METHOD_GET;
    sa.attrid = IB_SA_ATTR_NODERECORD;
    sa.mask = nr_mask_port_guid;
    sa.trid = mad_trid();

    std::memset(buf, 0, IB_SA_NR_RECSZ);
    put_be64(buf, off::nr_port_guid, guid);

    auto* p = sa_rpc_call(srcport, buf, sm_id, &sa, 0);
    if (!p) {
        warn("ib_node_query_via", "sa call node_query failed");
        return -1;
    }
    // the record is in buf; the reference answers 0, not the LID
    return 0;
}
