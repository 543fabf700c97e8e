// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// dump_fts: the unicast or multicast forwarding tables of every switch,
// found by one libibnetdisc sweep (destinations resolved from the sweep
// rather than with more MADs).
#include "ibdiag_common.h"

#include <arpa/inet.h>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <infiniband/ibnetdisc.h>
#include <memory>
#include <string>

namespace {

struct ibmad_port *srcport;
std::unique_ptr<ibdiag::NodeNameMap> name_map;
bool brief, dump_all, multicast;
unsigned startlid, endlid;

constexpr unsigned kMlidsPerBlock = IB_SMP_DATA_SIZE / 2;
constexpr unsigned kLidsPerBlock = IB_SMP_DATA_SIZE;

unsigned round_up(unsigned v, unsigned to)
{
	return (v + to - 1) / to * to;
}

uint16_t mft[16][kMlidsPerBlock];

std::string mlid_row(unsigned mlid, unsigned nports)
{
	std::string row;
	bool any = false;
	if (brief) {
		unsigned chunks = round_up(nports + 1, 16) / 16;
		for (unsigned c = 0; c < chunks && c < 16; c++) {
			uint16_t mask = ntohs(mft[c][mlid % kMlidsPerBlock]);
			any |= mask != 0;
			char hex[8];
			snprintf(hex, sizeof(hex), "%04hx", mask);
			row += hex;
		}
	} else {
		for (unsigned p = 0; p <= nports && p / 16 < 16; p++) {
			uint16_t mask = ntohs(mft[p / 16][mlid % kMlidsPerBlock]);
			any |= mask != 0;
			row += (mask & (1u << (p % 16))) ? 'x' : ' ';
			row += ' ';
		}
	}
	if (!any && !dump_all)
		return {};
	return row;
}

void dump_multicast_tables(ibnd_node_t *node, unsigned startl, unsigned endl,
			   struct ibmad_port *mad_port)
{
	ib_portid_t *portid = &node->path_portid;
	unsigned nports = (unsigned)node->numports;
	uint64_t nodeguid = node->guid;
	unsigned cap = 0, top = 0;
	mad_decode_field(node->switchinfo, IB_SW_MCAST_FDB_CAP_F, &cap);
	mad_decode_field(node->switchinfo, IB_SW_MCAST_FDB_TOP_F, &top);

	if (!endl || endl > IB_MIN_MCAST_LID + cap - 1)
		endl = IB_MIN_MCAST_LID + cap - 1;
	if (!dump_all && top && top < endl) {
		if (top < IB_MIN_MCAST_LID - 1)
			IBWARN("illegal top mlid %x", top);
		else
			endl = top;
	}
	if (!startl) {
		startl = IB_MIN_MCAST_LID;
	} else if (startl < IB_MIN_MCAST_LID) {
		IBWARN("illegal start mlid %x, set to %x", startl,
		       IB_MIN_MCAST_LID);
		startl = IB_MIN_MCAST_LID;
	}
	if (endl > IB_MAX_MCAST_LID) {
		IBWARN("illegal end mlid %x, truncate to %x", endl,
		       IB_MAX_MCAST_LID);
		endl = IB_MAX_MCAST_LID;
	}

	std::string name = name_map->remap(nodeguid, node->nodedesc);
	printf("Multicast mlids [0x%x-0x%x] of switch %s guid 0x%016" PRIx64
	       " (%s):\n", startl, endl, portid2str(portid), nodeguid,
	       name.c_str());
	if (brief) {
		printf(" MLid       Port Mask\n");
	} else {
		std::string tens, units;
		for (unsigned p = 0; p <= nports; p++) {
			tens += (p % 10) ? ' ' : (char)('0' + p / 10);
			tens += ' ';
			units += std::to_string(p % 10) + " ";
		}
		if (nports > 9)
			printf("            %s\n", tens.c_str());
		printf("     Ports: %s\n", units.c_str());
		printf(" MLid\n");
	}
	if (ibdiag::cfg.verbose)
		printf("Switch multicast mlid capability is %d top is 0x%x\n",
		       cap, top);

	unsigned chunks = round_up(nports + 1, 16) / 16;
	if (chunks > 16)
		chunks = 16;
	int shown = 0;
	for (unsigned block = startl / kMlidsPerBlock;
	     block <= endl / kMlidsPerBlock; block++) {
		for (unsigned c = 0; c < chunks; c++) {
			int status = 0;
			unsigned mod = (block - IB_MIN_MCAST_LID / kMlidsPerBlock) |
				       (c << 28);
			IBDIAG_DEBUG("reading block %x chunk %d mod %x", block, c, mod);
			// A failed block is reported and the old contents shown,
			// as the reference does.
			if (!smp_query_status_via(mft[c], portid,
						  IB_ATTR_MULTICASTFORWTBL, mod, 0,
						  &status, mad_port))
				fprintf(stderr, "SubnGet(MFT) failed on switch "
					"'%s' %s Node GUID 0x%" PRIx64
					" SMA LID %d; MAD status 0x%x AM 0x%x\n",
					name.c_str(), portid2str(portid),
					node->guid, node->smalid, status, mod);
		}
		unsigned i = block * kMlidsPerBlock;
		unsigned end = i + kMlidsPerBlock;
		if (i < startl)
			i = startl;
		if (end > endl + 1)
			end = endl + 1;
		for (; i < end; i++) {
			std::string row = mlid_row(i, nports);
			if (row.empty())
				continue;
			printf("0x%04x      %s\n", i, row.c_str());
			shown++;
		}
	}
	printf("%d %smlids dumped \n", shown, dump_all ? "" : "valid ");
}

// The LMC range state carried from one LID to the next within a switch.
struct LidRange {
	int last_port_lid = 0;
	int base_port_lid = 0;
	uint64_t portguid = 0;
};

std::string lid_info(int lid, bool valid, ibnd_fabric_t *fabric, LidRange &r)
{
	char text[200];
	char guidstr[30];
	if (brief)
		return {};
	if (lid <= r.last_port_lid) {
		if (!valid)
			snprintf(text, sizeof(text), ": (path #%d - illegal port)",
				 lid - r.base_port_lid);
		else if (!r.portguid)
			snprintf(text, sizeof(text), ": (path #%d out of %d)",
				 lid - r.base_port_lid + 1,
				 r.last_port_lid - r.base_port_lid + 1);
		else
			snprintf(text, sizeof(text),
				 ": (path #%d out of %d: portguid %s)",
				 lid - r.base_port_lid + 1,
				 r.last_port_lid - r.base_port_lid + 1,
				 mad_dump_val(IB_NODE_PORT_GUID_F, guidstr,
					      sizeof(guidstr), &r.portguid));
		return text;
	}
	if (!valid)
		return ": (illegal port)";

	r.portguid = 0;
	ibnd_port_t *port = ibnd_find_port_lid(fabric, (uint16_t)lid);
	if (!port)
		return ": (node info not available fabric scan)";
	uint64_t nodeguid = port->node->guid;
	r.portguid = port->guid;
	int type = port->node->type;
	if (port->lmc > 0) {
		r.base_port_lid = port->base_lid;
		r.last_port_lid = port->base_lid + (1 << port->lmc) - 1;
	}
	std::string name = name_map->remap(nodeguid, port->node->nodedesc);
	char typestr[50];
	snprintf(text, sizeof(text), ": (%s portguid %s: '%s')",
		 mad_dump_val(IB_NODE_TYPE_F, typestr, sizeof(typestr), &type),
		 mad_dump_val(IB_NODE_PORT_GUID_F, guidstr, sizeof(guidstr),
			      &r.portguid),
		 name.c_str());
	return text;
}

void dump_unicast_tables(ibnd_node_t *node, int startl, int endl,
			 struct ibmad_port *mad_port, ibnd_fabric_t *fabric)
{
	ib_portid_t *portid = &node->path_portid;
	uint8_t lft[IB_SMP_DATA_SIZE] = {};
	int top = 0;
	mad_decode_field(node->switchinfo, IB_SW_LINEAR_FDB_TOP_F, &top);
	uint64_t nodeguid = node->guid;
	unsigned nports = (unsigned)node->numports;

	if (!endl || endl > top)
		endl = top;
	if (endl > IB_MAX_UCAST_LID) {
		IBWARN("illegal lft top %d, truncate to %d", endl,
		       IB_MAX_UCAST_LID);
		endl = IB_MAX_UCAST_LID;
	}
	std::string name = name_map->remap(nodeguid, node->nodedesc);
	printf("Unicast lids [0x%x-0x%x] of switch %s guid 0x%016" PRIx64
	       " (%s):\n", startl, endl, portid2str(portid), nodeguid,
	       name.c_str());
	IBDIAG_DEBUG("Switch top is 0x%x\n", top);
	printf("  Lid  Out   Destination\n");
	printf("       Port     Info \n");

	LidRange range;
	int shown = 0;
	int endblock = (int)(round_up((unsigned)endl, kLidsPerBlock) / kLidsPerBlock);
	for (int block = startl / (int)kLidsPerBlock; block < endblock; block++) {
		int status = 0;
		IBDIAG_DEBUG("reading block %d", block);
		if (!smp_query_status_via(lft, portid, IB_ATTR_LINEARFORWTBL,
					  (unsigned)block, 0, &status, mad_port))
			fprintf(stderr, "SubnGet(LFT) failed on switch "
				"'%s' %s Node GUID 0x%" PRIx64
				" SMA LID %d; MAD status 0x%x AM 0x%x\n",
				name.c_str(), portid2str(portid), node->guid,
				node->smalid, status, block);
		int i = block * (int)kLidsPerBlock;
		int end = i + (int)kLidsPerBlock;
		if (i < startl)
			i = startl;
		if (end > endl + 1)
			end = endl + 1;
		for (; i < end; i++) {
			unsigned outport = lft[i % kLidsPerBlock];
			bool valid = outport <= nports;
			if (!valid && !dump_all)
				continue;
			std::string info = lid_info(i, valid, fabric, range);
			printf("0x%04x %03u %s\n", i, outport & 0xff, info.c_str());
			shown++;
		}
	}
	printf("%d %slids dumped \n", shown, dump_all ? "" : "valid ");
}

void process_switch(ibnd_node_t *node, void *fabric)
{
	if (multicast)
		dump_multicast_tables(node, startlid, endlid, srcport);
	else
		dump_unicast_tables(node, (int)startlid, (int)endlid, srcport,
				    static_cast<ibnd_fabric_t *>(fabric));
}

} // namespace

int main(int argc, char *argv[])
{
	const char *map_file = nullptr;
	static const ibdiag::Option opts[] = {
		{"all", 'a', 0, nullptr, "show all lids, even invalid entries"},
		{"no_dests", 'n', 0, nullptr, "do not try to resolve destinations"},
		{"Multicast", 'M', 0, nullptr, "show multicast forwarding tables"},
		{"node-name-map", 1, 1, "<file>", "node name map file"},
	};
	int first = ibdiag::process_opts(
		argc, argv, "KGDLs", opts,
		[&](int ch, char *arg) {
			switch (ch) {
			case 'a': dump_all = true; return 0;
			case 'M': multicast = true; return 0;
			case 'n': brief = true; return 0;
			case 1: map_file = arg; return 0;
			default: return -1;
			}
		},
		"[<dest dr_path|lid|guid> [<startlid> [<endlid>]]]",
		{" -- Unicast examples:",
		 "-a\t# same, but dump all lids, even with invalid out ports",
		 "-n\t# simple dump format - no destination resolving",
		 "10\t# dump lids starting from 10",
		 "0x10 0x20\t# dump lid range",
		 " -- Multicast examples:",
		 "-M\t# dump all non empty mlids of switch with lid 4",
		 "-M 0xc010 0xc020\t# same, but with range",
		 "-M -n\t# simple dump format"});
	argc -= first;
	argv += first;
	auto &cfg = ibdiag::cfg;

	if (argc > 0)
		startlid = (unsigned)strtoul(argv[0], nullptr, 0);
	if (argc > 1)
		endlid = (unsigned)strtoul(argv[1], nullptr, 0);

	name_map = std::make_unique<ibdiag::NodeNameMap>(map_file);

	struct ibnd_config config{};
	if (cfg.timeout)
		config.timeout_ms = (unsigned)cfg.timeout;
	config.flags = cfg.ibnetdisc_flags;
	config.mkey = cfg.mkey;

	int rc = 0;
	ibnd_fabric_t *fabric = ibnd_discover_fabric(cfg.ca, cfg.ca_port,
						     nullptr, &config);
	if (fabric) {
		int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS};
		srcport = mad_rpc_open_port(cfg.ca, cfg.ca_port, classes, 3);
		if (!srcport) {
			fprintf(stderr, "Failed to open '%s' port '%d'\n", cfg.ca,
				cfg.ca_port);
			rc = -1;
		} else {
			smp_mkey_set(srcport, cfg.mkey);
			if (cfg.timeout)
				mad_rpc_set_timeout(srcport, cfg.timeout);
			ibnd_iter_nodes_type(fabric, process_switch, IB_NODE_SWITCH,
					     fabric);
			mad_rpc_close_port(srcport);
		}
	} else {
		fprintf(stderr, "Failed to discover fabric\n");
		rc = -1;
	}
	ibnd_destroy_fabric(fabric);
	return rc == 0 ? 0 : 255;
}
