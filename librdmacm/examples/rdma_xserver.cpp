// rdma_xserver: an rdma_cm server for reliable connected (-c r, the
// default) or extended reliable connected (-c x) queue pairs. It takes one
// connection request, accepts it and waits for one 16-byte message.
//
// With XRC the connection lives in the RDMA_PS_IB port space and the
// receive side is an XRC receive queue pair plus a shared receive queue
// made with rdma_create_srq; the SRQ number goes to the client in the
// accept's private data (4 bytes, network order; zero for RC) so that its
// sends can name it. A device without XRC support (soft-RoCE, for one)
// makes the XRC path fail where the library creates those objects.
//
// Messages and exit statuses follow rdmacm-utils 44's rdma_xserver,
// including its quirk of ending with status 0 when rdma_reg_msgs fails.

#include "stream_common.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

using namespace stream;

const char* port = "7471";
rdma_addrinfo hints;

std::uint8_t recv_msg[16];
std::uint32_t srqn;  // network order, as sent; 0 for RC

int create_srq(rdma_cm_id* id) {
    ibv_srq_init_attr attr{};
    attr.attr.max_wr = 1;
    attr.attr.max_sge = 1;
    attr.attr.srq_limit = 0;
    attr.srq_context = id;

    int ret = rdma_create_srq(id, nullptr, &attr);
    if (ret)
        std::perror("rdma_create_srq:");

    if (id->srq) {
        ibv_get_srq_num(id->srq, &srqn);
        srqn = htonl(srqn);
    }
    return ret;
}

int test() {
    rdma_addrinfo* res;
    int ret = rdma_getaddrinfo(nullptr, port, &hints, &res);
    if (ret) {
        std::printf("rdma_getaddrinfo: %s\n", gai_strerror(ret));
        return ret;
    }

    ibv_qp_init_attr attr{};
    attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
    attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
    rdma_cm_id* listen_raw;
    ret = rdma_create_ep(&listen_raw, res, nullptr, &attr);
    rdma_freeaddrinfo(res);
    if (ret) {
        std::perror("rdma_create_ep");
        return ret;
    }
    EndpointPtr listen_id(listen_raw);

    ret = rdma_listen(listen_id.get(), 0);
    if (ret) {
        std::perror("rdma_listen");
        return ret;
    }

    // The request's queue pair is created here, from the listener's
    // attributes: for XRC, the XRC receive QP.
    rdma_cm_id* id_raw;
    ret = rdma_get_request(listen_id.get(), &id_raw);
    if (ret) {
        std::perror("rdma_get_request");
        return ret;
    }
    EndpointPtr id(id_raw);

    if (hints.ai_qp_type == IBV_QPT_XRC_RECV) {
        ret = create_srq(id.get());
        if (ret)
            return ret;
    }

    MemoryRegionPtr mr(rdma_reg_msgs(id.get(), recv_msg, sizeof recv_msg));
    if (!mr) {
        std::perror("rdma_reg_msgs");
        return ret;  // 0 here, as in the reference
    }

    ret = rdma_post_recv(id.get(), nullptr, recv_msg, sizeof recv_msg, mr.get());
    if (ret) {
        std::perror("rdma_post_recv");
        return ret;
    }

    rdma_conn_param param{};
    param.private_data = &srqn;
    param.private_data_len = sizeof srqn;
    ret = rdma_accept(id.get(), &param);
    if (ret) {
        std::perror("rdma_accept");
        return ret;
    }

    ibv_wc wc;
    ret = rdma_get_recv_comp(id.get(), &wc);
    if (ret <= 0) {
        std::perror("rdma_get_recv_comp");
        return ret;
    }

    rdma_disconnect(id.get());
    return 0;
}

[[noreturn]] void usage(const char* program) {
    std::printf("usage: %s\n", program);
    std::printf("\t[-p port_number]\n");
    std::printf("\t[-c communication type]\n");
    std::printf("\t    r - RC: reliable-connected (default)\n");
    std::printf("\t    x - XRC: extended-reliable-connected\n");
    std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
    hints.ai_flags = RAI_PASSIVE;
    hints.ai_port_space = RDMA_PS_TCP;
    hints.ai_qp_type = IBV_QPT_RC;

    int op;
    while ((op = getopt(argc, argv, "p:c:")) != -1) {
        switch (op) {
        case 'p': port = optarg; break;
        case 'c':
            switch (std::tolower(static_cast<unsigned char>(optarg[0]))) {
            case 'r': break;
            case 'x':
                hints.ai_port_space = RDMA_PS_IB;
                hints.ai_qp_type = IBV_QPT_XRC_RECV;
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
