#!/bin/bash
# run-fuzz.sh [SECONDS] [--merge]: fuzz the cache reader with libFuzzer
# (clang, AddressSanitizer and UBSan) for a bounded time, starting from
# corpus/cache.  New inputs go to a scratch corpus; --merge folds the ones
# that add coverage back into corpus/cache (commit them: ctest replays
# them with gcc).  A crash leaves crash-* files in the current directory
# and a non-zero exit.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
secs=${1:-60}
merge=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
inc="-I$src -I$src/libibnetdisc/include -I$src/libibmad/include -I$src/libibumad/include"
clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    $inc -o "$work/fuzz_cache" "$here/fuzz_cache.cpp" \
    "$src/libibnetdisc/fabric.cpp" "$src/libibnetdisc/chassis.cpp" "$src/libibnetdisc/cache.cpp" \
    -libmad
mkdir -p "$work/corpus"
cp "$here"/corpus/cache/* "$work/corpus/"
"$work/fuzz_cache" -max_total_time="$secs" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 "$work/corpus"
if [ "$merge" = --merge ]; then
    "$work/fuzz_cache" -merge=1 "$here/corpus/cache" "$work/corpus"
fi
