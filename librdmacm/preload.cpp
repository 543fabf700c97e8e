// librspreload: LD_PRELOAD this library and an unmodified sockets program
// talks rsockets instead of TCP/UDP (both ends must, rsocket(7)).
//
// Every socket the program creates (subject to preload_config) becomes an
// rsocket; what the program holds is a stand-in descriptor opened on
// /dev/null, mapped here to the rsocket's index. Calls on stand-ins go to the
// r* functions, everything else to the next definition (libc), looked up
// with dlsym(RTLD_NEXT). A stand-in is a real descriptor, so numbers never
// collide with the program's files, and when an rsocket cannot do the job
// (its connect fails, e.g. the peer is not an rsocket) a kernel socket is
// dup3()ed onto the same number and the program carries on over the kernel.
//
// Non-socket descriptors pay one lock-free table lookup per call.
//
// No exception leaves an interposed call, by construction rather than
// through the util/c_entry.h barrier: each one calls only libc, librdmacm's
// r* entry points (barriered themselves) and helpers here that allocate
// with nothrow new or inside try blocks. Nor are they noexcept: read(),
// poll(), accept() ... are thread cancellation points, and glibc cancels a
// thread by unwinding it, which a noexcept frame turns into an abort.
#include "librdmacm/rsocket_internal.h"
#include "util/c_entry.h"
#include "util/immortal.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <semaphore.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <memory>
#include <vector>

#include <rdma/rsocket.h>

#define PRELOAD_EXPORT extern "C" __attribute__((visibility("default")))

#ifndef RSOCKET_CONF_DIR
#define RSOCKET_CONF_DIR "/etc/rdma/rsocket"
#endif

namespace {

using rdma::rs::FdTable;

// --------------------------------------------------------- real functions

struct RealCalls {
    int (*socket)(int, int, int);
    int (*bind)(int, const sockaddr*, socklen_t);
    int (*listen)(int, int);
    int (*accept)(int, sockaddr*, socklen_t*);
    int (*accept4)(int, sockaddr*, socklen_t*, int);
    int (*connect)(int, const sockaddr*, socklen_t);
    ssize_t (*recv)(int, void*, size_t, int);
    ssize_t (*recvfrom)(int, void*, size_t, int, sockaddr*, socklen_t*);
    ssize_t (*recvmsg)(int, msghdr*, int);
    ssize_t (*read)(int, void*, size_t);
    ssize_t (*readv)(int, const iovec*, int);
    ssize_t (*send)(int, const void*, size_t, int);
    ssize_t (*sendto)(int, const void*, size_t, int, const sockaddr*, socklen_t);
    ssize_t (*sendmsg)(int, const msghdr*, int);
    ssize_t (*write)(int, const void*, size_t);
    ssize_t (*writev)(int, const iovec*, int);
    int (*poll)(pollfd*, nfds_t, int);
    int (*select)(int, fd_set*, fd_set*, fd_set*, timeval*);
    int (*shutdown)(int, int);
    int (*close)(int);
    int (*getpeername)(int, sockaddr*, socklen_t*);
    int (*getsockname)(int, sockaddr*, socklen_t*);
    int (*setsockopt)(int, int, int, const void*, socklen_t);
    int (*getsockopt)(int, int, int, void*, socklen_t*);
    int (*fcntl)(int, int, ...);
    int (*fcntl64)(int, int, ...);
    int (*dup)(int);
    int (*dup2)(int, int);
    ssize_t (*sendfile)(int, int, off_t*, size_t);
    ssize_t (*sendfile64)(int, int, off64_t*, size_t);
    int (*epoll_create)(int);
    int (*epoll_create1)(int);
    int (*epoll_ctl)(int, int, int, epoll_event*);
    int (*epoll_wait)(int, epoll_event*, int, int);
};

RealCalls real;
std::atomic<bool> initialized{false};
std::mutex init_mu;

// --------------------------------------------------------------- settings

struct Rule {
    std::string prog;  // empty: any program (prefix match otherwise)
    int domain = 0;  // 0: any
    int type = 0;
    int protocol = 0;
};

struct Settings {
    int sq_size = 0;
    int rq_size = 0;
    int inline_size = 0;
    bool fork_safe = false;
    std::vector<Rule> rules;
};

Settings& settings() { return rdma::immortal<Settings>(); }

int env_int(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::atoi(v) : 0;
}

bool word_is(const char* w, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (!strcasecmp(w, n))
            return true;
    return false;
}

// preload_config lines: "program domain type protocol", '*' for any;
// '#' starts a comment line. Runs from the library constructor: out of
// memory, the rules read so far are kept and the rest ignored.
void read_rules(std::vector<Rule>& rules) {
    FILE* f = std::fopen(RSOCKET_CONF_DIR "/preload_config", "re");
    if (!f)
        return;
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        char prog[64], dom[16], type[16], proto[16];
        if (std::sscanf(line, "%63s%15s%15s%15s", prog, dom, type, proto) != 4)
            continue;
        Rule r;
        if (word_is(dom, {"INET", "AF_INET", "PF_INET"}))
            r.domain = AF_INET;
        else if (word_is(dom, {"INET6", "AF_INET6", "PF_INET6"}))
            r.domain = AF_INET6;
        else if (word_is(dom, {"IB", "AF_IB", "PF_IB"}))
            r.domain = AF_IB;
        else if (std::strcmp(dom, "*"))
            continue;
        if (word_is(type, {"STREAM", "SOCK_STREAM"}))
            r.type = SOCK_STREAM;
        else if (word_is(type, {"DGRAM", "SOCK_DGRAM"}))
            r.type = SOCK_DGRAM;
        else if (std::strcmp(type, "*"))
            continue;
        if (word_is(proto, {"TCP", "IPPROTO_TCP"}))
            r.protocol = IPPROTO_TCP;
        else if (word_is(proto, {"UDP", "IPPROTO_UDP"}))
            r.protocol = IPPROTO_UDP;
        else if (std::strcmp(proto, "*"))
            continue;
        try {
            if (std::strcmp(prog, "*"))
                r.prog = prog;
            rules.push_back(std::move(r));
        } catch (...) {
            break;
        }
    }
    std::fclose(f);
}

template <class F>
void resolve(F& fn, const char* name) {
    fn = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

void init_slow() {
    std::lock_guard<std::mutex> g(init_mu);
    if (initialized.load(std::memory_order_relaxed))
        return;
    resolve(real.socket, "socket");
    resolve(real.bind, "bind");
    resolve(real.listen, "listen");
    resolve(real.accept, "accept");
    resolve(real.accept4, "accept4");
    resolve(real.connect, "connect");
    resolve(real.recv, "recv");
    resolve(real.recvfrom, "recvfrom");
    resolve(real.recvmsg, "recvmsg");
    resolve(real.read, "read");
    resolve(real.readv, "readv");
    resolve(real.send, "send");
    resolve(real.sendto, "sendto");
    resolve(real.sendmsg, "sendmsg");
    resolve(real.write, "write");
    resolve(real.writev, "writev");
    resolve(real.poll, "poll");
    resolve(real.select, "select");
    resolve(real.shutdown, "shutdown");
    resolve(real.close, "close");
    resolve(real.getpeername, "getpeername");
    resolve(real.getsockname, "getsockname");
    resolve(real.setsockopt, "setsockopt");
    resolve(real.getsockopt, "getsockopt");
    resolve(real.fcntl, "fcntl");
    resolve(real.fcntl64, "fcntl64");
    if (!real.fcntl64)
        real.fcntl64 = real.fcntl;
    resolve(real.dup, "dup");
    resolve(real.dup2, "dup2");
    resolve(real.sendfile, "sendfile");
    resolve(real.sendfile64, "sendfile64");
    resolve(real.epoll_create, "epoll_create");
    resolve(real.epoll_create1, "epoll_create1");
    resolve(real.epoll_ctl, "epoll_ctl");
    resolve(real.epoll_wait, "epoll_wait");

    Settings& s = settings();
    s.sq_size = env_int("RS_SQ_SIZE");
    s.rq_size = env_int("RS_RQ_SIZE");
    s.inline_size = env_int("RS_INLINE");
    s.fork_safe = env_int("RDMAV_FORK_SAFE") != 0;
    read_rules(s.rules);
    initialized.store(true, std::memory_order_release);
}

inline void init() {
    if (!initialized.load(std::memory_order_acquire))
        init_slow();
}

__attribute__((constructor)) void preload_ctor() { init(); }

// ------------------------------------------------------------ descriptors

// What a stand-in descriptor stands for. Shared by dup()s of it: the
// rsocket closes with the last of them.
//
// With RDMAV_FORK_SAFE=1 stream sockets start as kernel TCP sockets (the
// descriptor is the kernel socket itself) and become rsockets at their
// first data transfer, which lets a server fork after accept and have the
// child own the RDMA connection. The two sides agree over TCP: the passive
// side listens on an rsocket at its TCP port and writes four zero bytes,
// the active side waits for them and connects there.
enum class State {
    Ready,  // an rsocket behind a stand-in
    Fork,  // fork mode: kernel socket, not yet listening or connected
    ForkListen,  // fork mode: kernel listener; accepted sockets are ForkPassive
    ForkActive,  // fork mode: connected kernel socket, becomes an rsocket
    ForkPassive,
};

struct Target {
    std::atomic<int> refs{1};
    int rs = -1;  // rsocket index (State::Ready)
    int domain = AF_INET;
    int type = SOCK_STREAM;
    State state = State::Ready;
};

FdTable<Target>& table() { return rdma::immortal<FdTable<Target>>(); }

// epoll descriptors created here are librdmacm repoll sets.
FdTable<void>& epolls() { return rdma::immortal<FdTable<void>>(); }

// Set while we are inside librdmacm: sockets it (or libibverbs) creates for
// itself must stay kernel sockets.
thread_local int inside = 0;

struct Inside {
    Inside() { ++inside; }
    ~Inside() { --inside; }
    Inside(const Inside&) = delete;
    Inside& operator=(const Inside&) = delete;
};

inline Target* entry(int fd) { return table().get(fd); }

// The rsocket behind `fd`, or null when calls on it go to the kernel.
inline Target* lookup(int fd) {
    Target* t = table().get(fd);
    return t && t->state == State::Ready ? t : nullptr;
}

Target* lookup_data(int fd);

bool on_rsocket_service_thread() {
    char name[16] = {};
    if (prctl(PR_GET_NAME, name, 0, 0, 0))
        return false;
    return !std::strcmp(name, rdma::rs::kServiceThreadName);
}

bool intercept(int domain, int type, int protocol) {
    const Settings& s = settings();
    if (s.rules.empty())
        return true;
    if (!protocol)
        protocol = type == SOCK_STREAM ? IPPROTO_TCP : type == SOCK_DGRAM ? IPPROTO_UDP : 0;
    const char* me = program_invocation_short_name;
    for (const Rule& r : s.rules) {
        if ((r.prog.empty() || !strncasecmp(r.prog.c_str(), me, r.prog.size())) && (!r.domain || r.domain == domain) &&
            (!r.type || r.type == type) && (!r.protocol || r.protocol == protocol))
            return true;
    }
    return false;
}

int open_standin(bool cloexec) {
    return static_cast<int>(::syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | (cloexec ? O_CLOEXEC : 0)));
}

// Registers an rsocket under a fresh stand-in; -1 (rsocket closed) on
// failure.
int adopt(int rs, int domain, int type, bool cloexec) {
    int fd = open_standin(cloexec);
    if (fd < 0) {
        int e = errno;
        rclose(rs);
        errno = e;
        return -1;
    }
    auto t = std::unique_ptr<Target>(new (std::nothrow) Target);
    if (t) {
        t->rs = rs;
        t->domain = domain;
        t->type = type;
    }
    if (!t || !table().insert(fd, t.get())) {
        real.close(fd);
        Inside in;
        rclose(rs);
        errno = ENOMEM;
        return -1;
    }
    t.release();  // owned by the table entries (refs)
    return fd;
}

int track_fork_socket(int fd, int domain, int type, State state) {
    auto t = std::unique_ptr<Target>(new (std::nothrow) Target);
    if (!t || !table().insert(fd, t.get()))
        return fd;  // untracked: it simply stays a kernel socket
    t->domain = domain;
    t->type = type;
    t->state = state;
    t.release();
    return fd;
}

void apply_env_options(int rs) {
    const Settings& s = settings();
    if (s.sq_size)
        rsetsockopt(rs, SOL_RDMA, RDMA_SQSIZE, &s.sq_size, sizeof s.sq_size);
    if (s.rq_size)
        rsetsockopt(rs, SOL_RDMA, RDMA_RQSIZE, &s.rq_size, sizeof s.rq_size);
    if (s.inline_size)
        rsetsockopt(rs, SOL_RDMA, RDMA_INLINE, &s.inline_size, sizeof s.inline_size);
}

// Drops one reference to what `fd` stands for; the last closes the rsocket.
int release(Target* t) {
    if (t->refs.fetch_sub(1, std::memory_order_acq_rel) != 1)
        return 0;
    std::unique_ptr<Target> owner(t);
    if (t->rs < 0)
        return 0;
    Inside in;
    return rclose(t->rs);
}

// The rsocket could not connect: put a kernel socket with the same basic
// options under the program's descriptor number and forget the rsocket.
int fall_back_to_kernel(int fd, Target* t) {
    int ks = real.socket(t->domain, t->type, 0);
    if (ks < 0)
        return -1;
    {
        Inside in;
        int fl = rfcntl(t->rs, F_GETFL);
        if (fl > 0)
            real.fcntl(ks, F_SETFL, fl);
        int v = 0;
        socklen_t len = sizeof v;
        if (!rgetsockopt(t->rs, SOL_SOCKET, SO_REUSEADDR, &v, &len) && v)
            real.setsockopt(ks, SOL_SOCKET, SO_REUSEADDR, &v, sizeof v);
        len = sizeof v;
        if (!rgetsockopt(t->rs, IPPROTO_TCP, TCP_NODELAY, &v, &len) && v)
            real.setsockopt(ks, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v);
    }
    int fdflags = real.fcntl(fd, F_GETFD);
    if (::syscall(SYS_dup3, ks, fd, (fdflags > 0 && (fdflags & FD_CLOEXEC)) ? O_CLOEXEC : 0) < 0) {
        int e = errno;
        real.close(ks);
        errno = e;
        return -1;
    }
    real.close(ks);
    if (table().erase(fd) == t)
        release(t);
    return 0;
}

// Per-thread scratch for poll/select translation (grows, never shrinks).
struct Scratch {
    std::vector<pollfd> fds;
    std::vector<int> orig;  // select: the caller's fd of each fds[] entry
};
Scratch& scratch() {
    thread_local Scratch s;
    return s;
}

// Puts a fresh stand-in under the number `fd` (closing what was there).
bool replace_with_standin(int fd) {
    int sfd = open_standin(false);
    if (sfd < 0)
        return false;
    int fdflags = real.fcntl(fd, F_GETFD);
    long r = ::syscall(SYS_dup3, sfd, fd, (fdflags > 0 && (fdflags & FD_CLOEXEC)) ? O_CLOEXEC : 0);
    real.close(sfd);
    return r >= 0;
}

// Options the program set on the kernel socket carry over.
void copy_kernel_options(int ks, int rs) {
    int fl = real.fcntl(ks, F_GETFL);
    if (fl > 0)
        rfcntl(rs, F_SETFL, fl);
    int v = 0;
    socklen_t len = sizeof v;
    if (!real.getsockopt(ks, SOL_SOCKET, SO_REUSEADDR, &v, &len) && v)
        rsetsockopt(rs, SOL_SOCKET, SO_REUSEADDR, &v, sizeof v);
    len = sizeof v;
    if (!real.getsockopt(ks, IPPROTO_TCP, TCP_NODELAY, &v, &len) && v)
        rsetsockopt(rs, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v);
}

// The kernel connection is replaced by the rsocket `rs`.
void become_rsocket(int fd, Target* t, int rs) {
    copy_kernel_options(fd, rs);
    real.shutdown(fd, SHUT_RDWR);
    if (!replace_with_standin(fd)) {
        rclose(rs);
        t->state = State::Ready;  // unusable either way; report errors
        t->rs = -1;
        return;
    }
    t->rs = rs;
    t->state = State::Ready;
}

// Leaves `fd` a plain kernel socket (the conversion failed).
void stay_kernel(int fd, Target* t) {
    if (table().erase(fd) == t)
        release(t);
}

void fork_active(int fd, Target* t) {
    Inside in;
    int fl = real.fcntl(fd, F_GETFL);
    real.fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    uint32_t msg = 1;
    ssize_t n = real.recv(fd, &msg, sizeof msg, MSG_PEEK);
    real.fcntl(fd, F_SETFL, fl);
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    if (n != sizeof msg || msg || real.getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len)) {
        stay_kernel(fd, t);
        return;
    }
    int rs = rsocket(peer.ss_family, SOCK_STREAM, 0);
    if (rs < 0) {
        stay_kernel(fd, t);
        return;
    }
    apply_env_options(rs);
    if (rconnect(rs, reinterpret_cast<sockaddr*>(&peer), len)) {
        rclose(rs);
        stay_kernel(fd, t);
        return;
    }
    become_rsocket(fd, t, rs);
}

void fork_passive(int fd, Target* t) {
    Inside in;
    sockaddr_storage self{};
    socklen_t len = sizeof self;
    if (real.getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len)) {
        stay_kernel(fd, t);
        return;
    }
    // Listen on our TCP port, any address.
    sockaddr_storage any{};
    any.ss_family = self.ss_family;
    if (self.ss_family == AF_INET)
        reinterpret_cast<sockaddr_in&>(any).sin_port = reinterpret_cast<sockaddr_in&>(self).sin_port;
    else
        reinterpret_cast<sockaddr_in6&>(any).sin6_port = reinterpret_cast<sockaddr_in6&>(self).sin6_port;
    // Children of one server take turns on that port.
    sem_t* sem = sem_open("/rsocket_fork", O_CREAT | O_RDWR, S_IRWXU | S_IRWXG, 1);
    if (sem == SEM_FAILED) {
        stay_kernel(fd, t);
        return;
    }
    int rs = -1;
    int l = rsocket(self.ss_family, SOCK_STREAM, 0);
    if (l >= 0) {
        int one = 1;
        rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sem_wait(sem);
        uint32_t msg = 0;
        if (!rbind(l, reinterpret_cast<sockaddr*>(&any), len) && !rlisten(l, 1) &&
            real.write(fd, &msg, sizeof msg) == sizeof msg)
            rs = raccept(l, nullptr, nullptr);
        rclose(l);
        sem_post(sem);
    }
    sem_close(sem);
    if (rs < 0) {
        stay_kernel(fd, t);
        return;
    }
    apply_env_options(rs);
    become_rsocket(fd, t, rs);
}

Target* lookup_data(int fd) {
    Target* t = table().get(fd);
    if (!t)
        return nullptr;
    if (t->state == State::ForkActive)
        fork_active(fd, t);
    else if (t->state == State::ForkPassive)
        fork_passive(fd, t);
    return lookup(fd);
}

}  // namespace

// ======================================================== interposed calls

PRELOAD_EXPORT int socket(int domain, int type, int protocol) {
    init();
    if (inside || !(domain == AF_INET || domain == AF_INET6 || domain == AF_IB))
        return real.socket(domain, type, protocol);
    int flags = type & (SOCK_NONBLOCK | SOCK_CLOEXEC);
    int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
    // Flagged datagram sockets are mostly libraries' private ones (name
    // resolution, interface queries): leave those to the kernel, as the
    // reference does for every flagged socket.
    if ((base != SOCK_STREAM && base != SOCK_DGRAM) || (base == SOCK_DGRAM && flags) ||
        !intercept(domain, base, protocol) || on_rsocket_service_thread())
        return real.socket(domain, type, protocol);
    if (settings().fork_safe && (domain == AF_INET || domain == AF_INET6) && base == SOCK_STREAM &&
        (!protocol || protocol == IPPROTO_TCP)) {
        int ks = real.socket(domain, type, protocol);
        return ks < 0 ? ks : track_fork_socket(ks, domain, base, State::Fork);
    }
    int rs;
    {
        Inside in;
        rs = rsocket(domain, base, protocol);
        if (rs >= 0) {
            apply_env_options(rs);
            if (flags & SOCK_NONBLOCK)
                rfcntl(rs, F_SETFL, O_NONBLOCK);
        }
    }
    if (rs < 0)
        return real.socket(domain, type, protocol);
    return adopt(rs, domain, base, flags & SOCK_CLOEXEC);
}

PRELOAD_EXPORT int bind(int fd, const sockaddr* addr, socklen_t len) {
    init();
    if (Target* t = lookup(fd)) {
        Inside in;
        return rbind(t->rs, addr, len);
    }
    return real.bind(fd, addr, len);
}

PRELOAD_EXPORT int listen(int fd, int backlog) {
    init();
    if (Target* t = lookup(fd)) {
        Inside in;
        return rlisten(t->rs, backlog);
    }
    int r = real.listen(fd, backlog);
    Target* t = entry(fd);
    if (!r && t && t->state == State::Fork)
        t->state = State::ForkListen;
    return r;
}

PRELOAD_EXPORT int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
    init();
    Target* t = entry(fd);
    if (t && t->state == State::ForkListen) {
        int nfd = real.accept4(fd, addr, len, flags);
        return nfd < 0 ? nfd : track_fork_socket(nfd, t->domain, t->type, State::ForkPassive);
    }
    t = lookup(fd);
    if (!t)
        return real.accept4(fd, addr, len, flags);
    if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) {
        errno = EINVAL;
        return -1;
    }
    int rs;
    {
        Inside in;
        rs = raccept(t->rs, addr, len);
        if (rs >= 0 && (flags & SOCK_NONBLOCK))
            rfcntl(rs, F_SETFL, O_NONBLOCK);
    }
    if (rs < 0)
        return -1;
    return adopt(rs, t->domain, t->type, flags & SOCK_CLOEXEC);
}

PRELOAD_EXPORT int accept(int fd, sockaddr* addr, socklen_t* len) {
    init();
    if (!entry(fd))
        return real.accept(fd, addr, len);
    return accept4(fd, addr, len, 0);
}

PRELOAD_EXPORT int connect(int fd, const sockaddr* addr, socklen_t len) {
    init();
    Target* t = entry(fd);
    if (t && t->state == State::Fork) {
        t->state = State::ForkActive;
        return real.connect(fd, addr, len);
    }
    t = lookup(fd);
    if (!t)
        return real.connect(fd, addr, len);
    int r;
    {
        Inside in;
        r = rconnect(t->rs, addr, len);
    }
    if (!r || errno == EINPROGRESS || t->type != SOCK_STREAM)
        return r;
    // Not an rsocket peer (or no RDMA path): carry on over the kernel.
    if (fall_back_to_kernel(fd, t))
        return -1;
    return real.connect(fd, addr, len);
}

PRELOAD_EXPORT ssize_t recv(int fd, void* buf, size_t len, int flags) {
    init();
    if (Target* t = lookup_data(fd)) {
        Inside in;
        return rrecv(t->rs, buf, len, flags);
    }
    return real.recv(fd, buf, len, flags);
}

PRELOAD_EXPORT ssize_t recvfrom(int fd, void* buf, size_t len, int flags, sockaddr* src, socklen_t* srclen) {
    init();
    if (Target* t = lookup_data(fd)) {
        Inside in;
        return rrecvfrom(t->rs, buf, len, flags, src, srclen);
    }
    return real.recvfrom(fd, buf, len, flags, src, srclen);
}

PRELOAD_EXPORT ssize_t recvmsg(int fd, msghdr* msg, int flags) {
    init();
    if (Target* t = lookup_data(fd)) {
        Inside in;
        return rrecvmsg(t->rs, msg, flags);
    }
    return real.recvmsg(fd, msg, flags);
}

PRELOAD_EXPORT ssize_t read(int fd, void* buf, size_t count) {
    init();
    if (Target* t = lookup_data(fd)) {
        Inside in;
        return rread(t->rs, buf, count);
    }
    return real.read(fd, buf, count);
}

PRELOAD_EXPORT ssize_t readv(int fd, const iovec* iov, int iovcnt) {
    init();
    if (Target* t = lookup_data(fd)) {
        Inside in;
        return rreadv(t->rs, iov, iovcnt);
    }
    return real.readv(fd, iov, iovcnt);
}

PRELOAD_EXPORT ssize_t send(int fd, const void* buf, size_t len, int flags) {
    init();
    if (Target* t = lookup_data(fd)) {
        Inside in;
        return rsend(t->rs, buf, len, flags);
    }
    return real.send(fd, buf, len, flags);
}

PRELOAD_EXPORT ssize_t sendto(int fd, const void* buf, size_t len, int flags, const sockaddr* dst, socklen_t dstlen) {
    init();
    if (Target* t = lookup_data(fd)) {
        Inside in;
        return rsendto(t->rs, buf, len, flags, dst, dstlen);
    }
    return real.sendto(fd, buf, len, flags, dst, dstlen);
}

PRELOAD_EXPORT ssize_t sendmsg(int fd, const msghdr* msg, int flags) {
    init();
    if (Target* t = lookup_data(fd)) {
        Inside in;
        return rsendmsg(t->rs, msg, flags);
    }
    return real.sendmsg(fd, msg, flags);
}

PRELOAD_EXPORT ssize_t write(int fd, const void* buf, size_t count) {
    init();
    if (Target* t = lookup_data(fd)) {
        Inside in;
        return rwrite(t->rs, buf, count);
    }
    return real.write(fd, buf, count);
}

PRELOAD_EXPORT ssize_t writev(int fd, const iovec* iov, int iovcnt) {
    init();
    if (Target* t = lookup_data(fd)) {
        Inside in;
        return rwritev(t->rs, iov, iovcnt);
    }
    return real.writev(fd, iov, iovcnt);
}

PRELOAD_EXPORT int poll(pollfd* fds, nfds_t nfds, int timeout) {
    init();
    nfds_t i = 0;
    // A fork-mode socket becomes an rsocket here already: a server that
    // polls before its first read would otherwise wait for data the peer
    // only sends once both sides are rsockets.
    bool any = false;
    for (; i < nfds; i++)
        if (lookup_data(fds[i].fd))
            any = true;
    if (!any)
        return real.poll(fds, nfds, timeout);
    std::vector<pollfd>& r = scratch().fds;
    try {
        r.resize(nfds);
    } catch (...) {
        errno = rdma::errno_of_current_exception();
        return -1;
    }
    for (i = 0; i < nfds; i++) {
        Target* t = lookup(fds[i].fd);
        r[i] = {t ? t->rs : fds[i].fd, fds[i].events, 0};
    }
    int n;
    {
        Inside in;
        n = rpoll(r.data(), nfds, timeout);
    }
    for (i = 0; i < nfds; i++)
        fds[i].revents = n >= 0 ? r[i].revents : 0;
    return n;
}

PRELOAD_EXPORT int select(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds, timeval* timeout) {
    init();
    bool any = false;
    for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++) {
        if (((readfds && FD_ISSET(fd, readfds)) || (writefds && FD_ISSET(fd, writefds)) ||
             (exceptfds && FD_ISSET(fd, exceptfds))) &&
            lookup_data(fd))
            any = true;
    }
    if (!any)
        return real.select(nfds, readfds, writefds, exceptfds, timeout);
    Scratch& sc = scratch();
    std::vector<pollfd>& q = sc.fds;
    std::vector<int>& orig = sc.orig;
    q.clear();
    orig.clear();
    try {
        for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++) {
            short ev = 0;
            bool want = false;
            if (readfds && FD_ISSET(fd, readfds)) {
                ev |= POLLIN;
                want = true;
            }
            if (writefds && FD_ISSET(fd, writefds)) {
                ev |= POLLOUT;
                want = true;
            }
            if (exceptfds && FD_ISSET(fd, exceptfds))
                want = true;
            if (want) {
                Target* t = lookup(fd);
                q.push_back({t ? t->rs : fd, ev, 0});
                orig.push_back(fd);
            }
        }
    } catch (...) {
        errno = rdma::errno_of_current_exception();
        return -1;
    }
    size_t n = q.size();
    int ms = -1;
    if (timeout)
        ms = static_cast<int>(timeout->tv_sec * 1000 + timeout->tv_usec / 1000);
    int ret;
    {
        Inside in;
        ret = rpoll(q.data(), n, ms);
    }
    if (ret < 0)
        return ret;
    if (readfds)
        FD_ZERO(readfds);
    if (writefds)
        FD_ZERO(writefds);
    if (exceptfds)
        FD_ZERO(exceptfds);
    int cnt = 0;
    for (size_t k = 0; k < n; k++) {
        short rev = q[k].revents;
        if (readfds && (rev & (POLLIN | POLLHUP))) {
            FD_SET(orig[k], readfds);
            cnt++;
        }
        if (writefds && (rev & POLLOUT)) {
            FD_SET(orig[k], writefds);
            cnt++;
        }
        if (exceptfds && (rev & ~(POLLIN | POLLOUT | POLLHUP))) {
            FD_SET(orig[k], exceptfds);
            cnt++;
        }
    }
    return cnt;
}

PRELOAD_EXPORT int shutdown(int fd, int how) {
    init();
    if (Target* t = lookup(fd)) {
        Inside in;
        return rshutdown(t->rs, how);
    }
    return real.shutdown(fd, how);
}

PRELOAD_EXPORT int close(int fd) {
    init();
    if (epolls().get(fd)) {
        epolls().erase(fd);
        Inside in;
        return rclose(fd);  // a repoll set: closes the epoll fd too
    }
    Target* t = table().erase(fd);
    if (!t)
        return real.close(fd);
    real.close(fd);
    return release(t);
}

PRELOAD_EXPORT int getpeername(int fd, sockaddr* addr, socklen_t* len) {
    init();
    if (Target* t = lookup(fd)) {
        Inside in;
        return rgetpeername(t->rs, addr, len);
    }
    return real.getpeername(fd, addr, len);
}

PRELOAD_EXPORT int getsockname(int fd, sockaddr* addr, socklen_t* len) {
    init();
    if (Target* t = lookup(fd)) {
        Inside in;
        return rgetsockname(t->rs, addr, len);
    }
    return real.getsockname(fd, addr, len);
}

PRELOAD_EXPORT int setsockopt(int fd, int level, int name, const void* val, socklen_t len) {
    init();
    if (Target* t = lookup(fd)) {
        Inside in;
        return rsetsockopt(t->rs, level, name, val, len);
    }
    return real.setsockopt(fd, level, name, val, len);
}

PRELOAD_EXPORT int getsockopt(int fd, int level, int name, void* val, socklen_t* len) {
    init();
    if (Target* t = lookup(fd)) {
        Inside in;
        return rgetsockopt(t->rs, level, name, val, len);
    }
    return real.getsockopt(fd, level, name, val, len);
}

namespace {

// A dup of a stand-in stands for the same rsocket.
int share(int oldfd, int newfd) {
    Target* t = lookup(oldfd);  // dups of fork-mode sockets stay kernel sockets
    if (!t || newfd < 0)
        return newfd;
    t->refs.fetch_add(1, std::memory_order_relaxed);
    if (!table().insert(newfd, t)) {
        t->refs.fetch_sub(1, std::memory_order_relaxed);
        real.close(newfd);
        errno = EMFILE;
        return -1;
    }
    return newfd;
}

int do_fcntl(int (*fn)(int, int, ...), int fd, int cmd, void* arg) {
    init();
    Target* t = lookup(fd);
    if (!t)
        return fn(fd, cmd, arg);
    switch (cmd) {
    case F_GETFL: {
        Inside in;
        return rfcntl(t->rs, F_GETFL);
    }
    case F_SETFL: {
        Inside in;
        return rfcntl(t->rs, F_SETFL, static_cast<int>(reinterpret_cast<intptr_t>(arg)));
    }
    case F_DUPFD:
    case F_DUPFD_CLOEXEC: return share(fd, fn(fd, cmd, arg));
    case F_GETFD:
    case F_SETFD: return fn(fd, cmd, arg);  // close-on-exec belongs to the stand-in
    default: {
        Inside in;
        return rfcntl(t->rs, cmd, arg);
    }
    }
}

}  // namespace

PRELOAD_EXPORT int fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void* arg = va_arg(ap, void*);
    va_end(ap);
    init();
    return do_fcntl(real.fcntl, fd, cmd, arg);
}

PRELOAD_EXPORT int fcntl64(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void* arg = va_arg(ap, void*);
    va_end(ap);
    init();
    return do_fcntl(real.fcntl64, fd, cmd, arg);
}

PRELOAD_EXPORT int dup(int oldfd) {
    init();
    return share(oldfd, real.dup(oldfd));
}

PRELOAD_EXPORT int dup2(int oldfd, int newfd) {
    init();
    if (oldfd == newfd)
        return real.dup2(oldfd, newfd);
    lookup_data(oldfd);  // a fork-mode socket becomes an rsocket first
    // newfd is closed first, as dup2 does.
    if (Target* t = table().erase(newfd))
        release(t);
    return share(oldfd, real.dup2(oldfd, newfd));
}

namespace {

// Copies a file into an rsocket through a per-thread bounce buffer.
template <class Off>
ssize_t sendfile_rs(int rs, int in_fd, Off* offset, size_t count) {
    thread_local std::vector<char> buf;
    try {
        if (buf.size() < 65536)
            buf.resize(65536);
    } catch (...) {
        errno = rdma::errno_of_current_exception();
        return -1;
    }
    off64_t pos = offset ? static_cast<off64_t>(*offset) : 0;
    size_t done = 0;
    while (done < count) {
        size_t want = std::min(buf.size(), count - done);
        ssize_t n = offset ? pread64(in_fd, buf.data(), want, pos) : real.read(in_fd, buf.data(), want);
        if (n < 0) {
            if (done)
                break;
            return -1;
        }
        if (n == 0)
            break;
        ssize_t w;
        {
            Inside in;
            w = rwrite(rs, buf.data(), static_cast<size_t>(n));
        }
        if (w < 0) {
            if (done)
                break;
            return -1;
        }
        done += static_cast<size_t>(w);
        pos += w;
        if (w < n) {
            if (!offset)
                lseek64(in_fd, w - n, SEEK_CUR);  // give back what was not sent
            break;
        }
    }
    if (offset)
        *offset = static_cast<Off>(pos);
    return static_cast<ssize_t>(done);
}

}  // namespace

PRELOAD_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t* offset, size_t count) {
    init();
    if (Target* t = lookup(out_fd))
        return sendfile_rs(t->rs, in_fd, offset, count);
    return real.sendfile(out_fd, in_fd, offset, count);
}

PRELOAD_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t* offset, size_t count) {
    init();
    if (Target* t = lookup(out_fd))
        return sendfile_rs(t->rs, in_fd, offset, count);
    return real.sendfile64(out_fd, in_fd, offset, count);
}

PRELOAD_EXPORT int epoll_create1(int flags) {
    init();
    if (flags & ~EPOLL_CLOEXEC) {
        errno = EINVAL;
        return -1;
    }
    int ep;
    {
        Inside in;
        ep = repoll_create(1);
    }
    if (ep < 0)
        return real.epoll_create1(flags);
    if (!(flags & EPOLL_CLOEXEC))
        real.fcntl(ep, F_SETFD, 0);
    static char marker;
    epolls().insert(ep, &marker);
    return ep;
}

PRELOAD_EXPORT int epoll_create(int size) {
    if (size <= 0) {
        errno = EINVAL;
        return -1;
    }
    return epoll_create1(0);
}

PRELOAD_EXPORT int epoll_ctl(int epfd, int op, int fd, epoll_event* event) {
    init();
    Target* t = op == EPOLL_CTL_ADD ? lookup_data(fd) : lookup(fd);
    if (!epolls().get(epfd))
        return real.epoll_ctl(epfd, op, fd, event);
    Inside in;
    return repoll_ctl(epfd, op, t ? t->rs : fd, event);
}

PRELOAD_EXPORT int epoll_wait(int epfd, epoll_event* events, int maxevents, int timeout) {
    init();
    if (!epolls().get(epfd))
        return real.epoll_wait(epfd, events, maxevents, timeout);
    Inside in;
    return repoll_wait(epfd, events, maxevents, timeout);
}
