/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* LD_PRELOAD shim for the fabric benchmarks: counts umad_send() calls (the
 * MADs a program sends) and reports the total when the process exits:
 * appended as a line to $MAD_COUNT_FILE when that is set, else printed on
 * stderr as "mads_sent N". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long sends;
typedef int (*send_fn)(int, int, void*, int, int, int);

int umad_send(int fd, int agentid, void* umad, int length, int timeout_ms, int retries) {
    static send_fn next;
    if (!next)
        next = (send_fn)dlsym(RTLD_NEXT, "umad_send");
    __atomic_add_fetch(&sends, 1, __ATOMIC_RELAXED);
    return next(fd, agentid, umad, length, timeout_ms, retries);
}

__attribute__((destructor)) static void report(void) {
    const char* file = getenv("MAD_COUNT_FILE");
    FILE* f = file ? fopen(file, "a") : NULL;
    if (f) {
        fprintf(f, "%lu\n", sends);
        fclose(f);
    } else {
        fprintf(stderr, "mads_sent %lu\n", sends);
    }
}
