// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// vendstat: Mellanox vendor-class (0x0A) MADs of InfiniScale III/IV
// switches: general information (hardware, firmware and software
// versions), the IS3 per-port PortXmitWait counters read from config
// space, IS4 counter groups, and raw config-space records.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/ibdiag_common.h"

namespace {

using namespace ibdiag;

constexpr uint16_t kIs3DeviceId = 47396;
constexpr uint8_t kMlxVendorClass = 10;
constexpr uint16_t kIs3GeneralInfo = 0x17;
constexpr uint16_t kIs3ConfigSpaceAccess = 0x50;
constexpr uint16_t kIs4CounterGroupInfo = 0x90;
constexpr uint16_t kIs4ConfigCounterGroup = 0x91;
constexpr uint32_t kIs3PortXmitWait = 0x10013C;
constexpr unsigned kMaxRecords = 18;

struct ibmad_port* srcport;

// Big-endian readers over the vendor data area (which starts with 8
// reserved bytes in every layout used here).
uint16_t be16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
void put_be32(uint8_t* p, uint32_t v) {
    p[0] = uint8_t(v >> 24);
    p[1] = uint8_t(v >> 16);
    p[2] = uint8_t(v >> 8);
    p[3] = uint8_t(v);
}

// General info layout (offsets in the data area):
//   8: hw_info { be16 hw_revision; be16 device_id; 24 reserved; be32 uptime }
//  40: fw_info { resv, major, minor, sub_minor; be32 build_id; month, day;
//               be16 year; be16 resv; be16 hour; psid[16]; be32 ini_ver }
//  76: IS3: sw_info { resv, major, minor, sub_minor, ... }
//  76: IS4: ext_fw_info { be32 major, minor, sub_minor; 16 reserved }
// 104: IS4: sw_info
constexpr size_t kHw = 8, kFw = 40, kSwIs3 = 76, kExtFw = 76, kSwIs4 = 104;

// Config-space records: 8 reserved bytes, then {addr, data, mask} x 18.
struct ConfigSpace {
    // the vendor call moves a whole MAD data area (232 bytes) both ways
    uint8_t raw[256] = {};
    uint8_t* rec(unsigned i) { return raw + 8 + i * 12; }
};

// Devices whose general info carries the extended firmware version.
const uint16_t kExtFwInfoDevices[][2] = {
    {0x0245, 0x0245}, {0xc738, 0xc73b}, {0xcb20, 0xcb20}, {0xcf08, 0xcf08}, {0xd2f0, 0xd2f0}, {0x01b3, 0x01b3},
    {0x1003, 0x101b}, {0xa2d2, 0xa2d2}, {0x1b02, 0x1b02}, {0x1b50, 0x1b50}, {0x1ba0, 0x1ba0}, {0x1bd0, 0x1bd5},
    {0x1bf0, 0x1bf0}, {0x1b33, 0x1b33}, {0x1b73, 0x1b73}, {0x1b40, 0x1b41}, {0x1b60, 0x1b61}, {0x1b83, 0x1b83},
    {0x1b93, 0x1b94}, {0x1bb4, 0x1bb5}, {0x1bc4, 0x1bc6},
};

bool is_ext_fw_info_supported(uint16_t device_id) {
    for (const auto& r : kExtFwInfoDevices)
        if (r[0] <= device_id && device_id <= r[1])
            return true;
    return false;
}

int do_vendor(ib_portid_t* portid, uint8_t mgmt_class, uint8_t method, uint16_t attr_id, uint32_t attr_mod,
              void* data) {
    ib_vendor_call_t call;

    memset(&call, 0, sizeof call);
    call.mgmt_class = mgmt_class;
    call.method = method;
    call.timeout = unsigned(cfg.timeout);
    call.attrid = attr_id;
    call.mod = attr_mod;
    if (!ib_vendor_call_via(data, portid, &call, srcport)) {
        fprintf(stderr, "vendstat: method %u, attribute %u failure\n", method, attr_id);
        return -1;
    }
    return 0;
}

int do_config_space_records(ib_portid_t* portid, bool set, ConfigSpace& cs, unsigned records) {
    if (records > kMaxRecords)
        records = kMaxRecords;
    if (do_vendor(portid, kMlxVendorClass, set ? IB_MAD_METHOD_SET : IB_MAD_METHOD_GET, kIs3ConfigSpaceAccess,
                  2u << 22 | records << 16, cs.raw)) {
        fprintf(stderr, "cannot %s config space records\n", set ? "set" : "get");
        return -1;
    }
    for (unsigned i = 0; i < records; i++)
        printf("Config space record at 0x%x: 0x%x\n", be32(cs.rec(i)), be32(cs.rec(i) + 4) & be32(cs.rec(i) + 8));
    return 0;
}

int counter_groups_info(ib_portid_t* portid, int port) {
    uint8_t buf[1024] = {};

    if (do_vendor(portid, kMlxVendorClass, IB_MAD_METHOD_GET, kIs4CounterGroupInfo, uint32_t(port), buf)) {
        fprintf(stderr, "counter group info query failure\n");
        return -1;
    }
    // 8 reserved, 3 reserved, num_of_counter_groups, be32 masks[2]
    int num = buf[11];
    printf("counter_group_info:\n");
    printf("%d counter groups\n", num);
    // The reference's structure holds two masks but prints as many as
    // the device claims, reading on through its buffer.
    for (int i = 0; i < num && 12 + i * 4 + 4 <= int(sizeof buf); i++)
        printf("group%d mask %#x\n", i, be32(buf + 12 + i * 4));
    return 0;
}

int config_counter_groups(ib_portid_t* portid, int port, int cg0, int cg1) {
    uint8_t buf[1024] = {};

    printf("counter_groups_config: configuring group0 %d group1 %d\n", cg0, cg1);
    // 8 reserved, 4 reserved, then {3 reserved, group_select} x 2
    buf[15] = uint8_t(cg0);
    buf[19] = uint8_t(cg1);
    if (do_vendor(portid, kMlxVendorClass, IB_MAD_METHOD_SET, kIs4ConfigCounterGroup, uint32_t(port), buf)) {
        fprintf(stderr, "config counter group set failure\n");
        return -1;
    }
    memset(buf, 0, sizeof buf);
    if (do_vendor(portid, kMlxVendorClass, IB_MAD_METHOD_GET, kIs4ConfigCounterGroup, uint32_t(port), buf)) {
        fprintf(stderr, "config counter group query failure\n");
        return -1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int mgmt_classes[2] = {IB_SA_CLASS, kMlxVendorClass};
    ib_portid_t portid = {};
    int port = 0;
    bool general_info = false, xmit_wait = false, counter_group_info = false;
    bool config_counter_group = false;
    int cg0 = 0, cg1 = 0;
    ConfigSpace read_cs, write_cs;
    unsigned read_records = 0, write_records = 0;

    static const Option opts[] = {
        {"N", 'N', 0, nullptr, "show IS3 or IS4 general information"},
        {"w", 'w', 0, nullptr, "show IS3 port xmit wait counters"},
        {"i", 'i', 0, nullptr, "show IS4 counter group info"},
        {"c", 'c', 1, "<num,num>", "configure IS4 counter groups"},
        {"Read", 'R', 1, "<addr,mask>", "Read configuration space record at addr"},
        {"Write", 'W', 1, "<addr,val,mask>", "Write configuration space record at addr"},
    };
    auto handler = [&](int ch, char* arg) -> int {
        unsigned address = 0, data = 0, mask = 0;
        int n;
        switch (ch) {
        case 'N': general_info = true; break;
        case 'w': xmit_wait = true; break;
        case 'i': counter_group_info = true; break;
        case 'c':
            config_counter_group = true;
            if (sscanf(arg, "%d,%d", &cg0, &cg1) != 2)
                return -1;
            break;
        case 'R':
            if (read_records >= kMaxRecords)
                break;
            n = sscanf(arg, "%x,%x", &address, &mask);
            if (n < 1)
                return -1;
            if (n == 1)
                mask = 0xffffffff;
            put_be32(read_cs.rec(read_records), address);
            put_be32(read_cs.rec(read_records) + 8, mask);
            read_records++;
            break;
        case 'W':
            if (write_records >= kMaxRecords)
                break;
            n = sscanf(arg, "%x,%x,%x", &address, &data, &mask);
            if (n < 2)
                return -1;
            if (n == 2)
                mask = 0xffffffff;
            put_be32(write_cs.rec(write_records), address);
            put_be32(write_cs.rec(write_records) + 4, data);
            put_be32(write_cs.rec(write_records) + 8, mask);
            write_records++;
            break;
        default: return -1;
        }
        return 0;
    };
    int first =
        process_opts(argc, argv, "DKy", opts, handler, "<lid|guid> [port]",
                     {"-N 6\t\t# read IS3 or IS4 general information", "-w 6\t\t# read IS3 port xmit wait counters",
                      "-i 6 12\t# read IS4 port 12 counter group info",
                      "-c 0,1 6 12\t# configure IS4 port 12 counter groups for PortXmitDataSL",
                      "-c 2,8 6 12\t# configure IS4 port 12 counter groups for PortRcvDataSL"});
    argc -= first;
    argv += first;

    if (argc > 1)
        port = int(strtoul(argv[1], nullptr, 0));

    srcport = open_port(mgmt_classes, 2);

    if (argc) {
        if (resolve_portid_str(cfg.ca, cfg.ca_port, &portid, argv[0], cfg.dest_type, cfg.sm_id, srcport) < 0) {
            mad_rpc_close_port(srcport);
            IBEXIT("can't resolve destination port %s", argv[0]);
        }
    } else {
        if (resolve_self(cfg.ca, cfg.ca_port, &portid, &port, nullptr) < 0) {
            mad_rpc_close_port(srcport);
            IBEXIT("can't resolve self port %s", argv[0]);
        }
    }

    if (counter_group_info) {
        counter_groups_info(&portid, port);
        mad_rpc_close_port(srcport);
        return 0;
    }
    if (config_counter_group) {
        config_counter_groups(&portid, port, cg0, cg1);
        mad_rpc_close_port(srcport);
        return 0;
    }
    if (read_records || write_records) {
        if (read_records)
            do_config_space_records(&portid, false, read_cs, read_records);
        if (write_records)
            do_config_space_records(&portid, true, write_cs, write_records);
        mad_rpc_close_port(srcport);
        return 0;
    }

    if (!general_info && !xmit_wait) {
        mad_rpc_close_port(srcport);
        IBEXIT("at least one of -N and -w must be specified");
    }

    // The vendor ClassPortInfo must answer if the class is supported.
    uint8_t buf[1024] = {};
    if (do_vendor(&portid, kMlxVendorClass, IB_MAD_METHOD_GET, CLASS_PORT_INFO, 0, buf)) {
        mad_rpc_close_port(srcport);
        IBEXIT("classportinfo query");
    }
    memset(buf, 0, sizeof buf);
    if (do_vendor(&portid, kMlxVendorClass, IB_MAD_METHOD_GET, kIs3GeneralInfo, 0, buf)) {
        mad_rpc_close_port(srcport);
        IBEXIT("generalinfo query");
    }

    uint16_t device_id = be16(buf + kHw + 2);
    uint32_t fw_major, fw_minor, fw_sub;
    uint8_t sw_major, sw_minor, sw_sub;
    if (is_ext_fw_info_supported(device_id)) {
        fw_major = be32(buf + kExtFw);
        fw_minor = be32(buf + kExtFw + 4);
        fw_sub = be32(buf + kExtFw + 8);
        sw_major = buf[kSwIs4 + 1];
        sw_minor = buf[kSwIs4 + 2];
        sw_sub = buf[kSwIs4 + 3];
    } else {
        fw_major = buf[kFw + 1];
        fw_minor = buf[kFw + 2];
        fw_sub = buf[kFw + 3];
        sw_major = buf[kSwIs3 + 1];
        sw_minor = buf[kSwIs3 + 2];
        sw_sub = buf[kSwIs3 + 3];
    }

    if (general_info) {
        char psid[17] = {};
        memcpy(psid, buf + kFw + 16, 16);
        printf("hw_dev_rev:  0x%04x\n", be16(buf + kHw));
        printf("hw_dev_id:   0x%04x\n", device_id);
        printf("hw_uptime:   0x%08x\n", be32(buf + kHw + 28));
        printf("fw_version:  %02d.%02d.%02d\n", fw_major, fw_minor, fw_sub);
        printf("fw_build_id: 0x%04x\n", be32(buf + kFw + 4));
        printf("fw_date:     %02x/%02x/%04x\n", buf[kFw + 8], buf[kFw + 9], be16(buf + kFw + 10));
        // psid is followed by ini_file_version in the reference's
        // struct: an unterminated psid runs on into it
        printf("fw_psid:     '%s'\n", psid);
        printf("fw_ini_ver:  %d\n", be32(buf + kFw + 32));
        printf("sw_version:  %02d.%02d.%02d\n", sw_major, sw_minor, sw_sub);
    }

    if (xmit_wait) {
        if (device_id != kIs3DeviceId) {
            mad_rpc_close_port(srcport);
            IBEXIT("Unsupported device ID 0x%x", device_id);
        }
        // ports 4..19 are one request, ports 20..23 and 1..3 another
        ConfigSpace cs;
        for (unsigned i = 0; i < 16; i++)
            put_be32(cs.rec(i), kIs3PortXmitWait + ((i + 1) << 12));
        if (do_vendor(&portid, kMlxVendorClass, IB_MAD_METHOD_GET, kIs3ConfigSpaceAccess, 2u << 22 | 16u << 16,
                      cs.raw)) {
            mad_rpc_close_port(srcport);
            IBEXIT("vendstat");
        }
        for (unsigned i = 0; i < 16; i++)
            if (uint32_t v = be32(cs.rec(i) + 4))
                printf("Port %d: PortXmitWait 0x%x\n", i + 4, v);

        ConfigSpace cs2;
        for (unsigned i = 0; i < 8; i++)
            put_be32(cs2.rec(i), kIs3PortXmitWait + ((i + 17) << 12));
        if (do_vendor(&portid, kMlxVendorClass, IB_MAD_METHOD_GET, kIs3ConfigSpaceAccess, 2u << 22 | 8u << 16,
                      cs2.raw)) {
            mad_rpc_close_port(srcport);
            IBEXIT("vendstat");
        }
        for (unsigned i = 0; i < 8; i++)
            if (uint32_t v = be32(cs2.rec(i) + 4))
                printf("Port %d: PortXmitWait 0x%x\n", i < 4 ? int(i) + 21 : int(i) - 3, v);
    }

    mad_rpc_close_port(srcport);
    return 0;
}
