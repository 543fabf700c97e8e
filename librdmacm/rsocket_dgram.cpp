// SOCK_DGRAM rsockets: UD QPs, one per local address the socket sends
// from, plus a kernel UDP socket that serves as the rsocket's index and as
// the path for datagrams to destinations whose UD QP is not known yet
// (rsocket_wire.h: DsUdpHeader). The service thread reads that UDP socket:
// it answers each datagram with our QPN, builds an address handle to the
// sender's QP, and hands the payload to the reader. Once both sides know
// each other, datagrams travel over UD with a DsHeader naming the sender.
//
// Receive buffers of every QP are registered once; a datagram that arrived
// over UDP is kept in a small pool of local slots until it is read.
#include "rsocket_internal.h"
#include "rsocket_options.h"
#include "rsocket_wire.h"
#include "util/unique_fd.h"

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <new>
#include <vector>

#include <rdma/rsocket.h>

namespace rdma::rs {
namespace {

using wire::Op;

constexpr uint32_t kSlot = kSendLowWater;  // bytes per send/receive slot
constexpr uint32_t kLocalSlots = 16;  // datagrams that came over UDP
constexpr uint64_t kRecvWrFlag = 1ull << 63;
constexpr uint32_t kGrh = 40;  // sizeof(struct ibv_grh)

enum : int { kInit = 0, kWritable = 0x0200, kReadable = 0x0400 };

// Addresses as map keys: family, port and address bytes only.
struct AddrKey {
    sockaddr_storage ss{};
    bool operator<(const AddrKey& o) const {
        socklen_t a = sockaddr_length(reinterpret_cast<const sockaddr*>(&ss));
        socklen_t b = sockaddr_length(reinterpret_cast<const sockaddr*>(&o.ss));
        if (a != b)
            return a < b;
        return std::memcmp(&ss, &o.ss, a) < 0;
    }
};

AddrKey make_key(const sockaddr* sa) {
    AddrKey k;
    if (sa->sa_family == AF_INET) {
        auto* in = reinterpret_cast<sockaddr_in*>(&k.ss);
        const auto* s = reinterpret_cast<const sockaddr_in*>(sa);
        in->sin_family = AF_INET;
        in->sin_port = s->sin_port;
        in->sin_addr = s->sin_addr;
    } else if (sa->sa_family == AF_INET6) {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(&k.ss);
        const auto* s = reinterpret_cast<const sockaddr_in6*>(sa);
        in6->sin6_family = AF_INET6;
        in6->sin6_port = s->sin6_port;
        in6->sin6_addr = s->sin6_addr;
        in6->sin6_scope_id = s->sin6_scope_id;
    }
    return k;
}

bool same_ip(const sockaddr* a, const sockaddr* b) {
    if (a->sa_family != b->sa_family)
        return false;
    if (a->sa_family == AF_INET)
        return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
            reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
    return !std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                        &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, 16);
}

uint16_t port_of(const sockaddr* sa) {
    return sa->sa_family == AF_INET ? reinterpret_cast<const sockaddr_in*>(sa)->sin_port
                                    : reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port;
}

void set_port(sockaddr* sa, uint16_t port) {
    if (sa->sa_family == AF_INET)
        reinterpret_cast<sockaddr_in*>(sa)->sin_port = port;
    else
        reinterpret_cast<sockaddr_in6*>(sa)->sin6_port = port;
}

bool any_or_loopback(const sockaddr* sa) {
    if (sa->sa_family == AF_INET) {
        uint32_t a = reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr;
        return a == htonl(INADDR_ANY) || a == htonl(INADDR_LOOPBACK);
    }
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
    return IN6_IS_ADDR_UNSPECIFIED(&a) || IN6_IS_ADDR_LOOPBACK(&a);
}

class DgramSocket;

// A UD QP bound to one local address.
struct Qp {
    DgramSocket* owner = nullptr;
    rdma_cm_id* id = nullptr;
    sockaddr_storage src{};
    wire::DsHeader hdr{};
    ibv_pd* pd = nullptr;
    ibv_comp_channel* channel = nullptr;
    ibv_cq* cq = nullptr;
    MrPtr smr, rmr;
    std::unique_ptr<uint8_t[]> rbuf;  // rq slots, then one GRH landing area
    uint32_t max_msg = kSlot;  // path MTU bound
    bool cq_armed = false;
    unsigned unacked = 0;

    ~Qp() {
        if (id && id->qp) {
            if (cq && unacked)
                ibv_ack_cq_events(cq, unacked);
            unacked = 0;
            rdma_destroy_qp(id);
        }
        if (cq) {
            if (unacked)
                ibv_ack_cq_events(cq, unacked);
            ibv_destroy_cq(cq);
        }
        if (channel)
            ibv_destroy_comp_channel(channel);
        smr.reset();
        rmr.reset();
        if (id)
            rdma_destroy_id(id);
    }
};

// A destination address and, once known, its UD QP.
struct Dest {
    sockaddr_storage addr{};
    socklen_t len = 0;
    Qp* qp = nullptr;  // our QP for reaching it
    ibv_ah* ah = nullptr;
    uint32_t qpn = 0;
    ~Dest() {
        if (ah)
            ibv_destroy_ah(ah);
    }
};

// A datagram waiting to be read: in a QP's receive slot, or (qp null) in a
// local slot.
struct Pending {
    Qp* qp;
    uint32_t offset;
    uint32_t length;
};

class DgramSocket final : public Socket {
public:
    DgramSocket() : Socket(Kind::Dgram) {}
    ~DgramSocket() override;
    Status init(int domain);

    Status bind(const sockaddr* addr, socklen_t len) override;
    Status listen(int) override { return Errno{EOPNOTSUPP}; }
    Result<std::unique_ptr<Socket>> accept() override { return Errno{EOPNOTSUPP}; }
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
    short poll_check(short events) override;
    int poll_sleep_fds(pollfd* fds) override;
    void poll_woken() override;

private:
    using Lock = std::unique_lock<std::mutex>;
    Status init_ep();
    Result<Dest*> get_dest(const sockaddr* addr, socklen_t len);
    Status get_src_addr(const sockaddr* dst, socklen_t dlen, sockaddr_storage& src);
    Result<Qp*> get_qp(const sockaddr_storage& src);
    Result<Qp*> create_qp(const sockaddr_storage& src);
    Status post_recv(Qp& qp, uint32_t offset);
    void create_ah(Dest& d, uint32_t qpn);
    Result<ssize_t> send_udp(Dest& d, const iovec* iov, int iovcnt, int flags, Op op);
    void deliver_local(const uint8_t* data, size_t len, const sockaddr* from);
    void on_udp_readable();
    void poll_cqs();
    void drain_events();
    template <class Pred>
    Status wait_until(Lock& lk, bool nonblock, Pred pred);
    bool nonblocking(int flags) const { return (fd_flags_ & O_NONBLOCK) || (flags & MSG_DONTWAIT); }
    bool have_rdata() const { return rmsg_head_ != rmsg_tail_; }

    int domain_ = AF_INET;
    Fd udp_;
    Fd epfd_;  // sleep here: every QP's completion channel, notify_
    Fd notify_;  // eventfd: the service thread queued a datagram
    int fd_flags_ = 0;
    int state_ = kInit;

    uint32_t sbuf_size_ = 0, rbuf_size_ = 0;
    uint16_t sq_size_ = 0, rq_size_ = 0, sq_inline_ = 0;

    std::unique_ptr<uint8_t[]> sbuf_;
    std::vector<uint32_t> free_slots_;  // offsets into sbuf_
    int sqe_avail_ = 0;
    std::unique_ptr<Pending[]> rmsg_;
    int rmsg_head_ = 0, rmsg_tail_ = 0;
    int rqe_avail_ = 0;
    std::unique_ptr<uint8_t[]> lbuf_;  // local slots
    std::vector<uint32_t> free_local_;

    std::list<std::unique_ptr<Qp>> qps_;
    std::map<AddrKey, std::unique_ptr<Dest>> dests_;
    Dest* conn_dest_ = nullptr;
    long svc_token_ = 0;

    std::mutex mu_, send_mu_, recv_mu_, map_mu_;
    std::condition_variable cv_;
    bool sleeper_ = false;
    bool armed_ = false;
    uint64_t gen_ = 0;
};

Status DgramSocket::init(int domain) {
    const Config& cfg = config();
    domain_ = domain;
    sbuf_size_ = cfg.wmem_default;
    rbuf_size_ = cfg.mem_default;
    sq_size_ = cfg.sqsize_default;
    rq_size_ = cfg.rqsize_default;
    sq_inline_ = cfg.inline_default;
    udp_ = Fd(raw_socket(domain, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (udp_.get() < 0)
        return errno_or(EAFNOSUPPORT);
    epfd_ = Fd(sys_epoll_create());
    notify_ = Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (epfd_.get() < 0 || notify_.get() < 0)
        return errno_or(EMFILE);
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (sys_epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, notify_.get(), &ev))
        return errno_or(EINVAL);
    index_ = udp_.get();
    return {};
}

DgramSocket::~DgramSocket() {
    if (svc_token_)
        Service::get().remove(svc_token_);
    dests_.clear();
    qps_.clear();
}

Status DgramSocket::init_ep() {
    if (state_ != kInit)
        return {};
    if (rq_size_ > rbuf_size_ / kSlot)
        rq_size_ = static_cast<uint16_t>(rbuf_size_ / kSlot);
    else
        rbuf_size_ = rq_size_ * kSlot;
    if (sq_size_ > sbuf_size_ / kSlot)
        sq_size_ = static_cast<uint16_t>(sbuf_size_ / kSlot);
    else
        sbuf_size_ = sq_size_ * kSlot;
    if (!sq_size_ || !rq_size_)
        return Errno{EINVAL};
    // Called from the r* entry points only (inside their barrier): a failed
    // allocation throws and leaves the socket in kInit, to be set up again by
    // the next call.
    sbuf_ = std::make_unique<uint8_t[]>(sbuf_size_);
    rmsg_ = std::make_unique<Pending[]>(rq_size_ + 1);
    lbuf_ = std::make_unique<uint8_t[]>(kLocalSlots * kSlot);
    free_slots_.clear();
    for (uint32_t i = 0; i < sq_size_; i++)
        free_slots_.push_back((sq_size_ - 1 - i) * kSlot);
    free_local_.clear();
    for (uint32_t i = 0; i < kLocalSlots; i++)
        free_local_.push_back(i * kSlot);
    sqe_avail_ = sq_size_;
    rqe_avail_ = rq_size_;
    Result<long> token = Service::get().add(udp_.get(), [this] { on_udp_readable(); });
    if (!token.ok())
        return Errno{token.error()};
    svc_token_ = token.value();
    state_ = kReadable | kWritable;
    return {};
}

Status DgramSocket::bind(const sockaddr* addr, socklen_t len) {
    if (!addr)
        return Errno{EFAULT};
    std::lock_guard<std::mutex> sg(send_mu_);
    {
        Lock lk(mu_);
        if (Status s = init_ep(); !s.ok())
            return s;
    }
    if (::bind(udp_.get(), addr, len))
        return Errno{errno};
    return {};
}

// The local address datagrams to `dst` leave from, with our UDP port.
Status DgramSocket::get_src_addr(const sockaddr* dst, socklen_t dlen, sockaddr_storage& src) {
    socklen_t slen = sizeof src;
    if (::getsockname(udp_.get(), reinterpret_cast<sockaddr*>(&src), &slen))
        return Errno{errno};
    if (port_of(reinterpret_cast<sockaddr*>(&src)) == 0) {
        // Give the socket its port now: the peer learns it from our headers.
        sockaddr_storage any{};
        any.ss_family = static_cast<sa_family_t>(domain_);
        if (::bind(udp_.get(), reinterpret_cast<sockaddr*>(&any), sockaddr_length(reinterpret_cast<sockaddr*>(&any))) &&
            errno != EINVAL)
            return Errno{errno};
        slen = sizeof src;
        if (::getsockname(udp_.get(), reinterpret_cast<sockaddr*>(&src), &slen))
            return Errno{errno};
    }
    if (!any_or_loopback(reinterpret_cast<sockaddr*>(&src)))
        return {};
    uint16_t port = port_of(reinterpret_cast<sockaddr*>(&src));
    Fd probe(raw_socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (probe.get() < 0)
        return Errno{errno};
    if (::connect(probe.get(), dst, dlen))
        return Errno{errno};
    slen = sizeof src;
    if (::getsockname(probe.get(), reinterpret_cast<sockaddr*>(&src), &slen))
        return Errno{errno};
    set_port(reinterpret_cast<sockaddr*>(&src), port);
    return {};
}

Status DgramSocket::post_recv(Qp& qp, uint32_t offset) {
    ibv_sge sge[2];
    sge[0].addr = reinterpret_cast<uintptr_t>(qp.rbuf.get() + rbuf_size_);
    sge[0].length = kGrh;
    sge[0].lkey = qp.rmr->lkey;
    sge[1].addr = reinterpret_cast<uintptr_t>(qp.rbuf.get() + offset);
    sge[1].length = kSlot;
    sge[1].lkey = qp.rmr->lkey;
    ibv_recv_wr wr{};
    wr.wr_id = kRecvWrFlag | offset;
    wr.sg_list = sge;
    wr.num_sge = 2;
    ibv_recv_wr* bad = nullptr;
    return post_status(ibv_post_recv(qp.id->qp, &wr, &bad));
}

// Out of memory this throws (the Qp's destructor undoes a partial build):
// from an r* call the barrier reports ENOMEM, on the service thread its loop
// drops the datagram that needed the QP.
Result<Qp*> DgramSocket::create_qp(const sockaddr_storage& src) {
    auto qp = std::make_unique<Qp>();
    qp->owner = this;
    qp->src = src;
    wire::format_ds_header(qp->hdr, reinterpret_cast<const sockaddr*>(&src));
    if (rdma_create_id(nullptr, &qp->id, qp.get(), RDMA_PS_UDP))
        return errno_or(ENOMEM);
    sockaddr_storage b = src;
    if (rdma_bind_addr(qp->id, reinterpret_cast<sockaddr*>(&b))) {
        // The RDMA port space is not the kernel's: a clash there must not
        // stop us, the port only matters in our headers.
        set_port(reinterpret_cast<sockaddr*>(&b), 0);
        if (rdma_bind_addr(qp->id, reinterpret_cast<sockaddr*>(&b)))
            return errno_or(EADDRNOTAVAIL);
    }
    if (!qp->id->verbs)
        return Errno{ENODEV};
    Result<ibv_pd*> pd = device_pd(qp->id);
    if (!pd.ok())
        return Errno{pd.error()};
    qp->pd = pd.value();
    qp->rbuf = std::make_unique<uint8_t[]>(rbuf_size_ + kGrh);
    qp->smr.reset(ibv_reg_mr(qp->pd, sbuf_.get(), sbuf_size_, IBV_ACCESS_LOCAL_WRITE));
    qp->rmr.reset(ibv_reg_mr(qp->pd, qp->rbuf.get(), rbuf_size_ + kGrh, IBV_ACCESS_LOCAL_WRITE));
    if (!qp->smr || !qp->rmr)
        return errno_or(ENOMEM);
    qp->channel = ibv_create_comp_channel(qp->id->verbs);
    if (!qp->channel)
        return errno_or(ENOMEM);
    (void)set_nonblocking(qp->channel->fd, true);
    qp->cq = ibv_create_cq(qp->id->verbs, sq_size_ + rq_size_, qp.get(), qp->channel, 0);
    if (!qp->cq)
        return errno_or(ENOMEM);
    ibv_qp_init_attr attr{};
    attr.qp_context = qp.get();
    attr.send_cq = qp->cq;
    attr.recv_cq = qp->cq;
    attr.qp_type = IBV_QPT_UD;
    attr.sq_sig_all = 1;
    attr.cap.max_send_wr = sq_size_;
    attr.cap.max_recv_wr = rq_size_;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 2;
    attr.cap.max_inline_data = sq_inline_;
    if (rdma_create_qp(qp->id, qp->pd, &attr))
        return errno_or(ENOMEM);
    sq_inline_ = static_cast<uint16_t>(std::min<uint32_t>(attr.cap.max_inline_data, kQpMaxSize));
    ibv_port_attr pattr{};
    if (!ibv_query_port(qp->id->verbs, qp->id->port_num, &pattr) && pattr.active_mtu >= IBV_MTU_256)
        qp->max_msg = std::min<uint32_t>(kSlot, 128u << pattr.active_mtu);
    for (uint32_t i = 0; i < rq_size_; i++) {
        if (Status s = post_recv(*qp, i * kSlot); !s.ok())
            return Errno{s.error()};
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (sys_epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, qp->channel->fd, &ev))
        return errno_or(EINVAL);
    Qp* made = qp.get();
    Lock lk(mu_);
    qps_.push_back(std::move(qp));
    armed_ = false;
    return made;
}

Result<Qp*> DgramSocket::get_qp(const sockaddr_storage& src) {
    for (auto& q : qps_) {
        if (same_ip(reinterpret_cast<const sockaddr*>(&q->src), reinterpret_cast<const sockaddr*>(&src)) &&
            port_of(reinterpret_cast<const sockaddr*>(&q->src)) == port_of(reinterpret_cast<const sockaddr*>(&src)))
            return q.get();
    }
    return create_qp(src);
}

// map_mu_ must not be held.
Result<Dest*> DgramSocket::get_dest(const sockaddr* addr, socklen_t len) {
    if (!addr)
        return Errno{EDESTADDRREQ};
    if (addr->sa_family != domain_ || len < sockaddr_length(addr))
        return Errno{EINVAL};
    std::lock_guard<std::mutex> g(map_mu_);
    AddrKey key = make_key(addr);
    auto it = dests_.find(key);
    if (it != dests_.end())
        return it->second.get();
    sockaddr_storage src;
    if (Status s = get_src_addr(addr, len, src); !s.ok())
        return Errno{s.error()};
    Result<Qp*> qp = get_qp(src);
    if (!qp.ok())
        return Errno{qp.error()};
    auto d = std::unique_ptr<Dest>(new (std::nothrow) Dest);
    if (!d)
        return Errno{ENOMEM};
    std::memcpy(&d->addr, &key.ss, sizeof key.ss);
    d->len = sockaddr_length(addr);
    d->qp = qp.value();
    Dest* made = d.get();
    try {
        dests_.emplace(key, std::move(d));
    } catch (...) {
        return Errno{ENOMEM};
    }
    return made;
}

// Service thread: route to the peer and an address handle for its QP.
void DgramSocket::create_ah(Dest& d, uint32_t qpn) {
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(nullptr, &id, nullptr, RDMA_PS_UDP))
        return;
    sockaddr_storage src = d.qp->src;
    set_port(reinterpret_cast<sockaddr*>(&src), 0);
    ibv_ah* ah = nullptr;
    if (!rdma_resolve_addr(id, reinterpret_cast<sockaddr*>(&src), reinterpret_cast<sockaddr*>(&d.addr), 2000) &&
        !rdma_resolve_route(id, 2000) && id->route.num_paths > 0) {
        const ibv_sa_path_rec& p = *id->route.path_rec;
        ibv_port_attr pattr{};
        ibv_query_port(d.qp->id->verbs, d.qp->id->port_num, &pattr);
        ibv_ah_attr attr{};
        bool roce = pattr.link_layer == IBV_LINK_LAYER_ETHERNET;
        if (roce || p.hop_limit > 1) {
            attr.is_global = 1;
            attr.grh.dgid = p.dgid;
            attr.grh.flow_label = be32toh(p.flow_label);
            attr.grh.hop_limit = p.hop_limit ? p.hop_limit : 64;
            attr.grh.traffic_class = p.traffic_class;
            // The source GID's index; RoCE v2 where a port has both types.
            int best = -1;
            for (int i = 0; i < pattr.gid_tbl_len && i < 256; i++) {
                ibv_gid_entry e{};
                if (_ibv_query_gid_ex(d.qp->id->verbs, d.qp->id->port_num, static_cast<uint32_t>(i), &e, 0, sizeof e)) {
                    ibv_gid g;
                    if (ibv_query_gid(d.qp->id->verbs, d.qp->id->port_num, i, &g) || std::memcmp(&g, &p.sgid, 16))
                        continue;
                    if (best < 0)
                        best = i;
                    continue;
                }
                if (std::memcmp(&e.gid, &p.sgid, 16))
                    continue;
                if (e.gid_type == IBV_GID_TYPE_ROCE_V2) {
                    best = i;
                    break;
                }
                if (best < 0)
                    best = i;
            }
            attr.grh.sgid_index = static_cast<uint8_t>(best < 0 ? 0 : best);
        }
        attr.dlid = be16toh(p.dlid);
        attr.sl = p.sl;
        attr.src_path_bits = static_cast<uint8_t>(be16toh(p.slid) & ((1 << pattr.lmc) - 1));
        attr.static_rate = p.rate;
        attr.port_num = d.qp->id->port_num;
        ah = ibv_create_ah(d.qp->pd, &attr);
    }
    rdma_destroy_id(id);
    if (!ah)
        return;
    Lock lk(mu_);
    if (d.ah)
        ibv_destroy_ah(d.ah);
    d.ah = ah;
    d.qpn = qpn;
}

Result<ssize_t> DgramSocket::send_udp(Dest& d, const iovec* iov, int iovcnt, int flags, Op op) {
    wire::DsUdpHeader h;
    uint8_t hlen = wire::format_udp_header(h, op, d.qp->id->qp->qp_num, reinterpret_cast<sockaddr*>(&d.qp->src));
    iovec v[1 + 8];
    if (iovcnt > 8)
        return Errno{ENOTSUP};
    v[0] = {&h, hlen};
    for (int i = 0; i < iovcnt; i++)
        v[1 + i] = iov[i];
    msghdr m{};
    m.msg_name = &d.addr;
    m.msg_namelen = d.len;
    m.msg_iov = v;
    m.msg_iovlen = static_cast<size_t>(1 + iovcnt);
    ssize_t r = ::sendmsg(udp_.get(), &m, flags & ~MSG_DONTWAIT);
    if (r < 0)
        return Errno{errno};
    return r >= hlen ? r - hlen : 0;
}

// Service thread (or a sender): queue a datagram that did not come over UD.
void DgramSocket::deliver_local(const uint8_t* data, size_t len, const sockaddr* from) {
    Lock lk(mu_);
    if (!rqe_avail_ || free_local_.empty())
        return;  // no room: datagrams may be dropped
    uint32_t off = free_local_.back();
    free_local_.pop_back();
    wire::DsHeader h;
    uint8_t hlen = wire::format_ds_header(h, from);
    len = std::min<size_t>(len, kSlot - hlen);
    std::memcpy(lbuf_.get() + off, &h, hlen);
    std::memcpy(lbuf_.get() + off + hlen, data, len);
    rqe_avail_--;
    rmsg_[rmsg_tail_] = {nullptr, off, static_cast<uint32_t>(hlen + len)};
    if (++rmsg_tail_ == rq_size_ + 1)
        rmsg_tail_ = 0;
    ++gen_;
    cv_.notify_all();
    uint64_t one = 1;
    (void)!::write(notify_.get(), &one, sizeof one);
}

void DgramSocket::on_udp_readable() {
    uint8_t buf[kSlot + wire::kDsUdpIpv6HeaderLen];
    for (;;) {
        sockaddr_storage from{};
        socklen_t flen = sizeof from;
        ssize_t n = ::recvfrom(udp_.get(), buf, sizeof buf, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &flen);
        if (n < 0)
            return;
        auto hdr = wire::parse_udp_header(buf, static_cast<size_t>(n), from.ss_family);
        if (!hdr)
            continue;
        Result<Dest*> found = get_dest(reinterpret_cast<sockaddr*>(&from), flen);
        if (!found.ok())
            continue;  // no way back to the sender: its datagram is dropped
        Dest* d = found.value();
        // Our QPN, so that the sender can switch to UD; a reply lost here
        // is sent again with the sender's next datagram.
        if (hdr->op == Op::Data)
            (void)send_udp(*d, nullptr, 0, 0, Op::Ctrl);
        bool need_ah;
        {
            Lock lk(mu_);
            need_ah = !d->ah || d->qpn != hdr->qpn;
        }
        if (need_ah)
            create_ah(*d, hdr->qpn);
        if (hdr->op == Op::Data)
            deliver_local(buf + hdr->length, static_cast<size_t>(n) - hdr->length, reinterpret_cast<sockaddr*>(&from));
    }
}

// mu_ held.
void DgramSocket::poll_cqs() {
    bool any = false;
    for (auto& qp : qps_) {
        ibv_wc wc[16];
        int n;
        while ((n = ibv_poll_cq(qp->cq, 16, wc)) > 0) {
            any = true;
            for (int i = 0; i < n; i++) {
                uint32_t off = static_cast<uint32_t>(wc[i].wr_id);
                if (wc[i].wr_id & kRecvWrFlag) {
                    uint32_t plen = wc[i].byte_len > kGrh ? wc[i].byte_len - kGrh : 0;
                    if (wc[i].status == IBV_WC_SUCCESS && rqe_avail_ &&
                        wire::valid_ds_header(qp->rbuf.get() + off, plen)) {
                        rqe_avail_--;
                        rmsg_[rmsg_tail_] = {qp.get(), off, plen};
                        if (++rmsg_tail_ == rq_size_ + 1)
                            rmsg_tail_ = 0;
                    } else if (wc[i].status != IBV_WC_WR_FLUSH_ERR) {
                        (void)post_recv(*qp, off);  // a slot that cannot be reposted stays unused
                    }
                } else {
                    free_slots_.push_back(off);
                    sqe_avail_++;
                }
            }
            if (n < 16)
                break;
        }
    }
    if (any) {
        ++gen_;
        cv_.notify_all();
    }
}

void DgramSocket::drain_events() {
    for (auto& qp : qps_) {
        ibv_cq* cq;
        void* ctx;
        while (!ibv_get_cq_event(qp->channel, &cq, &ctx)) {
            qp->cq_armed = false;
            armed_ = false;
            if (++qp->unacked >= 64) {
                ibv_ack_cq_events(qp->cq, qp->unacked);
                qp->unacked = 0;
            }
        }
    }
    uint64_t v;
    (void)!::read(notify_.get(), &v, sizeof v);
}

template <class Pred>
Status DgramSocket::wait_until(Lock& lk, bool nonblock, Pred pred) {
    uint64_t spin_start = 0;
    for (;;) {
        poll_cqs();
        if (pred())
            return {};
        if (nonblock)
            return Errno{EWOULDBLOCK};
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
        if (!armed_) {
            for (auto& qp : qps_) {
                if (!qp->cq_armed) {
                    ibv_req_notify_cq(qp->cq, 0);
                    qp->cq_armed = true;
                }
            }
            armed_ = true;
            continue;
        }
        if (sleeper_) {
            uint64_t gen = gen_;
            cv_.wait(lk, [&] { return gen_ != gen || !sleeper_; });
            continue;
        }
        sleeper_ = true;
        pollfd p{epfd_.get(), POLLIN, 0};
        lk.unlock();
        int n = sys_poll(&p, 1, static_cast<int>(config().wake_up_interval));
        int e = errno;
        lk.lock();
        sleeper_ = false;
        if (n > 0)
            drain_events();
        ++gen_;
        cv_.notify_all();
        if (n < 0 && e == EINTR)
            return Errno{EINTR};
    }
}

Status DgramSocket::connect(const sockaddr* addr, socklen_t len) {
    if (!addr)
        return Errno{EFAULT};
    std::lock_guard<std::mutex> sg(send_mu_);
    {
        Lock lk(mu_);
        if (Status s = init_ep(); !s.ok())
            return s;
    }
    if (::connect(udp_.get(), addr, len))
        return Errno{errno};
    Result<Dest*> d = get_dest(addr, len);
    if (!d.ok())
        return Errno{d.error()};
    Lock lk(mu_);
    conn_dest_ = d.value();
    return {};
}

Result<ssize_t> DgramSocket::send(const iovec* iov, int iovcnt, int flags, const sockaddr* dst, socklen_t dstlen) {
    std::lock_guard<std::mutex> sg(send_mu_);
    {
        Lock lk(mu_);
        if (Status s = init_ep(); !s.ok())
            return Errno{s.error()};
    }
    Dest* d = nullptr;
    {
        Lock lk(mu_);
        d = conn_dest_;
    }
    if (dst) {
        Result<Dest*> found = get_dest(dst, dstlen);
        if (!found.ok())
            return Errno{found.error()};
        d = found.value();
    } else if (!d) {
        return Errno{EDESTADDRREQ};
    }
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++)
        len += iov[i].iov_len;
    if (len + d->qp->hdr.length > d->qp->max_msg)
        return Errno{EMSGSIZE};
    Lock lk(mu_);
    if (!d->ah) {
        lk.unlock();
        return send_udp(*d, iov, iovcnt, flags, Op::Data);
    }
    if (Status s = wait_until(lk, nonblocking(flags), [this] { return sqe_avail_ > 0; }); !s.ok())
        return Errno{s.error()};
    uint32_t off = free_slots_.back();
    free_slots_.pop_back();
    sqe_avail_--;
    uint8_t* msg = sbuf_.get() + off;
    std::memcpy(msg, &d->qp->hdr, d->qp->hdr.length);
    size_t pos = d->qp->hdr.length;
    for (int i = 0; i < iovcnt; i++) {
        std::memcpy(msg + pos, iov[i].iov_base, iov[i].iov_len);
        pos += iov[i].iov_len;
    }
    ibv_sge sge{reinterpret_cast<uintptr_t>(msg), static_cast<uint32_t>(pos), d->qp->smr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = off;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = pos <= sq_inline_ ? IBV_SEND_INLINE : 0;
    wr.wr.ud.ah = d->ah;
    wr.wr.ud.remote_qpn = d->qpn;
    wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
    ibv_send_wr* bad = nullptr;
    if (Status s = post_status(ibv_post_send(d->qp->id->qp, &wr, &bad)); !s.ok()) {
        free_slots_.push_back(off);
        sqe_avail_++;
        return Errno{s.error()};
    }
    return static_cast<ssize_t>(len);
}

Result<ssize_t> DgramSocket::recv(const iovec* iov, int iovcnt, int flags, sockaddr* src, socklen_t* srclen) {
    std::lock_guard<std::mutex> rg(recv_mu_);
    Lock lk(mu_);
    if (state_ == kInit) {
        if (Status s = init_ep(); !s.ok())
            return Errno{s.error()};
    }
    if (!(state_ & kReadable))
        return Errno{EINVAL};
    if (Status s = wait_until(lk, nonblocking(flags), [this] { return have_rdata(); }); !s.ok())
        return Errno{s.error()};
    Pending& m = rmsg_[rmsg_head_];
    const uint8_t* data = m.qp ? m.qp->rbuf.get() + m.offset : lbuf_.get() + m.offset;
    wire::DsHeader h;
    std::memcpy(&h, data, std::min<size_t>(sizeof h, m.length));
    size_t avail = m.length > h.length ? m.length - h.length : 0;
    size_t copied = 0;
    for (int i = 0; i < iovcnt && copied < avail; i++) {
        size_t take = std::min(iov[i].iov_len, avail - copied);
        std::memcpy(iov[i].iov_base, data + h.length + copied, take);
        copied += take;
    }
    if (src && srclen) {
        sockaddr_storage from;
        socklen_t flen = wire::ds_header_source(h, from);
        std::memcpy(src, &from, std::min(*srclen, flen));
        *srclen = flen;
    }
    if (!(flags & MSG_PEEK)) {
        if (m.qp)
            (void)post_recv(*m.qp, m.offset);  // a slot that cannot be reposted stays unused
        else
            free_local_.push_back(m.offset);
        if (++rmsg_head_ == rq_size_ + 1)
            rmsg_head_ = 0;
        rqe_avail_++;
    }
    if (flags & MSG_TRUNC)
        return static_cast<ssize_t>(avail);
    return static_cast<ssize_t>(copied);
}

Status DgramSocket::shutdown(int how) {
    if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
        return Errno{EINVAL};
    return {};
}

void DgramSocket::close() {
    if (svc_token_) {
        Service::get().remove(svc_token_);
        svc_token_ = 0;
    }
    Lock lk(mu_);
    state_ &= ~(kReadable | kWritable);
    // Let posted sends finish (bounded: a send never waits for a peer).
    uint64_t until = now_us() + 1000000;
    while (sqe_avail_ < sq_size_ && !qps_.empty() && now_us() < until) {
        poll_cqs();
        if (sqe_avail_ < sq_size_) {
            lk.unlock();
            usleep(100);
            lk.lock();
        }
    }
}

Status DgramSocket::getpeername(sockaddr* addr, socklen_t* len) {
    if (::getpeername(udp_.get(), addr, len))
        return Errno{errno};
    return {};
}

Status DgramSocket::getsockname(sockaddr* addr, socklen_t* len) {
    if (::getsockname(udp_.get(), addr, len))
        return Errno{errno};
    return {};
}

Status DgramSocket::setsockopt(int level, int name, const void* val, socklen_t len) {
    if (!val)
        return Errno{EFAULT};
    // Socket-level options belong to the UDP socket as well.
    if (level != SOL_RDMA && ::setsockopt(udp_.get(), level, name, val, len))
        return Errno{errno};
    int v = 0;
    if (len >= sizeof(int))
        std::memcpy(&v, val, sizeof v);
    Lock lk(mu_);
    if (level == SOL_SOCKET && len >= sizeof(int)) {
        if (name == SO_RCVBUF && qps_.empty())
            rbuf_size_ = opts::rcvbuf(v);
        else if (name == SO_SNDBUF && !sbuf_)
            sbuf_size_ = opts::sndbuf(v);
        return {};
    }
    if (level != SOL_RDMA)
        return {};
    if (int bad = opts::check_set(level, name, val, len))
        return Errno{-bad};
    if (state_ != kInit)
        return Errno{EINVAL};
    switch (name) {
    case RDMA_SQSIZE: sq_size_ = opts::queue_value(v); break;
    case RDMA_RQSIZE: rq_size_ = opts::queue_value(v); break;
    case RDMA_INLINE: sq_inline_ = opts::queue_value(v); break;
    default:  // RDMA_IOMAPSIZE, RDMA_ROUTE: stream sockets only
        break;
    }
    return {};
}

Status DgramSocket::getsockopt(int level, int name, void* val, socklen_t* len) {
    if (!val || !len)
        return Errno{EFAULT};
    if (*len < sizeof(int))
        return Errno{EINVAL};
    Lock lk(mu_);
    int v;
    if (level == SOL_RDMA) {
        switch (name) {
        case RDMA_SQSIZE: v = sq_size_; break;
        case RDMA_RQSIZE: v = rq_size_; break;
        case RDMA_INLINE: v = sq_inline_; break;
        case RDMA_IOMAPSIZE: v = 0; break;
        default: return Errno{ENOTSUP};
        }
    } else if (level == SOL_SOCKET && name == SO_RCVBUF) {
        v = static_cast<int>(rbuf_size_);
    } else if (level == SOL_SOCKET && name == SO_SNDBUF) {
        v = static_cast<int>(sbuf_size_);
    } else {
        lk.unlock();
        if (::getsockopt(udp_.get(), level, name, val, len))
            return Errno{errno};
        return {};
    }
    std::memcpy(val, &v, sizeof v);
    *len = sizeof v;
    return {};
}

int DgramSocket::get_flags() {
    Lock lk(mu_);
    return fd_flags_;
}

void DgramSocket::set_flags(int flags) {
    Lock lk(mu_);
    fd_flags_ = flags;
}

short DgramSocket::poll_check(short events) {
    Lock lk(mu_);
    poll_cqs();
    short rev = 0;
    if ((events & POLLIN) && have_rdata())
        rev |= POLLIN;
    if ((events & POLLOUT) && (state_ == kInit || sqe_avail_ > 0))
        rev |= POLLOUT;
    return rev;
}

int DgramSocket::poll_sleep_fds(pollfd* fds) {
    Lock lk(mu_);
    if (!armed_) {
        for (auto& qp : qps_) {
            if (!qp->cq_armed) {
                ibv_req_notify_cq(qp->cq, 0);
                qp->cq_armed = true;
            }
        }
        armed_ = true;
        uint64_t gen = gen_;
        poll_cqs();
        if (gen != gen_)
            return 0;
    }
    fds[0] = {epfd_.get(), POLLIN, 0};
    return 1;
}

void DgramSocket::poll_woken() {
    Lock lk(mu_);
    drain_events();
}

}  // namespace

Result<std::unique_ptr<Socket>> create_dgram_socket(int domain) {
    if (domain != AF_INET && domain != AF_INET6)
        return Errno{EAFNOSUPPORT};
    auto s = std::make_unique<DgramSocket>();
    if (Status st = s->init(domain); !st.ok())
        return Errno{st.error()};
    return std::unique_ptr<Socket>(std::move(s));
}

}  // namespace rdma::rs
