"""Both sides' stacks kept up for the whole comparison (`compare --stacks kept`, the default).

Each side's stack starts on that side's first repeat (the baseline's in the stack's run
directory at its ports, the candidate's in a sibling directory at ports of its own) and
stays up until the comparison ends, when both are stopped (always, also on Ctrl-C). Each
repeat's runs (`repeat.LocalRepeats`'s list) run on its side's stack, which has carried the
earlier repeats' load.

Why: measured on this machine (docs/measurements.md), a fresh stack's saturation and CPU per
record differ from the next fresh stack's of the same side by 2-3 times what the windows on one
stack differ by; with every repeat on a fresh stack that spread is the pair's, and a 4-pair
comparison cannot resolve a few percent. Kept stacks turn the comparison into alternating
windows on two running stacks, and save each repeat its stack start and stop (about a quarter
of a repeat's wall time), so more pairs fit the budget. A drift both stacks share (the machine
slowing down over minutes, each stack's store growing) is shared by both sides of each pair.

What a side's stack does not start (`AbortedError`) is as with fresh stacks: the baseline's
aborts the comparison, the candidate's is its failure (every value unknown), tried again on
its next repeat.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import ClassVar

from loadgate.capacity.compare.repeat import LocalRepeats
from loadgate.capacity.compare.rule import BASELINE
from loadgate.capacity.compare.sides import ComparedStack
from loadgate.capacity.compare.stack_modes import KEPT
from loadgate.stack import local
from loadgate.stack.ports import Ports

CANDIDATE_DIR_SUFFIX = "-candidate"
# The candidate's ports: this many above the baseline's base port, or from this base when the
# baseline runs at the standard ports (which are not consecutive).
CANDIDATE_PORT_OFFSET = 10
STANDARD_CANDIDATE_BASE = 24300


def candidate_root(root: Path) -> Path:
    """The candidate's run directory beside the stack's: `<stack dir>-candidate`."""
    return root.with_name(root.name + CANDIDATE_DIR_SUFFIX)


def candidate_ports(base_port: int | None) -> Ports:
    """The candidate stack's ports for a baseline at `base_port` (None: the standard ports).
    ValueError when they would pass the last port."""
    if base_port is None:
        return Ports.from_base(STANDARD_CANDIDATE_BASE)
    try:
        return Ports.from_base(base_port + CANDIDATE_PORT_OFFSET)
    except ValueError:
        last = 65535 - 7 - CANDIDATE_PORT_OFFSET
        raise ValueError(
            f"base port: at most {last} when both sides' stacks are kept up (the candidate's "
            f"ports start {CANDIDATE_PORT_OFFSET} above it); got {base_port}"
        ) from None


@dataclass
class KeptRepeats(LocalRepeats):
    """`LocalRepeats` on both sides' stacks kept up: a side's stack starts on its first repeat
    and is stopped by `close` (the caller's, always)."""

    STACKS: ClassVar[str] = KEPT

    candidate_root: Path = field(kw_only=True)
    candidate_ports: Ports = field(kw_only=True)
    # What is up, not a setting: left out of equality and repr.
    _up: dict[str, local.StackInfo] = field(
        default_factory=dict[str, local.StackInfo], init=False, repr=False, compare=False
    )
    _held: contextlib.ExitStack = field(
        default_factory=contextlib.ExitStack, init=False, repr=False, compare=False
    )

    @classmethod
    def beside(cls, repeats: LocalRepeats, root: Path, ports: Ports) -> KeptRepeats:
        """`repeats`' settings, on kept stacks: the candidate's at `root` and `ports`."""
        given = {f.name: getattr(repeats, f.name) for f in fields(repeats) if f.init}
        return cls(**given, candidate_root=root, candidate_ports=ports)

    def _where(self, stack: ComparedStack) -> tuple[Path, Ports]:
        if stack.role == BASELINE:
            return self.root, self.ports
        return self.candidate_root, self.candidate_ports

    @contextlib.contextmanager
    def _stack(self, stack: ComparedStack, run_id: str) -> Generator[local.StackInfo]:
        """The side's running stack, started on its first repeat (AbortedError when it does
        not start: nothing is held, and its next repeat tries again); not stopped here."""
        info = self._up.get(stack.role)
        if info is None:
            info = self._held.enter_context(super()._stack(stack, run_id))
            self._up[stack.role] = info
        else:
            self._phase(f"stack kept: {stack.role} ({stack.name})")
        yield info

    def close(self) -> None:
        """Both stacks stopped (under the guard: a stop signal waits for it)."""
        with self.guard():
            self._up.clear()
            self._held.close()
