#!/bin/bash
# rpc_compare.sh PROBE MODE: run rpc_probe MODE on the current simulated
# fabric (inside fabric-run) twice, on Debian's libibmad/libibumad and on
# ours, and compare the outputs (stdout and stderr together). The pid in
# "ibwarn: [pid]" and umad2sim's own "sim_connect" line are masked. Each run
# must also finish within LIMIT seconds (default 60): no path may hang.
set -u
probe=$1
mode=$2
limit=${LIMIT:-60}
sys=/usr/lib/x86_64-linux-gnu
out=$(mktemp -d "${TMPDIR:-/tmp}/rpc_compare.XXXXXX")
trap 'rm -rf "$out"' EXIT

normalize() {
    sed -e 's/\[[0-9][0-9]*\]/[PID]/' -e '/sim_connect: attached as client/d'
}

run() { # name preload...
    local name=$1; shift
    local preload="$SIM_PRELOAD $*"
    LD_PRELOAD="$preload" timeout "$limit" "$probe" "$mode" > "$out/$name.raw" 2>&1
    local rc=$?
    normalize < "$out/$name.raw" > "$out/$name"
    echo "exit $rc" >> "$out/$name"
    if [ $rc = 124 ]; then
        echo "rpc_compare: $name run of '$mode' exceeded ${limit}s" >&2
        return 1
    fi
}

run reference "$sys/libibumad.so.3" "$sys/libibmad.so.5" || exit 1
run ours || exit 1
if ! diff -u "$out/reference" "$out/ours"; then
    echo "rpc_compare: '$mode' differs between Debian's libibmad and ours" >&2
    exit 1
fi
grep -q "took too long\|slow" "$out/ours" && { echo "rpc_compare: slow timeout path" >&2; exit 1; }
echo "rpc_compare: '$mode' identical ($(wc -l < "$out/ours") lines)"
