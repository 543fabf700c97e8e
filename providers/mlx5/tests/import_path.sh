#!/bin/bash
# import_path.sh RUN OURS REFERENCE OURS_LIB WORK: context sharing
# (import_path.c) of our libibverbs + libmlx5 against Debian's, on the
# emulated ConnectX: the UAR pools behind QP doorbells, mlx5dv_devx_alloc_uar,
# ibv_import_device/pd/mr and traffic through what was imported. With UAR
# objects (a current kernel) and with static UARs (where libmlx5 refuses the
# import and the application's UARs), on InfiniBand and RoCE, and with the
# knobs that size the pools.
"$(dirname "$0")/twin.sh" "$@" <<'CASES' || exit $?
-
roce.conf
static.conf
- MLX5_NUM_LOW_LAT_UUARS=1
- MLX5_TOTAL_UUARS=8 MLX5_NUM_LOW_LAT_UUARS=6
- MLX5_SHUT_UP_BF=1
- MLX5_SINGLE_THREADED=1
CASES
work=$5
fail=0
# the emulator's part: with UAR objects the import works and carries data
for f in "$work"/1.ref "$work"/2.ref; do
	grep -q 'data arrived' "$f" || { echo "EMULATOR $f: no write through the imported MR"; fail=1; }
	grep -q 'bf     ok' "$f" || { echo "EMULATOR $f: no UAR for the application"; fail=1; }
done
grep -q 'a dup of the cmd fd    EINVAL' "$work/3.ref" ||
	{ echo "EMULATOR $work/3.ref: a context with static UARs was imported"; fail=1; }
exit $fail
