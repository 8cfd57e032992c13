"""Typed reading of JSON objects (search.json, compare.json), with errors that name the field."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


class RecordError(ValueError):
    """A field of a record that is missing or of the wrong type. The message names the field."""


def real(value: float | None) -> float | None:
    """A float for JSON (1000 -> 1000.0), so a record's text survives a round trip unchanged."""
    return None if value is None else float(value)


def mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise RecordError(f"{where}: expected an object, got {type(value).__name__}")
    return value  # pyright: ignore[reportUnknownVariableType]


def _missing(d: Mapping[str, Any], key: str, where: str) -> None:
    if key not in d:
        raise RecordError(f"{where}.{key}: missing")


def text(d: Mapping[str, Any], key: str, where: str) -> str:
    _missing(d, key, where)
    value = d[key]
    if not isinstance(value, str):
        raise RecordError(f"{where}.{key}: expected a string, got {value!r}")
    return value


def opt_text(d: Mapping[str, Any], key: str, where: str) -> str | None:
    return None if d.get(key) is None else text(d, key, where)


def boolean(d: Mapping[str, Any], key: str, where: str) -> bool:
    _missing(d, key, where)
    value = d[key]
    if not isinstance(value, bool):
        raise RecordError(f"{where}.{key}: expected true or false, got {value!r}")
    return value


def integer(d: Mapping[str, Any], key: str, where: str) -> int:
    _missing(d, key, where)
    value = d[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{where}.{key}: expected an integer, got {value!r}")
    return value


def opt_integer(d: Mapping[str, Any], key: str, where: str) -> int | None:
    return None if d.get(key) is None else integer(d, key, where)


def number(d: Mapping[str, Any], key: str, where: str) -> float:
    _missing(d, key, where)
    value = d[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RecordError(f"{where}.{key}: expected a finite number, got {value!r}")
    return float(value)


def opt_number(d: Mapping[str, Any], key: str, where: str) -> float | None:
    return None if d.get(key) is None else number(d, key, where)


def obj(d: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    _missing(d, key, where)
    return dict(mapping(d[key], f"{where}.{key}"))


def items(d: Mapping[str, Any], key: str, where: str, read: Callable[[object, str], T]) -> list[T]:
    """A list field, each element read by `read(element, "where.key[i]")`."""
    _missing(d, key, where)
    value = d[key]
    if not isinstance(value, list):
        raise RecordError(f"{where}.{key}: expected a list, got {type(value).__name__}")
    return [read(v, f"{where}.{key}[{i}]") for i, v in enumerate(value)]  # pyright: ignore[reportUnknownArgumentType]


def opt_numbers(d: Mapping[str, Any], key: str, where: str) -> list[float | None]:
    """A list of numbers where null stands for a figure that was not measured."""

    def read(v: object, at: str) -> float | None:
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise RecordError(f"{at}: expected a finite number or null, got {v!r}")
        return float(v)

    return items(d, key, where, read)


def strings(d: Mapping[str, Any], key: str, where: str) -> list[str]:
    def read(v: object, at: str) -> str:
        if not isinstance(v, str):
            raise RecordError(f"{at}: expected a string, got {v!r}")
        return v

    return items(d, key, where, read)
