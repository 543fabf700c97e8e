// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// unit.libibnetdisc_alloc_fail: allocation failure inside the exported
// functions (util/testing/alloc_fail.h). Every allocation of a call fails in
// turn; the call must then give its documented error (ibnd_load_fabric NULL,
// ibnd_cache_fabric -1, errno ENOMEM), free all it had made and touch no
// file, and the run without a failure must give what a plain call gives.
// The lookups, iterators and chassis/speed helpers must not allocate at
// all: they run with every allocation failing.
//
// The caches are the corpus's real-* (written by Debian's library on the
// example fabrics) and ok-* ones; bad-* must stay refused whatever fails.
#include <infiniband/ibnetdisc.h>

#include "libibumad/tests/alloc_fail_support.h"
#include "util/testing/alloc_fail.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

namespace fs = std::filesystem;
using rdma::allocfail::sweep;

using mgmt_test::heap_in_use;

// Makes `p` hold `text` with libc calls only (the attempt runs armed: an
// allocation of the test's own would be the one to fail).
void put_file(const fs::path& p, const char* text) {
    int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, text, std::strlen(text)), static_cast<ssize_t>(std::strlen(text)));
    close(fd);
}

std::vector<uint8_t> file_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<fs::path> corpus(const std::string& prefix) {
    std::vector<fs::path> out;
    for (auto& e : fs::directory_iterator(IBND_CORPUS_DIR))
        if (e.path().filename().string().rfind(prefix, 0) == 0)
            out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

class AllocFail : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/ibnd_alloc_fail.XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { fs::remove_all(dir_); }

    // What ibnd_cache_fabric writes for f.
    std::vector<uint8_t> cached(ibnd_fabric_t* f) {
        fs::path out = dir_ / "written.cache";
        fs::remove(out);
        EXPECT_EQ(ibnd_cache_fabric(f, out.c_str(), 0), 0);
        return file_bytes(out);
    }

    fs::path dir_;
};

TEST_F(AllocFail, LoadFabric) {
    auto files = corpus("real-");
    auto ok = corpus("ok-");
    files.insert(files.end(), ok.begin(), ok.end());
    ASSERT_GE(files.size(), 8u);
    for (const fs::path& file : files) {
        SCOPED_TRACE(file.filename().string());
        ibnd_fabric_t* plain = ibnd_load_fabric(file.c_str(), 0);
        ASSERT_NE(plain, nullptr);
        std::vector<uint8_t> expect = cached(plain);
        ibnd_destroy_fabric(plain);
        ASSERT_FALSE(expect.empty());

        size_t failed = 0;
        size_t runs = sweep([&](const std::function<bool()>& injected) {
            size_t heap = heap_in_use();
            errno = 0;
            ibnd_fabric_t* f = ibnd_load_fabric(file.c_str(), 0);
            int err = errno;
            if (injected()) {
                ++failed;
                EXPECT_EQ(f, nullptr);
                EXPECT_EQ(err, ENOMEM);
            } else {
                ASSERT_NE(f, nullptr);
                EXPECT_EQ(cached(f), expect);
            }
            ibnd_destroy_fabric(f);
            EXPECT_EQ(heap_in_use(), heap) << "leak";
        });
        ASSERT_GT(runs, 0u) << "the sweep did not end";
        // reading the file, parsing, indexing, linking: many allocations
        EXPECT_GT(failed, 10u);
        EXPECT_EQ(failed + 1, runs);
    }
}

TEST_F(AllocFail, BadCachesStayRefused) {
    auto files = corpus("bad-");
    ASSERT_GE(files.size(), 10u);
    for (const fs::path& file : files) {
        SCOPED_TRACE(file.filename().string());
        size_t runs = sweep([&](const std::function<bool()>& injected) {
            size_t heap = heap_in_use();
            errno = 0;
            ibnd_fabric_t* f = ibnd_load_fabric(file.c_str(), 0);
            int err = errno;
            bool hit = injected();
            EXPECT_EQ(f, nullptr);
            if (hit) {
                EXPECT_EQ(err, ENOMEM);
            }
            ibnd_destroy_fabric(f);
            EXPECT_EQ(heap_in_use(), heap) << "leak";
        });
        EXPECT_GT(runs, 0u);
    }
}

TEST_F(AllocFail, CacheFabric) {
    fs::path src = fs::path(IBND_CORPUS_DIR) / "real-ft-small.cache";
    ibnd_fabric_t* f = ibnd_load_fabric(src.c_str(), 0);
    ASSERT_NE(f, nullptr);
    const std::vector<uint8_t> expect = cached(f);
    const char* old_text = "an older file";
    fs::path target = dir_ / "target.cache";
    fs::path fresh = dir_ / "fresh.cache";

    // Overwriting: a failure leaves the old file as it was.
    size_t failed = 0;
    size_t runs = sweep([&](const std::function<bool()>& injected) {
        put_file(target, old_text);
        size_t heap = heap_in_use();
        errno = 0;
        int rc = ibnd_cache_fabric(f, target.c_str(), 0);
        int err = errno;
        if (injected()) {
            ++failed;
            EXPECT_EQ(rc, -1);
            EXPECT_EQ(err, ENOMEM);
            std::vector<uint8_t> now = file_bytes(target);
            EXPECT_EQ(std::string(now.begin(), now.end()), std::string(old_text));
        } else {
            EXPECT_EQ(rc, 0);
            EXPECT_EQ(file_bytes(target), expect);
        }
        EXPECT_EQ(heap_in_use(), heap) << "leak";
    });
    EXPECT_GT(failed, 3u);
    EXPECT_EQ(failed + 1, runs);

    // Not overwriting: a failure creates no file.
    runs = sweep([&](const std::function<bool()>& injected) {
        unlink(fresh.c_str());
        errno = 0;
        int rc = ibnd_cache_fabric(f, fresh.c_str(), IBND_CACHE_FABRIC_FLAG_NO_OVERWRITE);
        int err = errno;
        if (injected()) {
            EXPECT_EQ(rc, -1);
            EXPECT_EQ(err, ENOMEM);
            EXPECT_FALSE(fs::exists(fresh));
        } else {
            EXPECT_EQ(rc, 0);
            EXPECT_EQ(file_bytes(fresh), expect);
        }
    });
    EXPECT_GT(runs, 1u);
    ibnd_destroy_fabric(f);
}

void count_node(ibnd_node_t*, void* n) { ++*static_cast<int*>(n); }
void count_port(ibnd_port_t*, void* n) { ++*static_cast<int*>(n); }

// Every lookup and walk over a loaded fabric, checked against the node list;
// returns how many things were found.
int walk_fabric(ibnd_fabric_t* f) {
    int found = 0;
    char dr[] = "0,1";
    char slot[64];
    char speed[128];
    for (ibnd_node_t* n = f->nodes; n; n = n->next) {
        found += ibnd_find_node_guid(f, n->guid) == n;
        for (int p = 0; n->ports && p <= n->numports; ++p) {
            ibnd_port_t* port = n->ports[p];
            if (!port)
                continue;
            found += ibnd_find_port_guid(f, port->guid) != nullptr;
            found += ibnd_find_port_lid(f, port->base_lid) != nullptr;
            ibnd_dump_agg_linkspeedext(speed, sizeof(speed), ibnd_get_agg_linkspeedext(port->info, port->info));
            ibnd_dump_agg_linkspeedexten(speed, sizeof(speed), ibnd_get_agg_linkspeedexten(port->info, port->info));
            ibnd_dump_agg_linkspeedextsup(speed, sizeof(speed), ibnd_get_agg_linkspeedextsup(port->info, port->info));
        }
        found += ibnd_get_chassis_type(n) != nullptr;
        found += ibnd_get_chassis_slot_str(n, slot, sizeof(slot)) != nullptr;
        found += ibnd_is_xsigo_guid(n->guid) + ibnd_is_xsigo_hca(n->guid) + ibnd_is_xsigo_tca(n->guid);
    }
    for (ibnd_chassis_t* c = f->chassis; c; c = c->next)
        found += ibnd_get_chassis_guid(f, c->chassisnum) == c->chassisguid;
    found += ibnd_find_node_dr(f, dr) != nullptr;
    found += ibnd_find_port_dr(f, dr) != nullptr;
    int nodes = 0, typed = 0, ports = 0;
    ibnd_iter_nodes(f, count_node, &nodes);
    ibnd_iter_nodes_type(f, count_node, IB_NODE_SWITCH, &typed);
    ibnd_iter_nodes_type(f, count_node, IB_NODE_CA, &typed);
    ibnd_iter_ports(f, count_port, &ports);
    return found + nodes + typed + ports;
}

TEST_F(AllocFail, LookupsAllocateNothing) {
    for (const fs::path& file : corpus("real-")) {
        SCOPED_TRACE(file.filename().string());
        ibnd_fabric_t* f = ibnd_load_fabric(file.c_str(), 0);
        ASSERT_NE(f, nullptr);
        int expect = walk_fabric(f);
        EXPECT_GT(expect, 10);
        // Every allocation from here on would fail (and, outside any
        // barrier, throw out of the test): none may happen.
        size_t before = rdma::allocfail::allocations();
        rdma::allocfail::fail_after(0);
        int got = walk_fabric(f);
        ibnd_destroy_fabric(f);
        bool injected = rdma::allocfail::disarm();
        EXPECT_FALSE(injected);
        EXPECT_EQ(rdma::allocfail::allocations(), before);
        EXPECT_EQ(got, expect);
    }
}

}  // namespace
