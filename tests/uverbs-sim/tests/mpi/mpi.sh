#!/bin/bash
# mpi.sh RANKS: Open MPI (Debian's openmpi-bin) runs mpi_pingpong.c with
# RANKS ranks on one simulated host, every rank's messages over the
# emulated ConnectX: the cm PML with libfabric's MTL over its verbs
# provider and ofi_rxm (connections through the emulated rdma_cm), no
# shared-memory or TCP transport (the BTLs are "self" only). Rank 0 must
# print its line, and the ranks' emulator traces must hold the completions
# of that traffic: the proof it went over the device.
#
# (Open MPI's UCX PML is the other way to the device; it waits for UCX on
# the emulator, see the README.)
. "$(dirname "$0")/../reference/lib.sh"

ranks=${1:?usage: mpi.sh RANKS}
for p in mpicc mpirun fi_info; do
	command -v $p >/dev/null 2>&1 || { echo "SKIP: $p is not installed (Debian packages libopenmpi-dev, openmpi-bin, libfabric-bin)"; exit 77; }
done
need rping  # (Debian's libmlx5, checked by need)
mpicc "$(dirname "$0")/mpi_pingpong.c" -o "$W/mpi_pingpong" 2>"$W/build.err" || {
	cat "$W/build.err"
	echo "FAIL: mpicc"
	exit 1
}
config lo <<EOF2
device mlx5_0
link_layer eth
ipv4 127.0.0.1
EOF2
preload=$(dirname "$UVSIM_RUN")/../lib/libuverbs-sim.so
envs=(-x "LD_PRELOAD=$preload" -x "UVERBS_SIM_CONFIG=$CONFIG" -x "UVERBS_SIM_DIR=$W/host" -x "UVERBS_SIM_TRACE=$W/mpi.trace")
if [ "$STACK" = ours ]; then
	envs+=(-x "LD_LIBRARY_PATH=$OURS_LIB" -x LD_DEBUG=libs -x "LD_DEBUG_OUTPUT=$W/mpi.ld")
fi
echo "mpirun -np $ranks ... mpi_pingpong" >"$W/mpi.cmd"
SHOW+=(mpi)
timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe -np "$ranks" \
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "verbs;ofi_rxm" --mca btl self \
	"${envs[@]}" "$W/mpi_pingpong" >"$W/mpi.out" 2>"$W/mpi.err"
rc=$?
[ "$rc" -eq 0 ] || fail "mpirun exit $rc"
expect "$W/mpi.out" "^ping-pong 100 x 4096 bytes ok, allreduce over $ranks ranks $((ranks * (ranks + 1) / 2)) \\(want $((ranks * (ranks + 1) / 2))\\)\$" "rank 0's line"
# every rank used the device: its trace holds CQEs (ping-pong: 200 messages
# at least between ranks 0 and 1)
cqes=$(grep -c ' CQE cq ' "$W/mpi.trace" 2>/dev/null || echo 0)
[ "$cqes" -ge 200 ] || fail "the ranks' emulator traces hold $cqes CQEs, want at least 200"
procs=$(grep ' CQE cq ' "$W/mpi.trace" 2>/dev/null | grep -o '^uverbs-sim\[[0-9]*\]' | sort -u | wc -l)
[ "$procs" -ge "$ranks" ] || fail "only $procs of $ranks ranks completed work on the device"
[ "$STACK" = ours ] && [ "$rc" -eq 0 ] && stack_check mpi mpi_pingpong
echo "$cqes CQEs from $procs ranks"
finish
