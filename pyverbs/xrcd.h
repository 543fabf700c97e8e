// The C++ side of pyverbs.xrcd, for the modules that take an XRC domain
// (QPInitAttrEx.xrcd, SrqInitAttrEx.xrcd): pyverbs.xrcd registers them.
#pragma once

#include "objects.h"

namespace pyverbs {

// pyverbs.xrcd.XRCDInitAttr: an ibv_xrcd_init_attr.
struct XRCDInitAttr : Object {
    ibv_xrcd_init_attr attr{};
};

// pyverbs.xrcd.XRCD: an XRC domain opened on a Context (its parent). The
// QPs and SRQs created in it should depend_on() it, so that closing the
// domain closes them first.
class XRCD : public CM {
public:
    ~XRCD() override { close_quietly(); }
    ibv_xrcd* xrcd = nullptr;
    py::object context;

protected:
    void release() override {
        destroy_once(xrcd, ibv_close_xrcd, "Failed to dealloc XRCD");
        context = py::object();
    }
};

}  // namespace pyverbs
