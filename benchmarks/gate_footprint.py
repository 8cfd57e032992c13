"""What installing loadgate's gate adds to a charm's dev environment: packages, megabytes, seconds.

    .venv/bin/python benchmarks/gate_footprint.py [--charm otelcol|loki] [--python PYTHON]

For each charm (the snapshots in ../shared/charm-sources, or $LOADGATE_CHARM_SOURCES): a fresh
virtualenv with what the charm's `uv run --extra=dev` installs (its dependencies and its dev
extra, resolved for this interpreter: its uv.lock pins Python 3.14, which this machine lacks),
then loadgate's wheel with the `gate` extra installed on top, then, for contrast, with `all`
(the command line, plots, statistics, charm rendering). Prints each step's packages, the size of
site-packages and the install time (uv, its cache warm and then empty). Needs the package index.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = Path(os.environ.get("LOADGATE_CHARM_SOURCES", ROOT.parent / "shared" / "charm-sources"))


def uv() -> str:
    from uv import find_uv_bin

    return find_uv_bin()


def charm_project(name: str, into: Path) -> dict[str, object]:
    """The charm's pyproject.toml (from the snapshot)."""
    if name == "otelcol":
        bundle = SOURCES / "opentelemetry-collector-k8s-operator.bundle"
        subprocess.run(["git", "clone", "-q", str(bundle), str(into)], check=True)
    else:
        tarball = next(SOURCES.glob("loki-k8s-operator-*.tar.gz"))
        into.mkdir(parents=True)
        with tarfile.open(tarball) as tar:
            tar.extractall(into, filter="data")
    return tomllib.loads((into / "pyproject.toml").read_text())["project"]  # type: ignore[no-any-return]


def site_packages(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return Path(out.stdout.strip())


def packages(python: Path) -> set[str]:
    out = subprocess.run(
        [uv(), "pip", "list", "--python", str(python), "--format", "freeze"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return {line.split("==")[0].lower() for line in out.stdout.splitlines() if "==" in line}


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def install(python: Path, specs: list[str], *, cache: Path | None) -> float:
    argv = [uv(), "pip", "install", "--python", str(python), "-q", *specs]
    env = dict(os.environ)
    if cache is None:
        argv.insert(3, "--no-cache")
    else:
        env["UV_CACHE_DIR"] = str(cache)
    start = time.monotonic()
    subprocess.run(argv, check=True, env=env)
    return time.monotonic() - start


def build_wheel(tmp: Path) -> Path:
    dist = tmp / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
        check=True,
    )  # fmt: skip
    return next(dist.glob("loadgate-*.whl"))


def measure(charm: str, python: str, wheel: Path, tmp: Path) -> None:
    project = charm_project(charm, tmp / charm)
    deps = [str(d) for d in project.get("dependencies", [])]  # type: ignore[union-attr]
    dev = [str(d) for d in project.get("optional-dependencies", {}).get("dev", [])]  # type: ignore[union-attr]
    cache = tmp / "uv-cache"
    rows: list[tuple[str, int, float, float, set[str]]] = []
    base_env = tmp / f"{charm}-venv"
    subprocess.run([uv(), "venv", "-q", "--python", python, str(base_env)], check=True)
    py = base_env / "bin" / "python"
    seconds = install(py, deps + dev, cache=cache)
    before, mb = packages(py), size_mb(site_packages(py))
    rows.append((f"{charm} dependencies + dev extra (uv, cold cache)", len(before), mb, seconds,
                 set()))  # fmt: skip
    for extra in ("gate", "all"):
        env = tmp / f"{charm}-{extra}"
        shutil.copytree(base_env, env, symlinks=True)
        epy = env / "bin" / "python"
        warm = install(epy, [f"{wheel}[{extra}]"], cache=cache)
        added = packages(epy) - before
        grown = size_mb(site_packages(epy)) - mb
        rows.append((f"+ loadgate[{extra}] (uv, warm cache)", len(added), grown, warm, added))
        cold_env = tmp / f"{charm}-{extra}-cold"
        shutil.copytree(base_env, cold_env, symlinks=True)
        cold = install(cold_env / "bin" / "python", [f"{wheel}[{extra}]"], cache=None)
        rows.append((f"+ loadgate[{extra}] (uv, no cache)", len(added), grown, cold, set()))
    print(f"\n{charm} charm, Python {python}")
    print("| step | packages | MB (site-packages) | install s |\n|---|---|---|---|")
    for name, count, size, seconds, _ in rows:
        print(f"| {name} | {count} | {size:.1f} | {seconds:.1f} |")
    for name, _, _, _, added in rows:
        if added:
            print(f"{name}: adds {', '.join(sorted(added))}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--charm", choices=("otelcol", "loki"), action="append")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gate-footprint-") as name:
        tmp = Path(name)
        wheel = build_wheel(tmp)
        for charm in args.charm or ("otelcol", "loki"):
            measure(charm, args.python, wheel, tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
