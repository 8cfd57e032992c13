"""`loadgate search`'s terminal output: the live view of a search (its steps so far and the
current phase), each search's table and summary, and the spread of repeated searches (printed
and written to spread.json)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from loadgate.capacity.compare.margins import repeats_for
from loadgate.capacity.search import driver as searching
from loadgate.capacity.search import spread
from loadgate.capacity.search.record import SearchRecord, SearchStepRecord
from loadgate.capacity.search.rule import AT_LEAST_MAX, FOUND, SearchPlan
from loadgate.capacity.search.state import interval_text, span_text
from loadgate.contract import scenarios as contract_scenarios
from loadgate.contract.spec import RunSpec
from loadgate.judge.attribution import COMPONENTS
from loadgate.measure.pipeline import Scope
from loadgate.records import result as results
from loadgate.runner.run_parts import scenario_scope
from loadgate.runner.target import Progress, ScopedTarget

from . import run as run_cli
from .common import console, stdout

if TYPE_CHECKING:
    from .seams import Seams

SPREAD_FILE = "spread.json"
SPREAD_FORMAT = "loadgate-search-spread/1"


def capacities(records: list[SearchRecord]) -> list[int | None]:
    """Each search's capacity, None when it found none (out of budget, below min, ...)."""
    return [
        r.result.capacity_per_min if r.result.status in (FOUND, AT_LEAST_MAX) else None
        for r in records
    ]


def spread_lines(records: list[SearchRecord], plan: SearchPlan) -> list[Text]:
    """The capacities of repeated searches side by side, their spread, and what it means for a
    comparison of capacities."""
    found = capacities(records)
    s = spread.spread(found)
    each = ", ".join(
        f"{r.search_id}: " + (f"{c:,}" if c is not None else f"none ({r.result.status})")
        for r, c in zip(records, found, strict=True)
    )
    lines = [Text(f"capacities of {len(records)} searches: {each}", style="bold")]
    if s.median is None or s.relative_range is None:
        lines.append(Text("spread: unknown (no search found a capacity)", style="yellow"))
        return lines
    cv = f", CV {s.cv * 100:.1f} %" if s.cv is not None else ""
    lines.append(
        Text(
            f"spread: median {s.median:,.0f}, {s.low:,}-{s.high:,} {_unit_of(records[0])}/min "
            f"(range {s.relative_range * 100:.1f} % of the median{cv})"
            + (f"; {s.not_found} without a capacity" if s.not_found else "")
        )
    )
    needed = repeats_for(s.found, plan.precision)
    if len(s.found) >= 2:
        lines.append(
            Text(
                "at this spread, `loadgate compare --metrics capacity` clears two equal stacks "
                + (
                    f"with {needed} repeats a side"
                    if needed is not None
                    else "only with more repeats than it allows"
                ),
                style="dim",
            )
        )
    return lines


def figures_table(figures: list[spread.SearchFigures]) -> Table:
    """What each of repeated searches found and cost: the benchmark of the search itself."""
    table = Table(title=Text(f"{len(figures)} searches"))
    left = ("search", "method", "status")
    for name in (*left, "capacity/min", "saturation/min", "load s", "wall s", "steps"):
        table.add_column(name, justify="left" if name in left else "right")
    for one in figures:
        capacity = _num(one.capacity_per_min)
        low, high, confidence = one.knee_low_per_min, one.knee_high_per_min, one.confidence
        if low is not None and high is not None and confidence is not None:
            capacity += f" ({span_text(low, high, confidence)})"
        elif one.capacity_per_min is not None and one.precision is not None:
            capacity += f" ±{one.precision * 100:.1f} %"
        table.add_row(
            one.search_id, one.method, one.status, capacity, _num(one.saturation_per_min),
            str(one.load_s), _num(one.wall_s), str(one.steps),
        )  # fmt: skip
    return table


def _num(value: float | None, fmt: str = ",.0f", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{fmt}}{suffix}"


def steps_table(record: SearchRecord) -> Table:
    """Every step so far: rate, what it gave, its verdict and what gave way."""
    table = Table(title=Text(f"search {record.search_id}"))
    for name, justify in (
        ("#", "right"), ("phase", "left"), ("rate/min", "right"), ("accepted/min", "right"),
        ("p99 ms", "right"), ("errors", "right"), ("queue max", "right"),
        ("collector CPU", "right"), ("Loki discarded", "right"), ("verdict", "left"),
        ("bottleneck", "left"),
    ):  # fmt: skip
        table.add_column(name, justify=justify)  # pyright: ignore[reportArgumentType]
    for s in record.steps:
        o, fig = s.outcome, s.figures
        phase = s.step.phase + (" (retry)" if s.step.attempt > 1 else "")
        queue = _num(o.queue_max)
        if fig is not None and fig.queue_capacity is not None and o.queue_max is not None:
            queue = f"{o.queue_max:,.0f}/{fig.queue_capacity:,.0f}"
        verdict = Text(o.verdict, style="green" if o.passed else "red")
        table.add_row(
            Text(str(s.step.index)),
            Text(phase),
            Text(f"{s.step.rate:,}"),
            Text(_num(o.accepted_per_min)),
            Text(_num(o.p99_ms, ".1f")),
            Text(_num(None if o.error_rate is None else o.error_rate * 100, ".2f", " %")),
            Text(queue),
            Text(_num(o.collector_cpu_cores, ".2f")),
            Text("-" if o.loki_discarded is None else f"{o.loki_discarded:,}"),
            verdict,
            Text(s.attribution.verdict if s.attribution else "-"),
        )
    return table


def summary_lines(record: SearchRecord) -> list[Text]:
    """The capacity with the knee's interval and its confidence (or, when no knee was found,
    the holds' precision), status, load and wall time, and the bottleneck at the lowest failing
    rate with the figures it cites."""
    r, plan, unit = record.result, record.plan, _unit_of(record)
    lines: list[Text] = []
    if r.capacity_per_min is not None:
        held = "confirmed by a hold" if r.confirmed else "not confirmed by a hold"
        precision = (
            f"holds ±{r.precision * 100:.1f} %, asked ±{plan.precision * 100:g} %"
            if r.precision is not None
            else "no failing rate"
        )
        interval = r.interval
        knee = f", the knee {interval_text(*interval, unit + '/min')}" if interval else ""
        lines.append(
            Text(
                f"capacity {r.capacity_per_min:,} {unit}/min{knee} ({precision}; {held})",
                style="bold green" if r.status in (FOUND, AT_LEAST_MAX) else "bold yellow",
            )
        )
    else:
        lines.append(Text("capacity: none found", style="bold red"))
    lines.append(Text(f"status {r.status}: {r.summary.replace('records/min', unit + '/min')}"))
    wall = f", wall {record.wall_s:.0f} s" if record.wall_s is not None else ""
    lines.append(Text(f"load {r.load_s} s of {plan.budget_s} s budget{wall}, {r.steps} steps"))
    bottleneck = record.bottleneck
    if bottleneck is not None and r.lowest_failing_per_min is not None:
        text = Text(f"bottleneck at {r.lowest_failing_per_min:,} {unit}/min: ", style="bold")
        text.append(bottleneck.summary)
        lines.append(text)
        for claim in bottleneck.claims:
            lines.append(Text(f"  {run_cli.claim_line(claim)}", style="dim"))
        if bottleneck.verdict in COMPONENTS:
            lines.extend(Text(f"  note: {note}", style="dim") for note in bottleneck.notes)
    elif r.lowest_failing_per_min is None:
        lines.append(Text("bottleneck: nothing failed"))
    for note in record.notes:
        lines.append(Text(f"note: {note}", style="yellow"))
    return lines


def print_spread(
    out: Console, root: Path, search_id: str, records: list[SearchRecord], plan: SearchPlan
) -> None:
    """Each search's figures and the spread of repeated searches, printed and written to
    spread.json."""
    figures = [spread.search_figures(r) for r in records]
    out.print(figures_table(figures))
    lines = spread_lines(records, plan)
    for line in lines:
        out.print(line)
    spread_file = results.write_atomic(
        root / SPREAD_FILE,
        json.dumps(
            {
                "format": SPREAD_FORMAT,
                "search_id": search_id,
                "searches": [r.search_id for r in records],
                "statuses": [r.result.status for r in records],
                "spread": spread.spread(capacities(records)).to_dict(),
                "figures": [one.to_dict() for one in figures],
                "lines": [line.plain for line in lines],
            },
            indent=2,
        )
        + "\n",
    )
    out.print(Text(f"spread: {spread_file}"), soft_wrap=True)


def print_search(out: Console, record: SearchRecord, root: Path) -> None:
    """The steps table, the summary and where the files are."""
    # Piped or logged (CI), the table keeps its columns rather than the terminal default of 80.
    out.print(steps_table(record))
    for line in summary_lines(record):
        out.print(line)
    out.print(Text(f"search: {searching.search_file(root, record.search_id)}"), soft_wrap=True)
    out.print(Text(f"runs: {searching.runs_root(root, record.search_id)}"), soft_wrap=True)


def wide_stdout() -> Console:
    """Standard output for a search's tables: the terminal, or 150 columns at least when it is
    not one (a CI log), so the steps table is not folded."""
    return stdout if stdout.is_terminal else Console(width=max(stdout.width, 150))


def _step_line(last: SearchStepRecord) -> Text:
    """A finished step in a line: its phase and rate, its verdict, what gave way."""
    return Text(
        f"step {last.step.index} {last.step.phase} {last.step.rate:,}/min: "
        f"{last.outcome.verdict}"
        + (f" (bottleneck: {last.attribution.verdict})" if last.attribution else "")
    )


def search_live(
    target: ScopedTarget,
    plan: SearchPlan,
    base: RunSpec,
    results_root: Path,
    search_id: str,
    stack: dict[str, Any],
    args: argparse.Namespace,
    seams: Seams,
    *,
    scrape_timeout: float = 30.0,
    settle_timeout: float = searching.SETTLE_TIMEOUT,
) -> SearchRecord:
    """run_search with a live view on the console: the steps so far and the current phase."""
    state: dict[str, Any] = {"record": None, "line": Text("starting")}

    def view() -> Group:
        record = state["record"]
        parts: list[Any] = [steps_table(record)] if record is not None else []
        parts.append(state["line"])
        return Group(*parts)

    with Live(view(), console=console, transient=True, refresh_per_second=2) as live:

        def refresh() -> None:
            live.update(view())

        def on_step(record: SearchRecord) -> None:
            state["record"] = record
            console.log(_step_line(record.steps[-1]))
            refresh()

        def on_phase(text: str) -> None:
            state["line"] = Text(text)
            refresh()

        def on_progress(p: Progress) -> None:
            state["line"] = Text.from_markup(run_cli.progress_line(p))
            refresh()

        return seams.run_search(
            target,
            plan,
            base,
            results_root,
            search_id,
            stack,
            on_step=on_step,
            on_phase=on_phase,
            on_progress=on_progress,
            drain_timeout=args.drain_timeout,
            execute=seams.execute,
            scope=_scope_of(target, base),
            scrape_timeout=scrape_timeout,
            settle_timeout=settle_timeout,
        )


def _scope_of(target: ScopedTarget, base: RunSpec) -> Scope:
    """The series of the scenario's pipeline on this stack (its signal and exporter; the
    exporter --hand chose), for the settling between steps; each run reads the same."""
    return scenario_scope(base.scenario, target.scope, target)


def _unit_of(record: SearchRecord) -> str:
    """The unit of a search's rates, in a word ("records" for otlp-logs)."""
    name = record.stack.get("scenario")
    try:
        return contract_scenarios.of(str(name)).short if name else "records"
    except KeyError:
        return "units"
