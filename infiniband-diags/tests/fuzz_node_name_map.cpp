// Fuzzer: node name maps. Whatever the file holds, loading ends, a map that
// loaded answers lookups, and a name is never longer than a line of the
// file (fgets reads 255 characters at a time).
#include "fuzz_config_files.h"
#include "ibdiag_common.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ibdiag::fuzz::InputFile in(data, size);
    if (!in.ok())
        return 0;
    // The parser warns on stderr about bad maps; that is its job, and noise
    // here.
    FILE* saved = stderr;
    stderr = fopen("/dev/null", "w");
    ibdiag::NodeNameMap map(in.path());
    fclose(stderr);
    stderr = saved;
    // Look up a GUID taken from the input itself (often one the map has)
    // and one it cannot know.
    uint64_t guid = 0;
    std::memcpy(&guid, data, size < sizeof guid ? size : sizeof guid);
    const char desc[] = "node\x01 description";
    const std::string text(reinterpret_cast<const char*>(data), size);  // terminated
    const uint64_t first = strtoull(text.c_str(), nullptr, 0);
    for (uint64_t g : {guid, first, ~uint64_t(0)}) {
        std::string name = map.remap(g, desc);
        if (name.size() > 255)
            abort();
    }
    if (!map.loaded() && map.remap(guid, desc) != ibdiag::clean_nodedesc(desc))
        abort();
    return 0;
}
