// The C++ side of pyverbs.comp_cntr, for the modules that attach a
// completion counter (QP.attach_comp_cntr): pyverbs.comp_cntr registers it.
#pragma once

#include "objects.h"

namespace pyverbs {

// pyverbs.comp_cntr.CompCntrInitAttr: an ibv_comp_cntr_init_attr.
struct CompCntrInitAttr : Object {
    ibv_comp_cntr_init_attr attr{};
};

// pyverbs.comp_cntr.CompCntr: a completion counter on a Context (its
// parent). A QP it is attached to should depend_on() it.
class CompCntr : public CM {
public:
    ~CompCntr() override { close_quietly(); }
    ibv_comp_cntr* cntr = nullptr;
    py::object context;

protected:
    void release() override {
        destroy_once(cntr, ibv_destroy_comp_cntr, "Failed to destroy comp_cntr");
        context = py::object();
    }
};

}  // namespace pyverbs
