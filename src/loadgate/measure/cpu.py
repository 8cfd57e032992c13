"""CPU seconds from the kernel: each process's user + system time (/proc/<pid>/stat) and the
machine's busy time (/proc/stat), read at chosen instants.

A run reads them at the load window's edges and twice while it is idle just before (at least
IDLE_S from when the collector was seen clear of records), so its CPU figures are exact to the
clock tick (10 ms) and its per-record cost is the marginal one: the window's CPU less what the
same processes burn idle over as long a time. A marginal figure that cannot be had is unknown
with its reason (`CpuFigures.unknown`), never 0: a process not read at both edges, or one that
used less under load than its idle rate says it would have idling (the idle stretch caught
other work). What no process of the run used, of the machine's busy time, says whether the
machine was quiet.

The readers touch /proc; the arithmetic (`between`, `marginal`, `figures`) is pure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from loadgate import procfs

# Cores the run's own processes did not use, above which the machine was not quiet. On the
# development VM a quiet run read at most 0.02 and a lint run beside one 0.21-0.25 (which moved
# its p99: docs/measurements.md, r160u), so 0.1 notes what touches the figures.
BUSY_ELSEWHERE_CORES = 0.10
# The idle stretch before the load, at least: each reading is exact to a clock tick (10 ms), so
# an idle stretch of s seconds gives the idle rate within 0.01 / s cores, and a window of W
# seconds its marginal CPU within 0.01 W / s s. 3 s bounds a 30 s window's within 0.1 s: 1-2 %
# of the collector's 5-8 s at the pressure rate (about 0.1 s per 1,000 records), which adds
# about 0.2 points in quadrature to the 3.3 % its CPU spreads from run to run; and it spans a
# scrape of the local stack (every 2 s), whose work the idle rate then includes. Measured on
# the local stack: idle stretches of 3.003-3.005 s, the idle collector at 0 or 1 tick in them.
IDLE_S = 3.0
# Why a process started for the load (k6) has no marginal figure: there is no idle rate of it.
NOT_RUNNING_IDLE = "not running while idle (started for the load): no idle rate to take out"


@dataclass(frozen=True)
class ProcessCpu:
    """One process at one instant: its identity (PID and start time) and its CPU seconds."""

    pid: int
    start_ticks: int
    cpu_s: float


@dataclass(frozen=True)
class CpuReading:
    """The CPU of named processes and of the whole machine at one instant (epoch seconds)."""

    at: float
    processes: Mapping[str, ProcessCpu | None] = field(
        default_factory=dict[str, "ProcessCpu | None"]
    )
    machine_busy_s: float | None = None  # non-idle CPU seconds of all cores since boot
    cores: int = 1


def machine_busy_seconds(text: str, ticks: int) -> float:
    """Busy CPU seconds of all cores from /proc/stat's `cpu` line: everything but idle and
    iowait (guest time is already inside user and nice)."""
    line = next(ln for ln in text.splitlines() if ln.startswith("cpu "))
    values = [int(v) for v in line.split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (values + [0] * 8)[:8]
    del idle, iowait
    return (user + nice + system + irq + softirq + steal) / ticks


def read(pids: Mapping[str, int | None], at: float) -> CpuReading:
    """Read the named processes (a None PID, or one that is gone, reads as None) and the
    machine, labelled with `at`."""
    ticks = procfs.clock_ticks()
    found: dict[str, ProcessCpu | None] = {}
    for name, pid in pids.items():
        st = procfs.stat(pid) if pid is not None else None
        found[name] = (
            None if st is None else ProcessCpu(st.pid, st.start_ticks, st.cpu_ticks / ticks)
        )
    try:
        busy: float | None = machine_busy_seconds((procfs.PROC / "stat").read_text(), ticks)
    except (OSError, StopIteration, ValueError):
        busy = None
    return CpuReading(at, found, busy, os.cpu_count() or 1)


def between(a: CpuReading, b: CpuReading) -> dict[str, float | None]:
    """CPU seconds each process used from reading `a` to reading `b`; None when it was not
    read at both or is not the same process (it restarted in between: its time before the
    restart is lost)."""
    out: dict[str, float | None] = {}
    for name in a.processes.keys() | b.processes.keys():
        pa, pb = a.processes.get(name), b.processes.get(name)
        same = (
            pa is not None
            and pb is not None
            and (pa.pid, pa.start_ticks) == (pb.pid, pb.start_ticks)
        )
        out[name] = round(pb.cpu_s - pa.cpu_s, 3) if same and pa and pb else None
    return out


def _rate(a: CpuReading, b: CpuReading) -> dict[str, float | None]:
    """Cores each process used on average from `a` to `b` (None as in `between`)."""
    span = b.at - a.at
    return {
        name: None if used is None or span <= 0 else used / span
        for name, used in between(a, b).items()
    }


def marginal(
    used_s: float | None, idle_cores: float | None, window_s: float
) -> tuple[float | None, str]:
    """(CPU seconds a window of load cost above idling: what it used less the idle rate times
    its length, ""), or (None, why): either figure unknown, or the difference negative (the
    idle stretch was busier than the load: it caught other work; the cost is not 0)."""
    if used_s is None:
        return None, "not read at both edges of the window"
    if idle_cores is None:
        return None, "its idle rate is unknown (not read at both ends of the idle stretch)"
    value = used_s - idle_cores * window_s
    if value < 0:
        return None, (
            f"negative ({value:.2f} s): the idle baseline was busier than the run "
            f"({idle_cores:.3f} cores idle x {window_s:g} s > {used_s:g} s used)"
        )
    return value, ""


def _busy_elsewhere(a: CpuReading, b: CpuReading) -> float | None:
    """Cores the machine was busy with outside the read processes, from `a` to `b` (None when
    the machine's time or a process's could not be read)."""
    span = b.at - a.at
    if a.machine_busy_s is None or b.machine_busy_s is None or span <= 0:
        return None
    used = between(a, b)
    if any(v is None for v in used.values()):
        return None
    ours = sum(v for v in used.values() if v is not None)
    return max(0.0, (b.machine_busy_s - a.machine_busy_s - ours) / span)


@dataclass(frozen=True)
class CpuFigures:
    """`cpu` of result.json: the run's CPU from the kernel, per process. `used_s` is what each
    used over the load window, `idle_cores` its rate while idle just before, `marginal_s` the
    difference over the window and `per_1000_records` that per 1,000 records k6 got accepted."""

    window_s: float
    idle_s: float
    records: int
    idle_cores: dict[str, float | None]
    used_s: dict[str, float | None]
    marginal_s: dict[str, float | None]
    per_1000_records: dict[str, float | None]
    busy_elsewhere_cores: float | None  # machine busy time no process of the run used
    quiet: bool | None  # busy_elsewhere_cores below BUSY_ELSEWHERE_CORES (None: unknown)
    # Process -> why its marginal (and per-1,000) figure is unknown (records before issue 33:
    # none).
    unknown: dict[str, str] = field(default_factory=dict[str, str])
    # The machine's speed over the load window (measure.speed_probe): the probe's median CPU
    # time per job, and how many of its jobs ended in the window (None, 0: no probe ran, or
    # too few jobs; records before issue 38's probe: none).
    probe_ns_per_job: float | None = None
    probe_jobs: int = 0
    source: str = (
        "kernel: /proc/<pid>/stat user+system at the load window's edges and over an idle "
        "stretch just before it; /proc/stat for the machine"
    )


def figures(
    idle: tuple[CpuReading, CpuReading],
    load: tuple[CpuReading, CpuReading],
    records: int,
) -> CpuFigures:
    """The run's CPU figures from two idle readings and the load window's two edges."""
    window = load[1].at - load[0].at
    idle_cores = _rate(*idle)
    used = between(*load)
    margin: dict[str, float | None] = {}
    unknown: dict[str, str] = {}
    for name in used:
        margin[name], why = marginal(used.get(name), idle_cores.get(name), window)
        if all(r.processes.get(name) is None for r in idle):
            why = NOT_RUNNING_IDLE if margin[name] is None else why
        if why:
            unknown[name] = why
        elif records <= 0:
            unknown[name] = "no units accepted"
    per_1000 = {
        name: None if m is None or records <= 0 else round(m / records * 1000, 6)
        for name, m in margin.items()
    }
    elsewhere = _busy_elsewhere(*load)
    return CpuFigures(
        window_s=round(window, 3),
        idle_s=round(idle[1].at - idle[0].at, 3),
        records=records,
        idle_cores={k: None if v is None else round(v, 4) for k, v in idle_cores.items()},
        used_s=used,
        marginal_s={k: None if v is None else round(v, 3) for k, v in margin.items()},
        per_1000_records=per_1000,
        busy_elsewhere_cores=None if elsewhere is None else round(elsewhere, 3),
        quiet=None if elsewhere is None else elsewhere < BUSY_ELSEWHERE_CORES,
        unknown=dict(sorted(unknown.items())),
    )
