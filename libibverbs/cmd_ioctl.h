// A typed builder for one uverbs ioctl (RDMA_VERBS_IOCTL): an object, a
// method and a fixed-capacity list of attributes, all on the caller's stack.
// Header-only so that providers add their driver attributes the same way.
#pragma once

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sys/ioctl.h>

namespace rdma::verbs {

template <unsigned MaxAttrs>
class Ioctl {
public:
    Ioctl(uint16_t object, uint16_t method, uint32_t driver_id = 0) {
        std::memset(buf_, 0, sizeof(buf_));
        hdr()->object_id = object;
        hdr()->method_id = method;
        hdr()->driver_id = driver_id;
    }

    // Input buffer: up to 8 bytes travel inline in the attribute itself.
    ib_uverbs_attr& ptr_in(uint16_t id, const void* data, size_t len) {
        ib_uverbs_attr& a = next(id, len);
        if (len <= sizeof(a.data))
            std::memcpy(&a.data, data, len);
        else
            a.data = reinterpret_cast<uintptr_t>(data);
        return a;
    }
    template <class T>
    ib_uverbs_attr& in(uint16_t id, const T& v) {
        return ptr_in(id, &v, sizeof(v));
    }

    ib_uverbs_attr& ptr_out(uint16_t id, void* data, size_t len) {
        ib_uverbs_attr& a = next(id, len);
        a.data = reinterpret_cast<uintptr_t>(data);
        return a;
    }
    template <class T>
    ib_uverbs_attr& out(uint16_t id, T& v) {
        return ptr_out(id, &v, sizeof(v));
    }

    ib_uverbs_attr& idr_in(uint16_t id, uint32_t handle) {
        ib_uverbs_attr& a = next(id, 0);
        a.data = handle;
        return a;
    }
    // The kernel writes the new object's handle into the attribute.
    ib_uverbs_attr& idr_out(uint16_t id) { return next(id, 0); }
    ib_uverbs_attr& fd_in(uint16_t id, int fd) {
        ib_uverbs_attr& a = next(id, 0);
        a.data_s64 = fd;
        return a;
    }
    ib_uverbs_attr& fd_out(uint16_t id) { return next(id, 0); }
    // Kernel "const" attributes (UVERBS_ATTR_CONST_IN) always travel as a
    // 64-bit inline value, whatever their declared type.
    ib_uverbs_attr& const_in(uint16_t id, uint64_t v) {
        ib_uverbs_attr& a = next(id, sizeof(v));
        a.data = v;
        return a;
    }

    // Driver data (udata) in both directions, when there is any.
    void udata(const void* in, size_t in_len, void* out, size_t out_len) {
        if (in_len)
            ptr_in(UVERBS_ATTR_UHW_IN, in, in_len);
        if (out_len)
            ptr_out(UVERBS_ATTR_UHW_OUT, out, out_len);
    }

    // Every attribute goes out marked mandatory, as the reference sends
    // them: a kernel that does not know one refuses the call
    // (EPROTONOSUPPORT) instead of ignoring it. An attribute the kernel
    // may ignore is marked optional.
    static ib_uverbs_attr& optional(ib_uverbs_attr& a) {
        a.flags = static_cast<uint16_t>(a.flags & ~UVERBS_ATTR_F_MANDATORY);
        return a;
    }

    bool overflowed() const { return overflow_; }

    // 0 on success, else a positive errno (as the kernel returned it;
    // EINVAL for more attributes than the builder holds or one too long).
    int execute(int fd) {
        if (overflow_)
            return EINVAL;
        hdr()->num_attrs = count_;
        hdr()->length = static_cast<uint16_t>(sizeof(ib_uverbs_ioctl_hdr) + count_ * sizeof(ib_uverbs_attr));
        if (::ioctl(fd, RDMA_VERBS_IOCTL, buf_) != 0)
            return errno;
        return 0;
    }

    // After execute(): did the kernel fill this output attribute?
    static bool valid_output(const ib_uverbs_attr& a) { return a.flags & UVERBS_ATTR_F_VALID_OUTPUT; }

private:
    ib_uverbs_attr& next(uint16_t id, size_t len) {
        // (an attribute's length is 16 bits: a longer buffer cannot be
        // described, the call fails with EINVAL instead of a cut length)
        if (count_ >= MaxAttrs || len > UINT16_MAX) {
            overflow_ = true;
            return scratch_;
        }
        ib_uverbs_attr& a = attrs()[count_++];
        a.attr_id = id;
        a.len = static_cast<uint16_t>(len);
        a.flags = UVERBS_ATTR_F_MANDATORY;
        return a;
    }

    // The header ends in a flexible array, so the attributes follow it in
    // one raw buffer (C++ cannot nest such a struct).
    ib_uverbs_ioctl_hdr* hdr() { return reinterpret_cast<ib_uverbs_ioctl_hdr*>(buf_); }
    ib_uverbs_attr* attrs() { return reinterpret_cast<ib_uverbs_attr*>(buf_ + sizeof(ib_uverbs_ioctl_hdr)); }

    alignas(8) unsigned char buf_[sizeof(ib_uverbs_ioctl_hdr) + MaxAttrs * sizeof(ib_uverbs_attr)];
    ib_uverbs_attr scratch_{};
    uint16_t count_ = 0;
    bool overflow_ = false;
};

// True when an ioctl error means "this kernel does not offer the method":
// the caller then falls back to the write ABI.
inline bool ioctl_unsupported(int err) {
    return err == ENOTTY || err == EPROTONOSUPPORT || err == EOPNOTSUPP || err == ENOSYS;
}

// The reference's rule for commands with a write() twin: only a kernel
// without the ioctl framework (ENOTTY) or without this method or one of
// its mandatory attributes (EPROTONOSUPPORT) makes it write instead. Any
// other error, EOPNOTSUPP included, is the driver's answer and stands.
inline bool ioctl_method_absent(int err) { return err == ENOTTY || err == EPROTONOSUPPORT; }

}  // namespace rdma::verbs
