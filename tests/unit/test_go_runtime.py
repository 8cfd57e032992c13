"""The collector's Go runtime figures (measure/go_runtime.py), the Loki stand-in's counts, k6's
latency trend in its summary, and `--hand` as a stack flag."""

from __future__ import annotations

from typing import Any

import pytest

from loadgate.contract.summary import ClientFigures, combine, parse_summary
from loadgate.measure import go_runtime
from loadgate.measure.go_runtime import Heap
from loadgate.stack import choice, standin
from loadgate.stack.hand import HandChanges

_TAIL = "0.1+1.2+0.01 ms clock, 0.2+0.3/0.5/0+0.02 ms cpu, {sizes}, 0 MB stacks, 1 MB globals, 2 P"


def gc_line(at: str, service: str, n: int, pct: int, sizes: str, forced: bool = False) -> str:
    tail = _TAIL.format(sizes=sizes) + (" (forced)" if forced else "")
    return f"2026-11-23T10:00:{at}Z [{service}] gc {n} @{n / 2}s {pct}%: {tail}"


LOG = "\n".join(
    [
        gc_line("00.500", "otelcol", 7, 3, "4->4->2 MB, 5 MB goal"),
        '2026-11-23T10:00:01.000Z [pebble] Service "otelcol" starting: otelcol',
        gc_line("02.250", "otelcol", 8, 4, "180->190->120 MB, 200 MB goal"),
        gc_line("03.000", "loki-standin", 3, 1, "9->9->4 MB, 10 MB goal"),
        gc_line("04.000", "otelcol", 9, 9, "150->150->60 MB, 230 MB goal", forced=True),
    ]
)
T0 = 1795428001.0  # 2026-11-23T10:00:01Z


def test_gctrace_lines_of_the_collector_from_the_load_on() -> None:
    found = go_runtime.parse_gctrace(LOG.splitlines(), "otelcol", T0)
    assert [(c.number, c.heap_live_mb, c.goal_mb, c.forced) for c in found] == [
        (8, 120, 200, False),
        (9, 60, 230, True),
    ]
    assert found[0].at == pytest.approx(T0 + 1.25)


def test_summary_of_a_traced_run() -> None:
    found = go_runtime.parse_gctrace(LOG.splitlines(), "otelcol", T0)
    heap = Heap(alloc_max=300 * 2**20, alloc_mean=150 * 2**20, sys_max=400 * 2**20)
    fig = go_runtime.summarize(found, heap, (T0, T0 + 30), "250MiB")
    assert (fig.gc_count, fig.gc_per_minute, fig.gc_forced, fig.gc_cpu_percent) == (2, 4.0, 1, 9)
    assert (fig.heap_live_max_mib, fig.heap_goal_max_mib) == (120.0, 230.0)
    assert (fig.heap_alloc_max_mib, fig.heap_alloc_mean_mib, fig.sys_max_mib) == (
        300.0, 150.0, 400.0,
    )  # fmt: skip
    assert fig.gomemlimit == "250MiB"
    assert fig.to_dict()["gc_per_minute"] == 4.0


def test_without_a_trace_the_gc_count_is_unknown_not_zero() -> None:
    fig = go_runtime.summarize(None, Heap(problem="heap unknown: down"), (T0, T0 + 30), None)
    assert (fig.gc_trace, fig.gc_count, fig.gc_per_minute, fig.gc_forced) == (
        False, None, None, None,
    )  # fmt: skip
    assert fig.heap_alloc_max_mib is None
    assert fig.problems == ["heap unknown: down"]
    assert "the GC count is unknown" in fig.source
    assert go_runtime.summarize([], Heap(), (T0, T0 + 30), None).gc_count == 0


def test_standin_counts_from_its_metrics() -> None:
    text = """\
# HELP otelcol_receiver_accepted_log_records_total x
otelcol_receiver_accepted_log_records_total{receiver="otlp",transport="http"} 1200
otelcol_receiver_accepted_log_records_total{receiver="otlp",transport="grpc"} 3
otelcol_processor_filter_logs_filtered_total{filter="filter/collector-own-logs"} 7
otelcol_process_uptime_total 12.5
"""
    assert standin.counts(text) == (1203, 7)
    assert standin.counts("") == (0, 0)


def summary(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "format": "loadgate-k6-summary/1", "duration_s": 60.0, "requests": 100, "failed": 0,
        "error_rate": 0.0, "p99_ms": 12.5, "records_sent": 500, "records_accepted": 500,
        "avg_ms": 3.0, "p90_ms": 6.0, "p95_ms": 9.0, "max_ms": 40.0,
        "latency_histogram": {"base_ms": 0.05, "per_octave": 8, "counts": {"40": 90, "60": 10}},
    }  # fmt: skip
    base.update(over)
    return base


def test_the_summary_keeps_k6s_latency_trend() -> None:
    fig = parse_summary(summary())
    assert (fig.mean_ms, fig.p90_ms, fig.p95_ms, fig.max_ms) == (3.0, 6.0, 9.0, 40.0)
    assert {"mean_ms", "p90_ms", "p95_ms", "max_ms"} <= set(fig.to_dict())
    back = ClientFigures.from_dict(fig.to_dict())
    assert (back.mean_ms, back.p90_ms, back.p95_ms, back.max_ms) == (3.0, 6.0, 9.0, 40.0)
    old = parse_summary(summary(avg_ms=None, p90_ms=None, p95_ms=None, max_ms=None))
    assert old.mean_ms is None
    assert not {"mean_ms", "p90_ms", "p95_ms", "max_ms"} & set(old.to_dict())  # older shape


def test_several_instances_combine_their_latency_trend() -> None:
    a = parse_summary(summary())
    b = parse_summary(summary(requests=300, avg_ms=5.0, max_ms=70.0))
    both = combine([a, b])
    assert both.mean_ms == pytest.approx((3.0 * 100 + 5.0 * 300) / 400)
    assert both.max_ms == 70.0
    assert both.p90_ms == both.histogram.quantile_ms(0.90)
    assert both.p95_ms == both.histogram.quantile_ms(0.95)
    unknown = combine([a, parse_summary(summary(avg_ms=None))])
    assert unknown.mean_ms is None


def test_hand_changes_are_a_stack_flag_of_the_charm_stack() -> None:
    req = choice.request(choice.StackFlags(hand=("exporter=standin", "gc-trace=on")))
    assert req.charms is not None
    assert req.charms.hand == HandChanges(gc_trace=True, exporter="standin")
    plain = choice.request(choice.StackFlags()).charms
    assert plain is not None
    assert plain.hand is None


def test_hand_changes_refused_where_they_cannot_apply() -> None:
    with pytest.raises(choice.ChoiceError, match="--hand: apply to a charm-rendered stack"):
        choice.request(choice.StackFlags(profile="hand-nop", hand=("gc-trace=on",)))
    with pytest.raises(choice.ChoiceError, match="--backend-fault puts its proxy before Loki"):
        choice.request(choice.StackFlags(hand=("exporter=nop",), backend_fault="503=0.5"))
    with pytest.raises(choice.ChoiceError, match="--hand: num-consumers: must be"):
        choice.request(choice.StackFlags(hand=("num-consumers=0",)))
