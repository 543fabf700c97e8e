// Shared by the uverbs-sim unit tests and the command-decoder fuzzer: a
// private simulated host (run directory + configuration) for the program,
// an application-memory arena, and an open "uverbs file" driven directly
// through the core's decoders (no LD_PRELOAD).
#pragma once

#include "verbs.h"

#include <string>

namespace uvsim_test {

// The configuration most tests use: an InfiniBand device with two ports
// (port 2 with a chosen LID) and an Ethernet (RoCE) device with two ports
// (port 1 with a chosen MAC and IPv4 address).
inline constexpr const char* kTwoDevices = "# uvsim tests\n"
                                           "device mlx5_0\n"
                                           "ports 2\n"
                                           "part_id 4123\n"
                                           "port 2 lid 0x20\n"
                                           "device mlx5_1\n"
                                           "ports 2\n"
                                           "link_layer eth\n"
                                           "port 1 mac 02:11:22:33:44:55 ipv4 192.168.7.9\n";

// Gives this program its own run directory ($TMPDIR/uvsim-<tag>-<pid>.XXXXXX,
// removed at exit; those of dead processes are removed here) and, when
// config_text is not null, a configuration file with that text. The core
// reads its configuration once (cfg(), first used by a static initializer of
// the library), so call this from UVSIM_TEST_ENV below, which runs before
// any other static initializer. Clears the UVERBS_SIM_* variables a caller's
// environment might carry (faults, trace, device count, link layer).
void setup_env(const char* tag, const char* config_text);
const std::string& run_dir();

// Defines a constructor that runs before the core's static initializers.
#define UVSIM_TEST_ENV(tag, config_text) \
    __attribute__((constructor(101))) static void uvsim_test_env_ctor() { ::uvsim_test::setup_env(tag, config_text); }

// Page-aligned memory that becomes the only application memory the core
// may touch (set_app_arena). At a fixed address when `fixed` is given and
// free (so fuzz inputs can carry literal pointers), else anywhere.
class Arena {
public:
    explicit Arena(size_t len, uint64_t fixed = 0);
    ~Arena();
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;
    uint8_t* data() const { return p_; }
    uint64_t base() const { return reinterpret_cast<uint64_t>(p_); }
    size_t size() const { return len_; }
    uint64_t addr(size_t off) const { return base() + off; }
    // restrict / lift the core's view of application memory
    void activate() const;
    static void deactivate();

private:
    uint8_t* p_ = nullptr;
    size_t len_ = 0;
};

// An open /dev/infiniband/uverbsN as the interposer makes one: a real fd
// (on /dev/null) marked as a uverbs file, its Context registered in sim().
// The destructor closes it as close() would (every object of the context
// freed) and closes the event fds the "application" received.
class File {
public:
    explicit File(int dev_index = 0);
    ~File();
    File(const File&) = delete;
    File& operator=(const File&) = delete;
    uvsim::Context& ctx() const { return *ctx_; }
    int fd() const { return fd_; }
    // write(fd, buf, len) on this file; buf must be application (arena)
    // memory. Takes the emulator's lock as the interposer does.
    ssize_t write(const void* buf, size_t len) const;
    int ioctl(unsigned long req, void* arg) const;

private:
    int fd_ = -1;
    uvsim::Context* ctx_ = nullptr;
};

// Closes every completion channel fd the emulator handed out (the
// "application" side of them); returns how many.
int close_all_channels();

}  // namespace uvsim_test
