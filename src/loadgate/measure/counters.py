"""Exact increases of cumulative counters from their raw samples, aware of resets and restarts.

A figure of a run is how much a counter grew over the run's window, summed over its series.
Each series starts from its last sample before the window (its baseline); a series first seen
inside the window was created there and counts from 0. A counter that went down, or whose
process started again between two samples, was reset: what it counted after its last sample
before the reset is lost, so the figure is then a lower bound, never a (wrong) exact number.
Pure functions and a small state object: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from loadgate.measure.queries import Series

SeriesKey = tuple[tuple[str, str], ...]
Target = tuple[str, str]  # (job, instance) of a scrape target


@dataclass(frozen=True)
class ProcessStart:
    """A process of a scrape target started at `at` (seconds since the epoch)."""

    target: Target
    at: float


def starts_from_start_time(series: Iterable[Series]) -> list[ProcessStart]:
    """Process starts from a start-time gauge (`process_start_time_seconds`): each value seen."""
    found: dict[tuple[Target, float], ProcessStart] = {}
    for s in series:
        for _, value in s.samples:
            at = round(value, 3)
            found.setdefault((s.target, at), ProcessStart(s.target, at))
    return sorted(found.values(), key=lambda p: (p.target, p.at))


def starts_from_uptime(series: Iterable[Series], tolerance: float = 1.0) -> list[ProcessStart]:
    """Process starts from an uptime counter: sample time minus uptime, per series, with a new
    process wherever the uptime goes down. Estimates within `tolerance` seconds are one start."""
    found: list[ProcessStart] = []
    for s in series:
        prev: float | None = None
        for ts, uptime in s.samples:
            at = ts - uptime
            new_process = prev is None or uptime < prev
            if new_process and not any(
                p.target == s.target and abs(p.at - at) <= tolerance for p in found
            ):
                found.append(ProcessStart(s.target, round(at, 3)))
            prev = uptime
    return sorted(found, key=lambda p: (p.target, p.at))


@dataclass
class SeriesState:
    value: float | None = None  # last sample's value (None: not seen yet: counts from 0)
    at: float = 0.0  # last sample's time
    increase: float = 0.0
    resets: int = 0


@dataclass
class Counter:
    """The running increase of one figure (one counter over several series)."""

    series: dict[SeriesKey, SeriesState] = field(default_factory=dict[SeriesKey, SeriesState])

    def baseline(self, answer: Iterable[Series]) -> None:
        """Each series' last sample before the window is where it starts."""
        for s in answer:
            if s.samples:
                ts, value = max(s.samples)
                self.series[s.key] = SeriesState(value=value, at=ts)

    def fold(self, answer: Iterable[Series], starts: Sequence[ProcessStart] = ()) -> None:
        """Add the samples of a window (after every sample folded so far)."""
        for s in answer:
            state = self.series.setdefault(s.key, SeriesState())
            restarts = [p.at for p in starts if p.target == s.target]
            for ts, value in sorted(s.samples):
                if state.value is None:
                    state.increase += value  # a series born in the window counts from 0
                elif value < state.value or any(state.at < at <= ts for at in restarts):
                    state.increase += value
                    state.resets += 1
                else:
                    state.increase += value - state.value
                state.value, state.at = value, ts

    @property
    def total(self) -> int:
        return round(sum(s.increase for s in self.series.values()))

    @property
    def resets(self) -> int:
        return sum(s.resets for s in self.series.values())

    @property
    def seen(self) -> bool:
        return bool(self.series)


@dataclass(frozen=True)
class Count:
    """A counted figure of the run: exact, or unknown with the reason and a lower bound."""

    value: int | None
    lower_bound: int | None = None
    reason: str = ""

    @property
    def exact(self) -> bool:
        return self.value is not None

    def text(self) -> str:
        if self.value is not None:
            return f"{self.value:,}"
        if self.lower_bound is not None:
            return f"unknown (at least {self.lower_bound:,})"
        return "unknown"


def judge(
    counter: Counter,
    *,
    present: bool,
    absent_reason: str,
    restarts: Mapping[str, Sequence[float]] | None = None,
) -> Count:
    """The figure a counter gives: exact when nothing reset it, else a lower bound and why.

    `present`: whether the process the counter belongs to was scraped at all in the window; a
    counter without any series is then 0 (it counted nothing), otherwise unknown.
    `restarts`: service name -> times it started inside the window."""
    if not counter.seen and not present:
        return Count(None, None, absent_reason)
    reasons: list[str] = []
    for service, times in (restarts or {}).items():
        if times:
            n = len(times)
            reasons.append(
                f"{service} restarted {n} time{'s' if n > 1 else ''} during the run: what it "
                "counted after its last scrape before stopping is lost"
            )
    if counter.resets and not reasons:
        reasons.append(f"the counter was reset {counter.resets} time(s) during the run")
    if reasons:
        return Count(None, counter.total, "; ".join(reasons))
    return Count(counter.total)
