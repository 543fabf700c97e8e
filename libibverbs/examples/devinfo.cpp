// ibv_devinfo: print the attributes of the RDMA devices and their ports.
//
// The output (stdout, stderr, exit status) is a compatibility contract: it
// must match the reference ibverbs-utils 44 byte for byte, since scripts
// parse it. Every format string below is therefore fixed, and so are a few
// quirks that look odd but are kept on purpose (they are noted where they
// occur). Only the public <infiniband/verbs.h> API is used.

#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <endian.h>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace {

// Exit statuses of one device's report, as the reference defines them.
constexpr int kOpenFailed = 1;
constexpr int kQueryDeviceFailed = 2;
constexpr int kCloseFailed = 3;
constexpr int kBadPort = 4;

bool g_verbose = false;

struct FlagName {
    uint64_t bit;
    const char* name;
};

// Names of capability bits, printed one per line in table order.
constexpr FlagName kDeviceCapFlags[] = {
    {IBV_DEVICE_RESIZE_MAX_WR, "RESIZE_MAX_WR"},
    {IBV_DEVICE_BAD_PKEY_CNTR, "BAD_PKEY_CNTR"},
    {IBV_DEVICE_BAD_QKEY_CNTR, "BAD_QKEY_CNTR"},
    {IBV_DEVICE_RAW_MULTI, "RAW_MULTI"},
    {IBV_DEVICE_AUTO_PATH_MIG, "AUTO_PATH_MIG"},
    {IBV_DEVICE_CHANGE_PHY_PORT, "CHANGE_PHY_PORT"},
    {IBV_DEVICE_UD_AV_PORT_ENFORCE, "UD_AV_PORT_ENFORCE"},
    {IBV_DEVICE_CURR_QP_STATE_MOD, "CURR_QP_STATE_MOD"},
    {IBV_DEVICE_SHUTDOWN_PORT, "SHUTDOWN_PORT"},
    {IBV_DEVICE_INIT_TYPE, "INIT_TYPE"},
    {IBV_DEVICE_PORT_ACTIVE_EVENT, "PORT_ACTIVE_EVENT"},
    {IBV_DEVICE_SYS_IMAGE_GUID, "SYS_IMAGE_GUID"},
    {IBV_DEVICE_RC_RNR_NAK_GEN, "RC_RNR_NAK_GEN"},
    {IBV_DEVICE_SRQ_RESIZE, "SRQ_RESIZE"},
    {IBV_DEVICE_N_NOTIFY_CQ, "N_NOTIFY_CQ"},
    {IBV_DEVICE_MEM_WINDOW, "MEM_WINDOW"},
    {IBV_DEVICE_UD_IP_CSUM, "UD_IP_CSUM"},
    {IBV_DEVICE_XRC, "XRC"},
    {IBV_DEVICE_MEM_MGT_EXTENSIONS, "MEM_MGT_EXTENSIONS"},
    {IBV_DEVICE_MEM_WINDOW_TYPE_2A, "MEM_WINDOW_TYPE_2A"},
    {IBV_DEVICE_MEM_WINDOW_TYPE_2B, "MEM_WINDOW_TYPE_2B"},
    {IBV_DEVICE_RC_IP_CSUM, "RC_IP_CSUM"},
    {IBV_DEVICE_RAW_IP_CSUM, "RAW_IP_CSUM"},
    {IBV_DEVICE_MANAGED_FLOW_STEERING, "MANAGED_FLOW_STEERING"},
};

// Only the upper half of device_cap_flags_ex is decoded; the lower half
// repeats device_cap_flags.
constexpr FlagName kDeviceCapFlagsEx[] = {
    {IBV_DEVICE_RAW_SCATTER_FCS, "RAW_SCATTER_FCS"},
    {IBV_DEVICE_PCI_WRITE_END_PADDING, "PCI_WRITE_END_PADDING"},
};

constexpr FlagName kOdpGeneralCaps[] = {
    {IBV_ODP_SUPPORT, "ODP_SUPPORT"},
    {IBV_ODP_SUPPORT_IMPLICIT, "ODP_SUPPORT_IMPLICIT"},
};

constexpr FlagName kOdpTransportCaps[] = {
    {IBV_ODP_SUPPORT_SEND, "SUPPORT_SEND"},     {IBV_ODP_SUPPORT_RECV, "SUPPORT_RECV"},
    {IBV_ODP_SUPPORT_WRITE, "SUPPORT_WRITE"},   {IBV_ODP_SUPPORT_READ, "SUPPORT_READ"},
    {IBV_ODP_SUPPORT_ATOMIC, "SUPPORT_ATOMIC"}, {IBV_ODP_SUPPORT_SRQ_RECV, "SUPPORT_SRQ"},
};

constexpr FlagName kRawPacketCaps[] = {
    {IBV_RAW_PACKET_CAP_CVLAN_STRIPPING, "C-VLAN stripping offload"},
    {IBV_RAW_PACKET_CAP_SCATTER_FCS, "Scatter FCS offload"},
    {IBV_RAW_PACKET_CAP_IP_CSUM, "IP csum offload"},
    {IBV_RAW_PACKET_CAP_DELAY_DROP, "Delay drop"},
};

// supported_qpts fields are bit masks indexed by enum ibv_qp_type.
constexpr FlagName kQpTypeBits[] = {
    {1u << IBV_QPT_RAW_PACKET, "SUPPORT_RAW_PACKET"},
    {1u << IBV_QPT_UD, "SUPPORT_UD"},
};

constexpr uint64_t known_bits(std::span<const FlagName> table) {
    uint64_t all = 0;
    for (const FlagName& f : table)
        all |= f.bit;
    return all;
}

static_assert(~known_bits(kDeviceCapFlags) == 0xffffffff'd8498000ULL,
              "device_cap_flags names must cover the bits the reference knows");

// Prints the name of each set bit of `value` known to `table`.
void print_flag_names(uint64_t value, std::span<const FlagName> table) {
    for (const FlagName& f : table)
        if (value & f.bit)
            std::printf("\t\t\t\t\t%s\n", f.name);
}

// 32-bit and 64-bit masks report leftovers in different widths.
void print_unknown32(uint32_t value, std::span<const FlagName> table) {
    const uint32_t rest = value & ~static_cast<uint32_t>(known_bits(table));
    if (rest)
        std::printf("\t\t\t\t\tUnknown flags: 0x%X\n", rest);
}

void print_unknown64(uint64_t value, std::span<const FlagName> table) {
    const uint64_t rest = value & ~known_bits(table);
    if (rest)
        std::printf("\t\t\t\t\tUnknown flags: 0x%" PRIX64 "\n", rest);
}

const char* transport_name(ibv_transport_type t) {
    switch (t) {
    case IBV_TRANSPORT_IB: return "InfiniBand";
    case IBV_TRANSPORT_IWARP: return "iWARP";
    case IBV_TRANSPORT_USNIC: return "usNIC";
    case IBV_TRANSPORT_USNIC_UDP: return "usNIC UDP";
    case IBV_TRANSPORT_UNSPECIFIED: return "unspecified";
    default: return "invalid transport";
    }
}

const char* atomic_cap_name(ibv_atomic_cap cap) {
    switch (cap) {
    case IBV_ATOMIC_NONE: return "ATOMIC_NONE";
    case IBV_ATOMIC_HCA: return "ATOMIC_HCA";
    case IBV_ATOMIC_GLOB: return "ATOMIC_GLOB";
    default: return "invalid atomic capability";
    }
}

const char* port_state_name(ibv_port_state state) {
    switch (state) {
    case IBV_PORT_DOWN: return "PORT_DOWN";
    case IBV_PORT_INIT: return "PORT_INIT";
    case IBV_PORT_ARMED: return "PORT_ARMED";
    case IBV_PORT_ACTIVE: return "PORT_ACTIVE";
    default: return "invalid state";
    }
}

const char* mtu_name(ibv_mtu mtu) {
    switch (mtu) {
    case IBV_MTU_256: return "256";
    case IBV_MTU_512: return "512";
    case IBV_MTU_1024: return "1024";
    case IBV_MTU_2048: return "2048";
    case IBV_MTU_4096: return "4096";
    default: return "invalid MTU";
    }
}

const char* link_layer_name(uint8_t link_layer) {
    switch (link_layer) {
    case IBV_LINK_LAYER_UNSPECIFIED: return "Unspecified";
    case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
    case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
    default: return "Unknown";
    }
}

// IB PortInfo encodings (IBTA vol. 1, 14.2.5.6).
const char* vl_cap_name(uint8_t vl_cap) {
    switch (vl_cap) {
    case 1: return "1";
    case 2: return "2";
    case 3: return "4";
    case 4: return "8";
    case 5: return "15";
    default: return "invalid value";
    }
}

const char* link_width_name(uint8_t width) {
    switch (width) {
    case 1: return "1";
    case 2: return "4";
    case 4: return "8";
    case 8: return "12";
    case 16: return "2";
    default: return "invalid width";
    }
}

// Speeds the reference (44) knows; later encodings print as invalid there,
// so they do here too.
const char* link_speed_name(uint8_t speed) {
    switch (speed) {
    case 1: return "2.5 Gbps";
    case 2: return "5.0 Gbps";
    case 4:
    case 8: return "10.0 Gbps";
    case 16: return "14.0 Gbps";
    case 32: return "25.0 Gbps";
    case 64: return "50.0 Gbps";
    case 128: return "100.0 Gbps";
    default: return "invalid speed";
    }
}

const char* phys_state_name(uint8_t state) {
    switch (state) {
    case 1: return "SLEEP";
    case 2: return "POLLING";
    case 3: return "DISABLED";
    case 4: return "PORT_CONFIGURATION TRAINNING";
    case 5: return "LINK_UP";
    case 6: return "LINK_ERROR_RECOVERY";
    case 7: return "PHY TEST";
    default: return "invalid physical state";
    }
}

std::string guid_text(__be64 guid_be) {
    const uint64_t g = be64toh(guid_be);
    char text[20];
    std::snprintf(text, sizeof(text), "%04x:%04x:%04x:%04x", static_cast<unsigned>(g >> 48) & 0xffff,
                  static_cast<unsigned>(g >> 32) & 0xffff, static_cast<unsigned>(g >> 16) & 0xffff,
                  static_cast<unsigned>(g) & 0xffff);
    return text;
}

// Reads a small sysfs attribute the way libibverbs does: at most `cap`
// bytes, one trailing newline dropped. Empty or oversized files give no
// value.
std::optional<std::string> read_sysfs_attr(const std::string& path, size_t cap) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return std::nullopt;
    std::string buf(cap, '\0');
    const ssize_t got = ::read(fd, buf.data(), cap);
    ::close(fd);
    if (got <= 0)
        return std::nullopt;
    size_t len = static_cast<size_t>(got);
    if (buf[len - 1] == '\n')
        --len;
    else if (len == cap)
        return std::nullopt;
    if (len == 0)
        return std::nullopt;
    buf.resize(len);
    // Printed with %s in the reference: an embedded NUL ends the text.
    buf.resize(std::strlen(buf.c_str()));
    return buf;
}

// How the GID line is labelled. These are the values of the reference's
// sysfs-style classification (IB and RoCE v1 share one), derived here from
// the public ibv_query_gid_ex().
enum class GidKind { IbOrRoceV1, RoceV2, Unknown };

GidKind classify_gid(ibv_context* ctx, uint8_t port, int index) {
    ibv_gid_entry entry{};
    const int ret = ibv_query_gid_ex(ctx, port, static_cast<uint32_t>(index), &entry, 0);
    // An empty table slot has no type; it counts as IB/RoCE v1.
    if (ret == ENODATA)
        return GidKind::IbOrRoceV1;
    if (ret)
        return GidKind::Unknown;
    if (entry.gid_type == IBV_GID_TYPE_IB || entry.gid_type == IBV_GID_TYPE_ROCE_V1)
        return GidKind::IbOrRoceV1;
    return GidKind::RoceV2;
}

const char* gid_kind_name(GidKind kind) {
    switch (kind) {
    case GidKind::IbOrRoceV1: return "RoCE v1";
    case GidKind::RoceV2: return "RoCE v2";
    default: return "Invalid gid type";
    }
}

// A GID whose interface identifier (low 8 bytes) is zero is an unused slot.
bool is_unused_gid(const ibv_gid& gid) {
    for (int i = 8; i < 16; ++i)
        if (gid.raw[i])
            return false;
    return true;
}

void print_gid_line(const ibv_gid& gid, int index, GidKind kind, uint8_t link_layer) {
    std::string suffix;
    if (link_layer == IBV_LINK_LAYER_ETHERNET)
        suffix = std::string(", ") + gid_kind_name(kind);

    if (kind == GidKind::IbOrRoceV1) {
        const uint8_t* r = gid.raw;
        std::printf("\t\t\tGID[%3d]:\t\t%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
                    "%02x%02x:%02x%02x:%02x%02x:%02x%02x%s\n",
                    index, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
                    r[14], r[15], suffix.c_str());
    } else if (kind == GidKind::RoceV2) {
        char text[INET6_ADDRSTRLEN] = {};
        ::inet_ntop(AF_INET6, gid.raw, text, sizeof(text));
        std::printf("\t\t\tGID[%3d]:\t\t%s%s\n", index, text, suffix.c_str());
    }
    // An entry of unknown type is not printed at all.
}

// Returns 0, or the failing ibv_query_gid() status.
int print_port_gids(ibv_context* ctx, uint8_t port, const ibv_port_attr& attr) {
    for (int i = 0; i < attr.gid_tbl_len; ++i) {
        ibv_gid gid;
        const int rc = ibv_query_gid(ctx, port, i, &gid);
        if (rc) {
            std::fprintf(stderr, "Failed to query gid to port %u, index %d\n", port, i);
            return rc;
        }
        const GidKind kind = classify_gid(ctx, port, i);
        if (!is_unused_gid(gid))
            print_gid_line(gid, i, kind, attr.link_layer);
    }
    return 0;
}

void print_odp_transport(uint32_t caps) {
    if (!caps) {
        std::puts("\t\t\t\t\tNO SUPPORT");
        return;
    }
    print_flag_names(caps, kOdpTransportCaps);
    print_unknown32(caps, kOdpTransportCaps);
}

void print_odp_caps(const ibv_device_attr_ex& a) {
    const ibv_odp_caps& odp = a.odp_caps;
    std::puts("\tgeneral_odp_caps:");
    print_flag_names(odp.general_caps, kOdpGeneralCaps);
    print_unknown64(odp.general_caps, kOdpGeneralCaps);
    std::puts("\trc_odp_caps:");
    print_odp_transport(odp.per_transport_caps.rc_odp_caps);
    std::puts("\tuc_odp_caps:");
    print_odp_transport(odp.per_transport_caps.uc_odp_caps);
    std::puts("\tud_odp_caps:");
    print_odp_transport(odp.per_transport_caps.ud_odp_caps);
    std::puts("\txrc_odp_caps:");
    print_odp_transport(a.xrc_odp_caps);
}

void print_supported_qpts(uint32_t qpts) {
    std::puts("\t\tsupported_qp:");
    print_flag_names(qpts, kQpTypeBits);
    print_unknown32(qpts, kQpTypeBits);
}

void print_extended_caps(const ibv_device_attr_ex& a) {
    print_odp_caps(a);

    if (a.completion_timestamp_mask)
        std::printf("\tcompletion timestamp_mask:\t\t\t0x%016" PRIx64 "\n", a.completion_timestamp_mask);
    else
        std::puts("\tcompletion_timestamp_mask not supported");

    if (a.hca_core_clock)
        std::printf("\thca_core_clock:\t\t\t%" PRIu64 "kHZ\n", a.hca_core_clock);
    else
        std::puts("\tcore clock not supported");

    if (a.raw_packet_caps) {
        std::puts("\traw packet caps:");
        print_flag_names(a.raw_packet_caps, kRawPacketCaps);
    }

    std::printf("\tdevice_cap_flags_ex:\t\t0x%" PRIX64 "\n", a.device_cap_flags_ex);
    const uint64_t upper = a.device_cap_flags_ex & 0xffffffff'00000000ULL;
    print_flag_names(upper, kDeviceCapFlagsEx);
    print_unknown64(upper, kDeviceCapFlagsEx);

    std::puts("\ttso_caps:");
    std::printf("\t\tmax_tso:\t\t\t%d\n", a.tso_caps.max_tso);
    if (a.tso_caps.max_tso)
        print_supported_qpts(a.tso_caps.supported_qpts);

    const ibv_rss_caps& rss = a.rss_caps;
    std::puts("\trss_caps:");
    std::printf("\t\tmax_rwq_indirection_tables:\t\t\t%u\n", rss.max_rwq_indirection_tables);
    std::printf("\t\tmax_rwq_indirection_table_size:\t\t\t%u\n", rss.max_rwq_indirection_table_size);
    std::printf("\t\trx_hash_function:\t\t\t\t0x%x\n", rss.rx_hash_function);
    std::printf("\t\trx_hash_fields_mask:\t\t\t\t0x%" PRIX64 "\n", rss.rx_hash_fields_mask);
    if (rss.supported_qpts)
        print_supported_qpts(rss.supported_qpts);

    std::printf("\tmax_wq_type_rq:\t\t\t%u\n", a.max_wq_type_rq);

    const ibv_packet_pacing_caps& pp = a.packet_pacing_caps;
    std::puts("\tpacket_pacing_caps:");
    std::printf("\t\tqp_rate_limit_min:\t%ukbps\n", pp.qp_rate_limit_min);
    std::printf("\t\tqp_rate_limit_max:\t%ukbps\n", pp.qp_rate_limit_max);
    if (pp.qp_rate_limit_max)
        print_supported_qpts(pp.supported_qpts);

    const ibv_tm_caps& tm = a.tm_caps;
    if (tm.max_num_tags) {
        std::printf("\tmax_rndv_hdr_size:\t\t%u\n", tm.max_rndv_hdr_size);
        std::printf("\tmax_num_tags:\t\t\t%u\n", tm.max_num_tags);
        std::printf("\tmax_ops:\t\t\t%u\n", tm.max_ops);
        std::printf("\tmax_sge:\t\t\t%u\n", tm.max_sge);
        std::puts("\tflags:");
        if (tm.flags & IBV_TM_CAP_RC)
            std::puts("\t\t\t\t\tIBV_TM_CAP_RC");
    } else {
        std::puts("\ttag matching not supported");
    }

    const ibv_cq_moderation_caps& cqm = a.cq_mod_caps;
    if (cqm.max_cq_count && cqm.max_cq_period) {
        std::puts("\n\tcq moderation caps:");
        std::printf("\t\tmax_cq_count:\t%u\n", cqm.max_cq_count);
        std::printf("\t\tmax_cq_period:\t%u us\n\n", cqm.max_cq_period);
    }

    if (a.max_dm_size)
        std::printf("\tmaximum available device memory:\t%" PRIu64 "Bytes\n\n", a.max_dm_size);
}

void print_device_limits(const ibv_device_attr& d) {
    std::printf("\tmax_mr_size:\t\t\t0x%llx\n", static_cast<unsigned long long>(d.max_mr_size));
    std::printf("\tpage_size_cap:\t\t\t0x%llx\n", static_cast<unsigned long long>(d.page_size_cap));
    std::printf("\tmax_qp:\t\t\t\t%d\n", d.max_qp);
    std::printf("\tmax_qp_wr:\t\t\t%d\n", d.max_qp_wr);
    std::printf("\tdevice_cap_flags:\t\t0x%08x\n", d.device_cap_flags);
    print_flag_names(d.device_cap_flags, kDeviceCapFlags);
    print_unknown32(d.device_cap_flags, kDeviceCapFlags);
    std::printf("\tmax_sge:\t\t\t%d\n", d.max_sge);
    std::printf("\tmax_sge_rd:\t\t\t%d\n", d.max_sge_rd);
    std::printf("\tmax_cq:\t\t\t\t%d\n", d.max_cq);
    std::printf("\tmax_cqe:\t\t\t%d\n", d.max_cqe);
    std::printf("\tmax_mr:\t\t\t\t%d\n", d.max_mr);
    std::printf("\tmax_pd:\t\t\t\t%d\n", d.max_pd);
    std::printf("\tmax_qp_rd_atom:\t\t\t%d\n", d.max_qp_rd_atom);
    std::printf("\tmax_ee_rd_atom:\t\t\t%d\n", d.max_ee_rd_atom);
    std::printf("\tmax_res_rd_atom:\t\t%d\n", d.max_res_rd_atom);
    std::printf("\tmax_qp_init_rd_atom:\t\t%d\n", d.max_qp_init_rd_atom);
    std::printf("\tmax_ee_init_rd_atom:\t\t%d\n", d.max_ee_init_rd_atom);
    std::printf("\tatomic_cap:\t\t\t%s (%d)\n", atomic_cap_name(d.atomic_cap), d.atomic_cap);
    std::printf("\tmax_ee:\t\t\t\t%d\n", d.max_ee);
    std::printf("\tmax_rdd:\t\t\t%d\n", d.max_rdd);
    std::printf("\tmax_mw:\t\t\t\t%d\n", d.max_mw);
    std::printf("\tmax_raw_ipv6_qp:\t\t%d\n", d.max_raw_ipv6_qp);
    std::printf("\tmax_raw_ethy_qp:\t\t%d\n", d.max_raw_ethy_qp);
    std::printf("\tmax_mcast_grp:\t\t\t%d\n", d.max_mcast_grp);
    std::printf("\tmax_mcast_qp_attach:\t\t%d\n", d.max_mcast_qp_attach);
    std::printf("\tmax_total_mcast_qp_attach:\t%d\n", d.max_total_mcast_qp_attach);
    std::printf("\tmax_ah:\t\t\t\t%d\n", d.max_ah);
    std::printf("\tmax_fmr:\t\t\t%d\n", d.max_fmr);
    if (d.max_fmr)
        std::printf("\tmax_map_per_fmr:\t\t%d\n", d.max_map_per_fmr);
    std::printf("\tmax_srq:\t\t\t%d\n", d.max_srq);
    if (d.max_srq) {
        std::printf("\tmax_srq_wr:\t\t\t%d\n", d.max_srq_wr);
        std::printf("\tmax_srq_sge:\t\t\t%d\n", d.max_srq_sge);
    }
    std::printf("\tmax_pkeys:\t\t\t%d\n", d.max_pkeys);
    std::printf("\tlocal_ca_ack_delay:\t\t%d\n", d.local_ca_ack_delay);
}

void print_port_basics(uint8_t port, const ibv_port_attr& p) {
    std::printf("\t\tport:\t%u\n", port);
    std::printf("\t\t\tstate:\t\t\t%s (%d)\n", port_state_name(p.state), p.state);
    std::printf("\t\t\tmax_mtu:\t\t%s (%d)\n", mtu_name(p.max_mtu), p.max_mtu);
    std::printf("\t\t\tactive_mtu:\t\t%s (%d)\n", mtu_name(p.active_mtu), p.active_mtu);
    std::printf("\t\t\tsm_lid:\t\t\t%d\n", p.sm_lid);
    std::printf("\t\t\tport_lid:\t\t%d\n", p.lid);
    std::printf("\t\t\tport_lmc:\t\t0x%02x\n", p.lmc);
    std::printf("\t\t\tlink_layer:\t\t%s\n", link_layer_name(p.link_layer));
}

void print_port_details(const ibv_port_attr& p, bool ib_transport) {
    std::printf("\t\t\tmax_msg_sz:\t\t0x%x\n", p.max_msg_sz);
    std::printf("\t\t\tport_cap_flags:\t\t0x%08x\n", p.port_cap_flags);
    std::printf("\t\t\tport_cap_flags2:\t0x%04x\n", p.port_cap_flags2);
    std::printf("\t\t\tmax_vl_num:\t\t%s (%d)\n", vl_cap_name(p.max_vl_num), p.max_vl_num);
    std::printf("\t\t\tbad_pkey_cntr:\t\t0x%x\n", p.bad_pkey_cntr);
    std::printf("\t\t\tqkey_viol_cntr:\t\t0x%x\n", p.qkey_viol_cntr);
    std::printf("\t\t\tsm_sl:\t\t\t%d\n", p.sm_sl);
    std::printf("\t\t\tpkey_tbl_len:\t\t%d\n", p.pkey_tbl_len);
    std::printf("\t\t\tgid_tbl_len:\t\t%d\n", p.gid_tbl_len);
    std::printf("\t\t\tsubnet_timeout:\t\t%d\n", p.subnet_timeout);
    std::printf("\t\t\tinit_type_reply:\t%d\n", p.init_type_reply);
    std::printf("\t\t\tactive_width:\t\t%sX (%d)\n", link_width_name(p.active_width), p.active_width);
    std::printf("\t\t\tactive_speed:\t\t%s (%d)\n", link_speed_name(p.active_speed), p.active_speed);
    if (ib_transport)
        std::printf("\t\t\tphys_state:\t\t%s (%d)\n", phys_state_name(p.phys_state), p.phys_state);
}

// Reports every port (or only `only_port` when non-zero). Returns 0 or the
// status of the first failing query.
int print_ports(ibv_context* ctx, const ibv_device& dev, uint8_t port_count, uint8_t only_port) {
    for (unsigned n = 1; n <= port_count; ++n) {
        const uint8_t port = static_cast<uint8_t>(n);
        if (only_port && port != only_port)
            continue;
        ibv_port_attr attr{};
        const int rc = ibv_query_port(ctx, port, &attr);
        if (rc) {
            std::fprintf(stderr, "Failed to query port %u props\n", n);
            return rc;
        }
        print_port_basics(port, attr);
        if (g_verbose) {
            print_port_details(attr, dev.transport_type == IBV_TRANSPORT_IB);
            if (const int grc = print_port_gids(ctx, port, attr))
                return grc;
        }
        std::putchar('\n');
    }
    return 0;
}

// The body of one device's report, on an open context.
int report_open_device(ibv_device* dev, ibv_context* ctx, uint8_t only_port) {
    ibv_device_attr_ex attr{};
    if (ibv_query_device_ex(ctx, nullptr, &attr)) {
        std::fputs("Failed to query device props\n", stderr);
        return kQueryDeviceFailed;
    }
    const ibv_device_attr& d = attr.orig_attr;
    if (only_port && only_port > d.phys_port_cnt) {
        std::fputs("Invalid port requested for device\n", stderr);
        return kBadPort;
    }

    std::printf("hca_id:\t%s\n", ibv_get_device_name(dev));
    std::printf("\ttransport:\t\t\t%s (%d)\n", transport_name(dev->transport_type), dev->transport_type);
    if (d.fw_ver[0])
        std::printf("\tfw_ver:\t\t\t\t%s\n", d.fw_ver);
    std::printf("\tnode_guid:\t\t\t%s\n", guid_text(d.node_guid).c_str());
    std::printf("\tsys_image_guid:\t\t\t%s\n", guid_text(d.sys_image_guid).c_str());
    std::printf("\tvendor_id:\t\t\t0x%04x\n", d.vendor_id);
    std::printf("\tvendor_part_id:\t\t\t%d\n", d.vendor_part_id);
    std::printf("\thw_ver:\t\t\t\t0x%X\n", d.hw_ver);
    if (auto board = read_sysfs_attr(std::string(dev->ibdev_path) + "/board_id", 256))
        std::printf("\tboard_id:\t\t\t%s\n", board->c_str());
    std::printf("\tphys_port_cnt:\t\t\t%d\n", d.phys_port_cnt);

    if (g_verbose) {
        print_device_limits(d);
        print_extended_caps(attr);
        std::printf("\tnum_comp_vectors:\t\t%d\n", ctx->num_comp_vectors);
    }

    return print_ports(ctx, *dev, d.phys_port_cnt, only_port);
}

int report_device(ibv_device* dev, uint8_t only_port) {
    ibv_context* ctx = ibv_open_device(dev);
    if (!ctx) {
        std::fputs("Failed to open device\n", stderr);
        return kOpenFailed;
    }
    int rc = report_open_device(dev, ctx, only_port);
    if (ibv_close_device(ctx)) {
        // No newline: the reference prints it this way.
        std::fputs("Failed to close device", stderr);
        rc = kCloseFailed;
    }
    return rc;
}

void print_usage(const char* argv0) {
    std::printf("Usage: %s             print the ca attributes\n", argv0);
    std::printf("\n");
    std::printf("Options:\n");
    std::printf("  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n");
    std::printf("  -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n");
    std::printf("  -l, --list             print only the IB devices names\n");
    std::printf("  -v, --verbose          print all the attributes of the IB device(s)\n");
}

struct DeviceListDeleter {
    void operator()(ibv_device** list) const { ibv_free_device_list(list); }
};
using DeviceList = std::unique_ptr<ibv_device*[], DeviceListDeleter>;

int list_devices() {
    int count = 0;
    DeviceList list(ibv_get_device_list(&count));
    if (!list) {
        std::perror("Failed to get IB devices list");
        return -1;
    }
    std::printf("%d HCA%s found:\n", count, count != 1 ? "s" : "");
    for (ibv_device** d = list.get(); *d; ++d)
        std::printf("\t%s\n", ibv_get_device_name(*d));
    std::printf("\n");
    return 0;
}

int report_devices(const std::optional<std::string>& wanted, uint8_t only_port) {
    DeviceList list(ibv_get_device_list(nullptr));
    if (!list) {
        std::perror("Failed to get IB devices list");
        return -1;
    }

    if (wanted) {
        for (ibv_device** d = list.get(); *d; ++d)
            if (*wanted == ibv_get_device_name(*d))
                return report_device(*d, only_port);
        std::fprintf(stderr, "IB device '%s' wasn't found\n", wanted->c_str());
        return -1;
    }

    if (!list[0]) {
        std::fputs("No IB devices found\n", stderr);
        return -1;
    }
    int rc = 0;
    for (ibv_device** d = list.get(); *d; ++d)
        rc |= report_device(*d, only_port);
    return rc;
}

}  // namespace

int main(int argc, char* argv[]) {
    static const option long_options[] = {
        {"ib-dev", required_argument, nullptr, 'd'},
        {"ib-port", required_argument, nullptr, 'i'},
        {"list", no_argument, nullptr, 'l'},
        {"verbose", no_argument, nullptr, 'v'},
        {nullptr, 0, nullptr, 0},
    };
    std::optional<std::string> device_name;
    // The reference keeps the port in an int and hands it on as a uint8_t:
    // "-i 257" means port 1 and "-i 256" means all ports.
    int port = 0;

    for (;;) {
        const int c = getopt_long(argc, argv, "d:i:lv", long_options, nullptr);
        if (c == -1)
            break;
        switch (c) {
        case 'd': device_name = optarg; break;
        case 'i':
            port = static_cast<int>(std::strtol(optarg, nullptr, 0));
            if (port <= 0) {
                print_usage(argv[0]);
                return 1;
            }
            break;
        case 'v': g_verbose = true; break;
        case 'l':
            // Acts at once, ignoring the options after it.
            return list_devices();
        default: print_usage(argv[0]); return -1;
        }
    }

    return report_devices(device_name, static_cast<uint8_t>(port));
}
