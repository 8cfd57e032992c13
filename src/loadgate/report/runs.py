"""One run as the report sees it: its revision and scenario, its load, and the figures of a row,
from its RunResult (None: not measured, never 0).

- **accepted / exported / stored per minute**: the run's records at those ledger steps (collector
  receiver, collector Loki exporter, LogQL count in Loki), divided by the load's duration (k6).
- **CPU s / 1,000 records**: the collector's mean CPU over the load (cores) x the load's duration
  / the records k6 got accepted x 1,000 (`capacity.compare.rule.cpu_per_1000`, as `loadgate
  compare`).
- **RSS MiB / 1,000 rec/min**: the collector's peak RSS over the load / (accepted per minute /
  1,000): memory per unit of throughput.
- **saturation per minute**: the collector's accepted records per minute over the steady window
  of a run whose queue filled (`saturation` of result.json, measure.saturation): the pipeline's
  throughput at its limit; None when the run did not saturate it or did not measure it, or
  when it lost records k6 saw acknowledged or its ledger cannot say (judge.soundness).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loadgate.capacity.compare.rule import cpu_per_1000
from loadgate.contract.spec import ARRIVAL_EXECUTORS
from loadgate.judge import soundness
from loadgate.records.result import RunResult
from loadgate.report import naming


@dataclass(frozen=True)
class Run:
    """What the report takes from one result.json (None: not measured)."""

    run_id: str
    started_at: float
    ended_at: float
    revision: str
    scenario: str
    offered_per_min: int | None  # arrival-rate executors only
    vus: int | None
    accepted_per_min: float | None
    exported_per_min: float | None
    stored_per_min: float | None
    p99_ms: float | None
    error_rate: float | None
    cpu_s_per_1000: float | None
    rss_mib_per_1000_per_min: float | None
    verdict: str
    labels: dict[str, str] = field(default_factory=dict[str, str])
    saturation_per_min: float | None = None  # a saturated run's steady-window throughput


def _per_min(count: int | None, duration_s: float | None) -> float | None:
    if count is None or not duration_s or duration_s <= 0:
        return None
    return count / duration_s * 60


def run_of(result: RunResult, presets: naming.Presets | None = None) -> Run:
    """The report's view of one run; `presets` name its settings (see report.naming)."""
    spec, client, pipeline = result.spec, result.client, result.pipeline
    duration = client.duration_s
    counts = {step.name: step.count for step in result.ledger.steps}
    load_s = result.ended_at - result.started_at
    arrival = spec.executor in ARRIVAL_EXECUTORS
    rss_max = pipeline.collector_rss_max_mib if pipeline is not None else None
    k6_pm = client.records_per_minute
    return Run(
        run_id=result.run_id,
        started_at=result.started_at,
        ended_at=result.ended_at,
        revision=naming.revision_of(spec.labels, result.environment, presets),
        scenario=naming.scenario_of(spec),
        offered_per_min=spec.rate if arrival else None,
        vus=None if arrival else spec.vus,
        accepted_per_min=_per_min(counts.get("accepted"), duration),
        exported_per_min=_per_min(counts.get("exported"), duration),
        stored_per_min=_per_min(counts.get("stored"), duration),
        p99_ms=client.p99_ms,
        error_rate=client.error_rate,
        cpu_s_per_1000=cpu_per_1000(
            pipeline.collector_cpu_mean if pipeline is not None else None,
            load_s,
            client.records_accepted,
        ),
        rss_mib_per_1000_per_min=(
            rss_max / (k6_pm / 1000) if rss_max is not None and k6_pm else None
        ),
        verdict=result.verdict,
        labels=dict(spec.labels),
        saturation_per_min=saturation_of(result),
    )


def saturation_of(result: RunResult) -> float | None:
    """A saturated run's throughput over its steady window (None: not saturated, unknown, or
    the run is unsound)."""
    sat = result.saturation
    if sat is None or soundness.unsound(result.run_id, result.ledger) is not None:
        return None
    return sat.reading.limit
