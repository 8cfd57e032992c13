"""`loadgate run`: flags mirroring the k6 charm's start-load parameters, and the command."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import paths, results, runner, tables
from .cli import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_OK, UsageError, console, stdout
from .commands import build_missing, start_stack
from .core.gates import PASS
from .core.spec import EXECUTORS, SCENARIOS, RunSpec, SpecError
from .pipeline import Scope
from .queries import QueryError
from .results import RunResult
from .runner import Progress, Target
from .stack import local
from .stack import profile as profiles
from .stack.ports import Ports
from .targets.local import LocalTarget

DEFAULTS = RunSpec()


def add_run_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenario", choices=SCENARIOS, help=f"default {DEFAULTS.scenario}")
    p.add_argument(
        "--executor", help=f"one of {', '.join(EXECUTORS)} (default {DEFAULTS.executor})"
    )
    p.add_argument(
        "--vus", help=f"VUs (constant-vus) or pre-allocated VUs (default {DEFAULTS.vus})"
    )
    p.add_argument("--rate", help=f"log records per minute (default {DEFAULTS.rate})")
    p.add_argument("--duration", help=f"k6 duration, e.g. 60s, 10m (default {DEFAULTS.duration})")
    p.add_argument("--logs-per-request", help=f"default {DEFAULTS.logs_per_request}")
    p.add_argument(
        "--requests-per-iteration",
        help="requests each k6 iteration sends in parallel with http.batch "
        f"(default {DEFAULTS.requests_per_iteration}; more spends less k6 CPU per request)",
    )
    p.add_argument(
        "--body-min", help=f"shortest log body in characters (default {DEFAULTS.body_min})"
    )
    p.add_argument(
        "--body-max", help=f"longest log body in characters (default {DEFAULTS.body_max})"
    )
    p.add_argument(
        "--p99-ms", help=f"gate: p99 request duration below (default {DEFAULTS.p99_ms:g})"
    )
    p.add_argument(
        "--max-error-rate", help=f"gate: error rate at most (default {DEFAULTS.max_error_rate})"
    )
    p.add_argument(
        "--min-logs-per-minute",
        help="gate: accepted log records per minute at least "
        "(default 95%% of --rate for constant-arrival-rate, else none)",
    )
    p.add_argument("--labels", help="k=v,k2=v2 tags of the run, e.g. revision=69")
    p.add_argument("--run-id", help="run id (default: time stamp and random suffix)")
    p.add_argument("--target", choices=("local", "juju"), default="local", help="default local")
    p.add_argument("--model", help="Juju model (with --target juju)")
    p.add_argument("--keep-stack", action="store_true", help="leave a stack this run started up")
    p.add_argument(
        "--drain-timeout", type=float, default=60.0, help="seconds to wait for the queue to drain"
    )


SPEC_FLAGS = (
    "scenario", "executor", "vus", "rate", "duration", "logs_per_request",
    "requests_per_iteration", "body_min",
    "body_max", "p99_ms", "max_error_rate", "min_logs_per_minute", "labels", "run_id",
)  # fmt: skip


def spec_from_args(args: argparse.Namespace, *, loopback_only: bool) -> RunSpec:
    """Validate the run flags; a bad flag raises UsageError naming each flag and what is allowed."""
    params = {name: getattr(args, name) for name in SPEC_FLAGS if getattr(args, name) is not None}
    try:
        return RunSpec.from_params(params, loopback_only=loopback_only)
    except SpecError as exc:
        raise UsageError(
            "invalid flags:\n" + "\n".join(f"  --{name}: {msg}" for name, msg in exc.problems)
        ) from None


def _progress_line(p: Progress) -> str:
    rate = p.records_accepted / p.elapsed_s if p.elapsed_s > 0 else 0.0
    line = (
        f"[bold]load[/bold] {p.elapsed_s:5.0f}/{p.total_s:.0f}s  "
        f"records sent {p.records_sent:,}  accepted/s {rate:,.0f}  "
        f"errors {p.error_rate * 100:.2f}%"
    )
    return line + (f"  {p.detail}" if p.detail else "")


def report_result(result: RunResult, results_root: Path) -> None:
    stdout.print(tables.figures_table(result))
    stdout.print(tables.ledger_table(result.ledger))
    stdout.print(tables.verdict_table(result))
    for note in result.notes:
        stdout.print(f"[yellow]note:[/yellow] {note}")
    stdout.print(f"result: {results.run_dir(results_root, result.run_id) / results.RESULT_FILE}")


def run_with(
    target: Target,
    spec: RunSpec,
    args: argparse.Namespace,
    *,
    scope: Scope | None = None,
    scrape_timeout: float = 30.0,
) -> int:
    results_root = paths.results_dir()
    with console.status("starting") as status:

        def on_progress(p: Progress) -> None:
            status.update(_progress_line(p))

        def on_phase(text: str) -> None:
            status.update(text)
            console.log(text)

        result = runner.execute(
            spec,
            target,
            results_root,
            drain_timeout=args.drain_timeout,
            on_progress=on_progress,
            on_phase=on_phase,
            scope=scope,
            scrape_timeout=scrape_timeout,
        )
    report_result(result, results_root)
    return EXIT_OK if result.verdict == PASS else EXIT_GATE_FAILED


def cmd_run(args: argparse.Namespace) -> int:
    if args.target == "juju":
        from .targets.juju import cmd_run_juju

        return cmd_run_juju(args, spec_from_args(args, loopback_only=False))
    spec = spec_from_args(args, loopback_only=True)
    if args.model:
        raise UsageError("--model: only applies with --target juju")
    if build_missing(("k6", *local.STACK_PARTS)) != EXIT_OK:
        return EXIT_BAD_INPUT
    started_here = False
    info = local.running_info()
    try:
        if info is None:
            info = start_stack(args)
            started_here = True
        else:
            _check_running_stack(info, args)
            console.print(f"using the running stack (profile {info.profile.name}, {info.root})")
        target = LocalTarget(info)
        try:
            return run_with(target, spec, args)
        finally:
            target.close()
    except (local.StackError, runner.RunError, QueryError) as exc:
        console.print(f"[red]loadgate run: {exc}[/red]")
        return EXIT_BAD_INPUT
    finally:
        if started_here and not args.keep_stack:
            local.down()
            console.print("stack stopped (use --keep-stack to leave it up)")


def _check_running_stack(info: local.StackInfo, args: argparse.Namespace) -> None:
    wanted = profiles.get(args.profile, args.queue_size)
    if wanted != info.profile:
        raise local.StackError(
            f"the running stack has profile {info.profile.name} "
            f"(queue_size {info.profile.queue_size}); this run asks for {wanted.name} "
            f"(queue_size {wanted.queue_size}): stop it with `loadgate stack down` first"
        )
    if args.base_port is not None and Ports.from_base(args.base_port) != info.ports:
        raise local.StackError(
            "the running stack uses other ports than --base-port asks; "
            "stop it with `loadgate stack down` first"
        )
