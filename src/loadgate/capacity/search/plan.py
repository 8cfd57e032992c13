"""The settings of a capacity search (`SearchPlan`): its range, precision, step lengths and
budget, and its method (`saturate` or `bisect`), each checked against its own range
(`SearchPlan.range_problems`). Pure; `rule` adds the check that needs the stepping (a budget
and a step limit that cover the plan's longest search without noise) and runs the steps.

Rates are log records per minute, durations whole seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from loadgate.capacity.search.confidence import DEFAULT_STEP_NOISE
from loadgate.contract.spec import MAX_RATE
from loadgate.records import fields as f

SATURATE = "saturate"
BISECT = "bisect"
METHODS = (SATURATE, BISECT)
_MIN_SATURATE_S = 15  # a steady window of 10 s after the queue filled, or after the warm-up


class PlanError(ValueError):
    """Bad search settings: each problem names the setting and what is allowed."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{name}: {why}" for name, why in problems))


@dataclass(frozen=True)
class SearchPlan:
    """Settings of a search. Rates are log records per minute, durations whole seconds."""

    start_rate: int = 100_000  # bisect: the first probe
    min_rate: int = 10_000
    max_rate: int = 1_000_000
    precision: float = 0.05  # the knee within ±precision of the bracket's middle
    growth: float = 2.0  # factor between probes, or saturation steps, while bracketing
    probe_s: int = 15  # bisect: a probe's length
    hold_s: int = 60  # bisect: a hold's length; saturate: the longest hold
    max_steps: int = 20  # 300 s / 15 s probes: the budget binds first
    budget_s: int = 300  # seconds of load, all steps together
    method: str = field(default=SATURATE, metadata=f.one_of(METHODS))
    saturate_rate: int = 300_000  # the saturation step's rate, as `loadgate run --saturate`
    saturate_s: int = 30  # the saturation step's length
    hold_min_s: int = 20  # saturate: the shortest hold (hold_s when that is shorter)
    # saturate: the length of every hold when a hold also fails by falling behind (its exporter
    # sending on less than 1 - precision/2 of what it took in, over its steady window: see
    # saturate.fell_behind); 0 judges holds by the gates alone, as long as the queue
    # takes to fill (on Juju, whose Prometheus scrapes too seldom for a short steady window)
    keep_up_s: int = 30
    # saturate: the error-rate gate the holds are judged by (the run's --max-error-rate; the
    # driver sets it from the base run): a hold lasts until refusals pass it
    max_error_rate: float = 0.01
    # The knee is reported between two rates with this confidence (`confidence.knee_interval`),
    # allowing for a knee that moves from step to step (log-normal SD): a hold near it may pass
    # above it or fail below it. How much it moves is measured where it can be
    # (`confidence.step_noise_of`): `measured_step_noise`, a value measured elsewhere (the
    # saturation spread of `loadgate calibrate`, the holds of repeated searches:
    # `spread.measured_step_noise`); else what the search's own holds show when they contradict
    # each other; else `step_noise`, stated: 10 %, the most at which the simulation benchmark's
    # coverage is at least 90 % (the quiet machine's repeated searches spread by a CV of 2 %).
    confidence: float = 0.9
    step_noise: float = DEFAULT_STEP_NOISE
    measured_step_noise: float | None = None

    def range_problems(self) -> list[tuple[str, str]]:
        """Each setting out of its range, with what is allowed; empty when all are in range
        (`rule.plan_problems` checks the budget and step limit too)."""
        problems: list[tuple[str, str]] = []
        checks = _Checks(self, problems)
        if self.method not in METHODS:
            checks.bad("method", f"must be one of {', '.join(METHODS)}; got {self.method!r}")
        rates = [checks.integer(n, 1, MAX_RATE) for n in ("min_rate", "max_rate", "start_rate")]
        lo, hi, start = self.min_rate, self.max_rate, self.start_rate
        if all(rates) and hi <= lo:
            checks.bad("max_rate", f"must be above min_rate ({lo}); got {hi}")
        elif all(rates) and self.method == BISECT and not lo <= start <= hi:
            checks.bad(
                "start_rate", f"must be between min_rate ({lo}) and max_rate ({hi}); got {start}"
            )
        if checks.number("precision", 0.01, 0.25) & checks.number("growth", 1.0, 10.0):
            target = (1 + self.precision) / (1 - self.precision)
            if self.growth <= target:
                checks.bad(
                    "growth",
                    f"must be above {target:.3f} for precision {self.precision}; got {self.growth}",
                )
        durations = checks.integer("probe_s", 1, 3600) & checks.integer("hold_s", 1, 3600)
        if durations and self.method == BISECT and self.hold_s < self.probe_s:
            checks.bad("hold_s", f"must be at least probe_s ({self.probe_s}); got {self.hold_s}")
        checks.integer("saturate_rate", 1, MAX_RATE)
        checks.integer("saturate_s", _MIN_SATURATE_S, 3600)
        checks.integer("hold_min_s", 1, 3600)
        checks.integer_or_off("keep_up_s", _MIN_SATURATE_S, 3600, "holds judged by the gates alone")
        checks.share("max_error_rate")
        checks.number("confidence", 0.5, 0.99)
        checks.share("step_noise", 0.25)
        if self.measured_step_noise is not None:
            checks.share("measured_step_noise", 0.25)
        checks.integer("max_steps", 1, 1000)
        checks.integer("budget_s", 1, 86_400)
        return problems

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "start_rate": self.start_rate,
            "min_rate": self.min_rate,
            "max_rate": self.max_rate,
            "precision": f.real(self.precision),
            "growth": f.real(self.growth),
            "probe_s": self.probe_s,
            "hold_s": self.hold_s,
            "max_steps": self.max_steps,
            "budget_s": self.budget_s,
            "method": self.method,
            "saturate_rate": self.saturate_rate,
            "saturate_s": self.saturate_s,
            "hold_min_s": self.hold_min_s,
            "keep_up_s": self.keep_up_s,
            "max_error_rate": f.real(self.max_error_rate),
            "confidence": f.real(self.confidence),
            "step_noise": f.real(self.step_noise),
        }
        if self.measured_step_noise is not None:
            d["measured_step_noise"] = f.real(self.measured_step_noise)
        return d

    @classmethod
    def from_dict(cls, data: object, where: str = "plan") -> SearchPlan:
        return f.read(cls, with_older_defaults(data), where)


def with_older_defaults(data: object) -> object:
    """A plan's JSON object with what a plan written before a setting existed did: one
    without `method` (before the saturate method) was a bisect one; one without `keep_up_s`
    (before holds that fall behind fail) judged its holds by the gates alone; one without
    `step_noise` (before the knee's interval) is read with the 7 % stated then."""
    if not isinstance(data, Mapping):
        return data
    older = {"method": BISECT, "keep_up_s": 0, "step_noise": 0.07}
    given = cast(Mapping[str, Any], data)
    return {**{k: v for k, v in older.items() if k not in given}, **given}


@dataclass
class _Checks:
    """Range checks of a plan's settings, each failure added to `problems`."""

    plan: SearchPlan
    problems: list[tuple[str, str]]

    def bad(self, name: str, why: str) -> None:
        self.problems.append((name, why))

    def integer(self, name: str, lo: int, hi: int) -> bool:
        value: object = getattr(self.plan, name)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            self.bad(name, f"must be an integer between {lo} and {hi}; got {value!r}")
            return False
        return True

    def integer_or_off(self, name: str, lo: int, hi: int, off: str) -> bool:
        """0 (what `off` says), or an integer in [lo, hi]."""
        value: object = getattr(self.plan, name)
        if type(value) is int and value == 0:
            return True
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            self.bad(name, f"must be 0 ({off}) or an integer between {lo} and {hi}; got {value!r}")
            return False
        return True

    def number(self, name: str, lo: float, hi: float) -> bool:
        """A number in (lo, hi]."""
        value: object = getattr(self.plan, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not lo < value <= hi:
            self.bad(name, f"must be a number above {lo} and at most {hi}; got {value!r}")
            return False
        return True

    def share(self, name: str, hi: float = 1) -> None:
        """A number from 0 to `hi`."""
        value: object = getattr(self.plan, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= hi:
            self.bad(name, f"must be a number from 0 to {hi:g}; got {value!r}")
