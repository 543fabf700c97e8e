// The uverbs ioctl ABI (RDMA_VERBS_IOCTL): placeholder until the decoder
// lands. ENOTTY means "no ioctl framework": libibverbs then uses the write
// ABI for every command, as on a kernel before 4.20.
#include "verbs.h"

#include <cerrno>

namespace uvsim {

int uverbs_ioctl(Context&, unsigned long, void*) { return -ENOTTY; }

}  // namespace uvsim
