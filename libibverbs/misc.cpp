// Small exported helpers: sysfs access, enum strings, rate conversions,
// and the legacy driver-registration stub.
#include "libibverbs/ibverbs.h"
#include "util/c_entry.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

using namespace rdma::verbs;

namespace {

struct RateRow {
    ibv_rate rate;
    // Multiple of 2.5 Gb/s as the reference reports it (-1: none). The
    // newer rates carry the reference's own rounding (28 -> 11, 50 -> 20).
    int mult;
    int mbps;
};

constexpr RateRow kRates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},         {IBV_RATE_10_GBPS, 4, 10000},
    {IBV_RATE_20_GBPS, 8, 20000},     {IBV_RATE_30_GBPS, 12, 30000},      {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},      {IBV_RATE_120_GBPS, 48, 120000},
    {IBV_RATE_14_GBPS, -1, 14062},    {IBV_RATE_56_GBPS, -1, 56250},      {IBV_RATE_112_GBPS, -1, 112500},
    {IBV_RATE_168_GBPS, -1, 168750},  {IBV_RATE_25_GBPS, -1, 25781},      {IBV_RATE_100_GBPS, -1, 103125},
    {IBV_RATE_200_GBPS, -1, 206250},  {IBV_RATE_300_GBPS, -1, 309375},    {IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},    {IBV_RATE_400_GBPS, 160, 425000},   {IBV_RATE_600_GBPS, 240, 637500},
    {IBV_RATE_800_GBPS, 320, 850000}, {IBV_RATE_1200_GBPS, 480, 1275000},
};

const char* pick(const char* const* table, size_t n, long i) {
    return (i < 0 || static_cast<size_t>(i) >= n || !table[i]) ? "unknown" : table[i];
}

}  // namespace

extern "C" {

// The root is built (a std::string) on the first call.
RDMA_EXPORT const char* ibv_get_sysfs_path(void) {
    return rdma::entry_null([] { return sysfs_root().c_str(); });
}

// Not through the barrier, not noexcept: it calls nothing but libc, so it
// cannot throw, and open/read/close are cancellation points whose forced
// unwind must pass (noexcept would turn pthread_cancel into std::terminate).
RDMA_EXPORT int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
    char path[512];
    if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= static_cast<int>(sizeof(path))) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t len = ::read(fd, buf, size);
    int saved = errno;
    ::close(fd);
    errno = saved;
    if (len <= 0)
        return static_cast<int>(len);
    if (buf[len - 1] == '\n')
        buf[--len] = '\0';
    else if (static_cast<size_t>(len) < size)
        buf[len] = '\0';
    else
        return -1;  // no room for the terminator: refuse rather than hand out an unterminated string
    return static_cast<int>(len);
}

// Enum strings and rate conversions: constant tables, no allocation, no
// call that can throw. (noexcept cannot be spelled on these: verbs.h
// declares them without it, and C++ rejects a differing specifier.)
RDMA_EXPORT const char* ibv_node_type_str(ibv_node_type node_type) {
    static const char* const names[] = {
        nullptr,
        "InfiniBand channel adapter",
        "InfiniBand switch",
        "InfiniBand router",
        "iWARP NIC",
        "usNIC",
        "usNIC UDP",
        "unspecified",
    };
    return pick(names, std::size(names), node_type);
}

RDMA_EXPORT const char* ibv_port_state_str(ibv_port_state port_state) {
    static const char* const names[] = {"no state change (NOP)", "down", "init", "armed", "active", "active defer"};
    return pick(names, std::size(names), port_state);
}

RDMA_EXPORT const char* ibv_event_type_str(ibv_event_type event) {
    static const char* const names[] = {
        "CQ error",
        "local work queue catastrophic error",
        "invalid request local work queue error",
        "local access violation work queue error",
        "communication established",
        "send queue drained",
        "path migrated",
        "path migration request error",
        "local catastrophic error",
        "port active",
        "port error",
        "LID change",
        "P_Key change",
        "SM change",
        "SRQ catastrophic error",
        "SRQ limit reached",
        "last WQE reached",
        "client reregistration",
        "GID table change",
        "WQ fatal",
    };
    return pick(names, std::size(names), event);
}

RDMA_EXPORT const char* ibv_wc_status_str(ibv_wc_status status) {
    static const char* const names[] = {
        "success",
        "local length error",
        "local QP operation error",
        "local EE context operation error",
        "local protection error",
        "Work Request Flushed Error",
        "memory management operation error",
        "bad response error",
        "local access error",
        "remote invalid request error",
        "remote access error",
        "remote operation error",
        "transport retry counter exceeded",
        "RNR retry counter exceeded",
        "local RDD violation error",
        "remote invalid RD request",
        "aborted error",
        "invalid EE context number",
        "invalid EE context state",
        "fatal error",
        "response timeout error",
        "general error",
        "TM error",
        "TM software rendezvous",
    };
    return pick(names, std::size(names), status);
}

RDMA_EXPORT int ibv_rate_to_mult(ibv_rate rate) {
    for (const RateRow& r : kRates)
        if (r.rate == rate)
            return r.mult;
    return -1;
}

RDMA_EXPORT ibv_rate mult_to_ibv_rate(int mult) {
    // The reverse mapping stops at 400 Gb/s in the reference: 240, 320 and
    // 480 give IBV_RATE_MAX there, and so here.
    for (const RateRow& r : kRates)
        if (r.mult == mult && mult > 0 && mult <= 160)
            return r.rate;
    return IBV_RATE_MAX;
}

RDMA_EXPORT int ibv_rate_to_mbps(ibv_rate rate) {
    for (const RateRow& r : kRates)
        if (r.rate == rate)
            return r.mbps;
    return -1;
}

RDMA_EXPORT ibv_rate mbps_to_ibv_rate(int mbps) {
    for (const RateRow& r : kRates)
        if (r.mbps == mbps)
            return r.rate;
    return IBV_RATE_MAX;
}

// Pre-2017 providers registered themselves through this; the interface is
// private now and such providers cannot work. Kept so that old binaries
// that merely call it still link and run. An empty body: noexcept.
RDMA_EXPORT void ibv_register_driver(const char*, void*) noexcept {}

}  // extern "C"
