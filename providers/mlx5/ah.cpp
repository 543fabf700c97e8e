// Address handles: the UD address vector every send WQE to that
// destination copies. On InfiniBand the provider builds it alone; on RoCE
// the kernel is asked (CREATE_AH) for the destination MAC when it offers
// that, else the neighbour table is.
// See tests/uverbs-sim/doc/mlx5-contract.md §3.7 and §5.3.
#include "providers/mlx5/mlx5.h"

#include <endian.h>

#include <cstdlib>
#include <cstring>
#include <random>

extern "C" int ibv_resolve_eth_l2_from_gid(ibv_context* context, ibv_ah_attr* attr, uint8_t eth_mac[6], uint16_t* vid);

namespace rdma::mlx5 {

using namespace rdma::verbs;

namespace {

// The device's rate encoding: IBV_RATE_* shifted by 5, 0 for the port's.
constexpr uint8_t kStatRateOffset = 5;
constexpr uint32_t kGrhPresent = 1u << 30;

// RoCE v2's UDP source port: from the flow label when there is one, else
// any port of the range the kernel uses for RoCE.
uint16_t roce_udp_sport(uint32_t flow_label) {
    if (flow_label)
        return ibv_flow_label_to_udp_sport(flow_label);
    thread_local std::minstd_rand gen{std::random_device{}()};
    return static_cast<uint16_t>(0xc000 | (gen() & 0x3fff));
}

}  // namespace

ibv_ah* Mlx5Context::create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
    // No port check, as in the reference: an AH names a port the device
    // lacks without complaint (the send then fails), and is built as for
    // InfiniBand.
    const bool eth =
        attr->port_num >= 1 && attr->port_num <= 2 && caps_.link_layer[attr->port_num - 1] == IBV_LINK_LAYER_ETHERNET;
    if (eth && !attr->is_global) {
        errno = EINVAL;
        return nullptr;
    }
    auto* ah = new (std::nothrow) Mlx5Ah{};
    if (!ah) {
        errno = ENOMEM;
        return nullptr;
    }
    mlx5_wqe_av& av = ah->av;
    const uint8_t rate = attr->static_rate ? static_cast<uint8_t>(attr->static_rate + kStatRateOffset) : 0;
    if (eth) {
        ibv_gid_entry entry{};
        if (ibv_query_gid_ex(ibv(), attr->port_num, attr->grh.sgid_index, &entry, 0)) {
            delete ah;
            return nullptr;
        }
        if (entry.gid_type == IBV_GID_TYPE_ROCE_V2)
            av.rlid = htobe16(roce_udp_sport(attr->grh.flow_label));
        av.stat_rate_sl = static_cast<uint8_t>(rate << 4 | (attr->sl & 7) << 1);
    } else {
        av.fl_mlid = attr->src_path_bits & 0x7f;
        av.rlid = htobe16(attr->dlid);
        av.stat_rate_sl = static_cast<uint8_t>(rate << 4 | (attr->sl & 0xf));
    }
    if (attr->is_global) {
        av.tclass = attr->grh.traffic_class;
        av.hop_limit = attr->grh.hop_limit;
        av.grh_gid_fl = htobe32((eth ? 0 : kGrhPresent) | static_cast<uint32_t>(attr->grh.sgid_index) << 20 |
                                (attr->grh.flow_label & 0xfffff));
        std::memcpy(av.rgid, attr->grh.dgid.raw, sizeof(av.rgid));
    }
    if (eth) {
        if (caps_.cmds_supp_uhw & MLX5_USER_CMDS_SUPP_UHW_CREATE_AH) {
            mlx5_ib_create_ah_resp resp{};
            if (int e = cmd_create_ah(pd, attr, &ah->ah, Udata{nullptr, 0, &resp, sizeof(resp)})) {
                delete ah;
                errno = e;
                return nullptr;
            }
            std::memcpy(av.rmac, resp.dmac, sizeof(av.rmac));
            ah->kernel = true;
            return &ah->ah;
        }
        uint16_t vid = 0;
        if (ibv_resolve_eth_l2_from_gid(ibv(), attr, av.rmac, &vid)) {
            delete ah;
            return nullptr;
        }
    }
    ah->ah.context = ibv();
    ah->ah.pd = pd;
    return &ah->ah;
}

int Mlx5Context::destroy_ah(ibv_ah* ibah) {
    Mlx5Ah* ah = to_mah(ibah);
    if (ah->kernel) {
        if (int e = cmd_destroy_ah(ibah))
            return e;
    }
    delete ah;
    return 0;
}

}  // namespace rdma::mlx5
