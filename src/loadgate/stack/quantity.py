"""Kubernetes resource quantities (`500m`, `1`, `1.5`, `1Gi`, `512Mi`, `1G`, `1e9`), parsed as
the API server parses them (k8s.io/apimachinery/pkg/api/resource). Pure functions.

    <quantity>     ::= <signedNumber><suffix>
    <number>       ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>       ::= <binarySI> | <decimalExponent> | <decimalSI>
    <binarySI>     ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>    ::= n | u | m | "" | k | M | G | T | P | E
    <decimalExponent> ::= e<signedNumber> | E<signedNumber>

The charms check their `cpu` and `memory` options with lightkube's looser parser (it also takes
`Z`, `Y`, `Zi`, `Yi`), but the API server refuses those when the charm patches its pod: the
grammar here is the one whose values end up enforced.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<exponent>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)",
    re.ASCII,
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
# What the errors list as the allowed forms, per resource.
CPU_FORMS = "cores as a Kubernetes quantity, e.g. 1, 0.5, 1.5 or 500m (milli-cores)"
MEMORY_FORMS = (
    "bytes as a Kubernetes quantity, e.g. 1Gi, 512Mi, 1G, 500M or 1e9 "
    "(suffixes Ki Mi Gi Ti Pi Ei, k M G T P E, or an exponent)"
)
_MAX_EXPONENT = 30  # beyond any machine's memory; keeps Decimal arithmetic exact and small


class QuantityError(ValueError):
    """Not a Kubernetes quantity; the message says why (the caller names the option)."""


def parse(text: str) -> Decimal:
    """The value of a quantity, exactly (`500m` -> 0.5, `1Ki` -> 1024, `1e3` -> 1000)."""
    m = _QUANTITY.fullmatch(text)
    if m is None:
        raise QuantityError(f"not a quantity: {text!r}")
    try:
        number = Decimal(m["number"])
    except InvalidOperation:
        raise QuantityError(f"not a number: {m['number']!r}") from None
    if m["exponent"] is not None:
        power = int(m["exponent"][1:])
        if abs(power) > _MAX_EXPONENT:
            raise QuantityError(f"exponent out of range: {m['exponent']!r}")
        return number.scaleb(power)
    suffix = m["suffix"] or ""
    if suffix in _BINARY:
        return number * (Decimal(1024) ** _BINARY[suffix])
    return number.scaleb(_DECIMAL[suffix])


def millicores(value: Decimal) -> int:
    """CPU in milli-cores, rounded up as Kubernetes rounds a CPU limit (MilliValue)."""
    return math.ceil(value * 1000)


def whole_bytes(value: Decimal) -> int:
    """Memory in bytes, rounded up (as the charms' resource library rounds fractional bytes)."""
    return math.ceil(value)


def show_bytes(count: int) -> str:
    """`209715200` -> `200Mi`; a count that is no whole binary unit stays in bytes."""
    for suffix, power in sorted(_BINARY.items(), key=lambda kv: -kv[1]):
        unit = 1024**power
        if count >= unit and count % unit == 0:
            return f"{count // unit}{suffix}"
    return str(count)


def show_millicores(millis: int) -> str:
    """`1000` -> `1`, `250` -> `250m`."""
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"
