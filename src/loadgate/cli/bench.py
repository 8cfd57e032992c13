"""`loadgate bench generator`: k6 log records per minute per k6 CPU core, against a nop
collector; the measuring is loadgate.bench."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from loadgate.capacity.generator_bench import TARGET_PER_CORE, run_generator_bench
from loadgate.contract import k6args
from loadgate.contract.params import MAX_P99_MS
from loadgate.contract.spec import RunSpec, SpecError

from ..stack.ports import Ports, busy_ports
from .common import EXIT_BAD_INPUT, EXIT_OK, Subparsers, UsageError, base_port, console, stdout
from .flags import add_load_flags, load_params

if TYPE_CHECKING:
    from .seams import Seams


# Run parameters the benchmark takes; the rest is fixed: constant VUs against a nop collector,
# bodies as a default run's, gates that never fail.
BENCH_PARAMS = ("duration", "vus", "logs-per-request", "requests-per-iteration")
DEFAULT = RunSpec()


def register(sub: Subparsers) -> None:
    p = sub.add_parser("bench", help="benchmarks that print figures")
    p.set_defaults(handler=cmd_bench)
    bench_sub = p.add_subparsers(dest="bench", required=True)
    p_gen = bench_sub.add_parser(
        "generator", help="k6 log records per minute per k6 CPU core, against a nop collector"
    )
    add_load_flags(p_gen, BENCH_PARAMS, defaults={"duration": "30s", "vus": 4})
    p_gen.add_argument("--base-port", type=base_port, default=24400)


def cmd_bench(args: argparse.Namespace, seams: Seams) -> int:
    try:
        spec = RunSpec.from_params(
            {
                **load_params(args, BENCH_PARAMS),
                "executor": "constant-vus",
                "body-min": DEFAULT.body_min,
                "body-max": DEFAULT.body_max,
                "p99-ms": MAX_P99_MS,
                "max-error-rate": 1,
                "run-id": "bench-generator",
            }
        )
    except SpecError as exc:
        raise UsageError("; ".join(f"--{n}: {m}" for n, m in exc.problems)) from None
    if seams.build_missing(("k6", "otelcol"), command="bench") != EXIT_OK:
        return EXIT_BAD_INPUT
    ports = Ports.from_base(args.base_port)
    busy = busy_ports(ports)
    if busy:
        listed = ", ".join(f"{n} {p}" for n, p in busy)
        raise UsageError(f"--base-port: ports in use ({listed}); pick another base")
    with (
        tempfile.TemporaryDirectory(prefix="loadgate-bench-") as tmp,
        console.status(
            f"k6 {spec.vus} VUs for {spec.duration} against a nop collector "
            f"({spec.logs_per_request} records per request, {spec.requests_per_iteration} "
            f"requests per iteration, bodies {spec.body_min}-{spec.body_max} chars)"
        ),
    ):
        figures = run_generator_bench(spec, ports, Path(tmp))
    table = Table(title="bench generator: k6 otlp-logs against a nop collector")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row(
        "setup",
        f"{spec.vus} VUs, {spec.logs_per_request} records/request, "
        f"{spec.requests_per_iteration} requests/iteration, GOGC={k6args.K6_GOGC}",
    )
    table.add_row("log records accepted", f"{figures.records_accepted:,}")
    table.add_row("wall time", f"{figures.wall_s:.1f} s")
    table.add_row("log records per minute", f"{figures.records_per_minute:,.0f}")
    table.add_row("k6 CPU time (user+sys)", f"{figures.k6_cpu_s:.2f} s")
    table.add_row("log records per k6 CPU-second", f"{figures.records_per_cpu_second:,.0f}")
    table.add_row(
        "log records per minute per k6 core",
        f"{figures.records_per_minute_per_core:,.0f} (target {TARGET_PER_CORE:,})",
    )
    table.add_row("collector CPU time", f"{figures.collector_cpu_s:.2f} s")
    stdout.print(table)
    return EXIT_OK
