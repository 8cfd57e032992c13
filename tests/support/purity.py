"""The unit suite's purity guard: a test there that starts a process or opens a socket fails.

tests/unit promises no processes and no network. `Guard` replaces the few places every way of
starting a process goes through (subprocess.Popen's child start, os.fork/forkpty/posix_spawn/
exec*/system) and the socket calls that reach the network or listen on it (connect, connect_ex,
bind) with refusals that name what was attempted. A refusal raises `ImpureTestError` at the call
and is also remembered, so the test still fails, with that message, when the code under test
swallows the error (`except Exception`) or fails some other way because of it. Tests that need
such things belong in tests/tools.

`guarded(item, known)` wraps one phase (setup, call, teardown) of a test; tests/unit/conftest.py
wraps all three, so a fixture of any scope that spawns a tool fails the first test needing it.
A test listed as known to be impure runs with the guard only watching, and fails once it
passes without doing anything impure (so that its entry is removed).
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

MOVE_HINT = (
    "tests/unit is pure (no processes, no network): give the code a seam to stand in for it, "
    "or move the test to tests/tools"
)
# Every os function that forks or replaces the process; subprocess goes through its own method.
OS_PROCESS_FUNCTIONS = (
    "fork",
    "forkpty",
    "posix_spawn",
    "posix_spawnp",
    "system",
    "execv",
    "execve",
    "execl",
    "execle",
    "execlp",
    "execlpe",
    "execvp",
    "execvpe",
)
SOCKET_METHODS = ("connect", "connect_ex", "bind")
# The classes themselves, taken at import: a test may replace the names (subprocess.Popen).
POPEN = subprocess.Popen
SOCKET = socket.socket
SEEN = pytest.StashKey[list[str]]()


class ImpureTestError(AssertionError):
    """A unit test started a process or opened a socket."""


class Guard:
    """While active: process starts and socket connect/bind are remembered, and refused unless
    the guard only watches (then they go ahead)."""

    def __init__(self, *, refuse: bool = True) -> None:
        self.refuse = refuse
        self.attempts: list[str] = []

    def _attempt(self, what: str, original: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        message = f"{what}: {MOVE_HINT}"
        self.attempts.append(message)
        if self.refuse:
            raise ImpureTestError(message)
        return original(*args, **kw)

    def _os(self, name: str) -> Callable[..., Any]:
        original = getattr(os, name)

        def guarded(*args: Any, **kw: Any) -> Any:
            what = f"started a process: os.{name}({_shown(args)})"
            return self._attempt(what, original, *args, **kw)

        return guarded

    def _popen(self) -> Callable[..., Any]:
        original = POPEN._execute_child  # pyright: ignore[reportAttributeAccessIssue]

        def guarded(popen: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> Any:
            what = f"started a process: subprocess.Popen({_shown((args,))})"
            return self._attempt(what, original, popen, args, *rest, **kw)

        return guarded

    def _socket(self, name: str) -> Callable[..., Any]:
        original = getattr(SOCKET, name)

        def guarded(sock: socket.socket, *args: Any, **kw: Any) -> Any:
            what = f"opened a socket: socket.{name}({_shown(args)})"
            return self._attempt(what, original, sock, *args, **kw)

        return guarded

    @contextmanager
    def active(self) -> Generator[Guard]:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(POPEN, "_execute_child", self._popen())
            for name in OS_PROCESS_FUNCTIONS:
                if hasattr(os, name):
                    patch.setattr(os, name, self._os(name))
            for name in SOCKET_METHODS:
                patch.setattr(SOCKET, name, self._socket(name))
            yield self


def guarded(
    item: pytest.Item, known: Mapping[str, str], is_call: bool = False
) -> Generator[None, object, object]:
    """A hook wrapper's body: one phase of `item` under a Guard (see the module's docstring).

    `known` names the tests known to be impure (node id -> why); one that passed (checked after
    its call phase) without doing anything impure fails.
    """
    is_known = item.nodeid in known
    guard = Guard(refuse=not is_known)
    seen = item.stash.setdefault(SEEN, [])
    with guard.active():
        try:
            outcome = yield
        except BaseException as exc:
            if guard.attempts and not is_known and not isinstance(exc, ImpureTestError):
                raise ImpureTestError("\n".join(guard.attempts)) from exc
            raise
    seen += guard.attempts
    if guard.attempts and not is_known:
        raise ImpureTestError("\n".join(guard.attempts))
    if is_known and is_call and not seen:
        raise ImpureTestError(
            f"{item.nodeid} is listed as known to start a process or open a socket "
            f"({known[item.nodeid]}) and did neither: remove it from the list"
        )
    return outcome


def _shown(args: tuple[Any, ...]) -> str:
    text = ", ".join(map(repr, args))
    return text if len(text) <= 300 else text[:297] + "..."
