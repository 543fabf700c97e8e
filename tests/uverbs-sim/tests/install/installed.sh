#!/bin/bash
# installed.sh BUILD: cmake --install into a scratch DESTDIR, then the
# installed uverbs-sim-run: Debian's ibv_devinfo on each installed example
# configuration must show the devices and ports the example describes, and
# Debian's ibv_rc_pingpong must pass between two installed runs. The man
# page is installed and renders.
set -u
build=$1
command -v ibv_devinfo >/dev/null && command -v ibv_rc_pingpong >/dev/null ||
	{ echo "SKIP: Debian's ibverbs-utils not installed"; exit 77; }
d=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$d"' EXIT
DESTDIR=$d/root cmake --install "$build" >"$d/install.log" 2>&1 || { tail "$d/install.log"; exit 1; }
run=$(find "$d/root" -path '*/bin/uverbs-sim-run')
ex=$(find "$d/root" -type d -path '*/doc/uverbs-sim/examples')
[ -x "$run" ] || { echo "FAIL: uverbs-sim-run not installed"; exit 1; }
[ -d "$ex" ] || { echo "FAIL: no installed examples"; exit 1; }
lib=$(find "$d/root" -name libuverbs-sim.so)
case $lib in */uverbs-sim/libuverbs-sim.so) ;; *) echo "FAIL: library at '$lib', want libdir/uverbs-sim/"; exit 1 ;; esac
fail=0
# check CONFIG PATTERN...: every pattern (an extended regex over the
# summary "device part link state" lines) must match.
check() {
	local cfg=$1 out
	shift
	out=$(env -u UVERBS_SIM_LIB "$run" --config "$ex/$cfg" --dir "$d/run-$cfg" ibv_devinfo 2>&1 |
		awk '/^hca_id/ {dev=$2} /vendor_part_id/ {part=$2}
		     /state:/ {state=$2} /link_layer/ {print dev, part, $2, state}')
	for want in "$@"; do
		if ! grep -qE "^$want\$" <<<"$out"; then
			echo "FAIL: $cfg: no port matching '$want' in:"; sed 's/^/    /' <<<"$out"; fail=1; return
		fi
	done
	echo "ok: $cfg: $(tr '\n' ';' <<<"$out")"
}
check connectx6-ib.conf "mlx5_0 4123 InfiniBand PORT_ACTIVE"
check roce.conf "mlx5_0 4125 Ethernet PORT_ACTIVE"
check two-devices.conf "mlx5_0 4129 InfiniBand PORT_ACTIVE" "mlx5_0 4129 Ethernet PORT_ACTIVE" \
	"mlx5_1 4119 InfiniBand PORT_DOWN"
check faults.conf "mlx5_0 [0-9]+ InfiniBand PORT_ACTIVE"

# Two installed runs share one emulated host: a ping-pong between them.
port=$((19000 + RANDOM % 1000))
"$run" --dir "$d/pp" ibv_rc_pingpong -p "$port" -n 100 >"$d/server.log" 2>&1 &
sleep 0.5
if "$run" --dir "$d/pp" ibv_rc_pingpong -p "$port" -n 100 localhost >"$d/client.log" 2>&1 && wait $!; then
	echo "ok: ibv_rc_pingpong between two installed runs: $(grep -m1 'bytes in' "$d/client.log")"
else
	echo "FAIL: ibv_rc_pingpong"; cat "$d/server.log" "$d/client.log"; fail=1
fi

# Wrong use: a configuration that does not exist.
if "$run" --config "$d/nonexistent.conf" true 2>"$d/err"; then
	echo "FAIL: a missing configuration was accepted"; fail=1
else
	echo "ok: missing configuration refused: $(cat "$d/err")"
fi

page=$(find "$d/root" -name 'uverbs-sim-run.1*' | head -1)
if [ -n "$page" ]; then
	man --warnings -l "$page" >/dev/null 2>"$d/man.err" && [ ! -s "$d/man.err" ] &&
		echo "ok: man page $(basename "$page")" || { echo "FAIL: man page"; cat "$d/man.err"; fail=1; }
elif grep -q "pandoc not found" "$build/CMakeCache.txt" 2>/dev/null; then
	echo "note: no pandoc, no man page"
else
	echo "FAIL: uverbs-sim-run.1 not installed"; fail=1
fi
exit $fail
