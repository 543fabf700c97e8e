// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// Shared code of the infiniband-diags tools: the common options and their
// usage text, the ibdiag.conf reader, error/exit helpers, target port
// resolution (LID, GUID, GID, DR path), the SA query helper and node-name-map
// lookups. Every tool links the static library ibdiags_common.
//
// Option handling in short:
//
//   static const ibdiag::Option opts[] = {
//       {"all", 'a', 0, nullptr, "show all"},        // custom options
//       {}};                                          // (terminator optional)
//   int first = ibdiag::process_opts(argc, argv, "KsGDL", opts,
//       [&](int ch, char *arg) { if (ch == 'a') { all = true; return 0; }
//                                return -1; },        // -1: not mine
//       "<lid|guid> [<op>]", {"-a 3", "-G 0x1234"});
//   argc -= first; argv += first;
//
// The exclude string lists the letters of common options the tool does not
// accept (as the reference: "z" hides --config, "y" the M_Key, ...).
// Settings from the options and ibdiag.conf land in ibdiag::cfg.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <infiniband/mad.h>
#include <infiniband/umad.h>

namespace ibdiag {

// PerfMgt ClassPortInfo CapabilityMask bits (host order), facts of the IBA
// spec the reference takes from its ib_types.h; perfquery and ibqueryerrors
// decide with them which counters a port has.
namespace pm_cap {
constexpr uint16_t all_port_select = 1u << 8;
constexpr uint16_t ext_width = 1u << 9;
constexpr uint16_t ext_width_noietf = 1u << 10;
constexpr uint16_t xmit_wait = 1u << 12;
constexpr uint16_t rsfec_counters = 1u << 14;
constexpr uint16_t qp1_drop = 1u << 15;
// CapabilityMask2 (after its 5-bit shift): additional extended counters.
constexpr uint32_t addl_port_counters_ext = 1u << 1;
}  // namespace pm_cap

// Where the reference keeps its files.
inline constexpr const char* kConfigFile = "/etc/infiniband-diags/ibdiag.conf";
inline constexpr const char* kNodeNameMapFile = "/etc/rdma/ib-node-name-map";
// The version line printed by -V is "<argv0> BUILD VERSION: <kVersion>".
inline constexpr const char* kVersion = "44.0";
// libibnetdisc's IBND_CONFIG_MLX_EPI, set by default (MLX_EPI= in ibdiag.conf).
inline constexpr uint32_t kNetdiscMlxEpi = 1u << 0;
inline constexpr const char* kNotDisplayed = "<not displayed>";

// Everything the common options and ibdiag.conf set.
struct Settings {
    char* ca = nullptr;  // -C, CA=   (nullptr: first CA)
    int ca_port = 0;  // -P, Port= (0: first active port)
    int timeout = 0;  // -t, timeout= (ms; 0: library default)
    enum MAD_DEST dest_type = IB_DEST_LID;  // -L (default), -G, -D
    ib_portid_t* sm_id = nullptr;  // -s <lid>: SM to ask, else umad's sm_lid
    uint32_t ibnetdisc_flags = kNetdiscMlxEpi;  // MLX_EPI=
    uint64_t mkey = 0;  // -y, m_key=
    uint64_t sakey = 0;  // sa_key=
    bool show_keys = false;  // -K
    char* nd_format = nullptr;  // nd_format=
    int verbose = 0;  // -v (count)
};
extern Settings cfg;

// Read an ibdiag.conf file into cfg: lines "Name=value", names matched by
// prefix as the reference does; a missing or unreadable file is ignored.
void read_config(const char* file);

// One option of a tool. letter is the short option (a printable char) or,
// for a long-only option, a non-printable value below 256 that is unique in
// the tool. has_arg: 0 none, 1 required (getopt's values).
struct Option {
    const char* name = nullptr;
    int letter = 0;
    int has_arg = 0;
    const char* arg_tmpl = nullptr;  // "<val>" when null and has_arg
    const char* description = nullptr;
};

// Called for every option found (custom ones and common ones alike, custom
// first): return 0 when the tool handled it, anything else to let the
// common handling have it (an option nobody takes prints the usage, exit 2).
using OptionHandler = std::function<int(int letter, char* arg)>;

// Parse argv as the reference does (reads ibdiag.conf first, --config later
// re-reads). Returns optind: the index of the first non-option argument.
int process_opts(int argc, char* argv[], const char* exclude_common, std::span<const Option> custom,
                 const OptionHandler& handler, const char* usage_args,
                 std::initializer_list<const char*> examples = {});
// The usage text on stderr, then exit(2).
[[noreturn]] void show_usage();
// argv[0] as given to process_opts ("" before).
const char* prog_name();

// "<prog>: iberror: failed: <msg>" on stdout (with -d: "[pid N] <fn>: "
// before "failed"), then exit(255) -- the reference's exit(-1).
[[noreturn]] void ibexit(const char* fn, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
#define IBEXIT(fmt, ...) ::ibdiag::ibexit(__func__, fmt, ##__VA_ARGS__)
#define IBDIAG_VERBOSE(fmt, ...)           \
    do {                                   \
        if (::ibdiag::cfg.verbose)         \
            IBVERBOSE(fmt, ##__VA_ARGS__); \
    } while (0)
#define IBDIAG_DEBUG(fmt, ...)           \
    do {                                 \
        if (ibdebug)                     \
            IBDEBUG(fmt, ##__VA_ARGS__); \
    } while (0)

// Target resolution (umad's view of the local port; SA for GUID/GID).
// All return 0 on success, < 0 on failure, as the reference's.
int resolve_sm_portid(const char* ca, uint8_t port, ib_portid_t* sm_id);
int resolve_self(const char* ca, uint8_t port, ib_portid_t* portid, int* portnum, ibmad_gid_t* gid);
// addr_str by dest_type: LID (strtol, must be a valid unicast/multicast LID),
// DR path "0,1,3", GUID (strtoull, non-zero, resolved with a PathRecord
// query), DRSLID "lid,path", GID (inet_pton). srcport must have the SA class
// registered for GUID/GID.
int resolve_portid_str(const char* ca, uint8_t port, ib_portid_t* portid, const char* addr_str, enum MAD_DEST dest_type,
                       ib_portid_t* sm_id, const struct ibmad_port* srcport);

// The tools' start (failures IBEXIT naming main, as from the tool's main):
// mad_rpc_open_port on cfg's CA and port with the given classes;
struct ibmad_port* open_port(int* mgmt_classes, int num_classes);
// the same with the SMP classes (SMI, directed SMI, SA) and -y's M_Key set;
struct ibmad_port* open_smp_port();
// resolve_portid_str with cfg's CA, port and address type ("can't resolve
// destination port <addr>").
void resolve_dest(ib_portid_t* portid, const char* addr, ib_portid_t* sm_id, const struct ibmad_port* srcport);

// Counter value with a binary unit ("K", "M".. or "B", "KB".. for data
// counters, which count 4-byte words).
const char* conv_cnt_human_readable(uint64_t val64, float* val, bool data);
bool is_mlnx_ext_port_info_supported(uint32_t vendorid, uint16_t devid);
// Queries NodeInfo and PortInfo; IBEXIT on failure, IBWARN + false when the
// capability masks say no.
bool is_port_info_extended_supported(ib_portid_t* dest, int port, struct ibmad_port* srcport);
// "<FieldName>:....<value>" padded with dots to `spacing` (mad_dump style).
int snprint_field(char* buf, size_t n, enum MAD_FIELDS f, int spacing, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));
// PortInfo dump as smpquery portinfo prints it (M_Key hidden without -K),
// each line prefixed with `tabs` tabs.
void dump_portinfo(const void* pi, int tabs);

// "host.domain" (just "host" without a domain, "?hostname?" /
// "?domainname?" when unknown) into s[sz]; returns the length ibsysstat
// answers with: sz when the host name fills the buffer, else host name,
// dot and domain (without a domain: the host name and the terminator that
// took the dot's place).
int get_host_and_domain(char* s, int sz);

// Forwarding-table dumps (ibroute, dump_fts): the range checks, headers,
// blocks read through srcport, rows and count line. The tool says what a
// failed read means and describes the destination of each unicast LID.
struct FwdSwitch {
    ib_portid_t* portid;
    uint64_t guid;
    unsigned nports;
    const void* switchinfo;  // the switch's SwitchInfo attribute
    std::string name;  // its node-name-map name
};
struct FwdDumpOpts {
    bool multicast = false;  // -M: the MFT, else the LFT
    bool brief = false;  // -n: no destinations, MFT rows in hex
    bool dump_all = false;  // -a: empty/invalid entries too
};
// A block that could not be read ("MFT" or "LFT", its MAD status and
// attribute modifier): false ends the dump without its count line; true
// goes on showing what the buffer held before (as the reference).
using FwdReadFailed = std::function<bool(const char* table, int status, unsigned mod)>;
using LidInfoFn = std::function<std::string(int lid, bool valid)>;
// process_opts with their options (-a, -n, -M, --node-name-map <file>)
// and usage line; the tool's exclude string and examples.
int process_fwd_opts(int argc, char** argv, const char* exclude_common, FwdDumpOpts& opts, const char** map_file,
                     std::initializer_list<const char*> examples);
void dump_fwd_tables(const FwdSwitch& sw, unsigned startl, unsigned endl, const FwdDumpOpts& opts,
                     struct ibmad_port* srcport, const FwdReadFailed& failed, const LidInfoFn& lid_info);
// The LMC range of the last destination port described: its LIDs after the
// base are named by path number rather than described again.
struct LmcRange {
    int last_port_lid = 0;
    int base_port_lid = 0;
    uint64_t portguid = 0;
    // The text for a LID inside the range; empty optional outside it.
    std::optional<std::string> path_text(int lid, bool valid) const;
    void enter(int base_lid, int lmc);
};
// What the unicast dump says after a LID: nothing when brief, its path
// number inside the current LMC range, ": (illegal port)" for an invalid
// one, else describe()'s text (the range's port GUID cleared before: it
// sets the GUID and enters the port's range once it has found the port).
std::string lid_dest_info(int lid, bool valid, bool brief, LmcRange& range,
                          const std::function<std::string()>& describe);
// ": (<type> portguid <guid>: '<name>')"
std::string port_dest_text(int type, uint64_t portguid, const std::string& name);

// Sub-command tables (smpquery's "nodeinfo"/"NI", ...).
using OpFn = const char*(ib_portid_t* dest, char** argv, int argc);
struct MatchRec {
    const char* name;
    const char* alias;
    OpFn* fn;
    bool opt_portnum;
    const char* ops_extra;
};
OpFn* match_op(std::span<const MatchRec> table, const char* name);
// process_opts for the congestion-control tools: the common options but
// -D/-K, and -c/--cckey <key> into *cckey.
int process_cc_opts(int argc, char** argv, const char* usage_args, uint64_t* cckey,
                    std::initializer_list<const char*> examples);
// The rest of an "<op> <lid|guid> [args]" tool's main after its options
// (ibccquery, ibccconfig): the usage when the op or the target is
// missing, else the op looked up, srcport opened with the 3 mgmt_classes
// (and -y's M_Key), argv[1] resolved, the op run, srcport closed; every
// failure IBEXITs as main.
void run_op(std::span<const MatchRec> table, int* mgmt_classes, struct ibmad_port*& srcport, int argc, char** argv);

// Node name map (/etc/rdma/ib-node-name-map format: "<guid> \"name\"").
class NodeNameMap {
public:
    // nullptr: the default file if it exists, else an empty map. A file
    // that can't be read or parsed prints the reference's WARNING lines
    // and leaves the map empty.
    explicit NodeNameMap(const char* file = nullptr);
    // The mapped name, else clean_nodedesc(nodedesc).
    std::string remap(uint64_t guid, const char* nodedesc) const;
    bool loaded() const { return loaded_; }

private:
    std::map<uint64_t, std::string> names_;
    bool loaded_ = false;
};
// At most 64 chars, every non-printable char replaced by a space.
std::string clean_nodedesc(const char* nodedesc);

// SA queries over a GSI agent of the SA class.
struct SaHandle {
    int fd = -1;
    int agent = -1;
    ib_portid_t dport{};
    SaHandle() = default;
    SaHandle(const SaHandle&) = delete;
    SaHandle& operator=(const SaHandle&) = delete;
    ~SaHandle();
};
struct SaResult {
    uint32_t status = 0;  // MAD status of the answer
    unsigned result_cnt = 0;  // records (bounded by the bytes received)
    std::vector<uint8_t> mad;  // the answer's MAD (header + data)
    // Record i (i < result_cnt) inside mad.
    void* record(unsigned i);
};
// Opens cfg.ca / cfg.ca_port and registers an SA class agent; nullptr
// with the reference's IBWARN when the port knows no SM or the open or
// registration fails. umad_init() must have been called.
std::unique_ptr<SaHandle> sa_get_handle();
// Returns 0 with the answer in result (check result.status), else the umad
// error / status as the reference's sa_query.
int sa_query(SaHandle& h, uint8_t method, uint16_t attr, uint32_t mod, uint64_t comp_mask, uint64_t sm_key,
             const void* data, size_t datasz, SaResult& result);
// "ERROR: Query result returned 0x%04x, ..." on stderr.
void sa_report_err(int status);

}  // namespace ibdiag
