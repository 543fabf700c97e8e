// pyverbs.librdmacm: the reference declares the C API of librdmacm for its own
// modules here and exports nothing to Python; importing it works, as there.
#include <pybind11/pybind11.h>

PYBIND11_MODULE(librdmacm, m) { m.doc() = "C declarations of librdmacm (nothing for Python)"; }
