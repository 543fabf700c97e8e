// The emulated rdma_cm: the kernel's ucma (the write ABI of
// /dev/infiniband/rdma_cm, rdma_user_cm.h) over the emulated devices, and
// the IB CM protocol (REQ/REP/RTU/REJ/DREQ/DREP, SIDR for UD) between the
// processes of one simulated host.
//
// Addresses: each port has an IPv4 address (configuration key `ipv4`;
// Ethernet ports default to 10.79.0.x, InfiniBand ports to 10.80.0.x, as
// IPoIB would give them), its GIDs for IPv6 and AF_IB. Every port of a
// simulated host is on one fabric, so any of these addresses resolves from
// any port; anything else has no route (ENETUNREACH), as on a host whose
// only networks are the RDMA ones.
//
// Port spaces are host-wide, as the kernel's are per network namespace: the
// bound ports live in <run_dir>/cm/ports (one file per port space and port,
// one line per owner, under an flock), so a REQ finds its listener in
// another process and two processes cannot bind one port. Owners whose
// process is gone are dropped as they are seen, as the kernel releases
// them when the process's file closes.
//
// CM messages travel as wire packets (kFlagCm) to the process slot of the
// peer, subject to the drop_every fault; REQ, REP, DREQ and SIDR_REQ are
// retransmitted after the CM's response timeout, up to its retry count. A
// peer process that dies is noticed within ~200 ms and answered as its
// kernel would have on closing its file (DREQ for a connection, REJ for
// one being set up).
#include "ucma.h"

#include "sim.h"
#include "wire.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <deque>
#include <fcntl.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <random>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_cm.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace uvsim {

namespace {

// ----------------------------------------------------------- ABI facts

constexpr int kAfIb = 27;  // AF_IB
constexpr uint32_t kUdpQkey = 0x01234567;  // RDMA_UDP_QKEY

// sockaddr_ib (rdma/ib.h): the AF_IB address.
struct SockaddrIb {
    uint16_t sib_family;
    uint16_t sib_pkey;  // big endian
    uint32_t sib_flowinfo;
    uint8_t sib_addr[16];
    uint64_t sib_sid;  // big endian
    uint64_t sib_sid_mask;
    uint64_t sib_scope_id;
};
static_assert(sizeof(SockaddrIb) == 48);

enum CmEventType : uint32_t {
    EV_ADDR_RESOLVED = 0,
    EV_ADDR_ERROR = 1,
    EV_ROUTE_RESOLVED = 2,
    EV_ROUTE_ERROR = 3,
    EV_CONNECT_REQUEST = 4,
    EV_CONNECT_RESPONSE = 5,
    EV_CONNECT_ERROR = 6,
    EV_UNREACHABLE = 7,
    EV_REJECTED = 8,
    EV_ESTABLISHED = 9,
    EV_DISCONNECTED = 10,
    EV_DEVICE_REMOVAL = 11,
    EV_MULTICAST_JOIN = 12,
    EV_MULTICAST_ERROR = 13,
    EV_ADDR_CHANGE = 14,
    EV_TIMEWAIT_EXIT = 15,
};

// Private data the CM messages carry, less the rdma_cm header (36 bytes)
// where the REQ carries one.
constexpr uint8_t kReqPd = 92 - 36, kRepPd = 196, kRejPd = 148, kSidrReqPd = 216 - 36, kSidrRepPd = 136;

// REJ reasons and SIDR statuses (IB spec, the kernel's ib_cm_rej_reason).
constexpr uint8_t kRejTimeout = 1, kRejInvalidServiceId = 8, kRejConsumerDefined = 28;
constexpr uint8_t kSidrSuccess = 0, kSidrUnsupported = 1, kSidrReject = 2;

// The CM's timers: response timeout 2^20 * 4.096 us (~4.3 s), 15 retries
// (rdma_cm's CMA_CM_RESPONSE_TIMEOUT and CMA_MAX_CM_RETRIES); RoCE paths
// have a packet lifetime of 16, IB paths 18 (what opensm hands out).
constexpr uint64_t kCmTimeoutNs = 4096ull << 20;
constexpr int kCmRetries = 15;
constexpr uint64_t kTimewaitNs = 500000000ull;
constexpr uint64_t kLivenessNs = 200000000ull;

uint64_t mono_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// ------------------------------------------------------------- addresses

using Addr = sockaddr_storage;

socklen_t addr_size(const Addr& a) {
    switch (a.ss_family) {
    case AF_INET: return sizeof(sockaddr_in);
    case AF_INET6: return sizeof(sockaddr_in6);
    case kAfIb: return sizeof(SockaddrIb);
    default: return 0;
    }
}

const sockaddr_in& in4(const Addr& a) { return reinterpret_cast<const sockaddr_in&>(a); }
const sockaddr_in6& in6(const Addr& a) { return reinterpret_cast<const sockaddr_in6&>(a); }
const SockaddrIb& ib(const Addr& a) { return reinterpret_cast<const SockaddrIb&>(a); }

uint16_t addr_port(const Addr& a) {
    switch (a.ss_family) {
    case AF_INET: return ntohs(in4(a).sin_port);
    case AF_INET6: return ntohs(in6(a).sin6_port);
    case kAfIb: return static_cast<uint16_t>(be64toh(ib(a).sib_sid) & 0xffff);
    default: return 0;
    }
}

void set_port(Addr& a, uint16_t port) {
    switch (a.ss_family) {
    case AF_INET: reinterpret_cast<sockaddr_in&>(a).sin_port = htons(port); break;
    case AF_INET6: reinterpret_cast<sockaddr_in6&>(a).sin6_port = htons(port); break;
    case kAfIb: {
        auto& s = reinterpret_cast<SockaddrIb&>(a);
        s.sib_sid = htobe64((be64toh(s.sib_sid) & ~0xffffull) | port);
        s.sib_sid_mask = htobe64(~0ull);
        break;
    }
    default: break;
    }
}

// The 16 address bytes (IPv4 as a v4-mapped IPv6 address, as rdma_cm
// turns it into a GID).
void addr_gid(const Addr& a, uint8_t g[16]) {
    memset(g, 0, 16);
    switch (a.ss_family) {
    case AF_INET:
        g[10] = g[11] = 0xff;
        memcpy(g + 12, &in4(a).sin_addr, 4);
        break;
    case AF_INET6: memcpy(g, &in6(a).sin6_addr, 16); break;
    case kAfIb: memcpy(g, ib(a).sib_addr, 16); break;
    default: break;
    }
}

bool addr_any(const Addr& a) {
    uint8_t g[16];
    addr_gid(a, g);
    if (a.ss_family == AF_INET)
        return in4(a).sin_addr.s_addr == 0;
    static const uint8_t zero[16] = {};
    return memcmp(g, zero, 16) == 0;
}

bool addr_same(const Addr& a, const Addr& b) {
    uint8_t x[16], y[16];
    addr_gid(a, x);
    addr_gid(b, y);
    return memcmp(x, y, 16) == 0;
}

bool addr_mcast(const Addr& a) {
    if (a.ss_family == AF_INET)
        return (ntohl(in4(a).sin_addr.s_addr) >> 28) == 0xe;
    if (a.ss_family == AF_INET6)
        return in6(a).sin6_addr.s6_addr[0] == 0xff;
    if (a.ss_family == kAfIb)
        return ib(a).sib_addr[0] == 0xff;
    return false;
}

std::string addr_text(const Addr& a) {
    uint8_t g[16];
    addr_gid(a, g);
    char b[64];
    if (a.ss_family == AF_INET)
        snprintf(b, sizeof b, "%u.%u.%u.%u:%u", g[12], g[13], g[14], g[15], addr_port(a));
    else
        snprintf(b, sizeof b, "%s[%02x%02x..%02x%02x]:%u", a.ss_family == kAfIb ? "ib" : "in6", g[0], g[1], g[14],
                 g[15], addr_port(a));
    return b;
}

// A device port of the simulated host.
struct Where {
    int dev = -1;
    uint8_t port = 0;
    bool ok() const { return dev >= 0; }
};

const PortCfg& port_of(const Where& w) { return cfg().devices[w.dev].ports[w.port - 1]; }

// The GID the port has for the address (RoCE: the RoCE v2 entry of its IP;
// IB: GID 0) and its index.
bool port_gid(const Where& w, const Addr& a, uint8_t gid[16], uint8_t& index) {
    const PortCfg& p = port_of(w);
    if (!p.ethernet || a.ss_family == kAfIb) {
        if (p.gids.empty())
            return false;
        memcpy(gid, p.gids[0].gid, 16);
        index = 0;
        if (p.ethernet) {
            for (size_t i = 0; i < p.gids.size(); ++i)
                if (p.gids[i].type == 1) {
                    memcpy(gid, p.gids[i].gid, 16);
                    index = static_cast<uint8_t>(i);
                    break;
                }
        }
        return true;
    }
    uint8_t want[16];
    addr_gid(a, want);
    for (size_t i = 0; i < p.gids.size(); ++i)
        if (p.gids[i].type == 1 && memcmp(p.gids[i].gid, want, 16) == 0) {
            memcpy(gid, want, 16);
            index = static_cast<uint8_t>(i);
            return true;
        }
    return false;
}

bool port_up(const Where& w) {
    const Device& d = sim().devices[w.dev];
    return !d.removed && w.port <= d.port_state.size() && d.port_state[w.port - 1] == IBV_PORT_ACTIVE;
}

// The port an address of the simulated host belongs to.
Where find_local(const Addr& a) {
    const auto& devs = cfg().devices;
    uint8_t g[16];
    addr_gid(a, g);
    // an IPv4 address, or one mapped into IPv6 (::ffff:a.b.c.d)
    const bool v4 = a.ss_family != kAfIb && gid_v4mapped(g);
    for (size_t d = 0; d < devs.size(); ++d) {
        if (sim().devices[d].removed)
            continue;
        for (size_t p = 0; p < devs[d].ports.size(); ++p) {
            const PortCfg& pc = devs[d].ports[p];
            if (v4 && pc.ipv4) {
                uint32_t ip;
                memcpy(&ip, g + 12, 4);
                if (ntohl(ip) == pc.ipv4)
                    return {static_cast<int>(d), static_cast<uint8_t>(p + 1)};
                continue;
            }
            if (a.ss_family == AF_INET)
                continue;
            for (const GidEntry& e : pc.gids)
                if (memcmp(e.gid, g, 16) == 0)
                    return {static_cast<int>(d), static_cast<uint8_t>(p + 1)};
        }
    }
    return {};
}

// An IP address of this machine's own (non-emulated) interfaces.
bool host_address(const Addr& a) {
    if (a.ss_family != AF_INET && a.ss_family != AF_INET6)
        return false;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0)
        return false;
    bool found = false;
    for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != a.ss_family)
            continue;
        if (a.ss_family == AF_INET)
            found = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == in4(a).sin_addr.s_addr;
        else
            found = memcmp(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, &in6(a).sin6_addr, 16) == 0;
    }
    freeifaddrs(list);
    return found;
}

// The first active port with an address of the family (routes to "any"
// and to multicast groups leave through it).
Where default_port(int family) {
    const auto& devs = cfg().devices;
    for (size_t d = 0; d < devs.size(); ++d)
        for (size_t p = 0; p < devs[d].ports.size(); ++p) {
            Where w{static_cast<int>(d), static_cast<uint8_t>(p + 1)};
            if (!port_up(w))
                continue;
            if (family == AF_INET && !devs[d].ports[p].ipv4)
                continue;
            return w;
        }
    return {};
}

// The port's own address in the family (for "any" destinations).
Addr port_addr(const Where& w, int family) {
    Addr a{};
    const PortCfg& p = port_of(w);
    a.ss_family = static_cast<sa_family_t>(family);
    if (family == AF_INET) {
        reinterpret_cast<sockaddr_in&>(a).sin_addr.s_addr = htonl(p.ipv4);
    } else {
        uint8_t g[16] = {}, idx = 0;
        Addr v4{};
        v4.ss_family = AF_INET;
        reinterpret_cast<sockaddr_in&>(v4).sin_addr.s_addr = htonl(p.ipv4);
        port_gid(w, v4, g, idx);
        if (family == AF_INET6)
            memcpy(&reinterpret_cast<sockaddr_in6&>(a).sin6_addr, g, 16);
        else
            memcpy(reinterpret_cast<SockaddrIb&>(a).sib_addr, g, 16);
    }
    return a;
}

// --------------------------------------------------------------- paths

// What an SA path record (IB) or the RoCE route says between two ports.
struct Path {
    uint8_t sgid[16] = {}, dgid[16] = {};
    uint16_t slid = 0, dlid = 0;
    uint16_t pkey = 0xffff;
    uint8_t mtu = IBV_MTU_1024;
    uint8_t rate = 0;
    uint8_t plt = 16;
    uint8_t hop_limit = 0;
    uint8_t tclass = 0;
    uint8_t sl = 0;
    uint8_t sgid_index = 0;
    bool roce = false;
};

// ib_rate of a port (width x lane speed).
uint8_t port_rate(const PortCfg& p) {
    int lanes = 4;
    switch (p.width) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: break;
    }
    double g = 25;
    switch (p.speed) {
    case 1: g = 2.5; break;
    case 2: g = 5; break;
    case 4: g = 10; break;
    case 8: g = 10; break;
    case 16: g = 14; break;
    case 32: g = 25; break;
    case 64: g = 50; break;
    case 128: g = 100; break;
    default: break;
    }
    const int total = static_cast<int>(lanes * g + 0.5);
    static const std::pair<int, uint8_t> rates[] = {{2, 2},    {3, 2},    {5, 5},    {10, 3},   {14, 11},  {20, 6},
                                                    {25, 15},  {28, 19},  {30, 4},   {40, 7},   {50, 20},  {56, 12},
                                                    {60, 8},   {80, 9},   {100, 16}, {112, 13}, {120, 10}, {168, 14},
                                                    {200, 17}, {300, 18}, {400, 21}, {600, 22}};
    for (const auto& [gbps, code] : rates)
        if (gbps == total)
            return code;
    return 0;
}

Path make_path(const Where& src, const Addr& saddr, const Where& dst, const Addr& daddr, uint8_t tos) {
    Path p;
    const PortCfg& s = port_of(src);
    const PortCfg& d = port_of(dst);
    p.roce = s.ethernet;
    uint8_t di = 0;
    port_gid(src, saddr, p.sgid, p.sgid_index);
    if (addr_mcast(daddr))
        addr_gid(daddr, p.dgid);
    else
        port_gid(dst, daddr, p.dgid, di);
    p.mtu = std::min(s.active_mtu, d.active_mtu);
    p.rate = port_rate(s);
    p.tclass = tos;
    if (p.roce) {
        p.hop_limit = 64;
        p.plt = 16;
    } else {
        p.slid = s.lid;
        p.dlid = d.lid;
        p.plt = 18;
    }
    return p;
}

Path reversed(const Path& p) {
    Path r = p;
    memcpy(r.sgid, p.dgid, 16);
    memcpy(r.dgid, p.sgid, 16);
    r.slid = p.dlid;
    r.dlid = p.slid;
    return r;
}

void to_user_path(const Path& p, ib_user_path_rec& u) {
    memset(&u, 0, sizeof u);
    memcpy(u.dgid, p.dgid, 16);
    memcpy(u.sgid, p.sgid, 16);
    u.dlid = htobe16(p.dlid);
    u.slid = htobe16(p.slid);
    u.reversible = 1;
    u.mtu = p.mtu;
    u.pkey = htobe16(p.pkey);
    u.hop_limit = p.hop_limit;
    u.traffic_class = p.tclass;
    u.numb_path = 1;
    u.sl = p.sl;
    u.mtu_selector = 2;  // exactly
    u.rate_selector = 2;
    u.rate = p.rate;
    u.packet_life_time_selector = 2;
    u.packet_life_time = p.plt;
}

// The SA PathRecord attribute as it travels (64 bytes, big endian).
void pack_path(const Path& p, uint64_t service_id, uint8_t out[64]) {
    memset(out, 0, 64);
    const uint64_t sid = htobe64(service_id);
    memcpy(out, &sid, 8);
    memcpy(out + 8, p.dgid, 16);
    memcpy(out + 24, p.sgid, 16);
    const uint16_t dl = htobe16(p.dlid), sl = htobe16(p.slid);
    memcpy(out + 40, &dl, 2);
    memcpy(out + 42, &sl, 2);
    const uint32_t fl = htobe32(p.hop_limit);  // raw_traffic 0, flow label 0
    memcpy(out + 44, &fl, 4);
    out[48] = p.tclass;
    out[49] = 0x80 | 1;  // reversible, one path
    const uint16_t pk = htobe16(p.pkey);
    memcpy(out + 50, &pk, 2);
    out[53] = p.sl & 0xf;
    out[54] = static_cast<uint8_t>((2 << 6) | p.mtu);
    out[55] = static_cast<uint8_t>((2 << 6) | p.rate);
    out[56] = static_cast<uint8_t>((2 << 6) | p.plt);
}

bool unpack_path(const uint8_t in[64], Path& p) {
    memcpy(p.dgid, in + 8, 16);
    memcpy(p.sgid, in + 24, 16);
    uint16_t v;
    memcpy(&v, in + 40, 2);
    p.dlid = be16toh(v);
    memcpy(&v, in + 42, 2);
    p.slid = be16toh(v);
    uint32_t fl;
    memcpy(&fl, in + 44, 4);
    p.hop_limit = static_cast<uint8_t>(be32toh(fl) & 0xff);
    p.tclass = in[48];
    memcpy(&v, in + 50, 2);
    p.pkey = be16toh(v);
    p.sl = in[53] & 0xf;
    p.mtu = in[54] & 0x3f;
    p.rate = in[55] & 0x3f;
    p.plt = in[56] & 0x3f;
    return p.mtu >= IBV_MTU_256 && p.mtu <= IBV_MTU_4096;
}

void to_ah_attr(const Path& p, uint8_t port, ib_uverbs_ah_attr& ah) {
    memset(&ah, 0, sizeof ah);
    ah.dlid = p.dlid;
    ah.sl = p.sl;
    ah.static_rate = p.rate;
    ah.port_num = port;
    if (p.roce || p.hop_limit > 1 || p.dgid[0] == 0xff) {
        ah.is_global = 1;
        memcpy(ah.grh.dgid, p.dgid, 16);
        ah.grh.sgid_index = p.sgid_index;
        ah.grh.hop_limit = p.hop_limit ? p.hop_limit : 1;
        ah.grh.traffic_class = p.tclass;
    }
}

// ------------------------------------------------- the wire's CM message

enum MsgType : uint8_t { M_REQ = 1, M_REP, M_RTU, M_REJ, M_DREQ, M_DREP, M_SIDR_REQ, M_SIDR_REP };

const char* msg_name(uint8_t t) {
    static const char* const n[] = {"?", "REQ", "REP", "RTU", "REJ", "DREQ", "DREP", "SIDR_REQ", "SIDR_REP"};
    return t < 9 ? n[t] : "?";
}

struct CmMsg {
    uint8_t type;
    uint8_t reason;  // REJ reason, SIDR_REP status
    uint8_t resp_res, init_depth, retry, rnr_retry, flow_control, srq;
    uint8_t src_port, dst_port;  // device ports (1-based)
    uint8_t pad[1];
    uint16_t ps;
    int16_t src_dev, dst_dev;
    uint32_t src_slot;
    int32_t src_pid;
    uint32_t local_comm, remote_comm;
    uint32_t listen_handle;  // REQ/SIDR_REQ: the listener the sender found
    uint32_t qpn, psn, qkey;
    uint32_t ece_vendor, ece_attr;
    uint8_t path[64];  // REQ/SIDR_REQ: the sender's path record
    Addr src_addr, dst_addr;  // the rdma_cm header: the sender's and the listener's address
    uint8_t pdata[256];
};
static_assert(sizeof(CmMsg) < kMaxPayload);

// ---------------------------------------------------------------- state

enum class St : uint8_t { Idle, AddrBound, AddrResolved, RouteResolved, Connect, Disconnect, Listen };
enum class Cm : uint8_t {
    None,
    ReqSent,
    ReqRcvd,
    RepSent,
    RepRcvd,
    Established,
    DreqSent,
    DreqRcvd,
    Timewait,
    SidrSent,
    SidrRcvd
};

struct CmFile;

struct CmId {
    uint32_t handle = 0;
    uint64_t uid = 0;
    CmFile* file = nullptr;
    uint16_t ps = 0;
    uint8_t qp_type = IBV_QPT_RC;
    St state = St::Idle;
    Addr src{}, dst{};
    Where where;  // the device port it is bound to
    bool port_taken = false;  // owns an entry in the host-wide port table
    bool reuseaddr = false, afonly = false;
    uint8_t tos = 0;
    bool ack_timeout_set = false;
    uint8_t ack_timeout = 0;
    int backlog = 0;
    uint32_t qkey = 0;
    bool route = false;
    Path path;
    // the connection (the kernel's ib_cm id)
    Cm cm = Cm::None;
    bool had_cm = false;
    uint32_t comm = 0, remote_comm = 0;
    uint32_t peer_slot = 0;
    pid_t peer_pid = 0;
    uint32_t local_qpn = 0, remote_qpn = 0;
    uint32_t local_psn = 0, remote_psn = 0;
    uint8_t resp_res = 0, init_depth = 0, retry = 7, rnr_retry = 7;
    uint32_t listener = 0;  // a connection request's listener (until reported)
    // retransmission of the last request and the timewait timer
    CmMsg last{};
    bool resend = false;
    uint64_t deadline = 0;
    int retries = 0;
    uint64_t timewait_end = 0;
    uint32_t events_reported = 0;
};

struct McJoin {
    uint32_t handle = 0;
    uint32_t id = 0;  // the id that joined
    uint32_t events_reported = 0;
};

struct Event {
    rdma_ucm_event_resp resp{};
    uint32_t owner = 0;  // the id it counts for
    uint32_t mc = 0;  // a multicast join's events count for it too
    uint32_t child = 0;  // CONNECT_REQUEST: the new id
};

// One open rdma_cm file: a datagram socket pair whose application end is
// readable while events wait (one byte per event). GET_EVENT waits on
// wait_fd, our duplicate of the application's end (the same open file, so
// its O_NONBLOCK is the application's): a thread blocked there stays
// blocked when another thread closes the application's fd, as a write()
// blocked in the kernel holds its file.
struct CmFile {
    int app_fd = -1, our_fd = -1, wait_fd = -1;
    std::deque<Event> events;
    ~CmFile() {
        if (our_fd >= 0)
            libc().close(our_fd);
        if (wait_fd >= 0)
            libc().close(wait_fd);
    }
};

struct State {
    std::map<int, std::shared_ptr<CmFile>> fds;
    std::map<uint32_t, std::unique_ptr<CmId>> ids;
    std::map<uint32_t, std::unique_ptr<McJoin>> mcs;
    uint32_t next_id = 1, next_mc = 1, next_comm = 1;
    uint64_t last_liveness = 0;
    std::mt19937 rng{static_cast<uint32_t>(getpid() ^ mono_ns())};
};

State& st() {
    static State* s = new State;  // never destroyed: the model thread may outlive exit()'s destructors
    return *s;
}

CmId* find_id(uint32_t h) {
    auto it = st().ids.find(h);
    return it == st().ids.end() ? nullptr : it->second.get();
}

// ------------------------------------------------------------- events

void post(CmFile* f, Event ev) {
    if (!f)
        return;
    f->events.push_back(ev);
    const char b = 0;
    (void)send(f->our_fd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

Event make_event(const CmId& id, uint32_t type, int32_t status) {
    Event e;
    e.resp.uid = id.uid;
    e.resp.id = id.handle;
    e.resp.event = type;
    e.resp.status = static_cast<uint32_t>(status);
    e.owner = id.handle;
    return e;
}

// An event for an id: the kernel drops those of a connection request the
// application has not accepted yet (its context has no user id).
void id_event(CmId& id, uint32_t type, int32_t status, const CmMsg* m = nullptr, uint8_t pd_len = 0) {
    if (!id.uid)
        return;
    Event e = make_event(id, type, status);
    if (m) {
        memcpy(e.resp.param.conn.private_data, m->pdata, pd_len);
        e.resp.param.conn.private_data_len = pd_len;
        e.resp.ece.vendor_id = m->ece_vendor;
        e.resp.ece.attr_mod = m->ece_attr;
    }
    UVSIM_TRACE("rdma_cm: id %u event %u status %d", id.handle, type, status);
    post(id.file, e);
}

// Takes the events of an id (or of a multicast join) out of its file's
// queue, with the tokens that announce them; returns them in their order.
std::vector<Event> take_events(CmFile* f, uint32_t owner, uint32_t mc) {
    std::vector<Event> taken;
    if (!f)
        return taken;
    for (auto it = f->events.begin(); it != f->events.end();) {
        if ((owner && it->owner == owner) || (mc && it->mc == mc)) {
            taken.push_back(*it);
            it = f->events.erase(it);
        } else {
            ++it;
        }
    }
    char b;
    for (size_t i = 0; i < taken.size(); ++i)
        if (recv(f->wait_fd, &b, 1, MSG_DONTWAIT) != 1)
            break;
    return taken;
}

// ------------------------------------------------- host-wide port table

std::string cm_dir() { return cfg().run_dir + "/cm"; }

class PortLock {
public:
    PortLock() {
        mkdir(cfg().run_dir.c_str(), 0755);
        mkdir(cm_dir().c_str(), 0755);
        mkdir((cm_dir() + "/ports").c_str(), 0755);
        fd_ = libc().open((cm_dir() + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ >= 0)
            while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {}
    }
    ~PortLock() {
        if (fd_ >= 0)
            libc().close(fd_);
    }
    bool ok() const { return fd_ >= 0; }

private:
    int fd_ = -1;
};

struct Owner {
    pid_t pid = 0;
    uint32_t slot = 0;
    uint32_t handle = 0;
    bool reuse = false, listen = false, afonly = false;
    Addr addr{};
};

std::string port_file(uint16_t ps, uint16_t port) {
    return cm_dir() + "/ports/" + std::to_string(ps) + "." + std::to_string(port);
}

bool alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH); }

std::vector<Owner> read_owners(uint16_t ps, uint16_t port) {
    std::vector<Owner> v;
    FILE* f = fopen(port_file(ps, port).c_str(), "r");
    if (!f)
        return v;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        Owner o;
        unsigned fam = 0, reuse = 0, listen = 0, afonly = 0;
        char hex[40] = {};
        if (sscanf(line, "%d %u %u %u %u %u %u %32s", &o.pid, &o.slot, &o.handle, &reuse, &listen, &afonly, &fam,
                   hex) != 8)
            continue;
        if (!alive(o.pid))
            continue;  // its process is gone, and with it the binding
        o.reuse = reuse;
        o.listen = listen;
        o.afonly = afonly;
        o.addr.ss_family = static_cast<sa_family_t>(fam);
        uint8_t g[16] = {};
        for (int i = 0; i < 16 && hex[2 * i]; ++i)
            sscanf(hex + 2 * i, "%2hhx", &g[i]);
        if (fam == AF_INET)
            memcpy(&reinterpret_cast<sockaddr_in&>(o.addr).sin_addr, g + 12, 4);
        else if (fam == AF_INET6)
            memcpy(&reinterpret_cast<sockaddr_in6&>(o.addr).sin6_addr, g, 16);
        else
            memcpy(reinterpret_cast<SockaddrIb&>(o.addr).sib_addr, g, 16);
        v.push_back(o);
    }
    fclose(f);
    return v;
}

void write_owners(uint16_t ps, uint16_t port, const std::vector<Owner>& v) {
    const std::string path = port_file(ps, port);
    if (v.empty()) {
        unlink(path.c_str());
        return;
    }
    const std::string tmp = path + ".tmp" + std::to_string(getpid());
    FILE* f = fopen(tmp.c_str(), "w");
    if (!f)
        return;
    for (const Owner& o : v) {
        uint8_t g[16];
        addr_gid(o.addr, g);
        char hex[33];
        for (int i = 0; i < 16; ++i)
            snprintf(hex + 2 * i, 3, "%02x", g[i]);
        fprintf(f, "%d %u %u %d %d %d %u %s\n", o.pid, o.slot, o.handle, o.reuse, o.listen, o.afonly, o.addr.ss_family,
                hex);
    }
    fclose(f);
    rename(tmp.c_str(), path.c_str());
}

// The port space an id's address uses (AF_IB: the service id's).
uint16_t id_ps(const CmId& id) {
    if (id.src.ss_family == kAfIb) {
        const uint64_t sid = be64toh(ib(id.src).sib_sid);
        const uint16_t ps = static_cast<uint16_t>((sid >> 16) & 0xffff);
        if (ps == RDMA_PS_TCP || ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB || ps == RDMA_PS_IB)
            return ps;
    }
    return id.ps;
}

// The kernel's cma_check_port: may id share the port with the owners?
int check_port(const std::vector<Owner>& owners, const CmId& id, bool reuse) {
    for (const Owner& o : owners) {
        if (o.pid == getpid() && o.handle == id.handle)
            continue;
        if (reuse && o.reuse)
            continue;
        if (id.afonly && o.afonly && id.src.ss_family != o.addr.ss_family)
            continue;
        if (addr_any(id.src) || addr_any(o.addr))
            return -EADDRNOTAVAIL;
        if (addr_same(id.src, o.addr))
            return -EADDRINUSE;
    }
    return 0;
}

Owner self_owner(const CmId& id) {
    Owner o;
    o.pid = getpid();
    o.slot = sim().slot;
    o.handle = id.handle;
    o.reuse = id.reuseaddr;
    o.listen = id.state == St::Listen;
    o.afonly = id.afonly;
    o.addr = id.src;
    return o;
}

// Binds the id's source port: the given one, or a free one of the
// ephemeral range when 0.
int take_port(CmId& id) {
    PortLock lock;
    if (!lock.ok())
        return -EIO;
    const uint16_t ps = id_ps(id);
    uint16_t port = addr_port(id.src);
    std::vector<Owner> owners;
    if (port == 0) {
        std::uniform_int_distribution<int> pick(32768, 60999);
        for (int tries = 0; tries < 28232 && !port; ++tries) {
            const uint16_t cand = static_cast<uint16_t>(pick(st().rng));
            if (read_owners(ps, cand).empty())
                port = cand;
        }
        if (!port)
            return -EADDRNOTAVAIL;
        set_port(id.src, port);
    } else {
        owners = read_owners(ps, port);
    }
    if (int r = check_port(owners, id, id.reuseaddr))
        return r;
    owners.push_back(self_owner(id));
    write_owners(ps, port, owners);
    id.port_taken = true;
    return 0;
}

void update_port(const CmId& id) {
    if (!id.port_taken)
        return;
    PortLock lock;
    const uint16_t ps = id_ps(id), port = addr_port(id.src);
    std::vector<Owner> owners = read_owners(ps, port);
    for (Owner& o : owners)
        if (o.pid == getpid() && o.handle == id.handle)
            o = self_owner(id);
    write_owners(ps, port, owners);
}

void release_port(CmId& id) {
    if (!id.port_taken)
        return;
    id.port_taken = false;
    PortLock lock;
    const uint16_t ps = id_ps(id), port = addr_port(id.src);
    std::vector<Owner> owners = read_owners(ps, port);
    owners.erase(std::remove_if(owners.begin(), owners.end(),
                                [&](const Owner& o) { return o.pid == getpid() && o.handle == id.handle; }),
                 owners.end());
    write_owners(ps, port, owners);
}

// The listener a connection to dst reaches: one bound to that address
// first, else one bound to any address.
std::optional<Owner> find_listener(uint16_t ps, const Addr& dst) {
    PortLock lock;
    std::optional<Owner> any;
    for (const Owner& o : read_owners(ps, addr_port(dst))) {
        if (!o.listen)
            continue;
        if (addr_any(o.addr)) {
            if (!any && !(o.afonly && o.addr.ss_family != dst.ss_family))
                any = o;
        } else if (addr_same(o.addr, dst)) {
            return o;
        }
    }
    return any;
}

// ----------------------------------------------------------- messages

void send_msg(uint32_t slot, const CmMsg& m) {
    auto* p = new (std::nothrow) Packet;
    if (!p)
        return;
    memset(&p->h, 0, sizeof p->h);
    p->h.magic = kWireMagic;
    p->h.flags = kFlagCm;
    p->h.dest_qpn = (slot << 16) | 1;  // the peer's GSI
    p->h.payload_len = sizeof m;
    memcpy(p->payload, &m, sizeof m);
    UVSIM_TRACE("rdma_cm: send %s to slot %u comm %u->%u", msg_name(m.type), slot, m.local_comm, m.remote_comm);
    engine_xmit(*p);  // (queued while the peer's socket is full)
    delete p;
}

CmMsg new_msg(const CmId& id, uint8_t type) {
    CmMsg m{};
    m.type = type;
    m.src_slot = sim().slot;
    m.src_pid = getpid();
    m.local_comm = id.comm;
    m.remote_comm = id.remote_comm;
    m.ps = id_ps(id);
    m.src_dev = static_cast<int16_t>(id.where.dev);
    m.src_port = id.where.port;
    return m;
}

// Sends a request that waits for an answer (retransmitted by the tick).
void send_request(CmId& id, const CmMsg& m) {
    id.last = m;
    id.resend = true;
    id.retries = 0;
    id.deadline = mono_ns() + kCmTimeoutNs;
    send_msg(id.peer_slot, m);
}

void send_reply(CmId& id, const CmMsg& m) {
    id.last = m;
    id.resend = false;
    send_msg(id.peer_slot, m);
}

void reject(CmId& id, uint8_t reason, const uint8_t* pd, uint8_t len) {
    CmMsg m = new_msg(id, M_REJ);
    m.reason = reason;
    if (len)
        memcpy(m.pdata, pd, len);
    send_reply(id, m);
    id.cm = Cm::None;
}

void enter_timewait(CmId& id) {
    id.cm = Cm::Timewait;
    id.resend = false;
    id.timewait_end = mono_ns() + kTimewaitNs;
}

// The rdma_cm state moves from CONNECT to DISCONNECT once: that is when
// the application hears DISCONNECTED.
void disconnected(CmId& id, int32_t status) {
    if (id.state != St::Connect)
        return;
    id.state = St::Disconnect;
    id_event(id, EV_DISCONNECTED, status);
}

uint32_t new_psn() { return st().rng() & 0xffffff; }

uint32_t new_comm() { return (sim().slot << 24) | (st().next_comm++ & 0xffffff); }

uint32_t default_qkey(const CmId& id) { return id.ps == RDMA_PS_UDP || id.ps == RDMA_PS_IPOIB ? kUdpQkey : id.qkey; }

// ------------------------------------------------------------- destroy

void destroy_id(CmId& id);

// What the kernel's CM does with an id that goes (the file closes, the id
// is destroyed): the peer hears a REJ or a DREQ/DREP.
void cm_release(CmId& id) {
    switch (id.cm) {
    case Cm::ReqSent: reject(id, kRejTimeout, nullptr, 0); break;
    case Cm::ReqRcvd:
    case Cm::RepSent:
    case Cm::RepRcvd: reject(id, kRejConsumerDefined, nullptr, 0); break;
    case Cm::SidrRcvd: {
        CmMsg m = new_msg(id, M_SIDR_REP);
        m.reason = kSidrReject;
        send_reply(id, m);
        break;
    }
    case Cm::Established: send_msg(id.peer_slot, new_msg(id, M_DREQ)); break;
    case Cm::DreqRcvd: send_msg(id.peer_slot, new_msg(id, M_DREP)); break;
    default: break;
    }
    id.cm = Cm::None;
}

void destroy_mc(McJoin& mc) {
    CmId* id = find_id(mc.id);
    if (id)
        take_events(id->file, 0, mc.handle);
    st().mcs.erase(mc.handle);
}

void destroy_id(CmId& id) {
    const std::vector<Event> unread = take_events(id.file, id.handle, 0);
    cm_release(id);
    release_port(id);
    std::vector<uint32_t> mcs;
    for (auto& [h, mc] : st().mcs)
        if (mc->id == id.handle)
            mcs.push_back(h);
    for (uint32_t h : mcs)
        destroy_mc(*st().mcs[h]);
    UVSIM_TRACE("rdma_cm: destroy id %u", id.handle);
    st().ids.erase(id.handle);
    // connection requests the application never saw go with their listener
    for (const Event& e : unread)
        if (CmId* ch = e.child ? find_id(e.child) : nullptr)
            destroy_id(*ch);
}

// ------------------------------------------------------------ commands

template <class T>
int read_cmd(const uint8_t* in, size_t in_len, T& cmd) {
    memset(&cmd, 0, sizeof cmd);
    const size_t n = std::min(in_len, sizeof cmd);
    if (!app_read(&cmd, reinterpret_cast<uint64_t>(in), n))
        return -EFAULT;
    return 0;
}

int write_resp(uint64_t addr, const void* resp, size_t len) { return app_write(addr, resp, len) ? 0 : -EFAULT; }

// The id named by a command on this file (the kernel's ucma_get_ctx).
int get_id(CmFile* f, uint32_t h, CmId*& out) {
    CmId* id = find_id(h);
    if (!id)
        return -ENOENT;
    if (id->file != f)
        return -EINVAL;
    out = id;
    return 0;
}

// Reads a command that names an id, which must be one of this file's.
template <class T>
int read_id_cmd(CmFile* f, const uint8_t* in, size_t in_len, T& cmd, CmId*& id) {
    if (int r = read_cmd(in, in_len, cmd))
        return r;
    return get_id(f, cmd.id, id);
}

int c_create_id(CmFile* f, const uint8_t* in, size_t in_len, size_t out_len) {
    rdma_ucm_create_id cmd;
    if (out_len < sizeof(rdma_ucm_create_id_resp))
        return -ENOSPC;
    if (int r = read_cmd(in, in_len, cmd))
        return r;
    uint8_t qpt;
    switch (cmd.ps) {
    case RDMA_PS_TCP: qpt = IBV_QPT_RC; break;
    case RDMA_PS_UDP:
    case RDMA_PS_IPOIB: qpt = IBV_QPT_UD; break;
    case RDMA_PS_IB:
        if (cmd.qp_type != IBV_QPT_RC && cmd.qp_type != IBV_QPT_UD)
            return -EINVAL;
        qpt = cmd.qp_type;
        break;
    default: return -EINVAL;
    }
    auto id = std::make_unique<CmId>();
    id->handle = st().next_id++;
    id->uid = cmd.uid;
    id->file = f;
    id->ps = cmd.ps;
    id->qp_type = qpt;
    rdma_ucm_create_id_resp resp{};
    resp.id = id->handle;
    if (int r = write_resp(cmd.response, &resp, sizeof resp))
        return r;
    UVSIM_TRACE("rdma_cm: create id %u ps 0x%x qpt %u", id->handle, cmd.ps, qpt);
    st().ids[id->handle] = std::move(id);
    return 0;
}

int c_destroy_id(CmFile* f, const uint8_t* in, size_t in_len, size_t out_len) {
    rdma_ucm_destroy_id cmd;
    if (out_len < sizeof(rdma_ucm_destroy_id_resp))
        return -ENOSPC;
    CmId* id;
    if (int r = read_id_cmd(f, in, in_len, cmd, id))
        return r;
    rdma_ucm_destroy_id_resp resp{};
    resp.events_reported = id->events_reported;
    const uint64_t where = cmd.response;
    destroy_id(*id);
    return write_resp(where, &resp, sizeof resp);
}

// rdma_bind_addr: the address's device port (none for "any") and a port
// of the id's port space.
int bind(CmId& id, const Addr& a) {
    if (id.state != St::Idle)
        return -EINVAL;
    if (!addr_size(a))
        return -EAFNOSUPPORT;
    Where w;
    if (!addr_any(a)) {
        w = find_local(a);
        if (!w.ok())
            return host_address(a) ? -ENODEV : -EADDRNOTAVAIL;
    }
    id.src = a;
    id.where = w;
    if (int r = take_port(id)) {
        id.src = {};
        id.where = {};
        return r;
    }
    id.state = St::AddrBound;
    UVSIM_TRACE("rdma_cm: id %u bound to %s (dev %d port %u)", id.handle, addr_text(id.src).c_str(), w.dev, w.port);
    return 0;
}

int c_bind_ip(CmFile* f, const uint8_t* in, size_t in_len, size_t) {
    rdma_ucm_bind_ip cmd;
    if (int r = read_cmd(in, in_len, cmd))
        return r;
    Addr a{};
    memcpy(&a, &cmd.addr, sizeof cmd.addr);
    if (a.ss_family != AF_INET && a.ss_family != AF_INET6)
        return -EINVAL;
    CmId* id;
    if (int r = get_id(f, cmd.id, id))
        return r;
    return bind(*id, a);
}

int c_bind(CmFile* f, const uint8_t* in, size_t in_len, size_t) {
    rdma_ucm_bind cmd;
    if (int r = read_cmd(in, in_len, cmd))
        return r;
    Addr a{};
    memcpy(&a, &cmd.addr, sizeof a);
    if (cmd.reserved || !cmd.addr_size || cmd.addr_size != addr_size(a))
        return -EINVAL;
    CmId* id;
    if (int r = get_id(f, cmd.id, id))
        return r;
    return bind(*id, a);
}

int resolve_addr(CmId& id, const Addr* src, const Addr& dst) {
    if (id.state == St::Idle) {
        Addr s{};
        if (src && src->ss_family)
            s = *src;
        else
            s.ss_family = dst.ss_family;
        if (int r = bind(id, s))
            return r;
    }
    if (id.state != St::AddrBound)
        return -EINVAL;
    if (id.src.ss_family != dst.ss_family)
        return -EINVAL;
    Where to;
    Addr d = dst;
    if (addr_any(dst)) {
        // to itself: the bound port, or the first active one
        to = id.where.ok() ? id.where : default_port(dst.ss_family);
        if (!to.ok())
            return -ENODEV;
        d = port_addr(to, dst.ss_family);
        if (dst.ss_family == kAfIb)
            reinterpret_cast<SockaddrIb&>(d).sib_sid = ib(dst).sib_sid;
        else
            set_port(d, addr_port(dst));
    } else if (addr_mcast(dst)) {
        to = id.where.ok() ? id.where : default_port(dst.ss_family == kAfIb ? AF_INET6 : dst.ss_family);
        if (!to.ok())
            return -ENETUNREACH;
    } else {
        to = find_local(dst);
        if (!to.ok()) {
            if (!host_address(dst))
                return -ENETUNREACH;
            // a route, but through an interface with no RDMA device
            id.dst = dst;
            id.state = St::AddrResolved;
            id_event(id, EV_ADDR_ERROR, -ENODEV);
            id.state = St::AddrBound;
            return 0;
        }
    }
    const Where from = id.where.ok() ? id.where : to;
    if (!port_up(from)) {
        id_event(id, EV_ADDR_ERROR, -ENETUNREACH);
        return 0;
    }
    if (!id.where.ok()) {
        // bound to "any": the id takes the port the route leaves through,
        // and that port's address (the bound port number stays)
        id.where = from;
        Addr s = port_addr(from, id.src.ss_family);
        if (id.src.ss_family == kAfIb)
            reinterpret_cast<SockaddrIb&>(s).sib_sid = ib(id.src).sib_sid;
        set_port(s, addr_port(id.src));
        id.src = s;
        update_port(id);
    }
    id.dst = d;
    id.route = false;
    id.state = St::AddrResolved;
    UVSIM_TRACE("rdma_cm: id %u resolved %s -> %s", id.handle, addr_text(id.src).c_str(), addr_text(id.dst).c_str());
    id_event(id, EV_ADDR_RESOLVED, 0);
    return 0;
}

int c_resolve_ip(CmFile* f, const uint8_t* in, size_t in_len, size_t) {
    rdma_ucm_resolve_ip cmd;
    if (int r = read_cmd(in, in_len, cmd))
        return r;
    Addr s{}, d{};
    memcpy(&s, &cmd.src_addr, sizeof cmd.src_addr);
    memcpy(&d, &cmd.dst_addr, sizeof cmd.dst_addr);
    if ((s.ss_family && s.ss_family != AF_INET && s.ss_family != AF_INET6) ||
        (d.ss_family != AF_INET && d.ss_family != AF_INET6))
        return -EINVAL;
    CmId* id;
    if (int r = get_id(f, cmd.id, id))
        return r;
    return resolve_addr(*id, &s, d);
}

int c_resolve_addr(CmFile* f, const uint8_t* in, size_t in_len, size_t) {
    rdma_ucm_resolve_addr cmd;
    if (int r = read_cmd(in, in_len, cmd))
        return r;
    Addr s{}, d{};
    memcpy(&s, &cmd.src_addr, sizeof s);
    memcpy(&d, &cmd.dst_addr, sizeof d);
    if (cmd.reserved || (cmd.src_size && cmd.src_size != addr_size(s)) || !cmd.dst_size || cmd.dst_size != addr_size(d))
        return -EINVAL;
    CmId* id;
    if (int r = get_id(f, cmd.id, id))
        return r;
    return resolve_addr(*id, cmd.src_size ? &s : nullptr, d);
}

int c_resolve_route(CmFile* f, const uint8_t* in, size_t in_len, size_t) {
    rdma_ucm_resolve_route cmd;
    CmId* id;
    if (int r = read_id_cmd(f, in, in_len, cmd, id))
        return r;
    if (id->state != St::AddrResolved)
        return -EINVAL;
    Where to = addr_mcast(id->dst) ? id->where : find_local(id->dst);
    if (!to.ok())
        return -EINVAL;
    id->path = make_path(id->where, id->src, to, id->dst, id->tos);
    id->route = true;
    id->state = St::RouteResolved;
    id_event(*id, EV_ROUTE_RESOLVED, 0);
    return 0;
}

uint64_t node_guid_be(const CmId& id) { return id.where.ok() ? htobe64(cfg().devices[id.where.dev].node_guid) : 0; }

int c_query_route(CmFile* f, const uint8_t* in, size_t in_len, size_t out_len) {
    rdma_ucm_query cmd;
    if (int r = read_cmd(in, in_len, cmd))
        return r;
    if (out_len < sizeof(rdma_ucm_query_route_resp))
        return -ENOSPC;
    CmId* id;
    if (int r = get_id(f, cmd.id, id))
        return r;
    rdma_ucm_query_route_resp resp{};
    memcpy(&resp.src_addr, &id->src, std::min<size_t>(sizeof resp.src_addr, addr_size(id->src)));
    memcpy(&resp.dst_addr, &id->dst, std::min<size_t>(sizeof resp.dst_addr, addr_size(id->dst)));
    resp.ibdev_index = UINT32_MAX;
    if (id->where.ok()) {
        resp.node_guid = node_guid_be(*id);
        resp.port_num = id->where.port;
        if (id->route) {
            to_user_path(id->path, resp.ib_route[0]);
            resp.num_paths = 1;
        } else {
            uint8_t idx;
            port_gid(id->where, id->src, resp.ib_route[0].sgid, idx);
            if (id->dst.ss_family)
                addr_gid(id->dst, resp.ib_route[0].dgid);
            resp.ib_route[0].pkey = htobe16(0xffff);
        }
    }
    return write_resp(cmd.response, &resp, sizeof resp);
}

// What QUERY's ADDR and GID answers share: the device, port and P_Key;
// no device index (librdmacm then matches the node GUID).
rdma_ucm_query_addr_resp addr_resp(const CmId& id) {
    rdma_ucm_query_addr_resp resp{};
    resp.node_guid = node_guid_be(id);
    resp.port_num = id.where.ok() ? id.where.port : 0;
    resp.pkey = htobe16(0xffff);
    resp.ibdev_index = UINT32_MAX;
    return resp;
}

int c_query(CmFile* f, const uint8_t* in, size_t in_len, size_t out_len) {
    rdma_ucm_query cmd;
    CmId* id;
    if (int r = read_id_cmd(f, in, in_len, cmd, id))
        return r;
    switch (cmd.option) {
    case RDMA_USER_CM_QUERY_ADDR: {
        if (out_len < sizeof(rdma_ucm_query_addr_resp))
            return -ENOSPC;
        rdma_ucm_query_addr_resp resp = addr_resp(*id);
        resp.src_size = static_cast<uint16_t>(addr_size(id->src));
        resp.dst_size = static_cast<uint16_t>(addr_size(id->dst));
        memcpy(&resp.src_addr, &id->src, resp.src_size);
        memcpy(&resp.dst_addr, &id->dst, resp.dst_size);
        return write_resp(cmd.response, &resp, sizeof resp);
    }
    case RDMA_USER_CM_QUERY_PATH: {
        if (out_len < sizeof(rdma_ucm_query_path_resp))
            return -ENOSPC;
        std::vector<uint8_t> buf(sizeof(rdma_ucm_query_path_resp) + sizeof(ib_path_rec_data));
        auto* resp = reinterpret_cast<rdma_ucm_query_path_resp*>(buf.data());
        size_t len = sizeof *resp;
        if (id->route) {
            resp->num_paths = 1;
            if (out_len >= sizeof *resp + sizeof(ib_path_rec_data)) {
                auto* pd = reinterpret_cast<ib_path_rec_data*>(buf.data() + sizeof *resp);
                pd->flags = IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL;
                uint64_t sid = (uint64_t(id_ps(*id)) << 16) | addr_port(id->dst);
                pack_path(id->path, sid, reinterpret_cast<uint8_t*>(pd->path_rec));
                len += sizeof *pd;
            }
        }
        return write_resp(cmd.response, buf.data(), std::min(len, out_len));
    }
    case RDMA_USER_CM_QUERY_GID: {
        if (out_len < sizeof(rdma_ucm_query_addr_resp))
            return -ENOSPC;
        rdma_ucm_query_addr_resp resp = addr_resp(*id);
        SockaddrIb s{}, d{};
        s.sib_family = d.sib_family = kAfIb;
        s.sib_pkey = d.sib_pkey = htobe16(0xffff);
        if (id->where.ok()) {
            uint8_t idx;
            if (id->route) {
                memcpy(s.sib_addr, id->path.sgid, 16);
                memcpy(d.sib_addr, id->path.dgid, 16);
            } else {
                port_gid(id->where, id->src, s.sib_addr, idx);
                if (id->dst.ss_family)
                    addr_gid(id->dst, d.sib_addr);
            }
        }
        s.sib_sid = htobe64((uint64_t(id_ps(*id)) << 16) | addr_port(id->src));
        d.sib_sid = htobe64((uint64_t(id_ps(*id)) << 16) | addr_port(id->dst));
        s.sib_sid_mask = d.sib_sid_mask = htobe64(~0ull);
        resp.src_size = resp.dst_size = sizeof s;
        memcpy(&resp.src_addr, &s, sizeof s);
        memcpy(&resp.dst_addr, &d, sizeof d);
        return write_resp(cmd.response, &resp, sizeof resp);
    }
    default: return -ENOSYS;
    }
}

int c_listen(CmFile* f, const uint8_t* in, size_t in_len, size_t) {
    rdma_ucm_listen cmd;
    CmId* id;
    if (int r = read_id_cmd(f, in, in_len, cmd, id))
        return r;
    const int backlog = cmd.backlog > 0 && cmd.backlog < 1024 ? static_cast<int>(cmd.backlog) : 1024;
    if (id->state == St::Listen) {
        id->backlog = backlog;
        return 0;
    }
    if (id->state == St::Idle) {
        Addr a{};
        a.ss_family = AF_INET;
        if (int r = bind(*id, a))
            return r;
    }
    if (id->state != St::AddrBound)
        return -EINVAL;
    if (id->reuseaddr) {
        PortLock lock;
        if (int r = check_port(read_owners(id_ps(*id), addr_port(id->src)), *id, false))
            return r;
    }
    id->state = St::Listen;
    id->backlog = backlog;
    update_port(*id);
    UVSIM_TRACE("rdma_cm: id %u listens on %s", id->handle, addr_text(id->src).c_str());
    return 0;
}

bool is_ud(const CmId& id) { return id.qp_type == IBV_QPT_UD; }

// A REQ or REP with what the caller's connection parameters give the peer:
// the QP and its first PSN, the depths, retry counts, private data, ECE.
CmMsg conn_msg(const CmId& id, uint8_t type, const rdma_ucm_conn_param& cp, const rdma_ucm_ece& ece) {
    CmMsg m = new_msg(id, type);
    m.qpn = id.local_qpn;
    m.psn = id.local_psn;
    m.resp_res = cp.responder_resources;
    m.init_depth = cp.initiator_depth;
    m.rnr_retry = cp.rnr_retry_count & 7;
    m.flow_control = cp.flow_control;
    m.srq = cp.srq;
    m.ece_vendor = ece.vendor_id;
    m.ece_attr = ece.attr_mod;
    memcpy(m.pdata, cp.private_data, cp.private_data_len);
    return m;
}

int c_connect(CmFile* f, const uint8_t* in, size_t in_len, size_t) {
    rdma_ucm_connect cmd;
    CmId* id;
    if (int r = read_id_cmd(f, in, in_len, cmd, id))
        return r;
    if (id->state != St::RouteResolved || addr_mcast(id->dst))
        return -EINVAL;
    const rdma_ucm_conn_param& cp = cmd.conn_param;
    if (cp.private_data_len > (is_ud(*id) ? kSidrReqPd : kReqPd))
        return -EINVAL;
    id->state = St::Connect;
    id->had_cm = true;
    id->comm = new_comm();
    id->local_qpn = cp.qp_num & 0xffffff;
    id->local_psn = new_psn();
    id->resp_res = cp.responder_resources;
    id->init_depth = cp.initiator_depth;
    id->retry = cp.retry_count & 7;
    id->rnr_retry = cp.rnr_retry_count & 7;
    CmMsg m = conn_msg(*id, is_ud(*id) ? M_SIDR_REQ : M_REQ, cp, cmd.ece);
    m.retry = id->retry;
    m.src_addr = id->src;
    m.dst_addr = id->dst;
    const Where to = find_local(id->dst);
    m.dst_dev = static_cast<int16_t>(to.dev);
    m.dst_port = to.port;
    pack_path(id->path, 0, m.path);
    id->cm = is_ud(*id) ? Cm::SidrSent : Cm::ReqSent;
    const std::optional<Owner> l = find_listener(id_ps(*id), id->dst);
    if (!l) {
        // nobody listens: the peer's CM answers at once
        UVSIM_TRACE("rdma_cm: id %u: no listener on %s", id->handle, addr_text(id->dst).c_str());
        id->cm = Cm::None;
        if (is_ud(*id)) {
            id_event(*id, EV_UNREACHABLE, kSidrUnsupported);
        } else {
            const CmMsg rej{};  // (no private data: kRejPd zero bytes)
            id_event(*id, EV_REJECTED, kRejInvalidServiceId, &rej, kRejPd);
        }
        return 0;
    }
    m.listen_handle = l->handle;
    id->peer_slot = l->slot;
    id->peer_pid = l->pid;
    send_request(*id, m);
    return 0;
}

int c_accept(CmFile* f, const uint8_t* in, size_t in_len, size_t) {
    rdma_ucm_accept cmd;
    CmId* id;
    if (int r = read_id_cmd(f, in, in_len, cmd, id))
        return r;
    if (id->state != St::Connect)
        return -EINVAL;
    const rdma_ucm_conn_param& cp = cmd.conn_param;
    switch (id->cm) {
    case Cm::ReqRcvd: {
        if (!cp.valid || cp.private_data_len > kRepPd)
            return -EINVAL;
        id->uid = cmd.uid;
        id->local_qpn = cp.qp_num & 0xffffff;
        id->resp_res = cp.responder_resources;
        id->init_depth = cp.initiator_depth;
        CmMsg m = conn_msg(*id, M_REP, cp, cmd.ece);
        id->cm = Cm::RepSent;
        send_request(*id, m);
        return 0;
    }
    case Cm::SidrRcvd: {
        if (cp.valid && cp.private_data_len > kSidrRepPd)
            return -EINVAL;
        if (cp.valid)
            id->uid = cmd.uid;
        if (id->ps == RDMA_PS_IB && cp.valid && cp.qkey)
            id->qkey = cp.qkey;
        CmMsg m = new_msg(*id, M_SIDR_REP);
        m.reason = kSidrSuccess;
        m.qpn = cp.qp_num & 0xffffff;
        m.qkey = default_qkey(*id);
        if (cp.valid)
            memcpy(m.pdata, cp.private_data, cp.private_data_len);
        send_reply(*id, m);
        id->cm = Cm::None;
        return 0;
    }
    case Cm::RepRcvd: {
        if (cp.valid)
            return -EINVAL;
        send_reply(*id, new_msg(*id, M_RTU));
        id->cm = Cm::Established;
        return 0;
    }
    default: return -EINVAL;
    }
}

int c_reject(CmFile* f, const uint8_t* in, size_t in_len, size_t) {
    rdma_ucm_reject cmd;
    CmId* id;
    if (int r = read_id_cmd(f, in, in_len, cmd, id))
        return r;
    if (id->cm == Cm::SidrRcvd) {
        if (cmd.private_data_len > kSidrRepPd)
            return -EINVAL;
        CmMsg m = new_msg(*id, M_SIDR_REP);
        m.reason = kSidrReject;
        memcpy(m.pdata, cmd.private_data, cmd.private_data_len);
        send_reply(*id, m);
        id->cm = Cm::None;
        return 0;
    }
    if (id->cm != Cm::ReqRcvd && id->cm != Cm::RepSent && id->cm != Cm::RepRcvd)
        return -EINVAL;
    if (cmd.private_data_len > kRejPd)
        return -EINVAL;
    reject(*id, cmd.reason ? cmd.reason : kRejConsumerDefined, cmd.private_data, cmd.private_data_len);
    return 0;
}

int c_disconnect(CmFile* f, const uint8_t* in, size_t in_len, size_t) {
    rdma_ucm_disconnect cmd;
    CmId* id;
    if (int r = read_id_cmd(f, in, in_len, cmd, id))
        return r;
    if (!id->had_cm || is_ud(*id))
        return -EINVAL;
    if (id->cm == Cm::Established) {
        id->cm = Cm::DreqSent;
        send_request(*id, new_msg(*id, M_DREQ));
    } else if (id->cm == Cm::DreqRcvd) {
        send_reply(*id, new_msg(*id, M_DREP));
        enter_timewait(*id);
    }
    return 0;
}

// The QP attributes the CM has for a state (rdma_init_qp_attr).
int c_init_qp_attr(CmFile* f, const uint8_t* in, size_t in_len, size_t out_len) {
    rdma_ucm_init_qp_attr cmd;
    if (out_len < sizeof(ib_uverbs_qp_attr))
        return -ENOSPC;
    CmId* id;
    if (int r = read_id_cmd(f, in, in_len, cmd, id))
        return r;
    if (!id->where.ok())
        return -EINVAL;
    ib_uverbs_qp_attr a{};
    a.qp_state = cmd.qp_state;
    const bool conn = id->had_cm && id->cm != Cm::None && !is_ud(*id);
    if (!conn) {
        a.qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        a.port_num = id->where.port;
        if (is_ud(*id)) {
            a.qkey = default_qkey(*id);
            a.qp_attr_mask |= IBV_QP_QKEY;
        } else {
            a.qp_access_flags = 0;
            a.qp_attr_mask |= IBV_QP_ACCESS_FLAGS;
        }
        return write_resp(cmd.response, &a, sizeof a);
    }
    const bool rc = id->qp_type == IBV_QPT_RC;
    switch (cmd.qp_state) {
    case IBV_QPS_INIT:
        a.qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        if (id->resp_res)
            a.qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        a.port_num = id->where.port;
        break;
    case IBV_QPS_RTR:
        if (id->cm == Cm::ReqSent)
            return -EINVAL;
        a.qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        to_ah_attr(id->path, id->where.port, a.ah_attr);
        a.path_mtu = id->path.mtu;
        a.dest_qp_num = id->remote_qpn;
        a.rq_psn = id->remote_psn;
        if (rc) {
            a.qp_attr_mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
            a.max_dest_rd_atomic = id->resp_res;
            a.min_rnr_timer = 0;
        }
        break;
    case IBV_QPS_RTS:
        if (id->cm == Cm::ReqSent)
            return -EINVAL;
        a.qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
        a.sq_psn = id->local_psn;
        if (rc) {
            a.qp_attr_mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
            a.timeout = id->ack_timeout_set ? id->ack_timeout : static_cast<uint8_t>(id->path.plt + 1);
            a.retry_cnt = id->retry;
            a.rnr_retry = id->rnr_retry;
            a.max_rd_atomic = id->init_depth;
        }
        break;
    default: return -EINVAL;
    }
    return write_resp(cmd.response, &a, sizeof a);
}

int c_get_event(CmFile* f, const uint8_t* in, size_t in_len, size_t out_len,
                std::unique_lock<std::recursive_mutex>& lk) {
    rdma_ucm_get_event cmd;
    if (out_len < sizeof(rdma_ucm_event_resp) - sizeof(uint32_t) - sizeof(rdma_ucm_ece))
        return -ENOSPC;
    if (int r = read_cmd(in, in_len, cmd))
        return r;
    for (;;) {
        // the token says an event waits; wait for it as the fd's flags say
        lk.unlock();
        char b;
        const ssize_t n = recv(f->wait_fd, &b, 1, 0);
        const int err = errno;
        lk.lock();
        if (n != 1)
            return err == EWOULDBLOCK ? -EAGAIN : -err;
        if (f->events.empty())
            continue;  // its event was purged while we waited
        Event ev = f->events.front();
        f->events.pop_front();
        if (CmId* id = find_id(ev.owner))
            ++id->events_reported;
        if (ev.mc)
            if (auto it = st().mcs.find(ev.mc); it != st().mcs.end())
                ++it->second->events_reported;
        if (ev.child)
            if (CmId* c = find_id(ev.child))
                c->listener = 0;  // reported: it no longer goes with its listener
        if (int r = write_resp(cmd.response, &ev.resp, std::min(out_len, sizeof ev.resp)))
            return r;
        return 0;
    }
}

int c_set_option(CmFile* f, const uint8_t* in, size_t in_len, size_t) {
    rdma_ucm_set_option cmd;
    CmId* id;
    if (int r = read_id_cmd(f, in, in_len, cmd, id))
        return r;
    if (cmd.optlen > 4096)
        return -EINVAL;
    std::vector<uint8_t> val(cmd.optlen);
    if (cmd.optlen && !app_read(val.data(), cmd.optval, cmd.optlen))
        return -EFAULT;
    int iv = 0;
    if (cmd.level == RDMA_OPTION_ID) {
        switch (cmd.optname) {
        case RDMA_OPTION_ID_TOS:
            if (cmd.optlen != 1)
                return -EINVAL;
            id->tos = val[0];
            return 0;
        case RDMA_OPTION_ID_REUSEADDR:
            if (cmd.optlen != sizeof(int))
                return -EINVAL;
            memcpy(&iv, val.data(), sizeof iv);
            if (!((iv && id->state != St::Listen) || id->state == St::Idle))
                return -EINVAL;
            id->reuseaddr = iv != 0;
            update_port(*id);
            return 0;
        case RDMA_OPTION_ID_AFONLY:
            if (cmd.optlen != sizeof(int))
                return -EINVAL;
            if (id->state != St::Idle)
                return -EINVAL;
            memcpy(&iv, val.data(), sizeof iv);
            id->afonly = iv != 0;
            return 0;
        case RDMA_OPTION_ID_ACK_TIMEOUT:
            if (cmd.optlen != 1)
                return -EINVAL;
            if (id->qp_type != IBV_QPT_RC)
                return -EINVAL;
            id->ack_timeout = val[0];
            id->ack_timeout_set = true;
            return 0;
        default: return -ENOSYS;
        }
    }
    if (cmd.level == RDMA_OPTION_IB && cmd.optname == RDMA_OPTION_IB_PATH) {
        if (!cmd.optlen || cmd.optlen % sizeof(ib_path_rec_data))
            return -EINVAL;
        const auto* pd = reinterpret_cast<const ib_path_rec_data*>(val.data());
        if (!(pd->flags & IB_PATH_PRIMARY))
            return -EINVAL;
        if (id->state != St::AddrResolved)
            return -EINVAL;
        Path p;
        if (!unpack_path(reinterpret_cast<const uint8_t*>(pd->path_rec), p))
            return -EINVAL;
        p.roce = port_of(id->where).ethernet;
        uint8_t g[16];
        port_gid(id->where, id->src, g, p.sgid_index);
        id->path = p;
        id->route = true;
        id->state = St::RouteResolved;
        id_event(*id, EV_ROUTE_RESOLVED, 0);
        return 0;
    }
    return -ENOSYS;
}

int c_notify(CmFile* f, const uint8_t* in, size_t in_len, size_t) {
    rdma_ucm_notify cmd;
    CmId* id;
    if (int r = read_id_cmd(f, in, in_len, cmd, id))
        return r;
    if (!id->had_cm || is_ud(*id))
        return -EINVAL;
    if (cmd.event != IBV_EVENT_COMM_EST)
        return cmd.event == IBV_EVENT_PATH_MIG ? 0 : -EINVAL;
    if (id->cm == Cm::RepSent) {
        // the first packet came before the RTU: the connection is up
        id->cm = Cm::Established;
        id->resend = false;
        id_event(*id, EV_ESTABLISHED, 0);
        return 0;
    }
    return id->cm == Cm::Established ? 0 : -EISCONN;
}

// The multicast GID of a group address (rdma_cm's mapping: IPv4 groups
// become ::ffff:a.b.c.d on RoCE, the IPoIB MGID with the rdma_cm signature
// on InfiniBand; IPv6 and AF_IB addresses are GIDs already).
void mc_gid(const CmId& id, const Addr& a, uint8_t g[16]) {
    addr_gid(a, g);
    if (a.ss_family != AF_INET || port_of(id.where).ethernet)
        return;
    const uint32_t ip = ntohl(in4(a).sin_addr.s_addr);
    memset(g, 0, 16);
    g[0] = 0xff;
    g[1] = 0x12;
    g[2] = 0x40;
    g[3] = id.ps == RDMA_PS_UDP ? 0x01 : 0x1b;
    g[4] = 0xff;  // P_Key 0xffff
    g[5] = 0xff;
    g[12] = static_cast<uint8_t>((ip >> 24) & 0x0f);
    g[13] = static_cast<uint8_t>(ip >> 16);
    g[14] = static_cast<uint8_t>(ip >> 8);
    g[15] = static_cast<uint8_t>(ip);
}

int join(CmFile* f, CmId& id, const Addr& a, uint64_t uid, uint16_t flags, uint64_t response) {
    if (id.state != St::AddrBound && id.state != St::AddrResolved)
        return -EINVAL;
    if (!id.where.ok())
        return -EINVAL;
    if (flags != RDMA_MC_JOIN_FLAG_FULLMEMBER && flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
        return -EINVAL;
    if (!addr_mcast(a) && a.ss_family != kAfIb)
        return -EINVAL;
    auto mc = std::make_unique<McJoin>();
    mc->handle = st().next_mc++;
    mc->id = id.handle;
    uint8_t mgid[16];
    mc_gid(id, a, mgid);
    uint16_t mlid = 0;
    if (!port_of(id.where).ethernet) {
        uint32_t h = 2166136261u;
        for (uint8_t b : mgid)
            h = (h ^ b) * 16777619u;
        mlid = static_cast<uint16_t>(0xc001 + h % 0x3ffe);
    }
    rdma_ucm_create_id_resp resp{};
    resp.id = mc->handle;
    if (int r = write_resp(response, &resp, sizeof resp))
        return r;
    Event e = make_event(id, EV_MULTICAST_JOIN, 0);
    e.resp.uid = uid;
    e.mc = mc->handle;
    rdma_ucm_ud_param& ud = e.resp.param.ud;
    ud.qp_num = 0xffffff;
    const uint32_t qkey = default_qkey(id);
    ud.qkey = qkey ? qkey : kUdpQkey;
    Path p = make_path(id.where, id.src, id.where, a, id.tos);
    memcpy(p.dgid, mgid, 16);
    p.dlid = mlid;
    to_ah_attr(p, id.where.port, ud.ah_attr);
    UVSIM_TRACE("rdma_cm: id %u joins %s (mc %u, mlid 0x%x)", id.handle, addr_text(a).c_str(), mc->handle, mlid);
    st().mcs[mc->handle] = std::move(mc);
    post(f, e);
    return 0;
}

int c_join_ip_mcast(CmFile* f, const uint8_t* in, size_t in_len, size_t out_len) {
    rdma_ucm_join_ip_mcast cmd;
    if (out_len < sizeof(rdma_ucm_create_id_resp))
        return -ENOSPC;
    if (int r = read_cmd(in, in_len, cmd))
        return r;
    Addr a{};
    memcpy(&a, &cmd.addr, sizeof cmd.addr);
    if (a.ss_family != AF_INET && a.ss_family != AF_INET6)
        return -EINVAL;
    CmId* id;
    if (int r = get_id(f, cmd.id, id))
        return r;
    return join(f, *id, a, cmd.uid, RDMA_MC_JOIN_FLAG_FULLMEMBER, cmd.response);
}

int c_join_mcast(CmFile* f, const uint8_t* in, size_t in_len, size_t out_len) {
    rdma_ucm_join_mcast cmd;
    if (out_len < sizeof(rdma_ucm_create_id_resp))
        return -ENOSPC;
    if (int r = read_cmd(in, in_len, cmd))
        return r;
    Addr a{};
    memcpy(&a, &cmd.addr, sizeof a);
    if (!cmd.addr_size || cmd.addr_size != addr_size(a))
        return -EINVAL;
    CmId* id;
    if (int r = get_id(f, cmd.id, id))
        return r;
    return join(f, *id, a, cmd.uid, cmd.join_flags, cmd.response);
}

int c_leave_mcast(CmFile* f, const uint8_t* in, size_t in_len, size_t out_len) {
    rdma_ucm_destroy_id cmd;
    if (out_len < sizeof(rdma_ucm_destroy_id_resp))
        return -ENOSPC;
    if (int r = read_cmd(in, in_len, cmd))
        return r;
    auto it = st().mcs.find(cmd.id);
    if (it == st().mcs.end())
        return -ENOENT;
    CmId* id = find_id(it->second->id);
    if (!id || id->file != f)
        return -EINVAL;
    rdma_ucm_destroy_id_resp resp{};
    resp.events_reported = it->second->events_reported;
    destroy_mc(*it->second);
    return write_resp(cmd.response, &resp, sizeof resp);
}

int c_migrate_id(CmFile* f, const uint8_t* in, size_t in_len, size_t out_len) {
    rdma_ucm_migrate_id cmd;
    if (out_len < sizeof(rdma_ucm_migrate_resp))
        return -ENOSPC;
    if (int r = read_cmd(in, in_len, cmd))
        return r;
    // written to the file the id moves to, naming the one it is on
    const int ofd = static_cast<int>(cmd.fd);
    if (fcntl(ofd, F_GETFD) < 0)
        return -ENOENT;
    auto oit = st().fds.find(ofd);
    if (oit == st().fds.end())
        return -EINVAL;
    CmFile* from = oit->second.get();
    CmFile* to = f;
    CmId* id = find_id(cmd.id);
    if (!id)
        return -ENOENT;
    if (id->file != from)
        return -EINVAL;
    if (from != to) {
        // the id's events (its joins' too) move with it, in their order
        const std::vector<Event> moving = take_events(from, id->handle, 0);
        id->file = to;
        for (auto& [h, other] : st().ids)
            if (other->listener == id->handle && other->file == from)
                other->file = to;
        for (const Event& e : moving)
            post(to, e);
    }
    rdma_ucm_migrate_resp resp{};
    resp.events_reported = id->events_reported;
    return write_resp(cmd.response, &resp, sizeof resp);
}

// ------------------------------------------------------------- receive

CmId* by_comm(uint32_t comm) {
    for (auto& [h, id] : st().ids)
        if (id->comm == comm && id->had_cm)
            return id.get();
    return nullptr;
}

Path path_from_msg(const CmMsg& m) {
    Path p;
    unpack_path(m.path, p);
    p.roce = false;
    return p;
}

// What a REQ or REP tells the other side: the private data (all the room
// the message has), the sender's QP, and its depths as seen from here.
void conn_param(Event& e, const CmMsg& m, uint8_t pd_len) {
    rdma_ucm_conn_param& cp = e.resp.param.conn;
    memcpy(cp.private_data, m.pdata, pd_len);
    cp.private_data_len = pd_len;
    cp.qp_num = m.qpn;
    cp.srq = m.srq;
    cp.responder_resources = m.init_depth;
    cp.initiator_depth = m.resp_res;
    cp.flow_control = m.flow_control;
    cp.rnr_retry_count = m.rnr_retry;
    e.resp.ece.vendor_id = m.ece_vendor;
    e.resp.ece.attr_mod = m.ece_attr;
}

void on_req(const CmMsg& m, bool sidr) {
    // a retransmission of a REQ already taken
    for (auto& [h, id] : st().ids)
        if (id->had_cm && id->remote_comm == m.local_comm && id->peer_slot == m.src_slot && id->peer_pid == m.src_pid) {
            if (id->cm == Cm::RepSent || (id->cm == Cm::None && id->last.type))
                send_msg(id->peer_slot, id->last);
            return;
        }
    CmId* l = find_id(m.listen_handle);
    auto answer_no_listener = [&] {
        CmMsg r{};
        r.type = sidr ? M_SIDR_REP : M_REJ;
        r.reason = sidr ? kSidrUnsupported : kRejInvalidServiceId;
        r.src_slot = sim().slot;
        r.src_pid = getpid();
        r.remote_comm = m.local_comm;
        send_msg(m.src_slot, r);
    };
    if (!l || l->state != St::Listen || id_ps(*l) != m.ps || (!addr_any(l->src) && !addr_same(l->src, m.dst_addr))) {
        answer_no_listener();
        return;
    }
    int pending = 0;
    for (auto& [h, id] : st().ids)
        if (id->listener == l->handle)
            ++pending;
    if (pending >= l->backlog)
        return;  // no room: the REQ is dropped and the sender tries again
    auto c = std::make_unique<CmId>();
    CmId& id = *c;
    id.handle = st().next_id++;
    id.uid = 0;  // until accepted
    id.file = l->file;
    id.ps = l->ps;
    id.qp_type = sidr ? static_cast<uint8_t>(IBV_QPT_UD) : l->qp_type;
    id.state = St::Connect;
    id.src = m.dst_addr;
    id.dst = m.src_addr;
    id.where = {m.dst_dev, m.dst_port};
    if (!id.where.ok() || id.where.dev >= static_cast<int>(cfg().devices.size()) || !id.where.port ||
        id.where.port > cfg().devices[id.where.dev].ports.size())
        id.where = l->where;
    if (!id.where.ok())
        return;
    id.tos = l->tos;
    id.route = true;
    id.path = reversed(path_from_msg(m));
    id.path.roce = port_of(id.where).ethernet;
    {
        uint8_t g[16];
        port_gid(id.where, id.src, g, id.path.sgid_index);
    }
    id.had_cm = true;
    id.cm = sidr ? Cm::SidrRcvd : Cm::ReqRcvd;
    id.comm = new_comm();
    id.remote_comm = m.local_comm;
    id.peer_slot = m.src_slot;
    id.peer_pid = m.src_pid;
    id.remote_qpn = m.qpn;
    id.remote_psn = m.psn;
    id.local_psn = new_psn();
    id.resp_res = m.init_depth;
    id.init_depth = m.resp_res;
    id.retry = m.retry;
    id.rnr_retry = m.rnr_retry;
    id.listener = l->handle;
    Event e = make_event(*l, EV_CONNECT_REQUEST, 0);
    e.resp.id = id.handle;
    e.child = id.handle;
    if (sidr) {
        memcpy(e.resp.param.ud.private_data, m.pdata, kSidrReqPd);
        e.resp.param.ud.private_data_len = kSidrReqPd;
    } else {
        conn_param(e, m, kReqPd);
        e.resp.param.conn.retry_count = m.retry;
    }
    UVSIM_TRACE("rdma_cm: %s for listener %u: new id %u", sidr ? "SIDR_REQ" : "REQ", l->handle, id.handle);
    CmFile* file = l->file;
    st().ids[id.handle] = std::move(c);
    post(file, e);
}

void on_rep(CmId& id, const CmMsg& m) {
    if (id.cm == Cm::Established) {
        send_msg(id.peer_slot, id.last);  // our RTU was lost
        return;
    }
    if (id.cm != Cm::ReqSent)
        return;
    id.resend = false;
    id.remote_comm = m.local_comm;
    id.peer_slot = m.src_slot;
    id.peer_pid = m.src_pid;
    id.remote_qpn = m.qpn;
    id.remote_psn = m.psn;
    id.rnr_retry = m.rnr_retry;
    id.cm = Cm::RepRcvd;
    if (!id.uid)
        return;
    Event e = make_event(id, EV_CONNECT_RESPONSE, 0);
    conn_param(e, m, kRepPd);
    post(id.file, e);
}

void on_rej(CmId& id, const CmMsg& m) {
    if (id.cm != Cm::ReqSent && id.cm != Cm::RepSent && id.cm != Cm::RepRcvd && id.cm != Cm::ReqRcvd)
        return;
    id.cm = Cm::None;
    id.resend = false;
    id_event(id, EV_REJECTED, m.reason, &m, kRejPd);
}

void on_sidr_rep(CmId& id, const CmMsg& m) {
    if (id.cm != Cm::SidrSent)
        return;
    id.cm = Cm::None;
    id.resend = false;
    if (m.reason != kSidrSuccess) {
        id_event(id, EV_UNREACHABLE, m.reason);
        return;
    }
    if (id.ps == RDMA_PS_UDP && m.qkey != kUdpQkey) {
        id_event(id, EV_UNREACHABLE, -EINVAL);
        return;
    }
    if (!id.uid)
        return;
    Event e = make_event(id, EV_ESTABLISHED, 0);
    rdma_ucm_ud_param& ud = e.resp.param.ud;
    ud.qp_num = m.qpn;
    ud.qkey = m.qkey;
    to_ah_attr(id.path, id.where.port, ud.ah_attr);
    memcpy(ud.private_data, m.pdata, kSidrRepPd);
    ud.private_data_len = kSidrRepPd;
    post(id.file, e);
}

void on_dreq(CmId* id, const CmMsg& m) {
    if (!id) {
        // the id is gone (its DREP was lost, or it never was): answer anyway
        CmMsg r{};
        r.type = M_DREP;
        r.src_slot = sim().slot;
        r.src_pid = getpid();
        r.remote_comm = m.local_comm;
        send_msg(m.src_slot, r);
        return;
    }
    switch (id->cm) {
    case Cm::RepSent:
    case Cm::Established:
        id->resend = false;
        id->cm = Cm::DreqRcvd;
        disconnected(*id, 0);
        break;
    case Cm::DreqSent:
        send_reply(*id, new_msg(*id, M_DREP));
        enter_timewait(*id);
        disconnected(*id, 0);
        break;
    case Cm::Timewait:
    case Cm::None: send_msg(id->peer_slot, new_msg(*id, M_DREP)); break;
    default: break;
    }
}

void on_drep(CmId& id) {
    if (id.cm != Cm::DreqSent)
        return;
    enter_timewait(id);
    disconnected(id, 0);
}

// The peer's process is gone: its kernel closed its file, which answered
// for each of its ids what cm_release does.
void peer_died(CmId& id) {
    UVSIM_TRACE("rdma_cm: id %u: peer process %d is gone", id.handle, id.peer_pid);
    CmMsg m{};
    switch (id.cm) {
    case Cm::Established:
    case Cm::RepSent:
        id.cm = Cm::DreqRcvd;
        id.resend = false;
        disconnected(id, 0);
        // nobody is left to answer
        enter_timewait(id);
        break;
    case Cm::DreqSent: on_drep(id); break;
    case Cm::ReqSent:
        m.reason = kRejInvalidServiceId;
        on_rej(id, m);
        break;
    case Cm::RepRcvd:
    case Cm::ReqRcvd:
        m.reason = kRejConsumerDefined;
        on_rej(id, m);
        break;
    case Cm::SidrSent:
        id.cm = Cm::None;
        id.resend = false;
        id_event(id, EV_UNREACHABLE, kSidrUnsupported);
        break;
    case Cm::SidrRcvd: id.cm = Cm::None; break;
    default: break;
    }
    id.peer_pid = 0;
}

// ---------------------------------------------------------------- files

std::shared_ptr<CmFile> file_of(int fd) {
    auto it = st().fds.find(fd);
    return it == st().fds.end() ? nullptr : it->second;
}

}  // namespace

int ucma_open(int flags) {
    std::lock_guard<std::recursive_mutex> g(sim().mu);
    if (!wire_attach()) {
        errno = EIO;
        return -1;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM | ((flags & O_CLOEXEC) ? SOCK_CLOEXEC : 0), 0, sv) != 0)
        return -1;
    if (sv[0] >= kMaxFd) {
        libc().close(sv[0]);
        libc().close(sv[1]);
        errno = EMFILE;
        return -1;
    }
    (void)libc().fcntl(sv[1], F_SETFL, O_NONBLOCK);
    (void)libc().fcntl(sv[1], F_SETFD, FD_CLOEXEC);
    if (flags & O_NONBLOCK)
        (void)libc().fcntl(sv[0], F_SETFL, O_NONBLOCK);
    auto f = std::make_shared<CmFile>();
    f->app_fd = sv[0];
    f->our_fd = sv[1];
    f->wait_fd = libc().fcntl(sv[0], F_DUPFD_CLOEXEC, 0);
    if (f->wait_fd < 0) {
        const int err = errno;
        libc().close(sv[0]);
        errno = err;
        return -1;
    }
    st().fds[sv[0]] = f;
    fd_mark(sv[0], FdKind::Cm);
    engine_start();  // CM messages arrive through the model thread
    UVSIM_TRACE("open rdma_cm -> fd %d", sv[0]);
    return sv[0];
}

ssize_t ucma_write(int fd, const void* buf, size_t len) {
    std::unique_lock<std::recursive_mutex> lk(sim().mu);
    std::shared_ptr<CmFile> f = file_of(fd);
    if (!f)
        return -EBADF;
    rdma_ucm_cmd_hdr hdr;
    if (len < sizeof hdr)
        return -EINVAL;
    if (!app_read(&hdr, reinterpret_cast<uint64_t>(buf), sizeof hdr))
        return -EFAULT;
    if (hdr.cmd > RDMA_USER_CM_CMD_JOIN_MCAST)
        return -EINVAL;
    if (hdr.in + sizeof hdr > len)
        return -EINVAL;
    const uint8_t* in = static_cast<const uint8_t*>(buf) + sizeof hdr;
    CmFile* fp = f.get();
    int r;
    switch (hdr.cmd) {
    case RDMA_USER_CM_CMD_CREATE_ID: r = c_create_id(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_DESTROY_ID: r = c_destroy_id(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_BIND_IP: r = c_bind_ip(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_RESOLVE_IP: r = c_resolve_ip(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_RESOLVE_ROUTE: r = c_resolve_route(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_QUERY_ROUTE: r = c_query_route(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_CONNECT: r = c_connect(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_LISTEN: r = c_listen(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_ACCEPT: r = c_accept(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_REJECT: r = c_reject(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_DISCONNECT: r = c_disconnect(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_INIT_QP_ATTR: r = c_init_qp_attr(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_GET_EVENT: r = c_get_event(fp, in, hdr.in, hdr.out, lk); break;
    case RDMA_USER_CM_CMD_GET_OPTION: r = -ENOSYS; break;
    case RDMA_USER_CM_CMD_SET_OPTION: r = c_set_option(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_NOTIFY: r = c_notify(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_JOIN_IP_MCAST: r = c_join_ip_mcast(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_LEAVE_MCAST: r = c_leave_mcast(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_MIGRATE_ID: r = c_migrate_id(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_QUERY: r = c_query(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_BIND: r = c_bind(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_RESOLVE_ADDR: r = c_resolve_addr(fp, in, hdr.in, hdr.out); break;
    case RDMA_USER_CM_CMD_JOIN_MCAST: r = c_join_mcast(fp, in, hdr.in, hdr.out); break;
    default: r = -EINVAL; break;
    }
    if (hdr.cmd != RDMA_USER_CM_CMD_GET_EVENT || r)
        UVSIM_TRACE("rdma_cm: cmd %u in %u out %u -> %d", hdr.cmd, hdr.in, hdr.out, r);
    return r ? r : static_cast<ssize_t>(len);
}

void ucma_close(int fd) {
    std::lock_guard<std::recursive_mutex> g(sim().mu);
    fd_mark(fd, FdKind::None);
    auto it = st().fds.find(fd);
    if (it == st().fds.end())
        return;
    std::shared_ptr<CmFile> f = std::move(it->second);
    st().fds.erase(it);
    if (f.use_count() > 1)
        return;  // another fd is open on the file
    f->app_fd = -1;  // (the application's close() closes its fd)
    std::vector<uint32_t> mine;
    for (auto& [h, id] : st().ids)
        if (id->file == f.get())
            mine.push_back(h);
    for (uint32_t h : mine)
        if (CmId* id = find_id(h))
            destroy_id(*id);
    UVSIM_TRACE("close rdma_cm fd %d", fd);
}

void ucma_dup(int oldfd, int newfd) {
    std::lock_guard<std::recursive_mutex> g(sim().mu);
    auto f = file_of(oldfd);
    if (!f)
        return;
    st().fds[newfd] = f;
    fd_mark(newfd, FdKind::Cm);
}

void ucma_receive(const Packet& p) {
    if (p.h.payload_len != sizeof(CmMsg))
        return;
    CmMsg m;
    memcpy(&m, p.payload, sizeof m);
    UVSIM_TRACE("rdma_cm: recv %s from slot %u comm %u->%u", msg_name(m.type), m.src_slot, m.local_comm, m.remote_comm);
    if (m.type == M_REQ || m.type == M_SIDR_REQ) {
        on_req(m, m.type == M_SIDR_REQ);
        return;
    }
    CmId* id = by_comm(m.remote_comm);
    if (m.type == M_DREQ) {
        on_dreq(id, m);
        return;
    }
    if (!id)
        return;
    switch (m.type) {
    case M_REP: on_rep(*id, m); break;
    case M_RTU:
        if (id->cm == Cm::RepSent) {
            id->cm = Cm::Established;
            id->resend = false;
            id_event(*id, EV_ESTABLISHED, 0);
        }
        break;
    case M_REJ: on_rej(*id, m); break;
    case M_DREP: on_drep(*id); break;
    case M_SIDR_REP: on_sidr_rep(*id, m); break;
    default: break;
    }
}

bool ucma_tick() {
    State& s = st();
    if (s.ids.empty())
        return false;
    const uint64_t now = mono_ns();
    const bool check_peers = now - s.last_liveness >= kLivenessNs;
    if (check_peers)
        s.last_liveness = now;
    bool work = false;
    // a snapshot (events may destroy ids), kept between ticks: the model
    // thread allocates nothing once it has grown
    static std::vector<uint32_t>& handles = *new std::vector<uint32_t>;
    handles.clear();
    for (auto& [h, id] : s.ids)
        handles.push_back(h);
    for (uint32_t h : handles) {
        CmId* id = find_id(h);
        if (!id)
            continue;
        if (id->resend && now >= id->deadline) {
            if (id->retries < kCmRetries) {
                ++id->retries;
                id->deadline = now + kCmTimeoutNs;
                send_msg(id->peer_slot, id->last);
            } else {
                id->resend = false;
                const Cm was = id->cm;
                if (was == Cm::DreqSent) {
                    enter_timewait(*id);
                    disconnected(*id, -ETIMEDOUT);
                } else {
                    id->cm = Cm::None;
                    id_event(*id, EV_UNREACHABLE, -ETIMEDOUT);
                }
            }
            work = true;
        }
        if (id->cm == Cm::Timewait && now >= id->timewait_end) {
            id->cm = Cm::None;
            id_event(*id, EV_TIMEWAIT_EXIT, 0);
            work = true;
        }
        if (check_peers && id->peer_pid && id->cm != Cm::None && id->cm != Cm::Timewait && !alive(id->peer_pid)) {
            peer_died(*id);
            work = true;
        }
    }
    return work;
}

}  // namespace uvsim
