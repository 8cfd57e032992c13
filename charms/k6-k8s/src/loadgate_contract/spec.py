"""RunSpec: the one definition and validation of a load run (CLI, charm actions, tests)."""

from __future__ import annotations

import math
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

SCENARIOS: tuple[str, ...] = ("otlp-logs",)
EXECUTORS: tuple[str, ...] = ("constant-vus", "constant-arrival-rate", "ramping-arrival-rate")
ARRIVAL_EXECUTORS: tuple[str, ...] = ("constant-arrival-rate", "ramping-arrival-rate")
# Labels the scenario sets itself; users may not override them.
RESERVED_LABELS: tuple[str, ...] = ("run_id", "scenario", "instance", "executor")

MAX_DURATION_S = 24 * 3600
MAX_LOGS_PER_REQUEST = 1000
MAX_REQUESTS_PER_ITERATION = 100
MAX_BODY = 1_048_576
MAX_VUS = 10_000
MAX_RATE = 1_000_000_000

# Matched with fullmatch and ASCII digits only: what passes is exactly what k6 and Loki get.
_DURATION_RE = re.compile(r"(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+)ms)?", re.ASCII)
_LABEL_KEY_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*", re.ASCII)
_LABEL_VALUE_RE = re.compile(r"[A-Za-z0-9_.:/@+-]{1,128}", re.ASCII)
# Also the `pattern` of the k6 charm's `run-id` action parameters (charmcraft.yaml).
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
RUN_ID_RULE = (
    "must be 1-64 characters of letters, digits, '_', '.', '-', starting with a letter or digit"
)
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

    scenario: str = "otlp-logs"
    executor: str = "constant-arrival-rate"
    vus: int = 10
    rate: int = 60_000  # log records per minute (arrival-rate executors)
    duration: str = "60s"
    logs_per_request: int = 5
    requests_per_iteration: int = 1  # >1: http.batch of that many requests per iteration
    body_min: int = 256
    body_max: int = 2048
    p99_ms: float = 100.0
    max_error_rate: float = 0.01
    min_logs_per_minute: int | None = None  # None: 95% of `rate` for constant-arrival-rate
    labels: dict[str, str] = field(default_factory=dict[str, str])
    target: str | None = None
    run_id: str = ""
    streams: int = 4

    # ---- derived figures -------------------------------------------------------------------
    @property
    def duration_s(self) -> float:
        return parse_duration(self.duration)

    @property
    def records_per_iteration(self) -> int:
        return self.logs_per_request * self.requests_per_iteration

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
    def effective_min_logs_per_minute(self) -> int:
        if self.min_logs_per_minute is not None:
            return self.min_logs_per_minute
        if self.executor == "constant-arrival-rate":
            return math.floor(0.95 * self.iterations_per_minute * self.records_per_iteration)
        return 0

    def to_params(self) -> dict[str, Any]:
        """Parameters (kebab case) that `from_params` turns back into this very spec."""
        params: dict[str, Any] = {
            "scenario": self.scenario,
            "executor": self.executor,
            "vus": self.vus,
            "duration": self.duration,
            "logs-per-request": self.logs_per_request,
            "requests-per-iteration": self.requests_per_iteration,
            "body-min": self.body_min,
            "body-max": self.body_max,
            "p99-ms": self.p99_ms,
            "max-error-rate": self.max_error_rate,
            "labels": ",".join(f"{k}={v}" for k, v in sorted(self.labels.items())),
            "run-id": self.run_id,
            "streams": self.streams,
        }
        if self.executor in ARRIVAL_EXECUTORS:
            params["rate"] = self.rate
        if self.min_logs_per_minute is not None:
            params["min-logs-per-minute"] = self.min_logs_per_minute
        if self.target:
            params["target"] = self.target
        return params

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
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
        """Validate parameters named as the CLI flags / action parameters (kebab or snake case).

        Raises SpecError naming every bad parameter. Unknown parameters are refused too.
        """
        norm = {str(k).replace("_", "-"): v for k, v in params.items() if v is not None}
        problems: list[tuple[str, str]] = []
        known = {
            "scenario", "executor", "vus", "rate", "duration", "logs-per-request", "body-min",
            "body-max", "p99-ms", "max-error-rate", "min-logs-per-minute", "labels", "target",
            "run-id", "streams", "requests-per-iteration",
        }  # fmt: skip
        for k in sorted(set(norm) - known):
            problems.append((k, f"unknown parameter; allowed: {', '.join(sorted(known))}"))

        defaults = cls()
        values: dict[str, Any] = {}

        def choice(name: str, allowed: tuple[str, ...], default: str) -> None:
            v = norm.get(name, default)
            if v not in allowed:
                problems.append((name, f"must be one of {', '.join(allowed)}; got {v!r}"))
            values[name.replace("-", "_")] = v

        def integer(name: str, default: int | None, lo: int, hi: int) -> None:
            v = norm.get(name, default)
            if v is None:
                values[name.replace("-", "_")] = None
                return
            try:
                if isinstance(v, bool) or (isinstance(v, float) and not v.is_integer()):
                    raise ValueError
                iv = int(v)
            except (TypeError, ValueError):
                problems.append((name, f"must be an integer between {lo} and {hi}; got {v!r}"))
                return
            if not lo <= iv <= hi:
                problems.append((name, f"must be an integer between {lo} and {hi}; got {iv}"))
                return
            values[name.replace("-", "_")] = iv

        def number(name: str, default: float, lo: float, hi: float, lo_open: bool) -> None:
            v = norm.get(name, default)
            try:
                if isinstance(v, bool):
                    raise ValueError
                fv = float(v)
            except (TypeError, ValueError):
                fv = math.nan
            bad_low = fv <= lo if lo_open else fv < lo
            if math.isnan(fv) or bad_low or fv > hi:
                bound = f"greater than {lo}" if lo_open else f"at least {lo}"
                problems.append((name, f"must be a number {bound} and at most {hi}; got {v!r}"))
                return
            values[name.replace("-", "_")] = fv

        choice("scenario", SCENARIOS, defaults.scenario)
        choice("executor", EXECUTORS, defaults.executor)
        integer("vus", defaults.vus, 1, MAX_VUS)
        integer("rate", defaults.rate, 1, MAX_RATE)
        integer("logs-per-request", defaults.logs_per_request, 1, MAX_LOGS_PER_REQUEST)
        integer(
            "requests-per-iteration", defaults.requests_per_iteration, 1, MAX_REQUESTS_PER_ITERATION
        )
        integer("body-min", defaults.body_min, 1, MAX_BODY)
        integer("body-max", defaults.body_max, 1, MAX_BODY)
        number("p99-ms", defaults.p99_ms, 0, 3_600_000, lo_open=True)
        number("max-error-rate", defaults.max_error_rate, 0, 1, lo_open=False)
        integer("min-logs-per-minute", None, 0, MAX_RATE)
        integer("streams", defaults.streams, 1, 1000)

        duration = str(norm.get("duration", defaults.duration))
        try:
            seconds = parse_duration(duration)
            if not 0 < seconds <= MAX_DURATION_S:
                problems.append(
                    ("duration", f"must be more than 0s and at most 24h; got {duration!r}")
                )
        except ValueError as exc:
            problems.append(("duration", str(exc)))
        values["duration"] = duration

        try:
            values["labels"] = parse_labels(norm.get("labels", ""))
        except ValueError as exc:
            problems.append(("labels", str(exc)))

        target = norm.get("target")
        if target is not None and str(target) != "":
            target_problem = _check_target(str(target), loopback_only)
            if target_problem:
                problems.append(("target", target_problem))
            values["target"] = str(target).rstrip("/")
        elif require_target:
            problems.append(("target", "is required: an http(s) URL of an OTLP/HTTP receiver"))

        run_id = str(norm.get("run-id") or new_run_id())
        if not is_run_id(run_id):
            problems.append(("run-id", f"{RUN_ID_RULE}; got {run_id!r}"))
        values["run_id"] = run_id

        bmin, bmax = values.get("body_min"), values.get("body_max")
        if isinstance(bmin, int) and isinstance(bmax, int) and bmin > bmax:
            problems.append(("body-min", f"must not exceed body-max ({bmax}); got {bmin}"))
        executor = values.get("executor")
        rate, lpr = values.get("rate"), values.get("logs_per_request")
        rpi = values.get("requests_per_iteration")
        if (
            executor in ARRIVAL_EXECUTORS
            and isinstance(rate, int)
            and isinstance(lpr, int)
            and isinstance(rpi, int)
            and rate < lpr * rpi
        ):
            problems.append(
                (
                    "rate",
                    f"must be at least one iteration ({lpr * rpi} records) per minute; got {rate}",
                )
            )
        if executor == "constant-vus" and "rate" in norm:
            problems.append(("rate", "applies to arrival-rate executors, not constant-vus"))
        if problems:
            raise SpecError(problems)
        return cls(**values)


def _check_target(target: str, loopback_only: bool) -> str | None:
    shape = f"must be an http:// or https:// URL of an OTLP/HTTP receiver; got {target!r}"
    try:
        parts = urlsplit(target)
        hostname = parts.hostname  # raises ValueError on a malformed IPv6 literal
    except ValueError as exc:
        return f"{shape} ({exc})"
    if parts.scheme not in ("http", "https") or not hostname:
        return shape
    port_problem = _check_port(parts.netloc, target)
    if port_problem:
        return port_problem
    if parts.username is not None or parts.password is not None:
        return f"must not carry credentials (user:password@); got {parts.scheme}://…@{hostname}"
    if parts.query or parts.fragment:
        return f"must be the receiver's base URL without a query or fragment; got {target!r}"
    if parts.path not in ("", "/"):
        return f"must be the receiver's base URL without a path (/v1/logs is added); got {target!r}"
    if loopback_only and not _is_loopback(hostname):
        return (
            "local runs send traffic only to loopback (127.0.0.0/8, ::1, localhost); "
            f"got {hostname!r}"
        )
    return None


def _check_port(netloc: str, target: str) -> str | None:
    """The URL's port, if any, must be a number from 1 to 65535."""
    host_port = netloc.rpartition("@")[2]
    if host_port.startswith("["):
        _, bracket, rest = host_port.partition("]")
        port = rest[1:] if bracket and rest.startswith(":") else None
    else:
        port = host_port.partition(":")[2] if ":" in host_port else None
    if port is None:
        return None
    if not port.isascii() or not port.isdigit() or not 1 <= int(port) <= 65535:
        return f"port must be a number from 1 to 65535; got {port!r} in {target!r}"
    return None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    if host.startswith("127."):
        return (
            all(p.isdigit() and 0 <= int(p) <= 255 for p in host.split("."))
            and host.count(".") == 3
        )
    return host in ("::1", "[::1]")
