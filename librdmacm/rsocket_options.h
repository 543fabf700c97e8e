// Which socket options rsockets take, what their values must look like,
// and how a value becomes the socket's setting. Pure functions: the unit
// tests check them without a device.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include <infiniband/sa.h>
#include <rdma/rsocket.h>

#include "rsocket_wire.h"

namespace rdma::rs::opts {

enum class Value { Int, Linger, PathData, Any };

// The value type of an option rsetsockopt accepts, or false for options
// rsockets do not support (ENOTSUP, as the reference answers).
inline bool supported(int level, int name, Value& type) {
    switch (level) {
    case SOL_SOCKET:
        switch (name) {
        case SO_REUSEADDR:
        case SO_RCVBUF:
        case SO_SNDBUF:
        case SO_KEEPALIVE:
        case SO_OOBINLINE: type = Value::Int; return true;
        case SO_LINGER: type = Value::Linger; return true;
        default: return false;
        }
    case IPPROTO_TCP:
        switch (name) {
        case TCP_KEEPIDLE:
        case TCP_NODELAY: type = Value::Int; return true;
        case TCP_KEEPCNT:
        case TCP_KEEPINTVL:
        case TCP_MAXSEG:
            type = Value::Any;  // accepted and ignored
            return true;
        default: return false;
        }
    case IPPROTO_IPV6: type = Value::Int; return name == IPV6_V6ONLY;
    case SOL_RDMA:
        switch (name) {
        case RDMA_SQSIZE:
        case RDMA_RQSIZE:
        case RDMA_INLINE:
        case RDMA_IOMAPSIZE: type = Value::Int; return true;
        case RDMA_ROUTE: type = Value::PathData; return true;
        default: return false;
        }
    default: return false;
    }
}

// 0 when rsetsockopt(level, name, val, len) is acceptable, else -errno.
inline int check_set(int level, int name, const void* val, socklen_t len) {
    Value type;
    if (!supported(level, name, type))
        return -ENOTSUP;
    if (!val)
        return -EFAULT;
    switch (type) {
    case Value::Int:
        if (len < sizeof(int))
            return -EINVAL;
        if (level == IPPROTO_TCP && name == TCP_KEEPIDLE) {
            int v;
            std::memcpy(&v, val, sizeof v);
            if (v <= 0)
                return -EINVAL;
        }
        return 0;
    case Value::Linger: return len < sizeof(linger) ? -EINVAL : 0;
    case Value::PathData: return (len == 0 || len % sizeof(ibv_path_data)) ? -EINVAL : 0;
    case Value::Any: return 0;
    }
    return -EINVAL;
}

// SO_RCVBUF / SO_SNDBUF: stored doubled, as the kernel does; a send buffer
// is never smaller than two low-water marks (2 x 2048).
inline uint32_t rcvbuf(int v) { return static_cast<uint32_t>(v) << 1; }
inline uint32_t sndbuf(int v) {
    uint32_t s = static_cast<uint32_t>(v) << 1;
    return s < 2048 ? 4096 : s;
}

// RDMA_SQSIZE / RDMA_RQSIZE / RDMA_INLINE: 16-bit, at most 0xfffe.
inline uint16_t queue_value(int v) {
    return static_cast<uint16_t>(std::min<uint32_t>(static_cast<uint32_t>(v), 0xfffe));
}

// RDMA_IOMAPSIZE: rounded to what the connection data can express.
inline uint32_t iomap_entries(int v) {
    return static_cast<uint16_t>(wire::decode_scale(static_cast<uint8_t>(wire::encode_scale(v, 8)), 8));
}

}  // namespace rdma::rs::opts
