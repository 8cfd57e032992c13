"""Where loadgate finds its own files and keeps its caches, state and results."""

from __future__ import annotations

import os
from pathlib import Path

ENV_BIN_DIR = "LOADGATE_BIN_DIR"
ENV_STACK_DIR = "LOADGATE_STACK_DIR"
ENV_RESULTS_DIR = "LOADGATE_RESULTS_DIR"


def project_root() -> Path:
    """The checkout that holds `k6/` and `tools/` (loadgate runs from a source checkout)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "k6").is_dir() and (parent / "tools").is_dir():
            return parent
    raise FileNotFoundError(
        f"cannot find the loadgate checkout (a folder with k6/ and tools/) above {here}; "
        "install loadgate from a clone with `pip install -e .`"
    )


def k6_dir() -> Path:
    return project_root() / "k6"


def tools_dir() -> Path:
    return project_root() / "tools"


def bin_dir() -> Path:
    """Cache of built upstream binaries, outside the repository."""
    override = os.environ.get(ENV_BIN_DIR)
    if override:
        return Path(override).expanduser()
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "loadgate" / "bin"


def stack_dir() -> Path:
    """Run directory of the local stack: configs, TLS material, data, logs, Pebble state."""
    override = os.environ.get(ENV_STACK_DIR)
    if override:
        return Path(override).expanduser()
    state_home = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state_home) / "loadgate" / "stack"


def results_dir() -> Path:
    override = os.environ.get(ENV_RESULTS_DIR)
    if override:
        return Path(override).expanduser()
    return Path.cwd() / "results"
