"""The k6 charm's `start-load` action parameters (charms/k6-k8s/charmcraft.yaml) are the run
parameters of loadgate.contract.params: the same names, JSON types, bounds, enums, patterns and
defaults (where the schema may fill one in). The descriptions are the charm's own prose.

The schema each parameter should have is rendered from the table here (`schema_of`) and compared
key by key, so a failure names the parameter and what differs; charmcraft.yaml stays written by
hand (its comments and Juju-facing descriptions), checked rather than generated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from loadgate.contract import params as table
from loadgate.contract.params import ACTION_PARAMS, PARAMS, Param
from loadgate.contract.spec import RunSpec

CHARMCRAFT = Path(__file__).resolve().parents[2] / "charms" / "k6-k8s" / "charmcraft.yaml"
START_LOAD: dict[str, Any] = yaml.safe_load(CHARMCRAFT.read_text())["actions"]["start-load"]
ACTION = [p for p in PARAMS if p.action]


def schema_of(param: Param) -> dict[str, Any]:
    """The JSON schema (draft 4, as Juju reads it) of a parameter, its description aside."""
    schema: dict[str, Any] = {"type": param.json_type}
    if param.choices:
        schema["enum"] = list(param.choices)
    if param.kind in (table.INTEGER, table.NUMBER):
        schema["minimum"] = param.low
        if param.low_open:
            schema["exclusiveMinimum"] = True
        schema["maximum"] = param.high
    if param.pattern is not None:
        schema["pattern"] = param.pattern
    if param.default is not None and param.schema_default:
        schema["default"] = param.default
    return schema


def test_start_load_takes_exactly_the_action_parameters_of_the_table() -> None:
    assert list(START_LOAD["params"]) == list(ACTION_PARAMS)
    assert START_LOAD["additionalProperties"] is False
    assert "streams" not in ACTION_PARAMS  # the charm runs the scenario's default


@pytest.mark.parametrize("param", ACTION, ids=[p.name for p in ACTION])
def test_each_start_load_parameter_is_the_tables(param: Param) -> None:
    declared = dict(START_LOAD["params"][param.name])
    assert str(declared.pop("description", "")).strip(), f"{param.name}: no description"
    assert declared == schema_of(param)
    default = declared.get("default")
    if param.json_type == "integer" and default is not None:
        assert type(default) is int, param.name


def test_the_schema_defaults_make_the_run_specs_defaults() -> None:
    """What Juju fills in is what RunSpec.from_params would take when told nothing."""
    filled = {name: s["default"] for name, s in START_LOAD["params"].items() if "default" in s}
    spec, bare = (
        RunSpec.from_params({**filled, "run-id": "x"}),
        RunSpec.from_params({"run-id": "x"}),
    )
    assert spec == bare


def test_the_rendering_sees_what_differs() -> None:
    """schema_of is not blind: a bound, an enum or a default off by one is a difference."""
    vus = table.BY_NAME["vus"]
    assert schema_of(vus) == {"type": "integer", "minimum": 1, "maximum": 10_000, "default": 10}
    executor = schema_of(table.BY_NAME["executor"])
    assert executor["enum"] == ["constant-vus", "constant-arrival-rate", "ramping-arrival-rate"]
    p99 = schema_of(table.BY_NAME["p99-ms"])
    assert (p99["minimum"], p99["exclusiveMinimum"], p99["maximum"]) == (0, True, 3_600_000)
    assert "default" not in schema_of(table.BY_NAME["rate"])  # refused with constant-vus
    assert "default" not in schema_of(table.BY_NAME["run-id"])  # a fresh one per run
