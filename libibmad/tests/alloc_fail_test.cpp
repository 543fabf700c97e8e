// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// unit.libibmad_alloc_fail: libibmad's entry points stay outside the C-entry
// barrier because none can throw (rpc_internal.h; symbols.libibmad_nothrow
// checks the imports). Here the same is shown by running them:
//  - the field accessors, every dump and the RPC calls that need no device
//    run with every allocation failing, and allocate nothing;
//  - mad_rpc_open_port / mad_rpc_open_port2 allocate only inside libibumad:
//    on a fake /sys/class (root) each of those allocations fails in turn,
//    and the call must return NULL with errno ENOMEM (libibumad's barrier
//    turns the failure into -ENOMEM, which libibmad passes on), leak
//    nothing, and the run without a failure must end as a plain call does.
// fabric.mgmt_alloc_fail does the same on a simulated fabric, where the
// ports open and the MADs are answered.
#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include <gtest/gtest.h>

#include "libibumad/tests/alloc_fail_support.h"
#include "util/testing/alloc_fail.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using mgmt_test::heap_in_use;
using rdma::allocfail::sweep;

const auto* const g_env = ::testing::AddGlobalTestEnvironment(new mgmt_test::FakeSysfsEnv);

// Runs `fn` with every allocation failing: it must make none.
template <class Fn>
void without_allocation(Fn fn) {
    size_t before = rdma::allocfail::allocations();
    rdma::allocfail::fail_after(0);
    fn();
    bool injected = rdma::allocfail::disarm();
    EXPECT_FALSE(injected) << "an allocation was made (and failed)";
    EXPECT_EQ(rdma::allocfail::allocations(), before);
}

// A 64-bit FNV-1a over what the functions wrote: the run with every
// allocation failing must write what a plain run writes.
struct Digest {
    uint64_t h = 1469598103934665603ull;
    void add(const void* p, size_t n) {
        for (size_t i = 0; i < n; i++)
            h = (h ^ static_cast<const uint8_t*>(p)[i]) * 1099511628211ull;
    }
    void add(uint64_t v) { add(&v, sizeof(v)); }
    void add_str(const char* s) {
        if (s)
            add(s, std::strlen(s));
    }
};

using dump_fn = void(char*, int, void*, int);

// clang-format off
#define DUMPS(X) X(int) X(uint) X(hex) X(rhex) X(bitfield) X(array) X(string) X(nodedesc) X(linkwidth)          \
    X(linkwidthsup) X(linkwidthen) X(linkspeed) X(linkspeedsup) X(linkspeeden) X(linkspeedext)                 \
    X(linkspeedextsup) X(linkspeedexten) X(linkspeedext2) X(linkspeedextsup2) X(linkspeedexten2) X(portstate)  \
    X(linkdowndefstate) X(physportstate) X(mtu) X(vlcap) X(opervls) X(node_type) X(portcapmask)                \
    X(portcapmask2) X(sltovl) X(vlarbitration) X(nodeinfo) X(portinfo) X(portstates) X(switchinfo)             \
    X(perfcounters) X(perfcounters_ext) X(perfcounters_xmt_sl) X(perfcounters_rcv_sl)                          \
    X(perfcounters_xmt_disc) X(perfcounters_rcv_err) X(portsamples_control) X(portsamples_result)              \
    X(port_ext_speeds_counters) X(port_ext_speeds_counters_rsfec_active)                                       \
    X(perfcounters_port_op_rcv_counters) X(perfcounters_port_flow_ctl_counters)                                \
    X(perfcounters_port_vl_op_packet) X(perfcounters_port_vl_op_data)                                          \
    X(perfcounters_port_vl_xmit_flow_ctl_update_errors) X(perfcounters_port_vl_xmit_wait_counters)             \
    X(perfcounters_sw_port_vl_congestion) X(perfcounters_rcv_con_ctrl) X(perfcounters_sl_rcv_fecn)             \
    X(perfcounters_sl_rcv_becn) X(perfcounters_xmit_con_ctrl) X(perfcounters_vl_xmit_time_cong)                \
    X(mlnx_ext_port_info) X(cc_congestioninfo) X(cc_congestionkeyinfo) X(cc_congestionlog)                     \
    X(cc_congestionlogswitch) X(cc_congestionlogentryswitch) X(cc_congestionlogca) X(cc_congestionlogentryca)  \
    X(cc_switchcongestionsetting) X(cc_switchportcongestionsettingelement) X(cc_cacongestionsetting)           \
    X(cc_cacongestionentry) X(cc_congestioncontroltable) X(cc_congestioncontroltableentry) X(cc_timestamp)     \
    X(classportinfo) X(portinfo_ext)
// clang-format on
#define ENTRY(n) mad_dump_##n,
dump_fn* const kDumps[] = {DUMPS(ENTRY)};
#undef ENTRY

// Every field accessor on every field, every dump.
uint64_t data_half() {
    Digest d;
    static uint8_t mad[2048];
    static char text[4096];
    uint8_t val[1024];
    for (size_t i = 0; i < sizeof(mad); i++)
        mad[i] = static_cast<uint8_t>(i * 7 + 3);
    for (int f = 0; f <= IB_FIELD_LAST_; f++) {
        auto field = static_cast<enum MAD_FIELDS>(f);
        d.add_str(mad_field_name(field));
        d.add(mad_get_field(mad, 4, field));
        d.add(mad_get_field64(mad, 0, field));
        mad_set_field(mad, 8, field, 0x12345678u * f);
        mad_set_field64(mad, 0, field, 0x0123456789abcdefull + f);
        std::memset(val, 0, sizeof(val));
        mad_get_array(mad, 0, field, val);
        mad_set_array(mad, 16, field, val);
        mad_decode_field(mad, field, val);
        d.add(val, 64);
        mad_encode_field(mad, field, val);
        d.add_str(mad_dump_field(field, text, sizeof(text), val));
        d.add_str(mad_dump_val(field, text, sizeof(text), val));
    }
    for (dump_fn* fn : kDumps) {
        std::memset(text, 0, sizeof(text));
        fn(text, sizeof(text), mad, 4);
        d.add_str(text);
        fn(text, 40, mad, 4);  // cut short
        d.add_str(text);
    }
    mad_dump_fields(text, sizeof(text), mad, sizeof(mad), IB_PORT_FIRST_F, IB_PORT_LAST_F);
    d.add_str(text);
    d.add(d.h);
    d.add(mad, sizeof(mad));
    return d.h;
}

TEST(AllocFail, DataHalfAllocatesNothing) {
    const uint64_t expect = data_half();
    uint64_t got = 0;
    without_allocation([&] { got = data_half(); });
    EXPECT_EQ(got, expect);
}

// The RPC half's calls that need no device: building and encoding MADs,
// address texts, settings, and the argument checks of the calls that do.
uint64_t rpc_half_without_device() {
    Digest d;
    alignas(8) static uint8_t umad[1024];
    uint8_t data[IB_SMP_DATA_SIZE] = {1, 2, 3};
    ib_portid_t dport = {};
    char route[] = "0,1,2,3";
    d.add(str2drpath(&dport.drpath, route, 0, 0));
    d.add(portid2portnum(&dport));
    char text[256];
    d.add_str(drpath2str(&dport.drpath, text, sizeof(text)));
    d.add_str(portid2str(&dport));
    ib_rpc_t rpc = {};
    rpc.mgtclass = IB_SMI_DIRECT_CLASS;
    rpc.method = IB_MAD_METHOD_GET;
    rpc.attr.id = IB_ATTR_NODE_INFO;
    rpc.datasz = IB_SMP_DATA_SIZE;
    rpc.dataoffs = IB_SMP_DATA_OFFS;
    rpc.trid = 0x1234;
    std::memset(umad, 0, sizeof(umad));
    d.add(static_cast<uint64_t>(mad_build_pkt(umad, &rpc, &dport, nullptr, data)));
    d.add(umad, sizeof(umad));
    std::memset(umad, 0, sizeof(umad));
    d.add(mad_encode(umad, &rpc, &dport.drpath, data) != nullptr);
    d.add(umad, IB_MAD_SIZE);
    d.add(mad_trid() != 0);
    d.add(static_cast<uint64_t>(mad_get_timeout(nullptr, 0) + mad_get_retries(nullptr)));
    d.add(static_cast<uint64_t>(madrpc_set_retries(mad_get_retries(nullptr))));  // unchanged
    ib_portid_t lid = {};
    char addr[] = "7";
    d.add(static_cast<uint64_t>(ib_resolve_portid_str_via(&lid, addr, IB_DEST_LID, nullptr, nullptr)));
    d.add(static_cast<uint64_t>(lid.lid));
    // no port: EINVAL or NULL before any I/O
    d.add(mad_rpc(nullptr, &rpc, &dport, data, data) == nullptr);
    d.add(mad_rpc_rmpp(nullptr, &rpc, &dport, nullptr, data) == nullptr);
    d.add(smp_query_via(data, &dport, IB_ATTR_NODE_INFO, 0, 0, nullptr) == nullptr);
    d.add(smp_set_via(data, &dport, IB_ATTR_NODE_INFO, 0, 0, nullptr) == nullptr);
    d.add(static_cast<uint64_t>(mad_send_via(&rpc, &dport, nullptr, data, nullptr)));
    d.add(static_cast<uint64_t>(mad_respond_via(umad, nullptr, 0, nullptr)));
    d.add(mad_receive_via(nullptr, 0, nullptr) == nullptr);
    d.add(static_cast<uint64_t>(mad_register_client_via(IB_SMI_CLASS, 0, nullptr)));
    d.add(static_cast<uint64_t>(mad_register_server_via(IB_SMI_CLASS, 0, nullptr, 0, nullptr)));
    void* buf = mad_alloc();  // umad_alloc: calloc, not operator new
    d.add(buf != nullptr);
    mad_free(buf);
    mad_rpc_close_port(nullptr);
    mad_rpc_close_port2(nullptr);
    return d.h;
}

TEST(AllocFail, RpcWithoutDeviceAllocatesNothing) {
    const uint64_t expect = rpc_half_without_device();
    uint64_t got = 0;
    without_allocation([&] { got = rpc_half_without_device(); });
    EXPECT_EQ(got, expect);
}

// mad_rpc_open_port{,2} on the fake /sys/class: all of libibumad's work but
// the open(2) of the (hidden) device, each allocation failing in turn.
template <class Open, class Close>
void sweep_open(Open open, Close close) {
    errno = 0;
    auto* plain = open();
    const int plain_errno = errno;
    close(plain);
    size_t failed = 0;
    size_t runs = sweep([&](const std::function<bool()>& injected) {
        size_t heap = heap_in_use();
        errno = 0;
        auto* port = open();
        int err = errno;
        if (injected()) {
            ++failed;
            EXPECT_EQ(port, nullptr);
            EXPECT_EQ(err, ENOMEM);
        } else {
            EXPECT_EQ(port == nullptr, plain == nullptr);
            EXPECT_EQ(err, plain_errno);
        }
        close(port);
        EXPECT_EQ(heap_in_use(), heap) << "leak";
    });
    EXPECT_GT(runs, 0u) << "the sweep did not end";
    EXPECT_GT(failed, 0u) << "nothing allocated";
}

TEST(AllocFail, OpenPortFailsWithENOMEM) {
    MGMT_TEST_NEED_SYSFS();
    int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS};
    // libibumad reads the ABI version once per process: before the sweeps,
    // so every run makes the same allocations
    mad_rpc_close_port(mad_rpc_open_port(nullptr, 0, classes, 3));
    for (auto [name, num] : {std::pair<const char*, int>{"mlx5_0", 1}, {nullptr, 0}, {"mlx5_0", 0}}) {
        SCOPED_TRACE(std::string(name ? name : "(default)") + " port " + std::to_string(num));
        char dev[UMAD_CA_NAME_LEN] = {};
        if (name)
            std::snprintf(dev, sizeof(dev), "%s", name);
        sweep_open([&] { return mad_rpc_open_port(name ? dev : nullptr, num, classes, 3); }, mad_rpc_close_port);
        sweep_open([&] { return mad_rpc_open_port2(name ? dev : nullptr, num, classes, 3, 0); }, mad_rpc_close_port2);
    }
    char gsi[] = "mlx5_1";
    sweep_open([&] { return mad_rpc_open_port2(gsi, 1, classes, 3, 0); }, mad_rpc_close_port2);
}

}  // namespace
