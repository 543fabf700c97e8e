// pyverbs.libibverbs: the reference declares the C API of libibverbs for its own
// modules here and exports nothing to Python; importing it works, as there.
#include <pybind11/pybind11.h>

PYBIND11_MODULE(libibverbs, m) { m.doc() = "C declarations of libibverbs (nothing for Python)"; }
