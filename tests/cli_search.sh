#!/usr/bin/env bash
# eval and play on a run follow the run's search settings (RUN/config.ini,
# search.*) unless flags override them; a checkpoint directory of the run
# does too; a bare weights file plays with the defaults; bad search.* values
# are refused naming the key; the net plays on one thread unless told.
set -u
BIN=${ZT_BIN:-build/zeroth}
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"
dir=$(mktemp -d /tmp/zt_cli_search_XXXXXX)
trap 'rm -rf "$dir"' EXIT

# A two-step run whose self-play searches 5 simulations with PUCT.
run="$dir/run"
if ! "$BIN" train tictactoe --run "$run" --steps 2 --set mode=deterministic \
    --set games_per_actor=8 --set search.algorithm=puct --set search.sims=5 \
    --set learner.batch=16 --set learner.min_positions=32 --set arena.games=0 \
    --set arena.positions=0 --set net.kind=mlp --set net.mlp_hidden=16 --set net.mlp_layers=1 \
    --set selfplay.root_cache_sims=8 --set backend=ref >/dev/null 2>&1; then
    fail "train: the tiny run failed"
fi
ckpt="$run/ckpt/$(cat "$run/ckpt/latest" 2>/dev/null)"
weights="$ckpt/weights.safetensors"

# expect_first "what the first output line must hold" CMD...
expect_first() {
    local want=$1; shift
    local out rc
    out=$("$BIN" "$@" 2>&1 </dev/null); rc=$?
    local first
    first=$(printf '%s\n' "$out" | head -n 1)
    if [ "$rc" -ne 0 ] || ! printf '%s' "$first" | grep -q -- "$want"; then
        fail "zeroth $* -> rc=$rc, first line '$first' (wanted '$want')"
    fi
}

match=(--opponent random --games 2 --set backend=ref)
expect_first "puct, 5 simulations" eval tictactoe --model "$run" "${match[@]}"
expect_first "puct, 5 simulations" eval tictactoe --model "$ckpt" "${match[@]}"
expect_first "puct, 3 simulations" eval tictactoe --model "$run" "${match[@]}" --sims 3
expect_first "puct, 4 simulations" eval tictactoe --model "$run" "${match[@]}" --set search.sims=4
expect_first "gumbel, 5 simulations" eval tictactoe --model "$run" "${match[@]}" \
    --set search.algorithm=gumbel
expect_first "raw policy" eval tictactoe --model "$run" "${match[@]}" --sims 0
expect_first "gumbel, 32 simulations" eval tictactoe --model "$weights" "${match[@]}"
# A playing net runs on one thread unless told (ZT_RUN_PLAY_THREADS: more
# threads than free cores slow small batches many times over).
expect_first "ref nn on 1 thread)" eval tictactoe --model "$run" "${match[@]}"
expect_first "ref nn on 2 threads)" eval tictactoe --model "$run" "${match[@]}" --set threads=2

out=$("$BIN" eval tictactoe --model "$run" "${match[@]}" 2>&1)
printf '%s\n' "$out" | grep -q "search settings of $run/config.ini" ||
    fail "eval on a run does not say where its search settings come from: $out"

out=$("$BIN" play tictactoe --model "$run" --set backend=ref --seed 1 </dev/null 2>&1)
printf '%s\n' "$out" | grep -q "^5 simulations per move" ||
    fail "play on a run does not search the run's 5 simulations: $out"
out=$("$BIN" play tictactoe --model "$run" --set backend=ref --seed 1 --sims 2 </dev/null 2>&1)
printf '%s\n' "$out" | grep -q "^2 simulations per move" || fail "play --sims 2: $out"

expect_error "key 'search.sims'" eval tictactoe --model "$run" "${match[@]}" --set search.sims=-1
expect_error "key 'search.algorithm'" eval tictactoe --model "$run" "${match[@]}" \
    --set search.algorithm=mcts
expect_error "key 'search.leaves_per_tree'" play tictactoe --model "$run" \
    --set search.leaves_per_tree=0
expect_error "unknown key 'sims'" eval tictactoe --model "$run" "${match[@]}" --set sims=3

if [ "$fails" -ne 0 ]; then
    echo "$fails failures"
    exit 1
fi
echo "cli search: all checks passed"
