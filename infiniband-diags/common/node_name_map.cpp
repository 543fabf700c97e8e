// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The node name map: lines "<guid> <name>" ('#' comments), the name being
// what remains of the line up to the first '"' or '#' after any quote.
#include "ibdiag_common.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

namespace ibdiag {

std::string clean_nodedesc(const char* nodedesc) {
    std::string s(nodedesc ? nodedesc : "", nodedesc ? strnlen(nodedesc, IB_SMP_DATA_SIZE) : 0);
    for (char& c : s)
        if (!isprint((unsigned char)c))
            c = ' ';
    return s;
}

NodeNameMap::NodeNameMap(const char* file) {
    if (!file) {
        struct stat st;
        file = kNodeNameMapFile;
        if (stat(file, &st))
            return;
    }
    FILE* f = fopen(file, "r");
    if (!f) {
        fprintf(stderr, "WARNING failed to open node name map \"%s\" (%s)\n", file, strerror(errno));
        return;
    }
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        char* p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (*p == '\0' || *p == '#')
            continue;
        char* end = nullptr;
        uint64_t guid = strtoull(p, &end, 0);
        if (end == p || (!isspace((unsigned char)*end) && *end != '#' && *end != '\0')) {
            line[strcspn(line, "\n")] = '\0';
            fprintf(stderr, "WARNING failed to parse node name map \"%s\"\n", file);
            fprintf(stderr, "WARNING failed line: \"%s\"\n", line);
            names_.clear();
            fclose(f);
            return;
        }
        p = end;
        while (isspace((unsigned char)*p))
            p++;
        p[strcspn(p, "\n")] = '\0';
        // The name: the first run of characters that are neither '"'
        // nor '#' (so "name" and name # comment both work).
        p += strspn(p, "\"#");
        size_t len = strcspn(p, "\"#");
        if (len == 0)
            continue;
        names_.emplace(guid, std::string(p, len));  // first one wins
    }
    fclose(f);
    loaded_ = true;
}

std::string NodeNameMap::remap(uint64_t guid, const char* nodedesc) const {
    auto it = names_.find(guid);
    if (it != names_.end())
        return it->second;
    return clean_nodedesc(nodedesc);
}

}  // namespace ibdiag
