"""A matrix experiment's stack settings (capacity/matrix/file.py), checked one by one and
turned into the stack flags the command line would give (pure)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from loadgate.capacity.matrix.yaml_lines import mapping_items
from loadgate.charms import signals as signal_relations
from loadgate.stack import faults, hand, quantity
from loadgate.stack.choice import StackFlags, profile_names

_MAX_QUEUE_SIZE = 10_000_000  # as --queue-size

STACK_KEYS: dict[str, str] = {
    "profile": "a charm preset (bundles/overlays/profile-<name>.yaml) or hand-nop",
    "queue_size": f"the otelcol charm's queue_size, an integer from 1 to {_MAX_QUEUE_SIZE:,}",
    "otelcol_charm": "an otelcol charm source: ., LOCATION@REF, @REF or revN",
    "loki_charm": "a Loki charm source: ., LOCATION@REF, @REF or revN",
    "charm_config": "a mapping of otelcol charm options (a mapping value is written as YAML)",
    "loki_config": "a mapping of Loki charm options",
    "limits": "the collector's cpu and memory limits (its charm's cpu and memory options)",
    "backend_fault": "faults between the collector and Loki, as --backend-fault takes them",
    "hand": "a mapping of hand changes: " + ", ".join(k.replace("-", "_") for k in hand.ALLOWED),
    "signals": "logs, metrics, traces: a list or comma-separated text that includes logs",
}


@dataclass(frozen=True)
class Bad:
    """A setting's value that is refused: why (the file's reader adds what is allowed)."""

    why: str


def _option_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return yaml.safe_dump(value, sort_keys=False)
    return str(value)


def _options(raw: object, base_dir: Path | None) -> dict[str, str] | Bad:
    if not isinstance(raw, dict):
        return Bad(f"must be a mapping, got {raw!r}")
    out: dict[str, str] = {}
    for key, value in mapping_items(raw):
        if value is None:
            return Bad(f"{key}: no value")
        text = _option_text(value)
        if text.startswith("@") and base_dir is not None and not Path(text[1:]).is_absolute():
            text = "@" + str(base_dir / text[1:])
        out[key] = text
    return out


def _limits(raw: object, _: Path | None) -> dict[str, str] | Bad:
    if not isinstance(raw, dict):
        return Bad(f"must be a mapping of cpu and memory, got {raw!r}")
    out: dict[str, str] = {}
    for key, value in mapping_items(raw):
        if key not in ("cpu", "memory"):
            return Bad(f"unknown limit {key!r}")
        try:
            quantity.parse(str(value))
        except quantity.QuantityError as exc:
            return Bad(f"{key}: {exc}")
        out[key] = str(value)
    return out


def _text_check(check: Callable[[str], object]) -> Callable[[object, Path | None], Any]:
    def run(raw: object, _: Path | None) -> Any:
        if not isinstance(raw, str) or not raw.strip():
            return Bad(f"must be text, got {raw!r}")
        try:
            check(raw)
        except ValueError as exc:
            return Bad(str(exc))
        return raw.strip()

    return run


def _profile(raw: object, _: Path | None) -> str | Bad:
    names = profile_names()
    if raw not in names:
        return Bad(f"unknown profile {raw!r}: one of {', '.join(names)}")
    return str(raw)


def _queue(raw: object, _: Path | None) -> int | Bad:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= _MAX_QUEUE_SIZE:
        return Bad(f"got {raw!r}")
    return raw


def _hand(raw: object, _: Path | None) -> dict[str, Any] | Bad:
    if not isinstance(raw, dict):
        return Bad(f"must be a mapping, got {raw!r}")
    try:
        hand.from_mapping(dict(mapping_items(raw)))
    except hand.HandError as exc:
        return Bad(str(exc))
    return {
        k.replace("_", "-"): ("on" if v else "off") if isinstance(v, bool) else str(v)
        for k, v in mapping_items(raw)
    }


def _signals(raw: object, _: Path | None) -> tuple[str, ...] | Bad:
    items = raw if isinstance(raw, str) else raw if isinstance(raw, list) else None
    if items is None:
        return Bad(f"got {raw!r}")
    try:
        return signal_relations.parse(
            [str(i) for i in items] if isinstance(items, list) else items, "signals"
        )  # pyright: ignore[reportUnknownVariableType]
    except signal_relations.SignalsError as exc:
        return Bad(str(exc))


_CHECKS: dict[str, Callable[[object, Path | None], Any]] = {
    "profile": _profile,
    "queue_size": _queue,
    "otelcol_charm": _text_check(lambda _: None),
    "loki_charm": _text_check(lambda _: None),
    "charm_config": _options,
    "loki_config": _options,
    "limits": _limits,
    "backend_fault": _text_check(faults.parse),
    "hand": _hand,
    "signals": _signals,
}


def check(key: str, raw: object, base_dir: Path | None) -> Any:
    """The value of one setting, checked (a `Bad` says why not)."""
    return _CHECKS[key](raw, base_dir)


def to_flags(merged: Mapping[str, Any]) -> tuple[StackFlags, list[tuple[str, str]]]:
    """The settings as stack flags: options as K=V (limits become the cpu and memory
    options), and the problems found doing so as (key, why)."""
    problems: list[tuple[str, str]] = []
    options = dict(merged.get("charm_config") or {})
    for key, value in (merged.get("limits") or {}).items():
        if key in options:
            problems.append(("limits", f"{key} is also in charm_config: give it once"))
        options[key] = value
    flags = StackFlags(
        profile=merged.get("profile") or StackFlags.profile,
        queue_size=merged.get("queue_size"),
        otelcol_charm=merged.get("otelcol_charm"),
        loki_charm=merged.get("loki_charm"),
        charm_config=tuple(f"{k}={v}" for k, v in options.items()),
        loki_config=tuple(f"{k}={v}" for k, v in (merged.get("loki_config") or {}).items()),
        backend_fault=merged.get("backend_fault"),
        hand=tuple(f"{k}={v}" for k, v in (merged.get("hand") or {}).items()),
    )
    signals = merged.get("signals")
    return (replace(flags, signals=signals) if signals else flags), problems
