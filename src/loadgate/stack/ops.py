"""The local stack's operations as one object, so that what drives a stack (`loadgate run`,
`search`, `stack up|down`, compare's repeats) is handed them: `StackOps()` is the real stack
(loadgate.stack.local); tests hand in fakes instead of patching module names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from . import local
from .ports import Ports


class Up(Protocol):
    """local.up: start the stack, return once every service is healthy."""

    def __call__(
        self,
        what: local.StackChoice,
        ports: Ports,
        *,
        root: Path | None = None,
        bin_dir: Path | None = None,
        timeout: float = 60.0,
        on_wait: Callable[[dict[str, bool], float], None] | None = None,
        owner: local.Owner | None = None,
        on_step: Callable[[str], None] | None = None,
    ) -> local.StackInfo: ...


class Down(Protocol):
    """local.down: stop every process of the stack; what was stopped."""

    def __call__(self, root: Path | None = None, timeout: float = 20.0) -> list[str]: ...


@dataclass(frozen=True)
class StackOps:
    up: Up = local.up
    down: Down = local.down
    read_info: Callable[[Path], local.StackInfo | None] = local.read_info
    status: Callable[[Path], local.StackStatus] = local.status
    leftovers: Callable[[local.StackInfo], list[tuple[str, int]]] = local.leftovers
