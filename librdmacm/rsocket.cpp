// rsockets entry points (rdma/rsocket.h) and what all socket kinds share:
// the configuration files, the index table, the service thread.
//
// An rsocket index is a real file descriptor owned by the rsocket (the
// rdma_cm event channel of a stream socket, the UDP socket of a datagram
// socket), so it never collides with the application's own descriptors and
// rpoll/rselect can mix both kinds.
#include "rsocket_internal.h"

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

namespace {

// Process-wide objects that must outlive every thread, including the
// service thread still running while exit() runs static destructors: built
// in static storage and never destroyed.
template <class T>
T& immortal() {
    alignas(T) static unsigned char storage[sizeof(T)];
    static T* obj = std::construct_at(reinterpret_cast<T*>(storage));
    return *obj;
}

}  // namespace

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

int set_nonblocking(int fd, bool on) {
    int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0)
        return -1;
    int nfl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
    return nfl == fl ? 0 : ::fcntl(fd, F_SETFL, nfl);
}

ibv_pd* device_pd(rdma_cm_id* id) {
    if (id->pd)
        return id->pd;
    if (!id->verbs)
        return nullptr;
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
            if (pd)
                e = {id->verbs, pd};
            return pd;
        }
    }
    errno = ENOMEM;
    return nullptr;
}

socklen_t sockaddr_length(const sockaddr* sa) {
    if (!sa)
        return 0;
    switch (sa->sa_family) {
    case AF_INET:
        return sizeof(sockaddr_in);
    case AF_INET6:
        return sizeof(sockaddr_in6);
    case AF_IB:
        return sizeof(sockaddr_ib);
    default:
        return sizeof(sockaddr);
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
                // Copy: the handler may remove itself.
                Handler h = it->second.handler;
                try {
                    h();
                } catch (...) {
                }
            }
        }
    }
};

Service& Service::get() { return immortal<Service>(); }

Service::Impl* Service::impl() {
    std::call_once(once_, [this] {
        static Impl storage_impl;
        Impl* i = &storage_impl;
        i->epfd = sys_epoll_create();
        if (i->epfd < 0)
            return;
        try {
            std::thread t([i] { i->run(); });
            i->tid = t.get_id();
            t.detach();
            impl_ = i;
        } catch (...) {
            ::close(i->epfd);
            i->epfd = -1;
        }
    });
    return impl_;
}

long Service::add(int fd, Handler on_readable) {
    Impl* i = impl();
    if (!i)
        return -EAGAIN;
    std::lock_guard<std::recursive_mutex> g(i->run_mu);
    long token = i->next_token++;
    try {
        i->entries.emplace(token, Impl::Entry{fd, std::move(on_readable)});
    } catch (...) {
        return -ENOMEM;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = static_cast<uint64_t>(token);
    if (sys_epoll_ctl(i->epfd, EPOLL_CTL_ADD, fd, &ev)) {
        int e = errno;
        i->entries.erase(token);
        return -e;
    }
    return token;
}

void Service::remove(long token) {
    Impl* i = impl_;
    if (!i || token <= 0)
        return;
    std::lock_guard<std::recursive_mutex> g(i->run_mu);
    auto it = i->entries.find(token);
    if (it == i->entries.end())
        return;
    sys_epoll_ctl(i->epfd, EPOLL_CTL_DEL, it->second.fd, nullptr);
    i->entries.erase(it);
}

bool Service::on_service_thread() const { return impl_ && std::this_thread::get_id() == impl_->tid; }

}  // namespace rdma::rs

// ==================================================================== C ABI

using namespace rdma::rs;

namespace {

// -errno -> -1 with errno set; other values pass through.
template <class T>
T finish(T r) {
    if (r < 0) {
        errno = static_cast<int>(-r);
        return static_cast<T>(-1);
    }
    return r;
}

template <class T>
T fail(int e) {
    errno = e;
    return static_cast<T>(-1);
}

// Runs `fn` on the socket behind `index`; EBADF when there is none. No
// exception leaves.
template <class R, class F>
R with_socket(int index, F fn) {
    Socket* s = sockets().get(index);
    if (!s)
        return fail<R>(EBADF);
    try {
        return finish<R>(fn(*s));
    } catch (const std::bad_alloc&) {
        return fail<R>(ENOMEM);
    } catch (...) {
        return fail<R>(EIO);
    }
}

}  // namespace

RSOCKET_EXPORT int rsocket(int domain, int type, int protocol) {
    if ((domain != AF_INET && domain != AF_INET6 && domain != AF_IB) ||
        (type != SOCK_STREAM && type != SOCK_DGRAM) ||
        (type == SOCK_STREAM && protocol && protocol != IPPROTO_TCP) ||
        (type == SOCK_DGRAM && protocol && protocol != IPPROTO_UDP))
        return fail<int>(ENOTSUP);
    try {
        std::unique_ptr<Socket> s;
        int r = type == SOCK_STREAM ? create_stream_socket(domain, s) : create_dgram_socket(domain, s);
        if (r)
            return fail<int>(-r);
        int index = s->index();
        if (!sockets().insert(index, s.get()))
            return fail<int>(ENOMEM);
        s.release();
        return index;
    } catch (const std::bad_alloc&) {
        return fail<int>(ENOMEM);
    } catch (...) {
        return fail<int>(EIO);
    }
}

RSOCKET_EXPORT int rbind(int socket, const struct sockaddr* addr, socklen_t addrlen) {
    return with_socket<int>(socket, [&](Socket& s) { return s.bind(addr, addrlen); });
}

RSOCKET_EXPORT int rlisten(int socket, int backlog) {
    return with_socket<int>(socket, [&](Socket& s) { return s.listen(backlog); });
}

RSOCKET_EXPORT int raccept(int socket, struct sockaddr* addr, socklen_t* addrlen) {
    return with_socket<int>(socket, [&](Socket& s) -> int {
        std::unique_ptr<Socket> n;
        int r = s.accept(n);
        if (r)
            return r;
        int index = n->index();
        if (!sockets().insert(index, n.get()))
            return -ENOMEM;
        Socket* ns = n.release();
        if (addr && addrlen)
            ns->getpeername(addr, addrlen);
        return index;
    });
}

RSOCKET_EXPORT int rconnect(int socket, const struct sockaddr* addr, socklen_t addrlen) {
    return with_socket<int>(socket, [&](Socket& s) { return s.connect(addr, addrlen); });
}

RSOCKET_EXPORT int rshutdown(int socket, int how) {
    return with_socket<int>(socket, [&](Socket& s) { return s.shutdown(how); });
}

RSOCKET_EXPORT int rclose(int socket) {
    Socket* s = sockets().erase(socket);
    if (!s)
        return finish<int>(close_repoll(socket));
    std::unique_ptr<Socket> owner(s);
    try {
        owner->close();
    } catch (...) {
    }
    return 0;
}

RSOCKET_EXPORT ssize_t rrecv(int socket, void* buf, size_t len, int flags) {
    iovec v{buf, len};
    return with_socket<ssize_t>(socket, [&](Socket& s) { return s.recv(&v, 1, flags, nullptr, nullptr); });
}

RSOCKET_EXPORT ssize_t rrecvfrom(int socket, void* buf, size_t len, int flags, struct sockaddr* src_addr,
                                 socklen_t* addrlen) {
    iovec v{buf, len};
    return with_socket<ssize_t>(socket, [&](Socket& s) { return s.recv(&v, 1, flags, src_addr, addrlen); });
}

RSOCKET_EXPORT ssize_t rrecvmsg(int socket, struct msghdr* msg, int flags) {
    if (!msg)
        return fail<ssize_t>(EFAULT);
    if (msg->msg_control && msg->msg_controllen)
        return fail<ssize_t>(ENOTSUP);
    if (msg->msg_iovlen > IOV_MAX)
        return fail<ssize_t>(EMSGSIZE);
    return with_socket<ssize_t>(socket, [&](Socket& s) -> ssize_t {
        socklen_t namelen = msg->msg_name ? msg->msg_namelen : 0;
        ssize_t r = s.recv(msg->msg_iov, static_cast<int>(msg->msg_iovlen), flags,
                           static_cast<sockaddr*>(msg->msg_name), msg->msg_name ? &namelen : nullptr);
        if (r >= 0) {
            msg->msg_namelen = s.kind() == Kind::Dgram ? namelen : 0;
            msg->msg_flags = 0;
        }
        return r;
    });
}

RSOCKET_EXPORT ssize_t rread(int socket, void* buf, size_t count) { return rrecv(socket, buf, count, 0); }

RSOCKET_EXPORT ssize_t rreadv(int socket, const struct iovec* iov, int iovcnt) {
    if (iovcnt < 0 || iovcnt > IOV_MAX)
        return fail<ssize_t>(EINVAL);
    return with_socket<ssize_t>(socket, [&](Socket& s) { return s.recv(iov, iovcnt, 0, nullptr, nullptr); });
}

RSOCKET_EXPORT ssize_t rsend(int socket, const void* buf, size_t len, int flags) {
    iovec v{const_cast<void*>(buf), len};
    return with_socket<ssize_t>(socket, [&](Socket& s) { return s.send(&v, 1, flags, nullptr, 0); });
}

RSOCKET_EXPORT ssize_t rsendto(int socket, const void* buf, size_t len, int flags,
                               const struct sockaddr* dest_addr, socklen_t addrlen) {
    iovec v{const_cast<void*>(buf), len};
    return with_socket<ssize_t>(socket, [&](Socket& s) { return s.send(&v, 1, flags, dest_addr, addrlen); });
}

RSOCKET_EXPORT ssize_t rsendmsg(int socket, const struct msghdr* msg, int flags) {
    if (!msg)
        return fail<ssize_t>(EFAULT);
    if (msg->msg_control && msg->msg_controllen)
        return fail<ssize_t>(ENOTSUP);
    if (msg->msg_iovlen > IOV_MAX)
        return fail<ssize_t>(EMSGSIZE);
    return with_socket<ssize_t>(socket, [&](Socket& s) {
        return s.send(msg->msg_iov, static_cast<int>(msg->msg_iovlen), flags,
                      static_cast<const sockaddr*>(msg->msg_name), msg->msg_name ? msg->msg_namelen : 0);
    });
}

RSOCKET_EXPORT ssize_t rwrite(int socket, const void* buf, size_t count) { return rsend(socket, buf, count, 0); }

RSOCKET_EXPORT ssize_t rwritev(int socket, const struct iovec* iov, int iovcnt) {
    if (iovcnt < 0 || iovcnt > IOV_MAX)
        return fail<ssize_t>(EINVAL);
    return with_socket<ssize_t>(socket, [&](Socket& s) { return s.send(iov, iovcnt, 0, nullptr, 0); });
}

RSOCKET_EXPORT int rgetpeername(int socket, struct sockaddr* addr, socklen_t* addrlen) {
    return with_socket<int>(socket, [&](Socket& s) { return s.getpeername(addr, addrlen); });
}

RSOCKET_EXPORT int rgetsockname(int socket, struct sockaddr* addr, socklen_t* addrlen) {
    return with_socket<int>(socket, [&](Socket& s) { return s.getsockname(addr, addrlen); });
}

RSOCKET_EXPORT int rsetsockopt(int socket, int level, int optname, const void* optval, socklen_t optlen) {
    return with_socket<int>(socket, [&](Socket& s) { return s.setsockopt(level, optname, optval, optlen); });
}

RSOCKET_EXPORT int rgetsockopt(int socket, int level, int optname, void* optval, socklen_t* optlen) {
    return with_socket<int>(socket, [&](Socket& s) { return s.getsockopt(level, optname, optval, optlen); });
}

RSOCKET_EXPORT int rfcntl(int socket, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    int arg = 0;
    if (cmd == F_SETFL)
        arg = va_arg(ap, int);
    va_end(ap);
    return with_socket<int>(socket, [&](Socket& s) -> int {
        switch (cmd) {
        case F_GETFL:
            return s.get_flags();
        case F_SETFL:
            return s.set_flags(arg);
        default:
            return -ENOTSUP;
        }
    });
}

RSOCKET_EXPORT off_t riomap(int socket, void* buf, size_t len, int prot, int flags, off_t offset) {
    return with_socket<off_t>(socket, [&](Socket& s) { return s.iomap(buf, len, prot, flags, offset); });
}

RSOCKET_EXPORT int riounmap(int socket, void* buf, size_t len) {
    return with_socket<int>(socket, [&](Socket& s) { return s.iounmap(buf, len); });
}

RSOCKET_EXPORT size_t riowrite(int socket, const void* buf, size_t count, off_t offset, int flags) {
    ssize_t r = with_socket<ssize_t>(socket, [&](Socket& s) { return s.iowrite(buf, count, offset, flags); });
    return static_cast<size_t>(r);
}
