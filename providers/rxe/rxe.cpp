// Soft-RoCE (rdma_rxe) provider: the kernel implements the device in
// software; userspace shares its queues through mmap (see rdma_user_rxe.h).
// This file: matching, the device context, and the objects without a
// queue (PD, MR, MW, AH, multicast). Queues: cq.cpp, qp.cpp, srq.cpp.
#include "providers/rxe/rxe.h"

#include <rdma/ib_user_ioctl_verbs.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <memory>
#include <new>

namespace rdma::rxe {

using namespace rdma::verbs;

RxeContext::RxeContext(Device& device, int cmd_fd) : Context(device, cmd_fd) {
    ibv_context_ops& ops = ibv()->ops;
    ops.poll_cq = poll_cq;
    ops.req_notify_cq = req_notify_cq;
    ops.post_send = post_send;
    ops.post_recv = post_recv;
    ops.post_srq_recv = post_srq_recv;
    ops.bind_mw = bind_mw;
}

int RxeContext::query_device_ex(const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr, size_t attr_size) {
    uint64_t raw_fw = 0;
    if (int e = cmd_query_device_ex(input, attr, attr_size, &raw_fw))
        return e;
    format_fw_ver(raw_fw, attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver));
    return 0;
}

// ---------------------------------------------------------------------- PD

ibv_pd* RxeContext::alloc_pd() {
    return create_object<ibv_pd>([&](ibv_pd& pd) { return cmd_alloc_pd(&pd); });
}

// EBUSY while objects still use it: the PD stays valid.
int RxeContext::dealloc_pd(ibv_pd* pd) {
    return destroy_object(pd, [&](ibv_pd& p) { return cmd_dealloc_pd(&p); });
}

// ---------------------------------------------------------------------- MR

ibv_mr* RxeContext::reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access) {
    VerbsMr* mr = create_object<VerbsMr>([&](VerbsMr& m) { return cmd_reg_mr(pd, addr, length, hca_va, access, &m); });
    return mr ? &mr->mr : nullptr;
}

// rxe's kernel accepts a new PD and new access flags; a new translation
// it refuses itself (EOPNOTSUPP), so there is nothing to check here.
int RxeContext::rereg_mr(VerbsMr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
    return cmd_rereg_mr(mr, flags, pd, addr, length, access);
}

int RxeContext::dereg_mr(VerbsMr* mr) {
    return destroy_object(mr, [&](VerbsMr& m) { return cmd_dereg_mr(&m); });
}

// ---------------------------------------------------------------------- MW

ibv_mw* RxeContext::alloc_mw(ibv_pd* pd, ibv_mw_type type) {
    return create_object<ibv_mw>([&](ibv_mw& mw) { return cmd_alloc_mw(pd, type, &mw); });
}

int RxeContext::dealloc_mw(ibv_mw* mw) {
    return destroy_object(mw, [&](ibv_mw& m) { return cmd_dealloc_mw(&m); });
}

// ---------------------------------------------------------------------- AH

namespace {

bool is_v4_mapped(const ibv_gid& gid) {
    static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(gid.raw, kPrefix, sizeof(kPrefix)) == 0;
}

// A RoCE GID is an IP address: IPv4 ones are v4-mapped IPv6.
void gid_to_sockaddr(const ibv_gid& gid, bool v4, decltype(rxe_av::sgid_addr)& out) {
    std::memset(&out, 0, sizeof(out));
    if (v4) {
        out._sockaddr_in.sin_family = AF_INET;
        std::memcpy(&out._sockaddr_in.sin_addr, gid.raw + 12, 4);
    } else {
        out._sockaddr_in6.sin6_family = AF_INET6;
        std::memcpy(&out._sockaddr_in6.sin6_addr, gid.raw, 16);
    }
}

}  // namespace

int fill_av(ibv_context* context, const ibv_ah_attr& attr, rxe_av& av) {
    std::memset(&av, 0, sizeof(av));
    ibv_gid sgid{};
    if (ibv_query_gid(context, attr.port_num, attr.grh.sgid_index, &sgid))
        return errno ? errno : EINVAL;
    const bool v4 = is_v4_mapped(sgid);
    av.port_num = attr.port_num;
    av.network_type = v4 ? RXE_NETWORK_TYPE_IPV4 : RXE_NETWORK_TYPE_IPV6;
    std::memcpy(av.grh.dgid.raw, attr.grh.dgid.raw, 16);
    av.grh.flow_label = attr.grh.flow_label;
    av.grh.sgid_index = attr.grh.sgid_index;
    av.grh.hop_limit = attr.grh.hop_limit;
    av.grh.traffic_class = attr.grh.traffic_class;
    gid_to_sockaddr(sgid, v4, av.sgid_addr);
    gid_to_sockaddr(attr.grh.dgid, v4, av.dgid_addr);
    // The destination MAC stays zero: only kernels that predate ah_num read
    // this av, and those are older than anything this library supports.
    return 0;
}

ibv_ah* RxeContext::create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
    auto ah = std::unique_ptr<RxeAh>(new (std::nothrow) RxeAh{});
    if (!ah) {
        errno = ENOMEM;
        return nullptr;
    }
    rxe_create_ah_resp resp{};
    if (int e = cmd_create_ah(pd, attr, &ah->ah, Udata{nullptr, 0, &resp, sizeof(resp)})) {
        errno = e;
        return nullptr;
    }
    ah->ah_num = resp.ah_num;
    if (!ah->ah_num) {
        if (int e = fill_av(ibv(), *attr, ah->av)) {
            cmd_destroy_ah(&ah->ah);
            errno = e;
            return nullptr;
        }
    }
    return &ah.release()->ah;
}

int RxeContext::destroy_ah(ibv_ah* ah) {
    if (int e = cmd_destroy_ah(ah))
        return e;
    delete to_ah(ah);
    return 0;
}

int RxeContext::attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) { return cmd_attach_mcast(qp, gid, lid); }

int RxeContext::detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) { return cmd_detach_mcast(qp, gid, lid); }

// ------------------------------------------------------------ the provider

namespace {

class RxeDevice final : public Device {
public:
    using Device::Device;

    Context* open_context(int cmd_fd, void*) override {
        return open_provider_context<RxeContext>(
            *this, cmd_fd, [](RxeContext& c) { return c.init_kernel_context(nullptr, 0, nullptr, 0); });
    }
};

constexpr MatchEntry kMatch[] = {
    match_driver_id(RDMA_DRIVER_RXE),
    match_modalias("rdma_device:*Nrxe*"),
};

const Provider kRxe{
    "rxe",
    1,
    2,
    kMatch,
    // Device's constructor copies strings: a plain new, so that running out
    // of memory is one exception whichever allocation failed (libibverbs
    // skips the device with a warning, as the reference does).
    [](const SysfsDevice& sysfs, const MatchEntry*) -> Device* { return new RxeDevice(kRxe, sysfs); },
};

[[gnu::constructor]] void register_rxe() { register_provider(kRxe); }

}  // namespace
}  // namespace rdma::rxe
