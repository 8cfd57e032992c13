"""The fake `juju` command: argv in, Juju 3.6's JSON out (state.py), every call recorded.

`answer(state, argv)` runs one command against a state and returns its record: the argv, each
file the call names with whether this juju could read it and its content (so a test can check
what was handed to Juju after the fact), the exit code and the output. In a test process
inprocess.InProcessJuju calls it directly; as a program (world.py puts a `juju` on PATH that runs
`main`) it keeps the state in a JSON file ($FAKE_JUJU_STATE) and appends each record to a
JSON-lines log ($FAKE_JUJU_LOG).

With `confined` set in the state it behaves like the strictly confined juju snap: it can read
files under $HOME except in hidden folders (~/snap/juju/common is fine), and nothing else (not
/tmp, not a tox env). A file it cannot read fails the command as Juju would.

Commands: `controllers`, `models`, `add-model`, `destroy-model`, `status`, `deploy` (bundle and
overlays merged; local charms read from their .charm), `run` (the k6 charm's start-load,
get-results, stop-load and the CA's get-ca-certificate; params from the --params file),
`show-unit`, `ssh … cat /etc/otelcol/config.yaml`, `add-unit`, `remove-unit`. Anything else
exits 2 with "fake juju: unsupported", so a test notices a new command.

Only the standard library and PyYAML: this runs on every call of the `juju` program.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from . import state as st
from .state import RefusedError, State

ENV_STATE = "FAKE_JUJU_STATE"
ENV_LOG = "FAKE_JUJU_LOG"
MERGED_KEYS = ("options", "storage", "resources", "annotations", "bindings")
OTELCOL_CONFIG = ["cat", "/etc/otelcol/config.yaml"]
Record = dict[str, Any]


def readable(state: State, path: Path) -> bool:
    """Can this juju read the file? The snap: only under $HOME, outside hidden folders."""
    if not path.is_absolute() or not path.is_file():
        return False
    if not state["confined"]:
        return os.access(path, os.R_OK)
    home = Path(os.environ["HOME"]).resolve()
    try:
        inside = path.resolve().relative_to(home)
    except ValueError:
        return False
    return not any(part.startswith(".") for part in inside.parts)


class Call:
    """One command: the state it acts on, its argv, and the files it read."""

    def __init__(self, state: State, argv: list[str]):
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


def take_model(args: list[str]) -> str:
    name = take(args, "--model") or take(args, "-m")
    return name if isinstance(name, str) else ""


# ---- deploy --------------------------------------------------------------------------------


def merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """An overlay over a bundle, as Juju merges them."""
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


def _local_app(call: Call, name: str, spec: dict[str, Any], bundle_path: str) -> dict[str, Any]:
    charm = spec["charm"]
    path = Path(charm) if charm.startswith("/") else (Path(bundle_path).parent / charm).resolve()
    call.read_file(str(path), f"local charm of {name}")
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
    call.state["local_rev"] = call.state.get("local_rev", 0) + 1
    return st.app(meta["name"], [], origin="local", rev=call.state["local_rev"])


def _charmhub_app(state: State, spec: dict[str, Any]) -> dict[str, Any]:
    charm, channel = spec["charm"], spec.get("channel")
    heads = state["heads"].get(charm, {})
    if channel not in heads:
        raise RefusedError(f'ERROR cannot resolve charm "{charm}" in channel {channel!r}')
    return st.app(charm, [], rev=spec.get("revision", heads[channel]), channel=str(channel))


def deploy(call: Call, args: list[str]) -> str:
    model = st.model_of(call.state, take_model(args))
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
    for name, spec in doc["applications"].items():
        local = spec["charm"].startswith(("/", "./", "../"))
        entry = (
            _local_app(call, name, spec, bundle_path) if local else _charmhub_app(call.state, spec)
        )
        model["apps"][name] = entry
        st.scale(model, name, int(spec.get("scale", 1)))
    return ""


# ---- run, ssh and the rest -----------------------------------------------------------------


def run(call: Call, args: list[str]) -> str:
    model = st.model_of(call.state, take_model(args))
    take(args, "--format")
    take(args, "--wait")
    params_file = take(args, "--params")
    params: dict[str, Any] = {}
    if isinstance(params_file, str):
        params = yaml.safe_load(call.read_file(params_file, "action params")) or {}
    if len(args) != 2:
        raise RefusedError(f"fake juju: unsupported run arguments {args}", 2)
    unit, name = args
    results = st.action(call.state, model, unit, name, params)
    return json.dumps(st.task_json(call.state, unit, results))


def ssh(call: Call, args: list[str]) -> str:
    name = take_model(args)
    model = st.model_of(call.state, name)
    container = take(args, "--container")
    if container == "otelcol" and args[0].startswith("otelcol/") and args[1:] == OTELCOL_CONFIG:
        return st.collector_config(name, model["apps"]["loki"]["units"])
    raise RefusedError(f"fake juju: unsupported ssh {args}", 2)


def add_model(call: Call, args: list[str]) -> str:
    take(args, "--no-switch", has_value=False)
    take(args, "--controller")
    call.state["models"][args[0]] = {"apps": {}, "runs": []}
    return ""


def destroy_model(call: Call, args: list[str]) -> str:
    name = st.short_model_name(args[0])
    if name not in call.state["models"]:
        raise RefusedError(f'ERROR model "{name}" not found')
    del call.state["models"][name]
    call.state.setdefault("destroyed", []).append(name)
    return ""


def scale(call: Call, args: list[str], sign: int) -> str:
    model = st.model_of(call.state, take_model(args))
    take(args, "--no-prompt", has_value=False)
    count = int(str(take(args, "--num-units") or 1))
    st.scale(model, args[0], sign * count)
    return ""


def dispatch(call: Call, args: list[str]) -> str:
    state = call.state
    if not args:
        raise RefusedError("fake juju: no command", 2)
    command, rest = args[0], args[1:]
    if command == "controllers":
        return json.dumps(st.controllers_json(state))
    if command == "models":
        return json.dumps(st.models_json(state))
    if command == "status":
        return json.dumps(st.status_json(state, take_model(rest)))
    if command == "show-unit":
        name = take_model(rest)
        take(rest, "--format")
        return json.dumps(st.show_unit_json(state, name, rest[0]))
    commands = {"add-model": add_model, "destroy-model": destroy_model, "deploy": deploy,
                "run": run, "ssh": ssh}  # fmt: skip
    if command in commands:
        return commands[command](call, rest)
    if command in ("add-unit", "remove-unit"):
        return scale(call, rest, 1 if command == "add-unit" else -1)
    raise RefusedError(f"fake juju: unsupported command {args}", 2)


def answer(state: State, argv: list[str]) -> Record:
    """Run one command against `state`, changed in place only when the command succeeds (as a
    refused command changes nothing in Juju); the call's record."""
    call = Call(json.loads(json.dumps(state)), argv)
    out, err, code = "", "", 0
    try:
        out = dispatch(call, list(argv))
    except RefusedError as exc:
        err, code = str(exc) + "\n", exc.code
    else:
        state.clear()
        state.update(call.state)
    return {"argv": argv, "files": call.files, "rc": code, "stdout": out, "stderr": err}


# ---- reading the records -------------------------------------------------------------------


def commands(records: Iterable[Record]) -> list[str]:
    return [r["argv"][0] for r in records]


def unit_action(record: Record) -> tuple[str, str]:
    """(unit, action) of a recorded `juju run`."""
    args = list(record["argv"][1:])
    for flag in ("--model", "--format", "--wait", "--params"):
        take(args, flag)
    unit, name = args
    return unit, name


def params_of(record: Record) -> dict[str, Any]:
    """The params a recorded `juju run` handed over (its --params file, as read)."""
    argv = record["argv"]
    if "--params" not in argv:
        return {}
    path = argv[argv.index("--params") + 1]
    return yaml.safe_load(record["files"][path]["content"]) or {}


def actions_run(records: Iterable[Record]) -> list[tuple[str, str, dict[str, Any]]]:
    """(unit, action, params) of every recorded `juju run`, in order."""
    return [(*unit_action(r), params_of(r)) for r in records if r["argv"][0] == "run"]


# ---- the program ---------------------------------------------------------------------------


def save_state(state: State, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".state-")
    with os.fdopen(fd, "w") as f:
        json.dump(state, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    state_file = Path(os.environ[ENV_STATE])
    state = json.loads(state_file.read_text())
    record = answer(state, argv)
    if record["rc"] == 0:
        save_state(state, state_file)  # (a refused command changed nothing)
    with open(os.environ[ENV_LOG], "a") as f:
        f.write(json.dumps(record) + "\n")
    sys.stdout.write(record["stdout"])
    sys.stderr.write(record["stderr"])
    return record["rc"]
