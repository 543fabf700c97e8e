#!/bin/bash
# libfabric.sh CASE: Debian's libfabric (fi_pingpong of libfabric-bin) over
# its verbs provider on the emulated ConnectX: MSG endpoints (connected
# through rdma_cm), DGRAM (UD), and the RDM utility providers over them
# (ofi_rxm over MSG, ofi_rxd over DGRAM). Both sides must exit 0 and print
# their result row.
#
# fi_pingpong reaches its peer for its control messages over TCP at the
# same address as the fabric's, so the port's address is 127.0.0.1 here:
# the emulated rdma_cm resolves it to the port, TCP to the loopback.
. "$(dirname "$0")/lib.sh"

case=${1:?usage: libfabric.sh CASE}

link=eth
case $case in
msg) prov=verbs ep=msg ;;
msg_ib) prov=verbs ep=msg link=ib ;;
dgram) prov=verbs ep=dgram ;;
rxm) prov="verbs;ofi_rxm" ep=rdm ;;
rxd) prov="verbs;ofi_rxd" ep=rdm ;;
*)
	echo "libfabric.sh: unknown case $case" >&2
	exit 2
	;;
esac

config lo <<EOF2
device mlx5_0
link_layer $link
ipv4 127.0.0.1
EOF2

need fi_pingpong
SRV=(fi_pingpong -p "$prov" -e "$ep" -I 100 -S 1024 -B "$PORT")
CLI=(fi_pingpong -p "$prov" -e "$ep" -I 100 -S 1024 -P "$PORT" 127.0.0.1)
if pair fp; then
	for side in server client; do
		expect "$W/fp.$side.out" '^1k +100 +=100 +200k +[0-9.]+s ' "$side result row"
	done
fi
finish
