"""loadgate's optional dependencies, and the extra that installs each (pyproject.toml).

The base install is the charm CI gate's (loadgate[gate]); the command line and the local stack
need `local`, the report's plots `plots`, the comparison rule `stats`. A missing one is named
with the extra that brings it, never a bare ImportError.
"""

from __future__ import annotations

import importlib
from types import ModuleType

EXTRA_OF = {
    "rich": "local",
    "cryptography": "local",
    "uv": "local",
    "packaging": "local",
    "ops": "local",
    "h11": "local",
    "matplotlib": "plots",
    "scipy": "stats",
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


def missing(exc: ModuleNotFoundError) -> MissingExtraError | None:
    """What an import error means: the extra to install, or None (not an optional module)."""
    name = (exc.name or "").split(".")[0]
    extra = EXTRA_OF.get(name)
    if extra is None:
        return None
    return MissingExtraError(
        f"{name} is not installed: this needs loadgate[{extra}] (pip install 'loadgate[{extra}]')"
    )


def load(module: str) -> ModuleType:
    """Import an optional module, or raise MissingExtraError naming its extra."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise (missing(exc) or exc) from None
