// Writes the seed corpus of the uvsim_cmd fuzzer (format in fuzz_layout.h):
// the command sequences of ordinary mlx5 programs, with pointers into the
// fuzzer's arena. Run it by hand after changing the format:
//   uvsim_fuzz_make_corpus tests/uverbs-sim/tests/fuzz/corpus/cmd
// Object handles follow the emulator's numbering (the lowest free handle of
// the context, shared by every object type), as a fresh file gives them.
#include "cmd_builder.h"
#include "fuzz_layout.h"

#include <cstdio>
#include <string>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

using namespace uvsim_fuzz;
using namespace uvsim_test;

namespace {

constexpr uint64_t A(size_t off) { return kArenaAddr + off; }
// arena layout of the seeds
constexpr uint64_t kResp = A(kFreeOff);  // responses
constexpr uint64_t kDb = A(kFreeOff + 0x1000);  // doorbell records, 64 bytes apart
constexpr uint64_t kMr = A(kFreeOff + 0x10000);  // 64 KiB registered memory
constexpr uint64_t kCqBuf = A(kFreeOff + 0x20000);
constexpr uint64_t kCqBuf2 = A(kFreeOff + 0x28000);
constexpr uint64_t kQpBuf = A(kFreeOff + 0x30000);
constexpr uint64_t kSrqBuf = A(kFreeOff + 0x40000);
constexpr uint64_t kIoBuf = A(kFreeOff + 0x50000);  // ioctl attribute buffers

struct Seed {
    Bytes b;
    explicit Seed(uint8_t flags) { b.push_back(flags); }
    void rec(uint8_t kind, const Bytes& data) {
        b.push_back(kind);
        b.push_back(static_cast<uint8_t>(data.size()));
        b.push_back(static_cast<uint8_t>(data.size() >> 8));
        b.insert(b.end(), data.begin(), data.end());
    }
    Seed& w(const Bytes& cmd) {
        rec(kWrite, cmd);
        return *this;
    }
    bool save(const std::string& dir, const char* name) const {
        const std::string path = dir + "/" + name;
        FILE* f = fopen(path.c_str(), "wb");
        if (!f || fwrite(b.data(), 1, b.size(), f) != b.size() || fclose(f) != 0) {
            perror(path.c_str());
            return false;
        }
        return true;
    }
};

Bytes ioctl_cmd(uint16_t object, uint16_t method, const std::vector<ib_uverbs_attr>& attrs) {
    ib_uverbs_ioctl_hdr h{};
    h.length = static_cast<uint16_t>(sizeof h + attrs.size() * sizeof(ib_uverbs_attr));
    h.object_id = object;
    h.method_id = method;
    h.num_attrs = static_cast<uint16_t>(attrs.size());
    h.driver_id = RDMA_DRIVER_MLX5;
    Bytes b;
    append(b, &h, sizeof h);
    for (const ib_uverbs_attr& a : attrs)
        append(b, &a, sizeof a);
    return b;
}

ib_uverbs_attr attr(uint16_t id, uint16_t len, uint64_t data, uint16_t flags = UVERBS_ATTR_F_MANDATORY) {
    ib_uverbs_attr a{};
    a.attr_id = id;
    a.len = len;
    a.flags = flags;
    a.data = data;
    return a;
}

// handles: pd 0, mr 1, cq 2, qp 3 (the usual order below)
Seed rc_to_rts(uint8_t dev, uint8_t type) {
    Seed s(dev);
    const bool eth = dev & 1;
    s.w(get_context(kResp)).w(query_device(kResp)).w(query_port(kResp, 1)).w(alloc_pd(kResp));
    s.w(reg_mr(kResp, 0, kMr, 0x10000, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ));
    s.w(create_cq(kResp, 15, cq_drv(kCqBuf, kDb)));
    QpSpec q;
    q.pd = 0;
    q.scq = q.rcq = 2;
    q.type = type;
    s.w(create_qp(kResp, q, qp_drv(kQpBuf, kDb + 64, 16, 16)));
    s.w(modify_qp(to_init(3, type)));
    s.w(modify_qp(to_rtr(3, type, 0x010203, eth ? 0 : 1, eth)));
    s.w(modify_qp(to_rts(3, type)));
    s.w(query_qp(kResp, 3));
    s.w(destroy_qp(kResp, 3)).w(destroy_cq(kResp, 2)).w(dereg_mr(1)).w(dealloc_pd(0));
    return s;
}

Seed ex_path(uint8_t dev) {
    Seed s(dev);
    s.w(get_context(kResp)).w(ex_query_device(kResp)).w(alloc_pd(kResp));
    s.w(ex_create_cq(kResp, 63, cq_drv(kCqBuf, kDb), IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN));  // handle 1
    s.w(ex_create_cq(kResp, 31, cq_drv(kCqBuf2, kDb + 64, 128)));  // handle 2
    QpSpec q;
    q.pd = 0;
    q.scq = 1;
    q.rcq = 2;
    q.type = IBV_QPT_UC;
    s.w(ex_create_qp(kResp, q, qp_drv(kQpBuf, kDb + 128, 32, 8, 5)));  // handle 3
    s.w(ex_modify_qp(kResp, to_init(3, IBV_QPT_UC)));
    s.w(ex_modify_qp(kResp, to_rtr(3, IBV_QPT_UC, 0x20304, 1)));
    s.w(ex_modify_qp(kResp, to_rts(3, IBV_QPT_UC)));
    s.w(modify_qp(to_state(3, IBV_QPS_ERR))).w(modify_qp(to_state(3, IBV_QPS_RESET)));
    // the file closes with everything still there
    return s;
}

Seed ud_ah(uint8_t dev) {
    Seed s(dev);
    const bool eth = dev & 1;
    s.w(get_context(kResp)).w(alloc_pd(kResp)).w(create_cq(kResp, 7, cq_drv(kCqBuf, kDb)));  // pd 0, cq 1
    QpSpec q;
    q.pd = 0;
    q.scq = q.rcq = 1;
    q.type = IBV_QPT_UD;
    s.w(create_qp(kResp, q, qp_drv(kQpBuf, kDb + 64, 8, 8, 6)));  // qp 2
    s.w(modify_qp(to_init(2, IBV_QPT_UD)))
        .w(modify_qp(to_rtr(2, IBV_QPT_UD, 0, 0)))
        .w(modify_qp(to_rts(2, IBV_QPT_UD)));
    ib_uverbs_ah_attr a{};
    a.port_num = 1;
    a.dlid = eth ? 0 : 1;
    a.is_global = eth;
    a.grh.dgid[0] = 0xfe;
    a.grh.dgid[1] = 0x80;
    a.grh.hop_limit = 64;
    s.w(create_ah(kResp, 0, a)).w(destroy_ah(3)).w(create_ah(kResp, 0, a));
    s.w(dealloc_pd(0));  // busy: the QP and the AH
    return s;
}

Seed srq(uint8_t dev) {
    Seed s(dev);
    s.w(get_context(kResp)).w(alloc_pd(kResp)).w(create_cq(kResp, 15, cq_drv(kCqBuf, kDb)));  // pd 0, cq 1
    s.w(create_srq(kResp, 0, 63, 2, kSrqBuf, kDb + 64, 4));  // srq 2
    s.w(modify_srq(2, IBV_SRQ_LIMIT, 0, 8)).w(query_srq(kResp, 2));
    QpSpec q;
    q.pd = 0;
    q.scq = q.rcq = 1;
    q.srq = 2;
    q.has_srq = true;
    q.recv_wr = 0;
    s.w(create_qp(kResp, q, qp_drv(kQpBuf, kDb + 128, 16, 0)));  // qp 3
    s.w(destroy_srq(kResp, 2));  // busy
    s.w(destroy_qp(kResp, 3)).w(destroy_srq(kResp, 2)).w(destroy_cq(kResp, 1)).w(dealloc_pd(0));
    return s;
}

Seed errors(uint8_t dev) {
    Seed s(dev);
    s.w(alloc_pd(kResp));  // before GET_CONTEXT
    s.w(get_context(kResp, 8));  // v1 request
    s.w(get_context(kResp));  // a second context
    s.w(create_comp_channel(kResp));
    s.w(alloc_pd(kResp)).w(reg_mr(kResp, 0, kMr, 0x1000, IBV_ACCESS_REMOTE_WRITE));  // needs LOCAL_WRITE
    s.w(reg_mr(kResp, 0, A(kArenaLen - 0x1000), 0x2000, 0));  // past the arena
    s.w(create_cq(kResp, 15, cq_drv(kCqBuf, kDb, 32)));  // bad cqe_size
    s.w(dealloc_pd(0)).w(dealloc_pd(0));
    Bytes bad = alloc_pd(kResp);
    bad[4] ^= 1;  // in_words off by one
    s.w(bad);
    return s;
}

// Memory windows: both types and a bad one, the PD held by them, one
// freed by write and one by the ioctl method, one left to the close.
// Handles: pd 0, mr 1, mw 2, 3, 4.
Seed windows(uint8_t dev) {
    Seed s(dev);
    s.w(get_context(kResp)).w(alloc_pd(kResp));
    s.w(reg_mr(kResp, 0, kMr, 0x2000, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND));
    s.w(alloc_mw(kResp, 0, IBV_MW_TYPE_1)).w(alloc_mw(kResp, 0, IBV_MW_TYPE_2)).w(alloc_mw(kResp, 0, 3));
    s.w(alloc_mw(kResp, 7, IBV_MW_TYPE_1)).w(alloc_mw(kResp, 0, IBV_MW_TYPE_2));
    s.w(dealloc_pd(0)).w(dealloc_mw(2)).w(dealloc_mw(2));
    s.rec(kIoctl,
          ioctl_cmd(UVERBS_OBJECT_MW, UVERBS_METHOD_MW_DESTROY, {attr(UVERBS_ATTR_DESTROY_MW_HANDLE, 0, 3, 0)}));
    s.w(dereg_mr(1));
    return s;
}

// Compressed CQs: each mini-CQE format at both CQE sizes, the formats the
// device refuses, an RC QP receiving on a compressed CQ taken to RTS.
// Handles: pd 0, cq 1 .. 6, qp 7 (the refused creates take none).
Seed compressed_cqs(uint8_t dev) {
    Seed s(dev);
    s.w(get_context(kResp)).w(alloc_pd(kResp));
    const uint8_t formats[] = {MLX5_IB_CQE_RES_FORMAT_HASH, MLX5_IB_CQE_RES_FORMAT_CSUM,
                               MLX5_IB_CQE_RES_FORMAT_CSUM_STRIDX, 0, 3};
    uint32_t n = 0;
    for (uint8_t f : formats)
        for (uint32_t size : {64u, 128u}) {
            auto d = cq_drv(kCqBuf + n * 0x1000, kDb + 64 * (n % 16), size);
            d.cqe_comp_en = 1;
            d.cqe_comp_res_format = f;
            s.w(create_cq(kResp, 15, d));
            ++n;
        }
    QpSpec q;
    q.pd = 0;
    q.scq = 1;
    q.rcq = 2;
    q.type = IBV_QPT_RC;
    s.w(create_qp(kResp, q, qp_drv(kQpBuf, kDb + 0x800, 32, 8, 5)));
    s.w(modify_qp(to_init(7, IBV_QPT_RC))).w(modify_qp(to_rtr(7, IBV_QPT_RC, 0x10203, 1)));
    s.w(modify_qp(to_rts(7, IBV_QPT_RC)));
    return s;
}

// poke: store bytes at an arena address (for ioctl attributes that point
// at memory)
Bytes poke(uint64_t addr, const void* p, size_t n) {
    Bytes b;
    const uint32_t off = static_cast<uint32_t>(addr - kArenaAddr);
    append(b, &off, 4);
    append(b, p, n);
    return b;
}

ib_uverbs_attr in8(uint16_t id, uint64_t v) { return attr(id, 8, v, 0); }
ib_uverbs_attr in4(uint16_t id, uint32_t v) { return attr(id, 4, v, 0); }
ib_uverbs_attr ptr(uint16_t id, uint16_t len, uint64_t addr) { return attr(id, len, addr, 0); }

// The ioctl path as libibverbs 44 + libmlx5 take it: GET_CONTEXT, the async
// event fd, INVOKE_WRITE, ALLOC_PD, CQ_CREATE, QP_CREATE, QUERY_PORT,
// then the write MODIFY_QPs and the ioctl destroys. Handles: pd 0, cq 1, qp 2.
Seed ioctls(uint8_t dev) {
    Seed s(dev);
    const uint64_t req = kIoBuf, out = kIoBuf + 0x1000, cqdrv = kIoBuf + 0x100, qpdrv = kIoBuf + 0x200,
                   cap = kIoBuf + 0x300;
    mlx5_ib_alloc_ucontext_req_v2 r{};
    r.total_num_bfregs = 4;
    r.max_cqe_version = 1;
    s.rec(kPoke, poke(req, &r, sizeof r));
    Bytes b = ioctl_cmd(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT,
                        {ptr(UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, 4, out),
                         ptr(UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, 8, out + 8), ptr(UVERBS_ATTR_UHW_IN, sizeof r, req),
                         ptr(UVERBS_ATTR_UHW_OUT, sizeof(mlx5_ib_alloc_ucontext_resp), out + 0x10)});
    s.rec(kIoctl, b);
    s.rec(kIoctl,
          ioctl_cmd(UVERBS_OBJECT_ASYNC_EVENT, UVERBS_METHOD_ASYNC_EVENT_ALLOC,
                    {attr(UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, 0, 0, 0)}));
    // INVOKE_WRITE (its parsing; under the fuzzer's arena the write it
    // stages fails with EFAULT), then ALLOC_PD by write
    s.rec(kIoctl,
          ioctl_cmd(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE,
                    {in8(UVERBS_ATTR_WRITE_CMD, IB_USER_VERBS_CMD_ALLOC_PD), in8(UVERBS_ATTR_CORE_IN, 0),
                     ptr(UVERBS_ATTR_CORE_OUT, 4, out + 0x200), ptr(UVERBS_ATTR_UHW_OUT, 8, out + 0x208)}));
    s.w(alloc_pd(kResp));
    const mlx5_ib_create_cq cd = cq_drv(kCqBuf, kDb);
    s.rec(kPoke, poke(cqdrv, &cd, sizeof cd));
    s.rec(kIoctl,
          ioctl_cmd(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE,
                    {attr(UVERBS_ATTR_CREATE_CQ_HANDLE, 0, 0, 0), in4(UVERBS_ATTR_CREATE_CQ_CQE, 15),
                     in8(UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 0x77), in4(UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 0),
                     ptr(UVERBS_ATTR_CREATE_CQ_RESP_CQE, 4, out + 0x300), ptr(UVERBS_ATTR_UHW_IN, sizeof cd, cqdrv),
                     ptr(UVERBS_ATTR_UHW_OUT, sizeof(mlx5_ib_create_cq_resp), out + 0x308)}));
    const mlx5_ib_create_qp qd = qp_drv(kQpBuf, kDb + 64, 16, 16, 6);
    s.rec(kPoke, poke(qpdrv, &qd, sizeof qd));
    const ib_uverbs_qp_cap c{16, 16, 1, 1, 0};
    s.rec(kPoke, poke(cap, &c, sizeof c));
    s.rec(kIoctl,
          ioctl_cmd(UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE,
                    {attr(UVERBS_ATTR_CREATE_QP_HANDLE, 0, 0, 0), attr(UVERBS_ATTR_CREATE_QP_PD_HANDLE, 0, 0, 0),
                     attr(UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, 0, 1, 0),
                     attr(UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, 0, 1, 0), in8(UVERBS_ATTR_CREATE_QP_USER_HANDLE, 7),
                     ptr(UVERBS_ATTR_CREATE_QP_CAP, sizeof c, cap), in8(UVERBS_ATTR_CREATE_QP_TYPE, IB_UVERBS_QPT_RC),
                     ptr(UVERBS_ATTR_CREATE_QP_RESP_CAP, sizeof c, out + 0x400),
                     ptr(UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, 4, out + 0x420), ptr(UVERBS_ATTR_UHW_IN, sizeof qd, qpdrv),
                     ptr(UVERBS_ATTR_UHW_OUT, sizeof(mlx5_ib_create_qp_resp), out + 0x440)}));
    s.rec(kIoctl,
          ioctl_cmd(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT,
                    {in8(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1),
                     ptr(UVERBS_ATTR_QUERY_PORT_RESP, sizeof(ib_uverbs_query_port_resp_ex), out + 0x500)}));
    const bool eth = dev & 1;
    s.w(modify_qp(to_init(2, IBV_QPT_RC))).w(modify_qp(to_rtr(2, IBV_QPT_RC, 0x10203, eth ? 0 : 1, eth)));
    s.w(modify_qp(to_rts(2, IBV_QPT_RC)));
    s.rec(kIoctl,
          ioctl_cmd(UVERBS_OBJECT_QP, UVERBS_METHOD_QP_DESTROY,
                    {attr(UVERBS_ATTR_DESTROY_QP_HANDLE, 0, 2, 0), ptr(UVERBS_ATTR_DESTROY_QP_RESP, 4, out + 0x600)}));
    s.rec(kIoctl,
          ioctl_cmd(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_DESTROY,
                    {attr(UVERBS_ATTR_DESTROY_CQ_HANDLE, 0, 1, 0), ptr(UVERBS_ATTR_DESTROY_CQ_RESP, 8, out + 0x608)}));
    s.rec(kIoctl,
          ioctl_cmd(UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY, {attr(UVERBS_ATTR_DESTROY_PD_HANDLE, 0, 0, 0)}));
    // an unknown object and a request that is not RDMA_VERBS_IOCTL
    s.rec(kIoctl, ioctl_cmd(0x77, 0, {}));
    Bytes other;
    const uint32_t bad_req = 0x1b02;
    append(other, &bad_req, 4);
    Bytes body = ioctl_cmd(UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY, {attr(UVERBS_ATTR_DESTROY_PD_HANDLE, 0, 0, 0)});
    other.insert(other.end(), body.begin(), body.end());
    s.rec(kIoctlOther, other);
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    bool ok = true;
    ok &= rc_to_rts(0, IBV_QPT_RC).save(dir, "rc-ib");
    ok &= rc_to_rts(1, IBV_QPT_RC).save(dir, "rc-roce");
    ok &= rc_to_rts(0, IBV_QPT_UC).save(dir, "uc-ib");
    ok &= ex_path(0).save(dir, "ex-uc-ib");
    ok &= ud_ah(0).save(dir, "ud-ah-ib");
    ok &= ud_ah(1).save(dir, "ud-ah-roce");
    ok &= srq(0).save(dir, "srq-ib");
    ok &= errors(0).save(dir, "errors-ib");
    ok &= ioctls(0).save(dir, "ioctl-ib");
    ok &= ioctls(1).save(dir, "ioctl-roce");
    ok &= windows(0).save(dir, "mw-ib");
    ok &= compressed_cqs(0).save(dir, "zip-cq-ib");
    return ok ? 0 : 1;
}
