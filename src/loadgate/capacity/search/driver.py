"""`loadgate search` driven for real: each step of the capacity search is a run on a target.

The strategy (which rate next, when to stop) is the pure state machine of `rule`; this module
runs what it asks: before each step it waits until the stack has settled (the collector's
sending queue empty in a fresh scrape; the run's own baseline then waits for a quiet collector),
runs the step with `runner.execute` at the step's rate for its duration, judges it with the
run's gates (error rate, p99, records per minute, nothing lost), attributes what gave way from
the run's figures, and writes `search.json` after every step, so an interrupted or broken search
leaves a partial record (status `in-progress`).

A saturation step runs with the gates of `loadgate run --saturate` (refusals expected) and
gives the rule the run's saturation figures: whether its queue filled, the throughput over the
steady window and the queue's capacity in records. Without a steady window (e.g. the queue
filled too late) the throughput is k6's accepted rate over the whole load, saturated when that
fell short of 95 % of the offered rate, and a note says so. A step whose run lost records k6
saw acknowledged, or whose ledger cannot say (judge.soundness), has no saturation figures: a
saturation step's reading is unknown (measured once more, as any unknown reading), and a hold
is judged by its gates, its lost gate among them. A step that lost acknowledged records says how
many (`StepOutcome.lost_records`, `SearchRecord.losses`): a judged one failed for good, bounding
the capacity from above (no retry overrules a loss), and a comparison counts it as a loss.

Files: `<results_root>/<search_id>/search.json`, and each step's run under it:
`<results_root>/<search_id>/runs/<search_id>-NN/result.json` (NN the step index).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from loadgate.capacity.search import saturate
from loadgate.capacity.search.record import SEARCH_FILE, SearchRecord
from loadgate.capacity.search.rule import (
    HOLD,
    SATURATE,
    SATURATION,
    Search,
    SearchPlan,
    Step,
    StepOutcome,
)
from loadgate.contract.gates import PASS
from loadgate.contract.params import ACCEPTED_SHARE
from loadgate.contract.spec import RunSpec, SpecError, is_run_id
from loadgate.judge import run_figures, soundness
from loadgate.judge.attribution import Attribution, BottleneckFigures
from loadgate.measure import pipeline as pipe
from loadgate.measure.queries import PrometheusAPI
from loadgate.measure.saturation import FULL_SHARE, SATURATE_PARAMS, UNKNOWN
from loadgate.records import result as results
from loadgate.records.result import RunResult
from loadgate.runner import run as runner
from loadgate.runner.target import Progress, Target

_RUNS_DIR = "runs"
SETTLE_TIMEOUT = 120.0  # seconds the queue may take to empty between steps
_MAX_SEARCH_ID = 60  # leaves room for the step suffix in a run id (64 characters)
PREALLOCATED_VUS_MAX = 100  # each VU compiles the scenario: start-up time and memory
# A saturation step's pre-allocated VUs, as `loadgate run --saturate`'s.
_SATURATE_VUS = int(str(SATURATE_PARAMS["vus"]))

Execute = Callable[..., RunResult]


def _search_dir(results_root: Path, search_id: str) -> Path:
    return results_root / search_id


def search_file(results_root: Path, search_id: str) -> Path:
    return _search_dir(results_root, search_id) / SEARCH_FILE


def runs_root(results_root: Path, search_id: str) -> Path:
    """Where the steps' runs are written (each in its own `<run_id>/` folder)."""
    return _search_dir(results_root, search_id) / _RUNS_DIR


def _step_run_id(search_id: str, step: Step) -> str:
    return f"{search_id}-{step.index:02d}"


def check_search_id(search_id: str) -> str | None:
    """What is wrong with a search id (None: fine)."""
    if not is_run_id(search_id) or len(search_id) > _MAX_SEARCH_ID:
        return (
            f"must be 1-{_MAX_SEARCH_ID} characters of letters, digits, '_', '.', '-', starting "
            f"with a letter or digit; got {search_id!r}"
        )
    return None


def step_vus(base: RunSpec, rate: int) -> int:
    """VUs a step pre-allocates: enough for its arrival rate at the p99 gate's latency, twice
    over (Little's law), at least `base.vus`, at most PREALLOCATED_VUS_MAX unless `base.vus`
    asks for more. With too few, k6 drops iterations while it allocates VUs mid-run: the
    offered rate would fall short for the generator's sake, not the pipeline's."""
    per_second = rate / base.records_per_iteration / 60
    needed = math.ceil(2 * per_second * base.p99_ms / 1000)
    return max(base.vus, min(PREALLOCATED_VUS_MAX, needed))


def step_spec(base: RunSpec, step: Step, run_id: str) -> RunSpec:
    """The run of one step: `base` (scenario, payload, gates, labels) at the step's rate and
    duration, constant arrival rate, VUs for that rate (`step_vus`), the records-per-minute
    gate at 95 % of the step's rate. A saturation step takes the VUs and gates of
    `loadgate run --saturate` (SATURATE_PARAMS) instead."""
    params = base.to_params()
    params.pop("min-logs-per-minute", None)
    params.update(
        executor="constant-arrival-rate",
        rate=step.rate,
        duration=step.duration,
        run_id=run_id,
        vus=step_vus(base, step.rate),
    )
    if step.phase == SATURATION:
        params.update({k: v for k, v in SATURATE_PARAMS.items() if k not in ("rate", "vus")})
        params["vus"] = max(base.vus, _SATURATE_VUS)
    try:
        return RunSpec.from_params(params)
    except SpecError as exc:
        raise ValueError(f"step {step.index} at {step.rate:,}/min: {exc}") from None


def saturation_of(result: RunResult) -> tuple[bool | None, float | None, float | None, str]:
    """(saturated, throughput per minute, queue capacity in records, a note) from a run.

    Over a steady window: what the exporter sent on per minute (the collector's accepted, then
    Loki's stored, when unknown: a measured 0 is taken); saturated when the queue filled, or
    when the exporter sent on less than GROWING_SHARE of what the receiver took (the queue was
    growing: it would have filled in a longer run): the figures' reading at its limit. Without
    one: k6's accepted rate over the whole load less what the queue held at its fullest
    (accepted, not sent on during the load), with a note saying why (unknown when that
    high-water mark is, or when it exceeds what k6 had accepted); saturated when the queue
    filled (its high-water mark at FULL_SHARE of its capacity) or k6 got less than
    ACCEPTED_SHARE of the offered rate in. None where unknown."""
    sat, spec, pipeline = result.saturation, result.spec, result.pipeline
    capacity = sat.queue_capacity if sat is not None else None
    if capacity is None and pipeline is not None:
        capacity = pipeline.queue_capacity
    queue_records = capacity * spec.logs_per_request if capacity is not None else None
    if sat is not None and sat.reading.state != UNKNOWN:
        measured = (sat.exported_per_min, sat.accepted_per_min, sat.stored_per_min)
        throughput = next((v for v in measured if v is not None), None)
        if throughput is not None:
            return sat.reading.at_limit, throughput, queue_records, ""
    offered = spec.offered_logs_per_minute
    accepted = result.client.records_per_minute if result.complete else None
    if not offered or accepted is None:
        return None, None, queue_records, "saturation unknown: no figures"
    high = pipeline.queue_size_max if pipeline is not None else None
    filled = bool(capacity and high is not None and high >= FULL_SHARE * capacity)
    saturated = filled or accepted < ACCEPTED_SHARE * offered
    why = sat.reason if sat is not None and sat.reason else "not measured"
    seconds = result.client.duration_s
    if high is None or seconds <= 0:
        what = "the queue's high-water mark is unknown" if high is None else "no load seconds"
        note = f"no steady window ({why}) and {what}: the throughput is unknown"
        return saturated, None, queue_records, note
    queued = high * spec.logs_per_request * 60 / seconds
    if queued > accepted:
        note = (
            f"no steady window ({why}), and the queue held more than k6 had accepted "
            f"({queued:,.0f} > {accepted:,.0f}/min): the throughput is unknown"
        )
        return saturated, None, queue_records, note
    note = (
        f"no steady window ({why}): the throughput is k6's accepted rate over the whole load "
        "less what the queue held at its fullest"
    )
    return saturated, accepted - queued, queue_records, note


def _taken_and_sent(
    result: RunResult, throughput: float | None
) -> tuple[float | None, float | None]:
    """What a hold's pipeline took in and sent on per minute: over its steady window; without
    one (a queue that reached FULL_SHARE only at the end leaves none), k6's accepted rate and
    saturation_of's reading of it (that less what the queue held at its fullest)."""
    sat = result.saturation
    if sat is not None and sat.accepted_per_min is not None and sat.exported_per_min is not None:
        return sat.accepted_per_min, sat.exported_per_min
    return (result.client.records_per_minute if result.complete else None), throughput


def outcome_of(
    step: Step, result: RunResult, wall_s: float | None, plan: SearchPlan | None = None
) -> StepOutcome:
    """A step's outcome from its run: passed when every gate passed and, for a hold of a plan
    whose holds must keep up, the pipeline kept up (saturate.fell_behind: a hold that
    fell behind counts as saturated, its queue growing); a saturation step when the pipeline
    took everything offered. A run that lost acknowledged records, or whose ledger cannot say,
    gives no throughput, and a saturation step of it no reading (unknown); one that lost
    records says how many (`lost_records`), and a judged step of it failed, whatever its gates
    said."""
    figures = result.pipeline
    failed = [g.name for g in result.gates if not g.passed]
    passed = result.verdict == PASS
    saturated, throughput, queue_records, _ = saturation_of(result)
    bad = soundness.unsound(result.run_id, result.ledger)
    if plan is not None and plan.method == SATURATE and step.phase == HOLD:
        took, sent = _taken_and_sent(result, throughput)
        if saturate.fell_behind(plan, took, sent):
            share = saturate.keep_up_share(plan)
            failed.append(f"fell behind (sent on {sent:,.0f} of {took:,.0f}/min: < {share:.1%})")
            passed, saturated = False, True
    lost = bad.lost if bad is not None and bad.lost else None
    if lost and passed:
        failed.append(f"lost {lost:,} acknowledged records")
        passed = False
    verdict = PASS if passed else "FAIL: " + ", ".join(failed)
    if bad is not None:
        throughput = None
    if step.phase == SATURATION:
        if bad is not None:
            saturated = None
        passed = saturated is False
        verdict = (
            ("unknown" if bad is None else f"unknown: {bad.reason}")
            if throughput is None
            else f"{'SATURATED' if saturated else 'TOOK ALL'} at {throughput:,.0f}/min"
        )
    return StepOutcome(
        rate=step.rate,
        passed=passed,
        accepted_per_min=result.client.records_per_minute,
        p99_ms=result.client.p99_ms,
        error_rate=result.client.error_rate,
        queue_max=figures.queue_size_max if figures else None,
        collector_cpu_cores=figures.collector_cpu_max if figures else None,
        loki_discarded=figures.loki_discarded if figures else None,
        verdict=verdict,
        run_id=result.run_id,
        wall_s=round(wall_s, 1) if wall_s is not None else None,
        saturated=saturated,
        throughput_per_min=round(throughput, 1) if throughput is not None else None,
        queue_records=queue_records,
        lost_records=lost,
    )


def _settle(
    prom: PrometheusAPI,
    scope: pipe.Scope,
    timeout: float = SETTLE_TIMEOUT,
    scrape_timeout: float = 30.0,
) -> float:
    """Wait until a fresh scrape shows the collector's sending queue empty; the seconds it took.
    Raises runner.RunError when it still holds data after `timeout` (a stack that cannot
    drain: the next step would measure the previous one's backlog)."""
    started = time.monotonic()
    since = time.time()
    while True:
        horizon = runner.wait_fresh_scrape(prom, since, scrape_timeout, scope)
        queue = prom.instant(scope.queue_size(), horizon)
        elapsed = time.monotonic() - started
        if not queue:
            return elapsed
        if elapsed > timeout:
            raise runner.RunError(
                f"the stack did not settle: the collector's queue still held {queue:g} after "
                f"{timeout:g}s"
            )
        since = horizon + 0.001
        time.sleep(0.5)


def write_record(record: SearchRecord, results_root: Path) -> Path:
    return results.write_atomic(search_file(results_root, record.search_id), record.to_json())


def run_search(
    target: Target,
    plan: SearchPlan,
    base: RunSpec,
    results_root: Path,
    search_id: str,
    stack: Mapping[str, Any],
    *,
    scope: pipe.Scope | None = None,
    on_step: Callable[[SearchRecord], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    drain_timeout: float = 60.0,
    settle_timeout: float = SETTLE_TIMEOUT,
    scrape_timeout: float = 30.0,
    execute: Execute | None = None,
) -> SearchRecord:
    """Run the search to its end (found, at least max, below min, out of budget or steps) and
    return its record, written to `<results_root>/<search_id>/search.json` after every step.

    `on_step` gets the record after each step, `on_phase` a line per phase (settle, step, the
    run's own phases). A stop signal or a RunError (the stack broke) ends the search: the record
    so far is written (status in-progress, a note saying why) and the exception propagates.
    `execute` replaces `runner.execute` (tests)."""
    problem = check_search_id(search_id)
    if problem:
        raise ValueError(f"search id: {problem}")
    # the holds last until refusals pass the steps' own error-rate gate
    search = Search(replace(plan, max_error_rate=base.max_error_rate))  # validates the plan
    steps = _StepRunner(
        target,
        runs_root(results_root, search_id),
        execute or runner.execute,
        scope or pipe.Scope(),
        on_phase,
        on_progress,
        drain_timeout,
        settle_timeout,
        scrape_timeout,
    )
    log = _SearchLog(
        search_id, stack, search, results_root, started_at=time.time(), started=time.monotonic()
    )
    log.write()
    step: Step | None = None
    try:
        while (step := search.next_step()) is not None:
            step_started = time.monotonic()
            result = steps.run(base, search_id, step)
            log.add_step(step, result, step_started)
            rec = log.write()
            if on_step:
                on_step(rec)
    except BaseException as exc:
        where = f" during step {step.index} ({step.rate:,}/min)" if step is not None else ""
        why = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"stopped: {exc}"
        log.notes.append(f"{why}{where}; the record holds the steps that finished")
        log.write(ended=True)
        raise
    return log.write(ended=True)


@dataclass(frozen=True)
class _StepRunner:
    """Runs one step of a search: settles the stack, then runs the step's spec."""

    target: Target
    runs: Path
    execute: Execute
    scope: pipe.Scope
    on_phase: Callable[[str], None] | None
    on_progress: Callable[[Progress], None] | None
    drain_timeout: float
    settle_timeout: float
    scrape_timeout: float

    def phase(self, text: str) -> None:
        if self.on_phase:
            self.on_phase(text)

    def run(self, base: RunSpec, search_id: str, step: Step) -> RunResult:
        self.phase(f"settle: waiting for the collector's queue to empty before step {step.index}")
        _settle(self.target.prometheus(), self.scope, self.settle_timeout, self.scrape_timeout)
        spec = step_spec(base, step, _step_run_id(search_id, step))
        what = f"retry of {step.phase}" if step.attempt > 1 else step.phase
        self.phase(f"step {step.index}: {what} at {step.rate:,} records/min for {step.duration_s}s")
        return self.execute(
            spec,
            self.target,
            self.runs,
            drain_timeout=self.drain_timeout,
            on_progress=self.on_progress,
            on_phase=self.on_phase,
            scope=self.scope,
            scrape_timeout=self.scrape_timeout,
        )


@dataclass
class _SearchLog:
    """A search's record as it grows, written to `search.json` after every step."""

    search_id: str
    stack: Mapping[str, Any]
    search: Search
    results_root: Path
    started_at: float  # wall clock
    started: float  # monotonic
    attributions: list[tuple[BottleneckFigures | None, Attribution | None]] = field(
        default_factory=list[tuple[BottleneckFigures | None, Attribution | None]]
    )
    notes: list[str] = field(default_factory=list[str])

    def add_step(self, step: Step, result: RunResult, step_started: float) -> None:
        """The step's outcome recorded in the search, with its attribution and notes."""
        if not result.complete:
            self.notes.append(
                f"step {step.index} ({result.run_id}) is incomplete: " + "; ".join(result.problems)
            )
        plan = self.search.plan
        outcome = outcome_of(step, result, time.monotonic() - step_started, plan)
        bad = soundness.unsound(result.run_id, result.ledger)
        note = saturation_of(result)[3] if bad is None else f"saturation unknown: {bad.reason}"
        if step.phase == SATURATION and note:
            self.notes.append(f"step {step.index} ({result.run_id}): {note}")
        figures, attribution = run_figures.assess(result)
        self.search.record(step, outcome)
        self.attributions.append((figures, attribution))

    def write(self, ended: bool = False) -> SearchRecord:
        rec = SearchRecord.build(
            self.search_id,
            self.stack,
            self.search,
            self.attributions,
            started_at=self.started_at,
            ended_at=time.time() if ended else None,
            wall_s=round(time.monotonic() - self.started, 1),
            notes=self.notes,
        )
        write_record(rec, self.results_root)
        return rec
