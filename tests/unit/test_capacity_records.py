"""search.json and compare.json: built from a search and from repeats, and round trips."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from loadgate.capacity.compare.record import (
    COMPARE_FORMAT,
    CompareRecord,
    RepeatRecord,
    Side,
    side_values,
)
from loadgate.capacity.compare.rule import (
    BASELINE,
    CANDIDATE,
    CPU_PER_1000,
    REGRESSION,
    capacity_metric,
)
from loadgate.capacity.compare.run_order import schedule
from loadgate.capacity.search.record import SEARCH_FORMAT, SearchRecord
from loadgate.capacity.search.rule import (
    BISECT,
    FOUND,
    SATURATE,
    SATURATION,
    SearchPlan,
    Step,
    StepOutcome,
    run_search,
)
from loadgate.judge.attribution import BottleneckFigures, attribute
from loadgate.records.fields import RecordError

STACK = {
    "target": "local",
    "profile": "charm-default",
    "otelcol": {"source": "charm", "ref": "rev221", "commit": "0123abc"},
    "workload": {"otelcol": "0.130.1", "loki": "3.7.8", "k6": "v1.8.1"},
}


def figures_at(rate: int) -> BottleneckFigures:
    """Plausible figures of a step: the collector's queue overflows above 190,000/min."""
    over = rate > 190_000
    accepted = rate * (0.97 if over else 1.0)
    return BottleneckFigures(
        offered_per_min=rate,
        accepted_per_min=accepted,
        duration_s=15,
        p99_ms=30.0 if over else 6.0,
        failed_gates=("error_rate",) if over else (),
        machine_cores=2,
        k6_cpu_s=rate / 100_000 * 2.5,
        dropped_iterations=0,
        queue_max=1000 if over else 40,
        queue_capacity=1000,
        collector_refused=round(rate * 0.03 / 4) if over else 0,
        collector_send_failed=0,
        collector_cpu_max=rate / 200_000,
        loki_received=round(accepted / 4),
        loki_discarded=0,
    )


def outcome_of(step: Step) -> StepOutcome:
    f = figures_at(step.rate)
    passed = not f.failed_gates
    return StepOutcome(
        rate=step.rate,
        passed=passed,
        accepted_per_min=f.accepted_per_min,
        p99_ms=f.p99_ms,
        error_rate=0.0 if passed else 0.03,
        queue_max=f.queue_max,
        collector_cpu_cores=f.collector_cpu_max,
        loki_discarded=f.loki_discarded,
        verdict="PASS" if passed else "FAIL: error_rate",
        run_id=f"step-{step.index}",
        wall_s=step.duration_s + 6.5,
    )


def a_search_record() -> SearchRecord:
    search = run_search(SearchPlan(method=BISECT), outcome_of)
    attributions = [
        (figures_at(step.rate), attribute(figures_at(step.rate))) for step, _ in search.history
    ]
    return SearchRecord.build(
        "search-20260101-120000",
        STACK,
        search,
        attributions,
        started_at=1_767_268_800.0,
        ended_at=1_767_269_100.0,
        wall_s=300.0,
    )


def test_search_record_holds_every_step_and_the_result() -> None:
    record = a_search_record()
    d = record.to_dict()
    assert d["format"] == SEARCH_FORMAT
    assert d["stack"] == STACK
    assert d["plan"]["precision"] == 0.05
    assert d["result"]["status"] == FOUND
    assert d["result"]["capacity_per_min"] == 183_000
    assert d["result"]["lowest_failing_per_min"] == 200_000
    assert d["result"]["load_s"] == 150
    assert d["result"]["wall_s"] == pytest.approx(150 + 7 * 6.5)
    assert d["wall_s"] == 300.0
    first = d["steps"][0]
    assert first["step"] == {
        "index": 0,
        "rate": 100_000,
        "duration_s": 15,
        "phase": "probe",
        "attempt": 1,
    }
    assert first["outcome"]["verdict"] == "PASS"
    assert first["attribution"]["verdict"] == "none"
    # what gave way at the knee: the failed step at 200,000, the collector's full queue
    assert d["bottleneck"]["verdict"] == "collector"
    assert d["bottleneck"]["claims"][0]["figure"] == "queue_max"


def test_search_record_round_trips_through_json() -> None:
    record = a_search_record()
    text = record.to_json()
    assert SearchRecord.from_json(text) == record
    assert SearchRecord.from_json(text).to_json() == text


def saturate_outcome(step: Step) -> StepOutcome:
    """The default stack's pipeline as the saturate method sees it: it takes 190,000/min."""
    if step.phase == SATURATION:
        return StepOutcome(
            step.rate, False, verdict="SATURATED at 190,000/min", saturated=True,
            throughput_per_min=190_000.0, queue_records=5000.0, run_id=f"step-{step.index}",
        )  # fmt: skip
    return outcome_of(step)


def test_a_saturate_search_record_keeps_the_saturation_figures_and_round_trips() -> None:
    search = run_search(SearchPlan(), saturate_outcome)
    record = SearchRecord.build("sat", STACK, search, wall_s=200.0)
    d = record.to_dict()
    assert d["plan"]["method"] == SATURATE
    assert d["steps"][0]["step"]["phase"] == SATURATION
    assert d["steps"][0]["outcome"]["throughput_per_min"] == 190_000.0
    assert d["steps"][0]["outcome"]["queue_records"] == 5000.0
    assert d["steps"][0]["outcome"]["saturated"] is True
    assert "saturated" not in d["steps"][1]["outcome"]  # a hold without saturation figures
    assert d["result"]["saturation_per_min"] == 190_000.0
    assert d["result"]["status"] == FOUND
    text = record.to_json()
    assert SearchRecord.from_json(text) == record
    assert SearchRecord.from_json(text).to_json() == text


def test_a_record_written_before_the_saturate_method_reads_as_a_bisect_search() -> None:
    d = a_search_record().to_dict()
    for key in ("method", "saturate_rate", "saturate_s", "hold_min_s", "max_error_rate"):
        del d["plan"][key]
    record = SearchRecord.from_dict(d)
    assert record.plan == SearchPlan(method=BISECT)
    assert record.result.saturation_per_min is None


def test_search_record_of_an_unfinished_search_with_no_attributions() -> None:
    search = run_search(SearchPlan(method=BISECT), outcome_of)
    partial = type(search)(search.plan, search.history[:3])
    record = SearchRecord.build("s1", {}, partial, notes=["interrupted"])
    assert record.result.status == "in-progress"
    assert all(s.attribution is None and s.figures is None for s in record.steps)
    assert record.bottleneck is None
    assert SearchRecord.from_dict(record.to_dict()) == record
    with pytest.raises(ValueError, match="4 attributions for 3 steps"):
        SearchRecord.build("s1", {}, partial, [(None, None)] * 4)


def broken(d: dict[str, Any], path: list[str | int], value: object) -> dict[str, Any]:
    copy: Any = json.loads(json.dumps(d))
    node = copy
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return copy


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["format"], "loadgate-result/1", "search.format: expected 'loadgate-search/1'"),
        (["search_id"], 5, "search.search_id: expected a string"),
        (["plan", "probe_s"], "15s", "search.plan.probe_s: expected an integer"),
        (["steps", 2, "step", "phase"], "soak", r"search.steps\[2\].step.phase: must be one of"),
        (["steps", 0, "outcome", "passed"], "yes", r"steps\[0\].outcome.passed: expected true"),
        (["result", "status"], "done", "search.result.status: must be one of"),
        (["stack"], [], "search.stack: expected an object"),
    ],
)
def test_search_record_names_the_bad_field(
    path: list[str | int], value: object, message: str
) -> None:
    d = broken(a_search_record().to_dict(), path, value)
    with pytest.raises(RecordError, match=message):
        SearchRecord.from_dict(d)


def test_a_missing_field_is_named() -> None:
    d = a_search_record().to_dict()
    del d["result"]["load_s"]
    with pytest.raises(RecordError, match=r"search\.result\.load_s: missing"):
        SearchRecord.from_dict(d)
    with pytest.raises(RecordError, match="search: not JSON"):
        SearchRecord.from_json("{")


# ---- compare.json ---------------------------------------------------------------------------


BASE = Side("queue 1000", {"profile": "charm-default", "queue_size": 1000, "commit": "0123abc"})
CAND = Side("queue 5000", {"profile": "queue-5000", "queue_size": 5000, "commit": "0123abc"})
CAPACITIES = {BASELINE: [183_000, 183_000, 200_000], CANDIDATE: [154_000, 154_000, 168_000]}
CPU = {BASELINE: [0.31, 0.30, 0.32], CANDIDATE: [0.25, 0.32, 0.40]}


def repeat_runs() -> list[RepeatRecord]:
    return [
        RepeatRecord(
            run.position,
            run.side,
            run.repeat,
            {
                "capacity_per_min": CAPACITIES[run.side][run.repeat - 1],
                "cpu_s_per_1000_records": CPU[run.side][run.repeat - 1]
                if run.repeat != 2 or run.side == BASELINE
                else None,
            },
            ref=f"search-{run.position}",
        )
        for run in schedule(3)
    ]


def a_compare_record() -> CompareRecord:
    return CompareRecord.build(
        "compare-20260101-130000",
        BASE,
        CAND,
        repeat_runs(),
        [capacity_metric(0.05), CPU_PER_1000],
        started_at=1.0,
        ended_at=2.0,
        notes=["interleaved on one machine"],
    )


def test_compare_record_decides_each_metric_from_the_runs() -> None:
    record = a_compare_record()
    assert side_values(record.runs, CANDIDATE, "cpu_s_per_1000_records") == [0.25, None, 0.40]
    capacity, cpu = record.decisions
    assert capacity.decision == REGRESSION
    assert capacity.candidate == (154_000, 154_000, 168_000)
    # The candidate left its CPU unknown in pair 2 where the baseline measured it: a broken
    # candidate, a regression whatever its other values show.
    assert cpu.decision == REGRESSION
    assert cpu.broken_pairs == (2,)
    assert record.broken == (
        "broken candidate: it left metrics the baseline measured unknown: pair 2: "
        "cpu_s_per_1000_records unknown: a regression whatever the others say"
    )
    assert record.verdict == REGRESSION
    assert record.exit_code == 1
    d = record.to_dict()
    assert d["format"] == COMPARE_FORMAT
    assert d["baseline"] == {"name": "queue 1000", "description": BASE.description}
    assert d["repeats"] == 3
    assert [r["side"] for r in d["runs"]] == [BASELINE, CANDIDATE] * 3
    assert d["verdict"] == REGRESSION
    assert d["exit_code"] == 1
    assert (
        "Regression if the candidate left the metric unknown in a pair where the baseline "
        "measured it, or L > 0 and d >= m"
    ) in d["rule"]
    assert d["decisions"][1]["broken_pairs"] == [2]
    assert "broken_pairs" not in d["decisions"][0]
    assert d["fail_on"] == "regression"
    assert d["decisions"][0]["metric"]["resolution"] == 0.05


def test_compare_record_round_trips_through_json() -> None:
    record = a_compare_record()
    text = record.to_json()
    again = CompareRecord.from_json(text)
    assert again == record
    assert again.to_json() == text


def test_compare_record_refuses_a_verdict_that_disagrees_with_its_decisions() -> None:
    d = a_compare_record().to_dict()
    d["exit_code"] = 0
    with pytest.raises(
        RecordError, match=r"compare.exit_code: 0 disagrees with the decisions \(1\)"
    ):
        CompareRecord.from_dict(d)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["order"], "AABB", "compare.order: must be one of random, ABAB, ABBA"),
        (["runs", 1, "side"], "both", r"compare.runs\[1\].side: must be baseline or candidate"),
        (["runs", 0, "values", "capacity_per_min"], "fast", r"runs\[0\].values.capacity_per_min"),
        (["decisions", 0, "decision"], "better", r"compare.decisions\[0\].decision: must be one"),
        (["fail_on"], "better", "compare.fail_on: must be one of regression, worse"),
        (
            ["decisions", 0, "metric", "better"],
            "up",
            r"compare\.decisions\[0\]\.metric\.better: must be higher or lower",
        ),
        (["candidate", "description"], "rev 5", "compare.candidate.description: expected an"),
    ],
)
def test_compare_record_names_the_bad_field(
    path: list[str | int], value: object, message: str
) -> None:
    d = broken(a_compare_record().to_dict(), path, value)
    with pytest.raises(RecordError, match=message):
        CompareRecord.from_dict(d)


def test_a_record_of_the_previous_rule_keeps_its_verdict_and_text() -> None:
    """Format 1 (its 5 % per metric, guards, exit 2 when too noisy) reads with the verdict and
    exit code it was recorded with, and writes back as it was."""
    d = a_compare_record().to_dict()
    d.update(format="loadgate-compare/1", verdict="no-regression", exit_code=0)
    del d["fail_on"]
    for decision in d["decisions"]:
        decision["metric"]["guard"] = True
        del decision["settled"], decision["family"]
    record = CompareRecord.from_dict(d)
    assert (record.verdict, record.exit_code) == ("no-regression", 0)
    assert record.decisions[0].family is None
    again = record.to_dict()
    assert again["format"] == "loadgate-compare/1"
    assert (again["verdict"], again["exit_code"]) == ("no-regression", 0)
    assert "fail_on" not in again


def test_build_refuses_an_unknown_order() -> None:
    with pytest.raises(ValueError, match="order: must be one of random, ABAB, ABBA"):
        CompareRecord.build("c", BASE, CAND, repeat_runs(), [CPU_PER_1000], order="AB")


def test_a_search_record_keeps_figures_that_attribution_read() -> None:
    record = a_search_record()
    failed = [s for s in record.steps if not s.outcome.passed]
    assert failed
    figures = failed[0].figures
    assert figures is not None
    assert figures.queue_max == 1000
    # re-judging later with other thresholds needs nothing but the record
    assert attribute(replace(figures, loki_discarded=None)).verdict == "unknown"
