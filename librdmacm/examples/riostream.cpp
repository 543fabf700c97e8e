// riostream: rstream's ping-pong with zero-copy transfers. Each side maps
// its buffer for remote writes (riomap) and the peer writes straight into
// it with riowrite; the last byte of the buffer carries a marker that
// changes with every round, and the receiver spins on it.
//
// A round: the client writes transfer_count buffers into the server's map,
// the last one with the new marker, and waits for the server's marker in
// its own map; the server, once it sees the marker, does the same in the
// other direction. Each test starts with a 16-byte rsend/rrecv exchange
// that lines the two sides up. Without -I, -C or -S the programs run the
// latency and bandwidth series of rstream, each on its own connection.
//
// Options, output and exit statuses are those of rdmacm-utils 44's
// riostream, and the two programs interoperate.

#include "stream_common.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>

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
    latency,
    bandwidth,
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
    "[-T test_option]",
    "    a|async - asynchronous operation (use poll)",
    "    b|blocking - use blocking calls",
    "    n|nonblocking - use nonblocking calls",
    "    v|verify - verify data",
};

const TestOption kTests[] = {
    {'a', "async", [](BenchConfig& c, SocketOps&) { c.use_async = true; }},
    {'b', "block", [](BenchConfig& c, SocketOps&) { c.flags = (c.flags & ~MSG_DONTWAIT) | MSG_WAITALL; }},
    {'n', "nonblock", [](BenchConfig& c, SocketOps&) { c.flags |= MSG_DONTWAIT; }},
    {'v', "verify", [](BenchConfig& c, SocketOps&) { c.verify = true; }},
};

// How many spins on the marker between two checks that the connection is
// still there (the reference spins forever when the peer is gone). A check
// polls the socket for up to a millisecond: a peer that vanished shows
// only as a CM event, which rsockets reads when a poll waits, not when it
// merely looks. 2^20 spins take milliseconds, far longer than a transfer
// of a live peer, so the check does not touch the measured figures.
constexpr unsigned long kSpinsPerCheck = 1UL << 20;

class Riostream {
public:
    int parse_and_run(int argc, char** argv) {
        parse_bench_options(argc, argv, "s:b:f:B:i:I:C:S:p:T:", kTests, kUsage, config_, ops_);
        return run();
    }

private:
    bool client() const { return config_.dst_addr != nullptr; }
    std::uint8_t* data() { return buf_.get(); }

    int run();
    int connect();
    void set_options(int fd);
    int run_test();
    int sync_test();
    int send_msg(int size);
    int recv_msg(int size);
    int send_xfer(int size);
    int recv_xfer(int size, std::uint8_t marker);

    BenchConfig config_;
    SocketOps ops_{true};
    Tuning tuning_ = Tuning::mixed;
    int listen_fd_ = -1;
    int fd_ = -1;
    std::string test_name_ = "custom";
    std::unique_ptr<std::uint8_t, decltype(&std::free)> buf_{nullptr, &std::free};
    // The byte the peer's last write of a round changes; a spare byte
    // when the transfer size leaves no room for it.
    volatile std::uint8_t* poll_byte_ = nullptr;
    std::uint8_t spare_byte_ = 0;
    PatternWriter writer_;
    PatternChecker checker_;
    timeval start_{};
    timeval end_{};
};

int Riostream::send_msg(int size) {
    pollfd pfd{.fd = fd_, .events = POLLOUT, .revents = 0};
    for (int offset = 0; offset < size;) {
        if (config_.use_async) {
            int ret = wait_ready(ops_, pfd, config_.poll_timeout);
            if (ret)
                return ret;
        }
        ssize_t ret = rsend(fd_, data() + offset, size - offset, config_.flags);
        if (ret > 0) {
            offset += ret;
        } else if (errno != EWOULDBLOCK && errno != EAGAIN) {
            std::perror("rsend");
            return ret;
        }
    }
    return 0;
}

int Riostream::recv_msg(int size) {
    pollfd pfd{.fd = fd_, .events = POLLIN, .revents = 0};
    for (int offset = 0; offset < size;) {
        if (config_.use_async) {
            int ret = wait_ready(ops_, pfd, config_.poll_timeout);
            if (ret)
                return ret;
        }
        ssize_t ret = rrecv(fd_, data() + offset, size - offset, config_.flags);
        if (ret > 0) {
            offset += ret;
        } else if (ret == 0) {
            // Closed by the peer: an error, not a retry.
            errno = ECONNRESET;
            std::perror("rrecv");
            return -1;
        } else if (errno != EWOULDBLOCK && errno != EAGAIN) {
            std::perror("rrecv");
            return ret;
        }
    }
    return 0;
}

int Riostream::send_xfer(int size) {
    pollfd pfd{.fd = fd_, .events = POLLOUT, .revents = 0};
    for (int offset = 0; offset < size;) {
        if (config_.use_async) {
            int ret = wait_ready(ops_, pfd, config_.poll_timeout);
            if (ret)
                return ret;
        }
        // riowrite returns a size_t; -1 comes back as an int.
        int ret = static_cast<int>(riowrite(fd_, data() + offset, size - offset, offset, config_.flags));
        if (ret > 0) {
            offset += ret;
        } else if (errno != EWOULDBLOCK && errno != EAGAIN) {
            std::perror("riowrite");
            return ret;
        }
    }
    return 0;
}

int Riostream::recv_xfer(int size, std::uint8_t marker) {
    for (unsigned long spins = 1; *poll_byte_ != marker; ++spins) {
        if (spins % kSpinsPerCheck)
            continue;
        pollfd pfd{.fd = fd_, .events = 0, .revents = 0};
        // The peer's last write lands before its disconnect does (one RC
        // queue): a hang-up seen right after the write arrived is no
        // error, so the marker is looked at once more first.
        if (rpoll(&pfd, 1, 1) > 0 && (pfd.revents & (POLLERR | POLLHUP)) && *poll_byte_ != marker) {
            errno = ECONNRESET;
            std::perror("rpoll");
            return -1;
        }
    }

    if (config_.verify && !checker_.check({data(), static_cast<std::size_t>(std::max(size - 1, 0))}))
        return -1;
    return 0;
}

int Riostream::sync_test() {
    int ret = client() ? send_msg(16) : recv_msg(16);
    if (ret)
        return ret;
    return client() ? recv_msg(16) : send_msg(16);
}

int Riostream::run_test() {
    const int size = config_.transfer_size;
    poll_byte_ = size > 0 ? data() + size - 1 : &spare_byte_;
    *poll_byte_ = 0xff;
    std::uint8_t marker = 0;

    off_t offset = riomap(fd_, data(), size, PROT_WRITE, 0, 0);
    if (offset == -1) {
        std::perror("riomap");
        return -1;
    }
    int ret = sync_test();
    if (ret)
        return ret;

    // The last write of a round carries the marker; with -T v the bytes
    // before it carry the pattern.
    auto send_round = [&] {
        for (int t = 0; t < config_.transfer_count - 1; t++) {
            int r = send_xfer(size);
            if (r)
                return r;
        }
        *poll_byte_ = marker++;
        if (config_.verify)
            writer_.fill({data(), static_cast<std::size_t>(std::max(size - 1, 0))});
        return send_xfer(size);
    };

    gettimeofday(&start_, nullptr);
    for (int i = 0; i < config_.iterations; i++) {
        if (client()) {
            ret = send_round();
            if (ret)
                return ret;
            ret = recv_xfer(size, marker++);
        } else {
            ret = recv_xfer(size, marker++);
            if (ret)
                return ret;
            ret = send_round();
        }
        if (ret)
            return ret;
    }
    gettimeofday(&end_, nullptr);
    print_table_row(test_name_.c_str(), size, config_.transfer_count, config_.iterations, start_, end_);
    return riounmap(fd_, data(), size);
}

// Buffer sizes, no Nagle, room for one remote mapping, the blocking mode
// and the inline size; failures are ignored as in the reference.
void Riostream::set_options(int fd) {
    int val = config_.buffer_size ? config_.buffer_size : 1 << 19;
    rsetsockopt(fd, SOL_SOCKET, SO_SNDBUF, &val, sizeof val);
    rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &val, sizeof val);

    val = 1;
    rsetsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &val, sizeof val);
    rsetsockopt(fd, SOL_RDMA, RDMA_IOMAPSIZE, &val, sizeof val);

    if (config_.flags & MSG_DONTWAIT)
        rfcntl(fd, F_SETFL, O_NONBLOCK);

    if (tuning_ == Tuning::latency) {
        rsetsockopt(fd, SOL_RDMA, RDMA_INLINE, &config_.inline_size, sizeof config_.inline_size);
    } else if (tuning_ == Tuning::bandwidth) {
        val = 0;
        rsetsockopt(fd, SOL_RDMA, RDMA_INLINE, &val, sizeof val);
    }
}

int Riostream::connect() {
    auto configure = [this](int fd) { set_options(fd); };
    if (client()) {
        // -b is accepted but the client does not bind (as in the
        // reference).
        return bench_connect(ops_, config_, false, configure, fd_);
    }
    set_options(listen_fd_);
    int ret = bench_accept(ops_, config_, listen_fd_, fd_);
    if (ret)
        return ret;
    set_options(fd_);
    return 0;
}

int Riostream::run() {
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
        // As in rstream, a failed test does not end the series.
        tuning_ = Tuning::latency;
        ret = connect();
        if (ret)
            return ret;
        for (const SeriesStep& step : kSeries) {
            if (step.all_only && !config_.size_option)
                continue;
            test_name_ = series_test_name(step.size, "lat");
            config_.transfer_count = 1;
            config_.transfer_size = step.size;
            config_.iterations = transfers_for_size(step.size);
            run_test();
        }
        rshutdown(fd_, SHUT_RDWR);
        rclose(fd_);

        tuning_ = Tuning::bandwidth;
        ret = connect();
        if (ret)
            return ret;
        for (const SeriesStep& step : kSeries) {
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
        ret = run_test();
    }

    rshutdown(fd_, SHUT_RDWR);
    rclose(fd_);
    return ret;
}

}  // namespace

int main(int argc, char** argv) {
    Riostream program;
    return program.parse_and_run(argc, argv);
}
