// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// MAD encoding: the common header, the directed-route SMP part, the class
// specific header words (SA component mask, CC key, vendor OUI) and the
// umad address block around it.
#include "rpc_internal.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <unistd.h>

using namespace ibmad;

namespace {

std::atomic<uint64_t> trid_counter{0};

int class_of(const ib_rpc_t* rpc) { return rpc->mgtclass & 0xff; }

}  // namespace

// Transaction ids: a random start, then one more per request. Replies are
// matched on the low 32 bits, which is all this returns; 0 is skipped
// because a zero trid in an ib_rpc_t means "pick one for me".
IBMAD_EXPORT uint64_t mad_trid(void) {
    uint64_t cur = trid_counter.load(std::memory_order_relaxed);
    if (!cur) {
        srandom(static_cast<unsigned>(time(nullptr)) * static_cast<unsigned>(getpid()));
        uint64_t seed = static_cast<uint64_t>(random());
        uint64_t expected = 0;
        trid_counter.compare_exchange_strong(expected, seed);
    }
    for (;;) {
        uint64_t next = trid_counter.fetch_add(1) + 1;
        if (static_cast<uint32_t>(next))
            return static_cast<uint32_t>(next);
    }
}

IBMAD_EXPORT void* mad_encode(void* buf, ib_rpc_t* rpc, ib_dr_path_t* drpath, void* data) {
    auto* mad = static_cast<uint8_t*>(buf);
    const int mgmt = class_of(rpc);
    const bool response = rpc->method & IB_MAD_RESPONSE;
    const bool directed = mgmt == IB_SMI_DIRECT_CLASS;

    if (directed) {
        if (!drpath) {
            warn("mad_encode", "encoding dr mad without drpath (null)");
            errno = EINVAL;
            return nullptr;
        }
        if (drpath->cnt >= IB_SUBNET_PATH_HOPS_MAX) {
            warn("mad_encode", "dr path with hop count %d", drpath->cnt);
            errno = EINVAL;
            return nullptr;
        }
    }
    if (rpc->dataoffs < 0 || rpc->datasz < 0 || (data && rpc->dataoffs + rpc->datasz > IB_MAD_SIZE)) {
        errno = EINVAL;
        return nullptr;
    }

    mad[off::method] = static_cast<uint8_t>((rpc->method & 0x7f) | (response ? 0x80 : 0));
    mad[off::class_version] = (mgmt == IB_SA_CLASS || mgmt == IB_CC_CLASS) ? 2 : 1;
    mad[off::mgmt_class] = static_cast<uint8_t>(mgmt);
    mad[off::base_version] = 1;

    if (directed) {
        mad[off::hop_cnt] = static_cast<uint8_t>(drpath->cnt);
        mad[off::hop_ptr] = static_cast<uint8_t>(response ? drpath->cnt + 1 : 0);
        // 15-bit status under the direction bit
        put_be16(mad, off::status, (rpc->rstatus & 0x7fff) | (response ? 0x8000 : 0));
    } else {
        put_be16(mad, off::status, rpc->rstatus);
    }

    if (!rpc->trid)
        rpc->trid = mad_trid();
    put_be64(mad, off::trid, rpc->trid);
    put_be16(mad, off::attr_id, rpc->attr.id);
    put_be32(mad, off::attr_mod, rpc->attr.mod);
    put_be64(mad, off::mkey, rpc->mkey);

    if (directed) {
        put_be16(mad, off::dr_dlid, drpath->drdlid ? drpath->drdlid : 0xffff);
        put_be16(mad, off::dr_slid, drpath->drslid ? drpath->drslid : 0xffff);
        std::memcpy(mad + (response ? off::dr_return_path : off::dr_path), drpath->p, IB_SUBNET_PATH_HOPS_MAX);
    }

    if (mgmt == IB_SA_CLASS)
        put_be64(mad, off::sa_comp_mask, rpc->mask);

    if (mgmt == IB_CC_CLASS) {
        // the caller passes an ib_rpc_cc_t for this class
        const auto* cc = reinterpret_cast<const ib_rpc_cc_t*>(rpc);
        put_be64(mad, off::cc_key, cc->cckey);
    }

    if (data)
        std::memcpy(mad + rpc->dataoffs, data, rpc->datasz);

    if (mad_is_vendor_range2(mgmt)) {
        mad[off::vendor_oui] = static_cast<uint8_t>(rpc->oui >> 16);
        mad[off::vendor_oui + 1] = static_cast<uint8_t>(rpc->oui >> 8);
        mad[off::vendor_oui + 2] = static_cast<uint8_t>(rpc->oui);
    }

    return mad + IB_MAD_SIZE;
}

IBMAD_EXPORT int mad_build_pkt(void* umad, ib_rpc_t* rpc, ib_portid_t* dport, ib_rmpp_hdr_t* rmpp, void* data) {
    const int mgmt = class_of(rpc);
    const bool directed = mgmt == IB_SMI_DIRECT_CLASS;
    const bool smi = mgmt == IB_SMI_CLASS || directed;

    if (!smi)
        umad_set_addr(umad, dport->lid, dport->qp, dport->sl, dport->qkey);
    else if (!directed)
        umad_set_addr(umad, dport->lid, dport->qp, 0, 0);
    else if (dport->drpath.drslid != 0xffff && dport->lid > 0)
        umad_set_addr(umad, dport->lid, 0, 0, 0);
    else
        umad_set_addr(umad, 0xffff, 0, 0, 0);

    if (dport->grh_present && !smi) {
        ib_mad_addr_t grh{};
        grh.grh_present = 1;
        std::memcpy(grh.gid, dport->gid, sizeof(grh.gid));
        grh.hop_limit = 0xff;
        grh.traffic_class = 0;
        grh.flow_label = 0;
        umad_set_grh(umad, &grh);
    } else {
        umad_set_grh(umad, nullptr);
    }
    umad_set_pkey(umad, smi ? 0 : static_cast<int>(dport->pkey_idx));

    auto* mad = static_cast<uint8_t*>(umad_get_mad(umad));
    auto* end = static_cast<uint8_t*>(mad_encode(mad, rpc, directed ? &dport->drpath : nullptr, data));
    if (!end)
        return -1;

    if (!smi && rmpp) {
        mad[off::rmpp_version] = 1;
        mad[off::rmpp_type] = static_cast<uint8_t>(rmpp->type);
        // response time: all ones in its five bits; flags below it
        mad[off::rmpp_flags] = static_cast<uint8_t>((0x1f << 3) | (rmpp->flags & 7));
        mad[off::rmpp_status] = static_cast<uint8_t>(rmpp->status);
        put_be32(mad, off::rmpp_d1, rmpp->d1.u);
        put_be32(mad, off::rmpp_d2, rmpp->d2.u);
    }

    return static_cast<int>(end - mad);
}
