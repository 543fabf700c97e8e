// The uverbs write ABI: write(fd, cmd, len) with struct ib_uverbs_cmd_hdr
// (and ib_uverbs_ex_cmd_hdr for extended commands). Framing, sizes and
// errnos follow the kernel: a length that disagrees with the header is
// EINVAL, a response buffer too small for the core response is ENOSPC,
// unreadable/unwritable buffers are EFAULT, unknown commands EOPNOTSUPP.
#include "verbs.h"

#include <cerrno>
#include <infiniband/verbs.h>

namespace uvsim {

namespace {

struct Cmd {
    Context& c;
    const uint8_t* in;  // core command (after the headers)
    size_t in_len;  // core (+ driver, legacy) bytes
    uint64_t resp = 0;  // response address
    size_t out_len = 0;  // core response bytes available
    const uint8_t* drv_in = nullptr;
    size_t drv_in_len = 0;
    uint64_t drv_out = 0;
    size_t drv_out_len = 0;
    bool ex = false;
};

// Splits legacy input: core struct of `core` bytes, then driver data.
// Commands with a response have the response address first.
int legacy_split(Cmd& m, size_t core, size_t core_resp, bool has_resp) {
    if (m.in_len < core)
        return -EINVAL;
    m.drv_in = m.in + core;
    m.drv_in_len = m.in_len - core;
    if (has_resp) {
        memcpy(&m.resp, m.in, 8);
        if (m.out_len < core_resp)
            return -ENOSPC;
        m.drv_out = m.resp + core_resp;
        m.drv_out_len = m.out_len - core_resp;
    }
    return 0;
}

// Writes a response: min(available, size) bytes, the rest of the
// available space zero-filled.
int put_out(uint64_t addr, size_t avail, const void* data, size_t size) {
    if (!avail)
        return 0;
    std::vector<uint8_t> buf(avail, 0);
    memcpy(buf.data(), data, std::min(avail, size));
    return app_write(addr, buf.data(), avail) ? 0 : -EFAULT;
}

template <class T>
void get_drv(const Cmd& m, T& t, size_t& len) {
    memset(&t, 0, sizeof t);
    len = m.drv_in_len;
    memcpy(&t, m.drv_in, std::min(sizeof t, m.drv_in_len));
}

// --------------------------------------------------------------- commands

int cmd_get_context(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_get_context), sizeof(ib_uverbs_get_context_resp), true))
        return e;
    mlx5_ib_alloc_ucontext_resp d;
    if (int e = get_context(m.c, m.drv_in, m.drv_in_len, d))
        return e;
    int fd = make_async_fd(m.c);
    if (fd < 0)
        return fd;
    ib_uverbs_get_context_resp r{};
    r.async_fd = static_cast<uint32_t>(fd);
    r.num_comp_vectors = 1;
    if (put_out(m.resp, sizeof r, &r, sizeof r) || put_out(m.drv_out, m.drv_out_len, &d, sizeof d)) {
        // as the kernel: no context and no async fd when the answer cannot
        // be delivered (the application never learnt the fd)
        drop_async_fd(m.c, fd);
        m.c.have_ucontext = false;
        return -EFAULT;
    }
    return 0;
}

int cmd_query_device(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_query_device), sizeof(ib_uverbs_query_device_resp), true))
        return e;
    ib_uverbs_query_device_resp r;
    fill_query_device(*m.c.dev, r);
    return put_out(m.resp, sizeof r, &r, sizeof r);
}

int cmd_ex_query_device(Cmd& m) {
    ib_uverbs_ex_query_device q{};
    if (m.in_len < sizeof q)
        return -EINVAL;
    memcpy(&q, m.in, sizeof q);
    if (q.comp_mask || q.reserved)
        return -EINVAL;
    ib_uverbs_ex_query_device_resp r;
    fill_query_device_ex(*m.c.dev, r);
    if (m.out_len < sizeof r.base + 8)  // base, comp_mask, response_length
        return -ENOSPC;
    r.response_length = static_cast<uint32_t>(std::min(m.out_len, sizeof r));
    mlx5_ib_query_device_resp d;
    fill_mlx5_query_device(*m.c.dev, d);
    d.response_length = static_cast<uint32_t>(std::min(m.drv_out_len, sizeof d));
    if (put_out(m.resp, m.out_len, &r, sizeof r) || put_out(m.drv_out, m.drv_out_len, &d, sizeof d))
        return -EFAULT;
    return 0;
}

int cmd_query_port(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_query_port), sizeof(ib_uverbs_query_port_resp), true))
        return e;
    ib_uverbs_query_port q;
    memcpy(&q, m.in, sizeof q);
    ib_uverbs_query_port_resp r;
    if (int e = fill_query_port(*m.c.dev, q.port_num, r))
        return e;
    return put_out(m.resp, sizeof r, &r, sizeof r);
}

int cmd_alloc_pd(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_alloc_pd), sizeof(ib_uverbs_alloc_pd_resp), true))
        return e;
    uint32_t h, pdn;
    if (int e = alloc_pd(m.c, h, pdn))
        return e;
    ib_uverbs_alloc_pd_resp r{};
    r.pd_handle = h;
    mlx5_ib_alloc_pd_resp d{};
    d.pdn = pdn;
    if (put_out(m.resp, sizeof r, &r, sizeof r) || put_out(m.drv_out, m.drv_out_len, &d, sizeof d)) {
        dealloc_pd(m.c, h);
        return -EFAULT;
    }
    return 0;
}

int cmd_dealloc_pd(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_dealloc_pd), 0, false))
        return e;
    ib_uverbs_dealloc_pd q;
    memcpy(&q, m.in, sizeof q);
    return dealloc_pd(m.c, q.pd_handle);
}

int cmd_reg_mr(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_reg_mr), sizeof(ib_uverbs_reg_mr_resp), true))
        return e;
    ib_uverbs_reg_mr q;
    memcpy(&q, m.in, sizeof q);
    if ((q.start & 0xfff) != (q.hca_va & 0xfff))
        return -EINVAL;  // the core requires the same offset in the page
    uint32_t h, lkey, rkey;
    if (int e = reg_mr(m.c, q.pd_handle, q.start, q.length, q.hca_va, q.access_flags, h, lkey, rkey))
        return e;
    ib_uverbs_reg_mr_resp r{};
    r.mr_handle = h;
    r.lkey = lkey;
    r.rkey = rkey;
    if (put_out(m.resp, sizeof r, &r, sizeof r)) {
        dereg_mr(m.c, h);
        return -EFAULT;
    }
    return 0;
}

int cmd_rereg_mr(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_rereg_mr), sizeof(ib_uverbs_rereg_mr_resp), true))
        return e;
    ib_uverbs_rereg_mr q;
    memcpy(&q, m.in, sizeof q);
    if ((q.flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (q.start & 0xfff) != (q.hca_va & 0xfff))
        return -EINVAL;  // the core requires the same offset in the page
    ib_uverbs_rereg_mr_resp r{};
    if (int e = rereg_mr(m.c, q.mr_handle, q.flags, q.start, q.length, q.hca_va, q.pd_handle, q.access_flags, r.lkey,
                         r.rkey))
        return e;
    return put_out(m.resp, sizeof r, &r, sizeof r);
}

int cmd_dereg_mr(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_dereg_mr), 0, false))
        return e;
    ib_uverbs_dereg_mr q;
    memcpy(&q, m.in, sizeof q);
    return dereg_mr(m.c, q.mr_handle);
}

int cmd_alloc_mw(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_alloc_mw), sizeof(ib_uverbs_alloc_mw_resp), true))
        return e;
    ib_uverbs_alloc_mw q;
    memcpy(&q, m.in, sizeof q);
    uint32_t h, rkey;
    if (int e = alloc_mw(m.c, q.pd_handle, q.mw_type, m.drv_in, m.drv_in_len, h, rkey))
        return e;
    ib_uverbs_alloc_mw_resp r{};
    r.mw_handle = h;
    r.rkey = rkey;
    // mlx5_ib's response: comp_mask 0 and the length it wrote
    struct {
        uint32_t comp_mask, response_length;
    } d{0, static_cast<uint32_t>(std::min<size_t>(8, m.drv_out_len))};
    if (put_out(m.resp, sizeof r, &r, sizeof r) || put_out(m.drv_out, m.drv_out_len, &d, sizeof d)) {
        dealloc_mw(m.c, h);
        return -EFAULT;
    }
    return 0;
}

int cmd_dealloc_mw(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_dealloc_mw), 0, false))
        return e;
    ib_uverbs_dealloc_mw q;
    memcpy(&q, m.in, sizeof q);
    return dealloc_mw(m.c, q.mw_handle);
}

int cmd_create_comp_channel(Cmd& m) {
    if (int e =
            legacy_split(m, sizeof(ib_uverbs_create_comp_channel), sizeof(ib_uverbs_create_comp_channel_resp), true))
        return e;
    int fd = create_comp_channel(m.c);
    if (fd < 0)
        return fd;
    ib_uverbs_create_comp_channel_resp r{static_cast<uint32_t>(fd)};
    if (put_out(m.resp, sizeof r, &r, sizeof r)) {
        uverbs_close(fd);  // the application never learnt the fd
        libc().close(fd);
        return -EFAULT;
    }
    return 0;
}

// The fields the legacy and extended create commands share.
template <class Q>
CqArgs cq_args(const Q& q) {
    CqArgs a;
    a.user_handle = q.user_handle;
    a.cqe = q.cqe;
    a.comp_vector = q.comp_vector;
    a.comp_channel = q.comp_channel;
    return a;
}

template <class Q>
QpArgs qp_args(const Q& q) {
    QpArgs a;
    a.user_handle = q.user_handle;
    a.pd = q.pd_handle;
    a.send_cq = q.send_cq_handle;
    a.recv_cq = q.recv_cq_handle;
    a.srq = q.srq_handle;
    a.has_srq = q.is_srq;
    a.max_send_wr = q.max_send_wr;
    a.max_recv_wr = q.max_recv_wr;
    a.max_send_sge = q.max_send_sge;
    a.max_recv_sge = q.max_recv_sge;
    a.max_inline = q.max_inline_data;
    a.sq_sig_all = q.sq_sig_all;
    a.qp_type = q.qp_type;
    if (q.qp_type == IBV_QPT_XRC_RECV)
        a.xrcd = q.pd_handle;  // the core carries a target QP's domain there
    if (q.qp_type == IBV_QPT_XRC_SEND)
        a.has_recv_cq = false;
    return a;
}

int finish_create_cq(Cmd& m, CqArgs& a, bool ex) {
    get_drv(m, a.drv, a.drv_len);
    uint32_t h, cqe, cqn;
    if (int e = create_cq(m.c, a, h, cqe, cqn))
        return e;
    ib_uverbs_ex_create_cq_resp r{};
    r.base.cq_handle = h;
    r.base.cqe = cqe;
    r.response_length = static_cast<uint32_t>(std::min(m.out_len, sizeof r));
    mlx5_ib_create_cq_resp d{};
    d.cqn = cqn;
    if (put_out(m.resp, ex ? m.out_len : sizeof r.base, &r, ex ? sizeof r : sizeof r.base) ||
        put_out(m.drv_out, m.drv_out_len, &d, sizeof d)) {
        ib_uverbs_destroy_cq_resp dr;
        destroy_cq(m.c, h, dr);
        return -EFAULT;
    }
    return 0;
}

int cmd_create_cq(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_create_cq), sizeof(ib_uverbs_create_cq_resp), true))
        return e;
    ib_uverbs_create_cq q;
    memcpy(&q, m.in, sizeof q);
    CqArgs a = cq_args(q);
    return finish_create_cq(m, a, false);
}

int cmd_ex_create_cq(Cmd& m) {
    ib_uverbs_ex_create_cq q{};
    if (m.in_len < offsetof(ib_uverbs_ex_create_cq, flags))
        return -EINVAL;
    memcpy(&q, m.in, std::min(m.in_len, sizeof q));
    if (q.comp_mask || q.reserved)
        return -EINVAL;
    if (m.out_len < sizeof(ib_uverbs_create_cq_resp))
        return -ENOSPC;
    CqArgs a = cq_args(q);
    a.flags = q.flags;
    if (q.flags & ~uint32_t(IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION | IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN))
        return -EINVAL;
    return finish_create_cq(m, a, true);
}

int cmd_resize_cq(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_resize_cq), sizeof(ib_uverbs_resize_cq_resp), true))
        return e;
    ib_uverbs_resize_cq q;
    memcpy(&q, m.in, sizeof q);
    mlx5_ib_resize_cq d;
    size_t dlen;
    get_drv(m, d, dlen);
    ib_uverbs_resize_cq_resp r{};
    if (int e = resize_cq(m.c, q.cq_handle, q.cqe, d, dlen, r.cqe))
        return e;
    return put_out(m.resp, sizeof r, &r, sizeof r);
}

int cmd_destroy_cq(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_destroy_cq), sizeof(ib_uverbs_destroy_cq_resp), true))
        return e;
    ib_uverbs_destroy_cq q;
    memcpy(&q, m.in, sizeof q);
    ib_uverbs_destroy_cq_resp r{};
    if (int e = destroy_cq(m.c, q.cq_handle, r))
        return e;
    return put_out(m.resp, sizeof r, &r, sizeof r);
}

int finish_create_qp(Cmd& m, QpArgs& a, bool ex) {
    get_drv(m, a.drv, a.drv_len);
    uint32_t h;
    QpCaps caps;
    mlx5_ib_create_qp_resp d;
    if (int e = create_qp(m.c, a, h, caps, d))
        return e;
    ib_uverbs_ex_create_qp_resp r{};
    r.base.qp_handle = h;
    r.base.qpn = caps.qpn;
    r.base.max_send_wr = caps.max_send_wr;
    r.base.max_recv_wr = caps.max_recv_wr;
    r.base.max_send_sge = caps.max_send_sge;
    r.base.max_recv_sge = caps.max_recv_sge;
    r.base.max_inline_data = caps.max_inline;
    r.response_length = static_cast<uint32_t>(std::min(m.out_len, sizeof r));
    if (put_out(m.resp, ex ? m.out_len : sizeof r.base, &r, ex ? sizeof r : sizeof r.base) ||
        put_out(m.drv_out, m.drv_out_len, &d, sizeof d)) {
        uint32_t ev;
        destroy_qp(m.c, h, ev);
        return -EFAULT;
    }
    return 0;
}

int cmd_create_qp(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_create_qp), sizeof(ib_uverbs_create_qp_resp), true))
        return e;
    ib_uverbs_create_qp q;
    memcpy(&q, m.in, sizeof q);
    QpArgs a = qp_args(q);
    return finish_create_qp(m, a, false);
}

int cmd_ex_create_qp(Cmd& m) {
    ib_uverbs_ex_create_qp q{};
    if (m.in_len < offsetof(ib_uverbs_ex_create_qp, comp_mask))
        return -EINVAL;
    memcpy(&q, m.in, std::min(m.in_len, sizeof q));
    if (q.comp_mask & ~uint32_t(IB_UVERBS_CREATE_QP_MASK_IND_TABLE))
        return -EINVAL;
    if (q.reserved)
        return -EINVAL;
    if (m.out_len < sizeof(ib_uverbs_create_qp_resp))
        return -ENOSPC;
    QpArgs a = qp_args(q);
    a.create_flags = q.create_flags;
    if (q.comp_mask & IB_UVERBS_CREATE_QP_MASK_IND_TABLE) {
        // an RSS QP: the table instead of CQs and queues (a send CQ only
        // with a send queue), mlx5_ib_create_qp_rss as driver data
        a.has_ind_tbl = true;
        a.ind_tbl = q.rwq_ind_tbl_handle;
        a.has_recv_cq = false;
        if (!q.max_send_wr)
            a.send_cq = 0;
        memcpy(&a.rss, m.drv_in, std::min(sizeof a.rss, m.drv_in_len));
    }
    return finish_create_qp(m, a, true);
}

int cmd_modify_qp(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_modify_qp), 0, false))
        return e;
    ib_uverbs_modify_qp q;
    memcpy(&q, m.in, sizeof q);
    return modify_qp(m.c, q);
}

int cmd_ex_modify_qp(Cmd& m) {
    ib_uverbs_ex_modify_qp q{};
    if (m.in_len < sizeof q.base)
        return -EINVAL;
    memcpy(&q, m.in, std::min(m.in_len, sizeof q));
    if (q.base.attr_mask & ~uint32_t((IBV_QP_RATE_LIMIT << 1) - 1))
        return -EOPNOTSUPP;
    if (q.base.attr_mask & IBV_QP_RATE_LIMIT)
        return -EOPNOTSUPP;
    if (int e = modify_qp(m.c, q.base))
        return e;
    ib_uverbs_ex_modify_qp_resp r{};
    r.response_length = static_cast<uint32_t>(std::min(m.out_len, sizeof r));
    if (m.out_len && put_out(m.resp, m.out_len, &r, sizeof r))
        return -EFAULT;
    return 0;
}

int cmd_query_qp(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_query_qp), sizeof(ib_uverbs_query_qp_resp), true))
        return e;
    ib_uverbs_query_qp q;
    memcpy(&q, m.in, sizeof q);
    ib_uverbs_query_qp_resp r;
    if (int e = query_qp(m.c, q.qp_handle, q.attr_mask, r))
        return e;
    return put_out(m.resp, sizeof r, &r, sizeof r);
}

int cmd_destroy_qp(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_destroy_qp), sizeof(ib_uverbs_destroy_qp_resp), true))
        return e;
    ib_uverbs_destroy_qp q;
    memcpy(&q, m.in, sizeof q);
    ib_uverbs_destroy_qp_resp r{};
    if (int e = destroy_qp(m.c, q.qp_handle, r.events_reported))
        return e;
    return put_out(m.resp, sizeof r, &r, sizeof r);
}

int cmd_create_srq(Cmd& m) {
    // the response grew srqn; older users pass 12 bytes
    if (int e = legacy_split(m, sizeof(ib_uverbs_create_srq), 12, true))
        return e;
    ib_uverbs_create_srq q;
    memcpy(&q, m.in, sizeof q);
    SrqArgs a;
    a.user_handle = q.user_handle;
    a.pd = q.pd_handle;
    a.max_wr = q.max_wr;
    a.max_sge = q.max_sge;
    a.limit = q.srq_limit;
    // driver data follows the (possibly longer) core response
    const size_t core_resp = std::min(m.out_len, sizeof(ib_uverbs_create_srq_resp));
    m.drv_out = m.resp + core_resp;
    m.drv_out_len = m.out_len - core_resp;
    get_drv(m, a.drv, a.drv_len);
    uint32_t h;
    ib_uverbs_create_srq_resp r{};
    if (int e = create_srq(m.c, a, h, r.max_wr, r.max_sge, r.srqn))
        return e;
    r.srq_handle = h;
    mlx5_ib_create_srq_resp d{};
    d.srqn = r.srqn;
    if (put_out(m.resp, core_resp, &r, sizeof r) || put_out(m.drv_out, m.drv_out_len, &d, sizeof d)) {
        uint32_t ev;
        destroy_srq(m.c, h, ev);
        return -EFAULT;
    }
    return 0;
}

int cmd_create_xsrq(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_create_xsrq), sizeof(ib_uverbs_create_srq_resp), true))
        return e;
    ib_uverbs_create_xsrq q;
    memcpy(&q, m.in, sizeof q);
    SrqArgs a;
    a.user_handle = q.user_handle;
    a.srq_type = q.srq_type;
    a.pd = q.pd_handle;
    a.max_wr = q.max_wr;
    a.max_sge = q.max_sge;
    a.limit = q.srq_limit;
    a.xrcd = q.xrcd_handle;
    a.cq = q.cq_handle;
    get_drv(m, a.drv, a.drv_len);
    uint32_t h;
    ib_uverbs_create_srq_resp r{};
    if (int e = create_srq(m.c, a, h, r.max_wr, r.max_sge, r.srqn))
        return e;
    r.srq_handle = h;
    mlx5_ib_create_srq_resp d{};
    d.srqn = r.srqn;
    if (put_out(m.resp, sizeof r, &r, sizeof r) || put_out(m.drv_out, m.drv_out_len, &d, sizeof d)) {
        uint32_t ev;
        destroy_srq(m.c, h, ev);
        return -EFAULT;
    }
    return 0;
}

int cmd_open_xrcd(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_open_xrcd), sizeof(ib_uverbs_open_xrcd_resp), true))
        return e;
    ib_uverbs_open_xrcd q;
    memcpy(&q, m.in, sizeof q);
    uint32_t h;
    if (int e = open_xrcd(m.c, static_cast<int>(q.fd), q.oflags, h))
        return e;
    ib_uverbs_open_xrcd_resp r{};
    r.xrcd_handle = h;
    if (put_out(m.resp, sizeof r, &r, sizeof r)) {
        close_xrcd(m.c, h);
        return -EFAULT;
    }
    return 0;
}

int cmd_close_xrcd(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_close_xrcd), 0, false))
        return e;
    ib_uverbs_close_xrcd q;
    memcpy(&q, m.in, sizeof q);
    return close_xrcd(m.c, q.xrcd_handle);
}

int cmd_open_qp(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_open_qp), sizeof(ib_uverbs_create_qp_resp), true))
        return e;
    ib_uverbs_open_qp q;
    memcpy(&q, m.in, sizeof q);
    uint32_t h;
    if (int e = open_qp(m.c, q.pd_handle, q.qpn, q.qp_type, q.user_handle, h))
        return e;
    // the kernel answers the handle and the number, nothing else
    ib_uverbs_create_qp_resp r{};
    r.qp_handle = h;
    r.qpn = q.qpn;
    if (put_out(m.resp, sizeof r, &r, sizeof r)) {
        uint32_t ev;
        destroy_qp(m.c, h, ev);
        return -EFAULT;
    }
    return 0;
}

int cmd_modify_srq(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_modify_srq), 0, false))
        return e;
    ib_uverbs_modify_srq q;
    memcpy(&q, m.in, sizeof q);
    return modify_srq(m.c, q.srq_handle, q.attr_mask, q.max_wr, q.srq_limit);
}

int cmd_query_srq(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_query_srq), sizeof(ib_uverbs_query_srq_resp), true))
        return e;
    ib_uverbs_query_srq q;
    memcpy(&q, m.in, sizeof q);
    ib_uverbs_query_srq_resp r;
    if (int e = query_srq(m.c, q.srq_handle, r))
        return e;
    return put_out(m.resp, sizeof r, &r, sizeof r);
}

int cmd_destroy_srq(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_destroy_srq), sizeof(ib_uverbs_destroy_srq_resp), true))
        return e;
    ib_uverbs_destroy_srq q;
    memcpy(&q, m.in, sizeof q);
    ib_uverbs_destroy_srq_resp r{};
    if (int e = destroy_srq(m.c, q.srq_handle, r.events_reported))
        return e;
    return put_out(m.resp, sizeof r, &r, sizeof r);
}

int cmd_create_ah(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_create_ah), sizeof(ib_uverbs_create_ah_resp), true))
        return e;
    ib_uverbs_create_ah q;
    memcpy(&q, m.in, sizeof q);
    uint32_t h;
    mlx5_ib_create_ah_resp d;
    if (int e = create_ah(m.c, q.pd_handle, q.user_handle, q.attr, h, &d))
        return e;
    ib_uverbs_create_ah_resp r{};
    r.ah_handle = h;
    d.response_length = static_cast<uint32_t>(std::min(m.drv_out_len, sizeof d));
    if (put_out(m.resp, sizeof r, &r, sizeof r) || put_out(m.drv_out, m.drv_out_len, &d, sizeof d)) {
        destroy_ah(m.c, h);
        return -EFAULT;
    }
    return 0;
}

int cmd_destroy_ah(Cmd& m) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_destroy_ah), 0, false))
        return e;
    ib_uverbs_destroy_ah q;
    memcpy(&q, m.in, sizeof q);
    return destroy_ah(m.c, q.ah_handle);
}

int cmd_attach_mcast(Cmd& m, bool attach) {
    if (int e = legacy_split(m, sizeof(ib_uverbs_attach_mcast), 0, false))
        return e;
    ib_uverbs_attach_mcast q;
    memcpy(&q, m.in, sizeof q);
    return attach ? attach_mcast(m.c, q.qp_handle, q.gid, q.mlid) : detach_mcast(m.c, q.qp_handle, q.gid, q.mlid);
}

// ------------------------------------------------- WQs, tables, flows

int cmd_ex_create_wq(Cmd& m) {
    ib_uverbs_ex_create_wq q{};
    if (m.in_len < offsetof(ib_uverbs_ex_create_wq, create_flags))
        return -EINVAL;
    memcpy(&q, m.in, std::min(m.in_len, sizeof q));
    if (q.comp_mask)
        return -EOPNOTSUPP;
    if (m.out_len < offsetof(ib_uverbs_ex_create_wq_resp, wqn) + 4)
        return -ENOSPC;
    WqArgs a;
    a.user_handle = q.user_handle;
    a.wq_type = q.wq_type;
    a.pd = q.pd_handle;
    a.cq = q.cq_handle;
    a.max_wr = q.max_wr;
    a.max_sge = q.max_sge;
    a.create_flags = q.create_flags;
    get_drv(m, a.drv, a.drv_len);
    ib_uverbs_ex_create_wq_resp r{};
    if (int e = create_wq(m.c, a, r.wq_handle, r.max_wr, r.max_sge, r.wqn))
        return e;
    r.response_length = static_cast<uint32_t>(std::min(m.out_len, sizeof r));
    mlx5_ib_create_wq_resp d{};
    d.response_length = static_cast<uint32_t>(std::min(m.drv_out_len, sizeof d));
    if (put_out(m.resp, m.out_len, &r, sizeof r) || put_out(m.drv_out, m.drv_out_len, &d, sizeof d)) {
        uint32_t ev;
        destroy_wq(m.c, r.wq_handle, ev);
        return -EFAULT;
    }
    return 0;
}

int cmd_ex_modify_wq(Cmd& m) {
    ib_uverbs_ex_modify_wq q{};
    if (m.in_len < offsetof(ib_uverbs_ex_modify_wq, flags))
        return -EINVAL;
    memcpy(&q, m.in, std::min(m.in_len, sizeof q));
    return modify_wq(m.c, q, m.drv_in_len, m.drv_in);
}

// EX_MODIFY_CQ: the core wants a mask of known bits (none: EINVAL; beyond
// moderation: EOPNOTSUPP) and a zero reserved word.
int cmd_ex_modify_cq(Cmd& m) {
    ib_uverbs_ex_modify_cq q{};
    if (m.in_len < sizeof q)
        return -EINVAL;
    memcpy(&q, m.in, sizeof q);
    if (!q.attr_mask || q.reserved)
        return -EINVAL;
    if (q.attr_mask > 1)  // IB_CQ_MODERATE
        return -EOPNOTSUPP;
    return moderate_cq(m.c, q.cq_handle, q.attr.cq_count, q.attr.cq_period);
}

// An extended command's core part whose size is fixed: too short EINVAL,
// copied into q; a comp_mask this model knows no bit of answers `bad_mask`
// (EINVAL, or EOPNOTSUPP where mlx5_ib says so). 0 when q is ready.
template <class T>
int take_ex_core(const Cmd& m, T& q, int bad_mask) {
    if (m.in_len < sizeof q)
        return -EINVAL;
    memcpy(&q, m.in, sizeof q);
    return q.comp_mask ? bad_mask : 0;
}

int cmd_ex_destroy_wq(Cmd& m) {
    ib_uverbs_ex_destroy_wq q{};
    if (int e = take_ex_core(m, q, -EINVAL))
        return e;
    if (m.out_len < sizeof(ib_uverbs_ex_destroy_wq_resp))
        return -ENOSPC;
    ib_uverbs_ex_destroy_wq_resp r{};
    if (int e = destroy_wq(m.c, q.wq_handle, r.events_reported))
        return e;
    r.response_length = sizeof r;
    return put_out(m.resp, m.out_len, &r, sizeof r);
}

int cmd_ex_create_rwq_ind_tbl(Cmd& m) {
    ib_uverbs_ex_create_rwq_ind_table q{};
    if (int e = take_ex_core(m, q, -EOPNOTSUPP))
        return e;
    if (q.log_ind_tbl_size > IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE)
        return -EINVAL;
    // the handles follow, padded to 8 bytes (one handle fills the padding)
    const size_t n = size_t(1) << q.log_ind_tbl_size;
    size_t need = n * 4;
    if (n == 1)
        need += 4;
    if (m.in_len - sizeof q < need)
        return -EINVAL;
    for (size_t i = sizeof q + n * 4; i < m.in_len; ++i)
        if (m.in[i])
            return -EOPNOTSUPP;
    std::vector<uint32_t> h(n);
    memcpy(h.data(), m.in + sizeof q, n * 4);
    // mlx5_ib takes no driver data
    for (size_t i = 0; i < m.drv_in_len; ++i)
        if (m.drv_in[i])
            return -EOPNOTSUPP;
    if (m.out_len < offsetof(ib_uverbs_ex_create_rwq_ind_table_resp, ind_tbl_num) + 4)
        return -ENOSPC;
    ib_uverbs_ex_create_rwq_ind_table_resp r{};
    if (int e = create_rwq_ind_tbl(m.c, q.log_ind_tbl_size, h.data(), r.ind_tbl_handle, r.ind_tbl_num))
        return e;
    r.response_length = static_cast<uint32_t>(std::min(m.out_len, sizeof r));
    mlx5_ib_create_rwq_ind_tbl_resp d{};
    d.response_length = static_cast<uint32_t>(std::min(m.drv_out_len, sizeof d));
    if (put_out(m.resp, m.out_len, &r, sizeof r) || put_out(m.drv_out, m.drv_out_len, &d, sizeof d)) {
        destroy_rwq_ind_tbl(m.c, r.ind_tbl_handle);
        return -EFAULT;
    }
    return 0;
}

int cmd_ex_destroy_rwq_ind_tbl(Cmd& m) {
    ib_uverbs_ex_destroy_rwq_ind_table q{};
    if (int e = take_ex_core(m, q, -EINVAL))
        return e;
    return destroy_rwq_ind_tbl(m.c, q.ind_tbl_handle);
}

int cmd_ex_create_flow(Cmd& m) {
    ib_uverbs_create_flow q{};
    if (int e = take_ex_core(m, q, -EINVAL))
        return e;
    if (m.out_len < sizeof(ib_uverbs_create_flow_resp))
        return -ENOSPC;
    UVSIM_TRACE("CREATE_FLOW: core %zu bytes (attr size %u, %u specs, type %u priority %u port %u flags 0x%x), "
                "driver %zu bytes",
                m.in_len, q.flow_attr.size, q.flow_attr.num_of_specs, q.flow_attr.type, q.flow_attr.priority,
                q.flow_attr.port, q.flow_attr.flags, m.drv_in_len);
    ib_uverbs_create_flow_resp r{};
    if (int e =
            create_flow(m.c, q.qp_handle, m.in + offsetof(ib_uverbs_create_flow, flow_attr),
                        m.in_len - offsetof(ib_uverbs_create_flow, flow_attr), m.drv_in, m.drv_in_len, r.flow_handle))
        return e;
    if (put_out(m.resp, m.out_len, &r, sizeof r)) {
        destroy_flow(m.c, r.flow_handle);
        return -EFAULT;
    }
    return 0;
}

int cmd_ex_destroy_flow(Cmd& m) {
    ib_uverbs_destroy_flow q{};
    if (int e = take_ex_core(m, q, -EINVAL))
        return e;
    return destroy_flow(m.c, q.flow_handle);
}

}  // namespace

ssize_t uverbs_write(Context& c, const void* buf, size_t len) {
    ib_uverbs_cmd_hdr hdr;
    if (len < sizeof hdr)
        return -EINVAL;
    if (len > (1u << 20))
        return -EINVAL;
    std::vector<uint8_t> cmd(len);
    if (!app_read(cmd.data(), reinterpret_cast<uint64_t>(buf), len))
        return -EFAULT;
    memcpy(&hdr, cmd.data(), sizeof hdr);
    const bool ex = hdr.command & IB_USER_VERBS_CMD_FLAG_EXTENDED;
    if (hdr.command & ~(IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_CMD_COMMAND_MASK))
        return -EINVAL;
    const uint32_t op = hdr.command & IB_USER_VERBS_CMD_COMMAND_MASK;
    if (fd_kind(c.fd) != FdKind::Uverbs)
        return -EBADF;
    if (c.dev->removed)
        return -EIO;  // disassociated: its objects went with the device
    if (c.dev->fatal && op != IB_USER_VERBS_CMD_DESTROY_QP && op != IB_USER_VERBS_CMD_DESTROY_CQ &&
        op != IB_USER_VERBS_CMD_DESTROY_SRQ && op != IB_USER_VERBS_CMD_DEALLOC_PD && op != IB_USER_VERBS_CMD_DEREG_MR &&
        op != IB_USER_VERBS_CMD_DESTROY_AH && op != IB_USER_VERBS_CMD_DEALLOC_MW &&
        op != IB_USER_VERBS_CMD_CLOSE_XRCD &&
        !(ex &&
          (op == IB_USER_VERBS_EX_CMD_DESTROY_FLOW || op == IB_USER_VERBS_EX_CMD_DESTROY_WQ ||
           op == IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL)))
        return -EIO;  // the device is gone: only clean-up works
    if (!c.have_ucontext && op != IB_USER_VERBS_CMD_GET_CONTEXT)
        return -EINVAL;
    Cmd m{c, nullptr, 0};
    m.ex = ex;
    if (!ex) {
        if (hdr.in_words * 4u != len)
            return -EINVAL;
        m.in = cmd.data() + sizeof hdr;
        m.in_len = len - sizeof hdr;
        m.out_len = hdr.out_words * 4u;
    } else {
        ib_uverbs_ex_cmd_hdr xh;
        if (len < sizeof hdr + sizeof xh)
            return -EINVAL;
        memcpy(&xh, cmd.data() + sizeof hdr, sizeof xh);
        if (xh.cmd_hdr_reserved)
            return -EINVAL;
        if (len != sizeof hdr + sizeof xh + (size_t(hdr.in_words) + xh.provider_in_words) * 8)
            return -EINVAL;
        if (!xh.response && (hdr.out_words || xh.provider_out_words))
            return -EFAULT;
        m.in = cmd.data() + sizeof hdr + sizeof xh;
        m.in_len = hdr.in_words * 8u;
        m.drv_in = m.in + m.in_len;
        m.drv_in_len = xh.provider_in_words * 8u;
        m.resp = xh.response;
        m.out_len = hdr.out_words * 8u;
        m.drv_out = m.resp + m.out_len;
        m.drv_out_len = xh.provider_out_words * 8u;
    }
    int r;
    if (!ex) {
        switch (op) {
        case IB_USER_VERBS_CMD_GET_CONTEXT: r = cmd_get_context(m); break;
        case IB_USER_VERBS_CMD_QUERY_DEVICE: r = cmd_query_device(m); break;
        case IB_USER_VERBS_CMD_QUERY_PORT: r = cmd_query_port(m); break;
        case IB_USER_VERBS_CMD_ALLOC_PD: r = cmd_alloc_pd(m); break;
        case IB_USER_VERBS_CMD_DEALLOC_PD: r = cmd_dealloc_pd(m); break;
        case IB_USER_VERBS_CMD_CREATE_AH: r = cmd_create_ah(m); break;
        case IB_USER_VERBS_CMD_DESTROY_AH: r = cmd_destroy_ah(m); break;
        case IB_USER_VERBS_CMD_REG_MR: r = cmd_reg_mr(m); break;
        case IB_USER_VERBS_CMD_REREG_MR: r = cmd_rereg_mr(m); break;
        case IB_USER_VERBS_CMD_DEREG_MR: r = cmd_dereg_mr(m); break;
        case IB_USER_VERBS_CMD_ALLOC_MW: r = cmd_alloc_mw(m); break;
        case IB_USER_VERBS_CMD_DEALLOC_MW: r = cmd_dealloc_mw(m); break;
        case IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL: r = cmd_create_comp_channel(m); break;
        case IB_USER_VERBS_CMD_CREATE_CQ: r = cmd_create_cq(m); break;
        case IB_USER_VERBS_CMD_RESIZE_CQ: r = cmd_resize_cq(m); break;
        case IB_USER_VERBS_CMD_DESTROY_CQ: r = cmd_destroy_cq(m); break;
        case IB_USER_VERBS_CMD_CREATE_QP: r = cmd_create_qp(m); break;
        case IB_USER_VERBS_CMD_QUERY_QP: r = cmd_query_qp(m); break;
        case IB_USER_VERBS_CMD_MODIFY_QP: r = cmd_modify_qp(m); break;
        case IB_USER_VERBS_CMD_DESTROY_QP: r = cmd_destroy_qp(m); break;
        case IB_USER_VERBS_CMD_ATTACH_MCAST: r = cmd_attach_mcast(m, true); break;
        case IB_USER_VERBS_CMD_DETACH_MCAST: r = cmd_attach_mcast(m, false); break;
        case IB_USER_VERBS_CMD_CREATE_SRQ: r = cmd_create_srq(m); break;
        case IB_USER_VERBS_CMD_MODIFY_SRQ: r = cmd_modify_srq(m); break;
        case IB_USER_VERBS_CMD_QUERY_SRQ: r = cmd_query_srq(m); break;
        case IB_USER_VERBS_CMD_DESTROY_SRQ: r = cmd_destroy_srq(m); break;
        case IB_USER_VERBS_CMD_OPEN_XRCD: r = cmd_open_xrcd(m); break;
        case IB_USER_VERBS_CMD_CLOSE_XRCD: r = cmd_close_xrcd(m); break;
        case IB_USER_VERBS_CMD_CREATE_XSRQ: r = cmd_create_xsrq(m); break;
        case IB_USER_VERBS_CMD_OPEN_QP: r = cmd_open_qp(m); break;
        default: r = -EOPNOTSUPP; break;
        }
    } else {
        switch (op) {
        case IB_USER_VERBS_EX_CMD_QUERY_DEVICE: r = cmd_ex_query_device(m); break;
        case IB_USER_VERBS_EX_CMD_CREATE_CQ: r = cmd_ex_create_cq(m); break;
        case IB_USER_VERBS_EX_CMD_CREATE_QP: r = cmd_ex_create_qp(m); break;
        case IB_USER_VERBS_EX_CMD_MODIFY_QP: r = cmd_ex_modify_qp(m); break;
        case IB_USER_VERBS_EX_CMD_CREATE_FLOW: r = cmd_ex_create_flow(m); break;
        case IB_USER_VERBS_EX_CMD_DESTROY_FLOW: r = cmd_ex_destroy_flow(m); break;
        case IB_USER_VERBS_EX_CMD_CREATE_WQ: r = cmd_ex_create_wq(m); break;
        case IB_USER_VERBS_EX_CMD_MODIFY_WQ: r = cmd_ex_modify_wq(m); break;
        case IB_USER_VERBS_EX_CMD_MODIFY_CQ: r = cmd_ex_modify_cq(m); break;
        case IB_USER_VERBS_EX_CMD_DESTROY_WQ: r = cmd_ex_destroy_wq(m); break;
        case IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL: r = cmd_ex_create_rwq_ind_tbl(m); break;
        case IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL: r = cmd_ex_destroy_rwq_ind_tbl(m); break;
        default: r = -EOPNOTSUPP; break;
        }
    }
    UVSIM_TRACE("write %s%u len %zu -> %d", ex ? "ex " : "", op, len, r);
    return r < 0 ? r : static_cast<ssize_t>(len);
}

}  // namespace uvsim
