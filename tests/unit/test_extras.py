"""Optional dependencies are named with the extra that installs them (loadgate.extras), and
that table agrees with pyproject.toml's extras."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from loadgate import extras

ROOT = Path(__file__).resolve().parents[2]


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
    base = {re.split(r"[<>=\[ ]", d)[0].lower() for d in project["dependencies"]}
    optional = project["optional-dependencies"]
    for module, extra in extras.EXTRA_OF.items():
        names = {re.split(r"[<>=\[ ]", d)[0].lower() for d in optional[extra]}
        assert module in names, f"{module} is not in loadgate[{extra}]"
        assert module not in base, f"{module} is in the base install"
