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

    defaults:                  # start-load parameters (kebab case), validated as a RunSpec
      rate: 60000
      duration: 5m
      p99-ms: 200
    revisions:
      "201": {p99-ms: 250}     # per-revision overrides, merged over the defaults
    saturation: {...}          # the saturation gate: see saturation_settings.py
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def check_channel(value: Any, field: str) -> str:
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
    channel = check_channel(otelcol.get("channel"), f"{path}: otelcol.channel")  # pyright: ignore[reportUnknownMemberType]
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
        channel = check_channel(channel_option, "--otelcol-channel")
    if revision_option:
        return OtelcolPin(channel, check_revision(revision_option, "--otelcol-revision"), "option")
    if default is not None:
        return OtelcolPin(channel, default, f"{revisions_file.name} default")
    return OtelcolPin(channel, None, "channel head")


def gate_layers(gates_file: Path, revision: int | None) -> list[tuple[str, dict[str, Any]]]:
    """(field, parameters) of gates.yaml in the order they apply: `defaults`, then the
    revision's overrides (not yet validated)."""
    data = _read(gates_file)
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise SettingsError(f"{gates_file}: defaults: must be a mapping of start-load parameters")
    overrides_all = data.get("revisions") or {}
    if not isinstance(overrides_all, dict):
        raise SettingsError(f"{gates_file}: revisions: must map revision numbers to parameters")
    layers: list[tuple[str, dict[str, Any]]] = [("defaults", dict(defaults))]  # pyright: ignore[reportUnknownArgumentType]
    if revision is not None:
        override = overrides_all.get(str(revision), overrides_all.get(revision))  # pyright: ignore[reportUnknownMemberType]
        if override is not None:
            if not isinstance(override, dict):
                raise SettingsError(f"{gates_file}: revisions.{revision}: must be a mapping")
            layers.append((f"revisions.{revision}", dict(override)))  # pyright: ignore[reportUnknownArgumentType]
    return layers


def gate_params(gates_file: Path, revision: int | None) -> dict[str, Any]:
    """Defaults merged with the revision's overrides (not yet validated)."""
    params: dict[str, Any] = {}
    for _, layer in gate_layers(gates_file, revision):
        params.update(layer)
    return params


def gate_spec(
    gates_file: Path,
    revision: int | None,
    labels: Mapping[str, str],
    extra: Mapping[str, Any] | None = None,
) -> RunSpec:
    """The RunSpec of a gate run: gates.yaml defaults, the overrides of `revision` (the otelcol
    revision the model runs, None for a local charm) and the labels of what the model runs."""
    params = {**gate_params(gates_file, revision), **(extra or {})}
    params["labels"] = dict(labels)
    try:
        return RunSpec.from_params(params)
    except SpecError as exc:
        raise SettingsError(
            f"{gates_file}: " + "; ".join(f"{name}: {msg}" for name, msg in exc.problems)
        ) from None


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
