// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Names of management classes, methods, attributes and status codes, as
// libibumad's umad_str.h functions return them (the texts are the
// reference's, including its quirks: an unknown method is "<unknown",
// without the closing bracket).
#include <infiniband/umad_str.h>
#include <infiniband/umad_types.h>

#include <endian.h>

#define UMAD_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct Name {
    unsigned value;
    const char* text;
};

template <size_t N>
const char* lookup(const Name (&table)[N], unsigned value, const char* missing) noexcept {
    for (const Name& n : table)
        if (n.value == value)
            return n.text;
    return missing;
}

constexpr const char* kUnknown = "<unknown>";

constexpr Name kClasses[] = {
    {0x01, "Subn"},   {0x81, "Subn"},    {0x03, "SubnAdm"}, {0x04, "Perf"},
    {0x05, "BM"},     {0x06, "DevMgt"},  {0x07, "ComMgt"},  {0x08, "SNMP"},
    {0x10, "DevAdm"}, {0x11, "BootMgt"}, {0x12, "BIS"},     {0x21, "CongestionManagment"},
};

constexpr Name kMethods[] = {
    {0x01, "Get"},    {0x02, "Set"},         {0x03, "Send"},    {0x05, "Trap"},
    {0x06, "Report"}, {0x07, "TrapRepress"}, {0x81, "GetResp"}, {0x86, "ReportResp"},
};

constexpr Name kSaMethods[] = {
    {0x12, "GetTable"},     {0x13, "GetTraceTable"}, {0x14, "GetMulti"},   {0x15, "Delete"},
    {0x92, "GetTableResp"}, {0x94, "GetMultiResp"},  {0x95, "DeleteResp"},
};

constexpr Name kCommonAttrs[] = {
    {0x0001, "Class Port Info"},
    {0x0002, "Notice"},
    {0x0003, "Inform Info"},
};

constexpr Name kSmAttrs[] = {
    {0x0010, "NodeDescription"},
    {0x0011, "NodeInfo"},
    {0x0012, "SwitchInfo"},
    {0x0014, "GUIDInfo"},
    {0x0015, "PortInfo"},
    {0x0016, "P_KeyTable"},
    {0x0017, "SLtoVLMappingTable"},
    {0x0018, "VLArbitrationTable"},
    {0x0019, "LinearForwardingTable"},
    {0x001a, "RandomForwardingTable"},
    {0x001b, "MulticastForwardingTable"},
    {0x001c, "LinkSpeedWidthPairsTable"},
    {0x001d, "VendorSpecificMadsTable"},
    {0x001e, "HierarchyInfo"},
    {0x0020, "SMInfo"},
    {0x0030, "VendorDiag"},
    {0x0031, "LedInfo"},
    {0x0032, "CableInfo"},
    {0x0033, "PortInfoExtended"},
};

constexpr Name kSaAttrs[] = {
    {0x0011, "NodeRecord"},
    {0x0012, "PortInfoRecord"},
    {0x0013, "SLtoVLMappingTableRecord"},
    {0x0014, "SwitchInfoRecord"},
    {0x0015, "LinearForwardingTableRecord"},
    {0x0016, "RandomForwardingTableRecord"},
    {0x0017, "MulticastForwardingTableRecord"},
    {0x0018, "SMInfoRecord"},
    {0x0019, "LinkSpeedWidthPairsTableRecord"},
    {0x0020, "LinkRecord"},
    {0x0030, "GuidInfoRecord"},
    {0x0031, "ServiceRecord"},
    {0x0033, "P_KeyTableRecord"},
    {0x0035, "PathRecord"},
    {0x0036, "VLArbitrationTableRecord"},
    {0x0038, "MCMemberRecord"},
    {0x0039, "TraceRecord"},
    {0x003a, "MultiPathRecord"},
    {0x003b, "ServiceAssociationRecord"},
    {0x003c, "HierarchyInfoRecord"},
    {0x003d, "CableInfoRecord"},
    {0x003e, "PortInfoExtendedRecord"},
    {0x00f3, "InformInfoRecord"},
};

constexpr Name kCmAttrs[] = {
    {0x0010, "ConnectRequest"},
    {0x0011, "MsgRcptAck"},
    {0x0012, "ConnectReject"},
    {0x0013, "ConnectReply"},
    {0x0014, "ReadyToUse"},
    {0x0015, "DisconnectRequest"},
    {0x0016, "DisconnectReply"},
    {0x0017, "ServiceIDResReq"},
    {0x0018, "ServiceIDResReqResp"},
    {0x0019, "LoadAlternatePath"},
    {0x001a, "AlternatePathResponse"},
    {0x001b, "SuggestAlternatePath"},
    {0x001c, "SuggestPathResponse"},
};

constexpr Name kSaStatus[] = {
    {0, "Success"},
    {1, "No Resources"},
    {2, "Request Invalid"},
    {3, "No Records"},
    {4, "Too Many Records"},
    {5, "Invalid GID"},
    {6, "Insufficient Components"},
    {7, "Request Denied"},
    {8, "Priority Suggested"},
};

}  // namespace

// Pure: lookups in the constant tables above (lookup() is noexcept), no
// allocation, so none of these goes through the C-entry barrier. (The
// definitions cannot say noexcept themselves: umad_str.h declares them
// without it, and every declaration must agree.)

UMAD_EXPORT const char* umad_class_str(uint8_t mgmt_class) {
    // Vendor classes: range 1 (0x09-0x0f) and range 2 (0x30-0x4f);
    // application classes 0x13-0x2f (CC, 0x21, has its own name).
    if ((mgmt_class >= 0x09 && mgmt_class <= 0x0f) || (mgmt_class >= 0x30 && mgmt_class <= 0x4f))
        return "Vendor";
    if (mgmt_class >= 0x13 && mgmt_class <= 0x2f && mgmt_class != 0x21)
        return "Application";
    return lookup(kClasses, mgmt_class, kUnknown);
}

UMAD_EXPORT const char* umad_method_str(uint8_t mgmt_class, uint8_t method) {
    if (mgmt_class == UMAD_CLASS_SUBN_ADM) {
        const char* sa = lookup(kSaMethods, method, nullptr);
        if (sa)
            return sa;
    }
    return lookup(kMethods, method, "<unknown");
}

UMAD_EXPORT const char* umad_attribute_str(uint8_t mgmt_class, __be16 attr_id) {
    unsigned id = be16toh(attr_id);
    const char* s = nullptr;
    switch (mgmt_class) {
    case UMAD_CLASS_SUBN_LID_ROUTED:
    case UMAD_CLASS_SUBN_DIRECTED_ROUTE: s = lookup(kSmAttrs, id, nullptr); break;
    case UMAD_CLASS_SUBN_ADM: s = lookup(kSaAttrs, id, nullptr); break;
    case UMAD_CLASS_CM: s = lookup(kCmAttrs, id, nullptr); break;
    default: break;
    }
    return s ? s : lookup(kCommonAttrs, id, kUnknown);
}

UMAD_EXPORT const char* umad_common_mad_status_str(__be16 status) {
    unsigned s = be16toh(status);
    if (s & 0x0001)
        return "Busy";
    if (s & 0x0002)
        return "Redirection required";
    switch ((s >> 2) & 0x7) {
    case 1: return "Bad Version";
    case 2: return "Method not supported";
    case 3: return "Method/Attribute combo not supported";
    case 7: return "Invalid attribute/modifier field";
    default: return "Success";
    }
}

UMAD_EXPORT const char* umad_sa_mad_status_str(__be16 status) {
    return lookup(kSaStatus, (be16toh(status) >> 8) & 0xff, "Undefined Error");
}
