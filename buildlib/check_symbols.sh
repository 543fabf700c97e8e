#!/bin/sh
# check_symbols.sh LIBRARY SYMBOL_LIST [TEST_SOURCE]
# The library's dynamic symbols (name@VERSION, default and compatibility
# versions alike) must be exactly the list: nothing missing, nothing extra.
# With TEST_SOURCE, every listed name must also appear in it, so the unit
# test calling each entry point cannot silently skip one.
set -eu
lib=$1
list=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Defined symbols only; the version nodes themselves appear as absolute
# symbols (type A) and are not part of the list.
nm -D --with-symbol-versions --defined-only "$lib" |
	awk '$2 != "A" { print $3 }' | sed 's/@@/@/' | LC_ALL=C sort -u >"$tmp/have"
grep -v '^[[:space:]]*$' "$list" | LC_ALL=C sort -u >"$tmp/want"

total=$(wc -l <"$tmp/want")
have=$(LC_ALL=C comm -12 "$tmp/have" "$tmp/want" | wc -l)
echo "$(basename "$lib"): $have/$total symbols of the reference surface"
status=0
if LC_ALL=C comm -13 "$tmp/have" "$tmp/want" | grep . >"$tmp/missing"; then
	echo "missing:"; sed 's/^/  /' "$tmp/missing"; status=1
fi
if LC_ALL=C comm -23 "$tmp/have" "$tmp/want" | grep . >"$tmp/extra"; then
	echo "not in the reference:"; sed 's/^/  /' "$tmp/extra"; status=1
fi
if [ $# -ge 3 ]; then
	for name in $(sed 's/@.*//' "$tmp/want" | LC_ALL=C sort -u); do
		grep -qw -- "$name" "$3" || { echo "not exercised by $(basename "$3"): $name"; status=1; }
	done
fi
exit $status
