#!/usr/bin/env bash
# Bad input gets a one-line error naming the problem and a non-zero exit;
# --help works for every subcommand.
set -u
BIN=${ZT_BIN:-build/zeroth}
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"

expect_ok() {
    if ! "$BIN" "$@" >/dev/null 2>&1; then
        echo "FAIL: zeroth $* should succeed"
        fails=$((fails + 1))
    fi
}

expect_error "unknown command" frobnicate
expect_error "unknown game 'chess'" perft chess 2
expect_error "DEPTH" perft tictactoe x
expect_error "chance" perft backgammon 2
expect_error "vertices" perft sim 2 --set vertices=3
expect_error "vertices" perft sim 2 --set vertices=19
expect_error "'k'" perft sim 2 --set k=7
expect_error "k" perft sim 2 --set vertices=5 --set k=6
expect_error "variant" perft sim 2 --set variant=sideways
expect_error "unknown key 'colour'" perft tictactoe 2 --set colour=red
expect_error "=" perft tictactoe 2 --set novalue
expect_error "cannot open" solve tictactoe --positions /nonexistent/file
expect_error "no exact solver" solve backgammon --positions /dev/null
expect_error "8" perft connect4 1 --position 4458
expect_error "position" moves backgammon --position 'not-an-id!!!' --dice 31
expect_error "dice" moves backgammon --position 4HPwATDgc/ABMA --dice 71
expect_error "dice" moves backgammon --position 4HPwATDgc/ABMA --dice ab
expect_error "backgammon" moves connect4 --position 4HPwATDgc/ABMA --dice 31
expect_error "unknown benchmark" bench nothing
expect_error "seconds" bench selfplay --seconds x
expect_error "unknown key 'colour'" bench selfplay --set colour=red
expect_error "unknown game" bench selfplay chess
expect_ok bench selfplay --help

for cmd in games perft solve moves bench; do
    expect_ok "$cmd" --help
done
expect_ok --help

# The device key (docs/cuda.md): a bad name always; asking for a GPU where
# none is found (bench devices says which) is "no CUDA GPU found: why",
# before any run directory is made.
tmp_run=$(mktemp -d)/run
expect_error "unknown device 'gpu'" train tictactoe --run "$tmp_run" --set device=gpu
expect_error "unknown device 'cuda:x'" train tictactoe --run "$tmp_run" --set device=cuda:x
# A calibrated resignation threshold with no games played out to calibrate on.
expect_error "selfplay.resign_false_rate = 0.05 calibrates on played-out games" train backgammon \
    --run "$tmp_run" --set selfplay.resign=true --set selfplay.resign_playout_fraction=0
# MuZero's outcome rewards are a two-player game's.
expect_error "muzero.outcome_reward is for two-player games" train 2048 --run "$tmp_run" \
    --set algorithm=muzero --set muzero.outcome_reward=true
# A playout cap's fast searches run in the full searches' trees: no more
# simulations than those.
expect_error "selfplay.fast_sims = 64 exceeds search.sims = 32" train tictactoe --run "$tmp_run" \
    --set selfplay.full_search_fraction=0.5 --set selfplay.fast_sims=64
expect_error "arena.opponents: 'alphabeta:3': player 'alphabeta' exists for connect4" train \
    tictactoe --run "$tmp_run" --set arena.opponents=random,alphabeta:3
expect_error "arena.opponents: 'random' is listed twice" train tictactoe --run "$tmp_run" \
    --set arena.opponents=random,random
expect_error "selfplay.opening_players is set but no game has a random opening" train tictactoe \
    --run "$tmp_run" --set selfplay.opening_players=perfect --set selfplay.random_opening_fraction=0
expect_error "selfplay.opening_players: 'nobody': unknown player 'nobody'" train tictactoe --run "$tmp_run" \
    --set selfplay.opening_players=perfect,nobody
expect_error "learner.total_steps = 0 anneals the cosine over the run's length" train tictactoe \
    --run "$tmp_run" --set learner.schedule=cosine --set learner.total_steps=0
expect_error "learner.total_steps = 0 anneals the cosine" train tictactoe --run "$tmp_run" \
    --minutes 1 --set mode=deterministic --set learner.schedule=cosine --set learner.total_steps=0
expect_error "selfplay.resign_false_rate" train tictactoe --run "$tmp_run" \
    --set selfplay.resign_false_rate=0.7
if "$BIN" bench devices --help >/dev/null 2>&1 && ! "$BIN" bench devices --net bg-mlp512 \
    --seconds 0.001 2>/dev/null | grep -q '^GPU: none found'; then
    echo "cli_errors: a GPU is present: the no-GPU errors are test_cuda's to check there"
else
    expect_error "no CUDA GPU found: " train tictactoe --run "$tmp_run" --set device=cuda
    expect_error "no CUDA GPU found: " train tictactoe --run "$tmp_run" --set backend=cuda
    expect_error "no CUDA GPU found: " bench nn --backend cuda --net c4-64x5 --batch 1
    [ -e "$tmp_run" ] && { echo "FAIL: device=cuda without a GPU made $tmp_run"; fails=$((fails + 1)); }
fi
rm -rf "$(dirname "$tmp_run")"

# Two baselines' match (eval --player X --opponent Y): the perfect
# tic-tac-toe player never loses to random play, and UCT with random
# rollouts (mcts:N) holds it to draws; a one-player game has no opponent,
# and a model's flags are refused with a baseline.
out=$("$BIN" eval tictactoe --player perfect --opponent random --games 20 2>&1 | tail -n 1)
case $out in "W-D-L "*-*-0,*) ;; *) echo "FAIL: perfect vs random: $out"; fails=$((fails + 1)) ;; esac
out=$("$BIN" eval tictactoe --player perfect --opponent mcts:2000 --games 10 2>&1 | tail -n 1)
case $out in "W-D-L 0-10-0,"*) ;; *) echo "FAIL: perfect vs mcts:2000: $out"; fails=$((fails + 1)) ;; esac
expect_error "2048 is a one-player game" eval 2048 --player random --opponent random
expect_error "simulations must be an integer" eval sim --player mcts:0 --opponent random
"$BIN" eval sim --player mcts:10 --opponent random --sims 3 >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: --sims with two baselines was not a usage error"; fails=$((fails + 1)); }

# The count is the last line of perft.
last=$("$BIN" perft tictactoe 9 | tail -n 1)
[ "$last" = "127872" ] || { echo "FAIL: perft tictactoe 9 = $last, want 127872"; fails=$((fails + 1)); }
last=$("$BIN" perft connect4 6 | tail -n 1)
[ "$last" = "117649" ] || { echo "FAIL: perft connect4 6 = $last, want 117649"; fails=$((fails + 1)); }

if [ "$fails" -ne 0 ]; then
    echo "$fails failures"
    exit 1
fi
echo "cli: all checks passed"
