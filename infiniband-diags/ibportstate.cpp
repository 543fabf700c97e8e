// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// ibportstate: show a port's state, speeds and widths (and check them
// against the peer port for a switch port), or change them with a
// PortInfo Set.
#include "ibdiag_common.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace {

struct ibmad_port* srcport;

enum Op {
    QUERY,
    ENABLE,
    RESET,
    DISABLE,
    SPEED,
    ESPEED,
    FDR10SPEED,
    WIDTH,
    DOWN,
    ARM,
    ACTIVE,
    VLS,
    MTU,
    LID,
    SMLID,
    LMC,
    MKEY,
    MKEYLEASE,
    MKEYPROT,
    ON,
    OFF,
    NUM_OPS
};

// The words after <portnum>: a state operation (no value) or a field to
// set (followed by its value).
struct PortArg {
    const char* name;
    bool takes_value;
    bool set = false;
    uint64_t value = 0;
};
PortArg port_args[NUM_OPS] = {
    {"query", false},   {"enable", false}, {"reset", false}, {"disable", false}, {"speed", true},   {"espeed", true},
    {"fdr10", true},    {"width", true},   {"down", false},  {"arm", false},     {"active", false}, {"vls", true},
    {"mtu", true},      {"lid", true},     {"smlid", true},  {"lmc", true},      {"mkey", true},    {"mkeylease", true},
    {"mkeyprot", true}, {"on", false},     {"off", false},
};

constexpr uint32_t kCapHasExtSpeeds = 1u << 14;
constexpr uint32_t kFdr10 = 0x01;

bool get_node_info(ib_portid_t* dest, uint8_t* data) {
    if (!smp_query_via(data, dest, IB_ATTR_NODE_INFO, 0, 0, srcport))
        IBEXIT("smp query nodeinfo failed");
    return mad_get_field(data, 0, IB_NODE_TYPE_F) == IB_NODE_SWITCH;
}

// PortInfo of `portnum` into data; returns the extended-speeds capability
// (a switch's capability mask is that of its port 0).
uint32_t get_port_info(ib_portid_t* dest, uint8_t* data, int portnum, bool is_switch) {
    uint8_t port0[IB_SMP_DATA_SIZE];
    uint8_t* info = data;
    if (is_switch) {
        if (!smp_query_via(port0, dest, IB_ATTR_PORT_INFO, 0, 0, srcport))
            IBEXIT("smp query port 0 portinfo failed");
        info = port0;
    }
    if (!smp_query_via(data, dest, IB_ATTR_PORT_INFO, (unsigned)portnum, 0, srcport))
        IBEXIT("smp query portinfo failed");
    return mad_get_field(info, 0, IB_PORT_CAPMASK_F) & kCapHasExtSpeeds;
}

void append_field(std::string& out, uint8_t* data, enum MAD_FIELDS f) {
    char val[64];
    char line[256];
    mad_decode_field(data, f, val);
    mad_dump_field(f, line, sizeof(line), val);
    out += line;
    out += '\n';
}

void show_port_info(ib_portid_t* dest, uint8_t* data, int portnum, uint32_t espeed_cap, bool is_switch) {
    char states[256];
    mad_dump_portstates(states, sizeof(states), data, 1);
    std::string out = states;
    for (auto f : {IB_PORT_LID_F, IB_PORT_SMLID_F, IB_PORT_LMC_F, IB_PORT_LINK_WIDTH_SUPPORTED_F,
                   IB_PORT_LINK_WIDTH_ENABLED_F, IB_PORT_LINK_WIDTH_ACTIVE_F, IB_PORT_LINK_SPEED_SUPPORTED_F,
                   IB_PORT_LINK_SPEED_ENABLED_F, IB_PORT_LINK_SPEED_ACTIVE_F})
        append_field(out, data, f);
    if (espeed_cap)
        for (auto f :
             {IB_PORT_LINK_SPEED_EXT_SUPPORTED_F, IB_PORT_LINK_SPEED_EXT_ENABLED_F, IB_PORT_LINK_SPEED_EXT_ACTIVE_F})
            append_field(out, data, f);
    // M_Key fields exist on CA/router ports and switch port 0 only.
    if (!is_switch || portnum == 0) {
        if (ibdiag::cfg.show_keys) {
            append_field(out, data, IB_PORT_MKEY_F);
        } else {
            char line[256];
            ibdiag::snprint_field(line, sizeof(line), IB_PORT_MKEY_F, 32, "%s", ibdiag::kNotDisplayed);
            out += line;
            out += '\n';
        }
        append_field(out, data, IB_PORT_MKEY_LEASE_F);
        append_field(out, data, IB_PORT_MKEY_PROT_BITS_F);
    }
    printf("# Port info: %s port %d\n%s", portid2str(dest), portnum, out.c_str());
}

void set_port_info(ib_portid_t* dest, uint8_t* data, int portnum, uint32_t espeed_cap, bool is_switch) {
    unsigned mod = (unsigned)portnum;
    if (espeed_cap)
        mod |= 1u << 31;
    if (!smp_set_via(data, dest, IB_ATTR_PORT_INFO, mod, 0, srcport))
        IBEXIT("smp set portinfo failed");
    printf("\nAfter PortInfo set:\n");
    show_port_info(dest, data, portnum, espeed_cap, is_switch);
}

void get_mlnx_ext_port_info(ib_portid_t* dest, uint8_t* data, int portnum) {
    if (!smp_query_via(data, dest, IB_ATTR_MLNX_EXT_PORT_INFO, (unsigned)portnum, 0, srcport))
        IBEXIT("smp query ext portinfo failed");
}

void show_mlnx_ext_port_info(ib_portid_t* dest, uint8_t* data, int portnum) {
    char out[256];
    mad_dump_mlnx_ext_port_info(out, sizeof(out), data, IB_SMP_DATA_SIZE);
    printf("# MLNX ext Port info: %s port %d\n%s", portid2str(dest), portnum, out);
}

void set_mlnx_ext_port_info(ib_portid_t* dest, uint8_t* data, int portnum) {
    if (!smp_set_via(data, dest, IB_ATTR_MLNX_EXT_PORT_INFO, (unsigned)portnum, 0, srcport))
        IBEXIT("smp set MLNX ext portinfo failed");
    printf("\nAfter MLNXExtendedPortInfo set:\n");
    show_mlnx_ext_port_info(dest, data, portnum);
}

// "Enabled" values that mean "whatever is supported".
int effective_width(int enabled, int supported) { return enabled == 255 ? supported : enabled; }
int effective_speed(int enabled, int supported) { return enabled == 15 ? supported : enabled; }
int effective_ext_speed(int enabled, int supported) { return enabled == 31 ? supported : enabled; }

// The best setting both ends allow, from the widest/fastest down; warn
// when the link does not run at it.
void validate_width(uint64_t width, int peerwidth, int active) {
    static const struct {
        int bit;
        const char* text;
    } steps[] = {{0x8, "8 (12x)"}, {0x4, "4 (8x)"}, {0x2, "2 (4x)"}, {0x10, "16 (2x)"}, {0x1, "1 (1x)"}};
    for (const auto& s : steps) {
        if (!((int)width & peerwidth & s.bit))
            continue;
        if (active != s.bit)
            IBWARN("Peer ports operating at active width %d rather than %s", active, s.text);
        return;
    }
}

void validate_speed(uint64_t speed, int peerspeed, int active) {
    static const struct {
        int bit;
        const char* text;
    } steps[] = {{0x4, "4 (10.0 Gbps)"}, {0x2, "2 (5.0 Gbps)"}, {0x1, "1 (2.5 Gbps)"}};
    for (const auto& s : steps) {
        if (!((int)speed & peerspeed & s.bit))
            continue;
        if (active != s.bit)
            IBWARN("Peer ports operating at active speed %d rather than %s", active, s.text);
        return;
    }
}

void validate_extended_speed(uint64_t espeed, int peerespeed, int active) {
    static const struct {
        int bit;
        const char* text;
    } steps[] = {
        {0x8, "8 (106.25 Gbps)"}, {0x4, "4 (53.125 Gbps)"}, {0x2, "2 (25.78125 Gbps)"}, {0x1, "1 (14.0625 Gbps)"}};
    for (const auto& s : steps) {
        if (!((int)espeed & peerespeed & s.bit))
            continue;
        if (active != s.bit)
            IBWARN("Peer ports operating at active extended speed %d rather than %s", active, s.text);
        return;
    }
}

// The reference checks values in main(): its name is what -d shows.
#define EXIT_AS_MAIN(fmt, ...) ::ibdiag::ibexit("main", fmt, ##__VA_ARGS__)

// Check a value given for a settable field; exit with the reference's
// message when it is out of range.
uint64_t checked_value(int op, const char* text) {
    uint64_t v = strtoull(text, nullptr, 0);
    switch (op) {
    case SPEED:
        if (v > 15)
            EXIT_AS_MAIN("invalid speed value %" PRIu64, v);
        break;
    case ESPEED:
        if (v > 31)
            EXIT_AS_MAIN("invalid extended speed value %" PRIu64, v);
        break;
    case FDR10SPEED:
        if (v > 1)
            EXIT_AS_MAIN("invalid fdr10 speed value %" PRIu64, v);
        break;
    case WIDTH:
        if (v > 31 && v != 255)
            EXIT_AS_MAIN("invalid width value %" PRIu64, v);
        break;
    case VLS:
        if (v == 0 || v > 5)
            EXIT_AS_MAIN("invalid vls value %" PRIu64, v);
        break;
    case MTU:
        if (v == 0 || v > 5)
            EXIT_AS_MAIN("invalid mtu value %" PRIu64, v);
        break;
    case LID:
        if (v == 0 || v >= 0xC000)
            EXIT_AS_MAIN("invalid lid value 0x%" PRIx64, v);
        break;
    case SMLID:
        if (v == 0 || v >= 0xC000)
            EXIT_AS_MAIN("invalid smlid value 0x%" PRIx64, v);
        break;
    case LMC:
        if (v > 7)
            EXIT_AS_MAIN("invalid lmc value %" PRIu64, v);
        break;
    case MKEY: {
        // Any 64-bit value; something else prompts for the key.
        char* end = nullptr;
        errno = 0;
        v = strtoull(text, &end, 0);
        if (errno || *end != '\0') {
            const char* typed = getpass("New M_Key: ");
            errno = 0;
            end = nullptr;
            v = typed ? strtoull(typed, &end, 0) : 0;
            if (!typed || errno || *end != '\0')
                EXIT_AS_MAIN("Bad new M_Key\n");
        }
        break;
    }
    case MKEYLEASE:
        if (v > 0xFFFF)
            EXIT_AS_MAIN("invalid mkey lease time %" PRIu64, v);
        break;
    case MKEYPROT:
        if (v > 3)
            EXIT_AS_MAIN("invalid mkey protection bit setting %" PRIu64, v);
        break;
    }
    return v;
}

}  // namespace

int main(int argc, char* argv[]) {
    int first = ibdiag::process_opts(
        argc, argv, nullptr, {}, nullptr,
        "<dest dr_path|lid|guid> <portnum> [<op>]\n"
        "\nSupported ops: enable, disable, on, off, reset, speed, espeed, fdr10,\n"
        "\twidth, query, down, arm, active, vls, mtu, lid, smlid, lmc,\n"
        "\tmkey, mkeylease, mkeyprot\n",
        {"-C qib0 -P 1 3 1 disable     # by CA name, CA Port Number, lid, physical port number",
         "-C qib0 -P 1 3 1 enable      # by CA name, CA Port Number, lid, physical port number",
         "-D 0 1\t\t\t# (query) by direct route", "3 1 reset\t\t\t# by lid", "3 1 speed 1\t\t\t# by lid",
         "3 1 width 1\t\t\t# by lid", "-D 0 1 lid 0x1234 arm\t\t# by direct route"});
    argc -= first;
    argv += first;
    auto& cfg = ibdiag::cfg;

    if (argc < 2)
        ibdiag::show_usage();

    srcport = ibdiag::open_smp_port();

    ib_portid_t portid{};
    ibdiag::resolve_dest(&portid, argv[0], cfg.sm_id, srcport);
    int portnum = (int)strtol(argv[1], nullptr, 0);

    int port_op = -1;
    bool changed = false;
    for (int i = 2; i < argc; i++) {
        int j = 0;
        while (j < NUM_OPS && strcmp(argv[i], port_args[j].name))
            j++;
        if (j == NUM_OPS)
            IBEXIT("invalid operation: %s", argv[i]);
        PortArg& a = port_args[j];
        a.set = true;
        if (!a.takes_value) {
            if (port_op >= 0)
                IBEXIT("%s only one of: query, enable, disable, "
                       "reset, down, arm, active, can be specified",
                       a.name);
            port_op = j;
            continue;
        }
        if (++i >= argc)
            IBEXIT("%s requires an additional parameter", a.name);
        a.value = checked_value(j, argv[i]);
        changed = true;
    }
    if (port_op < 0)
        port_op = QUERY;

    uint8_t data[IB_SMP_DATA_SIZE] = {};
    uint8_t ext[IB_SMP_DATA_SIZE] = {};
    bool is_switch = get_node_info(&portid, data);
    uint32_t vendorid = mad_get_field(data, 0, IB_NODE_VENDORID_F);
    uint16_t devid = (uint16_t)mad_get_field(data, 0, IB_NODE_DEVID_F);

    if ((port_args[MKEY].set || port_args[MKEYLEASE].set || port_args[MKEYPROT].set) && is_switch && portnum != 0)
        IBEXIT("Can't set M_Key fields on switch port != 0");

    const char* kind = is_switch ? "Switch" : "CA/RT";
    if (port_op != QUERY || changed)
        printf("Initial %s PortInfo:\n", kind);
    else
        printf("%s PortInfo:\n", kind);
    uint32_t espeed_cap = get_port_info(&portid, data, portnum, is_switch);
    show_port_info(&portid, data, portnum, espeed_cap, is_switch);
    bool mlnx_ext = ibdiag::is_mlnx_ext_port_info_supported(vendorid, devid);
    if (mlnx_ext) {
        get_mlnx_ext_port_info(&portid, ext, portnum);
        show_mlnx_ext_port_info(&portid, ext, portnum);
    }

    if (port_op != QUERY || changed) {
        int physstate = (int)mad_get_field(data, 0, IB_PORT_PHYS_STATE_F);
        // The SMA rejects a Set carrying an invalid LID: if none is
        // being set and the current one is not valid, use a harmless one.
        uint32_t v = mad_get_field(data, 0, IB_PORT_LID_F);
        if (!port_args[LID].set && (!v || v == 0xFFFF))
            mad_set_field(data, 0, IB_PORT_LID_F, 0x1234);
        v = mad_get_field(data, 0, IB_PORT_SMLID_F);
        if (!port_args[SMLID].set && (!v || v == 0xFFFF))
            mad_set_field(data, 0, IB_PORT_SMLID_F, 0x1234);
        mad_set_field(data, 0, IB_PORT_STATE_F, 0);  // no change
        mad_set_field(data, 0, IB_PORT_PHYS_STATE_F, 0);  // no change

        switch (port_op) {
        case ON:
            if (physstate != 3) {  // only a Disabled port is enabled
                printf("Port is already in enable state\n");
                mad_rpc_close_port(srcport);
                return 0;
            }
            [[fallthrough]];
        case ENABLE:
        case RESET:
            mad_set_field(data, 0, IB_PORT_PHYS_STATE_F, 2);  // Polling
            break;
        case OFF:
        case DISABLE:
            printf("Disable may be irreversible\n");
            mad_set_field(data, 0, IB_PORT_PHYS_STATE_F, 3);
            break;
        case DOWN: mad_set_field(data, 0, IB_PORT_STATE_F, 1); break;
        case ARM: mad_set_field(data, 0, IB_PORT_STATE_F, 3); break;
        case ACTIVE: mad_set_field(data, 0, IB_PORT_STATE_F, 4); break;
        }

        // Enabled speeds/width are always written; 0 means no change.
        mad_set_field(data, 0, IB_PORT_LINK_SPEED_ENABLED_F, (uint32_t)port_args[SPEED].value);
        mad_set_field(data, 0, IB_PORT_LINK_SPEED_EXT_ENABLED_F, (uint32_t)port_args[ESPEED].value);
        mad_set_field(data, 0, IB_PORT_LINK_WIDTH_ENABLED_F, (uint32_t)port_args[WIDTH].value);
        if (port_args[VLS].set)
            mad_set_field(data, 0, IB_PORT_OPER_VLS_F, (uint32_t)port_args[VLS].value);
        if (port_args[MTU].set)
            mad_set_field(data, 0, IB_PORT_NEIGHBOR_MTU_F, (uint32_t)port_args[MTU].value);
        if (port_args[LID].set)
            mad_set_field(data, 0, IB_PORT_LID_F, (uint32_t)port_args[LID].value);
        if (port_args[SMLID].set)
            mad_set_field(data, 0, IB_PORT_SMLID_F, (uint32_t)port_args[SMLID].value);
        if (port_args[LMC].set)
            mad_set_field(data, 0, IB_PORT_LMC_F, (uint32_t)port_args[LMC].value);
        if (port_args[FDR10SPEED].set) {
            mad_set_field(ext, 0, IB_MLNX_EXT_PORT_STATE_CHG_ENABLE_F, kFdr10);
            mad_set_field(ext, 0, IB_MLNX_EXT_PORT_LINK_SPEED_ENABLED_F, (uint32_t)port_args[FDR10SPEED].value);
            set_mlnx_ext_port_info(&portid, ext, portnum);
        }
        if (port_args[MKEY].set)
            mad_set_field64(data, 0, IB_PORT_MKEY_F, port_args[MKEY].value);
        if (port_args[MKEYLEASE].set)
            mad_set_field(data, 0, IB_PORT_MKEY_LEASE_F, (uint32_t)port_args[MKEYLEASE].value);
        if (port_args[MKEYPROT].set)
            mad_set_field(data, 0, IB_PORT_MKEY_PROT_BITS_F, (uint32_t)port_args[MKEYPROT].value);
        set_port_info(&portid, data, portnum, espeed_cap, is_switch);
    } else if (is_switch && portnum) {
        // A switch port: compare it with the port at the other end.
        int state = 0;
        mad_decode_field(data, IB_PORT_STATE_F, &state);
        if (state == 4) {  // Active
            int lwe, lws, lwa, lse, lss, lsa, lsea = 0, lsee = 0, lses = 0, fdr10e, fdr10a;
            mad_decode_field(data, IB_PORT_LINK_WIDTH_ENABLED_F, &lwe);
            mad_decode_field(data, IB_PORT_LINK_WIDTH_SUPPORTED_F, &lws);
            mad_decode_field(data, IB_PORT_LINK_WIDTH_ACTIVE_F, &lwa);
            mad_decode_field(data, IB_PORT_LINK_SPEED_SUPPORTED_F, &lss);
            mad_decode_field(data, IB_PORT_LINK_SPEED_ACTIVE_F, &lsa);
            mad_decode_field(data, IB_PORT_LINK_SPEED_ENABLED_F, &lse);
            mad_decode_field(ext, IB_MLNX_EXT_PORT_LINK_SPEED_ENABLED_F, &fdr10e);
            mad_decode_field(ext, IB_MLNX_EXT_PORT_LINK_SPEED_ACTIVE_F, &fdr10a);
            if (espeed_cap) {
                mad_decode_field(data, IB_PORT_LINK_SPEED_EXT_ACTIVE_F, &lsea);
                mad_decode_field(data, IB_PORT_LINK_SPEED_EXT_ENABLED_F, &lsee);
                mad_decode_field(data, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F, &lses);
            }

            // One more hop out of `portnum` (a DR path from here for a
            // LID-routed switch).
            ib_portid_t peer = portid;
            if (portid.lid == 0) {
                peer.drpath.cnt++;
                if (peer.drpath.cnt == IB_SUBNET_PATH_HOPS_MAX)
                    IBEXIT("Too many hops");
            } else {
                peer.drpath.cnt = 1;
                ib_portid_t self{};
                int selfport = 0;
                if (ibdiag::resolve_self(cfg.ca, (uint8_t)cfg.ca_port, &self, &selfport, nullptr) < 0)
                    IBEXIT("could not resolve self");
                peer.drpath.drslid = (uint16_t)self.lid;
                peer.drpath.drdlid = 0xffff;
            }
            peer.drpath.p[peer.drpath.cnt] = (uint8_t)portnum;

            bool peer_switch = get_node_info(&peer, data);
            uint32_t rvendor = mad_get_field(data, 0, IB_NODE_VENDORID_F);
            uint16_t rdevid = (uint16_t)mad_get_field(data, 0, IB_NODE_DEVID_F);
            int peerport = 0;
            mad_decode_field(data, IB_NODE_LOCAL_PORT_F, &peerport);

            printf("Peer PortInfo:\n");
            uint32_t peer_cap = get_port_info(&peer, data, peerport, peer_switch);
            bool peer_mlnx = ibdiag::is_mlnx_ext_port_info_supported(rvendor, rdevid);
            if (peer_mlnx)
                get_mlnx_ext_port_info(&peer, ext, peerport);
            show_port_info(&peer, data, peerport, peer_cap, peer_switch);
            if (peer_mlnx)
                show_mlnx_ext_port_info(&peer, ext, peerport);

            int plwe, plws, plse, plss, plsee = 0, plses = 0, pfdr10e;
            mad_decode_field(data, IB_PORT_LINK_WIDTH_ENABLED_F, &plwe);
            mad_decode_field(data, IB_PORT_LINK_WIDTH_SUPPORTED_F, &plws);
            mad_decode_field(data, IB_PORT_LINK_SPEED_SUPPORTED_F, &plss);
            mad_decode_field(data, IB_PORT_LINK_SPEED_ENABLED_F, &plse);
            mad_decode_field(ext, IB_MLNX_EXT_PORT_LINK_SPEED_ENABLED_F, &pfdr10e);
            if (peer_cap) {
                mad_decode_field(data, IB_PORT_LINK_SPEED_EXT_ENABLED_F, &plsee);
                mad_decode_field(data, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F, &plses);
            }

            uint64_t width = (uint64_t)effective_width(lwe, lws);
            validate_width(width, effective_width(plwe, plws), lwa);
            uint64_t speed = (uint64_t)effective_speed(lse, lss);
            validate_speed(speed, effective_speed(plse, plss), lsa);
            if (espeed_cap && peer_cap) {
                uint64_t espeed = (uint64_t)effective_ext_speed(lsee, lses);
                validate_extended_speed(espeed, effective_ext_speed(plsee, plses), lsea);
            } else if ((fdr10e & kFdr10) && (pfdr10e & kFdr10) && !(fdr10a & kFdr10)) {
                IBWARN("Peer ports operating at active speed %d rather than FDR10", lsa);
            }
        }
    }
    mad_rpc_close_port(srcport);
    return 0;
}
