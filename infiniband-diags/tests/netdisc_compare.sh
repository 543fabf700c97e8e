#!/bin/bash
# netdisc_compare.sh CASEFILE...
#
# Runs inside tests/fabric/fabric-run: for every line "TOOL ARGS..." of the
# case files, runs Debian's /usr/sbin/TOOL and ours ($OURS_BIN/TOOL, default
# $RDMA_BUILD/bin, on our libraries from $RDMA_BUILD/lib) on the simulated
# fabric and compares stdout, stderr and the exit status.
#
# Case lines: '#' comments and blank lines are skipped; the words are
# shell-expanded (so $FABRIC_DIR, quotes and 'sh -c' work); the token
# @TMP@ becomes a per-run scratch directory (ref and ours get their own, so a
# file written by the tool is compared through "cat @TMP@/x" cases:
# prefix a case with "then:" to run it in the previous case's scratch dir).
# A case prefixed "refhangs:" is one where Debian's tool never ends (a
# reference bug, say why in the case file): it passes when the reference is
# still running after $REF_HANG_SECONDS (default 15) and ours ends by itself.
#
# What is masked before comparing, and why:
#  - umad2sim's "sim_connect: attached as client" line (ours and the
#    reference print it with different pids);
#  - ibnetdiscover's "# Topology file: generated on <date>" line;
#  - the program path (usage and error messages start with argv[0]);
#  - "[pid]" in ibwarn/ibdebug prefixes.
# Scripts are run with IBPATH and PATH leading to the matching tool set.
set -u
: "${RDMA_BUILD:?run under rdma_fabric_test (RDMA_BUILD unset)}"
OURS_BIN=${OURS_BIN:-$RDMA_BUILD/bin}
OURS_LIB=${OURS_LIB:-$RDMA_BUILD/lib}
REF_BIN=/usr/sbin
work=$(mktemp -d "${TMPDIR:-/tmp}/netdisc_cmp.XXXXXX")
trap 'rm -rf "$work"' EXIT

mask() {
	sed -E -e '/sim_connect: attached as client/d' \
	    -e 's/^(# Topology file: generated on ).*/\1<date>/' \
	    -e "s#$REF_BIN/##g; s#$OURS_BIN/##g" \
	    -e 's/\[[0-9]+\]/[PID]/g' \
	    -e "s#$work/(ref|ours)#TMP#g"
}

# run_side ref|ours TOOL ARGS... -> $work/<side>.{out,err,rc}
run_side() {
	local side=$1 tool=$2
	shift 2
	local bin lib dir=$work/$side limit=120
	[ "$hang" = 0 ] || [ "$side" = ours ] || limit=${REF_HANG_SECONDS:-15}
	if [ "$side" = ref ]; then bin=$REF_BIN; lib=; else bin=$OURS_BIN; lib=$OURS_LIB; fi
	mkdir -p "$dir"
	(
		cd "$FABRIC_DIR" || exit 99
		export IBPATH=$bin
		# the perl scripts find the tools on PATH
		export PATH=$bin:$PATH
		[ -z "$lib" ] || export LD_LIBRARY_PATH=$lib
		local cmd=$tool
		case "$tool" in
		cat|sh|diff|cmp) ;;
		*) cmd=$bin/$tool;;
		esac
		# The simulator's shim goes into the tool, not into timeout: a
		# parent carrying it made every instrumented tool of ours die at
		# exit under ASan (a jump to address 0 after main returned).
		timeout "$limit" env LD_PRELOAD="$SIM_PRELOAD" "$cmd" "$@"
	) </dev/null >"$dir.out" 2>"$dir.err"
	echo $? >"$dir.rc"
}

fails=0
cases=0
for casefile in "$@"; do
	while IFS= read -r line || [ -n "$line" ]; do
		case "$line" in ''|'#'*) continue;; esac
		fresh=1
		hang=0
		case "$line" in then:*) fresh=0; line=${line#then:};; esac
		case "$line" in refhangs:*) hang=1; line=${line#refhangs:};; esac
		cases=$((cases + 1))
		[ "$fresh" = 0 ] || rm -rf "$work/ref" "$work/ours"
		for side in ref ours; do
			l=${line//@TMP@/$work/$side}
			eval "set -- $l"
			run_side "$side" "$@"
		done
		bad=
		if [ "$hang" = 1 ]; then
			if [ "$(cat "$work/ref.rc")" = 124 ] && [ "$(cat "$work/ours.rc")" != 124 ]; then
				echo "ok   [$line] (the reference hangs, ours ended with $(cat "$work/ours.rc"))"
			else
				fails=$((fails + 1))
				echo "FAIL [$line]: expected the reference to hang and ours to end (rc $(cat "$work/ref.rc") vs $(cat "$work/ours.rc"))"
			fi
			continue
		fi
		for s in out err; do
			if ! cmp -s <(mask <"$work/ref.$s") <(mask <"$work/ours.$s"); then
				bad="$bad $s"
			fi
		done
		cmp -s "$work/ref.rc" "$work/ours.rc" || bad="$bad rc($(cat "$work/ref.rc") vs $(cat "$work/ours.rc"))"
		if [ -n "$bad" ]; then
			fails=$((fails + 1))
			echo "FAIL [$line]:$bad"
			for s in out err; do
				diff <(mask <"$work/ref.$s") <(mask <"$work/ours.$s") | head -20 | sed "s/^/  $s: /"
			done
		else
			echo "ok   [$line]"
		fi
	done <"$casefile"
done
echo "$((cases - fails))/$cases cases identical"
[ "$fails" = 0 ]
