#!/bin/bash
# devinfo_same.sh CASE: ibv_devinfo -v prints the same on both stacks. Debian's
# ibv_devinfo runs over the emulator on Debian's libibverbs + libmlx5, then
# on ours (UVSIM_OURS_LIB: our libibverbs and mlx5 provider), then our own
# ibv_devinfo (UVSIM_OURS_BIN) on ours; the three outputs, and the plain
# listing and ibv_devices, must be identical byte for byte.
. "$(dirname "$0")/lib.sh"

case=${1:?usage: devinfo_same.sh CASE}
[ -d "$OURS_LIB" ] || { echo "FAIL: devinfo_same.sh needs UVSIM_OURS_LIB"; exit 1; }
OURS_BIN=${UVSIM_OURS_BIN:?UVSIM_OURS_BIN must name build/bin}
need ibv_devices ibv_devinfo

case $case in
default) ;;
multi)
	# Two devices, one with two ports (one down), one a ConnectX-7 on
	# Ethernet with an IPv4 address, and smaller limits on the first.
	config multi <<-'EOF2'
	device mlx5_0
	node_guid 0x0002c90300005000
	ports 2
	max_qp 1000
	max_sge 16
	max_srq_wr 511
	atomics off
	port 1 lid 0x21 port_guid 0x0002c90300005001
	port 2 state down mtu 2048
	device mlx5_1
	part_id 4129
	fw_ver 28.39.1002
	board_id MT_0000000838
	node_guid 0x946dae0300112200
	link_layer eth
	mac 02:11:22:33:44:55
	ipv4 192.168.7.9
	EOF2
	;;
*) echo "devinfo_same.sh: unknown case $case" >&2; exit 2 ;;
esac

# run_all TAG ARGS...: the three runs of one command line.
run_all() {
	local tag=$1
	shift
	STACK=debian BIN=${UVSIM_REF_BIN:-/usr/bin}
	sim "$tag.ref" "$@"
	local rrc=$RC
	STACK=ours
	sim "$tag.ours" "$@"
	local orc=$RC
	BIN=$OURS_BIN
	sim "$tag.own" "$@"
	local wrc=$RC
	BIN=${UVSIM_REF_BIN:-/usr/bin}
	[ "$rrc" = "$orc" ] && [ "$rrc" = "$wrc" ] || fail "$*: exit $rrc (Debian), $orc (Debian's program, our stack), $wrc (ours)"
	local s t
	for s in ours own; do
		for t in out err; do
			if ! cmp -s "$W/$tag.ref.$t" "$W/$tag.$s.$t"; then
				fail "$* std$t: $tag.$s differs from Debian's"
				diff -u "$W/$tag.ref.$t" "$W/$tag.$s.$t" | head -n 20
			fi
		done
	done
}

run_all devices ibv_devices
run_all plain ibv_devinfo
run_all verbose ibv_devinfo -v
run_all list ibv_devinfo -l
run_all port1 ibv_devinfo -v -i 1
run_all nodev ibv_devinfo -d mlx5_7
finish
