// pyverbs.providers.mlx5.mlx5dv_event: DevX event channels (subscribing to
// a DevX object's events, reading them) and the eventfd they may signal.
#include "mlx5_objects.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <vector>

using namespace pyverbs;

namespace {

// The size of an event's data when the caller names none: enough for
// every event type the device reports.
constexpr size_t kDefaultEqeSize = 1024;

class EventChannel : public CM {
public:
    ~EventChannel() override { close_quietly(); }
    mlx5dv_devx_event_channel* ec = nullptr;
    py::object context;

protected:
    void release() override {
        if (ec)
            mlx5dv_devx_destroy_event_channel(std::exchange(ec, nullptr));
    }
};

struct EventHeader : Object {
    py::object cookie, data;
};

struct EventFD : Object {
    int fd = -1;
};

EventChannel& channel_of(py::handle self) { return open_arg<EventChannel>(self, "EventChannel"); }

mlx5dv_devx_obj* devx_obj_of(py::handle obj) {
    return obj.is_none() ? nullptr : open_arg<Mlx5DevxObj>(obj, "Mlx5DevxObj").obj;
}

}  // namespace

PYBIND11_MODULE(mlx5dv_event, m) {
    import_deps({"pyverbs.base", "pyverbs.device", "pyverbs.providers.mlx5.mlx5dv"});
    m.doc() = "DevX event channels and the eventfds they signal";

    py::class_<EventHeader, Object, std::shared_ptr<EventHeader>>(m, "EventHeader",
                                                                  "An event read from a channel: its cookie and data")
        .def(py::init([](py::object cookie, py::object data) {
                 auto h = std::make_shared<EventHeader>();
                 h->cookie = cookie;
                 h->data = data;
                 return h;
             }),
             py::arg("cookie"), py::arg("data"))
        .def_property_readonly("cookie", [](const EventHeader& h) { return h.cookie; })
        .def_property_readonly("data", [](const EventHeader& h) { return h.data; });

    py::class_<EventFD, Object, std::shared_ptr<EventFD>>(m, "EventFD", "An eventfd (a counter to be signalled)")
        .def(py::init([](unsigned initval, int flags) {
                 auto e = std::make_shared<EventFD>();
                 e->fd = eventfd(initval, flags);
                 if (e->fd < 0)
                     raise_rdma_errno("Failed to create a event fd");
                 return e;
             }),
             py::arg("initval") = 0, py::arg("flags") = 0)
        .def_property_readonly("fd", [](const EventFD& e) { return e.fd; });

    py::class_<EventChannel, CM, std::shared_ptr<EventChannel>>(m, "EventChannel", "A DevX event channel")
        .def(py::init([](py::object context, int flags) {
                 Context& ctx = open_arg<Context>(context, "Context");
                 auto c = std::make_shared<EventChannel>();
                 c->ec = mlx5dv_devx_create_event_channel(ctx.ctx, mlx5dv_devx_create_event_channel_flags(flags));
                 if (!c->ec)
                     raise_rdma_errno("Failed to create a devx event channel");
                 c->context = context;
                 c->adopt(context, ctx);
                 return c;
             }),
             py::arg("context"), py::arg("flags") = 0)
        .def(
            "subscribe",
            [](py::handle self, py::object events_num, py::object cookie, py::object obj, py::object fd) {
                EventChannel& c = channel_of(self);
                mlx5dv_devx_obj* o = devx_obj_of(obj);
                if (!fd.is_none()) {
                    // One event per eventfd; the cookie does not apply.
                    bool is_seq = py::hasattr(events_num, "__len__");
                    if (is_seq && py::len(events_num) > 1)
                        raise_error("Only one event must be provided in events_num in fd subscription");
                    uint16_t event = (is_seq ? events_num[py::int_(0)] : events_num).cast<uint16_t>();
                    int efd = arg_as<EventFD>(fd, "EventFD").fd;
                    if (mlx5dv_devx_subscribe_devx_event_fd(c.ec, efd, o, event))
                        raise_rdma_errno("Failed to subscribe to devx event channel fd");
                    return;
                }
                if (cookie.is_none())
                    raise_error("Cookie must be provided with subscription");
                std::vector<uint16_t> events;
                for (py::handle e : events_num)
                    events.push_back(e.cast<uint16_t>());
                if (mlx5dv_devx_subscribe_devx_event(c.ec, o, uint16_t(events.size() * sizeof(uint16_t)), events.data(),
                                                     cookie.cast<uint64_t>()))
                    raise_rdma_errno("Failed to subscribe to devx event channel");
            },
            py::arg("events_num"), py::arg("cookie") = py::none(), py::arg("obj") = py::none(),
            py::arg("fd") = py::none())
        .def(
            "get_event",
            [](py::handle self, size_t event_resp_len, py::object fd) -> py::object {
                if (!fd.is_none()) {
                    uint64_t value = 0;
                    int efd = arg_as<EventFD>(fd, "EventFD").fd;
                    ssize_t n;
                    {
                        py::gil_scoped_release unlocked;
                        n = read(efd, &value, sizeof(value));
                    }
                    if (n < 0)
                        raise_rdma_errno("Failed to get event from FD");
                    return py::int_(value);
                }
                EventChannel& c = channel_of(self);
                // (room for the data past the header too: the count read is
                // taken as the data's length, as the reference takes it)
                std::vector<uint8_t> buf(event_resp_len + sizeof(mlx5dv_devx_async_event_hdr));
                auto* hdr = reinterpret_cast<mlx5dv_devx_async_event_hdr*>(buf.data());
                ssize_t n;
                {
                    py::gil_scoped_release unlocked;
                    n = mlx5dv_devx_get_event(c.ec, hdr, event_resp_len);
                }
                if (n < 0)
                    raise_rdma_errno("Failed to get devx event");
                auto h = std::make_shared<EventHeader>();
                h->cookie = py::int_(hdr->cookie);
                h->data = py::bytes(reinterpret_cast<const char*>(hdr->out_data), size_t(n));
                return py::cast(h);
            },
            py::arg("event_resp_len") = kDefaultEqeSize, py::arg("fd") = py::none())
        .def_property_readonly("fd", [](py::handle self) { return channel_of(self).ec->fd; });
}
