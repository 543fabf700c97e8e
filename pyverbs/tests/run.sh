#!/bin/bash
# run.sh RUN PYDIR LIBDIR WORK [CONFIG]: our pyverbs test suite (test_*.py
# here, but the device-less test_enums.py) on the emulated ConnectX
# (RUN = build/bin/uverbs-sim-run), with our pyverbs package (PYDIR,
# build/python) over our libibverbs and mlx5 provider (LIBDIR, build/lib).
# CONFIG: an emulator configuration ("-" or none: one InfiniBand ConnectX).
# RUN "-": no emulator, the host's devices (the soft-RoCE VM's rxe0; set
# PYVERBS_DEVICE to choose one).
set -u
run=$1 pydir=$2 libdir=$3 work=$4 config=${5:--}
here=$(cd "$(dirname "$0")" && pwd)
cfg=()
[ "$config" = - ] || cfg=(--config "$config")
[ -f "$pydir/pyverbs/device.cpython-311-x86_64-linux-gnu.so" ] || ls "$pydir"/pyverbs/device*.so >/dev/null 2>&1 ||
	{ echo "SKIP: pyverbs is not built in $pydir"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
mods=()
for f in "$here"/test_*.py; do
	m=$(basename "$f" .py)
	[ "$m" = test_enums ] || mods+=("$m")
done
cd "$here" || exit 1
sim=("$run" "${cfg[@]}" --dir "$work/host")
[ "$run" = - ] && sim=()
PYTHONPATH=$pydir:$here LD_LIBRARY_PATH=$libdir timeout 600 "${sim[@]}" /usr/bin/python3 -m unittest -v "${mods[@]}"
