// Internals of librdmacm's connection manager shared by cma.cpp and
// addrinfo.cpp. The C ABI hands out pointers to the embedded public structs
// (rdma_cm_id, rdma_cm_event); these classes wrap them as their first member.
//
// Errors inside are values (util/result.h): a function that can fail returns
// Status or Result<T> and sets no errno; the exported rdma_* function turns
// it into its man page's convention through its util/c_entry.h barrier.
#pragma once

#include "util/result.h"

#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include <infiniband/ib.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_cma_abi.h>

#define RDMACM_EXPORT extern "C" __attribute__((visibility("default")))

namespace rdma::cm {

// One RDMA device as the CM sees it; opened on first use and kept open for
// the life of the process (ids and events keep pointers to it).
struct CmDevice {
    ibv_device* device = nullptr;
    uint64_t guid = 0;  // network order, as the kernel reports node GUIDs
    int index = -1;  // kernel device index
    ibv_context* verbs = nullptr;
    ibv_pd* pd = nullptr;
    uint8_t max_responder_resources = 0;
    uint8_t max_initiator_depth = 0;
    int refcnt = 0;
};

struct Multicast;

struct IdPriv {
    rdma_cm_id id{};  // must stay first: the ABI pointer is &id
    CmDevice* dev = nullptr;
    uint32_t handle = 0;
    bool sync = false;  // created without a channel: calls block
    bool connect_error = false;  // our side failed CONNECT_RESPONSE handling
    uint8_t initiator_depth = 0;
    uint8_t responder_resources = 0;
    // Bytes prepended to the private data of connect (rdma_addrinfo's
    // ai_connect); owned.
    void* connect = nullptr;
    size_t connect_len = 0;
    // Passive endpoint from rdma_create_ep: the QP every request gets.
    ibv_qp_init_attr_ex* qp_init_attr = nullptr;
    Multicast* mc_list = nullptr;
    ibv_ece local_ece{};
    ibv_ece remote_ece{};
    // rdma_resolve_addrinfo() state.
    rdma_addrinfo* resolved = nullptr;
    bool addrinfo_pending = false;

    std::mutex mut;
    std::condition_variable cond;
    uint32_t events_completed = 0;

    static IdPriv* of(rdma_cm_id* id) { return reinterpret_cast<IdPriv*>(id); }
};

struct Multicast {
    Multicast* next = nullptr;
    IdPriv* id_priv = nullptr;
    void* context = nullptr;
    uint32_t handle = 0;
    uint8_t join_flags = 0;
    sockaddr_storage addr{};
    ibv_gid mgid{};
    uint16_t mlid = 0;
    uint32_t events_completed = 0;
    std::condition_variable cond;
};

struct Event {
    rdma_cm_event event{};  // first: the ABI pointer is &event
    uint8_t private_data[RDMA_MAX_PRIVATE_DATA] = {};
    IdPriv* id_priv = nullptr;
    Multicast* mc = nullptr;

    static Event* of(rdma_cm_event* e) { return reinterpret_cast<Event*>(e); }
};

// The errno a C call that just failed left (a system call, libibverbs, one
// of our own exported rdma_* functions called from inside), as a value; read
// it right after that call. They all set one; EIO stands in should one not.
inline Errno last_errno() noexcept { return Errno{errno ? errno : EIO}; }

// Library set-up (ABI version, device list).
Status init();

// Destroys the CQs and completion channels the library made for an id.
void destroy_cqs(rdma_cm_id* id);

// Length of a sockaddr by family (0 for NULL or unknown families).
socklen_t addr_len(const sockaddr* addr) noexcept;

}  // namespace rdma::cm
