// pyverbs.dmabuf: a dma-buf allocated on a GPU through its DRM render node
// (/dev/dri/renderD<128 + gpu>), for DmaBufMR. amdgpu and i915 GPUs are
// known; the kernel's DRM interface is spelled out below (its uapi numbers
// and layouts), so that no DRM headers are needed to build.
#include "pyverbs.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

using namespace pyverbs;

namespace {

namespace drm {

struct version {
    int version_major;
    int version_minor;
    int version_patchlevel;
    size_t name_len;
    char* name;
    size_t date_len;
    char* date;
    size_t desc_len;
    char* desc;
};
struct gem_close {
    uint32_t handle;
    uint32_t pad;
};
struct prime_handle {
    uint32_t handle;
    uint32_t flags;
    int32_t fd;
};
struct i915_gem_create {
    uint64_t size;
    uint32_t handle;
    uint32_t pad;
};
struct i915_gem_mmap_gtt {
    uint32_t handle;
    uint32_t pad;
    uint64_t offset;
};
union amdgpu_gem_create {
    struct {
        uint64_t bo_size;
        uint64_t alignment;
        uint64_t domains;
        uint64_t domain_flags;
    } in;
    struct {
        uint32_t handle;
        uint32_t pad;
    } out;
};
union amdgpu_gem_mmap {
    struct {
        uint32_t handle;
        uint32_t pad;
    } in;
    struct {
        uint64_t addr_ptr;
    } out;
};

constexpr unsigned COMMAND_BASE = 0x40;
constexpr unsigned long IOCTL_VERSION = _IOWR('d', 0x00, version);
constexpr unsigned long IOCTL_GEM_CLOSE = _IOW('d', 0x09, gem_close);
constexpr unsigned long IOCTL_PRIME_HANDLE_TO_FD = _IOWR('d', 0x2d, prime_handle);
constexpr unsigned long IOCTL_I915_GEM_CREATE = _IOWR('d', COMMAND_BASE + 0x1b, i915_gem_create);
constexpr unsigned long IOCTL_I915_GEM_MMAP_GTT = _IOWR('d', COMMAND_BASE + 0x24, i915_gem_mmap_gtt);
constexpr unsigned long IOCTL_AMDGPU_GEM_CREATE = _IOWR('d', COMMAND_BASE + 0x00, amdgpu_gem_create);
constexpr unsigned long IOCTL_AMDGPU_GEM_MMAP = _IOWR('d', COMMAND_BASE + 0x01, amdgpu_gem_mmap);
constexpr uint64_t AMDGPU_GEM_DOMAIN_GTT = 0x2;
constexpr uint64_t AMDGPU_GEM_DOMAIN_VRAM = 0x4;
constexpr uint64_t AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED = 1 << 0;
constexpr uint64_t AMDGPU_GEM_CREATE_CPU_GTT_USWC = 1 << 2;

static_assert(IOCTL_GEM_CLOSE == 0x40086409, "DRM_IOCTL_GEM_CLOSE");
static_assert(IOCTL_PRIME_HANDLE_TO_FD == 0xc00c642d, "DRM_IOCTL_PRIME_HANDLE_TO_FD");
static_assert(sizeof(void*) != 8 || IOCTL_VERSION == 0xc0406400, "DRM_IOCTL_VERSION");

}  // namespace drm

// The GPU driver behind a render node: how it allocates a buffer object
// and where the buffer is mapped from.
enum class Driver { amdgpu, i915 };

class DmaBuf : public CM {
public:
    ~DmaBuf() override { close_quietly(); }
    int drm_fd = -1;
    int fd = -1;
    uint32_t handle = 0;
    uint64_t size = 0;
    uint64_t map_offset = 0;

    // Allocates; false with errno set on failure (what is done is undone).
    bool alloc(uint64_t bytes, int gpu, bool gtt) {
        std::string path = "/dev/dri/renderD" + std::to_string(gpu + 128);
        drm_fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        if (drm_fd < 0)
            return false;
        Driver drv;
        if (!driver(drv) || !create(drv, bytes, gtt)) {
            undo();
            return false;
        }
        drm::prime_handle prime{};
        prime.handle = handle;
        prime.flags = O_RDWR;
        if (ioctl(drm_fd, drm::IOCTL_PRIME_HANDLE_TO_FD, &prime) || !offset(drv)) {
            undo();
            return false;
        }
        fd = prime.fd;
        size = bytes;
        return true;
    }

protected:
    void release() override {
        if (drm_fd < 0)
            return;
        if (fd >= 0)
            ::close(fd);
        drm::gem_close gc{};
        gc.handle = handle;
        ioctl(drm_fd, drm::IOCTL_GEM_CLOSE, &gc);
        ::close(drm_fd);
        drm_fd = fd = -1;
    }

private:
    bool driver(Driver& drv) {
        char name[16] = {};
        drm::version v{};
        v.name = name;
        v.name_len = sizeof(name);
        if (ioctl(drm_fd, drm::IOCTL_VERSION, &v))
            return false;
        name[sizeof(name) - 1] = 0;
        if (!strcmp(name, "amdgpu"))
            drv = Driver::amdgpu;
        else if (!strcmp(name, "i915"))
            drv = Driver::i915;
        else {
            errno = EOPNOTSUPP;
            return false;
        }
        return true;
    }

    bool create(Driver drv, uint64_t bytes, bool gtt) {
        if (drv == Driver::i915) {
            drm::i915_gem_create c{};
            c.size = bytes;
            if (ioctl(drm_fd, drm::IOCTL_I915_GEM_CREATE, &c))
                return false;
            handle = c.handle;
            return true;
        }
        drm::amdgpu_gem_create c{};
        c.in.bo_size = bytes;
        c.in.domains = gtt ? drm::AMDGPU_GEM_DOMAIN_GTT : drm::AMDGPU_GEM_DOMAIN_VRAM;
        c.in.domain_flags = gtt ? drm::AMDGPU_GEM_CREATE_CPU_GTT_USWC : drm::AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED;
        if (ioctl(drm_fd, drm::IOCTL_AMDGPU_GEM_CREATE, &c))
            return false;
        handle = c.out.handle;
        return true;
    }

    bool offset(Driver drv) {
        if (drv == Driver::i915) {
            drm::i915_gem_mmap_gtt g{};
            g.handle = handle;
            if (ioctl(drm_fd, drm::IOCTL_I915_GEM_MMAP_GTT, &g))
                return false;
            map_offset = g.offset;
            return true;
        }
        drm::amdgpu_gem_mmap g{};
        g.in.handle = handle;
        if (ioctl(drm_fd, drm::IOCTL_AMDGPU_GEM_MMAP, &g))
            return false;
        map_offset = g.out.addr_ptr;
        return true;
    }

    // Frees what alloc got so far, errno kept.
    void undo() {
        int e = errno;
        if (handle) {
            drm::gem_close gc{};
            gc.handle = handle;
            ioctl(drm_fd, drm::IOCTL_GEM_CLOSE, &gc);
            handle = 0;
        }
        ::close(drm_fd);
        drm_fd = -1;
        errno = e;
    }
};

}  // namespace

PYBIND11_MODULE(dmabuf, m) {
    import_deps({"pyverbs.base"});
    m.doc() = "dma-buf allocation on a GPU's DRM render node";

    py::class_<DmaBuf, CM, std::shared_ptr<DmaBuf>>(m, "DmaBuf")
        .def(py::init([](uint64_t size, int gpu, int gtt) {
                 auto d = std::make_shared<DmaBuf>();
                 errno = 0;
                 if (!d->alloc(size, gpu, gtt)) {
                     std::string msg =
                         "Failed to allocate dmabuf of size " + std::to_string(size) + " on gpu " + std::to_string(gpu);
                     raise_rdma_errno(msg);
                 }
                 return d;
             }),
             py::arg("size"), py::arg("gpu") = 0, py::arg("gtt") = 0)
        .def_property_readonly("drm_fd", [](const DmaBuf& d) { return d.drm_fd; })
        .def_property_readonly("handle", [](const DmaBuf& d) { return d.handle; })
        .def_property_readonly("fd", [](const DmaBuf& d) { return d.fd; })
        .def_property_readonly("size", [](const DmaBuf& d) { return d.size; })
        .def_property_readonly("map_offset", [](const DmaBuf& d) { return d.map_offset; });
}
