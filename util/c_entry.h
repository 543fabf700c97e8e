// The one barrier between an exported C function and the C++ behind it.
//
// Every extern "C" entry point of every library runs its body through one
// of the entry_* functions below, chosen by the failure convention its man
// page documents. No exception crosses the C ABI: std::bad_alloc (and
// std::length_error) become ENOMEM, std::system_error its own code,
// std::invalid_argument / std::out_of_range EINVAL, anything else EIO.
//
// Inside, code reports failure as values: Result<T> (a T or a positive
// errno) and Status (0 or a positive errno), see util/result.h. A body may
// return such a value; the barrier translates it once, here:
//
//   RDMA_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* c) {
//       return rdma::entry_null([&] { return ctx_of(c)->alloc_pd(); });
//   }
//
// | convention (man page)            | barrier           | body may return       |
// |----------------------------------|-------------------|-----------------------|
// | returns 0 or a positive errno    | entry_errno       | int, Status           |
// | returns -1 and sets errno        | entry_minus_one   | int/ssize_t, Status,  |
// |                                  |                   | Result<int/ssize_t>   |
// | returns NULL and sets errno      | entry_null        | T*, Result<T*>        |
// | returns -errno                   | entry_neg_errno   | int, Status           |
// | returns a fixed value on failure | entry_value       | R                     |
// | returns nothing                  | entry_void        | void                  |
//
// The happy path costs nothing (zero-cost exceptions, the lambda inlines);
// data-path inlines of the public headers do not go through here at all.
//
// Thread cancellation: glibc cancels a thread blocked in a cancellation
// point (read, write, poll, pthread_cond_wait ...) by unwinding its stack
// with a special exception, abi::__forced_unwind, which must not be
// swallowed. The barriers let it pass, and so they are not noexcept (a
// rethrow from a noexcept function would terminate the process instead of
// ending the thread).
#pragma once

#include "util/result.h"

#include <cerrno>
#include <cxxabi.h>
#include <new>
#include <stdexcept>
#include <system_error>
#include <type_traits>
#include <utility>

namespace rdma {

// True when the exception being handled has no C++ type: glibc's
// cancellation unwind (abi::__forced_unwind) is such a foreign exception.
// Asked this way rather than with catch (abi::__forced_unwind&), which binds
// a reference to an object that does not exist (UBSan reports it).
inline bool foreign_exception() noexcept { return abi::__cxa_current_exception_type() == nullptr; }

// The positive errno that stands for the exception being handled. Call only
// inside a catch block, after letting foreign exceptions (cancellation) through.
inline int errno_of_current_exception() noexcept {
    try {
        throw;
    } catch (const std::bad_alloc&) {
        return ENOMEM;
    } catch (const std::length_error&) {
        return ENOMEM;
    } catch (const std::system_error& e) {
        int v = e.code().value();
        return v > 0 ? v : EIO;
    } catch (const std::invalid_argument&) {
        return EINVAL;
    } catch (const std::out_of_range&) {
        return EINVAL;
    } catch (...) {
        return EIO;
    }
}

namespace detail {

template <class T>
struct is_result : std::false_type {};
template <class T>
struct is_result<Result<T>> : std::true_type {};

// What entry_minus_one returns for a body returning R.
template <class R>
struct minus_one_out {
    using type = R;
};
template <>
struct minus_one_out<Status> {
    using type = int;
};
template <class T>
struct minus_one_out<Result<T>> {
    using type = T;
};

}  // namespace detail

// 0 or a positive errno (errno is set too on failure).
template <class F>
int entry_errno(F&& fn) {
    try {
        using R = decltype(fn());
        if constexpr (std::is_same_v<R, Status>) {
            Status s = fn();
            if (!s.ok())
                errno = s.error();
            return s.error();
        } else {
            return fn();
        }
    } catch (...) {
        if (foreign_exception())
            throw;
        int e = errno_of_current_exception();
        errno = e;
        return e;
    }
}

// -1 with errno on failure. A body returning Status gives 0 or -1; one
// returning Result<R> (a count, or a value the man page gives a meaning,
// such as rdma_getaddrinfo's EAI_* codes) gives its value, errno untouched,
// or -1 with its errno.
template <class F>
auto entry_minus_one(F&& fn) {
    using R = decltype(fn());
    using Out = typename detail::minus_one_out<R>::type;
    try {
        if constexpr (std::is_same_v<R, Status>) {
            Status s = fn();
            if (s.ok())
                return Out{0};
            errno = s.error();
            return Out{-1};
        } else if constexpr (detail::is_result<R>::value) {
            static_assert(std::is_arithmetic_v<Out>, "entry_minus_one: the body's Result must hold a number");
            R r = fn();
            if (r.ok())
                return static_cast<Out>(r.value());
            errno = r.error();
            return static_cast<Out>(-1);
        } else {
            return fn();
        }
    } catch (...) {
        if (foreign_exception())
            throw;
        errno = errno_of_current_exception();
        return static_cast<Out>(-1);
    }
}

// NULL with errno on failure. A body returning Result<T*> gives its value
// or NULL with its errno.
template <class F>
auto entry_null(F&& fn) {
    using R = decltype(fn());
    if constexpr (detail::is_result<R>::value) {
        using P = std::remove_cvref_t<decltype(std::declval<R&>().value())>;
        static_assert(std::is_pointer_v<P>, "entry_null: the body's Result must hold a pointer");
        try {
            R r = fn();
            if (r.ok())
                return r.value();
            errno = r.error();
            return static_cast<P>(nullptr);
        } catch (...) {
            if (foreign_exception())
                throw;
            errno = errno_of_current_exception();
            return static_cast<P>(nullptr);
        }
    } else {
        static_assert(std::is_pointer_v<R>, "entry_null: the body must return a pointer");
        try {
            return fn();
        } catch (...) {
            if (foreign_exception())
                throw;
            errno = errno_of_current_exception();
            return static_cast<R>(nullptr);
        }
    }
}

// -errno on failure. A body returning Status gives 0 or -errno.
template <class F>
int entry_neg_errno(F&& fn) {
    try {
        using R = decltype(fn());
        if constexpr (std::is_same_v<R, Status>) {
            Status s = fn();
            if (!s.ok())
                errno = s.error();
            return -s.error();
        } else {
            return fn();
        }
    } catch (...) {
        if (foreign_exception())
            throw;
        int e = errno_of_current_exception();
        errno = e;
        return -e;
    }
}

// `on_failure` (with errno) when the body throws; for entry points whose
// man page names a special value (0 for a GUID, an enum's "unknown").
template <class R, class F>
R entry_value(R on_failure, F&& fn) {
    try {
        return fn();
    } catch (...) {
        if (foreign_exception())
            throw;
        errno = errno_of_current_exception();
        return on_failure;
    }
}

// Functions without a result: the work is abandoned, errno says why.
template <class F>
void entry_void(F&& fn) {
    try {
        fn();
    } catch (...) {
        if (foreign_exception())
            throw;
        errno = errno_of_current_exception();
    }
}

}  // namespace rdma
