"""What a comparison's runs contribute: the metrics `--metrics` names, and each metric's value
read from a run's result (None: not measured, never 0; with a note saying why).

- `saturation`: the collector's accepted records per minute over a `--saturate` run's steady
  window (measure.saturation: the queue full, its fill transient left out). Only a saturated
  run gives a value: a pipeline that took all that was offered has a lower bound, not a limit.
- `pressure-p99`, `pressure-cpu`: k6's p99 and the collector's CPU seconds per 1,000 records of a
  fixed-rate run at the pressure rate (a fraction of the baseline's saturation throughput). The
  CPU is the kernel's marginal figure (`cpu.per_1000_records["otelcol"]`: the load window's CPU
  less the idle rate, measure.cpu) where the target sees its processes, else Prometheus's
  (mean cores over the load x its seconds / records, as the `cpu` metric); `sources` says which.
- `pressure-cpu-probe` (reported beside the verdict by default): the same CPU per 1,000
  records in jobs of the speed probe run beside the load on the pipeline's CPUs
  (measure.speed_probe): the CPU over the probe's median CPU per job in the same window. The
  host's slow stretches, which raise every process's CPU per record at once, raise the probe's
  as much and cancel; what the collector itself costs more does not (the probe does not depend
  on it). A stack's own level does not cancel. Unknown where the target runs no probe (older
  records).
- `pressure-cpu-loki` (the default gating CPU metric): the same run's collector CPU over Loki's,
  both the kernel's CPU seconds over the load window (`cpu.used_s`). Loki stores the records the
  collector sends on, on the same CPUs (the CPU split), so its CPU is the speed of that stack in
  that run: a host's slow stretch and a stack's own level (a pair of kept stacks that differ
  for the whole comparison, both their processes alike) cancel, and what the collector itself
  costs more does not. It assumes both sides run the same Loki (where they do not, it is
  reported beside the verdict: sides.loki_differs) and the candidate sends it the same work per
  record (the same records, batches and labels); `pressure-cpu-probe` beside it says the
  absolute change.
- `pressure-cpu-k6`: the same run's collector CPU over k6's, both from the kernel over the load
  window (the collector's marginal seconds / k6's seconds): k6 does the same work per record on
  both sides, so its CPU is the machine's speed in that run, and the host's slow stretches
  cancel. Unknown where the target cannot see the processes (Juju).
- `p99`, `cpu`: the same two of a run at the fixed `--rate` (CPU from Prometheus), the first
  comparison's metrics; `capacity`: a capacity search's knee.

A value counts only if its run is sound (judge.soundness): a run that lost records k6 saw
acknowledged, or whose ledger cannot say, gives None for every metric, with the reason; and only
if it passed its gates (`failed_gates`): a run that refused, fell short of its rate or passed
its p99 limit did not carry its load, and its p99 or CPU is not a measurement of speed (a
candidate that sheds load would look faster).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from loadgate.capacity.compare import rule
from loadgate.capacity.compare.rule import Metric
from loadgate.capacity.compare.sides import SideError
from loadgate.capacity.search.record import SearchRecord
from loadgate.capacity.search.rule import FOUND
from loadgate.contract.gates import FAIL
from loadgate.judge import soundness
from loadgate.judge.attribution import Attribution
from loadgate.judge.soundness import Unsound
from loadgate.measure.saturation import GROWING, REFUSING, TOOK_ALL, UNKNOWN
from loadgate.records import result as results
from loadgate.records.fields import RecordError

# `--metrics` keys, in the order a comparison lists them.
METRIC_KEYS: dict[str, Metric] = {
    "capacity": rule.CAPACITY,
    "saturation": rule.SATURATION,
    "pressure-p99": rule.PRESSURE_P99,
    "pressure-cpu": rule.PRESSURE_CPU,
    "pressure-cpu-probe": rule.PRESSURE_CPU_PROBE,
    "pressure-cpu-k6": rule.PRESSURE_CPU_K6,
    "pressure-cpu-loki": rule.PRESSURE_CPU_LOKI,
    "p99": rule.P99_AT_RATE,
    "cpu": rule.CPU_PER_1000,
}
DEFAULT_METRICS = ("saturation", "pressure-p99", "pressure-cpu-probe", "pressure-cpu-loki")
MAX_MARGIN_PERCENT = 500.0  # `--margins`: the widest a margin may be set
PRESSURE_METRICS = (
    rule.PRESSURE_P99.name, rule.PRESSURE_CPU.name, rule.PRESSURE_CPU_PROBE.name,
    rule.PRESSURE_CPU_K6.name, rule.PRESSURE_CPU_LOKI.name,
)  # fmt: skip
FIXED_RATE_METRICS = (rule.P99_AT_RATE.name, rule.CPU_PER_1000.name)

# Where a CPU per 1,000 records came from.
_CPU_KERNEL = "kernel"  # marginal: /proc at the load window's edges, less the idle rate
CPU_PROMETHEUS = "prometheus"  # the collector's mean cores over the load x its seconds


def _listed(
    flag: str, value: str, allowed: Sequence[str], unknown: str, tail: str = ""
) -> list[str]:
    """The comma-separated names in `value`, each one of `allowed`; SideError naming the flag
    when there are none, or some are not allowed (`unknown` formats them: "unknown {}")."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    choices = ", ".join(allowed) + tail
    if not names:
        raise SideError(f"{flag}: empty; allowed: {choices}")
    refused = [n for n in names if n not in allowed]
    if refused:
        listed = ", ".join(repr(n) for n in refused)
        raise SideError(f"{flag}: {unknown.format(listed)}; allowed: {choices}")
    return names


def parse_metrics(value: str, search_precision: float = 0.05) -> tuple[Metric, ...]:
    """`saturation,pressure-p99,...` (any of METRIC_KEYS, in that order in the result), as a
    comparison decides on them (rule.with_a_gate: a metric reported beside the verdict gates
    when no other one compared does). Raises SideError naming the flag."""
    names = _listed("--metrics", value, list(METRIC_KEYS), "unknown {}")
    out: list[Metric] = []
    for key in METRIC_KEYS:
        if key in names:
            metric = METRIC_KEYS[key]
            if key == "capacity":
                metric = rule.capacity_metric(search_precision)
            out.append(metric)
    return rule.with_a_gate(out)


def key_of(name: str) -> str | None:
    """The `--metrics` key of a metric's name (None: not one of METRIC_KEYS')."""
    return next((key for key, m in METRIC_KEYS.items() if m.name == name), None)


def _keys_compared(metrics: tuple[Metric, ...]) -> list[str]:
    """The `--metrics` keys of these metrics, in METRIC_KEYS' order."""
    names_compared = {m.name for m in metrics}
    return [key for key, m in METRIC_KEYS.items() if m.name in names_compared]


def apply_margins(metrics: tuple[Metric, ...], value: str | None) -> tuple[Metric, ...]:
    """The metrics with the margins `--margins KEY=PERCENT,...` sets (None: as they are; the
    defaults' come from a margins file: margins_file). A key not compared, or a percentage not
    more than 0 and at most MAX_MARGIN_PERCENT, raises SideError naming the flag and the
    allowed values."""
    if value is None:
        return metrics
    items = [item.strip() for item in value.split(",") if item.strip()]
    keys = [item.partition("=")[0].strip() for item in items]
    tail = f", each =PERCENT (more than 0, at most {MAX_MARGIN_PERCENT:g})"
    _listed("--margins", ",".join(keys), _keys_compared(metrics),
            "{} is not among the metrics compared", tail)  # fmt: skip
    margins: dict[str, float] = {}
    for key, item in zip(keys, items, strict=True):
        _, sep, number = item.partition("=")
        percent = _percent(number) if sep else None
        if percent is None:
            raise SideError(
                f"--margins: {key} must be a percentage more than 0 and at most "
                f"{MAX_MARGIN_PERCENT:g}, e.g. {key}=25; got {item!r}"
            )
        margins[METRIC_KEYS[key].name] = percent / 100
    return tuple(replace(m, margin=margins.get(m.name, m.margin)) for m in metrics)


def _percent(text: str) -> float | None:
    """'25' or '25%' as 25.0; None unless more than 0 and at most MAX_MARGIN_PERCENT."""
    try:
        number = float(text.strip().removesuffix("%"))
    except ValueError:
        return None
    if not math.isfinite(number) or not 0 < number <= MAX_MARGIN_PERCENT:
        return None
    return number


def _prometheus_cpu_per_1000(result: results.RunResult) -> float | None:
    """The collector's mean CPU (Prometheus) x the load window / records k6 had accepted."""
    cpu_mean = result.pipeline.collector_cpu_mean if result.pipeline is not None else None
    window = result.ended_at - result.started_at
    return rule.cpu_per_1000(
        cpu_mean, window if window > 0 else None, result.client.records_accepted
    )


def unsound(result: results.RunResult) -> Unsound | None:
    """Why a run's figures do not count (None: they do): it lost acknowledged records, or its
    ledger cannot be checked."""
    return soundness.unsound(result.run_id, result.ledger)


def failed_gates(result: results.RunResult) -> str | None:
    """Why a run's speed figures do not count though its ledger is sound: it failed its gates
    (refusals past the error rate, a p99 past its limit, less taken than offered), so it did
    not carry its load; None when it passed."""
    if result.verdict != FAIL:
        return None
    failed = [g.name for g in result.gates if not g.passed]
    return (
        f"it failed its gates ({', '.join(failed) or 'verdict FAIL'}): not a measurement of speed"
    )


def _unknown(names: Sequence[str]) -> dict[str, float | None]:
    return {name: None for name in names}


def fixed_rate_values(result: results.RunResult) -> dict[str, float | None]:
    """p99 (k6's) and collector CPU-seconds per 1,000 accepted records over the load window,
    from a fixed-rate run; None where the run did not measure it or is unsound."""
    if unsound(result) is not None or failed_gates(result) is not None:
        return _unknown(FIXED_RATE_METRICS)
    return {
        rule.P99_AT_RATE.name: result.client.p99_ms,
        rule.CPU_PER_1000.name: _prometheus_cpu_per_1000(result),
    }


def _collector_cpu_per_1000(result: results.RunResult) -> tuple[float | None, str | None]:
    """The collector's CPU seconds per 1,000 records and where it came from: the kernel's
    marginal figure when the run read its processes (a `cpu` block), else Prometheus's (a
    target that cannot see them: Juju). A `cpu` block without the collector's (it restarted)
    is unknown: the other figure is another quantity, not a stand-in."""
    if result.cpu is not None:
        value = result.cpu.per_1000_records.get("otelcol")
        return (value, _CPU_KERNEL) if value is not None else (None, None)
    value = _prometheus_cpu_per_1000(result)
    return (value, CPU_PROMETHEUS) if value is not None else (None, None)


def cpu_per_k6_cpu(result: results.RunResult) -> float | None:
    """The collector's marginal CPU seconds over k6's CPU seconds in the load window, both from
    the kernel; None without a `cpu` block (the target cannot see the processes) or either
    figure, or when k6 used none."""
    if result.cpu is None:
        return None
    return _over(result.cpu.marginal_s.get("otelcol"), result.cpu.used_s.get("k6"))


def cpu_per_loki_cpu(result: results.RunResult) -> float | None:
    """The collector's CPU seconds over Loki's in the load window, both the kernel's (`used_s`);
    None without a `cpu` block (the target cannot see the processes) or either figure, or when
    Loki used none."""
    if result.cpu is None:
        return None
    return _over(result.cpu.used_s.get("otelcol"), result.cpu.used_s.get("loki"))


def _over(collector_s: float | None, reference_s: float | None) -> float | None:
    """The collector's CPU seconds over a reference's; None when either is unknown or the
    reference used none."""
    if collector_s is None or reference_s is None or reference_s <= 0:
        return None
    return collector_s / reference_s


def in_probe_jobs(cpu_s_per_1000: float | None, probe_ns_per_job: float | None) -> float | None:
    """CPU seconds per 1,000 records in jobs of the speed probe (measure.speed_probe): over the
    probe's median CPU seconds per job; None when either is unknown."""
    if cpu_s_per_1000 is None or not probe_ns_per_job or probe_ns_per_job <= 0:
        return None
    return cpu_s_per_1000 / (probe_ns_per_job / 1e9)


def cpu_in_probe_jobs(result: results.RunResult) -> float | None:
    """The collector's marginal CPU per 1,000 records in jobs of the speed probe run beside the
    load, in the same window. None without a `cpu` block, the collector's figure or a probe
    reading (too few jobs, no probe: a target that cannot run it, older records)."""
    cpu = result.cpu
    if cpu is None:
        return None
    return in_probe_jobs(cpu.per_1000_records.get("otelcol"), cpu.probe_ns_per_job)


def unknown_reasons(result: results.RunResult) -> dict[str, str]:
    """Why a pressure run's kernel CPU figures are unknown, by metric, where the kernel says
    (a negative marginal CPU, a process not read at both edges); empty otherwise."""
    if unsound(result) is not None:
        return {}
    if (failed := failed_gates(result)) is not None:
        return dict.fromkeys(PRESSURE_METRICS, failed)
    cpu = result.cpu
    if cpu is None:
        return {}
    reasons: dict[str, str] = {}
    if why := cpu.unknown.get("otelcol"):
        kernel = (rule.PRESSURE_CPU.name, rule.PRESSURE_CPU_PROBE.name, rule.PRESSURE_CPU_K6.name)
        reasons.update(dict.fromkeys(kernel, why))
    elif not cpu.probe_ns_per_job:
        why = f"the speed probe ran {cpu.probe_jobs} jobs in the load window (at least 5 needed)"
        reasons[rule.PRESSURE_CPU_PROBE.name] = why
    if cpu_per_loki_cpu(result) is None:
        missing = [name for name in ("otelcol", "loki") if not cpu.used_s.get(name)]
        reasons[rule.PRESSURE_CPU_LOKI.name] = (
            f"the kernel read no CPU of {' and '.join(missing) or 'Loki'} over the load window"
        )
    return reasons


def pressure_values(
    result: results.RunResult,
) -> tuple[dict[str, float | None], dict[str, str]]:
    """p99, CPU per 1,000 records and CPU per k6 CPU of a pressure run, and the sources of the
    CPU figures; all None (and no source) when the run is unsound or failed its gates."""
    if unsound(result) is not None or failed_gates(result) is not None:
        return _unknown(PRESSURE_METRICS), {}
    cpu, source = _collector_cpu_per_1000(result)
    ratio = cpu_per_k6_cpu(result)
    in_jobs = cpu_in_probe_jobs(result)
    per_loki = cpu_per_loki_cpu(result)
    values = {
        rule.PRESSURE_P99.name: result.client.p99_ms,
        rule.PRESSURE_CPU.name: cpu,
        rule.PRESSURE_CPU_PROBE.name: in_jobs,
        rule.PRESSURE_CPU_K6.name: ratio,
        rule.PRESSURE_CPU_LOKI.name: per_loki,
    }
    sources = {rule.PRESSURE_CPU.name: source} if source else {}
    if in_jobs is not None:
        sources[rule.PRESSURE_CPU_PROBE.name] = _CPU_KERNEL
    if ratio is not None:
        sources[rule.PRESSURE_CPU_K6.name] = _CPU_KERNEL
    if per_loki is not None:
        sources[rule.PRESSURE_CPU_LOKI.name] = _CPU_KERNEL
    return values, sources


def saturation_value(result: results.RunResult) -> tuple[float | None, list[str]]:
    """A saturation run's throughput (the collector's accepted records per minute over the
    steady window; what its exporter sent on, when the queue grew without filling), or None
    and why (also when the run is unsound: its figures do not count)."""
    sat, run_id = result.saturation, result.run_id
    if (bad := unsound(result)) is not None:
        return None, [f"saturation unknown in {run_id}: {bad.reason}"]
    if (failed := failed_gates(result)) is not None:
        return None, [f"saturation unknown in {run_id}: {failed}"]
    if sat is None:
        return None, [f"saturation not measured by {run_id}"]
    reading = sat.reading
    if reading.state == UNKNOWN:
        return None, [f"saturation unknown in {run_id}: {sat.reason}"]
    if reading.state == GROWING and reading.per_min is not None:
        return reading.per_min, [
            f"{run_id}: the queue never filled but grew (the exporter sent on "
            f"{reading.per_min:,.0f}/min of the {_per_min(sat.accepted_per_min)} taken): "
            "saturated at what it sent on"
        ]
    if reading.state == REFUSING:
        refused = _per_min(sat.refused_per_min)
        if reading.per_min is None:
            return None, [f"saturation unknown in {run_id}: the accepted count was unread"]
        if not reading.per_min:
            return None, [
                f"saturation unknown in {run_id}: the collector took none of the "
                f"{_per_min(sat.offered_per_min)} offered (it refused {refused} over the window)"
            ]
        return reading.per_min, [
            f"{run_id}: the collector refused {refused} before its queue filled: saturated at "
            f"what it accepted, {reading.per_min:,.0f}/min"
        ]
    if reading.state == TOOK_ALL:
        offered = "" if sat.offered_per_min is None else f" {sat.offered_per_min:,.0f}/min"
        took = (
            "" if sat.accepted_per_min is None else f" (at least {sat.accepted_per_min:,.0f}/min)"
        )
        return None, [
            f"not saturated in {run_id}: the pipeline took all{offered} offered{took}, a lower "
            "bound, not its limit; offer more (--saturate-rate)"
        ]
    if reading.per_min is None:
        return None, [f"saturation throughput unknown in {run_id}: the accepted count was unread"]
    return reading.per_min, []


def _per_min(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.0f}/min"


def machine_note(result: results.RunResult) -> list[str]:
    """A note when the kernel saw the machine busy with other work during the run."""
    cpu = result.cpu
    if cpu is None or cpu.quiet is not False:
        return []
    return [
        f"the machine was not quiet during {result.run_id}: {cpu.busy_elsewhere_cores:g} cores "
        "busy elsewhere; its figures are noisier"
    ]


def bottleneck_summary(block: Mapping[str, Any] | None) -> str | None:
    """The attribution's one-line summary from a run's `bottleneck` block (None: none recorded
    or unreadable)."""
    if not block:
        return None
    try:
        return Attribution.from_dict(block.get("attribution")).summary
    except RecordError:
        return None


def capacity_value(record: SearchRecord) -> tuple[float | None, list[str]]:
    """A search's capacity as a metric value: only a knee found within the precision counts;
    "at least the maximum", "below the minimum" or a search cut short are bounds, not values. A
    search whose steps lost acknowledged records (`SearchRecord.losses`) gives none, as an
    unsound run does: its capacity, bounded by the loss, would hide a regression."""
    if record.losses:
        where = "; ".join(f"{u.reason.removeprefix('it ')} in {u.run_id}" for u in record.losses)
        return None, [f"capacity unknown: search {record.search_id} {where}"]
    result = record.result
    capacity = result.capacity_per_min
    if result.status == FOUND and capacity is not None and capacity > 0:
        return float(capacity), []
    return None, [
        f"capacity unknown: search {record.search_id} ended {result.status}"
        + (f" ({result.summary})" if result.summary else "")
        + ": not a knee within the precision"
    ]
