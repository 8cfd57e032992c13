"""Files handed to `juju` are written where the strictly confined snap can read them
(issue 12, point 8).

`/snap/bin/juju` is a symbolic link to `/usr/bin/snap` (snapd's launcher), so the old check,
`realpath(juju).startswith("/snap/")`, took the snap for a plain binary and wrote overlays and
charm copies to /tmp, which the snap cannot read. The layouts are built here with fake files.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from support.fake_juju.charms import copy_bundles

from loadgate.juju import deploy, settings, staging


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def _which_in(folder: Path) -> Callable[[str], str | None]:
    """shutil.which with PATH set to one folder."""

    def which(name: str) -> str | None:
        return shutil.which(name, path=str(folder))

    return which


def staged_as_for_the_snap(juju: str | None, home: Path) -> bool:
    """Whether a stage folder, with `juju` the one on PATH, goes where the snap reads
    (~/snap/juju/common/loadgate) rather than to the temporary folder."""
    folder = staging.new_stage_dir(which=lambda _name: juju, home=home)
    if folder.parent == home / "snap" / "juju" / "common" / "loadgate":
        return True
    assert folder.parent == Path(tempfile.gettempdir())
    folder.rmdir()
    return False


@pytest.fixture
def snap_layout(tmp_path: Path) -> Path:
    """<tmp>/snap/bin/juju -> <tmp>/usr/bin/snap, as snapd installs juju."""
    launcher = _executable(tmp_path / "usr" / "bin" / "snap")
    link = tmp_path / "snap" / "bin" / "juju"
    link.parent.mkdir(parents=True)
    link.symlink_to(launcher)
    return link.parent


def test_the_snap_layout_is_the_snap(tmp_path: Path, snap_layout: Path) -> None:
    juju = shutil.which("juju", path=str(snap_layout))
    assert juju is not None
    assert os.path.realpath(juju).endswith("/usr/bin/snap")  # what fooled the old check
    assert staged_as_for_the_snap(juju, tmp_path / "home")


def test_an_alias_of_the_snap_is_the_snap(tmp_path: Path, snap_layout: Path) -> None:
    """/usr/local/bin/juju -> /snap/bin/juju: its realpath is snapd's launcher."""
    alias = tmp_path / "usr" / "local" / "bin" / "juju"
    alias.parent.mkdir(parents=True)
    alias.symlink_to(snap_layout / "juju")
    assert staged_as_for_the_snap(str(alias), tmp_path / "home")


def test_a_plain_juju_binary_is_not_the_snap(tmp_path: Path) -> None:
    juju = _executable(tmp_path / "opt" / "juju" / "bin" / "juju")
    assert not staged_as_for_the_snap(str(juju), tmp_path / "home")
    assert not staged_as_for_the_snap(None, tmp_path / "home")


def test_snap_files_go_under_snap_juju_common(tmp_path: Path, snap_layout: Path) -> None:
    home = tmp_path / "home"
    folder = staging.new_stage_dir(which=_which_in(snap_layout), home=home)
    assert folder.is_dir()
    assert folder.parent == home / "snap" / "juju" / "common" / "loadgate"
    assert not any(p.startswith(".") for p in folder.relative_to(home).parts)


def test_plain_juju_files_go_to_the_temporary_folder(tmp_path: Path) -> None:
    juju = _executable(tmp_path / "opt" / "juju" / "bin" / "juju")
    home = tmp_path / "home"
    folder = staging.new_stage_dir(which=_which_in(juju.parent), home=home)
    assert folder.parent == Path(tempfile.gettempdir())
    assert not (home / "snap").exists()
    folder.rmdir()


def test_staged_deployment_is_all_in_the_snap_folder(tmp_path: Path, snap_layout: Path) -> None:
    """Bundle, overlays, the pin and every charm they name: copied into the stage folder."""
    bundles = copy_bundles(tmp_path / "bundles").parent
    folder = staging.new_stage_dir(which=_which_in(snap_layout), home=tmp_path / "home")
    staged = deploy.stage(
        bundles / "bundle.yaml",
        folder,
        pin=settings.OtelcolPin("dev/edge", 207, "option"),
        overlays=[bundles / "overlays" / "ci-small-storage.yaml"],
    )
    files = [staged.bundle, *staged.overlays, *staged.charms.values()]
    assert all(f.is_file() and f.is_relative_to(folder) for f in files)
    assert [o.name for o in staged.overlays] == [
        "otelcol-pin.yaml",
        "overlay-0-ci-small-storage.yaml",
    ]
    assert staged.charms["k6"].read_bytes() == (bundles / "loadgate-k6-k8s.charm").read_bytes()
    assert staged.deploy_args() == [
        "deploy", str(staged.bundle), "--trust",
        "--overlay", str(staged.overlays[0]), "--overlay", str(staged.overlays[1]),
    ]  # fmt: skip
    deploy.check(staged)
