"""Counting what the metric and trace backends hold for a run: query text and answers."""

from __future__ import annotations

import re
from typing import Any

import pytest

from loadgate.measure import signal_queries as sq


def test_prometheus_counts_the_runs_samples_and_series() -> None:
    assert sq.promql_run_samples("r1", 90) == 'sum(count_over_time({run="r1"}[90s]))'
    assert sq.promql_run_series("r1", 90) == 'count(count_over_time({run="r1"}[90s]))'
    assert sq.promql_run_samples('a"b', 5, label="loadgate_run") == (
        'sum(count_over_time({loadgate_run="a\\"b"}[5s]))'
    )
    # k6's own remote-written metrics carry run_id, never the run label.
    assert "run_id" not in sq.promql_run_samples("r1", 90)
    with pytest.raises(ValueError, match="window"):
        sq.promql_run_samples("r1", 0)


def test_the_standin_is_counted_by_its_own_receiver_counter() -> None:
    sel = sq.standin_spans()
    assert sel == '{__name__=~"otelcol_receiver_accepted_spans(_total)?",job="traces-standin"}'
    assert re.fullmatch(
        "otelcol_receiver_accepted_spans(_total)?", "otelcol_receiver_accepted_spans_total"
    )
    assert sq.collector_spans(sq.EXPORTER_SENT_SPANS, exporter="otlphttp/send-traces.*") == (
        '{__name__=~"otelcol_exporter_sent_spans(_total)?",job="otelcol",'
        'exporter=~"otlphttp/send-traces.*"}'
    )


def test_traceql_of_a_run() -> None:
    assert sq.traceql_run("r1") == '{ .run = "r1" }'
    assert sq.traceql_run_span_count("r1") == '{ .run = "r1" } | count_over_time()'
    assert sq.traceql_run('x"y\\', attribute="loadgate.run") == '{ .loadgate.run = "x\\"y\\\\" }'


def test_tempo_search_parameters_cover_the_window() -> None:
    params = sq.tempo_search_params("r1", 1000.7, 1060.2, limit=50, spans_per_set=3)
    assert params == {
        "q": '{ .run = "r1" }', "start": "1000", "end": "1061", "limit": "50", "spss": "3",
    }  # fmt: skip
    with pytest.raises(ValueError, match="before start"):
        sq.tempo_search_params("r1", 10, 9)
    with pytest.raises(ValueError, match="at least 1"):
        sq.tempo_search_params("r1", 1, 2, limit=0)


def trace(*matched: int, key: str = "spanSets") -> dict[str, Any]:
    sets = [{"spans": [], "matched": m} for m in matched]
    return {"traceID": "t", key: sets if key == "spanSets" else sets[0]}


def test_spans_matched_sums_every_span_set() -> None:
    answer = {"traces": [trace(3, 2), trace(4, key="spanSet"), {"traceID": "u"}]}
    assert sq.spans_matched(answer) == 9
    assert sq.spans_matched({"traces": []}) == 0


@pytest.mark.parametrize(
    "answer",
    [
        {},
        {"traces": "no"},
        {"traces": ["no"]},
        {"traces": [{"spanSets": [{"matched": "3"}]}]},
    ],
)
def test_an_unreadable_search_answer_is_unknown_not_zero(answer: dict[str, Any]) -> None:
    assert sq.spans_matched(answer) is None


def test_a_search_cut_at_its_limit_is_unknown() -> None:
    answer = {"traces": [trace(1), trace(1)]}
    assert sq.spans_matched(answer, limit=2) is None
    assert sq.spans_matched(answer, limit=3) == 2
