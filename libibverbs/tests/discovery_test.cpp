// Device discovery against fake sysfs trees (SYSFS_PATH). Library state is
// per process, so every scenario runs in a forked child.
#include <infiniband/verbs.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <endian.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

// Exported since IBVERBS_1.0 but declared in no public header.
extern "C" const char* ibv_get_sysfs_path(void);
extern "C" int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);

namespace {

class FakeSysfs {
public:
    FakeSysfs() {
        char tmpl[] = "/tmp/rdma-sysfs-XXXXXX";
        root_ = mkdtemp(tmpl);
    }
    ~FakeSysfs() { fs::remove_all(root_); }
    void write(const std::string& rel, const std::string& text) {
        fs::path p = fs::path(root_) / rel;
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
    }
    // A uverbs device and its ib device, as the kernel lays them out.
    void add_device(const std::string& uverbs, const std::string& ibdev, const std::string& guid,
                    const std::string& node_type = "1: CA", const std::string& abi = "2") {
        write("class/infiniband_verbs/" + uverbs + "/ibdev", ibdev + "\n");
        write("class/infiniband_verbs/" + uverbs + "/abi_version", abi + "\n");
        write("class/infiniband/" + ibdev + "/node_type", node_type + "\n");
        write("class/infiniband/" + ibdev + "/node_guid", guid + "\n");
    }
    const std::string& root() const { return root_; }

private:
    std::string root_;
};

// Runs fn in a child with SYSFS_PATH set; returns the child's exit code
// (fn's return value), or -1 if it crashed.
int in_child(const std::string& sysfs, const std::function<int()>& fn) {
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("SYSFS_PATH", sysfs.c_str(), 1);
        _exit(fn());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST(Discovery, NoVerbsClassIsENOSYS) {
    FakeSysfs s;
    EXPECT_EQ(0, in_child(s.root(), [] {
                  int n = 123;
                  errno = 0;
                  ibv_device** l = ibv_get_device_list(&n);
                  return (l == nullptr && errno == ENOSYS && n == 0) ? 0 : 1;
              }));
}

TEST(Discovery, UnsupportedKernelAbiIsENOSYS) {
    FakeSysfs s;
    s.write("class/infiniband_verbs/abi_version", "5\n");
    EXPECT_EQ(0, in_child(s.root(), [] {
                  errno = 0;
                  return (ibv_get_device_list(nullptr) == nullptr && errno == ENOSYS) ? 0 : 1;
              }));
}

TEST(Discovery, EmptyClassGivesEmptyList) {
    FakeSysfs s;
    s.write("class/infiniband_verbs/abi_version", "6\n");
    EXPECT_EQ(0, in_child(s.root(), [] {
                  int n = -1;
                  ibv_device** l = ibv_get_device_list(&n);
                  bool ok = l && n == 0 && l[0] == nullptr;
                  ibv_free_device_list(l);
                  return ok ? 0 : 1;
              }));
}

TEST(Discovery, FindsRxeDeviceAndItsAttributes) {
    FakeSysfs s;
    s.write("class/infiniband_verbs/abi_version", "6\n");
    s.add_device("uverbs0", "rxe0", "a8ee:47ff:fef3:e393");
    std::string root = s.root();
    EXPECT_EQ(0, in_child(root, [root] {
                  int n = 0;
                  ibv_device** l = ibv_get_device_list(&n);
                  if (!l || n != 1)
                      return 1;
                  ibv_device* d = l[0];
                  if (strcmp(ibv_get_device_name(d), "rxe0") || strcmp(d->dev_name, "uverbs0"))
                      return 2;
                  if (be64toh(ibv_get_device_guid(d)) != 0xa8ee47fffef3e393ull)
                      return 3;
                  if (d->node_type != IBV_NODE_CA || d->transport_type != IBV_TRANSPORT_IB)
                      return 4;
                  if (std::string(d->ibdev_path) != root + "/class/infiniband/rxe0" ||
                      std::string(d->dev_path) != root + "/class/infiniband_verbs/uverbs0")
                      return 5;
                  if (ibv_get_device_index(d) != -1)  // unknown without netlink
                      return 6;
                  // No char device behind the fake tree: open fails cleanly.
                  errno = 0;
                  if (ibv_open_device(d) != nullptr || errno != ENOENT)
                      return 7;
                  ibv_free_device_list(l);
                  return 0;
              }));
}

TEST(Discovery, DeviceWithoutProviderIsSkipped) {
    FakeSysfs s;
    s.write("class/infiniband_verbs/abi_version", "6\n");
    s.add_device("uverbs0", "mystery0", "0000:0000:0000:0001");
    s.add_device("uverbs1", "rxe7", "0000:0000:0000:0002");
    EXPECT_EQ(0, in_child(s.root(), [] {
                  int n = 0;
                  ibv_device** l = ibv_get_device_list(&n);
                  bool ok = l && n == 1 && strcmp(l[0]->name, "rxe7") == 0;
                  ibv_free_device_list(l);
                  return ok ? 0 : 1;
              }));
}

TEST(Discovery, MalformedAttributesNeverCrash) {
    FakeSysfs s;
    s.write("class/infiniband_verbs/abi_version", "6\n");
    s.add_device("uverbs0", "rxe0", "not-a-guid", "garbage", "xx");
    s.write("class/infiniband_verbs/uverbs1/abi_version", "2\n");  // no ibdev attribute
    s.write("class/infiniband_verbs/stray-file", "x");  // not a directory
    EXPECT_EQ(0, in_child(s.root(), [] {
                  int n = 0;
                  ibv_device** l = ibv_get_device_list(&n);
                  if (!l)
                      return 1;
                  // abi "xx" parses as 0, outside rxe's 1..2: refused with a warning.
                  bool ok = n == 0;
                  ibv_free_device_list(l);
                  return ok ? 0 : 2;
              }));
    s.add_device("uverbs0", "rxe0", "not-a-guid", "garbage", "2");
    EXPECT_EQ(0, in_child(s.root(), [] {
                  int n = 0;
                  ibv_device** l = ibv_get_device_list(&n);
                  if (!l || n != 1)
                      return 1;
                  bool ok = ibv_get_device_guid(l[0]) == 0 && l[0]->node_type == IBV_NODE_UNKNOWN &&
                      l[0]->transport_type == IBV_TRANSPORT_UNKNOWN;
                  ibv_free_device_list(l);
                  return ok ? 0 : 2;
              }));
}

TEST(Discovery, ListsStayValidAcrossRescans) {
    FakeSysfs s;
    s.write("class/infiniband_verbs/abi_version", "6\n");
    s.add_device("uverbs0", "rxe0", "0000:0000:0000:0001");
    EXPECT_EQ(0, in_child(s.root(), [] {
                  ibv_device** a = ibv_get_device_list(nullptr);
                  ibv_device** b = ibv_get_device_list(nullptr);
                  if (!a || !b || a[0] != b[0])  // same device object while it exists
                      return 1;
                  ibv_free_device_list(a);
                  bool ok = strcmp(b[0]->name, "rxe0") == 0;  // b still valid
                  ibv_free_device_list(b);
                  return ok ? 0 : 2;
              }));
}

TEST(SysfsHelpers, PathAndReadFile) {
    FakeSysfs s;
    s.write("file", "value\n");
    s.write("exact", "abcd");
    std::string root = s.root();
    EXPECT_EQ(0, in_child(root + "//", [root] {
                  if (std::string(ibv_get_sysfs_path()) != root)  // trailing slashes dropped
                      return 1;
                  char buf[16];
                  if (ibv_read_sysfs_file(root.c_str(), "file", buf, sizeof(buf)) != 5 || strcmp(buf, "value"))
                      return 2;
                  char small[4];
                  if (ibv_read_sysfs_file(root.c_str(), "exact", small, sizeof(small)) != -1)
                      return 3;  // no room for the terminator
                  if (ibv_read_sysfs_file(root.c_str(), "missing", buf, sizeof(buf)) != -1)
                      return 4;
                  return 0;
              }));
}

// ibv_import_device finds the device by the number of the char device the
// fd is open on: EINVAL for anything else than a char device, ENODEV when
// no device has that number, and EOPNOTSUPP from a provider that cannot
// import (rxe, as the reference's rxe).
TEST(ImportDevice, FdThatIsNoCharDeviceIsEINVAL) {
    FakeSysfs s;
    s.write("class/infiniband_verbs/abi_version", "6\n");
    s.add_device("uverbs0", "rxe0", "a8ee:47ff:fef3:e393");
    s.write("regular", "x");
    std::string file = s.root() + "/regular";
    EXPECT_EQ(0, in_child(s.root(), [file] {
                  int fd = open(file.c_str(), O_RDONLY);
                  errno = 0;
                  if (ibv_import_device(fd) || errno != EINVAL)
                      return 1;
                  errno = 0;
                  if (ibv_import_device(-1) || errno != EINVAL)
                      return 2;
                  return 0;
              }));
}

TEST(ImportDevice, CharDeviceOfNoRdmaDeviceIsENODEV) {
    FakeSysfs s;
    s.write("class/infiniband_verbs/abi_version", "6\n");
    s.add_device("uverbs0", "rxe0", "a8ee:47ff:fef3:e393");
    s.write("class/infiniband_verbs/uverbs0/dev", "231:192\n");
    EXPECT_EQ(0, in_child(s.root(), [] {
                  int fd = open("/dev/null", O_RDWR);
                  errno = 0;
                  return (ibv_import_device(fd) == nullptr && errno == ENODEV) ? 0 : 1;
              }));
}

TEST(ImportDevice, RxeCannotImportIsEOPNOTSUPP) {
    struct stat st;
    ASSERT_EQ(0, stat("/dev/null", &st));
    FakeSysfs s;
    s.write("class/infiniband_verbs/abi_version", "6\n");
    s.add_device("uverbs0", "rxe0", "a8ee:47ff:fef3:e393");
    // uverbs0 claims /dev/null's number, so an fd on /dev/null is "its" fd.
    s.write("class/infiniband_verbs/uverbs0/dev",
            std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev)) + "\n");
    EXPECT_EQ(0, in_child(s.root(), [] {
                  int fd = open("/dev/null", O_RDWR);
                  errno = 0;
                  if (ibv_import_device(fd) != nullptr || errno != EOPNOTSUPP)
                      return 1;
                  // The fd stays the caller's.
                  return fcntl(fd, F_GETFD) == 0 ? 0 : 2;
              }));
}
