// Address handles built from a received completion (UD replies), and
// RoCE layer-2 resolution of a destination GID.
#include "libibverbs/ibverbs.h"
#include "util/c_entry.h"

#include <arpa/inet.h>
#include <netinet/ip.h>

#include <netinet/in.h>

#include <cstring>

using namespace rdma::verbs;

namespace {

// For RoCE v2 over IPv4 the 40-byte GRH area of a UD receive buffer holds
// the IPv4 header in its last 20 bytes (the first 20 are unspecified).
// Anything whose first nibble is not IPv6's version is taken as IPv4 when
// byte 20 says so; when both could apply, a valid IPv4 header checksum
// decides.
bool grh_holds_ipv4(const ibv_grh* grh) {
    const auto* ip = reinterpret_cast<const uint8_t*>(grh) + 20;
    const unsigned v6_version = ntohl(grh->version_tclass_flow) >> 28;
    if (v6_version != 6)
        return (ip[0] >> 4) == 4;
    if ((ip[0] >> 4) != 4 || (ip[0] & 0xf) != 5)
        return false;
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2)
        sum += (ip[i] << 8) | ip[i + 1];
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return sum == 0xffff;  // a valid header checksums to all ones
}

void ipv4_mapped(ibv_gid& gid, const uint8_t* addr4) {
    std::memset(&gid, 0, sizeof(gid));
    gid.raw[10] = gid.raw[11] = 0xff;
    std::memcpy(&gid.raw[12], addr4, 4);
}

}  // namespace

namespace rdma::verbs {

int find_gid_index(ibv_context* ctx, uint8_t port, const ibv_gid& gid, int want_type) {
    ibv_port_attr pa{};
    if (ibv_query_port(ctx, port, &pa))
        return -1;
    for (int i = 0; i < pa.gid_tbl_len; ++i) {
        ibv_gid_entry e{};
        if (ibv_query_gid_ex(ctx, port, static_cast<uint32_t>(i), &e, 0))
            continue;
        if (std::memcmp(&e.gid, &gid, sizeof(gid)) == 0 &&
            (want_type < 0 || e.gid_type == static_cast<uint32_t>(want_type)))
            return i;
    }
    return -1;
}

}  // namespace rdma::verbs

namespace {

int init_ah_from_wc(ibv_context* context, uint8_t port_num, const ibv_wc* wc, const ibv_grh* grh,
                    ibv_ah_attr* ah_attr) {
    std::memset(ah_attr, 0, sizeof(*ah_attr));
    ah_attr->dlid = wc->slid;
    ah_attr->sl = wc->sl;
    ah_attr->src_path_bits = wc->dlid_path_bits;
    ah_attr->port_num = port_num;
    if (!(wc->wc_flags & IBV_WC_GRH))
        return 0;
    ah_attr->is_global = 1;
    ibv_gid local{};
    int type = -1;
    if (grh_holds_ipv4(grh)) {
        const auto* ip = reinterpret_cast<const uint8_t*>(grh) + 20;
        ipv4_mapped(ah_attr->grh.dgid, ip + 12);  // their source
        ipv4_mapped(local, ip + 16);  // our destination
        ah_attr->grh.traffic_class = ip[1];
        ah_attr->grh.hop_limit = 0xff;
        type = IBV_GID_TYPE_ROCE_V2;
    } else {
        const uint32_t vtf = ntohl(grh->version_tclass_flow);
        ah_attr->grh.dgid = grh->sgid;
        local = grh->dgid;
        ah_attr->grh.flow_label = vtf & 0xfffff;
        ah_attr->grh.traffic_class = static_cast<uint8_t>((vtf >> 20) & 0xff);
        ah_attr->grh.hop_limit = 0xff;
        // An IPv6 header of a RoCE v2 datagram (next header UDP) answers
        // from the port's RoCE v2 GID, an IB GRH (next header 0x1b) from its
        // RoCE v1 one; the same address is usually at both indexes. (IB
        // ports have neither type: the search below falls back to any.)
        type = grh->next_hdr == IPPROTO_UDP ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
    }
    int idx = find_gid_index(context, port_num, local, type);
    if (idx < 0 && type >= 0)
        idx = find_gid_index(context, port_num, local, -1);
    if (idx < 0) {
        errno = ENOENT;
        return -1;
    }
    ah_attr->grh.sgid_index = static_cast<uint8_t>(idx);
    return 0;
}

}  // namespace

extern "C" {

RDMA_EXPORT int ibv_init_ah_from_wc(ibv_context* context, uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                                    ibv_ah_attr* ah_attr) {
    return rdma::entry_minus_one([&] { return init_ah_from_wc(context, port_num, wc, grh, ah_attr); });
}

RDMA_EXPORT ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
    return rdma::entry_null([&]() -> ibv_ah* {
        ibv_ah_attr attr;
        if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
            return nullptr;
        return ibv_create_ah(pd, &attr);
    });
}

RDMA_EXPORT int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
    return rdma::entry_errno([&] { return Context::from(qp->context)->query_ece(qp, ece); });
}

RDMA_EXPORT int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
    return rdma::entry_errno([&] {
        // No vendor named: nothing to negotiate, as the reference answers.
        if (!ece->vendor_id) {
            errno = EOPNOTSUPP;
            return EOPNOTSUPP;
        }
        return Context::from(qp->context)->set_ece(qp, ece);
    });
}

}  // extern "C"
