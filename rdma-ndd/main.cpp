// rdma-ndd: keeps every RDMA device's node description in step with the
// host name. Sets them at start, then waits for a new device (udev, or
// inotify on a test's sysfs), a host name change (poll on the proc file) or
// a signal: SIGHUP rewrites all, SIGTERM/SIGINT end it.
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#ifdef RDMA_NDD_HAVE_UDEV
#include <libudev.h>
#endif

#include "rdma-ndd/ndd.h"
#include "util/unique_fd.h"

namespace {

bool g_debug = false;

void log_msg(int priority, const std::string& msg) {
    if (priority > LOG_NOTICE && !g_debug)
        return;
    syslog(priority, "%s", msg.c_str());
}

void usage(FILE* out) {
    fprintf(out,
            "Usage: rdma-ndd [options]\n"
            "Keeps the node description of each RDMA device set from the host name.\n"
            "  -f, --foreground  stay in the foreground (messages also on stderr)\n"
            "  -d, --debug       log every description written\n"
            "      --systemd     run as a systemd notify service (implies -f)\n"
            "  -h, --help        this text\n"
            "RDMA_NDD_ND_FORMAT sets the description: %%h host name (up to its first\n"
            "dot), %%d device name, %%%% a %%; default \"%%h %%d\". See rdma-ndd(8).\n");
}

// READY=1 to the service manager's socket ($NOTIFY_SOCKET; '@' starts an
// abstract name), as sd_notify does.
void notify_ready() {
    const char* path = getenv("NOTIFY_SOCKET");
    if (!path || !*path)
        return;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const size_t len = strlen(path);
    if (len >= sizeof addr.sun_path)
        return;
    memcpy(addr.sun_path, path, len);
    if (addr.sun_path[0] == '@')
        addr.sun_path[0] = '\0';
    rdma::UniqueFd fd(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!fd)
        return;
    static const char msg[] = "READY=1";
    if (sendto(fd.get(), msg, sizeof msg - 1, 0, reinterpret_cast<sockaddr*>(&addr),
               static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len)) < 0)
        log_msg(LOG_WARNING, std::string("cannot notify the service manager: ") + strerror(errno));
}

int run(int argc, char** argv) {
    bool foreground = false, systemd = false;
    static const option opts[] = {{"foreground", no_argument, nullptr, 'f'},
                                  {"debug", no_argument, nullptr, 'd'},
                                  {"systemd", no_argument, nullptr, 's'},
                                  {"help", no_argument, nullptr, 'h'},
                                  {nullptr, 0, nullptr, 0}};
    for (int c; (c = getopt_long(argc, argv, "fdh", opts, nullptr)) != -1;) {
        switch (c) {
        case 'f': foreground = true; break;
        case 'd': g_debug = true; break;
        case 's': systemd = foreground = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 1;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 1;
    }

    openlog("rdma-ndd", LOG_PID | (foreground && !systemd ? LOG_PERROR : 0), LOG_DAEMON);
    if (!foreground && daemon(0, 0)) {
        log_msg(LOG_ERR, std::string("cannot become a daemon: ") + strerror(errno));
        return 1;
    }

    const char* env = getenv("SYSFS_PATH");
    rdma::ndd::Updater updater(env && *env ? env : "/sys", rdma::ndd::format_from_env(), log_msg);

    // Signals arrive as readable data, so one poll waits for everything.
    sigset_t sigs;
    sigemptyset(&sigs);
    for (int s : {SIGTERM, SIGINT, SIGHUP})
        sigaddset(&sigs, s);
    sigprocmask(SIG_BLOCK, &sigs, nullptr);
    rdma::UniqueFd sigfd(signalfd(-1, &sigs, SFD_CLOEXEC));

    // The proc file reports POLLPRI|POLLERR once the host name has changed
    // since it was opened (or last polled): kernels without that just never
    // wake us, and the descriptions stay as set at start.
    rdma::UniqueFd hostfd(open("/proc/sys/kernel/hostname", O_RDONLY | O_CLOEXEC));
    if (!hostfd)
        log_msg(LOG_WARNING, "cannot watch the host name: /proc/sys/kernel/hostname not readable");

    // New devices: on a test's sysfs tree, inotify sees them come; the
    // kernel's sysfs gives no inotify events, udev does.
    rdma::UniqueFd inofd(inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    if (inofd &&
        inotify_add_watch(inofd.get(), updater.class_dir().c_str(),
                          IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM) < 0)
        inofd.reset();

#ifdef RDMA_NDD_HAVE_UDEV
    udev* ud = udev_new();
    udev_monitor* mon = ud ? udev_monitor_new_from_netlink(ud, "udev") : nullptr;
    if (mon &&
        (udev_monitor_filter_add_match_subsystem_devtype(mon, "infiniband", nullptr) < 0 ||
         udev_monitor_enable_receiving(mon) < 0)) {
        udev_monitor_unref(mon);
        mon = nullptr;
    }
    const int udevfd = mon ? udev_monitor_get_fd(mon) : -1;
#else
    const int udevfd = -1;
#endif

    std::string host = rdma::ndd::current_hostname();
    updater.sync(host, true);
    if (systemd)
        notify_ready();

    for (;;) {
        pollfd pfd[4] = {
            {sigfd.get(), POLLIN, 0}, {hostfd.get(), POLLPRI, 0}, {inofd.get(), POLLIN, 0}, {udevfd, POLLIN, 0}};
        if (poll(pfd, 4, -1) < 0) {
            if (errno == EINTR)
                continue;
            log_msg(LOG_ERR, std::string("poll: ") + strerror(errno));
            return 1;
        }
        bool force = false, rescan = false;
        if (pfd[0].revents & POLLIN) {
            signalfd_siginfo si{};
            if (read(sigfd.get(), &si, sizeof si) == sizeof si) {
                if (si.ssi_signo == SIGHUP) {
                    force = rescan = true;
                } else {
                    log_msg(LOG_INFO, "exiting on signal " + std::to_string(si.ssi_signo));
                    break;
                }
            }
        }
        if (pfd[1].revents & (POLLPRI | POLLERR)) {
            // re-arm: the next poll waits for the next change
            char buf[128];
            lseek(hostfd.get(), 0, SEEK_SET);
            (void)!read(hostfd.get(), buf, sizeof buf);
            std::string now = rdma::ndd::current_hostname();
            if (now != host) {
                log_msg(LOG_INFO, "host name changed from " + host + " to " + now);
                host = now;
                rescan = true;
            }
        }
        if (pfd[2].revents & POLLIN) {
            alignas(inotify_event) char buf[4096];
            while (read(inofd.get(), buf, sizeof buf) > 0) {}
            rescan = true;
        }
#ifdef RDMA_NDD_HAVE_UDEV
        if (pfd[3].revents & POLLIN) {
            while (udev_device* dev = udev_monitor_receive_device(mon))
                udev_device_unref(dev);
            rescan = true;
        }
#endif
        if (rescan)
            updater.sync(host, force);
    }
#ifdef RDMA_NDD_HAVE_UDEV
    if (mon)
        udev_monitor_unref(mon);
    if (ud)
        udev_unref(ud);
#endif
    closelog();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    // No exception leaves the program: an allocation failure is logged and
    // the service manager restarts us.
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        log_msg(LOG_ERR, std::string("fatal: ") + e.what());
        return 1;
    }
}
