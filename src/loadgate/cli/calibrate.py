"""`loadgate calibrate`: the spread of each compared metric on this machine (a value's, and a
pair's worsening: what the paired rule's bounds use), with its uncertainty, what N pairs can
tell at it, and a margins file `compare --margins-file` takes (the thresholds in force, the
spreads measured here).

It runs A/A pairs (the same stack on both sides: `compare`'s machinery, `--pairs N` at most,
`--budget`), or reads recorded comparisons (`--from ID`, repeatable: A/A or not, the spreads are
pooled within sides), or both. The pooling and the intervals are
`loadgate.capacity.compare.calibration`; the margins `margins`; the file `margins_file`."""

from __future__ import annotations

import argparse
import shlex
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from loadgate import paths
from loadgate.capacity.compare import calibration, margins, margins_file, rule, run_order
from loadgate.capacity.compare import replay as replaying
from loadgate.capacity.compare import values as cv
from loadgate.capacity.compare.record import CompareRecord
from loadgate.capacity.compare.sequential import Plan, family_of
from loadgate.capacity.compare.sides import SideError

from .common import EXIT_BAD_INPUT, EXIT_OK, Subparsers, UsageError, stdout
from .compare import add_comparison_flags, add_margin_flags, run_comparison
from .compare_input import budget_of, count_of

if TYPE_CHECKING:
    from .seams import Seams

_DEFAULT_PAIRS = 6  # 10 degrees of freedom a metric from one calibration


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "calibrate",
        help="each compared metric's spread here, what N pairs can tell, a margins file",
        description="Run A/A pairs (the same stack on both sides, as compare runs them) and/or "
        "read recorded comparisons (--from), pool each metric's spread within sides and the "
        "spread of a pair's worsening within comparisons, print them with their 90 %% "
        "intervals (chi-square) and degrees of freedom, and the worsening each number of pairs "
        "calls a regression 80 %% of the time. --output writes a margins file for compare "
        "--margins-file: the thresholds in force (--margins, --margins-file, the shipped ones) "
        "with the spreads measured here.",
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
        help="a recorded comparison (results/ID/compare.json) whose spreads to pool (a metric it "
        "did not compare is read again from its runs' result.json); repeatable",
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
    add_margin_flags(p)
    p.set_defaults(
        handler=_cmd_calibrate,
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
    thresholds = _thresholds(args, keys)
    compared = tuple(thresholds.values())
    records = [_with_every_metric(results_root, r, compared) for r in records]
    found: dict[str, margins_file.MarginEntry] = {}
    stdout.print(Text(_pooled_line(records, compared)), soft_wrap=True)
    for key in keys:
        metric = thresholds[key]
        spread = calibration.pooled(records, metric.name)
        pair = calibration.paired(records, metric.name)
        if spread is None or pair is None:
            stdout.print(Text(f"{key}: no comparison with two complete pairs of it: no spread"),
                         soft_wrap=True)  # fmt: skip
            continue
        metric, level_line = _with_level(metric, calibration.level(records, metric.name))
        family = family_of(metric, compared)
        rows = calibration.detect_rows(metric, pair, family)
        for line in [*_metric_lines(key, metric, spread, pair, rows), level_line]:
            stdout.print(Text(line), soft_wrap=True)
        chosen = calibration.detect_row(metric, pair, margin_pairs, family)
        found[key] = margins_file.MarginEntry(
            round(metric.margin * 100, 6), spread.spread, spread.df, spread.interval(),
            confidence=chosen.confidence, paired_spread=pair.spread, paired_df=pair.df,
            level_spread=metric.level_spread, level_df=metric.level_df or None,
        )  # fmt: skip
    if args.output is not None:
        if not found:
            raise UsageError(
                "--output: no metric has a paired spread measured in these comparisons"
            )
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


def _with_every_metric(
    results_root: Path, record: CompareRecord, metrics: tuple[rule.Metric, ...]
) -> CompareRecord:
    """The record with the values of the metrics it did not compare read again from its runs'
    records (a line says so), so a metric new since it ran is calibrated from the same runs."""
    recorded = {d.metric.name for d in record.decisions}
    missing = tuple(m for m in metrics if m.name not in recorded)
    if not missing:
        return record
    names = ", ".join(cv.key_of(m.name) or m.name for m in missing)
    try:
        again = replaying.with_values_read_again(results_root, record, missing)
    except replaying.ReplayError as exc:
        raise UsageError(f"--from {record.compare_id}: {names} not compared there: {exc}") from None
    stdout.print(Text(f"{record.compare_id}: {names} not compared there: read again from its "
                      "runs' records"), soft_wrap=True)  # fmt: skip
    return again


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


def _thresholds(args: argparse.Namespace, keys: list[str]) -> dict[str, rule.Metric]:
    """The metrics to calibrate with the thresholds in force: `--margins`, else
    `--margins-file`, else the shipped margins file's."""
    metrics = tuple(cv.METRIC_KEYS[k] for k in keys)
    try:
        chosen = margins_file.read(Path(args.margins_file)) if args.margins_file else None
        metrics = margins_file.apply(metrics, chosen or margins_file.shipped())
        metrics = cv.apply_margins(metrics, args.margins)
    except (margins_file.MarginsError, SideError) as exc:
        raise UsageError(str(exc)) from None
    return {k: m for k, m in zip(keys, metrics, strict=True)}


def _with_level(metric: rule.Metric, measured: calibration.Level | None) -> tuple[rule.Metric, str]:
    """The metric with the stacks' level these comparisons measured, or the one of the margins
    in force when they cannot (calibration.level: fewer than 3 A/A comparisons on kept
    stacks), and a line saying which."""
    if measured is not None:
        line = (
            f"  the stacks' level (an A/A comparison's mean beyond its pairs, kept stacks): "
            f"{_pct(measured.spread)} on {measured.df} df, over {measured.df} A/A comparisons"
        )
        return replace(metric, level_spread=measured.spread, level_df=measured.df), line
    if metric.level:
        return metric, (
            "  the stacks' level: not measured here (it needs 3 A/A comparisons on kept stacks, "
            f"2 pairs each); {_pct(metric.level)} on {metric.level_df} df carried "
            "over from the margins in force"
        )
    return metric, (
        "  the stacks' level: not measured here (it needs 3 A/A comparisons on kept stacks, "
        "2 pairs each) and none in the margins in force: kept-stack bounds will not "
        "count it"
    )


def _pooled_line(records: list[CompareRecord], compared: tuple[rule.Metric, ...]) -> str:
    ids = ", ".join(r.compare_id + (" (A/A)" if r.aa else "") for r in records)
    gating = [m for m in compared if m.gates]
    shares = ", ".join(
        f"{cv.key_of(m.name) or m.name} {rule.ALPHA / family_of(m, compared):.2%}" for m in gating
    )
    return (
        f"calibrate: {len(records)} comparison(s) pooled: {ids}; for a comparison of "
        f"{len(gating)} gating metric(s), sharing its 5 % error: {shares}"
    )


def _pct(x: float) -> str:
    """A share as a percentage; past 1,000 % (a spread too wide to tell anything) said so."""
    return "> 1,000 %" if x > 10 else f"{x * 100:.1f} %"


def _metric_lines(
    key: str,
    metric: rule.Metric,
    spread: calibration.Spread,
    pair: calibration.Spread,
    rows: list[calibration.DetectRow],
) -> list[str]:
    low, high = spread.interval()
    plow, phigh = pair.interval()
    head = (
        f"{key}: a value's spread {_pct(spread.spread)} (90 % interval {_pct(low)} .. "
        f"{_pct(high)}, {spread.df} df); a pair's worsening {_pct(pair.spread)} ({_pct(plow)} "
        f".. {_pct(phigh)}, {pair.df} df); threshold {metric.margin * 100:g} %"
        + ("" if metric.gates else " (reported beside the verdict)")
    )
    title = (
        "  the worsening N pairs call a regression 80 % of the time, at the paired spread's "
        "upper bound (at the estimate); * too noisy there:"
    )
    pairs = "  pairs       " + "".join(f"{r.pairs:>17}" for r in rows)
    shown = "  worsening   " + "".join(
        f"{f'{_pct(r.detectable)} ({_pct(r.at_estimate)})' + ('*' if r.noisy else ''):>17}"
        for r in rows
    )
    return [head, title, pairs, shown]


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
