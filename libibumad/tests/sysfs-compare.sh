#!/bin/bash
# sysfs-compare.sh PROBE: builds fake /sys/class trees (well-formed and
# broken ones), bind-mounts each over /sys/class in a private mount
# namespace and runs compare-umad.sh PROBE sysfs there: our libibumad and
# Debian's must report the same CAs, ports and errors, and neither may
# crash. Needs root and unshare(1) (exit 77 = skipped otherwise).
set -u
probe=$1
here=$(cd "$(dirname "$0")" && pwd)
unshare -m true 2>/dev/null || { echo "sysfs-compare: cannot unshare a mount namespace" >&2; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# port DIR LID STATE PHYS LINK_LAYER GUIDLOW [CAPMASK]
port() {
    mkdir -p "$1/pkeys" "$1/gids"
    echo "$2" >"$1/lid"; echo 0 >"$1/lid_mask_count"; echo 0x1 >"$1/sm_lid"; echo 0 >"$1/sm_sl"
    echo "$3" >"$1/state"; echo "$4" >"$1/phys_state"; echo "56 Gb/sec (4X FDR)" >"$1/rate"
    echo "${7:-0x02510868}" >"$1/cap_mask"; echo "$5" >"$1/link_layer"
    echo "fe80:0000:0000:0000:0002:c903:0000:$6" >"$1/gids/0"
    echo 0xffff >"$1/pkeys/0"; echo 0x8001 >"$1/pkeys/1"; echo 0x0000 >"$1/pkeys/2"
}
# ca ROOT NAME TYPE
ca() {
    local d=$1/infiniband/$2
    mkdir -p "$d/ports"
    echo "$3" >"$d/node_type"; echo "16.35.2000" >"$d/fw_ver"; echo "0" >"$d/hw_rev"
    echo "MT4119" >"$d/hca_type"; echo "0002:c903:0000:1000" >"$d/node_guid"
    echo "0002:c903:0000:1003" >"$d/sys_image_guid"
}
umadid() { mkdir -p "$1/infiniband_mad/umad$2"; echo "$3" >"$1/infiniband_mad/umad$2/ibdev"; echo "$4" >"$1/infiniband_mad/umad$2/port"; }

scenario() { # NAME: the tree in $work/$NAME is built by the caller
    local name=$1 dir=$work/$1
    echo "== $name"
    (cd "$dir.run" && unshare -m bash -c "mount --bind '$dir' /sys/class &&
        '$here/compare-umad.sh' -q '$probe' sysfs && '$here/compare-umad.sh' -q '$probe' sysfs-debug")
}

# 1: no /sys/class/infiniband at all.
mkdir -p "$work/empty/net" "$work/empty.run"
# 2: two CAs, an Ethernet-only one, an iWARP device, a switch.
t=$work/multi; mkdir -p "$t.run"
ca "$t" mlx5_1 "1: CA"; port "$t/infiniband/mlx5_1/ports/1" 0x5 "1: DOWN" "3: Disabled" InfiniBand 2001
ca "$t" mlx5_0 "1: CA"; port "$t/infiniband/mlx5_0/ports/1" 0x3 "4: ACTIVE" "5: LinkUp" InfiniBand 1001
port "$t/infiniband/mlx5_0/ports/2" 0x0 "1: DOWN" "2: Polling" InfiniBand 1002
ca "$t" rxe0 "1: CA"; port "$t/infiniband/rxe0/ports/1" 0x0 "4: ACTIVE" "5: LinkUp" Ethernet 3001
ca "$t" siw0 "4: RNIC"; port "$t/infiniband/siw0/ports/1" 0x0 "4: ACTIVE" "5: LinkUp" Ethernet 4001
ca "$t" sw0 "2: switch"; port "$t/infiniband/sw0/ports/0" 0x9 "4: ACTIVE" "5: LinkUp" InfiniBand 5001
umadid "$t" 0 mlx5_0 1; umadid "$t" 1 mlx5_0 2; umadid "$t" 2 mlx5_1 1; umadid "$t" 3 sw0 0
echo 5 >"$t/infiniband_mad/abi_version"
# 2b: two usable CAs whose directory order differs from their sorted order
# (the default CA is the first active one in directory order).
t=$work/order; mkdir -p "$t.run"
for n in zeta alpha mid; do
    ca "$t" $n "1: CA"; port "$t/infiniband/$n/ports/1" 0x7 "4: ACTIVE" "5: LinkUp" InfiniBand 6001
done
umadid "$t" 0 alpha 1; umadid "$t" 1 zeta 1
echo 5 >"$t/infiniband_mad/abi_version"
# 3: no port active anywhere; ports without link_layer (old kernels: "IB").
t=$work/inactive; mkdir -p "$t.run"
ca "$t" qib0 "1: CA"; port "$t/infiniband/qib0/ports/1" 0x0 "2: INIT" "5: LinkUp" x 7001
rm "$t/infiniband/qib0/ports/1/link_layer"
ca "$t" qib1 "1: CA"; port "$t/infiniband/qib1/ports/1" 0x0 "1: DOWN" "2: Polling" InfiniBand 7101
umadid "$t" 0 qib0 1
# 4: broken trees: unparsable GUIDs, a missing GID, a stray port entry,
# an empty file, a port number past the ABI's array, no P_Keys.
t=$work/broken; mkdir -p "$t.run"
ca "$t" bad_guid "1: CA"; port "$t/infiniband/bad_guid/ports/1" 0x1 "4: ACTIVE" "5: LinkUp" InfiniBand 8001
echo "zzzz:not-a-guid" >"$t/infiniband/bad_guid/node_guid"
ca "$t" no_gid "1: CA"; port "$t/infiniband/no_gid/ports/1" 0x1 "4: ACTIVE" "5: LinkUp" InfiniBand 8101
rm "$t/infiniband/no_gid/ports/1/gids/0"
ca "$t" stray "1: CA"; port "$t/infiniband/stray/ports/1" 0x1 "4: ACTIVE" "5: LinkUp" InfiniBand 8201
mkdir -p "$t/infiniband/stray/ports/extra"
ca "$t" empty_fw "1: CA"; port "$t/infiniband/empty_fw/ports/1" 0x1 "4: ACTIVE" "5: LinkUp" InfiniBand 8301
: >"$t/infiniband/empty_fw/fw_ver"
ca "$t" many "1: CA"; port "$t/infiniband/many/ports/12" 0x1 "4: ACTIVE" "5: LinkUp" InfiniBand 8401
ca "$t" nopkeys "1: CA"; port "$t/infiniband/nopkeys/ports/1" 0x1 "4: ACTIVE" "5: LinkUp" InfiniBand 8501
rm -f "$t/infiniband/nopkeys/ports/1/pkeys/"*
ca "$t" noports "1: CA"; rmdir "$t/infiniband/noports/ports"
mkdir -p "$t/infiniband/garbage_type"; echo "junk" >"$t/infiniband/garbage_type/node_type"
mkdir -p "$t/infiniband_mad"; echo 4 >"$t/infiniband_mad/abi_version"

rc=0
for s in empty multi order inactive broken; do
    scenario $s || rc=1
done
exit $rc
