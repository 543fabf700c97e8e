#include "rdma-ndd/ndd.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <syslog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "util/file_io.h"
#include "util/unique_fd.h"

namespace rdma::ndd {

std::string format_node_desc(std::string_view fmt, std::string_view host, std::string_view dev) {
    const std::string_view short_host = host.substr(0, host.find('.'));
    std::string out;
    for (size_t i = 0; i < fmt.size(); i++) {
        if (fmt[i] != '%' || i + 1 == fmt.size()) {
            out += fmt[i];
            continue;
        }
        switch (fmt[i + 1]) {
        case 'h': out += short_host; break;
        case 'd': out += dev; break;
        case '%': out += '%'; break;
        default: out += fmt.substr(i, 2); break;
        }
        i++;
    }
    if (out.size() > kNodeDescMax)
        out.resize(kNodeDescMax);
    return out;
}

std::string format_from_env() {
    const char* env = getenv("RDMA_NDD_ND_FORMAT");
    return env && *env ? std::string(env) : std::string("%h %d");
}

std::string current_hostname() {
    struct utsname u {};
    if (uname(&u))
        return {};
    return u.nodename;
}

Updater::Updater(std::string sysfs, std::string format, Log log)
    : class_dir_(std::move(sysfs) + "/class/infiniband"), format_(std::move(format)), log_(std::move(log)) {}

bool Updater::write_desc(const std::string& dev, const std::string& desc) {
    const std::string path = class_dir_ + "/" + dev + "/node_desc";
    // One write of the bare text: the kernel takes the buffer as the new
    // description (a trailing newline would become part of it). O_TRUNC,
    // as a shell's redirection, which sysfs ignores and a test's plain
    // file needs.
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
    ssize_t n = -1;
    if (fd)
        n = ::write(fd.get(), desc.data(), desc.size());
    if (n != static_cast<ssize_t>(desc.size())) {
        const int e = n < 0 ? errno : EIO;
        log_(LOG_ERR, "cannot set the node description of " + dev + " (" + path + "): " + strerror(e));
        return false;
    }
    log_(LOG_INFO, "node description of " + dev + " set to \"" + desc + "\"");
    return true;
}

int Updater::sync(const std::string& hostname, bool force) {
    auto devs = list_dir(class_dir_);
    if (!devs) {
        // No RDMA device at all (or no class directory yet): nothing to do.
        if (devs.error() != ENOENT)
            log_(LOG_ERR, "cannot list " + class_dir_ + ": " + strerror(devs.error()));
        known_.clear();
        return 0;
    }
    // Devices that failed to be written are left out, so that the next
    // pass writes them again unconditionally.
    std::set<std::string> in_step;
    int written = 0;
    for (const std::string& dev : *devs) {
        const std::string want = format_node_desc(format_, hostname, dev);
        if (!force && known_.count(dev)) {
            auto cur = read_sysfs_attr(class_dir_ + "/" + dev + "/node_desc");
            if (cur && *cur == want) {
                in_step.insert(dev);
                continue;
            }
        }
        if (write_desc(dev, want)) {
            in_step.insert(dev);
            written++;
        }
    }
    known_ = std::move(in_step);
    return written;
}

}  // namespace rdma::ndd
