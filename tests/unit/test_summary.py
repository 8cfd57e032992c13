"""Parsing the scenario's JSON summary and combining several k6 instances."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from loadgate.contract.summary import Histogram, SummaryError, combine, parse_summary, read_summary


def summary(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "format": "loadgate-k6-summary/1",
        "run_id": "r1",
        "duration_s": 60.0,
        "requests": 1000,
        "failed": 10,
        "error_rate": 0.01,
        "p99_ms": 12.5,
        "records_sent": 5000,
        "records_accepted": 4950,
        "records_per_minute": 4950.0,
        "dropped_iterations": 2,
        "thresholds": {
            "errors{rate<=0.01}": {"metric": "errors", "expression": "rate<=0.01", "ok": True}
        },
        "latency_histogram": {"base_ms": 0.05, "per_octave": 8, "counts": {"40": 900, "60": 100}},
    }
    base.update(over)
    return base


def test_parse_reads_every_client_figure() -> None:
    fig = parse_summary(summary())
    assert (fig.requests, fig.failed, fig.records_sent, fig.records_accepted) == (
        1000,
        10,
        5000,
        4950,
    )
    assert fig.error_rate == 0.01
    assert fig.p99_ms == 12.5
    assert fig.dropped_iterations == 2
    assert fig.thresholds == {"errors{rate<=0.01}": True}
    assert fig.histogram.counts == {40: 900, 60: 100}
    d = fig.to_dict()
    assert "histogram" not in d
    assert d["records_per_minute"] == 4950.0


def test_parse_refuses_other_formats_and_missing_fields() -> None:
    with pytest.raises(SummaryError, match="not a loadgate k6 summary"):
        parse_summary({"metrics": {}})
    bad = summary()
    del bad["records_sent"]
    with pytest.raises(SummaryError, match="records_sent"):
        parse_summary(bad)


def test_read_summary_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(SummaryError, match="no k6 summary"):
        read_summary(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": ')
    with pytest.raises(SummaryError, match="not valid JSON"):
        read_summary(broken)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(summary()))
    assert read_summary(good).requests == 1000


def test_histogram_quantile_is_a_bucket_upper_bound() -> None:
    h = Histogram(counts={10: 99, 50: 1})
    assert h.quantile_ms(0.99) == pytest.approx(0.05 * 2 ** (11 / 8))
    assert h.quantile_ms(1.0) == pytest.approx(0.05 * 2 ** (51 / 8))
    assert Histogram().quantile_ms(0.99) is None


def test_histogram_bounds_relative_error() -> None:
    # A duration d falls in the bucket whose upper bound is within 2^(1/8) (~9%) above d.
    for d in (0.3, 1.0, 7.7, 99.0, 2500.0):
        b = math.ceil(math.log2(d / 0.05) * 8) - 1
        upper = Histogram().upper_ms(b)
        assert d <= upper < d * 2 ** (1 / 8) + 1e-9


def test_combine_adds_counts_and_merges_histograms() -> None:
    a = parse_summary(summary(latency_histogram={"counts": {"40": 990, "70": 10}}))
    b = parse_summary(
        summary(
            requests=500,
            failed=0,
            records_sent=2500,
            records_accepted=2500,
            duration_s=61.0,
            latency_histogram={"counts": {"40": 500}},
            thresholds={"errors{rate<=0.01}": {"ok": False}},
        )
    )
    c = combine([a, b])
    assert c.requests == 1500
    assert c.failed == 10
    assert c.error_rate == pytest.approx(10 / 1500)
    assert c.records_sent == 7500
    assert c.records_accepted == 7450
    assert c.duration_s == 61.0
    assert c.records_per_minute == pytest.approx(7450 * 60 / 61)
    assert c.instances == 2
    # p99 of the merged histogram: rank 1485 of 1500 lies in bucket 40, not an average of p99s.
    assert c.p99_ms == pytest.approx(Histogram().upper_ms(40))
    assert c.thresholds == {"errors{rate<=0.01}": False}
    assert "merged histogram" in c.p99_source


def test_combine_prefers_a_given_p99() -> None:
    a = parse_summary(summary())
    c = combine([a, a], p99_ms=42.0)
    assert c.p99_ms == 42.0
    assert c.p99_source == "Prometheus"


def test_combine_one_is_itself_and_none_is_an_error() -> None:
    a = parse_summary(summary())
    assert combine([a]) is a
    with pytest.raises(SummaryError):
        combine([])


def test_combine_refuses_different_bucket_layouts() -> None:
    a = parse_summary(summary())
    b = replace(a, histogram=Histogram(base_ms=1.0, counts={1: 1}))
    with pytest.raises(SummaryError, match="bucket layouts"):
        combine([a, b])
