"""A matrix's comparison, one row per cell, in the style of the seed reports (pure): from the
matrix record, its cell records and the runs (or searches) behind them.

How each figure is made (None: not measured, shown `unknown`, never 0):

- **records/min**: the records k6 got accepted per minute of load; **req/s**: its requests per
  second. **success / failure**: k6's share of requests that failed (`errors`), and the rest.
- **mean / p90 / p95 / p99 / max ms**: k6's request duration (its summary's trend).
- **OOM**: the collector's OOM kills from its cgroup (`no limit` without a memory limit);
  **restarts**: its restarts in the run (Pebble's log where the stack has limits, else its
  start times in Prometheus).
- **peak memory / limit**: the collector's cgroup peak against its memory limit; without a
  limit, its peak RSS (Prometheus).
- **CPU**: the collector's mean cores over the load (the kernel's, else Prometheus's).
- **queue max / capacity**: the sending queue's high-water mark (batches) and its capacity.
- **lost**: records k6 got acknowledged that did not arrive: Loki's count (the ledger) with the
  Loki exporter; the stand-in's count with `exporter=standin`; with an isolated collector
  (`debug`, `nop`) nothing is stored, so what its exporter did not take (debug), else unknown.
- **verdict**: the run's gates; with another exporter than Loki the `lost_records` gate (which
  counts Loki) is replaced by `lost` above.
- **machine**: quiet, or the cores the machine was busy with outside the run.
- **saturation/min**: the run's saturation reading; unknown (and why) when the run lost records
  k6 saw acknowledged or `lost` is unknown: a figure of a run that lost records does not count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from loadgate.capacity.matrix.record import CellRecord, MatrixRecord
from loadgate.capacity.search.record import SearchRecord
from loadgate.contract.gates import FAIL, PASS
from loadgate.measure.cpu import BUSY_ELSEWHERE_CORES
from loadgate.measure.resources import BackendFaultCounts
from loadgate.measure.saturation import GROWING, REFUSING, SATURATED
from loadgate.records.result import RunResult

_UNKNOWN = "unknown"
_ISOLATED_NOTES = {
    "debug": "isolated (debug exporter): nothing is stored; lost is what the exporter did not take",
    "nop": "isolated (nop exporter): nothing is stored or counted; lost unknown",
}
MAIN_COLUMNS = (
    "experiment", "scenario", "load", "records/min", "req/s", "success", "failure", "mean ms",
    "p90 ms", "p95 ms", "p99 ms", "max ms", "OOM", "restarts", "peak memory / limit", "CPU",
    "queue max / capacity", "lost", "verdict", "machine",
)  # fmt: skip
MORE_COLUMNS = (
    "experiment", "scenario", "load", "saturation/min", "capacity", "GC/min", "GC",
    "heap max", "backend faults", "notes",
)  # fmt: skip


@dataclass(frozen=True)
class MatrixRow:
    """One cell's figures (None: not measured)."""

    cell_id: str
    experiment: str
    scenario: str
    load: str
    status: str  # pending, running, failed, done
    ref: str = ""
    records_per_min: float | None = None
    requests_per_s: float | None = None
    failure: float | None = None
    latency_ms: tuple[float | None, ...] = (None, None, None, None, None)  # mean p90 p95 p99 max
    oom: str = _UNKNOWN
    restarts: int | None = None
    memory: str = _UNKNOWN
    cpu_cores: float | None = None
    queue: str = _UNKNOWN
    lost: int | None = None
    verdict: str = ""
    machine: str = _UNKNOWN
    saturation: str = ""
    capacity: str = ""
    gc_per_min: float | None = None
    gc_count: int | None = None
    heap_max_mib: float | None = None
    faults: str = ""
    notes: list[str] = field(default_factory=list[str])


def _split(cell_id: str) -> tuple[str, str, str]:
    exp, scn, load, *_ = [*cell_id.split("."), "", "", ""]
    return exp, scn, load


def rows_of(
    matrix: MatrixRecord,
    cells: Mapping[str, CellRecord],
    results: Mapping[str, RunResult],
    searches: Mapping[str, SearchRecord],
) -> list[MatrixRow]:
    """A row per cell of the matrix, in its order (pending cells say so)."""
    out: list[MatrixRow] = []
    for cell_id in matrix.cells:
        cell = cells.get(cell_id)
        if cell is None:
            exp, scn, load = _split(cell_id)
            out.append(MatrixRow(cell_id, exp, scn, load, "pending"))
            continue
        base = MatrixRow(cell_id, cell.experiment, cell.scenario, cell.load_text, cell.status,
                         cell.ref, verdict=cell.verdict or cell.status)  # fmt: skip
        if cell.status == "failed":
            out.append(_with(base, notes=[f"failed to run: {cell.error}"]))
        elif cell.kind == "search" and cell.ref in searches:
            out.append(_search_row(base, searches[cell.ref]))
        elif cell.ref in results:
            out.append(run_row(base, results[cell.ref]))
        else:
            out.append(_with(base, notes=[f"no record of {cell.ref} yet"]))
    return out


def _with(row: MatrixRow, **changes: object) -> MatrixRow:
    return replace(row, **changes)  # pyright: ignore[reportArgumentType]


def _search_row(base: MatrixRow, search: SearchRecord) -> MatrixRow:
    res = search.result
    if res.capacity_per_min is None:
        capacity = res.status
    else:
        precision = f" ±{res.precision * 100:.1f} %" if res.precision is not None else ""
        span = f" ({res.span_text})" if res.span_text is not None else precision
        capacity = f"{res.capacity_per_min:,}/min{span} ({res.status})"
    return _with(base, capacity=capacity, verdict=res.status, notes=[res.summary])


def exporter_of(result: RunResult) -> str:
    """The exporter the run's stack sent its logs with (`--hand exporter=`; default loki)."""
    charms = result.environment.get("charms")
    changes = charms.get("hand") if isinstance(charms, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    exporter = changes.get("exporter") if isinstance(changes, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return str(exporter) if exporter else "loki"  # pyright: ignore[reportUnknownArgumentType]


def lost_and_verdict(result: RunResult) -> tuple[int | None, str, list[str]]:
    """Records lost after acceptance, the verdict, and notes (see the module's `lost`)."""
    exporter = exporter_of(result)
    if exporter == "loki":
        return result.ledger.lost_after_acceptance, result.verdict, []
    notes: list[str] = []
    accepted = result.client.records_accepted
    if exporter == "standin":
        standin = result.resources.standin if result.resources else None
        received = standin.received if standin else None
        lost = None if received is None else max(0, accepted - received)
        notes.append(f"lost: k6 acknowledged {accepted:,}, the Loki stand-in received "
                     f"{'unknown' if received is None else f'{received:,}'}")  # fmt: skip
    else:
        exported = result.pipeline.collector_exported if result.pipeline else None
        lost = None if exporter == "nop" or exported is None else max(0, accepted - exported)
        notes.append(_ISOLATED_NOTES[exporter])
    others = [g.passed for g in result.gates if g.name != "lost_records"]
    if lost is None or not all(others):
        verdict = FAIL if not all(others) or lost else f"{FAIL} (lost unknown)"
    else:
        verdict = PASS if lost == 0 else FAIL
    notes.append(f"verdict: the gates but lost_records (Loki's count), and lost = {lost}")
    return lost, verdict, notes


def _mib(count: float | None) -> str:
    return _UNKNOWN if count is None else f"{count / 2**20:,.0f} MiB"


def _memory_and_oom(result: RunResult) -> tuple[str, str, int | None]:
    """Peak memory against the limit, OOM kills, and restarts of the collector."""
    pipe = result.pipeline
    restarts = len(pipe.restarts.get("otelcol", [])) if pipe is not None else None
    used = result.resources.services.get("otelcol") if result.resources else None
    if used is None or used.memory_limit_bytes is None:
        rss = pipe.collector_rss_max_mib if pipe is not None else None
        memory = f"{_UNKNOWN if rss is None else f'{rss:,.0f} MiB'} RSS (no limit)"
        return memory, "no limit", restarts
    limit = used.memory_limit_bytes
    peak = used.memory_peak_bytes
    share = f" ({peak / limit:.0%})" if peak is not None else ""
    memory = f"{_mib(peak)} / {_mib(limit)}{share}"
    oom = _UNKNOWN if used.oom_kills is None else str(used.oom_kills)
    return memory, oom, used.restarts if used.restarts is not None else restarts


def run_row(base: MatrixRow, result: RunResult) -> MatrixRow:
    c, p = result.client, result.pipeline
    lost, verdict, notes = lost_and_verdict(result)
    memory, oom, restarts = _memory_and_oom(result)
    queue = _UNKNOWN
    if p is not None and p.queue_size_max is not None:
        cap = f"{p.queue_capacity:,.0f}" if p.queue_capacity is not None else _UNKNOWN
        queue = f"{p.queue_size_max:,.0f} / {cap}"
    elif exporter_of(result) in ("debug", "nop"):
        queue = "no queue"
    cores, cpu_notes = _cores(result)
    go = result.resources.go_runtime if result.resources else None
    fault = result.resources.backend_fault if result.resources else None
    return _with(
        base,
        records_per_min=c.records_per_minute,
        requests_per_s=c.requests / c.duration_s if c.duration_s > 0 else None,
        failure=c.error_rate,
        latency_ms=(c.mean_ms, c.p90_ms, c.p95_ms, c.p99_ms, c.max_ms),
        oom=oom,
        restarts=restarts,
        memory=memory,
        cpu_cores=cores,
        queue=queue,
        lost=lost,
        verdict=verdict,
        machine=_machine(result),
        saturation=_saturation(result, lost),
        gc_per_min=go.gc_per_minute if go else None,
        gc_count=go.gc_count if go else None,
        heap_max_mib=go.heap_alloc_max_mib if go else None,
        faults=_faults(fault) if fault else "",
        notes=notes + cpu_notes + list(result.problems),
    )


def _cores(result: RunResult) -> tuple[float | None, list[str]]:
    """The collector's mean cores over the load: the kernel's, else Prometheus's (said)."""
    cpu = result.cpu
    used = cpu.used_s.get("otelcol") if cpu is not None else None
    if cpu is not None and cpu.window_s > 0 and used is not None:
        return used / cpu.window_s, []
    mean = result.pipeline.collector_cpu_mean if result.pipeline else None
    if mean is None:
        return None, []
    return mean, ["CPU: Prometheus's mean (the kernel's is unknown: the collector restarted)"]


def _machine(result: RunResult) -> str:
    cpu = result.cpu
    if cpu is None:
        return _UNKNOWN
    if cpu.busy_elsewhere_cores is None:
        return f"{_UNKNOWN} (a process of the run restarted)"
    if cpu.quiet:
        return "quiet"
    return f"NOT quiet ({cpu.busy_elsewhere_cores:.2f} cores elsewhere)"


def _saturation(result: RunResult, lost: int | None) -> str:
    """The saturation reading; unknown when the run lost acknowledged records or `lost` is
    unknown (the exporter's own count where it is not Loki: lost_and_verdict)."""
    reading = result.saturation.reading if result.saturation is not None else None
    if reading is None or reading.per_min is None:
        return ""
    if lost is None:
        return f"{_UNKNOWN} (lost unknown: the run's loss cannot be checked)"
    if lost:
        return f"{_UNKNOWN} (it lost {lost:,} acknowledged records)"
    if reading.state == SATURATED:
        return f"{reading.per_min:,.0f}"
    if reading.state == GROWING:
        return f"{reading.per_min:,.0f} (queue growing)"
    if reading.state == REFUSING:
        return f"{reading.per_min:,.0f} (refusing before the queue)"
    return f"≥ {reading.per_min:,.0f} (not saturated)"


def _faults(fault: BackendFaultCounts) -> str:
    if fault.requests is None:
        return f"{fault.spec}: {_UNKNOWN}"
    failed = _UNKNOWN if fault.failed is None else f"{fault.failed:,}"
    passed = _UNKNOWN if fault.passed is None else f"{fault.passed:,}"
    return f"{fault.requests:,} pushes: {failed} failed, {passed} passed"


def _num(value: float | None, fmt: str) -> str:
    return _UNKNOWN if value is None else format(value, fmt)


def _pct(value: float | None) -> str:
    return _UNKNOWN if value is None else f"{value * 100:.2f} %"


def main_cells(row: MatrixRow) -> tuple[str, ...]:
    """The row as the main table's cells (MAIN_COLUMNS)."""
    lead = (row.experiment, row.scenario, row.load)
    if row.status != "done" or row.records_per_min is None:
        note = f"capacity {row.capacity}" if row.capacity else row.status
        blanks = ("",) * (len(MAIN_COLUMNS) - 6)
        return (*lead, note, *blanks, row.verdict, row.machine)
    success = None if row.failure is None else 1 - row.failure
    return (
        *lead,
        _num(row.records_per_min, ",.0f"),
        _num(row.requests_per_s, ",.1f"),
        _pct(success),
        _pct(row.failure),
        *(_num(v, ",.1f") for v in row.latency_ms),
        row.oom,
        _num(row.restarts, "d"),
        row.memory,
        _num(row.cpu_cores, ".2f"),
        row.queue,
        _num(row.lost, ",d"),
        row.verdict,
        row.machine,
    )


def more_cells(row: MatrixRow) -> tuple[str, ...]:
    return (
        row.experiment, row.scenario, row.load, row.saturation, row.capacity,
        _num(row.gc_per_min, ",.1f") if row.gc_count is not None else "",
        _num(row.gc_count, ",d") if row.gc_count is not None else "",
        _num(row.heap_max_mib, ",.0f") + " MiB" if row.heap_max_mib is not None else "",
        row.faults, "; ".join(row.notes),
    )  # fmt: skip


def comparison(rows: list[MatrixRow]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The seed reports' comparative table: a row per figure, a column per cell (figures no
    cell has are left out)."""
    header = ("figure", *(f"{r.experiment} / {r.scenario} / {r.load}" for r in rows))
    columns = [*zip(*(main_cells(r)[3:] for r in rows), strict=True)]
    more = [*zip(*(more_cells(r)[3:] for r in rows), strict=True)]
    out: list[tuple[str, ...]] = []
    for name, values in zip((*MAIN_COLUMNS[3:], *MORE_COLUMNS[3:]), (*columns, *more), strict=True):
        if any(values):
            out.append((name, *values))
    return header, out


def _markdown_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *(line(r) for r in rows)])


def markdown(matrix: MatrixRecord, rows: list[MatrixRow]) -> str:
    """matrix.md: the matrix, its main table and the further figures, and how they are made."""
    done = sum(r.status == "done" for r in rows)
    parts = [
        f"# Matrix {matrix.matrix_id}",
        "",
        matrix.description.strip() or "(no description)",
        "",
        f"From `{matrix.source}`; {done} of {len(rows)} cells done.",
        "",
        _markdown_table(MAIN_COLUMNS, [main_cells(r) for r in rows]),
        "",
        _markdown_table(MORE_COLUMNS, [more_cells(r) for r in rows]),
        "",
        "Side by side:",
        "",
        _markdown_table(*comparison(rows)) if rows else "(no cells)",
        "",
        "Experiments:",
        "",
        *(
            f"- **{e.get('name')}**: {e.get('description') or ''} `{e.get('text') or ''}`"
            for e in matrix.experiments
        ),
        "",
        HOW,
        "",
    ]
    return "\n".join(parts)


HOW = (
    "How the figures are made: records/min, req/s, success, failure and latencies are k6's; "
    "OOM kills and peak memory are the collector's cgroup's (`no limit`: its RSS from "
    "Prometheus); restarts Pebble's or Prometheus's; CPU the collector's mean cores over the "
    "load (kernel); queue the sending queue's high-water mark and capacity; lost the records "
    "k6 got acknowledged that did not arrive (Loki's count, the stand-in's count, or for an "
    "isolated collector what its exporter did not take); machine says whether other work "
    f"used more than {BUSY_ELSEWHERE_CORES:g} cores during the load (NOT quiet: figures less "
    "reliable). "
    "`unknown`: not measured, never 0."
)
