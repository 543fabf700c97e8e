#!/bin/bash
# rsocket_compat.sh: Debian's rsocket programs (rstream, riostream, udpong
# from rdmacm-utils) on our librdmacm and on Debian's, each pair of sides:
# the reference with itself (baseline), ours with ours, our server with a
# reference client and the other way round. Proves the two rsocket
# implementations speak the same protocol (connection data, credits,
# receive-buffer and iomap announcements, datagram QPN exchange).
#
#   rsocket_compat.sh OUR_LIBDIR [REF_LIBDIR]
#
# REF_LIBDIR defaults to /usr/lib/<multiarch>. When the baseline fails (the
# reference cannot do it on this device: on rxe its datagram rsockets fail
# in rconnect; now and then its rstream -T a client sees POLLHUP before the
# last data and exits 16), ours with ours is still required and the mixed
# pairs are only reported. A client refused while its server still starts
# up is run again (a listening rsocket cannot be seen from outside).
# Exits 0 when every counted case passes, 1 otherwise, 77 when the
# programs or an RDMA device are missing.
set -u

ours=${1:?our library directory}
ref=${2:-/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)}
host=${RSOCKET_TEST_ADDR:-10.78.0.1}
limit=${RSOCKET_COMPAT_TIMEOUT:-40}

for p in rstream riostream udpong; do
	[ -x /usr/bin/$p ] || { echo "/usr/bin/$p missing: skipped"; exit 77; }
done
[ -e /dev/infiniband/rdma_cm ] || { echo "no RDMA device: skipped"; exit 77; }

work=$(mktemp -d /tmp/rscompat.XXXXXX)
failures=0
port=7600

# one SIDE_SERVER SIDE_CLIENT PROG "SERVER ARGS" "CLIENT ARGS": 0 if both
# ends succeed (udpong's server never ends: there the client's word counts).
one() {
	local sl=$1 cl=$2 prog=$3 sargs=$4 cargs=$5
	port=$((port + 1))
	# shellcheck disable=SC2086
	LD_LIBRARY_PATH=$sl timeout $limit /usr/bin/$prog -p $port $sargs >"$work/srv" 2>&1 &
	local sp=$!
	# A listening rsocket cannot be seen from outside: a client that is
	# refused quickly while the server still starts up tries again.
	local attempt crc start
	sleep 1
	for attempt in 1 2 3 4 5 6; do
		start=$SECONDS
		# shellcheck disable=SC2086
		LD_LIBRARY_PATH=$cl timeout $limit /usr/bin/$prog -p $port -s "$host" $cargs >"$work/cli" 2>&1
		crc=$?
		[ $crc = 0 ] && break
		kill -0 $sp 2>/dev/null || break
		[ $((SECONDS - start)) -le 3 ] || break
		grep -Eq 'Connection refused|^rpoll:|^rconnect:' "$work/cli" || break
		sleep 1
	done
	[ "$prog" = udpong ] && kill $sp 2>/dev/null
	wait $sp
	local src=$?
	[ "$prog" = udpong ] && src=0
	if [ $crc != 0 ] || [ $src != 0 ]; then
		{ echo "  client rc=$crc:"; tail -3 "$work/cli"; echo "  server rc=$src:"; tail -3 "$work/srv"; } >"$work/why"
		return 1
	fi
	return 0
}

case_() {
	local name=$1 prog=$2 sargs=$3 cargs=$4 counted=all
	if ! one "$ref" "$ref" "$prog" "$sargs" "$cargs"; then
		# Ours must still work with itself; pairs with the reference
		# are shown for information only.
		echo "note: $name: the reference fails with itself here:"
		sed 's/^/    /' "$work/why"
		counted=ours
	fi
	local pair
	for pair in "$ours $ours ours/ours" "$ours $ref ours-server/ref-client" "$ref $ours ref-server/ours-client"; do
		# shellcheck disable=SC2086
		set -- $pair
		if one "$1" "$2" "$prog" "$sargs" "$cargs"; then
			echo "ok: $name $3"
		elif [ $counted = ours ] && [ "$3" != ours/ours ]; then
			echo "info: $name $3 fails (the reference side fails on its own)"
		else
			echo "FAIL: $name $3"
			cat "$work/why"
			failures=$((failures + 1))
		fi
	done
}

case_ "rstream verify 1M x20" rstream "-T v -S 1000000 -C 20" "-T v -S 1000000 -C 20"
case_ "rstream 64B x2000" rstream "-S 64 -C 2000" "-S 64 -C 2000"
case_ "rstream blocking" rstream "-T b -T v -S 65536 -C 100" "-T b -T v -S 65536 -C 100"
case_ "rstream nonblocking" rstream "-T n -T v -S 300000 -C 20" "-T n -T v -S 300000 -C 20"
case_ "rstream async (rpoll)" rstream "-T a -T v -S 65536 -C 100" "-T a -T v -S 65536 -C 100"
case_ "rstream keepalive" rstream "-k 1 -S 4096 -C 50" "-k 1 -S 4096 -C 50"
case_ "riostream verify" riostream "-T v -S 65536 -C 100" "-T v -S 65536 -C 100"
case_ "riostream nonblocking" riostream "-T n -T v -S 100000 -C 20" "-T n -T v -S 100000 -C 20"
case_ "udpong" udpong "-b $host -C 100" "-C 100"
case_ "udpong echo" udpong "-b $host -T e -C 100" "-T e -C 100"

rm -rf "$work"
if [ $failures -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "all passed"
exit 0
