#!/usr/bin/env bash
# precision = auto's choice of int8 actors (docs/networks.md, "Precision"):
# a concurrent run times the actors' net in int8 against bf16 at its start
# and runs the actors in int8 from int8.auto_speedup times faster, logging
# the ratio either way; the choice is written to the run's config.ini, so a
# resume keeps int8 actors without timing again. A deterministic run never
# times anything. Skipped where the cpu backend has no int8 (AVX512_VNNI).
set -u
BIN=${ZT_BIN:-build/zeroth}
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

quiet=(--set arena.games=0 --set arena.positions=false --set learner.min_positions=64
    --set checkpoint.keep=0)
# the top-level key (before the first [section]: [muzero] has one too)
precision_of() { sed -n '/^\[/q; s/^precision = \([a-z0-9]*\).*/\1/p' "$1/config.ini"; }

if ! "$BIN" train tictactoe --run "$tmp/probe" --steps 2 --set precision=int8 "${quiet[@]}" \
    >"$tmp/probe.log" 2>&1; then
    if grep -q "has no int8 here" "$tmp/probe.log"; then
        echo "cli_int8: skipped (no int8 on the cpu backend here)"
        exit 0
    fi
    fail "precision=int8 run: $(tail -n 2 "$tmp/probe.log")"
fi

# auto_speedup 0: int8 wherever it runs
"$BIN" train tictactoe --run "$tmp/int8" --steps 20 --set int8.auto_speedup=0 "${quiet[@]}" \
    >"$tmp/int8.log" 2>&1 || fail "auto, auto_speedup 0: $(tail -n 2 "$tmp/int8.log")"
grep -Eq "precision auto: int8 actors \(int8 runs their net at [0-9.]+x (bf16|fp32)'s speed" \
    "$tmp/int8.log" || fail "auto chose no int8 actors at auto_speedup 0: $(grep -m1 'precision auto' "$tmp/int8.log")"
grep -q "info: int8 actors: a version is quantised" "$tmp/int8.log" ||
    fail "auto's int8 actors have no gate"
[ "$(precision_of "$tmp/int8")" = int8 ] ||
    fail "config.ini holds precision = '$(precision_of "$tmp/int8")', not int8"
grep -q '"kind":"int8"' "$tmp/int8/metrics.jsonl" || fail "no int8 record in metrics.jsonl"
# the resume keeps int8 actors from config.ini, with no timing
"$BIN" train --resume "$tmp/int8" --steps 30 "${quiet[@]}" >"$tmp/resume.log" 2>&1 ||
    fail "resume: $(tail -n 2 "$tmp/resume.log")"
grep -q "precision auto" "$tmp/resume.log" && fail "the resume timed int8 again"
grep -q "info: int8 actors: a version is quantised" "$tmp/resume.log" ||
    fail "the resume lost its int8 actors"

# an auto_speedup no CPU reaches: the fallback, with the ratio said
"$BIN" train tictactoe --run "$tmp/slow" --steps 20 --set int8.auto_speedup=1000 "${quiet[@]}" \
    >"$tmp/slow.log" 2>&1 || fail "auto, auto_speedup 1000: $(tail -n 2 "$tmp/slow.log")"
grep -Eq "precision auto: (bf16|fp32) actors \(int8 runs their net at [0-9.]+x (bf16|fp32)'s speed" \
    "$tmp/slow.log" || fail "auto at auto_speedup 1000: $(grep -m1 'precision auto' "$tmp/slow.log")"
grep -q "info: int8 actors:" "$tmp/slow.log" && fail "int8 actors at auto_speedup 1000"
[ "$(precision_of "$tmp/slow")" = auto ] ||
    fail "config.ini holds precision = '$(precision_of "$tmp/slow")', not auto"

# deterministic: no timing, the fallback
"$BIN" train tictactoe --run "$tmp/det" --steps 10 --set mode=deterministic \
    --set int8.auto_speedup=0 "${quiet[@]}" >"$tmp/det.log" 2>&1 ||
    fail "deterministic: $(tail -n 2 "$tmp/det.log")"
grep -q "precision auto" "$tmp/det.log" && fail "a deterministic run timed int8"
grep -q "info: int8 actors:" "$tmp/det.log" && fail "a deterministic run chose int8 actors"

[ "$fails" -eq 0 ] && echo "cli_int8: all checks passed"
exit $((fails > 0))
