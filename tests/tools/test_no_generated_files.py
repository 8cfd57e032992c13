"""The repository holds sources only: no private key and no output the CLI writes by default.

Tests make their keys at run time (stack/tls.py, fixtures); `loadgate charms render|diff`, `run`,
`search`, `compare` and `report` write into folders that `.gitignore` lists.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Built from parts so this file does not match itself.
KEY_MARKERS = (b"PRIVATE " + b"KEY-----",)
# Folders the CLI writes by default, relative to where it runs (the checkout in the Quick start).
OUTPUT_FOLDERS = ("results", "charm-render", "charm-diff")


def tracked_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    return [ROOT / name for name in out.decode().split("\0") if name]


def holds_private_key(path: Path) -> bool:
    try:
        data = path.read_bytes()
    except (IsADirectoryError, FileNotFoundError):
        return False  # a symbolic link to a folder, or a file deleted in the work tree
    return any(marker in data for marker in KEY_MARKERS)


def test_the_key_check_finds_a_key(tmp_path: Path) -> None:
    """The check itself works: a PEM private key in a file is found (the header is built here so
    this file does not hold one)."""
    pem = tmp_path / "server.key"
    pem.write_bytes(b"-----BEGIN " + b"RSA " + KEY_MARKERS[0] + b"\nMIIB\n")
    assert holds_private_key(pem)
    assert not holds_private_key(ROOT / "README.md")


def test_no_tracked_file_holds_a_private_key() -> None:
    found = [str(p.relative_to(ROOT)) for p in tracked_files() if holds_private_key(p)]
    assert found == [], f"private keys are committed: {found}"


@pytest.mark.parametrize("folder", OUTPUT_FOLDERS)
def test_no_default_output_folder_is_tracked(folder: str) -> None:
    tracked = [p for p in tracked_files() if p.relative_to(ROOT).parts[0] == folder]
    assert tracked == [], f"generated output is committed under {folder}/"


@pytest.mark.parametrize("folder", OUTPUT_FOLDERS)
def test_default_output_folders_are_ignored(folder: str) -> None:
    probe = f"{folder}/some-run/result.json"
    answer = subprocess.run(
        ["git", "check-ignore", "-q", probe], cwd=ROOT, capture_output=True, check=False
    )
    assert answer.returncode == 0, f"{folder}/ is not in .gitignore"
