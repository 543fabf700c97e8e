// The C++ side of the pyverbs.providers.mlx5 classes that more than one of
// its modules uses: pyverbs.providers.mlx5.mlx5dv registers them, the
// others (mlx5dv_event subscribes to a DevX object's events) take them as
// arguments.
#pragma once

#include "objects.h"

#include <infiniband/mlx5dv.h>

namespace pyverbs {

// pyverbs.providers.mlx5.mlx5dv.Mlx5Context: a Context opened with
// mlx5dv_open_device (closed as any other).
class Mlx5Context : public Context {};

// pyverbs.providers.mlx5.mlx5dv.Mlx5DevxObj
class Mlx5DevxObj : public CM {
public:
    ~Mlx5DevxObj() override { close_quietly(); }
    mlx5dv_devx_obj* obj = nullptr;
    py::object out_view;
    py::object context;

protected:
    void release() override { destroy_once(obj, mlx5dv_devx_obj_destroy, "Failed to destroy a DevX object"); }
};

}  // namespace pyverbs
