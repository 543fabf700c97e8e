// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// libFuzzer entry for the fabric cache reader: any byte string must either
// load into a consistent fabric or be refused, never crash, hang or leak.
// buildlib/fuzz-run builds it with libFuzzer (rdma_fuzzer, ASan+UBSan); the
// replay program (fuzz_replay.cpp) runs the corpus under ctest with gcc.
#include "libibnetdisc/internal.h"

#include <cstdint>
#include <cstdlib>

namespace {

// Walk what was loaded the way an application would, so that dangling or
// inconsistent pointers show up under the sanitizers.
unsigned touch(ibnd_fabric_t* f) {
    unsigned sum = 0;
    for (ibnd_node_t* n = f->nodes; n; n = n->next) {
        sum += static_cast<unsigned>(n->numports) + n->nodedesc[0];
        for (int p = 0; p <= n->numports; ++p) {
            ibnd_port_t* port = n->ports[p];
            if (!port)
                continue;
            if (port->node != n)
                std::abort();
            if (port->remoteport)
                sum += static_cast<unsigned>(port->remoteport->portnum) +
                    static_cast<unsigned>(port->remoteport->node->type);
        }
        sum += ibnd_find_node_guid(f, n->guid) ? 1 : 0;
    }
    for (ibnd_chassis_t* c = f->chassis; c; c = c->next)
        for (ibnd_node_t* n = c->nodes; n; n = n->next_chassis_node)
            sum += n->ch_slot;
    for (unsigned lid = 0; lid < 64; ++lid)
        if (ibnd_port_t* p = ibnd_find_port_lid(f, static_cast<uint16_t>(lid)))
            sum += static_cast<unsigned>(p->portnum);
    return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ibnd_fabric_t* f = ibnd::load_fabric_image({data, size});
    if (f) {
        volatile unsigned sink = touch(f);
        (void)sink;
        ibnd_destroy_fabric(f);
    }
    return 0;
}
