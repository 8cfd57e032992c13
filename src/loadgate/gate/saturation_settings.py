"""The saturation gate's settings: the `saturation:` section of gates.yaml.

    saturation:
      params: {duration: 8m}       # start-load parameters of the saturation run
      floor: 150000                # records/min the collector must take in (null: none)
      revisions:
        "207": {floor: 160000}     # per revision: `floor` and/or `params`

The saturation run (otlp-logs: the scenario saturation measures) has these parameters, in
order (each over the one before): the gate layers of otlp-logs (`defaults`,
`scenarios.otlp-logs`, `revisions.<N>` and its `scenarios.otlp-logs`: the same records as the
gate run), loadgate's saturation parameters (`loadgate run --saturate`: a rate well above what
the pipeline takes, VUs for it, client gates that expect refusals) with a duration long enough
for a steady window at COS's one-minute scrape (SATURATE_COS_PARAMS), `saturation.params`,
then `saturation.revisions.<N>.params`. A bad parameter is reported with the field that set
it (`saturation.params.rate: ...`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadgate.contract.scenarios import OTLP_LOGS
from loadgate.contract.spec import RunSpec, SpecError
from loadgate.juju.settings import SettingsError, check_revision, gate_layers, mapping_of, origin
from loadgate.measure.saturation import SATURATE_COS_PARAMS, SATURATE_PARAMS
from loadgate.yamlfile import load_mapping

_SECTION_KEYS = ("params", "floor", "revisions")
_REVISION_KEYS = ("params", "floor")
# The label that tells a saturation run's result row from the gate run's.
_LABEL = {"gate": "saturation"}


@dataclass(frozen=True)
class SaturationGate:
    """The saturation run of a revision and the floor its throughput must reach."""

    spec: RunSpec
    floor: float | None  # records/min the collector must accept at saturation (None: no floor)
    floor_from: str  # the gates.yaml field that set it (or says that none did)


def _only(data: Mapping[str, Any], allowed: tuple[str, ...], field: str) -> None:
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        raise SettingsError(
            f"{field}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}"
        )


def _check_floor(value: Any, field: str) -> float | None:
    """A floor: records per minute above 0, or null (no floor)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise SettingsError(
            f"{field}: must be records per minute (a number above 0), or null for no floor; "
            f"got {value!r}"
        )
    return float(value)


def _section(gates_file: Path) -> dict[str, Any]:
    data = load_mapping(gates_file, SettingsError)
    section = mapping_of(
        data.get("saturation"), f"{gates_file}: saturation", "a mapping of params, floor, revisions"
    )
    _only(section, _SECTION_KEYS, f"{gates_file}: saturation")
    return section


def _revision_override(
    gates_file: Path, section: Mapping[str, Any], revision: int | None
) -> tuple[str, dict[str, Any]]:
    """(field, override) of the revision under `saturation.revisions` (every key checked)."""
    where = f"{gates_file}: saturation.revisions"
    overrides = mapping_of(section.get("revisions"), where, "a mapping of revision numbers")
    found: tuple[str, dict[str, Any]] = ("", {})
    for key, value in overrides.items():
        number = check_revision(key, f"{where}.{key}")
        field = f"saturation.revisions.{key}"
        override = mapping_of(value, f"{gates_file}: {field}", "a mapping of params, floor")
        _only(override, _REVISION_KEYS, f"{gates_file}: {field}")
        if number == revision:
            found = (field, override)
    return found


def _saturation_layers(
    gates_file: Path, revision: int | None
) -> tuple[list[tuple[str, dict[str, Any]]], float | None, str]:
    """The saturation run's parameter layers (field, parameters) in the order they apply, its
    floor and the field that set it."""
    section = _section(gates_file)
    field, override = _revision_override(gates_file, section, revision)
    layers = [
        *gate_layers(gates_file, revision, OTLP_LOGS.name),
        ("loadgate's saturation parameters", {**SATURATE_PARAMS, **SATURATE_COS_PARAMS}),
        ("saturation.params", _params(gates_file, section, "saturation.params")),
    ]
    if override:
        layers.append((f"{field}.params", _params(gates_file, override, f"{field}.params")))
    floor = _check_floor(section.get("floor"), f"{gates_file}: saturation.floor")
    floor_from = "saturation.floor" if floor is not None else "no floor in gates.yaml"
    if "floor" in override:
        floor = _check_floor(override["floor"], f"{gates_file}: {field}.floor")
        floor_from = f"{field}.floor" if floor is not None else f"{field}.floor: null"
    return layers, floor, floor_from


def _params(gates_file: Path, data: Mapping[str, Any], field: str) -> dict[str, Any]:
    return mapping_of(data.get("params"), f"{gates_file}: {field}", "a mapping of parameters")


def saturation_gate(
    gates_file: Path, revision: int | None, labels: Mapping[str, str]
) -> SaturationGate:
    """The saturation gate of `revision` (the otelcol revision the model runs, None for a local
    charm), its run labelled with what the model runs and `gate=saturation`."""
    layers, floor, floor_from = _saturation_layers(gates_file, revision)
    params: dict[str, Any] = {}
    for _, layer in layers:
        params.update(layer)
    params["labels"] = {**labels, **_LABEL}
    try:
        spec = RunSpec.from_params(params)
    except SpecError as exc:
        problems = "; ".join(
            f"{origin(layers, name) or 'saturation: '}{name}: {msg}" for name, msg in exc.problems
        )
        raise SettingsError(f"{gates_file}: {problems}") from None
    return SaturationGate(spec, floor, floor_from)
