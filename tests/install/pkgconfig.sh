#!/bin/bash
# pkgconfig.sh BUILD: installs the build into a scratch DESTDIR and, for
# every .pc file the build installs, builds and links a small C program
# with nothing but `pkg-config --cflags --libs` (the sysroot set to the
# DESTDIR), then runs it against the installed library: the flags find
# the headers and the library, and the program loads.
set -u
build=$1
command -v pkg-config >/dev/null || { echo "SKIP: no pkg-config"; exit 77; }
cc=${CC:-cc}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
DESTDIR=$d/root cmake --install "$build" >"$d/install.log" 2>&1 || { tail "$d/install.log"; exit 1; }
pcdir=$(find "$d/root" -type d -name pkgconfig -path '*/lib*' | head -1)
[ -n "$pcdir" ] || { echo "FAIL: no pkgconfig directory installed"; exit 1; }
libdir=$(dirname "$pcdir")
export PKG_CONFIG_LIBDIR=$pcdir PKG_CONFIG_SYSROOT_DIR=$d/root
# a function of each library, taken by address (the program only links
# and loads; no device is needed)
declare -A use=(
	[libibverbs]="infiniband/verbs.h ibv_get_device_list"
	[librdmacm]="rdma/rdma_cma.h rdma_create_event_channel"
	[libibumad]="infiniband/umad.h umad_init"
	[libibmad]="infiniband/mad.h mad_rpc_open_port"
	[libibnetdisc]="infiniband/ibnetdisc.h ibnd_discover_fabric"
	[libmlx5]="infiniband/mlx5dv.h mlx5dv_query_device"
	[libefa]="infiniband/efadv.h efadv_query_device"
)
fail=0 n=0
for pc in "$pcdir"/*.pc; do
	name=$(basename "$pc" .pc)
	[ -n "${use[$name]:-}" ] || { echo "FAIL: $name.pc: no test program for it"; fail=1; continue; }
	read -r hdr fn <<<"${use[$name]}"
	flags=$(pkg-config --cflags --libs "$name") || { echo "FAIL: pkg-config $name"; fail=1; continue; }
	printf '#include <%s>\n#include <stdio.h>\nint main(void) { printf("%%d\\n", (void *)%s != NULL); return 0; }\n' \
		"$hdr" "$fn" >"$d/$name.c"
	# shellcheck disable=SC2086
	if ! $cc -o "$d/$name" "$d/$name.c" $flags 2>"$d/$name.err"; then
		echo "FAIL: $name: cc ... \$(pkg-config --cflags --libs $name) ($flags)"
		sed 's/^/    /' "$d/$name.err" | head -5
		fail=1
		continue
	fi
	out=$(LD_LIBRARY_PATH=$libdir "$d/$name") || { echo "FAIL: $name: the program did not run"; fail=1; continue; }
	[ "$out" = 1 ] || { echo "FAIL: $name: printed '$out'"; fail=1; continue; }
	ver=$(pkg-config --modversion "$name")
	echo "ok   $name $ver: $flags"
	n=$((n + 1))
done
[ $n -gt 0 ] || { echo "FAIL: no .pc file was installed"; exit 1; }
exit $fail
