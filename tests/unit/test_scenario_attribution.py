"""Attribution along each scenario's chain: otlp-metrics' store is Prometheus (its remote-write
exporter failing names it, its queue is the remote-write queue), loki-push's load does not pass
the collector (no collector claims; Loki's own figures decide), and the unit in the claims is
the scenario's."""

from __future__ import annotations

from dataclasses import replace

from loadgate.contract.spec import RunSpec
from loadgate.judge.attribution import (
    COLLECTOR,
    GENERATOR,
    LOKI,
    NONE,
    PROMETHEUS,
    TRACES,
    UNKNOWN,
    BottleneckFigures,
    attribute,
    chain_of,
)
from loadgate.judge.claims import Chain
from loadgate.judge.run_figures import in_chain

METRICS = chain_of("otlp-metrics")
PUSH = chain_of("loki-push")

CLEAN = BottleneckFigures(
    offered_per_min=600_000, accepted_per_min=600_000, duration_s=60, error_rate=0.0,
    p99_ms=4.0, failed_gates=(), machine_cores=2, k6_cpu_s=5.0, dropped_iterations=0,
    vus_max=8, vus_limit=100, queue_max=2, queue_capacity=1000, collector_refused=0,
    collector_enqueue_failed=0, collector_send_failed=0, collector_cpu_max=0.5,
    collector_cpu_mean=0.3, loki_received=60_000, loki_discarded=0, loki_push_p99_ms=8.0,
)  # fmt: skip


def test_the_chains_of_the_scenarios() -> None:
    assert chain_of("otlp-logs") == Chain()
    assert (METRICS.backend, METRICS.collector, METRICS.unit) == (PROMETHEUS, True, "points")
    assert (METRICS.exporter, METRICS.queue) == ("remote-write exporter", "remote-write queue")
    assert (PUSH.backend, PUSH.collector, PUSH.unit) == (LOKI, False, "lines")
    assert chain_of("no-such-scenario") == Chain()


def test_a_clean_metrics_run_is_none_without_lokis_figures() -> None:
    figures = in_chain(CLEAN, METRICS)
    assert (figures.loki_received, figures.loki_discarded, figures.loki_push_p99_ms) == (
        None,
        None,
        None,
    )
    assert attribute(figures, chain=METRICS).verdict == NONE


def test_prometheus_refusing_points_names_prometheus() -> None:
    figures = in_chain(replace(CLEAN, collector_send_failed=400, queue_max=1000), METRICS)
    att = attribute(figures, chain=METRICS)
    assert att.verdict == PROMETHEUS
    texts = [c.text for c in att.claims]
    assert "remote-write exporter failed to send 400 points" in texts[0]
    assert "its remote-write queue was full (1,000 of 1,000)" in texts
    assert "the collector's signs follow from Prometheus's back-pressure" in att.notes
    assert att.summary.startswith("prometheus: ")


def test_a_full_remote_write_queue_names_the_collector_in_points() -> None:
    figures = in_chain(
        replace(CLEAN, queue_max=1000, collector_refused=2500, accepted_per_min=550_000),
        METRICS,
    )
    att = attribute(figures, chain=METRICS)
    assert att.verdict == COLLECTOR
    assert "it refused 2,500 points" in [c.text for c in att.claims]


def test_the_collector_blamed_only_when_prometheus_was_measured() -> None:
    figures = in_chain(replace(CLEAN, queue_max=1000, collector_send_failed=None), METRICS)
    att = attribute(figures, chain=METRICS)
    assert att.verdict == UNKNOWN
    assert att.missing == ("collector_send_failed",)
    assert "Prometheus's side was not measured" in att.notes[0]


def test_a_loki_push_run_has_no_collector_in_its_chain() -> None:
    # The stack's collector may look busy; it is not on the load's path.
    busy = replace(CLEAN, queue_max=1000, collector_refused=50, collector_send_failed=None)
    figures = in_chain(busy, PUSH)
    assert (figures.queue_max, figures.collector_refused, figures.collector_cpu_max) == (
        None,
        None,
        None,
    )
    assert attribute(figures, chain=PUSH).verdict == NONE


def test_loki_discarding_pushed_lines_names_loki() -> None:
    figures = in_chain(replace(CLEAN, loki_discarded=900, accepted_per_min=500_000), PUSH)
    att = attribute(figures, chain=PUSH)
    assert att.verdict == LOKI
    assert att.claims[0].figure == "loki_discarded"
    assert "500,000 lines/min accepted of 600,000 offered" in [c.text for c in att.claims]


def test_k6_short_of_cpu_on_loki_push_is_the_generator_and_says_lines() -> None:
    figures = in_chain(
        replace(CLEAN, accepted_per_min=400_000, dropped_iterations=30, k6_cpu_s=115.0), PUSH
    )
    att = attribute(figures, chain=PUSH)
    assert att.verdict == GENERATOR
    waiting = attribute(replace(figures, k6_cpu_s=10.0), chain=PUSH)
    assert waiting.verdict == UNKNOWN
    assert "no Loki figure shows which gave way" in waiting.notes[0]


def test_a_loki_push_run_without_lokis_figures_is_unknown() -> None:
    figures = in_chain(replace(CLEAN, loki_discarded=None), PUSH)
    att = attribute(figures, chain=PUSH)
    assert att.verdict == UNKNOWN
    assert att.missing == ("loki_discarded",)


def test_the_offered_rate_is_the_scenarios_unit() -> None:
    spec = RunSpec.from_params({"scenario": "otlp-metrics", "rate": 600_000})
    assert spec.offered_logs_per_minute == 600_000  # 12,000 iterations of 50 points


TRACES_CHAIN = chain_of("otlp-traces")
QUERY = chain_of("logql-query")


def test_the_chains_of_traces_and_queries() -> None:
    assert (TRACES_CHAIN.backend, TRACES_CHAIN.collector, TRACES_CHAIN.unit) == (
        TRACES, True, "spans",
    )  # fmt: skip
    assert (TRACES_CHAIN.exporter, TRACES_CHAIN.backend_name) == (
        "traces exporter", "the traces backend",
    )  # fmt: skip
    assert (QUERY.backend, QUERY.collector, QUERY.unit, QUERY.reads) == (
        LOKI, False, "queries", True,
    )  # fmt: skip
    assert not PUSH.reads


def test_the_traces_backend_refusing_spans_names_it_and_a_clean_run_is_none() -> None:
    figures = in_chain(CLEAN, TRACES_CHAIN)
    assert figures.loki_received is None
    assert attribute(figures, chain=TRACES_CHAIN).verdict == NONE
    failing = in_chain(replace(CLEAN, collector_send_failed=90, queue_max=1000), TRACES_CHAIN)
    att = attribute(failing, chain=TRACES_CHAIN)
    assert att.verdict == TRACES
    assert att.claims[0].text == (
        "the collector's traces exporter failed to send 90 spans (the traces backend refused "
        "them or was unreachable)"
    )
    # The collector's full queue follows from it.
    assert any(c.component == COLLECTOR for c in att.claims)


def test_a_full_traces_queue_with_the_backend_clean_names_the_collector() -> None:
    figures = in_chain(replace(CLEAN, queue_max=1000), TRACES_CHAIN)
    att = attribute(figures, chain=TRACES_CHAIN)
    assert att.verdict == COLLECTOR
    assert "its sending queue was full (1,000 of 1,000)" in att.claims[0].text


def test_wrong_answers_and_slow_queries_name_lokis_query_path() -> None:
    clean = in_chain(replace(CLEAN, wrong_answers=0), QUERY)
    assert attribute(clean, chain=QUERY).verdict == NONE
    wrong = in_chain(replace(CLEAN, wrong_answers=4, failed_gates=("wrong_answers",)), QUERY)
    att = attribute(wrong, chain=QUERY)
    assert att.verdict == LOKI
    assert att.claims[0].figure == "wrong_answers"
    slow = replace(CLEAN, p99_ms=2500.0, failed_gates=("p99_ms",), wrong_answers=0)
    att = attribute(in_chain(slow, QUERY), chain=QUERY)
    assert att.verdict == LOKI
    assert att.claims[0].text == "Loki's queries took 2,500 ms at p99 (its query path)"
    # loki-push's p99 is its pushes': no query claim there.
    assert attribute(in_chain(slow, PUSH), chain=PUSH).verdict == UNKNOWN


def test_slow_queries_of_a_k6_short_of_cpu_are_not_lokis() -> None:
    busy = replace(CLEAN, p99_ms=2500.0, failed_gates=("p99_ms",), k6_cpu_s=119.0,
                   wrong_answers=0)  # fmt: skip
    att = attribute(in_chain(busy, QUERY), chain=QUERY)
    assert att.verdict != LOKI
    assert not any(c.figure == "p99_ms" for c in att.claims)


def test_wrong_answers_are_recorded_only_where_counted() -> None:
    assert "wrong_answers" not in CLEAN.to_dict()
    assert replace(CLEAN, wrong_answers=2).to_dict()["wrong_answers"] == 2
    back = BottleneckFigures.from_dict(replace(CLEAN, wrong_answers=2).to_dict())
    assert back.wrong_answers == 2
    assert BottleneckFigures.from_dict(CLEAN.to_dict()).wrong_answers is None
