// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Runs LLVMFuzzerTestOneInput over files and directories (a fuzz corpus)
// without libFuzzer.  Files named real-* or ok-* must load and bad-* must
// be refused; other names (found by fuzzing) only must not crash.  With
// --prefixes every proper prefix of each input is run too and none may
// load (truncated cache files).
#include "libibnetdisc/internal.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
    bool prefixes = false;
    std::vector<std::filesystem::path> inputs;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--prefixes"))
            prefixes = true;
        else if (std::filesystem::is_directory(argv[i]))
            for (auto& e : std::filesystem::directory_iterator(argv[i]))
                inputs.push_back(e.path());
        else
            inputs.emplace_back(argv[i]);
    }
    std::sort(inputs.begin(), inputs.end());
    long loaded = 0, runs = 0, bad = 0;
    for (auto& path : inputs) {
        std::ifstream in(path, std::ios::binary);
        std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
        LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
        ++runs;
        std::string name = path.filename().string();
        bool must_load = name.rfind("real-", 0) == 0 || name.rfind("ok-", 0) == 0;
        bool must_fail = name.rfind("bad-", 0) == 0;
        ibnd_fabric_t* f = ibnd::load_fabric_image(bytes);
        if (f) {
            ++loaded;
            ibnd_destroy_fabric(f);
        }
        if ((must_load && !f) || (must_fail && f)) {
            std::fprintf(stderr, "%s: %s\n", path.c_str(), f ? "loaded" : "refused");
            ++bad;
        }
        if (prefixes)
            for (size_t n = 0; n < bytes.size(); ++n) {
                ibnd_fabric_t* f = ibnd::load_fabric_image({bytes.data(), n});
                if (f) {
                    // seeds are whole caches: no cut of one may load
                    std::fprintf(stderr, "%s: a %zu-byte prefix loaded\n", path.c_str(), n);
                    ibnd_destroy_fabric(f);
                    ++bad;
                }
                ++runs;
            }
    }
    std::printf("%ld inputs run, %ld whole files loaded\n", runs, loaded);
    return bad ? 1 : 0;
}
