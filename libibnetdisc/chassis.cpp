// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Chassis grouping.  Three rules, as in the reference:
//  * Voltaire ISR chassis (vendor 0x8f1) are rebuilt from their internal
//    wiring: spine (fabric board) and line board chips are recognised by
//    device id, their slot and chip numbers derived from the port they use
//    to reach each other, and the chassis collected around each spine.
//  * Mellanox IS4 chassis chips (device 0xbd36) carry their slot in the
//    node description "MF0;<system>:<type>/<L|S><nn>[:<board>]/U<chip>".
//  * Everything else is grouped by system image GUID (Topspin/Cisco and
//    Xsigo GUIDs first normalised); a group of one is not a chassis.
#include "internal.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace ibnd {
namespace {

constexpr uint32_t kVoltaire = 0x8f1, kMellanox = 0x2c9, kTopspin = 0x5ad, kInfinicon = 0x66a, kXsigo = 0x1397;
constexpr uint32_t kMlxIs4 = 0xbd36;

// Voltaire device ids
enum : uint32_t {
    kFcRouter = 0x5a00,
    kIpRouter = 0x5a01,
    kSlb24 = 0x5a09,
    kSfb12 = 0x5a08,
    kSfb4 = 0x5a0b,
    kSlb8 = 0x5a0d,
    kSfb12Ddr = 0x5a32,
    kSfb4Ddr = 0x5a33,
    kSlb24Ddr = 0x5a34,
    kSfb2012 = 0x5a37,
    kSlb2024 = 0x5a38,
    kSfb2004 = 0x5a40,
    kSrb2004 = 0x5a42,
    kSlb4018 = 0x5a5b,
    kSfb4700 = 0x5a5c,
    kSfb4700x2 = 0x5a5d,
    kSfb4200 = 0x5a60,
};

// ch_type values and their names
enum : unsigned char { kUnresolved, kIsr9288, kIsr9096, kIsr2012, kIsr2004, kIsr4700, kIsr4200 };
const char* const kTypeNames[] = {"", "ISR9288", "ISR9096", "ISR2012", "ISR2004", "ISR4700", "ISR4200"};
// ch_slot values and their names
enum : unsigned char { kNoSlot, kLineSlot, kSpineSlot, kRouterSlot };
const char* const kSlotNames[] = {"", "Line", "Spine", "SRBD"};

uint32_t vendor(const ibnd_node_t* n) { return mad_get_field(const_cast<uint8_t*>(n->info), 0, IB_NODE_VENDORID_F); }
uint32_t devid(const ibnd_node_t* n) { return mad_get_field(const_cast<uint8_t*>(n->info), 0, IB_NODE_DEVID_F); }
uint64_t sysguid(const ibnd_node_t* n) {
    return mad_get_field64(const_cast<uint8_t*>(n->info), 0, IB_NODE_SYSTEM_GUID_F);
}

bool is_router(const ibnd_node_t* n) {
    auto d = devid(n);
    return d == kFcRouter || d == kIpRouter;
}
bool spine_9096(const ibnd_node_t* n) {
    auto d = devid(n);
    return d == kSfb4 || d == kSfb4Ddr;
}
bool spine_9288(const ibnd_node_t* n) {
    auto d = devid(n);
    return d == kSfb12 || d == kSfb12Ddr;
}
bool spine_2004(const ibnd_node_t* n) { return devid(n) == kSfb2004; }
bool spine_2012(const ibnd_node_t* n) { return devid(n) == kSfb2012; }
bool spine_4700(const ibnd_node_t* n) { return devid(n) == kSfb4700; }
bool spine_4700x2(const ibnd_node_t* n) { return devid(n) == kSfb4700x2; }
bool spine_4200(const ibnd_node_t* n) { return devid(n) == kSfb4200; }
bool is_spine(const ibnd_node_t* n) {
    return spine_9096(n) || spine_9288(n) || spine_2004(n) || spine_2012(n) || spine_4700(n) || spine_4700x2(n) ||
        spine_4200(n);
}
bool line_24(const ibnd_node_t* n) {
    auto d = devid(n);
    return d == kSlb24 || d == kSlb24Ddr || d == kSrb2004;
}
bool line_8(const ibnd_node_t* n) { return devid(n) == kSlb8; }
bool line_2024(const ibnd_node_t* n) { return devid(n) == kSlb2024; }
bool line_4700(const ibnd_node_t* n) { return devid(n) == kSlb4018; }
bool is_line(const ibnd_node_t* n) { return line_24(n) || line_8(n) || line_2024(n) || line_4700(n); }

// Port-indexed tables (index 0 unused, 36 ports).  "slot" tables give the
// slot of the peer board, "chip" tables the chip on that board.
using PortTable = unsigned char[37];
// line board seen from a spine port
constexpr PortTable kLineSlotSfb4 = {0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4};
constexpr PortTable kLineChipSfb4 = {0, 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2};
constexpr PortTable kLineSlotSfb12 = {0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12};
constexpr PortTable kLineChipSfb12 = {0, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2};
constexpr PortTable kLineSlotSfb18 = {0,  1,  1,  2,  2,  3,  3,  4,  4,  5,  5,  6,  6,  7,  7,  8,  8,  9, 9,
                                      10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 18, 18};
constexpr PortTable kLineChipSfb18 = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
constexpr PortTable kLineSlotSfb18x2 = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};
constexpr PortTable kLineChipSfb18x2 = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
constexpr PortTable kLineSlotSfb4200 = {0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5,
                                        5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 9, 9, 9, 9};
constexpr PortTable kLineChipSfb4200 = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
// router module seen from an sFB-4 port: its chip number
constexpr PortTable kRouterChipSfb4 = {0, 3, 2, 1, 3, 2, 1, 3, 2, 1, 3, 2, 1, 3, 2, 1, 3, 2, 1, 3, 2, 1, 3, 2, 1};
// spine seen from a line board port
constexpr PortTable kSpineSlot12 = {0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4};
constexpr PortTable kSpineChip12 = {0, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3};
constexpr PortTable kSpineSlot4 = {0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4};
constexpr PortTable kSpineChip4 = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
constexpr PortTable kSpineSlot18 = {0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9};
constexpr PortTable kSpineChip18 = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
constexpr PortTable kSpineChip18x2 = {0, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1};
constexpr PortTable kSpineSlot4200 = {0, 1, 1, 1, 1, 0, 0, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4};
constexpr PortTable kSpineChip4200 = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

unsigned char at(const PortTable& t, int port) { return port >= 0 && port <= 36 ? t[port] : 0; }

// A spine learns its own slot from the line board port it is cabled to.
void spine_slot(ibnd_node_t* n, const ibnd_port_t* lineport) {
    int p = lineport->portnum;
    n->ch_slot = kSpineSlot;
    if (spine_9096(n)) {
        n->ch_type = kIsr9096;
        n->ch_slotnum = at(kSpineSlot4, p);
        n->ch_anafanum = at(kSpineChip4, p);
    } else if (spine_9288(n)) {
        n->ch_type = kIsr9288;
        n->ch_slotnum = at(kSpineSlot12, p);
        n->ch_anafanum = at(kSpineChip12, p);
    } else if (spine_2012(n)) {
        n->ch_type = kIsr2012;
        n->ch_slotnum = at(kSpineSlot12, p);
        n->ch_anafanum = at(kSpineChip12, p);
    } else if (spine_2004(n)) {
        n->ch_type = kIsr2004;
        n->ch_slotnum = at(kSpineSlot4, p);
        n->ch_anafanum = at(kSpineChip4, p);
    } else if (spine_4700(n)) {
        n->ch_type = kIsr4700;
        n->ch_slotnum = at(kSpineSlot18, p);
        n->ch_anafanum = at(kSpineChip18, p);
    } else if (spine_4700x2(n)) {
        n->ch_type = kIsr4700;
        n->ch_slotnum = at(kSpineSlot18, p);
        n->ch_anafanum = at(kSpineChip18x2, p);
    } else if (spine_4200(n)) {
        n->ch_type = kIsr4200;
        n->ch_slotnum = at(kSpineSlot4200, p);
        n->ch_anafanum = at(kSpineChip4200, p);
    } else {
        IBND_ERR(chassis, 507, "Unexpected node found: guid 0x%016lx\n", n->guid);
    }
}

// A router module learns its slot from the spine port it is cabled to.
void router_slot(ibnd_node_t* n, const ibnd_port_t* spineport) {
    const ibnd_node_t* spine = spineport->node;
    int p = spineport->portnum;
    n->ch_found = 1;
    n->ch_slot = kRouterSlot;
    // On an sFB-12 the module order follows the GUIDs: module 1 faces chip
    // 3, module 3 faces chip 1.
    auto guess = [&] {
        uint64_t g = spine->guid % 4;
        return static_cast<unsigned char>(g == 3 ? 1 : g == 1 ? 3 : 2);
    };
    if (spine_9096(spine)) {
        n->ch_type = kIsr9096;
        n->ch_slotnum = at(kLineSlotSfb4, p);
        n->ch_anafanum = at(kRouterChipSfb4, p);
    } else if (spine_9288(spine)) {
        n->ch_type = kIsr9288;
        n->ch_slotnum = at(kLineSlotSfb12, p);
        n->ch_anafanum = guess();
    } else if (spine_2012(spine)) {
        n->ch_type = kIsr2012;
        n->ch_slotnum = at(kLineSlotSfb12, p);
        n->ch_anafanum = guess();
    } else if (spine_2004(spine)) {
        n->ch_type = kIsr2004;
        n->ch_slotnum = at(kLineSlotSfb4, p);
        n->ch_anafanum = at(kRouterChipSfb4, p);
    } else {
        IBND_ERR(chassis, 547, "Unexpected node found: guid 0x%016lx\n", spine->guid);
    }
}

// A line board learns its slot from the spine port it is cabled to.
void line_slot(ibnd_node_t* n, const ibnd_port_t* spineport) {
    const ibnd_node_t* spine = spineport->node;
    int p = spineport->portnum;
    n->ch_slot = kLineSlot;
    if (spine_9096(spine)) {
        n->ch_type = kIsr9096;
        n->ch_slotnum = at(kLineSlotSfb4, p);
        n->ch_anafanum = at(kLineChipSfb4, p);
    } else if (spine_9288(spine)) {
        n->ch_type = kIsr9288;
        n->ch_slotnum = at(kLineSlotSfb12, p);
        n->ch_anafanum = at(kLineChipSfb12, p);
    } else if (spine_2012(spine)) {
        n->ch_type = kIsr2012;
        n->ch_slotnum = at(kLineSlotSfb12, p);
        n->ch_anafanum = at(kLineChipSfb12, p);
    } else if (spine_2004(spine)) {
        n->ch_type = kIsr2004;
        n->ch_slotnum = at(kLineSlotSfb4, p);
        n->ch_anafanum = at(kLineChipSfb4, p);
    } else if (spine_4700(spine)) {
        n->ch_type = kIsr4700;
        n->ch_slotnum = at(kLineSlotSfb18, p);
        n->ch_anafanum = at(kLineChipSfb18, p);
    } else if (spine_4700x2(spine)) {
        n->ch_type = kIsr4700;
        n->ch_slotnum = at(kLineSlotSfb18x2, p);
        n->ch_anafanum = at(kLineChipSfb18x2, p);
    } else if (spine_4200(spine)) {
        n->ch_type = kIsr4200;
        n->ch_slotnum = at(kLineSlotSfb4200, p);
        n->ch_anafanum = at(kLineChipSfb4200, p);
    } else {
        IBND_ERR(chassis, 585, "Unexpected node found: guid 0x%016lx\n", spine->guid);
    }
}

// Internal (chip) port -> front panel port of Voltaire boards, per chip.
using ExtMap = unsigned char[37];
constexpr ExtMap kExtSlb24[2] = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 5, 4, 18, 17, 16, 1, 2, 3, 13, 14, 15},
                                 {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 11, 10, 24, 23, 22, 7, 8, 9, 19, 20, 21}};
constexpr ExtMap kExtSlb8[2] = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 6, 6, 6, 1, 1, 1, 5, 5, 5},
                                {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 8, 8, 8, 3, 3, 3, 7, 7, 7}};
constexpr ExtMap kExtSlb2024[2] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24},
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}};
constexpr ExtMap kExtSlb4018 = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0,  0,  0,  0,  0,  0,  0,  0, 0,
                                1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};
constexpr ExtMap kExtSfb4700x2[2] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0,  0,  0,  0,  0,  0,  0,  0, 0,
     7, 7, 7, 8, 8, 8, 9, 9, 9, 10, 10, 10, 11, 11, 11, 12, 12, 12},
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6}};

void voltaire_portmap(ibnd_port_t* port) {
    ibnd_node_t* node = port->node;
    int pn = port->portnum;
    bool l4700 = line_4700(node), s4700x2 = spine_4700x2(node);
    port->ext_portnum = 0;
    if (!node->ch_found || (!is_line(node) && !s4700x2))
        return;
    bool wide = l4700 || s4700x2;
    if (wide ? (pn < 19 || pn > 36) : (pn < 13 || pn > 24))
        return;
    if (node->ch_anafanum < 1 || node->ch_anafanum > 2)
        return;
    int chip = node->ch_anafanum - 1;
    if (line_24(node))
        port->ext_portnum = kExtSlb24[chip][pn];
    else if (line_2024(node))
        port->ext_portnum = kExtSlb2024[chip][pn];
    else if (l4700)
        port->ext_portnum = kExtSlb4018[pn];
    else if (s4700x2)
        port->ext_portnum = kExtSfb4700x2[chip][pn];
    else
        port->ext_portnum = kExtSlb8[chip][pn];
}

ibnd_port_t* port_at(ibnd_node_t* n, int p) { return n->ports && p >= 0 && p <= n->numports ? n->ports[p] : nullptr; }

void fill_voltaire(ibnd_node_t* node) {
    if (node->ch_found)
        return;
    node->ch_found = 1;
    if (is_router(node)) {
        for (int p = 1; p <= node->numports; ++p) {
            ibnd_port_t* port = port_at(node, p);
            if (port && port->remoteport && is_spine(port->remoteport->node))
                router_slot(node, port->remoteport);
        }
    } else if (is_spine(node)) {
        bool x2 = spine_4700x2(node);
        for (int p = 1; p <= node->numports; ++p) {
            ibnd_port_t* port = port_at(node, p);
            if (!port || !port->remoteport)
                continue;
            if (x2 && port->portnum > 18)  // chassis front panel ports
                continue;
            ibnd_node_t* rem = port->remoteport->node;
            if (rem->type != IB_NODE_SWITCH) {
                if (!rem->ch_found)
                    router_slot(rem, port);
                continue;
            }
            if (!node->ch_type)
                spine_slot(node, port->remoteport);
        }
    } else if (is_line(node)) {
        bool l4700 = line_4700(node);
        for (int p = 1; p <= node->numports; ++p) {
            ibnd_port_t* port = port_at(node, p);
            if (!port || !port->remoteport)
                continue;
            if (port->portnum > (l4700 ? 18 : 12))
                continue;
            line_slot(node, port->remoteport);
            break;
        }
    }
    for (int p = 1; p <= node->numports; ++p)
        if (ibnd_port_t* port = port_at(node, p))
            voltaire_portmap(port);
}

void fill_mellanox(ibnd_node_t* node) {
    char desc[IB_SMP_DATA_SIZE + 1];
    std::memcpy(desc, node->nodedesc, IB_SMP_DATA_SIZE);
    desc[IB_SMP_DATA_SIZE] = '\0';
    IBND_DBG(chassis, 621, "fill_mellanox_chassis_record: node_desc:%s \n", desc);
    if (node->ch_found || devid(node) != kMlxIs4)
        return;
    if (std::strncmp(desc, "MF0;", 4) != 0) {
        IBND_DBG(chassis, 635, "fill_mellanox_chassis_record: Unsupported node description format:%s \n", desc);
        return;
    }
    // The messages print desc as cut so far, as the reference does.
    char* it = desc + 4;
    while (*it && *it != ':')
        ++it;
    if (!*it) {
        IBND_DBG(chassis, 643,
                 "fill_mellanox_chassis_record: Unsupported node description format:%s - (get system_name failed) \n",
                 desc);
        return;
    }
    *it++ = '\0';
    char* type = it;
    while (*it && *it != '/')
        ++it;
    if (!*it) {
        IBND_DBG(chassis, 652,
                 "fill_mellanox_chassis_record: Unsupported node description format:%s - (get system_type failed) \n",
                 desc);
        return;
    }
    *it++ = '\0';
    char* slot = it;
    while (*it && *it != '/' && *it != ':')
        ++it;
    if (!*it) {
        IBND_DBG(
            chassis, 661,
            "fill_mellanox_chassis_record: Unsupported node description format:%s - (get system_slot_name failed) \n",
            desc);
        return;
    }
    if (*it == ':') {
        *it++ = '\0';
        while (*it && *it != '/')
            ++it;
        if (!*it) {
            IBND_DBG(
                chassis, 669,
                "fill_mellanox_chassis_record: Unsupported node description format:%s - (get board type failed) \n",
                desc);
            return;
        }
    }
    *it++ = '\0';
    char* index = it;
    if (index[0] != 'U') {
        IBND_DBG(chassis, 677,
                 "fill_mellanox_chassis_record: Unsupported node description format:%s - (get node index) \n", desc);
        return;
    }
    node->ch_anafanum = static_cast<unsigned char>(std::atoi(index + 1));
    if (node->ch_anafanum != 1)
        IBND_DBG(chassis, 684, "Unexpected Chip number:%d \n", node->ch_anafanum);
    if (slot[0] == 'L')
        node->ch_slot = kLineSlot;
    else if (slot[0] == 'S')
        node->ch_slot = kSpineSlot;
    else {
        IBND_DBG(chassis, 694, "fill_mellanox_chassis_record: Unsupported system_slot_name:%s \n", slot);
        return;
    }
    node->ch_found = 1;
    node->ch_slotnum = static_cast<unsigned char>(std::atoi(slot + 1));
    if ((node->ch_slot == kLineSlot && node->ch_slotnum > LINES_MAX_NUM + 1) ||
        (node->ch_slot == kSpineSlot && node->ch_slotnum > SPINES_MAX_NUM + 1)) {
        IBND_ERR(chassis, 704, "fill_mellanox_chassis_record: invalid slot number:%d \n", node->ch_slotnum);
        node->ch_slotnum = 0;
        return;
    }
    std::strncpy(node->ch_type_str, type, sizeof(node->ch_type_str) - 1);
    if (node->ch_slot == kLineSlot)
        for (int p = 1; p <= node->numports && p <= 18; ++p)
            if (ibnd_port_t* port = port_at(node, p))
                port->ext_portnum = p;
}

void mellanox_place(ibnd_node_t* node, ibnd_chassis_t* ch) {
    // slot numbers were bounded by fill_mellanox (<= max + 1)
    ibnd_node_t** slot = nullptr;
    if (node->ch_slot == kLineSlot && node->ch_slotnum <= LINES_MAX_NUM)
        slot = &ch->linenode[node->ch_slotnum];
    else if (node->ch_slot == kSpineSlot && node->ch_slotnum <= SPINES_MAX_NUM)
        slot = &ch->spinenode[node->ch_slotnum];
    if (!slot || *slot)
        return;
    *slot = node;
    node->chassis = ch;
}

int line_index(ibnd_node_t* node) {
    int i = line_4700(node) ? node->ch_slotnum : 3 * (node->ch_slotnum - 1) + node->ch_anafanum;
    if (i > LINES_MAX_NUM || i < 1) {
        std::printf("%s: retval = %d\n", "get_line_index", i);
        IBND_ERR(chassis, 846, "Internal error\n");
        return -1;
    }
    return i;
}

int spine_index(ibnd_node_t* node) {
    int i;
    if (spine_9288(node) || spine_2012(node))
        i = 3 * (node->ch_slotnum - 1) + node->ch_anafanum;
    else if (spine_4700(node) || spine_4700x2(node))
        i = 2 * (node->ch_slotnum - 1) + node->ch_anafanum;
    else
        i = node->ch_slotnum;
    if (i > SPINES_MAX_NUM || i < 1) {
        IBND_ERR(chassis, 864, "Internal error\n");
        return -1;
    }
    return i;
}

int place_line(ibnd_node_t* node, ibnd_chassis_t* ch) {
    int i = line_index(node);
    if (i < 0)
        return i;
    if (!ch->linenode[i]) {
        ch->linenode[i] = node;
        node->chassis = ch;
    }
    return 0;
}

int place_spine(ibnd_node_t* node, ibnd_chassis_t* ch) {
    int i = spine_index(node);
    if (i < 0)
        return i;
    if (!ch->spinenode[i]) {
        ch->spinenode[i] = node;
        node->chassis = ch;
    }
    return 0;
}

int lines_catch_spines(ibnd_chassis_t* ch) {
    for (int i = 1; i <= LINES_MAX_NUM; ++i) {
        ibnd_node_t* node = ch->linenode[i];
        if (!node || !is_line(node))
            continue;
        int limit = line_4700(node) ? 18 : 12;
        for (int p = 1; p <= node->numports; ++p) {
            ibnd_port_t* port = port_at(node, p);
            if (!port || !port->remoteport || port->portnum > limit)
                continue;
            ibnd_node_t* rem = port->remoteport->node;
            if (!rem->ch_found)
                continue;
            if (place_spine(rem, ch))
                return -1;
        }
    }
    return 0;
}

int spines_catch_lines(ibnd_chassis_t* ch) {
    for (int i = 1; i <= SPINES_MAX_NUM; ++i) {
        ibnd_node_t* node = ch->spinenode[i];
        if (!node)
            continue;
        bool x2 = spine_4700x2(node);
        for (int p = 1; p <= node->numports; ++p) {
            ibnd_port_t* port = port_at(node, p);
            if (!port || !port->remoteport || (x2 && port->portnum > 18))
                continue;
            ibnd_node_t* rem = port->remoteport->node;
            if (!rem->ch_found)
                continue;
            if (place_line(rem, ch))
                return -1;
        }
    }
    return 0;
}

int build_voltaire_chassis(ibnd_node_t* spine, ibnd_chassis_t* ch) {
    if (place_spine(spine, ch))
        return -1;
    bool x2 = spine_4700x2(spine);
    for (int p = 1; p <= spine->numports; ++p) {
        ibnd_port_t* port = port_at(spine, p);
        if (!port || !port->remoteport || (x2 && port->portnum > 18))
            continue;
        ibnd_node_t* rem = port->remoteport->node;
        if (!rem->ch_found)
            continue;
        place_line(rem, ch);
    }
    // Routers hang off some spines only, and boards may only see each
    // other through the chassis: two rounds each way catch everything.
    for (int round = 0; round < 2; ++round) {
        if (lines_catch_spines(ch) || spines_catch_lines(ch))
            return -1;
    }
    // The chassis GUID is the first spine's GUID minus one (Voltaire SM).
    for (int i = 1; i <= SPINES_MAX_NUM; ++i)
        if (ch->spinenode[i]) {
            ch->chassisguid = ch->spinenode[i]->guid - 1;
            break;
        }
    return 0;
}

bool xsigo_leafone(uint64_t g) { return (g & 0xffffffffff000000ULL) == 0x0013970102000000ULL; }
bool xsigo_switch(uint64_t g) { return (g & 0xffffffff00000000ULL) == 0x0013970100000000ULL; }

uint64_t xsigo_chassisguid(ibnd_node_t* node) {
    uint64_t sg = sysguid(node);
    if (!ibnd_is_xsigo_hca(sg) && !ibnd_is_xsigo_tca(sg))
        return xsigo_switch(sg) ? (sg & 0xffffffff00ffffffULL) : sg;
    ibnd_port_t* p1 = port_at(node, 1);
    if (!p1)
        return 0;
    if (!p1->remoteport)
        return sg;
    uint64_t rsg = sysguid(p1->remoteport->node);
    return xsigo_leafone(rsg) ? (rsg & 0xffffffff00ffffffULL) : sg;
}

uint64_t chassisguid_of(ibnd_node_t* node) {
    uint32_t v = vendor(node);
    uint64_t sg = sysguid(node);
    if (v == kTopspin || v == kInfinicon)
        return sg & 0xffffffff00ffffffULL;  // byte 4 is the slot
    if (v == kXsigo || ibnd_is_xsigo_guid(sg))
        return xsigo_chassisguid(node);
    return sg;
}

// Chassis by GUID, the first of the list for each GUID (the list order is
// what a linear search of fabric->chassis would see).
using ChassisIndex = std::unordered_map<uint64_t, ibnd_chassis_t*>;

// The reference searches fabric->chassis, which stays empty until the
// first GUID-based chassis is made: Voltaire chassis are not found before.
ibnd_chassis_t* find_by_guid(ibnd_fabric_t* f, const ChassisIndex& index, uint64_t g) {
    if (!f->chassis)
        return nullptr;
    auto it = index.find(g);
    return it == index.end() ? nullptr : it->second;
}

// The chassis made so far. Until commit() hands them to the fabric they are
// freed with the list, and the fabric (which may point at them meanwhile,
// see find_by_guid) is left with none: a failure or an exception half-way
// leaves nothing dangling.
struct ChassisList {
    ibnd_fabric_t* fabric;
    ibnd_chassis_t* first = nullptr;
    ibnd_chassis_t* last = nullptr;
    explicit ChassisList(ibnd_fabric_t* f) : fabric(f) {}
    ChassisList(const ChassisList&) = delete;
    ChassisList& operator=(const ChassisList&) = delete;
    ~ChassisList() {
        if (!first)
            return;
        release();
        fabric->chassis = nullptr;
    }
    void commit() {
        fabric->chassis = first;
        first = last = nullptr;
    }
    ibnd_chassis_t* append() {
        auto* c = static_cast<ibnd_chassis_t*>(std::calloc(1, sizeof(ibnd_chassis_t)));
        if (!c) {
            IBND_ERR(chassis, 1195, "OOM: failed to allocate chassis object\n");
            return nullptr;
        }
        (first ? last->next : first) = c;
        last = c;
        return c;
    }
    void release() {
        while (first) {
            ibnd_chassis_t* n = first->next;
            std::free(first);
            first = n;
        }
        last = nullptr;
    }
};

}  // namespace

int group_nodes(ibnd_fabric_t* fabric) {
    ChassisList list(fabric);
    int chassisnum = 0;

    for (ibnd_node_t* n = fabric->switches; n; n = n->type_next) {
        uint32_t v = vendor(n);
        if (v == kVoltaire)
            fill_voltaire(n);
        else if (v == kMellanox)
            fill_mellanox(n);
    }

    for (ibnd_node_t* n = fabric->switches; n; n = n->type_next) {
        if (vendor(n) != kVoltaire)
            continue;
        if (!n->ch_found || (n->chassis && n->chassis->chassisnum) || !is_spine(n))
            continue;
        ibnd_chassis_t* c = list.append();
        if (!c)
            goto fail;
        c->chassisnum = static_cast<unsigned char>(++chassisnum);
        if (build_voltaire_chassis(n, c))
            goto fail;
    }

    // Count members per system image GUID.
    {
        ChassisIndex index;
        for (ibnd_chassis_t* c = list.first; c; c = c->next)
            index.emplace(c->chassisguid, c);
        for (ibnd_node_t* n = fabric->nodes; n; n = n->next) {
            if (vendor(n) == kVoltaire || !sysguid(n))
                continue;
            uint64_t g = chassisguid_of(n);
            if (ibnd_chassis_t* c = find_by_guid(fabric, index, g)) {
                c->nodecount++;
            } else {
                ibnd_chassis_t* nc = list.append();
                if (!nc)
                    goto fail;
                nc->chassisguid = g;
                nc->nodecount = 1;
                index.emplace(g, nc);
                if (!fabric->chassis)
                    fabric->chassis = list.first;
            }
        }

        for (ibnd_node_t* n = fabric->nodes; n; n = n->next) {
            uint32_t v = vendor(n);
            if (v == kVoltaire || !sysguid(n))
                continue;
            ibnd_chassis_t* c = find_by_guid(fabric, index, chassisguid_of(n));
            if (!c || c->nodecount <= 1)
                continue;
            if (!c->chassisnum)
                c->chassisnum = static_cast<unsigned char>(++chassisnum);
            if (!n->ch_found) {
                n->ch_found = 1;
                n->chassis = c;
                n->next_chassis_node = c->nodes;
                c->nodes = n;
            } else if (v == kMellanox) {
                mellanox_place(n, c);
            }
        }
    }

    list.commit();
    return 0;
fail:
    list.release();
    fabric->chassis = nullptr;
    return -1;
}

}  // namespace ibnd

using namespace ibnd;

// exported: the version script decides what leaves the library
//
// Pure lookups on a built fabric (field reads, snprintf into the caller's
// buffer, debug lines through stdio): nothing allocates or throws, so none
// goes through the C-entry barrier. Grouping itself (group_nodes) allocates
// and runs inside ibnd_discover_fabric's and ibnd_load_fabric's barrier.
#pragma GCC visibility push(default)
extern "C" {

const char* ibnd_get_chassis_type(ibnd_node_t* node) {
    if (!node) {
        IBND_DBG(chassis, 64, "node parameter NULL\n");
        return nullptr;
    }
    if (!node->chassis)
        return nullptr;
    switch (vendor(node)) {
    case kVoltaire:
        if (node->ch_type == kUnresolved || node->ch_type > kIsr4200)
            return nullptr;
        return kTypeNames[node->ch_type];
    case kMellanox: return node->ch_type_str[0] ? node->ch_type_str : nullptr;
    default: return nullptr;
    }
}

char* ibnd_get_chassis_slot_str(ibnd_node_t* node, char* str, size_t size) {
    if (!node) {
        IBND_DBG(chassis, 100, "node parameter NULL\n");
        return nullptr;
    }
    uint32_t v = vendor(node);
    if (v != kVoltaire && v != kMellanox)
        return nullptr;
    if (!node->chassis || node->ch_slot == kNoSlot || node->ch_slot > kRouterSlot || !str)
        return nullptr;
    std::snprintf(str, size, "%s %d Chip %d", kSlotNames[node->ch_slot], node->ch_slotnum, node->ch_anafanum);
    return str;
}

uint64_t ibnd_get_chassis_guid(ibnd_fabric_t* fabric, unsigned char chassisnum) {
    if (!fabric) {
        IBND_DBG(chassis, 254, "fabric parameter NULL\n");
        return 0;
    }
    for (ibnd_chassis_t* c = fabric->chassis; c; c = c->next)
        if (c->chassisnum == chassisnum)
            return c->chassisguid;
    return 0;
}

int ibnd_is_xsigo_guid(uint64_t guid) { return (guid & 0xffffff0000000000ULL) == 0x0013970000000000ULL; }

int ibnd_is_xsigo_hca(uint64_t guid) { return (guid & 0xffffffff00000000ULL) == 0x0013970200000000ULL; }

int ibnd_is_xsigo_tca(uint64_t guid) { return (guid & 0xffffffff00000000ULL) == 0x0013970300000000ULL; }

}  // extern "C"
#pragma GCC visibility pop
