#!/bin/bash
# xsrq_pingpong.sh CASE: Debian's ibv_xsrq_pingpong (XRC: send QPs of type
# XRC_SEND, receive QPs of type XRC_RECV, XRC SRQs in a domain opened on
# /tmp/xrc_domain), a server and a client process on one simulated host,
# Debian's libibverbs + libmlx5. Both sides must exit 0 and print their
# local and remote lines (LID, the two QPNs, PSN, the SRQ number, GID) and
# "success"; each side's remote line must be the other side's local line.
# clients2: a server for two clients (-c 2), the clients two more
# processes; all three open the domain on /tmp/xrc_domain, so the domain is
# one and the server's sends reach each client's SRQs through the other
# client's receive QP too (an XRC target QP of one process feeding an XRC
# SRQ of another).
. "$(dirname "$0")/lib.sh"

case=${1:?usage: xsrq_pingpong.sh CASE}
args=() sgid="::" lid=0001
case $case in
default) ;;
s1)      args=(-s 1 -n 20) ;;
big)     args=(-s 65536 -m 1024 -n 10) ;;
events)  args=(-e -n 20) ;;
gid)     args=(-g 0) sgid=fe80::b8ce:f603:a0:b000 ;;
clients2) args=(-s 100 -n 10) ;;
roce)
	args=(-g 3 -n 10) sgid=::ffff:10.79.0.7 lid=0000
	config roce <<-'EOF'
	device mlx5_0
	link_layer eth
	mac 02:00:00:00:00:07
	ipv4 10.79.0.7
	EOF
	;;
*) echo "xsrq_pingpong.sh: unknown case $case" >&2; exit 2 ;;
esac

need ibv_xsrq_pingpong
line="LID $lid, QPN RECV [0-9a-f]{6} SEND [0-9a-f]{6}, PSN [0-9a-f]{6}, SRQN [0-9a-f]{6}, GID $sgid"

if [ "$case" = clients2 ]; then
	SHOW+=(pp.server pp.client1)
	(sim pp.server ibv_xsrq_pingpong "${args[@]}" -c 2 -p "$PORT"; exit "$RC") &
	spid=$!
	for i in $(seq 1 200); do
		listening "$PORT" && break
		sleep 0.05
	done
	(sim pp.client1 ibv_xsrq_pingpong "${args[@]}" -p "$PORT" localhost; exit "$RC") &
	c1pid=$!
	sim pp.client2 ibv_xsrq_pingpong "${args[@]}" -p "$PORT" localhost
	c2rc=$RC
	wait "$c1pid"
	c1rc=$?
	wait "$spid"
	src=$?
	[ "$src" -eq 0 ] && [ "$c1rc" -eq 0 ] && [ "$c2rc" -eq 0 ] ||
		fail "exit status: server $src, clients $c1rc and $c2rc (want 0)"
	# the server: one local and one remote line per client
	[ "$(grep -Ec "^   local: $line\$" "$W/pp.server.out")" -eq 2 ] || fail "server: not two local lines"
	[ "$(grep -Ec "^  remote: $line\$" "$W/pp.server.out")" -eq 2 ] || fail "server: not two remote lines"
	for side in server client1 client2; do
		expect "$W/pp.$side.out" "^success\$" "$side success line"
		expect_not "$W/pp.$side.err" "." "$side stderr (must be empty)"
	done
	# requests crossed from one client's receive QP to the other's SRQ
	grep -q "for XRC SRQ .* handed to its process" "$W/pp.client1.trace" "$W/pp.client2.trace" ||
		fail "no request went from one client's receive QP to the other client's SRQ"
	grep -q "XRC request for SRQ .* no such SRQ" "$W/pp.client1.trace" "$W/pp.client2.trace" &&
		fail "a request for another process's SRQ found no SRQ"
	finish
fi

SRV=(ibv_xsrq_pingpong "${args[@]}" -p "$PORT")
CLI=(ibv_xsrq_pingpong "${args[@]}" -p "$PORT" localhost)
if pair pp; then
	for side in server client; do
		f=$W/pp.$side.out
		expect "$f" "^   local: $line\$" "$side local line"
		expect "$f" "^  remote: $line\$" "$side remote line"
		expect "$f" "^success\$" "$side success line"
		expect_not "$W/pp.$side.err" "." "$side stderr (must be empty)"
	done
	# what each side told the other is what the other saw
	s_local=$(sed -n 's/^   local: //p' "$W/pp.server.out")
	c_remote=$(sed -n 's/^  remote: //p' "$W/pp.client.out")
	c_local=$(sed -n 's/^   local: //p' "$W/pp.client.out")
	s_remote=$(sed -n 's/^  remote: //p' "$W/pp.server.out")
	[ "$s_local" = "$c_remote" ] || fail "client's remote line '$c_remote' is not the server's local '$s_local'"
	[ "$c_local" = "$s_remote" ] || fail "server's remote line '$s_remote' is not the client's local '$c_local'"
	# the data path was XRC: the receives went to an XRC SRQ's CQ, every
	# send WQE carried the XRC segment (ds 3 for one data segment)
	grep -q "create_srq srqn .* xrc" "$W/pp.server.trace" || fail "server trace: no XRC SRQ created"
	grep -q "(XRC target)" "$W/pp.server.trace" || fail "server trace: no XRC target QP created"
	grep -Eq "^.* WQE qpn 0x[0-9a-f]+ idx [0-9]+ opcode 0x0a ds 3 " "$W/pp.client.trace" ||
		fail "client trace: no XRC send WQE (ctrl | xrc | data)"
fi
finish
