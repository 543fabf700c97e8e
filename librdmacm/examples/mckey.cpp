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
	int connects_left = 0;
	sockaddr_storage dst_in{};
	sockaddr *dst_addr = nullptr;
	sockaddr_storage src_in{};
	sockaddr *src_addr = nullptr;
};

Test test;
int connections = 1;
int message_size = 100;
int message_count = 10;
bool is_sender = false;
bool send_only = false;
bool loopback = true;
bool unmapped_addr = false;
const char *dst_addr;
const char *src_addr;
int port_space = RDMA_PS_UDP;

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

int verify_test_params(Node &node)
{
	ibv_port_attr port_attr;
	int ret = ibv_query_port(node.cma_id->verbs, node.cma_id->port_num, &port_attr);
	if (ret)
		return ret;
	const int mtu = 1 << (port_attr.active_mtu + 7);
	if (message_count && message_size > mtu) {
		std::printf("mckey: message_size %d is larger than active mtu %d\n", message_size,
			    mtu);
		return -EINVAL;
	}
	return 0;
}

int init_node(Node &node)
{
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
		attr.cap.max_send_wr = depth;
		attr.cap.max_recv_wr = depth;
		attr.cap.max_send_sge = 1;
		attr.cap.max_recv_sge = 1;
		attr.qp_context = &node;
		attr.sq_sig_all = 0;
		attr.qp_type = IBV_QPT_UD;
		attr.send_cq = node.cq;
		attr.recv_cq = node.cq;
		ret = rdma_create_qp(node.cma_id, node.pd, &attr);
	} else {
		// -l: the QP must not see its own group's traffic.
		ibv_qp_init_attr_ex attr{};
		attr.cap.max_send_wr = depth;
		attr.cap.max_recv_wr = depth;
		attr.cap.max_send_sge = 1;
		attr.cap.max_recv_sge = 1;
		attr.qp_context = &node;
		attr.sq_sig_all = 0;
		attr.qp_type = IBV_QPT_UD;
		attr.send_cq = node.cq;
		attr.recv_cq = node.cq;
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

// The group address is known: set the QP up and join.
int addr_handler(Node &node)
{
	int ret = verify_test_params(node);
	if (!ret)
		ret = init_node(node);
	if (!ret && !is_sender)
		ret = post_recvs(node);
	if (!ret) {
		rdma_cm_join_mc_attr_ex attr{};
		attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
		attr.addr = test.dst_addr;
		attr.join_flags = send_only ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
					    : RDMA_MC_JOIN_FLAG_FULLMEMBER;
		ret = rdma_join_multicast_ex(node.cma_id, &attr, &node);
		if (ret)
			std::perror("mckey: failure joining");
	}
	if (ret)
		connect_error();
	return ret;
}

int join_handler(Node &node, const rdma_ud_param &param)
{
	char gid[40];
	inet_ntop(AF_INET6, param.ah_attr.grh.dgid.raw, gid, sizeof(gid));
	std::printf("mckey: joined dgid: %s mlid 0x%x sl %d\n", gid, param.ah_attr.dlid,
		    param.ah_attr.sl);

	node.remote_qpn = param.qp_num;
	node.remote_qkey = param.qkey;
	node.ah = ibv_create_ah(node.pd, const_cast<ibv_ah_attr *>(&param.ah_attr));
	if (!node.ah) {
		std::printf("mckey: failure creating address handle\n");
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
	case RDMA_CM_EVENT_MULTICAST_JOIN:
		ret = join_handler(*static_cast<Node *>(cma_id->context), event->param.ud);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		std::printf("mckey: event: %s, error: %d\n", rdma_event_str(event->event),
			    event->status);
		connect_error();
		ret = event->status;
		break;
	default:
		break;
	}
	return ret;
}

// Set before main closes the event channel under cma_thread, which may not
// have reached its read yet and must then end quietly.
std::atomic<bool> channel_closing{false};

// Reports group trouble after the joins; never joined, it ends with the
// process.
void *cma_thread(void *)
{
	for (;;) {
		rdma_cm_event *event;
		if (rdma_get_cm_event(test.channel, &event)) {
			if (!channel_closing)
				std::perror("rdma_get_cm_event");
			break;
		}
		switch (event->event) {
		case RDMA_CM_EVENT_MULTICAST_ERROR:
		case RDMA_CM_EVENT_ADDR_CHANGE:
			std::printf("mckey: event: %s, status: %d\n", rdma_event_str(event->event),
				    event->status);
			break;
		default:
			break;
		}
		rdma_ack_cm_event(event);
	}
	return nullptr;
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
		std::printf("mckey: unable to allocate memory for test nodes\n");
		return false;
	}
	test.nodes.assign(static_cast<std::size_t>(connections), Node{});
	for (int i = 0; i < connections; i++) {
		Node &node = test.nodes[static_cast<std::size_t>(i)];
		node.id = i;
		if (rdma_create_id(test.channel, &node.cma_id, &node,
				   static_cast<rdma_port_space>(port_space))) {
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

int poll_cqs()
{
	ibv_wc wc[8];
	for (Node &node : test.nodes) {
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

// getaddrinfo() without hints; the first answer is taken whole.
int get_addr(const char *name, sockaddr_storage *addr)
{
	addrinfo *res;
	int ret = getaddrinfo(name, nullptr, nullptr, &res);
	if (ret) {
		std::printf("getaddrinfo failed (%s) - invalid hostname or IP address\n",
			    gai_strerror(ret));
		return ret;
	}
	std::memcpy(addr, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

// -M takes an MGID in IPv6 notation, joined as an AF_IB address.
int get_dst_addr(const char *name, sockaddr_storage *addr)
{
	if (!unmapped_addr)
		return get_addr(name, addr);

	auto *sib = reinterpret_cast<sockaddr_ib *>(addr);
	*sib = sockaddr_ib{};
	sib->sib_family = AF_IB;
	inet_pton(AF_INET6, name, &sib->sib_addr);
	return 0;
}

int run()
{
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
	for (Node &node : test.nodes) {
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
				for (Node &node : test.nodes) {
					ret = post_sends(node, 0);
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
	for (Node &node : test.nodes) {
		ret = rdma_leave_multicast(node.cma_id, test.dst_addr);
		if (ret)
			std::perror("mckey: failure leaving");
	}
	return ret;
}

[[noreturn]] void usage(const char *argv0)
{
	std::printf("usage: %s\n", argv0);
	std::printf("\t-m multicast_address\n");
	std::printf("\t[-M unmapped_multicast_address]\n"
		    "\t replaces -m and requires -b\n");
	std::printf("\t[-s(ender)]\n");
	std::printf("\t[-b bind_address]\n");
	std::printf("\t[-c connections]\n");
	std::printf("\t[-C message_count]\n");
	std::printf("\t[-S message_size]\n");
	std::printf("\t[-p port_space - %#x for UDP (default), %#x for IPOIB]\n", RDMA_PS_UDP,
		    RDMA_PS_IPOIB);
	std::printf("\t[-o join as a send-only full-member]\n");
	std::printf("\t[-l join without multicast loopback]\n");
	std::exit(1);
}

} // namespace

int main(int argc, char **argv)
{
	int op;
	while ((op = getopt(argc, argv, "m:M:sb:c:C:S:p:ol")) != -1) {
		switch (op) {
		case 'm':
			dst_addr = optarg;
			break;
		case 'M':
			unmapped_addr = true;
			dst_addr = optarg;
			break;
		case 's':
			is_sender = true;
			break;
		case 'b':
			src_addr = optarg;
			test.src_addr = reinterpret_cast<sockaddr *>(&test.src_in);
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
		case 'p':
			port_space = static_cast<int>(std::strtol(optarg, nullptr, 0));
			break;
		case 'o':
			send_only = true;
			break;
		case 'l':
			loopback = false;
			break;
		default:
			usage(argv[0]);
		}
	}

	if (unmapped_addr && !src_addr) {
		std::printf("unmapped multicast address requires binding to source address\n");
		std::exit(1);
	}

	test.dst_addr = reinterpret_cast<sockaddr *>(&test.dst_in);
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
