#include "util/file_io.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace rdma;

TEST(ParseGuid, AcceptsSysfsFormat) {
    auto g = parse_guid("a8ee:47ff:fef3:e393\n");
    ASSERT_TRUE(g);
    EXPECT_EQ(*g, 0xa8ee47fffef3e393ull);
    EXPECT_EQ(*parse_guid("0:0:0:1"), 1u);
}

TEST(ParseGuid, RejectsMalformed) {
    EXPECT_FALSE(parse_guid(""));
    EXPECT_FALSE(parse_guid("a8ee:47ff:fef3"));  // three groups
    EXPECT_FALSE(parse_guid("a8ee:47ff:fef3:e393:0000"));  // five groups
    EXPECT_FALSE(parse_guid("a8ee:47ff:fef3:e3931"));  // group too long
    EXPECT_FALSE(parse_guid("a8ee::fef3:e393"));  // empty group
    EXPECT_FALSE(parse_guid("zzzz:47ff:fef3:e393"));
    EXPECT_FALSE(parse_guid("a8ee:47ff:fef3:e393:"));  // trailing ':'
    EXPECT_FALSE(parse_guid("0x1f:47ff:fef3:e393"));  // not hex digits only
    EXPECT_FALSE(parse_guid("a8ee:+7ff:fef3:e393"));
    EXPECT_FALSE(parse_guid("a8ee: 47f:fef3:e393"));
}

TEST(ParseNumbers, WholeStringOnly) {
    EXPECT_EQ(parse_u64("42\n").value(), 42u);
    EXPECT_EQ(parse_u64("0xffff", 16).value(), 0xffffu);
    EXPECT_FALSE(parse_u64("42abc"));
    EXPECT_FALSE(parse_u64("-1"));
    EXPECT_FALSE(parse_u64(""));
    EXPECT_EQ(parse_i64("-7").value(), -7);
    EXPECT_FALSE(parse_i64("99999999999999999999999"));
}

TEST(ReadSysfsAttr, StripsTrailingNewlinesAndReportsErrno) {
    char dir[] = "/tmp/rdma-util-XXXXXX";
    ASSERT_TRUE(mkdtemp(dir));
    std::string f = std::string(dir) + "/attr";
    std::ofstream(f) << "1: CA\n\n";
    auto v = read_sysfs_attr(f);
    ASSERT_TRUE(v);
    EXPECT_EQ(v.value(), "1: CA");
    auto missing = read_sysfs_attr(std::string(dir) + "/nope");
    EXPECT_FALSE(missing);
    EXPECT_EQ(missing.error(), ENOENT);
    auto names = list_dir(dir);
    ASSERT_TRUE(names);
    EXPECT_EQ(names.value(), std::vector<std::string>{"attr"});
    unlink(f.c_str());
    rmdir(dir);
    EXPECT_EQ(list_dir(dir).error(), ENOENT);
}
