"""What stack the command line asks for: the charms' rendering (the default) or a hand profile.

`--profile` names a preset of otelcol charm options, read from the Juju bundle's own overlay
(`bundles/overlays/profile-<name>.yaml`), so the local stack and the Juju gate run the same
settings; `charm-default` is the charm with its defaults. `hand-nop` is the one hand-written
profile offered: a `nop` exporter, which no charm option gives (the generator benchmark).
`--queue-size N` is `--charm-config queue_size=N`. The command line hands these flags over as
one `StackFlags`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import paths
from ..charms import signals as signal_relations
from ..yamlfile import load_mapping
from . import charm_stack, faults, hand
from . import profile as profiles
from .charm_stack import CharmChoice, CharmStackError, PreparedCharms
from .profile import Profile

DEFAULT_PRESET = "charm-default"
_HAND_PROFILES: dict[str, str] = {"hand-nop": "nop"}  # CLI name -> profile.py name
_CHARM_FLAGS = (
    "otelcol_charm", "loki_charm", "charm_config", "loki_config", "backend_fault", "hand",
)  # fmt: skip


@dataclass(frozen=True)
class StackFlags:
    """The stack flags as given (`--profile`, `--queue-size`, the charm sources and options,
    `--base-port`); each field is named as its flag, checked for shape by the command line."""

    profile: str = DEFAULT_PRESET
    queue_size: int | None = None  # the otelcol charm's queue_size (after the preset's)
    otelcol_charm: str | None = None  # a charm source: ., LOCATION@REF, @REF or revN
    loki_charm: str | None = None
    charm_config: tuple[str, ...] = ()  # otelcol charm options, K=V
    loki_config: tuple[str, ...] = ()  # Loki charm options, K=V
    base_port: int | None = None  # None: the standard ports
    signals: tuple[str, ...] = signal_relations.DEFAULT  # --signals, parsed
    backend_fault: str | None = None  # faults between the collector and Loki (faults.py)
    hand: tuple[str, ...] = ()  # hand changes on the charms' rendering, K=V (hand.py)

    def given_charm_flags(self) -> list[str]:
        """The charm flags given, as typed (`--otelcol-charm`, ...)."""
        given = [
            f"--{f.replace('_', '-')}" for f in _CHARM_FLAGS if getattr(self, f) not in (None, ())
        ]
        if not signal_relations.is_default(self.signals):
            given.append("--signals")
        return given


class ChoiceError(ValueError):
    """The stack flags do not fit together or name something unknown (names the flag)."""


def presets(overlays: Path | None = None) -> dict[str, Path | None]:
    """Preset name -> its overlay file (None for charm-default)."""
    folder = overlays or paths.overlays_dir()
    found: dict[str, Path | None] = {DEFAULT_PRESET: None}
    for overlay in sorted(folder.glob("profile-*.yaml")):
        found[overlay.stem.removeprefix("profile-")] = overlay
    return found


def profile_names(overlays: Path | None = None) -> list[str]:
    """Every `--profile` value: the charm presets, then the hand profiles."""
    return [*presets(overlays), *_HAND_PROFILES]


def preset_pairs(name: str, overlays: Path | None = None) -> list[str]:
    """The otelcol options of a preset as `--charm-config` pairs (`k=v`)."""
    known = presets(overlays)
    if name not in known:
        allowed = ", ".join(profile_names(overlays))
        raise ChoiceError(f"--profile: unknown profile {name!r}; allowed: {allowed}")
    overlay = known[name]
    if overlay is None:
        return []
    doc = load_mapping(overlay, ChoiceError)
    apps = doc.get("applications")
    otelcol: Any = apps.get("otelcol") if isinstance(apps, dict) else None  # pyright: ignore[reportUnknownMemberType]
    options: Any = otelcol.get("options") if isinstance(otelcol, dict) else None  # pyright: ignore[reportUnknownMemberType]
    if not isinstance(options, dict):
        raise ChoiceError(f"{overlay}: applications.otelcol.options: expected a mapping")
    return [f"{k}={_text(v)}" for k, v in options.items()]  # pyright: ignore[reportUnknownVariableType]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class StackRequest:
    """The stack asked for, before anything is resolved."""

    preset: str
    charms: CharmChoice | None  # None: a hand profile
    hand: Profile | None

    def prepare(self) -> PreparedCharms | Profile:
        """Resolve the charm sources and options (raises ChoiceError naming the flag)."""
        if self.hand is not None:
            return self.hand
        assert self.charms is not None
        try:
            return charm_stack.prepare(self.charms)
        except CharmStackError as exc:
            raise ChoiceError(str(exc)) from None


def request(flags: StackFlags, overlays: Path | None = None) -> StackRequest:
    """The stack flags as one request: a hand profile, or the charms with the preset's options,
    then `--charm-config`, then `--queue-size`."""
    name = flags.profile or DEFAULT_PRESET
    if name in _HAND_PROFILES:
        given = flags.given_charm_flags()
        if given:
            raise ChoiceError(
                f"{', '.join(given)}: apply to a charm-rendered stack; --profile {name} is "
                "hand-written (drop them, or choose a charm preset)"
            )
        try:
            hand = profiles.get(_HAND_PROFILES[name], flags.queue_size)
        except ValueError as exc:
            raise ChoiceError(f"--{exc}") from None
        return StackRequest(name, None, hand)
    try:
        plan = faults.parse(flags.backend_fault) if flags.backend_fault is not None else None
    except faults.FaultError as exc:
        raise ChoiceError(str(exc)) from None
    changes = _hand_changes(flags, plan is not None)
    pairs = preset_pairs(name, overlays) + list(flags.charm_config)
    if flags.queue_size is not None:
        pairs.append(f"queue_size={flags.queue_size}")
    try:
        charms = CharmChoice.from_flags(
            flags.otelcol_charm,
            flags.loki_charm,
            pairs,
            list(flags.loki_config),
            preset=name,
            signals=flags.signals,
        )
    except CharmStackError as exc:
        raise ChoiceError(str(exc)) from None
    return StackRequest(name, replace(charms, backend_fault=plan, hand=changes), None)


def _hand_changes(flags: StackFlags, fault: bool) -> hand.HandChanges | None:
    """`--hand`, checked (None: none given, or none that changes anything)."""
    try:
        changes = hand.parse(flags.hand)
    except hand.HandError as exc:
        raise ChoiceError(str(exc)) from None
    if fault and changes.exporter != "loki":
        raise ChoiceError(
            f"--hand exporter={changes.exporter}: --backend-fault puts its proxy before Loki, "
            "which this exporter does not reach; drop one of them"
        )
    return None if changes.empty else changes


def differences(prepared: PreparedCharms | Profile, running: Mapping[str, Any] | None,
                running_profile: Profile | None) -> list[str]:  # fmt: skip
    """How a running stack differs from what this command asks for (empty: the same)."""
    if isinstance(prepared, Profile):
        if running_profile != prepared:
            have = running_profile.name if running_profile else "charm-rendered"
            return [f"profile: running {have}, asked {prepared.name}"]
        return []
    if running is None:
        return ["the running stack is hand-written, this run asks for the charms' rendering"]
    out: list[str] = []
    asked = prepared.to_dict()
    for role in ("otelcol", "loki"):
        have, want = running.get(role, {}), asked[role]
        commit_have = (have.get("source") or {}).get("commit")
        commit_want = want["source"]["commit"]
        if commit_have != commit_want or (have.get("source") or {}).get("dirty"):
            out.append(f"{role} charm: running {commit_have}, asked {commit_want}")
        if have.get("options") != want["options"]:
            out.append(f"{role} options: running {have.get('options')}, asked {want['options']}")
    have_signals = tuple(running.get("signals") or signal_relations.DEFAULT)
    if have_signals != prepared.signals:
        have_text, want_text = map(signal_relations.text, (have_signals, prepared.signals))
        out.append(f"signals: running {have_text}, asked {want_text}")
    if running.get("hand") != asked.get("hand"):
        out.append(
            f"--hand: running {running.get('hand') or 'none'}, asked {asked.get('hand') or 'none'}"
        )
    if running.get("backend_fault") != asked.get("backend_fault"):
        have_fault, want_fault = running.get("backend_fault"), asked.get("backend_fault")
        out.append(f"--backend-fault: running {have_fault or 'none'}, asked {want_fault or 'none'}")
    return out
