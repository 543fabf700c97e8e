// Runtime of the generated enum modules (gen_enums.py): C enumerator tables made Python IntEnum classes.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <span>
#include <type_traits>

namespace pyverbs::enums {

namespace py = pybind11;

// A C name and its value as the compiler computed it. Sixty-four bits and a
// sign carry every value these headers hold: negative error codes, flags up
// to bit 63, and the all-ones pointer sentinel IBV_ALLOCATOR_USE_DEFAULT.
struct Value {
    const char* name;
    unsigned long long bits = 0;
    bool negative = false;

    template <typename T>
    Value(const char* n, T v) : name(n) {
        if constexpr (std::is_pointer_v<T>)
            bits = reinterpret_cast<std::uintptr_t>(v);
        else if constexpr (std::is_enum_v<T>)
            set(static_cast<std::underlying_type_t<T>>(v));
        else
            set(v);
    }

    py::int_ to_python() const { return negative ? py::int_(static_cast<long long>(bits)) : py::int_(bits); }

private:
    template <typename I>
    void set(I v) {
        static_assert(std::is_integral_v<I>, "an enum module constant must be an integer, enumerator or pointer");
        bits = static_cast<unsigned long long>(v);
        if constexpr (std::is_signed_v<I>)
            negative = v < 0;
    }
};

// One C enum: the IntEnum class of that name, its members in header order.
struct Enum {
    const char* name;
    std::span<const Value> members;
};

// Fills module m the way the reference's enum modules look: one IntEnum per C
// enum, each member also a module attribute (an alias, i.e. a second name for
// a value, resolves to the first member of that value, as IntEnum does), and
// the constants of anonymous enums and macros as plain ints. __all__ names
// them all, so that `import *` also brings the underscore-named constants.
inline void define(py::module_& m, std::span<const Enum> enums, std::span<const Value> constants) {
    py::object int_enum = py::module_::import("enum").attr("IntEnum");
    py::object modname = m.attr("__name__");
    py::list all;
    for (const Enum& e : enums) {
        py::list members;
        for (const Value& v : e.members)
            members.append(py::make_tuple(v.name, v.to_python()));
        py::object cls = int_enum(e.name, members, py::arg("module") = modname, py::arg("qualname") = py::str(e.name));
        m.attr(e.name) = cls;
        all.append(e.name);
        for (const Value& v : e.members) {
            m.attr(v.name) = cls.attr(v.name);
            all.append(v.name);
        }
    }
    for (const Value& v : constants) {
        m.attr(v.name) = v.to_python();
        all.append(v.name);
    }
    m.attr("__all__") = all;
}

}  // namespace pyverbs::enums
