// Errors as values: a Result<T> is either a T or a positive errno.
#pragma once

#include <cerrno>
#include <utility>
#include <variant>

namespace rdma {

struct Errno {
    int value;
};

template <class T>
class [[nodiscard]] Result {
public:
    Result(T v) : v_(std::move(v)) {}
    Result(Errno e) : v_(e) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }
    int error() const { return ok() ? 0 : std::get<1>(v_).value; }
    T& value() & { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    const T& value() const& { return std::get<0>(v_); }
    T& operator*() & { return value(); }
    T* operator->() { return &std::get<0>(v_); }
    const T* operator->() const { return &std::get<0>(v_); }

private:
    std::variant<T, Errno> v_;
};

// Status: a Result without a value (0 or a positive errno).
class [[nodiscard]] Status {
public:
    Status() = default;
    Status(Errno e) : err_(e.value) {}
    static Status from_errno(int e) { return e ? Status(Errno{e}) : Status(); }
    bool ok() const { return err_ == 0; }
    explicit operator bool() const { return ok(); }
    int error() const { return err_; }

private:
    int err_ = 0;
};

}  // namespace rdma
