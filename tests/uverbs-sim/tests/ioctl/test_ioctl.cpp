// The uverbs ioctl decoder (cmd_ioctl.cpp), driven directly: a Context made
// as the interposer makes one for open("/dev/infiniband/uverbsN"), an
// application-memory arena the decoder may touch (set_app_arena), and
// RDMA_VERBS_IOCTL requests built in that arena. Every method's good path
// and each framing/attribute errno of the kernel's method framework.
#include "verbs.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <ftw.h>
#include <map>
#include <vector>
#include <memory>
#include <random>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <tuple>
#include <unistd.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/mlx5_user_ioctl_cmds.h>
#include <rdma/mlx5_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

using namespace uvsim;

namespace {

// Device 0: InfiniBand, one port. Device 1: Ethernet (RoCE), one port with
// an IPv4 address (GIDs: link-local v1/v2, IPv4-mapped v1/v2).
const char* kConfig = "device mlx5_0\n"
                      "ports 1\n"
                      "port 1 lid 0x11\n"
                      "device mlx5_1\n"
                      "ports 1\n"
                      "link_layer eth\n"
                      "port 1 mac 02:aa:bb:cc:dd:ee ipv4 10.1.2.3\n";

std::string g_dir;

int rm_one(const char* p, const struct stat*, int flag, struct FTW*) { return flag == FTW_DP ? rmdir(p) : unlink(p); }

// A private simulated host, set before the core first reads its config.
__attribute__((constructor(101))) void setup_host() {
    for (const char* v : {"UVERBS_SIM_CONFIG", "UVERBS_SIM_FAULTS", "UVERBS_SIM_TRACE", "UVERBS_SIM_DEVICES",
                          "UVERBS_SIM_LINK", "UVERBS_SIM_DIR"})
        unsetenv(v);
    const char* tmp = getenv("TMPDIR");
    std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/uvsim-ioctl.XXXXXX";
    if (!mkdtemp(t.data()))
        abort();
    g_dir = t;
    const std::string conf = g_dir + "/sim.conf";
    FILE* f = fopen(conf.c_str(), "we");
    if (!f || fputs(kConfig, f) < 0 || fclose(f))
        abort();
    setenv("UVERBS_SIM_DIR", g_dir.c_str(), 1);
    setenv("UVERBS_SIM_CONFIG", conf.c_str(), 1);
    atexit([] { nftw(g_dir.c_str(), rm_one, 8, FTW_DEPTH | FTW_PHYS); });
}

// The application memory: one mapping, bump-allocated.
struct Arena {
    static constexpr size_t kLen = 4 << 20;
    uint8_t* p = nullptr;
    size_t used = 0;
    Arena() {
        p = static_cast<uint8_t*>(mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (p == MAP_FAILED)
            abort();
        set_app_arena(reinterpret_cast<uint64_t>(p), kLen);
    }
    ~Arena() {
        set_app_arena(0, 0);
        munmap(p, kLen);
    }
    template <class T = uint8_t>
    T* alloc(size_t n, size_t align = 64) {
        used = (used + align - 1) & ~(align - 1);
        T* r = reinterpret_cast<T*>(p + used);
        used += n;
        if (used > kLen)
            abort();
        memset(r, 0, n);
        return r;
    }
    static uint64_t a(const void* x) { return reinterpret_cast<uint64_t>(x); }
};

// An open uverbs file, as interpose.cpp's open_uverbs makes it.
struct File {
    int fd = -1;
    Context* c = nullptr;
    explicit File(int dev) {
        fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        auto ctx = std::make_unique<Context>();
        ctx->fd = fd;
        ctx->dev = &sim().devices.at(dev);
        c = ctx.get();
        sim().files[fd] = std::move(ctx);
        fd_mark(fd, FdKind::Uverbs);
    }
    ~File() {
        std::vector<int> afds;
        if (c->async)
            afds.push_back(c->async->app_fd);
        for (const auto& a : c->more_async)
            afds.push_back(a->app_fd);
        uverbs_close(fd);
        ::close(fd);
        for (int afd : afds)
            ::close(afd);
    }
    int ioctl(unsigned long req, void* arg) const {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        return uverbs_ioctl(*c, req, arg);
    }
};

// One RDMA_VERBS_IOCTL request in the arena.
struct Req {
    Arena& ar;
    ib_uverbs_ioctl_hdr* hdr;
    ib_uverbs_attr* at;
    uint16_t n = 0;
    static constexpr uint16_t kMax = 32;

    Req(Arena& a, uint16_t obj, uint16_t method) : ar(a) {
        hdr = ar.alloc<ib_uverbs_ioctl_hdr>(sizeof(ib_uverbs_ioctl_hdr) + kMax * sizeof(ib_uverbs_attr), 8);
        at = hdr->attrs;
        hdr->object_id = obj;
        hdr->method_id = method;
        hdr->driver_id = RDMA_DRIVER_MLX5;
    }
    ib_uverbs_attr& add(uint16_t id, uint16_t len, uint64_t data, uint16_t flags = 0) {
        ib_uverbs_attr& x = at[n++];
        x.attr_id = id;
        x.len = len;
        x.flags = flags;
        x.data = data;
        return x;
    }
    // input bytes: inline up to 8, else a copy in the arena
    ib_uverbs_attr& in(uint16_t id, const void* p, uint16_t len, uint16_t flags = 0) {
        uint64_t d = 0;
        if (len <= 8) {
            memcpy(&d, p, len);
        } else {
            void* c = ar.alloc(len, 8);
            memcpy(c, p, len);
            d = Arena::a(c);
        }
        return add(id, len, d, flags);
    }
    ib_uverbs_attr& u32(uint16_t id, uint32_t v) { return in(id, &v, 4); }
    ib_uverbs_attr& u64(uint16_t id, uint64_t v) { return in(id, &v, 8); }
    ib_uverbs_attr& cnst(uint16_t id, uint64_t v) { return u64(id, v); }
    ib_uverbs_attr& out(uint16_t id, void* p, uint16_t len) { return add(id, len, Arena::a(p)); }
    ib_uverbs_attr& obj(uint16_t id, int64_t h) { return add(id, 0, static_cast<uint64_t>(h)); }
    int run(const File& f) {
        hdr->num_attrs = n;
        hdr->length = static_cast<uint16_t>(sizeof(ib_uverbs_ioctl_hdr) + n * sizeof(ib_uverbs_attr));
        const int r = f.ioctl(RDMA_VERBS_IOCTL, hdr);
        return r < 0 ? r : 0;
    }
    bool valid(const ib_uverbs_attr& x) const { return x.flags & UVERBS_ATTR_F_VALID_OUTPUT; }
};

class Ioctl : public ::testing::Test {
protected:
    Arena ar;

    // GET_CONTEXT (+ ASYNC_EVENT_ALLOC) on f; returns the ucontext response
    mlx5_ib_alloc_ucontext_resp open_ctx(File& f, bool async = true, uint64_t lib_caps = 0) {
        auto* req = ar.alloc<mlx5_ib_alloc_ucontext_req_v2>(sizeof(mlx5_ib_alloc_ucontext_req_v2));
        req->total_num_bfregs = 4;
        req->max_cqe_version = 1;
        req->lib_caps = lib_caps;
        auto* resp = ar.alloc<mlx5_ib_alloc_ucontext_resp>(sizeof(mlx5_ib_alloc_ucontext_resp));
        auto* ncomp = ar.alloc<uint32_t>(4);
        auto* core = ar.alloc<uint64_t>(8);
        Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT);
        r.out(UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, ncomp, 4);
        r.out(UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, core, 8);
        r.add(UVERBS_ATTR_UHW_IN, sizeof *req, Arena::a(req));
        auto& o = r.out(UVERBS_ATTR_UHW_OUT, resp, sizeof *resp);
        EXPECT_EQ(r.run(f), 0);
        EXPECT_TRUE(r.valid(o));
        EXPECT_EQ(*ncomp, 1u);
        EXPECT_EQ(*core, uint64_t(IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS));
        if (async) {
            Req a(ar, UVERBS_OBJECT_ASYNC_EVENT, UVERBS_METHOD_ASYNC_EVENT_ALLOC);
            auto& fa = a.add(UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, 0, 0);
            EXPECT_EQ(a.run(f), 0);
            EXPECT_GE(fa.data_s64, 0);
            EXPECT_EQ(fa.data_s64, f.c->async->app_fd);
        }
        return *resp;
    }

    uint32_t make_pd(File& f) {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        uint32_t h, pdn;
        EXPECT_EQ(alloc_pd(*f.c, h, pdn), 0);
        return h;
    }

    struct CqOut {
        int r;
        uint32_t handle, cqe, cqn;
    };
    // uar_page: the UAR object the CQ's doorbells name (-1: none)
    CqOut make_cq(File& f, uint32_t cqe = 15, int channel = -1, int64_t uar_page = -1) {
        auto* drv = ar.alloc<mlx5_ib_create_cq>(sizeof(mlx5_ib_create_cq));
        drv->buf_addr = Arena::a(ar.alloc(16 * 64, 4096));
        drv->db_addr = Arena::a(ar.alloc(8, 64));
        drv->cqe_size = 64;
        if (uar_page >= 0) {
            drv->flags |= MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX;
            drv->uar_page_index = static_cast<uint16_t>(uar_page);
        }
        auto* rc = ar.alloc<uint32_t>(4);
        auto* d = ar.alloc<mlx5_ib_create_cq_resp>(sizeof(mlx5_ib_create_cq_resp));
        Req r(ar, UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE);
        auto& h = r.obj(UVERBS_ATTR_CREATE_CQ_HANDLE, 0);
        r.u32(UVERBS_ATTR_CREATE_CQ_CQE, cqe);
        r.u64(UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 0x1234);
        r.u32(UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 0);
        if (channel >= 0)
            r.obj(UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, channel);
        auto& oc = r.out(UVERBS_ATTR_CREATE_CQ_RESP_CQE, rc, 4);
        r.in(UVERBS_ATTR_UHW_IN, drv, sizeof *drv);
        r.out(UVERBS_ATTR_UHW_OUT, d, sizeof *d);
        CqOut o{r.run(f), static_cast<uint32_t>(h.data), *rc, d->cqn};
        if (o.r == 0) {
            EXPECT_TRUE(r.valid(oc));
        }
        return o;
    }

    int destroy_cq_ioctl(File& f, uint32_t h, ib_uverbs_destroy_cq_resp* out = nullptr) {
        auto* resp = ar.alloc<ib_uverbs_destroy_cq_resp>(sizeof(ib_uverbs_destroy_cq_resp));
        Req r(ar, UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_DESTROY);
        r.obj(UVERBS_ATTR_DESTROY_CQ_HANDLE, h);
        r.out(UVERBS_ATTR_DESTROY_CQ_RESP, resp, sizeof *resp);
        int e = r.run(f);
        if (out)
            *out = *resp;
        return e;
    }
};

// ------------------------------------------------------------------ framing

TEST_F(Ioctl, WrongIoctlNumberIsEnotty) {
    File f(0);
    Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT);
    EXPECT_EQ(f.ioctl(_IOWR(RDMA_IOCTL_MAGIC, 2, ib_uverbs_ioctl_hdr), r.hdr), -ENOTTY);
    EXPECT_EQ(f.ioctl(TCGETS, r.hdr), -ENOTTY);
}

TEST_F(Ioctl, GenericFileIoctlsReachTheFile) {
    File f(0);
    EXPECT_EQ(f.ioctl(FIONCLEX, nullptr), 0);
    EXPECT_EQ(fcntl(f.fd, F_GETFD) & FD_CLOEXEC, 0);
    EXPECT_EQ(f.ioctl(FIOCLEX, nullptr), 0);
    EXPECT_NE(fcntl(f.fd, F_GETFD) & FD_CLOEXEC, 0);
}

TEST_F(Ioctl, UnreadableHeaderIsEfault) {
    File f(0);
    EXPECT_EQ(f.ioctl(RDMA_VERBS_IOCTL, reinterpret_cast<void*>(8)), -EFAULT);
}

TEST_F(Ioctl, LengthMustMatchAttrCount) {
    File f(0);
    Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
    r.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
    r.hdr->num_attrs = 1;
    r.hdr->length = sizeof(ib_uverbs_ioctl_hdr) + 2 * sizeof(ib_uverbs_attr);
    EXPECT_EQ(f.ioctl(RDMA_VERBS_IOCTL, r.hdr), -EINVAL);
    r.hdr->length = sizeof(ib_uverbs_ioctl_hdr) + 1 * sizeof(ib_uverbs_attr) - 1;
    EXPECT_EQ(f.ioctl(RDMA_VERBS_IOCTL, r.hdr), -EINVAL);
    // more than a page is refused even when consistent
    auto* big = ar.alloc<ib_uverbs_ioctl_hdr>(8192, 8);
    big->num_attrs = 300;
    big->length = static_cast<uint16_t>(sizeof(ib_uverbs_ioctl_hdr) + 300 * sizeof(ib_uverbs_attr));
    EXPECT_EQ(f.ioctl(RDMA_VERBS_IOCTL, big), -EINVAL);
}

TEST_F(Ioctl, ReservedHeaderFieldsAreEprotonosupport) {
    // the kernel answers EPROTONOSUPPORT (not EINVAL): "this ABI extension
    // is unknown", so that libibverbs falls back to the write command
    File f(0);
    open_ctx(f);
    Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT);
    r.hdr->reserved1 = 1;
    EXPECT_EQ(r.run(f), -EPROTONOSUPPORT);
    r.hdr->reserved1 = 0;
    r.hdr->reserved2 = 1;
    EXPECT_EQ(r.run(f), -EPROTONOSUPPORT);
}

TEST_F(Ioctl, UnknownObjectOrMethodIsEprotonosupport) {
    File f(0);
    open_ctx(f);
    EXPECT_EQ(Req(ar, 0x77, 0).run(f), -EPROTONOSUPPORT);
    EXPECT_EQ(Req(ar, UVERBS_OBJECT_DEVICE, 0x55).run(f), -EPROTONOSUPPORT);
    EXPECT_EQ(Req(ar, UVERBS_OBJECT_PD, 7).run(f), -EPROTONOSUPPORT);
    // objects of this device with no ioctl methods
    EXPECT_EQ(Req(ar, UVERBS_OBJECT_COMP_CHANNEL, 0).run(f), -EPROTONOSUPPORT);
    EXPECT_EQ(Req(ar, UVERBS_OBJECT_FLOW_ACTION, UVERBS_METHOD_FLOW_ACTION_DESTROY).run(f), -EPROTONOSUPPORT);
    // (device memory is a method now: its mandatory attributes are missing)
    EXPECT_EQ(Req(ar, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC).run(f), -EINVAL);
    EXPECT_EQ(Req(ar, UVERBS_OBJECT_DM, MLX5_IB_METHOD_DM_MAP_OP_ADDR).run(f), -EPROTONOSUPPORT);
    // mlx5 driver objects and methods not offered
    EXPECT_EQ(Req(ar, MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_QUERY_EQN).run(f), -EPROTONOSUPPORT);
    EXPECT_EQ(Req(ar, MLX5_IB_OBJECT_VAR, MLX5_IB_METHOD_VAR_OBJ_ALLOC).run(f), -EPROTONOSUPPORT);
    EXPECT_EQ(Req(ar, UVERBS_OBJECT_DEVICE, MLX5_IB_METHOD_QUERY_PORT).run(f), -EPROTONOSUPPORT);
}

TEST_F(Ioctl, DriverIdIsNotChecked) {
    File f(0);
    open_ctx(f);
    for (uint32_t id : {0u, uint32_t(RDMA_DRIVER_MLX5), 0xabcdu}) {
        auto* resp = ar.alloc<ib_uverbs_query_port_resp_ex>(sizeof(ib_uverbs_query_port_resp_ex));
        Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
        r.hdr->driver_id = id;
        r.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
        r.out(UVERBS_ATTR_QUERY_PORT_RESP, resp, sizeof *resp);
        EXPECT_EQ(r.run(f), 0) << id;
    }
}

// ---------------------------------------------------------------- attributes

TEST_F(Ioctl, UnknownAttributeIgnoredUnlessMandatory) {
    File f(0);
    open_ctx(f);
    auto* resp = ar.alloc<ib_uverbs_query_port_resp_ex>(sizeof(ib_uverbs_query_port_resp_ex));
    {
        Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
        r.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
        r.out(UVERBS_ATTR_QUERY_PORT_RESP, resp, sizeof *resp);
        r.u32(0x99, 5);
        r.u32(UVERBS_UDATA_DRIVER_DATA_FLAG | 0x33, 5);  // driver namespace too
        EXPECT_EQ(r.run(f), 0);
    }
    {
        Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
        r.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
        r.out(UVERBS_ATTR_QUERY_PORT_RESP, resp, sizeof *resp);
        r.u32(0x99, 5).flags = UVERBS_ATTR_F_MANDATORY;
        EXPECT_EQ(r.run(f), -EPROTONOSUPPORT);
    }
}

TEST_F(Ioctl, DuplicateAttributeIsEinval) {
    File f(0);
    open_ctx(f);
    auto* resp = ar.alloc<ib_uverbs_query_port_resp_ex>(sizeof(ib_uverbs_query_port_resp_ex));
    Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
    r.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
    r.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
    r.out(UVERBS_ATTR_QUERY_PORT_RESP, resp, sizeof *resp);
    EXPECT_EQ(r.run(f), -EINVAL);
}

TEST_F(Ioctl, MissingMandatoryAttributeIsEinval) {
    File f(0);
    open_ctx(f);
    Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
    r.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
    EXPECT_EQ(r.run(f), -EINVAL);
    // the mlx5 ucontext attribute of QUERY_CONTEXT is mandatory
    EXPECT_EQ(Req(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT).run(f), -EINVAL);
}

TEST_F(Ioctl, AttributeSizeAndReservedBits) {
    File f(0);
    open_ctx(f);
    auto* resp = ar.alloc<ib_uverbs_query_port_resp_ex>(64);
    {  // a constant is exactly 8 bytes
        Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
        r.u32(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
        r.out(UVERBS_ATTR_QUERY_PORT_RESP, resp, sizeof(ib_uverbs_query_port_resp_ex));
        EXPECT_EQ(r.run(f), -EINVAL);
    }
    {  // an output struct shorter than its minimum
        Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
        r.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
        r.out(UVERBS_ATTR_QUERY_PORT_RESP, resp, sizeof(ib_uverbs_query_port_resp));
        EXPECT_EQ(r.run(f), -EINVAL);
    }
    {  // longer is fine, the tail is zeroed
        memset(resp, 0xff, 64);
        Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
        r.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
        r.out(UVERBS_ATTR_QUERY_PORT_RESP, resp, 64);
        EXPECT_EQ(r.run(f), 0);
        const uint8_t* b = reinterpret_cast<const uint8_t*>(resp);
        for (size_t i = sizeof(ib_uverbs_query_port_resp_ex); i < 64; ++i)
            EXPECT_EQ(b[i], 0) << i;
    }
    {  // attr_data.reserved of a pointer attribute
        Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
        r.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1).attr_data.reserved = 1;
        r.out(UVERBS_ATTR_QUERY_PORT_RESP, resp, sizeof(ib_uverbs_query_port_resp_ex));
        EXPECT_EQ(r.run(f), -EINVAL);
    }
    {  // a constant above its type (port is a u8)
        Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
        r.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 0x101);
        r.out(UVERBS_ATTR_QUERY_PORT_RESP, resp, sizeof(ib_uverbs_query_port_resp_ex));
        EXPECT_EQ(r.run(f), -EINVAL);
    }
}

TEST_F(Ioctl, PointerAttributesInlineOrByAddress) {
    File f(0);
    open_ctx(f);
    // the ucontext request is 40 bytes: by address; unmapped -> EFAULT
    File g(0);
    auto* resp = ar.alloc<mlx5_ib_alloc_ucontext_resp>(sizeof(mlx5_ib_alloc_ucontext_resp));
    Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT);
    r.add(UVERBS_ATTR_UHW_IN, sizeof(mlx5_ib_alloc_ucontext_req_v2), 0x1000);
    r.out(UVERBS_ATTR_UHW_OUT, resp, sizeof *resp);
    EXPECT_EQ(r.run(g), -EFAULT);
    EXPECT_FALSE(g.c->have_ucontext);
    // an 8-byte v1 request travels inline in data
    mlx5_ib_alloc_ucontext_req v1{};
    v1.total_num_bfregs = 2;
    static_assert(sizeof v1 == 8);
    Req r2(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT);
    r2.in(UVERBS_ATTR_UHW_IN, &v1, sizeof v1);
    auto& o = r2.out(UVERBS_ATTR_UHW_OUT, resp, sizeof *resp);
    EXPECT_EQ(r2.run(g), 0);
    EXPECT_TRUE(r2.valid(o));
    EXPECT_EQ(resp->tot_bfregs, 2u);
    // an output buffer outside application memory
    auto* ok = ar.alloc<ib_uverbs_query_port_resp_ex>(sizeof(ib_uverbs_query_port_resp_ex));
    (void)ok;
    Req r3(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
    r3.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
    r3.add(UVERBS_ATTR_QUERY_PORT_RESP, sizeof(ib_uverbs_query_port_resp_ex), 0x2000);
    EXPECT_EQ(r3.run(f), -EFAULT);
}

TEST_F(Ioctl, StructInputTailMustBeZero) {
    File f(0);
    open_ctx(f);
    const uint32_t pd = make_pd(f);
    CqOut cq = make_cq(f);
    ASSERT_EQ(cq.r, 0);
    auto attempt = [&](const uint8_t* cap, uint16_t len) {
        auto* drv = ar.alloc<mlx5_ib_create_qp>(sizeof(mlx5_ib_create_qp));
        drv->buf_addr = Arena::a(ar.alloc(8192, 4096));
        drv->db_addr = Arena::a(ar.alloc(8, 64));
        drv->sq_wqe_count = 64;
        drv->rq_wqe_count = 64;
        drv->rq_wqe_shift = 6;
        auto* rcap = ar.alloc<ib_uverbs_qp_cap>(sizeof(ib_uverbs_qp_cap));
        auto* qpn = ar.alloc<uint32_t>(4);
        auto* d = ar.alloc<mlx5_ib_create_qp_resp>(sizeof(mlx5_ib_create_qp_resp));
        Req r(ar, UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE);
        auto& h = r.obj(UVERBS_ATTR_CREATE_QP_HANDLE, 0);
        r.obj(UVERBS_ATTR_CREATE_QP_PD_HANDLE, pd);
        r.obj(UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, cq.handle);
        r.obj(UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, cq.handle);
        r.u64(UVERBS_ATTR_CREATE_QP_USER_HANDLE, 7);
        r.in(UVERBS_ATTR_CREATE_QP_CAP, cap, len);
        r.cnst(UVERBS_ATTR_CREATE_QP_TYPE, IB_UVERBS_QPT_RC);
        r.out(UVERBS_ATTR_CREATE_QP_RESP_CAP, rcap, sizeof *rcap);
        r.out(UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, qpn, 4);
        r.in(UVERBS_ATTR_UHW_IN, drv, sizeof *drv);
        r.out(UVERBS_ATTR_UHW_OUT, d, sizeof *d);
        int e = r.run(f);
        if (!e) {
            std::lock_guard<std::recursive_mutex> g(sim().mu);
            uint32_t ev;
            destroy_qp(*f.c, static_cast<uint32_t>(h.data), ev);
        }
        return e;
    };
    uint8_t cap[32] = {};
    ib_uverbs_qp_cap c{16, 16, 1, 1, 0};
    memcpy(cap, &c, sizeof c);
    EXPECT_EQ(attempt(cap, sizeof c), 0);
    EXPECT_EQ(attempt(cap, 32), 0);  // longer, zero tail
    cap[30] = 1;
    EXPECT_EQ(attempt(cap, 32), -EOPNOTSUPP);  // longer, non-zero tail
    EXPECT_EQ(attempt(cap, 16), -EINVAL);  // shorter than the struct
}

TEST_F(Ioctl, IdrHandles) {
    File f(0);
    open_ctx(f);
    const uint32_t pd = make_pd(f);
    CqOut cq = make_cq(f);
    ASSERT_EQ(cq.r, 0);
    auto destroy_pd = [&](int64_t h, uint16_t len = 0, uint16_t reserved = 0) {
        Req r(ar, UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY);
        auto& a = r.obj(UVERBS_ATTR_DESTROY_PD_HANDLE, h);
        a.len = len;
        a.attr_data.reserved = reserved;
        return r.run(f);
    };
    EXPECT_EQ(destroy_pd(999), -ENOENT);  // no such handle
    EXPECT_EQ(destroy_pd(int64_t(1) << 40), -ENOENT);
    EXPECT_EQ(destroy_pd(-1), -EINVAL);  // negative id
    EXPECT_EQ(destroy_pd(cq.handle), -EINVAL);  // a CQ handle, not a PD
    EXPECT_EQ(destroy_pd(pd, 4), -EINVAL);  // IDR attributes carry no length
    EXPECT_EQ(destroy_pd(pd, 0, 1), -EINVAL);  // reserved bits
    EXPECT_EQ(destroy_pd(pd), 0);
    EXPECT_EQ(destroy_pd(pd), -ENOENT);  // already gone
}

TEST_F(Ioctl, FdAttributes) {
    File f(0);
    open_ctx(f);
    // a completion channel fd, as the write command makes one
    int ch;
    {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        ch = create_comp_channel(*f.c);
    }
    ASSERT_GE(ch, 0);
    CqOut ok = make_cq(f, 15, ch);
    EXPECT_EQ(ok.r, 0);
    EXPECT_EQ(make_cq(f, 15, f.fd).r, -EBADF);  // not a channel
    EXPECT_EQ(make_cq(f, 15, 100000).r, -EBADF);
    {  // fd numbers must fit an int
        auto* rc = ar.alloc<uint32_t>(4);
        Req r(ar, UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE);
        r.obj(UVERBS_ATTR_CREATE_CQ_HANDLE, 0);
        r.u32(UVERBS_ATTR_CREATE_CQ_CQE, 1);
        r.u64(UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 0);
        r.u32(UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 0);
        r.obj(UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, int64_t(1) << 33);
        r.out(UVERBS_ATTR_CREATE_CQ_RESP_CQE, rc, 4);
        EXPECT_EQ(r.run(f), -EINVAL);
    }
    EXPECT_EQ(destroy_cq_ioctl(f, ok.handle), 0);
    std::lock_guard<std::recursive_mutex> g(sim().mu);
    sim().channels.erase(ch);
    fd_mark(ch, FdKind::None);
    ::close(ch);
}

TEST_F(Ioctl, NeedsUcontext) {
    File f(0);
    auto* resp = ar.alloc<ib_uverbs_query_port_resp_ex>(sizeof(ib_uverbs_query_port_resp_ex));
    Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
    r.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
    r.out(UVERBS_ATTR_QUERY_PORT_RESP, resp, sizeof *resp);
    EXPECT_EQ(r.run(f), -EINVAL);
    Req a(ar, UVERBS_OBJECT_ASYNC_EVENT, UVERBS_METHOD_ASYNC_EVENT_ALLOC);
    a.add(UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, 0, 0);
    EXPECT_EQ(a.run(f), -EINVAL);
    EXPECT_EQ(make_cq(f).r, -EINVAL);
}

// ------------------------------------------------------------------ methods

TEST_F(Ioctl, GetContextAndAsyncEventFile) {
    File f(0);
    mlx5_ib_alloc_ucontext_resp resp = open_ctx(f);
    EXPECT_TRUE(f.c->have_ucontext);
    EXPECT_EQ(resp.tot_bfregs, 4u);
    EXPECT_EQ(resp.cqe_version, 1);
    EXPECT_EQ(resp.num_ports, 1);
    EXPECT_EQ(resp.response_length, sizeof resp);
    // the async file delivers the context's events
    f.c->async_event(0x55, IBV_EVENT_PORT_ACTIVE);
    ib_uverbs_async_event_desc d{};
    EXPECT_EQ(recv(f.c->async->app_fd, &d, sizeof d, MSG_DONTWAIT), ssize_t(sizeof d));
    EXPECT_EQ(d.element, 0x55u);
    // a second GET_CONTEXT on the same file is refused
    auto* out = ar.alloc<uint32_t>(4);
    mlx5_ib_alloc_ucontext_req v1{};
    Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT);
    r.in(UVERBS_ATTR_UHW_IN, &v1, sizeof v1);
    r.out(UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, out, 4);
    EXPECT_EQ(r.run(f), -EINVAL);
}

TEST_F(Ioctl, QueryContext) {
    File f(0);
    mlx5_ib_alloc_ucontext_resp first = open_ctx(f);
    auto* uctx = ar.alloc<mlx5_ib_alloc_ucontext_resp>(sizeof(mlx5_ib_alloc_ucontext_resp));
    auto* ncomp = ar.alloc<uint32_t>(4);
    Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT);
    auto& o = r.out(MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX, uctx, sizeof *uctx);
    auto& n = r.out(UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, ncomp, 4);
    EXPECT_EQ(r.run(f), 0);
    EXPECT_TRUE(r.valid(o));
    EXPECT_TRUE(r.valid(n));
    EXPECT_EQ(*ncomp, 1u);
    EXPECT_EQ(uctx->tot_bfregs, first.tot_bfregs);
    EXPECT_EQ(uctx->cqe_version, first.cqe_version);
    EXPECT_EQ(uctx->qp_tab_size, first.qp_tab_size);
}

// A library offering dynamic UARs gets UAR objects instead of static
// pages (mlx5_ib since 5.8): no static bfregs, objects by type, each page
// mapped at the offset its allocation answered; CQs must name one.
TEST_F(Ioctl, UarObjects) {
    File f(0);
    mlx5_ib_alloc_ucontext_resp first = open_ctx(f, true, MLX5_LIB_CAP_4K_UAR | MLX5_LIB_CAP_DYN_UAR);
    EXPECT_EQ(first.tot_bfregs, 0u);
    EXPECT_EQ(first.num_dyn_bfregs, 0u);
    EXPECT_TRUE(f.c->lib_uar_dyn);
    struct Out {
        int r;
        uint32_t handle;
        uint64_t offset;
        uint32_t length, page_id;
    };
    auto alloc = [&](uint64_t type) {
        auto* off = ar.alloc<uint64_t>(8);
        auto* len = ar.alloc<uint32_t>(4);
        auto* page = ar.alloc<uint32_t>(4);
        Req r(ar, MLX5_IB_OBJECT_UAR, MLX5_IB_METHOD_UAR_OBJ_ALLOC);
        auto& h = r.obj(MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE, 0);
        r.cnst(MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, type);
        r.out(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, off, 8);
        r.out(MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, len, 4);
        r.out(MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, page, 4);
        return Out{r.run(f), static_cast<uint32_t>(h.data), *off, *len, *page};
    };
    const long pg = sysconf(_SC_PAGESIZE);
    Out nc = alloc(MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC), bf = alloc(MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF);
    ASSERT_EQ(nc.r, 0);
    ASSERT_EQ(bf.r, 0);
    EXPECT_EQ(nc.length, uint32_t(pg));
    EXPECT_NE(nc.page_id, bf.page_id);
    EXPECT_NE(nc.offset, bf.offset);
    EXPECT_EQ(alloc(2).r, -EOPNOTSUPP);
    // the pages map at their offsets, one page long; nothing else does
    int err = 0;
    void* p = uverbs_mmap(*f.c, nullptr, pg, PROT_WRITE, MAP_SHARED, static_cast<off_t>(bf.offset), err);
    ASSERT_NE(p, MAP_FAILED);
    munmap(p, pg);
    EXPECT_EQ(uverbs_mmap(*f.c, nullptr, 2 * pg, PROT_WRITE, MAP_SHARED, static_cast<off_t>(bf.offset), err),
              MAP_FAILED);
    EXPECT_EQ(err, EINVAL);
    EXPECT_EQ(uverbs_mmap(*f.c, nullptr, pg, PROT_WRITE, MAP_SHARED, static_cast<off_t>(bf.offset + 16 * pg), err),
              MAP_FAILED);
    // no static page 0: a CQ names its UAR object, a known one
    EXPECT_EQ(uverbs_mmap(*f.c, nullptr, pg, PROT_WRITE, MAP_SHARED, 0, err), MAP_FAILED);
    EXPECT_EQ(make_cq(f).r, -EINVAL);
    EXPECT_EQ(make_cq(f, 15, -1, nc.page_id + 1000).r, -EINVAL);
    EXPECT_EQ(make_cq(f, 15, -1, nc.page_id).r, 0);
    // QUERY_CONTEXT answers what GET_CONTEXT granted
    auto* uctx = ar.alloc<mlx5_ib_alloc_ucontext_resp>(sizeof(mlx5_ib_alloc_ucontext_resp));
    Req q(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT);
    q.out(MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX, uctx, sizeof *uctx);
    ASSERT_EQ(q.run(f), 0);
    EXPECT_EQ(0, memcmp(uctx, &first, sizeof first));
    // destroyed, the page id is no one's
    Req d(ar, MLX5_IB_OBJECT_UAR, MLX5_IB_METHOD_UAR_OBJ_DESTROY);
    d.obj(MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE, bf.handle);
    EXPECT_EQ(d.run(f), 0);
    EXPECT_EQ(uar_by_page(*f.c, bf.page_id), nullptr);
    EXPECT_EQ(uverbs_mmap(*f.c, nullptr, pg, PROT_WRITE, MAP_SHARED, static_cast<off_t>(bf.offset), err), MAP_FAILED);
}

// QUERY_MR (ibv_import_mr): keys, length and the optional iova.
TEST_F(Ioctl, QueryMr) {
    File f(0);
    open_ctx(f);
    const uint32_t pd = make_pd(f);
    void* buf = ar.alloc(8192, 4096);
    uint32_t h, lkey, rkey;
    {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        ASSERT_EQ(reg_mr(*f.c, pd, Arena::a(buf), 8192, 0x10000, IBV_ACCESS_LOCAL_WRITE, h, lkey, rkey), 0);
    }
    auto query = [&](uint32_t handle, bool iova) {
        auto* l = ar.alloc<uint32_t>(4);
        auto* r = ar.alloc<uint32_t>(4);
        auto* len = ar.alloc<uint64_t>(8);
        auto* va = ar.alloc<uint64_t>(8);
        Req q(ar, UVERBS_OBJECT_MR, UVERBS_METHOD_QUERY_MR);
        q.obj(UVERBS_ATTR_QUERY_MR_HANDLE, handle);
        q.out(UVERBS_ATTR_QUERY_MR_RESP_LKEY, l, 4);
        q.out(UVERBS_ATTR_QUERY_MR_RESP_RKEY, r, 4);
        q.out(UVERBS_ATTR_QUERY_MR_RESP_LENGTH, len, 8);
        if (iova)
            q.out(UVERBS_ATTR_QUERY_MR_RESP_IOVA, va, 8);
        const int e = q.run(f);
        return std::tuple{e, *l, *r, *len, *va};
    };
    EXPECT_EQ(query(h, true), std::tuple(0, lkey, rkey, uint64_t(8192), uint64_t(0x10000)));
    EXPECT_EQ(std::get<0>(query(h, false)), 0);
    EXPECT_EQ(std::get<0>(query(h + 100, true)), -ENOENT);
    EXPECT_EQ(std::get<0>(query(pd, true)), -EINVAL);  // a PD is no MR (one handle space, as the kernel's)
}

// Every ASYNC_EVENT_ALLOC makes a file (an imported context has its own):
// the first gets the events of objects, every one those of the device.
TEST_F(Ioctl, SecondAsyncFile) {
    File f(0);
    open_ctx(f);
    Req a(ar, UVERBS_OBJECT_ASYNC_EVENT, UVERBS_METHOD_ASYNC_EVENT_ALLOC);
    auto& fa = a.add(UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, 0, 0);
    ASSERT_EQ(a.run(f), 0);
    const int second = static_cast<int>(fa.data_s64);
    ASSERT_EQ(f.c->more_async.size(), 1u);
    EXPECT_EQ(second, f.c->more_async[0]->app_fd);
    f.c->async_event(7, IBV_EVENT_QP_FATAL);
    f.c->async_event(1, IBV_EVENT_PORT_ERR);
    ib_uverbs_async_event_desc d{};
    EXPECT_EQ(recv(f.c->async->app_fd, &d, sizeof d, MSG_DONTWAIT), ssize_t(sizeof d));
    EXPECT_EQ(d.event_type, uint32_t(IBV_EVENT_QP_FATAL));
    EXPECT_EQ(recv(f.c->async->app_fd, &d, sizeof d, MSG_DONTWAIT), ssize_t(sizeof d));
    EXPECT_EQ(d.event_type, uint32_t(IBV_EVENT_PORT_ERR));
    EXPECT_EQ(recv(second, &d, sizeof d, MSG_DONTWAIT), ssize_t(sizeof d));
    EXPECT_EQ(d.event_type, uint32_t(IBV_EVENT_PORT_ERR));
    EXPECT_EQ(recv(second, &d, sizeof d, MSG_DONTWAIT), -1);
}

// A dup'd fd is the same file: its context lives until the last fd closes.
TEST_F(Ioctl, DupSharesTheFile) {
    auto f = std::make_unique<File>(0);
    open_ctx(*f);
    const uint32_t pd = make_pd(*f);
    const int d = ::dup(f->fd);
    ASSERT_GE(d, 0);
    uverbs_dup(f->fd, d);
    {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        ASSERT_EQ(sim().files.count(d), 1u);
        EXPECT_EQ(sim().files[d].get(), f->c);
    }
    EXPECT_EQ(fd_kind(d), FdKind::Uverbs);
    // the first fd goes: the PD is still there, known through the dup
    const int first = f->fd;
    uverbs_close(first);
    ::close(first);
    {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        ASSERT_EQ(sim().files.count(d), 1u);
        EXPECT_EQ(sim().files[d]->fd, d);
        EXPECT_NE(sim().files[d]->get<Pd>(pd, ObjType::Pd), nullptr);
    }
    f->fd = d;  // the File closes what is left
    f.reset();
    std::lock_guard<std::recursive_mutex> g(sim().mu);
    EXPECT_EQ(sim().files.count(d), 0u);
}

TEST_F(Ioctl, QueryPort) {
    File f(0);
    open_ctx(f);
    auto* resp = ar.alloc<ib_uverbs_query_port_resp_ex>(sizeof(ib_uverbs_query_port_resp_ex));
    Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
    r.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
    auto& o = r.out(UVERBS_ATTR_QUERY_PORT_RESP, resp, sizeof *resp);
    ASSERT_EQ(r.run(f), 0);
    EXPECT_TRUE(r.valid(o));
    ib_uverbs_query_port_resp w;
    fill_query_port(*f.c->dev, 1, w);
    EXPECT_EQ(0, memcmp(&resp->legacy_resp, &w, sizeof w));
    EXPECT_EQ(resp->legacy_resp.lid, 0x11);
    EXPECT_EQ(resp->legacy_resp.link_layer, IBV_LINK_LAYER_INFINIBAND);
    Req bad(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
    bad.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 2);
    bad.out(UVERBS_ATTR_QUERY_PORT_RESP, resp, sizeof *resp);
    EXPECT_EQ(bad.run(f), -EINVAL);
}

TEST_F(Ioctl, InfoHandles) {
    File f(0);
    open_ctx(f);
    const uint32_t pd1 = make_pd(f), pd2 = make_pd(f);
    ASSERT_EQ(make_cq(f).r, 0);
    auto* list = ar.alloc<uint32_t>(64);
    auto* total = ar.alloc<uint32_t>(4);
    auto query = [&](uint64_t obj, uint16_t len) {
        Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INFO_HANDLES);
        r.cnst(UVERBS_ATTR_INFO_OBJECT_ID, obj);
        r.out(UVERBS_ATTR_INFO_TOTAL_HANDLES, total, 4);
        if (len)
            r.out(UVERBS_ATTR_INFO_HANDLES_LIST, list, len);
        return r.run(f);
    };
    ASSERT_EQ(query(UVERBS_OBJECT_PD, 64), 0);
    EXPECT_EQ(*total, 2u);
    EXPECT_EQ(list[0], pd1);
    EXPECT_EQ(list[1], pd2);
    ASSERT_EQ(query(UVERBS_OBJECT_PD, 4), 0);  // room for one
    EXPECT_EQ(*total, 1u);
    ASSERT_EQ(query(UVERBS_OBJECT_CQ, 64), 0);
    EXPECT_EQ(*total, 1u);
    ASSERT_EQ(query(UVERBS_OBJECT_QP, 64), 0);
    EXPECT_EQ(*total, 0u);
    EXPECT_EQ(query(UVERBS_OBJECT_PD, 0), -EINVAL);  // no list
    EXPECT_EQ(query(UVERBS_OBJECT_PD, 6), -EINVAL);  // not whole u32s
    EXPECT_EQ(query(0x66, 64), -ENOMSG);  // no such object type
}

TEST_F(Ioctl, GidTableAndEntryOnInfiniBand) {
    File f(0);
    open_ctx(f);
    auto* es = ar.alloc<ib_uverbs_gid_entry>(4 * sizeof(ib_uverbs_gid_entry));
    auto* n = ar.alloc<uint64_t>(8);
    Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_TABLE);
    r.cnst(UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, sizeof(ib_uverbs_gid_entry));
    auto& oe = r.out(UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, es, 4 * sizeof(ib_uverbs_gid_entry));
    r.out(UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, n, 8);
    ASSERT_EQ(r.run(f), 0);
    EXPECT_TRUE(r.valid(oe));
    ASSERT_EQ(*n, 1u);
    const auto gids = port_gids(f.c->dev->cfg->ports[0]);
    EXPECT_EQ(0, memcmp(es[0].gid, gids[0].gid, 16));
    EXPECT_EQ(es[0].gid_type, uint32_t(IB_UVERBS_GID_TYPE_IB));
    EXPECT_EQ(es[0].port_num, 1u);
    EXPECT_EQ(es[0].gid_index, 0u);

    auto entry = [&](uint64_t port, uint64_t index, ib_uverbs_gid_entry* out, uint64_t flags = 0) {
        Req q(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_ENTRY);
        q.cnst(UVERBS_ATTR_QUERY_GID_ENTRY_PORT, port);
        q.cnst(UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, index);
        q.u32(UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, static_cast<uint32_t>(flags));
        q.out(UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, out, sizeof *out);
        return q.run(f);
    };
    auto* e = ar.alloc<ib_uverbs_gid_entry>(sizeof(ib_uverbs_gid_entry));
    EXPECT_EQ(entry(1, 0, e), 0);
    EXPECT_EQ(0, memcmp(e, &es[0], sizeof *e));
    EXPECT_EQ(entry(1, 1, e), -ENODATA);  // an empty slot
    EXPECT_EQ(entry(1, 128, e), -EINVAL);  // past the table (128 on IB)
    EXPECT_EQ(entry(2, 0, e), -EINVAL);  // no such port
    EXPECT_EQ(entry(1, 0, e, 1), -EINVAL);  // no flags are defined
}

TEST_F(Ioctl, GidTableOnRoce) {
    File f(1);
    open_ctx(f);
    auto* es = ar.alloc<ib_uverbs_gid_entry>(8 * sizeof(ib_uverbs_gid_entry));
    auto* n = ar.alloc<uint64_t>(8);
    auto table = [&](uint64_t esize, uint16_t len) {
        Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_TABLE);
        r.cnst(UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, esize);
        r.out(UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, es, len);
        r.out(UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, n, 8);
        return r.run(f);
    };
    ASSERT_EQ(table(sizeof(ib_uverbs_gid_entry), 8 * sizeof(ib_uverbs_gid_entry)), 0);
    ASSERT_EQ(*n, 4u);
    EXPECT_EQ(es[0].gid_type, uint32_t(IB_UVERBS_GID_TYPE_ROCE_V1));
    EXPECT_EQ(es[1].gid_type, uint32_t(IB_UVERBS_GID_TYPE_ROCE_V2));
    EXPECT_EQ(es[2].gid_type, uint32_t(IB_UVERBS_GID_TYPE_ROCE_V1));
    EXPECT_EQ(es[3].gid_type, uint32_t(IB_UVERBS_GID_TYPE_ROCE_V2));
    EXPECT_EQ(es[0].gid[0] & 0xffff, 0x80feu);  // fe80:: link-local
    const uint8_t* g4 = reinterpret_cast<const uint8_t*>(es[2].gid);
    EXPECT_EQ(g4[10], 0xff);
    EXPECT_EQ(g4[12], 10);
    EXPECT_EQ(g4[15], 3);
    for (uint32_t i = 0; i < 4; ++i)
        EXPECT_EQ(es[i].gid_index, i);
    // too small for the whole table; entry size not dividing the buffer
    EXPECT_EQ(table(sizeof(ib_uverbs_gid_entry), 3 * sizeof(ib_uverbs_gid_entry)), -EINVAL);
    EXPECT_EQ(table(sizeof(ib_uverbs_gid_entry), 100), -EINVAL);
    EXPECT_EQ(table(0, 128), -EINVAL);
    // a shorter entry (an older ABI): the first 16 bytes of each
    memset(es, 0xee, 8 * sizeof(ib_uverbs_gid_entry));
    ASSERT_EQ(table(16, 64), 0);
    EXPECT_EQ(*n, 4u);
    const auto gids = port_gids(f.c->dev->cfg->ports[0]);
    for (int i = 0; i < 4; ++i)
        EXPECT_EQ(0, memcmp(reinterpret_cast<uint8_t*>(es) + 16 * i, gids[i].gid, 16)) << i;
}

TEST_F(Ioctl, InvokeWrite) {
    File f(0);
    open_ctx(f);
    // the write decoder runs on a staging copy outside the arena
    set_app_arena(0, 0);
    auto* core_in = ar.alloc<ib_uverbs_alloc_pd>(sizeof(ib_uverbs_alloc_pd));
    auto* core_out = ar.alloc<ib_uverbs_alloc_pd_resp>(sizeof(ib_uverbs_alloc_pd_resp));
    auto* drv_out = ar.alloc<mlx5_ib_alloc_pd_resp>(sizeof(mlx5_ib_alloc_pd_resp));
    core_in->response = 0xdead0000;  // ignored: the answer goes to CORE_OUT
    Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
    r.cnst(UVERBS_ATTR_WRITE_CMD, IB_USER_VERBS_CMD_ALLOC_PD);
    r.in(UVERBS_ATTR_CORE_IN, core_in, sizeof *core_in);
    auto& co = r.out(UVERBS_ATTR_CORE_OUT, core_out, sizeof *core_out);
    auto& dout = r.out(UVERBS_ATTR_UHW_OUT, drv_out, sizeof *drv_out);
    ASSERT_EQ(r.run(f), 0);
    EXPECT_TRUE(r.valid(co));
    EXPECT_TRUE(r.valid(dout));
    Pd* pd = f.c->get<Pd>(core_out->pd_handle, ObjType::Pd);
    ASSERT_NE(pd, nullptr);
    EXPECT_EQ(drv_out->pdn, pd->pdn);
    // query port through it
    auto* qin = ar.alloc<ib_uverbs_query_port>(sizeof(ib_uverbs_query_port));
    qin->port_num = 1;
    auto* qout = ar.alloc<ib_uverbs_query_port_resp>(sizeof(ib_uverbs_query_port_resp));
    Req q(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
    q.cnst(UVERBS_ATTR_WRITE_CMD, IB_USER_VERBS_CMD_QUERY_PORT);
    q.in(UVERBS_ATTR_CORE_IN, qin, sizeof *qin);
    q.out(UVERBS_ATTR_CORE_OUT, qout, sizeof *qout);
    ASSERT_EQ(q.run(f), 0);
    EXPECT_EQ(qout->lid, 0x11);
    // response too small for the command: ENOSPC; unknown command
    Req s(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
    s.cnst(UVERBS_ATTR_WRITE_CMD, IB_USER_VERBS_CMD_QUERY_PORT);
    s.in(UVERBS_ATTR_CORE_IN, qin, sizeof *qin);
    s.out(UVERBS_ATTR_CORE_OUT, qout, 8);
    EXPECT_EQ(s.run(f), -ENOSPC);
    Req u(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
    u.cnst(UVERBS_ATTR_WRITE_CMD, IB_USER_VERBS_CMD_MODIFY_AH);
    u.in(UVERBS_ATTR_CORE_IN, qin, sizeof *qin);
    EXPECT_EQ(u.run(f), -EOPNOTSUPP);
    Req x(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
    x.cnst(UVERBS_ATTR_WRITE_CMD, 0x40000000);
    EXPECT_EQ(x.run(f), -EINVAL);
    // the PD made through it is destroyed by the ioctl method
    Req d(ar, UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY);
    d.obj(UVERBS_ATTR_DESTROY_PD_HANDLE, core_out->pd_handle);
    EXPECT_EQ(d.run(f), 0);
    set_app_arena(Arena::a(ar.p), Arena::kLen);
}

TEST_F(Ioctl, InvokeWriteExtended) {
    File f(0);
    // libibverbs probes for the method before it has a context: the
    // missing core buffers are ENOSPC, not "no such method"
    Req probe(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
    probe.cnst(UVERBS_ATTR_WRITE_CMD, IB_USER_VERBS_CMD_QUERY_DEVICE);
    EXPECT_EQ(probe.run(f), -ENOSPC);
    open_ctx(f);
    set_app_arena(0, 0);
    auto* in = ar.alloc<ib_uverbs_ex_query_device>(sizeof(ib_uverbs_ex_query_device));
    auto* out = ar.alloc<ib_uverbs_ex_query_device_resp>(sizeof(ib_uverbs_ex_query_device_resp));
    auto* drv = ar.alloc<mlx5_ib_query_device_resp>(sizeof(mlx5_ib_query_device_resp));
    Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
    r.cnst(UVERBS_ATTR_WRITE_CMD, IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_EX_CMD_QUERY_DEVICE);
    r.in(UVERBS_ATTR_CORE_IN, in, sizeof *in);
    auto& o = r.out(UVERBS_ATTR_CORE_OUT, out, sizeof *out);
    r.out(UVERBS_ATTR_UHW_OUT, drv, sizeof *drv);
    ASSERT_EQ(r.run(f), 0);
    EXPECT_TRUE(r.valid(o));
    ib_uverbs_ex_query_device_resp want;
    fill_query_device_ex(*f.c->dev, want);
    EXPECT_EQ(out->response_length, sizeof *out);
    EXPECT_EQ(out->base.vendor_part_id, want.base.vendor_part_id);
    EXPECT_EQ(out->hca_core_clock, want.hca_core_clock);
    EXPECT_EQ(out->timestamp_mask, want.timestamp_mask);
    EXPECT_EQ(drv->response_length, sizeof *drv);
    // a response shorter than the kernel's minimum
    Req s(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
    s.cnst(UVERBS_ATTR_WRITE_CMD, IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_EX_CMD_QUERY_DEVICE);
    s.in(UVERBS_ATTR_CORE_IN, in, sizeof *in);
    s.out(UVERBS_ATTR_CORE_OUT, out, sizeof(ib_uverbs_query_device_resp));
    EXPECT_EQ(s.run(f), -ENOSPC);
    set_app_arena(Arena::a(ar.p), Arena::kLen);
}

TEST_F(Ioctl, CqCreateDestroy) {
    File f(0);
    open_ctx(f);
    CqOut cq = make_cq(f, 10);
    ASSERT_EQ(cq.r, 0);
    EXPECT_EQ(cq.cqe, 15u);  // entries rounded up to a power of two, minus one
    Cq* c = f.c->get<Cq>(cq.handle, ObjType::Cq);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->cqn, cq.cqn);
    EXPECT_EQ(c->user_handle, 0x1234u);
    // a CQ with flags
    {
        auto* drv = ar.alloc<mlx5_ib_create_cq>(sizeof(mlx5_ib_create_cq));
        drv->buf_addr = Arena::a(ar.alloc(4 * 64, 4096));
        drv->db_addr = Arena::a(ar.alloc(8, 64));
        drv->cqe_size = 64;
        auto* rc = ar.alloc<uint32_t>(4);
        Req r(ar, UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE);
        auto& h = r.obj(UVERBS_ATTR_CREATE_CQ_HANDLE, 0);
        r.u32(UVERBS_ATTR_CREATE_CQ_CQE, 3);
        r.u64(UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 1);
        r.u32(UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 0);
        auto& fl = r.u32(UVERBS_ATTR_CREATE_CQ_FLAGS, 1u << 30);
        r.out(UVERBS_ATTR_CREATE_CQ_RESP_CQE, rc, 4);
        r.in(UVERBS_ATTR_UHW_IN, drv, sizeof *drv);
        EXPECT_EQ(r.run(f), -EINVAL);  // an unknown flag
        fl.data = IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION;
        EXPECT_EQ(r.run(f), 0);
        EXPECT_EQ(destroy_cq_ioctl(f, static_cast<uint32_t>(h.data)), 0);
    }
    EXPECT_EQ(destroy_cq_ioctl(f, cq.handle), 0);
    EXPECT_EQ(f.c->get<Cq>(cq.handle, ObjType::Cq), nullptr);
    EXPECT_EQ(destroy_cq_ioctl(f, cq.handle), -ENOENT);
}

TEST_F(Ioctl, DestroyReportsEventCountsLikeWrite) {
    File f(0);
    open_ctx(f);
    CqOut cq = make_cq(f);
    ASSERT_EQ(cq.r, 0);
    Cq* c = f.c->get<Cq>(cq.handle, ObjType::Cq);
    c->comp_events = 3;  // as if delivered and read
    c->async_events = 2;
    ib_uverbs_destroy_cq_resp r{};
    ASSERT_EQ(destroy_cq_ioctl(f, cq.handle, &r), 0);
    EXPECT_EQ(r.comp_events_reported, 3u);
    EXPECT_EQ(r.async_events_reported, 2u);
}

TEST_F(Ioctl, QpAndSrqLifeCycle) {
    File f(0);
    open_ctx(f);
    const uint32_t pd = make_pd(f);
    CqOut cq = make_cq(f);
    ASSERT_EQ(cq.r, 0);
    // SRQ
    auto* sdrv = ar.alloc<mlx5_ib_create_srq>(sizeof(mlx5_ib_create_srq));
    sdrv->buf_addr = Arena::a(ar.alloc(64 * 32, 4096));
    sdrv->db_addr = Arena::a(ar.alloc(8, 64));
    auto* smw = ar.alloc<uint32_t>(4);
    auto* sms = ar.alloc<uint32_t>(4);
    auto* sn = ar.alloc<uint32_t>(4);
    auto* sd = ar.alloc<mlx5_ib_create_srq_resp>(sizeof(mlx5_ib_create_srq_resp));
    Req s(ar, UVERBS_OBJECT_SRQ, UVERBS_METHOD_SRQ_CREATE);
    auto& sh = s.obj(UVERBS_ATTR_CREATE_SRQ_HANDLE, 0);
    s.obj(UVERBS_ATTR_CREATE_SRQ_PD_HANDLE, pd);
    s.cnst(UVERBS_ATTR_CREATE_SRQ_TYPE, IB_UVERBS_SRQT_BASIC);
    s.u64(UVERBS_ATTR_CREATE_SRQ_USER_HANDLE, 0x5);
    s.u32(UVERBS_ATTR_CREATE_SRQ_MAX_WR, 63);
    s.u32(UVERBS_ATTR_CREATE_SRQ_MAX_SGE, 1);
    s.u32(UVERBS_ATTR_CREATE_SRQ_LIMIT, 0);
    s.out(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR, smw, 4);
    s.out(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, sms, 4);
    auto& osn = s.out(UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM, sn, 4);
    s.in(UVERBS_ATTR_UHW_IN, sdrv, sizeof *sdrv);
    s.out(UVERBS_ATTR_UHW_OUT, sd, sizeof *sd);
    ASSERT_EQ(s.run(f), 0);
    EXPECT_TRUE(s.valid(osn));
    const uint32_t srq = static_cast<uint32_t>(sh.data);
    Srq* so = f.c->get<Srq>(srq, ObjType::Srq);
    ASSERT_NE(so, nullptr);
    EXPECT_EQ(*smw, 63u);
    EXPECT_EQ(*sn, so->srqn);
    EXPECT_EQ(sd->srqn, so->srqn);
    // RC QP on it
    auto* drv = ar.alloc<mlx5_ib_create_qp>(sizeof(mlx5_ib_create_qp));
    drv->buf_addr = Arena::a(ar.alloc(64 * 64, 4096));
    drv->db_addr = Arena::a(ar.alloc(8, 64));
    drv->sq_wqe_count = 64;
    auto* rcap = ar.alloc<ib_uverbs_qp_cap>(sizeof(ib_uverbs_qp_cap));
    auto* qpn = ar.alloc<uint32_t>(4);
    auto* d = ar.alloc<mlx5_ib_create_qp_resp>(sizeof(mlx5_ib_create_qp_resp));
    ib_uverbs_qp_cap cap{32, 0, 2, 0, 64};
    Req q(ar, UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE);
    auto& qh = q.obj(UVERBS_ATTR_CREATE_QP_HANDLE, 0);
    q.obj(UVERBS_ATTR_CREATE_QP_PD_HANDLE, pd);
    q.obj(UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, cq.handle);
    q.obj(UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, cq.handle);
    q.obj(UVERBS_ATTR_CREATE_QP_SRQ_HANDLE, srq);
    q.u64(UVERBS_ATTR_CREATE_QP_USER_HANDLE, 0x77);
    q.in(UVERBS_ATTR_CREATE_QP_CAP, &cap, sizeof cap);
    q.cnst(UVERBS_ATTR_CREATE_QP_TYPE, IB_UVERBS_QPT_RC);
    q.u32(UVERBS_ATTR_CREATE_QP_FLAGS, IB_UVERBS_QP_CREATE_SQ_SIG_ALL);
    auto& oc = q.out(UVERBS_ATTR_CREATE_QP_RESP_CAP, rcap, sizeof *rcap);
    auto& on = q.out(UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, qpn, 4);
    q.in(UVERBS_ATTR_UHW_IN, drv, sizeof *drv);
    auto& od = q.out(UVERBS_ATTR_UHW_OUT, d, sizeof *d);
    ASSERT_EQ(q.run(f), 0);
    EXPECT_TRUE(q.valid(oc) && q.valid(on) && q.valid(od));
    Qp* qp = f.c->get<Qp>(static_cast<uint32_t>(qh.data), ObjType::Qp);
    ASSERT_NE(qp, nullptr);
    EXPECT_EQ(*qpn, qp->qpn);
    EXPECT_TRUE(qp->sq_sig_all);
    EXPECT_EQ(qp->srq, so);
    EXPECT_EQ(qp->qp_type, IBV_QPT_RC);
    EXPECT_EQ(rcap->max_send_wr, 32u);
    EXPECT_EQ(rcap->max_inline_data, 64u);
    EXPECT_EQ(d->bfreg_index, 1u);
    // an unknown QP type; a missing PD
    Req bad(ar, UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE);
    bad.obj(UVERBS_ATTR_CREATE_QP_HANDLE, 0);
    bad.u64(UVERBS_ATTR_CREATE_QP_USER_HANDLE, 0);
    bad.in(UVERBS_ATTR_CREATE_QP_CAP, &cap, sizeof cap);
    auto& ty = bad.cnst(UVERBS_ATTR_CREATE_QP_TYPE, 5);
    bad.out(UVERBS_ATTR_CREATE_QP_RESP_CAP, rcap, sizeof *rcap);
    bad.out(UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, qpn, 4);
    EXPECT_EQ(bad.run(f), -EINVAL);
    ty.data = IB_UVERBS_QPT_UD;
    EXPECT_EQ(bad.run(f), -ENOENT);
    // in use: the SRQ and CQ cannot go while the QP holds them
    Req ds(ar, UVERBS_OBJECT_SRQ, UVERBS_METHOD_SRQ_DESTROY);
    auto* sresp = ar.alloc<ib_uverbs_destroy_srq_resp>(sizeof(ib_uverbs_destroy_srq_resp));
    ds.obj(UVERBS_ATTR_DESTROY_SRQ_HANDLE, srq);
    auto& dso = ds.out(UVERBS_ATTR_DESTROY_SRQ_RESP, sresp, sizeof *sresp);
    EXPECT_EQ(ds.run(f), -EBUSY);
    EXPECT_EQ(destroy_cq_ioctl(f, cq.handle), -EBUSY);
    // destroy the QP, then the rest
    auto* qresp = ar.alloc<ib_uverbs_destroy_qp_resp>(sizeof(ib_uverbs_destroy_qp_resp));
    Req dq(ar, UVERBS_OBJECT_QP, UVERBS_METHOD_QP_DESTROY);
    dq.obj(UVERBS_ATTR_DESTROY_QP_HANDLE, qh.data);
    auto& dqo = dq.out(UVERBS_ATTR_DESTROY_QP_RESP, qresp, sizeof *qresp);
    ASSERT_EQ(dq.run(f), 0);
    EXPECT_TRUE(dq.valid(dqo));
    EXPECT_EQ(qresp->events_reported, 0u);
    EXPECT_EQ(ds.run(f), 0);
    EXPECT_TRUE(ds.valid(dso));
    EXPECT_EQ(destroy_cq_ioctl(f, cq.handle), 0);
}

// XRC through the methods libibverbs 44 uses: SRQ_CREATE of type XRC (its
// domain and CQ), QP_CREATE of XRC_TGT (the domain only) and XRC_INI (PD and
// send CQ only), XRCD_DESTROY.
TEST_F(Ioctl, XrcSrqQpAndXrcdDestroy) {
    File f(0);
    open_ctx(f);
    const uint32_t pd = make_pd(f);
    CqOut cq = make_cq(f);
    ASSERT_EQ(cq.r, 0);
    uint32_t xh;
    {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        ASSERT_EQ(open_xrcd(*f.c, -1, 0, xh), 0);
    }
    auto* sdrv = ar.alloc<mlx5_ib_create_srq>(sizeof(mlx5_ib_create_srq));
    sdrv->buf_addr = Arena::a(ar.alloc(64 * 32, 4096));
    sdrv->db_addr = Arena::a(ar.alloc(8, 64));
    sdrv->uidx = 3;
    auto* smw = ar.alloc<uint32_t>(4);
    auto* sms = ar.alloc<uint32_t>(4);
    auto* sn = ar.alloc<uint32_t>(4);
    auto* sd = ar.alloc<mlx5_ib_create_srq_resp>(sizeof(mlx5_ib_create_srq_resp));
    Req s(ar, UVERBS_OBJECT_SRQ, UVERBS_METHOD_SRQ_CREATE);
    auto& sh = s.obj(UVERBS_ATTR_CREATE_SRQ_HANDLE, 0);
    s.obj(UVERBS_ATTR_CREATE_SRQ_PD_HANDLE, pd);
    s.cnst(UVERBS_ATTR_CREATE_SRQ_TYPE, IB_UVERBS_SRQT_XRC);
    s.u64(UVERBS_ATTR_CREATE_SRQ_USER_HANDLE, 0x5);
    s.u32(UVERBS_ATTR_CREATE_SRQ_MAX_WR, 15);
    s.u32(UVERBS_ATTR_CREATE_SRQ_MAX_SGE, 1);
    s.u32(UVERBS_ATTR_CREATE_SRQ_LIMIT, 0);
    s.out(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR, smw, 4);
    s.out(UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, sms, 4);
    s.out(UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM, sn, 4);
    s.in(UVERBS_ATTR_UHW_IN, sdrv, sizeof *sdrv);
    s.out(UVERBS_ATTR_UHW_OUT, sd, sizeof *sd);
    // without the domain and CQ: ENOENT, as the kernel's handler answers
    EXPECT_EQ(s.run(f), -ENOENT);
    s.obj(UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE, xh);
    s.obj(UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE, cq.handle);
    ASSERT_EQ(s.run(f), 0);
    Srq* so = f.c->get<Srq>(static_cast<uint32_t>(sh.data), ObjType::Srq);
    ASSERT_NE(so, nullptr);
    EXPECT_EQ(*sn, so->srqn);
    EXPECT_EQ(sd->srqn, so->srqn);
    EXPECT_EQ(so->uidx, 3u);
    EXPECT_NE(so->cq, nullptr);
    // the target QP: nothing but the domain (a PD with it: EINVAL)
    auto* drv = ar.alloc<mlx5_ib_create_qp>(sizeof(mlx5_ib_create_qp));
    auto* rcap = ar.alloc<ib_uverbs_qp_cap>(sizeof(ib_uverbs_qp_cap));
    auto* qpn = ar.alloc<uint32_t>(4);
    auto* d = ar.alloc<mlx5_ib_create_qp_resp>(sizeof(mlx5_ib_create_qp_resp));
    ib_uverbs_qp_cap cap{};
    Req t(ar, UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE);
    auto& th = t.obj(UVERBS_ATTR_CREATE_QP_HANDLE, 0);
    t.obj(UVERBS_ATTR_CREATE_QP_XRCD_HANDLE, xh);
    t.u64(UVERBS_ATTR_CREATE_QP_USER_HANDLE, 0x77);
    t.in(UVERBS_ATTR_CREATE_QP_CAP, &cap, sizeof cap);
    t.cnst(UVERBS_ATTR_CREATE_QP_TYPE, IB_UVERBS_QPT_XRC_TGT);
    t.out(UVERBS_ATTR_CREATE_QP_RESP_CAP, rcap, sizeof *rcap);
    t.out(UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, qpn, 4);
    t.in(UVERBS_ATTR_UHW_IN, drv, sizeof *drv);
    t.out(UVERBS_ATTR_UHW_OUT, d, sizeof *d);
    ASSERT_EQ(t.run(f), 0);
    Qp* tq = f.c->get<Qp>(static_cast<uint32_t>(th.data), ObjType::Qp);
    ASSERT_NE(tq, nullptr);
    EXPECT_EQ(tq->qp_type, IBV_QPT_XRC_RECV);
    EXPECT_EQ(*qpn, tq->qpn);
    EXPECT_EQ(tq->pd, nullptr);
    EXPECT_EQ(tq->recv_cq, nullptr);
    auto& tpd = t.obj(UVERBS_ATTR_CREATE_QP_PD_HANDLE, pd);
    EXPECT_EQ(t.run(f), -EINVAL);
    tpd.attr_id = UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE;
    tpd.data = cq.handle;
    EXPECT_EQ(t.run(f), -EINVAL);
    // the initiator: PD and send CQ; a domain with it is EINVAL
    drv->buf_addr = Arena::a(ar.alloc(64 * 64, 4096));
    drv->db_addr = Arena::a(ar.alloc(8, 64));
    drv->sq_wqe_count = 64;
    drv->uidx = 4;
    ib_uverbs_qp_cap icap{32, 8, 1, 1, 0};
    Req i(ar, UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE);
    auto& ih = i.obj(UVERBS_ATTR_CREATE_QP_HANDLE, 0);
    i.obj(UVERBS_ATTR_CREATE_QP_PD_HANDLE, pd);
    i.obj(UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, cq.handle);
    i.u64(UVERBS_ATTR_CREATE_QP_USER_HANDLE, 0x78);
    i.in(UVERBS_ATTR_CREATE_QP_CAP, &icap, sizeof icap);
    i.cnst(UVERBS_ATTR_CREATE_QP_TYPE, IB_UVERBS_QPT_XRC_INI);
    i.out(UVERBS_ATTR_CREATE_QP_RESP_CAP, rcap, sizeof *rcap);
    i.out(UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, qpn, 4);
    i.in(UVERBS_ATTR_UHW_IN, drv, sizeof *drv);
    i.out(UVERBS_ATTR_UHW_OUT, d, sizeof *d);
    ASSERT_EQ(i.run(f), 0);
    Qp* iq = f.c->get<Qp>(static_cast<uint32_t>(ih.data), ObjType::Qp);
    ASSERT_NE(iq, nullptr);
    EXPECT_EQ(iq->qp_type, IBV_QPT_XRC_SEND);
    EXPECT_EQ(iq->recv_cq, nullptr);
    EXPECT_EQ(iq->rq_wqe_cnt, 0u);
    EXPECT_EQ(rcap->max_recv_wr, 0u);  // the core zeroes the receive side
    EXPECT_EQ(rcap->max_send_wr, 32u);
    i.obj(UVERBS_ATTR_CREATE_QP_XRCD_HANDLE, xh);
    EXPECT_EQ(i.run(f), -EINVAL);
    // XRCD_DESTROY: busy while the SRQ and the target QP use it
    Req dx(ar, UVERBS_OBJECT_XRCD, UVERBS_METHOD_XRCD_DESTROY);
    dx.obj(UVERBS_ATTR_DESTROY_XRCD_HANDLE, xh);
    EXPECT_EQ(dx.run(f), -EBUSY);
    {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        uint32_t ev;
        ASSERT_EQ(destroy_qp(*f.c, static_cast<uint32_t>(th.data), ev), 0);
        EXPECT_EQ(dx.run(f), -EBUSY);
        ASSERT_EQ(destroy_srq(*f.c, static_cast<uint32_t>(sh.data), ev), 0);
        ASSERT_EQ(destroy_qp(*f.c, static_cast<uint32_t>(ih.data), ev), 0);
    }
    EXPECT_EQ(dx.run(f), 0);
    EXPECT_EQ(dx.run(f), -ENOENT);  // gone
    EXPECT_EQ(destroy_cq_ioctl(f, cq.handle), 0);
}

TEST_F(Ioctl, PdMrMwAhDestroyAndPdQuery) {
    File f(0);
    open_ctx(f);
    const uint32_t pd = make_pd(f);
    uint32_t mr, lkey, rkey, ah;
    uint8_t* mem = ar.alloc(4096, 4096);
    {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        ASSERT_EQ(reg_mr(*f.c, pd, Arena::a(mem), 4096, Arena::a(mem), IBV_ACCESS_LOCAL_WRITE, mr, lkey, rkey), 0);
        ib_uverbs_ah_attr aa{};
        aa.dlid = 3;
        aa.port_num = 1;
        ASSERT_EQ(create_ah(*f.c, pd, 0, aa, ah, nullptr), 0);
    }
    // mlx5dv's PD query
    auto* pdn = ar.alloc<uint32_t>(4);
    Req pq(ar, UVERBS_OBJECT_PD, MLX5_IB_METHOD_PD_QUERY);
    pq.obj(MLX5_IB_ATTR_QUERY_PD_HANDLE, pd);
    pq.out(MLX5_IB_ATTR_QUERY_PD_RESP_PDN, pdn, 4);
    ASSERT_EQ(pq.run(f), 0);
    EXPECT_EQ(*pdn, f.c->get<Pd>(pd, ObjType::Pd)->pdn);
    auto destroy = [&](uint16_t obj, uint16_t method, uint16_t attr, uint32_t h) {
        Req r(ar, obj, method);
        r.obj(attr, h);
        return r.run(f);
    };
    uint32_t mw, mw_key;
    {
        std::lock_guard<std::recursive_mutex> g(sim().mu);
        ASSERT_EQ(alloc_mw(*f.c, pd, IBV_MW_TYPE_2, nullptr, 0, mw, mw_key), 0);
    }
    EXPECT_EQ(destroy(UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY, UVERBS_ATTR_DESTROY_PD_HANDLE, pd), -EBUSY);
    EXPECT_EQ(destroy(UVERBS_OBJECT_MR, UVERBS_METHOD_MR_DESTROY, UVERBS_ATTR_DESTROY_MR_HANDLE, ah), -EINVAL);
    EXPECT_EQ(destroy(UVERBS_OBJECT_MW, UVERBS_METHOD_MW_DESTROY, UVERBS_ATTR_DESTROY_MW_HANDLE, mr), -EINVAL);
    EXPECT_EQ(destroy(UVERBS_OBJECT_MW, UVERBS_METHOD_MW_DESTROY, UVERBS_ATTR_DESTROY_MW_HANDLE, mw), 0);
    EXPECT_EQ(destroy(UVERBS_OBJECT_MR, UVERBS_METHOD_MR_DESTROY, UVERBS_ATTR_DESTROY_MR_HANDLE, mr), 0);
    EXPECT_EQ(destroy(UVERBS_OBJECT_AH, UVERBS_METHOD_AH_DESTROY, UVERBS_ATTR_DESTROY_AH_HANDLE, ah), 0);
    EXPECT_EQ(destroy(UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY, UVERBS_ATTR_DESTROY_PD_HANDLE, pd), 0);
    EXPECT_TRUE(f.c->objects.empty());
}

TEST_F(Ioctl, FatalDeviceAllowsOnlyDestroy) {
    File f(0);
    open_ctx(f);
    const uint32_t pd = make_pd(f);
    f.c->dev->fatal = true;
    auto* resp = ar.alloc<ib_uverbs_query_port_resp_ex>(sizeof(ib_uverbs_query_port_resp_ex));
    Req r(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
    r.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
    r.out(UVERBS_ATTR_QUERY_PORT_RESP, resp, sizeof *resp);
    EXPECT_EQ(r.run(f), -EIO);
    Req d(ar, UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY);
    d.obj(UVERBS_ATTR_DESTROY_PD_HANDLE, pd);
    EXPECT_EQ(d.run(f), 0);
    f.c->dev->fatal = false;
}

// Random requests (seeded, so reproducible), mostly to methods that exist
// with attribute ids they know: every answer is 0 or an errno, nothing
// crashes, and the file still works afterwards.
TEST_F(Ioctl, RandomRequestsAnswerWithErrnos) {
    std::mt19937_64 rng(0x5eed);
    auto pick = [&](std::initializer_list<uint64_t> v) { return *(v.begin() + rng() % v.size()); };
    static const std::pair<uint16_t, uint16_t> kMethods[] = {{0, 0}, {0, 1},    {0, 2}, {0, 3},      {0, 4}, {0, 5},
                                                             {0, 6}, {0x10, 0}, {3, 0}, {3, 1},      {4, 0}, {4, 1},
                                                             {5, 0}, {5, 1},    {1, 0}, {1, 0x1000}, {7, 1}, {6, 0}};
    File f(0);
    open_ctx(f);
    make_pd(f);
    ASSERT_EQ(make_cq(f).r, 0);
    const size_t keep = ar.used;  // requests reuse the arena above this
    std::map<int, int> seen;
    for (int it = 0; it < 20000; ++it) {
        ar.used = keep;
        uint8_t* blob = ar.alloc(4096, 4096);
        for (size_t i = 0; i < 4096; i += 8) {
            const uint64_t v = rng() % 3 ? rng() % 64 : rng();
            memcpy(blob + i, &v, 8);
        }
        auto [obj, method] = kMethods[rng() % std::size(kMethods)];
        if (rng() % 5 == 0) {
            obj = static_cast<uint16_t>(rng());
            method = static_cast<uint16_t>(rng() % 8);
        }
        Req r(ar, obj, method);
        const int n = static_cast<int>(rng() % 10);
        for (int a = 0; a < n; ++a) {
            const uint16_t id = static_cast<uint16_t>(rng() % 8 ? rng() % 15 : pick({0x1000, 0x1001, rng() & 0xffff}));
            const uint16_t len = static_cast<uint16_t>(pick({0, 0, 4, 8, 8, 16, 20, 24, 32, 40, 48, rng() & 0x1fff}));
            const uint64_t data =
                pick({0, 1, 2, rng() % 64, Arena::a(blob) + (rng() % 4096), rng(), uint64_t(-1), uint64_t(f.fd)});
            r.add(id, len, data, static_cast<uint16_t>(rng() % 8 ? 0 : rng() % 4)).attr_data.reserved =
                static_cast<uint16_t>(rng() % 16 == 0 ? rng() : 0);
        }
        if (rng() % 50 == 0)
            r.hdr->reserved1 = rng();
        int e = r.run(f);
        if (rng() % 40 == 0) {  // a length that disagrees with num_attrs
            r.hdr->length = static_cast<uint16_t>(rng());
            e = f.ioctl(RDMA_VERBS_IOCTL, r.hdr);
        }
        ASSERT_TRUE(e == 0 || (e < 0 && e > -4096)) << it << " " << e;
        ++seen[e];
    }
    for (const auto& [k, v] : seen)
        printf("errno %d: %d\n", -k, v);
    EXPECT_GT(seen[0], 0);
    EXPECT_GT(seen[-EPROTONOSUPPORT], 0);
    EXPECT_GT(seen[-EINVAL], 0);
    // still answers properly
    auto* resp = ar.alloc<ib_uverbs_query_port_resp_ex>(sizeof(ib_uverbs_query_port_resp_ex));
    Req q(ar, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
    q.cnst(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1);
    q.out(UVERBS_ATTR_QUERY_PORT_RESP, resp, sizeof *resp);
    EXPECT_EQ(q.run(f), 0);
}

}  // namespace
