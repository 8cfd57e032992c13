"""The CPU steal's worker: `cpu_steal.py ARM_FILE`. A known regression on demand of the machine
the pipeline runs on (`--hand cpu-steal=N`, steal_service.py).

It spins on the CPU while the time in ARM_FILE (seconds since the epoch, written at each run's
load start) lies ahead, and sleeps otherwise: it burns only while a run of its own stack
loads, and stops by itself when that time passes. How much it takes is not its business: it
runs in a control group whose CFS quota is the stolen share (the kernel throttles it there),
on the pipeline's CPUs (cgexec.py), so the collector and Loki get the rest.

Run by path with `python -I`: the standard library only, no loadgate import.
"""

from __future__ import annotations

import sys
import time

SERVICE = "cpu-steal"  # its Pebble service, its group's role, its name in a run's CPU figures
# How often an unarmed worker looks at its file, and how long an armed one spins before it
# looks again (a disarm takes effect within this).
IDLE_POLL_S = 0.05
SPIN_SLICE_S = 0.25


def armed_until(text: str) -> float:
    """The time the file holds (0: not armed, for anything but one number)."""
    try:
        value = float(text.strip())
    except ValueError:
        return 0.0
    return value if value == value and value > 0 else 0.0  # NaN is not armed


def _read(path: str) -> float:
    try:
        with open(path) as armed:
            return armed_until(armed.read())
    except OSError:
        return 0.0


def spin(until: float) -> None:
    """Busy until `until` (epoch seconds): the work the quota cuts short."""
    while time.time() < until:
        pass


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: cpu_steal.py ARM_FILE", file=sys.stderr)
        return 2
    path = argv[0]
    while True:
        until = _read(path)
        now = time.time()
        if until > now:
            spin(min(until, now + SPIN_SLICE_S))
        else:
            time.sleep(IDLE_POLL_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
