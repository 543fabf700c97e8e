// rdma_getaddrinfo(): getaddrinfo() for RDMA endpoints. The name lookup is
// libc's; the RDMA part is choosing the QP type and port space, placing the
// address on the source (passive) or destination (active) side, and asking
// ibacm for path records when it runs (acm.cpp).
#include "librdmacm/acm.h"
#include "librdmacm/cma_internal.h"
#include "util/c_entry.h"

#include <cstdlib>
#include <cstring>
#include <netdb.h>

using namespace rdma::cm;
using rdma::Errno;
using rdma::Result;
using rdma::Status;

namespace {

sockaddr* copy_addr(const sockaddr* a, socklen_t len) {
    auto* c = static_cast<sockaddr*>(std::calloc(1, len));
    if (c)
        std::memcpy(c, a, len);
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
    if (hints.ai_qp_type == IBV_QPT_UD || hints.ai_port_space == RDMA_PS_UDP || hints.ai_port_space == RDMA_PS_IPOIB)
        return SOCK_DGRAM;
    return SOCK_STREAM;
}

// libc's name lookup into rai: getaddrinfo's answer (0, or the EAI_* code of
// a failed lookup, errno as getaddrinfo left it) or an errno of our own.
Result<int> lookup(const char* node, const char* service, const rdma_addrinfo& hints, rdma_addrinfo* rai) {
    addrinfo ai_hints{};
    if (hints.ai_flags & RAI_PASSIVE)
        ai_hints.ai_flags |= AI_PASSIVE;
    if (hints.ai_flags & RAI_NUMERICHOST)
        ai_hints.ai_flags |= AI_NUMERICHOST;
    if (hints.ai_family != AF_IB)
        ai_hints.ai_family = hints.ai_family;
    ai_hints.ai_socktype = socktype_of(hints);
    addrinfo* ai = nullptr;
    int ret = getaddrinfo(node, service, &ai_hints, &ai);
    if (ret)
        return ret;
    rai->ai_family = ai->ai_family;
    fill_transport(rai, hints, ai->ai_socktype);
    sockaddr* addr = copy_addr(ai->ai_addr, ai->ai_addrlen);
    char* canon = copy_str(ai->ai_canonname);
    if (!addr || (ai->ai_canonname && !canon)) {
        std::free(addr);
        std::free(canon);
        freeaddrinfo(ai);
        return Errno{ENOMEM};
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

// The addresses of a result, from a name lookup or from the hints' own
// addresses: as lookup(), 0, an EAI_* code or an errno.
Result<int> fill(const char* node, const char* service, const rdma_addrinfo& h, rdma_addrinfo* rai) {
    if (node || service) {
        Result<int> ret = lookup(node, service, h, rai);
        if (!ret.ok() || ret.value())
            return ret;
        // An active side may name its source in the hints.
        if (!(h.ai_flags & RAI_PASSIVE) && h.ai_src_addr && h.ai_src_len) {
            rai->ai_src_addr = copy_addr(h.ai_src_addr, h.ai_src_len);
            rai->ai_src_len = h.ai_src_len;
            if (!rai->ai_src_addr)
                return Errno{ENOMEM};
        }
        return 0;
    }
    // Neither a node nor a service: the result is the hints themselves,
    // taken as given (the reference neither defaults the transport nor
    // derives the family from the addresses, and empty hints are a valid,
    // empty answer).
    rai->ai_flags = h.ai_flags;
    rai->ai_family = h.ai_family;
    rai->ai_qp_type = h.ai_qp_type;
    rai->ai_port_space = h.ai_port_space;
    if (h.ai_src_addr && h.ai_src_len) {
        rai->ai_src_addr = copy_addr(h.ai_src_addr, h.ai_src_len);
        rai->ai_src_len = h.ai_src_len;
        if (!rai->ai_src_addr)
            return Errno{ENOMEM};
    }
    if (h.ai_dst_addr && h.ai_dst_len) {
        rai->ai_dst_addr = copy_addr(h.ai_dst_addr, h.ai_dst_len);
        rai->ai_dst_len = h.ai_dst_len;
        if (!rai->ai_dst_addr)
            return Errno{ENOMEM};
    }
    return 0;
}

}  // namespace

// No barrier: free() and a list walk; nothing here can throw.
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

// 0, -1 with errno, or getaddrinfo's EAI_* code for a failed name lookup
// (as the reference returns it, errno as getaddrinfo left it): the barrier
// passes a Result's value through untouched.
RDMACM_EXPORT int rdma_getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints,
                                   rdma_addrinfo** res) {
    return rdma::entry_minus_one([&]() -> Result<int> {
        // Nothing to look up and nothing to copy: EINVAL before the
        // library looks for devices, as the reference checks.
        if (!res || (!node && !service && !hints))
            return Errno{EINVAL};
        if (Status s = init(); !s.ok())
            return Errno{s.error()};
        rdma_addrinfo h{};
        if (hints)
            h = *hints;
        auto* rai = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
        if (!rai)
            return Errno{ENOMEM};
        // After a lookup only RAI_PASSIVE describes the result (the
        // reference reports no others back); fill() keeps all of them
        // when the hints are the answer.
        rai->ai_flags = h.ai_flags & RAI_PASSIVE;
        Result<int> ret = fill(node, service, h, rai);
        bool ok = ret.ok() && ret.value() == 0;
        if (ok && !(h.ai_flags & RAI_NOROUTE))
            acm_resolve(rai, h);
        if (!ok) {
            rdma_freeaddrinfo(rai);
            return ret;
        }
        *res = rai;
        return 0;
    });
}
