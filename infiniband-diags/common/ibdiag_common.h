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
#include <span>
#include <string>
#include <vector>

#include <infiniband/mad.h>
#include <infiniband/umad.h>

namespace ibdiag {

// Where the reference keeps its files.
inline constexpr const char *kConfigFile = "/etc/infiniband-diags/ibdiag.conf";
inline constexpr const char *kNodeNameMapFile = "/etc/rdma/ib-node-name-map";
// The version line printed by -V is "<argv0> BUILD VERSION: <kVersion>".
inline constexpr const char *kVersion = "44.0";
// libibnetdisc's IBND_CONFIG_MLX_EPI, set by default (MLX_EPI= in ibdiag.conf).
inline constexpr uint32_t kNetdiscMlxEpi = 1u << 0;
inline constexpr const char *kNotDisplayed = "<not displayed>";

// Everything the common options and ibdiag.conf set.
struct Settings {
	char *ca = nullptr;                 // -C, CA=   (nullptr: first CA)
	int ca_port = 0;                    // -P, Port= (0: first active port)
	int timeout = 0;                    // -t, timeout= (ms; 0: library default)
	enum MAD_DEST dest_type = IB_DEST_LID; // -L (default), -G, -D
	ib_portid_t *sm_id = nullptr;       // -s <lid>: SM to ask, else umad's sm_lid
	uint32_t ibnetdisc_flags = kNetdiscMlxEpi; // MLX_EPI=
	uint64_t mkey = 0;                  // -y, m_key=
	uint64_t sakey = 0;                 // sa_key=
	bool show_keys = false;             // -K
	char *nd_format = nullptr;          // nd_format=
	int verbose = 0;                    // -v (count)
};
extern Settings cfg;

// One option of a tool. letter is the short option (a printable char) or,
// for a long-only option, a non-printable value below 256 that is unique in
// the tool. has_arg: 0 none, 1 required (getopt's values).
struct Option {
	const char *name = nullptr;
	int letter = 0;
	int has_arg = 0;
	const char *arg_tmpl = nullptr;   // "<val>" when null and has_arg
	const char *description = nullptr;
};

// Called for every option found (custom ones and common ones alike, custom
// first): return 0 when the tool handled it, anything else to let the
// common handling have it (an option nobody takes prints the usage, exit 2).
using OptionHandler = std::function<int(int letter, char *arg)>;

// Parse argv as the reference does (reads ibdiag.conf first, --config later
// re-reads). Returns optind: the index of the first non-option argument.
int process_opts(int argc, char *argv[], const char *exclude_common,
		 std::span<const Option> custom, const OptionHandler &handler,
		 const char *usage_args,
		 std::initializer_list<const char *> examples = {});
// The usage text on stderr, then exit(2).
[[noreturn]] void show_usage();
// argv[0] as given to process_opts ("" before).
const char *prog_name();

// "<prog>: iberror: failed: <msg>" on stdout (with -d: "[pid N] <fn>: "
// before "failed"), then exit(255) -- the reference's exit(-1).
[[noreturn]] void ibexit(const char *fn, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define IBEXIT(fmt, ...) ::ibdiag::ibexit(__func__, fmt, ##__VA_ARGS__)
#define IBDIAG_VERBOSE(fmt, ...) do { if (::ibdiag::cfg.verbose) IBVERBOSE(fmt, ##__VA_ARGS__); } while (0)
#define IBDIAG_DEBUG(fmt, ...) do { if (ibdebug) IBDEBUG(fmt, ##__VA_ARGS__); } while (0)

// Target resolution (umad's view of the local port; SA for GUID/GID).
// All return 0 on success, < 0 on failure, as the reference's.
int resolve_sm_portid(const char *ca, uint8_t port, ib_portid_t *sm_id);
int resolve_self(const char *ca, uint8_t port, ib_portid_t *portid,
		 int *portnum, ibmad_gid_t *gid);
// addr_str by dest_type: LID (strtol, must be a valid unicast/multicast LID),
// DR path "0,1,3", GUID (strtoull, non-zero, resolved with a PathRecord
// query), DRSLID "lid,path", GID (inet_pton). srcport must have the SA class
// registered for GUID/GID.
int resolve_portid_str(const char *ca, uint8_t port, ib_portid_t *portid,
		       const char *addr_str, enum MAD_DEST dest_type,
		       ib_portid_t *sm_id, const struct ibmad_port *srcport);

// Counter value with a binary unit ("K", "M".. or "B", "KB".. for data
// counters, which count 4-byte words).
const char *conv_cnt_human_readable(uint64_t val64, float *val, bool data);
bool is_mlnx_ext_port_info_supported(uint32_t vendorid, uint16_t devid);
// Queries NodeInfo and PortInfo; IBEXIT on failure, IBWARN + false when the
// capability masks say no.
bool is_port_info_extended_supported(ib_portid_t *dest, int port,
				     struct ibmad_port *srcport);
// "<FieldName>:....<value>" padded with dots to `spacing` (mad_dump style).
int snprint_field(char *buf, size_t n, enum MAD_FIELDS f, int spacing,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
// PortInfo dump as smpquery portinfo prints it (M_Key hidden without -K),
// each line prefixed with `tabs` tabs.
void dump_portinfo(const void *pi, int tabs);

// Sub-command tables (smpquery's "nodeinfo"/"NI", ...).
using OpFn = const char *(ib_portid_t *dest, char **argv, int argc);
struct MatchRec {
	const char *name;
	const char *alias;
	OpFn *fn;
	bool opt_portnum;
	const char *ops_extra;
};
OpFn *match_op(std::span<const MatchRec> table, const char *name);

// Node name map (/etc/rdma/ib-node-name-map format: "<guid> \"name\"").
class NodeNameMap {
public:
	// nullptr: the default file if it exists, else an empty map. A file
	// that can't be read or parsed prints the reference's WARNING lines
	// and leaves the map empty.
	explicit NodeNameMap(const char *file = nullptr);
	// The mapped name, else clean_nodedesc(nodedesc).
	std::string remap(uint64_t guid, const char *nodedesc) const;
	bool loaded() const { return loaded_; }
private:
	std::map<uint64_t, std::string> names_;
	bool loaded_ = false;
};
// At most 64 chars, every non-printable char replaced by a space.
std::string clean_nodedesc(const char *nodedesc);

// SA queries over a GSI agent of the SA class.
struct SaHandle {
	int fd = -1;
	int agent = -1;
	ib_portid_t dport{};
	SaHandle() = default;
	SaHandle(const SaHandle &) = delete;
	SaHandle &operator=(const SaHandle &) = delete;
	~SaHandle();
};
struct SaResult {
	uint32_t status = 0;        // MAD status of the answer
	unsigned result_cnt = 0;    // records (bounded by the bytes received)
	std::vector<uint8_t> mad;   // the answer's MAD (header + data)
	// Record i (i < result_cnt) inside mad.
	void *record(unsigned i);
};
// Opens cfg.ca / cfg.ca_port and registers an SA class agent; nullptr
// with the reference's IBWARN when the port knows no SM or the open or
// registration fails. umad_init() must have been called.
std::unique_ptr<SaHandle> sa_get_handle();
// Returns 0 with the answer in result (check result.status), else the umad
// error / status as the reference's sa_query.
int sa_query(SaHandle &h, uint8_t method, uint16_t attr, uint32_t mod,
	     uint64_t comp_mask, uint64_t sm_key, const void *data,
	     size_t datasz, SaResult &result);
// "ERROR: Query result returned 0x%04x, ..." on stderr.
void sa_report_err(int status);

} // namespace ibdiag
