"""The `loadgate` command line: the parser, assembled from one module per command, and the
dispatch to the command's handler.

Layout (each command is a module of this package):

- `common`: the consoles, exit codes, `UsageError`, error/notice lines, stop signals handled
  like Ctrl-C (`signals_stop_like_ctrl_c`, `shielded`, `Interrupted`), shared flag types.
- `binaries`, `stack`, `run`, `search`, `compare`, `bench`, `check_bundle`, `charms`,
  `report`: one command each.

A command module has `register(sub)`: it adds its sub-parser (`sub.add_parser(name, ...)`), its
flags, and `set_defaults(handler=...)`, the function that takes the parsed flags and returns the
exit code (bad input raises `common.UsageError`; `main` prints it and exits 2). To add a command,
write its module and list it in `COMMANDS` below, in the order `loadgate --help` shows it.
Domain code (runner, pipeline, stack, charms, targets, …) never imports this package.
"""

from __future__ import annotations

import argparse
import signal
from collections.abc import Sequence
from typing import Protocol

from .. import __version__
from . import bench, binaries, charms, check_bundle, compare, report, run, search, stack
from .common import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_OK,
    Handler,
    Interrupted,
    Subparsers,
    UsageError,
    console,
    error,
    signals_stop_like_ctrl_c,
)

__all__ = ["COMMANDS", "EXIT_BAD_INPUT", "EXIT_GATE_FAILED", "EXIT_OK", "build_parser", "main"]


class Command(Protocol):
    """A command module: `register` adds its sub-parser, flags and handler to `sub`."""

    def register(self, sub: Subparsers) -> None: ...


COMMANDS: tuple[Command, ...] = (
    binaries,
    stack,
    run,
    search,
    compare,
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
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.error(f"unknown command {args.command}")
        return EXIT_BAD_INPUT
    return handler(args)
