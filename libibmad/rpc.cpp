// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Request/response over a umad port: send, wait for the reply with the
// same transaction id, retry on timeouts, follow ClassPortInfo redirects,
// and the port objects (open/close, SMI/GSI pairs) that carry the class
// agents, timeout, retries and SMP M_Key.
#include "rpc_internal.h"
#include "util/ibwarn.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>

using namespace ibmad;

// the debug level the tools set (-d) and LIBIBMAD_DEBUG_LEVEL overrides
extern "C" {
__attribute__((visibility("default"))) int ibdebug = 0;
}

namespace ibmad {

int default_timeout_ms = MAD_DEF_TIMEOUT_MS;
int default_retries = MAD_DEF_RETRIES;
int show_errors;

namespace {

struct ibmad_port deprecated_port;

// madrpc_save_mad(): the next request is copied here once
void* saved_mad;
int saved_mad_len;

// Redirects a hostile responder could chain forever; the reference follows
// them without end.
constexpr int max_redirects = 16;

}  // namespace

struct ibmad_port* default_port() {
    return &deprecated_port;
}

void warn(const char* func, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rdma::vibwarn_as("ibwarn", func, fmt, ap);
    va_end(ap);
}

void panic(const char* func, const char* fmt, ...) {
    int err = errno;
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "ibpanic: [%d] %s: ", static_cast<int>(getpid()), func);
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, ": %s\n", std::strerror(err));
    va_end(ap);
    std::exit(-1);
}

}  // namespace ibmad

namespace {

using clock_type = std::chrono::steady_clock;

bool is_rpc_v1(const ib_rpc_t* rpc) { return (rpc->mgtclass & IB_MAD_RPC_VERSION_MASK) == IB_MAD_RPC_VERSION1; }

void set_rpc_error(ib_rpc_t* rpc, int error) {
    if (is_rpc_v1(rpc))
        reinterpret_cast<ib_rpc_v1_t*>(rpc)->error = error;
}

int class_agent(const struct ibmad_port* port, const ib_rpc_t* rpc) { return port->class_agents[rpc->mgtclass & 0xff]; }

// One reply we may accept for the request in sndmad: long enough to hold a
// MAD header, the same transaction id (low 32 bits: what the kernel and
// the simulator keep) and, when the umad carries no error status, really a
// response of the class we asked.
bool reply_matches(const uint8_t* sndmad, const void* rcvumad, int length) {
    if (length < 24)
        return false;
    auto* rcvmad = static_cast<const uint8_t*>(umad_get_mad(const_cast<void*>(rcvumad)));
    if (static_cast<uint32_t>(get_be64(rcvmad, off::trid)) != static_cast<uint32_t>(get_be64(sndmad, off::trid)))
        return false;
    if (umad_status(const_cast<void*>(rcvumad)))
        return true;  // our own request, handed back with an error
    return rcvmad[off::mgmt_class] == sndmad[off::mgmt_class] && (rcvmad[off::method] & IB_MAD_RESPONSE);
}

// Send sndbuf and wait for its reply in rcvbuf. Returns the reply length,
// or -1 with *p_error set. Every wait is bounded by the timeout: a stream
// of unrelated MADs cannot keep us here, and nothing relies on the kernel
// (or simulator) to time the request out.
int do_madrpc(int port_id, void* sndbuf, void* rcvbuf, int agentid, int len, int timeout, int max_retries,
              int* p_error) {
    auto* sndmad = static_cast<uint8_t*>(umad_get_mad(sndbuf));

    if (ibdebug > 1) {
        warn("_do_madrpc", ">>> sending: len %d pktsz %zu", len, umad_size() + len);
        xdump(stderr, "send buf\n", sndbuf, static_cast<int>(umad_size()) + len);
    }

    if (saved_mad) {
        std::memcpy(saved_mad, sndmad, saved_mad_len < len ? saved_mad_len : len);
        saved_mad = nullptr;
    }

    if (max_retries <= 0) {
        errno = EINVAL;
        *p_error = EINVAL;
        IBMAD_ERRS("_do_madrpc", "max_retries %d <= 0", max_retries);
        return -1;
    }

    int status = 0;
    int retries;
    for (retries = 0; retries < max_retries; retries++) {
        if (retries)
            IBMAD_ERRS("_do_madrpc", "retry %d (timeout %d ms)", retries, timeout);

        // no agent for the class: what the kernel would answer
        if (agentid < 0)
            errno = EINVAL;
        if (agentid < 0 || umad_send(port_id, agentid, sndbuf, len, timeout, 0) < 0) {
            warn("_do_madrpc", "send failed; %s", std::strerror(errno));
            return -1;
        }

        // A timeout of 0 or less would make umad_recv() wait forever
        // and the simulator never answers for a lost request: wait the
        // default time then.
        const int wait_total = timeout > 0 ? timeout : MAD_DEF_TIMEOUT_MS;
        const auto deadline = clock_type::now() + std::chrono::milliseconds(wait_total);
        int length;
        for (;;) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
            int wait_ms = left.count() > 0 ? static_cast<int>(left.count()) : 0;
            std::memset(rcvbuf, 0, umad_size() + IB_MAD_SIZE);
            length = len;
            int rc = wait_ms == 0 ? (errno = ETIMEDOUT, -1) : umad_recv(port_id, rcvbuf, &length, wait_ms);
            if (rc < 0) {
                warn("_do_madrpc", "recv failed: %s", std::strerror(errno));
                return -1;
            }
            if (ibdebug > 2)
                umad_addr_dump(umad_get_mad_addr(rcvbuf));
            if (ibdebug > 1) {
                warn("_do_madrpc", "rcv buf:");
                xdump(stderr, "rcv buf\n", umad_get_mad(rcvbuf), IB_MAD_SIZE);
            }
            if (reply_matches(sndmad, rcvbuf, length))
                break;
        }

        status = umad_status(rcvbuf);
        if (!status || status == ENOMEM)
            return length;
    }

    errno = status;
    *p_error = ETIMEDOUT;
    IBMAD_ERRS("_do_madrpc", "timeout after %d retries, %d ms", retries, timeout * retries);
    return -1;
}

// Status 0x0002: the reply is a ClassPortInfo naming where to go instead.
int redirect_port(ib_portid_t* port, const uint8_t* mad) {
    const uint8_t* cpi = mad + IB_PC_DATA_OFFS /* GS data */;
    port->lid = get_be16(cpi, off::cpi_redirect_lid);
    if (!port->lid) {
        warn("redirect_port", "GID-based redirection is not supported");
        return -1;
    }
    port->qp = get_be32(cpi, off::cpi_redirect_qp) & 0xffffff;
    port->qkey = get_be32(cpi, off::cpi_redirect_qkey);
    port->sl = static_cast<uint8_t>(cpi[off::cpi_redirect_sl] >> 4);
    if (ibdebug)
        warn("redirect_port", "redirected to lid %d, qp 0x%x, qkey 0x%x, sl 0x%x", port->lid, port->qp, port->qkey,
             port->sl);
    return 0;
}

bool rpc_sizes_ok(const ib_rpc_t* rpc) {
    return rpc->dataoffs >= 0 && rpc->datasz >= 0 && rpc->dataoffs + rpc->datasz <= IB_MAD_SIZE;
}

}  // namespace

IBMAD_EXPORT int mad_get_timeout(const struct ibmad_port* srcport, int override_ms) {
    if (override_ms)
        return override_ms;
    return srcport && srcport->timeout ? srcport->timeout : default_timeout_ms;
}

IBMAD_EXPORT int mad_get_retries(const struct ibmad_port* srcport) {
    return srcport && srcport->retries ? srcport->retries : default_retries;
}

namespace {

// The argument checks both RPC calls start with (a v1 rpc's error cleared
// first); false with errno EINVAL when they fail.
bool rpc_args_ok(const struct ibmad_port* port, ib_rpc_t* rpc, const ib_portid_t* dport) {
    if (!port || !rpc || !dport) {
        errno = EINVAL;
        return false;
    }
    if (is_rpc_v1(rpc))
        set_rpc_error(rpc, 0);
    if (!rpc_sizes_ok(rpc)) {
        errno = EINVAL;
        return false;
    }
    return true;
}

// Sends the len bytes built in sndbuf and waits for the answer in rcvbuf,
// with the port's timeout and retries; on failure records the error in a
// v1 rpc and warns as `fn`. Returns the answer's length, < 0 on failure.
int exchange(const char* fn, const struct ibmad_port* port, ib_rpc_t* rpc, ib_portid_t* dport, uint8_t* sndbuf,
             uint8_t* rcvbuf, int len, int& error) {
    len = do_madrpc(port->port_id, sndbuf, rcvbuf, class_agent(port, rpc), len, mad_get_timeout(port, rpc->timeout),
                    mad_get_retries(port), &error);
    if (len < 0) {
        set_rpc_error(rpc, error);
        warn(fn, "_do_madrpc failed; dport (%s)", portid2str(dport));
    }
    return len;
}

// A non-zero MAD status: reported as `fn` (when errors are shown), errno
// EIO.
void status_failed(const char* fn, int status, ib_portid_t* dport) {
    IBMAD_ERRS(fn, "MAD completed with error status 0x%x; dport (%s)", status, portid2str(dport));
    errno = EIO;
}

}  // namespace

IBMAD_EXPORT void* mad_rpc(const struct ibmad_port* port, ib_rpc_t* rpc, ib_portid_t* dport, void* payload,
                           void* rcvdata) {
    std::array<uint8_t, umad_buf_size> sndbuf;
    std::array<uint8_t, umad_buf_size> rcvbuf{};
    int error = 0;
    int status;
    uint8_t* mad;

    if (!rpc_args_ok(port, rpc, dport))
        return nullptr;

    for (int redirects = 0;; redirects++) {
        std::memset(sndbuf.data(), 0, umad_size() + IB_MAD_SIZE);
        int len = mad_build_pkt(sndbuf.data(), rpc, dport, nullptr, payload);
        if (len < 0)
            return nullptr;

        if (exchange("mad_rpc", port, rpc, dport, sndbuf.data(), rcvbuf.data(), len, error) < 0)
            return nullptr;

        mad = static_cast<uint8_t*>(umad_get_mad(rcvbuf.data()));
        status = get_be16(mad, off::status) & 0x7fff;
        if (status != IB_MAD_STS_REDIRECT || redirects >= max_redirects || redirect_port(dport, mad))
            break;
    }

    set_rpc_error(rpc, error);
    rpc->rstatus = static_cast<uint32_t>(status);

    if (status) {
        status_failed("mad_rpc", status, dport);
        return nullptr;
    }

    if (rcvdata)
        std::memcpy(rcvdata, mad + rpc->dataoffs, rpc->datasz);
    return rcvdata;
}

IBMAD_EXPORT void* mad_rpc_rmpp(const struct ibmad_port* port, ib_rpc_t* rpc, ib_portid_t* dport, ib_rmpp_hdr_t* rmpp,
                                void* data) {
    std::array<uint8_t, umad_buf_size> sndbuf{};
    std::array<uint8_t, umad_buf_size> rcvbuf{};
    int error = 0;

    IBMAD_DEBUG("mad_rpc_rmpp", "rmpp %p data %p", static_cast<void*>(rmpp), data);

    if (!rpc_args_ok(port, rpc, dport))
        return nullptr;
    int len = mad_build_pkt(sndbuf.data(), rpc, dport, rmpp, data);
    if (len < 0)
        return nullptr;
    if (exchange("mad_rpc_rmpp", port, rpc, dport, sndbuf.data(), rcvbuf.data(), len, error) < 0)
        return nullptr;
    set_rpc_error(rpc, error);

    auto* mad = static_cast<uint8_t*>(umad_get_mad(rcvbuf.data()));
    int status = get_be16(mad, off::status);
    if (status) {
        status_failed("mad_rpc_rmpp", status, dport);
        return nullptr;
    }

    if (rmpp) {
        rmpp->flags = mad[off::rmpp_flags] & 7;
        if ((rmpp->flags & 3) && mad[off::rmpp_version] != 1) {
            warn("mad_rpc_rmpp", "bad rmpp version");
            return nullptr;
        }
        rmpp->type = mad[off::rmpp_type];
        rmpp->status = mad[off::rmpp_status];
        IBMAD_DEBUG("mad_rpc_rmpp", "rmpp type %d status %d", rmpp->type, rmpp->status);
        rmpp->d1.u = get_be32(mad, off::rmpp_d1);
        rmpp->d2.u = get_be32(mad, off::rmpp_d2);
    }

    if (data)
        std::memcpy(data, mad + rpc->dataoffs, rpc->datasz);

    rpc->recsz = get_be16(mad, off::sa_attr_offset);
    return data;
}

IBMAD_EXPORT void madrpc_show_errors(int set) { show_errors = set; }

IBMAD_EXPORT int madrpc_set_retries(int retries) {
    if (retries > 0)
        default_retries = retries;
    return default_retries;
}

IBMAD_EXPORT int madrpc_set_timeout(int timeout) {
    default_timeout_ms = timeout;
    return 0;
}

IBMAD_EXPORT void mad_rpc_set_retries(struct ibmad_port* port, int retries) { port->retries = retries; }

IBMAD_EXPORT void mad_rpc_set_timeout(struct ibmad_port* port, int timeout) { port->timeout = timeout; }

IBMAD_EXPORT int madrpc_portid(void) { return default_port()->port_id; }

IBMAD_EXPORT int mad_rpc_portid(struct ibmad_port* srcport) { return srcport->port_id; }

IBMAD_EXPORT int mad_rpc_class_agent(struct ibmad_port* port, int cls) {
    if (cls < 1 || cls >= max_class)
        return -1;
    return port->class_agents[cls];
}

IBMAD_EXPORT void* madrpc(ib_rpc_t* rpc, ib_portid_t* dport, void* payload, void* rcvdata) {
    return mad_rpc(default_port(), rpc, dport, payload, rcvdata);
}

IBMAD_EXPORT void* madrpc_rmpp(ib_rpc_t* rpc, ib_portid_t* dport, ib_rmpp_hdr_t* rmpp, void* data) {
    return mad_rpc_rmpp(default_port(), rpc, dport, rmpp, data);
}

IBMAD_EXPORT void madrpc_save_mad(void* madbuf, int len) {
    saved_mad = madbuf;
    saved_mad_len = len;
}

IBMAD_EXPORT void madrpc_init(char* dev_name, int dev_port, int* mgmt_classes, int num_classes) {
    struct ibmad_port* p = default_port();

    if (umad_init() < 0)
        panic("madrpc_init", "can't init UMAD library");

    int fd = umad_open_port(dev_name, dev_port);
    if (fd < 0)
        panic("madrpc_init", "can't open UMAD port (%s:%d)", dev_name ? dev_name : "(nil)", dev_port);

    if (num_classes >= max_class)
        panic("madrpc_init", "too many classes %d requested", num_classes);
    if (num_classes > 0 && !mgmt_classes) {
        errno = EINVAL;
        panic("madrpc_init", "no class list");
    }

    p->port_id = fd;
    std::memset(p->class_agents, 0xff, sizeof(p->class_agents));
    for (int i = 0; i < num_classes; i++) {
        int mgmt = mgmt_classes[i];
        uint8_t rmpp_version = mgmt == IB_SA_CLASS ? 1 : 0;
        if (mgmt < 0 || mgmt >= max_class || mad_register_client_via(mgmt, rmpp_version, p) < 0)
            panic("madrpc_init", "client_register for mgmt class %d failed", mgmt);
    }
}

namespace {

// Open one umad port (opener: umad_open_port or umad_open_smi_port) and
// register the classes that keep() accepts. The reference's messages name
// the public entry point, given as func.
template <typename Opener, typename Keep>
struct ibmad_port* open_port(const char* func, char* dev_name, int dev_port, const char* shown_name, int shown_port,
                             int* mgmt_classes, int num_classes, Opener opener, Keep keep) {
    if (num_classes >= max_class) {
        warn(func, "too many classes %d requested", num_classes);
        errno = EINVAL;
        return nullptr;
    }
    if (num_classes > 0 && !mgmt_classes) {
        errno = EINVAL;
        return nullptr;
    }
    if (umad_init() < 0) {
        warn(func, "can't init UMAD library");
        errno = ENODEV;
        return nullptr;
    }
    if (const char* level = std::getenv("LIBIBMAD_DEBUG_LEVEL"))
        ibdebug = std::atoi(level);

    auto* p = static_cast<struct ibmad_port*>(std::calloc(1, sizeof(struct ibmad_port)));
    if (!p) {
        errno = ENOMEM;
        return nullptr;
    }

    int port_id = opener(dev_name, dev_port);
    if (port_id < 0) {
        warn(func, "can't open UMAD port (%s:%d)", shown_name ? shown_name : "(null)", shown_port);
        if (!errno)
            errno = EIO;
        std::free(p);
        return nullptr;
    }

    p->port_id = port_id;
    if (dev_name)
        std::snprintf(p->ca_name, sizeof(p->ca_name), "%s", dev_name);
    p->ca_port = dev_port;
    std::memset(p->class_agents, 0xff, sizeof(p->class_agents));
    for (int i = 0; i < num_classes; i++) {
        int mgmt = mgmt_classes[i];
        if (!keep(mgmt))
            continue;
        uint8_t rmpp_version = mgmt == IB_SA_CLASS ? 1 : 0;
        if (mgmt < 0 || mgmt >= max_class || mad_register_client_via(mgmt, rmpp_version, p) < 0) {
            warn(func, "client_register for mgmt %d failed", mgmt);
            if (!errno)
                errno = EINVAL;
            umad_close_port(port_id);
            std::free(p);
            return nullptr;
        }
    }
    return p;
}

}  // namespace

IBMAD_EXPORT struct ibmad_port* mad_rpc_open_port(char* dev_name, int dev_port, int* mgmt_classes, int num_classes) {
    return open_port(
        "mad_rpc_open_port", dev_name, dev_port, dev_name, dev_port, mgmt_classes, num_classes,
        [](char* name, int port) { return umad_open_port(name, port); }, [](int) { return true; });
}

IBMAD_EXPORT void mad_rpc_close_port(struct ibmad_port* port) {
    if (!port)
        return;
    umad_close_port(port->port_id);
    std::free(port);
}

// ---- SMI/GSI pairs (IBMAD_1.5) --------------------------------------------
//
// On planarized devices the SMI (QP0) and GSI (QP1) of one port are separate
// umad devices. mad_rpc_open_port2() asks libibumad (1.4) which devices
// form the pair for dev_name/dev_port and opens one ibmad_port on each: the
// SMP classes on the SMI side, every other class on the GSI side.

namespace {

// Layout of the public struct ibmad_ports_pair (infiniband/mad.h of
// rdma-core 50+): two { port, ca_name } items, SMI first.
struct ports_item {
    struct ibmad_port* port;
    char ca_name[UMAD_CA_NAME_LEN];
};
struct ports_pair {
    ports_item smi;
    ports_item gsi;
};

// struct umad_ca_pair of libibumad 1.4
struct umad_ca_pair_layout {
    char smi_name[UMAD_CA_NAME_LEN];
    uint32_t smi_preferred_port;
    char gsi_name[UMAD_CA_NAME_LEN];
    uint32_t gsi_preferred_port;
};

using get_pair_fn = int (*)(const char*, uint8_t, umad_ca_pair_layout*, unsigned);
using open_smi_fn = int (*)(char*, int);

// Looked up at run time so that this library still loads on a libibumad
// older than 1.4 (Debian's 44): there every device is its own pair.
template <typename Fn>
Fn umad_symbol(const char* name) {
    return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

bool is_smi_class(int mgmt) { return mgmt == IB_SMI_CLASS || mgmt == IB_SMI_DIRECT_CLASS; }

}  // namespace

IBMAD_EXPORT struct ibmad_ports_pair* mad_rpc_open_port2(char* dev_name, int dev_port, int* mgmt_classes,
                                                         int num_classes, unsigned enforce_smi) {
    if (umad_init() < 0) {
        warn("mad_rpc_open_port2", "can't init UMAD library");
        errno = ENODEV;
        return nullptr;
    }

    umad_ca_pair_layout pair{};
    auto get_pair = umad_symbol<get_pair_fn>("umad_get_smi_gsi_pair_by_ca_name");
    auto open_smi = umad_symbol<open_smi_fn>("umad_open_smi_port");
    // no name: the port umad_open_port() would pick (first CA, first
    // active port when dev_port is 0), then its pair
    char default_name[UMAD_CA_NAME_LEN] = {};
    const char* name = dev_name;
    int portnum = dev_port;
    if (!name || !*name) {
        umad_port_t up{};
        if (umad_get_port(nullptr, dev_port, &up) == 0) {
            std::memcpy(default_name, up.ca_name, sizeof(default_name) - 1);
            portnum = up.portnum;
            umad_release_port(&up);
            name = default_name;
        }
    }

    if (get_pair) {
        if (get_pair(name, static_cast<uint8_t>(portnum), &pair, enforce_smi) < 0) {
            warn("mad_rpc_open_port2", "can't open UMAD port (%s:%d)", dev_name ? dev_name : "(null)", dev_port);
            if (!errno)
                errno = ENODEV;
            return nullptr;
        }
    } else {
        // no SMI/GSI separation known: the device serves both
        if (name)
            std::snprintf(pair.smi_name, sizeof(pair.smi_name), "%s", name);
        std::memcpy(pair.gsi_name, pair.smi_name, UMAD_CA_NAME_LEN);
        pair.smi_preferred_port = pair.gsi_preferred_port = static_cast<uint32_t>(portnum);
    }

    auto* pp = static_cast<ports_pair*>(std::calloc(1, sizeof(ports_pair)));
    if (!pp) {
        errno = ENOMEM;
        return nullptr;
    }

    char* smi_name = pair.smi_name[0] ? pair.smi_name : nullptr;
    char* gsi_name = pair.gsi_name[0] ? pair.gsi_name : nullptr;
    bool want_smi = enforce_smi || pair.smi_name[0] || !get_pair;

    if (want_smi) {
        pp->smi.port = open_port(
            "mad_rpc_open_port2", smi_name, static_cast<int>(pair.smi_preferred_port), dev_name, dev_port, mgmt_classes,
            num_classes,
            [open_smi](char* name, int port) {
                int fd = open_smi ? open_smi(name, port) : umad_open_port(name, port);
                if (fd < 0)
                    warn("get_smi_gsi_pair", "Can't open SMI UMAD port (%s) (%s:%d)", std::strerror(-fd),
                         name ? name : "(null)", port);
                return fd;
            },
            is_smi_class);
        if (!pp->smi.port) {
            std::free(pp);
            return nullptr;
        }
        if (smi_name)
            std::memcpy(pp->smi.ca_name, smi_name, UMAD_CA_NAME_LEN);
    }

    pp->gsi.port = open_port(
        "mad_rpc_open_port2", gsi_name, static_cast<int>(pair.gsi_preferred_port), dev_name, dev_port, mgmt_classes,
        num_classes,
        [](char* name, int port) {
            int fd = umad_open_port(name, port);
            if (fd < 0)
                warn("get_smi_gsi_pair", "Can't open GSI UMAD port (%s) (%s:%d)", std::strerror(-fd),
                     name ? name : "(null)", port);
            return fd;
        },
        [](int mgmt) { return !is_smi_class(mgmt); });
    if (!pp->gsi.port) {
        int err = errno;
        mad_rpc_close_port(pp->smi.port);
        std::free(pp);
        errno = err;
        return nullptr;
    }
    if (gsi_name)
        std::memcpy(pp->gsi.ca_name, gsi_name, UMAD_CA_NAME_LEN);
    return reinterpret_cast<struct ibmad_ports_pair*>(pp);
}

IBMAD_EXPORT void mad_rpc_close_port2(struct ibmad_ports_pair* srcport) {
    if (!srcport)
        return;
    auto* pp = reinterpret_cast<ports_pair*>(srcport);
    mad_rpc_close_port(pp->smi.port);
    mad_rpc_close_port(pp->gsi.port);
    std::free(pp);
}
