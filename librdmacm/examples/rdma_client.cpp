// rdma_client: the smallest rdma_cm client, rdma_server's peer. It
// resolves the server with rdma_getaddrinfo, creates an endpoint and its
// queue pair with rdma_create_ep, posts a receive, connects, sends 16
// bytes (inline when the queue pair allows it) and waits for the server's
// 16-byte answer. Every step uses the synchronous calls of rdma_cma.h and
// the helpers of rdma_verbs.h.
//
// Messages and exit statuses follow rdmacm-utils 44's rdma_client: the
// status is that of the step that failed (-1 for most, the gai error of
// rdma_getaddrinfo), 0 when the exchange completed, 1 for a usage error.

#include "stream_common.h"

#include <getopt.h>
#include <netdb.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

using namespace stream;

const char* server = "127.0.0.1";
const char* port = "7471";

constexpr std::uint32_t kMessageSize = 16;

int run() {
    rdma_addrinfo hints{};
    hints.ai_port_space = RDMA_PS_TCP;
    rdma_addrinfo* res_raw;
    int ret = rdma_getaddrinfo(server, port, &hints, &res_raw);
    if (ret) {
        std::printf("rdma_getaddrinfo: %s\n", gai_strerror(ret));
        return ret;
    }
    AddrInfoPtr res(res_raw);

    ibv_qp_init_attr attr{};
    attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
    attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
    attr.cap.max_inline_data = kMessageSize;
    attr.sq_sig_all = 1;
    rdma_cm_id* id_raw = nullptr;
    ret = rdma_create_ep(&id_raw, res.get(), nullptr, &attr);
    // rdma_create_ep writes back the capabilities the queue pair got;
    // the reference looks at them before it looks at the result.
    int send_flags = 0;
    if (attr.cap.max_inline_data >= kMessageSize)
        send_flags = IBV_SEND_INLINE;
    else
        std::printf("rdma_client: device doesn't support IBV_SEND_INLINE, "
                    "using sge sends\n");
    if (ret) {
        std::perror("rdma_create_ep");
        return ret;
    }
    EndpointPtr id(id_raw);

    static std::uint8_t send_msg[kMessageSize];
    static std::uint8_t recv_msg[kMessageSize];

    MemoryRegionPtr recv_mr(rdma_reg_msgs(id.get(), recv_msg, kMessageSize));
    if (!recv_mr) {
        std::perror("rdma_reg_msgs for recv_msg");
        return -1;
    }
    MemoryRegionPtr send_mr;
    if (!(send_flags & IBV_SEND_INLINE)) {
        send_mr.reset(rdma_reg_msgs(id.get(), send_msg, kMessageSize));
        if (!send_mr) {
            std::perror("rdma_reg_msgs for send_msg");
            return -1;
        }
    }

    ret = rdma_post_recv(id.get(), nullptr, recv_msg, kMessageSize, recv_mr.get());
    if (ret) {
        std::perror("rdma_post_recv");
        return ret;
    }

    ret = rdma_connect(id.get(), nullptr);
    if (ret) {
        std::perror("rdma_connect");
        return ret;
    }
    ConnectionGuard connection(id.get());

    ret = rdma_post_send(id.get(), nullptr, send_msg, kMessageSize, send_mr.get(), send_flags);
    if (ret) {
        std::perror("rdma_post_send");
        return ret;
    }

    ibv_wc wc;
    while ((ret = rdma_get_send_comp(id.get(), &wc)) == 0)
        ;
    if (ret < 0) {
        std::perror("rdma_get_send_comp");
        return ret;
    }

    while ((ret = rdma_get_recv_comp(id.get(), &wc)) == 0)
        ;
    if (ret < 0) {
        std::perror("rdma_get_recv_comp");
        return ret;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int op;
    while ((op = getopt(argc, argv, "s:p:")) != -1) {
        switch (op) {
        case 's': server = optarg; break;
        case 'p': port = optarg; break;
        default:
            std::printf("usage: %s\n", argv[0]);
            std::printf("\t[-s server_address]\n");
            std::printf("\t[-p port_number]\n");
            std::exit(1);
        }
    }

    std::printf("rdma_client: start\n");
    int ret = run();
    std::printf("rdma_client: end %d\n", ret);
    return ret;
}
