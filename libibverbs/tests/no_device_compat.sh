#!/bin/bash
# On a host without RDMA devices, our ibv_devices/ibv_devinfo (and Debian's
# binaries running on our library) must print and exit exactly as Debian's
# own stack does. Skips (77) where the premise does not hold.
set -u
build=$1
[ -x /usr/bin/ibv_devinfo ] && [ -x /usr/bin/ibv_devices ] || { echo "SKIP: Debian's ibverbs-utils not installed"; exit 77; }
[ -d /sys/class/infiniband_verbs ] && [ -n "$(ls /sys/class/infiniband_verbs 2>/dev/null | grep uverbs)" ] && {
    echo "SKIP: this machine has RDMA devices"; exit 77; }
fail=0
run() {  # label, reference command, candidate command...
    local label=$1 ref=$2; shift 2
    local ro re rc co ce cc
    ro=$($ref 2>/tmp/nodev.$$.re); rc=$?; re=$(cat /tmp/nodev.$$.re)
    co=$("$@" 2>/tmp/nodev.$$.ce); cc=$?; ce=$(cat /tmp/nodev.$$.ce)
    rm -f /tmp/nodev.$$.re /tmp/nodev.$$.ce
    if [ "$ro" == "$co" ] && [ "$re" == "$ce" ] && [ $rc == $cc ]; then
        echo "same: $label (exit $rc: ${re:-no stderr})"
    else
        echo "DIFF: $label: reference exit $rc [$ro|$re], ours exit $cc [$co|$ce]"; fail=1
    fi
}
for args in "" "-v" "-l" "-d nosuchdev" "-i 1"; do
    run "ibv_devinfo $args" "/usr/bin/ibv_devinfo $args" "$build/bin/ibv_devinfo" $args
    run "Debian ibv_devinfo $args on our lib" "/usr/bin/ibv_devinfo $args" env LD_LIBRARY_PATH="$build/lib" /usr/bin/ibv_devinfo $args
done
run "ibv_devices" /usr/bin/ibv_devices "$build/bin/ibv_devices"
run "Debian ibv_devices on our lib" /usr/bin/ibv_devices env LD_LIBRARY_PATH="$build/lib" /usr/bin/ibv_devices
exit $fail
