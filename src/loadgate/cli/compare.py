"""`loadgate compare`: the gate between two stacks (charm sources or revisions, charm options,
profiles), run interleaved in pairs on this machine, pairs added until every metric is settled
(or `--repeats N` pairs); exit 1 on a regression (and on worse with `--fail-on worse`), 0 on
none (and on worse), 3 when too noisy, 2 on bad input or a baseline stack that does not start
(a candidate's that does not start is a regression, 1). `--replay ID` decides a
recorded comparison again (`loadgate.capacity.compare.replay`). Its flags are read in
`compare_input`; the driving is
`loadgate.capacity.compare.driver`; the rule `loadgate.capacity.compare.rule` and `sequential`;
the margins `margins_file`; the tables `loadgate.report.compare_tables`."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loadgate import paths
from loadgate.capacity.compare import driver as comparing
from loadgate.capacity.compare import replay as replaying
from loadgate.capacity.compare import rule, run_order
from loadgate.capacity.compare import sequential as seq
from loadgate.capacity.compare.repeat import DEFAULT_PRESSURE_FRACTION
from loadgate.capacity.compare.sequential import Plan
from loadgate.capacity.compare.stack_modes import DEFAULT_STACKS, KEPT, STACK_MODES
from loadgate.capacity.search.rule import SearchPlan
from loadgate.measure.saturation import SATURATE_PARAMS

from ..stack import choice, local, runlock, session
from ..stack.choice import StackFlags, StackRequest
from ..stack.ports import Ports
from .common import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    Subparsers,
    UsageError,
    error,
    notice,
    queue_size,
    shielded,
)
from .compare_input import (
    COMPARE_PARAMS,
    IF_SAME,
    IF_SAME_COMPARE,
    compare_id_of,
    fail_on_of,
    metrics_and_plan,
    plan_of,
    pressure_of,
    saturate_spec_of,
    spec_of,
    with_margins,
)
from .compare_output import drive_live, print_replay, skipped
from .flags import (
    add_drain_timeout,
    add_load_flags,
    add_stack_flags,
    stack_flags,
)
from .run import check_results_dir, with_scenario_signals
from .stack import free_stack_dir, prepare_stack

if TYPE_CHECKING:
    from .seams import Seams

# compare's own defaults: 30 s runs, so a pair (a saturation and a pressure run on each side's
# kept stack) takes about 3 minutes and 5 pairs fit the default budget (docs/measurements.md).
_COMPARE_DEFAULTS: dict[str, str | int | float] = {"duration": "30s"}


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "compare",
        help="is the candidate stack worse than the baseline? interleaved pairs, a verdict",
        description="Run a baseline and a candidate stack interleaved in pairs (A B A B ...), "
        "on both sides' stacks kept up (--stacks), adding pairs until every metric is settled "
        "(or the budget is spent), and say per metric what the bounds of the candidate's "
        "worsening show. "
        "Exit 0: no regression (or worse, unless --fail-on worse); 1: regression; 3: too "
        "noisy; 2: bad input or a baseline stack that does not start (a candidate's: 1). Rule: "
        + rule.RULE,
    )
    _add_side_flags(p)
    _add_plan_flags(p)
    add_comparison_flags(p)
    add_margin_flags(p)
    p.add_argument(
        "--fail-on",
        default=rule.DEFAULT_FAIL_ON,
        help="the least outcome that fails (exit 1): regression (the default: the bounds show "
        "the candidate worse, estimated at its threshold or more, or it broke or lost records) "
        "or worse (also worse beyond the noise, estimated below the threshold)",
    )
    p.add_argument(
        "--if-same",
        choices=IF_SAME,
        default=IF_SAME_COMPARE,
        help="when both sides run the same stack: compare (default: an A/A comparison) or "
        "skip (render both sides with their charms' code first, and when their configs, "
        "Pebble services and checks, options and binaries are the same, run nothing: verdict "
        "skipped, exit 0; for a pull request's gate, where a change of docs or tests renders "
        "the same stack)",
    )
    p.add_argument(
        "--replay",
        metavar="ID",
        help="decide the recorded comparison results/ID again under today's rule and margins, "
        "from its runs' result.json, and print it; nothing runs, and nothing is written "
        "without --write",
    )
    p.add_argument(
        "--write",
        action="store_true",
        help="with --replay: record the re-decision beside it (results/ID/compare-replay.json)",
    )
    p.set_defaults(handler=_cmd_compare)


def add_margin_flags(p: argparse.ArgumentParser) -> None:
    """The thresholds a comparison counts (compare; calibrate writes them): --margins,
    --margins-file."""
    p.add_argument(
        "--margins",
        metavar="KEY=PERCENT,...",
        help="each metric's threshold, the smallest worsening that counts, in percent, per "
        "metric of --metrics, e.g. saturation=10,pressure-cpu-probe=8 (wins over --margins-file; "
        "defaults: the margins file shipped with loadgate: saturation 5, pressure-cpu-probe 5, "
        "pressure-p99 10; a regression is a worsening the bounds show, estimated at the "
        "threshold or more)",
    )
    p.add_argument(
        "--margins-file",
        metavar="FILE",
        help="thresholds and calibrated spreads from a file loadgate calibrate wrote (--output), "
        "instead of the shipped defaults; --margins still wins per key",
    )


def add_comparison_flags(p: argparse.ArgumentParser) -> None:
    """What a comparison measures and on which stacks (compare, calibrate): --metrics, the
    pressure flags, the load flags, --compare-id, --search-precision, --drain-timeout, the
    stack flags."""
    p.add_argument(
        "--metrics",
        help="comma-separated, of " + ", ".join(comparing.METRIC_KEYS) + " (default "
        + ",".join(comparing.DEFAULT_METRICS) + ": a saturation and a pressure run per side "
        "and pair; p99,cpu: a run at --rate; capacity: a capacity search of up to 5 minutes of "
        "load; another scenario than otlp-logs: p99, and cpu through the collector)",
    )  # fmt: skip
    _add_pressure_flags(p)
    add_load_flags(p, COMPARE_PARAMS, _COMPARE_DEFAULTS)
    p.add_argument("--compare-id", help="the comparison's id (default: time stamp and suffix)")
    p.add_argument(
        "--search-precision",
        type=float,
        default=SearchPlan().precision,
        help="capacity searches: the knee within ±this (default 0.05)",
    )
    add_drain_timeout(p, "to wait for the queue to drain after each run")
    p.add_argument(
        "--stacks",
        choices=STACK_MODES,
        default=DEFAULT_STACKS,
        help="kept (default: both sides' stacks up for the whole comparison, the candidate's "
        "in <stack dir>-candidate at ports of its own, and the runs alternate between them) or "
        "fresh (each repeat on a fresh stack of its side: slower, and a fresh stack's spread "
        "is every pair's)",
    )
    add_stack_flags(p)


def _add_pressure_flags(p: argparse.ArgumentParser) -> None:
    """The pressure runs' rate (a fraction of the baseline's saturation, or given) and the
    saturation runs' offered rate."""
    p.add_argument(
        "--pressure-fraction",
        default=str(DEFAULT_PRESSURE_FRACTION),
        help="the pressure runs' rate as a fraction of the first baseline saturation "
        f"throughput (default {DEFAULT_PRESSURE_FRACTION:g}; more than 0, at most 1)",
    )
    p.add_argument(
        "--pressure-rate",
        help="the pressure runs' rate in the scenario's units per minute (records/min for "
        "otlp-logs), instead of the fraction of the baseline's saturation (e.g. to compare at "
        "one rate across comparisons; required for another scenario's pressure metrics)",
    )
    p.add_argument(
        "--saturate-rate",
        default=str(SATURATE_PARAMS["rate"]),
        help=f"records/min the saturation runs offer (default {SATURATE_PARAMS['rate']}: more "
        "than the pipeline takes; raise it when a side is not saturated; otlp-logs only)",
    )


def _add_side_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--baseline",
        action="append",
        metavar="KEY=VALUE",
        help="the baseline's stack settings, e.g. otelcol=rev160 or queue-size=1000 "
        f"({comparing.SIDE_SYNTAX}); on top of the shared stack flags (required, but with "
        "--replay)",
    )
    p.add_argument(
        "--candidate",
        action="append",
        metavar="KEY=VALUE",
        help="the candidate's stack settings, as --baseline (the same stack on both sides is "
        "an A/A comparison: a calibration of the noise)",
    )


def _add_plan_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--repeats",
        help="a fixed number of pairs (1-100), decided once at the end, instead of adding pairs "
        "until decided",
    )
    p.add_argument(
        "--min-pairs",
        help=f"pairs run before stopping on a decision (default {seq.DEFAULT_MIN_PAIRS})",
    )
    p.add_argument(
        "--max-pairs",
        help=f"pairs at most (default {seq.DEFAULT_MAX_PAIRS}; up to {seq.MAX_PAIRS}); each "
        "look's share of a metric's share of the 5 %% error is set by its pairs over this "
        "(keep it near what the budget allows; the last look of a comparison the budget ends "
        "takes what is left)",
    )
    p.add_argument(
        "--budget",
        help="wall time after which no pair is started, as 15m, 900s or 1h "
        f"(default {seq.DEFAULT_BUDGET_S / 60:g}m)",
    )
    p.add_argument(
        "--order",
        choices=run_order.ORDERS,
        default=run_order.DEFAULT_ORDER,
        help="random (default: each pair, the first too, in an order drawn from the compare "
        "id, so a machine's drift cannot slow one side in every pair), ABAB, or ABBA (swap "
        "every other pair: cancels a linear drift)",
    )


def _candidate_ports(base_port: int | None) -> Ports:
    """The candidate's ports beside the baseline's kept stack; UsageError past the last port."""
    try:
        return comparing.candidate_ports(base_port)
    except ValueError as exc:
        raise UsageError(f"--base-port: {exc} (or --stacks fresh: one stack at a time)") from None


def _check_compare_id_free(results_root: Path, compare_id: str, pairs: int) -> None:
    """No results under the comparison's id or its runs' ids yet (ids name one run each)."""
    ids = [compare_id]
    for run in run_order.schedule(pairs):
        ids += comparing.repeat_ids(compare_id, run)
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


def _prepare_side(
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


# ---- the command -----------------------------------------------------------------------------


# Flags a replay does not take (it runs nothing): those without a default.
_NOT_REPLAYED = ("baseline", "candidate", "repeats", "min_pairs", "max_pairs", "budget",
                "compare_id", "pressure_rate")  # fmt: skip


def _cmd_compare(args: argparse.Namespace, seams: Seams) -> int:
    fail_on_of(args)
    if args.replay is not None:
        return _cmd_replay(args)
    if args.write:
        raise UsageError("--write: records a replay's re-decision; give it with --replay ID")
    missing = [f"--{side}" for side in (rule.BASELINE, rule.CANDIDATE) if not getattr(args, side)]
    if missing:
        raise UsageError(
            f"{' and '.join(missing)}: required ({comparing.SIDE_SYNTAX}), or --replay ID to "
            "decide a recorded comparison again"
        )
    return run_comparison(args, seams, plan_of(args), args.baseline, args.candidate)


def _cmd_replay(args: argparse.Namespace) -> int:
    """`--replay ID`: the recorded comparison decided again and printed; written with --write."""
    given = [f"--{name.replace('_', '-')}" for name in _NOT_REPLAYED if getattr(args, name)]
    if args.if_same != IF_SAME_COMPARE:
        given.append(f"--if-same {args.if_same}")
    if given:
        raise UsageError(
            f"--replay: {', '.join(given)} not taken: a replay runs nothing and decides the "
            "recorded runs with their recorded plan (it takes --metrics, --margins, "
            "--margins-file, --fail-on and --write)"
        )
    results_root = paths.results_dir()
    try:
        record = replaying.recorded(results_root, args.replay)
    except replaying.ReplayError as exc:
        raise UsageError(f"--replay: {exc}") from None
    if args.metrics is not None:  # today's metrics, read again from the runs' records
        try:
            chosen = comparing.parse_metrics(args.metrics, args.search_precision)
        except comparing.SideError as exc:
            raise UsageError(str(exc)) from None
    else:
        chosen = replaying.todays_metrics(record)
    metrics = with_margins(args, chosen, record.stacks)
    try:
        replayed = replaying.replay(results_root, record, metrics, args.fail_on)
    except replaying.ReplayError as exc:
        raise UsageError(f"--replay: {exc}") from None
    written = replaying.write_replay(results_root, replayed.replayed) if args.write else None
    print_replay(replayed.recorded, replayed.replayed, written)
    return replayed.replayed.exit_code


def _with_loki_of(
    metrics: tuple[rule.Metric, ...],
    baseline: comparing.ComparedStack,
    candidate: comparing.ComparedStack,
) -> tuple[rule.Metric, ...]:
    """The metrics, with the collector's CPU per Loki CPU reported beside the verdict (and
    said so) when the sides run different Loki: its reference is then not the same."""
    gating = any(m.name == rule.PRESSURE_CPU_LOKI.name and m.gates for m in metrics)
    how = comparing.loki_differs(baseline.what, candidate.what) if gating else None
    if how is None:
        return metrics
    notice(f"compare: the sides' Loki differ ({how}): the collector's CPU per Loki CPU measures "
           "both, so it is reported beside the verdict")  # fmt: skip
    return rule.beside_when_loki_differs(metrics)


def run_comparison(
    args: argparse.Namespace,
    seams: Seams,
    plan: Plan,
    baseline_values: Sequence[str],
    candidate_values: Sequence[str],
) -> int:
    """A comparison run live on this machine (`compare`, and `calibrate`'s A/A pairs): the
    sides prepared from their settings on top of the shared stack flags, the pairs driven with
    the live view, the result printed; the exit code."""
    compare_id = compare_id_of(args)
    spec = spec_of(args, compare_id)
    saturate = saturate_spec_of(args, spec)
    fraction, pressure = pressure_of(args)
    metrics, search_plan = metrics_and_plan(args, spec.kind)
    results_root = paths.results_dir()
    _check_compare_id_free(results_root, compare_id, plan.max_pairs)
    check_results_dir(results_root, compare_id)
    shared = with_scenario_signals(stack_flags(args), spec)
    candidate_ports = _candidate_ports(shared.base_port) if args.stacks == KEPT else None
    baseline = _prepare_side(shared, rule.BASELINE, baseline_values, seams.resolve_stack)
    candidate = _prepare_side(shared, rule.CANDIDATE, candidate_values, seams.resolve_stack)
    aa = comparing.sameness(baseline.what, candidate.what)
    metrics = _with_loki_of(metrics, baseline, candidate)
    parts = {"k6", *local.stack_parts(baseline.what), *local.stack_parts(candidate.what)}
    if seams.build_missing(tuple(sorted(parts)), command=args.command) != EXIT_OK:
        return EXIT_BAD_INPUT
    if skipped(getattr(args, "if_same", None), baseline, candidate, seams.same_stack):
        return EXIT_OK
    root = paths.stack_dir()
    roots = [root] if candidate_ports is None else [root, comparing.candidate_root(root)]
    try:
        with contextlib.ExitStack() as held:
            for where in roots:
                held.enter_context(
                    session.held_lock(where, args.command, compare_id, notice, shielded)
                )
                if not free_stack_dir(where, seams.stack):
                    return EXIT_BAD_INPUT
            repeat = comparing.LocalRepeats(
                root=root,
                ports=Ports.from_base(shared.base_port),
                spec=spec,
                results_root=results_root,
                compare_id=compare_id,
                metrics=metrics,
                saturate_spec=saturate,
                pressure_fraction=fraction,
                pressure=pressure,
                drain_timeout=args.drain_timeout,
                search=seams.run_search,
                plan=search_plan,
                guard=shielded,
                stack=seams.stack,
                open_target=seams.open_target,
                execute=seams.execute,
            )
            if candidate_ports is not None:
                repeat = comparing.KeptRepeats.beside(repeat, roots[1], candidate_ports)
            sides = comparing.Sides(baseline, candidate, aa)
            try:
                return drive_live(
                    compare_id, sides, plan, args.order, repeat, results_root, args.fail_on
                )
            finally:
                repeat.close()
    except runlock.BusyError as exc:
        error(args.command, exc)
        return EXIT_BAD_INPUT
