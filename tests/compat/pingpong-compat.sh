#!/bin/bash
# pingpong-compat.sh: compare the ping-pong programs (ibv_rc_pingpong,
# ibv_uc_pingpong, ibv_ud_pingpong, ibv_srq_pingpong, ibv_xsrq_pingpong) and
# ibv_asyncwatch of two installations on a real RDMA device: their stdout,
# stderr and exit
# statuses must match, and each side must interoperate with the other over
# the TCP handshake and the wire. Prints one line per case; exits 1 if any
# case differs, 2 on a usage error or when no RDMA device is usable, 77
# (skipped) when a reference program is not installed.
#
#   pingpong-compat.sh [options] REF TEST
#
# REF and TEST are directories holding the six programs. Needs an RDMA
# device with port 1 active (run it in the rxe VM: tests/vm, or
# /work/shared/rxe-vm/rxe-vm run ...).
# Options (each may be given for either side):
#   --ref-libs DIR, --test-libs DIR   LD_LIBRARY_PATH for that side (default:
#                                     none, the variable is removed)
#   --ref-wrap CMD, --test-wrap CMD   command prefix for that side, split on
#                                     spaces (e.g. "valgrind -q")
#   -d DEV            device to use (default: the first in sysfs)
#   -g INDEX          GID index for the connected cases (default: the first
#                     RoCE v2 GID of port 1 on an Ethernet port, none on IB)
#   --host ADDR       address the clients connect to (default 127.0.0.1)
#   --timeout SEC     limit for each program run (default 30)
#   --keep DIR        keep the captured outputs in DIR
#   --only REGEX      run only the cases whose command line matches REGEX
#                     (grep -E), e.g. 'ud_pingpong.*-e'
#   -q                print only differing cases and the total
#   --part usage|device|bounce  only the usage and option-check cases,
#                     which never reach a device (they run on a host without
#                     one; there ibv_xsrq_pingpong's no-device paths are
#                     compared too); only the device cases but the port
#                     bounce; or
#                     only ibv_asyncwatch while the port goes down and up,
#                     which disturbs every other user of the device
#                     (default: all)
#
# Single-program cases (bad options, unknown device or host, no server,
# unreadable GID index, ...) run each side once and compare. Connected
# cases run a server and a client: REF with REF is the baseline, then TEST
# with TEST, TEST server with REF client and REF server with TEST client,
# each compared with the baseline (server and client output alike); a
# connected case that differs is run once more before it counts, since
# UC and UD lose packets now and then by design.
#
# The text after "client read/write:" is masked too: the peer closed the
# connection without an error, so that message shows whatever errno the
# verbs library happened to leave behind (Debian's rdma-core 44 leaves a
# stale ENOSPC after ibv_open_device; ours leaves errno as it found it).
# Before comparing, numbers that differ from run to run are masked: the
# QPN and PSN of the "local address"/"remote address" lines and the
# decimals of the timing lines ("... seconds = X Mbit/sec", "... usec/iter"
# and the -t clock cycle lines). Everything else must be identical.
#
# Both sides run with the same argv[0] (e.g. "ibv_rc_pingpong"), since it
# is part of the usage text and getopt's messages.
#
# Examples:
#   pingpong-compat.sh /usr/bin build/bin --test-libs build/lib
#   pingpong-compat.sh /usr/bin /usr/bin --test-libs build/lib
set -u

usage() {
	sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0" >&2
	exit 2
}

ref_libs="" test_libs="" ref_wrap="" test_wrap="" keep="" only="" quiet=0
dev="" gid="auto" host=127.0.0.1 limit=30 part=all
dirs=()
while [ $# -gt 0 ]; do
	case "$1" in
	--ref-libs) ref_libs=${2-}; shift 2 || usage ;;
	--test-libs) test_libs=${2-}; shift 2 || usage ;;
	--ref-wrap) ref_wrap=${2-}; shift 2 || usage ;;
	--test-wrap) test_wrap=${2-}; shift 2 || usage ;;
	-d) dev=${2-}; shift 2 || usage ;;
	-g) gid=${2-}; shift 2 || usage ;;
	--host) host=${2-}; shift 2 || usage ;;
	--timeout) limit=${2-}; shift 2 || usage ;;
	--keep) keep=${2-}; shift 2 || usage ;;
	--only) only=${2-}; shift 2 || usage ;;
	-q) quiet=1; shift ;;
	--part) part=${2-}; shift 2 || usage
		case "$part" in usage|device|bounce|all) ;; *) usage ;; esac ;;
	-h|--help) usage ;;
	-*) echo "pingpong-compat.sh: unknown option $1" >&2; usage ;;
	*) dirs+=("$1"); shift ;;
	esac
done
[ ${#dirs[@]} -eq 2 ] || usage
ref_dir=${dirs[0]} test_dir=${dirs[1]}
programs="ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong ibv_xsrq_pingpong ibv_asyncwatch"
for p in $programs; do
	[ -x "$ref_dir/$p" ] || { echo "pingpong-compat.sh: $ref_dir/$p is not installed, skipping" >&2; exit 77; }
	[ -x "$test_dir/$p" ] || { echo "pingpong-compat.sh: $test_dir/$p is not executable" >&2; exit 2; }
done

if [ -n "$keep" ]; then
	work=$keep
	mkdir -p "$work" && [ -w "$work" ] || { echo "pingpong-compat.sh: cannot write to $work" >&2; exit 2; }
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/pingpong-compat.XXXXXX") || exit 2
	trap 'rm -rf "$work"' EXIT
fi

# The device and the GID index the connected cases need.
sysfs=/sys/class/infiniband
if [ "$part" = usage ]; then
	dev=none gopt=""
else
if [ -z "$dev" ]; then
	dev=$(ls "$sysfs" 2>/dev/null | head -n 1)
fi
[ -n "$dev" ] && [ -d "$sysfs/$dev" ] || {
	echo "pingpong-compat.sh: no RDMA device${dev:+ $dev} in $sysfs" >&2
	exit 2
}
port_dir=$sysfs/$dev/ports/1
[ "$part" = bounce ] && gid=""  # asyncwatch needs no GID
if [ "$gid" = auto ]; then
	gid=""
	if grep -q Ethernet "$port_dir/link_layer" 2>/dev/null; then
		# RoCE needs a GRH, so the peers must exchange a real GID.
		# read, not cat: the table has hundreds of entries, and a process
		# each costs a minute in the emulated VM.
		for t in "$port_dir"/gid_attrs/types/*; do
			v=""
			read -r v <"$t" 2>/dev/null
			[ "$v" = "RoCE v2" ] || continue
			i=${t##*/}
			v=""
			read -r v <"$port_dir/gids/$i"
			case "$v" in
			0000:0000:0000:0000:0000:0000:0000:0000) continue ;;
			esac
			if [ -z "$gid" ] || [ "$i" -lt "$gid" ]; then gid=$i; fi
		done
		[ -n "$gid" ] || { echo "pingpong-compat.sh: no RoCE v2 GID on $dev port 1" >&2; exit 2; }
	fi
fi
gopt="-d $dev${gid:+ -g $gid}"
fi

# run SIDE OUTPREFIX PROGRAM ARGS...: one run of one side, outputs captured;
# stdin is closed, and the run is stopped after $limit seconds.
run() {
	local side=$1 out=$2 prog=$3
	shift 3
	local dir libs wrap
	if [ "$side" = ref ]; then
		dir=$ref_dir libs=$ref_libs wrap=$ref_wrap
	else
		dir=$test_dir libs=$test_libs wrap=$test_wrap
	fi
	(
		unset LD_LIBRARY_PATH
		[ -n "$libs" ] && export LD_LIBRARY_PATH="$libs"
		# shellcheck disable=SC2086 # the wrapper is a word list on purpose
		exec timeout -k 5 "${run_limit:-$limit}" $wrap bash -c 'p=$1; n=$2; shift 2; exec -a "$n" "$p" "$@"' \
			run "$dir/$prog" "$prog" "$@"
	) >"$out.out" 2>"$out.err" </dev/null
	echo $? >"$out.rc"
}

# Masks what legitimately differs between two runs (see the header).
normalize() {
	sed -E \
		-e '/^  (local|remote) address:/s/(QPN|PSN) 0x[0-9a-f]+/\1 0x*/g' \
		-e '/ (Mbit\/sec|usec\/iter)$/s/-?([0-9]+\.[0-9]+|nan|inf)/*/g' \
		-e '/^(Max|Min|Average) receive completion clock cycles = /s/= .*/= */' \
		-e 's/^(client read\/write): .*/\1: */' \
		"$1"
}

# same A B: normalized outputs and statuses of runs A and B agree; sets
# $bad to the list of what differs. (Plain files, no process substitution:
# a minimal VM may have no /dev/fd.)
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

# show_diff A B LABEL: the masked differences of runs A and B (after same).
show_diff() {
	local a=$1 b=$2 label=$3 s
	for s in out err; do
		cmp -s "$a.$s.masked" "$b.$s.masked" ||
			diff -u --label "ref.$label.std$s" --label "test.$label.std$s" \
				"$a.$s.masked" "$b.$s.masked" | head -n 30 | sed 's/^/      /'
	done
}

# selected WHAT: whether the case passes --only.
selected() {
	[ -z "$only" ] || printf '%s\n' "$*" | grep -Eq -- "$only"
}

cases=0 failed=0
report() { # report WHAT STATUS_TEXT BAD...
	local what=$1 status=$2
	shift 2
	if [ $# -eq 0 ]; then
		[ $quiet = 1 ] || printf 'same  %-58s %s\n' "$what" "$status"
	else
		failed=$((failed + 1))
		printf 'DIFF  %-58s%s\n' "$what" "$*"
	fi
}

# check PROGRAM ARGS...: a single-program case.
check() {
	selected "$@" || return 0
	local n=$((cases + 1)) what="$*"
	cases=$n
	run ref "$work/$n.ref" "$@"
	run test "$work/$n.test" "$@"
	if same "$work/$n.ref" "$work/$n.test"; then
		report "$what" "exit $(cat "$work/$n.ref.rc")"
	else
		report "$what" "" "$bad"
		show_diff "$work/$n.ref" "$work/$n.test" run
	fi
}

next_port=18600

# listening PORT: whether something listens on TCP port PORT.
listening() {
	local hex
	hex=$(printf ':%04X ' "$1")
	grep -q "$hex.* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# pair OUT SERVER_SIDE CLIENT_SIDE PROGRAM ARGS...: a server and a client
# (the client gets "$host" as its last argument), on a fresh TCP port.
pair() {
	local out=$1 sside=$2 cside=$3 prog=$4 port=$next_port
	shift 4
	next_port=$((next_port + 1))
	run "$sside" "$out.server" "$prog" -p "$port" "$@" &
	local server=$! waited=0
	# The client must not come before the server listens, or it fails
	# with "Couldn't connect"; give up waiting when the server has quit.
	while ! listening "$port" && kill -0 "$server" 2>/dev/null && [ $waited -lt 100 ]; do
		sleep 0.1
		waited=$((waited + 1))
	done
	run "$cside" "$out.client" "$prog" -p "$port" "$@" "$host"
	wait "$server"
}

# same_pair A B: both the server and the client runs agree.
same_pair() {
	local sbad
	same "$1.server" "$2.server"
	sbad=${bad:+ server:$bad}
	same "$1.client" "$2.client"
	bad="$sbad${bad:+ client:$bad}"
	[ -z "$bad" ]
}

# connected PROGRAM ARGS...: the baseline and the three mixes.
connected() {
	selected "$@" || return 0
	local n=$((cases + 1)) what="$*" combo sside cside attempt
	cases=$((cases + 3))
	pair "$work/$n.base" ref ref "$@"
	local status="exit $(cat "$work/$n.base.server.rc")/$(cat "$work/$n.base.client.rc")"
	for combo in test:test test:ref ref:test; do
		sside=${combo%:*} cside=${combo#*:}
		local o="$work/$n.$sside-$cside"
		for attempt in 1 2; do
			pair "$o" "$sside" "$cside" "$@"
			same_pair "$work/$n.base" "$o" && break
			[ $attempt = 1 ] || break
			# Rerun the baseline too: the first difference may be its flake.
			pair "$work/$n.base" ref ref "$@"
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

pingpongs="ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong"

# Usage errors and option checks: nothing touches the device.
if [ "$part" = usage ] || [ "$part" = all ]; then
for p in $pingpongs; do
	check $p -h
	check $p -x
	check $p --bogus
	check $p --ib-dev
	check $p --siz=64 a b
	check $p -p 70000
	check $p -p -1
	check $p -i 0
	check $p --ib-port=-3
	check $p -m 1000
	check $p a b
done
check ibv_srq_pingpong -s 0
check ibv_srq_pingpong -q 600
check ibv_srq_pingpong -q 300 -r 1000
check ibv_rc_pingpong -o -j
check ibv_rc_pingpong -P
check ibv_rc_pingpong --iodp --prefetch --dm
check ibv_asyncwatch -h
check ibv_asyncwatch --help
check ibv_asyncwatch -x
check ibv_asyncwatch --ib-dev
# ibv_xsrq_pingpong has its own options (-c clients, -n num_tests, -i 0
# allowed, no -r/-q), its own long-option table (--num_tests; --s is
# ambiguous between --size and --sl) and stops silently on a negative -c.
for a in -h --help -x --bogus --ib-dev --s=1 --num-tests=3 --siz=64 "a b" \
	"-p 70000" "-p -1" "-p 4294967376" "-i -1" --ib-port=-3 "-m 1000" \
	"-m 4096 -m 100" "-c -1" "-c -2 -n 3" -g -c -q -r; do
	# shellcheck disable=SC2086 # each entry is a word list
	check ibv_xsrq_pingpong $a
done
# An unknown device is the same message with or without RDMA devices.
check ibv_xsrq_pingpong -d nosuch
check ibv_xsrq_pingpong -d nosuch -i 0 -s 0 -c 2 -e -o -g 1
# On a host without RDMA devices: the empty device list (the reference
# leaves the first message without its newline), as server and client.
# (With a device these would reach XRC domain creation.)
if ! ls /sys/class/infiniband/* >/dev/null 2>&1; then
	check ibv_xsrq_pingpong
	check ibv_xsrq_pingpong -c 0
	check ibv_xsrq_pingpong -c -1 localhost
	check ibv_xsrq_pingpong -p 1 -n 1 -s -5 -e localhost
	check ibv_xsrq_pingpong --num_tests=3 --clie=2 -m 256 -i 0 127.0.0.1
fi
fi
if [ "$part" = usage ]; then
	echo "pingpong-compat: $cases cases, $failed differ (usage and option checks)"
	[ $failed -eq 0 ]
	exit
fi

if [ "$part" != bounce ]; then
# Failures before or instead of a connection (the clients aim at a port
# nobody listens on, so every one of these ends by itself).
closed=$next_port
next_port=$((next_port + 1))
for p in $pingpongs; do
	check $p -d nosuchdev
	check $p --ib-dev=nosuchdev $host
	check $p -p $closed $host
	check $p $gopt -p $closed $host
	check $p -i 2 $gopt -p $closed $host
	check $p -g 100000 -p $closed $host
	check $p -g 100000
	check $p -p $closed nosuchhost.invalid
done
check ibv_ud_pingpong -s 4096 -p $closed $host
check ibv_ud_pingpong -s 1025
check ibv_rc_pingpong -o -p $closed $host
check ibv_rc_pingpong -O -P -p $closed $host
check ibv_rc_pingpong -o -P -p $closed $host
check ibv_rc_pingpong -t -p $closed $host
check ibv_rc_pingpong -j -p $closed $host
check ibv_rc_pingpong -N -p $closed $host
check ibv_srq_pingpong -o -p $closed $host

# asyncwatch on a device that is not there; its events come at the end.
check ibv_asyncwatch -d nosuchdev
# Accepted options that go on to open the device.
check ibv_srq_pingpong -q 255 -r 1000

# Connected runs: every program, in both roles, polling and sleeping on
# events, a few sizes and depths, and a run with a bad peer setting.
connected ibv_rc_pingpong $gopt -n 20
connected ibv_rc_pingpong $gopt -n 20 -e
connected ibv_rc_pingpong $gopt -n 10 -s 1
connected ibv_rc_pingpong $gopt -n 5 -s 65536 -m 512
connected ibv_rc_pingpong $gopt -n 30 -r 4 -c
connected ibv_rc_pingpong $gopt -n 10 -e -c -s 10000
connected ibv_rc_pingpong $gopt -n 10 -N
connected ibv_rc_pingpong -d $dev -n 5
connected ibv_uc_pingpong $gopt -n 20
connected ibv_uc_pingpong $gopt -n 20 -e
connected ibv_uc_pingpong $gopt -n 10 -s 1 -c
connected ibv_uc_pingpong $gopt -n 10 -s 3000 -m 2048 -r 3
connected ibv_ud_pingpong $gopt -n 20
connected ibv_ud_pingpong $gopt -n 20 -e
connected ibv_ud_pingpong $gopt -n 10 -s 1 -c
connected ibv_ud_pingpong $gopt -n 20 -s 512 -r 3
connected ibv_srq_pingpong $gopt -n 40
connected ibv_srq_pingpong $gopt -n 40 -e
connected ibv_srq_pingpong $gopt -n 20 -q 1 -r 2 -c
connected ibv_srq_pingpong $gopt -n 30 -q 4 -r 8 -s 100
fi

# asyncwatch while the port goes down and up. Last, since the bounce takes
# the port's GIDs away for a moment.
netdev=$(ls "$port_dir/gid_attrs/ndevs" >/dev/null 2>&1 &&
	cat "$port_dir"/gid_attrs/ndevs/* 2>/dev/null | grep -v '^$' | head -n 1)
if [ "$part" != device ] && [ -n "$netdev" ] && command -v ip >/dev/null &&
	selected ibv_asyncwatch -d "$dev"; then
	# watch SIDE OUT: asyncwatch while the port's netdev bounces; it
	# never ends by itself, so a short limit stops it (status 124).
	watch() {
		run_limit=5 run "$1" "$2" ibv_asyncwatch -d "$dev" &
		local pid=$!
		sleep 1
		ip link set "$netdev" down
		sleep 1
		ip link set "$netdev" up
		wait "$pid"
	}
	n=$((cases + 1))
	cases=$n
	watch ref "$work/$n.ref"
	watch test "$work/$n.test"
	if same "$work/$n.ref" "$work/$n.test"; then
		report "ibv_asyncwatch -d $dev ($netdev down, up)" "exit $(cat "$work/$n.ref.rc")"
	else
		report "ibv_asyncwatch -d $dev ($netdev down, up)" "" "$bad"
		show_diff "$work/$n.ref" "$work/$n.test" run
	fi
fi

echo "pingpong-compat: $cases cases, $failed differ (device $dev${gid:+, GID index $gid})"
[ $failed -eq 0 ]
