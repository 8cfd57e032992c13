"""pytest plugin of the charm CI gate: options, a model with the bundle deployed, the k6 charm.

Load it from a conftest.py (it is not registered as an entry point, so it never loads by itself):

    pytest_plugins = ["loadgate.juju.pytest_plugin"]

Options follow pytest-operator where they overlap (--model, --keep-models, --controller), plus
--charm-path (or CHARM_PATH), --otelcol-revision and --otelcol-channel. When no Juju controller
answers, every test of the session is skipped with one reason; nothing else skips.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jubilant
import pytest

from .. import paths
from ..core.spec import RunSpec
from ..targets.juju import JujuTarget
from . import model as juju_model
from . import reachability, settings

SKIP_REASON = pytest.StashKey[str | None]()
WAIT_TIMEOUT = 30 * 60.0
ENV_CHARM_PATH = "CHARM_PATH"


def _add(group: Any, *names: str, **kwargs: Any) -> None:
    """Add an option unless another plugin (e.g. pytest-operator) already did."""
    with contextlib.suppress(ValueError):
        group.addoption(*names, **kwargs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("loadgate-juju", "loadgate charm CI gate (Juju)")
    _add(group, "--model", help="use this existing model (kept) instead of a temporary one")
    _add(group, "--keep-models", action="store_true", help="keep the temporary model")
    _add(group, "--controller", help="Juju controller (default: the current one)")
    _add(
        group,
        "--charm-path",
        help=f"packed k6 charm (default ${ENV_CHARM_PATH}, else `charmcraft pack` is run)",
    )
    _add(group, "--otelcol-revision", help="otelcol revision under test (default revisions.yaml)")
    _add(group, "--otelcol-channel", help="otelcol channel (default revisions.yaml)")
    _add(group, "--bundle", help="bundle file (default bundles/bundle.yaml of loadgate)")
    _add(group, "--overlay", action="append", default=[], help="extra overlay (repeatable)")
    _add(group, "--revisions-file", help="default tests/integration/revisions.yaml")
    _add(group, "--gates-file", help="default tests/integration/gates.yaml")
    _add(group, "--k6-charm-dir", help="where `charmcraft pack` runs (default charms/k6-k8s)")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SKIP_REASON] = reachability.skip_reason(config.getoption("--controller"))


def pytest_report_header(config: pytest.Config) -> str:
    reason = config.stash.get(SKIP_REASON, None)
    return f"loadgate juju: {reason or 'controller reachable'}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a reachable controller, skip every test with one reason."""
    reason = config.stash.get(SKIP_REASON, None)
    if reason is None:
        return
    marker = pytest.mark.skip(reason=reason)
    for item in items:
        item.add_marker(marker)


# ---- option resolution (pure, unit-tested) -------------------------------------------------


def resolve_charm_path(option: str | None, env: Mapping[str, str]) -> Path | None:
    """--charm-path, else $CHARM_PATH, else None (pack it). A named file must exist."""
    value = option or env.get(ENV_CHARM_PATH)
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_file() or path.suffix != ".charm":
        source = "--charm-path" if option else f"${ENV_CHARM_PATH}"
        raise pytest.UsageError(f"{source}: must name a packed .charm file; got {value!r}")
    return path.resolve()


def pack_charm(charm_dir: Path) -> Path:
    """`charmcraft pack` in the charm folder; the newest .charm it leaves there."""
    if not (charm_dir / "charmcraft.yaml").is_file():
        raise pytest.UsageError(f"--k6-charm-dir: {charm_dir} has no charmcraft.yaml")
    subprocess.run(["charmcraft", "pack", "--verbose"], cwd=charm_dir, check=True)
    packed = sorted(charm_dir.glob("*.charm"), key=lambda p: p.stat().st_mtime)
    if not packed:
        raise pytest.UsageError(f"charmcraft pack left no .charm in {charm_dir}")
    return packed[-1].resolve()


def _file_option(config: pytest.Config, name: str, default: Path) -> Path:
    value = config.getoption(name)
    return Path(value) if value else default


def _integration_dir(config: pytest.Config) -> Path:
    return Path(config.rootpath) / "tests" / "integration"


# ---- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def otelcol_pin(pytestconfig: pytest.Config) -> settings.OtelcolPin:
    revisions = _file_option(
        pytestconfig, "--revisions-file", _integration_dir(pytestconfig) / "revisions.yaml"
    )
    try:
        return settings.resolve_otelcol(
            pytestconfig.getoption("--otelcol-revision"),
            pytestconfig.getoption("--otelcol-channel"),
            revisions,
        )
    except settings.SettingsError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.fixture(scope="session")
def gates_file(pytestconfig: pytest.Config) -> Path:
    return _file_option(pytestconfig, "--gates-file", _integration_dir(pytestconfig) / "gates.yaml")


@pytest.fixture(scope="session")
def gate_spec(gates_file: Path, otelcol_pin: settings.OtelcolPin) -> RunSpec:
    """The gate run for the revision under test (gates.yaml defaults + its overrides)."""
    try:
        return settings.gate_spec(gates_file, otelcol_pin)
    except settings.SettingsError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.fixture(scope="session")
def k6_charm(pytestconfig: pytest.Config) -> Path:
    found = resolve_charm_path(pytestconfig.getoption("--charm-path"), os.environ)
    if found is not None:
        return found
    default_dir = paths.project_root() / "charms" / "k6-k8s"
    return pack_charm(_file_option(pytestconfig, "--k6-charm-dir", default_dir))


@pytest.fixture(scope="session")
def juju(pytestconfig: pytest.Config) -> Iterator[jubilant.Juju]:
    """The model under test: --model (kept), else a temporary model."""
    name = pytestconfig.getoption("--model")
    controller = pytestconfig.getoption("--controller")
    if name:
        target = f"{controller}:{name}" if controller else name
        j = jubilant.Juju(model=target, wait_timeout=WAIT_TIMEOUT)
        yield j
        return
    keep = bool(pytestconfig.getoption("--keep-models"))
    with jubilant.temp_model(keep=keep, controller=controller) as j:
        j.wait_timeout = WAIT_TIMEOUT
        yield j


@pytest.fixture(scope="session")
def deployed(
    pytestconfig: pytest.Config,
    juju: jubilant.Juju,
    k6_charm: Path,
    otelcol_pin: settings.OtelcolPin,
) -> jubilant.Juju:
    """The bundle deployed (local k6 charm, pinned otelcol), active and idle."""
    bundle = _file_option(
        pytestconfig, "--bundle", paths.project_root() / "bundles" / "bundle.yaml"
    )
    if "otelcol" not in juju.status().apps:
        folder = juju_model.overlay_dir()
        overlays = [
            juju_model.write_overlay(
                juju_model.local_k6_overlay(k6_charm), folder, "local-k6.yaml"
            ),
            juju_model.write_overlay(
                juju_model.pin_overlay(otelcol_pin), folder, "otelcol-pin.yaml"
            ),
            *(Path(p) for p in pytestconfig.getoption("--overlay") or ()),
        ]
        juju_model.deploy_bundle(juju, bundle, overlays)
    juju_model.wait_ready(juju)
    return juju


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
