"""Typed reading of JSON objects into dataclasses, driven by their fields and type hints.

`read(cls, data, where)` builds `cls` from a JSON object and checks every field on the way; the
first bad one raises `RecordError` naming it from `where` (`compare.runs[1].side: must be
baseline or candidate; got 'both'`). The rules:

- A key the object lacks takes the field's default; a field without one is None when its type
  allows None, else `missing`. A null is accepted only where the type allows None.
- `str`, `bool`, `int` (not a bool, not 1.0), `float` (any finite number, stored as a float),
  `X | None`, `list[X]`, `tuple[X, ...]`, `tuple[X, Y]`, `dict[str, X]`, `dict[int, X]` (keys
  written as text), nested dataclasses, and `Any` (taken as it is).
- Keys the class has no field for are ignored: records also carry derived figures (a summary,
  a verdict) for people and other tools.
- A class with a `FORMAT` class variable is read only from an object whose `format` is it.
- Field metadata (`dataclasses.field(metadata=...)`): `one_of(values)` refuses any other value,
  and such fields are read first (they say what kind of thing the rest describes); `json_key`
  names a key that differs from the field's name; `mapping_key()` fills the field with the key
  under which the object sits in a `dict[str, X]`.

Writing: `real(x)` is the float a `float` field is written as, so a record's text survives a
round trip.

Standard library only: part of the contract shared with the k6 charm.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any, TypeVar, Union, cast, get_args, get_origin, get_type_hints

_T = TypeVar("_T")

_CHOICES = "typed.one_of"
_KEY = "typed.json_key"
_MAPPING_KEY = "typed.mapping_key"


class RecordError(ValueError):
    """A field of a record that is missing or of the wrong type. The message names the field."""


def one_of(values: Sequence[str], wording: str | None = None) -> dict[str, Any]:
    """Field metadata: the value must be one of `values` ("must be one of a, b; got 'c'", or
    "must be <wording>; got 'c'")."""
    return {_CHOICES: (tuple(values), wording or f"one of {', '.join(values)}")}


def json_key(name: str) -> dict[str, Any]:
    """Field metadata: the field is written under `name` in the JSON object."""
    return {_KEY: name}


def mapping_key() -> dict[str, Any]:
    """Field metadata: the field is the key under which the object sits in its mapping."""
    return {_MAPPING_KEY: True}


def real(value: float | None) -> float | None:
    """A float for JSON (1000 -> 1000.0), so a record's text survives a round trip unchanged
    (`read` stores any number of a `float` field as a float)."""
    return None if value is None else float(value)


def read(cls: type[_T], data: object, where: str) -> _T:
    """`cls` from the JSON object `data`; RecordError names the first bad field."""
    return _dataclass(cls, data, where, None)


def mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise RecordError(f"{where}: expected an object, got {type(value).__name__}")
    return cast(Mapping[str, Any], value)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _reading_order(cls: type) -> list[dataclasses.Field[Any]]:
    """Fields with a fixed set of values first, then the others, each in declaration order."""
    own = [f for f in dataclasses.fields(cls) if f.init]
    return [f for f in own if _CHOICES in f.metadata] + [
        f for f in own if _CHOICES not in f.metadata
    ]


def _check_format(cls: type, d: Mapping[str, Any], where: str) -> None:
    expected = getattr(cls, "FORMAT", None)
    if isinstance(expected, str) and d.get("format") != expected:
        raise RecordError(f"{where}.format: expected {expected!r}, got {d.get('format')!r}")


def _dataclass(cls: type[_T], data: object, where: str, key: str | None) -> _T:
    d = mapping(data, where)
    _check_format(cls, d, where)
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for fl in _reading_order(cls):
        if fl.metadata.get(_MAPPING_KEY):
            if key is None:
                raise TypeError(f"{where}: {cls.__name__} is read only from inside a mapping")
            values[fl.name] = key
            continue
        name = str(fl.metadata.get(_KEY, fl.name))
        at = f"{where}.{name}"
        if name not in d:
            has_default = (
                fl.default is not dataclasses.MISSING
                or fl.default_factory is not dataclasses.MISSING
            )
            if has_default:
                continue
            if not _nullable(hints[fl.name]):
                raise RecordError(f"{at}: missing")
            values[fl.name] = None
            continue
        value = _value(hints[fl.name], d[name], at)
        if _CHOICES in fl.metadata:
            allowed, wording = fl.metadata[_CHOICES]
            if value not in allowed:
                raise RecordError(f"{at}: must be {wording}; got {value!r}")
        values[fl.name] = value
    return cls(**values)


def _nullable(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp)


def _value(tp: Any, value: object, at: str, nullable: bool = False) -> Any:
    """`value` read as type `tp`."""
    if tp is Any or tp is object:
        return value
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        others = [a for a in args if a is not type(None)]
        if len(others) != 1:
            raise TypeError(f"{at}: cannot read a value of type {tp}")
        if value is None and len(others) < len(args):
            return None
        return _value(others[0], value, at, nullable=len(others) < len(args))
    scalar = _SCALARS.get(tp)
    if scalar is not None:
        what, fits = scalar
        if not fits(value):
            null = " or null" if nullable else ""
            raise RecordError(f"{at}: expected {what}{null}, got {value!r}")
        return float(cast(float, value)) if tp is float else value
    if origin in (list, tuple, dict):
        return _container(origin, args, value, at)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass(tp, value, at, None)
    raise TypeError(f"{at}: cannot read a value of type {tp}")


def _container(origin: type, args: tuple[Any, ...], value: object, at: str) -> Any:
    if origin is dict:
        return _dict(args, value, at)
    if not isinstance(value, list):
        raise RecordError(f"{at}: expected a list, got {type(value).__name__}")
    items = cast(list[object], value)
    if origin is list:
        return [_value(args[0], v, f"{at}[{i}]") for i, v in enumerate(items)]
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(_value(args[0], v, f"{at}[{i}]") for i, v in enumerate(items))
    if len(items) != len(args):
        raise RecordError(f"{at}: expected a list of {len(args)} values, got {value!r}")
    return tuple(
        _value(t, v, f"{at}[{i}]") for i, (t, v) in enumerate(zip(args, items, strict=True))
    )


def _dict(args: tuple[Any, ...], value: object, at: str) -> dict[Any, Any]:
    d = mapping(value, at)
    key_type, value_type = args if args else (str, Any)
    out: dict[Any, Any] = {}
    for k, v in d.items():
        if key_type is int:
            try:
                key: Any = int(k)
            except ValueError:
                raise RecordError(f"{at}: key {k!r} is not an integer") from None
        else:
            key = k
        if isinstance(value_type, type) and dataclasses.is_dataclass(value_type):
            out[key] = _dataclass(value_type, v, f"{at}.{k}", k)
        else:
            out[key] = _value(value_type, v, f"{at}.{k}")
    return out


def _is_integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# Type -> (what a value must be, the test it must pass).
_SCALARS: dict[object, tuple[str, Callable[[object], bool]]] = {
    str: ("a string", lambda v: isinstance(v, str)),
    bool: ("true or false", lambda v: isinstance(v, bool)),
    int: ("an integer", _is_integer),
    float: ("a finite number", _is_number),
}
