"""Fixtures of the charm's ops.testing tests (fakes.py holds the fake data)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ops import testing

from charm import K6Charm

CHARM_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture
def ctx(tmp_path: Path) -> testing.Context[K6Charm]:
    """A Context whose charm directory holds the charm's k6/ scripts (and nothing else of ours)."""
    root = tmp_path / "charm-root"
    root.mkdir()
    (root / "k6").symlink_to(CHARM_DIR / "k6")
    return testing.Context(K6Charm, charm_root=root)


@pytest.fixture
def disk(tmp_path: Path) -> Path:
    """The container's /var/lib/k6 and /etc/k6, kept across ctx.run calls."""
    folder = tmp_path / "container"
    (folder / "var-lib-k6").mkdir(parents=True)
    (folder / "etc-k6").mkdir(parents=True)
    return folder
