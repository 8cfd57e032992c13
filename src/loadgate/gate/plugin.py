"""pytest plugin of the charm CI gate: the `loadgate` fixture, its options, and the skip rule.

Load it from the top-level conftest.py of the test tree (it is not registered as an entry point,
so it never loads by itself; pytest refuses `pytest_plugins` in a conftest below the top level):

    pytest_plugins = ["loadgate.gate.plugin"]

Its fixtures live beside the charm's own: every name is `loadgate*`. The model is the test tree's
own `juju` fixture when there is one (whatever its scope: the charms' are module-scoped,
`jubilant.temp_model`), or pytest-jubilant's, which then also gives the model's options
(`--juju-model`, `--juju-controller`, `--no-juju-teardown`); else the gate makes its own
(`--model`, `--keep-models` or `$KEEP_MODELS`, `--controller`), one for the session. No fixture
of a wider scope depends on one of a narrower one: `loadgate` is function-scoped, and the
deployment it makes is remembered per model for the session.

Tests that use the gate (the `loadgate` fixture) are skipped with one reason when no Juju
controller answers; the charm's own tests are left alone. With --require-juju (or
$LOADGATE_REQUIRE_JUJU=1, for CI) that reason ends the session instead, with exit code 4.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import jubilant
import pytest

from loadgate import paths
from loadgate.juju import reachability, settings

from . import options as opts
from . import plan as plan_mod
from .api import LoadGate
from .model_gate import ModelGate

WAIT_TIMEOUT = 30 * 60.0
_GATE_FIXTURES = frozenset({"loadgate", "loadgate_model", "loadgate_own_model", "loadgate_state"})
_SCENARIO_FIXTURE = "loadgate_scenario"
_SKIP_REASON = pytest.StashKey[str | None]()
_PLAN = pytest.StashKey["plan_mod.Plan | plan_mod.PlanError"]()
_RUNS = pytest.StashKey["tuple[str, ...] | None"]()
_GATES = pytest.StashKey[dict[str, ModelGate]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    opts.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    opts.configure(config)
    config.stash[_GATES] = {}
    config.addinivalue_line(
        "markers", "gate_scenarios(*names): run the test only for these gated scenarios"
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    for gate in config.stash.get(_GATES, {}).values():
        gate.close()


def pytest_report_header(config: pytest.Config) -> list[str]:
    return opts.header_lines(config)


def _uses_gate(item: pytest.Item) -> bool:
    """Whether a test uses the gate (and so a Juju model)."""
    return bool(_GATE_FIXTURES.intersection(getattr(item, "fixturenames", ())))


@pytest.hookimpl(trylast=True)  # after -k/-m deselection: a deselected gate test needs no model
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a reachable controller, skip every gate test with one reason; in CI mode
    (--require-juju) exit with that reason instead."""
    gate_items = [item for item in items if _uses_gate(item)]
    if not gate_items:
        return
    reason = reachability.skip_reason(opts.controller(config))
    if reason is None:
        return
    if opts.require_juju(config):
        pytest.exit(
            f"--require-juju: {reason} ({len(gate_items)} tests need a Juju model)",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )
    config.stash[_SKIP_REASON] = reason
    marker = pytest.mark.skip(reason=reason)
    for item in gate_items:
        item.add_marker(marker)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that takes `loadgate_scenario` runs once per gated scenario;
    `@pytest.mark.gate_scenarios(name, ...)` keeps it to the scenarios named."""
    if _SCENARIO_FIXTURE not in metafunc.fixturenames:
        return
    try:
        names = list(opts.gated_scenarios(metafunc.config))
    except (settings.SettingsError, plan_mod.PlanError) as exc:
        raise pytest.UsageError(f"loadgate: {exc}") from None
    marker = metafunc.definition.get_closest_marker("gate_scenarios")
    if marker is not None:
        names = [name for name in names if name in marker.args]
    metafunc.parametrize(_SCENARIO_FIXTURE, names, scope="module")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Which scenarios the selected gate tests run, so that the deployment serves those: a
    `loadgate_scenario` parameter names its own; any other gate test runs the first gated one
    (`loadgate.run()`, the saturation gate: otlp-logs)."""
    items = [item for item in session.items if _uses_gate(item)]
    if not items:
        return
    try:
        gated = opts.gated_scenarios(session.config)
    except (settings.SettingsError, plan_mod.PlanError):
        return  # the gate's tests report it
    runs: set[str] = set()
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        runs.add(str(params.get(_SCENARIO_FIXTURE, gated[0])))
    session.config.stash[_RUNS] = tuple(name for name in gated if name in runs)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    reason = config.stash.get(_SKIP_REASON, None)
    if reason:
        terminalreporter.write_line(f"loadgate: every gate test skipped: {reason}")


# ---- fixtures ------------------------------------------------------------------------------


def _plan(config: pytest.Config) -> plan_mod.Plan:
    """The session's plan, resolved at its first use; a bad option fails each gate test."""
    if _PLAN not in config.stash:
        try:
            runs = config.stash.get(_RUNS, None)
            config.stash[_PLAN] = plan_mod.resolve(opts.asked(config), Path(config.rootpath), runs)
        except plan_mod.PlanError as exc:
            config.stash[_PLAN] = exc
    found = config.stash[_PLAN]
    if isinstance(found, plan_mod.PlanError):
        raise pytest.UsageError(f"loadgate: {found}")
    return found


@pytest.fixture(scope="session")
def loadgate_own_model(pytestconfig: pytest.Config) -> Iterator[jubilant.Juju]:
    """The gate's own model, when the test tree has no `juju` fixture: --model (kept), else a
    temporary model (kept with --keep-models or $KEEP_MODELS)."""
    name, controller, keep = opts.own_model(pytestconfig)
    if name:
        target = f"{controller}:{name}" if controller else name
        yield jubilant.Juju(model=target, wait_timeout=WAIT_TIMEOUT)
        return
    with jubilant.temp_model(keep=keep, controller=controller) as juju:
        juju.wait_timeout = WAIT_TIMEOUT
        yield juju


@pytest.fixture
def loadgate_model(request: pytest.FixtureRequest) -> jubilant.Juju:
    """The model the gate runs on: the test tree's (or pytest-jubilant's) `juju`, whatever its
    scope, else the gate's own."""
    try:
        juju = request.getfixturevalue("juju")
    except pytest.FixtureLookupError as exc:
        if exc.argname != "juju":
            raise
        juju = request.getfixturevalue("loadgate_own_model")
    if not isinstance(juju, jubilant.Juju):
        raise TypeError(f"the `juju` fixture gave {type(juju).__name__}, not a jubilant.Juju")
    return juju


@pytest.fixture
def loadgate_state(request: pytest.FixtureRequest) -> ModelGate:
    """The gate's state on the model under test, one per model for the session: loadgate's own
    suites read its target and records. Not part of the stable API: charm repositories use
    `loadgate`."""
    config = request.config
    plan = _plan(config)  # before any model exists: a bad option changes nothing
    juju: jubilant.Juju = request.getfixturevalue("loadgate_model")
    gates = config.stash[_GATES]
    key = str(juju.model)
    if key not in gates:
        gates[key] = ModelGate(juju, plan, paths.results_dir())
    return gates[key]


@pytest.fixture
def loadgate(loadgate_state: ModelGate) -> LoadGate:
    """The load gate on the model under test (see loadgate.gate.LoadGate)."""
    return LoadGate(loadgate_state)
