#!/bin/bash
# perftest-compat.sh BUILD: Debian's prebuilt perftest programs run unchanged
# on our libraries (LD_LIBRARY_PATH=BUILD/lib): each of the eight classic
# tests, server and client over the first RDMA device, must finish with
# exit status 0 and print its result line. Then the same with -R
# (connection set-up through rdma_cm, i.e. our librdmacm) for send, write
# and read tests. Numbers are not judged here (see tests/bench/run for ours
# vs the reference). Exits 77 when perftest is not installed.
set -u
build=$1
gid=${PERFTEST_GID:-1}
cm_addr=${PERFTEST_RDMACM_ADDR:-10.78.0.1}
tests="ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw"
for t in $tests; do
    [ -x /usr/bin/$t ] || { echo "SKIP: Debian's perftest is not installed"; exit 77; }
done
dev=$(ls /sys/class/infiniband | head -n 1)
[ -n "$dev" ] || { echo "no RDMA device"; exit 2; }
export LD_LIBRARY_PATH=$build/lib
work=$(mktemp -d)
fail=0

# run_pair TEST "ARGS" SERVER_ADDR: server and client of one test.
run_pair() {
    local t=$1 args=$2 addr=$3 crc src result
    timeout 120 /usr/bin/$t -d "$dev" $args > "$work/srv" 2>&1 &
    srv=$!
    # On a loaded host the server may take seconds to listen: a client that
    # found nobody (TCP refused, or REJECTED through rdma_cm) tries again
    # while the server still runs.
    for try in 1 2 3 4 5 6; do
        sleep $try
        timeout 100 /usr/bin/$t -d "$dev" $args "$addr" > "$work/cli" 2>&1
        crc=$?
        [ $crc = 0 ] && break
        kill -0 $srv 2>/dev/null || break
        grep -qE "Couldn't connect|Unexpected CM event|RDMA_CM_EVENT_REJECTED" "$work/cli" || break
    done
    wait $srv
    src=$?
    # The result line follows the "#bytes" header.
    result=$(awk '/#bytes/ {getline; print; exit}' "$work/cli" | tr -s ' \t' ' ')
    if [ $crc = 0 ] && [ $src = 0 ] && [ -n "$result" ]; then
        echo "ok    $t $args:$result"
    else
        echo "FAIL  $t $args (client exit $crc, server exit $src)"
        sed "s/^/      client| /" "$work/cli" | tail -n 40
        sed "s/^/      server| /" "$work/srv" | tail -n 40
        fail=1
    fi
}

for t in $tests; do
    case $t in *_lat) args="-n 200" ;; *) args="-n 500 -s 1024" ;; esac
    case $t in ib_atomic_*) args="-n 200" ;; esac
    run_pair "$t" "-x $gid $args" 127.0.0.1
done
for t in ib_send_bw ib_write_lat ib_read_bw ib_send_lat; do
    case $t in *_lat) args="-n 200" ;; *) args="-n 500 -s 1024" ;; esac
    run_pair "$t" "-R $args" "$cm_addr"
done
rm -rf "$work"
exit $fail
