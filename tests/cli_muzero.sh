#!/usr/bin/env bash
# The commands on a MuZero run (algorithm = muzero): a tiny run trains and
# checkpoints (its step-0 losses in the metrics; bench fit trains fresh
# nets on its replay checkpoint, and the run's own, judging its position
# sets as its arena did); eval plays it against random with its
# search and with the raw policy and judges positions; play takes a move
# and quits; report writes the page; bench selfplay runs its actors; a bare
# weights file plays as the MuZero net its architecture names; 2048 (one
# player) trains and reports a score; backgammon trains its to-play head
# and plays pubeval. The same for Stochastic MuZero (algorithm =
# stochastic_muzero): tic-tac-toe, 2048 and backgammon train, their weights
# name the codebook and play, their chance losses are in the metrics.
set -u
BIN=${ZT_BIN:-build/zeroth}
SRC=${ZT_SOURCE_DIR:-.}
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"
dir=$(mktemp -d /tmp/zt_cli_muzero_XXXXXX)
trap 'rm -rf "$dir"' EXIT

# The last arena's mean score of a 2048 run RUN must be positive; WHAT and
# STEPS name the run in the messages.
check_score() {
    local run=$1 what=$2 steps=$3 score
    score=$(grep '"kind":"score"' "$run/metrics.jsonl" 2>/dev/null | grep '"player":"model"' |
        tail -n 1 | sed 's/.*"mean":\([0-9.]*\).*/\1/')
    if [ -z "$score" ] || ! awk -v s="$score" 'BEGIN { exit !(s > 0) }'; then
        fail "train 2048 with $what reported no mean score"
    else
        echo "train 2048 with $what: mean score $score after $steps steps"
    fi
}

# backgammon's turns are several moves by one player: with algorithm ALG
# its net has g's to-play head (" turns" in the architecture), the run
# trains it (a train_turn record) from the game's own config (net.value =
# equity there is the AlphaZero net's), and eval plays pubeval with it
check_backgammon() {
    local alg=$1 bg="$dir/bg_$1" out weights
    if ! "$BIN" train backgammon --run "$bg" --steps 2 --set algorithm="$alg" \
        --set mode=deterministic --set games_per_actor=2 --set search.sims=4 \
        --set learner.batch=16 --set learner.min_positions=16 --set arena.games=0 \
        --set muzero.channels=16 --set muzero.unroll=3 --set muzero.codes=4 \
        --set precision=fp32 >"$dir/bg_$alg.log" 2>&1; then
        fail "train backgammon with $alg: $(tail -n 2 "$dir/bg_$alg.log")"
        return
    fi
    weights="$bg/ckpt/$(cat "$bg/ckpt/latest" 2>/dev/null)/weights.safetensors"
    grep -aq 'valc=1[ a-z0-9=]* turns heads=plain' "$weights" 2>/dev/null ||
        fail "backgammon with $alg: the weights name no to-play head and plain heads"
    grep '"kind":"train_turn"' "$bg/metrics.jsonl" 2>/dev/null | tail -n 1 |
        grep -q '"loss_turn":[0-9]' || fail "backgammon with $alg: no train_turn record"
    out=$("$BIN" eval backgammon --model "$bg" --opponent pubeval --games 2 --sims 4 2>&1) ||
        fail "eval backgammon with $alg: $out"
    printf '%s\n' "$out" | grep -q "^2 games against pubeval" ||
        fail "eval backgammon with $alg: $out"
    echo "backgammon with $alg: trained, $(printf '%s\n' "$out" | grep -m 1 '^points per game')"
}

# a layer norm over one number would make every value head a constant:
# muzero.heads = norm is refused on backgammon's one cell, in one line
out=$("$BIN" train backgammon --run "$dir/bg_norm" --steps 1 --set algorithm=muzero \
    --set muzero.heads=norm 2>&1) && fail "muzero.heads=norm on backgammon was accepted"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q 'muzero.heads = norm' ||
    fail "muzero.heads=norm on backgammon was not refused in one line: $out"

tiny=(--set algorithm=muzero --set mode=deterministic --set games_per_actor=8
      --set search.sims=8 --set learner.batch=16 --set learner.min_positions=40
      --set arena.games=2 --set arena.positions_limit=10 --set selfplay.root_cache_sims=8
      --set muzero.unroll=3 --set precision=fp32)
run="$dir/run"
if ! "$BIN" train tictactoe --run "$run" --steps 3 "${tiny[@]}" \
    --set muzero.selfplay.random_move_fraction=0.125 >"$dir/train.log" 2>&1; then
    fail "train: the tiny muzero run failed: $(tail -n 2 "$dir/train.log")"
fi
grep -q '^algorithm = muzero' "$run/config.ini" 2>/dev/null || fail "config.ini does not say muzero"
# the policy and value losses split into step 0's and the unrolled steps'
grep '"kind":"train_unroll"' "$run/metrics.jsonl" 2>/dev/null | tail -n 1 |
    grep -q '"loss_policy0":[0-9.]*[1-9][0-9]*,"loss_value0":[0-9.]*[1-9]' ||
    fail "the muzero run's metrics hold no step-0 losses: $(grep train_unroll "$run/metrics.jsonl")"
# EfficientZero's consistency term: its batches carry the next observations,
# and its loss is recorded
crun="$dir/consistency"
if ! "$BIN" train tictactoe --run "$crun" --steps 3 "${tiny[@]}" --set muzero.consistency=2 \
    >"$dir/consistency.log" 2>&1; then
    fail "train with muzero.consistency=2: $(tail -n 2 "$dir/consistency.log")"
fi
grep '"kind":"train_consistency"' "$crun/metrics.jsonl" 2>/dev/null | tail -n 1 |
    grep -q '"loss_consistency":0\.[0-9]*[1-9]' ||
    fail "the consistency run recorded no consistency loss: $(tail -n 3 "$crun/metrics.jsonl")"
# muzero.SECTION.KEY replaces SECTION.KEY in a muzero run (both written to
# config.ini), and only there: an AlphaZero run keeps the selfplay key as it
# was; the keys [muzero] names itself (muzero.c_scale) are refused this way
[ "$(grep -c '^random_move_fraction = 0.125$' "$run/config.ini" 2>/dev/null)" = 2 ] ||
    fail "muzero.selfplay.random_move_fraction did not replace selfplay's: $(grep -n random_move "$run/config.ini")"
if "$BIN" train tictactoe --run "$dir/az" --steps 1 --set mode=deterministic \
    --set learner.min_positions=40 --set arena.games=0 --set arena.positions=false \
    --set muzero.selfplay.random_move_fraction=0.125 >"$dir/az.log" 2>&1; then
    [ "$(grep -c '^random_move_fraction = 0.125$' "$dir/az/config.ini" 2>/dev/null)" = 1 ] ||
        fail "an alphazero run took muzero.selfplay's key: $(grep -n random_move "$dir/az/config.ini")"
else
    fail "train: an alphazero run with a muzero.selfplay key failed: $(tail -n 2 "$dir/az.log")"
fi
expect_error "key 'muzero.search.c_scale': set muzero.c_scale instead" train tictactoe \
    --run "$dir/cs" --steps 1 --set algorithm=muzero --set muzero.search.c_scale=0.2
# a misspelt muzero.SECTION.KEY is an unknown key in either kind of run
for alg in alphazero muzero; do
    expect_error "unknown key 'muzero.learner.lrr' (no key 'learner.lrr')" train tictactoe \
        --run "$dir/typo-$alg" --steps 1 --set algorithm=$alg --set muzero.learner.lrr=0.1
done

out=$("$BIN" eval tictactoe --model "$run" --opponent random --games 4 --sims 4 2>&1) ||
    fail "eval with search: $out"
printf '%s' "$out" | grep -q 'W-D-L' || fail "eval with search printed no W-D-L: $out"
out=$("$BIN" eval tictactoe --model "$run" --opponent random --games 4 --sims 0 2>&1) ||
    fail "eval with the raw policy: $out"
positions=$(ls "$SRC"/../shared/data/tictactoe/ttt_positions.txt "$SRC"/tests/data/tictactoe/ttt_positions.txt 2>/dev/null | head -n 1)
if [ -n "$positions" ]; then
    out=$("$BIN" eval tictactoe --model "$run" --positions "$positions" --limit 20 --sims 4 2>&1) ||
        fail "eval --positions: $out"
    printf '%s' "$out" | grep -q 'optimal' || fail "eval --positions printed no result: $out"
    # the net's value from its representation, beside the moves
    printf '%s' "$out" | grep -Eq '^net value: .*RMSE [0-9.]+$' ||
        fail "eval --positions printed no net value: $out"
fi
out=$(printf '4\nquit\n' | "$BIN" play tictactoe --model "$run" --first human --sims 4 2>&1) ||
    fail "play: $out"
printf '%s' "$out" | grep -q 'abandoned' || fail "play did not take the move and quit: $out"
out=$("$BIN" report "$run" 2>&1) || fail "report: $out"
[ -s "$run/report.html" ] || fail "report wrote no page"
out=$("$BIN" bench selfplay tictactoe --seconds 3 --set algorithm=muzero --set games_per_actor=8 \
    --set search.sims=8 --set selfplay.root_cache_sims=8 2>&1) || fail "bench selfplay: $out"
printf '%s' "$out" | grep -q 'net muzero' || fail "bench selfplay did not run a muzero net: $out"
printf '%s' "$out" | grep -Eq 'initial [0-9.]+ \([0-9.]+\) recurrent [0-9.]+' ||
    fail "bench selfplay did not count the initial and recurrent calls apart: $out"

weights="$run/ckpt/$(cat "$run/ckpt/latest" 2>/dev/null)/weights.safetensors"
out=$("$BIN" eval tictactoe --model "$weights" --opponent random --games 2 2>&1)
rc=$?
if [ "$rc" -ne 0 ]; then
    fail "a bare muzero weights file: $out"
fi

# 2048 (one player, rewards on every move): a short deterministic run
# trains and its arena reports a mean score (no learning bar: a few
# hundred steps of MuZero do not reach one on two cores).
run2048="$dir/run2048"
if ! "$BIN" train 2048 --run "$run2048" --steps 100 --set algorithm=muzero --set mode=deterministic \
    --set arena.games=8 --set arena.opponents=random --set arena.minutes=0 \
    --set learner.min_positions=300 --set learner.batch=32 --set search.sims=8 \
    --set games_per_actor=16 --set muzero.unroll=3 --set precision=fp32 \
    >"$dir/train2048.log" 2>&1; then
    fail "train 2048 with muzero: $(tail -n 2 "$dir/train2048.log")"
fi
check_score "$run2048" muzero 100
check_backgammon muzero

# Connect Four's own config gives its MuZero runs column actions, outcome
# rewards and AdamW at 0.001 (what took it to 3.4 % of Test_L2_R1 in two
# hours, docs/muzero.md), while its AlphaZero runs keep SGD at 0.02.

# KEY's value in SECTION of the run's config.ini FILE
ini_value() {
    awk -v sec="[$2]" -v key="$3" '/^\[/ { in_sec = ($0 == sec) }
        in_sec && $1 == key && $2 == "=" { print $3; exit }' "$1"
}

c4small=(--steps 1 --set mode=deterministic --set games_per_actor=2 --set search.sims=4
         --set learner.batch=16 --set learner.min_positions=16 --set arena.games=0
         --set arena.positions=false --set precision=fp32)
for alg in muzero alphazero; do
    c4="$dir/c4_$alg"
    if ! "$BIN" train connect4 --run "$c4" "${c4small[@]}" --set algorithm=$alg \
        --set muzero.channels=16 >"$dir/c4_$alg.log" 2>&1; then
        fail "train connect4 with $alg: $(tail -n 2 "$dir/c4_$alg.log")"
        continue
    fi
    got="$(ini_value "$c4/config.ini" learner optimizer) $(ini_value "$c4/config.ini" learner lr)"
    if [ $alg = muzero ]; then
        [ "$got" = "adamw 0.001" ] || fail "connect4's MuZero learner is '$got', want 'adamw 0.001'"
        for key in outcome_reward action_columns; do
            [ "$(ini_value "$c4/config.ini" muzero $key)" = true ] ||
                fail "connect4's MuZero run has muzero.$key off"
        done
        w="$c4/ckpt/$(cat "$c4/ckpt/latest" 2>/dev/null)/weights.safetensors"
        grep -aq 'valc=1 columns' "$w" 2>/dev/null ||
            fail "connect4's MuZero weights name no column actions"
        grep -aq 'heads=plain' "$w" 2>/dev/null &&
            fail "connect4's MuZero heads are plain, not the default layer norm"
    else
        [ "$got" = "sgd 0.02" ] || fail "connect4's AlphaZero learner is '$got', want 'sgd 0.02'"
    fi
done

# Stochastic MuZero (the 2048 run with categorical heads and 5-step value targets)
srun="$dir/srun"
if ! "$BIN" train tictactoe --run "$srun" --steps 3 "${tiny[@]}" --set algorithm=stochastic_muzero \
    --set muzero.codes=4 >"$dir/strain.log" 2>&1; then
    fail "train: the tiny stochastic muzero run failed: $(tail -n 2 "$dir/strain.log")"
fi
grep -q '^algorithm = stochastic_muzero' "$srun/config.ini" 2>/dev/null ||
    fail "config.ini does not say stochastic_muzero"
out=$("$BIN" eval tictactoe --model "$srun" --opponent random --games 4 --sims 8 2>&1) ||
    fail "stochastic eval with search: $out"
printf '%s' "$out" | grep -q 'W-D-L' || fail "stochastic eval printed no W-D-L: $out"
sweights="$srun/ckpt/$(cat "$srun/ckpt/latest" 2>/dev/null)/weights.safetensors"
out=$("$BIN" eval tictactoe --model "$sweights" --opponent random --games 2 --sims 8 2>&1) ||
    fail "a bare stochastic muzero weights file: $out"
grep -a -q 'codes=4' "$sweights" 2>/dev/null || fail "the weights' architecture names no codebook"

s2048="$dir/s2048"
if ! "$BIN" train 2048 --run "$s2048" --steps 60 --set algorithm=stochastic_muzero \
    --set mode=deterministic --set arena.games=4 --set arena.opponents=random --set arena.minutes=0 \
    --set learner.min_positions=300 --set learner.batch=32 --set search.sims=8 \
    --set games_per_actor=16 --set muzero.unroll=3 --set muzero.codes=8 --set muzero.support=10 \
    --set muzero.td_steps=5 --set muzero.code_balance=1 --set precision=fp32 \
    --set muzero.discount=0.997 >"$dir/strain2048.log" 2>&1; then
    fail "train 2048 with stochastic muzero: $(tail -n 2 "$dir/strain2048.log")"
fi
check_score "$s2048" "stochastic muzero" 60
# the discount is the search's too, so eval and play on the run search with it
[ "$(grep -c '^discount = 0.997$' "$s2048/config.ini" 2>/dev/null)" = 2 ] ||
    fail "config.ini does not give the search the run's discount: $(grep discount "$s2048/config.ini")"
expect_error "muzero.discount = 0.99: tictactoe has two players" train tictactoe \
    --run "$dir/d1" --steps 1 --set algorithm=muzero --set muzero.discount=0.99 --set muzero.td_steps=2
expect_error "muzero.discount = 0.99 needs muzero.td_steps > 0" train 2048 --run "$dir/d2" \
    --steps 1 --set algorithm=muzero --set muzero.discount=0.99
expect_error "search.discount = 0.99: only MuZero runs discount" train 2048 --run "$dir/d3" \
    --steps 1 --set search.discount=0.99
grep -q '"kind":"train_chance".*"loss_chance"' "$s2048/metrics.jsonl" 2>/dev/null ||
    fail "the stochastic 2048 run's metrics hold no chance losses"
# the codes' balance (muzero.code_balance): reported, in (0, C = 8] (C sum_j
# f_j P_j: 1 when the codes are used alike, C when one code takes all)
balance=$(grep '"kind":"train_chance"' "$s2048/metrics.jsonl" 2>/dev/null | tail -n 1 |
    sed -n 's/.*"loss_code_balance":\([0-9.]*\).*/\1/p')
awk -v b="${balance:-0}" 'BEGIN { exit !(b > 0 && b <= 8) }' ||
    fail "the 2048 run's codes' balance is missing or out of range: $(grep train_chance "$s2048/metrics.jsonl" | tail -n 1)"
expect_error "muzero.code_balance" train 2048 --run "$dir/s2048b" --steps 1 \
    --set algorithm=stochastic_muzero --set muzero.code_balance=-1
# the game's own spawns as codes (muzero.chance = game): 33 codes train and
# report the codes' perplexity; 32 are refused in one line. The run's nets
# are flat (muzero.flat): the 4 x 4 x 16 planes read as one vector of 256
# on one cell, the heads plain, and eval loads them for the game
g2048="$dir/g2048"
if ! "$BIN" train 2048 --run "$g2048" --steps 20 --set algorithm=stochastic_muzero \
    --set mode=deterministic --set arena.games=2 --set arena.opponents=random --set arena.minutes=0 \
    --set learner.min_positions=300 --set learner.batch=32 --set search.sims=8 \
    --set games_per_actor=16 --set muzero.unroll=3 --set muzero.chance=game --set muzero.codes=33 \
    --set precision=fp32 --set muzero.flat=true >"$dir/g2048.log" 2>&1; then
    fail "train 2048 with muzero.chance=game: $(tail -n 2 "$dir/g2048.log")"
fi
gweights="$g2048/ckpt/$(cat "$g2048/ckpt/latest" 2>/dev/null)/weights.safetensors"
grep -aq 'muzero in=1x1x256 actions=4 [ a-z0-9=:]* codes=33 heads=plain' "$gweights" 2>/dev/null ||
    fail "the flat 2048 net is not 1x1x256 with plain heads: $(grep -ao 'muzero in=[^"]*' "$gweights")"
out=$("$BIN" eval 2048 --model "$gweights" --games 2 --sims 4 2>&1) ||
    fail "eval of the flat 2048 weights: $out"
printf '%s' "$out" | grep -q '^mean score' || fail "eval of the flat 2048 net printed no score: $out"
expect_error "muzero.heads = norm on a one-cell board (2048, muzero.flat)" train 2048 \
    --run "$dir/flatnorm" --steps 1 --set algorithm=muzero --set muzero.flat=true \
    --set muzero.heads=norm
expect_error "muzero.flat and muzero.action_columns" train connect4 --run "$dir/flatcols" \
    --steps 1 --set algorithm=muzero --set muzero.flat=true --set muzero.action_columns=true
grep '"kind":"train_chance"' "$g2048/metrics.jsonl" 2>/dev/null | tail -n 1 |
    grep -q '"loss_commitment":0.000000,"code_perplexity":[1-9]' ||
    fail "the chance=game run has commitment or no code perplexity: $(grep train_chance "$g2048/metrics.jsonl" | tail -n 1)"
expect_error "muzero.codes >= 33" train 2048 --run "$dir/g2048b" --steps 1 \
    --set algorithm=stochastic_muzero --set muzero.chance=game

# bench muzero times each network call and the unrolled train step, the
# afterstate too for a stochastic net
for alg in muzero stochastic_muzero; do
    out=$("$BIN" bench muzero tictactoe --seconds 0.1 --batch 4 --set algorithm=$alg \
        --set learner.batch=8 2>&1) || fail "bench muzero ($alg): $out"
    want="initial recurrent train"
    [ "$alg" = stochastic_muzero ] && want="$want afterstate"
    for w in $want; do
        printf '%s\n' "$out" | grep -q "^$w .*/s" || fail "bench muzero ($alg) printed no $w row: $out"
    done
done
# the train step of the batches a run's learner gets: to-play targets for
# backgammon's to-play head, the game's codes with muzero.chance = game
for args in "backgammon" \
    "2048 --set algorithm=stochastic_muzero --set muzero.chance=game --set muzero.codes=33"; do
    # shellcheck disable=SC2086 # $args is a game and its flags
    out=$("$BIN" bench muzero $args --seconds 0.1 --batch 4 --set learner.batch=8 2>&1) ||
        fail "bench muzero $args: $out"
    printf '%s\n' "$out" | grep -q '^train .*steps/s' || fail "bench muzero $args: no train row: $out"
done
out=$("$BIN" bench muzero tictactoe --seconds 0.1 --batch 4 --set algorithm=muzero 2>&1)
printf '%s\n' "$out" | grep -q '^afterstate' && fail "bench muzero timed an afterstate of a plain net"
# --json (bench/torch_muzero.py reads it) and --export (its weights and reference batch)
out=$("$BIN" bench muzero tictactoe --seconds 0.1 --batch 4 --set learner.batch=8 --json 2>&1) ||
    fail "bench muzero --json: $out"
[ "$(printf '%s\n' "$out" | grep -c '^{"call":"\(initial\|recurrent\|train\)"')" -eq 3 ] ||
    fail "bench muzero --json printed no initial, recurrent and train objects: $out"
out=$("$BIN" bench muzero tictactoe --export "$dir/export" 2>&1) || fail "bench muzero --export: $out"
[ -s "$dir/export/muzero.safetensors" ] && [ -s "$dir/export/muzero.io.safetensors" ] ||
    fail "bench muzero --export wrote no weights and reference batch"
out=$("$BIN" eval tictactoe --model "$dir/export/muzero.safetensors" --opponent random --games 2 \
    --sims 4 2>&1) || fail "the exported weights do not play: $out"
out=$("$BIN" bench muzero tictactoe --export "$dir/export2" --set algorithm=stochastic_muzero 2>&1)
[ $? -ne 0 ] && [ "$(printf '%s\n' "$out" | grep -c .)" -eq 1 ] ||
    fail "bench muzero --export of a stochastic net was not refused in one line: $out"

# bench fit trains fresh nets on the tiny run's replay checkpoint, no
# self-play: a MuZero net prints step 0's losses, an AlphaZero net its own
replay=$(ls "$run"/ckpt/*/replay.bin 2>/dev/null | tail -n 1)
for alg in muzero alphazero; do
    out=$("$BIN" bench fit tictactoe --replay "$replay" --steps 2 --every 1 --set algorithm=$alg \
        --set learner.batch=16 --set muzero.unroll=3 --set precision=fp32 2>&1) ||
        fail "bench fit ($alg): $out"
    want='^step      2  policy [0-9.]*  value [0-9.]*'
    [ "$alg" = muzero ] && want='^step      2  policy0 [0-9.]*  value0 [0-9.]*  policy_unrolled'
    printf '%s\n' "$out" | grep -q "$want" || fail "bench fit ($alg) printed no losses: $out"
done
# from the run's own weights and settings, judging its position sets: before
# the first step it judges them as the run's last arena did (the same
# weights, search and positions: the same moves, and the same net values on
# the wrong side)
out=$("$BIN" bench fit tictactoe --replay "$replay" --config "$run/config.ini" --model "$run" \
    --positions --steps 1 --every 1 2>&1) || fail "bench fit --model --positions: $out"
record=$(grep '"kind":"positions"' "$run/metrics.jsonl" | tail -n 1)
last=$(printf '%s' "$record" | sed 's/.*"n":\([0-9]*\),"m":\([0-9]*\).*/\1\/\2/')
vw=$(printf '%s' "$record" | sed 's/.*"value_wrong":\[\([0-9]*\),\([0-9]*\),\([0-9]*\)\].*/\1 \2 \3/' |
    awk '{ print $1 + $2 + $3 }')
[ "$(printf '%s\n' "$out" | grep -A1 '^step      0$' |
    grep -c "ttt_positions optimal $last (value wrong $vw)\$")" = 1 ] ||
    fail "bench fit --model --positions at step 0: wanted the run's last arena ($last, value wrong $vw): $out"
[ "$(printf '%s\n' "$out" | grep -Ec 'ttt_positions optimal [0-9]*/10 \(value wrong [0-9]+\)$')" = 2 ] ||
    fail "bench fit --positions did not judge the set before and after its step: $out"
# (weights of another net are refused in one line: here AlphaZero's settings)
err=$("$BIN" bench fit tictactoe --replay "$replay" --model "$run" --steps 1 2>&1 >/dev/null)
[ $? -ne 0 ] && [ "$(printf '%s\n' "$err" | grep -c "holds architecture 'muzero")" = 1 ] ||
    fail "bench fit --model with another net's settings was not refused in one line: $err"
out=$("$BIN" bench fit tictactoe --replay "$dir/none.bin" 2>&1)
[ $? -ne 0 ] && [ "$(printf '%s\n' "$out" | grep -c .)" -eq 1 ] ||
    fail "bench fit without a replay file was not refused in one line: $out"

# bench model judges the tiny run's parts on solved positions: its policy's
# first move is the move eval's raw policy plays, so the share it keeps the
# value (all positions, won ones) is the share eval --sims 0 judges right
out=$("$BIN" bench model tictactoe --model "$run" --positions "$positions" --limit 40 \
    --replay "$replay" 2>&1) || fail "bench model: $out"
mine=$(printf '%s\n' "$out" | sed -n "s/^ *policy's first move *\([0-9.]*\) % *\([0-9.]*\) %$/\1 \2/p")
ev=$("$BIN" eval tictactoe --model "$run" --positions "$positions" --limit 40 --sims 0 2>&1)
theirs=$(printf '%s\n' "$ev" | awk '/ judged in / { all = $(NF - 2) }
    /^by value: won optimal/ { split($5, c, "/"); won = 100 * c[1] / c[2] }
    END { if (all != "") printf "%.1f %.1f", all, won }')
[ -n "$mine" ] && [ "$mine" = "$theirs" ] ||
    fail "bench model's policy ($mine) is not eval --sims 0's ($theirs): $out"
printf '%s\n' "$out" | grep -q '^positions .*: 40 (' || fail "bench model judged not 40: $out"
for what in "one model step" "one rules step"; do
    printf '%s\n' "$out" | grep -q "^ *$what .* [0-9.]* %  *[0-9.]* %$" ||
        fail "bench model printed no '$what' line: $out"
done
printf '%s\n' "$out" | grep -q '^  self-play took a win in [0-9.]* % ([0-9]* of [0-9]*)$' ||
    fail "bench model --replay printed no self-play line: $out"
# an AlphaZero net, and --recent without a replay, are refused in one line
err=$("$BIN" bench model tictactoe --model "$dir/az" --positions "$positions" 2>&1)
[ $? -ne 0 ] && [ "$(printf '%s\n' "$err" | grep -c 'is not a MuZero net')" = 1 ] ||
    fail "bench model on an AlphaZero net was not refused in one line: $err"
err=$("$BIN" bench model tictactoe --model "$run" --positions "$positions" --recent 5 2>&1)
[ $? -ne 0 ] && [ "$(printf '%s\n' "$err" | grep -c .)" = 1 ] ||
    fail "bench model --recent without --replay was not refused in one line: $err"

check_backgammon stochastic_muzero

if [ "$fails" -ne 0 ]; then
    echo "cli_muzero: $fails failures"
    exit 1
fi
echo "cli_muzero: all checks passed"
