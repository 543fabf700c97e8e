#include "cm_common.h"

#include <cerrno>
#include <cstdio>

namespace cm_examples {

rdma_event_channel *create_first_event_channel()
{
	rdma_event_channel *channel = rdma_create_event_channel();
	if (!channel) {
		if (errno == ENODEV)
			std::fprintf(stderr, "No RDMA devices were detected\n");
		else
			std::perror("failed to create RDMA CM event channel");
	}
	return channel;
}

int get_rdma_addr(const char *src, const char *dst, const char *port,
		  const rdma_addrinfo *hints, rdma_addrinfo **result)
{
	if (hints->ai_flags & RAI_PASSIVE)
		return rdma_getaddrinfo(src, port, hints, result);

	// An active side with a bind address: resolve that address passively
	// first and hand it over as the source of the real lookup.
	rdma_addrinfo active = *hints;
	Addrinfo source;
	if (src) {
		rdma_addrinfo passive = *hints;
		passive.ai_flags |= RAI_PASSIVE;
		rdma_addrinfo *found = nullptr;
		int ret = rdma_getaddrinfo(src, nullptr, &passive, &found);
		if (ret)
			return ret;
		source.reset(found);
		active.ai_src_addr = source->ai_src_addr;
		active.ai_src_len = source->ai_src_len;
	}
	return rdma_getaddrinfo(dst, port, &active, result);
}

} // namespace cm_examples
