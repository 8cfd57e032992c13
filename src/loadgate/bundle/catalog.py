"""What the bundle checker knows about charms: endpoints, storage, resources and trust.

Upstream charms come from a data file (src/loadgate/data/upstream-charms.yaml) that records, per
Charmhub track, the endpoints read from the charm's source at a named commit. This repository's
own charms come from their charmcraft.yaml; any other packed charm a bundle names by path, from
the metadata inside the .charm.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_UPSTREAM_FORMAT = "loadgate-upstream-charms/1"
_ROLES = ("provides", "requires", "peers")


class CatalogError(ValueError):
    """A data file or charmcraft.yaml could not be read or is malformed."""


@dataclass(frozen=True)
class Endpoint:
    name: str
    role: str  # provides | requires | peers
    interface: str
    limit: int | None = None


@dataclass(frozen=True)
class CharmInfo:
    name: str
    endpoints: dict[str, Endpoint]
    storage: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    requires_trust: bool = False
    source: str = ""  # where the facts were read, e.g. "repo@commit (branch)"
    # Config options and their types (string, int, float, boolean, secret); None: not recorded.
    options: Mapping[str, str] | None = None


@dataclass
class Catalog:
    """Upstream charms per track, and local charms by name."""

    upstream: dict[str, dict[str, CharmInfo]] = field(
        default_factory=dict[str, dict[str, CharmInfo]]
    )
    local: dict[str, CharmInfo] = field(default_factory=dict[str, CharmInfo])

    def _tracks(self, charm: str) -> list[str]:
        return sorted(self.upstream.get(charm, {}))

    def requires_trust(self, charm: str) -> bool:
        """Whether the upstream data records that this charm needs trust (on any track)."""
        return any(info.requires_trust for info in self.upstream.get(charm, {}).values())


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise CatalogError(f"{where}: expected a mapping, got {type(value).__name__}")
    return value  # pyright: ignore[reportUnknownVariableType]


def _endpoint(name: str, raw: Any, where: str) -> Endpoint:
    data = _mapping(raw, f"{where}: endpoint {name}")
    role, interface = data.get("role"), data.get("interface")
    if role not in _ROLES:
        raise CatalogError(f"{where}: endpoint {name}: role must be one of {_ROLES}, got {role!r}")
    if not isinstance(interface, str) or not interface:
        raise CatalogError(f"{where}: endpoint {name}: interface is missing")
    limit = data.get("limit")
    return Endpoint(name, role, interface, int(limit) if isinstance(limit, int) else None)


_OPTION_TYPES = ("string", "int", "float", "boolean", "secret")


def _options(raw: Any, where: str) -> dict[str, str] | None:
    """A track's recorded config options (name -> type), None when the file records none."""
    if raw is None:
        return None
    out = {str(k): str(v) for k, v in _mapping(raw, f"{where}: options").items()}
    for name, kind in out.items():
        if kind not in _OPTION_TYPES:
            raise CatalogError(f"{where}: option {name}: type must be one of {_OPTION_TYPES}")
    return out


def _load_upstream(path: Path) -> dict[str, dict[str, CharmInfo]]:
    """Charm name -> track -> CharmInfo, from the upstream data file."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path}: cannot read: {exc}") from None
    data = _mapping(data, str(path))
    if data.get("format") != _UPSTREAM_FORMAT:
        raise CatalogError(f"{path}: format must be {_UPSTREAM_FORMAT!r}")
    out: dict[str, dict[str, CharmInfo]] = {}
    for charm, raw in _mapping(data.get("charms"), f"{path}: charms").items():
        entry = _mapping(raw, f"{path}: {charm}")
        trust = bool(entry.get("requires_trust"))
        tracks: dict[str, CharmInfo] = {}
        for track, raw_track in _mapping(entry.get("tracks"), f"{path}: {charm}.tracks").items():
            where = f"{path}: {charm} track {track}"
            t = _mapping(raw_track, where)
            src = _mapping(t.get("source"), f"{where}: source")
            endpoints = {
                name: _endpoint(name, ep, where)
                for name, ep in _mapping(t.get("endpoints"), f"{where}: endpoints").items()
            }
            tracks[str(track)] = CharmInfo(
                name=charm,
                endpoints=endpoints,
                storage=tuple(str(s) for s in t.get("storage") or ()),
                requires_trust=trust,
                source=f"{src.get('repo')}@{src.get('commit')} ({src.get('branch')})",
                options=_options(t.get("options"), where),
            )
        out[str(charm)] = tracks
    return out


def info_from_metadata(data: Mapping[str, Any], source: str) -> CharmInfo:
    """A charm's facts from its metadata (charmcraft.yaml or a packed charm's metadata.yaml)."""
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise CatalogError(f"{source}: name is missing")
    endpoints: dict[str, Endpoint] = {}
    for role in _ROLES:
        for ep_name, raw in _mapping(data.get(role) or {}, f"{source}: {role}").items():
            endpoints[ep_name] = _endpoint(ep_name, {**_mapping(raw, source), "role": role}, source)
    return CharmInfo(
        name=name,
        endpoints=endpoints,
        storage=tuple(data.get("storage") or ()),
        resources=tuple(data.get("resources") or ()),
        requires_trust=False,
        source=source,
    )


def _load_charmcraft(path: Path) -> CharmInfo:
    """A local charm's facts from its charmcraft.yaml (provides/requires/peers, storage, ...)."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{path}: cannot read: {exc}") from None
    return info_from_metadata(_mapping(data, str(path)), str(path))


def build(upstream_file: Path, charmcraft_files: Iterable[Path]) -> Catalog:
    local = {info.name: info for info in map(_load_charmcraft, charmcraft_files)}
    return Catalog(upstream=_load_upstream(upstream_file), local=local)
