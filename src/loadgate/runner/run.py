"""One load run against a target, as named steps: baseline, load, drain, collect, read back,
judge, write.

Shared by every target; a target only says how to start the load, follow it, read the k6
summaries and reach Prometheus and Loki. Once the load has run, a failure to read the pipeline
(Prometheus or Loki down) no longer loses the run: what was measured is kept and written, and
the figures that could not be read are unknown, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from loadgate.contract import gates as gates_mod
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.judge import ledger as ledger_mod
from loadgate.judge import run_figures, signal_ledger
from loadgate.measure import cpu, saturation
from loadgate.measure import pipeline as pipe
from loadgate.measure import scenarios as scenario_measures
from loadgate.measure import timeseries as ts
from loadgate.measure.cpu import CpuReading
from loadgate.measure.queries import QueryError
from loadgate.records import result as results
from loadgate.records import series
from loadgate.runner import readback
from loadgate.runner.clock import SYSTEM, Clock
from loadgate.runner.drain import DrainOutcome, drain
from loadgate.runner.run_parts import (
    judge_gates,
    restart_notes,
    restarts_block,
    scenario_scope,
    scenario_store,
)
from loadgate.runner.target import (
    LoadWindow,
    Progress,
    RunError,
    Target,
    cpu_reading,
    generator_figures,
    load_window,
    poll_interval,
    quiet_seconds,
    resource_figures,
    service_states,
    speed_probe,
)
from loadgate.runner.waits import Quiet, wait_fresh_scrape, wait_quiet, wait_sampled

# What callers use of the runner, wherever it is defined.
__all__ = [
    "DrainOutcome",
    "Progress",
    "RunError",
    "RunOptions",
    "RunSteps",
    "Target",
    "drain",
    "execute",
    "wait_fresh_scrape",
    "wait_quiet",
]

_BUSY_NOTE = (
    "the collector kept accepting records {when} (its own logs?): the split of its own log "
    "records from the run's at the window's edge may be off by a few"
)
_OTHER_NOTE = (
    "the collector carried other traffic {when} ({rate:,.0f} records/min): the {edge} waited "
    "for its own records and its queue, not for an idle collector"
)


@dataclass(frozen=True)
class RunOptions:
    """How a run waits: `scope` selects the series of the pipeline under test (default: every
    Loki exporter and Loki; a scenario of another signal takes its own exporter and counters
    from it, measure/scenarios.py); `scrape_timeout` bounds each wait for a fresh scrape (the
    collector charm scrapes itself once a minute)."""

    drain_timeout: float = 60.0
    scope: pipe.Scope = field(default_factory=pipe.Scope)
    scrape_timeout: float = 30.0
    on_progress: Callable[[Progress], None] | None = None
    on_phase: Callable[[str], None] | None = None
    clock: Clock = SYSTEM


class RunSteps:
    """One run's state, filled in step by step (each step reads what the earlier ones left)."""

    def __init__(self, spec: RunSpec, target: Target, results_root: Path, options: RunOptions):
        self.spec, self.target, self.options = spec, target, options
        self.results_root = results_root
        self.out_dir = results.run_dir(results_root, spec.run_id)
        self.prom, self.loki = target.prometheus(), target.loki()
        # What is measured of this scenario: its counters, its store (measure/scenarios.py).
        self.measures = scenario_measures.of(spec.scenario)
        self.scope = scenario_scope(spec.scenario, options.scope, target)
        self.store = scenario_store(spec.scenario, target)
        self.quiet_s = quiet_seconds(target) if self.measures.own_logs else 0.0
        self.notes: list[str] = []
        self.problems: list[str] = []
        self.tracker = pipe.Tracker(self.prom, self.scope)
        self.started = self.ended = 0.0
        self.client: ClientFigures | None = None
        self.generator: dict[str, Any] = {}
        self.outcome: DrainOutcome | None = None
        self.figures = pipe.PipelineFigures.unmeasured("not collected")
        self.delivery: results.Delivery | None = None
        self.collected_at = 0.0
        # records/min the collector took in while the baseline and the end waited
        self.busy_rates: list[float | None] = [None, None]
        self.idle_cpu: tuple[CpuReading, CpuReading] | None = None
        self.window: LoadWindow | None = None

    def phase(self, text: str) -> None:
        if self.options.on_phase:
            self.options.on_phase(text)

    def _wait_quiet(self, when: str, edge: int) -> Quiet:
        """Wait for the collector's own records to be clear of an edge (0: start, 1: end)."""
        o = self.options

        def own_clear(horizon: float) -> bool:
            return readback.own_clear(self.loki, horizon, self.quiet_s, o.clock)

        found = wait_quiet(
            self.prom, self.scope, self.quiet_s, 4 * self.quiet_s + 10, o.scrape_timeout,
            clock=o.clock, own_clear=own_clear,
        )  # fmt: skip
        if found.busy:
            self.busy_rates[edge] = found.accepted_per_minute
        if not found.quiet:
            self.notes.append(_BUSY_NOTE.format(when=when))
        elif found.busy and found.accepted_per_minute:
            name = ("baseline", "end of the window")[edge]
            rate = found.accepted_per_minute
            self.notes.append(_OTHER_NOTE.format(when=when, rate=rate, edge=name))
        return found

    def baseline(self) -> None:
        """The counters' starting point, in a fresh scrape of the collector and Loki; then the
        idle CPU window, for at least cpu.IDLE_S from when the collector was seen clear of
        records (the previous run's leftover work is not idling): from the start of the wait
        for a quiet collector when it was already clear then, else from the wait's end."""
        o = self.options
        # The idle window's first reading and when, if the one as the wait began will do.
        early: tuple[CpuReading, float] | None = None
        if self.quiet_s > 0:
            self.phase(f"baseline: waiting until the collector has been idle for {self.quiet_s:g}s")
            began, began_at = cpu_reading(self.target), o.clock.monotonic()
            found = self._wait_quiet("before the run", 0)
            horizon = found.horizon
            if began is not None and began.at >= found.clear_from:
                early = (began, began_at)
        else:
            names = {pipe.OTELCOL: "the collector", pipe.LOKI: "Loki"}
            scraped = " and ".join(names[svc] for svc in self.scope.anchors())
            self.phase(f"baseline: waiting for a fresh Prometheus scrape of {scraped}")
            horizon = wait_fresh_scrape(
                self.prom, o.clock.time(), o.scrape_timeout, self.scope, clock=o.clock
            )
        idle_from, idle_began = early or (cpu_reading(self.target), o.clock.monotonic())
        try:
            self.tracker.baseline(horizon)
        except QueryError as exc:
            raise RunError(f"cannot read the baseline from Prometheus: {exc}") from None
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if idle_from is None:
            return
        o.clock.sleep(max(0.0, cpu.IDLE_S - (o.clock.monotonic() - idle_began)))
        idle_to = cpu_reading(self.target)
        if idle_to is not None:
            self.idle_cpu = (idle_from, idle_to)

    def load(self) -> None:
        """k6 runs the scenario; progress is reported every second. The load's window is
        from k6's first request to its last where the target sees them (k6 prepares its VUs
        first), else from k6's start to its end."""
        spec, clock = self.spec, self.options.clock
        self.phase(f"load: {spec.scenario} {spec.executor} for {spec.duration}")
        self.started = clock.time()
        self.target.start(spec, self.out_dir)
        try:
            while (progress := self.target.poll()) is not None:
                if self.options.on_progress:
                    self.options.on_progress(progress)
                clock.sleep(poll_interval(self.target))
        except BaseException:
            self.target.stop()
            raise
        self.ended = clock.time()
        self.client = self.target.finish()
        self.generator = generator_figures(self.target, spec)
        self.window = load_window(self.target)
        if self.window is not None:
            self.started, self.ended = self.window.first_request, self.window.last_request

    def _run_stored(self) -> int | None:
        """The run's units its store holds now (None: the store could not count)."""
        start, now = self.started - readback.RUN_LEAD_S, self.options.clock.time()
        try:
            return self.store.count(self.prom, self.loki, self.spec.run_id, start, now)
        except QueryError:
            return None

    def _all_stored(self) -> bool:
        assert self.client is not None
        stored = self._run_stored()
        return stored is not None and stored >= self.client.ledger_counts()[1]

    def _drain(self) -> DrainOutcome:
        """Wait until the collector's queue is empty; a load that went to the store itself
        has no queue: a fresh scrape after its end is all the wait."""
        o = self.options
        if not self.measures.through_collector:
            self.phase("drain: none (the load went to the store itself); a fresh scrape")
            began = o.clock.monotonic()
            horizon = wait_fresh_scrape(self.prom, self.ended, o.scrape_timeout, self.scope,
                                        clock=o.clock)  # fmt: skip
            self.tracker.advance(horizon)
            return DrainOutcome(True, o.clock.monotonic() - began, None)
        self.phase("drain: waiting for the collector's queue to empty")
        return drain(
            self.prom, self.tracker, self.ended, o.drain_timeout, scope=self.scope,
            scrape_timeout=o.scrape_timeout, all_stored=self._all_stored, clock=o.clock,
            run_stored=self._run_stored,
        )  # fmt: skip

    def drain_and_collect(self) -> None:
        """Wait for the queue to empty (and the collector to go quiet), then read the
        pipeline's figures from Prometheus; Prometheus failing here leaves them unknown."""
        o = self.options
        try:
            self.outcome = self._drain()
            if not self.outcome.drained:
                self.notes.append(
                    f"queue did not drain within {o.drain_timeout:g}s: records may still be "
                    "in flight"
                )
            elif self.quiet_s > 0:
                self.tracker.advance(self._wait_quiet("after the drain", 1).horizon)
            self.phase("collect: Prometheus and LogQL")
            counts = self.tracker.counts(self.tracker.until_ms / 1000)
            self.figures = pipe.collect(
                self.prom, counts, self.started, self.ended, self.outcome.queue_end, self.scope,
                self.tracker.restarts(),
            )  # fmt: skip
        except (RunError, QueryError) as exc:
            self.problems.append(f"pipeline figures unknown: {exc}")
            self.figures = pipe.PipelineFigures.unmeasured(str(exc))
        self.notes.extend(restart_notes(self.tracker.restarts()))

    def read_back(self) -> None:
        """The run's records, the collector's own records and other traffic in Loki; for a
        scenario whose pipeline has none of those, the run's units in its store."""
        if not self.measures.own_logs:
            self._wait_store_scraped()
            self.collected_at = self.options.clock.time()
            window = (self.started, self.collected_at)
            self.delivery = readback.stored_delivery(
                self.store, self.prom, self.loki, self.spec.run_id, window,
                self.outcome, self.problems,
            )  # fmt: skip
            return
        start, until = self.tracker.start_ms / 1000, self.tracker.until_ms / 1000
        own = readback.own_stored(self.loki, start, until, self.problems)
        # Other traffic is counted over the window the collector's counters really cover: from
        # the scrape of their first reading to that of their last.
        first, last = self.tracker.collector_window() or (start, until)
        rates = (self.busy_rates[0], self.busy_rates[1])
        other = readback.other_traffic(
            self.loki, self.spec.run_id, first, last, self.problems, rates
        )
        self.collected_at = self.options.clock.time()
        self.delivery = readback.delivery(
            self.loki, self.spec.run_id, self.started, self.collected_at, self.outcome, own,
            self.problems, other,
        )  # fmt: skip

    def _wait_store_scraped(self) -> None:
        """A store counted from its own scrapes (the traces stand-in): one scrape of it after
        the drain's horizon holds everything the collector's exporter had sent by then."""
        anchor = self.store.anchor
        if anchor is None:
            return
        o = self.options
        since = self.tracker.until_ms / 1000 if self.tracker.until_ms else self.ended
        try:
            wait_sampled(self.prom, anchor, since, o.scrape_timeout, clock=o.clock)
        except RunError as exc:
            self.problems.append(f"stored units may be short: {exc}")

    def judge(self) -> results.RunResult:
        """The ledger, the gates, the verdict and the bottleneck attribution."""
        spec, client, delivery = self.spec, self.client, self.delivery
        assert client is not None
        assert delivery is not None
        ledger = self._ledger(client, delivery)
        judged = judge_gates(spec, client, ledger)
        if client.dropped_iterations:
            self.notes.append(
                f"k6 dropped {client.dropped_iterations} iterations for lack of free VUs: those "
                f"{client.dropped_iterations * spec.records_per_iteration:,} {spec.kind.short} "
                "were never sent"
            )
        result = results.RunResult(
            run_id=spec.run_id, target=self.target.name, spec=spec, started_at=self.started,
            ended_at=self.ended, client=client, pipeline=self.figures, delivered=delivery,
            ledger=ledger, gates=judged, verdict=gates_mod.verdict(judged),
            environment=self._environment(), notes=self.notes,
            restarts=restarts_block(self.tracker, service_states(self.target), self.started),
            problems=self.problems, generator=self.generator, cpu=self._cpu_figures(client),
            load_window=self.window.to_dict() if self.window else None,
            saturation=self._saturation(), resources=resource_figures(self.target),
        )  # fmt: skip
        return replace(result, bottleneck=run_figures.bottleneck_block(result))

    def _ledger(self, client: ClientFigures, delivery: results.Delivery) -> ledger_mod.Ledger:
        """The scenario's ledger: log records with the collector's own and other traffic taken
        out, another signal through the collector, or a load straight to its store."""
        kind, stored = self.spec.kind, delivery.records
        if not self.measures.through_collector:
            sent, acknowledged = client.ledger_counts()  # logql-query: the lines it pushed
            pushed = replace(client, records_sent=sent, records_accepted=acknowledged)
            return signal_ledger.build_direct(pushed, self.figures, stored, kind.as_ledger())
        if self.measures.own_logs:
            return ledger_mod.build(client, self.figures, stored, delivery.own_stored,
                                    delivery.other)  # fmt: skip
        return signal_ledger.build_collector(client, self.figures, stored, kind)

    def _saturation(self) -> saturation.SaturationFigures | None:
        """The pipeline's throughput over its steady window (None when Prometheus failed, or
        for a scenario other than logs through the collector: not measured yet)."""
        if self.problems or not self.measures.own_logs:
            return None
        offered = self.spec.offered_logs_per_minute
        return saturation.measure(
            self.prom, self.loki, self.scope, self.spec.run_id,
            (self.started, self.ended), float(offered) if offered else None,
        )  # fmt: skip

    def _cpu_figures(self, client: ClientFigures) -> cpu.CpuFigures | None:
        """The run's CPU from the kernel (a target that sees its processes), else None."""
        if self.idle_cpu is None or self.window is None:
            return None
        figures = cpu.figures(self.idle_cpu, self.window.cpu, client.records_accepted)
        w = self.window
        probe_ns, jobs = speed_probe(self.target, w.first_request, w.last_request)
        return replace(figures, probe_ns_per_job=probe_ns, probe_jobs=jobs)

    def _environment(self) -> dict[str, Any]:
        env = dict(self.target.environment())
        window = int(self.collected_at - self.started) + 5
        p99_ms = readback.k6_p99_ms(self.prom, self.spec.run_id, window)
        if p99_ms is not None:
            env["p99_ms_prometheus"] = p99_ms
        return env

    def write(self, result: results.RunResult) -> None:
        """result.json, then the pipeline over time for the report (series.json; a series it
        cannot read is recorded as missing)."""
        results.write(result, self.results_root)
        o = self.options
        over_time = ts.fetch(
            self.prom, self.scope, self.spec.run_id, self.started, self.ended, o.clock.time()
        )
        series.write(self.out_dir, over_time)


def execute(
    spec: RunSpec,
    target: Target,
    results_root: Path,
    *,
    drain_timeout: float = 60.0,
    on_progress: Callable[[Progress], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    scope: pipe.Scope | None = None,
    scrape_timeout: float = 30.0,
    clock: Clock = SYSTEM,
) -> results.RunResult:
    """Run `spec` on `target` and write its result under `results_root`."""
    options = RunOptions(
        drain_timeout, scope or pipe.Scope(), scrape_timeout, on_progress, on_phase, clock
    )
    run = RunSteps(spec, target, results_root, options)
    run.baseline()
    run.load()
    run.drain_and_collect()
    run.read_back()
    result = run.judge()
    run.write(result)
    return result
