"""The k6 charm ships copies of k6/ and src/loadgate/contract/: they must equal their sources.

Fix a failure with `scripts/sync-charm-files`; never edit the copies by hand.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHARM = ROOT / "charms" / "k6-k8s"
PAIRS = [
    (ROOT / "k6", CHARM / "src" / "k6", "*"),
    (ROOT / "src" / "loadgate" / "contract", CHARM / "src" / "loadgate_contract", "*.py"),
]


def files(folder: Path, pattern: str) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for path in folder.rglob(pattern):
        if path.is_file() and "__pycache__" not in path.parts:
            found[path.relative_to(folder).as_posix()] = path.read_bytes()
    return found


@pytest.mark.parametrize(("source", "copy", "pattern"), PAIRS, ids=["k6", "loadgate_contract"])
def test_copy_equals_source(source: Path, copy: Path, pattern: str) -> None:
    src, dst = files(source, pattern), files(copy, pattern)
    assert src, f"nothing found in {source}"
    hint = f"{copy.relative_to(ROOT)} differs from {source.relative_to(ROOT)}: "
    hint_end = "; run scripts/sync-charm-files"
    missing = sorted(set(src) - set(dst))
    assert not missing, f"{hint}missing {missing}{hint_end}"
    extra = sorted(set(dst) - set(src))
    assert not extra, f"{hint}extra {extra}{hint_end}"
    differ = sorted(name for name in set(src) & set(dst) if src[name] != dst[name])
    assert not differ, f"{hint}different {differ}{hint_end}"


def test_the_contract_imports_only_the_standard_library_and_itself() -> None:
    """The charm's copy is `loadgate_contract`, without loadgate: an absolute import of
    `loadgate.contract` would fail in the packed charm."""
    outside: list[str] = []
    for path in sorted((ROOT / "src" / "loadgate" / "contract").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            outside += [
                f"{path.name}: {n}" for n in names if n.split(".")[0] not in sys.stdlib_module_names
            ]
    assert outside == []
