"""The bundle against COS Lite as Canonical defines it (data/cos-lite.yaml): what differs, and
whether each difference is one the bundle keeps on purpose.

Pure: a merged bundle document and the reference in, the differences out. Only COS Lite's own
applications are compared (the pipeline under test, otelcol and k6, is loadgate's): each one's
presence, charm, channel and scale, and the relations between two of them, both ways.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from loadgate import paths

_FORMAT = "loadgate-cos-lite/1"


class ReferenceError(ValueError):
    """data/cos-lite.yaml is malformed (the message names the field)."""


@dataclass(frozen=True)
class _Accepted:
    what: str
    measures: bool  # whether the difference changes what the gate measures
    why: str


@dataclass(frozen=True)
class Reference:
    source: str  # e.g. canonical/observability-stack terraform/cos-lite @ tf-cos-lite-3.0.2
    apps: Mapping[str, Mapping[str, Any]]
    relations: frozenset[tuple[str, str]]
    accepted: tuple[_Accepted, ...]


@dataclass(frozen=True)
class Comparison:
    """Every difference, split into those kept on purpose (with why) and the others; and the
    accepted entries no longer seen (the reference's list must stay true)."""

    reference: str
    kept: tuple[_Accepted, ...]
    unexplained: tuple[str, ...]
    stale: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.unexplained and not self.stale


def _reference_file() -> Path:
    return paths.data_dir() / "cos-lite.yaml"


def _pair(raw: Any, where: str) -> tuple[str, str]:
    if not isinstance(raw, list | tuple) or len(raw) != 2:  # pyright: ignore[reportUnknownArgumentType]
        raise ReferenceError(f"{where}: a relation is a pair [app:endpoint, app:endpoint]")
    a, b = (str(x) for x in raw)  # pyright: ignore[reportUnknownVariableType]
    return (a, b) if a <= b else (b, a)


def load(path: Path | None = None) -> Reference:
    file = path or _reference_file()
    data = yaml.safe_load(file.read_text())
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise ReferenceError(f"{file}: not a {_FORMAT} file")
    src = data.get("source") or {}
    source = f"{src.get('repo')} {src.get('path')} @ {src.get('ref')} ({src.get('commit', '')[:7]})"
    accepted = tuple(
        _Accepted(str(a["what"]), bool(a["measures"]), " ".join(str(a["why"]).split()))
        for a in data.get("accepted") or []
    )
    relations = frozenset(_pair(r, f"{file}: relations") for r in data.get("relations") or [])
    return Reference(source, dict(data.get("applications") or {}), relations, accepted)


def _app_differences(apps: Mapping[str, Any], ref: Reference) -> list[str]:
    out: list[str] = []
    for name, want in ref.apps.items():
        have = apps.get(name)
        if not isinstance(have, Mapping):
            out.append(f"{name}: COS Lite has it, the bundle does not")
            continue
        for key in ("charm", "channel", "scale"):
            mine, theirs = have.get(key, 1 if key == "scale" else None), want.get(key)  # pyright: ignore[reportUnknownMemberType]
            if mine != theirs:
                out.append(f"{name}: {key} {mine}, COS Lite {theirs}")
    return out


def _relations(doc: Mapping[str, Any], apps: Iterable[str]) -> set[tuple[str, str]]:
    """The bundle's relations between two of `apps`, as sorted pairs."""
    names = set(apps)
    found: set[tuple[str, str]] = set()
    for raw in doc.get("relations") or []:
        try:
            a, b = _pair(raw, "bundle relations")
        except ReferenceError:
            continue  # the bundle checker reports malformed relations
        if a.split(":")[0] in names and b.split(":")[0] in names:
            found.add((a, b))
    return found


def differences(doc: Mapping[str, Any], ref: Reference) -> list[str]:
    """Each way the merged bundle `doc` differs from COS Lite, in words."""
    apps: Mapping[str, Any] = doc.get("applications") or {}
    out = _app_differences(apps, ref)
    mine = _relations(doc, ref.apps)
    out += [
        f"relation {a} - {b}: COS Lite has it, the bundle does not"
        for a, b in sorted(ref.relations - mine)
    ]
    out += [
        f"relation {a} - {b}: the bundle has it, COS Lite does not"
        for a, b in sorted(mine - ref.relations)
    ]
    return out


def compare(doc: Mapping[str, Any], ref: Reference) -> Comparison:
    found = differences(doc, ref)
    by_what = {a.what: a for a in ref.accepted}
    kept = tuple(by_what[d] for d in found if d in by_what)
    unexplained = tuple(d for d in found if d not in by_what)
    stale = tuple(a.what for a in ref.accepted if a.what not in found)
    return Comparison(ref.source, kept, unexplained, stale)
