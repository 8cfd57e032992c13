"""What is wrong with a run's parameters together, each valid on its own (RunSpec.from_params
asks after checking each one). Standard library only (shared with the k6 charm)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .params import ARRIVAL_EXECUTORS
from .scenarios import Scenario


def _per_iteration(values: Mapping[str, Any], kind: Scenario) -> int | None:
    """Units one iteration sends (None when a factor of it is invalid)."""
    factors = [
        values.get(n.replace("-", "_")) for n in (*kind.per_request, "requests-per-iteration")
    ]
    if not all(isinstance(v, int) for v in factors):
        return None
    return math.prod(int(v) for v in factors if isinstance(v, int))


def combination_problems(
    values: Mapping[str, Any], rate_given: bool, kind: Scenario
) -> list[tuple[str, str]]:
    """What is wrong with parameters together (each was valid on its own)."""
    problems: list[tuple[str, str]] = []
    bmin, bmax = values.get("body_min"), values.get("body_max")
    if isinstance(bmin, int) and isinstance(bmax, int) and bmin > bmax:
        problems.append(("body-min", f"must not exceed body-max ({bmax}); got {bmin}"))
    spr, streams = values.get("streams_per_request"), values.get("loki_streams")
    if isinstance(spr, int) and isinstance(streams, int) and spr > streams:
        problems.append(
            ("streams-per-request", f"must not exceed loki-streams ({streams}); got {spr}")
        )
    problems += _push_problems(values, kind)
    executor, rate = values.get("executor"), values.get("rate")
    per_iteration = _per_iteration(values, kind)
    if (
        executor in ARRIVAL_EXECUTORS
        and isinstance(rate, int)
        and per_iteration is not None
        and rate < per_iteration
    ):
        problems.append(
            (
                "rate",
                f"must be at least one iteration ({per_iteration} {kind.short}) per minute; "
                f"got {rate}",
            )
        )
    if executor == "constant-vus" and rate_given:
        problems.append(("rate", "applies to arrival-rate executors, not constant-vus"))
    return problems


def _push_problems(values: Mapping[str, Any], kind: Scenario) -> list[tuple[str, str]]:
    """A scenario that pushes beside its queries (logql-query) pushes at least one request a
    minute."""
    if kind.pushed is None:
        return []
    push_rate, spr, lps = (values.get(k) for k in ("push_rate", "streams_per_request",
                                                   "lines_per_stream"))  # fmt: skip
    if not (isinstance(push_rate, int) and isinstance(spr, int) and isinstance(lps, int)):
        return []
    if push_rate < spr * lps:
        return [
            (
                "push-rate",
                f"must be at least one push request ({spr * lps} lines: streams-per-request x "
                f"lines-per-stream) per minute; got {push_rate}",
            )
        ]
    return []
