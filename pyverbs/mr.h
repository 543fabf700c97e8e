// The C++ side of pyverbs.mr's classes that other modules take as
// arguments: MR (and its subclasses), MW, MWBindInfo and MWBind (a QP binds
// a memory window with them). The mr module registers them.
#pragma once

#include "objects.h"

#include <sys/mman.h>

#include <string>

namespace pyverbs {

// pyverbs.mr.MR: a registration over memory this object may own.
class MR : public CM {
public:
    ~MR() override { close_quietly(); }
    ibv_mr* mr = nullptr;
    void* buf = nullptr;  // what read/write use
    void* owned = nullptr;  // the allocation this object frees
    size_t owned_len = 0;
    bool mmapped = false;
    bool imported = false;
    size_t length = 0;
    py::object pd;
    const char* dereg_error = "Failed to dereg MR";  // the subclass's wording

    void check_range(size_t len, size_t off, const char* op) const {
        if (!buf)
            raise_user(std::string("Cannot ") + op + " an MR without a buffer");
        if (off > length || len > length - off)
            raise_user(std::string("Attempted to ") + op + " " + std::to_string(len) + " bytes at offset " +
                       std::to_string(off) + " of an MR of " + std::to_string(length) + " bytes");
    }

protected:
    void release() override {
        if (mr) {
            ibv_mr* r = mr;
            mr = nullptr;
            if (imported) {
                ibv_unimport_mr(r);
            } else if (int rc = ibv_dereg_mr(r)) {
                mr = r;
                raise_rdma(dereg_error, rc);
            }
        }
        if (owned) {
            if (mmapped)
                munmap(owned, owned_len);
            else
                free(owned);
            owned = nullptr;
        }
        buf = nullptr;
    }
};

// pyverbs.mr.MW
class MW : public CM {
public:
    ~MW() override { close_quietly(); }
    ibv_mw* mw = nullptr;
    py::object pd;

protected:
    void release() override { destroy_once(mw, ibv_dealloc_mw, "Failed to dealloc MW"); }
};

// pyverbs.mr.MWBindInfo: what a bind gives the window (an MR's range and
// the access). The MR's C object is looked up when the info is used, so a
// closed MR is refused instead of handed to the device.
struct MWBindInfo : CM {
    ibv_mw_bind_info info{};  // info.mr is filled by bind_info()
    py::object mr;

    ibv_mw_bind_info bind_info() const {
        ibv_mw_bind_info out = info;
        out.mr = open_arg<MR>(mr, "MR").mr;
        return out;
    }
};

// pyverbs.mr.MWBind: an ibv_mw_bind (wr_id, send flags and a bind info).
struct MWBind : CM {
    ibv_mw_bind mw_bind{};  // mw_bind.bind_info is filled by bind()
    py::object info;

    ibv_mw_bind bind() const {
        ibv_mw_bind out = mw_bind;
        out.bind_info = arg_as<MWBindInfo>(info, "MWBindInfo").bind_info();
        return out;
    }
};

}  // namespace pyverbs
