#!/bin/bash
# compare-umad.sh [-q] PROBE MODE: runs PROBE MODE on our libibumad and on
# Debian's (same binary; LD_LIBRARY_PATH picks the library) and compares
# stdout, stderr and exit status. On a simulated fabric (fabric-run) the
# probe is preloaded with umad2sim; pids and umad2sim's greeting are
# filtered from stderr.
set -u
quiet=0
[ "${1:-}" = -q ] && { quiet=1; shift; }
probe=$1
mode=$2
ours=${RDMA_BUILD:?}/lib
ref=/usr/lib/x86_64-linux-gnu
[ -e "$ref/libibumad.so.3" ] || { echo "compare-umad: Debian's libibumad3 is not installed" >&2; exit 77; }
pre=${SIM_PRELOAD:+LD_PRELOAD=$SIM_PRELOAD}
# pids, umad2sim's greeting, and the addresses the debug traces print
# (buffers, masks, OUI arrays) differ from run to run.
filter() {
    sed -e 's/\[[0-9]*\]/[PID]/' -e '/sim_connect: attached as client/d' \
        -e 's/\(umad\|method_mask\|oui\) 0x[0-9a-f]\{9,\}/\1 0xADDR/g' "$1"
}
run() {
    env LD_LIBRARY_PATH="$1" $pre "$probe" "$mode" >"$2.out" 2>"$2.err"
    echo "exit $?" >>"$2.out"
}
run "$ours" ours
run "$ref" ref
rc=0
if ! diff -u <(filter ref.out) <(filter ours.out); then rc=1; fi
if ! diff -u <(filter ref.err) <(filter ours.err); then rc=1; fi
[ $rc = 0 ] && echo "compare-umad $mode: same stdout, stderr and exit status ($(wc -l <ours.out) lines)"
[ $quiet = 1 ] || cat ours.out
exit $rc
