// The management libraries' diagnostic line, as the reference prints it:
// "ibwarn: [pid] function: text" on stderr. One write per line (formatted
// first, so lines of concurrent threads do not interleave), errno kept (and
// %m meaningful). Header-only and allocation-free: libibmad imports nothing
// from the C++ runtime (symbols.libibmad_nothrow).
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>

namespace rdma {

__attribute__((format(printf, 3, 0))) inline void vibwarn_as(const char* tag, const char* fn, const char* fmt,
                                                             va_list ap) noexcept {
    const int saved = errno;
    char msg[1024];
    errno = saved;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    fprintf(stderr, "%s: [%d] %s: %s\n", tag, static_cast<int>(getpid()), fn, msg);
    errno = saved;
}

__attribute__((format(printf, 2, 3))) inline void ibwarn(const char* fn, const char* fmt, ...) noexcept {
    va_list ap;
    va_start(ap, fmt);
    vibwarn_as("ibwarn", fn, fmt, ap);
    va_end(ap);
}

}  // namespace rdma
