// Flow rules as the kernel reads them: the application's ibv_flow_attr and
// specs (verbs.h) turned into ib_uverbs_flow_attr and ib_uverbs_flow_spec_*
// (the kernel's uapi structs, filled here field by field), byte for byte.
#include "libibverbs/driver.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstring>
#include <vector>

using rdma::verbs::flow_attr_to_kern;

namespace {

// An ibv_flow_attr followed by its specs, as applications build it.
template <class... Specs>
std::vector<uint8_t> user_rule(ibv_flow_attr attr, const Specs&... specs) {
    std::vector<uint8_t> b(sizeof(attr));
    attr.num_of_specs = sizeof...(Specs);
    attr.size = static_cast<uint16_t>(sizeof(attr) + (sizeof(Specs) + ... + 0));
    std::memcpy(b.data(), &attr, sizeof(attr));
    (
        [&] {
            const auto* p = reinterpret_cast<const uint8_t*>(&specs);
            b.insert(b.end(), p, p + sizeof(specs));
        }(),
        ...);
    return b;
}

template <class T>
void append(std::vector<uint8_t>& v, const T& t) {
    const auto* p = reinterpret_cast<const uint8_t*>(&t);
    v.insert(v.end(), p, p + sizeof(t));
}

ibv_flow_attr base_attr() {
    ibv_flow_attr a{};
    a.type = IBV_FLOW_ATTR_NORMAL;
    a.priority = 3;
    a.port = 1;
    a.flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
    return a;
}

}  // namespace

TEST(FlowSpec, EthIpv4TcpAndActionsAsTheKernelReadsThem) {
    ibv_flow_spec_eth eth{};
    eth.type = IBV_FLOW_SPEC_ETH;
    eth.size = sizeof(eth);
    const uint8_t mac[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
    std::memcpy(eth.val.dst_mac, mac, 6);
    std::memset(eth.mask.dst_mac, 0xff, 6);
    eth.val.ether_type = htons(0x0800);
    eth.mask.ether_type = 0xffff;
    ibv_flow_spec_ipv4_ext ip{};
    ip.type = IBV_FLOW_SPEC_IPV4_EXT;
    ip.size = sizeof(ip);
    ip.val.dst_ip = htonl(0x0a000001);
    ip.mask.dst_ip = 0xffffffff;
    ip.val.proto = 6;
    ip.mask.proto = 0xff;
    ibv_flow_spec_tcp_udp tcp{};
    tcp.type = static_cast<ibv_flow_spec_type>(IBV_FLOW_SPEC_TCP | IBV_FLOW_SPEC_INNER);
    tcp.size = sizeof(tcp);
    tcp.val.dst_port = htons(4791);
    tcp.mask.dst_port = 0xffff;
    ibv_flow_spec_action_tag tag{};
    tag.type = IBV_FLOW_SPEC_ACTION_TAG;
    tag.size = sizeof(tag);
    tag.tag_id = 0x1234;
    ibv_flow_spec_action_drop drop{};
    drop.type = IBV_FLOW_SPEC_ACTION_DROP;
    drop.size = sizeof(drop);
    std::vector<uint8_t> user = user_rule(base_attr(), eth, ip, tcp, tag, drop);

    std::vector<uint8_t> want;
    ib_uverbs_flow_attr ka{};
    ka.type = IBV_FLOW_ATTR_NORMAL;
    ka.priority = 3;
    ka.num_of_specs = 5;
    ka.port = 1;
    ka.flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
    ka.size = sizeof(ib_uverbs_flow_spec_eth) + sizeof(ib_uverbs_flow_spec_ipv4) + sizeof(ib_uverbs_flow_spec_tcp_udp) +
        sizeof(ib_uverbs_flow_spec_action_tag) + sizeof(ib_uverbs_flow_spec_action_drop);
    append(want, ka);
    ib_uverbs_flow_spec_eth ke{};
    ke.type = 0x20;
    ke.size = sizeof(ke);
    std::memcpy(ke.val.dst_mac, mac, 6);
    std::memset(ke.mask.dst_mac, 0xff, 6);
    ke.val.ether_type = htons(0x0800);
    ke.mask.ether_type = 0xffff;
    append(want, ke);
    ib_uverbs_flow_spec_ipv4 ki{};
    ki.type = 0x30;  // the extended spec is the kernel's one IPv4 spec
    ki.size = sizeof(ki);
    ki.val.dst_ip = htonl(0x0a000001);
    ki.mask.dst_ip = 0xffffffff;
    ki.val.proto = 6;
    ki.mask.proto = 0xff;
    append(want, ki);
    ib_uverbs_flow_spec_tcp_udp kt{};
    kt.type = 0x140;
    kt.size = sizeof(kt);
    kt.val.dst_port = htons(4791);
    kt.mask.dst_port = 0xffff;
    append(want, kt);
    ib_uverbs_flow_spec_action_tag ktag{};
    ktag.type = 0x1000;
    ktag.size = sizeof(ktag);
    ktag.tag_id = 0x1234;
    append(want, ktag);
    ib_uverbs_flow_spec_action_drop kd{};
    kd.type = 0x1001;
    kd.size = sizeof(kd);
    append(want, kd);

    std::vector<uint8_t> got;
    ASSERT_EQ(flow_attr_to_kern(*reinterpret_cast<ibv_flow_attr*>(user.data()), got), 0);
    EXPECT_EQ(got, want);
}

TEST(FlowSpec, BasicIpv4KeepsItsShortFilterAndIpv6ItsWholeOne) {
    ibv_flow_spec_ipv4 ip{};
    ip.type = IBV_FLOW_SPEC_IPV4;
    ip.size = sizeof(ip);
    ip.val.src_ip = htonl(0xc0a80001);
    ip.mask.src_ip = htonl(0xffffff00);
    ibv_flow_spec_ipv6 ip6{};
    ip6.type = IBV_FLOW_SPEC_IPV6;
    ip6.size = sizeof(ip6);
    ip6.val.dst_ip[15] = 1;
    ip6.mask.dst_ip[15] = 0xff;
    ip6.val.next_hdr = 17;
    ip6.mask.next_hdr = 0xff;
    std::vector<uint8_t> user = user_rule(base_attr(), ip, ip6);
    std::vector<uint8_t> got;
    ASSERT_EQ(flow_attr_to_kern(*reinterpret_cast<ibv_flow_attr*>(user.data()), got), 0);
    // IPv4 of two addresses: the kernel's header and 8-byte filters (it
    // reads a filter shorter than its struct as the front of it)
    std::vector<uint8_t> want;
    ib_uverbs_flow_attr ka{};
    ka.type = IBV_FLOW_ATTR_NORMAL;
    ka.priority = 3;
    ka.num_of_specs = 2;
    ka.port = 1;
    ka.flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
    ka.size = 24 + sizeof(ib_uverbs_flow_spec_ipv6);
    append(want, ka);
    ib_uverbs_flow_spec_hdr h{0x30, 24, 0};
    append(want, h);
    const uint32_t ip4[4] = {htonl(0xc0a80001), 0, htonl(0xffffff00), 0};
    append(want, ip4);
    ib_uverbs_flow_spec_ipv6 k6{};
    k6.type = 0x31;
    k6.size = sizeof(k6);
    k6.val.dst_ip[15] = 1;
    k6.mask.dst_ip[15] = 0xff;
    k6.val.next_hdr = 17;
    k6.mask.next_hdr = 0xff;
    append(want, k6);
    EXPECT_EQ(got, want);
}

TEST(FlowSpec, BadSpecsAreRefused) {
    std::vector<uint8_t> got;
    ibv_flow_spec_eth eth{};
    eth.type = IBV_FLOW_SPEC_ETH;
    eth.size = sizeof(eth) - 4;  // smaller than its type's struct
    std::vector<uint8_t> user = user_rule(base_attr(), eth);
    EXPECT_EQ(flow_attr_to_kern(*reinterpret_cast<ibv_flow_attr*>(user.data()), got), EINVAL);

    eth.size = sizeof(eth);
    eth.type = static_cast<ibv_flow_spec_type>(0x77);  // no such type
    user = user_rule(base_attr(), eth);
    EXPECT_EQ(flow_attr_to_kern(*reinterpret_cast<ibv_flow_attr*>(user.data()), got), EINVAL);

    // the attribute's size is no bound (programs leave it at the
    // attribute's own size): the specs' sizes are
    eth.type = IBV_FLOW_SPEC_ETH;
    user = user_rule(base_attr(), eth);
    auto* attr = reinterpret_cast<ibv_flow_attr*>(user.data());
    attr->size = sizeof(ibv_flow_attr);
    ASSERT_EQ(flow_attr_to_kern(*attr, got), 0);
    EXPECT_EQ(got.size(), sizeof(ib_uverbs_flow_attr) + sizeof(ib_uverbs_flow_spec_eth));

    // a count action: the kernel's spec carries the counters' handle
    rdma::verbs::VerbsCounters vc{};
    vc.handle = 0x1234;
    ibv_flow_spec_counter_action cnt{};
    cnt.type = IBV_FLOW_SPEC_ACTION_COUNT;
    cnt.size = sizeof(cnt);
    cnt.counters = &vc.counters;
    user = user_rule(base_attr(), cnt);
    ASSERT_EQ(flow_attr_to_kern(*reinterpret_cast<ibv_flow_attr*>(user.data()), got), 0);
    ASSERT_EQ(got.size(), sizeof(ib_uverbs_flow_attr) + sizeof(ib_uverbs_flow_spec_action_count));
    ib_uverbs_flow_spec_action_count kc;
    std::memcpy(&kc, got.data() + sizeof(ib_uverbs_flow_attr), sizeof(kc));
    EXPECT_EQ(kc.type, uint32_t(IBV_FLOW_SPEC_ACTION_COUNT));
    EXPECT_EQ(kc.size, sizeof(kc));
    EXPECT_EQ(kc.reserved, 0);
    EXPECT_EQ(kc.handle, 0x1234u);
    EXPECT_EQ(kc.reserved1, 0u);
    cnt.counters = nullptr;  // no counters
    user = user_rule(base_attr(), cnt);
    EXPECT_EQ(flow_attr_to_kern(*reinterpret_cast<ibv_flow_attr*>(user.data()), got), EINVAL);
    cnt.size = 8;  // shorter than the application's struct
    user = user_rule(base_attr(), cnt);
    EXPECT_EQ(flow_attr_to_kern(*reinterpret_cast<ibv_flow_attr*>(user.data()), got), EINVAL);

    ibv_flow_spec_action_handle act{};
    act.type = IBV_FLOW_SPEC_ACTION_HANDLE;
    act.size = sizeof(act);
    user = user_rule(base_attr(), act);
    EXPECT_EQ(flow_attr_to_kern(*reinterpret_cast<ibv_flow_attr*>(user.data()), got), EOPNOTSUPP);

    // no specs at all: the attribute alone (a default rule of a port)
    user = user_rule(base_attr());
    ASSERT_EQ(flow_attr_to_kern(*reinterpret_cast<ibv_flow_attr*>(user.data()), got), 0);
    EXPECT_EQ(got.size(), sizeof(ib_uverbs_flow_attr));
}
