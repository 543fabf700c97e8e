// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// libibnetdisc internals shared by the discovery engine, the fabric
// accessors, chassis grouping and the cache file codec.
#pragma once

#include <infiniband/ibnetdisc.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <type_traits>
#include <unordered_set>
#include <vector>

namespace ibnd {

// What the library keeps beside the public fabric.
struct FabricExtra {
    // LID -> port; the first port recorded for a LID keeps it.
    std::map<uint16_t, ibnd_port_t*> lids;
    // Ports of a loaded cache that no node lists (freed with the fabric).
    std::vector<ibnd_port_t*> orphans;
    // What the GUID hash chains hold, to refuse duplicates in O(1).
    std::unordered_set<const void*> hashed;
};

// The fabric handed to the application is the first member of this
// standard-layout object, so ibnd_fabric_t* and Fabric* convert both ways.
// `extra` is owned (made in new_fabric, freed in free_fabric).
struct Fabric {
    ibnd_fabric_t pub;
    FabricExtra* extra;
};
static_assert(std::is_standard_layout_v<Fabric> && offsetof(Fabric, pub) == 0);

inline Fabric* impl(ibnd_fabric_t* f) { return reinterpret_cast<Fabric*>(f); }

// Frees a fabric with everything linked into it: nodes and their ports,
// chassis, orphan ports, the index.
void free_fabric(Fabric* f);
struct FabricFree {
    void operator()(Fabric* f) const { free_fabric(f); }
};
// A fabric being built is held here: whatever is linked into it by the
// time of an early return or an exception is freed with it.
using FabricPtr = std::unique_ptr<Fabric, FabricFree>;
FabricPtr new_fabric();
void free_node(ibnd_node_t* node);

uint32_t guid_hash(uint64_t guid);
bool hash_add_node(ibnd_fabric_t* f, ibnd_node_t* node);
bool hash_add_port(ibnd_fabric_t* f, ibnd_port_t* port);
void lid_add_port(Fabric* f, ibnd_port_t* port);
void type_list_add(ibnd_fabric_t* f, ibnd_node_t* node);

// Chassis grouping of a complete fabric (discovered or loaded): 0 or -1.
int group_nodes(ibnd_fabric_t* fabric);

// Cache codec: parse a cache image (the fuzzers call this directly).
ibnd_fabric_t* load_fabric_image(std::span<const uint8_t> image);

// Messages.  The reference prefixes each with its source position; we
// print the same position ("./libibnetdisc/<file>.c:<line>; ") so that
// tools show identical stderr.
enum class Src { chassis, discover, cache, smp };
void error_at(Src src, unsigned line, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
void debug_at(Src src, unsigned line, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
bool debugging();

}  // namespace ibnd

#define IBND_ERR(src, line, ...) ::ibnd::error_at(::ibnd::Src::src, line, __VA_ARGS__)
#define IBND_DBG(src, line, ...)                                   \
    do {                                                           \
        if (::ibnd::debugging())                                   \
            ::ibnd::debug_at(::ibnd::Src::src, line, __VA_ARGS__); \
    } while (0)
