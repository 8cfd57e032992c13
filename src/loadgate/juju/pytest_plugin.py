"""pytest plugin of the charm CI gate: options, a model with the bundle deployed, the k6 charm.

Load it from the top-level conftest.py of the test tree (it is not registered as an entry point,
so it never loads by itself; pytest refuses `pytest_plugins` in a conftest below the top level):

    pytest_plugins = ["loadgate.juju.pytest_plugin"]

Options follow pytest-operator where they overlap (--model, --keep-models, --controller): when
pytest-operator (or another plugin) has registered one already, that option is reused, not added
again. Loaded from a conftest, this plugin registers after the installed plugins, so it always
sees theirs.

Which charms: the bundle's (Charmhub channels, and this repository's k6 charm packed next to
the bundle by scripts/pack-k6-charm), the otelcol revision of --otelcol-revision, or a packed
charm in place of an application: --otelcol-charm, --loki-charm, --k6-charm (or
$LOADGATE_OTELCOL_CHARM, $LOADGATE_LOKI_CHARM, $LOADGATE_K6_CHARM). $CHARM_PATH means nothing
here: in a charm repository it names that repository's own charm.

Tests that use the model (the `juju` fixture, directly or through another fixture) are skipped
with one reason when no Juju controller answers; with --require-juju (or
$LOADGATE_REQUIRE_JUJU=1, for CI) that is an error instead, and pytest exits non-zero.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import jubilant
import pytest

from loadgate.contract.scenarios import OTLP_TRACES
from loadgate.contract.spec import RunSpec

from .. import paths
from ..targets.juju import JujuTarget
from . import deploy, model, reachability, saturation_settings, settings, staging
from . import deployed as deployed_mod

WAIT_TIMEOUT = 30 * 60.0
ENV_REQUIRE = "LOADGATE_REQUIRE_JUJU"
CHARM_ENV = {
    "otelcol": "LOADGATE_OTELCOL_CHARM",
    "loki": "LOADGATE_LOKI_CHARM",
    "k6": "LOADGATE_K6_CHARM",
}
MODEL_FIXTURE = "juju"
SCENARIO_FIXTURE = "gate_scenario"
TRACES_OVERLAY = "traces-standin.yaml"
SKIP_REASON = pytest.StashKey[str | None]()
SHARED = pytest.StashKey[list[str]]()


def registered_options(parser: pytest.Parser) -> set[str]:
    """Option strings some plugin has already registered with this parser.

    pytest has no public way to ask; its Parser keeps each group's options (pytest 8 and 9).
    """
    groups: list[Any] = [
        getattr(parser, "_anonymous", None),
        *getattr(parser, "_groups", []),
    ]
    return {
        name
        for group in groups
        if group is not None
        for opt in getattr(group, "options", [])
        for name in opt.names()
    }


def _add(group: Any, taken: set[str], shared: list[str], *names: str, **kwargs: Any) -> None:
    """Add an option unless another plugin (e.g. pytest-operator) already did: then reuse it.

    argparse only refuses a duplicate when the parser is built, as an ArgumentError no plugin
    can catch, so the check comes first.
    """
    if taken.intersection(names):
        shared.extend(names)
        return
    try:
        group.addoption(*names, **kwargs)
    except (ValueError, argparse.ArgumentError):  # registered where registered_options can't see
        shared.extend(names)
        return
    taken.update(names)


def pytest_addoption(parser: pytest.Parser) -> None:
    taken = registered_options(parser)
    shared: list[str] = []
    group = parser.getgroup("loadgate-juju", "loadgate charm CI gate (Juju)")

    def add(*names: str, **kwargs: Any) -> None:
        _add(group, taken, shared, *names, **kwargs)

    add("--model", help="use this existing model (kept) instead of a temporary one")
    add("--keep-models", action="store_true", help="keep the temporary model")
    add("--controller", help="Juju controller (default: the current one)")
    add(
        "--require-juju",
        action="store_true",
        help=f"no reachable controller is an error, not a skip (also ${ENV_REQUIRE}=1; for CI)",
    )
    add("--otelcol-revision", help="otelcol revision under test (default: revisions.yaml)")
    add("--otelcol-channel", help="otelcol channel (default: revisions.yaml)")
    for app, env in CHARM_ENV.items():
        add(
            f"--{app}-charm",
            help=f"deploy this packed charm as `{app}` (default ${env}; else the bundle's)",
        )
    add(
        "--resource",
        action="append",
        default=[],
        help="APP:RESOURCE=IMAGE for a packed charm whose metadata names no image (repeatable)",
    )
    add("--bundle", help="bundle file (default: loadgate's bundles/bundle.yaml)")
    add("--overlay", action="append", default=[], help="extra overlay (repeatable)")
    add(
        "--revisions-file",
        help="default: the tested repository's tests/integration/revisions.yaml, else loadgate's",
    )
    add("--gates-file", help="default tests/integration/gates.yaml, else loadgate's")
    add(
        "--gate-scenario",
        action="append",
        default=[],
        help="gate only this scenario of gates.yaml `scenarios` (repeatable; default: every one)",
    )
    _SHARED_AT_ADD[:] = shared


# Options found registered by another plugin, from pytest_addoption to pytest_configure.
_SHARED_AT_ADD: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SHARED] = list(_SHARED_AT_ADD)
    config.addinivalue_line(
        "markers", "gate_scenarios(*names): run the test only for these gated scenarios"
    )


def require_juju(option: bool, env: Mapping[str, str]) -> bool:
    """--require-juju, or $LOADGATE_REQUIRE_JUJU set to 1/true/yes."""
    return option or env.get(ENV_REQUIRE, "").strip().lower() in ("1", "true", "yes")


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines: list[str] = []
    shared = config.stash.get(SHARED, [])
    if shared:
        lines.append(f"loadgate juju: reusing options registered by another plugin: {shared}")
    if os.environ.get("CHARM_PATH"):
        lines.append(
            "loadgate juju: $CHARM_PATH is not read (it names a repository's own charm); "
            "use --otelcol-charm, --loki-charm or --k6-charm"
        )
    return lines


def needs_model(item: pytest.Item) -> bool:
    """Whether a test uses the Juju model (the `juju` fixture, directly or not)."""
    return MODEL_FIXTURE in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a reachable controller, skip every test that needs the model, with one reason;
    in CI mode (--require-juju) exit with that reason instead."""
    juju_items = [item for item in items if needs_model(item)]
    if not juju_items:
        return
    reason = reachability.skip_reason(config.getoption("--controller"))
    if reason is None:
        return
    if require_juju(bool(config.getoption("--require-juju")), os.environ):
        pytest.exit(
            f"--require-juju: {reason} ({len(juju_items)} tests need a Juju model)",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )
    config.stash[SKIP_REASON] = reason
    marker = pytest.mark.skip(reason=reason)
    for item in juju_items:
        item.add_marker(marker)


def gate_scenarios(config: pytest.Config) -> list[str]:
    """The scenarios the suite gates: those of gates.yaml, or the --gate-scenario ones (each
    one gates.yaml lists)."""
    gates = _settings_file(config, "--gates-file", "gates.yaml")
    try:
        listed = settings.gate_scenarios(gates)
    except settings.SettingsError as exc:
        raise _usage(exc) from None
    return chosen_scenarios(listed, config.getoption("--gate-scenario") or [], gates)


def chosen_scenarios(listed: list[str], asked: list[str], gates: Path) -> list[str]:
    """`asked` (--gate-scenario), in gates.yaml's order, each one it lists; none: all."""
    unknown = [name for name in asked if name not in listed]
    if unknown:
        raise pytest.UsageError(
            f"--gate-scenario: {unknown[0]!r} is not gated by {gates}; allowed: {', '.join(listed)}"
        )
    return [name for name in listed if name in asked] if asked else listed


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that takes `gate_scenario` runs once per gated scenario (module scope: one run
    each); `@pytest.mark.gate_scenarios(name, ...)` keeps it to the scenarios named."""
    if SCENARIO_FIXTURE not in metafunc.fixturenames:
        return
    names = gate_scenarios(metafunc.config)
    marker = metafunc.definition.get_closest_marker("gate_scenarios")
    if marker is not None:
        names = [name for name in names if name in marker.args]
    metafunc.parametrize(SCENARIO_FIXTURE, names, scope="module")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    reason = config.stash.get(SKIP_REASON, None)
    if reason:
        terminalreporter.write_line(f"loadgate juju: every model test skipped: {reason}")


# ---- option resolution (pure, unit-tested) -------------------------------------------------


def charm_options(
    options: Mapping[str, str | None], env: Mapping[str, str]
) -> dict[str, tuple[Path, str]]:
    """app -> (packed charm path, where it came from) for --<app>-charm / $LOADGATE_<APP>_CHARM.

    A named file must exist; $CHARM_PATH is never read.
    """
    out: dict[str, tuple[Path, str]] = {}
    for app, env_name in CHARM_ENV.items():
        option = options.get(app)
        value = option or env.get(env_name)
        if not value:
            continue
        source = f"--{app}-charm" if option else f"${env_name}"
        path = Path(value).expanduser()
        if not path.is_file() or path.suffix != ".charm":
            raise pytest.UsageError(f"{source}: must name a packed .charm file; got {value!r}")
        out[app] = (path.resolve(), source)
    return out


def _file_option(config: pytest.Config, name: str, local: Path, packaged: Path) -> Path:
    """The option's file; else the test tree's own file; else loadgate's packaged default."""
    value = config.getoption(name)
    if value:
        return Path(value)
    return local if local.is_file() else packaged


def _settings_file(config: pytest.Config, option: str, name: str) -> Path:
    local = Path(config.rootpath) / "tests" / "integration" / name
    return _file_option(config, option, local, paths.integration_defaults_dir() / name)


def _usage(exc: Exception) -> pytest.UsageError:
    return pytest.UsageError(str(exc))


# ---- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def otelcol_pin(pytestconfig: pytest.Config) -> settings.OtelcolPin:
    try:
        return settings.resolve_otelcol(
            pytestconfig.getoption("--otelcol-revision"),
            pytestconfig.getoption("--otelcol-channel"),
            _settings_file(pytestconfig, "--revisions-file", "revisions.yaml"),
        )
    except settings.SettingsError as exc:
        raise _usage(exc) from None


@pytest.fixture(scope="session")
def gates_file(pytestconfig: pytest.Config) -> Path:
    return _settings_file(pytestconfig, "--gates-file", "gates.yaml")


@pytest.fixture(scope="session")
def local_charms(pytestconfig: pytest.Config) -> dict[str, deploy.LocalCharm]:
    """Packed charms given for bundle applications, with their OCI images."""
    given = charm_options(
        {app: pytestconfig.getoption(f"--{app}-charm") for app in CHARM_ENV}, os.environ
    )
    try:
        resources = deploy.parse_resource_options(pytestconfig.getoption("--resource") or [])
        unknown = sorted(set(resources) - set(given))
        if unknown:
            raise deploy.DeployError(
                f"--resource: {', '.join(unknown)} is not deployed from a packed charm "
                f"(give --{unknown[0]}-charm)"
            )
        return {
            app: deploy.local_charm(app, path, resources.get(app), option=source)
            for app, (path, source) in given.items()
        }
    except deploy.DeployError as exc:
        raise _usage(exc) from None


@pytest.fixture(scope="session")
def juju(pytestconfig: pytest.Config) -> Iterator[jubilant.Juju]:
    """The model under test: --model (kept), else a temporary model."""
    name = pytestconfig.getoption("--model")
    controller = pytestconfig.getoption("--controller")
    if name:
        target = f"{controller}:{name}" if controller else name
        yield jubilant.Juju(model=target, wait_timeout=WAIT_TIMEOUT)
        return
    keep = bool(pytestconfig.getoption("--keep-models"))
    with jubilant.temp_model(keep=keep, controller=controller) as j:
        j.wait_timeout = WAIT_TIMEOUT
        yield j


def _requests(
    pin: settings.OtelcolPin, local: Mapping[str, deploy.LocalCharm]
) -> list[deployed_mod.Request]:
    out = [deployed_mod.Request.otelcol(pin, local.get("otelcol"))]
    out += [
        deployed_mod.Request(app, local=c) for app, c in sorted(local.items()) if app != "otelcol"
    ]
    return out


@pytest.fixture(scope="session")
def deployed_charms(
    pytestconfig: pytest.Config,
    juju: jubilant.Juju,
    otelcol_pin: settings.OtelcolPin,
    local_charms: dict[str, deploy.LocalCharm],
) -> dict[str, deployed_mod.DeployedCharm]:
    """The bundle deployed (or found in --model), active and idle, running what was asked.

    A model that already holds the bundle is not deployed again: what it runs (from `juju
    status`) must be what the options ask, else the session stops with both in the message.
    """
    bundle = Path(pytestconfig.getoption("--bundle") or paths.bundle_file())
    requests = _requests(otelcol_pin, local_charms)
    status = juju.status()
    apps = set(status.apps)
    present = sorted(apps & set(model.BUNDLE_APPS))
    overlays = [Path(p) for p in pytestconfig.getoption("--overlay") or ()]
    wanted = model_apps(gate_scenarios(pytestconfig))
    if not present:
        folder = staging.new_stage_dir()
        try:
            staged = deploy.stage(
                bundle,
                folder,
                charms=local_charms,
                pin=otelcol_pin,
                overlays=signal_overlays(overlays, wanted),
            )
            deploy.check(staged)
        except deploy.DeployError as exc:
            pytest.exit(f"loadgate: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
        deploy.deploy(juju, staged)
    elif len(present) != len(model.BUNDLE_APPS):
        missing = sorted(set(model.BUNDLE_APPS) - apps)
        pytest.exit(
            f"loadgate: model {juju.model} holds only part of the bundle ({', '.join(present)}; "
            f"missing {', '.join(missing)}): use an empty model or one deployed from the bundle",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )
    else:
        _check_deployed(juju, status, requests)  # a reused model: refuse before waiting
        missing = sorted(set(wanted) - apps)
        if missing:
            pytest.exit(
                f"loadgate: model {juju.model} has no {', '.join(missing)}, which the gated "
                f"scenarios need: deploy {paths.overlays_dir() / TRACES_OVERLAY} too, or leave "
                "otlp-traces out (--gate-scenario)",
                returncode=pytest.ExitCode.USAGE_ERROR,
            )
    return _check_deployed(juju, model.wait_ready(juju, wanted), requests)


def model_apps(scenarios: list[str]) -> tuple[str, ...]:
    """The applications the gated scenarios need: the bundle's, and the traces backend
    stand-in when otlp-traces is gated."""
    extra = (model.TRACES_STANDIN_APP,) if OTLP_TRACES.name in scenarios else ()
    return (*model.BUNDLE_APPS, *extra)


def signal_overlays(given: list[Path], apps: tuple[str, ...]) -> list[Path]:
    """The overlays to deploy: those given, then the traces stand-in's when the gated
    scenarios need it and no overlay given is that one."""
    if model.TRACES_STANDIN_APP not in apps:
        return given
    own = paths.overlays_dir() / TRACES_OVERLAY
    if any(p.name == TRACES_OVERLAY for p in given):
        return given
    return [*given, own]


def _check_deployed(
    juju: jubilant.Juju, status: jubilant.Status, requests: list[deployed_mod.Request]
) -> dict[str, deployed_mod.DeployedCharm]:
    try:
        return deployed_mod.check(status, requests)
    except deployed_mod.MismatchError as exc:
        pytest.exit(f"loadgate: model {juju.model}: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(scope="session")
def deployed(
    juju: jubilant.Juju, deployed_charms: dict[str, deployed_mod.DeployedCharm]
) -> jubilant.Juju:
    """The model, once the bundle runs what was asked."""
    return juju


@pytest.fixture(scope="session")
def run_labels(
    deployed_charms: dict[str, deployed_mod.DeployedCharm],
    local_charms: dict[str, deploy.LocalCharm],
) -> dict[str, str]:
    """Result-row labels from what the model runs (not from what was asked)."""
    return deployed_mod.labels(deployed_charms, local_charms)


@pytest.fixture(scope="session")
def gate_spec_for(
    gates_file: Path,
    deployed_charms: dict[str, deployed_mod.DeployedCharm],
    run_labels: dict[str, str],
) -> Callable[[str | None], RunSpec]:
    """The gate run of a scenario (None: the first gates.yaml gates) for the revision the
    model runs: gates.yaml's layers for both (settings.gate_spec)."""
    otelcol = deployed_charms["otelcol"]
    revision = None if otelcol.local else otelcol.revision

    def spec_of(scenario: str | None) -> RunSpec:
        try:
            return settings.gate_spec(gates_file, revision, run_labels, scenario=scenario)
        except settings.SettingsError as exc:
            raise _usage(exc) from None

    return spec_of


@pytest.fixture(scope="session")
def gate_spec(gate_spec_for: Callable[[str | None], RunSpec]) -> RunSpec:
    """The gate run of the first scenario gates.yaml gates (otlp-logs in loadgate's), for the
    revision the model runs: what the suites that are not per scenario load with."""
    return gate_spec_for(None)


@pytest.fixture(scope="session")
def saturation_gate(
    gates_file: Path,
    deployed_charms: dict[str, deployed_mod.DeployedCharm],
    run_labels: dict[str, str],
) -> saturation_settings.SaturationGate:
    """The saturation run for the revision the model runs and its floor (gates.yaml
    `saturation`, over loadgate's saturation parameters)."""
    otelcol = deployed_charms["otelcol"]
    try:
        return saturation_settings.saturation_gate(
            gates_file, None if otelcol.local else otelcol.revision, run_labels
        )
    except settings.SettingsError as exc:
        raise _usage(exc) from None


@pytest.fixture(scope="session")
def juju_target(
    deployed: jubilant.Juju, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JujuTarget]:
    target = JujuTarget(deployed, workdir=tmp_path_factory.mktemp("juju-ca"))
    yield target
    target.close()


@pytest.fixture(scope="session")
def results_root() -> Path:
    return paths.results_dir()
