// mckey: join a multicast group through the RDMA CM on one or more UD queue
// pairs, then either send datagrams to the group (-s) or receive them.
//
// Each QP resolves the group address (or, with -M, joins a raw MGID
// directly), joins, creates an address handle from the join event and then
// waits three seconds so the fabric can set the group up before any data
// flows. Receivers wait for message_count datagrams per QP. A thread keeps
// reading CM events after the joins and reports multicast errors and
// address changes. Messages, exit statuses and options are those of
// rdmacm-utils 44.

#include "cm_common.h"

#include <infiniband/ib.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <arpa/inet.h>
#include <endian.h>
#include <netdb.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
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
    int connects_left = 0;
    sockaddr_storage dst_in{};
    sockaddr* dst_addr = nullptr;
    sockaddr_storage src_in{};
    sockaddr* src_addr = nullptr;
};

Test test;
int connections = 1;
int message_size = 100;
int message_count = 10;
bool is_sender = false;
bool send_only = false;
bool loopback = true;
bool unmapped_addr = false;
const char* dst_addr;
const char* src_addr;
int port_space = RDMA_PS_UDP;

constexpr std::size_t kGrhSize = sizeof(ibv_grh);

int create_message(Node& node) {
    if (!message_size)
        message_count = 0;
    if (!message_count)
        return 0;

    return create_message_buffer(node.pd, static_cast<std::size_t>(message_size) + kGrhSize, node.mem, node.mr);
}

int verify_test_params(Node& node) { return check_datagram_size(node.cma_id, message_count, message_size, "mckey"); }

int init_node(Node& node) {
    node.pd = ibv_alloc_pd(node.cma_id->verbs);
    if (!node.pd) {
        std::printf("mckey: unable to allocate PD\n");
        return -ENOMEM;
    }

    int cqe = message_count ? message_count * 2 : 2;
    node.cq = ibv_create_cq(node.cma_id->verbs, cqe, &node, nullptr, 0);
    if (!node.cq) {
        std::printf("mckey: unable to create CQ\n");
        return -ENOMEM;
    }

    const auto depth = static_cast<uint32_t>(message_count ? message_count : 1);
    int ret;
    if (loopback) {
        ibv_qp_init_attr attr{};
        set_qp_shape(attr, IBV_QPT_UD, node.cq, node.cq, depth, &node, 0);
        ret = rdma_create_qp(node.cma_id, node.pd, &attr);
    } else {
        // -l: the QP must not see its own group's traffic.
        ibv_qp_init_attr_ex attr{};
        set_qp_shape(attr, IBV_QPT_UD, node.cq, node.cq, depth, &node, 0);
        attr.comp_mask = IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_PD;
        attr.pd = node.pd;
        attr.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
        ret = rdma_create_qp_ex(node.cma_id, &attr);
    }
    if (ret) {
        std::perror("mckey: unable to create QP");
        return ret;
    }

    ret = create_message(node);
    if (ret)
        std::printf("mckey: failed to create messages: %d\n", ret);
    return ret;
}

void connect_error() { test.connects_left--; }

// The group address is known: set the QP up and join.
int addr_handler(Node& node) {
    int ret = verify_test_params(node);
    if (!ret)
        ret = init_node(node);
    if (!ret && !is_sender)
        ret = post_ud_receives(node, message_size, message_count);
    if (!ret) {
        rdma_cm_join_mc_attr_ex attr{};
        attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
        attr.addr = test.dst_addr;
        attr.join_flags = send_only ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER : RDMA_MC_JOIN_FLAG_FULLMEMBER;
        ret = rdma_join_multicast_ex(node.cma_id, &attr, &node);
        if (ret)
            std::perror("mckey: failure joining");
    }
    if (ret)
        connect_error();
    return ret;
}

int join_handler(Node& node, const rdma_ud_param& param) {
    char gid[40];
    inet_ntop(AF_INET6, param.ah_attr.grh.dgid.raw, gid, sizeof(gid));
    std::printf("mckey: joined dgid: %s mlid 0x%x sl %d\n", gid, param.ah_attr.dlid, param.ah_attr.sl);

    node.remote_qpn = param.qp_num;
    node.remote_qkey = param.qkey;
    node.ah = ibv_create_ah(node.pd, const_cast<ibv_ah_attr*>(&param.ah_attr));
    if (!node.ah) {
        std::printf("mckey: failure creating address handle\n");
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
    case RDMA_CM_EVENT_MULTICAST_JOIN: ret = join_handler(*static_cast<Node*>(cma_id->context), event->param.ud); break;
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_MULTICAST_ERROR:
        std::printf("mckey: event: %s, error: %d\n", rdma_event_str(event->event), event->status);
        connect_error();
        ret = event->status;
        break;
    default: break;
    }
    return ret;
}

// Set before main closes the event channel under cma_thread, which may not
// have reached its read yet and must then end quietly.
std::atomic<bool> channel_closing{false};

// Reports group trouble after the joins; never joined, it ends with the
// process.
void* cma_thread(void*) {
    for (;;) {
        rdma_cm_event* event;
        if (rdma_get_cm_event(test.channel, &event)) {
            if (!channel_closing)
                std::perror("rdma_get_cm_event");
            break;
        }
        switch (event->event) {
        case RDMA_CM_EVENT_MULTICAST_ERROR:
        case RDMA_CM_EVENT_ADDR_CHANGE:
            std::printf("mckey: event: %s, status: %d\n", rdma_event_str(event->event), event->status);
            break;
        default: break;
        }
        rdma_ack_cm_event(event);
    }
    return nullptr;
}

bool alloc_nodes() {
    return cm_examples::alloc_nodes(test.nodes, connections, test.channel, static_cast<rdma_port_space>(port_space),
                                    true, "mckey: unable to allocate memory for test nodes");
}

void destroy_nodes() {
    for (Node& node : test.nodes)
        destroy_ud_node(node);
    test.nodes.clear();
}

int poll_cqs() {
    ibv_wc wc[8];
    for (Node& node : test.nodes) {
        if (!node.connected)
            continue;
        for (int done = 0; done < message_count;) {
            int ret = ibv_poll_cq(node.cq, 8, wc);
            if (ret < 0) {
                std::printf("mckey: failed polling CQ: %d\n", ret);
                return ret;
            }
            done += ret;
        }
    }
    return 0;
}

int connect_events() { return process_events(test.channel, test.connects_left, cma_handler); }

// getaddrinfo() without hints; the first answer is taken whole.
int get_addr(const char* name, sockaddr_storage* addr) {
    addrinfo* res;
    int ret = getaddrinfo(name, nullptr, nullptr, &res);
    if (ret) {
        std::printf("getaddrinfo failed (%s) - invalid hostname or IP address\n", gai_strerror(ret));
        return ret;
    }
    std::memcpy(addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

// -M takes an MGID in IPv6 notation, joined as an AF_IB address.
int get_dst_addr(const char* name, sockaddr_storage* addr) {
    if (!unmapped_addr)
        return get_addr(name, addr);

    auto* sib = reinterpret_cast<sockaddr_ib*>(addr);
    *sib = sockaddr_ib{};
    sib->sib_family = AF_IB;
    inet_pton(AF_INET6, name, &sib->sib_addr);
    return 0;
}

int run() {
    std::printf("mckey: starting %s\n", is_sender ? "client" : "server");
    int ret;
    if (src_addr) {
        ret = get_addr(src_addr, &test.src_in);
        if (ret)
            return ret;
    }
    ret = get_dst_addr(dst_addr, &test.dst_in);
    if (ret)
        return ret;

    std::printf("mckey: joining\n");
    for (Node& node : test.nodes) {
        if (src_addr) {
            ret = rdma_bind_addr(node.cma_id, test.src_addr);
            if (ret) {
                std::perror("mckey: addr bind failure");
                connect_error();
                return ret;
            }
        }
        if (unmapped_addr)
            ret = addr_handler(node);
        else
            ret = rdma_resolve_addr(node.cma_id, test.src_addr, test.dst_addr, 2000);
        if (ret) {
            std::perror("mckey: resolve addr failure");
            connect_error();
            return ret;
        }
    }

    ret = connect_events();
    if (!ret) {
        pthread_t thread;
        pthread_create(&thread, nullptr, cma_thread, nullptr);

        // Give the subnet manager time to program the switches: this
        // test does not deal with datagrams lost meanwhile.
        sleep(3);

        if (message_count) {
            if (is_sender) {
                std::printf("initiating data transfers\n");
                for (Node& node : test.nodes) {
                    ret = post_ud_sends(node, 0, message_size, message_count);
                    if (ret)
                        break;
                }
            } else {
                std::printf("receiving data transfers\n");
                ret = poll_cqs();
            }
            if (!ret)
                std::printf("data transfers complete\n");
        }
    }

    // The status of the last leave is what the test returns, as in the
    // reference.
    for (Node& node : test.nodes) {
        ret = rdma_leave_multicast(node.cma_id, test.dst_addr);
        if (ret)
            std::perror("mckey: failure leaving");
    }
    return ret;
}

[[noreturn]] void usage(const char* argv0) {
    std::printf("usage: %s\n", argv0);
    std::printf("\t-m multicast_address\n");
    std::printf("\t[-M unmapped_multicast_address]\n"
                "\t replaces -m and requires -b\n");
    std::printf("\t[-s(ender)]\n");
    std::printf("\t[-b bind_address]\n");
    std::printf("\t[-c connections]\n");
    std::printf("\t[-C message_count]\n");
    std::printf("\t[-S message_size]\n");
    std::printf("\t[-p port_space - %#x for UDP (default), %#x for IPOIB]\n", RDMA_PS_UDP, RDMA_PS_IPOIB);
    std::printf("\t[-o join as a send-only full-member]\n");
    std::printf("\t[-l join without multicast loopback]\n");
    std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
    int op;
    while ((op = getopt(argc, argv, "m:M:sb:c:C:S:p:ol")) != -1) {
        switch (op) {
        case 'm': dst_addr = optarg; break;
        case 'M':
            unmapped_addr = true;
            dst_addr = optarg;
            break;
        case 's': is_sender = true; break;
        case 'b':
            src_addr = optarg;
            test.src_addr = reinterpret_cast<sockaddr*>(&test.src_in);
            break;
        case 'c': connections = to_int(optarg); break;
        case 'C': message_count = to_int(optarg); break;
        case 'S': message_size = to_int(optarg); break;
        case 'p': port_space = static_cast<int>(std::strtol(optarg, nullptr, 0)); break;
        case 'o': send_only = true; break;
        case 'l': loopback = false; break;
        default: usage(argv[0]);
        }
    }

    if (unmapped_addr && !src_addr) {
        std::printf("unmapped multicast address requires binding to source address\n");
        std::exit(1);
    }

    test.dst_addr = reinterpret_cast<sockaddr*>(&test.dst_in);
    test.connects_left = connections;
    test.channel = create_first_event_channel();
    if (!test.channel)
        std::exit(1);
    if (!alloc_nodes())
        std::exit(1);

    int ret = run();

    std::printf("test complete\n");
    destroy_nodes();
    channel_closing = true;
    rdma_destroy_event_channel(test.channel);

    std::printf("return status %d\n", ret);
    return ret;
}
