"""Packed charms for the fake world: .charm archives holding the metadata.yaml charmcraft writes
into every pack (what `juju deploy` and loadgate's deploy checks read from a packed charm)."""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from loadgate import paths

from .state import ROOT

K6_CHARMCRAFT = ROOT / "charms" / "k6-k8s" / "charmcraft.yaml"
UPSTREAM_CHARMS = ROOT / "src" / "loadgate" / "data" / "upstream-charms.yaml"
K6_METADATA_KEYS = ("name", "summary", "description", "containers", "resources", "peers",
                    "requires", "provides", "storage", "assumes")  # fmt: skip


def fake_charm(path: Path, metadata: Mapping[str, Any]) -> Path:
    """A .charm archive holding metadata.yaml (what charmcraft writes into every pack)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("metadata.yaml", yaml.safe_dump(dict(metadata)))
        z.writestr("manifest.yaml", "analysis: {}\n")
    return path


def k6_charm(path: Path) -> Path:
    """A packed k6 charm as charmcraft would pack charms/k6-k8s (its metadata only)."""
    source = yaml.safe_load(K6_CHARMCRAFT.read_text())
    return fake_charm(path, {k: source[k] for k in K6_METADATA_KEYS if k in source})


def upstream_charm(path: Path, charm: str, track: str, images: Mapping[str, str | None]) -> Path:
    """A packed upstream charm (as its own repository's CI packs it), with the endpoints and
    storage src/loadgate/data/upstream-charms.yaml records for that track, and OCI image resources
    (None: a resource whose metadata names no upstream-source)."""
    recorded = yaml.safe_load(UPSTREAM_CHARMS.read_text())["charms"][charm]["tracks"][track]
    metadata: dict[str, Any] = {"name": charm, "containers": {}, "resources": {}}
    for name, ep in recorded["endpoints"].items():
        entry = {"interface": ep["interface"], **({"limit": ep["limit"]} if "limit" in ep else {})}
        metadata.setdefault(ep["role"], {})[name] = entry
    metadata["storage"] = {name: {"type": "filesystem"} for name in recorded.get("storage", [])}
    for name, image in images.items():
        spec: dict[str, Any] = {"type": "oci-image", "description": name}
        if image:
            spec["upstream-source"] = image
        metadata["resources"][name] = spec
    return fake_charm(path, metadata)


def copy_bundles(to: Path, *, packed: bool = True) -> Path:
    """The repository's bundles/ copied to `to` (no .charm files), with a packed k6 charm next to
    the bundle as scripts/pack-k6-charm leaves it unless `packed` is False; the bundle file."""
    shutil.copytree(ROOT / "bundles", to, ignore=shutil.ignore_patterns("*.charm"))
    if packed:
        k6_charm(to / paths.K6_CHARM_FILE)
    return to / "bundle.yaml"
