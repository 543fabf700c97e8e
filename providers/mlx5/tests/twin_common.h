/* What the twin programs (control_path, data_path, dv_path, import_path)
 * share: errno names as they print them, the first device opened with what
 * they print relations against (port 1's link layer, LID and GID 0), and
 * an RC QP's way to RTS. Each is
 * built against our headers and against Debian's, so this is plain C on
 * the public verbs API only. */
#ifndef MLX5_TESTS_TWIN_COMMON_H
#define MLX5_TESTS_TWIN_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

static inline const char* err_name(int e) {
    switch (e) {
    case 0: return "ok";
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    case EBUSY: return "EBUSY";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case EACCES: return "EACCES";
    case EFAULT: return "EFAULT";
    case ENOSYS: return "ENOSYS";
    case ENODEV: return "ENODEV";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case EBADF: return "EBADF";
    default: break;
    }
    static char num[32];
    snprintf(num, sizeof(num), "%d", e);
    return num;
}

struct twin_port {
    struct ibv_context* ctx;
    int eth;
    uint16_t lid;
    union ibv_gid gid;
};

/* 0, or 1 with the reason printed. */
static inline int twin_open(struct ibv_device* dev, struct twin_port* p) {
    p->ctx = ibv_open_device(dev);
    if (!p->ctx) {
        perror("ibv_open_device");
        return 1;
    }
    struct ibv_port_attr pa;
    ibv_query_port(p->ctx, 1, &pa);
    p->eth = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
    p->lid = pa.lid;
    ibv_query_gid(p->ctx, 1, 0, &p->gid);
    return 0;
}

/* An RC QP through INIT and RTR to RTS, connected to QP `dest` on port 1
 * (LID `lid`; on RoCE through `gid`), with `access` for remote peers.
 * 0, or the errno of the transition that failed. */
static inline int twin_rc_to_rts(struct ibv_qp* qp, uint32_t dest, uint16_t lid, const union ibv_gid* gid, int eth,
                                 int access) {
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = (unsigned)access};
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        return errno;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dest;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.dlid = lid;
    if (eth) {
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = *gid;
        a.ah_attr.grh.hop_limit = 1;
    }
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        return errno;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 10;
    a.retry_cnt = 2;
    a.rnr_retry = 2;
    a.max_rd_atomic = 1;
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                          IBV_QP_MAX_QP_RD_ATOMIC))
        return errno;
    return 0;
}

#endif
