"""The model's Prometheus and Loki in a timed world (world.Timed): what COS holds of a pipeline
that takes time (pipeline.py).

Prometheus holds a scrape of the collector and of Loki every `scrape_every` seconds (COS: once a
minute), each visible a few seconds after it was taken (the collector's remote write), with the
counters, the sending queue's size and capacity, and the k6 requests of every run. Loki answers
LogQL counts over its streams (timed.streams): label matchers and line filters as loadgate
writes them, counting the lines stamped in the query's range that the exporter has sent.
"""

from __future__ import annotations

import json
import math
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from .clock import FastClock
from .pipeline import Pipeline
from .servers import MIB, Series, Telemetry
from .timed import DIRECT, direct_lines, streams, timeline

# A scrape shows up in Prometheus this long after it was taken (remote write).
INGEST_DELAY_S = 5.0
# The collector process started this long before the world's time did.
UPTIME_AT_ORIGIN_S = 3600.0

_COUNT = re.compile(
    r"sum\(count_over_time\((\{[^}]*\})((?:\s*(?:\|=|!=)\s*\"(?:[^\"\\]|\\.)*\")*)"
    r"\s*\[(\d+)(ms|s)\]\)\)"
)
_MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
_FILTER = re.compile(r'(\|=|!=)\s*"((?:[^"\\]|\\.)*)"')


def _unescape(text: str) -> str:
    return text.replace('\\"', '"').replace("\\\\", "\\")


def _matches(labels: dict[str, str], selector: str) -> bool:
    for key, op, raw in _MATCHER.findall(selector):
        value, have = _unescape(raw), labels.get(key, "")
        ok = {
            "=": have == value,
            "!=": have != value,
            "=~": re.fullmatch(value, have) is not None,
            "!~": re.fullmatch(value, have) is None,
        }[op]
        if not ok:
            return False
    return True


@dataclass
class TimedTelemetry(Telemetry):
    clock: FastClock | None = None
    scrape_every: float = 60.0
    scraped_until: float = 0.0
    lock: threading.RLock = field(default_factory=threading.RLock)

    def now(self) -> float:
        assert self.clock is not None
        return self.clock.time()

    def world(self) -> tuple[dict[str, Any], str, dict[str, Any]]:
        """The state, and the model holding Loki (name, model)."""
        state = json.loads(self.state_file.read_text())
        for name, model in state["models"].items():
            if "loki" in model["apps"]:
                return state, name, model
        return state, "", {"apps": {}, "runs": []}

    def grid(self, state: dict[str, Any]) -> float:
        """The first scrape time: a whole second after the world's time starts."""
        return float(math.ceil(state["pipeline"]["origin"]))

    # ---- Prometheus -------------------------------------------------------------------------

    def data(self, query: str, at: float | None) -> dict[str, Any]:
        with self.lock:  # the servers answer in threads; the store grows as scrapes come in
            return super().data(query, at)

    def scrape(self, at: float) -> None:
        """Store every scrape taken up to `at` (less the remote-write delay) not stored yet."""
        with self.lock:
            state, _, model = self.world()
            line = timeline(state, model)
            t = max(self.grid(state), self.scraped_until + self.scrape_every)
            while line is not None and t <= at - INGEST_DELAY_S:
                self._store(t, self.timed_series(line, state, model, t))
                self.scraped_until = t
                t += self.scrape_every

    def _store(self, at: float, series: list[Series]) -> None:
        for s in series:
            job = next((j for j in ("otelcol", "k6") if s.metric.startswith(j)), "loki")
            labels = {**s.labels, "job": job, "instance": f"{job}-0"}
            if job == "otelcol":  # the collector charm's topology labels on its own metrics
                labels["juju_application"] = "otelcol"
            if job == "k6":
                labels["instance"] = s.labels["instance"]
            self.store.add(s.metric, labels, at, s.value)

    def timed_series(
        self, line: Pipeline, state: dict[str, Any], model: dict[str, Any], t: float
    ) -> list[Series]:
        """Every series a scrape at t stores: the collector's, Loki's, k6's."""
        origin = state["pipeline"]["origin"]
        units = list(model["apps"].get("loki", {}).get("units", []))
        accepted, refused, sent = line.total_accepted(t), line.refused(t), line.exported(t)
        direct = direct_lines(state, origin, t)
        loki = {"juju_application": "loki"}
        out = [
            Series("otelcol_receiver_accepted_log_records_total", {"receiver": "otlp"}, accepted),
            Series("otelcol_receiver_refused_log_records_total", {"receiver": "otlp"}, refused),
            Series("otelcol_process_memory_rss", {}, 120 * MIB),
            Series("otelcol_process_cpu_seconds_total", {}, 0.25 * (t - origin)),
            Series("otelcol_process_uptime_total", {}, UPTIME_AT_ORIGIN_S + t - origin),
            Series("process_start_time_seconds", loki, origin - UPTIME_AT_ORIGIN_S),
            Series("loki_build_info", loki, 1.0),
            # Loki receives the collector's copy and the direct client's pushes.
            Series("loki_distributor_lines_received_total", loki, sent + direct),
            Series("loki_discarded_samples_total", loki, 0.0),
        ]
        batches = line.queue(t) / 5  # the runs' requests hold 5 records each
        capacity = line.queue_max / 5
        for index in range(len(units)):  # every Loki unit gets a full copy
            exporter = {"exporter": f"loki/send-loki-logs/{index}"}
            out += [
                Series("otelcol_exporter_sent_log_records_total", exporter, sent),
                Series("otelcol_exporter_send_failed_log_records_total", exporter, 0.0),
                # A full queue fails the enqueue, and the receiver refuses the request.
                Series("otelcol_exporter_enqueue_failed_log_records_total", exporter, refused),
                Series("otelcol_exporter_queue_size", exporter, batches),
                Series("otelcol_exporter_queue_capacity", exporter, capacity),
            ]
        for run in model["runs"]:
            if "start" in run and run["start"] <= t:
                requests = line.offered(run["run_id"], t) / run["lpr"]
                for unit in run["units"]:
                    labels = {"run_id": run["run_id"], "instance": unit.replace("/", "-")}
                    out.append(Series("k6_http_reqs_total", labels, requests / len(run["units"])))
        return out

    def over_time(self, kind: str, inner: str, window_s: float, at: float) -> dict[str, Any] | None:
        """max/avg_over_time of a gauge over the scrapes in the window."""
        values: list[float] = []
        for t in sorted({t for s in self.store.series for t, _ in s.samples}):
            if at - window_s < t <= at:
                result = self.store.answer(inner, t)["result"]
                if result:
                    values.append(float(result[0]["value"][1]))
        if not values:
            return {"resultType": "vector", "result": []}
        value = max(values) if kind == "max" else sum(values) / len(values)
        return {"resultType": "vector", "result": [{"metric": {}, "value": [at, repr(value)]}]}

    # ---- Loki -------------------------------------------------------------------------------

    def logql(self, unit: str, query: str, at_ns: str | None = None) -> float | None:
        """A LogQL count over the model's streams (every Loki unit holds a full copy)."""
        self.loki_queries.append((unit, query))
        m = _COUNT.fullmatch(query)
        if m is None or at_ns is None:
            raise ValueError(f"the fake Loki does not know {query!r}")
        selector, filters, size, unit_name = m.groups()
        at_ms = round(int(at_ns) / 1e6)
        window_ms = int(size) * (1 if unit_name == "ms" else 1000)
        state, name, model = self.world()
        line = timeline(state, model)
        if line is None:
            raise ValueError("the fake Loki of a timed world has no pipeline")
        chosen = [
            s["stream"]
            for s in streams(state, name, model)
            if _matches(s["labels"], selector) and _passes(s["marker"], filters)
        ]
        now = self.now()
        lo, hi = (at_ms - window_ms) / 1000, min(now, at_ms / 1000)
        direct = direct_lines(state, lo, hi) if DIRECT in chosen else 0
        return float(line.stored([c for c in chosen if c != DIRECT], lo, hi, now) + direct)


def _passes(marker: str, filters: str) -> bool:
    """Whether a stream's lines pass the line filters: a run's lines all hold its marker (and
    no other run's); another application's hold none."""
    for op, raw in _FILTER.findall(filters):
        text = _unescape(raw)
        holds = bool(marker) and text == marker
        if (op == "|=") != holds:
            return False
    return True
