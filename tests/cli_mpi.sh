#!/usr/bin/env bash
# zeroth train under mpirun (docs/distributed.md), on one machine: three
# ranks train tic-tac-toe to perfect play on the 4,520 positions; a run
# resumes at another number of ranks and in one process, and with two
# data-parallel learners whose agreement check catches a nudged one; a mode that needs
# one process is refused in one line without leaving ranks behind; a run whose
# every actor rank fails stops with its checkpoint and a one-line error; an actor
# rank killed with SIGKILL leaves a run that goes on (mpirun
# --enable-recovery) or a checkpoint that resumes (plain mpirun); bench dist
# prints its figures. Skipped (with a line saying so) when the build has no
# MPI; the refusal of a build without MPI is tests/test_cli_dist.c's.
set -u
BIN=${ZT_BIN:-build/zeroth}
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! ldd "$BIN" 2>/dev/null | grep -q libmpi || ! command -v mpirun >/dev/null; then
    echo "cli_mpi: skipped (zeroth built without MPI, or no mpirun)"
    exit 0
fi

# One machine, more ranks than cores (CI); as root where CI runs as root.
MPIRUN=(mpirun --oversubscribe)
if [ "$(id -u)" -eq 0 ]; then MPIRUN+=(--allow-run-as-root); fi
# OpenMPI's own allocations outlive MPI_Finalize: no leak report for them
# in the sanitizer build.
export ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0

# ---- three ranks reach perfect play ----
run="$tmp/ttt"
start=$(date +%s%N)
timeout 300 "${MPIRUN[@]}" -np 3 "$BIN" train tictactoe --run "$run" --minutes 2 \
    --set arena.stop_on_perfect=1 >"$tmp/ttt.out" 2>"$tmp/ttt.err"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
[ "$rc" -eq 0 ] || fail "mpirun -np 3 train tictactoe -> rc=$rc: $(tail -n 3 "$tmp/ttt.err")"
grep -q "mpi: 3 ranks: rank 0 learns, ranks 1..2 act" "$run/log.txt" ||
    fail "rank 0's log does not name the actor ranks"
grep -q "ttt_positions optimal 4520/4520" "$run/log.txt" ||
    fail "3 ranks did not reach perfect play in 2 minutes: $(grep 'arena at' "$run/log.txt" | tail -n 1)"
# every rank's games reach the learner's counts
games=$(grep -o '"games":[0-9]*' "$run/metrics.jsonl" | tail -n 1 | cut -d: -f2)
[ "${games:-0}" -gt 0 ] || fail "metrics count no games"
echo "cli_mpi: 3 ranks reached perfect play in $ms ms"

# ---- resume at two ranks, then in one process ----
# (the run's config.ini keeps arena.stop_on_perfect, which would end a resume
# at its first arena, before its --steps, on a slow machine: turned off)
nostop=(--set arena.stop_on_perfect=0)
step=$(cat "$run/ckpt/latest")
step=$((10#$step))
timeout 120 "${MPIRUN[@]}" -np 2 "$BIN" train --resume "$run" --steps $((step + 200)) \
    "${nostop[@]}" >/dev/null 2>"$tmp/resume.err" || fail "resume at 2 ranks: $(tail -n 2 "$tmp/resume.err")"
[ "$((10#$(cat "$run/ckpt/latest")))" -eq $((step + 200)) ] ||
    fail "resume at 2 ranks ended at $(cat "$run/ckpt/latest"), want step $((step + 200))"
timeout 120 "$BIN" train --resume "$run" --steps $((step + 300)) "${nostop[@]}" \
    >/dev/null 2>"$tmp/resume1.err" ||
    fail "resume in one process: $(tail -n 2 "$tmp/resume1.err")"
[ "$((10#$(cat "$run/ckpt/latest")))" -eq $((step + 300)) ] ||
    fail "resume in one process ended at $(cat "$run/ckpt/latest")"

# ---- two data-parallel learners: resumed from the same run, they check
# every 20 steps that they hold the same weights; a nudged gradient on one
# of them (ZT_FAULT=learners:N, core/fault.h) must be caught ----
step=$((10#$(cat "$run/ckpt/latest")))
timeout 120 "${MPIRUN[@]}" -np 4 "$BIN" train --resume "$run" --steps $((step + 200)) \
    "${nostop[@]}" --set dist.learners=2 --set dist.check_every=20 >/dev/null 2>"$tmp/dp.err" ||
    fail "two learners: $(grep -v '^\[' "$tmp/dp.err" | head -n 3)"
grep -q "mpi: 4 ranks: ranks 0..1 learn (data-parallel, global batch 256), ranks 2..3 act" \
    "$run/log.txt" || fail "rank 0's log does not name the two learners"
[ "$((10#$(cat "$run/ckpt/latest")))" -eq $((step + 200)) ] ||
    fail "two learners ended at $(cat "$run/ckpt/latest"), want step $((step + 200))"
err=$(ZT_FAULT=learners:5 timeout 120 "${MPIRUN[@]}" -np 3 "$BIN" train tictactoe \
    --run "$tmp/dpfault" --steps 100 --set dist.learners=2 --set dist.check_every=10 2>&1)
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "learners that disagree -> rc=$rc"
[ "$(printf '%s\n' "$err" | grep -c '^zeroth: data-parallel learners disagree after 10 steps')" -eq 1 ] ||
    fail "learners that disagree: wanted one line from rank 0, got: $err"

# ---- a one-process mode is refused once, and every rank leaves ----
err=$(timeout 60 "${MPIRUN[@]}" -np 3 "$BIN" train tictactoe --run "$tmp/alt" --set mode=alternate 2>&1)
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "mode=alternate under mpirun -> rc=$rc"
[ "$(printf '%s\n' "$err" | grep -c 'zeroth: .*mode=alternate runs in one process')" -eq 1 ] ||
    fail "mode=alternate under mpirun: wanted one line naming it, got: $err"

# ---- every actor rank fails: the run stops with its checkpoint, and fails ----
# (rank 0 plays no arena here, so only the actor rank's evaluator calls count)
err=$(ZT_FAULT=eval:200 timeout 120 "${MPIRUN[@]}" -np 2 "$BIN" train tictactoe --run "$tmp/orphan" \
    --minutes 1 --set arena.games=0 --set arena.positions=false 2>&1)
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "every actor rank failed -> rc=$rc (wanted a failure)"
[ "$(printf '%s\n' "$err" | grep -c '^zeroth: mpi: no actor rank is left')" -eq 1 ] ||
    fail "every actor rank failed: wanted one line naming it, got: $err"
grep -q "mpi: rank 1: actor: evaluator: injected fault" "$tmp/orphan/log.txt" ||
    fail "rank 0's log does not name the failed actor rank"
[ -e "$tmp/orphan/ckpt/latest" ] || fail "every actor rank failed: no checkpoint written"

# ---- kill -9 an actor rank ----
# actor_pid RUN: the PID of the last rank of the job training into RUN
actor_pid() {
    local pids
    for _ in $(seq 100); do
        pids=$(pgrep -f "^$BIN train tictactoe --run $1 " | sort -n)
        [ "$(echo "$pids" | grep -c .)" -ge 3 ] && [ -e "$1/ckpt/latest" ] && break
        sleep 0.2
    done
    echo "$pids" | tail -n 1
}
# With --enable-recovery the job outlives the rank: rank 0 counts it lost
# after dist.timeout and trains on with the other. OpenMPI's recovery is not
# dependable on an oversubscribed 2-core machine (mpirun itself once hung
# past the kill in a sanitizer run), so this case runs only when asked:
# ZT_TEST_MPI_RECOVERY=1.
if [ "${ZT_TEST_MPI_RECOVERY:-0}" = 1 ]; then
    run="$tmp/recover"
    timeout 120 "${MPIRUN[@]}" --enable-recovery -np 3 "$BIN" train tictactoe --run "$run" \
        --minutes 0.3 --set checkpoint.minutes=0.02 --set dist.timeout=2 >/dev/null 2>"$tmp/recover.err" &
    job=$!
    victim=$(actor_pid "$run")
    sleep 1
    kill -9 "$victim" 2>/dev/null || fail "no actor rank to kill"
    wait $job
    rc=$?
    [ "$rc" -eq 0 ] || fail "after kill -9 of an actor rank with --enable-recovery -> rc=$rc"
    grep -q "mpi: rank 2 lost (silent for" "$run/log.txt" || fail "rank 0 did not log the lost rank"
    grep -q "stopped at step" "$run/log.txt" || fail "the run did not end normally after the loss"
    # training went on: checkpoints of later steps after the loss
    at() { sed -n "s/^\[ *\([0-9.]*\)\] $1.*/\1/p" "$run/log.txt"; }
    lost_at=$(at "warn: mpi: rank 2 lost" | head -n 1)
    after=$(at "info: checkpoint" | awk -v t="${lost_at:-1e9}" '$1 > t' | wc -l)
    [ "$after" -ge 2 ] || fail "$after checkpoint(s) after the rank was lost at ${lost_at:-?} s (wanted 2)"
else
    echo "cli_mpi: the --enable-recovery case skipped (ZT_TEST_MPI_RECOVERY=1 runs it)"
fi

# Plain mpirun ends the whole job; the last checkpoint is whole and resumes.
run="$tmp/abort"
timeout 120 "${MPIRUN[@]}" -np 3 "$BIN" train tictactoe --run "$run" --minutes 1 \
    --set checkpoint.minutes=0.02 >/dev/null 2>&1 &
job=$!
victim=$(actor_pid "$run")
sleep 1.5
kill -9 "$victim" 2>/dev/null || fail "no actor rank to kill"
wait $job
[ $? -ne 0 ] || fail "plain mpirun went on after kill -9 (expected the job to end)"
step=$((10#$(cat "$run/ckpt/latest")))
timeout 120 "${MPIRUN[@]}" -np 2 "$BIN" train --resume "$run" --steps $((step + 100)) \
    >/dev/null 2>"$tmp/abort.err" || fail "resume after the job ended: $(tail -n 2 "$tmp/abort.err")"
[ "$((10#$(cat "$run/ckpt/latest")))" -eq $((step + 100)) ] ||
    fail "resume after kill -9 ended at $(cat "$run/ckpt/latest"), want $((step + 100))"

# ---- bench dist ----
out=$(timeout 120 "${MPIRUN[@]}" -np 2 "$BIN" bench dist tictactoe --seconds 0.5 2>&1)
printf '%s\n' "$out" | grep -q "^ingest: 1 sender rank(s), .* trajectories/s" ||
    fail "bench dist printed no ingest line: $out"
[ "$(printf '%s\n' "$out" | grep -c '^weights: ')" -eq 5 ] || fail "bench dist: wanted 5 weights lines: $out"
err=$("$BIN" bench dist 2>&1 >/dev/null)
[ $? -ne 0 ] && [ "$(printf '%s\n' "$err" | grep -c .)" -eq 1 ] ||
    fail "bench dist without mpirun: wanted a one-line error, got: $err"

if [ "$fails" -eq 0 ]; then echo "cli_mpi: all passed"; fi
exit $((fails > 0))
