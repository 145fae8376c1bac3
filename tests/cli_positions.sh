#!/usr/bin/env bash
# zeroth positions: the same seed writes the same files and another seed
# other ones; the files carry how they were made and read back through
# solve (every label agrees with the solver); bad flags get one-line
# errors; --exclude keeps none of the given positions nor their mirror
# images and leaves the other sets as they were. zeroth eval --positions
# breaks the mistake rate down by depth band, the bands' counts adding up
# to the whole. zeroth bench int8 measures a model's int8 copy on position
# files; training starts a share of games from position files.
set -u
BIN=${ZT_BIN:-build/zeroth}
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

make_sets() { # DIR SEED [FLAG...]
    local dir=$1 seed=$2
    shift 2
    "$BIN" positions connect4 --out "$dir" --seed "$seed" --games 40 --per-set 15 \
        --players random,alphabeta:2 --sets opening:easy,middle:easy,middle:medium,end:easy \
        --max-nodes 300000 "$@" >"$dir.out" 2>&1 ||
        fail "positions --seed $seed $*: $(cat "$dir.out")"
}
moves() { grep -v '^#' "$1" | cut -d' ' -f1 | sort; }
make_sets "$tmp/a" 5
make_sets "$tmp/b" 5
make_sets "$tmp/c" 6
for set in opening_easy middle_easy middle_medium end_easy; do
    [ -s "$tmp/a/$set" ] || { fail "no $set"; continue; }
    # (the header names the output directory)
    cmp -s <(grep -v '^#' "$tmp/a/$set") <(grep -v '^#' "$tmp/b/$set") ||
        fail "$set differs for the same seed"
    cmp -s <(grep -v '^#' "$tmp/a/$set") <(grep -v '^#' "$tmp/c/$set") &&
        fail "$set is the same for another seed"
    grep -q '^# made by: zeroth positions connect4 --out' "$tmp/a/$set" || fail "$set: no header"
    n=$(grep -vc '^#' "$tmp/a/$set")
    [ "$n" -eq 15 ] || fail "$set: $n positions, not 15"
    # Every line: moves, score, columns; the solver agrees with all three.
    out=$("$BIN" solve connect4 --positions "$tmp/a/$set" --quiet 2>&1) || fail "solve $set: $out"
    printf '%s\n' "$out" | grep -q '^agree 15/15$' || fail "solve $set: $out"
done
# Depth bands by plies: opening 1..14, middle 15..28, end 29..41.
awk '!/^#/ { n = length($1); if (n > 14) exit 1 }' "$tmp/a/opening_easy" ||
    fail "opening_easy has a position beyond 14 plies"
awk '!/^#/ { n = length($1); if (n < 15 || n > 28) exit 1 }' "$tmp/a/middle_easy" ||
    fail "middle_easy has a position outside 15..28 plies"
awk '!/^#/ { n = length($1); if (n < 29) exit 1 }' "$tmp/a/end_easy" ||
    fail "end_easy has a position before ply 29"
grep -q "distinct up to symmetry" "$tmp/a.out" || fail "no summary: $(cat "$tmp/a.out")"

# --exclude: a's middle_medium given as its mirror images (columns 1..7
# read 7..1). The same seed then makes a middle_medium that shares no
# position with a's, still 15 of them, and a's other sets unchanged.
awk '!/^#/ { m = ""; for (i = 1; i <= length($1); i++) m = m (8 - substr($1, i, 1)); print m, $2 }' \
    "$tmp/a/middle_medium" >"$tmp/mirror"
make_sets "$tmp/x" 5 --exclude "$tmp/mirror"
shared=$(comm -12 <(moves "$tmp/a/middle_medium") <(moves "$tmp/x/middle_medium") | wc -l)
mirrored=$(comm -12 <(moves "$tmp/mirror") <(moves "$tmp/x/middle_medium") | wc -l)
n=$(grep -vc '^#' "$tmp/x/middle_medium")
[ "$shared" -eq 0 ] && [ "$mirrored" -eq 0 ] && [ "$n" -eq 15 ] ||
    fail "--exclude: $shared positions kept, $mirrored mirror images kept, $n in the set"
for set in opening_easy middle_easy end_easy; do
    cmp -s <(grep -v '^#' "$tmp/a/$set") <(grep -v '^#' "$tmp/x/$set") ||
        fail "--exclude of middle_medium changed $set"
done
grep -Eq '^passed over [1-9][0-9]* candidates as positions of --exclude \(15 positions in 1 file,' \
    "$tmp/x.out" || fail "--exclude: no count: $(cat "$tmp/x.out")"
grep -q 'passed over as positions of --exclude (15 in 1 file)' "$tmp/x/middle_medium" ||
    fail "--exclude: not in the header"
# A directory stands for its files: none of a's 60 positions is kept.
make_sets "$tmp/y" 5 --exclude "$tmp/a"
for set in opening_easy middle_easy middle_medium end_easy; do
    shared=$(comm -12 <(moves "$tmp/a/$set") <(moves "$tmp/y/$set") | wc -l)
    [ "$shared" -eq 0 ] || fail "--exclude DIR: $shared of a's $set kept"
done
grep -q '(60 positions in 4 files,' "$tmp/y.out" || fail "--exclude DIR: $(cat "$tmp/y.out")"
mkdir "$tmp/empty"
echo "12x4 0" >"$tmp/bad"
expect_error "cannot open '$tmp/none'" positions connect4 --out "$tmp/t" --exclude "$tmp/none"
expect_error "--exclude: directory '$tmp/empty' holds no files" positions connect4 --out "$tmp/t" \
    --exclude "$tmp/empty"
expect_error "--exclude: an empty entry" positions connect4 --out "$tmp/t" \
    --exclude "$tmp/mirror,,x"
expect_error "$tmp/bad:1:" positions connect4 --out "$tmp/t" --exclude "$tmp/bad"
printf '# a comment, no position\n\n' >"$tmp/nopos"
expect_error "--exclude: $tmp/nopos holds no positions" positions connect4 --out "$tmp/t" \
    --exclude "$tmp/nopos"
expect_error "only connect4" positions tictactoe --out "$tmp/t"
expect_error "--sets: bad set 'middle:tough'" positions connect4 --out "$tmp/t" --sets middle:tough
expect_error "--sets: an empty entry in 'middle:hard,'" positions connect4 --out "$tmp/t" --sets middle:hard,
expect_error "--sets: no set in ' '" positions connect4 --out "$tmp/t" --sets ' '
expect_error "--rating: expected remaining or nodes" positions connect4 --out "$tmp/t" --rating x
expect_error "--games: expected an integer" positions connect4 --out "$tmp/t" --games 0
expect_error "--noise: expected a number in [0, 1]" positions connect4 --out "$tmp/t" --noise 2
expect_error "unknown player" positions connect4 --out "$tmp/t" --players nobody
expect_error "--nodes-hard (10) must be above" positions connect4 --out "$tmp/t" --nodes-hard 10

# eval by depth band: a tiny model, a file with positions of all three bands.
# Half its games start from a made set's positions (selfplay.start_positions).
run="$tmp/run"
"$BIN" train connect4 --run "$run" --steps 1 --set learner.min_positions=64 \
    --set net.channels=8 --set net.blocks=1 --set arena.games=0 --set arena.positions=0 \
    --set actors=1 --set games_per_actor=8 --set selfplay.start_fraction=0.5 \
    --set "selfplay.start_positions=$tmp/a/middle_medium, $tmp/a/end_easy" \
    >"$tmp/train.out" 2>&1 || fail "train connect4 failed: $(tail -n 3 "$tmp/train.out")"
grep -q "self-play: 50 % of games start from 30 positions of $tmp/a/middle_medium" \
    "$tmp/train.out" || fail "no start positions line: $(head -n 5 "$tmp/train.out")"
expect_error "selfplay.start_fraction = 0.5 needs selfplay.start_positions" train connect4 \
    --run "$tmp/r2" --steps 1 --set selfplay.start_fraction=0.5
expect_error "selfplay.start_positions is set but selfplay.start_fraction is 0" train connect4 \
    --run "$tmp/r2" --steps 1 --set "selfplay.start_positions=$tmp/a/end_easy"
expect_error "cannot open '$tmp/none'" train connect4 --run "$tmp/r2" --steps 1 \
    --set "selfplay.start_positions=$tmp/none" --set selfplay.start_fraction=1
expect_error "selfplay.start_positions: an empty entry" train connect4 --run "$tmp/r2" \
    --steps 1 --set "selfplay.start_positions=$tmp/a/end_easy,,x" --set selfplay.start_fraction=1
expect_error "selfplay.start_positions: $tmp/nopos holds no positions" train connect4 \
    --run "$tmp/r2" --steps 1 --set "selfplay.start_positions=$tmp/a/end_easy,$tmp/nopos" \
    --set selfplay.start_fraction=1
{
    echo "# three bands"
    grep -v '^#' "$tmp/a/middle_medium" | head -n 3
    # one without its columns: eval solves it
    grep -v '^#' "$tmp/a/middle_easy" | head -n 1 | cut -d' ' -f1-2
    grep -v '^#' "$tmp/a/end_easy" | head -n 3
    grep -v '^#' "$tmp/a/opening_easy" | head -n 2
} >"$tmp/mixed"
out=$("$BIN" eval connect4 --model "$run" --positions "$tmp/mixed" --sims 0 2>&1) ||
    fail "eval mixed: $out"
line=$(printf '%s\n' "$out" | grep '^by depth: ')
[ -n "$line" ] || fail "no band line: $out"
for band in "opening mistakes [0-9]+/2 " "middle mistakes [0-9]+/4 " "end mistakes [0-9]+/3 "; do
    printf '%s' "$line" | grep -Eq "$band" || fail "'$band' not in: $line"
done
# The bands' mistakes add up to the total.
total=$(printf '%s\n' "$out" | sed -n 's/^mistakes \([0-9]*\)\/9$/\1/p')
# (the mistakes and the positions a "by ...:" line's groups hold, summed)
wrong() { grep -Eo 'mistakes [0-9]+' | awk '{ s += $2 } END { print s }'; }
held() { grep -Eo '[0-9]+/[0-9]+' | cut -d/ -f2 | awk '{ s += $1 } END { print s }'; }
sum=$(printf '%s' "$line" | wrong)
[ -n "$total" ] && [ "$total" = "$sum" ] || fail "bands sum to $sum, total '$total': $out"
# By value: the groups hold all nine positions and add up to the total; a
# lost position cannot be erred on (every move keeps the loss).
vline=$(printf '%s\n' "$out" | grep '^by value: ')
[ -n "$vline" ] || fail "no value line: $out"
vsum=$(printf '%s' "$vline" | wrong)
vpos=$(printf '%s' "$vline" | held)
[ "$vsum" = "$total" ] && [ "$vpos" = 9 ] ||
    fail "values sum to $vsum/$vpos, total '$total': $vline"
# Each group holds the positions of that score's sign in the file.
for v in won:1 drawn:0 lost:-1; do
    name=${v%%:*} sign=${v#*:}
    n=$(awk -v s="$sign" '!/^#/ { v = ($2 > 0) - ($2 < 0); if (v == s) n++ } END { print n + 0 }' \
        "$tmp/mixed")
    if [ "$n" = 0 ]; then
        printf '%s' "$vline" | grep -q "$name" && fail "'$name' but no such position: $vline"
    else
        printf '%s' "$vline" | grep -Eq "$name mistakes [0-9]+/$n " ||
            fail "$name not /$n: $vline"
    fi
done
if printf '%s' "$vline" | grep -q 'lost'; then
    printf '%s' "$vline" | grep -Eq 'lost mistakes 0/[0-9]+ ' ||
        fail "a lost position erred: $vline"
fi
# A set of one band prints that band alone.
out=$("$BIN" eval connect4 --model "$run" --positions "$ZT_DATA_DIR/connect4/Test_L3_R1" \
    --limit 20 --sims 0 2>&1) || fail "eval L3: $out"
printf '%s\n' "$out" | grep -Eq '^by depth: end mistakes [0-9]+/20 \([0-9.]+ %\)$' ||
    fail "L3 band line: $out"
# Pons' lines give the score: of the first 20, 7 won, 9 drawn and 4 lost
# for the side to move, none of the lost ones erred on.
pct='\([0-9.]+ %\)'
want="^by value: won mistakes [0-9]+/7 $pct, drawn mistakes [0-9]+/9 $pct, lost mistakes 0/4 $pct\$"
printf '%s\n' "$out" | grep -Eq "$want" ||
    fail "L3 value line: $out"
# The net's own value of the same positions, by the same groups.
v='[+-][0-9]\.[0-9]{2}'
want="^net value: won $v \(wrong [0-9]+/7\), drawn $v \(wrong [0-9]+/9\), lost $v \(wrong [0-9]+/4\), RMSE [0-9]\.[0-9]{3}\$"
printf '%s\n' "$out" | grep -Eq "$want" ||
    fail "L3 net value line: $out"

# bench int8: the model's int8 copy against bf16 on a position file, and on
# the gate's own random-play positions, beside the gate's thresholds; an
# int8 copy far from bf16 (a broken quantisation) errs by more than 0.1.
if grep -q avx512_vnni /proc/cpuinfo; then
    out=$("$BIN" bench int8 --model "$run" --positions "$tmp/mixed" \
        --calibrate "$tmp/a/middle_easy" 2>&1) || fail "bench int8: $out"
    printf '%s\n' "$out" | grep -q 'calibrated on 15 positions of the --calibrate file' ||
        fail "bench int8 header: $out"
    for set in "mixed  +9 positions" "random play \(the gate\) +256 positions"; do
        row=$(printf '%s\n' "$out" | grep -E "^$set ") || { fail "no '$set' row: $out"; continue; }
        mae=$(printf '%s' "$row" | sed -n 's/.*value MAE \([0-9.]*\) .*/\1/p')
        agree=$(printf '%s' "$row" | sed -n 's/.*top-1 agreement *\([0-9.]*\) %.*/\1/p')
        awk -v m="$mae" -v a="$agree" 'BEGIN { exit !(m != "" && m < 0.1 && a >= 50) }' ||
            fail "int8 far from bf16: $row"
    done
    out=$("$BIN" bench int8 --model "$run" --positions "$tmp/mixed" --limit 4 2>&1) ||
        fail "bench int8 --limit: $out"
    printf '%s\n' "$out" | grep -Eq '^mixed +4 positions' || fail "bench int8 --limit 4: $out"
    expect_error "--model M is required" bench int8
    expect_error "cannot open '$tmp/none'" bench int8 --model "$run" --positions "$tmp/none"
    expect_error "--limit: expected a non-negative integer" bench int8 --model "$run" --limit x
    expect_error "--threads: expected a non-negative integer in 1..256" bench int8 --model "$run" \
        --threads 0
else
    echo "bench int8: skipped (no AVX512_VNNI)"
fi

# bench selfplay --model: the run's trained weights and its net's shape in
# the actors (the config's 64x5 net gives way to the model's 8x1).
out=$("$BIN" bench selfplay connect4 --model "$run" --seconds 0.3 --set games_per_actor=8 2>&1) ||
    fail "bench selfplay --model: $out"
printf '%s\n' "$out" | grep -q "weights $run/ckpt/[0-9]*/weights.safetensors" ||
    fail "bench selfplay --model: no weights line: $out"
printf '%s\n' "$out" | grep -q "ch=8 blocks=1" || fail "bench selfplay --model: not the model's net: $out"
printf '%s\n' "$out" | grep -q '^all on ' || fail "bench selfplay --model: no row: $out"
expect_error "plays 'connect4', not 'tictactoe'" bench selfplay tictactoe --model "$run"

[ "$fails" -eq 0 ] && echo "cli_positions: all checks passed"
exit $((fails > 0))
