#!/bin/bash
# qp_state_post.sh OURS REF: the QP-state walk (qp_state_post.c) on rxe0 with
# our library and provider (OURS, built on our headers) and with Debian's
# (REF, built on Debian's headers, run without LD_LIBRARY_PATH): every verb's
# return value and every completion must be the same.
set -u
ours=$1 ref=$2
[ -x "$ref" ] || { echo "SKIP: no reference build of qp_state_post"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
env -u LD_LIBRARY_PATH "$ref" >"$work/ref" 2>&1; echo "exit $?" >>"$work/ref"
"$ours" >"$work/ours" 2>&1; echo "exit $?" >>"$work/ours"
if cmp -s "$work/ref" "$work/ours"; then
    cat "$work/ours"
    echo "qp_state_post: identical to the reference"
    exit 0
fi
diff -u --label reference --label ours "$work/ref" "$work/ours"
exit 1
