"""`loadgate run`: flags mirroring the k6 charm's start-load parameters, and the command, on the
local stack or (`--target juju`) through a model's k6 charm."""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.text import Text

from loadgate import paths
from loadgate.capacity.search.driver import Execute
from loadgate.charms import signals as signal_relations
from loadgate.contract.gates import PASS
from loadgate.contract.params import PARAMS
from loadgate.contract.spec import RunSpec, SpecError
from loadgate.judge import soundness
from loadgate.judge.attribution import COMPONENTS, Attribution, Claim
from loadgate.measure import scenarios as scenario_measures
from loadgate.measure.pipeline import Scope
from loadgate.measure.queries import QueryError
from loadgate.measure.saturation import SATURATE_COS_PARAMS, SATURATE_PARAMS, SATURATED
from loadgate.records import result as results
from loadgate.records.fields import RecordError
from loadgate.records.result import RunResult
from loadgate.report import matrix_table, tables
from loadgate.runner import run as runner
from loadgate.runner.target import Progress, Target

from ..stack import local, runlock
from ..stack.choice import StackFlags
from .common import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_OK,
    Subparsers,
    UsageError,
    console,
    error,
    notice,
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
from .stack import prepare_stack, stack_session

if TYPE_CHECKING:
    from .seams import Seams

# Every run parameter but `target` (the load goes to the stack `--target` names) and `streams`
# (the scenario's default).
RUN_PARAMS = tuple(p.name for p in PARAMS if p.name not in ("target", "streams"))


def register(sub: Subparsers) -> None:
    p = sub.add_parser("run", help="run a load scenario and judge it (the main job)")
    add_load_flags(p, RUN_PARAMS)
    p.add_argument("--target", choices=("local", "juju"), default="local", help="default local")
    p.add_argument("--model", help="Juju model (with --target juju)")
    p.add_argument(
        "--saturate",
        action="store_true",
        help="offer more than the pipeline takes and measure its saturation throughput over "
        "the steady window (defaults: "
        + ", ".join(f"--{k} {v}" for k, v in SATURATE_PARAMS.items())
        + "; with --target juju also "
        + ", ".join(f"--{k} {v}" for k, v in SATURATE_COS_PARAMS.items())
        + ", as COS scrapes once a minute; flags given win)",
    )
    add_keep_stack(p, "run")
    add_drain_timeout(p, "to wait for the queue to drain")
    add_stack_flags(p)
    p.set_defaults(handler=_cmd_run)


def spec_from_args(args: argparse.Namespace, *, loopback_only: bool) -> RunSpec:
    """Validate the run flags; a bad flag raises UsageError naming each flag and what is allowed."""
    params = load_params(args, RUN_PARAMS)
    if getattr(args, "saturate", False):
        on_juju = SATURATE_COS_PARAMS if getattr(args, "target", "local") == "juju" else {}
        params = {**SATURATE_PARAMS, **on_juju, **params}
    try:
        return RunSpec.from_params(params, loopback_only=loopback_only)
    except SpecError as exc:
        raise invalid_flags((f"--{name}", msg) for name, msg in exc.problems) from None


def with_scenario_signals(flags: StackFlags, spec: RunSpec) -> StackFlags:
    """The stack flags with what the scenario's pipeline needs (otlp-metrics: the metrics
    signal, measure/scenarios.py) added, said so; a running stack without it is refused as a
    different stack."""
    need = scenario_measures.of(spec.scenario).signals
    missing = [s for s in need if s not in flags.signals]
    if not missing:
        return flags
    signals = signal_relations.parse((*flags.signals, *missing))
    notice(f"{spec.scenario} needs the {', '.join(missing)} signal: the stack carries "
           f"{signal_relations.text(signals)} (--signals)")  # fmt: skip
    return replace(flags, signals=signals)


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


def report_result(result: RunResult, results_root: Path, *, saturate: bool = False) -> None:
    stdout.print(tables.figures_table(result))
    sat = result.saturation
    if sat is not None and (saturate or sat.reading.state == SATURATED):
        stdout.print(tables.saturation_table(sat))
        bad = soundness.unsound(result.run_id, result.ledger)
        if bad is not None:
            stdout.print(f"[red]the saturation does not count:[/red] {escape(bad.reason)}")
    stdout.print(tables.ledger_table(result.ledger))
    stdout.print(tables.verdict_table(result))
    stdout.print(bottleneck_text(result.bottleneck))
    for note in [*result.notes, *_exporter_notes(result)]:
        stdout.print(f"[yellow]note:[/yellow] {escape(note)}")
    for problem in result.problems:
        stdout.print(f"[red]incomplete:[/red] {escape(problem)}")
    path = results.run_dir(results_root, result.run_id) / results.RESULT_FILE
    stdout.print(Text(f"result: {path}"))


def _exporter_notes(result: RunResult) -> list[str]:
    """With another exporter than Loki (`--hand exporter=`), why the ledger finds nothing
    stored and what the run's records did instead."""
    exporter = matrix_table.exporter_of(result)
    if exporter == "loki":
        return []
    lost, verdict, notes = matrix_table.lost_and_verdict(result)
    return [
        f"the collector exports with {exporter}, not to Loki: Loki holds none of the run's "
        f"records, so lost_records counts them all; without that gate the run is {verdict} "
        f"(lost: {'unknown' if lost is None else f'{lost:,}'})",
        *notes,
    ]


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


def _exit_code(result: RunResult) -> int:
    """2 when the stack broke and figures are missing, else 0 for PASS and 1 for FAIL."""
    if not result.complete:
        return EXIT_BAD_INPUT
    return EXIT_OK if result.verdict == PASS else EXIT_GATE_FAILED


def _run_with(
    target: Target,
    spec: RunSpec,
    drain_timeout: float,
    execute: Execute = runner.execute,
    *,
    scope: Scope | None = None,
    scrape_timeout: float = 30.0,
    saturate: bool = False,
) -> int:
    results_root = paths.results_dir()
    with console.status("starting") as status:

        def on_progress(p: Progress) -> None:
            status.update(progress_line(p))

        def on_phase(text: str) -> None:
            status.update(escape(text))
            console.log(Text(text))

        result = execute(
            spec,
            target,
            results_root,
            drain_timeout=drain_timeout,
            on_progress=on_progress,
            on_phase=on_phase,
            scope=scope,
            scrape_timeout=scrape_timeout,
        )
    report_result(result, results_root, saturate=saturate)
    return _exit_code(result)


def _cmd_run(args: argparse.Namespace, seams: Seams) -> int:
    juju = args.target == "juju"
    spec = spec_from_args(args, loopback_only=not juju)
    if juju and not args.model:
        raise UsageError("--model: required with --target juju (the model holding the bundle)")
    if not juju and args.model:
        raise UsageError("--model: only applies with --target juju")
    check_results_dir(paths.results_dir(), spec.run_id)
    if juju:
        return _cmd_run_juju(args, spec, seams)
    flags = with_scenario_signals(stack_flags(args), spec)
    what = prepare_stack(flags, seams.resolve_stack)
    if seams.build_missing(("k6", *local.stack_parts(what)), command="run") != EXIT_OK:
        return EXIT_BAD_INPUT
    try:
        with stack_session(seams, flags, "run", spec.run_id, what, keep=args.keep_stack) as target:
            # The exporter --hand chose.
            return _run_with(
                target, spec, args.drain_timeout, seams.execute, scope=target.scope,
                saturate=args.saturate,
            )  # fmt: skip
    except runlock.BusyError as exc:
        error("run", exc)
        return EXIT_BAD_INPUT
    except (local.StackError, runner.RunError, QueryError) as exc:
        error("run", exc)
        return EXIT_BAD_INPUT


def _cmd_run_juju(args: argparse.Namespace, spec: RunSpec, seams: Seams) -> int:
    """`loadgate run --target juju --model M`: the run through the model's k6 charm."""
    # Imported here: jubilant and the Juju target load only for a Juju run.
    import jubilant

    from ..juju import actions, deployed, endpoints
    from ..juju.model import ActionError
    from ..targets.juju import SCRAPE_TIMEOUT, JujuTarget, labelled_for_model

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
        return _run_with(
            target,
            spec,
            args.drain_timeout,
            seams.execute,
            scope=target.scope,
            scrape_timeout=SCRAPE_TIMEOUT,
            saturate=args.saturate,
        )
    except (runner.RunError, QueryError, ActionError, actions.ActionResultError) as exc:
        console.print(f"[red]loadgate run: {exc}[/red]", soft_wrap=True)
        return EXIT_BAD_INPUT
    finally:
        target.close()
