"""`loadgate check-bundle`: the Juju bundle and its overlays checked against the charms'
endpoints, without Juju; the checks are loadgate.bundle.check."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from loadgate.bundle import cos_lite
from loadgate.bundle.catalog import CatalogError
from loadgate.bundle.catalog import build as build_catalog
from loadgate.bundle.check import (
    BundleError,
    check_files,
    default_bundle,
    default_combinations,
    default_upstream,
    load,
    local_charmcraft_files,
)

from .common import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_OK, Subparsers, console, stdout

if TYPE_CHECKING:
    from .seams import Seams


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "check-bundle", help="check the Juju bundle and overlays against the charms' endpoints"
    )
    _add_flags(p)
    p.set_defaults(handler=_cmd_check_bundle)


def _add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", nargs="?", help="bundle file (default bundles/bundle.yaml)")
    p.add_argument(
        "--overlay",
        action="append",
        default=[],
        help="overlay file, in deploy order (repeatable). Without any, the bundle is checked "
        "alone and with each overlay of its overlays/ folder",
    )
    p.add_argument(
        "--upstream",
        help="upstream charm endpoints (default src/loadgate/data/upstream-charms.yaml)",
    )
    p.add_argument(
        "--cos-lite",
        action="store_true",
        help="also compare the bundle with COS Lite (data/cos-lite.yaml); always done for "
        "loadgate's own bundle",
    )


def _cmd_check_bundle(args: argparse.Namespace, seams: Seams) -> int:
    bundle = Path(args.bundle) if args.bundle else default_bundle()
    upstream = Path(args.upstream) if args.upstream else default_upstream()
    try:
        catalog = build_catalog(upstream, local_charmcraft_files())
    except CatalogError as exc:
        console.print(f"[red]loadgate check-bundle: {exc}[/red]", soft_wrap=True)
        return EXIT_BAD_INPUT
    combos = [[Path(o) for o in args.overlay]] if args.overlay else default_combinations(bundle)
    failed = False
    for overlays in combos:
        label = " + ".join([str(bundle), *map(str, overlays)])
        try:
            problems = check_files(bundle, overlays, catalog)
        except BundleError as exc:
            console.print(f"[red]loadgate check-bundle: {exc}[/red]", soft_wrap=True)
            return EXIT_BAD_INPUT
        if problems:
            failed = True
            stdout.print(f"[red]FAIL[/red] {label}", soft_wrap=True)
            for problem in problems:
                stdout.print(f"  {problem}", soft_wrap=True)
        else:
            stdout.print(f"[green]OK[/green]   {label}", soft_wrap=True)
    if args.cos_lite or not args.bundle:
        failed = not _print_cos_lite(bundle) or failed
    return EXIT_GATE_FAILED if failed else EXIT_OK


def _print_cos_lite(bundle: Path) -> bool:
    """The bundle against COS Lite: each difference kept on purpose with why, and any other
    (a failure). Whether nothing unexplained was found."""
    try:
        doc, _ = load(bundle)
        found = cos_lite.compare(doc, cos_lite.load())
    except (BundleError, cos_lite.ReferenceError) as exc:
        console.print(f"[red]loadgate check-bundle: {exc}[/red]", soft_wrap=True)
        return False
    verdict = "[green]OK[/green]  " if found.ok else "[red]FAIL[/red]"
    stdout.print(
        f"{verdict} {bundle} against COS Lite ({found.reference}): {len(found.kept)} "
        "differences kept on purpose",
        soft_wrap=True,
    )
    for kept in found.kept:
        changes = "changes what the gate measures" if kept.measures else "measures the same"
        stdout.print(f"  {kept.what} ({changes}): {kept.why}", soft_wrap=True)
    for what in found.unexplained:
        stdout.print(f"  [red]not explained[/red]: {what} (add it to data/cos-lite.yaml "
                     "`accepted` with why, or close it)", soft_wrap=True)  # fmt: skip
    for what in found.stale:
        stdout.print(f"  [red]no longer differs[/red]: {what} (remove it from `accepted`)",
                     soft_wrap=True)  # fmt: skip
    return found.ok
