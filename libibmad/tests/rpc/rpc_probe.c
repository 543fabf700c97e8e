/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rpc_probe: calls libibmad's RPC API on a simulated fabric and prints what
 * comes back. The same binary runs once on our libibmad and once on
 * Debian's (LD_PRELOAD of /usr/lib/.../libibmad.so.5); rpc_compare.sh
 * diffs the two outputs.
 *
 *   rpc_probe smp      SMPs by directed route, status, errors, timeouts
 *   rpc_probe sm       needs opensm: LID routes, resolvers, SA, PMA, vendor
 *   rpc_probe legacy   needs opensm: the deprecated default-port calls
 *   rpc_probe pair     ours only: mad_rpc_open_port2 / close_port2
 */
#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct ibmad_port* port;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void hex(const char* what, const void* p, int n) {
    const uint8_t* b = p;
    printf("%s:", what);
    for (int i = 0; i < n; i++)
        printf("%s%02x", i % 32 ? "" : "\n  ", b[i]);
    printf("\n");
}

/* madrpc_save_mad(): the next request sent is copied here; shown with the
 * random transaction id masked, so both libraries' requests can be compared
 * byte for byte */
static uint8_t captured[IB_MAD_SIZE];

static void capture_next(void) {
    memset(captured, 0xee, sizeof(captured));
    madrpc_save_mad(captured, sizeof(captured));
}

static void show_capture(const char* what) {
    memset(captured + 8, 0, 8);
    hex(what, captured, IB_MAD_SIZE);
}

static void show_portid(const char* what, int rc, ib_portid_t* id) {
    printf("%s: rc %d", what, rc);
    if (rc >= 0)
        printf(" -> %s qp %u qkey 0x%x sl %u", portid2str(id), id->qp, id->qkey, id->sl);
    printf("\n");
}

static void smp_dr(const char* path, unsigned attr, unsigned mod) {
    ib_portid_t id = {0};
    uint8_t buf[IB_SMP_DATA_SIZE] = {0};
    int status = -1;
    char p[128];

    snprintf(p, sizeof(p), "%s", path);
    int rc = str2drpath(&id.drpath, p, 0, 0);
    uint8_t* r = smp_query_status_via(buf, &id, attr, mod, 0, &status, port);
    printf("smp DR '%s' attr 0x%x mod %u: str2drpath %d -> %s status 0x%x\n", path, attr, mod, rc, r ? "ok" : "fail",
           status);
    if (r)
        hex("  data", buf, IB_SMP_DATA_SIZE);
}

static void smp_lid(int lid, unsigned attr, unsigned mod, int timeout) {
    ib_portid_t id = {0};
    uint8_t buf[IB_SMP_DATA_SIZE] = {0};
    int status = -1;
    ib_portid_set(&id, lid, 0, 0);
    double t0 = now_s();
    uint8_t* r = smp_query_status_via(buf, &id, attr, mod, timeout, &status, port);
    double dt = now_s() - t0;
    printf("smp LID %d attr 0x%x mod %u: %s status 0x%x%s\n", lid, attr, mod, r ? "ok" : "fail", status,
           dt < 30.0 ? "" : " (took too long)");
    if (r)
        hex("  data", buf, IB_SMP_DATA_SIZE);
}

static void resolve(const char* s, enum MAD_DEST type, ib_portid_t* sm) {
    ib_portid_t id;
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", s);
    memset(&id, 0x55, sizeof(id));
    errno = 0;
    int rc = ib_resolve_portid_str_via(&id, buf, type, sm, port);
    int err = errno;
    char what[200];
    snprintf(what, sizeof(what), "resolve type %d '%s' errno %d", type, s, rc < 0 ? err : 0);
    show_portid(what, rc, &id);
}

static int run_smp(void) {
    ib_portid_t self = {0};
    int portnum = -1;
    ibmad_gid_t gid;

    int rc = ib_resolve_self_via(&self, &portnum, &gid, port);
    printf("resolve_self: rc %d lid %d port %d\n", rc, self.lid, portnum);
    hex("  gid", gid, 16);

    smp_dr("0", IB_ATTR_NODE_INFO, 0);
    smp_dr("0", IB_ATTR_PORT_INFO, 0);
    smp_dr("0,1", IB_ATTR_NODE_INFO, 0);
    smp_dr("0,1", IB_ATTR_NODE_DESC, 0);
    smp_dr("0,1,2", IB_ATTR_NODE_INFO, 0);
    smp_dr("0,1,2", IB_ATTR_PORT_INFO, 3);
    smp_dr("0,1,9", IB_ATTR_NODE_INFO, 0); /* no such port */
    smp_dr("0,1,1,1,1,1,1,1", IB_ATTR_NODE_INFO, 0);
    smp_dr("0,1", 0x99, 0); /* unknown attribute */
    smp_dr("0,1", IB_ATTR_PORT_INFO, 99); /* bad port */
    smp_dr(",", IB_ATTR_NODE_INFO, 0);
    smp_dr("0,1,", IB_ATTR_NODE_INFO, 0);

    /* errors shown: the RPC layer explains its failures */
    madrpc_show_errors(1);
    smp_dr("0,1,9", IB_ATTR_NODE_INFO, 0);
    smp_dr("0,1", 0x99, 0);
    madrpc_show_errors(0);

    /* before the SM runs every LID is 0: LID routes go nowhere */
    smp_lid(1, IB_ATTR_NODE_INFO, 0, 200);

    ib_portid_t sm;
    rc = ib_resolve_smlid_via(&sm, 0, port);
    printf("resolve_smlid: rc %d errno %s\n", rc, rc < 0 ? strerror(errno) : "-");

    resolve("0,1", IB_DEST_DRPATH, NULL);
    resolve("", IB_DEST_DRPATH, NULL);
    resolve("0", IB_DEST_DRPATH, NULL);
    resolve("1", IB_DEST_LID, NULL);
    resolve("0x10", IB_DEST_LID, NULL);
    resolve("0", IB_DEST_LID, NULL);
    resolve("49151", IB_DEST_LID, NULL);
    resolve("49152", IB_DEST_LID, NULL);
    resolve("-3", IB_DEST_LID, NULL);
    resolve("abc", IB_DEST_LID, NULL);
    resolve("0", IB_DEST_GUID, NULL);
    resolve("nonsense", IB_DEST_GUID, NULL);
    resolve("::", IB_DEST_GID, NULL);
    resolve("not-a-gid", IB_DEST_GID, NULL);
    resolve("1", (enum MAD_DEST)17, NULL);

    printf("timeout %d/%d retries %d\n", mad_get_timeout(port, 0), mad_get_timeout(port, 77), mad_get_retries(port));
    mad_rpc_set_timeout(port, 300);
    mad_rpc_set_retries(port, 2);
    printf("timeout %d/%d retries %d\n", mad_get_timeout(port, 0), mad_get_timeout(port, 77), mad_get_retries(port));
    printf("madrpc_set_retries(0) %d madrpc_set_retries(4) %d\n", madrpc_set_retries(0), madrpc_set_retries(4));
    printf("class agents: smi %d dr %d sa %d perf %d bad %d %d\n", mad_rpc_class_agent(port, 1) >= 0,
           mad_rpc_class_agent(port, 0x81) >= 0, mad_rpc_class_agent(port, 3) >= 0, mad_rpc_class_agent(port, 4) >= 0,
           mad_rpc_class_agent(port, 0), mad_rpc_class_agent(port, 0x99));
    smp_mkey_set(port, 0x1122334455667788ull);
    printf("mkey 0x%llx\n", (unsigned long long)smp_mkey_get(port));
    /* requests as sent: a Get with an M_Key, Sets by DR and by LID (to
	 * places that do not answer, so the fabric stays as it is) */
    uint8_t data[IB_SMP_DATA_SIZE];
    for (int i = 0; i < IB_SMP_DATA_SIZE; i++)
        data[i] = (uint8_t)(i * 7 + 1);
    ib_portid_t id = {0};
    char p1[] = "0,1";
    str2drpath(&id.drpath, p1, 0, 0);
    capture_next();
    printf("get with mkey: %s\n", smp_query_via(data, &id, IB_ATTR_NODE_INFO, 0, 0, port) ? "ok" : "fail");
    show_capture("  request");
    smp_mkey_set(port, 0);
    for (int i = 0; i < IB_SMP_DATA_SIZE; i++)
        data[i] = (uint8_t)(i * 7 + 1);
    char p2[] = "0,1,9,4";
    memset(&id, 0, sizeof(id));
    str2drpath(&id.drpath, p2, 0, 0);
    capture_next();
    int status = -1;
    printf("set by DR: %s\n", smp_set_status_via(data, &id, IB_ATTR_PORT_INFO, 2, 0, &status, port) ? "ok" : "fail");
    show_capture("  request");
    memset(&id, 0, sizeof(id));
    ib_portid_set(&id, 700, 0, 0);
    capture_next();
    printf("set by LID: %s\n", smp_set_via(data, &id, IB_ATTR_SWITCH_INFO, 0, 100, port) ? "ok" : "fail");
    show_capture("  request");
    /* DR with DrSLID/DrDLID: LID-routed part then directed */
    memset(&id, 0, sizeof(id));
    char p3[] = "0,3";
    str2drpath(&id.drpath, p3, 5, 0);
    id.lid = 6;
    capture_next();
    printf("DR with slid: %s\n", smp_query_via(data, &id, IB_ATTR_NODE_INFO, 0, 100, port) ? "ok" : "fail");
    show_capture("  request");
    return 0;
}

static int run_sm(void) {
    ib_portid_t self = {0}, sm = {0};
    int portnum = -1;
    ibmad_gid_t gid;
    uint8_t ni[IB_SMP_DATA_SIZE] = {0};

    int rc = ib_resolve_self_via(&self, &portnum, &gid, port);
    printf("resolve_self: rc %d lid %d port %d\n", rc, self.lid, portnum);
    hex("  gid", gid, 16);
    rc = ib_resolve_smlid_via(&sm, 0, port);
    printf("resolve_smlid: rc %d lid %d sl %d\n", rc, sm.lid, sm.sl);

    for (int lid = 1; lid <= 8; lid++)
        smp_lid(lid, IB_ATTR_NODE_INFO, 0, 0);
    smp_lid(self.lid, IB_ATTR_PORT_INFO, 1, 0);

    /* a LID nobody has: the request times out, boundedly */
    mad_rpc_set_timeout(port, 200);
    mad_rpc_set_retries(port, 2);
    double t0 = now_s();
    smp_lid(700, IB_ATTR_NODE_INFO, 0, 0);
    printf("unknown LID: %s\n", now_s() - t0 < 5.0 ? "bounded" : "slow");
    madrpc_show_errors(1);
    smp_lid(701, IB_ATTR_NODE_INFO, 0, 100);
    madrpc_show_errors(0);
    mad_rpc_set_timeout(port, 0);
    mad_rpc_set_retries(port, 0);

    /* the CA behind port 1 of the local switch: its port GUID */
    ib_portid_t dr = {0};
    char path[] = "0,1";
    str2drpath(&dr.drpath, path, 0, 0);
    smp_query_via(ni, &dr, IB_ATTR_NODE_INFO, 0, 0, port);
    uint64_t guid = mad_get_field64(ni, 0, IB_NODE_PORT_GUID_F);
    char guidstr[64], gidstr[64], drslid[64];
    snprintf(guidstr, sizeof(guidstr), "0x%016llx", (unsigned long long)guid);
    snprintf(gidstr, sizeof(gidstr), "fe80::%x:%x:%x:%x", (unsigned)(guid >> 48) & 0xffff,
             (unsigned)(guid >> 32) & 0xffff, (unsigned)(guid >> 16) & 0xffff, (unsigned)guid & 0xffff);
    snprintf(drslid, sizeof(drslid), "%d,1", self.lid);

    resolve(guidstr, IB_DEST_GUID, NULL);
    resolve(guidstr, IB_DEST_GUID, &sm);
    resolve("0x0002c9000000dead", IB_DEST_GUID, NULL);
    resolve(gidstr, IB_DEST_GID, NULL);
    resolve("fe80::dead:beef", IB_DEST_GID, NULL);
    resolve("1", IB_DEST_LID, &sm);
    resolve(drslid, IB_DEST_DRSLID, NULL);
    resolve("0,1", IB_DEST_DRSLID, NULL);
    resolve("70000,1", IB_DEST_DRSLID, NULL);

    ib_portid_t target = {0};
    uint64_t g = guid;
    rc = ib_resolve_guid_via(&target, &g, NULL, 0, port);
    show_portid("resolve_guid", rc, &target);
    /* class MADs go to that CA, not to the SM's own node (opensm on
	 * ibsim crashes on vendor/CC MADs sent to it) */
    int ca_lid = target.lid;
    rc = ib_resolve_gid_via(&target, gid, NULL, 0, port);
    show_portid("resolve_gid(self)", rc, &target);

    uint8_t rec[IB_SA_DATA_SIZE];
    memset(rec, 0x77, sizeof(rec));
    capture_next();
    rc = ib_node_query_via(port, guid, &sm, rec);
    show_capture("  request NodeRecord");
    printf("node_query: rc %d lid %u\n", rc, mad_get_field(rec, 0, IB_SA_NR_LID_F));
    rc = ib_node_query_via(port, 0x1234, &sm, rec);
    printf("node_query unknown: lid %d\n", rc);
    memset(rec, 0x66, sizeof(rec));
    capture_next();
    rc = ib_path_query_via(port, gid, gid, &sm, rec);
    show_capture("  request PathRecord");
    printf("path_query self: dlid %d\n", rc);
    if (rc > 0)
        hex("  record", rec, IB_SA_PR_RECSZ);

    /* a raw SA NodeRecord Get by LID */
    ib_sa_call_t sa = {0};
    memset(rec, 0, sizeof(rec));
    sa.method = IB_MAD_METHOD_GET;
    sa.attrid = IB_SA_ATTR_NODERECORD;
    sa.mask = 1; /* LID */
    sa.trid = 0;
    mad_set_field(rec, 0, IB_SA_NR_LID_F, self.lid);
    capture_next();
    uint8_t* p = sa_rpc_call(port, rec, &sm, &sa, 0);
    show_capture("  request SA");
    printf("sa NodeRecord: %s recsz %u\n", p ? "ok" : "fail", sa.recsz);
    if (p)
        hex("  record", rec, IB_SA_NR_RECSZ);
    /* and one that matches nothing */
    memset(rec, 0, sizeof(rec));
    mad_set_field(rec, 0, IB_SA_NR_LID_F, 999);
    madrpc_show_errors(1);
    p = sa_rpc_call(port, rec, &sm, &sa, 0);
    madrpc_show_errors(0);
    printf("sa NodeRecord 999: %s\n", p ? "ok" : "fail");
    ib_portid_t dr0 = {0};
    p = sa_rpc_call(port, rec, &dr0, &sa, 0);
    printf("sa by DR: %s\n", p ? "ok" : "fail");

    /* PMA */
    ib_portid_t pma = {0};
    ib_portid_set(&pma, ca_lid, 0, 0);
    uint8_t pc[IB_MAD_SIZE] = {0};
    capture_next();
    p = pma_query_via(pc, &pma, 1, 0, IB_GSI_PORT_COUNTERS, port);
    show_capture("  request PMA");
    printf("pma PortCounters: %s qp %u qkey 0x%x errno %d\n", p ? "ok" : "fail", pma.qp, pma.qkey, p ? 0 : errno);
    if (p)
        printf("  select %u/%u symbolerr %u linkdowned %u\n", mad_get_field(pc, 0, IB_PC_PORT_SELECT_F),
               mad_get_field(pc, 0, IB_PC_COUNTER_SELECT_F), mad_get_field(pc, 0, IB_PC_ERR_SYM_F),
               mad_get_field(pc, 0, IB_PC_LINK_DOWNED_F));
    memset(pc, 0x11, sizeof(pc));
    capture_next();
    p = pma_query_via(pc, &pma, 1, 0, IB_GSI_PORT_COUNTERS_EXT, port);
    show_capture("  request PMA ext");
    printf("pma PortCountersExt: %s\n", p ? "ok" : "fail");
    capture_next();
    p = performance_reset_via(pc, &pma, 1, 0, 0, IB_GSI_PORT_COUNTERS, port);
    show_capture("  request reset");
    printf("performance_reset: %s\n", p ? "ok" : "fail");
    capture_next();
    p = performance_reset_via(pc, &pma, 2, 0x12345678, 0, IB_GSI_PORT_COUNTERS, port);
    show_capture("  request reset mask");
    capture_next();
    p = performance_reset_via(pc, &pma, 1, 0, 0, IB_GSI_PORT_COUNTERS_EXT, port);
    show_capture("  request reset ext");
    capture_next();
    p = performance_reset_via(pc, &pma, 1, 0xabcd1234, 0, IB_GSI_PORT_COUNTERS_EXT, port);
    show_capture("  request reset ext mask");
    ib_portid_t nolid = {0};
    nolid.lid = -1;
    p = pma_query_via(pc, &nolid, 1, 0, IB_GSI_PORT_COUNTERS, port);
    printf("pma lid -1: %s\n", p ? "ok" : "fail");
    mad_rpc_set_timeout(port, 200);
    mad_rpc_set_retries(port, 1);
    ib_portid_t far = {0};
    ib_portid_set(&far, 702, 0, 0);
    p = pma_query_via(pc, &far, 1, 0, IB_GSI_PORT_COUNTERS, port);
    printf("pma unknown LID: %s errno %s\n", p ? "ok" : "fail", p ? "-" : strerror(errno));

    /* vendor classes: range 1 and range 2 with an OUI */
    ib_vendor_call_t call = {0};
    uint8_t vbuf[IB_MAD_SIZE] = {0};
    ib_portid_t v = {0};
    ib_portid_set(&v, ca_lid, 0, 0);
    call.method = IB_MAD_METHOD_GET;
    call.mgmt_class = 0x09;
    call.attrid = 0x10;
    call.timeout = 200;
    call.attrid = 0x10;
    call.mod = 0x12345678;
    memset(vbuf, 0xa5, sizeof(vbuf));
    capture_next();
    p = ib_vendor_call_via(vbuf, &v, &call, port);
    show_capture("  request vendor range1");
    printf("vendor range1: %s\n", p ? "ok" : "fail");
    call.mgmt_class = IB_VENDOR_OPENIB_PING_CLASS;
    call.oui = IB_OPENIB_OUI;
    memset(vbuf, 0x5a, sizeof(vbuf));
    capture_next();
    p = ib_vendor_call_via(vbuf, &v, &call, port);
    show_capture("  request vendor range2");
    printf("vendor range2: %s\n", p ? "ok" : "fail");
    call.mgmt_class = 0x20;
    p = ib_vendor_call_via(vbuf, &v, &call, port);
    printf("vendor not vendor class: %s\n", p ? "ok" : "fail");
    ib_portid_t vdr = {0};
    call.mgmt_class = 0x09;
    p = ib_vendor_call_via(vbuf, &vdr, &call, port);
    printf("vendor by DR: %s\n", p ? "ok" : "fail");

    /* board management and congestion control */
    ib_bm_call_t bm = {0};
    bm.method = IB_MAD_METHOD_GET;
    bm.attrid = IB_BM_ATTR_BKEYINFO;
    bm.timeout = 200;
    bm.bkey = 0x0102030405060708ull;
    memset(vbuf, 0x3c, sizeof(vbuf));
    capture_next();
    p = bm_call_via(vbuf, &v, &bm, port);
    show_capture("  request bm");
    printf("bm: %s\n", p ? "ok" : "fail");
    p = bm_call_via(vbuf, &vdr, &bm, port);
    printf("bm by DR: %s\n", p ? "ok" : "fail");
    int status = -1;
    capture_next();
    void* cp = cc_query_status_via(vbuf, &v, IB_CC_ATTR_CONGESTION_INFO, 0, 200, &status, port, 0x0102030405060708ull);
    show_capture("  request cc query");
    printf("cc query: %s status 0x%x\n", cp ? "ok" : "fail", status);
    status = -1;
    memset(vbuf, 0x99, sizeof(vbuf));
    capture_next();
    cp = cc_config_status_via(vbuf, vbuf, &v, IB_CC_ATTR_CONGESTION_KEY_INFO, 0, 200, &status, port, 0x55);
    show_capture("  request cc config");
    status = -1;
    memset(vbuf, 0x88, sizeof(vbuf));
    capture_next();
    cp = cc_query_status_via(vbuf, &v, IB_CC_ATTR_CONGESTION_LOG, 0, 200, &status, port, 0);
    show_capture("  request cc log");
    printf("cc log: %s status 0x%x\n", cp ? "ok" : "fail", status);
    printf("cc config: %s status 0x%x\n", cp ? "ok" : "fail", status);
    return 0;
}

/* the deprecated calls on the library's default port (needs opensm) */
static int run_legacy(void) {
    int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS, IB_PERFORMANCE_CLASS};
    madrpc_init(NULL, 0, classes, 4);
    printf("madrpc_portid %s, agents smi %d dr %d sa %d cc %d bad %d\n", madrpc_portid() >= 0 ? "ok" : "bad",
           mad_class_agent(1) >= 0, mad_class_agent(0x81) >= 0, mad_class_agent(3) >= 0, mad_class_agent(IB_CC_CLASS),
           mad_class_agent(0));
    printf("register cc %d, again %d, unknown class %d\n", mad_register_client(IB_CC_CLASS, 0),
           mad_register_client(IB_CC_CLASS, 0), mad_register_client(0x77, 0));
    printf("register server: known %d unknown %d\n", mad_register_server(IB_CC_CLASS, 0, NULL, 0) >= 0,
           mad_register_server(0x77, 0, NULL, 0));

    ib_portid_t self = {0};
    int pn = -1;
    ibmad_gid_t gid;
    int rc = ib_resolve_self(&self, &pn, &gid);
    printf("resolve_self: rc %d lid %d port %d\n", rc, self.lid, pn);
    ib_portid_t sm = {0};
    rc = ib_resolve_smlid(&sm, 0);
    printf("resolve_smlid: rc %d lid %d\n", rc, sm.lid);

    /* the request as sent, captured by madrpc_save_mad (TID masked) */
    uint8_t saved[IB_MAD_SIZE], buf[IB_SMP_DATA_SIZE] = {0};
    ib_portid_t id = {0};
    char path[] = "0,1";
    str2drpath(&id.drpath, path, 0, 0);
    memset(saved, 0xee, sizeof(saved));
    madrpc_save_mad(saved, sizeof(saved));
    uint8_t* r = smp_query(buf, &id, IB_ATTR_NODE_INFO, 0, 0);
    memset(saved + 8, 0, 8);
    printf("smp_query: %s\n", r ? "ok" : "fail");
    hex("  request", saved, IB_MAD_SIZE);
    if (r)
        hex("  data", buf, IB_SMP_DATA_SIZE);

    ib_portid_t lid = {0};
    char lidstr[] = "2";
    rc = ib_resolve_portid_str(&lid, lidstr, IB_DEST_LID, &sm);
    printf("resolve_portid_str: rc %d %s\n", rc, portid2str(&lid));

    /* a PortInfo Get through madrpc() with an explicit rpc */
    ib_rpc_t rpc = {0};
    rpc.mgtclass = IB_SMI_CLASS;
    rpc.method = IB_MAD_METHOD_GET;
    rpc.attr.id = IB_ATTR_PORT_INFO;
    rpc.attr.mod = 1;
    rpc.datasz = IB_SMP_DATA_SIZE;
    rpc.dataoffs = IB_SMP_DATA_OFFS;
    memset(buf, 0, sizeof(buf));
    memset(saved, 0xee, sizeof(saved));
    madrpc_save_mad(saved, 64);
    r = madrpc(&rpc, &lid, buf, buf);
    memset(saved + 8, 0, 8);
    printf("madrpc: %s status 0x%x\n", r ? "ok" : "fail", rpc.rstatus);
    hex("  request (64 bytes saved)", saved, IB_MAD_SIZE);

    /* SA: a PathRecord for ourselves, a NodeRecord table read */
    uint8_t rec[IB_SA_DATA_SIZE];
    rc = ib_path_query(gid, gid, &sm, rec);
    printf("ib_path_query: %d\n", rc);
    ib_sa_call_t sa = {0};
    memset(rec, 0, sizeof(rec));
    sa.method = IB_MAD_METHOD_GET;
    sa.attrid = IB_SA_ATTR_NODERECORD;
    sa.mask = 1;
    mad_set_field(rec, 0, IB_SA_NR_LID_F, 2);
    r = sa_call(rec, &sm, &sa, 0);
    printf("sa_call: %s recsz %u\n", r ? "ok" : "fail", sa.recsz);
    if (r)
        hex("  record", rec, IB_SA_NR_RECSZ);

    /* (a class without an agent would crash umad2sim under Debian's
	 * library: register it first) */
    printf("register vendor class: %d\n", mad_register_client(0x0a, 0));
    ib_vendor_call_t call = {0};
    call.method = IB_MAD_METHOD_GET;
    call.mgmt_class = 0x0a;
    call.timeout = 100;
    uint8_t vbuf[IB_MAD_SIZE] = {0};
    printf("ib_vendor_call: %s\n", ib_vendor_call(vbuf, &lid, &call) ? "ok" : "fail");

    /* one-way send and a receive that times out */
    rpc.mgtclass = IB_PERFORMANCE_CLASS;
    rpc.method = IB_MAD_METHOD_GET;
    rpc.attr.id = IB_GSI_PORT_COUNTERS;
    rpc.attr.mod = 0;
    rpc.datasz = IB_PC_DATA_SZ;
    rpc.dataoffs = IB_PC_DATA_OFFS;
    rpc.timeout = 100;
    ib_portid_t pma = {0};
    ib_portid_set(&pma, 2, 1, IB_DEFAULT_QP1_QKEY);
    printf("mad_send: %d\n", mad_send(&rpc, &pma, NULL, vbuf));
    void* umad = mad_receive(NULL, 200);
    printf("mad_receive: %s\n", umad ? "got one" : "nothing");
    if (umad) {
        uint8_t* m = umad_get_mad(umad);
        printf("  class 0x%x method 0x%x attr 0x%x status 0x%x\n", m[1], m[3], mad_get_field(m, 0, IB_MAD_ATTRID_F),
               mad_get_field(m, 0, IB_MAD_STATUS_F));
        mad_free(umad);
    }
    umad = mad_alloc();
    printf("mad_alloc: %s\n", umad ? "ok" : "fail");
    printf("mad_receive into buffer: %s\n", mad_receive(umad, 100) ? "got one" : "nothing");
    mad_free(umad);
    return 0;
}

typedef struct ibmad_ports_pair* (*open2_fn)(char*, int, int*, int, unsigned);
typedef void (*close2_fn)(struct ibmad_ports_pair*);

struct pair_layout {
    struct {
        struct ibmad_port* port;
        char ca_name[UMAD_CA_NAME_LEN];
    } smi, gsi;
};

static int run_pair(void) {
    open2_fn open2 = (open2_fn)dlsym(RTLD_DEFAULT, "mad_rpc_open_port2");
    close2_fn close2 = (close2_fn)dlsym(RTLD_DEFAULT, "mad_rpc_close_port2");
    if (!open2 || !close2) {
        printf("no mad_rpc_open_port2\n");
        return 1;
    }
    int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS, IB_PERFORMANCE_CLASS};
    struct pair_layout* pp = (struct pair_layout*)open2(NULL, 0, classes, 4, 0);
    if (!pp) {
        printf("open_port2 failed: %s\n", strerror(errno));
        return 1;
    }
    printf("smi '%s' gsi '%s'\n", pp->smi.ca_name, pp->gsi.ca_name);
    if (!pp->smi.ca_name[0] || strcmp(pp->smi.ca_name, pp->gsi.ca_name))
        printf("names: unexpected (one legacy device serves both)\n");
    printf("smi %s: smp agent %d, perf agent %d\n", pp->smi.port ? "open" : "none",
           pp->smi.port ? mad_rpc_class_agent(pp->smi.port, 0x81) >= 0 : -1,
           pp->smi.port ? mad_rpc_class_agent(pp->smi.port, 4) : -1);
    printf("gsi %s: smp agent %d, perf agent %d\n", pp->gsi.port ? "open" : "none",
           pp->gsi.port ? mad_rpc_class_agent(pp->gsi.port, 0x81) : -1,
           pp->gsi.port ? mad_rpc_class_agent(pp->gsi.port, 4) >= 0 : -1);
    ib_portid_t id = {0};
    uint8_t buf[64] = {0};
    int failed = !pp->smi.ca_name[0] || strcmp(pp->smi.ca_name, pp->gsi.ca_name) != 0;
    if (!pp->smi.port || !pp->gsi.port || mad_rpc_class_agent(pp->smi.port, 0x81) < 0 ||
        mad_rpc_class_agent(pp->gsi.port, 4) < 0 || mad_rpc_class_agent(pp->gsi.port, 0x81) >= 0)
        failed = 1;
    uint8_t* r = smp_query_via(buf, &id, IB_ATTR_NODE_INFO, 0, 0, pp->smi.port);
    printf("smp on smi: %s\n", r ? "ok" : "fail");
    failed |= !r;
    close2((struct ibmad_ports_pair*)pp);
    close2(NULL);
    struct ibmad_ports_pair* bad = open2("nosuchca", 1, classes, 4, 1);
    printf("bad ca: %s\n", bad ? "opened?" : "fail");
    if (bad) {
        close2(bad);
        failed = 1;
    }
    return failed;
}

int main(int argc, char** argv) {
    int classes[] = {IB_SMI_CLASS,        IB_SMI_DIRECT_CLASS, IB_SA_CLASS, IB_PERFORMANCE_CLASS,
                     IB_BOARD_MGMT_CLASS, IB_CC_CLASS,         0x09,        IB_VENDOR_OPENIB_PING_CLASS};

    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 2)
        return 2;
    if (!strcmp(argv[1], "pair"))
        return run_pair();
    if (!strcmp(argv[1], "legacy"))
        return run_legacy();

    port = mad_rpc_open_port(NULL, 0, classes, sizeof(classes) / sizeof(classes[0]));
    if (!port) {
        printf("open_port failed\n");
        return 1;
    }
    int rc = !strcmp(argv[1], "smp") ? run_smp() : !strcmp(argv[1], "sm") ? run_sm() : 2;
    mad_rpc_close_port(port);

    /* a port that cannot be opened */
    struct ibmad_port* bad = mad_rpc_open_port("nosuchca", 1, classes, 1);
    printf("open nosuchca: %s\n", bad ? "opened?" : "fail");
    int too_many[300] = {0};
    bad = mad_rpc_open_port(NULL, 0, too_many, 300);
    printf("open 300 classes: %s errno %s\n", bad ? "opened?" : "fail", strerror(errno));
    return rc;
}
