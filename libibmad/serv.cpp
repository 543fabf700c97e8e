// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Server side and one-way sends: send a MAD without waiting, receive any
// MAD, answer a received MAD in place, and umad buffers for these.
#include "rpc_internal.h"

#include <array>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>

using namespace ibmad;

IBMAD_EXPORT int mad_send_via(ib_rpc_t* rpc, ib_portid_t* dport, ib_rmpp_hdr_t* rmpp, void* data,
                              struct ibmad_port* srcport) {
    std::array<uint8_t, umad_buf_size> pkt{};
    void* umad = pkt.data();

    IBMAD_DEBUG("mad_send_via", "rmpp %p data %p", static_cast<void*>(rmpp), data);
    if (!srcport || !rpc || !dport) {
        errno = EINVAL;
        return -1;
    }

    if (mad_build_pkt(umad, rpc, dport, rmpp, data) < 0)
        return -1;

    if (ibdebug) {
        warn("mad_send_via", "data offs %d sz %d", rpc->dataoffs, rpc->datasz);
        xdump(stderr, "mad send data\n", static_cast<uint8_t*>(umad_get_mad(umad)) + rpc->dataoffs, rpc->datasz);
    }

    int agent = srcport->class_agents[rpc->mgtclass & 0xff];
    if (agent < 0)
        errno = EINVAL;  // no agent for the class, as the kernel says
    if (agent < 0 ||
        umad_send(srcport->port_id, agent, umad, IB_MAD_SIZE, mad_get_timeout(srcport, rpc->timeout), 0) < 0) {
        warn("mad_send_via", "send failed; %s", std::strerror(errno));
        return -1;
    }
    return 0;
}

IBMAD_EXPORT int mad_send(ib_rpc_t* rpc, ib_portid_t* dport, ib_rmpp_hdr_t* rmpp, void* data) {
    return mad_send_via(rpc, dport, rmpp, data, default_port());
}

IBMAD_EXPORT int mad_respond_via(void* umad, ib_portid_t* portid, uint32_t rstatus, struct ibmad_port* srcport) {
    if (!umad || !srcport) {
        errno = EINVAL;
        return -1;
    }
    auto* mad = static_cast<uint8_t*>(umad_get_mad(umad));
    ib_portid_t rport{};
    // the CC class is encoded from an ib_rpc_cc_t: room for its key
    // (filled through its own type; mad_build_pkt takes it as an ib_rpc_t
    // and reads the key for CC, as with the reference)
    ib_rpc_cc_t rpc_cc{};

    if (!portid) {
        ib_mad_addr_t* addr = umad_get_mad_addr(umad);
        if (!addr) {
            errno = EINVAL;
            return -1;
        }
        rport.lid = ntohs(addr->lid);
        rport.qp = ntohl(addr->qpn);
        rport.qkey = ntohl(addr->qkey);
        rport.sl = addr->sl;
        if (!rport.qkey && rport.qp == 1)
            rport.qkey = IB_DEFAULT_QP1_QKEY;
        rport.grh_present = addr->grh_present;
        if (rport.grh_present)
            std::memcpy(rport.gid, addr->gid, sizeof(rport.gid));
        portid = &rport;
    }

    IBMAD_DEBUG("mad_respond_via", "dest %s", portid2str(portid));

    rpc_cc.mgtclass = mad[off::mgmt_class];
    rpc_cc.method = mad[off::method] & 0x7f;
    if (rpc_cc.method == IB_MAD_METHOD_SET)
        rpc_cc.method = IB_MAD_METHOD_GET;
    if (rpc_cc.method != IB_MAD_METHOD_SEND)
        rpc_cc.method |= IB_MAD_RESPONSE;
    rpc_cc.attr.id = get_be16(mad, off::attr_id);
    rpc_cc.attr.mod = get_be32(mad, off::attr_mod);
    if (rpc_cc.mgtclass == IB_SA_CLASS)
        rpc_cc.recsz = get_be16(mad, off::sa_attr_offset);
    if (mad_is_vendor_range2(rpc_cc.mgtclass))
        rpc_cc.oui = (uint32_t{mad[off::vendor_oui]} << 16) | (uint32_t{mad[off::vendor_oui + 1]} << 8) |
            mad[off::vendor_oui + 2];
    rpc_cc.trid = get_be64(mad, off::trid);
    rpc_cc.rstatus = rstatus;
    if (rpc_cc.mgtclass == IB_CC_CLASS)
        rpc_cc.cckey = get_be64(mad, off::cc_key);  // answer with its key

    bool smi = rpc_cc.mgtclass == IB_SMI_CLASS || rpc_cc.mgtclass == IB_SMI_DIRECT_CLASS;
    if (smi)
        portid->qp = 0;
    else if (!portid->qp)
        portid->qp = 1;
    if (!portid->qkey && portid->qp == 1)
        portid->qkey = IB_DEFAULT_QP1_QKEY;

    IBMAD_DEBUG("mad_respond_via", "qp 0x%x class 0x%x method %d attr 0x%x mod 0x%x datasz %d off %d qkey %x",
                portid->qp, rpc_cc.mgtclass, rpc_cc.method, rpc_cc.attr.id, rpc_cc.attr.mod, rpc_cc.datasz,
                rpc_cc.dataoffs, portid->qkey);

    if (mad_build_pkt(umad, reinterpret_cast<ib_rpc_t*>(&rpc_cc), portid, nullptr, nullptr) < 0)
        return -1;

    if (ibdebug > 1)
        xdump(stderr, "mad respond pkt\n", mad, IB_MAD_SIZE);

    int agent = srcport->class_agents[rpc_cc.mgtclass & 0xff];
    if (agent < 0)
        errno = EINVAL;
    if (agent < 0 ||
        umad_send(srcport->port_id, agent, umad, IB_MAD_SIZE, mad_get_timeout(srcport, rpc_cc.timeout), 0) < 0) {
        IBMAD_DEBUG("mad_respond_via", "send failed; %s", std::strerror(errno));
        return -1;
    }
    return 0;
}

IBMAD_EXPORT int mad_respond(void* umad, ib_portid_t* portid, uint32_t rstatus) {
    return mad_respond_via(umad, portid, rstatus, default_port());
}

IBMAD_EXPORT void* mad_alloc(void) { return umad_alloc(1, umad_size() + IB_MAD_SIZE); }

IBMAD_EXPORT void mad_free(void* umad) { umad_free(umad); }

IBMAD_EXPORT void* mad_receive_via(void* umad, int timeout, struct ibmad_port* srcport) {
    if (!srcport) {
        errno = EINVAL;
        return nullptr;
    }
    void* buf = umad ? umad : mad_alloc();
    if (!buf)
        return nullptr;
    int length = IB_MAD_SIZE;
    if (umad_recv(srcport->port_id, buf, &length, mad_get_timeout(srcport, timeout)) < 0) {
        if (!umad)
            mad_free(buf);
        IBMAD_DEBUG("mad_receive_via", "recv failed: %s", std::strerror(errno));
        return nullptr;
    }
    return buf;
}

IBMAD_EXPORT void* mad_receive(void* umad, int timeout) { return mad_receive_via(umad, timeout, default_port()); }
