// Allocation-failure sweeps over librdmacm's exported functions: every
// operator new a sequence of calls makes is failed in turn (this program
// links rdma_alloc_fail and exports its operator new, so the libraries bind
// to it). After each run the calls must have failed the documented way (-1
// or NULL, errno ENOMEM) or absorbed the failure, the process must live on,
// nothing may be left behind (fds, kernel cm_ids), and the run without a
// failure must succeed.
//
// Host suite (unit.librdmacm_alloc_fail, run with --fake-sysfs): a fake
// sysfs tree with one rxe device lets the library start without a kernel
// device. rdma_getaddrinfo on numeric hosts, the first call's start-up, the
// rsocket configuration and service thread, datagram rsockets and
// rpoll/rselect/repoll on ordinary descriptors, rdma_event_str.
// Kernel suite (vm.librdmacm_alloc_fail): rxe0 in the test VM (10.78.0.1):
// event channels, ids, bind/listen, address and route resolution
// (asynchronous and synchronous), QPs, endpoints, stream and datagram
// rsockets. Both suites also check that the barrier lets thread
// cancellation through (rpoll, rdma_get_cm_event).
#include "util/testing/alloc_fail.h"
#include "util/testing/fake_sysfs.h"

#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

namespace {

namespace allocfail = rdma::allocfail;
namespace fs = std::filesystem;

constexpr const char* kLocal = "10.78.0.1";

// ----------------------------------------------------------------- helpers

int count_fds() {
    int n = 0;
    DIR* d = opendir("/proc/self/fd");
    while (dirent* e = readdir(d))
        if (e->d_name[0] != '.')
            ++n;
    closedir(d);
    return n - 1;
}

// Kernel cm_ids of this process (iproute2's rdma tool); -1 without the tool.
int kernel_cm_ids() {
    char cmd[128];
    std::snprintf(cmd, sizeof(cmd), "rdma resource show cm_id 2>/dev/null | grep -c 'pid %d '", getpid());
    FILE* f = popen(cmd, "r");
    if (!f)
        return -1;
    int n = -1;
    if (std::fscanf(f, "%d", &n) != 1)
        n = -1;
    pclose(f);
    return n;
}

sockaddr_in ip4(const char* a, uint16_t port) {
    sockaddr_in s{};
    s.sin_family = AF_INET;
    s.sin_port = htons(port);
    inet_pton(AF_INET, a, &s.sin_addr);
    return s;
}

sockaddr* sa(sockaddr_in& s) { return reinterpret_cast<sockaddr*>(&s); }

// The first call of a run that did not succeed, with what it returned.
// Recording allocates nothing, so it may happen while a failure is armed;
// the checks run after the sweep disarmed.
class Calls {
public:
    // For calls returning 0 (or, with `index`, any value >= 0) on success
    // and -1 with errno on failure.
    bool minus_one(const char* name, long r, bool index = false) {
        int e = errno;
        if (failed_)
            return false;
        if (index ? r >= 0 : r == 0)
            return true;
        record(name, r, e);
        return false;
    }
    // For calls returning NULL with errno on failure.
    bool null(const char* name, const void* p) {
        int e = errno;
        if (failed_)
            return false;
        if (p)
            return true;
        record(name, -1, e);
        return false;
    }
    // A condition the run needs that is not a call's result.
    bool expect(const char* what, bool ok) {
        if (failed_)
            return false;
        if (!ok)
            record(what, 0, 0);
        return ok;
    }
    bool ok() const { return !failed_; }
    const char* failed() const { return failed_; }
    long ret() const { return ret_; }
    int err() const { return err_; }

    // After the run: a failed call is only allowed under an injected
    // failure, and then only as -1/NULL with ENOMEM; a run without one must
    // succeed.
    void check(bool injected) const {
        if (!failed_)
            return;
        EXPECT_TRUE(injected) << failed_ << " failed without an injected allocation failure: ret " << ret_ << ", "
                              << std::strerror(err_);
        if (!injected)
            return;
        EXPECT_EQ(ret_, -1) << failed_ << " returned " << ret_ << " under an allocation failure";
        EXPECT_EQ(err_, ENOMEM) << failed_ << ": " << std::strerror(err_);
    }

private:
    void record(const char* name, long r, int e) {
        failed_ = name;
        ret_ = r;
        err_ = e;
    }
    const char* failed_ = nullptr;
    long ret_ = 0;
    int err_ = 0;
};

// Sweeps `body` (the calls, armed) and `cleanup` (disarmed: undoes what the
// body left), checking every run; returns the number of runs.
size_t sweep(const char* what, const std::function<void(Calls&)>& body, const std::function<void()>& cleanup) {
    size_t injected_runs = 0;
    size_t runs = allocfail::sweep([&](const std::function<bool()>& injected) {
        Calls r;
        body(r);
        bool inj = injected();
        injected_runs += inj;
        cleanup();
        r.check(inj);
    });
    EXPECT_GT(runs, 0u) << what << ": the sweep never reached a run without a failure";
    std::printf("[  sweep   ] %s: %zu allocations failed in turn, then a clean run\n", what, injected_runs);
    return runs;
}

// First calls, which also start the library up (device list, rsocket
// configuration, the service thread): a process does that once, so each run
// is a fresh child. `call` runs armed; when it failed under the injected
// failure, with -1/NULL and an errno `allowed` accepts, `again` runs
// (disarmed) and must succeed: a failed start-up must not stick.
void first_call_sweep(const char* what, const std::function<void(Calls&)>& call, const std::function<bool()>& again,
                      const std::function<bool(int)>& allowed) {
    enum : int { kClean = 10, kAbsorbed, kRecovered, kFailedClean, kWrongError, kNoRecovery };
    size_t n = 0;
    size_t failed = 0;
    for (; n < 20000; n++) {
        std::fflush(nullptr);
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            allocfail::fail_after(n);
            Calls r;
            call(r);
            bool inj = allocfail::disarm();
            if (r.ok())
                _exit(inj ? kAbsorbed : kClean);
            if (!inj)
                _exit(kFailedClean);
            if (r.ret() != -1 || !allowed(r.err())) {
                std::fprintf(stderr, "%s: %s returned %ld, %s\n", what, r.failed(), r.ret(), std::strerror(r.err()));
                _exit(kWrongError);
            }
            _exit(again() ? kRecovered : kNoRecovery);
        }
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status)) << what << ": run " << n << " died (signal " << WTERMSIG(status) << ")";
        int code = WEXITSTATUS(status);
        ASSERT_NE(code, kFailedClean) << what << ": failed without an injected failure (run " << n << ")";
        ASSERT_NE(code, kWrongError) << what << ": wrong error under an allocation failure (run " << n << ")";
        ASSERT_NE(code, kNoRecovery) << what << ": the call after a failed start-up failed too (run " << n << ")";
        ASSERT_TRUE(code == kClean || code == kAbsorbed || code == kRecovered) << what << ": exit " << code;
        if (code == kClean)
            break;
        failed += code == kRecovered;
    }
    EXPECT_LT(n, 20000u) << what;
    std::printf("[  sweep   ] %s: %zu allocations failed in turn in fresh processes (%zu made the call fail), then "
                "a clean run\n",
                what, n, failed);
}

// ------------------------------------------------------------ fake sysfs

// One rxe device as the kernel would show it, for the host suite.
using rdma::testing_support::FakeSysfs;

FakeSysfs* g_sysfs = nullptr;

}  // namespace

namespace {

rdma_addrinfo passive_hints() {
    rdma_addrinfo h{};
    h.ai_flags = RAI_PASSIVE | RAI_NUMERICHOST;
    h.ai_port_space = RDMA_PS_TCP;
    return h;
}

// ------------------------------------------------------------ host suite

class Host : public ::testing::Test {
protected:
    void SetUp() override {
        if (!g_sysfs)
            GTEST_SKIP() << "needs --fake-sysfs (a process that has not touched libibverbs yet)";
    }
};

// The first rdma_getaddrinfo starts the library (ABI check, device list,
// the device table). An allocation failure there is ENOMEM, or ENODEV when
// it hit libibverbs' device list (the reference reports a failed device
// list as ENODEV); the next call starts the library after all.
TEST_F(Host, FirstGetaddrinfoStartsUpUnderEveryFailure) {
    auto getaddrinfo = [] {
        rdma_addrinfo h = passive_hints();
        rdma_addrinfo* res = nullptr;
        int r = rdma_getaddrinfo(kLocal, "7471", &h, &res);
        if (!r)
            rdma_freeaddrinfo(res);
        return r;
    };
    first_call_sweep(
        "first rdma_getaddrinfo", [&](Calls& r) { r.minus_one("rdma_getaddrinfo", getaddrinfo()); },
        [&] { return getaddrinfo() == 0; }, [](int e) { return e == ENOMEM || e == ENODEV; });
}

// The first rsocket reads the rsocket configuration files.
TEST_F(Host, FirstRsocketReadsConfigurationUnderEveryFailure) {
    auto open_close = [] {
        int fd = rsocket(AF_INET, SOCK_DGRAM, 0);
        return fd >= 0 && rclose(fd) == 0;
    };
    first_call_sweep(
        "first rsocket", [&](Calls& r) { r.minus_one("rsocket", rsocket(AF_INET, SOCK_DGRAM, 0), true); }, open_close,
        [](int e) { return e == ENOMEM; });
}

// The first datagram rbind starts the rsocket service thread; failing to
// start it must not disable it for good.
TEST_F(Host, FirstDatagramBindStartsTheServiceUnderEveryFailure) {
    auto bind_close = [](Calls* r) {
        int fd = rsocket(AF_INET, SOCK_DGRAM, 0);
        bool ok = r ? r->minus_one("rsocket", fd, true) : fd >= 0;
        if (!ok)
            return false;
        sockaddr_in a = ip4("127.0.0.1", 0);
        int b = rbind(fd, sa(a), sizeof a);
        ok = r ? r->minus_one("rbind", b) : b == 0;
        rclose(fd);
        return ok;
    };
    first_call_sweep(
        "first datagram rbind", [&](Calls& r) { bind_close(&r); }, [&] { return bind_close(nullptr); },
        [](int e) { return e == ENOMEM; });
}

TEST_F(Host, EventStrAllocatesNothing) {
    allocfail::fail_after(0);
    size_t before = allocfail::allocations();
    const char* added = rdma_event_str(RDMA_CM_EVENT_ADDR_RESOLVED);
    const char* unknown = rdma_event_str(static_cast<rdma_cm_event_type>(99));
    size_t after = allocfail::allocations();
    EXPECT_FALSE(allocfail::disarm());
    EXPECT_EQ(after, before);
    EXPECT_STREQ(added, "RDMA_CM_EVENT_ADDR_RESOLVED");
    EXPECT_STREQ(unknown, "UNKNOWN EVENT");
}

TEST_F(Host, GetaddrinfoNumericPassiveAndActive) {
    rdma_addrinfo h = passive_hints();
    rdma_addrinfo* res = nullptr;
    ASSERT_EQ(rdma_getaddrinfo(kLocal, "7471", &h, &res), 0) << std::strerror(errno);  // starts the library
    rdma_freeaddrinfo(res);
    int fds = count_fds();
    rdma_addrinfo* passive = nullptr;
    rdma_addrinfo* active = nullptr;
    sweep(
        "rdma_getaddrinfo/rdma_freeaddrinfo",
        [&](Calls& r) {
            rdma_addrinfo ph = passive_hints();
            if (r.minus_one("rdma_getaddrinfo (passive)", rdma_getaddrinfo(kLocal, "7471", &ph, &passive)))
                r.expect("a passive source address", passive->ai_src_addr && !passive->ai_dst_addr);
            rdma_addrinfo ah{};
            ah.ai_flags = RAI_NUMERICHOST | RAI_NOROUTE;
            ah.ai_qp_type = IBV_QPT_UD;
            if (r.ok() && r.minus_one("rdma_getaddrinfo (active)", rdma_getaddrinfo(kLocal, "7471", &ah, &active)))
                r.expect("an active UD destination", active->ai_dst_addr && active->ai_port_space == RDMA_PS_UDP);
        },
        [&] {
            rdma_freeaddrinfo(passive);
            rdma_freeaddrinfo(active);
            passive = active = nullptr;
        });
    EXPECT_EQ(count_fds(), fds);
}

TEST_F(Host, DatagramRsocketLifecycle) {
    {
        // The configuration and the service thread are set up once; their
        // first use has its own sweeps above.
        int fd = rsocket(AF_INET, SOCK_DGRAM, 0);
        ASSERT_GE(fd, 0) << std::strerror(errno);
        sockaddr_in a = ip4("127.0.0.1", 0);
        ASSERT_EQ(rbind(fd, sa(a), sizeof a), 0) << std::strerror(errno);
        ASSERT_EQ(rclose(fd), 0);
    }
    int fds = count_fds();
    int fd = -1;
    sweep(
        "datagram rsocket/rsetsockopt/rbind/rgetsockname/rfcntl/rclose",
        [&](Calls& r) {
            fd = rsocket(AF_INET, SOCK_DGRAM, 0);
            if (!r.minus_one("rsocket", fd, true))
                return;
            int one = 1;
            r.minus_one("rsetsockopt", rsetsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one));
            sockaddr_in a = ip4("127.0.0.1", 0);
            if (r.ok())
                r.minus_one("rbind", rbind(fd, sa(a), sizeof a));
            sockaddr_in got{};
            socklen_t len = sizeof got;
            if (r.ok() && r.minus_one("rgetsockname", rgetsockname(fd, sa(got), &len)))
                r.expect("a bound port", got.sin_port != 0);
            if (r.ok())
                r.minus_one("rfcntl", rfcntl(fd, F_SETFL, O_NONBLOCK));
            if (r.ok()) {
                int c = rclose(fd);
                if (r.minus_one("rclose", c))
                    fd = -1;
            }
        },
        [&] {
            if (fd >= 0)
                rclose(fd);
            fd = -1;
        });
    EXPECT_EQ(count_fds(), fds);
}

// rpoll, rselect and repoll on a pipe and a datagram rsocket.
TEST_F(Host, PollSelectAndRepoll) {
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    ASSERT_EQ(write(p[1], "x", 1), 1);
    int rs = rsocket(AF_INET, SOCK_DGRAM, 0);
    ASSERT_GE(rs, 0) << std::strerror(errno);
    sockaddr_in a = ip4("127.0.0.1", 0);
    ASSERT_EQ(rbind(rs, sa(a), sizeof a), 0) << std::strerror(errno);
    int fds = count_fds();
    int ep = -1;
    sweep(
        "repoll_create/repoll_ctl/repoll_wait/rpoll/rselect/rclose",
        [&](Calls& r) {
            ep = repoll_create(4);
            if (!r.minus_one("repoll_create", ep, true))
                return;
            epoll_event in{};
            in.events = EPOLLIN;
            in.data.fd = p[0];
            r.minus_one("repoll_ctl (pipe)", repoll_ctl(ep, EPOLL_CTL_ADD, p[0], &in));
            epoll_event out{};
            out.events = EPOLLOUT;
            out.data.fd = rs;
            if (r.ok())
                r.minus_one("repoll_ctl (rsocket)", repoll_ctl(ep, EPOLL_CTL_ADD, rs, &out));
            epoll_event evs[4];
            int n = r.ok() ? repoll_wait(ep, evs, 4, 0) : 0;
            if (r.ok() && r.minus_one("repoll_wait", n, true))
                r.expect("both members ready", n == 2);
            pollfd pf[2] = {{p[0], POLLIN, 0}, {rs, POLLOUT, 0}};
            n = r.ok() ? rpoll(pf, 2, 0) : 0;
            if (r.ok() && r.minus_one("rpoll", n, true))
                r.expect("rpoll: both ready", n == 2 && (pf[0].revents & POLLIN) && (pf[1].revents & POLLOUT));
            fd_set rd;
            FD_ZERO(&rd);
            FD_SET(p[0], &rd);
            timeval tv{0, 0};
            n = r.ok() ? rselect(p[0] + 1, &rd, nullptr, nullptr, &tv) : 0;
            if (r.ok() && r.minus_one("rselect", n, true))
                r.expect("rselect: the pipe is readable", n == 1 && FD_ISSET(p[0], &rd));
            if (r.ok()) {
                int c = rclose(ep);
                if (r.minus_one("rclose (repoll)", c))
                    ep = -1;
            }
        },
        [&] {
            if (ep >= 0)
                rclose(ep);
            ep = -1;
        });
    EXPECT_EQ(count_fds(), fds);
    rclose(rs);
    close(p[0]);
    close(p[1]);
}

// Thread cancellation inside a blocking entry point: glibc unwinds the
// thread, and the barrier must let that pass (the reference, plain C, does);
// swallowing it aborts the process ("FATAL: exception not rethrown"). In a
// child: `block` runs on a thread that gets cancelled and must end so.
void expect_cancellation_ends_thread(void* (*block)(void*), void* arg) {
    std::fflush(nullptr);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        pthread_t t;
        if (pthread_create(&t, nullptr, block, arg))
            _exit(2);
        usleep(200000);
        pthread_cancel(t);
        void* ret = nullptr;
        pthread_join(t, &ret);
        _exit(ret == PTHREAD_CANCELED ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0) << "the thread came back instead of ending";
}

TEST_F(Host, CancellingAThreadBlockedInRpollEndsTheThread) {
    SKIP_UNDER_ASAN_CANCEL();
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    expect_cancellation_ends_thread(
        [](void* arg) -> void* {
            pollfd pf{*static_cast<int*>(arg), POLLIN, 0};
            rpoll(&pf, 1, -1);
            return nullptr;
        },
        &p[0]);
    close(p[0]);
    close(p[1]);
}

// ---------------------------------------------------------- kernel suite

class Kernel : public ::testing::Test {
protected:
    void SetUp() override {
        if (g_sysfs)
            GTEST_SKIP() << "runs on real devices, not with --fake-sysfs";
        struct stat st;
        if (stat("/sys/class/infiniband/rxe0", &st))
            GTEST_SKIP() << "no rxe0 (run inside tests/vm/rdma-vm)";
        // Devices are opened once per process and stay open: not part of
        // what the sweeps count.
        int n = 0;
        ibv_context** l = rdma_get_devices(&n);
        ASSERT_NE(l, nullptr) << std::strerror(errno);
        rdma_free_devices(l);
        // So is the rsocket service thread with its epoll fd (the host suite
        // sweeps its start).
        int fd = rsocket(AF_INET, SOCK_DGRAM, 0);
        ASSERT_GE(fd, 0) << std::strerror(errno);
        sockaddr_in a = ip4(kLocal, 0);
        ASSERT_EQ(rbind(fd, sa(a), sizeof a), 0) << std::strerror(errno);
        ASSERT_EQ(rclose(fd), 0);
        fds_ = count_fds();
        ids_ = kernel_cm_ids();
    }
    void TearDown() override {
        if (IsSkipped())
            return;
        EXPECT_EQ(count_fds(), fds_) << "fd leak";
        if (ids_ >= 0) {
            EXPECT_EQ(kernel_cm_ids(), ids_) << "kernel cm_id leak";
        }
    }
    // Waits for the next event (bounded) and checks its type.
    static bool next_event(Calls& r, rdma_event_channel* ch, rdma_cm_event_type type) {
        pollfd p{ch->fd, POLLIN, 0};
        if (!r.expect("an event within 10 s", poll(&p, 1, 10000) == 1))
            return false;
        rdma_cm_event* e = nullptr;
        if (!r.minus_one("rdma_get_cm_event", rdma_get_cm_event(ch, &e)))
            return false;
        bool ok = r.expect(rdma_event_str(type), e->event == type && e->status == 0);
        return r.minus_one("rdma_ack_cm_event", rdma_ack_cm_event(e)) && ok;
    }
    int fds_ = 0;
    int ids_ = 0;
};

TEST_F(Kernel, CancellingAThreadBlockedInGetCmEventEndsTheThread) {
    expect_cancellation_ends_thread(
        [](void*) -> void* {
            // The child's own channel: the kernel refuses commands on one
            // opened by another process (the parent).
            rdma_event_channel* ch = rdma_create_event_channel();
            rdma_cm_event* e = nullptr;
            if (ch)
                rdma_get_cm_event(ch, &e);
            return nullptr;
        },
        nullptr);
}

TEST_F(Kernel, EventChannel) {
    rdma_event_channel* ch = nullptr;
    sweep(
        "rdma_create_event_channel/rdma_destroy_event_channel",
        [&](Calls& r) {
            ch = rdma_create_event_channel();
            if (r.null("rdma_create_event_channel", ch)) {
                rdma_destroy_event_channel(ch);
                ch = nullptr;
            }
        },
        [&] {
            if (ch)
                rdma_destroy_event_channel(ch);
            ch = nullptr;
        });
}

TEST_F(Kernel, IdBindListenDestroy) {
    rdma_event_channel* ch = nullptr;
    rdma_cm_id* tcp = nullptr;
    rdma_cm_id* udp = nullptr;
    sweep(
        "rdma_create_id/rdma_bind_addr/rdma_listen/rdma_destroy_id",
        [&](Calls& r) {
            ch = rdma_create_event_channel();
            if (!r.null("rdma_create_event_channel", ch))
                return;
            if (!r.minus_one("rdma_create_id (TCP)", rdma_create_id(ch, &tcp, nullptr, RDMA_PS_TCP)))
                return;
            sockaddr_in a = ip4(kLocal, 0);
            if (!r.minus_one("rdma_bind_addr", rdma_bind_addr(tcp, sa(a))))
                return;
            if (!r.minus_one("rdma_listen", rdma_listen(tcp, 4)))
                return;
            if (!r.minus_one("rdma_create_id (UDP)", rdma_create_id(ch, &udp, nullptr, RDMA_PS_UDP)))
                return;
            if (!r.minus_one("rdma_bind_addr (UDP)", rdma_bind_addr(udp, sa(a))))
                return;
            int d = rdma_destroy_id(udp);
            if (r.minus_one("rdma_destroy_id (UDP)", d))
                udp = nullptr;
            d = rdma_destroy_id(tcp);
            if (r.minus_one("rdma_destroy_id", d))
                tcp = nullptr;
        },
        [&] {
            if (udp)
                rdma_destroy_id(udp);
            if (tcp)
                rdma_destroy_id(tcp);
            if (ch)
                rdma_destroy_event_channel(ch);
            udp = tcp = nullptr;
            ch = nullptr;
        });
}

TEST_F(Kernel, ResolveAddrAndRouteWithEvents) {
    rdma_event_channel* ch = rdma_create_event_channel();
    ASSERT_NE(ch, nullptr);
    rdma_cm_id* id = nullptr;
    sweep(
        "rdma_resolve_addr/rdma_resolve_route/rdma_get_cm_event/rdma_ack_cm_event",
        [&](Calls& r) {
            if (!r.minus_one("rdma_create_id", rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP)))
                return;
            sockaddr_in dst = ip4(kLocal, 7471);
            if (!r.minus_one("rdma_resolve_addr", rdma_resolve_addr(id, nullptr, sa(dst), 2000)))
                return;
            if (!next_event(r, ch, RDMA_CM_EVENT_ADDR_RESOLVED))
                return;
            if (!r.minus_one("rdma_resolve_route", rdma_resolve_route(id, 2000)))
                return;
            if (!next_event(r, ch, RDMA_CM_EVENT_ROUTE_RESOLVED))
                return;
            int d = rdma_destroy_id(id);
            if (r.minus_one("rdma_destroy_id", d))
                id = nullptr;
        },
        [&] {
            // Events a failed call left behind go with the id.
            if (id)
                rdma_destroy_id(id);
            id = nullptr;
        });
    rdma_destroy_event_channel(ch);
}

TEST_F(Kernel, SynchronousResolveAndQp) {
    rdma_cm_id* id = nullptr;
    sweep(
        "synchronous rdma_create_id/rdma_resolve_addr/rdma_resolve_route/rdma_create_qp/rdma_destroy_qp",
        [&](Calls& r) {
            if (!r.minus_one("rdma_create_id (sync)", rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP)))
                return;
            sockaddr_in dst = ip4(kLocal, 7471);
            if (!r.minus_one("rdma_resolve_addr", rdma_resolve_addr(id, nullptr, sa(dst), 2000)))
                return;
            if (!r.minus_one("rdma_resolve_route", rdma_resolve_route(id, 2000)))
                return;
            ibv_qp_init_attr attr{};
            attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
            attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
            attr.qp_type = IBV_QPT_RC;
            if (!r.minus_one("rdma_create_qp", rdma_create_qp(id, nullptr, &attr)))
                return;
            rdma_destroy_qp(id);
            r.expect("rdma_destroy_qp clears the QP", id->qp == nullptr && id->send_cq == nullptr);
            int d = rdma_destroy_id(id);
            if (r.minus_one("rdma_destroy_id", d))
                id = nullptr;
        },
        [&] {
            if (id) {
                rdma_destroy_qp(id);
                rdma_destroy_id(id);
            }
            id = nullptr;
        });
}

TEST_F(Kernel, Endpoints) {
    rdma_addrinfo* res = nullptr;
    rdma_cm_id* listen = nullptr;
    rdma_cm_id* client = nullptr;
    sweep(
        "rdma_getaddrinfo/rdma_create_ep (passive, active with QP)/rdma_listen/rdma_destroy_ep",
        [&](Calls& r) {
            rdma_addrinfo h = passive_hints();
            if (!r.minus_one("rdma_getaddrinfo (passive)", rdma_getaddrinfo(kLocal, "7472", &h, &res)))
                return;
            ibv_qp_init_attr attr{};
            attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
            attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
            if (!r.minus_one("rdma_create_ep (passive)", rdma_create_ep(&listen, res, nullptr, &attr)))
                return;
            rdma_freeaddrinfo(res);
            res = nullptr;
            if (!r.minus_one("rdma_listen", rdma_listen(listen, 2)))
                return;
            rdma_addrinfo ah{};
            ah.ai_flags = RAI_NUMERICHOST;
            ah.ai_port_space = RDMA_PS_TCP;
            if (!r.minus_one("rdma_getaddrinfo (active)", rdma_getaddrinfo(kLocal, "7472", &ah, &res)))
                return;
            if (!r.minus_one("rdma_create_ep (active)", rdma_create_ep(&client, res, nullptr, &attr)))
                return;
            r.expect("the active endpoint has its QP", client->qp != nullptr);
            rdma_freeaddrinfo(res);
            res = nullptr;
            rdma_destroy_ep(client);
            client = nullptr;
            rdma_destroy_ep(listen);
            listen = nullptr;
        },
        [&] {
            if (client)
                rdma_destroy_ep(client);
            if (listen)
                rdma_destroy_ep(listen);
            rdma_freeaddrinfo(res);
            client = listen = nullptr;
            res = nullptr;
        });
}

TEST_F(Kernel, StreamAndDatagramRsockets) {
    int stream = -1;
    int dgram = -1;
    sweep(
        "rsocket/rbind/rlisten/rgetsockname/rclose (stream and datagram)",
        [&](Calls& r) {
            stream = rsocket(AF_INET, SOCK_STREAM, 0);
            if (!r.minus_one("rsocket (stream)", stream, true))
                return;
            sockaddr_in a = ip4(kLocal, 0);
            if (!r.minus_one("rbind (stream)", rbind(stream, sa(a), sizeof a)))
                return;
            if (!r.minus_one("rlisten", rlisten(stream, 4)))
                return;
            sockaddr_in got{};
            socklen_t len = sizeof got;
            if (!r.minus_one("rgetsockname", rgetsockname(stream, sa(got), &len)))
                return;
            r.expect("a listening port", got.sin_port != 0);
            dgram = rsocket(AF_INET, SOCK_DGRAM, 0);
            if (!r.minus_one("rsocket (datagram)", dgram, true))
                return;
            if (!r.minus_one("rbind (datagram)", rbind(dgram, sa(a), sizeof a)))
                return;
            int c = rclose(dgram);
            if (r.minus_one("rclose (datagram)", c))
                dgram = -1;
            c = rclose(stream);
            if (r.minus_one("rclose (stream)", c))
                stream = -1;
        },
        [&] {
            if (dgram >= 0)
                rclose(dgram);
            if (stream >= 0)
                rclose(stream);
            dgram = stream = -1;
        });
}

}  // namespace

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    // Must happen before anything reads the device list: libibverbs picks
    // its sysfs root once.
    std::unique_ptr<FakeSysfs> sysfs;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--fake-sysfs")) {
            sysfs = std::make_unique<FakeSysfs>();
            setenv("SYSFS_PATH", sysfs->root().c_str(), 1);
            g_sysfs = sysfs.get();
        }
    }
    int ret = RUN_ALL_TESTS();
    g_sysfs = nullptr;
    return ret;
}
