// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// SA queries from the diagnostics: one GSI agent of the SA class, one
// request, one (possibly multi-segment) answer.
#include "ibdiag_common.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ibdiag {

namespace {
constexpr int kSaRequestLen = 256;  // a MAD
}

SaHandle::~SaHandle() {
    if (fd >= 0) {
        if (agent >= 0)
            umad_unregister(fd, agent);
        umad_close_port(fd);
    }
}

std::unique_ptr<SaHandle> sa_get_handle() {
    auto h = std::make_unique<SaHandle>();
    // The reference prints the CA name this way round: "(null)" when
    // none was given, empty when one was.
    const char* shown = cfg.ca ? "" : nullptr;
    resolve_sm_portid(cfg.ca, (uint8_t)cfg.ca_port, &h->dport);
    if (!h->dport.lid) {
        IBWARN("No SM/SA found on port %s:%d", shown, cfg.ca_port);
        return nullptr;
    }
    h->dport.qp = 1;
    if (!h->dport.qkey)
        h->dport.qkey = IB_DEFAULT_QP1_QKEY;
    h->fd = umad_open_port(cfg.ca, cfg.ca_port);
    if (h->fd < 0) {
        IBWARN("umad_open_port on port %s:%d failed", shown, cfg.ca_port);
        return nullptr;
    }
    h->agent = umad_register(h->fd, IB_SA_CLASS, 2, 1, nullptr);
    if (h->agent < 0) {
        IBWARN("umad_register for SA class failed on port %s:%d", shown, cfg.ca_port);
        return nullptr;
    }
    return h;
}

void* SaResult::record(unsigned i) {
    unsigned offset = mad_get_field(mad.data(), 0, IB_SA_ATTROFFS_F);
    return mad.data() + IB_SA_DATA_OFFS + (size_t)i * (offset << 3);
}

int sa_query(SaHandle& h, uint8_t method, uint16_t attr, uint32_t mod, uint64_t comp_mask, uint64_t sm_key,
             const void* data, size_t datasz, SaResult& result) {
    ib_rpc_t rpc{};
    rpc.mgtclass = IB_SA_CLASS;
    rpc.method = method;
    rpc.attr.id = attr;
    rpc.attr.mod = mod;
    rpc.mask = comp_mask;
    rpc.datasz = (int)datasz;
    rpc.dataoffs = IB_SA_DATA_OFFS;

    const size_t hdr = (size_t)umad_size();
    std::vector<uint8_t> umad(hdr + kSaRequestLen);
    mad_build_pkt(umad.data(), &rpc, &h.dport, nullptr, (void*)data);
    mad_set_field64(umad_get_mad(umad.data()), 0, IB_SA_MKEY_F, sm_key);
    if (ibdebug > 1)
        xdump(stdout, "SA Request:\n", umad_get_mad(umad.data()), kSaRequestLen);

    int ret = umad_send(h.fd, h.agent, umad.data(), kSaRequestLen, cfg.timeout, 0);
    if (ret < 0) {
        IBWARN("umad_send failed: attr 0x%x: %s\n", attr, strerror(errno));
        return -ret;
    }

    int len = kSaRequestLen;
    for (;;) {
        ret = umad_recv(h.fd, umad.data(), &len, cfg.timeout);
        if (ret >= 0)
            break;
        // A multi-segment (RMPP) answer: make room and read it again.
        if (errno == ENOSPC && len > 0 && (size_t)len > umad.size() - hdr) {
            umad.resize(hdr + (size_t)len);
            continue;
        }
        IBWARN("umad_recv failed: attr 0x%x: %s\n", attr, strerror(errno));
        return -ret;
    }
    if ((ret = umad_status(umad.data())))
        return ret;
    if (len < 0)
        len = 0;
    size_t got = std::min(umad.size() - hdr, (size_t)len);
    result.mad.assign(umad.begin() + (long)hdr, umad.begin() + (long)(hdr + got));
    if (result.mad.size() < (size_t)IB_SA_DATA_OFFS)
        result.mad.resize(IB_SA_DATA_OFFS + IB_SA_DATA_SIZE, 0);
    if (ibdebug > 1)
        xdump(stdout, "SA Response:\n", result.mad.data(), len);

    void* mad = result.mad.data();
    uint8_t rmethod = (uint8_t)mad_get_field(mad, 0, IB_MAD_METHOD_F);
    unsigned offset = mad_get_field(mad, 0, IB_SA_ATTROFFS_F);
    result.status = mad_get_field(mad, 0, IB_MAD_STATUS_F);
    if (result.status != 0)
        result.result_cnt = 0;
    else if (rmethod != IB_MAD_METHOD_GET_TABLE)
        result.result_cnt = 1;
    else if (!offset)
        result.result_cnt = 0;
    else
        result.result_cnt = (unsigned)((got - IB_SA_DATA_OFFS) / (offset << 3));
    // Single answers still need a whole record's room behind them.
    if (result.mad.size() < (size_t)IB_SA_DATA_OFFS + IB_SA_DATA_SIZE)
        result.mad.resize(IB_SA_DATA_OFFS + IB_SA_DATA_SIZE, 0);
    return 0;
}

void sa_report_err(int status) {
    static const char* const sa_errors[] = {"SA_NO_ERROR",
                                            "SA_ERR_NO_RESOURCES",
                                            "SA_ERR_REQ_INVALID",
                                            "SA_ERR_NO_RECORDS",
                                            "SA_ERR_TOO_MANY_RECORDS",
                                            "SA_ERR_REQ_INVALID_GID",
                                            "SA_ERR_REQ_INSUFFICIENT_COMPONENTS",
                                            "SA_ERR_REQ_DENIED",
                                            "SA_ERR_STATUS_PRIO_SUGGESTED",
                                            "SA_ERR_UNKNOWN"};
    static const char* const field_errors[] = {"MAD No invalid fields",
                                               "MAD Bad version",
                                               "MAD Method specified is not supported",
                                               "MAD Method/Attribute combination is not supported",
                                               "MAD Reserved",
                                               "MAD Reserved",
                                               "MAD Reserved",
                                               "MAD Invalid value in Attribute field(s) or Attribute Modifier",
                                               "MAD UNKNOWN ERROR"};
    char mad_part[128] = "";
    char sa_part[64] = "";
    int st = status & 0xff;
    if (st) {
        unsigned code = std::min<unsigned>((unsigned)st >> 2, 8);
        snprintf(mad_part, sizeof(mad_part), " (%s; %s; %s)", (st & 1) ? "BUSY" : "",
                 (st & 2) ? "Redirection Required" : "", field_errors[code]);
    }
    st = status >> 8;
    if (st) {
        unsigned code = std::min<unsigned>((uint8_t)st, 9);
        snprintf(sa_part, sizeof(sa_part), " SA(%s)", sa_errors[code]);
    }
    fprintf(stderr, "ERROR: Query result returned 0x%04x, %s%s\n", status, mad_part, sa_part);
}

}  // namespace ibdiag
