#!/bin/bash
# xsrq.sh CASE [PROGRAMS]: ibv_xsrq_pingpong over the emulator, a server and
# its client(s) on one simulated host; the stacks (Debian's libibverbs +
# libmlx5, or ours) come from UVSIM_STACK/UVSIM_MIX as for pingpong.sh.
#
# PROGRAMS picks whose ibv_xsrq_pingpong runs on each side:
#   debian (default)  Debian's /usr/bin program on both sides
#   ours              the project's (UVSIM_OURS_BIN, default the directory
#                     of UVSIM_RUN, i.e. build/bin) on both sides
#   ours-server, ours-client  ours on that side, Debian's on the other
#   all               the four above in turn, each on its own TCP port
# A side whose stack is Debian's runs our program on Debian's libraries
# (LD_LIBRARY_PATH takes precedence over the program's RUNPATH).
#
# Passes when every process exits 0 with an empty stderr, prints one
# "   local:" and one "  remote:" line per peer (LID and GID from the
# configuration) and "success" last, and each side's remote line carries
# exactly the peer's local line (LID, both QPNs, PSN, SRQN, GID): the
# 66-byte address records went through intact both ways. With "all" the
# outputs of the mixes must also equal the Debian pair's, QPNs, PSNs and
# SRQ numbers masked.
#
# XRC needs the emulator's XRC domains, XRC SRQs and XRC QPs (and, for
# clients2, one domain shared by the processes that open /tmp/xrc_domain).
. "$(dirname "$0")/lib.sh"

case=${1:?usage: xsrq.sh CASE [debian|ours|ours-server|ours-client|all]}
progs=${2:-debian}
PROG=ibv_xsrq_pingpong
OURS_BIN=${UVSIM_OURS_BIN:-$(dirname "$UVSIM_RUN")}
args=() sargs=() cargs=() clients=1

case $case in
basic)    args=(-g 0) ;;
n50)      args=(-g 0 -n 50 -s 1) ;;
events)   args=(-g 0 -e -n 20 -s 64) ;;
no_gid)   args=(-n 10) ;;  # GID 0 on the wire: no GRH, "GID ::"
mtu4096)  args=(-g 0 -m 4096 -s 16384 -n 10) ;;
2dev)     args=(-g 0 -n 10) sargs=(-d mlx5_1) cargs=(-d mlx5_0)
	config two-devices <<-'EOF'
	device mlx5_0
	device mlx5_1
	EOF
	;;
roce)     args=(-g 3 -n 10)
	config roce <<-'EOF'
	device mlx5_0
	link_layer eth
	mac 02:00:00:00:00:07
	ipv4 10.79.0.7
	EOF
	;;
clients2) args=(-g 0 -n 10) sargs=(-c 2) clients=2 ;;
*) echo "xsrq.sh: unknown case $case" >&2; exit 2 ;;
esac

case $progs in
debian | ours | ours-server | ours-client) combos=$progs ;;
all) combos="debian ours ours-server ours-client" ;;
*) echo "xsrq.sh: PROGRAMS is debian, ours, ours-server, ours-client or all, not '$progs'" >&2; exit 2 ;;
esac

need "$PROG"
if [ "$progs" != debian ] && [ ! -x "$OURS_BIN/$PROG" ]; then
	echo "FAIL: $OURS_BIN/$PROG is not built"
	exit 1
fi
# Our libraries (which our program on Debian's stack must not load) and
# Debian's library directory, which it is given instead.
[ -n "$OURS_LIB" ] || OURS_LIB=$(cd "$OURS_BIN/../lib" 2>/dev/null && pwd)
DEB_LIBDIR=$(dirname "$(ldd "$BIN/$PROG" 2>/dev/null | awk '$1 == "libibverbs.so.1" { print $3 }')")

# Expected addresses (see pingpong.sh): IB GID 0 is fe80:: + the port GUID,
# LIDs in device order; RoCE GID 3 the IPv4-mapped address, LID 0.
gid=::
lid=0001 slid=""
case $case in
roce) gid=::ffff:10.79.0.7 lid=0000 ;;
no_gid) ;;
*) gid=fe80::b8ce:f603:a0:b000 ;;
esac
sgid=$gid
if [ "$case" = 2dev ]; then
	sgid=fe80::b8ce:f603:a0:b010 slid=0002
fi
slid=${slid:-$lid}

# side TAG STACK WHOSE ARGS...: one process of the run (a subshell, so
# that it can run in the background; its exit status is the program's).
# WHOSE is debian or ours (the program). The loader records its libraries
# in $W/TAG.ld.PID for the checks made after it (loaded_right).
side() {
	local tag=$1 stack=$2 whose=$3
	shift 3
	(
		STACK=$stack
		SKIP_STACK_CHECK=1
		if [ "$whose" = ours ]; then
			BIN=$OURS_BIN
			if [ "$stack" = debian ]; then
				export LD_LIBRARY_PATH=$DEB_LIBDIR
				export LD_DEBUG=libs LD_DEBUG_OUTPUT=$W/$tag.ld
			fi
		fi
		sim "$tag" "$PROG" "$@"
		exit "$RC"
	)
}

# loaded_right TAG STACK WHOSE: a process on our stack loaded our mlx5
# provider and nothing of Debian's; our program on Debian's stack loaded
# Debian's and nothing from build/lib (RUNPATH overridden).
loaded_right() {
	if [ "$2" = ours ]; then
		stack_check "$1" "$PROG"
	elif [ "$3" = ours ] || [ "$SRV_STACK" != "$CLI_STACK" ]; then
		debian_check "$1"
	fi
}

# check_output TAG LID GID PEERS: the shape of one process's output.
check_output() {
	local tag=$1 mylid=$2 mygid=$3 peers=$4 f=$W/$1.out n
	local hex='[0-9a-f]{6}'
	n=$(grep -Ec "^   local: LID $mylid, QPN RECV $hex SEND $hex, PSN $hex, SRQN $hex, GID $mygid\$" "$f")
	[ "$n" = "$peers" ] || fail "$tag: $n local address lines for LID $mylid GID $mygid, want $peers"
	n=$(grep -Ec "^  remote: LID [0-9a-f]{4}, QPN RECV $hex SEND $hex, PSN $hex, SRQN $hex, GID " "$f")
	[ "$n" = "$peers" ] || fail "$tag: $n remote address lines, want $peers"
	[ "$(tail -n 1 "$f")" = success ] || fail "$tag: the last line is not 'success'"
	[ "$(wc -l <"$f")" -eq $((2 * peers + 1)) ] || fail "$tag: $(wc -l <"$f") lines, want $((2 * peers + 1))"
	expect_not "$W/$tag.err" "." "$tag stderr (must be empty)"
}

# addresses FILE WHICH: the address fields of FILE's WHICH (local/remote) lines.
addresses() {
	sed -n "s/^ *$2: //p" "$1" | sort
}

# run_combo N WHOSE: the server and its clients, on TCP port PORT+N;
# the programs of each side by WHOSE.
run_combo() {
	local n=$1 whose=$2 sprog=debian cprog=debian port=$((PORT + $1)) i pid rc
	case $whose in
	ours) sprog=ours cprog=ours ;;
	ours-server) sprog=ours ;;
	ours-client) cprog=ours ;;
	esac
	local tag=$whose
	SHOW+=("$tag.server")
	side "$tag.server" "$SRV_STACK" "$sprog" "${args[@]}" "${sargs[@]}" -p "$port" &
	pid=$!
	# the server opens the device, then listens
	for i in $(seq 1 200); do
		listening "$port" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	local cpids=()
	for ((i = 1; i <= clients; i++)); do
		SHOW+=("$tag.client$i")
		side "$tag.client$i" "$CLI_STACK" "$cprog" "${args[@]}" "${cargs[@]}" -p "$port" localhost &
		cpids+=($!)
	done
	for ((i = 1; i <= clients; i++)); do
		wait "${cpids[$((i - 1))]}"
		rc=$?
		if [ "$rc" -eq 0 ]; then
			loaded_right "$tag.client$i" "$CLI_STACK" "$cprog"
		else
			fail "$tag: client $i ($cprog program, $CLI_STACK stack) exit $rc"
		fi
	done
	wait "$pid"
	rc=$?
	if [ "$rc" -eq 0 ]; then
		loaded_right "$tag.server" "$SRV_STACK" "$sprog"
	else
		fail "$tag: server ($sprog program, $SRV_STACK stack) exit $rc"
	fi

	check_output "$tag.server" "$slid" "$sgid" "$clients"
	for ((i = 1; i <= clients; i++)); do
		check_output "$tag.client$i" "$lid" "$gid" 1
	done
	# What each side received is what the other sent.
	local cl cr
	cl=$(for ((i = 1; i <= clients; i++)); do addresses "$W/$tag.client$i.out" local; done | sort)
	cr=$(for ((i = 1; i <= clients; i++)); do addresses "$W/$tag.client$i.out" remote; done | sort)
	[ "$cl" = "$(addresses "$W/$tag.server.out" remote)" ] ||
		fail "$tag: the server's remote lines are not the clients' local lines"
	[ "$cr" = "$(addresses "$W/$tag.server.out" local)" ] ||
		fail "$tag: the clients' remote lines are not the server's local lines"
}

# masked FILE: FILE with the numbers that differ from run to run hidden.
masked() {
	sed -E 's/(RECV|SEND|PSN|SRQN) [0-9a-f]{6}/\1 */g' "$1"
}

n=0
for combo in $combos; do
	run_combo "$n" "$combo"
	n=$((n + 1))
done
# With "all": every mix prints what Debian's programs print, byte for byte
# but the QPNs, PSNs and SRQ numbers.
if [ "$progs" = all ]; then
	for combo in ours ours-server ours-client; do
		for f in server $(seq -f client%g 1 "$clients"); do
			[ "$(masked "$W/debian.$f.out")" = "$(masked "$W/$combo.$f.out")" ] ||
				fail "$combo.$f: the output differs from debian.$f's (QPNs, PSNs, SRQNs masked)"
		done
	done
fi
finish
