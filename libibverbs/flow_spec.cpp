// Flow rules from the application's layout (ibv_flow_attr followed by
// ibv_flow_spec_* in verbs.h) to the kernel's (ib_uverbs_flow_attr and
// ib_uverbs_flow_spec_*): the headers differ (an enum and a u16 against a
// u32, a u16 and a reserved u16), the IPv4 specs of both kinds become the
// kernel's one IPv4 type, and action specs carry kernel handles instead of
// pointers. Filters are copied as the application laid them out; the
// kernel takes a filter shorter than its own struct (the rest as zero).
#include "libibverbs/driver.h"

#include <cstring>

namespace rdma::verbs {

namespace {

// The kernel's spec type numbers (its ib_flow_spec_type); the same as the
// library's but for the extended IPv4 spec, which is plain IPv4 there.
constexpr uint32_t kKernIpv4 = 0x30;

// What one spec type takes: the application's struct size, where its
// value filter starts (2-byte aligned filters start right after the u16
// size, 4-byte aligned ones after padding), the kernel's type and the
// length of one filter (the mask follows the value on both sides).
struct SpecShape {
    size_t user_size;
    size_t user_val;
    uint32_t kern_type;
    size_t filter;
};

template <class Spec, class Filter>
SpecShape shape(uint32_t kern_type) {
    // the kernel finds the mask half way through what follows the header,
    // and every spec is a whole number of 8-byte words: no room for padding
    static_assert((sizeof(ib_uverbs_flow_spec_hdr) + 2 * sizeof(Filter)) % 8 == 0);
    return {sizeof(Spec), offsetof(Spec, val), kern_type, sizeof(Filter)};
}

bool shape_of(uint32_t type, SpecShape& s) {
    const uint32_t inner = type & IBV_FLOW_SPEC_INNER;
    switch (type & ~uint32_t(IBV_FLOW_SPEC_INNER)) {
    case IBV_FLOW_SPEC_ETH: s = shape<ibv_flow_spec_eth, ibv_flow_eth_filter>(type); return true;
    case IBV_FLOW_SPEC_IPV4: s = shape<ibv_flow_spec_ipv4, ibv_flow_ipv4_filter>(type); return true;
    case IBV_FLOW_SPEC_IPV4_EXT:
        s = shape<ibv_flow_spec_ipv4_ext, ibv_flow_ipv4_ext_filter>(kKernIpv4 | inner);
        return true;
    case IBV_FLOW_SPEC_IPV6: s = shape<ibv_flow_spec_ipv6, ibv_flow_ipv6_filter>(type); return true;
    case IBV_FLOW_SPEC_ESP: s = shape<ibv_flow_spec_esp, ibv_flow_esp_filter>(type); return true;
    case IBV_FLOW_SPEC_TCP:
    case IBV_FLOW_SPEC_UDP: s = shape<ibv_flow_spec_tcp_udp, ibv_flow_tcp_udp_filter>(type); return true;
    case IBV_FLOW_SPEC_VXLAN_TUNNEL: s = shape<ibv_flow_spec_tunnel, ibv_flow_tunnel_filter>(type); return true;
    case IBV_FLOW_SPEC_GRE: s = shape<ibv_flow_spec_gre, ibv_flow_gre_filter>(type); return true;
    case IBV_FLOW_SPEC_MPLS: s = shape<ibv_flow_spec_mpls, ibv_flow_mpls_filter>(type); return true;
    default: return false;
    }
}

void put_hdr(std::vector<uint8_t>& out, size_t at, uint32_t type, size_t size) {
    ib_uverbs_flow_spec_hdr h{};
    h.type = type;
    h.size = static_cast<uint16_t>(size);
    std::memcpy(out.data() + at, &h, sizeof(h));
}

static_assert(sizeof(ib_uverbs_flow_spec_hdr) == 8);

}  // namespace

int flow_attr_to_kern(const ibv_flow_attr& attr, std::vector<uint8_t>& out) {
    out.assign(sizeof(ib_uverbs_flow_attr), 0);
    ib_uverbs_flow_attr k{};
    k.type = attr.type;
    k.priority = attr.priority;
    k.num_of_specs = attr.num_of_specs;
    k.port = attr.port;
    k.flags = attr.flags;
    // The specs follow the attribute, each as long as its size says. The
    // attribute's own size is not a bound: the reference walks num_of_specs
    // by the specs' sizes alone, and programs (pyverbs among them) leave it
    // at sizeof(ibv_flow_attr).
    const auto* at = reinterpret_cast<const uint8_t*>(&attr + 1);
    for (unsigned i = 0; i < attr.num_of_specs; ++i) {
        uint32_t type;
        uint16_t size;
        std::memcpy(&type, at, sizeof(type));
        std::memcpy(&size, at + offsetof(ibv_flow_spec_eth, size), sizeof(size));
        if (size < sizeof(uint32_t) + sizeof(uint16_t))
            return EINVAL;
        const size_t pos = out.size();
        switch (type) {
        case IBV_FLOW_SPEC_ACTION_TAG: {
            if (size < sizeof(ibv_flow_spec_action_tag))
                return EINVAL;
            ibv_flow_spec_action_tag t;
            std::memcpy(&t, at, sizeof(t));
            ib_uverbs_flow_spec_action_tag kt{};
            kt.type = type;
            kt.size = sizeof(kt);
            kt.tag_id = t.tag_id;
            out.resize(pos + sizeof(kt));
            std::memcpy(out.data() + pos, &kt, sizeof(kt));
            break;
        }
        case IBV_FLOW_SPEC_ACTION_DROP:
            if (size < sizeof(ibv_flow_spec_action_drop))
                return EINVAL;
            out.resize(pos + sizeof(ib_uverbs_flow_spec_action_drop));
            put_hdr(out, pos, type, sizeof(ib_uverbs_flow_spec_action_drop));
            break;
        case IBV_FLOW_SPEC_ACTION_COUNT: {
            // the counters' kernel handle (every provider's counters start
            // with VerbsCounters)
            if (size < sizeof(ibv_flow_spec_counter_action))
                return EINVAL;
            ibv_flow_spec_counter_action a;
            std::memcpy(&a, at, sizeof(a));
            if (!a.counters)
                return EINVAL;
            ib_uverbs_flow_spec_action_count kc{};
            kc.type = type;
            kc.size = sizeof(kc);
            kc.handle = reinterpret_cast<const VerbsCounters*>(a.counters)->handle;
            out.resize(pos + sizeof(kc));
            std::memcpy(out.data() + pos, &kc, sizeof(kc));
            break;
        }
        case IBV_FLOW_SPEC_ACTION_HANDLE: return EOPNOTSUPP;  // no flow action objects here yet
        default: {
            SpecShape s;
            if (!shape_of(type, s) || size < s.user_size)
                return EINVAL;
            const size_t ksize = sizeof(ib_uverbs_flow_spec_hdr) + 2 * s.filter;
            out.resize(pos + ksize);
            put_hdr(out, pos, s.kern_type, ksize);
            // value and mask, as the user laid them out after the header
            std::memcpy(out.data() + pos + sizeof(ib_uverbs_flow_spec_hdr), at + s.user_val, 2 * s.filter);
            break;
        }
        }
        at += size;
        if (out.size() - sizeof(ib_uverbs_flow_attr) > 0xffff)
            return EINVAL;
    }
    // (the kernel's size counts the specs alone; each of its specs is a
    // whole number of 8-byte words)
    k.size = static_cast<uint16_t>(out.size() - sizeof(ib_uverbs_flow_attr));
    std::memcpy(out.data(), &k, sizeof(k));
    return 0;
}

}  // namespace rdma::verbs
