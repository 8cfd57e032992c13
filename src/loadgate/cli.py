"""The `loadgate` command line: binaries, stack, run, bench, report."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
import threading
from collections.abc import Generator, Sequence
from types import FrameType

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from . import __version__

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_BAD_INPUT = 2

console = Console(stderr=True)
stdout = Console()


class UsageError(ValueError):
    """Bad input from the command line: the message names the flag and what is allowed."""


class Interrupted(KeyboardInterrupt):
    """A signal that stops a command the way Ctrl-C does (SIGINT, SIGTERM, SIGHUP)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Signals:
    """The stop signals of one command: the first interrupts (unless a clean-up is shielded,
    then it interrupts when the clean-up ends); later ones are ignored."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.raised = False
        self.shield = 0

    def handler(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None:
            return
        self.received = signum
        os.write(2, f"\n{signal.Signals(signum).name}: stopping…\n".encode())
        if self.shield == 0:
            self.raised = True
            raise Interrupted(signum)


_signals: _Signals | None = None


@contextlib.contextmanager
def signals_stop_like_ctrl_c() -> Generator[None]:
    """SIGTERM (CI cancel, `timeout`) and SIGHUP (a closed terminal) stop a command as Ctrl-C
    does: k6 is stopped, a stack the run started is stopped, the exit code is 128 + signal."""
    global _signals
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    state = _Signals()
    previous = {sig: signal.signal(sig, state.handler) for sig in STOP_SIGNALS}
    _signals = state
    try:
        yield
    finally:
        _signals = None
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def shielded() -> Generator[None]:
    """A clean-up that a stop signal must not cut short: the signal takes effect after it."""
    state = _signals
    if state is None:
        yield
        return
    state.shield += 1
    try:
        yield
    finally:
        state.shield -= 1
    if state.shield == 0 and state.received is not None and not state.raised:
        state.raised = True
        raise Interrupted(state.received)


def error(command: str, message: object) -> None:
    """An error line; the message is printed as text, never read as rich markup."""
    console.print(f"[red]loadgate {escape(command)}: {escape(str(message))}[/red]", soft_wrap=True)


def notice(message: str) -> None:
    """A warning line (what a run found and did about it), printed as text."""
    console.print(Text(message, style="yellow"), soft_wrap=True)


def _base_port(value: str) -> int:
    try:
        port = int(value.strip(), 10) if value.strip().isascii() else int("x")
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer port, got {value!r}") from None
    if not 1024 <= port <= 65528:
        raise argparse.ArgumentTypeError(f"must be between 1024 and 65528, got {port}")
    return port


MAX_QUEUE_SIZE = 10_000_000


def _queue_size(value: str) -> int:
    try:
        size = int(value.strip(), 10) if value.strip().isascii() else int("x")
    except ValueError:
        size = 0
    if not 1 <= size <= MAX_QUEUE_SIZE:
        raise argparse.ArgumentTypeError(
            f"must be an integer between 1 and {MAX_QUEUE_SIZE:,}, got {value!r}"
        )
    return size


def seconds_flag(low: float, high: float, *, allow_low: bool) -> argparse._ActionType:  # pyright: ignore[reportPrivateUsage]
    """An argparse type: a finite number of seconds in [low, high] (or (low, high])."""

    def parse(value: str) -> float:
        try:
            seconds = float(value) if value.isascii() else math.nan
        except ValueError:
            seconds = math.nan
        in_range = (low <= seconds if allow_low else low < seconds) and seconds <= high
        if not math.isfinite(seconds) or not in_range:
            bound = f"at least {low:g}" if allow_low else f"more than {low:g}"
            raise argparse.ArgumentTypeError(
                f"must be a number of seconds, {bound} and at most {high:g}; got {value!r}"
            )
        return seconds

    return parse


def _add_stack_flags(p: argparse.ArgumentParser) -> None:
    from .charms.command import add_source_flags
    from .stack import choice

    p.add_argument(
        "--profile",
        default=choice.DEFAULT_PRESET,
        choices=choice.profile_names(),
        help="otelcol charm options from the bundle's overlays/profile-<name>.yaml "
        "(default charm-default: the charm's own defaults), or hand-nop (a hand-written "
        "stack with a nop exporter)",
    )
    p.add_argument(
        "--queue-size",
        type=_queue_size,
        help="the otelcol charm's queue_size option (default 1000), as --charm-config",
    )
    add_source_flags(p)
    p.add_argument(
        "--base-port",
        type=_base_port,
        help="move every port of the stack to base, base+1, ... (default: standard ports)",
    )


def build_parser() -> argparse.ArgumentParser:
    from . import binaries
    from .run_cli import add_run_flags

    parser = argparse.ArgumentParser(
        prog="loadgate",
        description="Load gates for the Canonical observability stack.",
    )
    parser.add_argument("--version", action="version", version=f"loadgate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p_bin = sub.add_parser("binaries", help="build the pinned upstream binaries into the cache")
    p_bin.add_argument(
        "--only", nargs="+", choices=binaries.PART_NAMES, help="build only these parts"
    )
    p_bin.add_argument("--force", action="store_true", help="rebuild even if current")

    p_stack = sub.add_parser("stack", help="the local stack of real binaries under Pebble")
    stack_sub = p_stack.add_subparsers(dest="action", required=True)
    p_up = stack_sub.add_parser("up", help="start otelcol, Loki (TLS) and Prometheus")
    _add_stack_flags(p_up)
    p_up.add_argument(
        "--timeout",
        type=seconds_flag(0, 3600, allow_low=False),
        default=60.0,
        help="seconds to wait for health",
    )
    stack_sub.add_parser("down", help="stop every process of the stack")
    stack_sub.add_parser("status", help="each service, its port and health")

    p_run = sub.add_parser("run", help="run a load scenario and judge it (the main job)")
    add_run_flags(p_run)
    _add_stack_flags(p_run)

    p_bench = sub.add_parser("bench", help="benchmarks that print figures")
    bench_sub = p_bench.add_subparsers(dest="bench", required=True)
    p_gen = bench_sub.add_parser(
        "generator", help="k6 log records per minute per k6 CPU core, against a nop collector"
    )
    p_gen.add_argument("--duration", default="30s", help="k6 duration (default 30s)")
    p_gen.add_argument("--vus", type=int, default=4, help="constant VUs (default 4)")
    p_gen.add_argument("--logs-per-request", type=int, default=5)
    p_gen.add_argument(
        "--requests-per-iteration",
        type=int,
        default=1,
        help="requests per k6 iteration, sent with http.batch (default 1, as a default run)",
    )
    p_gen.add_argument("--base-port", type=_base_port, default=24400)

    p_check = sub.add_parser(
        "check-bundle", help="check the Juju bundle and overlays against the charms' endpoints"
    )
    from .bundle_check import add_flags as add_check_bundle_flags

    add_check_bundle_flags(p_check)

    p_charms = sub.add_parser(
        "charms", help="run the otelcol and Loki charms' own code offline: what they render"
    )
    from .charms.command import add_flags as add_charms_flags

    add_charms_flags(p_charms)

    p_report = sub.add_parser("report", help="table and plots of the result rows per revision")
    p_report.add_argument("--results", help="results folder (default ./results)")
    p_report.add_argument("--out", help="where to write report.md and PNGs (default results/)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with signals_stop_like_ctrl_c():
            return _dispatch(parser, args)
    except UsageError as exc:
        error(args.command, exc)
        return EXIT_BAD_INPUT
    except Interrupted as exc:
        console.print(f"[yellow]interrupted ({exc.args[0]})[/yellow]")
        return exc.exit_code
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/yellow]")
        return 128 + signal.SIGINT


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.command == "binaries":
        from .commands import cmd_binaries

        return cmd_binaries(args)
    if args.command == "stack":
        from .commands import cmd_stack

        return cmd_stack(args)
    if args.command == "run":
        from .run_cli import cmd_run

        return cmd_run(args)
    if args.command == "bench":
        from .bench import cmd_bench

        return cmd_bench(args)
    if args.command == "check-bundle":
        from .bundle_check import cmd_check_bundle

        return cmd_check_bundle(args)
    if args.command == "report":
        from .report import cmd_report

        return cmd_report(args)
    if args.command == "charms":
        from .charms.command import cmd_charms

        return cmd_charms(args)
    parser.error(f"unknown command {args.command}")
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
