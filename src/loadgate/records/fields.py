"""Typed reading and writing of loadgate's JSON records, with errors that name the field.

The reader is `loadgate.contract.typed` (standard library only, so the contract's own records,
the k6 summary figures and the gates, read the same way in the k6 charm): `read(cls, data,
where)` builds a dataclass from its fields and type hints; `one_of`, `json_key` and
`mapping_key` are field metadata it obeys, and `real` the float a `float` field is written
as. A record type's `from_dict` is `read` and, where the type needs one, a check of what its
fields cannot say alone. The figure types of measure/ and judge/, below records/, use
`contract.typed` itself.
"""

from __future__ import annotations

import json

from loadgate.contract.typed import (
    RecordError,
    json_key,
    mapping,
    mapping_key,
    one_of,
    read,
    real,
)

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


def parse_json(text: str, where: str) -> object:
    """The JSON value in `text`; RecordError `<where>: not JSON: ...` when it is not JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{where}: not JSON: {exc}") from None
