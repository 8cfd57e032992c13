"""`python -m loadgate.cli` and the `loadgate` console script reach the same main, in a process of
its own (the command line's layout: tests/unit/test_cli_layout.py); the script, loadgate.entry,
names the extra a missing dependency needs."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from loadgate.cli import common

ROOT = Path(__file__).resolve().parents[2]


def test_the_console_script_and_python_m_reach_the_same_main(tmp_path: Path) -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["loadgate"] == "loadgate.entry:main"
    for argv in (["-m", "loadgate.cli"], ["-m", "loadgate.entry"]):
        refused(argv, tmp_path)


def refused(argv: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, *argv, "run", "--model", "m"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={
            **os.environ,
            "LOADGATE_STACK_DIR": str(tmp_path / "s"),
            "LOADGATE_RESULTS_DIR": str(tmp_path),
        },
        check=False,
    )
    # One UsageError class for both: `python -m` prints the refusal and exits 2.
    assert done.returncode == common.EXIT_BAD_INPUT, done.stderr
    assert "loadgate run: --model: only applies with --target juju" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_extra_is_named(tmp_path: Path) -> None:
    """Without rich (loadgate[local]) the script says which extra to install, no traceback."""
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'rich' or name.startswith('rich.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "loadgate.entry", "--help"],
        capture_output=True, text=True, cwd=tmp_path, check=False,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "loadgate: rich is not installed: this needs loadgate[local] "
        "(pip install 'loadgate[local]')"
    )
