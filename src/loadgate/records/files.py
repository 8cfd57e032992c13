"""Reading record files: one record from its file, or every file of a kind under a folder.

A record kind is a class with `FORMAT` (the `format` its files carry), `FILE` (their name) and
`from_dict`; one whose `from_dict` also reads older formats lists every format it reads in
`FORMATS`. A file that cannot be read, is not JSON, or has a bad field is refused with a
RecordError naming the file and the field (`compare-1/compare.json: compare.order: missing`);
one of another format (an older or newer writer) is refused by `read`, and skipped with a note
by `read_all`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from loadgate.records.fields import RecordError

_R = TypeVar("_R")
_R_co = TypeVar("_R_co", covariant=True)


class RecordKind(Protocol[_R_co]):
    """A record class: its files' format and name, and how to read one."""

    @property
    def FORMAT(self) -> str: ...  # noqa: N802 (a class constant)

    @property
    def FILE(self) -> str: ...  # noqa: N802 (a class constant)

    def from_dict(self, data: object, /) -> _R_co: ...


@dataclass(frozen=True)
class Found(Generic[_R]):
    """The records of one kind under a folder, in path order, and the files skipped (why)."""

    records: tuple[_R, ...]
    skipped: tuple[str, ...] = ()


def _load_json(path: Path, name: str) -> object:
    """The JSON value in the file; RecordError naming the file when it cannot be had."""
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise RecordError(f"{name}: cannot read it: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise RecordError(f"{name}: not JSON: {exc}") from None
    except UnicodeDecodeError:
        raise RecordError(f"{name}: not UTF-8 text") from None


def _format_of(data: object) -> object:
    return data.get("format") if isinstance(data, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


def _other_format(kind: RecordKind[object], data: object, name: str) -> str | None:
    """Why the file is not of this kind (None: it is)."""
    got = _format_of(data)
    formats: tuple[str, ...] = getattr(kind, "FORMATS", None) or (kind.FORMAT,)
    if got in formats:
        return None
    return f"{name}: format {got!r} is not {' or '.join(repr(f) for f in formats)}"


def _parse(kind: RecordKind[_R], data: object, name: str) -> _R:
    try:
        return kind.from_dict(data)
    except RecordError as exc:
        raise RecordError(f"{name}: {exc}") from None


def read(kind: RecordKind[_R], path: Path, name: str | None = None) -> _R:
    """The record in `path` (named `name` in errors, default the path)."""
    name = name if name is not None else str(path)
    data = _load_json(path, name)
    other = _other_format(kind, data, name)
    if other is not None:
        raise RecordError(other)
    return _parse(kind, data, name)


def read_all(kind: RecordKind[_R], root: Path) -> Found[_R]:
    """Every file named `kind.FILE` under `root`, at any depth, in path order; each is named
    by its path under `root`. A file of another format is skipped with a note."""
    records: list[_R] = []
    skipped: list[str] = []
    for path in sorted(root.rglob(kind.FILE)):
        name = str(path.relative_to(root))
        data = _load_json(path, name)
        other = _other_format(kind, data, name)
        if other is not None:
            skipped.append(f"{other}: skipped")
            continue
        records.append(_parse(kind, data, name))
    return Found(tuple(records), tuple(skipped))
