"""Charm options given on the command line (`--charm-config queue_size=5000`), checked against
the options the charm declares in its charmcraft.yaml, as `juju config` checks them."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

# Options that would switch certificate verification off.
_NEVER_TRUE = ("tls_insecure_skip_verify",)
_TRUE = ("true", "yes", "on")
_FALSE = ("false", "no", "off")


class OptionError(ValueError):
    """An option is unknown or its value does not fit its type; names the flag and option."""


def _declared(charmcraft_text: str) -> dict[str, dict[str, Any]]:
    """The charm's options: name -> {type, default, description}."""
    data = yaml.safe_load(charmcraft_text) or {}
    options = ((data.get("config") or {}).get("options")) or {}
    return {str(k): dict(v or {}) for k, v in options.items()}


def split_pairs(pairs: Iterable[str], flag: str) -> list[tuple[str, str]]:
    """`k=v` items; a value `@path` is read from that file (for YAML such as `processors`)."""
    out: list[tuple[str, str]] = []
    for item in pairs:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise OptionError(f"{flag}: expected KEY=VALUE, got {item!r}")
        if value.startswith("@"):
            path = Path(value[1:]).expanduser()
            try:
                value = path.read_text()
            except OSError as exc:
                raise OptionError(f"{flag}: {key}: cannot read {path}: {exc.strerror}") from None
        out.append((key, value))
    return out


def parse(charmcraft_text: str, pairs: Iterable[str], flag: str, charm: str) -> dict[str, Any]:
    """Typed option values, each checked against the charm's declaration."""
    options = _declared(charmcraft_text)
    values: dict[str, Any] = {}
    for key, raw in split_pairs(pairs, flag):
        if key not in options:
            allowed = ", ".join(sorted(options)) or "none"
            raise OptionError(f"{flag}: {charm} has no option {key!r}; its options: {allowed}")
        kind = str(options[key].get("type") or "string")
        values[key] = _typed(raw, kind, f"{flag}: {key}")
        if key in _NEVER_TRUE and values[key] is True:
            raise OptionError(
                f"{flag}: {key}=true is refused: loadgate verifies TLS everywhere (the stack's "
                "CA is trusted instead)"
            )
    return values


def _typed(raw: str, kind: str, where: str) -> Any:
    text = raw.strip()
    if kind == "string":
        return raw
    if kind == "boolean":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise OptionError(f"{where}: must be true or false; got {raw!r}")
    if kind == "int":
        try:
            return int(text, 10)
        except ValueError:
            raise OptionError(f"{where}: must be a whole number; got {raw!r}") from None
    if kind == "float":
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise OptionError(f"{where}: must be a finite number; got {raw!r}")
        return value
    if kind == "secret":
        raise OptionError(f"{where}: secret options cannot be given here")
    return raw


def describe(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sorted(values.items())) or "defaults"
