#!/usr/bin/env bash
# Runs the libFuzzer harnesses built in BUILD (make fuzz builds them), each
# for SECONDS from its seed corpus tests/fuzz/corpus/NAME plus what earlier
# runs found (BUILD/corpus/NAME, where new inputs go). A crash, leak,
# sanitizer report, hang (over 10 s) or memory blow-up (over 2 GB) stops
# that harness, leaves the input in BUILD/crashes/NAME-*, and makes the
# script fail after the others ran. One summary line per harness.
# ZT_FUZZ_SEED fixes libFuzzer's random seed (CI sets it, so that a run
# there explores the same inputs every time and a finding is reproducible);
# without it each run draws its own.
# Usage: scripts/fuzz.sh BUILD SECONDS NAME...
set -u
if [ $# -lt 3 ]; then
    echo "usage: scripts/fuzz.sh BUILD SECONDS NAME..." >&2
    exit 2
fi
build=$1 seconds=$2
shift 2
cd "$(dirname "$0")/.."
failed=()
for name in "$@"; do
    bin="$build/fuzz_$name"
    if [ ! -x "$bin" ]; then
        echo "fuzz: no harness $bin (make fuzz builds them)" >&2
        exit 2
    fi
    mkdir -p "$build/corpus/$name" "$build/crashes"
    log="$build/fuzz_$name.log"
    seed_arg=()
    if [ -n "${ZT_FUZZ_SEED:-}" ]; then seed_arg=(-seed="$ZT_FUZZ_SEED"); fi
    "$bin" "${seed_arg[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$build/crashes/$name-" "$build/corpus/$name" "tests/fuzz/corpus/$name" \
        >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
    if [ "$rc" -eq 0 ]; then
        echo "fuzz $name: ${runs:-?} runs, ${speed:-?} exec/s, $cov, no finding"
    else
        echo "fuzz $name: FAILED (exit $rc) after ${runs:-?} runs; log $log, input in $build/crashes/"
        grep -E '^==[0-9]+==ERROR|^SUMMARY|fuzz: property failed|runtime error' "$log" | head -n 5
        failed+=("$name")
    fi
done
if [ ${#failed[@]} -ne 0 ]; then
    echo "fuzz: findings in ${failed[*]}" >&2
    exit 1
fi
