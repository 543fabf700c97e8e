/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* libibnetdisc: InfiniBand subnet discovery over directed-route SMPs, the
 * discovered graph (nodes, ports, links, chassis) and its binary cache file.
 * Every structure below is shared with applications by address: its layout
 * is the ABI of libibnetdisc.so.5 and must not change. */

#ifndef _IBNETDISC_H_
#define _IBNETDISC_H_

#include <stdio.h>
#include <infiniband/mad.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ibnd_chassis;
struct ibnd_port;

#define CHASSIS_TYPE_SIZE 20

/* One node (CA, switch or router) of the fabric. */
typedef struct ibnd_node {
	struct ibnd_node *next;		/* list of every node of the fabric */

	ib_portid_t path_portid;	/* route from the start node; zero when
					 * the fabric came from a cache file */
	uint16_t smalid;		/* LID and LMC of the SMA (port 0 of a */
	uint8_t smalmc;			/* switch, the port itself on a CA) */

	int smaenhsp0;			/* SwitchInfo EnhancedPort0, decoded */
	uint8_t switchinfo[IB_SMP_DATA_SIZE];	/* raw SwitchInfo */

	uint64_t guid;			/* decoded from info[] for convenience */
	int type;
	int numports;
	uint8_t info[IB_SMP_DATA_SIZE];	/* raw NodeInfo */

	char nodedesc[IB_SMP_DATA_SIZE + 1];	/* NodeDescription, NUL ended */

	/* ports[n] is port n; entries may be NULL (a CA has no port 0) */
	struct ibnd_port **ports;

	/* chassis membership */
	struct ibnd_node *next_chassis_node;
	struct ibnd_chassis *chassis;
	unsigned char ch_type;
	char ch_type_str[CHASSIS_TYPE_SIZE];
	unsigned char ch_anafanum;
	unsigned char ch_slotnum;
	unsigned char ch_slot;

	/* library private */
	unsigned char ch_found;
	struct ibnd_node *htnext;
	struct ibnd_node *type_next;
} ibnd_node_t;

/* One port of a node. */
typedef struct ibnd_port {
	uint64_t guid;
	int portnum;
	int ext_portnum;		/* front-panel number, 0 if none */
	ibnd_node_t *node;		/* owner */
	struct ibnd_port *remoteport;	/* link peer, NULL if none */
	uint16_t base_lid;
	uint8_t lmc;
	uint8_t info[IB_SMP_DATA_SIZE];		/* raw PortInfo */
	uint8_t ext_info[IB_SMP_DATA_SIZE];	/* raw MLNX ExtendedPortInfo */

	/* library private */
	struct ibnd_port *htnext;
} ibnd_port_t;

/* A chassis: nodes sharing a system image GUID, or a Voltaire/Mellanox
 * chassis rebuilt from its internal wiring. */
typedef struct ibnd_chassis {
	struct ibnd_chassis *next;
	uint64_t chassisguid;
	unsigned char chassisnum;

	unsigned char nodecount;
	ibnd_node_t *nodes;

#define SPINES_MAX_NUM 18
#define LINES_MAX_NUM 36
	ibnd_node_t *spinenode[SPINES_MAX_NUM + 1];
	ibnd_node_t *linenode[LINES_MAX_NUM + 1];
} ibnd_chassis_t;

#define HTSZ 137

/* ibnd_config.flags */
#define IBND_CONFIG_MLX_EPI (1 << 0)	/* also read Mellanox ExtendedPortInfo */

/* Discovery knobs; zero fields take the library's defaults. */
typedef struct ibnd_config {
	unsigned max_smps;	/* SMPs kept in flight */
	unsigned show_progress;	/* print each node as it is found */
	unsigned max_hops;	/* 0: no limit */
	unsigned debug;
	unsigned timeout_ms;
	unsigned retries;
	uint32_t flags;
	uint64_t mkey;
	uint8_t pad[44];
} ibnd_config_t;

/* The discovered fabric. */
typedef struct ibnd_fabric {
	ibnd_node_t *from_node;		/* where discovery started */
	int from_portnum;

	ibnd_node_t *nodes;		/* every node, NULL ended */
	ibnd_chassis_t *chassis;	/* every chassis, NULL ended */
	unsigned maxhops_discovered;
	unsigned total_mads_used;

	/* library private */
	ibnd_node_t *nodestbl[HTSZ];
	ibnd_port_t *portstbl[HTSZ];
	ibnd_node_t *switches;
	ibnd_node_t *ch_adapters;
	ibnd_node_t *routers;
} ibnd_fabric_t;

/* Fabric life cycle.  ca_name/ca_port pick the local port (NULL/0: the
 * first active one); from, when given, is where the walk starts; config
 * may be NULL. */
ibnd_fabric_t *ibnd_discover_fabric(char *ca_name, int ca_port,
				    ib_portid_t *from,
				    struct ibnd_config *config);
void ibnd_destroy_fabric(ibnd_fabric_t *fabric);

ibnd_fabric_t *ibnd_load_fabric(const char *file, unsigned int flags);
int ibnd_cache_fabric(ibnd_fabric_t *fabric, const char *file,
		      unsigned int flags);

#define IBND_CACHE_FABRIC_FLAG_DEFAULT      0x0000
#define IBND_CACHE_FABRIC_FLAG_NO_OVERWRITE 0x0001

/* Nodes */
ibnd_node_t *ibnd_find_node_guid(ibnd_fabric_t *fabric, uint64_t guid);
ibnd_node_t *ibnd_find_node_dr(ibnd_fabric_t *fabric, char *dr_str);

typedef void (*ibnd_iter_node_func_t) (ibnd_node_t *node, void *user_data);
void ibnd_iter_nodes(ibnd_fabric_t *fabric, ibnd_iter_node_func_t func,
		     void *user_data);
void ibnd_iter_nodes_type(ibnd_fabric_t *fabric, ibnd_iter_node_func_t func,
			  int node_type, void *user_data);

/* Ports */
ibnd_port_t *ibnd_find_port_guid(ibnd_fabric_t *fabric, uint64_t guid);
ibnd_port_t *ibnd_find_port_dr(ibnd_fabric_t *fabric, char *dr_str);
ibnd_port_t *ibnd_find_port_lid(ibnd_fabric_t *fabric, uint16_t lid);

typedef void (*ibnd_iter_port_func_t) (ibnd_port_t *port, void *user_data);
void ibnd_iter_ports(ibnd_fabric_t *fabric, ibnd_iter_port_func_t func,
		     void *user_data);

/* Chassis */
uint64_t ibnd_get_chassis_guid(ibnd_fabric_t *fabric, unsigned char chassisnum);
const char *ibnd_get_chassis_type(ibnd_node_t *node);
char *ibnd_get_chassis_slot_str(ibnd_node_t *node, char *str, size_t size);

int ibnd_is_xsigo_guid(uint64_t guid);
int ibnd_is_xsigo_tca(uint64_t guid);
int ibnd_is_xsigo_hca(uint64_t guid);

/* Extended link speeds (IBNETDISC_1.1): LinkSpeedExt* of a PortInfo joined
 * with the LinkSpeedExt*2 fields, given the PortInfo holding the capability
 * masks (port 0 of a switch, the port itself otherwise). */
int ibnd_get_agg_linkspeedext_field(void *cap_info, void *info,
				    enum MAD_FIELDS efield,
				    enum MAD_FIELDS e2field);
int ibnd_get_agg_linkspeedext(void *cap_info, void *info);
int ibnd_get_agg_linkspeedexten(void *cap_info, void *info);
int ibnd_get_agg_linkspeedextsup(void *cap_info, void *info);

char *ibnd_dump_agg_linkspeedext_bits(char *buf, int bufsz, int speed);
char *ibnd_dump_agg_linkspeedext(char *buf, int bufsz, int speed);
char *ibnd_dump_agg_linkspeedexten(char *buf, int bufsz, int speed);
char *ibnd_dump_agg_linkspeedextsup(char *buf, int bufsz, int speed);

#ifdef __cplusplus
}
#endif

#endif /* _IBNETDISC_H_ */
