"""Read the JSON summary the k6 scenario writes (handleSummary) and combine several of them."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .typed import read

_SUMMARY_FORMAT = "loadgate-k6-summary/1"
# k6's request-duration trend beside p99 (the summary's avg, p(90), p(95), max).
_LATENCY_FIGURES = ("mean_ms", "p90_ms", "p95_ms", "max_ms")
# ClientFigures' fields only some scenarios have (absent from the others' summaries and records).
_OPTIONAL = ("lines_sent", "lines_accepted", "wrong_answers")


class SummaryError(ValueError):
    """The summary is missing, truncated or of another format."""


@dataclass(frozen=True)
class Histogram:
    """Request-duration bucket counts (see k6/lib/histogram.js)."""

    base_ms: float = 0.05
    per_octave: int = 8
    counts: dict[int, int] = field(default_factory=dict[int, int])

    def upper_ms(self, bucket: int) -> float:
        return self.base_ms * 2 ** ((bucket + 1) / self.per_octave)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def quantile_ms(self, q: float) -> float | None:
        """Upper bound of the bucket holding the q-quantile; None when empty."""
        total = self.total
        if total == 0:
            return None
        rank = math.ceil(q * total)
        seen = 0
        for bucket in sorted(self.counts):
            seen += self.counts[bucket]
            if seen >= rank:
                return self.upper_ms(bucket)
        return self.upper_ms(max(self.counts))

    def merged(self, other: Histogram) -> Histogram:
        if (self.base_ms, self.per_octave) != (other.base_ms, other.per_octave):
            raise SummaryError("cannot merge histograms with different bucket layouts")
        counts = dict(self.counts)
        for b, n in other.counts.items():
            counts[b] = counts.get(b, 0) + n
        return Histogram(self.base_ms, self.per_octave, counts)


@dataclass(frozen=True)
class ClientFigures:
    """What the load generator measured: `client` of result.json (without the histogram)."""

    requests: int
    failed: int
    error_rate: float | None  # failed / requests; None: not measured
    p99_ms: float | None
    records_sent: int
    records_accepted: int
    records_per_minute: float
    duration_s: float
    dropped_iterations: int = 0
    p99_source: str = "k6 summary"
    instances: int = 1
    thresholds: dict[str, bool] = field(default_factory=dict[str, bool])
    histogram: Histogram = field(default_factory=Histogram)
    # The rest of k6's request-duration trend (None: not in the summary, e.g. an older one).
    mean_ms: float | None = None
    p90_ms: float | None = None
    p95_ms: float | None = None
    max_ms: float | None = None
    # A scenario that pushes what it queries (logql-query): the lines it pushed and had
    # acknowledged, and its answers that did not match what was pushed by then. None elsewhere.
    lines_sent: int | None = None
    lines_accepted: int | None = None
    wrong_answers: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("histogram")
        for key in _LATENCY_FIGURES:  # written when measured: older records keep their shape
            if d[key] is None:
                d.pop(key)
        for name in _OPTIONAL:  # written only by the scenarios that count them
            if d[name] is None:
                del d[name]
        return d

    def ledger_counts(self) -> tuple[int, int]:
        """(sent, acknowledged) in the unit of the run's ledger: the pushed lines when the
        scenario counts them (logql-query), else its own units."""
        if self.lines_sent is not None and self.lines_accepted is not None:
            return self.lines_sent, self.lines_accepted
        return self.records_sent, self.records_accepted

    @classmethod
    def from_dict(cls, data: object, where: str = "client") -> ClientFigures:
        """The figures `to_dict` wrote (or with a `histogram` object, as the charm's units send
        them); RecordError names a bad field."""
        return read(cls, data, where)


def _int(d: Mapping[str, Any], key: str) -> int:
    value = d.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise SummaryError(f"summary field {key!r} is missing or not a number")
    return int(value)


def parse_summary(data: Mapping[str, Any]) -> ClientFigures:
    """ClientFigures from the scenario's summary object. Raises SummaryError on a bad summary."""
    if data.get("format") != _SUMMARY_FORMAT:
        raise SummaryError(f"not a loadgate k6 summary (format {data.get('format')!r})")
    hist_raw = data.get("latency_histogram") or {}
    histogram = Histogram(
        base_ms=float(hist_raw.get("base_ms", 0.05)),
        per_octave=int(hist_raw.get("per_octave", 8)),
        counts={int(b): int(n) for b, n in (hist_raw.get("counts") or {}).items()},
    )
    thresholds = {
        str(name): bool(t.get("ok")) for name, t in (data.get("thresholds") or {}).items()
    }
    p99 = data.get("p99_ms")
    return ClientFigures(
        requests=_int(data, "requests"),
        failed=_int(data, "failed"),
        error_rate=float(data.get("error_rate") or 0.0),
        p99_ms=float(p99) if isinstance(p99, int | float) else None,
        records_sent=_int(data, "records_sent"),
        records_accepted=_int(data, "records_accepted"),
        records_per_minute=float(data.get("records_per_minute") or 0.0),
        duration_s=float(data.get("duration_s") or 0.0),
        dropped_iterations=int(data.get("dropped_iterations") or 0),
        thresholds=thresholds,
        histogram=histogram,
        mean_ms=_ms(data, "avg_ms"),
        p90_ms=_ms(data, "p90_ms"),
        p95_ms=_ms(data, "p95_ms"),
        max_ms=_ms(data, "max_ms"),
        lines_sent=_optional_int(data, "lines_sent"),
        lines_accepted=_optional_int(data, "lines_accepted"),
        wrong_answers=_optional_int(data, "wrong_answers"),
    )


def _ms(data: Mapping[str, Any], key: str) -> float | None:
    value = data.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _optional_int(d: Mapping[str, Any], key: str) -> int | None:
    """A count only some scenarios' summaries hold: None when absent."""
    if d.get(key) is None:
        return None
    return _int(d, key)


def _sum_optional(items: list[ClientFigures], name: str) -> int | None:
    values = [getattr(i, name) for i in items]
    if all(v is None for v in values):
        return None
    return sum(int(v or 0) for v in values)


def read_summary(path: Path) -> ClientFigures:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise SummaryError(f"no k6 summary at {path}") from None
    except json.JSONDecodeError as exc:
        raise SummaryError(f"k6 summary {path} is not valid JSON: {exc}") from None
    return parse_summary(data)


def combine(parts: Iterable[ClientFigures], p99_ms: float | None = None) -> ClientFigures:
    """Figures of several k6 instances that ran one load together.

    Counts add; the run lasts as long as its longest part; p99 comes from the merged duration
    histograms (or from `p99_ms` when given, e.g. from Prometheus), never from averaging p99s.
    """
    items = list(parts)
    if not items:
        raise SummaryError("nothing to combine")
    if len(items) == 1 and p99_ms is None:
        return items[0]
    hist = items[0].histogram
    for item in items[1:]:
        hist = hist.merged(item.histogram)
    requests = sum(i.requests for i in items)
    failed = sum(i.failed for i in items)
    accepted = sum(i.records_accepted for i in items)
    duration = max(i.duration_s for i in items)
    thresholds: dict[str, bool] = {}
    for item in items:
        for name, ok in item.thresholds.items():
            thresholds[name] = thresholds.get(name, True) and ok
    return ClientFigures(
        requests=requests,
        failed=failed,
        error_rate=failed / requests if requests else 0.0,
        p99_ms=p99_ms if p99_ms is not None else hist.quantile_ms(0.99),
        records_sent=sum(i.records_sent for i in items),
        records_accepted=accepted,
        records_per_minute=accepted * 60 / duration if duration > 0 else 0.0,
        duration_s=duration,
        dropped_iterations=sum(i.dropped_iterations for i in items),
        p99_source="Prometheus" if p99_ms is not None else f"merged histogram of {len(items)} k6",
        instances=len(items),
        thresholds=thresholds,
        histogram=hist,
        mean_ms=_mean_ms(items),
        p90_ms=hist.quantile_ms(0.90),
        p95_ms=hist.quantile_ms(0.95),
        max_ms=max((i.max_ms for i in items if i.max_ms is not None), default=None),
        lines_sent=_sum_optional(items, "lines_sent"),
        lines_accepted=_sum_optional(items, "lines_accepted"),
        wrong_answers=_sum_optional(items, "wrong_answers"),
    )


def _mean_ms(items: list[ClientFigures]) -> float | None:
    """The mean of several instances' means, weighted by their requests (None: one unknown)."""
    if any(i.mean_ms is None for i in items):
        return None
    requests = sum(i.requests for i in items)
    if requests == 0:
        return None
    return sum((i.mean_ms or 0.0) * i.requests for i in items) / requests
