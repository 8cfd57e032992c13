"""The figures bottleneck attribution reads, taken from a run's result (a `JudgedRun`: the
RunResult written to `result.json` and read back by `records.result.read`).

Pure: a run's result in, `BottleneckFigures` out. Each figure comes from one place of the result,
and a figure the run did not measure (absent, None, or listed as unknown by the pipeline) stays
None, never 0:

- `spec`: the offered rate (arrival-rate executors only: iterations per minute x records per
  iteration);
- `client` (k6's summary): accepted records per minute, duration, error rate, p99, dropped
  iterations;
- `gates`: the names of the gates that failed;
- `generator` (what the target measured of k6 itself; locally: its CPU seconds, user + sys, from
  the kernel's accounting when k6 is reaped; the machine's cores; the most VUs k6 reported in
  use, sampled every second); absent on the Juju target: unknown;
- `pipeline` (Prometheus): the sending queue's high-water mark and capacity, refused, enqueue
  failed and send failed records, the memory limiter's refusals, the collector's CPU max and
  mean, Loki's received and discarded lines and its push p99.

Figures of components the scenario's load did not pass (its chain: the collector for
loki-push, Loki for otlp-metrics) are None: not part of the run's pipeline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from loadgate.contract.gates import Gate
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.judge.attribution import LOKI, Attribution, BottleneckFigures, attribute, chain_of
from loadgate.judge.claims import Chain
from loadgate.measure.other_traffic import OtherTraffic
from loadgate.measure.pipeline import PipelineFigures


class _Delivered(Protocol):
    @property
    def other(self) -> OtherTraffic | None: ...


class JudgedRun(Protocol):
    """What attribution reads of a run's result (`records.result.RunResult` is one): judge/
    sits below records/, so it names the parts it reads rather than the record."""

    @property
    def spec(self) -> RunSpec: ...
    @property
    def client(self) -> ClientFigures: ...
    @property
    def pipeline(self) -> PipelineFigures | None: ...
    @property
    def delivered(self) -> _Delivered | None: ...
    @property
    def gates(self) -> Sequence[Gate]: ...
    @property
    def generator(self) -> Mapping[str, Any]: ...


def _num(data: Mapping[str, Any], key: str) -> float | None:
    """A number of the generator block (what a target measured of k6), None when absent."""
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _int(data: Mapping[str, Any], key: str) -> int | None:
    value = _num(data, key)
    return int(value) if value is not None else None


def figures_from_result(result: JudgedRun) -> BottleneckFigures:
    """The attribution figures of a run."""
    spec, client, generator = result.spec, result.client, result.generator
    pipe = result.pipeline or PipelineFigures.unmeasured("the run has no pipeline figures")

    def count(name: str, value: int | None) -> int | None:
        """A pipeline count, None when listed as unknown (a restart, no series)."""
        return None if name in pipe.unknown else value

    offered = spec.offered_logs_per_minute
    return BottleneckFigures(
        offered_per_min=float(offered) if offered is not None else None,
        accepted_per_min=client.records_per_minute,
        duration_s=client.duration_s or spec.duration_s,
        error_rate=client.error_rate,
        p99_ms=client.p99_ms,
        failed_gates=tuple(g.name for g in result.gates if not g.passed),
        machine_cores=_num(generator, "machine_cores"),
        k6_cpu_s=_num(generator, "k6_cpu_s"),
        k6_cpu_limit=_num(generator, "k6_cpu_limit"),
        dropped_iterations=client.dropped_iterations,
        vus_max=_int(generator, "vus_max"),
        vus_limit=_int(generator, "vus_limit"),
        queue_max=pipe.queue_size_max,
        queue_capacity=pipe.queue_capacity,
        collector_refused=count("collector_refused", pipe.collector_refused),
        collector_enqueue_failed=count("collector_enqueue_failed", pipe.collector_enqueue_failed),
        collector_send_failed=count("collector_failed", pipe.collector_failed),
        memory_limiter_refused=count("memory_limiter_refused", pipe.memory_limiter_refused),
        collector_cpu_max=pipe.collector_cpu_max,
        collector_cpu_mean=pipe.collector_cpu_mean,
        loki_received=count("loki_received", pipe.loki_received),
        loki_discarded=count("loki_discarded", pipe.loki_discarded),
        loki_push_p99_ms=pipe.loki_push_p99_ms,
        other_traffic_per_min=_other_per_minute(result),
        wrong_answers=client.wrong_answers,
    )


def in_chain(figures: BottleneckFigures, chain: Chain) -> BottleneckFigures:
    """The figures with those of components off the chain set to None."""
    if not chain.collector:
        figures = replace(
            figures, queue_max=None, queue_capacity=None, collector_refused=None,
            collector_enqueue_failed=None, collector_send_failed=None,
            memory_limiter_refused=None, collector_cpu_max=None, collector_cpu_mean=None,
        )  # fmt: skip
    if chain.backend != LOKI:
        figures = replace(figures, loki_received=None, loki_discarded=None, loki_push_p99_ms=None)
    return figures


def assess(result: JudgedRun) -> tuple[BottleneckFigures, Attribution]:
    """The figures of a run and what they say gave way, along its scenario's chain."""
    chain = chain_of(result.spec.scenario)
    figures = in_chain(figures_from_result(result), chain)
    return figures, attribute(figures, chain=chain)


def bottleneck_block(result: JudgedRun) -> dict[str, Any]:
    """`bottleneck` of result.json: {"figures": ..., "attribution": ...}."""
    figures, attribution = assess(result)
    return {"figures": figures.to_dict(), "attribution": attribution.to_dict()}


def _other_per_minute(result: JudgedRun) -> float | None:
    """Other records per minute the collector carried in the run's window (issue 18)."""
    other = result.delivered.other if result.delivered is not None else None
    return other.per_minute if other is not None else None
