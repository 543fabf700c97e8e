#!/bin/bash
# compare-devinfo.sh: run ibv_devinfo and ibv_devices from two installations
# with the same arguments and require byte-identical stdout, stderr and exit
# status. Prints one line per case; exits 1 if any case differs, 2 on a
# usage error, 77 (skipped) when a reference program is not installed.
#
#   compare-devinfo.sh [-q] [--keep DIR] PAIR [-- PAIR]...
#   PAIR:  [--ref-libs DIR] [--test-libs DIR] [--ref-wrap CMD] [--test-wrap CMD] REF TEST
#
# REF and TEST are directories holding ibv_devinfo and ibv_devices. Several
# pairs, separated by "--", are compared one after the other.
#   --ref-libs DIR, --test-libs DIR   LD_LIBRARY_PATH for that side (default:
#                                     none, the variable is removed)
#   --ref-wrap CMD, --test-wrap CMD   command prefix for that side, split on
#                                     spaces (e.g. "valgrind -q")
#   --keep DIR                        keep the captured outputs in DIR
#   -q                                print only differing cases and totals
#
# Both sides run with the same argv[0] ("ibv_devinfo"/"ibv_devices"), since
# it is part of the usage text and getopt's messages. Device names for the
# per-device cases come from REF's "ibv_devinfo -l".
#
# Examples:
#   compare-devinfo.sh /usr/bin build/bin --test-libs build/lib
#   compare-devinfo.sh /usr/bin build/bin --test-libs build/lib \
#       -- /usr/bin /usr/bin --test-libs build/lib
set -u

usage() {
	sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0" >&2
	exit 2
}
fail_usage() {
	echo "compare-devinfo.sh: $*" >&2
	exit 2
}

keep="" quiet=0
while [ $# -gt 0 ]; do
	case "$1" in
	--keep) [ $# -ge 2 ] || usage; keep=$2; shift 2 ;;
	-q) quiet=1; shift ;;
	-h|--help) usage ;;
	*) break ;;
	esac
done

# Split the remaining arguments into pairs at each "--"; every pair is kept
# as one string of NUL-free, newline-separated words.
pairs=() current=""
for a in "$@"; do
	if [ "$a" = -- ]; then
		pairs+=("$current")
		current=""
	else
		current+="$a"$'\n'
	fi
done
pairs+=("$current")

if [ -n "$keep" ]; then
	work=$keep
	mkdir -p "$work" && [ -w "$work" ] || fail_usage "cannot write to $work"
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/compare-devinfo.XXXXXX") || exit 2
	trap 'rm -rf "$work"' EXIT
fi

# Per-pair settings, filled by parse_pair.
ref_dir="" test_dir="" ref_libs="" test_libs="" ref_wrap="" test_wrap=""

parse_pair() {
	local words=() dirs=()
	mapfile -t words <<<"${1%$'\n'}"
	ref_libs="" test_libs="" ref_wrap="" test_wrap=""
	set -- "${words[@]}"
	while [ $# -gt 0 ]; do
		case "$1" in
		--ref-libs) [ $# -ge 2 ] || usage; ref_libs=$2; shift 2 ;;
		--test-libs) [ $# -ge 2 ] || usage; test_libs=$2; shift 2 ;;
		--ref-wrap) [ $# -ge 2 ] || usage; ref_wrap=$2; shift 2 ;;
		--test-wrap) [ $# -ge 2 ] || usage; test_wrap=$2; shift 2 ;;
		-*) fail_usage "unknown option $1" ;;
		*) dirs+=("$1"); shift ;;
		esac
	done
	[ ${#dirs[@]} -eq 2 ] || usage
	ref_dir=${dirs[0]} test_dir=${dirs[1]}
	local p
	for p in ibv_devinfo ibv_devices; do
		if [ ! -x "$ref_dir/$p" ]; then
			echo "compare-devinfo.sh: no reference $ref_dir/$p: skipped" >&2
			exit 77
		fi
		[ -x "$test_dir/$p" ] || fail_usage "$test_dir/$p is not executable"
	done
}

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

cases=0 failed=0 total_cases=0 total_failed=0 dir=""
# check PROGRAM ARGS...: one case.
check() {
	local n=$((cases + 1)) what="$*" bad="" s
	cases=$n
	run ref "$dir/$n.ref" "$@"
	run test "$dir/$n.test" "$@"
	cmp -s "$dir/$n.ref.out" "$dir/$n.test.out" || bad="$bad stdout"
	cmp -s "$dir/$n.ref.err" "$dir/$n.test.err" || bad="$bad stderr"
	cmp -s "$dir/$n.ref.rc" "$dir/$n.test.rc" ||
		bad="$bad exit($(cat "$dir/$n.ref.rc") vs $(cat "$dir/$n.test.rc"))"
	if [ -z "$bad" ]; then
		[ $quiet = 1 ] || printf 'same  %-40s exit %s\n' "$what" "$(cat "$dir/$n.ref.rc")"
		return
	fi
	failed=$((failed + 1))
	printf 'DIFF  %-40s%s\n' "$what" "$bad"
	for s in out err; do
		cmp -s "$dir/$n.ref.$s" "$dir/$n.test.$s" ||
			diff -u --label "ref.std$s" --label "test.std$s" \
				"$dir/$n.ref.$s" "$dir/$n.test.$s" | head -n 40 | sed 's/^/      /'
	done
}

# compare_pair: every case for the current pair.
compare_pair() {
	cases=0 failed=0
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
	local devs dev
	devs=$(run ref "$dir/list" ibv_devinfo -l; sed -n 's/^\t//p' "$dir/list.out")
	for dev in $devs; do
		check ibv_devinfo -d "$dev"
		check ibv_devinfo -d "$dev" -v
		check ibv_devinfo --ib-dev="$dev" --ib-port=1
		check ibv_devinfo -d "$dev" -i 1 -v
		check ibv_devinfo -d "$dev" -i 2
		check ibv_devinfo -d "$dev" -i 2 -v
		check ibv_devinfo -v -d "$dev" -d "$dev"
	done
	# shellcheck disable=SC2086 # word splitting joins the names
	echo "compare-devinfo: $ref_dir${ref_libs:+ (libs $ref_libs)} vs $test_dir${test_libs:+ (libs $test_libs)}: $cases cases, $failed differ${devs:+ (devices: $(echo $devs))}"
	total_cases=$((total_cases + cases))
	total_failed=$((total_failed + failed))
}

# Validate every pair before running any.
for p in "${pairs[@]}"; do
	parse_pair "$p"
done
i=0
for p in "${pairs[@]}"; do
	i=$((i + 1))
	parse_pair "$p"
	dir=$work/pair$i
	mkdir -p "$dir" || exit 2
	compare_pair
done
[ ${#pairs[@]} -eq 1 ] || echo "compare-devinfo: $total_cases cases in ${#pairs[@]} pairs, $total_failed differ"
[ $total_failed -eq 0 ]
