#!/usr/bin/env python3
"""Two recipe runs side by side (docs/connect4-recipes.md): the arena's curve
of RUN with BASE's figure at the nearest minute in brackets, then each run's
final judgement of the whole sets from summary.tsv, as the tables of that
page are laid out (Markdown).

    scripts/recipe_compare.py runs/recipes/c4-amd-pcr runs/recipes/c4-amd-base

Columns are the position sets' mistake (or optimal) rates in % of the
positions each arena judged, and W-D-L against each arena opponent; the
final rows give a set's mistakes in % (and their count), or the count of
positions played optimally where that is the set's judge (tic-tac-toe). A run
whose summary line is missing (the recipe still running, or stopped) shows
its curve only. Last, the sampling window's diversity at each of RUN's
checkpoints (its "replay_diversity" records: the share of distinct positions
and of distinct games), BASE's at the nearest minute in brackets, where BASE
has them (runs before 2026-11-29 do not). Runs since 2026-12-01 add a
second curve: the share of each set's judged positions that the net's own
value, without search, puts on the wrong side of their exact value."""
import json
import os
import sys


def arenas(run, metrics=None):
    """The arenas of RUN/metrics.jsonl in step order, each {"t": seconds,
    "step": step, column: cell}; metrics, if given, gets each set's judge
    ("mistakes", or "optimal" for tic-tac-toe's)."""
    rows = {}
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a torn last line of a run that is still writing
            kind = r.get("kind")
            if kind == "positions":
                cell = f'{100 * r["rate"]:.1f}'
                col = r["set"]
                if metrics is not None:
                    metrics[col] = r.get("metric", "mistakes")
                m, w = sum(r.get("value_m", [])), sum(r.get("value_wrong", []))
                if m:  # runs since 2026-12-01: the net's own value, wrong side
                    rows.setdefault(r["step"], {"t": r["t"]})["value:" + col] = \
                        f"{100 * w / m:.1f}"
            elif kind == "arena":
                cell = f'{r["wins"]}-{r["draws"]}-{r["losses"]}'
                col = r["opponent"]
            else:
                continue
            row = rows.setdefault(r["step"], {"t": r["t"]})
            row[col] = cell
    return [rows[s] | {"step": s} for s in sorted(rows)]


def diversity(run):
    """RUN's replay_diversity records in time order, each {"t": seconds,
    "step": step, "positions": %, "games": %} (shares of distinct ones in
    the sampling window)."""
    out = []
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("kind") == "replay_diversity":
                out.append({"t": r["t"], "step": r.get("step", 0),
                            "positions": 100 * r["distinct_position_share"],
                            "games": 100 * r["distinct_game_share"]})
    return out


def summary(run):
    """The recipe's final judgement of RUN ({set file: "n/m"}, its last
    checkpoints averaged under "averaged:SET" keys), or None."""
    root, name = os.path.split(os.path.normpath(run))
    path = os.path.join(root, "summary.tsv")
    found = None
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                cells = line.rstrip("\n").split("\t")
                if cells and cells[0] == name:
                    found = cells  # the last line of that name
    if found is None:
        return None
    out = {}
    for cell in found[5:]:
        head, _, rest = cell.partition(" ")
        out[head] = rest
    return out


def rate(judged, metric):
    """'5/1000' -> '0.50 % (5)' for a set judged by its mistakes; an
    'optimal' set's count stays a count ('optimal 4485/4520')."""
    try:
        n, m = (int(x) for x in judged.split(" ", 1)[0].split("/"))
    except ValueError:
        return judged
    if metric == "optimal":
        return f"optimal {n}/{m}"
    return f"{100 * n / m:.2f} % ({n})"


def curve(a, b, cols, title):
    """A table of RUN's arena rows a, columns cols, BASE's (b) figure at
    the nearest minute in brackets."""
    print("| min | step | " + " | ".join(title(c) for c in cols) + " |")
    print("|--:|--:|" + "--:|" * len(cols))
    for row in a:
        near = min(b, key=lambda x: abs(x["t"] - row["t"])) if b else {}
        cells = []
        for c in cols:
            mine, theirs = row.get(c, ""), near.get(c)
            cells.append(f"{mine} ({theirs})" if theirs is not None else mine)
        step = f'{row["step"]:,} ({near["step"]:,})' if near else f'{row["step"]:,}'
        print(f'| {row["t"] / 60:.0f} | {step} | ' + " | ".join(cells) + " |")


def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    run, base = argv[1], argv[2]
    for r in (run, base):
        if not os.path.exists(os.path.join(r, "metrics.jsonl")):
            print(f"recipe_compare: no {r}/metrics.jsonl", file=sys.stderr)
            return 1
    metrics = {}
    a, b = arenas(run, metrics), arenas(base, metrics)
    cols = []
    for row in a:
        cols += [c for c in row if c not in ("t", "step") and c not in cols]
    vcols = [c for c in cols if c.startswith("value:")]
    cols = [c for c in cols if c not in vcols]
    print(f"{os.path.basename(run)}, {os.path.basename(base)}'s in brackets:\n")
    curve(a, b, cols, lambda c: c)
    if vcols:
        print("\nThe net's own value, % of the same positions on the wrong side of"
              " their exact value:\n")
        curve(a, b, vcols, lambda c: c.split(":", 1)[1])
    finals = []
    for r in (run, base):
        s, name = summary(r), os.path.basename(r)
        finals.append((name, s and {k: v for k, v in s.items() if ":" not in k}))
        avg = s and {k.split(":", 1)[1]: v for k, v in s.items() if k.startswith("averaged:")}
        if avg:
            finals.append((f"{name}, last checkpoints averaged", avg))
    sets = []
    for _, s in finals:
        sets += [k for k in (s or {}) if k not in sets]
    # In the arena's column order, as the curves above (summary.tsv lists
    # the files alphabetically); sets the arena did not judge go last.
    order = {c: i for i, c in enumerate(cols)}
    sets.sort(key=lambda k: order.get(k.rsplit(".", 1)[0], len(order)))
    if sets:
        print("\nThe final model on every set whole:\n")
        print("| run | " + " | ".join(sets) + " |")
        print("|---|" + "--:|" * len(sets))
        for name, s in finals:
            if s is not None:
                cells = (rate(s.get(k, ""), metrics.get(k.rsplit(".", 1)[0])) for k in sets)
                print(f"| {name} | " + " | ".join(cells) + " |")
    da, db = diversity(run), diversity(base)
    if da:
        print("\nThe sampling window at each checkpoint, % distinct:\n")
        print("| min | step | positions | games |")
        print("|--:|--:|--:|--:|")
        for row in da:
            near = min(db, key=lambda x: abs(x["t"] - row["t"])) if db else None
            cells = []
            for c in ("positions", "games"):
                cell = f"{row[c]:.1f}"
                cells.append(f"{cell} ({near[c]:.1f})" if near else cell)
            print(f'| {row["t"] / 60:.0f} | {row["step"]:,} | ' + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
