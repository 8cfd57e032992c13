"""The unit suite is pure: a test that starts a process or opens a socket fails (support.purity).

Each test's setup, call and teardown run under the guard, so a fixture of any scope that spawns
a tool or listens on a port fails the first test that needs it. Such tests live in tests/tools.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest
from support.purity import guarded

# Tests known to start a process, in files being reworked elsewhere: the guard only watches them,
# and a listed test that passes without starting anything fails, so that its entry goes.
KNOWN_IMPURE: dict[str, str] = {}


def pytest_sessionstart(session: pytest.Session) -> None:
    """Build matplotlib's font cache before any test runs, outside the guard.

    On a machine that has never run matplotlib (a fresh CI machine), its first font lookup
    asks fontconfig (`fc-list`, a process) and writes the cache under MPLCONFIGDIR; every
    later lookup reads that cache. The plots the report tests draw are pure once it exists.
    """
    del session
    import matplotlib.font_manager  # noqa: F401  # pyright: ignore[reportUnusedImport]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from guarded(item, KNOWN_IMPURE))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from guarded(item, KNOWN_IMPURE, is_call=True))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from guarded(item, KNOWN_IMPURE))


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The commands' stack directory (`tmp_path/stack`) and results directory, returned, both
    under `tmp_path` (`compare`'s command-line tests)."""
    monkeypatch.setenv("LOADGATE_STACK_DIR", str(tmp_path / "stack"))
    results = tmp_path / "results"
    monkeypatch.setenv("LOADGATE_RESULTS_DIR", str(results))
    return results
