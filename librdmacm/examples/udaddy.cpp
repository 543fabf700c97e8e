// udaddy: set up unreliable datagram (UD) paths with the RDMA CM (the SIDR
// exchange of "connect"/"accept" on a UDP-like port space), send a few
// datagrams each way, then tear everything down.
//
// The client learns the server's QPN and Q_Key from the ESTABLISHED event
// and sends message_count datagrams with the client's QPN as immediate
// data. The server answers each path with as many datagrams, addressed
// through an address handle made from the first completion it received.
// Messages, exit statuses and options are those of rdmacm-utils 44.

#include "cm_common.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <endian.h>
#include <netdb.h>
#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using namespace cm_examples;

using Node = UdNode;

struct Test {
    rdma_event_channel* channel = nullptr;
    std::vector<Node> nodes;
    int conn_index = 0;
    int connects_left = 0;
    rdma_addrinfo* rai = nullptr;
};

Test test;
int connections = 1;
int message_size = 100;
int message_count = 10;
const char* port = "7174";
bool set_tos = false;
uint8_t tos;
const char* dst_addr;
const char* src_addr;
rdma_addrinfo hints;

// Receive buffers leave room for the GRH in front of the payload.
constexpr std::size_t kGrhSize = sizeof(ibv_grh);

int create_message(Node& node) {
    if (!message_size)
        message_count = 0;
    if (!message_count)
        return 0;

    return create_message_buffer(node.pd, static_cast<std::size_t>(message_size) + kGrhSize, node.mem, node.mr);
}

// A datagram must fit the port's active MTU.
int verify_test_params(Node& node) { return check_datagram_size(node.cma_id, message_count, message_size, "udaddy"); }

int init_node(Node& node) {
    node.pd = ibv_alloc_pd(node.cma_id->verbs);
    if (!node.pd) {
        std::printf("udaddy: unable to allocate PD\n");
        return -ENOMEM;
    }

    int cqe = message_count ? message_count * 2 : 2;
    node.cq = ibv_create_cq(node.cma_id->verbs, cqe, &node, nullptr, 0);
    if (!node.cq) {
        std::printf("udaddy: unable to create CQ\n");
        return -ENOMEM;
    }

    ibv_qp_init_attr attr{};
    set_qp_shape(attr, IBV_QPT_UD, node.cq, node.cq, static_cast<uint32_t>(message_count ? message_count : 1), &node,
                 0);
    int ret = rdma_create_qp(node.cma_id, node.pd, &attr);
    if (ret) {
        std::perror("udaddy: unable to create QP");
        return ret;
    }

    ret = create_message(node);
    if (ret)
        std::printf("udaddy: failed to create messages: %d\n", ret);
    return ret;
}

void connect_error() { test.connects_left--; }

int addr_handler(Node& node) {
    if (set_tos && rdma_set_option(node.cma_id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)))
        std::perror("udaddy: set TOS option failed");

    int ret = rdma_resolve_route(node.cma_id, 2000);
    if (ret) {
        std::perror("udaddy: resolve route failed");
        connect_error();
    }
    return ret;
}

int route_handler(Node& node) {
    int ret = verify_test_params(node);
    if (!ret)
        ret = init_node(node);
    if (!ret)
        ret = post_ud_receives(node, message_size, message_count);
    if (!ret) {
        rdma_conn_param param{};
        param.private_data = test.rai->ai_connect;
        param.private_data_len = static_cast<uint8_t>(test.rai->ai_connect_len);
        ret = rdma_connect(node.cma_id, &param);
        if (ret)
            std::perror("udaddy: failure connecting");
    }
    if (ret)
        connect_error();
    return ret;
}

int connect_handler(rdma_cm_id* cma_id) {
    int ret;
    if (test.conn_index == connections) {
        ret = -ENOMEM;
    } else {
        Node& node = test.nodes[static_cast<std::size_t>(test.conn_index++)];
        node.cma_id = cma_id;
        cma_id->context = &node;

        ret = verify_test_params(node);
        if (!ret)
            ret = init_node(node);
        if (!ret)
            ret = post_ud_receives(node, message_size, message_count);
        if (!ret) {
            rdma_conn_param param{};
            param.qp_num = node.cma_id->qp->qp_num;
            ret = rdma_accept(node.cma_id, &param);
            if (ret)
                std::perror("udaddy: failure accepting");
        }
        if (!ret) {
            node.connected = true;
            test.connects_left--;
            return 0;
        }
        node.cma_id = nullptr;
        connect_error();
    }
    std::printf("udaddy: failing connection request\n");
    rdma_reject(cma_id, nullptr, 0);
    return ret;
}

// The client's path is complete once the server's QPN and Q_Key are known.
int resolved_handler(Node& node, const rdma_cm_event* event) {
    node.remote_qpn = event->param.ud.qp_num;
    node.remote_qkey = event->param.ud.qkey;
    node.ah = ibv_create_ah(node.pd, const_cast<ibv_ah_attr*>(&event->param.ud.ah_attr));
    if (!node.ah) {
        std::printf("udaddy: failure creating address handle\n");
        connect_error();
        return -1;
    }
    node.connected = true;
    test.connects_left--;
    return 0;
}

int cma_handler(rdma_cm_id* cma_id, rdma_cm_event* event) {
    int ret = 0;
    switch (event->event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: ret = addr_handler(*static_cast<Node*>(cma_id->context)); break;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: ret = route_handler(*static_cast<Node*>(cma_id->context)); break;
    case RDMA_CM_EVENT_CONNECT_REQUEST: ret = connect_handler(cma_id); break;
    case RDMA_CM_EVENT_ESTABLISHED: ret = resolved_handler(*static_cast<Node*>(cma_id->context), event); break;
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_REJECTED:
        std::printf("udaddy: event: %s, error: %d\n", rdma_event_str(event->event), event->status);
        connect_error();
        ret = event->status;
        break;
    default: break;
    }
    return ret;
}

bool alloc_nodes() {
    return cm_examples::alloc_nodes(test.nodes, connections, test.channel,
                                    static_cast<rdma_port_space>(hints.ai_port_space), dst_addr != nullptr,
                                    "udaddy: unable to allocate memory for test nodes");
}

void destroy_nodes() {
    for (Node& node : test.nodes)
        destroy_ud_node(node);
    test.nodes.clear();
}

// The server answers through an address handle built from the first
// datagram's completion and GRH, to the QPN carried as immediate data.
int create_reply_ah(Node& node, const ibv_wc& wc) {
    node.ah = ibv_create_ah_from_wc(node.pd, const_cast<ibv_wc*>(&wc), static_cast<ibv_grh*>(node.mem),
                                    node.cma_id->port_num);
    if (!node.ah)
        return -1;
    node.remote_qpn = be32toh(wc.imm_data);

    ibv_qp_attr attr;
    ibv_qp_init_attr init_attr;
    if (ibv_query_qp(node.cma_id->qp, &attr, IBV_QP_QKEY, &init_attr))
        return -1;
    node.remote_qkey = attr.qkey;
    return 0;
}

int poll_cqs() {
    ibv_wc wc[8];
    for (Node& node : test.nodes) {
        if (!node.connected)
            continue;
        for (int done = 0; done < message_count;) {
            int ret = ibv_poll_cq(node.cq, 8, wc);
            if (ret < 0) {
                std::printf("udaddy: failed polling CQ: %d\n", ret);
                return ret;
            }
            if (ret && !node.ah && create_reply_ah(node, wc[0])) {
                std::printf("udaddy: failed to create reply AH\n");
                return -1;
            }
            done += ret;
        }
    }
    return 0;
}

int connect_events() { return process_events(test.channel, test.connects_left, cma_handler); }

int run_server() {
    std::printf("udaddy: starting server\n");
    rdma_cm_id* listen_id;
    int ret = listen_on(test.channel, static_cast<rdma_port_space>(hints.ai_port_space), &test, src_addr, dst_addr,
                        port, hints, &test.rai, "udaddy", &listen_id);
    if (ret)
        return ret;

    // A failed request does not end the server's wait for the others.
    connect_events();

    if (message_count) {
        std::printf("receiving data transfers\n");
        ret = poll_cqs();
        if (ret)
            goto out;

        std::printf("sending replies\n");
        for (Node& node : test.nodes) {
            ret = post_ud_sends(node, IBV_SEND_SIGNALED, message_size, message_count);
            if (ret)
                goto out;
        }

        ret = poll_cqs();
        if (ret)
            goto out;
        std::printf("data transfers complete\n");
    }
out:
    rdma_destroy_id(listen_id);
    return ret;
}

int run_client() {
    std::printf("udaddy: starting client\n");

    int ret = start_connecting(test.nodes, src_addr, dst_addr, port, hints, &test.rai, "udaddy", test.connects_left);
    if (ret)
        return ret;

    ret = connect_events();
    if (ret)
        return ret;

    if (message_count) {
        std::printf("initiating data transfers\n");
        for (Node& node : test.nodes) {
            ret = post_ud_sends(node, 0, message_size, message_count);
            if (ret)
                return ret;
        }
        std::printf("receiving data transfers\n");
        ret = poll_cqs();
        if (ret)
            return ret;
        std::printf("data transfers complete\n");
    }
    return 0;
}

[[noreturn]] void usage(const char* argv0) {
    std::printf("usage: %s\n", argv0);
    std::printf("\t[-s server_address]\n");
    std::printf("\t[-b bind_address]\n");
    std::printf("\t[-f address_format]\n");
    std::printf("\t    name, ip, ipv6, or gid\n");
    std::printf("\t[-P port_space]\n");
    std::printf("\t    udp or ipoib\n");
    std::printf("\t[-c connections]\n");
    std::printf("\t[-C message_count]\n");
    std::printf("\t[-S message_size]\n");
    std::printf("\t[-t type_of_service]\n");
    std::printf("\t[-p port_space - %#x for UDP (default), %#x for IPOIB]\n", RDMA_PS_UDP, RDMA_PS_IPOIB);
    std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
    hints.ai_port_space = RDMA_PS_UDP;

    int op;
    while ((op = getopt(argc, argv, "s:b:c:C:S:t:p:P:f:")) != -1) {
        switch (op) {
        case 's': dst_addr = optarg; break;
        case 'b': src_addr = optarg; break;
        case 'c': connections = to_int(optarg); break;
        case 'C': message_count = to_int(optarg); break;
        case 'S': message_size = to_int(optarg); break;
        case 't':
            set_tos = true;
            tos = static_cast<uint8_t>(std::strtoul(optarg, nullptr, 0));
            break;
        case 'p':
            // The old way to pick the port space by number; -P names it.
            hints.ai_port_space = static_cast<int>(std::strtol(optarg, nullptr, 0));
            break;
        case 'f': parse_address_format(optarg, hints); break;
        case 'P':
            if (!strncasecmp("ipoib", optarg, 5))
                hints.ai_port_space = RDMA_PS_IPOIB;
            else if (strncasecmp("udp", optarg, 3))
                std::fprintf(stderr, "Warning: unknown port space format\n");
            break;
        default: usage(argv[0]);
        }
    }

    test.connects_left = connections;
    test.channel = create_first_event_channel();
    if (!test.channel)
        std::exit(1);
    if (!alloc_nodes())
        std::exit(1);

    int ret;
    if (dst_addr) {
        ret = run_client();
    } else {
        hints.ai_flags |= RAI_PASSIVE;
        ret = run_server();
    }

    std::printf("test complete\n");
    destroy_nodes();
    rdma_destroy_event_channel(test.channel);
    if (test.rai)
        rdma_freeaddrinfo(test.rai);

    std::printf("return status %d\n", ret);
    return ret;
}
