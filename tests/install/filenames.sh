#!/bin/bash
# filenames.sh BUILD: every shared library the build installs carries the
# reference's file name, lib<name>.so.<soname>.<minor>.<release>, where the
# minor is the newest symbol version node the library defines (librdmacm's
# RDMACM_1.5 makes librdmacm.so.1.5.65.0): a package or an ldconfig run
# sees the same files as with rdma-core's. The soname link and the .so
# development link point at that file; a provider plugin that is a link
# (libdir/libibverbs/libmlx5-rdmavN.so) points straight at it, as the
# reference's do (../libmlx5.so.1.<minor>.<release>).
set -u
build=$1
command -v objdump >/dev/null || { echo "SKIP: no objdump"; exit 77; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
DESTDIR=$d/root cmake --install "$build" >"$d/install.log" 2>&1 || { tail "$d/install.log"; exit 1; }
fail=0 n=0
while IFS= read -r f; do
	base=$(basename "$f")
	[[ $base =~ ^(lib[a-z0-9_]+)\.so\.([0-9]+)\.([0-9]+)\.(.+)$ ]] || continue
	name=${BASH_REMATCH[1]} major=${BASH_REMATCH[2]} minor=${BASH_REMATCH[3]}
	# the library's own nodes: defined symbols only (not what it imports)
	newest=$(objdump -T "$f" | grep -v '[*]UND[*]' |
		grep -oE '\b[A-Z][A-Z0-9]*_[0-9]+\.[0-9]+\b' | grep -vE '^(GLIBC|GCC|CXXABI|GLIBCXX)_' |
		sed -E 's/.*\.//' | sort -n | tail -1)
	if [ -z "$newest" ]; then
		echo "FAIL: $base: no symbol version node"; fail=1; continue
	fi
	n=$((n + 1)) bad=0
	if [ "$minor" != "$newest" ]; then
		echo "FAIL: $base: file minor $minor, newest node minor $newest"; bad=1
	fi
	dir=$(dirname "$f")
	for link in "$name.so.$major" "$name.so"; do
		if [ "$(readlink -f "$dir/$link")" != "$(readlink -f "$f")" ]; then
			echo "FAIL: $dir/$link does not lead to $base"; bad=1
		fi
	done
	[ $bad = 0 ] && echo "ok: $base" || fail=1
done < <(find "$d/root" -type f -name 'lib*.so.*')
[ $n -gt 0 ] || { echo "FAIL: no versioned library installed"; exit 1; }
while IFS= read -r l; do
	target=$(readlink "$l")
	if [[ $target =~ ^\.\./lib[a-z0-9_]+\.so\.[0-9]+\.[0-9]+\.[0-9.]+$ ]] && [ -f "$(dirname "$l")/$target" ] &&
		[ ! -L "$(dirname "$l")/$target" ]; then
		echo "ok: $(basename "$l") -> $target"
	else
		echo "FAIL: plugin link $(basename "$l") -> $target (want ../<library's real file name>)"; fail=1
	fi
done < <(find "$d/root" -path '*/libibverbs/lib*-rdmav*.so' -type l)
exit $fail
