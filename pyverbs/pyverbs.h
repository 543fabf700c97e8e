// The layer every pyverbs module shares: errors raised as the package's
// exception classes, and the lifetime of objects that own a C resource.
//
// Lifetime, as pyverbs users rely on it:
//  - a child keeps its parent alive (it holds the parent's Python object),
//    so the garbage collector can never free a PD before its MRs;
//  - closing a parent closes its children first, newest first (a Context
//    closes its QPs before their CQs and PDs), and close() twice is harmless;
//  - an object that is collected without close() is closed then, and an
//    error at that point is dropped (there is no caller to give it to).
// The classes are compiled into each module (header-only) and registered
// once, by pyverbs.base, which every module imports first; pybind11 shares
// registered types between the modules of one interpreter.
#pragma once

#include <pybind11/pybind11.h>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pyverbs {

namespace py = pybind11;

// Raises pyverbs_error.<cls>(args...) as a C++ exception pybind11 passes on.
template <class... Args>
[[noreturn]] void raise_as(const char* cls, Args&&... args) {
    py::object type = py::module_::import("pyverbs.pyverbs_error").attr(cls);
    py::object exc = type(std::forward<Args>(args)...);
    PyErr_SetObject(type.ptr(), exc.ptr());
    throw py::error_already_set();
}

// An rdma-core call failed with errno `err` (a positive errno).
[[noreturn]] inline void raise_rdma(const std::string& msg, int err) { raise_as("PyverbsRDMAError", msg, err); }
// A call that reports failure through errno; errno 0 is shown as EINVAL's
// absence of detail would be: the reference then passes -1 (no errno).
[[noreturn]] inline void raise_rdma_errno(const std::string& msg) {
    int e = errno;
    if (e)
        raise_rdma(msg, e);
    raise_as("PyverbsRDMAError", msg);
}
// The caller asked for something pyverbs refuses before calling rdma-core.
[[noreturn]] inline void raise_user(const std::string& msg) { raise_as("PyverbsUserError", msg); }
[[noreturn]] inline void raise_error(const std::string& msg) { raise_as("PyverbsError", msg); }

// pyverbs.base.PyverbsObject: the root of every pyverbs class.
class Object {
public:
    virtual ~Object() = default;
    int log_level = 20;  // logging.INFO, as LOG_LEVEL
};

// pyverbs.base.PyverbsCM: an Object owning a C resource, closable, usable
// in a `with` block, parent of the objects created on it.
class CM : public Object, public std::enable_shared_from_this<CM> {
public:
    CM() = default;
    CM(const CM&) = delete;
    CM& operator=(const CM&) = delete;
    // Derived classes call close_quietly() in their own destructor, where
    // their release() can still run.
    ~CM() override = default;

    void close() {
        if (closed_)
            return;
        close_children();
        release();  // may raise; the object then stays open
        closed_ = true;
        parent_ = py::object();
    }

    void close_quietly() noexcept {
        try {
            close();
        } catch (py::error_already_set& e) {
            e.discard_as_unraisable(__func__);
        } catch (...) {}
    }

    bool closed() const { return closed_; }

    // Raises when the object was closed: use after close fails, never crashes.
    void check_open(const char* what) const {
        if (closed_)
            raise_user(std::string(what) + " is closed");
    }

    // Makes `self` (this object's Python side may not exist yet) a child of
    // `parent`: the parent will close it first and is kept alive by it.
    void adopt(py::handle parent_obj, CM& parent) {
        parent.check_open("The parent object");
        parent_ = py::reinterpret_borrow<py::object>(parent_obj);
        parent.children_.push_back(weak_from_this());
    }
    // A relation without ownership of a parent: kept alive, closed first
    // when that object closes (a QP on its CQs).
    void depend_on(py::handle obj, CM& other) {
        other.check_open("A dependency");
        deps_.push_back(py::reinterpret_borrow<py::object>(obj));
        other.children_.push_back(weak_from_this());
    }

    py::object parent() const { return parent_; }

protected:
    // Frees the C resource; raises on failure. Called once.
    virtual void release() {}

private:
    void close_children() {
        // A child's close may drop the last reference to a sibling.
        auto kids = std::move(children_);
        children_.clear();
        for (auto it = kids.rbegin(); it != kids.rend(); ++it)
            if (auto c = it->lock())
                c->close();
    }

    bool closed_ = false;
    py::object parent_;
    std::vector<py::object> deps_;
    std::vector<std::weak_ptr<CM>> children_;
};

// Frees the C object in `slot` with `destroy` (returning 0 or an errno),
// once: the slot is empty from then on. If the verb refuses (EBUSY ...),
// the object stays as it was and the refusal is raised as `msg`.
template <class T, class F>
void destroy_once(T*& slot, F destroy, const char* msg) {
    if (!slot)
        return;
    T* p = slot;
    slot = nullptr;
    if (int rc = destroy(p)) {
        slot = p;
        raise_rdma(msg, rc);
    }
}

// The C++ object of a Python object of class T (or a subclass), or null.
// The usual case, an object of exactly the registered class, is a type
// compare and a load (pybind11's own cast looks the type up by name on
// every call, which costs more than many of the verbs wrapped here); other
// cases go through pybind11's cast.
template <class T>
T* cpp_ptr(py::handle obj) {
    static const py::detail::type_info* info = nullptr;
    if (!info)
        info = py::detail::get_type_info(typeid(T));
    if (info && Py_TYPE(obj.ptr()) == info->type) {
        auto* inst = reinterpret_cast<py::detail::instance*>(obj.ptr());
        return static_cast<T*>(inst->get_value_and_holder(info, false).value_ptr());
    }
    py::detail::make_caster<T> caster;
    if (!caster.load(obj, false))
        return nullptr;
    return &py::detail::cast_op<T&>(caster);
}

// The C++ side of a Python argument that must be a given pyverbs class
// (TypeError naming both types otherwise).
template <class T>
T& arg_as(py::handle obj, const char* what) {
    T* t = cpp_ptr<T>(obj);
    if (!t)
        throw py::type_error(std::string("Expected ") + what + ", got " +
                             py::str(py::type::handle_of(obj)).cast<std::string>());
    return *t;
}

// The same for an object that owns a resource, which must still be open.
template <class T>
T& open_arg(py::handle obj, const char* what) {
    T& t = arg_as<T>(obj, what);
    t.check_open(what);
    return t;
}

// The bytes of a data argument (bytes, bytearray, or a str as its UTF-8),
// without a copy; valid while the object lives.
inline std::string_view byte_view(py::handle data) {
    char* p = nullptr;
    Py_ssize_t n = 0;
    if (PyBytes_Check(data.ptr())) {
        PyBytes_AsStringAndSize(data.ptr(), &p, &n);
    } else if (PyByteArray_Check(data.ptr())) {
        p = PyByteArray_AsString(data.ptr());
        n = PyByteArray_Size(data.ptr());
    } else if (PyUnicode_Check(data.ptr())) {
        const char* u = PyUnicode_AsUTF8AndSize(data.ptr(), &n);
        if (!u)
            throw py::error_already_set();
        return {u, size_t(n)};
    } else {
        throw py::type_error("Expected bytes or str, got " + py::str(py::type::handle_of(data)).cast<std::string>());
    }
    return {p, size_t(n)};
}

// One line of a __str__: the label padded to `width` after `indent`, ": ",
// the value padded to 20, as every pyverbs class prints its fields.
inline std::string str_line(const std::string& label, const std::string& value, int width = 22,
                            const char* indent = "") {
    std::string out = indent + label;
    if (int(label.size()) < width)
        out.append(width - label.size(), ' ');
    out += ": " + value;
    if (value.size() < 20)
        out.append(20 - value.size(), ' ');
    return out + "\n";
}
template <class T>
std::string str_line(const std::string& label, T value, int width = 22, const char* indent = "") {
    return str_line(label, std::to_string(value), width, indent);
}
inline std::string hex_str(unsigned long long v) {
    char buf[24];
    snprintf(buf, sizeof(buf), "0x%llx", v);
    return buf;
}

// The hot methods (posting, polling, MR data) skip pybind11's dispatch,
// which costs more than the verbs they wrap: they are CPython "fastcall"
// methods, their arguments parsed by FastArgs, errors turned into Python
// exceptions by fast_call. One is attached to a class with add_fast_method.
using FastFn = PyObject* (*)(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);

// Positional-or-keyword arguments by name; missing ones are null (the
// caller applies the default). Raises TypeError as Python would.
template <size_t N>
struct FastArgs {
    PyObject* v[N] = {};

    FastArgs(const char* fn, const char* const (&names)[N], size_t required, PyObject* const* args, Py_ssize_t nargs,
             PyObject* kwnames) {
        if (size_t(nargs) > N)
            throw py::type_error(std::string(fn) + "() takes at most " + std::to_string(N) + " arguments");
        for (Py_ssize_t i = 0; i < nargs; i++)
            v[i] = args[i];
        Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
        for (Py_ssize_t k = 0; k < nkw; k++) {
            const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
            size_t i = 0;
            while (i < N && (!key || strcmp(key, names[i]) != 0))
                i++;
            if (i == N)
                throw py::type_error(std::string(fn) + "() got an unexpected keyword argument '" + (key ? key : "?") +
                                     "'");
            if (v[i])
                throw py::type_error(std::string(fn) + "() got multiple values for argument '" + names[i] + "'");
            v[i] = args[nargs + k];
        }
        for (size_t i = 0; i < required; i++)
            if (!v[i])
                throw py::type_error(std::string(fn) + "() missing required argument '" + names[i] + "'");
    }

    bool given(size_t i) const { return v[i] && v[i] != Py_None; }
    // An unsigned integer argument (OverflowError/TypeError as Python's).
    unsigned long long u64(size_t i, unsigned long long dflt = 0) const {
        if (!v[i])
            return dflt;
        unsigned long long x = PyLong_AsUnsignedLongLong(v[i]);
        if (x == (unsigned long long)-1 && PyErr_Occurred())
            throw py::error_already_set();
        return x;
    }
    long long i64(size_t i, long long dflt = 0) const {
        if (!v[i])
            return dflt;
        long long x = PyLong_AsLongLong(v[i]);
        if (x == -1 && PyErr_Occurred())
            throw py::error_already_set();
        return x;
    }
};

// Runs a fast method's body: C++ exceptions become the Python exception.
template <class F>
PyObject* fast_call(F&& body) noexcept {
    try {
        return body();
    } catch (py::error_already_set& e) {
        e.restore();
    } catch (py::builtin_exception& e) {
        e.set_error();
    } catch (const std::bad_alloc&) {
        PyErr_NoMemory();
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    }
    return nullptr;
}

// Attaches `fn` to a registered class as the method `name`.
inline void add_fast_method(py::handle cls, const char* name, FastFn fn, const char* doc) {
    // (method definitions must outlive the class: they live as long as the
    // process, as a module's static tables do)
    auto* def = new PyMethodDef{name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fn)),
                                METH_FASTCALL | METH_KEYWORDS, doc};
    py::object descr = py::reinterpret_steal<py::object>(PyDescr_NewMethod((PyTypeObject*)cls.ptr(), def));
    if (!descr)
        throw py::error_already_set();
    py::setattr(cls, name, descr);
}

// Imports the modules whose classes this module's signatures use, so that
// pybind11 knows them (and their bases) before the first call.
inline void import_deps(std::initializer_list<const char*> mods) {
    for (const char* m : mods)
        py::module_::import(m);
}

}  // namespace pyverbs
