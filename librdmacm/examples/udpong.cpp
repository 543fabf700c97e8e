// udpong: a datagram ping-pong between a client and a server over datagram
// rsockets (or, with -T s, the kernel's UDP), printing latency and
// bandwidth figures.
//
// The server binds one datagram socket and answers every client that
// writes to it; it runs until killed. The client logs in, then runs either
// a series (latency tests with echoed messages, then one-way bandwidth
// tests, of 64 bytes to 1.5k) or, with -C or -S, one custom test. Each test
// starts and ends with a 16-byte control message; the end message comes
// back with the number of messages the server counted, which is what the
// bandwidth figures are made of (datagrams may be lost).
//
// Options, messages, the table, the message layout on the wire and exit
// statuses are those of rdmacm-utils 44's udpong, so the two interoperate.

#include "stream_common.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace stream;

// The series: 64 bytes, then each power of two and the point halfway to
// the next one, up to 1.5k (a message must fit one datagram).
constexpr std::array<int, 9> kSizes = {64, 128, 192, 256, 384, 512, 768, 1024, 1536};

// The first byte of every message says what it is.
enum Op : std::uint8_t {
    op_login = 0,  // first message of a client; the answer carries its id
    op_start = 1,  // a test begins: the server clears the client's count
    op_data = 2,  // counted, not answered
    op_echo = 3,  // counted and sent back
    op_end = 4,  // answered with the count, big-endian, in `data`
};

// The layout on the wire: four bytes of header, the count, then payload.
struct Message {
    std::uint8_t op;
    std::uint8_t id;
    std::uint8_t seqno;
    std::uint8_t reserved;
    std::uint32_t data;
    std::uint8_t payload[2048];
};
static_assert(sizeof(Message) == 2056);

constexpr int kControlSize = 16;

union SocketAddress {
    sockaddr sa;
    sockaddr_in sin;
    sockaddr_in6 sin6;
    sockaddr_storage storage;
};

struct Config {
    const char* dst_addr = nullptr;
    const char* src_addr = nullptr;
    const char* port = "7174";
    bool use_async = false;
    int flags = MSG_DONTWAIT;
    int poll_timeout = 0;
    bool custom = false;
    bool echo = false;
    int transfer_size = 1000;
    int transfer_count = 1000;
    int buffer_size = 0;
};

SocketOps ops;
Config cfg;
int sock = -1;

// Socket buffers of -B (512k by default) and the non-blocking mode.
void set_options(int fd) {
    int size = cfg.buffer_size ? cfg.buffer_size : (1 << 19);
    ops.setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    ops.setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    if (cfg.flags & MSG_DONTWAIT)
        ops.set_status_flags(fd, O_NONBLOCK);
}

ssize_t socket_sendto(int fd, const void* buf, std::size_t len, const sockaddr* to, socklen_t tolen) {
    return ops.rdma() ? rsendto(fd, buf, len, cfg.flags, to, tolen) : ::sendto(fd, buf, len, cfg.flags, to, tolen);
}

ssize_t socket_recvfrom(int fd, void* buf, std::size_t len, sockaddr* from, socklen_t* fromlen) {
    return ops.rdma() ? rrecvfrom(fd, buf, len, cfg.flags, from, fromlen)
                      : ::recvfrom(fd, buf, len, cfg.flags, from, fromlen);
}

// Retries a call while it would block, polling first with -T a. Returns
// the call's result, or poll's answer when that is not "ready".
template <typename Call>
ssize_t retry(short events, Call call) {
    pollfd pfd{sock, events, 0};
    ssize_t ret;
    do {
        if (cfg.use_async) {
            ret = wait_ready(ops, pfd, cfg.poll_timeout);
            if (ret)
                return ret;
        }
        ret = call();
    } while (ret < 0 && (errno == EWOULDBLOCK || errno == EAGAIN));
    return ret;
}

// ------------------------------------------------------------------ server

struct ServerState {
    std::array<std::uint64_t, 256> received{};
    std::uint8_t next_id = 0;
    Message msg{};
};

int server_bind() {
    addrinfo hints{};
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* res = nullptr;
    int ret = getaddrinfo(cfg.src_addr, cfg.port, &hints, &res);
    if (ret) {
        std::printf("getaddrinfo: %s\n", gai_strerror(ret));
        return ret;
    }
    sock = ops.open(res->ai_family, res->ai_socktype, res->ai_protocol);
    if (sock < 0) {
        ret = sock;
    } else {
        set_options(sock);
        ret = ops.bind(sock, res->ai_addr, res->ai_addrlen);
        if (ret) {
            std::perror("rbind");
            ops.close(sock);
        }
    }
    freeaddrinfo(res);
    return ret;
}

// Handles one received message of `size` bytes (a failed receive passes
// its result through unchanged, as the reference does). Returns 0 to go on.
int server_process(ServerState& st, std::size_t size, const SocketAddress& from, socklen_t fromlen) {
    Message& msg = st.msg;
    switch (msg.op) {
    case op_login: {
        char text[64];
        const void* where = from.sa.sa_family == AF_INET ? static_cast<const void*>(&from.sin.sin_addr)
                                                         : static_cast<const void*>(&from.sin6.sin6_addr);
        std::printf("client login from %s\n",
                    inet_ntop(from.sa.sa_family == AF_INET ? AF_INET : AF_INET6, where, text, sizeof text));
        msg.id = st.next_id++;
        st.received[msg.id] = 0;
        break;
    }
    case op_start: st.received[msg.id] = 0; break;
    case op_echo: st.received[msg.id]++; break;
    case op_end: msg.data = htonl(static_cast<std::uint32_t>(st.received[msg.id])); break;
    default: st.received[msg.id]++; return 0;
    }
    ssize_t sent = retry(POLLOUT, [&] { return socket_sendto(sock, &msg, size, &from.sa, fromlen); });
    if (sent < 0)
        std::perror("rsend");
    return static_cast<std::size_t>(sent) == size ? 0 : static_cast<int>(sent);
}

int server_run() {
    ServerState st;
    int ret = server_bind();
    while (!ret) {
        SocketAddress from{};
        socklen_t fromlen = sizeof from;
        ssize_t len = retry(POLLIN, [&] { return socket_recvfrom(sock, &st.msg, sizeof st.msg, &from.sa, &fromlen); });
        if (len < 0)
            std::perror("rrecv");
        ret = server_process(st, static_cast<std::size_t>(len), from, fromlen);
    }
    return ret;
}

// ------------------------------------------------------------------ client

struct ClientState {
    // The message at the front, and room for -S sizes beyond it.
    std::vector<std::uint8_t> storage;
    std::uint8_t seqno = 0;
    std::string name = "custom";
    int size = 0;
    int count = 0;
    bool echo = false;
    timeval start{}, end{};

    Message& msg() { return *reinterpret_cast<Message*>(storage.data()); }
};

ssize_t client_send(ClientState& cs, std::size_t size) {
    ssize_t ret = retry(POLLOUT, [&] { return ops.send(sock, cs.storage.data(), size, cfg.flags); });
    if (ret < 0)
        std::perror("rsend");
    return ret;
}

// Waits up to `timeout` ms for an answer, then takes one if there is any.
// Returns 0 when none came.
ssize_t client_recv(ClientState& cs, std::size_t size, int timeout) {
    if (timeout) {
        pollfd pfd{sock, POLLIN, 0};
        int ret = ops.poll(&pfd, 1, timeout);
        if (ret <= 0)
            return ret;
    }
    ssize_t ret = ops.recv(sock, cs.storage.data(), size, cfg.flags | MSG_DONTWAIT);
    if (ret < 0 && errno != EWOULDBLOCK && errno != EAGAIN)
        std::perror("rrecv");
    return ret;
}

// Sends until the answer with this message's sequence number comes back.
ssize_t client_send_recv(ClientState& cs, std::size_t size, int timeout) {
    const std::uint8_t seqno = cs.seqno;
    ssize_t ret;
    cs.msg().seqno = seqno;
    do {
        ret = client_send(cs, size);
        if (ret != static_cast<ssize_t>(size))
            return ret;
        ret = client_recv(cs, size, timeout);
    } while (ret <= 0 || cs.msg().seqno != seqno);
    cs.seqno++;
    return ret;
}

void show_perf(ClientState& cs) {
    float usec = (cs.end.tv_sec - cs.start.tv_sec) * 1000000 + (cs.end.tv_usec - cs.start.tv_usec);
    int transfers = cs.echo ? cs.count * 2 : static_cast<int>(ntohl(cs.msg().data));
    long long bytes = static_cast<long long>(transfers) * cs.size;

    std::printf("%-10s", cs.name.c_str());
    std::printf("%-8s", size_text(cs.size).c_str());
    std::printf("%-8s", count_text(transfers).c_str());
    std::printf("%-8s", size_text(bytes).c_str());
    std::printf("%8.2fs%10.2f%11.2f\n", usec / 1000000., (bytes * 8) / (1000. * usec), (usec / transfers));
}

// One test; a failure ends it quietly (the series goes on).
void run_test(ClientState& cs) {
    const std::size_t size = static_cast<std::size_t>(cs.size);
    cs.msg().op = op_start;
    if (client_send_recv(cs, kControlSize, 1000) != kControlSize)
        return;

    cs.msg().op = cs.echo ? op_echo : op_data;
    gettimeofday(&cs.start, nullptr);
    for (int i = 0; i < cs.count; i++) {
        ssize_t ret = cs.echo ? client_send_recv(cs, size, 1) : client_send(cs, size);
        if (ret != static_cast<ssize_t>(size))
            return;
    }

    cs.msg().op = op_end;
    if (client_send_recv(cs, kControlSize, 1) != kControlSize)
        return;
    gettimeofday(&cs.end, nullptr);
    show_perf(cs);
}

int client_connect(ClientState& cs) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* res = nullptr;
    int ret = getaddrinfo(cfg.dst_addr, cfg.port, &hints, &res);
    if (ret) {
        std::printf("getaddrinfo: %s\n", gai_strerror(ret));
        return ret;
    }
    sock = ops.open(res->ai_family, res->ai_socktype, res->ai_protocol);
    if (sock < 0) {
        freeaddrinfo(res);
        return sock;
    }
    set_options(sock);
    ret = ops.connect(sock, res->ai_addr, res->ai_addrlen);
    if (ret) {
        if (errno == ENODEV)
            std::fprintf(stderr, "No RDMA devices were detected\n");
        else
            std::perror("rconnect");
        ops.close(sock);
        freeaddrinfo(res);
        return ret;
    }
    freeaddrinfo(res);

    cs.msg().op = op_login;
    ssize_t got = client_send_recv(cs, kControlSize, 1000);
    return got == kControlSize ? 0 : static_cast<int>(got);
}

int client_run() {
    std::printf("%-10s%-8s%-8s%-8s%8s %10s%13s\n", "name", "bytes", "xfers", "total", "time", "Gb/sec", "usec/xfer");

    ClientState cs;
    cs.storage.assign(std::max<std::size_t>(sizeof(Message), static_cast<std::size_t>(std::max(cfg.transfer_size, 0))),
                      0);
    int ret = client_connect(cs);
    if (ret)
        return ret;

    if (!cfg.custom) {
        for (int size : kSizes) {
            cs.name = series_test_name(size, "lat");
            cs.size = size;
            cs.count = transfers_for_size(size) / 10;
            cs.echo = true;
            run_test(cs);
        }
        for (int size : kSizes) {
            cs.name = series_test_name(size, "bw");
            cs.size = size;
            cs.count = transfers_for_size(size);
            cs.echo = false;
            run_test(cs);
        }
    } else {
        cs.size = cfg.transfer_size;
        cs.count = cfg.transfer_count;
        cs.echo = cfg.echo;
        run_test(cs);
    }
    ops.close(sock);
    return ret;
}

// ------------------------------------------------------------------ options

// A -T word: one letter, or a word that starts with the option's full name.
bool set_test_option(const char* arg) {
    struct Word {
        char letter;
        const char* name;
        void (*apply)();
    };
    static const Word words[] = {
        {'s', "socket", [] { ops.use_kernel_sockets(); }},
        {'a', "async", [] { cfg.use_async = true; }},
        {'b', "block", [] { cfg.flags = 0; }},
        {'n', "nonblock", [] { cfg.flags = MSG_DONTWAIT; }},
        {'e', "echo", [] { cfg.echo = true; }},
    };
    const bool single = std::strlen(arg) == 1;
    for (const Word& w : words) {
        if (single ? arg[0] == w.letter : strncasecmp(w.name, arg, std::strlen(w.name)) == 0) {
            w.apply();
            return true;
        }
    }
    return false;
}

[[noreturn]] void usage(const char* program) {
    static const char* const lines[] = {
        "\t[-s server_address]",
        "\t[-b bind_address]",
        "\t[-B buffer_size]",
        "\t[-C transfer_count]",
        "\t[-S transfer_size]",
        "\t[-p port_number]",
        "\t[-T test_option]",
        "\t    s|sockets - use standard tcp/ip sockets",
        "\t    a|async - asynchronous operation (use poll)",
        "\t    b|blocking - use blocking calls",
        "\t    n|nonblocking - use nonblocking calls",
        "\t    e|echo - server echoes all messages",
    };
    std::printf("usage: %s\n", program);
    for (const char* line : lines)
        std::printf("%s\n", line);
    std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
    int op;
    while ((op = getopt(argc, argv, "s:b:B:C:S:p:T:")) != -1) {
        switch (op) {
        case 's': cfg.dst_addr = optarg; break;
        case 'b': cfg.src_addr = optarg; break;
        case 'B': cfg.buffer_size = std::atoi(optarg); break;
        case 'C':
            cfg.custom = true;
            cfg.transfer_count = std::atoi(optarg);
            break;
        case 'S':
            cfg.custom = true;
            cfg.transfer_size = std::atoi(optarg);
            if (cfg.transfer_size < kControlSize) {
                std::printf("size must be at least %d bytes\n", kControlSize);
                std::exit(1);
            }
            break;
        case 'p': cfg.port = optarg; break;
        case 'T':
            if (set_test_option(optarg))
                break;
            usage(argv[0]);
        default: usage(argv[0]);
        }
    }

    // As in the reference: a poll, where one is made, waits without limit
    // unless -T b made the calls blocking (then it spins).
    if (cfg.flags)
        cfg.poll_timeout = -1;

    return cfg.dst_addr ? client_run() : server_run();
}
