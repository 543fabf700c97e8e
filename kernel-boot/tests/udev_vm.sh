#!/bin/bash
# udev_vm.sh KERNEL_BOOT_DIR RDMA_NDD_DIR (in the soft-RoCE VM): our udev
# rules and Debian's, each set alone in place of the system's, run through
# `udevadm test` on rxe0, its umad port and its netdev; the properties they
# give each device (ID_RDMA_ROCE, SYSTEMD_WANTS, SYSTEMD_ALIAS, TAGS...)
# must be the same.
set -u
src=$1 ndd=$2
sys=/lib/udev/rules.d
names="60-rdma-ndd.rules 60-rdma-persistent-naming.rules 75-rdma-description.rules 90-rdma-hw-modules.rules 90-rdma-ulp-modules.rules 90-rdma-umad.rules"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir "$d/ours" "$d/ref"
for n in $names; do
	[ -f "$sys/$n" ] || { echo "SKIP: Debian's $n is not installed"; exit 77; }
	cp "$sys/$n" "$d/ref/"
	if [ -f "$src/$n" ]; then cp "$src/$n" "$d/ours/"; else cp "$ndd/$n" "$d/ours/"; fi
done
devices="/sys/class/infiniband/rxe0"
for p in /sys/class/infiniband_mad/umad*; do [ -e "$p" ] && devices="$devices $p"; done
parent=$(cat /sys/class/infiniband/rxe0/parent 2>/dev/null)
[ -n "$parent" ] && devices="$devices /sys/class/net/$parent"
fail=0
for dev in $devices; do
	for side in ours ref; do
		unshare -m sh -c 'mount --bind "$1" /lib/udev/rules.d && udevadm test --action=add "$2"' \
			sh "$d/$side" "$dev" >"$d/$side.log" 2>&1
		# the properties: KEY=value lines after the banner, the time aside
		sed -n '/^DEVPATH=/,$p' "$d/$side.log" | grep -v '^USEC_INITIALIZED=' | sort >"$d/$side.props"
		grep -E "rules.d/[^ ]+:[0-9]+" "$d/$side.log" | sed "s/^/    $side: /"
	done
	if cmp -s "$d/ours.props" "$d/ref.props"; then
		echo "same for $dev: $(grep -E '^(ID_RDMA|SYSTEMD_|TAGS)' "$d/ours.props" | tr '\n' ' ')"
	else
		echo "DIFFERENT for $dev:"; diff "$d/ref.props" "$d/ours.props" | sed 's/^/    /'; fail=1
	fi
	[ -s "$d/ours.props" ] || { echo "FAIL: no properties for $dev"; fail=1; }
	# and not the same nothing: rxe0 is RoCE and wants its services
	if [ "$dev" = /sys/class/infiniband/rxe0 ]; then
		grep -q '^ID_RDMA_ROCE=1$' "$d/ours.props" || { echo "FAIL: rxe0 not RoCE"; fail=1; }
		grep -q '^SYSTEMD_WANTS=.*rdma-load-modules@roce.service' "$d/ours.props" ||
			{ echo "FAIL: rxe0 does not want rdma-load-modules@roce.service"; fail=1; }
	fi
done
exit $fail
