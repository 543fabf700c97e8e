// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// sminfo: query (or, with a modifier, set) the SMInfo attribute of an SM.
#include "ibdiag_common.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

namespace {

const char* state_name(unsigned s) {
    static const char* const names[] = {"SMINFO_NOTACT", "SMINFO_DISCOVER", "SMINFO_STANDBY", "SMINFO_MASTER"};
    return s < 4 ? names[s] : "???";
}

}  // namespace

int main(int argc, char* argv[]) {
    unsigned act = 0;
    int prio = 0;
    int state = 2;  // SMINFO_STANDBY
    static const ibdiag::Option opts[] = {
        {"state", 's', 1, "<0-3>", "set SM state"},
        {"priority", 'p', 1, "<0-15>", "set SM priority"},
        {"activity", 'a', 1, nullptr, "set activity count"},
    };
    int first = ibdiag::process_opts(
        argc, argv, "sK", opts,
        [&](int ch, char* arg) {
            switch (ch) {
            case 'a': act = (unsigned)strtoul(arg, nullptr, 0); return 0;
            case 's': state = (int)strtoul(arg, nullptr, 0); return 0;
            case 'p': prio = (int)strtoul(arg, nullptr, 0); return 0;
            default: return -1;
            }
        },
        "<sm_lid|sm_dr_path> [modifier]");
    argc -= first;
    argv += first;
    auto& cfg = ibdiag::cfg;

    int mod = argc > 1 ? atoi(argv[1]) : 0;

    struct ibmad_port* srcport = ibdiag::open_smp_port();

    ib_portid_t portid{};
    if (argc) {
        ibdiag::resolve_dest(&portid, argv[0], nullptr, srcport);
    } else if (ibdiag::resolve_sm_portid(cfg.ca, (uint8_t)cfg.ca_port, &portid) < 0) {
        IBEXIT("can't resolve sm port %s", argv[0]);
    }

    uint8_t sminfo[IB_SMP_DATA_SIZE] = {};
    uint64_t guid = 0, key = 0;
    mad_encode_field(sminfo, IB_SMINFO_GUID_F, &guid);
    mad_encode_field(sminfo, IB_SMINFO_ACT_F, &act);
    mad_encode_field(sminfo, IB_SMINFO_KEY_F, &key);
    mad_encode_field(sminfo, IB_SMINFO_PRIO_F, &prio);
    mad_encode_field(sminfo, IB_SMINFO_STATE_F, &state);

    if (mod) {
        if (!smp_set_via(sminfo, &portid, IB_ATTR_SMINFO, mod, cfg.timeout, srcport))
            IBEXIT("query");
    } else if (!smp_query_via(sminfo, &portid, IB_ATTR_SMINFO, 0, cfg.timeout, srcport)) {
        IBEXIT("query");
    }

    mad_decode_field(sminfo, IB_SMINFO_GUID_F, &guid);
    mad_decode_field(sminfo, IB_SMINFO_ACT_F, &act);
    mad_decode_field(sminfo, IB_SMINFO_KEY_F, &key);
    mad_decode_field(sminfo, IB_SMINFO_PRIO_F, &prio);
    mad_decode_field(sminfo, IB_SMINFO_STATE_F, &state);

    printf("sminfo: sm lid %d sm guid 0x%" PRIx64 ", activity count %u priority %d state %d %s\n", portid.lid, guid,
           act, prio, state, state_name((unsigned)state));
    mad_rpc_close_port(srcport);
    return 0;
}
