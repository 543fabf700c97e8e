#include "cm_common.h"

#include <endian.h>
#include <strings.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace cm_examples {

rdma_event_channel* create_first_event_channel() {
    rdma_event_channel* channel = rdma_create_event_channel();
    if (!channel) {
        if (errno == ENODEV)
            std::fprintf(stderr, "No RDMA devices were detected\n");
        else
            std::perror("failed to create RDMA CM event channel");
    }
    return channel;
}

int get_rdma_addr(const char* src, const char* dst, const char* port, const rdma_addrinfo* hints,
                  rdma_addrinfo** result) {
    if (hints->ai_flags & RAI_PASSIVE)
        return rdma_getaddrinfo(src, port, hints, result);

    // An active side with a bind address: resolve that address passively
    // first and hand it over as the source of the real lookup.
    rdma_addrinfo active = *hints;
    Addrinfo source;
    if (src) {
        rdma_addrinfo passive = *hints;
        passive.ai_flags |= RAI_PASSIVE;
        rdma_addrinfo* found = nullptr;
        int ret = rdma_getaddrinfo(src, nullptr, &passive, &found);
        if (ret)
            return ret;
        source.reset(found);
        active.ai_src_addr = source->ai_src_addr;
        active.ai_src_len = source->ai_src_len;
    }
    return rdma_getaddrinfo(dst, port, &active, result);
}

void perror_prog(const char* prog, const char* what) {
    const int saved = errno;
    std::string message = prog;
    message += ": ";
    message += what;
    errno = saved;
    std::perror(message.c_str());
}

void parse_address_format(const char* format, rdma_addrinfo& hints) {
    if (!strncasecmp("ip", format, 2)) {
        hints.ai_flags = RAI_NUMERICHOST;
    } else if (!strncasecmp("gid", format, 3)) {
        hints.ai_flags = RAI_NUMERICHOST | RAI_FAMILY;
        hints.ai_family = AF_IB;
    } else if (strncasecmp("name", format, 4)) {
        std::fprintf(stderr, "Warning: unknown address format\n");
    }
}

int check_datagram_size(rdma_cm_id* id, int message_count, int message_size, const char* prog) {
    ibv_port_attr port_attr;
    int ret = ibv_query_port(id->verbs, id->port_num, &port_attr);
    if (ret)
        return ret;
    const int mtu = 1 << (port_attr.active_mtu + 7);
    if (message_count && message_size > mtu) {
        std::printf("%s: message_size %d is larger than active mtu %d\n", prog, message_size, mtu);
        return -EINVAL;
    }
    return 0;
}

void destroy_node_resources(rdma_cm_id* id, ibv_ah* ah, std::span<ibv_cq* const> cqs, ibv_mr* mr, void* mem,
                            ibv_pd* pd) {
    if (!id)
        return;
    if (ah)
        ibv_destroy_ah(ah);
    if (id->qp)
        rdma_destroy_qp(id);
    for (ibv_cq* cq : cqs)
        if (cq)
            ibv_destroy_cq(cq);
    if (mem) {
        ibv_dereg_mr(mr);
        std::free(mem);
    }
    if (pd)
        ibv_dealloc_pd(pd);
    rdma_destroy_id(id);
}

int listen_on(rdma_event_channel* channel, rdma_port_space port_space, void* context, const char* src, const char* dst,
              const char* port, const rdma_addrinfo& hints, rdma_addrinfo** rai, const char* prog,
              rdma_cm_id** listen_id) {
    int ret = rdma_create_id(channel, listen_id, context, port_space);
    if (ret) {
        perror_prog(prog, "listen request failed");
        return ret;
    }

    ret = get_rdma_addr(src, dst, port, &hints, rai);
    if (ret) {
        std::printf("%s: getrdmaaddr error: %s\n", prog, gai_strerror(ret));
    } else {
        ret = rdma_bind_addr(*listen_id, (*rai)->ai_src_addr);
        if (ret) {
            perror_prog(prog, "bind address failed");
        } else {
            ret = rdma_listen(*listen_id, 0);
            if (ret)
                perror_prog(prog, "failure trying to listen");
        }
    }
    if (ret) {
        rdma_destroy_id(*listen_id);
        *listen_id = nullptr;
    }
    return ret;
}

int create_message_buffer(ibv_pd* pd, std::size_t length, void*& mem, ibv_mr*& mr) {
    mem = std::malloc(length);
    if (!mem) {
        std::printf("failed message allocation\n");
        return -1;
    }
    mr = ibv_reg_mr(pd, mem, length, IBV_ACCESS_LOCAL_WRITE);
    if (!mr) {
        std::printf("failed to reg MR\n");
        std::free(mem);
        mem = nullptr;
        return -1;
    }
    return 0;
}

int post_receives(ibv_qp* qp, const ibv_mr* mr, void* mem, uint32_t length, uint64_t wr_id, int count) {
    ibv_sge sge{};
    sge.length = length;
    sge.lkey = mr->lkey;
    sge.addr = reinterpret_cast<uintptr_t>(mem);

    ibv_recv_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr_id = wr_id;

    for (int i = 0; i < count; i++) {
        ibv_recv_wr* bad;
        int ret = ibv_post_recv(qp, &wr, &bad);
        if (ret) {
            std::printf("failed to post receives: %d\n", ret);
            return ret;
        }
    }
    return 0;
}

int post_send_batch(ibv_qp* qp, const ibv_mr* mr, void* mem, uint32_t length, ibv_send_wr wr, int count) {
    ibv_sge sge{};
    sge.length = length;
    sge.lkey = mr->lkey;
    sge.addr = reinterpret_cast<uintptr_t>(mem);
    wr.sg_list = &sge;
    wr.num_sge = 1;

    int ret = 0;
    for (int i = 0; i < count && !ret; i++) {
        ibv_send_wr* bad;
        ret = ibv_post_send(qp, &wr, &bad);
        if (ret)
            std::printf("failed to post sends: %d\n", ret);
    }
    return ret;
}

int post_ud_receives(UdNode& node, int message_size, int count) {
    if (!count)
        return 0;
    const std::size_t length = static_cast<std::size_t>(message_size) + sizeof(ibv_grh);
    return post_receives(node.cma_id->qp, node.mr, node.mem, static_cast<uint32_t>(length),
                         reinterpret_cast<uintptr_t>(&node), count);
}

int post_ud_sends(UdNode& node, unsigned int send_flags, int message_size, int count) {
    if (!node.connected || !count)
        return 0;

    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.send_flags = send_flags;
    wr.wr_id = reinterpret_cast<uintptr_t>(&node);
    wr.imm_data = htobe32(node.cma_id->qp->qp_num);
    wr.wr.ud.ah = node.ah;
    wr.wr.ud.remote_qpn = node.remote_qpn;
    wr.wr.ud.remote_qkey = node.remote_qkey;
    return post_send_batch(node.cma_id->qp, node.mr, node.mem, static_cast<uint32_t>(message_size), wr, count);
}

void destroy_ud_node(UdNode& node) {
    destroy_node_resources(node.cma_id, node.ah, {&node.cq, 1}, node.mr, node.mem, node.pd);
}

}  // namespace cm_examples
