"""Fixtures of the charm's own jubilant test: skipped, with the reason, when Juju is not there."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import jubilant
import pytest

CHARM_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def controller() -> str:
    """The current Juju controller's name; skips the suite when none answers."""
    if shutil.which("juju") is None:
        pytest.skip("no Juju controller reachable: the juju CLI is not installed")
    try:
        proc = subprocess.run(
            ["juju", "show-controller", "--format", "json"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("no Juju controller reachable: `juju show-controller` timed out")
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["no current controller"])[-1]
        pytest.skip(f"no Juju controller reachable: {reason}")
    return proc.stdout


@pytest.fixture(scope="session")
def charm(controller: str) -> Path:
    """The packed charm: CHARM_PATH, or the one *.charm file in the charm's folder."""
    if os.environ.get("CHARM_PATH"):
        path = Path(os.environ["CHARM_PATH"])
    else:
        found = sorted(CHARM_DIR.glob("*.charm"))
        assert len(found) == 1, f"pack the charm first (charmcraft pack) or set CHARM_PATH; {found}"
        path = found[0]
    assert path.is_file(), f"{path} is not a file"
    return path.resolve()


@pytest.fixture(scope="module")
def juju(controller: str) -> Iterator[jubilant.Juju]:
    with jubilant.temp_model() as juju:
        juju.wait_timeout = 15 * 60
        yield juju
