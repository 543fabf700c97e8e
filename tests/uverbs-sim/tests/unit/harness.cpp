// See harness.h.
#include "harness.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <unistd.h>

namespace uvsim_test {

namespace {

std::string& dir_storage() {
    static std::string* d = new std::string;  // used from an atexit handler
    return *d;
}

int rm_entry(const char* path, const struct stat*, int flag, struct FTW*) {
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void remove_run_dir() {
    const std::string& d = dir_storage();
    if (!d.empty() && !getenv("UVSIM_TEST_KEEP"))
        nftw(d.c_str(), rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

// Run directories of this kind whose process is gone (a crash, an abort
// of the fuzzer, a killed test) are removed: names are
// uvsim-<tag>-<pid>.XXXXXX.
void remove_stale_dirs(const std::string& tmp, const char* tag) {
    DIR* d = opendir(tmp.c_str());
    if (!d)
        return;
    const std::string prefix = std::string("uvsim-") + tag + "-";
    while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0)
            continue;
        const long pid = strtol(name.c_str() + prefix.size(), nullptr, 10);
        const std::string path = tmp + "/" + name;
        struct stat st;
        if (pid <= 0 || lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
            continue;
        if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
            nftw(path.c_str(), rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    closedir(d);
}

}  // namespace

void setup_env(const char* tag, const char* config_text) {
    for (const char* v : {"UVERBS_SIM_CONFIG", "UVERBS_SIM_FAULTS", "UVERBS_SIM_TRACE", "UVERBS_SIM_DEVICES",
                          "UVERBS_SIM_LINK", "UVERBS_SIM_DIR"})
        unsetenv(v);
    const char* tmp = getenv("TMPDIR");
    const std::string tmpdir = tmp && *tmp ? tmp : "/tmp";
    remove_stale_dirs(tmpdir, tag);
    std::string tmpl = tmpdir + "/uvsim-" + tag + "-" + std::to_string(getpid()) + ".XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back(0);
    if (!mkdtemp(buf.data())) {
        fprintf(stderr, "uvsim test: mkdtemp %s: %s\n", tmpl.c_str(), strerror(errno));
        abort();
    }
    dir_storage() = buf.data();
    // UVSIM_TEST_TRACE=file|-: the emulator's trace, for debugging a test
    if (const char* t = getenv("UVSIM_TEST_TRACE"); t && *t)
        setenv("UVERBS_SIM_TRACE", t, 1);
    atexit(remove_run_dir);
    setenv("UVERBS_SIM_DIR", buf.data(), 1);
    if (config_text) {
        const std::string path = dir_storage() + "/sim.conf";
        FILE* f = fopen(path.c_str(), "we");
        if (!f || fputs(config_text, f) < 0 || fclose(f) != 0) {
            fprintf(stderr, "uvsim test: cannot write %s\n", path.c_str());
            abort();
        }
        setenv("UVERBS_SIM_CONFIG", path.c_str(), 1);
    }
}

const std::string& run_dir() { return dir_storage(); }

Arena::Arena(size_t len, uint64_t fixed) : len_(len) {
    void* p = MAP_FAILED;
    if (fixed)
        p = mmap(reinterpret_cast<void*>(fixed), len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != MAP_FAILED && reinterpret_cast<uint64_t>(p) != fixed) {  // kernel without NOREPLACE: a hint
        munmap(p, len);
        p = MAP_FAILED;
    }
    if (p == MAP_FAILED)
        p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("uvsim test: arena mmap");
        abort();
    }
    p_ = static_cast<uint8_t*>(p);
}

Arena::~Arena() {
    deactivate();
    munmap(p_, len_);
}

void Arena::activate() const {
    std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
    uvsim::set_app_arena(base(), len_);
}

void Arena::deactivate() {
    std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
    uvsim::set_app_arena(0, 0);
}

File::File(int dev_index) {
    fd_ = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd_ < 0) {
        perror("uvsim test: /dev/null");
        abort();
    }
    std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
    auto c = std::make_unique<uvsim::Context>();
    c->fd = fd_;
    c->dev = &uvsim::sim().devices.at(static_cast<size_t>(dev_index));
    ctx_ = c.get();
    uvsim::sim().files[fd_] = std::move(c);
    uvsim::fd_mark(fd_, uvsim::FdKind::Uverbs);
}

File::~File() {
    // the application's ends of the async files (every one it allocated)
    std::vector<int> async_fds;
    {
        std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
        if (ctx_->async)
            async_fds.push_back(ctx_->async->app_fd);
        for (const auto& a : ctx_->more_async)
            async_fds.push_back(a->app_fd);
    }
    uvsim::uverbs_close(fd_);  // destroys the context, as close() does
    close(fd_);
    for (int fd : async_fds)
        close(fd);
}

ssize_t File::write(const void* buf, size_t len) const {
    std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
    return uvsim::uverbs_write(*ctx_, buf, len);
}

int File::ioctl(unsigned long req, void* arg) const {
    std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
    return uvsim::uverbs_ioctl(*ctx_, req, arg);
}

int close_all_channels() {
    std::vector<int> fds;
    {
        std::lock_guard<std::recursive_mutex> g(uvsim::sim().mu);
        for (const auto& [fd, f] : uvsim::sim().channels)
            fds.push_back(fd);
    }
    for (int fd : fds) {
        uvsim::uverbs_close(fd);
        close(fd);
    }
    return static_cast<int>(fds.size());
}

}  // namespace uvsim_test
