"""The gate adopted by the real otelcol and Loki charms' test trees, as docs/charm-ci.md says.

loadgate's wheel is built and installed into a fresh virtualenv with the charms' test stack
(pytest 9, pytest-jubilant 2, jubilant, pytest-asyncio) and what their integration tests import
(sh, tenacity, minio, requests, PyYAML). Beside the real test trees (the otelcol charm's main
from ../shared/charm-sources, the Loki charm's rev244 snapshot) the recipe is added verbatim from
the docs, and pytest runs there as their CI runs it (`tox -e integration -- -k FILE`, with
CHARM_PATH, the plugin loaded by the docs' `-p loadgate.gate.plugin`):

(a) no controller: the gate's test is skipped with the reason; the charm's own integration
    tests still collect;
(b) CI mode (LOADGATE_REQUIRE_JUJU=1): the session ends with exit code 4;
(c) the recording fake `juju` (support.fake_juju): the gate deploys the bundle around the
    charm under test (CHARM_PATH) into the charm's own `juju` fixture's model, runs through the
    k6 charm's actions with every command, file and parameter valid, and passes.

The docs' tox envs, merged into each charm's own tox.ini, are rendered by tox itself: the plugin
is loaded where the gate runs (integration, qualitygate-*) and nowhere else, and each promotion
gate deploys the revision of the channel it promotes from. The docs' runner script prepares Juju
only on CI where no controller answers.

The otelcol tree runs without pytest-jubilant (`-p no:pytest-jubilant`, as its lock has none)
and with pytest-asyncio in auto mode (its pyproject); the Loki tree with pytest-jubilant, whose
`juju` its conftest overrides.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shutil
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
from test_juju_wheel import build_wheel

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
    """The docs' recipe: each ```python or ```bash block whose first line names its file
    (`# tests/...`)."""
    blocks = re.findall(r"```(?:python|bash)\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    out: dict[str, str] = {}
    for block in blocks:
        first, _, rest = block.partition("\n")
        if first.startswith("# tests/"):
            out[first[2:].strip()] = rest
    return out


def tox_blocks() -> dict[str, str]:
    """The docs' ```ini blocks by charm (`# tox.ini of the otelcol charm...`)."""
    out: dict[str, str] = {}
    for block in re.findall(r"```ini\n(.*?)```", DOC.read_text(), flags=re.DOTALL):
        m = re.match(r"# tox\.ini of the (\w+) charm", block)
        if m:
            out[m.group(1).lower()] = block
    return out


def plugin_args() -> tuple[str, ...]:
    """What the docs' integration env passes pytest to load the gate (both charms the same)."""
    found = set()
    for block in tox_blocks().values():
        m = re.search(r"\[testenv:integration\]\ncommands =\n\s+uv run \S+ pytest (-p \S+) ", block)
        assert m, block
        found.add(m.group(1))
    assert found == {"-p loadgate.gate.plugin"}, found
    return tuple(found.pop().split())


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
    wheel = build_wheel(tmp)
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
    argv = [str(env.python), "-m", "pytest", "-p", "no:cacheprovider", "-rs", *plugin_args(), *args]
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
        "tests/integration/test_load_gate.py", "tests/load/test_load_gates.py",
        "tests/load/prepare-runner.sh",
    }  # fmt: skip
    pr = found["tests/integration/test_load_gate.py"]
    assert len([line for line in pr.splitlines() if line.strip()]) <= 10
    for name, text in found.items():
        if name.endswith(".py"):
            imports = re.findall(r"^(?:from|import) (\S+)", text, flags=re.MULTILINE)
            assert set(imports) <= {"loadgate.gate"}, imports
    # No conftest: the plugin is loaded by the tox envs that run the gate, not by every suite.
    assert not [name for name in found if name.endswith("conftest.py")]
    assert "pytest_plugins = " not in DOC.read_text()


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


# ---- the docs' tox envs, rendered by tox in each charm's own tox.ini ----------------------------

CHARM_TOX = {"otelcol": "otelcol_tree", "loki": "loki_tree"}
PROMOTIONS = {"beta": "edge", "candidate": "beta", "stable": "candidate"}  # env -> channel risk


def merged_tox_ini(tree: Path, block: str) -> str:
    """The charm's tox.ini with the docs' block merged in: its keys set, its sections added."""

    def parser() -> configparser.ConfigParser:
        p = configparser.ConfigParser(interpolation=None, strict=False)
        p.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
        return p

    ini, docs = parser(), parser()
    ini.read_string((tree / "tox.ini").read_text())
    docs.read_string(block)
    for section in docs.sections():
        if not ini.has_section(section):
            ini.add_section(section)
        for key, value in docs.items(section):
            ini.set(section, key, value)
    out: list[str] = []
    for section in ini.sections():
        out.append(f"[{section}]")
        for key, value in ini.items(section):
            out.append(f"{key} = " + value.replace("\n", "\n  "))
        out.append("")
    return "\n".join(out)


def tox_config(folder: Path, envs: list[str], **env: str) -> dict[str, dict[str, str]]:
    """`tox config` of these envs: env -> key -> value (continuation lines joined by \\n)."""
    done = subprocess.run(
        [sys.executable, "-m", "tox", "config", "-e", ",".join(envs), "-k", "commands",
         "commands_pre", "pass_env", "set_env"],
        cwd=folder, capture_output=True, text=True, timeout=120,
        env={**os.environ, **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    key = ""
    for line in done.stdout.splitlines():
        if line.startswith("[testenv:"):
            current = out.setdefault(line[len("[testenv:") : -1], {})
        elif line.startswith("  ") and key:
            current[key] = f"{current[key]}\n{line.strip()}".lstrip("\n")
        elif " = " in line or line.endswith(" ="):
            key, _, value = line.partition(" =")
            current[key] = value.strip()
    return out


@pytest.fixture(params=sorted(CHARM_TOX))
def charm_tox(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    """The charm's tox.ini with the docs' envs, alone in a folder (tox reads only it)."""
    charm = request.param
    tree = request.getfixturevalue(CHARM_TOX[charm])
    folder = tmp_path / charm
    folder.mkdir()
    (folder / "tox.ini").write_text(merged_tox_ini(tree, tox_blocks()[charm]))
    return charm, folder


def test_the_docs_give_a_tox_block_per_charm() -> None:
    assert set(tox_blocks()) == set(CHARM_TOX)


def test_the_plugin_is_loaded_where_the_gate_runs_and_nowhere_else(
    charm_tox: tuple[str, Path],
) -> None:
    charm, folder = charm_tox
    others = ["lint", "static", "unit"] + (["interface"] if charm == "loki" else [])
    gates = ["integration"] + [f"qualitygate-{name}" for name in PROMOTIONS]
    config = tox_config(folder, others + gates)
    for name in gates:
        assert "pytest -p loadgate.gate.plugin " in config[name]["commands"], (name, config[name])
    for name in others:
        assert "loadgate" not in config[name]["commands"], (name, config[name]["commands"])
    # The integration env keeps the charm's own command otherwise, and its CHARM_PATH.
    assert "--exitfirst" in config["integration"]["commands"]
    assert "CHARM_PATH" in config["integration"]["pass_env"].split("\n")


def test_each_promotion_gate_deploys_the_revision_it_promotes(charm_tox: tuple[str, Path]) -> None:
    charm, folder = charm_tox
    envs = [f"qualitygate-{name}" for name in PROMOTIONS]
    for track, extra in (("dev", {}), ("2", {"LOADGATE_TRACK": "2"})):
        config = tox_config(folder, envs, **extra)
        for name, risk in PROMOTIONS.items():
            got = config[f"qualitygate-{name}"]
            channel = f"{track}/{risk}"
            assert "LOADGATE_REQUIRE_JUJU=1" in got["set_env"].split("\n")
            # A packed charm from the environment would be deployed instead: none is passed.
            assert "CHARM_PATH" not in got["pass_env"].split("\n")
            assert got["commands_pre"].startswith("bash ")
            assert got["commands_pre"].split("\n")[0].endswith("/tests/load/prepare-runner.sh")
            assert "/tests/load" in got["commands"]
            if charm == "otelcol":
                assert f"--otelcol-channel {channel}" in got["commands"], got
            else:
                charm_file = f"{folder}/build/loki-k8s.charm"
                assert (
                    f"juju download loki-k8s --channel {channel} --filepath {charm_file}"
                    in (got["commands_pre"])
                ), got
                assert f"--loki-charm {charm_file}" in got["commands"], got
            other_risks = set(PROMOTIONS.values()) - {risk}
            both = f"{got['commands_pre']} {got['commands']} "
            assert not [r for r in other_risks if f"{track}/{r} " in both], got


# ---- the docs' runner script -------------------------------------------------------------------


def runner_script(tmp_path: Path) -> Path:
    script = tmp_path / "prepare-runner.sh"
    script.write_text(recipe()["tests/load/prepare-runner.sh"])
    return script


def fake_bin(folder: Path, log: Path, **programs: str) -> Path:
    """Programs that log their argv and then run the given shell body."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, body in programs.items():
        path = folder / name
        path.write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\n{body}\n')
        path.chmod(0o755)
    return folder


def run_script(script: Path, bin_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash") or "/bin/bash"
    path = f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"
    keep = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG")}
    return subprocess.run([bash, str(script)], capture_output=True, text=True, timeout=60,
                          env={**keep, "PATH": path, **env})  # fmt: skip


def test_the_runner_script_leaves_a_controller_alone(tmp_path: Path) -> None:
    log = tmp_path / "calls"
    bin_dir = fake_bin(tmp_path / "bin", log, juju="exit 0", sudo="exit 0")
    done = run_script(runner_script(tmp_path), bin_dir, CI="true")
    assert done.returncode == 0, done.stderr
    assert log.read_text().splitlines() == ["juju show-controller"]


def test_the_runner_script_prepares_nothing_off_ci(tmp_path: Path) -> None:
    log = tmp_path / "calls"
    bin_dir = fake_bin(tmp_path / "bin", log, juju="exit 1", sudo="exit 0")
    done = run_script(runner_script(tmp_path), bin_dir)
    assert done.returncode == 0, done.stderr
    assert "no Juju controller" in done.stderr
    assert log.read_text().splitlines() == ["juju show-controller"]  # no sudo


def test_the_runner_script_prepares_juju_on_ci_as_the_pull_request_jobs(tmp_path: Path) -> None:
    log = tmp_path / "calls"
    juju = 'case "$1" in show-controller) exit 1 ;; *) exit 0 ;; esac'
    bin_dir = fake_bin(tmp_path / "bin", log, juju=juju, sudo="exit 0")
    done = run_script(runner_script(tmp_path), bin_dir, CI="true")
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == "juju show-controller"
    assert calls[1].startswith("sudo rm -rf /usr/share/dotnet ")  # the disk clean-up
    assert calls[2:] == [
        "sudo docker image prune --all --force",
        "sudo snap install concierge --classic",
        "sudo -E concierge prepare -p k8s",
        "juju model-defaults -c concierge-k8s automatically-retry-hooks=true",
    ]
