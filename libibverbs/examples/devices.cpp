// ibv_devices: list the RDMA devices and their node GUIDs.
//
// The table layout and the exit statuses match the reference ibverbs-utils
// 44 byte for byte. The program takes no options; arguments are ignored.

#include <infiniband/verbs.h>

#include <cstdio>
#include <endian.h>
#include <memory>

namespace {

struct DeviceListDeleter {
    void operator()(ibv_device** list) const { ibv_free_device_list(list); }
};

void print_row(const char* name, const char* guid) { std::printf("    %-16s\t%s\n", name, guid); }

}  // namespace

int main() {
    int count = 0;
    std::unique_ptr<ibv_device*[], DeviceListDeleter> list(ibv_get_device_list(&count));
    if (!list) {
        std::perror("Failed to get IB devices list");
        return 1;
    }

    print_row("device", "   node GUID");
    print_row("------", "----------------");
    for (int i = 0; i < count; ++i) {
        const unsigned long long guid = be64toh(ibv_get_device_guid(list[i]));
        std::printf("    %-16s\t%016llx\n", ibv_get_device_name(list[i]), guid);
    }
    return 0;
}
