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
# test:test, test:ref, ref:test and, with the lib side, lib:lib, lib:ref
# and ref:lib (server:client), each compared with the baseline, server and
# client output alike. A connected case that differs is run once more (with
# a fresh baseline) before it counts. The client starts once the server
# listens: an rdma_cm listener on the port (rdma resource show cm_id) or a
# TCP one (/proc/net/tcp). rcopy's server never ends by itself; it is
# stopped with SIGTERM once it waits for the next client.
#
# Masked before comparing: the time, Gb/sec and usec/xfer columns of the
# rstream/riostream tables and the seconds and Gb/sec of rcopy's summary.
# Everything else must be identical.
#
# Both sides run with the same argv[0] (the bare program name), which
# several programs print.
#
# Example (in the VM):
#   rdmacm-stream-compat.sh /usr/bin build/bin --test-libs build/lib
set -u

usage() {
	sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0" >&2
	exit 2
}

all_programs="rdma_server rdma_client rdma_xserver rdma_xclient rcopy rstream riostream"
ref_libs="" test_libs="" keep="" only="" quiet=0 host="" limit=30
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

# run SIDE OUTPREFIX PROGRAM ARGS...: one run, outputs captured in
# OUTPREFIX.{out,err,rc}; OUTPREFIX.pid holds the pid to signal (timeout's,
# which passes signals on). Stopped after $limit seconds.
run() {
	local side=$1 out=$2 prog=$3
	shift 3
	local dir libs
	case "$side" in
	ref) dir=$ref_dir libs=$ref_libs ;;
	test) dir=$test_dir libs=$test_libs ;;
	lib) dir=$ref_dir libs=$test_libs ;;
	esac
	rm -f "$out.pid"
	(
		cd "$work" || exit 2
		unset LD_LIBRARY_PATH
		[ -n "$libs" ] && export LD_LIBRARY_PATH="$libs"
		exec timeout -k 5 "${run_limit:-$limit}" bash -c 'p=$1; n=$2; shift 2; exec -a "$n" "$p" "$@"' \
			run "$dir/$prog" "$prog" "$@"
	) >"$out.out" 2>"$out.err" </dev/null &
	local pid=$!
	echo "$pid" >"$out.pid"
	wait "$pid"
	echo $? >"$out.rc"
}

# Masks what legitimately differs between two runs (see the header).
normalize() {
	sed -E \
		-e 's/^([^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +)[^ ]+s +[^ ]+ +[^ ]+$/\1* * */' \
		-e 's/^([0-9]+ bytes in )[^ ]+( seconds = )[^ ]+( Gb\/sec)$/\1*\2*\3/' \
		"$1"
}

# same A B: normalized outputs and statuses of runs A and B agree; sets
# $bad to the list of what differs.
same() {
	local a=$1 b=$2 s
	bad=""
	for s in out err; do
		normalize "$a.$s" >"$a.$s.masked"
		normalize "$b.$s" >"$b.$s.masked"
		cmp -s "$a.$s.masked" "$b.$s.masked" || bad="$bad std$s"
	done
	cmp -s "$a.rc" "$b.rc" || bad="$bad exit($(cat "$a.rc") vs $(cat "$b.rc"))"
	[ -z "$bad" ]
}

show_diff() {
	local a=$1 b=$2 label=$3 s
	for s in out err; do
		cmp -s "$a.$s.masked" "$b.$s.masked" ||
			diff -u --label "ref.$label.std$s" --label "other.$label.std$s" \
				"$a.$s.masked" "$b.$s.masked" | head -n 30 | sed 's/^/      /'
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
	test) echo "ours" ;;
	lib) echo "debian on our libs" ;;
	*) echo "$1" ;;
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

# expand WORDS...: the words with @HOST@, @PORT@ and @WORK@ replaced, in
# the array $expanded.
expand() {
	expanded=()
	local w
	for w in "$@"; do
		w=${w//@HOST@/$host}
		w=${w//@PORT@/$port}
		w=${w//@WORK@/$work}
		expanded+=("$w")
	done
}

# check PROGRAM ARGS...: a single-program case, every side against ref.
check() {
	selected "$@" || return 0
	new_port
	expand "$@"
	local n=$((cases + 1)) what="${expanded[*]}" side
	run ref "$work/$n.ref" "${expanded[@]}"
	for side in $sides; do
		[ "$side" = ref ] && continue
		cases=$((cases + 1))
		run "$side" "$work/$n.$side" "${expanded[@]}"
		if same "$work/$n.ref" "$work/$n.$side"; then
			report "$what [$(side_label "$side")]" "exit $(cat "$work/$n.ref.rc")"
		else
			report "$what [$(side_label "$side")]" "" "$bad"
			show_diff "$work/$n.ref" "$work/$n.$side" run
		fi
	done
}

# listening PORT: an rdma_cm or TCP listener on PORT.
listening() {
	local hex
	hex=$(printf ':%04X ' "$1")
	grep -q "$hex.* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
	rdma resource show cm_id 2>/dev/null | grep 'state LISTEN' | grep -q ":$1 "
}

# pair OUT SSIDE CSIDE: one server/client run of the current case
# ($c_sprog, $c_server, $c_cprog, $c_client, $c_stop, $c_after, $c_port).
pair() {
	local out=$1 sside=$2 cside=$3 watch
	new_port
	watch=${c_port:-$port}
	rm -rf "$work/files"
	mkdir -p "$work/files"
	expand "${c_server[@]}"
	run "$sside" "$out.server" "$c_sprog" "${expanded[@]}" &
	local server=$! waited=0
	while ! listening "$watch" && kill -0 "$server" 2>/dev/null && [ $waited -lt 200 ]; do
		sleep 0.1
		waited=$((waited + 1))
	done
	expand "${c_client[@]}"
	run "$cside" "$out.client" "$c_cprog" "${expanded[@]}"
	# A server that does not end by itself is stopped once it has
	# printed its prompt $c_stop times (0: right away); any other is
	# given 15 s to finish after its client.
	local count=${c_stop:-1000000} grace=${c_stop:+100}
	waited=0
	while [ "$(grep -o 'waiting for connection' "$out.server.out" 2>/dev/null | wc -l)" -lt "$count" ] &&
		kill -0 "$server" 2>/dev/null && [ $waited -lt "${grace:-150}" ]; do
		sleep 0.1
		waited=$((waited + 1))
	done
	kill -0 "$server" 2>/dev/null && [ -f "$out.server.pid" ] &&
		kill -TERM "$(cat "$out.server.pid")" 2>/dev/null
	wait "$server"
	if [ -n "$c_after" ]; then
		(cd "$work" && eval "$c_after") >>"$out.client.out" 2>&1
	fi
}

same_pair() {
	local sbad
	same "$1.server" "$2.server"
	sbad=${bad:+ server:$bad}
	same "$1.client" "$2.client"
	bad="$sbad${bad:+ client:$bad}"
	[ -z "$bad" ]
}

# connected [-k COUNT] [-a CMD] [-P PORT] SERVER ARGS... -- CLIENT ARGS...
#   -k COUNT  the server does not end: stop it once it printed "waiting
#             for connection" COUNT times (0: as soon as the client ended)
#   -a CMD    shell command run in the work dir after each pair; its output
#             is compared as part of the client's
#   -P PORT   the port the server listens on, when it is not @PORT@
# SERVER and CLIENT are program names. Arguments may use @HOST@, @PORT@
# (fresh for each pair) and @WORK@.
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
	local n=$((cases + 1)) combo sside cside attempt combos
	combos="test:test test:ref ref:test"
	[ -n "$test_libs" ] && combos="$combos lib:lib lib:ref ref:lib"
	pair "$work/$n.base" ref ref
	local status="exit $(cat "$work/$n.base.server.rc")/$(cat "$work/$n.base.client.rc")"
	for combo in $combos; do
		cases=$((cases + 1))
		sside=${combo%:*} cside=${combo#*:}
		local o="$work/$n.$sside-$cside"
		for attempt in 1 2; do
			pair "$o" "$sside" "$cside"
			same_pair "$work/$n.base" "$o" && break
			[ $attempt = 1 ] || break
			pair "$work/$n.base" ref ref
		done
		local label="[server $(side_label "$sside"), client $(side_label "$cside")]"
		if [ -z "$bad" ]; then
			local note=""
			[ "$attempt" = 1 ] || note=" (2nd try)"
			report "$what $label" "$status$note"
		else
			report "$what $label" "" "$bad"
			show_diff "$work/$n.base.server" "$o.server" server
			show_diff "$work/$n.base.client" "$o.client" client
		fi
	done
}

# rcopy's sources.
head -c 300000 /dev/urandom >"$work/src.bin"
printf 'x' >"$work/one.bin"
: >"$work/empty.bin"
cp "$work/src.bin" "$work/exec.bin" && chmod 751 "$work/exec.bin"

# A port nobody listens on, an address no device routes to, one on the
# device's subnet that nobody answers, and a name that does not resolve.
new_port
closed=$port
noroute=192.0.2.1
silent=${host%.*}.254
noname=nosuchhost.invalid

# ------------------------------------------------------- usage errors
for p in rdma_server rdma_client rdma_xserver rdma_xclient rstream riostream; do
	check $p -h
	check $p -x
	check $p -p
done
check rdma_xserver -c q
check rdma_xserver -c ''
check rdma_xclient -c Q -p $closed
check rdma_xclient -s
check rstream -T q
check rstream -T sockets -T bogus
check rstream -T
check riostream -T s
check riostream -T fork
check rcopy -x
check rcopy -p
check rcopy onlyone
check rcopy a b -x
check rcopy a b -p

# ---------------------------------- failures before or without a peer
check rdma_client -s @HOST@ -p $closed
check rdma_client -s $noroute -p $closed
check rdma_client -s $noname -p $closed
check rdma_client -s @HOST@ -p notaport
check rdma_server -s $noroute -p @PORT@
check rdma_server -s $noname
check rdma_server -p notaport
check rdma_xclient -s @HOST@ -p $closed
check rdma_xclient -s @HOST@ -p ${closed}99
check rdma_xclient -s $noroute -p $closed
check rdma_xclient -s $noname
check rdma_xclient -s @HOST@ -p $closed -c x
check rdma_xclient -s @HOST@ -p $closed -c r
check rdma_xserver -p notaport
check rstream -s @HOST@ -p $closed -S 100 -C 10
check rstream -s @HOST@ -p $closed -S 100 -C 10 -T b
check rstream -s @HOST@ -p $closed -S 100 -C 10 -T s
check rstream -s @HOST@ -p $closed -S 100 -C 10 -T a
check rstream -s @HOST@ -p $closed -C 10 -T r
check rstream -s $noroute -p $closed -S 100 -C 10
check rstream -s $noname -p $closed -C 10
check rstream -s @HOST@ -p $closed -C 10 -f gid
check rstream -s @HOST@ -p $closed -C 10 -f foo
check rstream -s @HOST@ -p $closed -C 10 -b $noroute
check rstream -s @HOST@ -p $closed -C 10 -b $noname
check rstream -b $noroute -p @PORT@ -C 10
check rstream -b $noroute -p @PORT@ -C 10 -T s
check rstream -p notaport -C 10
check rstream -S -5 -p @PORT@
check riostream -s @HOST@ -p $closed -S 100 -C 10
check riostream -s @HOST@ -p $closed -S 100 -C 10 -T b
check riostream -s $noroute -p $closed -S 100 -C 10
check riostream -s $noname -p $closed -C 10
check riostream -b $noroute -p @PORT@ -C 10
check riostream -p notaport
check rcopy @WORK@/one.bin @HOST@:@WORK@/files/x -p $closed
check rcopy @WORK@/one.bin $noroute:@WORK@/files/x -p $closed
check rcopy @WORK@/one.bin $noname:@WORK@/files/x
check rcopy -p notaport
# A neighbour that never answers: the reference's address resolution does
# not give up within the limit, so both sides are stopped (status 124).
run_limit=8 check rdma_client -s $silent -p $closed
run_limit=8 check rstream -s $silent -p $closed -C 10 -T b

# ----------------------------------------------------------- connected
connected rdma_server -p @PORT@ -- rdma_client -s @HOST@ -p @PORT@
connected rdma_server -s @HOST@ -p @PORT@ -- rdma_client -s @HOST@ -p @PORT@
connected -P 7471 rdma_server -- rdma_client -s @HOST@
# A second server on a busy port.
connected -k 0 rdma_server -p @PORT@ -- rdma_server -p @PORT@

connected rdma_xserver -p @PORT@ -- rdma_xclient -s @HOST@ -p @PORT@
connected rdma_xserver -p @PORT@ -c r -- rdma_xclient -s @HOST@ -p @PORT@ -c R
# XRC: soft-RoCE has none, so the client fails and the server waits.
connected -k 0 rdma_xserver -p @PORT@ -c x -- rdma_xclient -s @HOST@ -p @PORT@ -c x
connected -k 0 rdma_xserver -p @PORT@ -c x -- rdma_xclient -s @HOST@ -p @PORT@

connected rstream -p @PORT@ -S 4096 -C 100 -- rstream -s @HOST@ -p @PORT@ -S 4096 -C 100
connected rstream -p @PORT@ -S 1000 -C 50 -I 2 -T v -- rstream -s @HOST@ -p @PORT@ -S 1000 -C 50 -I 2 -T verify
connected rstream -p @PORT@ -S 100 -C 20 -T a -- rstream -s @HOST@ -p @PORT@ -S 100 -C 20 -T async
connected rstream -p @PORT@ -S 3000 -C 20 -T b -T v -- rstream -s @HOST@ -p @PORT@ -S 3000 -C 20 -T blocking -T v
connected rstream -p @PORT@ -S 1000 -C 20 -T r -- rstream -s @HOST@ -p @PORT@ -S 1000 -C 20 -T resolve
connected rstream -p @PORT@ -S 65536 -C 1 -I 5 -B 32768 -i 0 -- rstream -s @HOST@ -p @PORT@ -S 65536 -C 1 -I 5 -B 32768 -i 0
connected rstream -p @PORT@ -S 1 -C 30 -T n -- rstream -s @HOST@ -p @PORT@ -S 1 -C 30 -T nonblocking
connected rstream -b @HOST@ -p @PORT@ -S 500 -C 10 -f ip -- rstream -s @HOST@ -b @HOST@ -p @PORT@ -S 500 -C 10 -f ip
connected rstream -p @PORT@ -S 1000 -C 20 -T s -T v -- rstream -s @HOST@ -p @PORT@ -S 1000 -C 20 -T s -T v
connected rstream -p @PORT@ -S 1000 -C 20 -T f -- rstream -s @HOST@ -p @PORT@ -S 1000 -C 20 -T fork
connected rstream -p @PORT@ -S 64 -C 10 -k 7 -- rstream -s @HOST@ -p @PORT@ -S 64 -C 10 -k 7
connected rstream -p @PORT@ -S 64 -C 10 -k 7 -T s -- rstream -s @HOST@ -p @PORT@ -S 64 -C 10 -k 7 -T s
connected -k 0 rstream -p @PORT@ -C 10 -- rstream -p @PORT@ -C 10

connected riostream -p @PORT@ -S 4096 -C 100 -- riostream -s @HOST@ -p @PORT@ -S 4096 -C 100
connected riostream -p @PORT@ -S 1000 -C 50 -I 2 -T v -- riostream -s @HOST@ -p @PORT@ -S 1000 -C 50 -I 2 -T verify
connected riostream -p @PORT@ -S 100 -C 20 -T a -- riostream -s @HOST@ -p @PORT@ -S 100 -C 20 -T a
connected riostream -p @PORT@ -S 3000 -C 10 -T b -T v -- riostream -s @HOST@ -p @PORT@ -S 3000 -C 10 -T b -T v
connected riostream -p @PORT@ -S 1 -C 10 -I 3 -- riostream -s @HOST@ -p @PORT@ -S 1 -C 10 -I 3
connected riostream -p @PORT@ -S 100000 -C 2 -I 2 -B 65536 -i 16 -- riostream -s @HOST@ -p @PORT@ -S 100000 -C 2 -I 2 -B 65536 -i 16

# rcopy: files of a few sizes and modes, a missing source, a destination
# the server cannot create, a second server on a busy port.
connected -k 2 -a 'cmp src.bin files/copy && stat -c %a files/copy' \
	rcopy -p @PORT@ -- rcopy @WORK@/src.bin @HOST@:@WORK@/files/copy -p @PORT@
connected -k 2 -a 'cmp one.bin files/one && stat -c %a files/one' \
	rcopy -p @PORT@ -- rcopy @WORK@/one.bin @HOST@:@WORK@/files/one -p @PORT@
connected -k 2 -a 'cmp exec.bin files/exec && stat -c %a files/exec' \
	rcopy -p @PORT@ -- rcopy @WORK@/exec.bin @HOST@:@WORK@/files/exec -p @PORT@
connected -k 2 -a 'ls files' rcopy -p @PORT@ -- rcopy @WORK@/empty.bin @HOST@:@WORK@/files/empty -p @PORT@
connected -k 2 -a 'ls files' rcopy -p @PORT@ -- rcopy @WORK@/missing.bin @HOST@:@WORK@/files/missing -p @PORT@
connected -k 2 rcopy -p @PORT@ -- rcopy @WORK@/one.bin @HOST@:@WORK@/no/such/dir/one -p @PORT@
connected -k 1 rcopy -p @PORT@ -- rcopy -p @PORT@

echo "rdmacm-stream-compat: $cases cases, $failed differ (host $host; sides: $sides)"
[ $failed -eq 0 ]
