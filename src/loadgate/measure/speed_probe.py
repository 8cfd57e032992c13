"""The machine's speed while a run's load goes: a small fixed job, timed in its own CPU time.

On a shared VM the same work costs more CPU time in some minutes than in others (the host's
other tenants, its clock): on the development VM one pressure run in ten took 15-45 % more CPU
per record for every process at once, the collector, Loki, k6 and Prometheus alike
(docs/measurements.md). A run's CPU per record then says as much about the host as about the
collector. The probe measures the host: a process pinned to the pipeline's CPUs runs a fixed
job (`work`: interpreted Python, hashing and compression, about 2 ms) every `EVERY_S`, and
writes each job's CPU time (its thread's clock, in nanoseconds) with the wall time it ended.
The median over a load window is the run's probe figure; a run's CPU per record divided by it
is the collector's cost in jobs of the probe (compare's `pressure-cpu-probe`), so a slow
stretch that slows the probe as much cancels.

It costs the CPU it probes about 1 % (2 ms every 0.25 s), on both sides of a comparison alike.
It stops by itself after `--for` seconds, when its parent is gone, or on SIGTERM.

    python -m loadgate.measure.speed_probe --cpus 1 --out FILE [--for SECONDS]

The reading (`parse`, `median_ns`) is pure.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import statistics
import sys
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

EVERY_S = 0.25  # between jobs
ROUNDS = 12  # the job's rounds: about 2 ms on the development VM
MAX_LIFETIME_S = 6 * 3600.0  # `--for`'s default: it stops by itself
_TEXT = b"".join(b'level=info msg="record %d" service=loadgate\n' % i for i in range(256))


def work(rounds: int = ROUNDS) -> int:
    """The fixed job: a dict built and summed, the text hashed and compressed, `rounds` times.
    Returns a number that depends on all of it (so none of it is skipped)."""
    acc = 0
    for i in range(rounds):
        table = {f"k{j}": j * (i + 1) for j in range(300)}
        acc += sum(table.values()) % 9973
        acc ^= int.from_bytes(hashlib.sha256(_TEXT).digest()[:4], "big")
        acc += len(zlib.compress(_TEXT, 6))
    return acc


@dataclass(frozen=True)
class Sample:
    at: float  # wall time the job ended (epoch s)
    ns: int  # its CPU time


def parse(lines: Iterable[str]) -> list[Sample]:
    """The probe's file: one `<epoch s> <ns>` per line; a line that is not two numbers (a
    torn last line) is left out."""
    out: list[Sample] = []
    for line in lines:
        parts = line.split()
        if len(parts) != 2:
            continue
        try:
            out.append(Sample(float(parts[0]), int(parts[1])))
        except ValueError:
            continue
    return out


def median_ns(samples: Sequence[Sample], start: float, end: float) -> tuple[float | None, int]:
    """The median CPU time of the jobs that ended within [start, end], and how many did; None
    when fewer than 5 did (too few to say the machine's speed)."""
    inside = [s.ns for s in samples if start <= s.at <= end]
    if len(inside) < 5:
        return None, len(inside)
    return float(statistics.median(inside)), len(inside)


def read(path: Path, start: float, end: float) -> tuple[float | None, int]:
    """`median_ns` of the probe's file (None, 0 when it is missing)."""
    try:
        text = path.read_text()
    except OSError:
        return None, 0
    return median_ns(parse(text.splitlines()), start, end)


def _exit_on_term(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    sys.exit(0)


def _run(cpus: Sequence[int], out: Path, lifetime_s: float) -> int:
    if cpus:
        os.sched_setaffinity(0, set(cpus))
    signal.signal(signal.SIGTERM, _exit_on_term)
    parent = os.getppid()
    stop_at = time.monotonic() + lifetime_s
    with out.open("a", buffering=1) as sink:
        while time.monotonic() < stop_at and os.getppid() == parent:
            began = time.thread_time_ns()
            work()
            spent = time.thread_time_ns() - began
            sink.write(f"{time.time():.3f} {spent}\n")
            time.sleep(EVERY_S)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadgate.measure.speed_probe")
    parser.add_argument("--cpus", default="", help="comma-separated CPU numbers to pin to")
    parser.add_argument("--out", type=Path, required=True, help="the file to append to")
    parser.add_argument("--for", dest="lifetime", type=float, default=MAX_LIFETIME_S)
    args = parser.parse_args(argv)
    try:
        cpus = [int(c) for c in args.cpus.split(",") if c.strip()]
    except ValueError:
        parser.error(f"--cpus: comma-separated CPU numbers, got {args.cpus!r}")
    if not 0 < args.lifetime <= MAX_LIFETIME_S:
        parser.error(f"--for: more than 0 and at most {MAX_LIFETIME_S:g} seconds")
    return _run(cpus, args.out, args.lifetime)


if __name__ == "__main__":
    sys.exit(main())
