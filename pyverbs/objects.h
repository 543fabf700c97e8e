// The C++ side of the pyverbs classes that more than one module uses (a QP
// is created on a PD with CQs; post_send takes SendWRs): each wraps one C
// object or struct. The module named in each comment registers the class.
#pragma once

#include "pyverbs.h"

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace pyverbs {

// pyverbs.device.Context
class Context : public CM {
public:
    ~Context() override { close_quietly(); }
    ibv_context* ctx = nullptr;
    std::string name;
    bool imported = false;  // from a command fd: unimported, not closed

protected:
    void release() override {
        if (!ctx)
            return;
        ibv_context* c = ctx;
        ctx = nullptr;
        if (ibv_close_device(c))
            raise_rdma_errno("Failed to close device " + name);
    }
};

// The device list and the device of a given name in it, both valid while
// this object lives (the list is freed with it). Raises the reference's
// errors: no list, no such device.
class DeviceByName {
public:
    explicit DeviceByName(const std::string& name) {
        int n = 0;
        list_ = ibv_get_device_list(&n);
        if (!list_)
            raise_rdma("Failed to get devices list", -1);
        for (int i = 0; i < n; i++)
            if (name == ibv_get_device_name(list_[i]))
                dev = list_[i];
        if (!dev) {
            ibv_free_device_list(std::exchange(list_, nullptr));
            raise_rdma("Failed to find device " + name, -1);
        }
    }
    ~DeviceByName() {
        if (list_)
            ibv_free_device_list(list_);
    }
    DeviceByName(const DeviceByName&) = delete;
    DeviceByName& operator=(const DeviceByName&) = delete;

    ibv_device* dev = nullptr;

private:
    ibv_device** list_ = nullptr;
};

// pyverbs.pd.PD
class PD : public CM {
public:
    ~PD() override { close_quietly(); }
    ibv_pd* pd = nullptr;
    py::object context;  // the Context (or the creator the PD came from)
    bool imported = false;

protected:
    void release() override {
        if (pd && imported) {
            // (the PD is the original's, in another context or process)
            ibv_unimport_pd(std::exchange(pd, nullptr));
            return;
        }
        destroy_once(pd, ibv_dealloc_pd, "Failed to dealloc PD");
    }
};

// pyverbs.cq.CompChannel
class CompChannel : public CM {
public:
    ~CompChannel() override { close_quietly(); }
    ibv_comp_channel* cc = nullptr;
    py::object context;

protected:
    void release() override {
        if (!cc)
            return;
        ibv_comp_channel* c = cc;
        cc = nullptr;
        if (ibv_destroy_comp_channel(c)) {
            int e = errno;
            cc = c;
            raise_rdma("Failed to destroy a completion channel", e);
        }
    }
};

// pyverbs.cq.CQ
class CQ : public CM {
public:
    ~CQ() override { close_quietly(); }
    ibv_cq* cq = nullptr;
    py::object context;
    py::object channel;
    unsigned events_unacked = 0;  // events got but not acknowledged yet

protected:
    void release() override {
        if (!cq)
            return;
        // A CQ's unacknowledged events would make its destruction wait.
        if (events_unacked) {
            ibv_ack_cq_events(cq, events_unacked);
            events_unacked = 0;
        }
        destroy_once(cq, ibv_destroy_cq, "Failed to close CQ");
    }
};

// pyverbs.cq.CQEX: an extended CQ (ibv_create_cq_ex), polled one
// completion at a time through start_poll/poll_next/end_poll.
class CQEX : public CM {
public:
    ~CQEX() override { close_quietly(); }
    ibv_cq_ex* cq = nullptr;
    py::object context;
    py::object channel;
    unsigned events_unacked = 0;
    bool polling = false;  // between a successful start_poll and end_poll

    ibv_cq* ibv_cq_of() const { return cq ? ibv_cq_ex_to_cq(cq) : nullptr; }

protected:
    void release() override {
        if (!cq)
            return;
        if (polling) {
            ibv_end_poll(cq);
            polling = false;
        }
        if (events_unacked) {
            ibv_ack_cq_events(ibv_cq_ex_to_cq(cq), events_unacked);
            events_unacked = 0;
        }
        destroy_once(
            cq, [](ibv_cq_ex* c) { return ibv_destroy_cq(ibv_cq_ex_to_cq(c)); }, "Failed to destroy CQEX");
    }
};

// The ibv_cq of a CQ or CQEX argument (a QP's or SRQ's completion queue).
inline ibv_cq* any_cq(py::handle obj) {
    if (py::isinstance<CQ>(obj))
        return open_arg<CQ>(obj, "CQ").cq;
    if (py::isinstance<CQEX>(obj))
        return open_arg<CQEX>(obj, "CQEX").ibv_cq_of();
    raise_user("Expected CQ/CQEX, got " + py::str(py::type::handle_of(obj)).cast<std::string>());
}

// pyverbs.wr.SGE: one scatter/gather element.
struct SGE : CM {
    ibv_sge sge{};
};

// pyverbs.wr.RecvWR: an ibv_recv_wr with its own SGE array and the next
// work request of a chain kept alive.
struct RecvWR : CM {
    ibv_recv_wr wr{};
    std::vector<ibv_sge> sges;
    py::object next;
};

// pyverbs.wr.SendWR
struct SendWR : CM {
    ibv_send_wr wr{};
    std::vector<ibv_sge> sges;
    py::object next;
    py::object ah;  // the AH of a UD work request, kept alive
};

// pyverbs.addr.GID: 16 bytes.
struct GID : Object {
    ibv_gid gid{};
};

// pyverbs.addr.GlobalRoute
struct GlobalRoute : Object {
    ibv_global_route gr{};
};

// pyverbs.addr.AHAttr
struct AHAttr : Object {
    ibv_ah_attr attr{};
};

// pyverbs.addr.AH
class AH : public CM {
public:
    ~AH() override { close_quietly(); }
    ibv_ah* ah = nullptr;
    py::object pd;

protected:
    void release() override { destroy_once(ah, ibv_destroy_ah, "Failed to destroy AH"); }
};

// pyverbs.srq.SRQ
class SRQ : public CM {
public:
    ~SRQ() override { close_quietly(); }
    ibv_srq* srq = nullptr;
    py::object pd;

protected:
    void release() override { destroy_once(srq, ibv_destroy_srq, "Failed to destroy SRQ"); }
};

// pyverbs.qp.QP
class QP : public CM {
public:
    ~QP() override { close_quietly(); }
    ibv_qp* qp = nullptr;
    ibv_qp_ex* qpx = nullptr;  // QPEx's, when created with send ops flags
    py::object pd, scq, rcq, srq, context, ind_table;

protected:
    void release() override { destroy_once(qp, ibv_destroy_qp, "Failed to destroy QP"); }
};

// pyverbs.qp.QPEx: a QP whose sends are built with the ibv_wr_* calls.
class QPEx : public QP {};

// Builds the C chain of a RecvWR/SendWR list: each element's `next` is the
// following element's C struct (the Python objects own the memory).
template <class W>
auto* link_chain(W& head) {
    W* cur = &head;
    for (;;) {
        cur->wr.sg_list = cur->sges.empty() ? nullptr : cur->sges.data();
        if (!cur->next || cur->next.is_none()) {
            cur->wr.next = nullptr;
            break;
        }
        W& nxt = cur->next.template cast<W&>();
        cur->wr.next = &nxt.wr;
        cur = &nxt;
    }
    return &head.wr;
}

}  // namespace pyverbs
