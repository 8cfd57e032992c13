"""`loadgate run`: flags mirroring the k6 charm's start-load parameters, and the command, on the
local stack or (`--target juju`) through a model's k6 charm."""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Generator
from pathlib import Path

from rich.markup import escape
from rich.text import Text

from loadgate import paths
from loadgate.contract.gates import PASS
from loadgate.contract.spec import EXECUTORS, SCENARIOS, RunSpec, SpecError
from loadgate.judge.attribution import COMPONENTS, Attribution, Claim
from loadgate.measure.pipeline import Scope
from loadgate.measure.queries import QueryError
from loadgate.records import result as results
from loadgate.records.fields import RecordError
from loadgate.records.result import RunResult
from loadgate.report import tables
from loadgate.runner import run as runner
from loadgate.runner.target import Progress, Target

from ..stack import choice, local, orphans, runlock
from ..stack.ports import Ports
from ..stack.procs import ProcessId
from ..targets.local import LocalTarget
from .binaries import build_missing
from .common import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_OK,
    Subparsers,
    UsageError,
    console,
    error,
    notice,
    seconds_flag,
    shielded,
    stdout,
)
from .stack import add_stack_flags, prepare_stack, start_stack

MAX_DRAIN_TIMEOUT = 24 * 3600.0

DEFAULTS = RunSpec()


def register(sub: Subparsers) -> None:
    p = sub.add_parser("run", help="run a load scenario and judge it (the main job)")
    add_run_flags(p)
    add_stack_flags(p)
    p.set_defaults(handler=cmd_run)


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
        "--drain-timeout",
        type=seconds_flag(0, MAX_DRAIN_TIMEOUT, allow_low=True),
        default=60.0,
        help="seconds to wait for the queue to drain (default 60)",
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


def check_results_dir(root: Path, run_id: str) -> None:
    """The results folder can take this run's results: checked before anything starts, and
    without leaving anything behind (the folder is made when the run writes to it)."""
    where = f"results directory {root} (LOADGATE_RESULTS_DIR)"
    if root.exists() and not root.is_dir():
        raise UsageError(f"{where} is a file, not a directory")
    existing = root
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"{where} is not writable: {existing} is a file")
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".loadgate-probe-"):
            pass
    except OSError as exc:
        raise UsageError(f"{where} is not writable: {exc.strerror or exc}") from None
    if results.run_dir(root, run_id).exists():
        raise UsageError(
            f"--run-id: {run_id} already has results in {results.run_dir(root, run_id)}; "
            "a run id names one run (Loki's read-back counts its records by it)"
        )


def progress_line(p: Progress) -> str:
    rate = p.records_accepted / p.elapsed_s if p.elapsed_s > 0 else 0.0
    line = (
        f"[bold]load[/bold] {p.elapsed_s:5.0f}/{p.total_s:.0f}s  "
        f"records sent {p.records_sent:,}  accepted/s {rate:,.0f}  "
        f"errors {p.error_rate * 100:.2f}%"
    )
    return line + (f"  {escape(p.detail)}" if p.detail else "")


def report_result(result: RunResult, results_root: Path) -> None:
    stdout.print(tables.figures_table(result))
    stdout.print(tables.ledger_table(result.ledger))
    stdout.print(tables.verdict_table(result))
    stdout.print(bottleneck_text(result.bottleneck))
    for note in result.notes:
        stdout.print(f"[yellow]note:[/yellow] {escape(note)}")
    for problem in result.problems:
        stdout.print(f"[red]incomplete:[/red] {escape(problem)}")
    path = results.run_dir(results_root, result.run_id) / results.RESULT_FILE
    stdout.print(Text(f"result: {path}"))


def claim_line(claim: Claim) -> str:
    """One claim's figure, value and threshold: `collector: queue_max = 1,000 (>= 950 ...)`."""
    value = claim.value
    shown = f"{value:,.0f}" if abs(value) >= 100 or value == int(value) else f"{value:.3g}"
    return f"{claim.component}: {claim.figure} = {shown} ({claim.threshold})"


def bottleneck_text(block: object) -> Text:
    """The attribution of a run in a few lines: what gave way (or none / unknown and why), and
    each claim with the figure it cites."""
    attribution = None
    if isinstance(block, dict):
        try:
            attribution = Attribution.from_dict(block.get("attribution"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        except RecordError:
            attribution = None
    if attribution is None:
        return Text("bottleneck: unknown (no attribution recorded)", style="yellow")
    style = {"none": "green", "unknown": "yellow"}.get(attribution.verdict, "bold red")
    text = Text("bottleneck: ", style="bold")
    text.append(attribution.summary, style=style)
    for claim in attribution.claims:
        text.append(f"\n  {claim_line(claim)}", style="dim")
    if attribution.verdict in COMPONENTS:  # other verdicts carry their notes in the summary
        for note in attribution.notes:
            text.append(f"\n  note: {note}", style="dim")
    return text


def exit_code(result: RunResult) -> int:
    """2 when the stack broke and figures are missing, else 0 for PASS and 1 for FAIL."""
    if not result.complete:
        return EXIT_BAD_INPUT
    return EXIT_OK if result.verdict == PASS else EXIT_GATE_FAILED


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
            status.update(progress_line(p))

        def on_phase(text: str) -> None:
            status.update(escape(text))
            console.log(Text(text))

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
    return exit_code(result)


def cmd_run(args: argparse.Namespace) -> int:
    if args.target == "juju":
        spec = spec_from_args(args, loopback_only=False)
        if not args.model:
            raise UsageError("--model: required with --target juju (the model holding the bundle)")
        check_results_dir(paths.results_dir(), spec.run_id)
        return cmd_run_juju(args, spec)
    spec = spec_from_args(args, loopback_only=True)
    if args.model:
        raise UsageError("--model: only applies with --target juju")
    check_results_dir(paths.results_dir(), spec.run_id)
    what = prepare_stack(args)
    if build_missing(("k6", *local.stack_parts(what)), command="run") != EXIT_OK:
        return EXIT_BAD_INPUT
    try:
        with local_session(args, "run", spec.run_id, what) as target:
            return run_with(target, spec, args)
    except runlock.BusyError as exc:
        error("run", exc)
        return EXIT_BAD_INPUT
    except (local.StackError, runner.RunError, QueryError) as exc:
        error("run", exc)
        return EXIT_BAD_INPUT


def cmd_run_juju(args: argparse.Namespace, spec: RunSpec) -> int:
    """`loadgate run --target juju --model M`: the run through the model's k6 charm."""
    # Imported here: jubilant and the Juju target load only for a Juju run.
    import jubilant

    from ..juju import actions, deployed, endpoints
    from ..juju.model import ActionError
    from ..targets.juju import SCRAPE_TIMEOUT, JujuTarget, labelled_for_model

    if not args.model:
        raise UsageError("--model: required with --target juju (the model holding the bundle)")
    juju = jubilant.Juju(model=args.model)
    try:
        spec = labelled_for_model(spec, juju.status(), "otelcol")
        console.print(
            f"model {args.model}: labels "
            + ", ".join(f"{k}={v}" for k, v in sorted(spec.labels.items()))
        )
        target = JujuTarget(juju)
    except deployed.MismatchError as exc:
        console.print(f"[red]loadgate run: model {args.model}: {exc}[/red]", soft_wrap=True)
        return EXIT_BAD_INPUT
    except (endpoints.EndpointError, ActionError, jubilant.CLIError, QueryError) as exc:
        console.print(f"[red]loadgate run: model {args.model}: {exc}[/red]", soft_wrap=True)
        return EXIT_BAD_INPUT
    try:
        return run_with(target, spec, args, scope=target.scope, scrape_timeout=SCRAPE_TIMEOUT)
    except (runner.RunError, QueryError, ActionError, actions.ActionResultError) as exc:
        console.print(f"[red]loadgate run: {exc}[/red]", soft_wrap=True)
        return EXIT_BAD_INPUT
    finally:
        target.close()


@contextlib.contextmanager
def local_session(
    args: argparse.Namespace, command: str, run_id: str, what: local.StackChoice
) -> Generator[LocalTarget]:
    """The local stack for one command (`run`, `search`), holding its lock: find what a dead
    run left, then use the running stack or start one; the target on it is yielded. At the end
    the stack is stopped only if this command started it (and was not told `--keep-stack`).

    Raises runlock.BusyError (another command holds the stack) and local.StackError (a
    broken or different running stack); errors of the body propagate after the clean-up."""
    root = paths.stack_dir()
    lock = runlock.acquire(root, runlock.Holder.me(command, run_id))
    try:
        if lock.previous is not None and lock.previous.process != lock.holder.process:
            notice(f"found: {lock.previous.describe()} died while it held the stack at {root}")
        found = orphans.stop_orphan_k6(root)
        if found:
            notice(f"found: {found}")
        started_here = False
        info = local.read_info(root)
        try:
            if info is not None and info.abandoned:
                owner = info.owner
                assert owner is not None
                left = [f"pebble (pid {info.pid})"] if info.pebble_alive() else []
                left += [f"{n} (pid {p})" for n, p in local.leftovers(info) if p != info.pid]
                notice(
                    f"found: the stack at {root} was started by run {owner.run_id} (loadgate "
                    f"pid {owner.process.pid}), which ended without stopping it"
                    + (f"; still running: {', '.join(left)}" if left else "")
                    + ": stopping it and starting a fresh one"
                )
                with shielded():
                    local.down(root)
                info = None
            elif info is not None and not info.pebble_alive():
                info = None  # `up` stops on services left without their Pebble, with the fix
            if info is None:
                owner = local.Owner(ProcessId.me(), run_id, keep=args.keep_stack)
                info = start_stack(args, owner=owner, what=what)
                started_here = True
            else:
                _check_running_stack(info, args, what)
                console.print(
                    Text(f"using the running stack ({info.name}, {info.root})"), soft_wrap=True
                )
            target = LocalTarget(info)
            try:
                yield target
            finally:
                with shielded():
                    target.close()
        finally:
            if started_here and not args.keep_stack:
                with shielded():
                    local.down(root)
                console.print("stack stopped (use --keep-stack to leave it up)")
    finally:
        with shielded():
            lock.release()


def _check_running_stack(
    info: local.StackInfo, args: argparse.Namespace, what: local.StackChoice
) -> None:
    """A stack this run did not start: it must be the one asked for, and whole."""
    differ = choice.differences(what, info.charms, info.profile)
    if differ:
        raise local.StackError(
            f"the running stack is not the one this run asks for ({'; '.join(differ)}): "
            "stop it with `loadgate stack down` first"
        )
    if args.base_port is not None and Ports.from_base(args.base_port) != info.ports:
        raise local.StackError(
            "the running stack uses other ports than --base-port asks; "
            "stop it with `loadgate stack down` first"
        )
    st = local.status(info.root)
    sick = [s for s in st.services if not (s.healthy and s.pebble == "active")]
    if sick:
        broken = "; ".join(
            (
                f"Prometheus is down ({s.detail}, pebble: {s.pebble})"
                if s.name == "prometheus"
                else f"{s.name} is not healthy ({s.detail}, pebble: {s.pebble})"
            )
            for s in sick
        )
        raise local.StackError(
            f"the running stack at {info.root} is broken: {broken}; nothing was started. "
            "Restart it (`loadgate stack down`, then run again) or fix the service"
        )
