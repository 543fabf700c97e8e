// The C-entry barrier: every convention, every exception kind, and
// allocation failure injected at each allocation of a body.
#include "util/c_entry.h"
#include "util/testing/alloc_fail.h"

#include <gtest/gtest.h>

#include <cstring>
#include <pthread.h>
#include <unistd.h>
#include <memory>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

namespace {

using namespace rdma;

int g_object;

// A body that allocates several times before it succeeds.
int* build(std::vector<std::string>& keep) {
    for (int i = 0; i < 5; i++)
        keep.push_back(std::string(100 + i, 'x'));
    return &g_object;
}

TEST(CEntry, Conventions) {
    EXPECT_EQ(entry_errno([] { return 0; }), 0);
    EXPECT_EQ(entry_errno([] { return EBUSY; }), EBUSY);
    errno = 0;
    EXPECT_EQ(entry_errno([]() -> int { throw std::bad_alloc(); }), ENOMEM);
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_EQ(entry_errno([] { return Status(Errno{EAGAIN}); }), EAGAIN);
    EXPECT_EQ(errno, EAGAIN);
    EXPECT_EQ(entry_errno([] { return Status(); }), 0);

    errno = 0;
    EXPECT_EQ(entry_minus_one([]() -> int { throw std::length_error("x"); }), -1);
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_EQ(entry_minus_one([]() -> ssize_t { return 42; }), 42);
    EXPECT_EQ(entry_minus_one([] { return Status(Errno{EPERM}); }), -1);
    EXPECT_EQ(errno, EPERM);
    EXPECT_EQ(entry_minus_one([] { return Status(); }), 0);
    // Result<R>: the value as it is (errno untouched, even a -1 or another
    // negative code the man page defines), or -1 with the errno.
    static_assert(std::is_same_v<decltype(entry_minus_one([] { return Result<ssize_t>(1); })), ssize_t>);
    errno = EXDEV;
    EXPECT_EQ(entry_minus_one([] { return Result<ssize_t>(4096); }), 4096);
    EXPECT_EQ(entry_minus_one([] { return Result<int>(-2); }), -2);
    EXPECT_EQ(entry_minus_one([] { return Result<int>(-1); }), -1);
    EXPECT_EQ(errno, EXDEV);
    EXPECT_EQ(entry_minus_one([] { return Result<int>(Errno{EAGAIN}); }), -1);
    EXPECT_EQ(errno, EAGAIN);
    EXPECT_EQ(entry_minus_one([]() -> Result<ssize_t> { throw std::bad_alloc(); }), -1);
    EXPECT_EQ(errno, ENOMEM);

    EXPECT_EQ(entry_null([] { return &g_object; }), &g_object);
    errno = 0;
    EXPECT_EQ(entry_null([]() -> int* { throw std::system_error(ENOSPC, std::generic_category()); }), nullptr);
    EXPECT_EQ(errno, ENOSPC);
    EXPECT_EQ(entry_null([] { return Result<int*>(Errno{ENODEV}); }), nullptr);
    EXPECT_EQ(errno, ENODEV);
    EXPECT_EQ(entry_null([] { return Result<int*>(&g_object); }), &g_object);

    EXPECT_EQ(entry_neg_errno([]() -> int { throw std::invalid_argument("x"); }), -EINVAL);
    EXPECT_EQ(entry_neg_errno([] { return Status(Errno{EIO}); }), -EIO);
    EXPECT_EQ(entry_neg_errno([] { return 7; }), 7);

    EXPECT_EQ(entry_value(0ULL, []() -> unsigned long long { throw 17; }), 0ULL);
    EXPECT_EQ(errno, EIO);
    errno = 0;
    entry_void([] { throw std::out_of_range("x"); });
    EXPECT_EQ(errno, EINVAL);
}

TEST(CEntry, EveryAllocationFailureIsENOMEM) {
    std::size_t runs = allocfail::sweep([](const std::function<bool()>& injected) {
        std::vector<std::string> keep;
        errno = 0;
        int* p = entry_null([&] { return build(keep); });
        if (injected()) {
            EXPECT_EQ(p, nullptr);
            EXPECT_EQ(errno, ENOMEM);
        } else {
            EXPECT_EQ(p, &g_object);
        }
    });
    // Five strings plus the vector's growth: at least 5 allocations, each
    // failed once, then one clean run.
    EXPECT_GT(runs, 5u);
}

// A thread cancelled while blocked inside a barrier ends as cancelled: the
// barrier lets glibc's unwinding through instead of swallowing it (which
// would abort the process).
TEST(CEntry, ThreadCancellationPassesThrough) {
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    pthread_t t;
    auto body = [](void* arg) -> void* {
        int fd = *static_cast<int*>(arg);
        char c;
        ssize_t n = entry_minus_one([&] { return read(fd, &c, 1); });  // blocks
        return reinterpret_cast<void*>(n);
    };
    ASSERT_EQ(pthread_create(&t, nullptr, body, &p[0]), 0);
    usleep(50 * 1000);
    ASSERT_EQ(pthread_cancel(t), 0);
    void* result = nullptr;
    ASSERT_EQ(pthread_join(t, &result), 0);
    EXPECT_EQ(result, PTHREAD_CANCELED);
    close(p[0]);
    close(p[1]);
}

TEST(AllocFail, NothrowFormsReturnNull) {
    allocfail::fail_after(0);
    int* p = new (std::nothrow) int(3);
    EXPECT_TRUE(allocfail::disarm());
    EXPECT_EQ(p, nullptr);
    std::unique_ptr<int> q(new (std::nothrow) int(4));
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(*q, 4);
    EXPECT_FALSE(allocfail::disarm());
}

}  // namespace
