#!/usr/bin/env python3
"""Two recipe runs side by side (docs/connect4-recipes.md): the arena's curve
of RUN with BASE's figure at the nearest minute in brackets, then each run's
final judgement of the whole sets from summary.tsv, as the tables of that
page are laid out (Markdown).

    scripts/recipe_compare.py runs/recipes/c4-amd-pcr runs/recipes/c4-amd-base
    scripts/recipe_compare.py runs/recipes/A1,runs/recipes/A2 runs/recipes/B1,runs/recipes/B2
    scripts/recipe_compare.py runs/recipes/c4-new docs/recipe-runs/c4-base.jsonl
    scripts/recipe_compare.py --by-step runs/recipes/c4-deeper docs/recipe-runs/c4-base.jsonl

A run is its directory (its metrics.jsonl, and its line of summary.tsv
beside it) or its kept record (scripts/recipe_record.py: the same records
in one file, which docs/recipe-runs/ keeps for the runs docs/connect4-recipes.md
quotes, so that a later run can be laid beside them on another machine).

Columns are the position sets' mistake (or optimal) rates in % of the
positions each arena judged, and W-D-L against each arena opponent; the
final rows give a set's mistakes in % (and their count), or the count of
positions played optimally where that is the set's judge (tic-tac-toe),
and where the recipe judged each set with its images too (eval --images,
since 2026-12-02) a row of those counts for each run. A run
whose summary line is missing (the recipe still running, or stopped) shows
its curve only. Last, the sampling window's diversity at each of RUN's
checkpoints (its "replay_diversity" records: the share of distinct positions
and of distinct games), BASE's at the nearest minute in brackets, where BASE
has them (runs before 2026-11-29 do not). Runs since 2026-12-01 add a
second curve: the share of each set's judged positions that the net's own
value, without search, puts on the wrong side of their exact value.

Then the tally of the curves: for each set, the arenas after minute 0 where
RUN was ahead of BASE (fewer mistakes, or more optimal moves), behind and
level, and RUN's mean lead in points over all of them and over those of the
second hour on.

RUN and BASE may each be several runs of one recipe, separated by commas:
each curve cell is then the runs' mean at the minute nearest the first run's
arena (W-D-L cells are summed), and the final table adds the runs' mean
count. Two runs of one recipe can end several mistakes apart; the means say
more than one run each.

--by-step lays the curves and the tally out by learner step instead of by
minute: BASE's rates at each of RUN's arenas are interpolated at RUN's step
between BASE's two arenas around it (each of several BASE runs on its own,
then their mean), blank before BASE's first trained arena and past its
last; the minute column gives BASE's interpolated minute in brackets. It
tells a recipe that learns more per step from one that only takes more
steps: a net that costs more per step can be behind at every minute and
level or ahead at equal steps. W-D-L cells, which do not interpolate, are
left out."""
import json
import os
import sys


def records(run):
    """RUN's records in order: a run directory's metrics.jsonl, or a run's
    kept record (a file, scripts/recipe_record.py: the arena, window and
    final-judgement records of a run whose directory may be gone)."""
    path = run if os.path.isfile(run) else os.path.join(run, "metrics.jsonl")
    with open(path) as f:
        for line in f:
            try:
                yield json.loads(line)
            except ValueError:
                continue  # a torn last line of a run that is still writing


def is_run(run):
    """Whether RUN names a run directory with its metrics or a kept record."""
    return os.path.isfile(run) or os.path.exists(os.path.join(run, "metrics.jsonl"))


def run_name(run):
    """The recipe's NAME: the directory's name, or the record's less .jsonl."""
    name = os.path.basename(os.path.normpath(run))
    return name[:-len(".jsonl")] if os.path.isfile(run) and name.endswith(".jsonl") else name


def summary_line(run):
    """The cells of the last summary.tsv line (beside the run directory RUN)
    that names RUN, or None."""
    root, name = os.path.split(os.path.normpath(run))
    path = os.path.join(root, "summary.tsv")
    found = None
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                cells = line.rstrip("\n").split("\t")
                if cells and cells[0] == name:
                    found = cells  # the last line of that name
    return found


def arenas(run, metrics=None):
    """The arenas of RUN's records in step order, each {"t": seconds,
    "step": step, column: cell}; metrics, if given, gets each set's judge
    ("mistakes", or "optimal" for tic-tac-toe's)."""
    rows = {}
    for r in records(run):
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


def nearest(rows, t):
    """The row of rows (dicts with a "t") nearest t seconds."""
    return min(rows, key=lambda x: abs(x["t"] - t))


def counterpart(rows, row):
    """The row of rows nearest row's minute, the untrained net's arena (step
    0) only ever with another's own (a kept record may lack it, and must not
    lend its first trained arena); None where rows has none."""
    same = [r for r in rows if (r["step"] == 0) == (row["step"] == 0)]
    return nearest(same, row["t"]) if same else None


def is_wdl(cell):
    """Whether an arena cell is a W-D-L count ("15-3-82"), not a rate."""
    return isinstance(cell, str) and "-" in cell.lstrip("-")


def at_step(per_run, step):
    """Several runs' rows (each a list of dicts with "t" and "step", in step
    order) at one learner step: each run's numeric keys and minute
    interpolated linearly between its two trained arenas around step, then
    the runs' mean; W-D-L keys left out. None where some run has no trained
    arena at or after step (or none at or before it)."""
    found = []
    for rows in per_run:
        trained = [r for r in rows if r["step"] > 0]
        lo = [r for r in trained if r["step"] <= step]
        hi = [r for r in trained if r["step"] >= step]
        if not lo or not hi:
            return None
        a, b = lo[-1], hi[0]
        w = 0.0 if b["step"] == a["step"] else (step - a["step"]) / (b["step"] - a["step"])
        row = {"t": a["t"] + w * (b["t"] - a["t"]), "step": step}
        for k in a:
            if k in ("t", "step") or k not in b or is_wdl(a[k]):
                continue
            row[k] = float(a[k]) + w * (float(b[k]) - float(a[k]))
        found.append(row)
    out = {"t": sum(r["t"] for r in found) / len(found), "step": step}
    for k in found[0]:
        if k not in out and all(k in r for r in found):
            out[k] = f"{sum(r[k] for r in found) / len(found):.2f}"
    return out


def merge(per_run, fmt):
    """Several runs' rows (each a list of dicts with "t" and "step") as one:
    for each row of the first run, every other key is the runs' figures at
    the nearest minute combined: numbers (or numeric strings) averaged and
    formatted with fmt, W-D-L strings summed; a key some run lacks is left
    out."""
    if len(per_run) == 1:
        return per_run[0]
    out = []
    for row in per_run[0]:
        near = [counterpart(rows, row) for rows in per_run]
        if None in near:
            continue
        merged = {"t": row["t"], "step": round(sum(r["step"] for r in near) / len(near))}
        for k in row:
            if k in ("t", "step") or any(k not in r for r in near):
                continue
            cells = [r[k] for r in near]
            if is_wdl(cells[0]):
                wdl = [sum(int(c.split("-")[i]) for c in cells) for i in range(3)]
                merged[k] = "-".join(str(x) for x in wdl)
            else:
                merged[k] = fmt(sum(float(c) for c in cells) / len(cells))
        out.append(merged)
    return out


def diversity(run):
    """RUN's replay_diversity records in time order, each {"t": seconds,
    "step": step, "positions": %, "games": %} (shares of distinct ones in
    the sampling window)."""
    out = []
    for r in records(run):
        if r.get("kind") == "replay_diversity":
            out.append({"t": r["t"], "step": r.get("step", 0),
                        "positions": 100 * r["distinct_position_share"],
                        "games": 100 * r["distinct_game_share"]})
    return out


def summary(run):
    """The recipe's final judgement of RUN ({set file: "n/m"}, its last
    checkpoints averaged under "averaged:SET" keys), or None."""
    found = None
    if os.path.isfile(run):  # a kept record: its "summary" record's line
        for r in records(run):
            if r.get("kind") == "summary":
                found = r["line"].rstrip("\n").split("\t")
    else:
        found = summary_line(run)
    if found is None:
        return None
    out = {}
    for cell in found[5:]:
        head, _, rest = cell.partition(" ")
        out[head] = rest
    return out


def count(judged):
    """'5/1000' -> ('5', 1000): the count as written (a mean of several runs'
    has a decimal, '4.5/1000') and the set's size; None if not a count."""
    n, _, m = judged.split(" ", 1)[0].partition("/")
    try:
        float(n)
        return n, int(m)
    except ValueError:
        return None


def rate(judged, metric):
    """'5/1000' -> '0.50 % (5)' for a set judged by its mistakes; an
    'optimal' set's count stays a count ('optimal 4485/4520')."""
    c = count(judged)
    if c is None:
        return judged
    n, m = c
    if metric == "optimal":
        return f"optimal {n}/{m}"
    return f"{100 * float(n) / m:.2f} % ({n})"


def curve(a, b, cols, title, match, by_step):
    """A table of RUN's arena rows a, columns cols, BASE's (b) figure at
    the nearest minute or, by_step, at the same step (match finds it) in
    brackets, with BASE's step beside the step or its minute beside the
    minute."""
    print("| min | step | " + " | ".join(title(c) for c in cols) + " |")
    print("|--:|--:|" + "--:|" * len(cols))
    for row in a:
        near = match(b, row) or {}
        cells = []
        for c in cols:
            mine, theirs = row.get(c, ""), near.get(c)
            cells.append(f"{mine} ({theirs})" if theirs is not None else mine)
        step, minute = f'{row["step"]:,}', f'{row["t"] / 60:.0f}'
        if near and by_step:
            minute += f' ({near["t"] / 60:.0f})'
        elif near:
            step += f' ({near["step"]:,})'
        print(f'| {minute} | {step} | ' + " | ".join(cells) + " |")


def tally(a, b, cols, metrics, match):
    """For each rate column of cols: RUN's arenas (a) after minute 0 ahead
    of, behind and level with BASE's (b) at the nearest minute (or step:
    match), and RUN's mean lead in points over all of them and over those
    from minute 60."""
    print("| set | ahead | behind | level | mean lead | mean lead from minute 60 |")
    print("|---|--:|--:|--:|--:|--:|")
    mean = lambda xs: f"{sum(xs) / len(xs) + 0.0:+.2f}" if xs else ""  # no -0.00
    total = [[0, 0, 0], [], []]  # the sets' own cells, the value's left out
    for c in cols:
        better = -1 if metrics.get(c.split(":", 1)[-1], "mistakes") == "mistakes" else 1
        counts, leads, late = [0, 0, 0], [], []
        for row in a:
            near = match(b, row) or {}
            if row["step"] == 0 or c not in row or c not in near:
                continue
            lead = better * (float(row[c]) - float(near[c]))
            counts[0 if lead > 0 else 1 if lead < 0 else 2] += 1
            leads.append(lead)
            if row["t"] >= 3600:
                late.append(lead)
        if not leads:
            continue
        name = c.split(":", 1)[1] + ", the net's own value" if c.startswith("value:") else c
        print(f"| {name} | {counts[0]} | {counts[1]} | {counts[2]} | {mean(leads)} | {mean(late)} |")
        if not c.startswith("value:"):
            total = [[x + y for x, y in zip(total[0], counts)], total[1] + leads, total[2] + late]
    if total[1]:
        print(f"| all sets | {total[0][0]} | {total[0][1]} | {total[0][2]} | {mean(total[1])}"
              f" | {mean(total[2])} |")


def cells_under(judged, prefix):
    """The summary cells of one kind ({SET: "n/m"} of the "PREFIXSET" keys,
    "averaged:" or "images:"), none of a further kind."""
    return {k[len(prefix):]: v for k, v in judged.items()
            if k.startswith(prefix) and ":" not in k[len(prefix):]}


def mean_final(finals):
    """Several runs' final judgements ({set: "n/m ..."}) as one, each set's
    count their mean to one decimal ("4.5/300"); a set some run lacks is
    left out."""
    out = {}
    for k in finals[0]:
        got = [count(s.get(k, "")) for s in finals]
        if all(got):
            out[k] = f"{sum(float(n) for n, _ in got) / len(got):.1f}/{got[0][1]}"
    return out


def main(argv):
    by_step = len(argv) > 1 and argv[1] == "--by-step"
    if by_step:
        argv = argv[:1] + argv[2:]
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    groups = [[r for r in arg.split(",") if r] for arg in argv[1:3]]
    for r in groups[0] + groups[1]:
        if not is_run(r):
            print(f"recipe_compare: no {r}/metrics.jsonl nor a record file {r}", file=sys.stderr)
            return 1
    if not groups[0] or not groups[1]:
        print("recipe_compare: no run named", file=sys.stderr)
        return 1
    metrics = {}
    per_run = [[arenas(r, metrics) for r in g] for g in groups]
    two_places = lambda x: f"{x:.2f}"
    a = merge(per_run[0], two_places)
    if by_step:  # BASE's runs each interpolated at RUN's step, then averaged
        b = per_run[1]
        match = lambda runs, row: at_step(runs, row["step"]) if row["step"] > 0 else None
    else:
        b = merge(per_run[1], two_places)
        match = counterpart
    cols = []
    for row in a:
        cols += [c for c in row if c not in ("t", "step") and c not in cols]
    vcols = [c for c in cols if c.startswith("value:")]
    cols = [c for c in cols if c not in vcols]
    names = [" + ".join(run_name(r) for r in g) for g in groups]
    means = ["the mean of " + n if len(g) > 1 else n for n, g in zip(names, groups)]
    if by_step:
        print(f"{means[0]}, {means[1]}'s at the same learner step in brackets"
              " (interpolated; its minute beside the minute):\n")
    else:
        print(f"{means[0]}, {means[1]}'s in brackets:\n")
    curve(a, b, cols, lambda c: c, match, by_step)
    if vcols:
        print("\nThe net's own value, % of the same positions on the wrong side of"
              " their exact value:\n")
        curve(a, b, vcols, lambda c: c.split(":", 1)[1], match, by_step)
    rcols = [c for c in cols if metrics.get(c)] + vcols
    if rcols and b:
        print(f"\nArena by arena after minute 0, {names[0]} against {names[1]}"
              + (" at the same step" if by_step else "")
              + " (lead in points, positive where it is ahead):\n")
        tally(a, b, rcols, metrics, match)
    finals = []
    for g in groups:
        runs, imaged = [], []
        for r in g:
            s, name = summary(r), run_name(r)
            runs.append(s and {k: v for k, v in s.items() if ":" not in k})
            finals.append((name, runs[-1]))
            # each set with its images (the recipe's eval --images), where
            # the run's judgement has them
            imaged.append(s and cells_under(s, "images:"))
            if imaged[-1]:
                finals.append((f"{name}, the sets with their images", imaged[-1]))
            avg = s and cells_under(s, "averaged:")
            if avg:
                finals.append((f"{name}, last checkpoints averaged", avg))
            avg = s and cells_under(s, "averaged:images:")
            if avg:
                finals.append((f"{name}, last checkpoints averaged, the sets with their images",
                               avg))
        if len(g) > 1 and all(runs):
            finals.append((f"the mean of {' + '.join(run_name(r) for r in g)}",
                           mean_final(runs)))
        if len(g) > 1 and all(imaged):
            finals.append((f"the mean of {' + '.join(run_name(r) for r in g)}, the sets with "
                           "their images", mean_final(imaged)))
    sets = []
    for _, s in finals:
        sets += [k for k in (s or {}) if k not in sets]
    # In the arena's column order, as the curves above (summary.tsv lists
    # the files alphabetically); sets the arena did not judge go last.
    order = {c: i for i, c in enumerate(cols)}
    sets.sort(key=lambda k: order.get(k.rsplit(".", 1)[0], len(order)))
    # where every set is judged by its mistakes, their sum closes each row
    total = len(sets) > 1 and all(metrics.get(k.rsplit(".", 1)[0]) == "mistakes" for k in sets)
    if sets:
        print("\nThe final model on every set whole:\n")
        print("| run | " + " | ".join(sets) + (" | all" if total else "") + " |")
        print("|---|" + "--:|" * (len(sets) + total))
        for name, s in finals:
            if s is None:
                continue
            cells = [rate(s.get(k, ""), metrics.get(k.rsplit(".", 1)[0])) for k in sets]
            if total:
                got = [count(s.get(k, "")) for k in sets]
                ns = [n for n, _ in got] if all(got) else []
                whole = all("." not in n for n in ns)
                cells.append("" if not ns else f"{sum(float(n) for n in ns):.{0 if whole else 1}f}")
            print(f"| {name} | " + " | ".join(cells) + " |")
    da, db = (merge([diversity(r) for r in g], float) for g in groups)
    if da:
        print("\nThe sampling window at each checkpoint, % distinct:\n")
        print("| min | step | positions | games |")
        print("|--:|--:|--:|--:|")
        for row in da:
            near = nearest(db, row["t"]) if db else None
            cells = []
            for c in ("positions", "games"):
                cell = f"{row[c]:.1f}"
                cells.append(f"{cell} ({near[c]:.1f})" if near else cell)
            print(f'| {row["t"] / 60:.0f} | {row["step"]:,} | ' + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
