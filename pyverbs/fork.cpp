// pyverbs.fork: fork support of libibverbs (ibv_fork_init and its state).
#include "pyverbs.h"

using namespace pyverbs;

PYBIND11_MODULE(fork, m) {
    import_deps({"pyverbs.base"});
    m.doc() = "libibverbs fork support";
    m.def("fork_init", []() {
        if (int rc = ibv_fork_init())
            raise_rdma("Failed to init fork support", rc);
    });
    // An ibv_fork_status value (IBV_FORK_DISABLED, _ENABLED, _UNNEEDED).
    m.def("is_fork_initialized", []() { return int(ibv_is_fork_initialized()); });
}
