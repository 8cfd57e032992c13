"""Run a command inside control groups and on chosen CPUs:
`cgexec.py [--join G/cgroup.procs ...] [--cpus 1,3] -- ARGV...`.

Writes its own PID into each group's cgroup.procs and sets its CPU affinity (`--cpus`, the
CPU numbers the workload may run on: cpu_split.py), then replaces itself with ARGV (same PID,
so Pebble supervises the workload itself and the kernel charges it to the groups, and keeps
it on those CPUs, from its first instruction). A group it cannot join or CPUs it cannot take
stop it with exit code 125 and the reason on stderr: a limit is never silently left out.

Run by path with `python -I`: the standard library only, no loadgate import.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Sequence

_USAGE = "usage: cgexec.py [--join CGROUP_PROCS ...] [--cpus N[,N...]] -- COMMAND [ARG...]"
EXIT_CANNOT_JOIN = 125


def prefix(groups: Sequence[str] = (), cpus: Collection[int] | None = None) -> list[str]:
    """The argv prefix that runs a command through this wrapper: joining `groups` (their
    cgroup.procs files) and on `cpus`."""
    argv = [sys.executable, "-I", os.path.abspath(__file__)]
    for procs in groups:
        argv += ["--join", procs]
    if cpus:
        argv += ["--cpus", ",".join(str(n) for n in sorted(cpus))]
    return [*argv, "--"]


def unwrap(argv: list[str]) -> tuple[list[str], set[int] | None, list[str]]:
    """(groups, CPUs, command) of an argv that `prefix` made; any other argv is the command
    itself, with no groups and no CPUs."""
    if argv[1:3] != ["-I", os.path.abspath(__file__)]:
        return [], None, argv
    return _parse(argv[3:])


def split(argv: list[str]) -> tuple[list[str], list[str]]:
    """(cgroup.procs files, command) from the arguments; ValueError when malformed."""
    groups, _, command = _parse(argv)
    return groups, command


def _parse(argv: list[str]) -> tuple[list[str], set[int] | None, list[str]]:
    """(cgroup.procs files, CPUs or None, command); ValueError when malformed."""
    if "--" not in argv:
        raise ValueError(_USAGE)
    cut = argv.index("--")
    head, command = argv[:cut], argv[cut + 1 :]
    if not command or len(head) % 2 or any(flag not in ("--join", "--cpus") for flag in head[::2]):
        raise ValueError(_USAGE)
    pairs = list(zip(head[::2], head[1::2], strict=True))
    cpus = [value for flag, value in pairs if flag == "--cpus"]
    if len(cpus) > 1:
        raise ValueError(_USAGE)
    try:
        chosen = {int(n) for n in cpus[0].split(",")} if cpus else None
    except ValueError:
        raise ValueError(f"--cpus: CPU numbers separated by commas; got {cpus[0]!r}") from None
    return [value for flag, value in pairs if flag == "--join"], chosen, command


def main(argv: list[str]) -> int:
    try:
        groups, cpus, command = _parse(argv)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    if cpus is not None:
        try:
            os.sched_setaffinity(0, cpus)
        except OSError as exc:
            why = exc.strerror or exc
            print(f"cgexec: cannot run on CPUs {sorted(cpus)}: {why}", file=sys.stderr)
            return EXIT_CANNOT_JOIN
    pid = str(os.getpid())
    for procs in groups:
        try:
            with open(procs, "w") as out:
                out.write(pid)
        except OSError as exc:
            print(f"cgexec: cannot join {procs}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_CANNOT_JOIN
    try:
        os.execvp(command[0], command)  # noqa: S606 (an argv list, no shell; PATH as Pebble)
    except OSError as exc:
        print(f"cgexec: cannot run {command[0]}: {exc.strerror or exc}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
