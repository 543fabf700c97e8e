#!/bin/bash
# hostile.sh DUMP SHIM MODE [SEED]: run inside tests/fabric/fabric-run.
# Discovers through our libibnetdisc while the SHIM (hostile.c) rewrites
# the fabric's replies as MODE says; passes when the walk ends by itself
# (within 60 s) with a fabric or a clean refusal, never a crash.
set -u
dump=$1 shim=$2 mode=$3 seed=${4:-1}
ours=$PWD/ours-lib
mkdir -p "$ours"
ln -sf "$RDMA_BUILD/lib/libibnetdisc.so.5" "$ours/libibnetdisc.so.5"
skip=2
[ "$mode" = garbage ] && skip=3   # keep the start node's NodeInfo sane
IBND_HOSTILE=$mode IBND_HOSTILE_SEED=$seed IBND_HOSTILE_SKIP=$skip \
LD_LIBRARY_PATH=$ours LD_PRELOAD="$SIM_PRELOAD $shim" \
    timeout 60 "$dump" -m -T 50 -R 1 > out.txt 2> err.txt
rc=$?
echo "mode $mode seed $seed: exit $rc, $(grep -c '^node ' out.txt) nodes, $(grep -vc sim_connect err.txt) messages"
head -3 out.txt
case $rc in
0|1) exit 0;;
*) grep -v sim_connect err.txt | tail -5; exit 1;;
esac
