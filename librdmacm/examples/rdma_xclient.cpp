// rdma_xclient: rdma_xserver's peer. It connects over a reliable connected
// (-c r, the default) or an XRC send (-c x) queue pair and sends one
// 16-byte inline message.
//
// With XRC the connection is in the RDMA_PS_IB port space and the send
// names the server's shared receive queue, whose number arrives in the
// private data of the accept (4 bytes, network order). A device without
// XRC support (soft-RoCE, for one) makes rdma_create_ep fail.
//
// Messages and exit statuses follow rdmacm-utils 44's rdma_xclient,
// including its quirks: a port longer than five characters is cut to five,
// a failed rdma_reg_msgs ends with status 0, a failed send is reported
// twice and a failed send completion is reported as "rdma_get_recv_comp".

#include "stream_common.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using namespace stream;

const char* server = "127.0.0.1";
char port[6] = "7471";
rdma_addrinfo hints;

std::uint8_t send_msg[16];
std::uint32_t srqn;  // host order, from the accept's private data

int post_send(rdma_cm_id* id) {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<std::uintptr_t>(send_msg);
    sge.length = sizeof send_msg;
    sge.lkey = 0;  // inline data needs no key

    ibv_send_wr wr{};
    wr.wr_id = 0;
    wr.next = nullptr;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_INLINE;
    if (hints.ai_qp_type == IBV_QPT_XRC_SEND)
        wr.qp_type.xrc.remote_srqn = srqn;

    ibv_send_wr* bad;
    int ret = ibv_post_send(id->qp, &wr, &bad);
    if (ret)
        std::perror("rdma_post_send");
    return ret;
}

int test() {
    rdma_addrinfo* res;
    int ret = rdma_getaddrinfo(server, port, &hints, &res);
    if (ret) {
        std::printf("rdma_getaddrinfo: %s\n", gai_strerror(ret));
        return ret;
    }

    ibv_qp_init_attr attr{};
    attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
    attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
    attr.sq_sig_all = 1;
    rdma_cm_id* id_raw;
    ret = rdma_create_ep(&id_raw, res, nullptr, &attr);
    rdma_freeaddrinfo(res);
    if (ret) {
        std::perror("rdma_create_ep");
        return ret;
    }
    EndpointPtr id(id_raw);

    MemoryRegionPtr mr(rdma_reg_msgs(id.get(), send_msg, sizeof send_msg));
    if (!mr) {
        std::perror("rdma_reg_msgs");
        return ret;  // 0 here, as in the reference
    }

    ret = rdma_connect(id.get(), nullptr);
    if (ret) {
        std::perror("rdma_connect");
        return ret;
    }

    if (hints.ai_qp_type == IBV_QPT_XRC_SEND) {
        const rdma_cm_event* event = id->event;
        std::uint32_t wire = 0;
        if (event && event->param.conn.private_data && event->param.conn.private_data_len >= sizeof wire)
            std::memcpy(&wire, event->param.conn.private_data, sizeof wire);
        srqn = ntohl(wire);
    }

    ret = post_send(id.get());
    if (ret) {
        std::perror("post_send");
        return ret;
    }

    ibv_wc wc;
    ret = rdma_get_send_comp(id.get(), &wc);
    if (ret <= 0) {
        std::perror("rdma_get_recv_comp");
        return ret;
    }

    rdma_disconnect(id.get());
    return 0;
}

[[noreturn]] void usage(const char* program) {
    std::printf("usage: %s\n", program);
    std::printf("\t[-s server]\n");
    std::printf("\t[-p port_number]\n");
    std::printf("\t[-c communication type]\n");
    std::printf("\t    r - RC: reliable-connected (default)\n");
    std::printf("\t    x - XRC: extended-reliable-connected\n");
    std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
    hints.ai_port_space = RDMA_PS_TCP;
    hints.ai_qp_type = IBV_QPT_RC;

    int op;
    while ((op = getopt(argc, argv, "s:p:c:")) != -1) {
        switch (op) {
        case 's': server = optarg; break;
        case 'p': std::strncpy(port, optarg, sizeof port - 1); break;
        case 'c':
            switch (std::tolower(static_cast<unsigned char>(optarg[0]))) {
            case 'r': break;
            case 'x':
                hints.ai_port_space = RDMA_PS_IB;
                hints.ai_qp_type = IBV_QPT_XRC_SEND;
                break;
            default: usage(argv[0]);
            }
            break;
        default: usage(argv[0]);
        }
    }

    std::printf("%s: start\n", argv[0]);
    int ret = test();
    std::printf("%s: end %d\n", argv[0], ret);
    return ret;
}
