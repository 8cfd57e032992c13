"""`python -m loadgate.cli` and the `loadgate` console script reach the same main, in a process of
its own (the command line's layout: tests/unit/test_cli_layout.py)."""

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
    assert pyproject["project"]["scripts"]["loadgate"] == "loadgate.cli:main"
    done = subprocess.run(
        [sys.executable, "-m", "loadgate.cli", "run", "--model", "m"],
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
