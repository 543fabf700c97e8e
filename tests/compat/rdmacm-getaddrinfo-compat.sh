#!/bin/bash
# rdmacm-getaddrinfo-compat.sh REF_PRINTER OUR_PRINTER: rdma_getaddrinfo()
# on Debian's librdmacm and on ours, through the same printing program
# (librdmacm/tests/getaddrinfo_print.c built against each), must answer the
# same for every hint combination below. Then with a stand-in ibacm on its
# socket (/run/ibacm.sock, librdmacm/tests/fake_ibacm.py): both libraries
# must send byte-identical resolve requests, and ours must return the path
# record it answers with. (Debian's librdmacm crashes on that answer when the
# caller names no source address; we do not compare its output there.)
# Run as root in the VM (it owns /run). Exits 77 when the reference printer
# was not built.
set -u
ref=$1 ours=$2
[ -x "$ref" ] || { echo "SKIP: no reference build (librdmacm-dev missing)"; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
fail=0

check() {  # name: compare ref.out and ours.out
    if diff -u "$work/ref.out" "$work/ours.out" > "$work/diff"; then
        echo "same  $1"
    else
        echo "DIFF  $1"; sed 's/^/      /' "$work/diff"; fail=1
    fi
}

cases=("10.78.0.1 7471" "10.78.0.1 7471 passive" "10.78.0.1 7471 udp" "10.78.0.1 7471 noroute"
       "10.78.0.1 7471 numeric" "10.78.0.1 7471 family" "::1 7471" "'' 7471 passive"
       "not-an-address 1 numeric" "10.78.0.1 no-such-service"
       # No node and no service: the hints are the answer (or EINVAL
       # without hints, checked before any device is looked for).
       "'' '' nohints" "'' ''" "'' '' passive numeric udp ud" "'' '' noroute family"
       "'' '' src=10.78.0.1" "'' '' dst=10.78.0.1" "'' '' passive src=10.78.0.1 dst=10.78.0.1"
       "'' '' ud" "'' 7471 passive src=10.78.0.1" "10.78.0.1 7471 src=10.78.0.1")
for c in "${cases[@]}"; do
    eval "set -- $c"
    timeout 20 "$ref" "$@" > "$work/ref.out" 2>&1; echo "exit $?" >> "$work/ref.out"
    timeout 20 "$ours" "$@" > "$work/ours.out" 2>&1; echo "exit $?" >> "$work/ours.out"
    check "rdma_getaddrinfo $c"
done

# The stand-in ibacm; python starts slowly under TCG.
python3 -u "$here/librdmacm/tests/fake_ibacm.py" /run/ibacm.sock "$work/acm.log" > "$work/acm.ready" 2>&1 &
acm=$!
for _ in $(seq 60); do [ -s "$work/acm.ready" ] && break; sleep 1; done
for c in "10.78.0.1 7471" "10.78.0.1 7471 udp"; do
    : > "$work/acm.log"; sh -c 'timeout 20 "$0" "$@" > /dev/null 2>&1' "$ref" $c 2> /dev/null
    cp "$work/acm.log" "$work/ref.out"
    : > "$work/acm.log"; timeout 20 "$ours" $c > "$work/answer" 2>&1
    cp "$work/acm.log" "$work/ours.out"
    if [ -s "$work/ours.out" ]; then check "ibacm request for $c"; else echo "FAIL  no ibacm request for $c"; fail=1; fi
    if grep -q '^path 0 flags 0x2b pkey 0xffff mtu 0x83 rate 0x87$' "$work/answer" &&
       grep -q '^route_len 72 ' "$work/answer"; then
        echo "ok    ibacm path record returned for $c"
    else
        echo "FAIL  ibacm answer not in the result for $c"; sed 's/^/      /' "$work/answer"; fail=1
    fi
done
kill $acm 2>/dev/null
rm -f /run/ibacm.sock
rm -rf "$work"
exit $fail
