// Internals of rsockets shared by rsocket*.cpp. The exported r* functions
// (rsocket.cpp) look an index up in the fd table and call a Socket method.
//
// Errors inside are values (util/result.h): a method or helper that can
// fail returns Status or Result<T> carrying a positive errno, read from
// errno right after the system, libibverbs or rdma_* call that failed, and
// sets no errno itself; the exported function turns it into -1 with errno
// through its util/c_entry.h barrier (entry_minus_one), the one place
// rsockets write errno. A failure a call absorbs (recorded in the
// connection's state, reported by rpoll as POLLERR, dropped on the service
// thread) leaves errno as the C calls below left it. Methods called from an
// entry point may throw (an allocation failure is std::bad_alloc, reported
// as ENOMEM). Code that also runs on the service thread (accepting,
// datagram address handles) reports failures as values instead: nothing
// there may be left half done.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "util/result.h"
#include "util/unique_fd.h"

#define RSOCKET_EXPORT extern "C" __attribute__((visibility("default")))

namespace rdma::rs {

// Owners shared by the stream and datagram sockets: a registered memory
// region (deregistered once) and a file descriptor (util/unique_fd.h).
struct MrDeleter {
    void operator()(ibv_mr* mr) const {
        if (mr)
            ibv_dereg_mr(mr);
    }
};
using MrPtr = std::unique_ptr<ibv_mr, MrDeleter>;
using Fd = rdma::UniqueFd;

// ------------------------------------------------------------------ config

// Administrator defaults, one integer per file under the configuration
// directory (rsocket(7)); the built-in values are the reference's.
struct Config {
    uint32_t polling_time = 10;  // microseconds to spin before sleeping
    uint32_t wake_up_interval = 5000;  // longest single sleep in rpoll, ms
    uint16_t inline_default = 64;
    uint16_t sqsize_default = 384;
    uint16_t rqsize_default = 384;
    uint32_t mem_default = 1 << 17;  // receive buffer bytes
    uint32_t wmem_default = 1 << 17;  // send buffer bytes
    uint16_t iomap_size = 0;  // remote iomap entries
};

// Reads the files present in `dir`; missing or unparsable files keep the
// defaults. Clamps as the reference does.
Config read_config(const std::string& dir);
// The process-wide configuration (read once, from RSOCKET_CONF_DIR).
const Config& config();

// Parses a file's text the way scanf("%u") would (leading blanks, optional
// sign, digits; negative values wrap); nullopt-like false when no digits.
bool parse_config_value(const std::string& text, uint32_t& out);

// --------------------------------------------------------------- constants

constexpr uint32_t kSendLowWater = 2048;  // RS_SNDLOWAT: smallest useful send space
constexpr uint32_t kFirstTransfer = 2048;  // first chunk of a large send
constexpr uint32_t kMaxTransfer = 65536;  // chunks grow up to this
constexpr uint16_t kQpMinSize = 16;
constexpr uint16_t kQpMaxSize = 0xfffe;
constexpr uint32_t kCtrlSlots = 4;  // control messages in flight (power of 2)
constexpr int kConnRetries = 6;  // address/route resolution retries

// --------------------------------------------------------------- fd table

// Maps small non-negative ints (fds) to objects. Lookups are lock-free;
// updates are serialized. Holds up to 2^20 entries in lazily allocated pages.
template <class T>
class FdTable {
public:
    static constexpr int kPageBits = 10;
    static constexpr int kPageSize = 1 << kPageBits;
    static constexpr int kPages = 1024;
    static constexpr int kMaxIndex = kPageSize * kPages - 1;

    FdTable() = default;
    FdTable(const FdTable&) = delete;
    FdTable& operator=(const FdTable&) = delete;

    T* get(int index) const {
        if (index < 0 || index > kMaxIndex)
            return nullptr;
        std::atomic<T*>* page = pages_[index >> kPageBits].load(std::memory_order_acquire);
        return page ? page[index & (kPageSize - 1)].load(std::memory_order_acquire) : nullptr;
    }

    // False when out of range, out of memory, or already taken.
    bool insert(int index, T* value) {
        if (index < 0 || index > kMaxIndex || !value)
            return false;
        std::lock_guard<std::mutex> lk(mu_);
        int p = index >> kPageBits;
        std::atomic<T*>* page = pages_[p].load(std::memory_order_relaxed);
        if (!page) {
            // std::atomic value-initializes (C++20): every slot starts null.
            owners_[p].reset(new (std::nothrow) std::atomic<T*>[kPageSize]);
            if (!owners_[p])
                return false;
            page = owners_[p].get();
            pages_[p].store(page, std::memory_order_release);
        }
        auto& entry = page[index & (kPageSize - 1)];
        if (entry.load(std::memory_order_relaxed))
            return false;
        entry.store(value, std::memory_order_release);
        return true;
    }

    // Removes and returns the entry (nullptr if there was none).
    T* erase(int index) {
        if (index < 0 || index > kMaxIndex)
            return nullptr;
        std::lock_guard<std::mutex> lk(mu_);
        std::atomic<T*>* page = pages_[index >> kPageBits].load(std::memory_order_relaxed);
        return page ? page[index & (kPageSize - 1)].exchange(nullptr, std::memory_order_acq_rel) : nullptr;
    }

private:
    // Pages are published through pages_ for lock-free readers and owned by
    // owners_; neither changes once set.
    std::array<std::atomic<std::atomic<T*>*>, kPages> pages_{};
    std::array<std::unique_ptr<std::atomic<T*>[]>, kPages> owners_ {};
    std::mutex mu_;
};

// ------------------------------------------------------------ service thread

// One background thread for work that must happen while the application is
// not calling us: accepting connections on listening rsockets, keepalives,
// and datagram address resolution. Handlers run on that thread; remove()
// returns only once the handler is not running and will not run again.
class Service {
public:
    using Handler = std::function<void()>;
    static Service& get();
    Service() = default;  // use get()

    // Registers `fd` (level-triggered, readable); returns a token > 0.
    Result<long> add(int fd, Handler on_readable);
    void remove(long token);
    bool on_service_thread() const;

private:
    struct Impl;
    // Starts the thread on first use; when it cannot, says why (the next
    // call tries again: one failed allocation must not disable listening
    // sockets for the life of the process).
    Result<Impl*> impl();
    std::mutex start_mu_;
    std::atomic<Impl*> impl_{nullptr};
};

// Name the service thread carries: librspreload leaves sockets this thread
// creates (inside libibverbs/librdmacm) to the kernel.
constexpr const char* kServiceThreadName = "rsocket-svc";

// ----------------------------------------------------------------- helpers

// The errno a C call that just failed left, as a value; `fallback` stands
// in should it have left none. Read it right after that call.
inline Errno errno_or(int fallback) noexcept { return Errno{errno ? errno : fallback}; }

// A work request's post (ibv_post_send, ibv_post_recv): 0 or a positive
// errno; anything else, which no provider of ours returns, reads as EIO.
inline Status post_status(int r) noexcept { return r ? Status(Errno{r > 0 ? r : EIO}) : Status(); }

// Stand-ins for system calls, with their convention (-1 and errno): the
// caller reads errno right after, as after the call they replace.
// raw_socket creates a kernel socket without going through an interposed
// socket() (librspreload would otherwise turn our own UDP socket into an
// rsocket); the poll and epoll calls go through entry points librspreload
// does not interpose (ppoll, raw syscalls): our own waits must reach the
// kernel directly.
int raw_socket(int domain, int type, int protocol);
int sys_poll(pollfd* fds, nfds_t nfds, int timeout_ms);
int sys_epoll_create();
int sys_epoll_ctl(int epfd, int op, int fd, struct epoll_event* ev);
int sys_epoll_wait(int epfd, struct epoll_event* evs, int max, int timeout_ms);

// Sets or clears O_NONBLOCK on a kernel fd.
Status set_nonblocking(int fd, bool on);

// One protection domain per device for rsockets whose cm_id has none.
Result<ibv_pd*> device_pd(rdma_cm_id* id);

socklen_t sockaddr_length(const sockaddr* sa);

// Copies an address out the way getsockname() does: truncates to *len and
// reports the full length.
void copy_sockaddr_out(const sockaddr* src, sockaddr* dst, socklen_t* len);

// A microsecond clock for the spin-before-sleep loops.
uint64_t now_us();

// ------------------------------------------------------------------ sockets

enum class Kind { Stream, Dgram };

class Socket {
public:
    explicit Socket(Kind kind) : kind_(kind) {}
    virtual ~Socket() = default;
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;

    Kind kind() const { return kind_; }
    int index() const { return index_; }
    // Distinguishes a socket from a later one that reuses its index.
    uint64_t serial() const { return serial_; }

    virtual Status bind(const sockaddr* addr, socklen_t len) = 0;
    virtual Status listen(int backlog) = 0;
    // The accepted socket (the caller registers its index).
    virtual Result<std::unique_ptr<Socket>> accept() = 0;
    virtual Status connect(const sockaddr* addr, socklen_t len) = 0;
    // Byte counts.
    virtual Result<ssize_t> recv(const iovec* iov, int iovcnt, int flags, sockaddr* src, socklen_t* srclen) = 0;
    virtual Result<ssize_t> send(const iovec* iov, int iovcnt, int flags, const sockaddr* dst, socklen_t dstlen) = 0;
    virtual Status shutdown(int how) = 0;
    // Graceful part of rclose (the destructor releases resources).
    virtual void close() = 0;
    virtual Status getpeername(sockaddr* addr, socklen_t* len) = 0;
    virtual Status getsockname(sockaddr* addr, socklen_t* len) = 0;
    virtual Status setsockopt(int level, int name, const void* val, socklen_t len) = 0;
    virtual Status getsockopt(int level, int name, void* val, socklen_t* len) = 0;
    // The rfcntl flag word: whatever F_SETFL stored last.
    virtual int get_flags() = 0;
    virtual void set_flags(int flags) = 0;
    // The offset the mapping is known by.
    virtual Result<off_t> iomap(void* buf, size_t len, int prot, int flags, off_t offset) { return Errno{EINVAL}; }
    virtual Status iounmap(void* buf, size_t len) { return Errno{EINVAL}; }
    virtual Result<ssize_t> iowrite(const void* buf, size_t count, off_t offset, int flags) { return Errno{EINVAL}; }

    // rpoll support. check(): nonblocking progress, then the revents the
    // socket can report now. sleep_fds(): after a check found nothing,
    // prepares a wake-up and names up to two kernel fds to sleep on; returns
    // their number (0: something became ready meanwhile, check again).
    // woken(): one of those fds fired.
    virtual short poll_check(short events) = 0;
    virtual int poll_sleep_fds(pollfd* fds) = 0;
    virtual void poll_woken() = 0;

protected:
    int index_ = -1;

private:
    Kind kind_;
    uint64_t serial_ = next_serial();
    static uint64_t next_serial() {
        static std::atomic<uint64_t> n{1};
        return n.fetch_add(1, std::memory_order_relaxed);
    }
};

// Creates the socket objects (rsocket_stream.cpp / rsocket_dgram.cpp).
Result<std::unique_ptr<Socket>> create_stream_socket(int domain);
Result<std::unique_ptr<Socket>> create_dgram_socket(int domain);

// The table of live rsockets by index (rsocket.cpp).
FdTable<Socket>& sockets();

// rclose() of an index that is a repoll set rather than a socket
// (rsocket_poll.cpp); EBADF when it is not one either.
Status close_repoll(int index);

}  // namespace rdma::rs
