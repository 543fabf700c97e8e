// rdma_getaddrinfo(): getaddrinfo() for RDMA endpoints. The name lookup is
// libc's; the RDMA part is choosing the QP type and port space, placing the
// address on the source (passive) or destination (active) side, and asking
// ibacm for path records when it runs (acm.cpp).
#include "librdmacm/acm.h"
#include "librdmacm/cma_internal.h"

#include <cstdlib>
#include <cstring>
#include <netdb.h>

using namespace rdma::cm;

namespace {

sockaddr* copy_addr(const sockaddr* a, socklen_t len) {
    auto* c = static_cast<sockaddr*>(std::calloc(1, len));
    if (c) std::memcpy(c, a, len);
    return c;
}

char* copy_str(const char* s) { return s ? strdup(s) : nullptr; }

// The transport a result implies when the hints leave it open: streams are
// RC in the TCP port space, datagrams UD in the UDP one.
void fill_transport(rdma_addrinfo* rai, const rdma_addrinfo& hints, int socktype) {
    rai->ai_qp_type = hints.ai_qp_type ? hints.ai_qp_type : (socktype == SOCK_DGRAM ? IBV_QPT_UD : IBV_QPT_RC);
    if (hints.ai_port_space)
        rai->ai_port_space = hints.ai_port_space;
    else
        rai->ai_port_space = rai->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
}

int socktype_of(const rdma_addrinfo& hints) {
    if (hints.ai_qp_type == IBV_QPT_UD || hints.ai_port_space == RDMA_PS_UDP ||
        hints.ai_port_space == RDMA_PS_IPOIB)
        return SOCK_DGRAM;
    return SOCK_STREAM;
}

int lookup(const char* node, const char* service, const rdma_addrinfo& hints, rdma_addrinfo* rai) {
    addrinfo ai_hints{};
    if (hints.ai_flags & RAI_PASSIVE) ai_hints.ai_flags |= AI_PASSIVE;
    if (hints.ai_flags & RAI_NUMERICHOST) ai_hints.ai_flags |= AI_NUMERICHOST;
    if (hints.ai_family != AF_IB) ai_hints.ai_family = hints.ai_family;
    ai_hints.ai_socktype = socktype_of(hints);
    addrinfo* ai = nullptr;
    int ret = getaddrinfo(node, service, &ai_hints, &ai);
    if (ret) return ret;
    rai->ai_family = ai->ai_family;
    fill_transport(rai, hints, ai->ai_socktype);
    sockaddr* addr = copy_addr(ai->ai_addr, ai->ai_addrlen);
    char* canon = copy_str(ai->ai_canonname);
    if (!addr || (ai->ai_canonname && !canon)) {
        std::free(addr);
        std::free(canon);
        freeaddrinfo(ai);
        return fail(ENOMEM);
    }
    if (hints.ai_flags & RAI_PASSIVE) {
        rai->ai_src_addr = addr;
        rai->ai_src_len = ai->ai_addrlen;
        rai->ai_src_canonname = canon;
    } else {
        rai->ai_dst_addr = addr;
        rai->ai_dst_len = ai->ai_addrlen;
        rai->ai_dst_canonname = canon;
    }
    freeaddrinfo(ai);
    return 0;
}

}  // namespace

RDMACM_EXPORT void rdma_freeaddrinfo(rdma_addrinfo* res) {
    while (res) {
        rdma_addrinfo* next = res->ai_next;
        std::free(res->ai_connect);
        std::free(res->ai_route);
        std::free(res->ai_src_canonname);
        std::free(res->ai_dst_canonname);
        std::free(res->ai_src_addr);
        std::free(res->ai_dst_addr);
        std::free(res);
        res = next;
    }
}

RDMACM_EXPORT int rdma_getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints,
                                   rdma_addrinfo** res) {
    if (!res) return fail(EINVAL);
    if (init()) return -1;
    rdma_addrinfo h{};
    if (hints) h = *hints;
    auto* rai = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
    if (!rai) return fail(ENOMEM);
    // Of the caller's flags only RAI_PASSIVE describes the result (the
    // reference reports no others back).
    rai->ai_flags = h.ai_flags & RAI_PASSIVE;
    int ret = 0;
    if (node || service) {
        ret = lookup(node, service, h, rai);
    } else {
        // Everything comes from the hints' own addresses.
        rai->ai_family = h.ai_family;
        fill_transport(rai, h, socktype_of(h));
        if (h.ai_src_addr && h.ai_src_len) {
            rai->ai_src_addr = copy_addr(h.ai_src_addr, h.ai_src_len);
            rai->ai_src_len = h.ai_src_len;
            if (!rai->ai_src_addr) ret = fail(ENOMEM);
            if (!rai->ai_family) rai->ai_family = h.ai_src_addr->sa_family;
        }
        if (!ret && h.ai_dst_addr && h.ai_dst_len) {
            rai->ai_dst_addr = copy_addr(h.ai_dst_addr, h.ai_dst_len);
            rai->ai_dst_len = h.ai_dst_len;
            if (!rai->ai_dst_addr) ret = fail(ENOMEM);
            if (!rai->ai_family) rai->ai_family = h.ai_dst_addr->sa_family;
        }
        if (!ret && !rai->ai_src_addr && !rai->ai_dst_addr) ret = fail(EINVAL);
    }
    // An active side may name its source in the hints.
    if (!ret && !(h.ai_flags & RAI_PASSIVE) && (node || service) && h.ai_src_addr && h.ai_src_len) {
        rai->ai_src_addr = copy_addr(h.ai_src_addr, h.ai_src_len);
        rai->ai_src_len = h.ai_src_len;
        if (!rai->ai_src_addr) ret = fail(ENOMEM);
    }
    if (!ret && !(h.ai_flags & RAI_NOROUTE)) acm_resolve(rai, h);
    if (ret) {
        rdma_freeaddrinfo(rai);
        return ret;
    }
    *res = rai;
    return 0;
}
