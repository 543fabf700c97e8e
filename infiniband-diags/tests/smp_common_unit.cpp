// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Unit tests of the shared infiniband-diags code that needs no fabric:
// node name maps, ibdiag.conf, option parsing and usage, address parsing.
#include "ibdiag_common.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <getopt.h>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

std::string temp_file(const std::string& text) {
    char name[] = "/tmp/ibdiag_unit_XXXXXX";
    int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, text.data(), text.size()), (ssize_t)text.size());
    close(fd);
    return name;
}

// Runs process_opts on a fresh getopt state.
int parse(std::vector<std::string> args, const char* exclude = nullptr, std::span<const ibdiag::Option> custom = {},
          const ibdiag::OptionHandler& h = nullptr) {
    static std::vector<std::string> keep;
    keep = std::move(args);
    static std::vector<char*> argv;
    argv.clear();
    for (auto& a : keep)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    optind = 0;
    return ibdiag::process_opts((int)keep.size(), argv.data(), exclude, custom, h, "<args>", {"ex1", "ex2"});
}

TEST(NodeNameMap, ParsesNamesCommentsAndFirstWins) {
    auto f = temp_file("# comment\n"
                       "0x0000000000200000 \"Top switch\"\n"
                       "  0x200001\t\"Other\" # trailing\n"
                       "2097154 plain name # comment\n"
                       "0x200000 \"duplicate\"\n"
                       "\n");
    ibdiag::NodeNameMap map(f.c_str());
    EXPECT_TRUE(map.loaded());
    EXPECT_EQ(map.remap(0x200000, "x"), "Top switch");
    EXPECT_EQ(map.remap(0x200001, "x"), "Other");
    EXPECT_EQ(map.remap(0x200002, "x"), "plain name ");
    EXPECT_EQ(map.remap(0x999, "desc"), "desc");
    unlink(f.c_str());
}

TEST(NodeNameMap, BadLineWarnsAndMapsNothing) {
    auto f = temp_file("0x1 \"one\"\nnotaguid \"bad\"\n");
    testing::internal::CaptureStderr();
    ibdiag::NodeNameMap map(f.c_str());
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_FALSE(map.loaded());
    EXPECT_EQ(map.remap(0x1, "nd"), "nd");
    EXPECT_EQ(err, "WARNING failed to parse node name map \"" + f + "\"\nWARNING failed line: \"notaguid \"bad\"\"\n");
    unlink(f.c_str());
}

TEST(NodeNameMap, MissingFileWarnsDefaultMissingIsSilent) {
    testing::internal::CaptureStderr();
    ibdiag::NodeNameMap map("/nonexistent/map");
    EXPECT_EQ(testing::internal::GetCapturedStderr(),
              "WARNING failed to open node name map \"/nonexistent/map\" "
              "(No such file or directory)\n");
    if (access(ibdiag::kNodeNameMapFile, F_OK) != 0) {
        testing::internal::CaptureStderr();
        ibdiag::NodeNameMap none;
        EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
        EXPECT_FALSE(none.loaded());
    }
}

TEST(CleanNodedesc, NonPrintableAndLength) {
    EXPECT_EQ(ibdiag::clean_nodedesc("a\tb\x01"
                                     "c"),
              "a b c");
    std::string longer(100, 'x');
    EXPECT_EQ(ibdiag::clean_nodedesc(longer.c_str()).size(), 64u);
    EXPECT_EQ(ibdiag::clean_nodedesc(nullptr), "");
}

TEST(Counters, HumanReadable) {
    float v = 0;
    EXPECT_STREQ(ibdiag::conv_cnt_human_readable(1000, &v, false), "");
    EXPECT_FLOAT_EQ(v, 1000);
    EXPECT_STREQ(ibdiag::conv_cnt_human_readable(2048, &v, false), "K");
    EXPECT_FLOAT_EQ(v, 2);
    EXPECT_STREQ(ibdiag::conv_cnt_human_readable(300, &v, true), "KB");
    EXPECT_FLOAT_EQ(v, 1200.0f / 1024);
    EXPECT_STREQ(ibdiag::conv_cnt_human_readable(~0ull, &v, false), "E");
}

const char* op_a(ib_portid_t*, char**, int) { return "a"; }
const char* op_b(ib_portid_t*, char**, int) { return "b"; }

TEST(MatchOp, NamesAndAliasesIgnoreCase) {
    const ibdiag::MatchRec table[] = {
        {"NodeInfo", "NI", op_a, false, ""},
        {"PortInfo", "PI", op_b, true, ""},
    };
    EXPECT_EQ(ibdiag::match_op(table, "nodeinfo"), op_a);
    EXPECT_EQ(ibdiag::match_op(table, "pi"), op_b);
    EXPECT_EQ(ibdiag::match_op(table, "SI"), nullptr);
}

TEST(Options, ConfigFileKeysAndOrder) {
    auto f = temp_file("# c\nCA=mlx5_3\nPort=2\ntimeout=77\nMLX_EPI=false\n"
                       "m_key=0x10\nsa_key=5\nnd_format=%s\nPort\ntimeout=\n"
                       "garbage\n");
    int first = parse({"tool", "--config", f, "x", "y"});
    EXPECT_EQ(first, 3);
    EXPECT_STREQ(ibdiag::cfg.ca, "mlx5_3");
    EXPECT_EQ(ibdiag::cfg.ca_port, 2);
    EXPECT_EQ(ibdiag::cfg.timeout, 77);
    EXPECT_EQ(ibdiag::cfg.ibnetdisc_flags & ibdiag::kNetdiscMlxEpi, 0u);
    EXPECT_EQ(ibdiag::cfg.mkey, 0x10u);
    EXPECT_EQ(ibdiag::cfg.sakey, 5u);
    EXPECT_STREQ(ibdiag::cfg.nd_format, "%s");
    // -C after --config wins; --config after -C wins too (order matters),
    // and never frees the command line's string.
    parse({"tool", "-z", f, "-C", "other"});
    EXPECT_STREQ(ibdiag::cfg.ca, "other");
    parse({"tool", "-C", "other", "-z", f});
    EXPECT_STREQ(ibdiag::cfg.ca, "mlx5_3");
    unlink(f.c_str());
}

TEST(Options, CommonAndCustom) {
    static const ibdiag::Option custom[] = {
        {"all", 'a', 0, nullptr, "show all"},
        {"map", 1, 1, "<file>", "a file"},
    };
    bool all = false;
    std::string map;
    parse({"tool", "-a", "--map", "m", "-D", "-P", "0x2", "-t", "150", "-K", "-v", "-v"}, nullptr, custom,
          [&](int ch, char* arg) {
              if (ch == 'a') {
                  all = true;
                  return 0;
              }
              if (ch == 1) {
                  map = arg;
                  return 0;
              }
              return -1;
          });
    EXPECT_TRUE(all);
    EXPECT_EQ(map, "m");
    EXPECT_EQ(ibdiag::cfg.dest_type, IB_DEST_DRPATH);
    EXPECT_EQ(ibdiag::cfg.ca_port, 2);
    EXPECT_EQ(ibdiag::cfg.timeout, 150);
    EXPECT_TRUE(ibdiag::cfg.show_keys);
    EXPECT_GE(ibdiag::cfg.verbose, 2);
}

TEST(OptionsDeathTest, BadTimeoutExcludedOptionUsageVersion) {
    EXPECT_EXIT(parse({"tool", "-t", "0"}), testing::ExitedWithCode(255), "");
    EXPECT_EXIT(parse({"tool", "-t", "12x"}), testing::ExitedWithCode(255), "");
    EXPECT_EXIT(parse({"tool", "-G"}, "G"), testing::ExitedWithCode(2), "Usage: tool \\[options\\] <args>");
    EXPECT_EXIT(parse({"tool", "--nope"}), testing::ExitedWithCode(2), "");
    EXPECT_EXIT(parse({"tool", "-h"}), testing::ExitedWithCode(2), "  --Ca, -C <ca>           Ca name to use\n");
    EXPECT_EXIT(parse({"tool", "-V"}), testing::ExitedWithCode(0), "tool BUILD VERSION: 44.0\n");
}

TEST(OptionsDeathTest, UsageWrapsLongDescriptions) {
    static const ibdiag::Option custom[] = {
        {"long", 'l', 1, "<value>",
         "a description long enough that it has to be wrapped onto a "
         "second line of the usage text"},
    };
    // Broken after the last word that fits before column 74, continued
    // at the description's column.
    EXPECT_EXIT(parse({"tool", "-h"}, nullptr, custom), testing::ExitedWithCode(2),
                "  --long, -l <value>      a description long enough that it "
                "has to be \n                          wrapped onto a second "
                "line of the usage text\n");
}

TEST(Resolve, MalformedAddressesFailWithoutMads) {
    ib_portid_t p{};
    EXPECT_LT(ibdiag::resolve_portid_str(nullptr, 0, &p, "0", IB_DEST_LID, nullptr, nullptr), 0);
    EXPECT_LT(ibdiag::resolve_portid_str(nullptr, 0, &p, "0xc000", IB_DEST_LID, nullptr, nullptr), 0);
    EXPECT_LT(ibdiag::resolve_portid_str(nullptr, 0, &p, "junk", IB_DEST_LID, nullptr, nullptr), 0);
    EXPECT_EQ(ibdiag::resolve_portid_str(nullptr, 0, &p, "0x10", IB_DEST_LID, nullptr, nullptr), 0);
    EXPECT_EQ(p.lid, 0x10);
    EXPECT_EQ(ibdiag::resolve_portid_str(nullptr, 0, &p, "0,1,3", IB_DEST_DRPATH, nullptr, nullptr), 0);
    EXPECT_EQ(p.drpath.cnt, 2);
    EXPECT_EQ(p.drpath.p[2], 3);
    EXPECT_LT(ibdiag::resolve_portid_str(nullptr, 0, &p, "0", IB_DEST_GUID, nullptr, nullptr), 0);
    EXPECT_LT(ibdiag::resolve_portid_str(nullptr, 0, &p, "nothex", IB_DEST_GUID, nullptr, nullptr), 0);
    EXPECT_LT(ibdiag::resolve_portid_str(nullptr, 0, &p, "::zz", IB_DEST_GID, nullptr, nullptr), 0);
    EXPECT_LT(ibdiag::resolve_portid_str(nullptr, 0, &p, "0", IB_DEST_DRSLID, nullptr, nullptr), 0);
}

TEST(SaReport, StatusTexts) {
    testing::internal::CaptureStderr();
    ibdiag::sa_report_err(0x0300);
    ibdiag::sa_report_err(0x000d);
    ibdiag::sa_report_err(0xff7f);
    EXPECT_EQ(testing::internal::GetCapturedStderr(),
              "ERROR: Query result returned 0x0300,  SA(SA_ERR_NO_RECORDS)\n"
              "ERROR: Query result returned 0x000d,  (BUSY; ; MAD Method/"
              "Attribute combination is not supported)\n"
              "ERROR: Query result returned 0xff7f,  (BUSY; Redirection "
              "Required; MAD UNKNOWN ERROR) SA(SA_ERR_UNKNOWN)\n");
}

}  // namespace
