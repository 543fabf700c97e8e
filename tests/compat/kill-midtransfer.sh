#!/bin/bash
# kill-midtransfer.sh BUILD: programs killed in the middle of a transfer
# (SIGKILL: no cleanup of their own) leave the device usable: the kernel
# reclaims their objects when their files close, and the next program on
# our stack passes data as if nothing happened.
set -u
build=$1
gid=${PERFTEST_GID:-1}
dev=$(ls /sys/class/infiniband | head -n 1)
[ -n "$dev" ] || { echo "no RDMA device"; exit 2; }
export LD_LIBRARY_PATH=$build/lib
pp=$build/bin/ibv_rc_pingpong
fail=0
for round in 1 2 3; do
    # A long transfer, killed on both ends after a moment.
    $pp -d "$dev" -g "$gid" -n 100000000 -s 4096 > /dev/null 2>&1 &
    srv=$!
    sleep 1
    $pp -d "$dev" -g "$gid" -n 100000000 -s 4096 127.0.0.1 > /dev/null 2>&1 &
    cli=$!
    sleep 2
    if ! kill -0 $cli 2>/dev/null; then
        echo "FAIL round $round: the transfer ended before it could be killed"
        fail=1
    fi
    kill -KILL $cli $srv 2>/dev/null
    wait $cli $srv 2>/dev/null
    # The next program must work normally.
    $pp -d "$dev" -g "$gid" -n 200 > /tmp/kill.srv 2>&1 &
    srv=$!
    sleep 1
    if $pp -d "$dev" -g "$gid" -n 200 127.0.0.1 > /tmp/kill.cli 2>&1 && wait $srv; then
        echo "ok    round $round: killed mid-transfer, next run: $(grep -m1 'iters in' /tmp/kill.cli)"
    else
        echo "FAIL  round $round: the run after the kill failed"
        sed 's/^/      /' /tmp/kill.cli /tmp/kill.srv
        kill $srv 2>/dev/null
        fail=1
    fi
done
# Nothing the killed processes created is left in the kernel.
if command -v rdma > /dev/null; then
    left=$(rdma resource show qp 2>/dev/null | grep -c 'comm ibv_rc_pingpong' || true)
    [ "$left" = 0 ] && echo "ok    no QP of the killed programs left in the kernel" || {
        echo "FAIL  $left QPs of killed programs left"; fail=1; }
fi
exit $fail
