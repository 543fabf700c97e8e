// ibv_asyncwatch: open an RDMA device and print its asynchronous events
// (port up/down, LID/P_Key/GID changes, fatal errors ...) as they arrive,
// until killed.
//
// Options, messages and exit statuses are those of ibverbs-utils 44. Only
// the public <infiniband/verbs.h> API is used.

#include <infiniband/verbs.h>

#include <getopt.h>

#include <cstdio>
#include <cstring>
#include <memory>

namespace {

// Names of the device-wide events; events about a QP, CQ or SRQ are not
// expected on a context that created none.
const char* event_name(ibv_event_type type) {
    switch (type) {
    case IBV_EVENT_DEVICE_FATAL: return "IBV_EVENT_DEVICE_FATAL";
    case IBV_EVENT_PORT_ACTIVE: return "IBV_EVENT_PORT_ACTIVE";
    case IBV_EVENT_PORT_ERR: return "IBV_EVENT_PORT_ERR";
    case IBV_EVENT_LID_CHANGE: return "IBV_EVENT_LID_CHANGE";
    case IBV_EVENT_PKEY_CHANGE: return "IBV_EVENT_PKEY_CHANGE";
    case IBV_EVENT_SM_CHANGE: return "IBV_EVENT_SM_CHANGE";
    case IBV_EVENT_CLIENT_REREGISTER: return "IBV_EVENT_CLIENT_REREGISTER";
    case IBV_EVENT_GID_CHANGE: return "IBV_EVENT_GID_CHANGE";
    default: return "unexpected";
    }
}

void usage(const char* argv0) {
    std::printf("Usage:\n");
    std::printf("  %s            start an asyncwatch process\n", argv0);
    std::printf("\n");
    std::printf("Options:\n");
    std::printf("  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n");
    std::printf("  -h, --help             print a help text and exit\n");
}

constexpr option kLongOptions[] = {
    {"ib-dev", required_argument, nullptr, 'd'},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};

struct DeviceListDeleter {
    void operator()(ibv_device** list) const { ibv_free_device_list(list); }
};

}  // namespace

int main(int argc, char* argv[]) {
    // Events must show up at once even when stdout is a pipe or a file.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);

    const char* ib_devname = nullptr;
    for (;;) {
        int c = getopt_long(argc, argv, "d:h", kLongOptions, nullptr);
        if (c == -1)
            break;
        if (c == 'd') {
            ib_devname = optarg;
            continue;
        }
        usage(argv[0]);
        return c == 'h' ? 0 : 1;
    }

    std::unique_ptr<ibv_device*[], DeviceListDeleter> dev_list(ibv_get_device_list(nullptr));
    if (!dev_list) {
        std::perror("Failed to get IB devices list");
        return 1;
    }

    ibv_device** dev = dev_list.get();
    if (ib_devname)
        while (*dev && std::strcmp(ibv_get_device_name(*dev), ib_devname) != 0)
            ++dev;
    if (!*dev) {
        std::fprintf(stderr, "IB device %s not found\n", ib_devname ? ib_devname : "");
        return 1;
    }

    ibv_context* context = ibv_open_device(*dev);
    if (!context) {
        std::fprintf(stderr, "Couldn't get context for %s\n", ibv_get_device_name(*dev));
        return 1;
    }

    std::printf("%s: async event FD %d\n", ibv_get_device_name(*dev), context->async_fd);

    for (;;) {
        ibv_async_event event;
        if (ibv_get_async_event(context, &event))
            return 1;
        // element is a union; the reference prints its port_num member for
        // every event, whatever the event is about.
        std::printf("  event_type %s (%d), port %d\n", event_name(event.event_type), event.event_type,
                    event.element.port_num);
        ibv_ack_async_event(&event);
    }
}
