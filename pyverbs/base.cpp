// pyverbs.base: the root classes (PyverbsObject, PyverbsCM) and helpers.
#include "pyverbs.h"

#include <cerrno>

using namespace pyverbs;

PYBIND11_MODULE(base, m) {
    m.doc() = "pyverbs' root classes: PyverbsObject, and PyverbsCM for objects that own a resource";
    m.attr("LOG_LEVEL") = 20;
    m.attr("LOG_FORMAT") = "[%(levelname)s] %(asctime)s %(filename)s:%(lineno)s: %(message)s";

    py::class_<Object, std::shared_ptr<Object>>(m, "PyverbsObject")
        .def(py::init<>())
        .def(
            "set_log_level", [](Object& o, int level) { o.log_level = level; }, py::arg("val"))
        .def_property_readonly("log_level", [](const Object& o) { return o.log_level; });

    py::class_<CM, Object, std::shared_ptr<CM>>(m, "PyverbsCM")
        .def(py::init<>())
        .def("close", &CM::close, "Frees the underlying object, its children first; a second call does nothing")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](CM& self, py::args) { self.close(); })
        .def_property_readonly("closed", &CM::closed);

    // The exception for a failed call, from the current errno (not raised).
    m.def(
        "PyverbsRDMAErrno",
        [](const std::string& msg) {
            int e = errno;
            return py::module_::import("pyverbs.pyverbs_error").attr("PyverbsRDMAError")(msg, e);
        },
        py::arg("msg"));
    // The next key of a memory window bind: the low byte (the key's variant)
    // advances, the index stays.
    m.def(
        "inc_rkey", [](uint32_t rkey) { return (rkey & ~0xffu) | ((rkey + 1) & 0xffu); }, py::arg("rkey"));
}
