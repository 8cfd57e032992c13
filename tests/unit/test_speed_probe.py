"""The speed probe (issue 38): the machine's speed over a run's load window, read from the
probe's file, carried in result.json's `cpu` block, and the collector's CPU per record in the
probe's jobs (`pressure-cpu-probe`), unknown with its reason where the probe could not say."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.fakes.stack import SimulatedStack
from support.fakes.target import FakeTarget
from support.figures_table import figure_values
from support.runresults import run_result
from test_idle_window import collector_cpu
from test_runner import execute, spec

from loadgate.capacity.compare import values as cv
from loadgate.capacity.compare.rule import PRESSURE_CPU, PRESSURE_CPU_LOKI, PRESSURE_CPU_PROBE
from loadgate.contract.spec import RunSpec
from loadgate.measure import cpu, speed_probe
from loadgate.measure.cpu import CpuReading, ProcessCpu
from loadgate.measure.speed_probe import Sample
from loadgate.records.result import RunResult
from loadgate.targets import probe_process

SPEC = RunSpec(rate=140_000, duration="30s", run_id="r1")


def test_the_probes_file_reads_with_a_torn_last_line_left_out() -> None:
    lines = ["100.25 2000000", "100.50 2100000", "100.75 21"]
    assert speed_probe.parse([*lines, "101.0", "x y"]) == [
        Sample(100.25, 2_000_000), Sample(100.5, 2_100_000), Sample(100.75, 21)
    ]  # fmt: skip


def test_the_median_is_over_the_window_and_needs_five_jobs() -> None:
    samples = [Sample(100.0 + i, ns) for i, ns in enumerate([9, 1, 2, 3, 4, 5, 9_000])]
    # Jobs at 101..105: 1, 2, 3, 4, 5 (the slow one before, the very slow one after, outside).
    assert speed_probe.median_ns(samples, 101.0, 105.0) == (3.0, 5)
    assert speed_probe.median_ns(samples, 101.0, 104.0) == (None, 4)
    assert speed_probe.median_ns([], 0.0, 1.0) == (None, 0)


def test_a_missing_file_reads_as_no_probe(tmp_path: Path) -> None:
    assert speed_probe.read(tmp_path / "absent.tsv", 0.0, 1e12) == (None, 0)


def test_the_job_is_the_same_work_every_time() -> None:
    assert speed_probe.work() == speed_probe.work() != speed_probe.work(1)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cpus", "1,x"], "--cpus: comma-separated CPU numbers, got '1,x'"),
        (["--for", "0"], "--for: more than 0 and at most 21600 seconds"),
        (["--for", "99999"], "--for: more than 0 and at most 21600 seconds"),
    ],
)
def test_bad_probe_flags_are_refused_naming_the_flag(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "probe.tsv"
    with pytest.raises(SystemExit):
        speed_probe.main(["--out", str(out), *argv])
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_the_probes_command_is_an_argv_pinned_and_bounded(tmp_path: Path) -> None:
    out = tmp_path / "p.tsv"
    assert probe_process.command(out, (1, 3), 630.0) == [
        sys.executable, "-m", "loadgate.measure.speed_probe", "--out", str(out),
        "--cpus", "1,3", "--for", "630",
    ]  # fmt: skip
    unpinned = probe_process.command(out, (), 1e9)
    assert "--cpus" not in unpinned
    assert unpinned[-1] == f"{speed_probe.MAX_LIFETIME_S:g}"


class ProbingTarget(FakeTarget):
    """A fake target that ran the probe: its reading, and the window it was asked for."""

    def __init__(self, *args: Any, probe: tuple[float | None, int], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.probe = probe
        self.asked: list[tuple[float, float]] = []

    def speed_probe(self, start: float, end: float) -> tuple[float | None, int]:
        self.asked.append((start, end))
        return self.probe


def test_the_run_records_the_probe_over_its_load_window(tmp_path: Path) -> None:
    sim = SimulatedStack.up()
    start = sim.clock.now
    target = ProbingTarget(sim, processes=collector_cpu(sim, (start, start), 20),
                           probe=(1_900_000.0, 80))  # fmt: skip
    result = execute(spec(), target, tmp_path)
    assert result.cpu is not None
    assert (result.cpu.probe_ns_per_job, result.cpu.probe_jobs) == (1_900_000.0, 80)
    window = result.load_window
    assert window is not None
    assert target.asked == [(window["first_request"], window["last_request"])]
    stored = json.loads((tmp_path / "r1" / "result.json").read_text())
    assert stored["cpu"]["probe_ns_per_job"] == 1_900_000.0
    assert stored["cpu"]["probe_jobs"] == 80


def test_a_target_without_the_probe_records_none(tmp_path: Path) -> None:
    sim = SimulatedStack.up()
    start = sim.clock.now
    target = FakeTarget(sim, processes=collector_cpu(sim, (start, start), 20))
    result = execute(spec(), target, tmp_path)
    assert result.cpu is not None
    assert (result.cpu.probe_ns_per_job, result.cpu.probe_jobs) == (None, 0)


def measured_cpu(probe_ns: float | None, jobs: int) -> cpu.CpuFigures:
    """0.18 CPU s per 1,000 records (5.4 s over 30,000), with this probe reading; Loki used
    half that."""

    def reading(at: float, otelcol: float) -> CpuReading:
        procs = {"otelcol": ProcessCpu(10, 1, otelcol), "loki": ProcessCpu(11, 1, otelcol / 2)}
        return CpuReading(at, dict[str, ProcessCpu | None](procs), None, 2)

    figures = cpu.figures((reading(0.0, 0.0), reading(3.0, 0.0)),
                          (reading(10.0, 1.0), reading(40.0, 6.4)), 30_000)  # fmt: skip
    return replace(figures, probe_ns_per_job=probe_ns, probe_jobs=jobs)


def test_cpu_per_record_in_probe_jobs_is_the_cpu_over_the_probes_job() -> None:
    result = replace(run_result(SPEC), cpu=measured_cpu(2_000_000.0, 118))
    values, sources = cv.pressure_values(result)
    assert values[PRESSURE_CPU.name] == pytest.approx(0.18)
    # 0.18 CPU s per 1,000 records is 90 jobs of 2 ms.
    assert values[PRESSURE_CPU_PROBE.name] == pytest.approx(90.0)
    assert sources[PRESSURE_CPU_PROBE.name] == "kernel"
    assert values[PRESSURE_CPU_LOKI.name] == pytest.approx(2.0)  # used over used: 5.4 s / 2.7 s
    assert cv.unknown_reasons(result) == {}
    # A machine 20 % slower for every process: the CPU rises, the figure in jobs does not.
    slow = replace(result, cpu=replace(
        measured_cpu(2_400_000.0, 118),
        per_1000_records={"otelcol": 0.18 * 1.2},
    ))  # fmt: skip
    assert cv.pressure_values(slow)[0][PRESSURE_CPU_PROBE.name] == pytest.approx(90.0)


def test_too_few_probe_jobs_is_unknown_with_its_reason_never_0() -> None:
    result = replace(run_result(SPEC), cpu=measured_cpu(None, 3))
    values, sources = cv.pressure_values(result)
    assert values[PRESSURE_CPU_PROBE.name] is None
    assert values[PRESSURE_CPU.name] == pytest.approx(0.18)
    assert PRESSURE_CPU_PROBE.name not in sources
    assert cv.unknown_reasons(result) == {
        PRESSURE_CPU_PROBE.name: "the speed probe ran 3 jobs in the load window (at least 5 needed)"
    }


def test_the_probe_round_trips_and_older_records_read_without_it() -> None:
    result = replace(run_result(SPEC), cpu=measured_cpu(2_000_000.0, 118))
    data = json.loads(json.dumps(result.to_dict()))
    assert RunResult.from_dict(data) == result
    del data["cpu"]["probe_ns_per_job"], data["cpu"]["probe_jobs"]
    older = RunResult.from_dict(data)
    assert older.cpu is not None
    assert (older.cpu.probe_ns_per_job, older.cpu.probe_jobs) == (None, 0)
    assert cv.pressure_values(older)[0][PRESSURE_CPU_PROBE.name] is None


def test_the_runs_table_shows_the_machines_speed() -> None:
    shown = figure_values(replace(run_result(SPEC), cpu=measured_cpu(1_934_000.0, 118)))
    assert shown["machine speed (speed probe)"] == "1.934 ms per job, 118 jobs"
