// rping: an RDMA "ping" over a connection set up with the RDMA CM.
//
// Each ping is four messages and two RDMA operations on one RC queue pair:
//   client: sends the address/rkey/length of its source buffer
//   server: RDMA-reads the source buffer, then sends "go ahead"
//   client: sends the address/rkey/length of its sink buffer
//   server: RDMA-writes the data it read into the sink, then sends "go ahead"
// The advertisement is 16 bytes: big-endian 64-bit address, 32-bit rkey,
// 32-bit length (the reference's wire format; the "go ahead" messages are
// the same record, whatever it holds). The client fills each ping with
// "rdma-ping-<n>: " and a rotating run of the letters 'A'..'z'.
//
// Options, messages and exit statuses are those of rdmacm-utils 44. CM
// events are handled on their own thread, completions on another; the
// main thread drives the exchange and waits on a semaphore between steps,
// as the reference does (so its messages come in the same order). A CM
// error event ends the whole process with status 255 from the event
// thread, after the main thread has had the chance to say what it waited
// for.

#include "cm_common.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <endian.h>
#include <netdb.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

using namespace cm_examples;

int debug = 0;

__attribute__((format(printf, 1, 2))) void debug_log(const char* format, ...) {
    if (!debug)
        return;
    va_list args;
    va_start(args, format);
    std::vprintf(format, args);
    va_end(args);
}

// The values are printed in "wait for ... state %d" messages.
enum State : int {
    kIdle = 1,
    kConnectRequest,
    kAddrResolved,
    kRouteResolved,
    kConnected,
    kRdmaReadAdv,
    kRdmaReadComplete,
    kRdmaWriteAdv,
    kRdmaWriteComplete,
    kDisconnected,
    kError,
};

// The buffer advertisement on the wire.
struct BufferInfo {
    uint64_t addr_be;
    uint32_t rkey_be;
    uint32_t size_be;
};
static_assert(sizeof(BufferInfo) == 16, "rping's advertisement is 16 bytes");

constexpr int kMaxBufferSize = 64 * 1024;
constexpr int kSendQueueDepth = 16;
constexpr const char* kPingFormat = "rdma-ping-%d: ";
// The smallest -S the reference accepts: it meant room for the widest count
// and the prefix, but measures the unexpanded name INT_MAX (23 bytes).
constexpr std::size_t kMinBufferSize = sizeof("INT_MAX") + sizeof("rdma-ping-%d: ");

struct Settings {
    bool server = false;
    int verbose = 0;
    int validate = 0;
    bool self_create_qp = false;
    int count = 0;
    int size = 64;
    sockaddr_storage sin{};
    sockaddr_storage ssource{};
    uint16_t port_be = htobe16(7174);
};

struct IbvMrDeleter {
    void operator()(ibv_mr* mr) const { ibv_dereg_mr(mr); }
};
using MemoryRegion = std::unique_ptr<ibv_mr, IbvMrDeleter>;

// One connection's state (the reference's control block). The listening
// server keeps one for itself; a persistent server makes one per client.
struct Session {
    explicit Session(const Settings& s) : settings(s) {}
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    Settings settings;
    std::atomic<int> state{kIdle};
    Semaphore sem{0};
    Semaphore accept_ready{1};

    rdma_event_channel* cm_channel = nullptr;
    rdma_cm_id* cm_id = nullptr;  // the client's id, or the listener
    rdma_cm_id* child_cm_id = nullptr;  // the server's connection

    ibv_pd* pd = nullptr;
    ibv_comp_channel* channel = nullptr;
    ibv_cq* cq = nullptr;
    ibv_qp* qp = nullptr;
    pthread_t cq_thread{};

    BufferInfo recv_buf{};
    BufferInfo send_buf{};
    MemoryRegion recv_mr;
    MemoryRegion send_mr;
    // One spare byte past the registered area keeps the data printable
    // even when a peer fills the whole buffer.
    std::vector<char> rdma_buf;
    MemoryRegion rdma_mr;
    std::vector<char> start_buf;
    MemoryRegion start_mr;

    ibv_sge recv_sgl{};
    ibv_recv_wr rq_wr{};
    ibv_sge send_sgl{};
    ibv_send_wr sq_wr{};
    ibv_sge rdma_sgl{};
    ibv_send_wr rdma_sq_wr{};

    uint32_t remote_rkey = 0;
    uint64_t remote_addr = 0;
    uint32_t remote_len = 0;

    bool server() const { return settings.server; }
};

int cma_event_handler(rdma_cm_id* id, rdma_cm_event* event) {
    auto* cb = static_cast<Session*>(id->context);
    int ret = 0;

    debug_log("cma_event type %s cma_id %p (%s)\n", rdma_event_str(event->event), static_cast<void*>(id),
              id == cb->cm_id ? "parent" : "child");

    switch (event->event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        cb->state = kAddrResolved;
        if (rdma_resolve_route(id, 2000)) {
            cb->state = kError;
            std::perror("rdma_resolve_route");
            cb->sem.post();
        }
        break;
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
        cb->state = kRouteResolved;
        cb->sem.post();
        break;
    case RDMA_CM_EVENT_CONNECT_REQUEST:
        cb->accept_ready.wait();
        cb->state = kConnectRequest;
        cb->child_cm_id = id;
        debug_log("child cma %p\n", static_cast<void*>(id));
        cb->sem.post();
        break;
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
        debug_log("CONNECT_RESPONSE\n");
        cb->state = kConnected;
        cb->sem.post();
        break;
    case RDMA_CM_EVENT_ESTABLISHED:
        debug_log("ESTABLISHED\n");
        // The server wakes up on its first receive instead.
        if (!cb->server())
            cb->state = kConnected;
        cb->sem.post();
        break;
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_REJECTED:
        std::fprintf(stderr, "cma event %s, error %d\n", rdma_event_str(event->event), event->status);
        cb->sem.post();
        ret = -1;
        break;
    case RDMA_CM_EVENT_DISCONNECTED:
        std::fprintf(stderr, "%s DISCONNECT EVENT...\n", cb->server() ? "server" : "client");
        cb->state = kDisconnected;
        cb->sem.post();
        break;
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        std::fprintf(stderr, "cma detected device removal!!!!\n");
        cb->state = kError;
        cb->sem.post();
        ret = -1;
        break;
    default: std::fprintf(stderr, "unhandled event: %s, ignoring\n", rdma_event_str(event->event)); break;
    }
    return ret;
}

// Set before main closes the event channel under the event thread, which
// may not have reached its read yet and must then end quietly.
std::atomic<bool> channel_closing{false};

// The CM event thread. It is never joined: the process ends with main, or
// here on a failed event.
void* cm_thread(void* arg) {
    auto* cb = static_cast<Session*>(arg);
    for (;;) {
        rdma_cm_event* event;
        int ret = rdma_get_cm_event(cb->cm_channel, &event);
        if (ret && channel_closing)
            return nullptr;
        if (ret) {
            std::perror("rdma_get_cm_event");
            std::exit(ret);
        }
        ret = cma_event_handler(event->id, event);
        rdma_ack_cm_event(event);
        if (ret)
            std::exit(ret);
    }
    return nullptr;
}

int server_recv(Session* cb, const ibv_wc& wc) {
    if (wc.byte_len != sizeof(cb->recv_buf)) {
        std::fprintf(stderr, "Received bogus data, size %d\n", wc.byte_len);
        return -1;
    }
    cb->remote_rkey = be32toh(cb->recv_buf.rkey_be);
    cb->remote_addr = be64toh(cb->recv_buf.addr_be);
    cb->remote_len = be32toh(cb->recv_buf.size_be);
    debug_log("Received rkey %x addr %" PRIx64 " len %d from peer\n", cb->remote_rkey, cb->remote_addr, cb->remote_len);

    int state = cb->state;
    if (state <= kConnected || state == kRdmaWriteComplete)
        cb->state = kRdmaReadAdv;
    else
        cb->state = kRdmaWriteAdv;
    return 0;
}

int client_recv(Session* cb, const ibv_wc& wc) {
    if (wc.byte_len != sizeof(cb->recv_buf)) {
        std::fprintf(stderr, "Received bogus data, size %d\n", wc.byte_len);
        return -1;
    }
    if (cb->state == kRdmaReadAdv)
        cb->state = kRdmaWriteAdv;
    else
        cb->state = kRdmaWriteComplete;
    return 0;
}

// Drains the CQ. Returns 1 when a flushed completion showed that the QP is
// gone (the thread then ends), 0 to go on, negative after an error (the
// main thread is woken in the error state).
int cq_event_handler(Session* cb) {
    ibv_wc wc;
    int ret;
    int flushed = 0;

    while ((ret = ibv_poll_cq(cb->cq, 1, &wc)) == 1) {
        ret = 0;
        if (wc.status) {
            if (wc.status == IBV_WC_WR_FLUSH_ERR) {
                flushed = 1;
                continue;
            }
            std::fprintf(stderr, "cq completion failed status %d\n", wc.status);
            ret = -1;
            goto error;
        }

        switch (wc.opcode) {
        case IBV_WC_SEND: debug_log("send completion\n"); break;
        case IBV_WC_RDMA_WRITE:
            debug_log("rdma write completion\n");
            cb->state = kRdmaWriteComplete;
            cb->sem.post();
            break;
        case IBV_WC_RDMA_READ:
            debug_log("rdma read completion\n");
            cb->state = kRdmaReadComplete;
            cb->sem.post();
            break;
        case IBV_WC_RECV: {
            debug_log("recv completion\n");
            ret = cb->server() ? server_recv(cb, wc) : client_recv(cb, wc);
            if (ret) {
                std::fprintf(stderr, "recv wc error: %d\n", ret);
                goto error;
            }
            ibv_recv_wr* bad_wr;
            ret = ibv_post_recv(cb->qp, &cb->rq_wr, &bad_wr);
            if (ret) {
                std::fprintf(stderr, "post recv error: %d\n", ret);
                goto error;
            }
            cb->sem.post();
            break;
        }
        default:
            debug_log("unknown!!!!! completion\n");
            ret = -1;
            goto error;
        }
    }
    if (ret) {
        std::fprintf(stderr, "poll error %d\n", ret);
        goto error;
    }
    return flushed;

error:
    cb->state = kError;
    cb->sem.post();
    return ret;
}

void* cq_thread(void* arg) {
    auto* cb = static_cast<Session*>(arg);
    debug_log("cq_thread started.\n");
    for (;;) {
        pthread_testcancel();
        ibv_cq* ev_cq;
        void* ev_ctx;
        if (ibv_get_cq_event(cb->channel, &ev_cq, &ev_ctx)) {
            std::fprintf(stderr, "Failed to get cq event!\n");
            pthread_exit(nullptr);
        }
        if (ev_cq != cb->cq) {
            std::fprintf(stderr, "Unknown CQ!\n");
            pthread_exit(nullptr);
        }
        if (ibv_req_notify_cq(cb->cq, 0)) {
            std::fprintf(stderr, "Failed to set notify!\n");
            pthread_exit(nullptr);
        }
        int ret = cq_event_handler(cb);
        ibv_ack_cq_events(cb->cq, 1);
        if (ret)
            pthread_exit(nullptr);
    }
    return nullptr;
}

void init_conn_param(const Session* cb, rdma_conn_param& param) {
    param = rdma_conn_param{};
    param.responder_resources = 1;
    param.initiator_depth = 1;
    param.retry_count = 7;
    param.rnr_retry_count = 7;
    if (cb->settings.self_create_qp)
        param.qp_num = cb->qp->qp_num;
}

// -q: the application walks its own QP through INIT, RTR and RTS with the
// attributes the CM computes.
int self_modify_qp(Session* cb, rdma_cm_id* id) {
    for (ibv_qp_state target : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
        ibv_qp_attr attr{};
        int mask = 0;
        attr.qp_state = target;
        int ret = rdma_init_qp_attr(id, &attr, &mask);
        if (ret)
            return ret;
        ret = ibv_modify_qp(cb->qp, &attr, mask);
        if (ret)
            return ret;
    }
    return 0;
}

int rping_accept(Session* cb) {
    debug_log("accepting client connection request\n");

    int ret;
    if (cb->settings.self_create_qp) {
        ret = self_modify_qp(cb, cb->child_cm_id);
        if (ret)
            return ret;
        rdma_conn_param param;
        init_conn_param(cb, param);
        ret = rdma_accept(cb->child_cm_id, &param);
    } else {
        ret = rdma_accept(cb->child_cm_id, nullptr);
    }
    if (ret) {
        std::perror("rdma_accept");
        return ret;
    }

    cb->sem.wait();
    if (cb->state == kError) {
        std::fprintf(stderr, "wait for CONNECTED state %d\n", cb->state.load());
        return -1;
    }
    return 0;
}

int rping_disconnect(Session* cb, rdma_cm_id* id) {
    if (cb->settings.self_create_qp) {
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_ERR;
        int err = ibv_modify_qp(cb->qp, &attr, IBV_QP_STATE);
        if (err)
            return err;
    }
    return rdma_disconnect(id);
}

void setup_wr(Session* cb) {
    cb->recv_sgl.addr = reinterpret_cast<uintptr_t>(&cb->recv_buf);
    cb->recv_sgl.length = sizeof(cb->recv_buf);
    cb->recv_sgl.lkey = cb->recv_mr->lkey;
    cb->rq_wr.sg_list = &cb->recv_sgl;
    cb->rq_wr.num_sge = 1;

    cb->send_sgl.addr = reinterpret_cast<uintptr_t>(&cb->send_buf);
    cb->send_sgl.length = sizeof(cb->send_buf);
    cb->send_sgl.lkey = cb->send_mr->lkey;
    cb->sq_wr.opcode = IBV_WR_SEND;
    cb->sq_wr.send_flags = IBV_SEND_SIGNALED;
    cb->sq_wr.sg_list = &cb->send_sgl;
    cb->sq_wr.num_sge = 1;

    cb->rdma_sgl.addr = reinterpret_cast<uintptr_t>(cb->rdma_buf.data());
    cb->rdma_sgl.lkey = cb->rdma_mr->lkey;
    cb->rdma_sq_wr.send_flags = IBV_SEND_SIGNALED;
    cb->rdma_sq_wr.sg_list = &cb->rdma_sgl;
    cb->rdma_sq_wr.num_sge = 1;
}

int setup_buffers(Session* cb) {
    debug_log("rping_setup_buffers called on cb %p\n", static_cast<void*>(cb));

    constexpr int kRemoteAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    const auto size = static_cast<std::size_t>(cb->settings.size);

    cb->recv_mr.reset(ibv_reg_mr(cb->pd, &cb->recv_buf, sizeof(cb->recv_buf), IBV_ACCESS_LOCAL_WRITE));
    if (!cb->recv_mr) {
        std::fprintf(stderr, "recv_buf reg_mr failed\n");
        return errno;
    }
    cb->send_mr.reset(ibv_reg_mr(cb->pd, &cb->send_buf, sizeof(cb->send_buf), 0));
    if (!cb->send_mr) {
        std::fprintf(stderr, "send_buf reg_mr failed\n");
        int ret = errno;
        cb->recv_mr.reset();
        return ret;
    }
    cb->rdma_buf.assign(size + 1, 0);
    cb->rdma_mr.reset(ibv_reg_mr(cb->pd, cb->rdma_buf.data(), size, kRemoteAccess));
    if (!cb->rdma_mr) {
        std::fprintf(stderr, "rdma_buf reg_mr failed\n");
        int ret = errno;
        cb->send_mr.reset();
        cb->recv_mr.reset();
        return ret;
    }
    if (!cb->server()) {
        cb->start_buf.assign(size + 1, 0);
        cb->start_mr.reset(ibv_reg_mr(cb->pd, cb->start_buf.data(), size, kRemoteAccess));
        if (!cb->start_mr) {
            std::fprintf(stderr, "start_buf reg_mr failed\n");
            int ret = errno;
            cb->rdma_mr.reset();
            cb->send_mr.reset();
            cb->recv_mr.reset();
            return ret;
        }
    }

    setup_wr(cb);
    debug_log("allocated & registered buffers...\n");
    return 0;
}

void free_buffers(Session* cb) {
    debug_log("rping_free_buffers called on cb %p\n", static_cast<void*>(cb));
    cb->recv_mr.reset();
    cb->send_mr.reset();
    cb->rdma_mr.reset();
    cb->start_mr.reset();
}

int create_qp(Session* cb) {
    ibv_qp_init_attr init_attr{};
    init_attr.cap.max_send_wr = kSendQueueDepth;
    init_attr.cap.max_recv_wr = 2;
    init_attr.cap.max_recv_sge = 1;
    init_attr.cap.max_send_sge = 1;
    init_attr.qp_type = IBV_QPT_RC;
    init_attr.send_cq = cb->cq;
    init_attr.recv_cq = cb->cq;
    rdma_cm_id* id = cb->server() ? cb->child_cm_id : cb->cm_id;

    if (cb->settings.self_create_qp) {
        cb->qp = ibv_create_qp(cb->pd, &init_attr);
        if (!cb->qp) {
            std::perror("ibv_create_qp");
            return -1;
        }
        ibv_qp_attr attr{};
        attr.qp_state = IBV_QPS_INIT;
        attr.pkey_index = 0;
        attr.port_num = id->port_num;
        attr.qp_access_flags = 0;
        int ret = ibv_modify_qp(cb->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
        if (ret) {
            std::perror("ibv_modify_qp");
            ibv_destroy_qp(cb->qp);
            return -1;
        }
        return 0;
    }

    int ret = rdma_create_qp(id, cb->pd, &init_attr);
    if (!ret)
        cb->qp = id->qp;
    else
        std::perror("rdma_create_qp");
    return ret;
}

// The reference releases the QP with ibv_destroy_qp even when the CM made
// it; the id forgets it the same way.
void free_qp(Session* cb) {
    ibv_destroy_qp(cb->qp);
    ibv_destroy_cq(cb->cq);
    ibv_destroy_comp_channel(cb->channel);
    ibv_dealloc_pd(cb->pd);
}

int setup_qp(Session* cb, rdma_cm_id* id) {
    cb->pd = ibv_alloc_pd(id->verbs);
    if (!cb->pd) {
        std::fprintf(stderr, "ibv_alloc_pd failed\n");
        return errno;
    }
    debug_log("created pd %p\n", static_cast<void*>(cb->pd));

    int ret;
    cb->channel = ibv_create_comp_channel(id->verbs);
    if (!cb->channel) {
        std::fprintf(stderr, "ibv_create_comp_channel failed\n");
        ret = errno;
        goto err1;
    }
    debug_log("created channel %p\n", static_cast<void*>(cb->channel));

    cb->cq = ibv_create_cq(id->verbs, kSendQueueDepth * 2, cb, cb->channel, 0);
    if (!cb->cq) {
        std::fprintf(stderr, "ibv_create_cq failed\n");
        ret = errno;
        goto err2;
    }
    debug_log("created cq %p\n", static_cast<void*>(cb->cq));

    if (ibv_req_notify_cq(cb->cq, 0)) {
        // The reference names the wrong call here; scripts see this text.
        std::fprintf(stderr, "ibv_create_cq failed\n");
        ret = errno;
        goto err3;
    }

    ret = create_qp(cb);
    if (ret)
        goto err3;
    debug_log("created qp %p\n", static_cast<void*>(cb->qp));
    return 0;

err3:
    ibv_destroy_cq(cb->cq);
err2:
    ibv_destroy_comp_channel(cb->channel);
err1:
    ibv_dealloc_pd(cb->pd);
    return ret;
}

void format_send(Session* cb, const char* buf, const ibv_mr* mr) {
    BufferInfo& info = cb->send_buf;
    info.addr_be = htobe64(reinterpret_cast<uintptr_t>(buf));
    info.rkey_be = htobe32(mr->rkey);
    info.size_be = htobe32(static_cast<uint32_t>(cb->settings.size));
    debug_log("RDMA addr %" PRIx64 " rkey %x len %d\n", be64toh(info.addr_be), be32toh(info.rkey_be),
              be32toh(info.size_be));
}

int post_send(ibv_qp* qp, ibv_send_wr* wr) {
    ibv_send_wr* bad_wr;
    int ret = ibv_post_send(qp, wr, &bad_wr);
    if (ret)
        std::fprintf(stderr, "post send error %d\n", ret);
    return ret;
}

int test_server(Session* cb) {
    int ret;
    for (;;) {
        // The client's source advertisement.
        cb->sem.wait();
        if (cb->state != kRdmaReadAdv) {
            std::fprintf(stderr, "wait for RDMA_READ_ADV state %d\n", cb->state.load());
            ret = -1;
            break;
        }
        debug_log("server received sink adv\n");

        cb->rdma_sq_wr.opcode = IBV_WR_RDMA_READ;
        cb->rdma_sq_wr.wr.rdma.rkey = cb->remote_rkey;
        cb->rdma_sq_wr.wr.rdma.remote_addr = cb->remote_addr;
        cb->rdma_sq_wr.sg_list->length = cb->remote_len;
        ret = post_send(cb->qp, &cb->rdma_sq_wr);
        if (ret)
            break;
        debug_log("server posted rdma read req \n");

        cb->sem.wait();
        if (cb->state != kRdmaReadComplete) {
            std::fprintf(stderr, "wait for RDMA_READ_COMPLETE state %d\n", cb->state.load());
            ret = -1;
            break;
        }
        debug_log("server received read complete\n");

        if (cb->settings.verbose)
            std::printf("server ping data: %s\n", cb->rdma_buf.data());

        ret = post_send(cb->qp, &cb->sq_wr);
        if (ret)
            break;
        debug_log("server posted go ahead\n");

        // The client's sink advertisement.
        cb->sem.wait();
        if (cb->state != kRdmaWriteAdv) {
            std::fprintf(stderr, "wait for RDMA_WRITE_ADV state %d\n", cb->state.load());
            ret = -1;
            break;
        }
        debug_log("server received sink adv\n");

        cb->rdma_sq_wr.opcode = IBV_WR_RDMA_WRITE;
        cb->rdma_sq_wr.wr.rdma.rkey = cb->remote_rkey;
        cb->rdma_sq_wr.wr.rdma.remote_addr = cb->remote_addr;
        cb->rdma_sq_wr.sg_list->length = static_cast<uint32_t>(std::strlen(cb->rdma_buf.data()) + 1);
        debug_log("rdma write from lkey %x laddr %" PRIx64 " len %d\n", cb->rdma_sq_wr.sg_list->lkey,
                  cb->rdma_sq_wr.sg_list->addr, cb->rdma_sq_wr.sg_list->length);
        ret = post_send(cb->qp, &cb->rdma_sq_wr);
        if (ret)
            break;

        cb->sem.wait();
        if (cb->state != kRdmaWriteComplete) {
            std::fprintf(stderr, "wait for RDMA_WRITE_COMPLETE state %d\n", cb->state.load());
            ret = -1;
            break;
        }
        debug_log("server rdma write complete \n");

        ret = post_send(cb->qp, &cb->sq_wr);
        if (ret)
            break;
        debug_log("server posted go ahead\n");
    }
    // A disconnect is the normal end of a server's loop.
    return cb->state == kDisconnected ? 0 : ret;
}

int bind_server(Session* cb) {
    auto* sin = &cb->settings.sin;
    if (sin->ss_family == AF_INET)
        reinterpret_cast<sockaddr_in*>(sin)->sin_port = cb->settings.port_be;
    else
        reinterpret_cast<sockaddr_in6*>(sin)->sin6_port = cb->settings.port_be;

    int ret = rdma_bind_addr(cb->cm_id, reinterpret_cast<sockaddr*>(sin));
    if (ret) {
        std::perror("rdma_bind_addr");
        return ret;
    }
    debug_log("rdma_bind_addr successful\n");

    debug_log("rdma_listen\n");
    ret = rdma_listen(cb->cm_id, 3);
    if (ret) {
        std::perror("rdma_listen");
        return ret;
    }
    return 0;
}

// A persistent server's connection: from accept to teardown on its own
// thread, then the session goes.
void* persistent_server_thread(void* arg) {
    std::unique_ptr<Session> cb(static_cast<Session*>(arg));
    ibv_recv_wr* bad_wr;

    int ret = setup_qp(cb.get(), cb->child_cm_id);
    if (ret) {
        std::fprintf(stderr, "setup_qp failed: %d\n", ret);
        return nullptr;
    }
    ret = setup_buffers(cb.get());
    if (ret) {
        std::fprintf(stderr, "rping_setup_buffers failed: %d\n", ret);
        free_qp(cb.get());
        return nullptr;
    }
    ret = ibv_post_recv(cb->qp, &cb->rq_wr, &bad_wr);
    if (ret) {
        std::fprintf(stderr, "ibv_post_recv failed: %d\n", ret);
        free_buffers(cb.get());
        free_qp(cb.get());
        return nullptr;
    }
    ret = pthread_create(&cb->cq_thread, nullptr, cq_thread, cb.get());
    if (ret) {
        std::perror("pthread_create");
        free_buffers(cb.get());
        free_qp(cb.get());
        return nullptr;
    }
    ret = rping_accept(cb.get());
    if (ret) {
        std::fprintf(stderr, "connect error %d\n", ret);
        pthread_cancel(cb->cq_thread);
        pthread_join(cb->cq_thread, nullptr);
        free_buffers(cb.get());
        free_qp(cb.get());
        return nullptr;
    }

    test_server(cb.get());
    rping_disconnect(cb.get(), cb->child_cm_id);
    pthread_join(cb->cq_thread, nullptr);
    free_buffers(cb.get());
    free_qp(cb.get());
    rdma_destroy_id(cb->child_cm_id);
    return nullptr;
}

int run_persistent_server(Session* listening) {
    int ret = bind_server(listening);
    if (ret)
        return ret;

    // Connection threads are detached: each releases itself at its end.
    pthread_attr_t attr;
    ret = pthread_attr_init(&attr);
    if (ret) {
        std::perror("pthread_attr_init");
        return ret;
    }
    ret = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (ret) {
        std::perror("pthread_attr_setdetachstate");
        return ret;
    }

    for (;;) {
        listening->sem.wait();
        if (listening->state != kConnectRequest) {
            std::fprintf(stderr, "wait for CONNECT_REQUEST state %d\n", listening->state.load());
            return -1;
        }

        auto cb = std::make_unique<Session>(listening->settings);
        cb->state = listening->state.load();
        cb->cm_channel = listening->cm_channel;
        cb->cm_id = listening->cm_id;
        cb->child_cm_id = listening->child_cm_id;
        cb->child_cm_id->context = cb.get();

        listening->accept_ready.post();

        pthread_t thread;
        ret = pthread_create(&thread, &attr, persistent_server_thread, cb.get());
        if (ret) {
            std::perror("pthread_create");
            return ret;
        }
        cb.release();  // the thread owns it now
    }
}

// Both sides once the id is there: the QP, the buffers, the first receive
// and the completion thread. A failure is reported and what was set up
// undone.
int start_session(Session* cb, rdma_cm_id* id) {
    int ret = setup_qp(cb, id);
    if (ret) {
        std::fprintf(stderr, "setup_qp failed: %d\n", ret);
        return ret;
    }
    ret = setup_buffers(cb);
    if (ret) {
        std::fprintf(stderr, "rping_setup_buffers failed: %d\n", ret);
        free_qp(cb);
        return ret;
    }
    ibv_recv_wr* bad_wr;
    ret = ibv_post_recv(cb->qp, &cb->rq_wr, &bad_wr);
    if (ret)
        std::fprintf(stderr, "ibv_post_recv failed: %d\n", ret);
    else if ((ret = pthread_create(&cb->cq_thread, nullptr, cq_thread, cb)))
        std::perror("pthread_create");
    if (ret) {
        free_buffers(cb);
        free_qp(cb);
    }
    return ret;
}

int run_server(Session* cb) {
    int ret = bind_server(cb);
    if (ret)
        return ret;

    cb->sem.wait();
    if (cb->state != kConnectRequest) {
        std::fprintf(stderr, "wait for CONNECT_REQUEST state %d\n", cb->state.load());
        return -1;
    }

    ret = start_session(cb, cb->child_cm_id);
    if (ret)
        return ret;
    ret = rping_accept(cb);
    if (ret) {
        std::fprintf(stderr, "connect error %d\n", ret);
        goto err2;
    }
    ret = test_server(cb);
    if (ret) {
        std::fprintf(stderr, "rping server failed: %d\n", ret);
        goto err3;
    }
    ret = 0;
err3:
    rping_disconnect(cb, cb->child_cm_id);
    pthread_join(cb->cq_thread, nullptr);
    rdma_destroy_id(cb->child_cm_id);
err2:
    free_buffers(cb);
    free_qp(cb);
    return ret;
}

// Fills the source buffer of ping number `ping`: the prefix, then letters
// from `first` on, wrapping from 'z' back to 'A'.
void fill_ping(std::vector<char>& buf, int size, int ping, unsigned char first) {
    int cc = std::snprintf(buf.data(), static_cast<std::size_t>(size), kPingFormat, ping);
    unsigned char c = first;
    for (int i = cc; i < size; i++) {
        buf[static_cast<std::size_t>(i)] = static_cast<char>(c);
        if (++c > 'z')
            c = 'A';
    }
    buf[static_cast<std::size_t>(size - 1)] = 0;
}

int test_client(Session* cb) {
    const int size = cb->settings.size;
    const int count = cb->settings.count;
    int ret = 0;
    unsigned char start = 'A';

    for (int ping = 0; !count || ping < count; ping++) {
        cb->state = kRdmaReadAdv;

        fill_ping(cb->start_buf, size, ping, start);
        if (++start > 'z')
            start = 'A';

        format_send(cb, cb->start_buf.data(), cb->start_mr.get());
        ret = post_send(cb->qp, &cb->sq_wr);
        if (ret)
            break;

        // The server read the source and says go ahead.
        cb->sem.wait();
        if (cb->state != kRdmaWriteAdv) {
            std::fprintf(stderr, "wait for RDMA_WRITE_ADV state %d\n", cb->state.load());
            ret = -1;
            break;
        }

        format_send(cb, cb->rdma_buf.data(), cb->rdma_mr.get());
        ret = post_send(cb->qp, &cb->sq_wr);
        if (ret)
            break;

        // The server wrote the sink.
        cb->sem.wait();
        if (cb->state != kRdmaWriteComplete) {
            std::fprintf(stderr, "wait for RDMA_WRITE_COMPLETE state %d\n", cb->state.load());
            ret = -1;
            break;
        }

        if (cb->settings.validate &&
            std::memcmp(cb->start_buf.data(), cb->rdma_buf.data(), static_cast<std::size_t>(size))) {
            std::fprintf(stderr, "data mismatch!\n");
            ret = -1;
            break;
        }

        if (cb->settings.verbose)
            std::printf("ping data: %s\n", cb->rdma_buf.data());
    }
    return cb->state == kDisconnected ? 0 : ret;
}

int connect_client(Session* cb) {
    rdma_conn_param param;
    init_conn_param(cb, param);
    int ret = rdma_connect(cb->cm_id, &param);
    if (ret) {
        std::perror("rdma_connect");
        return ret;
    }

    cb->sem.wait();
    if (cb->state != kConnected) {
        std::fprintf(stderr, "wait for CONNECTED state %d\n", cb->state.load());
        return -1;
    }

    if (cb->settings.self_create_qp) {
        ret = self_modify_qp(cb, cb->cm_id);
        if (ret) {
            std::perror("rping_modify_qp");
            return ret;
        }
        ret = rdma_establish(cb->cm_id);
        if (ret) {
            std::perror("rdma_establish");
            return ret;
        }
    }

    debug_log("rdma_connect successful\n");
    return 0;
}

int bind_client(Session* cb) {
    auto* sin = &cb->settings.sin;
    if (sin->ss_family == AF_INET)
        reinterpret_cast<sockaddr_in*>(sin)->sin_port = cb->settings.port_be;
    else
        reinterpret_cast<sockaddr_in6*>(sin)->sin6_port = cb->settings.port_be;

    sockaddr* source = cb->settings.ssource.ss_family ? reinterpret_cast<sockaddr*>(&cb->settings.ssource) : nullptr;
    int ret = rdma_resolve_addr(cb->cm_id, source, reinterpret_cast<sockaddr*>(sin), 2000);
    if (ret) {
        std::perror("rdma_resolve_addr");
        return ret;
    }

    cb->sem.wait();
    if (cb->state != kRouteResolved) {
        std::fprintf(stderr, "waiting for addr/route resolution state %d\n", cb->state.load());
        return -1;
    }
    debug_log("rdma_resolve_addr - rdma_resolve_route successful\n");
    return 0;
}

int run_client(Session* cb) {
    int ret = bind_client(cb);
    if (ret)
        return ret;

    ret = start_session(cb, cb->cm_id);
    if (ret)
        return ret;
    ret = connect_client(cb);
    if (ret) {
        // The event thread ends the process once it has reported the
        // failed event; until then the completion thread keeps us here.
        std::fprintf(stderr, "connect error %d\n", ret);
        goto err3;
    }
    ret = test_client(cb);
    if (ret) {
        std::fprintf(stderr, "rping client failed: %d\n", ret);
        goto err4;
    }
    ret = 0;
err4:
    rping_disconnect(cb, cb->cm_id);
err3:
    pthread_join(cb->cq_thread, nullptr);
    free_buffers(cb);
    free_qp(cb);
    return ret;
}

// getaddrinfo() without hints; the first answer must be IPv4 or IPv6.
int get_addr(const char* dst, sockaddr_storage* addr) {
    addrinfo* res;
    int ret = getaddrinfo(dst, nullptr, nullptr, &res);
    if (ret) {
        std::printf("getaddrinfo failed (%s) - invalid hostname or IP address\n", gai_strerror(ret));
        return ret;
    }
    if (res->ai_family == PF_INET)
        std::memcpy(addr, res->ai_addr, sizeof(sockaddr_in));
    else if (res->ai_family == PF_INET6)
        std::memcpy(addr, res->ai_addr, sizeof(sockaddr_in6));
    else
        ret = -1;
    freeaddrinfo(res);
    return ret;
}

void usage() {
    // The reference names itself "rping" here whatever argv[0] says.
    const char* name = "rping";
    std::printf("%s -s [-vVd] [-S size] [-C count] [-a addr] [-p port]\n", name);
    std::printf("%s -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]\n", name);
    std::printf("\t-c\t\tclient side\n");
    std::printf("\t-I\t\tSource address to bind to for client.\n");
    std::printf("\t-s\t\tserver side.  To bind to any address with IPv6 use -a ::0\n");
    std::printf("\t-v\t\tdisplay ping data to stdout\n");
    std::printf("\t-V\t\tvalidate ping data\n");
    std::printf("\t-d\t\tdebug printfs\n");
    std::printf("\t-S size \tping data size\n");
    std::printf("\t-C count\tping count times\n");
    std::printf("\t-a addr\t\taddress\n");
    std::printf("\t-p port\t\tport\n");
    std::printf("\t-P\t\tpersistent server mode allowing multiple connections\n");
    std::printf("\t-q\t\tuse self-created, self-modified QP\n");
}

}  // namespace

int main(int argc, char* argv[]) {
    Settings settings;
    int server = -1;
    bool persistent = false;
    int ret = 0;

    settings.sin.ss_family = PF_INET;

    // getopt stays quiet: an unknown option just shows the usage text.
    opterr = 0;
    int op;
    while ((op = getopt(argc, argv, "a:I:Pp:C:S:t:scvVdq")) != -1) {
        switch (op) {
        case 'a': ret = get_addr(optarg, &settings.sin); break;
        case 'I': ret = get_addr(optarg, &settings.ssource); break;
        case 'P': persistent = true; break;
        case 'p':
            settings.port_be = htobe16(static_cast<uint16_t>(to_int(optarg)));
            debug_log("port %d\n", to_int(optarg));
            break;
        case 's':
            server = 1;
            debug_log("server\n");
            break;
        case 'c':
            server = 0;
            debug_log("client\n");
            break;
        case 'S':
            settings.size = to_int(optarg);
            if (settings.size < static_cast<int>(kMinBufferSize) || settings.size > kMaxBufferSize - 1) {
                std::fprintf(stderr, "Invalid size %d (valid range is %zd to %d)\n", settings.size, kMinBufferSize,
                             kMaxBufferSize);
                ret = EINVAL;
            } else {
                debug_log("size %d\n", to_int(optarg));
            }
            break;
        case 'C':
            settings.count = to_int(optarg);
            if (settings.count < 0) {
                std::fprintf(stderr, "Invalid count %d\n", settings.count);
                ret = EINVAL;
            } else {
                debug_log("count %d\n", settings.count);
            }
            break;
        case 'v':
            settings.verbose++;
            debug_log("verbose\n");
            break;
        case 'V':
            settings.validate++;
            debug_log("validate data\n");
            break;
        case 'd': debug++; break;
        case 'q': settings.self_create_qp = true; break;
        default:
            // Includes -t, which the option string accepts but
            // nothing implements.
            usage();
            return EINVAL;
        }
    }
    if (ret)
        return ret;
    if (server == -1) {
        usage();
        return EINVAL;
    }
    settings.server = server == 1;

    auto cb = std::make_unique<Session>(settings);
    cb->cm_channel = create_first_event_channel();
    if (!cb->cm_channel)
        return errno;

    ret = rdma_create_id(cb->cm_channel, &cb->cm_id, cb.get(), RDMA_PS_TCP);
    if (ret) {
        std::perror("rdma_create_id");
        rdma_destroy_event_channel(cb->cm_channel);
        return ret;
    }
    debug_log("created cm_id %p\n", static_cast<void*>(cb->cm_id));

    pthread_t cm_events;
    ret = pthread_create(&cm_events, nullptr, cm_thread, cb.get());
    if (ret) {
        std::perror("pthread_create");
        rdma_destroy_event_channel(cb->cm_channel);
        return ret;
    }

    if (cb->server())
        ret = persistent ? run_persistent_server(cb.get()) : run_server(cb.get());
    else
        ret = run_client(cb.get());

    // The event thread is left blocked on the channel; it has nothing more
    // to receive once the id is gone.
    debug_log("destroy cm_id %p\n", static_cast<void*>(cb->cm_id));
    rdma_destroy_id(cb->cm_id);
    channel_closing = true;
    rdma_destroy_event_channel(cb->cm_channel);
    return ret;
}
