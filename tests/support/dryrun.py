"""What the Juju dry runs (tests/tools) share: running pytest and `loadgate run` in a fake world
(fake_juju/world.py), and the checks of what they handed to the fake `juju`: every file
readable where the snap reads, every k6 action's params valid for the charm's schema as Juju
validates it (jujuschema.py), the deployed bundle passing the bundle checker."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from loadgate import paths
from loadgate.bundle import catalog as charm_catalog
from loadgate.bundle import check as bundle_check

from .fake_juju.cli import Record, actions_run
from .fake_juju.world import World
from .jujuschema import K6_CHARMCRAFT_YAML, validate_action_params

ROOT = Path(__file__).resolve().parents[2]
K6_ACTIONS = ("start-load", "get-results", "stop-load")


def pytest_run(
    world: World, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """pytest in the world (from the repository, as CI runs the integration suite)."""
    argv = [*world.python("pytest"), "-p", "no:cacheprovider", "-rs", *args]
    return subprocess.run(
        argv, cwd=ROOT, env=world.env(**(env or {})), capture_output=True, text=True, timeout=300
    )


def loadgate_run(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    """`loadgate run --target juju ARGS` in the world."""
    argv = [*world.python("loadgate.cli"), "run", "--target", "juju", *args]
    return subprocess.run(
        argv, cwd=world.root, env=world.env(), capture_output=True, text=True, timeout=300
    )


def loadgate_search(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    """`loadgate search --target juju ARGS` in the world."""
    argv = [*world.python("loadgate.cli"), "search", "--target", "juju", *args]
    return subprocess.run(
        argv, cwd=world.root, env=world.env(), capture_output=True, text=True, timeout=600
    )


def assert_every_file_readable(world: World, calls: list[Record]) -> int:
    """Every file a call named was readable by the (confined) fake juju, and lived where the
    snap can read: under ~/snap/juju/common. Returns how many files were checked."""
    common = world.home / "snap" / "juju" / "common"
    checked = 0
    for call in calls:
        for path, seen in call["files"].items():
            assert seen["readable"], f"juju could not read {path} ({seen['what']}): {call['argv']}"
            assert Path(path).is_relative_to(common), f"{path} is outside {common}"
            checked += 1
    return checked


def assert_params_valid(calls: list[Record]) -> dict[str, int]:
    """Each k6 action's params pass Juju's validation of the charm's schema (defaults inserted
    as `juju run` does must still describe the same run). Returns actions -> count."""
    seen: dict[str, int] = {}
    for unit, action, params in actions_run(calls):
        if unit.startswith("k6/"):
            assert action in K6_ACTIONS, action
            validated = validate_action_params(K6_CHARMCRAFT_YAML, action, params)
            assert {k: validated[k] for k in params} == params
        else:
            assert (unit, action, params) == ("ca/0", "get-ca-certificate", {})
        seen[action] = seen.get(action, 0) + 1
    return seen


def assert_deploy_valid(call: Record, world: World) -> dict[str, Any]:
    """The deployed bundle and overlays pass the bundle checker; the merged bundle."""
    argv = call["argv"]
    bundle = Path(argv[argv.index("--model") + 2])
    overlays = [Path(argv[i + 1]) for i, a in enumerate(argv) if a == "--overlay"]
    assert "--trust" in argv
    assert call["files"][str(bundle)]["content"] == bundle.read_text()
    catalog = charm_catalog.build(paths.upstream_charms_file(), [paths.k6_charmcraft_file()])
    assert [str(p) for p in bundle_check.check_files(bundle, overlays, catalog)] == []
    doc, _ = bundle_check.load(bundle, overlays)
    return doc
