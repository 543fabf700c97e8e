#!/bin/bash
# pingpong.sh CASE: Debian's ibv_{rc,uc,ud,srq}_pingpong, a server and a
# client process on one simulated host, Debian's libibverbs + libmlx5.
# Both sides must exit 0 and print the byte count size * iters * 2.
#
# What -c (--chk) checks: after the run the server compares the first byte
# of every page of its receive buffer with the value the client wrote there
# (zero; the buffer starts as 0x7b) and prints "invalid data in page N" on a
# mismatch, without changing its exit status. So this test fails on that
# line. The check is coarse (one byte per page); the byte-exact checks are
# the verify/ program's.
. "$(dirname "$0")/lib.sh"

case=${1:?usage: pingpong.sh CASE}
prog="" args=() sargs=() cargs=() size="" iters=""

# the 2-device host: the server on mlx5_1, the client on mlx5_0
two_devices() {
	config two-devices <<-'EOF'
	device mlx5_0
	device mlx5_1
	EOF
}
# one RoCE (Ethernet) port: GID 0/1 link-local v1/v2, 2/3 IPv4-mapped v1/v2
roce() {
	config roce <<-'EOF'
	device mlx5_0
	link_layer eth
	mac 02:00:00:00:00:07
	ipv4 10.79.0.7
	EOF
}

case $case in
rc)           prog=ibv_rc_pingpong  args=(-g 0 -c -n 200) ;;
rc_s1)        prog=ibv_rc_pingpong  args=(-g 0 -c -s 1 -n 200) ;;
rc_s4096)     prog=ibv_rc_pingpong  args=(-g 0 -c -s 4096 -n 200) ;;
rc_s65536)    prog=ibv_rc_pingpong  args=(-g 0 -c -s 65536 -n 50) ;;
rc_events)    prog=ibv_rc_pingpong  args=(-g 0 -c -e -n 200) ;;
rc_mtu256)    prog=ibv_rc_pingpong  args=(-g 0 -c -m 256 -s 8192 -n 50) ;;
rc_mtu4096)   prog=ibv_rc_pingpong  args=(-g 0 -c -m 4096 -s 16384 -n 50) ;;
rc_rxdepth)   prog=ibv_rc_pingpong  args=(-g 0 -c -r 1 -n 100) ;;
rc_2dev)      prog=ibv_rc_pingpong  args=(-g 0 -c -n 100) sargs=(-d mlx5_1) cargs=(-d mlx5_0); two_devices ;;
rc_roce_g1)   prog=ibv_rc_pingpong  args=(-g 1 -c -n 100); roce ;;
rc_roce_g3)   prog=ibv_rc_pingpong  args=(-g 3 -c -e -n 100); roce ;;
uc)           prog=ibv_uc_pingpong  args=(-g 0 -c -n 200) ;;
uc_events)    prog=ibv_uc_pingpong  args=(-g 0 -c -e -s 1 -n 200) ;;
uc_2dev)      prog=ibv_uc_pingpong  args=(-g 0 -c -n 100) sargs=(-d mlx5_1) cargs=(-d mlx5_0); two_devices ;;
uc_roce)      prog=ibv_uc_pingpong  args=(-g 3 -c -m 512 -s 2048 -n 100); roce ;;
ud)           prog=ibv_ud_pingpong  args=(-g 0 -c -n 200) ;;
ud_events)    prog=ibv_ud_pingpong  args=(-g 0 -c -e -s 1 -n 200) ;;
ud_2dev)      prog=ibv_ud_pingpong  args=(-g 0 -c -s 1024 -n 100) sargs=(-d mlx5_1) cargs=(-d mlx5_0); two_devices ;;
ud_roce)      prog=ibv_ud_pingpong  args=(-g 1 -c -s 4096 -n 100); roce ;;
ud_s2048)     prog=ibv_ud_pingpong  args=(-g 0 -c -s 2048 -n 100) ;;
# srq (16 QPs) once lost the last ACK when the client exited right after
# its last CQE (the responder wrote the CQE before sending the ACK); fixed
# in engine.cpp (ACK first, and QP destroy lets queued packets leave).
srq)          prog=ibv_srq_pingpong args=(-g 0 -c -n 50) ;;
srq_events)   prog=ibv_srq_pingpong args=(-g 0 -c -e -q 4 -s 1 -n 50) ;;
srq_2dev)     prog=ibv_srq_pingpong args=(-g 0 -c -q 2 -n 50) sargs=(-d mlx5_1) cargs=(-d mlx5_0); two_devices ;;
srq_roce)     prog=ibv_srq_pingpong args=(-g 3 -c -q 4 -m 2048 -s 65536 -n 20); roce ;;
# on-demand paging: an MR that pins nothing (-o), the implicit MR over the
# whole address space with its pages prefetched (-O -P)
rc_odp)       prog=ibv_rc_pingpong  args=(-g 0 -c -o -n 100) ;;
rc_iodp)      prog=ibv_rc_pingpong  args=(-g 0 -c -O -P -n 100) ;;
srq_odp)      prog=ibv_srq_pingpong args=(-g 0 -c -o -q 2 -n 50) ;;
rc_odp_off|srq_odp_off) ;;
*) echo "pingpong.sh: unknown case $case" >&2; exit 2 ;;
esac

# -s and -n as given, else the programs' defaults: 4096, and 1024 for
# Debian's ibv_ud_pingpong (its --help says 2048, but the binary starts
# with 1024: objdump shows movl $0x400 into the size variable in main)
opt() {
	local want=$1 i
	shift
	for ((i = 1; i < $#; i++)); do
		if [ "${!i}" = "$want" ]; then
			i=$((i + 1))
			echo "${!i}"
			return
		fi
	done
}

case $case in
rc_odp_off|srq_odp_off)
	# A device without page faults (config "odp off": ibv_devinfo shows
	# general_odp_caps empty, rc_odp_caps NO SUPPORT), as a ConnectX whose
	# kernel has ODP off. The program must refuse --odp as it does on such
	# a device: its own message on stderr, exit status 1, before it listens.
	config odp-off <<-'EOF'
	device mlx5_0
	odp off
	EOF
	prog=ibv_${case%_odp_off}_pingpong
	need "$prog"
	sim odp "$prog" -g 0 --odp -p "$PORT"
	[ "$RC" -eq 1 ] || fail "$prog --odp: exit $RC, want 1"
	if [ "$case" = rc_odp_off ]; then
		msg="The device isn't ODP capable or does not support RC send and receive with ODP"
	else
		msg="The device isn't ODP capable or does not support RC send, receive and srq with ODP"
	fi
	expect "$W/odp.err" "^$msg\$" "$prog --odp stderr"
	expect_not "$W/odp.out" "." "$prog --odp stdout (must be empty)"
	finish
	;;
esac

need "$prog"
# the GIDs each side must print, from the configuration: IB GID 0 is
# fe80:: + the port GUID (the default node GUIDs 0xb8cef60300a0b000 and
# ...b010 of mlx5_0 and mlx5_1); RoCE GID 1 is fe80:: + the EUI-64 of MAC
# 02:00:00:00:00:07, GID 3 the IPv4-mapped 10.79.0.7
gid=$(opt -g "${args[@]}")
if [ -n "$CONFIG" ] && [ "$(basename "$CONFIG")" = roce.conf ]; then
	case $gid in
	1) sgid=fe80::ff:fe00:7 cgid=$sgid ;;
	3) sgid=::ffff:10.79.0.7 cgid=$sgid ;;
	esac
	lid=0x0000
else
	sgid=fe80::b8ce:f603:a0:b000 cgid=$sgid lid=0x0001
	if [ "${sargs[*]}" = "-d mlx5_1" ]; then
		sgid=fe80::b8ce:f603:a0:b010
		# default LIDs are handed out in device order: mlx5_1 has 2
		slid=0x0002
	fi
fi
slid=${slid:-$lid}
size=$(opt -s "${args[@]}")
iters=$(opt -n "${args[@]}")
if [ -z "$size" ]; then
	size=4096
	[ "$prog" = ibv_ud_pingpong ] && size=1024
fi
SRV=("$prog" "${args[@]}" "${sargs[@]}" -p "$PORT")
CLI=("$prog" "${args[@]}" "${cargs[@]}" -p "$PORT" localhost)
if pair pp; then
	# srq_pingpong too prints size * iters * 2, whatever -q is
	bytes=$((size * iters * 2))
	for side in server client; do
		f=$W/pp.$side.out
		expect "$f" "^$bytes bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec\$" "$side byte count ($bytes)"
		expect "$f" "^$iters iters in [0-9.]+ seconds = [0-9.]+ usec/iter\$" "$side iteration count"
		if [ $side = server ]; then mine=$sgid peer=$cgid ml=$slid pl=$lid; else mine=$cgid peer=$sgid ml=$lid pl=$slid; fi
		# (ud_pingpong prints "PSN 0x...: GID" on its local line)
		expect "$f" "^  local address:  LID $ml, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}[:,] GID $mine\$" "$side local address line"
		expect "$f" "^  remote address: LID $pl, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID $peer\$" "$side remote address line"
		expect_not "$f" "invalid data in page" "$side buffer check (-c)"
		expect_not "$W/pp.$side.err" "." "$side stderr (must be empty)"
	done
fi
finish
