"""series.json: range queries over a run's window, missing series recorded with their reason."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from support.fakes.prometheus import FakeProm

from loadgate.measure import pipeline as pipe
from loadgate.measure import queries as q
from loadgate.measure import timeseries as ts
from loadgate.records import series
from loadgate.records.fields import RecordError


def prom_with_queue_and_rss() -> FakeProm:
    prom = FakeProm()
    exp = {"job": "otelcol", "instance": "c", "exporter": "loki"}
    for i in range(31):
        t = 1000.0 + 2 * i
        prom.add(q.COLLECTOR_QUEUE_SIZE, exp, t, float(10 * i))
        prom.add("otelcol_process_memory_rss", {"job": "otelcol", "instance": "c"}, t, 64 * 2**20)
    return prom


def test_fetch_reads_each_series_over_the_window() -> None:
    prom = prom_with_queue_and_rss()
    data = ts.fetch(prom.api(), pipe.Scope(), "r1", 1010.0, 1050.0, 1060.0)
    assert data.start == 1000.0
    assert data.step_s == ts.MIN_STEP_S
    queue = data.series[ts.QUEUE]
    assert queue.missing is None
    assert queue.samples[0] == (1000.0, 0.0)
    assert queue.samples[-1] == (1060.0, 300.0)
    rss = data.series[ts.RSS]
    assert {v for _, v in rss.samples} == {64.0}  # bytes -> MiB
    assert rss.unit == "MiB"
    # The fake answers no rate(): those series are missing, with the reason, never zeros.
    assert data.series[ts.CPU].samples == ()
    assert data.series[ts.CPU].missing == "Prometheus has no data for it in the window"
    assert dict(ts.missing(data)).keys() == {ts.CPU, ts.ACCEPTED}
    # The queries are the run's: the scope's exporters, queries.py's names.
    assert data.series[ts.QUEUE].query == pipe.Scope(exporter="loki.*").queue_size()
    assert "otelcol_process_cpu_seconds" in data.series[ts.CPU].query


def test_prometheus_down_records_every_series_missing(tmp_path: Path) -> None:
    prom = prom_with_queue_and_rss()
    prom.up = False
    path = series.write(tmp_path, ts.fetch(prom.api(), pipe.Scope(), "r1", 1010.0, 1050.0, 1060.0))
    data = ts.RunSeries.from_dict(json.loads(path.read_text()))
    assert set(data.series) == set(ts.NAMES)
    for s in data.series.values():
        assert s.samples == ()
        assert s.missing is not None
        assert "Prometheus query failed" in s.missing


def test_series_json_round_trips_and_bad_fields_are_named(tmp_path: Path) -> None:
    data = ts.fetch(prom_with_queue_and_rss().api(), pipe.Scope(), "r1", 1010.0, 1050.0, 1060.0)
    doc = json.loads(json.dumps(data.to_dict()))
    assert ts.RunSeries.from_dict(doc) == data
    doc["series"][ts.QUEUE]["samples"][3] = [1.0, "x"]
    with pytest.raises(RecordError, match=r"series\.series\.queue_size\.samples\[3\]"):
        ts.RunSeries.from_dict(doc)
    with pytest.raises(RecordError, match=r"series\.format"):
        ts.RunSeries.from_dict({"format": "other"})


def test_step_keeps_long_windows_to_a_bounded_number_of_points() -> None:
    api = FakeProm().api()  # the windows [0, 60] and [0, 4000]: a 10 s lead before the load
    assert ts.fetch(api, pipe.Scope(), "r1", 10.0, 50.0, 60.0).step_s == ts.MIN_STEP_S
    assert ts.fetch(api, pipe.Scope(), "r1", 10.0, 3990.0, 4000.0).step_s * ts.MAX_POINTS >= 4000


def test_an_unreadable_answer_is_missing_not_a_failed_run() -> None:
    prom = prom_with_queue_and_rss()
    api = prom.api()

    def garbage(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>proxy error</html>")

    api.client = httpx.Client(transport=httpx.MockTransport(garbage))
    data = ts.fetch(api, pipe.Scope(), "r1", 1010.0, 1050.0, 1060.0)
    for s in data.series.values():
        assert s.samples == ()
        assert s.missing is not None
        assert s.missing.startswith("Prometheus answer unreadable: JSONDecodeError")
