"""The idle CPU window starts where the collector was seen clear of records (issue 33, defect
6): the previous run's leftover work (here: the collector still taking in and shipping records
for 7 s, at half a core) is waited out, not subtracted from the run as idling; a collector
already clear when the wait began idles from then (the wait is part of the window); and the
window lasts at least measure.cpu.IDLE_S, long enough to measure a rate at the kernel's clock
tick."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support.fakes.stack import SimulatedStack
from support.fakes.target import FakeTarget
from test_runner import execute, spec

from loadgate.measure import cpu
from loadgate.measure.cpu import CpuReading, ProcessCpu

IDLE_CORES = 0.02
BUSY_CORES = 0.5  # above idling, while the collector takes in records


def collector_cpu(
    stack: SimulatedStack, tail: tuple[float, float], load_s: float
) -> Callable[[float], CpuReading]:
    """The collector's CPU as the kernel would read it: IDLE_CORES always, BUSY_CORES more while
    it works: the previous run's `tail`, and the load once started (on the stack's clock)."""
    origin = stack.clock.now

    def reading(t: float) -> CpuReading:
        busy = [tail]
        if stack.sending_until:
            busy.append((stack.sending_until - load_s, stack.sending_until))
        worked = sum(max(0.0, min(t, b) - a) for a, b in busy if a < t)
        used = IDLE_CORES * (t - origin) + BUSY_CORES * worked
        return CpuReading(t, {"otelcol": ProcessCpu(10, 1, used)}, None, 2)

    return reading


def test_the_idle_window_starts_after_the_wait_for_a_quiet_collector(tmp_path: Path) -> None:
    sim = SimulatedStack.up()
    start = sim.clock.now
    # The previous run's tail: the collector's own records arriving for 7 s, and its work.
    sim.own = [(start + i * 0.25, False) for i in range(25)]
    cpu_of = collector_cpu(sim, (start, start + 7.0), 20)
    # The tail is under way when the run begins (its first records are in).
    sim.clock.now += 1.5
    sim.run_until(sim.clock.now)
    target = FakeTarget(sim, quiet_s=3.0, processes=cpu_of)
    result = execute(spec(), target, tmp_path)
    assert result.cpu is not None
    # Idle is idle: the leftover work is waited out, not subtracted from the run.
    assert result.cpu.idle_cores["otelcol"] == pytest.approx(IDLE_CORES, abs=0.002)
    assert result.cpu.marginal_s["otelcol"] == pytest.approx(BUSY_CORES * 20, abs=0.1)
    early, first, last = target.cpu_reads  # the one as the wait began was not clear: not used
    assert early < start + 7.0
    assert first >= start + 7.0 + target.quiet_s  # after the quiet wait
    assert last - first >= cpu.IDLE_S  # long enough to measure
    assert result.cpu.idle_s >= cpu.IDLE_S


def test_a_collector_clear_when_the_wait_begins_idles_from_then(tmp_path: Path) -> None:
    sim = SimulatedStack.up()  # idle for the 10 s before: no tail
    sim.clock.now += 1.0  # between two scrapes: the wait takes a second, for a fresh one
    sim.run_until(sim.clock.now)
    start = sim.clock.now
    target = FakeTarget(sim, quiet_s=3.0, processes=collector_cpu(sim, (start, start), 20))
    result = execute(spec(), target, tmp_path)
    assert result.cpu is not None
    assert result.cpu.idle_cores["otelcol"] == pytest.approx(IDLE_CORES, abs=0.002)
    first, last = target.cpu_reads  # the window's first reading is the one as the wait began
    assert first == start
    assert last - first == pytest.approx(cpu.IDLE_S, abs=0.6)  # the wait counted in the window
    assert result.cpu.idle_s >= cpu.IDLE_S
