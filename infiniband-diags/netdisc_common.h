// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// What ibnetdiscover, iblinkinfo, ibqueryerrors and ibcacheedit share: the
// fabric handle, PortInfo reads, the link text of iblinkinfo's lines (which
// ibqueryerrors -r prints too) and the --diffcheck key parser.
// (Kept here rather than in common/ because only these tools use it.)
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>

#include "ibdiag_common.h"

namespace netdisc {

struct FabricDeleter {
    void operator()(ibnd_fabric_t* f) const { ibnd_destroy_fabric(f); }
};
using Fabric = std::unique_ptr<ibnd_fabric_t, FabricDeleter>;

// PortState 1 is Down.
inline constexpr unsigned IB_LINK_DOWN = 1;

// mad_get_field of a read-only attribute buffer
unsigned field(const uint8_t* buf, enum MAD_FIELDS f);

// mad_dump_val into a std::string
std::string dumped(enum MAD_FIELDS f, int value);

// The node descriptions of two nodes differ (all IB_SMP_DATA_SIZE bytes).
bool desc_differs(const ibnd_node_t* a, const ibnd_node_t* b);

// LinkWidthActive, LinkSpeedActive and LinkSpeedExtActive of a port, the
// latter only where the capability mask (a switch's port 0, else the port's
// own) announces extended speeds; width and speed are 0 when a switch has no
// port 0.
struct ActiveLink {
    unsigned width = 0;
    unsigned speed = 0;
    unsigned espeed = 0;
};
ActiveLink active_link(const ibnd_port_t* port);

// "Could be <width>" / "Could be <speed>" when a link runs below what both
// ends support (the buffers are left untouched otherwise).
void could_be(char* width_msg, char* speed_msg, int msg_size, const ibnd_port_t* port);

// "(4X  2.5 Gbps Active/  LinkUp)", or the state-only form of a down port
// (at most 255 characters).
std::string link_text(const ibnd_port_t* port, int state, int phys);

// The external port number, or "" when there is none.
std::string ext_num(const ibnd_port_t* port);

// The far end of a linked port: "[0x<guid> ]<lid> <port>[<ext>] "<name>"
// (<could-be hints>)\n" (at most 255 characters; a longer one also warns on
// stderr). port->remoteport must be set.
std::string peer_text(ibnd_port_t* port, bool with_guid, const ibdiag::NodeNameMap& map);

// After opening srcport: -y's M_Key on it, -t's timeout on it and on the
// scan, the ibdiag.conf scan flags and M_Key into config.
void setup_scan(struct ibmad_port* srcport, ibnd_config& config);

// -D with --load-cache: closes srcport, says so and exits with status.
void reject_cache_with_dr(const std::string& dr_path, const std::string& cache, struct ibmad_port* srcport, int status);

// The fabric to report on: the --load-cache file when cache is set, else a
// scan from start (when not null; max_hops 1 unless -n set it) that falls
// back to the whole subnet after warning partial_failed (as an IBWARN from
// main, where the tools had it). A cache that does not load, or a scan that
// fails, prints the reference's message and exits with status.
Fabric load_or_discover(const std::string& cache, ib_portid_t* start, ibnd_config& config, const char* partial_failed,
                        int status);

// --diffcheck: comma-separated keys (case-insensitive, empty ones skipped)
// into checks; an unknown key prints the reference's message and gives -1.
struct CheckKey {
    const char* key;
    unsigned bit;
};
int parse_check_keys(const char* arg, std::span<const CheckKey> keys, unsigned& checks);

}  // namespace netdisc
