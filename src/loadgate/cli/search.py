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
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from loadgate import paths
from loadgate.capacity.search import driver as searching
from loadgate.capacity.search.record import SearchRecord
from loadgate.capacity.search.rule import (
    AT_LEAST_MAX,
    BELOW_MIN,
    BISECT,
    FOUND,
    OUT_OF_BUDGET,
    OUT_OF_STEPS,
    SATURATE,
    SearchPlan,
    plan_problems,
)
from loadgate.contract.params import PARAMS
from loadgate.contract.scenarios import OWN_PARAMS
from loadgate.contract.spec import RunSpec, SpecError, new_run_id
from loadgate.measure.queries import QueryError
from loadgate.runner import run as runner

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
from .search_juju import JUJU_PLAN, check_target_flags, search_model
from .search_output import SPREAD_FILE as SPREAD_FILE
from .search_output import SPREAD_FORMAT as SPREAD_FORMAT
from .search_output import capacities as capacities
from .search_output import figures_table as figures_table
from .search_output import print_search, print_spread, search_live, wide_stdout
from .search_output import spread_lines as spread_lines
from .search_output import steps_table as steps_table
from .search_output import summary_lines as summary_lines
from .stack import prepare_stack, stack_session

if TYPE_CHECKING:
    from .seams import Seams

_PLAN = SearchPlan()

# Flag -> the SearchPlan setting it sets, and its parser.
_PLAN_FLAGS: dict[str, tuple[str, Callable[[str], Any]]] = {
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
    "--keep-up-hold": ("keep_up_s", int),
    "--confidence": ("confidence", float),
    "--step-noise": ("step_noise", float),
}
_PLAN_FLAG_OF = {name: flag[2:] for flag, (name, _) in _PLAN_FLAGS.items()}
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
_SATURATE_SCENARIOS = ("otlp-logs",)
_SCENARIO_PLANS: dict[str, dict[str, int]] = {
    "logql-query": {"start_rate": 1_200, "min_rate": 120, "max_rate": 60_000},
}

_MAX_REPEAT = 10

_EXIT_BY_STATUS = {
    FOUND: EXIT_OK,
    AT_LEAST_MAX: EXIT_OK,
    BELOW_MIN: EXIT_GATE_FAILED,
    OUT_OF_BUDGET: EXIT_GATE_FAILED,
    OUT_OF_STEPS: EXIT_GATE_FAILED,
}


def _add_rate_flags(p: argparse.ArgumentParser) -> None:
    """The rates a search offers, in the scenario's unit per minute."""
    p.add_argument(
        "--start-rate",
        help=f"bisect: first probe, in the scenario's unit per minute (log records for "
        f"otlp-logs) (default {_PLAN.start_rate:,}; logql-query: 1,200 queries)",
    )
    p.add_argument(
        "--min-rate", help=f"lowest rate offered (default {_PLAN.min_rate:,}; logql-query: 120)"
    )
    p.add_argument(
        "--max-rate",
        help=f"highest rate offered (default {_PLAN.max_rate:,}; logql-query: 60,000)",
    )


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "search",
        help="find the highest rate at which every gate passes (capacity), and what gave way",
    )
    _add_saturate_flags(p)
    _add_rate_flags(p)
    p.add_argument("--probe", help=f"bisect: seconds of a probe step (default {_PLAN.probe_s})")
    p.add_argument(
        "--hold",
        help=f"seconds of a hold (bisect), of the longest hold (saturate) (default {_PLAN.hold_s})",
    )
    p.add_argument(
        "--budget", help=f"seconds of load, all steps together (default {_PLAN.budget_s})"
    )
    p.add_argument("--max-steps", help=f"most steps (default {_PLAN.max_steps})")
    p.add_argument(
        "--growth",
        help=f"factor between bracketing probes or saturation steps (default {_PLAN.growth:g})",
    )
    p.add_argument(
        "--confidence",
        help="the knee is reported between two rates with this confidence "
        f"(default {_PLAN.confidence:g})",
    )
    p.add_argument(
        "--step-noise",
        help="the step-to-step noise of the knee (log-normal SD) that confidence allows for: a "
        f"hold near the knee may pass above it or fail below it (default {_PLAN.step_noise:g})",
    )
    add_load_flags(p, SEARCH_PARAMS)
    p.add_argument(
        "--target",
        choices=("local", "juju"),
        default="local",
        help="local (default): the local stack; juju: through the k6 charm of --model, with "
        "steps of minutes (defaults "
        + ", ".join(f"--{_PLAN_FLAG_OF[k]} {v}" for k, v in JUJU_PLAN.items())
        + ", as COS scrapes once a minute; flags given win)",
    )
    p.add_argument("--model", help="Juju model holding the bundle (with --target juju)")
    p.add_argument("--search-id", help="search id (default: time stamp and random suffix)")
    p.add_argument(
        "--repeat",
        default="1",
        help=f"search N times on the same stack and print the capacities' spread (1-{_MAX_REPEAT}; "
        "default 1); the searches are <search-id>-r1 ... under results/<search-id>/",
    )
    add_keep_stack(p, "search")
    add_drain_timeout(p, "each step waits for the queue to drain")
    add_stack_flags(p)
    p.set_defaults(handler=_cmd_search)


def _add_saturate_flags(p: argparse.ArgumentParser) -> None:
    """The method and precision, and the saturate method's own flags."""
    p.add_argument(
        "--method",
        help=f"{SATURATE}: a saturation step, then holds around its throughput; {BISECT}: "
        f"probes bracket and bisect, a hold confirms (default {_PLAN.method})",
    )
    p.add_argument(
        "--precision",
        help=f"the knee within ±this fraction of the bracket's middle (default {_PLAN.precision})",
    )
    p.add_argument(
        "--saturate-rate",
        help="saturate: the saturation step's rate, log records per minute, at most --max-rate "
        f"(default {_PLAN.saturate_rate:,})",
    )
    p.add_argument(
        "--saturation",
        help=f"saturate: seconds of the saturation step (default {_PLAN.saturate_s})",
    )
    p.add_argument(
        "--min-hold",
        help="saturate with --keep-up-hold 0: seconds of the shortest hold "
        f"(default {_PLAN.hold_min_s})",
    )
    p.add_argument(
        "--keep-up-hold",
        help="saturate: seconds of every hold, which also fails when the pipeline fell behind "
        "(its exporter sent on less than 1 - precision/2 of what it took in); 0: holds judged "
        "by the gates alone, as long as the queue takes to fill at the precision's excess "
        f"(default {_PLAN.keep_up_s}; 0 on Juju)",
    )


def _plan_problems(
    args: argparse.Namespace, defaults: dict[str, Any] | None = None
) -> tuple[SearchPlan | None, list[tuple[str, str]]]:
    values: dict[str, Any] = dict(defaults or {})
    problems: list[tuple[str, str]] = []
    for flag, (name, parse) in _PLAN_FLAGS.items():
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
    by_name = {name: flag for flag, (name, _) in _PLAN_FLAGS.items()}

    def flags(text: str) -> str:  # "above min_rate (10000)" -> "above --min-rate (10000)"
        for name, flag in by_name.items():
            text = text.replace(name, flag)
        return text

    problems = [(by_name[n], flags(why)) for n, why in plan_problems(plan)]
    return (None if problems else plan), problems


def _spec_problems(
    args: argparse.Namespace, plan: SearchPlan | None
) -> tuple[RunSpec | None, list[tuple[str, str]]]:
    params = load_params(args, SEARCH_PARAMS)
    params.update(executor="constant-arrival-rate", rate=(plan or _PLAN).start_rate)
    params["duration"] = f"{(plan or _PLAN).probe_s}s"
    try:
        return RunSpec.from_params(params, loopback_only=True), []
    except SpecError as exc:
        return None, [(f"--{name}", msg) for name, msg in exc.problems]


def _scenario_defaults(
    args: argparse.Namespace, scenario: str
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The plan settings another scenario than otlp-logs starts from: the bisect method
    (saturate refused, named) and its own rates."""
    if scenario in _SATURATE_SCENARIOS:
        return {}, []
    if args.method is not None and str(args.method).strip() == SATURATE:
        allowed = ", ".join(_SATURATE_SCENARIOS)
        why = f"{SATURATE} measures {allowed} only; {scenario} searches by {BISECT}"
        return {}, [("--method", why)]
    return {"method": BISECT, **_SCENARIO_PLANS.get(scenario, {})}, []


def plan_and_base(args: argparse.Namespace, juju: bool = False) -> tuple[SearchPlan, RunSpec]:
    """The search plan and the run every step repeats at its own rate and duration (payload,
    gates, labels); every bad flag is named with what is allowed, all at once. On a model
    (`juju`) the steps are minutes long (JUJU_PLAN)."""
    scenario = str(getattr(args, "scenario", None) or _SATURATE_SCENARIOS[0])
    defaults, problems = _scenario_defaults(args, scenario)
    if juju:
        defaults = {**JUJU_PLAN, **defaults}
    plan, plan_problems = _plan_problems(args, defaults)
    problems += plan_problems
    base, spec_problems = _spec_problems(args, plan)
    problems += spec_problems
    if problems or plan is None or base is None:
        raise invalid_flags(problems)
    return replace(plan, max_error_rate=base.max_error_rate), base


def _search_id_from_args(args: argparse.Namespace, results_root: Path) -> str:
    search_id = args.search_id or new_run_id()
    problem = searching.check_search_id(search_id)
    if problem:
        raise UsageError(f"--search-id: {problem}")
    run_cli.check_results_dir(results_root, search_id)  # also refuses an id with results
    return search_id


def _repeat_from_args(args: argparse.Namespace) -> int:
    raw = str(getattr(args, "repeat", "1")).strip()
    if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= _MAX_REPEAT):
        raise UsageError(f"--repeat: must be an integer from 1 to {_MAX_REPEAT}; got {raw!r}")
    return int(raw)


def _repeat_ids(search_id: str, repeat: int) -> list[str]:
    """The searches of a repeated search: the id itself once, else <id>-r1 ... <id>-rN."""
    ids = [search_id] if repeat == 1 else [f"{search_id}-r{i}" for i in range(1, repeat + 1)]
    for one in ids:
        problem = searching.check_search_id(one)
        if problem:
            raise UsageError(f"--search-id: with --repeat {repeat}, {problem}")
    return ids


def _exit_code(record: SearchRecord) -> int:
    return _EXIT_BY_STATUS.get(record.result.status, EXIT_GATE_FAILED)


def _cmd_search(args: argparse.Namespace, seams: Seams) -> int:
    juju = check_target_flags(args)
    plan, base = plan_and_base(args, juju)
    repeat = _repeat_from_args(args)
    results_root = paths.results_dir()
    search_id = _search_id_from_args(args, results_root)
    ids = _repeat_ids(search_id, repeat)
    root = results_root / search_id if repeat > 1 else results_root
    if juju:
        found = search_model(args, plan, base, root, ids, seams)
        if found is None:
            return EXIT_BAD_INPUT
        if repeat == 1:
            print_search(wide_stdout(), found[0], root)
            return _exit_code(found[0])
        print_spread(wide_stdout(), root, search_id, found, plan)
        return max(_exit_code(r) for r in found)
    flags = run_cli.with_scenario_signals(stack_flags(args), base)
    what = prepare_stack(flags, seams.resolve_stack)
    if seams.build_missing(("k6", *local.stack_parts(what)), command="search") != EXIT_OK:
        return EXIT_BAD_INPUT
    out = wide_stdout()
    records: list[SearchRecord] = []
    path = searching.search_file(root, ids[0])
    try:
        with stack_session(seams, flags, "search", search_id, what, keep=args.keep_stack) as target:
            stack = {"target": target.name, **target.environment()}
            if base.scenario != _SATURATE_SCENARIOS[0]:
                stack["scenario"] = base.scenario  # the unit of its rates
            for i, one in enumerate(ids, 1):
                path = searching.search_file(root, one)
                if repeat > 1:
                    console.print(Text(f"search {i} of {repeat}: {one}", style="bold"))
                record = search_live(target, plan, base, root, one, stack, args, seams)
                records.append(record)
                if repeat > 1:
                    print_search(out, record, root)
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
        print_search(out, records[0], root)
        return _exit_code(records[0])
    print_spread(out, root, search_id, records, plan)
    return max(_exit_code(r) for r in records)
