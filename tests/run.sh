#!/bin/bash
# Runs every suite: unit test binaries, then integration scripts. Each suite
# prints TAP-style "ok - name" / "not ok - name" lines; a suite that exits
# non-zero without reporting a failure counts as one failure. Ends with the
# single line "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD
export EXECD_BIN="$PWD/$BUILD/bin/execd"
export OSB_HELPERS="$PWD/$BUILD/tests/helpers"
FILTER=${TEST_FILTER:-}
log=$(mktemp -d /tmp/osb-test.XXXXXX)
pass=0 fail=0

run_suite() { # name cmd...
    local name=$1; shift
    [ -n "$FILTER" ] && [[ "$name" != *$FILTER* ]] && return
    local out="$log/$(echo "$name" | tr '/' '_').log"
    local start=$SECONDS
    timeout -k 5 600 "$@" >"$out" 2>&1
    local rc=$?
    local p f
    p=$(grep -c '^ok ' "$out")
    f=$(grep -c '^not ok ' "$out")
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
        f=1
        echo "not ok - $name exited with status $rc" >>"$out"
    fi
    pass=$((pass + p)); fail=$((fail + f))
    printf '%-45s %4d passed %3d failed  %3ds\n' "$name" "$p" "$f" $((SECONDS - start))
    if [ "$f" != 0 ]; then
        grep -E '^not ok |^#' "$out" | head -40 | sed 's/^/    /'
        echo "    (full log: $out)"
    fi
}

for t in "$BUILD"/tests/*/test_*; do
    [ -x "$t" ] || continue
    run_suite "unit/${t#"$BUILD"/tests/}" "$t"
done
# Fuzz smoke: each libFuzzer target replays its seed corpus and mutates for
# a few seconds (new inputs go to a scratch directory, not the tree).
for f in build/fuzz/fuzz_*; do
    [ -x "$f" ] || continue
    name=${f##*/fuzz_}
    scratch=$(mktemp -d /tmp/osb-fuzz.XXXXXX)
    run_suite "fuzz/$name" bash -c "'$f' -max_total_time=10 -rss_limit_mb=4096 '$scratch' \
        'fuzz/corpus/$name' >'$log/fuzz_$name.out' 2>&1 && echo 'ok - $name: no crash' ||
        { tail -30 '$log/fuzz_$name.out'; echo 'not ok - $name: fuzzer found a crash'; }"
    rm -rf "$scratch"
done
for t in tests/integration/test_*.py; do
    [ -f "$t" ] || continue
    run_suite "integration/$(basename "$t" .py)" /usr/bin/python3 "$t"
done
for t in tests/sdk/test_*.sh; do
    [ -f "$t" ] || continue
    run_suite "sdk/$(basename "$t" .sh)" bash "$t"
done

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
