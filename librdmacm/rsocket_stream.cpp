// SOCK_STREAM rsockets: one RC QP per connection, data moved by RDMA WRITE
// WITH IMMEDIATE into the peer's receive buffer (rsocket_wire.h describes
// the protocol).
//
// Each rsocket owns an rdma_cm event channel whose fd is the rsocket's
// index, exactly like the reference: a real, unique descriptor the
// application can keep beside its other fds, and the one rpoll sleeps on
// while a connection is being set up. Once connected the socket also owns a
// completion channel; every blocking wait polls both, so that a peer that
// disappears (DISCONNECTED from the CM) wakes blocked readers and writers.
// Both fds stay O_NONBLOCK: the socket's own O_NONBLOCK only decides
// whether a call waits.
//
// Locking: mu_ guards all connection state, CQ polling and posting.
// send_mu_ / recv_mu_ make concurrent rsend (rrecv) calls take turns, as
// stream semantics require. A thread that must wait for the peer either
// becomes the one "sleeper" that polls the kernel fds, or waits on cv_ for
// the sleeper to report progress; that way no wake-up is lost when two
// threads (a reader and a writer) wait on the same socket.
#include "rsocket_internal.h"
#include "rsocket_options.h"
#include "rsocket_wire.h"
#include "util/unique_fd.h"

#include <endian.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <new>
#include <vector>

#include <infiniband/ib.h>
#include <infiniband/sa.h>
#include <rdma/rsocket.h>

namespace rdma::rs {
namespace {

using wire::Op;

enum State : int {
    kInit = 0,
    kBound = 0x0001,
    kListening = 0x0002,
    kOpening = 0x0004,
    kResolvingAddr = kOpening | 0x0010,
    kResolvingRoute = kOpening | 0x0020,
    kConnecting = kOpening | 0x0040,
    kAccepting = kOpening | 0x0080,
    kConnected = 0x0100,
    kWritable = 0x0200,
    kReadable = 0x0400,
    kConnectRdwr = kConnected | kReadable | kWritable,
    kConnectError = 0x0800,
    kDisconnected = 0x1000,
    kError = 0x2000,
};

constexpr uint64_t kRecvWrFlag = 1ull << 63;
constexpr int kPollBatch = 16;

// A received message not yet consumed by rrecv: its opcode and remaining
// byte count.
struct RecvMsg {
    uint32_t op;
    uint32_t data;
};

// A buffer registered by riomap. index >= 0: announced to the peer in slot
// `index` of its iomap table; -1: local registration only.
struct IomapMr {
    uint64_t offset = 0;
    MrPtr mr;
    int index = -1;
};

// Walks an iovec array as one byte stream.
struct IovCursor {
    const iovec* iov;
    int cnt;
    size_t off = 0;

    void skip_empty() {
        while (cnt > 0 && off == iov->iov_len) {
            ++iov;
            --cnt;
            off = 0;
        }
    }
    // Contiguous bytes available at the cursor.
    size_t contiguous() {
        skip_empty();
        return cnt > 0 ? iov->iov_len - off : 0;
    }
    const uint8_t* ptr() const { return static_cast<const uint8_t*>(iov->iov_base) + off; }
    void advance(size_t n) {
        while (n) {
            skip_empty();
            size_t take = std::min(n, iov->iov_len - off);
            off += take;
            n -= take;
        }
    }
    void copy_out(uint8_t* dst, size_t n) {
        while (n) {
            size_t take = std::min(n, contiguous());
            std::memcpy(dst, ptr(), take);
            dst += take;
            n -= take;
            off += take;
        }
    }
    void copy_in(const uint8_t* src, size_t n) {
        while (n) {
            size_t take = std::min(n, contiguous());
            std::memcpy(static_cast<uint8_t*>(iov->iov_base) + off, src, take);
            src += take;
            n -= take;
            off += take;
        }
    }
};

size_t iov_total(const iovec* iov, int cnt) {
    size_t total = 0;
    for (int i = 0; i < cnt; i++)
        total += iov[i].iov_len;
    return total;
}

// Maps a CM event's status to an errno the way a failed synchronous
// rdma_cm call reports it.
int event_errno(const rdma_cm_event& ev) {
    if (ev.event == RDMA_CM_EVENT_REJECTED)
        return ECONNREFUSED;
    if (ev.status < 0)
        return -ev.status;
    if (ev.status > 0)
        return ev.status;
    return ECONNABORTED;
}

class StreamSocket;

// Connections that completed in the background, waiting for raccept.
struct AcceptQueue {
    Fd ready_fd;  // eventfd (semaphore): readable while sockets are queued
    std::mutex mu;
    std::deque<std::unique_ptr<StreamSocket>> ready;
    size_t limit = 1;  // the listen backlog
    long token = 0;  // service registration; 0 while paused or closed
    bool paused = false;  // full: requests wait in the kernel's backlog
    int error = 0;
};

class StreamSocket final : public Socket {
public:
    StreamSocket() : Socket(Kind::Stream) {}
    ~StreamSocket() override;

    Status init(int domain);
    // Builds the socket for a connection request taken from `listener`.
    static std::unique_ptr<StreamSocket> from_request(StreamSocket& listener, rdma_cm_event* ev);

    Status bind(const sockaddr* addr, socklen_t len) override;
    Status listen(int backlog) override;
    Result<std::unique_ptr<Socket>> accept() override;
    Status connect(const sockaddr* addr, socklen_t len) override;
    Result<ssize_t> recv(const iovec* iov, int iovcnt, int flags, sockaddr* src, socklen_t* srclen) override;
    Result<ssize_t> send(const iovec* iov, int iovcnt, int flags, const sockaddr* dst, socklen_t dstlen) override;
    Status shutdown(int how) override;
    void close() override;
    Status getpeername(sockaddr* addr, socklen_t* len) override;
    Status getsockname(sockaddr* addr, socklen_t* len) override;
    Status setsockopt(int level, int name, const void* val, socklen_t len) override;
    Status getsockopt(int level, int name, void* val, socklen_t* len) override;
    int get_flags() override;
    void set_flags(int flags) override;
    Result<off_t> iomap(void* buf, size_t len, int prot, int flags, off_t offset) override;
    Status iounmap(void* buf, size_t len) override;
    Result<ssize_t> iowrite(const void* buf, size_t count, off_t offset, int flags) override;
    short poll_check(short events) override;
    int poll_sleep_fds(pollfd* fds) override;
    void poll_woken() override;

private:
    using Lock = std::unique_lock<std::mutex>;

    // ---- setup
    int cm_fd() const { return channel_->fd; }
    Status create_ep();
    void save_peer(const wire::PeerInfo& peer);
    wire::ConnData conn_data() const;
    size_t conn_data_offset() const { return domain_ == AF_IB ? wire::kIbConnectHdrSize : 0; }
    Status start_resolve();
    Status advance_connect(Lock& lk, bool nonblock);
    Status process_cm_events(Lock& lk);
    void handle_cm_event(const rdma_cm_event& ev);
    void connect_failed(int err);
    void peer_disconnected();
    void on_listen_event();
    Status set_keepalive(bool on);
    void on_keepalive_timer();

    // ---- data path (mu_ held)
    bool nonblocking(int flags) const { return (fd_flags_ & O_NONBLOCK) || (flags & MSG_DONTWAIT); }
    bool ctrl_avail() const { return ctrl_seqno_ != ctrl_max_seqno_; }
    bool can_send() const {
        return sqe_avail_ > 0 && sbuf_bytes_avail_ >= kSendLowWater && sseq_no_ != sseq_comp_ &&
            target_sgl_[target_sge_].length != 0;
    }
    bool have_rdata() const { return rmsg_head_ != rmsg_tail_; }
    bool all_sends_done() const {
        return (static_cast<int>(ctrl_max_seqno_) - static_cast<int>(ctrl_seqno_)) + sqe_avail_ == sq_size_;
    }
    uint32_t sbuf_left() const {
        return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(sbuf_.get() + sbuf_size_) - ssgl_[0].addr);
    }
    Status post(ibv_send_wr& wr);
    Status post_msg(uint32_t msg);
    Status post_write(ibv_sge* sgl, int nsge, uint32_t wr_data, int flags, uint64_t addr, uint32_t rkey);
    Status post_write_msg(ibv_sge* sgl, int nsge, uint32_t msg, int flags, uint64_t addr, uint32_t rkey);
    Status post_recv();
    Status write_data(ibv_sge* sgl, int nsge, uint32_t length, int flags);
    void send_credits();
    void update_credits();
    void poll_cq();
    void drain_cq_events();
    void progress();
    template <class Pred>
    Status wait_until(Lock& lk, bool nonblock, Pred pred);
    bool cm_fd_readable() const;
    // Copies `len` bytes into the send buffer ring (one or two SGEs).
    Status stage_and_write(IovCursor& cur, uint32_t len, bool direct, const wire::Iomap* iom, uint64_t offset);
    Status send_iomaps(Lock& lk, int flags);
    void copy_from_rbuf(IovCursor& cur, uint32_t& offset, uint32_t n);
    bool find_iomap(uint64_t offset, wire::Iomap& out) const;
    Status finish_open(Lock& lk, bool nonblock);

    // ---- identity
    int domain_ = AF_INET;
    rdma_event_channel* channel_ = nullptr;
    rdma_cm_id* id_ = nullptr;
    ibv_pd* pd_ = nullptr;
    ibv_comp_channel* cq_channel_ = nullptr;
    ibv_cq* cq_ = nullptr;

    // ---- tunables (fixed once the endpoint exists)
    uint32_t sbuf_size_ = 0;
    uint32_t rbuf_size_ = 0;
    uint16_t sq_size_ = 0;
    uint16_t rq_size_ = 0;
    uint16_t sq_inline_ = 0;
    uint32_t target_iomap_size_ = 0;
    std::vector<uint8_t> route_;  // RDMA_ROUTE path data to use instead of route resolution

    // ---- options
    uint64_t so_opts_ = 0;
    uint64_t tcp_opts_ = 0;
    uint64_t ipv6_opts_ = 0;
    unsigned keepalive_time_ = 0;
    Fd keepalive_timer_;
    long keepalive_token_ = 0;
    int fd_flags_ = 0;

    // ---- connection state
    int state_ = kInit;
    int err_ = 0;
    int retries_ = 0;

    // ---- buffers
    std::unique_ptr<uint8_t[]> sbuf_;
    std::unique_ptr<uint8_t[]> rbuf_;
    std::unique_ptr<uint8_t[]> target_buf_;
    MrPtr smr_, rmr_, target_mr_;
    volatile wire::Sge* target_sgl_ = nullptr;  // written by the peer
    volatile wire::Iomap* target_iomap_ = nullptr;  // written by the peer
    std::unique_ptr<RecvMsg[]> rmsg_;
    int rmsg_head_ = 0;
    int rmsg_tail_ = 0;

    // ---- flow control
    uint32_t ctrl_seqno_ = 0;
    uint32_t ctrl_max_seqno_ = kCtrlSlots;
    uint16_t sseq_no_ = 0;
    uint16_t sseq_comp_ = 0;
    uint16_t rseq_no_ = 0;
    uint16_t rseq_comp_ = 0;
    uint32_t remote_sge_ = 0;
    wire::Sge remote_sgl_{};
    wire::Sge remote_iomap_{};
    bool swap_sgl_ = false;
    int target_sge_ = 0;
    uint32_t rbuf_bytes_avail_ = 0;
    uint32_t rbuf_free_offset_ = 0;
    uint32_t rbuf_offset_ = 0;
    uint32_t sbuf_bytes_avail_ = 0;
    ibv_sge ssgl_[2]{};
    int sqe_avail_ = 0;
    bool cq_armed_ = false;
    unsigned unack_cqe_ = 0;

    // ---- iomaps
    std::vector<IomapMr> remote_iomappings_;  // one per slot of the peer's iomap table
    std::list<IomapMr*> iomap_list_;  // announced (or local only)
    std::list<IomapMr*> iomap_queue_;  // to announce with the next send
    std::list<IomapMr> local_iomappings_;  // storage of the local-only ones
    bool iomap_pending_ = false;

    // ---- waiting
    std::mutex mu_, send_mu_, recv_mu_, map_mu_;
    std::condition_variable cv_;
    bool sleeper_ = false;
    uint64_t gen_ = 0;

    // ---- listening
    std::unique_ptr<AcceptQueue> accept_q_;
};

// ------------------------------------------------------------------ setup

Status StreamSocket::init(int domain) {
    const Config& cfg = config();
    domain_ = domain;
    sbuf_size_ = cfg.wmem_default;
    rbuf_size_ = cfg.mem_default;
    sq_inline_ = cfg.inline_default;
    sq_size_ = cfg.sqsize_default;
    rq_size_ = cfg.rqsize_default;
    target_iomap_size_ = cfg.iomap_size;

    channel_ = rdma_create_event_channel();
    if (!channel_)
        return errno_or(ENOMEM);
    if (Status s = set_nonblocking(channel_->fd, true); !s.ok())
        return s;
    if (rdma_create_id(channel_, &id_, this, RDMA_PS_TCP))
        return errno_or(ENOMEM);
    index_ = channel_->fd;
    return {};
}

StreamSocket::~StreamSocket() {
    if (accept_q_)
        Service::get().remove(std::exchange(accept_q_->token, 0));
    if (keepalive_token_)
        Service::get().remove(keepalive_token_);
    if (id_ && id_->qp) {
        if (cq_ && unack_cqe_)
            ibv_ack_cq_events(cq_, unack_cqe_);
        unack_cqe_ = 0;
        rdma_destroy_qp(id_);
    }
    if (cq_) {
        if (unack_cqe_)
            ibv_ack_cq_events(cq_, unack_cqe_);
        ibv_destroy_cq(cq_);
    }
    if (cq_channel_)
        ibv_destroy_comp_channel(cq_channel_);
    // Registrations go before the id: an id without other users may take
    // its device's PD with it in some implementations.
    iomap_list_.clear();
    iomap_queue_.clear();
    local_iomappings_.clear();
    remote_iomappings_.clear();
    smr_.reset();
    rmr_.reset();
    target_mr_.reset();
    if (id_)
        rdma_destroy_id(id_);
    if (channel_)
        rdma_destroy_event_channel(channel_);
}

Status StreamSocket::create_ep() {
    ibv_context* verbs = id_->verbs;
    if (!verbs)
        return Errno{EINVAL};
    Result<ibv_pd*> pd = device_pd(id_);
    if (!pd.ok())
        return Errno{pd.error()};
    pd_ = pd.value();

    ibv_device_attr dattr{};
    uint32_t max_size = kQpMaxSize;
    if (!ibv_query_device(verbs, &dattr) && dattr.max_qp_wr > 0)
        max_size = std::min<uint32_t>(max_size, static_cast<uint32_t>(dattr.max_qp_wr));
    sq_size_ = static_cast<uint16_t>(std::clamp<uint32_t>(sq_size_, kQpMinSize, max_size));
    rq_size_ = static_cast<uint16_t>(std::clamp<uint32_t>(rq_size_, kQpMinSize, max_size));

    // iWARP cannot carry immediate data with an RDMA write; the reference
    // then sends its messages separately. We only speak the write-with-
    // immediate form.
    if (verbs->device->transport_type == IBV_TRANSPORT_IWARP)
        return Errno{EOPNOTSUPP};

    cq_channel_ = ibv_create_comp_channel(verbs);
    if (!cq_channel_)
        return errno_or(ENOMEM);
    if (Status s = set_nonblocking(cq_channel_->fd, true); !s.ok())
        return s;
    cq_ = ibv_create_cq(verbs, sq_size_ + rq_size_, this, cq_channel_, 0);
    if (!cq_)
        return errno_or(ENOMEM);

    ibv_qp_init_attr attr{};
    attr.qp_context = this;
    attr.send_cq = cq_;
    attr.recv_cq = cq_;
    attr.qp_type = IBV_QPT_RC;
    attr.sq_sig_all = 1;
    attr.cap.max_send_wr = sq_size_;
    attr.cap.max_recv_wr = rq_size_;
    attr.cap.max_send_sge = 2;
    attr.cap.max_recv_sge = 1;
    attr.cap.max_inline_data = sq_inline_;
    if (rdma_create_qp(id_, pd_, &attr))
        return errno_or(ENOMEM);
    sq_inline_ = static_cast<uint16_t>(std::min<uint32_t>(attr.cap.max_inline_data, kQpMaxSize));

    // Failures are values here, not exceptions: this also runs on the
    // service thread for an accepted request, which must then be rejected.
    rmsg_.reset(new (std::nothrow) RecvMsg[rq_size_ + 1]());
    uint32_t total_sbuf = sbuf_size_;
    if (sq_inline_ < sizeof(wire::Sge))
        total_sbuf += sizeof(wire::Sge) * kCtrlSlots;
    sbuf_.reset(new (std::nothrow) uint8_t[total_sbuf]());
    size_t table_len = sizeof(wire::Sge) * wire::kTargetSglEntries + sizeof(wire::Iomap) * target_iomap_size_;
    target_buf_.reset(new (std::nothrow) uint8_t[table_len]());
    rbuf_.reset(new (std::nothrow) uint8_t[rbuf_size_ ? rbuf_size_ : 1]());
    if (!rmsg_ || !sbuf_ || !target_buf_ || !rbuf_)
        return Errno{ENOMEM};

    smr_.reset(ibv_reg_mr(pd_, sbuf_.get(), total_sbuf, IBV_ACCESS_LOCAL_WRITE));
    target_mr_.reset(ibv_reg_mr(pd_, target_buf_.get(), table_len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
    rmr_.reset(
        ibv_reg_mr(pd_, rbuf_.get(), rbuf_size_ ? rbuf_size_ : 1, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
    if (!smr_ || !target_mr_ || !rmr_)
        return errno_or(ENOMEM);
    target_sgl_ = reinterpret_cast<volatile wire::Sge*>(target_buf_.get());
    if (target_iomap_size_)
        target_iomap_ =
            reinterpret_cast<volatile wire::Iomap*>(target_buf_.get() + sizeof(wire::Sge) * wire::kTargetSglEntries);

    ssgl_[0].addr = ssgl_[1].addr = reinterpret_cast<uintptr_t>(sbuf_.get());
    ssgl_[0].lkey = ssgl_[1].lkey = smr_->lkey;
    sbuf_bytes_avail_ = sbuf_size_;
    rbuf_free_offset_ = rbuf_size_ >> 1;
    rbuf_bytes_avail_ = rbuf_size_ >> 1;
    sqe_avail_ = sq_size_ - static_cast<int>(ctrl_max_seqno_);
    rseq_comp_ = rq_size_ >> 1;

    for (int i = 0; i < rq_size_; i++) {
        if (Status s = post_recv(); !s.ok())
            return s;
    }
    return {};
}

wire::ConnData StreamSocket::conn_data() const {
    wire::ConnParams p;
    p.credits = rq_size_;
    p.target_iomap_entries = target_iomap_size_;
    p.target_table_addr = reinterpret_cast<uintptr_t>(target_buf_.get());
    p.target_table_rkey = target_mr_->rkey;
    p.recv_buf_addr = reinterpret_cast<uintptr_t>(rbuf_.get());
    p.recv_buf_rkey = rmr_->rkey;
    p.recv_buf_half = rbuf_size_ >> 1;
    return wire::encode_conn_data(p);
}

void StreamSocket::save_peer(const wire::PeerInfo& peer) {
    remote_sgl_ = peer.target_table;
    remote_sge_ = 1;
    swap_sgl_ = peer.swap_sgl;
    if (peer.has_iomap)
        remote_iomap_ = peer.iomap_table;
    target_sgl_[0].addr = peer.first_buffer.addr;
    target_sgl_[0].length = peer.first_buffer.length;
    target_sgl_[0].key = peer.first_buffer.key;
    sseq_comp_ = peer.credits;
}

// ------------------------------------------------------- connection setup

Status StreamSocket::bind(const sockaddr* addr, socklen_t len) {
    if (!addr)
        return Errno{EFAULT};
    if (len < sockaddr_length(addr))
        return Errno{EINVAL};
    Lock lk(mu_);
    if (state_ != kInit)
        return Errno{EINVAL};
    if (rdma_bind_addr(id_, const_cast<sockaddr*>(addr)))
        return errno_or(EINVAL);
    state_ = kBound;
    return {};
}

Status StreamSocket::listen(int backlog) {
    Lock lk(mu_);
    if (state_ == kListening)
        return {};
    if (state_ != kInit && state_ != kBound)
        return Errno{EINVAL};
    if (rdma_listen(id_, backlog))
        return errno_or(EINVAL);
    auto q = std::unique_ptr<AcceptQueue>(new (std::nothrow) AcceptQueue);
    if (!q)
        return Errno{ENOMEM};
    q->ready_fd = Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC | EFD_SEMAPHORE));
    if (q->ready_fd.get() < 0)
        return errno_or(EMFILE);
    q->limit = static_cast<size_t>(std::clamp(backlog, 1, 4096));
    accept_q_ = std::move(q);
    state_ = kListening;
    lk.unlock();
    // Connections are accepted in the background, so that peers connect
    // even before the application calls raccept (like a TCP backlog).
    Result<long> token = Service::get().add(cm_fd(), [this] { on_listen_event(); });
    if (!token.ok())
        return Errno{token.error()};
    std::lock_guard<std::mutex> g(accept_q_->mu);
    accept_q_->token = token.value();
    return {};
}

// Service thread: take connection requests off the listening id.
void StreamSocket::on_listen_event() {
    for (;;) {
        {
            // A full queue stops taking requests until raccept makes room;
            // meanwhile the kernel holds them (up to the backlog).
            std::lock_guard<std::mutex> g(accept_q_->mu);
            if (accept_q_->ready.size() >= accept_q_->limit) {
                Service::get().remove(accept_q_->token);  // ourselves: allowed
                accept_q_->token = 0;
                accept_q_->paused = true;
                return;
            }
        }
        rdma_cm_event* ev = nullptr;
        if (rdma_get_cm_event(channel_, &ev))
            return;
        if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
            if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
                std::lock_guard<std::mutex> g(accept_q_->mu);
                accept_q_->error = ENODEV;
                uint64_t one = 1;
                (void)!::write(accept_q_->ready_fd.get(), &one, sizeof one);
            }
            rdma_ack_cm_event(ev);
            continue;
        }
        std::unique_ptr<StreamSocket> s = from_request(*this, ev);  // acks ev
        if (!s)
            continue;
        std::lock_guard<std::mutex> g(accept_q_->mu);
        accept_q_->ready.push_back(std::move(s));
        uint64_t one = 1;
        (void)!::write(accept_q_->ready_fd.get(), &one, sizeof one);
    }
}

std::unique_ptr<StreamSocket> StreamSocket::from_request(StreamSocket& listener, rdma_cm_event* ev) {
    rdma_cm_id* new_id = ev->id;
    size_t off = listener.conn_data_offset();
    std::optional<wire::PeerInfo> peer;
    if (ev->param.conn.private_data && ev->param.conn.private_data_len > off)
        peer = wire::decode_conn_data(static_cast<const uint8_t*>(ev->param.conn.private_data) + off,
                                      ev->param.conn.private_data_len - off);
    rdma_conn_param param = ev->param.conn;
    param.private_data = nullptr;
    param.private_data_len = 0;

    auto s = std::unique_ptr<StreamSocket>(new (std::nothrow) StreamSocket);
    if (!peer || !s) {
        rdma_reject(new_id, nullptr, 0);
        rdma_ack_cm_event(ev);
        rdma_destroy_id(new_id);
        return nullptr;
    }
    rdma_ack_cm_event(ev);

    {
        Lock lk(listener.mu_);
        s->domain_ = listener.domain_;
        s->sbuf_size_ = listener.sbuf_size_;
        s->rbuf_size_ = listener.rbuf_size_;
        s->sq_inline_ = listener.sq_inline_;
        s->sq_size_ = listener.sq_size_;
        s->rq_size_ = listener.rq_size_;
        s->ctrl_max_seqno_ = listener.ctrl_max_seqno_;
        s->target_iomap_size_ = listener.target_iomap_size_;
    }
    s->channel_ = rdma_create_event_channel();
    if (!s->channel_ || !set_nonblocking(s->channel_->fd, true).ok() || rdma_migrate_id(new_id, s->channel_)) {
        rdma_reject(new_id, nullptr, 0);
        rdma_destroy_id(new_id);
        return nullptr;
    }
    s->id_ = new_id;
    new_id->context = s.get();
    s->index_ = s->channel_->fd;

    Lock lk(s->mu_);
    if (!s->create_ep().ok()) {
        rdma_reject(new_id, nullptr, 0);
        return nullptr;  // the destructor destroys the id
    }
    s->save_peer(*peer);
    uint8_t pdata[wire::kIbConnectHdrSize + sizeof(wire::ConnData)] = {};
    wire::ConnData cd = s->conn_data();
    std::memcpy(pdata + off, &cd, sizeof cd);
    param.private_data = pdata;
    param.private_data_len = static_cast<uint8_t>(off + sizeof cd);
    if (rdma_accept(new_id, &param)) {
        rdma_reject(new_id, nullptr, 0);
        return nullptr;
    }
    // Established once the peer's RTU arrives (handled by the new socket).
    s->state_ = kAccepting;
    return s;
}

Result<std::unique_ptr<Socket>> StreamSocket::accept() {
    if (!accept_q_)
        return Errno{EINVAL};
    AcceptQueue& q = *accept_q_;
    std::unique_ptr<Socket> out;
    for (;;) {
        bool resume = false;
        {
            std::lock_guard<std::mutex> g(q.mu);
            if (!q.ready.empty()) {
                uint64_t v;
                (void)!::read(q.ready_fd.get(), &v, sizeof v);
                out = std::move(q.ready.front());
                q.ready.pop_front();
                resume = q.paused;
                q.paused = false;
            } else if (q.error) {
                return Errno{q.error};
            }
        }
        if (out) {
            // Taking requests again can fail; the connection in hand is
            // still the caller's, and a later raccept reports the failure.
            if (resume) {
                Result<long> token = Service::get().add(cm_fd(), [this] { on_listen_event(); });
                std::lock_guard<std::mutex> g(q.mu);
                if (token.ok())
                    q.token = token.value();
                else
                    q.error = token.error();
            }
            return out;
        }
        if (fd_flags_ & O_NONBLOCK)
            return Errno{EAGAIN};
        pollfd p{q.ready_fd.get(), POLLIN, 0};
        if (sys_poll(&p, 1, static_cast<int>(config().wake_up_interval)) < 0 && errno == EINTR)
            return Errno{EINTR};
    }
}

Status StreamSocket::connect(const sockaddr* addr, socklen_t len) {
    if (!addr)
        return Errno{EFAULT};
    if (len < sockaddr_length(addr) || len > sizeof(sockaddr_storage))
        return Errno{EINVAL};
    Lock lk(mu_);
    if (state_ == kInit || state_ == kBound) {
        std::memcpy(&id_->route.addr.dst_addr, addr, len);
        retries_ = 0;
        if (Status s = start_resolve(); !s.ok()) {
            connect_failed(s.error());
            return s;
        }
    }
    return advance_connect(lk, (fd_flags_ & O_NONBLOCK) != 0);
}

Status StreamSocket::start_resolve() {
    int timeout = 1000 << retries_++;
    sockaddr* dst = reinterpret_cast<sockaddr*>(&id_->route.addr.dst_addr);
    if (rdma_resolve_addr(id_, nullptr, dst, timeout))
        return errno_or(EINVAL);
    state_ = kResolvingAddr;
    return {};
}

void StreamSocket::connect_failed(int err) {
    state_ = kConnectError;
    err_ = err;
    ++gen_;
    cv_.notify_all();
}

// Runs the setup state machine as far as events allow: done once
// connected, EINPROGRESS when it would have to wait (nonblocking), or the
// failure.
Status StreamSocket::advance_connect(Lock& lk, bool nonblock) {
    for (;;) {
        if (state_ & kConnected)
            return {};
        if (state_ == kConnectError)
            return Errno{err_ ? err_ : ECONNREFUSED};
        if (state_ == kDisconnected || state_ == kError)
            return {};
        if (!(state_ & kOpening))
            return Errno{EINVAL};
        if (Status s = process_cm_events(lk); !s.ok())
            return s;
        if (!(state_ & kOpening))
            continue;
        if (nonblock)
            return Errno{EINPROGRESS};
        pollfd p{cm_fd(), POLLIN, 0};
        lk.unlock();
        int n = sys_poll(&p, 1, static_cast<int>(config().wake_up_interval));
        int e = errno;
        lk.lock();
        if (n < 0 && e == EINTR)
            return Errno{EINTR};
    }
}

// Handles the events queued on the CM channel; done once it is empty.
Status StreamSocket::process_cm_events(Lock&) {
    for (;;) {
        rdma_cm_event* ev = nullptr;
        if (rdma_get_cm_event(channel_, &ev)) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return {};
            return errno_or(EIO);
        }
        handle_cm_event(*ev);
        rdma_ack_cm_event(ev);
    }
}

void StreamSocket::handle_cm_event(const rdma_cm_event& ev) {
    switch (ev.event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: {
        if (state_ != kResolvingAddr)
            break;
        retries_ = 0;
        if (!route_.empty()) {
            int ok = rdma_set_option(id_, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, route_.data(),
                                     static_cast<size_t>(route_.size()));
            route_.clear();
            if (!ok) {
                state_ = kResolvingRoute;
                break;
            }
        }
        int timeout = 1000 << retries_++;
        if (rdma_resolve_route(id_, timeout))
            connect_failed(errno_or(EHOSTUNREACH).value);
        else
            state_ = kResolvingRoute;
        break;
    }
    case RDMA_CM_EVENT_ADDR_ERROR:
        if (state_ != kResolvingAddr)
            break;
        if (event_errno(ev) == ETIMEDOUT && retries_ <= kConnRetries) {
            if (Status s = start_resolve(); !s.ok())
                connect_failed(s.error());
        } else {
            connect_failed(event_errno(ev));
        }
        break;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
        if (state_ != kResolvingRoute)
            break;
        if (Status s = create_ep(); !s.ok()) {
            connect_failed(s.error());
            break;
        }
        uint8_t pdata[wire::kIbConnectHdrSize + sizeof(wire::ConnData)] = {};
        size_t off = conn_data_offset();
        wire::ConnData cd = conn_data();
        std::memcpy(pdata + off, &cd, sizeof cd);
        rdma_conn_param param{};
        param.private_data = pdata;
        param.private_data_len = static_cast<uint8_t>(off + sizeof cd);
        param.flow_control = 1;
        param.retry_count = 7;
        param.rnr_retry_count = 7;
        retries_ = 0;
        if (rdma_connect(id_, &param))
            connect_failed(errno_or(ECONNREFUSED).value);
        else
            state_ = kConnecting;
        break;
    }
    case RDMA_CM_EVENT_ROUTE_ERROR:
        if (state_ != kResolvingRoute)
            break;
        if (event_errno(ev) == ETIMEDOUT && retries_ <= kConnRetries) {
            int timeout = 1000 << retries_++;
            if (rdma_resolve_route(id_, timeout))
                connect_failed(errno_or(EHOSTUNREACH).value);
        } else {
            connect_failed(event_errno(ev));
        }
        break;
    case RDMA_CM_EVENT_ESTABLISHED:
        if (state_ == kConnecting) {
            // The reply carries the ConnData first, whatever the family.
            auto peer = wire::decode_conn_data(ev.param.conn.private_data, ev.param.conn.private_data_len);
            if (!peer) {
                connect_failed(EOPNOTSUPP);
                break;
            }
            save_peer(*peer);
            state_ = kConnectRdwr;
        } else if (state_ == kAccepting) {
            state_ = kConnectRdwr;
        }
        ++gen_;
        cv_.notify_all();
        break;
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
        if (state_ & kOpening)
            connect_failed(event_errno(ev));
        else if (state_ & kConnected)
            peer_disconnected();
        break;
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        if (state_ & kOpening)
            connect_failed(ev.event == RDMA_CM_EVENT_DEVICE_REMOVAL ? ENODEV : ECONNRESET);
        else
            peer_disconnected();
        break;
    default: break;
    }
}

// The CM says the peer is gone (it closed without our protocol's goodbye,
// e.g. it was killed). Whatever it wrote before is already in our CQ:
// collect it, then stop the QP so nothing waits for the peer any longer.
void StreamSocket::peer_disconnected() {
    if (cq_)
        poll_cq();
    if (state_ & (kConnected | kError)) {
        state_ = kDisconnected;
        if (id_->qp)
            rdma_disconnect(id_);
    }
    ++gen_;
    cv_.notify_all();
}

// For calls that need a connection: finish a setup in progress first.
Status StreamSocket::finish_open(Lock& lk, bool nonblock) {
    if (state_ == kConnectError)
        return Errno{ECONNRESET};  // what the reference's calls run into
    if (!(state_ & kOpening))
        return {};
    Status s = advance_connect(lk, nonblock);
    if (s.error() == EINPROGRESS)
        return Errno{EAGAIN};
    return s;
}

// ------------------------------------------------------------ data path

Status StreamSocket::post(ibv_send_wr& wr) {
    ibv_send_wr* bad = nullptr;
    return post_status(ibv_post_send(id_->qp, &wr, &bad));
}

Status StreamSocket::post_msg(uint32_t msg) {
    ibv_send_wr wr{};
    wr.wr_id = msg;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htobe32(msg);
    return post(wr);
}

Status StreamSocket::post_write(ibv_sge* sgl, int nsge, uint32_t wr_data, int flags, uint64_t addr, uint32_t rkey) {
    ibv_send_wr wr{};
    wr.wr_id = wr_data;
    wr.sg_list = sgl;
    wr.num_sge = nsge;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = static_cast<unsigned>(flags);
    wr.wr.rdma.remote_addr = addr;
    wr.wr.rdma.rkey = rkey;
    return post(wr);
}

Status StreamSocket::post_write_msg(ibv_sge* sgl, int nsge, uint32_t msg, int flags, uint64_t addr, uint32_t rkey) {
    ibv_send_wr wr{};
    wr.wr_id = msg;
    wr.sg_list = sgl;
    wr.num_sge = nsge;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = static_cast<unsigned>(flags);
    wr.imm_data = htobe32(msg);
    wr.wr.rdma.remote_addr = addr;
    wr.wr.rdma.rkey = rkey;
    return post(wr);
}

Status StreamSocket::post_recv() {
    ibv_recv_wr wr{};
    wr.wr_id = kRecvWrFlag;
    ibv_recv_wr* bad = nullptr;
    return post_status(ibv_post_recv(id_->qp, &wr, &bad));
}

// Consumes the current target buffer before posting, so that an
// announcement the peer writes later never races with our update.
Status StreamSocket::write_data(ibv_sge* sgl, int nsge, uint32_t length, int flags) {
    sseq_no_++;
    sqe_avail_--;
    sbuf_bytes_avail_ -= length;
    volatile wire::Sge& t = target_sgl_[target_sge_];
    uint64_t addr = t.addr;
    uint32_t rkey = t.key;
    t.addr = addr + length;
    t.length = t.length - length;
    if (t.length == 0)
        target_sge_ = (target_sge_ + 1) % static_cast<int>(wire::kTargetSglEntries);
    return post_write_msg(sgl, nsge, wire::make_msg(Op::Data, length), flags, addr, rkey);
}

// Grants the peer more credits and, when half of our receive buffer is
// free again, announces it in the peer's target table.
void StreamSocket::send_credits() {
    ctrl_seqno_++;
    rseq_comp_ = static_cast<uint16_t>(rseq_no_ + (rq_size_ >> 1));
    uint32_t limit = static_cast<uint32_t>(rseq_no_) + rq_size_;
    if (rbuf_bytes_avail_ >= (rbuf_size_ >> 1)) {
        wire::Sge sge{reinterpret_cast<uintptr_t>(&rbuf_[rbuf_free_offset_]), rmr_->rkey, rbuf_size_ >> 1};
        sge = wire::sge_for_peer(sge, swap_sgl_);
        ibv_sge isge{};
        int flags;
        if (sq_inline_ >= sizeof sge) {
            isge.addr = reinterpret_cast<uintptr_t>(&sge);
            flags = IBV_SEND_INLINE;
        } else {
            uint8_t* slot = sbuf_.get() + sbuf_size_ + sizeof(wire::Sge) * (ctrl_seqno_ & (kCtrlSlots - 1));
            std::memcpy(slot, &sge, sizeof sge);
            isge.addr = reinterpret_cast<uintptr_t>(slot);
            isge.lkey = smr_->lkey;
            flags = 0;
        }
        isge.length = sizeof sge;
        (void)post_write_msg(&isge, 1, wire::make_msg(Op::Sgl, limit), flags,
                             remote_sgl_.addr + remote_sge_ * sizeof(wire::Sge), remote_sgl_.key);
        rbuf_bytes_avail_ -= rbuf_size_ >> 1;
        rbuf_free_offset_ += rbuf_size_ >> 1;
        if (rbuf_free_offset_ >= rbuf_size_)
            rbuf_free_offset_ = 0;
        if (++remote_sge_ == remote_sgl_.length)
            remote_sge_ = 0;
    } else {
        (void)post_msg(wire::make_msg(Op::Sgl, limit));
    }
}

void StreamSocket::update_credits() {
    if (!(state_ & kConnected) || !ctrl_avail() || !cq_)
        return;
    if (rbuf_bytes_avail_ >= (rbuf_size_ >> 1) ||
        static_cast<int16_t>(static_cast<int16_t>(rseq_no_) - static_cast<int16_t>(rseq_comp_)) >= 0)
        send_credits();
}

// Takes what completed; a receive that cannot be reposted ends the
// connection (state_ and err_ say so).
void StreamSocket::poll_cq() {
    ibv_wc wc[kPollBatch];
    int rcnt = 0;
    int n;
    bool any = false;
    while ((n = ibv_poll_cq(cq_, kPollBatch, wc)) > 0) {
        any = true;
        for (int i = 0; i < n; i++) {
            const ibv_wc& c = wc[i];
            if (c.wr_id & kRecvWrFlag) {
                if (c.status != IBV_WC_SUCCESS)
                    continue;
                rcnt++;
                if (!(c.wc_flags & IBV_WC_WITH_IMM))
                    continue;
                uint32_t msg = be32toh(c.imm_data);
                switch (wire::msg_op(msg)) {
                case Op::Sgl: sseq_comp_ = static_cast<uint16_t>(wire::msg_arg(msg)); break;
                case Op::IomapSgl:
                case Op::Write: break;
                case Op::Ctrl:
                    if (wire::msg_arg(msg) == wire::kCtrlDisconnect) {
                        state_ = kDisconnected;
                    } else if (wire::msg_arg(msg) == wire::kCtrlShutdown) {
                        if (state_ & kWritable)
                            state_ &= ~kReadable;
                        else
                            state_ = kDisconnected;
                    }
                    break;
                default:
                    rmsg_[rmsg_tail_] = {static_cast<uint32_t>(wire::msg_op(msg)), wire::msg_arg(msg)};
                    if (++rmsg_tail_ == rq_size_ + 1)
                        rmsg_tail_ = 0;
                    break;
                }
            } else {
                uint32_t msg = static_cast<uint32_t>(c.wr_id);
                switch (wire::msg_op(msg)) {
                case Op::Sgl: ctrl_max_seqno_++; break;
                case Op::Ctrl:
                    ctrl_max_seqno_++;
                    if (wire::msg_arg(msg) == wire::kCtrlDisconnect)
                        state_ = kDisconnected;
                    break;
                case Op::IomapSgl:
                    sqe_avail_++;
                    sbuf_bytes_avail_ += sizeof(wire::Iomap);
                    break;
                default:
                    sqe_avail_++;
                    sbuf_bytes_avail_ += wire::msg_arg(msg);
                    break;
                }
                if (c.status != IBV_WC_SUCCESS && (state_ & kConnected)) {
                    state_ = kError;
                    err_ = EIO;
                }
            }
        }
        if (n < kPollBatch)
            break;
    }
    if (state_ & kConnected) {
        Status s;
        while (s.ok() && rcnt--)
            s = post_recv();
        if (!s.ok()) {
            state_ = kError;
            err_ = s.error();
        }
    }
    if (any) {
        ++gen_;
        cv_.notify_all();
    }
}

void StreamSocket::drain_cq_events() {
    if (!cq_channel_)
        return;
    ibv_cq* cq;
    void* ctx;
    while (!ibv_get_cq_event(cq_channel_, &cq, &ctx)) {
        cq_armed_ = false;
        if (++unack_cqe_ >= static_cast<unsigned>(sq_size_ + rq_size_)) {
            ibv_ack_cq_events(cq_, unack_cqe_);
            unack_cqe_ = 0;
        }
    }
}

void StreamSocket::progress() {
    if (!cq_ || !(state_ & (kConnected | kDisconnected | kError)))
        return;
    update_credits();
    poll_cq();
    update_credits();
}

bool StreamSocket::cm_fd_readable() const {
    pollfd p{channel_->fd, POLLIN, 0};
    return sys_poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

// Waits (mu_ held through `lk`) until pred() holds; EWOULDBLOCK for a
// nonblocking call that would have to wait. CM events that come meanwhile
// are handled on the way; failing to read them is not this wait's failure.
template <class Pred>
Status StreamSocket::wait_until(Lock& lk, bool nonblock, Pred pred) {
    uint64_t spin_start = 0;
    bool cm_checked = false;
    for (;;) {
        progress();
        if (pred())
            return {};
        if (nonblock) {
            // A peer that vanished only shows on the CM channel.
            if (!cm_checked && cm_fd_readable()) {
                cm_checked = true;
                (void)process_cm_events(lk);
                continue;
            }
            return Errno{EWOULDBLOCK};
        }
        uint32_t spin = config().polling_time;
        if (spin) {
            uint64_t now = now_us();
            if (!spin_start)
                spin_start = now;
            if (now - spin_start < spin) {
                lk.unlock();
                lk.lock();
                continue;
            }
        }
        if (!cq_)
            return Errno{ENOTCONN};
        if (!cq_armed_) {
            ibv_req_notify_cq(cq_, 0);
            cq_armed_ = true;
            continue;  // completions that came before arming
        }
        if (sleeper_) {
            uint64_t gen = gen_;
            cv_.wait(lk, [&] { return gen_ != gen || !sleeper_; });
            continue;
        }
        sleeper_ = true;
        pollfd fds[2] = {{cq_channel_->fd, POLLIN, 0}, {channel_->fd, POLLIN, 0}};
        lk.unlock();
        int n = sys_poll(fds, 2, static_cast<int>(config().wake_up_interval));
        int e = errno;
        lk.lock();
        sleeper_ = false;
        if (n > 0 && fds[0].revents)
            drain_cq_events();
        if (n > 0 && fds[1].revents)
            (void)process_cm_events(lk);
        ++gen_;
        cv_.notify_all();
        if (n < 0 && e == EINTR)
            return Errno{EINTR};
    }
}

void StreamSocket::copy_from_rbuf(IovCursor& cur, uint32_t& offset, uint32_t n) {
    uint32_t end = rbuf_size_ - offset;
    if (n > end) {
        cur.copy_in(&rbuf_[offset], end);
        offset = 0;
        n -= end;
    }
    cur.copy_in(&rbuf_[offset], n);
    offset += n;
}

Result<ssize_t> StreamSocket::recv(const iovec* iov, int iovcnt, int flags, sockaddr* src, socklen_t* srclen) {
    size_t len = iov_total(iov, iovcnt);
    std::lock_guard<std::mutex> rg(recv_mu_);
    Lock lk(mu_);
    if (state_ == kConnectError)
        return 0;  // a failed connection reads as end of file, as in the reference
    if (Status s = finish_open(lk, nonblocking(flags)); !s.ok())
        return Errno{s.error()};
    if (!cq_)
        return Errno{ENOTCONN};
    IovCursor cur{iov, iovcnt};
    size_t left = len;
    Status ret;
    do {
        if (!have_rdata()) {
            ret = wait_until(lk, nonblocking(flags), [this] { return have_rdata() || !(state_ & kReadable); });
            if (!ret.ok())
                break;
        }
        if (flags & MSG_PEEK) {
            int head = rmsg_head_;
            uint32_t offset = rbuf_offset_;
            while (left && head != rmsg_tail_) {
                uint32_t rsize = static_cast<uint32_t>(std::min<size_t>(left, rmsg_[head].data));
                if (rsize == rmsg_[head].data && ++head == rq_size_ + 1)
                    head = 0;
                copy_from_rbuf(cur, offset, rsize);
                left -= rsize;
            }
            break;
        }
        while (left && have_rdata()) {
            RecvMsg& m = rmsg_[rmsg_head_];
            uint32_t rsize;
            if (left < m.data) {
                rsize = static_cast<uint32_t>(left);
                m.data -= rsize;
            } else {
                rseq_no_++;
                rsize = m.data;
                if (++rmsg_head_ == rq_size_ + 1)
                    rmsg_head_ = 0;
            }
            copy_from_rbuf(cur, rbuf_offset_, rsize);
            rbuf_bytes_avail_ += rsize;
            left -= rsize;
        }
    } while (left && (flags & MSG_WAITALL) && (state_ & kReadable));
    update_credits();
    lk.unlock();
    if (src && srclen && left != len)
        (void)getpeername(src, srclen);  // cannot fail: both pointers are there
    // Data already read is the answer; a failure only when there is none.
    if (!ret.ok() && left == len)
        return Errno{ret.error()};
    return static_cast<ssize_t>(len - left);
}

// Stages `len` bytes from the cursor in the send ring and writes them,
// either into the peer's receive buffer or (direct) into an iomapped one.
Status StreamSocket::stage_and_write(IovCursor& cur, uint32_t len, bool direct, const wire::Iomap* iom,
                                     uint64_t offset) {
    int flags = len <= sq_inline_ ? IBV_SEND_INLINE : 0;
    auto issue = [&](ibv_sge* sgl, int n) -> Status {
        if (!direct)
            return write_data(sgl, n, len, flags);
        sqe_avail_--;
        sbuf_bytes_avail_ -= len;
        return post_write(sgl, n, wire::make_msg(Op::Write, len), flags, iom->sge.addr + offset - iom->offset,
                          iom->sge.key);
    };
    // Small pieces go inline straight from the caller's memory.
    if ((flags & IBV_SEND_INLINE) && cur.contiguous() >= len) {
        ibv_sge sge{reinterpret_cast<uintptr_t>(cur.ptr()), len, 0};
        Status s = issue(&sge, 1);
        cur.advance(len);
        return s;
    }
    uint32_t room = sbuf_left();
    if (len <= room) {
        cur.copy_out(reinterpret_cast<uint8_t*>(ssgl_[0].addr), len);
        ssgl_[0].length = len;
        Status s = issue(ssgl_, 1);
        if (len < room)
            ssgl_[0].addr += len;
        else
            ssgl_[0].addr = reinterpret_cast<uintptr_t>(sbuf_.get());
        return s;
    }
    ssgl_[0].length = room;
    cur.copy_out(reinterpret_cast<uint8_t*>(ssgl_[0].addr), room);
    ssgl_[1].length = len - room;
    cur.copy_out(sbuf_.get(), ssgl_[1].length);
    Status s = issue(ssgl_, 2);
    ssgl_[0].addr = reinterpret_cast<uintptr_t>(sbuf_.get()) + ssgl_[1].length;
    return s;
}

Status StreamSocket::send_iomaps(Lock& lk, int flags) {
    std::lock_guard<std::mutex> mg(map_mu_);
    Status ret;
    while (!iomap_queue_.empty()) {
        if (!can_send()) {
            ret = wait_until(lk, nonblocking(flags), [this] { return can_send() || !(state_ & kWritable); });
            if (!ret.ok())
                break;
            if (!(state_ & kWritable)) {
                ret = Errno{ECONNRESET};
                break;
            }
        }
        IomapMr* m = iomap_queue_.front();
        wire::Iomap iom{m->offset,
                        {reinterpret_cast<uintptr_t>(m->mr->addr), m->mr->rkey, static_cast<uint32_t>(m->mr->length)}};
        iom = wire::iomap_for_peer(iom, swap_sgl_);
        sseq_no_++;
        sqe_avail_--;
        sbuf_bytes_avail_ -= sizeof iom;
        uint64_t addr = remote_iomap_.addr + static_cast<uint64_t>(m->index) * sizeof(wire::Iomap);
        uint32_t msg = wire::make_msg(Op::IomapSgl, static_cast<uint32_t>(m->index));
        if (sq_inline_ >= sizeof iom) {
            ibv_sge sge{reinterpret_cast<uintptr_t>(&iom), sizeof iom, 0};
            ret = post_write_msg(&sge, 1, msg, IBV_SEND_INLINE, addr, remote_iomap_.key);
        } else {
            iovec v{&iom, sizeof iom};
            IovCursor cur{&v, 1};
            uint32_t room = sbuf_left();
            int n = 1;
            if (room >= sizeof iom) {
                cur.copy_out(reinterpret_cast<uint8_t*>(ssgl_[0].addr), sizeof iom);
                ssgl_[0].length = sizeof iom;
            } else {
                ssgl_[0].length = room;
                cur.copy_out(reinterpret_cast<uint8_t*>(ssgl_[0].addr), room);
                ssgl_[1].length = sizeof iom - room;
                cur.copy_out(sbuf_.get(), ssgl_[1].length);
                n = 2;
            }
            ret = post_write_msg(ssgl_, n, msg, 0, addr, remote_iomap_.key);
            if (n == 2)
                ssgl_[0].addr = reinterpret_cast<uintptr_t>(sbuf_.get()) + ssgl_[1].length;
            else if (room > sizeof iom)
                ssgl_[0].addr += sizeof iom;
            else
                ssgl_[0].addr = reinterpret_cast<uintptr_t>(sbuf_.get());
        }
        iomap_queue_.pop_front();
        iomap_list_.push_back(m);
        if (!ret.ok())
            break;
    }
    iomap_pending_ = !iomap_queue_.empty();
    return ret;
}

Result<ssize_t> StreamSocket::send(const iovec* iov, int iovcnt, int flags, const sockaddr* dst, socklen_t dstlen) {
    if (dst || dstlen)
        return Errno{EISCONN};
    size_t len = iov_total(iov, iovcnt);
    std::lock_guard<std::mutex> sg(send_mu_);
    Lock lk(mu_);
    if (Status s = finish_open(lk, nonblocking(flags)); !s.ok())
        return Errno{s.error()};
    if (!cq_)
        return Errno{ENOTCONN};
    if (!(state_ & kWritable) && len)
        return Errno{(state_ & kConnected) ? EPIPE : ECONNRESET};
    Status ret;
    if (iomap_pending_) {
        ret = send_iomaps(lk, flags);
        if (!ret.ok())
            return Errno{ret.error()};
    }
    IovCursor cur{iov, iovcnt};
    size_t left = len;
    uint32_t olen = kFirstTransfer;
    while (left) {
        if (!can_send()) {
            ret = wait_until(lk, nonblocking(flags), [this] { return can_send() || !(state_ & kWritable); });
            if (!ret.ok())
                break;
            if (!(state_ & kWritable)) {
                ret = Errno{ECONNRESET};
                break;
            }
        }
        uint32_t xfer;
        if (olen < left) {
            xfer = olen;
            if (olen < kMaxTransfer)
                olen <<= 1;
        } else {
            xfer = static_cast<uint32_t>(left);
        }
        xfer = std::min(xfer, sbuf_bytes_avail_);
        uint32_t target_room = target_sgl_[target_sge_].length;
        xfer = std::min(xfer, target_room);
        ret = stage_and_write(cur, xfer, false, nullptr, 0);
        if (!ret.ok())
            break;
        left -= xfer;
    }
    // Data already sent is the answer; a failure only when there is none.
    if (!ret.ok() && left == len)
        return Errno{ret.error()};
    return static_cast<ssize_t>(len - left);
}

// --------------------------------------------------------------- teardown

Status StreamSocket::shutdown(int how) {
    if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
        return Errno{EINVAL};
    if (keepalive_token_ && how == SHUT_RDWR) {
        Service::get().remove(keepalive_token_);
        keepalive_token_ = 0;
    }
    Lock lk(mu_);
    if (!(state_ & kConnected))
        return {};  // nothing to tell a peer (the reference answers 0 too)
    uint32_t ctrl;
    if (how == SHUT_RDWR) {
        ctrl = wire::kCtrlDisconnect;
        state_ &= ~(kReadable | kWritable);
    } else if (how == SHUT_WR) {
        state_ &= ~kWritable;
        ctrl = (state_ & kReadable) ? wire::kCtrlShutdown : wire::kCtrlDisconnect;
    } else {
        state_ &= ~kReadable;
        ctrl = wire::kCtrlDisconnect;
    }
    Status ret;
    bool send_ctrl = !(how == SHUT_RD && (state_ & kWritable));
    if (send_ctrl) {
        if (!ctrl_avail())
            ret = wait_until(lk, false, [this] { return ctrl_avail() || !(state_ & kConnected); });
        if (ret.ok() && (state_ & kConnected) && ctrl_avail()) {
            ctrl_seqno_++;
            ret = post_msg(wire::make_msg(Op::Ctrl, ctrl));
        }
        // Then for what is in flight; only the goodbye's failure is reported.
        if (state_ & kConnected)
            (void)wait_until(lk, false, [this] { return all_sends_done() || !(state_ & kConnected); });
    }
    if ((state_ & kDisconnected) && id_->qp) {
        // Flush what is still posted so that pollers wake up.
        if (cq_)
            ibv_req_notify_cq(cq_, 0);
        rdma_disconnect(id_);
    }
    ++gen_;
    cv_.notify_all();
    return ret;
}

void StreamSocket::close() {
    if (accept_q_) {
        long token;
        {
            std::lock_guard<std::mutex> g(accept_q_->mu);
            token = std::exchange(accept_q_->token, 0);
            accept_q_->paused = false;
        }
        Service::get().remove(token);
        std::lock_guard<std::mutex> g(accept_q_->mu);
        accept_q_->ready.clear();
    }
    if (keepalive_token_) {
        Service::get().remove(keepalive_token_);
        keepalive_token_ = 0;
    }
    bool connected;
    {
        Lock lk(mu_);
        connected = (state_ & kConnected) != 0;
    }
    // The socket goes whether or not the peer heard the goodbye.
    if (connected)
        (void)shutdown(SHUT_RDWR);
}

// ----------------------------------------------------------------- naming

Status StreamSocket::getpeername(sockaddr* addr, socklen_t* len) {
    if (!addr || !len)
        return Errno{EFAULT};
    copy_sockaddr_out(rdma_get_peer_addr(id_), addr, len);
    return {};
}

Status StreamSocket::getsockname(sockaddr* addr, socklen_t* len) {
    if (!addr || !len)
        return Errno{EFAULT};
    copy_sockaddr_out(rdma_get_local_addr(id_), addr, len);
    return {};
}

// ---------------------------------------------------------------- options

Status StreamSocket::set_keepalive(bool on) {
    if (on == (keepalive_token_ != 0))
        return {};
    if (!on) {
        Service::get().remove(keepalive_token_);
        keepalive_token_ = 0;
        return {};
    }
    if (!keepalive_time_) {
        uint32_t v = 7200;
        FILE* f = std::fopen("/proc/sys/net/ipv4/tcp_keepalive_time", "re");
        if (f) {
            if (std::fscanf(f, "%u", &v) != 1)
                v = 7200;
            std::fclose(f);
        }
        keepalive_time_ = v;
    }
    if (keepalive_timer_.get() < 0) {
        keepalive_timer_ = Fd(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
        if (keepalive_timer_.get() < 0)
            return errno_or(EMFILE);
    }
    itimerspec its{};
    its.it_value.tv_sec = keepalive_time_;
    its.it_interval.tv_sec = keepalive_time_;
    timerfd_settime(keepalive_timer_.get(), 0, &its, nullptr);
    Result<long> token = Service::get().add(keepalive_timer_.get(), [this] { on_keepalive_timer(); });
    if (!token.ok())
        return Errno{token.error()};
    keepalive_token_ = token.value();
    return {};
}

// Service thread: a zero-byte RDMA WRITE (no immediate, so the peer's
// receive queue is untouched); a dead peer turns it into a failed
// completion, which ends the connection.
void StreamSocket::on_keepalive_timer() {
    uint64_t expirations;
    (void)!::read(keepalive_timer_.get(), &expirations, sizeof expirations);
    Lock lk(mu_);
    if (ctrl_avail() && (state_ & kConnected) && id_->qp) {
        ctrl_seqno_++;
        (void)post_write(nullptr, 0, wire::make_msg(Op::Ctrl, wire::kCtrlKeepalive), 0, 0, 0);
    }
}

Status StreamSocket::setsockopt(int level, int name, const void* val, socklen_t len) {
    if (int bad = opts::check_set(level, name, val, len))
        return Errno{-bad};
    int v = 0;
    if (len >= sizeof(int))
        std::memcpy(&v, val, sizeof v);
    bool on = v != 0;
    uint64_t* bits = nullptr;
    Lock lk(mu_);
    switch (level) {
    case SOL_SOCKET:
        bits = &so_opts_;
        switch (name) {
        case SO_REUSEADDR:
            // Once bound, the kernel refuses the change; sockets code sets
            // it late all the time, so (like the reference) accept it.
            if (rdma_set_option(id_, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, const_cast<void*>(val), len) &&
                errno != ENOSYS && state_ == kInit)
                return errno_or(EINVAL);
            break;
        case SO_RCVBUF:
            if (!rbuf_)
                rbuf_size_ = opts::rcvbuf(v);
            break;
        case SO_SNDBUF:
            if (!sbuf_)
                sbuf_size_ = opts::sndbuf(v);
            break;
        case SO_LINGER: {
            linger l;
            std::memcpy(&l, val, sizeof l);
            on = !l.l_onoff;  // stored inverted: lingering (the default) is bit clear
            break;
        }
        case SO_KEEPALIVE: {
            lk.unlock();
            Status s = set_keepalive(on);
            lk.lock();
            if (!s.ok())
                return s;
            on = keepalive_token_ != 0;
            break;
        }
        default:  // SO_OOBINLINE: a flag only
            break;
        }
        break;
    case IPPROTO_TCP:
        if (name == TCP_NODELAY) {
            bits = &tcp_opts_;
        } else if (name == TCP_KEEPIDLE) {
            keepalive_time_ = static_cast<unsigned>(v);
            if (keepalive_token_) {
                itimerspec its{};
                its.it_value.tv_sec = keepalive_time_;
                its.it_interval.tv_sec = keepalive_time_;
                timerfd_settime(keepalive_timer_.get(), 0, &its, nullptr);
            }
        }
        // TCP_KEEPCNT, TCP_KEEPINTVL, TCP_MAXSEG: a reliable connection
        // has no use for them.
        break;
    case IPPROTO_IPV6:  // IPV6_V6ONLY
        bits = &ipv6_opts_;
        if (rdma_set_option(id_, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, const_cast<void*>(val), len))
            return errno_or(EINVAL);
        break;
    case SOL_RDMA:
        if (state_ >= kOpening)
            return Errno{EINVAL};
        switch (name) {
        case RDMA_SQSIZE: sq_size_ = opts::queue_value(v); break;
        case RDMA_RQSIZE: rq_size_ = opts::queue_value(v); break;
        case RDMA_INLINE: sq_inline_ = opts::queue_value(v); break;
        case RDMA_IOMAPSIZE: target_iomap_size_ = opts::iomap_entries(v); break;
        case RDMA_ROUTE: route_.assign(static_cast<const uint8_t*>(val), static_cast<const uint8_t*>(val) + len); break;
        }
        break;
    }
    if (bits && name < 64) {
        if (on)
            *bits |= 1ull << name;
        else
            *bits &= ~(1ull << name);
    }
    return {};
}

Status StreamSocket::getsockopt(int level, int name, void* val, socklen_t* len) {
    if (!val || !len)
        return Errno{EFAULT};
    Lock lk(mu_);
    auto put_int = [&](int v) -> Status {
        if (*len < sizeof(int))
            return Errno{EINVAL};
        std::memcpy(val, &v, sizeof v);
        *len = sizeof v;
        return {};
    };
    switch (level) {
    case SOL_SOCKET:
        switch (name) {
        case SO_REUSEADDR:
        case SO_KEEPALIVE:
        case SO_OOBINLINE: return put_int(!!(so_opts_ & (1ull << name)));
        case SO_RCVBUF: return put_int(static_cast<int>(rbuf_size_));
        case SO_SNDBUF: return put_int(static_cast<int>(sbuf_size_));
        case SO_LINGER: {
            if (*len < sizeof(linger))
                return Errno{EINVAL};
            linger l{!(so_opts_ & (1ull << SO_LINGER)), 0};
            std::memcpy(val, &l, sizeof l);
            *len = sizeof l;
            return {};
        }
        case SO_ERROR: {
            Status s = put_int(err_);
            if (s.ok())
                err_ = 0;
            return s;
        }
        case SO_TYPE: return put_int(SOCK_STREAM);
        default: return Errno{ENOTSUP};
        }
    case IPPROTO_TCP:
        switch (name) {
        case TCP_KEEPCNT:
        case TCP_KEEPINTVL: return put_int(1);
        case TCP_KEEPIDLE: return put_int(static_cast<int>(keepalive_time_));
        case TCP_NODELAY: return put_int(!!(tcp_opts_ & (1ull << TCP_NODELAY)));
        case TCP_MAXSEG:
            return put_int(id_ && id_->route.num_paths && id_->route.path_rec ? 1 << (7 + id_->route.path_rec->mtu)
                                                                              : 2048);
        default: return Errno{ENOTSUP};
        }
    case IPPROTO_IPV6:
        if (name == IPV6_V6ONLY)
            return put_int(!!(ipv6_opts_ & (1ull << IPV6_V6ONLY)));
        return Errno{ENOTSUP};
    case SOL_RDMA:
        switch (name) {
        case RDMA_SQSIZE: return put_int(sq_size_);
        case RDMA_RQSIZE: return put_int(rq_size_);
        case RDMA_INLINE: return put_int(sq_inline_);
        case RDMA_IOMAPSIZE: return put_int(static_cast<int>(target_iomap_size_));
        case RDMA_ROUTE: {
            if (!route_.empty()) {
                if (*len < route_.size())
                    return Errno{EINVAL};
                std::memcpy(val, route_.data(), route_.size());
                *len = static_cast<socklen_t>(route_.size());
                return {};
            }
            if (*len < sizeof(ibv_path_data))
                return Errno{EINVAL};
            socklen_t used = 0;
            int paths = id_->route.num_paths;
            for (int i = 0; i < paths && used + sizeof(ibv_path_data) <= *len; i++) {
                const ibv_sa_path_rec& sa = id_->route.path_rec[i];
                ibv_path_data pd{};
                pd.path.dgid = sa.dgid;
                pd.path.sgid = sa.sgid;
                pd.path.dlid = sa.dlid;
                pd.path.slid = sa.slid;
                uint32_t fl_hop = be32toh(sa.flow_label) << 8;
                pd.path.flowlabel_hoplimit = htobe32(fl_hop | sa.hop_limit);
                pd.path.tclass = sa.traffic_class;
                pd.path.reversible_numpath = static_cast<uint8_t>((sa.reversible ? 0x80 : 0) | 1);
                pd.path.pkey = sa.pkey;
                pd.path.qosclass_sl = htobe16(sa.sl & 0xf);
                pd.path.mtu = static_cast<uint8_t>(sa.mtu | (2 << 6));
                pd.path.rate = static_cast<uint8_t>(sa.rate | (2 << 6));
                pd.path.packetlifetime = static_cast<uint8_t>(sa.packet_life_time | (2 << 6));
                pd.flags = sa.preference;
                std::memcpy(static_cast<uint8_t*>(val) + used, &pd, sizeof pd);
                used += sizeof pd;
            }
            *len = used;
            return {};
        }
        default: return Errno{ENOTSUP};
        }
    default: return Errno{ENOTSUP};
    }
}

int StreamSocket::get_flags() {
    Lock lk(mu_);
    return fd_flags_;
}

void StreamSocket::set_flags(int flags) {
    Lock lk(mu_);
    fd_flags_ = flags;
}

// ----------------------------------------------------------------- iomaps

Result<off_t> StreamSocket::iomap(void* buf, size_t len, int prot, int flags, off_t offset) {
    if (prot & ~(PROT_WRITE | PROT_NONE))
        return Errno{EINVAL};
    Lock lk(mu_);
    if (!pd_ || !cq_)
        return Errno{EINVAL};
    std::lock_guard<std::mutex> mg(map_mu_);
    IomapMr* m = nullptr;
    int access = IBV_ACCESS_LOCAL_WRITE;
    if (prot & PROT_WRITE) {
        if (remote_iomappings_.empty() && remote_iomap_.length) {
            try {
                remote_iomappings_.resize(remote_iomap_.length);
            } catch (...) {
                return Errno{ENOMEM};
            }
            for (size_t i = 0; i < remote_iomappings_.size(); i++)
                remote_iomappings_[i].index = static_cast<int>(i);
        }
        for (auto& slot : remote_iomappings_) {
            if (!slot.mr) {
                m = &slot;
                break;
            }
        }
        if (!m)
            return Errno{ENOMEM};
        access |= IBV_ACCESS_REMOTE_WRITE;
    } else {
        try {
            local_iomappings_.emplace_back();
        } catch (...) {
            return Errno{ENOMEM};
        }
        m = &local_iomappings_.back();
        m->index = -1;
    }
    m->mr.reset(ibv_reg_mr(pd_, buf, len, access));
    if (!m->mr) {
        Errno e = errno_or(ENOMEM);
        if (m->index < 0)
            local_iomappings_.pop_back();
        return e;
    }
    if (offset == -1)
        offset = static_cast<off_t>(reinterpret_cast<uintptr_t>(buf));
    m->offset = static_cast<uint64_t>(offset);
    if (m->index >= 0) {
        iomap_queue_.push_back(m);
        iomap_pending_ = true;
    } else {
        iomap_list_.push_back(m);
    }
    return offset;
}

Status StreamSocket::iounmap(void* buf, size_t len) {
    Lock lk(mu_);
    std::lock_guard<std::mutex> mg(map_mu_);
    for (auto* lst : {&iomap_list_, &iomap_queue_}) {
        for (auto it = lst->begin(); it != lst->end(); ++it) {
            IomapMr* m = *it;
            if (m->mr && m->mr->addr == buf && m->mr->length == len) {
                lst->erase(it);
                m->mr.reset();
                if (m->index < 0)
                    local_iomappings_.remove_if([m](const IomapMr& x) { return &x == m; });
                iomap_pending_ = !iomap_queue_.empty();
                return {};
            }
        }
    }
    return Errno{EINVAL};
}

bool StreamSocket::find_iomap(uint64_t offset, wire::Iomap& out) const {
    for (uint32_t i = 0; i < target_iomap_size_; i++) {
        const volatile wire::Iomap& e = target_iomap_[i];
        uint64_t start = e.offset;
        uint32_t length = e.sge.length;
        if (length && offset >= start && offset < start + length) {
            out.offset = start;
            out.sge.addr = e.sge.addr;
            out.sge.key = e.sge.key;
            out.sge.length = length;
            return true;
        }
    }
    return false;
}

Result<ssize_t> StreamSocket::iowrite(const void* buf, size_t count, off_t offset, int flags) {
    std::lock_guard<std::mutex> sg(send_mu_);
    Lock lk(mu_);
    if (Status s = finish_open(lk, nonblocking(flags)); !s.ok())
        return Errno{s.error()};
    if (!cq_)
        return Errno{ENOTCONN};
    Status ret;
    if (iomap_pending_) {
        ret = send_iomaps(lk, flags);
        if (!ret.ok())
            return Errno{ret.error()};
    }
    iovec v{const_cast<void*>(buf), count};
    IovCursor cur{&v, 1};
    size_t left = count;
    uint32_t olen = kFirstTransfer;
    uint64_t off = static_cast<uint64_t>(offset);
    wire::Iomap iom{};
    bool have = false;
    while (left) {
        if (!have || off >= iom.offset + iom.sge.length) {
            if (!find_iomap(off, iom))
                break;
            have = true;
        }
        if (!can_send()) {
            ret = wait_until(lk, nonblocking(flags), [this] { return can_send() || !(state_ & kWritable); });
            if (!ret.ok())
                break;
            if (!(state_ & kWritable)) {
                ret = Errno{ECONNRESET};
                break;
            }
        }
        uint32_t xfer;
        if (olen < left) {
            xfer = olen;
            if (olen < kMaxTransfer)
                olen <<= 1;
        } else {
            xfer = static_cast<uint32_t>(left);
        }
        xfer = std::min(xfer, sbuf_bytes_avail_);
        xfer = static_cast<uint32_t>(std::min<uint64_t>(xfer, iom.offset + iom.sge.length - off));
        ret = stage_and_write(cur, xfer, true, &iom, off);
        if (!ret.ok())
            break;
        left -= xfer;
        off += xfer;
    }
    // Data already written is the answer; a failure only when there is none.
    if (!ret.ok() && left == count)
        return Errno{ret.error()};
    return static_cast<ssize_t>(count - left);
}

// ------------------------------------------------------------------ rpoll

short StreamSocket::poll_check(short events) {
    if (accept_q_) {
        std::lock_guard<std::mutex> g(accept_q_->mu);
        short rev = 0;
        if (!accept_q_->ready.empty())
            rev |= events & POLLIN;
        if (accept_q_->error)
            rev |= POLLERR;
        return rev;
    }
    Lock lk(mu_);
    // Setup progress only; how it ended shows in the state below.
    if (state_ & kOpening) {
        if (advance_connect(lk, true).error() == EINPROGRESS)
            return 0;
    }
    if ((state_ & kConnected) || state_ == kDisconnected || state_ == kError) {
        progress();
        short rev = 0;
        if ((events & POLLIN) && (have_rdata() || !(state_ & kReadable)))
            rev |= POLLIN;
        if ((events & POLLOUT) && can_send())
            rev |= POLLOUT;
        // Hang-up is reported once the data the peer sent before leaving
        // has been read, as TCP does (POLLIN alone until then): a program
        // that treats POLLHUP as the end would otherwise lose that data.
        if (!(state_ & kConnected) && !have_rdata())
            rev |= (state_ == kDisconnected) ? POLLHUP : POLLERR;
        return rev;
    }
    if (state_ == kConnectError)
        return static_cast<short>((events & (POLLIN | POLLOUT)) | POLLERR);
    return 0;
}

int StreamSocket::poll_sleep_fds(pollfd* fds) {
    if (accept_q_) {
        fds[0] = {accept_q_->ready_fd.get(), POLLIN, 0};
        return 1;
    }
    Lock lk(mu_);
    if (cq_ && ((state_ & kConnected) || state_ == kDisconnected || state_ == kError)) {
        if (!cq_armed_) {
            ibv_req_notify_cq(cq_, 0);
            cq_armed_ = true;
            uint64_t gen = gen_;
            progress();
            if (gen != gen_)
                return 0;
        }
        fds[0] = {cq_channel_->fd, POLLIN, 0};
        fds[1] = {channel_->fd, POLLIN, 0};
        return 2;
    }
    fds[0] = {channel_->fd, POLLIN, 0};
    return 1;
}

void StreamSocket::poll_woken() {
    if (accept_q_)
        return;
    Lock lk(mu_);
    drain_cq_events();
    if (cm_fd_readable())
        (void)process_cm_events(lk);  // the next poll_check reports the state
}

}  // namespace

Result<std::unique_ptr<Socket>> create_stream_socket(int domain) {
    auto s = std::make_unique<StreamSocket>();
    if (Status st = s->init(domain); !st.ok())
        return Errno{st.error()};
    return std::unique_ptr<Socket>(std::move(s));
}

}  // namespace rdma::rs
