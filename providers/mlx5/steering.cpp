// Receive steering on our mlx5 provider: receive WQs, their indirection
// tables, RSS QPs and flow rules. See tests/uverbs-sim/doc/mlx5-contract.md
// §3.10 for what the reference sends and what the device answers.
//
// A WQ is a receive ring with its own user index. Like an XRC SRQ, it
// lends that index to a stand-in QP whose receive queue is the WQ's ring
// (and whose recv_cq is the WQ's CQ): posting is the QP receive path, and a
// completion finds its WQE through the poll path's one lookup.
#include "providers/mlx5/mlx5.h"

#include <endian.h>

#include <cstring>
#include <new>

namespace rdma::mlx5 {

using namespace rdma::verbs;

namespace {

constexpr uint32_t kSegSize = 16;

// The public WQ first (verbs.h's inline wrapper initialises its mutex and
// condition after the provider returns it), then the stand-in.
struct Mlx5Rwq {
    ibv_wq wq;
    Mlx5Qp* rsc;
    Mlx5Pd* parent;
    ~Mlx5Rwq() { delete rsc; }
};
static_assert(std::is_standard_layout_v<Mlx5Rwq>);

Mlx5Rwq* to_mrwq(ibv_wq* wq) { return reinterpret_cast<Mlx5Rwq*>(wq); }

int wq_post_recv(ibv_wq* wq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    return post_recv(to_mrwq(wq)->rsc->vqp.qp(), wr, bad_wr);
}

uint32_t ilog2(uint32_t v) { return 31 - static_cast<uint32_t>(__builtin_clz(v)); }

}  // namespace

ibv_wq* Mlx5Context::create_wq(ibv_wq_init_attr* attr) {
    constexpr uint32_t kKnownMask = IBV_WQ_INIT_ATTR_FLAGS;
    if (attr->wq_type != IBV_WQT_RQ || (attr->comp_mask & ~kKnownMask) || !attr->pd || !attr->cq) {
        errno = EINVAL;
        return nullptr;
    }
    if ((attr->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) && attr->create_flags) {
        errno = EOPNOTSUPP;  // no scatter-FCS, VLAN stripping, padding or delay-drop here
        return nullptr;
    }
    if (!attr->max_wr || attr->max_wr > caps_.max_recv_wr || !attr->max_sge ||
        attr->max_sge * kSegSize > caps_.max_rq_desc_sz) {
        errno = EINVAL;
        return nullptr;
    }
    const uint32_t stride = roundup_pow2(attr->max_sge * kSegSize);
    const uint32_t count = roundup_pow2(attr->max_wr);
    Mlx5Rwq* rwq = create_object<Mlx5Rwq>([&](Mlx5Rwq& w) {
        w.parent = parent_of(attr->pd);
        w.rsc = new (std::nothrow) Mlx5Qp{};
        if (!w.rsc)
            return ENOMEM;
        Mlx5Qp& q = *w.rsc;
        q.rq.wqe_cnt = count;
        q.rq.wqe_shift = ilog2(stride);
        q.rq.max_post = count;
        q.rq.max_gs = stride / kSegSize;
        q.rq.post_gs = -1;  // nothing to post before the WQ is ready
        q.rq.wrid = new (std::nothrow) uint64_t[count];
        if (!q.rq.wrid)
            return ENOMEM;
        if (env_.single_threaded || (w.parent && w.parent->td))
            q.rq.lock.disable();
        if (int e = q.buf.alloc(size_t(count) * stride, ring_source("MLX_RWQ", MLX5DV_RES_TYPE_RWQ, w.parent)))
            return e;
        if (int e = q.dbrec_buf.alloc(64, dbrec_source(w.parent)))
            return e;
        q.db = reinterpret_cast<volatile __be32*>(q.dbrec_buf.get());
        q.rq.start = q.buf.get();
        ibv_qp* sq = q.vqp.qp();
        sq->context = ibv();
        sq->recv_cq = attr->cq;
        sq->qp_type = IBV_QPT_RAW_PACKET;
        const int64_t uidx = store_uidx(&q);
        if (uidx < 0)
            return ENOMEM;
        q.uidx = static_cast<uint32_t>(uidx);
        q.uidx_stored = true;
        mlx5_ib_create_wq req{};
        req.buf_addr = reinterpret_cast<uintptr_t>(q.buf.get());
        req.db_addr = reinterpret_cast<uintptr_t>(q.dbrec_buf.get());
        req.rq_wqe_count = count;
        req.rq_wqe_shift = q.rq.wqe_shift;
        req.user_index = q.uidx;
        mlx5_ib_create_wq_resp resp{};
        if (int e = cmd_create_wq(attr, &w.wq, Udata{&req, sizeof(req), &resp, sizeof(resp)})) {
            clear_uidx(q.uidx);
            q.uidx_stored = false;
            return e;
        }
        w.wq.post_recv = wq_post_recv;
        return 0;
    });
    if (!rwq)
        return nullptr;
    hold(rwq->parent);
    // (attr says what the kernel granted, as the command wrote it: the
    // reference reports the same, not the ring's larger figures)
    return &rwq->wq;
}

int Mlx5Context::modify_wq(ibv_wq* wq, ibv_wq_attr* attr) {
    // mlx5_ib wants its (empty) request even with nothing in it
    mlx5_ib_modify_wq req{};
    if (int e = cmd_modify_wq(wq, attr, Udata{&req, sizeof(req), nullptr, 0}))
        return e;
    if (!(attr->attr_mask & IBV_WQ_ATTR_STATE))
        return 0;
    Mlx5Qp& q = *to_mrwq(wq)->rsc;
    if (attr->wq_state == IBV_WQS_RDY) {
        q.rq.post_gs = static_cast<int32_t>(q.rq.max_gs);
    } else if (attr->wq_state == IBV_WQS_RESET) {
        // the device forgot the ring: so do we, with its completions
        q.rq.post_gs = -1;
        clean_cq(to_mcq(wq->cq), q.uidx, nullptr);
        q.rq.head = q.rq.tail = 0;
        q.db[MLX5_RCV_DBR] = 0;
    }
    return 0;
}

int Mlx5Context::destroy_wq(ibv_wq* wq) {
    return destroy_object(to_mrwq(wq), [&](Mlx5Rwq& w) {
        if (int e = cmd_destroy_wq(&w.wq))
            return e;
        clean_cq(to_mcq(w.wq.cq), w.rsc->uidx, nullptr);
        clear_uidx(w.rsc->uidx);
        let_go(w.parent);
        return 0;
    });
}

ibv_rwq_ind_table* Mlx5Context::create_rwq_ind_table(ibv_rwq_ind_table_init_attr* attr) {
    if (attr->comp_mask || !attr->ind_tbl) {
        errno = EINVAL;
        return nullptr;
    }
    auto* t = create_object<ibv_rwq_ind_table>(
        [&](ibv_rwq_ind_table& table) { return cmd_create_rwq_ind_table(attr, &table); });
    return t;
}

int Mlx5Context::destroy_rwq_ind_table(ibv_rwq_ind_table* table) {
    return destroy_object(table, [&](ibv_rwq_ind_table& t) { return cmd_destroy_rwq_ind_table(&t); });
}

// An RSS QP: the hash (Toeplitz over the fields the mask names, with the
// application's key) picks the table's WQ for each packet; the QP itself
// has no queues and no user index.
Mlx5Qp* Mlx5Context::new_rss_qp(ibv_qp_init_attr_ex* attr) {
    constexpr uint32_t kKnown =
        IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_CREATE_FLAGS;
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) || !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
        !attr->rwq_ind_tbl || attr->qp_type != IBV_QPT_RAW_PACKET || (attr->comp_mask & ~kKnown)) {
        errno = EINVAL;
        return nullptr;
    }
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) {
        errno = EOPNOTSUPP;  // no creation flags for RSS QPs here
        return nullptr;
    }
    const ibv_rx_hash_conf& h = attr->rx_hash_conf;
    if (h.rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ ||
        h.rx_hash_key_len > sizeof(mlx5_ib_create_qp_rss{}.rx_hash_key) || (h.rx_hash_key_len && !h.rx_hash_key)) {
        errno = EINVAL;
        return nullptr;
    }
    return create_object<Mlx5Qp>([&](Mlx5Qp& q) {
        mlx5_ib_create_qp_rss req{};
        req.rx_hash_fields_mask = h.rx_hash_fields_mask;
        req.rx_hash_function = MLX5_RX_HASH_FUNC_TOEPLITZ;
        req.rx_key_len = h.rx_hash_key_len;
        if (h.rx_hash_key_len)
            std::memcpy(req.rx_hash_key, h.rx_hash_key, h.rx_hash_key_len);
        return create_queueless(q, attr, 0, &req, sizeof(req));
    });
}

namespace {

// A flow rule, and the counters its COUNT action names (if any).
struct Mlx5Flow {
    ibv_flow flow{};
    Mlx5Counters* counters = nullptr;
};

// The counters a rule's COUNT spec names: walked as libibverbs walks the
// specs, by their sizes.
Mlx5Counters* counters_of(const ibv_flow_attr* attr) {
    const auto* at = reinterpret_cast<const uint8_t*>(attr + 1);
    for (unsigned i = 0; i < attr->num_of_specs; ++i) {
        uint32_t type;
        uint16_t size;
        std::memcpy(&type, at, sizeof(type));
        std::memcpy(&size, at + offsetof(ibv_flow_spec_eth, size), sizeof(size));
        if (type == IBV_FLOW_SPEC_ACTION_COUNT && size >= sizeof(ibv_flow_spec_counter_action)) {
            ibv_flow_spec_counter_action a;
            std::memcpy(&a, at, sizeof(a));
            return reinterpret_cast<Mlx5Counters*>(a.counters);
        }
        if (size < sizeof(uint32_t) + sizeof(uint16_t))
            return nullptr;  // (libibverbs refuses the rule)
        at += size;
    }
    return nullptr;
}

}  // namespace

// A rule that counts binds its counters: the first one tells the kernel the
// (description, index) pairs attached so far; later attachments are EBUSY
// while a rule holds the counters.
ibv_flow* Mlx5Context::create_flow(ibv_qp* qp, ibv_flow_attr* attr) {
    if (attr->comp_mask) {
        errno = EINVAL;
        return nullptr;
    }
    Mlx5Counters* c = counters_of(attr);
    Mlx5Flow* flow = create_object<Mlx5Flow>([&](Mlx5Flow& f) {
        if (!c)
            return cmd_create_flow(qp, attr, &f.flow);
        std::lock_guard<std::mutex> g(c->lock);
        // mlx5_ib_create_flow with one mlx5_ib_flow_counters_data entry
        alignas(8) uint8_t drv[sizeof(mlx5_ib_create_flow) + sizeof(mlx5_ib_flow_counters_data)] = {};
        Udata u;
        if (!c->refcount) {
            const uint32_t one = 1;
            std::memcpy(drv + offsetof(mlx5_ib_create_flow, ncounters_data), &one, sizeof(one));
            mlx5_ib_flow_counters_data d{};
            d.counters_data = c->descs.data();
            d.ncounters = static_cast<uint32_t>(c->descs.size());
            std::memcpy(drv + sizeof(mlx5_ib_create_flow), &d, sizeof(d));
            u.in = drv;
            u.in_len = sizeof(drv);
        }
        if (int e = cmd_create_flow(qp, attr, &f.flow, u))
            return e;
        ++c->refcount;
        f.counters = c;
        return 0;
    });
    return flow ? &flow->flow : nullptr;
}

int Mlx5Context::destroy_flow(ibv_flow* flow) {
    return destroy_object(reinterpret_cast<Mlx5Flow*>(flow), [&](Mlx5Flow& f) {
        if (int e = cmd_destroy_flow(&f.flow))
            return e;
        if (f.counters) {
            std::lock_guard<std::mutex> g(f.counters->lock);
            --f.counters->refcount;
        }
        return 0;
    });
}

// ibv_create_counters: no attribute bit is known (EOPNOTSUPP, as the
// reference).
ibv_counters* Mlx5Context::create_counters(ibv_counters_init_attr* attr) {
    if (attr->comp_mask) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    Mlx5Counters* c = create_object<Mlx5Counters>([&](Mlx5Counters& m) { return cmd_create_counters(&m.vc); });
    return c ? &c->vc.counters : nullptr;
}

int Mlx5Context::destroy_counters(ibv_counters* counters) {
    return destroy_object(to_mcounters(counters), [&](Mlx5Counters& m) { return cmd_destroy_counters(&m.vc); });
}

// Which count (packets or bytes) a read puts at which index; only before a
// rule binds the counters (the reference's answers: EOPNOTSUPP for a mask
// bit, a rule given, an unknown count; EBUSY once bound).
int Mlx5Context::attach_counters(ibv_counters* counters, ibv_counter_attach_attr* attr, ibv_flow* flow) {
    if (attr->comp_mask || flow || attr->counter_desc > IBV_COUNTER_BYTES)
        return EOPNOTSUPP;
    Mlx5Counters& m = *to_mcounters(counters);
    std::lock_guard<std::mutex> g(m.lock);
    if (m.refcount)
        return EBUSY;
    m.descs.push_back({static_cast<uint32_t>(attr->counter_desc), attr->index});
    return 0;
}

int Mlx5Context::read_counters(ibv_counters* counters, uint64_t* values, uint32_t n, uint32_t flags) {
    return cmd_read_counters(&to_mcounters(counters)->vc, values, n, flags);
}

}  // namespace rdma::mlx5
