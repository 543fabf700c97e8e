/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* LD_PRELOAD shim: counts umad_send calls (MADs sent) and prints the count
 * on stderr at exit as "mads_sent N". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long sent;

int umad_send(int fd, int agentid, void *umad, int length, int timeout_ms, int retries)
{
	static int (*real)(int, int, void *, int, int, int);
	if (!real)
		real = (int (*)(int, int, void *, int, int, int))dlsym(RTLD_NEXT, "umad_send");
	sent++;
	return real(fd, agentid, umad, length, timeout_ms, retries);
}

__attribute__((destructor)) static void report(void)
{
	fprintf(stderr, "mads_sent %lu\n", sent);
}
