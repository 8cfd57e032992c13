"""Grafana's own `grafana_dashboard` charm library, to run as the consumer of the charm's data.

The library lives on Charmhub; every COS charm vendors a copy under lib/. The copy read here is
the otelcol charm's at its tag OTELCOL_REF (LIBPATCH 50; its requirer code is the same as the
grafana-k8s charm's own copy, LIBPATCH 48), from the repository snapshot in
`../shared/charm-sources` beside the checkout (or $LOADGATE_CHARM_SOURCES), else from GitHub.
It is read into a temporary folder and imported from there: never copied into this repository.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from fakes import CHARM_DIR

OTELCOL_REF = "rev221"
LIB_PATH = "lib/charms/grafana_k8s/v0/grafana_dashboard.py"
SNAPSHOT = "opentelemetry-collector-k8s-operator.bundle"
URL = "https://github.com/canonical/opentelemetry-collector-k8s-operator"
MODULE = "charms.grafana_k8s.v0.grafana_dashboard"


class LibraryUnavailableError(RuntimeError):
    pass


def otelcol_repository() -> str:
    """The otelcol charm's repository: the offline snapshot when there is one, else GitHub."""
    override = os.environ.get("LOADGATE_CHARM_SOURCES")
    beside_checkout = CHARM_DIR.parents[1].parent / "shared" / "charm-sources"
    folder = Path(override) if override else beside_checkout
    snapshot = folder / SNAPSHOT
    return str(snapshot) if snapshot.is_file() else URL


def _git(*args: str) -> str:
    proc = subprocess.run(["git", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise LibraryUnavailableError(f"git {args[0]} failed: {proc.stderr.strip()[-400:]}")
    return proc.stdout


def load(work: Path) -> ModuleType:
    """Import the library from the otelcol charm at OTELCOL_REF, through a folder in `work`."""
    repo = otelcol_repository()
    bare = work / "otelcol.git"
    try:
        _git("clone", "--quiet", "--bare", repo, str(bare))
        text = _git("--git-dir", str(bare), "show", f"{OTELCOL_REF}:{LIB_PATH}")
    except LibraryUnavailableError as exc:
        raise LibraryUnavailableError(
            f"cannot read Grafana's dashboard library from {repo} at {OTELCOL_REF}: {exc}"
        ) from None
    lib = work / "lib"
    target = lib / LIB_PATH.removeprefix("lib/")
    target.parent.mkdir(parents=True)
    target.write_text(text)
    sys.path.insert(0, str(lib))
    try:
        return importlib.import_module(MODULE)
    finally:
        sys.path.remove(str(lib))
