"""A value counts only if its run is sound (issue 33, defect 1): a saturation, pressure or
fixed-rate figure of a run that lost records k6 saw acknowledged, or whose ledger cannot say
(its stored count unknown), is unknown for that run, with the reason; a saturation step of the
search that lost them is no reading; a candidate that lost acknowledged records is a regression
of its own, named so, and compare.json says which runs were unsound and why."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from support.runresults import run_result
from test_comparing_pairs import (
    CPU,
    METRICS,
    P99,
    SAT,
    A,
    B,
    Pairs,
    SatStack,
    cpu_block,
    drive,
    local_repeats,
    same,
    saturation,
)

from loadgate.capacity.compare import driver as comparing
from loadgate.capacity.compare import rule, run_order
from loadgate.capacity.compare import sequential as seq
from loadgate.capacity.compare import values as cv
from loadgate.capacity.compare.record import CompareRecord, RepeatRecord
from loadgate.capacity.compare.rule import BASELINE, CANDIDATE
from loadgate.capacity.compare.run_order import ScheduledRun
from loadgate.capacity.compare.sequential import Plan
from loadgate.capacity.search import driver as searching
from loadgate.capacity.search.state import HOLD, SATURATION, Step
from loadgate.cli import run as cli_run
from loadgate.contract import gates as gates_mod
from loadgate.contract.spec import RunSpec
from loadgate.judge import ledger as ledger_mod
from loadgate.judge.soundness import Unsound
from loadgate.records.result import RunResult
from loadgate.report import blocks, matrix_table, page, runs
from loadgate.report.compare_tables import result_lines
from loadgate.report.content import build, load

SPEC = RunSpec(rate=140_000, duration="30s", run_id="r-sat")


def lose(result: RunResult, lost: int | None) -> RunResult:
    """The run with `lost` of its acknowledged records not stored (None: the stored count
    unknown: LogQL failed), its gates judged again as the runner judges them."""
    acknowledged = result.client.records_accepted
    stored = None if lost is None else acknowledged - lost
    ledger = ledger_mod.build(result.client, result.pipeline, stored)
    judged = gates_mod.judge(result.spec, result.client, ledger.lost_after_acceptance)
    return replace(result, ledger=ledger, gates=judged, verdict=gates_mod.verdict(judged))


def saturated_run(value: float = 200_000.0) -> RunResult:
    return replace(run_result(SPEC), saturation=saturation(value))


def test_a_saturation_from_a_run_that_lost_acknowledged_records_is_unknown_with_the_reason() -> (
    None
):
    assert cv.saturation_value(saturated_run()) == (200_000.0, [])
    value, notes = cv.saturation_value(lose(saturated_run(), 40))
    assert value is None
    assert notes == ["saturation unknown in r-sat: it lost 40 acknowledged log records"]
    value, notes = cv.saturation_value(lose(saturated_run(), None))
    assert value is None
    assert "saturation unknown in r-sat: its ledger cannot be checked" in notes[0]
    assert "LogQL failed" in notes[0]


def test_pressure_and_fixed_rate_figures_of_an_unsound_run_are_unknown() -> None:
    result = run_result(SPEC)
    assert cv.fixed_rate_values(result)[rule.P99_AT_RATE.name] == 5.0
    for lost in (40, None):
        bad = lose(result, lost)
        assert set(cv.fixed_rate_values(bad).values()) == {None}
        values, sources = cv.pressure_values(bad)
        assert set(values.values()) == {None}
        assert sources == {}


def test_the_soundness_of_a_run_names_what_it_lost() -> None:
    result = run_result(SPEC)
    assert cv.unsound(result) is None
    assert cv.unsound(lose(result, 40)) == Unsound(
        "r-sat", 40, "it lost 40 acknowledged log records"
    )
    unchecked = cv.unsound(lose(result, None))
    assert unchecked is not None
    assert unchecked.lost is None
    # Records stored that k6 never saw acknowledged are a surplus, not a loss.
    assert cv.unsound(lose(result, -5)) is None


@dataclass
class LosingStack(SatStack):
    """SatStack whose runs named in `losing` lost that many acknowledged records (None: their
    stored count unknown)."""

    losing: dict[str, int | None] = field(default_factory=dict[str, "int | None"])

    def execute(self, spec: RunSpec, target: Any, results_root: Path, **kw: Any) -> RunResult:
        result = super().execute(spec, target, results_root, **kw)
        if spec.run_id in self.losing:
            return lose(result, self.losing[spec.run_id])
        return result


def test_a_baseline_saturation_that_lost_records_neither_counts_nor_sets_the_pressure_rate(
    tmp_path: Path,
) -> None:
    fake = LosingStack({BASELINE: [200_000.0], CANDIDATE: [200_000.0]}, losing={"cmp-b1-sat": 40})
    outcome = local_repeats(tmp_path, fake)(ScheduledRun(0, BASELINE, 1), A)
    assert outcome.values == {SAT: None, P99: None, CPU: None}
    assert outcome.pressure is None  # not set from an unsound saturation
    assert outcome.unsound == (Unsound("cmp-b1-sat", 40, "it lost 40 acknowledged log records"),)
    assert any(
        "the saturation run cmp-b1-sat: it lost 40 acknowledged log records; its figures are "
        "unknown" in n
        for n in outcome.notes
    )


def test_a_pressure_run_whose_ledger_cannot_be_checked_gives_no_pressure_figures(
    tmp_path: Path,
) -> None:
    fake = LosingStack({BASELINE: [200_000.0], CANDIDATE: [200_000.0]}, losing={"cmp-b1-pr": None})
    outcome = local_repeats(tmp_path, fake)(ScheduledRun(0, BASELINE, 1), A)
    assert outcome.values == {SAT: 200_000.0, P99: None, CPU: None}
    assert outcome.pressure is not None
    assert [u.run_id for u in outcome.unsound] == ["cmp-b1-pr"]
    assert outcome.unsound[0].lost is None


def _runs(lost_by: dict[tuple[str, int], Unsound]) -> list[RepeatRecord]:
    """Two pairs where the sides measure the same; `lost_by` (side, repeat) -> unsound run."""
    out: list[RepeatRecord] = []
    for run in run_order.schedule(2):
        values: dict[str, float | None] = {SAT: 200_000.0 * (1 + 0.001 * run.repeat),
                                           P99: 12.0, CPU: 0.3}  # fmt: skip
        bad = lost_by.get((run.side, run.repeat))
        if bad is not None:
            values = dict.fromkeys(values)
        out.append(RepeatRecord(run.position, run.side, run.repeat, values,
                                unsound=(bad,) if bad else ()))  # fmt: skip
    return out


def test_a_candidate_that_lost_acknowledged_records_is_a_regression_named_so() -> None:
    lost = Unsound("cmp-c1-pr", 40, "it lost 40 acknowledged log records")
    runs_ = _runs({(CANDIDATE, 1): lost})
    record = CompareRecord.build("cmp", A.side(), B.side(), runs_, METRICS)
    assert record.verdict == rule.REGRESSION
    assert record.exit_code == rule.EXIT_REGRESSION
    assert record.lost_records == (
        "lost records: the candidate lost 40 acknowledged log records in cmp-c1-pr: a "
        "regression whatever the metrics say"
    )
    # Its values there are unknown where the baseline measured them: a broken candidate too.
    assert all(d.broken_pairs == (1,) for d in record.decisions)
    assert record.broken is not None
    assert "pair 1: saturation_per_min" in record.broken
    data = json.loads(record.to_json())
    assert data["verdict"] == rule.REGRESSION
    assert data["lost_records"] == record.lost_records
    assert data["runs"][1]["unsound"] == [
        {"run_id": "cmp-c1-pr", "lost": 40, "reason": "it lost 40 acknowledged log records"}
    ]
    again = CompareRecord.from_json(record.to_json())
    assert again.runs[1].unsound == (lost,)
    assert again.verdict == rule.REGRESSION
    text = "\n".join(str(line) for line in result_lines(record))
    assert "lost records: the candidate lost 40 acknowledged log records in cmp-c1-pr" in text


def test_lost_records_are_a_regression_whatever_the_metrics_say() -> None:
    # The pair's baseline measured nothing either (its ledger unchecked): no metric is a
    # regression, the candidate broke nothing the baseline measured, and the loss alone is.
    lost = Unsound("cmp-c1-pr", 40, "it lost 40 acknowledged log records")
    unchecked = Unsound("cmp-b1-pr", None, "its ledger cannot be checked: LogQL failed")
    runs_ = _runs({(CANDIDATE, 1): lost, (BASELINE, 1): unchecked})
    record = CompareRecord.build("cmp", A.side(), B.side(), runs_, METRICS)
    assert all(d.decision != rule.REGRESSION for d in record.decisions)
    assert record.broken is None
    assert record.lost_records is not None
    assert record.verdict == rule.REGRESSION
    assert record.exit_code == rule.EXIT_REGRESSION


def unsound_lines(record: CompareRecord) -> list[str]:
    """The lines of a comparison's printout that name a run whose figures did not count."""
    lines = (str(line) for line in result_lines(record))
    return [line for line in lines if line.endswith("; its values there are unknown")]


def test_a_candidate_whose_ledger_cannot_be_checked_is_unknown_there_not_a_regression() -> None:
    unchecked = Unsound("cmp-c1-pr", None, "its ledger cannot be checked: LogQL failed")
    record = CompareRecord.build("cmp", A.side(), B.side(),
                                 _runs({(CANDIDATE, 1): unchecked}), METRICS)  # fmt: skip
    assert record.lost_records is None
    assert record.verdict == rule.overall(record.decisions)
    assert unsound_lines(record) == [
        "candidate run cmp-c1-pr: its ledger cannot be checked: LogQL failed; its values there "
        "are unknown"
    ]


def test_a_baseline_that_lost_records_makes_its_values_unknown_and_the_comparison_says_so() -> None:
    lost = Unsound("cmp-b2-sat", 7, "it lost 7 acknowledged log records")
    record = CompareRecord.build("cmp", A.side(), B.side(), _runs({(BASELINE, 2): lost}), METRICS)
    assert record.lost_records is None  # the baseline's loss is no regression of the candidate
    sat = next(d for d in record.decisions if d.metric.name == SAT)
    assert sat.baseline[1] is None
    assert unsound_lines(record) == [
        "baseline run cmp-b2-sat: it lost 7 acknowledged log records; its values there are unknown"
    ]
    text = "\n".join(str(line) for line in result_lines(record))
    assert "baseline run cmp-b2-sat: it lost 7 acknowledged log records" in text


def test_a_comparison_stops_once_the_candidate_lost_acknowledged_records(tmp_path: Path) -> None:
    class Losing(Pairs):
        def __call__(self, run: ScheduledRun, stack: Any) -> Any:
            outcome = super().__call__(run, stack)
            if run.side == CANDIDATE:
                bad = Unsound(f"cmp-c{run.repeat}-pr", 3, "it lost 3 acknowledged log records")
                return replace(outcome, unsound=(bad,))
            return outcome

    calm = same(200_000, 12.0, 0.3)
    record = drive(tmp_path, Losing({BASELINE: calm, CANDIDATE: calm}), Plan(2, 6))
    assert record.repeats == 1
    assert record.stopped == seq.DECIDED
    assert record.verdict == rule.REGRESSION
    stored = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert stored["runs"][1]["unsound"][0]["lost"] == 3


@dataclass
class SheddingStack(SatStack):
    """SatStack whose candidate pressure runs refused a fifth of their requests (the
    error_rate gate failed: verdict FAIL), with a p99 and CPU that look faster for it."""

    def execute(self, spec: RunSpec, target: Any, results_root: Path, **kw: Any) -> RunResult:
        result = super().execute(spec, target, results_root, **kw)
        if spec.run_id.endswith("-pr") and spec.labels["side"] == CANDIDATE:
            return replace(run_result(spec, p99_ms=6.0, error_rate=0.2), cpu=cpu_block(0.06))
        return result


def test_a_candidate_whose_pressure_run_failed_its_gates_is_a_regression_naming_them(
    tmp_path: Path,
) -> None:
    fake = SheddingStack({BASELINE: [200_000.0] * 3, CANDIDATE: [200_000.0] * 3})
    repeat = local_repeats(tmp_path, fake)
    record = comparing.drive(
        "cmp", A, B, plan=Plan(2, 3), metrics=repeat.metrics, run_one=repeat,
        results_root=tmp_path / "results", order="ABAB",
    )  # fmt: skip
    failure = (
        "the pressure run cmp-c1-pr: it failed its gates (error_rate): not a measurement of speed"
    )
    candidate = record.runs[1]
    assert candidate.side == CANDIDATE
    # Its saturation run passed and counts; its pressure run's 6 ms and 0.06 CPU s do not.
    assert candidate.values == {SAT: 200_000.0, P99: None, CPU: None}
    assert candidate.failures == (failure,)
    cpu = next(d for d in record.decisions if d.metric.name == CPU)
    assert (cpu.decision, cpu.broken_pairs) == (rule.REGRESSION, (1,))
    assert record.verdict == rule.REGRESSION
    assert record.exit_code == 1
    assert record.stopped == seq.DECIDED
    assert record.repeats == 1  # final: no pair after it
    assert record.broken is not None
    assert CPU in record.broken
    assert failure in record.broken


def test_a_run_that_failed_its_gates_gives_no_speed_figures() -> None:
    spec = replace(SPEC, run_id="r-pr")
    passed = replace(run_result(spec, p99_ms=6.0), cpu=cpu_block(0.06))
    assert cv.pressure_values(passed)[0][CPU] == 0.06
    failed = replace(run_result(spec, p99_ms=6.0, error_rate=0.2), cpu=cpu_block(0.06))
    assert failed.verdict == gates_mod.FAIL
    assert cv.failed_gates(failed) == (
        "it failed its gates (error_rate): not a measurement of speed"
    )
    values, sources = cv.pressure_values(failed)
    assert set(values.values()) == {None}
    assert sources == {}
    assert set(cv.fixed_rate_values(failed).values()) == {None}
    sat = replace(failed, saturation=saturation(200_000.0))
    assert cv.saturation_value(sat)[0] is None


def test_a_saturation_step_that_lost_acknowledged_records_is_no_reading() -> None:
    step = Step(0, 300_000, 30, SATURATION)
    good = searching.outcome_of(step, saturated_run(), None)
    assert (good.saturated, good.throughput_per_min) == (True, 200_000.0)
    for lost, why in ((40, "it lost 40 acknowledged log records"),
                      (None, "its ledger cannot be checked")):  # fmt: skip
        outcome = searching.outcome_of(step, lose(saturated_run(), lost), None)
        assert outcome.saturated is None
        assert outcome.throughput_per_min is None
        assert not outcome.passed
        assert outcome.verdict.startswith(f"unknown: {why}")
    # A hold is judged by its gates, the lost gate among them; its throughput is unknown too.
    hold = searching.outcome_of(replace(step, phase=HOLD), lose(saturated_run(), 40), None)
    assert not hold.passed
    assert "lost_records" in hold.verdict
    assert hold.throughput_per_min is None


def test_the_report_and_the_matrix_take_no_saturation_from_a_run_that_lost_records() -> None:
    assert runs.saturation_of(saturated_run()) == 200_000.0
    assert runs.saturation_of(lose(saturated_run(), 40)) is None
    base = matrix_table.MatrixRow("cell", "exp", "scn", "load", "done")
    assert matrix_table.run_row(base, saturated_run()).saturation == "200,000"
    cell = matrix_table.run_row(base, lose(saturated_run(), 40)).saturation
    assert cell == "unknown (it lost 40 acknowledged records)"


def test_loadgate_run_says_a_saturation_of_a_run_that_lost_records_does_not_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli_run.report_result(lose(saturated_run(), 40), tmp_path, saturate=True)
    out = " ".join(capsys.readouterr().out.split())
    assert "the saturation does not count: it lost 40 acknowledged log records" in out
    cli_run.report_result(saturated_run(), tmp_path, saturate=True)
    assert "does not count" not in capsys.readouterr().out


def test_the_report_page_names_the_lost_records_and_the_runs_that_did_not_count(
    tmp_path: Path,
) -> None:
    lost = Unsound("cmp-c1-pr", 40, "it lost 40 acknowledged log records")
    record = CompareRecord.build("cmp", A.side(), B.side(), _runs({(CANDIDATE, 1): lost}), METRICS)
    comparing.write_record(record, tmp_path)
    md = blocks.markdown(page.document(build(load(tmp_path)), {}))
    assert "### cmp: " in md
    text = " ".join(md.split())
    assert (
        "**lost records: the candidate lost 40 acknowledged log records in cmp-c1-pr: a "
        "regression whatever the metrics say.** **broken candidate: it left metrics the baseline "
        "measured unknown: pair 1: saturation_per_min"
    ) in text
    assert (
        "a regression whatever the others say.** Runs whose figures did not count (their values "
        "unknown): candidate run cmp-c1-pr: it lost 40 acknowledged log records."
    ) in text
