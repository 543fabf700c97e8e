// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// ibroute: a switch's unicast (linear) or multicast forwarding table, with
// each destination LID resolved to the node behind it.
#include "ibdiag_common.h"

#include <arpa/inet.h>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace {

struct ibmad_port *srcport;
std::unique_ptr<ibdiag::NodeNameMap> name_map;
bool brief, dump_all, multicast;

constexpr unsigned kMlidsPerBlock = IB_SMP_DATA_SIZE / 2;
constexpr unsigned kLidsPerBlock = IB_SMP_DATA_SIZE;

unsigned round_up(unsigned v, unsigned to)
{
	return (v + to - 1) / to * to;
}

const char *check_switch(ib_portid_t *portid, unsigned *nports,
			 uint64_t *guid, uint8_t *sw, char *nd)
{
	uint8_t ni[IB_SMP_DATA_SIZE] = {};
	IBDIAG_DEBUG("checking node type");
	if (!smp_query_via(ni, portid, IB_ATTR_NODE_INFO, 0, 0, srcport)) {
		xdump(stderr, "nodeinfo\n", ni, sizeof(ni));
		return "node info failed: valid addr?";
	}
	if (!smp_query_via(nd, portid, IB_ATTR_NODE_DESC, 0, 0, srcport))
		return "node desc failed";
	int type = 0;
	mad_decode_field(ni, IB_NODE_TYPE_F, &type);
	if (type != IB_NODE_SWITCH)
		return "not a switch";
	IBDIAG_DEBUG("Gathering information about switch");
	mad_decode_field(ni, IB_NODE_NPORTS_F, nports);
	mad_decode_field(ni, IB_NODE_GUID_F, guid);
	if (!smp_query_via(sw, portid, IB_ATTR_SWITCH_INFO, 0, 0, srcport))
		return "switch info failed: is a switch node?";
	return nullptr;
}

// Port masks of one block of MLIDs, 16 ports per chunk.
uint16_t mft[16][kMlidsPerBlock];

uint16_t mft_mask(unsigned chunk, unsigned mlid)
{
	return ntohs(mft[chunk][mlid % kMlidsPerBlock]);
}

// The row of one MLID into `out`; empty when no port is set and not -a.
std::string mlid_row(unsigned mlid, unsigned nports)
{
	std::string row;
	bool any = false;
	if (brief) {
		unsigned chunks = round_up(nports + 1, 16) / 16;
		for (unsigned c = 0; c < chunks && c < 16; c++) {
			uint16_t mask = mft_mask(c, mlid);
			any |= mask != 0;
			char hex[8];
			snprintf(hex, sizeof(hex), "%04hx", mask);
			row += hex;
		}
	} else {
		for (unsigned p = 0; p <= nports && p / 16 < 16; p++) {
			uint16_t mask = mft_mask(p / 16, mlid);
			any |= mask != 0;
			row += (mask & (1u << (p % 16))) ? 'x' : ' ';
			row += ' ';
		}
	}
	if (!any && !dump_all)
		return {};
	return row;
}

const char *dump_multicast_tables(ib_portid_t *portid, unsigned startlid,
				  unsigned endlid)
{
	char nd[IB_SMP_DATA_SIZE] = {};
	uint8_t sw[IB_SMP_DATA_SIZE] = {};
	uint64_t nodeguid = 0;
	unsigned nports = 0;
	if (const char *err = check_switch(portid, &nports, &nodeguid, sw, nd))
		return err;

	unsigned cap = 0, top = 0;
	mad_decode_field(sw, IB_SW_MCAST_FDB_CAP_F, &cap);
	mad_decode_field(sw, IB_SW_MCAST_FDB_TOP_F, &top);
	if (!endlid || endlid > IB_MIN_MCAST_LID + cap - 1)
		endlid = IB_MIN_MCAST_LID + cap - 1;
	if (!dump_all && top && top < endlid) {
		if (top < IB_MIN_MCAST_LID - 1)
			IBWARN("illegal top mlid %x", top);
		else
			endlid = top;
	}
	if (!startlid) {
		startlid = IB_MIN_MCAST_LID;
	} else if (startlid < IB_MIN_MCAST_LID) {
		IBWARN("illegal start mlid %x, set to %x", startlid,
		       IB_MIN_MCAST_LID);
		startlid = IB_MIN_MCAST_LID;
	}
	if (endlid > IB_MAX_MCAST_LID) {
		IBWARN("illegal end mlid %x, truncate to %x", endlid,
		       IB_MAX_MCAST_LID);
		endlid = IB_MAX_MCAST_LID;
	}

	std::string name = name_map->remap(nodeguid, nd);
	printf("Multicast mlids [0x%x-0x%x] of switch %s guid 0x%016" PRIx64
	       " (%s):\n", startlid, endlid, portid2str(portid), nodeguid,
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
	for (unsigned block = startlid / kMlidsPerBlock;
	     block <= endlid / kMlidsPerBlock; block++) {
		for (unsigned c = 0; c < chunks; c++) {
			int status = 0;
			unsigned mod = (block - IB_MIN_MCAST_LID / kMlidsPerBlock) |
				       (c << 28);
			IBDIAG_DEBUG("reading block %x chunk %d mod %x", block, c, mod);
			if (!smp_query_status_via(mft[c], portid,
						  IB_ATTR_MULTICASTFORWTBL, mod, 0,
						  &status, srcport)) {
				fprintf(stderr, "SubnGet() failed"
					"; MAD status 0x%x AM 0x%x\n", status, mod);
				return nullptr;
			}
		}
		unsigned i = block * kMlidsPerBlock;
		unsigned end = i + kMlidsPerBlock;
		if (i < startlid)
			i = startlid;
		if (end > endlid + 1)
			end = endlid + 1;
		for (; i < end; i++) {
			std::string row = mlid_row(i, nports);
			if (row.empty())
				continue;
			printf("0x%04x      %s\n", i, row.c_str());
			shown++;
		}
	}
	printf("%d %smlids dumped \n", shown, dump_all ? "" : "valid ");
	return nullptr;
}

// What is behind `lid` (nothing in brief mode). LIDs of an LMC range after
// the first are described by their path number, as the reference does.
std::string lid_info(int lid, bool valid)
{
	static int last_port_lid, base_port_lid;
	static uint64_t portguid;
	char text[200];
	char guidstr[30];
	if (brief)
		return {};
	if (lid <= last_port_lid) {
		if (!valid)
			snprintf(text, sizeof(text), ": (path #%d - illegal port)",
				 lid - base_port_lid);
		else if (!portguid)
			snprintf(text, sizeof(text), ": (path #%d out of %d)",
				 lid - base_port_lid + 1,
				 last_port_lid - base_port_lid + 1);
		else
			snprintf(text, sizeof(text),
				 ": (path #%d out of %d: portguid %s)",
				 lid - base_port_lid + 1,
				 last_port_lid - base_port_lid + 1,
				 mad_dump_val(IB_NODE_PORT_GUID_F, guidstr,
					      sizeof(guidstr), &portguid));
		return text;
	}
	if (!valid)
		return ": (illegal port)";

	portguid = 0;
	ib_portid_t lidport{};
	lidport.lid = lid;
	char nd[IB_SMP_DATA_SIZE] = {};
	uint8_t pi[IB_SMP_DATA_SIZE] = {};
	uint8_t ni[IB_SMP_DATA_SIZE] = {};
	if (!smp_query_via(nd, &lidport, IB_ATTR_NODE_DESC, 0, 100, srcport) ||
	    !smp_query_via(pi, &lidport, IB_ATTR_PORT_INFO, 0, 100, srcport) ||
	    !smp_query_via(ni, &lidport, IB_ATTR_NODE_INFO, 0, 100, srcport))
		return ": (unknown node and type)";

	uint64_t nodeguid = 0;
	int type = 0, baselid = 0, lmc = 0;
	mad_decode_field(ni, IB_NODE_GUID_F, &nodeguid);
	mad_decode_field(ni, IB_NODE_PORT_GUID_F, &portguid);
	mad_decode_field(ni, IB_NODE_TYPE_F, &type);
	mad_decode_field(pi, IB_PORT_LID_F, &baselid);
	mad_decode_field(pi, IB_PORT_LMC_F, &lmc);
	if (lmc > 0) {
		base_port_lid = baselid;
		last_port_lid = baselid + (1 << lmc) - 1;
	}
	std::string name = name_map->remap(nodeguid, nd);
	char typestr[50];
	snprintf(text, sizeof(text), ": (%s portguid %s: '%s')",
		 mad_dump_val(IB_NODE_TYPE_F, typestr, sizeof(typestr), &type),
		 mad_dump_val(IB_NODE_PORT_GUID_F, guidstr, sizeof(guidstr),
			      &portguid),
		 name.c_str());
	return text;
}

const char *dump_unicast_tables(ib_portid_t *portid, int startlid, int endlid)
{
	char nd[IB_SMP_DATA_SIZE] = {};
	uint8_t sw[IB_SMP_DATA_SIZE] = {};
	uint8_t lft[IB_SMP_DATA_SIZE] = {};
	uint64_t nodeguid = 0;
	unsigned nports = 0;
	if (const char *err = check_switch(portid, &nports, &nodeguid, sw, nd))
		return err;

	int top = 0;
	mad_decode_field(sw, IB_SW_LINEAR_FDB_TOP_F, &top);
	if (!endlid || endlid > top)
		endlid = top;
	if (endlid > IB_MAX_UCAST_LID) {
		IBWARN("illegal lft top %d, truncate to %d", endlid,
		       IB_MAX_UCAST_LID);
		endlid = IB_MAX_UCAST_LID;
	}

	std::string name = name_map->remap(nodeguid, nd);
	printf("Unicast lids [0x%x-0x%x] of switch %s guid 0x%016" PRIx64
	       " (%s):\n", startlid, endlid, portid2str(portid), nodeguid,
	       name.c_str());
	IBDIAG_DEBUG("Switch top is 0x%x\n", top);
	printf("  Lid  Out   Destination\n");
	printf("       Port     Info \n");

	int shown = 0;
	int endblock = (int)(round_up((unsigned)endlid, kLidsPerBlock) / kLidsPerBlock);
	for (int block = startlid / (int)kLidsPerBlock; block < endblock; block++) {
		int status = 0;
		IBDIAG_DEBUG("reading block %d", block);
		if (!smp_query_status_via(lft, portid, IB_ATTR_LINEARFORWTBL,
					  (unsigned)block, 0, &status, srcport)) {
			fprintf(stderr, "SubnGet() failed"
				"; MAD status 0x%x AM 0x%x\n", status, block);
			return nullptr;
		}
		int i = block * (int)kLidsPerBlock;
		int end = i + (int)kLidsPerBlock;
		if (i < startlid)
			i = startlid;
		if (end > endlid + 1)
			end = endlid + 1;
		for (; i < end; i++) {
			unsigned outport = lft[i % kLidsPerBlock];
			bool valid = outport <= nports;
			if (!valid && !dump_all)
				continue;
			std::string info = lid_info(i, valid);
			printf("0x%04x %03u %s\n", i, outport & 0xff, info.c_str());
			shown++;
		}
	}
	printf("%d %slids dumped \n", shown, dump_all ? "" : "valid ");
	return nullptr;
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
		argc, argv, "K", opts,
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
		 "4\t# dump all lids with valid out ports of switch with lid 4",
		 "-a 4\t# same, but dump all lids, even with invalid out ports",
		 "-n 4\t# simple dump format - no destination resolving",
		 "4 10\t# dump lids starting from 10",
		 "4 0x10 0x20\t# dump lid range",
		 "-G 0x08f1040023\t# resolve switch by GUID",
		 "-D 0,1\t# resolve switch by direct path",
		 " -- Multicast examples:",
		 "-M 4\t# dump all non empty mlids of switch with lid 4",
		 "-M 4 0xc010 0xc020\t# same, but with range",
		 "-M -n 4\t# simple dump format"});
	argc -= first;
	argv += first;
	auto &cfg = ibdiag::cfg;

	if (!argc)
		ibdiag::show_usage();
	unsigned startlid = 0, endlid = 0;
	if (argc > 1)
		startlid = (unsigned)strtoul(argv[1], nullptr, 0);
	if (argc > 2)
		endlid = (unsigned)strtoul(argv[2], nullptr, 0);

	name_map = std::make_unique<ibdiag::NodeNameMap>(map_file);

	int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS};
	srcport = mad_rpc_open_port(cfg.ca, cfg.ca_port, classes, 3);
	if (!srcport)
		IBEXIT("Failed to open '%s' port '%d'", cfg.ca, cfg.ca_port);
	smp_mkey_set(srcport, cfg.mkey);

	ib_portid_t portid{};
	if (ibdiag::resolve_portid_str(cfg.ca, (uint8_t)cfg.ca_port, &portid,
				       argv[0], cfg.dest_type, cfg.sm_id,
				       srcport) < 0)
		IBEXIT("can't resolve destination port %s", argv[0]);

	const char *err = multicast
		? dump_multicast_tables(&portid, startlid, endlid)
		: dump_unicast_tables(&portid, (int)startlid, (int)endlid);
	if (err)
		IBEXIT("dump tables: %s", err);
	mad_rpc_close_port(srcport);
	return 0;
}
