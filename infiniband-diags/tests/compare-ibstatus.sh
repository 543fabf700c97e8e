#!/bin/bash
# compare-ibstatus.sh OUR_IBSTATUS: Debian's ibstatus and ours on fake sysfs
# trees (Debian's script has no sysfs knob: a copy of it with its base path
# replaced runs), for a list of argument sets; stdout and exit code must be
# equal. Needs no fabric: ibstatus reads sysfs with the shell.
set -u
ours=$1
ref=/usr/sbin/ibstatus
[ -r "$ref" ] || { echo "SKIP: no $ref"; exit 0; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Two devices: a two-port CA (port 2 down, no link_layer file) and one
# whose port lacks most attributes.
mk_port() { # dev port gid lid smlid state phys rate [link_layer]
    local d=$work/sys/$1/ports/$2
    mkdir -p "$d/gids"
    echo "$3" >"$d/gids/0"; echo "$4" >"$d/lid"; echo "$5" >"$d/sm_lid"
    echo "$6" >"$d/state"; echo "$7" >"$d/phys_state"; echo "$8" >"$d/rate"
    [ $# -lt 9 ] || echo "$9" >"$d/link_layer"
}
mk_port mlx5_0 1 fe80:0000:0000:0000:0002:c903:0001:0001 0x1 0x1 "4: ACTIVE" "5: LinkUp" "100 Gb/sec (4X EDR)" InfiniBand
mk_port mlx5_0 2 fe80:0000:0000:0000:0002:c903:0001:0002 0x0 0x0 "1: DOWN" "3: Disabled" "10 Gb/sec (4X SDR)"
mkdir -p "$work/sys/qib0/ports/1"
mkdir -p "$work/empty"

sed "s|^infiniband_base=.*|infiniband_base=\"$work/sys\"|" "$ref" >"$work/ibstatus"
sed "s|^infiniband_base=.*|infiniband_base=\"$work/empty\"|" "$ref" >"$work/ibstatus-empty"
sed "s|^infiniband_base=.*|infiniband_base=\"$work/none\"|" "$ref" >"$work/ibstatus-none"

pass=0 fail=0
check() { # tree-suffix args...
    local suffix=$1 tree; shift
    case $suffix in "") tree=$work/sys;; -empty) tree=$work/empty;; -none) tree=$work/none;; esac
    (cd "$work" && sh "./ibstatus$suffix" "$@") >"$work/ref.out" 2>&1; local rrc=$?
    (cd "$work" && IBSTATUS_SYSFS=$tree sh "$ours" "$@") >"$work/our.out" 2>&1; local orc=$?
    # Both name themselves by basename $0.
    sed -i 's/ibstatus-empty\|ibstatus-none/ibstatus/g' "$work/ref.out"
    if cmp -s "$work/ref.out" "$work/our.out" && [ $rrc = $orc ]; then
        pass=$((pass+1)); echo "ok   rc=$rrc: ibstatus$suffix $*"
    else
        fail=$((fail+1)); echo "FAIL rc=$rrc/$orc: ibstatus$suffix $*"
        diff "$work/ref.out" "$work/our.out" | head -10
    fi
}
check ""
check "" -h
check "" mlx5_0
check "" mlx5_0:1
check "" mlx5_0:2
check "" mlx5_0:7
check "" qib0
check "" mlx5_0:1 qib0:1
check "" mlx5_0 "" qib0
check "" nosuch
check "" nosuch:1
check -empty
check -none
echo "$pass passed, $fail failed"
[ $fail = 0 ]
