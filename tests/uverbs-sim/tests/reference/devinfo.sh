#!/bin/bash
# devinfo.sh CASE: Debian's ibv_devices and ibv_devinfo (plain, -v, -d, -i,
# -l) over the emulator with Debian's libibverbs + libmlx5. The expected
# values are written from the configuration each case gives the emulator
# (or, for "default", from the defaults the emulator's README documents),
# not from a saved copy of an earlier run.
. "$(dirname "$0")/lib.sh"

case=${1:?usage: devinfo.sh CASE}
need ibv_devices ibv_devinfo

# "0x0002c90300abcd00" -> "0002:c903:00ab:cd00" (ibv_devinfo) and
# "0002c90300abcd00" (ibv_devices)
guid_colon() { local h; h=$(printf '%016x' "$1"); echo "${h:0:4}:${h:4:4}:${h:8:4}:${h:12:4}"; }
guid_plain() { printf '%016x' "$1"; }
# regex-quote a literal
rq() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g'; }

# section FILE DEV [PORT]: the lines of one device (and one port of it)
section() {
	awk -v d="$2" -v p="${3:-}" '
		/^hca_id:/ { in_dev = ($2 == d); in_port = 0 }
		in_dev && /^[ \t]+port:/ { in_port = ($2 == p) }
		in_dev && (p == "" || in_port) { print }' "$1"
}

# field FILE LABEL VALUE [WHAT]: a "LABEL: VALUE" line, any indentation
field() {
	expect "$1" "^[[:space:]]+$(rq "$2"):[[:space:]]+$(rq "$3")\$" "${4:-$(basename "$1")} $2"
}

# device_fields FILE NAME GUID PART [FW BOARD PORTS]
device_fields() {
	local f=$1
	expect "$f" "^hca_id:[[:space:]]+$(rq "$2")\$" "$(basename "$f") hca_id"
	field "$f" transport "InfiniBand (0)"
	field "$f" fw_ver "${5:-16.35.2000}"
	field "$f" node_guid "$(guid_colon "$3")"
	field "$f" sys_image_guid "$(guid_colon "$3")"
	field "$f" vendor_id 0x02c9
	field "$f" vendor_part_id "$4"
	field "$f" board_id "${6:-MT_0000000008}"
	field "$f" phys_port_cnt "${7:-1}"
}

# ib_port FILE STATE LID SM_LID [MTU]: an InfiniBand port's lines
ib_port() {
	field "$1" state "$2"
	field "$1" max_mtu "4096 (5)"
	field "$1" active_mtu "${5:-4096 (5)}"
	field "$1" sm_lid "$4"
	field "$1" port_lid "$3"
	field "$1" port_lmc 0x00
	field "$1" link_layer InfiniBand
}

# run TAG ARGS...: ibv_devinfo, must exit 0
devinfo() {
	local tag=$1
	shift
	sim "$tag" ibv_devinfo "$@"
	[ "$RC" -eq 0 ] || fail "ibv_devinfo $*: exit $RC"
}

devices() { # ibv_devices lists NAME GUID pairs, in this order
	sim devices ibv_devices
	[ "$RC" -eq 0 ] || fail "ibv_devices: exit $RC"
	expect "$W/devices.out" "^ +device +	? +node GUID\$" "ibv_devices header"
	local want="" n=0
	while [ $# -gt 0 ]; do
		want="$want$1 $(guid_plain "$2")"$'\n'
		n=$((n + 1))
		shift 2
	done
	local got
	got=$(awk 'NR > 2 { print $1, $2 }' "$W/devices.out")
	[ "$got"$'\n' = "$want" ] || fail "ibv_devices lists '$(echo $got)', want '$(echo $want)'"
}

case $case in
default)
	# No configuration: the emulator's documented default, one ConnectX-5
	# (part 4119) mlx5_0, node GUID 0xb8cef60300a0b000, one active 4x EDR
	# InfiniBand port with LID 1, SM LID 1, MTU 4096, port GUID = node GUID.
	devices mlx5_0 0xb8cef60300a0b000
	devinfo plain
	device_fields "$W/plain.out" mlx5_0 0xb8cef60300a0b000 4119
	ib_port "$W/plain.out" "PORT_ACTIVE (4)" 1 1
	devinfo verbose -v
	f=$W/verbose.out
	device_fields "$f" mlx5_0 0xb8cef60300a0b000 4119
	field "$f" max_qp 262144
	field "$f" max_qp_wr 32768
	field "$f" max_sge 30
	field "$f" max_cqe 4194303
	field "$f" max_srq_wr 32767
	field "$f" max_qp_rd_atom 16
	field "$f" atomic_cap "ATOMIC_HCA (1)"
	field "$f" active_width "4X (2)"
	field "$f" active_speed "25.0 Gbps (32)"
	field "$f" phys_state "LINK_UP (5)"
	field "$f" "GID[  0]" "fe80:0000:0000:0000:b8ce:f603:00a0:b000"
	# no ODP on the emulated device (the pingpongs' --odp cases rely on it)
	expect "$f" "^[[:space:]]+rc_odp_caps:\$" "-v rc_odp_caps"
	devinfo list -l
	expect "$W/list.out" "^1 HCA found:\$" "-l count"
	expect "$W/list.out" "^[[:space:]]+mlx5_0\$" "-l name"
	;;
two_devices)
	config two-devices <<-'EOF'
	device mlx5_0
	node_guid 0x0002c90300001000
	lid 7
	device mlx5_1
	node_guid 0x0002c90300002000
	lid 9
	sm_lid 7
	EOF
	devices mlx5_0 0x0002c90300001000 mlx5_1 0x0002c90300002000
	devinfo plain
	[ "$(grep -c '^hca_id:' "$W/plain.out")" -eq 2 ] || fail "ibv_devinfo: want 2 hca_id blocks"
	section "$W/plain.out" mlx5_0 >"$W/dev0"
	section "$W/plain.out" mlx5_1 >"$W/dev1"
	device_fields "$W/dev0" mlx5_0 0x0002c90300001000 4119
	ib_port "$W/dev0" "PORT_ACTIVE (4)" 7 1
	device_fields "$W/dev1" mlx5_1 0x0002c90300002000 4119
	ib_port "$W/dev1" "PORT_ACTIVE (4)" 9 7
	devinfo only1 -d mlx5_1
	[ "$(grep -c '^hca_id:' "$W/only1.out")" -eq 1 ] || fail "ibv_devinfo -d mlx5_1: want 1 hca_id block"
	device_fields "$W/only1.out" mlx5_1 0x0002c90300002000 4119
	devinfo v1 -v -d mlx5_1
	field "$W/v1.out" "GID[  0]" "fe80:0000:0000:0000:0002:c903:0000:2000"
	devinfo list -l
	expect_text "$W/list.out" <<-EOF
	2 HCAs found:
	$(printf '\tmlx5_0')
	$(printf '\tmlx5_1')
	EOF
	# an unknown device: Debian's message and exit status 255 (-1)
	sim nodev ibv_devinfo -d mlx5_7
	[ "$RC" -eq 255 ] || fail "ibv_devinfo -d mlx5_7: exit $RC, want 255"
	expect "$W/nodev.err" "^IB device 'mlx5_7' wasn't found\$" "ibv_devinfo -d mlx5_7 stderr"
	;;
two_ports)
	config two-ports <<-'EOF'
	device mlx5_0
	node_guid 0x0002c90300003000
	ports 2
	port 1 lid 0x11 port_guid 0x0002c90300003001
	port 2 lid 0x12 port_guid 0x0002c90300003002 mtu 2048
	EOF
	devices mlx5_0 0x0002c90300003000
	devinfo plain
	device_fields "$W/plain.out" mlx5_0 0x0002c90300003000 4119 16.35.2000 MT_0000000008 2
	section "$W/plain.out" mlx5_0 1 >"$W/p1"
	section "$W/plain.out" mlx5_0 2 >"$W/p2"
	ib_port "$W/p1" "PORT_ACTIVE (4)" 17 1
	ib_port "$W/p2" "PORT_ACTIVE (4)" 18 1 "2048 (4)"
	devinfo port2 -i 2
	expect_not "$W/port2.out" "^[[:space:]]+port:[[:space:]]+1\$" "-i 2 shows port 1"
	section "$W/port2.out" mlx5_0 2 >"$W/i2"
	ib_port "$W/i2" "PORT_ACTIVE (4)" 18 1 "2048 (4)"
	devinfo verbose -v
	section "$W/verbose.out" mlx5_0 1 >"$W/v1"
	section "$W/verbose.out" mlx5_0 2 >"$W/v2"
	field "$W/v1" "GID[  0]" "fe80:0000:0000:0000:0002:c903:0000:3001"
	field "$W/v2" "GID[  0]" "fe80:0000:0000:0000:0002:c903:0000:3002"
	# a port the device does not have: Debian's message, exit status 4
	sim noport ibv_devinfo -i 3
	[ "$RC" -ne 0 ] || fail "ibv_devinfo -i 3: exit 0 on a 2-port device"
	expect "$W/noport.err" "^Invalid port requested for device\$" "ibv_devinfo -i 3 stderr"
	;;
roce)
	# MAC 02:11:22:33:44:55 -> modified EUI-64 0011:22ff:fe33:4455 (the
	# universal/local bit 0x02 of the first byte flipped, ff:fe in the
	# middle); IPv4 192.168.7.9 -> ::ffff:c0a8:0709. RoCE ports list GID 0
	# and 1 (link-local, v1 and v2) and 2 and 3 (IPv4-mapped, v1 and v2).
	config roce <<-'EOF'
	device mlx5_0
	part_id 4125
	node_guid 0x0c42a10300b0c000
	link_layer eth
	mac 02:11:22:33:44:55
	ipv4 192.168.7.9
	EOF
	devices mlx5_0 0x0c42a10300b0c000
	devinfo plain
	f=$W/plain.out
	device_fields "$f" mlx5_0 0x0c42a10300b0c000 4125
	field "$f" state "PORT_ACTIVE (4)"
	field "$f" sm_lid 0
	field "$f" port_lid 0
	field "$f" link_layer Ethernet
	devinfo verbose -v
	f=$W/verbose.out
	field "$f" "GID[  0]" "fe80:0000:0000:0000:0011:22ff:fe33:4455, RoCE v1"
	field "$f" "GID[  1]" "fe80::11:22ff:fe33:4455, RoCE v2"
	field "$f" "GID[  2]" "0000:0000:0000:0000:0000:ffff:c0a8:0709, RoCE v1"
	field "$f" "GID[  3]" "::ffff:192.168.7.9, RoCE v2"
	[ "$(grep -c 'GID\[' "$f")" -eq 4 ] || fail "-v: want 4 GIDs on the RoCE port"
	;;
cx6|cx7)
	# ConnectX-6 (4123) / ConnectX-7 (4129): Debian's libmlx5 must match
	# the PCI id (else ibv_devices lists nothing) and report the part.
	if [ "$case" = cx6 ]; then part=4123 fw=20.36.1010 board=MT_0000000223; else part=4129 fw=28.39.1002 board=MT_0000000838; fi
	config "$case" <<-EOF
	device mlx5_0
	part_id $part
	fw_ver $fw
	board_id $board
	node_guid 0x946dae0300112200
	pci 0000:3b:00.0
	EOF
	devices mlx5_0 0x946dae0300112200
	devinfo plain
	device_fields "$W/plain.out" mlx5_0 0x946dae0300112200 "$part" "$fw" "$board"
	ib_port "$W/plain.out" "PORT_ACTIVE (4)" 1 1
	;;
caps)
	config caps <<-'EOF'
	device mlx5_0
	max_qp 1000
	max_qp_wr 1024
	max_sge 16
	max_cq 512
	max_cqe 4095
	max_mr 2048
	max_pd 64
	max_srq 32
	max_srq_wr 511
	max_srq_sge 8
	max_qp_rd_atom 4
	max_ah 100
	atomics off
	EOF
	devinfo verbose -v
	f=$W/verbose.out
	field "$f" max_qp 1000
	field "$f" max_qp_wr 1024
	field "$f" max_sge 16
	field "$f" max_cq 512
	field "$f" max_cqe 4095
	field "$f" max_mr 2048
	field "$f" max_pd 64
	field "$f" max_srq 32
	field "$f" max_srq_wr 511
	field "$f" max_srq_sge 8
	field "$f" max_qp_rd_atom 4
	field "$f" max_ah 100
	field "$f" atomic_cap "ATOMIC_NONE (0)"
	;;
port_down)
	config port-down <<-'EOF'
	device mlx5_0
	node_guid 0x0002c90300004000
	port 1 state down
	EOF
	devinfo plain
	device_fields "$W/plain.out" mlx5_0 0x0002c90300004000 4119
	field "$W/plain.out" state "PORT_DOWN (1)"
	field "$W/plain.out" link_layer InfiniBand
	devinfo verbose -v
	expect_not "$W/verbose.out" "LINK_UP" "-v phys_state of a down port"
	;;
*) echo "devinfo.sh: unknown case $case" >&2; exit 2 ;;
esac
finish
