#!/bin/bash
# compare.sh RUN PYDIR LIBDIR WORK [CONFIG]: scenario.py through Debian's
# python3-pyverbs on Debian's libibverbs + libmlx5, and through our pyverbs
# (PYDIR) on our libraries (LIBDIR), each on a fresh emulated device
# (RUN = build/bin/uverbs-sim-run, CONFIG an emulator configuration or -).
# The outputs must be identical. RUN "-": no emulator, the host's first
# device (in the soft-RoCE VM: rxe0, with Debian's and our rxe provider).
set -u
run=$1 pydir=$2 libdir=$3 work=$4 config=${5:--}
here=$(cd "$(dirname "$0")" && pwd)
cfg=()
[ "$config" = - ] || cfg=(--config "$config")
env -u PYTHONPATH /usr/bin/python3 -P -c 'import pyverbs.enums' 2>/dev/null ||
	{ echo "SKIP: Debian's python3-pyverbs is not installed"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1
sim() { [ "$run" = - ] || echo "$run" "${cfg[@]}" --dir "$work/$1"; }
dev=()
[ "$run" = - ] && dev=("$(ls /sys/class/infiniband | head -1)")
env -u PYTHONPATH -u LD_LIBRARY_PATH timeout 120 $(sim ref-host) \
	/usr/bin/python3 -P "$here/scenario.py" "${dev[@]}" >ref.out 2>ref.err
ref=$?
env PYTHONPATH="$pydir" LD_LIBRARY_PATH="$libdir" timeout 120 $(sim ours-host) \
	/usr/bin/python3 -P "$here/scenario.py" "${dev[@]}" >ours.out 2>ours.err
ours=$?
[ $ref = 0 ] || { echo "the reference run failed ($ref)"; tail ref.err; exit 1; }
[ $ours = 0 ] || { echo "our run failed ($ours)"; tail ours.err; exit 1; }
if ! diff -u ref.out ours.out; then
	echo "FAIL: our pyverbs prints differently (- Debian's, + ours)"
	exit 1
fi
echo "$(grep -c '^--- ' ours.out) items identical"
