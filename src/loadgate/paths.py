"""Where loadgate finds its own files and keeps its caches, state and results.

loadgate's files (the k6 scenarios, the Juju bundle and overlays, the Go wrapper modules of the
pinned parts, the bundle checker's charm data, the gate's default settings, the compare's
default margins) are package data under `loadgate/data/`, so an installed wheel finds them as a
checkout does. In a checkout, `src/loadgate/data/` holds symbolic links to the repository's own
folders (`k6/`, `bundles/`, `tools/`, ...), which stay the source of truth; building a wheel
copies what they point at.
"""

from __future__ import annotations

import os
from pathlib import Path

_ENV_BIN_DIR = "LOADGATE_BIN_DIR"
_ENV_STACK_DIR = "LOADGATE_STACK_DIR"
_ENV_RESULTS_DIR = "LOADGATE_RESULTS_DIR"

# The packed k6 charm that bundles/bundle.yaml deploys (scripts/pack-k6-charm writes it).
K6_CHARM_FILE = "loadgate-k6-k8s.charm"
PACK_HINT = (
    "run scripts/pack-k6-charm in a loadgate checkout (or python -m loadgate.gate.k6_charm pack)"
)


def data_dir() -> Path:
    """loadgate's package data (a checkout's symbolic links resolved to the real folders)."""
    return Path(__file__).resolve().parent / "data"


def _data(*parts: str) -> Path:
    return (data_dir().joinpath(*parts)).resolve()


def k6_dir() -> Path:
    """The k6 scenarios and their helpers (the repository's `k6/`)."""
    return _data("k6")


def tools_dir() -> Path:
    """The pinned Go wrapper modules of the upstream parts (the repository's `tools/`)."""
    return _data("tools")


def _bundles_dir() -> Path:
    """The Juju bundle and its overlays (the repository's `bundles/`)."""
    return _data("bundles")


def bundle_file() -> Path:
    return _bundles_dir() / "bundle.yaml"


def overlays_dir() -> Path:
    return _bundles_dir() / "overlays"


def upstream_charms_file() -> Path:
    """Endpoints of the upstream charms per track (package data)."""
    return _data("upstream-charms.yaml")


def default_margins_file() -> Path:
    """The default compare's margins and the spreads behind them (package data, written by
    `loadgate calibrate`)."""
    return _data("margins.yaml")


def k6_charm_dir() -> Path:
    """The k6 charm's source (the repository's `charms/k6-k8s`; in a wheel, what it packs
    from: charmcraft.yaml, pyproject.toml, uv.lock, src/)."""
    return _data("k6-charm")


def k6_charmcraft_file() -> Path:
    """charmcraft.yaml of loadgate's k6 charm (charms/k6-k8s/charmcraft.yaml)."""
    return k6_charm_dir() / "charmcraft.yaml"


def integration_defaults_dir() -> Path:
    """The gate's default revisions.yaml and gates.yaml (package data, data/integration)."""
    return data_dir() / "integration"


def bin_dir() -> Path:
    """Cache of built upstream binaries, outside the repository."""
    override = os.environ.get(_ENV_BIN_DIR)
    if override:
        return Path(override).expanduser()
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "loadgate" / "bin"


def stack_dir() -> Path:
    """Run directory of the local stack: configs, TLS material, data, logs, Pebble state."""
    override = os.environ.get(_ENV_STACK_DIR)
    if override:
        return Path(override).expanduser()
    state_home = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state_home) / "loadgate" / "stack"


def results_dir() -> Path:
    override = os.environ.get(_ENV_RESULTS_DIR)
    if override:
        return Path(override).expanduser()
    return Path.cwd() / "results"
