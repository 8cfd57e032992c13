"""A Prometheus HTTP API over an in-memory store of samples, answering the query shapes
loadgate sends (raw range selectors, timestamps, counts, sums); anything else is empty.

Tests write what each scrape would have stored, and read figures back through loadgate's own
clients, so the arithmetic under test is the real one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from loadgate.measure.queries import PrometheusAPI

LOOKBACK = 300.0
_MATCHER = re.compile(r'(\w+)(=~|!~|!=|=)"((?:[^"\\]|\\.)*)"')
_SELECTOR = r"([a-zA-Z_:][a-zA-Z0-9_:]*)?(\{[^}]*\})?"


@dataclass
class FakeSeries:
    labels: dict[str, str]
    samples: list[tuple[float, float]] = field(default_factory=list[tuple[float, float]])


@dataclass
class FakeProm:
    series: list[FakeSeries] = field(default_factory=list[FakeSeries])
    now: float = 0.0
    up: bool = True
    queries: list[str] = field(default_factory=list[str])
    on_query: Callable[[FakeProm, str], None] | None = None

    def add(self, name: str, labels: dict[str, str], ts: float, value: float) -> None:
        full = {"__name__": name, **labels}
        for s in self.series:
            if s.labels == full:
                s.samples.append((ts, value))
                return
        self.series.append(FakeSeries(full, [(ts, value)]))

    # ---- selection -------------------------------------------------------------------------

    def select(self, text: str) -> list[FakeSeries]:
        m = re.fullmatch(_SELECTOR, text.strip())
        if m is None:
            return []
        name, braces = m.group(1), m.group(2) or ""
        matchers = _MATCHER.findall(braces)
        out: list[FakeSeries] = []
        for s in self.series:
            if name and s.labels["__name__"] != name:
                continue
            ok = True
            for key, op, value in matchers:
                have = s.labels.get(key, "")
                value = value.replace('\\"', '"').replace("\\\\", "\\")
                ok = ok and _matches(op, value, have)
            if ok:
                out.append(s)
        return out

    def last(
        self, s: FakeSeries, at: float, window: float = LOOKBACK
    ) -> tuple[float, float] | None:
        """The series' newest sample an instant query sees: none when a later scrape of its
        target went without it (Prometheus then writes a staleness marker)."""
        inside = [(t, v) for t, v in s.samples if at - window < t <= at]
        if not inside:
            return None
        last = max(inside)
        target = (s.labels.get("job"), s.labels.get("instance"))
        for other in self.series:
            if (other.labels.get("job"), other.labels.get("instance")) != target:
                continue
            scraped_later = any(last[0] < t <= at for t, _ in other.samples)
            if scraped_later and not any(t > last[0] for t, _ in s.samples if t <= at):
                return None
        return last

    # ---- the API -----------------------------------------------------------------------------

    def answer(self, query: str, at: float) -> dict[str, Any]:
        if m := re.fullmatch(_SELECTOR + r"\[(\d+)ms\]", query):
            lo = at - int(m.group(3)) / 1000
            result = [
                {
                    "metric": s.labels,
                    "values": [[t, str(v)] for t, v in sorted(s.samples) if lo < t <= at],
                }
                for s in self.select((m.group(1) or "") + (m.group(2) or ""))
            ]
            result = [r for r in result if r["values"]]
            return {"resultType": "matrix", "result": result}
        if m := re.fullmatch(r"min\(timestamp\((.+)\)\)", query):
            stamps = [last[0] for s in self.select(m.group(1)) if (last := self.last(s, at))]
            return _vector(min(stamps) if stamps else None)
        if m := re.fullmatch(r"count\(last_over_time\((.+)\[(\d+)s\]\)\)", query):
            window = float(m.group(2))
            n = sum(1 for s in self.select(m.group(1)) if self.last(s, at, window))
            return _vector(float(n) if n else None)
        if m := re.fullmatch(r"sum\(count_over_time\((.+)\[(\d+)s\]\)\)", query):
            lo = at - float(m.group(2))
            n = sum(1 for s in self.select(m.group(1)) for t, _ in s.samples if lo < t <= at)
            return _vector(float(n) if n else None)
        if m := re.fullmatch(r"sum\((" + _SELECTOR + r")\)", query):
            values = [last[1] for s in self.select(m.group(1)) if (last := self.last(s, at))]
            return _vector(sum(values) if values else None)
        return _vector(None)

    def answer_range(self, query: str, start: float, end: float, step: float) -> dict[str, Any]:
        """A range query: the instant answer at every step, joined per series (by labels)."""
        by_labels: dict[str, dict[str, Any]] = {}
        t = start
        while t <= end + 1e-9:
            for item in self.answer(query, t).get("result") or []:
                key = repr(sorted(item["metric"].items()))
                entry = by_labels.setdefault(key, {"metric": item["metric"], "values": []})
                entry["values"].append([t, item["value"][1]])
            t += step
        return {"resultType": "matrix", "result": list(by_labels.values())}

    def transport(self) -> httpx.MockTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            if not self.up:
                raise httpx.ConnectError("connection refused", request=request)
            query = request.url.params["query"]
            self.queries.append(query)
            if self.on_query:
                self.on_query(self, query)
            if request.url.path.endswith("/query_range"):
                params = request.url.params
                body = {"status": "success", "data": self.answer_range(
                    query, float(params["start"]), float(params["end"]), float(params["step"])
                )}  # fmt: skip
                return httpx.Response(200, json=body)
            at = float(request.url.params.get("time", self.now))
            body = {"status": "success", "data": self.answer(query, at)}
            return httpx.Response(200, json=body)

        return httpx.MockTransport(handle)

    def api(self) -> PrometheusAPI:
        return PrometheusAPI("http://prometheus", httpx.Client(transport=self.transport()))


def _matches(op: str, value: str, have: str) -> bool:
    if op in ("=~", "!~"):
        return (re.fullmatch(value, have) is not None) == (op == "=~")
    return (have == value) == (op == "=")


def _vector(value: float | None) -> dict[str, Any]:
    if value is None:
        return {"resultType": "vector", "result": []}
    return {"resultType": "vector", "result": [{"metric": {}, "value": [0, str(value)]}]}
