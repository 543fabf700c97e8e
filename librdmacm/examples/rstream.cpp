// rstream: a ping-pong of byte streams between a client and a server over
// rsockets (or, with -T s, the kernel's TCP), printing a table of latency
// and bandwidth figures.
//
// Without -I, -C or -S the two sides run a series: latency tests (one
// transfer each way, many iterations) of 64 bytes, 4k, 64k and 1m on one
// connection, then bandwidth tests (many transfers each way, one iteration)
// of the same sizes on a second; -S all adds the sizes in between. Any of
// -I, -C, -S <size> instead runs one custom test. Each test starts with a
// 16-byte exchange that lines the two sides up.
//
// Options, output and exit statuses are those of rdmacm-utils 44's rstream;
// the two programs interoperate (the streams carry nothing but the test
// bytes, in the order above).

#include "stream_common.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>

namespace {

using namespace stream;

enum class Tuning {
    mixed,
    latency,  // small RDMA_INLINE (-i) for the latency series
    bandwidth,  // no inline data for the bandwidth series
};

constexpr const char* kUsage[] = {
    "[-s server_address]",
    "[-b bind_address]",
    "[-f address_format]",
    "    name, ip, ipv6, or gid",
    "[-B buffer_size]",
    "[-i inline_size]",
    "[-I iterations]",
    "[-C transfer_count]",
    "[-S transfer_size or all]",
    "[-p port_number]",
    "[-k keepalive_time]",
    "[-T test_option]",
    "    s|sockets - use standard tcp/ip sockets",
    "    a|async - asynchronous operation (use poll)",
    "    b|blocking - use blocking calls",
    "    f|fork - fork server processing",
    "    n|nonblocking - use nonblocking calls",
    "    r|resolve - use rdma cm to resolve address",
    "    v|verify - verify data",
};

void blocking(BenchConfig& c, SocketOps&) { c.flags = (c.flags & ~MSG_DONTWAIT) | MSG_WAITALL; }

// Long forms are matched in this order, so "nonblock..." must not be
// caught by "block".
const TestOption kTests[] = {
    {'s', "socket", [](BenchConfig&, SocketOps& ops) { ops.use_kernel_sockets(); }},
    {'a', "async", [](BenchConfig& c, SocketOps&) { c.use_async = true; }},
    {'b', "block", blocking},
    {'n', "nonblock", [](BenchConfig& c, SocketOps&) { c.flags |= MSG_DONTWAIT; }},
    {'r', "resolve", [](BenchConfig& c, SocketOps&) { c.use_rgai = true; }},
    {'v', "verify", [](BenchConfig& c, SocketOps&) { c.verify = true; }},
    {'f', "fork",
     [](BenchConfig& c, SocketOps& ops) {
         c.use_fork = true;
         ops.use_kernel_sockets();
     }},
};

class Rstream {
public:
    int parse_and_run(int argc, char** argv) {
        parse_bench_options(argc, argv, "s:b:f:B:i:I:C:S:p:k:T:", kTests, kUsage, config_, ops_);
        return run();
    }

private:
    bool client() const { return config_.dst_addr != nullptr; }
    std::uint8_t* data() { return buf_.get(); }

    int run();
    int connect();
    int server_connect();
    void set_options(int fd);
    void set_keepalive(int fd);
    int run_test();
    int sync_test();
    int send_xfer(int size);
    int recv_xfer(int size);
    void finish_connection();

    BenchConfig config_;
    SocketOps ops_;
    Tuning tuning_ = Tuning::mixed;
    int listen_fd_ = -1;
    int fd_ = -1;
    pid_t fork_pid_ = 0;  // the server's child with -T f; 0 in the child
    std::string test_name_ = "custom";
    std::unique_ptr<std::uint8_t, decltype(&std::free)> buf_{nullptr, &std::free};
    PatternWriter writer_;
    PatternChecker checker_;
    timeval start_{};
    timeval end_{};
};

int Rstream::send_xfer(int size) {
    if (config_.verify)
        writer_.fill({data(), static_cast<std::size_t>(size)});

    pollfd pfd{.fd = fd_, .events = POLLOUT, .revents = 0};
    for (int offset = 0; offset < size;) {
        if (config_.use_async) {
            int ret = wait_ready(ops_, pfd, config_.poll_timeout);
            if (ret)
                return ret;
        }
        ssize_t ret = ops_.send(fd_, data() + offset, size - offset, config_.flags);
        if (ret > 0) {
            offset += ret;
        } else if (errno != EWOULDBLOCK && errno != EAGAIN) {
            std::perror("rsend");
            return ret;
        }
    }
    return 0;
}

int Rstream::recv_xfer(int size) {
    pollfd pfd{.fd = fd_, .events = POLLIN, .revents = 0};
    for (int offset = 0; offset < size;) {
        if (config_.use_async) {
            int ret = wait_ready(ops_, pfd, config_.poll_timeout);
            if (ret)
                return ret;
        }
        ssize_t ret = ops_.recv(fd_, data() + offset, size - offset, config_.flags);
        if (ret > 0) {
            offset += ret;
        } else if (ret == 0) {
            // The peer closed the stream in the middle of a
            // transfer: an error here, where the reference would
            // spin on a stale EAGAIN.
            errno = ECONNRESET;
            std::perror("rrecv");
            return -1;
        } else if (errno != EWOULDBLOCK && errno != EAGAIN) {
            std::perror("rrecv");
            return ret;
        }
    }

    if (config_.verify && !checker_.check({data(), static_cast<std::size_t>(size)}))
        return -1;
    return 0;
}

int Rstream::sync_test() {
    int ret = client() ? send_xfer(16) : recv_xfer(16);
    if (ret)
        return ret;
    return client() ? recv_xfer(16) : send_xfer(16);
}

int Rstream::run_test() {
    int ret = sync_test();
    if (ret)
        return ret;

    gettimeofday(&start_, nullptr);
    for (int i = 0; i < config_.iterations; i++) {
        for (int t = 0; t < config_.transfer_count; t++) {
            ret = client() ? send_xfer(config_.transfer_size) : recv_xfer(config_.transfer_size);
            if (ret)
                return ret;
        }
        for (int t = 0; t < config_.transfer_count; t++) {
            ret = client() ? recv_xfer(config_.transfer_size) : send_xfer(config_.transfer_size);
            if (ret)
                return ret;
        }
    }
    gettimeofday(&end_, nullptr);
    print_table_row(test_name_.c_str(), config_.transfer_size, config_.transfer_count, config_.iterations, start_,
                    end_);
    return 0;
}

void Rstream::set_keepalive(int fd) {
    int optval = 1;
    socklen_t optlen = sizeof optval;

    if (ops_.setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &optval, optlen)) {
        std::perror("rsetsockopt SO_KEEPALIVE");
        return;
    }

    optval = config_.keepalive;
    if (ops_.setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &optval, optlen))
        std::perror("rsetsockopt TCP_KEEPIDLE");

    if (!ops_.getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &optval, &optlen))
        std::printf("Keepalive: %s\n", optval ? "ON" : "OFF");

    if (!ops_.getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &optval, &optlen))
        std::printf("  time: %i\n", optval);
}

// Buffer sizes, no Nagle, the blocking mode and the inline size of one
// socket; failures are ignored, as not every option applies everywhere.
void Rstream::set_options(int fd) {
    int val = config_.buffer_size ? config_.buffer_size : 1 << 19;
    ops_.setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &val, sizeof val);
    ops_.setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &val, sizeof val);

    val = 1;
    ops_.setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &val, sizeof val);

    if (config_.flags & MSG_DONTWAIT)
        ops_.set_status_flags(fd, O_NONBLOCK);

    if (ops_.rdma()) {
        if (tuning_ == Tuning::latency) {
            ops_.setsockopt(fd, SOL_RDMA, RDMA_INLINE, &config_.inline_size, sizeof config_.inline_size);
        } else if (tuning_ == Tuning::bandwidth) {
            val = 0;
            ops_.setsockopt(fd, SOL_RDMA, RDMA_INLINE, &val, sizeof val);
        }
    }

    if (config_.keepalive)
        set_keepalive(fd);
}

int Rstream::server_connect() {
    set_options(listen_fd_);
    int ret = bench_accept(ops_, config_, listen_fd_, fd_);
    if (ret)
        return ret;

    // With -T f a child runs the tests; the parent only waits for it.
    if (config_.use_fork)
        fork_pid_ = fork();
    if (!fork_pid_)
        set_options(fd_);
    return 0;
}

int Rstream::connect() {
    if (!client())
        return server_connect();
    return bench_connect(
        ops_, config_, true, [this](int fd) { set_options(fd); }, fd_);
}

void Rstream::finish_connection() {
    if (fork_pid_)
        waitpid(fork_pid_, nullptr, 0);
    else
        ops_.shutdown(fd_, SHUT_RDWR);
    ops_.close(fd_);
}

int Rstream::run() {
    // The sync exchange needs 16 bytes whatever the transfer size.
    int size = config_.custom ? config_.transfer_size : kSeries.back().size;
    std::size_t bytes = size < 0 ? static_cast<std::size_t>(size) : static_cast<std::size_t>(std::max(size, 16));
    buf_.reset(static_cast<std::uint8_t*>(std::malloc(bytes)));
    if (!buf_) {
        std::perror("malloc");
        return -1;
    }

    int ret = 0;
    if (!client()) {
        ret = bench_listen(ops_, config_, listen_fd_);
        if (ret)
            return ret;
    }

    print_table_header();
    if (!config_.custom) {
        // A test that fails does not stop the series, as in the
        // reference: the next one reports on its own.
        tuning_ = Tuning::latency;
        ret = connect();
        if (ret)
            return ret;
        for (const SeriesStep& step : kSeries) {
            if (fork_pid_)
                break;
            if (step.all_only && !config_.size_option)
                continue;
            test_name_ = series_test_name(step.size, "lat");
            config_.transfer_count = 1;
            config_.transfer_size = step.size;
            config_.iterations = transfers_for_size(step.size);
            run_test();
        }
        finish_connection();

        // A forked server child is done after its half.
        if (!client() && config_.use_fork && !fork_pid_)
            return ret;

        tuning_ = Tuning::bandwidth;
        ret = connect();
        if (ret)
            return ret;
        for (const SeriesStep& step : kSeries) {
            if (fork_pid_)
                break;
            if (step.all_only && !config_.size_option)
                continue;
            test_name_ = series_test_name(step.size, "bw");
            config_.iterations = 1;
            config_.transfer_size = step.size;
            config_.transfer_count = transfers_for_size(step.size);
            run_test();
        }
    } else {
        ret = connect();
        if (ret)
            return ret;
        if (!fork_pid_)
            ret = run_test();
    }

    finish_connection();
    return ret;
}

}  // namespace

int main(int argc, char** argv) {
    Rstream program;
    return program.parse_and_run(argc, argv);
}
