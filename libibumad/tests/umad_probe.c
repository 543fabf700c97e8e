/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * umad_probe: exercises libibumad's public API and prints every result in a
 * fixed order, so one binary run on our library and on the reference
 * (LD_LIBRARY_PATH decides which is loaded) must print the same.
 *
 *   umad_probe sysfs   the CA/port view, device lists, port resolution,
 *                      open errors (works on any sysfs tree)
 *   umad_probe MODE-debug  the same with umad_debug(1): the traces on
 *                      stderr must match the reference's too
 *   umad_probe mad     on a simulated fabric: agents, a directed-route
 *                      NodeInfo to the local node, a MAD to a path that does
 *                      not exist (must time out, bounded), recv errors
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/umad.h>
#include <infiniband/umad_types.h>
#include <infiniband/umad_sm.h>

static void print_port(const umad_port_t* p) {
    printf("  port %s:%d lid %u lmc %u sm_lid %u sm_sl %u state %u phys %u rate %u cap 0x%08x "
           "prefix 0x%016llx guid 0x%016llx ll %s pkeys %u",
           p->ca_name, p->portnum, p->base_lid, p->lmc, p->sm_lid, p->sm_sl, p->state, p->phys_state, p->rate,
           be32toh(p->capmask), (unsigned long long)be64toh(p->gid_prefix), (unsigned long long)be64toh(p->port_guid),
           p->link_layer, p->pkeys_size);
    for (unsigned i = 0; i < p->pkeys_size && i < 4; i++)
        printf(" %04x", p->pkeys[i]);
    printf("\n");
}

static void print_ca(const char* name) {
    umad_ca_t ca;
    int r = umad_get_ca(name, &ca);
    printf("get_ca(%s) = %d\n", name ? name : "NULL", r);
    if (r < 0)
        return;
    printf(" ca %s type %u numports %d fw '%s' ca_type '%s' hw '%s' node 0x%016llx sys 0x%016llx\n", ca.ca_name,
           ca.node_type, ca.numports, ca.fw_ver, ca.ca_type, ca.hw_ver, (unsigned long long)be64toh(ca.node_guid),
           (unsigned long long)be64toh(ca.system_guid));
    for (int i = 0; i < UMAD_CA_MAX_PORTS; i++)
        if (ca.ports[i])
            print_port(ca.ports[i]);
    umad_release_ca(&ca);
}

static void probe_sysfs(void) {
    char names[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN];
    printf("init = %d\n", umad_init());
    int n = umad_get_cas_names(names, UMAD_MAX_DEVICES);
    printf("cas_names = %d\n", n);
    for (int i = 0; i < n; i++)
        printf(" %s\n", names[i]);
    printf("cas_names(max 1) = %d\n", umad_get_cas_names(names, 1));

    struct umad_device_node* list = umad_get_ca_device_list();
    int count = 0;
    for (struct umad_device_node* d = list; d; d = d->next)
        count++;
    printf("device_list count %d sort = %d:", count, umad_sort_ca_device_list(&list, 0));
    for (struct umad_device_node* d = list; d; d = d->next)
        printf(" %s", d->ca_name);
    printf("\n");
    umad_free_ca_device_list(list);

    print_ca(NULL);
    for (int i = 0; i < n; i++) {
        print_ca(names[i]);
        __be64 guids[UMAD_CA_MAX_PORTS + 1];
        int g = umad_get_ca_portguids(names[i], guids, UMAD_CA_MAX_PORTS + 1);
        printf(" portguids = %d:", g);
        for (int j = 0; j < g; j++)
            printf(" 0x%llx", (unsigned long long)be64toh(guids[j]));
        printf("\n");
        printf(" portguids(max 0) = %d\n", umad_get_ca_portguids(names[i], guids, 0));
        for (int port = 0; port <= 3; port++) {
            umad_port_t p;
            int r = umad_get_port(names[i], port, &p);
            printf(" get_port(%s, %d) = %d\n", names[i], port, r);
            if (r >= 0) {
                print_port(&p);
                umad_release_port(&p);
            }
            char path[64] = "";
            r = umad_get_issm_path(names[i], port, path, sizeof(path));
            printf(" issm(%s, %d) = %d %s\n", names[i], port, r, r < 0 ? "" : path);
        }
    }
    print_ca("no_such_ca");
    umad_port_t p;
    printf("get_port(NULL, 0) = %d\n", umad_get_port(NULL, 0, &p) >= 0 ? (umad_release_port(&p), 0) : -1);
    printf("get_port(no_such_ca, 1) = %d\n", umad_get_port("no_such_ca", 1, &p));
    int fd = umad_open_port("no_such_ca", 1);
    printf("open_port(no_such_ca, 1) = %d\n", fd < 0 ? fd : 0);
    if (fd >= 0)
        umad_close_port(fd);
    if (n > 0) {
        fd = umad_open_port(names[0], 7);
        printf("open_port(%s, 7) = %d\n", names[0], fd < 0 ? fd : 0);
        if (fd >= 0)
            umad_close_port(fd);
    }
    printf("debug(-1) = %d debug(0) = %d\n", umad_debug(-1), umad_debug(0));
    printf("done = %d\n", umad_done());
}

static long elapsed_ms(const struct timespec* t0) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (t1.tv_sec - t0->tv_sec) * 1000 + (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

/* A directed-route Get(NodeInfo) along `path` (hop count = len). */
static void build_dr_nodeinfo(void* umad, const uint8_t* path, int len, uint64_t tid) {
    memset(umad, 0, umad_size() + 256);
    struct umad_smp* smp = umad_get_mad(umad);
    smp->base_version = 1;
    smp->mgmt_class = UMAD_CLASS_SUBN_DIRECTED_ROUTE;
    smp->class_version = 1;
    smp->method = UMAD_METHOD_GET;
    smp->hop_cnt = (uint8_t)len;
    smp->tid = htobe64(tid);
    smp->attr_id = htobe16(UMAD_SM_ATTR_NODE_INFO);
    smp->dr_slid = htobe16(0xffff);
    smp->dr_dlid = htobe16(0xffff);
    for (int i = 0; i < len; i++)
        smp->initial_path[i + 1] = path[i];
    umad_set_addr(umad, 0xffff, 0, 0, 0);
}

static int probe_mad(void) {
    char scratch[128];
    printf("before open: size %zu mad offset %td\n", umad_size(), (char*)umad_get_mad(scratch) - scratch);
    int fd = umad_open_port(NULL, 0);
    printf("after open: size %zu mad offset %td\n", umad_size(), (char*)umad_get_mad(scratch) - scratch);
    printf("open_port(NULL, 0) = %s\n", fd >= 0 ? "fd" : "error");
    if (fd < 0)
        return 1;
    printf("get_fd = %s\n", umad_get_fd(fd) == fd ? "same" : "other");
    long mask[16 / sizeof(long)] = {0};
    int smi = umad_register(fd, UMAD_CLASS_SUBN_DIRECTED_ROUTE, 1, 0, mask);
    printf("register(DR) >= 0: %d\n", smi >= 0);
    uint8_t oui[3] = {0x00, 0x14, 0x05};
    printf("register_oui(class 0x09) = %d\n", umad_register_oui(fd, 0x09, 0, oui, NULL));
    int vend = umad_register_oui(fd, 0x30, 0, oui, NULL);
    printf("register_oui(class 0x30) >= 0: %d\n", vend >= 0);
    struct umad_reg_attr attr = {.mgmt_class = 0x31, .mgmt_class_version = 1, .oui = 0x01001405};
    uint32_t agent2 = 0;
    printf("register2(bad oui) = %d\n", umad_register2(fd, &attr, &agent2));
    printf("register2(NULL) = %d\n", umad_register2(fd, NULL, &agent2));

    size_t bufsize = umad_size() + 256;
    void* umad = calloc(1, bufsize);
    if (!umad)
        return 1;
    build_dr_nodeinfo(umad, NULL, 0, 0x1234567811);
    printf("send(self) = %d\n", umad_send(fd, smi, umad, 256, 500, 3));
    int len = 256;
    memset(umad, 0, bufsize);
    int agent = umad_recv(fd, umad, &len, 2000);
    printf("recv = %s len %d status %d\n", agent == smi ? "agent" : "other", len, umad_status(umad));
    struct umad_smp* smp = umad_get_mad(umad);
    printf(" method 0x%x attr 0x%x tid 0x%llx node_type %u nports %u\n", smp->method, be16toh(smp->attr_id),
           (unsigned long long)be64toh(smp->tid), smp->data[1], smp->data[2]);
    ib_mad_addr_t* addr = umad_get_mad_addr(umad);
    printf(" addr lid 0x%x qpn %u\n", be16toh(addr->lid), be32toh(addr->qpn));

    /* A path through a port that does not exist: nobody answers; the
	 * library must give up by itself (the simulator never times out). */
    uint8_t path[2] = {7, 7};
    build_dr_nodeinfo(umad, path, 2, 0x99);
    printf("send(nowhere) = %d\n", umad_send(fd, smi, umad, 256, 100, 0));
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    len = 256;
    int r = umad_recv(fd, umad, &len, 300);
    long ms = elapsed_ms(&t0);
    printf("recv(nowhere) = %d errno %d bounded %d\n", r < 0 ? r : 0, errno, ms < 5000);
    printf("poll(empty, 10) = %d\n", umad_poll(fd, 10));
    len = 256;
    printf("recv(nonblocking) = %d\n", umad_recv(fd, umad, &len, 0));
    printf("recv(NULL len) = %d\n", umad_recv(fd, umad, NULL, 0));

    umad_set_addr(umad, 0x1234, 1, 3, 0x80010000);
    addr = umad_get_mad_addr(umad);
    printf("set_addr lid 0x%x qpn %u sl %u qkey 0x%x\n", be16toh(addr->lid), be32toh(addr->qpn), addr->sl,
           be32toh(addr->qkey));
    umad_set_pkey(umad, 5);
    printf("pkey = %d\n", umad_get_pkey(umad));
    ib_mad_addr_t grh = {0};
    grh.flow_label = 0x12345;
    grh.hop_limit = 9;
    grh.gid[15] = 1;
    umad_set_grh(umad, &grh);
    printf("grh %d flow 0x%x hop %u gid15 %u\n", addr->grh_present, be32toh(addr->flow_label), addr->hop_limit,
           addr->gid[15]);
    umad_set_grh(umad, NULL);
    printf("grh off %d\n", addr->grh_present);
    fflush(stdout);
    umad_dump(umad); /* stderr */

    printf("unregister = %d\n", umad_unregister(fd, smi));
    if (vend >= 0)
        printf("unregister(vendor) = %d\n", umad_unregister(fd, vend));
    printf("close = %d\n", umad_close_port(fd));
    free(umad);
    return 0;
}

int main(int argc, char** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* "...-debug": the same with the library's traces on (stderr). */
    const char* mode = argc > 1 ? argv[1] : "sysfs";
    if (strstr(mode, "-debug"))
        umad_debug(1);
    if (!strncmp(mode, "mad", 3))
        return probe_mad();
    probe_sysfs();
    return 0;
}
