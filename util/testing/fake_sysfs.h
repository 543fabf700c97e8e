// Tests only: one rxe device as the kernel shows it in sysfs, in a
// temporary tree (point SYSFS_PATH at root()); removed on destruction.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace rdma::testing_support {

class FakeSysfs {
public:
    FakeSysfs() {
        char tmpl[] = "/tmp/rdma-fakesysfs-XXXXXX";
        root_ = mkdtemp(tmpl);
        write("class/infiniband_verbs/abi_version", "6\n");
        write("class/infiniband_verbs/uverbs0/ibdev", "rxe0\n");
        write("class/infiniband_verbs/uverbs0/abi_version", "2\n");
        write("class/infiniband/rxe0/node_type", "1: CA\n");
        write("class/infiniband/rxe0/node_guid", "a8ee:47ff:fef3:e393\n");
    }
    ~FakeSysfs() { std::filesystem::remove_all(root_); }
    FakeSysfs(const FakeSysfs&) = delete;
    FakeSysfs& operator=(const FakeSysfs&) = delete;
    void write(const std::string& rel, const std::string& text) {
        std::filesystem::path p = std::filesystem::path(root_) / rel;
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p) << text;
    }
    const std::string& root() const { return root_; }

private:
    std::string root_;
};

}  // namespace rdma::testing_support
