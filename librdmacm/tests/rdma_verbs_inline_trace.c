/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Drives every inline of <rdma/rdma_verbs.h> and <infiniband/ib.h> (plus
 * rdma_cma.h's address getters) against mock verbs and prints what reached
 * the mocks.  Built once against the reference headers and once against
 * ours; the two traces must be identical.  Only work-request fields the
 * inlines set are printed (the rest are left uninitialised by design).
 */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <rdma/rdma_verbs.h>
#include <infiniband/ib.h>

#define P(...) printf(__VA_ARGS__)

static char buf[256];
static struct ibv_context ctx;
static struct ibv_pd pd;
static struct ibv_qp qp;
static struct ibv_srq srq;
static struct ibv_cq scq, rcq;
static struct ibv_comp_channel sch, rch;
static struct ibv_mr mr;
static struct rdma_cm_id id;

/* Scripted return values. */
static int post_ret, notify_ret, event_ret, expect_ud;
static int poll_script[8], poll_pos;

static const char* who(const void* p) {
    if (p == &qp)
        return "qp";
    if (p == &srq)
        return "srq";
    if (p == &scq)
        return "send_cq";
    if (p == &rcq)
        return "recv_cq";
    if (p == &sch)
        return "send_ch";
    if (p == &rch)
        return "recv_ch";
    if (p == &pd)
        return "pd";
    if (p == &mr)
        return "mr";
    return p ? "other" : "null";
}

static void print_sges(const struct ibv_sge* s, int n) {
    for (int i = 0; i < n; i++)
        P("    sge[%d] addr=buf+%lld len=%u lkey=%u\n", i, (long long)(s[i].addr - (uint64_t)(uintptr_t)buf),
          s[i].length, s[i].lkey);
}

struct ibv_mr*(ibv_reg_mr)(struct ibv_pd* p, void* addr, size_t len, int access) {
    P("  ibv_reg_mr(%s, buf+%td, %zu, 0x%x)\n", who(p), (char*)addr - buf, len, access);
    return &mr;
}

struct ibv_mr* ibv_reg_mr_iova2(struct ibv_pd* p, void* addr, size_t len, uint64_t iova, unsigned int access) {
    P("  ibv_reg_mr_iova2(%s, buf+%td, %zu, %llu, 0x%x)\n", who(p), (char*)addr - buf, len, (unsigned long long)iova,
      access);
    return &mr;
}

int ibv_dereg_mr(struct ibv_mr* m) {
    P("  ibv_dereg_mr(%s)\n", who(m));
    return post_ret;
}

int ibv_get_cq_event(struct ibv_comp_channel* ch, struct ibv_cq** cq, void** cq_ctx) {
    P("  ibv_get_cq_event(%s) -> %d\n", who(ch), event_ret);
    *cq = ch == &sch ? &scq : &rcq;
    *cq_ctx = &id;
    return event_ret;
}

void ibv_ack_cq_events(struct ibv_cq* cq, unsigned int n) { P("  ibv_ack_cq_events(%s, %u)\n", who(cq), n); }

static int m_post_send(struct ibv_qp* q, struct ibv_send_wr* wr, struct ibv_send_wr** bad) {
    P("  post_send(%s) wr_id=%llu next=%d num_sge=%d opcode=%d flags=0x%x\n", who(q), (unsigned long long)wr->wr_id,
      wr->next != NULL, wr->num_sge, wr->opcode, wr->send_flags);
    print_sges(wr->sg_list, wr->num_sge);
    if (wr->opcode == IBV_WR_RDMA_READ || wr->opcode == IBV_WR_RDMA_WRITE)
        P("    rdma raddr=%llu rkey=%u\n", (unsigned long long)wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
    else if (expect_ud)
        P("    ud ah=%d qpn=%u qkey=0x%x\n", wr->wr.ud.ah == (struct ibv_ah*)buf, wr->wr.ud.remote_qpn,
          wr->wr.ud.remote_qkey);
    (void)bad;
    return post_ret;
}

static int m_post_recv(struct ibv_qp* q, struct ibv_recv_wr* wr, struct ibv_recv_wr** bad) {
    P("  post_recv(%s) wr_id=%llu next=%d num_sge=%d\n", who(q), (unsigned long long)wr->wr_id, wr->next != NULL,
      wr->num_sge);
    print_sges(wr->sg_list, wr->num_sge);
    (void)bad;
    return post_ret;
}

static int m_post_srq_recv(struct ibv_srq* s, struct ibv_recv_wr* wr, struct ibv_recv_wr** bad) {
    P("  post_srq_recv(%s) wr_id=%llu next=%d num_sge=%d\n", who(s), (unsigned long long)wr->wr_id, wr->next != NULL,
      wr->num_sge);
    print_sges(wr->sg_list, wr->num_sge);
    (void)bad;
    return post_ret;
}

static int m_poll_cq(struct ibv_cq* cq, int n, struct ibv_wc* wc) {
    int r = poll_script[poll_pos++];

    P("  poll_cq(%s, %d) -> %d\n", who(cq), n, r);
    if (r > 0)
        wc->wr_id = 77;
    return r;
}

static int m_req_notify_cq(struct ibv_cq* cq, int solicited) {
    P("  req_notify_cq(%s, %d) -> %d\n", who(cq), solicited, notify_ret);
    return notify_ret;
}

static void setup(void) {
    ctx.ops.post_send = m_post_send;
    ctx.ops.post_recv = m_post_recv;
    ctx.ops.post_srq_recv = m_post_srq_recv;
    ctx.ops.poll_cq = m_poll_cq;
    ctx.ops.req_notify_cq = m_req_notify_cq;
    qp.context = srq.context = scq.context = rcq.context = pd.context = &ctx;
    mr.addr = buf;
    mr.length = sizeof(buf);
    mr.lkey = 42;
    id.pd = &pd;
    id.qp = &qp;
    id.send_cq = &scq;
    id.recv_cq = &rcq;
    id.send_cq_channel = &sch;
    id.recv_cq_channel = &rch;
}

static void result(const char* what, int r) {
    P("%s = %d errno=%d\n", what, r, r < 0 ? errno : 0);
    errno = 0;
}

static void comp_case(const char* name, int (*fn)(struct rdma_cm_id*, struct ibv_wc*), const int* script, int n,
                      int notify, int event) {
    struct ibv_wc wc = {0};

    memset(poll_script, 0, sizeof(poll_script));
    memcpy(poll_script, script, n * sizeof(int));
    poll_pos = 0;
    notify_ret = notify;
    event_ret = event;
    P("%s script=%d notify=%d event=%d\n", name, n, notify, event);
    result(name, fn(&id, &wc));
    P("  wc.wr_id=%llu\n", (unsigned long long)wc.wr_id);
}

int main(void) {
    struct ibv_sge sgl[2] = {
        {.addr = (uintptr_t)buf + 8, .length = 16, .lkey = 5},
        {.addr = (uintptr_t)buf + 32, .length = 8, .lkey = 6},
    };
    int rets[] = {0, 22};

    setup();
    P("seterrno(0)=%d ", rdma_seterrno(0));
    int r13 = rdma_seterrno(13);
    P("seterrno(13)=%d errno=%d\n", r13, errno);
    errno = 0;

    P("reg_msgs %d\n", rdma_reg_msgs(&id, buf + 1, 10) == &mr);
    P("reg_read %d\n", rdma_reg_read(&id, buf + 2, 20) == &mr);
    P("reg_write %d\n", rdma_reg_write(&id, buf + 3, 30) == &mr);

    for (unsigned i = 0; i < 2; i++) {
        post_ret = rets[i];
        P("== post_ret %d\n", post_ret);
        result("dereg_mr", rdma_dereg_mr(&mr));
        result("recvv", rdma_post_recvv(&id, (void*)11, sgl, 2));
        id.srq = &srq;
        result("recvv srq", rdma_post_recvv(&id, (void*)12, sgl, 1));
        result("recv srq", rdma_post_recv(&id, (void*)13, buf + 4, 64, &mr));
        id.srq = NULL;
        result("recv", rdma_post_recv(&id, (void*)14, buf + 5, 100, &mr));
        result("sendv", rdma_post_sendv(&id, (void*)15, sgl, 2, IBV_SEND_SIGNALED));
        result("readv", rdma_post_readv(&id, (void*)16, sgl, 1, 3, 0x1234, 99));
        result("writev", rdma_post_writev(&id, (void*)17, sgl, 2, 1, 0x5678, 98));
        result("send", rdma_post_send(&id, (void*)18, buf + 6, 7, &mr, 2));
        result("send nomr", rdma_post_send(&id, (void*)19, buf + 7, 8, NULL, IBV_SEND_INLINE));
        result("read", rdma_post_read(&id, (void*)20, buf + 8, 9, &mr, 0, 0x9abc, 97));
        result("write", rdma_post_write(&id, (void*)21, buf + 9, 10, &mr, 1, 0xdef0, 96));
        result("write nomr", rdma_post_write(&id, (void*)22, buf + 10, 11, NULL, 8, 0x1111, 95));
        expect_ud = 1;
        result("ud_send", rdma_post_ud_send(&id, (void*)23, buf + 11, 12, &mr, 2, (struct ibv_ah*)buf, 0x123456));
        result("ud_send nomr", rdma_post_ud_send(&id, (void*)24, buf + 12, 13, NULL, 0, (struct ibv_ah*)buf, 7));
        expect_ud = 0;
    }

    static const int first[] = {1}, second[] = {0, 1}, third[] = {0, 0, 0, 1}, error1[] = {-5}, error2[] = {0, -6},
                     none[] = {0, 0};
    int (*fns[2])(struct rdma_cm_id*, struct ibv_wc*) = {rdma_get_send_comp, rdma_get_recv_comp};
    const char* names[2] = {"send_comp", "recv_comp"};
    for (int i = 0; i < 2; i++) {
        comp_case(names[i], fns[i], first, 1, 0, 0);
        comp_case(names[i], fns[i], second, 2, 0, 0);
        comp_case(names[i], fns[i], third, 4, 0, 0);
        comp_case(names[i], fns[i], error1, 1, 0, 0);
        comp_case(names[i], fns[i], error2, 2, 0, 0);
        comp_case(names[i], fns[i], none, 1, 12, 0);
        comp_case(names[i], fns[i], none, 2, 0, -1);
    }

    /* rdma_cma.h getters */
    P("local %d peer %d\n", rdma_get_local_addr(&id) == (struct sockaddr*)&id.route.addr.src_storage,
      rdma_get_peer_addr(&id) == (struct sockaddr*)&id.route.addr.dst_storage);

    /* ib.h */
    struct ib_addr a, b;
    memset(&a, 0, sizeof(a));
    P("any %d loop %d\n", ib_addr_any(&a), ib_addr_loopback(&a));
    ib_addr_set(&a, 0, 0, 0, htobe32(1));
    P("any %d loop %d raw15 %u\n", ib_addr_any(&a), ib_addr_loopback(&a), a.sib_raw[15]);
    ib_addr_set(&b, htobe32(0xfe800000), 0, htobe32(2), htobe32(3));
    P("cmp %d %d sub %llx iid %llx\n", ib_addr_cmp(&a, &b) < 0, ib_addr_cmp(&b, &b),
      (unsigned long long)be64toh(b.sib_subnet_prefix), (unsigned long long)be64toh(b.sib_interface_id));
    return 0;
}
