// rdma-ndd's core on fake sysfs trees: the format, which devices get
// written when, and a device that cannot be written.
#include <syslog.h>

#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

#include "rdma-ndd/ndd.h"
#include "util/file_io.h"
#include "util/testing/fake_sysfs.h"

using rdma::ndd::format_node_desc;
using rdma::ndd::Updater;
using rdma::testing_support::FakeSysfs;

namespace {

// The attribute's whole text ("" when unreadable).
std::string slurp(const std::string& path) {
    auto text = rdma::read_file(path);
    return text ? *text : std::string();
}

struct Logged {
    std::vector<std::string> errors;
    Updater::Log sink() {
        return [this](int prio, const std::string& m) {
            if (prio <= LOG_ERR)
                errors.push_back(m);
        };
    }
};

}  // namespace

TEST(NddFormat, DefaultIsShortHostThenDevice) {
    EXPECT_EQ(format_node_desc("%h %d", "node17.cluster.example", "mlx5_0"), "node17 mlx5_0");
    EXPECT_EQ(format_node_desc("%h %d", "plain", "rxe0"), "plain rxe0");
}

TEST(NddFormat, LiteralsPercentAndUnknownSequences) {
    EXPECT_EQ(format_node_desc("%d on %h", "h.x", "mlx4_1"), "mlx4_1 on h");
    EXPECT_EQ(format_node_desc("100%% %h", "h", "d"), "100% h");
    EXPECT_EQ(format_node_desc("%x%h%", "h", "d"), "%xh%");
    EXPECT_EQ(format_node_desc("", "h", "d"), "");
}

TEST(NddFormat, CutAtSixtyFourBytes) {
    std::string host(100, 'a');
    std::string out = format_node_desc("%h %d", host, "mlx5_0");
    EXPECT_EQ(out.size(), rdma::ndd::kNodeDescMax);
    EXPECT_EQ(out, std::string(64, 'a'));
}

TEST(NddFormat, FromEnvironment) {
    unsetenv("RDMA_NDD_ND_FORMAT");
    EXPECT_EQ(rdma::ndd::format_from_env(), "%h %d");
    setenv("RDMA_NDD_ND_FORMAT", "", 1);
    EXPECT_EQ(rdma::ndd::format_from_env(), "%h %d");
    setenv("RDMA_NDD_ND_FORMAT", "%h", 1);
    EXPECT_EQ(rdma::ndd::format_from_env(), "%h");
    unsetenv("RDMA_NDD_ND_FORMAT");
}

TEST(NddUpdater, FirstPassWritesEveryDeviceEvenIfAlreadyRight) {
    FakeSysfs fs;
    fs.write("class/infiniband/rxe0/node_desc", "h rxe0\n");
    fs.write("class/infiniband/mlx5_0/node_desc", "old\n");
    Logged log;
    Updater u(fs.root(), "%h %d", log.sink());
    EXPECT_EQ(u.sync("h.example"), 2);
    EXPECT_EQ(slurp(fs.root() + "/class/infiniband/rxe0/node_desc"), "h rxe0");
    EXPECT_EQ(slurp(fs.root() + "/class/infiniband/mlx5_0/node_desc"), "h mlx5_0");
    EXPECT_TRUE(log.errors.empty());
}

TEST(NddUpdater, KnownDevicesOnlyWhenTheyDiffer) {
    FakeSysfs fs;
    fs.write("class/infiniband/rxe0/node_desc", "\n");
    fs.write("class/infiniband/rxe1/node_desc", "\n");
    Logged log;
    Updater u(fs.root(), "%h %d", log.sink());
    EXPECT_EQ(u.sync("a"), 2);
    EXPECT_EQ(u.sync("a"), 0);  // nothing changed
    // someone else (an SM, a user) changed one: put back
    fs.write("class/infiniband/rxe1/node_desc", "tampered\n");
    EXPECT_EQ(u.sync("a"), 1);
    EXPECT_EQ(slurp(fs.root() + "/class/infiniband/rxe1/node_desc"), "a rxe1");
    // a new host name rewrites all; force rewrites even when equal
    EXPECT_EQ(u.sync("b"), 2);
    EXPECT_EQ(slurp(fs.root() + "/class/infiniband/rxe0/node_desc"), "b rxe0");
    EXPECT_EQ(u.sync("b", true), 2);
}

TEST(NddUpdater, NewDeviceIsWrittenOnceItAppears) {
    FakeSysfs fs;
    fs.write("class/infiniband/rxe0/node_desc", "\n");
    Logged log;
    Updater u(fs.root(), "%d@%h", log.sink());
    EXPECT_EQ(u.sync("h"), 1);
    fs.write("class/infiniband/mlx5_3/node_desc", "h mlx5_3\n");
    EXPECT_EQ(u.sync("h"), 1);
    EXPECT_EQ(slurp(fs.root() + "/class/infiniband/mlx5_3/node_desc"), "mlx5_3@h");
}

TEST(NddUpdater, ADeviceThatCannotBeWrittenDoesNotStopTheOthers) {
    FakeSysfs fs;  // rxe0 has no node_desc attribute at all
    fs.write("class/infiniband/mlx5_0/node_desc", "\n");
    Logged log;
    Updater u(fs.root(), "%h %d", log.sink());
    EXPECT_EQ(u.sync("h"), 1);
    EXPECT_EQ(slurp(fs.root() + "/class/infiniband/mlx5_0/node_desc"), "h mlx5_0");
    ASSERT_EQ(log.errors.size(), 1u);
    EXPECT_NE(log.errors[0].find("rxe0"), std::string::npos);
    EXPECT_NE(log.errors[0].find("No such file"), std::string::npos);
    // once it can be written, the next pass does it (it was not taken as
    // in step)
    fs.write("class/infiniband/rxe0/node_desc", "\n");
    EXPECT_EQ(u.sync("h"), 1);
    EXPECT_EQ(slurp(fs.root() + "/class/infiniband/rxe0/node_desc"), "h rxe0");
}

TEST(NddUpdater, NoDevicesOrNoClassDirectoryIsQuiet) {
    char tmpl[] = "/tmp/ndd-empty-XXXXXX";
    std::string root = mkdtemp(tmpl);
    Logged log;
    Updater u(root, "%h %d", log.sink());
    EXPECT_EQ(u.sync("h"), 0);
    EXPECT_TRUE(log.errors.empty());
    std::filesystem::remove_all(root);
}
