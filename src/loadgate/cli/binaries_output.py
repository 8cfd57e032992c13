"""`loadgate binaries`' terminal output: `build_missing`, the pinned binaries a command needs
built into the cache with progress (what `binaries` does, and what other commands call, through
their seams, before they need a binary)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from loadgate import paths
from loadgate.build import binaries

from .common import EXIT_BAD_INPUT, EXIT_OK, console, error


def build_missing(
    names: Sequence[str],
    *,
    force: bool = False,
    command: str = "binaries",
    missing: Callable[[Sequence[str], Path], list[str]] = binaries.missing,
    ensure: Callable[..., object] = binaries.ensure,
) -> int:
    """Build the named parts that are not current, with progress; EXIT_OK when all are.
    `command` names the loadgate command in error messages; `missing` and `ensure` find and
    build the parts (binaries.missing, binaries.ensure; tests give fakes)."""
    bdir = paths.bin_dir()
    todo = list(names) if force else missing(names, bdir)
    console.print(f"binaries cache: {bdir}")
    if not todo:
        console.print(f"current: {', '.join(names)}")
        return EXIT_OK
    est = sum(binaries.part(n).minutes for n in todo)
    console.print(f"building {', '.join(todo)} (first build takes ~{est:.0f} min on 2 cores)")
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        overall = progress.add_task("all parts", total=len(names))
        current: dict[str, TaskID] = {}
        began: dict[str, float] = {}

        def on_start(p: binaries.Part, will_build: bool) -> None:
            label = f"{p.name} {p.version}" + ("" if will_build else " (current)")
            current[p.name] = progress.add_task(label, total=1)
            began[p.name] = time.monotonic()
            if will_build:
                progress.console.print(f"building {p.name} {p.version} (~{p.minutes:g} min)")

        def on_done(p: binaries.Part, built: bool) -> None:
            progress.update(current[p.name], completed=1)
            progress.advance(overall)
            if built:
                took = time.monotonic() - began[p.name]
                progress.console.print(f"built {p.name} {p.version} in {took:.0f}s")

        try:
            ensure(names, force=force, on_start=on_start, on_done=on_done)
        except binaries.BuildError as exc:
            progress.stop()
            error(command, exc)
            return EXIT_BAD_INPUT
    console.print(f"[green]built[/green]: {', '.join(todo)} in {bdir}")
    return EXIT_OK
