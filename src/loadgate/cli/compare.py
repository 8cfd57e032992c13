"""`loadgate compare`: the gate between two stacks (charm sources or revisions, charm options,
profiles), run interleaved on this machine; exit 1 on a regression, 0 on none, 2 when too noisy
or on bad input / a broken stack. The driving is `loadgate.comparing`; the rule
`loadgate.capacity.compare`."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from loadgate import paths
from loadgate.capacity import compare_driver as comparing
from loadgate.capacity import compare_rule as rule
from loadgate.capacity.compare_rule import MetricDecision, ScheduledRun
from loadgate.capacity.search_rule import SearchPlan
from loadgate.contract.spec import RunSpec, SpecError, is_run_id, new_run_id, parse_labels
from loadgate.records.compare import COMPARE_FILE, CompareRecord
from loadgate.records.search import SearchRecord
from loadgate.runner.target import Progress

from ..stack import choice, local, orphans, runlock
from ..stack.choice import StackFlags, StackRequest
from ..stack.ops import StackOps
from ..stack.ports import Ports
from .common import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    Subparsers,
    UsageError,
    console,
    error,
    notice,
    queue_size,
    shielded,
    stdout,
)
from .flags import (
    add_drain_timeout,
    add_load_flags,
    add_stack_flags,
    invalid_flags,
    load_params,
    stack_flags,
)
from .run import check_results_dir, progress_line
from .stack import prepare_stack

if TYPE_CHECKING:
    from .seams import Seams

# Run parameters a comparison takes (the executor is constant-arrival-rate; run ids and the
# compare, side and repeat labels are set per run).
COMPARE_PARAMS = ("rate", "duration", "logs-per-request", "body-min", "body-max", "labels")
DEFAULT_REPEATS = 3
MAX_COMPARE_ID = 52  # room for `-c100-s` in a search id (60) and its steps' run ids (64)
RESERVED_LABELS = ("compare", "side", "repeat")


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "compare",
        help="is the candidate stack worse than the baseline? interleaved repeats, a verdict",
        description="Run a baseline and a candidate stack interleaved (A B A B ...), each run "
        "on a fresh stack, and decide per metric whether the candidate is worse beyond the "
        "noise of the repeats. Exit 1: regression; 0: none; 2: too noisy or bad input. "
        "Rule: " + rule.RULE,
    )
    p.add_argument(
        "--baseline",
        action="append",
        required=True,
        metavar="KEY=VALUE",
        help="the baseline's stack settings, e.g. otelcol=rev160 or queue-size=1000 "
        f"({comparing.SIDE_SYNTAX}); on top of the shared stack flags",
    )
    p.add_argument(
        "--candidate",
        action="append",
        required=True,
        metavar="KEY=VALUE",
        help="the candidate's stack settings, as --baseline (the two must differ)",
    )
    p.add_argument(
        "--repeats",
        default=str(DEFAULT_REPEATS),
        help=f"runs per side (default {DEFAULT_REPEATS}; between 1 and 100)",
    )
    p.add_argument(
        "--order",
        choices=rule.ORDERS,
        default="ABAB",
        help="ABAB (default) or ABBA (swap every other pair: also cancels a linear drift)",
    )
    p.add_argument(
        "--metrics",
        default=",".join(comparing.DEFAULT_METRICS),
        help="comma-separated, of capacity, p99, cpu (default p99,cpu: one fixed-rate run per "
        "repeat; capacity adds a capacity search of up to 5 minutes of load per repeat)",
    )
    add_load_flags(p, COMPARE_PARAMS)
    p.add_argument("--compare-id", help="the comparison's id (default: time stamp and suffix)")
    p.add_argument(
        "--search-precision",
        type=float,
        default=SearchPlan().precision,
        help="capacity searches: the knee within ±this (default 0.05)",
    )
    add_drain_timeout(p, "to wait for the queue to drain after each run")
    add_stack_flags(p)
    p.set_defaults(handler=cmd_compare)


# ---- input -----------------------------------------------------------------------------------


def repeats_of(value: str) -> int:
    try:
        repeats = int(value.strip(), 10) if value.strip().isascii() else int("x")
    except ValueError:
        repeats = 0
    if not 1 <= repeats <= 100:
        raise UsageError(f"--repeats: must be an integer between 1 and 100; got {value!r}")
    return repeats


def spec_of(args: argparse.Namespace, compare_id: str) -> RunSpec:
    """The fixed-rate run every repeat makes (its run id and labels are set per repeat)."""
    try:
        labels = parse_labels(args.labels or "")
    except ValueError as exc:
        raise UsageError(f"--labels: {exc}") from None
    taken = sorted(set(labels) & set(RESERVED_LABELS))
    if taken:
        raise UsageError(
            f"--labels: {', '.join(taken)} are set by compare on every run "
            f"({', '.join(RESERVED_LABELS)}); choose other names"
        )
    params: dict[str, Any] = {
        **load_params(args, COMPARE_PARAMS),
        "executor": "constant-arrival-rate",
        "labels": labels,
        "run_id": f"{compare_id}-b1",
    }
    try:
        return RunSpec.from_params(params, loopback_only=True)
    except SpecError as exc:
        raise invalid_flags((f"--{name}", msg) for name, msg in exc.problems) from None


def compare_id_of(args: argparse.Namespace) -> str:
    compare_id = args.compare_id or new_run_id()
    if not is_run_id(compare_id) or len(compare_id) > MAX_COMPARE_ID:
        raise UsageError(
            f"--compare-id: must be 1-{MAX_COMPARE_ID} characters of letters, digits, '_', '.', "
            f"'-', starting with a letter or digit; got {compare_id!r}"
        )
    return compare_id


def check_compare_id_free(results_root: Path, compare_id: str, repeats: int) -> None:
    """No results under the comparison's id or its runs' ids yet (ids name one run each)."""
    ids = [compare_id]
    for run in rule.schedule(repeats):
        run_id = comparing.run_id_for(compare_id, run)
        ids += [run_id, comparing.search_id_for(run_id)]
    for name in ids:
        folder = comparing.compare_dir(results_root, name)
        if folder.exists():
            raise UsageError(
                f"--compare-id: {compare_id} already has results in {folder}; "
                "choose another id (a run id names one run: Loki's read-back counts by it)"
            )


def side_flags(shared: StackFlags, settings: comparing.SideSettings) -> StackFlags:
    """The stack flags of one side: the shared ones with the side's settings on top (charm
    options after the shared ones), each value checked as its flag checks it."""
    flag = f"--{settings.role}"
    changes: dict[str, Any] = {
        attr: (*getattr(shared, attr), *value) if isinstance(value, list) else value
        for attr, value in settings.overrides().items()
    }
    if "queue_size" in changes:
        try:
            changes["queue_size"] = queue_size(changes["queue_size"])
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"{flag}: queue-size: {exc}") from None
    if "profile" in changes and changes["profile"] not in choice.profile_names():
        raise UsageError(
            f"{flag}: profile: unknown profile {changes['profile']!r}; allowed: "
            + ", ".join(choice.profile_names())
        )
    return replace(shared, **changes)


def prepare_side(
    shared: StackFlags,
    role: str,
    values: Sequence[str],
    resolve: Callable[[StackRequest], local.StackChoice],
) -> comparing.ComparedStack:
    try:
        settings = comparing.parse_side(role, values)
    except comparing.SideError as exc:
        raise UsageError(str(exc)) from None
    flags = side_flags(shared, settings)
    try:
        what = prepare_stack(flags, resolve)
    except UsageError as exc:
        raise UsageError(f"--{role} ({settings.label}): {exc}") from None
    return comparing.ComparedStack(settings, what)


# ---- output ----------------------------------------------------------------------------------


def _value(metric: rule.Metric, value: float | None) -> str:
    if value is None:
        return "unknown"
    if metric.name == rule.CAPACITY.name:
        return f"{value:,.0f}"
    if metric.name == rule.CPU_PER_1000.name:
        return f"{value:.4f}"
    return f"{value:.1f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:+.1f}%"


DECISION_STYLE = {rule.REGRESSION: "red", rule.NO_REGRESSION: "green", rule.TOO_NOISY: "yellow"}


def _side_cell(metric: rule.Metric, mean: float | None, values: Sequence[float | None]) -> str:
    each = ", ".join(_value(metric, v) for v in values)
    return f"{_value(metric, mean)}\n({each})" if values else "—"


def decisions_table(record: CompareRecord) -> Table:
    table = Table(title=f"compare {record.compare_id}: {record.repeats} repeat(s) a side, "
                  f"order {record.order}")  # fmt: skip
    table.add_column("metric")
    table.add_column("baseline\nmean (each)", justify="right")
    table.add_column("candidate\nmean (each)", justify="right")
    table.add_column("change\n(worse +)", justify="right")
    table.add_column("bounds\n(each 95 %)", justify="right")
    table.add_column("decision")
    for d in record.decisions:
        table.add_row(*_decision_row(d))
    return table


LABELS = {
    rule.CAPACITY.name: "capacity",
    rule.P99_AT_RATE.name: "p99 at the fixed rate",
    rule.CPU_PER_1000.name: "collector CPU per 1,000 records",
}


def _decision_row(d: MetricDecision) -> list[str | Text]:
    m = d.metric
    better = "higher is better" if m.better == rule.HIGHER else "lower is better"
    name = LABELS.get(m.name, m.name)
    bounds = "—" if d.lower is None else f"{_pct(d.lower)} .. {_pct(d.upper)}"
    decision = Text(d.decision, style=DECISION_STYLE[d.decision])
    if d.decision == rule.TOO_NOISY:
        decision.append(
            f"\n{d.repeats_needed} repeats a side needed" if d.repeats_needed else
            f"\nmore than {rule.MAX_REPEATS} repeats a side needed"
        )  # fmt: skip
    return [
        f"{name}\n{m.unit}, {better}, margin {m.margin:.0%}",
        _side_cell(m, d.baseline_mean, d.baseline),
        _side_cell(m, d.candidate_mean, d.candidate),
        _pct(d.change),
        bounds,
        decision,
    ]


def print_result(record: CompareRecord, path: Path) -> None:
    stdout.print(Text(f"baseline:  {record.baseline.name}"), soft_wrap=True)
    stdout.print(Text(f"candidate: {record.candidate.name}"), soft_wrap=True)
    stdout.print(decisions_table(record))
    for d in record.decisions:
        stdout.print(Text(f"{d.metric.name}: {d.reason}"), soft_wrap=True)
    for note in record.notes:
        stdout.print(Text(f"note: {note}", style="yellow"), soft_wrap=True)
    stdout.print(Text(f"rule: {record.rule}", style="dim"), soft_wrap=True)
    verdict = record.verdict
    stdout.print(
        Text(
            f"verdict {verdict} (exit {record.exit_code})",
            style=f"bold {DECISION_STYLE[verdict]}",
        )
    )
    stdout.print(Text(f"compare: {path}"), soft_wrap=True)


def _run_line(
    run: ScheduledRun, total: int, outcome: comparing.RepeatOutcome, metrics: Sequence[rule.Metric]
) -> Text:
    figures = ", ".join(f"{m.name} {_value(m, outcome.values.get(m.name))}" for m in metrics)
    line = Text(
        f"run {run.position + 1}/{total} {run.side} #{run.repeat}"
        f"{f' ({outcome.ref})' if outcome.ref else ''}: {figures}"
    )
    if outcome.verdict:
        line.append(f", run verdict {outcome.verdict}")
    if outcome.bottleneck:
        line.append(f", bottleneck: {outcome.bottleneck}")
    for note in outcome.notes:
        line.append(f"\n  note: {note}", style="yellow")
    return line


# ---- the command -----------------------------------------------------------------------------


def metrics_and_plan(args: argparse.Namespace) -> tuple[tuple[rule.Metric, ...], SearchPlan]:
    """The metrics to compare and the plan of capacity searches (when capacity is one)."""
    try:
        metrics = comparing.parse_metrics(args.metrics, args.search_precision)
    except comparing.SideError as exc:
        raise UsageError(str(exc)) from None
    plan = SearchPlan(precision=args.search_precision)
    problems = plan.problems()
    if problems:
        raise UsageError(
            f"--search-precision: {args.search_precision:g} makes an unsound search plan: "
            + "; ".join(f"{k} {v}" for k, v in problems)
        )
    return metrics, plan


def cmd_compare(args: argparse.Namespace, seams: Seams) -> int:
    repeats = repeats_of(args.repeats)
    compare_id = compare_id_of(args)
    spec = spec_of(args, compare_id)
    metrics, plan = metrics_and_plan(args)
    results_root = paths.results_dir()
    check_compare_id_free(results_root, compare_id, repeats)
    check_results_dir(results_root, compare_id)
    shared = stack_flags(args)
    baseline = prepare_side(shared, rule.BASELINE, args.baseline, seams.resolve_stack)
    candidate = prepare_side(shared, rule.CANDIDATE, args.candidate, seams.resolve_stack)
    if comparing.sameness(baseline.what, candidate.what):
        raise UsageError(
            f"--baseline ({baseline.settings.label}) and --candidate "
            f"({candidate.settings.label}) are the same stack ({baseline.name}): "
            "a comparison needs two stacks that differ"
        )
    parts = {"k6", *local.stack_parts(baseline.what), *local.stack_parts(candidate.what)}
    if seams.build_missing(tuple(sorted(parts)), command="compare") != EXIT_OK:
        return EXIT_BAD_INPUT
    root = paths.stack_dir()
    try:
        lock = runlock.acquire(root, runlock.Holder.me("compare", compare_id))
    except runlock.BusyError as exc:
        error("compare", exc)
        return EXIT_BAD_INPUT
    try:
        if lock.previous is not None and lock.previous.process != lock.holder.process:
            notice(f"found: {lock.previous.describe()} died while it held the stack at {root}")
        if not _free_stack_dir(root, seams.stack):
            return EXIT_BAD_INPUT
        repeat = comparing.LocalRepeats(
            root=root,
            ports=Ports.from_base(shared.base_port),
            spec=spec,
            results_root=results_root,
            compare_id=compare_id,
            metrics=metrics,
            drain_timeout=args.drain_timeout,
            search=seams.run_search,
            plan=plan,
            guard=shielded,
            stack=seams.stack,
            open_target=seams.open_target,
            execute=seams.execute,
        )
        return _drive(compare_id, baseline, candidate, repeats, args.order, metrics, repeat,
                      results_root)  # fmt: skip
    finally:
        with shielded():
            lock.release()


def _free_stack_dir(root: Path, ops: StackOps) -> bool:
    """compare starts a fresh stack for every run: a stack left by a dead run is stopped, a
    running one is refused (False, said why)."""
    found = orphans.stop_orphan_k6(root)
    if found:
        notice(f"found: {found}")
    info = ops.read_info(root)
    if info is None:
        return True
    if info.abandoned:
        notice(f"found: a stack at {root} left by a run that ended without stopping it: stopped")
        with shielded():
            ops.down(root)
        return True
    if info.pebble_alive():
        error(
            "compare",
            f"a stack is running at {root} ({info.name}); compare starts a fresh stack of each "
            "side for every run: stop it with `loadgate stack down`, or give compare another "
            "LOADGATE_STACK_DIR (and --base-port)",
        )
        return False
    return True


def _drive(
    compare_id: str,
    baseline: comparing.ComparedStack,
    candidate: comparing.ComparedStack,
    repeats: int,
    order: str,
    metrics: Sequence[rule.Metric],
    repeat: comparing.LocalRepeats,
    results_root: Path,
) -> int:
    total = 2 * repeats
    path = comparing.compare_dir(results_root, compare_id) / COMPARE_FILE
    console.print(Text(f"compare {compare_id}: {total} runs, {order}, metrics "
                       + ", ".join(m.name for m in metrics)), soft_wrap=True)  # fmt: skip
    console.print(Text(f"  baseline:  {baseline.name}"), soft_wrap=True)
    console.print(Text(f"  candidate: {candidate.name}"), soft_wrap=True)
    started = time.monotonic()
    with console.status("starting") as status:
        current = {"what": ""}

        def on_start(run: ScheduledRun, stack: comparing.ComparedStack) -> None:
            current["what"] = f"run {run.position + 1}/{total} {run.side} #{run.repeat}"
            status.update(escape(current["what"]))
            console.rule(Text(f"{current['what']}: {stack.name}"))

        def on_phase(text: str) -> None:
            status.update(escape(f"{current['what']}: {text}"))
            console.log(Text(text))

        def on_progress(p: Progress) -> None:
            status.update(f"{escape(current['what'])}: " + progress_line(p))

        def on_done(
            run: ScheduledRun,
            stack: comparing.ComparedStack,
            outcome: comparing.RepeatOutcome,
            record: CompareRecord,
        ) -> None:
            console.print(_run_line(run, total, outcome, metrics), soft_wrap=True)

        def on_search_step(search: SearchRecord) -> None:
            if search.steps:
                last = search.steps[-1]
                p99 = last.outcome.p99_ms
                console.print(
                    Text(
                        f"  search {search.search_id} step {last.step.index}: {last.step.phase} "
                        f"{last.step.rate:,}/min -> {last.outcome.verdict}"
                        + (f", p99 {p99:.1f} ms" if p99 is not None else "")
                    ),
                    soft_wrap=True,
                )

        repeat.on_phase = on_phase
        repeat.on_progress = on_progress
        repeat.on_search_step = on_search_step
        try:
            record = comparing.drive(
                compare_id,
                baseline,
                candidate,
                repeats=repeats,
                metrics=metrics,
                run_one=repeat,
                results_root=results_root,
                order=order,
                on_start=on_start,
                on_done=on_done,
            )
        except comparing.AbortedError as exc:
            error("compare", exc)
            console.print(Text(f"partial record: {path}"), soft_wrap=True)
            return EXIT_BAD_INPUT
        except KeyboardInterrupt:
            console.print(Text(f"partial record: {path}"), soft_wrap=True)
            raise
    print_result(record, path)
    console.print(f"wall time {time.monotonic() - started:.0f}s")
    return record.exit_code
