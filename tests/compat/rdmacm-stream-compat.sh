#!/bin/bash
# rdmacm-stream-compat.sh: compare the librdmacm example programs
# rdma_server, rdma_client, rdma_xserver, rdma_xclient, rcopy, rstream and
# riostream of two installations on a real RDMA device: their stdout,
# stderr and exit statuses must match, and each side must interoperate with
# the other on the wire. Prints one line per case; exits 1 if any case
# differs, 2 on a usage error or when no RDMA device is usable, 77
# (skipped) when a reference program is not installed.
#
#   rdmacm-stream-compat.sh [options] REF TEST
#
# REF and TEST are directories holding the programs (REF: Debian's
# rdmacm-utils in /usr/bin). Run it where an RDMA device has an IP address
# (the rxe VM: tests/vm). Options:
#   --ref-libs DIR, --test-libs DIR   LD_LIBRARY_PATH for that side (default:
#                                     none, the variable is removed)
#   --programs "P..."   the programs to test (default: all seven); cases of
#                       the others are left out
#   --host ADDR         the address the clients connect to (default: the
#                       first IPv4 address of an RDMA device's netdev)
#   --timeout SEC       limit for each program run (default 30)
#   --keep DIR          keep the captured outputs in DIR
#   --only REGEX        run only the cases whose command line matches REGEX
#   --combos "S:C..."   the server:client mixes of the connected cases
#                       (default: test:test test:ref ref:test, and lib:lib
#                       with --test-libs)
#   --series            also run rstream's and riostream's default series
#                       (latency and bandwidth tests of 64 bytes to 1 MiB on
#                       two connections): minutes per run under emulation,
#                       so not by default. (Not with -T f: Debian's rstream
#                       hangs there, its client dying of SIGPIPE.)
#   -q                  print only differing cases and the total
#
# Sides. "ref" runs REF's programs with --ref-libs, "test" TEST's programs
# with --test-libs. When --test-libs is given there is a third side, "lib":
# REF's programs on --test-libs, i.e. Debian's binaries on our libraries.
#
# Single-program cases (bad options, no listener, unreachable or unknown
# addresses, failures before a connection) run each side once and compare
# test and lib with ref. Connected cases run a server and then a client on
# a fresh port: ref server with ref client is the baseline; then
# test:test, test:ref, ref:test and, with the lib side, lib:lib
# (server:client), each compared with the baseline, server and client
# output alike. Usage errors leave the lib side out (they come before any
# library call). A connected case that differs is run up to twice more (each
# a fresh baseline) before it counts. The client starts once the server
# listens: an rdma_cm listener on the port (rdma resource show cm_id) or a
# TCP one (/proc/net/tcp). rcopy's server never ends by itself; it is
# stopped with SIGTERM once it waits for the next client.
#
# Masked before comparing: the time, Gb/sec and usec/xfer columns of the
# rstream/riostream tables, the seconds and Gb/sec of rcopy's summary, and
# the reason after "rpoll: ". rstream and riostream print that when a poll
# reports POLLERR/POLLHUP (e.g. a refused connection); rpoll does not set
# errno then, so the text is whatever an earlier call left behind, and
# Debian's own runs print "Connection refused", "Transport endpoint is not
# connected" or "Success" for the same case. The exit status (the poll
# bits) is compared. Everything else must be identical.
#
# Both sides run with the same argv[0] (the bare program name), which
# several programs print.
#
# Last, a few fault cases check ours alone: rstream and riostream with the
# peer killed mid-run must end by themselves ("Connection reset by peer",
# status 255), where Debian's spin forever.
#
# Example (in the VM):
#   rdmacm-stream-compat.sh /usr/bin build/bin --test-libs build/lib
set -u

usage() {
	sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0" >&2
	exit 2
}

all_programs="rdma_server rdma_client rdma_xserver rdma_xclient rcopy rstream riostream"
ref_libs="" test_libs="" keep="" only="" quiet=0 host="" limit=30 series=0 combos=""
programs=$all_programs
dirs=()
while [ $# -gt 0 ]; do
	case "$1" in
	--ref-libs) ref_libs=${2-}; shift 2 || usage ;;
	--test-libs) test_libs=${2-}; shift 2 || usage ;;
	--programs) programs=${2-}; shift 2 || usage ;;
	--host) host=${2-}; shift 2 || usage ;;
	--timeout) limit=${2-}; shift 2 || usage ;;
	--keep) keep=${2-}; shift 2 || usage ;;
	--only) only=${2-}; shift 2 || usage ;;
	--series) series=1; shift ;;
	--combos) combos=${2-}; shift 2 || usage ;;
	-q) quiet=1; shift ;;
	-h|--help) usage ;;
	-*) echo "rdmacm-stream-compat.sh: unknown option $1" >&2; usage ;;
	*) dirs+=("$1"); shift ;;
	esac
done
[ ${#dirs[@]} -eq 2 ] || usage
ref_dir=${dirs[0]} test_dir=${dirs[1]}
for p in $programs; do
	case " $all_programs " in
	*" $p "*) ;;
	*) echo "rdmacm-stream-compat.sh: $p is not one of: $all_programs" >&2; exit 2 ;;
	esac
	[ -x "$ref_dir/$p" ] || { echo "rdmacm-stream-compat.sh: $ref_dir/$p is not installed, skipping" >&2; exit 77; }
	[ -x "$test_dir/$p" ] || { echo "rdmacm-stream-compat.sh: $test_dir/$p is not executable" >&2; exit 2; }
done
sides="ref test"
[ -n "$test_libs" ] && sides="ref test lib"
if [ -z "$combos" ]; then
	combos="test:test test:ref ref:test"
	[ -n "$test_libs" ] && combos="$combos lib:lib"
fi
for c in $combos; do
	case "$c" in
	test:test|test:ref|ref:test|lib:lib|lib:ref|ref:lib|test:lib|lib:test) ;;
	*) echo "rdmacm-stream-compat.sh: bad mix $c" >&2; exit 2 ;;
	esac
	case "$c" in
	*lib*) [ -n "$test_libs" ] || { echo "rdmacm-stream-compat.sh: $c needs --test-libs" >&2; exit 2; } ;;
	esac
done

if [ -n "$keep" ]; then
	work=$keep
	mkdir -p "$work" && [ -w "$work" ] || { echo "rdmacm-stream-compat.sh: cannot write to $work" >&2; exit 2; }
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/rdmacm-stream-compat.XXXXXX") || exit 2
	trap 'rm -rf "$work"' EXIT
fi
work=$(cd "$work" && pwd)

# The address of the device: the first IPv4 address of the netdev behind
# an RDMA device's port 1.
sysfs=/sys/class/infiniband
if [ -z "$host" ]; then
	for d in "$sysfs"/*; do
		[ -d "$d/ports/1/gid_attrs/ndevs" ] || continue
		for nd in $(cat "$d"/ports/1/gid_attrs/ndevs/* 2>/dev/null | sort -u); do
			host=$(ip -4 -o addr show dev "$nd" 2>/dev/null |
				sed -n 's/.* inet \([0-9.]*\)\/.*/\1/p' | head -n 1)
			[ -n "$host" ] && break 2
		done
	done
fi
[ -n "$host" ] || { echo "rdmacm-stream-compat.sh: no RDMA device with an IPv4 address" >&2; exit 2; }
command -v rdma >/dev/null || { echo "rdmacm-stream-compat.sh: needs the rdma tool (iproute2)" >&2; exit 2; }

# The VM runs under emulation, where every process costs: the helpers
# below use shell builtins only (no sed, cat, cmp, grep or sleep per run).

# pause SECONDS: sleep without a process, on a FIFO nobody writes (in
# TMPDIR: the work dir may be on a file system without FIFOs); sleep(1)
# where no FIFO can be made.
pause_dir=$(mktemp -d "${TMPDIR:-/tmp}/rdmacm-stream-pause.XXXXXX") || exit 2
if mkfifo "$pause_dir/fifo" 2>/dev/null && exec {pause_fd}<>"$pause_dir/fifo"; then
	pause() { read -r -t "$1" -u "$pause_fd" _ || :; }
else
	pause() { sleep "$1"; }
fi
rm -rf "$pause_dir"

# slurp FILE: its whole content in $content ("" if missing).
slurp() {
	content=""
	[ -f "$1" ] && IFS= read -r -d '' content <"$1"
	:
}

# run SIDE OUTPREFIX PROGRAM ARGS...: one run, outputs captured in
# OUTPREFIX.{out,err,rc}; OUTPREFIX.pid holds the pid to signal (timeout's,
# which passes signals on). The program is found through PATH so that its
# argv[0] is the bare name. Stopped after $limit seconds.
run() {
	local side=$1 out=$2 prog=$3
	shift 3
	local dir libs
	case "$side" in
	ref) dir=$ref_dir libs=$ref_libs ;;
	test) dir=$test_dir libs=$test_libs ;;
	lib) dir=$ref_dir libs=$test_libs ;;
	esac
	(
		cd "$work" || exit 2
		unset LD_LIBRARY_PATH
		[ -n "$libs" ] && export LD_LIBRARY_PATH="$libs"
		PATH="$dir:$PATH" exec timeout -k 5 "${run_limit:-$limit}" "$prog" "$@"
	) >"$out.out" 2>"$out.err" </dev/null &
	local pid=$!
	echo "$pid" >"$out.pid"
	# (no "Killed" notice from the shell when a fault case kills it)
	wait "$pid" 2>/dev/null
	echo $? >"$out.rc"
}

# mask FILE: its content with what legitimately differs between two runs
# masked (see the header), in $masked; a missing final newline shows.
# A table row: five fixed-width columns (42 characters), then the time
# (right-aligned, with its padding), Gb/sec and usec/xfer.
mask_row='^(.{42}) *[^ ]+s +[^ ]+ +[^ ]+$'
mask_copy='^([0-9]+ bytes in )[^ ]+( seconds = )[^ ]+( Gb/sec)$'
mask() {
	local line
	slurp "$1"
	masked=""
	while IFS= read -r line; do
		if [[ $line =~ $mask_row ]]; then
			line="${BASH_REMATCH[1]}* * *"
		elif [[ $line =~ $mask_copy ]]; then
			line="${BASH_REMATCH[1]}*${BASH_REMATCH[2]}*${BASH_REMATCH[3]}"
		elif [[ $line == "rpoll: "* ]]; then
			line="rpoll: *"
		fi
		masked+="$line"$'\n'
	done <<<"$content"
	[ -z "$content" ] && masked=""
	[ -n "$content" ] && [ "${content: -1}" != $'\n' ] && masked+="(no newline at end)"$'\n'
	:
}

# same A B: masked outputs and statuses of runs A and B agree; sets $bad
# to the list of what differs and keeps the masked texts in
# $masked_{a,b}_{out,err} for show_diff.
same() {
	local a=$1 b=$2 s ma rca rcb
	bad=""
	for s in out err; do
		mask "$a.$s"
		ma=$masked
		mask "$b.$s"
		printf -v "masked_a_$s" '%s' "$ma"
		printf -v "masked_b_$s" '%s' "$masked"
		[ "$ma" == "$masked" ] || bad="$bad std$s"
	done
	read -r rca <"$a.rc"
	read -r rcb <"$b.rc"
	[ "$rca" == "$rcb" ] || bad="$bad exit($rca vs $rcb)"
	[ -z "$bad" ]
}

# show_diff LABEL: the masked differences found by the last same.
show_diff() {
	local label=$1 s a b
	for s in out err; do
		a=masked_a_$s b=masked_b_$s
		[ "${!a}" == "${!b}" ] && continue
		printf '%s' "${!a}" >"$work/.diff.a"
		printf '%s' "${!b}" >"$work/.diff.b"
		diff -u --label "ref.$label.std$s" --label "other.$label.std$s" \
			"$work/.diff.a" "$work/.diff.b" | head -n 30 | sed 's/^/      /'
	done
}

# selected PROGRAM ARGS...: the case's program is tested and it passes --only.
selected() {
	case " $programs " in
	*" $1 "*) ;;
	*) return 1 ;;
	esac
	[ -z "$only" ] || printf '%s\n' "$*" | grep -Eq -- "$only"
}

side_label() {
	case "$1" in
	test) label="ours" ;;
	lib) label="debian on our libs" ;;
	*) label=$1 ;;
	esac
}

cases=0 failed=0
report() { # report WHAT STATUS_TEXT BAD...
	local what=$1 status=$2
	shift 2
	if [ $# -eq 0 ]; then
		[ $quiet = 1 ] || printf 'same  %-66s %s\n' "$what" "$status"
	else
		failed=$((failed + 1))
		printf 'DIFF  %-66s%s\n' "$what" "$*"
	fi
}

next_port=19100
new_port() { port=$next_port; next_port=$((next_port + 1)); }

# expand WORDS...: the words with @HOST@, @PORT@, @WORK@ and @FILES@
# replaced, in the array $expanded.
expand() {
	expanded=()
	local w
	for w in "$@"; do
		w=${w//@HOST@/$host}
		w=${w//@PORT@/$port}
		w=${w//@WORK@/$work}
		w=${w//@FILES@/$files}
		expanded+=("$w")
	done
}

# check PROGRAM ARGS...: a single-program case, the other sides against
# ref. With usage_only=1 the lib side is left out: a usage error comes
# before any library call.
check() {
	selected "$@" || return 0
	new_port
	local what="$*" n=$((cases + 1)) side rc
	expand "$@"
	run ref "$work/$n.ref" "${expanded[@]}"
	read -r rc <"$work/$n.ref.rc"
	for side in $sides; do
		[ "$side" = ref ] && continue
		[ "$side" = lib ] && [ "${usage_only:-0}" = 1 ] && continue
		cases=$((cases + 1))
		run "$side" "$work/$n.$side" "${expanded[@]}"
		side_label "$side"
		if same "$work/$n.ref" "$work/$n.$side"; then
			report "$what [$label]" "exit $rc"
		elif [ "${refusal_race:-0}" = 1 ] && [ "$masked_a_out" == "$masked_b_out" ] &&
			refusal_either "$work/$n.ref" >/dev/null && refusal_either "$work/$n.$side" >/dev/null; then
			report "$what [$label]" "exit $rc (refusal seen by $(refusal_either "$work/$n.$side"))"
		else
			report "$what [$label]" "" "$bad"
			show_diff run
		fi
	done
}

# refusal_either RUN: a nonblocking client refused by a port nobody listens
# on, in either of the two ways the reference's own design allows: rconnect
# returns EINPROGRESS and rpoll reports the refusal (exit 8), or the refusal
# has already come back while rconnect still reads its events (the local
# CM's REJECT is one loopback MAD away) and rconnect reports it (exit 255).
# Prints which, and succeeds, when RUN is one of them (check also wants the
# two runs' stdout identical).
refusal_either() {
	local rc first
	read -r rc <"$1.rc"
	first=$(head -n 1 "$1.err")
	case "$rc:$first" in
	"8:rpoll: "*) echo rpoll ;;
	"255:rconnect: Connection refused") echo rconnect ;;
	*) return 1 ;;
	esac
}

# listening PORT: an rdma_cm or TCP listener on PORT.
listening() {
	local hex line
	printf -v hex ':%04X ' "$1"
	for f in /proc/net/tcp /proc/net/tcp6; do
		[ -r "$f" ] || continue
		while IFS= read -r line; do
			[[ $line == *"$hex"*" 0A "* ]] && return 0
		done <"$f"
	done
	local listeners re="state LISTEN [^"$'\n'"]*:$1 "
	listeners=$(rdma resource show cm_id 2>/dev/null)
	[[ $listeners =~ $re ]]
}

# count_prompts FILE: how many times the server printed its prompt, in
# $prompts.
count_prompts() {
	local p="waiting for connection" rest
	slurp "$1"
	rest=${content//"$p"/}
	prompts=$(((${#content} - ${#rest}) / ${#p}))
}

# pair OUT SSIDE CSIDE: one server/client run of the current case
# ($c_sprog, $c_server, $c_cprog, $c_client, $c_stop, $c_after, $c_port).
pair() {
	local out=$1 sside=$2 cside=$3 watch deadline
	new_port
	watch=${c_port:-$port}
	if [ -n "$c_after" ]; then
		rm -rf "$files/dst"
		mkdir -p "$files/dst"
	fi
	expand "${c_server[@]}"
	run "$sside" "$out.server" "$c_sprog" "${expanded[@]}" &
	local server=$!
	deadline=$((SECONDS + 20))
	while ! listening "$watch" && kill -0 "$server" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
		pause 0.1
	done
	expand "${c_client[@]}"
	run "$cside" "$out.client" "$c_cprog" "${expanded[@]}"
	# A server that does not end by itself is stopped once it has
	# printed its prompt $c_stop times (0: right away); any other is
	# given 15 s to finish after its client.
	if [ -n "$c_stop" ]; then
		deadline=$((SECONDS + 10))
	else
		deadline=$((SECONDS + 15))
	fi
	while kill -0 "$server" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
		if [ -n "$c_stop" ]; then
			count_prompts "$out.server.out"
			[ "$prompts" -ge "$c_stop" ] && break
		fi
		pause 0.1
	done
	if kill -0 "$server" 2>/dev/null; then
		local spid
		read -r spid <"$out.server.pid"
		kill -TERM "$spid" 2>/dev/null
	fi
	wait "$server"
	if [ -n "$c_after" ]; then
		(cd "$files" && eval "$c_after") >>"$out.client.out" 2>&1
	fi
}

# same_pair A B: both the server and the client runs agree; the diffs
# (when not) in $pair_diff.
same_pair() {
	local sbad
	pair_diff=""
	same "$1.server" "$2.server" || pair_diff+=$(show_diff server)$'\n'
	sbad=${bad:+ server:$bad}
	same "$1.client" "$2.client" || pair_diff+=$(show_diff client)$'\n'
	bad="$sbad${bad:+ client:$bad}"
	[ -z "$bad" ]
}

# connected [-k COUNT] [-a CMD] [-P PORT] SERVER ARGS... -- CLIENT ARGS...
#   -k COUNT  the server does not end: stop it once it printed "waiting
#             for connection" COUNT times (0: as soon as the client ended)
#   -a CMD    shell command run in @FILES@ after each pair, which empties
#             @FILES@/dst before; its output is compared as part of the
#             client's
#   -P PORT   the port the server listens on, when it is not @PORT@
# SERVER and CLIENT are program names. Arguments may use @HOST@, @PORT@
# (fresh for each pair), @WORK@ and @FILES@.
connected() {
	c_stop="" c_after="" c_port=""
	while :; do
		case "$1" in
		-k) c_stop=$2; shift 2 ;;
		-a) c_after=$2; shift 2 ;;
		-P) c_port=$2; shift 2 ;;
		*) break ;;
		esac
	done
	c_sprog=$1
	shift
	c_server=() c_client=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do c_server+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	c_cprog=$1
	shift
	c_client=("$@")
	local what="${c_sprog} ${c_server[*]} <-> $c_cprog ${c_client[*]}"
	selected "$c_sprog" "$what" || return 0
	selected "$c_cprog" "$what" || return 0
	local n=$((cases + 1)) combo sside cside attempt src crc slabel
	pair "$work/$n.base" ref ref
	for combo in $combos; do
		cases=$((cases + 1))
		sside=${combo%:*} cside=${combo#*:}
		local o="$work/$n.$sside-$cside"
		for attempt in 1 2 3; do
			pair "$o" "$sside" "$cside"
			same_pair "$work/$n.base" "$o" && break
			[ $attempt = 3 ] && break
			# Rerun the baseline too: the difference may be its flake
			# (Debian's rstream -T async ends with POLLHUP, status 16,
			# when the server's disconnect reaches its last rpoll
			# together with the data, a race a loaded host loses in
			# both of two runs now and then).
			pair "$work/$n.base" ref ref
		done
		read -r src <"$work/$n.base.server.rc"
		read -r crc <"$work/$n.base.client.rc"
		side_label "$sside"
		slabel=$label
		side_label "$cside"
		label="[server $slabel, client $label]"
		if [ -z "$bad" ]; then
			local note=""
			[ "$attempt" = 1 ] || note=" (try $attempt)"
			report "$what $label" "exit $src/$crc$note"
		else
			report "$what $label" "" "$bad"
			printf '%s' "$pair_diff"
		fi
	done
}

# fault KILLED PROGRAM ARGS...: our server and client of a long custom
# test (ARGS are the server's; the client adds -s @HOST@), one of them
# (KILLED: server or client) killed with SIGKILL after a few seconds; the
# other must end by itself within 20 s, with status 255 and a "Connection
# reset by peer" (or "Broken pipe") message. Debian's programs spin forever there (they never
# look at the connection while they wait for data), so there is no
# baseline to compare with: this checks ours only.
fault() {
	local killed=$1 prog=$2
	shift 2
	local what="$prog $* ($killed killed mid-run)"
	selected "$prog" "$what" || return 0
	[ "${fault_cases:-1}" = 1 ] || return 0
	new_port
	cases=$((cases + 1))
	local n=$cases out victim survivor spid cpid deadline rc msg
	out="$work/$n.fault"
	expand "$@"
	local sargs=("${expanded[@]}")
	run test "$out.server" "$prog" "${sargs[@]}" &
	spid=$!
	deadline=$((SECONDS + 20))
	while ! listening "$port" && kill -0 "$spid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
		pause 0.1
	done
	run test "$out.client" "$prog" -s "$host" "${sargs[@]}" &
	cpid=$!
	pause 4
	if [ "$killed" = server ]; then
		victim=$out.server survivor=$out.client
	else
		victim=$out.client survivor=$out.server
	fi
	# timeout leads its own process group: the program goes with it.
	local vpid
	read -r vpid <"$victim.pid"
	kill -KILL -- "-$vpid" 2>/dev/null
	local start=$SECONDS
	deadline=$((SECONDS + 20))
	while { kill -0 "$spid" || kill -0 "$cpid"; } 2>/dev/null && [ $SECONDS -lt $deadline ]; do
		pause 0.2
	done
	local took=$((SECONDS - start))
	for p in "$out.server.pid" "$out.client.pid"; do
		read -r vpid <"$p" && kill -KILL -- "-$vpid" 2>/dev/null
	done
	wait "$spid" "$cpid" 2>/dev/null
	read -r rc <"$survivor.rc"
	slurp "$survivor.err"
	msg=$content
	if [ "$rc" = 255 ] && [[ $msg == *"Connection reset by peer"* || $msg == *"Broken pipe"* ]]; then
		[ $quiet = 1 ] || printf 'ok    %-66s %s\n' "$what [ours]" "exit $rc after ${took}s"
	else
		failed=$((failed + 1))
		printf 'FAIL  %-66s exit %s after %ss: %s\n' "$what [ours]" "$rc" "$took" "${msg%%$'\n'*}"
	fi
}

# rcopy's files, in TMPDIR: its server maps the destination shared and
# writable, which a work dir on a network file system may refuse.
files=$(mktemp -d "${TMPDIR:-/tmp}/rdmacm-stream-files.XXXXXX") || exit 2
trap 'rm -rf "$files"; [ -n "$keep" ] || rm -rf "$work"' EXIT
head -c 300000 /dev/urandom >"$files/src.bin"
printf 'x' >"$files/one.bin"
: >"$files/empty.bin"
cp "$files/src.bin" "$files/exec.bin" && chmod 751 "$files/exec.bin"

# A port nobody listens on, an address no device routes to, one on the
# device's subnet that nobody answers, and a name that does not resolve.
new_port
closed=$port
noroute=192.0.2.1
silent=${host%.*}.254
noname=nosuchhost.invalid

# ------------------------------------------------------- usage errors
for p in $all_programs; do
	usage_only=1 check $p -x
done
usage_only=1 check rdma_client -p
usage_only=1 check rdma_xserver -c q
usage_only=1 check rdma_xclient -c ''
usage_only=1 check rstream -T q
usage_only=1 check rstream -T sockets -T bogus
usage_only=1 check riostream -T s
usage_only=1 check rcopy onlyone
usage_only=1 check rcopy a b -p

# ---------------------------------- failures before or without a peer
check rdma_client -s @HOST@ -p $closed
check rdma_client -s $noroute -p $closed
check rdma_client -s $noname -p $closed
check rdma_server -s $noroute -p @PORT@
check rdma_server -p notaport
# The port is cut to five characters: the closed one.
check rdma_xclient -s @HOST@ -p ${closed}99
check rdma_xclient -s @HOST@ -p $closed -c x
refusal_race=1 check rstream -s @HOST@ -p $closed -S 100 -C 10
check rstream -s @HOST@ -p $closed -S 100 -C 10 -T b
check rstream -s @HOST@ -p $closed -S 100 -C 10 -T s
check rstream -s $noroute -p $closed -S 100 -C 10
check rstream -s $noname -p $closed -C 10
# (Not -f gid: Debian's rconnect of that AF_IB address fails at once with
# ENODEV in some runs and through a POLLERR poll in others.)
check rstream -b $noroute -p @PORT@ -C 10
check rstream -S -5 -p @PORT@
check riostream -s @HOST@ -p $closed -S 100 -C 10 -T b
check riostream -s $noroute -p $closed -S 100 -C 10
check rcopy @FILES@/one.bin @HOST@:@FILES@/dst/x -p $closed
check rcopy @FILES@/one.bin $noroute:@FILES@/dst/x -p $closed
check rcopy @FILES@/one.bin $noname:@FILES@/dst/x
# A neighbour that never answers: the reference's address resolution does
# not give up within the limit, so every side is stopped (status 124).
run_limit=5 check rdma_client -s $silent -p $closed

# ----------------------------------------------------------- connected
connected rdma_server -p @PORT@ -- rdma_client -s @HOST@ -p @PORT@
connected -P 7471 rdma_server -- rdma_client -s @HOST@
# A second server on a busy port.
connected -k 0 rdma_server -s @HOST@ -p @PORT@ -- rdma_server -s @HOST@ -p @PORT@

connected rdma_xserver -p @PORT@ -c r -- rdma_xclient -s @HOST@ -p @PORT@ -c R
# XRC: soft-RoCE has none, so the client fails and the server waits.
connected -k 0 rdma_xserver -p @PORT@ -c x -- rdma_xclient -s @HOST@ -p @PORT@ -c x

connected rstream -p @PORT@ -S 4096 -C 100 -- rstream -s @HOST@ -p @PORT@ -S 4096 -C 100
connected rstream -p @PORT@ -S 1000 -C 50 -I 2 -T v -- rstream -s @HOST@ -p @PORT@ -S 1000 -C 50 -I 2 -T verify
connected rstream -p @PORT@ -S 100 -C 20 -T a -- rstream -s @HOST@ -p @PORT@ -S 100 -C 20 -T async
connected rstream -p @PORT@ -S 3000 -C 20 -T b -T v -- rstream -s @HOST@ -p @PORT@ -S 3000 -C 20 -T blocking -T v
connected rstream -b @HOST@ -p @PORT@ -S 500 -C 10 -f ip -- rstream -s @HOST@ -b @HOST@ -p @PORT@ -S 500 -C 10 -f ipv6
connected rstream -p @PORT@ -S 1000 -C 20 -T r -- rstream -s @HOST@ -p @PORT@ -S 1000 -C 20 -T resolve
connected rstream -p @PORT@ -S 1000 -C 20 -T s -T v -- rstream -s @HOST@ -p @PORT@ -S 1000 -C 20 -T s -T v
connected rstream -p @PORT@ -S 1000 -C 20 -T f -- rstream -s @HOST@ -p @PORT@ -S 1000 -C 20 -T fork
connected rstream -p @PORT@ -S 64 -C 10 -k 7 -- rstream -s @HOST@ -p @PORT@ -S 64 -C 10 -k 7

connected riostream -p @PORT@ -S 4096 -C 100 -- riostream -s @HOST@ -p @PORT@ -S 4096 -C 100
connected riostream -p @PORT@ -S 1000 -C 50 -I 2 -T v -- riostream -s @HOST@ -p @PORT@ -S 1000 -C 50 -I 2 -T verify
connected riostream -p @PORT@ -S 100 -C 20 -T a -- riostream -s @HOST@ -p @PORT@ -S 100 -C 20 -T async
connected riostream -p @PORT@ -S 3000 -C 10 -T b -- riostream -s @HOST@ -p @PORT@ -S 3000 -C 10 -T b
connected riostream -p @PORT@ -S 1 -C 10 -I 3 -- riostream -s @HOST@ -p @PORT@ -S 1 -C 10 -I 3

# rcopy: a file and its permission bits, an empty and a missing source, a
# destination the server cannot create, a second server on a busy port.
connected -k 2 -a 'cmp src.bin dst/copy && stat -c %a dst/copy' \
	rcopy -p @PORT@ -- rcopy @FILES@/src.bin @HOST@:@FILES@/dst/copy -p @PORT@
connected -k 2 -a 'cmp exec.bin dst/exec && stat -c %a dst/exec' \
	rcopy -p @PORT@ -- rcopy @FILES@/exec.bin @HOST@:@FILES@/dst/exec -p @PORT@
connected -k 2 -a 'ls dst' rcopy -p @PORT@ -- rcopy @FILES@/empty.bin @HOST@:@FILES@/dst/empty -p @PORT@
connected -k 2 -a 'ls dst' rcopy -p @PORT@ -- rcopy @FILES@/missing.bin @HOST@:@FILES@/dst/missing -p @PORT@
connected -k 2 rcopy -p @PORT@ -- rcopy @FILES@/one.bin @HOST@:@FILES@/no/such/dir/one -p @PORT@
connected -k 1 rcopy -p @PORT@ -- rcopy -p @PORT@

# ------------------------------------------------ a peer killed mid-run
fault server rstream -p @PORT@ -S 1000 -C 1 -I 100000000
fault client rstream -p @PORT@ -S 1000 -C 1 -I 100000000
fault server riostream -p @PORT@ -S 1000 -C 1 -I 100000000
fault client riostream -p @PORT@ -S 1000 -C 1 -I 100000000

if [ $series = 1 ]; then
	run_limit=600 connected rstream -p @PORT@ -- rstream -s @HOST@ -p @PORT@
	run_limit=600 connected rstream -p @PORT@ -T s -- rstream -s @HOST@ -p @PORT@ -T s
	run_limit=600 connected riostream -p @PORT@ -- riostream -s @HOST@ -p @PORT@
fi

echo "rdmacm-stream-compat: $cases cases, $failed differ (host $host; sides: $sides)"
[ $failed -eq 0 ]
