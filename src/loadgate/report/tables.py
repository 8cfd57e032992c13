"""Rich tables people read at the end of a run: the verdict (gates) and the loss ledger.

Every cell is a `Text`, so nothing a user typed (labels, run ids, paths) is read as markup.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.table import Table
from rich.text import Text

from loadgate.contract.gates import PASS, Gate, format_value
from loadgate.judge.ledger import Ledger, Step
from loadgate.measure import scenarios as scenario_measures
from loadgate.measure.cpu import NOT_RUNNING_IDLE, CpuFigures
from loadgate.measure.other_traffic import OtherTraffic
from loadgate.measure.resources import (
    BackendFaultCounts,
    GoRuntime,
    ServiceResources,
    StandinCounts,
)
from loadgate.measure.saturation import GROWING, REFUSING, SATURATED, UNKNOWN, SaturationFigures
from loadgate.records.result import RunResult

_UNITS = {"error_rate": "%", "p99_ms": "ms"}


def _value(gate: Gate) -> str:
    if gate.value is None:
        return "not measured"
    return format_value(gate.value, _UNITS.get(gate.name, ""))


def verdict_table(result: RunResult) -> Table:
    title = f"verdict {result.verdict} — run {result.run_id} ({result.target})"
    table = Table(
        title=Text(title), title_style="bold green" if result.verdict == PASS else "bold red"
    )
    table.add_column("gate")
    table.add_column("threshold", justify="right")
    table.add_column("measured", justify="right")
    table.add_column("result")
    table.add_column("source", style="dim")
    for g in result.gates:
        mark = Text("PASS", style="green") if g.passed else Text("FAIL", style="bold red")
        table.add_row(Text(g.name), Text(g.threshold), Text(_value(g)), mark, Text(g.source))
    return table


def _lost_cell(step: Step, previous: Step | None) -> Text:
    """A step's loss against the one before it, with the uncertainty it is shown beyond (both
    steps' added): `within ± 400` when the difference lies inside it."""
    margin = step.uncertainty + (previous.uncertainty if previous is not None else 0)
    within = f"± {margin:,}" if margin else ""
    if step.surplus:
        shown = f"+{step.surplus:,} more" + (f" ({within})" if within else "")
        return Text(shown, style="yellow")
    if step.lost is None:
        return Text("" if previous is None else "unknown")
    if not step.lost and within:
        return Text(f"within {within}", style="green")
    return Text(f"{step.lost:,} {within}".rstrip(), style="red" if step.lost else "green")


def ledger_table(ledger: Ledger) -> Table:
    state = "balanced" if ledger.balanced else "NOT balanced"
    table = Table(title=f"loss ledger ({state})")
    table.add_column("step")
    table.add_column("records" if ledger.unit == Ledger.unit else ledger.unit, justify="right")
    table.add_column("lost vs previous", justify="right")
    table.add_column("source", style="dim")
    table.add_column("explanation")
    previous: Step | None = None
    for step in ledger.steps:
        lost = _lost_cell(step, previous)
        table.add_row(Text(step.name), Text(step.text()), lost, Text(step.source), Text(step.note))
        previous = step
    if ledger.other_note:
        other = "unknown" if ledger.other is None else f"{ledger.other:,}"
        table.add_row(
            Text("other traffic", style="dim"),
            Text(other),
            Text(""),
            Text("LogQL: every stream but the run's and the collector's own"),
            Text(ledger.other_note),
        )
    return table


def _count(result: RunResult, name: str) -> str:
    assert result.pipeline is not None
    return result.pipeline.count(name).text()


def _rate(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.0f}/min"


def saturation_table(sat: SaturationFigures) -> Table:
    """The pipeline's saturation throughput over its steady window, step by step."""
    reading = sat.reading
    if reading.state == UNKNOWN:
        title = f"saturation: unknown ({sat.reason})"
    elif reading.state == SATURATED:
        title = f"saturation throughput {_rate(reading.per_min)} (queue full)"
    elif reading.state == GROWING:
        title = (
            f"saturation throughput {_rate(reading.per_min)} (the exporter's: the queue grew, "
            f"taking {_rate(sat.accepted_per_min)})"
        )
    elif reading.state == REFUSING:
        title = (
            f"saturation throughput {_rate(reading.per_min)} (the collector refused "
            f"{_rate(sat.refused_per_min)} before its queue filled)"
        )
    else:
        title = f"not saturated: the pipeline took all offered (at least {_rate(reading.per_min)})"
    table = Table(title=Text(title))
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("source", style="dim")

    def row(figure: str, value: str, source: str) -> None:
        table.add_row(Text(figure), Text(value), Text(source))

    row("offered", _rate(sat.offered_per_min), "k6 (spec)")
    if sat.window_s is not None and sat.window_start is not None:
        start = time.strftime("%H:%M:%S", time.localtime(sat.window_start))
        fill = f", queue full after {sat.fill_s:g}s" if sat.fill_s is not None else ""
        row("steady window", f"{sat.window_s:.0f}s from {start}{fill}", "collector scrapes")
    row("accepted by the collector", _rate(sat.accepted_per_min), "Prometheus")
    row("exported to Loki", _rate(sat.exported_per_min), "Prometheus")
    row("stored in Loki", _rate(sat.stored_per_min), "LogQL (records stamped in the window)")
    row("refused (all traffic)", _rate(sat.refused_per_min), "Prometheus")
    return table


def _other_text(other: OtherTraffic) -> str:
    if other.records is None:
        return "unknown"
    rate = f"{other.per_minute:,.0f}/min" if other.per_minute is not None else "?/min"
    return f"{other.records:,} records ({rate})"


def _resource_rows(result: RunResult, row: Callable[[str, str, str], None]) -> None:
    """The charms' limits, backend faults, the collector's Go runtime and the Loki stand-in."""
    if result.resources is None:
        return
    for role, used in sorted(result.resources.services.items()):
        row(f"{role} limits (cgroup {used.cgroup})", _limits_text(used), "kernel, Pebble")
    fault = result.resources.backend_fault
    if fault is not None:
        row(f"backend faults ({fault.spec})", _fault_text(fault), "fault proxy")
    go = result.resources.go_runtime
    if go is not None:
        row("collector Go runtime", _go_runtime_text(go), "gctrace in Pebble's log, Prometheus")
    standin = result.resources.standin
    if standin is not None:
        row("received by the Loki stand-in", _standin_text(standin), "the stand-in's counters")


def figures_table(result: RunResult) -> Table:
    """Other measured figures: throughput, latency, collector resources, Loki, restarts (the
    collector's and Loki's only where the scenario's load passes them)."""
    c, p = result.client, result.pipeline
    measures = scenario_measures.of(result.spec.scenario)
    table = Table(title="figures")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("source", style="dim")

    def row(figure: str, value: str, source: str) -> None:
        table.add_row(Text(figure), Text(value), Text(source))

    row("requests (failed)", f"{c.requests:,} ({c.failed:,})", "k6")
    row(f"{measures.scenario.unit_per_minute} accepted", f"{c.records_per_minute:,.0f}", "k6")
    p99_what = "query" if measures.reads else "request"
    p99 = "-" if c.p99_ms is None else f"{c.p99_ms:.2f} ms"
    row(f"p99 {p99_what} duration", p99, c.p99_source)
    if measures.reads:
        _read_rows(result, row)
    if c.dropped_iterations:
        row("dropped iterations (never sent)", f"{c.dropped_iterations:,}", "k6")
    p99_prom = result.environment.get("p99_ms_prometheus")
    if isinstance(p99_prom, float | int):
        row("p99 (k6 native histogram)", f"{p99_prom:.2f} ms", "Prometheus")
    if p is not None and measures.through_collector:
        _collector_rows(result, row)
    if p is not None and measures.store.name == "loki":
        row("Loki lines received (all jobs)", _count(result, "loki_received"), "Prometheus")
        row("Loki lines discarded", _count(result, "loki_discarded"), "Prometheus")
    _restart_rows(result, row)
    _resource_rows(result, row)
    if result.delivered is not None:
        d = result.delivered
        if p is not None and (d.own_stored or p.collector_own_filtered):
            own = "unknown" if d.own_stored is None else f"{d.own_stored:,}"
            row(
                "collector's own log records stored / dropped by its loop breaker",
                f"{own} / {_count(result, 'collector_own_filtered')}",
                "LogQL (job otelcol-internal) / Prometheus",
            )
        if d.other is not None and (d.other.records or d.other.records is None):
            row("other traffic through the collector", _other_text(d.other), d.other.source)
    if result.cpu is not None:  # the kernel's figures, whether or not the read-back succeeded
        chain = (["otelcol"] if measures.through_collector else []) + [measures.store.name]
        _cpu_rows(result.cpu, row, measures.scenario.short, (*chain, "k6"))
    if result.delivered is not None and measures.through_collector:
        d = result.delivered
        drained = "drained" if d.drained else "NOT drained"
        row("queue drain wait", f"{d.drain_seconds:.1f} s ({drained})", "Prometheus")
    return table


def _read_rows(result: RunResult, row: Callable[[str, str, str], None]) -> None:
    """A load that reads what it pushes (logql-query): its pushes and its wrong answers."""
    c = result.client
    pushed = "unknown" if c.lines_accepted is None else f"{c.lines_accepted:,}"
    sent = "unknown" if c.lines_sent is None else f"{c.lines_sent:,}"
    row("lines pushed / accepted", f"{sent} / {pushed}", "k6 lines_sent / lines_accepted")
    wrong = "unknown" if c.wrong_answers is None else f"{c.wrong_answers:,}"
    row("wrong answers (counts off what was pushed)", wrong, "k6 wrong_answers")


def _collector_rows(result: RunResult, row: Callable[[str, str, str], None]) -> None:
    p = result.pipeline
    assert p is not None
    if p.collector_cpu_max is not None and p.collector_cpu_mean is not None:
        cpu = f"{p.collector_cpu_max:.2f} / {p.collector_cpu_mean:.2f} cores"
        row("collector CPU max / mean", cpu, "Prometheus")
    if p.collector_rss_max_mib is not None and p.collector_rss_mean_mib is not None:
        rss = f"{p.collector_rss_max_mib:.0f} / {p.collector_rss_mean_mib:.0f} MiB"
        row("collector RSS max / mean", rss, "Prometheus")
    if p.queue_size_max is not None:
        row("collector queue size max", f"{p.queue_size_max:.0f}", "Prometheus")
    row("collector refused", _count(result, "collector_refused"), "Prometheus")
    if p.collector_scraped is not None or "collector_scraped" in p.unknown:
        row("points of the collector's own scrape", _count(result, "collector_scraped"),
            "Prometheus (its other receivers)")  # fmt: skip


def _restart_rows(result: RunResult, row: Callable[[str, str, str], None]) -> None:
    for service, info in sorted(result.restarts.items()):
        starts = info.get("at") or []
        seen = info.get("supervisor") or {}
        if starts:
            at = ", ".join(time.strftime("%H:%M:%S", time.localtime(t)) for t in starts)
            row(f"{service} restarts", f"{len(starts)} (at {at})", "Prometheus")
        elif seen.get("changed_during_run"):
            since = seen.get("since")
            when = time.strftime("%H:%M:%S", time.localtime(since)) if since else "?"
            row(f"{service} state change", f"{seen.get('current')} since {when}", "Pebble")


def _cpu_rows(
    fig: CpuFigures, row: Callable[[str, str, str], None], unit: str, names: tuple[str, ...]
) -> None:
    """The kernel's CPU figures of the processes on the load's path (`names`): marginal cost
    per 1,000 units (records, points, lines), unknown with the reason where the kernel's
    figures give none (never 0; not for a process started for the load, k6, which has none by
    construction), and a machine busy elsewhere."""
    source = "kernel (/proc), less the idle rate"
    for name in names:
        per_1000 = fig.per_1000_records.get(name)
        why = fig.unknown.get(name)
        if per_1000 is not None:
            shown = f"{per_1000:.4f}"
        elif why and why != NOT_RUNNING_IDLE:
            shown = f"unknown: {why}"
        else:
            continue
        row(f"{name} CPU s per 1,000 {unit} (marginal)", shown, source)
    if fig.busy_elsewhere_cores is not None:
        state = "quiet" if fig.quiet else "NOT quiet"
        row(
            "machine busy outside the run",
            f"{fig.busy_elsewhere_cores:.2f} cores ({state})",
            "kernel (/proc/stat) less the run's processes",
        )
    if fig.probe_jobs:
        ns = fig.probe_ns_per_job
        ms = "unknown (too few jobs)" if ns is None else f"{ns / 1e6:.3f} ms per job"
        row("machine speed (speed probe)", f"{ms}, {fig.probe_jobs} jobs", "measure.speed_probe")


def _known(value: float | None, shown: str) -> str:
    return "unknown" if value is None else shown


def _seconds(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.1f}"


def _int(value: int | None) -> str:
    return "unknown" if value is None else f"{value:,}"


def _limits_text(used: ServiceResources) -> str:
    """`memory 200 MiB: peak 200 MiB, 1 OOM kill; cpu 250m: throttled 40/120 periods (3.1 s);
    1 restart (exit 137)`, with NOT enforced where a limit could not be written."""
    parts: list[str] = []
    if used.memory_limit_bytes is not None:
        peak = used.memory_peak_bytes
        parts.append(
            f"memory {used.memory_limit_bytes / 2**20:,.0f} MiB: peak "
            + ("unknown" if peak is None else f"{peak / 2**20:,.0f} MiB")
            + ", "
            + _known(used.oom_kills, f"{used.oom_kills} OOM kill(s)")
        )
    if used.cpu_limit_millis is not None:
        thr, periods, secs = used.cpu_throttled_periods, used.cpu_periods, used.cpu_throttled_s
        parts.append(
            f"cpu {used.cpu_limit_millis}m: throttled "
            + _known(thr, f"{thr}/{_int(periods)} periods ({_seconds(secs)} s)")
        )
    parts += [f"{resource} NOT enforced" for resource in used.not_enforced]
    codes = ", ".join(str(e.code) for e in used.exits)
    restarts = _known(used.restarts, f"{used.restarts} restart(s)")
    parts.append(restarts + (f" (exit {codes})" if codes else ""))
    return "; ".join(parts)


def _fault_text(fault: BackendFaultCounts) -> str:
    if fault.requests is None:
        return "unknown (the proxy did not answer)"
    return (
        f"{fault.requests:,} requests: {_int(fault.passed)} passed, {_int(fault.failed)} failed "
        f"({_int(fault.outage)} in the outage), {_int(fault.delayed)} delayed, "
        f"{_int(fault.upstream_errors)} Loki unreachable"
    )


def _mib(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.0f} MiB"


def _go_runtime_text(go: GoRuntime) -> str:
    """`GC 42 (31.5/min, 3 forced), GC CPU 4 %; heap max 120 MiB (mean 80), live max 60 MiB,
    goal max 130 MiB, sys max 180 MiB; GOMEMLIMIT 300MiB`."""
    if go.gc_count is None:
        gc = "GC count unknown (no gc-trace)"
    else:
        rate = "unknown" if go.gc_per_minute is None else f"{go.gc_per_minute:,.1f}"
        gc = f"GC {go.gc_count:,} ({rate}/min, {_int(go.gc_forced)} forced)"
        if go.gc_cpu_percent is not None:
            gc += f", GC CPU {go.gc_cpu_percent} %"
    heap = f"heap max {_mib(go.heap_alloc_max_mib)} (mean {_mib(go.heap_alloc_mean_mib)})"
    if go.heap_live_max_mib is not None:
        heap += f", live max {_mib(go.heap_live_max_mib)}, goal max {_mib(go.heap_goal_max_mib)}"
    heap += f", sys max {_mib(go.sys_max_mib)}"
    limit = f"GOMEMLIMIT {go.gomemlimit}" if go.gomemlimit else "GOMEMLIMIT unset"
    return f"{gc}; {heap}; {limit}"


def _standin_text(standin: StandinCounts) -> str:
    if standin.received is None:
        return "unknown (the stand-in did not answer)"
    own = _int(standin.own_dropped)
    return f"{standin.received:,} of the run's records (and {own} of the collector's own)"
