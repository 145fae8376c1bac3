#!/usr/bin/env bash
# A training run as the operating system and a careless command line treat
# it (issue 10): an empty, root or file run directory is refused with
# nothing written; a flag where a value belongs is refused by every
# subcommand; SIGTERM and SIGHUP stop a run after a checkpoint (exit 0) and a
# second signal stops it at once (exit 128 + signal); a run directory in use
# refuses a second trainer naming the holder's pid while eval still reads
# it; --config layers over configs/GAME.ini, its game = line is honoured or
# refused, a key set twice is refused; ZT_FAULT's errno names reach the
# message; more busy threads than cores warn and switch OpenMP to passive
# waiting.
set -u
BIN=${ZT_BIN:-build/zeroth}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
CONFIGS=${ZT_SOURCE_DIR:-.}/configs
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT

# lines FILE: how many lines FILE has (0 if none).
lines() { if [ -e "$1" ]; then wc -l <"$1"; else echo 0; fi; }

# wait_for FILE PATTERN [SKIP] [SECONDS]: until FILE has a line matching
# PATTERN after its first SKIP lines.
wait_for() {
    local file=$1 pattern=$2 skip=${3:-0} limit=${4:-60} i
    for ((i = 0; i < limit * 20; i++)); do
        tail -n +$((skip + 1)) "$file" 2>/dev/null | grep -q -- "$pattern" && return 0
        sleep 0.05
    done
    return 1
}

quick=(--set arena.games=0 --set arena.positions=0 --set learner.min_positions=100)

# ---- 1. run directories that are none; nothing written ----
mkdir "$tmp/empty" && cd "$tmp/empty" || exit 1
touch afile
expect_error "name is empty" train tictactoe --run "" --steps 1
expect_error "name is empty" train --resume ""
expect_error "filesystem root" train tictactoe --run / --steps 1
expect_error "filesystem root" train tictactoe --run // --steps 1
expect_error "is a file" train tictactoe --run afile --steps 1
expect_error "is a file" train --resume afile
[ "$(ls -A)" = "afile" ] || fail "refused runs wrote into the working directory: $(ls -A | tr '\n' ' ')"
[ -e /config.ini ] && [ /config.ini -nt "$tmp" ] && fail "a refused run wrote /config.ini"

# ---- 8. a flag where a value belongs ----
expect_error "--run needs a value, not the flag '--minutes'" train tictactoe --run --minutes 1
expect_error "--resume needs a value" train --resume --steps 5
expect_error "--model needs a value" eval tictactoe --model --games 2
expect_error "--opponent needs a value" eval tictactoe --model x --opponent --games 2
expect_error "--model needs a value" play tictactoe --model --sims 2
expect_error "--positions needs a value" solve tictactoe --positions --limit 2
expect_error "--position needs a value" perft tictactoe 2 --position --set
expect_error "--dice needs a value" moves backgammon --position 4HPwATDgc/ABMA --dice --x
expect_error "--seconds needs a value" bench games --seconds --threads 1
expect_error "--set needs a value" bench selfplay --set --seconds
expect_error "--config needs a value" train tictactoe --config --run x
[ "$(ls -A)" = "afile" ] || fail "refused flags wrote into the working directory: $(ls -A | tr '\n' ' ')"
cd "$tmp" || exit 1

# ---- 4. --config over configs/GAME.ini ----
printf 'game = tictactoe\n[learner]\nmin_positions = 100\n[arena]\ngames = 0\npositions = false\n' >my.ini
"$BIN" train --config my.ini --run "$tmp/layered" --steps 3 >/dev/null 2>&1 ||
    fail "train --config my.ini (game = tictactoe in it)"
ini="$tmp/layered/config.ini"
grep -q '^game = tictactoe' "$ini" || fail "the game of --config was not honoured"
# from configs/tictactoe.ini (the built-in default is a resnet and 1M positions)
grep -q '^kind = mlp' "$ini" && grep -q '^capacity = 50000' "$ini" ||
    fail "configs/tictactoe.ini was not under --config: $(grep -E '^(kind|capacity)' "$ini" | tr '\n' ' ')"
grep -q '^min_positions = 100' "$ini" || fail "--config's own keys were not applied"
printf 'game = connect4\n' >c4.ini
expect_error "say game = connect4, but the command line names tictactoe" train tictactoe --config c4.ini --run "$tmp/x1"
expect_error "but the run plays tictactoe" train --resume "$tmp/layered" --config c4.ini
expect_error "not connect4" train connect4 --resume "$tmp/layered"
printf '[search]\nsims = 8\n\n[search]\nsims = 16\n' >dup.ini
expect_error "key 'search.sims' is set twice (lines 2 and 5)" train tictactoe --config dup.ini --run "$tmp/x2"
[ -e "$tmp/x1" ] || [ -e "$tmp/x2" ] && fail "a refused config created its run directory"
printf 'game = tictactoe\n[search]\nsims = 4\n' >t.ini
out=$("$BIN" bench selfplay --config t.ini --seconds 0.2 2>&1)
printf '%s' "$out" | grep -q '(50000 positions)' ||
    fail "bench selfplay --config t.ini did not layer over configs/tictactoe.ini: $(printf '%s' "$out" | tail -n 3)"
expect_error "say game = connect4, but the command line names tictactoe" bench selfplay tictactoe --config c4.ini
# the shipped overlay for Sim on K14 names its game and board, and its net
out=$("$BIN" bench selfplay --config "$CONFIGS/sim-k14.ini" --seconds 0.1 2>&1)
printf '%s' "$out" | grep -qi 'self-play sim: .* net mlp in=14x14x5 actions=91 ' ||
    fail "configs/sim-k14.ini: $(printf '%s' "$out" | head -n 2)"

# ---- ZT_FAULT with an errno ----
out=$(ZT_FAULT=rename:1:ENOSPC "$BIN" train tictactoe --run "$tmp/nospace" --steps 2 "${quick[@]}" 2>&1); rc=$?
last=$(printf '%s\n' "$out" | tail -n 1)
[ "$rc" -ne 0 ] && printf '%s' "$last" | grep -q "No space left on device" ||
    fail "ZT_FAULT=rename:1:ENOSPC: rc=$rc, last line: $last"

# ---- 2, 3. signals and the lock ----
# SIGTERM on a new run (the issue's case: nothing was checkpointed yet),
# SIGHUP on its resume, which also meets a second trainer and a reader
run="$tmp/sig"
for sig in TERM HUP; do
    log0=$(lines "$run/log.txt"); metrics0=$(lines "$run/metrics.jsonl")
    before=$(cat "$run/ckpt/latest" 2>/dev/null || echo none)
    if [ "$sig" = TERM ]; then
        "$BIN" train tictactoe --run "$run" --steps 100000000 --set checkpoint.minutes=0 "${quick[@]}" \
            >/dev/null 2>"$tmp/$sig.err" &
    else
        "$BIN" train --resume "$run" --steps 100000000 >/dev/null 2>"$tmp/$sig.err" &
    fi
    pid=$!; pids+=("$pid")
    if ! wait_for "$run/log.txt" "train tictactoe in" "$log0" 30 ||
        ! wait_for "$run/metrics.jsonl" '"kind":"train"' "$metrics0" 30; then
        fail "the SIG$sig run did not start"
    fi
    if [ "$sig" = HUP ]; then
        # 3: the directory is in use
        expect_error "is in use by process $pid" train --resume "$run" --steps 5
        expect_error "is in use by process $pid" train tictactoe --run "$run" --steps 5
        "$BIN" eval tictactoe --model "$run" --opponent random --games 2 >/dev/null 2>&1 ||
            fail "eval could not read a run in use"
        "$BIN" report "$run" >/dev/null 2>&1 || fail "report could not read a run in use"
    fi
    sleep 0.3
    kill -"$sig" "$pid"
    wait "$pid"; rc=$?
    [ "$rc" -eq 0 ] || fail "SIG$sig: exit status $rc, wanted 0 ($(tail -n 1 "$tmp/$sig.err"))"
    after=$(cat "$run/ckpt/latest" 2>/dev/null)
    [ -n "$after" ] && [ "$after" != "$before" ] && [ "$after" != 00000000 ] ||
        fail "SIG$sig: no new checkpoint (latest $before -> $after)"
    "$BIN" eval tictactoe --model "$run" --opponent random --games 2 >/dev/null 2>&1 ||
        fail "SIG$sig: the checkpoint $after does not load"
    echo "SIG$sig: checkpoint $after (was $before), exit 0"
done
# the lock went with the process
next=$((10#$(cat "$run/ckpt/latest") + 1))
"$BIN" train --resume "$run" --steps "$next" >/dev/null 2>&1 || fail "resume after the signals"
[ "$(cat "$run/ckpt/latest")" = "$(printf '%08d' "$next")" ] || fail "resumed to $(cat "$run/ckpt/latest"), not $next"

# a second signal while the first is being handled (here: the arena at the
# start, which plays on: 4,000 simulations on each of the 4,520 positions
# take seconds, so the signals 0.2 s apart both land inside it; at 400 a
# fast machine ended it between them) stops the run at once
run2="$tmp/sig2"
"$BIN" train tictactoe --run "$run2" --steps 1000 --set arena.games=0 --set arena.sims=4000 \
    --set arena.positions=1 --set arena.positions_limit=0 >/dev/null 2>&1 &
pid=$!; pids+=("$pid")
wait_for "$run2/log.txt" "train tictactoe in" 0 30 || fail "the second run did not start"
sleep 0.2
kill -TERM "$pid"; sleep 0.2
kill -0 "$pid" 2>/dev/null || fail "the first SIGTERM did not let the run finish its arena"
t0=$(date +%s%N)
kill -TERM "$pid"
wait "$pid"; rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$rc" -eq 143 ] || fail "a second SIGTERM: exit status $rc, wanted 143"
[ "$ms" -lt 3000 ] || fail "a second SIGTERM took $ms ms to stop the run"
echo "second SIGTERM: exit $rc after $ms ms"

# ---- 11. more busy threads than cores ----
cores=$(nproc)
out=$("$BIN" train tictactoe --run "$tmp/over" --steps 2 "${quick[@]}" --set actors=$((cores + 1)) \
    --set learner.threads=1 --set games_per_actor=4 2>&1)
printf '%s' "$out" | grep -q "$((cores + 2)) threads busy at once on $cores cores.*wait passively (OMP_WAIT_POLICY=passive)" ||
    fail "no oversubscription warning with passive waiting: $(printf '%s' "$out" | grep -i busy)"
out=$(OMP_WAIT_POLICY=active "$BIN" train tictactoe --run "$tmp/over2" --steps 2 "${quick[@]}" \
    --set actors=$((cores + 1)) --set learner.threads=1 --set games_per_actor=4 2>&1)
printf '%s' "$out" | grep -q "threads busy at once.*set OMP_WAIT_POLICY=passive" ||
    fail "a user's OMP_WAIT_POLICY=active was not left alone and warned about: $(printf '%s' "$out" | grep -i busy)"
out=$("$BIN" train tictactoe --run "$tmp/fits" --steps 2 "${quick[@]}" --set actors=1 --set learner.threads=1 2>&1)
printf '%s' "$out" | grep -q "threads busy" && fail "a warning without oversubscription: $out"

if [ "$fails" -ne 0 ]; then
    echo "$fails failures"
    exit 1
fi
echo "cli_reliability: all checks passed"
