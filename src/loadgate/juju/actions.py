"""The k6 charm's action results, parsed into loadgate's figures.

Juju returns action results as nested mappings of strings whose keys use hyphens
(`client.error-rate` arrives as {"client": {"error-rate": "0.0"}}). These functions accept
hyphens or underscores, strings or numbers, and a JSON string where a mapping is expected, and
raise ActionResultError naming the field when something is missing or malformed.

Shapes read (the k6 charm's charmcraft.yaml and src/report.py, actions start-load and
get-results):
- start-load: `run-id`.
- get-results: `run-id`, `status` (running, passed, failed, error, stopped), `client`
  (requests, failed, error-rate, p99-ms, records-sent, records-accepted, records-per-minute,
  duration-s, dropped-iterations, p99-source, instances; optionally histogram, and for
  logql-query lines-sent, lines-accepted, wrong-answers), `gates`,
  `verdict`, `units` (unit -> its status; or unit -> its figures), `stderr-tail` / `detail`.
  On the leader of several units the figures are the combined ones.
  A `summary` field holding the k6 summary JSON (loadgate-k6-summary/1) is read as such.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loadgate.contract.params import ACTION_PARAMS
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures, Histogram, SummaryError, parse_summary

_STATUSES = ("running", "passed", "failed", "error", "stopped")
_FINISHED_OK = ("passed", "failed")  # k6 ran to its end; gates decided the verdict


class ActionResultError(ValueError):
    """An action's results miss a field or hold a malformed one (the message names it)."""


def _norm(data: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k).replace("_", "-"): v for k, v in data.items()}


def _as_mapping(value: Any, name: str, *, normalize: bool = True) -> dict[str, Any]:
    """A mapping field: a mapping, or a JSON object in a string (keys kebab-cased)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ActionResultError(
                f"{name}: expected a mapping or JSON object, got {value[:80]!r}"
            ) from None
    if not isinstance(value, Mapping):
        raise ActionResultError(f"{name}: expected a mapping, got {type(value).__name__}")
    return _norm(value) if normalize else dict(value)  # pyright: ignore[reportUnknownArgumentType]


def _number(data: Mapping[str, Any], key: str, where: str, default: float | None = None) -> float:
    value = data.get(key)
    if value is None or value == "":
        if default is not None:
            return default
        raise ActionResultError(f"{where}.{key}: missing")
    if isinstance(value, bool):
        raise ActionResultError(f"{where}.{key}: expected a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ActionResultError(f"{where}.{key}: expected a number, got {value!r}") from None


def _whole(data: Mapping[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = _number(data, key, where, None if default is None else float(default))
    if not value.is_integer():
        raise ActionResultError(f"{where}.{key}: expected a whole number, got {value!r}")
    return int(value)


def _parse_histogram(value: Any, where: str) -> Histogram:
    data = _as_mapping(value, where)
    counts_raw = _as_mapping(data.get("counts") or {}, f"{where}.counts")
    try:
        counts = {int(b): int(n) for b, n in counts_raw.items()}
    except (TypeError, ValueError):
        raise ActionResultError(
            f"{where}.counts: bucket numbers and counts must be integers"
        ) from None
    return Histogram(
        base_ms=_number(data, "base-ms", where, 0.05),
        per_octave=_whole(data, "per-octave", where, 8),
        counts=counts,
    )


def _parse_client(value: Any, where: str = "client") -> ClientFigures:
    """ClientFigures from the `client` figures of get-results."""
    data = _as_mapping(value, where)
    p99 = data.get("p99-ms")
    thresholds_raw = _as_mapping(data.get("thresholds") or {}, f"{where}.thresholds")
    return ClientFigures(
        requests=_whole(data, "requests", where),
        failed=_whole(data, "failed", where),
        error_rate=_number(data, "error-rate", where),
        p99_ms=None if p99 in (None, "", "null", "None") else _number(data, "p99-ms", where),
        records_sent=_whole(data, "records-sent", where),
        records_accepted=_whole(data, "records-accepted", where),
        records_per_minute=_number(data, "records-per-minute", where),
        duration_s=_number(data, "duration-s", where, 0.0),
        dropped_iterations=_whole(data, "dropped-iterations", where, 0),
        p99_source=str(data.get("p99-source") or "k6 charm get-results"),
        instances=_whole(data, "instances", where, 1),
        thresholds={str(k): _truthy(v) for k, v in thresholds_raw.items()},
        histogram=_parse_histogram(data["histogram"], f"{where}.histogram")
        if data.get("histogram")
        else Histogram(),
        lines_sent=_optional_whole(data, "lines-sent", where),
        lines_accepted=_optional_whole(data, "lines-accepted", where),
        wrong_answers=_optional_whole(data, "wrong-answers", where),
    )


def _optional_whole(data: Mapping[str, Any], key: str, where: str) -> int | None:
    """A count only some scenarios report (logql-query): None when absent."""
    if data.get(key) in (None, "", "null", "None"):
        return None
    return _whole(data, key, where)


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in ("true", "1", "yes", "ok", "pass")


@dataclass(frozen=True)
class RunStatus:
    """What get-results said about one run."""

    run_id: str
    status: str
    client: ClientFigures | None
    verdict: str | None = None
    units: dict[str, ClientFigures] = field(default_factory=dict[str, ClientFigures])
    unit_status: dict[str, str] = field(default_factory=dict[str, str])
    error: str = ""
    raw: dict[str, Any] = field(default_factory=dict[str, Any])

    @property
    def finished(self) -> bool:
        return self.status != "running"


def parse_start(results: Mapping[str, Any]) -> str:
    run_id = _norm(results).get("run-id")
    if not isinstance(run_id, str) or not run_id:
        raise ActionResultError("start-load: results have no run-id")
    return run_id


def parse_results(results: Mapping[str, Any]) -> RunStatus:
    """A RunStatus from get-results. While running, client figures may be partial or absent."""
    data = _norm(results)
    status = str(data.get("status") or "")
    if status not in _STATUSES:
        raise ActionResultError(
            f"get-results.status: must be one of {', '.join(_STATUSES)}, got {status!r}"
        )
    run_id = str(data.get("run-id") or "")
    if not run_id:
        raise ActionResultError("get-results.run-id: missing")
    client: ClientFigures | None = None
    if data.get("summary"):
        try:
            summary = _as_mapping(data["summary"], "get-results.summary", normalize=False)
            client = parse_summary(summary)
        except SummaryError as exc:
            raise ActionResultError(f"get-results.summary: {exc}") from None
    elif data.get("client"):
        try:
            client = _parse_client(data["client"], "get-results.client")
        except ActionResultError:
            if status in _FINISHED_OK:
                raise
            client = None  # partial figures of a running or broken run
    elif status in _FINISHED_OK:
        raise ActionResultError(f"get-results.client: missing for a {status} run")
    units: dict[str, ClientFigures] = {}
    unit_status: dict[str, str] = {}
    for key, value in _as_mapping(data.get("units") or {}, "get-results.units").items():
        if isinstance(value, str) and not value.lstrip().startswith("{"):
            unit_status[_unit_name(key)] = value
        else:
            units[_unit_name(key)] = _parse_client(value, f"get-results.units.{key}")
    verdict = data.get("verdict")
    error = next(
        (str(data[k]) for k in ("stderr-tail", "error", "detail", "message") if data.get(k)), ""
    )
    return RunStatus(
        run_id=run_id,
        status=status,
        client=client,
        verdict=str(verdict) if verdict else None,
        units=units,
        unit_status=unit_status,
        error=error,
        raw=dict(results),
    )


def _unit_name(key: str) -> str:
    """`k6-1` (action result keys cannot hold '/') -> `k6/1`; `k6/1` stays."""
    if "/" in key:
        return key
    app, sep, num = key.rpartition("-")
    return f"{app}/{num}" if sep and num.isdigit() else key


# start-load parameters of the k6 charm (charms/k6-k8s/charmcraft.yaml), `run-id` among them:
# the run id must be loadgate's, as the LogQL read-back and the results folder are keyed by it.
START_LOAD_PARAMS = frozenset(ACTION_PARAMS)


def start_load_params(spec: RunSpec) -> dict[str, Any]:
    """The start-load parameters of a spec. Raises ActionResultError for what the charm cannot
    take (e.g. a stream count other than the scenario's default)."""
    params = spec.to_params()
    streams = params.pop("streams", RunSpec().streams)
    if streams != RunSpec().streams:
        raise ActionResultError(
            f"streams: the k6 charm runs the scenario's default {RunSpec().streams} streams; "
            f"got {streams}"
        )
    unknown = sorted(set(params) - START_LOAD_PARAMS)
    if unknown:
        raise ActionResultError(f"start-load has no parameter(s) {', '.join(unknown)}")
    return {k: v for k, v in params.items() if v not in (None, "")}
