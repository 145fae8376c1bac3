#!/usr/bin/env bash
# One training recipe, timed and judged the same way every time, for the
# equal-wall-time comparisons of docs/connect4-recipes.md: trains GAME for
# MINUTES with the defaults plus the given --set/--config flags into
# runs/recipes/NAME, then judges the final model on every solver position
# set of the game, whole (not the arena's first 200), and prints the curve
# (the arena's records in metrics.jsonl, one line per arena; for 2048 the
# model's mean score) and a one-line summary, which it also appends to
# runs/recipes/summary.tsv; a 2048 run's final model plays ZT_RECIPE_GAMES
# (100) games for its final mean score.
#
#   scripts/recipe.sh connect4 120 default
#   scripts/recipe.sh connect4 120 rootvalue --set learner.root_value_weight=0.5
#
# The figures mean something only on a machine that has nothing else to do
# (the script warns when the load average says otherwise). Set ZT_BIN for
# another binary, ZT_RECIPES for another directory.
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: scripts/recipe.sh GAME MINUTES NAME [zeroth train flags...]" >&2
    exit 2
fi
game=$1 minutes=$2 name=$3
shift 3
case $minutes in '' | *[!0-9.]*) echo "recipe: MINUTES must be a number, got '$minutes'" >&2; exit 2 ;; esac
case $name in '' | */* | .*) echo "recipe: NAME must be a plain name, got '$name'" >&2; exit 2 ;; esac
bin=${ZT_BIN:-build/zeroth}
root=${ZT_RECIPES:-runs/recipes}
run=$root/$name
[ -x "$bin" ] || { echo "recipe: no $bin (make build first)" >&2; exit 1; }
[ -e "$run" ] && { echo "recipe: $run exists (pick another NAME)" >&2; exit 1; }
mkdir -p "$root"

load=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load" 'BEGIN { exit !(l > 0.5) }'; then
    echo "recipe: warning: load average $load before the run; its figures are not from a quiet machine" >&2
fi
start=$(date -u +%FT%TZ)
"$bin" train "$game" --run "$run" --minutes "$minutes" "$@" >"$run.train.log" 2>&1 || {
    echo "recipe: training failed: $(tail -n 3 "$run.train.log")" >&2
    exit 1
}

# The curve: every arena's results, by minute.
python3 - "$run/metrics.jsonl" <<'EOF'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") == "arena":
        rows.setdefault(r["step"], [r["t"], {}])[1][r["opponent"]] = f'{r["wins"]}-{r["draws"]}-{r["losses"]}'
    elif r.get("kind") == "positions":
        rows.setdefault(r["step"], [r["t"], {}])[1][r["set"]] = f'{100 * r["rate"]:.1f}%'
    elif r.get("kind") == "score" and r.get("player") == "model":
        rows.setdefault(r["step"], [r["t"], {}])[1]["score"] = f'{r["mean"]:.0f} +- {r["ci95"]:.0f}'
for step in sorted(rows):
    t, cols = rows[step]
    print(f"min {t / 60:6.1f} step {step:7d}  " + "  ".join(f"{k} {v}" for k, v in cols.items()))
EOF

# The final model on every set, whole.
summary="$name	$game	$minutes	$start	$*"
# (tests/data holds the game's sets: Pons' copies and ours)
for f in tests/data/"$game"/*; do
    [ -f "$f" ] || continue
    case $f in *.md | *README*) continue ;; esac
    out=$("$bin" eval "$game" --model "$run" --positions "$f" 2>&1) || {
        echo "recipe: eval $f failed: $out" >&2
        continue
    }
    line=$(printf '%s\n' "$out" | grep -E '^(mistakes|optimal) [0-9]+/[0-9]+' | head -n 1)
    echo "final $(basename "$f"): $line"
    summary="$summary	$(basename "$f") ${line#* }"
done
# A one-player game (2048): the final model's mean score over more games
# than the arena's (ZT_RECIPE_GAMES, 100 by default).
if [ "$game" = 2048 ]; then
    out=$("$bin" eval "$game" --model "$run" --games "${ZT_RECIPE_GAMES:-100}" 2>&1) || {
        echo "recipe: eval of the final model failed: $out" >&2
    }
    line=$(printf '%s\n' "$out" | grep -E '^mean score' | head -n 1)
    echo "final: $line"
    printf '%s\n' "$out" | grep -E '^highest tile' | head -n 1
    summary="$summary	$line"
fi
printf '%s\n' "$summary" >>"$root/summary.tsv"
echo "recipe $name: $(tail -n 1 "$run.train.log")"
