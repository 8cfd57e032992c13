"""What the report calls a stack and a load: a run's revision with its settings, its scenario.

- **Revision**: the run's `revision` label (`revision=221` -> `rev221`), else the otelcol charm
  source's `revN` ref, else the revisions its commit is tagged with (`rev160/161`), else the
  source's commit, else the profile.
- **Settings**, after it in parentheses, so two stacks never share a row: the preset the charm
  options started from (`profile=batch`) unless it is the charm default, then each otelcol
  option, except those whose value is the preset's own (with `--profile batch`, the batch
  processors are named by `profile=batch` alone). A long or multi-line value is named by a
  digest of its text (`processors=<sha256:1a2b3c4d>`); the record keeps the full value.
- **Scenario**: the k6 scenario and executor.
- A figure no run measured is `unknown` (UNKNOWN), never 0.

Pure: the presets' options are given (`preset_options` reads them from the bundle's overlays).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from loadgate.contract.spec import RunSpec
from loadgate.stack import choice

UNKNOWN = "unknown"
_CHARM_DEFAULT = choice.DEFAULT_PRESET
LONG_VALUE = 40  # characters; a longer (or multi-line) value is named by its digest
_DIGEST_CHARS = 8

Presets = Mapping[str, Mapping[str, str]]  # preset name -> option -> its text in the overlay


def preset_options() -> dict[str, dict[str, str]]:
    """Every preset's otelcol options as text, from the bundle's overlays (a preset whose overlay
    cannot be read is left out: its runs show their options in full)."""
    known: dict[str, dict[str, str]] = {}
    for name in choice.presets():
        try:
            pairs = choice.preset_pairs(name)
        except choice.ChoiceError:
            continue
        known[name] = dict(pair.split("=", 1) for pair in pairs)
    return known


def _option_text(value: object) -> str:
    """An option's value as `--charm-config` and the overlays write it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _setting(key: str, value: object) -> str:
    """`key=value`, or `key=<sha256:...>` for a long or multi-line value."""
    text = str(value)
    if "\n" in text or len(text) > LONG_VALUE:
        digest = hashlib.sha256(_option_text(value).encode()).hexdigest()[:_DIGEST_CHARS]
        return f"{key}=<sha256:{digest}>"
    return f"{key}={text}"


def _settings_of(preset: object, options: object, presets: Presets) -> list[str]:
    """The settings a stack ran with, named as the module says."""
    named = isinstance(preset, str) and preset not in ("", _CHARM_DEFAULT)
    own: Mapping[str, str] = presets.get(preset, {}) if isinstance(preset, str) else {}
    out = [f"profile={preset}"] if named else []
    if isinstance(options, Mapping):
        for key, value in sorted(options.items()):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            if own.get(str(key)) != _option_text(value):
                out.append(_setting(str(key), value))
    return out


def _at(data: object, *keys: str) -> Any:
    """A nested value, or None when any level is missing or not an object."""
    value: Any = data
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)  # pyright: ignore[reportUnknownMemberType]
    return value  # pyright: ignore[reportUnknownVariableType]


def _base_revision(labels: Mapping[str, str], environment: Mapping[str, Any]) -> str:
    """The revision alone (see the module's docstring); `-` when nothing names one."""
    label = labels.get("revision")
    if isinstance(label, str) and label:
        return f"rev{label}" if label.isdigit() else label
    source = _at(environment, "charms", "otelcol", "source")
    ref = _at(source, "ref")
    if isinstance(ref, str) and re.fullmatch(r"rev\d+", ref):
        return ref  # the tag asked for, when a commit carries several revisions
    revisions: Any = _at(source, "revisions")
    if isinstance(revisions, list) and revisions and all(isinstance(r, int) for r in revisions):  # pyright: ignore[reportUnknownVariableType]
        return "rev" + "/".join(str(r) for r in sorted(revisions))  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    commit = _at(source, "commit")
    if isinstance(commit, str) and commit:
        return commit[:7]
    profile = _at(environment, "profile", "name")
    return profile if isinstance(profile, str) and profile else "-"


def revision_of(
    labels: Mapping[str, str] | None = None,
    environment: Mapping[str, Any] | None = None,
    presets: Presets | None = None,
) -> str:
    """A run's revision with its settings: `rev221 (profile=batch, queue_size=5000)`."""
    environment = environment or {}
    base = _base_revision(labels or {}, environment)
    charms = _at(environment, "charms")
    extras = _settings_of(_at(charms, "preset"), _at(charms, "otelcol", "options"), presets or {})
    extras += _split_of(environment)
    return base + (f" ({', '.join(extras)})" if extras else "")


def _split_of(environment: Mapping[str, Any]) -> list[str]:
    """`cpu split G:P` (the generator's and the pipeline's CPU counts) for a run on a split
    stack: its figures are not comparable with an unsplit stack's, so it gets rows of its own."""
    generator = _at(environment, "cpu_split", "generator")
    pipeline = _at(environment, "cpu_split", "pipeline")
    if not isinstance(generator, list) or not isinstance(pipeline, list):
        return []
    return [f"cpu split {len(generator)}:{len(pipeline)}"]  # pyright: ignore[reportUnknownArgumentType]


def scenario_of(spec: RunSpec) -> str:
    return f"{spec.scenario or '-'} {spec.executor or '-'}"
