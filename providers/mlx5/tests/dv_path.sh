#!/bin/bash
# dv_path.sh RUN OURS REFERENCE OURS_LIB WORK: mlx5 direct verbs (dv_path.c)
# of our libibverbs + libmlx5 against Debian's, on the emulated ConnectX:
# the capabilities, mlx5dv_open_device, allocators, the clock page,
# mlx5dv_init_obj, creation with mlx5 attributes, parent domains, traffic
# through the rings themselves and through raw WQEs, compressed CQEs read
# from the ring, on InfiniBand and RoCE and under the BlueFlame knobs, with
# UAR objects (what a current kernel gives) and with static UARs.
# Beyond being identical, the reference's answers must show the emulator
# doing its part: the clock pages convert, every message arrived.
"$(dirname "$0")/twin.sh" "$@" <<'CASES' || exit $?
-
roce.conf
- MLX5_CQE_SIZE=128
- MLX5_SHUT_UP_BF=1
- MLX5_SINGLE_THREADED=1
nodyn.conf
static.conf
static.conf MLX5_SHUT_UP_BF=1
CASES
work=$5
fail=0
for f in "$work"/*.ref; do
	grep -q 'get_clock_info: ok' "$f" || { echo "EMULATOR $f: no clock-info page"; fail=1; }
	grep -q 'within a second of CLOCK_MONOTONIC yes' "$f" || { echo "EMULATOR $f: the device clock does not convert"; fail=1; }
	# 5 messages through the program's own rings, 6 through raw WQEs and ibv_wr_send
	[ "$(grep -c 'data arrived' "$f")" = 11 ] || { echo "EMULATOR $f: a message through the rings was lost"; fail=1; }
	grep -q 'in allocated memory: yes' "$f" || { echo "EMULATOR $f: the allocators were not used"; fail=1; }
	# RC 64- and 128-byte CQEs, UD, RC on one CQ for both sides: the device compressed, the program rebuilt every receive
	[ "$(grep -c 'every receive in order, compressed session seen: yes' "$f")" = 4 ] ||
		{ echo "EMULATOR $f: no compressed session, or a receive rebuilt wrong"; fail=1; }
	# every configuration but the one without dynamic UARs (the 6th) has thread domains
	case $f in
	*/6.ref) grep -q 'alloc_td 0: EINVAL' "$f" || { echo "EMULATOR $f: thread domains without dynamic UARs"; fail=1; } ;;
	*) grep -q 'payload arrived' "$f" || { echo "EMULATOR $f: no traffic through a thread domain"; fail=1; } ;;
	esac
done
exit $fail
