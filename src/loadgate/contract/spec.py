"""RunSpec: the one definition and validation of a load run (CLI, charm actions, tests)."""

from __future__ import annotations

import math
import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .combinations import combination_problems
from .params import (
    ACCEPTED_SHARE,
    ARRIVAL_EXECUTORS,
    BY_NAME,
    CHOICE,
    DURATION,
    EXECUTORS,
    INTEGER,
    LABELS,
    MAX_BODY,
    MAX_DURATION_S,
    MAX_LOGS_PER_REQUEST,
    MAX_RATE,
    MAX_REQUESTS_PER_ITERATION,
    MAX_VUS,
    NUMBER,
    PARAMS,
    PREALLOCATED_VUS_MAX,
    RUN_ID,
    RUN_ID_PATTERN,
    RUN_ID_RULE,
    SCENARIOS,
    URL,
    Param,
    default,
)
from .scenarios import BY_NAME as SCENARIO_BY_NAME
from .scenarios import OTLP_LOGS, Scenario, applies, takers
from .urls import check_target

__all__ = [  # the run's names, also those declared in params.py
    "ARRIVAL_EXECUTORS", "EXECUTORS", "MAX_BODY", "MAX_DURATION_S", "MAX_LOGS_PER_REQUEST",
    "MAX_RATE", "MAX_REQUESTS_PER_ITERATION", "MAX_VUS", "PREALLOCATED_VUS_MAX",
    "RESERVED_LABELS", "RUN_ID_PATTERN", "RUN_ID_RULE", "SCENARIOS", "RunSpec", "SpecError",
    "is_run_id", "new_run_id", "parse_duration", "parse_labels",
]  # fmt: skip

# Labels the scenario sets itself; users may not override them.
RESERVED_LABELS: tuple[str, ...] = ("run_id", "scenario", "instance", "executor")

# Matched with fullmatch and ASCII digits only: what passes is exactly what k6 and Loki get.
_DURATION_RE = re.compile(r"(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+)ms)?", re.ASCII)
_LABEL_KEY_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*", re.ASCII)
_LABEL_VALUE_RE = re.compile(r"[A-Za-z0-9_.:/@+-]{1,128}", re.ASCII)
_RUN_ID_RE = re.compile(RUN_ID_PATTERN[1:-1], re.ASCII)  # used with fullmatch


class SpecError(ValueError):
    """One or more parameters are invalid; each message names the parameter and what is allowed."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{name}: {msg}" for name, msg in problems))

    @property
    def fields(self) -> list[str]:
        return [name for name, _ in self.problems]


def parse_duration(value: str) -> float:
    """Seconds in a k6 duration such as `60s`, `10m`, `1h30m`, `500ms`. Raises ValueError."""
    m = _DURATION_RE.fullmatch(value)
    if not value or m is None or not any(m.groups()):
        raise ValueError(f"must be a k6 duration like 30s, 10m or 1h30m, got {value!r}")
    h, mins, secs, ms = m.groups()
    return int(h or 0) * 3600 + int(mins or 0) * 60 + float(secs or 0) + int(ms or 0) / 1000


def parse_labels(value: str | Mapping[str, str]) -> dict[str, str]:
    """`k=v,k2=v2` (or a mapping) into a dict, checking keys and values. Raises ValueError."""
    if isinstance(value, Mapping):
        pairs = list(value.items())
    else:
        pairs = []
        for item in (p.strip() for p in value.split(",")):
            if not item:
                continue
            if "=" not in item:
                raise ValueError(f"expected k=v pairs separated by commas, got {item!r}")
            k, v = item.split("=", 1)
            pairs.append((k.strip(), v.strip()))
    labels: dict[str, str] = {}
    for k, v in pairs:
        if not _LABEL_KEY_RE.fullmatch(k):
            raise ValueError(f"label name {k!r} must match [a-zA-Z_][a-zA-Z0-9_]*")
        if k in RESERVED_LABELS:
            raise ValueError(f"label name {k!r} is reserved ({', '.join(RESERVED_LABELS)})")
        if not _LABEL_VALUE_RE.fullmatch(v):
            raise ValueError(
                f"label {k!r} value {v!r} must be 1-128 characters of letters, digits and _.:/@+-"
            )
        labels[k] = v
    return labels


def is_run_id(value: str) -> bool:
    """Whether `value` is a valid run id (safe as a folder name and a label value)."""
    return _RUN_ID_RE.fullmatch(value) is not None


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now if now is not None else time.time()))
    return f"{stamp}-{secrets.token_hex(3)}"


@dataclass(frozen=True)
class RunSpec:
    """A validated load run. Build it with `RunSpec.from_params`, never directly from user input."""

    scenario: str = default("scenario", str)
    executor: str = default("executor", str)
    vus: int = default("vus", int)
    rate: int = default("rate", int)  # the scenario's units per minute (arrival-rate executors)
    duration: str = default("duration", str)
    logs_per_request: int = default("logs-per-request", int)
    requests_per_iteration: int = default("requests-per-iteration", int)  # >1: http.batch
    body_min: int = default("body-min", int)
    body_max: int = default("body-max", int)
    p99_ms: float = default("p99-ms", float)
    max_error_rate: float = default("max-error-rate", float)
    min_logs_per_minute: int | None = None  # None: ACCEPTED_SHARE of `rate` (constant-arrival-rate)
    labels: dict[str, str] = field(default_factory=dict[str, str])
    target: str | None = None
    run_id: str = ""
    streams: int = default("streams", int)
    # otlp-metrics
    series_per_request: int = default("series-per-request", int)
    points_per_series: int = default("points-per-series", int)
    histogram_buckets: int = default("histogram-buckets", int)
    # loki-push
    streams_per_request: int = default("streams-per-request", int)
    lines_per_stream: int = default("lines-per-stream", int)
    loki_streams: int = default("loki-streams", int)
    # otlp-traces
    traces_per_request: int = default("traces-per-request", int)
    spans_per_trace: int = default("spans-per-trace", int)
    span_attributes: int = default("span-attributes", int)
    attribute_size: int = default("attribute-size", int)
    # logql-query
    push_rate: int = default("push-rate", int)  # lines per minute (rate: queries per minute)
    query_window: int = default("query-window", int)  # seconds

    # ---- derived figures -------------------------------------------------------------------
    # "records" in these names is the scenario's unit (log records, data points, lines, spans,
    # queries).
    @property
    def kind(self) -> Scenario:
        """The scenario's entry in the registry (contract/scenarios.py)."""
        return SCENARIO_BY_NAME[self.scenario]

    @property
    def duration_s(self) -> float:
        return parse_duration(self.duration)

    @property
    def units_per_request(self) -> int:
        """Units one request carries: the product of the scenario's per-request parameters."""
        return math.prod(int(getattr(self, n.replace("-", "_"))) for n in self.kind.per_request)

    @property
    def lines_per_push(self) -> int:
        """Lines of one push request (loki-push; logql-query's pushes beside its queries)."""
        return self.streams_per_request * self.lines_per_stream

    @property
    def records_per_iteration(self) -> int:
        return self.units_per_request * self.requests_per_iteration

    @property
    def iterations_per_minute(self) -> int:
        """Arrival rate k6 is given: the records rate divided by the records per iteration."""
        return max(1, round(self.rate / self.records_per_iteration))

    @property
    def offered_logs_per_minute(self) -> int | None:
        """Records per minute an arrival-rate executor offers (after rounding to iterations)."""
        if self.executor not in ARRIVAL_EXECUTORS:
            return None
        return self.iterations_per_minute * self.records_per_iteration

    @property
    def max_vus(self) -> int:
        """VU ceiling of arrival-rate executors: room for one second of iterations, at least 10x."""
        per_second = math.ceil(self.iterations_per_minute / 60)
        return min(MAX_VUS, max(self.vus * 10, per_second, self.vus))

    @property
    def preallocated_vus(self) -> int:
        """VUs an arrival-rate executor starts with: enough for its rate at the p99 gate's
        latency, twice over (Little's law), at least `vus`, at most PREALLOCATED_VUS_MAX unless
        `vus` asks for more, never above `max_vus`. k6 drops an iteration that falls due while
        every VU is busy (it starts another VU for later ones): with 10 VUs at 200 iterations
        a second, a 50 ms hiccup dropped some. `vus` itself under constant-vus, and for a
        scenario whose VUs check their answers against what each pushed (logql-query: each VU
        asks an instant and a range query in turn, over its own probes; spread over more VUs
        each would ask one)."""
        if self.executor not in ARRIVAL_EXECUTORS or self.kind.wrong_gate:
            return self.vus
        per_second = self.iterations_per_minute / 60
        needed = math.ceil(2 * per_second * self.p99_ms / 1000)
        return min(self.max_vus, max(self.vus, min(PREALLOCATED_VUS_MAX, needed)))

    @property
    def effective_min_logs_per_minute(self) -> int:
        if self.min_logs_per_minute is not None:
            return self.min_logs_per_minute
        if self.executor == "constant-arrival-rate":
            return math.floor(
                ACCEPTED_SHARE * self.iterations_per_minute * self.records_per_iteration
            )
        return 0

    def to_params(self) -> dict[str, Any]:
        """Parameters (kebab case) that `from_params` turns back into this very spec: those
        its scenario takes."""
        kind = self.kind
        params: dict[str, Any] = {
            p.name: getattr(self, p.field) for p in PARAMS if applies(p.name, kind)
        }
        params["labels"] = ",".join(f"{k}={v}" for k, v in sorted(self.labels.items()))
        if self.executor not in ARRIVAL_EXECUTORS:
            del params["rate"]
        if self.min_logs_per_minute is None:
            del params["min-logs-per-minute"]
        if not self.target:
            del params["target"]
        return params

    def to_dict(self) -> dict[str, Any]:
        """The spec as result.json has it: the fields its scenario takes, derived figures."""
        kind = self.kind
        d = {k: v for k, v in asdict(self).items() if applies(k.replace("_", "-"), kind)}
        d["duration_s"] = self.duration_s
        d["iterations_per_minute"] = self.iterations_per_minute
        d["effective_min_logs_per_minute"] = self.effective_min_logs_per_minute
        return d

    # ---- construction and validation -------------------------------------------------------
    @classmethod
    def from_params(
        cls,
        params: Mapping[str, Any],
        *,
        loopback_only: bool = False,
        require_target: bool = False,
    ) -> RunSpec:
        """Validate parameters named as the CLI flags / action parameters (kebab or snake case),
        each as params.PARAMS declares it.

        Raises SpecError naming every bad parameter. Unknown parameters are refused too.
        """
        norm = {str(k).replace("_", "-"): v for k, v in params.items() if v is not None}
        allowed = ", ".join(sorted(BY_NAME))
        problems = [
            (name, f"unknown parameter; allowed: {allowed}")
            for name in sorted(set(norm) - set(BY_NAME))
        ]
        kind = SCENARIO_BY_NAME.get(str(norm.get("scenario", OTLP_LOGS.name)))
        problems += _scenario_problems(norm, kind)
        options = _Options(loopback_only, require_target, kind or OTLP_LOGS)
        values: dict[str, Any] = {}
        for param in PARAMS:
            value, problem = _CHECKS[param.kind](
                param, norm.get(param.name, _default(param, options.scenario)), options
            )
            if problem is None:
                values[param.field] = value
            else:
                problems.append((param.name, problem))
        problems += combination_problems(values, "rate" in norm, options.scenario)
        if problems:
            raise SpecError(problems)
        return cls(**values)


def _default(param: Param, kind: Scenario) -> Any:
    """A parameter's default for a run of `kind`: the table's, or the scenario's own rate."""
    if param.name == "rate" and kind.default_rate is not None:
        return kind.default_rate
    return param.default


@dataclass(frozen=True)
class _Options:
    loopback_only: bool
    require_target: bool
    scenario: Scenario  # the run's (otlp-logs when the scenario given is no scenario)


def _scenario_problems(norm: Mapping[str, Any], kind: Scenario | None) -> list[tuple[str, str]]:
    """Parameters given that the scenario does not take (another scenario's own)."""
    if kind is None:
        return []  # the scenario itself is refused
    return [
        (name, f"applies to {_listed(takers(name))} only, not {kind.name}")
        for name in sorted(norm)
        if name in BY_NAME and not applies(name, kind)
    ]


def _listed(names: tuple[str, ...]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return " and ".join(names) if len(names) < 3 else f"{', '.join(names[:-1])} and {names[-1]}"


# How a parameter of each kind is checked: (param, value given or its default, options) ->
# (the value for RunSpec, the problem if any: what is allowed and what was given).
_Check = Callable[[Param, Any, _Options], tuple[Any, str | None]]


def _bounds(param: Param) -> tuple[int | float, int | float]:
    assert param.low is not None, param.name
    assert param.high is not None, param.name
    return param.low, param.high


def _choice(param: Param, given: Any, options: _Options) -> tuple[Any, str | None]:
    if given in param.choices:
        return given, None
    return given, f"must be one of {', '.join(param.choices)}; got {given!r}"


def _integer(param: Param, given: Any, options: _Options) -> tuple[Any, str | None]:
    if given is None:  # no default: the spec derives it (min-logs-per-minute)
        return None, None
    low, high = _bounds(param)
    try:
        if isinstance(given, bool) or (isinstance(given, float) and not given.is_integer()):
            raise ValueError
        value = int(given)
    except (TypeError, ValueError):
        return None, f"must be an integer between {low} and {high}; got {given!r}"
    if not low <= value <= high:
        return None, f"must be an integer between {low} and {high}; got {value}"
    return value, None


def _number(param: Param, given: Any, options: _Options) -> tuple[Any, str | None]:
    low, high = _bounds(param)
    try:
        if isinstance(given, bool):
            raise ValueError
        value = float(given)
    except (TypeError, ValueError):
        value = math.nan
    too_low = value <= low if param.low_open else value < low
    if math.isnan(value) or too_low or value > high:
        bound = f"greater than {low}" if param.low_open else f"at least {low}"
        return None, f"must be a number {bound} and at most {high}; got {given!r}"
    return value, None


def _duration(param: Param, given: Any, options: _Options) -> tuple[Any, str | None]:
    low, high = _bounds(param)
    text = str(given)
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        return text, str(exc)
    if not low < seconds <= high:
        return text, f"must be more than {low:g}s and at most {high / 3600:g}h; got {text!r}"
    return text, None


def _labels(param: Param, given: Any, options: _Options) -> tuple[Any, str | None]:
    try:
        return parse_labels(given), None
    except ValueError as exc:
        return None, str(exc)


def _url(param: Param, given: Any, options: _Options) -> tuple[Any, str | None]:
    if str(given) == "":
        required = f"is required: an http(s) URL of {options.scenario.target}"
        return None, required if options.require_target else None
    problem = check_target(str(given), options.loopback_only, options.scenario)
    return str(given).rstrip("/"), problem


def _run_id(param: Param, given: Any, options: _Options) -> tuple[Any, str | None]:
    run_id = str(given or new_run_id())
    return run_id, None if is_run_id(run_id) else f"{RUN_ID_RULE}; got {run_id!r}"


_CHECKS: dict[str, _Check] = {
    CHOICE: _choice,
    INTEGER: _integer,
    NUMBER: _number,
    DURATION: _duration,
    LABELS: _labels,
    URL: _url,
    RUN_ID: _run_id,
}
