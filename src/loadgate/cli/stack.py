"""`loadgate stack up|down|status`: the local stack of real binaries under Pebble;
`prepare_stack`, which `run`, `search` and `compare` use too, and `stack_session`: the stack
for one command (loadgate.stack.session), started with its progress, its findings on the
terminal."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .. import paths
from ..runner.target import OpenedTarget
from ..stack import cgroups, choice, local, runlock, session
from ..stack.choice import StackFlags, StackRequest
from ..stack.ops import Down, StackOps, Up
from ..stack.ports import Ports
from ..stack.profile import Profile
from ..stack.session import Hands, SessionRequest
from ..stack.standin import TRACES
from .common import (
    EXIT_BAD_INPUT,
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
from .flags import add_stack_flags, stack_flags

if TYPE_CHECKING:
    from .seams import Seams


def register(sub: Subparsers) -> None:
    p = sub.add_parser("stack", help="the local stack of real binaries under Pebble")
    p.set_defaults(handler=_cmd_stack)
    stack_sub = p.add_subparsers(dest="action", required=True)
    p_up = stack_sub.add_parser("up", help="start otelcol, Loki (TLS) and Prometheus")
    add_stack_flags(p_up)
    p_up.add_argument(
        "--timeout",
        type=seconds_flag(0, 3600, allow_low=False),
        default=60.0,
        help="seconds to wait for health",
    )
    stack_sub.add_parser("down", help="stop every process of the stack")
    stack_sub.add_parser("status", help="each service, its port and health")


def prepare_stack(
    flags: StackFlags,
    resolve: Callable[[StackRequest], local.StackChoice] = StackRequest.prepare,
) -> local.StackChoice:
    """The stack the flags ask for, resolved (charm sources, options, workload builds) before
    anything starts; bad flags raise UsageError naming them."""
    try:
        req = choice.request(flags)
        with console.status(f"resolving the stack ({escape(req.preset)})"):
            return resolve(req)
    except choice.ChoiceError as exc:
        raise UsageError(str(exc)) from None


def _describe_stack(what: local.StackChoice) -> str:
    if isinstance(what, Profile):
        return f"hand-written profile {what.name}"
    return f"charms {what.otelcol.label} + {what.loki.label}, preset {what.preset}"


def _start_stack(
    what: local.StackChoice,
    ports: Ports,
    *,
    up: Up = local.up,
    owner: local.Owner | None = None,
    timeout: float = 60.0,
) -> local.StackInfo:
    """Start the prepared stack `what` on `ports`; `owner`: the run starting it (None: `stack
    up`)."""
    started = time.monotonic()
    with console.status("starting the local stack") as spinner:

        def on_step(text: str) -> None:
            spinner.update(escape(text))
            console.log(Text(text))

        def on_wait(healthy: dict[str, bool], elapsed: float) -> None:
            marks = "  ".join(f"{n} {'ok' if ok else '…'}" for n, ok in healthy.items())
            spinner.update(f"starting the local stack ({elapsed:4.1f}s): {marks}")

        info = up(what, ports, timeout=timeout, on_wait=on_wait, owner=owner, on_step=on_step)
    console.print(
        f"[green]stack up[/green] in {time.monotonic() - started:.1f}s "
        f"({escape(_describe_stack(what))}, run dir {escape(str(info.root))})"
    )
    for line in stack_notes(info):
        notice(line)
    return info


class _TerminalTell:
    """What a stack session finds and does, said on the terminal (stack.session.Tell)."""

    def found(self, text: str) -> None:
        notice(text)

    def using(self, info: local.StackInfo) -> None:
        console.print(Text(f"using the running stack ({info.name}, {info.root})"), soft_wrap=True)

    def stopped(self) -> None:
        console.print("stack stopped (use --keep-stack to leave it up)")


def _session_hands(seams: Seams) -> Hands[OpenedTarget]:
    """What a stack session acts with on the command line: the seams' stack and target, a
    stack started with its progress (`_start_stack`), its findings said, its clean-ups shielded
    from stop signals."""

    def start(what: local.StackChoice, ports: Ports, owner: local.Owner) -> local.StackInfo:
        return _start_stack(what, ports, up=seams.stack.up, owner=owner)

    return Hands(seams.stack, start, seams.open_target, _TerminalTell(), shielded)


def stack_session(
    seams: Seams,
    flags: StackFlags,
    command: str,
    run_id: str,
    what: local.StackChoice,
    *,
    keep: bool,
) -> AbstractContextManager[OpenedTarget]:
    """The local stack for one command (`run`, `search`), holding its lock: the seams' session
    (stack.session.local_session) in the stack directory, on the flags' ports. Raises
    runlock.BusyError and local.StackError (see stack.session)."""
    request = SessionRequest(paths.stack_dir(), command, run_id, what, flags.base_port, keep)
    return seams.session(request, _session_hands(seams))


def free_stack_dir(root: Path, ops: StackOps) -> bool:
    """compare starts its sides' stacks there: a stack left by a dead run is stopped, a
    running one is refused (False, said why; stack.session.free_run_dir). The matrix
    does too, and says the same."""
    try:
        session.free_run_dir(root, ops, notice, shielded)
    except session.StackRunning as exc:
        error(
            "compare",
            f"{exc}; compare starts its own stack of each side: stop it with "
            "`loadgate stack down`, or give compare another LOADGATE_STACK_DIR (and --base-port)",
        )
        return False
    return True


def stack_notes(info: local.StackInfo) -> list[str]:
    """What people must know about a charm stack: components its collector build lacks, its
    traces backend, its resource limits (enforced or NOT), its backend fault proxy."""
    notes: list[str] = []
    missing = (info.charms or {}).get("missing_components") or []
    if missing:
        notes.append(
            "the local collector build lacks components the charm rendered, removed: "
            + ", ".join(missing)
        )
    backend = (info.charms or {}).get("traces_backend")
    if backend:
        notes.append(f"traces go to a {backend}, service {TRACES.service}")
    return notes + _limit_notes(info)


def _limit_notes(info: local.StackInfo) -> list[str]:
    """The stack's resource limits (enforced or NOT) and its backend fault proxy."""
    notes = cgroups.describe(info.limits) if info.limits is not None else []
    fault = info.backend_fault
    if fault is not None:
        notes.append(
            f"backend fault proxy before Loki: {fault.plan.spec}, from each run's load start "
            f"(the collector pushes to 127.0.0.1:{fault.port}; counts at "
            f"{fault.control_url}/counts)"
        )
    return notes


def _status_table(st: local.StackStatus) -> Table:
    table = Table(title="loadgate local stack")
    table.add_column("service")
    table.add_column("port", justify="right")
    table.add_column("pebble")
    table.add_column("health")
    for s in st.services:
        health = (
            Text("healthy", style="green")
            if s.healthy
            else Text(f"unhealthy ({s.detail})", style="red")
        )
        table.add_row(s.name, str(s.port), Text(s.pebble), health)
    return table


def _cmd_stack(args: argparse.Namespace, seams: Seams) -> int:
    root = paths.stack_dir()
    if args.action == "down" and not root.is_dir():
        console.print("stopped: nothing was running")
        return EXIT_OK
    if args.action in ("up", "down"):
        try:
            with runlock.held(root, runlock.Holder.me(f"stack {args.action}")):
                if args.action == "up":
                    return _stack_up(args, seams)
                with shielded():
                    return _stack_down(root, seams.stack.down)
        except runlock.BusyError as exc:
            error(f"stack {args.action}", exc)
            return EXIT_BAD_INPUT
    return _stack_status(root, seams.stack.status)


def _stack_up(args: argparse.Namespace, seams: Seams) -> int:
    flags = stack_flags(args)
    what = prepare_stack(flags, seams.resolve_stack)
    if seams.build_missing(local.stack_parts(what), command="stack up") != EXIT_OK:
        return EXIT_BAD_INPUT
    try:
        ports = Ports.from_base(flags.base_port)
        _start_stack(what, ports, up=seams.stack.up, timeout=args.timeout)
    except (local.StackError, ValueError) as exc:
        error("stack up", exc)
        return EXIT_BAD_INPUT
    stdout.print(_status_table(seams.stack.status(paths.stack_dir())))
    return EXIT_OK


def _stack_down(root: Path, down: Down) -> int:
    lines = down(root)
    gone = [line for line in lines if line.startswith(local.ALREADY_STOPPED)]
    stopped = [line for line in lines if line not in gone]
    if stopped or not gone:
        said = ", ".join(stopped) if stopped else "nothing was running"
        console.print("stopped: " + escape(said))
    for line in gone:
        console.print(escape(line))
    return EXIT_OK


def _stack_status(root: Path, status: Callable[[Path], local.StackStatus]) -> int:
    st = status(root)
    if st.pebble_gone and st.info is not None:
        stdout.print(_status_table(st))
        error(
            "stack status",
            f"the stack's Pebble daemon (pid {st.info.pid}) is gone, but its services still "
            f"run: {local.describe_leftovers(st.leftovers)}; stop them with `loadgate stack down`",
        )
        return EXIT_BAD_INPUT
    if not st.running:
        console.print("the local stack is not running (start it with `loadgate stack up`)")
        return EXIT_BAD_INPUT
    stdout.print(_status_table(st))
    if st.info is not None:
        stdout.print(
            Text(f"run dir {st.info.root}  stack {st.info.name}  CA {st.info.ca_file}"),
            soft_wrap=True,
        )
        for line in _limit_notes(st.info):
            stdout.print(Text(line), soft_wrap=True)
    holder = runlock.read_holder(root)  # cleared on release: a live process here holds it
    if holder is not None and holder.process.alive():
        stdout.print(Text(f"in use by {holder.describe()}"), soft_wrap=True)
    return EXIT_OK if st.healthy else EXIT_BAD_INPUT
