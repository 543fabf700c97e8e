#!/bin/bash
# Discovery benchmark (not a test): wall time and MADs sent by Debian's
# libibnetdisc and ours on one simulated fat tree, via Debian's
# ibnetdiscover (and the ibnd_dump test program).
#   bench.sh [-r ROUNDS] [gen-fattree.py options]   (default: the largest
#   tree measured: --leaves 32 --spines 16 --hosts 18 --links 1)
# Needs a built tree ($RDMA_BUILD, default ./build).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
build=${RDMA_BUILD:-$src/build}
rounds=3
if [ "${1:-}" = -r ]; then rounds=$2; shift 2; fi
[ $# -gt 0 ] || set -- --leaves 32 --spines 16 --hosts 18 --links 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$src/tests/fabric/topo/gen-fattree.py" "$@" > "$work/ft.topo"
gcc -shared -fPIC -O2 -o "$work/count_mads.so" "$src/tests/bench/madcount.c" -ldl
gcc -O2 -I"$src/libibnetdisc/include" -o "$work/bench_discover" "$here/bench_discover.c" \
    /usr/lib/x86_64-linux-gnu/libibnetdisc.so.5
mkdir -p "$work/ours"
ln -s "$build/lib/libibnetdisc.so.5" "$work/ours/libibnetdisc.so.5"
export BENCH_WORK=$work BENCH_ROUNDS=$rounds
"$src/tests/fabric/fabric-run" --topo "$work/ft.topo" -- bash -c '
    run() { # label libdir cmd...
        local label=$1 dir=$2; shift 2
        local f=$BENCH_WORK/${label// /_}
        local best=
        for i in $(seq 1 $BENCH_ROUNDS); do
            local t0=$(date +%s.%N)
            LD_LIBRARY_PATH=$dir LD_PRELOAD="$SIM_PRELOAD $BENCH_WORK/count_mads.so" "$@" \
                > $f.out 2> $f.err
            local t=$(echo "$(date +%s.%N) - $t0" | bc)
            [ -z "$best" ] || [ $(echo "$t < $best" | bc) = 1 ] && best=$t
        done
        local mads=$(sed -n "s/^mads_sent //p" $f.err)
        printf "%-28s %8.3f s  %7s MADs\n" "$label" "$best" "$mads"
        echo "$best $mads" > $f.res
    }
    nodes=$(grep -c "^Switch\|^Ca\|^Hca" $FABRIC_TOPO || true)
    echo "fabric: $nodes nodes; best of $BENCH_ROUNDS runs"
    run ibnetdiscover-reference /usr/lib/x86_64-linux-gnu ibnetdiscover
    run ibnetdiscover-ours $BENCH_WORK/ours ibnetdiscover
    cmp -s <(grep -v "generated on" $BENCH_WORK/ibnetdiscover-reference.out) \
           <(grep -v "generated on" $BENCH_WORK/ibnetdiscover-ours.out) &&
        echo "ibnetdiscover output: identical" || echo "ibnetdiscover output: DIFFERENT"
    for o in 2 4 8 16 32; do
        run "ibnetdiscover-ours -o $o" $BENCH_WORK/ours ibnetdiscover -o $o
    done
    # umad2sim gives a process a limited number of agents, and libibmad
    # takes two per discovery that it never gives back: at most 10 rounds
    n=$((BENCH_ROUNDS * 2)); [ $n -le 10 ] || n=10
    echo "ibnd_discover_fabric alone, $n discoveries in one process:"
    for o in 0 16; do
        echo -n "  reference max_smps=$o: "
        LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu LD_PRELOAD=$SIM_PRELOAD \
            $BENCH_WORK/bench_discover $n $o 2>/dev/null
        echo -n "  ours      max_smps=$o: "
        LD_LIBRARY_PATH=$BENCH_WORK/ours LD_PRELOAD=$SIM_PRELOAD \
            $BENCH_WORK/bench_discover $n $o 2>/dev/null
    done
    read tr mr < $BENCH_WORK/ibnetdiscover-reference.res
    read to mo < $BENCH_WORK/ibnetdiscover-ours.res
    echo "ratio reference/ours: time $(echo "scale=2; $tr / $to" | bc)x, MADs $(echo "scale=2; $mr / $mo" | bc)x"
'
