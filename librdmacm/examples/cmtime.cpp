// cmtime: time the steps of RDMA CM connection setup and teardown.
//
// The client opens `connections` RC connections to the server one step at a
// time for all of them (create ids, bind, resolve addresses, resolve routes,
// create QPs, connect, disconnect, destroy), timing each step as a whole
// and for every connection, and prints a table of the results. The server
// accepts and disconnects whatever comes, forever; it answers requests and
// disconnects on two worker threads while a third reads CM events.
//
// Messages, the table layout and exit statuses are those of rdmacm-utils
// 44. Times are kept the way the reference keeps them (gettimeofday, single
// precision sums), so the table reads the same, down to a step nobody
// finished showing a minimum of 1000000000.00 us.

#include "cm_common.h"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <new>
#include <vector>

namespace {

using namespace cm_examples;

enum Step { kCreateId, kBind, kResolveAddr, kResolveRoute, kCreateQp, kConnect, kDisconnect, kDestroy, kStepCount };

constexpr const char* kStepNames[kStepCount] = {
    "create id", "bind addr", "resolve addr", "resolve route", "create qp", "connect", "disconnect", "destroy",
};

// [step][0] is the start, [step][1] the end; all zero until measured.
using Times = timeval[kStepCount][2];

struct Node {
    rdma_cm_id* id = nullptr;
    Times times{};
    bool error = false;
    int retries = 0;
};

// Ids handed from the event thread to a worker.
class WorkQueue {
public:
    bool push(rdma_cm_id* id) {
        try {
            std::lock_guard lock(mutex_);
            items_.push_back(id);
        } catch (const std::bad_alloc&) {
            return false;
        }
        cond_.notify_one();
        return true;
    }

    rdma_cm_id* pop() {
        std::unique_lock lock(mutex_);
        cond_.wait(lock, [this] { return !items_.empty(); });
        rdma_cm_id* id = items_.front();
        items_.pop_front();
        return id;
    }

private:
    std::mutex mutex_;
    std::condition_variable cond_;
    std::deque<rdma_cm_id*> items_;
};

rdma_addrinfo hints;
rdma_addrinfo* rai;
rdma_event_channel* channel;
const char* port = "7471";
const char* dst_addr;
const char* src_addr;
int timeout = 2000;
int retries = 2;

// Set before main closes the channel under the event thread, which may
// not have reached its read yet and must then end quietly.
std::atomic<bool> channel_closing{false};

WorkQueue req_work;
WorkQueue disc_work;
std::vector<Node> nodes;
Times times{};
int connections = 100;
std::atomic<int> started[kStepCount];
std::atomic<int> completed[kStepCount];
ibv_qp_init_attr init_qp_attr;
rdma_conn_param conn_param;

void stamp(timeval& tv) { gettimeofday(&tv, nullptr); }

void start_perf(Node& n, Step s) { stamp(n.times[s][0]); }

void end_perf(Node& n, Step s) { stamp(n.times[s][1]); }

void start_time(Step s) { stamp(times[s][0]); }

void end_time(Step s) { stamp(times[s][1]); }

bool zero_time(const timeval& t) { return !(t.tv_sec || t.tv_usec); }

// Microseconds, computed in double and kept in single precision.
float diff_us(const timeval& end, const timeval& start) {
    return static_cast<float>(static_cast<double>(end.tv_sec - start.tv_sec) * 1000000. +
                              static_cast<double>(end.tv_usec - start.tv_usec));
}

void show_perf() {
    float max[kStepCount], min[kStepCount];

    for (int i = 0; i < kStepCount; i++) {
        max[i] = 0;
        min[i] = 999999999.f;
        for (const Node& n : nodes) {
            if (zero_time(n.times[i][0]) || zero_time(n.times[i][1]))
                continue;
            float us = diff_us(n.times[i][1], n.times[i][0]);
            if (us > max[i])
                max[i] = us;
            if (us < min[i])
                min[i] = us;
        }
    }

    std::printf("step              total ms     max ms     min us  us / conn\n");
    for (int i = 0; i < kStepCount; i++) {
        if (i == kBind && !src_addr)
            continue;
        float us = diff_us(times[i][1], times[i][0]);
        float per_conn = us / static_cast<float>(connections);
        std::printf("%-13s: %11.2f%11.2f%11.2f%11.2f\n", kStepNames[i], us / 1000., max[i] / 1000.,
                    static_cast<double>(min[i]), static_cast<double>(per_conn));
    }
}

void addr_handler(Node& n) {
    end_perf(n, kResolveAddr);
    completed[kResolveAddr]++;
}

void route_handler(Node& n) {
    end_perf(n, kResolveRoute);
    completed[kResolveRoute]++;
}

void conn_handler(Node& n) {
    end_perf(n, kConnect);
    completed[kConnect]++;
}

void disc_handler(Node& n) {
    end_perf(n, kDisconnect);
    completed[kDisconnect]++;
}

// The server side of a request: a QP on the device's default PD, then the
// accept; anything failing turns into a reject.
void handle_request(rdma_cm_id* id) {
    if (rdma_create_qp(id, nullptr, &init_qp_attr)) {
        std::perror("failure creating qp");
    } else if (rdma_accept(id, nullptr)) {
        std::perror("failure accepting");
        rdma_destroy_qp(id);
    } else {
        return;
    }
    std::printf("failing connection request\n");
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
}

void* req_handler_thread(void*) {
    for (;;)
        handle_request(req_work.pop());
    return nullptr;
}

void* disc_handler_thread(void*) {
    for (;;) {
        rdma_cm_id* id = disc_work.pop();
        rdma_disconnect(id);
        rdma_destroy_qp(id);
        rdma_destroy_id(id);
    }
    return nullptr;
}

void cma_handler(rdma_cm_id* id, rdma_cm_event* event) {
    // Client ids carry their node; the server's ids carry nothing.
    auto* n = static_cast<Node*>(id->context);

    switch (event->event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: addr_handler(*n); break;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: route_handler(*n); break;
    case RDMA_CM_EVENT_CONNECT_REQUEST:
        if (!req_work.push(id)) {
            std::perror("out of memory accepting connect request");
            rdma_reject(id, nullptr, 0);
            rdma_destroy_id(id);
        }
        break;
    case RDMA_CM_EVENT_ESTABLISHED:
        if (n)
            conn_handler(*n);
        break;
    case RDMA_CM_EVENT_ADDR_ERROR:
        if (n->retries-- && !rdma_resolve_addr(n->id, rai->ai_src_addr, rai->ai_dst_addr, timeout))
            break;
        std::printf("RDMA_CM_EVENT_ADDR_ERROR, error: %d\n", event->status);
        addr_handler(*n);
        n->error = true;
        break;
    case RDMA_CM_EVENT_ROUTE_ERROR:
        if (n->retries-- && !rdma_resolve_route(n->id, timeout))
            break;
        std::printf("RDMA_CM_EVENT_ROUTE_ERROR, error: %d\n", event->status);
        route_handler(*n);
        n->error = true;
        break;
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_REJECTED:
        std::printf("event: %s, error: %d\n", rdma_event_str(event->event), event->status);
        conn_handler(*n);
        n->error = true;
        break;
    case RDMA_CM_EVENT_DISCONNECTED:
        if (!n) {
            if (!disc_work.push(id)) {
                std::perror("out of memory queueing disconnect request, handling synchronously");
                rdma_disconnect(id);
                rdma_destroy_qp(id);
                rdma_destroy_id(id);
            }
        } else {
            disc_handler(*n);
        }
        break;
    default:
        // Device removal included: the test cleans up at its end.
        break;
    }
    rdma_ack_cm_event(event);
}

// Reads CM events until the channel fails; never returns normally.
void* process_events(void*) {
    int ret = 0;
    while (!ret) {
        rdma_cm_event* event;
        ret = rdma_get_cm_event(channel, &event);
        if (!ret) {
            cma_handler(event->id, event);
        } else if (channel_closing) {
            break;
        } else {
            std::perror("failure in rdma_get_cm_event in process_server_events");
            ret = errno;
        }
    }
    return nullptr;
}

int create_ids() {
    std::printf("creating id\n");
    start_time(kCreateId);
    for (std::size_t i = 0; i < nodes.size(); i++) {
        Node& n = nodes[i];
        start_perf(n, kCreateId);
        if (dst_addr) {
            int ret = rdma_create_id(channel, &n.id, &n, static_cast<rdma_port_space>(hints.ai_port_space));
            if (ret) {
                while (i-- > 0)
                    rdma_destroy_id(nodes[i].id);
                nodes.clear();
                return ret;
            }
        }
        end_perf(n, kCreateId);
    }
    end_time(kCreateId);
    return 0;
}

void cleanup_nodes() {
    std::printf("destroying id\n");
    start_time(kDestroy);
    for (Node& n : nodes) {
        start_perf(n, kDestroy);
        if (n.id)
            rdma_destroy_id(n.id);
        end_perf(n, kDestroy);
    }
    end_time(kDestroy);
}

int run_server() {
    pthread_t req_thread, disc_thread;
    int ret = pthread_create(&req_thread, nullptr, req_handler_thread, nullptr);
    if (ret) {
        std::perror("failed to create req handler thread");
        return ret;
    }
    ret = pthread_create(&disc_thread, nullptr, disc_handler_thread, nullptr);
    if (ret) {
        std::perror("failed to create disconnect handler thread");
        return ret;
    }

    rdma_cm_id* listen_id;
    ret = rdma_create_id(channel, &listen_id, nullptr, static_cast<rdma_port_space>(hints.ai_port_space));
    if (ret) {
        std::perror("listen request failed");
        return ret;
    }

    ret = get_rdma_addr(src_addr, dst_addr, port, &hints, &rai);
    if (ret) {
        std::printf("getrdmaaddr error: %s\n", gai_strerror(ret));
    } else if ((ret = rdma_bind_addr(listen_id, rai->ai_src_addr))) {
        std::perror("bind address failed");
    } else if ((ret = rdma_listen(listen_id, 0))) {
        std::perror("failure trying to listen");
    } else {
        process_events(nullptr);
    }
    rdma_destroy_id(listen_id);
    return ret;
}

// Starts one step on every node still in the race and waits until the
// event thread has seen each of them finish (or fail). `ret` keeps the
// status of the last call made, across steps: a step with no node left
// leaves it as it was, which is what the program finally returns.
template <typename Start>
void run_step(Step step, const char* perror_text, int& ret, Start start) {
    for (Node& n : nodes) {
        if (n.error)
            continue;
        n.retries = retries;
        start_perf(n, step);
        ret = start(n);
        if (ret) {
            std::perror(perror_text);
            n.error = true;
            continue;
        }
        started[step]++;
    }
    while (started[step] != completed[step])
        sched_yield();
}

int run_client() {
    int ret = get_rdma_addr(src_addr, dst_addr, port, &hints, &rai);
    if (ret) {
        std::printf("getaddrinfo error: %s\n", gai_strerror(ret));
        return ret;
    }

    conn_param.responder_resources = 1;
    conn_param.initiator_depth = 1;
    conn_param.retry_count = static_cast<uint8_t>(retries);
    conn_param.private_data = rai->ai_connect;
    conn_param.private_data_len = static_cast<uint8_t>(rai->ai_connect_len);

    pthread_t event_thread;
    ret = pthread_create(&event_thread, nullptr, process_events, nullptr);
    if (ret) {
        std::perror("failure creating event thread");
        return ret;
    }

    if (src_addr) {
        std::printf("binding source address\n");
        start_time(kBind);
        for (Node& n : nodes) {
            start_perf(n, kBind);
            ret = rdma_bind_addr(n.id, rai->ai_src_addr);
            if (ret) {
                std::perror("failure bind addr");
                n.error = true;
                continue;
            }
            end_perf(n, kBind);
        }
        end_time(kBind);
    }

    std::printf("resolving address\n");
    start_time(kResolveAddr);
    run_step(kResolveAddr, "failure getting addr", ret,
             [](Node& n) { return rdma_resolve_addr(n.id, rai->ai_src_addr, rai->ai_dst_addr, timeout); });
    end_time(kResolveAddr);

    std::printf("resolving route\n");
    start_time(kResolveRoute);
    run_step(kResolveRoute, "failure resolving route", ret, [](Node& n) { return rdma_resolve_route(n.id, timeout); });
    end_time(kResolveRoute);

    // QP creation is synchronous: no events to wait for.
    std::printf("creating qp\n");
    start_time(kCreateQp);
    for (Node& n : nodes) {
        if (n.error)
            continue;
        start_perf(n, kCreateQp);
        ret = rdma_create_qp(n.id, nullptr, &init_qp_attr);
        if (ret) {
            std::perror("failure creating qp");
            n.error = true;
            continue;
        }
        end_perf(n, kCreateQp);
    }
    end_time(kCreateQp);

    std::printf("connecting\n");
    start_time(kConnect);
    run_step(kConnect, "failure rconnecting", ret, [](Node& n) { return rdma_connect(n.id, &conn_param); });
    end_time(kConnect);

    std::printf("disconnecting\n");
    start_time(kDisconnect);
    for (Node& n : nodes) {
        if (n.error)
            continue;
        start_perf(n, kDisconnect);
        rdma_disconnect(n.id);
        rdma_destroy_qp(n.id);
        started[kDisconnect]++;
    }
    while (started[kDisconnect] != completed[kDisconnect])
        sched_yield();
    end_time(kDisconnect);

    return ret;
}

}  // namespace

int main(int argc, char** argv) {
    hints.ai_port_space = RDMA_PS_TCP;
    hints.ai_qp_type = IBV_QPT_RC;

    int op;
    while ((op = getopt(argc, argv, "s:b:c:p:r:t:")) != -1) {
        switch (op) {
        case 's': dst_addr = optarg; break;
        case 'b': src_addr = optarg; break;
        case 'c': connections = to_int(optarg); break;
        case 'p': port = optarg; break;
        case 'r': retries = to_int(optarg); break;
        case 't': timeout = to_int(optarg); break;
        default:
            std::printf("usage: %s\n", argv[0]);
            std::printf("\t[-s server_address]\n");
            std::printf("\t[-b bind_address]\n");
            std::printf("\t[-c connections]\n");
            std::printf("\t[-p port_number]\n");
            std::printf("\t[-r retries]\n");
            std::printf("\t[-t timeout_ms]\n");
            std::exit(1);
        }
    }

    init_qp_attr.cap.max_send_wr = 1;
    init_qp_attr.cap.max_recv_wr = 1;
    init_qp_attr.cap.max_send_sge = 1;
    init_qp_attr.cap.max_recv_sge = 1;
    init_qp_attr.qp_type = IBV_QPT_RC;

    channel = create_first_event_channel();
    if (!channel)
        std::exit(1);

    int ret;
    if (dst_addr) {
        nodes.assign(static_cast<std::size_t>(connections > 0 ? connections : 0), Node{});
        ret = create_ids();
        if (!ret)
            ret = run_client();
    } else {
        hints.ai_flags |= RAI_PASSIVE;
        ret = run_server();
    }

    cleanup_nodes();
    channel_closing = true;
    rdma_destroy_event_channel(channel);
    if (rai)
        rdma_freeaddrinfo(rai);

    show_perf();
    return ret;
}
