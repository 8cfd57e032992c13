"""A fake `juju` CLI for dry runs: records every call and answers in Juju 3.6's JSON shapes.

Run as the `juju` executable on PATH (juju_world.py writes a wrapper that runs this file). It
keeps a model's state in a JSON file ($FAKE_JUJU_STATE) and appends every call to a JSON-lines
log ($FAKE_JUJU_LOG): the argv, each file the call names with whether this process could read
it, and its content (so a test can check what was handed to Juju after the fact).

With `confined` set in the state it behaves like the strictly confined juju snap: it can read
files under $HOME except in hidden folders (~/snap/juju/common is fine), and nothing else (not
/tmp, not a tox env). A file it cannot read fails the command as Juju would.

Answers: `controllers`, `models`, `add-model`, `destroy-model`, `status`, `deploy` (bundle and
overlays merged; local charms read from their .charm), `run` (the k6 charm's start-load,
get-results, stop-load and the CA's get-ca-certificate; params from the --params file),
`show-unit`, `ssh … cat /etc/otelcol/config.yaml`, `add-unit`, `remove-unit`. Anything else
exits 2 with "fake juju: unsupported", so a test notices a new command.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import yaml

ENV_STATE = "FAKE_JUJU_STATE"
ENV_LOG = "FAKE_JUJU_LOG"
NOW = "2026-11-22T20:00:00Z"
MERGED_KEYS = ("options", "storage", "resources", "annotations", "bindings")


class RefusedError(Exception):
    """The command fails: (exit code, stderr)."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


# ---- state and log -------------------------------------------------------------------------


def load_state() -> dict[str, Any]:
    return json.loads(Path(os.environ[ENV_STATE]).read_text())


def save_state(state: dict[str, Any]) -> None:
    path = Path(os.environ[ENV_STATE])
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".state-")
    with os.fdopen(fd, "w") as f:
        json.dump(state, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def readable(state: dict[str, Any], path: Path) -> bool:
    """Can this juju read the file? The snap: only under $HOME, outside hidden folders."""
    if not path.is_absolute() or not path.is_file():
        return False
    if not state.get("confined"):
        return os.access(path, os.R_OK)
    home = Path(os.environ["HOME"]).resolve()
    try:
        inside = path.resolve().relative_to(home)
    except ValueError:
        return False
    return not any(part.startswith(".") for part in inside.parts)


class Call:
    def __init__(self, state: dict[str, Any], argv: list[str]):
        self.state = state
        self.argv = argv
        self.files: dict[str, dict[str, Any]] = {}

    def read_file(self, raw: str, what: str) -> str:
        path = Path(raw)
        ok = readable(self.state, path)
        entry: dict[str, Any] = {"what": what, "readable": ok, "content": None}
        self.files[raw] = entry
        if not ok:
            raise RefusedError(f'ERROR {what} "{raw}": open {raw}: no such file or directory')
        if path.suffix == ".charm":
            entry["content"] = f"<charm {path.stat().st_size} bytes>"
            return ""
        text = path.read_text()
        entry["content"] = text
        return text


def log(call: Call, code: int, out: str, err: str) -> None:
    entry = {"argv": call.argv, "files": call.files, "rc": code, "stdout": out, "stderr": err}
    with open(os.environ[ENV_LOG], "a") as f:
        f.write(json.dumps(entry) + "\n")


# ---- argv helpers --------------------------------------------------------------------------


def take(args: list[str], flag: str, has_value: bool = True) -> str | bool | None:
    """Remove a flag (and its value) from args; its value, True, or None when absent."""
    if flag not in args:
        return None
    i = args.index(flag)
    if not has_value:
        del args[i]
        return True
    value = args[i + 1]
    del args[i : i + 2]
    return value


def model_of(state: dict[str, Any], args: list[str]) -> dict[str, Any]:
    name = take(args, "--model") or take(args, "-m")
    if not isinstance(name, str):
        raise RefusedError("ERROR no model specified (the fake has no current model)")
    short = name.split(":", 1)[-1].split("/")[-1]
    if short not in state["models"]:
        raise RefusedError(f'ERROR model "{name}" not found')
    return state["models"][short]


# ---- status --------------------------------------------------------------------------------


def unit_address(state: dict[str, Any], unit: str) -> str:
    fixed = state.get("addresses", {}).get(unit)
    if fixed:
        return fixed
    app, _, num = unit.partition("/")
    return f"10.1.{sum(map(ord, app)) % 200}.{int(num) + 10}"


def leader_of(state: dict[str, Any], app: str, units: list[int]) -> int:
    wanted = state.get("leaders", {}).get(app)
    return wanted if wanted in units else units[0]


def status_json(state: dict[str, Any], name: str, model: dict[str, Any]) -> dict[str, Any]:
    apps: dict[str, Any] = {}
    for app, a in model["apps"].items():
        lead = leader_of(state, app, a["units"]) if a["units"] else None
        units = {
            f"{app}/{n}": {
                "workload-status": {"current": "active", "since": NOW},
                "juju-status": {"current": "idle", "since": NOW, "version": "3.6.8"},
                "leader": n == lead,
                "address": unit_address(state, f"{app}/{n}"),
                "provider-id": f"{app}-{n}",
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
            "provider-id": f"{app}-provider",
            "address": f"10.152.183.{sum(map(ord, app)) % 250}",
            "exposed": False,
            "application-status": {"current": "active", "since": NOW},
            "units": units,
        }
        if a["channel"]:
            entry["charm-channel"] = a["channel"]
        apps[app] = entry
    return {
        "model": {
            "name": name,
            "type": "caas",
            "controller": state["controller"],
            "cloud": "k8s",
            "region": "localhost",
            "version": "3.6.8",
            "model-status": {"current": "available", "since": NOW},
            "sla": "unsupported",
        },
        "machines": {},
        "applications": apps,
        "storage": {},
        "controller": {"timestamp": "20:00:00Z"},
    }


# ---- deploy --------------------------------------------------------------------------------


def merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    apps = base.setdefault("applications", {})
    for name, spec in (overlay.get("applications") or {}).items():
        if spec is None:
            apps.pop(name, None)
            continue
        current = apps.setdefault(name, {})
        for key, value in spec.items():
            if key in MERGED_KEYS and isinstance(value, dict):
                current[key] = {**(current.get(key) or {}), **value}
            else:
                current[key] = value
    base["relations"] = list(base.get("relations") or []) + list(overlay.get("relations") or [])
    return base


def charm_metadata(path: Path) -> dict[str, Any]:
    try:
        with zipfile.ZipFile(path) as z:
            return yaml.safe_load(z.read("metadata.yaml"))
    except (KeyError, zipfile.BadZipFile) as exc:
        raise RefusedError(f'ERROR invalid charm archive "{path}": {exc}') from None


def deploy(call: Call, args: list[str]) -> str:
    state = call.state
    model = model_of(state, args)
    trust = bool(take(args, "--trust", has_value=False))
    overlays: list[str] = []
    while (o := take(args, "--overlay")) is not None:
        overlays.append(str(o))
    if len(args) != 1:
        raise RefusedError(f"fake juju: unsupported deploy arguments {args}", 2)
    bundle_path = args[0]
    doc = yaml.safe_load(call.read_file(bundle_path, "bundle"))
    for overlay in overlays:
        merge(doc, yaml.safe_load(call.read_file(overlay, "overlay")) or {})
    needs_trust = sorted(a for a, s in doc["applications"].items() if s.get("trust"))
    if needs_trust and not trust:
        raise RefusedError(
            "ERROR Bundle cannot be deployed without trusting applications with your cloud "
            "credentials. Please repeat the deploy command with the --trust argument if you "
            f"consent to trust the following application(s): {', '.join(needs_trust)}"
        )
    for app, spec in doc["applications"].items():
        charm = spec["charm"]
        if charm.startswith(("/", "./", "../")):
            path = (
                (Path(bundle_path).parent / charm).resolve()
                if not charm.startswith("/")
                else Path(charm)
            )
            call.read_file(str(path), f"local charm of {app}")
            meta = charm_metadata(path)
            missing = [
                r
                for r, s in (meta.get("resources") or {}).items()
                if s.get("type") == "oci-image" and r not in (spec.get("resources") or {})
            ]
            if missing:
                raise RefusedError(
                    f"ERROR local charm {meta['name']}: resource {missing[0]!r} not specified"
                )
            state["local_rev"] = state.get("local_rev", 0) + 1
            entry = {
                "charm": meta["name"],
                "origin": "local",
                "rev": state["local_rev"],
                "channel": "",
            }
        else:
            channel = spec.get("channel")
            heads = state["heads"].get(charm, {})
            if channel not in heads:
                raise RefusedError(f'ERROR cannot resolve charm "{charm}" in channel {channel!r}')
            rev = spec.get("revision", heads[channel])
            entry = {"charm": charm, "origin": "charmhub", "rev": rev, "channel": channel}
        scale = int(spec.get("scale", 1))
        entry.update(units=list(range(scale)), next_unit=scale)
        model["apps"][app] = entry
    save_state(state)
    return ""


# ---- actions -------------------------------------------------------------------------------


def _client(requests: int, lpr: int, duration_s: float, instances: int) -> dict[str, str]:
    records = requests * lpr
    return {
        "requests": str(requests),
        "failed": "0",
        "error-rate": "0.0",
        "p99-ms": "42.5",
        "records-sent": str(records),
        "records-accepted": str(records),
        "records-per-minute": str(records / duration_s * 60.0),
        "duration-s": str(duration_s),
        "dropped-iterations": "0",
        "instances": str(instances),
    }


def duration_s(text: str) -> float:
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", text)
    if not m or not any(m.groups()):
        raise RefusedError(f"fake juju: duration {text!r}", 2)
    h, mins, secs = m.groups()
    return int(h or 0) * 3600 + int(mins or 0) * 60 + float(secs or 0)


def action(
    state: dict[str, Any], model: dict[str, Any], unit: str, name: str, params: dict[str, Any]
) -> dict[str, Any]:
    app, _, num = unit.partition("/")
    a = model["apps"].get(app)
    if a is None or int(num) not in a["units"]:
        raise RefusedError(f'ERROR unit "{unit}" not found')
    leader = leader_of(state, app, a["units"]) == int(num)
    if app == "ca" and name == "get-ca-certificate":
        return {"ca-certificate": Path(state["ca_pem_file"]).read_text()}
    if app != "k6":
        raise RefusedError(f'ERROR action "{name}" not defined on unit "{unit}"')
    runs = model.setdefault("runs", [])
    if name == "start-load":
        if not leader:
            raise RefusedError("fake juju: start-load on a non-leader", 2)
        units = len(a["units"])
        seconds = duration_s(str(params.get("duration", "60s")))
        lpr = int(params.get("logs-per-request", 5))
        records = int(int(params.get("rate", 60000)) * seconds / 60)
        requests = records // lpr // units * units
        runs.append(
            {
                "run_id": params["run-id"],
                "requests": requests,
                "lpr": lpr,
                "duration_s": seconds,
                "units": [f"k6/{n}" for n in a["units"]],
            }
        )
        save_state(state)
        return {"run-id": params["run-id"]}
    if name == "get-results":
        wanted = params.get("run-id") or (runs[-1]["run_id"] if runs else None)
        run = next((r for r in runs if r["run_id"] == wanted), None)
        if run is None:
            raise RefusedError(f"fake juju: no run {wanted!r}", 2)
        units = len(run["units"])
        if leader:
            figures = _client(run["requests"], run["lpr"], run["duration_s"], units)
            return {
                "run-id": run["run_id"],
                "status": "passed",
                "verdict": "PASS",
                "client": figures,
                "units": {u.replace("/", "-"): "passed" for u in run["units"]},
            }
        own = _client(run["requests"] // units, run["lpr"], run["duration_s"], 1)
        return {"run-id": run["run_id"], "status": "passed", "verdict": "PASS", "client": own}
    if name == "stop-load":
        return {}
    raise RefusedError(f'ERROR action "{name}" not defined on unit "{unit}"')


def run(call: Call, args: list[str]) -> str:
    state = call.state
    model = model_of(state, args)
    take(args, "--format")
    take(args, "--wait")
    params_file = take(args, "--params")
    params: dict[str, Any] = {}
    if isinstance(params_file, str):
        params = yaml.safe_load(call.read_file(params_file, "action params")) or {}
    if len(args) != 2:
        raise RefusedError(f"fake juju: unsupported run arguments {args}", 2)
    unit, name = args
    results = action(state, model, unit, name, params)
    state["task"] = state.get("task", 0) + 1
    save_state(state)
    task = {
        "id": str(state["task"]),
        "results": {**results, "return-code": 0},
        "status": "completed",
        "timing": {"completed": NOW, "enqueued": NOW, "started": NOW},
        "unit": unit,
    }
    return json.dumps({unit: task})


# ---- the other commands --------------------------------------------------------------------


def collector_config(state: dict[str, Any], model_name: str, model: dict[str, Any]) -> str:
    loki_units = model["apps"]["loki"]["units"]
    exporters: dict[str, Any] = {}
    # Exporter numbers follow relation order, not unit numbers: loki/N -> send-loki-logs/(last-N)
    for n in loki_units:
        index = len(loki_units) - 1 - loki_units.index(n)
        host = f"loki-{n}.loki-endpoints.{model_name}.svc.cluster.local"
        exporters[f"loki/send-loki-logs/{index}"] = {
            "endpoint": f"https://{host}:3100/loki/api/v1/push",
            "sending_queue": {"enabled": True, "queue_size": 1000, "storage": "file_storage"},
            "retry_on_failure": {"max_elapsed_time": "5m"},
        }
    exporters["prometheusremotewrite/0"] = {
        "endpoint": f"https://prometheus-0.prometheus-endpoints.{model_name}.svc.cluster.local:9090/api/v1/write"
    }
    return yaml.safe_dump({"exporters": exporters})


def show_unit(state: dict[str, Any], name: str, model: dict[str, Any], unit: str) -> str:
    app = unit.partition("/")[0]
    a = model["apps"][app]
    host = f"otelcol-0.otelcol-endpoints.{name}.svc.cluster.local"
    otlp = [{"protocol": "http", "endpoint": f"http://{host}:4318"}]
    info = {
        "opened-ports": [],
        "charm": f"local:{a['charm']}-{a['rev']}",
        "leader": leader_of(state, app, a["units"]) == int(unit.partition("/")[2]),
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
    return json.dumps({unit: info})


def main(argv: list[str]) -> int:
    state = load_state()
    call = Call(state, argv)
    out, err, code = "", "", 0
    try:
        out = dispatch(call, list(argv))
    except RefusedError as exc:
        err, code = str(exc) + "\n", exc.code
    log(call, code, out, err)
    sys.stdout.write(out)
    sys.stderr.write(err)
    return code


def dispatch(call: Call, args: list[str]) -> str:
    state = call.state
    if not args:
        raise RefusedError("fake juju: no command", 2)
    command, rest = args[0], args[1:]
    if command == "controllers":
        return json.dumps(
            {
                "controllers": {
                    state["controller"]: {
                        "user": "admin",
                        "access": "superuser",
                        "recent-server": "10.0.0.2:17070",
                        "uuid": "1c9d3c1e-0000-4000-8000-000000000001",
                        "api-endpoints": ["10.0.0.2:17070"],
                        "cloud": "k8s",
                        "agent-version": "3.6.8",
                        "model-count": len(state["models"]) + 1,
                    }
                },
                "current-controller": state["controller"],
            }
        )
    if command == "models":
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
                "agent-version": "3.6.8",
            }
            for i, name in enumerate(sorted(state["models"]))
        ]
        return json.dumps({"models": models})
    if command == "add-model":
        take(rest, "--no-switch", has_value=False)
        take(rest, "--controller")
        state["models"][rest[0]] = {"apps": {}, "runs": []}
        save_state(state)
        return ""
    if command == "destroy-model":
        name = rest[0].split(":", 1)[-1]
        if name not in state["models"]:
            raise RefusedError(f'ERROR model "{name}" not found')
        del state["models"][name]
        state.setdefault("destroyed", []).append(name)
        save_state(state)
        return ""
    if command == "status":
        name = rest[rest.index("--model") + 1].split(":", 1)[-1] if "--model" in rest else ""
        model = model_of(state, rest)
        return json.dumps(status_json(state, name, model))
    if command == "deploy":
        return deploy(call, rest)
    if command == "run":
        return run(call, rest)
    if command == "show-unit":
        name = rest[rest.index("--model") + 1].split(":", 1)[-1]
        model = model_of(state, rest)
        take(rest, "--format")
        return show_unit(state, name, model, rest[0])
    if command == "ssh":
        name = rest[rest.index("--model") + 1].split(":", 1)[-1]
        model = model_of(state, rest)
        container = take(rest, "--container")
        if (
            container == "otelcol"
            and rest[0].startswith("otelcol/")
            and rest[1:] == ["cat", "/etc/otelcol/config.yaml"]
        ):
            return collector_config(state, name, model)
        raise RefusedError(f"fake juju: unsupported ssh {rest}", 2)
    if command in ("add-unit", "remove-unit"):
        model = model_of(state, rest)
        take(rest, "--no-prompt", has_value=False)
        count = int(str(take(rest, "--num-units") or 1))
        a = model["apps"][rest[0]]
        if command == "add-unit":
            a["units"] += list(range(a["next_unit"], a["next_unit"] + count))
            a["next_unit"] += count
        else:
            a["units"] = a["units"][: len(a["units"]) - count]
        save_state(state)
        return ""
    raise RefusedError(f"fake juju: unsupported command {args}", 2)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
