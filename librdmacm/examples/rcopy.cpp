// rcopy: copy a file to another host over rsockets.
//
//   rcopy [-p port]                         server: receives files, forever
//   rcopy source server[:destination] [-p port]   client: sends one file
//
// The protocol (that of rdmacm-utils 44's rcopy, so either side may be the
// reference's) is a series of requests, each answered by a bare header:
//
//   header   u8 version (0), u8 command, u16 length of the whole message,
//            u32 data, u64 id; 16 bytes in host byte order
//   OPEN  1  data = file mode; followed by the destination path, NUL
//            padded to a multiple of 8 bytes (at least one NUL)
//   WRITE 3  followed by the u64 file size, then the file's bytes
//   CLOSE 2  no payload
//   reply    command | 0x80, length 16, data = 0 or an errno value
//
// The client maps the source file and sends it in one rsend; the server
// sizes the destination, maps it and receives straight into the mapping.

#include "stream_common.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

enum Command : std::uint8_t {
    kNoop = 0,
    kOpen = 1,
    kClose = 2,
    kWrite = 3,
    kResponse = 0x80,
};

struct MessageHeader {
    std::uint8_t version;
    std::uint8_t command;
    std::uint16_t len;
    std::uint32_t data;
    std::uint64_t id;
};
static_assert(sizeof(MessageHeader) == 16);

struct WriteMessage {
    MessageHeader hdr;
    std::uint64_t size;
};
static_assert(sizeof(WriteMessage) == 24);

const char* port = "7427";

// The file being sent (client) or received (server): its descriptor, its
// mapping and its size. The server keeps it across requests and
// connections, as the reference does: a client that leaves without CLOSE
// leaves the server busy.
struct FileState {
    int fd = 0;
    void* addr = nullptr;
    std::uint64_t bytes = 0;
};
FileState file;

void show_usage(const char* program) {
    std::printf("usage 1: %s [options]\n", program);
    std::printf("\t     starts the server application\n");
    std::printf("\t[-p  port_number]\n");
    std::printf("usage 2: %s source server[:destination] [options]\n", program);
    std::printf("\t     source - file name and path\n");
    std::printf("\t     server - name or address\n");
    std::printf("\t     destination - file name and path\n");
    std::printf("\t[-p  port_number]\n");
    std::exit(1);
}

// Receives exactly `len` bytes unless the stream ends or fails first;
// returns what rrecv last returned then (0 or -1), else `len`.
ssize_t recv_all(int rs, void* buf, std::size_t len) {
    auto* bytes = static_cast<char*>(buf);
    for (std::size_t offset = 0; offset < len;) {
        ssize_t ret = rrecv(rs, bytes + offset, len - offset, 0);
        if (ret <= 0)
            return ret;
        offset += ret;
    }
    return static_cast<ssize_t>(len);
}

int recv_header(int rs, MessageHeader& hdr) {
    if (recv_all(rs, &hdr, sizeof hdr) != static_cast<ssize_t>(sizeof hdr))
        return -1;
    if (hdr.version || hdr.len < sizeof hdr) {
        std::printf("invalid version %d or length %d\n", hdr.version, hdr.len);
        return -1;
    }
    return sizeof hdr;
}

// The status in the reply to `cmd`, or -1 when the reply is missing or
// malformed.
int get_response(int rs, MessageHeader& msg, std::uint8_t cmd) {
    int ret = recv_header(rs, msg);
    if (ret != static_cast<int>(sizeof msg))
        return ret;
    if (msg.len != sizeof msg || msg.command != (cmd | kResponse)) {
        std::printf("invalid length %d or bad command response %x:%x\n", msg.len, msg.command, cmd | kResponse);
        return -1;
    }
    return static_cast<int>(msg.data);
}

void send_response(int rs, const MessageHeader& msg, std::uint32_t status) {
    MessageHeader resp{};
    resp.command = msg.command | kResponse;
    resp.len = sizeof resp;
    resp.data = status;
    resp.id = msg.id;
    rsend(rs, &resp, sizeof resp, 0);
}

// ---------------------------------------------------------------- server

int server_listen() {
    addrinfo hints{};
    hints.ai_flags = AI_PASSIVE;
    addrinfo* res;
    int ret = getaddrinfo(nullptr, port, &hints, &res);
    if (ret) {
        std::printf("getaddrinfo failed: %s\n", gai_strerror(ret));
        return ret;
    }
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, &freeaddrinfo);

    int rs = stream::SocketOps(true).open(res->ai_family, res->ai_socktype, res->ai_protocol);
    if (rs < 0)
        return rs;

    int val = 1;
    if (rsetsockopt(rs, SOL_SOCKET, SO_REUSEADDR, &val, sizeof val)) {
        std::perror("rsetsockopt failed");
    } else if (rbind(rs, res->ai_addr, res->ai_addrlen)) {
        std::perror("rbind failed");
    } else if (rlisten(rs, 1)) {
        std::perror("rlisten failed");
    } else {
        return rs;
    }
    ret = -1;
    rclose(rs);
    return ret;
}

int server_open(int rs, const MessageHeader& msg) {
    std::printf("opening: ");
    std::fflush(nullptr);

    int ret = 0;
    if (file.addr || file.fd > 0) {
        std::printf("cannot open another file\n");
        ret = EBUSY;
    } else {
        std::size_t len = msg.len - sizeof msg;
        std::vector<char> path(len + 1, '\0');
        ssize_t got = recv_all(rs, path.data(), len);
        if (got != static_cast<ssize_t>(len)) {
            std::printf("error receiving path\n");
            ret = static_cast<int>(got);
        } else {
            std::printf("%s, ", path.data());
            std::fflush(nullptr);
            file.fd = open(path.data(), O_RDWR | O_CREAT | O_TRUNC, msg.data);
            if (file.fd < 0) {
                std::printf("unable to open destination file\n");
                ret = errno;
            }
        }
    }
    send_response(rs, msg, ret);
    return ret;
}

void server_close(int rs, const MessageHeader& msg) {
    std::printf("closing...");
    std::fflush(nullptr);
    send_response(rs, msg, 0);

    if (file.addr) {
        munmap(file.addr, file.bytes);
        file.addr = nullptr;
    }
    if (file.fd > 0) {
        close(file.fd);
        file.fd = 0;
    }
    std::printf("done\n");
}

int server_write(int rs, const MessageHeader& msg) {
    int ret;

    std::printf("transferring");
    std::fflush(nullptr);
    if (file.fd <= 0) {
        std::printf("...file not opened\n");
        ret = EINVAL;
    } else if (msg.len != sizeof(WriteMessage)) {
        std::printf("...invalid message length %d\n", msg.len);
        ret = EINVAL;
    } else if ((ret = static_cast<int>(recv_all(rs, &file.bytes, sizeof file.bytes))) !=
               static_cast<int>(sizeof file.bytes)) {
        // the stream ended: answer with what rrecv said
    } else if ((ret = ftruncate(file.fd, file.bytes))) {
        // answer -1
    } else {
        file.addr = mmap(nullptr, file.bytes, PROT_WRITE, MAP_SHARED, file.fd, 0);
        if (file.addr == MAP_FAILED) {
            file.addr = nullptr;
            std::printf("...error mapping file\n");
            ret = errno;
        } else {
            std::printf("...%lld bytes...", static_cast<long long>(file.bytes));
            std::fflush(nullptr);
            ssize_t len = recv_all(rs, file.addr, file.bytes);
            ret = 0;
            if (len != static_cast<ssize_t>(file.bytes)) {
                std::printf("...error receiving data\n");
                ret = static_cast<int>(len);
            }
        }
    }
    send_response(rs, msg, ret);
    return ret;
}

void server_process(int rs) {
    MessageHeader msg;
    int ret;
    do {
        if (recv_header(rs, msg) != static_cast<int>(sizeof msg))
            break;
        switch (msg.command) {
        case kOpen: ret = server_open(rs, msg); break;
        case kClose:
            server_close(rs, msg);
            ret = 0;
            break;
        case kWrite: ret = server_write(rs, msg); break;
        default:
            send_response(rs, msg, EINVAL);
            ret = -1;
            break;
        }
    } while (!ret);
}

const char* peer_text(const sockaddr_storage& addr) {
    static char text[32];
    text[0] = '\0';
    if (addr.ss_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, text, sizeof text);
    else if (addr.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, text, sizeof text);
    return text;
}

int server_run() {
    int lrs = server_listen();
    if (lrs < 0)
        return lrs;

    for (;;) {
        sockaddr_storage addr{};
        socklen_t len = sizeof addr;
        std::printf("waiting for connection...");
        std::fflush(nullptr);
        int rs = raccept(lrs, reinterpret_cast<sockaddr*>(&addr), &len);
        if (rs < 0) {
            // The reference would go on with a bad socket and
            // spin; stop instead.
            std::perror("raccept");
            rclose(lrs);
            return -1;
        }

        std::printf("client: %s\n", peer_text(addr));
        server_process(rs);

        rshutdown(rs, SHUT_RDWR);
        rclose(rs);
    }
}

// ---------------------------------------------------------------- client

struct ClientArgs {
    const char* src_file;
    const char* dst_addr;
    const char* dst_file;
};

int client_connect(const ClientArgs& args) {
    addrinfo* res;
    int ret = getaddrinfo(args.dst_addr, port, nullptr, &res);
    if (ret) {
        std::printf("getaddrinfo failed: %s\n", gai_strerror(ret));
        return ret;
    }
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, &freeaddrinfo);

    int rs = stream::SocketOps(true).open(res->ai_family, res->ai_socktype, res->ai_protocol);
    if (rs < 0)
        return rs;

    ret = rconnect(rs, res->ai_addr, res->ai_addrlen);
    if (ret) {
        std::perror("rconnect failed\n");
        rclose(rs);
        return ret;
    }
    return rs;
}

int client_open(int rs, const ClientArgs& args) {
    std::printf("opening...");
    std::fflush(nullptr);
    file.fd = open(args.src_file, O_RDONLY);
    if (file.fd < 0)
        return file.fd;

    auto fail = [](int ret, bool mapped) {
        if (mapped)
            munmap(file.addr, file.bytes);
        close(file.fd);
        return ret;
    };

    struct stat stats;
    int ret = fstat(file.fd, &stats);
    if (ret < 0)
        return fail(ret, false);

    file.bytes = static_cast<std::uint64_t>(stats.st_size);
    file.addr = mmap(nullptr, file.bytes, PROT_READ, MAP_SHARED, file.fd, 0);
    if (file.addr == MAP_FAILED)
        return fail(errno, false);

    // The path with at least one NUL, padded to a multiple of 8.
    std::uint32_t path_len = (static_cast<std::uint32_t>(std::strlen(args.dst_file)) + 8) & 0xFFFFFFF8;
    std::vector<char> msg(sizeof(MessageHeader) + path_len, '\0');
    MessageHeader hdr{};
    hdr.command = kOpen;
    hdr.len = static_cast<std::uint16_t>(msg.size());
    hdr.data = static_cast<std::uint32_t>(stats.st_mode);
    std::memcpy(msg.data(), &hdr, sizeof hdr);
    std::memcpy(msg.data() + sizeof hdr, args.dst_file, std::strlen(args.dst_file));

    ret = static_cast<int>(rsend(rs, msg.data(), hdr.len, 0));
    if (ret != hdr.len)
        return fail(ret, true);

    ret = get_response(rs, hdr, kOpen);
    if (ret)
        return fail(ret, true);
    return 0;
}

int client_start_write(int rs) {
    std::printf("transferring");
    std::fflush(nullptr);
    WriteMessage msg{};
    msg.hdr.command = kWrite;
    msg.hdr.len = sizeof msg;
    msg.size = file.bytes;

    int ret = static_cast<int>(rsend(rs, &msg, sizeof msg, 0));
    if (ret != msg.hdr.len)
        return ret;
    return 0;
}

int client_close(int rs) {
    std::printf("closing...");
    std::fflush(nullptr);
    MessageHeader msg{};
    msg.command = kClose;
    msg.len = sizeof msg;
    int ret = static_cast<int>(rsend(rs, &msg, msg.len, 0));
    if (ret == msg.len) {
        ret = get_response(rs, msg, kClose);
        if (!ret)
            std::printf("done\n");
    }
    munmap(file.addr, file.bytes);
    close(file.fd);
    return ret;
}

void show_perf(const timeval& start, const timeval& end) {
    float usec = (end.tv_sec - start.tv_sec) * 1000000 + (end.tv_usec - start.tv_usec);
    std::printf("%lld bytes in %.2f seconds = %.2f Gb/sec\n", static_cast<long long>(file.bytes), usec / 1000000.,
                (file.bytes * 8) / (1000. * usec));
}

int client_run(const ClientArgs& args) {
    int rs = client_connect(args);
    if (rs < 0)
        return rs;

    timeval start{}, end{};
    int ret = client_open(rs, args);
    if (!ret) {
        ret = client_start_write(rs);
        if (!ret) {
            std::printf("...");
            std::fflush(nullptr);
            gettimeofday(&start, nullptr);
            ssize_t len = rsend(rs, file.addr, file.bytes, 0);
            if (len == static_cast<ssize_t>(file.bytes)) {
                MessageHeader ack;
                ret = get_response(rs, ack, kWrite);
            } else {
                ret = static_cast<int>(len);
            }
            gettimeofday(&end, nullptr);
        }
        client_close(rs);
    }
    rshutdown(rs, SHUT_RDWR);
    rclose(rs);
    if (!ret)
        show_perf(start, end);
    return ret;
}

void server_opts(int argc, char** argv) {
    int op;
    while ((op = getopt(argc, argv, "p:")) != -1) {
        if (op == 'p')
            port = optarg;
        else
            show_usage(argv[0]);
    }
}

ClientArgs client_opts(int argc, char** argv) {
    if (argc < 3)
        show_usage(argv[0]);

    ClientArgs args{argv[1], argv[2], nullptr};
    // server[:destination]; the destination defaults to the source path.
    if (char* colon = std::strchr(argv[2], ':')) {
        *colon = '\0';
        args.dst_file = colon + 1;
    } else {
        args.dst_file = args.src_file;
    }

    int op;
    while ((op = getopt(argc, argv, "p:")) != -1) {
        if (op == 'p')
            port = optarg;
        else
            show_usage(argv[0]);
    }
    return args;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 1 || argv[1][0] == '-') {
        server_opts(argc, argv);
        return server_run();
    }
    ClientArgs args = client_opts(argc, argv);
    return client_run(args);
}
