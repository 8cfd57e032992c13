"""The saturation gate: its settings (gates.yaml `saturation`, gate/saturation_settings.py),
the floor judged as a gate of the run, and the check that it measured the charm under test
(gate/saturation.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from loadgate import paths
from loadgate.contract.gates import Gate
from loadgate.contract.spec import RunSpec
from loadgate.contract.summary import ClientFigures
from loadgate.gate import saturation as saturation_floor
from loadgate.gate import saturation_settings
from loadgate.judge.ledger import Ledger
from loadgate.juju import actions
from loadgate.juju.settings import SettingsError
from loadgate.measure.saturation import SaturationFigures
from loadgate.records.result import RunResult

LABELS = {"revision": "207", "otelcol_channel": "dev/edge"}
DEFAULTS = {"rate": 60000, "duration": "5m", "p99-ms": 250, "body-max": 1024}


def gates(tmp_path: Path, **data: Any) -> Path:
    path = tmp_path / "gates.yaml"
    path.write_text(yaml.safe_dump({"defaults": DEFAULTS, **data}))
    return path


def test_the_saturation_run_is_the_gate_run_offered_more() -> None:
    """loadgate's own gates.yaml: no floor; loadgate's saturation parameters over `defaults`."""
    gate = saturation_settings.saturation_gate(
        paths.integration_defaults_dir() / "gates.yaml", 207, LABELS
    )
    assert gate.floor is None
    assert gate.floor_from == "no floor in gates.yaml"
    spec = gate.spec
    assert (spec.rate, spec.vus, spec.duration) == (300_000, 300, "8m")
    assert (spec.max_error_rate, spec.p99_ms, spec.effective_min_logs_per_minute) == (
        1.0,
        3_600_000,
        0,
    )
    assert (spec.body_min, spec.body_max, spec.logs_per_request) == (256, 2048, 5)  # defaults
    assert spec.labels == {**LABELS, "gate": "saturation"}
    assert actions.start_load_params(spec)["duration"] == "8m"


def test_floor_and_params_with_a_revisions_overrides(tmp_path: Path) -> None:
    path = gates(
        tmp_path,
        revisions={"207": {"body-max": 512}},
        saturation={
            "params": {"duration": "10m", "rate": 400000},
            "floor": 150000,
            "revisions": {"207": {"floor": 200000, "params": {"rate": 500000}}, 208: {}},
        },
    )
    gate = saturation_settings.saturation_gate(path, 207, LABELS)
    assert (gate.floor, gate.floor_from) == (200_000.0, "saturation.revisions.207.floor")
    assert (gate.spec.rate, gate.spec.duration) == (500_000, "10m")
    assert gate.spec.body_max == 512  # the gate's own revision override applies too
    other = saturation_settings.saturation_gate(path, 201, LABELS)
    assert (other.floor, other.floor_from, other.spec.rate) == (
        150_000.0,
        "saturation.floor",
        400_000,
    )
    local = saturation_settings.saturation_gate(path, None, {"otelcol_charm": "local"})
    assert local.floor == 150_000.0


def test_a_revision_may_set_no_floor(tmp_path: Path) -> None:
    path = gates(tmp_path, saturation={"floor": 150000, "revisions": {"207": {"floor": None}}})
    gate = saturation_settings.saturation_gate(path, 207, LABELS)
    assert (gate.floor, gate.floor_from) == (None, "saturation.revisions.207.floor: null")


@pytest.mark.parametrize(
    ("saturation", "message"),
    [
        ([1], "saturation: must be a mapping of params, floor, revisions; got [1]"),
        ({"flor": 1}, "saturation: unknown key(s) flor; allowed: params, floor, revisions"),
        (
            {"floor": "fast"},
            "saturation.floor: must be records per minute (a number above 0), or null for no "
            "floor; got 'fast'",
        ),
        ({"floor": 0}, "saturation.floor: must be records per minute"),
        ({"floor": True}, "saturation.floor: must be records per minute"),
        ({"params": [1]}, "saturation.params: must be a mapping of parameters; got [1]"),
        ({"params": {"rate": "lots"}}, "saturation.params.rate: "),
        ({"params": {"rates": 5}}, "saturation.params.rates: unknown parameter"),
        ({"revisions": {"x": {}}}, "saturation.revisions.x: must be a positive whole number"),
        ({"revisions": {"207": 5}}, "saturation.revisions.207: must be a mapping"),
        (
            {"revisions": {"207": {"flor": 1}}},
            "saturation.revisions.207: unknown key(s) flor; allowed: params, floor",
        ),
        ({"revisions": {"207": {"floor": -1}}}, "saturation.revisions.207.floor: must be"),
        (
            {"revisions": {"207": {"params": {"vus": 0}}}},
            "saturation.revisions.207.params.vus: ",
        ),
    ],
)
def test_bad_saturation_settings_name_the_field(
    tmp_path: Path, saturation: Any, message: str
) -> None:
    path = gates(tmp_path, saturation=saturation)
    with pytest.raises(SettingsError) as caught:
        saturation_settings.saturation_gate(path, 207, LABELS)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


def test_a_bad_default_is_named_where_it_was_set(tmp_path: Path) -> None:
    path = tmp_path / "gates.yaml"
    path.write_text(yaml.safe_dump({"defaults": {"body-min": 0}}))
    with pytest.raises(SettingsError, match=r"defaults\.body-min: "):
        saturation_settings.saturation_gate(path, 207, LABELS)


# ---- the floor as a gate -------------------------------------------------------------------


def figures(saturated: bool | None, accepted: float | None, reason: str = "") -> SaturationFigures:
    return SaturationFigures(300_000.0, saturated, accepted_per_min=accepted, reason=reason)


@pytest.mark.parametrize(
    ("sat", "floor", "passed", "threshold", "source"),
    [
        (figures(True, 180_000.0), 150_000.0, True, ">= 150,000", "(queue full)"),
        (figures(True, 180_000.0), 200_000.0, False, ">= 200,000", "(queue full)"),
        (figures(True, 180_000.0), None, True, "measured", "no floor set"),
        (figures(False, 250_000.0), 200_000.0, True, ">= 200,000", "the queue never filled"),
        (figures(False, 150_000.0), 200_000.0, False, ">= 200,000", "takes at least this"),
        (figures(None, None, "the steady window ... is 120s"), None, False, "measured", "120s"),
        (None, 150_000.0, False, ">= 150,000", "not measured"),
    ],
)
def test_floor_gate(
    sat: SaturationFigures | None, floor: float | None, passed: bool, threshold: str, source: str
) -> None:
    gate = saturation_floor.floor_gate(sat, floor)
    assert gate.name == "saturation_per_minute"
    assert (gate.passed, gate.threshold) == (passed, threshold)
    assert gate.value == (sat.accepted_per_min if sat else None)
    assert source in gate.source


def test_with_gate_adds_it_and_judges_the_verdict_again() -> None:
    client = ClientFigures(100, 0, 0.0, 10.0, 500, 500, 500.0, 60.0)
    ok = Gate("error_rate", "<= 1%", 0.0, True, "k6")
    result = RunResult(
        run_id="r1", target="juju", spec=RunSpec(), started_at=0.0, ended_at=1.0, client=client,
        pipeline=None, delivered=None, ledger=Ledger([], 500), gates=[ok], verdict="PASS",
    )  # fmt: skip
    failed = saturation_floor.with_gates(
        result, saturation_floor.floor_gate(figures(True, 1.0), 2.0)
    )
    assert [g.name for g in failed.gates] == ["error_rate", "saturation_per_minute"]
    assert failed.verdict == "FAIL"
    again = saturation_floor.with_gates(
        failed, saturation_floor.floor_gate(figures(True, 3.0), 2.0)
    )
    assert [g.passed for g in again.gates] == [True, True]
    assert again.verdict == "PASS"
