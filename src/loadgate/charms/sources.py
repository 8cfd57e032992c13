"""Charm sources: which code of the otelcol or Loki charm the local stack renders.

A source is one of
- a checkout: a folder holding the charm (`charmcraft.yaml`), e.g. `.` in the charm's own CI;
- a git repository plus a ref: `LOCATION@REF`, where LOCATION is a repository folder, a git
  bundle file or a URL, and REF a tag, branch or commit. A revision number (`rev221`, `221`)
  resolves through the repository's `revN` tags (one per Charmhub upload);
- a snapshot archive (`.tar.gz` of the repository at one commit), as `../shared` holds;
- `@REF` or a bare revision (`rev160`, `160`): the charm's default repository at that ref.

Resolving a source materializes it as a folder in the cache (`charm-src/<commit>`), records the
commit, the revisions tagged on it, the charm's base and its workload image tag (the rock tag,
e.g. `0.130-26.04`), which decides the workload version the stack must run.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from .. import paths

_CHARMS = ("otelcol", "loki", "prometheus")
ENV_SOURCES_DIR = "LOADGATE_CHARM_SOURCES"


@dataclass(frozen=True)
class _Known:
    """What loadgate knows of one charm: its name, repository and the pinned revision."""

    role: str
    name: str
    url: str
    snapshot: str  # file name in the charm-sources folder
    pinned: str  # the source `loadgate run` renders by default
    container: str  # the workload container, whose image tag is the workload version


KNOWN: dict[str, _Known] = {
    "otelcol": _Known(
        role="otelcol",
        name="opentelemetry-collector-k8s",
        url="https://github.com/canonical/opentelemetry-collector-k8s-operator",
        snapshot="opentelemetry-collector-k8s-operator.bundle",
        pinned="rev221",
        container="otelcol",
    ),
    "loki": _Known(
        role="loki",
        name="loki-k8s",
        url="https://github.com/canonical/loki-k8s-operator",
        snapshot="loki-k8s-operator-rev244-5178fa41f9f6.tar.gz",
        pinned="rev244",
        container="loki",
    ),
    # Rendered for its provider libraries only (remote write, tracing): its lib/ is the code
    # that writes the bundle's `send-remote-write` and `send-traces` data (charms/signals.py).
    "prometheus": _Known(
        role="prometheus",
        name="prometheus-k8s",
        url="https://github.com/canonical/prometheus-k8s-operator",
        snapshot="prometheus-k8s-operator-rev309-7307c58ccb20.tar.gz",
        pinned="rev309",
        container="prometheus",
    ),
}

_REVISION_RE = re.compile(r"^(?:rev)?(\d{1,6})$", re.ASCII)
# A tag, branch or commit, with git's ancestry suffixes (`main~2`, `HEAD^`, `rev221^2`).
_REF_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}(?:[~^][0-9]{0,3}){0,20}$", re.ASCII)
_SNAPSHOT_NAME_RE = re.compile(r"-rev(\d+)-([0-9a-f]{7,40})\.tar\.gz$", re.ASCII)
_IMAGE_TAG_RE = re.compile(r"oci-image tag:\s*([A-Za-z0-9][A-Za-z0-9._-]*)", re.ASCII)
_BASE_PYTHON = {"20.04": "3.8", "22.04": "3.10", "24.04": "3.12", "26.04": "3.14"}


class SourceError(ValueError):
    """A charm source cannot be understood, found or resolved; the message says which and why."""


@dataclass(frozen=True)
class SourceSpec:
    """A charm source as the user gave it, parsed but not yet resolved."""

    role: str  # otelcol | loki
    kind: str  # checkout | git | snapshot
    location: str  # folder, repository, bundle file, archive or URL
    ref: str | None = None  # git ref (kind git)
    given: str = ""  # the text the user gave

    @property
    def is_url(self) -> bool:
        return "://" in self.location or self.location.startswith("git@")


@dataclass(frozen=True)
class CharmSource:
    """A resolved source: a folder with the charm's code and where it came from."""

    role: str
    name: str  # the charm's name in charmcraft.yaml
    given: str
    kind: str
    location: str
    ref: str | None
    commit: str | None  # None for a checkout outside git
    dirty: bool  # a checkout with uncommitted changes
    revisions: tuple[int, ...]  # Charmhub revisions tagged on the commit
    path: Path
    base: str | None  # e.g. ubuntu@26.04
    workload_tag: str | None  # the workload image's tag, e.g. 0.130-26.04
    lock_sha256: str  # of uv.lock: the charm's virtualenv is keyed by it

    @property
    def base_python(self) -> str | None:
        """The python3 of the charm's base: what the packed charm runs on."""
        if self.base is None:
            return None
        return _BASE_PYTHON.get(self.base.rpartition("@")[2])

    @property
    def workload_series(self) -> str | None:
        """`0.130` of `0.130-26.04`: the workload version the image carries."""
        if not self.workload_tag:
            return None
        return self.workload_tag.split("-", 1)[0]

    @property
    def label(self) -> str:
        """Short text for tables: `rev221 (2a77867)`, `checkout 2a77867+dirty`."""
        commit = (self.commit or "")[:7]
        dirty = "+dirty" if self.dirty else ""
        if self.revisions:
            revs = "/".join(f"rev{r}" for r in self.revisions)
            return f"{revs} ({commit}){dirty}"
        if self.kind == "checkout":
            return f"checkout {commit or self.path}{dirty}"
        return f"{self.ref or ''} ({commit})".strip()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["path"] = str(self.path)
        data["revisions"] = list(self.revisions)
        data["workload_series"] = self.workload_series
        return data


# ---- parsing (pure) -----------------------------------------------------------------------


def sources_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """The folder of offline charm snapshots: $LOADGATE_CHARM_SOURCES, else `../shared/
    charm-sources` beside a loadgate checkout; None when neither exists."""
    environ = os.environ if env is None else env
    override = environ.get(ENV_SOURCES_DIR)
    if override:
        return Path(override).expanduser()
    checkout = paths.k6_dir().parent  # the repository, when loadgate runs from a checkout
    candidate = checkout.parent / "shared" / "charm-sources"
    return candidate if candidate.is_dir() else None


def default_location(role: str, folder: Path | None) -> str:
    """Where `role`'s default repository is: the offline snapshot when present, else GitHub."""
    known = KNOWN[role]
    if folder is not None and (folder / known.snapshot).is_file():
        return str(folder / known.snapshot)
    return known.url


def parse(role: str, text: str, folder: Path | None = None) -> SourceSpec:
    """Parse `--otelcol-charm TEXT` / `--loki-charm TEXT` (see the module docstring)."""
    if role not in KNOWN:
        raise SourceError(f"charm: must be one of {', '.join(_CHARMS)}; got {role!r}")
    flag = f"--{role}-charm"
    value = text.strip()
    if not value or value != text or any(c in value for c in "\n\r\t"):
        raise SourceError(f"{flag}: must be a path, LOCATION@REF, @REF or revN; got {text!r}")
    if _REVISION_RE.match(value):
        value = "@" + value
    location, sep, ref = value.rpartition("@") if "@" in value else (value, "", "")
    if sep and not location.startswith("git@") and "@" in location and "://" not in location:
        raise SourceError(f"{flag}: more than one '@' in {text!r}")
    if sep:
        if not ref:
            raise SourceError(f"{flag}: nothing after '@' in {text!r}; give a ref such as rev221")
        ref = _normalize_ref(ref)
        if not _REF_RE.match(ref) or ".." in ref:
            raise SourceError(
                f"{flag}: {ref!r} is not a git ref (tag, branch or commit, optionally with ~N "
                "or ^N after it)"
            )
        loc = location or default_location(role, folder)
        kind = "snapshot" if loc.endswith(".tar.gz") else "git"
        if kind == "snapshot":
            raise SourceError(f"{flag}: a snapshot archive holds one commit; drop '@{ref}'")
        return SourceSpec(role, "git", loc, ref, text)
    if value.endswith(".tar.gz"):
        return SourceSpec(role, "snapshot", value, None, text)
    return SourceSpec(role, "checkout", value, None, text)


def _normalize_ref(ref: str) -> str:
    m = _REVISION_RE.match(ref)
    return f"rev{int(m.group(1))}" if m else ref


def default_spec(role: str, folder: Path | None = None) -> SourceSpec:
    """The pinned source of `role`: what `loadgate run` renders when told nothing."""
    known = KNOWN[role]
    loc = default_location(role, folder)
    if loc.endswith(".tar.gz"):
        return SourceSpec(role, "snapshot", loc, None, f"{known.snapshot} (pinned {known.pinned})")
    return SourceSpec(role, "git", loc, known.pinned, f"@{known.pinned} (pinned)")


def workload_tag(charmcraft_text: str, container: str) -> str | None:
    """The image tag of the container's resource, from its `# renovate: oci-image tag:` note
    or from a tag in `upstream-source`."""
    data = yaml.safe_load(charmcraft_text) or {}
    resource = ((data.get("containers") or {}).get(container) or {}).get("resource")
    source = ((data.get("resources") or {}).get(resource) or {}).get("upstream-source")
    if not isinstance(source, str):
        return None
    for line in charmcraft_text.splitlines():
        if source in line:
            m = _IMAGE_TAG_RE.search(line)
            if m:
                return m.group(1)
    image = source.split("@", 1)[0]
    name, _, tag = image.rpartition(":")
    return tag if name and "/" not in tag else None


def charm_base(charmcraft_text: str) -> str | None:
    """`ubuntu@26.04` from `base:`, or the newest base of `platforms:` / `bases:`."""
    data = yaml.safe_load(charmcraft_text) or {}
    found: list[str] = []
    if isinstance(data.get("base"), str):
        found.append(data["base"])
    for key in data.get("platforms") or {}:
        m = re.match(r"^(ubuntu@\d\d\.\d\d)", str(key))
        if m:
            found.append(m.group(1))
    for entry in data.get("bases") or []:
        for item in (entry.get("run-on") or [entry]) if isinstance(entry, dict) else []:
            if isinstance(item, dict) and item.get("name") and item.get("channel"):
                found.append(f"{item['name']}@{item['channel']}")
    return max(found, key=lambda b: b.rpartition("@")[2]) if found else None


# ---- resolving (git and the cache) ---------------------------------------------------------


def _git(*args: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SourceError(f"git {' '.join(args[:3])} failed: {proc.stderr.strip()[-300:]}")
    return proc.stdout.strip()


_ENV_CACHE_DIR = "LOADGATE_CACHE_DIR"


def cache_dir() -> Path:
    """Where charm code, repositories, venvs and bytecode are cached: $LOADGATE_CACHE_DIR, else
    $XDG_CACHE_HOME/loadgate (~/.cache/loadgate), beside the binaries' default folder."""
    override = os.environ.get(_ENV_CACHE_DIR)
    if override:
        return Path(override).expanduser()
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "loadgate"


def _repository(spec: SourceSpec) -> Path:
    """A local git directory for the spec's location (a mirror for bundles and URLs)."""
    loc = spec.location
    if not spec.is_url:
        path = Path(loc).expanduser().resolve()
        if not path.exists():
            raise SourceError(f"--{spec.role}-charm: {loc} does not exist")
        if path.is_dir():
            return path
    key = hashlib.sha256(loc.encode()).hexdigest()[:16]
    mirror = cache_dir() / "charm-repos" / key
    if not mirror.is_dir():
        mirror.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="clone-", dir=mirror.parent))
        try:
            _git("clone", "--quiet", "--mirror", loc, str(tmp / "repo.git"))
        except SourceError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            hint = (
                f" (no network here? point ${ENV_SOURCES_DIR} at a folder of the charms'"
                " snapshots, or run from a loadgate checkout beside ../shared/charm-sources)"
            )
            raise SourceError(
                f"--{spec.role}-charm: cannot clone {loc}: {exc}{hint if spec.is_url else ''}"
            ) from None
        os.replace(tmp / "repo.git", mirror)
        shutil.rmtree(tmp, ignore_errors=True)
    return mirror


def _revision_tags(repo: Path, commit: str) -> tuple[int, ...]:
    tags = _git("tag", "--points-at", commit, "--list", "rev*", cwd=repo).split()
    return tuple(sorted(int(t[3:]) for t in tags if t[3:].isdigit()))


def _missing_revision(repo: Path, role: str, ref: str) -> SourceError:
    wanted = int(ref[3:])
    tagged = sorted(
        int(t[3:]) for t in _git("tag", "--list", "rev*", cwd=repo).split() if t[3:].isdigit()
    )
    below = [r for r in tagged if r < wanted][-1:]
    above = [r for r in tagged if r > wanted][:1]
    near = ", ".join(f"rev{r}" for r in below + above) or "none"
    return SourceError(
        f"--{role}-charm: revision {wanted} has no tag {ref} in {repo} (a revision without a "
        f"tag cannot be mapped to its code); nearest tagged revisions: {near}"
    )


def _extract_commit(repo: Path, commit: str, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="src-", dir=dest.parent))
    archive = tmp / "src.tar"
    try:
        _git("archive", "--format=tar", "-o", str(archive), commit, cwd=repo)
        with tarfile.open(archive) as tar:
            tar.extractall(tmp / "tree", filter="data")
        os.replace(tmp / "tree", dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _extract_snapshot(archive: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="snap-", dir=dest.parent))
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(tmp / "tree", filter="data")
        tree = tmp / "tree"
        entries = list(tree.iterdir())
        if len(entries) == 1 and entries[0].is_dir() and not (tree / "charmcraft.yaml").exists():
            tree = entries[0]  # an archive with one top folder
        os.replace(tree, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def resolve(spec: SourceSpec) -> CharmSource:
    """Materialize the spec's code in the cache (or use the checkout) and describe it."""
    flag = f"--{spec.role}-charm"
    src_cache = cache_dir() / "charm-src"
    commit: str | None = None
    revisions: tuple[int, ...] = ()
    dirty = False
    if spec.kind == "checkout":
        path = Path(spec.location).expanduser().resolve()
        if not (path / "charmcraft.yaml").is_file():
            raise SourceError(
                f"{flag}: {spec.location} is not a charm checkout (no charmcraft.yaml); give a "
                "folder, LOCATION@REF, @REF or revN"
            )
        if (path / ".git").exists():
            commit = _git("rev-parse", "HEAD", cwd=path)
            dirty = bool(_git("status", "--porcelain", "--untracked-files=no", cwd=path))
            revisions = _revision_tags(path, commit)
    elif spec.kind == "snapshot":
        archive = Path(spec.location).expanduser().resolve()
        if not archive.is_file():
            raise SourceError(f"{flag}: snapshot {spec.location} does not exist")
        m = _SNAPSHOT_NAME_RE.search(archive.name)
        if m:
            revisions, commit = (int(m.group(1)),), m.group(2)
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()[:16]
        path = src_cache / f"snapshot-{digest}"
        if not path.is_dir():
            _extract_snapshot(archive, path)
    else:
        assert spec.ref is not None
        repo = _repository(spec)
        try:
            commit = _git("rev-parse", "--verify", "--quiet", f"{spec.ref}^{{commit}}", cwd=repo)
        except SourceError:
            if re.match(r"^rev\d+$", spec.ref):
                raise _missing_revision(repo, spec.role, spec.ref) from None
            raise SourceError(
                f"{flag}: {spec.ref!r} is not a tag, branch or commit of {spec.location}"
            ) from None
        revisions = _revision_tags(repo, commit)
        path = src_cache / commit
        if not path.is_dir():
            _extract_commit(repo, commit, path)
    return _describe(spec, path, commit, revisions, dirty)


def _describe(
    spec: SourceSpec, path: Path, commit: str | None, revisions: tuple[int, ...], dirty: bool
) -> CharmSource:
    flag = f"--{spec.role}-charm"
    charmcraft = path / "charmcraft.yaml"
    if not charmcraft.is_file():
        raise SourceError(f"{flag}: {spec.given or spec.location} holds no charmcraft.yaml")
    text = charmcraft.read_text()
    data = yaml.safe_load(text) or {}
    name = str(data.get("name") or "")
    known = KNOWN[spec.role]
    if name != known.name:
        raise SourceError(
            f"{flag}: {spec.given or spec.location} is the charm {name or '(unnamed)'!r}, "
            f"not {known.name}"
        )
    lock = path / "uv.lock"
    if not lock.is_file():
        raise SourceError(
            f"{flag}: {spec.given or spec.location} has no uv.lock; loadgate renders charms "
            "whose dependencies are locked with uv"
        )
    return CharmSource(
        role=spec.role,
        name=name,
        given=spec.given or spec.location,
        kind=spec.kind,
        location=spec.location,
        ref=spec.ref,
        commit=commit,
        dirty=dirty,
        revisions=revisions,
        path=path,
        base=charm_base(text),
        workload_tag=workload_tag(text, known.container),
        lock_sha256=hashlib.sha256(lock.read_bytes()).hexdigest(),
    )
