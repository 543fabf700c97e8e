// pyverbs.device.DM: device memory (ibv_alloc_dm / ibv_import_dm), shared
// by the device module that registers it and the mr module whose DMMR
// reads and writes through it.
#pragma once

#include "objects.h"

#include <string>

namespace pyverbs {

class DM : public CM {
public:
    ~DM() override { close_quietly(); }
    ibv_dm* dm = nullptr;
    py::object context;
    bool imported = false;  // from a handle: unimported, never freed here

    // Copies `data` (bytes or str, padded with zeros to `length`) to the
    // device memory at `offset`.
    void copy_to(uint64_t offset, py::handle data, size_t length) {
        std::string bytes = py::isinstance<py::str>(data) ? data.cast<std::string>()
                                                          : std::string(py::reinterpret_borrow<py::bytes>(data));
        bytes.resize(length, '\0');
        if (int rc = ibv_memcpy_to_dm(dm, offset, bytes.data(), length))
            raise_rdma("Failed to copy to dm", rc);
    }
    py::bytes copy_from(uint64_t offset, size_t length) {
        std::string out(length, '\0');
        if (int rc = ibv_memcpy_from_dm(out.data(), dm, offset, length))
            raise_rdma("Failed to copy from dm", rc);
        return py::bytes(out);
    }

protected:
    void release() override {
        if (!dm)
            return;
        ibv_dm* d = dm;
        dm = nullptr;
        if (imported) {
            ibv_unimport_dm(d);
            return;
        }
        if (int rc = ibv_free_dm(d)) {
            dm = d;
            raise_rdma("Failed to free dm", rc);
        }
    }
};

}  // namespace pyverbs
