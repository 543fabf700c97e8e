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

struct Node {
	int id = 0;
	rdma_cm_id *cma_id = nullptr;
	bool connected = false;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_mr *mr = nullptr;
	ibv_ah *ah = nullptr;
	uint32_t remote_qpn = 0;
	uint32_t remote_qkey = 0;
	void *mem = nullptr;
};

struct Test {
	rdma_event_channel *channel = nullptr;
	std::vector<Node> nodes;
	int conn_index = 0;
	int connects_left = 0;
	rdma_addrinfo *rai = nullptr;
};

Test test;
int connections = 1;
int message_size = 100;
int message_count = 10;
const char *port = "7174";
bool set_tos = false;
uint8_t tos;
const char *dst_addr;
const char *src_addr;
rdma_addrinfo hints;

// Receive buffers leave room for the GRH in front of the payload.
constexpr std::size_t kGrhSize = sizeof(ibv_grh);

int create_message(Node &node)
{
	if (!message_size)
		message_count = 0;
	if (!message_count)
		return 0;

	const std::size_t length = static_cast<std::size_t>(message_size) + kGrhSize;
	node.mem = std::malloc(length);
	if (!node.mem) {
		std::printf("failed message allocation\n");
		return -1;
	}
	node.mr = ibv_reg_mr(node.pd, node.mem, length, IBV_ACCESS_LOCAL_WRITE);
	if (!node.mr) {
		std::printf("failed to reg MR\n");
		std::free(node.mem);
		node.mem = nullptr;
		return -1;
	}
	return 0;
}

// A datagram must fit the port's active MTU.
int verify_test_params(Node &node)
{
	ibv_port_attr port_attr;
	int ret = ibv_query_port(node.cma_id->verbs, node.cma_id->port_num, &port_attr);
	if (ret)
		return ret;
	const int mtu = 1 << (port_attr.active_mtu + 7);
	if (message_count && message_size > mtu) {
		std::printf("udaddy: message_size %d is larger than active mtu %d\n", message_size,
			    mtu);
		return -EINVAL;
	}
	return 0;
}

int init_node(Node &node)
{
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
	attr.cap.max_send_wr = static_cast<uint32_t>(message_count ? message_count : 1);
	attr.cap.max_recv_wr = static_cast<uint32_t>(message_count ? message_count : 1);
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.qp_context = &node;
	attr.sq_sig_all = 0;
	attr.qp_type = IBV_QPT_UD;
	attr.send_cq = node.cq;
	attr.recv_cq = node.cq;
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

int post_recvs(Node &node)
{
	if (!message_count)
		return 0;

	ibv_sge sge{};
	sge.length = static_cast<uint32_t>(static_cast<std::size_t>(message_size) + kGrhSize);
	sge.lkey = node.mr->lkey;
	sge.addr = reinterpret_cast<uintptr_t>(node.mem);

	ibv_recv_wr wr{};
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr_id = reinterpret_cast<uintptr_t>(&node);

	for (int i = 0; i < message_count; i++) {
		ibv_recv_wr *bad;
		int ret = ibv_post_recv(node.cma_id->qp, &wr, &bad);
		if (ret) {
			std::printf("failed to post receives: %d\n", ret);
			return ret;
		}
	}
	return 0;
}

// Each datagram carries the sender's QPN as immediate data, which is how
// the server learns where to answer.
int post_sends(Node &node, unsigned int send_flags)
{
	if (!node.connected || !message_count)
		return 0;

	ibv_sge sge{};
	sge.length = static_cast<uint32_t>(message_size);
	sge.lkey = node.mr->lkey;
	sge.addr = reinterpret_cast<uintptr_t>(node.mem);

	ibv_send_wr wr{};
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.send_flags = send_flags;
	wr.wr_id = reinterpret_cast<uintptr_t>(&node);
	wr.imm_data = htobe32(node.cma_id->qp->qp_num);
	wr.wr.ud.ah = node.ah;
	wr.wr.ud.remote_qpn = node.remote_qpn;
	wr.wr.ud.remote_qkey = node.remote_qkey;

	int ret = 0;
	for (int i = 0; i < message_count && !ret; i++) {
		ibv_send_wr *bad;
		ret = ibv_post_send(node.cma_id->qp, &wr, &bad);
		if (ret)
			std::printf("failed to post sends: %d\n", ret);
	}
	return ret;
}

void connect_error()
{
	test.connects_left--;
}

int addr_handler(Node &node)
{
	if (set_tos && rdma_set_option(node.cma_id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
				       sizeof(tos)))
		std::perror("udaddy: set TOS option failed");

	int ret = rdma_resolve_route(node.cma_id, 2000);
	if (ret) {
		std::perror("udaddy: resolve route failed");
		connect_error();
	}
	return ret;
}

int route_handler(Node &node)
{
	int ret = verify_test_params(node);
	if (!ret)
		ret = init_node(node);
	if (!ret)
		ret = post_recvs(node);
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

int connect_handler(rdma_cm_id *cma_id)
{
	int ret;
	if (test.conn_index == connections) {
		ret = -ENOMEM;
	} else {
		Node &node = test.nodes[static_cast<std::size_t>(test.conn_index++)];
		node.cma_id = cma_id;
		cma_id->context = &node;

		ret = verify_test_params(node);
		if (!ret)
			ret = init_node(node);
		if (!ret)
			ret = post_recvs(node);
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
int resolved_handler(Node &node, const rdma_cm_event *event)
{
	node.remote_qpn = event->param.ud.qp_num;
	node.remote_qkey = event->param.ud.qkey;
	node.ah = ibv_create_ah(node.pd, const_cast<ibv_ah_attr *>(&event->param.ud.ah_attr));
	if (!node.ah) {
		std::printf("udaddy: failure creating address handle\n");
		connect_error();
		return -1;
	}
	node.connected = true;
	test.connects_left--;
	return 0;
}

int cma_handler(rdma_cm_id *cma_id, rdma_cm_event *event)
{
	int ret = 0;
	switch (event->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = addr_handler(*static_cast<Node *>(cma_id->context));
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = route_handler(*static_cast<Node *>(cma_id->context));
		break;
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		ret = connect_handler(cma_id);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		ret = resolved_handler(*static_cast<Node *>(cma_id->context), event);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		std::printf("udaddy: event: %s, error: %d\n", rdma_event_str(event->event),
			    event->status);
		connect_error();
		ret = event->status;
		break;
	default:
		break;
	}
	return ret;
}

void destroy_node(Node &node)
{
	if (!node.cma_id)
		return;
	if (node.ah)
		ibv_destroy_ah(node.ah);
	if (node.cma_id->qp)
		rdma_destroy_qp(node.cma_id);
	if (node.cq)
		ibv_destroy_cq(node.cq);
	if (node.mem) {
		ibv_dereg_mr(node.mr);
		std::free(node.mem);
	}
	if (node.pd)
		ibv_dealloc_pd(node.pd);
	rdma_destroy_id(node.cma_id);
}

bool alloc_nodes()
{
	if (connections < 0) {
		std::printf("udaddy: unable to allocate memory for test nodes\n");
		return false;
	}
	test.nodes.assign(static_cast<std::size_t>(connections), Node{});
	for (int i = 0; i < connections; i++) {
		Node &node = test.nodes[static_cast<std::size_t>(i)];
		node.id = i;
		if (dst_addr && rdma_create_id(test.channel, &node.cma_id, &node,
						     static_cast<rdma_port_space>(hints.ai_port_space))) {
			while (--i >= 0)
				rdma_destroy_id(test.nodes[static_cast<std::size_t>(i)].cma_id);
			test.nodes.clear();
			return false;
		}
	}
	return true;
}

void destroy_nodes()
{
	for (Node &node : test.nodes)
		destroy_node(node);
	test.nodes.clear();
}

// The server answers through an address handle built from the first
// datagram's completion and GRH, to the QPN carried as immediate data.
int create_reply_ah(Node &node, const ibv_wc &wc)
{
	node.ah = ibv_create_ah_from_wc(node.pd, const_cast<ibv_wc *>(&wc),
					static_cast<ibv_grh *>(node.mem), node.cma_id->port_num);
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

int poll_cqs()
{
	ibv_wc wc[8];
	for (Node &node : test.nodes) {
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

int connect_events()
{
	int ret = 0;
	while (test.connects_left && !ret) {
		rdma_cm_event *event;
		ret = rdma_get_cm_event(test.channel, &event);
		if (!ret) {
			ret = cma_handler(event->id, event);
			rdma_ack_cm_event(event);
		}
	}
	return ret;
}

int run_server()
{
	std::printf("udaddy: starting server\n");
	rdma_cm_id *listen_id;
	int ret = rdma_create_id(test.channel, &listen_id, &test,
				 static_cast<rdma_port_space>(hints.ai_port_space));
	if (ret) {
		std::perror("udaddy: listen request failed");
		return ret;
	}

	ret = get_rdma_addr(src_addr, dst_addr, port, &hints, &test.rai);
	if (ret) {
		std::printf("udaddy: getrdmaaddr error: %s\n", gai_strerror(ret));
		goto out;
	}
	ret = rdma_bind_addr(listen_id, test.rai->ai_src_addr);
	if (ret) {
		std::perror("udaddy: bind address failed");
		goto out;
	}
	ret = rdma_listen(listen_id, 0);
	if (ret) {
		std::perror("udaddy: failure trying to listen");
		goto out;
	}

	// A failed request does not end the server's wait for the others.
	connect_events();

	if (message_count) {
		std::printf("receiving data transfers\n");
		ret = poll_cqs();
		if (ret)
			goto out;

		std::printf("sending replies\n");
		for (Node &node : test.nodes) {
			ret = post_sends(node, IBV_SEND_SIGNALED);
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

int run_client()
{
	std::printf("udaddy: starting client\n");

	int ret = get_rdma_addr(src_addr, dst_addr, port, &hints, &test.rai);
	if (ret) {
		std::printf("udaddy: getaddrinfo error: %s\n", gai_strerror(ret));
		return ret;
	}

	std::printf("udaddy: connecting\n");
	for (Node &node : test.nodes) {
		ret = rdma_resolve_addr(node.cma_id, test.rai->ai_src_addr, test.rai->ai_dst_addr,
					2000);
		if (ret) {
			std::perror("udaddy: failure getting addr");
			connect_error();
			return ret;
		}
	}

	ret = connect_events();
	if (ret)
		return ret;

	if (message_count) {
		std::printf("initiating data transfers\n");
		for (Node &node : test.nodes) {
			ret = post_sends(node, 0);
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

[[noreturn]] void usage(const char *argv0)
{
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
	std::printf("\t[-p port_space - %#x for UDP (default), %#x for IPOIB]\n", RDMA_PS_UDP,
		    RDMA_PS_IPOIB);
	std::exit(1);
}

} // namespace

int main(int argc, char **argv)
{
	hints.ai_port_space = RDMA_PS_UDP;

	int op;
	while ((op = getopt(argc, argv, "s:b:c:C:S:t:p:P:f:")) != -1) {
		switch (op) {
		case 's':
			dst_addr = optarg;
			break;
		case 'b':
			src_addr = optarg;
			break;
		case 'c':
			connections = to_int(optarg);
			break;
		case 'C':
			message_count = to_int(optarg);
			break;
		case 'S':
			message_size = to_int(optarg);
			break;
		case 't':
			set_tos = true;
			tos = static_cast<uint8_t>(std::strtoul(optarg, nullptr, 0));
			break;
		case 'p':
			// The old way to pick the port space by number; -P names it.
			hints.ai_port_space = static_cast<int>(std::strtol(optarg, nullptr, 0));
			break;
		case 'f':
			if (!strncasecmp("ip", optarg, 2)) {
				hints.ai_flags = RAI_NUMERICHOST;
			} else if (!strncasecmp("gid", optarg, 3)) {
				hints.ai_flags = RAI_NUMERICHOST | RAI_FAMILY;
				hints.ai_family = AF_IB;
			} else if (strncasecmp("name", optarg, 4)) {
				std::fprintf(stderr, "Warning: unknown address format\n");
			}
			break;
		case 'P':
			if (!strncasecmp("ipoib", optarg, 5))
				hints.ai_port_space = RDMA_PS_IPOIB;
			else if (strncasecmp("udp", optarg, 3))
				std::fprintf(stderr, "Warning: unknown port space format\n");
			break;
		default:
			usage(argv[0]);
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
