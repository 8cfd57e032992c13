"""The parameters of a load run, declared once: the CLI flags (`loadgate run`, `search`,
`compare`, `bench`), the k6 charm's `start-load` action parameters and `RunSpec.from_params`
are all read from `PARAMS`.

Each parameter has its name (kebab case: the flag without `--`, the action parameter), its kind
(how it is checked), its default, bounds or choices, a help line and a unit. `action` says
whether the k6 charm's `start-load` takes it; `schema_default` whether an action schema may fill
the default in before the charm sees the parameters (not `rate`: it is refused with
constant-vus; nor the parameters of the scenarios added after otlp-logs, contract/scenarios.py:
another scenario refuses them. otlp-logs' own keep their schema defaults, which Juju fills in
for every scenario: the charm drops one that does not apply to the run's scenario when it holds
the table's default). tests/unit/test_charm_action_params.py checks charmcraft.yaml against this
table.

`rate` and the per-minute gate count the scenario's unit (log records, data points, lines,
spans, queries);
their names and the word "records" in help and RunSpec's derived figures stay those of the
first scenario, otlp-logs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from .scenarios import NAMES

SCENARIOS: tuple[str, ...] = NAMES
EXECUTORS: tuple[str, ...] = ("constant-vus", "constant-arrival-rate", "ramping-arrival-rate")
ARRIVAL_EXECUTORS: tuple[str, ...] = ("constant-arrival-rate", "ramping-arrival-rate")

MAX_DURATION_S = 24 * 3600
MAX_LOGS_PER_REQUEST = 1000
MAX_REQUESTS_PER_ITERATION = 100
MAX_BODY = 1_048_576
MAX_VUS = 10_000
PREALLOCATED_VUS_MAX = 100  # each VU compiles the scenario: start-up time and memory
MAX_RATE = 1_000_000_000
MAX_P99_MS = 3_600_000
_MAX_STREAMS = 1000
_MAX_SERIES_PER_REQUEST = 1000
_MAX_POINTS_PER_SERIES = 100
_MAX_HISTOGRAM_BUCKETS = 64
_MAX_STREAMS_PER_REQUEST = 1000
_MAX_LINES_PER_STREAM = 1000
_MAX_LOKI_STREAMS = 100_000
_MAX_TRACES_PER_REQUEST = 1000
_MAX_SPANS_PER_TRACE = 100
_MAX_SPAN_ATTRIBUTES = 128
_MAX_ATTRIBUTE_SIZE = 16_384
_MAX_QUERY_WINDOW_S = 24 * 3600

# The default per-minute gate of an arrival-rate run (`RunSpec.effective_min_logs_per_minute`):
# at least this share of the offered rate accepted, records per minute over records per minute.
# A run that got less in fell short of what it offered: the capacity search (where a hold must
# fail, whether a run without a steady window saturated) and attribution (the generator's
# shortfall) read it by the same share.
ACCEPTED_SHARE = 0.95

# Also the `pattern` of the k6 charm's `run-id` action parameters (charmcraft.yaml).
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
RUN_ID_RULE = (
    "must be 1-64 characters of letters, digits, '_', '.', '-', starting with a letter or digit"
)
# A k6 duration as the charm's action schema checks it: one or more of h, m, s (decimals
# allowed), ms in that order; never empty. What it lets through is what `parse_duration` reads.
_DURATION_PATTERN = (
    r"^[0-9]+(h([0-9]+m)?([0-9]+(\.[0-9]+)?s)?([0-9]+ms)?|m([0-9]+(\.[0-9]+)?s)?([0-9]+ms)?"
    r"|(\.[0-9]+)?s([0-9]+ms)?|ms)$"
)

# Kinds: how a value is checked (RunSpec.from_params) and its JSON type (the action schema).
CHOICE = "choice"  # one of `choices`
INTEGER = "integer"  # an integer in [low, high]
NUMBER = "number"  # a number in [low, high], or (low, high] with `low_open`
DURATION = "duration"  # a k6 duration of more than `low` and at most `high` seconds
LABELS = "labels"  # k=v,k2=v2
URL = "url"  # the OTLP/HTTP receiver's base URL
RUN_ID = "run-id"  # RUN_ID_PATTERN
_JSON_TYPES: dict[str, str] = {
    CHOICE: "string",
    INTEGER: "integer",
    NUMBER: "number",
    DURATION: "string",
    LABELS: "string",
    URL: "string",
    RUN_ID: "string",
}

Value = str | int | float


@dataclass(frozen=True)
class Param:
    """One run parameter."""

    name: str
    kind: str
    help: str
    default: Value | None = None  # None: none, or derived (see default_help)
    low: int | float | None = None
    high: int | float | None = None
    low_open: bool = False  # `low` itself is refused
    choices: tuple[str, ...] = ()
    pattern: str | None = None  # the action schema's pattern (strings)
    unit: str = ""  # of the default, as shown in help
    default_help: str = ""  # the default in words, where it is derived
    action: bool = True  # the k6 charm's start-load takes it
    schema_default: bool = True  # an action schema may fill the default in

    @property
    def field(self) -> str:
        """The RunSpec field (snake case)."""
        return self.name.replace("-", "_")

    @property
    def json_type(self) -> str:
        return _JSON_TYPES[self.kind]

    @property
    def shown_default(self) -> str:
        """The default as help shows it: `60000 records/min`, `100 ms`, `none`."""
        if self.default_help:
            return self.default_help
        if self.default is None or self.default == "":
            return "none"
        value = f"{self.default:g}" if isinstance(self.default, float) else str(self.default)
        return f"{value} {self.unit}" if self.unit else value


PARAMS: tuple[Param, ...] = (
    Param("scenario", CHOICE, "the k6 scenario (a file of k6/)", "otlp-logs", choices=SCENARIOS),
    Param("executor", CHOICE, "the k6 executor", "constant-arrival-rate", choices=EXECUTORS),
    Param(
        "vus",
        INTEGER,
        "VUs (constant-vus) or the fewest pre-allocated VUs (arrival-rate executors: more "
        "when the rate needs them at twice the p99 gate, up to 100)",
        10,
        low=1,
        high=MAX_VUS,
    ),
    Param(
        "rate",
        INTEGER,
        "records per minute (the scenario's unit: log records, data points, lines, spans, "
        "queries; logql-query's default: 600), for the arrival-rate executors",
        60_000,
        low=1,
        high=MAX_RATE,
        unit="records/min",
        schema_default=False,  # refused with constant-vus: nothing may fill it in
    ),
    Param(
        "duration",
        DURATION,
        "k6 duration, e.g. 60s, 10m, 1h30m (at most 24h)",
        "60s",
        low=0,
        high=MAX_DURATION_S,
        low_open=True,
        pattern=_DURATION_PATTERN,
    ),
    Param(
        "logs-per-request",
        INTEGER,
        "log records per OTLP request (otlp-logs)",
        5,
        low=1,
        high=MAX_LOGS_PER_REQUEST,
    ),
    Param(
        "requests-per-iteration",
        INTEGER,
        "OTLP requests each k6 iteration sends in parallel with http.batch (more spends less "
        "k6 CPU per request)",
        1,
        low=1,
        high=MAX_REQUESTS_PER_ITERATION,
    ),
    Param(
        "body-min",
        INTEGER,
        "shortest log body or line (otlp-logs, loki-push, logql-query)",
        256,
        low=1,
        high=MAX_BODY,
        unit="characters",
    ),
    Param(
        "body-max",
        INTEGER,
        "longest log body or line (otlp-logs, loki-push, logql-query)",
        2048,
        low=1,
        high=MAX_BODY,
        unit="characters",
    ),
    Param(
        "p99-ms",
        NUMBER,
        "gate: p99 request duration below this (logql-query: query duration)",
        100.0,
        low=0,
        high=MAX_P99_MS,
        low_open=True,
        unit="ms",
    ),
    Param("max-error-rate", NUMBER, "gate: error rate at most this fraction", 0.01, low=0, high=1),
    Param(
        "min-logs-per-minute",
        INTEGER,
        "gate: accepted records (the scenario's unit) per minute at least this",
        low=0,
        high=MAX_RATE,
        default_help=f"{ACCEPTED_SHARE:.0%} of rate for constant-arrival-rate, else no gate",
    ),
    Param("labels", LABELS, "tags of the run as k=v,k2=v2, e.g. revision=69", ""),
    Param(
        "target",
        URL,
        "base URL the load goes to: the OTLP/HTTP receiver (the charm: the related one), or "
        "Loki for loki-push and logql-query",
        "",
    ),
    Param(
        "run-id",
        RUN_ID,
        "run id",
        pattern=RUN_ID_PATTERN,
        default_help="a time stamp with a random suffix",
    ),
    Param(
        "streams",
        INTEGER,
        "log streams the scenario spreads its records over",
        4,
        low=1,
        high=_MAX_STREAMS,
        action=False,  # the k6 charm runs the scenario's default
    ),
    Param(
        "series-per-request",
        INTEGER,
        "metric series in each OTLP request (otlp-metrics): gauges, sums and histograms in turn",
        10,
        low=1,
        high=_MAX_SERIES_PER_REQUEST,
        schema_default=False,
    ),
    Param(
        "points-per-series",
        INTEGER,
        "data points of each series in a request (otlp-metrics)",
        5,
        low=1,
        high=_MAX_POINTS_PER_SERIES,
        schema_default=False,
    ),
    Param(
        "histogram-buckets",
        INTEGER,
        "buckets of each histogram point (otlp-metrics; Prometheus stores buckets + 2 samples "
        "a point)",
        8,
        low=1,
        high=_MAX_HISTOGRAM_BUCKETS,
        schema_default=False,
    ),
    Param(
        "streams-per-request",
        INTEGER,
        "Loki streams in each push request (loki-push, logql-query)",
        10,
        low=1,
        high=_MAX_STREAMS_PER_REQUEST,
        schema_default=False,
    ),
    Param(
        "lines-per-stream",
        INTEGER,
        "lines of each stream in a push request (loki-push, logql-query)",
        10,
        low=1,
        high=_MAX_LINES_PER_STREAM,
        schema_default=False,
    ),
    Param(
        "loki-streams",
        INTEGER,
        "distinct Loki streams the run writes, taken in turn by its requests (loki-push, "
        "logql-query)",
        100,
        low=1,
        high=_MAX_LOKI_STREAMS,
        schema_default=False,
    ),
    Param(
        "traces-per-request",
        INTEGER,
        "traces in each OTLP request (otlp-traces)",
        5,
        low=1,
        high=_MAX_TRACES_PER_REQUEST,
        schema_default=False,
    ),
    Param(
        "spans-per-trace",
        INTEGER,
        "spans of a trace on average (otlp-traces): a request's traces go in pairs of this "
        "less and more a third at most, so a request carries traces x spans exactly",
        9,
        low=1,
        high=_MAX_SPANS_PER_TRACE,
        schema_default=False,
    ),
    Param(
        "span-attributes",
        INTEGER,
        "attributes of each span (otlp-traces)",
        20,
        low=0,
        high=_MAX_SPAN_ATTRIBUTES,
        schema_default=False,
    ),
    Param(
        "attribute-size",
        INTEGER,
        "characters of each span attribute's value (otlp-traces)",
        32,
        low=1,
        high=_MAX_ATTRIBUTE_SIZE,
        unit="characters",
        schema_default=False,
    ),
    Param(
        "push-rate",
        INTEGER,
        "lines per minute the run pushes to Loki while it queries (logql-query; each query "
        "also pushes one probe line)",
        6_000,
        low=1,
        high=MAX_RATE,
        unit="lines/min",
        schema_default=False,
    ),
    Param(
        "query-window",
        INTEGER,
        "seconds of the run's lines each query counts, up to the query's time (logql-query)",
        60,
        low=1,
        high=_MAX_QUERY_WINDOW_S,
        unit="s",
        schema_default=False,
    ),
)

BY_NAME: Mapping[str, Param] = {p.name: p for p in PARAMS}
ACTION_PARAMS: tuple[str, ...] = tuple(p.name for p in PARAMS if p.action)

_T = TypeVar("_T", str, int, float)


def default(name: str, kind: type[_T]) -> _T:
    """The default of a parameter, as the type its RunSpec field has."""
    value = BY_NAME[name].default
    if not isinstance(value, kind):
        raise TypeError(f"{name}: default {value!r} is not {kind.__name__}")
    return value
