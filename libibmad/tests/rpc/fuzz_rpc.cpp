// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// libFuzzer entry point for the RPC half: the input picks an API call, an
// address string and the replies a scripted umad layer hands back (this
// program exports its own umad_send/umad_recv, so libibmad talks to it).
//
// Input layout:
//   [0]    call selector          [1] flags (bit 0: give replies the
//   [2]    string length n (<=48)     request's TID; bits 1-2: dest type)
//   [3..]  n bytes of address string
//   then replies, each: 1 byte umad status, 1 byte length/2, 256 bytes MAD
#include <infiniband/mad.h>
#include <infiniband/umad.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Script {
    const uint8_t* replies = nullptr;
    size_t left = 0;
    bool fix_tid = false;
    uint8_t last_sent[IB_MAD_SIZE] = {};
    bool sent = false;
} script;

}  // namespace

extern "C" {
__attribute__((visibility("default"))) int umad_init(void) { return 0; }
__attribute__((visibility("default"))) int umad_open_port(const char*, int) { return 3; }
__attribute__((visibility("default"))) int umad_close_port(int) { return 0; }
__attribute__((visibility("default"))) int umad_register(int, int mgmt_class, int, uint8_t, long[16 / sizeof(long)]) {
    return mgmt_class;
}
__attribute__((visibility("default"))) int umad_register_oui(int, int mgmt_class, uint8_t, uint8_t[3],
                                                             long[16 / sizeof(long)]) {
    return mgmt_class;
}
__attribute__((visibility("default"))) int umad_send(int, int agent, void* umad, int length, int, int) {
    if (agent < 0 || length < 0)
        return -EINVAL;
    std::memcpy(script.last_sent, static_cast<uint8_t*>(umad) + umad_size(), IB_MAD_SIZE);
    script.sent = true;
    return 0;
}
__attribute__((visibility("default"))) int umad_recv(int, void* umad, int* length, int) {
    constexpr size_t one = 2 + IB_MAD_SIZE;
    if (script.left < one) {
        errno = ETIMEDOUT;
        return -ETIMEDOUT;
    }
    const uint8_t* r = script.replies;
    script.replies += one;
    script.left -= one;
    std::memset(umad, 0, umad_size() + *length);
    uint32_t status = r[0] % 3 == 0 ? ETIMEDOUT : (r[0] % 3 == 1 ? 0 : r[0]);
    std::memcpy(static_cast<uint8_t*>(umad) + 4, &status, 4);
    int len = r[1] * 2;
    if (len > *length)
        len = *length;
    uint8_t* mad = static_cast<uint8_t*>(umad) + umad_size();
    std::memcpy(mad, r + 2, static_cast<size_t>(len));
    if (script.fix_tid && script.sent)
        std::memcpy(mad + 8, script.last_sent + 8, 8);
    *length = len;
    return 1;
}
}

namespace {

struct ibmad_port* the_port() {
    static struct ibmad_port* port = [] {
        int classes[] = {IB_SMI_CLASS,        IB_SMI_DIRECT_CLASS, IB_SA_CLASS, IB_PERFORMANCE_CLASS,
                         IB_BOARD_MGMT_CLASS, IB_CC_CLASS,         0x09,        0x32};
        struct ibmad_port* p = mad_rpc_open_port(nullptr, 0, classes, 8);
        mad_rpc_set_timeout(p, 1);
        mad_rpc_set_retries(p, 2);
        return p;
    }();
    return port;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 3)
        return 0;
    struct ibmad_port* port = the_port();
    if (!port)
        return 0;

    uint8_t op = data[0], flags = data[1];
    size_t n = data[2] > 48 ? 48 : data[2];
    if (size < 3 + n)
        return 0;
    std::string addr(reinterpret_cast<const char*>(data + 3), n);
    script = Script{};
    script.replies = data + 3 + n;
    script.left = size - 3 - n;
    script.fix_tid = flags & 1;

    ib_portid_t id{}, sm{};
    uint8_t buf[1024] = {};
    int status = 0, portnum = 0;
    ibmad_gid_t gid{};
    char text[128];

    switch (op % 16) {
    case 0:
        str2drpath(&id.drpath, addr.data(), flags, 0);
        portid2str(&id);
        drpath2str(&id.drpath, text, sizeof(text));
        portid2portnum(&id);
        smp_query_status_via(buf, &id, IB_ATTR_NODE_INFO, 0, 0, &status, port);
        break;
    case 1:
        ib_resolve_portid_str_via(&id, addr.data(), static_cast<MAD_DEST>((flags >> 1) % 6), nullptr, port);
        portid2str(&id);
        break;
    case 2: ib_resolve_self_via(&id, &portnum, &gid, port); break;
    case 3: ib_resolve_smlid_via(&sm, 0, port); break;
    case 4:
        ib_portid_set(&sm, 1, 1, 0);
        ib_node_query_via(port, 0x1234, &sm, buf);
        break;
    case 5:
        ib_portid_set(&sm, 1, 1, 0);
        ib_path_query_via(port, gid, gid, &sm, buf);
        break;
    case 6:
        ib_portid_set(&id, 2, 0, 0);
        pma_query_via(buf, &id, flags, 0, IB_GSI_PORT_COUNTERS, port);
        break;
    case 7:
        ib_portid_set(&id, 2, 0, 0);
        performance_reset_via(buf, &id, 1, flags * 0x01010101u, 0,
                              flags & 1 ? IB_GSI_PORT_COUNTERS_EXT : IB_GSI_PORT_COUNTERS, port);
        break;
    case 8: {
        ib_vendor_call_t call{};
        call.method = flags & 1 ? IB_MAD_METHOD_GET : IB_MAD_METHOD_SEND;
        call.mgmt_class = flags & 2 ? 0x32 : 0x09;
        call.oui = IB_OPENIB_OUI;
        ib_portid_set(&id, 2, 0, 0);
        ib_vendor_call_via(buf, &id, &call, port);
        break;
    }
    case 9: {
        ib_bm_call_t call{};
        call.method = IB_MAD_METHOD_GET;
        call.bkey = 7;
        ib_portid_set(&id, 2, 0, 0);
        bm_call_via(buf, &id, &call, port);
        break;
    }
    case 10:
        ib_portid_set(&id, 2, 0, 0);
        cc_query_status_via(buf, &id, flags & 1 ? IB_CC_ATTR_CONGESTION_LOG : IB_CC_ATTR_CONGESTION_INFO, 0, 0, &status,
                            port, 9);
        break;
    case 11: {
        ib_sa_call_t sa{};
        sa.method = IB_MAD_METHOD_GET_TABLE;
        sa.attrid = IB_SA_ATTR_NODERECORD;
        ib_portid_set(&sm, 1, 1, 0);
        sa_rpc_call(port, buf, &sm, &sa, 0);
        break;
    }
    case 12: {
        ib_rpc_t rpc{};
        rpc.mgtclass = IB_SA_CLASS;
        rpc.method = IB_MAD_METHOD_GET_TABLE;
        rpc.datasz = IB_SA_DATA_SIZE;
        rpc.dataoffs = IB_SA_DATA_OFFS;
        ib_rmpp_hdr_t rmpp{};
        rmpp.type = IB_RMPP_TYPE_DATA;
        rmpp.flags = flags;
        ib_portid_set(&sm, 1, 1, 0);
        mad_rpc_rmpp(port, &rpc, &sm, &rmpp, buf);
        break;
    }
    case 13: {
        // answer a "received" MAD made of the first reply
        if (script.left >= 2 + IB_MAD_SIZE) {
            std::memcpy(buf + umad_size(), script.replies + 2, IB_MAD_SIZE);
            mad_respond_via(buf, nullptr, flags, port);
        }
        break;
    }
    case 14: mad_receive_via(buf, 1, port); break;
    default: {
        ib_rpc_t rpc{};
        rpc.mgtclass = IB_PERFORMANCE_CLASS;
        rpc.method = IB_MAD_METHOD_GET;
        rpc.datasz = flags;
        rpc.dataoffs = flags & 0x7f;
        ib_portid_set(&id, 3, 1, IB_DEFAULT_QP1_QKEY);
        mad_rpc(port, &rpc, &id, buf, buf);
        break;
    }
    }
    return 0;
}
