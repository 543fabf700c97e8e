// parse_config / finish_config: the configuration file of the emulator.
#include "harness.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <unistd.h>

using namespace uvsim;

UVSIM_TEST_ENV("config", nullptr)

namespace {

Config parse_ok(const std::string& text) {
    std::string err;
    auto c = parse_config(text, err);
    EXPECT_TRUE(c.has_value()) << "config:\n" << text << "\nerror: " << err;
    return c ? *c : Config{};
}

std::string parse_err(const std::string& text) {
    std::string err;
    auto c = parse_config(text, err);
    EXPECT_FALSE(c.has_value()) << "accepted:\n" << text;
    return err;
}

}  // namespace

TEST(Config, EmptyTextAndComments) {
    Config c = parse_ok("");
    EXPECT_TRUE(c.devices.empty());
    c = parse_ok("# nothing\n\n   \t\n# device mlx5_9\n");
    EXPECT_TRUE(c.devices.empty());
    EXPECT_EQ(c.idle_poll_us, 1000u);
}

TEST(Config, DevicesPortsAndKeys) {
    Config c = parse_ok("device mlx5_0   # the first\n"
                        "ports 2\n"
                        "part_id 4129\n"
                        "vendor_id 0x2c9\n"
                        "hw_ver 0\n"
                        "max_qp 1024\n"
                        "max_cqe 0xffff\n"
                        "max_inline 256\n"
                        "node_guid 0x0002c90300001234\n"
                        "sys_image_guid 0x0002c90300005678\n"
                        "fw_ver 20.40.1000\n"
                        "board_id MT_0000000222\n"
                        "pci 0000:3B:00.1\n"
                        "atomics off\n"
                        "lid 7\n"
                        "port 2 lid 0x30 lmc 2 sm_lid 3 state init mtu 2048 width 8 speed 64\n"
                        "port 1 port_guid 0x1111 gid_prefix 0xfe80000000000001\n"
                        "\tdevice\tmlx5_1\n"
                        "link_layer eth\n"
                        "port 1 mac 0a:0B:0c:0d:0e:0f ipv4 10.1.2.3 netdev eth7\n");
    ASSERT_EQ(c.devices.size(), 2u);
    const DevCfg& d = c.devices[0];
    EXPECT_EQ(d.name, "mlx5_0");
    ASSERT_EQ(d.ports.size(), 2u);
    EXPECT_EQ(d.part_id, 4129u);
    EXPECT_EQ(d.vendor_id, 0x2c9u);
    EXPECT_EQ(d.max_qp, 1024u);
    EXPECT_EQ(d.max_cqe, 0xffffu);
    EXPECT_EQ(d.max_inline, 256u);
    EXPECT_EQ(d.node_guid, 0x0002c90300001234ull);
    EXPECT_EQ(d.sys_image_guid, 0x0002c90300005678ull);
    EXPECT_EQ(d.fw_ver, "20.40.1000");
    EXPECT_EQ(d.board_id, "MT_0000000222");
    EXPECT_EQ(d.pci_addr, "0000:3b:00.1");
    EXPECT_FALSE(d.atomics);
    // a port key at device level applies to every port; "port N" to one
    EXPECT_EQ(d.ports[0].lid, 7);
    EXPECT_EQ(d.ports[0].port_guid, 0x1111u);
    EXPECT_EQ(d.ports[0].gid_prefix, 0xfe80000000000001ull);
    EXPECT_EQ(d.ports[0].state, 4);
    EXPECT_EQ(d.ports[1].lid, 0x30);
    EXPECT_EQ(d.ports[1].lmc, 2);
    EXPECT_EQ(d.ports[1].sm_lid, 3);
    EXPECT_EQ(d.ports[1].state, 2);
    EXPECT_EQ(d.ports[1].active_mtu, 4);  // IBV_MTU_2048
    EXPECT_EQ(d.ports[1].width, 8);
    EXPECT_EQ(d.ports[1].speed, 64);
    const DevCfg& e = c.devices[1];
    EXPECT_EQ(e.name, "mlx5_1");
    ASSERT_EQ(e.ports.size(), 1u);
    EXPECT_TRUE(e.ports[0].ethernet);
    const uint8_t mac[6] = {0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f};
    EXPECT_EQ(memcmp(e.ports[0].mac, mac, 6), 0);
    EXPECT_EQ(e.ports[0].ipv4, 0x0a010203u);
    EXPECT_EQ(e.ports[0].netdev, "eth7");
}

TEST(Config, CqeCompression) {
    EXPECT_EQ(parse_ok("device a\n").devices[0].cqe_comp_max_num, 64u);
    EXPECT_EQ(parse_ok("device a\ncqe_compression off\n").devices[0].cqe_comp_max_num, 0u);
    EXPECT_EQ(parse_ok("device a\ncqe_compression 2\n").devices[0].cqe_comp_max_num, 2u);
    EXPECT_EQ(parse_ok("device a\ncqe_compression 1000\n").devices[0].cqe_comp_max_num, 1000u);
}

TEST(Config, UarObjects) {
    EXPECT_TRUE(parse_ok("device a\n").devices[0].uar_objects);
    EXPECT_FALSE(parse_ok("device a\nuar_objects off\n").devices[0].uar_objects);
    EXPECT_NE(parse_err("device a\nuar_objects maybe\n").find("uar_objects must be on or off"), std::string::npos);
}

TEST(Config, PortsCopiesTheFirstPort) {
    Config c = parse_ok("device a\nlink_layer roce\nports 2\n");
    ASSERT_EQ(c.devices[0].ports.size(), 2u);
    EXPECT_TRUE(c.devices[0].ports[1].ethernet);
}

TEST(Config, LinkLayerSpellings) {
    for (const char* v : {"ib", "infiniband"})
        EXPECT_FALSE(parse_ok(std::string("device a\nlink_layer ") + v + "\n").devices[0].ports[0].ethernet);
    for (const char* v : {"eth", "ethernet", "roce"})
        EXPECT_TRUE(parse_ok(std::string("device a\nlink_layer ") + v + "\n").devices[0].ports[0].ethernet);
}

TEST(Config, PortStatesAndMtus) {
    const std::pair<const char*, int> states[] = {{"down", 1}, {"init", 2}, {"armed", 3}, {"active", 4}};
    for (auto [name, v] : states)
        EXPECT_EQ(parse_ok(std::string("device a\nstate ") + name + "\n").devices[0].ports[0].state, v);
    const std::pair<int, int> mtus[] = {{256, 1}, {512, 2}, {1024, 3}, {2048, 4}, {4096, 5}};
    for (auto [bytes, v] : mtus)
        EXPECT_EQ(parse_ok("device a\nmtu " + std::to_string(bytes) + "\n").devices[0].ports[0].active_mtu, v);
}

TEST(Config, FaultsRunDirTraceIdlePoll) {
    Config c = parse_ok("fault cqe_error_at 5 syndrome 0x13\n"
                        "fault fatal_after_ms 250 drop_every 3\n"
                        "run_dir /tmp/somewhere\n"
                        "trace -\n"
                        "idle_poll_us 20\n");
    EXPECT_EQ(c.faults.cqe_error_at, 5u);
    EXPECT_EQ(c.faults.cqe_error_syndrome, 0x13);
    EXPECT_EQ(c.faults.fatal_after_ms, 250u);
    EXPECT_EQ(c.faults.drop_every, 3u);
    EXPECT_EQ(c.run_dir, "/tmp/somewhere");
    EXPECT_EQ(c.trace_file, "-");
    EXPECT_EQ(c.idle_poll_us, 20u);
    EXPECT_TRUE(c.devices.empty());
}

TEST(Config, ErrorsNameTheLine) {
    // (text, expected error) — the line number counts every line
    const std::pair<std::string, std::string> cases[] = {
        {"frobnicate 1\n", "line 1: unknown key 'frobnicate' (device keys follow a device line)"},
        {"\n\ndevice a\nfoo 1\n", "line 4: unknown device key 'foo'"},
        {"device a\nmax_qp\n", "line 2: max_qp takes one value"},
        {"device a\nmax_qp 1 2\n", "line 2: max_qp takes one value"},
        {"device\n", "line 1: device takes one name"},
        {"device a b\n", "line 1: device takes one name"},
        {"device " + std::string(64, 'x') + "\n", "line 1: bad device name"},
        {"device a\ndevice b\ndevice a\n", "line 3: device a given twice"},
        {"port 1 lid 3\n", "line 1: port before any device"},
        {"device a\nport 2 lid 3\n", "line 2: port N key value...: N must be an existing port"},
        {"device a\nport 0 lid 3\n", "line 2: port N key value...: N must be an existing port"},
        {"device a\nport x lid 3\n", "line 2: port N key value...: N must be an existing port"},
        {"device a\nport 1 lid\n", "line 2: port N key value...: N must be an existing port"},
        {"device a\nport 1 lid 3 lmc\n", "line 2: port N key value...: N must be an existing port"},
        {"device a\nport 1 colour red\n", "line 2: unknown port key 'colour'"},
        {"device a\nmax_qp 0\n", "line 2: max_qp must be a positive 32-bit number"},
        {"device a\nmax_cqe 0x100000000\n", "line 2: max_cqe must be a positive 32-bit number"},
        {"device a\nmax_sge -1\n", "line 2: max_sge must be a positive 32-bit number"},
        {"device a\nmax_pd 12abc\n", "line 2: max_pd must be a positive 32-bit number"},
        {"device a\nmax_mr 0x\n", "line 2: max_mr must be a positive 32-bit number"},
        {"device a\ncqe_compression 1\n", "line 2: cqe_compression must be off or a session size from 2 to 65535"},
        {"device a\ncqe_compression on\n", "line 2: cqe_compression must be off or a session size from 2 to 65535"},
        {"device a\ncqe_compression 65536\n", "line 2: cqe_compression must be off or a session size from 2 to 65535"},
        {"device a\nports 3\n", "line 2: ports must be 1 or 2"},
        {"device a\nports 0\n", "line 2: ports must be 1 or 2"},
        {"device a\nnode_guid zz\n", "line 2: bad node_guid"},
        {"device a\nsys_image_guid 0xg\n", "line 2: bad sys_image_guid"},
        {"device a\npci 08:00.0\n", "line 2: pci must be DDDD:BB:DD.F"},
        {"device a\npci 0000:08:00.0x\n", "line 2: pci must be DDDD:BB:DD.F"},
        {"device a\npci 0:8:0.0\n", "line 2: pci must be DDDD:BB:DD.F"},
        {"device a\npci 0000:08:00.8\n", "line 2: pci must be DDDD:BB:DD.F"},
        {"device a\npci 0000:0g:00.0\n", "line 2: pci must be DDDD:BB:DD.F"},
        {"device a\npci 0000:08:00/0\n", "line 2: pci must be DDDD:BB:DD.F"},
        {"device a\natomics yes\n", "line 2: atomics must be on or off"},
        {"device a\nlink_layer opa\n", "line 2: link_layer must be ib or eth"},
        {"device a\nlid 0\n", "line 2: lid must be a unicast LID (1-0xbfff)"},
        {"device a\nlid 0xc000\n", "line 2: lid must be a unicast LID (1-0xbfff)"},
        {"device a\nlmc 8\n", "line 2: lmc must be 0-7"},
        {"device a\nsm_lid 0xffff\n", "line 2: bad sm_lid"},
        {"device a\nstate up\n", "line 2: state must be down, init, armed or active"},
        {"device a\nmtu 1500\n", "line 2: mtu must be 256, 512, 1024, 2048 or 4096"},
        {"device a\nmtu big\n", "line 2: mtu must be 256, 512, 1024, 2048 or 4096"},
        {"device a\nwidth 3\n", "line 2: width is an ibv width code (1, 2, 4, 8, 16)"},
        {"device a\nspeed 0\n", "line 2: speed is an ibv speed code (1 SDR ... 32 EDR, 64 HDR, 128 NDR)"},
        {"device a\nspeed 256\n", "line 2: speed is an ibv speed code (1 SDR ... 32 EDR, 64 HDR, 128 NDR)"},
        {"device a\nport_guid x\n", "line 2: bad port_guid"},
        {"device a\ngid_prefix -\n", "line 2: bad gid_prefix"},
        {"device a\nmac 00:11:22:33:44\n", "line 2: mac must be xx:xx:xx:xx:xx:xx"},
        {"device a\nmac 00:11:22:33:44:55:66\n", "line 2: mac must be xx:xx:xx:xx:xx:xx"},
        {"device a\nmac 00:11:22:33:44:100\n", "line 2: mac must be xx:xx:xx:xx:xx:xx"},
        {"device a\nmac 00:11:22:33:44:5g\n", "line 2: mac must be xx:xx:xx:xx:xx:xx"},
        {"device a\nipv4 10.0.0\n", "line 2: ipv4 must be a dotted quad"},
        {"device a\nipv4 10.0.0.256\n", "line 2: ipv4 must be a dotted quad"},
        {"device a\nipv4 10.0.0.1x\n", "line 2: ipv4 must be a dotted quad"},
        {"device a\nnetdev " + std::string(16, 'n') + "\n", "line 2: netdev must be 1-15 characters"},
        {"fault\n", "line 1: fault key value..."},
        {"fault cqe_error_at\n", "line 1: fault key value..."},
        {"fault cqe_error_at 1 syndrome\n", "line 1: fault key value..."},
        {"fault cqe_error_at many\n", "line 1: fault cqe_error_at needs a number"},
        {"fault syndrome 0\n", "line 1: syndrome is one byte"},
        {"fault syndrome 0x100\n", "line 1: syndrome is one byte"},
        {"fault meltdown 1\n", "line 1: unknown fault 'meltdown'"},
        {"run_dir\n", "line 1: run_dir takes a path"},
        {"run_dir a b\n", "line 1: run_dir takes a path"},
        {"trace\n", "line 1: trace takes a path or -"},
        {"idle_poll_us 0\n", "line 1: idle_poll_us takes 1-1000000"},
        {"idle_poll_us 1000001\n", "line 1: idle_poll_us takes 1-1000000"},
        {"idle_poll_us\n", "line 1: idle_poll_us takes 1-1000000"},
    };
    for (const auto& [text, want] : cases)
        EXPECT_EQ(parse_err(text), want) << "config:\n" << text;
}

TEST(Config, LastLineWithoutNewline) {
    EXPECT_EQ(parse_err("device a\n# x\nmax_qp 0"), "line 3: max_qp must be a positive 32-bit number");
}

TEST(Config, SixteenDevicesAtMost) {
    std::string text;
    for (int i = 0; i < 16; ++i)
        text += "device d" + std::to_string(i) + "\n";
    EXPECT_EQ(parse_ok(text).devices.size(), 16u);
    EXPECT_EQ(parse_err(text + "device d16\n"), "line 17: at most 16 devices");
}

TEST(Config, FinishFillsDefaults) {
    Config c;
    finish_config(c);
    ASSERT_EQ(c.devices.size(), 1u);
    const DevCfg& d = c.devices[0];
    EXPECT_EQ(d.name, "mlx5_0");
    ASSERT_EQ(d.ports.size(), 1u);
    EXPECT_EQ(d.node_guid, 0xb8cef60300a0b000ull);
    EXPECT_EQ(d.sys_image_guid, d.node_guid);
    EXPECT_EQ(d.pci_addr, "0000:08:00.0");
    EXPECT_EQ(d.part_id, 4119u);  // ConnectX-5
    EXPECT_EQ(d.ports[0].lid, 1);
    EXPECT_EQ(d.ports[0].sm_lid, 1);
    EXPECT_EQ(d.ports[0].port_guid, d.node_guid);
    const char* t = getenv("TMPDIR");
    EXPECT_EQ(c.run_dir, std::string(t && *t ? t : "/tmp") + "/uverbs-sim-" + std::to_string(getuid()));
}

TEST(Config, FinishNumbersDevicesAndPorts) {
    Config c =
        parse_ok("device mlx5_0\nports 2\nport 2 lmc 1\n"
                 "device mlx5_1\nports 2\nlink_layer eth\nport 2 mac 02:00:00:00:00:09 ipv4 1.2.3.4 netdev ens9\n"
                 "device mlx5_2\nport 1 lid 0x40\n"
                 "device mlx5_3\n"
                 "run_dir /r\n");
    finish_config(c);
    ASSERT_EQ(c.devices.size(), 4u);
    const DevCfg &a = c.devices[0], &b = c.devices[1], &x = c.devices[2], &y = c.devices[3];
    // LIDs in order, a port with LMC taking 2^lmc of them
    EXPECT_EQ(a.ports[0].lid, 1);
    EXPECT_EQ(a.ports[1].lid, 2);
    EXPECT_EQ(x.ports[0].lid, 0x40);
    EXPECT_EQ(y.ports[0].lid, 0x41);
    // GUIDs: one node GUID per device (16 apart), port GUIDs follow it
    EXPECT_EQ(a.node_guid, 0xb8cef60300a0b000ull);
    EXPECT_EQ(a.ports[1].port_guid, a.node_guid + 1);
    EXPECT_EQ(b.node_guid, 0xb8cef60300a0b010ull);
    EXPECT_EQ(x.node_guid, 0xb8cef60300a0b020ull);
    EXPECT_EQ(x.pci_addr, "0000:0a:00.0");
    // Ethernet ports: no LIDs, a MAC, an IPv4 address and a netdev name
    for (const PortCfg& p : b.ports) {
        EXPECT_TRUE(p.ethernet);
        EXPECT_EQ(p.lid, 0);
        EXPECT_EQ(p.sm_lid, 0);
    }
    const uint8_t mac0[6] = {0xb8, 0xce, 0xf6, 0x00, 0x01, 0x00};
    EXPECT_EQ(memcmp(b.ports[0].mac, mac0, 6), 0);
    EXPECT_EQ(b.ports[0].ipv4, (10u << 24) | (79u << 16) | 3u);
    EXPECT_EQ(b.ports[0].netdev, "uvsim2");
    const uint8_t mac1[6] = {0x02, 0, 0, 0, 0, 0x09};
    EXPECT_EQ(memcmp(b.ports[1].mac, mac1, 6), 0);
    EXPECT_EQ(b.ports[1].ipv4, 0x01020304u);
    EXPECT_EQ(b.ports[1].netdev, "ens9");
    EXPECT_EQ(c.run_dir, "/r");
}

TEST(Config, FinishKeepsGivenValues) {
    Config c = parse_ok("device z\nnode_guid 0x77\nsys_image_guid 0x99\npci 0000:81:00.1\nlid 9\nsm_lid 4\n");
    finish_config(c);
    const DevCfg& d = c.devices[0];
    EXPECT_EQ(d.node_guid, 0x77u);
    EXPECT_EQ(d.sys_image_guid, 0x99u);
    EXPECT_EQ(d.pci_addr, "0000:81:00.1");
    EXPECT_EQ(d.ports[0].lid, 9);
    EXPECT_EQ(d.ports[0].sm_lid, 4);
    EXPECT_EQ(d.ports[0].port_guid, 0x77u);
}

TEST(Config, AutomaticLidsSkipGivenOnes) {
    // a LID given to a later port is not handed out again to an earlier one
    Config c = parse_ok("device a\ndevice b\nlid 1\ndevice c\n");
    finish_config(c);
    EXPECT_EQ(c.devices[1].ports[0].lid, 1);
    EXPECT_NE(c.devices[0].ports[0].lid, 1);
    EXPECT_NE(c.devices[2].ports[0].lid, 1);
    EXPECT_NE(c.devices[0].ports[0].lid, c.devices[2].ports[0].lid);
}

TEST(Config, ProcessConfigComesFromTheEnvironment) {
    // this program's environment: its own run directory, no file
    EXPECT_EQ(cfg().run_dir, uvsim_test::run_dir());
    ASSERT_EQ(cfg().devices.size(), 1u);
    EXPECT_EQ(cfg().devices[0].name, "mlx5_0");
    EXPECT_TRUE(cfg().trace_file.empty());
}
