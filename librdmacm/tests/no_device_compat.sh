#!/bin/bash
# On a host without RDMA devices, our rdmacm programs (and Debian's running
# on our librdmacm) print and exit exactly as Debian's own stack does.
# Skips (77) where the premise does not hold.
set -u
build=$1
[ -x /usr/bin/rping ] || { echo "SKIP: Debian's rdmacm-utils not installed"; exit 77; }
[ -d /sys/class/infiniband_verbs ] && [ -n "$(ls /sys/class/infiniband_verbs 2>/dev/null | grep uverbs)" ] && {
    echo "SKIP: this machine has RDMA devices"; exit 77; }
fail=0
work=$(mktemp -d)
run() {  # label, program, args...: Debian's, ours, Debian's on our library
    local label=$1 prog=$2; shift 2
    timeout 20 /usr/bin/$prog "$@" > "$work/ro" 2> "$work/re"; local rc=$?
    local kind bin
    for kind in ours mixed; do
        if [ $kind = ours ]; then bin=(timeout 20 "$build/bin/$prog"); else bin=(timeout 20 env LD_LIBRARY_PATH="$build/lib" /usr/bin/$prog); fi
        "${bin[@]}" "$@" > "$work/co" 2> "$work/ce"; local cc=$?
        if cmp -s "$work/ro" "$work/co" && cmp -s "$work/re" "$work/ce" && [ $rc == $cc ]; then
            echo "same: $label ($kind, exit $rc: $(head -c 80 "$work/re" | tr '\n' ' '))"
        else
            echo "DIFF: $label ($kind): reference exit $rc [$(cat "$work/ro")|$(cat "$work/re")], ours exit $cc [$(cat "$work/co")|$(cat "$work/ce")]"
            fail=1
        fi
    done
}
run "rping client" rping -c -a 127.0.0.1 -C 1
run "rping server" rping -s -a 127.0.0.1 -C 1
run "ucmatose client" ucmatose -s 127.0.0.1
run "udaddy client" udaddy -s 127.0.0.1
run "mckey" mckey -m 239.1.1.1
run "cmtime client" cmtime -s 127.0.0.1
run "rdma_client" rdma_client -s 127.0.0.1
run "rdma_server" rdma_server
run "rstream client" rstream -s 127.0.0.1
run "riostream client" riostream -s 127.0.0.1
# udpong: the usage text names the program, so our path reads as Debian's;
# with no device the server waits silently (both killed by timeout: 124).
urun() {  # label, args...
    local label=$1; shift
    local kind bin rc cc
    timeout 3 /usr/bin/udpong "$@" > "$work/ro" 2> "$work/re"; rc=$?
    for kind in ours mixed; do
        if [ $kind = ours ]; then bin=(timeout 3 "$build/bin/udpong"); else bin=(timeout 3 env LD_LIBRARY_PATH="$build/lib" /usr/bin/udpong); fi
        "${bin[@]}" "$@" > "$work/co" 2> "$work/ce"; cc=$?
        sed -i "s#$build/bin/udpong#/usr/bin/udpong#g" "$work/co" "$work/ce"
        if cmp -s "$work/ro" "$work/co" && cmp -s "$work/re" "$work/ce" && [ $rc == $cc ]; then
            echo "same: $label ($kind, exit $rc: $(head -c 80 "$work/re" | tr '\n' ' '))"
        else
            echo "DIFF: $label ($kind): reference exit $rc [$(head -c 400 "$work/ro")|$(head -c 400 "$work/re")], ours exit $cc [$(head -c 400 "$work/co")|$(head -c 400 "$work/ce")]"
            fail=1
        fi
    done
}
if [ -x /usr/bin/udpong ] && [ -x "$build/bin/udpong" ]; then
    urun "udpong client" -s 127.0.0.1
    urun "udpong client ipv6" -s ::1 -C 5 -S 64
    urun "udpong client echo" -s 127.0.0.1 -T e -T a
    urun "udpong client unknown host" -s nosuch.invalid
    urun "udpong client bad port" -s 127.0.0.1 -p nosuchservice
    urun "udpong server unknown bind" -b nosuch.invalid
    urun "udpong server" -p 7399
    urun "udpong small size" -S 15
    urun "udpong bad -T" -T x
    urun "udpong bad -T prefix" -T sock
    urun "udpong empty -T" -T ""
    urun "udpong missing -T argument" -T
    urun "udpong unknown option" -x
    urun "udpong -h" -h
    urun "udpong sockets unknown host" -T sockets -s nosuch.invalid
fi
rm -rf "$work"
exit $fail
