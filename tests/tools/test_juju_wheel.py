"""loadgate installed from a wheel finds its own files (issue 12, point 10).

A charm repository installs loadgate into its own test env, far from any loadgate checkout: the
bundle, overlays, k6 scenarios, Go wrapper modules and the bundle checker's data must come with
the package, and nothing may need the checkout (`paths.project_root()` is gone). The wheel is
built from a copy of the sources (what the repository's `src/loadgate/data` links point at),
installed into a fresh virtualenv, and asked from outside any checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest
from support.fake_juju.charms import k6_charm

from loadgate import paths

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, loadgate
from loadgate import paths
files = {
    "package": loadgate.__file__,
    "k6": str(paths.k6_dir() / "otlp-logs.js"),
    "k6_lib": str(paths.k6_dir() / "lib" / "payload.js"),
    "bundle": str(paths.bundle_file()),
    "overlays": sorted(str(p) for p in paths.overlays_dir().glob("*.yaml")),
    "upstream": str(paths.upstream_charms_file()),
    "k6_charmcraft": str(paths.k6_charmcraft_file()),
    "revisions": str(paths.integration_defaults_dir() / "revisions.yaml"),
    "gates": str(paths.integration_defaults_dir() / "gates.yaml"),
    "otelcol_manifest": str(paths.tools_dir() / "otelcol" / "manifest.yaml"),
    "k6_go_mod": str(paths.tools_dir() / "k6" / "go.mod"),
    "has_project_root": hasattr(paths, "project_root"),
}
print(json.dumps(files))
"""


def source_copy(to: Path) -> Path:
    """pyproject, README, src/ and every file or folder src/loadgate/data links to."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.charm", ".*")
    to.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, to / name)
    shutil.copytree(ROOT / "src", to / "src", symlinks=True, ignore=ignore)
    data = ROOT / "src" / "loadgate" / "data"
    for link in (p for p in data.rglob("*") if p.is_symlink()):
        target = link.resolve().relative_to(ROOT)
        if (to / target).exists():
            continue
        (to / target).parent.mkdir(parents=True, exist_ok=True)
        if link.resolve().is_dir():
            shutil.copytree(ROOT / target, to / target, ignore=ignore)
        else:
            shutil.copy(ROOT / target, to / target)
    return to


def build_wheel(tmp: Path) -> Path:
    """loadgate's wheel, built from a copy of the sources under `tmp`."""
    dist = tmp / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(dist), str(source_copy(tmp / "src-tree"))],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return next(dist.glob("loadgate-*.whl"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the python of a fresh venv with it installed)."""
    tmp = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(tmp)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
         str(wheel)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    # loadgate's dependencies come from this env (a .pth line: its site-packages, after the
    # venv's own; the editable loadgate's .pth there is not processed from a .pth line).
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    Path(site, "outer-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return wheel, python


def _run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LOADGATE_"))}
    return subprocess.run(
        [str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_wheel_holds_the_files_not_links(installed: tuple[Path, Path]) -> None:
    wheel, _ = installed
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for info in z.infolist():
            assert (info.external_attr >> 16) & 0o170000 != 0o120000, f"{info.filename} is a link"
    assert "loadgate/data/bundles/bundle.yaml" in names
    assert "loadgate/data/bundles/overlays/ci-small-storage.yaml" in names
    assert "loadgate/data/k6/otlp-logs.js" in names
    assert not [n for n in names if n.endswith(".charm")]


def test_an_installed_loadgate_finds_its_files(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    _, python = installed
    done = _run(python, "-c", PROBE, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    package = Path(found.pop("package")).parent
    assert package.is_relative_to(python.parent.parent), f"{package} is not the venv's"
    assert not package.is_relative_to(ROOT / "src"), "loadgate was imported from the checkout"
    assert found.pop("has_project_root") is False
    overlays = found.pop("overlays")
    assert [Path(o).name for o in overlays] == sorted(
        p.name for p in paths.overlays_dir().glob("*.yaml")
    )
    for name, path in {**found, **{f"overlay {o}": o for o in overlays}}.items():
        file = Path(path)
        assert file.is_relative_to(package), f"{name}: {file} is not package data"
        assert file.is_file(), f"{name}: {file} is missing"
    repo_bundle = (ROOT / "bundles" / "bundle.yaml").read_text()
    assert Path(found["bundle"]).read_text() == repo_bundle


def test_an_installed_check_bundle_reads_package_data(
    installed: tuple[Path, Path], tmp_path: Path
) -> None:
    _, python = installed
    cli = ("-m", "loadgate.cli", "check-bundle")
    missing = _run(python, *cli, cwd=tmp_path)
    assert missing.returncode == 1
    assert "does not exist: run scripts/pack-k6-charm in a loadgate checkout" in missing.stdout
    site_bundle = Path(json.loads(_run(python, "-c", PROBE, cwd=tmp_path).stdout)["bundle"])
    k6_charm(site_bundle.parent / paths.K6_CHARM_FILE)
    done = _run(python, *cli, cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert "FAIL" not in done.stdout


def test_the_sdist_builds_the_same_wheel(installed: tuple[Path, Path], tmp_path: Path) -> None:
    """The sdist holds what the links point at (no links), and a wheel built from it holds
    exactly the files of the wheel built from the checkout: the k6 charm's source, the bundle,
    the gate's settings and COS Lite's reference among them."""
    wheel, _ = installed
    tree = source_copy(tmp_path / "src-tree")
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "-o", str(dist), str(tree)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    sdist = next(dist.glob("loadgate-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        members = tar.getmembers()
    assert not [m.name for m in members if m.issym()], "the sdist holds links"
    names = {m.name.split("/", 1)[1] for m in members if "/" in m.name}
    assert {
        "src/loadgate/data/k6-charm/charmcraft.yaml",
        "src/loadgate/data/k6-charm/uv.lock",
        "src/loadgate/data/k6-charm/src/charm.py",
        "src/loadgate/data/cos-lite.yaml",
        "src/loadgate/data/bundles/overlays/loki-unthrottled.yaml",
    } <= names
    again = tmp_path / "again"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(again), str(sdist)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    from_sdist = next(again.glob("loadgate-*.whl"))
    with zipfile.ZipFile(wheel) as a, zipfile.ZipFile(from_sdist) as b:
        assert sorted(n for n in a.namelist() if ".dist-info/" not in n) == sorted(
            n for n in b.namelist() if ".dist-info/" not in n
        )
