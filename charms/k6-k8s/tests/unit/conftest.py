"""Fixtures of the charm's ops.testing tests (fakes.py holds the fake data)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import context
from ops import testing

from charm import K6Charm


@pytest.fixture
def ctx(tmp_path: Path) -> testing.Context[K6Charm]:
    """The leader-to-be `k6/0`, its charm directory holding the src/k6 scenarios."""
    return context(tmp_path)


@pytest.fixture
def disk(tmp_path: Path) -> Path:
    """The container's /var/lib/k6 and /etc/k6, kept across ctx.run calls."""
    folder = tmp_path / "container"
    (folder / "var-lib-k6").mkdir(parents=True)
    (folder / "etc-k6").mkdir(parents=True)
    return folder
