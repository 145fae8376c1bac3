#!/usr/bin/env bash
# Backgammon from the command line. The equity head (net.value = equity):
# a tiny run trains with it (and with greedy fast moves) and its model plays
# eval matches, with search and greedily (--greedy); tic-tac-toe refuses it.
# Against GNU Backgammon (skipped, exit 77, where gnubg is not installed;
# scripts/install-deps.sh installs it): a tiny
# run whose arena.opponents names gnubg:0 plays its arena matches against
# gnubg to the end (every move of both sides checked legal by the arena,
# each game counted with a result), and `zeroth eval --opponent gnubg:0`
# plays a full match and reports points per game; the arena's points per
# game reach the metrics and the report's panel. A run whose net values the
# positions before a roll (net.chance_values) trains, records it in its
# weights and plays its arena greedily (arena.sims = 0), and eval and play
# play its model greedily by default.
set -u
BIN=${ZT_BIN:-build/zeroth}
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"
dir=$(mktemp -d /tmp/zt_cli_backgammon_XXXXXX)
trap 'rm -rf "$dir"' EXIT

tiny=(--set mode=deterministic --set games_per_actor=2 --set search.sims=4
      --set selfplay.root_cache=false --set learner.batch=16 --set learner.min_positions=16
      --set arena.sims=2 --set arena.positions=0 --set net.kind=mlp --set net.mlp_hidden=16
      --set net.mlp_layers=1 --set backend=ref)

eq="$dir/equity"
if ! "$BIN" train backgammon --run "$eq" --steps 2 --set net.value=equity --set arena.games=2 \
    --set arena.opponents=pubeval --set selfplay.full_search_fraction=0.5 \
    --set selfplay.fast_moves=greedy "${tiny[@]}" >"$dir/equity.out" 2>&1; then
    fail "train with net.value=equity: $(tail -n 3 "$dir/equity.out")"
fi
grep -q "value=equity:" "$eq/ckpt/$(cat "$eq/ckpt/latest" 2>/dev/null)/weights.safetensors" 2>/dev/null ||
    fail "the equity run's weights do not record value=equity"
grep '"kind":"train"' "$eq/metrics.jsonl" 2>/dev/null | tail -n 1 | grep -q '"loss_value":[0-9]' ||
    fail "the equity run has no value loss: $(grep '"kind":"train"' "$eq/metrics.jsonl" | tail -n 1)"
out=$("$BIN" eval backgammon --model "$eq" --opponent pubeval --games 4 --sims 2 \
    --set backend=ref 2>&1) || fail "eval of the equity model: $out"
printf '%s\n' "$out" | grep -q "^4 games against pubeval" || fail "equity eval: $out"
out=$("$BIN" eval backgammon --model "$eq" --opponent pubeval --games 2 --greedy \
    --set backend=ref 2>&1) || fail "eval --greedy: $out"
printf '%s\n' "$out" | grep -q "greedy, no search" && printf '%s\n' "$out" | grep -q "^2 games against pubeval" ||
    fail "eval --greedy: $out"
out=$("$BIN" train backgammon --run "$dir/mix" --steps 1 --set learner.root_value_weight=0.5 2>&1) &&
    fail "the equity head accepted learner.root_value_weight"
printf '%s' "$out" | grep -q "root_value_weight = 0.5 needs net.value = scalar" ||
    fail "root_value_weight with equity: $out"
out=$("$BIN" train tictactoe --run "$dir/ttt" --steps 1 --set net.value=equity 2>&1) &&
    fail "tic-tac-toe accepted net.value=equity"
printf '%s' "$out" | grep -q "equity head is for games of 1/2/3-point results" ||
    fail "tic-tac-toe equity refusal: $out"

# Values before the roll (net.chance_values): a tiny run records them, its
# weights say so ("... chance"), its arena plays greedily (arena.sims=0) and
# its model plays eval matches; games without positions before a roll
# refuse the key.
cv="$dir/chance"
if ! "$BIN" train backgammon --run "$cv" --steps 2 --set net.chance_values=true --set arena.games=2 \
    --set arena.opponents=pubeval --set selfplay.full_search_fraction=0.5 \
    --set selfplay.fast_moves=greedy "${tiny[@]}" --set arena.sims=0 >"$dir/chance.out" 2>&1; then
    fail "train with net.chance_values=true: $(tail -n 3 "$dir/chance.out")"
fi
grep -q "norm=layer chance" "$cv/ckpt/$(cat "$cv/ckpt/latest" 2>/dev/null)/weights.safetensors" 2>/dev/null ||
    fail "the chance-values run's weights do not record it"
n=$(grep -c '"kind":"arena","opponent":"pubeval","arena_games":2,' "$cv/metrics.jsonl" 2>/dev/null)
[ "${n:-0}" -eq 2 ] || fail "expected 2 greedy arena matches, got ${n:-0}"
out=$("$BIN" eval backgammon --model "$cv" --opponent pubeval --games 4 --sims 2 \
    --set backend=ref 2>&1) || fail "eval of the chance-values model: $out"
printf '%s\n' "$out" | grep -q "^4 games against pubeval" || fail "chance-values eval: $out"
# ... and, its arena having played greedily, eval and play play it so by
# default (--sims searches; --greedy with --sims is refused).
out=$("$BIN" eval backgammon --model "$cv" --opponent pubeval --games 2 --set backend=ref 2>&1) ||
    fail "eval of the chance-values model, its default: $out"
printf '%s\n' "$out" | grep -q "greedy, no search, as its run's arena played" ||
    fail "eval did not play the greedy run greedily: $out"
out=$(printf 'quit\n' | "$BIN" play backgammon --model "$cv" --first agent --seed 3 \
    --set backend=ref 2>&1) || fail "play of the chance-values model: $out"
printf '%s\n' "$out" | grep -q "agent: greedy, no search, as its run's arena played" &&
    printf '%s\n' "$out" | grep -q "greedy, the best end of its turn" &&
    printf '%s\n' "$out" | grep -q "^agent plays " || fail "play did not play greedily: $out"
out=$(printf 'quit\n' | "$BIN" play backgammon --model "$cv" --first agent --seed 3 --sims 2 \
    --set backend=ref 2>&1) || fail "play --sims 2: $out"
printf '%s\n' "$out" | grep -q "agent: gumbel search" || fail "play --sims 2 did not search: $out"
"$BIN" play backgammon --model "$cv" --greedy --sims 2 </dev/null >/dev/null 2>&1
[ $? -eq 2 ] || fail "play --greedy --sims 2 was not a usage error"
# One ply deeper (--plies 1): eval and play; refused for a search.
out=$("$BIN" eval backgammon --model "$cv" --opponent pubeval --games 2 --plies 1 \
    --set backend=ref 2>&1) || fail "eval --plies 1: $out"
printf '%s\n' "$out" | grep -q "greedy 1-ply, no search" && printf '%s\n' "$out" |
    grep -q "^2 games against pubeval" || fail "eval --plies 1: $out"
out=$(printf 'quit\n' | "$BIN" play backgammon --model "$cv" --first agent --seed 3 --plies 1 \
    --set backend=ref 2>&1) || fail "play --plies 1: $out"
printf '%s\n' "$out" | grep -q "agent: greedy 1-ply" && printf '%s\n' "$out" |
    grep -q "^agent plays " || fail "play --plies 1: $out"
out=$("$BIN" eval backgammon --model "$cv" --opponent pubeval --games 2 --sims 2 --plies 1 \
    --set backend=ref 2>&1) && fail "eval --sims 2 --plies 1 was accepted"
printf '%s\n' "$out" | grep -q "plies is for greedy play" || fail "eval --sims --plies: $out"
out=$("$BIN" train backgammon --run "$dir/rvcv" --steps 1 --set net.value=scalar \
    --set learner.root_value_weight=0.5 2>&1) && fail "chance values accepted a root-value mix"
printf '%s' "$out" | grep -q "root_value_weight = 0.5 needs net.chance_values = false" ||
    fail "root_value_weight with chance values: $out"
out=$("$BIN" train connect4 --run "$dir/c4cv" --steps 1 --set net.chance_values=true 2>&1) &&
    fail "connect4 accepted net.chance_values=true"
printf '%s' "$out" | grep -q "net.chance_values: .* has no chance states a net can value" ||
    fail "connect4 chance_values refusal: $out"

if ! command -v gnubg >/dev/null && [ ! -x /usr/games/gnubg ] && [ -z "${ZT_GNUBG:-}" ]; then
    [ $fails -eq 0 ] || exit 1
    echo "SKIP: gnubg is not installed (scripts/install-deps.sh installs it); the equity checks passed"
    exit 77
fi

run="$dir/run"
if ! "$BIN" train backgammon --run "$run" --steps 1 --set mode=deterministic \
    --set games_per_actor=2 --set search.sims=4 --set selfplay.root_cache=false \
    --set learner.batch=16 --set learner.min_positions=16 --set arena.games=4 \
    --set arena.opponents=gnubg:0 --set arena.sims=2 --set arena.positions=0 \
    --set net.kind=mlp --set net.mlp_hidden=16 --set net.mlp_layers=1 \
    --set backend=ref >"$dir/train.out" 2>&1; then
    fail "train with arena.opponents=gnubg:0: $(tail -n 3 "$dir/train.out")"
fi
# The arena at the start and at the end: both matches complete, every game
# a win or a loss (backgammon has no draws).
n=$(grep -c '"kind":"arena","opponent":"gnubg:0","arena_games":4,' "$run/metrics.jsonl" 2>/dev/null)
[ "${n:-0}" -eq 2 ] || fail "expected 2 complete arena matches against gnubg:0, got ${n:-0}: $(grep arena "$run/metrics.jsonl" 2>/dev/null)"
if grep '"opponent":"gnubg:0"' "$run/metrics.jsonl" | grep -qv '"draws":0,'; then
    fail "a backgammon game against gnubg ended without a winner"
fi

# The arena's points per game, in the metrics and as the report's panel.
grep '"opponent":"gnubg:0"' "$run/metrics.jsonl" | grep -q '"points":-\{0,1\}[0-9.]*,"points_lo":' ||
    fail "the arena records no points per game: $(grep arena "$run/metrics.jsonl")"
out=$("$BIN" report "$run" 2>&1) || fail "report: $out"
grep -q "Strength: points per game" "$run/report.html" 2>/dev/null ||
    fail "the report has no points-per-game panel"
printf '%s' "$out" | grep -q "vs gnubg:0 .* points per game" || fail "report summary: $out"

out=$("$BIN" eval backgammon --model "$run" --opponent gnubg:0 --games 4 --sims 2 \
    --set backend=ref 2>&1) || fail "eval --opponent gnubg:0: $out"
printf '%s\n' "$out" | grep -q "^4 games against gnubg:0" || fail "eval: no 4 games against gnubg:0: $out"
printf '%s\n' "$out" | grep -q "^points per game [+-][0-9.]* \[[+-][0-9.]*, [+-][0-9.]*\] (95 % interval; 2 pairs of games, duplicate dice)" || fail "eval: no points per game: $out"

# A misspelt ply count is refused before the run starts, naming the entry.
out=$("$BIN" train backgammon --run "$dir/bad" --steps 1 --set arena.opponents=gnubg:7 2>&1) &&
    fail "arena.opponents=gnubg:7 accepted"
printf '%s' "$out" | grep -q "arena.opponents: 'gnubg:7'" || fail "gnubg:7: $out"

[ $fails -eq 0 ] && echo "cli_backgammon: all checks passed"
[ $fails -eq 0 ]
