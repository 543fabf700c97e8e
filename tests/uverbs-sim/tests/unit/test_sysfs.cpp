// The sysfs / dev tree of a two-device configuration (an InfiniBand device
// and an Ethernet one, two ports each) and the path mapping of the
// interposers.
#include "harness.h"

#include <climits>
#include <cstdlib>
#include <fnmatch.h>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace uvsim;

UVSIM_TEST_ENV("sysfs", uvsim_test::kTwoDevices)

namespace {

// A file of the tree, by its path as the application names it.
std::string read_app(const std::string& path) {
    const std::string real = map_path(path.c_str());
    EXPECT_FALSE(real.empty()) << path << " is not mapped";
    std::ifstream f(real);
    EXPECT_TRUE(static_cast<bool>(f)) << "cannot read " << real << " (" << path << ")";
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string real_path(const std::string& app_path) {
    char buf[PATH_MAX];
    const std::string m = map_path(app_path.c_str());
    if (m.empty() || !realpath(m.c_str(), buf))
        return {};
    return buf;
}

const std::string kVerbs = "/sys/class/infiniband_verbs";
const std::string kIb = "/sys/class/infiniband";

}  // namespace

TEST(Sysfs, TreeLivesInTheRunDir) {
    const std::string& root = tree_root();
    ASSERT_FALSE(root.empty());
    EXPECT_EQ(root.rfind(uvsim_test::run_dir() + "/tree-", 0), 0u) << root;
    struct stat st;
    ASSERT_EQ(stat(root.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
}

TEST(Sysfs, VerbsClass) {
    EXPECT_EQ(read_app(kVerbs + "/abi_version"), "6\n");
    EXPECT_EQ(read_app(kVerbs + "/uverbs0/ibdev"), "mlx5_0\n");
    EXPECT_EQ(read_app(kVerbs + "/uverbs1/ibdev"), "mlx5_1\n");
    EXPECT_EQ(read_app(kVerbs + "/uverbs0/abi_version"), "1\n");
    EXPECT_EQ(read_app(kVerbs + "/uverbs0/dev"), "231:192\n");
    EXPECT_EQ(read_app(kVerbs + "/uverbs1/dev"), "231:193\n");
    EXPECT_TRUE(map_path((kVerbs + "/uverbs2/ibdev").c_str()) != "" &&
                access(map_path((kVerbs + "/uverbs2/ibdev").c_str()).c_str(), F_OK) != 0)
        << "only two devices are configured";
}

TEST(Sysfs, DeviceLinksReachThePciFunction) {
    // uverbsN/device and infiniband/<name>/device are the same PCI function
    // inside the tree (relative links)
    const std::string v0 = real_path(kVerbs + "/uverbs0/device");
    const std::string i0 = real_path(kIb + "/mlx5_0/device");
    const std::string v1 = real_path(kVerbs + "/uverbs1/device");
    ASSERT_FALSE(v0.empty());
    EXPECT_EQ(v0, i0);
    EXPECT_NE(v0, v1);
    EXPECT_EQ(v0.rfind(tree_root(), 0), 0u) << v0 << " leaves the tree";
    EXPECT_EQ(v0.substr(v0.size() - 13), "/0000:08:00.0");
    EXPECT_EQ(v1.substr(v1.size() - 13), "/0000:09:00.0");
    char target[PATH_MAX];
    ssize_t n = readlink(map_path((kVerbs + "/uverbs0/device").c_str()).c_str(), target, sizeof target - 1);
    ASSERT_GT(n, 0);
    target[n] = 0;
    EXPECT_EQ(target[0], '.') << "absolute link " << target;
}

TEST(Sysfs, ClassEntryIsALinkUnderThePciFunction) {
    // As Linux has it: /sys/class/infiniband/<name> links to
    // devices/<PCI function>/infiniband/<name>, so walking up from its real
    // path finds the PCI function (its vendor and device files), as UCX
    // does; and the function's local_cpus mask is there.
    const std::string d0 = real_path(kIb + "/mlx5_0");
    ASSERT_FALSE(d0.empty());
    EXPECT_EQ(d0, tree_root() + "/sys/devices/pci0000:00/0000:08:00.0/infiniband/mlx5_0");
    char target[PATH_MAX];
    ssize_t n = readlink(map_path((kIb + "/mlx5_0").c_str()).c_str(), target, sizeof target - 1);
    ASSERT_GT(n, 0);
    target[n] = 0;
    EXPECT_STREQ(target, "../../devices/pci0000:00/0000:08:00.0/infiniband/mlx5_0");
    const std::string fn = d0.substr(0, d0.size() - std::string("/infiniband/mlx5_0").size());
    struct stat st;
    EXPECT_EQ(stat((fn + "/device").c_str(), &st), 0);
    EXPECT_EQ(stat((fn + "/local_cpus").c_str(), &st), 0);
    EXPECT_EQ(real_path(kIb + "/mlx5_0/device"), fn);
}

TEST(Sysfs, ModaliasMatchesTheMlx5Provider) {
    // libibverbs matches a provider's PCI table against the modalias with
    // the pattern "pci:v%08Xd%08Xsv*sd*bc*sc*i*"
    std::string m0 = read_app(kVerbs + "/uverbs0/device/modalias");
    ASSERT_FALSE(m0.empty());
    m0.pop_back();
    EXPECT_EQ(fnmatch("pci:v000015B3d0000101Bsv*sd*bc*sc*i*", m0.c_str(), 0), 0) << m0;  // part_id 4123
    std::string m1 = read_app(kVerbs + "/uverbs1/device/modalias");
    m1.pop_back();
    EXPECT_EQ(fnmatch("pci:v000015B3d00001017sv*sd*bc*sc*i*", m1.c_str(), 0), 0) << m1;  // ConnectX-5 default
    EXPECT_EQ(read_app(kVerbs + "/uverbs0/device/vendor"), "0x15b3\n");
    EXPECT_EQ(read_app(kVerbs + "/uverbs0/device/device"), "0x101b\n");
}

TEST(Sysfs, IbDeviceFiles) {
    EXPECT_EQ(read_app(kIb + "/mlx5_0/node_guid"), "b8ce:f603:00a0:b000\n");
    EXPECT_EQ(read_app(kIb + "/mlx5_1/node_guid"), "b8ce:f603:00a0:b010\n");
    EXPECT_EQ(read_app(kIb + "/mlx5_0/sys_image_guid"), "b8ce:f603:00a0:b000\n");
    EXPECT_EQ(read_app(kIb + "/mlx5_0/node_type"), "1: CA\n");
    EXPECT_EQ(read_app(kIb + "/mlx5_0/fw_ver"), "16.35.2000\n");
    EXPECT_EQ(read_app(kIb + "/mlx5_0/hca_type"), "MT4123\n");
}

TEST(Sysfs, InfiniBandPorts) {
    const std::string p = kIb + "/mlx5_0/ports/";
    EXPECT_EQ(read_app(p + "1/state"), "4: ACTIVE\n");
    EXPECT_EQ(read_app(p + "1/phys_state"), "5: LinkUp\n");
    EXPECT_EQ(read_app(p + "1/lid"), "0x1\n");
    EXPECT_EQ(read_app(p + "2/lid"), "0x20\n");
    EXPECT_EQ(read_app(p + "1/sm_lid"), "0x1\n");
    EXPECT_EQ(read_app(p + "1/lid_mask_count"), "0\n");
    EXPECT_EQ(read_app(p + "1/link_layer"), "InfiniBand\n");
    EXPECT_EQ(read_app(p + "1/rate"), "100 Gb/sec (4X EDR)\n");
    EXPECT_EQ(read_app(p + "1/gids/0"), "fe80:0000:0000:0000:b8ce:f603:00a0:b000\n");
    EXPECT_EQ(read_app(p + "2/gids/0"), "fe80:0000:0000:0000:b8ce:f603:00a0:b001\n");
    EXPECT_EQ(read_app(p + "1/gids/1"), "0000:0000:0000:0000:0000:0000:0000:0000\n");
    EXPECT_EQ(read_app(p + "1/gid_attrs/types/0"), "IB/RoCE v1\n");
    EXPECT_EQ(read_app(p + "1/pkeys/0"), "0xffff\n");
    EXPECT_EQ(read_app(p + "1/pkeys/1"), "0x0000\n");
}

TEST(Sysfs, EthernetPorts) {
    const std::string p = kIb + "/mlx5_1/ports/";
    EXPECT_EQ(read_app(p + "1/link_layer"), "Ethernet\n");
    EXPECT_EQ(read_app(p + "2/link_layer"), "Ethernet\n");
    EXPECT_EQ(read_app(p + "1/lid"), "0x0\n");
    EXPECT_EQ(read_app(p + "1/state"), "4: ACTIVE\n");
    // GIDs: link-local from the MAC (v1, v2), then the IPv4-mapped one (v1, v2)
    const std::string ll = "fe80:0000:0000:0000:0011:22ff:fe33:4455\n";
    const std::string v4 = "0000:0000:0000:0000:0000:ffff:c0a8:0709\n";
    EXPECT_EQ(read_app(p + "1/gids/0"), ll);
    EXPECT_EQ(read_app(p + "1/gids/1"), ll);
    EXPECT_EQ(read_app(p + "1/gids/2"), v4);
    EXPECT_EQ(read_app(p + "1/gids/3"), v4);
    EXPECT_EQ(read_app(p + "1/gids/4"), "0000:0000:0000:0000:0000:0000:0000:0000\n");
    EXPECT_EQ(read_app(p + "1/gid_attrs/types/0"), "IB/RoCE v1\n");
    EXPECT_EQ(read_app(p + "1/gid_attrs/types/1"), "RoCE v2\n");
    EXPECT_EQ(read_app(p + "1/gid_attrs/types/2"), "IB/RoCE v1\n");
    EXPECT_EQ(read_app(p + "1/gid_attrs/types/3"), "RoCE v2\n");
    EXPECT_EQ(read_app(p + "1/gid_attrs/ndevs/1"), "uvsim2\n");
    EXPECT_EQ(read_app(p + "2/gid_attrs/ndevs/0"), "uvsim3\n");
    // port 2: the default MAC b8:ce:f6:00:01:01 and 10.79.0.4
    EXPECT_EQ(read_app(p + "2/gids/0"), "fe80:0000:0000:0000:bace:f6ff:fe00:0101\n");
    EXPECT_EQ(read_app(p + "2/gids/2"), "0000:0000:0000:0000:0000:ffff:0a4f:0004\n");
    EXPECT_EQ(read_app(p + "1/pkeys/0"), "0xffff\n");
}

TEST(Sysfs, DevNodes) {
    struct stat st;
    EXPECT_EQ(stat(map_path("/dev/infiniband/uverbs0").c_str(), &st), 0);
    EXPECT_EQ(stat(map_path("/dev/infiniband/uverbs1").c_str(), &st), 0);
    EXPECT_NE(stat(map_path("/dev/infiniband/uverbs2").c_str(), &st), 0);
}

TEST(Sysfs, MapPath) {
    const std::string& root = tree_root();
    EXPECT_EQ(map_path("/sys/class/infiniband"), root + "/sys/class/infiniband");
    EXPECT_EQ(map_path("/sys/class/infiniband/"), root + "/sys/class/infiniband/");
    EXPECT_EQ(map_path("/sys/class/infiniband_verbs/uverbs0/ibdev"),
              root + "/sys/class/infiniband_verbs/uverbs0/ibdev");
    EXPECT_EQ(map_path("/dev/infiniband/uverbs0"), root + "/dev/infiniband/uverbs0");
    EXPECT_EQ(map_path("/dev/infiniband"), root + "/dev/infiniband");
    // not ours: other classes, look-alike prefixes, relative paths, nothing
    for (const char* p :
         {"/sys/class/infinibandX", "/sys/class/infiniband_mad/umad0", "/sys/class/infiniband_verbsX",
          "/sys/class/net/eth0", "/dev/infinibandX", "/dev/null", "sys/class/infiniband", "dev/infiniband/uverbs0",
          "./dev/infiniband/uverbs0", "", "/", "/sys/class/infini", "//sys/class/infiniband"})
        EXPECT_EQ(map_path(p), "") << p;
    EXPECT_EQ(map_path(nullptr), "");
}

TEST(Sysfs, UverbsIndexForPath) {
    EXPECT_EQ(uverbs_index_for_path("/dev/infiniband/uverbs0"), 0);
    EXPECT_EQ(uverbs_index_for_path("/dev/infiniband/uverbs1"), 1);
    // the mapped path of a node names it too
    EXPECT_EQ(uverbs_index_for_path((tree_root() + "/dev/infiniband/uverbs1").c_str()), 1);
    for (const char* p :
         {"/dev/infiniband/uverbs2", "/dev/infiniband/uverbs99", "/dev/infiniband/uverbs0x", "/dev/infiniband/uverbs",
          "/dev/infiniband/uverbs-1", "/dev/infiniband/uverbs+1", "/dev/infiniband/uverbs 0",
          "/dev/infiniband/uverbs00x", "/dev/infiniband/uverbs00", "/dev/infiniband/uverbs01",
          "/dev/infiniband/uverbs-0", "/dev/infiniband/umad0", "/dev/infiniband/rdma_cm",
          "/dev/infiniband/uverbs99999999999999999999", "dev/infiniband/uverbs0", "/sys/class/infiniband",
          "/sys/class/infinibandX", "/dev/infiniband/uverbs0/", ""})
        EXPECT_EQ(uverbs_index_for_path(p), -1) << p;
    EXPECT_EQ(uverbs_index_for_path(nullptr), -1);
    EXPECT_EQ(uverbs_index_for_path((tree_root() + "/dev/infiniband/uverbs7").c_str()), -1);
    EXPECT_EQ(uverbs_index_for_path((tree_root() + "/sys/class/infiniband").c_str()), -1);
}

TEST(Sysfs, TreeIsReusedNotRebuilt) {
    // the tree of a configuration is made once per run directory
    const std::string& root = tree_root();
    EXPECT_EQ(&root, &tree_root());
    std::string again = map_path("/sys/class/infiniband_verbs/abi_version");
    EXPECT_EQ(again, root + "/sys/class/infiniband_verbs/abi_version");
}
