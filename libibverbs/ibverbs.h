// libibverbs internals shared between its translation units (not installed).
#pragma once

#include "libibverbs/driver.h"

#include <optional>
#include <string>
#include <vector>

namespace rdma::verbs {

// Prefix of every diagnostic the library prints, as the reference does.
inline constexpr const char* kLogPrefix = "libibverbs: ";

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

// The index of gid in port's GID table (of GID type want_type, or any type
// when want_type < 0), or -1.
int find_gid_index(ibv_context* ctx, uint8_t port, const ibv_gid& gid, int want_type);

// Provider plugin loading (driver files and RDMAV_DRIVERS).
void load_providers();
const std::vector<const Provider*>& providers();

}  // namespace rdma::verbs
