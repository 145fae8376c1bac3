#!/usr/bin/env bash
# scripts/recipe.sh trains a recipe, judges its final model on the game's
# sets whole and appends its summary line; scripts/recipe_compare.py lays
# two recipes side by side (docs/connect4-recipes.md): the first run's
# arenas with the second's at the nearest minute in brackets, the tally of
# arenas ahead and behind, and both final judgements; either side may be
# several runs of one recipe. Tic-tac-toe, a few seconds each.
set -u
BIN=${ZT_BIN:-build/zeroth}
SRC=${ZT_SOURCE_DIR:-.}
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")

recipe() {
    (cd "$SRC" && ZT_BIN="${RECIPE_BIN:-$BIN}" ZT_RECIPES="$tmp" timeout 300 scripts/recipe.sh \
        tictactoe 0.1 "$@")
}
out=$(recipe base --set arena.minutes=0.03 2>&1) || fail "recipe base: $out"
out=$(recipe wide --set arena.minutes=0.03 --set net.mlp_hidden=64 2>&1) ||
    fail "recipe wide: $out"
printf '%s\n' "$out" | grep -q '^final ttt_positions.txt: optimal [0-9]*/4520' ||
    fail "recipe printed no final judgement: $out"
[ "$(cut -f1 "$tmp/summary.tsv" 2>/dev/null | tr '\n' ' ')" = "base wide " ] ||
    fail "summary.tsv: wanted a line for each run: $(cat "$tmp/summary.tsv" 2>&1)"
# each set is judged with its first two images too (eval --images 2): the
# count as written stays the set's cell, the images' total is an images:
# cell beside it
printf '%s\n' "$out" |
    grep -qE '^final ttt_positions.txt in 2 images: optimal [0-9]+/9040; wrong in every image [0-9]+/4520' ||
    fail "recipe printed no judgement of the images: $out"
grep -qE "^wide	.*	ttt_positions.txt [0-9]+/4520	images:ttt_positions.txt [0-9]+/9040" "$tmp/summary.tsv" ||
    fail "summary.tsv has no images: cell after the set's: $(tail -n 1 "$tmp/summary.tsv")"
out=$(recipe base 2>&1) && fail "a recipe of a name already used was not refused: $out"
# ZT_RECIPE_FROM continues a copy of a finished recipe: its steps go on from
# the earlier run's last, which stays as it was
last_step() { sed -n 's/.*"step":\([0-9]*\).*/\1/p' "$1" | tail -n 1; }
before=$(cksum <"$tmp/base/metrics.jsonl")
base_step=$(last_step "$tmp/base/metrics.jsonl")
out=$(ZT_RECIPE_FROM=base recipe base-more 2>&1) || fail "recipe continuing base: $out"
more_step=$(last_step "$tmp/base-more/metrics.jsonl")
[ -n "$base_step" ] && [ -n "$more_step" ] && [ "$more_step" -gt "$base_step" ] ||
    fail "the continued recipe did not go on from step $base_step: it ended at $more_step"
[ "$(cksum <"$tmp/base/metrics.jsonl")" = "$before" ] || fail "continuing base changed base's run"
grep -q "^base-more	.*(continues base)" "$tmp/summary.tsv" ||
    fail "summary.tsv does not say what base-more continues: $(tail -n 1 "$tmp/summary.tsv")"
# its two checkpoints (base's and its own) averaged are judged as well
printf '%s\n' "$out" |
    grep -q '^final, the last 2 checkpoints averaged, ttt_positions.txt: optimal [0-9]*/4520' ||
    fail "the continued recipe judged no average of its checkpoints: $out"
grep -q "^base-more	.*	averaged:ttt_positions.txt [0-9]*/4520" "$tmp/summary.tsv" ||
    fail "summary.tsv has no averaged judgement: $(tail -n 1 "$tmp/summary.tsv")"
cmp=$(python3 "$SRC/scripts/recipe_compare.py" "$tmp/base-more" "$tmp/base" 2>&1) ||
    fail "recipe_compare: $cmp"
printf '%s\n' "$cmp" | grep -qE '^\| base-more, last checkpoints averaged \| optimal [0-9]+/4520 \|$' ||
    fail "recipe_compare: no row for the averaged checkpoints: $cmp"
out=$(ZT_RECIPE_FROM=none recipe from-none 2>&1) &&
    fail "continuing a recipe that does not exist was not refused: $out"
printf '%s
' "$out" | grep -q "no run .*/none to continue" ||
    fail "continuing a missing recipe: wanted the reason, got: $out"

# the sets are judged with the arena's 32 simulations, not self-play's: the
# binary, wrapped, logs the commands recipe.sh gives it
printf '#!/usr/bin/env bash\nprintf "%%s\\n" "$*" >>"%s/calls"\nexec "%s" "$@"\n' \
    "$tmp" "$BIN" >"$tmp/logbin"
chmod +x "$tmp/logbin"
out=$(ZT_RECIPE_IMAGES=9 RECIPE_BIN="$tmp/logbin" recipe fewsims --set arena.minutes=0.03 \
    --set search.sims=4 2>&1) || fail "recipe fewsims: $out"
# (ZT_RECIPE_IMAGES=9, more than tic-tac-toe's 8 symmetries: eval refuses
# them, and the sets are judged as written, each with its cell)
printf '%s\n' "$out" | grep -q "with --images 9 failed (zeroth: 9 images .*); judged as written only" &&
    grep -qE "^fewsims	.*	ttt_positions.txt [0-9]+/4520" "$tmp/summary.tsv" &&
    ! grep -q "^fewsims	.*images:" "$tmp/summary.tsv" ||
    fail "ZT_RECIPE_IMAGES=9: wanted the sets judged as written: $out $(tail -n 1 "$tmp/summary.tsv")"
judged=$(grep -c '^eval tictactoe --model .* --positions ' "$tmp/calls" 2>/dev/null)
other=$(grep '^eval tictactoe --model .* --positions ' "$tmp/calls" 2>/dev/null |
    grep -Evc -- ' --sims 32( |$)')
[ "${judged:-0}" -ge 1 ] && [ "$other" -eq 0 ] ||
    fail "recipe fewsims: $other of ${judged:-0} judgements not at the arena's 32" \
        "simulations: $(cat "$tmp/calls")"

cmp=$(python3 "$SRC/scripts/recipe_compare.py" "$tmp/wide" "$tmp/base" 2>&1) ||
    fail "recipe_compare: $cmp"
# every arena of the run, the base's figure beside each cell; then the same
# arenas' share of positions the net's own value puts on the wrong side
arenas=$(grep -c '"kind":"positions"' "$tmp/wide/metrics.jsonl")
curve=$(printf '%s\n' "$cmp" | sed '/^The net.s own value/,$d')
values=$(printf '%s\n' "$cmp" | sed -n '/^The net.s own value/,/^The final model/p')
rows=$(printf '%s\n' "$curve" | grep -cE '^\| [0-9]+ \| [0-9,]+ \([0-9,]+\) \| ')
[ "$rows" -eq "$arenas" ] && [ "$rows" -ge 2 ] ||
    fail "recipe_compare: $rows curve rows for $arenas arenas: $cmp"
vrows=$(printf '%s\n' "$values" | grep -cE '^\| [0-9]+ \| [0-9,]+ \([0-9,]+\) \| [0-9.]+ \([0-9.]+\) \|$')
[ "$vrows" -eq "$arenas" ] ||
    fail "recipe_compare: $vrows value rows for $arenas arenas: $cmp"
printf '%s\n' "$cmp" | grep -qE '^\| [0-9]+ \| .*\| [0-9.]+ \([0-9.]+\) \|$' ||
    fail "recipe_compare: no set's rate with the base's in brackets: $cmp"
# the final judgements, as the summary has them
for name in wide base; do
    n=$(grep "^$name	" "$tmp/summary.tsv" | sed 's/.*ttt_positions.txt \([0-9]*\)\/4520.*/\1/')
    want="optimal $n/4520"
    printf '%s\n' "$cmp" | grep -qF "| $name | $want |" ||
        fail "recipe_compare: no final row '$want' for $name: $cmp"
done
# and each run's sets with their images, as its summary has them
n=$(grep "^wide	" "$tmp/summary.tsv" | sed 's/.*images:ttt_positions.txt \([0-9]*\)\/9040.*/\1/')
printf '%s\n' "$cmp" | grep -qF "| wide, the sets with their images | optimal $n/9040 |" ||
    fail "recipe_compare: no row of wide's sets with their images (optimal $n/9040): $cmp"
# the window's diversity at each checkpoint, the base's beside it
checkpoints=$(grep -c '"kind":"replay_diversity"' "$tmp/wide/metrics.jsonl")
rows=$(printf '%s\n' "$cmp" | grep -cE '^\| [0-9]+ \| [0-9,]+ \| [0-9.]+ \([0-9.]+\) \| [0-9.]+ \([0-9.]+\) \|$')
[ "$checkpoints" -ge 1 ] && [ "$rows" -eq "$checkpoints" ] ||
    fail "recipe_compare: $rows diversity rows for $checkpoints checkpoints: $cmp"
python3 "$SRC/scripts/recipe_compare.py" "$tmp/none" "$tmp/base" >/dev/null 2>&1 &&
    fail "recipe_compare of a missing run did not fail"
# the tally: each set's arenas after minute 0 ahead, behind or level sum to
# the curve's rows after minute 0; a run against itself is level in every one
tally() { printf '%s\n' "$1" | sed -n '/^Arena by arena/,/^The final model/p' | grep "^| $2 |"; }
late=$(printf '%s\n' "$curve" | grep -cE '^\| [0-9]+ \| [1-9][0-9,]* \(')
row=$(tally "$cmp" ttt_positions)
sum=$(printf '%s\n' "$row" | awk -F'|' '{print $3 + $4 + $5}')
[ -n "$row" ] && [ "$late" -ge 1 ] && [ "$sum" = "$late" ] ||
    fail "recipe_compare: the tally counts ${sum:-no} arenas of $late after minute 0: $cmp"
self=$(python3 "$SRC/scripts/recipe_compare.py" "$tmp/wide" "$tmp/wide" 2>&1) ||
    fail "recipe_compare of a run with itself: $self"
tally "$self" ttt_positions |
    grep -qE "^\| ttt_positions \| 0 \| 0 \| $late \| \+0\.00 \| (\+0\.00)? \|\$" ||
    fail "recipe_compare: a run against itself is not level in all $late arenas: $self"
# several runs of one recipe: a run listed twice is its own mean, so its
# tally against the base is the run's own; its W-D-L cells are the sums
two=$(python3 "$SRC/scripts/recipe_compare.py" "$tmp/wide,$tmp/wide" "$tmp/base" 2>&1) ||
    fail "recipe_compare of two runs: $two"
[ "$(tally "$two" ttt_positions)" = "$row" ] ||
    fail "recipe_compare: the mean of a run with itself has another tally: '$(
        tally "$two" ttt_positions)' against '$row'"
n=$(grep "^wide	" "$tmp/summary.tsv" | sed 's/.*ttt_positions.txt \([0-9]*\)\/4520.*/\1/')
printf '%s\n' "$two" | grep -qF "| the mean of wide + wide | optimal $n.0/4520 |" ||
    fail "recipe_compare: the mean of wide with itself is not wide's $n: $two"
wdl=$(printf '%s\n' "$curve" | sed -n '5p' | awk -F'|' '{print $4}' | awk '{print $1}')
wdl2=$(printf '%s\n' "$two" | sed -n '5p' | awk -F'|' '{print $4}' | awk '{print $1}')
[ -n "$wdl" ] && [ "$(printf '%s\n' "$wdl" | awk -F- '{print 2 * $1 "-" 2 * $2 "-" 2 * $3}')" = "$wdl2" ] ||
    fail "recipe_compare: two runs' W-D-L '$wdl2' is not twice one run's '$wdl'"
python3 "$SRC/scripts/recipe_compare.py" "$tmp/wide,$tmp/none" "$tmp/base" >/dev/null 2>&1 &&
    fail "recipe_compare of a missing run among several did not fail"

# --by-step: BASE's rates interpolated at RUN's learner step, each base run
# on its own and then their mean; blank past a base's last arena; a run
# against itself by step is level in every arena after minute 0
pos() { printf '{"t":%s,"step":%s,"kind":"positions","set":"s","metric":"mistakes","n":0,"m":200,"rate":%s}\n' "$@"; }
{ pos 0 0 0.5; pos 600 100 0.3; pos 1200 200 0.1; } >"$tmp/b1.jsonl"
{ pos 0 0 0.5; pos 600 100 0.5; pos 1200 200 0.3; } >"$tmp/b2.jsonl"
{ pos 0 0 0.5; pos 1800 150 0.25; pos 2400 250 0.05; } >"$tmp/r.jsonl"
bs=$(python3 "$SRC/scripts/recipe_compare.py" --by-step "$tmp/r.jsonl" "$tmp/b1.jsonl" 2>&1) ||
    fail "recipe_compare --by-step: $bs"
printf '%s\n' "$bs" | grep -qxF '| 30 (15) | 150 | 25.0 (20.00) |' &&
    printf '%s\n' "$bs" | grep -qxF '| 40 | 250 | 5.0 |' &&
    printf '%s\n' "$bs" | grep -qxF '| s | 0 | 1 | 0 | -5.00 |  |' ||
    fail "recipe_compare --by-step: wanted 20.00 at step 150, none at 250, one arena behind: $bs"
bs=$(python3 "$SRC/scripts/recipe_compare.py" --by-step "$tmp/r.jsonl" "$tmp/b1.jsonl,$tmp/b2.jsonl" 2>&1) ||
    fail "recipe_compare --by-step of two base runs: $bs"
printf '%s\n' "$bs" | grep -qxF '| 30 (15) | 150 | 25.0 (30.00) |' ||
    fail "recipe_compare --by-step: two base runs' mean at step 150 is not 30.00: $bs"
self=$(python3 "$SRC/scripts/recipe_compare.py" --by-step "$tmp/wide" "$tmp/wide" 2>&1) ||
    fail "recipe_compare --by-step of a run with itself: $self"
tally "$self" ttt_positions |
    grep -qE "^\| ttt_positions \| 0 \| 0 \| $late \| \+0\.00 \| (\+0\.00)? \|\$" ||
    fail "recipe_compare --by-step: a run against itself is not level in all $late arenas: $self"

# scripts/recipe_record.py keeps a finished run's record in one file, which
# recipe_compare.py lays out as it does the run's directory; a run with no
# summary line (not finished) is refused and nothing is written
out=$(python3 "$SRC/scripts/recipe_record.py" "$tmp/base" "$tmp/kept/base.jsonl" 2>&1) ||
    fail "recipe_record: $out"
[ "$(stat -c %a "$tmp/kept/base.jsonl")" = "$(printf '%o' $((0666 & ~0$(umask))))" ] ||
    fail "the record's mode $(stat -c %a "$tmp/kept/base.jsonl") is not a plain file's under umask $(umask)"
[ "$(wc -l <"$tmp/kept/base.jsonl")" -lt "$(wc -l <"$tmp/base/metrics.jsonl")" ] ||
    fail "recipe_record kept every record of metrics.jsonl, not the arena's and the window's"
kept=$(python3 "$SRC/scripts/recipe_compare.py" "$tmp/wide" "$tmp/kept/base.jsonl" 2>&1) ||
    fail "recipe_compare of a kept record: $kept"
[ "$kept" = "$cmp" ] || fail "recipe_compare of base's kept record differs from its directory's: $(
    diff <(printf '%s\n' "$cmp") <(printf '%s\n' "$kept"))"
# a record kept without the untrained net's arena (step 0): the run's own
# minute 0 gets no bracket, not the record's first trained arena
grep -v '"step":0,' "$tmp/kept/base.jsonl" >"$tmp/kept/late.jsonl"
late0=$(python3 "$SRC/scripts/recipe_compare.py" "$tmp/wide" "$tmp/kept/late.jsonl" 2>&1) ||
    fail "recipe_compare of a record without step 0: $late0"
printf '%s\n' "$late0" | grep -qE '^\| 0 \| 0 \| [^(]*$' ||
    fail "recipe_compare: minute 0 against a record without it: $(printf '%s\n' "$late0" | grep '^| 0 |')"
mkdir -p "$tmp/unjudged" && cp "$tmp/base/metrics.jsonl" "$tmp/unjudged/"
out=$(python3 "$SRC/scripts/recipe_record.py" "$tmp/unjudged" "$tmp/kept/unjudged.jsonl" 2>&1) &&
    fail "recipe_record kept a run with no summary line: $out"
printf '%s\n' "$out" | grep -q "has no line in" || fail "an unjudged run: wanted why, got: $out"
[ ! -e "$tmp/kept/unjudged.jsonl" ] || fail "a refused record left a file behind"
# a record that cannot replace what is at OUT (here a directory) is
# refused, and its temporary file removed (scripts/atomic_write.py)
mkdir -p "$tmp/kept/dir.jsonl"
out=$(python3 "$SRC/scripts/recipe_record.py" "$tmp/base" "$tmp/kept/dir.jsonl" 2>&1) &&
    fail "recipe_record wrote over a directory: $out"
printf '%s\n' "$out" | grep -q "^recipe_record: $tmp/kept/dir.jsonl: " ||
    fail "a record over a directory: wanted a one-line reason, got: $out"
[ -d "$tmp/kept/dir.jsonl" ] && ! ls "$tmp/kept" | grep -q '\.tmp\.' ||
    fail "a failed record left its temporary file or lost the directory: $(ls "$tmp/kept")"

# scripts/average_weights.py: the average of a file with itself is that file
# byte for byte (the same layout and data_hash as the C writer's); two
# checkpoints of one run average into a model eval loads; another
# architecture and a truncated file are refused, nothing written
avg() { python3 "$SRC/scripts/average_weights.py" "$@"; }
w_base="$tmp/base/ckpt/$(cat "$tmp/base/ckpt/latest")/weights.safetensors"
w_more="$tmp/base-more/ckpt/$(cat "$tmp/base-more/ckpt/latest")/weights.safetensors"
w_wide="$tmp/wide/ckpt/$(cat "$tmp/wide/ckpt/latest")/weights.safetensors"
out=$(avg "$tmp/self.safetensors" "$w_base" "$w_base" 2>&1) || fail "average_weights: $out"
cmp -s "$tmp/self.safetensors" "$w_base" || fail "the average of a file with itself differs from it"
out=$(avg "$tmp/two.safetensors" "$w_base" "$w_more" 2>&1) || fail "average_weights: $out"
cmp -s "$tmp/two.safetensors" "$w_base" && fail "the average of two checkpoints is the first"
out=$("$BIN" eval tictactoe --model "$tmp/two.safetensors" \
    --positions "$SRC/tests/data/tictactoe/ttt_positions.txt" 2>&1) ||
    fail "eval of the averaged weights: $out"
printf '%s\n' "$out" | grep -q '^optimal [0-9]*/4520' || fail "eval of the average: $out"
out=$(avg "$tmp/mixed.safetensors" "$w_base" "$w_wide" 2>&1) &&
    fail "weights of two architectures were averaged: $out"
printf '%s\n' "$out" | grep -q "holds architecture" || fail "two architectures: wanted why, got: $out"
head -c 100 "$w_more" >"$tmp/cut.safetensors"
out=$(avg "$tmp/cut-avg.safetensors" "$w_base" "$tmp/cut.safetensors" 2>&1) &&
    fail "a truncated weight file was averaged: $out"
printf '%s\n' "$out" | grep -q "truncated" || fail "a truncated file: wanted why, got: $out"
[ ! -e "$tmp/mixed.safetensors" ] && [ ! -e "$tmp/cut-avg.safetensors" ] ||
    fail "a refused average left a file behind"

if [ "$fails" -ne 0 ]; then
    echo "cli_recipes: $fails failures"
    exit 1
fi
echo "cli_recipes: all checks passed"
