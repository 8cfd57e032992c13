"""The `loadgate` command line: the parser, assembled from one module per command, and the
dispatch to the command's handler.

Layout (each command is a module of this package):

- `common`: the consoles, exit codes, `UsageError`, error/notice lines, stop signals handled
  like Ctrl-C (`signals_stop_like_ctrl_c`, `shielded`, `Interrupted`), shared flag types.
- `flags`: the flags several commands share, each declared once (the run parameters from
  loadgate.contract.params, `--drain-timeout`, `--keep-stack`, the stack flags).
- `seams`: `Seams`, what the commands do to the world (resolve and start stacks, build
  binaries, run, search); `main(argv, seams=...)` hands fakes to the handlers in tests.
- `binaries`, `stack`, `run`, `search`, `compare`, `calibrate`, `matrix`, `bench`,
  `check_bundle`, `charms`, `report`: one command each.

A command module has `register(sub)`: it adds its sub-parser (`sub.add_parser(name, ...)`), its
flags, and `set_defaults(handler=...)`, the function that takes the parsed flags and the
`Seams` and returns the exit code (bad input raises `common.UsageError`; `main` prints it and
exits 2). To add a command, write its module and list it in `COMMANDS` below, in the order
`loadgate --help` shows it. Domain code (runner, pipeline, stack, charms, targets, …) never
imports this package.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from typing import Protocol

from .. import __version__
from . import (
    bench,
    binaries,
    calibrate,
    charms,
    check_bundle,
    compare,
    matrix,
    report,
    run,
    search,
    stack,
)
from .common import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_OK,
    Interrupted,
    Subparsers,
    UsageError,
    console,
    error,
    signals_stop_like_ctrl_c,
)
from .seams import Handler, Seams

__all__ = [
    "COMMANDS",
    "EXIT_BAD_INPUT",
    "EXIT_GATE_FAILED",
    "EXIT_OK",
    "Seams",
    "build_parser",
    "main",
]


class _Command(Protocol):
    """A command module: `register` adds its sub-parser, flags and handler to `sub`."""

    def register(self, sub: Subparsers) -> None: ...


COMMANDS: tuple[_Command, ...] = (
    binaries,
    stack,
    run,
    search,
    compare,
    calibrate,
    matrix,
    bench,
    check_bundle,
    charms,
    report,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loadgate",
        description="Load gates for the Canonical observability stack.",
    )
    parser.add_argument("--version", action="version", version=f"loadgate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None, *, seams: Seams | None = None) -> int:
    """Run the command `argv` names (default: the process's arguments); `seams`: what it does to
    the world (default the real stack, binaries and runs; tests give fakes)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as typed (calibrate records it)
    try:
        with signals_stop_like_ctrl_c():
            return _dispatch(parser, args, seams or Seams())
    except UsageError as exc:
        error(args.command, exc)
        return EXIT_BAD_INPUT
    except Interrupted as exc:
        console.print(f"[yellow]interrupted ({exc.args[0]})[/yellow]")
        return exc.exit_code
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/yellow]")
        return 128 + signal.SIGINT


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace, seams: Seams) -> int:
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.error(f"unknown command {args.command}")
        return EXIT_BAD_INPUT
    return handler(args, seams)
