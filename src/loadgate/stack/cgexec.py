"""Run a command inside control groups: `cgexec.py --join G/cgroup.procs [...] -- ARGV...`.

Writes its own PID into each group's cgroup.procs, then replaces itself with ARGV (same PID,
so Pebble supervises the workload itself and the kernel charges it to the groups from its first
instruction). A group it cannot join stops it with exit code 125 and the reason on stderr:
a limit is never silently left out.

Run by path with `python -I`: the standard library only, no loadgate import.
"""

from __future__ import annotations

import os
import sys

USAGE = "usage: cgexec.py --join CGROUP_PROCS [--join ...] -- COMMAND [ARG...]"
EXIT_CANNOT_JOIN = 125


def split(argv: list[str]) -> tuple[list[str], list[str]]:
    """(cgroup.procs files, command) from the arguments; ValueError when malformed."""
    if "--" not in argv:
        raise ValueError(USAGE)
    cut = argv.index("--")
    head, command = argv[:cut], argv[cut + 1 :]
    if not command or len(head) % 2 or any(flag != "--join" for flag in head[::2]):
        raise ValueError(USAGE)
    return head[1::2], command


def main(argv: list[str]) -> int:
    try:
        groups, command = split(argv)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
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
