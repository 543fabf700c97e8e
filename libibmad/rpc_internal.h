/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Internals of the RPC half of libibmad: the port object behind the opaque
 * struct ibmad_port, the process-wide defaults, warning output in the
 * reference's format and big-endian byte access used to build and parse
 * MAD headers without going through the field tables.
 *
 * Failure at the C ABI: no entry point of the RPC half goes through the
 * C-entry barrier (util/c_entry.h), because none can throw. MADs are built
 * in fixed buffers on the stack, ports are calloc'ed C structs, and the
 * only calls out are libc and libibumad's C entry points (which keep their
 * own allocation failures behind their barrier and report them as errors).
 * symbols.libibmad_nothrow keeps it so: the library may import no operator
 * new and no C++ function that can throw. (Nor is anything here noexcept
 * that reaches a cancellation point: mad_rpc() and mad_receive() block in
 * umad_recv(), and a thread cancelled there must be able to unwind.)
 */
#ifndef IBMAD_RPC_INTERNAL_H
#define IBMAD_RPC_INTERNAL_H

#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>

#define IBMAD_EXPORT extern "C" __attribute__((visibility("default")))

namespace ibmad {

/* One slot per management class; class numbers are 8 bits on the wire. */
constexpr int max_class = 256;

/* Default timeout/retries when neither the call nor the port sets one. */
extern int default_timeout_ms;
extern int default_retries;
/* madrpc_show_errors(): print the optional RPC diagnostics. */
extern int show_errors;

/* Buffer size for one umad (its header plus a MAD, with room to spare). */
constexpr std::size_t umad_buf_size = 1024;

/* "ibwarn: [pid] func: message\n" on stderr, as the reference prints. */
void warn(const char* func, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/* "ibpanic: [pid] func: message: <strerror(errno)>\n" then exit(-1). */
[[noreturn]] void panic(const char* func, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/* Debug-only and error-only variants of warn(). */
#define IBMAD_DEBUG(func, ...)                \
    do {                                      \
        if (ibdebug)                          \
            ::ibmad::warn(func, __VA_ARGS__); \
    } while (0)
#define IBMAD_ERRS(func, ...)                 \
    do {                                      \
        if (::ibmad::show_errors || ibdebug)  \
            ::ibmad::warn(func, __VA_ARGS__); \
    } while (0)

/* The port used by the deprecated calls without a port argument. */
struct ibmad_port* default_port();

inline uint16_t get_be16(const void* p, std::size_t off) noexcept {
    auto b = static_cast<const uint8_t*>(p) + off;
    return static_cast<uint16_t>((b[0] << 8) | b[1]);
}
inline uint32_t get_be32(const void* p, std::size_t off) noexcept {
    auto b = static_cast<const uint8_t*>(p) + off;
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}
inline uint64_t get_be64(const void* p, std::size_t off) noexcept {
    return (uint64_t{get_be32(p, off)} << 32) | get_be32(p, off + 4);
}
inline void put_be16(void* p, std::size_t off, uint32_t v) noexcept {
    auto b = static_cast<uint8_t*>(p) + off;
    b[0] = static_cast<uint8_t>(v >> 8);
    b[1] = static_cast<uint8_t>(v);
}
inline void put_be32(void* p, std::size_t off, uint32_t v) noexcept {
    auto b = static_cast<uint8_t*>(p) + off;
    b[0] = static_cast<uint8_t>(v >> 24);
    b[1] = static_cast<uint8_t>(v >> 16);
    b[2] = static_cast<uint8_t>(v >> 8);
    b[3] = static_cast<uint8_t>(v);
}
inline void put_be64(void* p, std::size_t off, uint64_t v) noexcept {
    put_be32(p, off, static_cast<uint32_t>(v >> 32));
    put_be32(p, off + 4, static_cast<uint32_t>(v));
}

/* Byte offsets inside a MAD (IBA 13.4 and the class chapters). */
namespace off {
constexpr std::size_t base_version = 0, mgmt_class = 1, class_version = 2, method = 3, status = 4, hop_ptr = 6,
                      hop_cnt = 7, trid = 8, attr_id = 16, attr_mod = 20, mkey = 24, dr_slid = 32, dr_dlid = 34,
                      dr_path = 128, dr_return_path = 192, rmpp_version = 24, rmpp_type = 25, rmpp_flags = 26,
                      rmpp_status = 27, rmpp_d1 = 28, rmpp_d2 = 32, sa_attr_offset = 44, sa_comp_mask = 48,
                      vendor_oui = 37, cc_key = 24;
/* ClassPortInfo (at the GS data offset 64) redirect fields. */
constexpr std::size_t cpi_redirect_sl = 25, cpi_redirect_lid = 28, cpi_redirect_qp = 32, cpi_redirect_qkey = 36;
/* SMP attributes. */
constexpr std::size_t pi_gid_prefix = 8, pi_lid = 16, pi_sm_lid = 18, pi_sm_sl = 36, ni_port_guid = 20,
                      ni_local_port = 36;
/* SA records. */
constexpr std::size_t pr_dgid = 8, pr_sgid = 24, pr_dlid = 40, pr_sl = 53, nr_lid = 0, nr_port_guid = 24;
/* PortCounters and friends. */
constexpr std::size_t pc_port_select = 1, pc_counter_select = 2, pc_counter_select2 = 18, pc_ext_counter_select2 = 4;
}  // namespace off

}  // namespace ibmad

struct ibmad_ports_pair;

/* What the opaque struct ibmad_port holds. */
struct ibmad_port {
    int port_id;
    int class_agents[ibmad::max_class];
    int timeout;
    int retries;
    uint64_t smp_mkey;
    char ca_name[UMAD_CA_NAME_LEN];
    int ca_port;
};

#endif
