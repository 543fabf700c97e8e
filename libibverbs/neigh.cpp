// RoCE layer-2 resolution: the Ethernet address (and VLAN) behind a
// destination GID, for providers that build address vectors in userspace.
// Multicast and link-local GIDs map to a MAC arithmetically; any other
// address is looked up in the kernel's neighbour table (libnl-route),
// after provoking resolution with one UDP datagram if needed.
#include "libibverbs/ibverbs.h"
#include "util/c_entry.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netlink/route/link.h>
#include <netlink/route/link/vlan.h>
#include <netlink/route/neighbour.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace {

bool is_v4_mapped(const ibv_gid& g) {
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(g.raw, prefix, sizeof(prefix)) == 0;
}

// Multicast and EUI-64 link-local GIDs need no neighbour table.
bool mac_from_gid(const ibv_gid& g, uint8_t mac[6]) {
    if (is_v4_mapped(g) && (g.raw[12] & 0xf0) == 0xe0) {  // IPv4 multicast
        const uint8_t m[6] = {0x01, 0x00, 0x5e, static_cast<uint8_t>(g.raw[13] & 0x7f), g.raw[14], g.raw[15]};
        std::memcpy(mac, m, 6);
        return true;
    }
    if (g.raw[0] == 0xff) {  // IPv6 multicast
        const uint8_t m[6] = {0x33, 0x33, g.raw[12], g.raw[13], g.raw[14], g.raw[15]};
        std::memcpy(mac, m, 6);
        return true;
    }
    static const uint8_t ll[8] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0};
    if (std::memcmp(g.raw, ll, 8) == 0 && g.raw[11] == 0xff && g.raw[12] == 0xfe) {
        const uint8_t m[6] = {
            static_cast<uint8_t>(g.raw[8] ^ 0x02), g.raw[9], g.raw[10], g.raw[13], g.raw[14], g.raw[15]};
        std::memcpy(mac, m, 6);
        return true;
    }
    return false;
}

struct NlSock {
    nl_sock* s = nl_socket_alloc();
    ~NlSock() {
        if (s)
            nl_socket_free(s);
    }
};

// One neighbour-table lookup; true when a usable entry gave a MAC.
bool lookup_neigh(nl_sock* sk, int ifindex, const ibv_gid& g, uint8_t mac[6]) {
    nl_cache* cache = nullptr;
    if (rtnl_neigh_alloc_cache(sk, &cache) < 0)
        return false;
    nl_addr* dst = is_v4_mapped(g) ? nl_addr_build(AF_INET, &g.raw[12], 4) : nl_addr_build(AF_INET6, g.raw, 16);
    bool ok = false;
    if (dst) {
        if (rtnl_neigh* n = rtnl_neigh_get(cache, ifindex, dst)) {
            const int state = rtnl_neigh_get_state(n);
            nl_addr* ll = rtnl_neigh_get_lladdr(n);
            if (ll && nl_addr_get_len(ll) == 6 && !(state & (NUD_INCOMPLETE | NUD_FAILED | NUD_NONE))) {
                std::memcpy(mac, nl_addr_get_binary_addr(ll), 6);
                ok = true;
            }
            rtnl_neigh_put(n);
        }
        nl_addr_put(dst);
    }
    nl_cache_free(cache);
    return ok;
}

// Make the kernel resolve the address: send one datagram out of ifindex.
void provoke(int ifindex, const ibv_gid& g) {
    char ifname[IF_NAMESIZE] = {};
    if (!if_indextoname(static_cast<unsigned>(ifindex), ifname))
        return;
    const bool v4 = is_v4_mapped(g);
    int fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, static_cast<socklen_t>(strlen(ifname)));
    const char probe = 0;
    if (v4) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(4791);  // RoCE v2's port: harmless if nobody listens
        std::memcpy(&a.sin_addr, &g.raw[12], 4);
        sendto(fd, &probe, 1, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    } else {
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(4791);
        std::memcpy(&a.sin6_addr, g.raw, 16);
        a.sin6_scope_id = static_cast<uint32_t>(ifindex);
        sendto(fd, &probe, 1, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    }
    close(fd);
}

// The netdev's own MAC, for a destination that is one of our own GIDs
// (loopback traffic never appears in the neighbour table).
bool own_mac(nl_sock* sk, int ifindex, uint8_t mac[6]) {
    rtnl_link* link = nullptr;
    bool ok = false;
    if (rtnl_link_get_kernel(sk, ifindex, nullptr, &link) >= 0 && link) {
        nl_addr* a = rtnl_link_get_addr(link);
        if (a && nl_addr_get_len(a) == 6) {
            std::memcpy(mac, nl_addr_get_binary_addr(a), 6);
            ok = true;
        }
        rtnl_link_put(link);
    }
    return ok;
}

uint16_t vlan_of(nl_sock* sk, int ifindex) {
    rtnl_link* link = nullptr;
    uint16_t vid = 0xffff;
    if (rtnl_link_get_kernel(sk, ifindex, nullptr, &link) >= 0 && link) {
        if (rtnl_link_is_vlan(link))
            vid = static_cast<uint16_t>(rtnl_link_vlan_get_id(link));
        rtnl_link_put(link);
    }
    return vid;
}

int resolve_eth_l2(ibv_context* context, ibv_ah_attr* attr, uint8_t eth_mac[6], uint16_t* vid) {
    if (!attr->is_global)
        return -EINVAL;
    ibv_gid_entry sgid{};
    if (int e = ibv_query_gid_ex(context, attr->port_num, attr->grh.sgid_index, &sgid, 0))
        return -e;
    const int ifindex = static_cast<int>(sgid.ndev_ifindex);
    NlSock sk;
    if (!sk.s || nl_connect(sk.s, NETLINK_ROUTE) < 0)
        return -EIO;
    if (vid)
        *vid = ifindex ? vlan_of(sk.s, ifindex) : 0xffff;
    if (mac_from_gid(attr->grh.dgid, eth_mac))
        return 0;
    if (!ifindex)
        return -EINVAL;
    if (rdma::verbs::find_gid_index(context, attr->port_num, attr->grh.dgid, -1) >= 0)
        return own_mac(sk.s, ifindex, eth_mac) ? 0 : -EINVAL;
    if (lookup_neigh(sk.s, ifindex, attr->grh.dgid, eth_mac))
        return 0;
    provoke(ifindex, attr->grh.dgid);
    for (int i = 0; i < 40; ++i) {  // up to ~2 s, like an ARP retry window
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (lookup_neigh(sk.s, ifindex, attr->grh.dgid, eth_mac))
            return 0;
    }
    return -EHOSTUNREACH;
}

}  // namespace

extern "C" RDMA_EXPORT int ibv_resolve_eth_l2_from_gid(ibv_context* context, ibv_ah_attr* attr, uint8_t eth_mac[6],
                                                       uint16_t* vid) {
    return rdma::entry_neg_errno([&] { return resolve_eth_l2(context, attr, eth_mac, vid); });
}
