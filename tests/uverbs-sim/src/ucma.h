// The emulated rdma_cm (the kernel's ucma: /dev/infiniband/rdma_cm and its
// write ABI of rdma_user_cm.h) and the CM protocol it runs between the
// processes of a simulated host. See ucma.cpp and the README.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace uvsim {

struct Packet;

// open("/dev/infiniband/rdma_cm"): the application's fd (a socket whose
// readability says an event waits), or -1 with errno.
int ucma_open(int flags);
// write() on such an fd: the command's result (len or a negative errno).
ssize_t ucma_write(int fd, const void* buf, size_t len);
// close(): the file's ids go as the kernel's release does (connections
// are rejected or disconnected, listeners stop).
void ucma_close(int fd);
void ucma_dup(int oldfd, int newfd);
// A CM message that arrived over the wire (model thread, sim().mu held).
void ucma_receive(const Packet& p);
// Timers: retransmissions, timewait, peers that died (model thread).
bool ucma_tick();

}  // namespace uvsim
