#!/bin/bash
# compare-smp.sh CASES [TOOL_FILTER]: run inside tests/fabric/fabric-run.
# For every case (a tool and its arguments, one per line of CASES), runs
#   ref      Debian's /usr/sbin/<tool>
#   ours     build/bin/<tool> on our libraries (LD_LIBRARY_PATH=build/lib)
#   ours-deb build/bin/<tool> on Debian's libraries
#   ref-ours Debian's tool on our libraries
# all under umad2sim, with the same argv[0], and compares stdout, stderr
# (the simulator's sim_connect line dropped, pids masked) and exit code of
# each with ref. Prints one line per case and variant, then a summary;
# exits 1 if anything differs.
#
# SMP_VARIANTS (default "ours ours-deb ref-ours") narrows the variants
# compared with ref: the tool/library cross-checks do not depend on the
# topology, so the extra topologies run "ours" only in CI. RDMA_TEST_FULL=1
# (buildlib/dev test --full) runs every variant everywhere.
#
# CASES lines: "[sm:|nosm:]tool args..."; '#' comments. A sm: line runs only
# when the fabric has a subnet manager (FABRIC_SM=1), nosm: only without.
# A set: line changes the fabric (ibportstate sets): the reference runs once
# first so that every compared run starts from the state it leaves; the
# variants then are compared with the reference's second run. A noref: line
# is one where Debian's tool does not end sanely (it waits for ever for a
# reply ibsim does not send, or crashes): only ours runs, and must end by
# itself, without a signal. "ctl: <command>" sends a command to
# ibsim's console (Error "node"[port] rate, Unlink "node"[port], ...).
set -u
cases=$1
filter=${2:-}
build=${RDMA_BUILD:?RDMA_BUILD not set}
tests_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# With --sm, fabric-run leaves opensm.log in the work directory.
if [ -z "${FABRIC_SM:-}" ]; then
    FABRIC_SM=0
    [ -e "${FABRIC_DIR:-/nonexistent}/opensm.log" ] && FABRIC_SM=1
fi
sm=$FABRIC_SM
variants=${SMP_VARIANTS:-ours ours-deb ref-ours}
[ "${RDMA_TEST_FULL:-0}" != 1 ] || variants="ours ours-deb ref-ours"
debian_lib=/usr/lib/x86_64-linux-gnu
out=${FABRIC_DIR:-$(mktemp -d)}/compare
mkdir -p "$out"

# ours/ref-ours use whichever of our libraries build/lib has (Debian's
# for the rest): say which.
. "$tests_dir/compare-lib.sh"
echo "our libraries in build/lib:$(our_libs libibumad.so.3 libibmad.so.5 libibnetdisc.so.5)"

# Values that legitimately change from run to run.
normalize() {
    sed -E -e '/sim_connect: attached as client/d' \
        -e 's/\[(pid )?[0-9]+\]/[\1PID]/g' \
        -e 's/activity count [0-9]+/activity count N/' \
        -e 's/^(ActCount:\.*)[0-9]+/\1N/' \
        "$1"
}

n=0 pass=0 fail=0 skip=0
while IFS= read -r line; do
    case "$line" in ''|'#'*) continue;; esac
    # ctl: lines go to ibsim's console (fault injection), for all later cases.
    case "$line" in
    ctl:*) fabric-ctl "${line#ctl:}"
           echo "---- ibsim: ${line#ctl:}"; continue;;
    esac
    settle=0 hang=0 skipline=0
    while :; do
        case "$line" in
        set:*) settle=1; line=${line#set:};;
        noref:*) hang=1; line=${line#noref:};;
        sm:*) [ "$sm" = 1 ] || skipline=1; line=${line#sm:};;
        nosm:*) [ "$sm" = 0 ] || skipline=1; line=${line#nosm:};;
        *) break;;
        esac
    done
    [ "$skipline" = 0 ] || continue
    # @TESTS@ stands for this folder (config files, node name maps).
    line=${line//@TESTS@/$tests_dir}
    read -r -a words <<<"$line"
    tool=${words[0]}
    [ -z "$filter" ] || [[ "$tool" =~ $filter ]] || continue
    [ -x "$build/bin/$tool" ] || { echo "SKIP (not built) $line"; skip=$((skip+1)); continue; }
    n=$((n+1))
    if [ "$hang" = 1 ]; then
        # Debian's tool hangs or crashes here (see the CASES notes): ours
        # must end by itself, without a signal.
        for v in $variants; do
            [ "$v" != ref-ours ] || continue
            run "$v" "${words[@]}"
            rc=$(cat "$out/$n.$v.rc")
            if [ "$rc" != 124 ] && [ "$rc" -lt 128 -o "$rc" = 255 ]; then
                pass=$((pass+1))
                echo "ok   [$v] rc=$rc $(cat "$out/$n.$v.secs")s (not compared): $line"
            else
                fail=$((fail+1))
                echo "FAIL [$v] rc=$rc (must end by itself): $line"
            fi
        done
        continue
    fi
    [ "$settle" = 0 ] || run ref "${words[@]}"
    run ref "${words[@]}"
    for v in $variants; do
        run "$v" "${words[@]}"
        compare "$v" "$line"
    done
done <"$cases"
summary
