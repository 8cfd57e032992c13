"""Typed reading and writing of loadgate's JSON records, with errors that name the field.

The reader is `loadgate.contract.typed` (standard library only, so the contract's own records,
the k6 summary figures and the gates, read the same way in the k6 charm): `read(cls, data,
where)` builds a dataclass from its fields and type hints; `one_of`, `json_key` and
`mapping_key` are field metadata it obeys. A record type's `from_dict` is `read` and, where the
type needs one, a check of what its fields cannot say alone.
"""

from __future__ import annotations

import json

from loadgate.contract.typed import RecordError, json_key, mapping, mapping_key, one_of, read

__all__ = [
    "RecordError",
    "json_key",
    "mapping",
    "mapping_key",
    "one_of",
    "parse_json",
    "read",
    "real",
]


def real(value: float | None) -> float | None:
    """A float for JSON (1000 -> 1000.0), so a record's text survives a round trip unchanged."""
    return None if value is None else float(value)


def parse_json(text: str, where: str) -> object:
    """The JSON value in `text`; RecordError `<where>: not JSON: ...` when it is not JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{where}: not JSON: {exc}") from None
