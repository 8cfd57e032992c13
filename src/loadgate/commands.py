"""`loadgate binaries` and `loadgate stack …`: thin wrappers that print progress and tables."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from . import binaries, paths
from .cli import EXIT_BAD_INPUT, EXIT_OK, console, stdout
from .stack import local
from .stack import profile as profiles
from .stack.ports import Ports


def cmd_binaries(args: argparse.Namespace) -> int:
    return build_missing(list(args.only or binaries.PART_NAMES), force=args.force)


def build_missing(names: Sequence[str], *, force: bool = False) -> int:
    """Build the named parts that are not current, with progress; EXIT_OK when all are."""
    bdir = paths.bin_dir()
    todo = list(names) if force else binaries.missing(names, bdir)
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
            binaries.ensure(names, force=force, on_start=on_start, on_done=on_done)
        except binaries.BuildError as exc:
            progress.stop()
            console.print(f"[red]loadgate binaries: {exc}[/red]")
            return EXIT_BAD_INPUT
    console.print(f"[green]built[/green]: {', '.join(todo)} in {bdir}")
    return EXIT_OK


def start_stack(args: argparse.Namespace) -> local.StackInfo:
    prof = profiles.get(args.profile, args.queue_size)
    ports = Ports.from_base(args.base_port)
    timeout = getattr(args, "timeout", 60.0)
    started = time.monotonic()
    with console.status("starting the local stack") as spinner:

        def on_wait(healthy: dict[str, bool], elapsed: float) -> None:
            marks = "  ".join(f"{n} {'ok' if ok else '…'}" for n, ok in healthy.items())
            spinner.update(f"starting the local stack ({elapsed:4.1f}s): {marks}")

        info = local.up(prof, ports, timeout=timeout, on_wait=on_wait)
    console.print(
        f"[green]stack up[/green] in {time.monotonic() - started:.1f}s "
        f"(profile {prof.name}, run dir {info.root})"
    )
    return info


def _status_table(st: local.StackStatus) -> Table:
    table = Table(title="loadgate local stack")
    table.add_column("service")
    table.add_column("port", justify="right")
    table.add_column("pebble")
    table.add_column("health")
    for s in st.services:
        health = "[green]healthy[/green]" if s.healthy else f"[red]unhealthy ({s.detail})[/red]"
        table.add_row(s.name, str(s.port), s.pebble, health)
    return table


def cmd_stack(args: argparse.Namespace) -> int:
    if args.action == "up":
        try:
            start_stack(args)
        except (local.StackError, ValueError) as exc:
            console.print(f"[red]loadgate stack up: {exc}[/red]")
            return EXIT_BAD_INPUT
        stdout.print(_status_table(local.status()))
        return EXIT_OK
    if args.action == "down":
        stopped = local.down()
        console.print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
        return EXIT_OK
    st = local.status()
    if not st.running:
        console.print("the local stack is not running (start it with `loadgate stack up`)")
        return EXIT_BAD_INPUT
    stdout.print(_status_table(st))
    if st.info is not None:
        stdout.print(
            f"run dir {st.info.root}  profile {st.info.profile.name}  CA {st.info.ca_file}"
        )
    return EXIT_OK if st.healthy else EXIT_BAD_INPUT
