/* Sharing a context (ibv_import_device, ibv_import_pd/mr) and the UAR
 * pages behind it, on the emulated ConnectX: which doorbell register each
 * QP gets from the context's pools, mlx5dv_devx_alloc_uar, the import's
 * refusals, and an RDMA write into memory a QP of the imported context
 * reaches through the imported PD and MR. Built twice (our libibverbs +
 * libmlx5 and Debian's); import_path.sh compares the outputs. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <rdma/mlx5_user_ioctl_verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "twin_common.h"

static struct ibv_qp* rc_qp(struct ibv_pd* pd, struct ibv_cq* cq) {
    struct ibv_qp_init_attr a = {.send_cq = cq,
                                 .recv_cq = cq,
                                 .qp_type = IBV_QPT_RC,
                                 .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
    return ibv_create_qp(pd, &a);
}

static void show_bf(const char* what, struct ibv_qp* qp) {
    if (!qp) {
        printf("  %-8s create %s\n", what, err_name(errno));
        return;
    }
    struct mlx5dv_qp d;
    memset(&d, 0, sizeof(d));
    d.comp_mask = MLX5DV_QP_MASK_UAR_MMAP_OFFSET;
    struct mlx5dv_obj o = {.qp = {qp, &d}};
    int r = mlx5dv_init_obj(&o, MLX5DV_OBJ_QP);
    printf("  %-8s %s bf +0x%lx size %u page %llu\n", what, err_name(r), (unsigned long)((uintptr_t)d.bf.reg & 0xfff),
           d.bf.size, (unsigned long long)(d.uar_mmap_offset / 4096));
}

/* Which register each QP rings: the dedicated ones first, then the shared
 * ones, a returned register going to the next QP. */
static void pools(struct ibv_context* ctx) {
    printf("qp doorbell registers\n");
    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    struct ibv_cq* cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
    struct ibv_qp* qp[24] = {0};
    char name[16];
    for (int i = 0; i < 18; ++i) {
        qp[i] = rc_qp(pd, cq);
        snprintf(name, sizeof(name), "qp%d", i);
        show_bf(name, qp[i]);
    }
    ibv_destroy_qp(qp[1]);
    ibv_destroy_qp(qp[0]);
    ibv_destroy_qp(qp[6]);
    qp[0] = qp[1] = qp[6] = NULL;
    printf("  (qp1, qp0, qp6 destroyed)\n");
    for (int i = 18; i < 22; ++i) {
        qp[i] = rc_qp(pd, cq);
        snprintf(name, sizeof(name), "qp%d", i);
        show_bf(name, qp[i]);
    }
    struct mlx5dv_cq dc;
    memset(&dc, 0, sizeof(dc));
    struct mlx5dv_obj o = {.cq = {cq, &dc}};
    int r = mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ);
    printf("  cq doorbell %s at page offset 0x%lx\n", err_name(r), (unsigned long)((uintptr_t)dc.cq_uar & 0xfff));
    struct ibv_td_init_attr ta = {0};
    struct ibv_td* td[2] = {ibv_alloc_td(ctx, &ta), ibv_alloc_td(ctx, &ta)};
    for (int i = 0; i < 2; ++i) {
        snprintf(name, sizeof(name), "td%d qp", i);
        if (!td[i]) {
            printf("  %-8s alloc_td %s\n", name, err_name(errno));
            continue;
        }
        struct ibv_parent_domain_init_attr pa = {.pd = pd, .td = td[i]};
        struct ibv_pd* p = ibv_alloc_parent_domain(ctx, &pa);
        struct ibv_qp* q = p ? rc_qp(p, cq) : NULL;
        show_bf(name, q);
        if (q)
            ibv_destroy_qp(q);
        if (p)
            ibv_dealloc_pd(p);
        ibv_dealloc_td(td[i]);
    }
    for (int i = 0; i < 24; ++i)
        if (qp[i])
            ibv_destroy_qp(qp[i]);
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
}

static void devx_uars(struct ibv_context* ctx) {
    printf("mlx5dv_devx_alloc_uar\n");
    const struct {
        const char* name;
        uint32_t type;
    } kinds[] = {{"bf", MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF}, {"nc", MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC}, {"type 7", 7}};
    for (int i = 0; i < 3; ++i) {
        struct mlx5dv_devx_uar* u = mlx5dv_devx_alloc_uar(ctx, kinds[i].type);
        if (!u) {
            printf("  %-6s %s\n", kinds[i].name, err_name(errno));
            continue;
        }
        struct mlx5dv_devx_uar* again = mlx5dv_devx_alloc_uar(ctx, kinds[i].type);
        printf("  %-6s ok reg +0x%lx base %s mmap page %llu comp_mask 0x%llx; a second: reg +0x%lx, same page %s\n",
               kinds[i].name, (unsigned long)((uintptr_t)u->reg_addr & 0xfff),
               ((uintptr_t)u->base_addr & 0xfff) ? "unaligned" : "page aligned",
               (unsigned long long)(u->mmap_off / 4096), (unsigned long long)u->comp_mask,
               again ? (unsigned long)((uintptr_t)again->reg_addr & 0xfff) : 0UL,
               again && again->page_id == u->page_id ? "yes" : "no");
        void* reg = u->reg_addr;
        mlx5dv_devx_free_uar(u);
        struct mlx5dv_devx_uar* back = mlx5dv_devx_alloc_uar(ctx, kinds[i].type);
        printf("  %-6s freed and allocated again: the same register %s\n", kinds[i].name,
               back && back->reg_addr == reg ? "yes" : "no");
        if (back)
            mlx5dv_devx_free_uar(back);
        if (again)
            mlx5dv_devx_free_uar(again);
    }
}

static int wait_one(struct ibv_cq* cq, struct ibv_wc* wc) {
    for (long i = 0; i < 20000000; ++i) {
        int n = ibv_poll_cq(cq, 1, wc);
        if (n)
            return n;
        if (i > 1000)
            usleep(10);
    }
    return 0;
}

static void import(struct ibv_device* dev, struct ibv_context* ctx) {
    printf("import\n");
    int pipefd[2];
    if (pipe(pipefd) == 0) {
        errno = 0;
        struct ibv_context* c = ibv_import_device(pipefd[0]);
        printf("  a pipe                 %s\n", c ? "imported" : err_name(errno));
        close(pipefd[0]);
        close(pipefd[1]);
    }
    int nul = open("/dev/null", O_RDWR);
    errno = 0;
    struct ibv_context* c0 = ibv_import_device(nul);
    printf("  /dev/null              %s\n", c0 ? "imported" : err_name(errno));
    close(nul);

    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    char* buf = calloc(1, 4096);
    struct ibv_mr* mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    int fd = dup(ctx->cmd_fd);
    struct ibv_context* imp = ibv_import_device(fd);
    if (!imp) {
        printf("  a dup of the cmd fd    %s\n", err_name(errno));
        close(fd);
        ibv_dereg_mr(mr);
        ibv_dealloc_pd(pd);
        free(buf);
        return;
    }
    struct ibv_device_attr da;
    int r = ibv_query_device(imp, &da);
    printf("  a dup of the cmd fd    ok: same device %s, the fd its %s, query_device %s, vendor part %u\n",
           imp->device == dev ? "yes" : "no", imp->cmd_fd == fd ? "own" : "other", err_name(r), da.vendor_part_id);
    errno = 0;
    struct ibv_pd* bad_pd = ibv_import_pd(imp, pd->handle + 1000);
    printf("  pd of no handle        %s\n", bad_pd ? "imported" : err_name(errno));
    struct ibv_pd* ipd = ibv_import_pd(imp, pd->handle);
    if (!ipd) {
        printf("  pd                     %s\n", err_name(errno));
        return;
    }
    struct mlx5dv_pd dpd = {0}, dipd = {0};
    struct mlx5dv_obj po = {.pd = {pd, &dpd}}, pio = {.pd = {ipd, &dipd}};
    mlx5dv_init_obj(&po, MLX5DV_OBJ_PD);
    mlx5dv_init_obj(&pio, MLX5DV_OBJ_PD);
    printf("  pd                     ok: handle %s, context the import's %s, pdn the same %s\n",
           ipd->handle == pd->handle ? "the same" : "another", ipd->context == imp ? "yes" : "no",
           dpd.pdn == dipd.pdn ? "yes" : "no");
    errno = 0;
    struct ibv_mr* bad_mr = ibv_import_mr(ipd, mr->handle + 1000);
    printf("  mr of no handle        %s\n", bad_mr ? "imported" : err_name(errno));
    errno = 0;
    bad_mr = ibv_import_mr(ipd, pd->handle == mr->handle ? mr->handle + 1 : pd->handle);
    printf("  mr by a pd's handle    %s\n", bad_mr ? "imported" : err_name(errno));
    struct ibv_mr* imr = ibv_import_mr(ipd, mr->handle);
    if (!imr) {
        printf("  mr                     %s\n", err_name(errno));
        return;
    }
    printf("  mr                     ok: keys the same %s, length %zu, addr %s, pd the import's %s\n",
           imr->lkey == mr->lkey && imr->rkey == mr->rkey ? "yes" : "no", imr->length, imr->addr ? "set" : "null",
           imr->pd == ipd ? "yes" : "no");

    /* A QP of the imported context on the imported PD receives an RDMA
     * write from one of the first context into the imported MR. */
    struct ibv_port_attr port;
    ibv_query_port(ctx, 1, &port);
    const int eth = port.link_layer == IBV_LINK_LAYER_ETHERNET;
    union ibv_gid gid;
    memset(&gid, 0, sizeof(gid));
    if (eth)
        ibv_query_gid(ctx, 1, 0, &gid);
    struct ibv_cq* icq = ibv_create_cq(imp, 16, NULL, NULL, 0);
    struct ibv_cq* cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
    struct ibv_qp* iqp = icq ? rc_qp(ipd, icq) : NULL;
    struct ibv_qp* qp = cq ? rc_qp(pd, cq) : NULL;
    char* src = calloc(1, 4096);
    struct ibv_mr* smr = ibv_reg_mr(pd, src, 4096, IBV_ACCESS_LOCAL_WRITE);
    if (!iqp || !qp || !smr) {
        printf("  traffic                objects %s\n", err_name(errno));
        return;
    }
    const int access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    int e1 = twin_rc_to_rts(iqp, qp->qp_num, port.lid, &gid, eth, access);
    int e2 = twin_rc_to_rts(qp, iqp->qp_num, port.lid, &gid, eth, access);
    strcpy(src, "through the imported mr");
    struct ibv_sge sge = {.addr = (uintptr_t)src, .length = 24, .lkey = smr->lkey};
    struct ibv_send_wr wr = {.wr_id = 9,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED,
                             .wr.rdma = {.remote_addr = (uintptr_t)buf, .rkey = imr->rkey}};
    struct ibv_send_wr* bad;
    int e3 = e1 || e2 ? -1 : ibv_post_send(qp, &wr, &bad);
    struct ibv_wc wc;
    memset(&wc, 0, sizeof(wc));
    int n = e3 ? 0 : wait_one(cq, &wc);
    printf("  traffic                modify %s/%s, write %s, completion %d status %s, data %s\n", err_name(e1),
           err_name(e2), err_name(e3 < 0 ? 0 : e3), n, ibv_wc_status_str(wc.status),
           strcmp(buf, "through the imported mr") == 0 ? "arrived" : "missing");

    ibv_destroy_qp(qp);
    ibv_destroy_qp(iqp);
    ibv_destroy_cq(cq);
    ibv_destroy_cq(icq);
    ibv_dereg_mr(smr);
    free(src);
    ibv_unimport_mr(imr);
    ibv_unimport_pd(ipd);
    r = ibv_close_device(imp);
    /* the objects are the first context's still */
    int e4 = ibv_dereg_mr(mr);
    int e5 = ibv_dealloc_pd(pd);
    printf("  after the import closed: close %s, dereg the mr %s, dealloc the pd %s\n", err_name(r), err_name(e4),
           err_name(e5));
    free(buf);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int n = 0;
    struct ibv_device** list = ibv_get_device_list(&n);
    if (!list || n == 0) {
        printf("no device\n");
        return 1;
    }
    struct ibv_context* ctx = ibv_open_device(list[0]);
    if (!ctx) {
        printf("open: %s\n", err_name(errno));
        return 1;
    }
    pools(ctx);
    devx_uars(ctx);
    import(list[0], ctx);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    return 0;
}
