/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Wire headers used by tag matching (TM) SRQs: TMH and RVH. */

#ifndef _TM_TYPES_H
#define _TM_TYPES_H

#include <linux/types.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Values carried in ibv_tmh.opcode. */
enum ibv_tmh_op {
	IBV_TMH_NO_TAG = 0,
	IBV_TMH_RNDV = 1,
	IBV_TMH_FIN = 2,
	IBV_TMH_EAGER = 3,
};

/* Tag matching header, big endian on the wire. */
struct ibv_tmh {
	uint8_t opcode;
	uint8_t reserved[3];	/* zero */
	__be32 app_ctx;
	__be64 tag;
};

/* Rendezvous header: where the sender's data can be read from. */
struct ibv_rvh {
	__be64 va;
	__be32 rkey;
	__be32 len;
};

#ifdef __cplusplus
}
#endif

#endif /* _TM_TYPES_H */
