"""RunResults as the runner builds them, from a few figures: for tests of what reads them, and
the simulated pipeline's runs (support.fakes.pipeline)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from loadgate.contract import gates as gates_mod
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.judge import ledger as ledger_mod
from loadgate.judge import run_figures
from loadgate.measure.pipeline import FIGURES, PipelineFigures
from loadgate.measure.saturation import SaturationFigures
from loadgate.records.result import Delivery, RunResult


def pipeline(**over: Any) -> PipelineFigures:
    """A clean pipeline run of `accepted` records (no memory limiter: that one unknown)."""
    accepted = int(over.pop("accepted", 5000))
    values: dict[str, Any] = {
        "collector_accepted": accepted,
        "collector_refused": 0,
        "collector_exported": accepted,
        "collector_failed": 0,
        "collector_enqueue_failed": 0,
        "queue_size_max": 2.0,
        "queue_size_end": 0.0,
        "collector_cpu_max": 0.3,
        "collector_cpu_mean": 0.2,
        "collector_rss_max_mib": 80.0,
        "collector_rss_mean_mib": 70.0,
        "loki_received": accepted,
        "loki_discarded": 0,
        "collector_own_filtered": 0,
        "memory_limiter_refused": None,
        "queue_capacity": 1000.0,
        "loki_push_p99_ms": 12.0,
        "unknown": {"memory_limiter_refused": {"reason": "no series", "lower_bound": None}},
    }
    values.update(over)
    assert set(values) - {"unknown"} <= {*FIGURES, *PipelineFigures.__dataclass_fields__}
    return PipelineFigures(**values)


def run_result(
    spec: RunSpec,
    *,
    accepted_ratio: float = 1.0,
    p99_ms: float = 5.0,
    error_rate: float = 0.0,
    dropped: int = 0,
    pipe: PipelineFigures | None = None,
    generator: dict[str, Any] | None = None,
    problems: list[str] | None = None,
) -> RunResult:
    """The result of `spec` (constant arrival rate) with these figures, judged and attributed
    as runner.execute does."""
    duration = spec.duration_s
    offered = spec.offered_logs_per_minute or spec.rate
    accepted = round(offered * duration / 60 * accepted_ratio)
    requests = max(1, accepted // spec.logs_per_request)
    client = ClientFigures(
        requests=requests,
        failed=round(requests * error_rate),
        error_rate=error_rate,
        p99_ms=p99_ms,
        records_sent=accepted,
        records_accepted=accepted,
        records_per_minute=accepted * 60 / duration,
        duration_s=duration,
        dropped_iterations=dropped,
    )
    figures = pipe if pipe is not None else pipeline(accepted=accepted)
    stored = figures.collector_exported
    ledger = ledger_mod.build(client, figures, stored)
    judged = gates_mod.judge(spec, client, lost_records=ledger.lost_after_acceptance)
    result = RunResult(
        run_id=spec.run_id,
        target="local",
        spec=spec,
        started_at=1000.0,
        ended_at=1000.0 + duration,
        client=client,
        pipeline=figures,
        delivered=Delivery(stored, "q", True, 1.0),
        ledger=ledger,
        gates=judged,
        verdict=gates_mod.verdict(judged),
        problems=list(problems or []),
        generator=dict(
            generator
            if generator is not None
            else {"vus_limit": spec.max_vus, "k6_cpu_s": 0.2 * duration, "machine_cores": 2}
        ),
    )
    return replace(result, bottleneck=run_figures.bottleneck_block(result))


def saturation(offered: float, accepted: float | None, **over: Any) -> SaturationFigures:
    """A saturation block as the runner writes it (a steady window unless told otherwise)."""
    values: dict[str, Any] = {
        "offered_per_min": offered,
        "saturated": accepted is not None and accepted < offered,
        "window_s": 22.0,
        "accepted_per_min": accepted,
        "exported_per_min": accepted,
        "stored_per_min": accepted,
        "queue_capacity": 1000.0,
    }
    values.update(over)
    return SaturationFigures(**values)
