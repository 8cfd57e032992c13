"""The saturate method of the capacity search (the default): a saturation step says where the
knee is, a few holds just long enough to decide confirm it.

1. **Saturation step** (`saturate_s`, at `saturate_rate` capped at `max_rate`, with the VUs and
   gates of `loadgate run --saturate`): offered more than it takes, the collector's sending
   queue fills and stays full, and the pipeline's throughput over that steady window is S.
   Overload costs a small machine's pipeline CPU (refused requests are decoded too, k6 works
   harder), so S reads low the heavier it is: offered more than HEAVY_OVERLOAD (2) times S,
   the step is run once more at MILD_OVERLOAD (1.5) times S (measured on a busy 2-core
   machine: 65,850/min offered 300,000, where 60 s holds passed at 87,500). The milder step
   errs the other way: a 30 s step at a mild overload reads above what a hold sustains (on
   the quiet VM 159,000-173,000 where holds passed at 138,000-151,000 and failed from
   152,000-166,000; on the busy machine a median 13 % above the capacity found). So the
   reading, S, is the geometric mean of the two (137,000 and 173,000 read 154,000, 142,000
   and 159,000 read 150,000); with one saturated step, that step's. A pipeline that took
   everything offered (the queue never filled) is offered `growth` times more, up to
   `max_rate`; one that took `max_rate` is held there (pass: "at least max_rate"); one that
   took whole a milder step than its heavy reading overrules that reading: the holds start
   from what it took. Saturation figures that could not be measured are measured once more;
   twice unknown, the search goes on by the bisect method.
2. **Holds** only, never short probes: a probe ends before a slowly filling queue overflows,
   so it passes above the knee (a 15 s probe passed at 238,000 records/min where 60 s failed).
   No rate above S/0.95 can pass the `logs_per_minute` gate (95 % of offered) for long: that
   is D, where the first hold goes (`derived_end`; S + e_T, below, when a hold cannot see
   the precision's excess). D failing is the expected case, and final (the saturation step
   says the same); the next hold is one precision width below (`step_below(D)`, ~0.95 S at
   ±5 %), and its pass ends the search. D passing means S read low: up one precision width
   at a time (`step_above`) until a hold fails. A failure below S contradicts the reading:
   one precision width further down; a second failure that neither S nor the hold's own queue
   explains (it did not fill) means the knee is not where the saturation step says (e.g. the
   p99 gate gives way first): divide by `growth` until a hold passes, then bisect with holds.
   The search ends when a passing and a failing hold are within the precision. D is run
   rather than taken as the bracket's end: S read low would make the capacity low by as much.
3. **Keeping up** (`keep_up_s`, the default plan's): a hold also fails when it fell behind,
   its exporter sending on less than 1 - p/2 of what the collector took in over its steady
   window (`fell_behind`, judged by the driver: its queue grew by more than half the
   precision's share of the load, which a longer hold would overflow). Such a failure counts
   at once, like one whose queue filled. It needs no fill time: every hold lasts `keep_up_s`
   (30 s), D is S / 0.95, and the capacity is what the pipeline keeps up with, within the
   precision. With `keep_up_s` 0 (the Juju plan's: COS scrapes too seldom for a short steady
   window) holds are judged by their gates alone, as long as the queue needs (4.).
4. **Hold length** of gate-judged holds (`hold_seconds`): long enough for the queue to fill at
   the precision's excess and then refuse past the error-rate gate. At a rate p above S the
   queue, holding Q records (queue capacity x records per request, from the saturation step),
   fills in t_fill = 60 Q / (p S) s; after that the receiver refuses p/(1+p) of the requests, so the
   hold fails the error-rate gate g with a 1.25x margin when the share of the hold after the
   fill is 1.25 g (1+p)/p: T = t_fill / (1 - 1.25 g (1+p)/p), at least `hold_min_s`, at most
   `hold_s`. With the default queue (1,000 x 5 records), S = 210,000/min, p = 5 % and g = 1 %:
   t_fill = 28.6 s, T = 39 s. A queue of unknown size, or a gate too loose to catch the excess
   (1.25 g (1+p)/p >= 0.9), gets `hold_s`. A queue of batches (a batch processor before the
   exporter) holds more records than Q: its holds are too short to fill it, as 60 s ones were.
   Where T would pass `hold_s` (S below about 135,000/min with the default queue and plan)
   a hold sees only a larger excess: a hold of T s is expected to fail at the excess e_T at
   which its refused share reaches 1.25 g, (T e - 60 Q) / (T (S + e)) = 1.25 g, so
   e_T = (60 Q + 1.25 g T S) / (T (1 - 1.25 g)). At the hold's own length that is about p S
   (S + e_T is just below S/0.95); at 60 s it is 5,000-7,000/min (S = 10,500: D = 15,700),
   and D is S + e_T: the capacity is then what passes a hold of `hold_s`, as it was with the
   bisect method's 60 s hold.

Noise guard: a failing hold counts when it failed twice, or once above S (the saturation step
says the same), or once with its own sending queue full (the pipeline did not keep up: an
observation, not a glitch; on a busy machine the knee itself moves), or once having lost
acknowledged records (never a glitch: the capacity lies below it). Any other failure below S
(p99 or errors without a full queue) contradicts the saturation step, so it is offered again
lazily, as in the bisect method: the search goes on below it and retries it when the bracket
is within the precision; a retry that passes reopens the bracket above it. A single spurious
failure of that kind never makes a knee.

Noise near the knee is another matter: the knee moves from step to step, so a hold just above
it can pass and one just below can fail (or fall behind), and a pass and a failure a precision
width apart hold the knee far less often than ±p suggests (75 % of simulated searches at 3 %
step noise). Running the deciding holds again would cost 60 s of load a search; instead each
found knee is reported between two rates with the plan's confidence, allowing for the step
noise measured, else the plan's stated one (`confidence`): the holds' bracket widened by what
their misclassification allows.

Load at the defaults (a 30 s saturation step, ±5 %, holds that keep up) against the default
collector on its own CPU of a quiet 2-core machine (S about 110,000 read low at 300,000, so a
milder step): two saturation steps and two 30 s holds, 120 s. Gate-judged holds (`keep_up_s`
0), against the unsplit collector (S about 210,000, holds of 39 s): the saturation step, D
failing and the hold below it passing: 108 s. A spurious failure below S adds the hold below
it and the retry: 186 s. S read 10 % low: D passes and the hold above fails, 108 s; 20 % low,
147 s. A busy machine's small S (holds of 60 s) and heavy overload (a second saturation
step): 180-300 s. The longest noiseless search (`SearchPlan.noiseless_worst_case`, gate-judged
holds at `hold_s`): three saturation steps up to 1,000,000 and two holds, 210 s.
"""

from __future__ import annotations

import math

from loadgate.capacity.search import bisect
from loadgate.capacity.search.plan import SearchPlan
from loadgate.capacity.search.rates import precise, round_rate, step_above, step_below
from loadgate.capacity.search.state import (
    AT_LEAST_MAX,
    BELOW_MIN,
    FOUND,
    HOLD,
    SATURATION,
    Saturation,
    State,
)
from loadgate.contract.params import ACCEPTED_SHARE  # the logs_per_minute gate's share

# The error-rate gate is to be passed by this factor when the queue overflowed.
_GATE_MARGIN = 1.25
# Above this share of the hold refusing, the hold cannot be sized: `hold_s`.
_MAX_REFUSING_SHARE = 0.9
# A saturation step offered more than this times what the pipeline took is measured once more
# at MILD_OVERLOAD times it: heavy overload costs a small machine's pipeline CPU.
_HEAVY_OVERLOAD = 2.0
_MILD_OVERLOAD = 1.5


def _saturation_rate(plan: SearchPlan) -> int:
    """What the first saturation step offers."""
    return min(plan.saturate_rate, plan.max_rate)


def derived_end(plan: SearchPlan, saturation: Saturation) -> int:
    """D: where a hold is expected to fail, S / 0.95 (the logs_per_minute gate; a hold that
    must keep up fails from S / (1 - precision/2)), or where a hold judged by the gates alone
    and too short to see the precision's excess expects the error-rate gate to give way,
    S + e_T (see the module's docstring)."""
    s = saturation.throughput_per_min
    assert s is not None
    end = s / ACCEPTED_SHARE
    q = saturation.queue_records
    refusing = _GATE_MARGIN * plan.max_error_rate
    if not plan.keep_up_s and q and q > 0 and refusing < _MAX_REFUSING_SHARE:
        t = hold_seconds(plan, saturation)
        end = max(end, s + (60 * q + refusing * t * s) / (t * (1 - refusing)))
    return round_rate(end)


def keep_up_share(plan: SearchPlan) -> float:
    """A hold falls behind when its exporter sends on less than this share of what the
    collector took in over the hold's steady window: its queue grew by more than half the
    precision's share of the load, which a longer hold would overflow."""
    return 1 - plan.precision / 2


def fell_behind(
    plan: SearchPlan, accepted_per_min: float | None, exported_per_min: float | None
) -> bool | None:
    """Whether a hold fell behind (see keep_up_share); None when the plan does not judge it
    (`keep_up_s` 0) or the hold's steady window gave no figures."""
    if not plan.keep_up_s or not accepted_per_min or exported_per_min is None:
        return None
    return exported_per_min < keep_up_share(plan) * accepted_per_min


def hold_seconds(plan: SearchPlan, saturation: Saturation | None) -> int:
    """A hold's length: `keep_up_s` when holds must keep up; else the queue fills at the
    precision's excess over the saturation throughput and then refuses past the error-rate
    gate (see the module's docstring)."""
    if plan.keep_up_s:
        return plan.keep_up_s
    s = saturation.throughput_per_min if saturation is not None else None
    q = saturation.queue_records if saturation is not None else None
    if not s or not q or s <= 0 or q <= 0:
        return plan.hold_s
    p = plan.precision
    fill_s = 60 * q / (p * s)
    refusing = _GATE_MARGIN * plan.max_error_rate * (1 + p) / p
    if refusing >= _MAX_REFUSING_SHARE:
        return plan.hold_s
    return min(plan.hold_s, max(plan.hold_min_s, math.ceil(fill_s / (1 - refusing))))


def hold_basis(state: State) -> Saturation | None:
    """The saturation step a hold's length derives from: the reading, else the latest that
    measured anything (a pipeline that took everything: its throughput is a lower bound)."""
    measured = [s for s in state.saturations if s.measured]
    return state.reading or (measured[-1] if measured else None)


def propose(plan: SearchPlan, state: State) -> tuple[int, str, int] | str:
    """The next (rate, phase, attempt) by the saturate method, or a final status."""
    if not state.saturations:
        return _saturation_rate(plan), SATURATION, 1
    last = state.saturations[-1]
    if not last.measured:
        if last.attempt < 2:
            return last.rate, SATURATION, 2
        return bisect.propose(plan, state)
    reading = state.reading
    if reading is None:
        took_all = state.took_all
        saturated = any(s.measured and s.saturated for s in state.saturations)
        if not saturated and took_all is not None and took_all < plan.max_rate:
            return min(plan.max_rate, round_rate(took_all * plan.growth)), SATURATION, 1
    elif (milder := _milder(plan, state, reading)) is not None:
        return milder, SATURATION, 1
    return _holds(plan, state)


def _milder(plan: SearchPlan, state: State, reading: Saturation) -> int | None:
    """The rate of one more saturation step, at a milder overload, when the reading's was
    heavy, read at least `min_rate` and is the only step that saturated, with nothing offered
    below it yet: once per search."""
    s = reading.throughput_per_min
    assert s is not None
    saturated = sum(bool(x.measured and x.saturated) for x in state.saturations)
    lower = any(x.rate < reading.rate for x in state.saturations)
    if reading.rate <= _HEAVY_OVERLOAD * s or lower or saturated > 1 or s < plan.min_rate:
        return None
    rate = round_rate(_MILD_OVERLOAD * s)
    return rate if rate < reading.rate else None


def _first_hold(plan: SearchPlan, state: State) -> int:
    reading = state.reading
    if reading is not None:
        return min(plan.max_rate, max(plan.min_rate, derived_end(plan, reading)))
    # took everything: from there up (or at max_rate)
    return min(plan.max_rate, max(plan.min_rate, state.took_all or plan.max_rate))


def _unexplained(state: State) -> list[int]:
    """The failing holds' rates that neither the saturation reading nor their own full queue
    explains."""
    ceiling = state.ceiling
    return [
        rate
        for (rate, phase), t in state.tries.items()
        if phase == HOLD
        and t.failed
        and (ceiling is None or rate <= ceiling)
        and t.queue_full is not True
    ]


def _holds(plan: SearchPlan, state: State) -> tuple[int, str, int] | str:
    held, p = state.held, plan.precision
    if state.high is None:
        if held is None:
            return _first_hold(plan, state), HOLD, 1
        if held >= plan.max_rate:
            return AT_LEAST_MAX
        return min(plan.max_rate, step_above(held, p)), HOLD, 1
    high, _, confirmed = state.high
    retry = (high, HOLD, 2)
    if held is not None and precise(held, high, p):
        return FOUND if confirmed else retry
    if high <= plan.min_rate:
        return BELOW_MIN if confirmed else retry
    if held is None:
        # one precision width down; after two failures neither the reading (they were below
        # S, or there is none) nor their own queue (it did not fill) explains, the knee is
        # elsewhere: divide by growth until a hold passes
        if len(_unexplained(state)) <= 1:
            return max(plan.min_rate, step_below(high, p)), HOLD, 1
        return max(plan.min_rate, round_rate(high / plan.growth)), HOLD, 1
    return round_rate(math.sqrt(held * high)), HOLD, 1
