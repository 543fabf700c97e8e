// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// IBNETDISC_1.1 extended speed helpers on hand-built PortInfo attributes.
#include <infiniband/ibnetdisc.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace {

struct PortInfo {
    uint8_t b[IB_SMP_DATA_SIZE] = {};
    void set(MAD_FIELDS f, uint32_t v) { mad_set_field(b, 0, f, v); }
};

std::string text(char* (*fn)(char*, int, int), int v, int size = 128) {
    char buf[128];
    std::memset(buf, 'x', sizeof(buf));
    return fn(buf, size, v);
}

TEST(AggSpeed, NoCapabilityMeansNoExtendedSpeed) {
    PortInfo p;
    p.set(IB_PORT_LINK_SPEED_EXT_ACTIVE_F, 2);
    EXPECT_EQ(ibnd_get_agg_linkspeedext(p.b, p.b), 0);
    EXPECT_EQ(ibnd_get_agg_linkspeedext(nullptr, p.b), 0);
}

TEST(AggSpeed, ExtendedSpeedsFromCapabilityPort) {
    PortInfo cap, p;
    cap.set(IB_PORT_CAPMASK_F, 1u << 14);
    p.set(IB_PORT_LINK_SPEED_EXT_ACTIVE_F, 2);
    p.set(IB_PORT_LINK_SPEED_EXT_SUPPORTED_F, 3);
    p.set(IB_PORT_LINK_SPEED_EXT_ENABLED_F, 3);
    EXPECT_EQ(ibnd_get_agg_linkspeedext(cap.b, p.b), 2);
    EXPECT_EQ(ibnd_get_agg_linkspeedextsup(cap.b, p.b), 3);
    EXPECT_EQ(ibnd_get_agg_linkspeedexten(cap.b, p.b), 3);
    // the capability lives in cap_info, not in the port itself
    EXPECT_EQ(ibnd_get_agg_linkspeedext(p.b, p.b), 0);
}

TEST(AggSpeed, EnabledAllOnesReadsAsZero) {
    PortInfo cap;
    cap.set(IB_PORT_CAPMASK_F, 1u << 14);
    cap.set(IB_PORT_LINK_SPEED_EXT_ENABLED_F, 30);
    EXPECT_EQ(ibnd_get_agg_linkspeedexten(cap.b, cap.b), 0);
    EXPECT_EQ(ibnd_get_agg_linkspeedext_field(cap.b, cap.b, IB_PORT_LINK_SPEED_EXT_ENABLED_F, IB_NO_FIELD), 0);
}

TEST(AggSpeed, Names) {
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedext, 0), "No Extended Speed");
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedext, 1), "14.0625 Gbps");
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedext, 2), "25.78125 Gbps");
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedext, 4), "53.125 Gbps");
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedext, 8), "106.25 Gbps");
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedext, 16), "undefined (16)");
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedext, 32), "212.5 Gbps");
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedext, 3), "undefined (3)");
}

TEST(AggSpeed, BitSets) {
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedext_bits, 0), "0");
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedext_bits, 1), "14.0625 Gbps");
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedext_bits, 3), "14.0625 Gbps or 25.78125 Gbps");
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedexten, 0x2f),
              "14.0625 Gbps or 25.78125 Gbps or 53.125 Gbps or 106.25 Gbps or 212.5 Gbps");
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedextsup, 0x41), "14.0625 Gbps or undefined (65)");
    // cut short by the buffer: still a terminated string inside it
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedext_bits, 3, 10), "14.0625 G");
    // only the unused bit: nothing to name (the reference writes before
    // the buffer here)
    EXPECT_EQ(text(ibnd_dump_agg_linkspeedext_bits, 16), "");
}

TEST(Xsigo, GuidRules) {
    EXPECT_TRUE(ibnd_is_xsigo_guid(0x0013970000000001ULL));
    EXPECT_FALSE(ibnd_is_xsigo_guid(0x0013980000000001ULL));
    EXPECT_TRUE(ibnd_is_xsigo_hca(0x0013970212345678ULL));
    EXPECT_FALSE(ibnd_is_xsigo_hca(0x0013970312345678ULL));
    EXPECT_TRUE(ibnd_is_xsigo_tca(0x0013970312345678ULL));
}

TEST(NullArguments, AreRefused) {
    EXPECT_EQ(ibnd_find_node_guid(nullptr, 1), nullptr);
    EXPECT_EQ(ibnd_find_port_guid(nullptr, 1), nullptr);
    EXPECT_EQ(ibnd_find_port_lid(nullptr, 1), nullptr);
    EXPECT_EQ(ibnd_find_port_dr(nullptr, nullptr), nullptr);
    EXPECT_EQ(ibnd_find_node_dr(nullptr, nullptr), nullptr);
    EXPECT_EQ(ibnd_get_chassis_type(nullptr), nullptr);
    EXPECT_EQ(ibnd_get_chassis_slot_str(nullptr, nullptr, 0), nullptr);
    EXPECT_EQ(ibnd_get_chassis_guid(nullptr, 1), 0u);
    EXPECT_EQ(ibnd_load_fabric(nullptr, 0), nullptr);
    EXPECT_EQ(ibnd_load_fabric("/nonexistent/cache", 0), nullptr);
    EXPECT_EQ(ibnd_cache_fabric(nullptr, "/tmp/x", 0), -1);
    ibnd_iter_nodes(nullptr, nullptr, nullptr);
    ibnd_iter_ports(nullptr, nullptr, nullptr);
    ibnd_iter_nodes_type(nullptr, nullptr, 2, nullptr);
    ibnd_destroy_fabric(nullptr);
}

}  // namespace
