// Pieces shared by the ibv_*_pingpong programs: command-line parsing, the
// TCP handshake that carries each side's LID/QPN/PSN/GID, the ordered
// teardown of the verbs objects, and the report lines.
//
// The handshake text, the messages and the exit statuses are a
// compatibility contract with ibverbs-utils 44 (the programs interoperate
// with the reference's over the network and scripts read their output), so
// the formats here are fixed; see the man pages for their meaning.

#pragma once

#include <infiniband/verbs.h>

#include <getopt.h>
#include <sys/time.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace pingpong {

// Work request ids; `pending` masks are built from them.
enum : int {
    kRecvWrid = 1,
    kSendWrid = 2,
};

// One queue pair's address as the peer needs it.
struct Dest {
    int lid = 0;
    int qpn = 0;
    int psn = 0;
    ibv_gid gid{};
};

// A handshake record: "LLLL:QQQQQQ:PPPPPP:<32 hex digits of the GID>" and
// its terminating NUL, always sent whole.
inline constexpr std::size_t kWireSize = sizeof("0000:000000:000000:00000000000000000000000000000000");
using WireRecord = std::array<char, kWireSize>;

WireRecord encode_dest(const Dest& dest);
Dest decode_dest(const WireRecord& record);

// The 32 hex digits of a GID as it travels (byte order as in memory).
std::string gid_to_wire(const ibv_gid& gid);
ibv_gid gid_from_wire(const char* wire);

// The GID in IPv6 notation, as the address lines print it.
std::string gid_to_text(const ibv_gid& gid);

// Path MTU in bytes -> enum; 0 (not a valid enum value) when unsupported.
ibv_mtu mtu_from_bytes(int bytes);

// "  <label> LID 0x...., QPN 0x......, PSN 0x......<sep> GID <text>"
void print_address(const char* label, const Dest& dest, char gid_separator = ',');

// The two timing lines printed after the exchanges.
void print_throughput(const timeval& start, const timeval& end, unsigned int size, unsigned int iters);

// -c support: the sender marks the first byte of every page of the message,
// the receiving server checks the marks at the end. The mark of page p is
// p modulo sizeof(char), which is always 0; the reference does exactly
// this and a peer of ours must agree with it.
void mark_pages(char* buf, unsigned int size, long page_size);
void check_pages(const char* buf, unsigned int size, long page_size);

// An owned file descriptor.
class Socket {
public:
    Socket() = default;
    explicit Socket(int fd) : fd_(fd) {}
    Socket(Socket&& other) noexcept : fd_(other.release()) {}
    Socket& operator=(Socket&& other) noexcept;
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    ~Socket();

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    int release();

private:
    int fd_ = -1;
};

// Connects to host:port (every address getaddrinfo offers, in order).
// Prints the reason and returns an invalid socket on failure.
Socket connect_to_server(const char* host, unsigned int port);
// Binds the wildcard address of port and listens with `backlog`. Prints the
// reason ("... for port N", "Couldn't listen to port N") on failure.
Socket listen_on_port(unsigned int port, int backlog);
// Binds the wildcard address of port, waits for one client and returns its
// connection; the listening socket is closed. Prints the reason on failure.
Socket accept_one_client(unsigned int port);

// read() until len bytes, end of file or an error. Returns the byte count
// when anything arrived, otherwise what read() returned.
long read_full(int fd, void* buf, std::size_t len);
long write_full(int fd, const void* buf, std::size_t len);

// The handshake of the one-QP programs (rc, uc, ud). The client sends its
// record, reads the server's, then sends "done". The server reads the
// client's record, brings its QP up with `connect` (which reports its own
// errors), sends its record and waits for "done".
std::optional<Dest> client_exchange(const char* host, unsigned int port, const Dest& mine);
std::optional<Dest> server_exchange(unsigned int port, const Dest& mine,
                                    const std::function<bool(const Dest&)>& connect);

// The options every pingpong shares, with the reference's defaults.
struct Options {
    unsigned int port = 18515;
    const char* ib_devname = nullptr;
    int ib_port = 1;
    unsigned int size = 4096;
    ibv_mtu mtu = IBV_MTU_1024;
    unsigned int rx_depth = 500;
    unsigned int iters = 1000;
    int sl = 0;
    int use_event = 0;
    int gid_index = -1;
    bool validate_buf = false;
    const char* servername = nullptr;
};

struct ProgramSpec {
    const char* short_options;
    const option* long_options;
    // Lines of the "Options:" section of the usage text.
    std::span<const char* const> usage_lines;
    // srq rejects -s 0; the others accept it.
    bool size_must_be_positive = false;
};

void print_usage(const char* argv0, std::span<const char* const> option_lines);

// Parses argv into opts. Options outside the common set go to `extra`,
// which returns false to reject the value. Returns an exit status when the
// program must stop (after printing the usage text), nullopt otherwise.
std::optional<int> parse_options(int argc, char* argv[], const ProgramSpec& spec, Options& opts,
                                 const std::function<bool(int, const char*)>& extra = {});

struct DeviceListDeleter {
    void operator()(ibv_device** list) const { ibv_free_device_list(list); }
};
using DeviceList = std::unique_ptr<ibv_device*[], DeviceListDeleter>;

// ibv_get_device_list(); prints the reason (perror) when it fails.
DeviceList get_device_list();

// Picks the named device, or the first one. Prints why when there is none.
ibv_device* select_device(ibv_device** list, const char* name);

struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
};

// The verbs objects of one program run. close() tears them down in the
// reference's order and reports the first failure the way it does; the
// destructor releases whatever is left silently (error paths).
struct Resources {
    std::unique_ptr<char, FreeDeleter> buf;
    ibv_context* context = nullptr;
    ibv_comp_channel* channel = nullptr;
    ibv_pd* pd = nullptr;
    ibv_dm* dm = nullptr;
    ibv_mr* mr = nullptr;
    ibv_cq* cq = nullptr;
    ibv_srq* srq = nullptr;
    std::vector<ibv_qp*> qps;
    ibv_ah* ah = nullptr;
    // CQ events taken with ibv_get_cq_event and not yet acknowledged; the
    // CQ cannot be destroyed before they are.
    unsigned int unacked_cq_events = 0;
    // srq names its QPs "QP[i]" in messages.
    bool indexed_qp_names = false;

    Resources() = default;
    Resources(const Resources&) = delete;
    Resources& operator=(const Resources&) = delete;
    ~Resources();

    void ack_cq_events();
    // Returns false after printing "Couldn't destroy ..." for the first
    // object that would not go away.
    bool close();

private:
    void release_silently();
};

// The port's LID and, for gid_index >= 0, the GID at that index, into
// dest. require_lid: a port that is not Ethernet must have a LID. Returns
// false after printing the reference's message (gid_error_format takes
// the index).
bool query_local_address(ibv_context* context, const Options& opts, Dest& dest, bool require_lid,
                         const char* gid_error_format);

// -e: sleeps until the CQ has a completion event, counts it for the final
// acknowledgement and re-arms the notification. False after reporting.
bool wait_cq_event(Resources& res);

// The exchange loop of the programs with one QP and plain completions
// (uc, ud): poll (or sleep with -e), count sends and receives, refill the
// receive queue when it runs low and post the next send once both halves of
// the previous exchange completed, until `iters` of each. Returns 0 when
// done, or 1 after reporting the failure.
struct ExchangeState {
    int routs = 0;  // receives posted and not completed
    int pending = 0;  // kRecvWrid/kSendWrid still expected
    int rcnt = 0;
    int scnt = 0;
};
int run_exchanges(Resources& res, const Options& opts, int rx_depth, ExchangeState& state,
                  const std::function<int(int)>& post_recv, const std::function<int()>& post_send);

// Allocates `size` bytes aligned to a page, filled with `fill`. Prints the
// reference's message on failure.
std::unique_ptr<char, FreeDeleter> alloc_page_aligned(std::size_t size, long page_size, int fill);

// Opens the device, printing "Couldn't get context for <dev>" on failure.
ibv_context* open_device(ibv_device* dev);

// The completion channel (when events are asked for) and the PD of
// res.context, each failure reported as the reference words it.
bool open_channel_and_pd(Resources& res, bool use_event);

// Seeds lrand48 the way the reference does (pid and time) and draws PSNs.
void seed_psn();
int random_psn();

}  // namespace pingpong
