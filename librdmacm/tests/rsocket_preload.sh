#!/bin/bash
# rsocket_preload.sh: a plain TCP client/server pair (rsocket_tcp_echo, no
# RDMA code in it) runs over rsockets under LD_PRELOAD=librspreload.so, in
# the soft-RoCE VM.
#
#   rsocket_preload.sh PRELOAD LIBDIR ECHO [REF_PRELOAD REF_LIBDIR]
#
# PRELOAD is our librspreload.so, LIBDIR the directory of our librdmacm,
# ECHO the rsocket_tcp_echo program. With REF_PRELOAD/REF_LIBDIR (Debian's
# librspreload and its libraries) a preloaded pair is also run across the
# two implementations, each side on one.
#
# The proof that a connection really went over rsockets: the program's
# descriptor is not a kernel socket (the test program prints what
# /proc/self/fd shows for it; librspreload's stand-ins are /dev/null), and
# the kernel's TCP table (/proc/net/tcp) never shows the port, neither
# listening nor connected nor in TIME_WAIT. A control run without the
# preload must show both.
#
# Also: poll, select and epoll servers; blocking, nonblocking, dup()ed and
# sendfile() clients; socket flags; RDMAV_FORK_SAFE=1 with a server that
# forks per connection (TCP first, rsockets in the children); falling back
# to kernel TCP when the server is not an rsocket; programs that never open
# a socket are untouched. Exits 0 when all pass, 1 otherwise, 77 without an RDMA device.
set -u

preload=${1:?preload library}
libdir=${2:?library dir}
echo_bin=${3:?rsocket_tcp_echo}
ref_preload=${4:-}
ref_libdir=${5:-}

[ -e /dev/infiniband/rdma_cm ] || { echo "no RDMA device: skipped"; exit 77; }
host=${RSOCKET_TEST_ADDR:-10.78.0.1}
work=$(mktemp -d /tmp/rspreload.XXXXXX)
failures=0
port=17500

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# Is PORT in the kernel's TCP table (any state)?
in_tcp_table() {
	local hex
	hex=$(printf ':%04X ' "$1")
	grep -q "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# run_pair NAME "SERVER_ENV" "SERVER_ARGS" "CLIENT_ENV" "CLIENT_ARGS" EXPECT
# EXPECT: rsocket (stand-ins on both sides, port never in the TCP table),
# kernel (both kernel sockets), or fallback (client fell back to TCP).
run_pair() {
	local name=$1 senv=$2 sargs=$3 cenv=$4 cargs=$5 expect=$6
	port=$((port + 1))
	local slog=$work/$name.server cl=$work/$name.client
	# shellcheck disable=SC2086
	env $senv timeout 60 "$echo_bin" server $port $sargs >"$slog" 2>&1 &
	local spid=$!
	local i
	for i in $(seq 100); do
		grep -q listening "$slog" && break
		kill -0 $spid 2>/dev/null || break
		sleep 0.1
	done
	local listen_seen=0
	in_tcp_table $port && listen_seen=1
	# shellcheck disable=SC2086
	env $cenv timeout 60 "$echo_bin" client "$host" $port $cargs >"$cl" 2>&1 &
	local cpid=$!
	local seen_during=0
	for i in $(seq 20); do
		kill -0 $cpid 2>/dev/null || break
		in_tcp_table $port && seen_during=1
		sleep 0.05
	done
	wait $cpid
	local crc=$?
	wait $spid
	local src=$?
	local seen_after=0
	in_tcp_table $port && seen_after=1
	local ok=1
	[ $crc = 0 ] && grep -q "client ok" "$cl" || { ok=0; fail "$name: client rc=$crc"; }
	[ $src = 0 ] || { ok=0; fail "$name: server rc=$src"; }
	case $expect in
	rsocket)
		grep -q '^client fd -> /dev/null' "$cl" || { ok=0; fail "$name: client descriptor is $(grep 'client fd' "$cl")"; }
		grep -q '^server fd -> /dev/null' "$slog" || { ok=0; fail "$name: server descriptor is $(grep 'server fd' "$slog")"; }
		grep -q '^listen fd -> /dev/null' "$slog" || { ok=0; fail "$name: listening descriptor is $(grep 'listen fd' "$slog")"; }
		[ $listen_seen$seen_during$seen_after = 000 ] ||
			{ ok=0; fail "$name: port $port in /proc/net/tcp (listen/during/after: $listen_seen/$seen_during/$seen_after)"; }
		;;
	kernel)
		grep -q '^client fd -> socket:' "$cl" || { ok=0; fail "$name: client descriptor is $(grep 'client fd' "$cl")"; }
		[ $listen_seen = 1 ] || { ok=0; fail "$name: kernel listener not in /proc/net/tcp"; }
		;;
	fallback)
		grep -q '^client fd -> socket:' "$cl" || { ok=0; fail "$name: client did not fall back: $(grep 'client fd' "$cl")"; }
		;;
	esac
	if [ $ok = 1 ]; then
		pass "$name ($(grep -h 'echoed' "$slog" | head -1))"
	else
		echo "--- server output:"; cat "$slog"; echo "--- client output:"; cat "$cl"
	fi
}

ours="LD_PRELOAD=$preload LD_LIBRARY_PATH=$libdir"

# Control: without the preload the same programs use kernel TCP, and the
# checks above see it.
run_pair control "" "-m poll" "" "1000000" kernel

run_pair poll "$ours" "-m poll" "$ours" "4000000" rsocket
run_pair select "$ours" "-m select" "$ours" "1000000 -N" rsocket
run_pair epoll "$ours" "-m epoll" "$ours" "2000000 -N" rsocket
run_pair blocking "$ours" "-m block" "$ours" "1000000" rsocket
run_pair dup "$ours" "-m poll" "$ours" "500000 -N -d" rsocket
run_pair sendfile "$ours" "-m poll" "$ours" "300000 -f" rsocket
run_pair sockflags "$ours" "-m epoll" "$ours" "500000 -c" rsocket
run_pair small-queues "$ours RS_SQ_SIZE=16 RS_RQ_SIZE=16 RS_INLINE=0" "-m poll" \
	"$ours RS_SQ_SIZE=16 RS_RQ_SIZE=16" "1000000 -N" rsocket

# RDMAV_FORK_SAFE=1: connections start on TCP and move to rsockets at the
# first transfer, so a server may fork after accept and its child owns the
# RDMA connection.
port=$((port + 1))
env $ours RDMAV_FORK_SAFE=1 timeout 60 "$echo_bin" server $port -n 2 -m poll -F >"$work/fork.server" 2>&1 &
spid=$!
for i in $(seq 100); do grep -q listening "$work/fork.server" && break; sleep 0.1; done
env $ours RDMAV_FORK_SAFE=1 timeout 30 "$echo_bin" client "$host" $port 300000 >"$work/fork.c1" 2>&1 &&
	env $ours RDMAV_FORK_SAFE=1 timeout 30 "$echo_bin" client "$host" $port 100000 -N >"$work/fork.c2" 2>&1
c=$?
wait $spid
s=$?
if [ $c = 0 ] && [ $s = 0 ] &&
	grep -q '^client fd -> socket:' "$work/fork.c1" &&
	grep -q '^client after fd -> /dev/null' "$work/fork.c1" &&
	grep -q '^client after fd -> /dev/null' "$work/fork.c2" &&
	[ "$(grep -c '^server after fd -> /dev/null' "$work/fork.server")" = 2 ]; then
	pass "fork (TCP first, rsockets in the forked children)"
else
	fail "fork (client $c server $s)"
	cat "$work/fork.server" "$work/fork.c1" "$work/fork.c2"
fi

# The server is a kernel socket: the preloaded client's rsocket connect is
# refused and it carries on over TCP under the same descriptor number.
run_pair fallback "" "-m poll" "$ours" "200000" fallback

# Two clients, one after the other, on one listener.
port=$((port + 1))
env $ours timeout 60 "$echo_bin" server $port -n 2 -m poll >"$work/two.server" 2>&1 &
spid=$!
for i in $(seq 100); do grep -q listening "$work/two.server" && break; sleep 0.1; done
env $ours timeout 30 "$echo_bin" client "$host" $port 100000 >"$work/two.c1" 2>&1 &&
	env $ours timeout 30 "$echo_bin" client "$host" $port 100000 -N >"$work/two.c2" 2>&1
c=$?
wait $spid
s=$?
if [ $c = 0 ] && [ $s = 0 ] && [ "$(grep -c 'echoed 100000' "$work/two.server")" = 2 ]; then
	pass "two clients"
else
	fail "two clients (client $c server $s)"; cat "$work/two.server"
fi

# Descriptors that are not sockets pass straight through.
out=$(env $ours timeout 20 sh -c 'echo through-a-pipe | cat; cat /proc/self/comm </dev/null >/dev/null; head -c 3 /etc/hostname >/dev/null && echo file-ok' 2>&1)
if [ "$out" = "through-a-pipe
file-ok" ]; then
	pass "non-socket descriptors untouched"
else
	fail "non-socket descriptors: $out"
fi

# Across implementations: our preload on one side, Debian's on the other.
if [ -n "$ref_preload" ] && [ -e "$ref_preload" ]; then
	ref="LD_PRELOAD=$ref_preload LD_LIBRARY_PATH=$ref_libdir"
	run_pair ours-server-ref-client "$ours" "-m poll" "$ref" "1000000" rsocket
	run_pair ref-server-ours-client "$ref" "-m poll" "$ours" "1000000" rsocket
fi

rm -rf "$work"
if [ $failures -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "all passed"
exit 0
