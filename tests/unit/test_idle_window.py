"""The idle CPU window starts after the wait for a quiet collector (issue 33, defect 6): the
previous run's leftover work (here: the collector still taking in and shipping records for 7 s,
at half a core) is waited out, not subtracted from the run as idling; and the window lasts at
least measure.cpu.IDLE_S, long enough to measure a rate at the kernel's clock tick."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fakeprom import FakeProm
from test_runner import Clock, FakeTarget, Sim, execute, spec

from loadgate.contract.spec import RunSpec
from loadgate.measure import cpu
from loadgate.measure.cpu import CpuReading, ProcessCpu
from loadgate.runner.target import LoadWindow

IDLE_CORES = 0.02
BUSY_CORES = 0.5  # above idling, while the collector takes in records


class CpuTarget(FakeTarget):
    """The fake target, waiting for a quiet collector (`quiet_s`), with the collector's CPU as
    the kernel would read it: IDLE_CORES always, BUSY_CORES more while it works."""

    quiet_s = 3.0

    def __init__(self, sim: Sim, duration: float, busy: list[tuple[float, float]]):
        super().__init__(sim, duration)
        self.busy = busy  # (from, to) stretches of work, on the simulation's clock
        self.origin = sim.clock.now
        self.edges: list[CpuReading] = []
        self.idle_reads: list[float] = []

    def cpu_s(self, t: float) -> float:
        worked = sum(max(0.0, min(t, b) - a) for a, b in self.busy if a < t)
        return IDLE_CORES * (t - self.origin) + BUSY_CORES * worked

    def reading(self, t: float) -> CpuReading:
        return CpuReading(t, {"otelcol": ProcessCpu(10, 1, self.cpu_s(t))}, None, 2)

    def cpu_reading(self) -> CpuReading:
        self.idle_reads.append(self.sim.clock.now)
        return self.reading(self.sim.clock.now)

    def start(self, spec: RunSpec, out_dir: Path) -> None:
        now = self.sim.clock.now
        super().start(spec, out_dir)
        self.busy.append((now, now + self.duration))
        self.edges = [self.reading(now), self.reading(now + self.duration)]

    def load_window(self) -> LoadWindow:
        first, last = self.edges
        return LoadWindow(first.at, last.at, first.at, (first, last), "fake")


def simulation() -> Sim:
    """test_runner's pipeline, scraped every 2 s, with ten seconds of history."""
    clock, prom = Clock(), FakeProm()
    sim = Sim(prom, clock)

    def follow(p: FakeProm, query: str) -> None:
        sim.run_until(clock.now)
        p.now = clock.now

    prom.on_query = follow
    clock.now += 10
    sim.run_until(clock.now)
    return sim


def test_the_idle_window_starts_after_the_wait_for_a_quiet_collector(tmp_path: Path) -> None:
    sim = simulation()
    start = sim.clock.now
    # The previous run's tail: the collector's own records arriving for 7 s, and its work.
    sim.own = [(start + i * 0.25, False) for i in range(25)]
    target = CpuTarget(sim, 20, busy=[(start, start + 7.0)])
    result = execute(spec(), target, tmp_path)
    assert result.cpu is not None
    # Idle is idle: the leftover work is waited out, not subtracted from the run.
    assert result.cpu.idle_cores["otelcol"] == pytest.approx(IDLE_CORES, abs=0.002)
    assert result.cpu.marginal_s["otelcol"] == pytest.approx(BUSY_CORES * 20, abs=0.1)
    first, last = target.idle_reads
    assert first >= start + 7.0 + target.quiet_s  # after the quiet wait
    assert last - first >= cpu.IDLE_S  # long enough to measure
    assert result.cpu.idle_s >= cpu.IDLE_S
