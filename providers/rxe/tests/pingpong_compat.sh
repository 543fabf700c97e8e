#!/bin/bash
# Debian's prebuilt ibv_*_pingpong programs, server and client on rxe0 in
# this VM, running over our libibverbs and rxe provider (LD_LIBRARY_PATH).
#   pingpong_compat.sh <dir with our libibverbs.so.1>
# Exit 77 (skip) when the programs are not installed.
set -u
libdir=${1:?usage: pingpong_compat.sh <libdir>}
export LD_LIBRARY_PATH=$libdir
dev=rxe0
ports=/sys/class/infiniband/$dev/ports/1

for p in rc uc ud srq; do
    command -v ibv_${p}_pingpong >/dev/null || { echo "ibv_${p}_pingpong not installed"; exit 77; }
done

# The IPv4 GID (v4-mapped, ::ffff:a.b.c.d) is the one routed over dummy0.
gid=""
for f in "$ports"/gids/*; do
    case $(cat "$f") in 0000:0000:0000:0000:0000:ffff:*) gid=${f##*/}; break ;; esac
done
[ -n "$gid" ] || { echo "no IPv4 GID on $dev"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
port=18515

# run <name> <program> <args...>: server in the background, client after it.
run() {
    local name=$1 prog=$2
    shift 2
    port=$((port + 1))
    timeout 30 "$prog" -d $dev -g "$gid" -p $port "$@" >"$work/srv" 2>&1 &
    local srv=$!
    # The server needs a moment to listen (the first start reads everything
    # over 9p); retry the client while it only fails to connect.
    local crc try
    for try in $(seq 20); do
        sleep 0.3
        timeout 30 "$prog" -d $dev -g "$gid" -p $port "$@" 127.0.0.1 >"$work/cli" 2>&1
        crc=$?
        grep -q "Couldn't connect" "$work/cli" && kill -0 $srv 2>/dev/null || break
    done
    wait $srv
    local src=$?
    if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q "iters in" "$work/cli" && grep -q "iters in" "$work/srv"; then
        echo "PASS $name: $(grep 'iters in' "$work/cli")"
    else
        echo "FAIL $name (server rc $src, client rc $crc)"
        sed 's/^/  server: /' "$work/srv"
        sed 's/^/  client: /' "$work/cli"
        fail=1
    fi
}

run rc ibv_rc_pingpong -n 200
run rc-events ibv_rc_pingpong -n 200 -e
run rc-small-inline ibv_rc_pingpong -n 200 -s 32
run uc ibv_uc_pingpong -n 200
run uc-events ibv_uc_pingpong -n 200 -e
run ud ibv_ud_pingpong -n 200 -s 1024
run ud-events ibv_ud_pingpong -n 200 -s 1024 -e
run srq ibv_srq_pingpong -n 200
run srq-events ibv_srq_pingpong -n 200 -e
exit $fail
