"""The report page: a small document (headings, paragraphs, tables, images) built from a Report;
`loadgate.report.blocks` renders it as Markdown (report.md) and as HTML (report.html) with the
same content. Pure: the images are file names the caller has written (loadgate.report.plots)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from loadgate.capacity.compare.record import CompareRecord
from loadgate.capacity.compare.rule import TOO_NOISY, WORSE, MetricDecision
from loadgate.measure import timeseries as ts
from loadgate.report import matrix_table as mt
from loadgate.report.blocks import Block, Bullets, Heading, Image, Para, Table
from loadgate.report.content import Report
from loadgate.report.naming import UNKNOWN
from loadgate.report.rows import Figure, Row
from loadgate.report.runs import Run
from loadgate.report.saturation import SaturationRow

ROW_COLUMNS = (
    "revision", "scenario", "offered", "runs", "capacity", "accepted/min", "exported/min",
    "stored/min", "p99 ms", "errors", "CPU s / 1k rec", "RSS MiB / 1k rec/min", "verdict",
)  # fmt: skip

_COMPARE_COLUMNS = (
    "metric", "baseline values", "candidate values", "baseline mean", "candidate mean",
    "candidate worse by", "bounds (one-sided, each)", "margin", "decision",
)  # fmt: skip

_HOW = (
    "How the figures are made. **runs**: the runs behind the row (n); each figure is the "
    "**median** of the runs that measured it, and `(k/n)` says when only k of the n did; "
    "`unknown` means no run measured it (never 0). **capacity**: the highest offered rate at "
    "which every gate passed, from the converged `loadgate search`es of that revision and "
    "scenario, with where the knee lies and the confidence its search states (a search recorded "
    "before searches stated one: its holds' precision), the median when there are several, with "
    "the widest interval's half-width (a search in progress or out of budget is counted, not "
    "used). "
    "**accepted/exported/stored per minute**: the run's records at those ledger steps "
    "(collector receiver, collector Loki exporter, LogQL count in Loki) divided by the load's "
    "duration. **p99 ms** and **errors**: k6. **CPU s / 1k rec**: the collector's mean CPU over "
    "the load (cores) x the load's seconds / the records k6 got accepted x 1,000. "
    "**RSS MiB / 1k rec/min**: the collector's peak RSS over the load / (accepted records per "
    "minute / 1,000). **verdict**: PASS or FAIL when every run agrees, else the counts. "
    "Runs that are steps of a search are in the knee curve, not in these rows."
)


def _value(v: float | None) -> str:
    """A compared value: whole numbers with separators from 1,000 up, else 4 significant digits."""
    if v is None:
        return UNKNOWN
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _figure(fig: Figure, fmt: str, scale: float = 1.0, suffix: str = "") -> str:
    if fig.value is None:
        return UNKNOWN if fig.runs else "-"
    text = format(fig.value * scale, fmt) + suffix
    if fig.measured < fig.runs:
        text += f" ({fig.measured}/{fig.runs})"
    return text


def row_cells(row: Row) -> tuple[str, ...]:
    return (
        row.revision,
        row.scenario,
        row.load,
        str(row.n),
        row.capacity_text,
        _figure(row.accepted_per_min, ",.0f"),
        _figure(row.exported_per_min, ",.0f"),
        _figure(row.stored_per_min, ",.0f"),
        _figure(row.p99_ms, ".2f"),
        _figure(row.error_rate, ".2f", 100, "%"),
        _figure(row.cpu_s_per_1000, ".4f"),
        _figure(row.rss_mib_per_1000_per_min, ".2f"),
        row.verdict,
    )


def _when(t: float | None) -> str:
    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t))


def _describe(desc: Mapping[str, Any]) -> str:
    """A side's description in a line: its plain values (settings, kind, preset, ...); its name
    carries its sources, commits and workload versions, and nested values are in the file."""
    parts = [
        f"{k}: {v if isinstance(v, str) else json.dumps(v)}"
        for k, v in desc.items()
        if isinstance(v, str | int | float | bool) and v != ""
    ]
    return "; ".join(parts[:8]) or "-"


def _values(vs: Sequence[float | None]) -> str:
    return "; ".join(_value(v) for v in vs) or "-"


def _decision_cells(d: MetricDecision) -> tuple[str, ...]:
    """One metric's row of a comparison's table (COMPARE_COLUMNS)."""
    if d.lower is None or d.upper is None:
        bounds = "-"
    else:
        bounds = f"[{d.lower * 100:+.1f}%, {d.upper * 100:+.1f}%]"
        if d.family is not None and not d.metric.gates:  # reported beside: its own 5 %
            bounds += f" (beside the verdict: its own {d.family:.0%})"
        elif d.family is not None:  # today's rule: each side's bounds of the comparison together
            bounds += f" (lower bounds together at {d.family:.0%}, upper too)"
        elif d.confidence is not None:  # the previous rule: each bound alone
            bounds += f" at {d.confidence:.2%}"
    if d.decision in (TOO_NOISY, WORSE) and not d.settled and d.repeats_needed:
        more = f" (needs about {d.repeats_needed} pairs to settle)"
    else:
        more = f" (at {d.pairs} pairs)" if d.pairs is not None else ""
    if not d.metric.gates:
        more += ", reported beside"
    return (
        f"{d.metric.name} ({d.metric.unit}, {d.metric.better} is better)",
        _values(d.baseline),
        _values(d.candidate),
        _value(d.baseline_mean),
        _value(d.candidate_mean),
        "-" if d.change is None else f"{d.change * 100:+.1f}%",
        bounds,
        f"{d.metric.margin * 100:.0f}%",
        d.decision + more,
    )


def _comparison_para(c: CompareRecord) -> Para:
    """A comparison's verdict, plan, sides, pressure rate, whether it was A/A, the candidate's
    lost records and the runs whose figures did not count."""
    text = (
        f"Overall **{c.verdict}** (exit {c.exit_code}); {c.plan_summary}, "
        f"{_when(c.started_at)}. Baseline: {_describe(c.baseline.description)}. "
        f"Candidate: {_describe(c.candidate.description)}. Sources, commits and workload "
        "versions of each side: its name, and in full in compare.json."
    )
    if c.pressure is not None:
        text += f" The pressure runs: {c.pressure.summary}."
    if c.aa:
        text += " **A/A**: both sides ran the same stack (a calibration of the noise)."
    if c.lost_records is not None:
        text += f" **{c.lost_records}.**"
    if c.broken is not None:
        text += f" **{c.broken}.**"
    unsound = [f"{r.side} run {u.run_id}: {u.reason}" for r in c.runs for u in r.unsound]
    if unsound:
        text += f" Runs whose figures did not count (their values unknown): {'; '.join(unsound)}."
    return Para(text)


def _comparison_blocks(c: CompareRecord, image: str | None) -> list[Block]:
    blocks: list[Block] = [
        Heading(f"{c.compare_id}: {c.baseline.name} vs {c.candidate.name}: {c.verdict}", 3),
        _comparison_para(c),
        Table(_COMPARE_COLUMNS, tuple(_decision_cells(d) for d in c.decisions)),
        Bullets(tuple(f"{d.metric.name}: {d.reason}" for d in c.decisions)),
    ]
    if image:
        blocks.append(Image(image, f"comparison {c.compare_id}"))
    blocks.append(Para(f"Rule: {c.rule}"))
    return blocks


def _intro(report: Report) -> list[Block]:
    rec = report.records
    blocks: list[Block] = [
        Heading("loadgate report", 1),
        Para(
            f"From `{rec.root}`: {len(rec.runs)} runs ({len(report.step_runs)} of them search "
            f"steps), {len(rec.searches)} searches, {len(rec.compares)} comparisons. "
            f"Written {_when(time.time())}."
        ),
    ]
    if rec.skipped:
        blocks += [Para("Skipped (a format this report does not read):"), Bullets(rec.skipped)]
    return blocks


def _rows_section(report: Report) -> list[Block]:
    return [
        Heading("Per revision and scenario"),
        Table(ROW_COLUMNS, tuple(row_cells(r) for r in report.rows)),
        Para(_HOW),
    ]


def _capacity_section(report: Report, images: Mapping[str, str]) -> list[Block]:
    blocks: list[Block] = [Heading("Capacity per revision")]
    if report.capacities:
        header = (
            "search", "revision", "scenario", "capacity", "knee", "status", "held", "bottleneck",
        )  # fmt: skip
        cells = tuple(
            (
                c.search_id,
                c.revision,
                c.scenario,
                c.text,
                c.interval_text,
                c.status,
                "yes" if c.confirmed else "no",
                c.bottleneck or "-",
            )
            for c in report.capacities
        )
        blocks.append(Table(header, cells))
    else:
        blocks.append(Para("No searches recorded: capacity not measured (`loadgate search`)."))
    if "capacity" in images:
        blocks.append(Image(images["capacity"], "capacity per revision"))
    return blocks


_SATURATION_COLUMNS = (
    "revision", "scenario", "saturation/min (median)", "spread", "n", "capacity (searches)",
)  # fmt: skip

_SATURATION_HOW = (
    "**saturation/min**: the collector's accepted records per minute over the steady window of "
    "each run whose queue filled (`loadgate run --saturate`, `loadgate compare`'s saturation "
    "runs): the pipeline's throughput at its limit; the **median** of the saturated runs, their "
    "**spread** (lowest - highest, the range relative to the median, and the coefficient of "
    "variation) and **n**. A run that did not fill the queue gives only a lower bound and is not "
    "counted. **capacity**: the highest offered rate at which every gate passed, from the "
    "searches, as in the rows above."
)


def _saturation_cells(row: SaturationRow) -> tuple[str, ...]:
    return (
        row.revision,
        row.scenario,
        row.median_text,
        row.spread_text,
        str(row.n),
        row.capacity_text,
    )


def _saturation_section(report: Report) -> list[Block]:
    blocks: list[Block] = [Heading("Saturation throughput and capacity per revision")]
    if not any(row.n for row in report.saturation):
        blocks.append(
            Para(
                "No saturated runs recorded: saturation not measured (`loadgate run --saturate`, "
                "`loadgate compare`)."
            )
        )
        return blocks
    cells = tuple(_saturation_cells(row) for row in report.saturation)
    return [*blocks, Table(_SATURATION_COLUMNS, cells), Para(_SATURATION_HOW)]


def _knee_section(images: Mapping[str, str]) -> list[Block]:
    blocks: list[Block] = [
        Heading("Knee curve"),
        Para(
            "p99 and error rate against the offered rate, every step of every search (o passed, "
            "x failed; the dashed line is the search's capacity)."
        ),
    ]
    if "knee" in images:
        blocks.append(Image(images["knee"], "knee curve"))
    return blocks


def _series_title(row: Row) -> str:
    """The title of a row's latest run over time (its heading, its plot)."""
    return f"{row.revision}, {row.scenario}, {row.load}: run {row.latest_run}"


def _series_blocks(row: Row, data: ts.RunSeries | None, image: str | None) -> list[Block]:
    title = _series_title(row)
    if data is None:
        return [Para(f"{title}: not measured (the run has no {ts.SERIES_FILE}).")]
    blocks: list[Block] = [Heading(title, 3)]
    gone = ts.missing(data)
    if gone:
        blocks.append(Bullets(tuple(f"{name}: not measured ({why})" for name, why in gone.items())))
    if image:
        blocks.append(Image(image, title))
    return blocks


def _series_section(report: Report, images: Mapping[str, str]) -> list[Block]:
    blocks: list[Block] = [
        Heading("The collector over time"),
        Para(
            "For the latest run of each row: collector CPU (cores), RSS (MiB) and queue size "
            "from Prometheus range queries over the run (series.json); the load is shaded."
        ),
    ]
    for row in report.rows:
        if row.latest_run is not None:
            data = report.series.get(row.latest_run)
            blocks += _series_blocks(row, data, images.get(f"series:{row.latest_run}"))
    return blocks


def _comparisons_section(report: Report, images: Mapping[str, str]) -> list[Block]:
    compares = report.records.compares
    blocks: list[Block] = [Heading("Comparisons")]
    if not compares:
        blocks.append(Para("No comparisons recorded (`loadgate compare`)."))
    for c in compares:
        blocks += _comparison_blocks(c, images.get(f"compare:{c.compare_id}"))
    return blocks


def _matrices_section(report: Report, images: Mapping[str, str]) -> list[Block]:
    """Each `loadgate matrix`: its cells' figures as its matrix.md shows them, and a plot."""
    matrices = report.records.matrices
    blocks: list[Block] = [Heading("Matrices")]
    if not matrices:
        blocks.append(Para("No matrices recorded (`loadgate matrix`)."))
    for m in matrices:
        rec, rows = m.record, list(m.rows)
        done = sum(r.status == "done" for r in rows)
        blocks += [
            Heading(f"{rec.matrix_id}: {done} of {len(rows)} cells done", 3),
            Para(f"{rec.description.strip() or '(no description)'} From `{rec.source}`."),
            Table(mt.MAIN_COLUMNS, tuple(mt.main_cells(r) for r in rows)),
            Table(mt.MORE_COLUMNS, tuple(mt.more_cells(r) for r in rows)),
        ]
        image = images.get(f"matrix:{rec.matrix_id}")
        if image:
            blocks.append(Image(image, f"matrix {rec.matrix_id}"))
    if matrices:
        blocks.append(Para(mt.HOW))
    return blocks


def _runs_section(report: Report) -> list[Block]:
    def load(r: Run) -> str:
        if r.offered_per_min is None and r.vus is None:
            return UNKNOWN
        return f"{r.offered_per_min:,}/min" if r.offered_per_min else f"{r.vus} VUs"

    header = ("run", "date", "revision", "scenario", "offered", "verdict", "search step")
    cells = tuple(
        (
            r.run_id,
            _when(r.started_at),
            r.revision,
            r.scenario,
            load(r),
            r.verdict,
            "yes" if r.run_id in report.step_runs else "",
        )
        for r in report.records.runs
    )
    return [Heading("Runs"), Table(header, cells)]


def document(report: Report, images: Mapping[str, str]) -> list[Block]:
    """The page. `images`: keys `knee`, `capacity`, `series:<run_id>`, `compare:<id>`,
    `matrix:<id>` -> the PNG's file name next to the page."""
    return [
        *_intro(report),
        *_rows_section(report),
        *_capacity_section(report, images),
        *_saturation_section(report),
        *_knee_section(images),
        *_series_section(report, images),
        *_comparisons_section(report, images),
        *_matrices_section(report, images),
        *_runs_section(report),
    ]
