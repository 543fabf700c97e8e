// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// fabric.mgmt_alloc_fail: allocation failure inside the management
// libraries' entry points on a simulated fabric (util/testing/alloc_fail.h;
// this program exports its operator new to the libraries). Every allocation
// of a call fails in turn (rdma::allocfail::sweep): each such run must
// return the documented error (libibumad -ENOMEM, libibmad and libibnetdisc
// NULL with errno ENOMEM) and free what it had made, and the run without a
// failure must give what a plain call gives:
//   libibumad   umad_get_cas_names, umad_get_ca, umad_get_port,
//               umad_get_ca_portguids, umad_get_smi_gsi_pairs, umad_open_port
//               on the CA view umad2sim presents;
//   libibmad    mad_rpc_open_port, mad_rpc_open_port2 (they allocate only in
//               libibumad), then smp_query_via, ib_resolve_self_via and
//               mad_rpc_close_port, which allocate nothing;
//   libibnetdisc ibnd_discover_fabric: the whole walk, graph equal (as a
//               cache file) to a plain discovery's.
//
// Run by fabric-run without the simulator preloaded: this driver starts the
// sweeps as child processes with LD_PRELOAD=$SIM_PRELOAD. umad2sim gives a
// process only about 30 opened-and-registered ports (tests/fabric/README.md)
// and every discovery run that gets past its first port open uses one up, so
// the discovery sweep is split into chunks of runs, one fresh process each:
// a chunk's process fails the allocations of the runs before its range
// without calling anything (they belong to earlier chunks), makes its own
// runs, and stops at the end of its range.
#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include "libibumad/tests/alloc_fail_support.h"
#include "util/testing/alloc_fail.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <endian.h>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <new>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char** environ;

// ---- between the libraries and libibumad ---------------------------------
//
// umad2sim crashes (in its receiver thread) when a reply arrives for an
// agent unregistered or a descriptor closed since; a kernel just drops it
// (tests/fabric/README.md). A discovery abandoned on an allocation failure
// gives its port back with SMPs in flight, so this program, which exports
// these four functions, stands between libibnetdisc/libibmad and libibumad:
// before an agent or a descriptor is given back, it waits (at most a
// second) for the replies to what was sent on that descriptor. The wrappers
// allocate nothing (they run while failures are armed).
namespace {

constexpr int kMaxFd = 4096;
int g_in_flight[kMaxFd];

template <class Fn>
Fn real(const char* name) {
    return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

void drain(int fd) {
    static auto recv = real<int (*)(int, void*, int*, int)>("umad_recv");
    if (fd < 0 || fd >= kMaxFd)
        return;
    alignas(8) static uint8_t buf[1024 + 256];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (g_in_flight[fd] > 0 && std::chrono::steady_clock::now() < deadline) {
        int len = 256;
        if (recv(fd, buf, &len, 100) >= 0)
            --g_in_flight[fd];
    }
    g_in_flight[fd] = 0;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int umad_send(int fd, int agent, void* umad, int length,
                                                                int timeout_ms, int retries) {
    static auto send = real<int (*)(int, int, void*, int, int, int)>("umad_send");
    int rc = send(fd, agent, umad, length, timeout_ms, retries);
    if (rc == 0 && fd >= 0 && fd < kMaxFd)
        ++g_in_flight[fd];
    return rc;
}

extern "C" __attribute__((visibility("default"))) int umad_recv(int fd, void* umad, int* length, int timeout_ms) {
    static auto recv = real<int (*)(int, void*, int*, int)>("umad_recv");
    int rc = recv(fd, umad, length, timeout_ms);
    if (rc >= 0 && fd >= 0 && fd < kMaxFd && g_in_flight[fd] > 0)
        --g_in_flight[fd];
    return rc;
}

extern "C" __attribute__((visibility("default"))) int umad_unregister(int fd, int agent) {
    static auto unregister = real<int (*)(int, int)>("umad_unregister");
    drain(fd);
    return unregister(fd, agent);
}

extern "C" __attribute__((visibility("default"))) int umad_close_port(int fd) {
    static auto close_port = real<int (*)(int)>("umad_close_port");
    drain(fd);
    return close_port(fd);
}

namespace {

using mgmt_test::heap_in_use;
using rdma::allocfail::sweep;

int g_failures;

// A failed check prints where (to stdout, which the driver shows) and
// counts; the run goes on.
#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            ++g_failures;                                                        \
            std::printf("%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            std::fflush(stdout);                                                 \
        }                                                                        \
    } while (0)

constexpr int kChunkRuns = 20;  // discovery runs per process (umad2sim limit)
constexpr int kMoreChunks = 3;  // a chunk's exit status: the sweep goes on

// Sweeps `call` (the entry point alone: an allocation of the test's own
// would be the one to fail); `check(result, errno, injected)` judges each
// run, disarmed, and frees what a successful run made. Heap use must be the
// same before and after each run.
template <class Call, class Check>
void sweep_call(const char* name, Call call, Check check) {
    size_t failed = 0;
    size_t runs = sweep([&](const std::function<bool()>& injected) {
        size_t heap = heap_in_use();
        errno = 0;
        auto result = call();
        int err = errno;
        bool hit = injected();
        failed += hit;
        check(result, err, hit);
        CHECK(heap_in_use() == heap);
    });
    CHECK(runs > 0);
    CHECK(failed > 0);
    std::printf("%-28s %4zu allocations, each failed once: documented error; then success\n", name, failed);
}

auto neg_errno_or(int expect) {
    return [expect](int rc, int err, bool injected) {
        if (injected) {
            CHECK(rc == -ENOMEM);
            CHECK(err == ENOMEM);
        } else {
            CHECK(rc == expect);
        }
    };
}

// Closes an ibmad port after handing its agents back (umad2sim counts them
// per process; the kernel would drop them with the descriptor).
void close_port(ibmad_port* p) {
    if (!p)
        return;
    for (int cls : {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS})
        if (mad_rpc_class_agent(p, cls) >= 0)
            umad_unregister(mad_rpc_portid(p), mad_rpc_class_agent(p, cls));
    mad_rpc_close_port(p);
}

// ---- libibumad and libibmad (one process) --------------------------------

int stack_sweeps() {
    char names[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN];
    const int cas = umad_get_cas_names(names, UMAD_MAX_DEVICES);
    CHECK(cas >= 1);
    sweep_call(
        "umad_get_cas_names", [&] { return umad_get_cas_names(names, UMAD_MAX_DEVICES); }, neg_errno_or(cas));

    umad_ca_t ca;
    CHECK(umad_get_ca(nullptr, &ca) == 0);
    const __be64 node_guid = ca.node_guid;
    const int numports = ca.numports;
    umad_release_ca(&ca);
    sweep_call(
        "umad_get_ca", [&] { return umad_get_ca(nullptr, &ca); },
        [&](int rc, int err, bool injected) {
            neg_errno_or(0)(rc, err, injected);
            if (!injected) {
                CHECK(ca.node_guid == node_guid && ca.numports == numports);
                umad_release_ca(&ca);
            }
        });
    umad_port_t port;
    CHECK(umad_get_port(nullptr, 0, &port) == 0);
    const int portnum = port.portnum;  // 0: umad2sim's node is a switch
    const __be64 port_guid = port.port_guid;
    umad_release_port(&port);
    sweep_call(
        "umad_get_port", [&] { return umad_get_port(nullptr, 0, &port); },
        [&](int rc, int err, bool injected) {
            neg_errno_or(0)(rc, err, injected);
            if (!injected) {
                CHECK(port.portnum == portnum && port.port_guid == port_guid);
                umad_release_port(&port);
            }
        });
    __be64 guids[UMAD_CA_MAX_PORTS];
    sweep_call(
        "umad_get_ca_portguids", [&] { return umad_get_ca_portguids(nullptr, guids, UMAD_CA_MAX_PORTS); },
        neg_errno_or(numports + 1));
    umad_ca_pair pairs[UMAD_MAX_DEVICES];
    const int npairs = umad_get_smi_gsi_pairs(pairs, UMAD_MAX_DEVICES);
    CHECK(npairs >= 1);
    sweep_call(
        "umad_get_smi_gsi_pairs", [&] { return umad_get_smi_gsi_pairs(pairs, UMAD_MAX_DEVICES); },
        [&](int rc, int err, bool injected) {
            if (injected) {
                CHECK(rc == -1);
                CHECK(err == ENOMEM);
            } else {
                CHECK(rc == npairs);
            }
        });
    // The ABI version is read once per process: before the sweep.
    umad_close_port(umad_open_port(nullptr, 0));
    sweep_call(
        "umad_open_port", [] { return umad_open_port(nullptr, 0); },
        [](int fd, int err, bool injected) {
            if (injected) {
                CHECK(fd == -ENOMEM);
                CHECK(err == ENOMEM);
            } else {
                CHECK(fd >= 0);
                umad_close_port(fd);
            }
        });

    int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS};
    sweep_call(
        "mad_rpc_open_port", [&] { return mad_rpc_open_port(nullptr, 0, classes, 2); },
        [&](ibmad_port* p, int err, bool injected) {
            if (injected) {
                CHECK(!p);
                CHECK(err == ENOMEM);
            } else {
                CHECK(p);
                close_port(p);
            }
        });
    ibmad_port* open = mad_rpc_open_port(nullptr, 0, classes, 2);
    CHECK(open);
    if (!open)
        return 1;
    // One SMP and a self resolution: no allocation at all (the sweep makes
    // a single run), the answer the local node's.
    uint8_t info[IB_SMP_DATA_SIZE];
    ib_portid_t self = {};
    size_t runs = sweep([&](const std::function<bool()>& injected) {
        std::memset(info, 0, sizeof(info));
        uint8_t* r = smp_query_via(info, &self, IB_ATTR_NODE_INFO, 0, 0, open);
        CHECK(!injected());
        CHECK(r != nullptr);
    });
    CHECK(runs == 1);
    CHECK(htobe64(mad_get_field64(info, 0, IB_NODE_GUID_F)) == node_guid);
    ib_portid_t me = {};
    int self_port = -1;
    runs = sweep([&](const std::function<bool()>& injected) {
        int rc = ib_resolve_self_via(&me, &self_port, nullptr, open);
        CHECK(!injected());
        CHECK(rc == 0);
    });
    CHECK(runs == 1);
    CHECK(self_port == portnum);
    runs = sweep([&](const std::function<bool()>& injected) {
        close_port(open);
        CHECK(!injected());
    });
    CHECK(runs == 1);
    std::printf("%-28s    0 allocations (smp_query_via, ib_resolve_self_via, mad_rpc_close_port)\n", "");

    // No classes: a run that fails on the GSI side closes the SMI port it
    // had opened without giving its agents back (the kernel would drop
    // them), which umad2sim would count against the process. Registration
    // allocates nothing, so the sweep covers the same allocations.
    sweep_call(
        "mad_rpc_open_port2", [&] { return mad_rpc_open_port2(nullptr, 0, classes, 0, 0); },
        [&](ibmad_ports_pair* p, int err, bool injected) {
            if (injected) {
                CHECK(!p);
                CHECK(err == ENOMEM);
            } else {
                CHECK(p && p->smi.port && p->gsi.port);
                mad_rpc_close_port2(p);
            }
        });
    return g_failures ? 1 : 0;
}

// ---- libibnetdisc (one chunk of runs per process) ------------------------

struct NextChunk {};

std::vector<uint8_t> cache_of(ibnd_fabric_t* f) {
    char path[] = "mgmt_alloc_fail.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return {};
    close(fd);
    std::vector<uint8_t> bytes;
    if (ibnd_cache_fabric(f, path, 0) == 0) {
        std::ifstream in(path, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    unlink(path);
    return bytes;
}

// Uses up the allocations the current run may make, so that its injected
// failure happens here: the run belongs to another chunk.
void skip_run() {
    for (;;) {
        try {
            // the function, not a new-expression: a new/delete pair may be
            // optimised away
            ::operator delete(::operator new(1));
        } catch (const std::bad_alloc&) {
            return;
        }
    }
}

int discover_chunk(int chunk) {
    ibnd_config cfg = {};
    // A plain discovery first: the expectation, and the one-time work of the
    // libraries (the umad ABI version) done before the sweep.
    ibnd_fabric_t* plain = ibnd_discover_fabric(nullptr, 0, nullptr, &cfg);
    CHECK(plain != nullptr);
    if (!plain)
        return 1;
    const std::vector<uint8_t> expect = cache_of(plain);
    ibnd_destroy_fabric(plain);
    CHECK(!expect.empty());

    const size_t lo = static_cast<size_t>(chunk) * kChunkRuns, hi = lo + kChunkRuns;
    size_t run = 0;
    size_t failed = 0;
    try {
        sweep([&](const std::function<bool()>& injected) {
            const size_t n = run++;
            if (n < lo) {
                skip_run();
                return;
            }
            if (n >= hi)
                throw NextChunk{};
            size_t heap = heap_in_use();
            errno = 0;
            ibnd_fabric_t* f = ibnd_discover_fabric(nullptr, 0, nullptr, &cfg);
            int err = errno;
            if (injected()) {
                ++failed;
                CHECK(f == nullptr);
                CHECK(err == ENOMEM);
            } else {
                CHECK(f != nullptr);
                if (f)
                    CHECK(cache_of(f) == expect);
            }
            ibnd_destroy_fabric(f);
            CHECK(heap_in_use() == heap);
        });
    } catch (const NextChunk&) {
        rdma::allocfail::disarm();
        return g_failures ? 1 : kMoreChunks;
    }
    // the run without a failure was in this chunk: the sweep is complete
    std::printf("ibnd_discover_fabric %zu allocations\n", lo + failed);
    return g_failures ? 1 : 0;
}

// ---- driver ----------------------------------------------------------------

// Runs this program with `args` and the simulator preloaded; stdout goes
// through, stderr (libraries' warnings for every failed run) to `log`.
int run_child(const char* self, const std::vector<std::string>& args, const char* log) {
    const char* preload = std::getenv("SIM_PRELOAD");
    if (!preload) {
        std::fprintf(stderr, "mgmt_alloc_fail: no SIM_PRELOAD (run under tests/fabric/fabric-run)\n");
        return -1;
    }
    std::vector<std::string> env_strings{std::string("LD_PRELOAD=") + preload};
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "LD_PRELOAD=", 11))
            env_strings.emplace_back(*e);
    std::vector<char*> envp;
    for (auto& s : env_strings)
        envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_strings{self};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : argv_strings)
        argv.push_back(s.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    pid_t pid;
    int rc = posix_spawn(&pid, self, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc) {
        std::fprintf(stderr, "mgmt_alloc_fail: spawn: %s\n", std::strerror(rc));
        return -1;
    }
    int status;
    if (waitpid(pid, &status, 0) < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int fail_with_log(const char* what, int status, const char* log) {
    std::fprintf(stderr, "mgmt_alloc_fail: %s failed (status %d); its stderr ends:\n", what, status);
    std::ifstream in(log);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);)
        lines.push_back(l);
    for (size_t i = lines.size() > 30 ? lines.size() - 30 : 0; i < lines.size(); i++)
        std::fprintf(stderr, "  %s\n", lines[i].c_str());
    return 1;
}

int drive(const char* self) {
    const char* log = "mgmt_alloc_fail.stderr";
    int st = run_child(self, {"--stack"}, log);
    if (st != 0)
        return fail_with_log("the libibumad/libibmad sweeps", st, log);
    for (int chunk = 0;; chunk++) {
        st = run_child(self, {"--discover", std::to_string(chunk)}, log);
        if (st == 0) {
            std::printf("ibnd_discover_fabric: swept in %d processes\n", chunk + 1);
            return 0;
        }
        if (st != kMoreChunks)
            return fail_with_log(("discovery chunk " + std::to_string(chunk)).c_str(), st, log);
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    if (argc == 2 && !std::strcmp(argv[1], "--stack"))
        return stack_sweeps();
    if (argc == 3 && !std::strcmp(argv[1], "--discover"))
        return discover_chunk(std::atoi(argv[2]));
    if (argc == 1) {
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
            return 1;
        self[n] = '\0';
        return drive(self);
    }
    std::fprintf(stderr, "usage: %s [--stack | --discover CHUNK]\n", argv[0]);
    return 2;
}
