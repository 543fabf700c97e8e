/* What the twin programs (control_path, data_path, dv_path) share: errno
 * names as they print them, and the first device opened with what they
 * print relations against (port 1's link layer, LID and GID 0). Each is
 * built against our headers and against Debian's, so this is plain C on
 * the public verbs API only. */
#ifndef MLX5_TESTS_TWIN_COMMON_H
#define MLX5_TESTS_TWIN_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

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

#endif
