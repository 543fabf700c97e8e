#!/bin/bash
# Runs inside the soft-RoCE VM (see run): every perftest program and the
# callgrind post/poll loop, on the reference stack and on ours, interleaved
# round by round so both see the same conditions. Writes raw results as
# "stack test metric value" lines to $OUT.
set -u
BUILD=$1 OUT=$2 ROUNDS=$3
GID=${BENCH_GID:-1}
: > "$OUT"
declare -A ARGS=(
    [ib_send_lat]="-s 8 -n 2000" [ib_write_lat]="-s 8 -n 2000" [ib_read_lat]="-s 8 -n 2000"
    [ib_atomic_lat]="-n 2000"
    [ib_send_bw]="-s 4096 -n 4000" [ib_write_bw]="-s 4096 -n 4000" [ib_read_bw]="-s 4096 -n 4000"
    [ib_atomic_bw]="-n 4000"
)
TESTS="ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw"

stack_env() {  # the environment prefix for a stack
    if [ "$1" = ours ]; then echo "env LD_LIBRARY_PATH=$BUILD/lib"; else echo "env -u LD_LIBRARY_PATH"; fi
}

run_perftest() {  # stack test
    local stack=$1 t=$2 e; e=$(stack_env "$stack")
    local srv=/tmp/bench.srv cli=/tmp/bench.cli
    timeout 150 $e /usr/bin/$t -d rxe0 -x "$GID" ${ARGS[$t]} > $srv 2>&1 &
    local pid=$!
    sleep 1
    timeout 120 $e /usr/bin/$t -d rxe0 -x "$GID" ${ARGS[$t]} 10.78.0.1 > $cli 2>&1
    local rc=$?
    # A server left waiting (client failed) must not stall the run.
    sleep 1
    kill $pid 2>/dev/null
    wait $pid 2>/dev/null
    echo "$stack $t rc=$rc" >&2
    if [ $rc != 0 ]; then
        echo "$stack $t failed rc=$rc" >&2; sed 's/^/    /' $cli >&2
        echo "$stack $t failed 1" >> "$OUT"
        return
    fi
    # The result line follows the "#bytes" header line.
    awk -v s="$stack" -v t="$t" '
        /#bytes/ { hdr = 1; next }
        hdr && NF > 3 {
            if (t ~ /_lat$/) {
                print s, t, "lat_typical_us", $5; print s, t, "lat_p99_us", $8
            } else {
                print s, t, "bw_avg_MBps", $4; print s, t, "msg_rate_Mpps", $5
            }
            hdr = 0
        }' $cli >> "$OUT"
}

run_callgrind() {  # stack
    local stack=$1 e; e=$(stack_env "$stack")
    for fn in do_post do_poll; do
        local cg=/tmp/bench.cg.$fn
        $e valgrind --tool=callgrind --callgrind-out-file=$cg "--toggle-collect=*$fn*" \
            "$BUILD/bin/bench_postpoll" 10 "$GID" > /tmp/bench.pp.log 2>&1 || {
            echo "$stack callgrind failed" >&2; tail -5 /tmp/bench.pp.log >&2; return; }
        # The program reports "posted P polled Q": the call counts.
        local ir calls col=2
        [ $fn = do_poll ] && col=4
        ir=$(awk '/^summary:/ {print $2}' $cg)
        calls=$(awk -v c=$col '/^posted/ {print $c}' /tmp/bench.pp.log)
        echo "$stack postpoll ${fn#do_}_instr_per_call $(awk -v i="$ir" -v c="$calls" 'BEGIN {printf "%.1f", i / c}')" >> "$OUT"
    done
}

for r in $(seq 1 "$ROUNDS"); do
    # Alternate which stack goes first.
    if [ $((r % 2)) = 1 ]; then order="ref ours"; else order="ours ref"; fi
    for t in $TESTS; do
        for s in $order; do run_perftest "$s" "$t"; done
    done
done
if command -v valgrind > /dev/null; then
    for s in ref ours; do run_callgrind "$s"; done
else
    echo "valgrind not installed: no instruction counts" >&2
fi
