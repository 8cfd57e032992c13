"""The flags several commands share, each declared once with its one limit: the run parameters
(`add_load_flags`, from the table in loadgate.contract.params), `--drain-timeout`,
`--keep-stack` and the stack flags (`add_stack_flags`, read back as one `StackFlags`)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..contract.params import BY_NAME, Param, Value
from ..stack import choice, hand
from ..stack.choice import StackFlags
from .charms import add_source_flags
from .common import UsageError, base_port, queue_size, seconds_flag

_DEFAULT_DRAIN_TIMEOUT = 60.0
MAX_DRAIN_TIMEOUT = 24 * 3600.0


def add_load_flags(
    p: argparse.ArgumentParser, names: Sequence[str], defaults: Mapping[str, Value] | None = None
) -> None:
    """A flag per run parameter in `names` (`--vus`, ...), its help and default from the table;
    `defaults`: this command's own, shown and used instead. The values stay text: the command
    checks them with RunSpec.from_params, which names every bad flag at once."""
    own = defaults or {}
    for name in names:
        param = BY_NAME[name]
        if name in own:
            param = replace(param, default=own[name], default_help="")
        p.add_argument(f"--{name}", default=own.get(name), help=_load_flag_help(param))


def _load_flag_help(param: Param) -> str:
    """`the k6 executor, one of a, b (default b)`, as argparse shows it."""
    choices = f", one of {', '.join(param.choices)}" if len(param.choices) > 1 else ""
    return f"{param.help}{choices} (default {param.shown_default})".replace("%", "%%")


def load_params(args: argparse.Namespace, names: Iterable[str]) -> dict[str, Any]:
    """The run parameters among `names` given on the command line, for RunSpec.from_params."""
    given = {name: getattr(args, name.replace("-", "_")) for name in names}
    return {name: value for name, value in given.items() if value is not None}


def invalid_flags(problems: Iterable[tuple[str, str]]) -> UsageError:
    """One refusal naming every bad flag (`--name`) with what is allowed."""
    return UsageError("invalid flags:\n" + "\n".join(f"  {flag}: {why}" for flag, why in problems))


def add_drain_timeout(p: argparse.ArgumentParser, what: str) -> None:
    """`--drain-timeout`: seconds `what` (e.g. "to wait for the queue to drain")."""
    p.add_argument(
        "--drain-timeout",
        type=seconds_flag(0, MAX_DRAIN_TIMEOUT, allow_low=True),
        default=_DEFAULT_DRAIN_TIMEOUT,
        help=f"seconds {what} (default {_DEFAULT_DRAIN_TIMEOUT:g})",
    )


def add_keep_stack(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument(
        "--keep-stack", action="store_true", help=f"leave a stack this {command} started up"
    )


def add_stack_flags(p: argparse.ArgumentParser) -> None:
    """The flags that choose and place a local stack (stack up, run, search, compare)."""
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
        type=queue_size,
        help="the otelcol charm's queue_size option (default 1000), as --charm-config",
    )
    add_source_flags(p)
    p.add_argument(
        "--base-port",
        type=base_port,
        help="move every port of the stack to base, base+1, ... (default: standard ports)",
    )
    p.add_argument(
        "--backend-fault",
        metavar="FAULTS",
        help="a proxy between the collector and Loki that injects faults, e.g. "
        "503=0.7,delay=1s@0.5,outage=20s+15s,until=60s,seed=1 (default: none)",
    )
    p.add_argument(
        "--hand",
        action="append",
        default=[],
        metavar="K=V",
        help="a change no otelcol charm option gives, made by hand on its rendering "
        "(repeatable): " + "; ".join(f"{k}: {v}" for k, v in hand.ALLOWED.items()),
    )


def stack_flags(args: argparse.Namespace) -> StackFlags:
    """The stack flags of a parser that has `add_stack_flags`, typed."""
    return StackFlags(
        profile=args.profile,
        queue_size=args.queue_size,
        otelcol_charm=args.otelcol_charm,
        loki_charm=args.loki_charm,
        charm_config=tuple(args.charm_config),
        loki_config=tuple(args.loki_config),
        base_port=args.base_port,
        signals=tuple(args.signals),
        backend_fault=args.backend_fault,
        hand=tuple(args.hand),
    )
