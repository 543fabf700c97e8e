#!/bin/bash
# rename_vm.sh OURS: rename_cases.sh with Debian's rdma_rename and with
# ours, on rxe0 in the VM; the two must give every case the same outcome
# (name, exit status, standard output). Skips without Debian's.
set -u
here=$(cd "$(dirname "$0")" && pwd)
ours=$1 ref=/lib/udev/rdma_rename
[ -x "$ref" ] || { echo "SKIP: no reference $ref (Debian's rdma-core)"; exit 77; }
"$here/rename_cases.sh" "$ref" >/tmp/rename-ref.txt || exit 1
"$here/rename_cases.sh" "$ours" >/tmp/rename-ours.txt || exit 1
cat /tmp/rename-ours.txt
n=$(wc -l </tmp/rename-ref.txt)
[ "$n" -gt 40 ] || { echo "only $n cases ran"; exit 1; }
# Every outcome must be reachable: renames happened and failures too.
grep -q ' -> rocep0s12f4 rc=0' /tmp/rename-ref.txt || { echo "the reference did not rename by PCI"; exit 1; }
if diff -u /tmp/rename-ref.txt /tmp/rename-ours.txt; then
	echo "all $n cases as Debian's rdma_rename"
else
	echo "FAIL: outcomes differ from Debian's rdma_rename (- Debian's, + ours)"
	exit 1
fi
