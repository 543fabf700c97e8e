// ucmatose: set up RC connections with the RDMA CM, trade a few messages
// over each, and tear them down again.
//
// The server sends message_count messages of message_size bytes on every
// connection and then receives as many; the client receives first and
// answers with the same number. The server then disconnects and both sides
// wait for the disconnect events. Option parsing, messages and exit
// statuses are those of rdmacm-utils 44 (installed as "ucmatose"; the
// messages call it "cmatose"). Everything runs on the main thread, driven
// by CM events; completions are busy-polled.

#include "cm_common.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

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

enum CqIndex { kSendCq, kRecvCq };

// One connection.
struct Node {
    int id = 0;
    rdma_cm_id* cma_id = nullptr;
    bool connected = false;
    ibv_pd* pd = nullptr;
    ibv_cq* cq[2] = {nullptr, nullptr};
    ibv_mr* mr = nullptr;
    void* mem = nullptr;
};

struct Test {
    rdma_event_channel* channel = nullptr;
    std::vector<Node> nodes;
    int conn_index = 0;
    int connects_left = 0;
    int disconnects_left = 0;
    rdma_addrinfo* rai = nullptr;
};

Test test;
int connections = 1;
int message_size = 100;
int message_count = 10;
const char* port = "7471";
bool set_tos = false;
uint8_t tos;
bool set_timeout = false;
uint8_t timeout;
bool migrate = false;
const char* dst_addr;
const char* src_addr;
rdma_addrinfo hints;

// A zero size means no transfers at all.
int create_message(Node& node) {
    if (!message_size)
        message_count = 0;
    if (!message_count)
        return 0;

    return create_message_buffer(node.pd, static_cast<std::size_t>(message_size), node.mem, node.mr);
}

int init_node(Node& node) {
    node.pd = ibv_alloc_pd(node.cma_id->verbs);
    if (!node.pd) {
        std::printf("cmatose: unable to allocate PD\n");
        return -ENOMEM;
    }

    int cqe = message_count ? message_count : 1;
    node.cq[kSendCq] = ibv_create_cq(node.cma_id->verbs, cqe, &node, nullptr, 0);
    node.cq[kRecvCq] = ibv_create_cq(node.cma_id->verbs, cqe, &node, nullptr, 0);
    if (!node.cq[kSendCq] || !node.cq[kRecvCq]) {
        std::printf("cmatose: unable to create CQ\n");
        return -ENOMEM;
    }

    ibv_qp_init_attr attr{};
    set_qp_shape(attr, IBV_QPT_RC, node.cq[kSendCq], node.cq[kRecvCq], static_cast<uint32_t>(cqe), &node, 1);
    int ret = rdma_create_qp(node.cma_id, node.pd, &attr);
    if (ret) {
        std::perror("cmatose: unable to create QP");
        return ret;
    }

    ret = create_message(node);
    if (ret)
        std::printf("cmatose: failed to create messages: %d\n", ret);
    return ret;
}

int post_recvs(Node& node) {
    if (!message_count)
        return 0;
    return post_receives(node.cma_id->qp, node.mr, node.mem, static_cast<uint32_t>(message_size),
                         reinterpret_cast<uintptr_t>(&node), message_count);
}

int post_sends(Node& node) {
    if (!node.connected || !message_count)
        return 0;

    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = 0;
    wr.wr_id = reinterpret_cast<uintptr_t>(&node);
    return post_send_batch(node.cma_id->qp, node.mr, node.mem, static_cast<uint32_t>(message_size), wr, message_count);
}

void connect_error() { test.connects_left--; }

// Options on the id go in before the route is resolved; a failure to set
// one is reported and otherwise ignored.
int addr_handler(Node& node) {
    if (set_tos && rdma_set_option(node.cma_id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)))
        std::perror("cmatose: set TOS option failed");
    if (set_timeout &&
        rdma_set_option(node.cma_id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof(timeout)))
        std::perror("cmatose: set ack timeout option failed");

    int ret = rdma_resolve_route(node.cma_id, 2000);
    if (ret) {
        std::perror("cmatose: resolve route failed");
        connect_error();
    }
    return ret;
}

int route_handler(Node& node) {
    int ret = init_node(node);
    if (!ret)
        ret = post_recvs(node);
    if (!ret) {
        rdma_conn_param param{};
        param.responder_resources = 1;
        param.initiator_depth = 1;
        param.retry_count = 5;
        param.private_data = test.rai->ai_connect;
        param.private_data_len = static_cast<uint8_t>(test.rai->ai_connect_len);
        ret = rdma_connect(node.cma_id, &param);
        if (ret)
            std::perror("cmatose: failure connecting");
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

        ret = init_node(node);
        if (!ret) {
            if (set_timeout &&
                rdma_set_option(node.cma_id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof(timeout)))
                std::perror("cmatose: set ack timeout option failed");
            ret = post_recvs(node);
        }
        if (!ret) {
            ret = rdma_accept(node.cma_id, nullptr);
            if (ret)
                std::perror("cmatose: failure accepting");
        }
        if (!ret)
            return 0;
        // The node's resources stay for destroy_nodes; only the id goes.
        node.cma_id = nullptr;
        connect_error();
    }
    std::printf("cmatose: failing connection request\n");
    rdma_reject(cma_id, nullptr, 0);
    return ret;
}

int cma_handler(rdma_cm_id* cma_id, rdma_cm_event* event) {
    int ret = 0;
    switch (event->event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: ret = addr_handler(*static_cast<Node*>(cma_id->context)); break;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: ret = route_handler(*static_cast<Node*>(cma_id->context)); break;
    case RDMA_CM_EVENT_CONNECT_REQUEST: ret = connect_handler(cma_id); break;
    case RDMA_CM_EVENT_ESTABLISHED:
        static_cast<Node*>(cma_id->context)->connected = true;
        test.connects_left--;
        test.disconnects_left++;
        break;
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_REJECTED:
        std::printf("cmatose: event: %s, error: %d\n", rdma_event_str(event->event), event->status);
        connect_error();
        ret = event->status;
        break;
    case RDMA_CM_EVENT_DISCONNECTED:
        rdma_disconnect(cma_id);
        test.disconnects_left--;
        break;
    default:
        // Device removal included: everything is cleaned up at the end.
        break;
    }
    return ret;
}

// Device resources first, the id last.
void destroy_node(Node& node) { destroy_node_resources(node.cma_id, nullptr, node.cq, node.mr, node.mem, node.pd); }

// The client's ids are made up front; the server's come with the requests.
bool alloc_nodes() {
    return cm_examples::alloc_nodes(test.nodes, connections, test.channel,
                                    static_cast<rdma_port_space>(hints.ai_port_space), dst_addr != nullptr,
                                    "cmatose: unable to allocate memory for test nodes");
}

void destroy_nodes() {
    for (Node& node : test.nodes)
        destroy_node(node);
    test.nodes.clear();
}

// Waits for message_count completions on the chosen CQ of every connected
// node (busy polling, as the reference does).
int poll_cqs(CqIndex index) {
    ibv_wc wc[8];
    for (Node& node : test.nodes) {
        if (!node.connected)
            continue;
        for (int done = 0; done < message_count;) {
            int ret = ibv_poll_cq(node.cq[index], 8, wc);
            if (ret < 0) {
                std::printf("cmatose: failed polling CQ: %d\n", ret);
                return ret;
            }
            done += ret;
        }
    }
    return 0;
}

int connect_events() {
    return process_events(test.channel, test.connects_left, cma_handler,
                          "cmatose: failure in rdma_get_cm_event in connect events");
}

int disconnect_events() {
    return process_events(test.channel, test.disconnects_left, cma_handler,
                          "cmatose: failure in rdma_get_cm_event in disconnect events");
}

// -m: every id moves to a fresh channel before the disconnects.
int migrate_channel(rdma_cm_id* listen_id) {
    std::printf("migrating to new event channel\n");

    rdma_event_channel* channel = rdma_create_event_channel();
    if (!channel) {
        std::perror("cmatose: failed to create event channel");
        return -1;
    }

    int ret = 0;
    if (listen_id)
        ret = rdma_migrate_id(listen_id, channel);
    for (int i = 0; i < connections && !ret; i++)
        ret = rdma_migrate_id(test.nodes[static_cast<std::size_t>(i)].cma_id, channel);

    if (!ret) {
        rdma_destroy_event_channel(test.channel);
        test.channel = channel;
    } else {
        std::perror("cmatose: failure migrating to channel");
    }
    return ret;
}

int run_server() {
    std::printf("cmatose: starting server\n");
    rdma_cm_id* listen_id;
    int ret = listen_on(test.channel, static_cast<rdma_port_space>(hints.ai_port_space), &test, src_addr, dst_addr,
                        port, hints, &test.rai, "cmatose", &listen_id);
    if (ret)
        return ret;

    ret = connect_events();
    if (ret)
        goto out;

    if (message_count) {
        std::printf("initiating data transfers\n");
        for (Node& node : test.nodes) {
            ret = post_sends(node);
            if (ret)
                goto out;
        }
        std::printf("completing sends\n");
        ret = poll_cqs(kSendCq);
        if (ret)
            goto out;
        std::printf("receiving data transfers\n");
        ret = poll_cqs(kRecvCq);
        if (ret)
            goto out;
        std::printf("data transfers complete\n");
    }

    if (migrate) {
        ret = migrate_channel(listen_id);
        if (ret)
            goto out;
    }

    std::printf("cmatose: disconnecting\n");
    for (Node& node : test.nodes) {
        if (!node.connected)
            continue;
        node.connected = false;
        rdma_disconnect(node.cma_id);
    }
    ret = disconnect_events();
    std::printf("disconnected\n");

out:
    rdma_destroy_id(listen_id);
    return ret;
}

int run_client() {
    std::printf("cmatose: starting client\n");

    int ret = start_connecting(test.nodes, src_addr, dst_addr, port, hints, &test.rai, "cmatose", test.connects_left);
    if (ret)
        return ret;

    ret = connect_events();
    if (!ret && message_count) {
        std::printf("receiving data transfers\n");
        ret = poll_cqs(kRecvCq);
        if (!ret) {
            std::printf("sending replies\n");
            for (Node& node : test.nodes) {
                ret = post_sends(node);
                if (ret)
                    break;
            }
        }
        if (!ret)
            std::printf("data transfers complete\n");
    }

    if (!ret && migrate) {
        ret = migrate_channel(nullptr);
        if (ret)
            return ret;
    }

    int ret2 = disconnect_events();
    return ret2 ? ret2 : ret;
}

[[noreturn]] void usage(const char* argv0) {
    std::printf("usage: %s\n", argv0);
    std::printf("\t[-s server_address]\n");
    std::printf("\t[-b bind_address]\n");
    std::printf("\t[-f address_format]\n");
    std::printf("\t    name, ip, ipv6, or gid\n");
    std::printf("\t[-P port_space]\n");
    std::printf("\t    tcp or ib\n");
    std::printf("\t[-c connections]\n");
    std::printf("\t[-C message_count]\n");
    std::printf("\t[-S message_size]\n");
    std::printf("\t[-t type_of_service]\n");
    std::printf("\t[-p port_number]\n");
    std::printf("\t[-m(igrate)]\n");
    std::printf("\t[-a ack_timeout]\n");
    std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
    hints.ai_port_space = RDMA_PS_TCP;

    int op;
    while ((op = getopt(argc, argv, "s:b:f:P:c:C:S:t:p:a:m")) != -1) {
        switch (op) {
        case 's': dst_addr = optarg; break;
        case 'b': src_addr = optarg; break;
        case 'f': parse_address_format(optarg, hints); break;
        case 'P':
            if (!strncasecmp("ib", optarg, 2))
                hints.ai_port_space = RDMA_PS_IB;
            else if (strncasecmp("tcp", optarg, 3))
                std::fprintf(stderr, "Warning: unknown port space format\n");
            break;
        case 'c': connections = to_int(optarg); break;
        case 'C': message_count = to_int(optarg); break;
        case 'S': message_size = to_int(optarg); break;
        case 't':
            set_tos = true;
            tos = static_cast<uint8_t>(std::strtoul(optarg, nullptr, 0));
            break;
        case 'p': port = optarg; break;
        case 'a':
            set_timeout = true;
            timeout = static_cast<uint8_t>(std::strtoul(optarg, nullptr, 0));
            break;
        case 'm': migrate = true; break;
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
