// Fuzzer: one libibverbs.d driver file as read_driver_file (init.cpp)
// reads it. The names it collects must be exactly those of a line-by-line
// reading of the text (a NUL ends a line; blank-separated words; a line
// "driver <name> ..." gives <name>; '#' starts a comment line), appended
// after what the list already held.
#include "libibverbs/ibverbs.h"
#include "util/testing/fuzz_input.h"

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

std::vector<std::string> words(std::string_view line) {
    std::vector<std::string> out;
    std::string w;
    for (char c : line) {
        if (c == ' ' || c == '\t') {
            if (!w.empty())
                out.push_back(std::move(w));
            w.clear();
        } else {
            w += c;
        }
    }
    if (!w.empty())
        out.push_back(std::move(w));
    return out;
}

std::vector<std::string> expected(std::string_view text) {
    std::vector<std::string> names = {"already-there"};
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos)
            end = text.size();
        std::string_view line = text.substr(start, end - start);
        start = end + 1;
        if (size_t nul = line.find('\0'); nul != std::string_view::npos)
            line = line.substr(0, nul);
        std::vector<std::string> w = words(line);
        if (w.size() >= 2 && w[0] == "driver")
            names.push_back(w[1]);
    }
    return names;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    rdma::fuzz::MemFile in(data, size);
    if (!in.ok())
        return 0;
    std::vector<std::string> names = {"already-there"};
    rdma::verbs::read_driver_file(in.path(), names);
    if (names != expected(std::string_view(reinterpret_cast<const char*>(data), size)))
        abort();
    for (const std::string& n : names)
        if (n.empty() || n.find_first_of(std::string_view(" \t\n\0", 4)) != std::string::npos)
            abort();
    return 0;
}
