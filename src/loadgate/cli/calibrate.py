"""`loadgate calibrate`: the spread of each compared metric on this machine, with its
uncertainty, the margins N pairs can bound, and a margins file `compare --margins-file` takes.

It runs A/A pairs (the same stack on both sides: `compare`'s machinery, `--pairs N` at most,
`--budget`), or reads recorded comparisons (`--from ID`, repeatable: A/A or not, the spreads are
pooled within sides), or both. The pooling and the intervals are
`loadgate.capacity.compare.calibration`; the margins `margins`; the file `margins_file`."""

from __future__ import annotations

import argparse
import math
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from loadgate import paths
from loadgate.capacity.compare import calibration, margins, margins_file, rule, run_order
from loadgate.capacity.compare import replay as replaying
from loadgate.capacity.compare import values as cv
from loadgate.capacity.compare.record import CompareRecord
from loadgate.capacity.compare.sequential import Plan
from loadgate.capacity.compare.sides import SideError

from .common import EXIT_BAD_INPUT, EXIT_OK, Subparsers, UsageError, stdout
from .compare import add_comparison_flags, run_comparison
from .compare_input import budget_of, count_of

if TYPE_CHECKING:
    from .seams import Seams

_DEFAULT_PAIRS = 6  # 10 degrees of freedom a metric from one calibration


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "calibrate",
        help="each compared metric's spread here, the margins N pairs can bound, a margins file",
        description="Run A/A pairs (the same stack on both sides, as compare runs them) and/or "
        "read recorded comparisons (--from), pool each metric's spread within sides, and print "
        "it with its 90 %% interval (chi-square) and degrees of freedom, and the margin each "
        "number of pairs can bound (chosen at the spread's 95 %% upper bound). --output writes "
        "a margins file for compare --margins-file.",
    )
    p.add_argument(
        "--pairs",
        help=f"A/A pairs to run (2-100; default {_DEFAULT_PAIRS}, none with only --from)",
    )
    p.add_argument(
        "--budget",
        help="wall time after which no pair is started, as 30m or 1h (default: none, the pairs "
        "decide)",
    )
    p.add_argument(
        "--from",
        dest="sources",
        action="append",
        metavar="ID",
        help="a recorded comparison (results/ID/compare.json) whose spreads to pool; repeatable",
    )
    p.add_argument(
        "--margin-pairs",
        default=str(margins.DEFAULT_BUDGET_PAIRS),
        help="the pairs the written margins are chosen for (default "
        f"{margins.DEFAULT_BUDGET_PAIRS}: what compare's default budget fits)",
    )
    p.add_argument(
        "--output",
        metavar="FILE",
        help="write the margins file here (YAML: margins, spreads, df, command, date, machine)",
    )
    add_comparison_flags(p)
    p.set_defaults(
        handler=_cmd_calibrate,
        margins=None,
        margins_file=None,
        fail_on=rule.DEFAULT_FAIL_ON,
        order=run_order.DEFAULT_ORDER,
    )


def _cmd_calibrate(args: argparse.Namespace, seams: Seams) -> int:
    results_root = paths.results_dir()
    margin_pairs = count_of(args.margin_pairs, "--margin-pairs")
    if margin_pairs < 2:
        raise UsageError(f"--margin-pairs: must be at least 2; got {args.margin_pairs!r}")
    records = [_recorded(results_root, ref) for ref in args.sources or ()]
    live = args.pairs is not None or not records
    if live:
        pairs = count_of(args.pairs or str(_DEFAULT_PAIRS), "--pairs")
        if pairs < 2:
            raise UsageError(f"--pairs: at least 2 pairs show a spread; got {args.pairs!r}")
        budget = None if args.budget is None else budget_of(args.budget)
        if args.compare_id is None:
            args.compare_id = "calibrate-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        code = run_comparison(args, seams, Plan.calibration(pairs, budget), [], [])
        if code == EXIT_BAD_INPUT:
            return code
        records.append(_recorded(results_root, args.compare_id))
    elif args.budget is not None:
        raise UsageError("--budget: limits the A/A pairs calibrate runs; give --pairs too")
    keys = _keys(args, records)
    family = len(keys)
    found: dict[str, margins_file.MarginEntry] = {}
    stdout.print(Text(_pooled_line(records, family)), soft_wrap=True)
    for key in keys:
        metric = cv.METRIC_KEYS[key]
        spread = calibration.pooled(records, metric.name)
        if spread is None:
            stdout.print(Text(f"{key}: no side with two values of it: no spread"), soft_wrap=True)
            continue
        rows = calibration.margin_rows(metric, spread, family)
        for line in _metric_lines(key, spread, rows):
            stdout.print(Text(line), soft_wrap=True)
        chosen = calibration.margin_row(metric, spread, margin_pairs, family)
        if math.isinf(chosen.margin):
            stdout.print(Text(_unbounded(key, margin_pairs, rows)), soft_wrap=True)
            continue
        found[key] = margins_file.MarginEntry(
            round(chosen.margin * 100, 6), spread.spread, spread.df, spread.interval(),
            round(chosen.at_estimate * 100, 6), chosen.confidence,
        )  # fmt: skip
    if args.output is not None:
        if not found:
            raise UsageError("--output: no metric has a spread to choose a margin from")
        written = margins_file.write(_margins_file(args, records, found, margin_pairs),
                                     Path(args.output))  # fmt: skip
        stdout.print(Text(f"margins file: {written} (compare --margins-file {written})"),
                     soft_wrap=True)  # fmt: skip
    return EXIT_OK


def _recorded(results_root: Path, compare_id: str) -> CompareRecord:
    try:
        return replaying.recorded(results_root, compare_id)
    except replaying.ReplayError as exc:
        raise UsageError(f"--from: {exc}") from None


def _keys(args: argparse.Namespace, records: list[CompareRecord]) -> list[str]:
    """The `--metrics` keys to calibrate: those given, else those the records compared."""
    if args.metrics is not None:
        try:
            metrics = cv.parse_metrics(args.metrics, args.search_precision)
        except SideError as exc:
            raise UsageError(str(exc)) from None
        names = [m.name for m in metrics]
    else:
        names = [d.metric.name for r in records for d in r.decisions]
    keys = [cv.key_of(n) for n in names]
    return list(dict.fromkeys(k for k in keys if k is not None))


def _pooled_line(records: list[CompareRecord], family: int) -> str:
    ids = ", ".join(r.compare_id + (" (A/A)" if r.aa else "") for r in records)
    return (
        f"calibrate: {len(records)} comparison(s) pooled within sides: {ids}; margins for a "
        f"comparison of {family} metric(s), each metric with {rule.ALPHA / max(family, 1):.2%} of "
        "its 5 % error"
    )


def _pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def _metric_lines(
    key: str, spread: calibration.Spread, rows: list[calibration.MarginRow]
) -> list[str]:
    low, high = spread.interval()
    head = (
        f"{key}: spread {_pct(spread.spread)} (90 % interval {_pct(low)} .. {_pct(high)}, "
        f"{spread.df} df)"
    )
    title = "  the margin N pairs can bound, at the spread's upper bound (at the estimate):"
    pairs = "  pairs   " + "".join(f"{r.pairs:>12}" for r in rows)
    shown = "  margin  " + "".join(
        f"{f'{_margin_text(r.margin)} ({_margin_text(r.at_estimate)})':>12}" for r in rows
    )
    return [head, title, pairs, shown]


def _margin_text(margin: float) -> str:
    """A chosen margin, or `none` where no margin is powered at those pairs."""
    return "none" if math.isinf(margin) else f"{margin:.0%}"


def _unbounded(key: str, margin_pairs: int, rows: list[calibration.MarginRow]) -> str:
    """Why a metric gets no margin in the file, and from how many pairs one would be bound."""
    enough = [r.pairs for r in rows if not math.isinf(r.margin)]
    from_pairs = f"from {enough[0]} pairs on" if enough else "not even at the most pairs shown"
    return (
        f"{key}: no margin is bounded at {margin_pairs} pairs (--margin-pairs) at the spread's "
        f"upper bound: a worsening of twice it would not be found a regression 80 % of the time "
        f"at this spread ({from_pairs}); the margins file leaves {key} out, so compare keeps "
        "its shipped margin"
    )


def _margins_file(
    args: argparse.Namespace,
    records: list[CompareRecord],
    found: dict[str, margins_file.MarginEntry],
    margin_pairs: int,
) -> margins_file.MarginsFile:
    argv: list[str] = getattr(args, "argv", None) or []
    ids = ", ".join(r.compare_id for r in records)
    return margins_file.MarginsFile(
        status=f"{margins_file.MEASURED} from {len(records)} comparison(s): {ids}",
        metrics=found,
        pairs=margin_pairs,
        command=shlex.join(["loadgate", *argv]) if argv else None,
        date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        machine=margins_file.machine(),
        sources=tuple(r.compare_id for r in records),
    )
