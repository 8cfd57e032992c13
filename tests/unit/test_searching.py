"""run_search against a simulated pipeline (a fake `execute`, no processes): each step a run at
its rate and duration, search.json written after every step, the stack settled before each
step, failures retried, the budget kept, and a stop leaving a partial record."""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.fakes.pipeline import SimulatedPipeline
from support.fakes.prometheus import FakeProm
from support.fakes.stack import COLLECTOR, EXPORTERS, LOKI
from support.fakes.target import FakeTarget
from support.runresults import pipeline, run_result, saturation

from loadgate.capacity.compare.values import capacity_value
from loadgate.capacity.search import driver as searching
from loadgate.capacity.search.record import SearchRecord
from loadgate.capacity.search.rule import (
    AT_LEAST_MAX,
    BISECT,
    FOUND,
    HOLD,
    IN_PROGRESS,
    OUT_OF_BUDGET,
    PROBE,
    SATURATION,
    SearchPlan,
    Step,
)
from loadgate.contract.spec import RunSpec
from loadgate.judge.attribution import COLLECTOR as COLLECTOR_COMPONENT
from loadgate.judge.soundness import Unsound
from loadgate.measure import queries as q
from loadgate.measure.pipeline import Scope
from loadgate.records.result import RunResult
from loadgate.runner import run as runner

BASE = RunSpec.from_params(
    {
        "rate": 1000,
        "duration": "1s",
        "body-min": 100,
        "body-max": 200,
        "p99-ms": 250,
        "labels": "revision=7",
        "min-logs-per-minute": 5,
    }
)
STACK = {"target": "fake", "profile": {"name": "test"}}


QUEUE_READ = "otelcol_exporter_queue_size"


def settling_prom(queue: list[float]) -> FakeProm:
    """The stack's Prometheus as settle() reads it between steps (on the wall clock): scraped
    afresh whenever asked, the collector's queue as `queue` says, read by read (its last value
    for ever after)."""
    prom = FakeProm()
    script = list(queue)
    exp = {**COLLECTOR, "exporter": EXPORTERS["logs"]}

    def scrape(p: FakeProm, query: str) -> None:
        if QUEUE_READ in query:  # read where it was scraped: the next scrapes hold the next
            if len(script) > 1:
                script.pop(0)
            return
        p.now = math.ceil(time.time() * 1000) / 1000  # to the ms, as the client sends times
        p.add(q.COLLECTOR_CPU, COLLECTOR, p.now, 1.0)
        p.add(q.COLLECTOR_QUEUE_SIZE, exp, p.now, script[0])
        p.add(q.LOKI_BUILD_INFO, LOKI, p.now, 1)

    prom.on_query = scrape
    return prom


def queue_reads(prom: FakeProm) -> int:
    return sum(QUEUE_READ in query for query in prom.queries)


def observing(
    sim: SimulatedPipeline, root: Path, search_id: str, prom: FakeProm, stop_at: int | None = None
) -> tuple[Callable[..., RunResult], dict[str, list[int]]]:
    """`sim.execute` as the search driver calls it, noting before each run the steps
    search.json held and the queue reads the settling made; stopped (Ctrl-C) at run `stop_at`."""
    seen: dict[str, list[int]] = {"steps_on_disk": [], "settled_before": []}

    def execute(spec: RunSpec, target: Any, runs: Path, **kw: Any) -> RunResult:
        assert runs == searching.runs_root(root, search_id)
        record = json.loads(searching.search_file(root, search_id).read_text())
        seen["steps_on_disk"].append(len(record["steps"]))
        assert record["result"]["status"] == IN_PROGRESS
        seen["settled_before"].append(queue_reads(prom))
        if stop_at is not None and len(sim.specs) == stop_at:
            raise KeyboardInterrupt
        return sim.execute(spec, target, runs, **kw)

    return execute, seen


def search(
    tmp_path: Path,
    sim: SimulatedPipeline,
    search_id: str,
    plan: SearchPlan | None = None,
    queue: list[float] | None = None,
    stop_at: int | None = None,
) -> tuple[SearchRecord, list[SearchRecord], dict[str, list[int]]]:
    prom = settling_prom(queue or [0.0])
    execute, seen = observing(sim, tmp_path, search_id, prom, stop_at)
    steps: list[SearchRecord] = []
    record = searching.run_search(
        FakeTarget(prom=prom),
        plan or SearchPlan(method=BISECT),
        BASE,
        tmp_path,
        search_id,
        STACK,
        scope=Scope(),
        on_step=steps.append,
        execute=execute,
    )
    return record, steps, seen


def test_each_step_is_a_run_at_its_rate_and_search_json_is_written_after_every_step(
    tmp_path: Path,
) -> None:
    sim = SimulatedPipeline.without_queue(150_000)
    record, seen, runs = search(tmp_path, sim, "s1")
    assert record.result.status == FOUND
    capacity = record.result.capacity_per_min
    assert capacity is not None
    assert capacity <= 150_000
    assert record.result.lowest_failing_per_min is not None
    assert record.result.lowest_failing_per_min > 150_000
    assert record.result.precision is not None
    assert record.result.precision <= 0.05
    # One run per step, at the step's rate and duration, with the base's payload and gates.
    assert [(s.rate, s.duration_s) for s in sim.specs] == [
        (r.step.rate, r.step.duration_s) for r in record.steps
    ]
    for spec, step in zip(sim.specs, record.steps, strict=True):
        assert spec.executor == "constant-arrival-rate"
        assert spec.run_id == f"s1-{step.step.index:02d}" == step.outcome.run_id
        assert (spec.body_min, spec.body_max, spec.p99_ms) == (100, 200, 250)
        assert spec.labels == {"revision": "7"}
        assert spec.min_logs_per_minute is None  # 95 % of each step's own rate
        assert step.figures is not None
        assert step.attribution is not None
        assert step.outcome.passed == (step.step.rate <= 150_000)
    # search.json held every finished step before the next one ran, and holds them all now.
    assert runs["steps_on_disk"] == list(range(len(record.steps)))
    assert [len(r.steps) for r in seen] == list(range(1, len(record.steps) + 1))
    on_disk = SearchRecord.from_json(searching.search_file(tmp_path, "s1").read_text())
    assert on_disk.result == record.result
    assert on_disk.steps == record.steps
    assert on_disk.stack == STACK
    assert on_disk.ended_at is not None
    assert on_disk.wall_s is not None
    # The bottleneck at the lowest failing rate, citing its figure.
    assert record.bottleneck is not None
    assert record.bottleneck.verdict == COLLECTOR_COMPONENT
    assert any(c.figure == "queue_max" for c in record.bottleneck.claims)
    assert record.result.load_s <= record.plan.budget_s


def test_the_stack_settles_before_every_step(tmp_path: Path) -> None:
    sim = SimulatedPipeline.without_queue(150_000)
    # The queue holds data for two reads before the first step, then stays empty.
    record, _, runs = search(tmp_path, sim, "s2", queue=[40.0, 3.0, 0.0])
    reads = runs["settled_before"]
    assert reads[0] == 3  # read until empty
    assert all(b > a for a, b in itertools.pairwise(reads))  # read again each step
    assert len(reads) == len(record.steps)


def test_a_stack_that_never_drains_stops_the_search_with_a_partial_record(
    tmp_path: Path,
) -> None:
    prom = settling_prom([0.0, 5.0])  # empty before step 0, never again
    sim = SimulatedPipeline.without_queue(150_000)
    with pytest.raises(runner.RunError, match="did not settle"):
        searching.run_search(
            FakeTarget(prom=prom),
            SearchPlan(),
            BASE,
            tmp_path,
            "s3",
            STACK,
            execute=sim.execute,
            settle_timeout=0.6,
        )
    partial = SearchRecord.from_json(searching.search_file(tmp_path, "s3").read_text())
    assert len(partial.steps) == 1
    assert partial.result.status == IN_PROGRESS
    assert any("did not settle" in n for n in partial.notes)


def test_a_failing_step_is_retried_and_a_spurious_failure_makes_no_knee(tmp_path: Path) -> None:
    sim = SimulatedPipeline.without_queue(1_000_000, flaky_once={200_000})
    record, _, _ = search(tmp_path, sim, "s4")
    attempts = [(r.step.rate, r.step.attempt, r.outcome.passed) for r in record.steps]
    assert (200_000, 1, False) in attempts
    assert (200_000, 2, True) in attempts
    assert record.result.status == AT_LEAST_MAX


def test_the_load_budget_stops_a_search_whose_holds_keep_failing(tmp_path: Path) -> None:
    sim = SimulatedPipeline.without_queue(400_000, hold_knee=100_000)
    plan = SearchPlan(method=BISECT, budget_s=200)
    record, _, _ = search(tmp_path, sim, "s5", plan)
    assert record.result.status == OUT_OF_BUDGET
    assert record.result.load_s <= 200
    assert sum(s.duration_s for s in sim.specs) == record.result.load_s
    assert any(r.step.phase == HOLD and not r.outcome.passed for r in record.steps)
    assert record.steps[0].step.phase == PROBE


def test_an_interrupted_search_leaves_its_finished_steps_and_says_so(tmp_path: Path) -> None:
    sim = SimulatedPipeline.without_queue(150_000)
    with pytest.raises(KeyboardInterrupt):
        search(tmp_path, sim, "s6", stop_at=2)
    partial = SearchRecord.from_json(searching.search_file(tmp_path, "s6").read_text())
    assert len(partial.steps) == 2
    assert partial.result.status == IN_PROGRESS
    assert partial.notes
    assert partial.notes[-1].startswith("interrupted during step 2")


def test_a_bad_search_id_or_plan_is_refused_before_any_step(tmp_path: Path) -> None:
    sim = SimulatedPipeline.without_queue(1)
    for bad in ("", "a b", "x" * 61):
        with pytest.raises(ValueError, match="search id"):
            searching.run_search(
                FakeTarget(),
                SearchPlan(),
                BASE,
                tmp_path,
                bad,
                STACK,
                execute=sim.execute,
            )
    with pytest.raises(ValueError, match="budget_s"):
        searching.run_search(
            FakeTarget(),
            SearchPlan(budget_s=10),
            BASE,
            tmp_path,
            "ok",
            STACK,
            execute=sim.execute,
        )
    assert sim.specs == []
    assert not list(tmp_path.iterdir())


def test_each_step_preallocates_vus_for_its_rate_at_the_p99_gate() -> None:
    base = RunSpec.from_params({"p99-ms": 100})  # 5 records per request
    # 100,000/min = 333 iterations/s; at 100 ms each, 34 in flight; twice that.
    assert searching.step_vus(base, 100_000) == 67
    assert searching.step_vus(base, 12_000) == base.vus == 10  # never below --vus
    assert searching.step_vus(base, 1_000_000) == searching.PREALLOCATED_VUS_MAX
    many = RunSpec.from_params({"vus": 300})
    assert searching.step_vus(many, 1_000_000) == 300
    step = searching.step_spec(base, Step(0, 100_000, 15, PROBE), "r-00")
    assert (step.vus, step.rate, step.duration, step.run_id) == (67, 100_000, "15s", "r-00")
    assert step.max_vus == 670


# ---- the saturate method ----------------------------------------------------------------------


def saturate_search(tmp_path: Path, sim: SimulatedPipeline, search_id: str) -> SearchRecord:
    return searching.run_search(
        FakeTarget(prom=settling_prom([0.0])),
        SearchPlan(),
        BASE,
        tmp_path,
        search_id,
        STACK,
        execute=sim.execute,
    )


def test_a_saturate_search_measures_then_holds_around_the_throughput(tmp_path: Path) -> None:
    sim = SimulatedPipeline.without_queue(210_000)
    record = saturate_search(tmp_path, sim, "sat1")
    steps = [(s.step.phase, s.step.rate, s.step.duration_s) for s in record.steps]
    # holds that must keep up: 30 s each (search.saturate.hold_seconds)
    assert steps == [(SATURATION, 300_000, 30), (HOLD, 221_000, 30), (HOLD, 200_000, 30)]
    first = sim.specs[0]
    assert (first.max_error_rate, first.p99_ms, first.min_logs_per_minute) == (1.0, 3_600_000, 0)
    assert first.vus == 300
    assert first.labels == {"revision": "7"}
    assert all(s.max_error_rate == BASE.max_error_rate for s in sim.specs[1:])
    measured = record.steps[0].outcome
    assert measured.saturated is True
    assert measured.throughput_per_min == 210_000
    assert measured.queue_records == 5000
    assert not measured.passed  # the pipeline did not take everything offered
    assert measured.verdict == "SATURATED at 210,000/min"
    assert record.result.status == FOUND
    assert record.result.capacity_per_min == 200_000
    assert record.result.saturation_per_min == 210_000
    assert record.plan.max_error_rate == BASE.max_error_rate
    assert record.bottleneck is not None  # the failing hold's, not the saturation step's
    assert record.bottleneck.verdict == COLLECTOR_COMPONENT
    on_disk = SearchRecord.from_json(searching.search_file(tmp_path, "sat1").read_text())
    assert on_disk.steps == record.steps
    assert on_disk.result == record.result
    assert not record.notes


def test_without_a_steady_window_the_saturation_step_reads_k6s_accepted_rate(
    tmp_path: Path,
) -> None:
    sim = SimulatedPipeline.without_queue(210_000, unmeasured=1)  # no steady window
    record = saturate_search(tmp_path, sim, "sat2")
    measured = record.steps[0].outcome
    assert measured.saturated is True  # 70 % of the offered rate accepted
    assert measured.throughput_per_min == pytest.approx(210_000, rel=0.01)
    assert record.notes == (
        "step 0 (sat2-00): no steady window (too short): the throughput is k6's accepted rate "
        "over the whole load less what the queue held at its fullest",
    )
    assert record.result.status == FOUND


def test_saturated_when_the_queue_grew_or_filled_without_a_steady_window() -> None:
    spec = searching.step_spec(BASE, Step(0, 141_000, 30, SATURATION), "s-00")
    growing = replace(
        run_result(spec),
        saturation=saturation(141_000, 141_000, saturated=False, exported_per_min=131_000),
    )
    assert searching.saturation_of(growing) == (True, 131_000, 5000, "")
    even = replace(run_result(spec), saturation=saturation(141_000, 141_000, saturated=False))
    assert searching.saturation_of(even)[:2] == (False, 141_000)
    hold = searching.step_spec(BASE, Step(1, 90_000, 40, HOLD), "s-01")
    late = saturation(90_000, None, saturated=None, reason="the steady window is 6s")
    full = run_result(hold, accepted_ratio=0.99, pipe=pipeline(accepted=59_400, queue_size_max=990))
    filled = searching.saturation_of(replace(full, saturation=late))
    assert filled[0] is True  # the queue reached 90 % of its capacity
    # k6 got 89,100/min in; 990 requests of 5 records were still queued: 7,425/min less
    assert filled[1] == pytest.approx(89_100 - 7_425)
    assert filled[3] == (
        "no steady window (the steady window is 6s): the throughput is k6's accepted rate over "
        "the whole load less what the queue held at its fullest"
    )
    calm = run_result(hold, pipe=pipeline(accepted=60_000, queue_size_max=40))
    assert searching.saturation_of(replace(calm, saturation=late))[0] is False


def test_the_holds_are_judged_by_the_base_runs_error_gate(tmp_path: Path) -> None:
    base = RunSpec.from_params({**BASE.to_params(), "max-error-rate": 0.002})
    sim = SimulatedPipeline.without_queue(210_000)
    record = searching.run_search(
        FakeTarget(prom=settling_prom([0.0])),
        SearchPlan(keep_up_s=0),  # holds judged by the gates alone, as long as the queue fills
        base,
        tmp_path,
        "sat3",
        STACK,
        execute=sim.execute,
    )
    assert record.plan.max_error_rate == 0.002
    # a stricter gate sees the overflow sooner: shorter holds (1 - 1.25 x 0.2 % x 21 = 0.9475)
    assert [s.step.duration_s for s in record.steps[1:]] == [31, 31]


KEEPING_UP = SearchPlan()


def test_a_hold_that_fell_behind_fails_though_its_gates_passed() -> None:
    hold = searching.step_spec(BASE, Step(2, 111_000, 30, HOLD), "s-02")
    step = Step(2, 111_000, 30, HOLD)

    def judged(exported: float, plan: SearchPlan | None = KEEPING_UP) -> Any:
        sat = saturation(111_000, 111_000, saturated=False, exported_per_min=exported)
        return searching.outcome_of(step, replace(run_result(hold), saturation=sat), 40.0, plan)

    # 1 - 5 % / 2: it must send on at least 97.5 % of what it took in
    behind = judged(107_000)
    assert not behind.passed
    assert behind.saturated is True  # its queue grew: an observation, not a glitch
    assert behind.verdict == "FAIL: fell behind (sent on 107,000 of 111,000/min: < 97.5%)"
    kept = judged(108_900)  # 98.1 %: what a hold at this machine's knee sends on
    assert kept.passed
    assert kept.verdict == "PASS"
    # judged by the gates alone: without the plan, with keep_up_s 0, or without figures
    assert judged(107_000, None).passed
    assert judged(107_000, SearchPlan(keep_up_s=0)).passed
    # without a steady window: k6's accepted rate against that less the queue at its fullest
    late = saturation(111_000, None, saturated=None, reason="the steady window is 0s")
    calm = replace(
        run_result(hold, pipe=pipeline(accepted=55_500, queue_size_max=12)), saturation=late
    )
    assert searching.outcome_of(step, calm, 40.0, KEEPING_UP).passed
    # a queue that reached 893 of 1,000 (4,465 records) by the end: 8,930/min not sent on
    nearly = replace(
        run_result(hold, pipe=pipeline(accepted=55_500, queue_size_max=893)), saturation=late
    )
    fell = searching.outcome_of(step, nearly, 40.0, KEEPING_UP)
    assert not fell.passed
    assert fell.verdict == "FAIL: fell behind (sent on 102,070 of 111,000/min: < 97.5%)"


# ---- a step that lost acknowledged records (issue 38) -------------------------------------------


def test_a_hold_that_lost_acknowledged_records_is_recorded_and_bounds_the_capacity(
    tmp_path: Path,
) -> None:
    """The hold at 200,000 lost 1,200 records k6 saw acknowledged: it failed for good (no
    retry), the capacity is below it, the record says where and how many, and a comparison
    reads no capacity from the search."""
    sim = SimulatedPipeline(210_000, keep_up=1 - KEEPING_UP.precision / 2)

    def execute(spec: RunSpec, target: Any, runs: Path, **kw: Any) -> RunResult:
        """The simulated run, its ledger whole (the collector exported what k6 had accepted)
        but at 200,000, where the store misses 1,200 of them."""
        result = sim.execute(spec, target, runs, **kw)
        if spec.max_error_rate == 1.0:  # a saturation step
            return result
        accepted = result.client.records_accepted
        lost = 1_200 if spec.rate == 200_000 else 0
        figures = pipeline(accepted=accepted, collector_exported=accepted - lost)
        ratio, errors = (1.0, 0.0) if result.client.error_rate == 0 else (0.97, 0.03)
        judged = run_result(spec, accepted_ratio=ratio, error_rate=errors, pipe=figures)
        return replace(judged, saturation=result.saturation)

    record = searching.run_search(
        FakeTarget(prom=settling_prom([0.0])), KEEPING_UP, BASE, tmp_path, "loss", STACK,
        execute=execute,
    )  # fmt: skip
    holds = [(s.step.rate, s.step.attempt, s.outcome.lost_records) for s in record.steps[1:]]
    assert holds == [(221_000, 1, None), (200_000, 1, 1_200), (181_000, 1, None)]
    assert not record.steps[2].outcome.passed
    assert (record.result.capacity_per_min, record.result.lowest_failing_per_min) == (
        181_000, 200_000,
    )  # fmt: skip
    assert record.lost_records == 1_200
    assert record.losses == (
        Unsound("loss-02", 1_200, "it lost 1,200 acknowledged records (hold at 200,000/min)"),
    )
    assert capacity_value(record) == (
        None,
        ["capacity unknown: search loss lost 1,200 acknowledged records (hold at 200,000/min) "
         "in loss-02"],
    )  # fmt: skip
    text = searching.search_file(tmp_path, "loss").read_text()
    assert SearchRecord.from_json(text) == record
    # a record written before losses were kept reads as one that shows none
    older = json.loads(text)
    for step in older["steps"]:
        step["outcome"].pop("lost_records", None)
    assert SearchRecord.from_dict(older).lost_records == 0
    assert SearchRecord.from_dict(older).losses == ()
    assert capacity_value(SearchRecord.from_dict(older))[0] == 181_000
