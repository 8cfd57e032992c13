"""Control groups that enforce a charm's resource limits on its services, as kubelet enforces
them on its container: one group per charm container (`otelcol`, `loki`) under a group per
stack, made under this process's own group in each controller's hierarchy.

cgroup v1 (a hierarchy per controller: `memory.limit_in_bytes`, `cpu.cfs_quota_us`) and v2
(one hierarchy: `memory.max`, `cpu.max`) are told apart per controller from /proc/self/cgroup
and /proc/self/mountinfo. A limit that cannot be written (no hierarchy with the controller, no
write access, v2's no-internal-processes rule) is NOT enforced, and the placement says why.
The services join their groups through `cgexec.py` before they exec the workload.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from loadgate.contract.typed import read

from . import cgexec
from .limits import OPTIONAL_FILES, Limits, v1_settings, v2_settings

_CONTROLLERS = ("memory", "cpu")
STACK_PREFIX = "loadgate-"


@dataclass(frozen=True)
class Hierarchy:
    """This process's own group in the hierarchy holding a controller."""

    controller: str
    version: int  # 1 or 2
    path: str


@dataclass(frozen=True)
class _Mount:
    root: str  # the folder of the hierarchy mounted here
    point: str
    fstype: str
    options: tuple[str, ...]  # super options: a v1 hierarchy's controllers


def _unescape(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (`\\040`)."""
    out, i = "", 0
    while i < len(text):
        if text[i] == "\\" and text[i + 1 : i + 4].isdigit():
            out += chr(int(text[i + 1 : i + 4], 8))
            i += 4
        else:
            out += text[i]
            i += 1
    return out


def _parse_mountinfo(text: str) -> list[_Mount]:
    """The mounts in /proc/self/mountinfo (`ID PARENT DEV ROOT POINT OPTS ... - TYPE SRC SUPER`)."""
    mounts: list[_Mount] = []
    for line in text.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(rest) < 3:
            continue
        options = tuple(rest[2].split(","))
        mounts.append(_Mount(_unescape(fields[3]), _unescape(fields[4]), rest[0], options))
    return mounts


def _parse_proc_cgroup(text: str) -> list[tuple[tuple[str, ...], str]]:
    """(controllers, path) per line of /proc/self/cgroup (v2's line has no controllers)."""
    out: list[tuple[tuple[str, ...], str]] = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            controllers = tuple(c for c in parts[1].split(",") if c)
            out.append((controllers, parts[2]))
    return out


def _inside(mount: _Mount, path: str) -> str | None:
    """Where `path` (a group, from the hierarchy's root) is under this mount (None: not)."""
    root = mount.root.rstrip("/")
    if root and path != root and not path.startswith(root + "/"):
        return None
    return str(Path(mount.point) / path[len(root) :].lstrip("/"))


def own_hierarchies(
    proc_cgroup: str, mountinfo: str, v2_controllers: Mapping[str, tuple[str, ...]] | None = None
) -> dict[str, Hierarchy]:
    """Per controller, this process's group: in a v1 hierarchy with that controller, else in
    the v2 hierarchy when its `cgroup.controllers` lists it (`v2_controllers`: folder ->
    listed; read from the folder when not given)."""
    mounts = _parse_mountinfo(mountinfo)
    found: dict[str, Hierarchy] = {}
    unified: str | None = None
    for controllers, path in _parse_proc_cgroup(proc_cgroup):
        if not controllers:
            for mount in (m for m in mounts if m.fstype == "cgroup2"):
                unified = unified or _inside(mount, path)
            continue
        for controller in (c for c in controllers if c in _CONTROLLERS):
            for mount in (m for m in mounts if m.fstype == "cgroup" and controller in m.options):
                where = _inside(mount, path)
                if where is not None:
                    found.setdefault(controller, Hierarchy(controller, 1, where))
    if unified is not None:
        listed = (v2_controllers or {}).get(unified)
        if listed is None:
            listed = _read_words(Path(unified) / "cgroup.controllers")
        for controller in _CONTROLLERS:
            if controller not in found and controller in listed:
                found[controller] = Hierarchy(controller, 2, unified)
    return found


def _read_words(path: Path) -> tuple[str, ...]:
    try:
        return tuple(path.read_text().split())
    except OSError:
        return ()


def this_process() -> dict[str, Hierarchy]:
    """This process's hierarchies (empty when /proc says nothing of cgroups)."""
    try:
        proc_cgroup = Path("/proc/self/cgroup").read_text()
        mountinfo = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return {}
    return own_hierarchies(proc_cgroup, mountinfo)


def stack_group_name(root: Path) -> str:
    """The stack's group: one name per run directory (`loadgate-<12 hex>`)."""
    return STACK_PREFIX + hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Group:
    """A service group in one hierarchy."""

    controller: str
    version: int
    path: str

    @property
    def procs(self) -> str:
        return str(Path(self.path) / "cgroup.procs")


@dataclass(frozen=True)
class Placement:
    """One charm container's group: its limits, where they are written, what is not enforced."""

    role: str
    limits: Limits
    groups: list[Group] = field(default_factory=list[Group])
    not_enforced: dict[str, str] = field(default_factory=dict[str, str])  # resource -> why
    services: list[str] = field(default_factory=list[str])  # the Pebble services inside

    @property
    def procs_files(self) -> list[str]:
        """The cgroup.procs files a service joins (one per distinct group folder)."""
        return sorted({g.procs for g in self.groups})

    def group(self, controller: str) -> Group | None:
        return next((g for g in self.groups if g.controller == controller), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "limits": self.limits.to_dict(),
            "groups": [vars(g) for g in self.groups],
            "not_enforced": dict(self.not_enforced),
            "services": list(self.services),
        }


@dataclass(frozen=True)
class StackGroups:
    """Every group a stack made (the folders, deepest first, for removal) and each placement."""

    placements: dict[str, Placement] = field(default_factory=dict[str, Placement])
    made: list[str] = field(default_factory=list[str])

    def to_dict(self) -> dict[str, Any]:
        return {
            "placements": {k: p.to_dict() for k, p in self.placements.items()},
            "made": list(self.made),
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "limits") -> StackGroups:
        return read(cls, data, where)


def _write(path: Path, value: str) -> None:
    with path.open("w") as out:
        out.write(value)


def _mkdir(path: Path, made: list[str]) -> None:
    path.mkdir(exist_ok=True)
    if str(path) not in made:
        made.insert(0, str(path))  # deepest first


def _enable(folder: Path, controller: str) -> None:
    """v2: let `folder`'s children use `controller` (EBUSY when `folder` holds processes)."""
    control = folder / "cgroup.subtree_control"
    if controller not in _read_words(control):
        _write(control, f"+{controller}")


def _v2_base(h: Hierarchy) -> Path:
    """v2: where the stack's group goes. Under this process's group when it can delegate the
    controller; else beside it, under its parent (a group holding processes, such as a desktop
    session's scope, delegates nothing, while its parent already hands it the controller)."""
    own = Path(h.path)
    try:
        _enable(own, h.controller)
    except OSError:
        parent = own.parent
        if parent == own or not (parent / "cgroup.controllers").exists():
            raise
        if h.controller not in _read_words(parent / "cgroup.subtree_control"):
            raise
        return parent
    return own


def _make_group(h: Hierarchy, stack: str, role: str, made: list[str]) -> Path:
    base = _v2_base(h) if h.version == 2 else Path(h.path)
    _mkdir(base / stack, made)
    if h.version == 2:
        _enable(base / stack, h.controller)
    _mkdir(base / stack / role, made)
    return base / stack / role


def group_beside(h: Hierarchy, root: Path, role: str, settings: Mapping[str, str],
                 made: list[str]) -> Path:  # fmt: skip
    """A group beside the stack's (`loadgate-<hash>-<role>`, where the stack's group goes),
    with `settings` written: a group that competes with the stack's processes, not inside
    the stack's group's share. OSError when it cannot be made or written."""
    base = _v2_base(h) if h.version == 2 else Path(h.path)
    folder = base / f"{stack_group_name(root)}-{role}"
    _mkdir(folder, made)
    for name, value in settings.items():
        _write(folder / name, value)
    return folder


def place(
    root: Path, wanted: Mapping[str, Limits], hierarchies: Mapping[str, Hierarchy] | None = None
) -> StackGroups:
    """Make a group per role with limits and write them; what fails is recorded, not raised."""
    found = this_process() if hierarchies is None else dict(hierarchies)
    stack = stack_group_name(root)
    made: list[str] = []
    placements: dict[str, Placement] = {}
    for role, limits in wanted.items():
        if not limits.any:
            continue
        groups: list[Group] = []
        missing: dict[str, str] = {}
        for controller in _CONTROLLERS:
            h = found.get(controller)
            settings = (v2_settings if h and h.version == 2 else v1_settings)(limits)
            if controller not in settings:
                continue
            if h is None:
                missing[controller] = f"no cgroup hierarchy with the {controller} controller"
                continue
            try:
                folder = _make_group(h, stack, role, made)
                for name, value in settings[controller].items():
                    if name in OPTIONAL_FILES and not (folder / name).exists():
                        continue
                    _write(folder / name, value)
            except OSError as exc:
                missing[controller] = why_unwritten(exc, h)
                continue
            groups.append(Group(controller, h.version, str(folder)))
        placements[role] = Placement(role, limits, groups, missing)
    return StackGroups(placements, made)


def why_unwritten(exc: OSError, h: Hierarchy) -> str:
    """Why a group's file could not be made or written (what a placement records)."""
    where = exc.filename or h.path
    text = f"cannot write {where} (cgroup v{h.version}): {exc.strerror or exc}"
    if h.version == 2 and exc.errno == errno.EBUSY:
        text += " (v2 lets a group with processes of its own delegate no controller)"
    return text


def enter(
    services: dict[str, dict[str, Any]],
    roles: Mapping[str, str],
    wanted: Mapping[str, Limits],
    root: Path,
    record: Path,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    also: StackGroups | None = None,
) -> StackGroups | None:
    """Place each charm container with limits (`roles`: service -> its charm) and start each
    of its Pebble services inside (their commands rewritten in place); the groups are recorded
    in `record` before any service starts, with `also` (groups already made, such as the CPU
    steal's). None: no limits and nothing else."""
    limited = {role: lim for role, lim in wanted.items() if lim.any}
    if not limited and also is None:
        return None
    placed = place(root, limited, hierarchies) if limited else StackGroups()
    extra = also or StackGroups()
    every = {**placed.placements, **extra.placements}
    inside = {role: sorted(n for n, r in roles.items() if r == role) for role in every}
    groups = StackGroups(
        {r: replace(p, services=inside[r]) for r, p in every.items()}, placed.made + extra.made
    )
    save(groups, record)
    for name, service in services.items():
        prefix = wrapper_argv(groups.placements.get(roles.get(name, "")))
        if prefix:
            service["command"] = shlex.join([*prefix, *shlex.split(service["command"])])
    return groups


def wrapper_argv(placement: Placement | None) -> list[str]:
    """The argv prefix that runs a command inside the placement's groups (none: empty)."""
    if placement is None or not placement.groups:
        return []
    return cgexec.prefix(placement.procs_files)


def members(folder: str) -> list[int]:
    """The processes in a group (empty when it is gone)."""
    try:
        return [int(p) for p in (Path(folder) / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def remove(made: list[str], timeout: float = 5.0) -> list[str]:
    """Remove the folders (deepest first), waiting up to `timeout` for exiting processes to
    leave them; returns the ones left, with why."""
    left: list[str] = []
    deadline = time.monotonic() + timeout
    for folder in made:
        while True:
            try:
                os.rmdir(folder)
                break
            except FileNotFoundError:
                break
            except OSError as exc:
                if exc.errno == errno.EBUSY and time.monotonic() < deadline:
                    time.sleep(0.1)
                    continue
                inside = members(folder)
                held = f" (processes {', '.join(map(str, inside))})" if inside else ""
                left.append(f"{folder}: {exc.strerror or exc}{held}")
                break
    return left


def save(groups: StackGroups, record: Path) -> None:
    """Write down what was made before anything runs in it (see Layout.cgroups_file)."""
    tmp = record.with_suffix(".tmp")
    tmp.write_text(json.dumps(groups.to_dict(), indent=2))
    tmp.replace(record)


def release(record: Path, timeout: float = 5.0) -> tuple[list[str], list[str]]:
    """Remove the groups a record names: (removed, left with why). The record goes once every
    group is gone; an unreadable record is left in place and reported."""
    try:
        groups = StackGroups.from_dict(json.loads(record.read_text()), str(record))
    except FileNotFoundError:
        return [], []
    except (OSError, ValueError) as exc:
        return [], [f"{record}: {exc}"]
    left = remove(groups.made, timeout)
    if not left:
        record.unlink(missing_ok=True)
    gone = [m for m in groups.made if not any(line.startswith(m + ":") for line in left)]
    return gone, left


def describe(groups: StackGroups) -> list[str]:
    """Lines for people: each container's limits, enforced where and how, or NOT enforced."""
    lines: list[str] = []
    for role, p in groups.placements.items():
        versions = "+".join(sorted({f"v{g.version}" for g in p.groups}))
        enforced = [c for c in _CONTROLLERS if p.group(c) is not None]
        if enforced:
            kept = Limits(
                cpu_millis=p.limits.cpu_millis if "cpu" in enforced else None,
                memory_bytes=p.limits.memory_bytes if "memory" in enforced else None,
            )
            lines.append(f"{role} limits enforced (cgroup {versions}): {kept.describe()}")
        for resource, why in p.not_enforced.items():
            asked = p.limits.memory if resource == "memory" else p.limits.cpu
            lines.append(f"{role} {resource} limit {asked} is NOT enforced: {why}")
        lines += [f"{role} {note}" for note in p.limits.notes]
    return lines
