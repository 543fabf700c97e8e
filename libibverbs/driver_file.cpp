// The libibverbs.d driver files, in a file of their own so that the
// fuzzer (tests/fuzz_driver_file.cpp) builds the parser without the rest
// of start-up.
#include "libibverbs/ibverbs.h"
#include "util/file_io.h"

#include <cstdio>
#include <string_view>

namespace rdma::verbs {

// One driver file: lines "driver <name-or-path-prefix>", '#' comments.
void read_driver_file(const std::string& path, std::vector<std::string>& names) {
    auto text = read_file(path);
    if (!text) {
        fprintf(stderr, "%sWarning: couldn't read config file %s.\n", kLogPrefix, path.c_str());
        return;
    }
    std::string_view rest = text.value();
    while (!rest.empty()) {
        size_t nl = rest.find('\n');
        std::string_view line = rest.substr(0, nl);
        rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
        // A NUL ends the line, as for the reference's C strings: a name
        // with one would be cut short when it becomes a dlopen() path.
        line = line.substr(0, line.find('\0'));
        size_t b = line.find_first_not_of(" \t");
        if (b == std::string_view::npos || line[b] == '#')
            continue;
        line.remove_prefix(b);
        size_t e = line.find_first_of(" \t");
        std::string_view key = line.substr(0, e);
        std::string_view val;
        if (e != std::string_view::npos) {
            val = line.substr(e);
            size_t vb = val.find_first_not_of(" \t");
            val = vb == std::string_view::npos ? std::string_view() : val.substr(vb);
            val = val.substr(0, val.find_first_of(" \t"));
        }
        if (key == "driver" && !val.empty())
            names.emplace_back(val);
        else
            fprintf(stderr, "%sWarning: ignoring bad config directive '%.*s' in file '%s'.\n", kLogPrefix,
                    static_cast<int>(key.size()), key.data(), path.c_str());
    }
}

}  // namespace rdma::verbs
