// Builds uverbs write() commands as libibverbs + libmlx5 lay them out
// (used by the unit tests and by the fuzzer's seed generator).
//
// Legacy commands: struct ib_uverbs_cmd_hdr, the core struct (its first u64
// is the response address when the command has a response), then the
// driver's (mlx5) struct; in_words counts 4-byte words of everything,
// out_words those of the core + driver response.
// Extended commands: the header's command carries
// IB_USER_VERBS_CMD_FLAG_EXTENDED, then struct ib_uverbs_ex_cmd_hdr (the
// response address and the provider's word counts, in 8-byte words), the
// core struct and the driver struct.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/mlx5-abi.h>

namespace uvsim_test {

using Bytes = std::vector<uint8_t>;

inline void append(Bytes& b, const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
}

// core: the core struct's bytes (core_len); resp/resp_len: where the
// response goes and how many bytes (core + driver) it may take; a core
// with a response gets `resp` in its first 8 bytes.
inline Bytes legacy_cmd(uint32_t op, const void* core, size_t core_len, bool has_resp, uint64_t resp, size_t resp_len,
                        const void* drv = nullptr, size_t drv_len = 0) {
    Bytes b;
    ib_uverbs_cmd_hdr h{};
    h.command = op;
    h.in_words = static_cast<uint16_t>((sizeof h + core_len + drv_len) / 4);
    h.out_words = static_cast<uint16_t>(resp_len / 4);
    append(b, &h, sizeof h);
    const size_t at = b.size();
    append(b, core, core_len);
    if (has_resp)
        memcpy(b.data() + at, &resp, 8);
    if (drv_len)
        append(b, drv, drv_len);
    return b;
}

template <class Core>
Bytes legacy(uint32_t op, const Core& core, uint64_t resp, size_t resp_len, const void* drv = nullptr,
             size_t drv_len = 0) {
    return legacy_cmd(op, &core, sizeof core, true, resp, resp_len, drv, drv_len);
}

template <class Core>
Bytes legacy_noresp(uint32_t op, const Core& core, const void* drv = nullptr, size_t drv_len = 0) {
    return legacy_cmd(op, &core, sizeof core, false, 0, 0, drv, drv_len);
}

// Extended: lengths must be multiples of 8.
inline Bytes ex_cmd(uint32_t op, const void* core, size_t core_len, uint64_t resp, size_t resp_len, const void* drv,
                    size_t drv_len, size_t drv_resp_len) {
    Bytes b;
    ib_uverbs_cmd_hdr h{};
    h.command = IB_USER_VERBS_CMD_FLAG_EXTENDED | op;
    h.in_words = static_cast<uint16_t>(core_len / 8);
    h.out_words = static_cast<uint16_t>(resp_len / 8);
    ib_uverbs_ex_cmd_hdr x{};
    x.response = resp;
    x.provider_in_words = static_cast<uint16_t>(drv_len / 8);
    x.provider_out_words = static_cast<uint16_t>(drv_resp_len / 8);
    append(b, &h, sizeof h);
    append(b, &x, sizeof x);
    append(b, core, core_len);
    if (drv_len)
        append(b, drv, drv_len);
    return b;
}

// ---- the commands of a typical mlx5 program, with their driver data

inline Bytes get_context(uint64_t resp, size_t req_len = sizeof(mlx5_ib_alloc_ucontext_req_v2), uint32_t flags = 0,
                         uint32_t bfregs = 4) {
    ib_uverbs_get_context q{};
    uint8_t drv[64] = {};
    mlx5_ib_alloc_ucontext_req_v2 r{};
    r.total_num_bfregs = bfregs;
    r.num_low_latency_bfregs = 0;
    r.flags = flags;
    r.max_cqe_version = 1;
    memcpy(drv, &r, std::min(sizeof r, sizeof drv));
    return legacy(IB_USER_VERBS_CMD_GET_CONTEXT, q, resp,
                  sizeof(ib_uverbs_get_context_resp) + sizeof(mlx5_ib_alloc_ucontext_resp), drv, req_len);
}

inline Bytes alloc_pd(uint64_t resp) {
    ib_uverbs_alloc_pd q{};
    return legacy(IB_USER_VERBS_CMD_ALLOC_PD, q, resp, sizeof(ib_uverbs_alloc_pd_resp) + sizeof(mlx5_ib_alloc_pd_resp));
}

inline Bytes dealloc_pd(uint32_t h) {
    ib_uverbs_dealloc_pd q{};
    q.pd_handle = h;
    return legacy_noresp(IB_USER_VERBS_CMD_DEALLOC_PD, q);
}

inline Bytes reg_mr(uint64_t resp, uint32_t pd, uint64_t start, uint64_t len, uint32_t access, uint64_t iova = ~0ull) {
    ib_uverbs_reg_mr q{};
    q.start = start;
    q.length = len;
    q.hca_va = iova == ~0ull ? start : iova;
    q.pd_handle = pd;
    q.access_flags = access;
    return legacy(IB_USER_VERBS_CMD_REG_MR, q, resp, sizeof(ib_uverbs_reg_mr_resp));
}

inline Bytes dereg_mr(uint32_t h) {
    ib_uverbs_dereg_mr q{};
    q.mr_handle = h;
    return legacy_noresp(IB_USER_VERBS_CMD_DEREG_MR, q);
}

inline Bytes alloc_mw(uint64_t resp, uint32_t pd, uint8_t type) {
    ib_uverbs_alloc_mw q{};
    q.pd_handle = pd;
    q.mw_type = type;
    return legacy(IB_USER_VERBS_CMD_ALLOC_MW, q, resp, sizeof(ib_uverbs_alloc_mw_resp));
}

inline Bytes dealloc_mw(uint32_t h) {
    ib_uverbs_dealloc_mw q{};
    q.mw_handle = h;
    return legacy_noresp(IB_USER_VERBS_CMD_DEALLOC_MW, q);
}

inline Bytes create_comp_channel(uint64_t resp) {
    ib_uverbs_create_comp_channel q{};
    return legacy(IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, q, resp, sizeof(ib_uverbs_create_comp_channel_resp));
}

inline mlx5_ib_create_cq cq_drv(uint64_t buf, uint64_t db, uint32_t cqe_size = 64) {
    mlx5_ib_create_cq d{};
    d.buf_addr = buf;
    d.db_addr = db;
    d.cqe_size = cqe_size;
    return d;
}

inline Bytes create_cq(uint64_t resp, uint32_t cqe, const mlx5_ib_create_cq& d, int32_t channel = -1,
                       uint64_t user_handle = 0x1111) {
    ib_uverbs_create_cq q{};
    q.user_handle = user_handle;
    q.cqe = cqe;
    q.comp_channel = channel;
    return legacy(IB_USER_VERBS_CMD_CREATE_CQ, q, resp,
                  sizeof(ib_uverbs_create_cq_resp) + sizeof(mlx5_ib_create_cq_resp), &d, sizeof d);
}

inline Bytes ex_create_cq(uint64_t resp, uint32_t cqe, const mlx5_ib_create_cq& d, uint32_t flags = 0) {
    ib_uverbs_ex_create_cq q{};
    q.user_handle = 0x2222;
    q.cqe = cqe;
    q.comp_channel = -1;
    q.flags = flags;
    return ex_cmd(IB_USER_VERBS_EX_CMD_CREATE_CQ, &q, sizeof q, resp, sizeof(ib_uverbs_ex_create_cq_resp), &d, sizeof d,
                  sizeof(mlx5_ib_create_cq_resp));
}

inline Bytes destroy_cq(uint64_t resp, uint32_t h) {
    ib_uverbs_destroy_cq q{};
    q.cq_handle = h;
    return legacy(IB_USER_VERBS_CMD_DESTROY_CQ, q, resp, sizeof(ib_uverbs_destroy_cq_resp));
}

inline mlx5_ib_create_qp qp_drv(uint64_t buf, uint64_t db, uint32_t sq_wqebbs, uint32_t rq_wqes,
                                uint32_t rq_shift = 4) {
    mlx5_ib_create_qp d{};
    d.buf_addr = buf;
    d.db_addr = db;
    d.sq_wqe_count = sq_wqebbs;
    d.rq_wqe_count = rq_wqes;
    d.rq_wqe_shift = rq_wqes ? rq_shift : 0;
    return d;
}

struct QpSpec {
    uint32_t pd = 0, scq = 0, rcq = 0, srq = 0;
    bool has_srq = false;
    uint8_t type = IBV_QPT_RC;
    uint32_t send_wr = 16, recv_wr = 16, send_sge = 1, recv_sge = 1, inline_data = 0;
};

// The fields the legacy and extended create commands share.
template <class Q>
void fill_qp(Q& q, const QpSpec& s) {
    q.pd_handle = s.pd;
    q.send_cq_handle = s.scq;
    q.recv_cq_handle = s.rcq;
    q.srq_handle = s.srq;
    q.is_srq = s.has_srq;
    q.qp_type = s.type;
    q.max_send_wr = s.send_wr;
    q.max_recv_wr = s.recv_wr;
    q.max_send_sge = s.send_sge;
    q.max_recv_sge = s.recv_sge;
    q.max_inline_data = s.inline_data;
}

inline Bytes create_qp(uint64_t resp, const QpSpec& s, const mlx5_ib_create_qp& d) {
    ib_uverbs_create_qp q{};
    q.user_handle = 0x3333;
    fill_qp(q, s);
    return legacy(IB_USER_VERBS_CMD_CREATE_QP, q, resp,
                  sizeof(ib_uverbs_create_qp_resp) + sizeof(mlx5_ib_create_qp_resp), &d, sizeof d);
}

inline Bytes ex_create_qp(uint64_t resp, const QpSpec& s, const mlx5_ib_create_qp& d) {
    ib_uverbs_ex_create_qp q{};
    q.user_handle = 0x4444;
    fill_qp(q, s);
    // the driver struct is padded to 8-byte words
    uint8_t drv[(sizeof(mlx5_ib_create_qp) + 7) / 8 * 8] = {};
    memcpy(drv, &d, sizeof d);
    return ex_cmd(IB_USER_VERBS_EX_CMD_CREATE_QP, &q, sizeof q, resp, sizeof(ib_uverbs_ex_create_qp_resp), drv,
                  sizeof drv, sizeof(mlx5_ib_create_qp_resp));
}

inline Bytes modify_qp(const ib_uverbs_modify_qp& m) { return legacy_noresp(IB_USER_VERBS_CMD_MODIFY_QP, m); }

inline Bytes ex_modify_qp(uint64_t resp, const ib_uverbs_modify_qp& m) {
    ib_uverbs_ex_modify_qp q{};
    q.base = m;
    return ex_cmd(IB_USER_VERBS_EX_CMD_MODIFY_QP, &q, sizeof q, resp, sizeof(ib_uverbs_ex_modify_qp_resp), nullptr, 0,
                  0);
}

inline Bytes query_qp(uint64_t resp, uint32_t h, uint32_t mask = 0xffffffff) {
    ib_uverbs_query_qp q{};
    q.qp_handle = h;
    q.attr_mask = mask;
    return legacy(IB_USER_VERBS_CMD_QUERY_QP, q, resp, sizeof(ib_uverbs_query_qp_resp));
}

inline Bytes destroy_qp(uint64_t resp, uint32_t h) {
    ib_uverbs_destroy_qp q{};
    q.qp_handle = h;
    return legacy(IB_USER_VERBS_CMD_DESTROY_QP, q, resp, sizeof(ib_uverbs_destroy_qp_resp));
}

inline Bytes create_srq(uint64_t resp, uint32_t pd, uint32_t max_wr, uint32_t max_sge, uint64_t buf, uint64_t db,
                        uint32_t limit = 0) {
    ib_uverbs_create_srq q{};
    q.user_handle = 0x5555;
    q.pd_handle = pd;
    q.max_wr = max_wr;
    q.max_sge = max_sge;
    q.srq_limit = limit;
    mlx5_ib_create_srq d{};
    d.buf_addr = buf;
    d.db_addr = db;
    return legacy(IB_USER_VERBS_CMD_CREATE_SRQ, q, resp,
                  sizeof(ib_uverbs_create_srq_resp) + sizeof(mlx5_ib_create_srq_resp), &d, sizeof d);
}

inline Bytes modify_srq(uint32_t h, uint32_t mask, uint32_t max_wr, uint32_t limit) {
    ib_uverbs_modify_srq q{};
    q.srq_handle = h;
    q.attr_mask = mask;
    q.max_wr = max_wr;
    q.srq_limit = limit;
    return legacy_noresp(IB_USER_VERBS_CMD_MODIFY_SRQ, q);
}

inline Bytes query_srq(uint64_t resp, uint32_t h) {
    ib_uverbs_query_srq q{};
    q.srq_handle = h;
    return legacy(IB_USER_VERBS_CMD_QUERY_SRQ, q, resp, sizeof(ib_uverbs_query_srq_resp));
}

inline Bytes destroy_srq(uint64_t resp, uint32_t h) {
    ib_uverbs_destroy_srq q{};
    q.srq_handle = h;
    return legacy(IB_USER_VERBS_CMD_DESTROY_SRQ, q, resp, sizeof(ib_uverbs_destroy_srq_resp));
}

inline Bytes create_ah(uint64_t resp, uint32_t pd, const ib_uverbs_ah_attr& a) {
    ib_uverbs_create_ah q{};
    q.user_handle = 0x6666;
    q.pd_handle = pd;
    q.attr = a;
    return legacy(IB_USER_VERBS_CMD_CREATE_AH, q, resp,
                  sizeof(ib_uverbs_create_ah_resp) + sizeof(mlx5_ib_create_ah_resp));
}

inline Bytes destroy_ah(uint32_t h) {
    ib_uverbs_destroy_ah q{};
    q.ah_handle = h;
    return legacy_noresp(IB_USER_VERBS_CMD_DESTROY_AH, q);
}

inline Bytes query_device(uint64_t resp) {
    ib_uverbs_query_device q{};
    return legacy(IB_USER_VERBS_CMD_QUERY_DEVICE, q, resp, sizeof(ib_uverbs_query_device_resp));
}

inline Bytes ex_query_device(uint64_t resp) {
    ib_uverbs_ex_query_device q{};
    return ex_cmd(IB_USER_VERBS_EX_CMD_QUERY_DEVICE, &q, sizeof q, resp, sizeof(ib_uverbs_ex_query_device_resp),
                  nullptr, 0, sizeof(mlx5_ib_query_device_resp));
}

inline Bytes query_port(uint64_t resp, uint8_t port) {
    ib_uverbs_query_port q{};
    q.port_num = port;
    return legacy(IB_USER_VERBS_CMD_QUERY_PORT, q, resp, sizeof(ib_uverbs_query_port_resp));
}

// modify_qp attribute sets of the usual RESET->INIT->RTR->RTS walk
inline ib_uverbs_modify_qp to_init(uint32_t h, uint8_t type, uint8_t port = 1) {
    ib_uverbs_modify_qp m{};
    m.qp_handle = h;
    m.qp_state = IBV_QPS_INIT;
    m.port_num = port;
    m.pkey_index = 0;
    m.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (type == IBV_QPT_UD) {
        m.qkey = 0x11111111;
        m.attr_mask |= IBV_QP_QKEY;
    } else {
        m.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        m.attr_mask |= IBV_QP_ACCESS_FLAGS;
    }
    return m;
}

inline ib_uverbs_modify_qp to_rtr(uint32_t h, uint8_t type, uint32_t dest_qpn, uint16_t dlid, bool global = false,
                                  uint8_t port = 1) {
    ib_uverbs_modify_qp m{};
    m.qp_handle = h;
    m.qp_state = IBV_QPS_RTR;
    m.attr_mask = IBV_QP_STATE;
    if (type == IBV_QPT_UD)
        return m;
    m.path_mtu = IBV_MTU_1024;
    m.dest_qp_num = dest_qpn;
    m.rq_psn = 0x123;
    m.dest.dlid = dlid;
    m.dest.port_num = port;
    m.dest.is_global = global;
    if (global) {
        m.dest.dgid[0] = 0xfe;
        m.dest.dgid[1] = 0x80;
        m.dest.hop_limit = 1;
    }
    m.attr_mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    if (type == IBV_QPT_RC) {
        m.max_dest_rd_atomic = 1;
        m.min_rnr_timer = 12;
        m.attr_mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
    return m;
}

inline ib_uverbs_modify_qp to_rts(uint32_t h, uint8_t type) {
    ib_uverbs_modify_qp m{};
    m.qp_handle = h;
    m.qp_state = IBV_QPS_RTS;
    m.sq_psn = 0x123;
    m.attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (type == IBV_QPT_RC) {
        m.timeout = 14;
        m.retry_cnt = 7;
        m.rnr_retry = 7;
        m.max_rd_atomic = 1;
        m.attr_mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
    return m;
}

inline ib_uverbs_modify_qp to_state(uint32_t h, uint8_t state) {
    ib_uverbs_modify_qp m{};
    m.qp_handle = h;
    m.qp_state = state;
    m.attr_mask = IBV_QP_STATE;
    return m;
}

}  // namespace uvsim_test
