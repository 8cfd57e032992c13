"""The fake Juju world's state, and what Juju 3.6 answers about it (its JSON shapes).

A state is one JSON-ready mapping, so the `juju` program (cli.py) can keep it in a file between
calls and a test can hold it in memory (inprocess.py):

    controller   the controller's name ("k8s")
    confined     the juju on PATH is the strictly confined snap (cli.py: what it can read)
    models       name -> {"apps": {app: App}, "runs": [the k6 runs started]}, and optionally
                 "get_results": get-results answers to hand out in order (a scripted k6 charm),
                 "k6_own_run_id": a k6 charm that names its runs itself
    addresses    unit -> pod address (else one made up from the unit's name)
    leaders      app -> leader unit number (else its first unit)
    heads        charm -> channel -> revision: what the fake Charmhub resolves
    ca_pem       what the `ca` application's get-ca-certificate answers
    pipeline     a timed world's pipeline (world.Timed.pipeline): its k6 runs take their
                 duration (timed.py); without it a run ends at once, every record delivered.

An App is {"charm", "origin" ("charmhub" or "local"), "rev", "channel", "units": [numbers],
"next_unit"}. Only the standard library and PyYAML: the `juju` program imports this module on
every call.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from . import timed

State = dict[str, Any]
ROOT = Path(__file__).resolve().parents[3]
NOW = "2026-11-22T20:00:00Z"
VERSION = "3.6.8"
# Channel heads the fake Charmhub resolves (a fixed number, for the fakes only).
HEADS: dict[str, dict[str, int]] = {
    "opentelemetry-collector-k8s": {"dev/edge": 207, "0.130/edge": 150},
    "loki-k8s": {"3.7/edge": 310, "3.7/stable": 305},
    "self-signed-certificates": {"1/stable": 400},
    "prometheus-k8s": {"3.11/edge": 290, "3.11/stable": 285},
    "grafana-k8s": {"dev/edge": 180},
    "alertmanager-k8s": {"0.31/edge": 170, "0.31/stable": 165},
    "catalogue-k8s": {"3.0/edge": 90, "3.0/stable": 88},
    "traefik-k8s": {"latest/stable": 250},
}
# The collector's sending queue (its config's sending_queue.queue_size, in requests).
QUEUE_SIZE = 1000
# How long after its duration the k6 charm reports a run finished (k6 stops, the charm reads
# its summary).
K6_STOP_S = 2.0


class RefusedError(Exception):
    """The command fails as Juju would: the message is its stderr, `code` its exit code."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


# ---- building a state ----------------------------------------------------------------------


def new_state(
    *,
    models: Mapping[str, Mapping[str, Any]] | None = None,
    confined: bool = False,
    addresses: Mapping[str, str] | None = None,
    leaders: Mapping[str, int] | None = None,
    ca_pem: str = "",
) -> State:
    """A controller `k8s`; `models` pre-creates models (name -> {"apps": ...}, ...)."""
    return {
        "controller": "k8s",
        "confined": confined,
        "models": {name: {"apps": {}, "runs": [], **dict(m)} for name, m in (models or {}).items()},
        "addresses": dict(addresses or {}),
        "leaders": dict(leaders or {}),
        "heads": HEADS,
        "ca_pem": ca_pem,
    }


def app(
    charm: str, units: list[int], *, origin: str = "charmhub", rev: int = 1, channel: str = ""
) -> dict[str, Any]:
    """An application as the state records it."""
    return {"charm": charm, "origin": origin, "rev": rev, "channel": channel,
            "units": list(units), "next_unit": max(units, default=-1) + 1}  # fmt: skip


def deployed_apps(
    otelcol: Mapping[str, Any] | None = None, loki_units: int = 2
) -> dict[str, dict[str, Any]]:
    """The applications of a model that already holds bundles/bundle.yaml (at the heads)."""
    bundle = yaml.safe_load((ROOT / "bundles" / "bundle.yaml").read_text())
    apps: dict[str, dict[str, Any]] = {}
    for name, spec in bundle["applications"].items():
        charm, channel = spec["charm"], spec.get("channel", "")
        scale = loki_units if name == "loki" else int(spec.get("scale", 1))
        if charm.startswith("./"):
            apps[name] = app("loadgate-k6-k8s", list(range(scale)), origin="local")
        else:
            apps[name] = app(charm, list(range(scale)), rev=HEADS[charm][channel], channel=channel)
    if otelcol:
        apps["otelcol"].update(otelcol)
    return apps


# ---- models, units, addresses --------------------------------------------------------------


def short_model_name(name: str) -> str:
    """`ctl:admin/cos` -> `cos`."""
    return name.split(":", 1)[-1].split("/")[-1]


def model_of(state: State, name: str | None) -> dict[str, Any]:
    if not name:
        raise RefusedError("ERROR no model specified (the fake has no current model)")
    short = short_model_name(name)
    if short not in state["models"]:
        raise RefusedError(f'ERROR model "{name}" not found')
    return state["models"][short]


def unit_address(state: State, unit: str) -> str:
    fixed = state["addresses"]
    if unit in fixed:
        return fixed[unit]
    name, _, num = unit.partition("/")
    return f"10.1.{sum(map(ord, name)) % 200}.{int(num) + 10}"


def leader_of(state: State, name: str, units: list[int]) -> int:
    wanted = state["leaders"].get(name)
    return wanted if wanted in units else units[0]


def scale(model: dict[str, Any], name: str, change: int) -> None:
    """add-unit (change > 0) or remove-unit (change < 0, the newest units go)."""
    a = model["apps"][name]
    if change > 0:
        a["units"] += list(range(a["next_unit"], a["next_unit"] + change))
        a["next_unit"] += change
    else:
        a["units"] = a["units"][: len(a["units"]) + change]


# ---- controllers, models, status, show-unit ------------------------------------------------


def controllers_json(state: State) -> dict[str, Any]:
    controller = {
        "user": "admin",
        "access": "superuser",
        "recent-server": "10.0.0.2:17070",
        "uuid": "1c9d3c1e-0000-4000-8000-000000000001",
        "api-endpoints": ["10.0.0.2:17070"],
        "cloud": "k8s",
        "agent-version": VERSION,
        "model-count": len(state["models"]) + 1,
    }
    return {
        "controllers": {state["controller"]: controller},
        "current-controller": state["controller"],
    }


def models_json(state: State) -> dict[str, Any]:
    models = [
        {
            "name": f"admin/{name}",
            "short-name": name,
            "model-uuid": f"00000000-0000-4000-8000-{i:012d}",
            "model-type": "caas",
            "controller-name": state["controller"],
            "is-controller": False,
            "owner": "admin",
            "cloud": "k8s",
            "type": "kubernetes",
            "life": "alive",
            "status": {"current": "available", "since": NOW},
            "access": "admin",
            "agent-version": VERSION,
        }
        for i, name in enumerate(sorted(state["models"]))
    ]
    return {"models": models}


def _app_status(state: State, name: str, a: dict[str, Any]) -> dict[str, Any]:
    lead = leader_of(state, name, a["units"]) if a["units"] else None
    units = {
        f"{name}/{n}": {
            "workload-status": {"current": "active", "since": NOW},
            "juju-status": {"current": "idle", "since": NOW, "version": VERSION},
            "leader": n == lead,
            "address": unit_address(state, f"{name}/{n}"),
            "provider-id": f"{name}-{n}",
        }
        for n in a["units"]
    }
    entry: dict[str, Any] = {
        "charm": a["charm"] if a["origin"] == "charmhub" else f"local:{a['charm']}-{a['rev']}",
        "base": {"name": "ubuntu", "channel": "24.04"},
        "charm-origin": a["origin"],
        "charm-name": a["charm"],
        "charm-rev": a["rev"],
        "scale": len(a["units"]),
        "provider-id": f"{name}-provider",
        "address": f"10.152.183.{sum(map(ord, name)) % 250}",
        "exposed": False,
        "application-status": {"current": "active", "since": NOW},
        "units": units,
    }
    if a["channel"]:
        entry["charm-channel"] = a["channel"]
    return entry


def status_json(state: State, model_name: str) -> dict[str, Any]:
    """`juju status --format json` of a model."""
    model = model_of(state, model_name)
    return {
        "model": {
            "name": short_model_name(model_name),
            "type": "caas",
            "controller": state["controller"],
            "cloud": "k8s",
            "region": "localhost",
            "version": VERSION,
            "model-status": {"current": "available", "since": NOW},
            "sla": "unsupported",
        },
        "machines": {},
        "applications": {name: _app_status(state, name, a) for name, a in model["apps"].items()},
        "storage": {},
        "controller": {"timestamp": "20:00:00Z"},
    }


def show_unit_json(state: State, model_name: str, unit: str) -> dict[str, Any]:
    """`juju show-unit --format json` of a k6 unit: its send-otlp relation to the collector."""
    name, _, num = unit.partition("/")
    a = model_of(state, model_name)["apps"][name]
    host = f"otelcol-0.otelcol-endpoints.{short_model_name(model_name)}.svc.cluster.local"
    otlp = [{"protocol": "http", "endpoint": f"http://{host}:4318"}]
    info = {
        "opened-ports": [],
        "charm": f"local:{a['charm']}-{a['rev']}",
        "leader": leader_of(state, name, a["units"]) == int(num),
        "life": "alive",
        "relation-info": [
            {
                "relation-id": 7,
                "endpoint": "send-otlp",
                "related-endpoint": "receive-otlp",
                "application-data": {"endpoints": json.dumps(otlp)},
                "related-units": {"otelcol/0": {"in-scope": True, "data": {}}},
            }
        ],
        "provider-id": unit.replace("/", "-"),
        "address": unit_address(state, unit),
    }
    return {unit: info}


def collector_config(model_name: str, loki_units: list[int]) -> str:
    """/etc/otelcol/config.yaml of the collector charm: one Loki exporter per Loki unit.

    Exporter numbers follow relation order, not unit numbers: loki/N -> send-loki-logs/(last-N).
    """
    model = short_model_name(model_name)
    exporters: dict[str, Any] = {}
    for n in loki_units:
        index = len(loki_units) - 1 - loki_units.index(n)
        host = f"loki-{n}.loki-endpoints.{model}.svc.cluster.local"
        exporters[f"loki/send-loki-logs/{index}"] = {
            "endpoint": f"https://{host}:3100/loki/api/v1/push",
            "sending_queue": {"enabled": True, "queue_size": QUEUE_SIZE, "storage": "file_storage"},
            "retry_on_failure": {"max_elapsed_time": "5m"},
        }
    exporters["prometheusremotewrite/0"] = {
        "endpoint": f"https://prometheus-0.prometheus-endpoints.{model}.svc.cluster.local:9090/api/v1/write"
    }
    return yaml.safe_dump({"exporters": exporters})


# ---- actions: the k6 charm's and the CA's --------------------------------------------------


def client_results(requests: int, lpr: int, duration: float, instances: int) -> dict[str, str]:
    """get-results' `client` as `juju run` hands it over: every value a string."""
    records = requests * lpr
    return {
        "requests": str(requests),
        "failed": "0",
        "error-rate": "0.0",
        "p99-ms": "42.5",
        "records-sent": str(records),
        "records-accepted": str(records),
        "records-per-minute": str(records / duration * 60.0),
        "duration-s": str(duration),
        "dropped-iterations": "0",
        "instances": str(instances),
    }


def duration_s(text: str) -> float:
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", text)
    if not m or not any(m.groups()):
        raise RefusedError(f"fake juju: duration {text!r}", 2)
    h, mins, secs = m.groups()
    return int(h or 0) * 3600 + int(mins or 0) * 60 + float(secs or 0)


# Each scenario's parameters whose product is the units of one request, with their defaults
# (loadgate.contract.scenarios and params; tests/unit/test_juju_helpers.py checks they agree).
PER_REQUEST: dict[str, dict[str, int]] = {
    "otlp-logs": {"logs-per-request": 5},
    "otlp-metrics": {"series-per-request": 10, "points-per-series": 5},
    "loki-push": {"streams-per-request": 10, "lines-per-stream": 10},
    "otlp-traces": {"traces-per-request": 5, "spans-per-trace": 9},
    "logql-query": {},  # a query a request
}


def units_per_request(params: Mapping[str, Any]) -> int:
    """The units one request of the run's scenario carries (its per-request parameters, each
    given or its default): log records, data points, lines, spans; 1 for queries."""
    own = PER_REQUEST[str(params.get("scenario") or "otlp-logs")]
    return math.prod(int(params.get(name, default)) for name, default in own.items())


def _start_load(
    state: State, model: dict[str, Any], units: list[int], params: dict[str, Any]
) -> dict[str, Any]:
    seconds = duration_s(str(params.get("duration", "60s")))
    lpr = units_per_request(params)
    records = int(int(params.get("rate", 60000)) * seconds / 60)
    run_id = model.get("k6_own_run_id") or params["run-id"]
    run: dict[str, Any] = {
        "run_id": run_id,
        "requests": records // lpr // len(units) * len(units),
        "lpr": lpr,
        "duration_s": seconds,
        "units": [f"k6/{n}" for n in units],
    }
    if state.get("pipeline"):
        timed.start(run, params, time.time())
    model["runs"].append(run)
    return {"run-id": run_id}


def _get_results(
    state: State, model: dict[str, Any], leader: bool, params: dict[str, Any]
) -> dict[str, Any]:
    if model.get("get_results"):
        return model["get_results"].pop(0)
    runs = model["runs"]
    wanted = params.get("run-id") or (runs[-1]["run_id"] if runs else None)
    run = next((r for r in runs if r["run_id"] == wanted), None)
    if run is None:
        raise RefusedError(f"fake juju: no run {wanted!r}", 2)
    units = len(run["units"])
    answer: dict[str, Any] = {"run-id": run["run_id"], "status": "passed", "verdict": "PASS"}
    line = timed.timeline(state, model)
    if line is not None and "start" in run:
        found = timed.results(line, run, leader, time.time())
        if found is None:
            return {"run-id": run["run_id"], "status": "running"}
        answer.update(found)
    elif leader:
        answer["client"] = client_results(run["requests"], run["lpr"], run["duration_s"], units)
    else:
        answer["client"] = client_results(
            run["requests"] // units, run["lpr"], run["duration_s"], 1
        )
    if leader:
        answer["units"] = {u.replace("/", "-"): "passed" for u in run["units"]}
    return answer


def action(
    state: State, model: dict[str, Any], unit: str, name: str, params: dict[str, Any]
) -> dict[str, Any]:
    """The results of running action `name` on `unit` (the state changes as the charm's)."""
    app_name, _, num = unit.partition("/")
    a = model["apps"].get(app_name)
    if a is None or int(num) not in a["units"]:
        raise RefusedError(f'ERROR unit "{unit}" not found')
    leader = leader_of(state, app_name, a["units"]) == int(num)
    if app_name == "ca" and name == "get-ca-certificate":
        return {"ca-certificate": state["ca_pem"]}
    if app_name == "k6" and name == "start-load":
        if not leader:
            raise RefusedError("fake juju: start-load on a non-leader", 2)
        return _start_load(state, model, a["units"], params)
    if app_name == "k6" and name == "get-results":
        return _get_results(state, model, leader, params)
    if app_name == "k6" and name == "stop-load":
        return {}
    raise RefusedError(f'ERROR action "{name}" not defined on unit "{unit}"')


def task_json(state: State, unit: str, results: dict[str, Any]) -> dict[str, Any]:
    """`juju run --format json`'s answer: the task, by unit."""
    state["task"] = state.get("task", 0) + 1
    task = {
        "id": str(state["task"]),
        "results": {**results, "return-code": 0},
        "status": "completed",
        "timing": {"completed": NOW, "enqueued": NOW, "started": NOW},
        "unit": unit,
    }
    return {unit: task}
