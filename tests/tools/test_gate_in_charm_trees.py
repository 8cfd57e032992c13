"""The gate adopted by the real otelcol and Loki charms' test trees, as docs/charm-ci.md says.

loadgate's wheel is built and installed into a fresh virtualenv with the charms' test stack
(pytest 9, pytest-jubilant 2, jubilant, pytest-asyncio) and what their integration tests import
(sh, tenacity, minio, requests, PyYAML). Beside the real test trees (the otelcol charm's main
from ../shared/charm-sources, the Loki charm's rev244 snapshot) the recipe is added verbatim from
the docs, and pytest runs there as their CI runs it (`tox -e integration -- -k FILE`, with
CHARM_PATH):

(a) no controller: the gate's test is skipped with the reason; the charm's own integration
    tests still collect;
(b) CI mode (LOADGATE_REQUIRE_JUJU=1): the session ends with exit code 4;
(c) the recording fake `juju` (support.fake_juju): the gate deploys the bundle around the
    charm under test (CHARM_PATH) into the charm's own `juju` fixture's model, runs through the
    k6 charm's actions with every command, file and parameter valid, and passes.

The otelcol tree runs without pytest-jubilant (`-p no:pytest-jubilant`, as its lock has none)
and with pytest-asyncio in auto mode (its pyproject); the Loki tree with pytest-jubilant, whose
`juju` its conftest overrides.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.dryrun import assert_deploy_valid, assert_every_file_readable, assert_params_valid
from support.fake_juju.charms import k6_charm, upstream_charm
from support.fake_juju.cli import commands
from support.fake_juju.world import world as fake_world
from test_juju_wheel import source_copy

from loadgate import paths
from loadgate.gate import k6_charm as k6_charm_source

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "charm-ci.md"
GATE_FILE = "test_load_gate.py"
NO_JUJU = "no Juju controller reachable: the `juju` CLI is not on PATH"
# The charms' test stack (issue 31) and what their integration tests import at collection.
TEST_STACK = ("pytest>=9,<10", "pytest-jubilant>=2,<3", "jubilant>=1.10", "pytest-asyncio>=1")
COLLECTION_DEPS = ("sh", "tenacity", "minio", "requests", "PyYAML")


def charm_sources() -> Path:
    return Path(os.environ.get("LOADGATE_CHARM_SOURCES", ROOT.parent / "shared" / "charm-sources"))


def recipe() -> dict[str, str]:
    """The docs' recipe: each ```python block whose first line names its file (`# path`)."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    out: dict[str, str] = {}
    for block in blocks:
        first, _, rest = block.partition("\n")
        if first.startswith("# tests/"):
            out[first[2:].strip()] = rest
    return out


def newest_python() -> str:
    """The newest CPython here (the charms pin 3.14; 3.13 is the closest this machine has)."""
    found = sorted(Path("/root/.pyenv/versions").glob("3.1[1-9].*/bin/python"), reverse=True)
    return str(found[0]) if found else sys.executable


@dataclass(frozen=True)
class Env:
    python: Path
    wheel: Path


@pytest.fixture(scope="module")
def charm_env(tmp_path_factory: pytest.TempPathFactory) -> Env:
    """A fresh venv with loadgate's wheel, the charms' test stack and their tests' imports."""
    tmp = tmp_path_factory.mktemp("charm-env")
    dist = tmp / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(dist), str(source_copy(tmp / "src"))],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    wheel = next(dist.glob("loadgate-*.whl"))
    venv = tmp / "venv"
    subprocess.run([newest_python(), "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"{wheel}[gate]", *TEST_STACK,
         *COLLECTION_DEPS],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return Env(python, wheel)


def with_recipe(tree: Path) -> Path:
    for name, text in recipe().items():
        path = tree / name
        path.parent.mkdir(parents=True, exist_ok=True)
        before = path.read_text() + "\n" if path.exists() else ""
        path.write_text(before + text)
    return tree


@pytest.fixture(scope="module")
def otelcol_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bundle = charm_sources() / "opentelemetry-collector-k8s-operator.bundle"
    tree = tmp_path_factory.mktemp("otelcol") / "opentelemetry-collector-k8s-operator"
    subprocess.run(["git", "clone", "-q", "--branch", "main", str(bundle), str(tree)], check=True)
    return with_recipe(tree)


@pytest.fixture(scope="module")
def loki_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tarball = next(charm_sources().glob("loki-k8s-operator-*.tar.gz"))
    tree = tmp_path_factory.mktemp("loki") / "loki-k8s-operator"
    tree.mkdir()
    with tarfile.open(tarball) as tar:
        tar.extractall(tree, filter="data")
    return with_recipe(tree)


def pytest_in(
    env: Env, tree: Path, base: dict[str, str], *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """pytest as the charm's `tox -e integration` runs it: its tree, its PYTHONPATH."""
    run_env = {
        **base,
        "PATH": f"{base.get('PATH', '')}{os.pathsep}{env.python.parent}",
        "PYTHONPATH": os.pathsep.join(str(tree / p) for p in ("", "src", "lib")),
    }
    argv = [str(env.python), "-m", "pytest", "-p", "no:cacheprovider", "-rs", *args]
    return subprocess.run(
        argv, cwd=tree, env=run_env, capture_output=True, text=True, timeout=timeout
    )


def no_juju_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    keep = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "TMPDIR")}
    return {**keep, "PATH": str(empty), **extra}


TREES = {
    "otelcol": ("otelcol_tree", ("-p", "no:pytest-jubilant"), "test_charm.py::"),
    "loki": ("loki_tree", (), "test_self_monitoring.py::"),
}


@pytest.fixture(params=sorted(TREES))
def tree(request: pytest.FixtureRequest) -> tuple[str, Path, tuple[str, ...], str]:
    fixture, args, own_test = TREES[request.param]
    return request.param, request.getfixturevalue(fixture), args, own_test


def test_the_recipe_is_short_and_uses_only_the_api() -> None:
    found = recipe()
    assert set(found) == {
        "tests/conftest.py", "tests/integration/test_load_gate.py", "tests/load/test_load_gates.py",
    }  # fmt: skip
    pr = found["tests/integration/test_load_gate.py"]
    assert len([line for line in pr.splitlines() if line.strip()]) <= 10
    for text in found.values():
        imports = re.findall(r"^(?:from|import) (\S+)", text, flags=re.MULTILINE)
        assert set(imports) <= {"loadgate.gate"}, imports


def test_without_a_controller_the_gate_skips_and_the_charms_tests_collect(
    charm_env: Env, tree: tuple[str, Path, tuple[str, ...], str], tmp_path: Path
) -> None:
    _, path, args, own_test = tree
    env = no_juju_env(tmp_path)
    listed = pytest_in(charm_env, path, env, *args, "tests/integration", "--collect-only", "-qq")
    assert listed.returncode == 0, listed.stdout[-3000:] + listed.stderr[-3000:]
    assert f"tests/integration/{GATE_FILE}::test_load_gate" in listed.stdout
    assert f"tests/integration/{own_test}" in listed.stdout  # the charm's own tests
    done = pytest_in(charm_env, path, env, *args, "tests/integration", "-k", GATE_FILE)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert re.search(r"\b1 skipped\b", done.stdout), out[-3000:]
    assert f"SKIPPED [1] tests/integration/{GATE_FILE}" in done.stdout
    assert NO_JUJU in done.stdout
    assert f"loadgate: every gate test skipped: {NO_JUJU}" in done.stdout


def test_ci_mode_without_a_controller_ends_the_session(
    charm_env: Env, tree: tuple[str, Path, tuple[str, ...], str], tmp_path: Path
) -> None:
    _, path, args, _ = tree
    env = no_juju_env(tmp_path, LOADGATE_REQUIRE_JUJU="1")
    done = pytest_in(charm_env, path, env, *args, "tests/integration", "-k", GATE_FILE)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-3000:]
    assert f"--require-juju: {NO_JUJU} (1 tests need a Juju model)" in done.stdout


CHARMS = {
    "otelcol": ("opentelemetry-collector-k8s", "dev",
                {"opentelemetry-collector-image": "ubuntu/opentelemetry-collector:0.130-26.04"}),
    "loki": ("loki-k8s", "3.7",
             {"loki-image": "ubuntu/loki:3.7-26.04", "node-exporter-image": "prom/node-exporter"}),
}  # fmt: skip


def test_with_a_controller_the_gate_runs_through_the_k6_charm_and_passes(
    charm_env: Env, tree: tuple[str, Path, tuple[str, ...], str], tmp_path: Path
) -> None:
    app, path, args, _ = tree
    charm, track, images = CHARMS[app]
    packed = upstream_charm(tmp_path / "ci" / f"{charm}_ubuntu@26.04-amd64.charm", charm, track,
                            images)  # fmt: skip
    k6 = k6_charm(tmp_path / "k6" / paths.K6_CHARM_FILE)
    with fake_world(tmp_path, snap=True) as world:
        env = world.env(CHARM_PATH=str(packed), LOADGATE_K6_CHARM=str(k6))
        env["PATH"] = str(world.bin_dir)
        done = pytest_in(charm_env, path, env, *args, "tests/integration", "-k", GATE_FILE)
        calls = world.calls()
        rows = [json.loads(p.read_text()) for p in (world.root / "results").glob("*/result.json")]
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-5000:]
    assert re.search(r"\b1 passed\b", done.stdout), out[-3000:]
    assert all(c["rc"] == 0 for c in calls), [c for c in calls if c["rc"]]
    first_use = list(dict.fromkeys(commands(calls)))
    assert first_use[:2] == ["controllers", "models"]  # the reachability check
    assert {"add-model", "deploy", "run", "destroy-model"} <= set(first_use)  # the charm's model
    assert_every_file_readable(world, calls)
    assert assert_params_valid(calls)["start-load"] == 1
    deploy = next(c for c in calls if c["argv"][0] == "deploy")
    doc = assert_deploy_valid(deploy, world)
    deployed = doc["applications"][app]
    assert Path(deployed["charm"]).read_bytes() == packed.read_bytes()  # the charm under test
    loki_options = doc["applications"]["loki"].get("options", {})
    if app == "otelcol":  # Loki must not be the limit of an otelcol gate
        assert loki_options == {"ingestion-rate-mb": 32, "ingestion-burst-size-mb": 64}
    else:  # a Loki gate measures Loki's own limits
        assert loki_options == {}
    assert "traces-standin" not in doc["applications"]  # the PR gate runs otlp-logs only
    assert len(rows) == 1
    assert rows[0]["verdict"] == "PASS"
    assert rows[0]["labels"][f"{app}_charm"] == "local"


def test_the_wheel_carries_the_k6_charms_source(charm_env: Env, tmp_path: Path) -> None:
    """An installed loadgate can pack the k6 charm: its source is package data."""
    probe = (
        "import json; from loadgate.gate import k6_charm; "
        "root = k6_charm.source_dir(); "
        "print(json.dumps([str(p.relative_to(root)) for p in k6_charm.source_files(root)]))"
    )
    done = subprocess.run([str(charm_env.python), "-c", probe], capture_output=True, text=True,
                          cwd=tmp_path, check=True)  # fmt: skip
    files = set(json.loads(done.stdout))
    assert {"charmcraft.yaml", "pyproject.toml", "uv.lock", "src/charm.py"} <= files
    assert {"src/k6/otlp-logs.js", "src/loadgate_contract/spec.py"} <= files
    assert not [f for f in files if f.startswith("tests/") or "__pycache__" in f]
    source = ROOT / "charms" / "k6-k8s"  # the wheel carries every file the checkout packs
    assert files == {str(p.relative_to(source)) for p in k6_charm_source.source_files(source)}


def test_the_gate_imports_no_plots_statistics_or_rendering(charm_env: Env, tmp_path: Path) -> None:
    """loadgate[gate] installs none of the CLI's, the local stack's, the report's or the
    comparison's dependencies, and the plugin path imports none of them."""
    probe = (
        "import json, sys, importlib.util; import loadgate.gate.plugin; "
        "heavy = ('matplotlib', 'scipy', 'rich', 'cryptography', 'uv', 'packaging', 'ops'); "
        "print(json.dumps({'imported': [m for m in heavy if m in sys.modules], "
        "'installed': [m for m in heavy if importlib.util.find_spec(m)]}))"
    )
    done = subprocess.run([str(charm_env.python), "-c", probe], capture_output=True, text=True,
                          cwd=tmp_path, check=True)  # fmt: skip
    found = json.loads(done.stdout)
    assert found["imported"] == []
    # What the charms' test stack itself brings (minio and jubilant bring none of these).
    assert set(found["installed"]) <= {"packaging"}, found
