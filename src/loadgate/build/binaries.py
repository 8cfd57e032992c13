"""Build the pinned upstream binaries (k6, otelcol, Loki, Prometheus, Pebble) into a cache.

Each part is a Go wrapper module under `tools/` whose committed go.mod/go.sum pin every
dependency hash. A part is rebuilt only when its stamp (version + hash of the module files)
changes. Binaries are written to a temporary name and renamed into place, so a failed or
interrupted build never leaves a half-written binary in the cache.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from loadgate import paths


@dataclass(frozen=True)
class Part:
    """One upstream binary and how to build it from its wrapper module."""

    name: str
    version: str
    module: str  # folder under tools/
    package: str  # Go package of the main program
    tags: tuple[str, ...] = ()
    ocb: bool = False  # built by the OpenTelemetry Collector builder from manifest.yaml
    minutes: float = 1.0  # rough first-build time on 2 cores, for progress display
    # The charm workload this part is, as (charm, image tag series): ("otelcol", "0.130") runs
    # what a charm whose workload image is tagged 0.130-* runs.
    workload: tuple[str, str] | None = None


PARTS: tuple[Part, ...] = (
    Part("pebble", "v1.26.0", "pebble", "github.com/canonical/pebble/cmd/pebble", minutes=0.3),
    Part("k6", "v1.8.1", "k6", "go.k6.io/k6", minutes=1.5),
    Part(
        "prometheus",
        "v0.316.0",
        "prometheus",
        "github.com/prometheus/prometheus/cmd/prometheus",
        tags=("remove_all_sd",),
        minutes=1.5,
    ),
    Part("otelcol", "v0.130.1", "otelcol", "", ocb=True, minutes=5, workload=("otelcol", "0.130")),
    Part(
        "loki",
        "v3.7.8",
        "loki",
        "github.com/grafana/loki/v3/cmd/loki",
        minutes=4.5,
        workload=("loki", "3.7"),
    ),
)
OCB = Part("ocb", "v0.130.0", "ocb", "go.opentelemetry.io/collector/cmd/builder", minutes=0.3)
PART_NAMES = tuple(p.name for p in PARTS)


class BuildError(RuntimeError):
    """A part could not be built; the message is one line naming part, version and retry."""


class WorkloadBuildError(LookupError):
    """No part builds the workload version a charm revision runs; the message says which."""


def workload_part(charm: str, image_tag: str | None, described: str) -> Part:
    """The part that runs what a charm revision's workload image runs.

    Each workload version is its own part (its own wrapper module and cache entry), so versions
    live side by side; `described` names the revision in the error.
    """
    series = (image_tag or "").split("-", 1)[0]
    for p in PARTS:
        if p.workload == (charm, series):
            return p
    built = ", ".join(p.workload[1] for p in PARTS if p.workload and p.workload[0] == charm)
    raise WorkloadBuildError(
        f"{described} runs {charm} {series or '(unknown version)'} (workload image tag "
        f"{image_tag or 'not found in its charmcraft.yaml'}); loadgate builds {charm} {built} "
        f"only: add a wrapper module under tools/ and a part in loadgate/build/binaries.py for it"
    )


def part(name: str) -> Part:
    for p in (*PARTS, OCB):
        if p.name == name:
            return p
    raise KeyError(name)


def binary_path(name: str, bin_dir: Path | None = None) -> Path:
    return (bin_dir or paths.bin_dir()) / name


def stamp(p: Part, tools_dir: Path | None = None) -> str:
    """Version plus a hash of the wrapper module's files: a change to either forces a rebuild."""
    module_dir = (tools_dir or paths.tools_dir()) / p.module
    digest = hashlib.sha256()
    for f in sorted(module_dir.iterdir()):
        if f.is_file():
            digest.update(f.name.encode())
            digest.update(f.read_bytes())
    tags = ",".join(p.tags)
    return f"{p.name} {p.version} tags={tags} module={digest.hexdigest()[:16]}"


def _stamp_path(p: Part, bin_dir: Path) -> Path:
    return bin_dir / f".{p.name}.stamp"


def is_current(p: Part, bin_dir: Path | None = None, tools_dir: Path | None = None) -> bool:
    bdir = bin_dir or paths.bin_dir()
    binary = binary_path(p.name, bdir)
    stamp_file = _stamp_path(p, bdir)
    return (
        binary.is_file()
        and os.access(binary, os.X_OK)
        and stamp_file.is_file()
        and stamp_file.read_text().strip() == stamp(p, tools_dir)
    )


def missing(
    names: Iterable[str] = PART_NAMES, bin_dir: Path | None = None, tools_dir: Path | None = None
) -> list[str]:
    """Parts that are not built at the pinned version."""
    return [n for n in names if not is_current(part(n), bin_dir, tools_dir)]


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    # Some modules are absent from the checksum database here; the committed go.sum pins them.
    env["GOSUMDB"] = "off"
    env["GOTOOLCHAIN"] = "local"
    env["CGO_ENABLED"] = "0"
    env.setdefault("GOFLAGS", "")
    return env


def _retry_hint(name: str) -> str:
    return f"loadgate binaries --only {name}"


def _run_logged(argv: list[str], cwd: Path, log: Path, what: Part) -> None:
    with log.open("ab") as out:
        out.write(f"\n$ (cd {cwd} && {' '.join(argv)})\n".encode())
        out.flush()
        proc = subprocess.run(argv, cwd=cwd, env=go_env(), stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = _last_error_line(log)
        raise BuildError(
            f"{what.name} {what.version}: `{' '.join(argv[:2])}` exited {proc.returncode}"
            f" ({tail}); full log {log}; retry with `{_retry_hint(what.name)}`"
        )


def _last_error_line(log: Path) -> str:
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    for ln in reversed(lines):
        if not ln.startswith("$ "):
            return ln[:200]
    return "no output"


def _go_build(p: Part, out: Path, log: Path, tools_dir: Path) -> None:
    argv = ["go", "build", "-trimpath", "-o", str(out)]
    if p.tags:
        argv += ["-tags", ",".join(p.tags)]
    argv.append(p.package)
    _run_logged(argv, tools_dir / p.module, log, p)


def _ocb_build(p: Part, out: Path, log: Path, tools_dir: Path, work: Path) -> None:
    ocb = work / "ocb"
    _go_build(OCB, ocb, log, tools_dir)
    src = work / "otelcol-src"
    shutil.copytree(tools_dir / p.module, src)
    # The generated sources and go.sum are committed; ocb only compiles them here.
    _run_logged(
        [str(ocb), "--config", "manifest.yaml", "--skip-generate", "--skip-get-modules"],
        src,
        log,
        p,
    )
    shutil.move(src / "otelcol", out)


def build(p: Part, bin_dir: Path | None = None, tools_dir: Path | None = None) -> Path:
    """Build one part into the cache (atomically). Raises BuildError with a one-line reason."""
    bdir = bin_dir or paths.bin_dir()
    tdir = tools_dir or paths.tools_dir()
    if shutil.which("go") is None:
        raise BuildError(
            f"{p.name} {p.version}: `go` is not on PATH (Go >= 1.26 is needed to build it); "
            f"install Go, then retry with `{_retry_hint(p.name)}`"
        )
    bdir.mkdir(parents=True, exist_ok=True)
    logs = bdir / "logs"
    logs.mkdir(exist_ok=True)
    log = logs / f"{p.name}.log"
    log.write_text(f"building {stamp(p, tdir)}\n")
    final = binary_path(p.name, bdir)
    with tempfile.TemporaryDirectory(prefix=f"loadgate-build-{p.name}-", dir=bdir) as tmp:
        work = Path(tmp)
        staged = work / f"{p.name}.new"
        if p.ocb:
            _ocb_build(p, staged, log, tdir, work)
        else:
            _go_build(p, staged, log, tdir)
        staged.chmod(0o755)
        _stamp_path(p, bdir).unlink(missing_ok=True)
        os.replace(staged, final)
        _stamp_path(p, bdir).write_text(stamp(p, tdir) + "\n")
    return final


def ensure(
    names: Iterable[str] = PART_NAMES,
    *,
    force: bool = False,
    on_start: Callable[[Part, bool], None] | None = None,
    on_done: Callable[[Part, bool], None] | None = None,
    bin_dir: Path | None = None,
) -> list[Path]:
    """Build every named part that is not current (or all of them with force).

    on_start(part, will_build) and on_done(part, built) report progress.
    """
    out: list[Path] = []
    for name in names:
        p = part(name)
        needed = force or not is_current(p, bin_dir)
        if on_start:
            on_start(p, needed)
        if needed:
            build(p, bin_dir)
        if on_done:
            on_done(p, needed)
        out.append(binary_path(p.name, bin_dir))
    return out
