"""Bottleneck figures from a run's result (as result.json holds it, read back through the one
reader): each from its place, unmeasured ones None (never 0), and the attribution every
result.json carries."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from support.runresults import pipeline, run_result

from loadgate.cli.run import bottleneck_text
from loadgate.contract.spec import RunSpec
from loadgate.judge.attribution import COLLECTOR, GENERATOR, LOKI, NONE, UNKNOWN, Attribution
from loadgate.judge.run_figures import assess, bottleneck_block, figures_from_result
from loadgate.records import result as results
from loadgate.records.result import RunResult

SPEC = RunSpec.from_params({"rate": 120_000, "duration": "20s", "run-id": "r1"})


def as_written(tmp_path: Path, **kw: Any) -> RunResult:
    """The result as result.json holds it (written and read back)."""
    path = results.write(run_result(SPEC, **kw), tmp_path)
    return results.read(path)


def test_each_figure_comes_from_its_place_in_result_json(tmp_path: Path) -> None:
    data = as_written(
        tmp_path,
        dropped=3,
        generator={"vus_limit": 200, "k6_cpu_s": 7.5, "machine_cores": 2, "vus_max": 40},
    )
    fig = figures_from_result(data)
    assert fig.offered_per_min == 120_000
    assert fig.accepted_per_min == data.client.records_per_minute
    assert fig.duration_s == 20
    assert fig.error_rate == 0.0
    assert fig.p99_ms == 5.0
    assert fig.failed_gates == ()
    assert (fig.k6_cpu_s, fig.machine_cores, fig.vus_max, fig.vus_limit) == (7.5, 2, 40, 200)
    assert fig.dropped_iterations == 3
    assert (fig.queue_max, fig.queue_capacity) == (2.0, 1000.0)
    assert (fig.collector_refused, fig.collector_enqueue_failed, fig.collector_send_failed) == (
        0,
        0,
        0,
    )
    assert (fig.collector_cpu_max, fig.collector_cpu_mean) == (0.3, 0.2)
    assert (fig.loki_received, fig.loki_discarded, fig.loki_push_p99_ms) == (40_000, 0, 12.0)


def test_what_a_run_did_not_measure_stays_none_never_zero(tmp_path: Path) -> None:
    unknown = {
        "loki_discarded": {"reason": "Loki restarted", "lower_bound": 0},
        "memory_limiter_refused": {"reason": "no series", "lower_bound": None},
    }
    pipe = pipeline(accepted=40_000, loki_discarded=None, queue_capacity=None, unknown=unknown)
    data = as_written(tmp_path, pipe=pipe, generator={"vus_limit": 200})  # a Juju run: no k6 CPU
    fig = figures_from_result(data)
    assert fig.loki_discarded is None
    assert fig.memory_limiter_refused is None
    assert fig.queue_capacity is None
    assert fig.k6_cpu_s is None
    assert fig.machine_cores is None
    assert fig.vus_max is None
    # A count listed as unknown is None even when a number sits beside it.
    assert data.pipeline is not None
    assert (
        figures_from_result(
            replace(data, pipeline=replace(data.pipeline, loki_discarded=0))
        ).loki_discarded
        is None
    )
    # An older result.json without the newer blocks: unknown, not 0.
    old = data.to_dict()
    for key in ("generator", "bottleneck"):
        old.pop(key)
    del old["pipeline"]["queue_capacity"]
    path = tmp_path / "old" / results.RESULT_FILE
    results.write_atomic(path, json.dumps(old))
    fig = figures_from_result(results.read(path))
    assert fig.k6_cpu_s is None
    assert fig.vus_limit is None
    assert fig.queue_capacity is None


def test_a_constant_vus_run_offers_no_rate() -> None:
    spec = RunSpec.from_params({"executor": "constant-vus", "duration": "10s", "run-id": "v"})
    assert figures_from_result(run_result(spec)).offered_per_min is None


def test_every_result_carries_its_bottleneck_and_a_clean_run_names_none(tmp_path: Path) -> None:
    data = as_written(tmp_path)
    assert data.bottleneck is not None
    assert data.bottleneck["attribution"]["verdict"] == NONE
    assert data.bottleneck == bottleneck_block(data)
    assert data.bottleneck["figures"]["offered_per_min"] == 120_000


def test_a_full_queue_with_loki_clean_names_the_collector_citing_the_queue(tmp_path: Path) -> None:
    pipe = pipeline(accepted=30_000, queue_size_max=1000.0, collector_refused=9_000)
    data = as_written(tmp_path, accepted_ratio=0.75, pipe=pipe, p99_ms=300.0)
    _, attribution = assess(data)
    assert attribution.verdict == COLLECTOR
    cited = {c.figure: c.value for c in attribution.claims}
    assert cited["queue_max"] == 1000
    assert cited["collector_refused"] == 9_000
    assert "p99_ms" in figures_from_result(data).failed_gates  # pyright: ignore[reportOperatorIssue]


def test_loki_discarding_names_loki_even_with_a_full_queue(tmp_path: Path) -> None:
    pipe = pipeline(accepted=40_000, queue_size_max=1000.0, loki_discarded=1_200)
    _, attribution = assess(as_written(tmp_path, pipe=pipe))
    assert attribution.verdict == LOKI
    assert any(c.figure == "loki_discarded" and c.value == 1_200 for c in attribution.claims)


def test_k6_falling_short_at_its_cpu_share_names_the_generator(tmp_path: Path) -> None:
    generator = {"vus_limit": 200, "vus_max": 200, "k6_cpu_s": 38.0, "machine_cores": 2}
    data = as_written(tmp_path, accepted_ratio=0.8, dropped=500, generator=generator)
    _, attribution = assess(data)
    assert attribution.verdict == GENERATOR
    figures = {c.figure for c in attribution.claims}
    assert {"dropped_iterations", "vus_max", "k6_cpu_s/duration_s"} <= figures
    # The same shortfall with CPU to spare: k6 waited, which is not the generator giving way.
    generator["k6_cpu_s"] = 6.0
    _, attribution = assess(as_written(tmp_path / "b", accepted_ratio=0.8, generator=generator))
    assert attribution.verdict == UNKNOWN
    # And without k6's CPU (the Juju target): unknown, naming the missing figure.
    _, attribution = assess(
        as_written(tmp_path / "c", accepted_ratio=0.8, generator={"vus_limit": 200})
    )
    assert attribution.verdict == UNKNOWN
    assert "k6_cpu_s" in attribution.missing


def test_the_run_prints_what_gave_way_with_its_figure(tmp_path: Path) -> None:
    pipe = pipeline(accepted=30_000, queue_size_max=1000.0)
    data = as_written(tmp_path, pipe=pipe)
    text = bottleneck_text(data.bottleneck).plain
    assert text.startswith("bottleneck: collector: its sending queue was full (1,000 of 1,000)")
    assert "queue_max = 1,000 (>= 950 (95 % of 1,000))" in text
    # A component verdict prints its notes too (here: Loki's push latency, below its threshold).
    slow = pipeline(accepted=30_000, queue_size_max=1000.0, loki_push_p99_ms=180.0)
    noted = bottleneck_text(as_written(tmp_path / "slow", pipe=slow).bottleneck).plain
    assert "\n  note: its Loki exporter waited on Loki's pushes (p99 180 ms" in noted
    assert bottleneck_text(None).plain == "bottleneck: unknown (no attribution recorded)"
    clean = bottleneck_text(as_written(tmp_path / "clean").bottleneck).plain
    assert clean.startswith("bottleneck: none: the pipeline kept up with the offered load (")
    unknown = Attribution(UNKNOWN, missing=("loki_discarded",)).to_dict()
    assert bottleneck_text({"attribution": unknown}).plain == (
        "bottleneck: unknown: not measured: loki_discarded"
    )


def test_a_pass_far_below_capacity_prints_that_the_pipeline_kept_up(tmp_path: Path) -> None:
    """Issue 39's first run: every gate passed, k6 dropped 4 iterations with CPU to spare. The
    section says the pipeline kept up; nothing is blamed, and no 'k6 fell short' is printed."""
    data = as_written(tmp_path, dropped=4, p99_ms=9.32)
    assert data.verdict == "PASS"
    text = bottleneck_text(data.bottleneck).plain
    assert text.startswith(
        "bottleneck: none: the pipeline kept up with the offered load (120,000 of 120,000 "
        "records/min accepted); k6 dropped 4 iterations"
    )
    assert "fell short" not in text
    assert "\n" not in text  # no claim lines: nothing gave way
