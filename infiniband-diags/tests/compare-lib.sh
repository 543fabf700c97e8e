# compare-lib.sh: what compare-sa.sh and compare-smp.sh share, sourced by
# both. The sourcing script sets build (the build tree), debian_lib, out
# (the results folder) and n (the case number), and defines
# normalize FILE (masks the values that change from run to run).

# our_libs LIB...: " LIB..." for those of them build/lib has (our tools
# then use Debian's for the rest), " none" when it has none.
our_libs() {
    local l libs=
    for l in "$@"; do
        [ -e "$build/lib/$l" ] && libs+=" $l"
    done
    echo "${libs:- none}"
}

# run VARIANT TOOL ARGS...: one run under umad2sim with argv[0] TOOL,
# bounded by 60 s, results in $out/<n>.<variant>.{out,err}(.raw), .rc and
# .secs (.out and .err normalized). Variants:
#   ref      Debian's /usr/sbin/<tool>
#   ours     build/bin/<tool> on our libraries (LD_LIBRARY_PATH=build/lib)
#   ours-deb build/bin/<tool> on Debian's libraries
#   ref-ours Debian's tool on our libraries
run() {
    local variant=$1 tool=$2; shift 2
    local exe lib=
    case $variant in
    ref)      exe=/usr/sbin/$tool;;
    ours)     exe=$build/bin/$tool; lib=$build/lib;;
    ours-deb) exe=$build/bin/$tool; lib=$debian_lib;;
    ref-ours) exe=/usr/sbin/$tool; lib=$build/lib;;
    esac
    local base=$out/$n.$variant start=$SECONDS
    env ${lib:+LD_LIBRARY_PATH=$lib} timeout 60 \
        bash -c 'exe=$1; name=$2; export LD_PRELOAD=$3; shift 3; exec -a "$name" "$exe" "$@"' \
        run "$exe" "$tool" "$SIM_PRELOAD" "$@" </dev/null >"$base.out.raw" 2>"$base.err.raw"
    echo $? >"$base.rc"
    echo $((SECONDS - start)) >"$base.secs"
    normalize "$base.out.raw" >"$base.out"
    normalize "$base.err.raw" >"$base.err"
}

# compare VARIANT LINE: the variant's run of case n against the reference's
# (stdout, stderr, exit code); one ok/FAIL line (with the first lines of
# the differences), counted in pass/fail.
compare() {
    local v=$1 line=$2 what=
    cmp -s "$out/$n.ref.out" "$out/$n.$v.out" || what+=" stdout"
    cmp -s "$out/$n.ref.err" "$out/$n.$v.err" || what+=" stderr"
    cmp -s "$out/$n.ref.rc" "$out/$n.$v.rc" ||
        what+=" rc($(cat "$out/$n.ref.rc")/$(cat "$out/$n.$v.rc"))"
    if [ -z "$what" ]; then
        pass=$((pass+1))
        echo "ok   [$v] rc=$(cat "$out/$n.ref.rc") $(cat "$out/$n.$v.secs")s: $line"
    else
        fail=$((fail+1))
        echo "FAIL [$v]$what: $line"
        diff "$out/$n.ref.out" "$out/$n.$v.out" | head -${DIFF_LINES:-10}
        diff "$out/$n.ref.err" "$out/$n.$v.err" | head -${DIFF_LINES:-10}
    fi
}

# summary: the counts; fails when anything differed.
summary() {
    echo "$pass passed, $fail failed, $skip skipped"
    [ "$fail" = 0 ]
}
