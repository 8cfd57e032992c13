"""A virtualenv per charm source, from that commit's `uv.lock`, to run the charm's own code.

The venv holds the charm's locked runtime dependencies plus the `ops-scenario` its lock pins
(`ops.testing`). It is cached under `charm-venvs/<lock hash>-py<version>`, so revisions that
share a lock share a venv. The interpreter is the one the packed charm runs on (its base's
python3) when this machine has it, else the newest local one that satisfies the lock's
`requires-python`, else the newest local one at all, said so in `Interpreter.why`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from .sources import CharmSource, cache_dir

_ENV_PYTHON = "LOADGATE_CHARM_PYTHON"
_MIN_PYTHON = Version("3.10")
_GIT_DEP_RE = re.compile(r"^([A-Za-z0-9_.\-\[\]]+) @ git\+\S+$", re.M)


class _VenvError(RuntimeError):
    """The charm's virtualenv cannot be made; the message says why."""


@dataclass(frozen=True)
class Interpreter:
    path: Path
    version: str
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "version": self.version, "why": self.why}


@dataclass(frozen=True)
class CharmVenv:
    path: Path
    interpreter: Interpreter
    created: bool  # made by this call (else found in the cache)
    seconds: float  # time spent making it (0 when cached)
    notes: tuple[str, ...] = ()

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["path"] = str(self.path)
        data["interpreter"] = self.interpreter.to_dict()
        data["notes"] = list(self.notes)
        return data


def _local_interpreters() -> dict[str, Path]:
    """Python 3 interpreters of this machine by full version: pyenv's, PATH's, and ours."""
    found: dict[str, Path] = {}
    candidates: list[Path] = [Path(sys.executable)]
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if root.is_dir():
        candidates += sorted(root.glob("3.*/bin/python3"))
    for minor in range(8, 20):
        exe = shutil.which(f"python3.{minor}")
        if exe:
            candidates.append(Path(exe))
    for exe in candidates:
        try:
            out = subprocess.run(
                [str(exe), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                capture_output=True,
                text=True,
                timeout=20,
                check=True,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            continue
        found.setdefault(out, exe)
    return found


def _choose_interpreter(
    base_python: str | None, requires: str, available: dict[str, Path]
) -> Interpreter:
    """Pick the interpreter for a charm (pure: `available` maps versions to executables)."""
    forced = os.environ.get(_ENV_PYTHON)
    if forced:
        version = next((v for v, p in available.items() if str(p) == forced), "unknown")
        return Interpreter(Path(forced), version, f"${_ENV_PYTHON}")
    usable = sorted(
        ((Version(v), p) for v, p in available.items() if Version(v) >= _MIN_PYTHON),
        key=lambda vp: vp[0],
    )
    if not usable:
        raise _VenvError(f"no Python >= {_MIN_PYTHON} on this machine to run the charm")
    if base_python:
        on_base = [(v, p) for v, p in usable if f"{v.major}.{v.minor}" == base_python]
        if on_base:
            v, p = on_base[-1]
            return Interpreter(p, str(v), f"the charm's base runs Python {base_python}")
    try:
        spec = SpecifierSet(requires) if requires else SpecifierSet()
    except InvalidSpecifier:
        spec = SpecifierSet()
    fitting = [(v, p) for v, p in usable if v in spec]
    base_note = f"the base's Python {base_python} is not here" if base_python else "no base"
    if fitting:
        v, p = fitting[-1]
        return Interpreter(p, str(v), f"{base_note}; newest local Python in {requires!r}")
    v, p = usable[-1]
    return Interpreter(
        p,
        str(v),
        f"{base_note} and no local Python satisfies {requires!r}: newest local one, "
        "requires-python ignored",
    )


def _requirements(source_dir: Path, lock: dict[str, Any]) -> tuple[str, list[str]]:
    """The locked runtime requirements plus the locked ops-scenario, and notes on anything
    that could not be had as locked (git-pinned packages: no GitHub here)."""
    uv = _uv_binary()
    exported = subprocess.run(
        [str(uv), "export", "--frozen", "--no-hashes", "--no-emit-project", "--no-dev",
         "--format", "requirements-txt"],
        cwd=source_dir,
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    if exported.returncode != 0:
        raise _VenvError(f"uv export in {source_dir} failed: {exported.stderr.strip()[-300:]}")
    notes: list[str] = []

    def unpin(m: re.Match[str]) -> str:
        notes.append(f"{m.group(1)}: locked to a git commit, taken from PyPI instead")
        return m.group(1)

    text = _GIT_DEP_RE.sub(unpin, exported.stdout)
    versions = {p.get("name"): p.get("version") for p in lock.get("package", [])}
    scenario = versions.get("ops-scenario")
    if scenario:
        text += f"\nops-scenario=={scenario}\n"
    else:
        ops_version = versions.get("ops") or ""
        text += f"\nops[testing]=={ops_version}\n" if ops_version else "\nops[testing]\n"
        notes.append("the lock pins no ops-scenario: ops[testing] of the locked ops is used")
    return text, notes


def _uv_binary() -> Path:
    from uv import find_uv_bin  # the `uv` package on PyPI ships its binary

    return Path(find_uv_bin())


def ensure(source: CharmSource, available: dict[str, Path] | None = None) -> CharmVenv:
    """The charm's venv, made (once per lock and interpreter) when it is not cached."""
    lock_text = (source.path / "uv.lock").read_text()
    lock = tomllib.loads(lock_text)
    chosen = _choose_interpreter(
        source.base_python,
        str(lock.get("requires-python") or ""),
        available or _local_interpreters(),
    )
    folder = cache_dir() / "charm-venvs" / f"{source.lock_sha256[:16]}-py{chosen.version}"
    info = folder / "loadgate-venv.json"
    if info.is_file():
        notes = tuple(json.loads(info.read_text()).get("notes", []))
        return CharmVenv(folder, chosen, False, 0.0, notes)
    began = time.monotonic()
    folder.parent.mkdir(parents=True, exist_ok=True)
    # Made beside its final place and published by rename: an interrupted build leaves no
    # half venv in the cache. Only `bin/python` is used, which a rename does not break.
    tmp = Path(tempfile.mkdtemp(prefix="venv-", dir=folder.parent))
    try:
        req_text, notes = _requirements(source.path, lock)
        req = tmp / "requirements.txt"
        req.write_text(req_text)
        venv = tmp / "venv"
        uv = str(_uv_binary())
        _run([uv, "venv", "--quiet", "--python", str(chosen.path), str(venv)])
        python = str(venv / "bin" / "python")
        _run([uv, "pip", "install", "--quiet", "--python", python, "-r", str(req)])
        (venv / "loadgate-venv.json").write_text(
            json.dumps({"interpreter": chosen.to_dict(), "notes": notes}, indent=1)
        )
        os.replace(venv, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return CharmVenv(folder, chosen, True, time.monotonic() - began, tuple(notes))


def _run(argv: Iterable[str]) -> None:
    args = list(argv)
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise _VenvError(f"`{' '.join(args[:3])}` failed: {proc.stderr.strip()[-400:]}")
