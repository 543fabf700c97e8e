#!/bin/bash
# control_path.sh RUN OURS REFERENCE OURS_LIB WORK: the control-path table
# of our libibverbs + mlx5 provider against Debian's, on the emulated
# ConnectX (RUN = build/bin/uverbs-sim-run), with the MLX5_* settings that
# change how a context opens. Every table must be identical.
set -u
run=$1 ours=$2 ref=$3 lib=$4 work=$5
[ -x "$ref" ] || { echo "SKIP: the reference build of control_path is missing"; exit 77; }
ls /usr/lib/*/libibverbs/libmlx5-rdmav*.so >/dev/null 2>&1 ||
	{ echo "SKIP: Debian's libmlx5 provider (ibverbs-providers) is not installed"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
cat >"$work/two.conf" <<'CONF'
device mlx5_0
ports 2
port 2 state down
device mlx5_1
part_id 4125
link_layer eth
atomics off
CONF
fail=0
n=0
while read -r conf envs; do
	[ -n "$conf" ] || continue
	n=$((n + 1))
	cfg=()
	[ "$conf" = - ] || cfg=(--config "$work/$conf")
	# shellcheck disable=SC2086 # envs is a word list
	env -u LD_LIBRARY_PATH $envs timeout 30 "$run" "${cfg[@]}" --dir "$work/host" "$ref" >"$work/$n.ref" 2>&1
	# shellcheck disable=SC2086
	env LD_LIBRARY_PATH="$lib" $envs timeout 30 "$run" "${cfg[@]}" --dir "$work/host" "$ours" >"$work/$n.ours" 2>&1
	if cmp -s "$work/$n.ref" "$work/$n.ours"; then
		echo "same  $conf ${envs:-(no MLX5_* variable)}"
	else
		echo "DIFF  $conf ${envs:-(no MLX5_* variable)}"
		diff -u --label reference --label ours "$work/$n.ref" "$work/$n.ours" | sed 's/^/      /'
		fail=1
	fi
done <<'CASES'
- 
two.conf 
- MLX5_SHUT_UP_BF=1
- MLX5_TOTAL_UUARS=0
- MLX5_TOTAL_UUARS=1
- MLX5_TOTAL_UUARS=33
- MLX5_TOTAL_UUARS=5000
- MLX5_NUM_LOW_LAT_UUARS=15
- MLX5_NUM_LOW_LAT_UUARS=16
- MLX5_NUM_LOW_LAT_UUARS=-1
- MLX5_TOTAL_UUARS=32 MLX5_NUM_LOW_LAT_UUARS=31
CASES
exit $fail
