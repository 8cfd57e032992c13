"""The gate's pytest plugin in real pytest runs (subprocesses; its pure parts are tested in
tests/unit, and beside the real charms' test trees in test_gate_in_charm_trees.py):

- the test tree's own `juju` fixture is the gate's model, whatever its scope (issue 31);
- options another plugin registered first are reused, not added again;
- no controller: one skip reason locally, an error in CI mode;
- `pytest tests` collects the whole tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.fake_juju.world import world as fake_world

ROOT = Path(__file__).resolve().parents[2]
NO_JUJU = "no Juju controller reachable: the `juju` CLI is not on PATH"

CONFTEST = 'pytest_plugins = ["loadgate.gate.plugin"]\n'
TESTS = """
import pytest


def test_without_the_model(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.getoption("--otelcol-revision") in (None, "5")


def test_with_the_model(loadgate) -> None:
    raise AssertionError("needs a controller")
"""
# A charm's own `juju` fixture of each scope, and a test that takes it beside the gate's.
OWN_JUJU = """
import jubilant
import pytest


@pytest.fixture(scope="{scope}")
def juju():
    with jubilant.temp_model() as juju:
        yield juju
"""
SAME_MODEL = """
def test_the_gate_runs_in_the_charms_model(loadgate, juju) -> None:
    assert loadgate.model == juju.model
    assert loadgate.charm_under_test == "otelcol"


def test_again_in_the_same_module(loadgate, juju) -> None:
    assert loadgate.model == juju.model
"""


def clean_env(path: str, **extra: str) -> dict[str, str]:
    """This environment without Juju, loadgate or pytest settings, with PATH as given."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JUJU", "LOADGATE_", "PYTEST", "TOX_", "CHARM_PATH"))
    }
    env["PATH"] = path
    env.update(extra)
    return env


def python_only_path(tmp_path: Path) -> str:
    """A PATH with nothing on it but an empty folder: no juju anywhere."""
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    return str(empty)


def run_pytest(
    cwd: Path, env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A charm repository's test tree that loads the plugin from its top-level conftest."""
    folder = tmp_path / "charm-repo"
    (folder / "tests").mkdir(parents=True)
    (folder / "tests" / "conftest.py").write_text(CONFTEST)
    (folder / "tests" / "test_gate.py").write_text(TESTS)
    return folder


# ---- the tree's own `juju` fixture, any scope --------------------------------------------


@pytest.mark.parametrize("scope", ["function", "module", "session"])
def test_the_trees_juju_fixture_is_the_gates_model(
    project: Path, tmp_path: Path, scope: str
) -> None:
    """No ScopeMismatch whatever the scope of the charm's `juju`: the gate's fixtures are
    function-scoped and take the model from it (before: `juju_target` -> `deployed` -> the
    charm's module-scoped `juju` from a session-scoped request)."""
    (project / "tests" / "integration").mkdir()
    (project / "tests" / "integration" / "conftest.py").write_text(OWN_JUJU.format(scope=scope))
    (project / "tests" / "integration" / "test_same.py").write_text(SAME_MODEL)
    with fake_world(tmp_path, snap=False) as world:
        done = run_pytest(project, world.env(), "tests/integration", "-v")
        calls = world.calls()
    out = done.stdout + done.stderr
    assert "ScopeMismatch" not in out
    assert done.returncode == 0, out[-3000:]
    assert "2 passed" in done.stdout
    models = [c["argv"] for c in calls if c["argv"][0] == "add-model"]
    assert len(models) == (2 if scope == "function" else 1), models  # the charm's, not ours


def test_options_another_plugin_registered_are_reused(project: Path, tmp_path: Path) -> None:
    """A plugin registered before the gate's (-p, or an installed one) adds --model and
    --controller: the gate reuses them, and --controller's value reaches the skip check."""
    (project / "other_plugin.py").write_text(
        "def pytest_addoption(parser):\n"
        "    parser.addoption('--model')\n"
        "    parser.addoption('--controller')\n"
    )
    (project / "tests" / "test_both.py").write_text(
        "def test_both_loaded(pytestconfig):\n"
        "    assert pytestconfig.getoption('--controller') == 'typo'\n"
    )
    with fake_world(tmp_path, snap=False) as world:
        env = {**world.env(), "PYTHONPATH": str(project)}
        done = run_pytest(project, env, "-p", "other_plugin", "--controller", "typo", "-v")
    out = done.stdout + done.stderr
    assert "conflicting option string" not in out
    assert done.returncode == 0, out[-3000:]
    assert "test_both_loaded PASSED" in done.stdout
    assert "reusing options registered by another plugin: ['--model', '--controller']" in out
    assert "no Juju controller reachable: controller 'typo' is not one of ['k8s']" in out


# ---- no controller: a skip locally, an error in CI (point 11) ------------------------------


def test_without_juju_model_tests_skip_with_one_reason(project: Path, tmp_path: Path) -> None:
    done = run_pytest(project, clean_env(python_only_path(tmp_path)))
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 passed, 1 skipped" in done.stdout
    assert f"SKIPPED [1] tests/test_gate.py: {NO_JUJU}" in done.stdout
    assert f"loadgate: every gate test skipped: {NO_JUJU}" in done.stdout


@pytest.mark.parametrize(
    ("args", "env"),
    [(("--require-juju",), {}), ((), {"LOADGATE_REQUIRE_JUJU": "1"})],
    ids=["option", "env"],
)
def test_ci_mode_fails_without_a_controller(
    project: Path, tmp_path: Path, args: tuple[str, ...], env: dict[str, str]
) -> None:
    done = run_pytest(project, clean_env(python_only_path(tmp_path), **env), *args)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-3000:]
    assert f"--require-juju: {NO_JUJU} (1 tests need a Juju model)" in done.stdout
    assert "passed" not in done.stdout.splitlines()[-1]


def test_ci_mode_fails_on_a_controller_typo(project: Path, tmp_path: Path) -> None:
    with fake_world(tmp_path, snap=False) as world:
        done = run_pytest(
            project, {**world.env(), "LOADGATE_REQUIRE_JUJU": "1"}, "--controller", "k8z"
        )
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--require-juju: no Juju controller reachable: controller 'k8z' is not one of" in (
        done.stdout
    )


def test_ci_mode_runs_nothing_when_no_test_needs_the_model(project: Path, tmp_path: Path) -> None:
    done = run_pytest(
        project,
        clean_env(python_only_path(tmp_path), LOADGATE_REQUIRE_JUJU="1"),
        "tests/test_gate.py::test_without_the_model",
    )
    assert done.returncode == 0, done.stdout[-2000:]


# ---- pytest tests collects (point 15) ------------------------------------------------------


def test_the_whole_tree_collects(tmp_path: Path) -> None:
    done = run_pytest(ROOT, clean_env(python_only_path(tmp_path)), "--collect-only", "-q", "tests")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    assert any(line.startswith("tests/integration/") for line in collected)
    assert any(line.startswith("tests/unit/") for line in collected)
    assert any(line.startswith("tests/tools/") for line in collected)
    assert any(line.startswith("tests/local/") for line in collected)
    # The gate runs once per scenario of gates.yaml; the Loki copies only for otlp-logs.
    gates = [line for line in collected if "test_load_gates.py::test_gates_pass" in line]
    assert [line.split("[", 1)[1] for line in gates] == [
        "otlp-logs]", "otlp-metrics]", "otlp-traces]", "loki-push]", "logql-query]",
    ]  # fmt: skip
    copies = [line for line in collected if "test_every_loki_copy_is_complete" in line]
    assert [line.split("::", 1)[1] for line in copies] == [
        "test_every_loki_copy_is_complete[otlp-logs]"
    ]


def test_the_integration_suite_skips_with_one_reason(tmp_path: Path) -> None:
    """What `tox -e integration` runs, without a controller."""
    done = run_pytest(ROOT, clean_env(python_only_path(tmp_path)), "tests/integration")
    assert done.returncode == 0, done.stdout[-3000:]
    # The gate's per-scenario tests for each of the 5 scenarios of gates.yaml (4 x 5, and the
    # Loki copies for otlp-logs only), 9 of the deployment and scaling, 8 of the saturation gate.
    assert "38 skipped" in done.stdout
    reasons = {
        line.split(": ", 1)[1] for line in done.stdout.splitlines() if line.startswith("SKIPPED")
    }
    assert reasons == {NO_JUJU}


def test_the_integration_suite_fails_in_ci_mode(tmp_path: Path) -> None:
    env = clean_env(python_only_path(tmp_path), LOADGATE_REQUIRE_JUJU="1")
    done = run_pytest(ROOT, env, "tests/integration")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert f"--require-juju: {NO_JUJU} (38 tests need a Juju model)" in done.stdout
    assert "every gate test skipped" not in done.stdout
