"""Run charmcraft's own `uv` plugin through craft-parts on a copy of the charm; list what it primes.

    python prime.py <charm-copy> <work-dir> <result.json>

This is the part of `charmcraft pack` that decides what goes into the .charm: charmcraft's
lifecycle runs the project's parts (here one `uv` part: `uv sync` of uv.lock into venv/, then
charmcraft's copy of src/ and lib/) up to prime, and its post-prime step writes `dispatch`; the
package step then zips prime/ with the generated metadata, actions and manifest files. What
cannot run here is stubbed, and recorded: the apt repository (the plugin's build packages) and
snap installs (its build snap, astral-uv; uv comes from PyPI instead). `uv sync` itself runs,
from PyPI. The result lists every primed path (venv/ only down to site-packages' top level).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import charmcraft.dispatch
import charmcraft.parts
import craft_cli
import craft_parts
import craft_parts.packages
import yaml
from craft_parts.packages.base import DummyRepository

# charmcraft's application metadata ignores these in a local source (charmcraft/application).
SOURCE_IGNORE = [".craft", "*.charm", "charmcraft.yaml", ".venv", ".tox"]
calls: list[list[str]] = []


class RecordingRepository(DummyRepository):
    """craft-parts' no-op repository, recording what would have been installed."""

    @classmethod
    def install_packages(
        cls,
        package_names: list[str],
        *,
        refresh_package_cache: bool = True,
        include_recommends: bool = False,
    ) -> list[str]:
        calls.append(["apt-install", *sorted(package_names)])
        return []


def install_snaps(snaps: Any) -> list[str]:
    calls.append(["snap-install", *sorted(snaps)])
    return []


def listing(prime: Path) -> list[str]:
    found: list[str] = []
    for path in sorted(prime.rglob("*")):
        rel = path.relative_to(prime)
        # venv/lib/python3.X/site-packages/<top-level>: deeper venv entries say nothing new.
        if rel.parts[0] == "venv" and len(rel.parts) > 5:
            continue
        found.append(rel.as_posix() + ("/" if path.is_dir() else ""))
    return found


def main(charm: Path, work: Path, result: Path) -> None:
    craft_parts.packages._get_repository_for_platform = lambda: RecordingRepository  # type: ignore[attr-defined]
    craft_parts.packages.snaps.install_snaps = install_snaps  # type: ignore[assignment]
    # The astral-uv build snap's stand-in: uv from PyPI, installed beside this interpreter.
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    charmcraft.parts.setup_parts()  # registers charmcraft's plugins (charm, uv, poetry, …)
    project = yaml.safe_load((charm / "charmcraft.yaml").read_text())
    os.chdir(charm)  # charmcraft runs from the project dir: a part's `source: .` is relative to it
    manager = craft_parts.LifecycleManager(
        {"parts": project["parts"]},
        application_name="charmcraft",
        cache_dir=work / "cache",
        work_dir=work,
        project_dir=charm,
        arch="amd64",
        project_name=project["name"],
        ignore_local_sources=SOURCE_IGNORE,
    )
    with manager.action_executor() as executor:
        executor.execute(manager.plan(craft_parts.Step.PRIME), stdout=sys.stderr, stderr=sys.stderr)
    prime = manager.project_info.dirs.prime_dir
    craft_cli.emit.init(craft_cli.EmitterMode.QUIET, "charmcraft", "", log_filepath=work / "log")
    try:
        charmcraft.dispatch.create_dispatch(prime_dir=prime)  # charmcraft's post-prime step
    finally:
        craft_cli.emit.ended_ok()
    result.write_text(json.dumps({"primed": listing(prime), "stubbed": calls}, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), Path(sys.argv[3]))
