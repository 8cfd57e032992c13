"""`loadgate search`: the highest rate (log records per minute, or the unit of `--scenario`)
at which every gate still passes, on the local stack, with a live table of its steps and what
gave way at the knee. Another scenario than otlp-logs searches by bisection.

Exit codes: 0 when the capacity was found (confirmed by a hold) or the pipeline passes at
`--max-rate` (at-least-max); 1 when even `--min-rate` fails (below-min) or the search ran out of
its load budget or steps before a confirmed capacity (out-of-budget, out-of-steps); 2 for bad
flags or a broken stack; 128 + signal when stopped (the partial search.json stays).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from loadgate import paths
from loadgate.capacity import search_driver as searching
from loadgate.capacity.search_rule import (
    AT_LEAST_MAX,
    BELOW_MIN,
    BISECT,
    FOUND,
    OUT_OF_BUDGET,
    OUT_OF_STEPS,
    SATURATE,
    SearchPlan,
)
from loadgate.contract import scenarios as contract_scenarios
from loadgate.contract.params import PARAMS
from loadgate.contract.scenarios import OWN_PARAMS
from loadgate.contract.spec import RunSpec, SpecError, new_run_id
from loadgate.judge.attribution import COMPONENTS
from loadgate.measure import scenarios as scenario_measures
from loadgate.measure.pipeline import Scope
from loadgate.measure.queries import QueryError
from loadgate.records import result as results
from loadgate.records.search import SearchRecord
from loadgate.runner import run as runner
from loadgate.runner.run_parts import with_collector_series
from loadgate.runner.target import Progress

from ..capacity import spread
from ..stack import local, runlock
from . import run as run_cli
from .common import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_OK,
    Subparsers,
    UsageError,
    console,
    error,
    stdout,
)
from .flags import (
    add_drain_timeout,
    add_keep_stack,
    add_load_flags,
    add_stack_flags,
    invalid_flags,
    load_params,
    stack_flags,
)
from .stack import prepare_stack

if TYPE_CHECKING:
    from .seams import Seams

PLAN = SearchPlan()

# Flag -> the SearchPlan setting it sets, and its parser.
PLAN_FLAGS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "--precision": ("precision", float),
    "--start-rate": ("start_rate", int),
    "--min-rate": ("min_rate", int),
    "--max-rate": ("max_rate", int),
    "--probe": ("probe_s", int),
    "--hold": ("hold_s", int),
    "--budget": ("budget_s", int),
    "--max-steps": ("max_steps", int),
    "--growth": ("growth", float),
    "--method": ("method", str),
    "--saturate-rate": ("saturate_rate", int),
    "--saturation": ("saturate_s", int),
    "--min-hold": ("hold_min_s", int),
}
# Run parameters a search takes (the rate, duration and executor are the search's): the
# scenario and the parameters of its own.
_FIRST = (
    "scenario", "vus", "logs-per-request", "requests-per-iteration", "body-min", "body-max",
    "p99-ms", "max-error-rate", "labels",
)  # fmt: skip
SEARCH_PARAMS = _FIRST + tuple(
    p.name for p in PARAMS if p.name in OWN_PARAMS and p.name not in _FIRST and p.action
)
# The saturate method measures what the collector's log queue takes: otlp-logs only. Other
# scenarios search by bisection, from rates of their own unit where the defaults do not fit
# (logql-query: about 3,000 queries/min here, docs/measurements.md).
SATURATE_SCENARIOS = ("otlp-logs",)
SCENARIO_PLANS: dict[str, dict[str, int]] = {
    "logql-query": {"start_rate": 1_200, "min_rate": 120, "max_rate": 60_000},
}

MAX_REPEAT = 10
SPREAD_FILE = "spread.json"
SPREAD_FORMAT = "loadgate-search-spread/1"

EXIT_BY_STATUS = {
    FOUND: EXIT_OK,
    AT_LEAST_MAX: EXIT_OK,
    BELOW_MIN: EXIT_GATE_FAILED,
    OUT_OF_BUDGET: EXIT_GATE_FAILED,
    OUT_OF_STEPS: EXIT_GATE_FAILED,
}


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "search",
        help="find the highest rate at which every gate passes (capacity), and what gave way",
    )
    p.add_argument(
        "--method",
        help=f"{SATURATE}: a saturation step, then holds around its throughput; {BISECT}: "
        f"probes bracket and bisect, a hold confirms (default {PLAN.method})",
    )
    p.add_argument(
        "--precision",
        help=f"the knee within ±this fraction of the bracket's middle (default {PLAN.precision})",
    )
    p.add_argument(
        "--saturate-rate",
        help="saturate: the saturation step's rate, log records per minute, at most --max-rate "
        f"(default {PLAN.saturate_rate:,})",
    )
    p.add_argument(
        "--saturation", help=f"saturate: seconds of the saturation step (default {PLAN.saturate_s})"
    )
    p.add_argument(
        "--min-hold", help=f"saturate: seconds of the shortest hold (default {PLAN.hold_min_s})"
    )
    p.add_argument(
        "--start-rate",
        help=f"bisect: first probe, in the scenario's unit per minute (log records for "
        f"otlp-logs) (default {PLAN.start_rate:,}; logql-query: 1,200 queries)",
    )
    p.add_argument(
        "--min-rate", help=f"lowest rate offered (default {PLAN.min_rate:,}; logql-query: 120)"
    )
    p.add_argument(
        "--max-rate",
        help=f"highest rate offered (default {PLAN.max_rate:,}; logql-query: 60,000)",
    )
    p.add_argument("--probe", help=f"bisect: seconds of a probe step (default {PLAN.probe_s})")
    p.add_argument(
        "--hold",
        help=f"seconds of a hold (bisect), of the longest hold (saturate) (default {PLAN.hold_s})",
    )
    p.add_argument(
        "--budget", help=f"seconds of load, all steps together (default {PLAN.budget_s})"
    )
    p.add_argument("--max-steps", help=f"most steps (default {PLAN.max_steps})")
    p.add_argument(
        "--growth",
        help=f"factor between bracketing probes or saturation steps (default {PLAN.growth:g})",
    )
    add_load_flags(p, SEARCH_PARAMS)
    p.add_argument("--search-id", help="search id (default: time stamp and random suffix)")
    p.add_argument(
        "--repeat",
        default="1",
        help=f"search N times on the same stack and print the capacities' spread (1-{MAX_REPEAT}; "
        "default 1); the searches are <search-id>-r1 ... under results/<search-id>/",
    )
    add_keep_stack(p, "search")
    add_drain_timeout(p, "each step waits for the queue to drain")
    add_stack_flags(p)
    p.set_defaults(handler=cmd_search)


def _plan_problems(
    args: argparse.Namespace, defaults: dict[str, Any] | None = None
) -> tuple[SearchPlan | None, list[tuple[str, str]]]:
    values: dict[str, Any] = dict(defaults or {})
    problems: list[tuple[str, str]] = []
    for flag, (name, parse) in PLAN_FLAGS.items():
        raw = getattr(args, flag[2:].replace("-", "_"), None)
        if raw is None:
            continue
        try:
            values[name] = parse(str(raw).strip()) if str(raw).isascii() else parse("x")
        except ValueError:
            kind = "an integer" if parse is int else "a number"
            problems.append((flag, f"must be {kind}; got {raw!r}"))
    if problems:
        return None, problems
    plan = SearchPlan(**values)
    by_name = {name: flag for flag, (name, _) in PLAN_FLAGS.items()}

    def flags(text: str) -> str:  # "above min_rate (10000)" -> "above --min-rate (10000)"
        for name, flag in by_name.items():
            text = text.replace(name, flag)
        return text

    problems = [(by_name[n], flags(why)) for n, why in plan.problems()]
    return (None if problems else plan), problems


def _spec_problems(
    args: argparse.Namespace, plan: SearchPlan | None
) -> tuple[RunSpec | None, list[tuple[str, str]]]:
    params = load_params(args, SEARCH_PARAMS)
    params.update(executor="constant-arrival-rate", rate=(plan or PLAN).start_rate)
    params["duration"] = f"{(plan or PLAN).probe_s}s"
    try:
        return RunSpec.from_params(params, loopback_only=True), []
    except SpecError as exc:
        return None, [(f"--{name}", msg) for name, msg in exc.problems]


def _scenario_defaults(
    args: argparse.Namespace, scenario: str
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The plan settings another scenario than otlp-logs starts from: the bisect method
    (saturate refused, named) and its own rates."""
    if scenario in SATURATE_SCENARIOS:
        return {}, []
    if args.method is not None and str(args.method).strip() == SATURATE:
        allowed = ", ".join(SATURATE_SCENARIOS)
        why = f"{SATURATE} measures {allowed} only; {scenario} searches by {BISECT}"
        return {}, [("--method", why)]
    return {"method": BISECT, **SCENARIO_PLANS.get(scenario, {})}, []


def unit_of(record: SearchRecord) -> str:
    """The unit of a search's rates, in a word ("records" for otlp-logs)."""
    name = record.stack.get("scenario")
    try:
        return contract_scenarios.of(str(name)).short if name else "records"
    except KeyError:
        return "units"


def plan_and_base(args: argparse.Namespace) -> tuple[SearchPlan, RunSpec]:
    """The search plan and the run every step repeats at its own rate and duration (payload,
    gates, labels); every bad flag is named with what is allowed, all at once."""
    scenario = str(getattr(args, "scenario", None) or SATURATE_SCENARIOS[0])
    defaults, problems = _scenario_defaults(args, scenario)
    plan, plan_problems = _plan_problems(args, defaults)
    problems += plan_problems
    base, spec_problems = _spec_problems(args, plan)
    problems += spec_problems
    if problems or plan is None or base is None:
        raise invalid_flags(problems)
    return replace(plan, max_error_rate=base.max_error_rate), base


def search_id_from_args(args: argparse.Namespace, results_root: Path) -> str:
    search_id = args.search_id or new_run_id()
    problem = searching.check_search_id(search_id)
    if problem:
        raise UsageError(f"--search-id: {problem}")
    run_cli.check_results_dir(results_root, search_id)  # also refuses an id with results
    return search_id


def repeat_from_args(args: argparse.Namespace) -> int:
    raw = str(getattr(args, "repeat", "1")).strip()
    if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= MAX_REPEAT):
        raise UsageError(f"--repeat: must be an integer from 1 to {MAX_REPEAT}; got {raw!r}")
    return int(raw)


def repeat_ids(search_id: str, repeat: int) -> list[str]:
    """The searches of a repeated search: the id itself once, else <id>-r1 ... <id>-rN."""
    ids = [search_id] if repeat == 1 else [f"{search_id}-r{i}" for i in range(1, repeat + 1)]
    for one in ids:
        problem = searching.check_search_id(one)
        if problem:
            raise UsageError(f"--search-id: with --repeat {repeat}, {problem}")
    return ids


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
            f"spread: median {s.median:,.0f}, {s.low:,}-{s.high:,} {unit_of(records[0])}/min "
            f"(range {s.relative_range * 100:.1f} % of the median{cv})"
            + (f"; {s.not_found} without a capacity" if s.not_found else "")
        )
    )
    needed = spread.repeats_for(s.found, plan.precision)
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
        if one.capacity_per_min is not None and one.precision is not None:
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
    """The capacity with its precision, status, load and wall time, and the bottleneck at the
    lowest failing rate with the figures it cites."""
    r, plan, unit = record.result, record.plan, unit_of(record)
    lines: list[Text] = []
    if r.capacity_per_min is not None:
        precision = (
            f" ±{r.precision * 100:.1f} %" if r.precision is not None else " (no failing rate)"
        )
        held = "confirmed by a hold" if r.confirmed else "not confirmed by a hold"
        lines.append(
            Text(
                f"capacity {r.capacity_per_min:,} {unit}/min{precision} "
                f"(asked ±{plan.precision * 100:g} %; {held})",
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


def exit_code(record: SearchRecord) -> int:
    return EXIT_BY_STATUS.get(record.result.status, EXIT_GATE_FAILED)


def cmd_search(args: argparse.Namespace, seams: Seams) -> int:
    plan, base = plan_and_base(args)
    repeat = repeat_from_args(args)
    results_root = paths.results_dir()
    search_id = search_id_from_args(args, results_root)
    ids = repeat_ids(search_id, repeat)
    root = results_root / search_id if repeat > 1 else results_root
    flags = run_cli.with_scenario_signals(stack_flags(args), base)
    what = prepare_stack(flags, seams.resolve_stack)
    if seams.build_missing(("k6", *local.stack_parts(what)), command="search") != EXIT_OK:
        return EXIT_BAD_INPUT
    out = stdout if stdout.is_terminal else Console(width=max(stdout.width, 150))
    records: list[SearchRecord] = []
    path = searching.search_file(root, ids[0])
    try:
        with seams.session(seams, flags, "search", search_id, what, keep=args.keep_stack) as target:
            stack = {"target": target.name, **target.environment()}
            if base.scenario != SATURATE_SCENARIOS[0]:
                stack["scenario"] = base.scenario  # the unit of its rates
            for i, one in enumerate(ids, 1):
                path = searching.search_file(root, one)
                if repeat > 1:
                    console.print(Text(f"search {i} of {repeat}: {one}", style="bold"))
                record = _search_live(target, plan, base, root, one, stack, args, seams)
                records.append(record)
                if repeat > 1:
                    _print_search(out, record, root)
    except runlock.BusyError as exc:
        error("search", exc)
        return EXIT_BAD_INPUT
    except (local.StackError, runner.RunError, QueryError) as exc:
        error("search", exc)
        if path.is_file():
            console.print(Text(f"partial search: {path}"), soft_wrap=True)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        if path.is_file():
            console.print(Text(f"partial search: {path}"), soft_wrap=True)
        raise
    if repeat == 1:
        _print_search(out, records[0], root)
        return exit_code(records[0])
    _print_spread(out, root, search_id, records, plan)
    return max(exit_code(r) for r in records)


def _print_spread(
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


def _print_search(out: Console, record: SearchRecord, root: Path) -> None:
    # Piped or logged (CI), the table keeps its columns rather than the terminal default of 80.
    out.print(steps_table(record))
    for line in summary_lines(record):
        out.print(line)
    out.print(Text(f"search: {searching.search_file(root, record.search_id)}"), soft_wrap=True)
    out.print(Text(f"runs: {searching.runs_root(root, record.search_id)}"), soft_wrap=True)


def _search_live(
    target: runner.Target,
    plan: SearchPlan,
    base: RunSpec,
    results_root: Path,
    search_id: str,
    stack: dict[str, Any],
    args: argparse.Namespace,
    seams: Seams,
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
            last = record.steps[-1]
            console.log(
                Text(
                    f"step {last.step.index} {last.step.phase} {last.step.rate:,}/min: "
                    f"{last.outcome.verdict}"
                    + (f" (bottleneck: {last.attribution.verdict})" if last.attribution else "")
                )
            )
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
            scope=_scope(target, base),
        )


def _scope(target: runner.Target, base: RunSpec) -> Scope:
    """The series of the scenario's pipeline on this stack (its signal and exporter; the
    exporter --hand chose), for the settling between steps; each run reads the same."""
    chosen: Scope = getattr(target, "scope", None) or Scope()
    return scenario_measures.of(base.scenario).scope(with_collector_series(chosen, target))
