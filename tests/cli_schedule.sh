#!/usr/bin/env bash
# A cosine learning rate over the run's own length (learner.schedule =
# cosine, learner.total_steps = 0): with --steps N the rate of step N is
# learner.lr_min, and halfway it is the mean of lr and lr_min; with --minutes
# it falls with the wall time, to lr_min by the end (the learner reports the
# share of the time spent). Runs without a length to span are refused
# (cli_errors.sh).
set -u
BIN=${ZT_BIN:-build/zeroth}
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

quiet=(--set arena.games=0 --set arena.positions=false --set learner.min_positions=64
    --set learner.schedule=cosine --set learner.total_steps=0 --set learner.lr=0.002
    --set learner.lr_min=0.0002 --set mode=alternate)
# The metrics' learning rate at each logged step: "step lr" lines.
rates() {
    grep '"lr"' "$1/metrics.jsonl" 2>/dev/null |
        sed -n 's/.*"step":\([0-9]*\).*"lr":\([0-9.e+-]*\).*/\1 \2/p'
}

"$BIN" train tictactoe --run "$tmp/steps" --steps 300 "${quiet[@]}" >"$tmp/steps.log" 2>&1 ||
    fail "train --steps: $(tail -n 2 "$tmp/steps.log")"
# the rate a step trained with is the schedule's at the step before the
# record's count: cos(pi (s - 1) / 300); records come at least every 100
# steps in a run's first minute
rates "$tmp/steps" | awk '
    { s = $1; want = 0.0002 + 0.0009 * (1 + cos(3.141592653589793 * (s - 1) / 300))
      if ($2 - want > 1e-7 || want - $2 > 1e-7) { print "step " s ": lr " $2 ", want " want; bad = 1 }
      n++ }
    END { if (n < 3) { print "only " n " records with a rate"; bad = 1 } exit bad }' >"$tmp/bad" ||
    fail "cosine over --steps: $(head -n 3 "$tmp/bad")"

"$BIN" train tictactoe --run "$tmp/minutes" --minutes 0.25 "${quiet[@]}" --set mode=concurrent \
    >"$tmp/minutes.log" 2>&1 || fail "train --minutes: $(tail -n 2 "$tmp/minutes.log")"
# falling, from near lr to near lr_min
rates "$tmp/minutes" | awk '
    NR == 1 { first = $2 } { if (NR > 1 && $2 > last + 1e-12) up++; last = $2; n++ }
    END { exit !(n >= 3 && first > 0.0015 && last < 0.0003 && up == 0) }' ||
    fail "cosine over --minutes: $(rates "$tmp/minutes" | tr '\n' ' ')"

if [ "$fails" -ne 0 ]; then
    echo "cli_schedule: $fails failures"
    exit 1
fi
echo "cli_schedule: all checks passed"
