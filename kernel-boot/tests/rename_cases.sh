#!/bin/bash
# rename_cases.sh RDMA_RENAME: in the VM, rxe0 put behind a series of fake
# sysfs topologies (a PCI function, multi-function, a domain, ARI, SR-IOV
# VF, a hotplug slot, on-board indexes, a non-PCI parent, none) and renamed
# by RDMA_RENAME under every policy, through the kernel's RDMA netlink. One
# line per case: the case, the policy, what the device is called after it
# and the program's exit status. The device gets its name back after each
# case. The fake tree lives in a private mount namespace: tmpfs over
# /sys/class/infiniband, a directory rxe0 in it whose device link points
# into /tmp.
set -u
bin=$1
[ -e /sys/class/infiniband/rxe0 ] || { echo "no rxe0" >&2; exit 1; }
root=$(mktemp -d /tmp/rename-cases.XXXXXX)

cur_name() { rdma dev show | awk -F'[: ]+' 'NR==1 {print $2}'; }

# pci_fn ADDR [MULTIFUNCTION] : a fake PCI function directory.
pci_fn() {
	local d=$root/devices/pci0000:00/$1 hdr=${2:-0}
	mkdir -p "$d"
	ln -sfn "$root/bus/pci" "$d/subsystem"
	# 64 bytes of configuration space; offset 0x0e is the header type,
	# bit 7 of it says the device has several functions.
	{ head -c 14 /dev/zero; printf "\\x$(printf %02x "$hdr")"; head -c 49 /dev/zero; } >"$d/config"
	echo "$d"
}

# run_case NAME POLICY [ARG] with $dev set up as rxe0's device (or empty).
run_case() {
	local name=$1 rc new
	shift
	unshare -m bash -c '
		mount -t tmpfs none /sys/class/infiniband || exit 99
		mkdir /sys/class/infiniband/rxe0
		echo rxe0 > /sys/class/infiniband/rxe0/name 2>/dev/null
		[ -n "$1" ] && ln -s "$1" /sys/class/infiniband/rxe0/device
		shift
		exec "$@"' _ "$dev" "$bin" $verbose rxe0 "$@" >/tmp/rename-case.out 2>/dev/null
	rc=$?
	new=$(cur_name)
	echo "$name $verbose $* -> $new rc=$rc out=[$(tr '\n' ' ' </tmp/rename-case.out)]"
	[ "$new" = rxe0 ] || rdma dev set "$new" name rxe0
}

mkdir -p "$root/bus/pci/slots" "$root/bus/platform"
verbose=
policies=(NAME_KERNEL NAME_PCI NAME_GUID NAME_ONBOARD NAME_FALLBACK)

dev=
for p in "${policies[@]}"; do run_case virtual "$p"; done
run_case virtual NAME_FIXED myrdma0
run_case virtual NAME_FIXED
run_case virtual NAME_BOGUS

dev=$(pci_fn 0000:00:0c.4 128)
for p in "${policies[@]}"; do run_case pci_mf "$p"; done
run_case pci_mf NAME_FIXED myrdma0

verbose=-v
for p in "${policies[@]}"; do run_case pci_mf "$p"; done
run_case pci_mf NAME_FIXED myrdma0
run_case pci_mf NAME_FIXED
run_case pci_mf NAME_BOGUS
verbose=

dev=$(pci_fn 0000:00:0c.0 128)
run_case pci_mf_fn0 NAME_PCI
dev=$(pci_fn 0000:05:00.0 0)
run_case pci_single NAME_PCI
run_case pci_single NAME_FALLBACK
dev=$(pci_fn 0000:05:00.3 0)
run_case pci_single_fn3 NAME_PCI
dev=$(pci_fn 0002:81:1f.7 0)
run_case pci_domain NAME_PCI

dev=$(pci_fn 0000:81:01.2 0)
echo 1 >"$dev/ari_enabled"
run_case pci_ari NAME_PCI
dev=$(pci_fn 0000:81:00.0 0)
echo 1 >"$dev/ari_enabled"
run_case pci_ari_fn0 NAME_PCI

dev=$(pci_fn 0000:06:00.0 0)
mkdir -p "$root/bus/pci/slots/7"
echo 0000:06:00 >"$root/bus/pci/slots/7/address"
run_case pci_slot NAME_PCI
run_case pci_slot NAME_FALLBACK
rm -rf "$root/bus/pci/slots/7"

# SR-IOV: PF 0000:07:00.0 (multi-function) with VFs 0000:07:00.2 and .3.
pf=$(pci_fn 0000:07:00.0 128)
dev=$(pci_fn 0000:07:00.3 0)
vf0=$(pci_fn 0000:07:00.2 0)
ln -s "$vf0" "$pf/virtfn0"
ln -s "$dev" "$pf/virtfn1"
ln -s "$pf" "$dev/physfn"
ln -s "$pf" "$vf0/physfn"
run_case pci_vf NAME_PCI
run_case pci_vf NAME_FALLBACK

dev=$(pci_fn 0000:08:00.0 0)
echo 3 >"$dev/acpi_index"
run_case onboard_acpi NAME_ONBOARD
run_case onboard_acpi NAME_FALLBACK
echo 0 >"$dev/acpi_index"
echo 9 >"$dev/index"
run_case onboard_index NAME_ONBOARD
rm -f "$dev/acpi_index"
run_case onboard_index_only NAME_ONBOARD
run_case onboard_index_only NAME_FALLBACK
echo 0 >"$dev/index"
run_case onboard_zero NAME_ONBOARD
echo junk >"$dev/index"
run_case onboard_junk NAME_ONBOARD
echo 70000 >"$dev/index"
run_case onboard_big NAME_ONBOARD

for v in 16383 16384 -1 +5 " 7" 5abc 0x10 012; do
	echo "$v" >"$dev/index"
	run_case "onboard_index[$v]" NAME_ONBOARD
done
echo junk >"$dev/acpi_index"
echo 4 >"$dev/index"
run_case onboard_acpi_junk NAME_ONBOARD
run_case onboard_acpi_junk NAME_FALLBACK
rm -f "$dev/acpi_index" "$dev/index"
run_case not_onboard NAME_ONBOARD
run_case not_onboard NAME_FALLBACK

dev=$(pci_fn 0000:0a:02.0 0)
rm -f "$dev/config"
run_case pci_noconfig NAME_PCI
rm -f "$dev/subsystem"
run_case pci_nosubsystem NAME_PCI

# A VF whose PF lists other VFs only, and a VF of a single-function PF.
pf=$(pci_fn 0000:0b:00.0 0)
dev=$(pci_fn 0000:0b:00.5 0)
ln -s "$pf" "$dev/physfn"
run_case vf_unlisted NAME_PCI
ln -s "$dev" "$pf/virtfn3"
run_case vf_single_pf NAME_PCI
echo 2 >"$pf/acpi_index"
run_case vf_onboard_pf NAME_ONBOARD
run_case vf_onboard_pf NAME_FALLBACK

dev=$root/devices/platform/rdma.0
mkdir -p "$dev"
ln -s "$root/bus/platform" "$dev/subsystem"
run_case platform NAME_PCI
run_case platform NAME_FALLBACK
run_case platform NAME_ONBOARD
echo 4 >"$dev/acpi_index"
run_case platform_acpi NAME_ONBOARD
run_case platform_acpi NAME_FALLBACK

dev=$root/devices/pci0000:00/garbage
mkdir -p "$dev"
ln -s "$root/bus/pci" "$dev/subsystem"
run_case pci_badaddr NAME_PCI
run_case pci_badaddr NAME_FALLBACK

# The name it has already; a name too long for the kernel; a device the
# kernel does not know.
dev=
run_case nochange NAME_FIXED rxe0
run_case toolong NAME_FIXED "$(printf 'n%.0s' {1..64})"
run_case maxlen NAME_FIXED "$(printf 'n%.0s' {1..63})"
unshare -m "$bin" nosuchdev NAME_FIXED foo >/dev/null 2>&1
echo "unknown device -> rc=$? $(cur_name)"
"$bin" >/dev/null 2>&1
echo "no arguments -> rc=$?"
"$bin" -x rxe0 NAME_PCI >/dev/null 2>&1
echo "bad option -> rc=$?"
rm -rf "$root"
