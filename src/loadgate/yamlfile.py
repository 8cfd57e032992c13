"""Read a YAML file that must hold a mapping, with errors that name the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def load_mapping(
    path: Path, error: type[Exception], what: str = "a YAML mapping"
) -> dict[str, Any]:
    """The mapping in `path`; any problem raises `error` with the path and what is wrong."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise error(f"{path}: must be {what}")
    return data  # pyright: ignore[reportUnknownVariableType]
