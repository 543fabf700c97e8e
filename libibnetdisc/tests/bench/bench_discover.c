/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* bench_discover ROUNDS [MAX_SMPS]: discovers the fabric ROUNDS times in one
 * process and prints the fastest and median wall time of
 * ibnd_discover_fabric, the client's CPU time per discovery and
 * total_mads_used.  Runs on either library (IBNETDISC_1.0 only). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <infiniband/ibnetdisc.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static int cmp(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    struct ibnd_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    if (argc > 2)
        cfg.max_smps = (unsigned)atoi(argv[2]);
    if (rounds < 1 || rounds > 1000)
        return 2;
    double* t = calloc((size_t)rounds, sizeof(*t));
    unsigned mads = 0;
    double c0 = cpu();
    for (int i = 0; i < rounds; i++) {
        double t0 = now();
        ibnd_fabric_t* f = ibnd_discover_fabric(NULL, 0, NULL, &cfg);
        t[i] = now() - t0;
        if (!f)
            return 1;
        mads = f->total_mads_used;
        ibnd_destroy_fabric(f);
    }
    double c = (cpu() - c0) / rounds;
    qsort(t, (size_t)rounds, sizeof(*t), cmp);
    printf("min %.1f ms  median %.1f ms  cpu %.1f ms  mads %u\n", t[0] * 1e3, t[rounds / 2] * 1e3, c * 1e3, mads);
    return 0;
}
