"""The revision matrix (revisions.yaml) and the gates (gates.yaml) of the integration suites.

revisions.yaml::

    otelcol:
      channel: dev/edge        # a track with receive-otlp (dev or 0.130)
      revisions: [200, 201]    # the CI matrix: one job per revision (--otelcol-revision N)
      default: null            # revision used without --otelcol-revision; null = channel head

gates.yaml::

    defaults:                  # start-load parameters (kebab case), validated as a RunSpec
      rate: 60000
      duration: 5m
      p99-ms: 200
    revisions:
      "201": {p99-ms: 250}     # per-revision overrides, merged over the defaults
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.spec import RunSpec, SpecError
from ..yamlfile import load_mapping

_CHANNEL_RE = re.compile(r"^[a-z0-9][a-z0-9.-]*/(stable|candidate|beta|edge)(/[a-z0-9.-]+)?$")


class SettingsError(ValueError):
    """revisions.yaml, gates.yaml or an option is malformed (the message names the field)."""


@dataclass(frozen=True)
class OtelcolPin:
    channel: str
    revision: int | None
    source: str  # where the choice came from, for the report

    @property
    def label(self) -> str:
        return str(self.revision) if self.revision is not None else self.channel


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


def load_revisions(path: Path) -> tuple[str, list[int], int | None]:
    """(channel, matrix revisions, default revision) from revisions.yaml."""
    otelcol = _read(path).get("otelcol")
    if not isinstance(otelcol, dict):
        raise SettingsError(f"{path}: otelcol: must be a mapping with channel and revisions")
    channel = check_channel(otelcol.get("channel"), f"{path}: otelcol.channel")  # pyright: ignore[reportUnknownMemberType]
    raw = otelcol.get("revisions") or []  # pyright: ignore[reportUnknownMemberType]
    if not isinstance(raw, list):
        raise SettingsError(f"{path}: otelcol.revisions: must be a list of revision numbers")
    revisions = [check_revision(r, f"{path}: otelcol.revisions") for r in raw]  # pyright: ignore[reportUnknownVariableType]
    default = otelcol.get("default")  # pyright: ignore[reportUnknownMemberType]
    return (
        channel,
        revisions,
        None if default is None else check_revision(default, f"{path}: otelcol.default"),
    )


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


def gate_params(gates_file: Path, revision: int | None) -> dict[str, Any]:
    """Defaults merged with the revision's overrides (not yet validated)."""
    data = _read(gates_file)
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise SettingsError(f"{gates_file}: defaults: must be a mapping of start-load parameters")
    overrides_all = data.get("revisions") or {}
    if not isinstance(overrides_all, dict):
        raise SettingsError(f"{gates_file}: revisions: must map revision numbers to parameters")
    params: dict[str, Any] = dict(defaults)  # pyright: ignore[reportUnknownArgumentType]
    if revision is not None:
        override = overrides_all.get(str(revision), overrides_all.get(revision))  # pyright: ignore[reportUnknownMemberType]
        if override is not None:
            if not isinstance(override, dict):
                raise SettingsError(f"{gates_file}: revisions.{revision}: must be a mapping")
            params.update(override)  # pyright: ignore[reportUnknownArgumentType]
    return params


def gate_spec(
    gates_file: Path,
    pin: OtelcolPin,
    extra: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
) -> RunSpec:
    """The RunSpec of a gate run for this pin, labelled with the revision or channel."""
    params = {**gate_params(gates_file, pin.revision), **(extra or {})}
    all_labels = {"otelcol": pin.label.replace("/", "-"), **(labels or {})}
    if pin.revision is not None:
        all_labels["revision"] = str(pin.revision)
    params["labels"] = all_labels
    try:
        return RunSpec.from_params(params)
    except SpecError as exc:
        raise SettingsError(
            f"{gates_file}: " + "; ".join(f"{name}: {msg}" for name, msg in exc.problems)
        ) from None
