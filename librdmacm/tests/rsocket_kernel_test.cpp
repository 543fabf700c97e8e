// rsockets against a real RDMA device (run in the soft-RoCE VM): stream
// connections blocking and nonblocking, rpoll/rselect/repoll mixing
// rsockets with ordinary fds, large transfers with data checks, iomapped
// writes, datagrams, options, and the faults: no listener, a peer killed
// mid-stream, closing under a blocked reader. Every wait is bounded.
//
// The binary doubles as the "peer" process of the fault tests:
//   rsocket_kernel_tests --peer ADDR PORT send|recv
//
// Built a second time against Debian's librdmacm (RSOCKET_TEST_REFERENCE):
// what the reference lacks (repoll), where it crashes (bad descriptors, null
// option values) or fails on rxe (datagrams, rpoll timeouts, full-duplex
// streaming) is left out of that build, each place saying why; the rest
// must pass on both.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <execinfo.h>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <rdma/rsocket.h>

extern char** environ;

namespace {

std::string g_self;  // argv[0], for spawning peers

const char* test_addr() {
    const char* a = std::getenv("RSOCKET_TEST_ADDR");
    return a ? a : "10.78.0.1";
}

sockaddr_in make_addr(uint16_t port) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    inet_pton(AF_INET, test_addr(), &sin.sin_addr);
    return sin;
}

uint16_t local_port(int rs) {
    sockaddr_in sin{};
    socklen_t len = sizeof sin;
    if (rgetsockname(rs, reinterpret_cast<sockaddr*>(&sin), &len))
        return 0;
    return ntohs(sin.sin_port);
}

// A listening stream rsocket on an ephemeral port of the test address.
int listen_any(uint16_t* port, int iomap = 0) {
    int l = rsocket(AF_INET, SOCK_STREAM, 0);
    if (l < 0)
        return -1;
    if (iomap)
        rsetsockopt(l, SOL_RDMA, RDMA_IOMAPSIZE, &iomap, sizeof iomap);
    sockaddr_in sin = make_addr(0);
    if (rbind(l, reinterpret_cast<sockaddr*>(&sin), sizeof sin) || rlisten(l, 16)) {
        rclose(l);
        return -1;
    }
    *port = local_port(l);
    return l;
}

// A connected pair (blocking). Listeners accept in the background, so one
// thread can connect first and accept afterwards.
struct Pair {
    int listener = -1, client = -1, server = -1;
    uint16_t port = 0;
    ~Pair() {
        for (int fd : {client, server, listener})
            if (fd >= 0)
                rclose(fd);
    }
};

::testing::AssertionResult make_pair(Pair& p, int iomap = 0) {
    p.listener = listen_any(&p.port, iomap);
    if (p.listener < 0)
        return ::testing::AssertionFailure() << "listen: " << strerror(errno);
    p.client = rsocket(AF_INET, SOCK_STREAM, 0);
    if (p.client < 0)
        return ::testing::AssertionFailure() << "rsocket: " << strerror(errno);
    if (iomap)
        rsetsockopt(p.client, SOL_RDMA, RDMA_IOMAPSIZE, &iomap, sizeof iomap);
    sockaddr_in sin = make_addr(p.port);
    if (rconnect(p.client, reinterpret_cast<sockaddr*>(&sin), sizeof sin))
        return ::testing::AssertionFailure() << "rconnect: " << strerror(errno);
    p.server = raccept(p.listener, nullptr, nullptr);
    if (p.server < 0)
        return ::testing::AssertionFailure() << "raccept: " << strerror(errno);
    return ::testing::AssertionSuccess();
}

bool send_all(int rs, const void* buf, size_t len) {
    const char* p = static_cast<const char*>(buf);
    while (len) {
        ssize_t n = rsend(rs, p, len, 0);
        if (n <= 0)
            return false;
        p += n;
        len -= static_cast<size_t>(n);
    }
    return true;
}

bool recv_all(int rs, void* buf, size_t len) { return rrecv(rs, buf, len, MSG_WAITALL) == static_cast<ssize_t>(len); }

uint8_t pattern(uint64_t i) { return static_cast<uint8_t>((i * 2654435761u) >> 13); }

int count_fds() {
    int n = 0;
    DIR* d = opendir("/proc/self/fd");
    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n;
}

pid_t spawn_peer(uint16_t port, const char* mode) {
    std::string p = std::to_string(port);
    const char* argv[] = {g_self.c_str(), "--peer", test_addr(), p.c_str(), mode, nullptr};
    pid_t pid;
    if (posix_spawn(&pid, g_self.c_str(), nullptr, nullptr, const_cast<char* const*>(argv), environ))
        return -1;
    return pid;
}

using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------------ tests

TEST(RsocketStream, DescriptorIsARealDistinctFd) {
    int a = rsocket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(a, 0) << strerror(errno);
    int b = rsocket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    ASSERT_GE(b, 0) << strerror(errno);
    EXPECT_NE(a, b);
    EXPECT_GE(fcntl(a, F_GETFD), 0);  // an open kernel descriptor
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    EXPECT_NE(pipefd[0], a);
    EXPECT_NE(pipefd[1], b);
    EXPECT_EQ(rclose(a), 0);
    EXPECT_EQ(rclose(b), 0);
    EXPECT_EQ(fcntl(a, F_GETFD), -1);  // closed with the rsocket
    // Ours says -1/EBADF; the reference returns EBADF itself.
    EXPECT_NE(rclose(a), 0);
    close(pipefd[0]);
    close(pipefd[1]);
}

TEST(RsocketStream, EchoAndNames) {
    Pair p;
    ASSERT_TRUE(make_pair(p));
    const char msg[] = "hello over rsockets";
    ASSERT_EQ(rsend(p.client, msg, sizeof msg, 0), static_cast<ssize_t>(sizeof msg));
    char buf[64] = {};
    ASSERT_TRUE(recv_all(p.server, buf, sizeof msg));
    EXPECT_STREQ(buf, msg);
    ASSERT_EQ(rwrite(p.server, "pong", 4), 4);
    ASSERT_EQ(rread(p.client, buf, 4), 4);
    EXPECT_EQ(std::string(buf, 4), "pong");

    sockaddr_in cpeer{}, sname{}, speer{}, cname{};
    socklen_t len = sizeof cpeer;
    ASSERT_EQ(rgetpeername(p.client, reinterpret_cast<sockaddr*>(&cpeer), &len), 0);
    EXPECT_EQ(len, sizeof(sockaddr_in));
    EXPECT_EQ(ntohs(cpeer.sin_port), p.port);
    len = sizeof sname;
    ASSERT_EQ(rgetsockname(p.server, reinterpret_cast<sockaddr*>(&sname), &len), 0);
    EXPECT_EQ(sname.sin_port, cpeer.sin_port);
    len = sizeof speer;
    ASSERT_EQ(rgetpeername(p.server, reinterpret_cast<sockaddr*>(&speer), &len), 0);
    len = sizeof cname;
    ASSERT_EQ(rgetsockname(p.client, reinterpret_cast<sockaddr*>(&cname), &len), 0);
    EXPECT_EQ(speer.sin_port, cname.sin_port);
    EXPECT_EQ(speer.sin_addr.s_addr, cname.sin_addr.s_addr);
}

TEST(RsocketStream, RacceptReportsPeer) {
    uint16_t port;
    int l = listen_any(&port);
    ASSERT_GE(l, 0);
    int c = rsocket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin = make_addr(port);
    ASSERT_EQ(rconnect(c, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0) << strerror(errno);
    sockaddr_in from{};
    socklen_t len = sizeof from;
    int s = raccept(l, reinterpret_cast<sockaddr*>(&from), &len);
    ASSERT_GE(s, 0) << strerror(errno);
    EXPECT_EQ(len, sizeof(sockaddr_in));
    EXPECT_EQ(ntohs(from.sin_port), local_port(c));
    rclose(s);
    rclose(c);
    rclose(l);
}

TEST(RsocketStream, BacklogHoldsConnectionsUntilAccepted) {
    int l = rsocket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin = make_addr(0);
    ASSERT_EQ(rbind(l, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0);
    ASSERT_EQ(rlisten(l, 1), 0);
    sin = make_addr(local_port(l));
    int c1 = rsocket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(rconnect(c1, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0) << strerror(errno);
    // The backlog (1) is full: the next connection waits for raccept.
    int c2 = rsocket(AF_INET, SOCK_STREAM, 0);
    rfcntl(c2, F_SETFL, O_NONBLOCK);
    const int rc = rconnect(c2, reinterpret_cast<sockaddr*>(&sin), sizeof sin);
#ifdef RSOCKET_TEST_REFERENCE
    // (Its listener accepts without bound: the connect may complete within
    // the call.)
    if (rc != 0)
#endif
    {
        ASSERT_EQ(rc, -1);
        ASSERT_EQ(errno, EINPROGRESS);
    }
    pollfd pc{c2, POLLOUT, 0};
#ifndef RSOCKET_TEST_REFERENCE
    // (The reference accepts without bound.)
    EXPECT_EQ(rpoll(&pc, 1, 2000), 0);
#endif
    int s1 = raccept(l, nullptr, nullptr);
    ASSERT_GE(s1, 0);
    ASSERT_EQ(rpoll(&pc, 1, 15000), 1);
    EXPECT_TRUE(pc.revents & POLLOUT);
    int s2 = raccept(l, nullptr, nullptr);
    ASSERT_GE(s2, 0);
    for (int fd : {s2, s1, c2, c1, l})
        rclose(fd);
}

TEST(RsocketStream, LargeTransferBothWaysWithDataCheck) {
    Pair p;
    ASSERT_TRUE(make_pair(p));
    const size_t total = 24u << 20;
    auto pump = [&](int from, int to, std::atomic<bool>& ok, uint64_t seed) {
        std::thread writer([&, from, seed] {
            std::vector<uint8_t> buf(200000);
            size_t sent = 0, step = 1;
            while (sent < total) {
                size_t n = std::min<size_t>(total - sent, (step * 7919) % buf.size() + 1);
                for (size_t i = 0; i < n; i++)
                    buf[i] = pattern(seed + sent + i);
                if (!send_all(from, buf.data(), n)) {
                    ok = false;
                    return;
                }
                sent += n;
                step++;
            }
        });
        std::vector<uint8_t> buf(150000);
        size_t got = 0, step = 3;
        while (got < total) {
            size_t want = std::min<size_t>(total - got, (step * 104729) % buf.size() + 1);
            ssize_t n = rrecv(to, buf.data(), want, step % 5 == 0 ? MSG_WAITALL : 0);
            if (n <= 0) {
                ok = false;
                break;
            }
            for (ssize_t i = 0; i < n; i++) {
                if (buf[static_cast<size_t>(i)] != pattern(seed + got + static_cast<size_t>(i))) {
                    ok = false;
                    break;
                }
            }
            if (!ok)
                break;
            got += static_cast<size_t>(n);
            step++;
        }
        writer.join();
    };
    std::atomic<bool> ok1{true}, ok2{true};
    auto t0 = Clock::now();
    std::thread a([&] { pump(p.client, p.server, ok1, 1); });
#ifndef RSOCKET_TEST_REFERENCE
    std::thread b([&] { pump(p.server, p.client, ok2, 99); });
    b.join();
#else
    // Debian's rsockets hang when both directions stream at once (a
    // sender and a receiver thread on each socket): one way only.
#endif
    a.join();
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    EXPECT_TRUE(ok1);
    EXPECT_TRUE(ok2);
    RecordProperty("MBps", std::to_string(2 * total / secs / 1e6));
}

TEST(RsocketStream, VectorsPeekAndWaitall) {
    Pair p;
    ASSERT_TRUE(make_pair(p));
    char a[] = "abc", b[] = "defgh", c[] = "ijklmnopq";
    iovec out[3] = {{a, 3}, {b, 5}, {c, 9}};
    ASSERT_EQ(rwritev(p.client, out, 3), 17);
    char peek[8] = {};
    ASSERT_EQ(rrecv(p.server, peek, 4, MSG_PEEK | MSG_WAITALL), 4);
    EXPECT_EQ(std::string(peek, 4), "abcd");
    char x[2], y[10], z[5];
    iovec in[3] = {{x, 2}, {y, 10}, {z, 5}};
    size_t got = 0;
    while (got < 17) {
        ssize_t n = rreadv(p.server, in, 3);
        ASSERT_GT(n, 0);
        got += static_cast<size_t>(n);
        if (got < 17) {
            // Only happens if the writev arrived in pieces; collect the rest.
            char rest[17];
            ASSERT_TRUE(recv_all(p.server, rest, 17 - got));
            got = 17;
            GTEST_SKIP() << "writev split by the sender";
        }
    }
    EXPECT_EQ(std::string(x, 2) + std::string(y, 10) + std::string(z, 5), "abcdefghijklmnopq");

    msghdr mh{};
    char m1[4] = {'w', 'x', 'y', 'z'};
    iovec mv{m1, 4};
    mh.msg_iov = &mv;
    mh.msg_iovlen = 1;
    ASSERT_EQ(rsendmsg(p.server, &mh, 0), 4);
    char m2[4];
    iovec rv{m2, 4};
    msghdr rh{};
    rh.msg_iov = &rv;
    rh.msg_iovlen = 1;
    ASSERT_EQ(rrecvmsg(p.client, &rh, MSG_WAITALL), 4);
    EXPECT_EQ(std::string(m2, 4), "wxyz");
    char ctl[16];
    rh.msg_control = ctl;
    rh.msg_controllen = sizeof ctl;
    EXPECT_EQ(rrecvmsg(p.client, &rh, 0), -1);
    EXPECT_EQ(errno, ENOTSUP);
    sockaddr_in dst = make_addr(1);
    EXPECT_EQ(rsendto(p.client, "x", 1, 0, reinterpret_cast<sockaddr*>(&dst), sizeof dst), -1);
    EXPECT_EQ(errno, EISCONN);
}

TEST(RsocketStream, NonblockingConnectAcceptAndData) {
    uint16_t port;
    int l = listen_any(&port);
    ASSERT_GE(l, 0);
    ASSERT_EQ(rfcntl(l, F_SETFL, O_NONBLOCK), 0);
    EXPECT_EQ(rfcntl(l, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
    EXPECT_EQ(raccept(l, nullptr, nullptr), -1);
    EXPECT_EQ(errno, EAGAIN);

    int c = rsocket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(c, 0);
    ASSERT_EQ(rfcntl(c, F_SETFL, O_NONBLOCK), 0);
    sockaddr_in sin = make_addr(port);
    // Listeners accept in the background, so when every step's event is
    // already queued the connect completes within the call (seen in CI on
    // both libraries); otherwise EINPROGRESS, then writable with no error.
    if (rconnect(c, reinterpret_cast<sockaddr*>(&sin), sizeof sin) != 0) {
        ASSERT_EQ(errno, EINPROGRESS);
        pollfd pc{c, POLLOUT, 0};
        ASSERT_EQ(rpoll(&pc, 1, 15000), 1);
        EXPECT_TRUE(pc.revents & POLLOUT) << pc.revents;
    }
    int err = -1;
    socklen_t len = sizeof err;
    ASSERT_EQ(rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len), 0);
    EXPECT_EQ(err, 0);

    pollfd pl{l, POLLIN, 0};
    ASSERT_EQ(rpoll(&pl, 1, 15000), 1);
    int s = raccept(l, nullptr, nullptr);
    ASSERT_GE(s, 0) << strerror(errno);
    ASSERT_EQ(rfcntl(s, F_SETFL, O_NONBLOCK), 0);

    char buf[16];
    // Nothing sent yet: would block (the accepted side may still be
    // finishing its handshake, which also reads as EAGAIN).
    EXPECT_EQ(rrecv(s, buf, sizeof buf, 0), -1);
    EXPECT_EQ(errno, EAGAIN);
    pollfd ps{s, POLLIN, 0};
    EXPECT_EQ(rpoll(&ps, 1, 200), 0);
    ASSERT_EQ(rsend(c, "12345", 5, 0), 5);
    ASSERT_EQ(rpoll(&ps, 1, 15000), 1);
    EXPECT_TRUE(ps.revents & POLLIN);
    ASSERT_EQ(rrecv(s, buf, sizeof buf, 0), 5);
    // MSG_DONTWAIT on a blocking socket.
    rfcntl(c, F_SETFL, 0);
    EXPECT_EQ(rrecv(c, buf, sizeof buf, MSG_DONTWAIT), -1);
    EXPECT_EQ(errno, EWOULDBLOCK);

    // Fill the pipe without blocking: the sender runs out of credits or
    // buffer space and says EAGAIN instead of waiting.
    rfcntl(c, F_SETFL, O_NONBLOCK);
    std::vector<char> big(1 << 20, 'x');
    size_t sent = 0;
    ssize_t n;
    auto until = Clock::now() + std::chrono::seconds(20);
    while ((n = rsend(c, big.data(), big.size(), 0)) > 0 && Clock::now() < until)
        sent += static_cast<size_t>(n);
    EXPECT_EQ(n, -1);
    EXPECT_EQ(errno, EAGAIN);
    EXPECT_GT(sent, 0u);
    // Drain on the other side; the writer becomes writable again.
    size_t drained = 0;
    while (drained < sent) {
        ps.revents = 0;
        ASSERT_EQ(rpoll(&ps, 1, 15000), 1);
        ssize_t r = rrecv(s, big.data(), big.size(), 0);
        if (r < 0 && errno == EAGAIN)
            continue;
        ASSERT_GT(r, 0);
        drained += static_cast<size_t>(r);
    }
    EXPECT_EQ(drained, sent);
#ifndef RSOCKET_TEST_REFERENCE
    // (Debian's rpoll spins here past its timeout.)
    pollfd pw{c, POLLOUT, 0};
    EXPECT_EQ(rpoll(&pw, 1, 15000), 1);
#endif
    rclose(s);
    rclose(c);
    rclose(l);
}

#ifndef RSOCKET_TEST_REFERENCE
// Debian's rpoll does not return here (it spins past the timeout once it
// has reported the pipe).
TEST(RsocketPoll, MixesRsocketsAndPipes) {
    Pair p;
    ASSERT_TRUE(make_pair(p));
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    pollfd fds[3] = {{p.server, POLLIN, 0}, {pipefd[0], POLLIN, 0}, {-1, POLLIN, 0}};
    EXPECT_EQ(rpoll(fds, 3, 100), 0);
    ASSERT_EQ(write(pipefd[1], "x", 1), 1);
    ASSERT_EQ(rpoll(fds, 3, 5000), 1);
    EXPECT_EQ(fds[0].revents, 0);
    EXPECT_TRUE(fds[1].revents & POLLIN);
    char ch;
    ASSERT_EQ(read(pipefd[0], &ch, 1), 1);
    // A blocked rpoll wakes up for rsocket data sent from another thread.
    std::thread t([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        rsend(p.client, "y", 1, 0);
    });
    auto t0 = Clock::now();
    ASSERT_EQ(rpoll(fds, 3, 15000), 1);
    t.join();
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
    EXPECT_TRUE(fds[0].revents & POLLIN);
    EXPECT_EQ(fds[1].revents, 0);

    fd_set rd, wr;
    FD_ZERO(&rd);
    FD_ZERO(&wr);
    FD_SET(p.server, &rd);
    FD_SET(pipefd[0], &rd);
    FD_SET(p.client, &wr);
    timeval tv{5, 0};
    int nfds = std::max({p.server, pipefd[0], p.client}) + 1;
    int n = rselect(nfds, &rd, &wr, nullptr, &tv);
    EXPECT_EQ(n, 2);
    EXPECT_TRUE(FD_ISSET(p.server, &rd));
    EXPECT_FALSE(FD_ISSET(pipefd[0], &rd));
    EXPECT_TRUE(FD_ISSET(p.client, &wr));
    ASSERT_EQ(rrecv(p.server, &ch, 1, 0), 1);
    FD_ZERO(&rd);
    FD_SET(p.server, &rd);
    tv = {0, 200000};
    EXPECT_EQ(rselect(p.server + 1, &rd, nullptr, nullptr, &tv), 0);
    close(pipefd[0]);
    close(pipefd[1]);
}
#endif

#ifndef RSOCKET_TEST_REFERENCE
TEST(RsocketPoll, Repoll) {
    Pair p;
    ASSERT_TRUE(make_pair(p));
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    EXPECT_EQ(repoll_create(0), -1);
    EXPECT_EQ(errno, EINVAL);
    int ep = repoll_create(4);
    ASSERT_GE(ep, 0) << strerror(errno);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = 111;
    ASSERT_EQ(repoll_ctl(ep, EPOLL_CTL_ADD, p.server, &ev), 0) << strerror(errno);
    EXPECT_EQ(repoll_ctl(ep, EPOLL_CTL_ADD, p.server, &ev), -1);
    EXPECT_EQ(errno, EEXIST);
    ev.data.u64 = 222;
    ASSERT_EQ(repoll_ctl(ep, EPOLL_CTL_ADD, pipefd[0], &ev), 0);
    ev.events = EPOLLIN | EPOLLET;
    EXPECT_EQ(repoll_ctl(ep, EPOLL_CTL_MOD, p.server, &ev), -1);
    EXPECT_EQ(errno, EINVAL);

    epoll_event out[4];
    EXPECT_EQ(repoll_wait(ep, out, 4, 100), 0);
    ASSERT_EQ(rsend(p.client, "z", 1, 0), 1);
    ASSERT_EQ(repoll_wait(ep, out, 4, 15000), 1);
    EXPECT_EQ(out[0].data.u64, 111u);
    EXPECT_TRUE(out[0].events & EPOLLIN);
    ASSERT_EQ(write(pipefd[1], "x", 1), 1);
    int n = repoll_wait(ep, out, 4, 15000);
    ASSERT_EQ(n, 2);  // level-triggered: the rsocket is still readable
    uint64_t seen = out[0].data.u64 + out[1].data.u64;
    EXPECT_EQ(seen, 333u);
    ASSERT_EQ(repoll_ctl(ep, EPOLL_CTL_DEL, p.server, nullptr), 0);
    EXPECT_EQ(repoll_wait(ep, out, 4, 1000), 1);
    EXPECT_EQ(out[0].data.u64, 222u);
    EXPECT_EQ(rclose(ep), 0);
    EXPECT_EQ(repoll_wait(ep, out, 4, 0), -1);
    EXPECT_EQ(errno, EBADF);
    close(pipefd[0]);
    close(pipefd[1]);
}
#endif

TEST(RsocketStream, ShutdownWriteGivesEofOneWay) {
    Pair p;
    ASSERT_TRUE(make_pair(p));
    ASSERT_EQ(rsend(p.client, "last", 4, 0), 4);
    ASSERT_EQ(rshutdown(p.client, SHUT_WR), 0);
    char buf[8];
    ASSERT_TRUE(recv_all(p.server, buf, 4));
    EXPECT_EQ(rrecv(p.server, buf, sizeof buf, 0), 0);  // EOF
    // The other direction still works.
    ASSERT_EQ(rsend(p.server, "back", 4, 0), 4);
    ASSERT_TRUE(recv_all(p.client, buf, 4));
    EXPECT_EQ(std::string(buf, 4), "back");
#ifndef RSOCKET_TEST_REFERENCE
    EXPECT_EQ(rshutdown(p.client, 42), -1);  // the reference accepts anything
    EXPECT_EQ(errno, EINVAL);
#endif
}

TEST(RsocketStream, CloseGivesEofAndSendFails) {
    Pair p;
    ASSERT_TRUE(make_pair(p));
    ASSERT_EQ(rsend(p.client, "bye", 3, 0), 3);
    ASSERT_EQ(rclose(p.client), 0);
    p.client = -1;
    char buf[8];
    ASSERT_TRUE(recv_all(p.server, buf, 3));
    EXPECT_EQ(rrecv(p.server, buf, sizeof buf, 0), 0);
#ifndef RSOCKET_TEST_REFERENCE
    // The reference still takes a first send after the peer's goodbye.
    EXPECT_EQ(rsend(p.server, "x", 1, 0), -1);
    EXPECT_TRUE(errno == ECONNRESET || errno == EPIPE) << strerror(errno);
#endif
    pollfd pf{p.server, POLLIN | POLLOUT, 0};
    ASSERT_EQ(rpoll(&pf, 1, 1000), 1);
    EXPECT_TRUE(pf.revents & (POLLHUP | POLLERR)) << pf.revents;
}

TEST(RsocketFault, ConnectWithoutListenerIsRefused) {
    uint16_t port;
    int l = listen_any(&port);
    ASSERT_GE(l, 0);
    rclose(l);  // the port is free again: nobody listens there
    int c = rsocket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin = make_addr(port);
    auto t0 = Clock::now();
    EXPECT_EQ(rconnect(c, reinterpret_cast<sockaddr*>(&sin), sizeof sin), -1);
    EXPECT_EQ(errno, ECONNREFUSED) << strerror(errno);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(30));
    char ch;
    // Like the reference: sends fail as reset, receives see end of file.
    EXPECT_EQ(rsend(c, "x", 1, 0), -1);
    EXPECT_EQ(errno, ECONNRESET);
    EXPECT_EQ(rrecv(c, &ch, 1, 0), 0);
    rclose(c);

    // Nonblocking: EINPROGRESS, then an error event and SO_ERROR.
    c = rsocket(AF_INET, SOCK_STREAM, 0);
    rfcntl(c, F_SETFL, O_NONBLOCK);
    ASSERT_EQ(rconnect(c, reinterpret_cast<sockaddr*>(&sin), sizeof sin), -1);
    if (errno == ECONNREFUSED) {
        // Every step's event was already there (soft-RoCE answers within
        // the call under load, seen in CI): a nonblocking connect may then
        // fail at once, on either library, as TCP's may.
        rclose(c);
        return;
    }
    ASSERT_EQ(errno, EINPROGRESS);
    pollfd pf{c, POLLOUT, 0};
    ASSERT_EQ(rpoll(&pf, 1, 30000), 1);
    EXPECT_TRUE(pf.revents & POLLERR);
    int err = 0;
    socklen_t len = sizeof err;
    ASSERT_EQ(rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len), 0);
    EXPECT_EQ(err, ECONNREFUSED);
    len = sizeof err;
    ASSERT_EQ(rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len), 0);
    EXPECT_EQ(err, 0);  // read once
    rclose(c);
}

TEST(RsocketFault, PeerKilledWhileWeRead) {
    uint16_t port;
    int l = listen_any(&port);
    ASSERT_GE(l, 0);
    pid_t peer = spawn_peer(port, "send");
    ASSERT_GT(peer, 0);
    int s = raccept(l, nullptr, nullptr);
    ASSERT_GE(s, 0) << strerror(errno);
    std::vector<char> buf(1 << 16);
    size_t got = 0;
    while (got < (4u << 20)) {
        ssize_t n = rrecv(s, buf.data(), buf.size(), 0);
        ASSERT_GT(n, 0) << strerror(errno);
        got += static_cast<size_t>(n);
    }
    kill(peer, SIGKILL);
    waitpid(peer, nullptr, 0);
    auto t0 = Clock::now();
    ssize_t n;
    while ((n = rrecv(s, buf.data(), buf.size(), 0)) > 0)
        ;
    EXPECT_TRUE(n == 0 || (n == -1 && errno == ECONNRESET)) << n << " " << strerror(errno);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(30));
    pollfd pf{s, POLLIN, 0};
    EXPECT_EQ(rpoll(&pf, 1, 1000), 1);
    rclose(s);
    rclose(l);
}

#ifndef RSOCKET_TEST_REFERENCE
// Debian's rsend, out of credits, sleeps on the CQ channel alone: when the
// peer dies after every write we posted was acknowledged, no completion
// ever comes and it blocks for good (seen in CI and once here in one
// run). Ours also watches the connection's CM events.
TEST(RsocketFault, PeerKilledWhileWeWrite) {
    uint16_t port;
    int l = listen_any(&port);
    ASSERT_GE(l, 0);
    pid_t peer = spawn_peer(port, "recv");
    ASSERT_GT(peer, 0);
    int s = raccept(l, nullptr, nullptr);
    ASSERT_GE(s, 0) << strerror(errno);
    std::vector<char> buf(1 << 16, 'w');
    ASSERT_TRUE(send_all(s, buf.data(), buf.size()));
    kill(peer, SIGKILL);
    waitpid(peer, nullptr, 0);
    auto t0 = Clock::now();
    ssize_t n;
    while ((n = rsend(s, buf.data(), buf.size(), 0)) > 0 && Clock::now() - t0 < std::chrono::seconds(60))
        ;
    EXPECT_EQ(n, -1);
    EXPECT_TRUE(errno == ECONNRESET || errno == EPIPE) << strerror(errno);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(30));
    rclose(s);
    rclose(l);
}
#endif

TEST(RsocketFault, ShutdownWakesBlockedReader) {
    Pair p;
    ASSERT_TRUE(make_pair(p));
    std::atomic<ssize_t> result{1};
    std::thread reader([&] {
        char ch;
        result = rrecv(p.server, &ch, 1, 0);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_EQ(rshutdown(p.client, SHUT_RDWR), 0);
    reader.join();
    EXPECT_EQ(result.load(), 0);
}

TEST(RsocketIomap, RiowriteLandsInTheMappedBuffer) {
    Pair p;
    ASSERT_TRUE(make_pair(p, 8));
    int v = 0;
    socklen_t len = sizeof v;
    ASSERT_EQ(rgetsockopt(p.server, SOL_RDMA, RDMA_IOMAPSIZE, &v, &len), 0);
    EXPECT_EQ(v, 8);
    std::vector<uint8_t> target(256 * 1024, 0);
    off_t off = riomap(p.server, target.data(), target.size(), PROT_WRITE, 0, 0);
    ASSERT_EQ(off, 0) << strerror(errno);
    // The mapping travels with our next send.
    ASSERT_EQ(rsend(p.server, "R", 1, 0), 1);
    char ch;
    ASSERT_EQ(rrecv(p.client, &ch, 1, MSG_WAITALL), 1);
    std::vector<uint8_t> data(target.size());
    for (size_t i = 0; i < data.size(); i++)
        data[i] = pattern(i);
    size_t w = riowrite(p.client, data.data(), data.size(), 0, 0);
    ASSERT_EQ(w, data.size()) << strerror(errno);
    // Iowrite data is part of the stream: it has landed once the message
    // sent after it arrives.
    ASSERT_EQ(rsend(p.client, "D", 1, 0), 1);
    ASSERT_EQ(rrecv(p.server, &ch, 1, MSG_WAITALL), 1);
    EXPECT_EQ(ch, 'D');
    EXPECT_TRUE(target == data);
    // Outside any mapping nothing is written.
    EXPECT_EQ(riowrite(p.client, data.data(), 16, 1 << 30, 0), 0u);
    EXPECT_EQ(riounmap(p.server, target.data(), target.size()), 0);
    EXPECT_EQ(riounmap(p.server, target.data(), target.size()), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(riomap(p.server, target.data(), 16, PROT_READ, 0, -1), -1);
    EXPECT_EQ(errno, EINVAL);
}

TEST(RsocketOptions, SocketTcpAndRdmaLevels) {
    int rs = rsocket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(rs, 0);
    int v = 1;
    socklen_t len = sizeof v;
    EXPECT_EQ(rsetsockopt(rs, SOL_SOCKET, SO_REUSEADDR, &v, sizeof v), 0);
    v = 0;
    EXPECT_EQ(rgetsockopt(rs, SOL_SOCKET, SO_REUSEADDR, &v, &len), 0);
    EXPECT_EQ(v, 1);
    v = 65536;
    EXPECT_EQ(rsetsockopt(rs, SOL_SOCKET, SO_RCVBUF, &v, sizeof v), 0);
    len = sizeof v;
    EXPECT_EQ(rgetsockopt(rs, SOL_SOCKET, SO_RCVBUF, &v, &len), 0);
    EXPECT_EQ(v, 131072);  // doubled, like the kernel does
    v = 100;
    EXPECT_EQ(rsetsockopt(rs, SOL_SOCKET, SO_SNDBUF, &v, sizeof v), 0);
    len = sizeof v;
    EXPECT_EQ(rgetsockopt(rs, SOL_SOCKET, SO_SNDBUF, &v, &len), 0);
    EXPECT_EQ(v, 4096);  // never below twice the low-water mark
    linger lg{1, 5};
    EXPECT_EQ(rsetsockopt(rs, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
    len = sizeof lg;
    EXPECT_EQ(rgetsockopt(rs, SOL_SOCKET, SO_LINGER, &lg, &len), 0);
    EXPECT_EQ(lg.l_onoff, 1);
    v = 1;
    EXPECT_EQ(rsetsockopt(rs, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v), 0);
    len = sizeof v;
    v = 0;
    EXPECT_EQ(rgetsockopt(rs, IPPROTO_TCP, TCP_NODELAY, &v, &len), 0);
    EXPECT_EQ(v, 1);
    len = sizeof v;
    EXPECT_EQ(rgetsockopt(rs, IPPROTO_TCP, TCP_MAXSEG, &v, &len), 0);
    EXPECT_EQ(v, 2048);  // no route yet
    v = 1;
    EXPECT_EQ(rsetsockopt(rs, SOL_SOCKET, SO_OOBINLINE, &v, sizeof v), 0);
    v = 64;
    EXPECT_EQ(rsetsockopt(rs, SOL_RDMA, RDMA_SQSIZE, &v, sizeof v), 0);
    v = 32;
    EXPECT_EQ(rsetsockopt(rs, SOL_RDMA, RDMA_RQSIZE, &v, sizeof v), 0);
    v = 0;
    EXPECT_EQ(rsetsockopt(rs, SOL_RDMA, RDMA_INLINE, &v, sizeof v), 0);
    len = sizeof v;
    EXPECT_EQ(rgetsockopt(rs, SOL_RDMA, RDMA_SQSIZE, &v, &len), 0);
    EXPECT_EQ(v, 64);
    len = sizeof v;
    EXPECT_EQ(rgetsockopt(rs, SOL_RDMA, RDMA_RQSIZE, &v, &len), 0);
    EXPECT_EQ(v, 32);
    v = 300;  // rounded to what the connection data can carry
    EXPECT_EQ(rsetsockopt(rs, SOL_RDMA, RDMA_IOMAPSIZE, &v, sizeof v), 0);
    len = sizeof v;
    EXPECT_EQ(rgetsockopt(rs, SOL_RDMA, RDMA_IOMAPSIZE, &v, &len), 0);
    EXPECT_EQ(v, 256);
    EXPECT_EQ(rsetsockopt(rs, SOL_SOCKET, SO_BROADCAST, &v, sizeof v), -1);
    EXPECT_EQ(errno, ENOTSUP);
    len = sizeof v;
    EXPECT_EQ(rgetsockopt(rs, IPPROTO_IP, IP_TOS, &v, &len), -1);
    EXPECT_EQ(errno, ENOTSUP);
#ifndef RSOCKET_TEST_REFERENCE
    // The reference dereferences the null pointer.
    EXPECT_EQ(rsetsockopt(rs, SOL_SOCKET, SO_RCVBUF, nullptr, 4), -1);
    EXPECT_EQ(errno, EFAULT);
#endif
    EXPECT_EQ(rfcntl(rs, F_GETFD), -1);
    EXPECT_EQ(errno, ENOTSUP);
    rclose(rs);
}

TEST(RsocketOptions, SmallQueuesAndNoInlineStillTransfer) {
    uint16_t port;
    int l = rsocket(AF_INET, SOCK_STREAM, 0);
    int small = 16, inl = 0, buf = 8192;
    for (int fd : {l}) {
        rsetsockopt(fd, SOL_RDMA, RDMA_SQSIZE, &small, sizeof small);
        rsetsockopt(fd, SOL_RDMA, RDMA_RQSIZE, &small, sizeof small);
        rsetsockopt(fd, SOL_RDMA, RDMA_INLINE, &inl, sizeof inl);
        rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
        rsetsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    }
    sockaddr_in sin = make_addr(0);
    ASSERT_EQ(rbind(l, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0);
    ASSERT_EQ(rlisten(l, 4), 0);
    port = local_port(l);
    int c = rsocket(AF_INET, SOCK_STREAM, 0);
    rsetsockopt(c, SOL_RDMA, RDMA_SQSIZE, &small, sizeof small);
    rsetsockopt(c, SOL_RDMA, RDMA_RQSIZE, &small, sizeof small);
    rsetsockopt(c, SOL_RDMA, RDMA_INLINE, &inl, sizeof inl);
    rsetsockopt(c, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    sin = make_addr(port);
    ASSERT_EQ(rconnect(c, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0) << strerror(errno);
    int s = raccept(l, nullptr, nullptr);
    ASSERT_GE(s, 0);
    int v = 99;
    EXPECT_EQ(rsetsockopt(c, SOL_RDMA, RDMA_SQSIZE, &v, sizeof v), -1);  // too late
    EXPECT_EQ(errno, EINVAL);
    const size_t total = 3u << 20;
    std::thread w([&] {
        std::vector<uint8_t> out(10007);
        size_t sent = 0;
        while (sent < total) {
            size_t n = std::min(out.size(), total - sent);
            for (size_t i = 0; i < n; i++)
                out[i] = pattern(sent + i);
            if (!send_all(c, out.data(), n))
                return;
            sent += n;
        }
    });
    std::vector<uint8_t> in(4099);
    size_t got = 0;
    bool ok = true;
    while (got < total && ok) {
        ssize_t n = rrecv(s, in.data(), in.size(), 0);
        if (n <= 0) {
            ok = false;
            break;
        }
        for (ssize_t i = 0; i < n; i++)
            ok = ok && in[static_cast<size_t>(i)] == pattern(got + static_cast<size_t>(i));
        got += static_cast<size_t>(n);
    }
    w.join();
    EXPECT_TRUE(ok);
    EXPECT_EQ(got, total);
    rclose(s);
    rclose(c);
    rclose(l);
}

TEST(RsocketOptions, KeepaliveKeepsAHealthyConnection) {
    Pair p;
    ASSERT_TRUE(make_pair(p));
    int v = 1;
    ASSERT_EQ(rsetsockopt(p.client, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof v), 0);
    ASSERT_EQ(rsetsockopt(p.client, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof v), 0);
    socklen_t len = sizeof v;
    v = 0;
    ASSERT_EQ(rgetsockopt(p.client, SOL_SOCKET, SO_KEEPALIVE, &v, &len), 0);
    EXPECT_EQ(v, 1);
    len = sizeof v;
    ASSERT_EQ(rgetsockopt(p.client, IPPROTO_TCP, TCP_KEEPIDLE, &v, &len), 0);
    EXPECT_EQ(v, 1);
    v = 0;
    EXPECT_EQ(rsetsockopt(p.client, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof v), -1);
    EXPECT_EQ(errno, EINVAL);
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));  // a few keepalives
    ASSERT_EQ(rsend(p.client, "k", 1, 0), 1);
    char ch;
    ASSERT_EQ(rrecv(p.server, &ch, 1, 0), 1);
    ASSERT_EQ(rsend(p.server, "a", 1, 0), 1);
    ASSERT_EQ(rrecv(p.client, &ch, 1, 0), 1);
}

#ifndef RSOCKET_TEST_REFERENCE
// Debian's datagram rsockets fail on RoCE (its first rsendto returns -1).
TEST(RsocketDgram, PingPongAndSourceAddresses) {
    int a = rsocket(AF_INET, SOCK_DGRAM, 0);
    int b = rsocket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
    ASSERT_GE(a, 0) << strerror(errno);
    ASSERT_GE(b, 0) << strerror(errno);
    sockaddr_in sa = make_addr(0), sb = make_addr(0);
    ASSERT_EQ(rbind(a, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << strerror(errno);
    ASSERT_EQ(rbind(b, reinterpret_cast<sockaddr*>(&sb), sizeof sb), 0) << strerror(errno);
    sa = make_addr(local_port(a));
    sb = make_addr(local_port(b));
    char buf[2048];
    for (int i = 0; i < 50; i++) {
        std::string msg = "ping " + std::to_string(i);
        ASSERT_EQ(rsendto(a, msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&sb), sizeof sb),
                  static_cast<ssize_t>(msg.size()))
            << strerror(errno);
        pollfd pf{b, POLLIN, 0};
        ASSERT_EQ(rpoll(&pf, 1, 15000), 1) << "round " << i;
        sockaddr_in from{};
        socklen_t flen = sizeof from;
        ssize_t n = rrecvfrom(b, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &flen);
        ASSERT_EQ(n, static_cast<ssize_t>(msg.size()));
        EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), msg);
        EXPECT_EQ(flen, sizeof(sockaddr_in));
        EXPECT_EQ(from.sin_port, sa.sin_port);
        EXPECT_EQ(from.sin_addr.s_addr, sa.sin_addr.s_addr);
        std::string reply = "pong " + std::to_string(i);
        ASSERT_EQ(rsendto(b, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from), flen),
                  static_cast<ssize_t>(reply.size()));
        pf = {a, POLLIN, 0};
        ASSERT_EQ(rpoll(&pf, 1, 15000), 1) << "round " << i;
        n = rrecv(a, buf, sizeof buf, 0);
        ASSERT_EQ(std::string(buf, static_cast<size_t>(n > 0 ? n : 0)), reply);
    }
    // Connected datagram socket: rsend without an address.
    ASSERT_EQ(rconnect(a, reinterpret_cast<sockaddr*>(&sb), sizeof sb), 0) << strerror(errno);
    ASSERT_EQ(rsend(a, "conn", 4, 0), 4);
    pollfd pf{b, POLLIN, 0};
    ASSERT_EQ(rpoll(&pf, 1, 15000), 1);
    EXPECT_EQ(rrecv(b, buf, 2, MSG_PEEK), 2);
    EXPECT_EQ(rrecv(b, buf, sizeof buf, 0), 4);
    std::vector<char> huge(8192, 'h');
    EXPECT_EQ(rsendto(a, huge.data(), huge.size(), 0, reinterpret_cast<sockaddr*>(&sb), sizeof sb), -1);
    EXPECT_EQ(errno, EMSGSIZE);
    int c = rsocket(AF_INET, SOCK_DGRAM, 0);
    EXPECT_EQ(rsend(c, "x", 1, 0), -1);
    EXPECT_EQ(errno, EDESTADDRREQ);
    rfcntl(c, F_SETFL, O_NONBLOCK);
    EXPECT_EQ(rrecv(c, buf, 1, 0), -1);
    EXPECT_EQ(errno, EAGAIN);
    rclose(c);
    rclose(a);
    rclose(b);
}
#endif

TEST(RsocketResources, ManyConnectionsLeaveNoDescriptorBehind) {
    uint16_t port;
    int l = listen_any(&port);
    ASSERT_GE(l, 0);
    int before = count_fds();
    for (int i = 0; i < 12; i++) {
        int c = rsocket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in sin = make_addr(port);
        ASSERT_EQ(rconnect(c, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0) << i << strerror(errno);
        int s = raccept(l, nullptr, nullptr);
        ASSERT_GE(s, 0);
        ASSERT_EQ(rsend(c, "1", 1, 0), 1);
        char ch;
        ASSERT_EQ(rrecv(s, &ch, 1, 0), 1);
        rclose(c);
        rclose(s);
    }
    EXPECT_EQ(count_fds(), before);
    rclose(l);
}

#ifndef RSOCKET_TEST_REFERENCE
TEST(RsocketErrors, BadArguments) {
    EXPECT_EQ(rsocket(AF_UNIX, SOCK_STREAM, 0), -1);
    EXPECT_EQ(errno, ENOTSUP);
    EXPECT_EQ(rsocket(AF_INET, SOCK_RAW, 0), -1);
    EXPECT_EQ(errno, ENOTSUP);
    EXPECT_EQ(rsocket(AF_INET, SOCK_STREAM, IPPROTO_UDP), -1);
    EXPECT_EQ(errno, ENOTSUP);
    char ch;
    EXPECT_EQ(rrecv(12345, &ch, 1, 0), -1);
    EXPECT_EQ(errno, EBADF);
    EXPECT_EQ(rsend(0, &ch, 1, 0), -1);  // stdin is no rsocket
    EXPECT_EQ(errno, EBADF);
    EXPECT_EQ(rpoll(nullptr, 1, 0), -1);
    EXPECT_EQ(errno, EFAULT);
    int rs = rsocket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(rrecv(rs, &ch, 1, 0), -1);  // not connected
    EXPECT_EQ(errno, ENOTCONN);
    EXPECT_EQ(rlisten(rs, 1), 0);  // an unbound listener takes any address
    EXPECT_EQ(rconnect(rs, nullptr, 0), -1);
    EXPECT_EQ(errno, EFAULT);
    rclose(rs);
}
#endif

// ------------------------------------------------------------ peer process

int peer_main(const char* addr, const char* port, const char* mode) {
    setenv("RSOCKET_TEST_ADDR", addr, 1);
    int c = rsocket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin = make_addr(static_cast<uint16_t>(std::atoi(port)));
    if (c < 0 || rconnect(c, reinterpret_cast<sockaddr*>(&sin), sizeof sin))
        return 1;
    std::vector<char> buf(1 << 16, 'p');
    if (!std::strcmp(mode, "send")) {
        while (rsend(c, buf.data(), buf.size(), 0) > 0)
            ;
    } else {
        while (rrecv(c, buf.data(), buf.size(), 0) > 0)
            ;
    }
    return 0;
}

// A test that hangs must not eat the whole VM run: each test gets a time
// limit, then the binary reports it with a backtrace and exits.
#ifdef RSOCKET_TEST_REFERENCE
constexpr int kTestLimit = 60;
#else
constexpr int kTestLimit = 120;
#endif

class Watchdog : public ::testing::EmptyTestEventListener {
    void OnTestStart(const ::testing::TestInfo& info) override {
        std::snprintf(current, sizeof current, "%s.%s", info.test_suite_name(), info.name());
        alarm(kTestLimit);
    }
    void OnTestEnd(const ::testing::TestInfo&) override { alarm(0); }

public:
    static char current[256];
};
char Watchdog::current[256];

void on_alarm(int) {
    char msg[320];
    int n = std::snprintf(msg, sizeof msg, "\nTIMEOUT: %s did not finish in %d s\n", Watchdog::current, kTestLimit);
    (void)!write(2, msg, static_cast<size_t>(n));
    void* frames[32];
    backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
    _exit(1);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 5 && !std::strcmp(argv[1], "--peer"))
        return peer_main(argv[2], argv[3], argv[4]);
    g_self = argv[0];
    ::testing::InitGoogleTest(&argc, argv);
    signal(SIGALRM, on_alarm);
    // gtest takes ownership of listeners.
    ::testing::UnitTest::GetInstance()->listeners().Append(std::make_unique<Watchdog>().release());
    return RUN_ALL_TESTS();
}
