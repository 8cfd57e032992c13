"""Faults the backend proxy injects between the collector and Loki (`--backend-fault`), and
the decision for each request. Pure: a plan and a seed give the same decisions in the same
order, whatever happens to the requests.

Syntax: comma-separated items, each at most once, e.g. `503=0.7,delay=1s@0.5,outage=20s+15s`:

- `CODE=SHARE`: that share of requests answered CODE (429, 500, 502, 503 or 504) without
  reaching Loki; SHARE is a fraction (`0.7`) or a percentage (`70%`); the shares add up to 1
  at most.
- `delay=DURATION[@SHARE]`: that share (default all) of requests held DURATION before they
  are answered or forwarded (Istio's order: the delay, then the abort).
- `outage=START+LENGTH`: from START after the load starts, for LENGTH, every request answered
  503 (a backend that is down).
- `until=DURATION`: the status shares and the delay stop that long after the load starts (the
  backend recovers; without it they last as long as the stack).
- `seed=N`: the random sequence (default 1).

DURATION is a number with `ms`, `s` or `m` (`250ms`, `1.5s`, `2m`). The faults begin when a
run's load starts (the proxy passes everything until then) and start over at each run's load.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

_FLAG = "--backend-fault"
_STATUS_CODES = (429, 500, 502, 503, 504)
_OUTAGE_STATUS = 503
_FORM = (
    "comma-separated CODE=SHARE (CODE one of 429, 500, 502, 503, 504), "
    "delay=DURATION[@SHARE], outage=START+LENGTH, until=DURATION, seed=N; "
    "SHARE a fraction 0..1 or N%, DURATION a number with ms, s or m; "
    "e.g. 503=0.7,delay=1s@0.5,outage=20s+15s"
)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m)", re.ASCII)
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0}


class FaultError(ValueError):
    """A --backend-fault value that does not parse; names the flag, the item and the form."""


@dataclass(frozen=True)
class FaultPlan:
    spec: str  # as given
    statuses: dict[int, float] = field(default_factory=dict[int, float])  # code -> share
    delay_s: float = 0.0
    delay_share: float = 0.0
    outage_start_s: float | None = None
    outage_length_s: float = 0.0
    until_s: float | None = None  # the shares and the delay stop then (None: never)
    seed: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "statuses": {str(k): v for k, v in self.statuses.items()},
            "delay_s": self.delay_s,
            "delay_share": self.delay_share,
            "outage_start_s": self.outage_start_s,
            "outage_length_s": self.outage_length_s,
            "until_s": self.until_s,
            "seed": self.seed,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FaultPlan:
        return cls(
            spec=str(data["spec"]),
            statuses={int(k): float(v) for k, v in dict(data.get("statuses") or {}).items()},
            delay_s=float(data.get("delay_s") or 0.0),
            delay_share=float(data.get("delay_share") or 0.0),
            outage_start_s=_opt_float(data.get("outage_start_s")),
            outage_length_s=float(data.get("outage_length_s") or 0.0),
            until_s=_opt_float(data.get("until_s")),
            seed=int(data.get("seed") or 1),
        )


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _bad(item: str, why: str) -> FaultError:
    return FaultError(f"{_FLAG}: {item!r}: {why}; allowed: {_FORM}")


def _duration(text: str, item: str) -> float:
    m = _DURATION.fullmatch(text)
    if m is None:
        raise _bad(item, f"{text!r} is not a duration")
    return float(m[1]) * _UNIT_S[m[2]]


def _share(text: str, item: str) -> float:
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise _bad(item, f"{text!r} is not a share") from None
    if not 0 <= value <= 1:
        raise _bad(item, f"{text!r} is not a share between 0 and 1")
    return value


def parse(spec: str) -> FaultPlan:
    """The plan a --backend-fault value describes (FaultError names what is wrong)."""
    values: dict[str, Any] = {"statuses": {}}
    seen: set[str] = set()
    for item in (part.strip() for part in spec.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not value:
            raise _bad(item, "expected KEY=VALUE")
        if key in seen:
            raise _bad(item, f"{key} is given twice")
        seen.add(key)
        _item(key, value, item, values)
    if sum(values["statuses"].values()) > 1:
        raise _bad(spec, "the status shares add up to more than 1")
    if seen <= {"seed", "until"}:
        raise _bad(spec, "no fault given")
    return FaultPlan(spec=spec, **values)


def _item(key: str, value: str, item: str, values: dict[str, Any]) -> None:
    if key.isdigit():
        if int(key) not in _STATUS_CODES:
            raise _bad(item, f"status {key} is not one of {', '.join(map(str, _STATUS_CODES))}")
        values["statuses"][int(key)] = _share(value, item)
    elif key == "delay":
        length, _, part = value.partition("@")
        values["delay_s"] = _duration(length, item)
        values["delay_share"] = _share(part, item) if part else 1.0
    elif key == "outage":
        start, sep, length = value.partition("+")
        if not sep:
            raise _bad(item, "an outage is START+LENGTH, e.g. outage=20s+15s")
        values["outage_start_s"] = _duration(start, item)
        values["outage_length_s"] = _duration(length, item)
        if values["outage_length_s"] <= 0:
            raise _bad(item, "an outage lasts more than 0s")
    elif key == "until":
        values["until_s"] = _duration(value, item)
    elif key == "seed":
        if not value.isdigit():
            raise _bad(item, f"{value!r} is not a whole number")
        values["seed"] = int(value)
    else:
        raise _bad(item, f"unknown fault {key!r}")


@dataclass(frozen=True)
class Decision:
    """What the proxy does with one request."""

    status: int | None  # the injected answer; None: forwarded to Loki
    delay_s: float = 0.0
    outage: bool = False


class Decider:
    """The decisions of a plan, in request order. Every request draws the same two numbers
    (status, delay), so a seed always gives the same sequence; `restart` starts it over (at
    each run's load start, with the outage clock)."""

    def __init__(self, plan: FaultPlan):
        self.plan = plan
        self._random = random.Random(plan.seed)  # noqa: S311 (fault injection, not security)

    def restart(self) -> None:
        self._random = random.Random(self.plan.seed)  # noqa: S311

    def _in_outage(self, elapsed_s: float) -> bool:
        start = self.plan.outage_start_s
        return start is not None and start <= elapsed_s < start + self.plan.outage_length_s

    def decide(self, elapsed_s: float) -> Decision:
        """The decision for the next request, `elapsed_s` after the clock's start."""
        pick, hold = self._random.random(), self._random.random()
        if self._in_outage(elapsed_s):
            return Decision(_OUTAGE_STATUS, 0.0, outage=True)
        until = self.plan.until_s
        if until is not None and elapsed_s >= until:
            return Decision(None)
        delay = self.plan.delay_s if hold < self.plan.delay_share else 0.0
        edge = 0.0
        for code, part in sorted(self.plan.statuses.items()):
            edge += part
            if pick < edge:
                return Decision(code, delay)
        return Decision(None, delay)
