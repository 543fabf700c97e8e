// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Link width/speed hints for the libibnetdisc based tools.
#include "ibdiag_netdisc.h"

#include <cstdio>
#include <infiniband/mad.h>

namespace ibdiag {

namespace {

constexpr uint32_t kCapHasExtSpeeds = 1u << 14; // PortInfo:CapabilityMask
constexpr uint32_t kMlnxFdr10 = 0x01;           // Mellanox ext. speed bit

// Widest width both ends support, as a LinkWidthActive value.
uint32_t widest(uint32_t supported)
{
	unsigned shift = 0; // 1x
	if (supported & 8)
		shift = 3; // 12x
	else if (supported & 4)
		shift = 2; // 8x
	else if (supported & 2)
		shift = 1; // 4x
	else if (supported & 0x10)
		shift = 4; // 2x
	return 1u << shift;
}

// Highest bit set (1 for 0).
uint32_t top_bit(uint32_t v)
{
	unsigned r = 0;
	while (v >>= 1)
		r++;
	return 1u << r;
}

uint32_t field(const uint8_t *info, enum MAD_FIELDS f)
{
	return mad_get_field((void *)info, 0, f);
}

// The CapabilityMask that applies to a port: a switch's is on port 0.
uint32_t cap_mask_of(ibnd_port_t *p)
{
	const uint8_t *info = nullptr;
	if (p->node->type == IB_NODE_SWITCH) {
		if (p->node->ports && p->node->ports[0])
			info = p->node->ports[0]->info;
	} else {
		info = p->info;
	}
	return info ? field(info, IB_PORT_CAPMASK_F) : 0;
}

} // namespace

void get_max_msg(char *width_msg, char *speed_msg, int msg_size,
		 ibnd_port_t *port)
{
	char buf[64];
	ibnd_port_t *rem = port->remoteport;

	uint32_t max_width = widest(field(port->info, IB_PORT_LINK_WIDTH_SUPPORTED_F) &
				    field(rem->info, IB_PORT_LINK_WIDTH_SUPPORTED_F));
	if (!(max_width & field(port->info, IB_PORT_LINK_WIDTH_ACTIVE_F)))
		snprintf(width_msg, msg_size, "Could be %s",
			 mad_dump_val(IB_PORT_LINK_WIDTH_ACTIVE_F, buf, 64, &max_width));

	if ((cap_mask_of(port) & kCapHasExtSpeeds) &&
	    (cap_mask_of(rem) & kCapHasExtSpeeds)) {
		uint32_t ours = field(port->info, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F);
		uint32_t theirs = field(rem->info, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F);
		if (ours && theirs) {
			uint32_t max_speed = top_bit(ours & theirs);
			if (!(max_speed & field(port->info, IB_PORT_LINK_SPEED_EXT_ACTIVE_F)))
				snprintf(speed_msg, msg_size, "Could be %s",
					 mad_dump_val(IB_PORT_LINK_SPEED_EXT_ACTIVE_F,
						      buf, 64, &max_speed));
			return;
		}
	}

	bool fdr10 = (field(port->ext_info, IB_MLNX_EXT_PORT_LINK_SPEED_SUPPORTED_F) & kMlnxFdr10) &&
		     (field(rem->ext_info, IB_MLNX_EXT_PORT_LINK_SPEED_SUPPORTED_F) & kMlnxFdr10);
	if (fdr10) {
		if (!(field(port->ext_info, IB_MLNX_EXT_PORT_LINK_SPEED_ACTIVE_F) & kMlnxFdr10)) {
			// QDR and FDR10 share a signalling rate: say so.
			if (field(port->info, IB_PORT_LINK_SPEED_ACTIVE_F) == 4)
				snprintf(speed_msg, msg_size,
					 "Could be FDR10 (Found link at QDR but expected speed is FDR10)");
			else
				snprintf(speed_msg, msg_size, "Could be FDR10");
		}
		return;
	}

	uint32_t max_speed = top_bit(field(port->info, IB_PORT_LINK_SPEED_SUPPORTED_F) &
				     field(rem->info, IB_PORT_LINK_SPEED_SUPPORTED_F));
	if (!(max_speed & field(port->info, IB_PORT_LINK_SPEED_ACTIVE_F)))
		snprintf(speed_msg, msg_size, "Could be %s",
			 mad_dump_val(IB_PORT_LINK_SPEED_ACTIVE_F, buf, 64, &max_speed));
}

} // namespace ibdiag
