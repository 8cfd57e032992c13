"""Deploying the bundle: which charm each application runs, staged where the Juju CLI can read.

`stage` copies the bundle, the overlays and every local charm they name into one folder the juju
CLI can read (staging.py: ~/snap/juju/common/loadgate/… for the snap), with the charm paths made
absolute, puts a packed charm given on the command line in place of its application (with the
OCI images that charm's own metadata names), and writes the otelcol pin as an overlay. The bundle
checker then checks exactly those files, and `juju deploy <bundle> --trust --overlay …` deploys
them.
"""

from __future__ import annotations

import copy
import hashlib
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jubilant
import yaml

from loadgate import paths
from loadgate.bundle import charm_file
from loadgate.bundle import check as bundle_check
from loadgate.bundle.catalog import CatalogError
from loadgate.bundle.catalog import build as build_catalog

from .settings import OtelcolPin

# The applications a charm repository can replace with its own packed charm, and the charm
# each must be (a .charm of another charm given for one of them is refused).
CHARM_OF_APP: dict[str, str] = {
    "otelcol": "opentelemetry-collector-k8s",
    "loki": "loki-k8s",
    "k6": "loadgate-k6-k8s",
}


class DeployError(ValueError):
    """The deployment cannot be prepared (a missing or wrong charm, a bad overlay, a refused
    bundle); the message names the file, the application and what to do."""


@dataclass(frozen=True)
class LocalCharm:
    """A packed charm to deploy in place of an application, with its OCI images."""

    app: str
    path: Path
    name: str
    resources: Mapping[str, str]
    sha256: str

    @property
    def short_hash(self) -> str:
        return self.sha256[:12]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def parse_resource_options(values: Sequence[str]) -> dict[str, dict[str, str]]:
    """`--resource APP:NAME=IMAGE` (repeatable) -> {app: {name: image}}."""
    out: dict[str, dict[str, str]] = {}
    for value in values:
        app, sep, rest = value.partition(":")
        name, eq, image = rest.partition("=")
        if not (sep and eq and app and name and image):
            raise DeployError(
                f"--resource: must be APP:RESOURCE=IMAGE, e.g. "
                f"otelcol:opentelemetry-collector-image=ubuntu/opentelemetry-collector:0.130; "
                f"got {value!r}"
            )
        out.setdefault(app, {})[name] = image
    return out


def local_charm(
    app: str, path: Path, resources: Mapping[str, str] | None = None, *, option: str = ""
) -> LocalCharm:
    """A packed charm for `app`: it must be that application's charm, and every OCI image
    resource needs an image (its metadata's `upstream-source`, or `resources`)."""
    where = option or f"{app} charm"
    try:
        packed = charm_file.read(path)
    except charm_file.CharmFileError as exc:
        raise DeployError(f"{where}: {exc}") from None
    wanted = CHARM_OF_APP.get(app)
    if wanted is not None and packed.name != wanted:
        raise DeployError(
            f"{where}: {path} is the charm {packed.name!r}, not {wanted!r}: "
            f"application {app} runs {wanted}"
        )
    images = packed.oci_images()
    given = dict(resources or {})
    unknown = sorted(set(given) - set(images))
    if unknown:
        raise DeployError(
            f"{where}: {packed.name} has no OCI image resource {', '.join(unknown)}; "
            f"it has: {', '.join(sorted(images)) or 'none'}"
        )
    chosen: dict[str, str] = {}
    for name, image in sorted(images.items()):
        value = given.get(name) or image
        if not value:
            raise DeployError(
                f"{where}: {packed.name}'s resource {name} names no upstream-source image: "
                f"pass --resource {app}:{name}=IMAGE"
            )
        chosen[name] = value
    return LocalCharm(app, path.resolve(), packed.name, chosen, _sha256(path))


@dataclass(frozen=True)
class Staged:
    """The files of one deployment, in a folder the Juju CLI can read."""

    folder: Path
    bundle: Path
    overlays: tuple[Path, ...]
    charms: Mapping[str, Path] = field(default_factory=dict[str, Path])  # app -> staged .charm

    def deploy_args(self) -> list[str]:
        """`juju deploy` arguments (jubilant adds `--model` after `deploy`)."""
        args = ["deploy", str(self.bundle), "--trust"]
        for overlay in self.overlays:
            args += ["--overlay", str(overlay)]
        return args


def _pin_overlay(pin: OtelcolPin) -> dict[str, Any]:
    """The overlay that puts otelcol on the pinned channel (and revision)."""
    app: dict[str, Any] = {"channel": pin.channel}
    if pin.revision is not None:
        app["revision"] = pin.revision
    return {"applications": {"otelcol": app}}


def _copy_charm(source: Path, folder: Path, name: str) -> Path:
    target = folder / "charms" / name
    if target.exists():
        raise DeployError(f"two different charms would be staged as {name}")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


def _missing_charm(app: str, charm: str, resolved: Path, named_in: Path) -> DeployError:
    hint = f"{paths.PACK_HINT}, or pass" if resolved.name == paths.K6_CHARM_FILE else "pass"
    option = f"--{app}-charm" if app in CHARM_OF_APP else "another overlay"
    return DeployError(
        f"{app}: {named_in.name} deploys the local charm {charm}, and {resolved} does not exist: "
        f"{hint} {option}"
    )


def _localize(
    doc: dict[str, Any],
    named_in: Path,
    folder: Path,
    staged: dict[str, Path],
    given: Mapping[str, LocalCharm],
    *,
    overlay: bool,
) -> dict[str, Any]:
    """Copy each local charm a bundle/overlay names into the stage; its path made absolute.
    Applications whose charm was given on the command line keep that one."""
    out = copy.deepcopy(doc)
    for app, spec in (out.get("applications") or {}).items():
        if not isinstance(spec, dict):
            continue
        if app in given:
            if overlay and "charm" in spec:
                raise DeployError(
                    f"--overlay {named_in}: sets {app}'s charm, and --{app}-charm gives one too"
                )
            continue
        charm = spec.get("charm")  # pyright: ignore[reportUnknownMemberType]
        if not isinstance(charm, str) or not bundle_check.is_local_charm(charm):
            continue
        resolved = (named_in.parent / charm).resolve()
        if not resolved.is_file():
            raise _missing_charm(str(app), charm, resolved, named_in)
        target = _copy_charm(resolved, folder, f"{app}-{resolved.name}")
        staged[str(app)] = target
        spec["charm"] = str(target)
    return out


def _write(doc: Mapping[str, Any], path: Path, note: str) -> Path:
    path.write_text(f"# {note}\n" + yaml.safe_dump(dict(doc), sort_keys=False))
    return path


def stage(
    bundle: Path,
    folder: Path,
    *,
    charms: Mapping[str, LocalCharm] | None = None,
    pin: OtelcolPin | None = None,
    overlays: Sequence[Path] = (),
) -> Staged:
    """Copy the bundle, the charms given for its applications, the pin and the overlays into
    `folder` (which the Juju CLI must be able to read). Raises DeployError."""
    charms = dict(charms or {})
    try:
        doc = bundle_check.read_yaml(bundle)
    except bundle_check.BundleError as exc:
        raise DeployError(str(exc)) from None
    apps = doc.get("applications")
    if not isinstance(apps, dict):
        raise DeployError(f"{bundle}: has no `applications`")
    for app in sorted(set(charms) - set(apps)):  # pyright: ignore[reportUnknownArgumentType]
        raise DeployError(f"--{app}-charm: the bundle {bundle} has no application {app!r}")
    folder.mkdir(parents=True, exist_ok=True)
    staged: dict[str, Path] = {}
    for app, given in charms.items():
        spec: dict[str, Any] = dict(apps[app])
        for key in ("channel", "revision"):  # they do not apply to a local charm
            spec.pop(key, None)
        spec["charm"] = str(_copy_charm(given.path, folder, f"{app}-{given.path.name}"))
        spec["resources"] = dict(given.resources)
        staged[app] = Path(spec["charm"])
        apps[app] = spec
    doc = _localize(doc, bundle, folder, staged, charms, overlay=False)
    bundle_out = _write(doc, folder / "bundle.yaml", f"staged by loadgate from {bundle}")
    out: list[Path] = []
    if pin is not None and "otelcol" not in charms:
        out.append(_write(_pin_overlay(pin), folder / "otelcol-pin.yaml", f"otelcol: {pin.source}"))
    for index, overlay in enumerate(overlays):
        try:
            part = bundle_check.read_yaml(overlay)
        except bundle_check.BundleError as exc:
            raise DeployError(f"--overlay: {exc}") from None
        part = _localize(part, overlay, folder, staged, charms, overlay=True)
        name = f"overlay-{index}-{overlay.name}"
        out.append(_write(part, folder / name, f"staged by loadgate from {overlay}"))
    return Staged(folder, bundle_out, tuple(out), staged)


def check(staged: Staged) -> None:
    """The bundle checker over exactly the staged files; DeployError listing every problem."""
    try:
        catalog = build_catalog(paths.upstream_charms_file(), [paths.k6_charmcraft_file()])
        problems = bundle_check.check_files(staged.bundle, staged.overlays, catalog)
    except (CatalogError, bundle_check.BundleError) as exc:
        raise DeployError(str(exc)) from None
    if problems:
        listed = "\n".join(f"  {p}" for p in problems)
        raise DeployError(f"the staged bundle {staged.bundle} is refused:\n{listed}")


def deploy(juju: jubilant.Juju, staged: Staged) -> None:
    """`juju deploy <staged bundle> --trust --overlay …` (trust: the apps with `trust: true`).

    Not jubilant's deploy(): for a snap juju it copies a local path to `_temp.charm`, which
    would hide the bundle's folder (and the charms beside it) from Juju.
    """
    juju.cli(*staged.deploy_args())
