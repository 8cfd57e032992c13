"""What every command of the command line shares: the two consoles, the exit codes, error and
notice lines, stop signals handled like Ctrl-C, and the argparse types of flags several commands
take.

Command modules import from here (and from each other); nothing here imports a command module
or `loadgate.cli` itself, and no module outside `loadgate.cli` imports anything of the package.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import threading
from collections.abc import Generator
from types import FrameType
from typing import TypeAlias

from rich.console import Console
from rich.markup import escape
from rich.text import Text

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_BAD_INPUT = 2

console = Console(stderr=True, log_path=False)
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


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


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
    previous = {sig: signal.signal(sig, state.handler) for sig in _STOP_SIGNALS}
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


def base_port(value: str) -> int:
    try:
        port = int(value.strip(), 10) if value.strip().isascii() else int("x")
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer port, got {value!r}") from None
    if not 1024 <= port <= 65528:
        raise argparse.ArgumentTypeError(f"must be between 1024 and 65528, got {port}")
    return port


_MAX_QUEUE_SIZE = 10_000_000


def queue_size(value: str) -> int:
    try:
        size = int(value.strip(), 10) if value.strip().isascii() else int("x")
    except ValueError:
        size = 0
    if not 1 <= size <= _MAX_QUEUE_SIZE:
        raise argparse.ArgumentTypeError(
            f"must be an integer between 1 and {_MAX_QUEUE_SIZE:,}, got {value!r}"
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


# How a command module plugs into the parser (see loadgate/cli/__init__.py): its
# `register(sub)` adds its sub-parser to `sub` and sets `handler` on it (seams.Handler).
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # pyright: ignore[reportPrivateUsage]
