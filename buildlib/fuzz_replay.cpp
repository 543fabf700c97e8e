// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Runs a libFuzzer entry point over corpus files without libFuzzer: every
// argument is a file or a directory of files. A crash or a sanitizer report
// fails the run; so does an empty corpus (a replay test that replays
// nothing proves nothing).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static bool run_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) {
        fprintf(stderr, "fuzz_replay: cannot read %s\n", p.c_str());
        return false;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    return true;
}

int main(int argc, char** argv) {
    size_t runs = 0;
    for (int i = 1; i < argc; i++) {
        std::error_code ec;
        if (std::filesystem::is_directory(argv[i], ec)) {
            for (const auto& e : std::filesystem::directory_iterator(argv[i], ec))
                if (e.is_regular_file()) {
                    if (!run_file(e.path()))
                        return 1;
                    runs++;
                }
        } else if (!run_file(argv[i])) {
            return 1;
        } else {
            runs++;
        }
        if (ec) {
            fprintf(stderr, "fuzz_replay: %s: %s\n", argv[i], ec.message().c_str());
            return 1;
        }
    }
    printf("fuzz_replay: %zu inputs, no failure\n", runs);
    return runs ? 0 : 1;
}
