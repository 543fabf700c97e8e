/* dv_path: the mlx5 direct-verbs interface on the first device, every
 * result printed as a line. The capabilities mlx5dv_query_device reports,
 * mlx5dv_open_device's flags, the application's buffer allocators, the
 * clock-info page, what mlx5dv_init_obj says of QPs, CQs, SRQs, AHs and PDs
 * (both symbol versions), queues created with mlx5 attributes, and traffic
 * driven through the rings mlx5dv_init_obj handed out: WQEs written and
 * doorbells rung by this program, CQEs read by it, as UCX and DPDK do.
 * Built twice, against our libibverbs + libmlx5 and against Debian's;
 * dv_path.sh runs both on the emulated ConnectX and compares. Nothing
 * printed may depend on the run: addresses, keys and object numbers are
 * shown as relations. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "twin_common.h"

/* ------------------------------------------------- query and open */

static void query(struct ibv_context* ctx) {
    struct mlx5dv_context dv;
    memset(&dv, 0xa5, sizeof(dv));
    dv.comp_mask = ~0ull;
    int r = mlx5dv_query_device(ctx, &dv);
    printf("query_device (every part asked): %s\n", err_name(r));
    if (r)
        return;
    printf("  version %u flags 0x%llx comp_mask 0x%llx\n", dv.version, (unsigned long long)dv.flags,
           (unsigned long long)dv.comp_mask);
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_CQE_COMPRESION)
        printf("  cqe_comp max_num %u formats 0x%x\n", dv.cqe_comp_caps.max_num, dv.cqe_comp_caps.supported_format);
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_SWP)
        printf("  sw_parsing 0x%x qpts 0x%x\n", dv.sw_parsing_caps.sw_parsing_offloads,
               dv.sw_parsing_caps.supported_qpts);
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_STRIDING_RQ)
        printf("  striding_rq %u-%u bytes %u-%u strides qpts 0x%x\n",
               dv.striding_rq_caps.min_single_stride_log_num_of_bytes,
               dv.striding_rq_caps.max_single_stride_log_num_of_bytes,
               dv.striding_rq_caps.min_single_wqe_log_num_of_strides,
               dv.striding_rq_caps.max_single_wqe_log_num_of_strides, dv.striding_rq_caps.supported_qpts);
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS)
        printf("  tunnel_offloads 0x%x\n", dv.tunnel_offloads_caps);
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_DYN_BFREGS)
        printf("  max_dynamic_bfregs %u\n", dv.max_dynamic_bfregs);
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_CLOCK_INFO_UPDATE)
        printf("  clock_info update every %llu ns\n", (unsigned long long)dv.max_clock_info_update_nsec);
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS)
        printf("  flow_action_flags 0x%x\n", dv.flow_action_flags);
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_DC_ODP_CAPS)
        printf("  dc_odp_caps 0x%x\n", dv.dc_odp_caps);
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_HCA_CORE_CLOCK)
        printf("  hca_core_clock %s\n", dv.hca_core_clock ? "mapped" : "NULL");
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_NUM_LAG_PORTS)
        printf("  num_lag_ports %u\n", dv.num_lag_ports);
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_DCI_STREAMS)
        printf("  dci_streams %u/%u\n", dv.dci_streams_caps.max_log_num_concurent,
               dv.dci_streams_caps.max_log_num_errored);
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD)
        printf("  sig block 0x%llx prot 0x%x t10 0x%x crc 0x%x\n", (unsigned long long)dv.sig_caps.block_size,
               dv.sig_caps.block_prot, dv.sig_caps.t10dif_bg, dv.sig_caps.crc_type);
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH)
        printf("  max_wr_memcpy_length %zu\n", dv.max_wr_memcpy_length);
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD)
        printf("  crypto engines 0x%x wrapped 0x%x\n", dv.crypto_caps.crypto_engines,
               dv.crypto_caps.wrapped_import_method);

    /* Nothing asked: only the flags. */
    memset(&dv, 0, sizeof(dv));
    r = mlx5dv_query_device(ctx, &dv);
    printf("query_device (nothing asked): %s flags 0x%llx comp_mask 0x%llx\n", err_name(r),
           (unsigned long long)dv.flags, (unsigned long long)dv.comp_mask);
}

static void open_case(struct ibv_device* dev, const char* what, struct mlx5dv_context_attr* attr) {
    errno = 0;
    struct ibv_context* c = mlx5dv_open_device(dev, attr);
    printf("open_device %-24s %s\n", what, c ? "ok" : err_name(errno));
    if (c)
        ibv_close_device(c);
}

/* ---------------------------------------------------------- allocators */

#define MAX_CHUNKS 64
static struct chunk {
    void* p;
    size_t len;
} chunks[MAX_CHUNKS];
static int allocs, frees, bad_frees;
static int priv_tag;

static void* my_alloc(size_t size, void* priv) {
    if (priv != &priv_tag)
        return NULL;
    void* p = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
    for (int i = 0; p && i < MAX_CHUNKS; i++) {
        if (!chunks[i].p) {
            chunks[i].p = p;
            chunks[i].len = size;
            allocs++;
            return p;
        }
    }
    free(p);
    return NULL;
}

static void my_free(void* p, void* priv) {
    for (int i = 0; i < MAX_CHUNKS; i++) {
        if (chunks[i].p == p && priv == &priv_tag) {
            chunks[i].p = NULL;
            frees++;
            free(p);
            return;
        }
    }
    bad_frees++;
}

/* Whether [p, p + len) lies inside memory the allocator handed out. */
static int in_chunk(const void* p, size_t len) {
    const char* a = p;
    for (int i = 0; i < MAX_CHUNKS; i++) {
        const char* c = chunks[i].p;
        if (c && a >= c && a + len <= c + chunks[i].len)
            return 1;
    }
    return 0;
}

static void allocators(struct ibv_device* dev) {
    struct ibv_context* ctx = ibv_open_device(dev);
    if (!ctx)
        return;
    int r = mlx5dv_set_context_attr(ctx, (enum mlx5dv_set_ctx_attr_type)7, NULL);
    printf("set_context_attr unknown type: %s\n", err_name(r));
    struct mlx5dv_ctx_allocators a = {.alloc = my_alloc, .free = my_free, .data = &priv_tag};
    r = mlx5dv_set_context_attr(ctx, MLX5DV_CTX_ATTR_BUF_ALLOCATORS, &a);
    printf("set_context_attr allocators: %s\n", err_name(r));
    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    struct ibv_cq* cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
    struct ibv_srq* srq = pd ? ibv_create_srq(pd, &sa) : NULL;
    struct ibv_qp_init_attr qa = {.send_cq = cq,
                                  .recv_cq = cq,
                                  .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
    struct ibv_qp* qp = cq && pd ? ibv_create_qp(pd, &qa) : NULL;
    printf("  objects with the allocators: cq %s srq %s qp %s\n", cq ? "ok" : "failed", srq ? "ok" : "failed",
           qp ? "ok" : "failed");
    if (cq && srq && qp) {
        struct mlx5dv_qp dqp = {0};
        struct mlx5dv_cq dcq = {0};
        struct mlx5dv_srq dsrq = {0};
        struct mlx5dv_obj o = {.qp = {qp, &dqp}, .cq = {cq, &dcq}, .srq = {srq, &dsrq}};
        r = mlx5dv_init_obj(&o, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ);
        printf("  init_obj: %s\n", err_name(r));
        if (!r) {
            printf("  qp rings in allocated memory: sq %s rq %s\n",
                   in_chunk(dqp.sq.buf, (size_t)dqp.sq.wqe_cnt * dqp.sq.stride) ? "yes" : "no",
                   in_chunk(dqp.rq.buf, (size_t)dqp.rq.wqe_cnt * dqp.rq.stride) ? "yes" : "no");
            printf("  cq ring in allocated memory: %s\n",
                   in_chunk(dcq.buf, (size_t)dcq.cqe_cnt * dcq.cqe_size) ? "yes" : "no");
            printf("  srq ring in allocated memory: %s\n", in_chunk(dsrq.buf, dsrq.stride) ? "yes" : "no");
            printf("  doorbell records in allocated memory: qp %s cq %s srq %s\n",
                   in_chunk(dqp.dbrec, 8) ? "yes" : "no", in_chunk(dcq.dbrec, 8) ? "yes" : "no",
                   in_chunk(dsrq.dbrec, 4) ? "yes" : "no");
        }
    }
    if (qp)
        ibv_destroy_qp(qp);
    if (srq)
        ibv_destroy_srq(srq);
    if (cq)
        ibv_destroy_cq(cq);
    if (pd)
        ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    printf("  after close: every allocation freed %s, foreign frees %d\n", allocs == frees ? "yes" : "no", bad_frees);
}

/* -------------------------------------------------------- parent domain */

/* The parent domain's allocator: one counter per resource type (QP, DBR,
 * SRQ, CQ and anything else), memory tracked like the context's
 * allocators'. `pd_use_default` hands the choice back to the provider. */
static int pd_allocs[5], pd_frees, pd_bad_frees, pd_bad_ctx, pd_use_default;

static int res_index(uint64_t type) {
    if (type == MLX5DV_RES_TYPE_QP)
        return 0;
    if (type == MLX5DV_RES_TYPE_DBR)
        return 1;
    if (type == MLX5DV_RES_TYPE_SRQ)
        return 2;
    if (type == MLX5DV_RES_TYPE_CQ)
        return 3;
    return 4;
}

static void* pd_alloc(struct ibv_pd* pd, void* pd_context, size_t size, size_t alignment, uint64_t type) {
    (void)pd;
    if (pd_context != &priv_tag)
        pd_bad_ctx++;
    pd_allocs[res_index(type)]++;
    if (pd_use_default)
        return IBV_ALLOCATOR_USE_DEFAULT;
    if (alignment < sizeof(void*))
        alignment = sizeof(void*);
    void* p = NULL;
    if (posix_memalign(&p, alignment, size))
        return NULL;
    for (int i = 0; i < MAX_CHUNKS; i++) {
        if (!chunks[i].p) {
            chunks[i].p = p;
            chunks[i].len = size;
            return p;
        }
    }
    free(p);
    return NULL;
}

static void pd_free(struct ibv_pd* pd, void* pd_context, void* ptr, uint64_t type) {
    (void)pd;
    (void)pd_context;
    (void)type;
    for (int i = 0; i < MAX_CHUNKS; i++) {
        if (chunks[i].p == ptr) {
            chunks[i].p = NULL;
            pd_frees++;
            free(ptr);
            return;
        }
    }
    pd_bad_frees++;
}

/* Queues on a parent domain: the bad attributes, which memory the
 * allocator is asked for (and that the rings are in it), what a parent
 * domain in use and its protection domain answer to ibv_dealloc_pd. */
static void parent_domain(struct ibv_context* ctx, int use_default) {
    printf("parent domain (%s)\n", use_default ? "allocator answers USE_DEFAULT" : "allocator gives memory");
    memset(pd_allocs, 0, sizeof(pd_allocs));
    pd_frees = pd_bad_frees = pd_bad_ctx = 0;
    pd_use_default = use_default;
    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    if (!pd)
        return;
    struct ibv_parent_domain_init_attr a = {.pd = NULL};
    errno = 0;
    struct ibv_pd* bad = ibv_alloc_parent_domain(ctx, &a);
    printf("  no protection domain: %s\n", bad ? "ok" : err_name(errno));
    if (bad)
        ibv_dealloc_pd(bad);
    a.pd = pd;
    a.comp_mask = 1u << 5;
    errno = 0;
    bad = ibv_alloc_parent_domain(ctx, &a);
    printf("  unknown comp_mask: %s\n", bad ? "ok" : err_name(errno));
    if (bad)
        ibv_dealloc_pd(bad);
    a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
    a.alloc = pd_alloc;
    errno = 0;
    bad = ibv_alloc_parent_domain(ctx, &a);
    printf("  allocator without free: %s\n", bad ? "ok" : err_name(errno));
    if (bad)
        ibv_dealloc_pd(bad);
    a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
    a.free = pd_free;
    a.pd_context = &priv_tag;
    errno = 0;
    struct ibv_pd* ppd = ibv_alloc_parent_domain(ctx, &a);
    printf("  with allocators: %s\n", ppd ? "ok" : err_name(errno));
    if (!ppd)
        goto out;
    printf("  protection domain while the parent lives: dealloc %s\n", err_name(ibv_dealloc_pd(pd)));
    struct ibv_cq_init_attr_ex ca = {
        .cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS, .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD, .parent_domain = pd};
    errno = 0;
    struct ibv_cq_ex* cqx = ibv_create_cq_ex(ctx, &ca);
    printf("  create_cq_ex with a plain PD as parent domain: %s\n", cqx ? "ok" : err_name(errno));
    if (cqx)
        ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
    ca.parent_domain = ppd;
    cqx = ibv_create_cq_ex(ctx, &ca);
    struct ibv_cq* cq = cqx ? ibv_cq_ex_to_cq(cqx) : NULL;
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
    struct ibv_srq* srq = ibv_create_srq(ppd, &sa);
    struct ibv_qp_init_attr qa = {.send_cq = cq,
                                  .recv_cq = cq,
                                  .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
    struct ibv_qp* qp = cq ? ibv_create_qp(ppd, &qa) : NULL;
    printf("  on the parent domain: cq %s srq %s qp %s\n", cq ? "ok" : "failed", srq ? "ok" : "failed",
           qp ? "ok" : "failed");
    printf("  allocator asked: qp %d dbr %d srq %d cq %d other %d, wrong context %d\n", pd_allocs[0], pd_allocs[1],
           pd_allocs[2], pd_allocs[3], pd_allocs[4], pd_bad_ctx);
    if (cq && srq && qp) {
        struct mlx5dv_qp dqp = {0};
        struct mlx5dv_cq dcq = {0};
        struct mlx5dv_srq dsrq = {0};
        struct mlx5dv_pd dpd = {0}, dppd = {0};
        struct mlx5dv_obj o = {.qp = {qp, &dqp}, .cq = {cq, &dcq}, .srq = {srq, &dsrq}, .pd = {ppd, &dppd}};
        int r = mlx5dv_init_obj(&o, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ | MLX5DV_OBJ_PD);
        struct mlx5dv_obj op = {.pd = {pd, &dpd}};
        if (!r)
            r = mlx5dv_init_obj(&op, MLX5DV_OBJ_PD);
        printf("  init_obj: %s, pdn of the protection domain %s\n", err_name(r), dpd.pdn == dppd.pdn ? "yes" : "no");
        if (!r)
            printf("  rings in the allocator's memory: sq %s rq %s cq %s srq %s, records: qp %s cq %s srq %s\n",
                   in_chunk(dqp.sq.buf, (size_t)dqp.sq.wqe_cnt * dqp.sq.stride) ? "yes" : "no",
                   in_chunk(dqp.rq.buf, (size_t)dqp.rq.wqe_cnt * dqp.rq.stride) ? "yes" : "no",
                   in_chunk(dcq.buf, (size_t)dcq.cqe_cnt * dcq.cqe_size) ? "yes" : "no",
                   in_chunk(dsrq.buf, dsrq.stride) ? "yes" : "no", in_chunk(dqp.dbrec, 8) ? "yes" : "no",
                   in_chunk(dcq.dbrec, 8) ? "yes" : "no", in_chunk(dsrq.dbrec, 4) ? "yes" : "no");
        struct ibv_mr* mr = ibv_reg_mr(ppd, chunks, sizeof(chunks), IBV_ACCESS_LOCAL_WRITE);
        printf("  reg_mr on the parent domain: %s\n", mr ? "ok" : err_name(errno));
        if (mr)
            ibv_dereg_mr(mr);
    }
    if (qp) {
        errno = 0;
        int r = ibv_dealloc_pd(ppd);
        printf("  parent domain with a QP on it: dealloc %s\n", err_name(r));
        ibv_destroy_qp(qp);
    }
    if (srq)
        ibv_destroy_srq(srq);
    if (cq)
        ibv_destroy_cq(cq);
    printf("  freed: %d, foreign frees %d\n", pd_frees, pd_bad_frees);
    printf("  parent domain: dealloc %s\n", err_name(ibv_dealloc_pd(ppd)));
out:
    printf("  protection domain: dealloc %s\n", err_name(ibv_dealloc_pd(pd)));
}

/* ---------------------------------------------------------- clock info */

static void clock_info(struct ibv_context* ctx) {
    struct mlx5dv_clock_info ci;
    memset(&ci, 0, sizeof(ci));
    int r = mlx5dv_get_clock_info(ctx, &ci);
    printf("get_clock_info: %s\n", err_name(r));
    if (r)
        return;
    printf("  mult %u shift %u mask 0x%llx\n", ci.mult, ci.shift, (unsigned long long)ci.mask);
    /* The device clock read now, converted, lands near the system's
     * monotonic time (the emulator's device clock counts it). */
    struct mlx5dv_context dv = {.comp_mask = MLX5DV_CONTEXT_MASK_HCA_CORE_CLOCK};
    if (mlx5dv_query_device(ctx, &dv) || !(dv.comp_mask & MLX5DV_CONTEXT_MASK_HCA_CORE_CLOCK)) {
        printf("  no core clock to convert\n");
        return;
    }
    const volatile uint32_t* clk = dv.hca_core_clock;
    uint32_t hi, lo;
    do {
        hi = be32toh(clk[0]);
        lo = be32toh(clk[1]);
    } while (hi != be32toh(clk[0]));
    uint64_t cycles = ((uint64_t)hi << 32) | lo;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    int64_t dev = (int64_t)mlx5dv_ts_to_ns(&ci, cycles);
    int64_t d = now - dev;
    printf("  core clock converted: within a second of CLOCK_MONOTONIC %s\n",
           d > -1000000000 && d < 1000000000 ? "yes" : "no");

    /* ibv_query_rt_values_ex reads the same clock. */
    struct ibv_values_ex v = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
    r = ibv_query_rt_values_ex(ctx, &v);
    printf("query_rt_values_ex raw clock: %s comp_mask 0x%x\n", err_name(r), v.comp_mask);
    if (!r && (v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK)) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        d = now - (int64_t)mlx5dv_ts_to_ns(&ci, (uint64_t)v.raw_clock.tv_nsec);
        printf("  tv_sec %lld, converted within a second of CLOCK_MONOTONIC %s\n", (long long)v.raw_clock.tv_sec,
               d > -1000000000 && d < 1000000000 ? "yes" : "no");
    }
    struct ibv_values_ex none = {.comp_mask = 0};
    r = ibv_query_rt_values_ex(ctx, &none);
    printf("query_rt_values_ex nothing asked: %s comp_mask 0x%x\n", err_name(r), none.comp_mask);
    struct ibv_values_ex unknown = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK | (1u << 7)};
    r = ibv_query_rt_values_ex(ctx, &unknown);
    printf("query_rt_values_ex unknown part: %s\n", err_name(r));
}

/* ------------------------------------------------------------- objects */

struct env {
    struct ibv_context* ctx;
    struct ibv_pd* pd;
    struct ibv_mr* mr;
    char* buf;
    int eth;
    uint16_t lid;
    union ibv_gid gid;
};

static void show_qp(const char* what, struct ibv_qp* qp) {
    struct mlx5dv_qp d;
    memset(&d, 0, sizeof(d));
    d.comp_mask = MLX5DV_QP_MASK_UAR_MMAP_OFFSET | MLX5DV_QP_MASK_RAW_QP_HANDLES;
    struct mlx5dv_obj o = {.qp = {qp, &d}};
    int r = mlx5dv_init_obj(&o, MLX5DV_OBJ_QP);
    printf("  %-22s %s", what, err_name(r));
    if (!r) {
        long sq_off = d.sq.wqe_cnt ? (long)((char*)d.sq.buf - (char*)d.rq.buf) : -1;
        printf(" sq %u x %u rq %u x %u sq at rq+%ld bf +0x%lx size %u comp_mask 0x%llx page %llu"
               " raw %u/%u/%u/%u dbrec %s",
               d.sq.wqe_cnt, d.sq.stride, d.rq.wqe_cnt, d.rq.stride, sq_off,
               (unsigned long)((uintptr_t)d.bf.reg & 0xfff), d.bf.size, (unsigned long long)d.comp_mask,
               (unsigned long long)(d.uar_mmap_offset / 4096), d.tirn, d.tisn, d.rqn, d.sqn,
               ((uintptr_t)d.dbrec & 7) ? "unaligned" : "aligned");
    }
    printf("\n");
}

static struct ibv_qp* qp_of(struct env* e, enum ibv_qp_type t, struct ibv_cq* cq, struct ibv_srq* srq, uint32_t swr,
                            uint32_t rwr, uint32_t rsge) {
    struct ibv_qp_init_attr a = {
        .send_cq = cq,
        .recv_cq = cq,
        .srq = srq,
        .qp_type = t,
        .cap = {.max_send_wr = swr, .max_recv_wr = rwr, .max_send_sge = 1, .max_recv_sge = rsge}};
    return ibv_create_qp(e->pd, &a);
}

static void objects(struct env* e) {
    printf("init_obj\n");
    struct mlx5dv_obj none = {{0}};
    printf("  no object type         %s\n", err_name(mlx5dv_init_obj(&none, 0)));

    struct ibv_cq* cq = ibv_create_cq(e->ctx, 100, NULL, NULL, 0);
    struct mlx5dv_cq dcq = {0};
    struct mlx5dv_obj o = {.cq = {cq, &dcq}};
    int r = mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ);
    printf("  cq of 100              %s cqe %u x %u comp_mask 0x%llx uar page %s cqn %s\n", err_name(r), dcq.cqe_cnt,
           dcq.cqe_size, (unsigned long long)dcq.comp_mask, ((uintptr_t)dcq.cq_uar & 0xfff) ? "unaligned" : "aligned",
           dcq.cqn ? "set" : "0");
    /* Binaries linked against MLX5_1.0 get where the address is kept. */
    int (*v10)(struct mlx5dv_obj*, uint64_t) =
        (int (*)(struct mlx5dv_obj*, uint64_t))dlvsym(RTLD_DEFAULT, "mlx5dv_init_obj", "MLX5_1.0");
    if (v10) {
        struct mlx5dv_cq old = {0};
        struct mlx5dv_obj oo = {.cq = {cq, &old}};
        r = v10(&oo, MLX5DV_OBJ_CQ);
        printf("  cq, MLX5_1.0 version   %s cq_uar points at the UAR address %s\n", err_name(r),
               !r && *(void**)old.cq_uar == dcq.cq_uar ? "yes" : "no");
    } else {
        printf("  cq, MLX5_1.0 version   missing\n");
    }

    show_qp("rc 16/16", qp_of(e, IBV_QPT_RC, cq, NULL, 16, 16, 2));
    show_qp("rc 100/3 sge 4", qp_of(e, IBV_QPT_RC, cq, NULL, 100, 3, 4));
    show_qp("rc no send queue", qp_of(e, IBV_QPT_RC, cq, NULL, 0, 8, 1));
    show_qp("uc 8/8", qp_of(e, IBV_QPT_UC, cq, NULL, 8, 8, 1));
    show_qp("ud 8/8", qp_of(e, IBV_QPT_UD, cq, NULL, 8, 8, 1));
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 20, .max_sge = 3}};
    struct ibv_srq* srq = ibv_create_srq(e->pd, &sa);
    show_qp("rc on an srq", qp_of(e, IBV_QPT_RC, cq, srq, 8, 0, 0));
    struct mlx5dv_srq ds = {.comp_mask = MLX5DV_SRQ_MASK_SRQN};
    o = (struct mlx5dv_obj){.srq = {srq, &ds}};
    r = mlx5dv_init_obj(&o, MLX5DV_OBJ_SRQ);
    printf("  srq 20 sge 3           %s stride %u head %u tail %u comp_mask 0x%llx srqn %s\n", err_name(r), ds.stride,
           ds.head, ds.tail, (unsigned long long)ds.comp_mask, ds.srqn ? "set" : "0");

    struct ibv_ah_attr aa = {.dlid = 0x1234, .sl = 3, .src_path_bits = 1, .port_num = 1};
    if (e->eth) {
        aa.is_global = 1;
        aa.grh.dgid = e->gid;
        aa.grh.hop_limit = 64;
        aa.grh.traffic_class = 0x20;
        aa.grh.flow_label = 0x12345;
    }
    struct ibv_ah* ah = ibv_create_ah(e->pd, &aa);
    struct mlx5dv_ah dah = {0};
    o = (struct mlx5dv_obj){.ah = {ah, &dah}};
    r = ah ? mlx5dv_init_obj(&o, MLX5DV_OBJ_AH) : errno;
    printf("  ah                     %s comp_mask 0x%llx av", err_name(r), (unsigned long long)dah.comp_mask);
    if (!r) {
        const unsigned char* p = (const unsigned char*)dah.av;
        for (size_t i = 0; i < sizeof(*dah.av); i++)
            printf("%s%02x", i % 4 ? "" : " ", p[i]);
    }
    printf("\n");
    struct mlx5dv_pd dpd = {0};
    o = (struct mlx5dv_obj){.pd = {e->pd, &dpd}};
    r = mlx5dv_init_obj(&o, MLX5DV_OBJ_PD);
    printf("  pd                     %s comp_mask 0x%llx pdn %s\n", err_name(r), (unsigned long long)dpd.comp_mask,
           dpd.pdn ? "set" : "0");
    /* Several at once; the QPs above stay until the context closes. */
    struct mlx5dv_cq c2 = {0};
    struct mlx5dv_pd p2 = {0};
    o = (struct mlx5dv_obj){.cq = {cq, &c2}, .pd = {e->pd, &p2}};
    r = mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ | MLX5DV_OBJ_PD);
    printf("  cq and pd together     %s same answers %s\n", err_name(r),
           !r && c2.cqn == dcq.cqn && p2.pdn == dpd.pdn ? "yes" : "no");
    if (ah)
        ibv_destroy_ah(ah);
}

/* ------------------------------------------------ mlx5 creation attrs */

static void dv_cq_case(struct env* e, const char* what, uint64_t mask, uint16_t cqe_size, uint64_t flags, uint8_t fmt) {
    struct ibv_cq_init_attr_ex a = {.cqe = 30, .wc_flags = IBV_WC_STANDARD_FLAGS};
    struct mlx5dv_cq_init_attr d = {
        .comp_mask = mask, .cqe_comp_res_format = fmt, .flags = (uint32_t)flags, .cqe_size = cqe_size};
    errno = 0;
    struct ibv_cq_ex* cq = mlx5dv_create_cq(e->ctx, &a, &d);
    printf("  create_cq %-28s %s", what, cq ? "ok" : err_name(errno));
    if (cq) {
        struct mlx5dv_cq dcq = {0};
        struct mlx5dv_obj o = {.cq = {ibv_cq_ex_to_cq(cq), &dcq}};
        if (!mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ))
            printf(" cqe %u x %u", dcq.cqe_cnt, dcq.cqe_size);
        ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
    }
    printf("\n");
}

static void dv_qp_case(struct env* e, struct ibv_cq* cq, const char* what, enum ibv_qp_type t, uint64_t mask,
                       uint32_t flags, int with_ops) {
    struct ibv_qp_init_attr_ex a = {.send_cq = cq,
                                    .recv_cq = cq,
                                    .qp_type = t,
                                    .comp_mask = IBV_QP_INIT_ATTR_PD,
                                    .pd = e->pd,
                                    .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
    if (with_ops) {
        a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE;
    }
    struct mlx5dv_qp_init_attr d = {.comp_mask = mask, .create_flags = flags};
    errno = 0;
    struct ibv_qp* qp = mlx5dv_create_qp(e->ctx, &a, &d);
    printf("  create_qp %-34s %s", what, qp ? "ok" : err_name(errno));
    if (qp) {
        printf(" send %u recv %u", a.cap.max_send_wr, a.cap.max_recv_wr);
        if (with_ops) {
            struct mlx5dv_qp_ex* x = mlx5dv_qp_ex_from_ibv_qp_ex(ibv_qp_to_qp_ex(qp));
            printf(" dv_qp_ex %s", x ? "set" : "NULL");
        }
        ibv_destroy_qp(qp);
    }
    printf("\n");
}

/* mlx5 send operations asked at creation: which the provider takes. */
static void raw_wqe_case(struct env* e, struct ibv_cq* cq, const char* what, uint64_t ops, int with_wr_api) {
    struct ibv_qp_init_attr_ex a = {.send_cq = cq,
                                    .recv_cq = cq,
                                    .qp_type = IBV_QPT_RC,
                                    .comp_mask = IBV_QP_INIT_ATTR_PD,
                                    .pd = e->pd,
                                    .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
    if (with_wr_api) {
        a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        a.send_ops_flags = IBV_QP_EX_WITH_SEND;
    }
    struct mlx5dv_qp_init_attr d = {.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS, .send_ops_flags = ops};
    errno = 0;
    struct ibv_qp* qp = mlx5dv_create_qp(e->ctx, &a, &d);
    printf("  create_qp %-34s %s", what, qp ? "ok" : err_name(errno));
    if (qp) {
        /* Only a QP of the ibv_wr_* interface has an ibv_qp_ex to ask. */
        if (with_wr_api) {
            struct mlx5dv_qp_ex* x = mlx5dv_qp_ex_from_ibv_qp_ex(ibv_qp_to_qp_ex(qp));
            printf(" wr_raw_wqe %s", x && x->wr_raw_wqe ? "set" : "NULL");
        }
        ibv_destroy_qp(qp);
    }
    printf("\n");
}

static void create_attrs(struct env* e) {
    printf("mlx5dv_create_cq\n");
    dv_cq_case(e, "no mlx5 attribute", 0, 0, 0, 0);
    dv_cq_case(e, "cqe_size 128", MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE, 128, 0, 0);
    dv_cq_case(e, "cqe_size 64", MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE, 64, 0, 0);
    dv_cq_case(e, "cqe_size 100", MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE, 100, 0, 0);
    dv_cq_case(e, "compressed (hash)", MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE, 0, 0, MLX5DV_CQE_RES_FORMAT_HASH);
    dv_cq_case(e, "padding, 128-byte CQEs", MLX5DV_CQ_INIT_ATTR_MASK_FLAGS | MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE, 128,
               MLX5DV_CQ_INIT_ATTR_FLAGS_CQE_PAD, 0);
    dv_cq_case(e, "no flag", MLX5DV_CQ_INIT_ATTR_MASK_FLAGS, 0, 0, 0);
    dv_cq_case(e, "unknown flag", MLX5DV_CQ_INIT_ATTR_MASK_FLAGS, 0, 1 << 4, 0);
    dv_cq_case(e, "unknown comp_mask", 1 << 5, 0, 0, 0);

    printf("mlx5dv_create_qp\n");
    struct ibv_cq* cq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
    const uint64_t F = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
    dv_qp_case(e, cq, "rc, no mlx5 attribute", IBV_QPT_RC, 0, 0, 0);
    dv_qp_case(e, cq, "rc, no flag", IBV_QPT_RC, F, 0, 0);
    dv_qp_case(e, cq, "rc, disable scatter to cqe", IBV_QPT_RC, F, MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE, 0);
    dv_qp_case(e, cq, "rc, allow scatter to cqe", IBV_QPT_RC, F, MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE, 0);
    dv_qp_case(e, cq, "rc, both scatter flags", IBV_QPT_RC, F,
               MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE | MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE, 0);
    dv_qp_case(e, cq, "rc, tunnel offloads", IBV_QPT_RC, F, MLX5DV_QP_CREATE_TUNNEL_OFFLOADS, 0);
    dv_qp_case(e, cq, "rc, packet based credit", IBV_QPT_RC, F, MLX5DV_QP_CREATE_PACKET_BASED_CREDIT_MODE, 0);
    dv_qp_case(e, cq, "rc, signature pipelining", IBV_QPT_RC, F, MLX5DV_QP_CREATE_SIG_PIPELINING, 0);
    dv_qp_case(e, cq, "rc, unknown flag", IBV_QPT_RC, F, 1u << 12, 0);
    dv_qp_case(e, cq, "rc, dc attributes", IBV_QPT_RC, MLX5DV_QP_INIT_ATTR_MASK_DC, 0, 0);
    dv_qp_case(e, cq, "rc, unknown comp_mask", IBV_QPT_RC, 1u << 6, 0, 0);
    dv_qp_case(e, cq, "driver type, no dc attributes", IBV_QPT_DRIVER, F, 0, 0);
    dv_qp_case(e, cq, "ud, disable scatter to cqe", IBV_QPT_UD, F, MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE, 0);
    dv_qp_case(e, cq, "rc, wr api, no mlx5 op", IBV_QPT_RC, MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS, 0, 1);
    raw_wqe_case(e, cq, "rc, wr api, raw wqe", MLX5DV_QP_EX_WITH_RAW_WQE, 1);
    raw_wqe_case(e, cq, "rc, raw wqe without the wr api", MLX5DV_QP_EX_WITH_RAW_WQE, 0);
    raw_wqe_case(e, cq, "rc, wr api, memcpy op", MLX5DV_QP_EX_WITH_MEMCPY, 1);
    raw_wqe_case(e, cq, "rc, wr api, unknown mlx5 op", 1ull << 20, 1);
    ibv_destroy_cq(cq);
}

/* ----------------------------------- traffic through the rings themselves */

struct raw_qp {
    struct ibv_qp* qp;
    struct mlx5dv_qp d;
    uint32_t sq_pi;
    uint32_t rq_pi;
};

struct raw_cq {
    struct ibv_cq* cq;
    struct mlx5dv_cq d;
    uint32_t ci;
};

static int to_rts(struct env* e, struct ibv_qp* qp, uint32_t dest) {
    return twin_rc_to_rts(qp, dest, e->lid, &e->gid, e->eth, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) != 0;
}

/* A receive WQE of one SGE (and the end marker when the queue has room for
 * more), then the receive doorbell record. */
static void raw_post_recv(struct raw_qp* q, uint32_t lkey, void* addr, uint32_t len) {
    struct mlx5_wqe_data_seg* seg =
        (struct mlx5_wqe_data_seg*)((char*)q->d.rq.buf + (q->rq_pi & (q->d.rq.wqe_cnt - 1)) * q->d.rq.stride);
    mlx5dv_set_data_seg(seg, len, lkey, (uintptr_t)addr);
    if (q->d.rq.stride > sizeof(*seg))
        mlx5dv_set_data_seg(seg + 1, 0, MLX5_INVALID_LKEY, 0);
    q->rq_pi++;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    q->d.dbrec[MLX5_RCV_DBR] = htobe32(q->rq_pi & 0xffff);
}

/* One send WQE (SEND or RDMA WRITE, one SGE), signaled; the send doorbell
 * record, then the doorbell register with the WQE's first eight bytes. */
static void raw_post_send(struct raw_qp* q, uint8_t opcode, uint32_t lkey, void* addr, uint32_t len, uint32_t rkey,
                          uint64_t raddr) {
    char* wqe = (char*)q->d.sq.buf + (q->sq_pi & (q->d.sq.wqe_cnt - 1)) * q->d.sq.stride;
    memset(wqe, 0, 64);
    struct mlx5_wqe_ctrl_seg* ctrl = (struct mlx5_wqe_ctrl_seg*)wqe;
    char* seg = wqe + sizeof(*ctrl);
    uint8_t ds = 1;
    if (opcode == MLX5_OPCODE_RDMA_WRITE) {
        struct mlx5_wqe_raddr_seg* r = (struct mlx5_wqe_raddr_seg*)seg;
        r->raddr = htobe64(raddr);
        r->rkey = htobe32(rkey);
        seg += sizeof(*r);
        ds++;
    }
    mlx5dv_set_data_seg((struct mlx5_wqe_data_seg*)seg, len, lkey, (uintptr_t)addr);
    ds++;
    mlx5dv_set_ctrl_seg(ctrl, (uint16_t)q->sq_pi, opcode, 0, q->qp->qp_num, MLX5_WQE_CTRL_CQ_UPDATE, ds, 0, 0);
    q->sq_pi++;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    q->d.dbrec[MLX5_SND_DBR] = htobe32(q->sq_pi & 0xffff);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    *(volatile uint64_t*)q->d.bf.reg = *(uint64_t*)ctrl;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* The CQE64 of place i (with 128-byte CQEs their second half). */
static struct mlx5_cqe64* ring_slot(struct raw_cq* c, uint32_t i) {
    char* slot = (char*)c->d.buf + (size_t)(i & (c->d.cqe_cnt - 1)) * c->d.cqe_size;
    return (struct mlx5_cqe64*)(c->d.cqe_size == 128 ? slot + 64 : slot);
}

/* Whether the CQE at the consumer index is the device's, without taking it. */
static struct mlx5_cqe64* ring_peek(struct raw_cq* c) {
    struct mlx5_cqe64* cqe = ring_slot(c, c->ci);
    uint8_t op = mlx5dv_get_cqe_opcode(cqe);
    if (op == MLX5_CQE_INVALID || mlx5dv_get_cqe_owner(cqe) != !!(c->ci & c->d.cqe_cnt))
        return NULL;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return cqe;
}

/* The next CQE the device handed over, within two seconds, or NULL. */
static struct mlx5_cqe64* raw_poll(struct raw_cq* c) {
    for (int i = 0; i < 200000; i++) {
        struct mlx5_cqe64* cqe = ring_peek(c);
        if (cqe) {
            c->ci++;
            c->d.dbrec[0] = htobe32(c->ci & 0xffffff);
            return cqe;
        }
        struct timespec ts = {0, 10000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* A receive the device put in the CQE itself (scatter-to-CQE, which the
 * QP asked for by default): copied out as the library would, the number
 * of bytes it held returned (0: the data went to the buffer). */
static uint32_t take_scattered(struct mlx5_cqe64* cqe, void* dst) {
    if (!cqe)
        return 0;
    const uint32_t len = be32toh(cqe->byte_cnt);
    switch (mlx5dv_get_cqe_format(cqe)) {
    case 1: memcpy(dst, cqe, len); return len; /* in the CQE64's first 32 bytes */
    case 2: memcpy(dst, cqe - 1, len); return len; /* in a 128-byte CQE's first half */
    default: return 0;
    }
}

static void show_cqe(const char* what, struct mlx5_cqe64* cqe, struct ibv_qp* qp) {
    if (!cqe) {
        printf("  %-22s no completion\n", what);
        return;
    }
    printf("  %-22s opcode %u wqe_counter %u byte_cnt %u qp %s\n", what, mlx5dv_get_cqe_opcode(cqe),
           be16toh(cqe->wqe_counter), be32toh(cqe->byte_cnt),
           (be32toh(cqe->sop_drop_qpn) & 0xffffff) == qp->qp_num ? "matches" : "other");
}

/* Sends through mlx5dv_wr_raw_wqe (a control segment and two data
 * segments this program wrote) mixed with ibv_wr_send on one QP whose send
 * queue holds a single WQE, so that every post wraps: the opcodes the
 * completions report (extended CQ, and ibv_poll_cq) and the data that
 * arrived. */
static void raw_wqe_traffic(struct env* e) {
    printf("mlx5dv_wr_raw_wqe traffic\n");
    struct ibv_cq_init_attr_ex ca = {.cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS};
    struct ibv_cq_ex* scq = ibv_create_cq_ex(e->ctx, &ca);
    struct ibv_cq* rcq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
    struct ibv_qp_init_attr_ex a = {.send_cq = scq ? ibv_cq_ex_to_cq(scq) : NULL,
                                    .recv_cq = scq ? ibv_cq_ex_to_cq(scq) : NULL,
                                    .qp_type = IBV_QPT_RC,
                                    .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                                    .pd = e->pd,
                                    .send_ops_flags = IBV_QP_EX_WITH_SEND,
                                    .cap = {.max_send_wr = 1, .max_recv_wr = 4, .max_send_sge = 2, .max_recv_sge = 2}};
    struct mlx5dv_qp_init_attr d = {.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS,
                                    .send_ops_flags = MLX5DV_QP_EX_WITH_RAW_WQE};
    struct ibv_qp* qp = scq && rcq ? mlx5dv_create_qp(e->ctx, &a, &d) : NULL;
    struct ibv_qp_init_attr b = {.send_cq = rcq,
                                 .recv_cq = rcq,
                                 .qp_type = IBV_QPT_RC,
                                 .cap = {.max_send_wr = 4, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1}};
    struct ibv_qp* peer = rcq ? ibv_create_qp(e->pd, &b) : NULL;
    if (!qp || !peer || to_rts(e, qp, peer->qp_num) || to_rts(e, peer, qp->qp_num)) {
        printf("  set-up failed\n");
        goto out;
    }
    struct ibv_qp_ex* qx = ibv_qp_to_qp_ex(qp);
    struct mlx5dv_qp_ex* dx = mlx5dv_qp_ex_from_ibv_qp_ex(qx);
    char* src = e->buf;
    char* dst = e->buf + 8192;
    for (int i = 0; i < 6; i++) {
        memset(src, 'a' + i, 64);
        memset(dst, 0, 64);
        struct ibv_sge r = {(uintptr_t)dst, 64, e->mr->lkey};
        struct ibv_recv_wr rw = {.wr_id = 100 + i, .sg_list = &r, .num_sge = 1}, *bad;
        ibv_post_recv(peer, &rw, &bad);
        ibv_wr_start(qx);
        qx->wr_id = i;
        qx->wr_flags = IBV_SEND_SIGNALED;
        if (i % 2) {
            ibv_wr_send(qx);
            ibv_wr_set_sge(qx, e->mr->lkey, (uintptr_t)src, 64);
        } else {
            struct {
                struct mlx5_wqe_ctrl_seg ctrl;
                struct mlx5_wqe_data_seg data[2];
            } w;
            memset(&w, 0, sizeof(w));
            w.ctrl.opmod_idx_opcode = htobe32(MLX5_OPCODE_SEND);
            w.ctrl.qpn_ds = htobe32(3 | qp->qp_num << 8);
            w.ctrl.fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE;
            mlx5dv_set_data_seg(&w.data[0], 32, e->mr->lkey, (uintptr_t)src);
            mlx5dv_set_data_seg(&w.data[1], 32, e->mr->lkey, (uintptr_t)src + 32);
            mlx5dv_wr_raw_wqe(dx, &w);
        }
        int r2 = ibv_wr_complete(qx);
        struct ibv_poll_cq_attr pa = {0};
        int got = 0, rc = ENOENT;
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        while ((rc = ibv_start_poll(scq, &pa)) == ENOENT) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (t.tv_sec - t0.tv_sec > 5)
                break;
        }
        const char* op = "-";
        if (rc == 0) {
            got = 1;
            op = ibv_wc_read_opcode(scq) == IBV_WC_DRIVER2 ? "DRIVER2"
                : ibv_wc_read_opcode(scq) == IBV_WC_SEND   ? "SEND"
                                                           : "other";
            if (scq->status)
                op = ibv_wc_status_str(scq->status);
            ibv_end_poll(scq);
        }
        struct ibv_wc wc;
        int n = 0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        while ((n = ibv_poll_cq(rcq, 1, &wc)) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (t.tv_sec - t0.tv_sec > 5)
                break;
        }
        int same = 1;
        for (int k = 0; k < 64; k++)
            same &= dst[k] == 'a' + i;
        printf("  %-14s complete %s, send completion %s %s, receive %s len %u, data %s\n",
               i % 2 ? "ibv_wr_send" : "raw wqe", err_name(r2), got ? "yes" : "no", op,
               n == 1 && !wc.status ? "ok" : "failed", n == 1 ? wc.byte_len : 0, same ? "arrived" : "wrong");
    }
out:
    if (qp)
        ibv_destroy_qp(qp);
    if (peer)
        ibv_destroy_qp(peer);
    if (scq)
        ibv_destroy_cq(ibv_cq_ex_to_cq(scq));
    if (rcq)
        ibv_destroy_cq(rcq);
}

static void raw_traffic(struct env* e) {
    printf("traffic through the rings\n");
    struct raw_cq sc = {.cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0)};
    struct raw_cq rc = {.cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0)};
    struct ibv_qp_init_attr a = {.send_cq = sc.cq,
                                 .recv_cq = rc.cq,
                                 .qp_type = IBV_QPT_RC,
                                 .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 2}};
    struct raw_qp s = {.qp = ibv_create_qp(e->pd, &a)};
    struct raw_qp r = {.qp = ibv_create_qp(e->pd, &a)};
    if (!sc.cq || !rc.cq || !s.qp || !r.qp) {
        printf("  setup failed\n");
        return;
    }
    struct mlx5dv_obj o = {.qp = {s.qp, &s.d}, .cq = {sc.cq, &sc.d}};
    int ret = mlx5dv_init_obj(&o, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ);
    o = (struct mlx5dv_obj){.qp = {r.qp, &r.d}, .cq = {rc.cq, &rc.d}};
    ret = ret ? ret : mlx5dv_init_obj(&o, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ);
    if (ret || to_rts(e, s.qp, r.qp->qp_num) || to_rts(e, r.qp, s.qp->qp_num)) {
        printf("  set-up: %s\n", err_name(ret ? ret : errno));
        return;
    }
    char* src = e->buf;
    char* dst = e->buf + 8192;
    for (int round = 0; round < 12; round++) {
        /* More rounds than WQEs in the rings: both wrap. */
        memset(dst, 0, 256);
        snprintf(src, 256, "round %d through our own WQEs", round);
        uint32_t len = (uint32_t)strlen(src) + 1;
        raw_post_recv(&r, e->mr->lkey, dst, 256);
        raw_post_send(&s, MLX5_OPCODE_SEND, e->mr->lkey, src, len, 0, 0);
        struct mlx5_cqe64* c1 = raw_poll(&sc);
        struct mlx5_cqe64* c2 = raw_poll(&rc);
        const uint32_t in_cqe = take_scattered(c2, dst);
        if (round % 5 == 0 || round == 11) {
            char what[32];
            snprintf(what, sizeof(what), "send %d, requester", round);
            show_cqe(what, c1, s.qp);
            snprintf(what, sizeof(what), "send %d, responder", round);
            show_cqe(what, c2, r.qp);
            printf("  %-22s data %s%s\n", "", strcmp(dst, src) ? "differs" : "arrived", in_cqe ? " (in the CQE)" : "");
        } else if (!c1 || !c2 || strcmp(dst, src)) {
            printf("  send %d: lost\n", round);
        }
    }
    strcpy(src, "written by an RDMA WRITE of our own");
    memset(dst, 0, 256);
    raw_post_send(&s, MLX5_OPCODE_RDMA_WRITE, e->mr->lkey, src, 64, e->mr->rkey, (uintptr_t)dst);
    show_cqe("rdma write, requester", raw_poll(&sc), s.qp);
    printf("  %-22s data %s\n", "", strcmp(dst, src) ? "differs" : "arrived");
    ibv_destroy_qp(s.qp);
    ibv_destroy_qp(r.qp);
    ibv_destroy_cq(sc.cq);
    ibv_destroy_cq(rc.cq);
}

/* ---------------------------------------------------- CQE compression */

/* A burst of sends to one QP whose receive CQ was created with
 * compression (mlx5dv_create_cq): the device may write the completions as
 * a session, a title CQE (format 3, the session's length as its byte
 * count) followed by mini-CQE arrays. This program reads the ring itself
 * and rebuilds each CQE from the title and its mini-CQE, as a DPDK- or
 * UCX-style consumer does; with DV_PATH_ZIP_POLL=1 it polls the same CQ
 * through ibv_poll_cq and ibv_start_poll instead (our library rebuilds
 * the sessions; the reference's reads no mini-CQEs), printing the same
 * lines. Session boundaries depend on the device's timing: only whether
 * one was seen, and every completion, is printed. */
struct zip_cq {
    struct raw_cq r;
    struct mlx5_cqe64 title;
    uint32_t left, pos, first;
    int sessions;
};

/* How many completions the device has written from the consumer index
 * on: plain CQEs count one, a session's title its length. */
static uint32_t zip_ready(struct raw_cq* c) {
    uint32_t n = 0;
    const uint32_t ci = c->ci;
    while (n < c->d.cqe_cnt) {
        c->ci = ci + n;
        struct mlx5_cqe64* cqe = ring_peek(c);
        if (!cqe)
            break;
        n += mlx5dv_get_cqe_format(cqe) == 3 ? be32toh(cqe->byte_cnt) : 1;
    }
    c->ci = ci;
    return n;
}

/* The next completion rebuilt into *out (0), or 1 when none came within
 * two seconds. A session's places are marked invalid once it is read, so
 * that the next pass of the ring does not take them for new CQEs. */
static int zip_next(struct zip_cq* z, struct mlx5_cqe64* out) {
    if (!z->left) {
        struct mlx5_cqe64* cqe = NULL;
        for (int i = 0; i < 200000 && !(cqe = ring_peek(&z->r)); i++) {
            struct timespec ts = {0, 10000};
            nanosleep(&ts, NULL);
        }
        if (!cqe)
            return 1;
        if (mlx5dv_get_cqe_format(cqe) != 3) {
            *out = *cqe;
            z->r.ci++;
            z->r.d.dbrec[0] = htobe32(z->r.ci & 0xffffff);
            return 0;
        }
        z->title = *cqe;
        z->left = be32toh(cqe->byte_cnt);
        z->pos = 0;
        z->first = z->r.ci;
        z->sessions++;
    }
    const uint8_t* arr = (const uint8_t*)ring_slot(&z->r, z->first + 1 + z->pos / 8);
    uint32_t bytes;
    memcpy(&bytes, arr + (z->pos % 8) * 8 + 4, 4);
    *out = z->title;
    out->byte_cnt = bytes;
    out->wqe_counter = htobe16((uint16_t)(be16toh(z->title.wqe_counter) + z->pos));
    out->op_own = (uint8_t)(z->title.op_own & 0xf0);
    z->pos++;
    if (--z->left == 0) {
        for (uint32_t i = 0; i < z->pos; i++)
            ring_slot(&z->r, z->first + i)->op_own = MLX5_CQE_INVALID << 4;
        z->r.ci += z->pos;
        z->r.d.dbrec[0] = htobe32(z->r.ci & 0xffffff);
    }
    return 0;
}

/* shared: the compressed CQ is the sender's send CQ too, so that the
 * sender's completion (the last send is signaled) comes while the
 * receives' session is open; it is skipped where it is met. */
static void zip_case(struct env* e, const char* what, enum ibv_qp_type t, uint16_t cqe_size, uint8_t fmt, int mode,
                     int shared) {
    const int n = 20, bursts = 3;
    struct ibv_cq_init_attr_ex ca = {.cqe = 31, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM};
    struct mlx5dv_cq_init_attr da = {.comp_mask =
                                         MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE | MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE,
                                     .cqe_comp_res_format = fmt,
                                     .cqe_size = cqe_size};
    struct ibv_cq_ex* rcq = mlx5dv_create_cq(e->ctx, &ca, &da);
    struct ibv_cq* scq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
    struct ibv_ah* ah = NULL;
    struct ibv_qp_init_attr a = {.send_cq = shared && rcq ? ibv_cq_ex_to_cq(rcq) : scq,
                                 .recv_cq = rcq ? ibv_cq_ex_to_cq(rcq) : NULL,
                                 .qp_type = t,
                                 .cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1}};
    struct ibv_qp* s = rcq ? ibv_create_qp(e->pd, &a) : NULL;
    struct ibv_qp* r = s ? ibv_create_qp(e->pd, &a) : NULL;
    printf("  %s: %s\n", what, r ? "created" : err_name(errno));
    if (!r)
        goto out;
    struct zip_cq z = {.r = {.cq = ibv_cq_ex_to_cq(rcq)}};
    struct mlx5dv_obj o = {.cq = {z.r.cq, &z.r.d}};
    int ret = mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ);
    if (t == IBV_QPT_UD) {
        struct ibv_qp_attr qa = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111};
        ret = ret ? ret : ibv_modify_qp(s, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
        ret = ret ? ret : ibv_modify_qp(r, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
        qa.qp_state = IBV_QPS_RTR;
        ret = ret ? ret : ibv_modify_qp(s, &qa, IBV_QP_STATE);
        ret = ret ? ret : ibv_modify_qp(r, &qa, IBV_QP_STATE);
        qa.qp_state = IBV_QPS_RTS;
        ret = ret ? ret : ibv_modify_qp(s, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN);
        ret = ret ? ret : ibv_modify_qp(r, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN);
        struct ibv_ah_attr aa = {.dlid = e->lid, .port_num = 1};
        if (e->eth) {
            aa.is_global = 1;
            aa.grh.dgid = e->gid;
            aa.grh.hop_limit = 1;
        }
        ah = ret ? NULL : ibv_create_ah(e->pd, &aa);
        if (!ah)
            ret = ret ? ret : errno;
    } else {
        ret = ret ? ret : to_rts(e, s, r->qp_num) || to_rts(e, r, s->qp_num);
    }
    if (ret) {
        printf("    set-up: %s\n", err_name(ret));
        goto out;
    }
    /* Three bursts pass the CQ's 32 places; the receive queue (64) holds
     * them all, as a ring read by the program does not retire receives in
     * the library. UD receives start with the 40-byte GRH area. */
    const uint32_t grh = t == IBV_QPT_UD ? 40 : 0;
    char* src = e->buf + 16384;
    char* dst = e->buf + 32768;
    int seen = 0, bad = 0, session_at_resize = 0;
    /* Polled through the library, one burst more: the CQ resized while its
     * completions, a session among them, wait unread. */
    const int last = mode && !shared ? bursts + 1 : bursts;
    for (int b = 0; b < last; b++) {
        if (b == bursts) {
            printf("    %d bursts of %d: %s, compressed session seen: %s\n", bursts, n,
                   bad ? "WRONG" : "every receive in order", seen ? "yes" : "no");
            bad = 0;
        }
        struct ibv_recv_wr rw[20], *rbad;
        struct ibv_send_wr sw[20], *sbad;
        struct ibv_sge rs[20], ss[20];
        memset(dst, 0, 20 * 512);
        for (int i = 0; i < n; i++) {
            const uint32_t len = 100 + (uint32_t)(b * n + i); /* past what scatter-to-CQE takes */
            memset(src + i * 512, 'a' + (b * n + i) % 26, len);
            rs[i] = (struct ibv_sge){(uintptr_t)(dst + i * 512), 512, e->mr->lkey};
            rw[i] = (struct ibv_recv_wr){
                .wr_id = (uint64_t)i, .next = i + 1 < n ? &rw[i + 1] : NULL, .sg_list = &rs[i], .num_sge = 1};
            ss[i] = (struct ibv_sge){(uintptr_t)(src + i * 512), len, e->mr->lkey};
            sw[i] = (struct ibv_send_wr){.wr_id = (uint64_t)i,
                                         .next = i + 1 < n ? &sw[i + 1] : NULL,
                                         .sg_list = &ss[i],
                                         .num_sge = 1,
                                         .opcode = IBV_WR_SEND,
                                         .send_flags = i + 1 == n ? IBV_SEND_SIGNALED : 0};
            if (ah) {
                sw[i].wr.ud.ah = ah;
                sw[i].wr.ud.remote_qpn = r->qp_num;
                sw[i].wr.ud.remote_qkey = 0x11111111;
            }
        }
        if (ibv_post_recv(r, rw, &rbad) || ibv_post_send(s, sw, &sbad)) {
            printf("    burst %d: post failed\n", b);
            break;
        }
        struct ibv_wc swc = {.status = IBV_WC_SUCCESS};
        int got = shared; /* a shared CQ's sender completion is met below */
        for (int i = 0; i < 200000 && !got && !(got = ibv_poll_cq(scq, 1, &swc)); i++) {
            struct timespec ts = {0, 10000};
            nanosleep(&ts, NULL);
        }
        if (got != 1 || swc.status) {
            printf("    burst %d: send completion %s\n", b, got == 1 ? ibv_wc_status_str(swc.status) : "missing");
            break;
        }
        /* the receives: in the ring, first whether as a session */
        for (int i = 0; i < 200000 && !ring_peek(&z.r); i++) {
            struct timespec ts = {0, 10000};
            nanosleep(&ts, NULL);
        }
        struct mlx5_cqe64* head = ring_peek(&z.r);
        /* before the resize, the whole burst in (a UD sender's completion
         * does not say the receives are) */
        for (int i = 0; b == bursts && i < 200000 && zip_ready(&z.r) < (uint32_t)n; i++) {
            struct timespec ts = {0, 10000};
            nanosleep(&ts, NULL);
        }
        const int session = head && mlx5dv_get_cqe_format(head) == 3;
        if (b < bursts) {
            seen += session;
        } else if ((session_at_resize = session), ibv_resize_cq(z.r.cq, 127)) {
            printf("    resize_cq: %s\n", err_name(errno));
            break;
        }
        int in_poll = 0;
        for (int i = 0; i < n; i++) {
            uint32_t idx, bytes, qpn, status = 0;
            if (mode == 0) {
                struct mlx5_cqe64 c;
                if (zip_next(&z, &c)) {
                    printf("    burst %d recv %d: no completion\n", b, i);
                    bad++;
                    break;
                }
                if (mlx5dv_get_cqe_opcode(&c) == MLX5_CQE_REQ) {
                    i--;
                    continue;
                }
                idx = be16toh(c.wqe_counter) & 63;
                bytes = be32toh(c.byte_cnt);
                qpn = be32toh(c.sop_drop_qpn) & 0xffffff;
                status = mlx5dv_get_cqe_opcode(&c) == MLX5_CQE_RESP_SEND ? 0 : 99;
            } else if (mode == 1) {
                struct ibv_wc wc;
                int pr = 0;
                for (int w = 0; w < 200000 && !(pr = ibv_poll_cq(z.r.cq, 1, &wc)); w++) {
                    struct timespec ts = {0, 10000};
                    nanosleep(&ts, NULL);
                }
                if (pr != 1) {
                    printf("    burst %d recv %d: %s\n", b, i, pr ? "poll error" : "no completion");
                    bad++;
                    break;
                }
                z.r.ci++; /* where the next peek looks */
                if (wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND) {
                    i--;
                    continue;
                }
                idx = (uint32_t)(wc.wr_id + (uint64_t)b * n) & 63;
                bytes = wc.byte_len;
                qpn = wc.qp_num;
                status = wc.status || wc.opcode != IBV_WC_RECV ? 99 : 0;
            } else {
                /* what has not come yet ends the poll; a new one waits */
                struct ibv_poll_cq_attr pa = {0};
                int pr = in_poll ? ibv_next_poll(rcq) : ENOENT;
                if (pr == ENOENT && in_poll)
                    ibv_end_poll(rcq);
                in_poll = 0;
                for (int w = 0; w < 200000 && pr == ENOENT; w++) {
                    if (w) {
                        struct timespec ts = {0, 10000};
                        nanosleep(&ts, NULL);
                    }
                    pr = ibv_start_poll(rcq, &pa);
                }
                in_poll = !pr;
                if (pr) {
                    printf("    burst %d recv %d: no completion\n", b, i);
                    bad++;
                    break;
                }
                z.r.ci++;
                if (rcq->status == IBV_WC_SUCCESS && ibv_wc_read_opcode(rcq) == IBV_WC_SEND) {
                    i--;
                    continue;
                }
                idx = (uint32_t)(rcq->wr_id + (uint64_t)b * n) & 63;
                bytes = ibv_wc_read_byte_len(rcq);
                qpn = ibv_wc_read_qp_num(rcq);
                status = rcq->status || ibv_wc_read_opcode(rcq) != IBV_WC_RECV ? 99 : 0;
                if (i + 1 == n) {
                    ibv_end_poll(rcq);
                    in_poll = 0;
                }
            }
            const int k = (int)((idx - (uint32_t)(b * n)) & 63);
            const uint32_t want = 100 + (uint32_t)(b * n + i);
            int data_ok = k == i && bytes == want + grh;
            for (uint32_t j = 0; data_ok && j < want; j++)
                data_ok = dst[i * 512 + grh + j] == 'a' + (b * n + i) % 26;
            if (!data_ok || qpn != r->qp_num || status) {
                printf("    burst %d recv %d: slot %d bytes %u qp %s status %u data %s\n", b, i, k, bytes,
                       qpn == r->qp_num ? "matches" : "other", status, data_ok ? "ok" : "WRONG");
                bad++;
            }
        }
    }
    if (mode && !shared)
        printf("    resized with %s unread: %s\n", session_at_resize ? "a session" : "completions",
               bad ? "WRONG" : "every receive in order");
    else
        printf("    %d bursts of %d: %s, compressed session seen: %s\n", bursts, n,
               bad ? "WRONG" : "every receive in order", seen ? "yes" : "no");
out:
    if (ah)
        ibv_destroy_ah(ah);
    if (r)
        ibv_destroy_qp(r);
    if (s)
        ibv_destroy_qp(s);
    if (scq)
        ibv_destroy_cq(scq);
    if (rcq)
        ibv_destroy_cq(ibv_cq_ex_to_cq(rcq));
}

static void compressed_cqes(struct env* e) {
    printf("CQE compression\n");
    dv_cq_case(e, "compressed, csum", MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE, 0, 0, MLX5DV_CQE_RES_FORMAT_CSUM);
    dv_cq_case(e, "compressed, csum + stride idx", MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE, 0, 0,
               MLX5DV_CQE_RES_FORMAT_CSUM_STRIDX);
    dv_cq_case(e, "compressed, 128-byte CQEs",
               MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE | MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE, 128, 0,
               MLX5DV_CQE_RES_FORMAT_HASH);
    dv_cq_case(e, "compressed, two formats", MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE, 0, 0,
               MLX5DV_CQE_RES_FORMAT_HASH | MLX5DV_CQE_RES_FORMAT_CSUM);
    dv_cq_case(e, "compressed, no format", MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE, 0, 0, 0);
    dv_cq_case(e, "compressed, unknown format", MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE, 0, 0, 1 << 3);
    const char* m = getenv("DV_PATH_ZIP_POLL");
    const int mode = m && !strcmp(m, "1") ? 1 : m && !strcmp(m, "ex") ? 2 : 0;
    zip_case(e, "rc, 64-byte CQEs, hash", IBV_QPT_RC, 64, MLX5DV_CQE_RES_FORMAT_HASH, mode, 0);
    zip_case(e, "rc, 128-byte CQEs, csum", IBV_QPT_RC, 128, MLX5DV_CQE_RES_FORMAT_CSUM, mode, 0);
    zip_case(e, "ud, 64-byte CQEs, csum + stride idx", IBV_QPT_UD, 64, MLX5DV_CQE_RES_FORMAT_CSUM_STRIDX, mode, 0);
    zip_case(e, "rc, one CQ for sends and receives", IBV_QPT_RC, 64, MLX5DV_CQE_RES_FORMAT_HASH, mode, 1);
}

/* ---------------------------------------------------- thread domains */

/* ibv_alloc_td: each domain gets a register of its own on a dynamic UAR
 * page (two to a page, so the third domain maps a second page); a parent
 * domain holds its thread domain; a QP on it rings its domain's register
 * (what mlx5dv_init_obj reports) and carries traffic. */
static void thread_domains(struct env* e) {
    printf("thread domains\n");
    struct ibv_td_init_attr ta = {.comp_mask = 1};
    errno = 0;
    struct ibv_td* bad = ibv_alloc_td(e->ctx, &ta);
    printf("  alloc_td unknown comp_mask: %s\n", bad ? "ok" : err_name(errno));
    if (bad)
        ibv_dealloc_td(bad);
    ta.comp_mask = 0;
    struct ibv_td* td[3];
    for (int i = 0; i < 3; i++) {
        errno = 0;
        td[i] = ibv_alloc_td(e->ctx, &ta);
        printf("  alloc_td %d: %s\n", i, td[i] ? "ok" : err_name(errno));
    }
    if (!td[0] || !td[1] || !td[2])
        goto out;
    struct ibv_cq* cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
    struct ibv_qp_init_attr qa = {.send_cq = cq,
                                  .recv_cq = cq,
                                  .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
    struct ibv_pd* ppd[3] = {NULL, NULL, NULL};
    struct ibv_qp* qp[3] = {NULL, NULL, NULL};
    void* reg[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        struct ibv_parent_domain_init_attr pa = {.pd = e->pd, .td = td[i]};
        ppd[i] = ibv_alloc_parent_domain(e->ctx, &pa);
        qp[i] = ppd[i] && cq ? ibv_create_qp(ppd[i], &qa) : NULL;
        struct mlx5dv_qp dqp = {0};
        struct mlx5dv_obj o = {.qp = {qp[i], &dqp}};
        int r = qp[i] ? mlx5dv_init_obj(&o, MLX5DV_OBJ_QP) : -1;
        reg[i] = dqp.bf.reg;
        printf("  domain %d: parent %s, qp %s, init_obj %s, bf size %u\n", i, ppd[i] ? "ok" : err_name(errno),
               qp[i] ? "ok" : "failed", err_name(r), dqp.bf.size);
    }
    if (reg[0] && reg[1] && reg[2]) {
        const long page = sysconf(_SC_PAGESIZE);
        const uintptr_t p0 = (uintptr_t)reg[0] & ~(uintptr_t)(page - 1),
                        p1 = (uintptr_t)reg[1] & ~(uintptr_t)(page - 1),
                        p2 = (uintptr_t)reg[2] & ~(uintptr_t)(page - 1);
        printf("  registers: 0 at page offset 0x%lx, 1 at 0x%lx (same page %s), 2 at 0x%lx (same page %s)\n",
               (unsigned long)((uintptr_t)reg[0] - p0), (unsigned long)((uintptr_t)reg[1] - p1),
               p0 == p1 ? "yes" : "no", (unsigned long)((uintptr_t)reg[2] - p2), p2 == p0 ? "yes" : "no");
    }
    printf("  thread domain under a parent domain: dealloc %s\n", err_name(ibv_dealloc_td(td[0])));
    /* traffic from the first domain's QP to the last's */
    if (qp[0] && qp[2] && !to_rts(e, qp[0], qp[2]->qp_num) && !to_rts(e, qp[2], qp[0]->qp_num)) {
        char* src = e->buf;
        char* dst = e->buf + 8192;
        memcpy(src, "through a thread domain", 24);
        memset(dst, 0, 64);
        struct ibv_sge rs = {(uintptr_t)dst, 64, e->mr->lkey}, ss = {(uintptr_t)src, 24, e->mr->lkey};
        struct ibv_recv_wr rw = {.wr_id = 7, .sg_list = &rs, .num_sge = 1}, *bad_r;
        struct ibv_send_wr sw = {.wr_id = 8,
                                 .sg_list = &ss,
                                 .num_sge = 1,
                                 .opcode = IBV_WR_SEND,
                                 .send_flags = IBV_SEND_SIGNALED},
                           *bad_s;
        int pr = ibv_post_recv(qp[2], &rw, &bad_r), ps = ibv_post_send(qp[0], &sw, &bad_s);
        int got = 0;
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        while (got < 2 && !pr && !ps) {
            struct ibv_wc wc;
            int n = ibv_poll_cq(cq, 1, &wc);
            if (n == 1 && wc.status == IBV_WC_SUCCESS)
                got++;
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (n < 0 || (n == 1 && wc.status) || t.tv_sec - t0.tv_sec > 5)
                break;
        }
        printf("  send through a thread domain: recv %s send %s, completions %d, payload %s\n", err_name(pr),
               err_name(ps), got, memcmp(dst, src, 24) ? "lost" : "arrived");
    }
    for (int i = 0; i < 3; i++) {
        if (qp[i])
            ibv_destroy_qp(qp[i]);
        if (ppd[i])
            ibv_dealloc_pd(ppd[i]);
    }
    if (cq)
        ibv_destroy_cq(cq);
out:
    for (int i = 0; i < 3; i++)
        if (td[i])
            printf("  dealloc_td %d: %s\n", i, err_name(ibv_dealloc_td(td[i])));
    /* a freed domain's register goes to the next one */
    struct ibv_td* again = ibv_alloc_td(e->ctx, &ta);
    printf("  alloc_td after the others: %s\n", again ? "ok" : err_name(errno));
    if (again)
        ibv_dealloc_td(again);
}

int main(void) {
    int n = 0;
    struct ibv_device** list = ibv_get_device_list(&n);
    if (!list || n < 1) {
        printf("no device\n");
        return 1;
    }
    printf("%s: mlx5dv_is_supported %s\n", ibv_get_device_name(list[0]), mlx5dv_is_supported(list[0]) ? "yes" : "no");

    struct mlx5dv_context_attr ca = {0};
    open_case(list[0], "without attributes", NULL);
    open_case(list[0], "no flag", &ca);
    ca.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
    open_case(list[0], "devx", &ca);
    ca.flags = 1 << 1;
    open_case(list[0], "unknown flag", &ca);
    ca.flags = 0;
    ca.comp_mask = 1;
    open_case(list[0], "unknown comp_mask", &ca);

    struct env e = {0};
    struct twin_port port;
    if (twin_open(list[0], &port))
        return 1;
    e.ctx = port.ctx;
    e.eth = port.eth;
    e.lid = port.lid;
    e.gid = port.gid;
    e.pd = ibv_alloc_pd(e.ctx);
    e.buf = aligned_alloc(4096, 1 << 16);
    memset(e.buf, 0, 1 << 16);
    e.mr = e.pd ? ibv_reg_mr(e.pd, e.buf, 1 << 16, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
    if (!e.mr) {
        printf("setup failed\n");
        return 1;
    }
    query(e.ctx);
    clock_info(e.ctx);
    allocators(list[0]);
    parent_domain(e.ctx, 0);
    parent_domain(e.ctx, 1);
    objects(&e);
    create_attrs(&e);
    raw_traffic(&e);
    raw_wqe_traffic(&e);
    compressed_cqes(&e);
    thread_domains(&e);

    ibv_dereg_mr(e.mr);
    ibv_close_device(e.ctx);
    ibv_free_device_list(list);
    free(e.buf);
    return 0;
}
