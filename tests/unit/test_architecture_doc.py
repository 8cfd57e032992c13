"""docs/architecture.md is the layout of record: every module of src/loadgate appears in it, in
its package's row of the package table (a sub-package's modules after its name), and the
modules it names exist."""

from __future__ import annotations

import re
from pathlib import Path

import loadgate

SRC = Path(loadgate.__file__).parent
DOC = SRC.parents[1] / "docs" / "architecture.md"


def modules() -> list[Path]:
    return sorted(
        p.relative_to(SRC)
        for p in SRC.rglob("*.py")
        if p.name != "__init__.py" and "data" not in p.relative_to(SRC).parts
    )


def package_rows() -> dict[str, str]:
    """Each row of the package table: `| `pkg/` | ... |`, by package."""
    rows: dict[str, str] = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"^\| `([a-z_]+)/` \| (.*)\|$", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_every_module_is_in_the_layout_of_record() -> None:
    rows = package_rows()
    text = DOC.read_text()
    missing: list[str] = []
    for module in modules():
        parts = module.parts
        if len(parts) == 1:  # a top-level module: named anywhere in the doc
            if f"`{module.name}`" not in text:
                missing.append(str(module))
            continue
        row = rows.get(parts[0], "")
        wanted = [f"{parts[-1]}`", *(f"`{p}/" for p in parts[1:-1])]
        if not row or any(w not in row for w in wanted):
            missing.append(str(module))
    assert missing == [], f"not in docs/architecture.md's package table: {missing}"


def test_every_package_has_a_row_and_every_row_a_package() -> None:
    packages = {p.parts[0] for p in modules() if len(p.parts) > 1}
    assert set(package_rows()) == packages


def test_every_module_the_table_names_exists() -> None:
    """A module named in a package's row that no longer exists (renamed or removed) is caught."""
    names = {p.name for p in modules()} | {"__init__.py"}
    stale: list[str] = []
    for package, row in package_rows().items():
        for name in re.findall(r"`(?:[a-z_]+/)*([a-z_]+\.py)`", row):
            if name not in names:
                stale.append(f"{package}/: {name}")
    assert stale == []
