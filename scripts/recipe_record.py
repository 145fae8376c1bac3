#!/usr/bin/env python3
"""Keeps a finished recipe run's record: the records of RUN/metrics.jsonl
that scripts/recipe_compare.py reads (the arena's games and position sets,
the sampling window's diversity) and the run's line of summary.tsv (its
final judgement), in one file of a few tens of kilobytes.

    scripts/recipe_record.py runs/recipes/c4-intel207-start20
    scripts/recipe_record.py RUN OUT

OUT defaults to docs/recipe-runs/NAME.jsonl in this checkout. A run's
directory lives under runs/, which git ignores and a new machine does not
have; its record, committed beside the page that quotes it, can still be
laid beside later runs (recipe_compare.py takes a record file wherever it
takes a run directory). The record is written whole or not at all (a
temporary file, fsync, rename); a run that has no summary line (still
running, or stopped before its final judgement) is refused."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_write import write_atomic  # noqa: E402
from recipe_compare import records, summary_line  # noqa: E402

KEPT = ("arena", "positions", "replay_diversity")


def main(argv):
    if len(argv) not in (2, 3) or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    run = os.path.normpath(argv[1])
    name = os.path.basename(run)
    metrics = os.path.join(run, "metrics.jsonl")
    if not os.path.isfile(metrics):
        print(f"recipe_record: no {metrics}", file=sys.stderr)
        return 1
    cells = summary_line(run)
    if cells is None:
        print(f"recipe_record: {name} has no line in {os.path.dirname(run) or '.'}/summary.tsv"
              " (the recipe has not finished)", file=sys.stderr)
        return 1
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = argv[2] if len(argv) == 3 else os.path.join(here, "docs", "recipe-runs", name + ".jsonl")
    lines = [json.dumps({"kind": "record", "run": name, "from": metrics})]
    lines += [json.dumps(r, separators=(",", ":")) for r in records(run) if r.get("kind") in KEPT]
    lines.append(json.dumps({"kind": "summary", "line": "\t".join(cells)}))
    try:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        write_atomic(out, "\n".join(lines) + "\n")
    except OSError as e:
        print(f"recipe_record: {out}: {e.strerror}", file=sys.stderr)
        return 1
    print(f"recipe_record: {out}: {len(lines) - 2} records and the final judgement of {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
