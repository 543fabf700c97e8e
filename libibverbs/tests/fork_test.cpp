// fork protection: ranges are marked MADV_DONTFORK while referenced.
#include <infiniband/verbs.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

// Exported since IBVERBS_1.1, declared only in rdma-core's private header.
extern "C" int ibv_dontfork_range(void* base, size_t size);
extern "C" int ibv_dofork_range(void* base, size_t size);

namespace {

// Does the mapping holding addr carry the "dc" (do not copy on fork) flag?
bool dontfork(void* addr) {
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    const auto a = reinterpret_cast<uintptr_t>(addr);
    bool inside = false;
    while (std::getline(smaps, line)) {
        unsigned long lo, hi;
        if (sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(' ') == line.find_first_of(' ')) {
            if (line.find('-') < line.find(' '))
                inside = a >= lo && a < hi;
        } else if (inside && line.rfind("VmFlags:", 0) == 0) {
            return line.find(" dc") != std::string::npos;
        }
    }
    return false;
}

}  // namespace

TEST(Fork, RangesAreReferenceCounted) {
    // ibv_fork_init state is per process: run it all in a child.
    pid_t pid = fork();
    if (pid == 0) {
        if (ibv_fork_init() != 0)
            _exit(1);
        if (ibv_is_fork_initialized() == IBV_FORK_UNNEEDED)
            _exit(77);  // kernel copies pinned pages itself: nothing to mark
        if (ibv_is_fork_initialized() != IBV_FORK_ENABLED)
            _exit(2);
        const size_t ps = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        char* p = static_cast<char*>(mmap(nullptr, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (p == MAP_FAILED)
            _exit(3);
        if (ibv_dontfork_range(p + ps, ps) || ibv_dontfork_range(p + ps + 10, 2 * ps))
            _exit(4);
        if (!dontfork(p + ps) || !dontfork(p + 2 * ps) || dontfork(p))
            _exit(5);
        if (ibv_dofork_range(p + ps + 10, 2 * ps))  // page 1 still held once, page 2 released
            _exit(6);
        if (!dontfork(p + ps) || dontfork(p + 2 * ps))
            _exit(7);
        if (ibv_dofork_range(p + ps, ps) || dontfork(p + ps))
            _exit(8);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77)
        GTEST_SKIP() << "kernel has copy-on-fork for pinned pages";
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(Fork, WithoutInitRangesAreNoOps) {
    pid_t pid = fork();
    if (pid == 0) {
        char buf[64];
        _exit(ibv_dontfork_range(buf, sizeof(buf)) == 0 && ibv_dofork_range(buf, sizeof(buf)) == 0 &&
                      ibv_is_fork_initialized() != IBV_FORK_ENABLED
                  ? 0
                  : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(Fork, InitAfterRegistrationIsEinval) {
    pid_t pid = fork();
    if (pid == 0) {
        char buf[64];
        ibv_dontfork_range(buf, sizeof(buf));  // what ibv_reg_mr does first
        int rc = ibv_fork_init();
        if (ibv_is_fork_initialized() == IBV_FORK_UNNEEDED)
            _exit(rc == 0 ? 77 : 1);
        _exit(rc == EINVAL ? 0 : 2);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77)
        GTEST_SKIP() << "kernel has copy-on-fork for pinned pages";
    EXPECT_EQ(WEXITSTATUS(status), 0);
}
