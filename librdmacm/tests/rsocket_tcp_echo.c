/* A plain TCP echo server and client, written against the sockets API only
 * (no RDMA headers): the program librspreload must be able to run over
 * rsockets unmodified.
 *
 *   rsocket_tcp_echo server PORT [-n CLIENTS] [-m poll|select|epoll|block] [-F]
 *   rsocket_tcp_echo client HOST PORT BYTES [-N] [-d] [-f] [-c]
 *
 * The server echoes what each client sends until the client shuts down its
 * sending side (-F: in a child process forked for each connection). The client sends BYTES of a known pattern, reads the echo
 * back and checks it; -N connects and transfers nonblocking (poll), -d does
 * its reads through a dup() of the socket, -f sends with sendfile() from a
 * temporary file, -c asks for SOCK_CLOEXEC|SOCK_NONBLOCK at socket().
 *
 * Both print "fd -> TARGET" for their connection, TARGET being what
 * /proc/self/fd shows ("socket:[N]" for a kernel socket), so a test can
 * tell whether the connection is a kernel socket at all; "after fd ->" is
 * the same once the transfer is done.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char* what) {
    fprintf(stderr, "rsocket_tcp_echo: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void show_fd(const char* who, int fd) {
    char path[64], target[256];
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    n = readlink(path, target, sizeof(target) - 1);
    if (n < 0)
        n = 0;
    target[n] = '\0';
    printf("%s fd -> %s\n", who, target);
    fflush(stdout);
}

static unsigned char pattern(uint64_t i) { return (unsigned char)((i * 2654435761u) >> 13); }

static void set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK))
        die("fcntl");
}

/* Echoes one connection until EOF; returns the bytes echoed. */
static long echo(int fd, const char* mode) {
    static char buf[65536];
    long total = 0;
    int ep = -1;

    if (strcmp(mode, "block"))
        set_nonblock(fd);
    if (!strcmp(mode, "epoll")) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

        ep = epoll_create1(0);
        if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
            die("epoll");
    }
    for (;;) {
        ssize_t n, off = 0;

        if (!strcmp(mode, "poll")) {
            struct pollfd p = {.fd = fd, .events = POLLIN};

            if (poll(&p, 1, 30000) != 1)
                die("poll");
        } else if (!strcmp(mode, "select")) {
            fd_set rd;
            struct timeval tv = {30, 0};

            FD_ZERO(&rd);
            FD_SET(fd, &rd);
            if (select(fd + 1, &rd, NULL, NULL, &tv) != 1)
                die("select");
        } else if (ep >= 0) {
            struct epoll_event ev;

            if (epoll_wait(ep, &ev, 1, 30000) != 1 || ev.data.fd != fd)
                die("epoll_wait");
        }
        n = read(fd, buf, sizeof(buf));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n < 0)
            die("read");
        if (n == 0)
            break;
        while (off < n) {
            ssize_t w = write(fd, buf + off, n - off);

            if (w < 0 && errno == EAGAIN) {
                struct pollfd p = {.fd = fd, .events = POLLOUT};

                poll(&p, 1, 1000);
                continue;
            }
            if (w <= 0)
                die("write");
            off += w;
        }
        total += n;
    }
    if (ep >= 0)
        close(ep);
    return total;
}

static int server(int argc, char** argv) {
    const char* mode = "poll";
    int clients = 1, port, lfd, one = 1, opt, use_fork = 0, status, rc = 0;
    struct sockaddr_in sin;

    if (argc < 3)
        return 2;
    port = atoi(argv[2]);
    optind = 3;
    while ((opt = getopt(argc, argv, "n:m:F")) != -1) {
        switch (opt) {
        case 'F': use_fork = 1; break;
        case 'n': clients = atoi(optarg); break;
        case 'm': mode = optarg; break;
        default: return 2;
        }
    }
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0)
        die("socket");
    if (setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
        die("setsockopt");
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    sin.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(lfd, (struct sockaddr*)&sin, sizeof(sin)) || listen(lfd, 8))
        die("bind/listen");
    show_fd("listen", lfd);
    printf("listening\n");
    fflush(stdout);
    while (clients--) {
        struct sockaddr_in peer;
        socklen_t len = sizeof(peer);
        int fd = accept(lfd, (struct sockaddr*)&peer, &len);
        long n;

        if (fd < 0)
            die("accept");
        show_fd("server", fd);
        if (use_fork) {
            pid_t pid = fork();

            if (pid < 0)
                die("fork");
            if (pid) {
                close(fd);
                continue;
            }
            close(lfd);
        }
        n = echo(fd, mode);
        show_fd("server after", fd);
        printf("server echoed %ld bytes\n", n);
        fflush(stdout);
        close(fd);
        if (use_fork)
            exit(0);
    }
    close(lfd);
    while (use_fork && wait(&status) > 0)
        if (!WIFEXITED(status) || WEXITSTATUS(status))
            rc = 1;
    return rc;
}

static void wait_fd(int fd, short ev) {
    struct pollfd p = {.fd = fd, .events = ev};

    if (poll(&p, 1, 30000) != 1)
        die("poll");
}

static int client(int argc, char** argv) {
    int nonblock = 0, use_dup = 0, use_sendfile = 0, flags = 0, opt, fd, rfd, err;
    long bytes, sent = 0, got = 0, i;
    struct addrinfo hints, *ai;
    unsigned char *out, *in;
    socklen_t len = sizeof(err);
    FILE* tmp = NULL;

    if (argc < 5)
        return 2;
    bytes = atol(argv[4]);
    optind = 5;
    while ((opt = getopt(argc, argv, "Ndfc")) != -1) {
        switch (opt) {
        case 'N': nonblock = 1; break;
        case 'd': use_dup = 1; break;
        case 'f': use_sendfile = 1; break;
        case 'c':
            flags = SOCK_CLOEXEC | SOCK_NONBLOCK;
            nonblock = 1;
            break;
        default: return 2;
        }
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(argv[2], argv[3], &hints, &ai))
        die("getaddrinfo");
    out = malloc(bytes + 1);
    in = malloc(bytes + 1);
    if (!out || !in)
        die("malloc");
    for (i = 0; i < bytes; i++)
        out[i] = pattern(i);

    fd = socket(AF_INET, SOCK_STREAM | flags, 0);
    if (fd < 0)
        die("socket");
    if (nonblock && !flags)
        set_nonblock(fd);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen)) {
        if (errno != EINPROGRESS)
            die("connect");
        wait_fd(fd, POLLOUT);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
            errno = err;
            die("connect (SO_ERROR)");
        }
    }
    freeaddrinfo(ai);
    show_fd("client", fd);
    rfd = use_dup ? dup(fd) : fd;
    if (rfd < 0)
        die("dup");

    if (use_sendfile) {
        tmp = tmpfile();
        if (!tmp || fwrite(out, 1, bytes, tmp) != (size_t)bytes || fflush(tmp))
            die("tmpfile");
        rewind(tmp);
    }
    /* Send and read back at the same time: the echo cannot outrun the
	 * socket buffers. */
    while (got < bytes) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n;

        if (sent < bytes)
            p.events |= POLLOUT;
        if (!nonblock && sent < bytes) {
            /* blocking: alternate bounded writes and reads */
            long chunk = bytes - sent < 4096 ? bytes - sent : 4096;

            if (use_sendfile) {
                off_t off = sent;

                n = sendfile(fd, fileno(tmp), &off, chunk);
            } else {
                n = write(fd, out + sent, chunk);
            }
            if (n <= 0)
                die("write");
            sent += n;
            n = recv(rfd, in + got, bytes - got, MSG_DONTWAIT);
            if (n < 0 && errno != EAGAIN)
                die("recv");
            if (n > 0)
                got += n;
            continue;
        }
        if (poll(&p, 1, 30000) < 1)
            die("poll");
        if ((p.revents & POLLOUT) && sent < bytes) {
            long chunk = bytes - sent < 65536 ? bytes - sent : 65536;

            n = write(fd, out + sent, chunk);
            if (n < 0 && errno != EAGAIN)
                die("write");
            if (n > 0)
                sent += n;
        }
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            n = read(rfd, in + got, bytes - got);
            if (n < 0 && errno != EAGAIN)
                die("read");
            if (n == 0) {
                fprintf(stderr, "rsocket_tcp_echo: early EOF after %ld bytes\n", got);
                return 1;
            }
            if (n > 0)
                got += n;
        }
    }
    if (shutdown(fd, SHUT_WR))
        die("shutdown");
    if (nonblock)
        wait_fd(rfd, POLLIN);
    {
        char c;
        ssize_t n = read(rfd, &c, 1);

        while (n < 0 && errno == EAGAIN) {
            wait_fd(rfd, POLLIN);
            n = read(rfd, &c, 1);
        }
        if (n != 0) {
            fprintf(stderr, "rsocket_tcp_echo: no EOF after the echo (%zd)\n", n);
            return 1;
        }
    }
    if (memcmp(in, out, bytes)) {
        fprintf(stderr, "rsocket_tcp_echo: echoed data differs\n");
        return 1;
    }
    show_fd("client after", fd);
    if (use_dup)
        close(rfd);
    close(fd);
    if (tmp)
        fclose(tmp);
    printf("client ok bytes=%ld\n", bytes);
    free(out);
    free(in);
    return 0;
}

int main(int argc, char** argv) {
    int r = 2;

    if (argc >= 2 && !strcmp(argv[1], "server"))
        r = server(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "client"))
        r = client(argc, argv);
    if (r == 2)
        fprintf(stderr,
                "usage: rsocket_tcp_echo server PORT [-n CLIENTS] [-m poll|select|epoll|block] [-F]\n"
                "       rsocket_tcp_echo client HOST PORT BYTES [-N] [-d] [-f] [-c]\n");
    return r;
}
