/* control_path: the mlx5 control verbs one by one on every device, each
 * result printed as a line (value or errno name). Built twice: against our
 * libibverbs + libmlx5 and against Debian's; control_path.sh runs both on
 * the emulated ConnectX under several MLX5_* settings and compares. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "twin_common.h"

static void report(const char* what, int e) { printf("  %-44s %s\n", what, err_name(e)); }

static void device(struct ibv_device* dev) {
    printf("%s: mlx5dv_is_supported %d\n", ibv_get_device_name(dev), mlx5dv_is_supported(dev));
    errno = 0;
    struct ibv_context* ctx = ibv_open_device(dev);
    report("ibv_open_device", ctx ? 0 : errno);
    if (!ctx)
        return;

    struct ibv_device_attr a;
    memset(&a, 0, sizeof(a));
    report("ibv_query_device", ibv_query_device(ctx, &a));
    printf("  fw_ver %s max_qp %d atomic_cap %d ports %d\n", a.fw_ver, a.max_qp, a.atomic_cap, a.phys_port_cnt);
    struct ibv_device_attr_ex ax;
    memset(&ax, 0, sizeof(ax));
    report("ibv_query_device_ex", ibv_query_device_ex(ctx, NULL, &ax));
    printf("  clock %llu ts_mask 0x%llx tso %u rss 0x%llx\n", (unsigned long long)ax.hca_core_clock,
           (unsigned long long)ax.completion_timestamp_mask, ax.tso_caps.max_tso,
           (unsigned long long)ax.rss_caps.rx_hash_fields_mask);
    struct ibv_query_device_ex_input in = {.comp_mask = 1};
    report("ibv_query_device_ex comp_mask 1", ibv_query_device_ex(ctx, &in, &ax));

    struct ibv_port_attr pa;
    report("ibv_query_port 1", ibv_query_port(ctx, 1, &pa));
    report("ibv_query_port 0", ibv_query_port(ctx, 0, &pa));
    report("ibv_query_port 9", ibv_query_port(ctx, 9, &pa));

    errno = 0;
    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    report("ibv_alloc_pd", pd ? 0 : errno);
    if (!pd)
        goto out;

    size_t len = 1 << 16;
    char* buf = aligned_alloc(4096, len);
    char* buf2 = aligned_alloc(4096, len);
    memset(buf, 0, len);
    memset(buf2, 0, len);
    errno = 0;
    struct ibv_mr* mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    report("ibv_reg_mr", mr ? 0 : errno);
    errno = 0;
    struct ibv_mr* bad = ibv_reg_mr(pd, buf, len, IBV_ACCESS_REMOTE_WRITE);
    report("ibv_reg_mr remote write without local", bad ? 0 : errno);
    if (bad)
        ibv_dereg_mr(bad);
    errno = 0;
    struct ibv_mr* iova = ibv_reg_mr_iova(pd, buf, len, 0x100000, IBV_ACCESS_LOCAL_WRITE);
    report("ibv_reg_mr_iova", iova ? 0 : errno);
    if (iova) {
        printf("  iova mr addr is the buffer %d\n", iova->addr == (void*)buf);
        ibv_dereg_mr(iova);
    }
    if (mr) {
        report("ibv_rereg_mr access",
               ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE));
        report("ibv_rereg_mr translation", ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf2, len, 0));
        report("ibv_rereg_mr no flags", ibv_rereg_mr(mr, 0, NULL, NULL, 0, 0));
        report("ibv_rereg_mr unknown flag", ibv_rereg_mr(mr, 1 << 7, NULL, NULL, 0, 0));
        report("ibv_dealloc_pd while an MR uses it", ibv_dealloc_pd(pd));
        report("ibv_dereg_mr", ibv_dereg_mr(mr));
    }
    report("ibv_dealloc_pd", ibv_dealloc_pd(pd));
    free(buf);
    free(buf2);
out:
    report("ibv_close_device", ibv_close_device(ctx));
}

int main(void) {
    int n = 0;
    struct ibv_device** list = ibv_get_device_list(&n);
    if (!list) {
        perror("ibv_get_device_list");
        return 1;
    }
    printf("%d device(s)\n", n);
    for (int i = 0; i < n; i++)
        device(list[i]);
    ibv_free_device_list(list);
    return 0;
}
