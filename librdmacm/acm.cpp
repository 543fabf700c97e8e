// ibacm client: rdma_getaddrinfo() asks a local ibacm daemon, when one is
// running, for the path records of the route it is resolving. The daemon
// listens on a UNIX socket, or on a loopback TCP port named in its port
// file. Any failure here leaves the result as plain name resolution.
#include "librdmacm/acm.h"

#include "librdmacm/cma_internal.h"
#include "util/file_io.h"
#include "util/unique_fd.h"

#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <infiniband/sa.h>
#include <mutex>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <utility>

namespace rdma::cm {
namespace acm {

size_t encode_resolve(Msg& msg, const rdma_addrinfo& rai) {
    std::memset(&msg, 0, sizeof(msg));
    msg.hdr.version = kVersion;
    msg.hdr.opcode = kOpResolve;
    size_t n = 0;
    auto add = [&](const sockaddr* a, uint32_t flag) {
        if (!a)
            return;
        EpAddr& ep = msg.ep[n];
        if (a->sa_family == AF_INET) {
            ep.type = kTypeIp;
            std::memcpy(ep.info, &reinterpret_cast<const sockaddr_in*>(a)->sin_addr, 4);
        } else if (a->sa_family == AF_INET6) {
            ep.type = kTypeIp6;
            std::memcpy(ep.info, &reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr, 16);
        } else {
            return;
        }
        ep.flags = flag;
        n++;
    };
    add(rai.ai_src_addr, kFlagSource);
    add(rai.ai_dst_addr, kFlagDest);
    bool has_dest = false;
    for (size_t i = 0; i < n; i++)
        has_dest |= (msg.ep[i].flags & kFlagDest) != 0;
    if (!has_dest)
        return 0;
    size_t len = kHdrLen + n * kEpLen;
    msg.hdr.length = static_cast<uint16_t>(len);
    return len;
}

bool decode_paths(const Msg& msg, size_t len, rdma_addrinfo* rai) {
    if (len < kHdrLen || msg.hdr.opcode != (kOpResolve | kOpAck) || msg.hdr.status)
        return false;
    size_t total = msg.hdr.length;
    if (total < kHdrLen || total > len || total > sizeof(Msg))
        return false;
    size_t count = (total - kHdrLen) / kEpLen;
    size_t paths = 0;
    for (size_t i = 0; i < count; i++)
        if (msg.ep[i].type == kTypePath)
            paths++;
    if (!paths)
        return false;
    auto* data = static_cast<ibv_path_data*>(std::calloc(paths, sizeof(ibv_path_data)));
    if (!data)
        return false;
    size_t k = 0;
    for (size_t i = 0; i < count; i++) {
        if (msg.ep[i].type != kTypePath)
            continue;
        data[k].flags = msg.ep[i].flags;
        std::memcpy(&data[k].path, msg.ep[i].info, sizeof(ibv_path_record));
        k++;
    }
    std::free(rai->ai_route);
    rai->ai_route = data;
    rai->ai_route_len = paths * sizeof(ibv_path_data);
    return true;
}

}  // namespace acm

namespace {

std::mutex g_acm_mut;

// A socket connected to ibacm, or the errno of the socket or connect call
// that failed (none running).
Result<UniqueFd> connect_ibacm() {
    // A port file means ibacm serves on loopback TCP; otherwise its UNIX
    // socket.
    int port = 0;
    for (const char* path : {"/run/ibacm.port", "/var/run/ibacm.port"}) {
        Result<std::string> text = read_file(path);
        if (!text)
            continue;
        if (!text->empty())
            port = std::atoi(text->substr(0, 15).c_str());
        break;
    }
    if (port > 0 && port < 65536) {
        UniqueFd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP));
        if (!sock)
            return last_errno();
        sockaddr_in sin{};
        sin.sin_family = AF_INET;
        sin.sin_port = htons(static_cast<uint16_t>(port));
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&sin), sizeof(sin)))
            return last_errno();
        return sock;
    }
    UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!sock)
        return last_errno();
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    std::strncpy(sun.sun_path, "/run/ibacm.sock", sizeof(sun.sun_path) - 1);
    if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&sun), sizeof(sun)))
        return last_errno();
    return sock;
}

}  // namespace

void acm_resolve(rdma_addrinfo* rai, const rdma_addrinfo& hints) {
    (void)hints;
    acm::Msg msg;
    size_t len = acm::encode_resolve(msg, *rai);
    if (!len)
        return;
    // The socket calls below leave errnos behind; rdma_getaddrinfo must not
    // show them (asking ibacm is optional and its failure silent).
    int saved_errno = errno;
    std::lock_guard lock(g_acm_mut);
    Result<UniqueFd> conn = connect_ibacm();
    if (!conn.ok()) {
        errno = saved_errno;
        return;
    }
    UniqueFd sock = std::move(conn.value());
    if (::send(sock.get(), &msg, len, MSG_NOSIGNAL) == static_cast<ssize_t>(len)) {
        // ibacm answers promptly or not at all; never hang the caller.
        pollfd pfd{sock.get(), POLLIN, 0};
        size_t got = 0;
        while (got < sizeof(msg) && ::poll(&pfd, 1, 2000) == 1) {
            ssize_t n = ::recv(sock.get(), reinterpret_cast<char*>(&msg) + got, sizeof(msg) - got, 0);
            if (n <= 0)
                break;
            got += static_cast<size_t>(n);
            if (got >= acm::kHdrLen && got >= msg.hdr.length)
                break;
        }
        acm::decode_paths(msg, got, rai);
    }
    sock.reset();
    errno = saved_errno;
}

}  // namespace rdma::cm
