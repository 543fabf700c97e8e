#!/bin/bash
# filelists.sh DEB_DIR [EXPECTED]: the files of each .deb we build against
# the files of Debian 12's package of the same name (dpkg -L on this
# machine, where buildlib/dev installs Debian's rdma-core packages).
# Version numbers are folded (libibverbs.so.1.18.65.0 and .1.14.44.0 are
# both libibverbs.so.1.N.V, librxe-rdmav65.so and -rdmav34.so both
# librxe-rdmavN.so), /usr/share/doc and lintian overrides are left aside.
# Every difference must be listed, with its reason, in EXPECTED
# (debian/tests/filelists.expected): a new difference fails, and so does a
# listed one that went away (the list is kept exact).
set -u
debs=$1
expected=${2:-$(dirname "$0")/filelists.expected}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fold() {
	sed -E -e 's/\.so\.([0-9]+)\.[0-9]+\.[0-9]+\.[0-9]+$/.so.\1.N.V/' \
		-e 's/-rdmav[0-9]+\.so$/-rdmavN.so/' \
		-e 's|/usr/lib/x86_64-linux-gnu|/usr/lib/MA|' \
		-e 's|\.gz$||' |
		grep -v -e '^/usr/share/doc/' -e '^/usr/share/lintian/' | sort -u
}
n=0
for deb in "$debs"/*.deb; do
	[ -e "$deb" ] || { echo "FAIL: no .deb in $debs"; exit 1; }
	pkg=$(dpkg-deb -f "$deb" Package)
	case $pkg in *-dbgsym) continue ;; esac
	n=$((n + 1))
	# files and symlinks, not directories
	dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | fold >"$d/ours"
	if dpkg -L "$pkg" >/dev/null 2>&1; then
		dpkg -L "$pkg" | while read -r f; do [ -d "$f" ] || echo "$f"; done | fold >"$d/ref"
	else
		: >"$d/ref"
		echo "$pkg: (no Debian package of that name installed)" >>"$d/actual"
	fi
	comm -13 "$d/ours" "$d/ref" | sed "s|^|$pkg: only Debian's: |" >>"$d/actual"
	comm -23 "$d/ours" "$d/ref" | sed "s|^|$pkg: only ours: |" >>"$d/actual"
done
touch "$d/actual"
# the expected list: "package: only ...: path" lines, comments (#) aside
grep -v -e '^#' -e '^$' "$expected" | sed 's/ *#.*//' | sort >"$d/want"
sort "$d/actual" >"$d/got"
if cmp -s "$d/want" "$d/got"; then
	echo "same file lists in $n packages, but for the $(wc -l <"$d/want") listed differences"
	exit 0
fi
echo "new differences (fix them, or list them with a reason in $expected):"
comm -13 "$d/want" "$d/got" | sed 's/^/  /'
echo "listed differences that are gone (remove them from the list):"
comm -23 "$d/want" "$d/got" | sed 's/^/  /'
exit 1
