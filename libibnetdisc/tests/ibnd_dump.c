/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* ibnd_dump: discover a fabric (or load a cache file) and print everything
 * libibnetdisc's API exposes, in a stable order, so that two libraries can
 * be compared by running this one binary on each (LD_LIBRARY_PATH).
 *
 *   ibnd_dump [-C ca] [-P port] [-f dr-path] [-H hops] [-s max_smps]
 *             [-e] [-p] [-l cache-in] [-w cache-out] [-n] [-m]
 *             [-T timeout_ms] [-R retries]
 *   -e  IBND_CONFIG_MLX_EPI     -p  show_progress
 *   -n  do not write the cache with NO_OVERWRITE check (default overwrite)
 *   -m  also print total_mads_used
 * Only IBNETDISC_1.0 entry points are used: Debian's rdma-core 44 library has
 * no others.
 * Exit: 0 printed, 1 discovery/load failed, 2 usage, 3 cache write failed. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/ibnetdisc.h>

static int cmp_node(const void* a, const void* b) {
    const ibnd_node_t *x = *(ibnd_node_t*const*)a, *y = *(ibnd_node_t*const*)b;
    return x->guid < y->guid ? -1 : x->guid > y->guid;
}

static void hex(const char* name, const uint8_t* p, size_t n) {
    printf("    %s ", name);
    for (size_t i = 0; i < n; i++)
        printf("%02x", p[i]);
    printf("\n");
}

static void drpath_str(const ib_portid_t* pid, char* buf, size_t sz) {
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i <= pid->drpath.cnt && i < 64 && n + 5 < sz; i++)
        n += snprintf(buf + n, sz - n, i ? ",%d" : "%d", pid->drpath.p[i]);
}

/* Whether every hop of a DR path exists from the start node: the
 * reference's ibnd_find_port_dr reads past the port array otherwise. */
static int dr_walkable(ibnd_fabric_t* f, const ib_portid_t* pid) {
    ibnd_node_t* cur = f->from_node;
    for (int i = 0; i <= pid->drpath.cnt && i < 64; i++) {
        int p = pid->drpath.p[i];
        if (!p)
            continue;
        if (!cur || p > cur->numports || !cur->ports[p] || !cur->ports[p]->remoteport)
            return 0;
        cur = cur->ports[p]->remoteport->node;
    }
    return 1;
}

static void print_node_list(const char* what, ibnd_node_t* n, int by_type) {
    printf("%s:", what);
    for (; n; n = by_type ? n->type_next : n->next)
        printf(" %016" PRIx64, n->guid);
    printf("\n");
}

static void count_cb(ibnd_node_t* n, void* u) {
    (void)n;
    (*(int*)u)++;
}

static void port_cb(ibnd_port_t* p, void* u) {
    (void)u;
    printf(" %016" PRIx64 ":%d", p->guid, p->portnum);
}

static void type_cb(ibnd_node_t* n, void* u) {
    (void)u;
    printf(" %016" PRIx64, n->guid);
}

static void dump(ibnd_fabric_t* f, int show_mads) {
    char buf[256];
    int count = 0;

    printf("from_node %016" PRIx64 " from_portnum %d maxhops %u\n", f->from_node ? f->from_node->guid : 0,
           f->from_portnum, f->maxhops_discovered);
    if (show_mads)
        printf("total_mads_used %u\n", f->total_mads_used);
    print_node_list("nodes", f->nodes, 0);
    print_node_list("switches", f->switches, 1);
    print_node_list("cas", f->ch_adapters, 1);
    print_node_list("routers", f->routers, 1);
    ibnd_iter_nodes(f, count_cb, &count);
    printf("iter_nodes count %d\n", count);
    for (int t = 0; t <= 4; t++) {
        printf("iter_nodes_type %d:", t);
        ibnd_iter_nodes_type(f, type_cb, t, NULL);
        printf("\n");
    }
    printf("iter_ports:");
    ibnd_iter_ports(f, port_cb, NULL);
    printf("\n");
    for (int i = 0; i < HTSZ; i++) {
        if (!f->nodestbl[i] && !f->portstbl[i])
            continue;
        printf("bucket %d:", i);
        for (ibnd_node_t* n = f->nodestbl[i]; n; n = n->htnext)
            printf(" n%016" PRIx64, n->guid);
        for (ibnd_port_t* p = f->portstbl[i]; p; p = p->htnext)
            printf(" p%016" PRIx64 ":%d", p->guid, p->portnum);
        printf("\n");
    }

    /* nodes by GUID */
    ibnd_node_t** v = calloc((size_t)count + 1, sizeof(*v));
    int nn = 0;
    for (ibnd_node_t* n = f->nodes; n; n = n->next)
        v[nn++] = n;
    qsort(v, (size_t)nn, sizeof(*v), cmp_node);
    unsigned maxlid = 0;
    for (int i = 0; i < nn; i++) {
        ibnd_node_t* n = v[i];
        char slot[64];
        const char* ct = ibnd_get_chassis_type(n);
        char* ss = ibnd_get_chassis_slot_str(n, slot, sizeof(slot));
        drpath_str(&n->path_portid, buf, sizeof(buf));
        printf("node %016" PRIx64 " type %d ports %d smalid %u smalmc %u enhsp0 %d desc \"%s\"\n", n->guid, n->type,
               n->numports, n->smalid, n->smalmc, n->smaenhsp0, n->nodedesc);
        printf("    path lid %d drpath %s drslid %u drdlid %u\n", n->path_portid.lid, buf, n->path_portid.drpath.drslid,
               n->path_portid.drpath.drdlid);
        printf("    chassis %d ch_type %u ch_type_str \"%s\" anafa %u slotnum %u slot %u found %u type %s slot %s\n",
               n->chassis ? n->chassis->chassisnum : -1, n->ch_type, n->ch_type_str, n->ch_anafanum, n->ch_slotnum,
               n->ch_slot, n->ch_found, ct ? ct : "(null)", ss ? ss : "(null)");
        hex("info", n->info, sizeof(n->info));
        hex("switchinfo", n->switchinfo, sizeof(n->switchinfo));
        printf("    find_node_guid %s\n", ibnd_find_node_guid(f, n->guid) == n ? "self" : "other");
        if (f->nodes && n->path_portid.drpath.cnt >= 0 && n->path_portid.lid == 0 && buf[0] &&
            dr_walkable(f, &n->path_portid)) {
            /* the reference's find_node_dr dereferences a NULL port: ask
			 * for the port first */
            ibnd_port_t* dp = ibnd_find_port_dr(f, buf);
            ibnd_node_t* dn = dp ? ibnd_find_node_dr(f, buf) : NULL;
            printf("    find_dr %s %016" PRIx64 ":%d %016" PRIx64 "\n", buf, dp ? dp->guid : 0, dp ? dp->portnum : -1,
                   dn ? dn->guid : 0);
        }
        for (int p = 0; p <= n->numports; p++) {
            ibnd_port_t* pt = n->ports ? n->ports[p] : NULL;
            if (!pt)
                continue;
            printf("  port %d guid %016" PRIx64 " ext %d lid %u lmc %u owner %s", pt->portnum, pt->guid,
                   pt->ext_portnum, pt->base_lid, pt->lmc, pt->node == n ? "ok" : "BAD");
            if (pt->remoteport)
                printf(" -> %016" PRIx64 ":%d (%016" PRIx64 ")", pt->remoteport->guid, pt->remoteport->portnum,
                       pt->remoteport->node->guid);
            printf("\n");
            hex("info", pt->info, sizeof(pt->info));
            hex("ext_info", pt->ext_info, sizeof(pt->ext_info));
            ibnd_port_t* fp = ibnd_find_port_guid(f, pt->guid);
            printf("    find_port_guid %016" PRIx64 ":%d\n", fp ? fp->guid : 0, fp ? fp->portnum : -1);
            unsigned top = (unsigned)pt->base_lid + (1u << pt->lmc);
            if (top > maxlid)
                maxlid = top;
        }
    }
    free(v);
    printf("lids:");
    for (unsigned lid = 0; lid <= maxlid + 1 && lid < 0xc000; lid++) {
        ibnd_port_t* p = ibnd_find_port_lid(f, (uint16_t)lid);
        if (p)
            printf(" %u=%016" PRIx64 ":%d", lid, p->guid, p->portnum);
    }
    printf("\n");
    for (ibnd_chassis_t* c = f->chassis; c; c = c->next) {
        printf("chassis %u guid %016" PRIx64 " nodecount %u nodes:", c->chassisnum, c->chassisguid, c->nodecount);
        for (ibnd_node_t* n = c->nodes; n; n = n->next_chassis_node)
            printf(" %016" PRIx64, n->guid);
        printf(" spines:");
        for (int i = 0; i <= SPINES_MAX_NUM; i++)
            if (c->spinenode[i])
                printf(" %d=%016" PRIx64, i, c->spinenode[i]->guid);
        printf(" lines:");
        for (int i = 0; i <= LINES_MAX_NUM; i++)
            if (c->linenode[i])
                printf(" %d=%016" PRIx64, i, c->linenode[i]->guid);
        printf("\n");
    }
    for (int i = 0; i < 8; i++)
        printf("chassis_guid(%d) %016" PRIx64 "\n", i, ibnd_get_chassis_guid(f, (unsigned char)i));
    printf("find_node_guid bogus %s\n", ibnd_find_node_guid(f, 0xdeadbeefULL) ? "found" : "none");
}

int main(int argc, char** argv) {
    char *ca = NULL, *from = NULL, *load = NULL, *out = NULL;
    int port = 0, opt, show_mads = 0;
    unsigned cache_flags = IBND_CACHE_FABRIC_FLAG_DEFAULT;
    struct ibnd_config cfg;
    memset(&cfg, 0, sizeof(cfg));

    while ((opt = getopt(argc, argv, "C:P:f:H:s:epl:w:nmT:R:")) != -1) {
        switch (opt) {
        case 'C': ca = optarg; break;
        case 'P': port = atoi(optarg); break;
        case 'f': from = optarg; break;
        case 'H': cfg.max_hops = (unsigned)atoi(optarg); break;
        case 's': cfg.max_smps = (unsigned)atoi(optarg); break;
        case 'e': cfg.flags |= IBND_CONFIG_MLX_EPI; break;
        case 'p': cfg.show_progress = 1; break;
        case 'l': load = optarg; break;
        case 'w': out = optarg; break;
        case 'n': cache_flags = IBND_CACHE_FABRIC_FLAG_NO_OVERWRITE; break;
        case 'm': show_mads = 1; break;
        case 'T': cfg.timeout_ms = (unsigned)atoi(optarg); break;
        case 'R': cfg.retries = (unsigned)atoi(optarg); break;
        default: return 2;
        }
    }

    ibnd_fabric_t* f;
    if (load) {
        f = ibnd_load_fabric(load, 0);
    } else {
        ib_portid_t pid, *pp = NULL;
        if (from) {
            memset(&pid, 0, sizeof(pid));
            if (str2drpath(&pid.drpath, from, 0, 0) < 0)
                return 2;
            pp = &pid;
        }
        f = ibnd_discover_fabric(ca, port, pp, &cfg);
    }
    if (!f) {
        printf("no fabric\n");
        return 1;
    }
    dump(f, show_mads);
    int rc = 0;
    if (out && ibnd_cache_fabric(f, out, cache_flags) != 0) {
        printf("cache write failed\n");
        rc = 3;
    }
    ibnd_destroy_fabric(f);
    return rc;
}
