#!/bin/bash
# ndd_vm.sh RDMA_NDD (in the soft-RoCE VM): our rdma-ndd and Debian's, one
# after the other on rxe0, for three formats: each must bring rxe0's node
# description, byte for byte, to the same text at start and again after a
# host name change. The host name and description are put back after.
set -u
ours=$1
ref=/usr/sbin/rdma-ndd
[ -x "$ref" ] || { echo "SKIP: Debian's rdma-ndd is not installed"; exit 77; }
nd=/sys/class/infiniband/rxe0/node_desc
[ -w "$nd" ] || { echo "SKIP: no writable $nd"; exit 77; }
old_host=$(hostname)
old_desc=$(cat "$nd")
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; hostname "$old_host" 2>/dev/null; printf %s "$old_desc" >"$nd"' EXIT
# exact bytes (a trailing newline written by one side would show)
bytes() { od -An -c "$nd" | tr -s ' \n' ' '; }
wait_for() { # expected text: up to 10 s
	local want i
	want=$(printf '%s\n' "$1" | od -An -c | tr -s ' \n' ' ')
	for i in $(seq 100); do
		[ "$(bytes)" = "$want" ] && return 0
		sleep 0.1
	done
	return 1
}
fail=0
for fmt in "" "%d@%h" "%h"; do
	for side in ref ours; do
		[ $side = ref ] && bin=$ref || bin=$ours
		printf reset >"$nd"
		hostname "vm-first.example"
		case $fmt in
			"") want1="vm-first rxe0" want2="vm-second rxe0" ;;
			"%d@%h") want1="rxe0@vm-first" want2="rxe0@vm-second" ;;
			"%h") want1="vm-first" want2="vm-second" ;;
		esac
		RDMA_NDD_ND_FORMAT=$fmt "$bin" -f >/dev/null 2>&1 &
		pid=$!
		if wait_for "$want1"; then r1=ok; else r1="got '$(cat "$nd")'"; fi
		hostname "vm-second.example"
		if wait_for "$want2"; then r2=ok; else r2="got '$(cat "$nd")'"; fi
		kill "$pid"; wait "$pid" 2>/dev/null; pid=
		echo "$side format '${fmt:-(default)}': at start $r1, after the host name change $r2"
		declare "res_$side=$r1 $r2"
	done
	# shellcheck disable=SC2154
	if [ "$res_ours" != "ok ok" ]; then
		echo "FAIL: ours did not set '$want1' / '$want2'"; fail=1
	elif [ "$res_ref" != "ok ok" ]; then
		echo "note: Debian's did not either ($res_ref): compare by hand"
		fail=1
	fi
done
exit $fail
