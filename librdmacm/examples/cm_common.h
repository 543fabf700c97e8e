// Pieces shared by the connection manager examples (rping, ucmatose,
// udaddy, mckey, cmtime): event channel creation with the reference's
// messages, the rdma_getaddrinfo dance for a server/bind address pair, a
// counting semaphore, number parsing with atoi's semantics, and an owner
// for rdma_getaddrinfo results.
//
// Messages, exit statuses and wire formats of these programs are a
// compatibility contract with rdmacm-utils 44: scripts read their output
// and they interoperate with the reference's programs on the wire.

#pragma once

#include <rdma/rdma_cma.h>

#include <semaphore.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace cm_examples {

// rdma_create_event_channel(), saying why on failure: "No RDMA devices were
// detected" when the kernel has no RDMA device (ENODEV), perror() text
// otherwise. errno is left as the library set it.
rdma_event_channel *create_first_event_channel();

// Resolves the addresses of a test: with RAI_PASSIVE in hints, the local
// (src, port) to listen on; otherwise the server (dst, port), optionally
// from the local address src. Returns rdma_getaddrinfo's status (an EAI_*
// code, or -1 with errno) and prints nothing.
int get_rdma_addr(const char *src, const char *dst, const char *port,
		  const rdma_addrinfo *hints, rdma_addrinfo **result);

// atoi(): leading blanks, a sign and decimal digits; anything else ends the
// number. Overflow wraps like the C library's strtol-to-int conversion.
inline int to_int(const char *text)
{
	return static_cast<int>(std::strtol(text, nullptr, 10));
}

// A POSIX semaphore owned by an object (process-private).
class Semaphore {
public:
	explicit Semaphore(unsigned int initial) { sem_init(&sem_, 0, initial); }
	~Semaphore() { sem_destroy(&sem_); }
	Semaphore(const Semaphore &) = delete;
	Semaphore &operator=(const Semaphore &) = delete;

	void post() { sem_post(&sem_); }
	void wait()
	{
		while (sem_wait(&sem_) && errno == EINTR) {
		}
	}

private:
	sem_t sem_;
};

struct AddrinfoDeleter {
	void operator()(rdma_addrinfo *info) const { rdma_freeaddrinfo(info); }
};
using Addrinfo = std::unique_ptr<rdma_addrinfo, AddrinfoDeleter>;

} // namespace cm_examples
