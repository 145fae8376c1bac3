#!/usr/bin/env bash
# Error messages and position files at the command line: a message that
# wraps the one below it is not garbled; a long path keeps its reason;
# solve and eval read a position file the same way, whatever its line
# lengths, and refuse an empty one.
set -u
BIN=${ZT_BIN:-build/zeroth}
fails=0
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The error of a missing run wraps the file reader's own message.
expect_error "zeroth: no metrics in run '/no/such/dir': cannot open '/no/such/dir/metrics.jsonl': No such file or directory" \
    report /no/such/dir

# A path near PATH_MAX whose first name is too long: the reason is kept.
long="$tmp/$(printf 'n%.0s' $(seq 300))"
while [ ${#long} -lt 3900 ]; do long="$long/$(printf 'd%.0s' $(seq 200))"; done
expect_error "File name too long" report "$long"
expect_error "File name too long" solve tictactoe --positions "$long"

# A run to evaluate (a few seconds of tic-tac-toe).
run="$tmp/run"
"$BIN" train tictactoe --run "$run" --steps 1 --set learner.min_positions=64 >/dev/null 2>&1 ||
    { echo "FAIL: the training run"; exit 1; }

# Two positions on one line of 4100+ bytes: one bad line for both readers
# (solve used to read it as two positions).
pad=$(printf ' %.0s' $(seq 4100))
printf '......... X 0 0,1,2,3,4,5,6,7,8%s........X O 0 4\n' "$pad" >"$tmp/two.txt"
expect_error "two.txt:1: tictactoe: expected" solve tictactoe --positions "$tmp/two.txt"
expect_error "two.txt:1: tictactoe: expected" eval tictactoe --model "$run" --positions "$tmp/two.txt"

# A long but good line (trailing blanks, a long comment before it): one
# position for both.
{
    printf '# %s\n' "$(printf 'c%.0s' $(seq 5000))"
    printf '........X O 0 4%s\n' "$pad"
} >"$tmp/one.txt"
out=$("$BIN" solve tictactoe --positions "$tmp/one.txt" 2>&1) || fail "solve one.txt: $out"
[ "$(printf '%s\n' "$out" | tail -n 1)" = "agree 1/1" ] || fail "solve one.txt ends '$(printf '%s\n' "$out" | tail -n 1)'"
out=$("$BIN" eval tictactoe --model "$run" --positions "$tmp/one.txt" 2>/dev/null) ||
    fail "eval one.txt failed"
printf '%s\n' "$out" | grep -q "1 judged" || fail "eval one.txt: $out"

# No positions: an empty file, or only comments and blank lines.
: >"$tmp/empty.txt"
printf '# nothing\n\n   \n' >"$tmp/comments.txt"
for f in empty comments; do
    expect_error "$f.txt: no positions" solve tictactoe --positions "$tmp/$f.txt"
    expect_error "$f.txt: no positions" eval tictactoe --model "$run" --positions "$tmp/$f.txt"
done

# A position already over, a NUL byte: refused, naming the line.
printf '......... X\nXXXOO.... O\n' >"$tmp/over.txt"
expect_error "over.txt:2: position is already over" solve tictactoe --positions "$tmp/over.txt"
expect_error "over.txt:2: position is already over" eval tictactoe --model "$run" --positions "$tmp/over.txt"
printf '......... X\n...\0.. X\n' >"$tmp/nul.txt"
expect_error "nul.txt:2: a NUL byte" solve tictactoe --positions "$tmp/nul.txt"

# --mistakes writes the positions whose move lost value as a position file:
# as many as eval counts, each line the set's own, read back by eval
# itself, where the same model errs on every one of them.
set_file="$ZT_DATA_DIR/tictactoe/ttt_positions.txt"
[ -f "$set_file" ] || set_file=tests/data/tictactoe/ttt_positions.txt
out=$("$BIN" eval tictactoe --model "$run" --positions "$set_file" --limit 400 --sims 0 \
    --mistakes "$tmp/missed.txt" 2>/dev/null) || fail "eval --mistakes: $out"
n=$(printf '%s\n' "$out" | sed -n 's/^optimal \([0-9]*\)\/400$/\1/p')
m=$(grep -vc '^#' "$tmp/missed.txt")
[ -n "$n" ] && [ "$m" -eq $((400 - n)) ] && [ "$m" -gt 0 ] ||
    fail "eval --mistakes: $m positions written for '$out'"
grep -v '^#' "$tmp/missed.txt" | while read -r line; do
    grep -qxF "$line" "$set_file" || { echo "FAIL: '$line' is not a line of the set"; exit 1; }
done || fails=$((fails + 1))
out=$("$BIN" eval tictactoe --model "$run" --positions "$tmp/missed.txt" --sims 0 2>/dev/null)
printf '%s\n' "$out" | grep -qx "optimal 0/$m" || fail "eval of the mistakes: $out"
expect_error "--mistakes needs --positions" eval tictactoe --model "$run" --opponent random \
    --mistakes "$tmp/x.txt"

# --images all judges each position in tic-tac-toe's 8 images: image 0 is
# the set as written, the images' counts sum to the total, and the
# mistakes file holds each position wrong in some image once, after a
# comment for each image wrong.
out=$("$BIN" eval tictactoe --model "$run" --positions "$set_file" --limit 100 --sims 0 \
    --images all --mistakes "$tmp/images.txt" 2>/dev/null) || fail "eval --images all: $out"
plain=$("$BIN" eval tictactoe --model "$run" --positions "$set_file" --limit 100 --sims 0 2>/dev/null)
total=$(printf '%s\n' "$out" | sed -n 's/^optimal \([0-9]*\)\/800$/\1/p')
as_written=$(printf '%s\n' "$plain" | sed -n 's/^optimal \([0-9]*\)\/100$/\1/p')
img0=$(printf '%s\n' "$out" | sed -n 's/^image 0 (as written): optimal \([0-9]*\)\/100 .*/\1/p')
sum=$(printf '%s\n' "$out" | sed -n 's/^image [0-7].*: optimal \([0-9]*\)\/100 .*/\1/p' |
    awk '{ s += $1; n++ } END { if (n == 8) print s }')
some=$(printf '%s\n' "$out" | sed -n 's/.* in some image \([0-9]*\)\/100 .*/\1/p')
comments=$(grep -c '^# position' "$tmp/images.txt")
lines=$(grep -vc '^#' "$tmp/images.txt")
[ -n "$total" ] && [ -n "$img0" ] && [ "$img0" = "$as_written" ] && [ "$sum" = "$total" ] &&
    [ "$comments" -eq $((800 - total)) ] && [ "$lines" = "$some" ] && [ "$lines" -gt 0 ] ||
    fail "eval --images all: total '$total', image 0 '$img0' (as written '$as_written'), sum '$sum', $comments comments and $lines lines for '$some': $out"
grep -q '^# position [0-9]*, image [1-7]: played' "$tmp/images.txt" ||
    fail "eval --images all: no image's comment in $(head -5 "$tmp/images.txt")"
expect_error "--images needs --positions" eval tictactoe --model "$run" --opponent random --images 2
expect_error "9 images of each position asked of" eval tictactoe --model "$run" \
    --positions "$set_file" --images 9
expect_error "--images (or all): expected an integer" eval tictactoe --model "$run" \
    --positions "$set_file" --images 0

# A board field too long to be one is refused as such, not split.
printf '%s X\n' "$(printf '.%.0s' $(seq 40))" >"$tmp/wide.txt"
expect_error "wide.txt:1: tictactoe: the board of 40 bytes is too long" solve tictactoe --positions "$tmp/wide.txt"

if [ "$fails" -ne 0 ]; then
    echo "cli_parsers: $fails failures"
    exit 1
fi
echo "cli_parsers: all checks passed"
