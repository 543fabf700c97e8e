// Shared pieces of rstream, riostream and rcopy; see stream_common.h.

#include "stream_common.h"

#include <fcntl.h>
#include <getopt.h>
#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace stream {

// ------------------------------------------------------------- SocketOps

int SocketOps::open(int family, int type, int protocol) const {
    if (!rdma_)
        return ::socket(family, type, protocol);
    int fd = rsocket(family, type, protocol);
    if (fd < 0) {
        // Without an RDMA device rsockets fails stream sockets with
        // ENODEV; say so plainly instead of "No such device".
        if (type == SOCK_STREAM && errno == ENODEV)
            std::fprintf(stderr, "No RDMA devices were detected\n");
        else
            std::perror("rsocket failed");
    }
    return fd;
}

int SocketOps::bind(int fd, const sockaddr* addr, socklen_t len) const {
    return rdma_ ? rbind(fd, addr, len) : ::bind(fd, addr, len);
}

int SocketOps::listen(int fd, int backlog) const { return rdma_ ? rlisten(fd, backlog) : ::listen(fd, backlog); }

int SocketOps::connect(int fd, const sockaddr* addr, socklen_t len) const {
    return rdma_ ? rconnect(fd, addr, len) : ::connect(fd, addr, len);
}

int SocketOps::accept(int fd, sockaddr* addr, socklen_t* len) const {
    return rdma_ ? raccept(fd, addr, len) : ::accept(fd, addr, len);
}

int SocketOps::shutdown(int fd, int how) const { return rdma_ ? rshutdown(fd, how) : ::shutdown(fd, how); }

int SocketOps::close(int fd) const { return rdma_ ? rclose(fd) : ::close(fd); }

ssize_t SocketOps::send(int fd, const void* buf, std::size_t len, int flags) const {
    return rdma_ ? rsend(fd, buf, len, flags) : ::send(fd, buf, len, flags);
}

ssize_t SocketOps::recv(int fd, void* buf, std::size_t len, int flags) const {
    return rdma_ ? rrecv(fd, buf, len, flags) : ::recv(fd, buf, len, flags);
}

int SocketOps::poll(pollfd* fds, nfds_t count, int timeout) const {
    return rdma_ ? rpoll(fds, count, timeout) : ::poll(fds, count, timeout);
}

int SocketOps::set_status_flags(int fd, int flags) const {
    return rdma_ ? rfcntl(fd, F_SETFL, flags) : ::fcntl(fd, F_SETFL, flags);
}

int SocketOps::setsockopt(int fd, int level, int name, const void* value, socklen_t len) const {
    return rdma_ ? rsetsockopt(fd, level, name, value, len) : ::setsockopt(fd, level, name, value, len);
}

int SocketOps::getsockopt(int fd, int level, int name, void* value, socklen_t* len) const {
    return rdma_ ? rgetsockopt(fd, level, name, value, len) : ::getsockopt(fd, level, name, value, len);
}

int wait_ready(const SocketOps& ops, pollfd& fd, int timeout) {
    int ret;
    // A zero timeout (the non-blocking modes) makes this a busy wait, as
    // intended: the benchmarks measure the transport, not the scheduler.
    do {
        ret = ops.poll(&fd, 1, timeout);
    } while (ret == 0);
    if (ret == 1)
        return fd.revents & (POLLERR | POLLHUP);
    return ret;
}

// ------------------------------------------------------------- notation

namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

std::string format(const char* fmt, ...) {
    char text[64];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    return text;
}

}  // namespace

std::string size_text(long long size) {
    struct Magnitude {
        long long base;
        const char* suffix;
    };
    static constexpr Magnitude kMagnitudes[] = {
        {1LL << 30, "g"},
        {1LL << 20, "m"},
        {1LL << 10, "k"},
        {1, ""},
    };
    Magnitude unit = kMagnitudes[3];
    for (const Magnitude& m : kMagnitudes) {
        if (size >= m.base) {
            unit = m;
            break;
        }
    }
    long long whole = size / unit.base;
    long long tenths = whole < 10 ? (size % unit.base) * 10 / unit.base : 0;
    if (tenths)
        return format("%lld.%lld%s", whole, tenths, unit.suffix);
    return format("%lld%s", whole, unit.suffix);
}

std::string count_text(long long count) {
    if (count >= 1000000000)
        return format("%lldb", count / 1000000000);
    if (count >= 1000000)
        return format("%lldm", count / 1000000);
    if (count >= 1000)
        return format("%lldk", count / 1000);
    return format("%lld", count);
}

int transfers_for_size(int size) {
    if (size >= (1 << 20))
        return 100;
    if (size >= (1 << 16))
        return 1000;
    if (size >= (1 << 10))
        return 10000;
    return 100000;
}

// -------------------------------------------------------------- pattern

void PatternWriter::fill(std::span<std::uint8_t> bytes) {
    for (std::uint8_t& b : bytes)
        b = next_++;
}

bool PatternChecker::check(std::span<const std::uint8_t> bytes) {
    for (std::uint8_t b : bytes) {
        if (b != next_++) {
            std::printf("data verification failed byte %lld\n", checked_);
            return false;
        }
        ++checked_;
    }
    return true;
}

// ---------------------------------------------------------------- table

// Powers of two from 64 bytes to 4 MiB and the sizes halfway between; only
// 64, 4k, 64k and 1m run unless -S all asks for every one.
const std::array<SeriesStep, 33> kSeries = [] {
    std::array<SeriesStep, 33> steps{};
    steps[0] = {1 << 6, false};
    std::size_t i = 1;
    for (int shift = 7; shift <= 22; ++shift) {
        bool headline = shift == 12 || shift == 16 || shift == 20;
        steps[i++] = {1 << shift, !headline};
        steps[i++] = {(1 << shift) + (1 << (shift - 1)), true};
    }
    return steps;
}();

void print_table_header() {
    std::printf("%-10s%-8s%-8s%-8s%-8s%8s %10s%13s\n", "name", "bytes", "xfers", "iters", "total", "time", "Gb/sec",
                "usec/xfer");
}

void print_table_row(const char* name, int transfer_size, int transfer_count, int iterations, const timeval& start,
                     const timeval& end) {
    // Single precision, like the reference, so both print the same
    // figures for the same interval.
    float usec = (end.tv_sec - start.tv_sec) * 1000000 + (end.tv_usec - start.tv_usec);
    long long bytes = static_cast<long long>(iterations) * transfer_count * transfer_size * 2;

    std::printf("%-10s", name);
    std::printf("%-8s", size_text(transfer_size).c_str());
    std::printf("%-8s", count_text(transfer_count).c_str());
    std::printf("%-8s", count_text(iterations).c_str());
    std::printf("%-8s", size_text(bytes).c_str());
    std::printf("%8.2fs%10.2f%11.2f\n", usec / 1000000., (bytes * 8) / (1000. * usec),
                (usec / iterations) / (transfer_count * 2));
}

std::string series_test_name(int size, const char* suffix) {
    // The size is cut to four characters and the name to nine, the
    // buffers the reference formats them into.
    std::string name = size_text(size).substr(0, 4) + "_" + suffix;
    return name.substr(0, 9);
}

// -------------------------------------------------------- command line

namespace {

[[noreturn]] void usage_exit(const char* program, std::span<const char* const> usage) {
    std::printf("usage: %s\n", program);
    for (const char* line : usage)
        std::printf("\t%s\n", line);
    std::exit(1);
}

bool apply_test_option(const char* arg, std::span<const TestOption> tests, BenchConfig& config, SocketOps& ops) {
    if (std::strlen(arg) == 1) {
        for (const TestOption& t : tests) {
            if (t.letter == arg[0]) {
                t.apply(config, ops);
                return true;
            }
        }
        return false;
    }
    for (const TestOption& t : tests) {
        if (!strncasecmp(t.prefix, arg, std::strlen(t.prefix))) {
            t.apply(config, ops);
            return true;
        }
    }
    return false;
}

}  // namespace

void parse_bench_options(int argc, char** argv, const char* optstring, std::span<const TestOption> tests,
                         std::span<const char* const> usage, BenchConfig& config, SocketOps& ops) {
    config.ai_hints.ai_socktype = SOCK_STREAM;
    config.rai_hints.ai_port_space = RDMA_PS_TCP;

    int op;
    while ((op = getopt(argc, argv, optstring)) != -1) {
        switch (op) {
        case 's': config.dst_addr = optarg; break;
        case 'b': config.src_addr = optarg; break;
        case 'f':
            // "ipv6" takes the "ip" branch; "name" is the default
            // and still draws the warning, as in the reference.
            if (!strncasecmp("ip", optarg, 2)) {
                config.ai_hints.ai_flags = AI_NUMERICHOST;
            } else if (!strncasecmp("gid", optarg, 3)) {
                config.rai_hints.ai_flags = RAI_NUMERICHOST | RAI_FAMILY;
                config.rai_hints.ai_family = AF_IB;
                config.use_rgai = true;
            } else {
                std::fprintf(stderr, "Warning: unknown address format\n");
            }
            break;
        case 'B': config.buffer_size = std::atoi(optarg); break;
        case 'i': config.inline_size = std::atoi(optarg); break;
        case 'I':
            config.custom = true;
            config.iterations = std::atoi(optarg);
            break;
        case 'C':
            config.custom = true;
            config.transfer_count = std::atoi(optarg);
            break;
        case 'S':
            if (!strncasecmp("all", optarg, 3)) {
                config.size_option = 1;
            } else {
                config.custom = true;
                config.transfer_size = std::atoi(optarg);
            }
            break;
        case 'p': config.port = optarg; break;
        case 'k': config.keepalive = std::atoi(optarg); break;
        case 'T':
            if (apply_test_option(optarg, tests, config, ops))
                break;
            usage_exit(argv[0], usage);
        default: usage_exit(argv[0], usage);
        }
    }

    if (!(config.flags & MSG_DONTWAIT))
        config.poll_timeout = -1;
}

// ------------------------------------------------------ listen/connect

namespace {

// The result of getaddrinfo or rdma_getaddrinfo, whichever -T r / -f gid
// chose; frees itself.
class Resolved {
public:
    Resolved() = default;
    Resolved(const Resolved&) = delete;
    Resolved& operator=(const Resolved&) = delete;
    ~Resolved() {
        if (rai_)
            rdma_freeaddrinfo(rai_);
        if (ai_)
            freeaddrinfo(ai_);
    }

    int resolve(bool rdma, const char* node, const char* service, rdma_addrinfo& rai_hints, addrinfo& ai_hints) {
        if (rdma)
            return rdma_getaddrinfo(node, service, &rai_hints, &rai_);
        return getaddrinfo(node, service, &ai_hints, &ai_);
    }

    int family() const { return rai_ ? rai_->ai_family : ai_->ai_family; }
    const sockaddr* source() const { return rai_ ? rai_->ai_src_addr : ai_->ai_addr; }
    socklen_t source_len() const { return rai_ ? rai_->ai_src_len : ai_->ai_addrlen; }
    const sockaddr* destination() const { return rai_ ? rai_->ai_dst_addr : ai_->ai_addr; }
    socklen_t destination_len() const { return rai_ ? rai_->ai_dst_len : ai_->ai_addrlen; }
    const rdma_addrinfo* rdma() const { return rai_; }

private:
    rdma_addrinfo* rai_ = nullptr;
    addrinfo* ai_ = nullptr;
};

}  // namespace

int bench_listen(const SocketOps& ops, BenchConfig& config, int& fd) {
    if (config.use_rgai)
        config.rai_hints.ai_flags |= RAI_PASSIVE;
    else
        config.ai_hints.ai_flags |= AI_PASSIVE;

    Resolved res;
    int ret = res.resolve(config.use_rgai, config.src_addr, config.port, config.rai_hints, config.ai_hints);
    if (ret) {
        std::printf("getaddrinfo: %s\n", gai_strerror(ret));
        return ret;
    }

    fd = ops.open(res.family(), SOCK_STREAM, 0);
    if (fd < 0)
        return fd;

    int val = 1;
    ret = ops.setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &val, sizeof val);
    if (ret) {
        std::perror("rsetsockopt SO_REUSEADDR");
    } else {
        ret = ops.bind(fd, res.source(), res.source_len());
        if (ret) {
            std::perror("rbind");
        } else {
            ret = ops.listen(fd, 1);
            if (ret)
                std::perror("rlisten");
        }
    }
    if (ret)
        ops.close(fd);
    return ret;
}

int bench_connect(const SocketOps& ops, BenchConfig& config, bool bind_source,
                  const std::function<void(int)>& configure, int& fd) {
    Resolved dst;
    int ret = dst.resolve(config.use_rgai, config.dst_addr, config.port, config.rai_hints, config.ai_hints);
    if (ret) {
        std::printf("getaddrinfo: %s\n", gai_strerror(ret));
        return ret;
    }

    // The passive flag stays in the hints for the next connection too,
    // as it does in the reference.
    Resolved src;
    bool bind_to_source = bind_source && config.src_addr;
    if (bind_to_source) {
        if (config.use_rgai)
            config.rai_hints.ai_flags |= RAI_PASSIVE;
        else
            config.ai_hints.ai_flags |= AI_PASSIVE;
        ret = src.resolve(config.use_rgai, config.src_addr, config.port, config.rai_hints, config.ai_hints);
        if (ret) {
            std::printf("getaddrinfo src_addr: %s\n", gai_strerror(ret));
            return ret;
        }
    }

    fd = ops.open(dst.family(), SOCK_STREAM, 0);
    if (fd < 0)
        return fd;

    configure(fd);

    auto fail = [&](const char* what) {
        if (what)
            std::perror(what);
        ops.close(fd);
        return ret;
    };

    if (bind_to_source) {
        ret = ops.bind(fd, src.source(), src.source_len());
        if (ret)
            return fail("rbind");
    }

    if (const rdma_addrinfo* rai = dst.rdma(); rai && rai->ai_route) {
        ret = ops.setsockopt(fd, SOL_RDMA, RDMA_ROUTE, rai->ai_route, rai->ai_route_len);
        if (ret)
            return fail("rsetsockopt RDMA_ROUTE");
    }

    ret = ops.connect(fd, dst.destination(), dst.destination_len());
    if (ret && errno != EINPROGRESS)
        return fail("rconnect");

    if (ret) {
        // A non-blocking connect: wait until it is writable, then
        // read how it ended.
        pollfd pfd{.fd = fd, .events = POLLOUT, .revents = 0};
        ret = wait_ready(ops, pfd, config.poll_timeout);
        if (ret)
            return fail("rpoll");

        int err = 0;
        socklen_t len = sizeof err;
        ret = ops.getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (ret)
            return fail(nullptr);
        if (err) {
            ret = -1;
            errno = err;
            return fail("async rconnect");
        }
    }
    return 0;
}

int bench_accept(const SocketOps& ops, const BenchConfig& config, int listen_fd, int& fd) {
    do {
        if (config.use_async) {
            pollfd pfd{.fd = listen_fd, .events = POLLIN, .revents = 0};
            int ret = wait_ready(ops, pfd, config.poll_timeout);
            if (ret) {
                std::perror("rpoll");
                return ret;
            }
        }
        fd = ops.accept(listen_fd, nullptr, nullptr);
    } while (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    if (fd < 0) {
        std::perror("raccept");
        return fd;
    }
    return 0;
}

}  // namespace stream
