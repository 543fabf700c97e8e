// rpoll, rselect and the repoll_* epoll emulation over rsockets and
// ordinary fds.
//
// An rsocket's readiness is a protocol matter (data in the receive queue,
// send credits) that no kernel fd reflects exactly, so waiting is a loop:
// ask every rsocket (nonblocking progress), and if nothing is ready let each
// rsocket name the kernel fds whose activity may change that (completion
// channel, CM channel, accept queue), sleep on those plus the caller's
// ordinary fds, and ask again. Each sleep is bounded by wake_up_interval so
// that a missed wake-up cannot hang the caller.
//
// The arrays are per-thread and only grow: after warm-up a poll allocates
// nothing.
#include "rsocket_internal.h"

#include "util/c_entry.h"
#include "util/immortal.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include <rdma/rsocket.h>

namespace rdma::rs {
namespace {

struct PollScratch {
    std::vector<pollfd> kfds;  // what goes to the kernel
    std::vector<int> owner;  // kfds[i] belongs to the caller's entry owner[i]
    std::vector<Socket*> socks;  // caller entry -> rsocket (or null)
    std::vector<char> woken;
    std::vector<pollfd> sel;  // rselect / repoll conversions
    std::vector<int> sel_idx;
};

PollScratch& scratch() {
    thread_local PollScratch s;
    return s;
}

// One pass without sleeping: rsockets report through poll_check, ordinary
// fds through a zero-timeout kernel poll. Returns the number of entries
// with events.
Result<int> check_all(pollfd* fds, nfds_t nfds, PollScratch& s) {
    s.kfds.clear();
    s.owner.clear();
    for (nfds_t i = 0; i < nfds; i++) {
        fds[i].revents = 0;
        if (s.socks[i])
            fds[i].revents = s.socks[i]->poll_check(fds[i].events);
        else if (fds[i].fd >= 0) {
            s.kfds.push_back({fds[i].fd, fds[i].events, 0});
            s.owner.push_back(static_cast<int>(i));
        }
    }
    if (!s.kfds.empty()) {
        if (sys_poll(s.kfds.data(), s.kfds.size(), 0) < 0)
            return Errno{errno};
        for (size_t k = 0; k < s.kfds.size(); k++)
            fds[s.owner[k]].revents = s.kfds[k].revents;
    }
    int cnt = 0;
    for (nfds_t i = 0; i < nfds; i++)
        if (fds[i].revents)
            cnt++;
    return cnt;
}

Result<int> do_rpoll(pollfd* fds, nfds_t nfds, int timeout) {
    if (nfds && !fds)
        return Errno{EFAULT};
    PollScratch& s = scratch();
    s.socks.resize(nfds);
    s.woken.resize(nfds);
    for (nfds_t i = 0; i < nfds; i++)
        s.socks[i] = fds[i].fd >= 0 ? sockets().get(fds[i].fd) : nullptr;

    const Config& cfg = config();
    uint64_t start = now_us();
    for (;;) {
        Result<int> cnt = check_all(fds, nfds, s);
        if (!cnt.ok() || cnt.value() || timeout == 0)
            return cnt;
        if (now_us() - start >= cfg.polling_time)
            break;
    }

    uint64_t deadline = timeout < 0 ? UINT64_MAX : start + static_cast<uint64_t>(timeout) * 1000u;
    for (;;) {
        s.kfds.clear();
        s.owner.clear();
        bool ready = false;
        for (nfds_t i = 0; i < nfds; i++) {
            s.woken[i] = 0;
            if (s.socks[i]) {
                pollfd two[2];
                int n = s.socks[i]->poll_sleep_fds(two);
                if (n == 0) {
                    ready = true;
                    break;
                }
                for (int k = 0; k < n; k++) {
                    s.kfds.push_back(two[k]);
                    s.owner.push_back(static_cast<int>(i));
                }
            } else {
                s.kfds.push_back({fds[i].fd, fds[i].events, 0});
                s.owner.push_back(static_cast<int>(i));
            }
        }
        if (!ready) {
            int wait = static_cast<int>(cfg.wake_up_interval);
            if (deadline != UINT64_MAX) {
                uint64_t now = now_us();
                uint64_t left_ms = now >= deadline ? 0 : (deadline - now + 999) / 1000;
                wait = static_cast<int>(std::min<uint64_t>(left_ms, wait));
            }
            int n = sys_poll(s.kfds.data(), s.kfds.size(), wait);
            if (n < 0)
                return Errno{errno};
            for (size_t k = 0; k < s.kfds.size(); k++)
                if (s.kfds[k].revents && s.socks[s.owner[k]])
                    s.woken[s.owner[k]] = 1;
            for (nfds_t i = 0; i < nfds; i++)
                if (s.woken[i])
                    s.socks[i]->poll_woken();
        }
        Result<int> cnt = check_all(fds, nfds, s);
        if (!cnt.ok() || cnt.value())
            return cnt;
        if (deadline != UINT64_MAX && now_us() >= deadline)
            return 0;
    }
}

// --------------------------------------------------------------- repoll

// A repoll set: a real epoll fd for ordinary descriptors plus the rsockets
// registered with it, which no kernel object can represent.
struct Repoll {
    struct Member {
        int index;
        uint64_t serial;
        uint32_t events;
        epoll_data_t data;
        bool disabled;  // EPOLLONESHOT fired
    };
    int epfd = -1;
    std::mutex mu;
    std::vector<Member> members;
};

FdTable<Repoll>& repolls() { return rdma::immortal<FdTable<Repoll>>(); }

short epoll_to_poll(uint32_t ev) {
    short p = 0;
    if (ev & EPOLLIN)
        p |= POLLIN;
    if (ev & EPOLLOUT)
        p |= POLLOUT;
    if (ev & EPOLLPRI)
        p |= POLLPRI;
    if (ev & EPOLLRDHUP)
        p |= POLLRDHUP;
    return p;
}

uint32_t poll_to_epoll(short p) {
    uint32_t e = 0;
    if (p & POLLIN)
        e |= EPOLLIN;
    if (p & POLLOUT)
        e |= EPOLLOUT;
    if (p & POLLPRI)
        e |= EPOLLPRI;
    if (p & POLLRDHUP)
        e |= EPOLLRDHUP;
    if (p & POLLERR)
        e |= EPOLLERR;
    if (p & POLLHUP)
        e |= EPOLLHUP;
    return e;
}

Status do_repoll_ctl(Repoll& rp, int op, int fd, epoll_event* event) {
    Socket* sock = sockets().get(fd);
    if (!sock) {
        if (sys_epoll_ctl(rp.epfd, op, fd, event))
            return Errno{errno};
        return {};
    }
    if (op != EPOLL_CTL_DEL && !event)
        return Errno{EFAULT};
    if (op != EPOLL_CTL_DEL && (event->events & EPOLLET))
        return Errno{EINVAL};  // readiness of an rsocket is level-triggered only
    std::lock_guard<std::mutex> g(rp.mu);
    auto it = std::find_if(rp.members.begin(), rp.members.end(),
                           [&](const Repoll::Member& m) { return m.index == fd && m.serial == sock->serial(); });
    switch (op) {
    case EPOLL_CTL_ADD:
        if (it != rp.members.end())
            return Errno{EEXIST};
        rp.members.push_back({fd, sock->serial(), event->events, event->data, false});
        return {};
    case EPOLL_CTL_MOD:
        if (it == rp.members.end())
            return Errno{ENOENT};
        it->events = event->events;
        it->data = event->data;
        it->disabled = false;
        return {};
    case EPOLL_CTL_DEL:
        if (it == rp.members.end())
            return Errno{ENOENT};
        rp.members.erase(it);
        return {};
    default: return Errno{EINVAL};
    }
}

int collect_repoll(Repoll& rp, PollScratch& s, epoll_event* events, int maxevents);

Result<int> do_repoll_wait(Repoll& rp, epoll_event* events, int maxevents, int timeout) {
    if (!events)
        return Errno{EFAULT};
    if (maxevents <= 0)
        return Errno{EINVAL};
    PollScratch& s = scratch();  // sel / sel_idx are ours; rpoll uses the rest
    {
        std::lock_guard<std::mutex> g(rp.mu);
        // Forget rsockets closed since they were added.
        std::erase_if(rp.members, [](const Repoll::Member& m) {
            Socket* x = sockets().get(m.index);
            return !x || x->serial() != m.serial;
        });
        s.sel.clear();
        s.sel_idx.clear();
        for (size_t i = 0; i < rp.members.size(); i++) {
            if (rp.members[i].disabled)
                continue;
            s.sel.push_back({rp.members[i].index, epoll_to_poll(rp.members[i].events), 0});
            s.sel_idx.push_back(static_cast<int>(i));
        }
    }
    if (s.sel.empty()) {
        int r = sys_epoll_wait(rp.epfd, events, maxevents, timeout);
        if (r < 0)
            return Errno{errno};
        return r;
    }
    // The epoll fd itself is readable while an ordinary member is ready.
    s.sel.push_back({rp.epfd, POLLIN, 0});
    uint64_t deadline = timeout < 0 ? UINT64_MAX : now_us() + static_cast<uint64_t>(timeout) * 1000u;
    for (;;) {
        int wait = timeout;
        if (deadline != UINT64_MAX) {
            uint64_t now = now_us();
            wait = now >= deadline ? 0 : static_cast<int>((deadline - now + 999) / 1000);
        }
        Result<int> n = do_rpoll(s.sel.data(), s.sel.size(), wait);
        if (!n.ok())
            return n;
        int count = n.value() ? collect_repoll(rp, s, events, maxevents) : 0;
        // Readiness can vanish between the poll and the collection (another
        // thread read the data); 0 means a timeout to epoll callers.
        if (count || wait == 0)
            return count;
    }
}

int collect_repoll(Repoll& rp, PollScratch& s, epoll_event* events, int maxevents) {
    int count = 0;
    std::lock_guard<std::mutex> g(rp.mu);
    for (size_t k = 0; k + 1 < s.sel.size() && count < maxevents; k++) {
        if (!s.sel[k].revents)
            continue;
        size_t mi = static_cast<size_t>(s.sel_idx[k]);
        if (mi >= rp.members.size() || rp.members[mi].index != s.sel[k].fd)
            continue;  // changed by repoll_ctl meanwhile
        Repoll::Member& m = rp.members[mi];
        short want = static_cast<short>(epoll_to_poll(m.events) | POLLERR | POLLHUP);
        uint32_t ev = poll_to_epoll(static_cast<short>(s.sel[k].revents & want));
        if (!ev)
            continue;
        events[count].events = ev;
        events[count].data = m.data;
        count++;
        if (m.events & EPOLLONESHOT)
            m.disabled = true;
    }
    if (s.sel.back().revents && count < maxevents) {
        int r = sys_epoll_wait(rp.epfd, events + count, maxevents - count, 0);
        if (r > 0)
            count += r;
    }
    return count;
}

}  // namespace

Status close_repoll(int index) {
    Repoll* rp = repolls().erase(index);
    if (!rp)
        return Errno{EBADF};
    std::unique_ptr<Repoll> owner(rp);
    ::close(rp->epfd);
    return {};
}

}  // namespace rdma::rs

using namespace rdma::rs;
using rdma::Errno;
using rdma::Result;
using rdma::Status;

RSOCKET_EXPORT int rpoll(struct pollfd* fds, nfds_t nfds, int timeout) {
    return rdma::entry_minus_one([&] { return do_rpoll(fds, nfds, timeout); });
}

RSOCKET_EXPORT int rselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds, struct timeval* timeout) {
    return rdma::entry_minus_one([&]() -> Result<int> {
        if (nfds < 0 || nfds > FD_SETSIZE)
            return Errno{EINVAL};
        int ms = -1;
        if (timeout) {
            if (timeout->tv_sec < 0 || timeout->tv_usec < 0)
                return Errno{EINVAL};
            long long t = static_cast<long long>(timeout->tv_sec) * 1000 + timeout->tv_usec / 1000;
            ms = static_cast<int>(std::min<long long>(t, INT_MAX));
        }
        std::vector<pollfd>& fds = scratch().sel;
        fds.clear();
        for (int fd = 0; fd < nfds; fd++) {
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
            if (want)
                fds.push_back({fd, ev, 0});
        }
        Result<int> n = do_rpoll(fds.data(), fds.size(), ms);
        if (!n.ok())
            return n;
        if (readfds)
            FD_ZERO(readfds);
        if (writefds)
            FD_ZERO(writefds);
        if (exceptfds)
            FD_ZERO(exceptfds);
        int cnt = 0;
        for (const pollfd& p : fds) {
            if (readfds && (p.revents & (POLLIN | POLLHUP))) {
                FD_SET(p.fd, readfds);
                cnt++;
            }
            if (writefds && (p.revents & POLLOUT)) {
                FD_SET(p.fd, writefds);
                cnt++;
            }
            if (exceptfds && (p.revents & ~(POLLIN | POLLOUT))) {
                FD_SET(p.fd, exceptfds);
                cnt++;
            }
        }
        return cnt;
    });
}

RSOCKET_EXPORT int repoll_create(int size) {
    return rdma::entry_minus_one([&]() -> Result<int> {
        if (size <= 0)
            return Errno{EINVAL};
        auto rp = std::make_unique<Repoll>();
        rp->epfd = sys_epoll_create();
        if (rp->epfd < 0)
            return Errno{errno};
        int fd = rp->epfd;
        if (!repolls().insert(fd, rp.get())) {
            ::close(fd);
            return Errno{ENOMEM};
        }
        rp.release();
        return fd;
    });
}

RSOCKET_EXPORT int repoll_ctl(int epfd, int op, int fd, struct epoll_event* event) {
    return rdma::entry_minus_one([&]() -> Status {
        Repoll* rp = repolls().get(epfd);
        if (!rp)
            return Errno{EBADF};
        if (fd == epfd)
            return Errno{EINVAL};
        return do_repoll_ctl(*rp, op, fd, event);
    });
}

RSOCKET_EXPORT int repoll_wait(int epfd, struct epoll_event* events, int maxevents, int timeout) {
    return rdma::entry_minus_one([&]() -> Result<int> {
        Repoll* rp = repolls().get(epfd);
        if (!rp)
            return Errno{EBADF};
        return do_repoll_wait(*rp, events, maxevents, timeout);
    });
}
