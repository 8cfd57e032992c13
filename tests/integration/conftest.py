"""The integration suites run against a Juju model through the gate's pytest plugin, which
tests/conftest.py loads: the same `loadgate` fixture a charm repository uses, and the gate's
state on the model (`loadgate_state`) for the checks that read loadgate's own records.
Without a reachable Juju controller every test here is skipped with one reason (with
--require-juju or LOADGATE_REQUIRE_JUJU=1 that is an error instead)."""

from __future__ import annotations

import pytest

from loadgate.gate import GateResult


@pytest.fixture(scope="module")
def module_runs() -> dict[str, GateResult]:
    """The gate runs of one module, by scenario: each runs once, its tests share it (the
    `loadgate` fixture is function-scoped, so a module-scoped fixture cannot hold the run)."""
    return {}
