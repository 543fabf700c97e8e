#!/bin/bash
# compare-sa.sh [CASES]: differential test of the SA, performance, vendor and
# congestion-control tools (saquery, perfquery, ibtracert, ibping,
# ibsysstat, vendstat, ibccquery, ibccconfig). Runs inside
# tests/fabric/fabric-run (with or without --sm).
#
# For every case line ("[sm:|nosm:]tool args...", '#' starts a comment) it
# runs Debian's /usr/sbin/<tool> and then ours in two variants:
#   ours      build/bin/<tool> on our libraries (LD_LIBRARY_PATH=build/lib)
#   ours-deb  build/bin/<tool> on Debian's libraries
# all preloaded with umad2sim and started under the same argv[0], each
# bounded by a 60 s timeout, and compares stdout, stderr and exit code with
# the reference's run. sm: lines run only on a fabric with opensm, nosm:
# lines only without one.
#
# "@server ref|ours NODE TOOL -S ..." starts that responder (Debian's or
# ours) attached at NODE (SIM_HOST), flagged IsSM so that ibsim hands it the
# requests arriving on QP1; the cases that follow talk to it. "@noserver"
# (or the next @server, or the end) stops it. "@ctl COMMAND" hands COMMAND
# to ibsim's console (fault injection: PerformanceSet, Error, Unlink, ...).
# @TESTS@ in a case stands for this script's directory (data files).
#
# Values that change from one run to the next are masked before comparing
# (see normalize): pids, the data/packet counters that our own MADs move,
# opensm's activity count, ping round-trip times, and the fields that the
# simulated SA fills from uninitialized memory (some SL2VL tables, a
# PathRecord's packet lifetime, preference and reserved bytes: the
# records past the data of a short answer are read from whatever
# umad2sim left in the receive buffer).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cases=${1:-$here/cases-sa.txt}
build=${RDMA_BUILD:?RDMA_BUILD not set}
sm=0
[ -e "${FABRIC_DIR:-/nonexistent}/opensm.log" ] && sm=1
debian_lib=/usr/lib/x86_64-linux-gnu
out=${FABRIC_DIR:-$(mktemp -d)}/compare-sa
mkdir -p "$out"

. "$here/compare-lib.sh"
echo "fabric: ${FABRIC_TOPO:-?} sm=$sm; our libraries in build/lib:$(our_libs libibumad.so.3 libibmad.so.5)"

normalize() {
    sed -E -e '/sim_connect: attached as client/d' \
        -e 's/\[(pid )?[0-9]+\]/[\1PID]/g' \
        -e 's/^(Port(Xmit|Rcv)(Data|Pkts):\.*)[0-9]+$/\1N/' \
        -e 's/^(Port(Unicast|Multicast)(Xmit|Rcv)Pkts:\.*)[0-9]+$/\1N/' \
        -e 's/^(\t\tActCount\.*)[0-9]+$/\1N/' \
        -e 's/^(\t\tVL:)[ 0-9|]+$/\1N/' \
        -e 's/^(\t\t(pkt_life|preference|resv2)\.*)0x[0-9A-F]+$/\1N/' \
        -e 's/time [0-9]+(\.[0-9]+)? ms/time N ms/' \
        -e 's|^rtt min/avg/max = .*|rtt min/avg/max = N|' \
        "$1"
}

server_pid=
stop_server() {
    [ -n "$server_pid" ] || return 0
    kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
    server_pid=
    sleep 2	# until ibsim has let the client slot go
}
trap stop_server EXIT
start_server() {
    local variant=$1 node=$2 tool=$3; shift 3
    local exe=/usr/sbin/$tool lib=
    [ "$variant" = ours ] && { exe=$build/bin/$tool; lib=$build/lib; }
    stop_server
    # ibsim sometimes refuses a new client right after others left
    # ("sim_init: connect failed"): try a few times.
    local try
    for try in 1 2 3 4 5; do
        env ${lib:+LD_LIBRARY_PATH=$lib} LD_PRELOAD="$SIM_PRELOAD" SIM_HOST="$node" \
            SIM_SET_ISSM=1 "$exe" "$@" </dev/null >"$out/server.$variant.$tool.log" 2>&1 &
        server_pid=$!
        sleep 2
        kill -0 "$server_pid" 2>/dev/null && break
        wait "$server_pid" 2>/dev/null
        server_pid=
    done
    echo "server: $variant $tool at $node (pid ${server_pid:-none: $(tail -1 "$out/server.$variant.$tool.log")})"
}

n=0 pass=0 fail=0 skip=0
while IFS= read -r line; do
    case "$line" in ''|'#'*) continue;; esac
    case "$line" in
    @server*)
        [ "$sm" = 1 ] || continue
        read -r -a words <<<"${line#@server}"
        start_server "${words[@]}"
        continue;;
    @noserver) stop_server; continue;;
    @ctl\ *)
        [ "$sm" = 1 ] || continue
        fabric-ctl "${line#@ctl }"
        echo "ctl: ${line#@ctl }"
        continue;;
    esac
    case "$line" in
    sm:*) [ "$sm" = 1 ] || continue; line=${line#sm:};;
    nosm:*) [ "$sm" = 0 ] || continue; line=${line#nosm:};;
    esac
    line=${line//@TESTS@/$here}
    read -r -a words <<<"$line"
    tool=${words[0]}
    [ -x "$build/bin/$tool" ] || { echo "SKIP (not built) $line"; skip=$((skip+1)); continue; }
    n=$((n+1))
    run ref "${words[@]}"
    for v in ours ours-deb; do
        run "$v" "${words[@]}"
        compare "$v" "$line"
    done
done <"$cases"
summary
