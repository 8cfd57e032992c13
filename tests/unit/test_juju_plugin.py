"""The gate's pytest plugin without running pytest (in pytest runs of its own:
tests/tools/test_gate_plugin_runs.py and test_gate_in_charm_trees.py)."""

from __future__ import annotations

import pytest

from loadgate.gate import options


@pytest.mark.parametrize(
    ("option", "env", "wanted"),
    [
        (False, {}, False),
        (True, {}, True),
        (False, {"LOADGATE_REQUIRE_JUJU": "1"}, True),
        (False, {"LOADGATE_REQUIRE_JUJU": "true"}, True),
        (False, {"LOADGATE_REQUIRE_JUJU": "0"}, False),
    ],
)
def test_require_juju(option: bool, env: dict[str, str], wanted: bool) -> None:
    assert options.juju_required(option, env) is wanted
