// Fuzzes the uverbs command decoders (write ABI, and the ioctl ABI as far
// as src/cmd_ioctl.cpp implements it) of the emulator: every input is a
// sequence of commands (format in fuzz_layout.h) run on a fresh uverbs file
// of a private simulated host; the emulator may touch no memory but an
// arena the harness owns. After each input the file is closed and every
// object the emulator keeps must be gone.
#include "cmd_builder.h"
#include "fuzz_layout.h"
#include "harness.h"

#include <cstdio>
#include <dirent.h>
#include <unistd.h>
#include <cstdlib>
#include <rdma/rdma_user_ioctl_cmds.h>

using namespace uvsim_fuzz;

UVSIM_TEST_ENV("fuzz", uvsim_test::kTwoDevices)

namespace {

uvsim_test::Arena& arena() {
    static auto* a = new uvsim_test::Arena(kArenaLen, kArenaAddr);  // lives until exit
    return *a;
}

[[noreturn]] void fail(const char* what) {
    fprintf(stderr, "uvsim fuzz: %s\n", what);
    abort();
}

void check_clean() {
    std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
    const uvsim::Sim& s = uvsim::sim();
    if (!s.files.empty())
        fail("a uverbs file survived its close");
    if (!s.qps.empty())
        fail("a QP survived the close of its file");
    if (!s.cqs.empty())
        fail("a CQ survived the close of its file");
    if (!s.srqs.empty())
        fail("an SRQ survived the close of its file");
    if (!s.mrs_by_lkey.empty())
        fail("an MR key survived the close of its file");
    if (!s.channels.empty())
        fail("a completion channel survived its close");
}

// UVSIM_FUZZ_VERBOSE=1: one line per record (to check what seeds reach)
const bool g_verbose = getenv("UVSIM_FUZZ_VERBOSE") != nullptr;
// UVSIM_FUZZ_WRITE_ONLY=1: ioctl records are skipped (to fuzz the write
// path past a known ioctl-decoder bug)
const bool g_write_only = getenv("UVSIM_FUZZ_WRITE_ONLY") != nullptr;

void list_fds() {
    if (DIR* d = opendir("/proc/self/fd")) {
        while (dirent* e = readdir(d)) {
            char path[300], target[256] = "";
            snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
            ssize_t n = readlink(path, target, sizeof target - 1);
            target[n > 0 ? n : 0] = 0;
            fprintf(stderr, "  fd %s -> %s\n", e->d_name, target);
        }
        closedir(d);
    }
}

int count_fds() {
    int n = 0;
    if (DIR* d = opendir("/proc/self/fd")) {
        while (readdir(d))
            ++n;
        closedir(d);
    }
    return n;
}

// Makes the process-wide fds (the wire socket) exist before the first
// input is measured: a first context, made and closed.
void warm_up() {
    static const bool done = [] {
        uvsim_test::Arena& a = arena();
        a.activate();
        uvsim_test::File f(0);
        const uvsim_test::Bytes b = uvsim_test::get_context(a.addr(kFreeOff));
        memcpy(a.data() + kCmdOff, b.data(), b.size());
        if (f.write(a.data() + kCmdOff, b.size()) != static_cast<ssize_t>(b.size()))
            fail("the warm-up GET_CONTEXT failed");
        return true;
    }();
    (void)done;
}

uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
uint32_t get32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1)
        return 0;
    warm_up();
    // (counted per input: the sanitizers' symbolizer opens pipes between inputs)
    const int fds = count_fds();
    uvsim_test::Arena& a = arena();
    memset(a.data(), 0, a.size());
    a.activate();
    {
        uvsim_test::File f(data[0] & 1);
        size_t pos = 1;
        for (size_t n = 0; n < kMaxRecords && pos + 3 <= size; ++n) {
            const uint8_t kind = data[pos] % 4;
            size_t len = get16(data + pos + 1);
            pos += 3;
            len = std::min(len, size - pos);
            const uint8_t* rec = data + pos;
            pos += len;
            uint8_t* cmd = a.data() + kCmdOff;
            switch (kind) {
            case kWrite: {
                memcpy(cmd, rec, len);
                ssize_t r = f.write(cmd, len);
                if (g_verbose)
                    fprintf(stderr, "write cmd 0x%x len %zu -> %zd\n", len >= 4 ? get32(cmd) : 0, len, r);
                if (r != static_cast<ssize_t>(len) && (r >= 0 || r < -4095))
                    fail("write returned neither its length nor an errno");
                break;
            }
            case kIoctl:
            case kIoctlOther: {
                if (g_write_only)
                    break;
                unsigned long req = RDMA_VERBS_IOCTL;
                if (kind == kIoctlOther) {
                    if (len < 4)
                        break;
                    req = get32(rec);
                    rec += 4;
                    len -= 4;
                }
                memcpy(cmd, rec, len);
                int r = f.ioctl(req, cmd);
                if (g_verbose)
                    fprintf(stderr, "ioctl 0x%lx len %zu -> %d\n", req, len, r);
                if (r > 0 || r < -4095)
                    fail("ioctl returned neither 0 nor an errno");
                break;
            }
            case kPoke: {
                if (len < 4)
                    break;
                const size_t off = get32(rec) % a.size();
                const size_t n = std::min(len - 4, a.size() - off);
                memcpy(a.data() + off, rec + 4, n);
                break;
            }
            }
        }
    }
    uvsim_test::close_all_channels();
    check_clean();
    if (count_fds() != fds) {
        fprintf(stderr, "uvsim fuzz: %d fds open, %d expected:\n", count_fds(), fds);
        list_fds();
        fail("an fd the emulator opened for this input is still open");
    }
    return 0;
}
