// The legacy write() command ABI of /dev/infiniband/uverbsN: a header, the
// command struct (whose first field points at the response) and optional
// driver data, sent with one write(2).
#pragma once

#include <rdma/ib_user_verbs.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <unistd.h>

namespace rdma::verbs {

// Classic commands: sizes in 4-byte words, header included in in_words.
template <class Cmd, class Resp>
int write_cmd(int fd, uint32_t command, const Cmd& cmd, Resp* resp, const void* drv_in = nullptr,
              size_t drv_in_len = 0, size_t drv_out_len = 0) {
    // Header, command and driver data travel back to back in one buffer
    // (the uapi structs end in flexible arrays, so no C++ struct nests them).
    alignas(8) unsigned char msg[sizeof(ib_uverbs_cmd_hdr) + sizeof(Cmd) + 256];
    if (drv_in_len > 256)
        return EINVAL;
    const size_t in_len = sizeof(ib_uverbs_cmd_hdr) + sizeof(Cmd) + drv_in_len;
    ib_uverbs_cmd_hdr hdr{};
    hdr.command = command;
    hdr.in_words = static_cast<uint16_t>(in_len / 4);
    hdr.out_words = static_cast<uint16_t>((resp ? sizeof(Resp) + drv_out_len : 0) / 4);
    std::memcpy(msg, &hdr, sizeof(hdr));
    std::memcpy(msg + sizeof(hdr), &cmd, sizeof(Cmd));
    if (drv_in_len)
        std::memcpy(msg + sizeof(hdr) + sizeof(Cmd), drv_in, drv_in_len);
    ssize_t n = ::write(fd, msg, in_len);
    if (n != static_cast<ssize_t>(in_len))
        return n < 0 ? errno : EIO;
    return 0;
}

// Commands that answer nothing but success or an errno.
template <class Cmd>
int write_cmd_noresp(int fd, uint32_t command, const Cmd& cmd, const void* drv_in = nullptr, size_t drv_in_len = 0) {
    struct None {};
    return write_cmd<Cmd, None>(fd, command, cmd, static_cast<None*>(nullptr), drv_in, drv_in_len, 0);
}

// Extended commands: a second header; sizes in 8-byte words, headers excluded.
template <class Cmd, class Resp>
int write_ex_cmd(int fd, uint32_t command, const Cmd& cmd, Resp* resp, size_t resp_len) {
    alignas(8) unsigned char msg[sizeof(ib_uverbs_cmd_hdr) + sizeof(ib_uverbs_ex_cmd_hdr) + sizeof(Cmd)];
    ib_uverbs_cmd_hdr hdr{};
    hdr.command = IB_USER_VERBS_CMD_FLAG_EXTENDED | command;
    hdr.in_words = static_cast<uint16_t>(sizeof(Cmd) / 8);
    hdr.out_words = static_cast<uint16_t>(resp_len / 8);
    ib_uverbs_ex_cmd_hdr ex{};
    ex.response = reinterpret_cast<uintptr_t>(resp);
    std::memcpy(msg, &hdr, sizeof(hdr));
    std::memcpy(msg + sizeof(hdr), &ex, sizeof(ex));
    std::memcpy(msg + sizeof(hdr) + sizeof(ex), &cmd, sizeof(Cmd));
    ssize_t n = ::write(fd, msg, sizeof(msg));
    if (n != static_cast<ssize_t>(sizeof(msg)))
        return n < 0 ? errno : EIO;
    return 0;
}

}  // namespace rdma::verbs
