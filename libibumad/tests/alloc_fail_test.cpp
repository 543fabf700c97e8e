// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// unit.libibumad_alloc_fail: allocation failure inside the exported
// functions (util/testing/alloc_fail.h). The entry points that read the CA
// and port view allocate: every allocation of a call fails in turn, and
// each such run must return the man page's error (-ENOMEM, NULL or -1 with
// errno ENOMEM) and leave nothing to release, while the run without a
// failure must return what a plain call returns. The MAD, agent, header and
// string functions must not allocate at all: they run with every
// allocation failing.
//
// The library reads the fixed paths /sys/class/infiniband{,_mad}, so the
// test mounts a fake /sys/class (CAs, a switch, an Ethernet port, an SMI/GSI
// pair, umad devices: alloc_fail_support.h) in a private mount namespace, as
// compat.libibumad_sysfs does; without root those tests are skipped.
// /dev/infiniband, if there is one, is hidden, so umad_open_port() ends in
// -EIO after all its sysfs work.
#include <infiniband/umad.h>
#include <infiniband/umad_str.h>

#include <gtest/gtest.h>

#include "alloc_fail_support.h"
#include "util/testing/alloc_fail.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <endian.h>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using rdma::allocfail::sweep;

using mgmt_test::heap_in_use;

const auto* const g_env = ::testing::AddGlobalTestEnvironment(new mgmt_test::FakeSysfsEnv);

// ---- helpers ---------------------------------------------------------------

std::string describe(const umad_port_t& p) {
    char line[256];
    std::snprintf(line, sizeof(line), "%s:%d lid %u state %u/%u cap 0x%x guid 0x%016llx %s pkeys", p.ca_name, p.portnum,
                  p.base_lid, p.state, p.phys_state, be32toh(p.capmask),
                  static_cast<unsigned long long>(be64toh(p.port_guid)), p.link_layer);
    std::string s = line;
    for (unsigned i = 0; i < p.pkeys_size; i++)
        s += " " + std::to_string(p.pkeys[i]);
    return s;
}

std::string describe(const umad_ca_t& c) {
    std::string s = std::string(c.ca_name) + " type " + std::to_string(c.node_type) + " ports " +
        std::to_string(c.numports) + " fw " + c.fw_ver + " guid " + std::to_string(be64toh(c.node_guid));
    for (int i = 0; i <= c.numports; i++)
        if (c.ports[i])
            s += "\n  " + describe(*c.ports[i]);
    return s;
}

// Runs `call` (the entry point alone: any allocation of the test's own would
// be the one to fail) once per allocation it makes, with that allocation
// failing, until a run completes without a failure. `check(result, errno,
// injected)` judges each run, disarmed, and frees what a successful run
// made: heap use must be the same before and after every run.
template <class Call, class Check>
size_t sweep_call(Call call, Check check) {
    size_t failed = 0;
    size_t runs = sweep([&](const std::function<bool()>& injected) {
        size_t heap = heap_in_use();
        errno = 0;
        auto result = call();
        int err = errno;
        bool hit = injected();
        failed += hit;
        check(result, err, hit);
        EXPECT_EQ(heap_in_use(), heap) << "leak";
    });
    EXPECT_GT(runs, 0u) << "the sweep did not end";
    EXPECT_GT(failed, 0u) << "no allocation to fail";
    return failed;
}

// The usual check of an entry point returning 0 or more, or -errno: a
// failed run gives -ENOMEM with errno ENOMEM, the others `expect`.
auto neg_errno_or(int expect) {
    return [expect](int rc, int err, bool injected) {
        if (injected) {
            EXPECT_EQ(rc, -ENOMEM);
            EXPECT_EQ(err, ENOMEM);
        } else {
            EXPECT_EQ(rc, expect);
        }
    };
}

TEST(AllocFail, GetCasNames) {
    MGMT_TEST_NEED_SYSFS();
    char expect[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN] = {};
    ASSERT_EQ(umad_get_cas_names(expect, UMAD_MAX_DEVICES), 4);  // rxe0 is a CA too
    EXPECT_STREQ(expect[0], "mlx5_0");
    char names[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN];
    sweep_call([&] { return umad_get_cas_names(names, UMAD_MAX_DEVICES); },
               [&](int rc, int err, bool injected) {
                   neg_errno_or(4)(rc, err, injected);
                   if (!injected) {
                       EXPECT_EQ(std::memcmp(names, expect, 4 * UMAD_CA_NAME_LEN), 0);
                   }
               });
}

TEST(AllocFail, GetCaAndPort) {
    MGMT_TEST_NEED_SYSFS();
    for (const char* name : {"mlx5_0", "sw0", static_cast<const char*>(nullptr)}) {
        SCOPED_TRACE(name ? name : "(default CA)");
        umad_ca_t ca;
        ASSERT_EQ(umad_get_ca(name, &ca), 0);
        const std::string expect = describe(ca);
        umad_release_ca(&ca);
        sweep_call([&] { return umad_get_ca(name, &ca); },
                   [&](int rc, int err, bool injected) {
                       // failed: "ca needs no release" (the leak check
                       // proves it)
                       neg_errno_or(0)(rc, err, injected);
                       if (!injected) {
                           EXPECT_EQ(describe(ca), expect);
                           umad_release_ca(&ca);
                       }
                   });
    }
    for (auto [name, num] : {std::pair<const char*, int>{"mlx5_0", 2}, {nullptr, 0}, {"sw0", 0}}) {
        SCOPED_TRACE(std::string(name ? name : "(default)") + " port " + std::to_string(num));
        umad_port_t port;
        ASSERT_EQ(umad_get_port(name, num, &port), 0);
        const std::string expect = describe(port);
        umad_release_port(&port);
        sweep_call([&] { return umad_get_port(name, num, &port); },
                   [&](int rc, int err, bool injected) {
                       neg_errno_or(0)(rc, err, injected);
                       if (!injected) {
                           EXPECT_EQ(describe(port), expect);
                           umad_release_port(&port);
                       }
                   });
    }
}

TEST(AllocFail, PortGuidsAndIssmPath) {
    MGMT_TEST_NEED_SYSFS();
    __be64 guids[8];
    sweep_call([&] { return umad_get_ca_portguids("mlx5_0", guids, 8); },
               [&](int rc, int err, bool injected) {
                   neg_errno_or(3)(rc, err, injected);  // ports 0 (none), 1, 2
                   if (!injected) {
                       EXPECT_EQ(be64toh(guids[2]), 0x0002c90300001002ull);
                   }
               });
    sweep_call([&] { return umad_get_ca_portguids(nullptr, nullptr, 0); }, neg_errno_or(0));
    char path[64];
    sweep_call([&] { return umad_get_issm_path("mlx5_0", 2, path, sizeof(path)); },
               [&](int rc, int err, bool injected) {
                   neg_errno_or(0)(rc, err, injected);
                   if (!injected) {
                       EXPECT_STREQ(path, "/dev/infiniband/issm1");
                   }
               });
    sweep_call([&] { return umad_get_issm_path(nullptr, 0, path, sizeof(path)); }, neg_errno_or(0));
}

TEST(AllocFail, OpenPort) {
    MGMT_TEST_NEED_SYSFS();
    // The ABI version is read once per process: read it before the sweep,
    // so that every run makes the same allocations.
    ASSERT_EQ(umad_open_port("mlx5_0", 1), -EIO);
    // Everything but the open(2) of the (hidden) device succeeds.
    sweep_call([] { return umad_open_port("mlx5_0", 1); }, neg_errno_or(-EIO));
    sweep_call([] { return umad_open_port(nullptr, 0); }, neg_errno_or(-EIO));
    sweep_call([] { return umad_open_smi_port("mlx5_0", 0); }, neg_errno_or(-EIO));
    // the GSI-only device carries no SMI
    sweep_call([] { return umad_open_smi_port("mlx5_1", 1); }, neg_errno_or(-ENODEV));
}

std::string names_of(const umad_device_node* n) {
    std::string s;
    for (; n; n = n->next)
        s += std::string(n->ca_name) + " ";
    return s;
}

TEST(AllocFail, DeviceList) {
    MGMT_TEST_NEED_SYSFS();
    umad_device_node* plain = umad_get_ca_device_list();
    ASSERT_NE(plain, nullptr);
    const std::string expect = names_of(plain);
    umad_free_ca_device_list(plain);
    sweep_call([] { return umad_get_ca_device_list(); },
               [&](umad_device_node* l, int err, bool injected) {
                   if (injected) {
                       EXPECT_EQ(l, nullptr);
                       EXPECT_EQ(err, ENOMEM);
                   } else {
                       EXPECT_EQ(names_of(l), expect);
                   }
                   umad_free_ca_device_list(l);
               });

    // Sorting: an index of the nodes (its failure leaves the list as it
    // was) and stable_sort's buffer (when that is refused it sorts in
    // place, so the run still succeeds).
    umad_device_node* list = umad_get_ca_device_list();
    ASSERT_NE(list, nullptr);
    const std::string unsorted = names_of(list);
    size_t refused = 0;
    sweep_call(
        [&] {
            umad_device_node* head = list;
            int rc = umad_sort_ca_device_list(&head, 0);
            return std::make_pair(rc, head);
        },
        [&](std::pair<int, umad_device_node*> r, int err, bool injected) {
            if (r.first == -ENOMEM) {
                EXPECT_TRUE(injected);
                EXPECT_EQ(err, ENOMEM);
                EXPECT_EQ(r.second, list);
                EXPECT_EQ(names_of(list), unsorted);
                ++refused;
                return;
            }
            EXPECT_EQ(r.first, 0);
            EXPECT_EQ(names_of(r.second), "mlx5_0 mlx5_1 rxe0 sw0 ");
            // unsort again for the next run
            umad_free_ca_device_list(r.second);
            list = umad_get_ca_device_list();
        });
    EXPECT_GT(refused, 0u);
    umad_free_ca_device_list(list);
}

TEST(AllocFail, SmiGsiPairs) {
    MGMT_TEST_NEED_SYSFS();
    umad_ca_pair pairs[8];
    int n = umad_get_smi_gsi_pairs(pairs, 8);
    ASSERT_EQ(n, 2);  // mlx5_0 with mlx5_1, sw0 alone (rxe0 has no IB port)
    EXPECT_STREQ(pairs[0].smi_name, "mlx5_0");
    EXPECT_STREQ(pairs[0].gsi_name, "mlx5_1");
    sweep_call([&] { return umad_get_smi_gsi_pairs(pairs, 8); },
               [](int rc, int err, bool injected) {
                   if (injected) {
                       EXPECT_EQ(rc, -1);  // the man page's "-1 for lack of memory"
                       EXPECT_EQ(err, ENOMEM);
                   } else {
                       EXPECT_EQ(rc, 2);
                   }
               });
    umad_ca_pair pair;
    sweep_call([&] { return umad_get_smi_gsi_pair_by_ca_name("mlx5_1", 1, &pair, 1); },
               [&](int rc, int err, bool injected) {
                   neg_errno_or(0)(rc, err, injected);
                   if (!injected) {
                       EXPECT_STREQ(pair.smi_name, "mlx5_0");
                       EXPECT_EQ(pair.gsi_preferred_port, 1u);
                   }
               });
    sweep_call([&] { return umad_get_smi_gsi_pair_by_ca_name("rxe0", 0, &pair, 0); }, neg_errno_or(-ENODEV));
}

// What the entry points outside the barrier do, with every allocation
// failing: none may allocate (an allocation would throw out of the test).
int no_allocation_calls() {
    int sum = umad_init() + umad_done();
    alignas(8) uint8_t buf[sizeof(ib_user_mad) + 256] = {};
    ib_mad_addr_t addr = {};
    sum += umad_set_addr(buf, 1, 2, 3, 4) + umad_set_addr_net(buf, htobe16(1), htobe32(2), 3, htobe32(4));
    sum += umad_set_grh(buf, &addr) + umad_set_grh(buf, nullptr) + umad_set_pkey(buf, 1) + umad_get_pkey(buf);
    sum += umad_status(buf) + static_cast<int>(umad_size());
    sum += umad_get_mad(buf) != nullptr;
    sum += umad_get_mad_addr(buf) != nullptr;
    sum += umad_debug(-1);
    for (int v = 0; v < 256; v++) {
        sum += std::strlen(umad_class_str(static_cast<uint8_t>(v)));
        sum += std::strlen(umad_method_str(static_cast<uint8_t>(v), static_cast<uint8_t>(v)));
        sum += std::strlen(umad_attribute_str(static_cast<uint8_t>(v), htobe16(static_cast<uint16_t>(v))));
        sum += std::strlen(umad_common_mad_status_str(htobe16(static_cast<uint16_t>(v << 2))));
        sum += std::strlen(umad_sa_mad_status_str(htobe16(static_cast<uint16_t>(v << 8))));
    }
    // MAD I/O and agents on a descriptor that is no umad device
    int fds[2];
    if (pipe2(fds, O_NONBLOCK) != 0)
        return -1;
    int len = 256;
    sum += umad_get_fd(fds[0]) == fds[0];
    sum += umad_poll(fds[0], 0);
    sum += umad_recv(fds[0], buf, &len, 0);
    sum += umad_send(fds[0], 0, buf, 256, 10, 0);
    long mask[16 / sizeof(long)] = {};
    uint8_t oui[3] = {0, 1, 2};
    umad_reg_attr attr = {};
    attr.mgmt_class = 0x81;
    uint32_t agent;
    sum += umad_register(fds[0], 0x81, 1, 0, mask) + umad_register_oui(fds[0], 0x30, 0, oui, mask);
    sum += umad_register2(fds[0], &attr, &agent) + umad_unregister(fds[0], 0);
    sum += umad_close_port(fds[0]) + umad_close_port(fds[1]);
    return sum;
}

TEST(AllocFail, OutsideTheBarrierNothingAllocates) {
    const int expect = no_allocation_calls();
    size_t before = rdma::allocfail::allocations();
    rdma::allocfail::fail_after(0);
    int got = no_allocation_calls();
    bool injected = rdma::allocfail::disarm();
    EXPECT_FALSE(injected);
    EXPECT_EQ(rdma::allocfail::allocations(), before);
    EXPECT_EQ(got, expect);
}

TEST(AllocFail, ReleaseAllocatesNothing) {
    MGMT_TEST_NEED_SYSFS();
    umad_ca_t ca;
    umad_port_t port;
    ASSERT_EQ(umad_get_ca("mlx5_0", &ca), 0);
    ASSERT_EQ(umad_get_port("mlx5_0", 1, &port), 0);
    umad_device_node* list = umad_get_ca_device_list();
    ASSERT_NE(list, nullptr);
    size_t before = rdma::allocfail::allocations();
    rdma::allocfail::fail_after(0);
    umad_release_ca(&ca);
    umad_release_port(&port);
    umad_free_ca_device_list(list);
    EXPECT_FALSE(rdma::allocfail::disarm());
    EXPECT_EQ(rdma::allocfail::allocations(), before);
}

}  // namespace
