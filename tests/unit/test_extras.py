"""Optional dependencies are named with the extra that installs them (loadgate.extras), and
that table agrees with pyproject.toml's extras."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

from loadgate import extras

ROOT = Path(__file__).resolve().parents[2]


def _names(requirements: list[str]) -> set[str]:
    """The distribution names of pyproject requirements (`httpx>=0.27` -> httpx)."""
    return {re.split(r"[<>=\[ ]", d)[0].lower() for d in requirements}


def test_a_missing_optional_module_names_its_extra() -> None:
    found = extras.missing(ModuleNotFoundError("No module named 'scipy'", name="scipy.special"))
    assert isinstance(found, extras.MissingExtraError)
    assert str(found) == (
        "scipy is not installed: this needs loadgate[stats] (pip install 'loadgate[stats]')"
    )


def test_any_other_missing_module_is_left_alone() -> None:
    assert extras.missing(ModuleNotFoundError("No module named 'nope'", name="nope")) is None
    with pytest.raises(ModuleNotFoundError) as err:
        extras.load("loadgate_no_such_module")
    assert not isinstance(err.value, extras.MissingExtraError)


def test_each_optional_module_is_in_the_extra_named_for_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = _names(project["dependencies"])
    optional = project["optional-dependencies"]
    for module, extra in extras.EXTRA_OF.items():
        names = _names(optional[extra])
        assert module in names, f"{module} is not in loadgate[{extra}]"
        assert module not in base, f"{module} is in the base install"


# Import names whose distribution is named otherwise.
_DISTRIBUTION = {"yaml": "pyyaml"}
# What loadgate imports that no install of loadgate needs: the charms' own modules, imported
# only inside the charm drivers, which run in the charms' virtualenvs (loadgate.charms.venvs).
_CHARM_VENV_ONLY = ("loadgate.charms.drivers",)


def _third_party_imports() -> dict[str, set[str]]:
    """Top-level third-party modules imported by loadgate's own modules, with where."""
    src = ROOT / "src" / "loadgate"
    found: dict[str, set[str]] = {}
    for path in src.rglob("*.py"):
        module = ".".join(path.relative_to(src.parent).with_suffix("").parts)
        if module.startswith(_CHARM_VENV_ONLY):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "loadgate" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(module)
    return found


def test_every_module_loadgate_imports_is_installed_by_the_base_or_its_extra() -> None:
    """A module imported but declared nowhere breaks an installed loadgate that the
    development env hides (it had ops: `loadgate[local]` lacked the Pebble client)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = _names(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared |= _names(extra)
    undeclared = {
        top: sorted(where)
        for top, where in _third_party_imports().items()
        if _DISTRIBUTION.get(top, top) not in declared
    }
    assert not undeclared, f"imported, in neither the base install nor an extra: {undeclared}"
