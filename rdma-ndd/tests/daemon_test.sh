#!/bin/bash
# daemon_test.sh RDMA_NDD: the daemon on a fake sysfs tree (SYSFS_PATH), in
# a UTS namespace of its own so that changing the host name touches nothing
# else: descriptions set at start, after a host name change, for a device
# that appears later, after SIGHUP; a clean exit on SIGTERM; READY=1 to
# $NOTIFY_SOCKET with --systemd once the descriptions are set; the format
# from RDMA_NDD_ND_FORMAT; option errors.
set -u
ndd=$1
if [ -z "${NDD_IN_UTS_NS:-}" ]; then
	unshare --uts true 2>/dev/null || { echo "SKIP: cannot make a UTS namespace here"; exit 77; }
	NDD_IN_UTS_NS=1 exec unshare --uts "$0" "$@"
fi
d=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$d"' EXIT
fail=0
cls=$d/sys/class/infiniband
mkdir -p "$cls/mlx5_0"
: >"$cls/mlx5_0/node_desc"
export SYSFS_PATH=$d/sys
unset RDMA_NDD_ND_FORMAT

# wait_for FILE TEXT: up to 5 s for FILE to hold exactly TEXT
wait_for() {
	local i
	for i in $(seq 50); do
		[ "$(cat "$1" 2>/dev/null)" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
check() { # what file text
	if wait_for "$2" "$3"; then
		echo "ok: $1"
	else
		echo "FAIL: $1: $2 holds '$(cat "$2" 2>/dev/null)', not '$3'"; fail=1
	fi
}

hostname ndd-one.example.org
"$ndd" -f -d 2>"$d/ndd.err" &
pid=$!
check "set at start (host name up to its first dot)" "$cls/mlx5_0/node_desc" "ndd-one mlx5_0"

hostname ndd-two
check "host name change" "$cls/mlx5_0/node_desc" "ndd-two mlx5_0"

mkdir -p "$d/new/mlx5_1" && : >"$d/new/mlx5_1/node_desc" && mv "$d/new/mlx5_1" "$cls/"
check "device added later" "$cls/mlx5_1/node_desc" "ndd-two mlx5_1"

echo tampered >"$cls/mlx5_0/node_desc"
kill -HUP "$pid"
check "SIGHUP rewrites" "$cls/mlx5_0/node_desc" "ndd-two mlx5_0"

kill -TERM "$pid"
for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
	echo "FAIL: still running 5 s after SIGTERM"; fail=1
else
	wait "$pid"; rc=$?
	[ $rc = 0 ] && echo "ok: exit 0 on SIGTERM" || { echo "FAIL: exit $rc on SIGTERM"; fail=1; }
fi
pid=
grep -q 'node description of mlx5_1 set to "ndd-two mlx5_1"' "$d/ndd.err" &&
	echo "ok: -d -f logs on stderr" || { echo "FAIL: no debug log on stderr"; cat "$d/ndd.err"; fail=1; }

# --systemd: READY=1 once the descriptions are written
: >"$cls/mlx5_0/node_desc"
python3 - "$d/notify" "$ndd" "$cls/mlx5_0/node_desc" <<'PY' || fail=1
import os, socket, subprocess, sys
path, ndd, desc = sys.argv[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
s.settimeout(5)
env = dict(os.environ, NOTIFY_SOCKET=path, RDMA_NDD_ND_FORMAT="%d/%h")
p = subprocess.Popen([ndd, "--systemd"], env=env)
try:
    msg = s.recv(256)
    got = open(desc).read()
    ok = msg == b"READY=1" and got == "mlx5_0/ndd-two"
    print(("ok" if ok else "FAIL") + f": --systemd sent {msg!r} with node_desc {got!r} (format from RDMA_NDD_ND_FORMAT)")
finally:
    p.terminate()
    rc = p.wait(5)
print(("ok" if rc == 0 else "FAIL") + f": --systemd exit {rc} on SIGTERM")
sys.exit(0 if ok and rc == 0 else 1)
PY

# option errors and help
"$ndd" --bogus >/dev/null 2>"$d/err"; rc=$?
[ $rc = 1 ] && grep -q Usage "$d/err" && echo "ok: unknown option: exit 1 and usage" ||
	{ echo "FAIL: unknown option: exit $rc"; fail=1; }
"$ndd" --help | grep -q RDMA_NDD_ND_FORMAT && echo "ok: --help" || { echo "FAIL: --help"; fail=1; }
exit $fail
