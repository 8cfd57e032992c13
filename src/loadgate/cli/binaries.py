"""`loadgate binaries`: build the pinned upstream binaries into the cache, with progress
(`binaries_output.build_missing`, which other commands call before they need a binary)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from loadgate.build import binaries

from .binaries_output import build_missing
from .common import Subparsers

if TYPE_CHECKING:
    from .seams import Seams


def register(sub: Subparsers) -> None:
    p = sub.add_parser("binaries", help="build the pinned upstream binaries into the cache")
    p.add_argument("--only", nargs="+", choices=binaries.PART_NAMES, help="build only these parts")
    p.add_argument("--force", action="store_true", help="rebuild even if current")
    p.set_defaults(handler=_cmd_binaries)


def _cmd_binaries(args: argparse.Namespace, seams: Seams) -> int:
    return build_missing(list(args.only or binaries.PART_NAMES), force=args.force)
