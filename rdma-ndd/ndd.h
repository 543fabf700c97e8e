// rdma-ndd's core: what each RDMA device's node description should be, and
// bringing the devices in line with it. No event loop and no logging sink
// here (main.cpp has those), so the unit tests drive it on a fake sysfs.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>

namespace rdma::ndd {

// The longest node description a device keeps (the SMP NodeDescription
// attribute is 64 bytes); longer results are cut there.
inline constexpr size_t kNodeDescMax = 64;

// The node description for a device: fmt with %h replaced by host up to
// its first dot, %d by the device name and %% by a single %; any other %
// sequence stays as written. The result is cut at kNodeDescMax bytes.
std::string format_node_desc(std::string_view fmt, std::string_view host, std::string_view dev);

// The format in effect: RDMA_NDD_ND_FORMAT when set and not empty, else
// "%h %d".
std::string format_from_env();

// Keeps the node_desc attribute of every device under
// <sysfs>/class/infiniband in step with the format and the host name.
class Updater {
public:
    using Log = std::function<void(int priority, const std::string&)>;

    Updater(std::string sysfs, std::string format, Log log);

    // One pass over the devices present now. A device seen for the first
    // time (or every device, with force) is written unconditionally, so that
    // a subnet manager and the daemon agree from the start; a known one only
    // when its description differs from the wanted one. A device that cannot
    // be written is logged and skipped (and written again on the next pass);
    // the others are still updated.
    // Returns how many devices were written.
    int sync(const std::string& hostname, bool force = false);

    const std::string& class_dir() const { return class_dir_; }

private:
    bool write_desc(const std::string& dev, const std::string& desc);

    std::string class_dir_;
    std::string format_;
    Log log_;
    std::set<std::string> known_;
};

// The host name as the kernel has it for this UTS namespace (uname).
std::string current_hostname();

}  // namespace rdma::ndd
