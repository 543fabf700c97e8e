// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Class agents: registering a port as client or server of a management
// class with the class version the IBA gives it.
#include "rpc_internal.h"

#include <cstring>

using namespace ibmad;

namespace {

int class_version(int mgmt) {
    if (mad_is_vendor_range1(mgmt) || mad_is_vendor_range2(mgmt))
        return 1;
    switch (mgmt) {
    case IB_SMI_CLASS:
    case IB_SMI_DIRECT_CLASS:
    case IB_PERFORMANCE_CLASS:
    case IB_BOARD_MGMT_CLASS:
    case IB_DEVICE_MGMT_CLASS: return 1;
    case IB_SA_CLASS:
    case IB_CC_CLASS: return 2;
    default: return 0;
    }
}

int register_port_client(int port_id, int mgmt, uint8_t rmpp_version) {
    int vers = class_version(mgmt);
    if (vers <= 0) {
        IBMAD_DEBUG("mad_register_port_client", "Unknown class %d mgmt_class", mgmt);
        return -1;
    }
    int agent = umad_register(port_id, mgmt, vers, rmpp_version, nullptr);
    if (agent < 0)
        IBMAD_DEBUG("mad_register_port_client", "Can't register agent for class %d", mgmt);
    return agent;
}

}  // namespace

IBMAD_EXPORT int mad_class_agent(int mgmt) {
    if (mgmt < 1 || mgmt >= max_class)
        return -1;
    return default_port()->class_agents[mgmt];
}

IBMAD_EXPORT int mad_register_client_via(int mgmt, uint8_t rmpp_version, struct ibmad_port* srcport) {
    if (!srcport || mgmt < 0 || mgmt >= max_class)
        return -1;
    int agent = register_port_client(srcport->port_id, mgmt, rmpp_version);
    if (agent < 0)
        return agent;
    srcport->class_agents[mgmt] = agent;
    return 0;
}

IBMAD_EXPORT int mad_register_client(int mgmt, uint8_t rmpp_version) {
    return mad_register_client_via(mgmt, rmpp_version, default_port());
}

IBMAD_EXPORT int mad_register_server_via(int mgmt, uint8_t rmpp_version, long method_mask[16 / sizeof(long)],
                                         uint32_t class_oui, struct ibmad_port* srcport) {
    long mask[16 / sizeof(long)];
    if (method_mask)
        std::memcpy(mask, method_mask, sizeof(mask));
    else
        std::memset(mask, 0xff, sizeof(mask));

    if (!srcport || mgmt < 0 || mgmt >= max_class)
        return -1;
    if (srcport->class_agents[mgmt] >= 0) {
        IBMAD_DEBUG("mad_register_server_via", "Class 0x%x already registered %d", mgmt, srcport->class_agents[mgmt]);
        return -1;
    }
    int vers = class_version(mgmt);
    if (vers <= 0) {
        IBMAD_DEBUG("mad_register_server_via", "Unknown class 0x%x mgmt_class", mgmt);
        return -1;
    }

    int agent;
    if (mad_is_vendor_range2(mgmt)) {
        uint8_t oui[3] = {static_cast<uint8_t>(class_oui >> 16), static_cast<uint8_t>(class_oui >> 8),
                          static_cast<uint8_t>(class_oui)};
        agent = umad_register_oui(srcport->port_id, mgmt, rmpp_version, oui, mask);
    } else {
        agent = umad_register(srcport->port_id, mgmt, vers, rmpp_version, mask);
    }
    if (agent < 0) {
        IBMAD_DEBUG("mad_register_server_via", "Can't register agent for class %d", mgmt);
        return -1;
    }
    srcport->class_agents[mgmt] = agent;
    return agent;
}

IBMAD_EXPORT int mad_register_server(int mgmt, uint8_t rmpp_version, long method_mask[16 / sizeof(long)],
                                     uint32_t class_oui) {
    return mad_register_server_via(mgmt, rmpp_version, method_mask, class_oui, default_port());
}
