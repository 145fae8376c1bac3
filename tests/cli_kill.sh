#!/usr/bin/env bash
# kill -9 at random moments (issue 10). A deterministic run is killed with
# SIGKILL several times, at random moments (checkpoint writes included: a
# checkpoint is due every 30 ms), and resumed each time (started anew when
# no checkpoint was written yet); its final weights and optimizer state are
# byte-identical to those of a run that was never interrupted. A concurrent
# run is killed and resumed the same way and must resume cleanly each time
# and reach its last step (the games in flight at a kill are lost, so its
# weights differ). After every kill the run directory holds no staging
# directory or temp file once resumed, and metrics.jsonl never goes back in
# steps. The seed of the kill moments is printed (ZT_SEED repeats it). The
# uninterrupted run's checkpoints record the window's diversity, which its
# report draws.
set -u
BIN=${ZT_BIN:-build/zeroth}
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

seed=${ZT_SEED:-$(( $(date +%s) % 100000 ))}
echo "seed $seed (set ZT_SEED to repeat or change it)"
RANDOM=$seed
# under the sanitizers everything is about ten times slower
slow=1
if ldd "$BIN" 2>/dev/null | grep -q libasan; then slow=8; fi
KILLS=6
STEPS=$((1500 / slow))

common=(--set seed=3 --set games_per_actor=8 --set search.sims=8 --set learner.batch=32
        --set learner.min_positions=64 --set replay_ratio=4 --set arena.games=0
        --set arena.positions=0 --set checkpoint.minutes=0.0005 --set checkpoint.keep=2)

# start RUN MODE: trains RUN toward STEPS in the background (pid in $pid):
# a resume when RUN has a checkpoint, else a new run.
start() {
    local run=$1 mode=$2
    if [ -e "$run/ckpt/latest" ] || ls -d "$run"/ckpt/[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9] >/dev/null 2>&1; then
        "$BIN" train --resume "$run" --steps "$STEPS" >>"$tmp/out.log" 2>&1 &
    else
        "$BIN" train tictactoe --run "$run" --steps "$STEPS" --set mode="$mode" "${common[@]}" \
            >>"$tmp/out.log" 2>&1 &
    fi
    pid=$!
}

# check_tidy RUN: after a clean end, nothing a kill left remains.
check_tidy() {
    local run=$1 left
    left=$(find "$run" -name '*.tmp' -o -name '*.tmp.*' -o -name '*.old' | head -n 3)
    [ -z "$left" ] || fail "$run: left behind: $left"
    # steps never go back in metrics.jsonl
    local back
    back=$(grep -o '"step":[0-9]*' "$run/metrics.jsonl" |
        awk -F: '$2 < last { n++ } { last = $2 } END { print n + 0 }')
    [ "$back" -eq 0 ] || fail "$run/metrics.jsonl: $back records go back in steps"
}

# kill_and_resume RUN MODE: KILLS kills at random moments, then a resume
# to the end.
kill_and_resume() {
    local run=$1 mode=$2 k ms moments=""
    for ((k = 0; k < KILLS; k++)); do
        start "$run" "$mode"
        ms=$(( (150 + RANDOM % 650) * slow ))
        sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
        if kill -KILL "$pid" 2>/dev/null; then
            wait "$pid" 2>/dev/null
            moments="$moments ${ms}ms->$(cat "$run/ckpt/latest" 2>/dev/null || echo none)"
        else
            wait "$pid" || fail "$mode: a run between kills failed: $(tail -n 1 "$tmp/out.log")"
            moments="$moments ${ms}ms(ended)"
        fi
        pid=
    done
    echo "$mode: killed at$moments"
    start "$run" "$mode"
    wait "$pid" || fail "$mode: the last resume failed: $(tail -n 1 "$tmp/out.log")"
    pid=
    [ "$(cat "$run/ckpt/latest" 2>/dev/null)" = "$(printf '%08d' "$STEPS")" ] ||
        fail "$mode: ended at $(cat "$run/ckpt/latest" 2>/dev/null), not step $STEPS"
    check_tidy "$run"
}

# deterministic: byte-identical to the run that was never interrupted
"$BIN" train tictactoe --run "$tmp/straight" --steps "$STEPS" --set mode=deterministic "${common[@]}" \
    >/dev/null 2>&1 || fail "the uninterrupted run"
# its checkpoints (every 30 ms) each recorded the window's diversity, as
# "window distinct_positions window_games distinct_games"
div='.*"window":\([0-9]*\),"distinct_positions":\([0-9]*\),"window_games":\([0-9]*\)'
div=$div',"distinct_games":\([0-9]*\).*'
grep '"kind":"replay_diversity"' "$tmp/straight/metrics.jsonl" | sed "s/$div/\1 \2 \3 \4/" |
    awk '{ n++; if (!($2 > 0 && $2 <= $1 && $4 > 0 && $4 <= $3 && $3 <= $1)) bad++ }
         END { exit !(n >= 3 && bad == 0) }' ||
    fail "replay_diversity: $(grep -m 2 replay_diversity "$tmp/straight/metrics.jsonl")"
"$BIN" report "$tmp/straight" >/dev/null 2>&1 &&
    grep -q "Replay diversity" "$tmp/straight/report.html" || fail "no replay diversity panel"
kill_and_resume "$tmp/killed" deterministic
last=$(printf '%08d' "$STEPS")
for f in weights.safetensors optimizer.safetensors; do
    cmp -s "$tmp/straight/ckpt/$last/$f" "$tmp/killed/ckpt/$last/$f" ||
        fail "deterministic: $f at step $STEPS differs from the uninterrupted run's"
done

# concurrent: resumes cleanly every time and reaches the end
kill_and_resume "$tmp/concurrent" concurrent
"$BIN" eval tictactoe --model "$tmp/concurrent" --opponent random --games 2 >/dev/null 2>&1 ||
    fail "concurrent: the final checkpoint does not load"

if [ "$fails" -ne 0 ]; then
    echo "$fails failures (seed $seed)"
    exit 1
fi
echo "cli_kill: all checks passed"
