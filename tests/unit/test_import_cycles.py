"""Arrows only point down: no package of src/loadgate imports, through any chain, a package that
imports it back, and no file does so with another file.

The imports are read from the sources (tests/support/imports.py): lazy ones, relative ones and
those under `if TYPE_CHECKING:` count (a type-only import ties two files as surely as a call).
A package is the first folder under src/loadgate (`records`, `capacity`, ...; a top-level file
such as `paths.py` is one of its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

from support.imports import Graph, loops, module_graph, package_graph, witness

import loadgate

SRC = Path(loadgate.__file__).parent.parent  # the folder holding the package
TOP = "loadgate"


def package_loop_text(modules: Graph, loop: Sequence[str], top: str = TOP) -> str:
    """`a -> b -> a (a/x.py imports b/y.py; b/y.py imports a/z.py)`."""

    def path(module: str) -> str:
        return module.removeprefix(f"{top}.").replace(".", "/") + ".py"

    ties = [witness(modules, top, a, b) for a, b in pairwise(loop)]
    why = "; ".join(f"{path(m)} imports {path(t)}" for m, t in ties)
    return f"{' -> '.join(loop)} ({why})"


def test_no_package_imports_one_that_imports_it_back() -> None:
    modules = module_graph(SRC, TOP)
    packages = package_graph(modules, TOP)
    assert {"capacity", "cli", "records", "measure", "stack"} <= packages.keys()
    found = [package_loop_text(modules, loop) for loop in loops(packages)]
    assert found == [], "package cycles:\n" + "\n".join(found)


def test_no_file_imports_one_that_imports_it_back() -> None:
    modules = module_graph(SRC, TOP)
    assert len(modules) > 150
    found = [" -> ".join(loop) for loop in loops(modules)]
    assert found == [], "file cycles:\n" + "\n".join(found)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_loop_through_a_type_checking_import_is_found_and_named(tmp_path: Path) -> None:
    src = write(
        tmp_path,
        {
            "top/__init__.py": "",
            "top/low/__init__.py": "",
            "top/low/a.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from top.high.b import B\n",
            "top/high/__init__.py": "",
            "top/high/b.py": "from ..low import a\n",
            "top/high/c.py": "import json\nfrom . import b\n",
            "top/paths.py": "import os\n",
        },
    )
    modules = module_graph(src, "top")
    assert modules["top.high.c"] == {"top.high.b"}
    assert modules["top.high.b"] == {"top.low.a"}  # a module named by `from package import`
    assert loops(modules) == [["top.high.b", "top.low.a", "top.high.b"]]
    packages = package_graph(modules, "top")
    assert packages == {"__init__": set(), "low": {"high"}, "high": {"low"}, "paths": set()}
    assert [package_loop_text(modules, loop, "top") for loop in loops(packages)] == [
        "high -> low -> high (high/b.py imports low/a.py; low/a.py imports high/b.py)"
    ]


def test_a_lazy_import_counts_and_a_chain_one_way_is_no_loop(tmp_path: Path) -> None:
    src = write(
        tmp_path,
        {
            "top/__init__.py": "",
            "top/a.py": "from top import b\n",
            "top/b.py": "def f() -> None:\n    from top.c import g\n",
            "top/c.py": "from top.d import x\n",
            "top/d.py": "x = 1\n",
        },
    )
    modules = module_graph(src, "top")
    assert loops(modules) == []
    (src / "top" / "d.py").write_text("def f() -> None:\n    from . import a\n")
    assert loops(module_graph(src, "top")) == [["top.a", "top.b", "top.c", "top.d", "top.a"]]
