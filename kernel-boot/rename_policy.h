// rdma_rename's core: the stable name a naming policy gives an RDMA device,
// from what the kernel says of it (RDMA netlink: protocol, node GUID) and
// from its parent device in sysfs (PCI address, on-board index, SR-IOV).
// No netlink and no logging here (rdma_rename.cpp has those), so the unit
// tests run it on fake sysfs trees.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdma::rename {

enum class Policy { Kernel, Pci, Guid, Onboard, Fallback, Fixed };

// "NAME_KERNEL", "NAME_PCI", "NAME_GUID", "NAME_ONBOARD", "NAME_FALLBACK",
// "NAME_FIXED"; anything else is no policy.
std::optional<Policy> parse_policy(std::string_view s);

// The first part of every stable name: the device's protocol as the kernel
// reports it ("ib", "roce", "iw", "opa", "usnic"), or "rdma" when it reports
// none or something that is not a short lower-case word.
std::string name_prefix(std::string_view protocol);

// The largest on-board index a name is made from (as for network devices).
inline constexpr long kOnboardIndexMax = 16383;

// "o<N>": the firmware's index of an on-board device, from the parent
// device's acpi_index attribute or, when the device has none, its index
// attribute. The attribute read is taken like scanf's %d (leading space,
// a sign, decimal digits, anything after them ignored) and must give
// 0..kOnboardIndexMax. class_dir is /sys/class/infiniband/<dev>.
std::optional<std::string> onboard_name(const std::string& class_dir);

// "[P<domain>]p<bus>s<slot>[f<function>[v<vf>]]": the PCI location of the
// parent device (its subsystem must be pci). The function is written when
// it is not 0 or the device has several functions (bit 7 of the header
// type in its config space); with ARI the function also holds the slot's
// bits (slot * 8 + function). An SR-IOV virtual function is named by its
// physical function's location, with v<N> (N from the PF's virtfn<N>
// link that points to it) after the PF's function number.
std::optional<std::string> pci_name(const std::string& class_dir);

// "x<16 hex digits>": the node GUID.
std::string guid_name(uint64_t node_guid);

// What rdma_rename knows of a device from the kernel.
struct Device {
    std::string name;
    std::string protocol;  // empty when the kernel gives none
    std::optional<uint64_t> node_guid;
};

// The name the policy gives the device, or nullopt when it gives none
// (no PCI parent, no on-board index, no GUID). The kernel keeps the first
// 63 bytes of a longer name, as it does for the reference's. Kernel
// gives the current name. Fallback is Onboard, else Pci. fixed is Fixed's
// name. class_dir as for onboard_name.
std::optional<std::string> wanted_name(Policy p, const Device& dev, const std::string& class_dir,
                                       std::string_view fixed = {});

}  // namespace rdma::rename
