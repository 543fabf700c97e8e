// Pieces shared by the stream programs of librdmacm (rstream, riostream,
// rcopy): the switch between rsockets and the kernel's sockets, the size
// and count notation of the result table, the data pattern of the verify
// option, the poll loop, and the listen/connect steps of the two
// benchmarks; and, for rdma_server/client and rdma_xserver/xclient, owners
// of the rdma_cm objects.
//
// What these print (messages, the table layout, the "No RDMA devices were
// detected" hint) and the order in which they call the socket functions are
// a compatibility contract with rdmacm-utils 44: scripts read the output,
// and the errno a failing call reports depends on which rsocket calls came
// before it.

#pragma once

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace stream {

// Owners of the rdma_cm objects of rdma_server/client and rdma_xserver/
// xclient. Declared in the order of creation, they release in the reverse
// order, as the reference's cleanup paths do.
struct AddrInfoRelease {
    void operator()(rdma_addrinfo* res) const { rdma_freeaddrinfo(res); }
};
using AddrInfoPtr = std::unique_ptr<rdma_addrinfo, AddrInfoRelease>;

struct EndpointRelease {
    void operator()(rdma_cm_id* id) const { rdma_destroy_ep(id); }
};
using EndpointPtr = std::unique_ptr<rdma_cm_id, EndpointRelease>;

struct MemoryRegionRelease {
    void operator()(ibv_mr* mr) const { rdma_dereg_mr(mr); }
};
using MemoryRegionPtr = std::unique_ptr<ibv_mr, MemoryRegionRelease>;

// Disconnects an endpoint when it goes out of scope.
class ConnectionGuard {
public:
    explicit ConnectionGuard(rdma_cm_id* id) : id_(id) {}
    ConnectionGuard(const ConnectionGuard&) = delete;
    ConnectionGuard& operator=(const ConnectionGuard&) = delete;
    ~ConnectionGuard() { rdma_disconnect(id_); }

private:
    rdma_cm_id* id_;
};

// Every socket call of the programs goes through one of these, so that
// rstream -T s (and -T f) can run the same code over the kernel's TCP.
class SocketOps {
public:
    explicit SocketOps(bool rdma = true) : rdma_(rdma) {}

    bool rdma() const { return rdma_; }
    void use_kernel_sockets() { rdma_ = false; }

    // socket(); over rsockets a failure is reported on stderr (a missing
    // device with its own hint), as every program of the suite does.
    int open(int family, int type, int protocol) const;
    int bind(int fd, const sockaddr* addr, socklen_t len) const;
    int listen(int fd, int backlog) const;
    int connect(int fd, const sockaddr* addr, socklen_t len) const;
    int accept(int fd, sockaddr* addr, socklen_t* len) const;
    int shutdown(int fd, int how) const;
    int close(int fd) const;
    ssize_t send(int fd, const void* buf, std::size_t len, int flags) const;
    ssize_t recv(int fd, void* buf, std::size_t len, int flags) const;
    int poll(pollfd* fds, nfds_t count, int timeout) const;
    int set_status_flags(int fd, int flags) const;  // fcntl(F_SETFL)
    int setsockopt(int fd, int level, int name, const void* value, socklen_t len) const;
    int getsockopt(int fd, int level, int name, void* value, socklen_t* len) const;

private:
    bool rdma_;
};

// Polls one descriptor until something happens. Returns 0 when it is ready
// without error, its POLLERR/POLLHUP bits when it is not, or poll's -1.
int wait_ready(const SocketOps& ops, pollfd& fd, int timeout);

// "64", "1.5k", "4k", "12m": a size in bytes with a binary magnitude, one
// decimal below ten units.
std::string size_text(long long size);
// "100", "10k", "1m", "2b": a count with a decimal magnitude, truncated.
std::string count_text(long long count);
// How many transfers (or iterations) a test of `size` bytes runs.
int transfers_for_size(int size);

// The byte pattern of the verify option: consecutive values, wrapping at
// 256, continued across calls. The sender fills, the receiver checks.
class PatternWriter {
public:
    void fill(std::span<std::uint8_t> bytes);

private:
    std::uint8_t next_ = 0;
};

class PatternChecker {
public:
    // Prints "data verification failed byte N" (N counted over the whole
    // run) and returns false at the first byte that does not match.
    bool check(std::span<const std::uint8_t> bytes);

private:
    std::uint8_t next_ = 0;
    long long checked_ = 0;
};

// The sizes of the default series: the entries marked all_only run only
// with -S all.
struct SeriesStep {
    int size;
    bool all_only;
};
extern const std::array<SeriesStep, 33> kSeries;

// The result table.
void print_table_header();
void print_table_row(const char* name, int transfer_size, int transfer_count, int iterations, const timeval& start,
                     const timeval& end);
// "64_lat", "1.5k_bw": a series test's name, at most nine characters.
std::string series_test_name(int size, const char* suffix);

// Settings of rstream and riostream, as their command lines give them.
struct BenchConfig {
    const char* dst_addr = nullptr;  // set on the client only
    const char* src_addr = nullptr;
    const char* port = "7471";
    rdma_addrinfo rai_hints{};
    addrinfo ai_hints{};
    bool use_rgai = false;  // resolve with rdma_getaddrinfo
    bool use_async = false;
    bool verify = false;
    bool use_fork = false;
    int flags = MSG_DONTWAIT;
    int poll_timeout = 0;
    bool custom = false;
    int size_option = 0;
    int iterations = 1;
    int transfer_size = 1000;
    int transfer_count = 1000;
    int buffer_size = 0;
    int inline_size = 64;
    int keepalive = 0;
};

// One -T word: its one-letter form and the prefix its long form must
// start with (case-insensitively), and what it changes.
struct TestOption {
    char letter;
    const char* prefix;
    std::function<void(BenchConfig&, SocketOps&)> apply;
};

// Parses the command line of rstream/riostream (getopt string `optstring`,
// the -T words in `tests`); prints `usage` and exits 1 on a bad option.
void parse_bench_options(int argc, char** argv, const char* optstring, std::span<const TestOption> tests,
                         std::span<const char* const> usage, BenchConfig& config, SocketOps& ops);

// The listening socket of the server, bound to -b (or any address) and the
// port. Returns 0 and the socket in `fd`, or the error (reported).
int bench_listen(const SocketOps& ops, BenchConfig& config, int& fd);

// The client's connection: resolves -s (and -b when bind_source), opens a
// socket, applies `configure` to it, binds, sets the resolved route, and
// connects, waiting for a non-blocking connect to finish. Returns 0 and
// the socket in `fd`, or the error (reported; the socket is closed).
int bench_connect(const SocketOps& ops, BenchConfig& config, bool bind_source,
                  const std::function<void(int)>& configure, int& fd);

// The server's side: accepts one connection, polling first with -T a and
// retrying while a non-blocking listener has none yet. Returns 0 and the
// socket in `fd`, or the error (reported).
int bench_accept(const SocketOps& ops, const BenchConfig& config, int listen_fd, int& fd);

}  // namespace stream
