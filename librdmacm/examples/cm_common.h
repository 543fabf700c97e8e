// Pieces shared by the connection manager examples (rping, ucmatose,
// udaddy, mckey, cmtime): event channel creation with the reference's
// messages, the rdma_getaddrinfo dance for a server/bind address pair, a
// counting semaphore, number parsing with atoi's semantics, an owner for
// rdma_getaddrinfo results, and the message buffer, work request posting,
// connection table and event loop pieces the ucmatose/udaddy/mckey trio
// has in common.
//
// Messages, exit statuses and wire formats of these programs are a
// compatibility contract with rdmacm-utils 44: scripts read their output
// and they interoperate with the reference's programs on the wire.

#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <netdb.h>
#include <semaphore.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

namespace cm_examples {

// rdma_create_event_channel(), saying why on failure: "No RDMA devices were
// detected" when the kernel has no RDMA device (ENODEV), perror() text
// otherwise. errno is left as the library set it.
rdma_event_channel* create_first_event_channel();

// Resolves the addresses of a test: with RAI_PASSIVE in hints, the local
// (src, port) to listen on; otherwise the server (dst, port), optionally
// from the local address src. Returns rdma_getaddrinfo's status (an EAI_*
// code, or -1 with errno) and prints nothing.
int get_rdma_addr(const char* src, const char* dst, const char* port, const rdma_addrinfo* hints,
                  rdma_addrinfo** result);

// atoi(): leading blanks, a sign and decimal digits; anything else ends the
// number. Overflow wraps like the C library's strtol-to-int conversion.
inline int to_int(const char* text) { return static_cast<int>(std::strtol(text, nullptr, 10)); }

// A POSIX semaphore owned by an object (process-private).
class Semaphore {
public:
    explicit Semaphore(unsigned int initial) { sem_init(&sem_, 0, initial); }
    ~Semaphore() { sem_destroy(&sem_); }
    Semaphore(const Semaphore&) = delete;
    Semaphore& operator=(const Semaphore&) = delete;

    void post() { sem_post(&sem_); }
    void wait() {
        while (sem_wait(&sem_) && errno == EINTR) {}
    }

private:
    sem_t sem_;
};

struct AddrinfoDeleter {
    void operator()(rdma_addrinfo* info) const { rdma_freeaddrinfo(info); }
};
using Addrinfo = std::unique_ptr<rdma_addrinfo, AddrinfoDeleter>;

// perror() with the message "prog: what" (errno kept for it).
void perror_prog(const char* prog, const char* what);

// -f of ucmatose and udaddy: "ip..." and "gid..." (prefix matches, so
// "ipv6" counts as "ip") set numeric lookups in hints; "name..." keeps the
// default; anything else only warns on stderr.
void parse_address_format(const char* format, rdma_addrinfo& hints);

// A message buffer of length bytes registered for local writes on pd.
// Prints the reference's message and returns -1 on failure (mem and mr are
// then left null).
int create_message_buffer(ibv_pd* pd, std::size_t length, void*& mem, ibv_mr*& mr);

// count receives of the whole buffer, each with wr_id, on qp. Stops at the
// first failure, which it reports, and returns its status.
int post_receives(ibv_qp* qp, const ibv_mr* mr, void* mem, uint32_t length, uint64_t wr_id, int count);

// count sends of length bytes from the buffer, built from wr (its scatter
// list is filled in here). Stops at the first failure, which it reports,
// and returns its status.
int post_send_batch(ibv_qp* qp, const ibv_mr* mr, void* mem, uint32_t length, ibv_send_wr wr, int count);

// The QP shape of ucmatose, udaddy and mckey (Attr is ibv_qp_init_attr or
// ibv_qp_init_attr_ex; other fields are left as they are): depth work
// requests of one scatter entry each way.
template <class Attr>
void set_qp_shape(Attr& attr, ibv_qp_type type, ibv_cq* send_cq, ibv_cq* recv_cq, uint32_t depth, void* context,
                  int sq_sig_all) {
    attr.cap.max_send_wr = depth;
    attr.cap.max_recv_wr = depth;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.qp_context = context;
    attr.sq_sig_all = sq_sig_all;
    attr.qp_type = type;
    attr.send_cq = send_cq;
    attr.recv_cq = recv_cq;
}

// udaddy and mckey: a datagram of message_size must fit the active MTU of
// id's port (checked only when messages are sent). Returns
// ibv_query_port's failure, or -EINVAL after saying so (prog names the
// program).
int check_datagram_size(rdma_cm_id* id, int message_count, int message_size, const char* prog);

// Releases what a ucmatose/udaddy/mckey node holds, device resources
// first and the id last; nothing when id is null. Any of the others may be
// null; mem and mr go together.
void destroy_node_resources(rdma_cm_id* id, ibv_ah* ah, std::span<ibv_cq* const> cqs, ibv_mr* mr, void* mem,
                            ibv_pd* pd);

// The server side of ucmatose and udaddy: a listening id on channel
// (context test) bound to the passive address from get_rdma_addr, kept in
// *rai. Failures are reported with prog as prefix and the id made so far
// destroyed; returns 0 or the failing call's status.
int listen_on(rdma_event_channel* channel, rdma_port_space port_space, void* context, const char* src, const char* dst,
              const char* port, const rdma_addrinfo& hints, rdma_addrinfo** rai, const char* prog,
              rdma_cm_id** listen_id);

// The client side's start in ucmatose and udaddy: looks up the server,
// says "connecting" and starts address resolution on every node's id. A
// failed resolution is reported, counted off *connects_left and ends the
// start; returns 0 or the failing call's status.
template <class Node>
int start_connecting(std::vector<Node>& nodes, const char* src, const char* dst, const char* port,
                     const rdma_addrinfo& hints, rdma_addrinfo** rai, const char* prog, int& connects_left) {
    int ret = get_rdma_addr(src, dst, port, &hints, rai);
    if (ret) {
        std::printf("%s: getaddrinfo error: %s\n", prog, gai_strerror(ret));
        return ret;
    }

    std::printf("%s: connecting\n", prog);
    for (Node& node : nodes) {
        ret = rdma_resolve_addr(node.cma_id, (*rai)->ai_src_addr, (*rai)->ai_dst_addr, 2000);
        if (ret) {
            perror_prog(prog, "failure getting addr");
            connects_left--;
            return ret;
        }
    }
    return 0;
}

// A UD endpoint of udaddy or mckey: one CQ for both directions, and the
// address handle, QPN and Q_Key of the peer (or group) it sends to. The
// buffer (mem, registered as mr) has room for a GRH in front of a receive.
struct UdNode {
    int id = 0;
    rdma_cm_id* cma_id = nullptr;
    bool connected = false;
    ibv_pd* pd = nullptr;
    ibv_cq* cq = nullptr;
    ibv_mr* mr = nullptr;
    ibv_ah* ah = nullptr;
    uint32_t remote_qpn = 0;
    uint32_t remote_qkey = 0;
    void* mem = nullptr;
};

// count receives of message_size bytes plus the GRH; none when count is 0.
int post_ud_receives(UdNode& node, int message_size, int count);

// count datagrams of message_size bytes to the node's peer, each with the
// node's QPN as immediate data; none unless the node is connected and
// count is non-zero.
int post_ud_sends(UdNode& node, unsigned int send_flags, int message_size, int count);

void destroy_ud_node(UdNode& node);

// The connection table of ucmatose, udaddy and mckey: count nodes numbered
// from 0, each with an id of its own on channel when create_ids (a client;
// the server's ids come with the connection requests). A negative count
// prints nomem_message (which names the program) and fails; so does a
// failed id, after the ids made so far are destroyed and the table emptied.
template <class Node>
bool alloc_nodes(std::vector<Node>& nodes, int count, rdma_event_channel* channel, rdma_port_space port_space,
                 bool create_ids, const char* nomem_message) {
    if (count < 0) {
        std::printf("%s\n", nomem_message);
        return false;
    }
    nodes.assign(static_cast<std::size_t>(count), Node{});
    for (int i = 0; i < count; i++) {
        Node& node = nodes[static_cast<std::size_t>(i)];
        node.id = i;
        if (create_ids && rdma_create_id(channel, &node.cma_id, &node, port_space)) {
            while (--i >= 0)
                rdma_destroy_id(nodes[static_cast<std::size_t>(i)].cma_id);
            nodes.clear();
            return false;
        }
    }
    return true;
}

// Hands CM events to handler(id, event) while *pending (re-read after each
// event) is non-zero and the handler returns 0; returns the handler's
// status. A failed rdma_get_cm_event ends the loop: with failure_message it
// is perror()ed and errno returned, without it the -1 is returned quietly.
template <class Handler>
int process_events(rdma_event_channel* channel, const int& pending, Handler&& handler,
                   const char* failure_message = nullptr) {
    int ret = 0;
    while (pending && !ret) {
        rdma_cm_event* event;
        ret = rdma_get_cm_event(channel, &event);
        if (!ret) {
            ret = handler(event->id, event);
            rdma_ack_cm_event(event);
        } else if (failure_message) {
            std::perror(failure_message);
            ret = errno;
        }
    }
    return ret;
}

}  // namespace cm_examples
