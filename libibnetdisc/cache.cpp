// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// The fabric cache file (ibnetdiscover --cache / --load-cache, ibcacheedit).
// All integers little endian:
//   header  magic 0x8FE7832B, version 1, node count, port count (u32 each),
//           from-node GUID (u64), max hops discovered (u32)          28 bytes
//   node    smalid u16, smalmc u8, smaenhsp0 u8, SwitchInfo[64], GUID u64,
//           type u8, numports u8, NodeInfo[64], NodeDescription[64],
//           stored port count u8 (207 bytes), then per stored port:
//           port GUID u64, port number u8
//   port    GUID u64, portnum u8, ext portnum u8, base LID u16, LMC u8,
//           PortInfo[64], owner node GUID u64, has-peer u8, peer port
//           GUID u64, peer port number u8                          95 bytes
// Nodes come in fabric->nodes order, ports in port hash order.  A loaded
// fabric is rebuilt in the order the reference rebuilds it, so that tools
// print the same thing from either library's cache.
#include "internal.h"
#include "util/c_entry.h"
#include "util/unique_fd.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace ibnd {
namespace {

constexpr uint32_t kMagic = 0x8FE7832B;
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderLen = 28;
constexpr size_t kNodeLen = 15 + 3 * IB_SMP_DATA_SIZE;
constexpr size_t kKeyLen = 9;
constexpr size_t kPortLen = 31 + IB_SMP_DATA_SIZE;
constexpr off_t kCountOffset = 8;

// ---- reading -------------------------------------------------------------

class Reader {
public:
    explicit Reader(std::span<const uint8_t> b) : buf_(b) {}
    // Takes n bytes or reports a short read.
    const uint8_t* take(size_t n) {
        if (buf_.size() - pos_ < n) {
            IBND_DBG(cache, 166, "read: read short\n");
            return nullptr;
        }
        const uint8_t* p = buf_.data() + pos_;
        pos_ += n;
        return p;
    }

private:
    std::span<const uint8_t> buf_;
    size_t pos_ = 0;
};

struct Cursor {
    const uint8_t* p;
    uint8_t u8() { return *p++; }
    uint16_t u16() {
        uint16_t v = uint16_t(p[0] | p[1] << 8);
        p += 2;
        return v;
    }
    uint32_t u32() {
        uint32_t v = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
        p += 4;
        return v;
    }
    uint64_t u64() {
        uint64_t lo = u32();
        uint64_t hi = u32();
        return lo | hi << 32;
    }
    void bytes(void* dst, size_t n) {
        std::memcpy(dst, p, n);
        p += n;
    }
};

struct PortKey {
    uint64_t guid;
    uint8_t portnum;
};

struct NodeRec {
    ibnd_node_t* node;  // owned until moved into the fabric
    std::vector<PortKey> keys;
    bool placed = false;
};

struct PortRec {
    ibnd_port_t* port;  // owned until placed into a node
    uint64_t node_guid;
    bool has_peer;
    PortKey peer;
    bool placed = false;
};

// A node or port parsed but not yet recorded in the Image.
struct NodeFree {
    void operator()(ibnd_node_t* n) const { free_node(n); }
};
struct PortFree {
    void operator()(ibnd_port_t* p) const { std::free(p); }
};

// Everything parsed from the image, in file order.  Lookups find the
// newest record with a key, like the reference's chained hash tables.
struct Image {
    std::vector<NodeRec> nodes;
    std::vector<PortRec> ports;
    uint64_t from_guid = 0;
    std::unordered_map<uint64_t, size_t> node_index;
    std::unordered_map<uint64_t, size_t> port_index[256];

    ~Image() {
        for (auto& n : nodes)
            if (!n.placed)
                free_node(n.node);
        for (auto& p : ports)
            if (!p.placed)
                std::free(p.port);
    }

    NodeRec* find_node(uint64_t guid) {
        auto it = node_index.find(guid);
        return it == node_index.end() ? nullptr : &nodes[it->second];
    }
    PortRec* find_port(const PortKey& k) {
        auto& idx = port_index[k.portnum];
        auto it = idx.find(k.guid);
        return it == idx.end() ? nullptr : &ports[it->second];
    }
    void index() {
        for (size_t i = 0; i < nodes.size(); ++i)
            node_index[nodes[i].node->guid] = i;
        for (size_t i = 0; i < ports.size(); ++i)
            port_index[ports[i].port->portnum & 0xff][ports[i].port->guid] = i;
    }
};

bool read_node(Reader& in, Image& img) {
    const uint8_t* raw = in.take(kNodeLen);
    if (!raw)
        return false;
    std::unique_ptr<ibnd_node_t, NodeFree> owned(static_cast<ibnd_node_t*>(std::calloc(1, sizeof(ibnd_node_t))));
    ibnd_node_t* node = owned.get();
    if (!node) {
        IBND_DBG(cache, 324, "OOM: node\n");
        return false;
    }
    Cursor c{raw};
    node->smalid = c.u16();
    node->smalmc = c.u8();
    node->smaenhsp0 = c.u8();
    c.bytes(node->switchinfo, IB_SMP_DATA_SIZE);
    node->guid = c.u64();
    node->type = c.u8();
    node->numports = c.u8();
    c.bytes(node->info, IB_SMP_DATA_SIZE);
    c.bytes(node->nodedesc, IB_SMP_DATA_SIZE);
    unsigned nkeys = c.u8();
    NodeRec rec{node, {}};
    if (nkeys) {
        const uint8_t* kraw = in.take(kKeyLen * nkeys);
        if (!kraw)
            return false;
        Cursor k{kraw};
        for (unsigned i = 0; i < nkeys; ++i) {
            uint64_t g = k.u64();
            rec.keys.push_back({g, k.u8()});
        }
    }
    img.nodes.push_back(std::move(rec));
    owned.release();  // the Image owns it now
    return true;
}

bool read_port(Reader& in, Image& img) {
    const uint8_t* raw = in.take(kPortLen);
    if (!raw)
        return false;
    std::unique_ptr<ibnd_port_t, PortFree> owned(static_cast<ibnd_port_t*>(std::calloc(1, sizeof(ibnd_port_t))));
    ibnd_port_t* port = owned.get();
    if (!port) {
        IBND_DBG(cache, 425, "OOM: port\n");
        return false;
    }
    Cursor c{raw};
    PortRec rec{port, 0, false, {0, 0}};
    port->guid = c.u64();
    port->portnum = c.u8();
    port->ext_portnum = c.u8();
    port->base_lid = c.u16();
    port->lmc = c.u8();
    c.bytes(port->info, IB_SMP_DATA_SIZE);
    rec.node_guid = c.u64();
    rec.has_peer = c.u8() != 0;
    rec.peer.guid = c.u64();
    rec.peer.portnum = c.u8();
    img.ports.push_back(rec);
    owned.release();  // the Image owns it now
    return true;
}

// Moves nodes and ports into the fabric.  The reference walks its record
// lists newest first and pushes each on the head of the fabric's lists, so
// the fabric's node list ends up in file order.
bool rebuild(Image& img, Fabric* f) {
    ibnd_fabric_t* pub = &f->pub;
    for (auto it = img.nodes.rbegin(); it != img.nodes.rend(); ++it) {
        ibnd_node_t* node = it->node;
        node->next = pub->nodes;
        pub->nodes = node;
        it->placed = true;  // the fabric owns it from here on
        if (!hash_add_node(pub, node))
            IBND_DBG(cache, 548, "Error Occurred when trying to insert new node guid 0x%016lx to DB\n", node->guid);
        type_list_add(pub, node);
        node->ports =
            static_cast<ibnd_port_t**>(std::calloc(static_cast<size_t>(node->numports) + 1, sizeof(ibnd_port_t*)));
        if (!node->ports) {
            IBND_DBG(cache, 561, "OOM: node->ports\n");
            return false;
        }
        for (const PortKey& k : it->keys) {
            PortRec* pr = img.find_port(k);
            if (!pr) {
                IBND_DBG(cache, 499, "Cache invalid: cannot find port\n");
                return false;
            }
            if (pr->placed) {
                IBND_DBG(cache, 504, "Cache invalid: duplicate port discovered\n");
                return false;
            }
            int pn = pr->port->portnum;
            if (pn > node->numports || node->ports[pn]) {
                // the reference writes past the array here; we refuse
                IBND_DBG(cache, 504, "Cache invalid: duplicate port discovered\n");
                return false;
            }
            node->ports[pn] = pr->port;
            pr->placed = true;
            if (!hash_add_port(pub, pr->port))
                IBND_DBG(cache, 517, "Error Occurred when trying to insert new port guid 0x%016lx to DB\n",
                         pr->port->guid);
        }
    }
    for (auto it = img.ports.rbegin(); it != img.ports.rend(); ++it) {
        NodeRec* owner = img.find_node(it->node_guid);
        if (!owner) {
            IBND_DBG(cache, 594, "Cache invalid: cannot find node\n");
            return false;
        }
        if (!it->placed) {
            // A port no node lists: the reference links it and leaves it
            // dangling; we do the same but keep it for ibnd_destroy_fabric.
            f->extra->orphans.push_back(it->port);
            it->placed = true;
        } else if (owner->node->numports < it->port->portnum || owner->node->ports[it->port->portnum] != it->port) {
            // listed by one node, owned by another: no discovery writes
            // that, and applications rely on port->node->ports[n] == port
            IBND_DBG(cache, 594, "Cache invalid: cannot find node\n");
            return false;
        }
        it->port->node = owner->node;
        if (it->has_peer) {
            PortRec* peer = img.find_port(it->peer);
            if (!peer) {
                IBND_DBG(cache, 604, "Cache invalid: cannot find remote port\n");
                return false;
            }
            it->port->remoteport = peer->port;
        } else {
            it->port->remoteport = nullptr;
        }
        lid_add_port(f, it->port);
    }
    return true;
}

// ---- writing -------------------------------------------------------------

class Writer {
public:
    void u8(uint8_t v) { b_.push_back(v); }
    void u16(uint16_t v) {
        u8(uint8_t(v));
        u8(uint8_t(v >> 8));
    }
    void u32(uint32_t v) {
        u16(uint16_t(v));
        u16(uint16_t(v >> 16));
    }
    void u64(uint64_t v) {
        u32(uint32_t(v));
        u32(uint32_t(v >> 32));
    }
    void bytes(const void* p, size_t n) {
        auto* c = static_cast<const uint8_t*>(p);
        b_.insert(b_.end(), c, c + n);
    }
    size_t size() const { return b_.size(); }
    void patch8(size_t at, uint8_t v) { b_[at] = v; }
    void patch32(size_t at, uint32_t v) {
        for (int i = 0; i < 4; ++i)
            b_[at + i] = uint8_t(v >> (8 * i));
    }
    const std::vector<uint8_t>& data() const { return b_; }

private:
    std::vector<uint8_t> b_;
};

// The whole file, or false (with the reference's debug line) when it cannot
// be opened or read.
bool read_file(const char* file, std::vector<uint8_t>& buf) {
    rdma::UniqueFd in(open(file, O_RDONLY));
    if (!in) {
        IBND_DBG(cache, 636, "open: %s\n", std::strerror(errno));
        return false;
    }
    uint8_t chunk[65536];
    for (;;) {
        ssize_t r = read(in.get(), chunk, sizeof(chunk));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            IBND_DBG(cache, 156, "read: %s\n", std::strerror(errno));
            return false;
        }
        if (r == 0)
            return true;
        buf.insert(buf.end(), chunk, chunk + r);
    }
}

bool write_all(int fd, const uint8_t* p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            IBND_DBG(cache, 708, "write: %s\n", std::strerror(errno));
            return false;
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
    return true;
}

}  // namespace

ibnd_fabric_t* load_fabric_image(std::span<const uint8_t> image) {
    Reader in(image);
    const uint8_t* hdr = in.take(kHeaderLen);
    if (!hdr)
        return nullptr;
    Cursor c{hdr};
    if (c.u32() != kMagic) {
        IBND_DBG(cache, 233, "invalid fabric cache file\n");
        return nullptr;
    }
    if (c.u32() != kVersion) {
        IBND_DBG(cache, 240, "invalid fabric cache version\n");
        return nullptr;
    }
    uint32_t node_count = c.u32();
    uint32_t port_count = c.u32();
    Image img;
    img.from_guid = c.u64();
    uint32_t maxhops = c.u32();

    for (uint32_t i = 0; i < node_count; ++i)
        if (!read_node(in, img))
            return nullptr;
    for (uint32_t i = 0; i < port_count; ++i)
        if (!read_port(in, img))
            return nullptr;

    img.index();
    NodeRec* from = img.find_node(img.from_guid);
    if (!from) {
        IBND_DBG(cache, 672, "Cache invalid: cannot find from node\n");
        return nullptr;
    }
    FabricPtr f = new_fabric();
    f->pub.maxhops_discovered = maxhops;
    f->pub.from_node = from->node;
    bool ok = rebuild(img, f.get());
    if (ok && group_nodes(&f->pub) == 0)
        return &f.release()->pub;
    return nullptr;
}

}  // namespace ibnd

using namespace ibnd;

// exported: the version script decides what leaves the library. Both go
// through the C-entry barrier (util/c_entry.h): out of memory, loading
// returns NULL and caching -1, errno ENOMEM, with nothing leaked and no file
// left behind (the image is complete before the file is touched).
#pragma GCC visibility push(default)
extern "C" {

ibnd_fabric_t* ibnd_load_fabric(const char* file, unsigned int /*flags*/) {
    return rdma::entry_null([&]() -> ibnd_fabric_t* {
        if (!file) {
            IBND_DBG(cache, 631, "file parameter NULL\n");
            return nullptr;
        }
        std::vector<uint8_t> buf;
        if (!read_file(file, buf))
            return nullptr;
        return load_fabric_image(buf);
    });
}

int ibnd_cache_fabric(ibnd_fabric_t* fabric, const char* file, unsigned int flags) {
    return rdma::entry_minus_one([&] {
        if (!fabric) {
            IBND_DBG(cache, 892, "fabric parameter NULL\n");
            return -1;
        }
        if (!file) {
            IBND_DBG(cache, 897, "file parameter NULL\n");
            return -1;
        }
        if (!fabric->from_node)
            return -1;
        Writer w;
        w.u32(kMagic);
        w.u32(kVersion);
        w.u32(0);  // node and port counts, filled in below
        w.u32(0);
        w.u64(fabric->from_node->guid);
        w.u32(fabric->maxhops_discovered);

        uint32_t nodes = 0, ports = 0;
        for (ibnd_node_t* n = fabric->nodes; n; n = n->next, ++nodes) {
            w.u16(n->smalid);
            w.u8(n->smalmc);
            w.u8(static_cast<uint8_t>(n->smaenhsp0));
            w.bytes(n->switchinfo, IB_SMP_DATA_SIZE);
            w.u64(n->guid);
            w.u8(static_cast<uint8_t>(n->type));
            w.u8(static_cast<uint8_t>(n->numports));
            w.bytes(n->info, IB_SMP_DATA_SIZE);
            w.bytes(n->nodedesc, IB_SMP_DATA_SIZE);
            size_t count_at = w.size();
            w.u8(0);
            uint8_t stored = 0;
            for (int p = 0; n->ports && p <= n->numports; ++p)
                if (ibnd_port_t* port = n->ports[p]) {
                    w.u64(port->guid);
                    w.u8(static_cast<uint8_t>(port->portnum));
                    ++stored;
                }
            w.patch8(count_at, stored);
        }
        for (int i = 0; i < HTSZ; ++i)
            for (ibnd_port_t* p = fabric->portstbl[i]; p; p = p->htnext, ++ports) {
                w.u64(p->guid);
                w.u8(static_cast<uint8_t>(p->portnum));
                w.u8(static_cast<uint8_t>(p->ext_portnum));
                w.u16(p->base_lid);
                w.u8(p->lmc);
                w.bytes(p->info, IB_SMP_DATA_SIZE);
                w.u64(p->node ? p->node->guid : 0);
                if (p->remoteport) {
                    w.u8(1);
                    w.u64(p->remoteport->guid);
                    w.u8(static_cast<uint8_t>(p->remoteport->portnum));
                } else {
                    w.u8(0);
                    w.u64(0);
                    w.u8(0);
                }
            }
        w.patch32(kCountOffset, nodes);
        w.patch32(kCountOffset + 4, ports);

        struct stat st;
        if (!(flags & IBND_CACHE_FABRIC_FLAG_NO_OVERWRITE)) {
            if (stat(file, &st) == 0 && unlink(file) < 0) {
                IBND_DBG(cache, 904, "error removing '%s': %s\n", file, std::strerror(errno));
                return -1;
            }
        } else if (stat(file, &st) == 0) {
            IBND_DBG(cache, 912, "file '%s' already exists\n", file);
            return -1;
        }
        int fd = open(file, O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd < 0) {
            IBND_DBG(cache, 918, "open: %s\n", std::strerror(errno));
            return -1;
        }
        if (!write_all(fd, w.data().data(), w.size())) {
            unlink(file);
            close(fd);
            return -1;
        }
        if (close(fd) < 0) {
            IBND_DBG(cache, 953, "close: %s\n", std::strerror(errno));
            unlink(file);
            return -1;
        }
        return 0;
    });
}

}  // extern "C"
#pragma GCC visibility pop
