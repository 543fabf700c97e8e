/* Devices coming and going under a running program (soft-RoCE links added
   and deleted with the rdma tool): what the device list, a stale device
   from an older list, and an open context see. Prints a transcript that
   must read the same on Debian's libibverbs and on ours
   (tests/compat/hotplug-compat.sh runs it on both, as root in the VM).
   Usage: hotplug_list NETDEV0 NETDEV1, the netdevs rxe0 and rxe1 sit on. */
#include <infiniband/verbs.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char* when) {
    int n = -1;
    struct ibv_device** list = ibv_get_device_list(&n);
    printf("%s: %d device(s):", when, list ? n : -1);
    for (int i = 0; list && i < n; i++)
        printf(" %s", ibv_get_device_name(list[i]));
    printf("\n");
    if (list)
        ibv_free_device_list(list);
}

static int run(const char* cmd) {
    fflush(stdout);
    int rc = system(cmd);
    printf("$ %s -> %d\n", cmd, WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
    return rc;
}

static struct ibv_device* find(struct ibv_device** list, const char* name) {
    for (int i = 0; list && list[i]; i++)
        if (!strcmp(ibv_get_device_name(list[i]), name))
            return list[i];
    return NULL;
}

static void try_open(const char* what, struct ibv_device* dev) {
    errno = 0;
    struct ibv_context* ctx = dev ? ibv_open_device(dev) : NULL;
    printf("open %s: %s (errno %d)\n", what, ctx ? "ok" : "NULL", ctx ? 0 : errno);
    if (!ctx)
        return;
    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    printf("  alloc_pd: %s\n", pd ? "ok" : "NULL");
    if (pd)
        printf("  dealloc_pd: %d\n", ibv_dealloc_pd(pd));
    printf("  close: %d\n", ibv_close_device(ctx));
}

int main(int argc, char** argv) {
    char cmd[256];
    if (argc != 3) {
        fprintf(stderr, "usage: %s NETDEV0 NETDEV1\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    show("start");

    /* A device added after the first list, then deleted while an older
       list still names it. */
    snprintf(cmd, sizeof(cmd), "rdma link add rxe1 type rxe netdev %s", argv[2]);
    run(cmd);
    int n = 0;
    struct ibv_device** held = ibv_get_device_list(&n);
    printf("held list: %d device(s)\n", n);
    struct ibv_device* rxe1 = find(held, "rxe1");
    printf("rxe1 in it: %s\n", rxe1 ? "yes" : "no");
    try_open("rxe1 (present)", rxe1);
    run("rdma link delete rxe1");
    show("after deleting rxe1");
    if (rxe1) {
        printf("stale rxe1 name: %s\n", ibv_get_device_name(rxe1));
        try_open("stale rxe1", rxe1);
    }
    ibv_free_device_list(held);

    /* rxe0 deleted while a context on it is open: the kernel finishes the
       deletion once the context is closed (soft-RoCE cannot take a device
       from under its users). */
    held = ibv_get_device_list(&n);
    struct ibv_context* ctx = ibv_open_device(find(held, "rxe0"));
    printf("open rxe0: %s\n", ctx ? "ok" : "NULL");
    struct ibv_pd* pd = ctx ? ibv_alloc_pd(ctx) : NULL;
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        execlp("rdma", "rdma", "link", "delete", "rxe0", (char*)NULL);
        _exit(127);
    }
    sleep(2);
    int status = 0;
    printf("delete still waiting with the context open: %s\n", waitpid(child, &status, WNOHANG) == 0 ? "yes" : "no");
    if (pd)
        printf("dealloc_pd: %d\n", ibv_dealloc_pd(pd));
    if (ctx)
        printf("close rxe0: %d\n", ibv_close_device(ctx));
    waitpid(child, &status, 0);
    printf("delete finished: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    show("after deleting rxe0");
    try_open("stale rxe0", find(held, "rxe0"));
    ibv_free_device_list(held);

    snprintf(cmd, sizeof(cmd), "rdma link add rxe0 type rxe netdev %s", argv[1]);
    run(cmd);
    show("after adding rxe0 back");
    held = ibv_get_device_list(&n);
    try_open("new rxe0", find(held, "rxe0"));
    ibv_free_device_list(held);
    return 0;
}
