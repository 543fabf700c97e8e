// The C++ side of pyverbs.flow, for the modules that steer to a QP or take
// a flow action: pyverbs.flow registers them.
#pragma once

#include "objects.h"

namespace pyverbs {

// pyverbs.flow.FlowAttr: an ibv_flow_attr and the specs (pyverbs.spec
// objects, or any object with `size` and `_copy_data(addr)`) appended to
// its `specs` list.
struct FlowAttr : Object {
    ibv_flow_attr attr{};
    py::list specs;
};

// pyverbs.flow.Flow: a steering rule on a QP (its parent).
class Flow : public CM {
public:
    ~Flow() override { close_quietly(); }
    ibv_flow* flow = nullptr;
    py::object qp;

protected:
    void release() override {
        destroy_once(flow, ibv_destroy_flow, "Failed to destroy Flow");
        qp = py::object();
    }
};

// pyverbs.flow.FlowAction: an ibv_flow_action, none until a provider
// module creates one.
struct FlowAction : Object {
    ibv_flow_action* action = nullptr;
};

}  // namespace pyverbs
