"""The stack session (loadgate.stack.session) on its own, without the command line: plain
values in, what it found told, its refusals raised (the command line's use of it:
test_run_flow)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from stackinfos import DEAD, healthy, info_of
from support.fakes.target import FakeTarget

from loadgate.stack import local, runlock, session
from loadgate.stack.ops import StackOps
from loadgate.stack.ports import Ports
from loadgate.stack.profile import Profile


@dataclass
class World:
    """A stack directory with recorders for what a session does and tells."""

    root: Path
    running: local.StackInfo | None = None
    said: list[str] = field(default_factory=list[str])
    started: list[local.Owner] = field(default_factory=list[local.Owner])
    downs: int = 0
    targets: list[FakeTarget] = field(default_factory=list[FakeTarget])  # opened, in order
    guarded: int = 0

    def ops(self) -> StackOps:
        return StackOps(
            down=self.down,
            read_info=lambda root: self.running,
            status=lambda root: healthy(self.info()),
            leftovers=lambda info: [],
        )

    def info(self) -> local.StackInfo:
        assert self.running is not None
        return self.running

    def down(self, root: Path | None = None, timeout: float = 20.0) -> list[str]:
        self.downs += 1
        return []

    def start(self, what: local.StackChoice, ports: Ports, owner: local.Owner) -> local.StackInfo:
        self.started.append(owner)
        return info_of(self.root, owner)

    def open_target(self, info: local.StackInfo) -> FakeTarget:
        self.targets.append(FakeTarget())
        return self.targets[-1]

    @property
    def closed(self) -> int:
        return sum(t.closed for t in self.targets)

    def found(self, text: str) -> None:
        self.said.append(text)

    def using(self, info: local.StackInfo) -> None:
        self.said.append(f"using {info.root}")

    def stopped(self) -> None:
        self.said.append("stopped")

    @contextlib.contextmanager
    def guard(self) -> Generator[None]:
        self.guarded += 1
        yield

    def hands(self) -> session.Hands[FakeTarget]:
        return session.Hands(self.ops(), self.start, self.open_target, self, self.guard)

    def request(self, *, keep: bool = False) -> session.SessionRequest:
        return session.SessionRequest(self.root, "run", "r1", Profile(), None, keep)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path / "stack")


@pytest.mark.parametrize("keep", [False, True])
def test_a_stack_the_session_started_is_stopped_at_its_end_unless_kept(
    world: World, keep: bool
) -> None:
    with session.local_session(world.request(keep=keep), world.hands()) as target:
        assert target is world.targets[0]
        assert runlock.is_locked(world.root)
    assert [(o.run_id, o.keep) for o in world.started] == [("r1", keep)]
    assert world.closed == 1
    assert (world.downs, world.said) == ((0, []) if keep else (1, ["stopped"]))
    assert not runlock.is_locked(world.root)


def test_a_running_stack_is_used_and_left_running(world: World) -> None:
    world.running = info_of(world.root, owner=None)
    with session.local_session(world.request(), world.hands()):
        pass
    assert world.started == []
    assert world.downs == 0
    assert world.said == [f"using {world.root}"]


def test_a_running_stack_on_other_ports_is_refused_before_the_target_opens(world: World) -> None:
    world.running = info_of(world.root, owner=None)
    request = session.SessionRequest(world.root, "run", "r1", Profile(), 25800, False)
    refused = pytest.raises(local.StackError, match="other ports than --base-port")
    with refused, session.local_session(request, world.hands()):
        raise AssertionError("the body ran")
    assert (world.closed, world.downs) == (0, 0)
    assert not runlock.is_locked(world.root)


def test_the_lock_tells_of_a_holder_that_died_and_is_released_under_the_guard(
    world: World,
) -> None:
    world.root.mkdir(parents=True)
    dead = runlock.Holder(DEAD, "search", "crashed", 1.0)
    runlock.lock_path(world.root).write_text(json.dumps(dead.to_dict()))
    busy = pytest.raises(runlock.BusyError)
    with session.held_lock(world.root, "compare", "c1", world.found, world.guard), busy:
        runlock.acquire(world.root, runlock.Holder.me("run", "other"))
    assert world.said == [f"found: {dead.describe()} died while it held the stack at {world.root}"]
    assert world.guarded == 1
    assert not runlock.is_locked(world.root)


def test_a_free_run_dir_stops_an_abandoned_stack_and_refuses_a_running_one(
    world: World,
) -> None:
    session.free_run_dir(world.root, world.ops(), world.found, world.guard)
    assert (world.said, world.downs) == ([], 0)  # nothing there
    world.running = info_of(world.root, owner=local.Owner(DEAD, "killed-run", keep=False))
    session.free_run_dir(world.root, world.ops(), world.found, world.guard)
    assert world.said == [
        f"found: a stack at {world.root} left by a run that ended without stopping it: stopped"
    ]
    assert (world.downs, world.guarded) == (1, 1)
    world.running = info_of(world.root, owner=None)
    with pytest.raises(session.StackRunning) as refused:
        session.free_run_dir(world.root, world.ops(), world.found, world.guard)
    assert str(refused.value) == f"a stack is running at {world.root} ({world.running.name})"
    assert world.downs == 1
