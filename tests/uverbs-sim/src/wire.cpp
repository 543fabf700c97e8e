// The simulated wire (see wire.h).
#include "wire.h"

#include "sim.h"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace uvsim {

namespace {

int g_fd = -1;
uint64_t g_sent = 0;

std::string wire_dir() { return cfg().run_dir + "/wire"; }

bool make_addr(uint32_t slot, sockaddr_un& a, socklen_t& len) {
    std::string p = wire_dir() + "/s" + std::to_string(slot);
    if (p.size() >= sizeof a.sun_path)
        return false;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path, p.c_str(), p.size() + 1);
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + p.size() + 1);
    return true;
}

}  // namespace

bool wire_attach() {
    std::lock_guard<std::recursive_mutex> g(sim().mu);
    if (g_fd >= 0)
        return true;
    mkdir(cfg().run_dir.c_str(), 0755);
    mkdir(wire_dir().c_str(), 0755);
    int fd = libc().socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return false;
    int sz = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    // First free slot; a socket file nobody listens on is a dead process's.
    const uint32_t start = 1 + static_cast<uint32_t>(getpid()) % 255;
    for (uint32_t i = 0; i < 255; ++i) {
        uint32_t slot = 1 + (start - 1 + i) % 255;
        sockaddr_un a;
        socklen_t len;
        if (!make_addr(slot, a, len))
            break;
        if (bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0) {
            g_fd = fd;
            sim().slot = slot;
            UVSIM_TRACE("wire: slot %u (%s)", slot, a.sun_path);
            return true;
        }
        if (errno != EADDRINUSE)
            break;
        int probe = libc().socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        bool dead = probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&a), len) != 0 && errno == ECONNREFUSED;
        if (probe >= 0)
            libc().close(probe);
        if (dead && unlink(a.sun_path) == 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0) {
            g_fd = fd;
            sim().slot = slot;
            UVSIM_TRACE("wire: slot %u (reused %s)", slot, a.sun_path);
            return true;
        }
    }
    fprintf(stderr, "uverbs-sim: no free wire slot in %s: %s\n", wire_dir().c_str(), strerror(errno));
    libc().close(fd);
    return false;
}

int wire_fd() { return g_fd; }

int wire_send_bytes(uint32_t slot, const void* buf, size_t n) {
    sockaddr_un a;
    socklen_t len;
    if (g_fd < 0 || slot == 0 || slot > 255 || !make_addr(slot, a, len))
        return -1;
    ssize_t r = sendto(g_fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&a), len);
    if (r == static_cast<ssize_t>(n))
        return 1;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS))
        return 0;
    return -1;
}

bool wire_fault_drop(const Packet& p) {
    const uint64_t drop = cfg().faults.drop_every;
    if (!drop || (++g_sent % drop) != 0)
        return false;
    UVSIM_TRACE("wire: fault: dropped packet op 0x%02x psn %u to qpn 0x%x", p.h.opcode, p.h.psn, p.h.dest_qpn);
    return true;
}

size_t wire_recv(Packet& p) {
    if (g_fd < 0)
        return 0;
    ssize_t r = recv(g_fd, &p, sizeof p, MSG_DONTWAIT);
    if (r < static_cast<ssize_t>(sizeof p.h))
        return 0;
    if (p.h.magic != kWireMagic || p.h.payload_len > kMaxPayload ||
        static_cast<size_t>(r) != sizeof p.h + p.h.payload_len)
        return 0;  // not ours or damaged: dropped like a bad ICRC
    return static_cast<size_t>(r);
}

bool wire_backlog() {
    if (g_fd < 0)
        return false;
    pollfd pf{g_fd, POLLIN, 0};
    return poll(&pf, 1, 0) == 1 && (pf.revents & POLLIN);
}

}  // namespace uvsim
