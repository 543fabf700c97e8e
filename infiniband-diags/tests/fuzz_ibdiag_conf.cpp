// Fuzzer: ibdiag.conf as read_config parses it. Whatever the file holds, the
// reader ends, and what it stored is usable (strings terminated, values in
// their types).
#include "fuzz_config_files.h"
#include "ibdiag_common.h"

#include <cstdlib>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ibdiag::fuzz::InputFile in(data, size);
    if (!in.ok())
        return 0;
    ibdiag::cfg = ibdiag::Settings{};
    ibdiag::read_config(in.path());
    const ibdiag::Settings& c = ibdiag::cfg;
    // A CA or nd_format read from the file is a terminated string no
    // longer than a line of the file.
    if (c.ca && strlen(c.ca) >= 1024)
        abort();
    if (c.nd_format && strlen(c.nd_format) >= 1024)
        abort();
    if (c.ibnetdisc_flags & ~ibdiag::kNetdiscMlxEpi)
        abort();
    return 0;
}
