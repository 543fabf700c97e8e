// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// Debian's own diagnostics (smpquery, perfquery, ibccquery, ibnetdiscover)
// print through libibmad's dumps: run each command of a list on the
// simulated fabric once with Debian's libibmad and once with ours (a
// directory holding only our libibmad.so.5 first in LD_LIBRARY_PATH), and
// compare what they print and how they exit.
//
// usage: tool_dumps OUR_LIB_DIR COMMAND_LIST
// The list has one shell command per line; "# ..." lines are comments and
// "~ REGEX" lines name output lines that legitimately change between runs
// (traffic counters, timestamps).  Runs under tests/fabric/fabric-run,
// which provides SIM_PRELOAD.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Result {
    std::vector<std::string> lines;
    int status = -1;
};

Result run(const std::string& cmd, const std::string& libdir, const std::vector<std::regex>& volatile_lines) {
    std::string shell = "LD_PRELOAD=\"$SIM_PRELOAD\" ";
    if (!libdir.empty())
        shell = "LD_LIBRARY_PATH='" + libdir + "' " + shell;
    shell += cmd + " 2>&1";
    Result r;
    FILE* p = popen(shell.c_str(), "r");
    if (!p)
        return r;
    std::string all;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
        all.append(chunk, n);
    r.status = pclose(p);
    static const std::regex pid(R"(\[[0-9]+\])");
    std::istringstream in(all);
    std::string line;
    while (std::getline(in, line)) {
        if (line.find("sim_connect") != std::string::npos)
            continue;
        // A MAD ibsim does not answer races umad2sim's timeout reply
        // against the poll timeout: the reference itself prints this
        // line in about one run of five (tests/fabric/README.md).
        if (line.find("_do_madrpc: recv failed: Connection timed out") != std::string::npos)
            continue;
        line = std::regex_replace(line, pid, "[pid]");
        bool skip = false;
        for (const auto& re : volatile_lines)
            skip = skip || std::regex_search(line, re);
        if (!skip)
            r.lines.push_back(line);
    }
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3 || !getenv("SIM_PRELOAD")) {
        std::cerr << "usage (under fabric-run): tool_dumps OUR_LIB_DIR COMMAND_LIST\n";
        return 2;
    }
    std::ifstream list(argv[2]);
    if (!list) {
        std::cerr << "cannot read " << argv[2] << "\n";
        return 2;
    }
    std::vector<std::regex> volatile_lines;
    std::vector<std::string> commands;
    std::string line;
    while (std::getline(list, line)) {
        if (line.empty() || line[0] == '#')
            continue;
        if (line.rfind("~ ", 0) == 0)
            volatile_lines.emplace_back(line.substr(2));
        else
            commands.push_back(line);
    }

    int failures = 0;
    size_t compared = 0;
    for (const auto& cmd : commands) {
        Result ref = run(cmd, "", volatile_lines);
        Result ours = run(cmd, argv[1], volatile_lines);
        compared += ref.lines.size();
        if (ref.lines == ours.lines && ref.status == ours.status)
            continue;
        failures++;
        std::cout << "DIFFERS: " << cmd << " (exit " << ref.status << " vs " << ours.status << ")\n";
        const size_t n = std::max(ref.lines.size(), ours.lines.size());
        for (size_t i = 0; i < n; i++) {
            const std::string a = i < ref.lines.size() ? ref.lines[i] : "<none>";
            const std::string b = i < ours.lines.size() ? ours.lines[i] : "<none>";
            if (a != b)
                std::cout << "  line " << i + 1 << ":\n    reference: " << a << "\n    ours:      " << b << "\n";
        }
    }
    std::cout << commands.size() << " commands, " << compared << " lines compared, " << failures << " differ\n";
    return failures ? 1 : 0;
}
