#!/usr/bin/env bash
# A failing network call (ZT_FAULT=eval:N makes the Nth evaluator call fail,
# core/fault.h) reaches the command line as one line and a non-zero exit,
# in train, eval and bench selfplay, with private and shared evaluators; a
# training run that fails keeps its last checkpoint, and resumes from it.
set -u
BIN=${ZT_BIN:-build/zeroth}
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect_fault N "what" CMD...: with ZT_FAULT=eval:N the command fails, and
# the last line on stderr is the error naming the injected fault.
expect_fault() {
    local n=$1 what=$2; shift 2
    local err rc
    err=$(ZT_FAULT=eval:$n "$BIN" "$@" 2>&1 >/dev/null); rc=$?
    local last
    last=$(printf '%s\n' "$err" | tail -n 1)
    if [ "$rc" -eq 0 ] || ! printf '%s' "$last" | grep -q "injected fault"; then
        echo "FAIL: $what: ZT_FAULT=eval:$n zeroth $* -> rc=$rc, last line: $last"
        fails=$((fails + 1))
    fi
}

run="$tmp/run"
"$BIN" train tictactoe --run "$run" --steps 20 --set learner.min_positions=200 >/dev/null 2>&1 ||
    { echo "FAIL: the training run for the fault tests"; exit 1; }
before=$(cat "$run/ckpt/latest")

for evaluator in private shared; do
    expect_fault 40 "train ($evaluator)" train --resume "$run" --steps 60 --set selfplay.evaluator=$evaluator
    [ "$(cat "$run/ckpt/latest")" = "$before" ] ||
        { echo "FAIL: a failed run moved ckpt/latest from $before"; fails=$((fails + 1)); }
    expect_fault 25 "bench selfplay ($evaluator)" bench selfplay tictactoe --seconds 0.5 \
        --set selfplay.evaluator=$evaluator
done
expect_fault 3 "eval match" eval tictactoe --model "$run" --opponent random --games 20
expect_fault 2 "eval positions" eval tictactoe --model "$run" --positions "$ZT_DATA_DIR/tictactoe/ttt_positions.txt"

# the run goes on from the checkpoint it kept
"$BIN" train --resume "$run" --steps 40 >/dev/null 2>&1 ||
    { echo "FAIL: resume after the failures"; fails=$((fails + 1)); }
[ "$(cat "$run/ckpt/latest")" = "00000040" ] ||
    { echo "FAIL: resumed run ended at $(cat "$run/ckpt/latest"), want 00000040"; fails=$((fails + 1)); }

if [ "$fails" -eq 0 ]; then echo "cli_faults: all passed"; fi
exit $((fails > 0))
