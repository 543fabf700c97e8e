/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * rdma-core-cxx: native InfiniBand addressing (AF_IB) for the RDMA CM.
 * Layout-identical to librdmacm's <infiniband/ib.h>; written for this
 * project.
 */
#ifndef _RDMA_IB_H
#define _RDMA_IB_H

#include <linux/types.h>
#include <endian.h>
#include <string.h>

/* Address family numbers the kernel assigned to native IB. */
#ifndef AF_IB
#define AF_IB 27
#endif
#ifndef PF_IB
#define PF_IB AF_IB
#endif

/* A 128-bit GID viewed as bytes, halfwords, words or two quadwords. */
struct ib_addr {
	union {
		__u8	uib_addr8[16];
		__be16	uib_addr16[8];
		__be32	uib_addr32[4];
		__be64	uib_addr64[2];
	} ib_u;
#define sib_addr8		ib_u.uib_addr8
#define sib_addr16		ib_u.uib_addr16
#define sib_addr32		ib_u.uib_addr32
#define sib_addr64		ib_u.uib_addr64
#define sib_raw			ib_u.uib_addr8
#define sib_subnet_prefix	ib_u.uib_addr64[0]
#define sib_interface_id	ib_u.uib_addr64[1]
};

/* Nonzero when every bit of the GID is clear. */
static inline int ib_addr_any(const struct ib_addr *a)
{
	return (a->sib_addr64[0] | a->sib_addr64[1]) == 0;
}

/* Nonzero for ::1, the loopback GID. */
static inline int ib_addr_loopback(const struct ib_addr *a)
{
	return (a->sib_addr32[0] | a->sib_addr32[1] | a->sib_addr32[2] |
		(a->sib_addr32[3] ^ htobe32(1))) == 0;
}

static inline void ib_addr_set(struct ib_addr *addr, __be32 w1, __be32 w2,
			       __be32 w3, __be32 w4)
{
	addr->sib_addr32[0] = w1;
	addr->sib_addr32[1] = w2;
	addr->sib_addr32[2] = w3;
	addr->sib_addr32[3] = w4;
}

static inline int ib_addr_cmp(const struct ib_addr *a1,
			      const struct ib_addr *a2)
{
	return memcmp(a1, a2, sizeof(struct ib_addr));
}

/* sockaddr for AF_IB: pkey, GID and service id (with mask). */
struct sockaddr_ib {
	unsigned short int	sib_family;
	__be16			sib_pkey;
	__be32			sib_flowinfo;
	struct ib_addr		sib_addr;
	__be64			sib_sid;
	__be64			sib_sid_mask;
	__u64			sib_scope_id;
};

#endif /* _RDMA_IB_H */
