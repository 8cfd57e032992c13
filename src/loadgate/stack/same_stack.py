"""Whether two prepared stacks would run the same thing (`compare --if-same skip`).

A pull request of a charm that changes its docs, tests or code that renders nothing new gives
two sides of different commits that run the same stack: comparing them costs the budget and, at
the comparison's 5 %, sometimes fails a change that changed nothing. What a local stack runs is
its workload binaries, the collector's and Loki's configs, their Pebble services and checks,
and the options and limits the stack was prepared with; the charms' commits are not part of
it. So two charm stacks are the same when each side, rendered by its own charm code into one
scratch run directory at the same ports with the same CA, gives equal configs, services and
checks, and their settings other than the sources are equal. Certificates and keys the charms
push are not compared (their content is per render); where the configs point at them is.

`differences` is pure (what differs, as dotted paths); `rendered` runs the charms' code
(charm_build.build, seconds a side with their virtualenvs cached) and needs the workload
binaries, which the charm reads the version of.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from loadgate import paths

from . import charm_build
from . import tls as tls_material
from .charm_stack import CharmStackError, PreparedCharms
from .info import StackChoice
from .layout import Layout
from .ports import Ports

# Compared by what they run, not where their charm code came from.
_SOURCE_KEYS = ("source",)
_MOST_DIFFERENCES = 8
_PROFILES = "a hand-written profile against a charm stack, or two profiles that differ"


@dataclass(frozen=True)
class Rendered:
    """What a charm stack runs, rendered at fixed ports in a fixed directory."""

    settings: dict[str, Any]  # PreparedCharms.to_dict() less each charm's source
    collector_config: dict[str, Any]
    loki_config: dict[str, Any]
    services: dict[str, Any]
    checks: dict[str, Any]

    def parts(self) -> dict[str, Any]:
        return {
            "settings": self.settings,
            "collector config": self.collector_config,
            "Loki config": self.loki_config,
            "Pebble services": self.services,
            "Pebble checks": self.checks,
        }


def settings_of(prepared: PreparedCharms) -> dict[str, Any]:
    """The stack's settings without the charms' sources (their commits and labels)."""
    out = dict(prepared.to_dict())
    for role in ("otelcol", "loki"):
        charm = dict(out.get(role) or {})
        for key in _SOURCE_KEYS:
            charm.pop(key, None)
        out[role] = charm
    return out


def differences(a: object, b: object, where: str = "") -> list[str]:
    """The dotted paths at which two nested values differ (a key present on one side only
    counts), in sorted order; empty when they are equal."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        ma, mb = cast(Mapping[object, object], a), cast(Mapping[object, object], b)
        found: list[str] = []
        for key in sorted(set(ma) | set(mb), key=str):
            path = f"{where}.{key}" if where else str(key)
            if key not in ma or key not in mb:
                found.append(path)
            else:
                found.extend(differences(ma[key], mb[key], path))
        return found
    return [] if a == b else [where or "(the whole value)"]


def rendered_differences(a: Rendered, b: Rendered) -> list[str]:
    """What differs between two rendered stacks, `part: path` each (at most a few, then how
    many more)."""
    pa, pb = a.parts(), b.parts()
    found = [f"{name}: {path}" for name in pa for path in differences(pa[name], pb[name])]
    if len(found) > _MOST_DIFFERENCES:
        more = len(found) - _MOST_DIFFERENCES
        found = [*found[:_MOST_DIFFERENCES], f"and {more} more"]
    return found


def rendered(
    prepared: PreparedCharms, work: Path, bin_dir: Path, material: tls_material.TLSMaterial
) -> Rendered:
    """`prepared` rendered by its charms into `work` (a run directory of its own, replaced)
    at the standard ports. Raises CharmStackError when a charm does not render or run."""
    files = charm_build.build(
        prepared,
        Layout(work),
        Ports.from_base(None),
        bin_dir,
        material.ca_cert_pem.decode(),
        material.ca_key_pem.decode(),
    )
    return Rendered(
        settings_of(prepared),
        files.collector_config,
        files.loki_config,
        files.services,
        files.checks,
    )


@dataclass(frozen=True)
class Sameness:
    """Whether two sides run the same stack, and what differs when they do not (or why it
    could not be told: `unknown`)."""

    same: bool
    differences: tuple[str, ...] = ()
    unknown: str | None = None


def same_stack(a: StackChoice, b: StackChoice, bin_dir: Path | None = None) -> Sameness:
    """Whether `a` and `b` run the same stack: equal choices are; two charm stacks are when
    rendered alike (module docstring), with the workload binaries in `bin_dir` (default: the
    binaries cache); a hand-written profile against a charm stack, or two profiles that differ,
    are not."""
    if a == b:
        return Sameness(True)
    if not isinstance(a, PreparedCharms) or not isinstance(b, PreparedCharms):
        return Sameness(False, (_PROFILES,))
    material = tls_material.generate()
    with tempfile.TemporaryDirectory(prefix="loadgate-same-") as tmp:
        work = Path(tmp) / "stack"
        try:
            first = rendered(a, work, bin_dir or paths.bin_dir(), material)
            second = rendered(b, work, bin_dir or paths.bin_dir(), material)
        except (CharmStackError, OSError) as exc:
            return Sameness(False, unknown=str(exc))
    found = rendered_differences(first, second)
    return Sameness(not found, tuple(found))
