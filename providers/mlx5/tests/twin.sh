#!/bin/bash
# twin.sh RUN OURS REFERENCE OURS_LIB WORK < CASES: a test program built
# twice (OURS against our libibverbs + mlx5 provider, REFERENCE against
# Debian's) run on the emulated ConnectX (RUN = build/bin/uverbs-sim-run)
# once per case line "CONFIG [VAR=VALUE...]" (CONFIG: a configuration file
# of WORK, or - for the default device); every output must be identical.
# Configurations the cases may name: two.conf (two devices, the second a
# RoCE ConnectX-6 without atomics, a down port), roce.conf (one RoCE port),
# static.conf (a kernel before the UAR object, 5.8: static UARs for every
# library, dynamic pages only for thread domains), nodyn.conf (such a
# kernel whose device has no dynamic UARs at all).
set -u
run=$1 ours=$2 ref=$3 lib=$4 work=$5
[ -x "$ref" ] || { echo "SKIP: the reference build of $(basename "$ours") is missing"; exit 77; }
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
cat >"$work/roce.conf" <<'CONF'
device mlx5_0
link_layer eth
mac 02:00:00:00:00:07
ipv4 10.79.0.7
CONF
cat >"$work/static.conf" <<'CONF'
device mlx5_0
uar_objects off
CONF
cat >"$work/nodyn.conf" <<'CONF'
device mlx5_0
uar_objects off
dyn_uars 0
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
done
exit $fail
