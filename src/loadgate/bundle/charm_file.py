"""What a packed charm (`.charm`, a zip archive) says about itself.

charmcraft writes the charm's `metadata.yaml` (name, endpoints, storage, containers, resources)
into every archive it packs, also for a unified charmcraft.yaml; an archive without it but with a
charmcraft.yaml is read from that. Used to deploy a freshly packed charm in place of a bundle
application (its OCI images come from its own resources' `upstream-source`) and by the bundle
checker to read a local charm's endpoints.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_METADATA_FILES = ("metadata.yaml", "charmcraft.yaml")


class CharmFileError(ValueError):
    """The file is not a packed charm, or its metadata cannot be read (the message says which)."""


@dataclass(frozen=True)
class CharmFile:
    path: Path
    metadata: Mapping[str, Any]
    source: str  # the member the metadata was read from, e.g. metadata.yaml

    @property
    def name(self) -> str:
        return str(self.metadata["name"])

    @property
    def resources(self) -> dict[str, Mapping[str, Any]]:
        raw = self.metadata.get("resources") or {}
        if not isinstance(raw, Mapping):
            return {}
        return {str(k): v for k, v in raw.items() if isinstance(v, Mapping)}  # pyright: ignore[reportUnknownVariableType]

    def oci_images(self) -> dict[str, str | None]:
        """Each OCI image resource with the image its metadata names (None when it names none)."""
        out: dict[str, str | None] = {}
        for name, spec in self.resources.items():
            if spec.get("type") == "oci-image":
                source = spec.get("upstream-source")
                out[name] = str(source) if isinstance(source, str) and source else None
        return out


def read(path: Path) -> CharmFile:
    """Read a packed charm's metadata. Raises CharmFileError naming the file and the problem."""
    try:
        archive = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise CharmFileError(f"{path}: no such file") from None
    except (OSError, zipfile.BadZipFile) as exc:
        raise CharmFileError(f"{path}: not a packed charm (zip archive): {exc}") from None
    with archive:
        names = set(archive.namelist())
        for member in _METADATA_FILES:
            if member not in names:
                continue
            try:
                data = yaml.safe_load(archive.read(member))
            except yaml.YAMLError as exc:
                raise CharmFileError(f"{path}: {member} is not valid YAML: {exc}") from None
            if not isinstance(data, dict) or not isinstance(data.get("name"), str):
                raise CharmFileError(f"{path}: {member} has no charm `name`")
            return CharmFile(path, data, member)  # pyright: ignore[reportUnknownArgumentType]
    raise CharmFileError(f"{path}: has neither {' nor '.join(_METADATA_FILES)}: not a packed charm")
