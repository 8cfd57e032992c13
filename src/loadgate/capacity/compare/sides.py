"""`loadgate compare`'s two sides: the settings each is given (`parse_side`: `queue-size=5000`,
`otelcol=rev160`, …, the stack flags' keys, checked for shape here; the command line turns them
into the same stack choice `run` prepares), what each runs (`_describe`, `_short_name`), and
whether the two run the same stack (`sameness`: an A/A comparison, a calibration of the noise).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loadgate.build import binaries
from loadgate.capacity.compare.record import Side
from loadgate.stack import local
from loadgate.stack.charm_stack import PreparedCharms
from loadgate.stack.profile import Profile

# Side keys -> the stack flag each mirrors (and the StackFlags field it sets).
_SIDE_KEYS: dict[str, str] = {
    "profile": "profile",
    "queue-size": "queue_size",
    "otelcol": "otelcol_charm",
    "loki": "loki_charm",
    "charm-config": "charm_config",
    "loki-config": "loki_config",
    "hand": "hand",
}
_REPEATABLE_KEYS = ("charm-config", "loki-config", "hand")
SIDE_SYNTAX = (
    "KEY=VALUE settings (several in one quoted value, or the flag repeated); keys: "
    + ", ".join(_SIDE_KEYS)
    + " (charm-config, loki-config and hand take K=V and may repeat)"
)


class SideError(ValueError):
    """A side's settings are malformed; the message names the flag, the key and what is allowed."""


@dataclass(frozen=True)
class SideSettings:
    """What one side asks for, as given: (key, value) pairs in order."""

    role: str  # BASELINE or CANDIDATE
    items: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        """The settings as typed (for people and compare.json); "as the stack flags" if none."""
        if not self.items:
            return "the stack flags"
        return " ".join(f"{k}={v}" for k, v in self.items)

    def overrides(self) -> dict[str, Any]:
        """Stack-flag attribute -> value: single keys replace, repeatable keys list their
        K=V pairs (added after the shared flags', so a side's value wins)."""
        out: dict[str, Any] = {}
        for key, value in self.items:
            attr = _SIDE_KEYS[key]
            if key in _REPEATABLE_KEYS:
                out.setdefault(attr, []).append(value)
            else:
                out[attr] = value
        return out


def parse_side(role: str, values: Sequence[str]) -> SideSettings:
    """A side's `--baseline`/`--candidate` values: each holds one or more KEY=VALUE (split like
    a shell, so a quoted value may hold spaces). Raises SideError naming the flag and key."""
    flag = f"--{role}"
    items: list[tuple[str, str]] = []
    for value in values:
        try:
            tokens = shlex.split(value)
        except ValueError as exc:
            raise SideError(f"{flag}: cannot split {value!r}: {exc}") from None
        if not tokens:
            raise SideError(f"{flag}: empty; expected {SIDE_SYNTAX}")
        for token in tokens:
            key, sep, val = token.partition("=")
            key = key.strip()
            if not sep:
                raise SideError(f"{flag}: expected KEY=VALUE, got {token!r}; {SIDE_SYNTAX}")
            if key not in _SIDE_KEYS:
                raise SideError(
                    f"{flag}: unknown key {key!r} in {token!r}; allowed keys: "
                    + ", ".join(_SIDE_KEYS)
                )
            if not val.strip():
                raise SideError(f"{flag}: {key}: empty value in {token!r}")
            if key in _REPEATABLE_KEYS and "=" not in val:
                raise SideError(
                    f"{flag}: {key}: expected {key}=OPTION=VALUE (an option and its value), "
                    f"got {token!r}"
                )
            if key not in _REPEATABLE_KEYS and any(k == key for k, _ in items):
                raise SideError(
                    f"{flag}: {key} given twice (only charm-config, loki-config and hand may "
                    "repeat)"
                )
            items.append((key, val.strip()))
    return SideSettings(role, tuple(items))


def _part_version(name: str) -> str | None:
    return next((p.version for p in binaries.PARTS if p.name == name), None)


def _describe(what: local.StackChoice) -> dict[str, Any]:
    """What a side runs, for compare.json: each charm's source (repository, ref, commit,
    revisions), its options and workload build; or the hand profile and its binaries."""
    if isinstance(what, Profile):
        return {
            "kind": "hand-profile",
            "profile": what.to_dict(),
            "workloads": {
                name: {"part": name, "version": _part_version(name)} for name in ("otelcol", "loki")
            },
        }
    return {"kind": "charms", **what.to_dict()}


def _short_name(settings: SideSettings, what: local.StackChoice) -> str:
    """A side in a few words: its charms (revision or commit) and workloads, and what was set."""
    if isinstance(what, Profile):
        base = f"hand profile {what.name}"
    else:
        base = f"otelcol {_charm_ref(what, 'otelcol')} + loki {_charm_ref(what, 'loki')}"
        if what.preset != "charm-default":
            base += f", preset {what.preset}"
    return f"{settings.label} ({base})" if settings.items else base


def _charm_ref(what: PreparedCharms, role: str) -> str:
    source = what.otelcol if role == "otelcol" else what.loki
    data = source.to_dict()
    revisions = data.get("revisions") or []
    commit = str(data.get("commit") or "")[:7]
    # A checkout with no ref and no known revision is named as what it is, not "?".
    named = str(data.get("ref") or "checkout")
    rev = "rev" + "/".join(str(r) for r in revisions) if revisions else named
    part = what.otelcol_part if role == "otelcol" else what.loki_part
    return f"{rev} ({commit}{'+dirty' if data.get('dirty') else ''}, {part.name} {part.version})"


def loki_differs(a: local.StackChoice, b: local.StackChoice) -> str | None:
    """How two prepared sides' Loki differ (its charm's commit, options, workload, a backend
    fault), or None when both run the same Loki. Hand-written stacks share one Loki config;
    a hand-written side against a charm-rendered one differs."""
    if isinstance(a, Profile) and isinstance(b, Profile):
        return None
    if isinstance(a, Profile) or isinstance(b, Profile):
        return "one side's Loki is hand-written, the other's rendered by its charm"
    what = [
        name
        for name, x, y in (
            ("its charm's commit", a.loki.commit, b.loki.commit),
            ("its charm's tree", a.loki.dirty, b.loki.dirty),
            ("its options", a.loki_options, b.loki_options),
            ("its workload", _workload(a.loki_part), _workload(b.loki_part)),
            ("the backend fault", _fault(a), _fault(b)),
        )
        if x != y
    ]
    return ", ".join(what) or None


def _workload(part: binaries.Part) -> tuple[str, str]:
    return part.name, part.version


def _fault(what: PreparedCharms) -> str | None:
    return None if what.backend_fault is None else what.backend_fault.spec


def sameness(a: local.StackChoice, b: local.StackChoice) -> bool:
    """Whether two prepared sides would run the same stack (same commits, options, workloads)."""
    if isinstance(a, Profile) or isinstance(b, Profile):
        return a == b
    return a.to_dict() == b.to_dict()


@dataclass(frozen=True)
class ComparedStack:
    """One side, prepared: its settings, what it runs, its name and description."""

    settings: SideSettings
    what: local.StackChoice

    @property
    def role(self) -> str:
        return self.settings.role

    @property
    def name(self) -> str:
        return _short_name(self.settings, self.what)

    def side(self) -> Side:
        return Side(
            self.name,
            {"settings": self.settings.label, **_describe(self.what)},
        )


@dataclass(frozen=True)
class Sides:
    """Both sides of a comparison, and whether they run the same stack (A/A)."""

    baseline: ComparedStack
    candidate: ComparedStack
    aa: bool = False
