// rsockets entry points (rdma/rsocket.h) and what all socket kinds share:
// the configuration files, the index table, the service thread.
//
// An rsocket index is a real file descriptor owned by the rsocket (the
// rdma_cm event channel of a stream socket, the UDP socket of a datagram
// socket), so it never collides with the application's own descriptors and
// rpoll/rselect can mix both kinds.
#include "rsocket_internal.h"

#include "util/c_entry.h"
#include "util/immortal.h"

#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <unordered_map>

#include <infiniband/ib.h>
#include <rdma/rsocket.h>

#ifndef RSOCKET_CONF_DIR
#define RSOCKET_CONF_DIR "/etc/rdma/rsocket"
#endif

namespace rdma::rs {

// Process-wide objects (the socket table, the service thread) must outlive
// every thread, including the service thread still running while exit()
// runs static destructors.
using rdma::immortal;

// ------------------------------------------------------------------ config

const Config& config() {
    static const Config cfg = read_config(RSOCKET_CONF_DIR);
    return cfg;
}

// ----------------------------------------------------------------- helpers

int raw_socket(int domain, int type, int protocol) {
    long r = ::syscall(SYS_socket, domain, type, protocol);
    return static_cast<int>(r);
}

int sys_poll(pollfd* fds, nfds_t nfds, int timeout_ms) {
    if (timeout_ms < 0)
        return ::ppoll(fds, nfds, nullptr, nullptr);
    timespec ts{timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
    return ::ppoll(fds, nfds, &ts, nullptr);
}

int sys_epoll_create() { return static_cast<int>(::syscall(SYS_epoll_create1, EPOLL_CLOEXEC)); }

int sys_epoll_ctl(int epfd, int op, int fd, epoll_event* ev) {
    return static_cast<int>(::syscall(SYS_epoll_ctl, epfd, op, fd, ev));
}

int sys_epoll_wait(int epfd, epoll_event* evs, int max, int timeout_ms) {
    return static_cast<int>(::syscall(SYS_epoll_pwait, epfd, evs, max, timeout_ms, nullptr, 0));
}

Status set_nonblocking(int fd, bool on) {
    int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0)
        return errno_or(EINVAL);
    int nfl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
    if (nfl != fl && ::fcntl(fd, F_SETFL, nfl))
        return errno_or(EINVAL);
    return {};
}

Result<ibv_pd*> device_pd(rdma_cm_id* id) {
    if (id->pd)
        return id->pd;
    if (!id->verbs)
        return errno_or(ENOMEM);
    struct Entry {
        ibv_context* verbs;
        ibv_pd* pd;
    };
    static std::mutex mu;
    static Entry table[64];
    std::lock_guard<std::mutex> g(mu);
    for (Entry& e : table) {
        if (e.verbs == id->verbs)
            return e.pd;
        if (!e.verbs) {
            ibv_pd* pd = ibv_alloc_pd(id->verbs);
            if (!pd)
                return errno_or(ENOMEM);
            e = {id->verbs, pd};
            return pd;
        }
    }
    return Errno{ENOMEM};  // more devices than slots
}

socklen_t sockaddr_length(const sockaddr* sa) {
    if (!sa)
        return 0;
    switch (sa->sa_family) {
    case AF_INET: return sizeof(sockaddr_in);
    case AF_INET6: return sizeof(sockaddr_in6);
    case AF_IB: return sizeof(sockaddr_ib);
    default: return sizeof(sockaddr);
    }
}

void copy_sockaddr_out(const sockaddr* src, sockaddr* dst, socklen_t* len) {
    socklen_t full = src->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (src->sa_family == AF_IB)
        full = sizeof(sockaddr_ib);
    std::memcpy(dst, src, std::min(*len, full));
    *len = full;
}

uint64_t now_us() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

FdTable<Socket>& sockets() { return immortal<FdTable<Socket>>(); }

// ------------------------------------------------------------ service thread

struct Service::Impl {
    struct Entry {
        int fd;
        Handler handler;
    };
    int epfd = -1;
    // Held while a handler runs and while the table changes: remove()
    // returning means the handler is done for good. Recursive so that a
    // handler may register or remove others.
    std::recursive_mutex run_mu;
    std::unordered_map<long, Entry> entries;
    long next_token = 1;
    std::thread::id tid;

    void run() {
        prctl(PR_SET_NAME, kServiceThreadName, 0, 0, 0);
        epoll_event evs[16];
        for (;;) {
            int n = sys_epoll_wait(epfd, evs, 16, -1);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                return;
            }
            for (int i = 0; i < n; i++) {
                std::lock_guard<std::recursive_mutex> g(run_mu);
                auto it = entries.find(static_cast<long>(evs[i].data.u64));
                if (it == entries.end())
                    continue;
                // Nothing may leave the thread: a handler that fails (out of
                // memory) gives up this round and runs again on the next
                // readiness.
                try {
                    // Copy: the handler may remove itself.
                    Handler h = it->second.handler;
                    h();
                } catch (...) {}
            }
        }
    }
};

Service& Service::get() { return immortal<Service>(); }

Result<Service::Impl*> Service::impl() {
    if (Impl* i = impl_.load(std::memory_order_acquire))
        return i;
    std::lock_guard<std::mutex> g(start_mu_);
    if (Impl* i = impl_.load(std::memory_order_relaxed))
        return i;
    Impl* i = &immortal<Impl>();
    i->epfd = sys_epoll_create();
    if (i->epfd < 0)
        return Errno{errno};
    try {
        std::thread t([i] { i->run(); });
        i->tid = t.get_id();
        t.detach();
    } catch (...) {
        int e = rdma::errno_of_current_exception();
        ::close(i->epfd);
        i->epfd = -1;
        return Errno{e};
    }
    impl_.store(i, std::memory_order_release);
    return i;
}

Result<long> Service::add(int fd, Handler on_readable) {
    Result<Impl*> started = impl();
    if (!started.ok())
        return Errno{started.error()};
    Impl* i = started.value();
    std::lock_guard<std::recursive_mutex> g(i->run_mu);
    long token = i->next_token++;
    try {
        i->entries.emplace(token, Impl::Entry{fd, std::move(on_readable)});
    } catch (...) {
        return Errno{rdma::errno_of_current_exception()};
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = static_cast<uint64_t>(token);
    if (sys_epoll_ctl(i->epfd, EPOLL_CTL_ADD, fd, &ev)) {
        int e = errno;
        i->entries.erase(token);
        return Errno{e};
    }
    return token;
}

void Service::remove(long token) {
    Impl* i = impl_.load(std::memory_order_acquire);
    if (!i || token <= 0)
        return;
    std::lock_guard<std::recursive_mutex> g(i->run_mu);
    auto it = i->entries.find(token);
    if (it == i->entries.end())
        return;
    sys_epoll_ctl(i->epfd, EPOLL_CTL_DEL, it->second.fd, nullptr);
    i->entries.erase(it);
}

bool Service::on_service_thread() const {
    Impl* i = impl_.load(std::memory_order_acquire);
    return i && std::this_thread::get_id() == i->tid;
}

}  // namespace rdma::rs

// ==================================================================== C ABI

using namespace rdma::rs;
using rdma::Errno;
using rdma::Result;
using rdma::Status;

namespace {

// with_socket after argument checks the call makes before it looks the
// socket up (their errno wins over EBADF).
template <class Check, class F>
auto with_socket(int index, Check check, F fn) {
    using R = decltype(fn(std::declval<Socket&>()));
    return rdma::entry_minus_one([&]() -> R {
        if (Status st = check(); !st.ok())
            return Errno{st.error()};
        Socket* s = sockets().get(index);
        if (!s)
            return Errno{EBADF};
        return fn(*s);
    });
}

// Runs `fn` on the socket behind `index` through the C-entry barrier: EBADF
// when there is none; the Status or Result<number> it returns becomes 0 or
// the number, or -1 with errno.
template <class F>
auto with_socket(int index, F fn) {
    return with_socket(
        index, [] { return Status{}; }, fn);
}

// A negative value that is not a failure (a flag word rfcntl(F_SETFL)
// stored, an offset riomap was given) reads as -1 with its negation in
// errno, as these calls have always answered.
template <class T>
Result<T> negative_as_errno(T v) {
    if (v < 0)
        return Errno{static_cast<int>(-v)};
    return v;
}

}  // namespace

RSOCKET_EXPORT int rsocket(int domain, int type, int protocol) {
    return rdma::entry_minus_one([&]() -> Result<int> {
        if ((domain != AF_INET && domain != AF_INET6 && domain != AF_IB) ||
            (type != SOCK_STREAM && type != SOCK_DGRAM) ||
            (type == SOCK_STREAM && protocol && protocol != IPPROTO_TCP) ||
            (type == SOCK_DGRAM && protocol && protocol != IPPROTO_UDP))
            return Errno{ENOTSUP};
        Result<std::unique_ptr<Socket>> made =
            type == SOCK_STREAM ? create_stream_socket(domain) : create_dgram_socket(domain);
        if (!made.ok())
            return Errno{made.error()};
        std::unique_ptr<Socket>& s = made.value();
        int index = s->index();
        if (!sockets().insert(index, s.get()))
            return Errno{ENOMEM};
        s.release();
        return index;
    });
}

RSOCKET_EXPORT int rbind(int socket, const struct sockaddr* addr, socklen_t addrlen) {
    return with_socket(socket, [&](Socket& s) { return s.bind(addr, addrlen); });
}

RSOCKET_EXPORT int rlisten(int socket, int backlog) {
    return with_socket(socket, [&](Socket& s) { return s.listen(backlog); });
}

RSOCKET_EXPORT int raccept(int socket, struct sockaddr* addr, socklen_t* addrlen) {
    return with_socket(socket, [&](Socket& s) -> Result<int> {
        Result<std::unique_ptr<Socket>> accepted = s.accept();
        if (!accepted.ok())
            return Errno{accepted.error()};
        std::unique_ptr<Socket>& n = accepted.value();
        int index = n->index();
        if (!sockets().insert(index, n.get()))
            return Errno{ENOMEM};
        Socket* ns = n.release();
        // Cannot fail: both pointers are there.
        if (addr && addrlen)
            (void)ns->getpeername(addr, addrlen);
        return index;
    });
}

RSOCKET_EXPORT int rconnect(int socket, const struct sockaddr* addr, socklen_t addrlen) {
    return with_socket(socket, [&](Socket& s) { return s.connect(addr, addrlen); });
}

RSOCKET_EXPORT int rshutdown(int socket, int how) {
    return with_socket(socket, [&](Socket& s) { return s.shutdown(how); });
}

// The index is released whatever happens; a graceful part that fails (out
// of memory) still ends in the socket's destruction, and the call reports
// why with -1 and errno.
RSOCKET_EXPORT int rclose(int socket) {
    return rdma::entry_minus_one([&]() -> Status {
        Socket* s = sockets().erase(socket);
        if (!s)
            return close_repoll(socket);
        std::unique_ptr<Socket> owner(s);
        owner->close();
        return {};
    });
}

RSOCKET_EXPORT ssize_t rrecv(int socket, void* buf, size_t len, int flags) {
    iovec v{buf, len};
    return with_socket(socket, [&](Socket& s) { return s.recv(&v, 1, flags, nullptr, nullptr); });
}

RSOCKET_EXPORT ssize_t rrecvfrom(int socket, void* buf, size_t len, int flags, struct sockaddr* src_addr,
                                 socklen_t* addrlen) {
    iovec v{buf, len};
    return with_socket(socket, [&](Socket& s) { return s.recv(&v, 1, flags, src_addr, addrlen); });
}

// What rreadv and rwritev refuse before they look at the socket.
static Status check_iovcnt(int iovcnt) {
    if (iovcnt < 0 || iovcnt > IOV_MAX)
        return Errno{EINVAL};
    return {};
}

// What rrecvmsg and rsendmsg refuse before they look at the socket.
static Status check_msghdr(const msghdr* msg) {
    if (!msg)
        return Errno{EFAULT};
    if (msg->msg_control && msg->msg_controllen)
        return Errno{ENOTSUP};
    if (msg->msg_iovlen > IOV_MAX)
        return Errno{EMSGSIZE};
    return {};
}

RSOCKET_EXPORT ssize_t rrecvmsg(int socket, struct msghdr* msg, int flags) {
    return with_socket(
        socket, [&] { return check_msghdr(msg); },
        [&](Socket& s) {
            socklen_t namelen = msg->msg_name ? msg->msg_namelen : 0;
            Result<ssize_t> r = s.recv(msg->msg_iov, static_cast<int>(msg->msg_iovlen), flags,
                                       static_cast<sockaddr*>(msg->msg_name), msg->msg_name ? &namelen : nullptr);
            if (r.ok()) {
                msg->msg_namelen = s.kind() == Kind::Dgram ? namelen : 0;
                msg->msg_flags = 0;
            }
            return r;
        });
}

RSOCKET_EXPORT ssize_t rread(int socket, void* buf, size_t count) {
    iovec v{buf, count};
    return with_socket(socket, [&](Socket& s) { return s.recv(&v, 1, 0, nullptr, nullptr); });
}

RSOCKET_EXPORT ssize_t rreadv(int socket, const struct iovec* iov, int iovcnt) {
    return with_socket(
        socket, [&] { return check_iovcnt(iovcnt); },
        [&](Socket& s) { return s.recv(iov, iovcnt, 0, nullptr, nullptr); });
}

RSOCKET_EXPORT ssize_t rsend(int socket, const void* buf, size_t len, int flags) {
    iovec v{const_cast<void*>(buf), len};
    return with_socket(socket, [&](Socket& s) { return s.send(&v, 1, flags, nullptr, 0); });
}

RSOCKET_EXPORT ssize_t rsendto(int socket, const void* buf, size_t len, int flags, const struct sockaddr* dest_addr,
                               socklen_t addrlen) {
    iovec v{const_cast<void*>(buf), len};
    return with_socket(socket, [&](Socket& s) { return s.send(&v, 1, flags, dest_addr, addrlen); });
}

RSOCKET_EXPORT ssize_t rsendmsg(int socket, const struct msghdr* msg, int flags) {
    return with_socket(
        socket, [&] { return check_msghdr(msg); },
        [&](Socket& s) {
            return s.send(msg->msg_iov, static_cast<int>(msg->msg_iovlen), flags,
                          static_cast<const sockaddr*>(msg->msg_name), msg->msg_name ? msg->msg_namelen : 0);
        });
}

RSOCKET_EXPORT ssize_t rwrite(int socket, const void* buf, size_t count) {
    iovec v{const_cast<void*>(buf), count};
    return with_socket(socket, [&](Socket& s) { return s.send(&v, 1, 0, nullptr, 0); });
}

RSOCKET_EXPORT ssize_t rwritev(int socket, const struct iovec* iov, int iovcnt) {
    return with_socket(
        socket, [&] { return check_iovcnt(iovcnt); }, [&](Socket& s) { return s.send(iov, iovcnt, 0, nullptr, 0); });
}

RSOCKET_EXPORT int rgetpeername(int socket, struct sockaddr* addr, socklen_t* addrlen) {
    return with_socket(socket, [&](Socket& s) { return s.getpeername(addr, addrlen); });
}

RSOCKET_EXPORT int rgetsockname(int socket, struct sockaddr* addr, socklen_t* addrlen) {
    return with_socket(socket, [&](Socket& s) { return s.getsockname(addr, addrlen); });
}

RSOCKET_EXPORT int rsetsockopt(int socket, int level, int optname, const void* optval, socklen_t optlen) {
    return with_socket(socket, [&](Socket& s) { return s.setsockopt(level, optname, optval, optlen); });
}

RSOCKET_EXPORT int rgetsockopt(int socket, int level, int optname, void* optval, socklen_t* optlen) {
    return with_socket(socket, [&](Socket& s) { return s.getsockopt(level, optname, optval, optlen); });
}

RSOCKET_EXPORT int rfcntl(int socket, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    int arg = 0;
    if (cmd == F_SETFL)
        arg = va_arg(ap, int);
    va_end(ap);
    return with_socket(socket, [&](Socket& s) -> Result<int> {
        switch (cmd) {
        case F_GETFL: return negative_as_errno(s.get_flags());
        case F_SETFL: s.set_flags(arg); return 0;
        default: return Errno{ENOTSUP};
        }
    });
}

RSOCKET_EXPORT off_t riomap(int socket, void* buf, size_t len, int prot, int flags, off_t offset) {
    return with_socket(socket, [&](Socket& s) -> Result<off_t> {
        Result<off_t> r = s.iomap(buf, len, prot, flags, offset);
        if (!r.ok())
            return r;
        return negative_as_errno(r.value());
    });
}

RSOCKET_EXPORT int riounmap(int socket, void* buf, size_t len) {
    return with_socket(socket, [&](Socket& s) { return s.iounmap(buf, len); });
}

RSOCKET_EXPORT size_t riowrite(int socket, const void* buf, size_t count, off_t offset, int flags) {
    ssize_t r = with_socket(socket, [&](Socket& s) { return s.iowrite(buf, count, offset, flags); });
    return static_cast<size_t>(r);
}
