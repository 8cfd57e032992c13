"""The revision matrix (revisions.yaml) and the gates (gates.yaml) of the integration suites.

revisions.yaml::

    otelcol:
      channel: dev/edge        # a track with receive-otlp (dev or 0.130)
      revisions:               # the CI matrix: one job per revision (--otelcol-revision N)
        - revision: 201
          seen: "juju info opentelemetry-collector-k8s --channel dev/edge, 2026-08-01"
      default: null            # revision used without --otelcol-revision; null = channel head

Every listed revision says where it was seen (`seen`): a number nobody has seen on Charmhub does
not belong in the file. An empty list gates the head of the channel.

gates.yaml::

    defaults:                  # start-load parameters (kebab case) every scenario's run takes
      duration: 5m
      max-error-rate: 0.01
    scenarios:                 # one gate run per scenario, in this order, with its own
      otlp-logs:               # parameters and gates (a scenario's own parameters, e.g.
        rate: 60000            # logs-per-request, belong here: another scenario refuses them)
        p99-ms: 200
      loki-push: {rate: 120000, p99-ms: 3000}
    revisions:
      "201": {p99-ms: 250}     # per revision, over every scenario's parameters
      "207":
        scenarios: {loki-push: {p99-ms: 4000}}   # per revision and scenario
    saturation: {...}          # the saturation gate: see saturation_settings.py

Each run's parameters are, in order (each over the one before): `defaults`,
`scenarios.<name>`, `revisions.<N>` and `revisions.<N>.scenarios.<name>`; the whole is
validated as one RunSpec, and a bad parameter is reported with the field that set it. Without
`scenarios`, there is one gate run, of the scenario `defaults` names (else otlp-logs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadgate.contract.scenarios import NAMES, OTLP_LOGS
from loadgate.contract.spec import RunSpec, SpecError

from ..yamlfile import load_mapping

_CHANNEL_RE = re.compile(r"^[a-z0-9][a-z0-9.-]*/(stable|candidate|beta|edge)(/[a-z0-9.-]+)?$")


class SettingsError(ValueError):
    """revisions.yaml, gates.yaml or an option is malformed (the message names the field)."""


@dataclass(frozen=True)
class OtelcolPin:
    channel: str
    revision: int | None
    source: str  # where the choice came from, for the report


def _read(path: Path) -> dict[str, Any]:
    return load_mapping(path, SettingsError)


def _check_channel(value: Any, field: str) -> str:
    if not isinstance(value, str) or not _CHANNEL_RE.match(value):
        raise SettingsError(
            f"{field}: must be a channel track/risk such as dev/edge or 0.130/edge; got {value!r}"
        )
    return value


def check_revision(value: Any, field: str) -> int:
    if isinstance(value, bool):
        raise SettingsError(f"{field}: must be a positive whole number; got {value!r}")
    try:
        revision = int(str(value))
    except ValueError:
        raise SettingsError(f"{field}: must be a positive whole number; got {value!r}") from None
    if revision < 1:
        raise SettingsError(f"{field}: must be a positive whole number; got {value!r}")
    return revision


def _matrix_entry(raw: Any, where: str) -> int:
    if not isinstance(raw, dict):
        raise SettingsError(
            f"{where}: each revision must be a mapping {{revision: N, seen: where it was seen}}; "
            f"got {raw!r} (a number nobody has seen on Charmhub does not belong here)"
        )
    seen = raw.get("seen")  # pyright: ignore[reportUnknownMemberType]
    if not isinstance(seen, str) or not seen.strip():
        raise SettingsError(
            f"{where}: revision {raw.get('revision')!r} needs `seen`: where and when it was seen, "  # pyright: ignore[reportUnknownMemberType]
            "e.g. `juju info opentelemetry-collector-k8s --channel dev/edge, 2026-08-01`"
        )
    return check_revision(raw.get("revision"), where)  # pyright: ignore[reportUnknownMemberType]


def load_revisions(path: Path) -> tuple[str, list[int], int | None]:
    """(channel, matrix revisions, default revision) from revisions.yaml."""
    otelcol = _read(path).get("otelcol")
    if not isinstance(otelcol, dict):
        raise SettingsError(f"{path}: otelcol: must be a mapping with channel and revisions")
    channel = _check_channel(otelcol.get("channel"), f"{path}: otelcol.channel")  # pyright: ignore[reportUnknownMemberType]
    raw = otelcol.get("revisions") or []  # pyright: ignore[reportUnknownMemberType]
    if not isinstance(raw, list):
        raise SettingsError(f"{path}: otelcol.revisions: must be a list of revisions")
    revisions = [_matrix_entry(r, f"{path}: otelcol.revisions") for r in raw]  # pyright: ignore[reportUnknownVariableType]
    default = otelcol.get("default")  # pyright: ignore[reportUnknownMemberType]
    if default is not None:
        default = check_revision(default, f"{path}: otelcol.default")
        if default not in revisions:
            raise SettingsError(
                f"{path}: otelcol.default: revision {default} is not one of the listed "
                "(seen) revisions"
            )
    return channel, revisions, default


def resolve_otelcol(
    revision_option: str | None, channel_option: str | None, revisions_file: Path
) -> OtelcolPin:
    """--otelcol-revision / --otelcol-channel first, then revisions.yaml."""
    channel, _, default = load_revisions(revisions_file)
    if channel_option:
        channel = _check_channel(channel_option, "--otelcol-channel")
    if revision_option:
        return OtelcolPin(channel, check_revision(revision_option, "--otelcol-revision"), "option")
    if default is not None:
        return OtelcolPin(channel, default, f"{revisions_file.name} default")
    return OtelcolPin(channel, None, "channel head")


def gate_scenarios(gates_file: Path) -> list[str]:
    """The scenarios gates.yaml gates, in its order: the keys of `scenarios` (each a known
    scenario), else the one scenario `defaults` names (else otlp-logs)."""
    data = _read(gates_file)
    defaults = mapping_of(data.get("defaults"), f"{gates_file}: defaults", "start-load parameters")
    section = data.get("scenarios")
    if section is None:
        return [str(defaults.get("scenario", OTLP_LOGS.name))]
    where = f"{gates_file}: scenarios"
    section = mapping_of(section, where, "a mapping of scenario names to their parameters")
    if not section:
        raise SettingsError(f"{where}: must name at least one scenario ({', '.join(NAMES)})")
    if "scenario" in defaults:
        raise SettingsError(
            f"{gates_file}: defaults.scenario: the scenarios are the keys of `scenarios`; "
            "remove it from `defaults`"
        )
    for name, params in section.items():
        if name not in NAMES:
            raise SettingsError(f"{where}.{name}: unknown scenario; allowed: {', '.join(NAMES)}")
        layer = mapping_of(params, f"{where}.{name}", "a mapping of start-load parameters")
        if "scenario" in layer:
            raise SettingsError(
                f"{where}.{name}.scenario: the key names the scenario; remove `scenario`"
            )
    return [str(name) for name in section]


def mapping_of(value: Any, field: str, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SettingsError(f"{field}: must be {what}; got {value!r}")
    return dict(value)  # pyright: ignore[reportUnknownArgumentType]


def gate_layers(
    gates_file: Path, revision: int | None, scenario: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """(field, parameters) of gates.yaml in the order they apply to `scenario`'s run (default:
    the first it gates): `defaults`, `scenarios.<name>`, the revision's overrides and its
    overrides of the scenario (not yet validated)."""
    data = _read(gates_file)
    listed = gate_scenarios(gates_file)
    name = scenario or listed[0]
    defaults = mapping_of(data.get("defaults"), f"{gates_file}: defaults", "start-load parameters")
    layers: list[tuple[str, dict[str, Any]]] = [("defaults", defaults)]
    if data.get("scenarios") is not None:
        own = mapping_of(data["scenarios"].get(name), f"scenarios.{name}", "parameters")
        layers.append((f"scenarios.{name}", {**own, "scenario": name}))
    elif name != listed[0]:
        layers.append(("the scenario asked for", {"scenario": name}))
    overrides_all = mapping_of(
        data.get("revisions"), f"{gates_file}: revisions", "a mapping of revision numbers"
    )
    if revision is None:
        return layers
    # YAML reads an unquoted revision key as a number: both spellings count.
    override = {str(k): v for k, v in overrides_all.items()}.get(str(revision))
    if override is None:
        return layers
    field = f"revisions.{revision}"
    override = mapping_of(override, f"{gates_file}: {field}", "a mapping of parameters")
    per_scenario = mapping_of(
        override.pop("scenarios", None), f"{gates_file}: {field}.scenarios", "a mapping"
    )
    unknown = sorted(str(k) for k in per_scenario if k not in NAMES)
    if unknown:
        raise SettingsError(
            f"{gates_file}: {field}.scenarios.{unknown[0]}: unknown scenario; "
            f"allowed: {', '.join(NAMES)}"
        )
    layers.append((field, override))
    if name in per_scenario:
        where = f"{field}.scenarios.{name}"
        layers.append(
            (where, mapping_of(per_scenario[name], f"{gates_file}: {where}", "a mapping"))
        )
    return layers


def gate_params(
    gates_file: Path, revision: int | None, scenario: str | None = None
) -> dict[str, Any]:
    """The layers merged (not yet validated)."""
    params: dict[str, Any] = {}
    for _, layer in gate_layers(gates_file, revision, scenario):
        params.update(layer)
    return params


def origin(layers: list[tuple[str, dict[str, Any]]], name: str) -> str:
    """`field.` of the last layer that set parameter `name` (kebab or snake case), for a
    message that says where a bad value came from."""
    for field, layer in reversed(layers):
        if any(str(k).replace("_", "-") == name for k in layer):
            return f"{field}." if not field.startswith("loadgate") else f"{field}: "
    return ""


def gate_spec(
    gates_file: Path,
    revision: int | None,
    labels: Mapping[str, str],
    extra: Mapping[str, Any] | None = None,
    scenario: str | None = None,
) -> RunSpec:
    """The RunSpec of a gate run: gates.yaml's layers for `scenario` (default: the first it
    gates) and `revision` (the otelcol revision the model runs, None for a local charm), and
    the labels of what the model runs."""
    layers = gate_layers(gates_file, revision, scenario)
    params: dict[str, Any] = {}
    for _, layer in layers:
        params.update(layer)
    params.update(extra or {})
    params["labels"] = dict(labels)
    try:
        return RunSpec.from_params(params)
    except SpecError as exc:
        problems = "; ".join(f"{origin(layers, name)}{name}: {msg}" for name, msg in exc.problems)
        raise SettingsError(f"{gates_file}: {problems}") from None


def matrix(path: Path) -> list[str]:
    """The CI matrix of revisions.yaml: each listed revision, or ["head"] (the channel head)."""
    _, revisions, _ = load_revisions(path)
    return [str(r) for r in revisions] or ["head"]


def main(argv: list[str] | None = None) -> int:
    """`python -m loadgate.juju.settings matrix FILE`: the CI matrix as JSON (the workflow)."""
    import json
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "matrix":
        print("usage: python -m loadgate.juju.settings matrix REVISIONS_FILE", file=sys.stderr)
        return 2
    try:
        print(json.dumps(matrix(Path(args[1]))))
    except SettingsError as exc:
        print(f"loadgate: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
