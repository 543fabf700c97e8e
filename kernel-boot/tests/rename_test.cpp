// rdma_rename's naming on fake sysfs trees: the names each policy makes
// from PCI locations, SR-IOV, ARI, on-board indexes and GUIDs, and the
// devices it gives no name. (The VM test holds the whole program against
// Debian's on a live device.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kernel-boot/rename_policy.h"

namespace fs = std::filesystem;
using namespace rdma::rename;

namespace {

class FakeSysfs : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/rename-test.XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        root_ = tmpl;
        fs::create_directories(root_ / "bus/pci");
        fs::create_directories(root_ / "bus/platform");
        fs::create_directories(root_ / "class/infiniband/mlx5_0");
    }
    void TearDown() override { fs::remove_all(root_); }

    std::string class_dir() const { return (root_ / "class/infiniband/mlx5_0").string(); }

    static void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

    // A PCI function directory; header is config space byte 0x0e.
    fs::path pci_fn(const std::string& addr, unsigned char header = 0, const char* bus = "pci") {
        fs::path d = root_ / "devices/pci0000:00" / addr;
        fs::create_directories(d);
        fs::create_directory_symlink(root_ / "bus" / bus, d / "subsystem");
        std::string config(64, '\0');
        config[0x0e] = static_cast<char>(header);
        write(d / "config", config);
        return d;
    }

    // Makes parent the device's parent (replacing the one it had).
    void attach(const fs::path& parent) {
        fs::path link = root_ / "class/infiniband/mlx5_0/device";
        fs::remove(link);
        fs::create_directory_symlink(parent, link);
    }

    std::optional<std::string> name(Policy p, const std::string& protocol = "ib") {
        Device dev{"mlx5_0", protocol, 0x525400c0fe123455ull};
        return wanted_name(p, dev, class_dir());
    }

    fs::path root_;
};

TEST(RenamePolicy, ParsesThePolicyNames) {
    EXPECT_EQ(parse_policy("NAME_KERNEL"), Policy::Kernel);
    EXPECT_EQ(parse_policy("NAME_PCI"), Policy::Pci);
    EXPECT_EQ(parse_policy("NAME_GUID"), Policy::Guid);
    EXPECT_EQ(parse_policy("NAME_ONBOARD"), Policy::Onboard);
    EXPECT_EQ(parse_policy("NAME_FALLBACK"), Policy::Fallback);
    EXPECT_EQ(parse_policy("NAME_FIXED"), Policy::Fixed);
    EXPECT_FALSE(parse_policy("name_pci"));
    EXPECT_FALSE(parse_policy("NAME_PCI "));
    EXPECT_FALSE(parse_policy(""));
}

TEST(RenamePolicy, PrefixIsTheProtocol) {
    EXPECT_EQ(name_prefix("ib"), "ib");
    EXPECT_EQ(name_prefix("roce"), "roce");
    EXPECT_EQ(name_prefix("iw"), "iw");
    EXPECT_EQ(name_prefix("opa"), "opa");
    EXPECT_EQ(name_prefix("usnic"), "usnic");
    EXPECT_EQ(name_prefix(""), "rdma");
    EXPECT_EQ(name_prefix("../x"), "rdma");
    EXPECT_EQ(name_prefix("Infiniband"), "rdma");
}

TEST(RenamePolicy, GuidName) {
    EXPECT_EQ(guid_name(0x525400c0fe123455ull), "x525400c0fe123455");
    EXPECT_EQ(guid_name(0x1ull), "x0000000000000001");
    Device d{"rxe0", "roce", 0x8c800efffea7bccfull};
    EXPECT_EQ(wanted_name(Policy::Guid, d, "/nonexistent"), "rocex8c800efffea7bccf");
    d.node_guid.reset();
    EXPECT_FALSE(wanted_name(Policy::Guid, d, "/nonexistent"));
}

TEST(RenamePolicy, KernelAndFixed) {
    Device d{"mlx5_3", "ib", std::nullopt};
    EXPECT_EQ(wanted_name(Policy::Kernel, d, "/nonexistent"), "mlx5_3");
    EXPECT_EQ(wanted_name(Policy::Fixed, d, "/nonexistent", "fabric0"), "fabric0");
    EXPECT_FALSE(wanted_name(Policy::Fixed, d, "/nonexistent", ""));
    // Length is the kernel's business (it keeps 63 bytes).
    EXPECT_EQ(wanted_name(Policy::Fixed, d, "/nonexistent", std::string(80, 'n')), std::string(80, 'n'));
}

TEST_F(FakeSysfs, VirtualDeviceGetsNoSysfsName) {
    EXPECT_FALSE(name(Policy::Pci));
    EXPECT_FALSE(name(Policy::Onboard));
    EXPECT_FALSE(name(Policy::Fallback));
    EXPECT_EQ(name(Policy::Guid), "ibx525400c0fe123455");
}

TEST_F(FakeSysfs, MultiFunctionDeviceNamesItsFunction) {
    attach(pci_fn("0000:00:0c.4", 0x80));
    EXPECT_EQ(name(Policy::Pci), "ibp0s12f4");
    EXPECT_EQ(name(Policy::Fallback), "ibp0s12f4");
    EXPECT_EQ(name(Policy::Pci, "roce"), "rocep0s12f4");
}

TEST_F(FakeSysfs, FunctionZeroOfSeveralIsWritten) {
    attach(pci_fn("0000:00:0c.0", 0x80));
    EXPECT_EQ(name(Policy::Pci), "ibp0s12f0");
}

TEST_F(FakeSysfs, SingleFunctionDeviceHasNoFunction) {
    attach(pci_fn("0000:05:00.0"));
    EXPECT_EQ(name(Policy::Pci), "ibp5s0");
}

TEST_F(FakeSysfs, NonZeroFunctionIsWrittenAlways) {
    attach(pci_fn("0000:05:00.3"));
    EXPECT_EQ(name(Policy::Pci), "ibp5s0f3");
}

TEST_F(FakeSysfs, DomainAndHexFieldsInDecimal) {
    attach(pci_fn("0002:81:1f.7"));
    EXPECT_EQ(name(Policy::Pci), "ibP2p129s31f7");
}

TEST_F(FakeSysfs, MissingConfigMeansOneFunction) {
    fs::path d = pci_fn("0000:0a:02.0");
    fs::remove(d / "config");
    attach(d);
    EXPECT_EQ(name(Policy::Pci), "ibp10s2");
}

TEST_F(FakeSysfs, AriFoldsTheSlotIntoTheFunction) {
    fs::path d = pci_fn("0000:81:01.2");
    write(d / "ari_enabled", "1\n");
    attach(d);
    EXPECT_EQ(name(Policy::Pci), "ibp129s1f10");
}

TEST_F(FakeSysfs, AriOffLeavesTheFunction) {
    fs::path d = pci_fn("0000:81:01.2");
    write(d / "ari_enabled", "0\n");
    attach(d);
    EXPECT_EQ(name(Policy::Pci), "ibp129s1f2");
}

TEST_F(FakeSysfs, VirtualFunctionIsNamedByItsPf) {
    fs::path pf = pci_fn("0000:07:00.0", 0x80);
    fs::path vf0 = pci_fn("0000:07:00.2");
    fs::path vf1 = pci_fn("0000:07:00.3");
    fs::create_directory_symlink(vf0, pf / "virtfn0");
    fs::create_directory_symlink("../0000:07:00.3", pf / "virtfn1");
    fs::create_directory_symlink(pf, vf1 / "physfn");
    attach(vf1);
    EXPECT_EQ(name(Policy::Pci), "ibp7s0f0v1");
}

TEST_F(FakeSysfs, VfNumberOnlyAfterAFunction) {
    // A single-function PF has no f part, and then no v part either.
    fs::path pf = pci_fn("0000:0b:00.0");
    fs::path vf = pci_fn("0000:0b:00.5");
    fs::create_directory_symlink(vf, pf / "virtfn3");
    fs::create_directory_symlink(pf, vf / "physfn");
    attach(vf);
    EXPECT_EQ(name(Policy::Pci), "ibp11s0");
}

TEST_F(FakeSysfs, VfThePfDoesNotListIsNamedAsThePf) {
    fs::path pf = pci_fn("0000:0c:00.0", 0x80);
    fs::path vf = pci_fn("0000:0c:00.5");
    fs::create_directory_symlink(pf, vf / "physfn");
    attach(vf);
    EXPECT_EQ(name(Policy::Pci), "ibp12s0f0");
}

TEST_F(FakeSysfs, NonPciParentHasNoPciName) {
    attach(pci_fn("rdma.0", 0, "platform"));
    EXPECT_FALSE(name(Policy::Pci));
    EXPECT_FALSE(name(Policy::Fallback));
}

TEST_F(FakeSysfs, ParentWithoutSubsystemHasNoPciName) {
    fs::path d = pci_fn("0000:05:00.0");
    fs::remove(d / "subsystem");
    attach(d);
    EXPECT_FALSE(name(Policy::Pci));
}

TEST_F(FakeSysfs, UnreadableAddressHasNoPciName) {
    attach(pci_fn("garbage"));
    EXPECT_FALSE(name(Policy::Pci));
    attach(pci_fn("0000:05:00"));
    EXPECT_FALSE(name(Policy::Pci));
}

TEST_F(FakeSysfs, OnboardFromAcpiIndexFirst) {
    fs::path d = pci_fn("0000:08:00.0");
    write(d / "acpi_index", "3\n");
    write(d / "index", "9\n");
    attach(d);
    EXPECT_EQ(name(Policy::Onboard), "ibo3");
    EXPECT_EQ(name(Policy::Fallback), "ibo3");
    write(d / "acpi_index", "0\n");
    EXPECT_EQ(name(Policy::Onboard), "ibo0");
    // An acpi_index that is there but no number decides too: no name,
    // and the fallback goes on to the PCI location.
    write(d / "acpi_index", "junk\n");
    EXPECT_FALSE(name(Policy::Onboard));
    EXPECT_EQ(name(Policy::Fallback), "ibp8s0");
    fs::remove(d / "acpi_index");
    EXPECT_EQ(name(Policy::Onboard), "ibo9");
}

TEST_F(FakeSysfs, OnboardIndexReadLikeScanf) {
    fs::path d = pci_fn("0000:08:00.0");
    attach(d);
    const std::pair<const char*, const char*> cases[] = {
        {"16383", "ibo16383"}, {"16384", nullptr}, {"-1", nullptr},  {"+5", "ibo5"}, {" 7", "ibo7"},
        {"5abc", "ibo5"},      {"0x10", "ibo0"},   {"012", "ibo12"}, {"", nullptr},  {"99999999999999999999", nullptr},
    };
    for (const auto& [text, want] : cases) {
        write(d / "index", text);
        auto got = name(Policy::Onboard);
        if (want)
            EXPECT_EQ(got, std::string(want)) << "index '" << text << "'";
        else
            EXPECT_FALSE(got) << "index '" << text << "' gave " << got.value_or("");
    }
}

TEST_F(FakeSysfs, OnboardNeedsNoPci) {
    fs::path d = pci_fn("rdma.0", 0, "platform");
    write(d / "acpi_index", "4\n");
    attach(d);
    EXPECT_EQ(name(Policy::Onboard), "ibo4");
    EXPECT_EQ(name(Policy::Fallback), "ibo4");
}

TEST_F(FakeSysfs, LargestAddressFields) {
    attach(pci_fn("ffffffff:ff:1f.7"));
    EXPECT_EQ(name(Policy::Pci), "ibP4294967295p255s31f7");
}

}  // namespace
