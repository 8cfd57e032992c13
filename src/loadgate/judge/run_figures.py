"""The figures bottleneck attribution reads, taken from a run's `result.json` (or its RunResult).

Pure: a mapping in, `BottleneckFigures` out. Each figure comes from one place of the result, and
a figure the run did not measure (absent, null, or listed as unknown by the pipeline) stays None,
never 0:

- `spec`: the offered rate (arrival-rate executors only: `iterations_per_minute` x records per
  iteration), the VU ceiling when the generator block lacks it;
- `client` (k6's summary): accepted records per minute, duration, error rate, p99, dropped
  iterations;
- `gates`: the names of the gates that failed;
- `generator` (what the target measured of k6 itself; locally: its CPU seconds, user + sys, from
  the kernel's accounting when k6 is reaped; the machine's cores; the most VUs k6 reported in
  use, sampled every second); absent on the Juju target: unknown;
- `pipeline` (Prometheus): the sending queue's high-water mark and capacity, refused, enqueue
  failed and send failed records, the memory limiter's refusals, the collector's CPU max and
  mean, Loki's received and discarded lines and its push p99.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadgate.judge.attribution import Attribution, BottleneckFigures, attribute

ARRIVAL_EXECUTORS = ("constant-arrival-rate", "ramping-arrival-rate")


def _map(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    return value if isinstance(value, Mapping) else {}  # pyright: ignore[reportUnknownVariableType]


def _num(data: Mapping[str, Any], key: str) -> float | None:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _int(data: Mapping[str, Any], key: str) -> int | None:
    value = _num(data, key)
    return int(value) if value is not None else None


def _pipeline_int(pipeline: Mapping[str, Any], key: str) -> int | None:
    """A pipeline count, None when missing or listed as unknown (a restart, no series)."""
    if key in _map(pipeline, "unknown"):
        return None
    return _int(pipeline, key)


def _offered(spec: Mapping[str, Any]) -> float | None:
    if spec.get("executor") not in ARRIVAL_EXECUTORS:
        return None
    ipm = _num(spec, "iterations_per_minute")
    lpr = _num(spec, "logs_per_request")
    rpi = _num(spec, "requests_per_iteration")
    if ipm is None or lpr is None:
        return None
    return ipm * lpr * (rpi if rpi is not None else 1.0)


def _failed_gates(gates: object) -> tuple[str, ...] | None:
    if not isinstance(gates, list):
        return None
    names: list[str] = []
    for gate in gates:  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(gate, Mapping):
            return None
        if gate.get("passed") is not True:  # pyright: ignore[reportUnknownMemberType]
            names.append(str(gate.get("name")))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    return tuple(names)


def figures_from_result(result: Mapping[str, Any]) -> BottleneckFigures:
    """The attribution figures of a run, from its result.json object."""
    spec, client = _map(result, "spec"), _map(result, "client")
    pipeline, generator = _map(result, "pipeline"), _map(result, "generator")
    vus_limit = _int(generator, "vus_limit")
    return BottleneckFigures(
        offered_per_min=_offered(spec),
        accepted_per_min=_num(client, "records_per_minute"),
        duration_s=_num(client, "duration_s") or _num(spec, "duration_s"),
        error_rate=_num(client, "error_rate"),
        p99_ms=_num(client, "p99_ms"),
        failed_gates=_failed_gates(result.get("gates")),
        machine_cores=_num(generator, "machine_cores"),
        k6_cpu_s=_num(generator, "k6_cpu_s"),
        k6_cpu_limit=_num(generator, "k6_cpu_limit"),
        dropped_iterations=_int(client, "dropped_iterations"),
        vus_max=_int(generator, "vus_max"),
        vus_limit=vus_limit,
        queue_max=_num(pipeline, "queue_size_max"),
        queue_capacity=_num(pipeline, "queue_capacity"),
        collector_refused=_pipeline_int(pipeline, "collector_refused"),
        collector_enqueue_failed=_pipeline_int(pipeline, "collector_enqueue_failed"),
        collector_send_failed=_pipeline_int(pipeline, "collector_failed"),
        memory_limiter_refused=_pipeline_int(pipeline, "memory_limiter_refused"),
        collector_cpu_max=_num(pipeline, "collector_cpu_max"),
        collector_cpu_mean=_num(pipeline, "collector_cpu_mean"),
        loki_received=_pipeline_int(pipeline, "loki_received"),
        loki_discarded=_pipeline_int(pipeline, "loki_discarded"),
        loki_push_p99_ms=_num(pipeline, "loki_push_p99_ms"),
        other_traffic_per_min=_num(_map(_map(result, "delivered"), "other_traffic"), "per_minute"),
    )


def assess(result: Mapping[str, Any]) -> tuple[BottleneckFigures, Attribution]:
    """The figures of a run and what they say gave way."""
    figures = figures_from_result(result)
    return figures, attribute(figures)


def bottleneck_block(result: Mapping[str, Any]) -> dict[str, Any]:
    """`bottleneck` of result.json: {"figures": ..., "attribution": ...}."""
    figures, attribution = assess(result)
    return {"figures": figures.to_dict(), "attribution": attribution.to_dict()}
