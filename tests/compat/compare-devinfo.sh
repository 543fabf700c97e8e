#!/bin/bash
# compare-devinfo.sh: run ibv_devinfo and ibv_devices from two installations
# with the same arguments and require byte-identical stdout, stderr and exit
# status. Prints one line per case; exits 1 if any case differs, 2 on a
# usage error.
#
#   compare-devinfo.sh [options] REF TEST
#
# REF and TEST are directories holding ibv_devinfo and ibv_devices.
# Options (each may be given for either side):
#   --ref-libs DIR, --test-libs DIR   LD_LIBRARY_PATH for that side (default:
#                                     none, the variable is removed)
#   --ref-wrap CMD, --test-wrap CMD   command prefix for that side, split on
#                                     spaces (e.g. "valgrind -q")
#   --keep DIR                        keep the captured outputs in DIR
#   -q                                print only differing cases and the total
#
# Both sides run with the same argv[0] ("ibv_devinfo"/"ibv_devices"), since
# it is part of the usage text and getopt's messages. Device names for the
# per-device cases come from REF's "ibv_devinfo -l".
#
# Examples:
#   compare-devinfo.sh /usr/bin build/bin --test-libs build/lib
#   compare-devinfo.sh /usr/bin /usr/bin --test-libs build/lib
set -u

usage() {
	sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0" >&2
	exit 2
}

ref_libs="" test_libs="" ref_wrap="" test_wrap="" keep="" quiet=0
dirs=()
while [ $# -gt 0 ]; do
	case "$1" in
	--ref-libs) ref_libs=${2-}; shift 2 || usage ;;
	--test-libs) test_libs=${2-}; shift 2 || usage ;;
	--ref-wrap) ref_wrap=${2-}; shift 2 || usage ;;
	--test-wrap) test_wrap=${2-}; shift 2 || usage ;;
	--keep) keep=${2-}; shift 2 || usage ;;
	-q) quiet=1; shift ;;
	-h|--help) usage ;;
	-*) echo "compare-devinfo.sh: unknown option $1" >&2; usage ;;
	*) dirs+=("$1"); shift ;;
	esac
done
[ ${#dirs[@]} -eq 2 ] || usage
ref_dir=${dirs[0]} test_dir=${dirs[1]}
for d in "$ref_dir" "$test_dir"; do
	for p in ibv_devinfo ibv_devices; do
		[ -x "$d/$p" ] || { echo "compare-devinfo.sh: $d/$p is not executable" >&2; exit 2; }
	done
done

if [ -n "$keep" ]; then
	work=$keep
	mkdir -p "$work" && [ -w "$work" ] || { echo "compare-devinfo.sh: cannot write to $work" >&2; exit 2; }
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/compare-devinfo.XXXXXX") || exit 2
	trap 'rm -rf "$work"' EXIT
fi

# run SIDE OUTPREFIX PROGRAM ARGS...: one run of one side, outputs captured.
run() {
	local side=$1 out=$2 prog=$3
	shift 3
	local dir libs wrap
	if [ "$side" = ref ]; then
		dir=$ref_dir libs=$ref_libs wrap=$ref_wrap
	else
		dir=$test_dir libs=$test_libs wrap=$test_wrap
	fi
	(
		unset LD_LIBRARY_PATH
		[ -n "$libs" ] && export LD_LIBRARY_PATH="$libs"
		# shellcheck disable=SC2086 # the wrapper is a word list on purpose
		exec $wrap bash -c 'p=$1; n=$2; shift 2; exec -a "$n" "$p" "$@"' \
			run "$dir/$prog" "$prog" "$@"
	) >"$out.out" 2>"$out.err" </dev/null
	echo $? >"$out.rc"
}

cases=0 failed=0
# check PROGRAM ARGS...: one case.
check() {
	local n=$((cases + 1)) what="$*" bad=""
	cases=$n
	run ref "$work/$n.ref" "$@"
	run test "$work/$n.test" "$@"
	cmp -s "$work/$n.ref.out" "$work/$n.test.out" || bad="$bad stdout"
	cmp -s "$work/$n.ref.err" "$work/$n.test.err" || bad="$bad stderr"
	cmp -s "$work/$n.ref.rc" "$work/$n.test.rc" || bad="$bad exit($(cat "$work/$n.ref.rc") vs $(cat "$work/$n.test.rc"))"
	if [ -z "$bad" ]; then
		[ $quiet = 1 ] || printf 'same  %-40s exit %s\n' "$what" "$(cat "$work/$n.ref.rc")"
		return
	fi
	failed=$((failed + 1))
	printf 'DIFF  %-40s%s\n' "$what" "$bad"
	for s in out err; do
		cmp -s "$work/$n.ref.$s" "$work/$n.test.$s" ||
			diff -u --label "ref.std$s" --label "test.std$s" \
				"$work/$n.ref.$s" "$work/$n.test.$s" | head -n 40 | sed 's/^/      /'
	done
}

check ibv_devices
check ibv_devices -v

check ibv_devinfo
check ibv_devinfo -v
check ibv_devinfo -l
check ibv_devinfo --list
check ibv_devinfo --verbose
check ibv_devinfo -i 1
check ibv_devinfo -i 1 -v
check ibv_devinfo --ib-port=1
check ibv_devinfo -i 2
check ibv_devinfo -i 2 -v
check ibv_devinfo -i 0
check ibv_devinfo -i -1
check ibv_devinfo -i abc
check ibv_devinfo -i 0x1
check ibv_devinfo -i 256
check ibv_devinfo -i 257
check ibv_devinfo -d nosuchdev
check ibv_devinfo -d nosuchdev -v
check ibv_devinfo --ib-dev=nosuchdev
check ibv_devinfo -l -d nosuchdev
check ibv_devinfo -d nosuchdev -l
check ibv_devinfo -h
check ibv_devinfo --help
check ibv_devinfo -x
check ibv_devinfo --bogus
check ibv_devinfo --ib
check ibv_devinfo --verb
check ibv_devinfo -d
check ibv_devinfo -i
check ibv_devinfo -vl
check ibv_devinfo extra-argument

# Per-device cases, for every device the reference lists.
devs=$(run ref "$work/list" ibv_devinfo -l; sed -n 's/^\t//p' "$work/list.out")
for dev in $devs; do
	check ibv_devinfo -d "$dev"
	check ibv_devinfo -d "$dev" -v
	check ibv_devinfo --ib-dev="$dev" --ib-port=1
	check ibv_devinfo -d "$dev" -i 1 -v
	check ibv_devinfo -d "$dev" -i 2
	check ibv_devinfo -d "$dev" -i 2 -v
	check ibv_devinfo -v -d "$dev" -d "$dev"
done

echo "compare-devinfo: $cases cases, $failed differ${devs:+ (devices: $(echo $devs))}"
[ $failed -eq 0 ]
