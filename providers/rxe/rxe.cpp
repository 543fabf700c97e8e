// Soft-RoCE (rdma_rxe) provider: the kernel implements the device in
// software; userspace shares its queues through mmap (see rdma_user_rxe.h).
// This part covers matching and the device context; the queue objects and
// the data path come with the verbs data-path work.
#include "libibverbs/driver.h"

#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_rxe.h>

#include <new>

namespace rdma::rxe {
namespace {

using namespace rdma::verbs;

class RxeContext final : public Context {
public:
    using Context::Context;

    int query_device_ex(const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr,
                        size_t attr_size) override {
        uint64_t raw_fw = 0;
        if (int e = cmd_query_device_ex(input, attr, attr_size, &raw_fw))
            return e;
        format_fw_ver(raw_fw, attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver));
        return 0;
    }
};

class RxeDevice final : public Device {
public:
    using Device::Device;

    Context* open_context(int cmd_fd, void*) override {
        auto* ctx = new (std::nothrow) RxeContext(*this, cmd_fd);
        if (!ctx) {
            errno = ENOMEM;
            return nullptr;
        }
        if (int e = ctx->init_kernel_context(nullptr, 0, nullptr, 0)) {
            ctx->ibv()->cmd_fd = -1;  // the caller still owns and closes it
            delete ctx;
            errno = e;
            return nullptr;
        }
        return ctx;
    }
};

constexpr MatchEntry kMatch[] = {
    match_driver_id(RDMA_DRIVER_RXE),
    match_modalias("rdma_device:*Nrxe*"),
};

const Provider kRxe{
    "rxe",
    1,
    2,
    kMatch,
    [](const SysfsDevice& sysfs, const MatchEntry*) -> Device* {
        return new (std::nothrow) RxeDevice(kRxe, sysfs);
    },
};

[[gnu::constructor]] void register_rxe() { register_provider(kRxe); }

}  // namespace
}  // namespace rdma::rxe
