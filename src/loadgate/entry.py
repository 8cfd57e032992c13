"""The `loadgate` script: the command line, or the extra it needs when that is missing."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from . import extras


def main(argv: Sequence[str] | None = None) -> int:
    try:
        from loadgate.cli import main as cli_main
    except ModuleNotFoundError as exc:
        found = extras.missing(exc)
        if found is None:
            raise
        print(f"loadgate: {found}", file=sys.stderr)
        return 2
    try:
        return cli_main(argv)
    except extras.MissingExtraError as exc:
        print(f"loadgate: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
