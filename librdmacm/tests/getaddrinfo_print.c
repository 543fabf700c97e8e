/* Prints what rdma_getaddrinfo() returns, field by field, so that two
   libraries' answers can be compared as text.
   Usage: NODE SERVICE [WORD...], NODE or SERVICE "" for NULL; the words set
   hints: passive, udp (port space), ud (QP type), noroute, numeric,
   family (RAI_FAMILY, AF_INET), src=IPV4 and dst=IPV4 (hint addresses,
   port 7471), nohints (NULL hints). */
#include <rdma/rdma_cma.h>
#include <infiniband/sa.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>

static void addr(const char* what, struct sockaddr* sa, socklen_t len) {
    char buf[64] = "-";
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in*)sa)->sin_addr, buf, sizeof(buf));
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6*)sa)->sin6_addr, buf, sizeof(buf));
    printf("%s: len %u family %d addr %s port %u\n", what, (unsigned)len, sa ? sa->sa_family : -1, buf,
           sa ? ntohs(((struct sockaddr_in*)sa)->sin_port) : 0);
}

int main(int argc, char** argv) {
    struct rdma_addrinfo hints, *res, *r;
    struct sockaddr_in hint_addr[2];
    int use_hints = 1;
    memset(&hints, 0, sizeof(hints));
    memset(hint_addr, 0, sizeof(hint_addr));
    for (int i = 3; i < argc; i++) {
        const char* w = argv[i];
        if (!strcmp(w, "passive"))
            hints.ai_flags |= RAI_PASSIVE;
        else if (!strcmp(w, "udp"))
            hints.ai_port_space = RDMA_PS_UDP;
        else if (!strcmp(w, "ud"))
            hints.ai_qp_type = IBV_QPT_UD;
        else if (!strcmp(w, "noroute"))
            hints.ai_flags |= RAI_NOROUTE;
        else if (!strcmp(w, "numeric"))
            hints.ai_flags |= RAI_NUMERICHOST;
        else if (!strcmp(w, "family"))
            hints.ai_flags |= RAI_FAMILY, hints.ai_family = AF_INET;
        else if (!strcmp(w, "nohints"))
            use_hints = 0;
        else if (!strncmp(w, "src=", 4) || !strncmp(w, "dst=", 4)) {
            struct sockaddr_in* sin = &hint_addr[w[0] == 'd'];
            sin->sin_family = AF_INET;
            sin->sin_port = htons(7471);
            if (inet_pton(AF_INET, w + 4, &sin->sin_addr) != 1) {
                fprintf(stderr, "bad address %s\n", w + 4);
                return 2;
            }
            if (w[0] == 'd') {
                hints.ai_dst_addr = (struct sockaddr*)sin;
                hints.ai_dst_len = sizeof(*sin);
            } else {
                hints.ai_src_addr = (struct sockaddr*)sin;
                hints.ai_src_len = sizeof(*sin);
            }
        } else {
            fprintf(stderr, "unknown word %s\n", w);
            return 2;
        }
    }
    errno = 0;
    int ret =
        rdma_getaddrinfo(argv[1][0] ? argv[1] : NULL, argv[2][0] ? argv[2] : NULL, use_hints ? &hints : NULL, &res);
    if (ret) {
        printf("ret %d errno %d (%s)\n", ret, errno, ret < 0 && ret != -1 ? gai_strerror(ret) : strerror(errno));
        return 1;
    }
    for (r = res; r; r = r->ai_next) {
        printf("flags %#x family %d qp_type %d port_space %#x\n", r->ai_flags, r->ai_family, r->ai_qp_type,
               r->ai_port_space);
        addr("src", r->ai_src_addr, r->ai_src_len);
        addr("dst", r->ai_dst_addr, r->ai_dst_len);
        printf("canon: %s %s\n", r->ai_src_canonname ? r->ai_src_canonname : "-",
               r->ai_dst_canonname ? r->ai_dst_canonname : "-");
        printf("route_len %zu connect_len %zu\n", r->ai_route_len, r->ai_connect_len);
        for (size_t i = 0; r->ai_route && i < r->ai_route_len / sizeof(struct ibv_path_data); i++) {
            struct ibv_path_data* p = (struct ibv_path_data*)r->ai_route + i;
            printf("path %zu flags %#x pkey %#x mtu %#x rate %#x\n", i, p->flags, ntohs(p->path.pkey), p->path.mtu,
                   p->path.rate);
        }
    }
    rdma_freeaddrinfo(res);
    return 0;
}
