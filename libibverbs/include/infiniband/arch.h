/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Legacy 64-bit byte-order helpers kept only so old programs still build. */

#ifndef INFINIBAND_ARCH_H
#define INFINIBAND_ARCH_H

#include <stdint.h>
#include <endian.h>

#warning "This header is obsolete."

/* glibc's htobe64()/be64toh() are the real interface; these just forward. */
#ifndef ntohll
#undef htonll
#undef ntohll
static inline __attribute__((deprecated)) uint64_t htonll(uint64_t x)
{
	return htobe64(x);
}
static inline __attribute__((deprecated)) uint64_t ntohll(uint64_t x)
{
	return be64toh(x);
}
#define htonll htonll
#define ntohll ntohll
#endif

/* Memory barrier macros used to live here; libibverbs no longer offers them. */

#endif /* INFINIBAND_ARCH_H */
