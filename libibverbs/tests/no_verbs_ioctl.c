/* LD_PRELOAD shim for tests: a kernel without the uverbs ioctl ABI. Every
 * RDMA_VERBS_IOCTL answers ENOTTY (what such a kernel answers), so
 * libibverbs must take its write() fallback; every other ioctl goes to
 * libc. */
#define _GNU_SOURCE
#include <rdma/rdma_user_ioctl_cmds.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/ioctl.h>

__attribute__((visibility("default"))) int ioctl(int fd, unsigned long request, ...) {
    va_list ap;
    va_start(ap, request);
    void* arg = va_arg(ap, void*);
    va_end(ap);
    if (request == RDMA_VERBS_IOCTL) {
        errno = ENOTTY;
        return -1;
    }
    static int (*real)(int, unsigned long, ...);
    if (!real)
        real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    return real(fd, request, arg);
}
