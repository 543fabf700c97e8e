#!/bin/bash
# hotplug-compat.sh PROGRAM LIBDIR: soft-RoCE devices added and deleted
# under a running program (libibverbs/tests/hotplug_list.c), on Debian's
# libibverbs and on ours (LD_LIBRARY_PATH=LIBDIR): the transcripts must be
# identical, and must show the changes. Root in the VM: it deletes rxe0
# (and puts it back on its netdev), and adds rxe1 on a dummy netdev of its
# own. Exit 77 where there is no rxe0 or no rdma tool.
set -u
prog=$1 libdir=$2
command -v rdma >/dev/null && [ -e /sys/class/infiniband/rxe0 ] || { echo "SKIP: no rxe0 or no rdma tool"; exit 77; }
ndev0=$(rdma link show rxe0/1 | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
[ -n "$ndev0" ] || { echo "hotplug-compat: no netdev under rxe0"; exit 2; }
work=$(mktemp -d)
restore() {
    rdma link delete rxe1 2>/dev/null
    [ -e /sys/class/infiniband/rxe0 ] || rdma link add rxe0 type rxe netdev "$ndev0"
    ip link del uvhp0 2>/dev/null
    rm -rf "$work"
}
trap restore EXIT
ip link add uvhp0 type dummy && ip link set uvhp0 up || { echo "hotplug-compat: cannot make a dummy netdev"; exit 2; }
for side in ref ours; do
    if [ $side = ref ]; then
        env -u LD_LIBRARY_PATH timeout 60 "$prog" "$ndev0" uvhp0 >"$work/$side.out" 2>&1
    else
        LD_LIBRARY_PATH=$libdir timeout 60 "$prog" "$ndev0" uvhp0 >"$work/$side.out" 2>&1
    fi
    echo "exit $?" >>"$work/$side.out"
    # whatever happened, the next side starts from rxe0 alone
    rdma link delete rxe1 2>/dev/null
    [ -e /sys/class/infiniband/rxe0 ] || rdma link add rxe0 type rxe netdev "$ndev0"
done
sed 's/^/  /' "$work/ours.out"
fail=0
if ! diff -u "$work/ref.out" "$work/ours.out"; then
    echo "DIFF: our libibverbs sees device changes differently"; fail=1
fi
# The transcript itself: each change seen.
for want in "held list: 2 device(s)" "after deleting rxe1: 1 device(s): rxe0" \
            "delete still waiting with the context open: yes" "after deleting rxe0: 0 device(s):" \
            "after adding rxe0 back: 1 device(s): rxe0" "open new rxe0: ok (errno 0)" "exit 0"; do
    grep -qxF "$want" "$work/ours.out" || { echo "MISSING: $want"; fail=1; }
done
[ $fail = 0 ] && echo "hotplug-compat: same on both libraries"
exit $fail
