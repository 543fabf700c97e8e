// Shared parts of the ibv_*_pingpong programs; see pingpong_common.h.

#include "pingpong_common.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace pingpong {

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

// Values above 2^32 wrap exactly as the reference's assignments of
// strtoul()/strtol() results to unsigned int / int do.
unsigned int parse_unsigned(const char* text) { return static_cast<unsigned int>(std::strtoul(text, nullptr, 0)); }

int parse_signed(const char* text) { return static_cast<int>(std::strtol(text, nullptr, 0)); }

}  // namespace

std::string gid_to_wire(const ibv_gid& gid) {
    std::string out;
    out.reserve(2 * sizeof(gid.raw));
    for (uint8_t byte : gid.raw) {
        out.push_back(kHexDigits[byte >> 4]);
        out.push_back(kHexDigits[byte & 0xf]);
    }
    return out;
}

ibv_gid gid_from_wire(const char* wire) {
    // Four groups of eight hex digits, each a big-endian 32-bit word; a
    // group is parsed on its own, like sscanf("%x") on an 8-byte copy.
    ibv_gid gid{};
    std::size_t avail = strnlen(wire, 32);
    for (std::size_t word = 0; word < 4; ++word) {
        char group[9] = {};
        if (word * 8 < avail)
            std::memcpy(group, wire + word * 8, std::min<std::size_t>(8, avail - word * 8));
        uint32_t value = static_cast<uint32_t>(std::strtoul(group, nullptr, 16));
        for (int b = 0; b < 4; ++b)
            gid.raw[word * 4 + b] = static_cast<uint8_t>(value >> (24 - 8 * b));
    }
    return gid;
}

WireRecord encode_dest(const Dest& dest) {
    WireRecord record{};
    std::snprintf(record.data(), record.size(), "%04x:%06x:%06x:%s", dest.lid, dest.qpn, dest.psn,
                  gid_to_wire(dest.gid).c_str());
    return record;
}

Dest decode_dest(const WireRecord& record) {
    // Guarantee a terminator even if the peer sent none.
    char text[kWireSize + 1] = {};
    std::memcpy(text, record.data(), record.size());

    Dest dest;
    char wire_gid[33] = {};
    std::sscanf(text, "%x:%x:%x:%32s", reinterpret_cast<unsigned int*>(&dest.lid),
                reinterpret_cast<unsigned int*>(&dest.qpn), reinterpret_cast<unsigned int*>(&dest.psn), wire_gid);
    dest.gid = gid_from_wire(wire_gid);
    return dest;
}

std::string gid_to_text(const ibv_gid& gid) {
    char text[INET6_ADDRSTRLEN] = {};
    inet_ntop(AF_INET6, gid.raw, text, sizeof(text));
    // The reference formats into a 33-byte buffer, so a GID whose text
    // needs more (up to 39 characters) is not printed; we print nothing
    // for it rather than stale bytes.
    if (std::strlen(text) >= 33)
        return {};
    return text;
}

ibv_mtu mtu_from_bytes(int bytes) {
    switch (bytes) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    case 4096: return IBV_MTU_4096;
    default: return static_cast<ibv_mtu>(0);
    }
}

void print_address(const char* label, const Dest& dest, char gid_separator) {
    std::printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x%c GID %s\n", label, dest.lid, dest.qpn, dest.psn,
                gid_separator, gid_to_text(dest.gid).c_str());
}

void print_throughput(const timeval& start, const timeval& end, unsigned int size, unsigned int iters) {
    // Single precision on purpose: the reference accumulates the elapsed
    // microseconds in a float, and the printed figures follow from it.
    float usec = static_cast<float>((end.tv_sec - start.tv_sec) * 1000000 + (end.tv_usec - start.tv_usec));
    long long bytes = static_cast<long long>(size) * iters * 2;

    std::printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec / 1000000., bytes * 8. / usec);
    std::printf("%d iters in %.2f seconds = %.2f usec/iter\n", static_cast<int>(iters), usec / 1000000.,
                static_cast<double>(usec / static_cast<float>(iters)));
}

void mark_pages(char* buf, unsigned int size, long page_size) {
    for (unsigned long offset = 0; offset < size; offset += page_size)
        buf[offset] = static_cast<char>((offset / page_size) % sizeof(char));
}

void check_pages(const char* buf, unsigned int size, long page_size) {
    for (unsigned long offset = 0; offset < size; offset += page_size)
        if (static_cast<unsigned long>(buf[offset]) != (offset / page_size) % sizeof(char))
            std::printf("invalid data in page %d\n", static_cast<int>(offset / page_size));
}

Socket& Socket::operator=(Socket&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = other.release();
    }
    return *this;
}

Socket::~Socket() {
    if (fd_ >= 0)
        ::close(fd_);
}

int Socket::release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
}

namespace {

struct AddrInfoDeleter {
    void operator()(addrinfo* ai) const { freeaddrinfo(ai); }
};
using AddrInfoList = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// getaddrinfo() for one side; returns its status (0 or an EAI_* code).
int resolve(const char* host, unsigned int port, bool passive, AddrInfoList& out) {
    addrinfo hints{};
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;

    std::string service = std::to_string(static_cast<int>(port));
    addrinfo* list = nullptr;
    int rc = getaddrinfo(host, service.c_str(), &hints, &list);
    out.reset(rc == 0 ? list : nullptr);
    return rc;
}

}  // namespace

Socket connect_to_server(const char* host, unsigned int port) {
    AddrInfoList addrs;
    int rc = resolve(host, port, false, addrs);
    if (rc != 0) {
        std::fprintf(stderr, "%s for %s:%d\n", gai_strerror(rc), host, static_cast<int>(port));
        return {};
    }

    for (addrinfo* ai = addrs.get(); ai; ai = ai->ai_next) {
        Socket sock(socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol));
        if (sock.valid() && connect(sock.get(), ai->ai_addr, ai->ai_addrlen) == 0)
            return sock;
    }
    std::fprintf(stderr, "Couldn't connect to %s:%d\n", host, static_cast<int>(port));
    return {};
}

Socket listen_on_port(unsigned int port, int backlog) {
    AddrInfoList addrs;
    int rc = resolve(nullptr, port, true, addrs);
    if (rc != 0) {
        std::fprintf(stderr, "%s for port %d\n", gai_strerror(rc), static_cast<int>(port));
        return {};
    }

    Socket listener;
    for (addrinfo* ai = addrs.get(); ai; ai = ai->ai_next) {
        Socket sock(socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol));
        if (!sock.valid())
            continue;
        int reuse = 1;
        setsockopt(sock.get(), SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse));
        if (bind(sock.get(), ai->ai_addr, ai->ai_addrlen) == 0) {
            listener = std::move(sock);
            break;
        }
    }
    if (!listener.valid()) {
        std::fprintf(stderr, "Couldn't listen to port %d\n", static_cast<int>(port));
        return {};
    }
    listen(listener.get(), backlog);
    return listener;
}

Socket accept_one_client(unsigned int port) {
    Socket listener = listen_on_port(port, 1);
    if (!listener.valid())
        return {};
    Socket conn(accept(listener.get(), nullptr, nullptr));
    listener = Socket();
    if (!conn.valid())
        std::fprintf(stderr, "accept() failed\n");
    return conn;
}

long read_full(int fd, void* buf, std::size_t len) {
    auto* p = static_cast<char*>(buf);
    std::size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return got ? static_cast<long>(got) : static_cast<long>(n);
        got += static_cast<std::size_t>(n);
    }
    return static_cast<long>(got);
}

long write_full(int fd, const void* buf, std::size_t len) {
    auto* p = static_cast<const char*>(buf);
    std::size_t put = 0;
    while (put < len) {
        ssize_t n = write(fd, p + put, len - put);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return put ? static_cast<long>(put) : static_cast<long>(n);
        put += static_cast<std::size_t>(n);
    }
    return static_cast<long>(put);
}

namespace {

constexpr char kDone[] = "done";

}  // namespace

std::optional<Dest> client_exchange(const char* host, unsigned int port, const Dest& mine) {
    Socket sock = connect_to_server(host, port);
    if (!sock.valid())
        return std::nullopt;

    WireRecord record = encode_dest(mine);
    if (write_full(sock.get(), record.data(), record.size()) != static_cast<long>(record.size())) {
        std::fprintf(stderr, "Couldn't send local address\n");
        return std::nullopt;
    }

    if (read_full(sock.get(), record.data(), record.size()) != static_cast<long>(record.size()) ||
        write_full(sock.get(), kDone, sizeof(kDone)) != static_cast<long>(sizeof(kDone))) {
        std::perror("client read/write");
        std::fprintf(stderr, "Couldn't read/write remote address\n");
        return std::nullopt;
    }
    return decode_dest(record);
}

std::optional<Dest> server_exchange(unsigned int port, const Dest& mine,
                                    const std::function<bool(const Dest&)>& connect) {
    Socket conn = accept_one_client(port);
    if (!conn.valid())
        return std::nullopt;

    WireRecord record{};
    long n = read_full(conn.get(), record.data(), record.size());
    if (n != static_cast<long>(record.size())) {
        std::perror("server read");
        std::fprintf(stderr, "%d/%d: Couldn't read remote address\n", static_cast<int>(n),
                     static_cast<int>(record.size()));
        return std::nullopt;
    }

    Dest remote = decode_dest(record);
    if (!connect(remote)) {
        std::fprintf(stderr, "Couldn't connect to remote QP\n");
        return std::nullopt;
    }

    record = encode_dest(mine);
    // The client answers with "done" and closes; one read takes it whole.
    WireRecord reply{};
    if (write_full(conn.get(), record.data(), record.size()) != static_cast<long>(record.size()) ||
        read(conn.get(), reply.data(), reply.size()) != static_cast<ssize_t>(sizeof(kDone))) {
        std::fprintf(stderr, "Couldn't send/recv local address\n");
        return std::nullopt;
    }
    return remote;
}

void print_usage(const char* argv0, std::span<const char* const> option_lines) {
    std::printf("Usage:\n");
    std::printf("  %s            start a server and wait for connection\n", argv0);
    std::printf("  %s <host>     connect to server at <host>\n", argv0);
    std::printf("\n");
    std::printf("Options:\n");
    for (const char* line : option_lines)
        std::printf("%s\n", line);
}

std::optional<int> parse_options(int argc, char* argv[], const ProgramSpec& spec, Options& opts,
                                 const std::function<bool(int, const char*)>& extra) {
    auto reject = [&]() -> std::optional<int> {
        print_usage(argv[0], spec.usage_lines);
        return 1;
    };

    for (;;) {
        int c = getopt_long(argc, argv, spec.short_options, spec.long_options, nullptr);
        if (c == -1)
            break;

        switch (c) {
        case 'p':
            opts.port = parse_unsigned(optarg);
            if (opts.port > 65535)
                return reject();
            break;
        case 'd': opts.ib_devname = optarg; break;
        case 'i':
            opts.ib_port = parse_signed(optarg);
            if (opts.ib_port < 1)
                return reject();
            break;
        case 's':
            opts.size = parse_unsigned(optarg);
            if (spec.size_must_be_positive && opts.size < 1)
                return reject();
            break;
        case 'm':
            opts.mtu = mtu_from_bytes(parse_signed(optarg));
            if (opts.mtu == 0)
                return reject();
            break;
        case 'r': opts.rx_depth = parse_unsigned(optarg); break;
        case 'n': opts.iters = parse_unsigned(optarg); break;
        case 'l': opts.sl = parse_signed(optarg); break;
        case 'e': ++opts.use_event; break;
        case 'g': opts.gid_index = parse_signed(optarg); break;
        case 'c': opts.validate_buf = true; break;
        default:
            // getopt_long only returns letters of short_options (or '?'),
            // so everything else is program specific.
            if (c == '?' || !extra || !extra(c, optarg))
                return reject();
            break;
        }
    }

    if (optind == argc - 1)
        opts.servername = argv[optind];
    else if (optind < argc)
        return reject();
    return std::nullopt;
}

DeviceList get_device_list() {
    DeviceList list(ibv_get_device_list(nullptr));
    if (!list)
        std::perror("Failed to get IB devices list");
    return list;
}

ibv_device* select_device(ibv_device** list, const char* name) {
    if (!name) {
        if (!list[0])
            std::fprintf(stderr, "No IB devices found\n");
        return list[0];
    }
    for (ibv_device** dev = list; *dev; ++dev)
        if (std::strcmp(ibv_get_device_name(*dev), name) == 0)
            return *dev;
    std::fprintf(stderr, "IB device %s not found\n", name);
    return nullptr;
}

Resources::~Resources() { release_silently(); }

void Resources::ack_cq_events() {
    if (cq && unacked_cq_events)
        ibv_ack_cq_events(cq, unacked_cq_events);
    unacked_cq_events = 0;
}

bool Resources::close() {
    ack_cq_events();

    for (std::size_t i = 0; i < qps.size(); ++i) {
        if (!qps[i])
            continue;
        if (ibv_destroy_qp(qps[i])) {
            if (indexed_qp_names)
                std::fprintf(stderr, "Couldn't destroy QP[%d]\n", static_cast<int>(i));
            else
                std::fprintf(stderr, "Couldn't destroy QP\n");
            return false;
        }
        qps[i] = nullptr;
    }
    qps.clear();

    // Each step: destroy, and on failure report like the reference.
    auto step = [](auto*& obj, auto destroy, const char* what) {
        if (!obj)
            return true;
        if (destroy(obj)) {
            std::fprintf(stderr, "%s\n", what);
            return false;
        }
        obj = nullptr;
        return true;
    };

    if (!step(srq, ibv_destroy_srq, "Couldn't destroy SRQ") || !step(cq, ibv_destroy_cq, "Couldn't destroy CQ") ||
        !step(mr, ibv_dereg_mr, "Couldn't deregister MR") || !step(dm, ibv_free_dm, "Couldn't free DM") ||
        !step(ah, ibv_destroy_ah, "Couldn't destroy AH") || !step(pd, ibv_dealloc_pd, "Couldn't deallocate PD") ||
        !step(channel, ibv_destroy_comp_channel, "Couldn't destroy completion channel") ||
        !step(context, ibv_close_device, "Couldn't release context"))
        return false;

    buf.reset();
    return true;
}

void Resources::release_silently() {
    ack_cq_events();
    for (ibv_qp* qp : qps)
        if (qp)
            ibv_destroy_qp(qp);
    qps.clear();
    if (srq)
        ibv_destroy_srq(srq);
    if (cq)
        ibv_destroy_cq(cq);
    if (mr)
        ibv_dereg_mr(mr);
    if (dm)
        ibv_free_dm(dm);
    if (ah)
        ibv_destroy_ah(ah);
    if (pd)
        ibv_dealloc_pd(pd);
    if (channel)
        ibv_destroy_comp_channel(channel);
    if (context)
        ibv_close_device(context);
    srq = nullptr;
    cq = nullptr;
    mr = nullptr;
    dm = nullptr;
    ah = nullptr;
    pd = nullptr;
    channel = nullptr;
    context = nullptr;
}

bool query_local_address(ibv_context* context, const Options& opts, Dest& dest, bool require_lid,
                         const char* gid_error_format) {
    ibv_port_attr port_attr{};
    if (ibv_query_port(context, static_cast<uint8_t>(opts.ib_port), &port_attr)) {
        std::fprintf(stderr, "Couldn't get port info\n");
        return false;
    }
    dest.lid = port_attr.lid;
    // RoCE ports have no LID; they are addressed by GID alone.
    if (require_lid && port_attr.link_layer != IBV_LINK_LAYER_ETHERNET && !dest.lid) {
        std::fprintf(stderr, "Couldn't get local LID\n");
        return false;
    }

    dest.gid = ibv_gid{};
    if (opts.gid_index >= 0 && ibv_query_gid(context, static_cast<uint8_t>(opts.ib_port), opts.gid_index, &dest.gid)) {
        std::fprintf(stderr, gid_error_format, opts.gid_index);
        return false;
    }
    return true;
}

bool wait_cq_event(Resources& res) {
    ibv_cq* ev_cq;
    void* ev_ctx;
    if (ibv_get_cq_event(res.channel, &ev_cq, &ev_ctx)) {
        std::fprintf(stderr, "Failed to get cq_event\n");
        return false;
    }
    ++res.unacked_cq_events;
    if (ev_cq != res.cq) {
        std::fprintf(stderr, "CQ event for unknown CQ %p\n", static_cast<void*>(ev_cq));
        return false;
    }
    if (ibv_req_notify_cq(res.cq, 0)) {
        std::fprintf(stderr, "Couldn't request CQ notification\n");
        return false;
    }
    return true;
}

int run_exchanges(Resources& res, const Options& opts, int rx_depth, ExchangeState& state,
                  const std::function<int(int)>& post_recv, const std::function<int()>& post_send) {
    const unsigned int iters = opts.iters;
    state.rcnt = state.scnt = 0;
    while (static_cast<unsigned int>(state.rcnt) < iters || static_cast<unsigned int>(state.scnt) < iters) {
        if (opts.use_event && !wait_cq_event(res))
            return 1;

        ibv_wc wc[2];
        int ne;
        do {
            ne = ibv_poll_cq(res.cq, 2, wc);
            if (ne < 0) {
                std::fprintf(stderr, "poll CQ failed %d\n", ne);
                return 1;
            }
        } while (!opts.use_event && ne < 1);

        for (int i = 0; i < ne; ++i) {
            int id = static_cast<int>(wc[i].wr_id);
            if (wc[i].status != IBV_WC_SUCCESS) {
                std::fprintf(stderr, "Failed status %s (%d) for wr_id %d\n", ibv_wc_status_str(wc[i].status),
                             wc[i].status, id);
                return 1;
            }

            switch (id) {
            case kSendWrid: ++state.scnt; break;
            case kRecvWrid:
                if (--state.routs <= 1) {
                    state.routs += post_recv(rx_depth - state.routs);
                    if (state.routs < rx_depth) {
                        std::fprintf(stderr, "Couldn't post receive (%d)\n", state.routs);
                        return 1;
                    }
                }
                ++state.rcnt;
                break;
            default: std::fprintf(stderr, "Completion for unknown wr_id %d\n", id); return 1;
            }

            state.pending &= ~id;
            if (static_cast<unsigned int>(state.scnt) < iters && !state.pending) {
                if (post_send()) {
                    std::fprintf(stderr, "Couldn't post send\n");
                    return 1;
                }
                state.pending = kRecvWrid | kSendWrid;
            }
        }
    }
    return 0;
}

std::unique_ptr<char, FreeDeleter> alloc_page_aligned(std::size_t size, long page_size, int fill) {
    void* p = nullptr;
    if (posix_memalign(&p, static_cast<std::size_t>(page_size), size) != 0 || !p) {
        std::fprintf(stderr, "Couldn't allocate work buf.\n");
        return nullptr;
    }
    std::memset(p, fill, size);
    return std::unique_ptr<char, FreeDeleter>(static_cast<char*>(p));
}

ibv_context* open_device(ibv_device* dev) {
    ibv_context* ctx = ibv_open_device(dev);
    if (!ctx)
        std::fprintf(stderr, "Couldn't get context for %s\n", ibv_get_device_name(dev));
    return ctx;
}

bool open_channel_and_pd(Resources& res, bool use_event) {
    if (use_event) {
        res.channel = ibv_create_comp_channel(res.context);
        if (!res.channel) {
            std::fprintf(stderr, "Couldn't create completion channel\n");
            return false;
        }
    }
    res.pd = ibv_alloc_pd(res.context);
    if (!res.pd) {
        std::fprintf(stderr, "Couldn't allocate PD\n");
        return false;
    }
    return true;
}

void seed_psn() { srand48(static_cast<long>(getpid()) * std::time(nullptr)); }

int random_psn() { return static_cast<int>(lrand48() & 0xffffff); }

}  // namespace pingpong
