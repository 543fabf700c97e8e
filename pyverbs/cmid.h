// The C++ side of pyverbs.cmid's CMID for the modules that take one as a
// creator: Context(cmid=...) (device.cpp), PD(creator=cmid) (pd.cpp) and
// MR(creator=cmid, ...) (mr.cpp). pyverbs.cmid registers the class.
//
// Only pyverbs.cmid links librdmacm: what this header gives the other
// modules reads the rdma_cm_id's fields or uses rdma_verbs.h's inline
// helpers (plain verbs); freeing the id is a function pyverbs.cmid sets.
//
// What a CMID's device and PD are: librdmacm opens the device and
// allocates one PD per device for its ids. A Context or PD made from a CMID
// is a view of those (CMContext, CMPD): closing the view closes what was
// made on it (CQs, QPs, MRs) but never the device or the PD, which stay
// librdmacm's. Closing the CMID closes its views first, as the reference's
// CMID leaves its Context and PD without their C objects.
#pragma once

#include "objects.h"

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <memory>
#include <string>

namespace pyverbs {

// pyverbs.cmid.CMID: an rdma_cm_id with the views of its device and PD.
class CMID : public CM {
public:
    ~CMID() override { close_quietly(); }

    rdma_cm_id* id = nullptr;
    // The CMID's Context and PD (a view, or the PD the caller gave), null
    // while it has none; the Python objects are found again from these.
    std::shared_ptr<Context> ctx;
    std::shared_ptr<PD> pd;
    py::object event_channel = py::none();  // the CMEventChannel, or None
    // Set by pyverbs.cmid when `id` is set: frees it (and closes the views).
    void (*destroy)(CMID&) = nullptr;
    // Calls in progress that left the GIL to other threads: a close from
    // another thread then refuses instead of freeing the id under them.
    int blocking = 0;

    // The id, or PyverbsUserError when there is none (closed, or made
    // without a creator and not filled by get_request).
    rdma_cm_id* open_id() const {
        check_open("CMID");
        if (!id)
            raise_user("The CMID has no rdma_cm_id");
        return id;
    }

protected:
    void release() override {
        if (destroy)
            destroy(*this);
    }
};

// Context(cmid=...): the CMID's device, which librdmacm owns.
class CMContext : public Context {
public:
    ~CMContext() override { close_quietly(); }

protected:
    void release() override { ctx = nullptr; }
};

// PD(creator=cmid): librdmacm's PD of the CMID's device.
class CMPD : public PD {
public:
    ~CMPD() override { close_quietly(); }

protected:
    void release() override { pd = nullptr; }
};

inline bool is_cmid(py::handle obj) { return cpp_ptr<CMID>(obj) != nullptr; }

// The CMID of an argument, with its rdma_cm_id.
inline CMID& cmid_arg(py::handle obj) {
    CMID& c = arg_as<CMID>(obj, "CMID");
    c.open_id();
    return c;
}

// The Python object of a CMID's Context or PD (the one already made when
// it is alive), or None.
template <class T>
py::object object_of(const std::shared_ptr<T>& p) {
    return p ? py::cast(p) : py::none();
}

// pyverbs.device.Context(cmid=...): a view of the CMID's device, which
// becomes the CMID's context.
inline std::shared_ptr<Context> context_of_cmid(CMID& c) {
    rdma_cm_id* id = c.open_id();
    if (!id->verbs)
        raise_user("The CMID is not bound to a device yet");
    auto ctx = std::make_shared<CMContext>();
    ctx->ctx = id->verbs;
    ctx->name = ibv_get_device_name(id->verbs->device);
    ctx->imported = true;
    c.ctx = ctx;
    return ctx;
}
inline std::shared_ptr<Context> context_of_cmid(py::handle cmid) { return context_of_cmid(cmid_arg(cmid)); }

// pyverbs.pd.PD(creator=cmid): a view of librdmacm's PD of the CMID's
// device (a child of the CMID's Context), which becomes the CMID's PD.
inline std::shared_ptr<PD> pd_of_cmid(CMID& c) {
    rdma_cm_id* id = c.open_id();
    if (!id->pd)
        raise_user("The CMID is not bound to a device yet");
    auto pd = std::make_shared<CMPD>();
    pd->pd = id->pd;
    if (c.ctx && !c.ctx->closed()) {
        pd->context = py::cast(c.ctx);
        pd->adopt(pd->context, *c.ctx);
    } else {
        pd->context = py::none();
    }
    c.pd = pd;
    return pd;
}
inline std::shared_ptr<PD> pd_of_cmid(py::handle cmid) { return pd_of_cmid(cmid_arg(cmid)); }

// MR(creator=cmid, length, access): rdma_reg_msgs, rdma_reg_write or
// rdma_reg_read as `access` is IBV_ACCESS_LOCAL_WRITE, _REMOTE_WRITE or
// _REMOTE_READ (the access flags the reference's CMID registers with);
// null with errno EINVAL for any other access.
inline ibv_mr* reg_mr_on_cmid(CMID& c, void* buf, size_t length, int access) {
    rdma_cm_id* id = c.open_id();
    if (id->pd) {
        switch (access) {
        case IBV_ACCESS_LOCAL_WRITE: return rdma_reg_msgs(id, buf, length);
        case IBV_ACCESS_REMOTE_WRITE: return rdma_reg_write(id, buf, length);
        case IBV_ACCESS_REMOTE_READ: return rdma_reg_read(id, buf, length);
        default: break;
        }
    }
    errno = EINVAL;
    return nullptr;
}

}  // namespace pyverbs
