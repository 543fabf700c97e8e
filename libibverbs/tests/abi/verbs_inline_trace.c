/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Calls every inline function and macro of <infiniband/verbs.h> against mock
 * providers and library entry points and prints what reached them. Built once
 * against the reference headers and once against ours: the two traces must be
 * identical (see CMakeLists.txt). No device, kernel or libibverbs is needed. */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>

#define LOG(...) printf(__VA_ARGS__)

static char mr_buf[64];
static char iova_text[32];

/* The buffer's address differs run to run; print it symbolically. */
static const char* iova_str(uint64_t iova) {
    if (iova == (uintptr_t)mr_buf)
        return "buf";
    snprintf(iova_text, sizeof(iova_text), "0x%llx", (unsigned long long)iova);
    return iova_text;
}

/* ---- exported symbols the inlines call, mocked ---- */
struct ibv_mr*(ibv_reg_mr)(struct ibv_pd* pd, void* addr, size_t length, int access) {
    LOG("  ibv_reg_mr(buf=%d,%zu,0x%x)\n", addr == mr_buf, length, access);
    return (struct ibv_mr*)0x11;
}
struct ibv_mr*(ibv_reg_mr_iova)(struct ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
    LOG("  ibv_reg_mr_iova(buf=%d,%zu,%s,0x%x)\n", addr == mr_buf, length, iova_str(iova), access);
    return (struct ibv_mr*)0x12;
}
struct ibv_mr* ibv_reg_mr_iova2(struct ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
    LOG("  ibv_reg_mr_iova2(buf=%d,%zu,%s,0x%x)\n", addr == mr_buf, length, iova_str(iova), access);
    return (struct ibv_mr*)0x13;
}
int(ibv_query_port)(struct ibv_context* c, uint8_t port, struct _compat_ibv_port_attr* a) {
    unsigned char* p = (unsigned char*)a;
    unsigned i, nz = 0;
    for (i = 0; i < sizeof(struct ibv_port_attr); i++)
        nz += p[i] != 0;
    LOG("  ibv_query_port(port=%u) nonzero-bytes-on-entry=%u\n", port, nz);
    ((struct ibv_port_attr*)a)->lid = 7;
    return 0;
}
int ibv_query_device(struct ibv_context* c, struct ibv_device_attr* a) {
    LOG("  ibv_query_device\n");
    a->max_qp = 42;
    return 0;
}
int _ibv_query_gid_ex(struct ibv_context* c, uint32_t port, uint32_t idx, struct ibv_gid_entry* e, uint32_t flags,
                      size_t sz) {
    LOG("  _ibv_query_gid_ex(%u,%u,%u,%zu)\n", port, idx, flags, sz);
    return 5;
}
ssize_t _ibv_query_gid_table(struct ibv_context* c, struct ibv_gid_entry* e, size_t max, uint32_t flags, size_t sz) {
    LOG("  _ibv_query_gid_table(%zu,%u,%zu)\n", max, flags, sz);
    return 6;
}
struct ibv_srq* ibv_create_srq(struct ibv_pd* pd, struct ibv_srq_init_attr* a) {
    LOG("  ibv_create_srq\n");
    return (struct ibv_srq*)0x21;
}
struct ibv_qp* ibv_create_qp(struct ibv_pd* pd, struct ibv_qp_init_attr* a) {
    LOG("  ibv_create_qp\n");
    return (struct ibv_qp*)0x22;
}

/* ---- provider ops ---- */
static int op_ret = 3;
#define OP(ret, name, args, val) \
    static ret m_##name args {   \
        LOG("  op " #name "\n"); \
        return (ret)(val);       \
    }
OP(int, query_port, (struct ibv_context * c, uint8_t p, struct ibv_port_attr* a, size_t len),
   (LOG("   len=%zu\n", len), op_ret))
OP(int, advise_mr, (struct ibv_pd * pd, enum ibv_advise_mr_advice ad, uint32_t f, struct ibv_sge* s, uint32_t n),
   op_ret)
OP(struct ibv_mr*, alloc_null_mr, (struct ibv_pd * pd), 0x31)
OP(int, read_counters, (struct ibv_counters * c, uint64_t* v, uint32_t n, uint32_t f), op_ret)
OP(int, attach_counters_point_flow, (struct ibv_counters * c, struct ibv_counter_attach_attr* a, struct ibv_flow* f),
   op_ret)
OP(struct ibv_counters*, create_counters, (struct ibv_context * c, struct ibv_counters_init_attr* a), 0x32)
OP(int, destroy_counters, (struct ibv_counters * c), op_ret)
OP(struct ibv_mr*, reg_dm_mr, (struct ibv_pd * pd, struct ibv_dm* dm, uint64_t o, size_t l, unsigned int a), 0x33)
OP(struct ibv_dm*, alloc_dm, (struct ibv_context * c, struct ibv_alloc_dm_attr* a), 0x34)
OP(int, free_dm, (struct ibv_dm * dm), op_ret)
OP(int, modify_flow_action_esp, (struct ibv_flow_action * a, struct ibv_flow_action_esp_attr* e), op_ret)
OP(int, destroy_flow_action, (struct ibv_flow_action * a), op_ret)
OP(struct ibv_flow_action*, create_flow_action_esp, (struct ibv_context * c, struct ibv_flow_action_esp_attr* e), 0x35)
OP(int, modify_qp_rate_limit, (struct ibv_qp * qp, struct ibv_qp_rate_limit_attr* a), op_ret)
OP(struct ibv_pd*, alloc_parent_domain, (struct ibv_context * c, struct ibv_parent_domain_init_attr* a), 0x36)
OP(int, dealloc_td, (struct ibv_td * td), op_ret)
OP(struct ibv_td*, alloc_td, (struct ibv_context * c, struct ibv_td_init_attr* a), 0x37)
OP(int, modify_cq, (struct ibv_cq * cq, struct ibv_modify_cq_attr* a), op_ret)
OP(int, post_srq_ops, (struct ibv_srq * s, struct ibv_ops_wr* o, struct ibv_ops_wr** b), op_ret)
OP(int, destroy_rwq_ind_table, (struct ibv_rwq_ind_table * t), op_ret)
OP(struct ibv_rwq_ind_table*, create_rwq_ind_table, (struct ibv_context * c, struct ibv_rwq_ind_table_init_attr* a),
   0x38)
OP(int, destroy_wq, (struct ibv_wq * wq), op_ret)
OP(int, modify_wq, (struct ibv_wq * wq, struct ibv_wq_attr* a), op_ret)
static struct ibv_wq the_wq;
OP(struct ibv_wq*, create_wq, (struct ibv_context * c, struct ibv_wq_init_attr* a), &the_wq)
OP(int, query_rt_values, (struct ibv_context * c, struct ibv_values_ex* v), op_ret)
OP(struct ibv_cq_ex*, create_cq_ex, (struct ibv_context * c, struct ibv_cq_init_attr_ex* a), 0x39)
OP(int, query_device_ex,
   (struct ibv_context * c, const struct ibv_query_device_ex_input* i, struct ibv_device_attr_ex* a, size_t sz),
   (LOG("   sz=%zu\n", sz), a->orig_attr.max_qp = 99, op_ret))
OP(int, ibv_destroy_flow, (struct ibv_flow * f), op_ret)
OP(struct ibv_flow*, ibv_create_flow, (struct ibv_qp * qp, struct ibv_flow_attr* a), 0x3a)
OP(struct ibv_qp*, open_qp, (struct ibv_context * c, struct ibv_qp_open_attr* a), 0x3b)
OP(struct ibv_qp*, create_qp_ex, (struct ibv_context * c, struct ibv_qp_init_attr_ex* a), 0x3c)
OP(int, get_srq_num, (struct ibv_srq * s, uint32_t* n), op_ret)
OP(struct ibv_srq*, create_srq_ex, (struct ibv_context * c, struct ibv_srq_init_attr_ex* a), 0x3d)
OP(struct ibv_xrcd*, open_xrcd, (struct ibv_context * c, struct ibv_xrcd_init_attr* a), 0x3e)
OP(int, close_xrcd, (struct ibv_xrcd * x), op_ret)
OP(struct ibv_mw*, alloc_mw, (struct ibv_pd * pd, enum ibv_mw_type t), 0x3f)
OP(int, bind_mw, (struct ibv_qp * qp, struct ibv_mw* mw, struct ibv_mw_bind* b), op_ret)
OP(int, dealloc_mw, (struct ibv_mw * mw), op_ret)
OP(int, poll_cq, (struct ibv_cq * cq, int n, struct ibv_wc* wc), n + 1)
OP(int, req_notify_cq, (struct ibv_cq * cq, int s), s + 10)
OP(int, post_srq_recv, (struct ibv_srq * s, struct ibv_recv_wr* w, struct ibv_recv_wr** b), op_ret)
OP(int, post_send, (struct ibv_qp * qp, struct ibv_send_wr* w, struct ibv_send_wr** b), op_ret + 100)
OP(int, post_recv, (struct ibv_qp * qp, struct ibv_recv_wr* w, struct ibv_recv_wr** b), op_ret + 200)

static struct verbs_context V;
#define CTX (&V.context)

static void fill(void) {
    memset(&V, 0, sizeof(V));
#define SET(n) V.n = m_##n
    SET(query_port);
    SET(advise_mr);
    SET(alloc_null_mr);
    SET(read_counters);
    SET(attach_counters_point_flow);
    SET(create_counters);
    SET(destroy_counters);
    SET(reg_dm_mr);
    SET(alloc_dm);
    SET(free_dm);
    SET(modify_flow_action_esp);
    SET(destroy_flow_action);
    SET(create_flow_action_esp);
    SET(modify_qp_rate_limit);
    SET(alloc_parent_domain);
    SET(dealloc_td);
    SET(alloc_td);
    SET(modify_cq);
    SET(post_srq_ops);
    SET(destroy_rwq_ind_table);
    SET(create_rwq_ind_table);
    SET(destroy_wq);
    SET(modify_wq);
    SET(create_wq);
    SET(query_rt_values);
    SET(create_cq_ex);
    SET(query_device_ex);
    SET(ibv_destroy_flow);
    SET(ibv_create_flow);
    SET(open_qp);
    SET(create_qp_ex);
    SET(get_srq_num);
    SET(create_srq_ex);
    SET(open_xrcd);
    SET(close_xrcd);
    V.context.ops.alloc_mw = m_alloc_mw;
    V.context.ops.bind_mw = m_bind_mw;
    V.context.ops.dealloc_mw = m_dealloc_mw;
    V.context.ops.poll_cq = m_poll_cq;
    V.context.ops.req_notify_cq = m_req_notify_cq;
    V.context.ops.post_srq_recv = m_post_srq_recv;
    V.context.ops.post_send = m_post_send;
    V.context.ops.post_recv = m_post_recv;
    V.sz = sizeof(V);
    V.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
}

static struct ibv_pd pd = {CTX, 1};
static struct ibv_qp qp;
static struct ibv_cq cq;
static struct ibv_srq srq;
static struct ibv_counters ctrs = {CTX};
static struct ibv_flow flow;
static struct ibv_flow_action fa = {CTX};
static struct ibv_td td = {CTX};
static struct ibv_dm dm;
static struct ibv_rwq_ind_table rwq = {CTX};
static struct ibv_xrcd xrcd = {CTX};

#define R(expr)                                                                          \
    do {                                                                                 \
        errno = 0;                                                                       \
        void* _p = (void*)(expr);                                                        \
        LOG("%-60s -> %s%lld errno=%d\n", #expr, _p == (void*)&the_wq ? "&the_wq " : "", \
            _p == (void*)&the_wq ? 0LL : (long long)(uintptr_t)_p, errno);               \
    } while (0)
#define RI(expr)                                           \
    do {                                                   \
        errno = 0;                                         \
        long long _r = (long long)(expr);                  \
        LOG("%-60s -> %lld errno=%d\n", #expr, _r, errno); \
    } while (0)

static void all_ext(const char* scenario) {
    struct ibv_port_attr pa;
    struct ibv_device_attr_ex dax;
    struct ibv_query_device_ex_input in = {0};
    struct ibv_gid_entry ge;
    struct ibv_ops_wr ow, *bad_ow = NULL;
    struct ibv_wq_init_attr wia;
    struct ibv_srq_init_attr_ex sia;
    struct ibv_qp_init_attr_ex qia;
    LOG("=== %s\n", scenario);
    memset(&pa, 0xff, sizeof(pa));
    RI(ibv_query_port(CTX, 1, &pa));
    LOG("  lid=%u\n", pa.lid);
    RI(ibv_query_gid_ex(CTX, 1, 2, &ge, 3));
    RI(ibv_query_gid_table(CTX, &ge, 4, 0));
    R(ibv_create_flow(&qp, NULL));
    RI(ibv_destroy_flow(&flow));
    R(ibv_create_flow_action_esp(CTX, NULL));
    RI(ibv_modify_flow_action_esp(&fa, NULL));
    RI(ibv_destroy_flow_action(&fa));
    R(ibv_open_xrcd(CTX, NULL));
    RI(ibv_advise_mr(&pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, NULL, 0));
    R(ibv_alloc_dm(CTX, NULL));
    RI(ibv_free_dm(&dm));
    R(ibv_alloc_null_mr(&pd));
    R(ibv_reg_dm_mr(&pd, &dm, 0, 0, 0));
    R(ibv_create_cq_ex(CTX, NULL));
    RI(ibv_modify_cq(&cq, NULL));
    RI(ibv_get_srq_num(&srq, NULL));
    bad_ow = NULL;
    RI(ibv_post_srq_ops(&srq, &ow, &bad_ow));
    LOG("  bad_op set=%d\n", bad_ow == &ow);
    R(ibv_alloc_td(CTX, NULL));
    RI(ibv_dealloc_td(&td));
    R(ibv_alloc_parent_domain(CTX, NULL));
    RI(ibv_query_rt_values_ex(CTX, NULL));
    memset(&dax, 0xee, sizeof(dax));
    RI(ibv_query_device_ex(CTX, NULL, &dax));
    LOG("  max_qp=%d comp_mask=%x\n", dax.orig_attr.max_qp, dax.comp_mask);
    in.comp_mask = 1;
    RI(ibv_query_device_ex(CTX, &in, &dax));
    R(ibv_open_qp(CTX, NULL));
    RI(ibv_modify_qp_rate_limit(&qp, NULL));
    memset(&wia, 0, sizeof(wia));
    wia.wq_context = (void*)0x77;
    memset(&the_wq, 0xcc, sizeof(the_wq));
    the_wq.context = CTX;
    R(ibv_create_wq(CTX, &wia));
    LOG("  wq_context=%p events=%u\n", the_wq.wq_context, the_wq.events_completed);
    RI(ibv_modify_wq(&the_wq, NULL));
    RI(ibv_destroy_wq(&the_wq));
    R(ibv_create_rwq_ind_table(CTX, NULL));
    RI(ibv_destroy_rwq_ind_table(&rwq));
    R(ibv_create_counters(CTX, NULL));
    RI(ibv_destroy_counters(&ctrs));
    RI(ibv_attach_counters_point_flow(&ctrs, NULL, NULL));
    RI(ibv_read_counters(&ctrs, NULL, 0, 0));
    memset(&sia, 0, sizeof(sia));
    sia.pd = &pd;
    sia.comp_mask = IBV_SRQ_INIT_ATTR_PD;
    R(ibv_create_srq_ex(CTX, &sia));
    sia.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
    sia.srq_type = IBV_SRQT_BASIC;
    R(ibv_create_srq_ex(CTX, &sia));
    sia.srq_type = IBV_SRQT_XRC;
    R(ibv_create_srq_ex(CTX, &sia));
    sia.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ;
    sia.srq_type = IBV_SRQT_BASIC;
    R(ibv_create_srq_ex(CTX, &sia));
    sia.comp_mask = IBV_SRQ_INIT_ATTR_TYPE;
    R(ibv_create_srq_ex(CTX, &sia));
    memset(&qia, 0, sizeof(qia));
    qia.pd = &pd;
    qia.comp_mask = IBV_QP_INIT_ATTR_PD;
    R(ibv_create_qp_ex(CTX, &qia));
    qia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    R(ibv_create_qp_ex(CTX, &qia));
    qia.comp_mask = 0;
    R(ibv_create_qp_ex(CTX, &qia));
}

static void trace_wr_cq(void);

int main(void) {
    size_t off;
    struct ibv_mw mw;
    struct ibv_mw_bind mwb;
    struct ibv_mr mr;
    volatile unsigned int acc_v = IBV_ACCESS_LOCAL_WRITE;

    setvbuf(stdout, NULL, _IONBF, 0);
    fill();
    qp.context = CTX;
    cq.context = CTX;
    srq.context = CTX;
    flow.context = CTX;
    dm.context = CTX;
    the_wq.context = CTX;
    all_ext("extended, full size");
    LOG("verbs_get_ctx ok=%d\n", verbs_get_ctx(CTX) == &V);

    /* each op unreachable through sz one byte too short */
#define SHORT(n)                                                               \
    do {                                                                       \
        fill();                                                                \
        qp.context = CTX;                                                      \
        off = offsetof(struct verbs_context, n);                               \
        V.sz = sizeof(V) - off - 1;                                            \
        LOG("short %s -> %p; exact -> ", #n, (void*)verbs_get_ctx_op(CTX, n)); \
        V.sz = sizeof(V) - off;                                                \
        LOG("%d\n", verbs_get_ctx_op(CTX, n) == &V);                           \
    } while (0)
    SHORT(query_port);
    SHORT(advise_mr);
    SHORT(create_cq_ex);
    SHORT(query_device_ex);
    SHORT(ibv_create_flow);
    SHORT(open_xrcd);
    SHORT(close_xrcd);
    SHORT(create_wq);

    fill();
    V.sz = sizeof(V) - offsetof(struct verbs_context, close_xrcd); /* only the oldest ops */
    qp.context = CTX;
    all_ext("extended, old provider (sz covers only from close_xrcd)");

    fill();
    memset(&V, 0, offsetof(struct verbs_context, _ABI_placeholder3)); /* all ext ops NULL */
    all_ext("extended, every op NULL");

    fill();
    V.context.abi_compat = NULL;
    all_ext("legacy context");
    LOG("verbs_get_ctx legacy=%p\n", (void*)verbs_get_ctx(CTX));
    op_ret = EOPNOTSUPP;
    fill();
    all_ext("extended, ops return EOPNOTSUPP");
    op_ret = ENOSYS;
    fill();
    all_ext("extended, ops return ENOSYS");
    op_ret = 3;
    fill();

    /* fast path through ctx->ops */
    RI(ibv_post_send(&qp, NULL, NULL));
    RI(ibv_post_recv(&qp, NULL, NULL));
    RI(ibv_poll_cq(&cq, 4, NULL));
    RI(ibv_req_notify_cq(&cq, 1));
    RI(ibv_post_srq_recv(&srq, NULL, NULL));
    R(ibv_alloc_mw(&pd, IBV_MW_TYPE_2));
    V.context.ops.alloc_mw = NULL;
    R(ibv_alloc_mw(&pd, IBV_MW_TYPE_2));
    fill();
    mw.context = CTX;
    mw.pd = &pd;
    mw.type = IBV_MW_TYPE_1;
    RI(ibv_dealloc_mw(&mw));
    memset(&mwb, 0, sizeof(mwb));
    RI(ibv_bind_mw(&qp, &mw, &mwb));
    mwb.bind_info.addr = 1;
    RI(ibv_bind_mw(&qp, &mw, &mwb));
    mr.pd = NULL;
    mwb.bind_info.mr = &mr;
    RI(ibv_bind_mw(&qp, &mw, &mwb));
    mr.pd = &pd;
    RI(ibv_bind_mw(&qp, &mw, &mwb));
    mw.type = IBV_MW_TYPE_2;
    RI(ibv_bind_mw(&qp, &mw, &mwb));
    xrcd.context = CTX;
    RI(ibv_close_xrcd(&xrcd));

    /* reg_mr dispatch */
    R(ibv_reg_mr(&pd, mr_buf, 64, IBV_ACCESS_LOCAL_WRITE));
    R(ibv_reg_mr(&pd, mr_buf, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING));
    R(ibv_reg_mr(&pd, mr_buf, 64, acc_v));
    R(ibv_reg_mr_iova(&pd, mr_buf, 64, 0x1000, IBV_ACCESS_REMOTE_READ));
    R(ibv_reg_mr_iova(&pd, mr_buf, 64, 0x1000, IBV_ACCESS_RELAXED_ORDERING));
    R(ibv_reg_mr_iova(&pd, mr_buf, 64, 0x1000, acc_v));

    /* pure helpers */
    {
        uint32_t k[] = {0, 0xff, 0x12345678, 0xffffffff, 0x100};
        uint32_t fl[] = {0, 1, 0x3fff, 0x4000, 0xfffff, 0x12345, 0xabcde};
        unsigned i;
        int q;
        for (i = 0; i < sizeof(k) / sizeof(k[0]); i++)
            LOG("inc_rkey %x -> %x\n", k[i], ibv_inc_rkey(k[i]));
        for (i = 0; i < sizeof(fl) / sizeof(fl[0]); i++)
            LOG("sport %x -> %x\n", fl[i], ibv_flow_label_to_udp_sport(fl[i]));
        for (q = 0; q < 12; q++)
            LOG("qpt %d: %d %d\n", q, ibv_is_qpt_supported(0x1c, (enum ibv_qp_type)q),
                ibv_is_qpt_supported(0x304, (enum ibv_qp_type)q));
        LOG("cq_ex_to_cq %d\n", (void*)ibv_cq_ex_to_cq((struct ibv_cq_ex*)&cq) == (void*)&cq);
        LOG("vext %d %d\n", (int)vext_field_avail(struct ibv_device_attr_ex, tm_caps, 300),
            (int)vext_field_avail(struct ibv_device_attr_ex, tm_caps, 100));
        LOG("consts %llx %llx %d %d %d\n", (unsigned long long)IBV_DEVICE_RAW_SCATTER_FCS,
            (unsigned long long)IBV_DEVICE_PCI_WRITE_END_PADDING, (int)IBV_CREATE_CQ_SUP_WC_FLAGS,
            (int)IBV_WC_STANDARD_FLAGS, ETHERNET_LL_SIZE);
        LOG("sizeof enums %zu %zu\n", sizeof(enum ibv_rx_hash_fields), sizeof(IBV_RX_HASH_INNER));
    }
    trace_wr_cq();
    return 0;
}

/* ---- ibv_wr_*, extended CQ polling, device memory, WQ receive ---- */

#define P(...) printf(__VA_ARGS__)
static void a_cmp(struct ibv_qp_ex* q, uint32_t r, uint64_t a, uint64_t c, uint64_t s) {
    P("cmp_swp %u %llu %llu %llu\n", r, (unsigned long long)a, (unsigned long long)c, (unsigned long long)s);
}
static void a_fadd(struct ibv_qp_ex* q, uint32_t r, uint64_t a, uint64_t d) {
    P("fetch_add %u %llu %llu\n", r, (unsigned long long)a, (unsigned long long)d);
}
static void a_bind(struct ibv_qp_ex* q, struct ibv_mw* m, uint32_t r, const struct ibv_mw_bind_info* b) {
    P("bind_mw %p %u %p\n", (void*)m, r, (const void*)b);
}
static void a_linv(struct ibv_qp_ex* q, uint32_t r) { P("local_inv %u\n", r); }
static void a_rd(struct ibv_qp_ex* q, uint32_t r, uint64_t a) { P("rdma_read %u %llu\n", r, (unsigned long long)a); }
static void a_wr(struct ibv_qp_ex* q, uint32_t r, uint64_t a) { P("rdma_write %u %llu\n", r, (unsigned long long)a); }
static void a_wri(struct ibv_qp_ex* q, uint32_t r, uint64_t a, __be32 i) {
    P("rdma_write_imm %u %llu %x\n", r, (unsigned long long)a, i);
}
static void a_send(struct ibv_qp_ex* q) { P("send\n"); }
static void a_sendi(struct ibv_qp_ex* q, __be32 i) { P("send_imm %x\n", i); }
static void a_sendinv(struct ibv_qp_ex* q, uint32_t r) { P("send_inv %u\n", r); }
static void a_tso(struct ibv_qp_ex* q, void* h, uint16_t hs, uint16_t m) { P("tso %p %u %u\n", h, hs, m); }
static void a_ud(struct ibv_qp_ex* q, struct ibv_ah* ah, uint32_t n, uint32_t k) {
    P("ud %p %u %u\n", (void*)ah, n, k);
}
static void a_xrc(struct ibv_qp_ex* q, uint32_t s) { P("xrc %u\n", s); }
static void a_inl(struct ibv_qp_ex* q, void* a, size_t l) { P("inline %p %zu\n", a, l); }
static void a_inll(struct ibv_qp_ex* q, size_t n, const struct ibv_data_buf* b) {
    P("inline_list %zu %p\n", n, (const void*)b);
}
static void a_sge(struct ibv_qp_ex* q, uint32_t k, uint64_t a, uint32_t l) {
    P("sge %u %llu %u\n", k, (unsigned long long)a, l);
}
static void a_sgel(struct ibv_qp_ex* q, size_t n, const struct ibv_sge* s) {
    P("sge_list %zu %p\n", n, (const void*)s);
}
static void a_start(struct ibv_qp_ex* q) { P("start\n"); }
static int a_complete(struct ibv_qp_ex* q) {
    P("complete\n");
    return 17;
}
static void a_abort(struct ibv_qp_ex* q) { P("abort\n"); }
static void a_aw(struct ibv_qp_ex* q, uint32_t r, uint64_t a, const void* w) {
    P("atomic_write %u %llu %p\n", r, (unsigned long long)a, w);
}

static int c_start(struct ibv_cq_ex* c, struct ibv_poll_cq_attr* a) {
    P("start_poll attr=%d\n", a != NULL);
    return 1;
}
static int c_next(struct ibv_cq_ex* c) {
    P("next_poll\n");
    return 2;
}
static void c_end(struct ibv_cq_ex* c) { P("end_poll\n"); }
static enum ibv_wc_opcode c_op(struct ibv_cq_ex* c) { return IBV_WC_RECV_RDMA_WITH_IMM; }
static uint32_t c_verr(struct ibv_cq_ex* c) { return 3; }
static uint32_t c_blen(struct ibv_cq_ex* c) { return 4; }
static __be32 c_imm(struct ibv_cq_ex* c) { return 0x05060708; }
static uint32_t c_qpn(struct ibv_cq_ex* c) { return 6; }
static uint32_t c_src(struct ibv_cq_ex* c) { return 7; }
static unsigned int c_flags(struct ibv_cq_ex* c) { return 8; }
static uint32_t c_slid(struct ibv_cq_ex* c) { return 9; }
static uint8_t c_sl(struct ibv_cq_ex* c) { return 10; }
static uint8_t c_dlid(struct ibv_cq_ex* c) { return 11; }
static uint64_t c_ts(struct ibv_cq_ex* c) { return 12; }
static uint16_t c_vlan(struct ibv_cq_ex* c) { return 13; }
static uint32_t c_tag(struct ibv_cq_ex* c) { return 14; }
static void c_tm(struct ibv_cq_ex* c, struct ibv_wc_tm_info* t) {
    t->tag = 15;
    t->priv = 16;
}
static uint64_t c_wall(struct ibv_cq_ex* c) { return 17; }

static int d_to(struct ibv_dm* d, uint64_t o, const void* h, size_t l) {
    P("to_dm %llu %p %zu\n", (unsigned long long)o, h, l);
    return 21;
}
static int d_from(void* h, struct ibv_dm* d, uint64_t o, size_t l) {
    P("from_dm %p %llu %zu\n", h, (unsigned long long)o, l);
    return 22;
}
static int w_recv(struct ibv_wq* w, struct ibv_recv_wr* r, struct ibv_recv_wr** b) {
    P("wq post_recv %p\n", (void*)r);
    return 23;
}

static void trace_wr_cq(void) {
    static struct ibv_qp_ex q;
    static struct ibv_cq_ex c;
    static struct ibv_dm d;
    static struct ibv_wq w;
    struct ibv_wc_tm_info tm;
    static struct ibv_poll_cq_attr pa;
    q.wr_atomic_cmp_swp = a_cmp;
    q.wr_atomic_fetch_add = a_fadd;
    q.wr_bind_mw = a_bind;
    q.wr_local_inv = a_linv;
    q.wr_rdma_read = a_rd;
    q.wr_rdma_write = a_wr;
    q.wr_rdma_write_imm = a_wri;
    q.wr_send = a_send;
    q.wr_send_imm = a_sendi;
    q.wr_send_inv = a_sendinv;
    q.wr_send_tso = a_tso;
    q.wr_set_ud_addr = a_ud;
    q.wr_set_xrc_srqn = a_xrc;
    q.wr_set_inline_data = a_inl;
    q.wr_set_inline_data_list = a_inll;
    q.wr_set_sge = a_sge;
    q.wr_set_sge_list = a_sgel;
    q.wr_start = a_start;
    q.wr_complete = a_complete;
    q.wr_abort = a_abort;
    q.wr_atomic_write = a_aw;
    ibv_wr_start(&q);
    ibv_wr_atomic_cmp_swp(&q, 1, 2, 3, 4);
    ibv_wr_atomic_fetch_add(&q, 5, 6, 7);
    ibv_wr_bind_mw(&q, (struct ibv_mw*)0x10, 8, (const struct ibv_mw_bind_info*)0x20);
    ibv_wr_local_inv(&q, 9);
    ibv_wr_rdma_read(&q, 10, 11);
    ibv_wr_rdma_write(&q, 12, 13);
    ibv_wr_rdma_write_imm(&q, 14, 15, 16);
    ibv_wr_send(&q);
    ibv_wr_send_imm(&q, 17);
    ibv_wr_send_inv(&q, 18);
    ibv_wr_send_tso(&q, (void*)0x30, 19, 20);
    ibv_wr_set_ud_addr(&q, (struct ibv_ah*)0x40, 21, 22);
    ibv_wr_set_xrc_srqn(&q, 23);
    ibv_wr_set_inline_data(&q, (void*)0x50, 24);
    ibv_wr_set_inline_data_list(&q, 25, (const struct ibv_data_buf*)0x60);
    ibv_wr_set_sge(&q, 26, 27, 28);
    ibv_wr_set_sge_list(&q, 29, (const struct ibv_sge*)0x70);
    ibv_wr_atomic_write(&q, 30, 31, (const void*)0x80);
    P("complete -> %d\n", ibv_wr_complete(&q));
    ibv_wr_abort(&q);

    c.start_poll = c_start;
    c.next_poll = c_next;
    c.end_poll = c_end;
    c.read_opcode = c_op;
    c.read_vendor_err = c_verr;
    c.read_byte_len = c_blen;
    c.read_imm_data = c_imm;
    c.read_qp_num = c_qpn;
    c.read_src_qp = c_src;
    c.read_wc_flags = c_flags;
    c.read_slid = c_slid;
    c.read_sl = c_sl;
    c.read_dlid_path_bits = c_dlid;
    c.read_completion_ts = c_ts;
    c.read_cvlan = c_vlan;
    c.read_flow_tag = c_tag;
    c.read_tm_info = c_tm;
    c.read_completion_wallclock_ns = c_wall;
    P("start %d next %d\n", ibv_start_poll(&c, &pa) == 1, ibv_next_poll(&c));
    P("%d %u %u %x %x %u %u %u %u %u %u %llu %u %u %llu\n", ibv_wc_read_opcode(&c), ibv_wc_read_vendor_err(&c),
      ibv_wc_read_byte_len(&c), ibv_wc_read_imm_data(&c), ibv_wc_read_invalidated_rkey(&c), ibv_wc_read_qp_num(&c),
      ibv_wc_read_src_qp(&c), ibv_wc_read_wc_flags(&c), ibv_wc_read_slid(&c), ibv_wc_read_sl(&c),
      ibv_wc_read_dlid_path_bits(&c), (unsigned long long)ibv_wc_read_completion_ts(&c), ibv_wc_read_cvlan(&c),
      ibv_wc_read_flow_tag(&c), (unsigned long long)ibv_wc_read_completion_wallclock_ns(&c));
    ibv_wc_read_tm_info(&c, &tm);
    P("tm %llu %u\n", (unsigned long long)tm.tag, tm.priv);
    ibv_end_poll(&c);
    d.memcpy_to_dm = d_to;
    d.memcpy_from_dm = d_from;
    P("%d %d\n", ibv_memcpy_to_dm(&d, 1, (const void*)0x90, 2), ibv_memcpy_from_dm((void*)0xa0, &d, 3, 4));
    w.post_recv = w_recv;
    P("%d\n", ibv_post_wq_recv(&w, (struct ibv_recv_wr*)0xb0, NULL));
}
