/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/* Envelope of the uverbs ioctl command: one header followed by attributes. */
#ifndef KH_RDMA_USER_IOCTL_CMDS_H
#define KH_RDMA_USER_IOCTL_CMDS_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* Shared by the verbs ioctl and the MAD / hfi1 ioctls. */
#define RDMA_IOCTL_MAGIC 0x1b
#define RDMA_VERBS_IOCTL _IOWR(RDMA_IOCTL_MAGIC, 1, struct ib_uverbs_ioctl_hdr)

enum {
	UVERBS_ATTR_F_MANDATORY = 1U << 0,
	UVERBS_ATTR_F_VALID_OUTPUT = 1U << 1,
};

struct ib_uverbs_attr {
	__u16 attr_id;
	__u16 len;		/* bytes pointed to by data, or inline */
	__u16 flags;		/* UVERBS_ATTR_F_* */
	union {
		struct {
			__u8 elem_id;
			__u8 reserved;
		} enum_data;
		__u16 reserved;
	} attr_data;
	union {
		/* Inline value when len <= 8, else a user pointer. */
		__aligned_u64 data;
		__s64 data_s64;
	};
};

struct ib_uverbs_ioctl_hdr {
	__u16 length;		/* whole buffer, header included */
	__u16 object_id;
	__u16 method_id;
	__u16 num_attrs;
	__aligned_u64 reserved1;
	__u32 driver_id;
	__u32 reserved2;
	struct ib_uverbs_attr attrs[];
};

#endif
