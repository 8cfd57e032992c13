"""Recorded comparisons decided again at other thresholds, from the values they recorded: what a
threshold would have said of comparisons that really ran. Not a replay (`loadgate compare
--replay ID` reads every run's result.json again, and docs/records keeps only compare.json):
the recorded values are taken as they were, today's rule and the shipped margins file decide
them, and only the thresholds given change. Pure and fast: no runs.

    .venv/bin/python benchmarks/threshold_whatif.py --margins saturation=5 --margins saturation=6 \
        docs/records/2026-11-29-*/

Each `--margins` (as `loadgate compare --margins` takes it, repeatable) is a column; every
column is the same comparison looked at after each recorded pair as the driver looks (a
regression or every metric settled ends it there; one that would have run more pairs than were
recorded is marked `*`). Only finished comparisons of today's default metrics are read (others
are counted as skipped): their calibrated spreads and levels are the shipped file's. The totals
count A/A comparisons apart from the others.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from loadgate.capacity.compare import margins_file, replay, values
from loadgate.capacity.compare import sequential as seq
from loadgate.capacity.compare.record import COMPARE_FILE, CompareRecord
from loadgate.capacity.compare.sides import SideError
from loadgate.records.fields import RecordError

DEFAULT_NAMES = {m.name for m in values.parse_metrics(",".join(values.DEFAULT_METRICS))}


def records(paths: Sequence[Path]) -> list[tuple[Path, CompareRecord]]:
    """Every compare.json under these paths (a file, or a folder searched two levels deep)."""
    files: list[Path] = []
    for path in paths:
        if path.is_file():
            files.append(path)
        else:
            files += sorted({*path.glob(COMPARE_FILE), *path.glob(f"*/{COMPARE_FILE}")})
    out: list[tuple[Path, CompareRecord]] = []
    for file in files:
        try:
            out.append((file, CompareRecord.from_json(file.read_text())))
        except (OSError, RecordError) as exc:
            raise SystemExit(f"{file}: {exc}") from None
    return out


def of_todays_metrics(record: CompareRecord) -> bool:
    """A finished comparison (not one still running or stopped partway) of today's default
    metrics."""
    finished = record.ended_at is not None and not any(
        n.startswith("partial") for n in record.notes
    )
    return finished and {d.metric.name for d in record.decisions} == DEFAULT_NAMES


def decided_at(record: CompareRecord, margins: str) -> CompareRecord:
    """`record` decided again from its recorded values at these thresholds (the shipped margins
    file's spreads and levels; SideError for a bad `margins`)."""
    shipped = margins_file.apply(replay.todays_metrics(record), margins_file.shipped())
    metrics = values.apply_margins(shipped, margins)
    return replay.decided_again(record, list(record.runs), metrics, record.fail_on)


def cell(record: CompareRecord, again: CompareRecord) -> str:
    """An outcome, its exit code and its pairs; `*` where the recording stopped decided and
    these thresholds settle less there (replay.decided_again leaves it unstopped)."""
    pairs = max((r.repeat for r in again.runs), default=0)
    more = "*" if record.stopped == seq.DECIDED and again.stopped is None else ""
    return f"{again.verdict} ({again.exit_code}) @{pairs}{more}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="compare.json files or folders")
    parser.add_argument(
        "--margins", action="append", required=True, metavar="KEY=PERCENT,...",
        help="thresholds to decide at, as compare takes them (repeatable: a column each)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    found = records(args.paths)
    todays = [(p, r) for p, r in found if of_todays_metrics(r)]
    totals: list[Counter[tuple[str, str]]] = [Counter() for _ in args.margins]
    print(f"{'comparison':<26} {'recorded':<22} " + " ".join(f"{m:<28}" for m in args.margins))
    for _, record in todays:
        cells: list[str] = []
        for i, margins in enumerate(args.margins):
            try:
                again = decided_at(record, margins)
            except SideError as exc:
                parser.error(str(exc))
            totals[i][("A/A" if record.aa else "other", again.verdict)] += 1
            cells.append(f"{cell(record, again):<28}")
        recorded = f"{record.verdict} ({record.exit_code})"
        print(f"{record.compare_id[:26]:<26} {recorded:<22} " + " ".join(cells))
    print(f"{len(todays)} comparison(s) of today's default metrics; "
          f"{len(found) - len(todays)} skipped (other metrics, or not finished)")  # fmt: skip
    for margins, counts in zip(args.margins, totals, strict=True):
        for kind in ("A/A", "other"):
            row = {v: n for (k, v), n in counts.items() if k == kind}
            if row:
                text = ", ".join(f"{v} {n}" for v, n in sorted(row.items()))
                print(f"  {margins}: {kind}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
