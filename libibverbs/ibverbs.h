// libibverbs internals shared between its translation units (not installed).
#pragma once

#include "libibverbs/driver.h"

#include <optional>
#include <span>
#include <string>
#include <vector>

struct nl_msg;  // libnl

extern "C" int ibv_dontfork_range(void* base, size_t size);
extern "C" int ibv_dofork_range(void* base, size_t size);

namespace rdma::verbs {

// Prefix of every diagnostic the library prints, as the reference does.
inline constexpr const char* kLogPrefix = "libibverbs: ";

// RDMAV_ALLOW_DISASSOC_DESTROY was set when the library started: destroying
// an object of a context whose device went away (EIO) succeeds.
bool allow_disassoc_destroy();

// <sysfs root> honouring SYSFS_PATH; no trailing slash.
const std::string& sysfs_root();

// Kernel copy-on-fork support (RDMA netlink SYS attribute), cached.
bool kernel_copy_on_fork();

// Discovery: every uverbs device the kernel offers (netlink first, sysfs
// as the fallback). Positive errno on failure (ENOSYS: no verbs class).
int discover_devices(std::vector<SysfsDevice>& out);

// Netlink half of discovery. Returns false when RDMA netlink is unusable.
bool netlink_discover(std::vector<SysfsDevice>& out);
std::optional<bool> netlink_copy_on_fork();

// The parsers of one RDMA netlink reply (netlink.cpp; the fuzzers call
// them directly). parse_device appends the device an RDMA_NLDEV_CMD_GET
// reply describes, if it names one; parse_chardev fills dev from an
// RDMA_NLDEV_CMD_GET_CHARDEV reply; parse_sys sets copy_on_fork from an
// RDMA_NLDEV_CMD_SYS_GET reply that carries it. They may throw
// std::bad_alloc.
void netlink_parse_device(nl_msg* msg, std::vector<SysfsDevice>& out);
void netlink_parse_chardev(nl_msg* msg, SysfsDevice& dev);
void netlink_parse_sys(nl_msg* msg, std::optional<bool>& copy_on_fork);

// The index of gid in port's GID table (of GID type want_type, or any type
// when want_type < 0), or -1.
int find_gid_index(ibv_context* ctx, uint8_t port, const ibv_gid& gid, int want_type);

// Provider plugin loading (driver files and RDMAV_DRIVERS).
void load_providers();
// Appends the names of one driver file's "driver <name>" lines to names
// (driver_file.cpp; warns about other lines).
void read_driver_file(const std::string& path, std::vector<std::string>& names);
std::span<const Provider* const> providers();

// A range marked MADV_DONTFORK for a registration is released again
// unless the registration went through, also when the provider throws
// (the barrier reports that). errno survives the release.
struct ForkRangeUndo {
    void* addr;
    size_t length;
    bool armed;
    ~ForkRangeUndo() {
        if (armed) {
            const int e = errno;
            ibv_dofork_range(addr, length);
            errno = e;
        }
    }
};

}  // namespace rdma::verbs
