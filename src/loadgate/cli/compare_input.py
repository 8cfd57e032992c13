"""The input of `loadgate compare` and `loadgate calibrate` read into what a comparison runs:
the plan of pairs, the runs' specs, the pressure, the comparison id, the metrics with their
margins and `--fail-on`, each refused with the flag's name and the allowed values."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from loadgate.capacity.compare import driver as comparing
from loadgate.capacity.compare import margins_file, rule
from loadgate.capacity.compare import scenario as compare_scenario
from loadgate.capacity.compare import sequential as seq
from loadgate.capacity.compare.record import Pressure
from loadgate.capacity.compare.repeat import saturating
from loadgate.capacity.compare.sequential import Plan
from loadgate.capacity.compare.stack_modes import FRESH, KEPT
from loadgate.capacity.search.rule import SearchPlan, plan_problems
from loadgate.contract.params import MAX_RATE, PARAMS
from loadgate.contract.scenarios import OWN_PARAMS, Scenario
from loadgate.contract.spec import (
    RunSpec,
    SpecError,
    is_run_id,
    new_run_id,
    parse_duration,
    parse_labels,
)

from .common import UsageError
from .flags import invalid_flags, load_params

# Run parameters a comparison takes: the scenario and the parameters of its own (the executor is
# constant-arrival-rate; run ids and the compare, side and repeat labels are set per run; the
# charm's streams stay the scenario's default).
_FIRST = ("scenario", "rate", "duration", "logs-per-request", "body-min", "body-max", "labels")
COMPARE_PARAMS = _FIRST + tuple(
    p.name for p in PARAMS if p.name in OWN_PARAMS and p.name not in _FIRST and p.action
)
_MAX_COMPARE_ID = 52  # room for `-c100-sat` in a run id and `-c100-s` in a search id (60)
_RESERVED_LABELS = ("compare", "side", "repeat")
_MAX_BUDGET_S = 24 * 3600.0
_SEQUENTIAL_FLAGS = ("min_pairs", "max_pairs", "budget")


def count_of(value: str, flag: str, high: int = seq.MAX_PAIRS) -> int:
    try:
        count = int(value.strip(), 10) if value.strip().isascii() else int("x")
    except ValueError:
        count = 0
    if not 1 <= count <= high:
        raise UsageError(f"{flag}: must be an integer between 1 and {high}; got {value!r}")
    return count


def _repeats_of(value: str) -> int:
    return count_of(value, "--repeats")


def budget_of(value: str) -> float:
    """Seconds in `15m`, `900s`, `1h30m` or a bare number of seconds."""
    text = value.strip()
    try:
        seconds = float(text) if text.replace(".", "", 1).isdigit() else parse_duration(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= _MAX_BUDGET_S:
        raise UsageError(
            f"--budget: must be a duration like 15m, 900s or 1h, more than 0 and at most 24h; "
            f"got {value!r}"
        )
    return seconds


def _given(value: str | None, default: int) -> str:
    return str(default) if value is None else value


def plan_of(args: argparse.Namespace) -> Plan:
    """`--repeats N`: N pairs, one look; else pairs added until decided (the sequential flags)."""
    given = [
        f"--{name.replace('_', '-')}"
        for name in _SEQUENTIAL_FLAGS
        if getattr(args, name) is not None
    ]
    if args.repeats is not None:
        if given:
            raise UsageError(
                f"--repeats: a fixed number of pairs; {', '.join(given)} set the sequential "
                "comparison: give one or the other"
            )
        return Plan.fixed(_repeats_of(args.repeats))
    plan = Plan(
        min_pairs=count_of(_given(args.min_pairs, seq.DEFAULT_MIN_PAIRS), "--min-pairs"),
        max_pairs=count_of(_given(args.max_pairs, seq.DEFAULT_MAX_PAIRS), "--max-pairs"),
        budget_s=seq.DEFAULT_BUDGET_S if args.budget is None else budget_of(args.budget),
    )
    problems = plan.problems()
    if problems:
        raise invalid_flags(problems)
    return plan


def spec_of(args: argparse.Namespace, compare_id: str) -> RunSpec:
    """The fixed-rate run every repeat makes (its run id and labels are set per repeat)."""
    try:
        labels = parse_labels(args.labels or "")
    except ValueError as exc:
        raise UsageError(f"--labels: {exc}") from None
    taken = sorted(set(labels) & set(_RESERVED_LABELS))
    if taken:
        raise UsageError(
            f"--labels: {', '.join(taken)} are set by compare on every run "
            f"({', '.join(_RESERVED_LABELS)}); choose other names"
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


def saturate_spec_of(args: argparse.Namespace, spec: RunSpec) -> RunSpec:
    """The saturation runs: the fixed-rate spec's load shape, `--saturate`'s load and gates."""
    rate = count_of(args.saturate_rate, "--saturate-rate", MAX_RATE)
    try:
        return saturating(spec, rate)
    except SpecError as exc:
        raise invalid_flags((f"--{name}", msg) for name, msg in exc.problems) from None


def pressure_of(args: argparse.Namespace) -> tuple[float, Pressure | None]:
    """The pressure fraction, and the pressure when `--pressure-rate` fixes it."""
    try:
        fraction = float(args.pressure_fraction)
    except ValueError:
        fraction = -1.0
    if not 0 < fraction <= 1:
        raise UsageError(
            "--pressure-fraction: must be a number more than 0 and at most 1; got "
            f"{args.pressure_fraction!r}"
        )
    if args.pressure_rate is None:
        return fraction, None
    rate = count_of(args.pressure_rate, "--pressure-rate", MAX_RATE)
    return fraction, Pressure(None, rate, None, "--pressure-rate")


def compare_id_of(args: argparse.Namespace) -> str:
    compare_id = args.compare_id or new_run_id()
    if not is_run_id(compare_id) or len(compare_id) > _MAX_COMPARE_ID:
        raise UsageError(
            f"--compare-id: must be 1-{_MAX_COMPARE_ID} characters of letters, digits, '_', '.', "
            f"'-', starting with a letter or digit; got {compare_id!r}"
        )
    return compare_id


def _margins_of(args: argparse.Namespace) -> margins_file.MarginsFile:
    """The margins file in force: `--margins-file`, or the one shipped with loadgate."""
    try:
        if args.margins_file is not None:
            return margins_file.read(Path(args.margins_file))
        return margins_file.shipped()
    except margins_file.MarginsError as exc:
        raise UsageError(f"--margins-file: {exc}") from None


# `--if-same`: what a comparison does when both sides run the same stack (stack.same_stack):
# compare them (an A/A comparison, the default) or skip (nothing runs: verdict skipped, exit 0).
IF_SAME_COMPARE = "compare"
IF_SAME_SKIP = "skip"
IF_SAME = (IF_SAME_COMPARE, IF_SAME_SKIP)


def with_margins(
    args: argparse.Namespace, metrics: tuple[rule.Metric, ...], stacks: str | None = None
) -> tuple[rule.Metric, ...]:
    """The metrics with the margins file's margins, then `--margins`' (they win per key). The
    file's stacks' level counts on kept stacks only (`stacks`, default `--stacks`): a fresh
    stack every repeat carries its level in every pair's spread."""
    metrics = margins_file.apply(metrics, _margins_of(args))
    if (stacks or getattr(args, "stacks", KEPT)) == FRESH:
        metrics = tuple(replace(m, level_spread=None, level_df=0) for m in metrics)
    try:
        return comparing.apply_margins(metrics, args.margins)
    except comparing.SideError as exc:
        raise UsageError(str(exc)) from None


def metrics_and_plan(
    args: argparse.Namespace, kind: Scenario
) -> tuple[tuple[rule.Metric, ...], SearchPlan]:
    """The metrics to compare (those the scenario can be compared on, in its unit, with their
    margins) and the plan of capacity searches (when capacity is one)."""
    names = args.metrics
    if names is None:
        names = ",".join(compare_scenario.default_metrics(kind))
    try:
        metrics = comparing.parse_metrics(names, args.search_precision)
    except comparing.SideError as exc:
        raise UsageError(str(exc)) from None
    refused = compare_scenario.problems(kind, metrics, args.pressure_rate is not None)
    if refused:
        raise invalid_flags(refused)
    metrics = compare_scenario.in_unit(with_margins(args, metrics), kind)
    plan = SearchPlan(precision=args.search_precision)
    problems = plan_problems(plan)
    if problems:
        raise UsageError(
            f"--search-precision: {args.search_precision:g} makes an unsound search plan: "
            + "; ".join(f"{k} {v}" for k, v in problems)
        )
    return metrics, plan


def fail_on_of(args: argparse.Namespace) -> str:
    if args.fail_on not in rule.FAIL_ON:
        raise UsageError(
            f"--fail-on: must be one of {', '.join(rule.FAIL_ON)}; got {args.fail_on!r}"
        )
    return args.fail_on
