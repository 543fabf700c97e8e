#!/bin/bash
# rdmacm-cm-compat.sh: compare the RDMA CM example programs (rping,
# ucmatose, udaddy, mckey, cmtime) of two installations on a real RDMA
# device: stdout, stderr and exit statuses must match, and each side must
# interoperate with the other on the wire. Prints one line per case; exits
# 1 if any case differs, 2 on a usage error or when no RDMA device is
# usable, 77 (skipped) when a reference program is not installed.
#
#   rdmacm-cm-compat.sh [options] REF TEST
#
# REF and TEST are directories holding the five programs. Needs an RDMA
# device with an IPv4 address (run it in the rxe VM: tests/vm/rdma-vm run).
# Options:
#   --ref-libs DIR, --test-libs DIR   LD_LIBRARY_PATH for that side (default:
#                                     none, the variable is removed)
#   --host ADDR       the address servers bind to and clients connect to
#                     (default: the first IPv4 address of an RDMA netdev)
#   --group ADDR      IPv4 multicast group for mckey (default 239.1.1.1;
#                     each case uses the next one)
#   --timeout SEC     limit for each program run (default 30)
#   --keep DIR        keep the captured outputs in DIR
#   --only REGEX      run only the cases whose command line matches REGEX
#   -q                print only differing cases and the total
#
# There are three sides: "ref" (REF's programs on the REF libraries),
# "test" (TEST's programs on the TEST libraries) and, when --test-libs is
# given, "mix" (REF's programs on the TEST libraries: the reference
# binaries on our librdmacm). Single-program cases (bad options, nothing
# listening, unreachable addresses) run ref, then test and mix, and compare
# each with ref. Connected cases run a server and a client: ref with ref is
# the baseline, then test/test, test server with ref client, ref server
# with test client, and mix/mix, each compared with the baseline (server
# and client alike). A connected case that differs is run once more (with a
# fresh baseline) before it counts.
#
# Masked before comparing, since they differ from run to run: pointers and
# keys in rping's -d trace (0x..., "addr", "rkey", "lkey", "laddr"
# values), and cmtime's timings (every number of its table except the
# 0.00 / 1000000000.00 that mark a step no connection completed). Two rping
# races of the reference are masked too: a client's "client DISCONNECT
# EVENT..." (and its -d line) may or may not come before the client
# destroys its id, and after a failed CM event ("cma event ...") the event
# thread may end the process before or after the main thread printed
# "wait for CONNECTED state N" and "connect error -1". And when main
# closes the event channel, an event thread that had not reached its read
# yet reports "Bad file descriptor" (rping, mckey, cmtime). rping's -d trace
# comes from three threads: those cases compare sorted output.
#
# Both sides run with the same argv[0] (the usage texts print it).
#
# Examples:
#   rdmacm-cm-compat.sh /usr/bin build/bin --test-libs build/lib
#   rdmacm-cm-compat.sh --only rping /usr/bin build/bin --test-libs build/lib
set -u

usage() {
	sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0" >&2
	exit 2
}

ref_libs="" test_libs="" keep="" only="" quiet=0 host="" limit=30 group=239.1.1.1
dirs=()
while [ $# -gt 0 ]; do
	case "$1" in
	--ref-libs) ref_libs=${2-}; shift 2 || usage ;;
	--test-libs) test_libs=${2-}; shift 2 || usage ;;
	--host) host=${2-}; shift 2 || usage ;;
	--group) group=${2-}; shift 2 || usage ;;
	--timeout) limit=${2-}; shift 2 || usage ;;
	--keep) keep=${2-}; shift 2 || usage ;;
	--only) only=${2-}; shift 2 || usage ;;
	-q) quiet=1; shift ;;
	-h|--help) usage ;;
	-*) echo "rdmacm-cm-compat.sh: unknown option $1" >&2; usage ;;
	*) dirs+=("$1"); shift ;;
	esac
done
[ ${#dirs[@]} -eq 2 ] || usage
ref_dir=${dirs[0]} test_dir=${dirs[1]}
programs="rping ucmatose udaddy mckey cmtime"
for p in $programs; do
	[ -x "$ref_dir/$p" ] || { echo "rdmacm-cm-compat.sh: $ref_dir/$p is not installed, skipping" >&2; exit 77; }
	[ -x "$test_dir/$p" ] || { echo "rdmacm-cm-compat.sh: $test_dir/$p is not executable" >&2; exit 2; }
done
sides_other="test"
[ -n "$test_libs" ] && sides_other="test mix"
mix_combo=""
[ -n "$test_libs" ] && mix_combo="mix:mix"

if [ -n "$keep" ]; then
	work=$keep
	mkdir -p "$work" && [ -w "$work" ] || { echo "rdmacm-cm-compat.sh: cannot write to $work" >&2; exit 2; }
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/rdmacm-cm-compat.XXXXXX") || exit 2
	trap 'rm -rf "$work"' EXIT
fi

# The address: the first IPv4 address of a netdev that carries an RDMA
# device's GIDs.
if [ -z "$host" ]; then
	for ndev in /sys/class/infiniband/*/ports/*/gid_attrs/ndevs/*; do
		nd=$(cat "$ndev" 2>/dev/null) || continue
		[ -n "$nd" ] || continue
		host=$(ip -4 -o addr show dev "$nd" 2>/dev/null | awk '{ sub("/.*", "", $4); print $4; exit }')
		[ -n "$host" ] && break
	done
fi
[ -n "$host" ] || { echo "rdmacm-cm-compat.sh: no RDMA device with an IPv4 address" >&2; exit 2; }

# run SIDE OUTPREFIX PROGRAM ARGS...: one run of one side, outputs captured;
# stdin is closed, and the run is stopped after $limit seconds.
run() {
	local side=$1 out=$2 prog=$3
	shift 3
	local dir libs
	case $side in
	ref) dir=$ref_dir libs=$ref_libs ;;
	test) dir=$test_dir libs=$test_libs ;;
	mix) dir=$ref_dir libs=$test_libs ;;
	esac
	(
		unset LD_LIBRARY_PATH
		[ -n "$libs" ] && export LD_LIBRARY_PATH="$libs"
		echo $BASHPID >"$out.pid"
		exec timeout -k 5 "${run_limit:-$limit}" bash -c 'p=$1; n=$2; shift 2; exec -a "$n" "$p" "$@"' \
			run "$dir/$prog" "$prog" "$@"
	) >"$out.out" 2>"$out.err" </dev/null
	echo $? >"$out.rc"
}

# Masks what legitimately differs between two runs (see the header).
normalize() {
	sed -E \
		-e 's/0x[0-9a-f]+/0x*/g' \
		-e 's/^(RDMA addr) [0-9a-f]+ (rkey) [0-9a-f]+/\1 * \2 */' \
		-e 's/^(Received rkey) [0-9a-f]+ (addr) [0-9a-f]+/\1 * \2 */' \
		-e 's/^(rdma write from lkey) [0-9a-f]+ (laddr) [0-9a-f]+/\1 * \2 */' \
		-e '/^(create id|bind addr|resolve addr|resolve route|create qp|connect|disconnect|destroy) *:/{s/([0-9])  */\1 /g;s/  */ /g;s/-?[0-9]+\.[0-9][0-9]/<&>/g;s/<(0\.00|1000000000\.00)>/\1/g;s/<[^>]*>/*/g}' \
		"$1" |
	awk '
		# rping: a client may tear its id down before the disconnect
		# event of its own rdma_disconnect arrives, or after.
		/^client DISCONNECT EVENT\.\.\.$/ { next }
		/^cma_event type RDMA_CM_EVENT_DISCONNECTED cma_id 0x\* \(parent\)$/ { next }
		# rping: after a failed CM event the event thread ends the
		# process; whether the main thread said what it waited for
		# first is a race.
		/^cma event / { failed = 1 }
		failed && /^(wait for CONNECTED state [0-9]+|connect error -1)$/ { next }
		# rping, mckey, cmtime: main closes the event channel under the
		# event thread; one that had not reached its read yet fails.
		/^(rdma_get_cm_event|failure in rdma_get_cm_event in process_server_events): Bad file descriptor$/ { next }
		{ print }' |
	if [ "${sort_out:-0}" = 1 ]; then LC_ALL=C sort; else cat; fi
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
			diff -u --label "ref.$label.std$s" --label "test.$label.std$s" \
				"$a.$s.masked" "$b.$s.masked" | head -n 30 | sed 's/^/      /'
	done
}

selected() {
	[ -z "$only" ] || printf '%s\n' "$*" | grep -Eq -- "$only"
}

cases=0 failed=0
case_start=$SECONDS
report() { # report WHAT STATUS_TEXT BAD...
	local what=$1 status=$2
	shift 2
	status="$status ($((SECONDS - case_start)) s)"
	case_start=$SECONDS
	if [ $# -eq 0 ]; then
		[ $quiet = 1 ] || printf 'same  %-66s %s\n' "$what" "$status"
	else
		failed=$((failed + 1))
		printf 'DIFF  %-66s%s\n' "$what" "$*"
	fi
}

# check PROGRAM ARGS...: a single-program case, each other side against ref
# (only the test side with parse_only=1: option parsing, where the library
# plays no part).
check() {
	selected "$@" || return 0
	local n=$((cases + 1)) side sides=$sides_other
	[ "${parse_only:-0}" = 1 ] && sides=test
	run ref "$work/$n.ref" "$@"
	for side in $sides; do
		cases=$((cases + 1))
		run "$side" "$work/$n.$side" "$@"
		if same "$work/$n.ref" "$work/$n.$side"; then
			report "$* [$side]" "exit $(cat "$work/$n.ref.rc")"
		else
			report "$* [$side]" "" "$bad"
			show_diff "$work/$n.ref" "$work/$n.$side" run
		fi
	done
}

# listening PORT: whether an RDMA CM id listens on PORT.
listening() {
	rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN .*src-addr [^ ]*:$1 "
}

# pair OUT SERVER_SIDE CLIENT_SIDE PROG PORT "SERVER ARGS" "CLIENT ARGS":
# a server and then a client. PORT is the RDMA CM port to wait for (the
# client starts once the server listens on it, or after 3 s when it is
# empty: mckey's receiver has nothing to listen on). With stop_server=1
# the server, which would run forever (cmtime's), is stopped with SIGTERM a
# second after the client ended.
pair() {
	local out=$1 sside=$2 cside=$3 prog=$4 port=$5 sargs=$6 cargs=$7
	# shellcheck disable=SC2086 # the argument strings are word lists
	run "$sside" "$out.server" "$prog" $sargs &
	local server=$! waited=0
	if [ -n "$port" ]; then
		while ! listening "$port" && kill -0 "$server" 2>/dev/null && [ $waited -lt 100 ]; do
			sleep 0.1
			waited=$((waited + 1))
		done
	else
		sleep 3
	fi
	# shellcheck disable=SC2086
	run "$cside" "$out.client" "$prog" $cargs
	if [ "${stop_server:-0}" = 1 ]; then
		# Give the server a moment to see the disconnects, then stop it
		# (through timeout, which passes SIGTERM on).
		sleep 1
		kill -TERM "$(cat "$out.server.pid")" 2>/dev/null
	fi
	wait "$server"
}

same_pair() {
	local sbad
	same "$1.server" "$2.server"
	sbad=${bad:+ server:$bad}
	same "$1.client" "$2.client"
	bad="$sbad${bad:+ client:$bad}"
	[ -z "$bad" ]
}

# connected PROG PORT "SERVER ARGS" "CLIENT ARGS": the baseline and the mixes.
connected() {
	local prog=$1 port=$2 sargs=$3 cargs=$4
	local what="$prog $sargs | $prog $cargs"
	selected "$what" || return 0
	local n=$((cases + 1)) combo sside cside attempt combos="test:test test:ref ref:test $mix_combo"
	pair "$work/$n.base" ref ref "$prog" "$port" "$sargs" "$cargs"
	local status="exit $(cat "$work/$n.base.server.rc")/$(cat "$work/$n.base.client.rc")"
	for combo in $combos; do
		cases=$((cases + 1))
		sside=${combo%:*} cside=${combo#*:}
		local o="$work/$n.$sside-$cside"
		for attempt in 1 2; do
			pair "$o" "$sside" "$cside" "$prog" "$port" "$sargs" "$cargs"
			same_pair "$work/$n.base" "$o" && break
			[ $attempt = 1 ] || break
			pair "$work/$n.base" ref ref "$prog" "$port" "$sargs" "$cargs"
		done
		if [ -z "$bad" ]; then
			local note=""
			[ "$attempt" = 1 ] || note=" (2nd try)"
			report "$what [server $sside, client $cside]" "$status$note"
		else
			report "$what [server $sside, client $cside]" "" "$bad"
			show_diff "$work/$n.base.server" "$o.server" server
			show_diff "$work/$n.base.client" "$o.client" client
		fi
	done
}

h=$host
closed=18999		# no server ever listens here
unreachable=10.99.99.99	# no route to it
silent=${host%.*}.99	# on the subnet, never answers

# The reference programs must load on the test libraries (every symbol
# they import); if they cannot, that is one failure and the mix side is
# left out rather than failing every case the same way.
if [ -n "$test_libs" ]; then
	for p in $programs; do
		if ! msg=$(LD_LIBRARY_PATH=$test_libs LD_BIND_NOW=1 "$ref_dir/$p" -h 2>&1 >/dev/null </dev/null) &&
			printf '%s\n' "$msg" | grep -q 'symbol lookup error\|error while loading'; then
			cases=$((cases + 1))
			report "$p on $test_libs [mix]" "" " does not load: $(printf '%s\n' "$msg" | head -n 1)"
			sides_other="test" mix_combo=""
		fi
	done
fi

# Usage errors and option checks: nothing touches the device, so the
# reference binaries need not run on the test libraries too.
check rping -h
parse_only=1 check rping -c -t 5
parse_only=1 check rping -s -S 22
parse_only=1 check rping -c -C -1
for p in ucmatose udaddy mckey cmtime; do
	parse_only=1 check $p -h
done
parse_only=1 check ucmatose -f foo -P bar -x
parse_only=1 check mckey -M ff0e::1
check mckey -C 1

# Failures before or instead of a connection: nothing listens on the port,
# no route to the address, an address on the subnet that never answers
# (the reference keeps waiting: both must still be waiting when stopped).
check rping -c -a $h -p $closed -C 1
check rping -c -a $unreachable -C 1
run_limit=6 check rping -c -a $silent -C 1
check ucmatose -s $h -p $closed
check ucmatose -s $unreachable
check udaddy -s $h -C 1
check udaddy -s $h -S 5000
check udaddy -s $h -P ipoib -C 1
check cmtime -s $h -p $closed -c 2
check cmtime -s $unreachable -c 2
check mckey -m $unreachable

# mckey senders alone need no receiver.
g=${group%.*}
gl=${group##*.}
next_group() { mg=$g.$gl; gl=$((gl + 1)); }
next_group
check mckey -m $mg -b $h -s -C 2 -o
next_group
check mckey -m $mg -b $h -s -C 2 -l

# Connected runs, each program in both roles.
connected rping 18601 "-s -a $h -p 18601 -C 3 -v" "-c -a $h -p 18601 -C 3 -v"
sort_out=1 connected rping 18602 "-s -a $h -p 18602 -d" "-c -a $h -p 18602 -d -C 1"
stop_server=1 connected rping 18603 "-s -p 18603 -P -v -V -S 200 -q" "-c -a $h -I $h -p 18603 -C 2 -v -V -S 200 -q"
connected ucmatose 18611 "-p 18611" "-s $h -p 18611"
connected ucmatose 18612 "-b $h -p 18612 -c 2 -C 5 -S 1000 -m -f ip -a 14 -P ib" "-s $h -b $h -p 18612 -c 2 -C 5 -S 1000 -m -f ip -a 14 -t 0 -P ib"
connected udaddy 7174 "-b $h -c 2 -C 5 -S 500" "-s $h -b $h -p 0x111 -c 2 -C 5 -S 500"
next_group
connected mckey "" "-m $mg -b $h -c 2 -C 3" "-m $mg -b $h -s -o -c 2 -C 3"
stop_server=1 connected cmtime 18621 "-b $h -p 18621" "-s $h -b $h -p 18621 -c 4"

echo "rdmacm-cm-compat: $cases cases, $failed differ (address $host)"
[ $failed -eq 0 ]
