// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Command line and ibdiag.conf handling shared by every tool, the option
// sets of the tool families (CC, forwarding tables) and the common start:
// open the port, resolve the target, run an op.
#include "ibdiag_common.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <getopt.h>
#include <string_view>
#include <unistd.h>

namespace ibdiag {

Settings cfg;

namespace {

// Common options, in the order the usage text lists them.
const Option kCommon[] = {
    {"config", 'z', 1, "<config>", "use config file, default: /etc/infiniband-diags/ibdiag.conf"},
    {"Ca", 'C', 1, "<ca>", "Ca name to use"},
    {"Port", 'P', 1, "<port>", "Ca port number to use"},
    {"Direct", 'D', 0, nullptr, "use Direct address argument"},
    {"Lid", 'L', 0, nullptr, "use LID address argument"},
    {"Guid", 'G', 0, nullptr, "use GUID address argument"},
    {"timeout", 't', 1, "<ms>", "timeout in ms"},
    {"sm_port", 's', 1, "<lid>", "SM port lid"},
    {"show_keys", 'K', 0, nullptr, "display security keys in output"},
    {"m_key", 'y', 1, "<key>", "M_Key to use in request"},
    {"errors", 'e', 0, nullptr, "show send and receive errors"},
    {"verbose", 'v', 0, nullptr, "increase verbosity level"},
    {"debug", 'd', 0, nullptr, "raise debug level"},
    {"help", 'h', 0, nullptr, "help message"},
    {"version", 'V', 0, nullptr, "show version"},
};

struct Parser {
    const char* prog = "";
    const char* args = nullptr;
    std::vector<const char*> examples;
    std::vector<const Option*> listed;  // usage order
    const Option* by_letter[256] = {};  // first definition wins
    ib_portid_t sm_portid{};
};
Parser P;

// Word-wrap `text` to end before column `width`, continuation lines
// indented to column `start` (the reference's layout: a line break after
// the last space that still fits; the last word is never wrapped).
void wrap_description(int start, int width, const char* text) {
    const long room = width - start;
    for (;;) {
        while (isspace((unsigned char)*text))
            text++;
        const char* cut = nullptr;
        const char* space = text;
        do {
            cut = space + 1;
            space = strchr(cut, ' ');
        } while (space && space - text < room);
        if (!space) {
            fputs(text, stderr);
            return;
        }
        if (cut - text == 1)
            cut = space;
        fprintf(stderr, "%.*s\n%*s", (int)(cut - text), text, start, "");
        text = cut;
    }
}

bool starts_with(const char* s, const char* prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

bool config_true(const char* v) { return starts_with(v, "TRUE") || starts_with(v, "true"); }

// Strings read from ibdiag.conf live here; -C points cfg.ca at argv
// instead (the reference frees whatever cfg.ca points to, argv included,
// and crashes on -C before --config).
std::string conf_ca, conf_nd_format;

void replace_string(char*& slot, std::string& store, const char* value) {
    store = value;
    slot = store.data();
}

bool parse_mkey(const char* text, uint64_t& out) {
    if (!text)
        return false;
    char* end = nullptr;
    errno = 0;
    out = strtoull(text, &end, 0);
    return errno == 0 && *end == '\0';
}

// The common options; -1 when `ch` is none of them.
int process_opt(int ch, char* arg) {
    switch (ch) {
    case 'z': read_config(arg); return 0;
    case 'h': show_usage();
    case 'V': fprintf(stderr, "%s BUILD VERSION: %s\n", P.prog, kVersion); exit(0);
    case 'e': madrpc_show_errors(1); return 0;
    case 'v': cfg.verbose++; return 0;
    case 'd':
        ibdebug++;
        madrpc_show_errors(1);
        umad_debug(ibdebug - 1);
        return 0;
    case 'C': cfg.ca = arg; return 0;
    case 'P': cfg.ca_port = (int)strtoul(arg, nullptr, 0); return 0;
    case 'D': cfg.dest_type = IB_DEST_DRPATH; return 0;
    case 'L': cfg.dest_type = IB_DEST_LID; return 0;
    case 'G': cfg.dest_type = IB_DEST_GUID; return 0;
    case 't': {
        char* end = nullptr;
        errno = 0;
        long v = strtol(arg, &end, 0);
        if (errno || *end != '\0' || v <= 0 || v > INT_MAX)
            IBEXIT("Invalid timeout \"%s\".  Timeout requires a "
                   "positive integer value < %d.",
                   arg, INT_MAX);
        madrpc_set_timeout((int)v);
        cfg.timeout = (int)v;
        return 0;
    }
    case 's':
        if (resolve_portid_str(cfg.ca, (uint8_t)cfg.ca_port, &P.sm_portid, arg, IB_DEST_LID, nullptr, nullptr) < 0)
            IBEXIT("cannot resolve SM destination port %s", arg);
        cfg.sm_id = &P.sm_portid;
        return 0;
    case 'K': cfg.show_keys = true; return 0;
    case 'y':
        if (!parse_mkey(arg, cfg.mkey) && !parse_mkey(getpass("M_Key: "), cfg.mkey))
            IBEXIT("Bad M_Key");
        return 0;
    default: return -1;
    }
}

void add_option(const Option& o) {
    P.listed.push_back(&o);
    unsigned idx = (unsigned)o.letter & 0xff;
    if (!P.by_letter[idx])
        P.by_letter[idx] = &o;
}

}  // namespace

// Lines "Name=value"; names match by prefix as in the reference; a
// missing or unreadable file is silently ignored.
void read_config(const char* file) {
    FILE* f = fopen(file, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        char* save = nullptr;
        char* body = strtok_r(line, "\n", &save);
        if (!body || *body == '#')
            continue;
        char* name = strtok_r(body, "=", &save);
        char* value = strtok_r(nullptr, "\n", &save);
        if (!name || !value)
            continue;
        if (starts_with(name, "CA"))
            replace_string(cfg.ca, conf_ca, value);
        else if (starts_with(name, "Port"))
            cfg.ca_port = (int)strtoul(value, nullptr, 0);
        else if (starts_with(name, "timeout"))
            cfg.timeout = (int)strtoul(value, nullptr, 0);
        else if (starts_with(name, "MLX_EPI")) {
            if (config_true(value))
                cfg.ibnetdisc_flags |= kNetdiscMlxEpi;
            else
                cfg.ibnetdisc_flags &= ~kNetdiscMlxEpi;
        } else if (starts_with(name, "m_key"))
            cfg.mkey = strtoull(value, nullptr, 0);
        else if (starts_with(name, "sa_key"))
            cfg.sakey = strtoull(value, nullptr, 0);
        else if (starts_with(name, "nd_format"))
            replace_string(cfg.nd_format, conf_nd_format, value);
    }
    fclose(f);
}

const char* prog_name() { return P.prog; }

void show_usage() {
    fprintf(stderr, "\nUsage: %s [options] %s\n\n", P.prog, P.args ? P.args : "");
    if (!P.listed.empty())
        fprintf(stderr, "Options:\n");
    for (const Option* listed : P.listed) {
        // The text shown is that of the option owning the letter.
        const Option& o = *P.by_letter[(unsigned)listed->letter & 0xff];
        int n = fprintf(stderr, "  --%s", o.name);
        if (isprint(o.letter))
            n += fprintf(stderr, ", -%c", o.letter);
        if (o.has_arg)
            n += fprintf(stderr, " %s", o.arg_tmpl ? o.arg_tmpl : "<val>");
        if (o.description && *o.description) {
            n += fprintf(stderr, "%*s  ", n < 24 ? 24 - n : 0, "");
            wrap_description(n, 74, o.description);
        }
        fprintf(stderr, "\n");
    }
    if (!P.examples.empty()) {
        fprintf(stderr, "\nExamples:\n");
        for (const char* e : P.examples)
            fprintf(stderr, "  %s %s\n", P.prog, e);
    }
    fprintf(stderr, "\n");
    exit(2);
}

int process_opts(int argc, char* argv[], const char* exclude_common, std::span<const Option> custom,
                 const OptionHandler& handler, const char* usage_args, std::initializer_list<const char*> examples) {
    P.prog = argv[0];
    P.args = usage_args;
    P.examples.clear();
    for (const char* e : examples) {
        if (!e || !*e)
            break;
        P.examples.push_back(e);
    }
    P.listed.clear();
    std::fill(std::begin(P.by_letter), std::end(P.by_letter), nullptr);

    for (const Option& o : custom) {
        if (!o.name)
            break;
        add_option(o);
    }
    for (const Option& o : kCommon)
        if (!exclude_common || !strchr(exclude_common, o.letter))
            add_option(o);

    std::vector<struct option> longs;
    std::string shorts;
    for (const Option* o : P.listed) {
        longs.push_back({o->name, o->has_arg, nullptr, o->letter});
        shorts += (char)o->letter;
        shorts.append((size_t)o->has_arg, ':');
    }
    longs.push_back({nullptr, 0, nullptr, 0});

    read_config(kConfigFile);

    for (;;) {
        int ch = getopt_long(argc, argv, shorts.c_str(), longs.data(), nullptr);
        if (ch == -1)
            break;
        if (ch < 0 || ch > 255 || !P.by_letter[ch])
            show_usage();
        int rc = handler ? handler(ch, optarg) : -1;
        if (rc != 0 && process_opt(ch, optarg) != 0)
            show_usage();
    }
    return optind;
}

void ibexit(const char* fn, const char* fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (ibdebug)
        printf("%s: iberror: [pid %d] %s: failed: %s\n", P.prog, (int)getpid(), fn, msg);
    else
        printf("%s: iberror: failed: %s\n", P.prog, msg);
    exit(-1);
}

OpFn* match_op(std::span<const MatchRec> table, const char* name) {
    for (const MatchRec& r : table) {
        if (!r.name)
            break;
        if (!strcasecmp(r.name, name) || (r.alias && !strcasecmp(r.alias, name)))
            return r.fn;
    }
    return nullptr;
}

int process_cc_opts(int argc, char** argv, const char* usage_args, uint64_t* cckey,
                    std::initializer_list<const char*> examples) {
    static const Option opts[] = {{"cckey", 'c', 1, "<key>", "CC key"}};
    return process_opts(
        argc, argv, "DK", opts,
        [cckey](int ch, char* arg) -> int {
            if (ch != 'c')
                return -1;
            *cckey = strtoull(arg, nullptr, 0);
            return 0;
        },
        usage_args, examples);
}

int process_fwd_opts(int argc, char** argv, const char* exclude_common, FwdDumpOpts& opts, const char** map_file,
                     std::initializer_list<const char*> examples) {
    static const Option fwd_opts[] = {
        {"all", 'a', 0, nullptr, "show all lids, even invalid entries"},
        {"no_dests", 'n', 0, nullptr, "do not try to resolve destinations"},
        {"Multicast", 'M', 0, nullptr, "show multicast forwarding tables"},
        {"node-name-map", 1, 1, "<file>", "node name map file"},
    };
    return process_opts(
        argc, argv, exclude_common, fwd_opts,
        [&opts, map_file](int ch, char* arg) {
            switch (ch) {
            case 'a': opts.dump_all = true; return 0;
            case 'M': opts.multicast = true; return 0;
            case 'n': opts.brief = true; return 0;
            case 1: *map_file = arg; return 0;
            default: return -1;
            }
        },
        "[<dest dr_path|lid|guid> [<startlid> [<endlid>]]]", examples);
}

struct ibmad_port* open_port(int* mgmt_classes, int num_classes) {
    struct ibmad_port* srcport = mad_rpc_open_port(cfg.ca, cfg.ca_port, mgmt_classes, num_classes);
    if (!srcport)
        ibexit("main", "Failed to open '%s' port '%d'", cfg.ca, cfg.ca_port);
    return srcport;
}

struct ibmad_port* open_smp_port() {
    int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS};
    struct ibmad_port* srcport = open_port(classes, 3);
    smp_mkey_set(srcport, cfg.mkey);
    return srcport;
}

void resolve_dest(ib_portid_t* portid, const char* addr, ib_portid_t* sm_id, const struct ibmad_port* srcport) {
    if (resolve_portid_str(cfg.ca, (uint8_t)cfg.ca_port, portid, addr, cfg.dest_type, sm_id, srcport) < 0)
        ibexit("main", "can't resolve destination port %s", addr);
}

void run_op(std::span<const MatchRec> table, int* mgmt_classes, struct ibmad_port*& srcport, int argc, char** argv) {
    // Exits name main as the function, as they would from the tool's main.
    if (argc < 2)
        show_usage();
    OpFn* fn = match_op(table, argv[0]);
    if (!fn)
        ibexit("main", "operation '%s' not supported", argv[0]);

    srcport = open_port(mgmt_classes, 3);
    smp_mkey_set(srcport, cfg.mkey);

    ib_portid_t portid = {};
    if (resolve_portid_str(cfg.ca, cfg.ca_port, &portid, argv[1], cfg.dest_type, cfg.sm_id, srcport) < 0)
        ibexit("main", "can't resolve destination %s", argv[1]);
    if (const char* err = fn(&portid, argv + 2, argc - 2))
        ibexit("main", "operation %s: %s", argv[0], err);

    mad_rpc_close_port(srcport);
}

}  // namespace ibdiag
