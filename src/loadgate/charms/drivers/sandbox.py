"""Keep a charm's code from touching this machine while it runs in ops.testing.

Runs inside the charm's own virtualenv (standard library only). Three layers:

- `intercept_commands`: `subprocess.run`, `call`, `check_call`, `check_output` and `os.system`
  are replaced by a recorder that answers success without starting anything (a charm runs
  `update-ca-certificates` on its own container, which is this machine here);
- `HostPaths`: a charm module's `Path` is swapped for a subclass that sends I/O under the given
  host prefixes (e.g. the trust store) into a sandbox folder, so the charm sees its writes;
- `install_guard`: an audit hook (PEP 578) refuses, for the rest of the process, any write,
  removal or rename outside the allowed folders, any new process and any network connection.
  A charm revision that does something new fails loudly, naming what it tried.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# Audit events whose first argument is a path the event changes.
_PATH_EVENTS = (
    "os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.utime",
    "os.chflags", "os.lchflags", "os.setxattr", "os.removexattr", "shutil.rmtree",
)  # fmt: skip
# Audit events with a source and a destination; the destination (and, for a move, the source)
# must be inside the sandbox.
_PAIR_EVENTS = ("os.rename", "os.link", "os.symlink", "shutil.move", "shutil.copyfile")
_SPAWN_EVENTS = (
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
    "os.forkpty", "pty.spawn",
)  # fmt: skip


class _SandboxError(PermissionError):
    """The charm tried to change this machine, start a process or reach the network."""


@dataclass
class Journal:
    """What the sandbox intercepted: commands answered without running, redirected paths."""

    commands: list[list[str]] = field(default_factory=list)
    redirected: set[str] = field(default_factory=set)

    def to_dict(self) -> dict[str, Any]:
        return {"commands": self.commands, "redirected": sorted(self.redirected)}


def _argv(args: Any) -> list[str]:
    if isinstance(args, str | bytes):
        return [os.fsdecode(args)]
    return [os.fsdecode(a) if isinstance(a, str | bytes | os.PathLike) else str(a) for a in args]


def intercept_commands(journal: Journal) -> None:
    """Replace the subprocess conveniences with a recorder that reports success."""

    def run(args: Any, *_: Any, **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        argv = _argv(args)
        journal.commands.append(argv)
        text = kwargs.get("text") or kwargs.get("universal_newlines") or kwargs.get("encoding")
        empty: str | bytes = "" if text else b""
        return subprocess.CompletedProcess(argv, 0, empty, empty)

    def call(args: Any, *a: Any, **kw: Any) -> int:
        return run(args, *a, **kw).returncode

    def check_output(args: Any, *a: Any, **kw: Any) -> Any:
        return run(args, *a, **kw).stdout

    def system(command: str) -> int:
        journal.commands.append(["sh", "-c", command])
        return 0

    subprocess.run = run  # type: ignore[assignment]
    subprocess.call = call  # type: ignore[assignment]
    subprocess.check_call = call  # type: ignore[assignment]
    subprocess.check_output = check_output  # type: ignore[assignment]
    os.system = system


def host_path_class(sandbox: pathlib.Path, prefixes: Sequence[str], journal: Journal) -> type:
    """A `pathlib.Path` subclass whose file-system I/O under `prefixes` happens in `sandbox`.

    `str()` of such a path stays the real path (a charm may push it into its workload
    container by that name); only the OS calls (which go through `os.fspath`) are redirected.
    """
    base = type(pathlib.Path())

    class SandboxedPath(base):  # type: ignore[misc, valid-type]
        def __fspath__(self) -> str:
            real = str(self)
            for prefix in prefixes:
                if real == prefix or real.startswith(prefix.rstrip("/") + "/"):
                    journal.redirected.add(real)
                    return str(sandbox) + real
            return real

    for prefix in prefixes:
        (sandbox / prefix.lstrip("/")).mkdir(parents=True, exist_ok=True)
    return SandboxedPath


def _as_text(path: Any) -> str | None:
    if isinstance(path, int):
        return None  # a file descriptor that is already open
    try:
        return os.path.abspath(os.fsdecode(path))
    except TypeError:
        return None


def _inside(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def install_guard(allowed: Sequence[str | os.PathLike[str]]) -> None:
    """From now on, refuse writes outside `allowed`, new processes and network connections."""
    roots = (*(os.path.realpath(os.fspath(a)) for a in allowed), "/dev/null")

    def check_path(event: str, raw: Any) -> None:
        path = _as_text(raw)
        if path is None:
            return
        real = os.path.realpath(path)
        if not _inside(real, roots):
            raise _SandboxError(f"charm sandbox: {event} of {path} refused (outside sandbox)")

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = (*args, None, None, None)[:3]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
            )
            if writes:
                check_path("write", path)
        elif event in _PATH_EVENTS and args:
            check_path(event, args[0])
        elif event in _PAIR_EVENTS and len(args) >= 2:
            check_path(event, args[1])
            if event in ("os.rename", "shutil.move"):
                check_path(event, args[0])
        elif event in _SPAWN_EVENTS:
            argv = args[1] if event == "subprocess.Popen" and len(args) > 1 else args[:1]
            shown = " ".join(_argv(argv))
            raise _SandboxError(f"charm sandbox: {event} refused ({shown})")
        elif event == "socket.connect" and len(args) >= 2:
            raise _SandboxError(f"charm sandbox: network connection to {args[1]!r} refused")

    sys.addaudithook(hook)
