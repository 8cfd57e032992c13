"""`loadgate bench generator`: k6's units (log records, data points, lines, spans, queries) per
minute per k6 CPU core, for each scenario, against a nop collector (logql-query: a sink that
answers as Loki); the measuring is loadgate.capacity.bench.generator."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from loadgate.capacity.bench.generator import TARGETS_PER_CORE, GeneratorFigures
from loadgate.contract import k6args
from loadgate.contract.params import MAX_P99_MS
from loadgate.contract.scenarios import BY_NAME as SCENARIOS
from loadgate.contract.scenarios import applies
from loadgate.contract.spec import RunSpec, SpecError

from ..stack.ports import Ports, busy_ports
from .common import EXIT_BAD_INPUT, EXIT_OK, Subparsers, UsageError, base_port, console, stdout
from .flags import add_load_flags, load_params

if TYPE_CHECKING:
    from .seams import Seams


# Run parameters the benchmark takes (the scenario and the payload parameters of each); the
# rest is fixed: constant VUs against a nop collector, bodies as a default run's, gates that
# never fail.
BENCH_PARAMS = (
    "scenario", "duration", "vus", "logs-per-request", "requests-per-iteration",
    "series-per-request", "points-per-series", "histogram-buckets", "streams-per-request",
    "lines-per-stream", "loki-streams", "traces-per-request", "spans-per-trace",
    "span-attributes", "attribute-size", "push-rate", "query-window",
)  # fmt: skip
_DEFAULT = RunSpec()
# What the benchmark fixes of a run: constant VUs, a default run's bodies, gates that never fail.
_FIXED: dict[str, object] = {
    "executor": "constant-vus",
    "body-min": _DEFAULT.body_min,
    "body-max": _DEFAULT.body_max,
    "p99-ms": MAX_P99_MS,
    "max-error-rate": 1,
    "run-id": "bench-generator",
}


def register(sub: Subparsers) -> None:
    p = sub.add_parser("bench", help="benchmarks that print figures")
    p.set_defaults(handler=_cmd_bench)
    bench_sub = p.add_subparsers(dest="bench", required=True)
    p_gen = bench_sub.add_parser(
        "generator",
        help="k6's units (log records, data points, lines, spans, queries) per minute per k6 "
        "CPU core, per scenario, against a nop collector (logql-query: a sink answering as "
        "Loki)",
    )
    add_load_flags(p_gen, BENCH_PARAMS, defaults={"duration": "30s", "vus": 4})
    p_gen.add_argument("--base-port", type=base_port, default=24400)


def bench_spec(args: argparse.Namespace) -> RunSpec:
    """The benchmark's run: the flags given and what it fixes (the bodies only for a scenario
    that has them); bad flags raise UsageError naming each."""
    given = load_params(args, BENCH_PARAMS)
    kind = SCENARIOS.get(str(given.get("scenario", _DEFAULT.scenario)))
    fixed = {k: v for k, v in _FIXED.items() if kind is None or applies(k, kind)}
    try:
        return RunSpec.from_params({**given, **fixed})
    except SpecError as exc:
        raise UsageError("; ".join(f"--{n}: {m}" for n, m in exc.problems)) from None


def _cmd_bench(args: argparse.Namespace, seams: Seams) -> int:
    spec = bench_spec(args)
    if seams.build_missing(("k6", "otelcol"), command="bench") != EXIT_OK:
        return EXIT_BAD_INPUT
    ports = Ports.from_base(args.base_port)
    busy = busy_ports(ports)
    if busy:
        listed = ", ".join(f"{n} {p}" for n, p in busy)
        raise UsageError(f"--base-port: ports in use ({listed}); pick another base")
    sink = "a sink answering as Loki" if spec.kind.pushed else "a nop collector"
    with (
        tempfile.TemporaryDirectory(prefix="loadgate-bench-") as tmp,
        console.status(f"k6 {spec.vus} VUs for {spec.duration} against {sink} ({_payload(spec)})"),
    ):
        figures = seams.bench_generator(spec, ports, Path(tmp))
    stdout.print(bench_table(spec, figures))
    return EXIT_OK


def _payload(spec: RunSpec) -> str:
    """What one request of the benchmark carries, in words."""
    kind = spec.kind
    if kind.name == _DEFAULT.scenario:
        return (
            f"{spec.logs_per_request} records per request, {spec.requests_per_iteration} "
            f"requests per iteration, bodies {spec.body_min}-{spec.body_max} chars"
        )
    own = ", ".join(f"{n} {getattr(spec, n.replace('-', '_'))}" for n in kind.params)
    return (
        f"{spec.units_per_request} {kind.unit} per request ({own}), "
        f"{spec.requests_per_iteration} requests per iteration"
    )


def _one(unit: str) -> str:
    """The singular of a unit: `log record`, `query`."""
    return unit[:-3] + "y" if unit.endswith("ies") else unit.removesuffix("s")


def bench_table(spec: RunSpec, figures: GeneratorFigures) -> Table:
    """The benchmark's figures: the scenario's units per minute and per k6 CPU-second."""
    kind = spec.kind
    unit = kind.unit
    sink = "a sink answering as Loki" if kind.pushed else "a nop collector"
    table = Table(title=f"bench generator: k6 {kind.name} against {sink}")
    table.add_column("figure")
    table.add_column("value", justify="right")
    if kind.name == _DEFAULT.scenario:
        setup = f"{spec.logs_per_request} records/request"
    elif kind.pushed is not None:
        setup = "1 query/request"
    else:
        setup = f"{spec.units_per_request} {kind.short}/request"
    table.add_row(
        "setup",
        f"{spec.vus} VUs, {setup}, {spec.requests_per_iteration} requests/iteration, "
        f"GOGC={k6args.K6_GOGC}",
    )
    table.add_row(f"{unit} accepted", f"{figures.records_accepted:,}")
    table.add_row("wall time", f"{figures.wall_s:.1f} s")
    table.add_row(f"{unit} per minute", f"{figures.records_per_minute:,.0f}")
    table.add_row("k6 CPU time (user+sys)", f"{figures.k6_cpu_s:.2f} s")
    table.add_row(f"{unit} per k6 CPU-second", f"{figures.records_per_cpu_second:,.0f}")
    target = TARGETS_PER_CORE.get(kind.name)
    per_core = f"{figures.records_per_minute_per_core:,.0f}"
    table.add_row(
        f"{unit} per minute per k6 core",
        f"{per_core} (target {target:,})" if target is not None else per_core,
    )
    if figures.k6_cpu_s and figures.records_accepted:
        micro = figures.k6_cpu_s / figures.records_accepted * 1e6
        table.add_row(f"k6 CPU per {_one(kind.unit)}", f"{micro:.2f} µs")
    if kind.pushed is not None:
        table.add_row("pushed beside the queries", f"{spec.push_rate:,} lines/min (push-rate)")
    table.add_row(f"{'sink' if kind.pushed else 'collector'} CPU time",
                  f"{figures.collector_cpu_s:.2f} s")  # fmt: skip
    return table
