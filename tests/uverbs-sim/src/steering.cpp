// Receive-side steering of the emulated ConnectX: what a frame arriving at
// an Ethernet port matches (flow rules with their specs and priorities) and
// how an RSS QP spreads frames over its indirection table (the Toeplitz
// hash). Pure functions of the frame and the rules; the engine delivers.
#include "verbs.h"

#include <algorithm>
#include <cerrno>

namespace uvsim {

namespace {

// The IB_FLOW_SPEC_* kinds of the uverbs ABI (the values of ibv_flow_spec_type)
enum : uint32_t {
    kSpecEth = 0x20,
    kSpecIpv4 = 0x30,
    kSpecIpv6 = 0x31,
    kSpecEsp = 0x34,
    kSpecTcp = 0x40,
    kSpecUdp = 0x41,
    kSpecVxlan = 0x50,
    kSpecGre = 0x51,
    kSpecMpls = 0x60,
    kSpecInner = 0x100,
    kSpecActionTag = 0x1000,
    kSpecActionDrop = 0x1001,
    kSpecActionHandle = 0x1002,
    kSpecActionCount = 0x1003,
};

// The filter structs of the kernel's specs (value and mask have this size).
size_t filter_size(uint32_t type) {
    switch (type) {
    case kSpecEth: return sizeof(ib_uverbs_flow_eth_filter);
    case kSpecIpv4: return sizeof(ib_uverbs_flow_ipv4_filter);
    case kSpecIpv6: return sizeof(ib_uverbs_flow_ipv6_filter);
    case kSpecTcp:
    case kSpecUdp: return sizeof(ib_uverbs_flow_tcp_udp_filter);
    default: return 0;
    }
}

// The fields of a frame that steering and hashing look at.
struct Parsed {
    ib_uverbs_flow_eth_filter eth{};  // dst, src, the ethertype after a VLAN tag, the tag's TCI
    bool vlan = false;
    int l3 = 0;  // 4, 6 or 0
    ib_uverbs_flow_ipv4_filter v4{};
    ib_uverbs_flow_ipv6_filter v6{};
    uint8_t l4 = 0;  // IPPROTO_TCP or _UDP when its header is there (not a later fragment)
    ib_uverbs_flow_tcp_udp_filter ports{};
};

bool parse(const uint8_t* f, size_t len, Parsed& p) {
    if (len < 14)
        return false;
    memcpy(p.eth.dst_mac, f, 6);
    memcpy(p.eth.src_mac, f + 6, 6);
    size_t off = 12;
    uint16_t et = uint16_t(f[off] << 8 | f[off + 1]);
    if (et == 0x8100 && len >= 18) {
        p.vlan = true;
        memcpy(&p.eth.vlan_tag, f + 14, 2);
        off = 16;
        et = uint16_t(f[off] << 8 | f[off + 1]);
    }
    memcpy(&p.eth.ether_type, f + off, 2);
    off += 2;
    const uint8_t* ip = f + off;
    const size_t left = len - off;
    size_t l4off = 0;
    if (et == 0x0800 && left >= 20 && (ip[0] >> 4) == 4) {
        const size_t ihl = size_t(ip[0] & 0xf) * 4;
        if (ihl < 20 || ihl > left)
            return true;
        p.l3 = 4;
        memcpy(&p.v4.src_ip, ip + 12, 4);
        memcpy(&p.v4.dst_ip, ip + 16, 4);
        p.v4.proto = ip[9];
        p.v4.tos = ip[1];
        p.v4.ttl = ip[8];
        p.v4.flags = ip[6] >> 5;
        const bool later_fragment = ((ip[6] & 0x1f) << 8 | ip[7]) != 0;
        if (!later_fragment)
            p.l4 = ip[9], l4off = ihl;
    } else if (et == 0x86dd && left >= 40 && (ip[0] >> 4) == 6) {
        p.l3 = 6;
        memcpy(p.v6.src_ip, ip + 8, 16);
        memcpy(p.v6.dst_ip, ip + 24, 16);
        p.v6.flow_label = htobe32(uint32_t(ip[1] & 0xf) << 16 | uint32_t(ip[2]) << 8 | ip[3]);
        p.v6.next_hdr = ip[6];
        p.v6.traffic_class = uint8_t((ip[0] & 0xf) << 4 | ip[1] >> 4);
        p.v6.hop_limit = ip[7];
        p.l4 = ip[6], l4off = 40;
    }
    if ((p.l4 == 6 || p.l4 == 17) && left >= l4off + 4) {
        memcpy(&p.ports.src_port, ip + l4off, 2);
        memcpy(&p.ports.dst_port, ip + l4off + 2, 2);
    } else {
        p.l4 = 0;
    }
    return true;
}

bool masked_equal(const void* val, const void* mask, const void* got, size_t n) {
    const uint8_t *v = static_cast<const uint8_t*>(val), *m = static_cast<const uint8_t*>(mask),
                  *g = static_cast<const uint8_t*>(got);
    for (size_t i = 0; i < n; ++i)
        if ((v[i] & m[i]) != (g[i] & m[i]))
            return false;
    return true;
}

bool spec_matches(const FlowSpec& s, const Parsed& p) {
    switch (s.type) {
    case kSpecEth: {
        ib_uverbs_flow_eth_filter m;
        memcpy(&m, s.mask, sizeof m);
        if (m.vlan_tag && !p.vlan)
            return false;  // a tag is asked for: an untagged frame has none
        return masked_equal(s.val, s.mask, &p.eth, sizeof p.eth);
    }
    // an L3 or L4 spec matches its protocol whatever its masks
    case kSpecIpv4: return p.l3 == 4 && masked_equal(s.val, s.mask, &p.v4, sizeof p.v4);
    case kSpecIpv6: return p.l3 == 6 && masked_equal(s.val, s.mask, &p.v6, sizeof p.v6);
    case kSpecTcp: return p.l4 == 6 && masked_equal(s.val, s.mask, &p.ports, sizeof p.ports);
    case kSpecUdp: return p.l4 == 17 && masked_equal(s.val, s.mask, &p.ports, sizeof p.ports);
    default: return false;
    }
}

bool same_specs(const Flow& a, const Flow& b) {
    if (a.specs.size() != b.specs.size() || a.drop != b.drop)
        return false;
    for (size_t i = 0; i < a.specs.size(); ++i)
        if (a.specs[i].type != b.specs[i].type || memcmp(a.specs[i].val, b.specs[i].val, 40) ||
            memcmp(a.specs[i].mask, b.specs[i].mask, 40))
            return false;
    return true;
}

}  // namespace

uint32_t toeplitz(const uint8_t* key, size_t key_len, const uint8_t* in, size_t n) {
    // the 32-bit window of the key slides one bit per input bit
    auto key_bit = [&](size_t i) -> uint32_t { return i / 8 < key_len ? (key[i / 8] >> (7 - i % 8)) & 1 : 0; };
    uint32_t window = 0;
    for (size_t i = 0; i < 32; ++i)
        window = window << 1 | key_bit(i);
    uint32_t h = 0;
    for (size_t i = 0; i < n * 8; ++i) {
        if ((in[i / 8] >> (7 - i % 8)) & 1)
            h ^= window;
        window = window << 1 | key_bit(32 + i);
    }
    return h;
}

uint32_t rss_hash(const uint8_t* frame, size_t len, uint64_t fields, const uint8_t key[40]) {
    Parsed p;
    if (!parse(frame, len, p))
        return 0;
    uint8_t in[36];
    size_t n = 0;
    auto put = [&](const void* b, size_t k) {
        memcpy(in + n, b, k);
        n += k;
    };
    if (p.l3 == 4) {
        if (fields & MLX5_RX_HASH_SRC_IPV4)
            put(&p.v4.src_ip, 4);
        if (fields & MLX5_RX_HASH_DST_IPV4)
            put(&p.v4.dst_ip, 4);
    } else if (p.l3 == 6) {
        if (fields & MLX5_RX_HASH_SRC_IPV6)
            put(p.v6.src_ip, 16);
        if (fields & MLX5_RX_HASH_DST_IPV6)
            put(p.v6.dst_ip, 16);
    }
    if (p.l4 == 6 || p.l4 == 17) {
        const bool tcp = p.l4 == 6;
        if (fields & (tcp ? MLX5_RX_HASH_SRC_PORT_TCP : MLX5_RX_HASH_SRC_PORT_UDP))
            put(&p.ports.src_port, 2);
        if (fields & (tcp ? MLX5_RX_HASH_DST_PORT_TCP : MLX5_RX_HASH_DST_PORT_UDP))
            put(&p.ports.dst_port, 2);
    }
    return toeplitz(key, 40, in, n);
}

int decode_flow_specs(const uint8_t* p, size_t len, unsigned num, std::vector<FlowSpec>& out, FlowActions& act) {
    act = FlowActions{};
    unsigned i = 0;
    for (; i < num && len >= sizeof(ib_uverbs_flow_spec_hdr); ++i) {
        ib_uverbs_flow_spec_hdr h;
        memcpy(&h, p, sizeof h);
        if (h.reserved || h.size < sizeof h || h.size > len)
            return -EINVAL;
        if (h.type & kSpecInner)
            return -EOPNOTSUPP;  // tunnel offloads are not modelled
        switch (h.type) {
        case kSpecEth:
        case kSpecIpv4:
        case kSpecIpv6:
        case kSpecTcp:
        case kSpecUdp: {
            // value then mask, each of what the caller sent: shorter than the
            // kernel's filter is zero-extended, longer must be zero beyond it
            const size_t body = h.size - sizeof h;
            if (body % 2)
                return -EINVAL;
            const size_t fs = body / 2, known = filter_size(h.type);
            const uint8_t* v = p + sizeof h;
            const uint8_t* m = v + fs;
            for (size_t k = known; k < fs; ++k)
                if (v[k] || m[k])
                    return -EINVAL;
            FlowSpec s;
            s.type = h.type;
            memcpy(s.val, v, std::min(fs, known));
            memcpy(s.mask, m, std::min(fs, known));
            out.push_back(s);
            break;
        }
        case kSpecActionDrop:
            if (h.size != sizeof h)
                return -EINVAL;
            act.drop = true;
            break;
        case kSpecActionCount: {
            ib_uverbs_flow_spec_action_count c;
            if (h.size != sizeof c || act.count)
                return -EINVAL;
            memcpy(&c, p, sizeof c);
            act.count = true;
            act.counters_handle = c.handle;
            break;
        }
        case kSpecEsp:
        case kSpecVxlan:
        case kSpecGre:
        case kSpecMpls:
        case kSpecActionTag:
        case kSpecActionHandle: return -EOPNOTSUPP;  // known to the core, not modelled by this device
        default: return -EINVAL;
        }
        p += h.size;
        len -= h.size;
    }
    // every spec announced, nothing after them
    if (i != num || len)
        return -EINVAL;
    return 0;
}

namespace {

// A frame a rule took: its counters (if it names any) count it.
void count_frame(const Flow& f, size_t len) {
    if (!f.counters)
        return;
    ++f.counters->packets;
    f.counters->bytes += len;
}

}  // namespace

bool flow_matches(const Flow& f, const uint8_t* frame, size_t len) {
    Parsed p;
    if (!parse(frame, len, p))
        return false;
    for (const FlowSpec& s : f.specs)
        if (!spec_matches(s, p))
            return false;
    return true;
}

// The rules a frame arriving at (device, port) reaches. NORMAL rules by
// priority (lower number first): at the first priority with a match, the
// earliest-created matching rule takes the frame, together with every
// rule of identical specs (one steering entry with several destinations,
// as mlx5_ib adds a QP to an existing entry); a DROP rule there takes it
// to nowhere; DONT_TRAP passes it on to the next priority too. A frame no
// NORMAL rule took goes to the ALL_DEFAULT rules, a multicast one also to
// MC_DEFAULT; SNIFFER rules see every frame.
std::vector<Flow*> steer_frame(int dev_index, uint8_t port, const uint8_t* frame, size_t len) {
    std::vector<Flow*> here, out;
    for (Flow* f : sim().flows)
        if (f->dev_index == dev_index && f->port == port)
            here.push_back(f);
    if (here.empty())
        return out;
    std::stable_sort(here.begin(), here.end(), [](const Flow* a, const Flow* b) {
        return a->priority != b->priority ? a->priority < b->priority : a->seq < b->seq;
    });
    Parsed p;
    const bool ok = parse(frame, len, p);
    bool taken = false;
    for (size_t i = 0; i < here.size() && ok;) {
        size_t j = i;
        while (j < here.size() && here[j]->priority == here[i]->priority)
            ++j;
        Flow* first = nullptr;
        for (size_t k = i; k < j && !first; ++k)
            if (here[k]->type == IBV_FLOW_ATTR_NORMAL && flow_matches(*here[k], frame, len))
                first = here[k];
        if (first) {
            taken = true;
            for (size_t k = i; k < j; ++k)
                if (here[k]->type == IBV_FLOW_ATTR_NORMAL && same_specs(*here[k], *first)) {
                    count_frame(*here[k], len);  // dropped frames are counted too
                    if (!first->drop)
                        out.push_back(here[k]);
                }
            if (!(first->flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP))
                break;
        }
        i = j;
    }
    const bool mcast = frame[0] & 1;
    for (Flow* f : here) {
        if (f->type == IBV_FLOW_ATTR_SNIFFER || (!taken && f->type == IBV_FLOW_ATTR_ALL_DEFAULT) ||
            (!taken && mcast && f->type == IBV_FLOW_ATTR_MC_DEFAULT)) {
            count_frame(*f, len);
            out.push_back(f);
        }
    }
    // one copy per QP
    std::vector<Flow*> uniq;
    for (Flow* f : out)
        if (std::none_of(uniq.begin(), uniq.end(), [&](Flow* g) { return g->qp == f->qp; }))
            uniq.push_back(f);
    return uniq;
}

}  // namespace uvsim
