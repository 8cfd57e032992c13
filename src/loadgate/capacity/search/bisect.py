"""The bisect method of the capacity search (`--method bisect`): short probes bracket the knee,
bisection narrows it, a longer hold confirms it. It needs no saturation figures, so it works on
any target and with any gates; the saturate method (`saturate`) is faster where the
sending queue is what gives way.

1. **Bracket** with short probes (`probe_s`): from `start_rate`, multiply by `growth` after each
   pass (capped at `max_rate`) until a step fails; or, when the first step fails, divide by
   `growth` (floored at `min_rate`) until one passes. The bracket is [C, F]: C the highest rate
   that passed, F the lowest that failed.
2. **Bisect** at the geometric middle sqrt(C*F) until the bracket is within the precision:
   (F - C) / (F + C) <= precision, i.e. F/C <= (1 + p)/(1 - p), 1.105 at the default ±5 %.
3. **Hold** at C for `hold_s`, longer than a probe: a queue that fills slowly overflows only
   then. A passing hold confirms C. A failing hold shows the probes were optimistic near this
   knee, so the search goes on with holds only, each one precision width below the lowest
   failure (`step_below`), until one passes.

Noise guard: a failing step is run once more at the same rate before the result rests on it
(not one that lost acknowledged records: that failure is final).
The retry is lazy: the search goes on below a failure at once (bisection does not wait) and
offers the lowest failure again when the bracket is within the precision (or `min_rate`
failed). If that retry passes, the rate counts as a pass and the bracket reopens above it; only
a rate that failed twice is reported as F. Real failures are common (each bisection step below
the knee) and spurious ones rare, so one retry per search beats one per failure: with holds
failing up to 8 % below where the probes pass, every simulated search still ends within the
budget, which retrying each failure at once does not achieve. A single spurious failure never
makes a knee (it costs the bisection below it and the retry); independent spurious failures
with probability q make one with probability about (rates tried) * q^2, ~2 % at q = 5 %.

Load at the defaults (15 s probes, a 60 s hold, growth 2, ±5 %, start 100,000, range
10,000-1,000,000), where the default collector gives way near 200,000 records/min: a pass at
100,000 and a failure at 200,000 (30 s); the bracket ratio 2 needs three bisections, 2^(1/8) =
1.09 <= 1.105 (45 s); the retry of F (15 s); the hold (60 s): 150 s. A knee near 1,000,000:
five probes up (75 s), two bisections of the ratio-1.25 bracket (30 s), the retry (15 s), the
hold: 180 s. A knee near 10,000: four failing probes down and a pass (75 s), two bisections,
the retry, the hold: 180 s. Nothing failing: five probes and the hold, 135 s; everything
failing: five probes and the retry, 90 s. A failing hold adds the holds of the descent and the
retry of the failed one, 120 s for one step down: 150 + 120 = 270 s near 200,000, 300 s at
worst, the 300 s budget. Measured on a quiet 2-core machine: 285 s of load and 553 s of wall
time, a 15 s probe passing at 238,000 where the 60 s hold failed.
"""

from __future__ import annotations

import math

from loadgate.capacity.search.plan import SearchPlan
from loadgate.capacity.search.rates import precise, round_rate, step_below
from loadgate.capacity.search.state import (
    AT_LEAST_MAX,
    BELOW_MIN,
    FOUND,
    HOLD,
    PROBE,
    State,
)


def propose(plan: SearchPlan, state: State) -> tuple[int, str, int] | str:
    """The next (rate, phase, attempt) by the bisect method, or a final status."""
    low, held = state.low, state.held
    if state.high is None:
        if held is not None and held >= plan.max_rate:
            return AT_LEAST_MAX
        if low is None:
            return plan.start_rate, PROBE, 1
        if low >= plan.max_rate:
            return plan.max_rate, HOLD, 1
        return min(plan.max_rate, round_rate(low * plan.growth)), PROBE, 1
    high, high_phase, confirmed = state.high
    retry = (high, high_phase, 2)  # a failure is offered again before the result rests on it
    if held is not None and precise(held, high, plan.precision):
        return FOUND if confirmed else retry
    if high <= plan.min_rate:
        return BELOW_MIN if confirmed else retry
    if state.failed_hold:
        # A hold failed where the probes passed: short probes are optimistic near this knee,
        # so go on with holds only, one precision width below the lowest failure.
        return max(plan.min_rate, step_below(high, plan.precision)), HOLD, 1
    if low is None:
        return max(plan.min_rate, round_rate(high / plan.growth)), PROBE, 1
    if precise(low, high, plan.precision):
        return (low, HOLD, 1) if confirmed else retry
    return round_rate(math.sqrt(low * high)), PROBE, 1
