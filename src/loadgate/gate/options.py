"""The gate plugin's options: added beside the charm's and its plugins', never over them.

The gate's own options (`--otelcol-charm`, `--gate-scenario`, ...) are always added. The model's
options follow what the session already has: with pytest-jubilant loaded, its `--juju-model`,
`--juju-controller` and `--no-juju-teardown` rule the model (its `juju` fixture makes it), and the
gate adds no model options of its own; without it, the gate adds `--model`, `--keep-models` and
`--controller`, reusing any another plugin registered first (a conftest's options register
after the plugins', so only those are seen).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from loadgate.juju import settings

from . import plan as plan_mod
from .subject import CHARM_ENV, ENV_CHARM_PATH, keep_models

_ENV_REQUIRE = "LOADGATE_REQUIRE_JUJU"
_MODEL_OPTIONS = ("--model", "--keep-models", "--controller")
_JUBILANT_OPTION = "--juju-model"  # pytest-jubilant's: its presence says it is loaded
_FOLLOWS_JUBILANT = pytest.StashKey[bool]()
_SHARED = pytest.StashKey[list[str]]()
# Options found registered by another plugin, from pytest_addoption to pytest_configure.
_AT_ADD: dict[str, Any] = {"shared": [], "jubilant": False}


def _registered_options(parser: pytest.Parser) -> set[str]:
    """Option strings some plugin has already registered with this parser.

    pytest has no public way to ask; its Parser keeps each group's options (pytest 8 and 9).
    """
    groups: list[Any] = [getattr(parser, "_anonymous", None), *getattr(parser, "_groups", [])]
    return {
        name
        for group in groups
        if group is not None
        for opt in getattr(group, "options", [])
        for name in opt.names()
    }


def _add(group: Any, taken: set[str], shared: list[str], *names: str, **kwargs: Any) -> None:
    """Add an option unless another plugin already did: then reuse it. argparse refuses a
    duplicate only when the parser is built, as an error no plugin can catch: check first."""
    if taken.intersection(names):
        shared.extend(names)
        return
    try:
        group.addoption(*names, **kwargs)
    except (ValueError, argparse.ArgumentError):  # registered where registered_options can't see
        shared.extend(names)
        return
    taken.update(names)


def add_options(parser: pytest.Parser) -> None:
    taken = _registered_options(parser)
    shared: list[str] = []
    group = parser.getgroup("loadgate", "loadgate charm CI gate (Juju)")

    def add(*names: str, **kwargs: Any) -> None:
        _add(group, taken, shared, *names, **kwargs)

    jubilant = _JUBILANT_OPTION in taken
    if not jubilant:
        add("--model", help="the gate's model, when the tests have no `juju` fixture (kept)")
        add("--keep-models", action="store_true", help="keep the gate's temporary model")
        add("--controller", help="Juju controller (default: the current one)")
    add(
        "--require-juju",
        action="store_true",
        help=f"no reachable controller is an error, not a skip (also ${_ENV_REQUIRE}=1; for CI)",
    )
    add("--otelcol-revision", help="otelcol revision under test (default: revisions.yaml)")
    add("--otelcol-channel", help="otelcol channel (default: revisions.yaml)")
    for app, env in CHARM_ENV.items():
        add(
            f"--{app}-charm",
            help=f"deploy this packed charm as `{app}` (else ${env}, else ${ENV_CHARM_PATH} "
            "when it is that charm, else the bundle's)",
        )
    resource_help = "APP:RESOURCE=IMAGE for a packed charm whose metadata names no image"
    add("--resource", action="append", default=[], help=f"{resource_help} (repeatable)")
    add("--bundle", help="bundle file (default: loadgate's)")
    add("--overlay", action="append", default=[], help="extra overlay (repeatable)")
    add("--revisions-file", help="default: tests/integration/revisions.yaml, else loadgate's")
    add("--gates-file", help="default: tests/integration/gates.yaml, else loadgate's")
    add(
        "--gate-scenario",
        action="append",
        default=[],
        help="gate only this scenario of gates.yaml (repeatable; default: every one)",
    )
    _AT_ADD.update(shared=shared, jubilant=jubilant)


def configure(config: pytest.Config) -> None:
    config.stash[_SHARED] = list(_AT_ADD["shared"])
    config.stash[_FOLLOWS_JUBILANT] = bool(_AT_ADD["jubilant"]) or _jubilant_loaded(config)


def _jubilant_loaded(config: pytest.Config) -> bool:
    return any(
        str(getattr(p, "__name__", "")).startswith("pytest_jubilant")
        for p in config.pluginmanager.get_plugins()
    )


def _option(config: pytest.Config, name: str, default: Any = None) -> Any:
    """An option's value, or `default` when no plugin registered it."""
    try:
        return config.getoption(name)
    except ValueError:
        return default


def _follows_jubilant(config: pytest.Config) -> bool:
    return config.stash.get(_FOLLOWS_JUBILANT, False)


def header_lines(config: pytest.Config) -> list[str]:
    lines: list[str] = []
    if _follows_jubilant(config):
        lines.append(
            "loadgate: the gate runs in the `juju` fixture's model and follows pytest-jubilant's "
            "options (--juju-model, --juju-controller, --no-juju-teardown)"
        )
    shared = config.stash.get(_SHARED, [])
    if shared:
        lines.append(f"loadgate: reusing options registered by another plugin: {shared}")
    if os.environ.get(ENV_CHARM_PATH):
        lines.append(
            f"loadgate: ${ENV_CHARM_PATH} names the charm under test "
            "(--otelcol-charm / --loki-charm win for their application)"
        )
    return lines


def controller(config: pytest.Config) -> str | None:
    """The controller the gate's model is on: pytest-jubilant's when it rules, else ours."""
    if _follows_jubilant(config):
        return _option(config, "--juju-controller")
    return _option(config, "--controller")


def juju_required(option: bool, env: Mapping[str, str]) -> bool:
    """--require-juju, or $LOADGATE_REQUIRE_JUJU set to 1/true/yes."""
    return option or env.get(_ENV_REQUIRE, "").strip().lower() in ("1", "true", "yes")


def require_juju(config: pytest.Config) -> bool:
    return juju_required(bool(_option(config, "--require-juju", False)), os.environ)


def own_model(config: pytest.Config) -> tuple[str | None, str | None, bool]:
    """(--model, the controller, whether to keep a temporary model)."""
    keep = keep_models(bool(_option(config, "--keep-models", False)), os.environ)
    return _option(config, "--model"), controller(config), keep


def _path(config: pytest.Config, name: str) -> Path | None:
    value = _option(config, name)
    return Path(value) if value else None


def asked(config: pytest.Config) -> plan_mod.Asked:
    """The gate's options and environment as given."""
    return plan_mod.Asked(
        env=dict(os.environ),
        charm_options={app: _option(config, f"--{app}-charm") for app in CHARM_ENV},
        resources=tuple(_option(config, "--resource") or ()),
        otelcol_revision=_option(config, "--otelcol-revision"),
        otelcol_channel=_option(config, "--otelcol-channel"),
        bundle=_option(config, "--bundle"),
        overlays=tuple(_option(config, "--overlay") or ()),
        gates_file=_path(config, "--gates-file"),
        revisions_file=_path(config, "--revisions-file"),
        scenarios=tuple(_option(config, "--gate-scenario") or ()),
    )


def gated_scenarios(config: pytest.Config) -> tuple[str, ...]:
    """The scenarios the session gates: gates.yaml's, or the --gate-scenario ones."""
    given = asked(config)
    gates = given.gates_file or plan_mod.settings_file(Path(config.rootpath), "gates.yaml")
    listed = settings.gate_scenarios(gates)
    return plan_mod.chosen_scenarios(listed, given.scenarios, gates)
