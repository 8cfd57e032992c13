"""The local stack for one command: its run lock, what a dead run left, and the stack itself.

- `held_lock`: the stack's run lock for the command (`run`, `search`, `compare`, `matrix`),
  with a note when the previous holder died while it held it.
- `local_session` (`run`, `search`): the lock, a k6 left by a dead run stopped, then the
  running stack used (if it is the one asked for, and whole; one abandoned by a dead run is
  stopped) or one started; the target on it is yielded. At the end the stack is stopped only
  if this command started it and was not told to keep it.
- `free_run_dir` (`compare`, `matrix`, which start a fresh stack for every run): a k6 or a
  stack left by a dead run stopped; a running stack refused.
- `fresh_stack` (`compare`, `matrix`): one of those fresh stacks, up for the block and stopped
  after it, always.

Plain values in; what it finds and does is told to the caller (`Tell`), who says it; refusals
are errors: runlock.BusyError (another command holds the stack), local.StackError (a running
stack that is broken or not the one asked for), StackRunning (a running stack where a command
needs the run directory free). Clean-ups run under the caller's `guard` (the command line's
keeps a stop signal from cutting them short).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from . import choice, local, orphans, runlock
from .ops import StackOps
from .ports import Ports
from .procs import ProcessId

Guard = Callable[[], contextlib.AbstractContextManager[None]]


class Tell(Protocol):
    """What a session found and did, for the caller to say."""

    def found(self, text: str) -> None:
        """What a dead run left, and what was done about it (`found: ...`)."""
        ...

    def using(self, info: local.StackInfo) -> None:
        """The running stack is used."""
        ...

    def stopped(self) -> None:
        """The stack this command started was stopped at its end."""
        ...


class _Closable(Protocol):
    def close(self) -> None: ...


_T = TypeVar("_T", bound=_Closable)


class StackRunning(local.StackError):
    """A stack runs where a command needs the run directory free."""

    def __init__(self, root: Path, name: str):
        super().__init__(f"a stack is running at {root} ({name})")
        self.root = root
        self.name = name


@dataclass(frozen=True)
class SessionRequest:
    """The stack one command asks for."""

    root: Path  # the stack's run directory
    command: str  # run, search: who holds the lock
    run_id: str
    what: local.StackChoice
    base_port: int | None  # None: the standard ports
    keep: bool  # leave a stack this command started up


@dataclass(frozen=True)
class Hands(Generic[_T]):
    """What a session acts with: the stack's operations, how a stack is started (the caller's,
    with its progress), how the target on it is opened, whom it tells, and the guard of its
    clean-ups."""

    ops: StackOps
    start: Callable[[local.StackChoice, Ports, local.Owner], local.StackInfo]
    open_target: Callable[[local.StackInfo], _T]
    tell: Tell
    guard: Guard = contextlib.nullcontext


@contextlib.contextmanager
def held_lock(
    root: Path,
    command: str,
    run_id: str,
    found: Callable[[str], None],
    guard: Guard = contextlib.nullcontext,
) -> Generator[runlock.RunLock]:
    """The stack's run lock, held by `command` (run `run_id`) until the end; `found` is told
    when its previous holder died while it held it. runlock.BusyError: another holds it."""
    lock = runlock.acquire(root, runlock.Holder.me(command, run_id))
    try:
        previous = lock.previous
        if previous is not None and previous.process != lock.holder.process:
            found(f"found: {previous.describe()} died while it held the stack at {root}")
        yield lock
    finally:
        with guard():
            lock.release()


@contextlib.contextmanager
def local_session(request: SessionRequest, hands: Hands[_T]) -> Generator[_T]:
    """The stack `request` asks for, under the lock, and the target on it (see the module).
    Errors of the body propagate after the clean-up."""
    root = request.root
    with held_lock(root, request.command, request.run_id, hands.tell.found, hands.guard):
        found = orphans.stop_orphan_k6(root)
        if found:
            hands.tell.found(f"found: {found}")
        info = _usable_stack(hands, root)
        started_here = info is None
        if info is None:
            owner = local.Owner(ProcessId.me(), request.run_id, keep=request.keep)
            info = hands.start(request.what, Ports.from_base(request.base_port), owner)
        else:
            _check_running_stack(hands.ops, info, request)
            hands.tell.using(info)
        try:
            target = hands.open_target(info)
            try:
                yield target
            finally:
                with hands.guard():
                    target.close()
        finally:
            if started_here and not request.keep:
                with hands.guard():
                    hands.ops.down(root)
                hands.tell.stopped()


def free_run_dir(
    root: Path,
    ops: StackOps,
    found: Callable[[str], None],
    guard: Guard = contextlib.nullcontext,
) -> None:
    """The run directory free for a fresh stack: a k6 or a stack left by a dead run stopped
    (`found` told); StackRunning when a stack runs there."""
    left = orphans.stop_orphan_k6(root)
    if left:
        found(f"found: {left}")
    info = ops.read_info(root)
    if info is None:
        return
    if info.abandoned:
        found(f"found: a stack at {root} left by a run that ended without stopping it: stopped")
        with guard():
            ops.down(root)
        return
    if info.pebble_alive():
        raise StackRunning(root, info.name)


def _usable_stack(hands: Hands[_T], root: Path) -> local.StackInfo | None:
    """The running stack at `root` this command may use; None when there is none (a stack
    abandoned by a dead run is stopped, with a note)."""
    ops = hands.ops
    info = ops.read_info(root)
    if info is not None and info.abandoned:
        owner = info.owner
        assert owner is not None
        left = [f"pebble (pid {info.pid})"] if info.pebble_alive() else []
        left += [f"{n} (pid {p})" for n, p in ops.leftovers(info) if p != info.pid]
        hands.tell.found(
            f"found: the stack at {root} was started by run {owner.run_id} (loadgate "
            f"pid {owner.process.pid}), which ended without stopping it"
            + (f"; still running: {', '.join(left)}" if left else "")
            + ": stopping it and starting a fresh one"
        )
        with hands.guard():
            ops.down(root)
        return None
    if info is not None and not info.pebble_alive():
        return None  # `up` stops on services left without their Pebble, with the fix
    return info


def _check_running_stack(ops: StackOps, info: local.StackInfo, request: SessionRequest) -> None:
    """A stack this command did not start: it must be the one asked for, and whole."""
    differ = choice.differences(request.what, info.charms, info.profile)
    if differ:
        raise local.StackError(
            f"the running stack is not the one this run asks for ({'; '.join(differ)}): "
            "stop it with `loadgate stack down` first"
        )
    base_port = request.base_port
    if base_port is not None and Ports.from_base(base_port) != info.ports:
        raise local.StackError(
            "the running stack uses other ports than --base-port asks; "
            "stop it with `loadgate stack down` first"
        )
    st = ops.status(info.root)
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


class NotStarted(local.StackError):
    """A fresh stack did not start (`fresh_stack`): what went wrong, from local.up."""


@dataclass(frozen=True)
class FreshStack:
    """Where and how a fresh stack starts (`fresh_stack`): its run directory and ports, the
    binaries, how long it may take to be healthy, and whose it is."""

    root: Path
    ports: Ports
    owner: local.Owner
    bin_dir: Path | None = None
    timeout: float = 60.0


@contextlib.contextmanager
def fresh_stack(
    ops: StackOps,
    what: local.StackChoice,
    where: FreshStack,
    on_step: Callable[[str], None],
    guard: Guard = contextlib.nullcontext,
) -> Generator[local.StackInfo]:
    """Start `what` for the block and stop it after, always (under `guard`, saying so).
    Raises NotStarted when it does not start (a broken service, a bad choice)."""
    try:
        info = ops.up(
            what, where.ports, root=where.root, bin_dir=where.bin_dir, timeout=where.timeout,
            owner=where.owner, on_step=on_step,
        )  # fmt: skip
    except (local.StackError, ValueError) as exc:
        raise NotStarted(str(exc)) from None
    try:
        yield info
    finally:
        with guard():
            on_step("stack down")
            ops.down(where.root)
