"""What a charm container's limits did over a run: the kernel's counters of its groups (read at
the load's start and after the run) and the exits and starts Pebble logged.

- OOM kills: v1 `memory.oom_control` (`oom_kill`), v2 `memory.events` (`oom_kill`);
  v1 `memory.failcnt` too (usage reaching the limit, reclaimed or not).
- Peak memory: v1 `memory.max_usage_in_bytes`, reset at the load's start (the run's peak);
  v2 `memory.peak` where the kernel has it (since the group was made: `stack up`).
- CPU throttling: `cpu.stat` `nr_periods`, `nr_throttled` and v1 `throttled_time` (ns) or v2
  `throttled_usec`.
- Exits and restarts: Pebble's `Service "X" stopped unexpectedly with code N` (128 + N for a
  signal: 137 is the OOM killer's SIGKILL) and `Service "X" starting` lines.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from loadgate.measure import go_runtime
from loadgate.measure.queries import PrometheusAPI
from loadgate.measure.resources import (
    BackendFaultCounts,
    Exit,
    GoRuntime,
    ResourceFigures,
    ServiceResources,
    StandinCounts,
)

from . import fault_service, standin, steal_service
from .cgroups import Group, Placement

if TYPE_CHECKING:
    from .info import StackInfo

_PEBBLE_LINE = re.compile(
    r"^(?P<at>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) \[pebble\] "
    r"Service \"(?P<service>[^\"]+)\" "
    r"(?:stopped unexpectedly with code (?P<code>-?\d+)|(?P<start>starting):)",
    re.ASCII,
)
PEAK_V1 = "memory.max_usage_in_bytes, reset at the load's start"
_PEAK_V2 = "memory.peak, since the group was made (stack up)"


@dataclass(frozen=True)
class Reading:
    """One reading of a placement's counters (None: not readable)."""

    oom_kills: int | None = None
    failcnt: int | None = None
    peak_bytes: int | None = None
    cpu_periods: int | None = None
    cpu_throttled: int | None = None
    cpu_throttled_ns: int | None = None


def _keyed(text: str) -> dict[str, int]:
    """`key value` lines (cpu.stat, memory.events, memory.oom_control) as integers."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def _text(group: Group, name: str) -> str | None:
    try:
        return (Path(group.path) / name).read_text()
    except OSError:
        return None


def _number(group: Group, name: str) -> int | None:
    text = _text(group, name)
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def _key(group: Group, name: str, key: str) -> int | None:
    text = _text(group, name)
    return _keyed(text).get(key) if text is not None else None


def read(placement: Placement) -> Reading:
    """The counters of the placement's groups now."""
    mem, cpu = placement.group("memory"), placement.group("cpu")
    values: dict[str, int | None] = {}
    if mem is not None:
        v1 = mem.version == 1
        values["oom_kills"] = _key(mem, "memory.oom_control" if v1 else "memory.events", "oom_kill")
        values["failcnt"] = _number(mem, "memory.failcnt") if v1 else None
        values["peak_bytes"] = _number(mem, "memory.max_usage_in_bytes" if v1 else "memory.peak")
    if cpu is not None:
        text = _text(cpu, "cpu.stat")
        stat = _keyed(text) if text is not None else {}
        values["cpu_periods"] = stat.get("nr_periods")
        values["cpu_throttled"] = stat.get("nr_throttled")
        usec = stat.get("throttled_usec")
        values["cpu_throttled_ns"] = stat.get("throttled_time", usec * 1000 if usec else usec)
    return Reading(**values)


def reset_peak(placement: Placement) -> None:
    """v1: start the peak over (the run's own); v2's memory.peak is kept (see PEAK_V2)."""
    mem = placement.group("memory")
    if mem is not None and mem.version == 1:
        # If it cannot be reset, the peak is the group's since it was made.
        with contextlib.suppress(OSError):
            (Path(mem.path) / "memory.max_usage_in_bytes").write_text("0")


def pebble_events(lines: Iterable[str], services: Iterable[str], since: float) -> tuple[
    list[Exit], int
]:  # fmt: skip
    """The exits of `services` Pebble logged from `since` (epoch seconds), and its starts."""
    wanted = set(services)
    exits: list[Exit] = []
    starts = 0
    for line in lines:
        m = _PEBBLE_LINE.match(line)
        if m is None or m["service"] not in wanted:
            continue
        at = datetime.fromisoformat(m["at"].replace("Z", "+00:00")).timestamp()
        if at < since:
            continue
        if m["start"]:
            starts += 1
        else:
            exits.append(Exit(m["service"], int(m["code"]), at))
    return exits, starts


def _delta(end: int | None, start: int | None) -> int | None:
    return end - start if end is not None and start is not None and end >= start else None


def figures(
    placement: Placement, start: Reading, end: Reading, exits: list[Exit], starts: int | None
) -> ServiceResources:
    """A container's figures over the run, from two readings and Pebble's log."""
    limits = placement.limits
    versions = sorted({g.version for g in placement.groups})
    mem, cpu = placement.group("memory"), placement.group("cpu")
    throttled_ns = _delta(end.cpu_throttled_ns, start.cpu_throttled_ns)
    peak_source = ""
    if mem is not None:
        peak_source = PEAK_V1 if mem.version == 1 else _PEAK_V2
    return ServiceResources(
        cgroup="+".join(f"v{v}" for v in versions) or "none",
        memory_limit=limits.memory,
        memory_limit_bytes=limits.memory_bytes if mem is not None else None,
        cpu_limit=limits.cpu,
        cpu_limit_millis=limits.cpu_millis if cpu is not None else None,
        not_enforced=dict(placement.not_enforced),
        oom_kills=_delta(end.oom_kills, start.oom_kills),
        memory_failcnt=_delta(end.failcnt, start.failcnt),
        memory_peak_bytes=end.peak_bytes,
        memory_peak_source=peak_source,
        cpu_periods=_delta(end.cpu_periods, start.cpu_periods),
        cpu_throttled_periods=_delta(end.cpu_throttled, start.cpu_throttled),
        cpu_throttled_s=throttled_ns / 1e9 if throttled_ns is not None else None,
        restarts=starts,
        exits=exits,
        notes=list(limits.notes),
        source="the kernel's cgroup counters of the container's group (from the load's start "
        "to the end of the run) and the exits and starts in Pebble's log",
    )


class ResourceWatch:
    """A run's view of the stack's limits and backend faults: readings at the load's start
    (`begin`, which also restarts the fault proxy's clock and arms the CPU steal for the
    load's `load_s`), figures after the run (which disarms the steal)."""

    def __init__(self, info: StackInfo, load_s: float = 0.0):
        self.info = info
        self.since = time.time()
        self.placements = info.limits.placements if info.limits else {}
        self.start = {role: read(p) for role, p in self.placements.items()}
        for p in self.placements.values():
            reset_peak(p)
        log = info.layout.logs / "pebble.log"
        self.log_offset = log.stat().st_size if log.is_file() else 0
        fault = info.backend_fault
        self.fault_start = fault_service.restart_clock(fault) if fault else None
        self.standin_ports = info.logs_standin_ports
        self.standin_start = standin.read_counts(self.standin_ports) if self.standin_ports else None
        self.steals = info.hand is not None and info.hand.cpu_steal > 0
        if self.steals:
            steal_service.arm(info.layout, time.time(), load_s)

    @classmethod
    def begin(cls, info: StackInfo, load_s: float = 0.0) -> ResourceWatch | None:
        """None when the stack has neither limits, a fault proxy nor hand changes."""
        if info.limits is None and info.backend_fault is None and info.hand is None:
            return None
        return cls(info, load_s)

    def _log_lines(self) -> list[str]:
        try:
            with (self.info.layout.logs / "pebble.log").open("rb") as log:
                log.seek(self.log_offset)
                return log.read().decode(errors="replace").splitlines()
        except OSError:
            return []

    def figures(self, prom: PrometheusAPI | None = None) -> ResourceFigures:
        """What the limits, faults and hand changes did from the load's start to now;
        `prom`: where the collector's heap is read (None: not read)."""
        if self.steals:
            steal_service.disarm(self.info.layout)
        lines = self._log_lines()
        services: dict[str, ServiceResources] = {}
        for role, p in self.placements.items():
            exits, starts = pebble_events(lines, p.services, self.since)
            services[role] = figures(p, self.start[role], read(p), exits, starts)
        return ResourceFigures(
            services, self._fault_counts(), self._go_runtime(lines, prom), self._standin()
        )

    def _go_runtime(self, lines: list[str], prom: PrometheusAPI | None) -> GoRuntime | None:
        """The collector's GC and heap (stacks with hand changes or limits)."""
        changes = self.info.hand
        if prom is None or (changes is None and not self.placements):
            return None
        end = time.time()
        traced = changes is not None and changes.gc_trace
        collections = go_runtime.parse_gctrace(lines, "otelcol", self.since) if traced else None
        heap = go_runtime.heap(prom, self.since, end)
        gomemlimit = changes.gomemlimit if changes is not None else None
        return go_runtime.summarize(collections, heap, (self.since, end), gomemlimit)

    def _standin(self) -> StandinCounts | None:
        if self.standin_ports is None:
            return None
        start, end = self.standin_start, standin.read_counts(self.standin_ports)
        known = start is not None and end is not None
        accepted = _delta(end[0], start[0]) if start and end else None
        dropped = _delta(end[1], start[1]) if start and end else None
        received = accepted - dropped if accepted is not None and dropped is not None else None
        return StandinCounts(
            received=received,
            own_dropped=dropped,
            source="the Loki stand-in's own counters (its /metrics), from the load's start to "
            "the end of the run: its receiver's accepted log records less the collector's own "
            "it dropped" + ("" if known else " (it did not answer: unknown)"),
        )

    def _fault_counts(self) -> BackendFaultCounts | None:
        fault = self.info.backend_fault
        if fault is None:
            return None
        end = fault_service.counts(fault)
        start = self.fault_start

        def delta(key: str) -> int | None:
            if start is None or end is None:
                return None
            return _delta(_int(end.get(key)), _int(start.get(key)))

        return BackendFaultCounts(
            spec=fault.plan.spec,
            requests=delta("requests"),
            passed=delta("passed"),
            failed=delta("failed"),
            outage=delta("outage"),
            delayed=delta("delayed"),
            upstream_errors=delta("upstream_errors"),
            source="the fault proxy's own counts (its /counts), from the load's start "
            + ("to the end of the run" if start and end else "(it did not answer: unknown)"),
        )


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
