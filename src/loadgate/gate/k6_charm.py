"""loadgate's k6 charm for a gate run outside a loadgate checkout: given, or packed once.

The bundle deploys the k6 charm (`loadgate-k6-k8s`, not on Charmhub) from a packed file. A charm
repository's CI has loadgate installed, not checked out: the charm's source comes with the
package (package data `data/k6-charm`: charmcraft.yaml, pyproject.toml, uv.lock, src/), and the
gate packs it with `charmcraft pack` the first time a deployment needs it, into the cache
(`~/.cache/loadgate/k6-charm/<hash of the source>/`), unless one is given (`--k6-charm`,
`$LOADGATE_K6_CHARM`) or lies next to the bundle (a checkout's `scripts/pack-k6-charm`).
`python -m loadgate.gate.k6_charm pack [DEST]` does the same by hand, e.g. in a workflow step.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from loadgate import paths

_SOURCE_FILES = ("charmcraft.yaml", "pyproject.toml", "uv.lock", "README.md")
_CHARM_NAME = "loadgate-k6-k8s"
Runner = Callable[[Sequence[str], Path], "subprocess.CompletedProcess[str]"]


class K6CharmError(RuntimeError):
    """The k6 charm could not be found or packed (the message says why and what to do)."""


def source_dir() -> Path:
    """The k6 charm's source as loadgate carries it (a checkout: charms/k6-k8s)."""
    return paths.k6_charm_dir()


def source_files(root: Path) -> list[Path]:
    """What charmcraft packs the charm from: its metadata, project and lock files, and src/."""
    files = [root / name for name in _SOURCE_FILES if (root / name).is_file()]
    files += sorted(
        p for p in (root / "src").rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    return files


def _source_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in source_files(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_dir() -> Path:
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "loadgate" / "k6-charm"


def _run(argv: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, check=False)


def _pack(
    dest: Path,
    *,
    charmcraft: str | None = None,
    extra: Sequence[str] = (),
    run: Runner = _run,
) -> Path:
    """Pack the k6 charm from loadgate's copy of its source into `dest` (a .charm path)."""
    tool = charmcraft or shutil.which("charmcraft")
    if not tool:
        raise K6CharmError(
            "charmcraft is not on PATH: install it (snap install charmcraft --classic) so the "
            "gate can pack loadgate's k6 charm, or give a packed one (--k6-charm, "
            "$LOADGATE_K6_CHARM)"
        )
    root = source_dir()
    with tempfile.TemporaryDirectory(prefix="loadgate-k6-charm-") as tmp:
        build = Path(tmp) / _CHARM_NAME
        for path in source_files(root):
            target = build / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        done = run([tool, "pack", *extra], build)
        if done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout or "").strip().splitlines()[-15:])
            raise K6CharmError(
                f"`charmcraft pack` of the k6 charm failed ({done.returncode}):\n{tail}"
            )
        packed = sorted(build.glob(f"{_CHARM_NAME}_*.charm"))
        if len(packed) != 1:
            raise K6CharmError(
                f"expected one {_CHARM_NAME}_*.charm after `charmcraft pack`, found {len(packed)}"
            )
        dest.parent.mkdir(parents=True, exist_ok=True)
        partial = dest.with_name(f".partial-{dest.name}")
        shutil.copyfile(packed[0], partial)
        partial.replace(dest)
    return dest


def ensure(bundle: Path, *, run: Runner = _run, charmcraft: str | None = None) -> Path:
    """A packed k6 charm: the one next to `bundle`, else the cached pack of this loadgate's
    source, else packed now into the cache."""
    beside = bundle.parent / paths.K6_CHARM_FILE
    if beside.is_file():
        return beside
    cached = cache_dir() / _source_hash(source_dir()) / paths.K6_CHARM_FILE
    if cached.is_file():
        return cached
    return _pack(cached, charmcraft=charmcraft, run=run)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m loadgate.gate.k6_charm pack [DEST] [-- charmcraft pack options]`."""
    args = list(sys.argv[1:] if argv is None else argv)
    extra = args[args.index("--") + 1 :] if "--" in args else []
    args = args[: args.index("--")] if "--" in args else args
    if not args or args[0] != "pack" or len(args) > 2:
        print(
            "usage: python -m loadgate.gate.k6_charm pack [DEST.charm] [-- OPTIONS]",
            file=sys.stderr,
        )
        return 2
    dest = Path(args[1]) if len(args) == 2 else Path.cwd() / paths.K6_CHARM_FILE
    try:
        print(_pack(dest.resolve(), extra=extra))
    except K6CharmError as exc:
        print(f"loadgate: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
