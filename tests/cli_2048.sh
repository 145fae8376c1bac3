#!/usr/bin/env bash
# 2048 from the command line: eval of a baseline (--player) and of a model
# prints the mean score with its 95 % interval and the highest tiles; the
# one-player forms refuse what does not fit (an opponent, a two-player
# game, a bad depth) in one line; and a short deterministic `zeroth train
# 2048` learns: its arena's mean score after 1000 steps is well above the
# untrained model's and random's (both measured in the same run).
set -u
BIN=${ZT_BIN:-build/zeroth}
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"
dir=$(mktemp -d /tmp/zt_cli_2048_XXXXXX)
trap 'rm -rf "$dir"' EXIT

out=$("$BIN" eval 2048 --player random --games 50 2>&1); rc=$?
if [ $rc -ne 0 ] || ! printf '%s' "$out" | grep -q '^mean score [0-9]* +- [0-9]* (95 %)' ||
    ! printf '%s' "$out" | grep -q '^highest tile: .* %'; then
    fail "eval --player random: rc=$rc, '$out'"
fi
out=$("$BIN" eval 2048 --player expectimax:1 --games 4 --seed 3 2>&1); rc=$?
if [ $rc -ne 0 ] || ! printf '%s' "$out" | grep -q '4 games of 2048 by expectimax:1'; then
    fail "eval --player expectimax:1: rc=$rc, '$out'"
fi
expect_error "one-player games" eval tictactoe --player random
expect_error "expectimax depth 9 outside" eval 2048 --player expectimax:9
expect_error "unknown player" eval 2048 --player minimax:2

# A short deterministic run; every arena also scores random.
run="$dir/run"
if ! "$BIN" train 2048 --run "$run" --steps 1000 --set mode=deterministic --set arena.games=32 \
    --set arena.opponents=random --set arena.minutes=0 --set learner.min_positions=500 \
    --set learner.batch=128 >"$dir/train.log" 2>&1; then
    fail "train 2048: $(tail -n 3 "$dir/train.log")"
fi
scores=$(grep '"kind":"score"' "$run/metrics.jsonl" 2>/dev/null)
first=$(printf '%s\n' "$scores" | grep '"player":"model"' | head -n 1 | sed 's/.*"mean":\([0-9.]*\).*/\1/')
last=$(printf '%s\n' "$scores" | grep '"player":"model"' | tail -n 1 | sed 's/.*"mean":\([0-9.]*\).*/\1/')
random=$(printf '%s\n' "$scores" | grep '"player":"random"' | head -n 1 | sed 's/.*"mean":\([0-9.]*\).*/\1/')
if [ -z "$first" ] || [ -z "$last" ] || [ -z "$random" ] ||
    ! awk -v f="$first" -v l="$last" -v r="$random" 'BEGIN { exit !(l > 1.3 * f && l > 2 * r) }'; then
    fail "train 2048 did not learn: model $first at step 0, $last at the end, random $random"
fi
echo "train 2048: mean score $first at step 0, $last after 1000 steps (random $random)"

out=$("$BIN" eval 2048 --model "$run" --games 8 --set threads=1 2>&1); rc=$?
if [ $rc -ne 0 ] || ! printf '%s' "$out" | grep -q '^mean score' ||
    ! printf '%s' "$out" | grep -q '8 games of 2048 by gumbel:16'; then
    fail "eval --model: rc=$rc, '$out'"
fi
expect_error "one-player game" eval 2048 --model "$run" --opponent random --set threads=1

if [ $fails -ne 0 ]; then
    echo "cli_2048: $fails failures"
    exit 1
fi
echo "cli_2048: ok"
