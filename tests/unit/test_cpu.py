"""CPU from the kernel (measure/cpu.py): the arithmetic of windows, idle rates, marginal cost
and a quiet machine, on readings made up here (the /proc readers run in tests/local)."""

from __future__ import annotations

import pytest

from loadgate.measure import cpu
from loadgate.measure.cpu import CpuReading, ProcessCpu

STAT = """cpu  1000 50 300 90000 20 5 7 3 0 0
cpu0 500 25 150 45000 10 2 3 1 0 0
intr 1
"""


def reading(at: float, machine: float | None = None, **processes: float | None) -> CpuReading:
    procs = {
        name: None if value is None else ProcessCpu(pid=i + 1, start_ticks=10, cpu_s=value)
        for i, (name, value) in enumerate(sorted(processes.items()))
    }
    return CpuReading(at, procs, machine, cores=2)


def test_machine_busy_is_everything_but_idle_and_iowait() -> None:
    # user + nice + system + irq + softirq + steal = 1000 + 50 + 300 + 5 + 7 + 3 ticks
    assert cpu.machine_busy_seconds(STAT, 100) == pytest.approx(13.65)


def test_cpu_between_two_readings_per_process() -> None:
    a = reading(100.0, otelcol=10.0, loki=4.0)
    b = reading(130.0, otelcol=25.5, loki=4.6)
    assert cpu.between(a, b) == {"otelcol": 15.5, "loki": 0.6}
    # the rate over a stretch: what `figures` gives as the idle rate (rounded to 4 places)
    rate = cpu.figures((a, b), (a, b), records=0).idle_cores
    assert rate == pytest.approx({"otelcol": 15.5 / 30, "loki": 0.6 / 30}, abs=5e-5)


def test_a_process_that_restarted_or_was_not_read_is_unknown_not_zero() -> None:
    a = reading(100.0, otelcol=10.0, k6=None)
    b = CpuReading(
        130.0, {"otelcol": ProcessCpu(pid=99, start_ticks=500, cpu_s=3.0), "k6": None}, None
    )
    assert cpu.between(a, b) == {"otelcol": None, "k6": None}


def test_marginal_cost_is_the_window_less_idling_unknown_when_negative() -> None:
    assert cpu.marginal(15.5, 0.02, 30.0)[0] == pytest.approx(14.9)
    assert cpu.marginal(0.1, 0.02, 30.0)[0] is None  # not a cost of 0 (issue 33)
    assert cpu.marginal(None, 0.02, 30.0)[0] is None
    assert cpu.marginal(15.5, None, 30.0)[0] is None


def test_figures_per_1000_records_and_a_quiet_machine() -> None:
    idle = (reading(90.0, 500.0, otelcol=9.9, k6=None), reading(95.0, 500.2, otelcol=10.0, k6=None))
    load = (
        reading(100.0, 501.0, otelcol=10.0, k6=1.0),
        reading(130.0, 522.0, otelcol=25.1, k6=5.0),
    )
    fig = cpu.figures(idle, load, records=30_000)
    assert fig.window_s == 30.0
    assert fig.idle_s == 5.0
    assert fig.idle_cores["otelcol"] == pytest.approx(0.02)
    assert fig.idle_cores["k6"] is None  # k6 did not run while idle
    assert fig.used_s == {"otelcol": 15.1, "k6": 4.0}
    assert fig.marginal_s["otelcol"] == pytest.approx(14.5)  # 15.1 - 0.02 * 30
    assert fig.per_1000_records["otelcol"] == pytest.approx(14.5 / 30)
    assert fig.marginal_s["k6"] is None  # no idle rate for it: unknown, not its whole use
    # The machine was busy 21 s over 30 s; the run's processes used 19.1 of them.
    assert fig.busy_elsewhere_cores == pytest.approx((21 - 19.1) / 30, abs=1e-3)
    assert fig.quiet is True


def test_a_machine_busy_elsewhere_is_not_quiet() -> None:
    idle = (reading(90.0, 0.0, otelcol=0.0), reading(95.0, 0.1, otelcol=0.0))
    load = (reading(100.0, 10.0, otelcol=1.0), reading(130.0, 40.0, otelcol=16.0))
    fig = cpu.figures(idle, load, records=1000)
    assert fig.busy_elsewhere_cores == pytest.approx(0.5)  # (30 - 15) / 30
    assert fig.quiet is False


def test_unknown_machine_time_leaves_quiet_unknown() -> None:
    idle = (reading(90.0, None, otelcol=0.0), reading(95.0, None, otelcol=0.0))
    load = (reading(100.0, None, otelcol=1.0), reading(130.0, None, otelcol=2.0))
    fig = cpu.figures(idle, load, records=0)
    assert fig.busy_elsewhere_cores is None
    assert fig.quiet is None
    assert fig.per_1000_records == {"otelcol": None}  # no records: no per-record figure
