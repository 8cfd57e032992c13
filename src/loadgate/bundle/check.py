"""Static checks of a Juju bundle and its overlays, without Juju.

The bundle and each overlay are parsed and merged the way `juju deploy --overlay` merges them;
then every application must name a charm with a channel or a local path, and every relation must
join two endpoints that exist on both charms with the same interface and compatible roles.
Charms that need trust, storage or scale must have them set. Each problem names the application,
the endpoint and what is wrong.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadgate import paths
from loadgate.bundle import charm_file
from loadgate.bundle.catalog import Catalog, CharmInfo, Endpoint, info_from_metadata
from loadgate.yamlfile import load_mapping

_BUNDLE_KEYS = frozenset({"bundle", "description", "name", "applications", "relations"})
_OVERLAY_KEYS = frozenset({"description", "applications", "relations"})
_APP_KEYS = frozenset(
    {"charm", "channel", "revision", "scale", "trust", "storage", "options", "resources",
     "constraints", "annotations", "base", "placement", "bindings"}
)  # fmt: skip
# Keys of an application whose mapping an overlay merges key by key (others it replaces).
_MERGED_APP_KEYS = frozenset({"options", "storage", "resources", "annotations", "bindings"})


class BundleError(ValueError):
    """A bundle or overlay file cannot be read at all (missing, not YAML, not a mapping)."""


@dataclass(frozen=True)
class Problem:
    app: str
    endpoint: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.app}:{self.endpoint}" if self.endpoint else self.app
        return f"{where}: {self.message}"


# ---- reading and merging -------------------------------------------------------------------


def read_yaml(path: Path) -> dict[str, Any]:
    return load_mapping(path, BundleError, "a YAML mapping with `applications`")


def is_local_charm(charm: str) -> bool:
    return charm.startswith(("./", "../", "/"))


def _absolute_charm_paths(doc: dict[str, Any], folder: Path) -> None:
    """Juju resolves a relative charm path from the folder of the file that names it."""
    for app in (doc.get("applications") or {}).values():
        if isinstance(app, dict):
            charm = app.get("charm")  # pyright: ignore[reportUnknownMemberType]
            if isinstance(charm, str) and charm.startswith(("./", "../")):
                app["charm"] = str((folder / charm).resolve())


def _unknown_keys(doc: Mapping[str, Any], allowed: frozenset[str], what: str) -> list[Problem]:
    return [
        Problem(what, None, f"unknown top-level key {k!r}; allowed: {', '.join(sorted(allowed))}")
        for k in sorted(set(doc) - allowed)
    ]


def merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """The bundle `juju deploy` sees for base + overlay.

    An application set to null in the overlay is removed with its relations; a new one is
    added; for an existing one, options/storage/resources/annotations/bindings merge key by key
    and other keys are replaced. Overlay relations are added to the base's.
    """
    out = copy.deepcopy(dict(base))
    apps: dict[str, Any] = out.setdefault("applications", {}) or {}
    out["applications"] = apps
    relations: list[Any] = list(out.get("relations") or [])
    for name, spec in (overlay.get("applications") or {}).items():
        if spec is None:
            apps.pop(name, None)
            relations = [r for r in relations if name not in _relation_apps(r)]
            continue
        if name not in apps or not isinstance(apps[name], dict) or not isinstance(spec, dict):
            apps[name] = copy.deepcopy(spec)
            continue
        current: dict[str, Any] = apps[name]
        for key, value in spec.items():  # pyright: ignore[reportUnknownVariableType]
            if key in _MERGED_APP_KEYS and isinstance(value, dict):
                merged = dict(current.get(key) or {})
                merged.update(copy.deepcopy(value))  # pyright: ignore[reportUnknownArgumentType]
                current[key] = merged
            else:
                current[key] = copy.deepcopy(value)
    relations.extend(copy.deepcopy(list(overlay.get("relations") or [])))
    out["relations"] = relations
    return out


def _relation_apps(rel: Any) -> list[str]:
    if not isinstance(rel, list):
        return []
    return [str(side).split(":", 1)[0] for side in rel]  # pyright: ignore[reportUnknownVariableType]


def load(bundle: Path, overlays: Sequence[Path] = ()) -> tuple[dict[str, Any], list[Problem]]:
    """Read the bundle and overlays and merge them; problems of shape come back as Problems."""
    problems: list[Problem] = []
    doc = read_yaml(bundle)
    problems += _unknown_keys(doc, _BUNDLE_KEYS, bundle.name)
    if doc.get("bundle") != "kubernetes":
        problems.append(Problem(bundle.name, None, "`bundle:` must be `kubernetes`"))
    _absolute_charm_paths(doc, bundle.parent)
    for path in overlays:
        part = read_yaml(path)
        problems += _unknown_keys(part, _OVERLAY_KEYS, path.name)
        _absolute_charm_paths(part, path.parent)
        doc = merge(doc, part)
    return doc, problems


# ---- checking ------------------------------------------------------------------------------


def track_of(channel: str) -> str:
    """`3.7/edge` -> `3.7`; a bare risk (`edge`) means the `latest` track."""
    parts = channel.split("/")
    if len(parts) == 1 and parts[0] in ("stable", "candidate", "beta", "edge"):
        return "latest"
    return parts[0]


def _local_charm_name(charm: str) -> str:
    """`.../loadgate-k6-k8s.charm` or `.../k6-k8s_amd64.charm` -> the charm name the file is
    named after; a charm folder -> its folder name."""
    base = Path(charm).name
    if base.endswith(".charm"):
        return base.removesuffix(".charm").split("_", 1)[0]
    return base


def _local_info(app: str, charm: str, catalog: Catalog) -> tuple[CharmInfo | None, list[Problem]]:
    """A local charm's facts: this repository's charms from their charmcraft.yaml, any other
    packed charm from the metadata inside the file. A missing file is a problem of its own."""
    path = Path(charm)
    name = _local_charm_name(charm)
    if path.is_file():
        try:
            packed = charm_file.read(path)
        except charm_file.CharmFileError as exc:
            return None, [Problem(app, None, str(exc))]
        name = packed.name
        if name not in catalog.local:
            info = info_from_metadata(packed.metadata, f"{path.name}:{packed.source}")
            if catalog.requires_trust(name):
                info = dataclasses.replace(info, requires_trust=True)
            return info, []
    elif not path.exists():
        hint = f": {paths.PACK_HINT}" if name in catalog.local else ""
        return catalog.local.get(name), [
            Problem(app, None, f"local charm {charm} does not exist{hint}")
        ]
    info = catalog.local.get(name)
    if info is None:
        known = ", ".join(sorted(catalog.local)) or "none"
        return None, [
            Problem(
                app, None, f"local charm {charm} is not one of this repository's charms ({known})"
            )
        ]
    return info, []


def _resolve_charm(
    app: str, spec: Mapping[str, Any], catalog: Catalog
) -> tuple[CharmInfo | None, list[Problem]]:
    charm = spec.get("charm")
    if not isinstance(charm, str) or not charm:
        return None, [Problem(app, None, "has no `charm`")]
    if is_local_charm(charm):
        info, problems = _local_info(app, charm, catalog)
        if info is not None:
            problems += [
                Problem(
                    app, None, f"local charm {info.name} needs resource {res!r} set in `resources`"
                )
                for res in info.resources
                if res not in (spec.get("resources") or {})
            ]
        return info, problems
    channel = spec.get("channel")
    if not isinstance(channel, str) or not channel:
        hint = ""
        if charm in catalog.local:
            hint = f" ({charm} is this repository's charm: name its packed file, ./{charm}.charm)"
        return None, [
            Problem(app, None, f"charm {charm} has no `channel` and is not a local path{hint}")
        ]
    problems: list[Problem] = []
    revision = spec.get("revision")
    if revision is not None and (
        isinstance(revision, bool) or not isinstance(revision, int) or revision < 0
    ):
        problems.append(Problem(app, None, f"`revision` must be a whole number, got {revision!r}"))
    tracks = catalog.upstream.get(charm)
    if tracks is None:
        known = ", ".join(sorted(catalog.upstream))
        return None, [
            *problems,
            Problem(
                app, None, f"charm {charm} has no recorded endpoints; recorded charms: {known}"
            ),
        ]
    track = track_of(channel)
    if track not in tracks:
        recorded = ", ".join(sorted(tracks))
        message = f"channel {channel}: no recorded endpoints for track {track!r} of {charm}"
        return None, [*problems, Problem(app, None, f"{message}; recorded tracks: {recorded}")]
    return tracks[track], problems


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_bool(value: object) -> bool:
    return isinstance(value, bool)


# Each config option type: what a value must be, and the check.
_OPTION_CHECK: dict[str, tuple[str, Callable[[object], bool]]] = {
    "string": ("a string", _is_str),
    "secret": ("a secret URI (a string)", _is_str),
    "int": ("a whole number", _is_int),
    "float": ("a number", _is_number),
    "boolean": ("true or false", _is_bool),
}


def _check_options(app: str, options: Mapping[str, Any], info: CharmInfo) -> list[Problem]:
    """Each option the charm has, of its type, where the charm's options are recorded (Juju
    refuses the deployment otherwise, after it has started)."""
    if info.options is None:
        return []
    problems: list[Problem] = []
    for key, value in options.items():
        kind = info.options.get(key)
        if kind is None:
            allowed = ", ".join(sorted(info.options))
            problems.append(
                Problem(
                    app,
                    None,
                    f"{info.name} has no option {key!r} ({info.source}); it has: {allowed}",
                )
            )
            continue
        what, ok = _OPTION_CHECK[kind]
        if not ok(value):
            problems.append(
                Problem(
                    app, None, f"option {key} of {info.name} must be {what} ({kind}): {value!r}"
                )
            )
    return problems


def _check_app(app: str, spec: Any, info: CharmInfo | None) -> list[Problem]:
    if not isinstance(spec, dict):
        return [Problem(app, None, "must be a mapping with `charm`, `channel`, `scale`, ...")]
    problems = [
        Problem(app, None, f"unknown key {k!r}; allowed: {', '.join(sorted(_APP_KEYS))}")
        for k in sorted(set(spec) - _APP_KEYS)  # pyright: ignore[reportUnknownArgumentType]
    ]
    scale = spec.get("scale")  # pyright: ignore[reportUnknownMemberType]
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        problems.append(
            Problem(app, None, f"`scale` must be a whole number of units >= 1, got {scale!r}")
        )
    options: Mapping[str, Any] = spec.get("options") or {}  # pyright: ignore[reportUnknownMemberType]
    for key, value in options.items():
        if "insecure" in key and "skip" in key and value not in (False, "false", None):
            problems.append(
                Problem(app, None, f"option {key} must not be set: TLS is verified everywhere")
            )
    if info is None:
        return problems
    problems += _check_options(app, options, info)
    if info.requires_trust and spec.get("trust") is not True:  # pyright: ignore[reportUnknownMemberType]
        problems.append(Problem(app, None, f"charm {info.name} needs `trust: true`"))
    storage: Mapping[str, Any] = spec.get("storage") or {}  # pyright: ignore[reportUnknownMemberType]
    for name in info.storage:
        if name not in storage:
            problems.append(
                Problem(app, None, f"storage {name!r} of {info.name} needs a size in `storage`")
            )
    for name in storage:
        if name not in info.storage:
            allowed = ", ".join(info.storage) or "none"
            problems.append(
                Problem(app, None, f"storage {name!r} is not one of {info.name}'s ({allowed})")
            )
    return problems


def _side(raw: Any) -> tuple[str, str | None]:
    text = str(raw)
    app, _, endpoint = text.partition(":")
    return app, endpoint or None


def _check_side(
    app: str, endpoint: str | None, apps: Mapping[str, Any], infos: Mapping[str, CharmInfo | None]
) -> tuple[Endpoint | None, list[Problem]]:
    if app not in apps:
        return None, [
            Problem(app, endpoint, "relation names an application the bundle does not have")
        ]
    if endpoint is None:
        return None, [Problem(app, None, "relation must name the endpoint (app:endpoint)")]
    info = infos.get(app)
    if info is None:
        return None, []  # the application's own problem is already reported
    ep = info.endpoints.get(endpoint)
    if ep is None:
        known = ", ".join(sorted(info.endpoints))
        return None, [
            Problem(
                app, endpoint, f"no such endpoint on {info.name} ({info.source}); it has: {known}"
            )
        ]
    return ep, []


def _check_relations(
    relations: Any, apps: Mapping[str, Any], infos: Mapping[str, CharmInfo | None]
) -> list[Problem]:
    problems: list[Problem] = []
    if not isinstance(relations, list):
        return [Problem("relations", None, "must be a list of [app:endpoint, app:endpoint] pairs")]
    seen: set[frozenset[str]] = set()
    uses: dict[tuple[str, str], int] = {}
    for rel in relations:  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(rel, list) or len(rel) != 2:  # pyright: ignore[reportUnknownArgumentType]
            problems.append(
                Problem("relations", None, f"each relation must be a pair, got {rel!r}")
            )
            continue
        (a_app, a_ep), (b_app, b_ep) = _side(rel[0]), _side(rel[1])
        a, pa = _check_side(a_app, a_ep, apps, infos)
        b, pb = _check_side(b_app, b_ep, apps, infos)
        problems += pa + pb
        if a is None or b is None:
            continue
        key = frozenset({f"{a_app}:{a_ep}", f"{b_app}:{b_ep}"})
        if key in seen:
            problems.append(Problem(a_app, a_ep, f"relation with {b_app}:{b_ep} is listed twice"))
            continue
        seen.add(key)
        for side_app, ep in ((a_app, a), (b_app, b)):
            uses[(side_app, ep.name)] = uses.get((side_app, ep.name), 0) + 1
        if a_app == b_app:
            problems.append(Problem(a_app, a_ep, "cannot relate an application to itself"))
        elif "peers" in (a.role, b.role):
            peer_app, peer = (a_app, a) if a.role == "peers" else (b_app, b)
            problems.append(
                Problem(peer_app, peer.name, "is a peer endpoint; peers cannot be related")
            )
        elif {a.role, b.role} != {"provides", "requires"}:
            message = f"role {a.role} cannot relate to {b_app}:{b_ep} (also {b.role})"
            problems.append(
                Problem(a_app, a_ep, f"{message}; one side must provide, the other require")
            )
        if a.interface != b.interface:
            message = f"interface {a.interface} does not match {b_app}:{b_ep}"
            problems.append(Problem(a_app, a_ep, f"{message} interface {b.interface}"))
    for (app, name), count in sorted(uses.items()):
        info = infos.get(app)
        ep = info.endpoints.get(name) if info else None
        if ep is not None and ep.limit is not None and count > ep.limit:
            problems.append(Problem(app, name, f"has limit {ep.limit} but {count} relations"))
    return problems


def check(doc: Mapping[str, Any], catalog: Catalog) -> list[Problem]:
    """Every problem of a merged bundle (empty: it is valid)."""
    apps = doc.get("applications")
    if not isinstance(apps, dict) or not apps:
        return [Problem("applications", None, "the bundle has no applications")]
    problems: list[Problem] = []
    infos: dict[str, CharmInfo | None] = {}
    for name, spec in apps.items():  # pyright: ignore[reportUnknownVariableType]
        info: CharmInfo | None = None
        if isinstance(spec, dict):
            info, found = _resolve_charm(str(name), spec, catalog)  # pyright: ignore[reportUnknownArgumentType]
            problems += found
        infos[str(name)] = info
        problems += _check_app(str(name), spec, info)
    problems += _check_relations(doc.get("relations") or [], apps, infos)  # pyright: ignore[reportUnknownArgumentType]
    return problems


def check_files(bundle: Path, overlays: Sequence[Path], catalog: Catalog) -> list[Problem]:
    doc, problems = load(bundle, overlays)
    return problems + check(doc, catalog)


# ---- defaults and the command --------------------------------------------------------------


def default_bundle() -> Path:
    return paths.bundle_file()


def default_upstream() -> Path:
    return paths.upstream_charms_file()


def local_charmcraft_files() -> list[Path]:
    """charmcraft.yaml of each of this repository's charms (the k6 charm)."""
    return [paths.k6_charmcraft_file()]


def default_combinations(bundle: Path) -> list[list[Path]]:
    """The bundle alone, then with each overlay of its overlays/ folder."""
    folder = bundle.parent / "overlays"
    return [[], *([o] for o in sorted(folder.glob("*.yaml")))]
