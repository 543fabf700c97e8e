#!/bin/bash
# Runs inside the soft-RoCE VM (see cm-run): Debian's cmtime and rstream,
# once on the reference stack (Debian's librdmacm + libibverbs) and once on
# ours (LD_LIBRARY_PATH=BUILD/lib), interleaved round by round. Writes
# "stack test figure value" lines to OUT.
set -u
BUILD=$1 OUT=$2 ROUNDS=$3
ADDR=10.78.0.1
CONNS=${BENCH_CM_CONNECTIONS:-50}
: > "$OUT"

stack_env() {
    if [ "$1" = ours ]; then echo "env LD_LIBRARY_PATH=$BUILD/lib"; else echo "env -u LD_LIBRARY_PATH"; fi
}

# cmtime prints one line per step: name, then total ms, max ms, min us,
# us/conn (the layout of rdma-core's cmtime). We keep total ms per step
# and compute the connection rate from the connect step.
run_cmtime() {
    local stack=$1 e; e=$(stack_env "$stack")
    timeout 300 $e /usr/bin/cmtime -b $ADDR -c $CONNS > /tmp/cmt.srv 2>&1 &
    local pid=$!
    sleep 2
    timeout 280 $e /usr/bin/cmtime -s $ADDR -b $ADDR -c $CONNS > /tmp/cmt.cli 2>&1
    local rc=$?
    wait $pid 2>/dev/null
    if [ $rc != 0 ]; then
        echo "$stack cmtime failed rc=$rc" >&2; sed 's/^/    /' /tmp/cmt.cli >&2
        return
    fi
    # Lines look like "resolve addr :  12.34  1.23  100.00  246.80": the step
    # name before the colon, four figures after it.
    awk -F: -v s="$stack" -v n="$CONNS" '
        NF == 2 {
            name = $1; gsub(/^ +| +$/, "", name); gsub(/ +/, "_", name)
            split($2, f, " ")
            if (f[1] !~ /^[0-9.]+$/) next
            print s, "cmtime", name "_total_ms", f[1]
            if (name == "connect" && f[1] > 0) print s, "cmtime", "connections_per_s", n * 1000 / f[1]
        }' /tmp/cmt.cli >> "$OUT"
}

# rstream: Gb/sec for a few message sizes (ping-pong of -C transfers).
run_rstream() {
    local stack=$1 size=$2 e; e=$(stack_env "$stack")
    timeout 200 $e /usr/bin/rstream -b $ADDR -S $size -C 2000 > /tmp/rs.srv 2>&1 &
    local pid=$!
    # A slow server start (TCG under load) is not a result: retry while the
    # client finds nobody listening.
    local rc try
    for try in 2 3 4 5; do
        sleep $try
        timeout 180 $e /usr/bin/rstream -s $ADDR -S $size -C 2000 > /tmp/rs.cli 2>&1
        rc=$?
        grep -q 'Connection refused' /tmp/rs.cli || break
    done
    wait $pid 2>/dev/null
    if [ $rc != 0 ]; then
        echo "$stack rstream $size failed rc=$rc" >&2; sed 's/^/    /' /tmp/rs.cli >&2
        return
    fi
    # header: name bytes xfers iters total time Gb/sec usec/xfer
    awk -v s="$stack" -v sz="$size" '
        $1 != "name" && NF >= 8 { print s, "rstream", "Gb_per_s_" sz, $(NF-1); print s, "rstream", "usec_per_xfer_" sz, $NF }' \
        /tmp/rs.cli >> "$OUT"
}

for r in $(seq "$ROUNDS"); do
    for stack in ref ours; do
        echo "round $r: $stack" >&2
        run_cmtime $stack
        for size in 64 4096 65536; do run_rstream $stack $size; done
    done
done
