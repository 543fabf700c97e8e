#!/bin/bash
# pyverbs-suite.sh BUILD [DEV]: rdma-core's own Python test suite (v44, as
# Debian ships it with python3-pyverbs in /usr/share/doc/rdma-core/tests)
# through Debian's pyverbs, once on Debian's libraries (the reference) and
# once on ours (LD_LIBRARY_PATH=BUILD/lib), on the RDMA device DEV (default:
# the first one). Prints each side's totals and every test whose outcome
# differs; fails when a test fails or errors on ours but not on the
# reference. Exit 77 without Debian's python3-pyverbs or the suite.
set -u
build=${1:?usage: pyverbs-suite.sh BUILD [DEV]}
dev=${2:-$(ls /sys/class/infiniband 2>/dev/null | head -n 1)}
py=/usr/bin/python3
suite=/usr/share/doc/rdma-core/tests
[ -x "$py" ] && "$py" -c 'import pyverbs' 2>/dev/null && [ -f "$suite/run_tests.py" ] ||
    { echo "SKIP: Debian's python3-pyverbs (and its test suite) not installed"; exit 77; }
[ -n "$dev" ] || { echo "pyverbs-suite: no RDMA device"; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/pyverbs-suite.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Debian compresses the larger modules of the suite: unpack a copy.
cp -r "$suite" "$work/tests"
find "$work/tests" -name '*.gz' -exec gunzip -f {} +

# run SIDE: the suite's verbose unittest report -> $work/SIDE.log, and one
# "STATUS NAME" line per test -> $work/SIDE.res.
run() {
    local side=$1
    (
        cd "$work/tests" || exit 2
        unset LD_LIBRARY_PATH
        [ "$side" = ref ] || export LD_LIBRARY_PATH=$build/lib
        HOME=$work timeout 900 "$py" run_tests.py --dev "$dev" -v
    ) >"$work/$side.log" 2>&1
    echo $? >"$work/$side.rc"
    # "test_x (tests.test_y.Class.test_x) ... ok" (possibly with the
    # docstring's first line in between); a test that prints before its
    # verdict puts the verdict on a later line. The key is the full
    # module.Class.test name (test names repeat across classes).
    awk '
        /^test[^ ]* \([^ ]*\)/ { name = $2; gsub(/[()]/, "", name) }
        function verdict(v) {
            if (v ~ /^ok$/) return "ok"
            if (v ~ /^skipped/) return "skip"
            if (v ~ /^FAIL$/) return "FAIL"
            if (v ~ /^ERROR$/) return "ERROR"
            if (v ~ /^expected failure$/) return "xfail"
            return ""
        }
        name != "" {
            v = $0
            if (v ~ / \.\.\. /) sub(/.* \.\.\. /, "", v)
            if ((s = verdict(v)) != "") { res[name] = s; name = "" }
        }
        END { for (n in res) print res[n], n }' "$work/$side.log" | sort -k2,2 >"$work/$side.res"
}

totals() {
    awk '{c[$1]++} END {printf "%d ok, %d FAIL, %d ERROR, %d skipped", c["ok"], c["FAIL"], c["ERROR"], c["skip"]}' "$1"
}

run ref
run ours
echo "pyverbs-suite on $dev: reference: $(totals "$work/ref.res") (exit $(cat "$work/ref.rc"))"
echo "pyverbs-suite on $dev: ours:      $(totals "$work/ours.res") (exit $(cat "$work/ours.rc"))"
[ -s "$work/ref.res" ] && [ -s "$work/ours.res" ] ||
    { echo "pyverbs-suite: a run reported no tests"; tail -30 "$work/ref.log" "$work/ours.log"; exit 1; }
bad=0
join -1 2 -2 2 -a 1 -a 2 -e none -o 0,1.1,2.1 "$work/ref.res" "$work/ours.res" >"$work/both"
while read -r name r o; do
    [ "$r" = "$o" ] && continue
    echo "differs: $name: reference $r, ours $o"
    case "$o" in
    FAIL|ERROR|none) case "$r" in FAIL|ERROR) ;; *) bad=$((bad + 1)) ;; esac ;;
    esac
done <"$work/both"
if [ "$bad" != 0 ]; then
    echo "pyverbs-suite: $bad test(s) fail on ours but not on the reference; our run's failures:"
    awk '/^(FAIL|ERROR): /,/^-{20,}$/' "$work/ours.log" | head -150
    exit 1
fi
echo "pyverbs-suite: no failure the reference does not also have"
