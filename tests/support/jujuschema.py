"""Juju's own validation of charm action parameters, for tests: a wrapper of tools/jujuschema.

tools/jujuschema is a small Go program built against the library Juju 3.6 uses to read a charm's
actions and check `juju run` parameters (github.com/juju/charm/v12 over
github.com/juju/gojsonschema v1.0.0, JSON-Schema draft 4). It is built once with `go build`
into loadgate's binaries cache (`loadgate.paths.bin_dir()`), and rebuilt when its module changes
(the stamp is a hash of its files, as for the pinned upstream binaries).

    jujuschema_binary() -> Path
    check_actions(charmcraft_yaml) -> str
        every action schema loads as Juju loads it (else SchemaRefusedError)
    validate_action_params(charmcraft_yaml, action, params) -> dict
        the params with the schema's defaults inserted, as the controller hands them to the
        charm; ParamsRefusedError (a ValueError) when Juju would refuse them.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loadgate import paths
from loadgate.build import binaries

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"
K6_CHARMCRAFT_YAML = ROOT / "charms" / "k6-k8s" / "charmcraft.yaml"
PART = binaries.Part("jujuschema", "juju-charm-v12.1.1", "jujuschema", ".", minutes=1.0)


class JujuSchemaError(RuntimeError):
    """jujuschema could not be built or run, or was asked something it cannot answer."""


class SchemaRefusedError(JujuSchemaError):
    """Juju would refuse the charm's action schemas (the charm would not deploy)."""


class ParamsRefusedError(ValueError):
    """Juju would refuse these action parameters; `reason` is its one-line message."""

    def __init__(self, action: str, params: Mapping[str, Any], reason: str):
        self.action = action
        self.params = dict(params)
        self.reason = reason
        super().__init__(f"Juju refuses {action} params {json.dumps(self.params)}: {reason}")


def _build(bin_dir: Path) -> Path:
    if shutil.which("go") is None:
        raise JujuSchemaError("`go` is not on PATH: Go >= 1.26 is needed to build tools/jujuschema")
    bin_dir.mkdir(parents=True, exist_ok=True)
    final = binaries.binary_path(PART.name, bin_dir)
    stamp_file = bin_dir / f".{PART.name}.stamp"
    with tempfile.TemporaryDirectory(prefix="loadgate-build-jujuschema-", dir=bin_dir) as tmp:
        staged = Path(tmp) / "jujuschema.new"
        argv = ["go", "build", "-trimpath", "-o", str(staged), "."]
        proc = subprocess.run(
            argv, cwd=TOOLS / PART.module, env=binaries.go_env(), capture_output=True, text=True
        )
        if proc.returncode != 0:
            lines = (proc.stderr or proc.stdout).strip().splitlines() or ["no output"]
            raise JujuSchemaError(
                f"`go build` of tools/jujuschema exited {proc.returncode}: {lines[-1][:300]}"
            )
        staged.chmod(0o755)
        stamp_file.unlink(missing_ok=True)
        os.replace(staged, final)
        stamp_file.write_text(binaries.stamp(PART, TOOLS) + "\n")
    return final


@functools.cache
def jujuschema_binary() -> Path:
    """The built jujuschema program (built on first use, or when tools/jujuschema changed)."""
    bin_dir = paths.bin_dir()
    if binaries.is_current(PART, bin_dir, TOOLS):
        return binaries.binary_path(PART.name, bin_dir)
    return _build(bin_dir)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(jujuschema_binary()), *args], capture_output=True, text=True, timeout=60
    )


def check_actions(charmcraft_yaml: Path = K6_CHARMCRAFT_YAML) -> str:
    """Load every action schema as Juju does; returns jujuschema's `ok: …` line.

    Also refuses an action whose own defaults its schema refuses (Juju would not notice).
    """
    proc = _run("check", str(charmcraft_yaml))
    if proc.returncode == 1:
        raise SchemaRefusedError(proc.stderr.strip())
    if proc.returncode != 0:
        raise JujuSchemaError(f"jujuschema check exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def validate_action_params(
    charmcraft_yaml: Path, action: str, params: Mapping[str, Any]
) -> dict[str, Any]:
    """The params as `juju run` hands them to the charm: validated, then defaults inserted.

    Raises ParamsRefusedError when Juju would refuse them, JujuSchemaError for anything else
    (no such action, an unloadable schema, jujuschema not buildable).
    """
    proc = _run("validate", str(charmcraft_yaml), action, json.dumps(dict(params)))
    if proc.returncode == 1:
        raise ParamsRefusedError(action, params, proc.stderr.strip())
    if proc.returncode != 0:
        raise JujuSchemaError(
            f"jujuschema validate {action} exited {proc.returncode}: {proc.stderr.strip()}"
        )
    result = json.loads(proc.stdout)
    if not isinstance(result, dict):
        raise JujuSchemaError(f"jujuschema validate printed {proc.stdout.strip()!r}, not an object")
    return dict(result)  # pyright: ignore[reportUnknownArgumentType]
