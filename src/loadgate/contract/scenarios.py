"""The scenarios, declared once: what the k6 charm and loadgate share about each k6 scenario.

A scenario is a file of `k6/` that sends one kind of unit (log records, data points, lines,
spans) somewhere, or asks something of it (queries). What both packagings need to know of it
is here: its script, its unit and the names it gives its k6 counters and gates, the run
parameters of its own (beside the common ones of params.py, which every scenario takes),
which of those multiply to the units in one request, and what its `target` is. What
loadgate measures of a scenario in the pipeline (the collector's counters, the backend that
stores its units) is loadgate's alone: loadgate.measure.scenarios.

Adding a scenario: docs/architecture.md ("A new scenario").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Pushed:
    """What a scenario pushes beside its own unit, for its queries to read (logql-query:
    lines): counted by k6 counters of their own, and what the run's ledger counts."""

    unit: str  # "lines"
    short: str  # "lines"
    lost_gate: str  # the delivery gate: "lost_lines"
    sent_metric: str  # "lines_sent"
    accepted_metric: str  # "lines_accepted"


@dataclass(frozen=True)
class Scenario:
    """One k6 scenario."""

    name: str  # the `scenario` parameter's value
    script: str  # its file in k6/
    unit: str  # what it counts, plural: "log records"
    short: str  # the unit in one word, for compact text: "records"
    per_minute_gate: str  # the gate on accepted units per minute: "logs_per_minute"
    lost_gate: str  # the gate on units acknowledged but not stored: "lost_records"
    sent_metric: str  # k6 counter of units sent: "log_records_sent"
    accepted_metric: str  # k6 counter of units acknowledged (2xx): "log_records_accepted"
    params: tuple[str, ...]  # its own run parameters (params.py names)
    per_request: tuple[str, ...]  # those whose product is the units one request carries
    target: str  # what its `target` URL is, for messages: "an OTLP/HTTP receiver"
    otlp: str | None  # the OTLP telemetry it sends ("logs"); None: its target is no OTLP one
    path: str  # what the script adds to the target: "/v1/logs"
    backend: str  # where its units end up: "Loki"
    store: str  # how they are counted there, for gate sources: "LogQL count in Loki"
    # k6's metric of the durations the p99 gate is on: accepted requests' only, a refused one is
    # an error (k6/lib/config.js OK_DURATION); logql-query: its answered queries'.
    duration_metric: str = "http_req_duration{expected_response:true}"
    pushed: Pushed | None = None  # what it pushes for its queries (its ledger's unit)
    # The gate on answers that did not match what was pushed (logql-query), and its k6 counter.
    wrong_gate: str = ""
    wrong_metric: str = ""
    # Its `rate` when none is given, where the table's (60,000 a minute) does not fit its unit.
    default_rate: int | None = None

    @property
    def unit_per_minute(self) -> str:
        """`log records per minute`, as figures and gates say it."""
        return f"{self.unit} per minute"

    def as_ledger(self) -> Scenario:
        """The scenario as its ledger counts: itself, or for one that pushes what it queries
        the pushed unit, its counters and delivery gate (logql-query: lines)."""
        if self.pushed is None:
            return self
        p = self.pushed
        return replace(self, unit=p.unit, short=p.short, lost_gate=p.lost_gate,
                       sent_metric=p.sent_metric, accepted_metric=p.accepted_metric)  # fmt: skip


OTLP_LOGS = Scenario(
    name="otlp-logs",
    script="otlp-logs.js",
    unit="log records",
    short="records",
    per_minute_gate="logs_per_minute",
    lost_gate="lost_records",
    sent_metric="log_records_sent",
    accepted_metric="log_records_accepted",
    params=("logs-per-request", "body-min", "body-max", "streams"),
    per_request=("logs-per-request",),
    target="an OTLP/HTTP receiver",
    otlp="logs",
    path="/v1/logs",
    backend="Loki",
    store="LogQL count in Loki",
)
OTLP_METRICS = Scenario(
    name="otlp-metrics",
    script="otlp-metrics.js",
    unit="data points",
    short="points",
    per_minute_gate="points_per_minute",
    lost_gate="lost_points",
    sent_metric="data_points_sent",
    accepted_metric="data_points_accepted",
    params=("series-per-request", "points-per-series", "histogram-buckets"),
    per_request=("series-per-request", "points-per-series"),
    target="an OTLP/HTTP receiver",
    otlp="metrics",
    path="/v1/metrics",
    backend="Prometheus",
    store="PromQL count in Prometheus",
)
LOKI_PUSH = Scenario(
    name="loki-push",
    script="loki-push.js",
    unit="lines",
    short="lines",
    per_minute_gate="lines_per_minute",
    lost_gate="lost_lines",
    sent_metric="lines_sent",
    accepted_metric="lines_accepted",
    params=("streams-per-request", "lines-per-stream", "loki-streams", "body-min", "body-max"),
    per_request=("streams-per-request", "lines-per-stream"),
    target="Loki (its push API)",
    otlp=None,
    path="/loki/api/v1/push",
    backend="Loki",
    store="LogQL count in Loki",
)

OTLP_TRACES = Scenario(
    name="otlp-traces",
    script="otlp-traces.js",
    unit="spans",
    short="spans",
    per_minute_gate="spans_per_minute",
    lost_gate="lost_spans",
    sent_metric="spans_sent",
    accepted_metric="spans_accepted",
    params=("traces-per-request", "spans-per-trace", "span-attributes", "attribute-size"),
    per_request=("traces-per-request", "spans-per-trace"),
    target="an OTLP/HTTP receiver",
    otlp="traces",
    path="/v1/traces",
    backend="the traces backend",
    store="spans the traces backend received",
)
# Queries of the lines it pushes while it pushes: its unit is queries (the rate, the per-minute
# gate); its ledger counts the lines (sent, accepted, stored); each query's count is checked
# against what its VU pushed by then (the wrong_answers gate).
LOGQL_QUERY = Scenario(
    name="logql-query",
    script="logql-query.js",
    unit="queries",
    short="queries",
    per_minute_gate="queries_per_minute",
    lost_gate="lost_lines",
    sent_metric="queries_sent",
    accepted_metric="queries_accepted",
    params=(
        "push-rate",
        "streams-per-request",
        "lines-per-stream",
        "loki-streams",
        "body-min",
        "body-max",
        "query-window",
    ),
    per_request=(),  # one query a request
    target="Loki (its push and query APIs)",
    otlp=None,
    path="/loki/api/v1/query",
    backend="Loki",
    store="LogQL count in Loki",
    duration_metric="query_duration",
    pushed=Pushed("lines", "lines", "lost_lines", "lines_sent", "lines_accepted"),
    wrong_gate="wrong_answers",
    wrong_metric="wrong_answers",
    default_rate=600,
)

# In the order the `scenario` parameter lists them; the first is the default.
ALL: tuple[Scenario, ...] = (OTLP_LOGS, OTLP_METRICS, LOKI_PUSH, OTLP_TRACES, LOGQL_QUERY)
BY_NAME: Mapping[str, Scenario] = {s.name: s for s in ALL}
NAMES: tuple[str, ...] = tuple(s.name for s in ALL)
# Parameters some scenario has of its own; every other parameter is common to all.
OWN_PARAMS: frozenset[str] = frozenset(p for s in ALL for p in s.params)


def of(name: str) -> Scenario:
    """The scenario of that name (KeyError names the ones there are)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no scenario {name!r}; there are {', '.join(NAMES)}") from None


def applies(param: str, scenario: Scenario) -> bool:
    """Whether a run of `scenario` takes parameter `param` (common, or one of its own)."""
    return param not in OWN_PARAMS or param in scenario.params


def without_filled_defaults(
    params: Mapping[str, object], defaults: Mapping[str, object]
) -> dict[str, object]:
    """Parameters as an action schema passes them, less those that do not apply to their
    scenario and hold their default: Juju fills schema defaults in for every scenario (the
    otlp-logs parameters have them), so those were not asked for. Another value stays, and
    the scenario refuses it."""
    kind = BY_NAME.get(str(params.get("scenario") or ALL[0].name))
    if kind is None:
        return dict(params)
    return {
        k: v
        for k, v in params.items()
        if applies(str(k).replace("_", "-"), kind) or v != defaults.get(str(k).replace("_", "-"))
    }


def takers(param: str) -> tuple[str, ...]:
    """The scenarios that take a parameter of their own."""
    return tuple(s.name for s in ALL if param in s.params)
