// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Shared by the management libraries' allocation-failure tests
// (unit.libibumad_alloc_fail, unit.libibmad_alloc_fail,
// unit.libibnetdisc_alloc_fail, fabric.mgmt_alloc_fail):
//  - heap_in_use(), the leak check of a failed call;
//  - mount_fake_sysfs(), a fake /sys/class for libibumad's fixed paths, and
//    (when <gtest/gtest.h> is included first) FakeSysfsEnv, which mounts it
//    once for a test program.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <malloc.h>
#include <sched.h>
#include <string>
#include <sys/mount.h>
#include <unistd.h>

namespace mgmt_test {

// Bytes of heap in use (malloc, and operator new, which allocates with
// malloc): the same before and after a failed call means it freed what it
// had made. Exact only without malloc's per-thread cache (freed chunks
// parked there count as used), so the tests run with
// GLIBC_TUNABLES=glibc.malloc.tcache_count=0; without it this is 0 always
// and the leak checks pass vacuously.
inline size_t heap_in_use() {
    static const bool exact = [] {
        const char* t = std::getenv("GLIBC_TUNABLES");
        return t && std::strstr(t, "glibc.malloc.tcache_count=0");
    }();
    if (!exact)
        return 0;
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

namespace detail {

namespace fs = std::filesystem;

inline void put(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
}

inline void port(const fs::path& ca, int num, const char* state, const char* phys, const char* link, const char* guid,
                 const char* capmask = "0x02510868") {
    fs::path d = ca / "ports" / std::to_string(num);
    put(d / "lid", "0x" + std::to_string(num + 2));
    put(d / "lid_mask_count", "0");
    put(d / "sm_lid", "0x1");
    put(d / "sm_sl", "0");
    put(d / "state", state);
    put(d / "phys_state", phys);
    put(d / "rate", "100 Gb/sec (4X EDR)");
    put(d / "cap_mask", capmask);
    put(d / "link_layer", link);
    put(d / "gids" / "0", std::string("fe80:0000:0000:0000:") + guid);
    put(d / "pkeys" / "0", "0xffff");
    put(d / "pkeys" / "1", "0x8001");
}

inline fs::path ca(const fs::path& root, const char* name, const char* type, const char* guid) {
    fs::path d = root / "infiniband" / name;
    put(d / "node_type", type);
    put(d / "fw_ver", "16.35.2000");
    put(d / "hw_rev", "0");
    put(d / "hca_type", "MT4119");
    put(d / "node_guid", guid);
    put(d / "sys_image_guid", guid);
    return d;
}

inline void umad_dev(const fs::path& root, int id, const char* ca, int port) {
    fs::path d = root / "infiniband_mad" / ("umad" + std::to_string(id));
    put(d / "ibdev", ca);
    put(d / "port", std::to_string(port));
}

}  // namespace detail

// The tree mount_fake_sysfs() shows:
//   mlx5_0  CA, port 1 ACTIVE (GUID ...1001), port 2 DOWN (...1002)
//   mlx5_1  CA, port 1 ACTIVE, IsSMDisabled, GUID ...1001: the GSI-only half
//           of a planarized mlx5_0
//   sw0     switch, port 0
//   rxe0    CA with one Ethernet port
//   umad0..3: mlx5_0/1, mlx5_0/2, mlx5_1/1, sw0/0; umad ABI 5
inline void build_fake_sysfs(const std::filesystem::path& root) {
    using namespace detail;
    fs::path m0 = ca(root, "mlx5_0", "1: CA", "0002:c903:0000:1000");
    port(m0, 1, "4: ACTIVE", "5: LinkUp", "InfiniBand", "0002:c903:0000:1001");
    port(m0, 2, "1: DOWN", "2: Polling", "InfiniBand", "0002:c903:0000:1002");
    fs::path m1 = ca(root, "mlx5_1", "1: CA", "0002:c903:0000:1000");
    port(m1, 1, "4: ACTIVE", "5: LinkUp", "InfiniBand", "0002:c903:0000:1001", "0x02510c68");
    fs::path sw = ca(root, "sw0", "2: switch", "0002:c903:0000:5000");
    port(sw, 0, "4: ACTIVE", "5: LinkUp", "InfiniBand", "0002:c903:0000:5000");
    fs::path rxe = ca(root, "rxe0", "1: CA", "0002:c903:0000:3000");
    port(rxe, 1, "4: ACTIVE", "5: LinkUp", "Ethernet", "0002:c903:0000:3001");
    umad_dev(root, 0, "mlx5_0", 1);
    umad_dev(root, 1, "mlx5_0", 2);
    umad_dev(root, 2, "mlx5_1", 1);
    umad_dev(root, 3, "sw0", 0);
    put(root / "infiniband_mad" / "abi_version", "5");
}

// Builds the tree under `scratch` and mounts it over /sys/class in a mount
// namespace of this (single-threaded) process's own; /dev/infiniband, if
// there is one, is hidden behind an empty directory, so opening a umad
// device fails (-EIO) after all the sysfs work. Needs root (CAP_SYS_ADMIN).
// Returns "" on success, else why it could not.
inline std::string mount_fake_sysfs(const std::filesystem::path& scratch) {
    namespace fs = std::filesystem;
    build_fake_sysfs(scratch / "class");
    fs::create_directories(scratch / "nodev");
    if (unshare(CLONE_NEWNS) != 0)
        return std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno) + " (needs root)";
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount((scratch / "class").c_str(), "/sys/class", nullptr, MS_BIND, nullptr) != 0)
        return std::string("mount: ") + std::strerror(errno);
    if (fs::is_directory("/dev/infiniband") &&
        mount((scratch / "nodev").c_str(), "/dev/infiniband", nullptr, MS_BIND, nullptr) != 0)
        return std::string("mount over /dev/infiniband: ") + std::strerror(errno);
    return "";
}

#ifdef GTEST_API_
// Mounts the fake /sys/class once for all tests of a program
// (::testing::AddGlobalTestEnvironment(new FakeSysfsEnv)); tests that need
// it start with MGMT_TEST_NEED_SYSFS().
class FakeSysfsEnv : public ::testing::Environment {
public:
    static inline bool ready = false;
    static inline std::string why = "not set up";

    void SetUp() override {
        char tmpl[] = "/tmp/mgmt_alloc_fail.XXXXXX";
        if (!mkdtemp(tmpl)) {
            why = "mkdtemp failed";
            return;
        }
        dir_ = tmpl;
        why = mount_fake_sysfs(dir_);
        ready = why.empty();
    }
    void TearDown() override {
        if (!dir_.empty())
            std::filesystem::remove_all(dir_);
    }

private:
    std::filesystem::path dir_;
};

#define MGMT_TEST_NEED_SYSFS()                                                   \
    do {                                                                         \
        if (!::mgmt_test::FakeSysfsEnv::ready)                                   \
            GTEST_SKIP() << "no fake sysfs: " << ::mgmt_test::FakeSysfsEnv::why; \
    } while (0)
#endif

}  // namespace mgmt_test
