#!/bin/bash
# small_reads.sh RUN OURS OURS_LIB WORK: our stack alone (no reference to
# compare with: libmlx5 44 gets this case wrong) reads results the device
# scatters into 128-byte CQEs (RDMA reads of up to 64 bytes, atomics):
# data_path's small-payload section, every result in place.
set -u
run=$1 ours=$2 lib=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
env LD_LIBRARY_PATH="$lib" MLX5_CQE_SIZE=128 DATA_PATH_ALL_READS=1 timeout 60 "$run" --dir "$work/host" "$ours" \
	>"$work/out" 2>&1 || { echo "FAIL: data_path exited $?"; tail -5 "$work/out"; exit 1; }
sed -n '/^  reads and atomics/,/^RC error/p' "$work/out" >"$work/reads"
reads=$(grep -c 'data in place' "$work/reads")
wrong=$(grep -c 'WRONG' "$work/reads")
echo "reads in place: $reads, wrong: $wrong"
# both passes of the section (plain and extended CQ): 9 sizes each
[ "$wrong" -eq 0 ] && [ "$reads" -eq 18 ] || { cat "$work/reads"; exit 1; }
grep -q 'old value 41, now 42' "$work/reads" && grep -q 'old value 42, now 7' "$work/reads" ||
	{ echo "FAIL: atomic results"; cat "$work/reads"; exit 1; }
