// The write-ABI commands of /dev/infiniband/uverbsN (ib_user_verbs.h), sent
// the way the reference sends them: through the uverbs ioctl method
// INVOKE_WRITE when the kernel has it, with write(2) as the fallback.
//
// Why the ioctl: the kernel refuses write() on a uverbs file from any
// process other than the one that opened it (a forked child gets EACCES),
// while the ioctl path has no such check. INVOKE_WRITE carries the same
// command structs in attributes: the command number as a constant, the core
// request and response, and the driver data in the UHW attributes.
#pragma once

#include "libibverbs/cmd_ioctl.h"

#include <rdma/ib_user_verbs.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <unistd.h>

#include <vector>

namespace rdma::verbs {

// Where a context's commands go. `no_invoke_write` (shared by every command
// of one context) turns true once the kernel showed it has no INVOKE_WRITE,
// and stays so; a null pointer means write(2) only.
struct CmdChannel {
    int fd;
    uint32_t driver_id;
    std::atomic<bool>* no_invoke_write;
};

namespace detail {

// One command through INVOKE_WRITE. -1: the kernel has no such method (the
// channel is marked), else 0 or a positive errno.
inline int invoke_write(const CmdChannel& ch, uint32_t command, const void* core_in, size_t core_in_len, void* core_out,
                        size_t core_out_len, const void* drv_in, size_t drv_in_len, void* drv_out, size_t drv_out_len) {
    if (!ch.no_invoke_write || ch.no_invoke_write->load(std::memory_order_relaxed))
        return -1;
    Ioctl<5> io(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE, ch.driver_id);
    io.const_in(UVERBS_ATTR_WRITE_CMD, command);
    io.ptr_in(UVERBS_ATTR_CORE_IN, core_in, core_in_len);
    if (core_out_len)
        io.ptr_out(UVERBS_ATTR_CORE_OUT, core_out, core_out_len);
    io.udata(drv_in, drv_in_len, drv_out, drv_out_len);
    int e = io.execute(ch.fd);
    if (e == ENOTTY || e == EPROTONOSUPPORT) {
        ch.no_invoke_write->store(true, std::memory_order_relaxed);
        return -1;
    }
    return e;
}

}  // namespace detail

// Classic commands: the command struct's first field points at the
// response, which the driver's response follows; write() sizes are in
// 4-byte words, header included in in_words.
template <class Cmd, class Resp>
int write_cmd(const CmdChannel& ch, uint32_t command, const Cmd& cmd, Resp* resp, const void* drv_in = nullptr,
              size_t drv_in_len = 0, size_t drv_out_len = 0) {
    constexpr size_t kResp = std::is_empty_v<Resp> ? 0 : sizeof(Resp);
    if (drv_in_len > 256)
        return EINVAL;
    int r = detail::invoke_write(ch, command, &cmd, sizeof(Cmd), resp, resp ? kResp : 0, drv_in, drv_in_len,
                                 resp && drv_out_len ? reinterpret_cast<unsigned char*>(resp) + kResp : nullptr,
                                 resp ? drv_out_len : 0);
    if (r >= 0)
        return r;
    // Header, command and driver data travel back to back in one buffer
    // (the uapi structs end in flexible arrays, so no C++ struct nests them).
    alignas(8) unsigned char msg[sizeof(ib_uverbs_cmd_hdr) + sizeof(Cmd) + 256];
    const size_t in_len = sizeof(ib_uverbs_cmd_hdr) + sizeof(Cmd) + drv_in_len;
    ib_uverbs_cmd_hdr hdr{};
    hdr.command = command;
    hdr.in_words = static_cast<uint16_t>(in_len / 4);
    hdr.out_words = static_cast<uint16_t>((resp ? kResp + drv_out_len : 0) / 4);
    std::memcpy(msg, &hdr, sizeof(hdr));
    std::memcpy(msg + sizeof(hdr), &cmd, sizeof(Cmd));
    if (drv_in_len)
        std::memcpy(msg + sizeof(hdr) + sizeof(Cmd), drv_in, drv_in_len);
    ssize_t n = ::write(ch.fd, msg, in_len);
    if (n != static_cast<ssize_t>(in_len))
        return n < 0 ? errno : EIO;
    return 0;
}

// Commands that answer nothing but success or an errno.
template <class Cmd>
int write_cmd_noresp(const CmdChannel& ch, uint32_t command, const Cmd& cmd, const void* drv_in = nullptr,
                     size_t drv_in_len = 0) {
    struct None {};
    return write_cmd<Cmd, None>(ch, command, cmd, static_cast<None*>(nullptr), drv_in, drv_in_len, 0);
}

// An extended command of any length (`cmd`, cmd_len bytes, a multiple of
// 8: commands whose core part ends in an array, such as the indirection
// table's WQ handles or a flow's specs), with its core response (resp_len
// bytes) and the driver's request, if any (drv_in, padded to 8-byte words
// on the write path); no driver response.
inline int write_ex_raw(const CmdChannel& ch, uint32_t command, const void* cmd, size_t cmd_len, void* resp,
                        size_t resp_len, const void* drv_in = nullptr, size_t drv_in_len = 0) {
    if (cmd_len % 8 || resp_len % 8 || cmd_len / 8 > 0xffff || resp_len / 8 > 0xffff || drv_in_len > 0xffff * 8)
        return EINVAL;
    int r = detail::invoke_write(ch, IB_USER_VERBS_CMD_FLAG_EXTENDED | command, cmd, cmd_len, resp, resp_len, drv_in,
                                 drv_in_len, nullptr, 0);
    if (r >= 0)
        return r;
    const size_t hdrs = sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_ex_cmd_hdr);
    const size_t drv_in8 = (drv_in_len + 7) / 8 * 8;
    std::vector<unsigned char> msg(hdrs + cmd_len + drv_in8);  // (bad_alloc: the caller's barrier)
    ib_uverbs_cmd_hdr hdr{};
    hdr.command = IB_USER_VERBS_CMD_FLAG_EXTENDED | command;
    hdr.in_words = static_cast<uint16_t>(cmd_len / 8);
    hdr.out_words = static_cast<uint16_t>(resp_len / 8);
    ib_uverbs_ex_cmd_hdr ex{};
    ex.response = reinterpret_cast<uintptr_t>(resp);
    ex.provider_in_words = static_cast<uint16_t>(drv_in8 / 8);
    std::memcpy(msg.data(), &hdr, sizeof(hdr));
    std::memcpy(msg.data() + sizeof(hdr), &ex, sizeof(ex));
    std::memcpy(msg.data() + hdrs, cmd, cmd_len);
    if (drv_in_len)
        std::memcpy(msg.data() + hdrs + cmd_len, drv_in, drv_in_len);
    ssize_t n = ::write(ch.fd, msg.data(), msg.size());
    if (n != static_cast<ssize_t>(msg.size()))
        return n < 0 ? errno : EIO;
    return 0;
}

// Extended commands: a second header; sizes in 8-byte words, headers excluded.
// The driver's response (drv_out, at most 256 bytes) follows the core one:
// on the write path the kernel writes it right after resp_len bytes.
// The driver's request (drv_in, at most 256 bytes, padded to 8-byte words
// on the write path) follows the core request.
template <class Cmd, class Resp>
int write_ex_cmd(const CmdChannel& ch, uint32_t command, const Cmd& cmd, Resp* resp, size_t resp_len,
                 void* drv_out = nullptr, size_t drv_out_len = 0, const void* drv_in = nullptr, size_t drv_in_len = 0) {
    if (drv_out_len > 256 || drv_in_len > 256 || resp_len > sizeof(Resp))
        return EINVAL;
    int r = detail::invoke_write(ch, IB_USER_VERBS_CMD_FLAG_EXTENDED | command, &cmd, sizeof(Cmd), resp, resp_len,
                                 drv_in, drv_in_len, drv_out, drv_out_len);
    if (r >= 0)
        return r;
    alignas(8) unsigned char out[sizeof(Resp) + 256];
    void* target = drv_out_len ? static_cast<void*>(out) : static_cast<void*>(resp);
    alignas(8) unsigned char msg[sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_ex_cmd_hdr) + sizeof(Cmd) + 256] = {};
    const size_t drv_in8 = (drv_in_len + 7) / 8 * 8;
    const size_t msg_len = sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_ex_cmd_hdr) + sizeof(Cmd) + drv_in8;
    ib_uverbs_cmd_hdr hdr{};
    hdr.command = IB_USER_VERBS_CMD_FLAG_EXTENDED | command;
    hdr.in_words = static_cast<uint16_t>(sizeof(Cmd) / 8);
    hdr.out_words = static_cast<uint16_t>(resp_len / 8);
    ib_uverbs_ex_cmd_hdr ex{};
    ex.response = reinterpret_cast<uintptr_t>(target);
    ex.provider_in_words = static_cast<uint16_t>(drv_in8 / 8);
    ex.provider_out_words = static_cast<uint16_t>(drv_out_len / 8);
    std::memcpy(msg, &hdr, sizeof(hdr));
    std::memcpy(msg + sizeof(hdr), &ex, sizeof(ex));
    std::memcpy(msg + sizeof(hdr) + sizeof(ex), &cmd, sizeof(Cmd));
    if (drv_in_len)
        std::memcpy(msg + sizeof(hdr) + sizeof(ex) + sizeof(Cmd), drv_in, drv_in_len);
    ssize_t n = ::write(ch.fd, msg, msg_len);
    if (n != static_cast<ssize_t>(msg_len))
        return n < 0 ? errno : EIO;
    if (drv_out_len) {
        std::memcpy(resp, out, resp_len);
        std::memcpy(drv_out, out + resp_len, drv_out_len);
    }
    return 0;
}

}  // namespace rdma::verbs
