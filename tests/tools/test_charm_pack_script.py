"""scripts/pack-k6-charm: `charmcraft pack` in charms/k6-k8s, then bundles/loadgate-k6-k8s.charm.

charmcraft cannot pack on this machine (no LXD); a fake `charmcraft` on PATH records how it is
called and writes what `charmcraft pack` writes: `<name>_<platform>.charm` in the project dir.
The script runs in a copy of the repository's layout, so the real tree is never written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "pack-k6-charm"
TOOLS = ("bash", "dirname", "diff", "rm", "cp", "mv", "mkdir")

FAKE_CHARMCRAFT = """#!/bin/sh
printf '%s\\n' "$PWD" "$@" > "{log}"
echo "Packing the charm..." >&2
[ -n "{fail}" ] && {{ echo "charmcraft internal error: boom" >&2; exit 1; }}
printf 'PK fake charm' > "$PWD/loadgate-k6-k8s_amd64.charm"
echo "Packed loadgate-k6-k8s_amd64.charm"
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The parts of the repository the script reads, with the charm's copies in sync."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(SCRIPT, root / "scripts" / SCRIPT.name)
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "k6", root / "k6", ignore=ignore)
    shutil.copytree(
        ROOT / "src" / "loadgate" / "contract", root / "src/loadgate/contract", ignore=ignore
    )
    charm = root / "charms" / "k6-k8s"
    shutil.copytree(ROOT / "k6", charm / "src" / "k6", ignore=ignore)
    shutil.copytree(
        ROOT / "src" / "loadgate" / "contract", charm / "src/loadgate_contract", ignore=ignore
    )
    shutil.copy2(ROOT / "charms" / "k6-k8s" / "charmcraft.yaml", charm / "charmcraft.yaml")
    return root


def path_with(tmp_path: Path, *, charmcraft: bool, fail: bool = False) -> str:
    """A PATH with only the tools the script needs, and the fake charmcraft if asked."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found, f"{tool} is needed on this machine"
        (bin_dir / tool).symlink_to(found)
    if charmcraft:
        fake = bin_dir / "charmcraft"
        log = tmp_path / "charmcraft-argv"
        fake.write_text(FAKE_CHARMCRAFT.format(log=log, fail="yes" if fail else ""))
        fake.chmod(0o755)
    return str(bin_dir)


def run(tree: Path, path: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": path, "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [str(tree / "scripts" / SCRIPT.name), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_packs_and_puts_the_charm_where_the_bundle_names_it(tree: Path, tmp_path: Path) -> None:
    proc = run(tree, path_with(tmp_path, charmcraft=True), "--verbose")
    assert proc.returncode == 0, proc.stderr
    dest = tree / "bundles" / "loadgate-k6-k8s.charm"
    assert proc.stdout == f"{dest}\n"  # only the path: `charm=$(scripts/pack-k6-charm)`
    assert dest.read_bytes() == b"PK fake charm"
    assert "Packing the charm" in proc.stderr
    assert "Packed loadgate-k6-k8s_amd64.charm" in proc.stderr  # charmcraft's stdout too
    cwd, *argv = (tmp_path / "charmcraft-argv").read_text().splitlines()
    assert cwd == str(tree / "charms" / "k6-k8s")
    assert argv == ["pack", "--verbose"]
    assert sorted(p.name for p in (tree / "bundles").iterdir()) == ["loadgate-k6-k8s.charm"]


def test_arguments_reach_charmcraft_as_they_are(tree: Path, tmp_path: Path) -> None:
    odd = "--project-dir=a b;$(touch pwned)"
    proc = run(tree, path_with(tmp_path, charmcraft=True), odd)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "charmcraft-argv").read_text().splitlines()[1:] == ["pack", odd]
    assert not list(tmp_path.rglob("pwned"))


def test_a_stale_pack_in_the_charm_dir_is_not_taken(tree: Path, tmp_path: Path) -> None:
    stale = tree / "charms" / "k6-k8s" / "loadgate-k6-k8s_arm64.charm"
    stale.write_bytes(b"old")
    proc = run(tree, path_with(tmp_path, charmcraft=True))
    assert proc.returncode == 0, proc.stderr
    assert (tree / "bundles" / "loadgate-k6-k8s.charm").read_bytes() == b"PK fake charm"


def test_missing_charmcraft_fails_clearly(tree: Path, tmp_path: Path) -> None:
    proc = run(tree, path_with(tmp_path, charmcraft=False))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("pack-k6-charm: charmcraft is not on PATH")
    assert not (tree / "bundles").exists()


def test_a_failed_pack_fails_clearly(tree: Path, tmp_path: Path) -> None:
    proc = run(tree, path_with(tmp_path, charmcraft=True, fail=True))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "charmcraft internal error: boom" in proc.stderr
    assert "pack-k6-charm: `charmcraft pack` failed (exit 1)" in proc.stderr
    assert not (tree / "bundles").exists()


def test_stale_copies_are_refused_before_packing(tree: Path, tmp_path: Path) -> None:
    (tree / "k6" / "otlp-logs.js").write_text("// edited, not synced\n")
    proc = run(tree, path_with(tmp_path, charmcraft=True))
    assert proc.returncode == 2
    assert "run scripts/sync-charm-files first" in proc.stderr
    assert not (tmp_path / "charmcraft-argv").exists()  # charmcraft never ran
