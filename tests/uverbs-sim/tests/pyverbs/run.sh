#!/bin/bash
# run.sh RUN WORK [LIBDIR [CONFIG]]: rdma-core's own Python test suite (the v44
# suite Debian ships with python3-pyverbs) on the emulated ConnectX, with
# Debian's pyverbs over Debian's libibverbs and libmlx5, or, given LIBDIR,
# over ours (LD_LIBRARY_PATH=LIBDIR). A test may pass or skip (the stack
# reports the feature absent); the ones listed in known-errors.txt
# (known-errors-ours.txt for our stack) fail for the reason written there.
# Anything else failing, or a listed test no longer failing (the list must
# stay true), fails this test. CONFIG: an emulator configuration file for
# the run ("-" for the default device; LIBDIR "-" for Debian's stack).
set -u
run=$1 work=$2 libdir=${3:-} config=${4:--}
[ "$libdir" = - ] && libdir=
cfg=()
[ "$config" = - ] || cfg=(--config "$config")
suite=/usr/share/doc/rdma-core/tests
py=/usr/bin/python3
[ -f "$suite/run_tests.py" ] || { echo "SKIP: the pyverbs test suite (python3-pyverbs) is not installed"; exit 77; }
"$py" -c 'import pyverbs.device' 2>/dev/null || { echo "SKIP: $py has no pyverbs"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
cp -r "$suite" "$work/tests"
gunzip -f "$work"/tests/*.gz
cd "$work" || exit 1
known_file=$here/known-errors.txt
if [ -n "$libdir" ]; then
	export LD_LIBRARY_PATH=$libdir
	known_file=$here/known-errors-ours.txt
else
	unset LD_LIBRARY_PATH
fi
# The suite takes 5-15 s. A run that hangs is stopped after 240 s (before
# ctest's 300) with SIGABRT, on which Python's fault handler writes every
# thread's stack into out.txt: the report then names the test that hung and
# where it waited.
PYTHONFAULTHANDLER=1 timeout -s ABRT -k 10 240 "$run" "${cfg[@]}" --dir "$work/host" "$py" tests/run_tests.py -v >"$work/out.txt" 2>&1
rc=$?
summary=$(grep -E '^(OK|FAILED)' "$work/out.txt" | tail -1)
ran=$(grep -E '^Ran [0-9]+ tests' "$work/out.txt" | tail -1)
if [ -z "$ran" ]; then
	echo "the suite did not finish (exit $rc); the test running then and every thread's stack:"
	awk '/ \.\.\. / {t=$0} /Fatal Python error/ {print t; p=1; next} p && /^Extension modules/ {exit} p' "$work/out.txt" | head -60
	[ $rc = 124 ] || [ $rc = 134 ] || tail -20 "$work/out.txt"
	exit 1
fi
ok=$(grep -cE '\.\.\. ok$' "$work/out.txt")
skipped=$(grep -cE '\.\.\. skipped' "$work/out.txt")
echo "$ran: $ok passed, $skipped skipped; $summary"
grep -E '^(ERROR|FAIL): ' "$work/out.txt" | sed -E 's/^(ERROR|FAIL): [^ ]+ \(([^)]+)\).*/\2/' | sort -u >"$work/failed.txt"
grep -vE '^\s*(#|$)' "$known_file" | awk '{print $1}' | sort -u >"$work/known.txt"
fail=0
while read -r t; do
	echo "NEW FAILURE: $t"
	# The error the test ended with: the last error line of its traceback.
	awk -v t="($t)" 'index($0, t) && /^(ERROR|FAIL): / {p=1; next} p && /^=====/ {exit} p' "$work/out.txt" |
		grep -E 'Error|assert' | tail -2 | sed 's/^/    /'
	fail=1
done < <(comm -23 "$work/failed.txt" "$work/known.txt")
while read -r t; do
	echo "NOW PASSES (remove it from $(basename "$known_file")): $t"
	fail=1
done < <(comm -13 "$work/failed.txt" "$work/known.txt")
[ $fail = 0 ] && echo "known errors: $(wc -l <"$work/known.txt") ($(basename "$known_file")), no other"
exit $fail
