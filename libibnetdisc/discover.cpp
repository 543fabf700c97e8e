// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Subnet discovery: a breadth-first walk over directed routes.
//
// Every node is reached by a NodeInfo SMP; a new node is then asked for its
// NodeDescription, a switch for SwitchInfo and PortInfo of port 0 and, once
// that arrives, of every port; a CA or router for PortInfo of the port it
// was reached through.  A PortInfo that shows an active link out of a switch
// (or out of the start node) extends the route by that port and asks
// NodeInfo of whatever is on the other side.
//
// The order nodes are found in is visible to applications (node lists, hash
// chains, cache files), so requests are handled strictly in the order they
// were queued, whatever order replies arrive in.  That is the order the
// reference handles them in when the fabric answers in order, which lets us
// keep many more SMPs in flight than it does and still build the same graph.
//
// Hostile replies cannot make the walk endless or unsafe: port numbers are
// checked against the node's port count, routes are at most 63 hops, one
// route is asked for NodeInfo a bounded number of times, and the total number
// of SMPs is capped.
#include "internal.h"
#include "util/c_entry.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <infiniband/umad.h>
#include <string>
#include <unordered_map>

namespace ibnd {
namespace {

using Clock = std::chrono::steady_clock;

constexpr unsigned kDefaultWindow = 16;  // SMPs in flight when max_smps is 0
constexpr unsigned kDefaultTimeoutMs = 1000;
constexpr unsigned kDefaultRetries = 3;
constexpr unsigned kRouteRepeatLimit = 4;  // NodeInfo requests per route
constexpr uint64_t kSmpBudget = 1ull << 24;  // total SMPs, a hostile-fabric cap
constexpr int kPhysLinkUp = 5;
constexpr int kSpeedQdr = 4;
constexpr uint8_t kFdr10 = 0x01;

enum class Kind { node_info, node_desc, switch_info, port_info, mlnx_ext };

struct Request {
    Kind kind;
    ib_portid_t path;
    unsigned mod = 0;
    int mgtclass = IB_SMI_DIRECT_CLASS;
    ibnd_node_t* node = nullptr;  // NodeInfo: the node we came from
    int port_num = 0;  // NodeInfo: its port
    // wire state
    uint32_t trid = 0;
    Clock::time_point deadline;
    bool done = false;
    int umad_status = 0;
    uint8_t mad[IB_MAD_SIZE];
};

unsigned attr_of(Kind k) {
    switch (k) {
    case Kind::node_info: return IB_ATTR_NODE_INFO;
    case Kind::node_desc: return IB_ATTR_NODE_DESC;
    case Kind::switch_info: return IB_ATTR_SWITCH_INFO;
    case Kind::port_info: return IB_ATTR_PORT_INFO;
    case Kind::mlnx_ext: return IB_ATTR_MLNX_EXT_PORT_INFO;
    }
    return 0;
}

std::string route_key(const ib_portid_t& p) {
    std::string k(reinterpret_cast<const char*>(&p.lid), sizeof(p.lid));
    int cnt = p.drpath.cnt;
    if (cnt < 0)
        cnt = 0;
    if (cnt > 63)
        cnt = 63;
    k.append(reinterpret_cast<const char*>(p.drpath.p), static_cast<size_t>(cnt) + 1);
    return k;
}

bool mlnx_ext_capable(const ibnd_node_t* node) {
    auto* info = const_cast<uint8_t*>(node->info);
    auto devid = static_cast<uint16_t>(mad_get_field(info, 0, IB_NODE_DEVID_F));
    uint32_t vendor = mad_get_field(info, 0, IB_NODE_VENDORID_F);
    bool bull = vendor == 0x119f;
    // switches: SwitchX and Switch-IB families, Bull's rebadged ones
    if ((devid >= 0xc738 && devid <= 0xc73b) || devid == 0xcb20 || devid == 0xcf08 ||
        (bull && (devid == 0x1b02 || devid == 0x1b50 || devid == 0x1ba0 || (devid >= 0x1bd0 && devid <= 0x1bd5))))
        return true;
    // CAs: ConnectX-3 to ConnectX-4 generation, Bull's rebadged ones
    if ((devid >= 0x1003 && devid <= 0x1017) ||
        (bull &&
         (devid == 0x1b33 || devid == 0x1b73 || devid == 0x1b40 || devid == 0x1b41 || devid == 0x1b60 ||
          devid == 0x1b61 || devid == 0x1b83 || devid == 0x1b93 || devid == 0x1b94 || devid == 0x1bb4 ||
          devid == 0x1bb5 || devid == 0x1bc4)))
        return true;
    return false;
}

class Walk {
public:
    Walk(Fabric* f, const ibnd_config& cfg, const ib_portid_t& self, unsigned initial_hops)
        : f_(f), cfg_(cfg), self_(self), initial_hops_(initial_hops) {}
    ~Walk() {
        if (fd_ < 0)
            return;
        // Closing the port drops the agents in the kernel; a MAD layer
        // that counts agents per process (umad2sim) needs them given back.
        if (dr_agent_ >= 0)
            umad_unregister(fd_, dr_agent_);
        if (smi_agent_ >= 0)
            umad_unregister(fd_, smi_agent_);
        umad_close_port(fd_);
    }

    int open(char* ca_name, int ca_port) {
        if (umad_init() < 0) {
            IBND_ERR(smp, 213, "umad_init failed\n");
            return -1;
        }
        fd_ = umad_open_port(ca_name, ca_port);
        if (fd_ < 0) {
            IBND_ERR(smp, 219, "can't open UMAD port (%s:%d)\n", ca_name, ca_port);
            return -1;
        }
        smi_agent_ = umad_register(fd_, IB_SMI_CLASS, 1, 0, nullptr);
        if (smi_agent_ < 0) {
            IBND_ERR(smp, 225, "Failed to register SMI agent on (%s:%d)\n", ca_name, ca_port);
            return -1;
        }
        dr_agent_ = umad_register(fd_, IB_SMI_DIRECT_CLASS, 1, 0, nullptr);
        if (dr_agent_ < 0) {
            IBND_ERR(smp, 232, "Failed to register SMI_DIRECT agent on (%s:%d)\n", ca_name, ca_port);
            return -1;
        }
        umad_len_ = umad_size() + IB_MAD_SIZE;
        return 0;
    }

    // Runs the walk from `from`; 0 when it completed.
    int run(const ib_portid_t& from) {
        IBND_DBG(discover, 821, "from %s\n", portid2str(const_cast<ib_portid_t*>(&from)));
        query_node_info(from, nullptr, 0);
        int rc = loop();
        if (rc) {
            if (!queue_.empty())
                IBND_ERR(smp, 255, "outstanding SMP's\n");
            else if (!wire_.empty())
                IBND_ERR(smp, 262, "outstanding SMP's on wire\n");
        }
        return rc;
    }

    unsigned smps_sent() const { return sent_; }

private:
    // ---- engine ----

    void enqueue(Kind kind, const ib_portid_t& path, unsigned mod, ibnd_node_t* node = nullptr, int port_num = 0) {
        if (queued_total_ >= kSmpBudget)
            return;
        ++queued_total_;
        auto r = std::make_unique<Request>();
        r->kind = kind;
        r->path = path;
        r->mod = mod;
        r->node = node;
        r->port_num = port_num;
        if (path.lid <= 0 || path.drpath.drslid == 0xffff || path.drpath.drdlid == 0xffff)
            r->mgtclass = IB_SMI_DIRECT_CLASS;
        else
            r->mgtclass = IB_SMI_CLASS;
        queue_.push_back(std::move(r));
    }

    int send(Request& r) {
        std::vector<uint8_t>& umad = sendbuf_;
        umad.assign(umad_len_, 0);
        ib_rpc_t rpc;
        std::memset(&rpc, 0, sizeof(rpc));
        rpc.mgtclass = r.mgtclass;
        rpc.method = IB_MAD_METHOD_GET;
        rpc.attr.id = attr_of(r.kind);
        rpc.attr.mod = r.mod;
        rpc.timeout = static_cast<int>(cfg_.timeout_ms);
        rpc.datasz = IB_SMP_DATA_SIZE;
        rpc.dataoffs = IB_SMP_DATA_OFFS;
        rpc.trid = mad_trid();
        rpc.mkey = cfg_.mkey;
        ib_portid_t path = r.path;
        int rc = mad_build_pkt(umad.data(), &rpc, &path, nullptr, nullptr);
        if (rc < 0) {
            IBND_ERR(smp, 85, "mad_build_pkt failed; %d\n", rc);
            return rc;
        }
        int agent = r.mgtclass == IB_SMI_CLASS ? smi_agent_ : dr_agent_;
        // The kernel times the request out and retries it, as for the
        // reference; the deadline below only covers a MAD layer that never
        // answers at all (a simulator).
        rc = umad_send(fd_, agent, umad.data(), IB_MAD_SIZE, static_cast<int>(cfg_.timeout_ms),
                       static_cast<int>(cfg_.retries));
        if (rc < 0) {
            IBND_ERR(smp, 91, "send failed; %d\n", rc);
            return rc;
        }
        r.trid = static_cast<uint32_t>(rpc.trid);
        r.deadline = Clock::now() + std::chrono::milliseconds(uint64_t(cfg_.timeout_ms) * (cfg_.retries + 1) + 100);
        ++sent_;
        ++inflight_;
        by_trid_[r.trid] = &r;
        return 0;
    }

    // No answer, not even the kernel's timeout: the request failed.
    int expire(Request& r) {
        by_trid_.erase(r.trid);
        --inflight_;
        r.done = true;
        r.umad_status = ETIMEDOUT;
        return 0;
    }

    int receive(int timeout_ms) {
        std::vector<uint8_t>& buf = recvbuf_;
        buf.assign(umad_len_, 0);
        int len = IB_MAD_SIZE;
        int rc = umad_recv(fd_, buf.data(), &len, timeout_ms);
        if (rc == -ETIMEDOUT || rc == -EINTR || rc == -EAGAIN)
            return 0;
        if (rc == -ENOSPC) {
            // An oversized (RMPP) MAD is no SMP of ours; the kernel keeps it
            // queued until it is read whole, so read it to drop it.
            if (len > IB_MAD_SIZE && len < (1 << 20)) {
                std::vector<uint8_t> big(umad_size() + static_cast<size_t>(len), 0);
                umad_recv(fd_, big.data(), &len, 0);
            }
            return 0;
        }
        if (rc < 0) {
            IBND_ERR(smp, 168, "umad_recv failed: %d\n", rc);
            return -1;
        }
        auto* mad = static_cast<uint8_t*>(umad_get_mad(buf.data()));
        auto trid = static_cast<uint32_t>(mad_get_field64(mad, 0, IB_MAD_TRID_F));
        auto it = by_trid_.find(trid);
        if (it == by_trid_.end())
            return 0;  // late reply to a request we already resent: drop it
        Request& r = *it->second;
        int status = umad_status(buf.data());
        // MadMethod is the 7-bit method (the response bit is a field of its own)
        if (!status &&
            (mad_get_field(mad, 0, IB_MAD_METHOD_F) != IB_MAD_METHOD_GET ||
             mad_get_field(mad, 0, IB_MAD_ATTRID_F) != attr_of(r.kind)))
            return 0;  // not the answer to this question: wait for one
        by_trid_.erase(it);
        --inflight_;
        r.umad_status = status;
        std::memcpy(r.mad, mad, IB_MAD_SIZE);
        r.done = true;
        return 0;
    }

    int loop() {
        while (true) {
            // Keep the window full before handling anything, so the fabric
            // works on the next requests while we digest replies.
            while (inflight_ < cfg_.max_smps && !queue_.empty()) {
                std::unique_ptr<Request> r = std::move(queue_.front());
                queue_.pop_front();
                if (int rc = send(*r))
                    return rc;
                wire_.push_back(std::move(r));
            }
            if (wire_.empty())
                return 0;
            Request& head = *wire_.front();
            if (head.done) {
                std::unique_ptr<Request> r = std::move(wire_.front());
                wire_.pop_front();
                if (complete(*r) < 0)
                    return -1;
                continue;
            }
            auto now = Clock::now();
            if (now >= head.deadline) {
                if (int rc = expire(head))
                    return rc;
                continue;
            }
            // Deadlines follow send order, so the head's comes first; the
            // others are looked at when they reach the head.
            auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(head.deadline - now);
            if (receive(static_cast<int>(wait.count()) + 1) < 0)
                return -1;
        }
    }

    int complete(Request& r) {
        if (r.umad_status) {
            IBND_ERR(smp, 186, "umad (%s Attr 0x%x:%u) bad status %d; %s\n", portid2str(&r.path), attr_of(r.kind),
                     r.mod, r.umad_status, std::strerror(r.umad_status));
            return r.kind == Kind::mlnx_ext ? mlnx_ext_done(r, false) : 0;
        }
        if (int st = mad_get_field(r.mad, 0, IB_DRSMP_STATUS_F)) {
            IBND_ERR(smp, 193, "mad (%s Attr 0x%x:%u) bad status 0x%x\n", portid2str(&r.path), attr_of(r.kind), r.mod,
                     st);
            return r.kind == Kind::mlnx_ext ? mlnx_ext_done(r, false) : 0;
        }
        uint8_t* data = r.mad + IB_SMP_DATA_OFFS;
        switch (r.kind) {
        case Kind::node_info: return node_info_done(r, data);
        case Kind::node_desc:
            std::memcpy(r.node->nodedesc, data, IB_SMP_DATA_SIZE);
            r.node->nodedesc[IB_SMP_DATA_SIZE] = '\0';
            return 0;
        case Kind::switch_info:
            std::memcpy(r.node->switchinfo, data, IB_SMP_DATA_SIZE);
            r.node->smaenhsp0 = static_cast<int>(mad_get_field(r.node->switchinfo, 0, IB_SW_ENHANCED_PORT0_F));
            return 0;
        case Kind::port_info: return port_info_done(r, data);
        case Kind::mlnx_ext: return mlnx_ext_done(r, true);
        }
        return 0;
    }

    // ---- discovery logic ----

    void query_node_info(const ib_portid_t& path, ibnd_node_t* from, int port) {
        unsigned& seen = route_seen_[route_key(path)];
        if (++seen > kRouteRepeatLimit)
            return;  // a loop the fabric's replies keep feeding us
        IBND_DBG(discover, 612, "Query Node Info; %s\n", portid2str(const_cast<ib_portid_t*>(&path)));
        enqueue(Kind::node_info, path, 0, from, port);
    }

    void query_port_info(const ib_portid_t& path, ibnd_node_t* node, int port) {
        IBND_DBG(discover, 456, "Query Port Info; %s (0x%lx):%d\n", portid2str(const_cast<ib_portid_t*>(&path)),
                 node->guid, port);
        enqueue(Kind::port_info, path, static_cast<unsigned>(port), node);
    }

    bool hops_exhausted() const { return cfg_.max_hops && f_->pub.maxhops_discovered > cfg_.max_hops; }

    // 1 when the route was extended, 0 when the hop limit stops it, -1 when
    // the route is full.
    int extend(ib_portid_t& path, int port) {
        if (hops_exhausted())
            return 0;
        if (path.lid) {
            path.drpath.drslid = static_cast<uint16_t>(self_.lid);
            path.drpath.drdlid = 0xffff;
        }
        if (path.drpath.cnt < 0 || path.drpath.cnt > static_cast<int>(sizeof(path.drpath.p)) - 2) {
            IBND_ERR(discover, 134, "add port %d to DR path failed; %s\n", port, portid2str(&path));
            return -1;
        }
        path.drpath.p[++path.drpath.cnt] = static_cast<uint8_t>(port);
        if (static_cast<unsigned>(path.drpath.cnt) - initial_hops_ > f_->pub.maxhops_discovered)
            f_->pub.maxhops_discovered++;
        return 1;
    }

    int retract(ib_portid_t& path) {
        if (hops_exhausted())
            return 0;
        // stepping back from a start CA towards its switch counts as a hop
        f_->pub.maxhops_discovered++;
        path.drpath.p[path.drpath.cnt] = 0;
        path.drpath.cnt--;
        return 1;
    }

    void debug_port(const ib_portid_t& path, ibnd_port_t* port) {
        if (!debugging())
            return;
        char width[64], speed[64];
        int iwidth = static_cast<int>(mad_get_field(port->info, 0, IB_PORT_LINK_WIDTH_ACTIVE_F));
        int ispeed = static_cast<int>(mad_get_field(port->info, 0, IB_PORT_LINK_SPEED_ACTIVE_F));
        int fdr10 = static_cast<int>(mad_get_field(port->ext_info, 0, IB_MLNX_EXT_PORT_LINK_SPEED_ACTIVE_F));
        // The reference formats the extended speed into the same buffer as
        // the speed, and the speed is written last: both columns show the
        // speed.  Its debug lines are reproduced as printed.
        mad_dump_val(IB_PORT_LINK_WIDTH_ACTIVE_F, width, 64, &iwidth);
        mad_dump_val(IB_PORT_LINK_SPEED_ACTIVE_F, speed, 64, &ispeed);
        IBND_DBG(discover, 184, "portid %s portnum %d: base lid %d state %d physstate %d %s %s %s %s\n",
                 portid2str(const_cast<ib_portid_t*>(&path)), port->portnum, port->base_lid,
                 mad_get_field(port->info, 0, IB_PORT_STATE_F), mad_get_field(port->info, 0, IB_PORT_PHYS_STATE_F),
                 width, speed, (fdr10 & kFdr10) ? "FDR10" : "", speed);
    }

    // LinkSpeedExtActive when the capability mask (port 0's on a switch)
    // says the port has extended speeds.
    static int ext_speed(ibnd_port_t* port) {
        ibnd_node_t* node = port->node;
        uint8_t* cap = port->info;
        if (node->type == IB_NODE_SWITCH) {
            if (!node->ports || !node->ports[0])
                return 0;
            cap = node->ports[0]->info;
        }
        if (mad_get_field(cap, 0, IB_PORT_CAPMASK_F) & 0x4000u)  // IsExtendedSpeedsSupported
            return static_cast<int>(mad_get_field(port->info, 0, IB_PORT_LINK_SPEED_EXT_ACTIVE_F));
        return 0;
    }

    // After a port's info (and Mellanox extended info) is known: follow its
    // link if it leads somewhere new.
    void follow_link(const Request& r, ibnd_node_t* node, ibnd_port_t* port, int port_num) {
        int local_port = static_cast<int>(mad_get_field(port->info, 0, IB_PORT_LOCAL_PORT_F));
        debug_port(r.path, port);
        if (!port_num || static_cast<int>(mad_get_field(port->info, 0, IB_PORT_PHYS_STATE_F)) != kPhysLinkUp)
            return;
        bool through_switch = node->type == IB_NODE_SWITCH && port_num != local_port;
        bool start_port = node == f_->pub.from_node && port_num == f_->pub.from_portnum;
        if (!through_switch && !start_port)
            return;
        ib_portid_t path = r.path;
        int rc = 0;
        if (node->type != IB_NODE_SWITCH && node == f_->pub.from_node && path.drpath.cnt > 1)
            rc = retract(path);
        else if (path.lid == 0 || node->type == IB_NODE_SWITCH)
            rc = extend(path, port_num);  // DR cannot pass through a CA
        if (rc > 0)
            query_node_info(path, node, port_num);
    }

    int node_info_done(const Request& r, uint8_t* info) {
        uint64_t node_guid = mad_get_field64(info, 0, IB_NODE_GUID_F);
        uint64_t port_guid = mad_get_field64(info, 0, IB_NODE_PORT_GUID_F);
        int port_num = static_cast<int>(mad_get_field(info, 0, IB_NODE_LOCAL_PORT_F));

        ibnd_node_t* node = ibnd_find_node_guid(&f_->pub, node_guid);
        bool is_new = !node;
        if (is_new) {
            node = create_node(r.path, info);
            if (!node)
                return -1;
        }
        IBND_DBG(discover, 558, "Found %s node GUID 0x%lx (%s)\n", is_new ? "new" : "old", node->guid,
                 portid2str(const_cast<ib_portid_t*>(&r.path)));
        if (port_num > node->numports) {
            // a reply that contradicts the node's port count: not followed
            IBND_ERR(discover, 239, "Failed to find 0x%lx port %u\n", node->guid, static_cast<unsigned>(port_num));
            return 0;
        }
        ibnd_port_t*& port = node->ports[port_num];
        if (!port) {
            port = static_cast<ibnd_port_t*>(std::calloc(1, sizeof(ibnd_port_t)));
            if (!port)
                return -1;
            port->node = node;
            port->portnum = port_num;
        }
        port->guid = port_guid;

        if (cfg_.show_progress) {
            char type[64];
            mad_dump_node_type(type, sizeof(type), &node->type, sizeof(int));
            std::printf("%s -> %s %s {%016lx} portnum %d lid %d-%d \"%s\"\n",
                        portid2str(const_cast<ib_portid_t*>(&r.path)), is_new ? "new" : "known", type, node->guid,
                        node->type == IB_NODE_SWITCH ? 0 : port->portnum, port->base_lid,
                        port->base_lid + (1 << port->lmc) - 1, node->nodedesc);
        }

        if (!r.node) {
            f_->pub.from_node = node;
            f_->pub.from_portnum = port_num;
        } else {
            ibnd_node_t* rem = r.node;
            ibnd_port_t* rport = r.port_num <= rem->numports ? rem->ports[r.port_num] : nullptr;
            if (!rport) {
                IBND_ERR(discover, 583, "Internal Error; Node(%p) 0x%lx Port %d no port created!?!?!?\n\n",
                         static_cast<void*>(rem), rem->guid, r.port_num);
                return -1;
            }
            IBND_DBG(discover, 505, "linking: 0x%lx %p->%p:%u and 0x%lx %p->%p:%u\n", node->guid,
                     static_cast<void*>(node), static_cast<void*>(port), port->portnum, rem->guid,
                     static_cast<void*>(rem), static_cast<void*>(rport), rport->portnum);
            if (port->remoteport)
                port->remoteport->remoteport = nullptr;
            if (rport->remoteport)
                rport->remoteport->remoteport = nullptr;
            port->remoteport = rport;
            rport->remoteport = port;
        }

        if (is_new) {
            enqueue(Kind::node_desc, r.path, 0, node);
            if (node->type == IB_NODE_SWITCH) {
                enqueue(Kind::switch_info, r.path, 0, node);
                query_port_info(r.path, node, 0);
            }
        }
        if (node->type != IB_NODE_SWITCH)
            query_port_info(r.path, node, port_num);
        return 0;
    }

    ibnd_node_t* create_node(const ib_portid_t& path, uint8_t* info) {
        auto* node = static_cast<ibnd_node_t*>(std::calloc(1, sizeof(ibnd_node_t)));
        if (!node) {
            IBND_ERR(discover, 470, "OOM: node creation failed\n");
            return nullptr;
        }
        node->guid = mad_get_field64(info, 0, IB_NODE_GUID_F);
        node->type = static_cast<int>(mad_get_field(info, 0, IB_NODE_TYPE_F));
        node->numports = static_cast<int>(mad_get_field(info, 0, IB_NODE_NPORTS_F));
        node->ports =
            static_cast<ibnd_port_t**>(std::calloc(static_cast<size_t>(node->numports) + 1, sizeof(ibnd_port_t*)));
        if (!node->ports) {
            std::free(node);
            IBND_ERR(discover, 480, "OOM: Failed to allocate the ports array\n");
            return nullptr;
        }
        node->path_portid = path;
        std::memcpy(node->info, info, IB_SMP_DATA_SIZE);
        // Linked first, so that the fabric owns the node should the hash
        // index fail to grow.
        node->next = f_->pub.nodes;
        f_->pub.nodes = node;
        type_list_add(&f_->pub, node);
        if (!hash_add_node(&f_->pub, node))
            IBND_ERR(discover, 489, "Error Occurred when trying to insert new node guid 0x%016lx to DB\n", node->guid);
        return node;
    }

    int port_info_done(const Request& r, uint8_t* pinfo) {
        ibnd_node_t* node = r.node;
        int port_num = static_cast<int>(r.mod & 0xff);
        if (port_num > node->numports) {
            IBND_ERR(discover, 354, "Failed to allocate 0x%lx port %u\n", node->guid, static_cast<unsigned>(port_num));
            return 0;
        }
        ibnd_port_t*& port = node->ports[port_num];
        if (!port) {
            port = static_cast<ibnd_port_t*>(std::calloc(1, sizeof(ibnd_port_t)));
            if (!port) {
                IBND_ERR(discover, 354, "Failed to allocate 0x%lx port %u\n", node->guid,
                         static_cast<unsigned>(port_num));
                return -1;
            }
            port->guid = mad_get_field64(node->info, 0, IB_NODE_PORT_GUID_F);
        }
        std::memcpy(port->info, pinfo, IB_SMP_DATA_SIZE);
        port->node = node;
        port->portnum = port_num;
        port->ext_portnum = 0;
        port->base_lid = static_cast<uint16_t>(mad_get_field(port->info, 0, IB_PORT_LID_F));
        port->lmc = static_cast<uint8_t>(mad_get_field(port->info, 0, IB_PORT_LMC_F));
        if (port_num == 0) {
            node->smalid = port->base_lid;
            node->smalmc = port->lmc;
        } else if (node->type == IB_NODE_SWITCH) {
            port->base_lid = node->smalid;
            port->lmc = node->smalmc;
        }
        if (!hash_add_port(&f_->pub, port))
            IBND_ERR(discover, 379, "Error Occurred when trying to insert new port guid 0x%016lx to DB\n", port->guid);
        lid_add_port(f_, port);

        bool deferred = false;
        if ((cfg_.flags & IBND_CONFIG_MLX_EPI) && mlnx_ext_capable(node)) {
            int phys = static_cast<int>(mad_get_field(port->info, 0, IB_PORT_PHYS_STATE_F));
            int speed = static_cast<int>(mad_get_field(port->info, 0, IB_PORT_LINK_SPEED_ACTIVE_F));
            if (phys == kPhysLinkUp && speed == kSpeedQdr && ext_speed(port) == 0) {
                // QDR may really be FDR10: ask, and follow the link after
                IBND_DBG(discover, 327, "Query MLNX Extended Port Info; %s (0x%lx):%d\n",
                         portid2str(const_cast<ib_portid_t*>(&r.path)), node->guid, port_num);
                enqueue(Kind::mlnx_ext, r.path, static_cast<unsigned>(port_num), node);
                deferred = true;
            }
        }
        if (!deferred)
            follow_link(r, node, port, port_num);

        if (port_num == 0 && r.kind == Kind::port_info)
            for (int i = 1; i <= node->numports; ++i)
                query_port_info(r.path, node, i);
        return 0;
    }

    int mlnx_ext_done(const Request& r, bool ok) {
        ibnd_node_t* node = r.node;
        int port_num = static_cast<int>(r.mod & 0xff);
        ibnd_port_t* port = port_num <= node->numports ? node->ports[port_num] : nullptr;
        if (!port) {
            IBND_ERR(discover, ok ? 287 : 239, "Failed to find 0x%lx port %u\n", node->guid,
                     static_cast<unsigned>(port_num));
            return -1;
        }
        if (ok)
            std::memcpy(port->ext_info, r.mad + IB_SMP_DATA_OFFS, IB_SMP_DATA_SIZE);
        follow_link(r, node, port, port_num);
        return 0;
    }

    Fabric* f_;
    ibnd_config cfg_;
    ib_portid_t self_;
    unsigned initial_hops_;
    int fd_ = -1;
    int smi_agent_ = -1;
    int dr_agent_ = -1;
    size_t umad_len_ = IB_MAD_SIZE;
    unsigned sent_ = 0;
    unsigned inflight_ = 0;  // sent and not answered
    uint64_t queued_total_ = 0;
    std::deque<std::unique_ptr<Request>> queue_;
    std::deque<std::unique_ptr<Request>> wire_;
    std::unordered_map<uint32_t, Request*> by_trid_;
    std::unordered_map<std::string, unsigned> route_seen_;
    std::vector<uint8_t> sendbuf_, recvbuf_;
};

ibnd_fabric_t* discover(char* ca_name, int ca_port, ib_portid_t* from, ibnd_config* user) {
    ibnd_config cfg{};
    if (user)
        cfg = *user;
    if (!cfg.max_smps)
        cfg.max_smps = kDefaultWindow;
    if (!cfg.timeout_ms)
        cfg.timeout_ms = kDefaultTimeoutMs;
    if (!cfg.retries)
        cfg.retries = kDefaultRetries;

    ib_portid_t start{};
    if (from)
        start = *from;
    if (start.drpath.cnt < 0 || start.drpath.cnt > 63)
        return nullptr;

    int classes[2] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS};
    ibmad_port* mp = mad_rpc_open_port(ca_name, ca_port, classes, 2);
    if (!mp) {
        IBND_ERR(discover, 802, "can't open MAD port (%s:%d)\n", ca_name, ca_port);
        return nullptr;
    }
    if (user) {
        mad_rpc_set_timeout(mp, static_cast<int>(user->timeout_ms));
        mad_rpc_set_retries(mp, static_cast<int>(user->retries));
        smp_mkey_set(mp, user->mkey);
    }
    ib_portid_t self{};
    if (ib_resolve_self_via(&self, nullptr, nullptr, mp) < 0) {
        IBND_ERR(discover, 811, "Failed to resolve self\n");
        mad_rpc_close_port(mp);
        return nullptr;
    }
    mad_rpc_close_port(mp);

    FabricPtr f = new_fabric();
    unsigned initial_hops = static_cast<unsigned>(start.drpath.cnt);
    int rc;
    {
        Walk walk(f.get(), cfg, self, initial_hops);
        rc = walk.open(ca_name, ca_port);
        if (!rc)
            rc = walk.run(start);
        f->pub.total_mads_used = walk.smps_sent();
    }
    // A walk whose start never answered still returns its (empty) fabric,
    // as the reference does: tools tell "nothing found" from "failed".
    if (rc)
        return nullptr;
    f->pub.maxhops_discovered += initial_hops;
    if (group_nodes(&f->pub))
        return nullptr;
    return &f.release()->pub;
}

}  // namespace
}  // namespace ibnd

// NULL (errno ENOMEM when memory ran out) on failure; the walk's port and
// everything found so far are released on the way out.
extern "C" __attribute__((visibility("default"))) ibnd_fabric_t*
ibnd_discover_fabric(char* ca_name, int ca_port, ib_portid_t* from, struct ibnd_config* config) {
    return rdma::entry_null([&] { return ibnd::discover(ca_name, ca_port, from, config); });
}
